/* cmd_validate.c — `simtrain validate [DIR]`: predict every published run of
 * the validation set and print measured against predicted, case by case, with
 * the median and largest error; `--fit` runs the leave-one-out calibration of
 * docs/calibration.md instead. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
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
          "case, then the count, the median |error| and the largest |error|; for the cases\n"
          "that publish a peak memory per GPU, a second table against the memory model's\n"
          "peak (simtrain memory).  Cases that cannot be predicted are listed and make the\n"
          "exit status 3 (2: bad input).\n\n"
          "options:\n"
          "  --cases PATTERN  only the cases whose name matches the shell pattern, e.g.\n"
          "              'megatron-h100-*' (quote it from the shell)\n"
          "  --json      one JSON object: {\"cases\":[{\"name\",\"measured\",\"predicted\",\n"
          "              \"error\"[,\"memory\"]}...],\"count\",\"median_abs_error\",\n"
          "              \"max_abs_error\"[,\"memory\"]}; a case's \"memory\" is {\"measured\",\n"
          "              \"reading\",\"predicted\",\"error\"} (GiB), the whole's its statistics\n"
          "  -j N        predict N cases at once (each in its own process; default 1)\n"
          "  --timeout S give each prediction at most S seconds (default: no limit)\n"
          "  --fit       leave-one-out calibration of the GEMM efficiency per device and\n"
          "              framework: each case predicted with the value fitted on the other\n"
          "              cases of its device's parameter set and its framework (Megatron's\n"
          "              gemm_eff, or gemm_eff_torch for dp_impl fsdp, fsdp2, deepspeed; a\n"
          "              variant with the device it names; a case alone in its group is\n"
          "              not predicted; docs/calibration.md)\n"
          "  --quiet     no progress on stderr (by default one line per case as it ends:\n"
          "              its error and the wall time it took)\n"
          "  -h, --help  this help\n");
}

const char cmd_validate_help[] = "predict the published runs of the validation set, with the errors";

int cmd_validate(int argc, char **argv)
{
  static const struct option longopts[] = {
      {"json", no_argument, NULL, 'J'},          {"fit", no_argument, NULL, 'f'},
      {"quiet", no_argument, NULL, 'q'},         {"cases", required_argument, NULL, 'c'},
      {"timeout", required_argument, NULL, 't'}, {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *dir = NULL, *pattern = NULL;
  int json = 0, fit = 0, quiet = 0, jobs = 1, timeout_s = 0, ch;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "hj:", longopts, NULL)) != -1) {
    char *end;
    long v;
    switch (ch) {
    case 'J': json = 1; break;
    case 'f': fit = 1; break;
    case 'q': quiet = 1; break;
    case 'c':
      if (!optarg[0])
        return cli_usage_error("validate", "--cases needs a pattern of case names");
      pattern = optarg;
      break;
    case 'j':
      v = strtol(optarg, &end, 10);
      if (end == optarg || *end || v < 1 || v > 256)
        return cli_usage_error("validate", "-j '%s' is not a number from 1 to 256", optarg);
      jobs = (int)v;
      break;
    case 't':
      v = strtol(optarg, &end, 10);
      if (end == optarg || *end || v < 1 || v > 1000000)
        return cli_usage_error("validate", "--timeout '%s' is not a number of seconds", optarg);
      timeout_s = (int)v;
      break;
    case 'h': usage(stdout); return 0;
    default: return cli_bad_option("validate", argv);
    }
  }
  for (int i = optind; i < argc; i++) {
    if (dir)
      return cli_usage_error("validate", "one folder only (got '%s' and '%s')", dir, argv[i]);
    dir = argv[i];
  }
  if (!dir)
    dir = DEFAULT_DIR;
  st_err err = {0};
  drv_case *cases = NULL;
  int n = 0;
  if (drv_cases_load(dir, &cases, &n, &err))
    return cli_fail(&err);
  if (pattern && drv_cases_select(cases, &n, pattern, &err)) {
    st_err_prefix(&err, "validation folder '%s': ", dir);
    drv_cases_free(cases, n);
    return cli_fail(&err);
  }
  if (!quiet)
    drv_validate_progress(stderr);
  int rc;
  if (fit) {
    rc = drv_validate_fit(cases, n, jobs, timeout_s, json, stdout, &err);
  } else {
    drv_case_result *res = calloc((size_t)n, sizeof *res);
    rc = res ? drv_validate_run(cases, n, drv_predict_generated, NULL, 0, jobs, timeout_s, res,
                               &err)
             : st_err_set(&err, ST_ENOMEM, "out of memory");
    /* failed predictions are part of the report; only a failure to run stops it */
    if (res && rc != ST_ENOMEM && rc != ST_EIO) {
      if (json)
        drv_validate_print_json(cases, res, n, stdout);
      else
        drv_validate_print(cases, res, n, stdout);
    }
    free(res);
  }
  drv_cases_free(cases, n);
  return rc ? cli_fail(&err) : 0;
}
