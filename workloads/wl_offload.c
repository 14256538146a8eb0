/* wl_offload.c — host-memory offload (layout key offload): what the layout
 * allows, what leaves the GPU's memory, and the copies and CPU work the
 * generator emits, as DeepSpeed's ZeRO-Offload (offload_optimizer) and
 * ZeRO-Infinity's parameter offload (offload_param, device cpu) run them.
 *
 * Sources (docs/workloads.md, "Host-memory offload", has the rules):
 * deepspeed/runtime/zero/stage_1_and_2.py (cpu_offload: each reduced
 * gradient partition copied into the fp32 gradient buffer on the host as
 * its bucket is reduced, the step on the CPU, the updated partition copied
 * back to the GPU's fp16/bf16 partition), stage3.py (offload_optimizer: the
 * same per reduce bucket, the step per sub-group of sub_group_size = 1e9
 * elements, each sub-group's parameters copied back after its step;
 * offload_param: the fp16 partition lives on the host and is copied to the
 * GPU by each fetch, ahead of its all-gather), the DeepSpeed configuration
 * docs (offload_optimizer from stage 1, offload_param only with stage 3).
 *
 * Streams: copies to host memory on "d2h", to the GPU on "h2d" (DeepSpeed's
 * copies run on their own CUDA streams), the CPU's optimizer step on "cpu";
 * the compute stream never waits for a gradient copy, only the step does. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "wl_emit_int.h"
#include "workload.h"

/* deepspeed/runtime/zero/config.py: sub_group_size (elements) */
#define DS_SUB_GROUP 1e9
/* Bytes the host holds per parameter of the shard with the optimizer
 * offloaded, beyond the optimizer state: the fp32 gradient partition
 * (DeepSpeed's single_partition_of_fp32_groups[i].grad, fp32_partitioned_
 * groups_flat grads). */
#define HOST_GRAD_BYTES 4.0

static const char *const offload_names[WL_OFFLOAD_COUNT] = {"none", "optimizer", "params", "both"};

const char *wl_offload_name(int o)
{
  return o >= 0 && o < WL_OFFLOAD_COUNT ? offload_names[o] : "?";
}

int wl__offload_from_name(const char *s)
{
  for (int i = 0; i < WL_OFFLOAD_COUNT; i++)
    if (!strcmp(offload_names[i], s))
      return i;
  return -1;
}

int wl__offload_resolve(wl_layout *l, char *msg, size_t n)
{
  if (l->offload < 0)
    l->offload = WL_OFFLOAD_NONE;
  const char *name = wl_offload_name(l->offload);
  if (!l->offload)
    return 0;
  if (l->zero == 0) {
    snprintf(msg, n,
             "offload=%s needs zero=1, 2 or 3 (DeepSpeed offloads the ZeRO partitions: "
             "offload_optimizer from stage 1, offload_param at stage 3); zero is 0",
             name);
    return -1;
  }
  if ((l->offload & WL_OFFLOAD_PARAMS) && l->zero != 3) {
    snprintf(msg, n,
             "offload=%s needs zero=3 (DeepSpeed's offload_param is available only with ZeRO "
             "stage 3, where each rank holds a parameter shard); zero is %d",
             name, l->zero);
    return -1;
  }
  if (l->dp_impl == WL_DP_FSDP || l->dp_impl == WL_DP_FSDP2) {
    snprintf(msg, n,
             "offload=%s with dp_impl=%s is not modelled (PyTorch FSDP's CPU offload moves "
             "parameters, gradients and the optimizer step together on a schedule of its own): "
             "use dp_impl=deepspeed or megatron",
             name, wl_dp_impl_name(l->dp_impl));
    return -1;
  }
  if (l->overlap_param_gather) {
    snprintf(msg, n,
             "offload=%s cannot be combined with overlap_param_gather=1 (the parameter "
             "all-gathers wait for the updated shard copied back from the host)",
             name);
    return -1;
  }
  return 0;
}

void wl__offload_memory(const wl_layout *l, double shard, wl_memory_stage *st)
{
  st->host_bytes = 0;
  if (l->offload & WL_OFFLOAD_OPTIMIZER) {
    /* fp32 master weights and Adam moments, and the fp32 gradient partition
     * they are stepped from; the GPU keeps its gradients only unsharded
     * (zero=1) or in the reduce buckets (other_bytes) */
    st->host_bytes += st->optimizer_bytes + HOST_GRAD_BYTES * shard;
    st->optimizer_bytes = 0;
    if (l->zero >= 2)
      st->grads_bytes = 0;
  }
  if (l->offload & WL_OFFLOAD_PARAMS) {
    /* the 16-bit parameter shard; gathered layers stay in other_bytes */
    st->host_bytes += st->weights_bytes;
    st->weights_bytes = 0;
  }
}

double wl_memory_host_per_node(const wl_layout *l, const wl_memory *mem, int gpus_per_node)
{
  if (gpus_per_node < 1 || l->num_gpus < 1 || l->pp < 1)
    return 0;
  int per_stage = l->num_gpus / l->pp, nodes = (l->num_gpus + gpus_per_node - 1) / gpus_per_node;
  double most = 0;
  for (int n = 0; n < nodes; n++) {
    double sum = 0;
    for (int r = n * gpus_per_node; r < (n + 1) * gpus_per_node && r < l->num_gpus; r++) {
      int s = per_stage > 0 ? r / per_stage : 0;
      if (s < mem->num_stages)
        sum += mem->stages[s].host_bytes;
    }
    if (sum > most)
      most = sum;
  }
  return most;
}

/* ---- the generator's copies and CPU work -------------------------------------- */
/* A copy on its stream after ops a and b (each -1 for none). */
static long copy_op(wl__gen *g, int dir, const char *name, double bytes, long a, long b)
{
  if (!(bytes > 0))
    return -1;
  wl_op op = wl_op_copy(dir == WL_COPY_D2H ? S_D2H : S_H2D, dir, bytes);
  op.name = wl__nm(g, name);
  uint32_t w[2];
  int n = 0;
  if (a >= 0)
    w[n++] = (uint32_t)a;
  if (b >= 0 && b != a)
    w[n++] = (uint32_t)b;
  return wl__put(g, op, w, n);
}

static double shard_params(const wl__gen *g, double dense, double expert)
{
  return dense / g->dp_size + expert / g->edp_size;
}

void wl__offload_grad(wl__gen *g, long red, double dense, double expert)
{
  if (!(g->l->offload & WL_OFFLOAD_OPTIMIZER))
    return;
  long c = copy_op(g, WL_COPY_D2H, "offload.grad.d2h", shard_params(g, dense, expert) * g->gb,
                   g->last_c, red);
  if (c >= 0)
    g->off_d2h = c;
}

long wl__offload_fetch(wl__gen *g, double dense, double expert, long after, int with_last)
{
  if (!(g->l->offload & WL_OFFLOAD_PARAMS))
    return -1;
  long a = with_last ? g->last_c : -1;
  if (a < 0 && after < 0)
    a = 0; /* the step's iteration marker: a next step's first fetches come after the last */
  return copy_op(g, WL_COPY_H2D, "offload.param.h2d", shard_params(g, dense, expert) * g->pb, a,
                 after);
}

long wl__offload_step(wl__gen *g, double dense, double expert)
{
  double shard = shard_params(g, dense, expert);
  int chunks = (int)ceil(shard / DS_SUB_GROUP);
  long cpu = -1, last = -1;
  for (int k = 0; k < chunks; k++) {
    double p = k < chunks - 1 ? DS_SUB_GROUP : shard - (chunks - 1) * DS_SUB_GROUP;
    /* DeepSpeedCPUAdam over the sub-group: read the fp32 gradient, read and
     * write the fp32 master weights and both moments, write the 16-bit copy */
    wl_op op = wl_op_compute(S_CPU, -1);
    op.sub = WL_CLASS_OPTIMIZER;
    op.dtype = WL_DTYPE_FP32;
    op.flags = WL_OPF_HOST;
    op.flops = WL_ADAM_FLOPS_PER_PARAM * p;
    op.bytes = p * (HOST_GRAD_BYTES + 24 + g->pb);
    op.name = wl__nm(g, "offload.adam.cpu");
    /* the first sub-group after the gradients reached the host and the
     * step's collectives (gradient norm) ran */
    uint32_t w[2];
    int n = 0;
    if (k == 0 && g->last_c >= 0)
      w[n++] = (uint32_t)g->last_c;
    if (k == 0 && g->off_d2h >= 0)
      w[n++] = (uint32_t)g->off_d2h;
    cpu = wl__put(g, op, w, n);
    last = cpu;
    if (!(g->l->offload & WL_OFFLOAD_PARAMS))
      last = copy_op(g, WL_COPY_H2D, "offload.param.h2d", p * g->pb, cpu, -1);
  }
  return last >= 0 ? last : cpu;
}

void wl__offload_after_gpu_step(wl__gen *g, long gpu_step, double dense, double expert)
{
  long c = copy_op(g, WL_COPY_D2H, "offload.param.d2h", shard_params(g, dense, expert) * g->pb,
                   gpu_step, -1);
  wl__offload_end(g, c);
}

void wl__offload_end(wl__gen *g, long last)
{
  if (last < 0)
    return;
  wl_op op = wl_op_marker(S_COMPUTE, WL_MARK_PHASE, WL_PHASE_OPTIMIZER);
  uint32_t w = (uint32_t)last;
  long i = wl__put(g, op, &w, 1);
  if (i >= 0)
    g->last_c = i;
}
