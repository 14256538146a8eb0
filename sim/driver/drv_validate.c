/* drv_validate.c — predictions against published training runs.
 *
 * drv_validate_run predicts every case (drv_cases.c) in its own child
 * process (drv_pool.c), at most `jobs` at a time, and brings back the
 * predicted step time and tokens/s per GPU; results are collected in case
 * order whatever order the children finish in, so the output is the same
 * bytes on every run.
 *
 * drv_validate_loo is the leave-one-out calibration of docs/calibration.md:
 * each case is predicted with the GEMM efficiency fitted on the other cases
 * of its device, so the reported errors are predictions, not fits;
 * drv_validate_fit runs it over the grid of efficiencies.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

/* ---- running the cases ---------------------------------------------------- */

static FILE *progress;

void drv_validate_progress(FILE *f) { progress = f; }

typedef struct run_ctx {
  const drv_case *cases;
  int n;
  drv_predict_fn fn;
  const plat_compute_params *overrides;
  int num_overrides;
  size_t stride;
  int timeout_s;
  drv_case_result *res;
  int done, first_case;
  st_err first;
} run_ctx;

static int predict_task(void *u, int i, st_buf *reply, st_err *err)
{
  const run_ctx *x = u;
  const plat_compute_params *ov = x->overrides ? x->overrides + (size_t)i * x->stride : NULL;
  drv_prediction p;
  memset(&p, 0, sizeof p);
  int rc = x->fn(&x->cases[i], ov, x->num_overrides, &p, err);
  return rc ? rc : st_buf_append(reply, &p, sizeof p);
}

/* The case's result from its child's answer; 0 or the failure's code. */
static int case_result(const drv_case *c, const drv_answer *a, int timeout_s, drv_case_result *r,
                       st_err *err)
{
  drv_prediction p;
  switch (a->end) {
  case DRV_END_TIMEOUT:
    return st_err_set(err, ST_ESIM, "case '%s': no prediction within %d s", c->name, timeout_s);
  case DRV_END_CRASH:
    return st_err_set(err, ST_ESIM, "case '%s': the prediction crashed (signal %d)", c->name,
                      a->signal);
  case DRV_END_SILENT:
    return st_err_set(err, ST_ESIM, "case '%s': the prediction ended without an answer",
                      c->name);
  case DRV_END_DONE: break;
  }
  if (a->rc)
    return st_err_set(err, a->rc, "case '%s': %s", c->name, a->msg);
  if (a->len != sizeof p)
    return st_err_set(err, ST_ESIM, "case '%s': the prediction ended without an answer",
                      c->name);
  memcpy(&p, a->data, sizeof p);
  if (!(p.tokens_per_s_per_gpu > 0) || !isfinite(p.tokens_per_s_per_gpu))
    return st_err_set(err, ST_ESIM, "case '%s': predicted throughput is %g tokens/s per GPU",
                      c->name, p.tokens_per_s_per_gpu);
  r->predicted = p.tokens_per_s_per_gpu;
  r->error = r->predicted / r->measured - 1.0;
  r->predicted_step_s = p.step_time_s;
  if (!isnan(r->measured_mem_gib)) {
    r->predicted_mem_gib = p.peak_memory_bytes / 1073741824.0;
    r->mem_error = r->predicted_mem_gib / r->measured_mem_gib - 1.0;
  }
  return ST_OK;
}

static void predict_done(void *u, int i, const drv_answer *a)
{
  run_ctx *x = u;
  drv_case_result *r = &x->res[i];
  memset(r, 0, sizeof *r);
  r->measured = x->cases[i].measured;
  r->measured_step_s = x->cases[i].measured_step_s;
  r->predicted = r->error = r->predicted_step_s = NAN;
  r->measured_mem_gib = x->cases[i].measured_mem_gib;
  r->predicted_mem_gib = r->mem_error = NAN;
  st_err e;
  st_err_clear(&e);
  int rc = case_result(&x->cases[i], a, x->timeout_s, r, &e);
  if (rc) {
    r->rc = rc;
    snprintf(r->msg, sizeof r->msg, "%s", e.msg);
    if (!x->first.code || i < x->first_case) {
      x->first = e;
      x->first_case = i;
    }
  }
  if (progress) {
    x->done++;
    if (rc)
      fprintf(progress, "[%d/%d] %s: failed in %.0f s\n", x->done, x->n, x->cases[i].name,
              a->wall_s);
    else
      fprintf(progress, "[%d/%d] %s: %+.2f%% in %.0f s\n", x->done, x->n, x->cases[i].name,
              100 * r->error, a->wall_s);
    fflush(progress);
  }
}

/* Case i runs with overrides + i * stride (num_overrides of them). */
static int run_cases(const drv_case *cases, int n, drv_predict_fn fn,
                     const plat_compute_params *overrides, int num_overrides, size_t stride,
                     int jobs, int timeout_s, drv_case_result *res, st_err *err)
{
  run_ctx x = {.cases = cases, .n = n, .fn = fn, .overrides = overrides,
               .num_overrides = num_overrides, .stride = stride, .timeout_s = timeout_s,
               .res = res, .first_case = n};
  /* cases differ in length by 100x: whichever ends first gives its slot to
   * the next (drv_pool_run); results land at their case's index */
  int rc = drv_pool_run(n, jobs, timeout_s, predict_task, predict_done, &x, err);
  if (rc)
    return rc;
  if (x.first.code) {
    if (err)
      *err = x.first;
    return x.first.code;
  }
  return ST_OK;
}

int drv_validate_run(const drv_case *cases, int n, drv_predict_fn fn,
                     const plat_compute_params *overrides, int num_overrides, int jobs,
                     int timeout_s, drv_case_result *res, st_err *err)
{
  return run_cases(cases, n, fn, overrides, num_overrides, 0, jobs, timeout_s, res, err);
}

int drv_validate_run_each(const drv_case *cases, int n, drv_predict_fn fn,
                          const plat_compute_params *overrides, int num_overrides, int jobs,
                          int timeout_s, drv_case_result *res, st_err *err)
{
  return run_cases(cases, n, fn, overrides, num_overrides, (size_t)num_overrides, jobs,
                   timeout_s, res, err);
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y ? 1 : 0;
}

/* Median and largest |error| of the predicted cases, of their throughput
 * (mem 0) or of those with a memory reading, their peak memory (mem 1). */
static int stats_of(const drv_case_result *res, int n, int mem, double *median_abs,
                    double *max_abs)
{
  double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
  double mx = 0;
  int k = 0;
  for (int i = 0; i < n; i++) {
    if (res[i].rc || (mem && isnan(res[i].mem_error)))
      continue;
    double a = fabs(mem ? res[i].mem_error : res[i].error);
    if (v)
      v[k] = a;
    k++;
    if (a > mx)
      mx = a;
  }
  double med = NAN;
  if (v && k > 0) {
    qsort(v, (size_t)k, sizeof *v, cmp_double);
    med = k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
  }
  free(v);
  *median_abs = med;
  *max_abs = k > 0 ? mx : NAN;
  return k;
}

int drv_validate_stats(const drv_case_result *res, int n, double *median_abs, double *max_abs)
{
  return stats_of(res, n, 0, median_abs, max_abs);
}

/* The second table: peak memory per GPU where the source publishes it. */
static void print_memory(const drv_case *cases, const drv_case_result *res, int n, int w,
                         FILE *out)
{
  double med, mx;
  int k = stats_of(res, n, 1, &med, &mx), worst = -1;
  if (!k)
    return;
  fprintf(out, "\n%-*s  %12s  %9s  %12s  %8s\n", w, "peak memory per GPU", "measured",
          "reading", "predicted", "error");
  fprintf(out, "%-*s  %12s  %9s  %12s  %8s\n", w, "", "GiB", "", "GiB", "");
  for (int i = 0; i < n; i++) {
    const drv_case_result *r = &res[i];
    if (r->rc || isnan(r->mem_error))
      continue;
    fprintf(out, "%-*s  %12.2f  %9s  %12.2f  %+7.2f%%\n", w, cases[i].name, r->measured_mem_gib,
            cases[i].mem_reserved ? "reserved" : "allocated", r->predicted_mem_gib,
            100 * r->mem_error);
    if (worst < 0 || fabs(r->mem_error) > fabs(res[worst].mem_error))
      worst = i;
  }
  fprintf(out, "\n%d case%s: median |error| %.2f%%, max |error| %.2f%% (%s)\n", k,
          k == 1 ? "" : "s", 100 * med, 100 * mx, cases[worst].name);
  fprintf(out, "error = predicted / measured - 1, in peak memory per GPU: the memory model's\n"
               "live tensors at their peak (simtrain memory), which a 'reserved' reading\n"
               "exceeds by what PyTorch's caching allocator holds unused\n");
}

void drv_validate_print(const drv_case *cases, const drv_case_result *res, int n, FILE *out)
{
  int w = 4;
  for (int i = 0; i < n; i++)
    if ((int)strlen(cases[i].name) > w)
      w = (int)strlen(cases[i].name);
  fprintf(out, "%-*s  %12s  %12s  %8s  %10s  %10s\n", w, "case", "measured", "predicted", "error",
          "step meas.", "step pred.");
  fprintf(out, "%-*s  %12s  %12s  %8s  %10s  %10s\n", w, "", "tokens/s/GPU", "tokens/s/GPU", "",
          "s", "s");
  int worst = -1, failed = 0;
  for (int i = 0; i < n; i++) {
    const drv_case_result *r = &res[i];
    char ms[32];
    if (isnan(r->measured_step_s))
      snprintf(ms, sizeof ms, "-");
    else
      snprintf(ms, sizeof ms, "%.4g", r->measured_step_s);
    if (r->rc) {
      fprintf(out, "%-*s  %12.1f  %12s  %8s  %10s  %10s\n", w, cases[i].name, r->measured,
              "failed", "", ms, "-");
      failed++;
      continue;
    }
    fprintf(out, "%-*s  %12.1f  %12.1f  %+7.2f%%  %10s  %10.4g\n", w, cases[i].name, r->measured,
            r->predicted, 100 * r->error, ms, r->predicted_step_s);
    if (worst < 0 || fabs(r->error) > fabs(res[worst].error))
      worst = i;
  }
  double med, mx;
  int k = drv_validate_stats(res, n, &med, &mx);
  if (k)
    fprintf(out, "\n%d case%s: median |error| %.2f%%, max |error| %.2f%% (%s)\n", k,
            k == 1 ? "" : "s", 100 * med, 100 * mx, worst >= 0 ? cases[worst].name : "-");
  else
    fprintf(out, "\nno case predicted\n");
  if (failed)
    fprintf(out, "%d case%s not predicted:\n", failed, failed == 1 ? "" : "s");
  for (int i = 0; i < n; i++)
    if (res[i].rc)
      fprintf(out, "  %s\n", res[i].msg);
  fprintf(out, "error = predicted / measured - 1, in per-GPU throughput\n");
  print_memory(cases, res, n, w, out);
}

void drv_validate_print_json(const drv_case *cases, const drv_case_result *res, int n, FILE *out)
{
  fprintf(out, "{\"cases\":[");
  for (int i = 0; i < n; i++) {
    fprintf(out, "%s{\"name\":", i ? "," : "");
    st_json_str(out, cases[i].name);
    if (res[i].rc) {
      fprintf(out, ",\"measured\":%.10g,\"predicted\":null,\"error\":null,\"failure\":",
              res[i].measured);
      st_json_str(out, res[i].msg);
      fputc('}', out);
      continue;
    }
    fprintf(out, ",\"measured\":%.10g,\"predicted\":%.10g,\"error\":%.6g", res[i].measured,
            res[i].predicted, res[i].error);
    if (!isnan(res[i].mem_error))
      fprintf(out,
              ",\"memory\":{\"measured\":%.10g,\"reading\":\"%s\",\"predicted\":%.10g,"
              "\"error\":%.6g}",
              res[i].measured_mem_gib, cases[i].mem_reserved ? "reserved" : "allocated",
              res[i].predicted_mem_gib, res[i].mem_error);
    fputc('}', out);
  }
  double med, mx;
  int k = drv_validate_stats(res, n, &med, &mx);
  if (k)
    fprintf(out, "],\"count\":%d,\"median_abs_error\":%.6g,\"max_abs_error\":%.6g", k, med,
            mx);
  else
    fprintf(out, "],\"count\":0,\"median_abs_error\":null,\"max_abs_error\":null");
  if ((k = stats_of(res, n, 1, &med, &mx)))
    fprintf(out,
            ",\"memory\":{\"count\":%d,\"median_abs_error\":%.6g,\"max_abs_error\":%.6g}", k,
            med, mx);
  fprintf(out, "}\n");
}

/* ---- leave-one-out calibration ------------------------------------------ */

/* Case c's result with gemm_eff = g, interpolating the step time linearly in
 * 1 / g between grid points (the GEMM share of a step scales as 1 / g). */
static drv_case_result at_eff(const drv_case_result *pred, int c, const double *grid, int ngrid,
                             double g)
{
  const drv_case_result *row = &pred[(size_t)c * ngrid];
  int j = 0;
  while (j + 2 < ngrid && g > grid[j + 1])
    j++;
  double x0 = 1 / grid[j], x1 = 1 / grid[j + 1], x = 1 / g;
  double t = (x - x0) / (x1 - x0);
  double step = row[j].predicted_step_s + t * (row[j + 1].predicted_step_s - row[j].predicted_step_s);
  /* tokens per step per GPU is the same at every grid point */
  double k = row[j].predicted * row[j].predicted_step_s;
  drv_case_result r = row[j];
  r.predicted_step_s = step;
  r.predicted = k / step;
  r.error = r.predicted / r.measured - 1.0;
  return r;
}

static int predicted_all(const drv_case_result *pred, int c, int ngrid)
{
  for (int j = 0; j < ngrid; j++)
    if (pred[(size_t)c * ngrid + j].rc)
      return 0;
  return 1;
}

/* gemm_eff minimising the squared log errors of the cases of group g, leaving
 * out `skip`; NaN when no case is left to fit on. */
static double fit_group(const drv_case_result *pred, int ncases, const double *grid, int ngrid,
                        const int *group, int g, int skip)
{
  double best = grid[0], best_cost = INFINITY;
  long steps = lround((grid[ngrid - 1] - grid[0]) / 0.001);
  for (long s = 0; s <= steps; s++) {
    double e = grid[0] + 0.001 * (double)s;
    double cost = 0;
    int used = 0;
    for (int c = 0; c < ncases; c++) {
      if (group[c] != g || c == skip || !predicted_all(pred, c, ngrid))
        continue;
      drv_case_result r = at_eff(pred, c, grid, ngrid, e);
      double l = log(r.predicted / r.measured);
      cost += l * l;
      used++;
    }
    if (!used)
      return NAN;
    if (cost < best_cost) {
      best_cost = cost;
      best = e;
    }
  }
  return best;
}

void drv_validate_loo(const drv_case_result *pred, int ncases, const double *grid, int ngrid,
                     const int *group, int ngroups, double *fit_eff, double *loo_eff,
                     drv_case_result *loo)
{
  for (int g = 0; g < ngroups; g++)
    fit_eff[g] = fit_group(pred, ncases, grid, ngrid, group, g, -1);
  for (int c = 0; c < ncases; c++) {
    if (!predicted_all(pred, c, ngrid)) {
      /* keep the failure of the first grid point that failed */
      for (int j = 0; j < ngrid; j++)
        if (pred[(size_t)c * ngrid + j].rc) {
          loo[c] = pred[(size_t)c * ngrid + j];
          break;
        }
      loo_eff[c] = NAN;
      continue;
    }
    loo_eff[c] = fit_group(pred, ncases, grid, ngrid, group, group[c], c);
    if (isnan(loo_eff[c])) { /* the only case of its parameter set */
      loo[c] = pred[(size_t)c * ngrid];
      loo[c].rc = ST_EINPUT;
      snprintf(loo[c].msg, sizeof loo[c].msg,
               "no other case of its device's parameter set to fit on: it cannot be left out");
      continue;
    }
    loo[c] = at_eff(pred, c, grid, ngrid, loo_eff[c]);
  }
}
