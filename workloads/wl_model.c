/* wl_model.c — transformer model specs: the built-in table and the JSON form,
 * and the parameter counts the generator and the memory model share.
 *
 * A spec has exactly the keys of workload.h's wl_model (name, layers, hidden,
 * heads, kv_heads, ffn_hidden, ffn_act, vocab, seq_len, tie_embeddings, moe{...})
 * plus two documented extras (head_dim, mla{...}).  Unknown keys and shapes
 * that cannot exist are errors naming the key, so specs written elsewhere
 * fail loudly rather than being half-read.  A JSON object with
 * "architectures" or "model_type" is a Hugging Face config instead, read by
 * wl_hf.c.  Dimensions of the built-ins and their sources are in
 * docs/workloads.md.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "wl_gen_int.h"
#include "workload.h"

typedef struct builtin {
  const char *name;
  int layers, hidden, heads, kv_heads, ffn_hidden, act, vocab, seq, tie;
  int experts, top_k, eff, shared, dense; /* moe (experts 0 = dense model) */
  int mla;                                /* DeepSeek-V3's MLA dims */
} builtin;

#define GPT(n, l, h, a) {n, l, h, a, a, 4 * (h), WL_ACT_GELU, 51200, 2048, 1, 0, 0, 0, 0, 0, 0}

static const builtin builtins[] = {
    /* GPT-3 (Brown et al. 2020, Table 2.1), Megatron's padded GPT-2 vocabulary */
    GPT("gpt3-175b", 96, 12288, 96),
    /* Llama 3 herd (Dubey et al. 2024, Table 3), vocabulary 128,256 */
    {"llama3-8b", 32, 4096, 32, 8, 14336, WL_ACT_SWIGLU, 128256, 8192, 0, 0, 0, 0, 0, 0, 0},
    {"llama3-70b", 80, 8192, 64, 8, 28672, WL_ACT_SWIGLU, 128256, 8192, 0, 0, 0, 0, 0, 0, 0},
    {"llama3-405b", 126, 16384, 128, 8, 53248, WL_ACT_SWIGLU, 128256, 8192, 0, 0, 0, 0, 0, 0, 0},
    /* Mixtral 8x7B (Jiang et al. 2024): 8 experts, top-2 */
    {"mixtral-8x7b", 32, 4096, 32, 8, 14336, WL_ACT_SWIGLU, 32000, 4096, 0, 8, 2, 14336, 0, 0, 0},
    /* DeepSeek-V3 (DeepSeek-AI 2024, Sec. 4.2): 3 dense layers, 256 routed + 1 shared
     * experts of width 2048, top-8, MLA */
    {"deepseek-v3", 61, 7168, 128, 128, 18432, WL_ACT_SWIGLU, 129280, 4096, 0, 256, 8, 2048, 1, 3,
     1},
    /* Megatron-LM SC'21 weak-scaling table (Narayanan et al. 2021, Table 1) */
    GPT("megatron-1.7b", 24, 2304, 24),
    GPT("megatron-3.6b", 30, 3072, 32),
    GPT("megatron-7.5b", 36, 4096, 32),
    GPT("megatron-18b", 40, 6144, 48),
    GPT("megatron-39b", 48, 8192, 64),
    GPT("megatron-76b", 60, 10240, 80),
    GPT("megatron-145b", 80, 12288, 96),
    GPT("megatron-310b", 96, 16384, 128),
    GPT("megatron-530b", 105, 20480, 128),
    GPT("megatron-1t", 128, 25600, 160),
};
#define NUM_BUILTINS (sizeof builtins / sizeof builtins[0])

static const char *builtin_names[NUM_BUILTINS + 1];

const char *const *wl_model_names(void)
{
  if (!builtin_names[0])
    for (size_t i = 0; i < NUM_BUILTINS; i++)
      builtin_names[i] = builtins[i].name;
  return builtin_names;
}

void wl_model_release(wl_model *m) { (void)m; }

/* What a spec does not state follows from its activation: gelu models are
 * GPT-style (LayerNorm, every linear biased, learned positions), swiglu
 * models Llama-style (RMSNorm, no biases, rotary). */
static void style_from_act(wl_model *m)
{
  int gpt = m->ffn_act == WL_ACT_GELU;
  m->layer_norm = gpt;
  m->norms_per_layer = 2;
  m->qkv_bias = m->out_bias = m->mlp_bias = gpt;
  m->qk_norm = 0;
  m->positions = gpt ? WL_POSITIONS_SEQ : 0;
  m->sliding_window = 0;
  m->window_pattern[0] = '\0';
}

int wl_model_layer_window(const wl_model *m, int layer)
{
  if (m->sliding_window <= 0)
    return 0;
  size_t n = strlen(m->window_pattern);
  if (n == 0)
    return m->sliding_window;
  return m->window_pattern[(size_t)(layer < 0 ? 0 : layer) % n] == 's' ? m->sliding_window : 0;
}

static void from_builtin(const builtin *b, wl_model *m)
{
  memset(m, 0, sizeof *m);
  snprintf(m->name, sizeof m->name, "%s", b->name);
  m->layers = b->layers;
  m->hidden = b->hidden;
  m->heads = b->heads;
  m->kv_heads = b->kv_heads;
  m->head_dim = b->hidden / b->heads;
  m->ffn_hidden = b->ffn_hidden;
  m->ffn_act = b->act;
  m->vocab = b->vocab;
  m->seq_len = b->seq;
  m->tie_embeddings = b->tie;
  if (b->experts) {
    m->has_moe = 1;
    m->moe.experts = b->experts;
    m->moe.top_k = b->top_k;
    m->moe.expert_ffn_hidden = b->eff;
    m->moe.shared_experts = b->shared;
    m->moe.dense_layers = b->dense;
    m->moe.capacity_factor = 0;
  }
  style_from_act(m);
  if (b->mla) {
    m->has_mla = 1;
    m->mla.q_lora_rank = 1536;
    m->mla.kv_lora_rank = 512;
    m->mla.qk_nope_head_dim = 128;
    m->mla.qk_rope_head_dim = 64;
    m->mla.v_head_dim = 128;
    m->head_dim = 128;
  }
}

/* ---- JSON (base's checked reader, st_jrd_*) ----------------------------- */
static int get_int_in(const st_jrd *r, const st_jpath *at, const cJSON *obj, const char *key,
                      int required, int *out, int minv, long maxv)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v)
    return required ? st_jrd_missing(r, at, key) : ST_OK;
  long x;
  if (st_jrd_int(r, at, v, minv, maxv, &x))
    return ST_EINPUT;
  *out = (int)x;
  return ST_OK;
}

static int get_int(const st_jrd *r, const st_jpath *at, const cJSON *obj, const char *key,
                   int required, int *out, int minv)
{
  return get_int_in(r, at, obj, key, required, out, minv, INT32_MAX);
}

static const char *act_name(int a) { return a == WL_ACT_GELU ? "gelu" : "swiglu"; }

static const char *const top_keys[] = {"name",     "layers",  "hidden",     "heads",
                                       "kv_heads", "head_dim", "ffn_hidden", "ffn_act",
                                       "vocab",    "seq_len", "tie_embeddings", "moe",
                                       "mla",      "sliding_window", "window_pattern", "qk_norm",
                                       NULL};
static const char *const moe_keys[] = {"experts",        "top_k",        "expert_ffn_hidden",
                                       "shared_experts", "dense_layers", "capacity_factor",
                                       NULL};
static const char *const mla_keys[] = {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                       "qk_rope_head_dim", "v_head_dim", NULL};

static int validate(const wl_model *m, const char *what, st_err *err)
{
  if (!m->has_mla && m->hidden % m->heads)
    return st_err_set(err, ST_EINPUT,
                      "model '%s': key 'heads' (%d) does not divide 'hidden' (%d)", what,
                      m->heads, m->hidden);
  if (m->heads % m->kv_heads)
    return st_err_set(err, ST_EINPUT,
                      "model '%s': key 'kv_heads' (%d) does not divide 'heads' (%d)", what,
                      m->kv_heads, m->heads);
  if (m->has_moe) {
    if (m->moe.top_k > m->moe.experts)
      return st_err_set(err, ST_EINPUT,
                        "model '%s': key 'moe.top_k' (%d) exceeds 'moe.experts' (%d)", what,
                        m->moe.top_k, m->moe.experts);
    if (m->moe.dense_layers >= m->layers)
      return st_err_set(err, ST_EINPUT,
                        "model '%s': key 'moe.dense_layers' (%d) leaves no MoE layer of %d",
                        what, m->moe.dense_layers, m->layers);
  }
  return ST_OK;
}

int wl_model_parse(const char *json, const char *what, wl_model *out, st_err *err)
{
  char subject[ST_ERR_MSG_MAX];
  snprintf(subject, sizeof subject, "model '%s'", what);
  st_jrd r = {subject, NULL, err};
  st_jpath at_moe = {NULL, "moe", 0}, at_mla = {NULL, "mla", 0};
  cJSON *root = NULL;
  if (st_json_parse(json, strlen(json), subject, &root, err))
    return ST_EINPUT;
  wl_model m;
  memset(&m, 0, sizeof m);
  int rc = ST_OK;
#define TRY(x)                                                                           \
  do {                                                                                   \
    if ((rc = (x)) != ST_OK)                                                             \
      goto done;                                                                         \
  } while (0)
  if (cJSON_GetObjectItemCaseSensitive(root, "architectures") ||
      cJSON_GetObjectItemCaseSensitive(root, "model_type")) {
    rc = wl__hf_parse(root, what, out, err);
    goto done;
  }
  TRY(st_jrd_members(&r, NULL, root, top_keys, -1, NULL));
  const cJSON *nm = cJSON_GetObjectItemCaseSensitive(root, "name");
  const char *name = what;
  if (nm)
    TRY(st_jrd_string(&r, NULL, nm, &name));
  snprintf(m.name, sizeof m.name, "%s", name);
  TRY(get_int_in(&r, NULL, root, "layers", 1, &m.layers, 1, ST_LAYERS_MAX));
  TRY(get_int(&r, NULL, root, "hidden", 1, &m.hidden, 1));
  TRY(get_int(&r, NULL, root, "heads", 1, &m.heads, 1));
  m.kv_heads = m.heads;
  TRY(get_int(&r, NULL, root, "kv_heads", 0, &m.kv_heads, 1));
  TRY(get_int(&r, NULL, root, "ffn_hidden", 1, &m.ffn_hidden, 1));
  TRY(get_int(&r, NULL, root, "vocab", 1, &m.vocab, 1));
  TRY(get_int(&r, NULL, root, "seq_len", 1, &m.seq_len, 1));
  const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "ffn_act");
  int ffn_act = 0;
  TRY(act ? st_jrd_enum(&r, NULL, act, NULL, act_name, WL_ACT_COUNT, &ffn_act)
          : st_jrd_missing(&r, NULL, "ffn_act"));
  m.ffn_act = ffn_act;
  const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_embeddings");
  TRY(tie ? st_jrd_bool(&r, NULL, tie, &m.tie_embeddings)
          : st_jrd_missing(&r, NULL, "tie_embeddings"));
  if (!m.has_mla && m.hidden % m.heads == 0)
    m.head_dim = m.hidden / m.heads;
  TRY(get_int(&r, NULL, root, "head_dim", 0, &m.head_dim, 1));
  const cJSON *moe = cJSON_GetObjectItemCaseSensitive(root, "moe");
  if (moe && !cJSON_IsNull(moe)) {
    TRY(st_jrd_members(&r, &at_moe, moe, moe_keys, -1, NULL));
    m.has_moe = 1;
    TRY(get_int(&r, &at_moe, moe, "experts", 1, &m.moe.experts, 1));
    TRY(get_int(&r, &at_moe, moe, "top_k", 1, &m.moe.top_k, 1));
    m.moe.expert_ffn_hidden = m.ffn_hidden;
    TRY(get_int(&r, &at_moe, moe, "expert_ffn_hidden", 0, &m.moe.expert_ffn_hidden, 1));
    TRY(get_int(&r, &at_moe, moe, "shared_experts", 0, &m.moe.shared_experts, 0));
    TRY(get_int(&r, &at_moe, moe, "dense_layers", 0, &m.moe.dense_layers, 0));
    const cJSON *cf = cJSON_GetObjectItemCaseSensitive(moe, "capacity_factor");
    if (cf && !cJSON_IsNull(cf))
      TRY(st_jrd_size(&r, &at_moe, cf, &m.moe.capacity_factor));
  }
  const cJSON *mla = cJSON_GetObjectItemCaseSensitive(root, "mla");
  if (mla && !cJSON_IsNull(mla)) {
    TRY(st_jrd_members(&r, &at_mla, mla, mla_keys, -1, NULL));
    m.has_mla = 1;
    TRY(get_int(&r, &at_mla, mla, "q_lora_rank", 1, &m.mla.q_lora_rank, 0));
    TRY(get_int(&r, &at_mla, mla, "kv_lora_rank", 1, &m.mla.kv_lora_rank, 1));
    TRY(get_int(&r, &at_mla, mla, "qk_nope_head_dim", 1, &m.mla.qk_nope_head_dim, 1));
    TRY(get_int(&r, &at_mla, mla, "qk_rope_head_dim", 1, &m.mla.qk_rope_head_dim, 1));
    TRY(get_int(&r, &at_mla, mla, "v_head_dim", 1, &m.mla.v_head_dim, 1));
    if (!m.head_dim)
      m.head_dim = m.mla.v_head_dim;
  }
  if (!m.head_dim) {
    rc = st_err_set(err, ST_EINPUT, "model '%s': key 'heads' (%d) does not divide 'hidden' (%d)",
                    what, m.heads, m.hidden);
    goto done;
  }
  TRY(validate(&m, what, err));
  style_from_act(&m);
  const cJSON *qkn = cJSON_GetObjectItemCaseSensitive(root, "qk_norm");
  if (qkn)
    TRY(st_jrd_bool(&r, NULL, qkn, &m.qk_norm));
  TRY(get_int(&r, NULL, root, "sliding_window", 0, &m.sliding_window, 1));
  const cJSON *wp = cJSON_GetObjectItemCaseSensitive(root, "window_pattern");
  if (wp) {
    st_jpath at_wp = {NULL, "window_pattern", 0};
    const char *pat = NULL;
    TRY(st_jrd_string(&r, NULL, wp, &pat));
    size_t n = strlen(pat), slides = 0;
    for (size_t i = 0; i < n; i++) {
      if (pat[i] != 's' && pat[i] != 'f') {
        rc = st_jrd_fail(&r, &at_wp, "'%c' at %zu: expected 's' (a sliding layer) or 'f' (full)",
                         pat[i], i);
        goto done;
      }
      slides += pat[i] == 's';
    }
    if (n == 0 || n > WL_WINDOW_PATTERN_MAX) {
      rc = st_jrd_fail(&r, &at_wp, "%zu characters: expected 1 to %d, one per layer, repeated", n,
                       WL_WINDOW_PATTERN_MAX);
      goto done;
    }
    if (slides == 0) {
      rc = st_jrd_fail(&r, &at_wp,
                       "no 's': a pattern names the sliding layers (%zu characters, at most %d)",
                       n, WL_WINDOW_PATTERN_MAX);
      goto done;
    }
    if (!m.sliding_window) {
      rc = st_jrd_fail(&r, &at_wp, "needs 'sliding_window', the sliding layers' window");
      goto done;
    }
    snprintf(m.window_pattern, sizeof m.window_pattern, "%s", pat);
  }
  *out = m;
done:
#undef TRY
  cJSON_Delete(root);
  return rc;
}

int wl_model_load(const char *arg, wl_model *m, st_err *err)
{
  for (size_t i = 0; i < NUM_BUILTINS; i++)
    if (!strcmp(arg, builtins[i].name)) {
      from_builtin(&builtins[i], m);
      return ST_OK;
    }
  /* a spec file by its suffix, or standard input ("-"), or any other file
   * that is there (a FIFO, /dev/fd/N of a shell's <(...)) */
  struct stat sb;
  if (!st_str_ends_with(arg, ".json") && !st_str_ends_with(arg, ".json.gz") && strcmp(arg, "-") &&
      (stat(arg, &sb) != 0 || S_ISDIR(sb.st_mode))) {
    st_buf b;
    st_buf_init(&b);
    for (size_t i = 0; i < NUM_BUILTINS; i++)
      st_buf_printf(&b, "%s%s", i ? ", " : "", builtins[i].name);
    st_err_set(err, ST_EINPUT, "model '%s': no such built-in model, and not a .json file (known: %s)",
               arg, b.data ? b.data : "");
    st_buf_release(&b);
    return ST_EINPUT;
  }
  char *data = NULL;
  size_t len = 0;
  int rc = st_file_read_all(arg, &data, &len, err);
  if (rc)
    return rc;
  rc = wl_model_parse(data, arg, m, err);
  free(data);
  return rc;
}

/* ---- shapes shared by the generator and the memory model ------------------ */
int wl__vocab_padded(const wl_model *m, int tp)
{
  /* Megatron: --make-vocab-size-divisible-by 128, times the TP size. */
  long mult = 128L * tp;
  return (int)(((long)m->vocab + mult - 1) / mult * mult);
}

int wl__is_moe_layer(const wl_model *m, int layer)
{
  return m->has_moe && layer >= m->moe.dense_layers;
}

/* Rows of the learned position embedding. */
static double position_rows(const wl_model *m)
{
  return m->positions == WL_POSITIONS_SEQ ? m->seq_len : m->positions;
}

/* One norm's parameters: LayerNorm has a weight and a bias, RMSNorm a weight. */
static double norm_params(const wl_model *m) { return (m->layer_norm ? 2.0 : 1.0) * m->hidden; }

void wl__layer_params(const wl_model *m, int tp, int etp, int ep, int layer, wl__params *p)
{
  double h = m->hidden, t = tp;
  double norm = norm_params(m) * m->norms_per_layer / 2; /* each block's share */
  memset(p, 0, sizeof *p);
  if (m->has_mla) {
    const wl_mla *a = &m->mla;
    /* in doubles throughout: a spec's sizes are each an int, their products
     * and sums are not (an int product overflowed: undefined) */
    double heads = m->heads, qlr = a->q_lora_rank, kvlr = a->kv_lora_rank;
    double nope = a->qk_nope_head_dim, rope = a->qk_rope_head_dim, vd = a->v_head_dim;
    double qk = nope + rope;
    double q = qlr ? h * qlr + qlr + qlr * heads * qk / t : h * heads * qk / t;
    p->attn = q + h * (kvlr + rope) + kvlr + kvlr * heads * (nope + vd) / t + heads * vd * h / t +
              norm;
  } else {
    double q = (double)m->heads * m->head_dim, kv = (double)m->kv_heads * m->head_dim;
    p->attn = h * (q + 2 * kv) / t + q * h / t + m->qkv_bias * (q + 2 * kv) / t +
              m->out_bias * h + norm + m->qk_norm * 2.0 * m->head_dim;
  }
  double gate = m->ffn_act == WL_ACT_SWIGLU ? 3 : 2;
  if (wl__is_moe_layer(m, layer)) {
    double ef = m->moe.expert_ffn_hidden;
    p->mlp = h * m->moe.experts + norm; /* router (replicated) */
    p->mlp += gate * h * (m->moe.shared_experts * ef) / t;
    p->expert = (double)m->moe.experts / ep *
                (gate * h * ef / etp + m->mlp_bias * ((gate - 1) * ef / etp + h));
  } else {
    double f = m->ffn_hidden;
    p->mlp = gate * h * f / t + m->mlp_bias * ((gate - 1) * f / t + h) + norm;
  }
}

double wl__embedding_params(const wl_model *m, int tp)
{
  return (double)wl__vocab_padded(m, tp) / tp * m->hidden + position_rows(m) * m->hidden;
}

double wl__output_params(const wl_model *m, int tp, int pp)
{
  double norm = norm_params(m);
  double out = (double)wl__vocab_padded(m, tp) / tp * m->hidden;
  if (m->tie_embeddings && pp == 1)
    out = 0; /* the embedding's weight, counted there */
  return norm + out;
}

double wl_model_params(const wl_model *m)
{
  double p = 0;
  for (int l = 0; l < m->layers; l++) {
    wl__params lp;
    wl__layer_params(m, 1, 1, 1, l, &lp);
    p += lp.attn + lp.mlp + lp.expert;
  }
  /* unpadded vocabulary for the model's own size */
  double e = (double)m->vocab * m->hidden + position_rows(m) * m->hidden;
  p += e + norm_params(m);
  if (!m->tie_embeddings)
    p += (double)m->vocab * m->hidden;
  return p;
}

double wl_model_active_params(const wl_model *m)
{
  double p = wl_model_params(m);
  for (int l = 0; l < m->layers && m->has_moe; l++) {
    wl__params lp;
    wl__layer_params(m, 1, 1, 1, l, &lp);
    p -= lp.expert * (m->moe.experts - m->moe.top_k) / m->moe.experts;
  }
  return p;
}
