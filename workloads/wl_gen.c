/* wl_gen.c — the training-step generator: model + layout -> per-rank workload.
 *
 * One program per pipeline stage; every rank of a stage runs it and differs
 * only in the communicators its roles map to.  Inside a program:
 *
 *   stream "compute"  GEMMs, attention, elementwise ops, the optimizer step,
 *                     and every collective Megatron-LM issues synchronously
 *                     (TP forward all-reduce / all-gather / reduce-scatter,
 *                     MoE all-to-all, non-overlapped DP reduction);
 *   stream "tp"       TP collectives Megatron overlaps with the weight-gradient
 *                     GEMM in backward (LinearWithGradAccumulationAndAsync-
 *                     Communication: dgrad all-reduce, SP input re-gather and
 *                     dgrad reduce-scatter); with tp_overlap (Megatron's
 *                     --tp-comm-overlap) every TP collective: the SP
 *                     gathers and reduce-scatters around the linear layers
 *                     in chunks overlapped with GEMM chunks, the others
 *                     waited on by the next compute op;
 *   stream "dp"       overlapped DP bucket reductions and parameter gathers
 *                     (FSDP: all-gathers and reduce-scatters, in issue order, as
 *                     NCCL runs one communicator's operations);
 *   "pp_send"/"pp_recv": point-to-point transfers, each waited on by the
 *                     compute op that needs them;
 *   stream "cp"       the context-parallel ring's steps (shift collectives of
 *                     the CP group), each waited on by the attention step
 *                     that needs it;
 *   stream "ep"       (moe_a2a_overlap only) the expert all-to-alls of a
 *                     (forward, backward) pair run together (unit_pair).
 *
 * The order of units (forward/backward of a micro-batch's model chunk) comes
 * from wl__schedule().  Between two units, the previous unit's output send and
 * the next unit's input receive are posted together and the next unit waits
 * for both (Megatron's batched p2p followed by req.wait()).
 *
 * FLOPs: every compute op carries the FLOPs it executes (causal attention
 * half of the full score matrix, FlashAttention backward 2.5x forward,
 * capacity padding included).  Alongside, the generator sums the model FLOPs
 * of Megatron's convention (3 x forward GEMMs, full s^2 attention, no
 * recomputation, no padding) for the workload's meta.  docs/workloads.md has
 * every formula and its source.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_emit_int.h"
#include "workload.h"

/* the names of the roles and streams (their enums: wl_emit_int.h) */
static const char *const role_names[R_COUNT] = {"tp", "dp",      "dp_expert", "ep",  "cp",
                                                "pp_next", "pp_prev", "embd", "etp"};
static const char *const stream_names[S_OFF_ALL] = {"compute", "tp",  "dp",  "pp_send",
                                                   "pp_recv", "cp",  "host", "d2h",
                                                   "h2d",     "cpu"};
static const char *const stream_names_ep[S_EP + 1] = {"compute", "tp", "dp", "pp_send",
                                                      "pp_recv", "cp", "ep"};

/* ---- DP buckets ---------------------------------------------------------------- */
/* Group order of chunk c, backward order: [output], per layer from the last:
 * mlp (+experts), attention; [embedding]. */
static int chunk_groups(wl__gen *g, int c, wl__dp_group **out)
{
  const wl_layout *l = g->l;
  int first, count;
  wl__chunk_layers(l, g->m, g->stage, c, &first, &count);
  int vs = c * l->pp + g->stage, last_vs = l->pp * l->vpp - 1;
  int n = 2 * count + (vs == last_vs) + (vs == 0);
  /* n is 0 for a virtual stage without layers, embedding or loss (an empty
   * stage of a pp_layout string) */
  wl__dp_group *gr = calloc((size_t)(n ? n : 1), sizeof *gr);
  if (!gr)
    return -1;
  int k = 0;
  if (vs == last_vs)
    gr[k++].dense = wl__output_params(g->m, l->tp, l->pp);
  for (int i = first + count - 1; i >= first; i--) {
    wl__params lp;
    wl__layer_params(g->m, l->tp, l->etp, l->ep, i, &lp);
    gr[k].layer = gr[k + 1].layer = 1;
    gr[k].dense = lp.mlp;
    gr[k++].expert = lp.expert;
    gr[k++].dense = lp.attn;
  }
  if (vs == 0)
    gr[k++].dense = wl__embedding_params(g->m, l->tp);
  /* buckets: Megatron closes one when it reaches bucket_size parameters;
   * without overlap the whole buffer is one bucket.  Megatron-core buckets
   * only the first pipeline stage's first model chunk: a later stage's
   * reduction is off the critical path, a later chunk's overlaps the
   * chunks still in backward (DistributedDataParallel: bucket_size = None
   * where the pipeline rank is > 0 or disable_bucketing, which get_model
   * sets for model chunks after the first; core_r0.8.0 to 2026), so each
   * of those reduces and gathers its chunk in one bucket. */
  double bd = 0, bx = 0;
  int bucketed = l->overlap_grad_reduce && (g->stage == 0 && c == 0);
  double lim = bucketed ? l->bucket_params : INFINITY;
  for (int i = 0; i < n; i++) {
    bd += gr[i].dense;
    bx += gr[i].expert;
    gr[i].ag_dense = gr[i].ag_expert = -1;
    if (bd > 0 && (bd >= lim || i == n - 1)) {
      gr[i].close_dense = 1;
      gr[i].bucket_dense = bd;
      bd = 0;
    }
    if (bx > 0 && (bx >= lim || i == n - 1)) {
      gr[i].close_expert = 1;
      gr[i].bucket_expert = bx;
      bx = 0;
    }
  }
  *out = gr;
  return n;
}

void wl__dp_push(wl__gen *g, long op)
{
  if (op < 0)
    return;
  if (g->ndp_ops == g->cap_dp_ops) {
    size_t c = g->cap_dp_ops ? 2 * g->cap_dp_ops : 64;
    long *n = realloc(g->dp_ops, c * sizeof *n);
    if (!n) {
      g->oom = 1;
      return;
    }
    g->dp_ops = n;
    g->cap_dp_ops = c;
  }
  g->dp_ops[g->ndp_ops++] = op;
}

static void grad_reduce(wl__gen *g, int stream, double dense, double expert)
{
  int op = g->l->zero == 0 ? WL_COLL_ALLREDUCE : WL_COLL_REDUCESCATTER;
  const char *nd = g->l->zero == 0 ? "dp.grad.ar" : "dp.grad.rs";
  const char *nx = g->l->zero == 0 ? "dp_expert.grad.ar" : "dp_expert.grad.rs";
  long a, b;
  if (stream == S_COMPUTE) {
    a = wl__coll_c(g, nd, op, R_DP, dense * g->gb);
    b = wl__coll_c(g, nx, op, R_DPX, expert * g->gb);
  } else {
    wl__dp_push(g, a = wl__coll_s(g, stream, nd, op, R_DP, dense * g->gb, -1));
    wl__dp_push(g, b = wl__coll_s(g, stream, nx, op, R_DPX, expert * g->gb, -1));
  }
  wl__offload_grad(g, b >= 0 ? b : a, dense, expert);
}

/* Parameters of the stage's gradient groups (all its model chunks), dense
 * and expert. */
static void stage_params(const wl__gen *g, double *dense, double *expert)
{
  *dense = *expert = 0;
  for (int c = 0; c < g->l->vpp; c++)
    for (int gi = 0; gi < g->ngroups[c]; gi++) {
      *dense += g->groups[c][gi].dense;
      *expert += g->groups[c][gi].expert;
    }
}

/* Megatron's passes over a bucket's gradients before its reduction, on the
 * compute stream (_ParamAndGradBucketGroup.start_grad_sync, core_r0.8.0 to
 * 2026): with check_for_nan_in_grad the bucket's norm (one read), then,
 * unless the factor is 1 (average_in_collective, calculate_per_token_loss,
 * or one rank), grad_data *= 1/(dp cp) (a read and a write; core_r0.8.0
 * divided by dp alone); the expert buffers' factor is the same, not one over
 * the expert data-parallel size (DistributedDataParallel). */
static void grad_passes(wl__gen *g, double dense, double expert)
{
  const wl_layout *l = g->l;
  double n = dense + expert, rw = g->gb / g->ab;
  if (n <= 0)
    return;
  if (l->grad_nan_check)
    wl__elem(g, "dp.grad.nan_check", n, rw, 2);
  if (l->grad_scale_pass && g->dp_size > 1)
    wl__elem(g, "dp.grad.scale", n, 2 * rw, 1);
}

/* A group's gradients are complete (its last wgrad was just emitted). */
void wl__group_done(wl__gen *g, int c, int gi)
{
  if (!g->grad_sync || !g->l->overlap_grad_reduce || g->l->zero == 3)
    return;
  wl__dp_group *gr = &g->groups[c][gi];
  double d = gr->close_dense ? gr->bucket_dense : 0, x = gr->close_expert ? gr->bucket_expert : 0;
  grad_passes(g, d, x);
  grad_reduce(g, S_DP, d, x);
}

void wl__param_wait(wl__gen *g, int c, int gi)
{
  if (!g->param_wait)
    return;
  wl__need(g, g->groups[c][gi].ag_dense);
  wl__need(g, g->groups[c][gi].ag_expert);
}

/* ---- units ------------------------------------------------------------------------- */
/* The DP group of a layer's MLP in its chunk's backward order (the attention's
 * follows it): the output layer's first on the last virtual stage, then two
 * a layer from the chunk's last (first, count: the chunk's layers). */
static int layer_group(int last_vs, int first, int count, int layer)
{
  return last_vs + 2 * (first + count - 1 - layer);
}

static void unit_fwd(wl__gen *g, int c)
{
  const wl_layout *l = g->l;
  int first, count;
  wl__chunk_layers(l, g->m, g->stage, c, &first, &count);
  int vs = c * l->pp + g->stage, last_vs = l->pp * l->vpp - 1;
  if (l->zero == 3 && l->dp_impl != WL_DP_MEGATRON) {
    wl__unit_fwd_z3(g, c, first, count, vs, last_vs);
    return;
  }
  int ngr = g->ngroups[c];
  if (l->zero == 3) {
    /* root unit (embedding, final norm, output) gathered once per micro-batch;
     * transformer layers gathered with at most two in flight (limit_all_gathers) */
    g->z3_root =
        wl__coll_s(g, S_DP, "fsdp.ag.root", WL_COLL_ALLGATHER, R_DP,
                   wl__z3_root(g, vs) * g->pb, wl__offload_fetch(g, wl__z3_root(g, vs), 0, -1, 1));
    for (int i = 0; i < 2 && i < count; i++)
      g->z3_ag[i] = wl__z3_gather(g, first + i, -1, 0);
    wl__need(g, g->z3_root);
  }
  if (vs == 0) {
    wl__param_wait(g, c, ngr - 1);
    wl__embed_fwd(g);
  }
  for (int i = first; i < first + count; i++) {
    int gi = layer_group(vs == last_vs, first, count, i);
    if (l->zero == 3)
      wl__need(g, g->z3_ag[i - first]);
    wl__layer_fwd(g, i, c, gi);
    if (l->zero == 3 && i + 2 < first + count)
      g->z3_ag[i + 2 - first] = wl__z3_gather(g, i + 2, g->last_c, 0);
  }
  if (vs == last_vs) {
    wl__param_wait(g, c, 0);
    wl__output_fwd(g);
  }
}

static void unit_bwd(wl__gen *g, int c)
{
  const wl_layout *l = g->l;
  int first, count;
  wl__chunk_layers(l, g->m, g->stage, c, &first, &count);
  int vs = c * l->pp + g->stage, last_vs = l->pp * l->vpp - 1;
  if (l->zero == 3 && l->dp_impl != WL_DP_MEGATRON) {
    wl__unit_bwd_z3(g, c, first, count, vs, last_vs);
    return;
  }
  int ngr = g->ngroups[c];
  long rs_prev = -1;
  if (l->zero == 3)
    for (int i = 0; i < 2 && i < count; i++)
      g->z3_ag[count - 1 - i] = wl__z3_gather(g, first + count - 1 - i, -1, 1);
  if (vs == last_vs) {
    wl__output_bwd(g);
    wl__group_done(g, c, 0);
  }
  for (int i = first + count - 1; i >= first; i--) {
    int gi = layer_group(vs == last_vs, first, count, i);
    if (l->zero == 3)
      wl__need(g, g->z3_ag[i - first]);
    wl__layer_bwd(g, i, c, gi);
    if (l->zero == 3) {
      /* post-backward reduce-scatter of this layer's gradients; prefetch of
       * the layer two below (BACKWARD_PRE with the two-gather limit) */
      rs_prev =
          wl__coll_s(g, S_DP, "fsdp.rs", WL_COLL_REDUCESCATTER, R_DP, wl__z3_bytes(g, i, 1, 0), -1);
      wl__dp_push(g, rs_prev);
      long rsx = wl__coll_s(g, S_DP, "fsdp.rs.expert", WL_COLL_REDUCESCATTER, R_DPX,
                            wl__z3_bytes(g, i, 1, 1), -1);
      wl__dp_push(g, rsx);
      wl__offload_grad(g, rsx >= 0 ? rsx : rs_prev, wl__z3_bytes(g, i, 0, 0) / g->pb,
                       wl__z3_bytes(g, i, 0, 1) / g->pb);
      if (i - 2 >= first)
        g->z3_ag[i - 2 - first] = wl__z3_gather(g, i - 2, g->last_c, 1);
    }
  }
  if (vs == 0) {
    wl__embed_bwd(g);
    wl__group_done(g, c, ngr - 1);
  }
  if (l->zero == 3) {
    long rs = wl__coll_s(g, S_DP, "fsdp.rs.root", WL_COLL_REDUCESCATTER, R_DP,
                         wl__z3_root(g, vs) * g->gb, -1);
    wl__dp_push(g, rs);
    wl__offload_grad(g, rs, wl__z3_root(g, vs), 0);
  }
}

/* ---- moe_a2a_overlap: a forward and a backward unit together ------------------------- */
/* Megatron-core's combined 1F1B (overlap_moe_expert_parallel_comm with
 * delay_wgrad_compute; pipeline_parallel/combined_1f1b.py and
 * models/common/model_chunk_schedule_plan.py): the forward of one
 * micro-batch's chunk and the backward of another's run layer by layer
 * together, forward layer i with backward layer n-1-i, each layer cut in
 * parts (WL_PT_*) so that one's all-to-alls, on a stream of their own, run
 * beside the other's compute:
 *   ep stream:      combine.bwd(b) | dispatch(f), dispatch.bwd(b) | combine(f)
 *   compute stream: attention(f)   | experts.bwd(b), wgrad(b), experts(f) | attention.bwd(b)
 * the unpermute and the residual add after the combine on the ep stream too,
 * as Megatron runs them (its combine node), their backward before the
 * combine's backward; the attention's weight gradients of the backward layer
 * after the next one's combine backward is issued (delay_wgrad_compute).
 * The layers one unit has more than the other, the embedding and the output
 * run alone. */
typedef struct pair_chain {
  uint32_t pend[MAXPEND]; /* the chain's pending waits while the other chain emits */
  int npend;
  long a2a; /* its last all-to-all, for the part that consumes it, or -1 */
  int flag; /* param_wait (forward) or grad_sync (backward) of its unit */
} pair_chain;

static void chain_enter(wl__gen *g, pair_chain *ch, int fwd, int part)
{
  memcpy(g->pend, ch->pend, sizeof g->pend);
  g->npend = ch->npend;
  g->phase = fwd ? WL_PHASE_FORWARD : WL_PHASE_BACKWARD;
  g->param_wait = fwd ? ch->flag : 0;
  g->grad_sync = fwd ? 0 : ch->flag;
  g->part = part;
  g->part_a2a = -1;
  /* the parts after the ep stream's wait for it: forward the experts (after
   * the dispatch) and the next layer's attention (after the combine and what
   * follows it there); backward the experts (after the combine's backward)
   * and the attention's part (after the dispatch's) */
  if (!part || (part & (WL_PT_MLP | WL_PT_PRE))) {
    wl__need(g, ch->a2a);
    ch->a2a = -1;
  }
  /* the combine's part runs on the ep stream, the backward's after the
   * layer above's input gradient (the chain's last compute op) */
  g->on_ep = part == WL_PT_POST;
  if (g->on_ep && !fwd)
    wl__need(g, g->last_c);
}

static void chain_leave(wl__gen *g, pair_chain *ch)
{
  memcpy(ch->pend, g->pend, sizeof g->pend);
  ch->npend = g->npend;
  g->npend = 0;
  if (g->part_a2a >= 0)
    ch->a2a = g->part_a2a;
  g->part = 0;
  g->on_ep = 0;
  g->param_wait = g->grad_sync = 0;
}

/* Part `part` of a layer's forward (fwd) or backward for chain ch; part 0:
 * the whole layer, alone. */
static void pair_part(wl__gen *g, pair_chain *ch, int fwd, int part, int layer, int c, int gi)
{
  chain_enter(g, ch, fwd, part);
  if (fwd)
    wl__layer_fwd(g, layer, c, gi);
  else
    wl__layer_bwd(g, layer, c, gi);
  chain_leave(g, ch);
}

/* The forward unit of chunk cf (param_wait: its first forward under
 * overlap_param_gather) with the backward unit of chunk cb (grad_sync: its
 * last backward), on this stage.  Returns the forward's last op on the ep
 * stream, which its output's send waits for, or -1. */
static long unit_pair(wl__gen *g, int cf, int param_wait, int cb, int grad_sync)
{
  const wl_layout *l = g->l;
  int ff, nf, fb, nb;
  wl__chunk_layers(l, g->m, g->stage, cf, &ff, &nf);
  wl__chunk_layers(l, g->m, g->stage, cb, &fb, &nb);
  int last_vs = l->pp * l->vpp - 1, vf = cf * l->pp + g->stage, vb = cb * l->pp + g->stage;
  pair_chain F = {.npend = 0, .a2a = -1, .flag = param_wait};
  pair_chain B = {.npend = 0, .a2a = -1, .flag = grad_sync};
  memcpy(F.pend, g->pend, sizeof g->pend); /* the receives both wait for */
  F.npend = g->npend;
  memcpy(B.pend, g->pend, sizeof g->pend);
  B.npend = g->npend;
  g->npend = 0;
  if (vf == 0) {
    chain_enter(g, &F, 1, 0);
    wl__param_wait(g, cf, g->ngroups[cf] - 1);
    wl__embed_fwd(g);
    chain_leave(g, &F);
  }
  if (vb == last_vs) {
    chain_enter(g, &B, 0, 0);
    wl__output_bwd(g);
    wl__group_done(g, cb, 0);
    chain_leave(g, &B);
  }
  int both = nf < nb ? nf : nb;
  for (int k = 0; k < both; k++) {
    int fl = ff + k, bl = fb + nb - 1 - k;
    int gf = layer_group(vf == last_vs, ff, nf, fl), gb = layer_group(vb == last_vs, fb, nb, bl);
    if (k == 0) { /* later pairs' combine backward is issued by the pair before */
      pair_part(g, &B, 0, WL_PT_POST, bl, cb, gb);
      pair_part(g, &B, 0, WL_PT_COMBINE, bl, cb, gb);
    }
    pair_part(g, &F, 1, WL_PT_PRE, fl, cf, gf);
    pair_part(g, &F, 1, WL_PT_DISPATCH, fl, cf, gf);
    pair_part(g, &B, 0, WL_PT_MLP, bl, cb, gb);
    pair_part(g, &B, 0, WL_PT_DISPATCH, bl, cb, gb);
    pair_part(g, &B, 0, WL_PT_DW, bl, cb, gb);
    pair_part(g, &F, 1, WL_PT_MLP, fl, cf, gf);
    pair_part(g, &F, 1, WL_PT_COMBINE, fl, cf, gf);
    pair_part(g, &B, 0, WL_PT_PRE, bl, cb, gb); /* its attention's weight gradients held back */
    pair_part(g, &F, 1, WL_PT_POST, fl, cf, gf);
    /* delay_wgrad_compute: the next backward layer's combine backward needs
     * only this one's input gradient, and is issued before its attention's
     * weight gradients run (Megatron runs the combine's backward on the
     * communication stream) */
    if (k + 1 < both) {
      int gn = layer_group(vb == last_vs, fb, nb, bl - 1);
      pair_part(g, &B, 0, WL_PT_POST, bl - 1, cb, gn);
      pair_part(g, &B, 0, WL_PT_COMBINE, bl - 1, cb, gn);
    }
    chain_enter(g, &B, 0, 0);
    wl__flush_wgrad(g);
    chain_leave(g, &B);
  }
  /* the layers left, alone: the backward's first, then the forward's */
  for (int bl = fb + nb - 1 - both; bl >= fb; bl--)
    pair_part(g, &B, 0, 0, bl, cb, layer_group(vb == last_vs, fb, nb, bl));
  for (int fl = ff + both; fl < ff + nf; fl++)
    pair_part(g, &F, 1, 0, fl, cf, layer_group(vf == last_vs, ff, nf, fl));
  if (vf == last_vs) {
    chain_enter(g, &F, 1, 0);
    wl__param_wait(g, cf, 0);
    wl__output_fwd(g);
    chain_leave(g, &F);
  }
  if (vb == 0) {
    chain_enter(g, &B, 0, 0);
    wl__embed_bwd(g);
    wl__group_done(g, cb, g->ngroups[cb] - 1);
    chain_leave(g, &B);
  }
  /* what is left pending waits for the sends that follow */
  for (int i = 0; i < F.npend; i++)
    wl__need(g, F.pend[i]);
  for (int i = 0; i < B.npend; i++)
    wl__need(g, B.pend[i]);
  return F.a2a;
}

/* ---- one pipeline stage's program ---------------------------------------------------- */
static int pp_tag(const wl_layout *l, int mb, int vs_recv, int bwd)
{
  return (mb * (l->vpp * l->pp) + vs_recv) * 2 + bwd;
}

/* Parameters replicated over TP whose gradients Megatron all-reduces over
 * TP after backward (finalize_model_grads): with SP, those it marks
 * sequence_parallel (norms, row-parallel biases) and the per-head query and
 * key norms; without SP, the query and key norms alone. */
static double stage_norm_params(const wl__gen *g)
{
  const wl_model *m = g->m;
  double norm = (m->layer_norm ? 2 : 1) * g->h, qk = m->qk_norm * 2.0 * m->head_dim;
  double per = g->l->sp ? m->norms_per_layer * norm + (m->out_bias + m->mlp_bias) * g->h + qk : qk;
  double n = per * wl_layout_stage_layers(g->l, m, g->stage);
  if (g->l->sp && g->stage == g->l->pp - 1)
    n += norm;
  return n;
}

/* Start stage s's program: its streams, the emission state, the DP groups
 * of each chunk.  Returns -1 out of memory. */
static int stage_begin(wl__gen *g, int s, const char *pname)
{
  const wl_layout *l = g->l;
  int ns = l->offload ? S_OFF_ALL : l->dp_impl != WL_DP_MEGATRON ? S_ALL : S_COUNT;
  int ep_stream = l->moe_a2a_overlap || l->moe_shared_overlap;
  if (ep_stream)
    ns = S_EP + 1;
  int pi = wl_program_add(g->wl, pname, ns, ep_stream ? stream_names_ep : stream_names);
  if (pi < 0)
    return -1;
  g->p = &g->wl->programs[pi];
  memset(g->nm_off, 0, sizeof g->nm_off);
  g->stage = s;
  g->npend = 0;
  g->last_c = -1;
  g->flags = 0;
  g->conv_model = g->conv_hw = 0;
  g->ndp_ops = 0;
  g->off_d2h = -1;
  g->part = 0;
  g->part_a2a = -1;
  g->defer_wgrad = g->ndefer = 0;
  g->defer_gi = -1;
  for (int c = 0; c < l->vpp; c++) {
    g->ngroups[c] = chunk_groups(g, c, &g->groups[c]);
    if (g->ngroups[c] < 0)
      return -1;
  }
  return 0;
}

/* Bytes a group's parameters gather in: the model dtype's, but a layer's
 * in fp8 under fp8_param_gather (its linear weights, nearly all of it; the
 * norms' few weights are counted with them) */
static double gather_pb(const wl__gen *g, const wl__dp_group *gr)
{
  return g->l->fp8_param_gather && gr->layer ? 1 : g->pb;
}

/* Distributed optimizer with overlap_param_gather: the previous step's
 * parameter all-gathers, per bucket in forward order, waited on by the
 * first forward of each bucket's layers. */
static void prev_param_gathers(wl__gen *g)
{
  for (int c = 0; c < g->l->vpp; c++) {
    wl__dp_group *gr = g->groups[c];
    int n = g->ngroups[c];
    /* buckets in backward order end at closing groups; gather them from the
     * last (first in forward order) */
    int end_d = n - 1, end_x = n - 1;
    for (int gi = n - 1; gi >= 0; gi--) {
      if (gi == 0 || gr[gi - 1].close_dense) {
        double bytes = 0;
        for (int k = gi; k <= end_d; k++)
          bytes += gr[k].dense * gather_pb(g, &gr[k]);
        long op = wl__coll_s(g, S_DP, "dp.param.ag", WL_COLL_ALLGATHER, R_DP, bytes, -1);
        for (int k = gi; k <= end_d; k++)
          gr[k].ag_dense = op;
        end_d = gi - 1;
      }
      if (gi == 0 || gr[gi - 1].close_expert) {
        double bytes = 0;
        for (int k = gi; k <= end_x; k++)
          bytes += gr[k].expert * gather_pb(g, &gr[k]);
        long op = wl__coll_s(g, S_DP, "dp_expert.param.ag", WL_COLL_ALLGATHER, R_DPX, bytes, -1);
        for (int k = gi; k <= end_x; k++)
          gr[k].ag_expert = op;
        end_x = gi - 1;
      }
    }
  }
}

/* The stage's units in schedule order, each between its input receive and
 * its output send.  Returns -1 out of memory. */
/* A unit's input from the previous or next virtual stage: the receive of
 * `sent` bytes, which the unit waits for, and where they are this rank's
 * piece of the tensor (pp_scatter) the all-gather of the `whole` tensor over
 * the TP group on the compute stream. */
static void pp_recv(wl__gen *g, int role, int peer, int tag, double sent, double whole,
                    const char *name, const char *ag_name)
{
  wl__need(g, wl__p2p(g, S_PPR, WL_OP_RECV, role, peer, tag, sent, name, -1));
  if (sent < whole)
    wl__coll_c(g, ag_name, WL_COLL_ALLGATHER, R_TP, whole);
}

/* Whether forward unit k (of chunk c) waits for the overlapped parameter
 * gathers: the first forward of its chunk under ZeRO-1/2 with
 * overlap_param_gather. */
static int waits_params(const wl_layout *l, const wl__unit *u, int k, int c)
{
  if (!((l->zero == 1 || l->zero == 2) && l->overlap_param_gather))
    return 0;
  for (int j = 0; j < k; j++)
    if (u[j].fwd && u[j].chunk == c)
      return 0;
  return 1;
}

/* Whether unit k (of chunk c) is its chunk's first forward (fwd) or first
 * backward of the step. */
static int first_of(const wl__unit *u, int k, int c, int fwd)
{
  for (int j = 0; j < k; j++)
    if (u[j].fwd == fwd && u[j].chunk == c)
      return 0;
  return 1;
}

/* Whether backward unit k (of chunk c) is its chunk's last. */
static int last_bwd_of(const wl__unit *u, int nu, int k, int c)
{
  for (int j = k + 1; j < nu; j++)
    if (!u[j].fwd && u[j].chunk == c)
      return 0;
  return 1;
}

/* A unit's input (the activations forward, the gradient backward) from the
 * neighbouring stage, and its output to the other; sent: the bytes a rank
 * sends of the act bytes (pp_scatter); extra: an op the send waits for too. */
static void unit_recv(wl__gen *g, int fwd, int mb, int vs, double sent, double act)
{
  const wl_layout *l = g->l;
  g->phase = fwd ? WL_PHASE_FORWARD : WL_PHASE_BACKWARD;
  if (fwd && vs > 0)
    pp_recv(g, R_PPP, 0, pp_tag(l, mb, vs, 0), sent, act, "pp.recv.act", "pp.recv.act.ag");
  if (!fwd && vs < l->pp * l->vpp - 1)
    pp_recv(g, R_PPN, 1, pp_tag(l, mb, vs, 1), sent, act, "pp.recv.grad", "pp.recv.grad.ag");
}

static long unit_send(wl__gen *g, int fwd, int mb, int vs, double sent, long extra)
{
  const wl_layout *l = g->l;
  g->phase = fwd ? WL_PHASE_FORWARD : WL_PHASE_BACKWARD;
  if (fwd)
    return vs < l->pp * l->vpp - 1 ? wl__p2p(g, S_PPS, WL_OP_SEND, R_PPN, 1,
                                             pp_tag(l, mb, vs + 1, 0), sent, "pp.send.act", extra)
                                   : -1;
  return vs > 0 ? wl__p2p(g, S_PPS, WL_OP_SEND, R_PPP, 0, pp_tag(l, mb, vs - 1, 1), sent,
                          "pp.send.grad", extra)
                : -1;
}

/* moe_a2a_overlap: units k (forward) and k + 1 (backward) as one combined
 * step: both inputs received, the two run together (unit_pair), then the
 * forward's output and the backward's input gradient sent. */
static void pair_units(wl__gen *g, const wl__unit *u, int nu, int k, double sent, double act,
                       long *prev_send)
{
  const wl_layout *l = g->l;
  int p = l->pp, s = g->stage;
  int cf = u[k].chunk, mf = u[k].mb, vf = cf * p + s;
  int cb = u[k + 1].chunk, mbb = u[k + 1].mb, vb = cb * p + s;
  unit_recv(g, 1, mf, vf, sent, act);
  unit_recv(g, 0, mbb, vb, sent, act);
  if (l->schedule != WL_SCHED_INTERLEAVED)
    wl__need(g, *prev_send);
  wl__marker(g, WL_MARK_MICROBATCH, mf);
  wl__marker(g, WL_MARK_MICROBATCH, mbb);
  long f_end = unit_pair(g, cf, waits_params(l, u, k, cf), cb, last_bwd_of(u, nu, k + 1, cb));
  long sf = unit_send(g, 1, mf, vf, sent, f_end);
  long sb = unit_send(g, 0, mbb, vb, sent, -1);
  *prev_send = sb >= 0 ? sb : sf;
}

static int stage_units(wl__gen *g)
{
  const wl_layout *l = g->l;
  int s = g->stage, p = l->pp;
  int nu = 0;
  wl__unit *u = wl__schedule(l, s, &nu);
  if (!u)
    return -1;
  int warm = wl__schedule_warm(l, s);
  double act = g->Tsp * g->h * g->ab; /* p2p tensor: [s/cp(/tp with SP), b, h] */
  /* pp_scatter (Megatron-LM 2021-2023, without SP): each TP rank sends its
   * 1/tp of the tensor, and the receiver all-gathers it over the TP group
   * before using it (p2p_communication._communicate: split_tensor_into_1d_
   * equal_chunks, then gather_split_1d_tensor) */
  double sent = l->pp_scatter && l->tp > 1 ? act / l->tp : act;
  long prev_send = -1;
  for (int k = 0; k < nu; k++) {
    int c = u[k].chunk, mb = u[k].mb, vs = c * p + s;
    int fwd = u[k].fwd;
    /* moe_a2a_overlap: each (forward, backward) pair of the steady state
     * runs as one step */
    if (l->moe_a2a_overlap && fwd && k >= warm && (k - warm) % 2 == 0 && k + 1 < nu &&
        !u[k + 1].fwd) {
      pair_units(g, u, nu, k, sent, act, &prev_send);
      k++;
      continue;
    }
    unit_recv(g, fwd, mb, vs, sent, act); /* this unit's input */
    /* 1F1B/GPipe: Megatron waits for the send too; interleaved: the sends
     * overlap (combined/overlapped p2p), or the ring of stages would wait on
     * itself */
    if (l->schedule != WL_SCHED_INTERLEAVED)
      wl__need(g, prev_send);
    wl__marker(g, WL_MARK_MICROBATCH, mb);
    g->chunk_first = first_of(u, k, c, fwd);
    if (fwd) {
      g->param_wait = waits_params(l, u, k, c);
      unit_fwd(g, c);
      g->param_wait = 0;
    } else {
      g->grad_sync = last_bwd_of(u, nu, k, c);
      unit_bwd(g, c);
      g->grad_sync = 0;
    }
    prev_send = unit_send(g, fwd, mb, vs, sent, -1);
  }
  free(u);
  wl__need(g, prev_send);
  return 0;
}

/* finalize_model_grads: DP reduction, SP norm all-reduce, tied embeddings. */
static void finalize_grads(wl__gen *g)
{
  const wl_layout *l = g->l;
  int s = g->stage, v = l->vpp, p = l->pp;
  g->phase = WL_PHASE_BACKWARD;
  if (l->zero == 3 || l->overlap_grad_reduce) {
    /* A stream's ops run in order, so the last reduction of each stream
     * stands for all of it: wait for those (the wait list holds MAXPEND
     * ops; waiting for the first MAXPEND of the reductions let the
     * optimizer start before the rest, with more than 16 buckets or
     * layers). */
    int streams[MAXPEND], ns = 0;
    for (size_t i = g->ndp_ops; i-- > 0 && ns < MAXPEND;) {
      int st = g->p->ops[g->dp_ops[i]].stream, seen = 0;
      for (int k = 0; k < ns; k++)
        seen |= streams[k] == st;
      if (!seen) {
        streams[ns++] = st;
        wl__need(g, g->dp_ops[i]);
      }
    }
  } else {
    for (int c = 0; c < v; c++) {
      double d = 0, x = 0;
      for (int gi = 0; gi < g->ngroups[c]; gi++) {
        d += g->groups[c][gi].dense;
        x += g->groups[c][gi].expert;
      }
      grad_passes(g, d, x);
      grad_reduce(g, S_COMPUTE, d, x);
    }
  }
  /* DeepSpeed stage 3 step(): the fp16 overflow flag (has_overflow, an
   * all-reduce MAX) and the global gradient norm, each one float over dp */
  if (l->zero == 3 && l->dp_impl == WL_DP_DEEPSPEED) {
    if (l->dtype == WL_DTYPE_FP16)
      wl__coll_c(g, "ds.overflow.ar", WL_COLL_ALLREDUCE, R_DP, 4);
    wl__coll_c(g, "ds.grad_norm.ar", WL_COLL_ALLREDUCE, R_DP, 4);
  }
  /* FSDP's clip_grad_norm_ (FSDP1) and the norm of DTensor gradients (FSDP2)
   * all-reduce the squared local norms before the scaling */
  if ((l->dp_impl == WL_DP_FSDP || l->dp_impl == WL_DP_FSDP2) && l->grad_clip)
    wl__coll_c(g, "fsdp.grad_norm.ar", WL_COLL_ALLREDUCE, R_DP, 4);
  if (l->sp || (g->m->qk_norm && l->tp > 1))
    wl__coll_c(g, "tp.norm.grad.ar", WL_COLL_ALLREDUCE, R_TP, stage_norm_params(g) * g->gb);
  if (g->m->tie_embeddings && p > 1 && (s == 0 || s == p - 1))
    wl__coll_c(g, "embd.grad.ar", WL_COLL_ALLREDUCE, R_EMBD,
               (double)wl__vocab_padded(g->m, l->tp) / l->tp * g->h * g->gb);
}

/* HBM bytes the optimizer step moves per parameter of the shard.
 * Megatron's mixed-precision optimizers (Float16OptimizerWithFloat16Params,
 * DistributedOptimizer: step()) make these passes over the fp32 state:
 *   copy the model gradients to fp32 main gradients, `.float()`: read gb,
 *     write 4 (none when the gradients are fp32 already: an alias);
 *   with fp16's loss scaler, unscale and check for inf/nan
 *     (_amp_foreach_non_finite_check_and_unscale_): read 4, write 4;
 *   the gradient norm for clipping (multi_tensor_l2norm; clip_grad 1.0 is
 *     the default; the scaling only on steps whose norm exceeds it): read 4;
 *   Adam (FusedAdam): read param, grad, m, v, write param, m, v: 28;
 *   copy the fp32 params to the model's (multi_tensor_scale): read 4,
 *     write pb.
 * 52 bytes for fp16 (SC'21), 38 for bf16 with fp32 gradients.  The PyTorch
 * frameworks (dp_impl fsdp, fsdp2, deepspeed) make the plain step:
 *   clipping (FSDP's clip_grad_norm_, torch.nn.utils.clip_grad_norm_,
 *     DeepSpeed's unscale_and_clip_grads): the norm reads the gradient, the
 *     scaling by the clamped coefficient, done on every step (it avoids a
 *     host sync), reads and writes it: 3 gb;
 *   Adam, fused: read the gradient, read and write the fp32 master, m and v:
 *     gb + 24; torch's multi-tensor and per-parameter paths
 *     (_multi_tensor_adamw, _single_tensor_adamw, Composer's
 *     DecoupledAdamW.adamw) as eight passes: the decoupled weight decay
 *     (param *= 1 - lr wd: 8), m's update (lerp, or mul and add: 12 with
 *     the gradient), v *= beta2 (8), v += g g (addcmul: 12 with the
 *     gradient), sqrt(v) into a new tensor (8), its division by the bias
 *     correction (8) and + eps (8), param += m / denom (addcdiv: 16):
 *     2 gb + 72 (torch's loop always decays, its foreach path and
 *     Composer's loop only with a nonzero weight decay; Composer's loop
 *     writes m in two passes instead: 80 either way with fp32 gradients);
 *   the weight written in the model dtype, except under FSDP, where the
 *     fp32 shard is the weight (cast to the model dtype when it is
 *     gathered). */
static double optimizer_bytes_per_param(const wl__gen *g)
{
  const wl_layout *l = g->l;
  if (l->dp_impl != WL_DP_MEGATRON) {
    double b = l->optim_impl == WL_OPTIM_FUSED ? g->gb + 24 : 2 * g->gb + 72;
    if (l->grad_clip)
      b += 3 * g->gb;
    int fsdp = l->dp_impl == WL_DP_FSDP || l->dp_impl == WL_DP_FSDP2;
    return fsdp && l->zero == 3 ? b : b + g->pb;
  }
  double b = 28 + 4 + g->pb; /* Adam, the copy back */
  if (l->grad_clip)
    b += 4; /* the norm */
  if (g->gb != 4)
    b += g->gb + 4; /* the fp32 copy of the gradients */
  if (l->dtype == WL_DTYPE_FP16)
    b += 8; /* unscale and check */
  return b;
}

/* Kernels of the optimizer step (the compute model pays each one's launch):
 * one for a fused or multi-tensor step, whose launches per list of tensors
 * are few; the eight passes per parameter tensor for a per-parameter loop. */
static int optimizer_kernels(const wl__gen *g)
{
  if (g->l->optim_impl != WL_OPTIM_LOOP)
    return 1;
  return (int)fmin(8 * wl__optim_tensors(g), 1e9);
}

/* The optimizer step over this rank's shard, then (distributed optimizer
 * without overlap) the parameter all-gather. */
static void optimizer_step(wl__gen *g)
{
  const wl_layout *l = g->l;
  int v = l->vpp;
  g->phase = WL_PHASE_OPTIMIZER;
  double dense, expert;
  stage_params(g, &dense, &expert);
  double shard = l->zero >= 1 ? dense / g->dp_size + expert / g->edp_size : dense + expert;
  if (l->offload & WL_OFFLOAD_OPTIMIZER) {
    wl__offload_end(g, wl__offload_step(g, dense, expert));
  } else {
    wl_op op = wl_op_compute(S_COMPUTE, -1);
    op.sub = WL_CLASS_OPTIMIZER;
    op.dtype = WL_DTYPE_FP32;
    op.flops = 12 * shard;
    op.bytes = shard * optimizer_bytes_per_param(g);
    op.batch = optimizer_kernels(g);
    op.name = wl__nm(g, "optimizer.adam");
    long step = wl__put_c(g, op);
    if (l->offload & WL_OFFLOAD_PARAMS)
      wl__offload_after_gpu_step(g, step, dense, expert);
  }
  if ((l->zero == 1 || l->zero == 2) && !l->overlap_param_gather) {
    for (int c = 0; c < v; c++) {
      double d = 0, x = 0;
      for (int gi = 0; gi < g->ngroups[c]; gi++) {
        d += g->groups[c][gi].dense * gather_pb(g, &g->groups[c][gi]);
        x += g->groups[c][gi].expert * gather_pb(g, &g->groups[c][gi]);
      }
      wl__coll_c(g, "dp.param.ag", WL_COLL_ALLGATHER, R_DP, d);
      wl__coll_c(g, "dp_expert.param.ag", WL_COLL_ALLGATHER, R_DPX, x);
    }
  }
}

/* Megatron's contiguous gradient buffers are zeroed at the start of every
 * step (train_step: model_chunk.zero_grad_buffer(), grad_data.zero_()), one
 * write of the stage's gradients in the gradient dtype. */
static void grad_zero(wl__gen *g)
{
  if (g->l->dp_impl != WL_DP_MEGATRON || g->l->zero == 3)
    return;
  double dense, expert;
  stage_params(g, &dense, &expert);
  if (dense + expert > 0)
    wl__elem(g, "dp.grad.zero", dense + expert, g->gb / g->ab, 0);
}

/* Stage s's program: the previous step's parameter gathers, the units, the
 * gradient reductions, the optimizer step. */
static int emit_stage(wl__gen *g, int s, const char *suffix, st_err *err)
{
  const wl_layout *l = g->l;
  char pname[48];
  snprintf(pname, sizeof pname, "stage%d%s", s, suffix);
  if (stage_begin(g, s, pname) < 0)
    return st_err_set(err, ST_ENOMEM, "out of memory generating program '%s'", pname);
  g->phase = WL_PHASE_FORWARD;
  wl__marker(g, WL_MARK_ITERATION, 0);
  grad_zero(g);
  if ((l->zero == 1 || l->zero == 2) && l->overlap_param_gather)
    prev_param_gathers(g);
  if (stage_units(g) < 0)
    return st_err_set(err, ST_ENOMEM, "out of memory generating program '%s'", pname);
  finalize_grads(g);
  optimizer_step(g);
  for (int c = 0; c < l->vpp; c++) {
    free(g->groups[c]);
    g->groups[c] = NULL;
  }
  if (g->oom)
    return st_err_set(err, ST_ENOMEM, "out of memory generating program '%s'", pname);
  if (g->bad[0])
    return st_err_set(err, ST_EINPUT, "program '%s': %s", pname, g->bad);
  return ST_OK;
}

/* ---- communicators and the rank map ---------------------------------------------- */
static int rank_of(const wl_layout *l, int tp, int cp, int dp, int pp)
{
  return tp + l->tp * (cp + l->cp * (dp + l->dp * pp));
}

static int add_comm(wl_workload *wl, const char *name, int kind, int n, const int32_t *r,
                    int role, int play_all)
{
  int c = wl_comm_add(wl, name, kind, n, r);
  if (c < 0)
    return c;
  if (play_all)
    for (int i = 0; i < n; i++)
      wl_rank_set_comm(wl, r[i], role, c);
  return c;
}

static int build_comms(const wl_model *m, const wl_layout *l, wl_workload *wl)
{
  int T = l->tp, C = l->cp, D = l->dp, P = l->pp, E = l->ep, ET = l->etp, EDP = l->edp;
  int dpcp = D * C, stage_ranks = T * C * D;
  int32_t *r = malloc(sizeof *r * (size_t)(stage_ranks + 2));
  if (!r)
    return ST_ENOMEM;
  char name[64];
  /* the expert groups name their expert-TP rank "tp" when the expert-TP
   * group is the TP group */
  const char *et_label = ET == T ? "tp" : "etp";
  int rc = 0;
#define ADD(role, kind, n, all)                                                          \
  do {                                                                                   \
    if ((rc = add_comm(wl, name, kind, n, r, role, all)) < 0)                            \
      goto done;                                                                         \
  } while (0)
/* Megatron-core's expert RankGenerator (initialize_model_parallel, order
 * tp-ep-dp-pp with tp = etp and dp = edp): the TP x CP x DP ranks of stage
 * pp, re-read as etp (inner) x ep x edp (outer) */
#define EXPERT_RANK(pp, et, e, x) ((pp) * stage_ranks + (et) + ET * ((e) + E * (x)))
  for (int pp = 0; pp < P; pp++)
    for (int dp = 0; dp < D; dp++)
      for (int cp = 0; cp < C; cp++) {
        if (T > 1) {
          for (int t = 0; t < T; t++)
            r[t] = rank_of(l, t, cp, dp, pp);
          snprintf(name, sizeof name, "tp/pp%d/dp%d/cp%d", pp, dp, cp);
          ADD(R_TP, WL_COMM_TP, T, 1);
        }
        for (int t = 0; t < T; t++) {
          int me = rank_of(l, t, cp, dp, pp);
          if (C > 1 && cp == 0) {
            /* the CP ring, in CP rank order (shift: i sends to i + 1) */
            for (int c = 0; c < C; c++)
              r[c] = rank_of(l, t, c, dp, pp);
            snprintf(name, sizeof name, "cp/pp%d/dp%d/tp%d", pp, dp, t);
            ADD(R_CP, WL_COMM_CP, C, 1);
          }
          if (P > 1 && (pp < P - 1 || l->vpp > 1)) {
            r[0] = me;
            r[1] = rank_of(l, t, cp, dp, (pp + 1) % P);
            snprintf(name, sizeof name, "pp/%d->%d", r[0], r[1]);
            ADD(R_PPN, WL_COMM_PP, 2, 0);
            wl_rank_set_comm(wl, r[0], R_PPN, rc);
            wl_rank_set_comm(wl, r[1], R_PPP, rc);
          }
          if (P > 1 && pp == 0 && m->tie_embeddings) {
            r[0] = me;
            r[1] = rank_of(l, t, cp, dp, P - 1);
            snprintf(name, sizeof name, "embd/%d+%d", r[0], r[1]);
            ADD(R_EMBD, WL_COMM_PP, 2, 1);
          }
        }
      }
  for (int pp = 0; pp < P; pp++)
    for (int t = 0; t < (T > ET ? T : ET); t++) {
      if (t < T && dpcp > 1) {
        for (int i = 0; i < dpcp; i++)
          r[i] = rank_of(l, t, i % C, i / C, pp);
        snprintf(name, sizeof name, "dp/pp%d/tp%d", pp, t);
        ADD(R_DP, WL_COMM_DP, dpcp, 1);
      }
      if (m->has_moe && t < ET) {
        /* get_ranks('ep'): ep varies, etp and edp ranks fixed */
        for (int x = 0; x < EDP && E > 1; x++) {
          for (int e = 0; e < E; e++)
            r[e] = EXPERT_RANK(pp, t, e, x);
          snprintf(name, sizeof name, "ep/pp%d/%s%d/edp%d", pp, et_label, t, x);
          ADD(R_EP, WL_COMM_EP, E, 1);
        }
        /* get_ranks('dp') of the expert generator: the expert data-parallel group */
        for (int e = 0; e < E && EDP > 1; e++) {
          for (int x = 0; x < EDP; x++)
            r[x] = EXPERT_RANK(pp, t, e, x);
          snprintf(name, sizeof name, "dp_expert/pp%d/%s%d/ep%d", pp, et_label, t, e);
          ADD(R_DPX, WL_COMM_DP, EDP, 1);
        }
      }
    }
  /* get_ranks('tp') of the expert generator, when it is not the TP group */
  if (m->has_moe && ET != T && ET > 1)
    for (int pp = 0; pp < P; pp++)
      for (int x = 0; x < EDP; x++)
        for (int e = 0; e < E; e++) {
          for (int t = 0; t < ET; t++)
            r[t] = EXPERT_RANK(pp, t, e, x);
          snprintf(name, sizeof name, "etp/pp%d/ep%d/edp%d", pp, e, x);
          ADD(R_ETP, WL_COMM_TP, ET, 1);
        }
  rc = 0;
done:
#undef EXPERT_RANK
#undef ADD
  free(r);
  return rc < 0 ? rc : ST_OK;
}

int wl_generate(const wl_model *m, const wl_layout *l, wl_workload **out, st_err *err)
{
  if ((double)l->num_microbatches * l->vpp * l->pp * 2 > 2e9)
    return st_err_set(err, ST_EINPUT, "layout '%s': too many micro-batches x stages to tag",
                      l->spec);
  wl_workload *wl = wl_workload_create(l->num_gpus, l->etp == l->tp ? R_ETP : R_COUNT, role_names);
  if (!wl)
    return st_err_set(err, ST_ENOMEM, "out of memory creating a workload of %d ranks",
                      l->num_gpus);
  wl__gen g;
  memset(&g, 0, sizeof g);
  g.m = m;
  g.l = l;
  g.wl = wl;
  g.b = l->mbs;
  g.s = m->seq_len;
  g.sl = (double)m->seq_len / l->cp;
  g.T = g.b * g.sl;
  g.t = l->tp;
  g.Tsp = l->sp ? g.T / l->tp : g.T;
  g.h = m->hidden;
  g.ab = 2;
  g.gb = wl_dtype_bytes(l->grad_dtype);
  g.pb = 2;
  g.cf = m->has_moe && m->moe.capacity_factor > 0 ? m->moe.capacity_factor : 1;
  g.gemm_dtype = l->dtype;
  /* the PyTorch frameworks' fp8 linears are standalone Transformer Engine
   * te.Linear modules (llm-foundry's fc_type te), each casting its own input,
   * weight and output gradient; Megatron-core's TE modules fuse some casts
   * and cache the fp8 weights (fp8_casts in wl_gen_emit.c) */
  g.te_modules = l->dp_impl == WL_DP_MEGATRON;
  g.dp_size = l->dp * l->cp;
  g.edp_size = l->edp;
  g.etp = l->etp;
  g.r_etp = l->etp == l->tp ? R_TP : R_ETP;
  g.groups = calloc((size_t)l->vpp, sizeof *g.groups);
  g.ngroups = calloc((size_t)l->vpp, sizeof *g.ngroups);
  int maxl = 0;
  for (int s = 0; s < l->pp; s++)
    if (wl_layout_stage_layers(l, m, s) > maxl)
      maxl = wl_layout_stage_layers(l, m, s);
  g.z3_ag = calloc((size_t)maxl + 1, sizeof *g.z3_ag);
  g.z3_fend = calloc((size_t)maxl + 1, sizeof *g.z3_fend);
  int rc = ST_OK;
  double model_flops = 0, hw_flops = 0;
  int ranks_per_stage = l->num_gpus / l->pp;
  if (!g.groups || !g.ngroups || !g.z3_ag || !g.z3_fend) {
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
    goto fail;
  }
  rc = build_comms(m, l, wl);
  if (rc) {
    rc = st_err_set(err, ST_ENOMEM, "out of memory building communicators");
    goto fail;
  }
  /* one program per stage, or per (stage, micro-batch count) with
   * dp_microbatches: replica d's ranks run their count (wl_layout_split.c) */
  int nv = 0, vals[WL_MAX_DP_RUNS + 1];
  for (int i = 0; i < (l->dp_runs ? l->dp_runs : 1); i++) {
    int v = l->dp_runs ? l->dp_run_mb[i] : l->num_microbatches, seen = 0;
    for (int j = 0; j < nv; j++)
      seen |= vals[j] == v;
    if (!seen)
      vals[nv++] = v;
  }
  int first_prog = wl->num_programs;
  for (int s = 0; s < l->pp && !rc; s++)
    for (int vi = 0; vi < nv; vi++) {
      wl_layout lv = *l; /* the stage as a replica of vals[vi] micro-batches runs it */
      lv.num_microbatches = vals[vi];
      g.l = &lv;
      char suffix[24] = "";
      if (nv > 1)
        snprintf(suffix, sizeof suffix, "/mb%d", vals[vi]);
      if ((rc = emit_stage(&g, s, suffix, err)) != ST_OK) {
        if (rc == ST_EINPUT)
          st_err_prefix(err, "model '%s': ", m->name);
        g.l = l;
        goto fail;
      }
      g.l = l;
      int users = 0; /* ranks of the stage whose replica runs vals[vi] */
      for (int d = 0; d < l->dp; d++)
        users += wl_layout_replica_microbatches(l, d) == vals[vi];
      users *= ranks_per_stage / l->dp;
      model_flops += g.conv_model * users;
      hw_flops += g.conv_hw * users;
    }
  for (int r = 0; r < l->num_gpus; r++) {
    int d = (r / (l->tp * l->cp)) % l->dp, v = wl_layout_replica_microbatches(l, d), vi = 0;
    while (vi < nv - 1 && vals[vi] != v)
      vi++;
    wl_rank_set(wl, r, first_prog + (r / ranks_per_stage) * nv + vi);
  }

  wl_meta *mt = &wl->meta;
  if (wl_meta_set_str(&mt->model, m->name) || wl_meta_set_str(&mt->layout, l->spec) ||
      wl_meta_set_str(&mt->source, "gen")) {
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
    goto fail;
  }
  mt->tokens_per_step = (double)l->gbs * m->seq_len;
  mt->model_flops_per_step = model_flops;
  mt->hw_flops_per_step = hw_flops;
  mt->dtype = l->dtype;
  mt->iterations = 1;
  wl_memory mem;
  if ((rc = wl_memory_estimate(m, l, &mem, err)) != ST_OK)
    goto fail;
  mt->peak_memory_bytes = mem.peak_bytes;
  if ((rc = wl_workload_check(wl, err)) != ST_OK) {
    st_err_prefix(err, "generated workload for '%s' (%s) is inconsistent: ", m->name, l->spec);
    goto fail;
  }
  free(g.groups);
  free(g.ngroups);
  free(g.z3_ag);
  free(g.z3_fend);
  free(g.dp_ops);
  *out = wl;
  return ST_OK;
fail:
  if (g.groups)
    for (int c = 0; c < l->vpp; c++)
      free(g.groups[c]);
  free(g.groups);
  free(g.ngroups);
  free(g.z3_ag);
  free(g.z3_fend);
  free(g.dp_ops);
  wl_workload_destroy(wl);
  return rc;
}
