/* cmd_import.c — "simtrain import FORMAT:PATH -o workload.json.gz": convert a
 * captured trace into a workload file and print what was read. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "traces.h"
#include "workload.h"

static void import_usage(FILE *out)
{
  fprintf(out,
          "usage: simtrain import FORMAT:PATH -o workload.json.gz [options]\n\n"
          "Convert a captured trace into a workload (one program per rank).\n\n"
          "options:\n"
          "  -o, --output FILE     workload file to write (gzip when it ends in .gz)\n"
          "  --step N              kineto: import ProfilerStep#N (default: the last complete)\n"
          "  --et DIR              kineto: host execution traces to join by pid\n"
          "  --gpus N              astra: GPUs to expand over; chakra: ranks (missing ranks\n"
          "                        copy rank r mod files)\n"
          "  --dims N0,N1,...      chakra: the topology dimensions that involved_dim names,\n"
          "                        dimension 0 fastest, product = ranks (required when a\n"
          "                        collective names dimensions: import has no cluster)\n"
          "  --no-launch-gaps      kineto: drop the delays made from idle gaps on streams\n"
          "  -h, --help            this text\n\nformats:\n");
  size_t n;
  const tr_format *f = tr_formats(&n);
  for (size_t i = 0; i < n; i++)
    fprintf(out, "  %-8s %s\n", f[i].name, f[i].help);
}

static int parse_int(const char *s, int *v)
{
  char *end;
  long x = strtol(s, &end, 10);
  if (end == s || *end || x < 0 || x > 100000000)
    return -1;
  *v = (int)x;
  return 0;
}

const char cmd_import_help[] = "convert a captured trace (kineto, chakra, astra, smpi) into a workload";

int cmd_import(int argc, char **argv)
{
  static const struct option longs[] = {
      {"output", required_argument, NULL, 'o'},     {"step", required_argument, NULL, 's'},
      {"et", required_argument, NULL, 'e'},         {"gpus", required_argument, NULL, 'g'},
      {"no-launch-gaps", no_argument, NULL, 'n'},   {"help", no_argument, NULL, 'h'},
      {"dims", required_argument, NULL, 'd'},
      {NULL, 0, NULL, 0}};
  tr_options opt;
  tr_options_init(&opt);
  const char *output = NULL;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "o:h", longs, NULL)) != -1) {
    switch (c) {
    case 'o': output = optarg; break;
    case 's':
      if (parse_int(optarg, &opt.step))
        return cli_usage_error("import", "--step '%s' is not a step number", optarg);
      break;
    case 'e': opt.et_dir = optarg; break;
    case 'g':
      if (parse_int(optarg, &opt.num_gpus) || opt.num_gpus == 0)
        return cli_usage_error("import", "--gpus '%s' is not a positive count", optarg);
      break;
    case 'n': opt.keep_launch_gaps = 0; break;
    case 'd': {
      st_err e;
      st_err_clear(&e);
      if (tr_dims_parse(optarg, &opt, &e))
        return cli_usage_error("import", "%s", e.msg);
      break;
    }
    case 'h': import_usage(stdout); return 0;
    default: return cli_usage_error("import", "unknown option");
    }
  }
  if (optind != argc - 1)
    return cli_usage_error("import", "expected one FORMAT:PATH");
  if (!output)
    return cli_usage_error("import", "-o FILE is required");
  const char *spec = argv[optind];
  wl_workload *wl = NULL;
  tr_import_stats st;
  st_err err;
  st_err_clear(&err);
  int rc = tr_import(spec, &opt, &wl, &st, &err);
  if (rc)
    return cli_fail(&err);
  /* what was read */
  long by_kind[WL_OP_KIND_COUNT] = {0}, by_coll[WL_COLL_COUNT] = {0};
  for (int p = 0; p < wl->num_programs; p++)
    for (size_t i = 0; i < wl->programs[p].num_ops; i++) {
      const wl_op *op = &wl->programs[p].ops[i];
      by_kind[op->kind]++;
      if (op->kind == WL_OP_COLL)
        by_coll[op->sub]++;
    }
  printf("imported %s: %d ranks, %d programs, %zu ops\n", spec, wl->num_ranks,
         wl->num_programs, wl_workload_num_ops(wl));
  printf("ops by type:");
  for (int k = 0; k < WL_OP_KIND_COUNT; k++)
    printf(" %s %ld", wl_op_kind_name(k), by_kind[k]);
  printf("\ncollectives:");
  for (int k = 0; k < WL_COLL_COUNT; k++)
    if (by_coll[k])
      printf(" %s %ld", wl_coll_name(k), by_coll[k]);
  printf("\n");
  if (!strncmp(spec, "chakra:", 7)) {
    static const char *const tn[8] = {"INVALID", "METADATA", "MEM_LOAD", "MEM_STORE",
                                      "COMP",    "COMM_SEND", "COMM_RECV", "COMM_COLL"};
    long total = 0;
    printf("chakra nodes by type:");
    for (int t = 0; t < 8; t++) {
      printf(" %s %ld", tn[t], st.nodes_by_type[t]);
      total += st.nodes_by_type[t];
    }
    printf(" (total %ld)\n", total);
    printf("dependencies dropped (dangling, self or cycle-forming): %ld\n", st.deps_dropped);
  }
  printf("events read %ld, skipped %ld\n", st.events_read, st.events_skipped);
  if (st.gaps)
    printf("idle gaps kept as delays: %ld, %.1f us in all\n", st.gaps, st.gap_s * 1e6);
  if (!isnan(st.measured_step_s)) {
    printf("measured step (first start to last end across ranks): %.1f us\n",
           st.measured_step_s * 1e6);
    for (int r = 0; r < st.num_ranks; r++)
      if (st.rank_measured_s && !isnan(st.rank_measured_s[r]))
        printf("  rank %d: step %.1f us, starts %.1f us after the earliest rank\n", r,
               st.rank_measured_s[r] * 1e6, st.rank_start_s ? st.rank_start_s[r] * 1e6 : 0.0);
  }
  fflush(stdout);
  rc = wl_workload_write(wl, output, &err);
  if (rc) {
    tr_import_stats_release(&st);
    wl_workload_destroy(wl);
    return cli_fail(&err);
  }
  tr_import_stats_release(&st);
  wl_workload_destroy(wl);
  printf("wrote %s\n", output);
  return 0;
}
