/* wl_hf.c — Hugging Face config.json files as model specs.
 *
 * `--model config.json` takes the config a model is published with.  Its
 * first "architectures" entry (without one, its "model_type") picks a row of
 * the table below, and the row's keys are read the way the architecture's
 * transformers config and modeling classes read them: the same defaults,
 * the same derived sizes (head_dim, n_inner, which layers are MoE).  Each
 * architecture lists the keys it maps onto wl_model (those that size the
 * model or change its step) and the keys it reads and ignores because they
 * change neither (numerics, token ids, dropout, routing heuristics).  A key
 * in neither list is accepted and not read: configs on the Hub carry keys of
 * other tools and of other transformers versions, and the two lists hold
 * every key of the architecture's config class that shapes the model, so an
 * unlisted key does not.  A listed key whose value asks for what the
 * generator cannot model (MoE on every other layer, cross-attention, biased
 * MLA projections) is an error that names it.  docs/workloads.md has the
 * table of every key, per architecture, and why the ignored ones are.
 *
 * The sequence length is the training run's, not the model's: `--seq` of
 * run and search gives it.  Without it, the context the model was
 * pretrained at (rope_scaling.original_max_position_embeddings, else
 * max_position_embeddings, n_positions for GPT-2) capped at 8192 tokens.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "wl_gen_int.h"
#include "workload.h"

#define HF_SEQ_CAP 8192 /* longest default sequence: Llama 3's and Gemma's pretraining context */

enum family {
  F_LLAMA,
  F_MISTRAL,
  F_MIXTRAL,
  F_QWEN2,
  F_QWEN2_MOE,
  F_QWEN3,
  F_QWEN3_MOE,
  F_DEEPSEEK_V2,
  F_DEEPSEEK_V3,
  F_GPT2,
  F_GPT_NEOX,
  F_GEMMA,
  F_GEMMA2,
  F_GPT_OSS
};

/* ---- the keys, per architecture ------------------------------------------------ */
/* PretrainedConfig's own keys and the metadata every config carries */
static const char *const common_ignored[] = {"_name_or_path",
                                             "architectures",
                                             "model_type",
                                             "transformers_version",
                                             "torch_dtype",
                                             "dtype",
                                             "bos_token_id",
                                             "eos_token_id",
                                             "pad_token_id",
                                             "use_cache",
                                             "initializer_range",
                                             "auto_map",
                                             "quantization_config",
                                             "tokenizer_class",
                                             "task_specific_params",
                                             "output_attentions",
                                             "output_hidden_states",
                                             "return_dict",
                                             "_attn_implementation_autoset",
                                             "_commit_hash",
                                             NULL};
static const char *const dense_mapped[] = {
    "hidden_size", "num_hidden_layers",   "num_attention_heads",     "intermediate_size",
    "vocab_size",  "tie_word_embeddings", "max_position_embeddings", "rope_scaling",
    NULL};
static const char *const rotary_ignored[] = {"hidden_act",      "rms_norm_eps",      "rope_theta",
                                             "rope_parameters", "attention_dropout", NULL};
static const char *const llama_mapped[] = {"num_key_value_heads", "head_dim", "attention_bias",
                                           "mlp_bias", NULL};
static const char *const llama_ignored[] = {"pretraining_tp", NULL};
static const char *const mistral_mapped[] = {"num_key_value_heads", "head_dim", "sliding_window",
                                             NULL};
static const char *const mixtral_mapped[] = {"num_key_value_heads", "head_dim",
                                             "sliding_window",      "num_local_experts",
                                             "num_experts_per_tok", NULL};
static const char *const router_ignored[] = {"router_aux_loss_coef", "output_router_logits",
                                             "router_jitter_noise", "norm_topk_prob", NULL};
static const char *const qwen2_mapped[] = {
    "num_key_value_heads", "head_dim", "use_sliding_window", "sliding_window", "max_window_layers",
    "layer_types",         NULL};
static const char *const qwen2_ignored[] = {"use_mrope", NULL};
static const char *const qwen2_moe_mapped[] = {"num_key_value_heads",
                                               "head_dim",
                                               "use_sliding_window",
                                               "sliding_window",
                                               "max_window_layers",
                                               "layer_types",
                                               "num_experts",
                                               "num_experts_per_tok",
                                               "moe_intermediate_size",
                                               "shared_expert_intermediate_size",
                                               "decoder_sparse_step",
                                               "mlp_only_layers",
                                               NULL};
static const char *const qwen3_mapped[] = {
    "num_key_value_heads", "head_dim",          "attention_bias", "use_sliding_window",
    "sliding_window",      "max_window_layers", "layer_types",    NULL};
static const char *const qwen3_moe_mapped[] = {"num_key_value_heads",   "head_dim",
                                               "attention_bias",        "use_sliding_window",
                                               "sliding_window",        "max_window_layers",
                                               "layer_types",           "num_experts",
                                               "num_local_experts",     "num_experts_per_tok",
                                               "moe_intermediate_size", "decoder_sparse_step",
                                               "mlp_only_layers",       NULL};
static const char *const deepseek_mapped[] = {"attention_bias",
                                              "q_lora_rank",
                                              "kv_lora_rank",
                                              "qk_nope_head_dim",
                                              "qk_rope_head_dim",
                                              "v_head_dim",
                                              "n_routed_experts",
                                              "n_shared_experts",
                                              "moe_intermediate_size",
                                              "num_experts_per_tok",
                                              "first_k_dense_replace",
                                              "moe_layer_freq",
                                              NULL};
/* num_key_value_heads: MLA's keys and values have num_attention_heads heads;
 * num_nextn_predict_layers: the multi-token-prediction module, which
 * transformers does not build (its weights are skipped on load) */
static const char *const deepseek_ignored[] = {"num_key_value_heads",
                                               "qk_head_dim",
                                               "rope_interleave",
                                               "pretraining_tp",
                                               "aux_loss_alpha",
                                               "seq_aux",
                                               "ep_size",
                                               "n_group",
                                               "topk_group",
                                               "topk_method",
                                               "norm_topk_prob",
                                               "routed_scaling_factor",
                                               "scoring_func",
                                               "num_nextn_predict_layers",
                                               NULL};
static const char *const gpt2_mapped[] = {"n_embd",
                                          "n_layer",
                                          "n_head",
                                          "n_inner",
                                          "n_positions",
                                          "vocab_size",
                                          "tie_word_embeddings",
                                          "add_cross_attention",
                                          NULL};
static const char *const gpt2_ignored[] = {"n_ctx",
                                           "activation_function",
                                           "resid_pdrop",
                                           "embd_pdrop",
                                           "attn_pdrop",
                                           "layer_norm_epsilon",
                                           "summary_type",
                                           "summary_use_proj",
                                           "summary_activation",
                                           "summary_proj_to_labels",
                                           "summary_first_dropout",
                                           "scale_attn_weights",
                                           "scale_attn_by_inverse_layer_idx",
                                           "reorder_and_upcast_attn",
                                           NULL};
static const char *const neox_mapped[] = {"attention_bias", NULL};
static const char *const neox_ignored[] = {"hidden_act",
                                           "rotary_pct",
                                           "partial_rotary_factor",
                                           "rotary_emb_base",
                                           "rope_theta",
                                           "rope_parameters",
                                           "layer_norm_eps",
                                           "use_parallel_residual",
                                           "attention_dropout",
                                           "hidden_dropout",
                                           "classifier_dropout",
                                           "attention_probs_dropout_prob",
                                           "hidden_dropout_prob",
                                           NULL};
static const char *const gemma_mapped[] = {"num_key_value_heads", "head_dim", "attention_bias",
                                           NULL};
static const char *const gemma_ignored[] = {"hidden_activation", NULL};
static const char *const gemma2_mapped[] = {"num_key_value_heads", "head_dim",    "attention_bias",
                                            "sliding_window",      "layer_types", NULL};
static const char *const gemma2_ignored[] = {"hidden_activation",       "attn_logit_softcapping",
                                             "final_logit_softcapping", "query_pre_attn_scalar",
                                             "cache_implementation",    NULL};

/* GptOssConfig: every layer sparse, experts of width intermediate_size; its
 * __init__ sets attention_bias true whatever the key says (q, k, v and o
 * are biased, as are the experts' projections); experts_per_token and
 * initial_context_length are OpenAI's own names that the config carries
 * beside num_experts_per_tok and rope_scaling's original context, and the
 * modeling code does not read them; swiglu_limit clamps the activation */
static const char *const gpt_oss_mapped[] = {"num_key_value_heads", "head_dim",
                                             "sliding_window",      "layer_types",
                                             "num_local_experts",   "num_experts_per_tok",
                                             NULL};
static const char *const gpt_oss_ignored[] = {"attention_bias", "swiglu_limit",
                                              "experts_per_token", "initial_context_length",
                                              "router_aux_loss_coef", "output_router_logits",
                                              NULL};

typedef struct hf_arch {
  const char *arch, *model_type;
  int fam;
  const char *const *mapped[2];
  const char *const *ignored[3];
} hf_arch;

static const hf_arch archs[] = {
    {"LlamaForCausalLM",
     "llama",
     F_LLAMA,
     {dense_mapped, llama_mapped},
     {common_ignored, rotary_ignored, llama_ignored}},
    {"MistralForCausalLM",
     "mistral",
     F_MISTRAL,
     {dense_mapped, mistral_mapped},
     {common_ignored, rotary_ignored, NULL}},
    {"MixtralForCausalLM",
     "mixtral",
     F_MIXTRAL,
     {dense_mapped, mixtral_mapped},
     {common_ignored, rotary_ignored, router_ignored}},
    {"Qwen2ForCausalLM",
     "qwen2",
     F_QWEN2,
     {dense_mapped, qwen2_mapped},
     {common_ignored, rotary_ignored, qwen2_ignored}},
    {"Qwen2MoeForCausalLM",
     "qwen2_moe",
     F_QWEN2_MOE,
     {dense_mapped, qwen2_moe_mapped},
     {common_ignored, rotary_ignored, router_ignored}},
    {"Qwen3ForCausalLM",
     "qwen3",
     F_QWEN3,
     {dense_mapped, qwen3_mapped},
     {common_ignored, rotary_ignored, NULL}},
    {"Qwen3MoeForCausalLM",
     "qwen3_moe",
     F_QWEN3_MOE,
     {dense_mapped, qwen3_moe_mapped},
     {common_ignored, rotary_ignored, router_ignored}},
    {"DeepseekV2ForCausalLM",
     "deepseek_v2",
     F_DEEPSEEK_V2,
     {dense_mapped, deepseek_mapped},
     {common_ignored, rotary_ignored, deepseek_ignored}},
    {"DeepseekV3ForCausalLM",
     "deepseek_v3",
     F_DEEPSEEK_V3,
     {dense_mapped, deepseek_mapped},
     {common_ignored, rotary_ignored, deepseek_ignored}},
    {"GPT2LMHeadModel", "gpt2", F_GPT2, {gpt2_mapped, NULL}, {common_ignored, gpt2_ignored, NULL}},
    {"GPTNeoXForCausalLM",
     "gpt_neox",
     F_GPT_NEOX,
     {dense_mapped, neox_mapped},
     {common_ignored, neox_ignored, NULL}},
    {"GemmaForCausalLM",
     "gemma",
     F_GEMMA,
     {dense_mapped, gemma_mapped},
     {common_ignored, rotary_ignored, gemma_ignored}},
    {"Gemma2ForCausalLM",
     "gemma2",
     F_GEMMA2,
     {dense_mapped, gemma2_mapped},
     {common_ignored, rotary_ignored, gemma2_ignored}},
    {"GptOssForCausalLM",
     "gpt_oss",
     F_GPT_OSS,
     {dense_mapped, gpt_oss_mapped},
     {common_ignored, rotary_ignored, gpt_oss_ignored}},
};
#define NUM_ARCHS (sizeof archs / sizeof archs[0])

static int in_list(const char *const *list, const char *key)
{
  for (int i = 0; list && list[i]; i++)
    if (!strcmp(list[i], key))
      return 1;
  return 0;
}

static const hf_arch *find_arch(const char *arch, const char *model_type)
{
  for (size_t i = 0; i < NUM_ARCHS; i++)
    if (arch ? !strcmp(archs[i].arch, arch) : !strcmp(archs[i].model_type, model_type))
      return &archs[i];
  return NULL;
}

int wl__hf_key_class(const char *arch, const char *key)
{
  const hf_arch *a = find_arch(arch, NULL);
  if (!a)
    return -1;
  for (size_t i = 0; i < sizeof a->mapped / sizeof a->mapped[0]; i++)
    if (in_list(a->mapped[i], key))
      return 1;
  for (size_t i = 0; i < sizeof a->ignored / sizeof a->ignored[0]; i++)
    if (in_list(a->ignored[i], key))
      return 2;
  return 0;
}

/* ---- reading --------------------------------------------------------------------- */
typedef struct rd {
  st_jrd j; /* base's reader: the subject "model 'F'" and the error */
  const cJSON *root;
  const char *arch;
} rd;

#define HF_REQUIRED (-1)

static const cJSON *item(const rd *r, const char *key)
{
  return cJSON_GetObjectItemCaseSensitive(r->root, key);
}

static int missing(const rd *r, const char *key)
{
  return st_jrd_fail(&r->j, NULL, "key '%s' is missing (%s needs it)", key, r->arch);
}

/* An integer key; absent or null takes def, or is an error when def is
 * HF_REQUIRED (the transformers default would be some other model's size). */
static int rd_int_in(const rd *r, const char *key, int def, int minv, long maxv, int *out)
{
  const cJSON *v = item(r, key);
  if (!v || cJSON_IsNull(v)) {
    if (def == HF_REQUIRED)
      return missing(r, key);
    *out = def;
    return ST_OK;
  }
  long x;
  if (st_jrd_int(&r->j, NULL, v, minv, maxv, &x))
    return ST_EINPUT;
  *out = (int)x;
  return ST_OK;
}

static int rd_int(const rd *r, const char *key, int def, int minv, int *out)
{
  return rd_int_in(r, key, def, minv, INT32_MAX, out);
}

static int rd_bool(const rd *r, const char *key, int def, int *out)
{
  const cJSON *v = item(r, key);
  if (!v || cJSON_IsNull(v)) {
    *out = def;
    return ST_OK;
  }
  return st_jrd_bool(&r->j, NULL, v, out);
}

/* A key whose true value the generator cannot model. */
static int rd_false(const rd *r, const char *key, const char *why)
{
  int v = 0;
  int rc = rd_bool(r, key, 0, &v);
  if (rc == ST_OK && v)
    rc = st_jrd_fail(&r->j, NULL, "'%s' is true: %s", key, why);
  return rc;
}

/* Qwen's mlp_only_layers: dense layers must be a leading block 0..k-1
 * (the generator's moe.dense_layers); *k is its length. */
static int rd_leading_layers(const rd *r, const char *key, int *k)
{
  const cJSON *v = item(r, key);
  *k = 0;
  if (!v || cJSON_IsNull(v))
    return ST_OK;
  if (!cJSON_IsArray(v))
    return st_jrd_fail(&r->j, NULL, "'%s' is %s, expected an array of layer indices", key,
                       st_json_type_name(v));
  st_jpath at = {NULL, key, 0};
  int i = 0;
  for (const cJSON *e = v->child; e; e = e->next, i++)
    if (!cJSON_IsNumber(e) || e->valuedouble != i) {
      st_jpath ei = {&at, NULL, i};
      char got[64];
      if (cJSON_IsNumber(e))
        snprintf(got, sizeof got, "%.17g", e->valuedouble);
      else
        snprintf(got, sizeof got, "%s", st_json_type_name(e));
      return st_jrd_fail(&r->j, &ei,
                         "is %s, expected %d (dense layers are modelled only as a leading block "
                         "0, 1, ..., k-1)",
                         got, i);
    }
  *k = i;
  return ST_OK;
}

/* The shortest pattern that, repeated from layer 0, gives every layer's
 * kind ('s' sliding, 'f' full): the model's window_pattern, "" when every
 * layer slides.  An error names `key` when no pattern of at most
 * WL_WINDOW_PATTERN_MAX layers repeats. */
static int set_pattern(const rd *r, const char *key, const char *kinds, int layers, wl_model *m)
{
  int p = 1;
  for (; p <= layers && p <= WL_WINDOW_PATTERN_MAX; p++) {
    int i = p;
    while (i < layers && kinds[i] == kinds[i % p])
      i++;
    if (i >= layers)
      break;
  }
  if (p > layers || p > WL_WINDOW_PATTERN_MAX) {
    st_jpath at = {NULL, key, 0};
    return st_jrd_fail(&r->j, &at,
                       "the sliding and full layers do not repeat with a period of at most %d "
                       "layers (a model spec's window_pattern)",
                       WL_WINDOW_PATTERN_MAX);
  }
  if (p == 1 && kinds[0] == 's')
    m->window_pattern[0] = '\0';
  else {
    memcpy(m->window_pattern, kinds, (size_t)p);
    m->window_pattern[p] = '\0';
  }
  return ST_OK;
}

/* layer_types (newer transformers): "full_attention" or "sliding_attention"
 * per layer, into kinds ('s' or 'f'); *sliding is 1 when any layer slides,
 * -1 when the key is absent. */
static int rd_layer_types(const rd *r, int layers, char *kinds, int *sliding)
{
  const cJSON *v = item(r, "layer_types");
  *sliding = -1;
  if (!v || cJSON_IsNull(v))
    return ST_OK;
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != layers)
    return st_jrd_fail(&r->j, NULL, "'layer_types' must be an array of %d entries (one per layer)",
                       layers);
  *sliding = 0;
  st_jpath at = {NULL, "layer_types", 0};
  int i = 0;
  for (const cJSON *e = v->child; e; e = e->next, i++) {
    if (cJSON_IsString(e) && !strcmp(e->valuestring, "sliding_attention")) {
      *sliding = 1;
      kinds[i] = 's';
    } else if (cJSON_IsString(e) && !strcmp(e->valuestring, "full_attention")) {
      kinds[i] = 'f';
    } else {
      st_jpath ei = {&at, NULL, i};
      return st_jrd_fail(&r->j, &ei, "expected \"full_attention\" or \"sliding_attention\"");
    }
  }
  return ST_OK;
}

/* The window of the sliding layers and which layers slide (sliding_window,
 * window_pattern), none when no layer slides.  Only Mistral, Mixtral, Qwen,
 * Gemma 2 and GPT-OSS slide (a sliding_window key in another architecture's
 * config is not read by its modeling code).  Which layers: layer_types where
 * the config has it; else every layer (Mistral, Mixtral), the even layers
 * (Gemma 2: Gemma2DecoderLayer's is_sliding = not layer_idx % 2; GPT-OSS:
 * GptOssConfig's default layer_types, sliding where (i + 1) % 2), the
 * layers from max_window_layers on (Qwen, with use_sliding_window). */
static int rd_window(const rd *r, int fam, wl_model *m)
{
  int rc, sliding, w = 0, layers = m->layers;
  int qwen = fam == F_QWEN2 || fam == F_QWEN2_MOE || fam == F_QWEN3 || fam == F_QWEN3_MOE;
  m->sliding_window = 0;
  m->window_pattern[0] = '\0';
  int even = fam == F_GEMMA2 || fam == F_GPT_OSS;
  if (!qwen && fam != F_MISTRAL && fam != F_MIXTRAL && !even)
    return ST_OK;
  char *kinds = malloc((size_t)layers);
  if (!kinds)
    return st_jrd_oom(&r->j);
  const char *key = "layer_types";
  if ((rc = rd_layer_types(r, layers, kinds, &sliding)))
    goto out;
  /* the config classes' defaults: 4096, but none for Mixtral and 128 for
   * GPT-OSS; null is none */
  int def = fam == F_MIXTRAL ? 0 : fam == F_GPT_OSS ? 128 : 4096;
  if ((rc = rd_int(r, "sliding_window", cJSON_IsNull(item(r, "sliding_window")) ? 0 : def, 0, &w)))
    goto out;
  if (sliding == 0 || w == 0)
    goto out;
  if (sliding < 0) {
    int from = 0;
    if (qwen) {
      int use = 0;
      key = "max_window_layers";
      if ((rc = rd_bool(r, "use_sliding_window", 0, &use)) ||
          (rc = rd_int(r, "max_window_layers", layers, 0, &from)))
        goto out;
      if (!use || from >= layers)
        goto out;
    }
    for (int i = 0; i < layers; i++)
      kinds[i] = even ? (i % 2 ? 'f' : 's') : i >= from ? 's' : 'f';
    if (even)
      key = "sliding_window";
  }
  if ((rc = set_pattern(r, key, kinds, layers, m)))
    goto out;
  m->sliding_window = w;
out:
  free(kinds);
  return rc;
}

/* The default sequence: the pretraining context, at most HF_SEQ_CAP. */
static int rd_seq(const rd *r, const char *key, int *seq)
{
  int rc, n = HF_SEQ_CAP;
  const cJSON *rs = item(r, "rope_scaling");
  const cJSON *o = cJSON_IsObject(rs)
                       ? cJSON_GetObjectItemCaseSensitive(rs, "original_max_position_embeddings")
                       : NULL;
  if (o && !cJSON_IsNull(o)) {
    st_jpath at = {NULL, "rope_scaling", 0};
    long x;
    if (st_jrd_int(&r->j, &at, o, 1, INT32_MAX, &x))
      return ST_EINPUT;
    n = (int)x;
  } else if ((rc = rd_int(r, key, HF_SEQ_CAP, 1, &n))) {
    return rc;
  }
  if (n > HF_SEQ_CAP)
    n = HF_SEQ_CAP;
  *seq = n;
  return ST_OK;
}

static int is_moe_family(int fam)
{
  return fam == F_MIXTRAL || fam == F_QWEN2_MOE || fam == F_QWEN3_MOE || fam == F_DEEPSEEK_V2 ||
         fam == F_DEEPSEEK_V3 || fam == F_GPT_OSS;
}

/* The MoE keys: experts, top-k, widths, and which layers are sparse. */
static int rd_moe(const rd *r, int fam, wl_model *m)
{
  int rc, E = 0, k = 0, ef = 0, shared = 0, dense = 0, step = 1;
  const char *step_key = "decoder_sparse_step";
  if (fam == F_MIXTRAL || fam == F_GPT_OSS) {
    if ((rc = rd_int(r, "num_local_experts", HF_REQUIRED, 0, &E)))
      return rc;
    ef = m->ffn_hidden;
  } else if (fam == F_DEEPSEEK_V2 || fam == F_DEEPSEEK_V3) {
    /* n_routed_experts null: a dense model (DeepseekV2Config's default) */
    if (!item(r, "n_routed_experts"))
      return missing(r, "n_routed_experts");
    if ((rc = rd_int(r, "n_routed_experts", 0, 0, &E)) ||
        (rc = rd_int(r, "n_shared_experts", 0, 0, &shared)) ||
        (rc = rd_int(r, "first_k_dense_replace", 0, 0, &dense)) ||
        (rc = rd_int(r, "moe_layer_freq", 1, 1, &step)))
      return rc;
    step_key = "moe_layer_freq";
  } else {
    const char *ek = fam == F_QWEN3_MOE && !item(r, "num_experts") && item(r, "num_local_experts")
                         ? "num_local_experts"
                         : "num_experts";
    if ((rc = rd_int(r, ek, HF_REQUIRED, 0, &E)) ||
        (rc = rd_int(r, "decoder_sparse_step", 1, 1, &step)) ||
        (rc = rd_leading_layers(r, "mlp_only_layers", &dense)))
      return rc;
    if (fam == F_QWEN2_MOE) {
      int s = 0;
      if ((rc = rd_int(r, "shared_expert_intermediate_size", HF_REQUIRED, 0, &s)))
        return rc;
      shared = s; /* a width for now; a count of expert widths below */
    }
  }
  if (E == 0 || dense >= m->layers)
    return ST_OK; /* no sparse layer: a dense model */
  if (step != 1)
    return st_jrd_fail(&r->j, NULL,
                       "key '%s' is %d: MoE layers only every %d layers are not "
                       "modelled (only 1, every layer from the first sparse one)",
                       step_key, step, step);
  if ((rc = rd_int(r, "num_experts_per_tok", HF_REQUIRED, 1, &k)))
    return rc;
  if (fam != F_MIXTRAL && fam != F_GPT_OSS &&
      (rc = rd_int(r, "moe_intermediate_size", HF_REQUIRED, 1, &ef)))
    return rc;
  if (k > E)
    return st_jrd_fail(&r->j, NULL, "key 'num_experts_per_tok' (%d) exceeds the %d experts", k, E);
  if (fam == F_QWEN2_MOE) {
    if (shared % ef)
      return st_jrd_fail(&r->j, NULL,
                         "key 'shared_expert_intermediate_size' (%d) is not a "
                         "multiple of 'moe_intermediate_size' (%d): the shared expert is "
                         "modelled as whole experts",
                         shared, ef);
    shared /= ef;
  }
  m->has_moe = 1;
  m->moe.experts = E;
  m->moe.top_k = k;
  m->moe.expert_ffn_hidden = ef;
  m->moe.shared_experts = shared;
  m->moe.dense_layers = dense;
  m->moe.capacity_factor = 0;
  return ST_OK;
}

static int rd_mla(const rd *r, wl_model *m)
{
  int rc;
  wl_mla *a = &m->mla;
  /* q_lora_rank null: queries projected directly (DeepSeek-V2-Lite) */
  if (!item(r, "q_lora_rank"))
    return missing(r, "q_lora_rank");
  if ((rc = rd_int(r, "q_lora_rank", 0, 0, &a->q_lora_rank)) ||
      (rc = rd_int(r, "kv_lora_rank", HF_REQUIRED, 1, &a->kv_lora_rank)) ||
      (rc = rd_int(r, "qk_nope_head_dim", HF_REQUIRED, 1, &a->qk_nope_head_dim)) ||
      (rc = rd_int(r, "qk_rope_head_dim", HF_REQUIRED, 1, &a->qk_rope_head_dim)) ||
      (rc = rd_int(r, "v_head_dim", HF_REQUIRED, 1, &a->v_head_dim)) ||
      (rc = rd_false(r, "attention_bias",
                     "biased MLA projections are not modelled (DeepSeek's are unbiased)")))
    return rc;
  m->has_mla = 1;
  m->kv_heads = m->heads;
  m->head_dim = a->v_head_dim;
  return ST_OK;
}

static int hf_model(const rd *r, int fam, wl_model *m)
{
  int rc, gpt2 = fam == F_GPT2, qwen3 = fam == F_QWEN3 || fam == F_QWEN3_MOE;
  int gemma = fam == F_GEMMA || fam == F_GEMMA2;
  int deepseek = fam == F_DEEPSEEK_V2 || fam == F_DEEPSEEK_V3;
  if ((rc = rd_int(r, gpt2 ? "n_embd" : "hidden_size", HF_REQUIRED, 1, &m->hidden)) ||
      (rc = rd_int_in(r, gpt2 ? "n_layer" : "num_hidden_layers", HF_REQUIRED, 1, ST_LAYERS_MAX,
                      &m->layers)) ||
      (rc = rd_int(r, gpt2 ? "n_head" : "num_attention_heads", HF_REQUIRED, 1, &m->heads)) ||
      (rc = rd_int(r, "vocab_size", HF_REQUIRED, 1, &m->vocab)))
    return rc;
  if (gpt2)
    rc = rd_int(r, "n_inner", 4 * m->hidden, 1, &m->ffn_hidden);
  else
    rc = rd_int(r, "intermediate_size", HF_REQUIRED, 1, &m->ffn_hidden);
  if (rc)
    return rc;
  m->ffn_act = gpt2 || fam == F_GPT_NEOX ? WL_ACT_GELU : WL_ACT_SWIGLU;
  m->layer_norm = gpt2 || fam == F_GPT_NEOX;
  m->norms_per_layer = fam == F_GEMMA2 ? 4 : 2;
  m->qk_norm = qwen3;
  if ((rc = rd_bool(r, "tie_word_embeddings", gpt2 || gemma, &m->tie_embeddings)))
    return rc;
  /* heads: keys and values, and their width */
  m->kv_heads = m->heads;
  if (!gpt2 && fam != F_GPT_NEOX && !deepseek &&
      (rc = rd_int(r, "num_key_value_heads", m->heads, 1, &m->kv_heads)))
    return rc;
  int dh = m->hidden % m->heads ? 0 : m->hidden / m->heads;
  if (qwen3)
    dh = 128; /* Qwen3Config's default */
  else if (fam == F_GPT_OSS)
    dh = 64; /* GptOssConfig's */
  else if (gemma)
    dh = 256; /* GemmaConfig's and Gemma2Config's */
  if (deepseek) {
    if ((rc = rd_mla(r, m)))
      return rc;
  } else {
    int has_key = fam != F_GPT2 && fam != F_GPT_NEOX;
    if (has_key && item(r, "head_dim") && (rc = rd_int(r, "head_dim", dh, 1, &dh)))
      return rc;
    if (!dh)
      return st_jrd_fail(&r->j, NULL, "key '%s' (%d) does not divide '%s' (%d)",
                         gpt2 ? "n_head" : "num_attention_heads", m->heads,
                         gpt2 ? "n_embd" : "hidden_size", m->hidden);
    m->head_dim = dh;
  }
  if (m->heads % m->kv_heads)
    return st_jrd_fail(&r->j, NULL,
                       "key 'num_key_value_heads' (%d) does not divide "
                       "'num_attention_heads' (%d)",
                       m->kv_heads, m->heads);
  /* biases */
  int ab = 0;
  switch (fam) {
  case F_GPT2:
    m->qkv_bias = m->out_bias = m->mlp_bias = 1;
    rc = rd_false(r, "add_cross_attention", "cross-attention is not modelled");
    break;
  case F_GPT_NEOX: /* query_key_value and dense biased unless attention_bias=false */
    rc = rd_bool(r, "attention_bias", 1, &ab);
    m->qkv_bias = m->out_bias = ab;
    m->mlp_bias = 1;
    break;
  case F_QWEN2:
  case F_QWEN2_MOE: /* q, k, v biased, o not */ m->qkv_bias = 1; break;
  case F_GPT_OSS: /* every projection biased, the experts' too */
    m->qkv_bias = m->out_bias = m->mlp_bias = 1;
    break;
  case F_LLAMA:
    if ((rc = rd_bool(r, "mlp_bias", 0, &m->mlp_bias)))
      return rc;
    /* fall through */
  case F_QWEN3:
  case F_QWEN3_MOE:
  case F_GEMMA:
  case F_GEMMA2:
    rc = rd_bool(r, "attention_bias", 0, &ab);
    m->qkv_bias = m->out_bias = ab;
    break;
  default: break;
  }
  if (rc)
    return rc;
  if (is_moe_family(fam) && (rc = rd_moe(r, fam, m)))
    return rc;
  if (fam == F_GPT2 && (rc = rd_int(r, "n_positions", HF_REQUIRED, 1, &m->positions)))
    return rc;
  if ((rc = rd_window(r, fam, m)))
    return rc;
  return rd_seq(r, gpt2 ? "n_positions" : "max_position_embeddings", &m->seq_len);
}

int wl__hf_parse(const cJSON *root, const char *what, wl_model *out, st_err *err)
{
  char subject[ST_ERR_MSG_MAX];
  snprintf(subject, sizeof subject, "model '%s'", what);
  rd r = {{subject, NULL, err}, root, NULL};
  const cJSON *ar = item(&r, "architectures"), *mt = item(&r, "model_type");
  const char *arch = NULL, *type = NULL;
  if (ar) {
    if (!cJSON_IsArray(ar) || !cJSON_IsString(cJSON_GetArrayItem(ar, 0)))
      return st_jrd_fail(&r.j, NULL, "'architectures' is %s, expected an array of class names",
                         st_json_type_name(ar));
    arch = cJSON_GetArrayItem(ar, 0)->valuestring;
  }
  if (mt && st_jrd_string(&r.j, NULL, mt, &type))
    return ST_EINPUT;
  const hf_arch *a = find_arch(arch, type);
  if (!a) {
    st_buf b;
    st_buf_init(&b);
    for (size_t i = 0; i < NUM_ARCHS; i++)
      st_buf_printf(&b, "%s%s", i ? ", " : "", arch ? archs[i].arch : archs[i].model_type);
    st_jrd_fail(&r.j, NULL, "%s '%s' is not supported (supported: %s)",
                arch ? "architecture" : "model_type", arch ? arch : type, b.data ? b.data : "");
    st_buf_release(&b);
    return ST_EINPUT;
  }
  if (arch && type && strcmp(type, a->model_type))
    return st_jrd_fail(&r.j, NULL, "'model_type' is '%s', but architecture '%s' is '%s'", type,
                       arch, a->model_type);
  r.arch = a->arch;
  wl_model m;
  memset(&m, 0, sizeof m);
  snprintf(m.name, sizeof m.name, "%s", what);
  int rc = hf_model(&r, a->fam, &m);
  if (rc == ST_OK)
    *out = m;
  return rc;
}
