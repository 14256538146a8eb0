/* cmd_run.c — `simtrain run`: predict a training step.
 *
 * The workload comes from a file, from a model and a layout (generators), or
 * from a captured trace (importers); the cluster from a preset, a spec or a
 * SimGrid XML file.  The replay's summary is printed (a table, or one JSON
 * object with --json) and, with -o, everything goes to an HDF5 results file.
 * With no arguments, `run` predicts the built-in example. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "sim.h"
#include "traces.h"
#include "workload.h"

/* The built-in example: Llama 3 8B on two DGX-class H100 nodes with a 3D layout. */
#define EXAMPLE_MODEL "llama3-8b"
#define EXAMPLE_LAYOUT "tp=4,pp=2,dp=2,mbs=1,gbs=16,sp=1"
#define EXAMPLE_CLUSTER "node8:2"

static const char usage_text[] =
    "usage: simtrain run (--workload FILE | --model M --layout SPEC | --trace FORMAT:PATH)\n"
    "                    --cluster NAME[:NODES]|FILE [-o OUT.h5] [--json] [--timeline]\n"
    "\n"
    "Replay a training step on a cluster and print the prediction.  With no arguments,\n"
    "runs the built-in example (" EXAMPLE_MODEL ", " EXAMPLE_LAYOUT ", " EXAMPLE_CLUSTER ").\n"
    "\n"
    "  --workload FILE     a workload file (.json or .json.gz, docs/workload-format.md)\n"
    "  --model M           built-in model name or model spec .json (with --layout)\n"
    "  --layout SPEC       tp=..,pp=..,dp=..,mbs=..,gbs=.. (docs/workloads.md)\n"
    "  --trace FMT:PATH    import a captured trace (kineto, chakra, astra, smpi)\n"
    "  --cluster C         preset NAME[:NODES], cluster spec .json or SimGrid .xml\n"
    "  --step N            with --trace (kineto): replay ProfilerStep#N (default: last complete)\n"
    "  --et DIR            with --trace (kineto): host execution traces to join by pid\n"
    "  --no-launch-gaps    with --trace (kineto): drop the delays made from idle stream gaps\n"
    "  --gpus N            with --trace: astra: GPUs to expand over (default: the cluster's);\n"
    "                      chakra: ranks, missing ones copy rank r mod files (default: files)\n"
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
    "  --strict            fail when the workload does not fit in device memory\n"
    "  --quiet             no progress or warnings on stderr\n"
    "  -h, --help          this text\n";

struct run_args {
  const char *workload, *model, *layout, *trace, *cluster, *output;
  int json, strict, quiet;
  sim_options opt;
  char cfg[1024];
  /* --trace only */
  tr_options topt;
  int trace_opts;          /* a trace option was given */
  const char *from_device; /* --from-device */
  tr_import_stats st;      /* what the import measured */
  an_replay replay;        /* measured against replayed */
  int have_replay;
  int rescaled;
  char source_device[64];  /* as the trace or --from-device names it */
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

/* A replayed trace keeps its measured compute times; on another device they
 * are rescaled by the compute model (traces.h: tr_workload_retarget). */
static int retarget(struct run_args *a, wl_workload *wl, const plat_cluster *cl, st_err *err)
{
  const char *name = a->from_device ? a->from_device : a->st.source_device;
  snprintf(a->source_device, sizeof a->source_device, "%s", name);
  if (!name[0])
    return ST_OK;
  plat_device from;
  int rc;
  if (a->from_device) {
    if ((rc = plat_device_find(name, &from, err)))
      st_err_prefix(err, "--from-device: ");
    if (rc)
      return rc;
  } else if ((rc = tr_device_match(name, &from, err))) {
    if (!a->quiet)
      cli_warn("%s: measured compute is replayed as it is", err->msg);
    st_err_clear(err);
    return ST_OK;
  }
  if (!strcmp(from.name, cl->device.name))
    return ST_OK;
  tr_retarget_stats rs;
  if ((rc = tr_workload_retarget(wl, &from, &cl->device, &rs, err)))
    return rc;
  a->rescaled = 1;
  if (!a->quiet) {
    char b[256];
    int n = snprintf(b, sizeof b, "compute moved from %s to %s (%ld kernels):", from.name,
                     cl->device.name, rs.ops_scaled);
    for (int c = 0; c < WL_CLASS_COUNT && n < (int)sizeof b; c++)
      if (c != WL_CLASS_OTHER && rs.before_s[c] > 0)
        n += snprintf(b + n, sizeof b - (size_t)n, " %s x%.3f", wl_class_name(c),
                      rs.after_s[c] / rs.before_s[c]);
    fprintf(stderr, "simtrain: note: %s\n", b);
  }
  return ST_OK;
}

static int load_workload(struct run_args *a, const plat_cluster *cl, wl_workload **wl,
                         st_buf *desc, st_err *err)
{
  int rc;
  if (a->workload) {
    st_buf_printf(desc, "{\"kind\":\"file\",\"path\":");
    st_buf_json_str(desc, a->workload);
    st_buf_printf(desc, "}");
    return wl_workload_read(a->workload, wl, err);
  }
  if (a->trace) {
    /* astra needs a GPU count to expand over: the cluster's unless --gpus;
     * the other formats have their own rank count (chakra expands only
     * when asked, so that a 4-rank trace never turns into 8 ranks) */
    if (a->topt.num_gpus == 0 && !strncmp(a->trace, "astra:", 6))
      a->topt.num_gpus = cl->num_gpus;
    /* chakra's involved_dim without --dims: the cluster's nodes are the dimensions */
    a->topt.gpus_per_node = cl->gpus_per_node;
    st_buf_printf(desc, "{\"kind\":\"trace\",\"trace\":");
    st_buf_json_str(desc, a->trace);
    st_buf_printf(desc, "}");
    if ((rc = tr_import(a->trace, &a->topt, wl, &a->st, err)))
      return rc;
    if ((rc = retarget(a, *wl, cl, err))) {
      wl_workload_destroy(*wl);
      *wl = NULL;
    }
    return rc;
  }
  wl_model m;
  wl_layout l;
  if ((rc = wl_model_load(a->model, &m, err)))
    return rc;
  rc = wl_layout_parse(a->layout, cl->num_gpus, &m, &l, err);
  if (!rc)
    rc = wl_generate(&m, &l, wl, err);
  if (!rc) {
    st_buf_printf(desc, "{\"kind\":\"model\",\"model\":");
    st_buf_json_str(desc, a->model);
    st_buf_printf(desc, ",\"layout\":");
    st_buf_json_str(desc, (*wl)->meta.layout ? (*wl)->meta.layout : a->layout);
    st_buf_printf(desc, "}");
  }
  wl_model_release(&m);
  return rc;
}

static char *options_json(const struct run_args *a)
{
  st_buf b;
  st_buf_init(&b);
  st_buf_printf(&b,
                "{\"fidelity\":\"%s\",\"net_model\":\"%s\",\"timeline\":%s,"
                "\"closed_form\":%s,\"symmetry\":%s,\"cfg\":",
                a->opt.fidelity == SIM_FID_STEP ? "step" : "flow",
                sim_net_model_name(a->opt.net_model), a->opt.timeline ? "true" : "false",
                a->opt.fast_colls ? "true" : "false", a->opt.symmetry ? "true" : "false");
  st_buf_json_str(&b, a->cfg);
  st_buf_printf(&b, "}");
  return st_buf_detach(&b, NULL);
}

/* Measured (from the import) against replayed (from the run), when the
 * trace measured anything. */
static int trace_replay(struct run_args *a, const wl_workload *wl, const plat_cluster *cl,
                        const sim_result *res, st_err *err)
{
  int measured = isfinite(a->st.measured_step_s);
  for (int i = 0; i < a->st.num_ranks && !measured; i++)
    measured = (a->st.rank_measured_s && isfinite(a->st.rank_measured_s[i])) ||
               (a->st.rank_compute_s && isfinite(a->st.rank_compute_s[i]));
  if (!measured)
    return ST_OK;
  const double *off = a->st.num_ranks >= res->num_ranks ? a->st.rank_start_s : NULL;
  int rc = an_replay_init(&a->replay, wl, res, off, err);
  if (rc)
    return rc;
  a->have_replay = 1;
  an_replay *rp = &a->replay;
  snprintf(rp->source_device, sizeof rp->source_device, "%s", a->source_device);
  snprintf(rp->replay_device, sizeof rp->replay_device, "%s", cl->device.name);
  rp->rescaled = a->rescaled;
  rp->measured_step_s = a->st.measured_step_s;
  for (int i = 0; i < rp->num_ranks && i < a->st.num_ranks; i++) {
    an_replay_rank *x = &rp->ranks[i];
    if (a->st.rank_measured_s)
      x->measured_step_s = a->st.rank_measured_s[i];
    if (a->st.rank_compute_s)
      x->measured_compute_s = a->st.rank_compute_s[i];
    if (a->st.rank_comm_s)
      x->measured_comm_s = a->st.rank_comm_s[i];
  }
  return ST_OK;
}

const char cmd_run_help[] = "predict a training step: replay a workload on a cluster";

int cmd_run(int argc, char **argv)
{
  static const struct option longopts[] = {
      {"workload", required_argument, NULL, 'w'}, {"model", required_argument, NULL, 'm'},
      {"layout", required_argument, NULL, 'l'},   {"trace", required_argument, NULL, 't'},
      {"cluster", required_argument, NULL, 'c'},  {"output", required_argument, NULL, 'o'},
      {"json", no_argument, NULL, 'j'},           {"timeline", no_argument, NULL, 'T'},
      {"fidelity", required_argument, NULL, 'f'}, {"net-model", required_argument, NULL, 'n'},
      {"cfg", required_argument, NULL, 'C'},      {"strict", no_argument, NULL, 's'},
      {"quiet", no_argument, NULL, 'q'},          {"help", no_argument, NULL, 'h'},
      {"no-closed-form", no_argument, NULL, 'X'}, {"no-symmetry", no_argument, NULL, 'Y'},
      {"exact", no_argument, NULL, 'Z'},
      {"step", required_argument, NULL, 'S'},     {"et", required_argument, NULL, 'E'},
      {"no-launch-gaps", no_argument, NULL, 'G'}, {"gpus", required_argument, NULL, 'g'},
      {"from-device", required_argument, NULL, 'F'}, {"dims", required_argument, NULL, 'D'},
      {NULL, 0, NULL, 0}};
  struct run_args a;
  memset(&a, 0, sizeof a);
  sim_options_init(&a.opt);
  tr_options_init(&a.topt);
  int ch;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
    switch (ch) {
    case 'w': a.workload = optarg; break;
    case 'm': a.model = optarg; break;
    case 'l': a.layout = optarg; break;
    case 't': a.trace = optarg; break;
    case 'c': a.cluster = optarg; break;
    case 'o': a.output = optarg; break;
    case 'j': a.json = 1; break;
    case 'T': a.opt.timeline = 1; break;
    case 's': a.strict = 1; break;
    case 'q': a.quiet = 1; break;
    case 'X': a.opt.fast_colls = 0; break;
    case 'Y': a.opt.symmetry = 0; break;
    case 'Z': a.opt.fast_colls = 0; a.opt.symmetry = 0; break;
    case 'f':
      if (!strcmp(optarg, "flow"))
        a.opt.fidelity = SIM_FID_FLOW;
      else if (!strcmp(optarg, "step"))
        a.opt.fidelity = SIM_FID_STEP;
      else
        return cli_usage_error("run", "--fidelity '%s' is not flow or step", optarg);
      break;
    case 'n':
      if ((a.opt.net_model = sim_net_model_from_name(optarg)) < 0)
        return cli_usage_error("run", "--net-model '%s' is not ideal, cm02 or lv08", optarg);
      break;
    case 'C': {
      size_t used = strlen(a.cfg);
      const char *setting = strncmp(optarg, "--cfg=", 6) ? optarg : optarg + 6;
      if (strchr(setting, ':') == NULL || strchr(setting, ' '))
        return cli_usage_error("run", "--cfg '%s' is not KEY:VALUE", optarg);
      st_err cerr;
      st_err_clear(&cerr);
      if (plat_simgrid_cfg_check(setting, &cerr))
        return cli_fail(&cerr);
      snprintf(a.cfg + used, sizeof a.cfg - used, "%s--cfg=%s", used ? " " : "", setting);
      break;
    }
    case 'S':
      if (parse_count(optarg, &a.topt.step))
        return cli_usage_error("run", "--step '%s' is not a step number", optarg);
      a.trace_opts = 1;
      break;
    case 'E': a.topt.et_dir = optarg; a.trace_opts = 1; break;
    case 'G': a.topt.keep_launch_gaps = 0; a.trace_opts = 1; break;
    case 'g':
      if (parse_count(optarg, &a.topt.num_gpus) || a.topt.num_gpus == 0)
        return cli_usage_error("run", "--gpus '%s' is not a positive count", optarg);
      a.trace_opts = 1;
      break;
    case 'F': a.from_device = optarg; a.trace_opts = 1; break;
    case 'D': {
      st_err e;
      st_err_clear(&e);
      if (tr_dims_parse(optarg, &a.topt, &e))
        return cli_usage_error("run", "%s", e.msg);
      a.trace_opts = 1;
      break;
    }
    case 'h': fputs(usage_text, stdout); return 0;
    default: return cli_bad_option("run", argv);
    }
  }
  if (optind < argc)
    return cli_usage_error("run", "unexpected argument '%s'", argv[optind]);
  a.opt.quiet = a.quiet;
  a.opt.simgrid_cfg = a.cfg[0] ? a.cfg : NULL;

  int sources = !!a.workload + !!a.trace + !!(a.model || a.layout);
  if (sources > 1)
    return cli_usage_error("run", "give one of --workload, --model/--layout, --trace");
  if (sources == 0) {
    if (a.cluster)
      return cli_usage_error("run", "--cluster needs a workload (--workload, --model, --trace)");
    a.model = EXAMPLE_MODEL;
    a.layout = EXAMPLE_LAYOUT;
    a.cluster = EXAMPLE_CLUSTER;
  }
  if (a.trace_opts && !a.trace)
    return cli_usage_error("run", "--step, --et, --no-launch-gaps, --gpus, --dims and --from-device "
                                  "go with --trace");
  if ((a.model && !a.layout) || (a.layout && !a.model))
    return cli_usage_error("run", "--model and --layout go together");
  if (!a.cluster)
    return cli_usage_error("run", "--cluster is required");

  st_err err;
  st_err_clear(&err);
  plat_cluster *cl = NULL;
  wl_workload *wl = NULL;
  sim_result *res = NULL;
  st_buf desc;
  st_buf_init(&desc);
  char *optjson = NULL;
  int rc = plat_cluster_load(a.cluster, &cl, &err);
  if (!rc)
    rc = load_workload(&a, cl, &wl, &desc, &err);
  if (rc)
    goto fail;

  if (isfinite(wl->meta.peak_memory_bytes) && wl->meta.peak_memory_bytes > cl->device.hbm_bytes) {
    char need[32], have[32];
    st_format_bytes(wl->meta.peak_memory_bytes, need, sizeof need);
    st_format_bytes(cl->device.hbm_bytes, have, sizeof have);
    if (a.strict) {
      rc = st_err_set(&err, ST_EINPUT,
                      "the workload needs %s per GPU at its peak but a %s has %s (--strict)",
                      need, cl->device.name, have);
      goto fail;
    }
    if (!a.quiet)
      cli_warn("the workload needs %s per GPU at its peak but a %s has %s: it would not fit",
               need, cl->device.name, have);
  }

  /* a trace replay reports per-rank compute and communication: from the
   * timeline, recorded for the purpose and dropped unless asked for */
  int want_timeline = a.opt.timeline;
  if (a.trace)
    a.opt.timeline = 1;
  /* per-link loads and per-instance collective records only go to the
   * results file: without one they would cost time and memory for nothing */
  if (!a.output)
    a.opt.link_stats = a.opt.record_colls = 0;
  if ((rc = sim_run(wl, cl, &a.opt, &res, &err)))
    goto fail;
  a.opt.timeline = want_timeline;
  if (a.trace && (rc = trace_replay(&a, wl, cl, res, &err)))
    goto fail;
  if (!want_timeline) {
    free(res->timeline);
    res->timeline = NULL;
    res->num_timeline = 0;
  }

  an_summary sum;
  an_summary_compute(wl, cl, res, &sum);
  if (a.output) {
    optjson = options_json(&a);
    an_run_info info = {
        .command_line = cli_command_line,
        .workload_json = desc.data ? desc.data : "{}",
        .cluster_json = cl->spec_json ? cl->spec_json : "{}",
        .options_json = optjson ? optjson : "{}",
        .workload_name = wl->meta.model ? wl->meta.model
                                        : (a.workload ? a.workload : (a.trace ? a.trace : "?")),
        .cluster_name = cl->name,
        .wl = wl,
        .result = res,
        .summary = &sum,
        .replay = a.have_replay ? &a.replay : NULL,
    };
    if ((rc = an_results_write(a.output, &info, &err)))
      goto fail;
  }
  if (a.json) {
    an_summary_print_json_replay(&sum, a.have_replay ? &a.replay : NULL, stdout);
  } else {
    an_summary_print_text(&sum,
                          wl->meta.model ? wl->meta.model
                                         : (a.workload ? a.workload : (a.trace ? a.trace : "?")),
                          cl->name, stdout);
    if (a.have_replay) {
      fputc('\n', stdout);
      an_replay_print_text(&a.replay, stdout);
    }
  }
  an_replay_release(&a.replay);
  tr_import_stats_release(&a.st);
  free(optjson);
  st_buf_release(&desc);
  sim_result_destroy(res);
  wl_workload_destroy(wl);
  plat_cluster_destroy(cl);
  return 0;

fail:
  an_replay_release(&a.replay);
  tr_import_stats_release(&a.st);
  free(optjson);
  st_buf_release(&desc);
  sim_result_destroy(res);
  wl_workload_destroy(wl);
  plat_cluster_destroy(cl);
  return cli_fail(&err);
}
