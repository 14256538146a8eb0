/* wl_gen_emit.c — the generator's ops: the emission helpers (streams,
 * waits, GEMMs, elementwise ops, collectives, point-to-point) and the
 * tensor-parallel linear layers (column / row parallel, sequence parallel,
 * tp_overlap's chunked rings).  wl_gen.c has the streams and the plan. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_emit_int.h"
#include "workload.h"

/* ---- emission helpers ------------------------------------------------------ */
long wl__put(wl__gen *g, wl_op op, const uint32_t *w, int nw)
{
  op.phase = (uint8_t)g->phase;
  long i = wl_program_append(g->p, &op, w, (uint32_t)nw);
  if (i < 0)
    g->oom = 1;
  return i;
}

void wl__need(wl__gen *g, long op)
{
  if (op < 0)
    return;
  for (int i = 0; i < g->npend; i++)
    if (g->pend[i] == (uint32_t)op)
      return;
  if (g->npend < MAXPEND)
    g->pend[g->npend++] = (uint32_t)op;
}

/* An op on the compute stream: takes the pending waits.  (moe_a2a_overlap:
 * the parts after an all-to-all that Megatron runs on the communication
 * stream go on the "ep" stream instead, g->on_ep.) */
long wl__put_c(wl__gen *g, wl_op op)
{
  op.stream = g->on_ep ? S_EP : S_COMPUTE;
  long i = wl__put(g, op, g->pend, g->npend);
  g->npend = 0;
  if (i >= 0 && g->on_ep)
    g->part_a2a = i;
  else if (i >= 0)
    g->last_c = i;
  return i;
}

/* An op on another stream, issued after the last compute op (and an extra op). */
static long put_s(wl__gen *g, wl_op op, int stream, long extra)
{
  uint32_t w[2];
  int n = 0;
  if (g->last_c >= 0)
    w[n++] = (uint32_t)g->last_c;
  if (extra >= 0 && extra != g->last_c)
    w[n++] = (uint32_t)extra;
  op.stream = (uint16_t)stream;
  return wl__put(g, op, w, n);
}

void wl__marker(wl__gen *g, int kind, int value)
{
  wl_op op = wl_op_marker(S_COMPUTE, kind, value);
  wl__put(g, op, NULL, 0);
}

uint32_t wl__nm(wl__gen *g, const char *s)
{
  if (!s || !*s)
    return 0; /* no name, as wl_program_string has it */
  uint32_t h = 2166136261u; /* FNV-1a */
  for (const unsigned char *c = (const unsigned char *)s; *c; c++)
    h = (h ^ *c) * 16777619u;
  unsigned i = h % WL__NM_SLOTS;
  if (g->nm_off[i] && g->nm_hash[i] == h && !strcmp(g->p->strings + g->nm_off[i], s))
    return g->nm_off[i];
  uint32_t off = wl_program_string(g->p, s);
  g->nm_off[i] = off;
  g->nm_hash[i] = h;
  return off;
}

/* A GEMM dimension as the int32 the op stores: one that does not fit (a qkv
 * width above 2^31 once wrapped to a small positive n) is recorded in g->bad
 * and the program fails, never written wrapped. */
int32_t wl__i32(wl__gen *g, const char *op, const char *key, double x)
{
  if (!g->bad[0]) {
    st_err e;
    if (st_num_check(x, ST_NUM_REAL, 0, ST_INT32_MAX, &e, "op '%s': '%s'", op, key))
      snprintf(g->bad, sizeof g->bad, "%s", e.msg);
  }
  return g->bad[0] ? 0 : (int32_t)llround(x);
}

/* A byte count of a generated op: at most ST_BYTES_MAX, like any read one. */
static double bytes_ok(wl__gen *g, const char *op, double bytes)
{
  st_err e;
  if (!g->bad[0] && st_num_check(bytes, ST_NUM_REAL, 0, ST_BYTES_MAX, &e, "op '%s': 'bytes'", op))
    snprintf(g->bad, sizeof g->bad, "%s", e.msg);
  return bytes;
}

/* Transformer Engine's fp8 casts around a linear layer's GEMM (delayed
 * scaling: fp8_cast_transpose_fused, bf16 read, fp8 and its transpose
 * written, 2 + 1 + 1 bytes an element; current scaling, fp8_recipe=current:
 * a pass for the tensor's amax first, read 2 more, 6 in all, and where a
 * norm or an activation would cast its own output (below) it writes bf16
 * with the amax (Float8CurrentScalingQuantizer's FUSED_NORM_AMAX_FP8 and
 * FUSED_ACTIVATION_AMAX_FP8 in transformer_engine/pytorch/csrc), then the
 * cast reads it back: 4 bytes an element more than delayed scaling's fused
 * cast).  Forward, the GEMM's input (M x K)
 * and weight (K x N); dgrad, the output gradient (the dgrad GEMM's M x K);
 * wgrad runs on the transposes, the other matmuls (WL__MM) cast nothing.
 * A standalone te.Linear (module/linear.py, as the PyTorch frameworks use
 * it) casts all three itself, the weight in every forward.  Megatron-core's
 * modules (te_modules) cache the fp8 weight across micro-batches
 * (is_first_microbatch; the one cast a step is not priced), cast the input
 * inside the norm of a LayerNormLinear / LayerNormMLP and the activation of a
 * LayerNormMLP, and fc1's output gradient inside the activation's backward
 * (WL__TE_IN, WL__TE_DY); the rest are kernels of their own.  WL__TE_W: a
 * later chunk of a split GEMM, whose weight the first chunk cast. */
static void fp8_casts(wl__gen *g, const char *name, int pass, unsigned te, double M, double N,
                      double K, double batch)
{
  if (g->gemm_dtype != WL_DTYPE_FP8 || pass == WL__MM || pass == WL__WGRAD)
    return;
  double elems = 0, fused = 0; /* standalone casts; casts a producer would fuse */
  if (pass == WL__FWD) {
    if (!(g->te_modules && (te & WL__TE_IN)))
      elems += M * K;
    else
      fused += M * K;
    if (!g->te_modules && !(te & WL__TE_W))
      elems += K * N;
  } else if (!(g->te_modules && (te & WL__TE_DY)))
    elems += M * K;
  else
    fused += M * K;
  int current = g->l->fp8_recipe == WL_FP8_CURRENT;
  if (!current)
    fused = 0; /* delayed scaling: the producer writes fp8 itself */
  double bytes = elems * (current ? 6 : 4) + fused * 4;
  if (bytes <= 0)
    return;
  char nm[40];
  snprintf(nm, sizeof nm, "%.31s.fp8", name);
  wl__elem(g, nm, (elems + fused) * batch, bytes / ((elems + fused) * g->ab), current ? 2 : 1);
}

long wl__gemm(wl__gen *g, const char *name, int pass, unsigned te, double M, double N, double K,
              double batch, double conv_scale)
{
  if (pass == WL__WGRAD && g->defer_wgrad &&
      g->ndefer < (int)(sizeof g->defer / sizeof g->defer[0])) {
    g->defer[g->ndefer++] = (struct wl__wgrad){name, te, M, N, K, batch, conv_scale,
                                               g->gemm_dtype, g->flags};
    return -1;
  }
  fp8_casts(g, name, pass, te, M, N, K, batch);
  wl_op op = wl_op_compute(S_COMPUTE, -1);
  op.sub = WL_CLASS_GEMM;
  op.dtype = (uint8_t)g->gemm_dtype;
  op.flags = g->flags;
  if (!g->te_modules)
    op.flags |= WL_OPF_TORCH; /* torch's GEMMs, not Transformer Engine's */
  op.m = wl__i32(g, name, "m", M);
  op.n = wl__i32(g, name, "n", N);
  op.k = wl__i32(g, name, "k", K);
  op.batch = wl__i32(g, name, "batch", batch);
  op.flops = 2 * M * N * K * batch;
  double in = wl_dtype_bytes(g->gemm_dtype);
  op.bytes = bytes_ok(g, name, ((M * K + K * N) * in + M * N * g->ab) * batch);
  op.name = wl__nm(g, name);
  double conv = op.flops * conv_scale;
  g->conv_hw += conv;
  if (!(g->flags & WL_OPF_RECOMPUTE))
    g->conv_model += conv;
  return wl__put_c(g, op);
}

void wl__flush_wgrad(wl__gen *g)
{
  int d = g->gemm_dtype;
  uint16_t f = g->flags;
  for (int i = 0; i < g->ndefer; i++) {
    const struct wl__wgrad *w = &g->defer[i];
    g->gemm_dtype = w->dtype;
    g->flags = w->flags;
    wl__gemm(g, w->name, WL__WGRAD, w->te, w->M, w->N, w->K, w->batch, w->scale);
  }
  g->gemm_dtype = d;
  g->flags = f;
  g->ndefer = 0;
  if (g->defer_gi >= 0)
    wl__group_done(g, g->defer_c, g->defer_gi);
  g->defer_gi = -1;
}

/* Memory-bound op over `elems` elements, touching rw x elems values. */
long wl__elem(wl__gen *g, const char *name, double elems, double rw, double flops_per)
{
  wl_op op = wl_op_compute(S_COMPUTE, -1);
  op.sub = WL_CLASS_ELEMENTWISE;
  op.dtype = WL_DTYPE_BF16;
  op.flags = g->flags;
  op.flops = elems * flops_per;
  op.bytes = elems * rw * g->ab;
  op.name = wl__nm(g, name);
  return wl__put_c(g, op);
}

int wl__role_size(const wl__gen *g, int role)
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
long wl__coll_s(wl__gen *g, int stream, const char *name, int coll, int role, double bytes,
                long extra)
{
  if (wl__role_size(g, role) < 2 || bytes <= 0)
    return -1;
  wl_op op = wl_op_coll(stream, coll, role, bytes);
  op.name = wl__nm(g, name);
  return put_s(g, op, stream, extra);
}

/* A collective that blocks compute: on the compute stream; with tp_overlap a
 * TP one goes on the "tp" stream (every TP collective of the rank on one
 * stream, in issue order) and the next compute op waits for it. */
long wl__coll_c(wl__gen *g, const char *name, int coll, int role, double bytes)
{
  if (wl__role_size(g, role) < 2 || bytes <= 0)
    return -1;
  if (role == R_TP && g->l->tp_overlap) {
    long i = wl__coll_s(g, S_TP, name, coll, role, bytes, -1);
    wl__need(g, i);
    return i;
  }
  wl_op op = wl_op_coll(S_COMPUTE, coll, role, bytes);
  op.name = wl__nm(g, name);
  return wl__put_c(g, op);
}

/* ---- tensor-parallel linear layers ------------------------------------------ */

/* The PyTorch frameworks' sequence parallelism (DTensor, torchtitan's plan)
 * shards [b, s, h] activations on dim 1, the sequence, where Megatron's
 * [s, b, h] shards dim 0.  NCCL gathers and scatters along dim 0, so
 * torch's functional collectives re-lay the tensor around each one
 * (_functional_collectives.py: all_gather_tensor with gather_dim != 0 ends
 * in torch.cat(torch.chunk(res, group_size, dim=0), dim=gather_dim);
 * reduce_scatter_tensor with scatter_dim != 0 starts with
 * torch.cat(torch.chunk(self, group_size, dim=scatter_dim))): a copy of the
 * whole [T, h] tensor, read and written.  AsyncTP's fused ops (tp_overlap
 * under these frameworks) read the shards in place instead. */
static int sp_dim1(const wl__gen *g)
{
  const wl_layout *l = g->l;
  return l->sp && l->tp > 1 && l->dp_impl != WL_DP_MEGATRON && !l->tp_overlap;
}

void wl__sp_cat(wl__gen *g, const char *name)
{
  if (sp_dim1(g))
    wl__elem(g, name, g->T * g->h, 2, 0);
}

/* The SP all-gather of a [T, h] tensor of `elem` bytes an element. */
static void tp_gather(wl__gen *g, const char *name, double elem)
{
  if (g->l->sp) {
    wl__coll_c(g, name, WL_COLL_ALLGATHER, R_TP, g->T * g->h * elem);
    wl__sp_cat(g, "tp.ag.cat");
  }
}

/* Enter a TP region (Megatron's copy_to / gather_from_sequence_parallel_region). */
void wl__tp_enter(wl__gen *g, const char *name) { tp_gather(g, name, g->ab); }

/* Bytes an element of a linear layer's input or output gradient carries in
 * its sequence-parallel all-gather: fp8 under Megatron-core's Transformer
 * Engine modules in fp8, which quantize before they gather (distributed.py
 * _all_gather_fp8, delayed and current scaling alike; the transpose is made
 * from the gathered tensor), else the model dtype.  The output layer, not a
 * TE module, gathers in the model dtype (its GEMMs run with gemm_dtype so). */
static double sp_ag_elem(const wl__gen *g)
{
  return g->te_modules && g->gemm_dtype == WL_DTYPE_FP8 ? 1 : g->ab;
}

/* A TP region's entry whose all-gather feeds a linear layer. */
static void tp_enter_linear(wl__gen *g, const char *name) { tp_gather(g, name, sp_ag_elem(g)); }

/* Leave it after a row-parallel GEMM (reduce_from / reduce_scatter_to). */
static void tp_exit(wl__gen *g, const char *name)
{
  wl__sp_cat(g, "tp.rs.cat");
  wl__coll_c(g, name, g->l->sp ? WL_COLL_REDUCESCATTER : WL_COLL_ALLREDUCE, R_TP,
             g->T * g->h * g->ab);
}

void wl__col_fwd(wl__gen *g, const wl__col_gemm *c, int n)
{
  for (int i = 0; i < n; i++)
    wl__gemm(g, c[i].fwd, WL__FWD, c[i].te, g->T, c[i].N, c[i].K, 1, c[i].scale);
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
static long ag_ring(wl__gen *g, const char *name)
{
  int t = g->l->tp;
  double shard = g->T * g->h * sp_ag_elem(g) / t;
  long first = -1;
  for (int j = 0; j < t - 1; j++) {
    long i = wl__coll_s(g, S_TP, name, WL_COLL_SHIFT, R_TP, shard, -1);
    if (j == 0)
      first = i;
  }
  return first;
}

/* Before GEMM chunk i of k fed by a ring exchange (ag_ring: first step r):
 * chunk 0 runs on the local shard, chunk i after step i - 1 (the last chunk
 * after the last step: the gathered buffer is complete). */
static void ag_ring_chunk_wait(wl__gen *g, long r, int i)
{
  if (i > 0 && r >= 0)
    wl__need(g, r + (i - 1));
}

#define TE_PIPELINE_SPLITS 4
/* Transformer Engine issues the chunk GEMMs of its comm-overlap methods
 * round-robin on num_max_streams = 3 compute streams (comm_gemm_overlap:
 * _stream_compute[i % num_max_streams]): while one chunk runs its last,
 * partial wave the next two are already queued, so the SMs see one stream of
 * tiles over the k chunks and the waves quantise over all of them, not per
 * chunk (the chunks still wait for their shards; only the cost is shared). */

/* torchtitan's AsyncTP (tp_overlap under the PyTorch frameworks):
 * SymmetricMemory's fused ops (torch/distributed/_symmetric_memory:
 * _pipelined_all_gather_and_consume, _pipelined_produce_and_all2all) run
 * the per-shard matmuls alternately on the current stream and one backend
 * stream, so at most two chunks share the SMs' waves; the matmul +
 * reduce-scatter makes one chunk per rank (tp steps) and ends in a sum of
 * the tp partial chunks received (reduce_fn over stacked_partials). */
static int async_tp(const wl__gen *g)
{
  return g->l->tp_overlap && g->l->dp_impl != WL_DP_MEGATRON;
}
#define ASYNC_TP_STREAMS 2

/* Emit GEMM chunk of a k-way comm-overlap split. */
static long gemm_chunk(wl__gen *g, const char *name, int pass, unsigned te, double M, double N,
                       double K, double scale, int k)
{
  long i = wl__gemm(g, name, pass, te, M, N, K, 1, scale);
  int c = async_tp(g) && k > ASYNC_TP_STREAMS ? ASYNC_TP_STREAMS : k;
  if (i >= 0)
    g->p->ops[i].concurrent = (uint8_t)(c < 255 ? c : 255);
  return i;
}

/* SP all-gather of the input, then column-parallel GEMMs over [T, h]. */
void wl__col_fwd_sp(wl__gen *g, const wl__col_gemm *c, int n, const char *ag_name)
{
  if (!g->l->tp_overlap) {
    tp_enter_linear(g, ag_name);
    wl__col_fwd(g, c, n);
    return;
  }
  int k = g->l->tp;
  long r = ag_ring(g, ag_name);
  for (int i = 0; i < k; i++) {
    ag_ring_chunk_wait(g, r, i);
    for (int j = 0; j < n; j++)
      gemm_chunk(g, c[j].fwd, WL__FWD, c[j].te | (i ? WL__TE_W : 0), g->T / k, c[j].N, c[j].K,
                 c[j].scale, k);
  }
}

/* Backward of a column-parallel block fed by one [T, h] input: dgrad, then
 * the TP reduction of the input gradient overlapped with wgrad; with SP the
 * input is all-gathered again for wgrad (Megatron's async TP communication).
 * tp_async=0 (Megatron-LM before September 2021): autograd runs the linear's
 * whole backward, dgrad and wgrad, and then _CopyToModelParallelRegion's
 * backward all-reduces the input gradient, blocking. */
void wl__col_bwd(wl__gen *g, const wl__col_gemm *c, int n, const char *ag_name,
                 const char *red_name)
{
  double bytes = g->T * g->h * g->ab;
  int tp = g->l->tp > 1;
  long ag = -1;
  if (tp && g->l->sp)
    ag = wl__coll_s(g, S_TP, ag_name, WL_COLL_ALLGATHER, R_TP, g->T * g->h * sp_ag_elem(g), -1);
  for (int i = n - 1; i >= 0; i--)
    wl__gemm(g, c[i].dgrad, WL__DGRAD, c[i].te, g->T, c[i].K, c[i].N, 1, c[i].scale);
  long red = -1;
  if (tp && g->l->sp)
    wl__sp_cat(g, "tp.rs.cat"); /* the input gradient re-laid for its reduce-scatter */
  if (tp && g->l->tp_async)
    red = wl__coll_s(g, S_TP, red_name, g->l->sp ? WL_COLL_REDUCESCATTER : WL_COLL_ALLREDUCE, R_TP,
                     bytes, -1);
  wl__need(g, ag);
  for (int i = n - 1; i >= 0; i--)
    wl__gemm(g, c[i].wgrad, WL__WGRAD, 0, c[i].K, c[i].N, g->T, 1, c[i].scale);
  if (tp && !g->l->tp_async) /* blocking, after wgrad (resolution refuses it with sp) */
    wl__coll_c(g, red_name, WL_COLL_ALLREDUCE, R_TP, bytes);
  wl__need(g, red);
}

/* Row-parallel GEMM [T, K/tp] x [K/tp, h]: forward, and backward (SP: the
 * output gradient is all-gathered first, the backward of reduce-scatter). */
void wl__row_fwd(wl__gen *g, const char *name, unsigned te, double Kloc, const char *red_name)
{
  if (!g->l->tp_overlap) {
    wl__gemm(g, name, WL__FWD, te, g->T, g->h, Kloc, 1, 1);
    tp_exit(g, red_name);
    return;
  }
  /* tp_overlap: k GEMM chunks of T/k rows, the reduce-scatter of chunk i on
   * the "tp" stream as soon as GEMM chunk i is done (pipelined); the next
   * compute op waits for the last one, so only its transfer is exposed.
   * k = 4: Transformer Engine's "pipeline" method splits in 4 by default
   * (initialize_ub: num_splits = 4 for pipeline, tp for ring_exchange). */
  int k = async_tp(g) ? g->l->tp : TE_PIPELINE_SPLITS;
  long rs = -1;
  for (int i = 0; i < k; i++) {
    gemm_chunk(g, name, WL__FWD, te | (i ? WL__TE_W : 0), g->T / k, g->h, Kloc, 1, k);
    rs = wl__coll_s(g, S_TP, red_name, WL_COLL_REDUCESCATTER, R_TP, g->T * g->h * g->ab / k, -1);
  }
  wl__need(g, rs);
  /* AsyncTP: the sum of the tp partial chunks, [T, h] read and [T/tp, h] written */
  if (async_tp(g))
    wl__elem(g, "tp.rs.sum", g->T * g->h, 1 + 1.0 / g->l->tp, 1.0 / g->l->tp);
}

void wl__row_bwd(wl__gen *g, const char *dgrad, const char *wgrad, unsigned te, double Kloc,
                 const char *ag_name)
{
  if (!g->l->tp_overlap) {
    tp_enter_linear(g, ag_name);
    wl__gemm(g, dgrad, WL__DGRAD, te, g->T, Kloc, g->h, 1, 1);
  } else {
    /* tp_overlap: the output gradient's all-gather as a ring exchange
     * (ag_ring), dgrad chunk i on the shard received in step i - 1; wgrad
     * needs all of it and follows the last dgrad chunk */
    int k = g->l->tp;
    long r = ag_ring(g, ag_name);
    for (int i = 0; i < k; i++) {
      ag_ring_chunk_wait(g, r, i);
      gemm_chunk(g, dgrad, WL__DGRAD, te, g->T / k, Kloc, g->h, 1, k);
    }
  }
  wl__gemm(g, wgrad, WL__WGRAD, 0, Kloc, g->h, g->T, 1, 1);
}

long wl__p2p(wl__gen *g, int stream, int kind, int role, int peer, int tag, double bytes,
             const char *name, long extra)
{
  wl_op op = wl_op_p2p(stream, kind, role, peer, tag, bytes);
  op.name = wl__nm(g, name);
  return put_s(g, op, stream, extra);
}
