/* cmd_gen.c — `simtrain gen`: write the workload the generators build for a
 * model and a layout, for inspection or for replay with `simtrain run`.
 *
 *   simtrain gen --model M --layout SPEC (--gpus N | --cluster C)
 *                -o workload.json.gz [--json]
 *
 * Prints what was built (programs, ops, communicators, FLOPs, memory);
 * --json prints it as one JSON object.  Nothing is written on error. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "driver.h"
#include "platform.h"
#include "workload.h"

static const char usage_text[] =
    "usage: simtrain gen --model M --layout SPEC (--gpus N | --cluster C) -o FILE [--seq S]\n"
    "                    [--json]\n"
    "\n"
    "Generate the per-rank workload of one training step and write it.\n"
    "\n"
    "  --model M        a built-in model (--model list) or a model spec .json\n"
    "  --layout SPEC    tp=,pp=,dp=,cp=,ep=,vpp=,sp=,mbs=,gbs=,zero=,recompute=,\n"
    "                   schedule=,dtype=,grad_dtype=,overlap_grad_reduce=,\n"
    "                   overlap_param_gather=,bucket=,flash=,first_stage_layers=,\n"
    "                   last_stage_layers=,tp_overlap=,etp=,account_embedding=,\n"
    "                   account_loss=,pp_layout=,dp_impl=,stage_layers=,\n"
    "                   dp_microbatches=,balance=,offload=,attn_impl=,eager=,\n"
    "                   backward_prefetch=,tp_async=,pp_scatter=,dropout=,ce_fusion=,\n"
    "                   fp8_recipe=,fp8_param_gather=,train_metrics=,\n"
    "                   reshard_after_forward=\n"
    "                   (docs/workloads.md)\n"
    "  --seq S          the sequence length (default: the model's)\n"
    "  --gpus N         GPU count (dp defaults to what it leaves)\n"
    "  --cluster C      take the GPU count from a cluster (NAME[:NODES], .json, .xml)\n"
    "  -o FILE          the workload (gzip JSON when FILE ends in .gz)\n"
    "  --json           print the summary as JSON\n"
    "  -h, --help       this text\n";

const char cmd_gen_help[] = "generate a training step's workload from a model and a layout";

static void list_models(void)
{
  for (const char *const *n = wl_model_names(); *n; n++)
    printf("%s\n", *n);
}

int cmd_gen(int argc, char **argv)
{
  static const struct option longopts[] = {
      {"model", required_argument, NULL, 'm'}, {"layout", required_argument, NULL, 'l'},
      {"gpus", required_argument, NULL, 'g'},  {"cluster", required_argument, NULL, 'c'},
      {"output", required_argument, NULL, 'o'}, {"json", no_argument, NULL, 'j'},
      {"seq", required_argument, NULL, 'Q'},
      {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0}};
  const char *model = NULL, *layout = NULL, *cluster = NULL, *outp = NULL;
  int gpus = 0, json = 0, ch;
  int seq = 0;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
    switch (ch) {
    case 'm': model = optarg; break;
    case 'Q': {
      char *end;
      long v = strtol(optarg, &end, 10);
      if (!*optarg || *end || v < 1 || v > 100000000L)
        return cli_usage_error("gen", "--seq '%s' is not a positive length", optarg);
      seq = (int)v;
      break;
    }
    case 'l': layout = optarg; break;
    case 'c': cluster = optarg; break;
    case 'o': outp = optarg; break;
    case 'j': json = 1; break;
    case 'g': {
      char *end;
      long v = strtol(optarg, &end, 10);
      if (!*optarg || *end || v < 1 || v > ST_RANKS_MAX)
        return cli_usage_error("gen", "--gpus '%s' is not a GPU count 1..%d", optarg, ST_RANKS_MAX);
      gpus = (int)v;
      break;
    }
    case 'h': fputs(usage_text, stdout); return 0;
    default: return cli_bad_option("gen", argv);
    }
  }
  if (optind < argc)
    return cli_usage_error("gen", "unexpected argument '%s'", argv[optind]);
  if (model && !strcmp(model, "list")) {
    list_models();
    return 0;
  }
  if (!model)
    return cli_usage_error("gen", "--model is required");
  if (!layout)
    return cli_usage_error("gen", "--layout is required");
  if (!outp)
    return cli_usage_error("gen", "-o FILE is required");
  if (gpus && cluster)
    return cli_usage_error("gen", "give --gpus or --cluster, not both");
  st_err err;
  st_err_clear(&err);
  if (cluster) {
    plat_cluster *c = NULL;
    if (plat_cluster_load(cluster, &c, &err))
      return cli_fail(&err);
    gpus = c->num_gpus;
    plat_cluster_destroy(c);
  }
  wl_model m;
  wl_layout l;
  wl_workload *wl = NULL;
  if (drv_model_load(model, NULL, seq, &m, &err) || wl_layout_parse(layout, gpus, &m, &l, &err) ||
      wl_generate(&m, &l, &wl, &err) || wl_workload_write(wl, outp, &err)) {
    wl_workload_destroy(wl);
    return cli_fail(&err);
  }
  const wl_meta *mt = &wl->meta;
  if (json) {
    fputs("{\"model\":", stdout);
    st_json_str(stdout, m.name);
    fputs(",\"layout\":", stdout);
    st_json_str(stdout, l.spec);
    fputs(",\"file\":", stdout);
    st_json_str(stdout, outp);
    printf(",\"ranks\":%d,\"programs\":%d,"
           "\"communicators\":%d,\"ops\":%zu,\"tokens_per_step\":%.17g,"
           "\"model_flops_per_step\":%.17g,\"hw_flops_per_step\":%.17g,"
           "\"peak_memory_bytes\":%.17g}\n",
           wl->num_ranks, wl->num_programs, wl->num_comms,
           wl_workload_num_ops(wl), mt->tokens_per_step, mt->model_flops_per_step,
           mt->hw_flops_per_step, mt->peak_memory_bytes);
  } else {
    char buf[32];
    printf("model          %s\n", m.name);
    printf("layout         %s\n", l.spec);
    printf("ranks          %d (%d programs, %d communicators, %zu ops)\n", wl->num_ranks,
           wl->num_programs, wl->num_comms, wl_workload_num_ops(wl));
    printf("micro-batches  %d per step\n", l.num_microbatches);
    printf("tokens         %.0f per step\n", mt->tokens_per_step);
    printf("model FLOPs    %.4g per step (hardware, with recomputation: %.4g)\n",
           mt->model_flops_per_step, mt->hw_flops_per_step);
    printf("peak memory    %s per GPU (largest stage)\n",
           st_format_bytes(mt->peak_memory_bytes, buf, sizeof buf));
    printf("written        %s\n", outp);
  }
  wl_workload_destroy(wl);
  return 0;
}
