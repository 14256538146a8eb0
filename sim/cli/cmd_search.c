/* cmd_search.c — `simtrain search`: the best layout for a model on a
 * cluster (sim/driver/drv_search.c does the work). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "driver.h"

static const char usage_text[] =
    "usage: simtrain search (--model M --cluster C[:NODES] --gbs B | --case FILE) [--seq S]\n"
    "                       [--dtype D] [--gpus N] [--fixed KEYS] [--tokens T [--price USD]]\n"
    "                       [--top K] [-j N] [--rows R] [-o SEARCH.h5 [--shard I/N]]\n"
    "                       [--json] [--quiet]\n"
    "\n"
    "Find the best parallel layout for a model on a cluster: every valid layout is\n"
    "enumerated (tp, pp, vpp, dp, cp, ep, sp, tp_overlap, moe_a2a_overlap, mbs, zero,\n"
    "recompute, schedule, uneven stages), those that do not fit in device memory or that another fitting one\n"
    "dominates are set aside (counted by reason), the rest are ranked by an analytic\n"
    "estimate (the compute model and NCCL's tuner on the cluster's links, no simulation),\n"
    "and the best K are simulated and ranked by their simulated step.\n"
    "\n"
    "  --model M      built-in model name or model spec .json\n"
    "  --cluster C    preset NAME[:NODES] or cluster spec .json\n"
    "  --gbs B        global batch in sequences\n"
    "  --seq S        sequence length (default: the model's)\n"
    "  --dtype D      bf16 (default), fp16, fp8 ...\n"
    "  --gpus N       search N GPUs (a whole number of the cluster's nodes; default all)\n"
    "  --top K        layouts simulated (default 16; 0: estimates only)\n"
    "  -j N           simulations at once, each in its own process (default 1)\n"
    "  --rows R       table rows (default 20)\n"
    "  --json         one JSON object: {\"candidates\":[{\"layout\",\"estimate_s\",\n"
    "                 \"step_time_s\",...}],\"pruned\":{reason:count},\"best\":{...}}\n"
    "  --tokens T     the simulated layouts' time, cost and energy to train on T tokens\n"
    "                 (15T, 300B; docs/cost.md); --price USD per GPU-hour, --pue F\n"
    "  --fixed KEYS   layout keys every candidate gets, e.g. flash=0,grad_dtype=bf16; a\n"
    "                 key the search sets (tp=2, zero=1) keeps the candidates with it\n"
    "  --case FILE    a validation case (bench/validation): its model, cluster, GPUs, batch,\n"
    "                 sequence and dtypes, with its published layout placed among the\n"
    "                 candidates (its estimate rank and simulated step)\n"
    "  -o FILE        write every estimated candidate (and the simulated ones' numbers) as a\n"
    "                 search file: 'simtrain report', 'merge' and 'plot --memory' read it\n"
    "  --shard I/N    simulate only shard I of N of the best K (split by estimated\n"
    "                 simulation cost, the same everywhere); 'simtrain merge' joins them\n"
    "  --quiet        no progress on stderr\n"
    "  -h, --help     this text\n";

const char cmd_search_help[] = "find the best layout for a model on a cluster";

static int count_arg(const char *opt, const char *s, int lo, int hi, int *v)
{
  char *end;
  long x = strtol(s, &end, 10);
  if (end == s || *end || x < lo || x > hi)
    return cli_usage_error("search", "%s '%s' is not a whole number from %d to %d", opt, s, lo,
                           hi);
  *v = (int)x;
  return 0;
}

int cmd_search(int argc, char **argv)
{
  static const struct option longopts[] = {
      {"model", required_argument, NULL, 'm'}, {"cluster", required_argument, NULL, 'c'},
      {"gbs", required_argument, NULL, 'b'},   {"seq", required_argument, NULL, 's'},
      {"dtype", required_argument, NULL, 'd'}, {"gpus", required_argument, NULL, 'g'},
      {"top", required_argument, NULL, 'k'},   {"rows", required_argument, NULL, 'r'},
      {"json", no_argument, NULL, 'J'},        {"quiet", no_argument, NULL, 'q'},
      {"case", required_argument, NULL, 'C'},   {"fixed", required_argument, NULL, 'F'},
      {"tokens", required_argument, NULL, 'K'}, {"price", required_argument, NULL, 'P'},
      {"pue", required_argument, NULL, 'U'},   {"output", required_argument, NULL, 'o'},
      {"shard", required_argument, NULL, 'S'},
      {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0}};
  drv_search_opts o;
  drv_search_opts_init(&o);
  int json = 0, quiet = 0, rows = 20, ch, rc = 0;
  const char *case_path = NULL, *out = NULL;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "j:ho:", longopts, NULL)) != -1) {
    switch (ch) {
    case 'm': o.model = optarg; break;
    case 'c': o.cluster = optarg; break;
    case 'b': rc = count_arg("--gbs", optarg, 1, 1 << 24, &o.gbs); break;
    case 's': rc = count_arg("--seq", optarg, 1, 1 << 24, &o.seq); break;
    case 'd': o.dtype = optarg; break;
    case 'g': rc = count_arg("--gpus", optarg, 1, ST_RANKS_MAX, &o.gpus); break;
    case 'k': rc = count_arg("--top", optarg, 0, 100000, &o.top); break;
    case 'r': rc = count_arg("--rows", optarg, 1, 1000000, &rows); break;
    case 'j': rc = count_arg("-j", optarg, 1, 256, &o.jobs); break;
    case 'J': json = 1; break;
    case 'C': case_path = optarg; break;
    case 'F': o.fixed = optarg; break;
    case 'K':
      if (cli_parse_tokens(optarg, &o.train_tokens))
        return cli_usage_error("search", "--tokens '%s' is not a token count from 1 to 1e18", optarg);
      break;
    case 'P':
      if (cli_parse_real(optarg, 0, &o.price_usd_per_gpu_hour))
        return cli_usage_error("search", "--price '%s' is not a price in USD per GPU-hour", optarg);
      break;
    case 'U':
      if (cli_parse_real(optarg, 1, &o.pue))
        return cli_usage_error("search", "--pue '%s' is not a PUE (a number, 1 or more)", optarg);
      break;
    case 'q': quiet = 1; break;
    case 'o': out = optarg; break;
    case 'S':
      if (cli_parse_shard(optarg, &o.shard, &o.shards))
        return cli_usage_error("search", "--shard '%s' is not I/N with 1 <= I <= N", optarg);
      break;
    case 'h': fputs(usage_text, stdout); return 0;
    default: return cli_bad_option("search", argv);
    }
    if (rc)
      return rc;
  }
  if (optind < argc)
    return cli_usage_error("search", "unexpected argument '%s'", argv[optind]);
  if (case_path && (o.model || o.cluster || o.gbs || o.seq || o.gpus || o.fixed))
    return cli_usage_error("search", "--case gives the model, cluster, GPUs, batch and sequence");
  if (!case_path && (!o.model || !o.cluster || !o.gbs))
    return cli_usage_error("search", "--model, --cluster and --gbs are required");
  if (strchr(o.dtype, ',') || strchr(o.dtype, '='))
    return cli_usage_error("search", "--dtype '%s' is not a dtype name", o.dtype);
  o.progress = quiet ? NULL : stderr;
  st_err err;
  st_err_clear(&err);
  drv_search s;
  memset(&s, 0, sizeof s);
  drv_case c;
  wl_model m;
  char fixed[384];
  memset(&c, 0, sizeof c);
  if (case_path && (rc = drv_search_case_opts(case_path, &o, &c, &m, fixed, sizeof fixed, &err)))
    return cli_fail(&err);
  rc = drv_search_run(&o, &s, &err);
  if (!rc && out) {
    an_sweep sw;
    if (!(rc = drv_search_sweep(&o, &s, &sw, &err)))
      rc = an_sweep_write(out, &sw, &err);
    if (!rc && !quiet)
      fprintf(stderr, "search: wrote '%s' (%zu candidates)\n", out, sw.num_rows);
    free(sw.rows);
    free(sw.name);
    free(sw.spec_json);
  }
  if (!rc) {
    if (json)
      drv_search_print_json(&o, &s, stdout);
    else
      drv_search_print(&o, &s, rows, stdout);
  }
  drv_search_release(&s);
  if (case_path)
    drv_case_release(&c);
  return rc ? cli_fail(&err) : 0;
}
