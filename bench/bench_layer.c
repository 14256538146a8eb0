/* bench_layer.c — one transformer layer's forward and backward, op by op, as
 * the compute model prices it.
 *
 *   bench_layer [MODEL [LAYOUT [CLUSTER [LAYER]]]]
 *   default: llama3-8b  tp=1,pp=1,dp=1,mbs=1,gbs=1  hgx-h200:1  layer 1
 *
 * Generates the workload, takes the compute ops of the first program that
 * belong to the given layer in the first micro-batch (from its layer marker
 * to the next marker; forward, then backward), and prints for each: class, shape, GFLOP, MB moved, the time,
 * what bounds it and the efficiency reached, with the tiles and waves of
 * GEMMs.  docs/calibration.md holds its output for llama3-8b on an H200.
 * No simulation: the sum is the layer's compute time on an idle GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform.h"
#include "workload.h"

static const char *bound_name(int b)
{
  static const char *const n[PLAT_BOUND_COUNT] = {"given", "math", "memory"};
  return b >= 0 && b < PLAT_BOUND_COUNT ? n[b] : "?";
}

int main(int argc, char **argv)
{
  const char *model = argc > 1 ? argv[1] : "llama3-8b";
  const char *layout = argc > 2 ? argv[2] : "tp=1,pp=1,dp=1,mbs=1,gbs=1";
  const char *cluster = argc > 3 ? argv[3] : "hgx-h200:1";
  int layer = argc > 4 ? atoi(argv[4]) : 1;
  st_err err = {0};
  wl_model m;
  plat_cluster *cl = NULL;
  wl_layout l;
  wl_workload *wl = NULL;
  if (wl_model_load(model, &m, &err) || plat_cluster_load(cluster, &cl, &err) ||
      wl_layout_parse(layout, 0, &m, &l, &err) || wl_generate(&m, &l, &wl, &err)) {
    fprintf(stderr, "bench_layer: %s\n", err.msg);
    return 2;
  }
  const plat_device *d = &cl->device;
  const plat_compute_params *p = plat_compute_params_for(d);
  printf("%s, %s, on %s (compute parameters: %s)\n", model, layout, d->name, p->device);
  printf("layer %d of program '%s', compute stream\n\n", layer, wl->programs[0].name);
  printf("%-4s %-16s %-11s %-24s %8s %8s %9s %-6s %6s %s\n", "ph", "op", "class",
         "shape m x n x k", "GFLOP", "MB", "time us", "bound", "peak", "tiles/waves");
  const wl_program *pg = &wl->programs[0];
  double tot[WL_PHASE_COUNT] = {0}, math_tot = 0, mem_tot = 0, launch_tot = 0;
  int in_layer = 0, mb = -1;
  for (size_t i = 0; i < pg->num_ops; i++) {
    const wl_op *op = &pg->ops[i];
    if (op->kind == WL_OP_MARKER && op->sub == WL_MARK_MICROBATCH) {
      in_layer = 0;
      if (mb < 0)
        mb = op->tag;
      if (op->tag != mb) /* the first micro-batch only */
        break;
      continue;
    }
    if (op->kind == WL_OP_MARKER && op->sub == WL_MARK_LAYER) {
      in_layer = op->tag == layer;
      continue;
    }
    if (!in_layer || op->kind != WL_OP_COMPUTE || op->stream != 0)
      continue;
    plat_compute_detail det;
    double t = plat_compute_explain(p, d, op, &det);
    char shape[40] = "";
    if (op->m > 0)
      snprintf(shape, sizeof shape, "%d x %d x %d%s", op->m, op->n, op->k,
               op->batch > 1 ? " (b)" : "");
    if (op->batch > 1 && op->m > 0)
      snprintf(shape + strlen(shape) - 4, sizeof shape - strlen(shape) + 4, " x%d", op->batch);
    char tw[32] = "";
    if (det.tiles)
      snprintf(tw, sizeof tw, "%ld/%ld %dx%d%s", det.tiles, det.waves, det.tile_m, det.tile_n,
               det.split_k > 1 ? " splitK" : "");
    /* achieved share of the bound's peak, launch included: FLOP/s of the
     * dtype's peak when math-bound, bytes/s of HBM when memory-bound */
    double share = det.bound == PLAT_BOUND_MEMORY ? op->bytes / t / d->hbm_Bps
                                                  : op->flops / t / det.peak_flops;
    printf("%-4s %-16s %-11s %-24s %8.2f %8.1f %9.1f %-6s %5.0f%% %s\n",
           op->phase == WL_PHASE_BACKWARD ? "bwd" : "fwd", wl_op_name(pg, op),
           wl_class_name(op->sub), shape, op->flops / 1e9, op->bytes / 1e6, t * 1e6,
           bound_name(det.bound), 100 * share, tw);
    tot[op->phase < WL_PHASE_COUNT ? op->phase : 0] += t;
    if (det.bound == PLAT_BOUND_MATH)
      math_tot += det.math_s;
    else
      mem_tot += det.memory_s;
    launch_tot += det.launch_s;
  }
  printf("\nforward %.1f us, backward %.1f us, layer %.1f us (math-bound %.1f us, memory-bound "
         "%.1f us, launches %.1f us)\n",
         tot[WL_PHASE_FORWARD] * 1e6, tot[WL_PHASE_BACKWARD] * 1e6,
         (tot[WL_PHASE_FORWARD] + tot[WL_PHASE_BACKWARD]) * 1e6, math_tot * 1e6, mem_tot * 1e6,
         launch_tot * 1e6);
  wl_workload_destroy(wl);
  plat_cluster_destroy(cl);
  return 0;
}
