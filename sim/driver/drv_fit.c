/* drv_fit.c — the project's predictor for a validation case (generators,
 * cluster, engine) and the leave-one-out calibration of the GEMM efficiency
 * over a grid of values (docs/calibration.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

int drv_predict_generated(const drv_case *c, const plat_compute_params *overrides,
                          int num_overrides, drv_prediction *out, st_err *err)
{
  for (int i = 0; i < num_overrides; i++)
    plat_compute_params_override(&overrides[i]);
  wl_model m;
  int rc = wl_model_parse(c->model_json, c->name, &m, err);
  if (rc)
    return rc;
  plat_cluster *cl = NULL;
  wl_layout l;
  wl_workload *wl = NULL;
  sim_result *r = NULL;
  if ((rc = drv_case_check_size(c, wl_model_params(&m), err)) ||
      (rc = plat_cluster_load(c->cluster, &cl, err)) ||
      (rc = wl_layout_parse(c->layout, c->num_gpus, &m, &l, err)) ||
      (rc = wl_generate(&m, &l, &wl, err)))
    goto out;
  sim_options opt;
  sim_options_init(&opt);
  opt.quiet = 1;
  opt.link_stats = 0; /* a prediction needs the step time only */
  opt.record_colls = 0;
  if ((rc = sim_run(wl, cl, &opt, &r, err)))
    goto out;
  out->step_time_s = r->step_time_s;
  out->tokens_per_s_per_gpu = (double)l.gbs * m.seq_len / r->step_time_s / wl->num_ranks;
  out->peak_memory_bytes = wl->meta.peak_memory_bytes;
out:
  sim_result_destroy(r);
  wl_workload_destroy(wl);
  plat_cluster_destroy(cl);
  wl_model_release(&m);
  return rc;
}

/* Whether a case runs a PyTorch framework's GEMMs (dp_impl fsdp, fsdp2 or
 * deepspeed), which the fit calibrates apart (gemm_eff_torch). */
static int case_is_torch(const drv_case *c, int *torch_fw, st_err *err)
{
  wl_model m;
  wl_layout l;
  int rc = wl_model_parse(c->model_json, c->name, &m, err);
  if (rc)
    return rc;
  if (!(rc = wl_layout_parse(c->layout, c->num_gpus, &m, &l, err)))
    *torch_fw = l.dp_impl != WL_DP_MEGATRON;
  else
    st_err_prefix(err, "case '%s': ", c->name);
  wl_model_release(&m);
  return rc;
}

static const double fit_grid[] = {0.50, 0.60, 0.80, 1.00};
#define FIT_NGRID ((int)(sizeof fit_grid / sizeof fit_grid[0]))

/* A fitted value at either end of the grid: the fit cannot look past it. */
static int at_grid_end(double g)
{
  return fabs(g - fit_grid[0]) < 5e-4 || fabs(g - fit_grid[FIT_NGRID - 1]) < 5e-4;
}

/* Every case at every grid point: pred[c * FIT_NGRID + j].  Each (case, grid
 * point) is one job of one queue, the cases with the most GPUs first (the
 * longest, roughly): with passes per grid point every pass waited for its
 * longest case while the other slots idled.  Returns 0, or ST_ENOMEM/ST_EIO
 * (a failed prediction stays in its pred entry). */
static int predict_grid(const drv_case *cases, int n, const plat_compute_params *ov, int ngroups,
                        int jobs, int timeout_s, drv_case_result *pred, st_err *err)
{
  int nj = n * FIT_NGRID, rc = ST_OK;
  drv_case *job = calloc((size_t)nj, sizeof *job);
  int *job_of = calloc((size_t)nj, sizeof *job_of); /* job -> c * FIT_NGRID + j */
  plat_compute_params *jov = calloc((size_t)nj * (size_t)ngroups, sizeof *jov);
  drv_case_result *jres = calloc((size_t)nj, sizeof *jres);
  char (*names)[160] = calloc((size_t)nj, sizeof *names);
  if (!job || !job_of || !jov || !jres || !names) {
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
    goto out;
  }
  for (int k = 0; k < nj; k++) { /* stable insertion sort, most GPUs first */
    int q = k;
    while (q > 0 && cases[job_of[q - 1] / FIT_NGRID].num_gpus < cases[k / FIT_NGRID].num_gpus) {
      job_of[q] = job_of[q - 1];
      q--;
    }
    job_of[q] = k;
  }
  for (int k = 0; k < nj; k++) {
    int c = job_of[k] / FIT_NGRID, j = job_of[k] % FIT_NGRID;
    job[k] = cases[c];
    snprintf(names[k], sizeof names[k], "%s (gemm_eff %.2f)", cases[c].name, fit_grid[j]);
    job[k].name = names[k];
    for (int g = 0; g < ngroups; g++) { /* a case's GEMMs are its framework's: set both */
      jov[(size_t)k * ngroups + g] = ov[g];
      jov[(size_t)k * ngroups + g].gemm_eff = fit_grid[j];
      jov[(size_t)k * ngroups + g].gemm_eff_torch = fit_grid[j];
    }
  }
  int r = drv_validate_run_each(job, nj, drv_predict_generated, jov, ngroups, jobs, timeout_s, jres,
                               err);
  if (r == ST_ENOMEM || r == ST_EIO)
    rc = r;
  for (int k = 0; k < nj && !rc; k++)
    pred[job_of[k]] = jres[k]; /* a failure names the case and its grid point */
out:
  free(job);
  free(job_of);
  free(jov);
  free(jres);
  free(names);
  return rc;
}

int drv_validate_fit(const drv_case *cases, int n, int jobs, int timeout_s, int json, FILE *out,
                     st_err *err)
{
  /* device of each case, groups in order of first appearance */
  char (*devices)[48] = calloc((size_t)n, sizeof *devices);
  int *group = calloc((size_t)n, sizeof *group);
  drv_case_result *pred = calloc((size_t)n * FIT_NGRID, sizeof *pred);
  drv_case_result *loo = calloc((size_t)n, sizeof *loo);
  double *fit = calloc((size_t)n, sizeof *fit), *loo_eff = calloc((size_t)n, sizeof *loo_eff);
  plat_compute_params *ov = calloc((size_t)n, sizeof *ov);
  int ngroups = 0, rc = ST_OK;
  if (!devices || !group || !pred || !loo || !fit || !loo_eff || !ov) {
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
    goto out;
  }
  for (int c = 0; c < n && !rc; c++) {
    plat_cluster *cl = NULL;
    if ((rc = plat_cluster_load(cases[c].cluster, &cl, err))) {
      st_err_prefix(err, "case '%s': ", cases[c].name);
      break;
    }
    /* grouped by parameter set and framework: a variant of a device
     * (devices.json "tuning") shares its set, and so its fitted value; the
     * PyTorch frameworks' runs (their GEMMs WL_OPF_TORCH) fit gemm_eff_torch
     * apart from Megatron's gemm_eff */
    int torch_fw = 0;
    if ((rc = case_is_torch(&cases[c], &torch_fw, err))) {
      plat_cluster_destroy(cl);
      break;
    }
    const plat_compute_params *set = plat_compute_params_for(&cl->device);
    const char *nm = strcmp(set->device, "generic") ? set->device : cl->device.name;
    char key[48];
    snprintf(key, sizeof key, "%.38s%s", nm, torch_fw ? " pytorch" : "");
    int g = 0;
    while (g < ngroups && strcmp(devices[g], key))
      g++;
    if (g == ngroups) {
      snprintf(devices[g], sizeof devices[g], "%s", key);
      ov[g] = *set;
      snprintf(ov[g].device, sizeof ov[g].device, "%s", nm);
      ngroups++;
    }
    group[c] = g;
    plat_cluster_destroy(cl);
  }
  if (rc || (rc = predict_grid(cases, n, ov, ngroups, jobs, timeout_s, pred, err)))
    goto out;
  drv_validate_loo(pred, n, fit_grid, FIT_NGRID, group, ngroups, fit, loo_eff, loo);
  for (int c = 0; c < n; c++)
    if (loo[c].rc && isnan(loo_eff[c]) && !pred[(size_t)c * FIT_NGRID].rc) {
      char m[sizeof loo[c].msg];
      snprintf(m, sizeof m, "case '%.64s': %.180s", cases[c].name, loo[c].msg);
      snprintf(loo[c].msg, sizeof loo[c].msg, "%s", m);
    }
  double med, mx;
  int k = drv_validate_stats(loo, n, &med, &mx);
  if (json) {
    fprintf(out, "{\"fit\":[");
    for (int g = 0; g < ngroups; g++) {
      fprintf(out, "%s{\"device\":", g ? "," : "");
      st_json_str(out, devices[g]);
      if (isnan(fit[g]))
        fprintf(out, ",\"gemm_eff\":null}");
      else
        fprintf(out, ",\"gemm_eff\":%.3f,\"at_grid_end\":%s}", fit[g],
                at_grid_end(fit[g]) ? "true" : "false");
    }
    fprintf(out, "],\"cases\":[");
    for (int c = 0; c < n; c++) {
      fprintf(out, "%s{\"name\":", c ? "," : "");
      st_json_str(out, cases[c].name);
      if (loo[c].rc) {
        fprintf(out, ",\"measured\":%.10g,\"predicted\":null,\"error\":null,\"gemm_eff\":null,"
                     "\"failure\":",
                loo[c].measured);
        st_json_str(out, loo[c].msg);
        fputc('}', out);
      }
      else
        fprintf(out, ",\"measured\":%.10g,\"predicted\":%.10g,\"error\":%.6g,\"gemm_eff\":%.3f}",
               loo[c].measured, loo[c].predicted, loo[c].error, loo_eff[c]);
    }
    if (k)
      fprintf(out, "],\"count\":%d,\"median_abs_error\":%.6g,\"max_abs_error\":%.6g}\n", k, med,
              mx);
    else
      fprintf(out, "],\"count\":0,\"median_abs_error\":null,\"max_abs_error\":null}\n");
  } else {
    fprintf(out, "gemm_eff fitted per device and framework (least squares of log(predicted / "
           "measured), grid %.2f to %.2f; 'pytorch': gemm_eff_torch):\n",
           fit_grid[0], fit_grid[FIT_NGRID - 1]);
    for (int g = 0; g < ngroups; g++)
      if (isnan(fit[g]))
        fprintf(out, "  %-20s none (no case of it predicted)\n", devices[g]);
      else
        fprintf(out, "  %-20s %.3f%s\n", devices[g], fit[g],
                at_grid_end(fit[g]) ? "  (the grid's end: the best value may lie beyond)" : "");
    fprintf(out, "\nleave-one-out: each case predicted with gemm_eff fitted without it\n\n");
    drv_validate_print(cases, loo, n, out);
    fprintf(out, "\ngemm_eff fitted without each case:\n");
    for (int c = 0; c < n; c++)
      if (!loo[c].rc)
        fprintf(out, "  %-28s %.3f%s\n", cases[c].name, loo_eff[c],
                at_grid_end(loo_eff[c]) ? "  (the grid's end)" : "");
  }
  for (int c = 0; c < n && !rc; c++)
    if (loo[c].rc) {
      rc = loo[c].rc;
      st_err_set(err, rc, "%s", loo[c].msg);
    }
out:
  free(devices);
  free(group);
  free(pred);
  free(loo);
  free(fit);
  free(loo_eff);
  free(ov);
  return rc;
}

