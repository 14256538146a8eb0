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
    "  -o, --output FILE   write the HDF5 results file\n"
    "  --json              print one JSON object with the summary\n"
    "  --timeline          record every op (for report, export, plot)\n"
    "  --fidelity F        flow (default) or step\n"
    "  --net-model M       ideal (default), cm02 or lv08\n"
    "  --cfg SETTING       extra SimGrid setting, e.g. --cfg=network/model:LV08 (repeatable)\n"
    "  --no-closed-form    simulate every collective's flows, even where a closed form\n"
    "                      gives the same answer (collectives alone on their links)\n"
    "  --strict            fail when the workload does not fit in device memory\n"
    "  --quiet             no progress or warnings on stderr\n"
    "  -h, --help          this text\n";

struct run_args {
  const char *workload, *model, *layout, *trace, *cluster, *output;
  int json, strict, quiet;
  sim_options opt;
  char cfg[1024];
};

static int load_workload(const struct run_args *a, const plat_cluster *cl, wl_workload **wl,
                         st_buf *desc, st_err *err)
{
  int rc;
  if (a->workload) {
    st_buf_printf(desc, "{\"kind\":\"file\",\"path\":\"%s\"}", a->workload);
    return wl_workload_read(a->workload, wl, err);
  }
  if (a->trace) {
    tr_options topt;
    tr_options_init(&topt);
    topt.num_gpus = cl->num_gpus;
    st_buf_printf(desc, "{\"kind\":\"trace\",\"trace\":\"%s\"}", a->trace);
    return tr_import(a->trace, &topt, wl, NULL, err);
  }
  wl_model m;
  wl_layout l;
  if ((rc = wl_model_load(a->model, &m, err)))
    return rc;
  rc = wl_layout_parse(a->layout, cl->num_gpus, &m, &l, err);
  if (!rc)
    rc = wl_generate(&m, &l, wl, err);
  if (!rc)
    st_buf_printf(desc, "{\"kind\":\"model\",\"model\":\"%s\",\"layout\":\"%s\"}", a->model,
                  (*wl)->meta.layout ? (*wl)->meta.layout : a->layout);
  wl_model_release(&m);
  return rc;
}

static char *options_json(const struct run_args *a)
{
  st_buf b;
  st_buf_init(&b);
  st_buf_printf(&b,
                "{\"fidelity\":\"%s\",\"net_model\":\"%s\",\"timeline\":%s,"
                "\"closed_form\":%s,\"cfg\":\"%s\"}",
                a->opt.fidelity == SIM_FID_STEP ? "step" : "flow",
                sim_net_model_name(a->opt.net_model), a->opt.timeline ? "true" : "false",
                a->opt.fast_colls ? "true" : "false", a->cfg);
  return st_buf_detach(&b, NULL);
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
      {"no-closed-form", no_argument, NULL, 'X'},
      {NULL, 0, NULL, 0}};
  struct run_args a;
  memset(&a, 0, sizeof a);
  sim_options_init(&a.opt);
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
      if (strncmp(optarg, "--cfg=", 6) && strchr(optarg, ':') == NULL)
        return cli_usage_error("run", "--cfg '%s' is not KEY:VALUE", optarg);
      snprintf(a.cfg + used, sizeof a.cfg - used, "%s--cfg=%s", used ? " " : "",
               strncmp(optarg, "--cfg=", 6) ? optarg : optarg + 6);
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

  if ((rc = sim_run(wl, cl, &a.opt, &res, &err)))
    goto fail;

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
    };
    if ((rc = an_results_write(a.output, &info, &err)))
      goto fail;
  }
  if (a.json)
    an_summary_print_json(&sum, stdout);
  else
    an_summary_print_text(&sum,
                          wl->meta.model ? wl->meta.model
                                         : (a.workload ? a.workload : (a.trace ? a.trace : "?")),
                          cl->name, stdout);
  free(optjson);
  st_buf_release(&desc);
  sim_result_destroy(res);
  wl_workload_destroy(wl);
  plat_cluster_destroy(cl);
  return 0;

fail:
  free(optjson);
  st_buf_release(&desc);
  sim_result_destroy(res);
  wl_workload_destroy(wl);
  plat_cluster_destroy(cl);
  return cli_fail(&err);
}
