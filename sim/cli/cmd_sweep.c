/* cmd_sweep.c — `simtrain sweep SPEC.json`: a grid of predictions, whole or
 * one shard of it (sim/driver/drv_sweep.c does the work; docs/sweep.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "driver.h"

static const char usage_text[] =
    "usage: simtrain sweep SPEC.json [-o SWEEP.h5] [--shard I/N] [-j N]\n"
    "                      [--point-timeout S] [--plan] [--sort COL [--desc]] [--json]\n"
    "                      [--quiet]\n"
    "\n"
    "Run every point of a grid of predictions (models x layouts or \"search\" x clusters\n"
    "x node counts x batches x sequence lengths x dtypes, docs/sweep.md), each in its own\n"
    "process, and print a row per point.  A point that fails (a bad layout, out of\n"
    "memory, a time-out) is recorded with its error and the sweep goes on.\n"
    "\n"
    "  -o, --output FILE  write the sweep file (HDF5; 'simtrain report' reads it back,\n"
    "                     'simtrain merge' joins shards, 'simtrain plot' draws it)\n"
    "  --shard I/N        run only shard I of N (1 <= I <= N): the points are split by\n"
    "                     their estimated simulation cost, the same on every machine\n"
    "  -j N               points at once (default 1)\n"
    "  --point-timeout S  stop a point after S seconds and record it as 'timeout'\n"
    "  --plan             print the shard plan (points and estimated cost per shard) and\n"
    "                     run nothing; with --shard N/N or any I/N for the plan of N\n"
    "  --sort COL         order the printed rows by a column (e.g. tokens_per_s_per_gpu,\n"
    "                     time_to_train_s); --desc for largest first\n"
    "  --json             one JSON object (what 'report SWEEP.h5 --json' prints)\n"
    "  --quiet            no progress on stderr\n"
    "  -h, --help         this text\n"
    "\n"
    "Exit status: 0 when every point ran; 64 + the number of failed points (at most\n"
    "127) when some failed (the file still holds every row); 1, 2 or 3 as for other\n"
    "commands when the sweep could not run at all.\n";

const char cmd_sweep_help[] = "a grid of predictions, whole or one shard of it";

static int count_arg(const char *opt, const char *s, int lo, int hi, int *v)
{
  char *end;
  long x = strtol(s, &end, 10);
  if (end == s || *end || x < lo || x > hi)
    return cli_usage_error("sweep", "%s '%s' is not a whole number from %d to %d", opt, s, lo,
                           hi);
  *v = (int)x;
  return 0;
}

static int print_plan(const drv_sweep_spec *s, int shards, int json)
{
  int n = s->num_points;
  double *cost = malloc(((size_t)n + 1) * sizeof *cost);
  double *load = malloc(((size_t)shards + 1) * sizeof *load);
  int *shard_of = malloc(((size_t)n + 1) * sizeof *shard_of);
  int rc = 0;
  if (!cost || !load || !shard_of || drv_sweep_plan(s, shards, cost, shard_of, load, NULL)) {
    st_err e;
    st_err_set(&e, ST_ENOMEM, "sweep: out of memory planning %d points", n);
    rc = cli_fail(&e);
    goto out;
  }
  double mean = 0, max = 0;
  for (int k = 0; k < shards; k++) {
    mean += load[k] / shards;
    max = load[k] > max ? load[k] : max;
  }
  if (json) {
    printf("{\"name\":");
    st_json_str(stdout, s->name);
    printf(",\"digest\":\"%s\",\"points\":%d,\"shards\":[", s->digest, n);
  } else {
    printf("sweep '%s': %d points, digest %s, %d shard%s\n\n%6s %7s %14s\n", s->name, n,
           s->digest, shards, shards == 1 ? "" : "s", "shard", "points", "estimated (s)");
  }
  for (int k = 0; k < shards; k++) {
    int cnt = 0;
    for (int i = 0; i < n; i++)
      cnt += shard_of[i] == k + 1;
    if (json)
      printf("%s{\"shard\":%d,\"points\":%d,\"estimated_s\":%.17g}", k ? "," : "", k + 1, cnt,
             load[k]);
    else
      printf("%6d %7d %14.1f\n", k + 1, cnt, load[k]);
  }
  if (json)
    printf("],\"balance\":%.17g}\n", mean > 0 ? max / mean : 1.0);
  else
    printf("\nbalance (largest / mean estimated cost): %.3f\n", mean > 0 ? max / mean : 1.0);
out:
  free(cost);
  free(load);
  free(shard_of);
  return rc;
}

int cmd_sweep(int argc, char **argv)
{
  static const struct option longopts[] = {
      {"output", required_argument, NULL, 'o'},  {"shard", required_argument, NULL, 'S'},
      {"point-timeout", required_argument, NULL, 'T'}, {"plan", no_argument, NULL, 'P'},
      {"sort", required_argument, NULL, 's'},    {"desc", no_argument, NULL, 'D'},
      {"json", no_argument, NULL, 'J'},          {"quiet", no_argument, NULL, 'q'},
      {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
  drv_sweep_opts o;
  drv_sweep_opts_init(&o);
  const char *out = NULL, *sort = NULL, *spec_path = NULL;
  int json = 0, quiet = 0, plan = 0, desc = 0, ch, rc = 0;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "o:j:h", longopts, NULL)) != -1) {
    switch (ch) {
    case 'o': out = optarg; break;
    case 'S':
      if (cli_parse_shard(optarg, &o.shard, &o.shards))
        return cli_usage_error("sweep", "--shard '%s' is not I/N with 1 <= I <= N", optarg);
      break;
    case 'j': rc = count_arg("-j", optarg, 1, 256, &o.jobs); break;
    case 'T': rc = count_arg("--point-timeout", optarg, 1, 1 << 30, &o.point_timeout_s); break;
    case 'P': plan = 1; break;
    case 's': sort = optarg; break;
    case 'D': desc = 1; break;
    case 'J': json = 1; break;
    case 'q': quiet = 1; break;
    case 'h': fputs(usage_text, stdout); return 0;
    default: return cli_bad_option("sweep", argv);
    }
    if (rc)
      return rc;
  }
  for (int i = optind; i < argc; i++) {
    if (spec_path)
      return cli_usage_error("sweep", "one spec at a time ('%s' and '%s')", spec_path, argv[i]);
    spec_path = argv[i];
  }
  if (!spec_path)
    return cli_usage_error("sweep", "no sweep spec given");
  if (desc && !sort)
    return cli_usage_error("sweep", "--desc needs --sort COL");
  if (sort && !an_sweep_column(sort))
    return cli_usage_error("sweep", "--sort '%s' is not a column (see docs/sweep.md)", sort);
  if (plan && out)
    return cli_usage_error("sweep", "--plan runs nothing: no -o");
  st_err err;
  st_err_clear(&err);
  drv_sweep_spec s;
  if (drv_sweep_load(spec_path, &s, &err))
    return cli_fail(&err);
  if (plan) {
    rc = print_plan(&s, o.shards, json);
    drv_sweep_release(&s);
    return rc;
  }
  o.progress = quiet ? NULL : stderr;
  an_sweep sw;
  int failed = 0;
  rc = drv_sweep_run(&s, &o, &sw, &failed, &err);
  drv_sweep_release(&s);
  if (rc)
    return cli_fail(&err);
  if (out && (rc = an_sweep_write(out, &sw, &err)) == ST_OK && !quiet)
    fprintf(stderr, "sweep: wrote '%s' (%zu points)\n", out, sw.num_rows);
  if (!rc)
    rc = json ? an_sweep_print_json(&sw, sort, desc, stdout, &err)
              : an_sweep_print(&sw, sort, desc, stdout, &err);
  free(sw.name);
  free(sw.spec_json);
  free(sw.rows);
  if (rc)
    return cli_fail(&err);
  if (failed && !quiet)
    fprintf(stderr, "sweep: %d of %zu points failed\n", failed, sw.num_rows);
  return failed ? 64 + (failed < 63 ? failed : 63) : 0;
}
