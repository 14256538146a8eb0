/* test_hf.c — Hugging Face config.json files as models (workloads/wl_hf.c).
 *
 * The configs under tests/data/hf/ are those published with real models
 * (tests/data/hf/README.md names each source).  Expected values come from
 * outside the code under test:
 *   - parameter counts: the figures the models' authors publish, to within
 *     one unit of the last digit they print (they round, and some truncate
 *     or count with the tokenizer's rather than the padded vocabulary); exact
 *     where they publish an exact count;
 *   - each architecture's mapping: the config's own numbers, read by hand;
 *   - the same model as a built-in: the same fields and the same workload,
 *     byte for byte;
 *   - model FLOPs of a step: Megatron's convention written out here,
 *     tokens x (6 x linear weights + 12 l s a d).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "wl_gen_int.h"
#include "workload.h"

#define HF ST_TEST_DATA_DIR "/hf/"

static void load(const char *file, wl_model *m)
{
  st_err err;
  st_err_clear(&err);
  char path[512];
  snprintf(path, sizeof path, "%s%s", HF, file);
  if (wl_model_load(path, m, &err)) {
    print_error("%s: %s\n", file, err.msg);
    fail();
  }
}

/* The config `file` with key `key` set to the JSON `value` (NULL: removed). */
static char *edited(const char *file, const char *key, const char *value)
{
  char path[512], *data = NULL;
  size_t len = 0;
  st_err err;
  st_err_clear(&err);
  snprintf(path, sizeof path, "%s%s", HF, file);
  assert_int_equal(st_file_read_all(path, &data, &len, &err), 0);
  cJSON *root = cJSON_Parse(data);
  free(data);
  assert_non_null(root);
  cJSON_DeleteItemFromObjectCaseSensitive(root, key);
  if (value) {
    cJSON *v = cJSON_Parse(value);
    assert_non_null(v);
    cJSON_AddItemToObject(root, key, v);
  }
  char *s = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return s;
}

/* A config that parses; json is freed. */
static void parse_ok(char *json, wl_model *m)
{
  st_err err;
  st_err_clear(&err);
  if (wl_model_parse(json, "c.json", m, &err)) {
    print_error("%s\n", err.msg);
    fail();
  }
  free(json);
}

static void expect_error(const char *json, const char *want)
{
  wl_model m;
  st_err err;
  st_err_clear(&err);
  int rc = wl_model_parse(json, "c.json", &m, &err);
  if (rc != ST_EINPUT || strcmp(err.msg, want)) {
    print_error("rc %d\n  got:  %s\n  want: %s\n", rc, err.msg, want);
    fail();
  }
}

static void check_near(double got, double want, double tol, const char *what)
{
  if (!(fabs(got - want) <= tol)) {
    print_error("%s: got %.0f, want %.0f within %.0f\n", what, got, want, tol);
    fail();
  }
}

/* Field by field (padding bytes are not the model's): every field but the name. */
#define MODEL_FIELDS(x)                                                                            \
  x->layers, x->hidden, x->heads, x->kv_heads, x->head_dim, x->ffn_hidden, x->ffn_act, x->vocab,   \
      x->seq_len, x->tie_embeddings, x->has_moe, x->moe.experts, x->moe.top_k,                     \
      x->moe.expert_ffn_hidden, x->moe.shared_experts, x->moe.dense_layers,                        \
      x->moe.capacity_factor, x->has_mla, x->mla.q_lora_rank, x->mla.kv_lora_rank,                 \
      x->mla.qk_nope_head_dim, x->mla.qk_rope_head_dim, x->mla.v_head_dim, x->layer_norm,          \
      x->norms_per_layer, x->qkv_bias, x->out_bias, x->mlp_bias, x->qk_norm, x->positions,         \
      x->sliding_window
static void expect_same_model(const wl_model *a, const wl_model *b, const char *what)
{
  const double fa[] = {MODEL_FIELDS(a)}, fb[] = {MODEL_FIELDS(b)};
  for (size_t i = 0; i < sizeof fa / sizeof fa[0]; i++)
    if (fa[i] != fb[i]) {
      print_error("%s: field %zu is %g and %g\n", what, i, fa[i], fb[i]);
      fail();
    }
}

/* ---- parameter counts against the published ones -------------------------------- */
static void test_hf__params_match_the_published_counts(void **state)
{
  (void)state;
  /* total, non-embedding and active (per token) parameters; unit: the
   * published figure's last digit (0: the figure is exact; a figure of 0
   * is not published).  DeepSeek's activated counts leave the input
   * embedding out (V2: 21.38 B with it, 20.85 B without, published "21B";
   * V2-Lite: 2.66 / 2.45 B, published "2.4B": only the latter fits). */
  static const struct {
    const char *file;
    double total, total_unit, nonemb, nonemb_unit, active, active_unit;
    int active_without_input_embedding;
  } rows[] = {
      {"llama-3.1-8b.json", 8.03e9, 0.01e9, 0, 0, 0, 0, 0},
      {"mistral-7b-v0.1.json", 7.24e9, 0.01e9, 0, 0, 0, 0, 0},
      {"mixtral-8x7b-v0.1.json", 46.7e9, 0.1e9, 0, 0, 12.9e9, 0.1e9, 0},
      {"qwen2.5-7b.json", 7.61e9, 0.01e9, 6.53e9, 0.01e9, 0, 0, 0},
      {"qwen2-57b-a14b.json", 57.41e9, 0.01e9, 56.32e9, 0.01e9, 14e9, 1e9, 0},
      {"qwen3-8b.json", 8.2e9, 0.1e9, 6.95e9, 0.01e9, 0, 0, 0},
      {"qwen3-30b-a3b.json", 30.5e9, 0.1e9, 29.9e9, 0.1e9, 3.3e9, 0.1e9, 0},
      {"deepseek-v2-lite.json", 15.7e9, 0.1e9, 0, 0, 2.4e9, 0.1e9, 1},
      {"deepseek-v3.json", 671e9, 1e9, 0, 0, 37e9, 1e9, 1},
      {"gpt2.json", 124439808, 0, 0, 0, 0, 0, 0},
      {"gpt-neox-20b.json", 20554567680.0, 0, 0, 0, 0, 0, 0},
      {"pythia-160m.json", 162322944, 0, 85056000, 0, 0, 0, 0},
      {"gemma-7b.json", 8.54e9, 0.01e9, 7751248896.0, 0, 0, 0, 0},
      {"gemma-2-9b.json", 9.24e9, 0.01e9, 8324201984.0, 0, 0, 0, 0},
      {"gpt-oss-120b.json", 116.83e9, 0.01e9, 0, 0, 5.13e9, 0.01e9, 1},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    wl_model m;
    load(rows[i].file, &m);
    char what[96];
    double total = wl_model_params(&m);
    double emb =
        (double)m.vocab * m.hidden * (m.tie_embeddings ? 1 : 2) + (double)m.positions * m.hidden;
    snprintf(what, sizeof what, "%s total", rows[i].file);
    check_near(total, rows[i].total, rows[i].total_unit, what);
    if (rows[i].nonemb > 0) {
      snprintf(what, sizeof what, "%s non-embedding", rows[i].file);
      check_near(total - emb, rows[i].nonemb, rows[i].nonemb_unit, what);
    }
    double active = wl_model_active_params(&m);
    if (rows[i].active_without_input_embedding)
      active -= (double)m.vocab * m.hidden;
    snprintf(what, sizeof what, "%s active", rows[i].file);
    check_near(active, rows[i].active > 0 ? rows[i].active : total, rows[i].active_unit, what);
  }
}

/* ---- each architecture's keys onto the model's fields ----------------------------- */
static void test_hf__each_architecture_maps_its_keys(void **state)
{
  (void)state;
  /* from the config files, by hand: the derived values are the modeling
   * classes' (head_dim = hidden / heads unless given; GPT-2's n_inner null
   * = 4 n_embd; Qwen's q/k/v biases; Qwen3's q/k norms; Gemma 2's four
   * norms per layer; GPT-NeoX's biases on every linear) */
  /* clang-format off */
  static const struct {
    const char *file;
    int layers, hidden, heads, kv, hd, ffn, act, vocab, tie;
    int layer_norm, norms, qkv_b, out_b, mlp_b, qk_norm, positions, window, seq;
    int experts, top_k, eff, shared, dense;
  } rows[] = {
      {"llama-3.1-8b.json", 32, 4096, 32, 8, 128, 14336, WL_ACT_SWIGLU, 128256, 0,
       0, 2, 0, 0, 0, 0, 0, 0, 8192, 0, 0, 0, 0, 0},
      {"mistral-7b-v0.1.json", 32, 4096, 32, 8, 128, 14336, WL_ACT_SWIGLU, 32000, 0,
       0, 2, 0, 0, 0, 0, 0, 4096, 8192, 0, 0, 0, 0, 0},
      {"mixtral-8x7b-v0.1.json", 32, 4096, 32, 8, 128, 14336, WL_ACT_SWIGLU, 32000, 0,
       0, 2, 0, 0, 0, 0, 0, 0, 8192, 8, 2, 14336, 0, 0},
      {"qwen2.5-7b.json", 28, 3584, 28, 4, 128, 18944, WL_ACT_SWIGLU, 152064, 0,
       0, 2, 1, 0, 0, 0, 0, 0, 8192, 0, 0, 0, 0, 0},
      {"qwen2-57b-a14b.json", 28, 3584, 28, 4, 128, 18944, WL_ACT_SWIGLU, 151936, 0,
       0, 2, 1, 0, 0, 0, 0, 0, 8192, 64, 8, 2560, 8, 0},
      {"qwen3-8b.json", 36, 4096, 32, 8, 128, 12288, WL_ACT_SWIGLU, 151936, 0,
       0, 2, 0, 0, 0, 1, 0, 0, 8192, 0, 0, 0, 0, 0},
      {"qwen3-30b-a3b.json", 48, 2048, 32, 4, 128, 6144, WL_ACT_SWIGLU, 151936, 0,
       0, 2, 0, 0, 0, 1, 0, 0, 8192, 128, 8, 768, 0, 0},
      {"deepseek-v2-lite.json", 27, 2048, 16, 16, 128, 10944, WL_ACT_SWIGLU, 102400, 0,
       0, 2, 0, 0, 0, 0, 0, 0, 4096, 64, 6, 1408, 2, 1},
      {"deepseek-v3.json", 61, 7168, 128, 128, 128, 18432, WL_ACT_SWIGLU, 129280, 0,
       0, 2, 0, 0, 0, 0, 0, 0, 4096, 256, 8, 2048, 1, 3},
      {"gpt2.json", 12, 768, 12, 12, 64, 3072, WL_ACT_GELU, 50257, 1,
       1, 2, 1, 1, 1, 0, 1024, 0, 1024, 0, 0, 0, 0, 0},
      {"gpt-neox-20b.json", 44, 6144, 64, 64, 96, 24576, WL_ACT_GELU, 50432, 0,
       1, 2, 1, 1, 1, 0, 0, 0, 2048, 0, 0, 0, 0, 0},
      {"gemma-7b.json", 28, 3072, 16, 16, 256, 24576, WL_ACT_SWIGLU, 256000, 1,
       0, 2, 0, 0, 0, 0, 0, 0, 8192, 0, 0, 0, 0, 0},
      {"gemma-2-9b.json", 42, 3584, 16, 8, 256, 14336, WL_ACT_SWIGLU, 256000, 1,
       0, 4, 0, 0, 0, 0, 0, 4096, 8192, 0, 0, 0, 0, 0},
      {"gpt-oss-120b.json", 36, 2880, 64, 8, 64, 2880, WL_ACT_SWIGLU, 201088, 0,
       0, 2, 1, 1, 1, 0, 0, 128, 4096, 128, 4, 2880, 0, 0},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    wl_model m;
    load(rows[i].file, &m);
    const int got[] = {m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn_hidden,
                       m.ffn_act, m.vocab, m.tie_embeddings, m.layer_norm, m.norms_per_layer,
                       m.qkv_bias, m.out_bias, m.mlp_bias, m.qk_norm, m.positions,
                       m.sliding_window, m.seq_len, m.moe.experts, m.moe.top_k,
                       m.moe.expert_ffn_hidden, m.moe.shared_experts, m.moe.dense_layers};
    const int want[] = {rows[i].layers, rows[i].hidden, rows[i].heads, rows[i].kv, rows[i].hd,
                        rows[i].ffn, rows[i].act, rows[i].vocab, rows[i].tie,
                        rows[i].layer_norm, rows[i].norms, rows[i].qkv_b, rows[i].out_b,
                        rows[i].mlp_b, rows[i].qk_norm, rows[i].positions, rows[i].window,
                        rows[i].seq, rows[i].experts, rows[i].top_k, rows[i].eff,
                        rows[i].shared, rows[i].dense};
    static const char *const names[] = {
        "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "ffn_act", "vocab",
        "tie", "layer_norm", "norms_per_layer", "qkv_bias", "out_bias", "mlp_bias", "qk_norm",
        "positions", "sliding_window", "seq_len", "experts", "top_k", "expert_ffn",
        "shared_experts", "dense_layers"};
    /* clang-format on */
    for (size_t k = 0; k < sizeof got / sizeof got[0]; k++)
      if (got[k] != want[k]) {
        print_error("%s: %s is %d, want %d\n", rows[i].file, names[k], got[k], want[k]);
        fail();
      }
    assert_int_equal(m.has_moe, rows[i].experts > 0);
    assert_int_equal(m.has_mla, strstr(rows[i].file, "deepseek") != NULL);
  }
  /* MLA: V3 compresses queries (rank 1536), V2-Lite does not (null) */
  wl_model v3, lite;
  load("deepseek-v3.json", &v3);
  load("deepseek-v2-lite.json", &lite);
  assert_int_equal(v3.mla.q_lora_rank, 1536);
  assert_int_equal(v3.mla.kv_lora_rank, 512);
  assert_int_equal(v3.mla.qk_nope_head_dim, 128);
  assert_int_equal(v3.mla.qk_rope_head_dim, 64);
  assert_int_equal(v3.mla.v_head_dim, 128);
  assert_int_equal(lite.mla.q_lora_rank, 0);
  assert_int_equal(lite.mla.kv_lora_rank, 512);
}

/* Every key of the published configs is mapped or knowingly ignored: the
 * lists are complete for them.  Keys the lists do not know are accepted. */
static void test_hf__every_published_key_is_classified(void **state)
{
  (void)state;
  static const char *const files[] = {
      "llama-3.1-8b.json",  "mistral-7b-v0.1.json",  "mixtral-8x7b-v0.1.json",
      "qwen2.5-7b.json",    "qwen2-57b-a14b.json",   "qwen3-8b.json",
      "qwen3-30b-a3b.json", "deepseek-v2-lite.json", "deepseek-v3.json",
      "gpt2.json",          "gpt-neox-20b.json",     "pythia-160m.json",
      "gemma-7b.json",      "gemma-2-9b.json",       "gpt-oss-120b.json"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char *json = edited(files[i], "-", NULL);
    cJSON *root = cJSON_Parse(json);
    const char *arch =
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "architectures"), 0)->valuestring;
    for (const cJSON *c = root->child; c; c = c->next)
      if (wl__hf_key_class(arch, c->string) < 1) {
        print_error("%s: key '%s' is neither mapped nor ignored for %s\n", files[i], c->string,
                    arch);
        fail();
      }
    cJSON_Delete(root);
    free(json);
  }
  assert_int_equal(wl__hf_key_class("LlamaForCausalLM", "hidden_size"), 1);
  assert_int_equal(wl__hf_key_class("LlamaForCausalLM", "rope_theta"), 2);
  assert_int_equal(wl__hf_key_class("LlamaForCausalLM", "no_such_key"), 0);
  assert_int_equal(wl__hf_key_class("FooForCausalLM", "hidden_size"), -1);
  /* an unknown key changes nothing */
  char *json = edited("llama-3.1-8b.json", "some_tool_setting", "{\"x\": 1}");
  wl_model a, b;
  st_err err;
  st_err_clear(&err);
  assert_int_equal(wl_model_parse(json, "c.json", &a, &err), 0);
  free(json);
  load("llama-3.1-8b.json", &b);
  expect_same_model(&a, &b, "with an unknown key");
}

/* ---- the same model as a built-in -------------------------------------------------- */
static char *workload_json(const wl_model *m, const char *spec, int gpus)
{
  st_err err;
  st_err_clear(&err);
  wl_layout l;
  wl_workload *wl = NULL;
  if (wl_layout_parse(spec, gpus, m, &l, &err) || wl_generate(m, &l, &wl, &err)) {
    print_error("%s: %s\n", spec, err.msg);
    fail();
  }
  wl_meta_set_str(&wl->meta.model, "m"); /* the names differ */
  char *s = wl_workload_to_json(wl, 0);
  wl_workload_destroy(wl);
  return s;
}

static void test_hf__same_model_as_the_builtin_same_workload(void **state)
{
  (void)state;
  static const struct {
    const char *file, *builtin, *layout;
    int gpus, seq; /* seq: as --seq sets it (0: the config's default) */
  } rows[] = {
      {"llama-3.1-8b.json", "llama3-8b", "tp=8,mbs=1,gbs=8", 8, 0},
      {"llama-3.1-8b.json", "llama3-8b", "tp=2,pp=2,cp=2,sp=1,gbs=8,zero=1", 16, 0},
      /* DeepSeek-V3 from its config: the built-in's every dimension */
      {"deepseek-v3.json", "deepseek-v3", "tp=8,sp=1,ep=8,etp=1,gbs=1", 8, 0},
      /* Mixtral's config gives no training sequence: the built-in's 4096 */
      {"mixtral-8x7b-v0.1.json", "mixtral-8x7b", "tp=2,sp=1,ep=4,gbs=4", 8, 4096},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    wl_model h, b;
    st_err err;
    st_err_clear(&err);
    load(rows[i].file, &h);
    assert_int_equal(wl_model_load(rows[i].builtin, &b, &err), 0);
    if (rows[i].seq)
      h.seq_len = rows[i].seq;
    expect_same_model(&h, &b, rows[i].file);
    char *x = workload_json(&h, rows[i].layout, rows[i].gpus);
    char *y = workload_json(&b, rows[i].layout, rows[i].gpus);
    if (strcmp(x, y)) {
      print_error("%s and %s under %s: the workloads differ\n", rows[i].file, rows[i].builtin,
                  rows[i].layout);
      fail();
    }
    free(x);
    free(y);
  }
}

/* ---- what the new details do to a step ----------------------------------------------- */
static int count_named(const wl_workload *wl, const char *name, double *bytes)
{
  const wl_program *p = &wl->programs[0];
  int n = 0;
  for (size_t i = 0; i < p->num_ops; i++)
    if (!strcmp(wl_op_name(p, &p->ops[i]), name)) {
      n++;
      if (bytes)
        *bytes += p->ops[i].bytes;
    }
  return n;
}

static wl_workload *generate(const wl_model *m, const char *spec, int gpus, wl_layout *l)
{
  st_err err;
  st_err_clear(&err);
  wl_workload *wl = NULL;
  if (wl_layout_parse(spec, gpus, m, l, &err) || wl_generate(m, l, &wl, &err)) {
    print_error("%s: %s\n", spec, err.msg);
    fail();
  }
  return wl;
}

static void test_hf__details_reach_the_step(void **state)
{
  (void)state;
  wl_model q3, ll, g2, lite;
  wl_layout l;
  load("qwen3-8b.json", &q3);
  load("llama-3.1-8b.json", &ll);
  load("gemma-2-9b.json", &g2);
  load("deepseek-v2-lite.json", &lite);
  /* Qwen3's query and key norms: a pass per layer and direction, and their
   * gradients all-reduced over TP even without SP (Megatron-core's
   * finalize_model_grads for qk_layernorm): 36 layers x 2 x 128 fp32 values */
  wl_workload *wl = generate(&q3, "tp=2,gbs=1", 2, &l);
  double bytes = 0;
  assert_int_equal(count_named(wl, "qk_norm", NULL), 36);
  assert_int_equal(count_named(wl, "qk_norm.bwd", NULL), 36);
  assert_int_equal(count_named(wl, "tp.norm.grad.ar", &bytes), 1);
  assert_true(bytes == 36 * 2 * 128 * 4.0);
  wl_workload_destroy(wl);
  wl = generate(&ll, "tp=2,gbs=1", 2, &l);
  assert_int_equal(count_named(wl, "qk_norm", NULL), 0);
  assert_int_equal(count_named(wl, "tp.norm.grad.ar", NULL), 0);
  wl_workload_destroy(wl);
  /* Gemma 2's norms after attention and after the MLP */
  wl = generate(&g2, "tp=1,gbs=1", 1, &l);
  assert_int_equal(count_named(wl, "ln1.post", NULL), 42);
  assert_int_equal(count_named(wl, "ln2.post.bwd", NULL), 42);
  wl_workload_destroy(wl);
  /* DeepSeek-V2-Lite's queries: one column-parallel GEMM of 16 x 192 / tp
   * columns, no low-rank step */
  wl = generate(&lite, "tp=2,sp=1,gbs=1", 2, &l);
  const wl_program *p = &wl->programs[0];
  int q = 0;
  for (size_t i = 0; i < p->num_ops; i++) {
    const char *n = wl_op_name(p, &p->ops[i]);
    assert_true(strncmp(n, "q_down", 6) && strncmp(n, "q_up", 4));
    if (!strcmp(n, "q")) {
      assert_int_equal(p->ops[i].n, 16 * 192 / 2);
      assert_int_equal(p->ops[i].k, 2048);
      q++;
    }
  }
  assert_int_equal(q, 27);
  wl_workload_destroy(wl);
}

/* ---- which layers slide ----------------------------------------------------------- */
static void test_hf__sliding_layers(void **state)
{
  (void)state;
  /* Gemma 2 without layer_types: the even layers (Gemma2DecoderLayer's
   * is_sliding = not layer_idx % 2); Mistral: every layer */
  wl_model g, mi, q;
  load("gemma-2-9b.json", &g);
  assert_int_equal(g.sliding_window, 4096);
  assert_string_equal(g.window_pattern, "sf");
  assert_int_equal(wl_model_layer_window(&g, 0), 4096);
  assert_int_equal(wl_model_layer_window(&g, 41), 0);
  load("mistral-7b-v0.1.json", &mi);
  assert_string_equal(mi.window_pattern, "");
  assert_int_equal(wl_model_layer_window(&mi, 31), 4096);
  /* GPT-OSS: its layer_types (sliding, full, ...), and without the key
   * GptOssConfig's default, the same (sliding where (i + 1) % 2) */
  wl_model o;
  load("gpt-oss-120b.json", &o);
  assert_string_equal(o.window_pattern, "sf");
  assert_int_equal(wl_model_layer_window(&o, 34), 128);
  assert_int_equal(wl_model_layer_window(&o, 35), 0);
  parse_ok(edited("gpt-oss-120b.json", "layer_types", NULL), &o);
  assert_string_equal(o.window_pattern, "sf");
  assert_int_equal(o.sliding_window, 128);
  /* layer_types: the shortest repeating pattern; two sliding, one full over
   * Qwen3-8B's 36 layers */
  char lt[1024] = "[";
  for (int i = 0; i < 36; i++)
    strcat(lt, i % 3 == 2 ? "\"full_attention\"," : "\"sliding_attention\",");
  lt[strlen(lt) - 1] = ']';
  char *c1 = edited("qwen3-8b.json", "layer_types", lt);
  cJSON *r1 = cJSON_Parse(c1);
  free(c1);
  cJSON_DeleteItemFromObjectCaseSensitive(r1, "sliding_window");
  cJSON_AddItemToObject(r1, "sliding_window", cJSON_CreateNumber(4096));
  c1 = cJSON_PrintUnformatted(r1);
  cJSON_Delete(r1);
  parse_ok(c1, &q);
  assert_string_equal(q.window_pattern, "ssf");
  assert_int_equal(q.sliding_window, 4096);
  /* Qwen without layer_types: the layers from max_window_layers on */
  char *c2 = edited("qwen3-8b.json", "use_sliding_window", "true");
  cJSON *root = cJSON_Parse(c2);
  free(c2);
  cJSON_DeleteItemFromObjectCaseSensitive(root, "sliding_window");
  cJSON_AddItemToObject(root, "sliding_window", cJSON_CreateNumber(4096));
  cJSON_DeleteItemFromObjectCaseSensitive(root, "max_window_layers");
  cJSON_AddItemToObject(root, "max_window_layers", cJSON_CreateNumber(30));
  c2 = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  parse_ok(c2, &q);
  assert_int_equal((int)strlen(q.window_pattern), 36);
  assert_int_equal(wl_model_layer_window(&q, 29), 0);
  assert_int_equal(wl_model_layer_window(&q, 30), 4096);
  /* a layer_types entry that is neither kind: named */
  char *c3 = edited("qwen3-8b.json", "layer_types",
                    "[\"sliding_attention\",\"local\",\"full_attention\",\"full_attention\","
                    "\"full_attention\",\"full_attention\",\"full_attention\",\"full_attention\","
                    "\"full_attention\",\"full_attention\",\"full_attention\",\"full_attention\","
                    "\"full_attention\",\"full_attention\",\"full_attention\",\"full_attention\","
                    "\"full_attention\",\"full_attention\",\"full_attention\",\"full_attention\","
                    "\"full_attention\",\"full_attention\",\"full_attention\",\"full_attention\","
                    "\"full_attention\",\"full_attention\",\"full_attention\",\"full_attention\","
                    "\"full_attention\",\"full_attention\",\"full_attention\",\"full_attention\","
                    "\"full_attention\",\"full_attention\",\"full_attention\",\"full_attention\"]");
  expect_error(c3, "model 'c.json': layer_types[1]: expected \"full_attention\" or "
                   "\"sliding_attention\"");
  free(c3);
}

/* ---- the sequence ------------------------------------------------------------------ */
static void test_hf__sequence(void **state)
{
  (void)state;
  wl_model m, mi, g;
  wl_layout l;
  st_err err;
  st_err_clear(&err);
  load("llama-3.1-8b.json", &m);
  load("mistral-7b-v0.1.json", &mi);
  load("gpt2.json", &g);
  /* 4096 tokens as --seq sets them: tokens and attention follow; Megatron's
   * model FLOPs written out: per token 6 x linear weights (q, k, v, o, gate,
   * up, down per layer, the logits' 128256 x 4096) + 12 l s a d (attention,
   * no causal saving) */
  m.seq_len = 4096;
  wl_workload *wl = generate(&m, "tp=1,gbs=2", 1, &l);
  double W =
      32.0 * (4096.0 * (4096 + 2 * 1024) + 4096.0 * 4096 + 3.0 * 4096 * 14336) + 128256.0 * 4096;
  double tokens = 2.0 * 4096;
  assert_true(wl->meta.tokens_per_step == tokens);
  double want = tokens * (6 * W + 12.0 * 32 * 4096 * 32 * 128);
  if (fabs(wl->meta.model_flops_per_step - want) > 1e-12 * want) {
    print_error("model flops %.17g, want %.17g\n", wl->meta.model_flops_per_step, want);
    fail();
  }
  wl_workload_destroy(wl);
  /* beyond a sliding window: every Mistral layer keeps the band of 4096 keys
   * up to each query, 4096 x 8192 - 4096 x 4095 / 2 scores of 8192 (the
   * model FLOPs count twice the band, as they count the square for the
   * causal triangle); with context parallelism refused.  Beyond learned
   * positions: refused. */
  assert_int_equal(mi.seq_len, 8192);
  assert_string_equal(mi.window_pattern, "");
  wl = generate(&mi, "tp=1,gbs=1", 1, &l);
  const wl_program *pm = &wl->programs[0];
  double band = 4096.0 * 8192 - 4096.0 * 4095 / 2, n_attn = 0;
  for (size_t i = 0; i < pm->num_ops; i++)
    if (!strcmp(wl_op_name(pm, &pm->ops[i]), "attn")) {
      const wl_op *o = &pm->ops[i];
      assert_true(o->flags & WL_OPF_WINDOW);
      assert_int_equal(o->m, 8192);
      assert_int_equal(o->n, 4096);
      /* QK^T and AV, 2 x 128 FLOPs a score each, 32 heads */
      assert_true(fabs(o->flops - 32 * band * 4 * 128) <= 1e-12 * o->flops);
      n_attn++;
    }
  assert_true(n_attn == 32);
  double Wm =
      32.0 * (4096.0 * (4096 + 2 * 1024) + 4096.0 * 4096 + 3.0 * 4096 * 14336) + 32000.0 * 4096;
  want = 8192.0 * 6 * Wm + 3 * 2 * 32 * (32 * band * 4 * 128);
  if (fabs(wl->meta.model_flops_per_step - want) > 1e-12 * want) {
    print_error("windowed model flops %.17g, want %.17g\n", wl->meta.model_flops_per_step, want);
    fail();
  }
  wl_workload_destroy(wl);
  assert_int_equal(wl_layout_parse("tp=1,cp=2", 2, &mi, &l, &err), ST_EINPUT);
  assert_string_equal(err.msg, "layout 'tp=1,cp=2': cp (2) with the model's sliding attention "
                               "window (4096) shorter than seq_len (8192): context parallelism "
                               "over windowed layers is not modelled");
  g.seq_len = 2048;
  assert_int_equal(wl_layout_parse("tp=1", 1, &g, &l, &err), ST_EINPUT);
  assert_string_equal(err.msg,
                      "layout 'tp=1': seq_len (2048) exceeds the model's 1024 learned positions");
  /* a spec's GPT-style model has a position per token, whatever the sequence */
  wl_model s;
  assert_int_equal(wl_model_load("megatron-1.7b", &s, &err), 0);
  double p = wl_model_params(&s);
  s.seq_len *= 2;
  assert_int_equal(wl_layout_parse("tp=1", 1, &s, &l, &err), 0);
  assert_true(wl_model_params(&s) == p + 2048.0 * 2304);
}

/* ---- refusals ---------------------------------------------------------------------- */
static void test_hf__errors_name_the_key(void **state)
{
  (void)state;
  static const struct {
    const char *file, *key, *value, *want;
  } rows[] = {
      {"llama-3.1-8b.json", "architectures", "[\"FalconForCausalLM\"]",
       "model 'c.json': architecture 'FalconForCausalLM' is not supported (supported: "
       "LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM, Qwen2ForCausalLM, "
       "Qwen2MoeForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, DeepseekV2ForCausalLM, "
       "DeepseekV3ForCausalLM, GPT2LMHeadModel, GPTNeoXForCausalLM, GemmaForCausalLM, "
       "Gemma2ForCausalLM, GptOssForCausalLM)"},
      {"llama-3.1-8b.json", "architectures", "\"LlamaForCausalLM\"",
       "model 'c.json': 'architectures' is a string, expected an array of class names"},
      {"llama-3.1-8b.json", "model_type", "\"mistral\"",
       "model 'c.json': 'model_type' is 'mistral', but architecture 'LlamaForCausalLM' is "
       "'llama'"},
      {"llama-3.1-8b.json", "hidden_size", NULL,
       "model 'c.json': key 'hidden_size' is missing (LlamaForCausalLM needs it)"},
      {"llama-3.1-8b.json", "num_hidden_layers", "32.5",
       "model 'c.json': 'num_hidden_layers' is 32.5, expected an integer"},
      {"llama-3.1-8b.json", "num_key_value_heads", "5",
       "model 'c.json': key 'num_key_value_heads' (5) does not divide 'num_attention_heads' "
       "(32)"},
      {"llama-3.1-8b.json", "num_attention_heads", "0",
       "model 'c.json': 'num_attention_heads' is 0, outside 1..2147483647"},
      {"llama-3.1-8b.json", "tie_word_embeddings", "1",
       "model 'c.json': 'tie_word_embeddings' is a number, expected true or false"},
      {"llama-3.1-8b.json", "rope_scaling", "{\"original_max_position_embeddings\": \"8k\"}",
       "model 'c.json': rope_scaling: 'original_max_position_embeddings' is a string, expected "
       "an integer"},
      {"gpt2.json", "n_embd", "770",
       "model 'c.json': key 'n_head' (12) does not divide 'n_embd' (770)"},
      {"gpt2.json", "add_cross_attention", "true",
       "model 'c.json': 'add_cross_attention' is true: cross-attention is not modelled"},
      {"mixtral-8x7b-v0.1.json", "num_local_experts", NULL,
       "model 'c.json': key 'num_local_experts' is missing (MixtralForCausalLM needs it)"},
      {"mixtral-8x7b-v0.1.json", "num_experts_per_tok", "9",
       "model 'c.json': key 'num_experts_per_tok' (9) exceeds the 8 experts"},
      {"qwen3-30b-a3b.json", "decoder_sparse_step", "2",
       "model 'c.json': key 'decoder_sparse_step' is 2: MoE layers only every 2 layers are not "
       "modelled (only 1, every layer from the first sparse one)"},
      {"qwen3-30b-a3b.json", "mlp_only_layers", "[0, 5]",
       "model 'c.json': mlp_only_layers[1]: is 5, expected 1 (dense layers are modelled only as "
       "a leading block 0, 1, ..., k-1)"},
      {"qwen2-57b-a14b.json", "shared_expert_intermediate_size", "20000",
       "model 'c.json': key 'shared_expert_intermediate_size' (20000) is not a multiple of "
       "'moe_intermediate_size' (2560): the shared expert is modelled as whole experts"},
      {"qwen3-8b.json", "layer_types", "[\"full_attention\"]",
       "model 'c.json': 'layer_types' must be an array of 36 entries (one per layer)"},
      {"deepseek-v3.json", "q_lora_rank", NULL,
       "model 'c.json': key 'q_lora_rank' is missing (DeepseekV3ForCausalLM needs it)"},
      {"deepseek-v3.json", "attention_bias", "true",
       "model 'c.json': 'attention_bias' is true: biased MLA projections are not modelled "
       "(DeepSeek's are unbiased)"},
      {"deepseek-v3.json", "moe_layer_freq", "2",
       "model 'c.json': key 'moe_layer_freq' is 2: MoE layers only every 2 layers are not "
       "modelled (only 1, every layer from the first sparse one)"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char *json = edited(rows[i].file, rows[i].key, rows[i].value);
    expect_error(json, rows[i].want);
    free(json);
  }
  /* no architectures: model_type decides, and is refused by name too */
  expect_error("{\"model_type\": \"falcon\", \"hidden_size\": 64}",
               "model 'c.json': model_type 'falcon' is not supported (supported: llama, mistral, "
               "mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, deepseek_v2, deepseek_v3, gpt2, "
               "gpt_neox, gemma, gemma2, gpt_oss)");
  char *json = edited("llama-3.1-8b.json", "architectures", NULL);
  wl_model m;
  st_err err;
  st_err_clear(&err);
  assert_int_equal(wl_model_parse(json, "c.json", &m, &err), 0);
  assert_int_equal(m.hidden, 4096);
  free(json);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hf__params_match_the_published_counts),
      cmocka_unit_test(test_hf__each_architecture_maps_its_keys),
      cmocka_unit_test(test_hf__every_published_key_is_classified),
      cmocka_unit_test(test_hf__same_model_as_the_builtin_same_workload),
      cmocka_unit_test(test_hf__details_reach_the_step),
      cmocka_unit_test(test_hf__sliding_layers),
      cmocka_unit_test(test_hf__sequence),
      cmocka_unit_test(test_hf__errors_name_the_key),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
