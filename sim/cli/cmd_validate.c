/* cmd_validate.c — `simtrain validate [DIR]`: predict every published run of
 * the validation set and print measured against predicted, case by case, with
 * the median and largest error; `--fit` runs the leave-one-out calibration of
 * docs/calibration.md instead. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"

#define DEFAULT_DIR "bench/validation"

static void usage(FILE *out)
{
  fprintf(out,
          "usage: simtrain validate [DIR] [--cases PATTERN] [--json] [-j N] [--timeout S]\n"
          "                         [--fit] [--quiet]\n\n"
          "Predict every case of the validation set (DIR, default " DEFAULT_DIR "): one\n"
          "published training run per file, bench/validation/README.md.  Prints measured and\n"
          "predicted tokens/s per GPU and the signed error (predicted / measured - 1) per\n"
          "case, then the count, the median |error| and the largest |error|.  Cases that\n"
          "cannot be predicted are listed and make the exit status 3 (2: bad input).\n\n"
          "options:\n"
          "  --cases PATTERN  only the cases whose name matches the shell pattern, e.g.\n"
          "              'megatron-h100-*' (quote it from the shell)\n"
          "  --json      one JSON object: {\"cases\":[{\"name\",\"measured\",\"predicted\",\n"
          "              \"error\"}...],\"count\",\"median_abs_error\",\"max_abs_error\"}\n"
          "  -j N        predict N cases at once (each in its own process; default 1)\n"
          "  --timeout S give each prediction at most S seconds (default: no limit)\n"
          "  --fit       leave-one-out calibration of the GEMM efficiency per device: each\n"
          "              case predicted with the value fitted on the other cases of its\n"
          "              device (docs/calibration.md)\n"
          "  --quiet     no progress on stderr (by default one line per case as it ends:\n"
          "              its error and the wall time it took)\n"
          "  -h, --help  this help\n");
}

static const double fit_grid[] = {0.60, 0.80, 1.00};
#define FIT_NGRID ((int)(sizeof fit_grid / sizeof fit_grid[0]))

/* Every case at every grid point: pred[c * FIT_NGRID + j].  Each (case, grid
 * point) is one job of one queue, the cases with the most GPUs first (the
 * longest, roughly): with passes per grid point every pass waited for its
 * longest case while the other slots idled.  Returns 0, or ST_ENOMEM/ST_EIO
 * (a failed prediction stays in its pred entry). */
static int predict_grid(const an_case *cases, int n, const plat_compute_params *ov, int ngroups,
                        int jobs, int timeout_s, an_case_result *pred, st_err *err)
{
  int nj = n * FIT_NGRID, rc = ST_OK;
  an_case *job = calloc((size_t)nj, sizeof *job);
  int *job_of = calloc((size_t)nj, sizeof *job_of); /* job -> c * FIT_NGRID + j */
  plat_compute_params *jov = calloc((size_t)nj * (size_t)ngroups, sizeof *jov);
  an_case_result *jres = calloc((size_t)nj, sizeof *jres);
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
    for (int g = 0; g < ngroups; g++) {
      jov[(size_t)k * ngroups + g] = ov[g];
      jov[(size_t)k * ngroups + g].gemm_eff = fit_grid[j];
    }
  }
  int r = an_validate_run_each(job, nj, an_predict_generated, jov, ngroups, jobs, timeout_s, jres,
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

static int run_fit(const an_case *cases, int n, int jobs, int timeout_s, int json, st_err *err)
{
  /* device of each case, groups in order of first appearance */
  char (*devices)[48] = calloc((size_t)n, sizeof *devices);
  int *group = calloc((size_t)n, sizeof *group);
  an_case_result *pred = calloc((size_t)n * FIT_NGRID, sizeof *pred);
  an_case_result *loo = calloc((size_t)n, sizeof *loo);
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
    int g = 0;
    while (g < ngroups && strcmp(devices[g], cl->device.name))
      g++;
    if (g == ngroups) {
      snprintf(devices[g], sizeof devices[g], "%s", cl->device.name);
      ov[g] = *plat_compute_params_for(&cl->device);
      snprintf(ov[g].device, sizeof ov[g].device, "%s", cl->device.name);
      ngroups++;
    }
    group[c] = g;
    plat_cluster_destroy(cl);
  }
  if (rc || (rc = predict_grid(cases, n, ov, ngroups, jobs, timeout_s, pred, err)))
    goto out;
  an_validate_loo(pred, n, fit_grid, FIT_NGRID, group, ngroups, fit, loo_eff, loo);
  double med, mx;
  int k = an_validate_stats(loo, n, &med, &mx);
  if (json) {
    printf("{\"fit\":[");
    for (int g = 0; g < ngroups; g++) {
      printf("%s{\"device\":", g ? "," : "");
      st_json_str(stdout, devices[g]);
      printf(",\"gemm_eff\":%.3f}", fit[g]);
    }
    printf("],\"cases\":[");
    for (int c = 0; c < n; c++) {
      printf("%s{\"name\":", c ? "," : "");
      st_json_str(stdout, cases[c].name);
      if (loo[c].rc)
        printf(",\"measured\":%.10g,\"predicted\":null,\"error\":null,\"gemm_eff\":null}",
               loo[c].measured);
      else
        printf(",\"measured\":%.10g,\"predicted\":%.10g,\"error\":%.6g,\"gemm_eff\":%.3f}",
               loo[c].measured, loo[c].predicted, loo[c].error, loo_eff[c]);
    }
    printf("],\"count\":%d,\"median_abs_error\":%.6g,\"max_abs_error\":%.6g}\n", k, med, mx);
  } else {
    printf("gemm_eff fitted per device (least squares of log(predicted / measured), grid %.2f "
           "to %.2f):\n",
           fit_grid[0], fit_grid[FIT_NGRID - 1]);
    for (int g = 0; g < ngroups; g++)
      printf("  %-20s %.3f\n", devices[g], fit[g]);
    printf("\nleave-one-out: each case predicted with gemm_eff fitted without it\n\n");
    an_validate_print(cases, loo, n, stdout);
    printf("\ngemm_eff fitted without each case:\n");
    for (int c = 0; c < n; c++)
      if (!loo[c].rc)
        printf("  %-28s %.3f\n", cases[c].name, loo_eff[c]);
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

const char cmd_validate_help[] = "predict the published runs of the validation set, with the errors";

int cmd_validate(int argc, char **argv)
{
  const char *dir = NULL, *pattern = NULL;
  int json = 0, fit = 0, quiet = 0, jobs = 1, timeout_s = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "--json")) {
      json = 1;
    } else if (!strcmp(argv[i], "--fit")) {
      fit = 1;
    } else if (!strcmp(argv[i], "--quiet")) {
      quiet = 1;
    } else if (!strcmp(argv[i], "--cases")) {
      if (i + 1 >= argc || !argv[i + 1][0])
        return cli_usage_error("validate", "--cases needs a pattern of case names");
      pattern = argv[++i];
    } else if (!strcmp(argv[i], "-j")) {
      char *end;
      if (i + 1 >= argc)
        return cli_usage_error("validate", "-j needs a number");
      long v = strtol(argv[++i], &end, 10);
      if (*end || v < 1 || v > 256)
        return cli_usage_error("validate", "-j '%s' is not a number from 1 to 256", argv[i]);
      jobs = (int)v;
    } else if (!strcmp(argv[i], "--timeout")) {
      char *end;
      if (i + 1 >= argc)
        return cli_usage_error("validate", "--timeout needs a number of seconds");
      long v = strtol(argv[++i], &end, 10);
      if (*end || v < 1 || v > 1000000)
        return cli_usage_error("validate", "--timeout '%s' is not a number of seconds", argv[i]);
      timeout_s = (int)v;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return cli_usage_error("validate", "unknown option '%s'", argv[i]);
    } else if (dir) {
      return cli_usage_error("validate", "one folder only (got '%s' and '%s')", dir, argv[i]);
    } else {
      dir = argv[i];
    }
  }
  if (!dir)
    dir = DEFAULT_DIR;
  st_err err = {0};
  an_case *cases = NULL;
  int n = 0;
  if (an_cases_load(dir, &cases, &n, &err))
    return cli_fail(&err);
  if (pattern && an_cases_select(cases, &n, pattern, &err)) {
    st_err_prefix(&err, "validation folder '%s': ", dir);
    an_cases_free(cases, n);
    return cli_fail(&err);
  }
  if (!quiet)
    an_validate_progress(stderr);
  int rc;
  if (fit) {
    rc = run_fit(cases, n, jobs, timeout_s, json, &err);
  } else {
    an_case_result *res = calloc((size_t)n, sizeof *res);
    rc = res ? an_validate_run(cases, n, an_predict_generated, NULL, 0, jobs, timeout_s, res,
                               &err)
             : st_err_set(&err, ST_ENOMEM, "out of memory");
    /* failed predictions are part of the report; only a failure to run stops it */
    if (res && rc != ST_ENOMEM && rc != ST_EIO) {
      if (json)
        an_validate_print_json(cases, res, n, stdout);
      else
        an_validate_print(cases, res, n, stdout);
    }
    free(res);
  }
  an_cases_free(cases, n);
  return rc ? cli_fail(&err) : 0;
}
