/* cmd_memory.c — `simtrain memory`: bytes per GPU for a model, a layout and a
 * cluster: weights, gradients, optimizer state, activations and the peak, per
 * pipeline stage, and whether the largest fits the device.
 *
 *   simtrain memory --model M --layout SPEC --cluster C [--json]
 *
 * Exit status 0 whether or not it fits (the answer is printed); 2 on bad
 * input. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "driver.h"
#include "platform.h"
#include "workload.h"

static const char usage_text[] =
    "usage: simtrain memory --model M --layout SPEC --cluster C [--seq S] [--json]\n"
    "\n"
    "Per-GPU memory of a training step, per pipeline stage: weights, gradients,\n"
    "optimizer state, activations (by recomputation, SP and the schedule's\n"
    "micro-batches in flight), the peak, and whether it fits the device; with\n"
    "offload, the host memory per node and whether it fits the node's.\n"
    "\n"
    "  --model M        a built-in model or a model spec .json\n"
    "  --layout SPEC    the parallel layout (see 'simtrain gen --help')\n"
    "  --seq S          the sequence length (default: the model's)\n"
    "  --cluster C      NAME[:NODES] preset, spec .json or SimGrid .xml: the GPU\n"
    "                   count and the device's memory\n"
    "  --json           print JSON\n"
    "  -h, --help       this text\n";

const char cmd_memory_help[] = "memory per GPU of a model and layout, and whether it fits";

static double gib(double b) { return b / 1073741824.0; }

/* Each stage's device (the smallest its ranks are on), whether every stage
 * fits, and the stage nearest its device's memory (the peak's without
 * node groups), returned. */
static int stage_devices(const plat_cluster *c, const wl_layout *l, const wl_memory *mem,
                         const plat_device **dev, int *fits)
{
  int tight = mem->peak_stage;
  *fits = 1;
  for (int s = 0; s < mem->num_stages; s++) {
    dev[s] = c->num_groups > 1
                 ? &c->groups[drv_stage_group(c, l->num_gpus, mem->num_stages, s)].device
                 : &c->device;
    *fits &= mem->stages[s].peak_bytes <= dev[s]->hbm_bytes;
  }
  for (int s = 0; s < mem->num_stages && c->num_groups > 1; s++)
    if (mem->stages[s].peak_bytes / dev[s]->hbm_bytes >
        mem->stages[tight].peak_bytes / dev[tight]->hbm_bytes)
      tight = s;
  return tight;
}

int cmd_memory(int argc, char **argv)
{
  static const struct option longopts[] = {
      {"model", required_argument, NULL, 'm'}, {"layout", required_argument, NULL, 'l'},
      {"cluster", required_argument, NULL, 'c'}, {"json", no_argument, NULL, 'j'},
      {"seq", required_argument, NULL, 'Q'},
      {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0}};
  const char *model = NULL, *layout = NULL, *cluster = NULL;
  int json = 0, ch;
  int seq = 0;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch (ch) {
    case 'm': model = optarg; break;
    case 'Q': {
      char *end;
      long v = strtol(optarg, &end, 10);
      if (!*optarg || *end || v < 1 || v > 100000000L)
        return cli_usage_error("memory", "--seq '%s' is not a positive length", optarg);
      seq = (int)v;
      break;
    }
    case 'l': layout = optarg; break;
    case 'c': cluster = optarg; break;
    case 'j': json = 1; break;
    case 'h': fputs(usage_text, stdout); return 0;
    default: return cli_bad_option("memory", argv);
    }
  }
  if (optind < argc)
    return cli_usage_error("memory", "unexpected argument '%s'", argv[optind]);
  if (!model)
    return cli_usage_error("memory", "--model is required");
  if (!layout)
    return cli_usage_error("memory", "--layout is required");
  if (!cluster)
    return cli_usage_error("memory", "--cluster is required");
  st_err err;
  st_err_clear(&err);
  plat_cluster *c = NULL;
  if (plat_cluster_load(cluster, &c, &err))
    return cli_fail(&err);
  wl_model m;
  wl_layout l;
  static wl_memory mem;
  char note[600] = "";
  if (drv_model_load(model, NULL, seq, &m, &err) || wl_layout_parse(layout, c->num_gpus, &m, &l, &err) ||
      drv_balance(&m, c, &l, note, sizeof note, &err) || wl_memory_estimate(&m, &l, &mem, &err)) {
    plat_cluster_destroy(c);
    return cli_fail(&err);
  }
  if (note[0])
    fprintf(stderr, "simtrain: note: %s\n", note);
  /* node groups: each stage against the smallest device its ranks are on;
   * the summary names the stage that comes nearest its device */
  const plat_device *dev[WL_MAX_STAGES];
  int fits, tight = stage_devices(c, &l, &mem, dev, &fits);
  double cap = dev[tight]->hbm_bytes;
  /* with offload: the host memory the busiest node holds, against the
   * node's when the cluster gives it */
  if (l.offload && !plat_gpus_per_node_uniform(c)) {
    st_err_set(&err, ST_EINPUT, "cluster '%s': host memory (offload) is not modelled on node "
               "groups with unlike GPUs per node", c->name);
    plat_cluster_destroy(c);
    return cli_fail(&err);
  }
  double host = l.offload ? wl_memory_host_per_node(&l, &mem, c->gpus_per_node) : 0;
  double host_cap = c->host_mem_bytes;
  int host_known = l.offload && isfinite(host_cap), host_fits = host <= host_cap;
  if (json) {
    fputs("{\"model\":", stdout);
    st_json_str(stdout, m.name);
    fputs(",\"layout\":", stdout);
    st_json_str(stdout, l.spec);
    fputs(",\"cluster\":", stdout);
    st_json_str(stdout, c->name);
    fputs(",\"device\":", stdout);
    st_json_str(stdout, dev[tight]->name);
    printf(",\"device_bytes\":%.17g,\"peak_bytes\":%.17g,\"peak_stage\":%d,\"fits\":%s,",
           cap, mem.peak_bytes, mem.peak_stage, fits ? "true" : "false");
    if (l.offload) { /* only with offload: other layouts print as before */
      printf("\"host_node_bytes\":%.17g,\"host_memory_bytes\":", host);
      if (host_known)
        printf("%.17g,\"host_fits\":%s,", host_cap, host_fits ? "true" : "false");
      else
        printf("null,\"host_fits\":null,");
    }
    printf("\"stages\":[");
    for (int s = 0; s < mem.num_stages; s++) {
      const wl_memory_stage *st = &mem.stages[s];
      printf("%s{\"stage\":%d,\"layers\":%d,\"params\":%.17g,\"weights_bytes\":%.17g,"
             "\"grads_bytes\":%.17g,\"optimizer_bytes\":%.17g,\"activations_bytes\":%.17g,"
             "\"act_layer_bytes\":%.17g,\"inflight_microbatches\":%.17g,\"other_bytes\":%.17g,"
             "\"loss_work_bytes\":%.17g,\"recompute_work_bytes\":%.17g,\"peak_bytes\":%.17g",
             s ? "," : "", s, st->layers, st->params, st->weights_bytes, st->grads_bytes,
             st->optimizer_bytes, st->activations_bytes, st->act_layer_bytes, st->inflight,
             st->other_bytes, st->loss_work_bytes, st->recompute_work_bytes, st->peak_bytes);
      if (l.offload)
        printf(",\"host_bytes\":%.17g", st->host_bytes);
      if (c->num_groups > 1) { /* node groups: the stage's device */
        fputs(",\"device\":", stdout);
        st_json_str(stdout, dev[s]->name);
        printf(",\"device_bytes\":%.17g", dev[s]->hbm_bytes);
      }
      printf("}");
    }
    printf("]}\n");
  } else {
    if (c->num_groups > 1)
      printf("model     %s\nlayout    %s\ncluster   %s (%d node groups: each stage against "
             "its own devices)\n\n",
             m.name, l.spec, c->name, c->num_groups);
    else
      printf("model     %s\nlayout    %s\ncluster   %s (%s, %.1f GiB per GPU)\n\n", m.name, l.spec,
             c->name, c->device.name, gib(cap));
    printf("%5s %6s %14s %11s %11s %11s %11s %9s %11s %11s\n", "stage", "layers", "params/GPU",
           "weights", "grads", "optimizer", "activation", "in-flight", "other", "peak");
    for (int s = 0; s < mem.num_stages; s++) {
      const wl_memory_stage *st = &mem.stages[s];
      printf("%5d %6d %14.0f %7.2f GiB %7.2f GiB %7.2f GiB %7.2f GiB %9.2f %7.2f GiB %7.2f GiB\n",
             s, st->layers, st->params, gib(st->weights_bytes), gib(st->grads_bytes),
             gib(st->optimizer_bytes), gib(st->activations_bytes), st->inflight,
             gib(st->other_bytes), gib(st->peak_bytes));
    }
    /* what the tightest stage's `other` holds: the larger of two moments'
     * working memory (the loss's backward, a recomputed layer) and the rest */
    const wl_memory_stage *ts = &mem.stages[tight];
    double work = fmax(ts->loss_work_bytes, ts->recompute_work_bytes);
    if (work > 0)
      printf("\nother     %.2f GiB on stage %d: %.2f GiB working (%s),\n"
             "          %.2f GiB gathered layers and buffers\n",
             gib(ts->other_bytes), tight, gib(work),
             ts->loss_work_bytes >= ts->recompute_work_bytes
                 ? "the loss's backward beyond what it keeps"
                 : "one layer while it is recomputed",
             gib(ts->other_bytes - work));
    if (c->num_groups > 1)
      for (int s = 0; s < mem.num_stages; s++)
        printf("stage %-3d %.2f GiB: %s the %.1f GiB of one %s\n", s, gib(mem.stages[s].peak_bytes),
               mem.stages[s].peak_bytes <= dev[s]->hbm_bytes ? "fits" : "does NOT fit",
               gib(dev[s]->hbm_bytes), dev[s]->name);
    if (c->num_groups > 1) /* the stage nearest its device's memory, and whether all fit */
      printf("\ntightest  %.2f GiB on stage %d, the %.1f GiB of one %s: %s\n",
             gib(mem.stages[tight].peak_bytes), tight, gib(cap), dev[tight]->name,
             fits ? "every stage fits" : "some stage does NOT fit");
    else
      printf("\npeak      %.2f GiB on stage %d: %s the %.1f GiB of one %s\n",
             gib(mem.stages[tight].peak_bytes), tight, fits ? "fits" : "does NOT fit", gib(cap),
             dev[tight]->name);
    if (l.offload && host_known)
      printf("host      %.2f GiB per node (offload=%s): %s the %.1f GiB of host memory of a "
             "node\n",
             gib(host), wl_offload_name(l.offload), host_fits ? "fits" : "does NOT fit",
             gib(host_cap));
    else if (l.offload)
      printf("host      %.2f GiB per node (offload=%s); the cluster does not give its host "
             "memory (node.host.memory_GB): not checked\n",
             gib(host), wl_offload_name(l.offload));
  }
  plat_cluster_destroy(c);
  return 0;
}
