/* cmd_run.c — `simtrain run`: predict a training step.
 *
 * The workload comes from a file, from a model and a layout (generators), or
 * from a captured trace (importers); the cluster from a preset, a spec or a
 * SimGrid XML file.  The replay's summary is printed (a table, or one JSON
 * object with --json) and, with -o, everything goes to an HDF5 results file.
 * --tokens, --price and --pue only set the job's budget (the driver turns it
 * into time, cost and energy, docs/cost.md).
 * With no arguments, `run` predicts the built-in example. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "cli.h"

/* long options without a short letter (beyond any char) */
enum { OPT_WORLD = 1000, OPT_RANKS };

/* The built-in example: Llama 3 8B on two DGX-class H100 nodes with a 3D layout. */
#define EXAMPLE_MODEL "llama3-8b"
#define EXAMPLE_LAYOUT "tp=4,pp=2,dp=2,mbs=1,gbs=16,sp=1"
#define EXAMPLE_CLUSTER "node8:2"

static const char usage_text[] =
    "usage: simtrain run (--workload FILE | --model M --layout SPEC | --trace FORMAT:PATH)\n"
    "                    --cluster NAME[:NODES]|FILE [-o OUT.h5] [--json] [--timeline]\n"
    "       simtrain run (--job SPEC)... | --jobs FILE  --cluster C [-o OUT.h5] [--json]\n"
    "\n"
    "Replay a training step on a cluster and print the prediction.  With no arguments,\n"
    "runs the built-in example (" EXAMPLE_MODEL ", " EXAMPLE_LAYOUT ", " EXAMPLE_CLUSTER ").\n"
    "\n"
    "  --workload FILE     a workload file (.json or .json.gz, docs/workload-format.md)\n"
    "  --model M           built-in model name or model spec .json (with --layout)\n"
    "  --layout SPEC       tp=..,pp=..,dp=..,mbs=..,gbs=.. (docs/workloads.md)\n"
    "  --seq S             with --model: the sequence length (default: the model's)\n"
    "  --trace FMT:PATH    import a captured trace (kineto, chakra, astra, smpi)\n"
    "  --job SPEC          a job sharing the cluster with the other --job ones (repeatable):\n"
    "                      [NAME:]WHAT@gpus=LIST, WHAT a workload file, model=M,layout=L[,seq=S]\n"
    "                      or background=alltoall:RATE[:ROUNDS]; LIST like 0-7,16-23; each job\n"
    "                      alone and all together, and the links they shared (docs/jobs.md)\n"
    "  --jobs FILE         the jobs from a JSON file (docs/jobs.md)\n"
    "  --top-links N       with --job: the shared links listed (default 10, 0: all)\n"
    "  -j N                with --job: jobs simulated alone at once (default 1)\n"
    "  --cluster C         preset NAME[:NODES], cluster spec .json or SimGrid .xml\n"
    "  --step N            with --trace (kineto): replay ProfilerStep#N (default: last complete)\n"
    "  --et DIR            with --trace (kineto): host execution traces to join by pid\n"
    "  --no-launch-gaps    with --trace (kineto): drop the delays made from idle stream gaps\n"
    "  --gpus N            with --trace: astra: GPUs to expand over (default: the cluster's);\n"
    "                      chakra: ranks, missing ones copy rank r mod files (default: files);\n"
    "                      kineto: the world when the trace does not record it; ranks\n"
    "                      without a file run the nearest given rank below (docs/traces.md)\n"
    "  --world N           with --trace (kineto): replay the job on N ranks, its\n"
    "                      data-parallel groups resized, compute as measured\n"
    "  --dp F              with --trace (kineto): the data-parallel size times F (0.5, 8)\n"
    "  --tp F              refused: tensor parallelism cannot be resized from a trace\n"
    "  --ranks LIST        the replay table (and --json's per-rank array) for these ranks\n"
    "                      (e.g. 0-3,8); without it past 16 ranks a summary, --json none\n"
    "  --dims N0,N1,...    with --trace (chakra): the topology dimensions that involved_dim\n"
    "                      names, dimension 0 fastest, product = ranks (default: the\n"
    "                      cluster's GPUs per node, ranks / GPUs per node)\n"
    "  --from-device NAME  with --trace: the device it was measured on, when the trace does\n"
    "                      not say; compute is rescaled when the cluster's device differs\n"
    "  -o, --output FILE   write the HDF5 results file\n"
    "  --json              print one JSON object with the summary\n"
    "  --timeline          record every op (for report, export, plot)\n"
    "  --fidelity F        flow (default) or step\n"
    "  --net-model M       ideal (default), cm02 or lv08\n"
    "  --cfg SETTING       extra SimGrid setting, e.g. --cfg=network/model:LV08 (repeatable)\n"
    "  --no-closed-form    simulate every collective's flows, even where a closed form\n"
    "                      gives the same answer (collectives alone on their links)\n"
    "  --no-symmetry       simulate every rank, even where ranks are exact copies of\n"
    "                      others on disjoint, isomorphic links (rank classes)\n"
    "  --exact             the full simulation: --no-closed-form and --no-symmetry\n"
    "  --tokens T          the time, cost and energy to train on T tokens, e.g. 15T, 300B,\n"
    "                      2.5e12 (suffixes K M B/G T: 1e3 1e6 1e9 1e12); steady-state\n"
    "                      steps (no warm-up, checkpoints or failures), docs/cost.md\n"
    "  --price USD         with --tokens: USD per GPU-hour (default: the device's\n"
    "                      on-demand list price, docs/cost.md; none: no cost)\n"
    "  --pue F             with --tokens: facility power / IT power, >= 1 (default 1)\n"
    "  --slow SPEC         a straggler, repeatable: gpu=RANK:F (that rank's compute takes\n"
    "                      F x its time), node=NODE:F (every GPU of the node), link=NAME:F\n"
    "                      (links named NAME, a glob such as 'nic-*-up', at F x their\n"
    "                      bandwidth); docs/variability.md\n"
    "  --variability D     every rank's compute in every iteration x a draw of mean 1:\n"
    "                      lognormal:SIGMA (sigma of the factor's log)\n"
    "  --seed N            the variability's seed (default 1): same seed, same bits\n"
    "  --iterations N      run the workload's step N times back to back (1 to 1000; the\n"
    "                      step time is then the mean: the whole run / N)\n"
  "  --strict            fail when the workload does not fit in device memory\n"
    "  --quiet             no progress or warnings on stderr\n"
    "  -h, --help          this text\n";

#define RUN_SLOW_MAX 64

struct run_args {
  drv_job job;
  sim_slow slow[RUN_SLOW_MAX];
  const char *output;
  int json, quiet, trace_opts, cost_opts;
  const char *ranks_spec;
  char cfg[1024];
  const char **job_specs; /* --job, in order */
  int num_job_specs;
  const char *jobs_file;  /* --jobs */
  int top_links, procs, jobs_opts;
};

static int parse_count(const char *s, int *v)
{
  char *end;
  long x = strtol(s, &end, 10);
  if (end == s || *end || x < 0 || x > 100000000)
    return -1;
  *v = (int)x;
  return 0;
}

static int print_run(const struct run_args *a, const drv_run *r, st_err *err)
{
  const an_replay *rp = r->have_replay ? &r->replay : NULL;
  int32_t *sel = NULL;
  size_t nsel = 0;
  if (a->ranks_spec && rp &&
      an_rank_list_parse(a->ranks_spec, rp->num_ranks, &sel, &nsel, err) != ST_OK) {
    st_err_prefix(err, "--ranks: ");
    return err->code;
  }
  if (a->json)
    an_summary_print_json_replay(&r->sum, rp, sel, nsel, stdout);
  else {
    an_summary_print_text(&r->sum, r->name, r->cl->name, stdout);
    if (rp) {
      fputc('\n', stdout);
      an_replay_print_text(rp, sel, nsel, stdout);
    }
  }
  free(sel);
  return ST_OK;
}

/* Several jobs on the cluster (drv_jobs.c): the other sources, the trace
 * options and a token budget do not go with them. */
static int run_jobs(struct run_args *a)
{
  int bad = a->job.workload || a->job.trace || a->job.model || a->job.layout || a->job.seq_len ||
            a->trace_opts || a->job.train_tokens != 0 || a->cost_opts || a->job.opt.timeline ||
            a->job.strict;
  if (bad) {
    free(a->job_specs);
    return cli_usage_error("run", "--job and --jobs take the workloads from their specs: no "
                                  "--workload, --model, --layout, --seq, --trace (or its "
                                  "options), --tokens, --timeline or --strict with them");
  }
  if (a->num_job_specs && a->jobs_file) {
    free(a->job_specs);
    return cli_usage_error("run", "give --job or --jobs, not both");
  }
  if (!a->job.cluster) {
    free(a->job_specs);
    return cli_usage_error("run", "--cluster is required");
  }
  drv_fabric f;
  drv_fabric_init(&f);
  f.cluster = a->job.cluster;
  f.opt = a->job.opt;
  f.opt.quiet = a->quiet;
  f.opt.simgrid_cfg = a->cfg[0] ? a->cfg : NULL;
  f.results_file = a->output != NULL;
  f.top_links = a->top_links;
  f.procs = a->procs;
  st_err err;
  st_err_clear(&err);
  int rc = ST_OK;
  for (int i = 0; i < a->num_job_specs && !rc; i++)
    rc = drv_fabric_add_spec(&f, a->job_specs[i], &err);
  free(a->job_specs);
  if (!rc && a->jobs_file)
    rc = drv_fabric_load(&f, a->jobs_file, &err);
  if (!rc)
    rc = drv_fabric_run(&f, &err);
  if (!rc && a->output)
    rc = drv_fabric_write(&f, a->output, cli_command_line, &err);
  if (!rc)
    drv_fabric_print(&f, a->json, stdout);
  drv_fabric_release(&f);
  return rc ? cli_fail(&err) : 0;
}

const char cmd_run_help[] = "predict a training step: replay a workload on a cluster";

/* One option (ch, its optarg) into a: -1 to go on, else the command's exit
 * status (help, a usage error). */
static int run_option(struct run_args *a, int ch, char **argv)
{
  switch (ch) {
  case 'w': a->job.workload = optarg; break;
  case 'm': a->job.model = optarg; break;
  case 'l': a->job.layout = optarg; break;
  case 't': a->job.trace = optarg; break;
  case 'c': a->job.cluster = optarg; break;
  case 'o': a->output = optarg; break;
  case 256: a->json = 1; break;
  case 'T': a->job.opt.timeline = 1; break;
  case 's': a->job.strict = 1; break;
  case 'q': a->quiet = 1; break;
  case 'X': a->job.opt.fast_colls = 0; break;
  case 'Y': a->job.opt.symmetry = 0; break;
  case 'Z': a->job.opt.fast_colls = 0; a->job.opt.symmetry = 0; break;
  case 'f':
    if (!strcmp(optarg, "flow"))
      a->job.opt.fidelity = SIM_FID_FLOW;
    else if (!strcmp(optarg, "step"))
      a->job.opt.fidelity = SIM_FID_STEP;
    else
      return cli_usage_error("run", "--fidelity '%s' is not flow or step", optarg);
    break;
  case 'n':
    if ((a->job.opt.net_model = sim_net_model_from_name(optarg)) < 0)
      return cli_usage_error("run", "--net-model '%s' is not ideal, cm02 or lv08", optarg);
    break;
  case 'C': {
    size_t used = strlen(a->cfg);
    const char *setting = strncmp(optarg, "--cfg=", 6) ? optarg : optarg + 6;
    if (strchr(setting, ':') == NULL || strchr(setting, ' '))
      return cli_usage_error("run", "--cfg '%s' is not KEY:VALUE", optarg);
    st_err cerr;
    st_err_clear(&cerr);
    if (plat_simgrid_cfg_check(setting, &cerr))
      return cli_fail(&cerr);
    snprintf(a->cfg + used, sizeof a->cfg - used, "%s--cfg=%s", used ? " " : "", setting);
    break;
  }
  case 'S':
    if (parse_count(optarg, &a->job.topt.step))
      return cli_usage_error("run", "--step '%s' is not a step number", optarg);
    a->trace_opts = 1;
    break;
  case 'E': a->job.topt.et_dir = optarg; a->trace_opts = 1; break;
  case 'G': a->job.topt.keep_launch_gaps = 0; a->trace_opts = 1; break;
  case 'g':
    if (parse_count(optarg, &a->job.topt.num_gpus) || a->job.topt.num_gpus == 0 ||
        a->job.topt.num_gpus > ST_RANKS_MAX)
      return cli_usage_error("run", "--gpus '%s' is not a GPU count 1..%d", optarg, ST_RANKS_MAX);
    a->trace_opts = 1;
    break;
  case 'F': a->job.from_device = optarg; a->trace_opts = 1; break;
  case OPT_WORLD:
    if (parse_count(optarg, &a->job.world) || a->job.world == 0 || a->job.world > ST_RANKS_MAX)
      return cli_usage_error("run", "--world '%s' is not a rank count 1..%d", optarg, ST_RANKS_MAX);
    a->trace_opts = 1;
    break;
  case 'p':
    if (cli_parse_real(optarg, 0, &a->job.dp_factor) || !(a->job.dp_factor > 0))
      return cli_usage_error("run", "--dp '%s' is not a positive factor", optarg);
    a->trace_opts = 1;
    break;
  case 'r':
    if (cli_parse_real(optarg, 0, &a->job.tp_factor) || !(a->job.tp_factor > 0))
      return cli_usage_error("run", "--tp '%s' is not a positive factor", optarg);
    a->trace_opts = 1;
    break;
  case OPT_RANKS: a->ranks_spec = optarg; break;
  case 'Q':
    if (parse_count(optarg, &a->job.seq_len) || a->job.seq_len == 0)
      return cli_usage_error("run", "--seq '%s' is not a positive length", optarg);
    break;
  case 'K':
    if (cli_parse_tokens(optarg, &a->job.train_tokens))
      return cli_usage_error("run", "--tokens '%s' is not a token count from 1 to 1e18 (a number "
                                    "with an optional K, M, B, G or T: 15T, 300B, 2.5e12)",
                             optarg);
    break;
  case 'P':
    if (cli_parse_real(optarg, 0, &a->job.price_usd_per_gpu_hour))
      return cli_usage_error("run", "--price '%s' is not a price in USD per GPU-hour (a number, "
                                    "0 or more)",
                             optarg);
    a->cost_opts = 1;
    break;
  case 'U':
    if (cli_parse_real(optarg, 1, &a->job.pue))
      return cli_usage_error("run", "--pue '%s' is not a PUE (a number, 1 or more)", optarg);
    a->cost_opts = 1;
    break;
  case 'W': {
    st_err e;
    st_err_clear(&e);
    if (a->job.opt.num_slow == RUN_SLOW_MAX)
      return cli_usage_error("run", "--slow is given more than %d times", RUN_SLOW_MAX);
    if (sim_slow_parse(optarg, &a->slow[a->job.opt.num_slow], &e))
      return cli_usage_error("run", "%s", e.msg);
    a->job.opt.num_slow++;
    a->job.opt.slow = a->slow;
    break;
  }
  case 'V': {
    st_err e;
    st_err_clear(&e);
    if (sim_variability_parse(optarg, &a->job.opt, &e))
      return cli_usage_error("run", "%s", e.msg);
    break;
  }
  case 'I':
    if (parse_count(optarg, &a->job.iterations) || a->job.iterations < 1 ||
        a->job.iterations > WL_REPEAT_MAX)
      return cli_usage_error("run", "--iterations '%s' is not a count from 1 to %d", optarg,
                             WL_REPEAT_MAX);
    break;
  case 'R':
    if (cli_parse_seed(optarg, &a->job.opt.seed))
      return cli_usage_error("run", "--seed '%s' is not a whole number from 0 to 2^64-1", optarg);
    break;
  case 'D': {
    st_err e;
    st_err_clear(&e);
    if (tr_dims_parse(optarg, &a->job.topt, &e))
      return cli_usage_error("run", "%s", e.msg);
    a->trace_opts = 1;
    break;
  }
  case 'J': a->job_specs[a->num_job_specs++] = optarg; break;
  case 'B': a->jobs_file = optarg; break;
  case 'N':
    if (parse_count(optarg, &a->top_links))
      return cli_usage_error("run", "--top-links '%s' is not a count", optarg);
    a->jobs_opts = 1;
    break;
  case 'j':
    if (parse_count(optarg, &a->procs) || a->procs < 1 || a->procs > 1024)
      return cli_usage_error("run", "-j '%s' is not a count from 1 to 1024", optarg);
    a->jobs_opts = 1;
    break;
  case 'h': fputs(usage_text, stdout); return 0;
  default: return cli_bad_option("run", argv);
  }
  return -1;
}

int cmd_run(int argc, char **argv)
{
  static const struct option longopts[] = {
      {"workload", required_argument, NULL, 'w'}, {"model", required_argument, NULL, 'm'},
      {"layout", required_argument, NULL, 'l'},   {"trace", required_argument, NULL, 't'},
      {"cluster", required_argument, NULL, 'c'},  {"output", required_argument, NULL, 'o'},
      {"json", no_argument, NULL, 256},           {"timeline", no_argument, NULL, 'T'},
      {"fidelity", required_argument, NULL, 'f'}, {"net-model", required_argument, NULL, 'n'},
      {"cfg", required_argument, NULL, 'C'},      {"strict", no_argument, NULL, 's'},
      {"quiet", no_argument, NULL, 'q'},          {"help", no_argument, NULL, 'h'},
      {"no-closed-form", no_argument, NULL, 'X'}, {"no-symmetry", no_argument, NULL, 'Y'},
      {"exact", no_argument, NULL, 'Z'},
      {"step", required_argument, NULL, 'S'},     {"et", required_argument, NULL, 'E'},
      {"no-launch-gaps", no_argument, NULL, 'G'}, {"gpus", required_argument, NULL, 'g'},
      {"from-device", required_argument, NULL, 'F'}, {"dims", required_argument, NULL, 'D'},
      {"seq", required_argument, NULL, 'Q'},
      {"tokens", required_argument, NULL, 'K'},   {"price", required_argument, NULL, 'P'},
      {"pue", required_argument, NULL, 'U'},
      {"slow", required_argument, NULL, 'W'},     {"variability", required_argument, NULL, 'V'},
      {"seed", required_argument, NULL, 'R'},
      {"iterations", required_argument, NULL, 'I'},
      {"job", required_argument, NULL, 'J'},      {"jobs", required_argument, NULL, 'B'},
      {"top-links", required_argument, NULL, 'N'},
      {"world", required_argument, NULL, OPT_WORLD}, {"dp", required_argument, NULL, 'p'},
      {"tp", required_argument, NULL, 'r'},      {"ranks", required_argument, NULL, OPT_RANKS},
      {NULL, 0, NULL, 0}};
  struct run_args a;
  memset(&a, 0, sizeof a);
  drv_job_init(&a.job);
  a.top_links = 10;
  a.procs = 1;
  a.job_specs = calloc((size_t)argc + 1, sizeof *a.job_specs);
  if (!a.job_specs) {
    st_err e;
    st_err_set(&e, ST_ENOMEM, "out of memory");
    return cli_fail(&e);
  }
  int ch;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "o:hj:", longopts, NULL)) != -1) {
    int rc = run_option(&a, ch, argv);
    if (rc >= 0)
      return rc;
  }
  if (optind < argc)
    return cli_usage_error("run", "unexpected argument '%s'", argv[optind]);
  a.job.opt.quiet = a.quiet;
  a.job.opt.simgrid_cfg = a.cfg[0] ? a.cfg : NULL;

  if (a.num_job_specs || a.jobs_file)
    return run_jobs(&a);
  free(a.job_specs);
  if (a.jobs_opts)
    return cli_usage_error("run", "--top-links and -j go with --job or --jobs");
  int sources = !!a.job.workload + !!a.job.trace + !!(a.job.model || a.job.layout);
  if (sources > 1)
    return cli_usage_error("run", "give one of --workload, --model/--layout, --trace");
  if (sources == 0) {
    if (a.job.cluster)
      return cli_usage_error("run", "--cluster needs a workload (--workload, --model, --trace)");
    a.job.model = EXAMPLE_MODEL;
    a.job.layout = EXAMPLE_LAYOUT;
    a.job.cluster = EXAMPLE_CLUSTER;
  }
  if (a.trace_opts && !a.job.trace)
    return cli_usage_error("run", "--step, --et, --no-launch-gaps, --gpus, --dims, --from-device, "
                                  "--world, --dp and --tp go with --trace");
  if ((a.job.model && !a.job.layout) || (a.job.layout && !a.job.model))
    return cli_usage_error("run", "--model and --layout go together");
  if (a.job.seq_len && !a.job.model)
    return cli_usage_error("run", "--seq goes with --model");
  if (!a.job.cluster)
    return cli_usage_error("run", "--cluster is required");
  if (a.ranks_spec && !a.job.trace)
    return cli_usage_error("run", "--ranks goes with --trace (the replay table)");
  if (a.cost_opts && !(a.job.train_tokens > 0))
    return cli_usage_error("run", "--price and --pue go with --tokens");

  a.job.results_file = a.output != NULL;
  a.job.log = a.quiet ? NULL : stderr;

  st_err err;
  st_err_clear(&err);
  drv_run r;
  int rc = drv_run_job(&a.job, &r, &err);
  if (!rc && a.output)
    rc = drv_run_write(&r, a.output, cli_command_line, &err);
  if (!rc)
    rc = print_run(&a, &r, &err);
  drv_run_release(&r);
  return rc ? cli_fail(&err) : 0;
}
