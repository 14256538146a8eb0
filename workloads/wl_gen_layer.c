/* wl_gen_layer.c — the generator's model pieces: attention (fused or not,
 * the context-parallel ring), the MLP and the MoE layer, one transformer
 * layer forward and backward, the embedding and the output layer.
 * docs/workloads.md has every formula and its source. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_emit_int.h"
#include "workload.h"

/* ---- attention ----------------------------------------------------------------- */
static void attn_dims(const wl__gen *g, double *a_loc, double *kv_loc, double *dqk, double *dv)
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

static int attn_proj(const wl__gen *g, wl__col_gemm *c)
{
  const wl_model *m = g->m;
  double a = m->heads, t = g->t, h = g->h;
  if (m->has_mla) {
    const wl_mla *q = &m->mla;
    double qk = q->qk_nope_head_dim + q->qk_rope_head_dim;
    if (!q->q_lora_rank) { /* queries projected directly, column-parallel (DeepSeek-V2-Lite) */
      c[0] = (wl__col_gemm){"q", "q.dgrad", "q.wgrad", a * qk / t, h, 1, 0};
      c[1] = (wl__col_gemm){
          "kv_down", "kv_down.dgrad", "kv_down.wgrad", q->kv_lora_rank + q->qk_rope_head_dim, h,
          1 / t,     0};
      c[2] = (wl__col_gemm){"kv_up",         "kv_up.dgrad",
                            "kv_up.wgrad",   a * (q->qk_nope_head_dim + q->v_head_dim) / t,
                            q->kv_lora_rank, 1,
                            WL__TE_IN};
      return 3;
    }
    c[0] = (wl__col_gemm){"q_down", "q_down.dgrad", "q_down.wgrad", q->q_lora_rank, h, 1 / t, 0};
    c[1] = (wl__col_gemm){
        "kv_down", "kv_down.dgrad", "kv_down.wgrad", q->kv_lora_rank + q->qk_rope_head_dim, h,
        1 / t,     0};
    c[2] = (wl__col_gemm){"q_up", "q_up.dgrad", "q_up.wgrad", a * qk / t, q->q_lora_rank, 1,
                          WL__TE_IN};
    c[3] = (wl__col_gemm){"kv_up",         "kv_up.dgrad",
                          "kv_up.wgrad",   a * (q->qk_nope_head_dim + q->v_head_dim) / t,
                          q->kv_lora_rank, 1,
                          WL__TE_IN};
    return 4;
  }
  double d = m->head_dim;
  c[0] = (wl__col_gemm){"qkv",        "qkv.dgrad", "qkv.wgrad", (a + 2.0 * m->kv_heads) * d / t,
                        h,            1,           WL__TE_IN};
  return 1;
}

/* The residual add after attention and after the MLP (Megatron's fused
 * bias-dropout-add): read the branch and the residual, write the sum; with
 * hidden dropout (layout key dropout) forward also writes the branch's mask,
 * one byte a value, and backward reads it. */
static void residual(wl__gen *g, const char *name, double elems, int bwd)
{
  double rw = 3 + (g->l->dropout > 0 ? 1 / g->ab : 0);
  wl__elem(g, name, elems, rw, bwd ? 1 : 2);
}

/* ---- eager PyTorch's elementwise kernels (layout key eager) ---------------------
 * Without torch.compile a Llama-style block runs its elementwise work as the
 * separate kernels of its Python code (torchtitan models/llama: RMSNorm
 * `_norm(x.float()).type_as(x) * weight`, apply_rotary_emb through
 * complex64, repeat_kv's expand + reshape, `silu(w1(x)) * w3(x)`), and
 * autograd runs each one's backward.  A kernel's bytes per element are
 * na activation values (g->ab bytes) and nf fp32 values read or written. */
typedef struct {
  const char *sfx;
  double na, nf;
} eager_k;

static const char *nm2(char *buf, const char *pre, const char *suffix);

static void eager_ops(wl__gen *g, const char *pre, double elems, const eager_k *k, int n)
{
  char nm[32];
  for (int i = 0; i < n; i++)
    wl__elem(g, nm2(nm, pre, k[i].sfx), elems, k[i].na + k[i].nf * 4 / g->ab, 1);
}

/* Is this RMSNorm run as eager PyTorch's kernels? (LayerNorm is one kernel
 * in eager PyTorch too: F.layer_norm.) */
static int eager_rms(const wl__gen *g) { return g->l->eager && !g->m->layer_norm; }

/* RMSNorm forward: x.float() (read a, write 4 B), pow(2) (8), mean (4), times
 * the row's rsqrt (8), type_as (4 + a), times the weight (2a): 36 B an element
 * in bf16.  Backward, autograd's order: the weight's product (2a) and its
 * gradient (3a, summed: a), type_as (a + 4), the rsqrt product (8) and its
 * gradient (12, summed: 4), mean's expand (4), pow's (12), the two gradients
 * of x.float() added (12), the cast back (4 + a): 76 B.  The fused kernel
 * the model otherwise prices moves 2a forward, 3a backward. */
static void norm_fwd(wl__gen *g, const char *name, double elems)
{
  static const eager_k k[] = {{".f32", 1, 1}, {".pow", 0, 2}, {".mean", 0, 1},
                              {".rsqrt", 0, 2}, {".to", 1, 1}, {".w", 2, 0}};
  if (eager_rms(g))
    eager_ops(g, name, elems, k, 6);
  else
    wl__elem(g, name, elems, 2, 5);
}

static void norm_bwd(wl__gen *g, const char *name, double elems)
{
  static const eager_k k[] = {{".w", 2, 0},   {".w.gw", 3, 0},  {".w.gsum", 1, 0},
                              {".to", 1, 1},  {".r", 0, 2},     {".r.gx", 0, 3},
                              {".r.gsum", 0, 1}, {".mean", 0, 1}, {".pow", 0, 3},
                              {".acc", 0, 3}, {".f32", 1, 1}};
  if (eager_rms(g))
    eager_ops(g, name, elems, k, 11);
  else
    wl__elem(g, name, elems, 3, 8);
}

/* Rotary embedding of the queries and keys, eager: each through complex64,
 * x.float() (a + 4), the complex product (8), type_as (4 + a), and the same
 * three backward.  Fused rotary kernels are not priced (a few percent of a
 * layer's elementwise bytes). */
static void rope(wl__gen *g, int bwd)
{
  static const eager_k f[] = {{".f32", 1, 1}, {".mul", 0, 2}, {".to", 1, 1}};
  if (!g->l->eager || g->m->positions || g->m->has_mla)
    return;
  double q = g->T * (double)g->m->heads / g->t * g->m->head_dim;
  double k = g->T * (double)g->m->kv_heads / g->t * g->m->head_dim;
  eager_ops(g, bwd ? "rope.q.bwd" : "rope.q", q, f, 3);
  eager_ops(g, bwd ? "rope.k.bwd" : "rope.k", k, f, 3);
}

/* GQA's repeat_kv, eager: keys and values expanded to every query head and
 * copied (read the kv heads, write the query heads); backward sums them
 * back.  Per output element 1 + kv/heads values. */
static void repeat_kv(wl__gen *g, int bwd)
{
  const wl_model *m = g->m;
  if (!g->l->eager || m->has_mla || m->kv_heads >= m->heads)
    return;
  double out = g->T * (double)m->heads / g->t * m->head_dim;
  double rw = 1 + (double)m->kv_heads / m->heads;
  wl__elem(g, bwd ? "repeat_k.bwd" : "repeat_k", out, rw, 0);
  wl__elem(g, bwd ? "repeat_v.bwd" : "repeat_v", out, rw, 0);
}

/* One attention-core kernel over sq local queries and sk keys, `share` of the
 * causal work (CP ring steps split it).  A sliding window w shorter than the
 * sequence (the layer's g->win; layout resolution refuses it with CP) keeps
 * the band of w keys up to each query: w s - w (w - 1) / 2 scores of s, the
 * op's n the window and WL_OPF_WINDOW set; the convention FLOPs count twice
 * the band, as they count the whole square for the causal triangle. */
static long attn_kernel(wl__gen *g, const char *name, double sq, double sk, double share, int bwd)
{
  double a, kv, dqk, dv;
  attn_dims(g, &a, &kv, &dqk, &dv);
  double w = g->win > 0 && g->win < sk && sq == sk ? g->win : 0;
  double full = w > 0 ? 2 * (2 * g->b * a * (dqk + dv) * (w * sk - w * (w - 1) / 2))
                      : 2 * g->b * sq * sk * a * (dqk + dv); /* QK^T + AV, no mask */
  wl_op op = wl_op_compute(S_COMPUTE, -1);
  op.sub = WL_CLASS_ATTENTION;
  op.dtype = WL_DTYPE_BF16;
  op.flags = g->flags;
  if (g->l->dropout > 0) /* dropout inside the kernel (platform.h PLAT_ATTN_DROPOUT_*) */
    op.flags |= WL_OPF_DROPOUT;
  double exec = 0.5 * full * share; /* causal: half the score matrix */
  op.flops = bwd ? 2.5 * exec : exec;
  /* shape for the compute model (workload.h): queries, keys, head dim, b x heads */
  op.m = wl__i32(g, "attention", "m", sq);
  op.n = wl__i32(g, "attention", "n", w > 0 ? w : sk);
  op.k = wl__i32(g, "attention", "k", dqk);
  op.batch = wl__i32(g, "attention", "batch", g->b * a);
  op.flags |= WL_OPF_CAUSAL | (w > 0 ? WL_OPF_WINDOW : 0);
  op.flags = wl_flags_with_attn(op.flags, g->l->attn_impl > 0 ? g->l->attn_impl : 0);
  double io = g->b * (sq * a * dqk + sk * kv * (dqk + dv) + sq * a * dv) * g->ab;
  op.bytes = bwd ? 2 * io : io;
  op.name = wl__nm(g, name);
  double conv = (bwd ? 2 : 1) * full * share;
  g->conv_hw += conv;
  if (!(g->flags & WL_OPF_RECOMPUTE))
    g->conv_model += conv;
  return wl__put_c(g, op);
}

/* Attention without a fused kernel (flash=0, Megatron-LM before flash
 * attention): batched GEMMs over the full s x s score matrix, the fused
 * scale-mask-softmax and (with dropout > 0) the attention dropout as
 * memory-bound passes over it; backward runs the four gradient GEMMs and
 * the passes' backward.
 * Convention FLOPs as for the fused kernel.  The GEMMs and the softmax carry
 * WL_OPF_UNFUSED (and WL_OPF_BWD backward): the compute model prices them at
 * the published measurement of this implementation (platforms/compute.c,
 * "unfused attention"); the dropout, which that measurement finds at its
 * roofline, does not. */
static void attn_unfused(wl__gen *g, int bwd)
{
  double a, kv, dqk, dv;
  attn_dims(g, &a, &kv, &dqk, &dv);
  double sq = g->sl, sk = g->s, ba = g->b * a, scores = ba * sq * sk;
  long unf[5]; /* the ops priced at the measured factor */
  int n = 0;
  if (!bwd) {
    unf[n++] = wl__gemm(g, "attn.qk", WL__MM, 0, sq, sk, dqk, ba, 0);
    unf[n++] = wl__elem(g, "attn.softmax", scores, 2, 5);
    if (g->l->dropout > 0)
      wl__elem(g, "attn.dropout", scores, 2.5, 2);
    unf[n++] = wl__gemm(g, "attn.av", WL__MM, 0, sq, dv, sk, ba, 0);
  } else {
    unf[n++] = wl__gemm(g, "attn.av.dgrad", WL__MM, 0, sq, sk, dv, ba, 0);
    unf[n++] = wl__gemm(g, "attn.av.wgrad", WL__MM, 0, sk, dv, sq, ba, 0);
    if (g->l->dropout > 0)
      wl__elem(g, "attn.dropout.bwd", scores, 2.5, 1);
    unf[n++] = wl__elem(g, "attn.softmax.bwd", scores, 3, 4);
    unf[n++] = wl__gemm(g, "attn.qk.dgrad", WL__MM, 0, sq, dqk, sk, ba, 0);
    unf[n++] = wl__gemm(g, "attn.qk.wgrad", WL__MM, 0, sk, dqk, sq, ba, 0);
  }
  for (int i = 0; i < n; i++)
    if (unf[i] >= 0)
      g->p->ops[unf[i]].flags |= (uint16_t)(WL_OPF_UNFUSED | (bwd ? WL_OPF_BWD : 0));
  double conv = (bwd ? 2 : 1) * 2 * g->b * sq * sk * a * (dqk + dv);
  g->conv_hw += conv;
  if (!(g->flags & WL_OPF_RECOMPUTE))
    g->conv_model += conv;
}
/* Attention core forward; with CP, the ring of TransformerEngine's
 * AttnFuncWithCPAndKVP2P: cp steps, each on 1/cp of the causal work, the next
 * KV chunk travelling to the ring neighbour during the current step.  Each
 * hop of the ring is one "shift" collective of the CP group (member i sends
 * to i + 1 and receives from i - 1 at once) on the "cp" stream: the same
 * transfers as a send/recv pair per member, with one issue order and, on
 * links the group has to itself, a closed form (sim/engine/closed.c). */
static void attn_fwd(wl__gen *g)
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
    long hop = j < cp - 1 ? wl__coll_s(g, S_CP, "cp.kv", WL_COLL_SHIFT, R_CP, kv_bytes, -1) : -1;
    wl__need(g, prev);
    attn_kernel(g, "attn.cp", g->sl, g->s, 1.0 / cp, 0);
    prev = hop;
  }
}

static void attn_bwd(wl__gen *g)
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
    long hop = j < cp - 1 ? wl__coll_s(g, S_CP, "cp.kv", WL_COLL_SHIFT, R_CP, kv_bytes, -1) : -1;
    wl__need(g, prev);
    wl__need(g, dprev);
    attn_kernel(g, "attn.cp.bwd", g->sl, g->s, 1.0 / cp, 1);
    /* the partial dKV follows its KV chunk round the ring, back to its owner */
    dprev = wl__coll_s(g, S_CP, "cp.dkv", WL_COLL_SHIFT, R_CP, kv_bytes, -1);
    prev = hop;
  }
  wl__need(g, dprev);
}

/* ---- MLP and MoE --------------------------------------------------------------- */
static double act_in(const wl_model *m, double f) { return m->ffn_act == WL_ACT_SWIGLU ? 2 * f : f; }
/* The fused activation's HBM traffic per element of its input (act_in),
 * in elements: gated, the two halves read and the product written (2f + f
 * over 2f: 1.5 forward), backward the halves and the gradient read and the
 * halves' gradients written (5f over 2f: 2.5); GELU one read and one write
 * (2), backward the input and the gradient read and one written (3), as
 * Megatron's bias-GELU and PyTorch's gelu/gelu_backward kernels move them */
static double act_rw(const wl_model *m, int bwd)
{
  if (m->ffn_act == WL_ACT_SWIGLU)
    return bwd ? 2.5 : 1.5;
  return bwd ? 3 : 2;
}

/* The modules a layout's recompute=selective re-runs in backward
 * (Megatron-core's recompute_modules, WL_RCM_*), 0 under any other. */
static int rcm(const wl__gen *g)
{
  return g->l->recompute == WL_RECOMPUTE_SELECTIVE ? g->l->recompute_modules : 0;
}

/* pre + suffix into buf (32 bytes), as snprintf "%s%s" would, without its
 * cost: these names are built for every layer of every micro-batch. */
static const char *nm2(char *buf, const char *pre, const char *suffix)
{
  size_t a = strlen(pre), b = strlen(suffix);
  if (a > 31)
    a = 31;
  if (b > 31 - a)
    b = 31 - a;
  memcpy(buf, pre, a);
  memcpy(buf + a, suffix, b);
  buf[a + b] = '\0';
  return buf;
}

/* The MLP's activation over f columns; eager SwiGLU: silu(w1 x) (read a,
 * write a), then its product with w3 x (3a) */
static void act_fwd(wl__gen *g, const char *name, double f)
{
  static const eager_k k[] = {{".silu", 2, 0}, {".mul", 3, 0}};
  if (g->l->eager && g->m->ffn_act == WL_ACT_SWIGLU)
    eager_ops(g, name, g->T * f / g->t, k, 2);
  else
    wl__elem(g, name, g->T * act_in(g->m, f) / g->t, act_rw(g->m, 0), 8);
}

/* The casts Megatron-core's TELayerNormMLP fuses (fp8_casts in
 * wl_gen_emit.c): fc1's input in the norm and its output gradient in the
 * activation's backward, fc2's input in the activation */
enum { TE_LN_FC1 = WL__TE_IN | WL__TE_DY, TE_LN_FC2 = WL__TE_IN };

/* ln_mlp: the block is Megatron-core's TELayerNormMLP (the dense MLP; a
 * shared expert runs plain TE linears) */
/* An MLP's forward, its halves by `half` (MLP_FC1: fc1 and the activation,
 * MLP_FC2: fc2, MLP_ALL both; moe_shared_expert_overlap runs them beside
 * different all-to-alls). */
enum { MLP_FC1 = 1, MLP_FC2 = 2, MLP_ALL = 3 };
static void mlp_fwd_half(wl__gen *g, double f, const char *pre, int ln_mlp, int half)
{
  char n1[32], n2[32], n3[32], n4[32], n5[32];
  nm2(n1, pre, ".tp.ag");
  nm2(n2, pre, ".fc1");
  nm2(n3, pre, ".act");
  nm2(n4, pre, ".fc2");
  nm2(n5, pre, g->l->sp ? ".tp.rs" : ".tp.ar");
  wl__col_gemm c = {n2, "", "", act_in(g->m, f) / g->t, g->h, 1, ln_mlp ? TE_LN_FC1 : 0};
  if (half & MLP_FC1) {
    wl__col_fwd_sp(g, &c, 1, n1);
    act_fwd(g, n3, f);
  }
  if (half & MLP_FC2)
    wl__row_fwd(g, n4, ln_mlp ? TE_LN_FC2 : 0, f / g->t, n5);
}

static void mlp_fwd(wl__gen *g, double f, const char *pre, int ln_mlp)
{
  mlp_fwd_half(g, f, pre, ln_mlp, MLP_ALL);
}

/* An MLP's backward, its halves by `half` as mlp_fwd_half's: MLP_FC2 is fc2's
 * backward, MLP_FC1 the activation's and fc1's. */
static void mlp_bwd_half(wl__gen *g, double f, const char *pre, int ln_mlp, int half)
{
  char a[32], b[32], c1[32], d[32], e[32], f1[32], f2[32], f3[32];
  nm2(a, pre, ".tp.ag.bwd");
  nm2(b, pre, ".fc2.dgrad");
  nm2(c1, pre, ".fc2.wgrad");
  nm2(d, pre, ".act.bwd");
  nm2(e, pre, ".tp.ag.wgrad");
  nm2(f1, pre, g->l->sp ? ".tp.rs.dgrad" : ".tp.ar.dgrad");
  nm2(f2, pre, ".fc1.dgrad");
  nm2(f3, pre, ".fc1.wgrad");
  if (half & MLP_FC2)
    wl__row_bwd(g, b, c1, 0, f / g->t, a);
  if (!(half & MLP_FC1))
    return;
  if (g->l->eager && g->m->ffn_act == WL_ACT_SWIGLU) {
    /* the product's two gradients (3a each), then silu's backward (3a) */
    static const eager_k k[] = {{".mul.ga", 3, 0}, {".mul.gb", 3, 0}, {".silu", 3, 0}};
    eager_ops(g, d, g->T * f / g->t, k, 3);
  } else
    wl__elem(g, d, g->T * act_in(g->m, f) / g->t, act_rw(g->m, 1), 12);
  wl__col_gemm c = {"", f2, f3, act_in(g->m, f) / g->t, g->h, 1, ln_mlp ? TE_LN_FC1 : 0};
  wl__col_bwd(g, &c, 1, e, f1);
}

static void mlp_bwd(wl__gen *g, double f, const char *pre, int ln_mlp)
{
  mlp_bwd_half(g, f, pre, ln_mlp, MLP_ALL);
}

/* moe_shared_expert_overlap (Megatron-core's token_dispatcher.py and
 * shared_experts.py): the shared experts run on a stream of their own, fc1
 * and the activation after the dispatch all-to-all is issued, fc2 after the
 * combine's; backward, fc2's after the combine's backward, the activation's
 * and fc1's after the dispatch's.  Modelled the other way round with the
 * same waits: the all-to-alls on the "ep" stream, the shared experts on the
 * compute stream, and the routed experts (and the unpermute) waiting for
 * their all-to-all.  Not under moe_a2a_overlap's parts (the layout refuses
 * the two together). */
static int shared_overlap(const wl__gen *g)
{
  return g->l->moe_shared_overlap && g->m->moe.shared_experts && !g->part;
}

/* One of the MoE layer's four all-to-alls over the EP group: Megatron-core's
 * all-to-all dispatcher sends a token once per routed expert (bytes count
 * those copies); the flex dispatcher (DeepEP, HybridEP) sends it once to each
 * member holding any of its experts and once across the network to each node
 * holding any, forwarded over NVLink there (WL_OPF_DEDUP: the op carries
 * top-k and the experts per member; the collective layer counts the rest). */
static long ep_a2a(wl__gen *g, const char *name, double bytes)
{
  /* moe_a2a_overlap: on the "ep" stream after the last compute op, kept in
   * g->part_a2a for the part that consumes it (wl__put_c);
   * moe_shared_expert_overlap likewise, returned for the routed experts to
   * wait for while the shared ones run on */
  int on_ep = g->on_ep;
  if (g->part || shared_overlap(g)) {
    wl__need(g, g->last_c);
    g->on_ep = 1;
  }
  long i = wl__coll_c(g, name, WL_COLL_ALLTOALL, R_EP, bytes);
  g->on_ep = on_ep;
  if (i >= 0 && g->l->moe_dispatcher == WL_MOE_FLEX)
    wl_op_set_dedup(&g->p->ops[i], g->m->moe.top_k, g->m->moe.experts / g->l->ep);
  return i;
}

/* One of the MoE layer's all-to-alls (ep_a2a); under
 * moe_shared_expert_overlap the shared experts' half `half` of the forward
 * (fwd) or the backward runs beside it, and what follows waits for it. */
static void ep_a2a_shared(wl__gen *g, const char *name, double bytes, int fwd, int half)
{
  long i = ep_a2a(g, name, bytes);
  if (!shared_overlap(g))
    return;
  double f = g->m->moe.shared_experts * g->m->moe.expert_ffn_hidden;
  if (fwd)
    mlp_fwd_half(g, f, "shared", 0, half);
  else /* recompute_modules shared_experts is refused with it */
    mlp_bwd_half(g, f, "shared", 0, half);
  wl__need(g, i);
}

/* Whether the layer's part `bits` is being emitted (moe_a2a_overlap's parts,
 * WL_PT_*; every part when g->part is 0). */
static int pt(const wl__gen *g, int bits) { return !g->part || (g->part & bits); }

/* The experts' fused activation over the te tokens they hold, forward. */
static void expert_act(wl__gen *g, double te, double ef, double et)
{
  wl__elem(g, "expert.act", te * act_in(g->m, ef) / et, act_rw(g->m, 0), 8);
}

/* Megatron-core MoE with the all-to-all token dispatcher
 * (MoEAlltoAllTokenDispatcher; moe_dispatcher=flex: the flex dispatcher's
 * deduplicating all-to-all, ep_a2a): the all-to-all over the EP group, then the
 * all-gather of the received tokens over the expert-TP group (etp ranks;
 * the TP group itself when etp = tp), expert GEMMs on ef/etp columns.
 * Tokens routed by this rank: T/tp with SP; balanced routing. */
static void moe_fwd(wl__gen *g)
{
  const wl_moe *mo = &g->m->moe;
  double E = mo->experts, k = mo->top_k, ep = g->l->ep, ef = mo->expert_ffn_hidden;
  double Tl = g->Tsp, et = g->etp;
  double Te = Tl * et * k * g->cf; /* tokens through this rank's experts (after the gather) */
  double Me = Te * ep / E;         /* per local expert */
  /* moe_a2a_overlap: the shared experts run before the router, in the
   * attention's part (Megatron-core's pre-dispatch node) */
  if (g->part && pt(g, WL_PT_PRE) && mo->shared_experts)
    mlp_fwd(g, mo->shared_experts * ef, "shared", 0);
  if (pt(g, WL_PT_PRE)) {
    wl__gemm(g, "router", WL__MM, 0, Tl, E, g->h, 1, 1);
    wl__elem(g, "moe.permute", Tl * k * g->cf * g->h, 2, 0);
  }
  if (pt(g, WL_PT_DISPATCH))
    ep_a2a_shared(g, "ep.dispatch", Tl * k * g->cf * g->h * g->ab, 1, MLP_FC1);
  if (pt(g, WL_PT_MLP)) {
    wl__coll_c(g, "moe.tp.ag", WL_COLL_ALLGATHER, g->r_etp, Te * g->h * g->ab);
    wl__gemm(g, "expert.fc1", WL__FWD, 0, Me, act_in(g->m, ef) / et, g->h, E / ep, 1 / g->cf);
    expert_act(g, Te, ef, et);
    wl__gemm(g, "expert.fc2", WL__FWD, 0, Me, g->h, ef / et, E / ep, 1 / g->cf);
    wl__coll_c(g, "moe.tp.rs", WL_COLL_REDUCESCATTER, g->r_etp, Te * g->h * g->ab);
  }
  if (pt(g, WL_PT_COMBINE))
    ep_a2a_shared(g, "ep.combine", Tl * k * g->cf * g->h * g->ab, 1, MLP_FC2);
  if (pt(g, WL_PT_POST))
    wl__elem(g, "moe.unpermute", Tl * k * g->cf * g->h, 2, 2);
  if (!g->part && !shared_overlap(g) && mo->shared_experts)
    mlp_fwd(g, mo->shared_experts * ef, "shared", 0);
}

/* The shared experts' backward, re-run first under recompute_modules
 * shared_experts (r: the modules recomputed). */
static void shared_bwd(wl__gen *g, int r)
{
  double f = g->m->moe.shared_experts * g->m->moe.expert_ffn_hidden;
  if (r & WL_RCM_SHARED_EXPERTS) {
    g->flags = WL_OPF_RECOMPUTE;
    mlp_fwd(g, f, "shared", 0);
    g->flags = 0;
  }
  mlp_bwd(g, f, "shared", 0);
}

static void moe_bwd(wl__gen *g)
{
  const wl_moe *mo = &g->m->moe;
  double E = mo->experts, k = mo->top_k, ep = g->l->ep, ef = mo->expert_ffn_hidden;
  double Tl = g->Tsp, et = g->etp;
  double Te = Tl * et * k * g->cf;
  double Me = Te * ep / E;
  /* recompute_modules: the shared experts' checkpoint and the experts'
   * discarded activation output, re-run where backward first needs them
   * (both inside moe, when the whole layer is recomputed) */
  int r = (rcm(g) & WL_RCM_MOE) ? 0 : rcm(g);
  /* moe_a2a_overlap: the shared experts' backward in the attention's part
   * (below), the experts' weight gradients delayed to a part of their own
   * (delay_wgrad_compute: after the dispatch's backward is issued) */
  if (!g->part && !shared_overlap(g) && mo->shared_experts)
    shared_bwd(g, r);
  if (pt(g, WL_PT_POST))
    wl__elem(g, "moe.unpermute.bwd", Tl * k * g->cf * g->h, 2, 2);
  if (pt(g, WL_PT_COMBINE))
    ep_a2a_shared(g, "ep.combine.bwd", Tl * k * g->cf * g->h * g->ab, 0, MLP_FC2);
  if (pt(g, WL_PT_MLP)) {
    wl__coll_c(g, "moe.tp.rs.bwd", WL_COLL_ALLGATHER, g->r_etp, Te * g->h * g->ab);
    wl__gemm(g, "expert.fc2.dgrad", WL__DGRAD, 0, Me, ef / et, g->h, E / ep, 1 / g->cf);
  }
  if (!g->part)
    wl__gemm(g, "expert.fc2.wgrad", WL__WGRAD, 0, ef / et, g->h, Me, E / ep, 1 / g->cf);
  if (pt(g, WL_PT_MLP)) {
    if (r & WL_RCM_MOE_ACT) {
      g->flags = WL_OPF_RECOMPUTE;
      expert_act(g, Te, ef, et);
      g->flags = 0;
    }
    wl__elem(g, "expert.act.bwd", Te * act_in(g->m, ef) / et, act_rw(g->m, 1), 12);
    wl__gemm(g, "expert.fc1.dgrad", WL__DGRAD, 0, Me, g->h, act_in(g->m, ef) / et, E / ep,
             1 / g->cf);
  }
  if (!g->part)
    wl__gemm(g, "expert.fc1.wgrad", WL__WGRAD, 0, g->h, act_in(g->m, ef) / et, Me, E / ep,
             1 / g->cf);
  if (pt(g, WL_PT_MLP))
    wl__coll_c(g, "moe.tp.ag.bwd", WL_COLL_REDUCESCATTER, g->r_etp, Te * g->h * g->ab);
  if (g->part & WL_PT_DW) {
    wl__gemm(g, "expert.fc2.wgrad", WL__WGRAD, 0, ef / et, g->h, Me, E / ep, 1 / g->cf);
    wl__gemm(g, "expert.fc1.wgrad", WL__WGRAD, 0, g->h, act_in(g->m, ef) / et, Me, E / ep,
             1 / g->cf);
  }
  if (pt(g, WL_PT_DISPATCH))
    ep_a2a_shared(g, "ep.dispatch.bwd", Tl * k * g->cf * g->h * g->ab, 0, MLP_FC1);
  if (pt(g, WL_PT_PRE)) {
    wl__elem(g, "moe.permute.bwd", Tl * k * g->cf * g->h, 2, 0);
    wl__gemm(g, "router.dgrad", WL__MM, 0, Tl, g->h, E, 1, 1);
    wl__gemm(g, "router.wgrad", WL__MM, 0, g->h, E, Tl, 1, 1);
    if (g->part && mo->shared_experts)
      shared_bwd(g, r);
  }
}

/* ---- one transformer layer ------------------------------------------------------- */
void wl__layer_fwd(wl__gen *g, int layer, int c, int gi_mlp)
{
  const wl_model *m = g->m;
  double h = g->h, Tsp = g->Tsp;
  g->win = wl_model_layer_window(m, layer);
  if (pt(g, WL_PT_PRE)) {
    wl__marker(g, WL_MARK_LAYER, layer);
    wl__param_wait(g, c, gi_mlp);
    wl__param_wait(g, c, gi_mlp + 1);
    norm_fwd(g, "ln1", Tsp * h);
    wl__col_gemm pc[4];
    int np = attn_proj(g, pc);
    wl__col_fwd_sp(g, pc, np, "attn.tp.ag");
    double a, kv, dqk, dv;
    attn_dims(g, &a, &kv, &dqk, &dv);
    if (m->qk_norm)
      norm_fwd(g, "qk_norm", g->T * (a + kv) * dqk);
    rope(g, 0);
    repeat_kv(g, 0);
    attn_fwd(g);
    wl__row_fwd(g, "proj", 0, a * dv, g->l->sp ? "attn.tp.rs" : "attn.tp.ar");
    if (m->norms_per_layer > 2)
      norm_fwd(g, "ln1.post", Tsp * h);
    residual(g, "res1", Tsp * h, 0);
    norm_fwd(g, "ln2", Tsp * h);
  }
  /* a full recomputation's re-run (the only forward flagged recompute)
   * that stops early (recompute_early_stop) ends where the MLP's output
   * projection saves its input: that GEMM (with its tensor-parallel
   * reduction) and the residual add after it do not run again.  An MoE
   * layer's combine and a post-MLP norm save what the projection makes, so
   * those layers re-run whole. */
  int stop = (g->flags & WL_OPF_RECOMPUTE) && g->l->recompute_early_stop &&
             !wl__is_moe_layer(m, layer) && m->norms_per_layer <= 2;
  if (wl__is_moe_layer(m, layer))
    moe_fwd(g);
  else if (pt(g, WL_PT_MLP))
    mlp_fwd_half(g, m->ffn_hidden, "mlp", 1, stop ? MLP_FC1 : MLP_ALL);
  if (pt(g, WL_PT_POST) && !stop) {
    if (m->norms_per_layer > 2)
      norm_fwd(g, "ln2.post", Tsp * h);
    residual(g, "res2", Tsp * h, 0);
  }
}

/* recompute=op: torchtitan's per-op selective activation checkpointing
 * (distributed/activation_checkpoint.py, _apply_op_sac): under the block's
 * checkpoint the policy saves the outputs of aten.mm (all but every second
 * one a block runs, counted in forward order), of the SDPA kernels and of
 * the reduce-scatters, and recomputes everything else when the block's
 * backward starts.  A Llama block runs seven matmuls, wq wk wv wo w1 w3 w2:
 * wk, wo and w3 are recomputed; a block with a fused QKV and an ungated MLP
 * runs four, qkv proj fc1 fc2: proj and fc2.  Recomputed too: the norms,
 * rotary embedding, repeat_kv, the activation and the residual adds, and
 * with sequence parallelism the two all-gathers of the normed input (the
 * matmuls' inputs, which their weight gradients need).  Dense blocks only (wl_layout_resolve refuses MoE and MLA). */
static void op_sac_recompute(wl__gen *g)
{
  const wl_model *m = g->m;
  double h = g->h, Tsp = g->Tsp, a, kv, dqk, dv;
  attn_dims(g, &a, &kv, &dqk, &dv);
  int gated = m->ffn_act == WL_ACT_SWIGLU;
  norm_fwd(g, "ln1", Tsp * h);
  wl__tp_enter(g, "attn.tp.ag"); /* the QKV input, for their weight gradients */
  if (gated)
    wl__gemm(g, "k", WL__FWD, WL__TE_IN, g->T, kv * dqk, h, 1, 1);
  if (m->qk_norm)
    norm_fwd(g, "qk_norm", g->T * (a + kv) * dqk);
  rope(g, 0);
  repeat_kv(g, 0);
  wl__gemm(g, "proj", WL__FWD, 0, g->T, h, a * dv, 1, 1);
  if (m->norms_per_layer > 2)
    norm_fwd(g, "ln1.post", Tsp * h);
  residual(g, "res1", Tsp * h, 0);
  norm_fwd(g, "ln2", Tsp * h);
  double f = m->ffn_hidden;
  wl__tp_enter(g, "mlp.tp.ag"); /* fc1's (and w3's) input, for their weight gradients */
  if (gated)
    wl__gemm(g, "mlp.fc3", WL__FWD, TE_LN_FC1, g->T, f / g->t, h, 1, 1);
  act_fwd(g, "mlp.act", f);
  if (!gated)
    wl__gemm(g, "mlp.fc2", WL__FWD, TE_LN_FC2, g->T, h, f / g->t, 1, 1);
  if (m->norms_per_layer > 2)
    norm_fwd(g, "ln2.post", Tsp * h);
  residual(g, "res2", Tsp * h, 0);
}

/* Whether layer `layer` of chunk c is recomputed in full before its backward:
 * every layer under recompute=full, or with recompute_layers the first ones
 * of the chunk (Megatron-LM's --recompute-method block). */
static int full_recompute(const wl__gen *g, int layer, int c)
{
  const wl_layout *l = g->l;
  if (l->recompute != WL_RECOMPUTE_FULL)
    return 0;
  if (!l->recompute_layers)
    return 1;
  int first, count;
  wl__chunk_layers(l, g->m, g->stage, c, &first, &count);
  return layer - first < l->recompute_layers;
}

void wl__layer_bwd(wl__gen *g, int layer, int c, int gi_mlp)
{
  const wl_model *m = g->m;
  double h = g->h, Tsp = g->Tsp;
  g->win = wl_model_layer_window(m, layer);
  if (!g->part)
    wl__marker(g, WL_MARK_LAYER, layer);
  if (full_recompute(g, layer, c)) {
    int pw = g->param_wait;
    g->param_wait = 0;
    g->flags = WL_OPF_RECOMPUTE;
    wl__layer_fwd(g, layer, c, gi_mlp);
    g->flags = 0;
    g->param_wait = pw;
  }
  if (g->l->recompute == WL_RECOMPUTE_OP) {
    g->flags = WL_OPF_RECOMPUTE;
    op_sac_recompute(g);
    g->flags = 0;
  }
  /* recompute=selective by module (Megatron-core's recompute_modules): the
   * MoE layer's own norm (pre_mlp_layernorm, a module of its own there; a
   * dense layer's is fused into Transformer Engine's fc1) and the MoE layer
   * or the dense MLP, re-run before their backward */
  int r = rcm(g), moe = wl__is_moe_layer(m, layer);
  if (pt(g, WL_PT_POST)) {
    if (g->part)
      wl__marker(g, WL_MARK_LAYER, layer);
    residual(g, "res2.bwd", Tsp * h, 1);
    if (m->norms_per_layer > 2)
      norm_bwd(g, "ln2.post.bwd", Tsp * h);
  }
  if (g->part) {
    /* moe_a2a_overlap's parts: the combine's backward, then the re-runs
     * (the moe module's are refused) where the experts' backward starts */
    int keep = g->part;
    if (moe && (g->part = keep & (WL_PT_POST | WL_PT_COMBINE)))
      moe_bwd(g);
    g->part = keep;
    if ((keep & WL_PT_MLP) && ((moe && (r & WL_RCM_LAYERNORM)) || (!moe && (r & WL_RCM_MLP)))) {
      g->flags = WL_OPF_RECOMPUTE;
      if (moe)
        norm_fwd(g, "ln2", Tsp * h);
      else
        mlp_fwd(g, m->ffn_hidden, "mlp", 1);
      g->flags = 0;
    }
    if (moe && (g->part = keep & ~(WL_PT_POST | WL_PT_COMBINE)))
      moe_bwd(g);
    g->part = keep;
    if (!moe && (keep & WL_PT_MLP))
      mlp_bwd(g, m->ffn_hidden, "mlp", 1);
  } else {
    if ((moe && (r & (WL_RCM_LAYERNORM | WL_RCM_MOE))) || (!moe && (r & WL_RCM_MLP))) {
      g->flags = WL_OPF_RECOMPUTE;
      if (moe && (r & WL_RCM_LAYERNORM))
        norm_fwd(g, "ln2", Tsp * h);
      if (moe && (r & WL_RCM_MOE))
        moe_fwd(g);
      if (!moe)
        mlp_fwd(g, m->ffn_hidden, "mlp", 1);
      g->flags = 0;
    }
    if (moe)
      moe_bwd(g);
    else
      mlp_bwd(g, m->ffn_hidden, "mlp", 1);
  }
  if (!pt(g, WL_PT_PRE))
    return;
  norm_bwd(g, "ln2.bwd", Tsp * h);
  wl__group_done(g, c, gi_mlp);
  residual(g, "res1.bwd", Tsp * h, 1);
  if (m->norms_per_layer > 2)
    norm_bwd(g, "ln1.post.bwd", Tsp * h);
  double a, kv, dqk, dv;
  attn_dims(g, &a, &kv, &dqk, &dv);
  /* moe_a2a_overlap's delay_wgrad_compute: the attention's weight gradients
   * wait for wl__flush_wgrad (unit_pair: after the next layer's combine
   * backward is issued) */
  g->defer_wgrad = g->part != 0;
  wl__row_bwd(g, "proj.dgrad", "proj.wgrad", 0, a * dv, "attn.tp.ag.bwd");
  wl__col_gemm pc[4];
  int np = attn_proj(g, pc);
  /* MLA's up projections and rotary (mla_up_proj: their outputs discarded),
   * then the attention core (core_attn, the default), re-run */
  if (r & (WL_RCM_MLA_UP_PROJ | WL_RCM_CORE_ATTN)) {
    g->flags = WL_OPF_RECOMPUTE;
    if (m->has_mla && (r & WL_RCM_MLA_UP_PROJ)) {
      for (int i = 0; i < np; i++)
        if (pc[i].te & WL__TE_IN) /* q_up, kv_up: the latent-input projections */
          wl__gemm(g, pc[i].fwd, WL__FWD, pc[i].te, g->T, pc[i].N, pc[i].K, 1, pc[i].scale);
      rope(g, 0);
    }
    if (r & WL_RCM_CORE_ATTN)
      attn_fwd(g);
    g->flags = 0;
  }
  attn_bwd(g);
  repeat_kv(g, 1);
  rope(g, 1);
  if (m->qk_norm)
    norm_bwd(g, "qk_norm.bwd", g->T * (a + kv) * dqk);
  /* MLA's input norm is a module of its own (layernorm: its output discarded) */
  if (m->has_mla && (r & WL_RCM_LAYERNORM)) {
    g->flags = WL_OPF_RECOMPUTE;
    norm_fwd(g, "ln1", Tsp * h);
    g->flags = 0;
  }
  wl__col_bwd(g, pc, np, "attn.tp.ag.wgrad", g->l->sp ? "attn.tp.rs.dgrad" : "attn.tp.ar.dgrad");
  norm_bwd(g, "ln1.bwd", Tsp * h);
  if (g->defer_wgrad) { /* the group closes once its weight gradients are emitted */
    g->defer_wgrad = 0;
    g->defer_c = c;
    g->defer_gi = gi_mlp + 1;
    return;
  }
  wl__group_done(g, c, gi_mlp + 1);
}

/* ---- embedding and output ---------------------------------------------------------- */
void wl__embed_fwd(wl__gen *g)
{
  wl__elem(g, "emb.lookup", g->T * g->h, 2, 1);
  wl__sp_cat(g, "tp.rs.cat");
  wl__coll_c(g, g->l->sp ? "emb.tp.rs" : "emb.tp.ar",
             g->l->sp ? WL_COLL_REDUCESCATTER : WL_COLL_ALLREDUCE, R_TP, g->T * g->h * g->ab);
}

/* The embedding's backward: the token rows' gradients (F.embedding's
 * backward sorts the indices and sums their rows), written into a dense
 * gradient of the whole vocabulary shard that PyTorch allocates zero-filled
 * (embedding_dense_backward: V/t x h values in the model dtype); under
 * Megatron (dp_impl megatron) DDP's hook then adds it to the fp32 main
 * gradient, every micro-batch (param.main_grad.add_(param.grad): read the
 * gradient and the main gradient, write the main gradient).  The PyTorch
 * frameworks hand the dense gradient to their own reduction, priced there. */
void wl__embed_bwd(wl__gen *g)
{
  wl__tp_enter(g, "emb.tp.ag.bwd");
  wl__elem(g, "emb.grad", g->T * g->h, 3, 1);
  double rows = (double)wl__vocab_padded(g->m, g->l->tp) / g->t;
  double rw = 1; /* the zero fill */
  if (g->l->dp_impl == WL_DP_MEGATRON)
    rw += 1 + 2 * g->gb / g->ab;
  wl__elem(g, "emb.grad.dense", rows * g->h, rw, g->l->dp_impl == WL_DP_MEGATRON ? 1 : 0);
}

/* The cross entropy per logit, by implementation (layout key ce_fusion),
 * with bf16 logits: HBM bytes read and written forward and backward (in
 * model-dtype elements: half these, scaled by the dtype's size) and its
 * memory: the bytes it keeps from its forward to its backward and the most
 * it holds at once (both counted in wl_memory.c).
 *  - none (Megatron-core's tensor_parallel/cross_entropy.py): cast to fp32
 *    (read 2, write 4), max (read 4), subtract the max in place (8), exp in
 *    place (8), sum (4), divide by the sum in place (8): 38; backward the
 *    saved softmax times the loss gradient in place (read 4, write 4), the
 *    cast's backward to bf16 (read 4, write 2): 14.  Keeps the fp32 softmax
 *    (4); holds the bf16 logits beside their fp32 copy (6), and backward the
 *    softmax turned gradient beside its bf16 cast (6);
 *  - native (fusions/fused_cross_entropy.py, each step a compiled function):
 *    the fp32 copy with its max (read 2, write 4), subtract and exp with the
 *    sum, written back in place (8), the division in place (8): 22; backward
 *    the gradient's update of the saved softmax, written back, and its bf16
 *    cast in one kernel (read 4, write 4 + 2): 10.  Memory as none's;
 *  - te (Transformer Engine's parallel_cross_entropy, its Triton kernels as
 *    they stood to July 2026): an online-softmax pass (read 2), then the loss
 *    and the gradient written over the logits (read 2, write 2): 6;
 *    backward the gradient times the loss gradient in place (read 2, write
 *    2): 4.  Keeps the bf16 logits holding the gradient (2), nothing more.
 *    (Transformer Engine from its #3193 keeps the gradient in fp32.)
 *  - torch (F.cross_entropy on the bf16 logits, which the training loop
 *    keeps until backward ends, as fms-fsdp's): log_softmax (read the row
 *    three times: its max, its sum of exponentials, the output; write 2:
 *    8), nll_loss's gather; backward nll_loss's zero-filled gradient with
 *    its scatter (write 2), log_softmax's backward (read the gradient twice
 *    and the output once, write 2: 8): 8 and 10.  Keeps the log-softmax
 *    and the logits (4); backward holds those with the two gradients (8);
 *  - torch_fp32 (F.cross_entropy on an fp32 copy, the bf16 logits freed
 *    before backward, as torchtitan's): the cast (read 2, write 4) and
 *    log_softmax in fp32 (16): 22; backward the zero fill (4), log_softmax's
 *    backward (16) and the cast back (read 4, write 2): 26.  Keeps the fp32
 *    log-softmax (4); holds forward the bf16 logits, their copy and the
 *    log-softmax (10), backward the log-softmax and two fp32 gradients (12).
 *    With tp > 1, DTensor's loss_parallel (torch.distributed.tensor.
 *    parallel.loss) decomposes it into separate ops: the cast (6), max (4),
 *    shifted (8), exp (8), sum (4), shifted - log(sum) (8): 38; backward its
 *    fused nll/log_softmax step, a zero fill (4), exp (8), add (12), times
 *    the loss gradient (8), and the cast back (6): 38.  It holds forward the
 *    bf16 logits, the fp32 copy, the shifted logits and their exponentials
 *    (14), backward the log-softmax, the zero-filled gradient, the
 *    exponentials and their sum (16);
 *  - hf (Hugging Face transformers' causal-LM loss): the logits cast to fp32
 *    (6) and returned with the outputs, a shifted contiguous copy (read 4,
 *    write 4) and log_softmax (16): 30; backward the zero fill (4),
 *    log_softmax's backward (16), the copy's backward into a zero-filled
 *    fp32 gradient (read 4, write 4 + 4) and the cast back (6): 38.  Keeps
 *    the returned fp32 logits and the log-softmax (8); holds forward the
 *    logits, the copy and the log-softmax (12), backward the two kept with
 *    two fp32 gradients (16);
 *  - flash (flash-attn's flash_attn.losses.cross_entropy, llm-foundry's MPT
 *    loss; at flash-attn 1.0.9, the release llm-foundry pinned, the CUDA
 *    kernel of csrc/xentropy): one pass for the row's max and sum and one for
 *    its sum of exponentials (read 2 twice): 4; backward the gradient written
 *    to a new tensor (read 2, write 2): 4.  Keeps the logits (2); backward
 *    holds them with the gradient (4);
 *  - torch_compiled (torch_fp32's function under torch.compile, as torchtitan
 *    compiles its loss with training.compile from 2025): Inductor fuses the
 *    cast, log_softmax and nll_loss into reductions over the bf16 logits (the
 *    row's max, then its sum of exponentials: read 2 twice) and saves the
 *    logits with two floats a row; backward one fused kernel recomputes the
 *    softmax and writes the bf16 gradient (read 2, write 2): 4 and 4, keeps
 *    the logits (2) and holds them with the gradient (4), as flash. */
typedef struct ce_impl {
  double fwd, bwd;   /* HBM bytes per logit */
  double kept, peak; /* memory per logit */
} ce_impl;

static ce_impl ce_of(int ce, int tp)
{
  switch (ce) {
  case WL_CE_NATIVE: return (ce_impl){22, 10, 4, 6};
  case WL_CE_TE: return (ce_impl){6, 4, 2, 2};
  case WL_CE_TORCH: return (ce_impl){8, 10, 4, 8};
  case WL_CE_TORCH_FP32: return tp > 1 ? (ce_impl){38, 38, 4, 16} : (ce_impl){22, 26, 4, 12};
  case WL_CE_HF: return (ce_impl){30, 38, 8, 16};
  case WL_CE_FLASH:
  case WL_CE_TORCH_COMPILED: return (ce_impl){4, 4, 2, 4};
  default: return (ce_impl){38, 14, 4, 6};
  }
}

/* A trainer's training metrics over the logits (layout key train_metrics):
 * after each micro-batch's backward Composer updates its train metrics on
 * the micro-batch's outputs (trainer.py _eval_train_metrics, under no_grad
 * and the precision's autocast), and llm-foundry's MPT has two,
 * LanguageCrossEntropy and LanguagePerplexity, each a
 * torch.nn.CrossEntropyLoss over the bf16 logits (composer/metrics/nlp.py):
 * autocast runs its log_softmax in fp32, so a pass is the cast (read 2,
 * write 4) and log_softmax in fp32 (16), 22 B a logit, forward only.  Its
 * memory (10 B a logit) comes after the backward, when the activations are
 * gone: not counted (docs/workloads.md). */
void wl__train_metrics(wl__gen *g)
{
  if (g->l->train_metrics <= 0)
    return;
  double V = (double)wl__vocab_padded(g->m, g->l->tp) / g->t;
  wl__elem(g, "out.metrics", g->T * V * g->l->train_metrics, 22.0 / 2, 6);
}

void wl__loss_memory(const wl_layout *l, double *kept, double *peak)
{
  ce_impl c = ce_of(l->ce_fusion, l->tp);
  *kept = c.kept;
  *peak = c.peak;
}

/* The output layer runs in the model dtype under fp8: Megatron-core's is a
 * tensor_parallel.ColumnParallelLinear, not a Transformer Engine module, so
 * fp8_autocast leaves it alone, as MPT's tied lm head (F.linear) and
 * torchtitan's float8 filter ("output") do. */
static int out_dtype_enter(wl__gen *g)
{
  int d = g->gemm_dtype;
  if (d == WL_DTYPE_FP8)
    g->gemm_dtype = WL_DTYPE_BF16;
  return d;
}

void wl__output_fwd(wl__gen *g)
{
  double V = (double)wl__vocab_padded(g->m, g->l->tp) / g->t;
  int gd = out_dtype_enter(g);
  norm_fwd(g, "out.ln", g->Tsp * g->h);
  wl__tp_enter(g, "out.tp.ag");
  wl__col_gemm c = {"out.logits", "", "", V, g->h, 1, 0};
  wl__col_fwd(g, &c, 1);
  g->gemm_dtype = gd;
  /* the vocab-parallel cross entropy, per element of the [T, V/t] logits
   * (ce_of), then its TP collectives of a few floats per token */
  int ce = g->l->ce_fusion;
  wl__elem(g, "out.loss", g->T * V, ce_of(ce, g->l->tp).fwd / 2, ce == WL_CE_TE ? 5 : 6);
  if (ce == WL_CE_TE) { /* each rank's (max, sum, target logit) per token, gathered */
    wl__coll_c(g, "out.loss.stats.ag", WL_COLL_ALLGATHER, R_TP, g->T * 12 * g->l->tp);
    return;
  }
  wl__coll_c(g, "out.loss.max.ar", WL_COLL_ALLREDUCE, R_TP, g->T * 4);
  if (ce == WL_CE_NATIVE) /* the target logit and the sum, concatenated */
    wl__coll_c(g, "out.loss.sum.ar", WL_COLL_ALLREDUCE, R_TP, g->T * 8);
  else {
    wl__coll_c(g, "out.loss.target.ar", WL_COLL_ALLREDUCE, R_TP, g->T * 4);
    wl__coll_c(g, "out.loss.sum.ar", WL_COLL_ALLREDUCE, R_TP, g->T * 4);
  }
}

void wl__output_bwd(wl__gen *g)
{
  double V = (double)wl__vocab_padded(g->m, g->l->tp) / g->t;
  wl__elem(g, "out.loss.bwd", g->T * V, ce_of(g->l->ce_fusion, g->l->tp).bwd / 2,
           g->l->ce_fusion == WL_CE_TE ? 1 : 3);
  wl__col_gemm c = {"", "out.logits.dgrad", "out.logits.wgrad", V, g->h, 1, 0};
  int gd = out_dtype_enter(g);
  wl__col_bwd(g, &c, 1, "out.tp.ag.wgrad", g->l->sp ? "out.tp.rs.dgrad" : "out.tp.ar.dgrad");
  g->gemm_dtype = gd;
  norm_bwd(g, "out.ln.bwd", g->Tsp * g->h);
}
