/* wl_gen_zero.c — the generator's ZeRO-3: Megatron's FSDP (zero=3) and the
 * frameworks' ZeRO-3 (dp_impl=fsdp, fsdp2, deepspeed) with their hooks,
 * gathers, reduce buckets and the units they run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_emit_int.h"
#include "workload.h"

/* ---- FSDP (zero=3) ----------------------------------------------------------------- */
double wl__z3_bytes(const wl__gen *g, int layer, int grads, int expert)
{
  wl__params lp;
  wl__layer_params(g->m, g->l->tp, g->l->etp, g->l->ep, layer, &lp);
  double p = expert ? lp.expert : lp.attn + lp.mlp;
  return p * (grads ? g->gb : g->pb);
}

/* The root unit of virtual stage vs (each pipeline stage's module is its own
 * FSDP root): the embedding on the first, the final norm and the output
 * layer on the last; nothing between (without a pipeline: all of them). */
double wl__z3_root(const wl__gen *g, int vs)
{
  int last = g->l->pp * g->l->vpp - 1;
  return (vs == 0 ? wl__embedding_params(g->m, g->l->tp) : 0) +
         (vs == last ? wl__output_params(g->m, g->l->tp, g->l->pp) : 0);
}

/* All-gather layer i's parameters on the "dp" stream, after op `after`. */
long wl__z3_gather(wl__gen *g, int layer, long after, int bwd)
{
  /* offload=params: the shard first comes from host memory */
  long h = wl__offload_fetch(g, wl__z3_bytes(g, layer, 0, 0) / g->pb,
                             wl__z3_bytes(g, layer, 0, 1) / g->pb, after, 1);
  if (h >= 0)
    after = h;
  long a = wl__coll_s(g, S_DP, bwd ? "fsdp.ag.bwd" : "fsdp.ag", WL_COLL_ALLGATHER, R_DP,
                      wl__z3_bytes(g, layer, 0, 0), after);
  long b = wl__coll_s(g, S_DP, bwd ? "fsdp.ag.expert.bwd" : "fsdp.ag.expert", WL_COLL_ALLGATHER,
                      R_DPX, wl__z3_bytes(g, layer, 0, 1), after);
  return b >= 0 ? b : a;
}

/* ---- ZeRO-3 as the frameworks run it (dp_impl) ------------------------------------
 * docs/workloads.md ("ZeRO-3 as each framework runs it") has the source of
 * every rule.  Host work (the frameworks' Python hooks) is a timed op on the
 * "host" stream; a compute op that the host launches after a hook waits on
 * it. */

/* FSDP1 CPU cost per original parameter for one unshard + reshard cycle
 * (_use_unsharded_views 4.27 ms, _writeback_orig_params 1.07 ms,
 * _use_sharded_views 2.75 ms for 400 parameters: pytorch/pytorch#96958) */
#define Z3_HOST_PER_TENSOR_S 20.2e-6
/* DeepSpeed defaults (deepspeed/runtime/zero/config.py) */
#define DS_PERSISTENCE_THRESHOLD 1e5 /* stage3_param_persistence_threshold */
#define DS_REDUCE_BUCKET 5e8         /* reduce_bucket_size (elements) */
#define DS_MAX_REUSE_DISTANCE 1e9    /* stage3_max_reuse_distance (elements) */

/* Parameter tensors of layer i as its modules hold them (one per weight,
 * bias and norm vector; gated MLPs as separate gate/up weights). */
static int z3_tensors(const wl__gen *g, int layer)
{
  const wl_model *m = g->m;
  int mlp_w = m->ffn_act == WL_ACT_SWIGLU ? 3 : 2;
  int n = 4 + m->norms_per_layer * (m->layer_norm ? 2 : 1) + 3 * m->qkv_bias + m->out_bias +
          2 * m->qk_norm;
  if (wl__is_moe_layer(m, layer)) {
    int e = m->moe.experts / g->l->ep;
    n += 1 + (e + m->moe.shared_experts) * mlp_w;
  } else {
    n += mlp_w * (1 + m->mlp_bias);
  }
  return n;
}

/* Parameter tensors an optimizer on this rank steps: each layer's of its
 * stage and the stage's root's (the embedding, the learned positions, the
 * final norm, an untied output layer; all on one stage but under FSDP2 with
 * a pipeline).  FSDP2 shards every parameter along its first dimension, so each
 * rank holds a piece of each; FSDP1 with use_orig_params flattens a unit's
 * T parameters into one tensor cut in dp pieces, and a piece overlaps
 * 1 + (T - 1) / dp of them on average (those outside it have no gradient
 * there and are skipped).  Otherwise every tensor whole. */
double wl__optim_tensors(const wl__gen *g)
{
  const wl_model *m = g->m;
  const wl_layout *l = g->l;
  int fsdp1 = l->dp_impl == WL_DP_FSDP && l->zero == 3;
  double n = 0;
  for (int c = 0; c < l->vpp; c++) { /* the stage's layers (FSDP2 under a pipeline) */
    int first, count;
    wl__chunk_layers(l, m, g->stage, c, &first, &count);
    for (int i = first; i < first + count; i++) {
      int t = z3_tensors(g, i);
      n += fsdp1 ? 1 + (double)(t - 1) / g->dp_size : t;
    }
  }
  /* the embedding (and learned positions) on the first stage; the final
   * norm and the output layer (untied, or the last stage's copy) on the last */
  int root = (g->stage == 0 ? 1 + (m->positions != 0) : 0) +
             (g->stage == l->pp - 1 ? (m->layer_norm ? 2 : 1) + (!m->tie_embeddings || l->pp > 1)
                                    : 0);
  return n + (fsdp1 ? 1 + (double)(root - 1) / g->dp_size : root);
}

/* A timed host op (a framework hook) on the "host" stream after op `after`. */
static long z3_host(wl__gen *g, const char *name, double seconds, long after)
{
  wl_op op = wl_op_compute(S_HOST, seconds);
  op.sub = WL_CLASS_OTHER;
  op.name = wl__nm(g, name);
  uint32_t w[1];
  int n = 0;
  if (after >= 0)
    w[n++] = (uint32_t)after;
  return wl__put(g, op, w, n);
}

/* A collective on the "dp" stream that waits only for op `after` (a hook
 * issues it, not the compute stream's progress). */
static long z3_coll(wl__gen *g, const char *name, int coll, int role, double bytes, long after)
{
  if (wl__role_size(g, role) < 2 || bytes <= 0)
    return -1;
  wl_op op = wl_op_coll(S_DP, coll, role, bytes);
  op.name = wl__nm(g, name);
  uint32_t w[1];
  int n = 0;
  if (after >= 0)
    w[n++] = (uint32_t)after;
  return wl__put(g, op, w, n);
}

/* A memory-bound copy of `elems` values, reading rd and writing wr bytes each. */
static long z3_copy(wl__gen *g, const char *name, double elems, double rd, double wr)
{
  if (elems <= 0)
    return -1;
  return wl__elem(g, name, elems, (rd + wr) / g->ab, 0);
}

/* FSDP1's reduction of a unit's gradient after its cast (_reduce_grad, torch
 * 2.1 to 2.6, the default path without a comm hook): the padded unsharded
 * gradient divided in place by the predivide factor f (doubled from 1 while
 * world % f == 0 and world / f > f: 2, 2, 4, 4 and 8 for 2, 4, 8, 16 and 64
 * ranks), the reduce-scatter, the shard divided by world / f, from the unit's second
 * backward of the step on, the shard added to the saved one
 * (_accumulate_sharded_grad; Composer reduces every micro-batch).  The
 * passes after the reduce-scatter run on FSDP's post-backward stream; they
 * are priced with the predivide, before it, at their bytes (1/world of the
 * gradient). */
static void fsdp1_divide(wl__gen *g, double params)
{
  long world = g->dp_size, pre = 1; /* _get_gradient_predivide_factor */
  while (world % pre == 0 && world > pre * pre)
    pre *= 2;
  double post = (double)world / pre, gb = g->gb, shard = params / world, bytes = 0;
  if (pre > 1)
    bytes += 2 * gb * params;
  if (post > 1)
    bytes += 2 * gb * shard;
  if (!g->chunk_first)
    bytes += 3 * gb * shard;
  if (bytes > 0)
    wl__elem(g, "fsdp.rs.divide", params, bytes / (params * g->ab), 1);
}

/* FSDP1's post-backward of a unit of `params` parameters before its
 * reduce-scatter: the gradient cast to reduce_dtype where it differs from
 * param_dtype (_post_backward_hook), then _reduce_grad's divisions. */
static void fsdp1_post_backward(wl__gen *g, double params)
{
  if (g->gb != g->pb)
    z3_copy(g, "fsdp.rs.cast", params, g->pb, g->gb);
  fsdp1_divide(g, params);
}

/* DeepSpeed sub-modules of layer i in forward order: the linear layers as
 * the generator builds them (QKV, attention output, MLP in, MLP out; a MoE
 * layer's router + shared experts and its routed experts) with their
 * gathered parameters (those above stage3_param_persistence_threshold; the
 * norms and biases below it stay whole on every rank). */
typedef struct ds_sub {
  double dense, expert; /* parameters all-gathered per rank (sharded size x dp) */
  int tensors;
} ds_sub;

static int ds_subs(const wl__gen *g, int layer, ds_sub *s)
{
  const wl_model *m = g->m;
  wl__params lp;
  wl__layer_params(m, g->l->tp, g->l->etp, g->l->ep, layer, &lp);
  double h = g->h, t = g->l->tp;
  double a = m->heads, kv = m->kv_heads, d = m->head_dim;
  double qkv = h * (a + 2 * kv) * d / t, proj = a * d * h / t;
  if (m->has_mla) {
    qkv = lp.attn - proj; /* the four MLA projections, as one fetch */
    if (qkv < 0)
      qkv = 0;
  }
  int n = 0;
  s[n++] = (ds_sub){qkv >= DS_PERSISTENCE_THRESHOLD ? qkv : 0, 0, 1};
  s[n++] = (ds_sub){proj >= DS_PERSISTENCE_THRESHOLD ? proj : 0, 0, 1};
  double rest = lp.mlp; /* dense MLP (or router + shared experts), norms included */
  if (!wl__is_moe_layer(m, layer)) {
    double f = m->ffn_hidden, fin = (m->ffn_act == WL_ACT_SWIGLU ? 2 : 1) * h * f / t;
    double fout = f * h / t;
    s[n++] = (ds_sub){fin, 0, m->ffn_act == WL_ACT_SWIGLU ? 2 : 1};
    s[n++] = (ds_sub){fout, 0, 1};
  } else {
    s[n++] = (ds_sub){rest >= DS_PERSISTENCE_THRESHOLD ? rest : 0, 0, 1};
    int mlp_w = m->ffn_act == WL_ACT_SWIGLU ? 3 : 2;
    s[n++] = (ds_sub){0, lp.expert, (m->moe.experts / g->l->ep) * mlp_w};
  }
  return n;
}

/* Parameters of layer i that DeepSpeed gathers (all but the persistent ones). */
static double ds_gathered(const wl__gen *g, int layer, int expert)
{
  ds_sub s[4];
  int n = ds_subs(g, layer, s);
  double p = 0;
  for (int i = 0; i < n; i++)
    p += expert ? s[i].expert : s[i].dense;
  return p;
}

/* DeepSpeed: gather layer i's sub-modules (one coalesced all-gather each)
 * after op `after`; returns the last. */
static long ds_gather(wl__gen *g, int layer, long after, int bwd)
{
  ds_sub s[4];
  int n = ds_subs(g, layer, s);
  long last = -1;
  /* offload=params: the layer's shard copied to the GPU by the fetch, ahead
   * of its all-gathers */
  long h = wl__offload_fetch(g, ds_gathered(g, layer, 0), ds_gathered(g, layer, 1), after, 0);
  if (h >= 0)
    after = h;
  for (int i = 0; i < n; i++) {
    int k = bwd ? n - 1 - i : i;
    long a = z3_coll(g, bwd ? "ds.ag.bwd" : "ds.ag", WL_COLL_ALLGATHER, R_DP,
                     s[k].dense * g->pb, after);
    long b = z3_coll(g, bwd ? "ds.ag.expert.bwd" : "ds.ag.expert", WL_COLL_ALLGATHER, R_DPX,
                     s[k].expert * g->pb, after);
    last = b >= 0 ? b : a >= 0 ? a : last;
  }
  return last;
}

/* DeepSpeed's host time for layer i's hooks in one pass (fetch and release
 * of each sub-module; the figure is FSDP1's per-tensor one, see docs). */
static double ds_host_s(const wl__gen *g, int layer)
{
  ds_sub s[4];
  int n = ds_subs(g, layer, s), t = 0;
  for (int i = 0; i < n; i++)
    t += s[i].tensors;
  t += g->m->norms_per_layer; /* the norms are sub-modules too, with their hooks */
  return t * Z3_HOST_PER_TENSOR_S;
}

/* DeepSpeed's reduce buckets: gradients copied into the bucket as they are
 * produced (contiguous_gradients), the bucket reduce-scattered on the "dp"
 * stream when the next gradient would overflow reduce_bucket_size. */
static void ds_grad_flush(wl__gen *g);

static void ds_grad(wl__gen *g, double dense, double expert)
{
  z3_copy(g, "ds.grad.copy", dense + expert, g->gb, g->gb);
  if (g->ds_bucket_d + g->ds_bucket_x + dense + expert > DS_REDUCE_BUCKET &&
      g->ds_bucket_d + g->ds_bucket_x > 0)
    ds_grad_flush(g);
  g->ds_bucket_d += dense;
  g->ds_bucket_x += expert;
}

/* The bucket reduce-scattered (with offload=optimizer, this rank's shard
 * then copied to the host's fp32 gradient partition). */
static void ds_grad_flush(wl__gen *g)
{
  long a = wl__coll_s(g, S_DP, "ds.grad.rs", WL_COLL_REDUCESCATTER, R_DP,
                      g->ds_bucket_d * g->gb, -1);
  long b = wl__coll_s(g, S_DP, "ds.grad.rs.expert", WL_COLL_REDUCESCATTER, R_DPX,
                      g->ds_bucket_x * g->gb, -1);
  wl__dp_push(g, a);
  wl__dp_push(g, b);
  wl__offload_grad(g, b >= 0 ? b : a, g->ds_bucket_d, g->ds_bucket_x);
  g->ds_bucket_d = g->ds_bucket_x = 0;
}

/* DeepSpeed keeps a parameter gathered after its forward when it is used
 * again within stage3_max_reuse_distance fetched elements: layer i's next use
 * is its backward, 2 x (parameters gathered after it) away. */
static int ds_kept(const wl__gen *g, int first, int count, int layer)
{
  double after = 0; /* elements (whole parameters, as ds_numel counts them) */
  for (int j = layer + 1; j < first + count; j++)
    after += ds_gathered(g, j, 0) + ds_gathered(g, j, 1);
  return 2 * after < DS_MAX_REUSE_DISTANCE;
}

/* ---- units under the frameworks' ZeRO-3 ------------------------------------------ */
/* Host time of FSDP1's hooks for layer i in one pass (pre-forward unshard
 * + post-forward reshard, or pre-backward unshard + post-backward reshard). */
static double fsdp_host_s(const wl__gen *g, int layer)
{
  return z3_tensors(g, layer) * Z3_HOST_PER_TENSOR_S;
}

/* dp_impl=fsdp: gather layer i after its hook (which waits for `gate`, the
 * rate limiter's free event: the compute op that ended the layer two back). */
static long fsdp_gather(wl__gen *g, int layer, long gate, int bwd)
{
  long h = z3_host(g, bwd ? "fsdp.hook.bwd" : "fsdp.hook", fsdp_host_s(g, layer), gate);
  g->z3_fend[layer - g->z3_first] = h;
  return wl__z3_gather(g, layer, h, bwd);
}

/* dp_impl=fsdp2: copy layer i's all-gather output into its parameters
 * (foreach_all_gather_copy_out: read and write the unsharded bytes). */
static void fsdp2_copy_out(wl__gen *g, int layer)
{
  double p = wl__z3_bytes(g, layer, 0, 0) / g->pb + wl__z3_bytes(g, layer, 0, 1) / g->pb;
  z3_copy(g, "fsdp2.ag.copy_out", p, g->pb, g->pb);
}

/* FSDP2 under a pipeline schedule (torch.distributed.pipelining's
 * PipelineStage.backward_maybe_with_nosync, PyTorch 2.5-2.6, with
 * torchtitan's reshard_after_forward=False for pp > 1): a stage's
 * parameters are gathered in its first forward of the step and stay
 * unsharded; every backward runs with requires_gradient_sync and
 * reshard_after_backward off, so the gradients accumulate unsharded; after
 * the stage's last backward its post_backward runs for every group: the
 * reduce-scatters, then the resharding. */
int wl__fsdp2_kept(const wl_layout *l)
{
  return l->zero == 3 && l->dp_impl == WL_DP_FSDP2 && l->pp > 1;
}

/* A backward's gradients of `params` parameters into the unsharded
 * accumulator (FSDPParam.to_accumulated_grad_if_needed on the first
 * backward: the param-dtype gradient cast to reduce_dtype; then
 * accumulate_unsharded_grad_if_needed: accumulator += gradient; with
 * reduce_dtype = param_dtype autograd's AccumulateGrad adds in place from
 * the second). */
static void fsdp2_accumulate(wl__gen *g, double params)
{
  if (g->chunk_first) {
    if (g->gb != g->pb)
      z3_copy(g, "fsdp2.grad.acc", params, g->pb, g->gb);
  } else {
    z3_copy(g, "fsdp2.grad.acc", params, g->pb + g->gb, g->gb);
  }
}

/* The stage's post_backward after its last backward: for the root, then each
 * layer in forward order (the order FSDP registered their states), the
 * accumulated gradients copied into the reduce-scatter input
 * (foreach_reduce_scatter_copy_in, in reduce_dtype) and reduce-scattered. */
static void fsdp2_kept_reduce(wl__gen *g, int first, int count, int vs)
{
  double root = wl__z3_root(g, vs);
  if (root > 0) {
    z3_copy(g, "fsdp2.rs.copy_in", root, g->gb, g->gb);
    wl__dp_push(g, wl__coll_s(g, S_DP, "fsdp.rs.root", WL_COLL_REDUCESCATTER, R_DP,
                              root * g->gb, -1));
  }
  for (int i = first; i < first + count; i++) {
    double d = wl__z3_bytes(g, i, 0, 0) / g->pb, x = wl__z3_bytes(g, i, 0, 1) / g->pb;
    z3_copy(g, "fsdp2.rs.copy_in", d + x, g->gb, g->gb);
    wl__dp_push(g, wl__coll_s(g, S_DP, "fsdp.rs", WL_COLL_REDUCESCATTER, R_DP, d * g->gb, -1));
    wl__dp_push(g, wl__coll_s(g, S_DP, "fsdp.rs.expert", WL_COLL_REDUCESCATTER, R_DPX,
                              x * g->gb, -1));
  }
}

/* The forward of one unit under the frameworks' ZeRO-3 (dp_impl != megatron). */
void wl__unit_fwd_z3(wl__gen *g, int c, int first, int count, int vs, int last_vs)
{
  const wl_layout *l = g->l;
  int impl = l->dp_impl, ngr = g->ngroups[c];
  /* FSDP2 under a pipeline: gathered in the stage's first forward only */
  int gather = !wl__fsdp2_kept(g->l) || g->chunk_first;
  g->z3_first = first;
  for (int k = 0; k < count; k++)
    g->z3_ag[k] = -1;
  /* root unit (embedding, final norm, output): gathered once per micro-batch
   * and kept to the end of backward (FSDP1 _post_forward_reshard skips the
   * root; FSDP2 sets the root's reshard_after_forward to False; DeepSpeed
   * re-uses the output layer at once, within max_reuse_distance) */
  double root = wl__z3_root(g, vs);
  g->z3_root = gather ? wl__coll_s(g, S_DP, "fsdp.ag.root", WL_COLL_ALLGATHER, R_DP,
                                   root * g->pb, wl__offload_fetch(g, root, 0, -1, 1))
                      : -1;
  wl__need(g, g->z3_root);
  if (gather) { /* (else the stage's parameters are still unsharded) */
    if (impl == WL_DP_FSDP)
      for (int i = 0; i < 2 && i < count; i++)
        g->z3_ag[i] = fsdp_gather(g, first + i, -1, 0);
    else if (impl == WL_DP_FSDP2 && count > 0)
      g->z3_ag[0] = wl__z3_gather(g, first, -1, 0);
    else if (impl == WL_DP_DEEPSPEED && count > 0)
      g->z3_ag[0] = ds_gather(g, first, -1, 0);
  }
  if (vs == 0) {
    wl__param_wait(g, c, ngr - 1);
    wl__embed_fwd(g);
  }
  for (int i = first; i < first + count; i++) {
    int k = i - first, gi = (vs == last_vs) + 2 * (first + count - 1 - i);
    wl__need(g, g->z3_ag[k]);
    if (impl == WL_DP_FSDP) {
      wl__need(g, g->z3_fend[k]);
      wl__layer_fwd(g, i, c, gi);
      /* the rate limiter (limit_all_gathers, two in flight): the hook of the
       * layer two ahead runs once this layer's forward has freed it */
      if (k + 2 < count)
        g->z3_ag[k + 2] = fsdp_gather(g, i + 2, g->last_c, 0);
    } else if (impl == WL_DP_FSDP2) {
      /* implicit prefetch: the next layer's all-gather is issued as the CPU
       * runs ahead, once this layer's copy-out has freed the buffer */
      if (gather) {
        fsdp2_copy_out(g, i);
        if (k + 1 < count)
          g->z3_ag[k + 1] = wl__z3_gather(g, i + 1, g->last_c, 0);
      }
      wl__layer_fwd(g, i, c, gi);
    } else {
      /* DeepSpeed: the layer's hooks wait for the fetch two back (at most
       * two fetch events outstanding), then prefetch the next layer */
      long h = z3_host(g, "ds.hook", ds_host_s(g, i), k >= 2 ? g->z3_ag[k - 2] : -1);
      if (k + 1 < count)
        g->z3_ag[k + 1] = ds_gather(g, i + 1, h, 0);
      wl__need(g, h);
      wl__layer_fwd(g, i, c, gi);
    }
  }
  if (vs == last_vs) {
    wl__param_wait(g, c, 0);
    wl__output_fwd(g);
  }
}

void wl__unit_bwd_z3(wl__gen *g, int c, int first, int count, int vs, int last_vs)
{
  const wl_layout *l = g->l;
  int impl = l->dp_impl, ngr = g->ngroups[c], kept = wl__fsdp2_kept(g->l);
  g->z3_first = first;
  int top = first + count - 1, pf = l->bwd_prefetch;
  for (int k = 0; k < count; k++)
    g->z3_ag[k] = -1;
  if (impl == WL_DP_FSDP) /* BACKWARD_PRE: the top unit's hook prefetches the next too */
    for (int i = 0; i < (pf == WL_BWD_PREFETCH_PRE ? 2 : 1) && i < count; i++)
      g->z3_ag[count - 1 - i] = fsdp_gather(g, top - i, -1, 1);
  /* with reshard_after_forward=0 (always under a pipeline) the forward's
   * gathers are still there */
  else if (impl == WL_DP_FSDP2 && count > 0 && l->reshard_after_forward)
    g->z3_ag[count - 1] = wl__z3_gather(g, top, -1, 1);
  else if (impl == WL_DP_DEEPSPEED && count > 0)
    g->z3_ag[count - 1] = ds_kept(g, first, count, top) ? -1 : ds_gather(g, top, -1, 1);
  if (vs == last_vs) {
    wl__output_bwd(g);
    wl__group_done(g, c, 0);
  }
  for (int i = top; i >= first; i--) {
    int k = i - first, gi = (vs == last_vs) + 2 * (first + count - 1 - i);
    if (kept) {
      wl__layer_bwd(g, i, c, gi);
      fsdp2_accumulate(g, (wl__z3_bytes(g, i, 0, 0) + wl__z3_bytes(g, i, 0, 1)) / g->pb);
      continue;
    }
    if (impl == WL_DP_FSDP && pf == WL_BWD_PREFETCH_NONE && i < top)
      /* no prefetch: the unit's own pre-backward hook gathers it, after the
       * unit above has finished (its reduce-scatter ahead on the stream) */
      g->z3_ag[k] = fsdp_gather(g, i, g->last_c, 1);
    wl__need(g, g->z3_ag[k]);
    if (impl == WL_DP_FSDP) {
      wl__need(g, g->z3_fend[k]);
      wl__layer_bwd(g, i, c, gi);
      /* BACKWARD_POST: _post_backward_reshard prefetches the next unit as
       * soon as this one's gradient is computed, before _reduce_grad */
      if (pf == WL_BWD_PREFETCH_POST && k >= 1)
        g->z3_ag[k - 1] = fsdp_gather(g, i - 1, g->last_c, 1);
      /* post-backward: the gradient's cast and divisions
       * (fsdp1_post_backward), the reduce-scatter, then (BACKWARD_PRE with
       * the rate limiter) the hook of the layer two below */
      fsdp1_post_backward(g, (wl__z3_bytes(g, i, 0, 0) + wl__z3_bytes(g, i, 0, 1)) / g->pb);
      wl__dp_push(g, wl__coll_s(g, S_DP, "fsdp.rs", WL_COLL_REDUCESCATTER, R_DP,
                                wl__z3_bytes(g, i, 1, 0), -1));
      wl__dp_push(g, wl__coll_s(g, S_DP, "fsdp.rs.expert", WL_COLL_REDUCESCATTER, R_DPX,
                                wl__z3_bytes(g, i, 1, 1), -1));
      if (pf == WL_BWD_PREFETCH_PRE && k - 2 >= 0)
        g->z3_ag[k - 2] = fsdp_gather(g, i - 2, g->last_c, 1);
    } else if (impl == WL_DP_FSDP2) {
      /* explicit backward prefetch of one layer (the pre-backward hook);
       * with reshard_after_forward=0 the forward's gathers are still there */
      if (l->reshard_after_forward) {
        fsdp2_copy_out(g, i);
        if (k >= 1)
          g->z3_ag[k - 1] = wl__z3_gather(g, i - 1, g->last_c, 1);
      }
      wl__layer_bwd(g, i, c, gi);
      /* foreach_reduce: the gradients copied into the reduce-scatter input
       * in reduce_dtype (chunk_cat), then the reduce-scatter */
      z3_copy(g, "fsdp2.rs.copy_in", (wl__z3_bytes(g, i, 0, 0) + wl__z3_bytes(g, i, 0, 1)) / g->pb,
              g->pb, g->gb);
      wl__dp_push(g, wl__coll_s(g, S_DP, "fsdp.rs", WL_COLL_REDUCESCATTER, R_DP,
                                wl__z3_bytes(g, i, 1, 0), -1));
      wl__dp_push(g, wl__coll_s(g, S_DP, "fsdp.rs.expert", WL_COLL_REDUCESCATTER, R_DPX,
                                wl__z3_bytes(g, i, 1, 1), -1));
    } else {
      int k2 = k + 2 < count ? k + 2 : -1;
      long h = z3_host(g, "ds.hook.bwd", ds_host_s(g, i), k2 >= 0 ? g->z3_ag[k2] : -1);
      if (k >= 1)
        g->z3_ag[k - 1] = ds_kept(g, first, count, i - 1) ? -1 : ds_gather(g, i - 1, h, 1);
      wl__need(g, h);
      wl__layer_bwd(g, i, c, gi);
      wl__params lp;
      wl__layer_params(g->m, l->tp, l->etp, l->ep, i, &lp);
      ds_grad(g, lp.attn + lp.mlp, lp.expert);
    }
  }
  if (vs == 0) {
    wl__embed_bwd(g);
    wl__group_done(g, c, ngr - 1);
  }
  if (kept) {
    /* the root's gradients accumulate when its backward ends (its
     * post-backward hook fires once all its parameters have gradients) */
    fsdp2_accumulate(g, wl__z3_root(g, vs));
    if (g->grad_sync)
      fsdp2_kept_reduce(g, first, count, vs);
  } else if (impl == WL_DP_DEEPSPEED) {
    ds_grad(g, wl__z3_root(g, vs), 0);
    ds_grad_flush(g);
  } else {
    double root = wl__z3_root(g, vs);
    if (impl == WL_DP_FSDP) /* the root unit's post-backward, as a layer's */
      fsdp1_post_backward(g, root);
    else if (impl == WL_DP_FSDP2) /* foreach_reduce's copy-in, as a layer's */
      z3_copy(g, "fsdp2.rs.copy_in", root, g->pb, g->gb);
    wl__dp_push(g, wl__coll_s(g, S_DP, "fsdp.rs.root", WL_COLL_REDUCESCATTER, R_DP,
                              root * g->gb, -1));
  }
  if (vs == last_vs) /* after backward() returns: the trainer's metrics */
    wl__train_metrics(g);
}
