/* failures.c — a whole training run with failures, checkpoints and restarts:
 * the analytic expectation, the optimal checkpoint interval, and a seeded
 * Monte-Carlo over failure times (docs/failures.md derives and cites the
 * model).
 *
 * The model.  The run needs work_s of failure-free training (steps x step
 * time).  It is cut into segments of interval_s of work, each ended by a
 * blocking checkpoint of ckpt_s; the last segment is what remains (at most
 * interval_s) and ends with a checkpoint too (the final model).  Failures
 * of the job arrive as a Poisson process of rate_per_s while the job runs
 * (training, checkpointing or restarting).  A failure loses the segment in
 * progress (work since the last completed checkpoint, and a checkpoint
 * being written); the job then waits for a node (none with a free spare,
 * repair_s without one), restarts (restart_s, which can itself fail) and
 * does the segment again.  So a segment of length L = work + ckpt_s needs,
 * after the first attempt, an uninterrupted restart_s + L; the expected
 * number of failures on it is e^(lambda R) (e^(lambda L) - 1) and its
 * expected time that number x (1/lambda + D) (D the wait; lambda = 0: L).
 *
 * Invariants:
 *   - Everything random comes from st_rng (workloads/base/st_rng.c:
 *     xoshiro256** seeded by splitmix64) and st_rng_exp's own logarithm,
 *     which uses only IEEE additions, multiplications and divisions (this file is compiled
 *     without floating-point contraction): the same seed gives the same
 *     finish times bit for bit on every IEEE-754 platform.
 *   - Trial i draws from its own stream (the seed and i through splitmix64),
 *     so a trial does not depend on the others.
 *   - A trial without failures finishes at exactly work_s + n ckpt_s, the
 *     same expression an_failure_expect uses (so zero failures is the closed
 *     form to the last bit). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

/* ---- intervals -------------------------------------------------------------- */

double an_failure_young_s(double ckpt_s, double mtbf_s) { return sqrt(2 * ckpt_s * mtbf_s); }

double an_failure_daly_s(double ckpt_s, double mtbf_s)
{
  if (ckpt_s >= 2 * mtbf_s)
    return mtbf_s;
  double q = ckpt_s / (2 * mtbf_s);
  return sqrt(2 * ckpt_s * mtbf_s) * (1 + sqrt(q) / 3 + q / 9) - ckpt_s;
}

int an_failure_check(const an_failure_params *p, st_err *err)
{
  if (!(p->work_s > 0) || !isfinite(p->work_s))
    return st_err_set(err, ST_EUSAGE, "the failure-free training time is %g s; it must be positive",
                      p->work_s);
  if (!(p->rate_per_s >= 0) || !isfinite(p->rate_per_s))
    return st_err_set(err, ST_EUSAGE, "the failure rate is %g per s; it must be 0 or more",
                      p->rate_per_s);
  if (!(p->ckpt_s > 0) || !isfinite(p->ckpt_s))
    return st_err_set(err, ST_EUSAGE, "the checkpoint time is %g s; it must be positive", p->ckpt_s);
  if (!(p->restart_s >= 0) || !isfinite(p->restart_s))
    return st_err_set(err, ST_EUSAGE, "the restart time is %g s; it must be 0 or more",
                      p->restart_s);
  if (!(p->repair_s >= 0) || !isfinite(p->repair_s))
    return st_err_set(err, ST_EUSAGE, "the repair time is %g s; it must be 0 or more", p->repair_s);
  if (p->spare_nodes < -1 || p->spare_nodes > AN_FAILURE_MAX_SPARES)
    return st_err_set(err, ST_EUSAGE, "%d spare nodes: give 0 to %d (or -1: unlimited)",
                      p->spare_nodes, AN_FAILURE_MAX_SPARES);
  if (!(p->interval_s > 0) || !isfinite(p->interval_s))
    return st_err_set(err, ST_EUSAGE, "the checkpoint interval is %g s; it must be positive",
                      p->interval_s);
  return ST_OK;
}

/* The wait for a node after each failure in the analytic model: the repair
 * time without spares, none with spares (assumed never to run out). */
static double analytic_wait(const an_failure_params *p)
{
  return p->spare_nodes == 0 ? p->repair_s : 0;
}

/* Expected failures while a segment of length L (work + checkpoint) gets done. */
static double seg_failures(const an_failure_params *p, double L)
{
  double l = p->rate_per_s;
  return l > 0 ? exp(l * p->restart_s) * expm1(l * L) : 0;
}

static double seg_time(const an_failure_params *p, double L)
{
  double l = p->rate_per_s;
  return l > 0 ? seg_failures(p, L) * (1 / l + analytic_wait(p)) : L;
}

/* The segments: n = ceil(work / interval) (corrected where the division
 * rounded across a whole number), the last one's work. */
static void segments(const an_failure_params *p, double *n, double *last_s)
{
  double k = ceil(p->work_s / p->interval_s);
  if (k < 1)
    k = 1;
  if (k > 1 && (k - 1) * p->interval_s >= p->work_s)
    k -= 1;
  *n = k;
  *last_s = p->work_s - (k - 1) * p->interval_s;
  if (*last_s <= 0 || *last_s > p->interval_s)
    *last_s = p->interval_s;
}

void an_failure_expect(const an_failure_params *p, an_failure_expectation *e)
{
  double n, last;
  segments(p, &n, &last);
  e->checkpoints = n;
  e->base_s = p->work_s + n * p->ckpt_s;
  double full = p->interval_s + p->ckpt_s, tail = last + p->ckpt_s;
  e->failures = (n - 1) * seg_failures(p, full) + seg_failures(p, tail);
  e->time_s = p->rate_per_s > 0 ? (n - 1) * seg_time(p, full) + seg_time(p, tail) : e->base_s;
  e->goodput = p->work_s / e->time_s;
}

double an_failure_rate_time_s(const an_failure_params *p, double interval_s)
{
  return p->work_s / interval_s * seg_time(p, interval_s + p->ckpt_s);
}

double an_failure_optimal_s(const an_failure_params *p)
{
  double l = p->rate_per_s;
  if (!(l > 0))
    return p->work_s; /* nothing to lose: one checkpoint, at the end */
  double young = an_failure_young_s(p->ckpt_s, 1 / l);
  /* golden-section search over log(interval) for the smallest expected time
   * of the continuous renewal-reward form (unimodal in the interval) */
  double a = log(young / 1000), b = log(young * 1000);
  const double g = 0.61803398874989484820;
  double c = b - g * (b - a), d = a + g * (b - a);
  double fc = an_failure_rate_time_s(p, exp(c)), fd = an_failure_rate_time_s(p, exp(d));
  for (int i = 0; i < 200 && b - a > 1e-12; i++) {
    if (fc < fd) {
      b = d;
      d = c;
      fd = fc;
      c = b - g * (b - a);
      fc = an_failure_rate_time_s(p, exp(c));
    } else {
      a = c;
      c = d;
      fc = fd;
      d = a + g * (b - a);
      fd = an_failure_rate_time_s(p, exp(d));
    }
  }
  double t = exp((a + b) / 2);
  return t > p->work_s ? p->work_s : t;
}

/* ---- Monte-Carlo -------------------------------------------------------------- */

/* Nodes under repair: their return times, in order (failures come in time
 * order and repairs all take repair_s). */
typedef struct spares {
  int unlimited, free, cap, head, count;
  double *back; /* ring of return times */
} spares;

/* The wait for a node at a failure at time t. */
static double spares_take(spares *s, double t, double repair_s)
{
  if (s->unlimited)
    return 0;
  if (s->cap == 0)
    return repair_s; /* no spares: the failed node's own repair */
  while (s->count > 0 && s->back[s->head] <= t) {
    s->head = (s->head + 1) % s->cap;
    s->count--;
    s->free++;
  }
  double wait = 0;
  if (s->free > 0) {
    s->free--;
  } else {
    wait = s->back[s->head] - t; /* the first node back joins the job */
    s->head = (s->head + 1) % s->cap;
    s->count--;
  }
  s->back[(s->head + s->count) % s->cap] = t + repair_s; /* the failed node goes to repair */
  s->count++;
  return wait;
}

static void one_trial(const an_failure_params *p, double n, double last, st_rng *r, spares *sp,
                      an_failure_trial *out)
{
  double full = p->interval_s + p->ckpt_s, tail = last + p->ckpt_s;
  double t = 0, lost = 0, restart = 0, wait = 0, failures = 0, waits = 0;
  double x = st_rng_exp(r, p->rate_per_s); /* running time left to the next failure */
  double i = 0;
  while (i < n) {
    double L = i < n - 1 ? full : tail;
    if (x >= L) {
      double k = 1;
      if (i < n - 1) { /* as many failure-free full segments as fit */
        k = floor(x / full);
        if (k > n - 1 - i)
          k = n - 1 - i;
        if (k < 1)
          k = 1;
      }
      x -= k * L;
      t += k * L;
      i += k;
      continue;
    }
    double need = L;
    while (x < need) {
      lost += x;
      t += x;
      failures++;
      double w = spares_take(sp, t, p->repair_s);
      if (w > 0)
        waits++;
      wait += w;
      t += w;
      x = st_rng_exp(r, p->rate_per_s);
      need = p->restart_s + L;
    }
    restart += p->restart_s;
    x -= need;
    t += need;
    i++;
  }
  out->finish_s = (p->work_s + n * p->ckpt_s) + lost + restart + wait;
  out->failures = failures;
  out->waits = waits;
  out->lost_s = lost;
  out->restart_s = restart;
  out->wait_s = wait;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double an_failure_quantile(const double *sorted, size_t n, double q)
{
  if (n == 0)
    return NAN;
  double h = (double)(n - 1) * q;
  size_t lo = (size_t)floor(h);
  if (lo >= n - 1)
    return sorted[n - 1];
  return sorted[lo] + (h - (double)lo) * (sorted[lo + 1] - sorted[lo]);
}

int an_failure_simulate(const an_failure_params *p, int trials, uint64_t seed, double *finish_s,
                        an_failure_mc *mc, st_err *err)
{
  int rc = an_failure_check(p, err);
  if (rc)
    return rc;
  if (trials < 1 || trials > AN_FAILURE_MAX_TRIALS)
    return st_err_set(err, ST_EUSAGE, "%d trials: give 1 to %d", trials, AN_FAILURE_MAX_TRIALS);
  memset(mc, 0, sizeof *mc);
  spares sp = {p->spare_nodes < 0, 0, p->spare_nodes > 0 ? p->spare_nodes : 0, 0, 0, NULL};
  double *sorted = malloc((size_t)trials * sizeof *sorted);
  if (sp.cap > 0)
    sp.back = malloc((size_t)sp.cap * sizeof *sp.back);
  if (!sorted || (sp.cap > 0 && !sp.back)) {
    free(sorted);
    free(sp.back);
    return st_err_set(err, ST_ENOMEM, "out of memory for %d trials", trials);
  }
  double n, last;
  segments(p, &n, &last);
  double sum = 0, fails = 0, waits = 0, lost = 0, restart = 0, wait = 0;
  for (int k = 0; k < trials; k++) {
    st_rng r;
    st_rng_seed(&r, seed, (uint64_t)k);
    sp.free = sp.cap;
    sp.head = sp.count = 0;
    an_failure_trial t;
    one_trial(p, n, last, &r, &sp, &t);
    sorted[k] = t.finish_s;
    if (finish_s)
      finish_s[k] = t.finish_s;
    sum += t.finish_s;
    fails += t.failures;
    waits += t.waits;
    lost += t.lost_s;
    restart += t.restart_s;
    wait += t.wait_s;
  }
  qsort(sorted, (size_t)trials, sizeof *sorted, cmp_double);
  mc->trials = trials;
  mc->mean_s = sum / trials;
  mc->min_s = sorted[0];
  mc->max_s = sorted[trials - 1];
  mc->p10_s = an_failure_quantile(sorted, (size_t)trials, 0.10);
  mc->p50_s = an_failure_quantile(sorted, (size_t)trials, 0.50);
  mc->p90_s = an_failure_quantile(sorted, (size_t)trials, 0.90);
  mc->failures = fails / trials;
  mc->waits = waits / trials;
  mc->lost_s = lost / trials;
  mc->restart_s = restart / trials;
  mc->wait_s = wait / trials;
  mc->checkpoint_s = n * p->ckpt_s;
  mc->goodput = p->work_s / mc->mean_s;
  double var = 0;
  for (int k = 0; k < trials; k++) {
    double d = sorted[k] - mc->mean_s;
    var += d * d;
  }
  mc->stddev_s = trials > 1 ? sqrt(var / (trials - 1)) : 0;
  free(sorted);
  free(sp.back);
  return ST_OK;
}

int an_failure_sweep(const an_failure_params *p, const double *scales, int num_scales, int points,
                     an_failure_sweep_row *rows, st_err *err)
{
  int rc = an_failure_check(p, err);
  if (rc)
    return rc;
  if (points < 2)
    return st_err_set(err, ST_EUSAGE, "a sweep needs 2 points or more, not %d", points);
  /* one interval axis for every rate: from an eighth of the smallest optimum
   * to eight times the largest, within the run */
  double lo = INFINITY, hi = 0;
  for (int s = 0; s < num_scales; s++) {
    if (!(scales[s] > 0) || !isfinite(scales[s]))
      return st_err_set(err, ST_EUSAGE, "the MTBF scale %g is not a positive number", scales[s]);
    an_failure_params q = *p;
    q.rate_per_s = p->rate_per_s / scales[s];
    double o = an_failure_optimal_s(&q);
    lo = fmin(lo, o / 8);
    hi = fmax(hi, o * 8);
  }
  hi = fmin(hi, p->work_s);
  lo = fmin(lo, hi / 2);
  for (int s = 0; s < num_scales; s++) {
    an_failure_params q = *p;
    q.rate_per_s = p->rate_per_s / scales[s];
    for (int i = 0; i < points; i++) {
      an_failure_sweep_row *row = &rows[(size_t)s * points + i];
      q.interval_s = exp(log(lo) + (log(hi) - log(lo)) * i / (points - 1));
      an_failure_expectation e;
      an_failure_expect(&q, &e);
      row->mtbf_scale = scales[s];
      row->job_mtbf_s = q.rate_per_s > 0 ? 1 / q.rate_per_s : INFINITY;
      row->interval_s = q.interval_s;
      row->time_s = e.time_s;
      row->goodput = e.goodput;
      row->failures = e.failures;
    }
  }
  return ST_OK;
}
