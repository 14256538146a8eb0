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
 *                     that needs it.
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

#include "wl_gen_int.h"
#include "workload.h"

/* R_ETP (the expert-TP group) is last: a workload has it only when the
 * layout's etp differs from tp (otherwise the expert-TP group is the TP group
 * and the workload keeps the roles it always had) */
enum { R_TP, R_DP, R_DPX, R_EP, R_CP, R_PPN, R_PPP, R_EMBD, R_ETP, R_COUNT };
static const char *const role_names[R_COUNT] = {"tp", "dp",      "dp_expert", "ep",  "cp",
                                                "pp_next", "pp_prev", "embd", "etp"};
/* S_HOST (the frameworks' hooks on the CPU) is last: a workload has it only
 * when dp_impl is not megatron, so older layouts keep their streams */
enum { S_COMPUTE, S_TP, S_DP, S_PPS, S_PPR, S_CP, S_HOST, S_ALL };
#define S_COUNT S_HOST
static const char *const stream_names[S_ALL] = {"compute", "tp",      "dp",     "pp_send",
                                               "pp_recv", "cp",      "host"};

#define MAXPEND 16

/* DP gradient groups of one model chunk, in backward order. */
typedef struct dp_group {
  double dense, expert; /* parameters per rank */
  int close_dense;      /* 1: the dense bucket closes after this group */
  int close_expert;
  double bucket_dense, bucket_expert; /* size of the bucket closing here */
  long ag_dense, ag_expert;           /* overlapped param all-gather to wait for, or -1 */
} dp_group;

typedef struct gen {
  const wl_model *m;
  const wl_layout *l;
  wl_workload *wl;
  wl_program *p;
  int stage, oom;
  char bad[ST_ERR_MSG_MAX / 2]; /* the first op whose numbers do not fit, or "" */
  /* shapes */
  double b, s, sl, T, Tsp, h, t; /* micro-batch, seq, local seq (s/cp), tokens, SP tokens */
  double ab, gb, pb;             /* activation, gradient, parameter bytes */
  double cf;                     /* MoE capacity factor (1 when dropless) */
  int gemm_dtype;
  int dp_size, edp_size; /* dp x cp, expert dp */
  int etp, r_etp;        /* expert TP size, and the role its collectives use */
  /* emission state */
  uint32_t pend[MAXPEND];
  int npend;
  long last_c; /* last op on the compute stream */
  int phase;
  uint16_t flags;
  /* FLOPs of Megatron's convention for one rank of this program */
  double conv_model, conv_hw;
  /* DP buckets of the current program, per chunk */
  dp_group **groups;
  int *ngroups;
  long *dp_ops;
  size_t ndp_ops, cap_dp_ops;
  int grad_sync; /* emitting the last backward of a chunk: buckets fire */
  int param_wait; /* first forward of a chunk under overlap_param_gather */
  /* FSDP */
  long *z3_ag; /* per layer of the stage: latest all-gather op */
  long z3_root;
  long *z3_fend;                 /* per layer: its last forward (backward) compute op */
  int z3_first;                  /* first layer of the unit being emitted */
  double ds_bucket_d, ds_bucket_x; /* DeepSpeed reduce bucket being filled */
} gen;

/* ---- emission helpers ------------------------------------------------------ */
static long put(gen *g, wl_op op, const uint32_t *w, int nw)
{
  op.phase = (uint8_t)g->phase;
  long i = wl_program_append(g->p, &op, w, (uint32_t)nw);
  if (i < 0)
    g->oom = 1;
  return i;
}

static void need(gen *g, long op)
{
  if (op < 0)
    return;
  for (int i = 0; i < g->npend; i++)
    if (g->pend[i] == (uint32_t)op)
      return;
  if (g->npend < MAXPEND)
    g->pend[g->npend++] = (uint32_t)op;
}

/* An op on the compute stream: takes the pending waits. */
static long put_c(gen *g, wl_op op)
{
  op.stream = S_COMPUTE;
  long i = put(g, op, g->pend, g->npend);
  g->npend = 0;
  if (i >= 0)
    g->last_c = i;
  return i;
}

/* An op on another stream, issued after the last compute op (and an extra op). */
static long put_s(gen *g, wl_op op, int stream, long extra)
{
  uint32_t w[2];
  int n = 0;
  if (g->last_c >= 0)
    w[n++] = (uint32_t)g->last_c;
  if (extra >= 0 && extra != g->last_c)
    w[n++] = (uint32_t)extra;
  op.stream = (uint16_t)stream;
  return put(g, op, w, n);
}

static void marker(gen *g, int kind, int value)
{
  wl_op op = wl_op_marker(S_COMPUTE, kind, value);
  put(g, op, NULL, 0);
}

static uint32_t nm(gen *g, const char *s) { return wl_program_string(g->p, s); }

/* A GEMM dimension as the int32 the op stores: one that does not fit (a qkv
 * width above 2^31 once wrapped to a small positive n) is recorded in g->bad
 * and the program fails, never written wrapped. */
static int32_t i32(gen *g, const char *op, const char *key, double x)
{
  if (!g->bad[0]) {
    st_err e;
    if (st_num_check(x, ST_NUM_REAL, 0, ST_INT32_MAX, &e, "op '%s': '%s'", op, key))
      snprintf(g->bad, sizeof g->bad, "%s", e.msg);
  }
  return g->bad[0] ? 0 : (int32_t)llround(x);
}

/* A byte count of a generated op: at most ST_BYTES_MAX, like any read one. */
static double bytes_ok(gen *g, const char *op, double bytes)
{
  st_err e;
  if (!g->bad[0] && st_num_check(bytes, ST_NUM_REAL, 0, ST_BYTES_MAX, &e, "op '%s': 'bytes'", op))
    snprintf(g->bad, sizeof g->bad, "%s", e.msg);
  return bytes;
}

static long gemm(gen *g, const char *name, double M, double N, double K, double batch,
                 double conv_scale)
{
  wl_op op = wl_op_compute(S_COMPUTE, -1);
  op.sub = WL_CLASS_GEMM;
  op.dtype = (uint8_t)g->gemm_dtype;
  op.flags = g->flags;
  op.m = i32(g, name, "m", M);
  op.n = i32(g, name, "n", N);
  op.k = i32(g, name, "k", K);
  op.batch = i32(g, name, "batch", batch);
  op.flops = 2 * M * N * K * batch;
  double in = wl_dtype_bytes(g->gemm_dtype);
  op.bytes = bytes_ok(g, name, ((M * K + K * N) * in + M * N * g->ab) * batch);
  op.name = nm(g, name);
  double conv = op.flops * conv_scale;
  g->conv_hw += conv;
  if (!(g->flags & WL_OPF_RECOMPUTE))
    g->conv_model += conv;
  return put_c(g, op);
}

/* Memory-bound op over `elems` elements, touching rw x elems values. */
static long elem(gen *g, const char *name, double elems, double rw, double flops_per)
{
  wl_op op = wl_op_compute(S_COMPUTE, -1);
  op.sub = WL_CLASS_ELEMENTWISE;
  op.dtype = WL_DTYPE_BF16;
  op.flags = g->flags;
  op.flops = elems * flops_per;
  op.bytes = elems * rw * g->ab;
  op.name = nm(g, name);
  return put_c(g, op);
}

static int role_size(const gen *g, int role)
{
  switch (role) {
  case R_TP: return g->l->tp;
  case R_DP: return g->dp_size;
  case R_DPX: return g->edp_size;
  case R_ETP: return g->etp;
  case R_EP: return g->l->ep;
  case R_CP: return g->l->cp;
  default: return 2;
  }
}

/* A collective on a side stream, issued after the last compute op. */
static long coll_s(gen *g, int stream, const char *name, int coll, int role, double bytes,
                   long extra)
{
  if (role_size(g, role) < 2 || bytes <= 0)
    return -1;
  wl_op op = wl_op_coll(stream, coll, role, bytes);
  op.name = nm(g, name);
  return put_s(g, op, stream, extra);
}

/* A collective that blocks compute: on the compute stream; with tp_overlap a
 * TP one goes on the "tp" stream (every TP collective of the rank on one
 * stream, in issue order) and the next compute op waits for it. */
static long coll_c(gen *g, const char *name, int coll, int role, double bytes)
{
  if (role_size(g, role) < 2 || bytes <= 0)
    return -1;
  if (role == R_TP && g->l->tp_overlap) {
    long i = coll_s(g, S_TP, name, coll, role, bytes, -1);
    need(g, i);
    return i;
  }
  wl_op op = wl_op_coll(S_COMPUTE, coll, role, bytes);
  op.name = nm(g, name);
  return put_c(g, op);
}

/* ---- tensor-parallel linear layers ------------------------------------------ */
typedef struct col_gemm {
  const char *fwd, *dgrad, *wgrad;
  double N, K;  /* per-rank output width, input width */
  double scale; /* conv-FLOPs scale (1/tp for weights duplicated across TP) */
} col_gemm;

/* Enter a TP region (Megatron's copy_to / gather_from_sequence_parallel_region). */
static void tp_enter(gen *g, const char *name)
{
  if (g->l->sp)
    coll_c(g, name, WL_COLL_ALLGATHER, R_TP, g->T * g->h * g->ab);
}

/* Leave it after a row-parallel GEMM (reduce_from / reduce_scatter_to). */
static void tp_exit(gen *g, const char *name)
{
  coll_c(g, name, g->l->sp ? WL_COLL_REDUCESCATTER : WL_COLL_ALLREDUCE, R_TP,
         g->T * g->h * g->ab);
}

static void col_fwd(gen *g, const col_gemm *c, int n)
{
  for (int i = 0; i < n; i++)
    gemm(g, c[i].fwd, g->T, c[i].N, c[i].K, 1, c[i].scale);
}

/* tp_overlap (Megatron's --tp-comm-overlap, Transformer Engine userbuffers,
 * method "ring_exchange"): the SP all-gather of a [T, h] tensor becomes tp - 1
 * ring steps; in step j every rank sends the shard it holds (its own, then
 * the one it received in step j - 1) to the next rank and receives one from
 * the previous (T/tp tokens).  Each step is one "shift" collective of the TP
 * communicator on the "tp" stream: every member sends and receives at once,
 * so the steps keep the communicator's one issue order, and on links the TP
 * group has to itself a step has a closed form (sim/engine/closed.c) where n send/recv
 * pairs would be n simulated flows.  The GEMMs that consume the gathered
 * tensor run in k = tp chunks of T/tp rows: chunk 0 on the local shard,
 * chunk j after step j - 1.  Returns the first step; step j is that + j. */
static long ag_ring(gen *g, const char *name)
{
  int t = g->l->tp;
  double shard = g->T * g->h * g->ab / t;
  long first = -1;
  for (int j = 0; j < t - 1; j++) {
    long i = coll_s(g, S_TP, name, WL_COLL_SHIFT, R_TP, shard, -1);
    if (j == 0)
      first = i;
  }
  return first;
}

/* Before GEMM chunk i of k fed by a ring exchange (ag_ring: first step r):
 * chunk 0 runs on the local shard, chunk i after step i - 1 (the last chunk
 * after the last step: the gathered buffer is complete). */
static void ag_ring_chunk_wait(gen *g, long r, int i)
{
  if (i > 0 && r >= 0)
    need(g, r + (i - 1));
}

#define TE_PIPELINE_SPLITS 4
/* Transformer Engine issues the chunk GEMMs of its comm-overlap methods
 * round-robin on num_max_streams = 3 compute streams (comm_gemm_overlap:
 * _stream_compute[i % num_max_streams]): while one chunk runs its last,
 * partial wave the next two are already queued, so the SMs see one stream of
 * tiles over the k chunks and the waves quantise over all of them, not per
 * chunk (the chunks still wait for their shards; only the cost is shared). */

/* Emit GEMM chunk of a k-way comm-overlap split. */
static long gemm_chunk(gen *g, const char *name, double M, double N, double K, double scale,
                       int k)
{
  long i = gemm(g, name, M, N, K, 1, scale);
  if (i >= 0)
    g->p->ops[i].concurrent = (uint8_t)(k < 255 ? k : 255);
  return i;
}

/* SP all-gather of the input, then column-parallel GEMMs over [T, h]. */
static void col_fwd_sp(gen *g, const col_gemm *c, int n, const char *ag_name)
{
  if (!g->l->tp_overlap) {
    tp_enter(g, ag_name);
    col_fwd(g, c, n);
    return;
  }
  int k = g->l->tp;
  long r = ag_ring(g, ag_name);
  for (int i = 0; i < k; i++) {
    ag_ring_chunk_wait(g, r, i);
    for (int j = 0; j < n; j++)
      gemm_chunk(g, c[j].fwd, g->T / k, c[j].N, c[j].K, c[j].scale, k);
  }
}

/* Backward of a column-parallel block fed by one [T, h] input: dgrad, then
 * the TP reduction of the input gradient overlapped with wgrad; with SP the
 * input is all-gathered again for wgrad (Megatron's async TP communication). */
static void col_bwd(gen *g, const col_gemm *c, int n, const char *ag_name, const char *red_name)
{
  double bytes = g->T * g->h * g->ab;
  int tp = g->l->tp > 1;
  long ag = -1;
  if (tp && g->l->sp)
    ag = coll_s(g, S_TP, ag_name, WL_COLL_ALLGATHER, R_TP, bytes, -1);
  for (int i = n - 1; i >= 0; i--)
    gemm(g, c[i].dgrad, g->T, c[i].K, c[i].N, 1, c[i].scale);
  long red = -1;
  if (tp)
    red = coll_s(g, S_TP, red_name, g->l->sp ? WL_COLL_REDUCESCATTER : WL_COLL_ALLREDUCE, R_TP,
                 bytes, -1);
  need(g, ag);
  for (int i = n - 1; i >= 0; i--)
    gemm(g, c[i].wgrad, c[i].K, c[i].N, g->T, 1, c[i].scale);
  need(g, red);
}

/* Row-parallel GEMM [T, K/tp] x [K/tp, h]: forward, and backward (SP: the
 * output gradient is all-gathered first, the backward of reduce-scatter). */
static void row_fwd(gen *g, const char *name, double Kloc, const char *red_name)
{
  if (!g->l->tp_overlap) {
    gemm(g, name, g->T, g->h, Kloc, 1, 1);
    tp_exit(g, red_name);
    return;
  }
  /* tp_overlap: k GEMM chunks of T/k rows, the reduce-scatter of chunk i on
   * the "tp" stream as soon as GEMM chunk i is done (pipelined); the next
   * compute op waits for the last one, so only its transfer is exposed.
   * k = 4: Transformer Engine's "pipeline" method splits in 4 by default
   * (initialize_ub: num_splits = 4 for pipeline, tp for ring_exchange). */
  int k = TE_PIPELINE_SPLITS;
  long rs = -1;
  for (int i = 0; i < k; i++) {
    gemm_chunk(g, name, g->T / k, g->h, Kloc, 1, k);
    rs = coll_s(g, S_TP, red_name, WL_COLL_REDUCESCATTER, R_TP, g->T * g->h * g->ab / k, -1);
  }
  need(g, rs);
}

static void row_bwd(gen *g, const char *dgrad, const char *wgrad, double Kloc, const char *ag_name)
{
  if (!g->l->tp_overlap) {
    tp_enter(g, ag_name);
    gemm(g, dgrad, g->T, Kloc, g->h, 1, 1);
  } else {
    /* tp_overlap: the output gradient's all-gather as a ring exchange
     * (ag_ring), dgrad chunk i on the shard received in step i - 1; wgrad
     * needs all of it and follows the last dgrad chunk */
    int k = g->l->tp;
    long r = ag_ring(g, ag_name);
    for (int i = 0; i < k; i++) {
      ag_ring_chunk_wait(g, r, i);
      gemm_chunk(g, dgrad, g->T / k, Kloc, g->h, 1, k);
    }
  }
  gemm(g, wgrad, Kloc, g->h, g->T, 1, 1);
}

/* ---- attention ----------------------------------------------------------------- */
static void attn_dims(const gen *g, double *a_loc, double *kv_loc, double *dqk, double *dv)
{
  const wl_model *m = g->m;
  *a_loc = (double)m->heads / g->t;
  if (m->has_mla) {
    *kv_loc = *a_loc;
    *dqk = m->mla.qk_nope_head_dim + m->mla.qk_rope_head_dim;
    *dv = m->mla.v_head_dim;
  } else {
    *kv_loc = (double)m->kv_heads / g->t;
    *dqk = *dv = m->head_dim;
  }
}

static int attn_proj(const gen *g, col_gemm *c)
{
  const wl_model *m = g->m;
  double a = m->heads, t = g->t, h = g->h;
  if (m->has_mla) {
    const wl_mla *q = &m->mla;
    double qk = q->qk_nope_head_dim + q->qk_rope_head_dim;
    if (!q->q_lora_rank) { /* queries projected directly, column-parallel (DeepSeek-V2-Lite) */
      c[0] = (col_gemm){"q", "q.dgrad", "q.wgrad", a * qk / t, h, 1};
      c[1] = (col_gemm){"kv_down", "kv_down.dgrad", "kv_down.wgrad",
                        q->kv_lora_rank + q->qk_rope_head_dim, h, 1 / t};
      c[2] = (col_gemm){"kv_up", "kv_up.dgrad", "kv_up.wgrad",
                        a * (q->qk_nope_head_dim + q->v_head_dim) / t, q->kv_lora_rank, 1};
      return 3;
    }
    c[0] = (col_gemm){"q_down", "q_down.dgrad", "q_down.wgrad", q->q_lora_rank, h, 1 / t};
    c[1] = (col_gemm){"kv_down", "kv_down.dgrad", "kv_down.wgrad",
                      q->kv_lora_rank + q->qk_rope_head_dim, h, 1 / t};
    c[2] = (col_gemm){"q_up", "q_up.dgrad", "q_up.wgrad", a * qk / t, q->q_lora_rank, 1};
    c[3] = (col_gemm){"kv_up", "kv_up.dgrad", "kv_up.wgrad",
                      a * (q->qk_nope_head_dim + q->v_head_dim) / t, q->kv_lora_rank, 1};
    return 4;
  }
  double d = m->head_dim;
  c[0] = (col_gemm){"qkv", "qkv.dgrad", "qkv.wgrad", (a + 2.0 * m->kv_heads) * d / t, h, 1};
  return 1;
}

/* One attention-core kernel over sq local queries and sk keys, `share` of the
 * causal work (CP ring steps split it). */
static long attn_kernel(gen *g, const char *name, double sq, double sk, double share, int bwd)
{
  double a, kv, dqk, dv;
  attn_dims(g, &a, &kv, &dqk, &dv);
  double full = 2 * g->b * sq * sk * a * (dqk + dv); /* QK^T + AV, no mask */
  wl_op op = wl_op_compute(S_COMPUTE, -1);
  op.sub = WL_CLASS_ATTENTION;
  op.dtype = WL_DTYPE_BF16;
  op.flags = g->flags;
  double exec = 0.5 * full * share; /* causal: half the score matrix */
  op.flops = bwd ? 2.5 * exec : exec;
  /* shape for the compute model (workload.h): queries, keys, head dim, b x heads */
  op.m = i32(g, "attention", "m", sq);
  op.n = i32(g, "attention", "n", sk);
  op.k = i32(g, "attention", "k", dqk);
  op.batch = i32(g, "attention", "batch", g->b * a);
  op.flags |= WL_OPF_CAUSAL;
  double io = g->b * (sq * a * dqk + sk * kv * (dqk + dv) + sq * a * dv) * g->ab;
  op.bytes = bwd ? 2 * io : io;
  op.name = nm(g, name);
  double conv = (bwd ? 2 : 1) * full * share;
  g->conv_hw += conv;
  if (!(g->flags & WL_OPF_RECOMPUTE))
    g->conv_model += conv;
  return put_c(g, op);
}

/* Attention without a fused kernel (flash=0, Megatron-LM before flash
 * attention): batched GEMMs over the full s x s score matrix, the fused
 * scale-mask-softmax and the attention dropout as memory-bound passes over
 * it; backward runs the four gradient GEMMs and both passes' backward.
 * Convention FLOPs as for the fused kernel. */
static void attn_unfused(gen *g, int bwd)
{
  double a, kv, dqk, dv;
  attn_dims(g, &a, &kv, &dqk, &dv);
  double sq = g->sl, sk = g->s, ba = g->b * a, scores = ba * sq * sk;
  if (!bwd) {
    gemm(g, "attn.qk", sq, sk, dqk, ba, 0);
    elem(g, "attn.softmax", scores, 2, 5);
    elem(g, "attn.dropout", scores, 2.5, 2);
    gemm(g, "attn.av", sq, dv, sk, ba, 0);
  } else {
    gemm(g, "attn.av.dgrad", sq, sk, dv, ba, 0);
    gemm(g, "attn.av.wgrad", sk, dv, sq, ba, 0);
    elem(g, "attn.dropout.bwd", scores, 2.5, 1);
    elem(g, "attn.softmax.bwd", scores, 3, 4);
    gemm(g, "attn.qk.dgrad", sq, dqk, sk, ba, 0);
    gemm(g, "attn.qk.wgrad", sk, dqk, sq, ba, 0);
  }
  double conv = (bwd ? 2 : 1) * 2 * g->b * sq * sk * a * (dqk + dv);
  g->conv_hw += conv;
  if (!(g->flags & WL_OPF_RECOMPUTE))
    g->conv_model += conv;
}

static long p2p(gen *g, int stream, int kind, int role, int peer, int tag, double bytes,
                const char *name, long extra)
{
  wl_op op = wl_op_p2p(stream, kind, role, peer, tag, bytes);
  op.name = nm(g, name);
  return put_s(g, op, stream, extra);
}

/* Attention core forward; with CP, the ring of TransformerEngine's
 * AttnFuncWithCPAndKVP2P: cp steps, each on 1/cp of the causal work, the next
 * KV chunk travelling to the ring neighbour during the current step.  Each
 * hop of the ring is one "shift" collective of the CP group (member i sends
 * to i + 1 and receives from i - 1 at once) on the "cp" stream: the same
 * transfers as a send/recv pair per member, with one issue order and, on
 * links the group has to itself, a closed form (sim/engine/closed.c). */
static void attn_fwd(gen *g)
{
  int cp = g->l->cp;
  if (cp == 1 && !g->l->flash) {
    attn_unfused(g, 0);
    return;
  }
  if (cp == 1) {
    attn_kernel(g, "attn", g->sl, g->s, 1, 0);
    return;
  }
  double a, kv, dqk, dv;
  attn_dims(g, &a, &kv, &dqk, &dv);
  double kv_bytes = g->b * g->sl * kv * (dqk + dv) * g->ab;
  long prev = -1;
  for (int j = 0; j < cp; j++) {
    long hop = j < cp - 1 ? coll_s(g, S_CP, "cp.kv", WL_COLL_SHIFT, R_CP, kv_bytes, -1) : -1;
    need(g, prev);
    attn_kernel(g, "attn.cp", g->sl, g->s, 1.0 / cp, 0);
    prev = hop;
  }
}

static void attn_bwd(gen *g)
{
  int cp = g->l->cp;
  if (cp == 1 && !g->l->flash) {
    attn_unfused(g, 1);
    return;
  }
  if (cp == 1) {
    attn_kernel(g, "attn.bwd", g->sl, g->s, 1, 1);
    return;
  }
  double a, kv, dqk, dv;
  attn_dims(g, &a, &kv, &dqk, &dv);
  double kv_bytes = g->b * g->sl * kv * (dqk + dv) * g->ab;
  long prev = -1, dprev = -1;
  for (int j = 0; j < cp; j++) {
    long hop = j < cp - 1 ? coll_s(g, S_CP, "cp.kv", WL_COLL_SHIFT, R_CP, kv_bytes, -1) : -1;
    need(g, prev);
    need(g, dprev);
    attn_kernel(g, "attn.cp.bwd", g->sl, g->s, 1.0 / cp, 1);
    /* the partial dKV follows its KV chunk round the ring, back to its owner */
    dprev = coll_s(g, S_CP, "cp.dkv", WL_COLL_SHIFT, R_CP, kv_bytes, -1);
    prev = hop;
  }
  need(g, dprev);
}

/* ---- MLP and MoE --------------------------------------------------------------- */
static double act_in(const wl_model *m, double f) { return m->ffn_act == WL_ACT_SWIGLU ? 2 * f : f; }

static void mlp_fwd(gen *g, double f, const char *pre)
{
  char n1[32], n2[32], n3[32], n4[32], n5[32];
  snprintf(n1, sizeof n1, "%s.tp.ag", pre);
  snprintf(n2, sizeof n2, "%s.fc1", pre);
  snprintf(n3, sizeof n3, "%s.act", pre);
  snprintf(n4, sizeof n4, "%s.fc2", pre);
  snprintf(n5, sizeof n5, "%s.tp.%s", pre, g->l->sp ? "rs" : "ar");
  col_gemm c = {n2, "", "", act_in(g->m, f) / g->t, g->h, 1};
  col_fwd_sp(g, &c, 1, n1);
  elem(g, n3, g->T * act_in(g->m, f) / g->t, 1.5, 8);
  row_fwd(g, n4, f / g->t, n5);
}

static void mlp_bwd(gen *g, double f, const char *pre)
{
  char a[32], b[32], c1[32], d[32], e[32], f1[32], f2[32], f3[32];
  snprintf(a, sizeof a, "%s.tp.ag.bwd", pre);
  snprintf(b, sizeof b, "%s.fc2.dgrad", pre);
  snprintf(c1, sizeof c1, "%s.fc2.wgrad", pre);
  snprintf(d, sizeof d, "%s.act.bwd", pre);
  snprintf(e, sizeof e, "%s.tp.ag.wgrad", pre);
  snprintf(f1, sizeof f1, "%s.tp.%s.dgrad", pre, g->l->sp ? "rs" : "ar");
  snprintf(f2, sizeof f2, "%s.fc1.dgrad", pre);
  snprintf(f3, sizeof f3, "%s.fc1.wgrad", pre);
  row_bwd(g, b, c1, f / g->t, a);
  elem(g, d, g->T * act_in(g->m, f) / g->t, 2.5, 12);
  col_gemm c = {"", f2, f3, act_in(g->m, f) / g->t, g->h, 1};
  col_bwd(g, &c, 1, e, f1);
}

/* Megatron-core MoE with the all-to-all token dispatcher
 * (MoEAlltoAllTokenDispatcher): the all-to-all over the EP group, then the
 * all-gather of the received tokens over the expert-TP group (etp ranks;
 * the TP group itself when etp = tp), expert GEMMs on ef/etp columns.
 * Tokens routed by this rank: T/tp with SP; balanced routing. */
static void moe_fwd(gen *g)
{
  const wl_moe *mo = &g->m->moe;
  double E = mo->experts, k = mo->top_k, ep = g->l->ep, ef = mo->expert_ffn_hidden;
  double Tl = g->Tsp, et = g->etp;
  double Te = Tl * et * k * g->cf; /* tokens through this rank's experts (after the gather) */
  double Me = Te * ep / E;         /* per local expert */
  gemm(g, "router", Tl, E, g->h, 1, 1);
  elem(g, "moe.permute", Tl * k * g->cf * g->h, 2, 0);
  coll_c(g, "ep.dispatch", WL_COLL_ALLTOALL, R_EP, Tl * k * g->cf * g->h * g->ab);
  coll_c(g, "moe.tp.ag", WL_COLL_ALLGATHER, g->r_etp, Te * g->h * g->ab);
  gemm(g, "expert.fc1", Me, act_in(g->m, ef) / et, g->h, E / ep, 1 / g->cf);
  elem(g, "expert.act", Te * act_in(g->m, ef) / et, 1.5, 8);
  gemm(g, "expert.fc2", Me, g->h, ef / et, E / ep, 1 / g->cf);
  coll_c(g, "moe.tp.rs", WL_COLL_REDUCESCATTER, g->r_etp, Te * g->h * g->ab);
  coll_c(g, "ep.combine", WL_COLL_ALLTOALL, R_EP, Tl * k * g->cf * g->h * g->ab);
  elem(g, "moe.unpermute", Tl * k * g->cf * g->h, 2, 2);
  if (mo->shared_experts)
    mlp_fwd(g, mo->shared_experts * ef, "shared");
}

static void moe_bwd(gen *g)
{
  const wl_moe *mo = &g->m->moe;
  double E = mo->experts, k = mo->top_k, ep = g->l->ep, ef = mo->expert_ffn_hidden;
  double Tl = g->Tsp, et = g->etp;
  double Te = Tl * et * k * g->cf;
  double Me = Te * ep / E;
  if (mo->shared_experts)
    mlp_bwd(g, mo->shared_experts * ef, "shared");
  elem(g, "moe.unpermute.bwd", Tl * k * g->cf * g->h, 2, 2);
  coll_c(g, "ep.combine.bwd", WL_COLL_ALLTOALL, R_EP, Tl * k * g->cf * g->h * g->ab);
  coll_c(g, "moe.tp.rs.bwd", WL_COLL_ALLGATHER, g->r_etp, Te * g->h * g->ab);
  gemm(g, "expert.fc2.dgrad", Me, ef / et, g->h, E / ep, 1 / g->cf);
  gemm(g, "expert.fc2.wgrad", ef / et, g->h, Me, E / ep, 1 / g->cf);
  elem(g, "expert.act.bwd", Te * act_in(g->m, ef) / et, 2.5, 12);
  gemm(g, "expert.fc1.dgrad", Me, g->h, act_in(g->m, ef) / et, E / ep, 1 / g->cf);
  gemm(g, "expert.fc1.wgrad", g->h, act_in(g->m, ef) / et, Me, E / ep, 1 / g->cf);
  coll_c(g, "moe.tp.ag.bwd", WL_COLL_REDUCESCATTER, g->r_etp, Te * g->h * g->ab);
  coll_c(g, "ep.dispatch.bwd", WL_COLL_ALLTOALL, R_EP, Tl * k * g->cf * g->h * g->ab);
  elem(g, "moe.permute.bwd", Tl * k * g->cf * g->h, 2, 0);
  gemm(g, "router.dgrad", Tl, g->h, E, 1, 1);
  gemm(g, "router.wgrad", g->h, E, Tl, 1, 1);
}

/* ---- DP buckets ---------------------------------------------------------------- */
/* Group order of chunk c, backward order: [output], per layer from the last:
 * mlp (+experts), attention; [embedding]. */
static int chunk_groups(gen *g, int c, dp_group **out)
{
  const wl_layout *l = g->l;
  int first, count;
  wl__chunk_layers(l, g->m, g->stage, c, &first, &count);
  int vs = c * l->pp + g->stage, last_vs = l->pp * l->vpp - 1;
  int n = 2 * count + (vs == last_vs) + (vs == 0);
  /* n is 0 for a virtual stage without layers, embedding or loss (an empty
   * stage of a pp_layout string) */
  dp_group *gr = calloc((size_t)(n ? n : 1), sizeof *gr);
  if (!gr)
    return -1;
  int k = 0;
  if (vs == last_vs)
    gr[k++].dense = wl__output_params(g->m, l->tp, l->pp);
  for (int i = first + count - 1; i >= first; i--) {
    wl__params lp;
    wl__layer_params(g->m, l->tp, l->etp, l->ep, i, &lp);
    gr[k].dense = lp.mlp;
    gr[k++].expert = lp.expert;
    gr[k++].dense = lp.attn;
  }
  if (vs == 0)
    gr[k++].dense = wl__embedding_params(g->m, l->tp);
  /* buckets: Megatron closes one when it reaches bucket_size parameters;
   * without overlap the whole buffer is one bucket */
  double bd = 0, bx = 0;
  double lim = l->overlap_grad_reduce ? l->bucket_params : INFINITY;
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

static void dp_push(gen *g, long op)
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

static void grad_reduce(gen *g, int stream, double dense, double expert)
{
  int op = g->l->zero == 0 ? WL_COLL_ALLREDUCE : WL_COLL_REDUCESCATTER;
  const char *nd = g->l->zero == 0 ? "dp.grad.ar" : "dp.grad.rs";
  const char *nx = g->l->zero == 0 ? "dp_expert.grad.ar" : "dp_expert.grad.rs";
  if (stream == S_COMPUTE) {
    coll_c(g, nd, op, R_DP, dense * g->gb);
    coll_c(g, nx, op, R_DPX, expert * g->gb);
  } else {
    dp_push(g, coll_s(g, stream, nd, op, R_DP, dense * g->gb, -1));
    dp_push(g, coll_s(g, stream, nx, op, R_DPX, expert * g->gb, -1));
  }
}

/* A group's gradients are complete (its last wgrad was just emitted). */
static void group_done(gen *g, int c, int gi)
{
  if (!g->grad_sync || !g->l->overlap_grad_reduce || g->l->zero == 3)
    return;
  dp_group *gr = &g->groups[c][gi];
  grad_reduce(g, S_DP, gr->close_dense ? gr->bucket_dense : 0,
              gr->close_expert ? gr->bucket_expert : 0);
}

static void param_wait(gen *g, int c, int gi)
{
  if (!g->param_wait)
    return;
  need(g, g->groups[c][gi].ag_dense);
  need(g, g->groups[c][gi].ag_expert);
}

/* ---- FSDP (zero=3) ----------------------------------------------------------------- */
static double z3_bytes(const gen *g, int layer, int grads, int expert)
{
  wl__params lp;
  wl__layer_params(g->m, g->l->tp, g->l->etp, g->l->ep, layer, &lp);
  double p = expert ? lp.expert : lp.attn + lp.mlp;
  return p * (grads ? g->gb : g->pb);
}

static double z3_root(const gen *g)
{
  return wl__embedding_params(g->m, g->l->tp) + wl__output_params(g->m, g->l->tp, g->l->pp);
}

/* All-gather layer i's parameters on the "dp" stream, after op `after`. */
static long z3_gather(gen *g, int layer, long after, int bwd)
{
  long a = coll_s(g, S_DP, bwd ? "fsdp.ag.bwd" : "fsdp.ag", WL_COLL_ALLGATHER, R_DP,
                  z3_bytes(g, layer, 0, 0), after);
  long b = coll_s(g, S_DP, bwd ? "fsdp.ag.expert.bwd" : "fsdp.ag.expert", WL_COLL_ALLGATHER,
                  R_DPX, z3_bytes(g, layer, 0, 1), after);
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
static int z3_tensors(const gen *g, int layer)
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

/* A timed host op (a framework hook) on the "host" stream after op `after`. */
static long z3_host(gen *g, const char *name, double seconds, long after)
{
  wl_op op = wl_op_compute(S_HOST, seconds);
  op.sub = WL_CLASS_OTHER;
  op.name = nm(g, name);
  uint32_t w[1];
  int n = 0;
  if (after >= 0)
    w[n++] = (uint32_t)after;
  return put(g, op, w, n);
}

/* A collective on the "dp" stream that waits only for op `after` (a hook
 * issues it, not the compute stream's progress). */
static long z3_coll(gen *g, const char *name, int coll, int role, double bytes, long after)
{
  if (role_size(g, role) < 2 || bytes <= 0)
    return -1;
  wl_op op = wl_op_coll(S_DP, coll, role, bytes);
  op.name = nm(g, name);
  uint32_t w[1];
  int n = 0;
  if (after >= 0)
    w[n++] = (uint32_t)after;
  return put(g, op, w, n);
}

/* A memory-bound copy of `elems` values, reading rd and writing wr bytes each. */
static long z3_copy(gen *g, const char *name, double elems, double rd, double wr)
{
  if (elems <= 0)
    return -1;
  return elem(g, name, elems, (rd + wr) / g->ab, 0);
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

static int ds_subs(const gen *g, int layer, ds_sub *s)
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
static double ds_gathered(const gen *g, int layer, int expert)
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
static long ds_gather(gen *g, int layer, long after, int bwd)
{
  ds_sub s[4];
  int n = ds_subs(g, layer, s);
  long last = -1;
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
static double ds_host_s(const gen *g, int layer)
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
static void ds_grad(gen *g, double dense, double expert)
{
  z3_copy(g, "ds.grad.copy", dense + expert, g->gb, g->gb);
  if (g->ds_bucket_d + g->ds_bucket_x + dense + expert > DS_REDUCE_BUCKET &&
      g->ds_bucket_d + g->ds_bucket_x > 0) {
    dp_push(g, coll_s(g, S_DP, "ds.grad.rs", WL_COLL_REDUCESCATTER, R_DP,
                      g->ds_bucket_d * g->gb, -1));
    dp_push(g, coll_s(g, S_DP, "ds.grad.rs.expert", WL_COLL_REDUCESCATTER, R_DPX,
                      g->ds_bucket_x * g->gb, -1));
    g->ds_bucket_d = g->ds_bucket_x = 0;
  }
  g->ds_bucket_d += dense;
  g->ds_bucket_x += expert;
}

static void ds_grad_flush(gen *g)
{
  dp_push(g, coll_s(g, S_DP, "ds.grad.rs", WL_COLL_REDUCESCATTER, R_DP, g->ds_bucket_d * g->gb,
                    -1));
  dp_push(g, coll_s(g, S_DP, "ds.grad.rs.expert", WL_COLL_REDUCESCATTER, R_DPX,
                    g->ds_bucket_x * g->gb, -1));
  g->ds_bucket_d = g->ds_bucket_x = 0;
}

/* DeepSpeed keeps a parameter gathered after its forward when it is used
 * again within stage3_max_reuse_distance fetched elements: layer i's next use
 * is its backward, 2 x (parameters gathered after it) away. */
static int ds_kept(const gen *g, int first, int count, int layer)
{
  double after = 0; /* elements (whole parameters, as ds_numel counts them) */
  for (int j = layer + 1; j < first + count; j++)
    after += ds_gathered(g, j, 0) + ds_gathered(g, j, 1);
  return 2 * after < DS_MAX_REUSE_DISTANCE;
}
/* ---- one transformer layer ------------------------------------------------------- */
static void layer_fwd(gen *g, int layer, int c, int gi_mlp)
{
  const wl_model *m = g->m;
  double h = g->h, Tsp = g->Tsp;
  marker(g, WL_MARK_LAYER, layer);
  param_wait(g, c, gi_mlp);
  param_wait(g, c, gi_mlp + 1);
  elem(g, "ln1", Tsp * h, 2, 5);
  col_gemm pc[4];
  int np = attn_proj(g, pc);
  col_fwd_sp(g, pc, np, "attn.tp.ag");
  double a, kv, dqk, dv;
  attn_dims(g, &a, &kv, &dqk, &dv);
  if (m->qk_norm)
    elem(g, "qk_norm", g->T * (a + kv) * dqk, 2, 5);
  attn_fwd(g);
  row_fwd(g, "proj", a * dv, g->l->sp ? "attn.tp.rs" : "attn.tp.ar");
  if (m->norms_per_layer > 2)
    elem(g, "ln1.post", Tsp * h, 2, 5);
  elem(g, "res1", Tsp * h, 3, 2);
  elem(g, "ln2", Tsp * h, 2, 5);
  if (wl__is_moe_layer(m, layer))
    moe_fwd(g);
  else
    mlp_fwd(g, m->ffn_hidden, "mlp");
  if (m->norms_per_layer > 2)
    elem(g, "ln2.post", Tsp * h, 2, 5);
  elem(g, "res2", Tsp * h, 3, 2);
}

static void layer_bwd(gen *g, int layer, int c, int gi_mlp)
{
  const wl_model *m = g->m;
  double h = g->h, Tsp = g->Tsp;
  marker(g, WL_MARK_LAYER, layer);
  if (g->l->recompute == WL_RECOMPUTE_FULL) {
    int pw = g->param_wait;
    g->param_wait = 0;
    g->flags = WL_OPF_RECOMPUTE;
    layer_fwd(g, layer, c, gi_mlp);
    g->flags = 0;
    g->param_wait = pw;
  }
  elem(g, "res2.bwd", Tsp * h, 3, 1);
  if (m->norms_per_layer > 2)
    elem(g, "ln2.post.bwd", Tsp * h, 3, 8);
  if (wl__is_moe_layer(m, layer))
    moe_bwd(g);
  else
    mlp_bwd(g, m->ffn_hidden, "mlp");
  elem(g, "ln2.bwd", Tsp * h, 3, 8);
  group_done(g, c, gi_mlp);
  elem(g, "res1.bwd", Tsp * h, 3, 1);
  if (m->norms_per_layer > 2)
    elem(g, "ln1.post.bwd", Tsp * h, 3, 8);
  double a, kv, dqk, dv;
  attn_dims(g, &a, &kv, &dqk, &dv);
  row_bwd(g, "proj.dgrad", "proj.wgrad", a * dv, "attn.tp.ag.bwd");
  if (g->l->recompute == WL_RECOMPUTE_SELECTIVE) {
    g->flags = WL_OPF_RECOMPUTE;
    attn_fwd(g);
    g->flags = 0;
  }
  attn_bwd(g);
  if (m->qk_norm)
    elem(g, "qk_norm.bwd", g->T * (a + kv) * dqk, 3, 8);
  col_gemm pc[4];
  int np = attn_proj(g, pc);
  col_bwd(g, pc, np, "attn.tp.ag.wgrad", g->l->sp ? "attn.tp.rs.dgrad" : "attn.tp.ar.dgrad");
  elem(g, "ln1.bwd", Tsp * h, 3, 8);
  group_done(g, c, gi_mlp + 1);
}

/* ---- embedding and output ---------------------------------------------------------- */
static void embed_fwd(gen *g)
{
  elem(g, "emb.lookup", g->T * g->h, 2, 1);
  coll_c(g, g->l->sp ? "emb.tp.rs" : "emb.tp.ar",
         g->l->sp ? WL_COLL_REDUCESCATTER : WL_COLL_ALLREDUCE, R_TP, g->T * g->h * g->ab);
}

static void embed_bwd(gen *g)
{
  tp_enter(g, "emb.tp.ag.bwd");
  elem(g, "emb.grad", g->T * g->h, 3, 1);
}

static void output_fwd(gen *g)
{
  double V = (double)wl__vocab_padded(g->m, g->l->tp) / g->t;
  elem(g, "out.ln", g->Tsp * g->h, 2, 5);
  tp_enter(g, "out.tp.ag");
  col_gemm c = {"out.logits", "", "", V, g->h, 1};
  col_fwd(g, &c, 1);
  /* vocab-parallel cross entropy as Megatron-Core runs it unfused (the
   * default; tensor_parallel/cross_entropy.py), per element of the [T, V/t]
   * logits: cast to fp32 (read 2, write 4 B), max (read 4), subtract the max
   * in place (8), exp in place (8), sum (4), divide by the sum in place (8):
   * 38 B, here 9.5 values of 4 B; then three all-reduces of T floats */
  g->ab *= 2;
  elem(g, "out.loss", g->T * V, 9.5, 6);
  g->ab /= 2;
  coll_c(g, "out.loss.max.ar", WL_COLL_ALLREDUCE, R_TP, g->T * 4);
  coll_c(g, "out.loss.target.ar", WL_COLL_ALLREDUCE, R_TP, g->T * 4);
  coll_c(g, "out.loss.sum.ar", WL_COLL_ALLREDUCE, R_TP, g->T * 4);
}

static void output_bwd(gen *g)
{
  double V = (double)wl__vocab_padded(g->m, g->l->tp) / g->t;
  /* backward: the saved softmax times the loss gradient in place (read 4,
   * write 4 B), then the cast's backward to bf16 (read 4, write 2): 14 B */
  g->ab *= 2;
  elem(g, "out.loss.bwd", g->T * V, 3.5, 3);
  g->ab /= 2;
  col_gemm c = {"", "out.logits.dgrad", "out.logits.wgrad", V, g->h, 1};
  col_bwd(g, &c, 1, "out.tp.ag.wgrad", g->l->sp ? "out.tp.rs.dgrad" : "out.tp.ar.dgrad");
  elem(g, "out.ln.bwd", g->Tsp * g->h, 3, 8);
}

/* ---- units ------------------------------------------------------------------------- */
/* Host time of FSDP1's hooks for layer i in one pass (pre-forward unshard
 * + post-forward reshard, or pre-backward unshard + post-backward reshard). */
static double fsdp_host_s(const gen *g, int layer)
{
  return z3_tensors(g, layer) * Z3_HOST_PER_TENSOR_S;
}

/* dp_impl=fsdp: gather layer i after its hook (which waits for `gate`, the
 * rate limiter's free event: the compute op that ended the layer two back). */
static long fsdp_gather(gen *g, int layer, long gate, int bwd)
{
  long h = z3_host(g, bwd ? "fsdp.hook.bwd" : "fsdp.hook", fsdp_host_s(g, layer), gate);
  g->z3_fend[layer - g->z3_first] = h;
  return z3_gather(g, layer, h, bwd);
}

/* dp_impl=fsdp2: copy layer i's all-gather output into its parameters
 * (foreach_all_gather_copy_out: read and write the unsharded bytes). */
static void fsdp2_copy_out(gen *g, int layer)
{
  double p = z3_bytes(g, layer, 0, 0) / g->pb + z3_bytes(g, layer, 0, 1) / g->pb;
  z3_copy(g, "fsdp2.ag.copy_out", p, g->pb, g->pb);
}

/* The forward of one unit under the frameworks' ZeRO-3 (dp_impl != megatron). */
static void unit_fwd_z3(gen *g, int c, int first, int count, int vs, int last_vs)
{
  const wl_layout *l = g->l;
  int impl = l->dp_impl, ngr = g->ngroups[c];
  g->z3_first = first;
  /* root unit (embedding, final norm, output): gathered once per micro-batch
   * and kept to the end of backward (FSDP1 _post_forward_reshard skips the
   * root; FSDP2 sets the root's reshard_after_forward to False; DeepSpeed
   * re-uses the output layer at once, within max_reuse_distance) */
  g->z3_root = coll_s(g, S_DP, "fsdp.ag.root", WL_COLL_ALLGATHER, R_DP, z3_root(g) * g->pb, -1);
  need(g, g->z3_root);
  if (impl == WL_DP_FSDP)
    for (int i = 0; i < 2 && i < count; i++)
      g->z3_ag[i] = fsdp_gather(g, first + i, -1, 0);
  else if (impl == WL_DP_FSDP2 && count > 0)
    g->z3_ag[0] = z3_gather(g, first, -1, 0);
  else if (impl == WL_DP_DEEPSPEED && count > 0)
    g->z3_ag[0] = ds_gather(g, first, -1, 0);
  if (vs == 0) {
    param_wait(g, c, ngr - 1);
    embed_fwd(g);
  }
  for (int i = first; i < first + count; i++) {
    int k = i - first, gi = (vs == last_vs) + 2 * (first + count - 1 - i);
    need(g, g->z3_ag[k]);
    if (impl == WL_DP_FSDP) {
      need(g, g->z3_fend[k]);
      layer_fwd(g, i, c, gi);
      /* the rate limiter (limit_all_gathers, two in flight): the hook of the
       * layer two ahead runs once this layer's forward has freed it */
      if (k + 2 < count)
        g->z3_ag[k + 2] = fsdp_gather(g, i + 2, g->last_c, 0);
    } else if (impl == WL_DP_FSDP2) {
      fsdp2_copy_out(g, i);
      /* implicit prefetch: the next layer's all-gather is issued as the CPU
       * runs ahead, once this layer's copy-out has freed the buffer */
      if (k + 1 < count)
        g->z3_ag[k + 1] = z3_gather(g, i + 1, g->last_c, 0);
      layer_fwd(g, i, c, gi);
    } else {
      /* DeepSpeed: the layer's hooks wait for the fetch two back (at most
       * two fetch events outstanding), then prefetch the next layer */
      long h = z3_host(g, "ds.hook", ds_host_s(g, i), k >= 2 ? g->z3_ag[k - 2] : -1);
      if (k + 1 < count)
        g->z3_ag[k + 1] = ds_gather(g, i + 1, h, 0);
      need(g, h);
      layer_fwd(g, i, c, gi);
    }
  }
  if (vs == last_vs) {
    param_wait(g, c, 0);
    output_fwd(g);
  }
}

static void unit_bwd_z3(gen *g, int c, int first, int count, int vs, int last_vs)
{
  const wl_layout *l = g->l;
  int impl = l->dp_impl, ngr = g->ngroups[c];
  g->z3_first = first;
  int top = first + count - 1;
  if (impl == WL_DP_FSDP)
    for (int i = 0; i < 2 && i < count; i++)
      g->z3_ag[count - 1 - i] = fsdp_gather(g, top - i, -1, 1);
  else if (impl == WL_DP_FSDP2 && count > 0)
    g->z3_ag[count - 1] = z3_gather(g, top, -1, 1);
  else if (impl == WL_DP_DEEPSPEED && count > 0)
    g->z3_ag[count - 1] = ds_kept(g, first, count, top) ? -1 : ds_gather(g, top, -1, 1);
  if (vs == last_vs) {
    output_bwd(g);
    group_done(g, c, 0);
  }
  for (int i = top; i >= first; i--) {
    int k = i - first, gi = (vs == last_vs) + 2 * (first + count - 1 - i);
    need(g, g->z3_ag[k]);
    if (impl == WL_DP_FSDP) {
      need(g, g->z3_fend[k]);
      layer_bwd(g, i, c, gi);
      /* post-backward: the gradient cast to reduce_dtype when it differs
       * from param_dtype (_reduce_grad), the reduce-scatter, then the hook
       * of the layer two below (BACKWARD_PRE with the rate limiter) */
      if (g->gb != g->pb)
        z3_copy(g, "fsdp.rs.cast", (z3_bytes(g, i, 0, 0) + z3_bytes(g, i, 0, 1)) / g->pb, g->pb,
                g->gb);
      dp_push(g, coll_s(g, S_DP, "fsdp.rs", WL_COLL_REDUCESCATTER, R_DP, z3_bytes(g, i, 1, 0), -1));
      dp_push(g, coll_s(g, S_DP, "fsdp.rs.expert", WL_COLL_REDUCESCATTER, R_DPX,
                        z3_bytes(g, i, 1, 1), -1));
      if (k - 2 >= 0)
        g->z3_ag[k - 2] = fsdp_gather(g, i - 2, g->last_c, 1);
    } else if (impl == WL_DP_FSDP2) {
      fsdp2_copy_out(g, i);
      /* explicit backward prefetch of one layer (the pre-backward hook) */
      if (k >= 1)
        g->z3_ag[k - 1] = z3_gather(g, i - 1, g->last_c, 1);
      layer_bwd(g, i, c, gi);
      /* foreach_reduce: the gradients copied into the reduce-scatter input
       * in reduce_dtype (chunk_cat), then the reduce-scatter */
      z3_copy(g, "fsdp2.rs.copy_in", (z3_bytes(g, i, 0, 0) + z3_bytes(g, i, 0, 1)) / g->pb, g->pb,
              g->gb);
      dp_push(g, coll_s(g, S_DP, "fsdp.rs", WL_COLL_REDUCESCATTER, R_DP, z3_bytes(g, i, 1, 0), -1));
      dp_push(g, coll_s(g, S_DP, "fsdp.rs.expert", WL_COLL_REDUCESCATTER, R_DPX,
                        z3_bytes(g, i, 1, 1), -1));
    } else {
      int k2 = k + 2 < count ? k + 2 : -1;
      long h = z3_host(g, "ds.hook.bwd", ds_host_s(g, i), k2 >= 0 ? g->z3_ag[k2] : -1);
      if (k >= 1)
        g->z3_ag[k - 1] = ds_kept(g, first, count, i - 1) ? -1 : ds_gather(g, i - 1, h, 1);
      need(g, h);
      layer_bwd(g, i, c, gi);
      wl__params lp;
      wl__layer_params(g->m, l->tp, l->etp, l->ep, i, &lp);
      ds_grad(g, lp.attn + lp.mlp, lp.expert);
    }
  }
  if (vs == 0) {
    embed_bwd(g);
    group_done(g, c, ngr - 1);
  }
  if (impl == WL_DP_DEEPSPEED) {
    ds_grad(g, z3_root(g), 0);
    ds_grad_flush(g);
  } else {
    dp_push(g, coll_s(g, S_DP, "fsdp.rs.root", WL_COLL_REDUCESCATTER, R_DP,
                      z3_root(g) * g->gb, -1));
  }
}

static void unit_fwd(gen *g, int c)
{
  const wl_layout *l = g->l;
  int first, count;
  wl__chunk_layers(l, g->m, g->stage, c, &first, &count);
  int vs = c * l->pp + g->stage, last_vs = l->pp * l->vpp - 1;
  if (l->zero == 3 && l->dp_impl != WL_DP_MEGATRON) {
    unit_fwd_z3(g, c, first, count, vs, last_vs);
    return;
  }
  int ngr = g->ngroups[c];
  if (l->zero == 3) {
    /* root unit (embedding, final norm, output) gathered once per micro-batch;
     * transformer layers gathered with at most two in flight (limit_all_gathers) */
    g->z3_root = coll_s(g, S_DP, "fsdp.ag.root", WL_COLL_ALLGATHER, R_DP, z3_root(g) * g->pb, -1);
    for (int i = 0; i < 2 && i < count; i++)
      g->z3_ag[i] = z3_gather(g, first + i, -1, 0);
    need(g, g->z3_root);
  }
  if (vs == 0) {
    param_wait(g, c, ngr - 1);
    embed_fwd(g);
  }
  for (int i = first; i < first + count; i++) {
    int gi = (vs == last_vs) + 2 * (first + count - 1 - i);
    if (l->zero == 3)
      need(g, g->z3_ag[i - first]);
    layer_fwd(g, i, c, gi);
    if (l->zero == 3 && i + 2 < first + count)
      g->z3_ag[i + 2 - first] = z3_gather(g, i + 2, g->last_c, 0);
  }
  if (vs == last_vs) {
    param_wait(g, c, 0);
    output_fwd(g);
  }
}

static void unit_bwd(gen *g, int c)
{
  const wl_layout *l = g->l;
  int first, count;
  wl__chunk_layers(l, g->m, g->stage, c, &first, &count);
  int vs = c * l->pp + g->stage, last_vs = l->pp * l->vpp - 1;
  if (l->zero == 3 && l->dp_impl != WL_DP_MEGATRON) {
    unit_bwd_z3(g, c, first, count, vs, last_vs);
    return;
  }
  int ngr = g->ngroups[c];
  long rs_prev = -1;
  if (l->zero == 3)
    for (int i = 0; i < 2 && i < count; i++)
      g->z3_ag[count - 1 - i] = z3_gather(g, first + count - 1 - i, -1, 1);
  if (vs == last_vs) {
    output_bwd(g);
    group_done(g, c, 0);
  }
  for (int i = first + count - 1; i >= first; i--) {
    int gi = (vs == last_vs) + 2 * (first + count - 1 - i);
    if (l->zero == 3)
      need(g, g->z3_ag[i - first]);
    layer_bwd(g, i, c, gi);
    if (l->zero == 3) {
      /* post-backward reduce-scatter of this layer's gradients; prefetch of
       * the layer two below (BACKWARD_PRE with the two-gather limit) */
      rs_prev = coll_s(g, S_DP, "fsdp.rs", WL_COLL_REDUCESCATTER, R_DP,
                       z3_bytes(g, i, 1, 0), -1);
      dp_push(g, rs_prev);
      dp_push(g, coll_s(g, S_DP, "fsdp.rs.expert", WL_COLL_REDUCESCATTER, R_DPX,
                        z3_bytes(g, i, 1, 1), -1));
      if (i - 2 >= first)
        g->z3_ag[i - 2 - first] = z3_gather(g, i - 2, g->last_c, 1);
    }
  }
  if (vs == 0) {
    embed_bwd(g);
    group_done(g, c, ngr - 1);
  }
  if (l->zero == 3)
    dp_push(g, coll_s(g, S_DP, "fsdp.rs.root", WL_COLL_REDUCESCATTER, R_DP,
                      z3_root(g) * g->gb, -1));
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
static double stage_norm_params(const gen *g)
{
  const wl_model *m = g->m;
  double norm = (m->layer_norm ? 2 : 1) * g->h, qk = m->qk_norm * 2.0 * m->head_dim;
  double per = g->l->sp ? m->norms_per_layer * norm + (m->out_bias + m->mlp_bias) * g->h + qk : qk;
  double n = per * wl_layout_stage_layers(g->l, m, g->stage);
  if (g->l->sp && g->stage == g->l->pp - 1)
    n += norm;
  return n;
}

static int emit_stage(gen *g, int s, st_err *err)
{
  const wl_layout *l = g->l;
  char pname[32];
  snprintf(pname, sizeof pname, "stage%d", s);
  int pi = wl_program_add(g->wl, pname, l->dp_impl != WL_DP_MEGATRON ? S_ALL : S_COUNT,
                          stream_names);
  if (pi < 0)
    return st_err_set(err, ST_ENOMEM, "out of memory generating program '%s'", pname);
  g->p = &g->wl->programs[pi];
  g->stage = s;
  g->npend = 0;
  g->last_c = -1;
  g->flags = 0;
  g->conv_model = g->conv_hw = 0;
  g->ndp_ops = 0;
  int v = l->vpp, p = l->pp;
  for (int c = 0; c < v; c++) {
    g->ngroups[c] = chunk_groups(g, c, &g->groups[c]);
    if (g->ngroups[c] < 0)
      return st_err_set(err, ST_ENOMEM, "out of memory generating program '%s'", pname);
  }
  g->phase = WL_PHASE_FORWARD;
  marker(g, WL_MARK_ITERATION, 0);

  /* distributed optimizer with overlap_param_gather: the previous step's
   * parameter all-gathers, per bucket in forward order, waited on by the
   * first forward of each bucket's layers */
  if ((l->zero == 1 || l->zero == 2) && l->overlap_param_gather) {
    for (int c = 0; c < v; c++) {
      dp_group *gr = g->groups[c];
      int n = g->ngroups[c];
      /* buckets in backward order end at closing groups; gather them from the
       * last (first in forward order) */
      int end_d = n - 1, end_x = n - 1;
      for (int gi = n - 1; gi >= 0; gi--) {
        if (gi == 0 || gr[gi - 1].close_dense) {
          double bytes = 0;
          for (int k = gi; k <= end_d; k++)
            bytes += gr[k].dense;
          long op = coll_s(g, S_DP, "dp.param.ag", WL_COLL_ALLGATHER, R_DP, bytes * g->pb, -1);
          for (int k = gi; k <= end_d; k++)
            gr[k].ag_dense = op;
          end_d = gi - 1;
        }
        if (gi == 0 || gr[gi - 1].close_expert) {
          double bytes = 0;
          for (int k = gi; k <= end_x; k++)
            bytes += gr[k].expert;
          long op = coll_s(g, S_DP, "dp_expert.param.ag", WL_COLL_ALLGATHER, R_DPX,
                           bytes * g->pb, -1);
          for (int k = gi; k <= end_x; k++)
            gr[k].ag_expert = op;
          end_x = gi - 1;
        }
      }
    }
  }

  int nu = 0;
  wl__unit *u = wl__schedule(l, s, &nu);
  if (!u)
    return st_err_set(err, ST_ENOMEM, "out of memory generating program '%s'", pname);
  int last_vs = p * v - 1;
  double act = g->Tsp * g->h * g->ab; /* p2p tensor: [s/cp(/tp with SP), b, h] */
  long prev_send = -1;
  for (int k = 0; k < nu; k++) {
    int c = u[k].chunk, mb = u[k].mb, vs = c * p + s;
    int fwd = u[k].fwd;
    g->phase = fwd ? WL_PHASE_FORWARD : WL_PHASE_BACKWARD;
    /* this unit's input */
    if (fwd && vs > 0)
      need(g, p2p(g, S_PPR, WL_OP_RECV, R_PPP, 0, pp_tag(l, mb, vs, 0), act, "pp.recv.act", -1));
    if (!fwd && vs < last_vs)
      need(g, p2p(g, S_PPR, WL_OP_RECV, R_PPN, 1, pp_tag(l, mb, vs, 1), act, "pp.recv.grad", -1));
    /* 1F1B/GPipe: Megatron waits for the send too; interleaved: the sends
     * overlap (combined/overlapped p2p), or the ring of stages would wait on
     * itself */
    if (l->schedule != WL_SCHED_INTERLEAVED)
      need(g, prev_send);
    marker(g, WL_MARK_MICROBATCH, mb);
    if (fwd) {
      int first_fwd = 1;
      for (int j = 0; j < k; j++)
        if (u[j].fwd && u[j].chunk == c)
          first_fwd = 0;
      g->param_wait = first_fwd && (l->zero == 1 || l->zero == 2) && l->overlap_param_gather;
      unit_fwd(g, c);
      g->param_wait = 0;
      prev_send = vs < last_vs ? p2p(g, S_PPS, WL_OP_SEND, R_PPN, 1, pp_tag(l, mb, vs + 1, 0),
                                     act, "pp.send.act", -1)
                               : -1;
    } else {
      int last_bwd = 1;
      for (int j = k + 1; j < nu; j++)
        if (!u[j].fwd && u[j].chunk == c)
          last_bwd = 0;
      g->grad_sync = last_bwd;
      unit_bwd(g, c);
      g->grad_sync = 0;
      prev_send = vs > 0 ? p2p(g, S_PPS, WL_OP_SEND, R_PPP, 0, pp_tag(l, mb, vs - 1, 1), act,
                               "pp.send.grad", -1)
                         : -1;
    }
  }
  free(u);
  need(g, prev_send);

  /* finalize_model_grads: DP reduction, SP norm all-reduce, tied embeddings */
  g->phase = WL_PHASE_BACKWARD;
  if (l->zero == 3 || l->overlap_grad_reduce) {
    for (size_t i = 0; i < g->ndp_ops; i++)
      need(g, g->dp_ops[i]);
  } else {
    for (int c = 0; c < v; c++) {
      double d = 0, x = 0;
      for (int gi = 0; gi < g->ngroups[c]; gi++) {
        d += g->groups[c][gi].dense;
        x += g->groups[c][gi].expert;
      }
      grad_reduce(g, S_COMPUTE, d, x);
    }
  }
  /* DeepSpeed stage 3 step(): the fp16 overflow flag (has_overflow, an
   * all-reduce MAX) and the global gradient norm, each one float over dp */
  if (l->zero == 3 && l->dp_impl == WL_DP_DEEPSPEED) {
    if (l->dtype == WL_DTYPE_FP16)
      coll_c(g, "ds.overflow.ar", WL_COLL_ALLREDUCE, R_DP, 4);
    coll_c(g, "ds.grad_norm.ar", WL_COLL_ALLREDUCE, R_DP, 4);
  }
  if (l->sp || (g->m->qk_norm && l->tp > 1))
    coll_c(g, "tp.norm.grad.ar", WL_COLL_ALLREDUCE, R_TP, stage_norm_params(g) * g->gb);
  if (g->m->tie_embeddings && p > 1 && (s == 0 || s == p - 1))
    coll_c(g, "embd.grad.ar", WL_COLL_ALLREDUCE, R_EMBD,
           (double)wl__vocab_padded(g->m, l->tp) / l->tp * g->h * g->gb);

  /* optimizer step over this rank's shard, then (distributed optimizer
   * without overlap) the parameter all-gather */
  g->phase = WL_PHASE_OPTIMIZER;
  double dense = 0, expert = 0;
  for (int c = 0; c < v; c++)
    for (int gi = 0; gi < g->ngroups[c]; gi++) {
      dense += g->groups[c][gi].dense;
      expert += g->groups[c][gi].expert;
    }
  double shard = l->zero >= 1 ? dense / g->dp_size + expert / g->edp_size : dense + expert;
  wl_op op = wl_op_compute(S_COMPUTE, -1);
  op.sub = WL_CLASS_OPTIMIZER;
  op.dtype = WL_DTYPE_FP32;
  op.flops = 12 * shard;
  /* read grad, read+write fp32 master, m, v; write the model-dtype weight */
  op.bytes = shard * (g->gb + 24 + g->pb);
  op.name = nm(g, "optimizer.adam");
  put_c(g, op);
  if ((l->zero == 1 || l->zero == 2) && !l->overlap_param_gather) {
    for (int c = 0; c < v; c++) {
      double d = 0, x = 0;
      for (int gi = 0; gi < g->ngroups[c]; gi++) {
        d += g->groups[c][gi].dense;
        x += g->groups[c][gi].expert;
      }
      coll_c(g, "dp.param.ag", WL_COLL_ALLGATHER, R_DP, d * g->pb);
      coll_c(g, "dp_expert.param.ag", WL_COLL_ALLGATHER, R_DPX, x * g->pb);
    }
  }
  for (int c = 0; c < v; c++) {
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
  gen g;
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
  for (int s = 0; s < l->pp; s++) {
    if ((rc = emit_stage(&g, s, err)) != ST_OK) {
      if (rc == ST_EINPUT)
        st_err_prefix(err, "model '%s': ", m->name);
      goto fail;
    }
    model_flops += g.conv_model * ranks_per_stage;
    hw_flops += g.conv_hw * ranks_per_stage;
  }
  for (int r = 0; r < l->num_gpus; r++)
    wl_rank_set(wl, r, r / ranks_per_stage);

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
