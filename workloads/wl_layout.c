/* wl_layout.c — parallel layout specs ("tp=8,pp=4,mbs=1,gbs=512,...") and the
 * pipeline schedules.
 *
 * A layout is parsed into a request (the keys given) and resolved against a
 * model and a GPU count by wl_layout_resolve(), the one place that holds the
 * validity rules, so that anything enumerating layouts judges them as the
 * parser does.  Every disagreement between the numbers is an error that
 * names them; what is left unsaid takes Megatron-LM's defaults
 * (docs/workloads.md lists them).  The canonical spec (every key, resolved)
 * is what the workload's meta records.
 *
 * Layers go to virtual stages the four ways Megatron-core knows
 * (transformer_block.py get_num_layers_to_build, transformer_layer.py
 * get_transformer_layer_offset): an even split; uneven first and last
 * stages (num_layers_in_{first,last}_pipeline_stage, each divided by vpp);
 * the embedding and the loss counted as layers
 * (account_for_{embedding,loss}_in_pipeline_split: (layers + 2) / (pp vpp)
 * per virtual stage, one fewer transformer layer on the first and the last);
 * or a pipeline_model_parallel_layout string
 * (pipeline_parallel_layer_layout.py).  The result is a table of layers per
 * virtual stage; the embedding is always on virtual stage 0 and the output
 * layer on the last, where Megatron builds them (pre_process/post_process).
 *
 * Experts follow Megatron-core's MoE parallel folding
 * (parallel_state.initialize_model_parallel): the tp x cp x dp ranks of a
 * stage are re-read as etp x ep x edp, so ep need not divide dp.
 *
 * Schedules follow Megatron-LM's megatron/core/pipeline_parallel/schedules.py:
 * forward_backward_pipelining_without_interleaving (1F1B: warm-up of
 * p - s - 1 forwards, steady one-forward-one-backward, cool-down backwards)
 * and forward_backward_pipelining_with_interleaving (warm-up of
 * 2(p - s - 1) + (v - 1)p virtual micro-batches, chunk ids from
 * get_model_chunk_id).  GPipe runs every forward, then the backwards in
 * reverse micro-batch order (torchgpipe).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_gen_int.h"
#include "workload.h"

static const char *const recompute_names[WL_RECOMPUTE_COUNT] = {"none", "selective", "full",
                                                                 "op"};
static const char *const schedule_names[WL_SCHED_COUNT] = {"1f1b", "gpipe", "interleaved"};
static const char *const dp_impl_names[WL_DP_IMPL_COUNT] = {"megatron", "fsdp", "fsdp2",
                                                           "deepspeed"};
static const char *const bwd_prefetch_names[WL_BWD_PREFETCH_COUNT] = {"pre", "post", "none"};
static const char *const optim_impl_names[WL_OPTIM_COUNT] = {"fused", "foreach", "loop"};
static const char *const ce_fusion_names[WL_CE_COUNT] = {
    "none", "native", "te", "torch", "torch_fp32", "hf", "flash", "torch_compiled"};

/* The cross entropy a framework runs unless told otherwise: Megatron-core's
 * unfused one; for the PyTorch frameworks F.cross_entropy on fp32 logits,
 * as torchtitan and Hugging Face models cast them before the loss. */
static int ce_default(const wl_layout *l)
{
  return l->dp_impl == WL_DP_MEGATRON ? WL_CE_NONE : WL_CE_TORCH_FP32;
}

/* Whether a cross entropy is one of Megatron-core's (none, native, te). */
static int ce_megatron(int ce) { return ce >= 0 && ce <= WL_CE_TE; }
static const char *const fp8_recipe_names[WL_FP8_RECIPE_COUNT] = {"delayed", "current"};
static const char *const moe_dispatcher_names[WL_MOE_DISPATCHER_COUNT] = {"alltoall", "flex"};
static const char *const rcm_names[WL_RCM_COUNT] = {"core_attn", "moe_act",    "layernorm",
                                                    "mla_up_proj", "mlp",     "moe",
                                                    "shared_experts"};

static const char *const attn_impl_names[WL_ATTN_COUNT] = {"default", "cudnn", "fa2", "fa3",
                                                           "triton",  "fa1"};

const char *wl_attn_impl_name(int a)
{
  return a >= 0 && a < WL_ATTN_COUNT ? attn_impl_names[a] : "?";
}

/* The fused attention a framework runs when the layout does not say:
 * Megatron-core through Transformer Engine, whose backend choice prefers
 * cuDNN's fused attention on Hopper and later (the device's default), and
 * the PyTorch frameworks through scaled_dot_product_attention, whose flash
 * backend is FlashAttention-2 (docs/workloads.md). */
static int attn_impl_default(int dp_impl)
{
  return dp_impl == WL_DP_MEGATRON ? WL_ATTN_DEFAULT : WL_ATTN_FA2;
}

const char *wl_recompute_name(int r)
{
  return r >= 0 && r < WL_RECOMPUTE_COUNT ? recompute_names[r] : "?";
}
const char *wl_schedule_name(int s)
{
  return s >= 0 && s < WL_SCHED_COUNT ? schedule_names[s] : "?";
}
const char *wl_dp_impl_name(int d)
{
  return d >= 0 && d < WL_DP_IMPL_COUNT ? dp_impl_names[d] : "?";
}

/* PyTorch's own FSDP (FSDP1 or FSDP2), whose defaults several keys follow. */
static int torch_fsdp(int dp_impl)
{
  return dp_impl == WL_DP_FSDP || dp_impl == WL_DP_FSDP2;
}

/* The Adam a framework runs when the layout does not say: Megatron-core's
 * and DeepSpeed's FusedAdam, and for the PyTorch FSDPs torch.optim.AdamW,
 * whose default on CUDA is its multi-tensor (foreach) path. */
static int optim_impl_default(int dp_impl)
{
  return torch_fsdp(dp_impl) ? WL_OPTIM_FOREACH : WL_OPTIM_FUSED;
}

/* Whether a recompute=full layer's re-run stops early when the layout does
 * not say: under the PyTorch FSDPs' checkpoint_wrapper (non-reentrant). */
static int rc_early_stop_default(const wl_layout *l)
{
  return l->recompute == WL_RECOMPUTE_FULL && torch_fsdp(l->dp_impl);
}

enum {
  K_TP, K_PP, K_DP, K_CP, K_EP, K_VPP, K_SP, K_MBS, K_GBS, K_ZERO, K_RECOMPUTE, K_SCHEDULE,
  K_DTYPE, K_GRAD_DTYPE, K_OVERLAP_GRAD, K_OVERLAP_PARAM, K_BUCKET, K_FLASH, K_FIRST, K_LAST,
  K_TP_OVERLAP, K_ETP, K_ACCOUNT_EMB, K_ACCOUNT_LOSS, K_PP_LAYOUT, K_DP_IMPL, K_STAGE_LAYERS,
  K_DP_MB, K_BALANCE, K_OFFLOAD, K_ATTN_IMPL, K_EAGER, K_BWD_PREFETCH, K_TP_ASYNC, K_PP_SCATTER,
  K_DROPOUT, K_CE_FUSION, K_FP8_RECIPE, K_FP8_PARAM_GATHER, K_MOE_DISPATCHER, K_RCM, K_MOE_A2A,
  K_MOE_SHARED, K_OPTIM_IMPL, K_GRAD_CLIP, K_RECOMPUTE_LAYERS, K_RC_EARLY_STOP,
  K_TRAIN_METRICS, K_RESHARD, K_GRAD_NAN_CHECK, K_GRAD_SCALE_PASS, K_COUNT
};
static const char *const key_names[K_COUNT] = {
    "tp",    "pp",        "dp",       "cp",    "ep",         "vpp",
    "sp",    "mbs",       "gbs",      "zero",  "recompute",  "schedule",
    "dtype", "grad_dtype", "overlap_grad_reduce", "overlap_param_gather", "bucket", "flash",
    "first_stage_layers", "last_stage_layers", "tp_overlap", "etp", "account_embedding",
    "account_loss", "pp_layout", "dp_impl", "stage_layers", "dp_microbatches", "balance", "offload",
    "attn_impl", "eager", "backward_prefetch", "tp_async", "pp_scatter", "dropout", "ce_fusion",
    "fp8_recipe", "fp8_param_gather", "moe_dispatcher", "recompute_modules", "moe_a2a_overlap",
    "moe_shared_expert_overlap", "optim_impl", "grad_clip", "recompute_layers",
    "recompute_early_stop", "train_metrics", "reshard_after_forward", "grad_nan_check",
    "grad_scale_pass"};
/* NeMo's (Megatron-core TransformerConfig's) names for the keys whose short
 * names differ; a key and its alias are one key ("given twice" if both). */
static const struct {
  const char *name;
  int key;
} key_aliases[] = {
    {"expert_tensor_parallel_size", K_ETP},
    {"account_for_embedding_in_pipeline_split", K_ACCOUNT_EMB},
    {"account_for_loss_in_pipeline_split", K_ACCOUNT_LOSS},
    {"pipeline_model_parallel_layout", K_PP_LAYOUT},
    {"num_layers_in_first_pipeline_stage", K_FIRST},
    {"num_layers_in_last_pipeline_stage", K_LAST},
    {"cross_entropy_fusion_impl", K_CE_FUSION},
    {"moe_token_dispatcher_type", K_MOE_DISPATCHER},
    {"overlap_moe_expert_parallel_comm", K_MOE_A2A},
    {"recompute_num_layers", K_RECOMPUTE_LAYERS},
};

static int parse_int(const char *s, long *v)
{
  char *end;
  errno = 0;
  long x = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || errno || x < 0 || x > 1000000000L)
    return -1;
  *v = x;
  return 0;
}

/* "40000000", "40M", "1.5G" (decimal multipliers: parameters, not bytes) */
static int parse_count(const char *s, double *v)
{
  char *end;
  errno = 0;
  double x = strtod(s, &end);
  if (end == s || errno || !(x >= 0) || !isfinite(x))
    return -1;
  double mult = 1;
  if (*end == 'k' || *end == 'K')
    mult = 1e3, end++;
  else if (*end == 'M' || *end == 'm')
    mult = 1e6, end++;
  else if (*end == 'G' || *end == 'g')
    mult = 1e9, end++;
  if (*end)
    return -1;
  *v = floor(x * mult);
  return 0;
}


static int lookup(const char *const *names, int n, const char *v)
{
  for (int i = 0; i < n; i++)
    if (!strcmp(names[i], v))
      return i;
  return -1;
}

int wl_attn_impl_from_name(const char *s) { return lookup(attn_impl_names, WL_ATTN_COUNT, s); }

static const char *const unfused_pass_names[2] = {"forward", "backward"};
const char *wl_unfused_pass_name(int bwd) { return unfused_pass_names[bwd != 0]; }
int wl_unfused_pass_from_name(const char *s) { return lookup(unfused_pass_names, 2, s); }

static int lookup_key(const char *name)
{
  int k = lookup(key_names, K_COUNT, name);
  for (size_t i = 0; k < 0 && i < sizeof key_aliases / sizeof key_aliases[0]; i++)
    if (!strcmp(key_aliases[i].name, name))
      k = key_aliases[i].key;
  return k;
}

void wl_layout_request_init(wl_layout *l)
{
  memset(l, 0, sizeof *l);
  l->recompute = l->schedule = l->dtype = l->grad_dtype = l->flash = l->dp_impl = l->offload = -1;
  l->attn_impl = l->bwd_prefetch = l->tp_async = l->pp_scatter = -1;
  l->dropout = -1;
  l->ce_fusion = l->fp8_recipe = l->moe_dispatcher = l->recompute_modules = -1;
  l->optim_impl = l->grad_clip = l->recompute_early_stop = l->reshard_after_forward = -1;
  l->grad_nan_check = l->grad_scale_pass = -1;
}

void wl_layout_recompute_modules(const wl_layout *l, char *b, size_t n)
{
  size_t at = 0;
  b[0] = '\0';
  if (l->recompute != WL_RECOMPUTE_SELECTIVE || l->recompute_modules == WL_RCM_CORE_ATTN)
    return;
  for (int i = 0; i < WL_RCM_COUNT; i++)
    if (l->recompute_modules & (1 << i)) {
      int w = snprintf(b + at, n - at, "%s%s", at ? "+" : "", rcm_names[i]);
      if (w < 0 || (size_t)w >= n - at)
        return;
      at += (size_t)w;
    }
}

void wl_layout_software_keys(const wl_layout *l, char *b, size_t n)
{
  char dr[32] = "", ce[32] = "", fr[32] = "", md[32] = "";
  if (l->dropout > 0)
    snprintf(dr, sizeof dr, ",dropout=%g", l->dropout);
  /* the layouts made from these keys are Megatron-core's (search's
   * candidates, balance's probe): a PyTorch framework's loss does not carry */
  if (l->ce_fusion != WL_CE_NONE && ce_megatron(l->ce_fusion))
    snprintf(ce, sizeof ce, ",ce_fusion=%s", ce_fusion_names[l->ce_fusion]);
  if (l->fp8_recipe > 0)
    snprintf(fr, sizeof fr, ",fp8_recipe=%s", fp8_recipe_names[l->fp8_recipe]);
  if (l->moe_dispatcher > 0)
    snprintf(md, sizeof md, ",moe_dispatcher=%s", moe_dispatcher_names[l->moe_dispatcher]);
  snprintf(b, n, "flash=%d%s%s,eager=%d%s%s%s%s%s%s", l->flash, l->flash ? ",attn_impl=" : "",
           l->flash ? wl_attn_impl_name(l->attn_impl) : "", l->eager,
           l->tp_async ? "" : ",tp_async=0", l->pp_scatter ? ",pp_scatter=1" : "", dr, ce, fr,
           md);
}

/* An integer key's value, checked, into the request. */
static void set_int_key(wl_layout *l, int k, int v)
{
  switch (k) {
  case K_TP: l->tp = v; break;
  case K_PP: l->pp = v; break;
  case K_DP: l->dp = v; break;
  case K_CP: l->cp = v; break;
  case K_EP: l->ep = v; break;
  case K_ETP: l->etp = v; break;
  case K_VPP: l->vpp = v; break;
  case K_SP: l->sp = v; break;
  case K_MBS: l->mbs = v; break;
  case K_GBS: l->gbs = v; break;
  case K_ZERO: l->zero = v; break;
  case K_OVERLAP_GRAD: l->overlap_grad_reduce = v; break;
  case K_OVERLAP_PARAM: l->overlap_param_gather = v; break;
  case K_FLASH: l->flash = v; break;
  case K_FIRST: l->first_stage_layers = v; break;
  case K_LAST: l->last_stage_layers = v; break;
  case K_TP_OVERLAP: l->tp_overlap = v; break;
  case K_ACCOUNT_EMB: l->account_embedding = v; break;
  case K_ACCOUNT_LOSS: l->account_loss = v; break;
  case K_EAGER: l->eager = v; break;
  case K_TP_ASYNC: l->tp_async = v; break;
  case K_PP_SCATTER: l->pp_scatter = v; break;
  case K_FP8_PARAM_GATHER: l->fp8_param_gather = v; break;
  case K_MOE_A2A: l->moe_a2a_overlap = v; break;
  case K_MOE_SHARED: l->moe_shared_overlap = v; break;
  case K_GRAD_CLIP: l->grad_clip = v; break;
  case K_RECOMPUTE_LAYERS: l->recompute_layers = v; break;
  case K_RC_EARLY_STOP: l->recompute_early_stop = v; break;
  case K_TRAIN_METRICS: l->train_metrics = v; break;
  case K_RESHARD: l->reshard_after_forward = v; break;
  case K_GRAD_NAN_CHECK: l->grad_nan_check = v; break;
  case K_GRAD_SCALE_PASS: l->grad_scale_pass = v; break;
  default: break;
  }
}

/* The keys whose values are names, from their text in sv. */
static int named_values(wl_layout *l, char sv[][32], const char *spec, st_err *err)
{
#define ERR(...)                                                                         \
  do {                                                                                   \
    st_err_set(err, ST_EINPUT, __VA_ARGS__);                                             \
    return st_err_prefix(err, "layout '%s': ", spec);                                    \
  } while (0)
  if (sv[K_SCHEDULE][0]) {
    l->schedule = lookup(schedule_names, WL_SCHED_COUNT, sv[K_SCHEDULE]);
    if (l->schedule < 0)
      ERR("key 'schedule' value '%s' is unknown (known: 1f1b, gpipe, interleaved)",
          sv[K_SCHEDULE]);
  }
  if (sv[K_DP_IMPL][0]) {
    l->dp_impl = lookup(dp_impl_names, WL_DP_IMPL_COUNT, sv[K_DP_IMPL]);
    if (l->dp_impl < 0)
      ERR("key 'dp_impl' value '%s' is unknown (known: megatron, fsdp, fsdp2, deepspeed)",
          sv[K_DP_IMPL]);
  }
  if (sv[K_ATTN_IMPL][0] && (l->attn_impl = wl_attn_impl_from_name(sv[K_ATTN_IMPL])) < 0)
    ERR("key 'attn_impl' value '%s' is unknown (known: default, cudnn, fa2, fa3, triton, fa1)",
        sv[K_ATTN_IMPL]);
  if (sv[K_BWD_PREFETCH][0] &&
      (l->bwd_prefetch = lookup(bwd_prefetch_names, WL_BWD_PREFETCH_COUNT, sv[K_BWD_PREFETCH])) < 0)
    ERR("key 'backward_prefetch' value '%s' is unknown (known: pre, post, none)",
        sv[K_BWD_PREFETCH]);
  if (sv[K_OPTIM_IMPL][0] &&
      (l->optim_impl = lookup(optim_impl_names, WL_OPTIM_COUNT, sv[K_OPTIM_IMPL])) < 0)
    ERR("key 'optim_impl' value '%s' is unknown (known: fused, foreach, loop)", sv[K_OPTIM_IMPL]);
  if (sv[K_FP8_RECIPE][0] &&
      (l->fp8_recipe = lookup(fp8_recipe_names, WL_FP8_RECIPE_COUNT, sv[K_FP8_RECIPE])) < 0)
    ERR("key 'fp8_recipe' value '%s' is unknown (known: delayed, current)", sv[K_FP8_RECIPE]);
  if (sv[K_CE_FUSION][0] &&
      (l->ce_fusion = lookup(ce_fusion_names, WL_CE_COUNT, sv[K_CE_FUSION])) < 0)
    ERR("key 'ce_fusion' value '%s' is unknown (known: none, native, te, torch, torch_fp32, hf, "
        "flash, torch_compiled)",
        sv[K_CE_FUSION]);
  if (sv[K_MOE_DISPATCHER][0] &&
      (l->moe_dispatcher = lookup(moe_dispatcher_names, WL_MOE_DISPATCHER_COUNT,
                                  sv[K_MOE_DISPATCHER])) < 0)
    ERR("key 'moe_dispatcher' value '%s' is unknown (known: alltoall, flex; Megatron-core's "
        "allgather dispatcher is not modelled)",
        sv[K_MOE_DISPATCHER]);
  if (sv[K_OFFLOAD][0] && (l->offload = wl__offload_from_name(sv[K_OFFLOAD])) < 0)
    ERR("key 'offload' value '%s' is unknown (known: none, optimizer, params, both)",
        sv[K_OFFLOAD]);
  if (sv[K_RECOMPUTE][0]) {
    l->recompute = lookup(recompute_names, WL_RECOMPUTE_COUNT, sv[K_RECOMPUTE]);
    if (l->recompute < 0)
      ERR("key 'recompute' value '%s' is unknown (known: none, selective, full, op)",
          sv[K_RECOMPUTE]);
  }
  if (sv[K_DTYPE][0]) {
    l->dtype = wl_dtype_from_name(sv[K_DTYPE]);
    if (l->dtype != WL_DTYPE_BF16 && l->dtype != WL_DTYPE_FP16 && l->dtype != WL_DTYPE_FP8)
      ERR("key 'dtype' value '%s' is unknown (known: bf16, fp16, fp8)", sv[K_DTYPE]);
  }
  if (sv[K_GRAD_DTYPE][0]) {
    l->grad_dtype = wl_dtype_from_name(sv[K_GRAD_DTYPE]);
    if (l->grad_dtype != WL_DTYPE_FP32 && l->grad_dtype != WL_DTYPE_BF16 &&
        l->grad_dtype != WL_DTYPE_FP16)
      ERR("key 'grad_dtype' value '%s' is unknown (known: fp32, bf16, fp16)", sv[K_GRAD_DTYPE]);
  }
#undef ERR
  return ST_OK;
}

int wl_layout_parse(const char *spec, int num_gpus, const wl_model *m, wl_layout *out, st_err *err)
{
  int given[K_COUNT] = {0};
  char sv[K_COUNT][32];
  memset(sv, 0, sizeof sv);
  wl_layout l;
  wl_layout_request_init(&l);

#define ERR(...)                                                                         \
  do {                                                                                   \
    st_err_set(err, ST_EINPUT, __VA_ARGS__);                                             \
    return st_err_prefix(err, "layout '%s': ", spec);                                    \
  } while (0)

  /* split on ',' into key=value; pp_layout's value runs on over the pieces
   * that hold no '=' (Megatron-LM's layout strings use commas cosmetically:
   * "Et*3|(tt|)*29,m|L"; they are dropped) */
  const char *p = spec;
  while (*p) {
    while (*p == ',' || isspace((unsigned char)*p))
      p++;
    if (!*p)
      break;
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    char item[WL_PP_LAYOUT_MAX + 64];
    if (n >= 96 && !(n < sizeof item && !strncmp(p, "pp_layout=", 10)) &&
        !(n < sizeof item && !strncmp(p, "pipeline_model_parallel_layout=", 31)))
      ERR("item '%.*s...' is too long", 20, p);
    memcpy(item, p, n);
    item[n] = '\0';
    p += n;
    char *eq = strchr(item, '=');
    if (!eq) {
      while (n && isspace((unsigned char)item[n - 1]))
        item[--n] = '\0';
      ERR("item '%s' is not key=value", item);
    }
    *eq = '\0';
    int k = lookup_key(item);
    if (k == K_PP_LAYOUT) {
      while (*p == ',') {
        const char *q = p + 1, *qe = strchr(q, ',');
        size_t qn = qe ? (size_t)(qe - q) : strlen(q);
        if (memchr(q, '=', qn))
          break;
        if (n + qn >= sizeof item)
          ERR("key '%s' value is too long (at most %d characters)", item, WL_PP_LAYOUT_MAX - 1);
        memcpy(item + n, q, qn);
        n += qn;
        item[n] = '\0';
        p = q + qn;
      }
    }
    while (n && isspace((unsigned char)item[n - 1]))
      item[--n] = '\0';
    const char *key = item, *val = eq + 1;
    if (k < 0) {
      char known[800] = "";
      for (int i = 0; i < K_COUNT; i++) {
        strcat(known, i ? ", " : "");
        strcat(known, key_names[i]);
      }
      ERR("key '%s' is unknown (known: %s)", key, known);
    }
    if (given[k])
      ERR("key '%s' is given twice", key_names[k]);
    given[k] = 1;
    long iv = 0;
    if (k == K_RECOMPUTE || k == K_SCHEDULE || k == K_DTYPE || k == K_GRAD_DTYPE ||
        k == K_DP_IMPL || k == K_OFFLOAD || k == K_ATTN_IMPL || k == K_BWD_PREFETCH ||
        k == K_CE_FUSION || k == K_FP8_RECIPE || k == K_MOE_DISPATCHER || k == K_OPTIM_IMPL) {
      snprintf(sv[k], sizeof sv[k], "%s", val);
      continue;
    }
    if (k == K_STAGE_LAYERS || k == K_DP_MB) {
      char *dst = k == K_STAGE_LAYERS ? l.stage_layers : l.dp_microbatches;
      if (strlen(val) >= WL_LIST_MAX)
        ERR("key '%s' value is too long (at most %d characters)", key, WL_LIST_MAX - 1);
      if (!*val)
        ERR("key '%s' is empty", key);
      snprintf(dst, WL_LIST_MAX, "%s", val);
      continue;
    }
    if (k == K_BALANCE) {
      l.balance = !strcmp(val, "compute") ? WL_BALANCE_COMPUTE
                  : !strcmp(val, "time")  ? WL_BALANCE_TIME
                  : !strcmp(val, "none")  ? WL_BALANCE_NONE
                                          : -1;
      if (l.balance < 0)
        ERR("key 'balance' value '%s' is unknown (known: compute, time, none)", val);
      continue;
    }
    if (k == K_RCM) { /* module names joined by '+' (',' separates the keys) */
      l.recompute_modules = 0;
      const char *q = val;
      do {
        size_t len = strcspn(q, "+");
        int found = -1;
        for (int i = 0; i < WL_RCM_COUNT && found < 0; i++)
          if (strlen(rcm_names[i]) == len && !strncmp(q, rcm_names[i], len))
            found = i;
        if (found < 0)
          ERR("key 'recompute_modules' module '%.*s' is unknown (known, joined by '+': "
              "core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts)",
              (int)len, q);
        l.recompute_modules |= 1 << found;
        q += len;
      } while (*q++ == '+');
      continue;
    }
    if (k == K_PP_LAYOUT) {
      if (strlen(val) >= sizeof l.pp_layout)
        ERR("key '%s' value is too long (at most %d characters)", key,
            (int)sizeof l.pp_layout - 1);
      if (!*val)
        ERR("key '%s' is empty", key);
      snprintf(l.pp_layout, sizeof l.pp_layout, "%s", val);
      continue;
    }
    if (k == K_DROPOUT) {
      char *e = NULL;
      double d = strtod(val, &e);
      if (!*val || !e || *e || !(d >= 0 && d < 1))
        ERR("key 'dropout' value '%s' is not a probability in [0, 1)", val);
      l.dropout = d;
      continue;
    }
    if (k == K_BUCKET) {
      double b;
      if (parse_count(val, &b) || b < 1)
        ERR("key 'bucket' value '%s' is not a positive parameter count (like 40M)", val);
      l.bucket_params = b;
      continue;
    }
    if (parse_int(val, &iv))
      ERR("key '%s' value '%s' is not a non-negative integer", key, val);
    int boolean = k == K_SP || k == K_OVERLAP_GRAD || k == K_OVERLAP_PARAM || k == K_FLASH ||
                  k == K_TP_OVERLAP || k == K_ACCOUNT_EMB || k == K_ACCOUNT_LOSS || k == K_EAGER ||
                  k == K_TP_ASYNC || k == K_PP_SCATTER || k == K_FP8_PARAM_GATHER ||
                  k == K_MOE_A2A || k == K_MOE_SHARED || k == K_GRAD_CLIP ||
                  k == K_RC_EARLY_STOP || k == K_RESHARD || k == K_GRAD_NAN_CHECK ||
                  k == K_GRAD_SCALE_PASS;
    if (!boolean && k != K_ZERO && k != K_TRAIN_METRICS && iv < 1) {
      if (k == K_FIRST || k == K_LAST)
        ERR("first_stage_layers/last_stage_layers must be >= 1");
      ERR("key '%s' is 0 (must be >= 1)", key);
    }
    if (boolean && iv > 1)
      ERR("key '%s' is %ld (must be 0 or 1)", key, iv);
    if (k == K_ZERO && iv > 3)
      ERR("key 'zero' is %ld (must be 0, 1, 2 or 3)", iv);
    if (k == K_TRAIN_METRICS && iv > 8)
      ERR("key 'train_metrics' is %ld (at most 8 cross-entropy passes)", iv);
    int v = (int)iv;
    set_int_key(&l, k, v);
  }
  if (named_values(&l, sv, spec, err))
    return ST_EINPUT;
#undef ERR
  int rc = wl_layout_resolve(&l, num_gpus, m, spec, err);
  if (rc == ST_OK)
    *out = l;
  return rc;
}

/* What the request gave (before the defaults fill it in). */
typedef struct res_given {
  int given_dp, given_gbs, given_vpp, given_bucket, given_etp, given_first, given_last;
  int given_rcm;
} res_given;

#define ERR(...)                                                                         \
  do {                                                                                   \
    st_err_set(err, ST_EINPUT, __VA_ARGS__);                                             \
    return st_err_prefix(err, "layout '%s': ", what);                                    \
  } while (0)

/* wl_layout_resolve: the sizes: defaults, dp from the GPUs, the limits. */
static int res_sizes(wl_layout *l, int num_gpus, const wl_model *m, const res_given *gv,
              const char *what, st_err *err)
{
  (void)num_gpus;
  (void)m;
  (void)gv;
  /* sizes not given are 1 */
  int *one[] = {&l->tp, &l->pp, &l->cp, &l->ep, &l->vpp, &l->mbs};
  for (size_t i = 0; i < sizeof one / sizeof one[0]; i++)
    if (*one[i] < 1)
      *one[i] = 1;
  if (l->flash < 0)
    l->flash = 1;
  if (l->tp_async < 0)
    l->tp_async = 1;
  if (l->pp_scatter < 0)
    l->pp_scatter = 0;
  if (l->dropout < 0)
    l->dropout = 0;
  if (l->first_stage_layers < 0 || l->last_stage_layers < 0)
    ERR("first_stage_layers/last_stage_layers must be >= 1");
  long tpc = (long)l->tp * l->pp * l->cp;
  if (gv->given_dp) {
    if (num_gpus > 0 && tpc * l->dp != num_gpus)
      ERR("tp*pp*dp*cp = %d*%d*%d*%d = %ld, but there are %d GPUs", l->tp, l->pp, l->dp, l->cp,
          tpc * l->dp, num_gpus);
  } else if (num_gpus > 0) {
    if (num_gpus % tpc)
      ERR("%d GPUs are not divisible by tp*pp*cp = %d*%d*%d = %ld", num_gpus, l->tp, l->pp, l->cp,
          tpc);
    l->dp = (int)(num_gpus / tpc);
  } else {
    l->dp = 1;
  }
  if (tpc * l->dp > 100000000L)
    ERR("tp*pp*dp*cp = %ld GPUs is too many", tpc * l->dp);
  l->num_gpus = (int)(tpc * l->dp);
  if (l->pp > WL_MAX_STAGES)
    ERR("pp %d exceeds the %d pipeline stages supported", l->pp, WL_MAX_STAGES);
  /* Megatron-LM: expert_tensor_parallel_size defaults to the TP size */
  if (!gv->given_etp)
    l->etp = l->tp;

  return ST_OK;
}

/* wl_layout_resolve: the model's shape against the parallel sizes. */
static int res_shape(wl_layout *l, int num_gpus, const wl_model *m, const res_given *gv,
              const char *what, st_err *err)
{
  (void)num_gpus;
  (void)m;
  (void)gv;
  /* model shape against the layout */
  if (m->heads % l->tp)
    ERR("heads (%d) not divisible by tp (%d)", m->heads, l->tp);
  if (!m->has_mla && m->kv_heads % l->tp)
    ERR("kv_heads (%d) not divisible by tp (%d)", m->kv_heads, l->tp);
  if (m->ffn_hidden % l->tp)
    ERR("ffn_hidden (%d) not divisible by tp (%d)", m->ffn_hidden, l->tp);
  if (m->has_moe && m->moe.expert_ffn_hidden % l->etp)
    ERR("%s (%d) not divisible by %s (%d)", gv->given_etp ? "moe.expert_ffn_hidden" : "ffn_hidden",
        m->moe.expert_ffn_hidden, gv->given_etp ? "etp" : "tp", l->etp);

  return ST_OK;
}

/* wl_layout_resolve: layers per virtual stage. */
static int res_stages(wl_layout *l, int num_gpus, const wl_model *m, const res_given *gv,
              const char *what, st_err *err)
{
  (void)num_gpus;
  (void)m;
  (void)gv;
  /* layers per virtual stage: one of Megatron's four ways */
  int stacking = (l->pp_layout[0] != 0) + (gv->given_first || gv->given_last) +
                 (l->account_embedding || l->account_loss) + (l->stage_layers[0] != 0);
  if (l->stage_layers[0] && stacking > 1)
    ERR("stage_layers cannot be combined with pp_layout, first_stage_layers, last_stage_layers, "
        "account_embedding or account_loss (it gives every stage's layers)");
  if (l->pp_layout[0] && stacking > 1)
    ERR("pp_layout cannot be combined with first_stage_layers, last_stage_layers, "
        "account_embedding or account_loss (Megatron-core: the layout says it all)");
  if ((gv->given_first || gv->given_last) && (l->account_embedding || l->account_loss))
    ERR("first_stage_layers/last_stage_layers cannot be combined with account_embedding or "
        "account_loss (Megatron-core rejects the combination)");
  if (l->pp_layout[0]) {
    char msg[400];
    int prc = wl__pp_layout_split(l, m, gv->given_vpp, msg, sizeof msg);
    if (prc == -2)
      return st_err_set(err, ST_ENOMEM, "out of memory expanding pp_layout");
    if (prc)
      ERR("pp_layout '%s' %s", l->pp_layout, msg);
  }
  if (l->vpp > 1 && l->pp == 1)
    ERR("vpp (%d) needs pp > 1", l->vpp);
  if ((long)l->pp * l->vpp > WL_MAX_VSTAGES)
    ERR("pp*vpp = %d*%d = %ld virtual stages exceed the %d supported", l->pp, l->vpp,
        (long)l->pp * l->vpp, WL_MAX_VSTAGES);
  int nvs = l->pp * l->vpp;
  if (l->stage_layers[0]) {
    char msg[300];
    if (wl__layout_stage_list(l, m, msg, sizeof msg))
      ERR("stage_layers '%s' %s", l->stage_layers, msg);
  } else if (gv->given_first || gv->given_last) {
    /* Megatron-core get_num_layers_to_build with num_layers_in_{first,last}_pipeline_stage:
     * the stage's count covers all its virtual stages */
    if (l->pp < 2)
      ERR("first_stage_layers/last_stage_layers need pp > 1 (pp is %d)", l->pp);
    int fixed = gv->given_first + gv->given_last;
    int rest_stages = l->pp - fixed;
    long rest = (long)m->layers - l->first_stage_layers - l->last_stage_layers;
    if (rest < 0 || (rest_stages == 0 && rest != 0) ||
        (rest_stages > 0 && (rest % rest_stages || rest == 0)))
      ERR("layers (%d) minus first_stage_layers (%d) and last_stage_layers (%d) = %ld not "
          "divisible into the %d other stages",
          m->layers, l->first_stage_layers, l->last_stage_layers, rest, rest_stages);
    for (int s = 0; s < l->pp; s++) {
      int n = s == 0 && gv->given_first            ? l->first_stage_layers
              : s == l->pp - 1 && gv->given_last    ? l->last_stage_layers
                                               : (int)(rest / rest_stages);
      if (n % l->vpp)
        ERR("stage %d has %d layers, not divisible by vpp (%d)", s, n, l->vpp);
      for (int c = 0; c < l->vpp; c++)
        l->vs_layers[c * l->pp + s] = n / l->vpp;
    }
  } else if (!l->pp_layout[0]) {
    /* even split; with account_for_{embedding,loss}_in_pipeline_split the
     * embedding and the loss count as one layer each and the first (last)
     * virtual stage builds one transformer layer fewer */
    long n = (long)m->layers + l->account_embedding + l->account_loss;
    if (n % nvs) {
      if (l->account_embedding || l->account_loss)
        ERR("layers (%d) + embedding (%d) + loss (%d) = %ld not divisible by pp*vpp = %d*%d = "
            "%d",
            m->layers, l->account_embedding, l->account_loss, n, l->pp, l->vpp, nvs);
      ERR("layers (%d) not divisible by pp*vpp = %d*%d = %d (first_stage_layers and "
          "last_stage_layers, account_embedding and account_loss, or pp_layout give other "
          "splits)",
          m->layers, l->pp, l->vpp, nvs);
    }
    for (int vs = 0; vs < nvs; vs++)
      l->vs_layers[vs] = (int)(n / nvs);
    l->vs_layers[0] -= l->account_embedding;
    l->vs_layers[nvs - 1] -= l->account_loss;
    if (l->vs_layers[0] < 0 || l->vs_layers[nvs - 1] < 0)
      ERR("layers (%d) + embedding (%d) + loss (%d) = %ld over pp*vpp = %d virtual stages "
          "leave none for the embedding or the loss to replace",
          m->layers, l->account_embedding, l->account_loss, n, nvs);
  }
  for (int vs = nvs; vs < WL_MAX_VSTAGES; vs++)
    l->vs_layers[vs] = 0;
  return ST_OK;
}

/* wl_layout_resolve: batch and sequence. */
static int res_batch(wl_layout *l, int num_gpus, const wl_model *m, const res_given *gv,
              const char *what, st_err *err)
{
  (void)num_gpus;
  (void)m;
  (void)gv;
  /* batch */
  long mbs_dp = (long)l->mbs * l->dp; /* (both fit an int, their product need not) */
  if (mbs_dp > INT_MAX)
    ERR("mbs*dp = %d*%d = %ld sequences a step is more than %d", l->mbs, l->dp, mbs_dp, INT_MAX);
  l->gbs = gv->given_gbs ? l->gbs : (int)mbs_dp;
  if (!l->dp_microbatches[0] && l->gbs % mbs_dp)
    ERR("gbs (%d) not divisible by mbs*dp = %d*%d = %ld", l->gbs, l->mbs, l->dp, mbs_dp);
  l->num_microbatches = (int)(l->gbs / mbs_dp); /* dp_microbatches: set below */
  /* sequence */
  if (m->positions > 0 && m->seq_len > m->positions)
    ERR("seq_len (%d) exceeds the model's %d learned positions", m->seq_len, m->positions);
  if (l->cp > 1 && m->sliding_window && m->seq_len > m->sliding_window)
    ERR("cp (%d) with the model's sliding attention window (%d) shorter than seq_len (%d): "
        "context parallelism over windowed layers is not modelled",
        l->cp, m->sliding_window, m->seq_len);
  l->sp = l->tp > 1 ? l->sp : 0; /* Megatron turns SP off when tp == 1 */
  if (l->cp > 1 && m->seq_len % (2 * l->cp))
    ERR("seq_len (%d) not divisible by 2*cp = %d (context parallelism splits it into 2*cp "
        "chunks)",
        m->seq_len, 2 * l->cp);
  if (l->sp && (m->seq_len / l->cp) % l->tp)
    ERR("seq_len/cp = %d/%d = %d not divisible by tp (%d) for sequence parallelism",
        m->seq_len, l->cp, m->seq_len / l->cp, l->tp);
  /* Megatron-LM's sequence parallelism overlaps its backward collectives
   * with wgrad by construction (LinearWithGradAccumulationAndAsync-
   * Communication); the synchronous backward is the code from before it */
  if (!l->tp_async && l->sp)
    ERR("tp_async=0 needs sp=0 (Megatron-LM's sequence parallelism always overlaps its "
        "backward all-gather and reduce-scatter with the weight gradients)");
  /* Megatron-LM turned its scatter/gather of pipeline tensors off under
   * sequence parallelism, whose tensors are already split */
  if (l->pp_scatter && l->sp)
    ERR("pp_scatter=1 needs sp=0 (under sequence parallelism the pipeline's tensors are "
        "already split across the TP group)");
  /* Megatron-LM asserts sequence_parallel under --tp-comm-overlap (and turns
   * SP off when tp == 1) */
  if (l->tp_overlap && !l->sp)
    ERR("tp_overlap=1 needs sp=1 and tp > 1 (Megatron-LM's --tp-comm-overlap overlaps the "
        "sequence-parallel all-gathers and reduce-scatters); sp is %d, tp is %d",
        l->sp, l->tp);
  /* torchtitan's per-op policy counts the matmuls of a dense block; its MoE
   * and MLA blocks run other matmuls (grouped experts, latent projections) */
  if (l->recompute == WL_RECOMPUTE_OP && (m->has_moe || m->has_mla))
    ERR("recompute=op (torchtitan's per-op selective checkpointing) is modelled for dense "
        "blocks; model '%s' has %s layers",
        m->name, m->has_moe ? "MoE" : "MLA");
  /* torchtitan runs its per-op policy with AsyncTP (tp_overlap=1 under the
   * PyTorch frameworks); Megatron-LM has no per-op policy */
  if (l->recompute == WL_RECOMPUTE_OP && l->tp_overlap &&
      (l->dp_impl < 0 || l->dp_impl == WL_DP_MEGATRON))
    ERR("recompute=op (torchtitan's) with tp_overlap=1 under dp_impl=megatron is not a "
        "combination either framework runs (torchtitan's AsyncTP is tp_overlap=1 under "
        "dp_impl=fsdp2)");
  return ST_OK;
}

/* wl_layout_resolve: the expert groups. */
static int res_experts(wl_layout *l, int num_gpus, const wl_model *m, const res_given *gv,
              const char *what, st_err *err)
{
  (void)num_gpus;
  (void)m;
  (void)gv;
  /* experts: Megatron-core's MoE parallel folding (initialize_model_parallel):
   * the expert grid of a stage is etp x ep x edp over its tp x cp x dp ranks */
  if (l->ep > 1 && !m->has_moe)
    ERR("ep (%d) needs a model with 'moe'", l->ep);
  if (gv->given_etp && !m->has_moe)
    ERR("etp (%d) needs a model with 'moe'", l->etp);
  long dense = (long)l->tp * l->cp * l->dp, grid = (long)l->etp * l->ep;
  if (dense % grid)
    ERR("etp*ep = %d*%d = %ld does not divide tp*cp*dp = %d*%d*%d = %ld (the expert-parallel "
        "group is drawn from the TP x CP x DP ranks of a stage)",
        l->etp, l->ep, grid, l->tp, l->cp, l->dp, dense);
  l->edp = (int)(dense / grid);
  if (m->has_moe && m->moe.experts % l->ep)
    ERR("moe.experts (%d) not divisible by ep (%d)", m->moe.experts, l->ep);
  if (m->has_moe && l->tp > 1 && !l->sp)
    ERR("a MoE model with tp (%d) > 1 needs sp=1 (as Megatron-LM requires)", l->tp);
  return ST_OK;
}

/* wl_layout_resolve: the pipeline schedule. */
static int res_schedule(wl_layout *l, int num_gpus, const wl_model *m, const res_given *gv,
              const char *what, st_err *err)
{
  (void)num_gpus;
  (void)m;
  (void)gv;
  /* schedule */
  if (l->schedule < 0)
    l->schedule = l->vpp > 1 ? WL_SCHED_INTERLEAVED : WL_SCHED_1F1B;
  if (l->schedule == WL_SCHED_INTERLEAVED && l->vpp < 2)
    ERR("schedule 'interleaved' needs vpp > 1 (vpp is %d)", l->vpp);
  if (l->schedule != WL_SCHED_INTERLEAVED && l->vpp > 1)
    ERR("vpp (%d) needs schedule 'interleaved' (schedule is '%s')", l->vpp,
        schedule_names[l->schedule]);
  if (l->dp_microbatches[0]) {
    char msg[300];
    if (wl__layout_dp_list(l, msg, sizeof msg))
      ERR("dp_microbatches '%s' %s", l->dp_microbatches, msg);
  }
  if (l->schedule == WL_SCHED_INTERLEAVED && l->num_microbatches % l->pp)
    ERR("schedule 'interleaved': micro-batches gbs/(mbs*dp) = %d not divisible by pp (%d)",
        l->num_microbatches, l->pp);
  return ST_OK;
}

/* Megatron's own DDP: its gradient buffers, buckets and passes
 * (grad_nan_check, grad_scale_pass). */
static int megatron_ddp(const wl_layout *l)
{
  return l->dp_impl == WL_DP_MEGATRON && l->zero < 3;
}

/* wl_layout_resolve: recomputation, precision, data parallelism and offload. */
static int res_precision_dp(wl_layout *l, int num_gpus, const wl_model *m, const res_given *gv,
              const char *what, st_err *err)
{
  (void)num_gpus;
  (void)m;
  (void)gv;
  /* recomputation and precision; recompute_modules is Megatron-core's
   * selective recomputation (it implies recompute=selective) */
  if (l->recompute_modules >= 0 && l->recompute < 0)
    l->recompute = WL_RECOMPUTE_SELECTIVE;
  if (l->recompute < 0)
    l->recompute = WL_RECOMPUTE_NONE;
  if (l->recompute_modules >= 0 && l->recompute != WL_RECOMPUTE_SELECTIVE)
    ERR("recompute_modules is Megatron-core's selective recomputation: it needs "
        "recompute=selective (recompute is %s)",
        recompute_names[l->recompute]);
  if (l->recompute_modules < 0)
    l->recompute_modules = l->recompute == WL_RECOMPUTE_SELECTIVE ? WL_RCM_CORE_ATTN : 0;
  /* Megatron-LM's --recompute-method block: the first recompute_num_layers
   * layers of each model chunk recomputed in full (a chunk with fewer
   * recomputes them all, as TransformerBlock._checkpointed_forward) */
  if (l->recompute_layers > 0 && l->recompute != WL_RECOMPUTE_FULL)
    ERR("recompute_layers (%d) recomputes whole layers: it needs recompute=full (recompute "
        "is %s)",
        l->recompute_layers, recompute_names[l->recompute]);
  if (l->dtype < 0)
    l->dtype = WL_DTYPE_BF16;
  /* Megatron accumulates and all-reduces bf16 gradients in fp32; fp16 in fp16.
   * FSDP1 (MixedPrecision.reduce_dtype None: param_dtype), FSDP2
   * (MixedPrecisionPolicy.reduce_dtype None: param_dtype) and DeepSpeed
   * (engine.communication_data_type: the fp16/bf16 model dtype) reduce in
   * the model dtype. */
  if (l->dp_impl < 0)
    l->dp_impl = WL_DP_MEGATRON;
  /* Megatron-core's local DotProductAttention refuses context parallelism
   * ("Context parallelism is only supported by TEDotProductAttention!"), and
   * PyTorch's context_parallel runs ring attention in SDPA's fused kernels */
  if (l->cp > 1 && !l->flash)
    ERR("cp (%d) > 1 needs flash=1 (context parallelism runs only in fused attention: "
        "Megatron-core's unfused DotProductAttention refuses it)",
        l->cp);
  if (l->attn_impl >= 0 && !l->flash)
    ERR("attn_impl=%s names a fused attention kernel, but flash=0 runs attention unfused",
        attn_impl_names[l->attn_impl]);
  if (l->attn_impl < 0)
    l->attn_impl = attn_impl_default(l->dp_impl);
  /* nor with FlashAttention-1's kernels: Transformer Engine's context
   * parallelism runs FlashAttention-2 and later or cuDNN, PyTorch's SDPA's
   * own kernels, and FlashAttention-1 (CUDA or its 2022 Triton port) has no
   * context-parallel path */
  if (l->cp > 1 && l->attn_impl == WL_ATTN_FA1)
    ERR("cp (%d) > 1 with attn_impl=fa1: FlashAttention-1's kernels have no context-parallel "
        "path (Transformer Engine's needs FlashAttention-2 or later, or cuDNN)",
        l->cp);
  if (l->bwd_prefetch >= 0 && l->dp_impl != WL_DP_FSDP)
    ERR("backward_prefetch is PyTorch FSDP1's (dp_impl=fsdp); dp_impl is %s",
        dp_impl_names[l->dp_impl]);
  if (l->bwd_prefetch < 0)
    l->bwd_prefetch = WL_BWD_PREFETCH_PRE; /* FullyShardedDataParallel's default */
  /* Megatron-core's optimizer is FusedAdam (Transformer Engine's or Apex's,
   * megatron/core/optimizer/__init__.py), DeepSpeed's its own FusedAdam (a
   * client torch optimizer under ZeRO-3 is not modelled) */
  if (l->optim_impl > WL_OPTIM_FUSED && !torch_fsdp(l->dp_impl))
    ERR("optim_impl=%s is torch.optim.AdamW's (dp_impl=fsdp or fsdp2); dp_impl %s runs a fused "
        "Adam",
        optim_impl_names[l->optim_impl], dp_impl_names[l->dp_impl]);
  if (l->optim_impl < 0)
    l->optim_impl = optim_impl_default(l->dp_impl);
  if (l->grad_clip < 0)
    l->grad_clip = 1;
  /* A whole layer's recomputation stops early under PyTorch's non-reentrant
   * checkpoint (torch.utils.checkpoint with use_reentrant=False, since
   * PyTorch 2.1: set_checkpoint_early_stop, on by default): the re-run
   * ends once the last tensor the backward needs is saved again, which is
   * the input of the MLP's output projection, so that GEMM and the residual
   * add after it do not run again.  FSDP's checkpoint_wrapper runs it
   * (CheckpointImpl.NO_REENTRANT, its default since PyTorch 2.2; Composer's
   * activation_checkpointing_reentrant false, torchtitan, fms-fsdp);
   * Megatron's tensor_parallel.checkpoint, DeepSpeed's and Hugging Face's
   * default (use_reentrant=True) re-run the whole layer. */
  if (l->recompute_early_stop > 0 && l->recompute != WL_RECOMPUTE_FULL)
    ERR("recompute_early_stop=1 stops a whole layer's recomputation early: it needs "
        "recompute=full (recompute is %s)",
        recompute_names[l->recompute]);
  if (l->recompute_early_stop > 0 && l->dp_impl == WL_DP_MEGATRON)
    ERR("recompute_early_stop=1 is PyTorch's non-reentrant checkpoint; Megatron's "
        "(dp_impl=megatron) re-runs the whole layer");
  if (l->recompute_early_stop < 0)
    l->recompute_early_stop = rc_early_stop_default(l);
  if (l->ce_fusion >= 0 && ce_megatron(l->ce_fusion) != (l->dp_impl == WL_DP_MEGATRON))
    ERR("ce_fusion=%s is %s; dp_impl is %s", ce_fusion_names[l->ce_fusion],
        ce_megatron(l->ce_fusion)
            ? "Megatron-core's cross entropy (dp_impl=megatron)"
            : "a PyTorch framework's cross entropy (dp_impl fsdp, fsdp2 or deepspeed)",
        dp_impl_names[l->dp_impl]);
  /* with tp > 1 the PyTorch frameworks compute the loss on vocabulary-parallel
   * logits through DTensor's loss_parallel, on the fp32 logits torchtitan
   * casts; the others' vocabulary-parallel forms are not modelled */
  if (l->ce_fusion >= 0 && !ce_megatron(l->ce_fusion) && l->ce_fusion != WL_CE_TORCH_FP32 &&
      l->tp > 1)
    ERR("ce_fusion=%s with tp (%d) > 1: only torch_fp32 (DTensor's loss_parallel) is "
        "modelled on vocabulary-parallel logits",
        ce_fusion_names[l->ce_fusion], l->tp);
  if (l->ce_fusion < 0)
    l->ce_fusion = ce_default(l);
  /* a trainer's training metrics over the logits (Composer's train_metrics,
   * llm-foundry's two): the PyTorch frameworks' trainers */
  if (l->train_metrics > 0 && l->dp_impl == WL_DP_MEGATRON)
    ERR("train_metrics=%d is a trainer's cross-entropy passes for its training metrics "
        "(Composer's); dp_impl=megatron computes none",
        l->train_metrics);
  if (l->moe_dispatcher > 0 && (l->ep < 2 || l->dp_impl != WL_DP_MEGATRON))
    ERR("moe_dispatcher=%s is Megatron-core's dispatcher over an expert-parallel group: it needs "
        "ep > 1 and dp_impl=megatron (ep is %d, dp_impl %s)",
        moe_dispatcher_names[l->moe_dispatcher], l->ep, dp_impl_names[l->dp_impl]);
  /* the flex dispatcher runs over the TP x EP group, each token to every
   * expert-TP rank of its experts (token_dispatcher.py's tp_ep_group): not
   * modelled */
  if (l->moe_dispatcher == WL_MOE_FLEX && l->etp > 1)
    ERR("moe_dispatcher=flex with etp (%d) > 1: the flex dispatcher's TP x EP group is not "
        "modelled (etp=1 only)",
        l->etp);
  if (l->moe_dispatcher < 0)
    l->moe_dispatcher = WL_MOE_ALLTOALL;
  /* the expert all-to-alls overlapped across micro-batches, as Megatron-core's
   * TransformerConfig checks overlap_moe_expert_parallel_comm */
  if (l->moe_a2a_overlap) {
    if (!m->has_moe || l->ep < 2 || l->dp_impl != WL_DP_MEGATRON)
      ERR("moe_a2a_overlap is Megatron-core's overlap of the expert all-to-alls: it needs a MoE "
          "model, ep > 1 and dp_impl=megatron (ep is %d, dp_impl %s)",
          l->ep, dp_impl_names[l->dp_impl]);
    if (l->pp > 1 && l->schedule != WL_SCHED_INTERLEAVED)
      ERR("moe_a2a_overlap with pp (%d) > 1 needs the interleaved schedule (vpp > 1), as "
          "Megatron-core requires",
          l->pp);
    if (l->recompute == WL_RECOMPUTE_FULL || l->recompute == WL_RECOMPUTE_OP ||
        (l->recompute_modules & WL_RCM_MOE))
      ERR("moe_a2a_overlap with recompute=%s%s: Megatron-core refuses full recomputation and "
          "the moe module's",
          recompute_names[l->recompute], (l->recompute_modules & WL_RCM_MOE) ? " (moe)" : "");
    if (l->zero == 3)
      ERR("moe_a2a_overlap with zero=3: the overlapped schedule under Megatron's FSDP is not "
          "modelled");
  }
  /* the shared experts beside the dispatcher's all-to-alls, as Megatron-core's
   * TransformerConfig and Megatron-Bridge's overrides allow it */
  if (l->moe_shared_overlap) {
    if (!m->has_moe || m->moe.shared_experts < 1 || l->dp_impl != WL_DP_MEGATRON)
      ERR("moe_shared_expert_overlap is Megatron-core's overlap of the shared experts with the "
          "token dispatcher's all-to-alls: it needs a MoE model with shared experts and "
          "dp_impl=megatron (%d shared experts, dp_impl %s)",
          m->has_moe ? m->moe.shared_experts : 0, dp_impl_names[l->dp_impl]);
    if (l->recompute_modules & WL_RCM_SHARED_EXPERTS)
      ERR("moe_shared_expert_overlap with recompute_modules shared_experts: Megatron-core "
          "refuses the two together");
    if (l->moe_a2a_overlap)
      ERR("moe_shared_expert_overlap with moe_a2a_overlap: the combined schedule places the "
          "shared experts itself (Megatron-Bridge turns the first off under the second)");
  }
  if (l->fp8_recipe >= 0 && l->dtype != WL_DTYPE_FP8)
    ERR("fp8_recipe is Transformer Engine's fp8 scaling: it needs dtype=fp8 (dtype is %s)",
        wl_dtype_name(l->dtype));
  if (l->fp8_recipe < 0)
    l->fp8_recipe = WL_FP8_DELAYED;
  if (l->fp8_param_gather &&
      (l->dtype != WL_DTYPE_FP8 || l->dp_impl != WL_DP_MEGATRON || (l->zero != 1 && l->zero != 2)))
    ERR("fp8_param_gather is Megatron's distributed optimizer gathering fp8 weights: it needs "
        "dtype=fp8, dp_impl=megatron and zero=1 or 2 (dtype %s, dp_impl %s, zero %d)",
        wl_dtype_name(l->dtype), dp_impl_names[l->dp_impl], l->zero);
  /* recompute_modules as Megatron-core's TransformerConfig checks it */
  int rcm = l->recompute_modules;
  if (gv->given_rcm && l->dp_impl != WL_DP_MEGATRON)
    ERR("recompute_modules is Megatron-core's (dp_impl=megatron); dp_impl is %s",
        dp_impl_names[l->dp_impl]);
  if ((rcm & WL_RCM_MLA_UP_PROJ) && !m->has_mla)
    ERR("recompute_modules: mla_up_proj needs a model with 'mla' (multi-latent attention)");
  if ((rcm & (WL_RCM_MOE_ACT | WL_RCM_LAYERNORM)) && l->dtype == WL_DTYPE_FP8 &&
      l->fp8_recipe == WL_FP8_DELAYED)
    ERR("recompute_modules: moe_act and layernorm under fp8 need fp8_recipe=current "
        "(Megatron-core refuses them with delayed scaling)");
  if (l->grad_dtype < 0 && l->dp_impl != WL_DP_MEGATRON)
    l->grad_dtype = l->dtype == WL_DTYPE_FP8 ? WL_DTYPE_BF16 : l->dtype;
  if (l->grad_dtype < 0)
    l->grad_dtype = l->dtype == WL_DTYPE_FP16 ? WL_DTYPE_FP16 : WL_DTYPE_FP32;
  /* data parallelism */
  /* torch.distributed.pipelining composes with FSDP2 (fully_shard) only;
   * DeepSpeed's pipeline engine refuses ZeRO stages 2-3, and neither FSDP1
   * nor Megatron's FSDP runs under a pipeline schedule */
  if (l->zero == 3 && l->pp > 1 && l->dp_impl != WL_DP_FSDP2)
    ERR("zero=3 with pp (%d) > 1 runs only under dp_impl=fsdp2 (torch.distributed.pipelining "
        "with fully_shard, as torchtitan runs it); dp_impl is %s (%s)",
        l->pp, dp_impl_names[l->dp_impl],
        l->dp_impl == WL_DP_DEEPSPEED ? "DeepSpeed's pipeline engine refuses ZeRO stage 3"
        : l->dp_impl == WL_DP_FSDP    ? "FSDP1 does not run under a pipeline schedule"
                                      : "Megatron's FSDP does not run under a pipeline schedule");
  /* FSDP2's reshard_after_forward (torchtitan's fsdp_reshard_after_forward):
   * its default resharding after each layer's forward without a pipeline,
   * none under one (apply_fsdp: "For PP, do not reshard after forward") */
  if (l->reshard_after_forward >= 0 && l->dp_impl != WL_DP_FSDP2)
    ERR("reshard_after_forward is FSDP2's (dp_impl=fsdp2); dp_impl is %s",
        dp_impl_names[l->dp_impl]);
  if (l->reshard_after_forward < 0)
    l->reshard_after_forward = l->pp == 1;
  if (l->dp_impl == WL_DP_FSDP2 && l->pp > 1 && l->reshard_after_forward)
    ERR("reshard_after_forward=1 with pp (%d) > 1 is not modelled (torchtitan keeps a stage's "
        "parameters gathered under a pipeline: reshard_after_forward=0)",
        l->pp);
  /* Megatron's passes over each gradient bucket before its reduction
   * (_ParamAndGradBucketGroup.start_grad_sync): the norm of
   * check_for_nan_in_grad (Megatron-LM's --check-for-nan-in-loss-and-grad,
   * on by default) and the in-place scaling by 1/(dp cp) (unless
   * average_in_collective or calculate_per_token_loss makes the factor 1) */
  int mddp = megatron_ddp(l);
  const char *ddp_key = l->grad_nan_check >= 0    ? "grad_nan_check"
                        : l->grad_scale_pass >= 0 ? "grad_scale_pass"
                                                  : NULL;
  if (!mddp && ddp_key)
    ERR("%s is Megatron's DDP's (dp_impl=megatron, zero < 3); dp_impl is %s, zero %d", ddp_key,
        dp_impl_names[l->dp_impl], l->zero);
  if (l->grad_nan_check < 0)
    l->grad_nan_check = mddp;
  if (l->grad_scale_pass < 0)
    l->grad_scale_pass = mddp;
  /* PyTorch FSDP1 FULL_SHARD, fully_shard and DeepSpeed stage 3 shard the
   * parameters; their other strategies (SHARD_GRAD_OP, NO_SHARD,
   * DeepSpeed stages 1-2) are not modelled, and
   * Megatron's overlap and bucket keys are not theirs */
  if (l->dp_impl != WL_DP_MEGATRON && l->zero != 3)
    ERR("dp_impl=%s needs zero=3 (%s); zero is %d (its other sharding strategies are not "
        "modelled: use dp_impl=megatron)",
        dp_impl_names[l->dp_impl],
        l->dp_impl == WL_DP_DEEPSPEED ? "ZeRO stage 3" : "parameters, gradients and optimizer "
                                                         "state sharded, FULL_SHARD",
        l->zero);
  if (l->dp_impl != WL_DP_MEGATRON && (l->overlap_grad_reduce || gv->given_bucket))
    ERR("dp_impl=%s: overlap_grad_reduce and bucket are Megatron-LM's keys (%s overlaps and "
        "buckets its own way, docs/workloads.md)",
        dp_impl_names[l->dp_impl], dp_impl_names[l->dp_impl]);
  if (l->overlap_param_gather && (l->zero == 0 || l->zero == 3))
    ERR("overlap_param_gather=1 needs zero=1 or zero=2 (the distributed optimizer); zero is %d",
        l->zero);
  if (gv->given_bucket && (!l->overlap_grad_reduce || l->zero == 3))
    ERR("bucket has no effect without overlap_grad_reduce=1 and zero < 3 (the whole gradient "
        "buffer is reduced at once)");
  char omsg[400];
  if (wl__offload_resolve(l, omsg, sizeof omsg))
    ERR("%s", omsg);
  if (!gv->given_bucket && l->overlap_grad_reduce && l->zero < 3) {
    /* Megatron DistributedDataParallel: max(40M, 1M x data-parallel size) parameters */
    double d = (double)l->dp * l->cp;
    l->bucket_params = fmax(4e7, 1e6 * d);
  }

  return ST_OK;
}

/* wl_layout_resolve: the canonical spec. */
static int res_spec(wl_layout *l, int num_gpus, const wl_model *m, const res_given *gv,
              const char *what, st_err *err)
{
  (void)num_gpus;
  (void)m;
  (void)gv;
  /* the canonical spec; keys added after the first version appear only when
   * they differ from their defaults, so older layouts keep their spec */
  st_buf b;
  st_buf_init(&b);
  st_buf_printf(&b,
                "tp=%d,pp=%d,dp=%d,cp=%d,ep=%d,vpp=%d,sp=%d,mbs=%d,gbs=%d,zero=%d,"
                "recompute=%s,schedule=%s,dtype=%s,grad_dtype=%s,overlap_grad_reduce=%d,"
                "overlap_param_gather=%d,flash=%d",
                l->tp, l->pp, l->dp, l->cp, l->ep, l->vpp, l->sp, l->mbs, l->gbs, l->zero,
                recompute_names[l->recompute], schedule_names[l->schedule],
                wl_dtype_name(l->dtype), wl_dtype_name(l->grad_dtype), l->overlap_grad_reduce,
                l->overlap_param_gather, l->flash);
  if (l->bucket_params > 0)
    st_buf_printf(&b, ",bucket=%.0f", l->bucket_params);
  if (l->first_stage_layers)
    st_buf_printf(&b, ",first_stage_layers=%d", l->first_stage_layers);
  if (l->last_stage_layers)
    st_buf_printf(&b, ",last_stage_layers=%d", l->last_stage_layers);
  if (l->tp_overlap)
    st_buf_printf(&b, ",tp_overlap=1");
  if (l->eager)
    st_buf_printf(&b, ",eager=1");
  if (!l->tp_async)
    st_buf_printf(&b, ",tp_async=0");
  if (l->pp_scatter)
    st_buf_printf(&b, ",pp_scatter=1");
  if (l->dropout > 0)
    st_buf_printf(&b, ",dropout=%g", l->dropout);
  if (l->ce_fusion != ce_default(l))
    st_buf_printf(&b, ",ce_fusion=%s", ce_fusion_names[l->ce_fusion]);
  if (l->train_metrics)
    st_buf_printf(&b, ",train_metrics=%d", l->train_metrics);
  if (l->fp8_recipe > 0)
    st_buf_printf(&b, ",fp8_recipe=%s", fp8_recipe_names[l->fp8_recipe]);
  if (l->fp8_param_gather)
    st_buf_printf(&b, ",fp8_param_gather=1");
  if (l->moe_dispatcher > 0)
    st_buf_printf(&b, ",moe_dispatcher=%s", moe_dispatcher_names[l->moe_dispatcher]);
  if (l->moe_a2a_overlap)
    st_buf_printf(&b, ",moe_a2a_overlap=1");
  if (l->moe_shared_overlap)
    st_buf_printf(&b, ",moe_shared_expert_overlap=1");
  char mods[128];
  wl_layout_recompute_modules(l, mods, sizeof mods);
  if (mods[0])
    st_buf_printf(&b, ",recompute_modules=%s", mods);
  if (l->etp != l->tp)
    st_buf_printf(&b, ",etp=%d", l->etp);
  if (l->account_embedding)
    st_buf_printf(&b, ",account_embedding=1");
  if (l->account_loss)
    st_buf_printf(&b, ",account_loss=1");
  if (l->pp_layout[0])
    st_buf_printf(&b, ",pp_layout=%s", l->pp_layout);
  if (l->dp_impl != WL_DP_MEGATRON)
    st_buf_printf(&b, ",dp_impl=%s", dp_impl_names[l->dp_impl]);
  if (l->bwd_prefetch != WL_BWD_PREFETCH_PRE)
    st_buf_printf(&b, ",backward_prefetch=%s", bwd_prefetch_names[l->bwd_prefetch]);
  if (l->optim_impl != optim_impl_default(l->dp_impl))
    st_buf_printf(&b, ",optim_impl=%s", optim_impl_names[l->optim_impl]);
  if (!l->grad_clip)
    st_buf_printf(&b, ",grad_clip=0");
  if (l->recompute_layers)
    st_buf_printf(&b, ",recompute_layers=%d", l->recompute_layers);
  if (l->recompute_early_stop != rc_early_stop_default(l))
    st_buf_printf(&b, ",recompute_early_stop=%d", l->recompute_early_stop);
  if (l->dp_impl == WL_DP_FSDP2 && l->reshard_after_forward != (l->pp == 1))
    st_buf_printf(&b, ",reshard_after_forward=%d", l->reshard_after_forward);
  /* both are 1 under Megatron's DDP unless given 0, and 0 elsewhere */
  int mddp = megatron_ddp(l);
  if (mddp && !l->grad_nan_check)
    st_buf_printf(&b, ",grad_nan_check=0");
  if (mddp && !l->grad_scale_pass)
    st_buf_printf(&b, ",grad_scale_pass=0");
  if (l->attn_impl != attn_impl_default(l->dp_impl))
    st_buf_printf(&b, ",attn_impl=%s", attn_impl_names[l->attn_impl]);
  if (l->stage_layers[0])
    st_buf_printf(&b, ",stage_layers=%s", l->stage_layers);
  if (l->dp_microbatches[0])
    st_buf_printf(&b, ",dp_microbatches=%s", l->dp_microbatches);
  if (l->offload)
    st_buf_printf(&b, ",offload=%s", wl_offload_name(l->offload));
  if (l->balance)
    st_buf_printf(&b, ",balance=%s", l->balance == WL_BALANCE_TIME ? "time" : "compute");
  if (!b.data || b.len >= sizeof l->spec) {
    st_buf_release(&b);
    ERR("the canonical spec is longer than %zu characters", sizeof l->spec - 1);
  }
  memcpy(l->spec, b.data, b.len + 1);
  st_buf_release(&b);
  return ST_OK;
}
#undef ERR

int wl_layout_resolve(wl_layout *io, int num_gpus, const wl_model *m, const char *what,
                      st_err *err)
{
  wl_layout l = *io;
  res_given gv = {l.dp > 0, l.gbs > 0, l.vpp > 0, l.bucket_params > 0, l.etp > 0,
                  l.first_stage_layers > 0, l.last_stage_layers > 0, l.recompute_modules >= 0};
  int (*const steps[])(wl_layout *, int, const wl_model *, const res_given *, const char *,
                       st_err *) = {res_sizes, res_shape, res_stages, res_batch, res_experts, res_schedule, res_precision_dp, res_spec};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    int rc = steps[i](&l, num_gpus, m, &gv, what, err);
    if (rc)
      return rc;
  }
  *io = l;
  return ST_OK;
}

int wl_layout_vstage_layers(const wl_layout *l, int vs)
{
  return vs >= 0 && vs < l->pp * l->vpp && vs < WL_MAX_VSTAGES ? l->vs_layers[vs] : 0;
}

int wl_layout_stage_layers(const wl_layout *l, const wl_model *m, int s)
{
  (void)m;
  int n = 0;
  for (int c = 0; c < l->vpp; c++)
    n += wl_layout_vstage_layers(l, c * l->pp + s);
  return n;
}

void wl__chunk_layers(const wl_layout *l, const wl_model *m, int stage, int chunk, int *first,
                      int *count)
{
  (void)m;
  int f = 0;
  for (int vs = 0; vs < chunk * l->pp + stage; vs++)
    f += wl_layout_vstage_layers(l, vs);
  *first = f;
  *count = wl_layout_vstage_layers(l, chunk * l->pp + stage);
}

/* Forward-only units a schedule runs on stage s before its first backward
 * (1F1B and interleaved; GPipe: all of them). */
static int sched_warm(const wl_layout *l, int s)
{
  int m = l->num_microbatches, p = l->pp, total = m * l->vpp;
  if (l->schedule == WL_SCHED_GPIPE)
    return m;
  /* moe_a2a_overlap: one forward more before the first (forward, backward)
   * pair, so that the two of each pair are independent (Megatron-core's
   * get_pp_rank_microbatches; with pp = 1 its combined schedule runs the
   * first forward alone) */
  int extra = l->moe_a2a_overlap ? 1 : 0;
  if (l->schedule == WL_SCHED_1F1B)
    return p - s - 1 + extra < m ? p - s - 1 + extra : m;
  if (m == p)
    return total; /* Megatron: all_warmup_microbatches */
  int warm = (p - s - 1) * 2 + (l->vpp - 1) * p + extra;
  return warm > total ? total : warm;
}

/* Unit idx (0 .. 2 m vpp - 1) of stage s's schedule, warm = sched_warm(). */
static wl__unit sched_at(const wl_layout *l, int warm, int idx)
{
  int m = l->num_microbatches, p = l->pp, v = l->vpp, total = m * v;
  if (l->schedule == WL_SCHED_GPIPE)
    return idx < m ? (wl__unit){1, idx, 0} : (wl__unit){0, 2 * m - 1 - idx, 0};
  /* warm-up forwards, then (forward warm + i, backward i) pairs, then the
   * cool-down backwards; forward / backward unit kk of the flat order */
  int fwd, kk;
  if (idx < warm)
    fwd = 1, kk = idx;
  else if (idx - warm < 2 * (total - warm))
    fwd = (idx - warm) % 2 == 0, kk = (idx - warm) / 2 + (fwd ? warm : 0);
  else
    fwd = 0, kk = total - warm + (idx - warm - 2 * (total - warm));
  if (l->schedule == WL_SCHED_1F1B)
    return (wl__unit){fwd, kk, 0};
  int chunk = (kk % (p * v)) / p;
  return (wl__unit){fwd, (kk / (p * v)) * p + kk % p, fwd ? chunk : v - 1 - chunk};
}

int wl__schedule_warm(const wl_layout *l, int s) { return sched_warm(l, s); }

wl__unit *wl__schedule(const wl_layout *l, int s, int *n)
{
  int total = l->num_microbatches * l->vpp, warm = sched_warm(l, s);
  wl__unit *u = malloc(sizeof *u * (size_t)(2 * total));
  if (!u)
    return NULL;
  for (int k = 0; k < 2 * total; k++)
    u[k] = sched_at(l, warm, k);
  *n = 2 * total;
  return u;
}

/* The most chunks (and their layers) alive at once on stage s: the running
 * sum over the schedule, forward +1, backward -1.  Only its start is
 * walked: after the warm-up a (forward, backward) pair's change depends on
 * the two chunks, which repeat every pp x vpp pairs with a net change of 0
 * (each chunk appears pp times among the forwards and among the backwards
 * of a period), so the running sums of the steady state repeat those of its
 * first period, and the cool-down only decreases them.  GPipe peaks at the
 * end of its forwards. */
void wl__peak_alive(const wl_layout *l, int stage, int *chunks, int *layers)
{
  int total = l->num_microbatches * l->vpp, warm = sched_warm(l, stage);
  int period = l->pp * l->vpp;
  int steady = total - warm < period ? total - warm : period;
  int n = l->schedule == WL_SCHED_GPIPE ? warm : warm + 2 * steady;
  int cur = 0, cur_layers = 0, best = 0, best_layers = 0;
  for (int i = 0; i < n; i++) {
    wl__unit u = sched_at(l, warm, i);
    int k = wl_layout_vstage_layers(l, u.chunk * l->pp + stage);
    cur += u.fwd ? 1 : -1;
    cur_layers += u.fwd ? k : -k;
    if (cur_layers > best_layers || (cur_layers == best_layers && cur > best)) {
      best = cur;
      best_layers = cur_layers;
    }
  }
  *chunks = best;
  *layers = best_layers;
}
