/* cmd_train.c — `simtrain train`: the whole run to a token budget, with
 * failures, checkpoints and restarts (docs/failures.md).
 *
 * The step is the one `run` predicts (same workload, model, layout and
 * cluster options), or --step-time; the options here only fill a
 * drv_train_opts, the driver (drv_train.c) does the rest and analysis
 * (failures.c, failures_out.c) prints and writes it. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "driver.h"

static const char usage_text[] =
    "usage: simtrain train (--workload FILE | --model M --layout SPEC) --cluster C --tokens T\n"
    "                      [failure options] [--json] [-o OUT.h5] [--svg FILE]\n"
    "\n"
    "Predict a whole training run with failures, checkpoints and restarts: the step is\n"
    "simulated once, then the expected time to train (analytic, for exponential failures)\n"
    "and a seeded Monte-Carlo over failure times (mean, p10/p50/p90, goodput).\n"
    "\n"
    "  --workload FILE     a workload file (then --ckpt-bytes is needed)\n"
    "  --model M           built-in model name or model spec .json (with --layout)\n"
    "  --layout SPEC       tp=..,pp=..,dp=..,mbs=..,gbs=.. (docs/workloads.md)\n"
    "  --seq S             with --model: the sequence length (default: the model's)\n"
    "  --cluster C         preset NAME[:NODES], cluster spec .json or SimGrid .xml\n"
    "  --tokens T          the token budget, e.g. 15T, 300B, 2.5e12 (required)\n"
    "  --step-time S       use this step time (s) instead of simulating (--model, --layout)\n"
    "  --mtbf-gpu-h H      mean time between failures of one GPU, hours (default %.0f)\n"
    "  --mtbf-node-h H     of one node, for everything but its GPUs, hours (default %.0f)\n"
    "  --ckpt-interval S   work between checkpoints, s, or 'auto' (default: the optimum)\n"
    "  --storage-GBps B    checkpoint write and read bandwidth, GB/s (default %g)\n"
    "  --ckpt-bytes N      checkpoint size (default: weights + optimizer state, 14 B/param)\n"
    "  --restart-s S       restart time, s (default: %g s rescheduling + reading the\n"
    "                      checkpoint at --storage-GBps)\n"
    "  --spare-nodes K     spare nodes (default: unlimited); a failure with none free\n"
    "                      waits for a repaired node\n"
    "  --repair-h H        repair time of a failed node, hours (default %g)\n"
    "  --trials N          Monte-Carlo trials (default %d)\n"
    "  --seed N            the random seed (default 1): same seed, same answer\n"
    "  --interval-sweep    also the expected time and goodput against the interval, for\n"
    "                      the MTBF scaled by --sweep-mtbf (a table, or \"sweep\" in JSON)\n"
    "  --sweep-mtbf LIST   MTBF scales of the sweep (default 0.25,0.5,1,2,4)\n"
    "  --json              print one JSON object\n"
    "  -o, --output FILE   write an HDF5 file (docs/results-format.md, training runs)\n"
    "  --svg FILE          the finish-time distribution (histogram, p10/p50/p90)\n"
    "  --svg-sweep FILE    goodput against the interval per MTBF scale (implies the sweep)\n"
    "  --fidelity F, --net-model M, --no-closed-form, --no-symmetry, --exact, --strict\n"
    "                      as for `simtrain run`\n"
    "  --slow SPEC, --variability D, --iterations N\n"
    "                      stragglers and per-step variability in the simulated step, as\n"
    "                      for `simtrain run` (the variability draws from --seed too)\n"
    "  --quiet             no progress or warnings on stderr\n"
    "  -h, --help          this text\n";

const char cmd_train_help[] = "time to train a token budget with failures, checkpoints, restarts";

static int positive(const char *s, double *v) { return cli_parse_real(s, 0, v) || !(*v > 0); }

static int parse_int(const char *s, long lo, long hi, long *v)
{
  char *end;
  long x = strtol(s, &end, 10);
  if (end == s || *end || x < lo || x > hi)
    return -1;
  *v = x;
  return 0;
}

static int parse_scales(const char *s, drv_train_opts *o)
{
  char buf[512];
  snprintf(buf, sizeof buf, "%s", s);
  o->num_sweep_scales = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (o->num_sweep_scales == DRV_TRAIN_MAX_SCALES ||
        positive(t, &o->sweep_scales[o->num_sweep_scales]))
      return -1;
    o->num_sweep_scales++;
  }
  return o->num_sweep_scales ? 0 : -1;
}

/* The failure model's options: 0 when taken, 1 (a usage error, printed)
 * when the value is bad, -1 when ch is not one of them. */
static int failure_option(int ch, const char *arg, drv_train_opts *o)
{
  long v;
  switch (ch) {
  case 'g':
    if (positive(arg, &o->mtbf_gpu_h))
      return cli_usage_error("train", "--mtbf-gpu-h '%s' is not an MTBF in hours (a positive "
                                      "number)",
                             arg);
    break;
  case 'n':
    if (positive(arg, &o->mtbf_node_h))
      return cli_usage_error("train", "--mtbf-node-h '%s' is not an MTBF in hours (a positive "
                                      "number)",
                             arg);
    break;
  case 'i':
    if (!strcmp(arg, "auto"))
      o->interval_s = 0;
    else if (positive(arg, &o->interval_s))
      return cli_usage_error("train", "--ckpt-interval '%s' is not an interval in seconds (a "
                                      "positive number) or 'auto'",
                             arg);
    break;
  case 'b':
    if (positive(arg, &o->storage_GBps))
      return cli_usage_error("train", "--storage-GBps '%s' is not a bandwidth in GB/s (a "
                                      "positive number)",
                             arg);
    break;
  case 'B':
    if (positive(arg, &o->ckpt_bytes))
      return cli_usage_error("train", "--ckpt-bytes '%s' is not a size in bytes (a positive "
                                      "number)",
                             arg);
    break;
  case 'r':
    if (cli_parse_real(arg, 0, &o->restart_s))
      return cli_usage_error("train", "--restart-s '%s' is not a time in seconds (a number, 0 "
                                      "or more)",
                             arg);
    break;
  case 'k':
    if (parse_int(arg, 0, AN_FAILURE_MAX_SPARES, &v))
      return cli_usage_error("train", "--spare-nodes '%s' is not a node count from 0 to %d",
                             arg, AN_FAILURE_MAX_SPARES);
    o->spare_nodes = (int)v;
    break;
  case 'R':
    if (cli_parse_real(arg, 0, &o->repair_h))
      return cli_usage_error("train", "--repair-h '%s' is not a time in hours (a number, 0 or "
                                      "more)",
                             arg);
    break;
  case 't':
    if (parse_int(arg, 1, AN_FAILURE_MAX_TRIALS, &v))
      return cli_usage_error("train", "--trials '%s' is not a trial count from 1 to %d", arg,
                             AN_FAILURE_MAX_TRIALS);
    o->trials = (int)v;
    break;
  case 's': {
    char *end;
    unsigned long long x = strtoull(arg, &end, 10);
    if (end == arg || *end || arg[0] == '-')
      return cli_usage_error("train", "--seed '%s' is not a seed (a whole number, 0 or more)",
                             arg);
    o->seed = x;
    break;
  }
  default: return -1;
  }
  return 0;
}

/* The simulation's options (fidelity, network model, shortcuts, stragglers,
 * iterations): 0 when taken, 1 (a usage error, printed) when the value is
 * bad, -1 when ch is not one of them. */
static int sim_option(int ch, const char *arg, drv_job *job, sim_slow *slow, int cap)
{
  long v;
  switch (ch) {
  case 'f':
    if (!strcmp(arg, "flow"))
      job->opt.fidelity = SIM_FID_FLOW;
    else if (!strcmp(arg, "step"))
      job->opt.fidelity = SIM_FID_STEP;
    else
      return cli_usage_error("train", "--fidelity '%s' is not flow or step", arg);
    break;
  case 'N':
    if ((job->opt.net_model = sim_net_model_from_name(arg)) < 0)
      return cli_usage_error("train", "--net-model '%s' is not ideal, cm02 or lv08", arg);
    break;
  case 'X': job->opt.fast_colls = 0; break;
  case 'Y': job->opt.symmetry = 0; break;
  case 'Z': job->opt.fast_colls = 0; job->opt.symmetry = 0; break;
  case 'T': job->strict = 1; break;
  case 'L': {
    st_err e;
    st_err_clear(&e);
    if (job->opt.num_slow == cap)
      return cli_usage_error("train", "--slow is given more than %d times", cap);
    if (sim_slow_parse(arg, &slow[job->opt.num_slow], &e))
      return cli_usage_error("train", "%s", e.msg);
    job->opt.num_slow++;
    job->opt.slow = slow;
    break;
  }
  case 'A': {
    st_err e;
    st_err_clear(&e);
    if (sim_variability_parse(arg, &job->opt, &e))
      return cli_usage_error("train", "%s", e.msg);
    break;
  }
  case 'I':
    if (parse_int(arg, 1, WL_REPEAT_MAX, &v))
      return cli_usage_error("train", "--iterations '%s' is not a count from 1 to %d", arg,
                             WL_REPEAT_MAX);
    job->iterations = (int)v;
    break;
  default: return -1;
  }
  return 0;
}

int cmd_train(int argc, char **argv)
{
  static const struct option longopts[] = {
      {"workload", required_argument, NULL, 'w'},   {"model", required_argument, NULL, 'm'},
      {"layout", required_argument, NULL, 'l'},     {"seq", required_argument, NULL, 'Q'},
      {"cluster", required_argument, NULL, 'c'},    {"tokens", required_argument, NULL, 'K'},
      {"step-time", required_argument, NULL, 'S'},  {"mtbf-gpu-h", required_argument, NULL, 'g'},
      {"mtbf-node-h", required_argument, NULL, 'n'},
      {"ckpt-interval", required_argument, NULL, 'i'},
      {"storage-GBps", required_argument, NULL, 'b'},
      {"ckpt-bytes", required_argument, NULL, 'B'}, {"restart-s", required_argument, NULL, 'r'},
      {"spare-nodes", required_argument, NULL, 'k'}, {"repair-h", required_argument, NULL, 'R'},
      {"trials", required_argument, NULL, 't'},     {"seed", required_argument, NULL, 's'},
      {"interval-sweep", no_argument, NULL, 'W'},   {"sweep-mtbf", required_argument, NULL, 'M'},
      {"json", no_argument, NULL, 'j'},             {"output", required_argument, NULL, 'o'},
      {"svg", required_argument, NULL, 'v'},        {"svg-sweep", required_argument, NULL, 'V'},
      {"fidelity", required_argument, NULL, 'f'},   {"net-model", required_argument, NULL, 'N'},
      {"no-closed-form", no_argument, NULL, 'X'},   {"no-symmetry", no_argument, NULL, 'Y'},
      {"exact", no_argument, NULL, 'Z'},            {"strict", no_argument, NULL, 'T'},
      {"quiet", no_argument, NULL, 'q'},            {"help", no_argument, NULL, 'h'},
      {"slow", required_argument, NULL, 'L'},     {"variability", required_argument, NULL, 'A'},
      {"iterations", required_argument, NULL, 'I'},
      {NULL, 0, NULL, 0}};
  drv_train_opts o;
  drv_train_opts_init(&o);
  sim_slow slow[64];
  const char *output = NULL, *svg = NULL, *svg_sweep = NULL;
  int json = 0, quiet = 0, ch;
  long v;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
    switch (ch) {
    case 'w': o.job.workload = optarg; break;
    case 'm': o.job.model = optarg; break;
    case 'l': o.job.layout = optarg; break;
    case 'c': o.job.cluster = optarg; break;
    case 'Q':
      if (parse_int(optarg, 1, 100000000, &v))
        return cli_usage_error("train", "--seq '%s' is not a positive length", optarg);
      o.job.seq_len = (int)v;
      break;
    case 'K':
      if (cli_parse_tokens(optarg, &o.job.train_tokens))
        return cli_usage_error("train", "--tokens '%s' is not a token count from 1 to 1e18 (a "
                                        "number with an optional K, M, B, G or T: 15T, 300B)",
                               optarg);
      break;
    case 'S':
      if (positive(optarg, &o.step_time_s))
        return cli_usage_error("train", "--step-time '%s' is not a step time in seconds (a "
                                        "positive number)",
                               optarg);
      break;
    case 'W': o.sweep = 1; break;
    case 'M':
      if (parse_scales(optarg, &o))
        return cli_usage_error("train", "--sweep-mtbf '%s' is not a list of up to %d positive "
                                        "scales (0.5,1,2)",
                               optarg, DRV_TRAIN_MAX_SCALES);
      break;
    case 'j': json = 1; break;
    case 'o': output = optarg; break;
    case 'v': svg = optarg; break;
    case 'V': svg_sweep = optarg; o.sweep = 1; break;
    case 'q': quiet = 1; break;
    case 'h':
      printf(usage_text, DRV_MTBF_GPU_H, DRV_MTBF_NODE_H, DRV_STORAGE_GBPS, DRV_RESCHEDULE_S,
             DRV_REPAIR_H, DRV_TRAIN_TRIALS);
      return 0;
    default: {
      int r = failure_option(ch, optarg, &o);
      if (r < 0)
        r = sim_option(ch, optarg, &o.job, slow, (int)(sizeof slow / sizeof slow[0]));
      if (r >= 0) {
        if (r)
          return r;
        break;
      }
      return cli_bad_option("train", argv);
    }
    }
  }
  if (optind < argc)
    return cli_usage_error("train", "unexpected argument '%s'", argv[optind]);
  if (o.job.workload && (o.job.model || o.job.layout))
    return cli_usage_error("train", "give one of --workload, --model/--layout");
  if (!o.job.workload && !o.job.model && !o.job.layout)
    return cli_usage_error("train", "a workload is required (--workload, or --model and --layout)");
  if ((o.job.model && !o.job.layout) || (o.job.layout && !o.job.model))
    return cli_usage_error("train", "--model and --layout go together");
  if (o.job.seq_len && !o.job.model)
    return cli_usage_error("train", "--seq goes with --model");
  if (!o.job.cluster)
    return cli_usage_error("train", "--cluster is required");
  if (!(o.job.train_tokens > 0))
    return cli_usage_error("train", "--tokens is required (the token budget of the run)");
  if (o.step_time_s > 0 && !o.job.model)
    return cli_usage_error("train", "--step-time needs --model and --layout (the tokens per step "
                                    "and the model's size)");
  o.job.opt.quiet = quiet;
  o.job.log = quiet ? NULL : stderr;
  o.job.opt.seed = o.seed;
  if (o.step_time_s > 0 && (sim_options_stragglers(&o.job.opt) || o.job.iterations > 1))
    return cli_usage_error("train", "--slow, --variability and --iterations shape the simulated "
                                    "step: not with --step-time");

  st_err err;
  st_err_clear(&err);
  an_failure_report r;
  int rc = drv_train_run(&o, &r, &err);
  if (!rc && output)
    rc = an_failure_write(&r, output, cli_command_line, &err);
  if (!rc && svg)
    rc = an_failure_plot(&r, svg, &err);
  if (!rc && svg_sweep)
    rc = an_failure_plot_sweep(&r, svg_sweep, &err);
  if (!rc) {
    if (json) {
      an_failure_print_json(&r, stdout);
    } else {
      an_failure_print_text(&r, stdout);
      if (r.sweep) {
        fputc('\n', stdout);
        an_failure_print_sweep(&r, stdout);
      }
    }
  }
  an_failure_report_release(&r);
  return rc ? cli_fail(&err) : 0;
}
