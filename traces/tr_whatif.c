/* tr_whatif.c — what-if replay: measured compute moved to another device, and
 * a trace's device name matched to a built-in device.
 *
 * The rule (traces.h, docs/traces.md): a measured kernel stands for some
 * amount of work W of its class — FLOPs for GEMM and ATTENTION (compute
 * bound), HBM bytes for ELEMENTWISE, OPTIMIZER and COMM_KERNEL (memory
 * bound).  W is found by inverting the compute model on the source device
 * (plat_compute_time is non-decreasing in the work), then timed by the same
 * model on the target device.  Only the public compute-model call is used,
 * so whatever the model learns (per-class efficiencies, launch overhead,
 * size effects) carries over; with today's roofline the ratio is the ratio
 * of peak FLOP/s (compute bound) or of HBM bandwidth (memory bound), the
 * launch overhead staying as it is.  Class OTHER (host time, idle gaps,
 * start offsets) is never scaled: it is not GPU work.
 *
 * Deterministic: a fixed number of bisection steps from a fixed bracket.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tr_int.h"

#define BISECT_STEPS 200
#define MAX_DOUBLINGS 2100 /* 2^2100 > DBL_MAX: the bracket search always ends */

static int memory_bound(int cls)
{
  return cls == WL_CLASS_ELEMENTWISE || cls == WL_CLASS_OPTIMIZER || cls == WL_CLASS_COMM_KERNEL;
}

/* The model's time on d for work w of op's class and dtype. */
static double model_time(const plat_device *d, const wl_op *op, double w)
{
  wl_op r = wl_op_compute(op->stream, -1);
  r.sub = op->sub;
  r.dtype = op->dtype;
  if (memory_bound(op->sub))
    r.bytes = w;
  else
    r.flops = w;
  return plat_compute_time(d, &r);
}

/* Work on `from` whose model time is t: *w, or -1 when t is under the
 * model's time for no work (nothing to scale). */
static int invert(const plat_device *from, const wl_op *op, double t, double *w, st_err *err)
{
  double t0 = model_time(from, op, 0);
  if (!(t > t0)) {
    *w = -1;
    return ST_OK;
  }
  double lo = 0, hi = 1;
  int k = 0;
  while (model_time(from, op, hi) < t && k++ < MAX_DOUBLINGS)
    hi *= 2;
  if (!(model_time(from, op, hi) >= t) || !isfinite(hi))
    return st_err_set(err, ST_EUSAGE,
                      "what-if: the compute model of device '%s' does not reach %g s for class "
                      "'%s' (no %s?)",
                      from->name, t, wl_class_name(op->sub),
                      memory_bound(op->sub) ? "HBM bandwidth" : "peak FLOP/s");
  for (int i = 0; i < BISECT_STEPS; i++) {
    double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi)
      break;
    if (model_time(from, op, mid) < t)
      lo = mid;
    else
      hi = mid;
  }
  *w = 0.5 * (lo + hi);
  return ST_OK;
}

int tr_workload_retarget(wl_workload *wl, const plat_device *from, const plat_device *to,
                         tr_retarget_stats *stats, st_err *err)
{
  tr_retarget_stats local;
  if (!stats)
    stats = &local;
  memset(stats, 0, sizeof *stats);
  /* Work out every new duration first, so that nothing changes on error. */
  size_t total = wl_workload_num_ops(wl), at = 0;
  double *nd = malloc((total ? total : 1) * sizeof *nd);
  if (!nd)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  int rc = ST_OK;
  for (int p = 0; p < wl->num_programs && !rc; p++) {
    const wl_program *pg = &wl->programs[p];
    for (size_t i = 0; i < pg->num_ops && !rc; i++, at++) {
      const wl_op *op = &pg->ops[i];
      nd[at] = op->duration_s;
      if (op->kind != WL_OP_COMPUTE || op->duration_s < 0)
        continue;
      int cls = op->sub < WL_CLASS_COUNT ? op->sub : WL_CLASS_OTHER;
      stats->before_s[cls] += op->duration_s;
      double w = -1;
      if (cls != WL_CLASS_OTHER && (rc = invert(from, op, op->duration_s, &w, err)))
        break;
      if (w >= 0) {
        nd[at] = model_time(to, op, w);
        stats->ops_scaled++;
      } else {
        stats->ops_kept++;
      }
      stats->after_s[cls] += nd[at];
    }
  }
  if (!rc) {
    at = 0;
    for (int p = 0; p < wl->num_programs; p++)
      for (size_t i = 0; i < wl->programs[p].num_ops; i++, at++)
        wl->programs[p].ops[i].duration_s = nd[at];
  }
  free(nd);
  return rc;
}

/* ---- device names ----------------------------------------------------------- */

static int ci_equal(const char *a, const char *b)
{
  for (; *a && *b; a++, b++)
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
      return 0;
  return !*a && !*b;
}

/* Position of needle in hay ignoring case, or NULL. */
static const char *ci_find(const char *hay, const char *needle, size_t n)
{
  if (n == 0)
    return NULL;
  for (const char *h = hay; *h; h++) {
    size_t k = 0;
    while (k < n && h[k] && tolower((unsigned char)h[k]) == tolower((unsigned char)needle[k]))
      k++;
    if (k == n)
      return h;
  }
  return NULL;
}

/* needle (n chars) occurs in hay as a word: not inside a longer run of
 * letters and digits. */
static int ci_word(const char *hay, const char *needle, size_t n)
{
  for (const char *h = hay; (h = ci_find(h, needle, n)); h++) {
    int before = h > hay && isalnum((unsigned char)h[-1]);
    int after = isalnum((unsigned char)h[n]);
    if (!before && !after)
      return 1;
  }
  return 0;
}

int tr_device_match(const char *name, plat_device *out, st_err *err)
{
  plat_device *v;
  int n;
  int rc = plat_device_list(&v, &n, err);
  if (rc)
    return rc;
  int best = -1;
  size_t best_len = 0;
  for (int i = 0; i < n && best < 0; i++)
    if (ci_equal(v[i].name, name))
      best = i;
  for (int i = 0; i < n && best < 0; i++) {
    size_t l = strlen(v[i].name);
    if (l > best_len && ci_find(name, v[i].name, l)) {
      best = i;
      best_len = l;
    }
  }
  /* then the model (the name up to its first '-') as a word, when unique;
   * a variant (devices.json "tuning": another memory or power limit, which a
   * trace's device name does not say) only by its whole name */
  int ambiguous = 0;
  if (best < 0) {
    int hits = 0;
    for (int i = 0; i < n; i++)
      if (!v[i].tuning[0] && ci_word(name, v[i].name, strcspn(v[i].name, "-")) && hits++ == 0)
        best = i;
    ambiguous = hits > 1; /* e.g. A100 with 40 and 80 GB */
  }
  if (best >= 0 && !ambiguous)
    *out = v[best];
  else
    rc = st_err_set(err, ST_EINPUT,
                    "device '%s' of the trace matches %s built-in device: give --from-device "
                    "NAME (platforms/data/devices.json)",
                    name, ambiguous ? "more than one" : "no");
  free(v);
  return rc;
}
