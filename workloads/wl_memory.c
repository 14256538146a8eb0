/* wl_memory.c — memory per rank: weights, gradients, optimizer state and
 * activations per pipeline stage, and the peak.
 *
 * Weights, gradients and optimizer state follow Megatron-LM's distributed
 * optimizer accounting (docs/distrib_optimizer.md: 2 + grad + 12 bytes per
 * parameter, the 12 sharded over the data-parallel group with zero>=1;
 * gradients sharded too with zero>=2, weights with zero=3).
 *
 * Activations are the tensor inventory of Korthikanti et al. 2022 ("Reducing
 * Activation Recomputation in Large Transformer Models", Sec. 4), generalised
 * to GQA, SwiGLU, MoE and context parallelism: for a GPT layer it gives
 * exactly sbh(34 + 5as/h) bytes, sbh(10 + 24/t + 5as/(ht)) with tensor
 * parallelism, sbh/t (34 + 5as/h) with sequence parallelism, 34 sbh/t with
 * selective recomputation and 2sbh(/t) with full recomputation.  Fused
 * (flash) attention stores no s^2 tensors, only the softmax statistics.
 * The number of micro-batches alive at the peak comes from the schedule
 * itself (wl__peak_alive), layers counted per virtual stage.
 *
 * Expert weights are sharded by etp x ep (Megatron-core's expert tensor and
 * expert model parallel groups) and their optimizer state over the expert
 * data-parallel group (tp cp dp / (etp ep) ranks); the embedding sits on the
 * first stage and the output layer on the last, whatever the split.
 *
 * With host-memory offload (wl_offload.c) the optimizer state, the sharded
 * gradients and (offload=params) the parameter shard leave the GPU and are
 * counted as the rank's host_bytes instead.
 */
#include <math.h>
#include <string.h>

#include "wl_gen_int.h"
#include "workload.h"

/* Activation bytes one layer keeps for one micro-batch. */
static double layer_act(const wl_model *m, const wl_layout *l, int layer, int recompute)
{
  double b = l->mbs, sl = (double)m->seq_len / l->cp, s = m->seq_len, h = m->hidden;
  double t = l->tp, rep = l->sp ? 1.0 / t : 1.0;
  double sbh = b * sl * h;
  if (recompute == WL_RECOMPUTE_FULL)
    return 2 * sbh * rep; /* the layer's input only */
  double a = m->heads, kv = m->kv_heads, dqk = m->head_dim, dv = m->head_dim;
  if (recompute == WL_RECOMPUTE_OP) {
    /* torchtitan's per-op policy (dense blocks, wl_gen_layer.c): the block's
     * input and what the policy saves: the kept matmuls' outputs (Llama's
     * wq, wv, w1, w2; a fused-QKV block's qkv and fc1), attention's output
     * and its log-sum-exp; Llama's w2 output is taken before the TP
     * reduction, whole rows on every TP rank */
    double tk = b * sl, f = m->ffn_hidden;
    double x = 2 * sbh * rep + 2 * tk * a * dv / t + 4 * tk * a / t;
    if (m->ffn_act == WL_ACT_SWIGLU)
      x += 2 * tk * (a * dqk + kv * dv + f) / t + 2 * tk * h;
    else
      x += 2 * tk * (a * dqk + 2 * kv * dqk) / t + 2 * tk * f / t;
    return x;
  }
  if (m->has_mla) {
    kv = a;
    dqk = m->mla.qk_nope_head_dim + m->mla.qk_rope_head_dim;
    dv = m->mla.v_head_dim;
  }
  double tok = b * sl;
  double mask = l->dropout > 0 ? 1 : 0; /* dropout's masks, kept only with dropout */
  /* bytes an element of a linear layer's saved input: under fp8 Transformer
   * Engine's modules (Megatron-core's, llm-foundry's te.Linear) keep the fp8
   * cast their GEMM ran on, one byte (module/linear.py: the quantized input,
   * its row-wise or column-wise data alone); the router, attention's Q, K, V
   * and every norm's and activation's input stay in the model dtype */
  double li = l->dtype == WL_DTYPE_FP8 &&
                      (l->dp_impl == WL_DP_MEGATRON || l->dp_impl == WL_DP_FSDP)
                  ? 1
                  : 2;
  /* recompute=selective's modules (Megatron-core's recompute_modules): what
   * they discard or checkpoint is not kept (wl_gen_layer.c re-runs it) */
  int rcm = recompute == WL_RECOMPUTE_SELECTIVE ? l->recompute_modules : 0;
  int moe = wl__is_moe_layer(m, layer);
  if (moe && (rcm & WL_RCM_MOE))
    rcm &= ~(WL_RCM_MOE_ACT | WL_RCM_SHARED_EXPERTS); /* inside the layer's checkpoint */
  double up = m->has_mla && (rcm & WL_RCM_MLA_UP_PROJ) ? 0 : 1; /* Q, K, V kept */
  double ln1 = m->has_mla && (rcm & WL_RCM_LAYERNORM) ? 0 : 1;  /* MLA's input norm's output */
  /* attention block */
  double x = 2 * sbh * rep                 /* input norm's input */
             + ln1 * li * sbh * rep        /* QKV GEMM input */
             + up * 2 * tok * a * dqk / t  /* Q */
             + up * 2 * tok * kv * dqk / t /* K */
             + up * 2 * tok * kv * dv / t  /* V */
             + li * tok * a * dv / t       /* projection input (attention output) */
             + mask * sbh * rep;           /* dropout mask */
  if (!l->flash && !(rcm & WL_RCM_CORE_ATTN)) /* softmax out 2; with dropout its */
    x += (2 + 3 * mask) * a * b * sl * s / t;         /* mask 1 and dropout out 2 */
  if (l->flash)
    x += 4 * tok * a / t; /* softmax log-sum-exp, fp32 */
  /* MLP block */
  double gate = m->ffn_act == WL_ACT_SWIGLU ? 2 : 1;
  x += 2 * sbh * rep + mask * sbh * rep; /* post-attention norm's input, dropout mask */
  x += (m->norms_per_layer - 2) * 2 * sbh * rep; /* Gemma 2: norms after attention and MLP */
  if (m->qk_norm)
    x += 2 * tok * (a + kv) * dqk / t; /* the query and key norms' inputs */
  /* an MoE layer's pre-MLP norm output: the router's and the dispatch's
   * input, or the recomputed layer's checkpoint input; discarded under
   * layernorm (a module of its own there) */
  double ln2_out = moe && !(rcm & WL_RCM_LAYERNORM) ? 2 * sbh * rep : 0;
  if (moe && !(rcm & WL_RCM_MOE)) {
    const wl_moe *mo = &m->moe;
    double cf = mo->capacity_factor > 0 ? mo->capacity_factor : 1;
    /* tokens through this rank's experts: its own (T/tp with SP) x top_k,
     * gathered over the expert-TP group */
    double te = tok * l->etp / (l->sp ? t : 1) * mo->top_k * cf, ef = mo->expert_ffn_hidden;
    double act_out = rcm & WL_RCM_MOE_ACT ? 0 : 1;
    x += ln2_out                            /* router input (the norm's output) */
         + 4 * tok * rep * mo->experts      /* router probabilities, fp32 */
         + li * te * h                      /* expert fc1 input (expert-TP-gathered) */
         + 2 * te * gate * ef / l->etp      /* activation input */
         + act_out * li * te * ef / l->etp  /* expert fc2 input (the activation's output) */
         + 2 * tok * rep * mo->top_k * cf * h; /* combine input */
    if (mo->shared_experts) {
      double f = mo->shared_experts * ef;
      if (rcm & WL_RCM_SHARED_EXPERTS)
        x += 2 * sbh * rep; /* its checkpoint keeps only its input */
      else
        x += li * sbh * rep + 2 * tok * gate * f / t + li * tok * f / t; /* fc1, act, fc2 */
    }
  } else if (moe) {
    x += ln2_out; /* recomputed: its input only */
  } else if (!(rcm & WL_RCM_MLP)) {
    double f = m->ffn_hidden;
    x += li * sbh * rep             /* fc1 input */
         + 2 * tok * gate * f / t   /* activation input */
         + li * tok * f / t;        /* fc2 input */
  }
  return x;
}

int wl_memory_estimate(const wl_model *m, const wl_layout *l, wl_memory *out, st_err *err)
{
  if (l->pp < 1 || l->pp > WL_MAX_STAGES)
    return st_err_set(err, ST_EINPUT, "layout '%s': pp %d is outside 1..%d", l->spec, l->pp,
                      WL_MAX_STAGES);
  memset(out, 0, sizeof *out);
  out->num_stages = l->pp;
  double pb = 2, gb = wl_dtype_bytes(l->grad_dtype);
  double dpcp = (double)l->dp * l->cp, edp = l->edp;
  double b = l->mbs, sl = (double)m->seq_len / l->cp, h = m->hidden, t = l->tp;
  double rep = l->sp ? 1.0 / t : 1.0;
  for (int s = 0; s < l->pp; s++) {
    wl_memory_stage *st = &out->stages[s];
    double dense = 0, expert = 0, act_max = 0, z3_layer = 0;
    int nl = wl_layout_stage_layers(l, m, s);
    /* layers of all chunks of this stage */
    double act_chunk = 0; /* recompute_layers: the most a chunk's layers keep, per layer */
    for (int c = 0; c < l->vpp; c++) {
      int first, count;
      double chunk_act = 0;
      wl__chunk_layers(l, m, s, c, &first, &count);
      for (int i = first; i < first + count; i++) {
        wl__params lp;
        wl__layer_params(m, l->tp, l->etp, l->ep, i, &lp);
        dense += lp.attn + lp.mlp;
        expert += lp.expert;
        /* recompute_layers: the first ones of the chunk keep their input
         * only, the rest all their activations */
        int rc = l->recompute_layers && i - first >= l->recompute_layers ? WL_RECOMPUTE_NONE
                                                                           : l->recompute;
        double a = layer_act(m, l, i, rc);
        if (a > act_max)
          act_max = a;
        chunk_act += a;
        double zl = (lp.attn + lp.mlp + lp.expert) * pb;
        if (zl > z3_layer)
          z3_layer = zl;
      }
      if (count > 0 && chunk_act / count > act_chunk)
        act_chunk = chunk_act / count;
    }
    if (s == 0)
      dense += wl__embedding_params(m, l->tp);
    if (s == l->pp - 1)
      dense += wl__output_params(m, l->tp, l->pp);
    st->layers = nl;
    st->params = dense + expert;
    double dshard = dense / dpcp, xshard = expert / edp;
    st->weights_bytes = (l->zero == 3 ? dshard + xshard : dense + expert) * pb;
    st->grads_bytes = (l->zero >= 2 ? dshard + xshard : dense + expert) * gb;
    st->optimizer_bytes = 12 * (l->zero >= 1 ? dshard + xshard : dense + expert);
    if (l->zero == 3 && (l->dp_impl == WL_DP_FSDP || l->dp_impl == WL_DP_FSDP2)) {
      /* PyTorch FSDP's mixed precision keeps the sharded parameters in
       * full precision and casts them to the model dtype only when it
       * gathers them: the fp32 shard is the weight and the optimizer's
       * parameter at once, with no master copy (FSDP1 MixedPrecision,
       * FSDP2 MixedPrecisionPolicy): 4 + grad + 8 bytes a parameter */
      st->weights_bytes = (dshard + xshard) * 4;
      st->optimizer_bytes = 8 * (dshard + xshard);
    }
    /* FSDP2 under a pipeline (wl_gen_zero.c, fsdp2_kept): the stage's
     * parameters stay gathered from its first forward to its last backward,
     * and its gradients accumulate unsharded in reduce_dtype */
    int pp_kept = wl__fsdp2_kept(l);
    if (pp_kept) {
      st->weights_bytes += (dense + expert) * pb;
      st->grads_bytes += (dense + expert) * gb;
    }
    st->act_layer_bytes = act_max;
    /* the schedule's moment with the most layers alive; a chunk's layers
     * are per virtual stage (account_embedding, pp_layout: not all alike) */
    int chunks = 0, alive_layers = 0;
    wl__peak_alive(l, s, &chunks, &alive_layers);
    double per_chunk = chunks ? (double)alive_layers / chunks : 0;
    st->inflight = (double)chunks / l->vpp;
    /* with recompute_layers a chunk's layers differ: each alive layer at
     * the mean of the chunk that keeps the most */
    st->activations_bytes = (l->recompute_layers ? act_chunk : act_max) * per_chunk * chunks;
    /* embedding output's dropout mask on the first stage, per micro-batch alive
     * (with dropout); final norm, logits input and what the loss's cross
     * entropy keeps for its backward on the last (one micro-batch at a time,
     * all of them under GPipe; ce_fusion, wl_gen_layer.c) */
    if (s == 0 && l->dropout > 0)
      st->activations_bytes += b * sl * h * rep * chunks / l->vpp;
    if (s == l->pp - 1) {
      double V = (double)wl__vocab_padded(m, l->tp) / t, kept, peak;
      double alive = l->schedule == WL_SCHED_GPIPE ? l->num_microbatches : 1;
      wl__loss_memory(l, &kept, &peak);
      st->activations_bytes += alive * (2 * b * sl * h * rep + 2 * b * sl * h + kept * b * sl * V);
      st->loss_work_bytes = (peak - kept) * b * sl * V; /* held beyond what it keeps */
    }
    if (l->recompute == WL_RECOMPUTE_FULL) {
      double w = 0;
      for (int c = 0; c < l->vpp; c++) {
        int first, count;
        wl__chunk_layers(l, m, s, c, &first, &count);
        for (int i = first; i < first + count; i++) {
          double a = layer_act(m, l, i, WL_RECOMPUTE_NONE);
          if (a > w)
            w = a;
        }
      }
      st->recompute_work_bytes = w; /* one layer's full activations while recomputed */
    }
    /* the larger of two moments' working memory beside everything kept: the
     * cross entropy's, or a recomputed layer's, which comes after the loss's
     * backward */
    st->other_bytes = fmax(st->loss_work_bytes, st->recompute_work_bytes);
    double root = (wl__embedding_params(m, l->tp) + wl__output_params(m, l->tp, l->pp)) * pb;
    double zp = z3_layer / pb; /* parameters of the largest layer, one rank */
    if (l->zero == 3 && l->dp_impl == WL_DP_FSDP)
      /* limit_all_gathers: two unsharded flat parameters; the root unit; the
       * unsharded gradient of one unit and its reduce_dtype copy */
      st->other_bytes += 2 * z3_layer + root + zp * (pb + (gb != pb ? gb : 0));
    else if (pp_kept)
      /* a layer's gradient in the parameter dtype before it is accumulated,
       * and a layer's reduce-scatter input after the last backward */
      st->other_bytes += zp * (pb + gb);
    else if (l->zero == 3 && l->dp_impl == WL_DP_FSDP2 && !l->reshard_after_forward)
      /* every layer of the stage still gathered when its backward starts,
       * and the root; a layer's gradient and reduce-scatter input */
      st->other_bytes += (dense + expert) * pb + zp * (pb + gb);
    else if (l->zero == 3 && l->dp_impl == WL_DP_FSDP2)
      /* the layer computing and the one prefetched, the all-gather output
       * being copied out, the root; the unsharded gradient and the
       * reduce-scatter input in reduce_dtype */
      st->other_bytes += 3 * z3_layer + root + zp * (pb + gb);
    else if (l->zero == 3 && l->dp_impl == WL_DP_DEEPSPEED) {
      /* the layers kept gathered from forward to backward (re-used within
       * stage3_max_reuse_distance = 1e9 elements) and the one prefetched,
       * at most stage3_max_live_parameters = 1e9; the root; the reduce
       * bucket (reduce_bucket_size = 5e8 elements in the gradient dtype) */
      double kept = 0, after = 0;
      for (int i = m->layers - 1; i >= 0; i--) {
        wl__params lp;
        wl__layer_params(m, l->tp, l->etp, l->ep, i, &lp);
        if (2 * after < 1e9)
          kept += lp.attn + lp.mlp + lp.expert;
        after += lp.attn + lp.mlp + lp.expert;
      }
      st->other_bytes += fmin(kept + zp, 1e9) * pb + root + 5e8 * gb;
    } else if (l->zero == 3) /* two gathered layers in flight, and the root unit */
      st->other_bytes += 2 * z3_layer + root;
    wl__offload_memory(l, dshard + xshard, st);
    st->peak_bytes = st->weights_bytes + st->grads_bytes + st->optimizer_bytes +
                     st->activations_bytes + st->other_bytes;
    if (st->peak_bytes > out->peak_bytes) {
      out->peak_bytes = st->peak_bytes;
      out->peak_stage = s;
    }
  }
  return ST_OK;
}
