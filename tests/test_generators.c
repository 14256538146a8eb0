/* test_generators.c — the workload generators against independent closed forms.
 *
 * Expected values come from formulas written here from their sources, never
 * from the code under test:
 *   - model FLOPs: Narayanan et al. SC'21 Eq. 3 (72 B s l h^2 (1 + s/6h + V/12lh),
 *     96 ... with full recomputation) and 6 x params x tokens + attention for
 *     GQA/SwiGLU/MoE shapes;
 *   - bytes per rank per step of each parallelism's communication
 *     (docs/workloads.md, "Communication per rank");
 *   - activation memory: Korthikanti et al. 2022, Table 2 and Sec. 4.2.3;
 *   - step time of 1F1B, GPipe and interleaved 1F1B with free communication:
 *     (m + p - 1)(t_f + t_b) and (m + (p - 1)/v)(t_f + t_b), on the engine.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "platform.h"
#include "sim.h"
#include "sim_fork.h"
#include "workload.h"
#include "wl_emit_int.h" /* R_TP */
#include "wl_gen_int.h" /* wl__schedule, wl__peak_alive */

/* GPT-style test model (gelu, biases, LayerNorm, tied embeddings). */
static const char GPT_T[] = "{\"name\":\"gpt-t\",\"layers\":8,\"hidden\":1024,\"heads\":16,"
                            "\"ffn_hidden\":4096,\"ffn_act\":\"gelu\",\"vocab\":32768,"
                            "\"seq_len\":1024,\"tie_embeddings\":true}";
/* MoE test model (swiglu, GQA, untied). */
static const char MOE_T[] = "{\"name\":\"moe-t\",\"layers\":4,\"hidden\":1024,\"heads\":16,"
                            "\"kv_heads\":4,\"ffn_hidden\":4096,\"ffn_act\":\"swiglu\","
                            "\"vocab\":32768,\"seq_len\":1024,\"tie_embeddings\":false,"
                            "\"moe\":{\"experts\":8,\"top_k\":2,\"expert_ffn_hidden\":1024}}";

static void check_rel(double got, double want, double tol, const char *what)
{
  double rel = fabs(got - want) / fabs(want);
  if (!(rel <= tol)) {
    print_error("%s: got %.9g, want %.9g (rel. error %.3g > %.3g)\n", what, got, want, rel, tol);
    fail();
  }
}

static void model_of(const char *json_or_name, wl_model *m)
{
  st_err err;
  st_err_clear(&err);
  int rc = json_or_name[0] == '{' ? wl_model_parse(json_or_name, "inline", m, &err)
                                  : wl_model_load(json_or_name, m, &err);
  if (rc) {
    print_error("model: %s\n", err.msg);
    fail();
  }
}

static wl_workload *gen(const wl_model *m, const char *spec, int gpus, wl_layout *lo)
{
  st_err err;
  st_err_clear(&err);
  wl_layout l;
  wl_workload *wl = NULL;
  if (wl_layout_parse(spec, gpus, m, &l, &err) || wl_generate(m, &l, &wl, &err)) {
    print_error("%s / %s: %s\n", m->name, spec, err.msg);
    fail();
  }
  if (lo)
    *lo = l;
  return wl;
}

/* Bytes of one rank's program on communicators of a kind: collectives
 * (op -1: any) or sends. */
static double rank_bytes(const wl_workload *wl, int rank, int comm_kind, int opkind, int coll)
{
  const wl_program *p = &wl->programs[wl->rank_program[rank]];
  double sum = 0;
  for (size_t i = 0; i < p->num_ops; i++) {
    const wl_op *o = &p->ops[i];
    if (o->kind != opkind || (coll >= 0 && o->sub != coll))
      continue;
    int c = wl_rank_comm(wl, rank, o->role);
    if (c >= 0 && wl->comms[c].kind == comm_kind)
      sum += o->bytes;
  }
  return sum;
}

static int count_colls(const wl_workload *wl, int rank, const char *name, int coll);

static int count_ops(const wl_workload *wl, int rank, const char *name)
{
  const wl_program *p = &wl->programs[wl->rank_program[rank]];
  int n = 0;
  for (size_t i = 0; i < p->num_ops; i++)
    if (!strcmp(wl_op_name(p, &p->ops[i]), name))
      n++;
  return n;
}

static double named_bytes(const wl_workload *wl, int rank, const char *name)
{
  const wl_program *p = &wl->programs[wl->rank_program[rank]];
  double sum = 0;
  for (size_t i = 0; i < p->num_ops; i++)
    if (!strcmp(wl_op_name(p, &p->ops[i]), name))
      sum += p->ops[i].bytes;
  return sum;
}

/* Sum over all ranks of the FLOPs of compute ops of a class. */
static double job_flops(const wl_workload *wl, int cls)
{
  double sum = 0;
  for (int r = 0; r < wl->num_ranks; r++) {
    const wl_program *p = &wl->programs[wl->rank_program[r]];
    for (size_t i = 0; i < p->num_ops; i++)
      if (p->ops[i].kind == WL_OP_COMPUTE && p->ops[i].sub == cls)
        sum += p->ops[i].flops;
  }
  return sum;
}

/* ---- model and layout specs ------------------------------------------------ */
static void test_model__builtins_load_with_their_dims(void **state)
{
  (void)state;
  int n = 0;
  for (const char *const *nm = wl_model_names(); *nm; nm++, n++) {
    wl_model m;
    model_of(*nm, &m);
    assert_string_equal(m.name, *nm);
  }
  assert_true(n >= 16);
  static const struct {
    const char *name;
    int layers, hidden, heads, kv, ffn;
  } want[] = {{"gpt3-175b", 96, 12288, 96, 96, 49152},   {"llama3-8b", 32, 4096, 32, 8, 14336},
              {"llama3-70b", 80, 8192, 64, 8, 28672},    {"llama3-405b", 126, 16384, 128, 8, 53248},
              {"megatron-1.7b", 24, 2304, 24, 24, 9216}, {"megatron-1t", 128, 25600, 160, 160, 102400},
              {"megatron-530b", 105, 20480, 128, 128, 81920}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    wl_model m;
    model_of(want[i].name, &m);
    assert_int_equal(m.layers, want[i].layers);
    assert_int_equal(m.hidden, want[i].hidden);
    assert_int_equal(m.heads, want[i].heads);
    assert_int_equal(m.kv_heads, want[i].kv);
    assert_int_equal(m.ffn_hidden, want[i].ffn);
  }
  wl_model d;
  model_of("deepseek-v3", &d);
  assert_true(d.has_moe && d.has_mla);
  assert_int_equal(d.moe.experts, 256);
  assert_int_equal(d.moe.top_k, 8);
  assert_int_equal(d.moe.dense_layers, 3);
  /* total parameters of the published sizes (MoE: all experts) */
  wl_model l8;
  model_of("llama3-8b", &l8);
  check_rel(wl_model_params(&l8), 8.03e9, 0.01, "llama3-8b params");
  wl_model l405;
  model_of("llama3-405b", &l405);
  check_rel(wl_model_params(&l405), 405.8e9, 0.01, "llama3-405b params");
  wl_model mx;
  model_of("mixtral-8x7b", &mx);
  check_rel(wl_model_params(&mx), 46.7e9, 0.01, "mixtral params");
  check_rel(wl_model_params(&d), 671e9, 0.01, "deepseek-v3 params");
}

/* MLA sizes multiply in doubles: kv_lora_rank x heads = 65536 x 65536 = 2^32
 * overflowed an int (undefined; found by the model fuzz target).  With
 * hidden 64, qk_nope = qk_rope = v_head_dim = 1 and one layer, the
 * attention's up-projection of the latent alone is kv_lora_rank x heads x
 * (qk_nope + v_head_dim) = 2^32 x 2 = 8,589,934,592 parameters, so the
 * model has at least that many (the wrapped product gave about 1.7e7). */
static void test_model__mla_sizes_multiply_in_doubles(void **state)
{
  (void)state;
  wl_model m;
  st_err err;
  const char *spec =
      "{\"name\":\"wide-mla\",\"layers\":1,\"hidden\":64,\"heads\":65536,\"ffn_hidden\":64,"
      "\"ffn_act\":\"gelu\",\"vocab\":128,\"seq_len\":128,\"tie_embeddings\":true,"
      "\"mla\":{\"q_lora_rank\":0,\"kv_lora_rank\":65536,\"qk_nope_head_dim\":1,"
      "\"qk_rope_head_dim\":1,\"v_head_dim\":1}}";
  assert_int_equal(wl_model_parse(spec, "inline", &m, &err), 0);
  double p = wl_model_params(&m);
  assert_true(isfinite(p));
  assert_true(p >= 8589934592.0);
}

static void test_model__errors_name_the_key(void **state)
{
  (void)state;
  static const struct {
    const char *json, *msg;
  } cases[] = {
      {"{\"name\":\"x\",\"layers\":2,\"hidden\":1024,\"heads\":16,\"ffn_hidden\":4096,"
       "\"ffn_act\":\"gelu\",\"vocab\":100,\"seq_len\":128,\"tie_embeddings\":true,\"foo\":1}",
       "model 'inline': key 'foo' is unknown"},
      {"{\"name\":\"x\",\"layers\":2,\"hidden\":1024,\"heads\":7,\"ffn_hidden\":4096,"
       "\"ffn_act\":\"gelu\",\"vocab\":100,\"seq_len\":128,\"tie_embeddings\":true}",
       "model 'inline': key 'heads' (7) does not divide 'hidden' (1024)"},
      {"{\"name\":\"x\",\"layers\":2,\"hidden\":1024,\"heads\":16,\"kv_heads\":3,"
       "\"ffn_hidden\":4096,\"ffn_act\":\"gelu\",\"vocab\":100,\"seq_len\":128,"
       "\"tie_embeddings\":true}",
       "model 'inline': key 'kv_heads' (3) does not divide 'heads' (16)"},
      {"{\"name\":\"x\",\"layers\":2,\"hidden\":1024,\"heads\":16,\"ffn_hidden\":4096,"
       "\"ffn_act\":\"gelu\",\"seq_len\":128,\"tie_embeddings\":true}",
       "model 'inline': key 'vocab' is missing"},
      {"{\"name\":\"x\",\"layers\":2,\"hidden\":1024,\"heads\":16,\"ffn_hidden\":4096,"
       "\"ffn_act\":\"relu\",\"vocab\":100,\"seq_len\":128,\"tie_embeddings\":true}",
       "model 'inline': 'ffn_act' is 'relu', expected one of gelu, swiglu"},
      {"{\"name\":\"x\",\"layers\":2,\"hidden\":1024,\"heads\":16,\"ffn_hidden\":4096,"
       "\"ffn_act\":\"gelu\",\"vocab\":100,\"seq_len\":128,\"tie_embeddings\":true,"
       "\"moe\":{\"experts\":8,\"top_k\":2,\"bar\":1}}",
       "model 'inline': moe: key 'bar' is unknown"},
      {"{\"name\":\"x\",\"layers\":2,\"hidden\":1024,\"heads\":16,\"ffn_hidden\":4096,"
       "\"ffn_act\":\"gelu\",\"vocab\":100,\"seq_len\":128,\"tie_embeddings\":true,"
       "\"moe\":{\"experts\":4,\"top_k\":8}}",
       "model 'inline': key 'moe.top_k' (8) exceeds 'moe.experts' (4)"},
      {"{\"name\":\"x\",\"layers\":-2,\"hidden\":1024,\"heads\":16,\"ffn_hidden\":4096,"
       "\"ffn_act\":\"gelu\",\"vocab\":100,\"seq_len\":128,\"tie_embeddings\":true}",
       "model 'inline': 'layers' is -2, outside 1..65536"},
      {"{\"name\":\"x\",\"layers\":2,\"hidden\":1024,\"heads\":16,\"ffn_hidden\":4096,"
       "\"ffn_act\":\"gelu\",\"vocab\":100,\"seq_len\":128,\"tie_embeddings\":1}",
       "model 'inline': 'tie_embeddings' is a number, expected true or false"},
      {"{\"name\":\"x\",\"layers\":2.5}", "model 'inline': 'layers' is 2.5, expected an integer"},
      {"{\"name\":7}", "model 'inline': 'name' is a number, expected a string"},
      {"{\"name\":\"x\",\"name\":\"y\"}", "model 'inline': key 'name' appears twice"},
      {"[1]", "model 'inline': the document is an array, expected an object"},
      {"{\"name\":\"x\",\n \"layers\": }",
       "model 'inline': JSON syntax error near line 2, column 12"},
      {"{\"name\":\"x\",\"layers\":2,\"hidden\":1024,\"heads\":16,\"ffn_hidden\":4096,"
       "\"ffn_act\":\"gelu\",\"vocab\":100,\"seq_len\":128,\"tie_embeddings\":true,"
       "\"moe\":{\"experts\":8,\"top_k\":2,\"capacity_factor\":-1}}",
       "model 'inline': moe: 'capacity_factor' is negative"},
      {"{\"name\":\"x\",\"layers\":2,\"hidden\":1024,\"heads\":16,\"ffn_hidden\":4096,"
       "\"ffn_act\":\"gelu\",\"vocab\":100,\"seq_len\":128,\"tie_embeddings\":true,"
       "\"mla\":[]}",
       "model 'inline': mla: is an array, expected an object"},
      {"{\"name\":\"x\",\"layers\":2,\"hidden\":1024,\"heads\":16,\"ffn_hidden\":4096,"
       "\"ffn_act\":\"gelu\",\"vocab\":100,\"seq_len\":128,\"tie_embeddings\":true,"
       "\"sliding_window\":64,\"window_pattern\":\"sfx\"}",
       "model 'inline': window_pattern: 'x' at 2: expected 's' (a sliding layer) or 'f' (full)"},
      {"{\"name\":\"x\",\"layers\":2,\"hidden\":1024,\"heads\":16,\"ffn_hidden\":4096,"
       "\"ffn_act\":\"gelu\",\"vocab\":100,\"seq_len\":128,\"tie_embeddings\":true,"
       "\"sliding_window\":64,\"window_pattern\":\"ff\"}",
       "model 'inline': window_pattern: no 's': a pattern names the sliding layers (2 "
       "characters, at most 64)"},
      {"{\"name\":\"x\",\"layers\":2,\"hidden\":1024,\"heads\":16,\"ffn_hidden\":4096,"
       "\"ffn_act\":\"gelu\",\"vocab\":100,\"seq_len\":128,\"tie_embeddings\":true,"
       "\"sliding_window\":64,\"window_pattern\":\"\"}",
       "model 'inline': window_pattern: 0 characters: expected 1 to 64, one per layer, repeated"},
      {"{\"name\":\"x\",\"layers\":2,\"hidden\":1024,\"heads\":16,\"ffn_hidden\":4096,"
       "\"ffn_act\":\"gelu\",\"vocab\":100,\"seq_len\":128,\"tie_embeddings\":true,"
       "\"window_pattern\":\"sf\"}",
       "model 'inline': window_pattern: needs 'sliding_window', the sliding layers' window"},
      {"{\"name\":\"x\",\"layers\":2,\"hidden\":1024,\"heads\":16,\"ffn_hidden\":4096,"
       "\"ffn_act\":\"gelu\",\"vocab\":100,\"seq_len\":128,\"tie_embeddings\":true,"
       "\"sliding_window\":0}",
       "model 'inline': 'sliding_window' is 0, outside 1..2147483647"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_model m;
    st_err err;
    st_err_clear(&err);
    assert_int_equal(wl_model_parse(cases[i].json, "inline", &m, &err), ST_EINPUT);
    assert_string_equal(err.msg, cases[i].msg);
  }
  wl_model m;
  st_err err;
  assert_int_equal(wl_model_load("gpt-9", &m, &err), ST_EINPUT);
  assert_true(strstr(err.msg, "model 'gpt-9': no such built-in model") == err.msg);
}

static void test_layout__inconsistencies_name_the_numbers(void **state)
{
  (void)state;
  wl_model g, x;
  model_of(GPT_T, &g);
  model_of(MOE_T, &x);
  static const struct {
    int moe;
    const char *spec;
    int gpus;
    const char *msg;
  } cases[] = {
      {0, "tp=2,pp=2,dp=3", 8, "layout 'tp=2,pp=2,dp=3': tp*pp*dp*cp = 2*2*3*1 = 12, but there are 8 GPUs"},
      {0, "tp=3", 8, "layout 'tp=3': 8 GPUs are not divisible by tp*pp*cp = 3*1*1 = 3"},
      {0, "pp=3", 3,
       "layout 'pp=3': layers (8) not divisible by pp*vpp = 3*1 = 3 (first_stage_layers and "
       "last_stage_layers, account_embedding and account_loss, or pp_layout give other splits)"},
      {0, "pp=2,vpp=8,gbs=2", 2, "layout 'pp=2,vpp=8,gbs=2': layers (8) not divisible by pp*vpp = 2*8 = 16 (first_stage_layers and last_stage_layers, account_embedding and account_loss, or pp_layout give other splits)"},
      {0, "tp=32", 32, "layout 'tp=32': heads (16) not divisible by tp (32)"},
      {1, "tp=8", 8, "layout 'tp=8': kv_heads (4) not divisible by tp (8)"},
      {0, "gbs=3,mbs=1", 2, "layout 'gbs=3,mbs=1': gbs (3) not divisible by mbs*dp = 1*2 = 2"},
      {0, "ep=2", 2, "layout 'ep=2': ep (2) needs a model with 'moe'"},
      {1, "ep=3", 4,
       "layout 'ep=3': etp*ep = 1*3 = 3 does not divide tp*cp*dp = 1*1*4 = 4 (the "
       "expert-parallel group is drawn from the TP x CP x DP ranks of a stage)"},
      {1, "ep=16", 16, "layout 'ep=16': moe.experts (8) not divisible by ep (16)"},
      {1, "moe_dispatcher=flex", 2,
       "layout 'moe_dispatcher=flex': moe_dispatcher=flex is Megatron-core's dispatcher over an "
       "expert-parallel group: it needs ep > 1 and dp_impl=megatron (ep is 1, dp_impl megatron)"},
      {1, "tp=2,sp=1,ep=2,moe_dispatcher=flex", 4,
       "layout 'tp=2,sp=1,ep=2,moe_dispatcher=flex': moe_dispatcher=flex with etp (2) > 1: the "
       "flex dispatcher's TP x EP group is not modelled (etp=1 only)"},
      {1, "ep=2,recompute=full,recompute_modules=moe_act", 2,
       "layout 'ep=2,recompute=full,recompute_modules=moe_act': recompute_modules is "
       "Megatron-core's selective recomputation: it needs recompute=selective (recompute is "
       "full)"},
      {1, "ep=2,recompute_modules=moe_act+attn", 2,
       "layout 'ep=2,recompute_modules=moe_act+attn': key 'recompute_modules' module 'attn' is "
       "unknown (known, joined by '+': core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, "
       "shared_experts)"},
      {1, "ep=2,recompute_modules=mla_up_proj", 2,
       "layout 'ep=2,recompute_modules=mla_up_proj': recompute_modules: mla_up_proj needs a "
       "model with 'mla' (multi-latent attention)"},
      {1, "ep=2,dtype=fp8,recompute_modules=layernorm", 2,
       "layout 'ep=2,dtype=fp8,recompute_modules=layernorm': recompute_modules: moe_act and "
       "layernorm under fp8 need fp8_recipe=current (Megatron-core refuses them with delayed "
       "scaling)"},
      {0, "dp=2,gbs=2,zero=3,dp_impl=fsdp,recompute_modules=mlp", 2,
       "layout 'dp=2,gbs=2,zero=3,dp_impl=fsdp,recompute_modules=mlp': recompute_modules is "
       "Megatron-core's (dp_impl=megatron); dp_impl is fsdp"},
      {1, "ep=2,moe_dispatcher=allgather", 2,
       "layout 'ep=2,moe_dispatcher=allgather': key 'moe_dispatcher' value 'allgather' is unknown "
       "(known: alltoall, flex; Megatron-core's allgather dispatcher is not modelled)"},
      {1, "tp=2,sp=0", 2, "layout 'tp=2,sp=0': a MoE model with tp (2) > 1 needs sp=1 (as Megatron-LM requires)"},
      {0, "pp=2,vpp=2", 2,
       "layout 'pp=2,vpp=2': schedule 'interleaved': micro-batches gbs/(mbs*dp) = 1 not "
       "divisible by pp (2)"},
      {0, "pp=2,schedule=interleaved", 2,
       "layout 'pp=2,schedule=interleaved': schedule 'interleaved' needs vpp > 1 (vpp is 1)"},
      {0, "zero=3,pp=2", 2,
       "layout 'zero=3,pp=2': zero=3 with pp (2) > 1 runs only under dp_impl=fsdp2 "
       "(torch.distributed.pipelining with fully_shard, as torchtitan runs it); dp_impl is "
       "megatron (Megatron's FSDP does not run under a pipeline schedule)"},
      {0, "cp=3", 3, "layout 'cp=3': seq_len (1024) not divisible by 2*cp = 6 (context parallelism splits it into 2*cp chunks)"},
      {0, "zero=4", 1, "layout 'zero=4': key 'zero' is 4 (must be 0, 1, 2 or 3)"},
      {0, "tp=x", 1, "layout 'tp=x': key 'tp' value 'x' is not a non-negative integer"},
      {0, "recompute=some", 1, "layout 'recompute=some': key 'recompute' value 'some' is unknown (known: none, selective, full, op)"},
      {0, "eager=2", 1, "layout 'eager=2': key 'eager' is 2 (must be 0 or 1)"},
      {0, "dp_impl=fsdp2,zero=3,backward_prefetch=post", 2,
       "layout 'dp_impl=fsdp2,zero=3,backward_prefetch=post': backward_prefetch is PyTorch "
       "FSDP1's (dp_impl=fsdp); dp_impl is fsdp2"},
      {0, "dp=2,optim_impl=foreach", 2,
       "layout 'dp=2,optim_impl=foreach': optim_impl=foreach is torch.optim.AdamW's "
       "(dp_impl=fsdp or fsdp2); dp_impl megatron runs a fused Adam"},
      {0, "dp_impl=deepspeed,zero=3,optim_impl=loop", 2,
       "layout 'dp_impl=deepspeed,zero=3,optim_impl=loop': optim_impl=loop is torch.optim.AdamW's "
       "(dp_impl=fsdp or fsdp2); dp_impl deepspeed runs a fused Adam"},
      {0, "dp_impl=fsdp,zero=3,optim_impl=sgd", 2,
       "layout 'dp_impl=fsdp,zero=3,optim_impl=sgd': key 'optim_impl' value 'sgd' is unknown "
       "(known: fused, foreach, loop)"},
      {0, "grad_clip=2", 2, "layout 'grad_clip=2': key 'grad_clip' is 2 (must be 0 or 1)"},
      {0, "recompute=selective,recompute_layers=2", 1,
       "layout 'recompute=selective,recompute_layers=2': recompute_layers (2) recomputes whole "
       "layers: it needs recompute=full (recompute is selective)"},
      {0, "dp_impl=fsdp,zero=3,backward_prefetch=early", 2,
       "layout 'dp_impl=fsdp,zero=3,backward_prefetch=early': key 'backward_prefetch' value "
       "'early' is unknown (known: pre, post, none)"},
      {0, "cp=2,flash=0", 2,
       "layout 'cp=2,flash=0': cp (2) > 1 needs flash=1 (context parallelism runs only in "
       "fused attention: Megatron-core's unfused DotProductAttention refuses it)"},
      {0, "cp=2,attn_impl=fa1", 2,
       "layout 'cp=2,attn_impl=fa1': cp (2) > 1 with attn_impl=fa1: FlashAttention-1's kernels "
       "have no context-parallel path (Transformer Engine's needs FlashAttention-2 or later, or "
       "cuDNN)"},
      {0, "attn_impl=fa1,flash=0", 1,
       "layout 'attn_impl=fa1,flash=0': attn_impl=fa1 names a fused attention kernel, but "
       "flash=0 runs attention unfused"},
      {0, "tp=2,sp=1,tp_overlap=1,recompute=op", 2,
       "layout 'tp=2,sp=1,tp_overlap=1,recompute=op': recompute=op (torchtitan's) with "
       "tp_overlap=1 under dp_impl=megatron is not a combination either framework runs "
       "(torchtitan's AsyncTP is tp_overlap=1 under dp_impl=fsdp2)"},
      {0, "pp=3,first_stage_layers=3", 3,
       "layout 'pp=3,first_stage_layers=3': layers (8) minus first_stage_layers (3) and "
       "last_stage_layers (0) = 5 not divisible into the 2 other stages"},
      {0, "bucket=10M", 1, "layout 'bucket=10M': bucket has no effect without overlap_grad_reduce=1 and zero < 3 (the whole gradient buffer is reduced at once)"},
      {0, "dp_impl=fsdp,zero=3,dp=2,grad_nan_check=0", 2,
       "layout 'dp_impl=fsdp,zero=3,dp=2,grad_nan_check=0': grad_nan_check is Megatron's "
       "DDP's (dp_impl=megatron, zero < 3); dp_impl is fsdp, zero 3"},
      {0, "zero=3,dp=2,grad_scale_pass=1", 2,
       "layout 'zero=3,dp=2,grad_scale_pass=1': grad_scale_pass is Megatron's DDP's "
       "(dp_impl=megatron, zero < 3); dp_impl is megatron, zero 3"},
      {0, "foo=1", 1,
       "layout 'foo=1': key 'foo' is unknown (known: tp, pp, dp, cp, ep, vpp, sp, mbs, gbs, "
       "zero, recompute, schedule, dtype, grad_dtype, overlap_grad_reduce, "
       "overlap_param_gather, bucket, flash, first_stage_layers, last_stage_layers, "
       "tp_overlap, etp, account_embedding, account_loss, pp_layout, dp_impl, stage_layers, "
       "dp_microbatches, balance, offload, attn_impl, eager, backward_prefetch, tp_async, "
       "pp_scatter, dropout, ce_fusion, fp8_recipe, fp8_param_gather, moe_dispatcher, "
       "recompute_modules, moe_a2a_overlap, moe_shared_expert_overlap, optim_impl, grad_clip, "
       "recompute_layers, recompute_early_stop, train_metrics, reshard_after_forward, "
       "grad_nan_check, grad_scale_pass)"},
      {0, "dp_impl=fsdp,zero=3,dp=2,recompute=selective,recompute_early_stop=1", 2,
       "layout 'dp_impl=fsdp,zero=3,dp=2,recompute=selective,recompute_early_stop=1': "
       "recompute_early_stop=1 stops a whole layer's recomputation early: it needs "
       "recompute=full (recompute is selective)"},
      {0, "recompute=full,recompute_early_stop=1", 1,
       "layout 'recompute=full,recompute_early_stop=1': recompute_early_stop=1 is PyTorch's "
       "non-reentrant checkpoint; Megatron's (dp_impl=megatron) re-runs the whole layer"},
      {0, "recompute=full,recompute_early_stop=2", 1,
       "layout 'recompute=full,recompute_early_stop=2': key 'recompute_early_stop' is 2 (must "
       "be 0 or 1)"},
      {1, "pp=2,ep=2,gbs=4,moe_a2a_overlap=1", 4,
       "layout 'pp=2,ep=2,gbs=4,moe_a2a_overlap=1': moe_a2a_overlap with pp (2) > 1 needs the "
       "interleaved schedule (vpp > 1), as Megatron-core requires"},
      {1, "ep=2,gbs=2,recompute=full,moe_a2a_overlap=1", 2,
       "layout 'ep=2,gbs=2,recompute=full,moe_a2a_overlap=1': moe_a2a_overlap with "
       "recompute=full: Megatron-core refuses full recomputation and the moe module's"},
      {1, "ep=2,moe_shared_expert_overlap=1", 2,
       "layout 'ep=2,moe_shared_expert_overlap=1': moe_shared_expert_overlap is Megatron-core's "
       "overlap of the shared experts with the token dispatcher's all-to-alls: it needs a MoE "
       "model with shared experts and dp_impl=megatron (0 shared experts, dp_impl megatron)"},
      {0, "moe_a2a_overlap=1", 1,
       "layout 'moe_a2a_overlap=1': moe_a2a_overlap is Megatron-core's overlap of the expert "
       "all-to-alls: it needs a MoE model, ep > 1 and dp_impl=megatron (ep is 1, dp_impl "
       "megatron)"},
      {0, "dropout=1", 1, "layout 'dropout=1': key 'dropout' value '1' is not a probability in [0, 1)"},
      {0, "dropout=0.1x", 1,
       "layout 'dropout=0.1x': key 'dropout' value '0.1x' is not a probability in [0, 1)"},
      {0, "dropout=", 1, "layout 'dropout=': key 'dropout' value '' is not a probability in [0, 1)"},
      {0, "attn_impl=xformers", 1,
       "layout 'attn_impl=xformers': key 'attn_impl' value 'xformers' is unknown (known: "
       "default, cudnn, fa2, fa3, triton, fa1)"},
      {0, "dp_impl=fsdp,zero=1", 2,
       "layout 'dp_impl=fsdp,zero=1': dp_impl=fsdp needs zero=3 (parameters, gradients and "
       "optimizer state sharded, FULL_SHARD); zero is 1 (its other sharding strategies are not "
       "modelled: use dp_impl=megatron)"},
      {0, "dp_impl=deepspeed", 2,
       "layout 'dp_impl=deepspeed': dp_impl=deepspeed needs zero=3 (ZeRO stage 3); zero is 0 "
       "(its other sharding strategies are not modelled: use dp_impl=megatron)"},
      {0, "dp_impl=fsdp2,zero=3,overlap_grad_reduce=1", 2,
       "layout 'dp_impl=fsdp2,zero=3,overlap_grad_reduce=1': dp_impl=fsdp2: overlap_grad_reduce "
       "and bucket are Megatron-LM's keys (fsdp2 overlaps and buckets its own way, "
       "docs/workloads.md)"},
      {0, "dp_impl=fsdp,zero=3,pp=2", 2,
       "layout 'dp_impl=fsdp,zero=3,pp=2': zero=3 with pp (2) > 1 runs only under "
       "dp_impl=fsdp2 (torch.distributed.pipelining with fully_shard, as torchtitan runs it); "
       "dp_impl is fsdp (FSDP1 does not run under a pipeline schedule)"},
      {0, "dp_impl=fsdp,zero=3,dp=2,reshard_after_forward=0", 2,
       "layout 'dp_impl=fsdp,zero=3,dp=2,reshard_after_forward=0': reshard_after_forward is "
       "FSDP2's (dp_impl=fsdp2); dp_impl is fsdp"},
      {0, "dp_impl=fsdp2,zero=3,pp=2,reshard_after_forward=1", 2,
       "layout 'dp_impl=fsdp2,zero=3,pp=2,reshard_after_forward=1': reshard_after_forward=1 with "
       "pp (2) > 1 is not modelled (torchtitan keeps a stage's parameters gathered under a "
       "pipeline: reshard_after_forward=0)"},
      {0, "dp_impl=deepspeed,zero=3,pp=2", 2,
       "layout 'dp_impl=deepspeed,zero=3,pp=2': zero=3 with pp (2) > 1 runs only under "
       "dp_impl=fsdp2 (torch.distributed.pipelining with fully_shard, as torchtitan runs it); "
       "dp_impl is deepspeed (DeepSpeed's pipeline engine refuses ZeRO stage 3)"},
      {0, "dp_impl=zero3", 1,
       "layout 'dp_impl=zero3': key 'dp_impl' value 'zero3' is unknown (known: megatron, "
       "fsdp, fsdp2, deepspeed)"},
      {0, "tp=2,tp_overlap=1", 2,
       "layout 'tp=2,tp_overlap=1': tp_overlap=1 needs sp=1 and tp > 1 (Megatron-LM's "
       "--tp-comm-overlap overlaps the sequence-parallel all-gathers and reduce-scatters); sp "
       "is 0, tp is 2"},
      {0, "tp_overlap=1", 1,
       "layout 'tp_overlap=1': tp_overlap=1 needs sp=1 and tp > 1 (Megatron-LM's "
       "--tp-comm-overlap overlaps the sequence-parallel all-gathers and reduce-scatters); sp "
       "is 0, tp is 1"},
      {0, "tp=2,sp=1,tp_overlap=2", 2,
       "layout 'tp=2,sp=1,tp_overlap=2': key 'tp_overlap' is 2 (must be 0 or 1)"},
      {0, "tp=2,sp=1,tp_async=0", 2,
       "layout 'tp=2,sp=1,tp_async=0': tp_async=0 needs sp=0 (Megatron-LM's sequence "
       "parallelism always overlaps its backward all-gather and reduce-scatter with the weight "
       "gradients)"},
      {0, "tp_async=2", 1, "layout 'tp_async=2': key 'tp_async' is 2 (must be 0 or 1)"},
      {0, "tp=2,pp=2,sp=1,pp_scatter=1", 4,
       "layout 'tp=2,pp=2,sp=1,pp_scatter=1': pp_scatter=1 needs sp=0 (under sequence "
       "parallelism the pipeline's tensors are already split across the TP group)"},
      {0, "pp_scatter=2", 1, "layout 'pp_scatter=2': key 'pp_scatter' is 2 (must be 0 or 1)"},
      /* uneven splits (gpt-t: 8 layers) */
      {0, "pp=2,stage_layers=3/4", 2,
       "layout 'pp=2,stage_layers=3/4': stage_layers '3/4' sums to 7 layers, the model has 8"},
      {0, "pp=2,stage_layers=2/3/3", 2,
       "layout 'pp=2,stage_layers=2/3/3': stage_layers '2/3/3' has 3 stages, pp is 2"},
      {0, "pp=2,stage_layers=2/x", 2,
       "layout 'pp=2,stage_layers=2/x': stage_layers '2/x' item 2 ('x') is not a positive "
       "integer"},
      {0, "pp=2,stage_layers=3/5,first_stage_layers=3", 2,
       "layout 'pp=2,stage_layers=3/5,first_stage_layers=3': stage_layers cannot be combined "
       "with pp_layout, first_stage_layers, last_stage_layers, account_embedding or account_loss "
       "(it gives every stage's layers)"},
      {0, "dp=4,gbs=12,dp_microbatches=4*2/2", 4,
       "layout 'dp=4,gbs=12,dp_microbatches=4*2/2': dp_microbatches '4*2/2' covers 3 replicas, "
       "dp is 4"},
      {0, "dp=2,gbs=12,dp_microbatches=8/2", 2,
       "layout 'dp=2,gbs=12,dp_microbatches=8/2': dp_microbatches '8/2' gives 10 micro-batches "
       "of mbs 1 = 10 samples, gbs is 12"},
      {0, "dp=2,gbs=12,zero=3,dp_microbatches=8/4", 2,
       "layout 'dp=2,gbs=12,zero=3,dp_microbatches=8/4': dp_microbatches '8/4' cannot go with "
       "zero=3: parameters are gathered across the data-parallel group every micro-batch, so "
       "every replica runs as many"},
      {0, "balance=speed", 1,
       "layout 'balance=speed': key 'balance' value 'speed' is unknown (known: compute, time, none)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_layout l;
    st_err err;
    st_err_clear(&err);
    int rc = wl_layout_parse(cases[i].spec, cases[i].gpus, cases[i].moe ? &x : &g, &l, &err);
    if (rc != ST_EINPUT || strcmp(err.msg, cases[i].msg)) {
      print_error("case %zu '%s': rc %d, message\n  got:  %s\n  want: %s\n", i, cases[i].spec,
                  rc, err.msg, cases[i].msg);
      fail();
    }
  }
}

static void test_layout__defaults_and_canonical_spec(void **state)
{
  (void)state;
  wl_model m;
  model_of("llama3-405b", &m);
  wl_layout l;
  st_err err;
  assert_int_equal(wl_layout_parse("tp=8,pp=16,mbs=1,gbs=2048,first_stage_layers=7,"
                                   "last_stage_layers=7",
                                   16384, &m, &l, &err),
                   0);
  assert_int_equal(l.dp, 128);
  assert_int_equal(l.num_microbatches, 16);
  assert_int_equal(wl_layout_stage_layers(&l, &m, 0), 7);
  assert_int_equal(wl_layout_stage_layers(&l, &m, 1), 8);
  assert_int_equal(wl_layout_stage_layers(&l, &m, 15), 7);
  assert_int_equal(l.grad_dtype, WL_DTYPE_FP32);
  assert_string_equal(l.spec,
                      "tp=8,pp=16,dp=128,cp=1,ep=1,vpp=1,sp=0,mbs=1,gbs=2048,zero=0,"
                      "recompute=none,schedule=1f1b,dtype=bf16,grad_dtype=fp32,"
                      "overlap_grad_reduce=0,overlap_param_gather=0,flash=1,"
                      "first_stage_layers=7,last_stage_layers=7");
  /* the canonical spec parses to the same layout */
  wl_layout l2;
  assert_int_equal(wl_layout_parse(l.spec, 16384, &m, &l2, &err), 0);
  assert_string_equal(l2.spec, l.spec);
  /* Megatron's bucket default: max(40M, 1M x dp) parameters */
  assert_int_equal(wl_layout_parse("tp=8,pp=2,overlap_grad_reduce=1", 1024, &m, &l, &err), 0);
  assert_true(l.bucket_params == 64e6);
  /* tp_overlap shows in the canonical spec only when set */
  assert_int_equal(wl_layout_parse("tp=8,sp=1,tp_overlap=1", 8, &m, &l, &err), 0);
  assert_int_equal(l.tp_overlap, 1);
  assert_string_equal(l.spec, "tp=8,pp=1,dp=1,cp=1,ep=1,vpp=1,sp=1,mbs=1,gbs=1,zero=0,"
                              "recompute=none,schedule=1f1b,dtype=bf16,grad_dtype=fp32,"
                              "overlap_grad_reduce=0,overlap_param_gather=0,flash=1,"
                              "tp_overlap=1");
  assert_int_equal(wl_layout_parse(l.spec, 8, &m, &l2, &err), 0);
  assert_string_equal(l2.spec, l.spec);
  assert_int_equal(wl_layout_parse("tp=8,sp=1,tp_overlap=0", 8, &m, &l, &err), 0);
  assert_int_equal(l.tp_overlap, 0);
  assert_null(strstr(l.spec, "tp_overlap"));
}

/* The attention library (attn_impl): Megatron-core's default leaves the
 * device's choice (cuDNN through Transformer Engine on Hopper), the PyTorch
 * frameworks' dp_impl default to FlashAttention-2 (SDPA's flash backend);
 * each attention op carries it, and the canonical spec names it only when
 * it differs from the framework's default. */
static int attn_ops_with(const wl_workload *wl, int impl, int *others)
{
  int n = 0;
  *others = 0;
  for (int p = 0; p < wl->num_programs; p++)
    for (size_t i = 0; i < wl->programs[p].num_ops; i++) {
      const wl_op *o = &wl->programs[p].ops[i];
      if (o->kind != WL_OP_COMPUTE)
        continue;
      if (o->sub == WL_CLASS_ATTENTION && wl_op_attn_impl(o) == impl)
        n++;
      else if (wl_op_attn_impl(o))
        (*others)++; /* a library on a non-attention op, or another one */
    }
  return n;
}

static void test_layout__attention_library_by_framework(void **state)
{
  (void)state;
  wl_model m;
  model_of("llama3-8b", &m);
  wl_layout l;
  int others;
  /* Megatron (default dp_impl): the device's library; 32 layers x (fwd + bwd) in the one
   * program every rank runs */
  wl_workload *wl = gen(&m, "tp=8,mbs=1,gbs=1", 8, &l);
  assert_int_equal(l.attn_impl, WL_ATTN_DEFAULT);
  assert_int_equal(attn_ops_with(wl, WL_ATTN_DEFAULT, &others), 32 * 2);
  assert_int_equal(others, 0);
  assert_null(strstr(l.spec, "attn_impl"));
  wl_workload_destroy(wl);
  /* FSDP2: FlashAttention-2, without a word in the spec */
  wl = gen(&m, "dp=8,mbs=1,gbs=8,zero=3,dp_impl=fsdp2", 8, &l);
  assert_int_equal(l.attn_impl, WL_ATTN_FA2);
  assert_int_equal(attn_ops_with(wl, WL_ATTN_FA2, &others), 32 * 2);
  assert_int_equal(others, 0);
  assert_null(strstr(l.spec, "attn_impl"));
  wl_workload_destroy(wl);
  /* asked for: in the spec, which parses back to itself */
  wl = gen(&m, "tp=8,mbs=1,gbs=1,attn_impl=fa3", 8, &l);
  assert_int_equal(attn_ops_with(wl, WL_ATTN_FA3, &others), 32 * 2);
  assert_int_equal(others, 0);
  assert_non_null(strstr(l.spec, ",attn_impl=fa3"));
  wl_layout l2;
  st_err err;
  assert_int_equal(wl_layout_parse(l.spec, 8, &m, &l2, &err), 0);
  assert_string_equal(l2.spec, l.spec);
  wl_workload_destroy(wl);
  assert_int_equal(wl_layout_parse("dp=8,zero=3,dp_impl=fsdp,attn_impl=cudnn", 8, &m, &l, &err), 0);
  assert_int_equal(l.attn_impl, WL_ATTN_CUDNN);
  assert_non_null(strstr(l.spec, ",dp_impl=fsdp,attn_impl=cudnn"));
  /* recomputed forwards carry it too (full recompute: a third attention per layer) */
  wl = gen(&m, "dp=8,mbs=1,gbs=8,zero=3,dp_impl=fsdp,recompute=full,attn_impl=triton", 8, &l);
  assert_int_equal(attn_ops_with(wl, WL_ATTN_TRITON, &others), 32 * 3);
  assert_int_equal(others, 0);
  wl_workload_destroy(wl);
}

/* ---- FLOPs ---------------------------------------------------------------------- */
static void test_flops__gpt_matches_sc21_eq3(void **state)
{
  (void)state;
  static const struct {
    const char *model, *spec;
    int gpus;
  } cases[] = {
      {"megatron-1.7b", "tp=1,gbs=4", 4},
      {"megatron-18b", "tp=8,pp=2,gbs=4,sp=1", 16},
      {"megatron-39b", "tp=8,pp=2,gbs=8,vpp=3", 32},
      {"gpt3-175b", "tp=8,pp=8,gbs=8,cp=2,sp=1", 128},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_model m;
    model_of(cases[i].model, &m);
    for (int rc = 0; rc < 2; rc++) {
      char spec[128];
      snprintf(spec, sizeof spec, "%s%s", cases[i].spec, rc ? ",recompute=full" : "");
      wl_layout l;
      wl_workload *wl = gen(&m, spec, cases[i].gpus, &l);
      double B = l.gbs, s = m.seq_len, L = m.layers, h = m.hidden, V = 51200;
      double model = 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h));
      double hw = 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h));
      check_rel(wl->meta.model_flops_per_step, model, 0.005, spec);
      check_rel(wl->meta.hw_flops_per_step, rc ? hw : model, 0.005, spec);
      wl_workload_destroy(wl);
    }
  }
}

static double padded(double v, int tp) { return ceil(v / (128.0 * tp)) * 128.0 * tp; }

static void test_flops__gqa_swiglu_moe_are_6NT_plus_attention(void **state)
{
  (void)state;
  static const struct {
    const char *model, *spec;
    int gpus, tp;
  } cases[] = {
      {"llama3-8b", "tp=4,pp=2,gbs=4", 8, 4},
      {"llama3-70b", "tp=8,pp=4,gbs=8,sp=1,cp=2", 64, 8},
      {"mixtral-8x7b", "tp=2,sp=1,ep=4,gbs=8", 16, 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_model m;
    model_of(cases[i].model, &m);
    wl_layout l;
    wl_workload *wl = gen(&m, cases[i].spec, cases[i].gpus, &l);
    double h = m.hidden, q = (double)m.heads * m.head_dim, kv = (double)m.kv_heads * m.head_dim;
    double ffn = 3 * h * m.ffn_hidden; /* swiglu: gate, up, down */
    if (m.has_moe) /* active: top_k experts and the router */
      ffn = m.moe.top_k * 3 * h * m.moe.expert_ffn_hidden + h * m.moe.experts;
    double N = m.layers * (h * (q + 2 * kv) + q * h + ffn) + padded(m.vocab, cases[i].tp) * h;
    double tokens = (double)l.gbs * m.seq_len;
    double attn = 12.0 * m.layers * m.seq_len * q * tokens; /* Megatron: full s^2 */
    check_rel(wl->meta.model_flops_per_step, 6 * N * tokens + attn, 0.005, cases[i].model);
    wl_workload_destroy(wl);
  }
}

static void test_flops__ops_carry_executed_flops(void **state)
{
  (void)state;
  wl_model m;
  model_of(GPT_T, &m);
  static const char *const specs[] = {"tp=2,gbs=2", "tp=2,cp=2,sp=1,gbs=2", "pp=2,vpp=2,gbs=4",
                                      "dp=4,zero=3,gbs=4"};
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    wl_layout l;
    wl_workload *wl = gen(&m, specs[i], 4, &l);
    double B = l.gbs, s = m.seq_len, L = m.layers, h = m.hidden, V = m.vocab;
    /* GEMMs: 3 x forward; causal attention: half the scores, backward 2.5x */
    check_rel(job_flops(wl, WL_CLASS_GEMM), 72 * B * s * L * h * h * (1 + V / (12 * L * h)), 1e-9,
              specs[i]);
    check_rel(job_flops(wl, WL_CLASS_ATTENTION), 4 * B * s * s * h * L * (0.5 + 1.25), 1e-9,
              specs[i]);
    wl_workload_destroy(wl);
  }
  /* capacity padding is executed but is not model FLOPs */
  wl_model x;
  model_of(MOE_T, &x);
  wl_layout l;
  wl_workload *a = gen(&x, "ep=4,gbs=4", 4, &l);
  x.moe.capacity_factor = 1.25;
  wl_workload *b = gen(&x, "ep=4,gbs=4", 4, &l);
  check_rel(b->meta.model_flops_per_step, a->meta.model_flops_per_step, 1e-12, "cf model flops");
  /* 0.25 x tokens x top_k x (fwd, dgrad, wgrad) x 2 flops x (gate, up, down) x layers */
  double T = 4.0 * 1024, ef = 1024, hh = 1024;
  check_rel(job_flops(b, WL_CLASS_GEMM) - job_flops(a, WL_CLASS_GEMM),
            0.25 * T * 2 * 3 * 2 * (3 * hh * ef) * x.layers, 1e-9, "padding flops");
  wl_workload_destroy(a);
  wl_workload_destroy(b);
}

/* ---- communication bytes per rank per step ---------------------------------------- */
static void test_bytes__per_rank_match_closed_forms(void **state)
{
  (void)state;
  wl_model g;
  model_of(GPT_T, &g);
  const double L = 8, h = 1024, s = 1024, V = 32768;
  const double Pl1 = 12 * h * h + 13 * h; /* GPT layer, tp = 1 (SC'21 Eq. 2) */
  const double Proot = V * h + s * h + 2 * h;
  const double P = L * Pl1 + Proot;
  wl_layout l;
  wl_workload *wl;

  /* TP without SP: 2 all-reduces forward and 2 backward per layer, 1 for the
   * embedding, 1 for the output layer's input gradient, 3 x T floats in the loss */
  for (int full = 0; full < 2; full++) {
    wl = gen(&g, full ? "tp=4,gbs=2,recompute=full" : "tp=4,gbs=2", 4, &l);
    double m = 2, T = s, per = (4 + 2 * full) * L + 2;
    check_rel(rank_bytes(wl, 0, WL_COMM_TP, WL_OP_COLL, -1), m * (per * T * h * 2 + 3 * T * 4),
              1e-12, "tp");
    wl_workload_destroy(wl);
  }
  /* TP with SP: 2 AG + 2 RS forward, 4 AG + 2 RS backward per layer; embedding
   * RS + AG; output AG, AG, RS; loss; SP-marked norms and row biases all-reduced */
  wl = gen(&g, "tp=4,sp=1,gbs=2", 4, &l);
  {
    double m = 2, T = s, t = 4;
    double norms = (6 * h * L + 2 * h) * 4;
    check_rel(rank_bytes(wl, 0, WL_COMM_TP, WL_OP_COLL, WL_COLL_ALLGATHER),
              m * (6 * L + 1 + 2) * T * h * 2, 1e-12, "sp ag");
    check_rel(rank_bytes(wl, 0, WL_COMM_TP, WL_OP_COLL, WL_COLL_REDUCESCATTER),
              m * (4 * L + 1 + 1) * T * h * 2, 1e-12, "sp rs");
    check_rel(rank_bytes(wl, 0, WL_COMM_TP, WL_OP_COLL, WL_COLL_ALLREDUCE), m * 3 * T * 4 + norms,
              1e-12, "sp ar");
    /* DP over the 1 remaining rank: none */
    assert_true(rank_bytes(wl, 0, WL_COMM_DP, WL_OP_COLL, -1) == 0);
    (void)t;
  }
  wl_workload_destroy(wl);

  /* PP: one activation per micro-batch forward, one gradient backward, per
   * boundary; SP sends the [s/t, b, h] shard; interleaving multiplies boundaries */
  wl = gen(&g, "pp=4,gbs=8", 4, &l);
  {
    double m = 8, act = s * h * 2;
    check_rel(rank_bytes(wl, 0, WL_COMM_PP, WL_OP_SEND, -1), m * act, 1e-12, "pp first");
    check_rel(rank_bytes(wl, 1, WL_COMM_PP, WL_OP_SEND, -1), 2 * m * act, 1e-12, "pp middle");
    check_rel(rank_bytes(wl, 3, WL_COMM_PP, WL_OP_SEND, -1), m * act, 1e-12, "pp last");
  }
  wl_workload_destroy(wl);
  wl = gen(&g, "tp=2,sp=1,pp=2,vpp=2,gbs=4", 4, &l);
  {
    double m = 4, act = s / 2 * h * 2;
    /* stage 0 sends chunk 0 and chunk 1 activations and chunk 1 gradients */
    check_rel(rank_bytes(wl, 0, WL_COMM_PP, WL_OP_SEND, -1), 3 * m * act, 1e-12, "vpp stage 0");
    check_rel(rank_bytes(wl, 2, WL_COMM_PP, WL_OP_SEND, -1), 3 * m * act, 1e-12, "vpp stage 1");
  }
  wl_workload_destroy(wl);

  /* DP: all-reduce of every gradient (fp32); distributed optimizer: reduce-
   * scatter of gradients + all-gather of bf16 parameters, bucketed or not */
  static const struct {
    const char *spec;
    double ar, rs, ag;
  } dp[] = {{"dp=4,gbs=4", 4, 0, 0},
            {"dp=4,gbs=4,overlap_grad_reduce=1,bucket=1M", 4, 0, 0},
            {"dp=4,gbs=4,zero=1", 0, 4, 2},
            {"dp=4,gbs=8,zero=2,overlap_grad_reduce=1,overlap_param_gather=1,bucket=2M", 0, 4, 2},
            {"dp=4,gbs=4,grad_dtype=bf16", 2, 0, 0}};
  for (size_t i = 0; i < sizeof dp / sizeof dp[0]; i++) {
    wl = gen(&g, dp[i].spec, 4, &l);
    check_rel(rank_bytes(wl, 3, WL_COMM_DP, WL_OP_COLL, WL_COLL_ALLREDUCE) + 1,
              dp[i].ar * P + 1, 1e-12, dp[i].spec);
    check_rel(rank_bytes(wl, 3, WL_COMM_DP, WL_OP_COLL, WL_COLL_REDUCESCATTER) + 1,
              dp[i].rs * P + 1, 1e-12, dp[i].spec);
    check_rel(rank_bytes(wl, 3, WL_COMM_DP, WL_OP_COLL, WL_COLL_ALLGATHER) + 1, dp[i].ag * P + 1,
              1e-12, dp[i].spec);
    wl_workload_destroy(wl);
  }
  wl = gen(&g, "dp=4,gbs=4,overlap_grad_reduce=1,bucket=1M", 4, &l);
  assert_true(count_ops(wl, 0, "dp.grad.ar") >= 8); /* 12.6M parameters in >= 1M buckets */
  wl_workload_destroy(wl);
  /* Megatron's passes over the gradient buffer (core_r0.8.0 to 2026): zeroed
   * at the start of the step (zero_grad_buffer: P fp32 written), and before
   * each bucket's reduction its norm (check_for_nan_in_grad: P read) and its
   * scaling by 1/dp (grad_data *= 1/dp: P read and written); the scaling
   * only where dp > 1, and neither pass where the keys turn them off. */
  {
    static const struct {
      const char *spec;
      int gpus;
      double zero, nan, scale;
    } pass[] = {{"dp=2,gbs=2,zero=1,overlap_grad_reduce=1", 2, 4, 4, 8},
                {"dp=2,gbs=2", 2, 4, 4, 8},
                {"dp=1,gbs=2", 1, 4, 4, 0},
                {"dp=2,gbs=2,zero=1,grad_nan_check=0", 2, 4, 0, 8},
                {"dp=2,gbs=2,grad_scale_pass=0,grad_dtype=bf16", 2, 2, 2, 0},
                {"dp=2,gbs=2,zero=3", 2, 0, 0, 0}};
    for (size_t i = 0; i < sizeof pass / sizeof pass[0]; i++) {
      wl = gen(&g, pass[i].spec, pass[i].gpus, &l);
      check_rel(named_bytes(wl, 0, "dp.grad.zero") + 1, pass[i].zero * P + 1, 1e-12,
                pass[i].spec);
      check_rel(named_bytes(wl, 0, "dp.grad.nan_check") + 1, pass[i].nan * P + 1, 1e-12,
                pass[i].spec);
      check_rel(named_bytes(wl, 0, "dp.grad.scale") + 1, pass[i].scale * P + 1, 1e-12,
                pass[i].spec);
      wl_workload_destroy(wl);
    }
  }
  /* Megatron-core buckets only the first stage's first model chunk
   * (DistributedDataParallel: bucket_size None for pipeline rank > 0 and for
   * chunks after the first).  Two layers per virtual stage, each layer's
   * attention (4.2M) and MLP (8.4M) past the 1M bucket, the embedding too:
   * stage 0's chunk 0 closes 5 buckets (2 x 2 groups + the embedding), its
   * chunk 1 one; stage 1 one per chunk.  The parameter gathers follow the
   * same buckets; the bytes are those of the whole stage either way (fp32
   * gradients of every parameter, the last stage's copy of the tied
   * embedding, V h, among them). */
  wl = gen(&g,
           "pp=2,vpp=2,dp=2,gbs=8,zero=1,overlap_grad_reduce=1,overlap_param_gather=1,"
           "bucket=1M",
           4, &l);
  assert_int_equal(count_ops(wl, 0, "dp.grad.rs"), 6);
  assert_int_equal(count_ops(wl, 0, "dp.param.ag"), 6);
  assert_int_equal(count_ops(wl, 2, "dp.grad.rs"), 2);
  assert_int_equal(count_ops(wl, 2, "dp.param.ag"), 2);
  check_rel(rank_bytes(wl, 0, WL_COMM_DP, WL_OP_COLL, WL_COLL_REDUCESCATTER) +
                rank_bytes(wl, 2, WL_COMM_DP, WL_OP_COLL, WL_COLL_REDUCESCATTER),
            4 * (P + V * h), 1e-12, "pp vpp rs");
  wl_workload_destroy(wl);
  /* ZeRO-3 / FSDP: per micro-batch, each layer gathered for forward and for
   * backward and its gradients reduce-scattered; the root unit once each */
  wl = gen(&g, "dp=4,zero=3,gbs=8", 4, &l);
  {
    double m = 2;
    check_rel(rank_bytes(wl, 0, WL_COMM_DP, WL_OP_COLL, WL_COLL_ALLGATHER),
              m * (L * 2 * Pl1 * 2 + Proot * 2), 1e-12, "zero3 ag");
    check_rel(rank_bytes(wl, 0, WL_COMM_DP, WL_OP_COLL, WL_COLL_REDUCESCATTER),
              m * (L * Pl1 * 4 + Proot * 4), 1e-12, "zero3 rs");
  }
  wl_workload_destroy(wl);

  /* CP ring: per layer and micro-batch, cp - 1 KV chunks forward, cp - 1 KV
   * chunks and cp dKV chunks backward, each one shift step of the whole CP
   * group (no send/recv); KV = 2 b (s/cp) kv_heads d bytes(2); DP gradients
   * reduced over dp x cp */
  for (int cp = 2; cp <= 4; cp += 2) {
    char spec[64];
    snprintf(spec, sizeof spec, "cp=%d,gbs=2", cp);
    wl = gen(&g, spec, cp, &l);
    double m = 2, kvb = 2 * (s / cp) * h * 2;
    check_rel(rank_bytes(wl, 1, WL_COMM_CP, WL_OP_COLL, WL_COLL_SHIFT),
              m * L * (3.0 * cp - 2) * kvb, 1e-12, spec);
    assert_int_equal(count_colls(wl, 1, "cp.kv", WL_COLL_SHIFT), m * L * 2 * (cp - 1));
    assert_int_equal(count_colls(wl, 1, "cp.dkv", WL_COLL_SHIFT), m * L * cp);
    assert_true(rank_bytes(wl, 1, WL_COMM_CP, WL_OP_SEND, -1) == 0);
    assert_true(rank_bytes(wl, 1, WL_COMM_CP, WL_OP_RECV, -1) == 0);
    int role = -1;
    for (int i = 0; i < wl->num_roles; i++)
      if (!strcmp(wl->roles[i], "cp"))
        role = i;
    int c = wl_rank_comm(wl, 1, role);
    assert_true(c >= 0);
    assert_int_equal(wl->comms[c].size, cp);
    for (int i = 0; i < cp; i++) /* ring order: CP rank order */
      assert_int_equal(wl->comms[c].ranks[i], i);
    check_rel(rank_bytes(wl, 1, WL_COMM_DP, WL_OP_COLL, WL_COLL_ALLREDUCE), 4 * P, 1e-12, spec);
    wl_workload_destroy(wl);
  }

  /* EP: dispatch and combine all-to-alls forward and backward, each one
   * rank's T/t x top_k tokens of h values; expert TP gathers them all */
  wl_model x;
  model_of(MOE_T, &x);
  wl = gen(&x, "ep=4,gbs=4", 4, &l);
  check_rel(rank_bytes(wl, 0, WL_COMM_EP, WL_OP_COLL, WL_COLL_ALLTOALL), 4 * 4 * s * 2 * h * 2,
            1e-12, "ep");
  wl_workload_destroy(wl);
  wl = gen(&x, "tp=2,sp=1,ep=2,gbs=2", 4, &l);
  {
    double T = s, t = 2, k = 2, Lx = 4;
    check_rel(rank_bytes(wl, 0, WL_COMM_EP, WL_OP_COLL, WL_COLL_ALLTOALL),
              Lx * 4 * (T / t) * k * h * 2, 1e-12, "ep+tp a2a");
    /* expert DP over dp*cp/ep = 1 rank: nothing; dense DP over 2 */
    assert_true(rank_bytes(wl, 0, WL_COMM_DP, WL_OP_COLL, -1) > 0);
    assert_int_equal(count_ops(wl, 0, "dp_expert.grad.ar"), 0);
  }
  wl_workload_destroy(wl);
  wl = gen(&x, "ep=2,gbs=4", 4, &l);
  /* experts reduced over the expert-dp group of dp*cp/ep = 2 ranks:
   * 4 layers x 4 local experts x 3 x h x ef, fp32 */
  check_rel(named_bytes(wl, 0, "dp_expert.grad.ar"), 4 * 4 * 3 * h * 1024 * 4, 1e-12, "expert dp");
  wl_workload_destroy(wl);
}

/* ---- programs, meta, determinism ------------------------------------------------------- */
static void test_programs__shared_per_stage_at_scale(void **state)
{
  (void)state;
  wl_model m;
  model_of("llama3-405b", &m);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  wl_layout l;
  wl_workload *wl = gen(&m,
                        "tp=8,pp=16,dp=128,mbs=1,gbs=2048,sp=1,first_stage_layers=7,"
                        "last_stage_layers=7",
                        16384, &l);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double secs = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
  assert_int_equal(wl->num_ranks, 16384);
  assert_int_equal(wl->num_programs, 16);
  assert_true(secs < 5);
  assert_true(wl_workload_memory_bytes(wl) < 500e6);
  assert_string_equal(wl->meta.source, "gen");
  assert_string_equal(wl->meta.model, "llama3-405b");
  assert_string_equal(wl->meta.layout, l.spec);
  assert_true(wl->meta.tokens_per_step == 2048.0 * 8192);
  assert_int_equal(wl->meta.iterations, 1);
  assert_int_equal(wl->meta.dtype, WL_DTYPE_BF16);
  assert_true(wl->meta.peak_memory_bytes > 0);
  /* every rank of a stage runs its stage's program; TP peers differ only in communicators */
  assert_int_equal(wl->rank_program[0], 0);
  assert_int_equal(wl->rank_program[16383], 15);
  assert_int_equal(wl->rank_program[1024], 1);
  assert_true(wl_rank_comm(wl, 0, 0) != wl_rank_comm(wl, 8, 0));
  wl_workload_destroy(wl);
}

static void test_programs__same_input_same_workload(void **state)
{
  (void)state;
  wl_model m;
  model_of(MOE_T, &m);
  wl_workload *a = gen(&m, "tp=2,sp=1,ep=2,pp=2,gbs=4,zero=1,overlap_grad_reduce=1", 8, NULL);
  wl_workload *b = gen(&m, "tp=2,sp=1,ep=2,pp=2,gbs=4,zero=1,overlap_grad_reduce=1", 8, NULL);
  char *ja = wl_workload_to_json(a, 0), *jb = wl_workload_to_json(b, 0);
  assert_non_null(ja);
  assert_string_equal(ja, jb);
  free(ja);
  free(jb);
  wl_workload_destroy(a);
  wl_workload_destroy(b);
}

/* ---- memory --------------------------------------------------------------------------- */
/* The peak of chunks (and layers) alive on a stage, which the memory
 * estimate takes from the schedule's start only, equals the running sum
 * over the whole schedule (the definition) for every schedule, even and
 * uneven chunks, few and many micro-batches. */
static void test_memory__peak_alive_is_the_whole_schedules_peak(void **state)
{
  (void)state;
  wl_model m;
  model_of("llama3-70b", &m); /* 80 layers */
  static const char *const specs[] = {
      "pp=4,mbs=1",
      "pp=4,mbs=1,schedule=gpipe",
      "pp=4,vpp=2,mbs=1",
      "pp=4,vpp=5,mbs=1",
      "pp=8,vpp=2,mbs=1,first_stage_layers=6,last_stage_layers=6",
      "pp=4,vpp=2,mbs=1,account_embedding=1,account_loss=1",
      "pp=2,mbs=1,stage_layers=30/50",
      /* a stage whose first chunk holds more layers than its second: the
       * running sum climbs after the first steady pair */
      "pp=2,vpp=2,mbs=1,pp_layout=Et*30|t*30|t*10|t*10L",
      "pp=4,vpp=2,mbs=1,pp_layout=Et*15|t*15|t*15|t*15|t*5|t*5|t*5|t*5L",
  };
  int checked = 0;
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
    for (int gbs = 4; gbs <= 96; gbs += 4) {
      char spec[160];
      snprintf(spec, sizeof spec, "%s,gbs=%d", specs[i], gbs);
      wl_layout l;
      st_err err;
      if (wl_layout_parse(spec, 0, &m, &l, &err))
        continue; /* e.g. interleaved with micro-batches not divisible by pp */
      for (int s = 0; s < l.pp; s++) {
        int n = 0, cur = 0, curl = 0, want = 0, wantl = 0;
        wl__unit *u = wl__schedule(&l, s, &n);
        assert_non_null(u);
        for (int k = 0; k < n; k++) {
          int c = wl_layout_vstage_layers(&l, u[k].chunk * l.pp + s);
          cur += u[k].fwd ? 1 : -1;
          curl += u[k].fwd ? c : -c;
          if (curl > wantl || (curl == wantl && cur > want))
            want = cur, wantl = curl;
        }
        free(u);
        int got = -1, gotl = -1;
        wl__peak_alive(&l, s, &got, &gotl);
        if (got != want || gotl != wantl)
          fail_msg("%s stage %d: peak %d chunks %d layers, the whole schedule %d, %d", spec, s,
                   got, gotl, want, wantl);
        checked++;
      }
    }
  print_message("%d stages of layouts checked\n", checked);
  assert_true(checked > 300);
}

static void test_memory__activations_match_korthikanti(void **state)
{
  (void)state;
  wl_model m;
  model_of("gpt3-175b", &m);
  double s = m.seq_len, h = m.hidden, a = m.heads, b = 1, t = 8;
  double sbh = s * b * h;
  static const struct {
    const char *spec;
    int which;
  } cases[] = {{"tp=1,flash=0,pp=96,dropout=0.1", 0},
               {"tp=8,flash=0,pp=8,dropout=0.1", 1},
               {"tp=8,sp=1,flash=0,pp=8,dropout=0.1", 2},
               {"tp=8,sp=1,flash=0,pp=8,recompute=selective,dropout=0.1", 3},
               {"tp=8,sp=1,flash=0,pp=8,recompute=full,dropout=0.1", 4},
               {"tp=8,flash=0,pp=8,recompute=selective,dropout=0.1", 5},
               /* without dropout: no masks (2 sbh), the scores' 2 B only */
               {"tp=1,flash=0,pp=96", 6},
               {"tp=8,flash=0,pp=8", 7}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_layout l;
    wl_memory mem;
    st_err err;
    int gpus = strstr(cases[i].spec, "tp=8") ? (strstr(cases[i].spec, "pp=8") ? 64 : 8) : 96;
    assert_int_equal(wl_layout_parse(cases[i].spec, gpus, &m, &l, &err), 0);
    assert_int_equal(wl_memory_estimate(&m, &l, &mem, &err), 0);
    double want = 0;
    switch (cases[i].which) {
    case 0: want = sbh * (34 + 5 * a * s / h); break;
    case 1: want = sbh * (10 + 24 / t + 5 * a * s / (h * t)); break;
    case 2: want = sbh / t * (34 + 5 * a * s / h); break;
    case 3: want = sbh / t * 34; break;
    case 4: want = 2 * sbh / t; break;
    case 5: want = sbh * (10 + 24 / t); break;
    case 6: want = sbh * (32 + 2 * a * s / h); break;
    case 7: want = sbh * (8 + 24 / t + 2 * a * s / (h * t)); break;
    }
    check_rel(mem.stages[1].act_layer_bytes, want, 0.01, cases[i].spec);
  }
  /* 1F1B: the first stage holds p micro-batches of L/p layers = L layers;
   * interleaved: (1 + (p - 1)/(p v)) L layers (Korthikanti Sec. 4.2.3) */
  static const struct {
    const char *spec;
    double factor;
  } sched[] = {{"tp=8,sp=1,flash=0,pp=8,gbs=64,dropout=0.1", 1},
               {"tp=8,sp=1,flash=0,pp=8,vpp=2,gbs=64,dropout=0.1", 1 + 7.0 / 16},
               {"tp=8,sp=1,flash=0,pp=8,vpp=3,gbs=64,dropout=0.1", 1 + 7.0 / 24}};
  for (size_t i = 0; i < sizeof sched / sizeof sched[0]; i++) {
    wl_layout l;
    wl_memory mem;
    st_err err;
    assert_int_equal(wl_layout_parse(sched[i].spec, 64, &m, &l, &err), 0);
    assert_int_equal(wl_memory_estimate(&m, &l, &mem, &err), 0);
    check_rel(mem.stages[0].activations_bytes,
              sched[i].factor * m.layers * sbh / t * (34 + 5 * a * s / h), 0.01, sched[i].spec);
  }
}

/* Under fp8 Transformer Engine keeps a linear layer's input as the fp8 cast
 * its GEMM ran on, one byte an element (module/linear.py): GPT_T's layer
 * (s = h = 1,024, 16 heads of 64, ffn 4,096, one sequence) keeps QKV's,
 * proj's and fc1's inputs (s h each) and fc2's (4 s h) at one byte, 7 s h
 * less than in bf16; MOE_T's MoE layer (top 2 of 8 experts of width 1,024
 * on ep 4: te = 2,048 routed tokens a rank) also its experts' fc1 and fc2
 * inputs (te h and te f_e): QKV and proj (2 s h) plus 2 x 2 s h.  The
 * PyTorch frameworks through torchao (dp_impl fsdp2) keep two bytes. */
static void test_memory__fp8_keeps_linear_inputs_in_one_byte(void **state)
{
  (void)state;
  static const struct {
    const char *model, *bf16, *fp8;
    int gpus;
    double less; /* in units of s h */
  } cases[] = {{GPT_T, "gbs=1", "gbs=1,dtype=fp8", 1, 7},
               {MOE_T, "ep=4,gbs=4", "ep=4,gbs=4,dtype=fp8", 4, 2 + 4},
               {GPT_T, "dp=2,zero=3,dp_impl=fsdp2,gbs=2", "dp=2,zero=3,dp_impl=fsdp2,gbs=2,dtype=fp8",
                2, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_model m;
    model_of(cases[i].model, &m);
    double sh = 1024.0 * 1024, got[2];
    for (int f = 0; f < 2; f++) {
      wl_layout l;
      wl_memory mem;
      st_err err;
      assert_int_equal(
          wl_layout_parse(f ? cases[i].fp8 : cases[i].bf16, cases[i].gpus, &m, &l, &err), 0);
      assert_int_equal(wl_memory_estimate(&m, &l, &mem, &err), 0);
      got[f] = mem.stages[0].act_layer_bytes;
    }
    if (got[0] - got[1] != cases[i].less * sh)
      fail_msg("%s: %.0f B less under fp8, want %.0f", cases[i].fp8, got[0] - got[1],
               cases[i].less * sh);
  }
}

static void test_memory__states_follow_megatron_bytes_per_param(void **state)
{
  (void)state;
  wl_model m;
  model_of("llama3-8b", &m);
  static const struct {
    const char *spec;
    double bytes_per_param; /* with d = 8 */
  } cases[] = {{"dp=8", 18}, {"dp=8,zero=1", 6 + 12.0 / 8}, {"dp=8,zero=2", 2 + 16.0 / 8},
               {"dp=8,zero=3", 18.0 / 8}, {"dp=8,dtype=fp16", 16},
               /* PyTorch FSDP: the fp32 shard is the weight and the
                * optimizer's parameter, no master copy: 4 + 4 + 8 */
               {"dp=8,zero=3,dp_impl=fsdp,grad_dtype=fp32", 16.0 / 8},
               {"dp=8,zero=3,dp_impl=fsdp2,grad_dtype=fp32", 16.0 / 8},
               /* DeepSpeed ZeRO-3: bf16 partition, fp32 master and moments */
               {"dp=8,zero=3,dp_impl=deepspeed", 16.0 / 8}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_layout l;
    wl_memory mem;
    st_err err;
    assert_int_equal(wl_layout_parse(cases[i].spec, 8, &m, &l, &err), 0);
    assert_int_equal(wl_memory_estimate(&m, &l, &mem, &err), 0);
    const wl_memory_stage *st = &mem.stages[0];
    /* independent count: 32 layers of attention (GQA) + SwiGLU + 2 RMSNorm,
     * padded embedding and output, final norm */
    double h = 4096, P = 32 * (h * (4096 + 2 * 1024) + 4096 * h + 3 * h * 14336 + 2 * h) +
                         2 * padded(128256, 1) * h + h;
    check_rel(st->params, P, 1e-12, "params");
    check_rel(st->weights_bytes + st->grads_bytes + st->optimizer_bytes,
              cases[i].bytes_per_param * P, 1e-9, cases[i].spec);
    if (l.dp_impl == WL_DP_FSDP || l.dp_impl == WL_DP_FSDP2)
      check_rel(st->weights_bytes, 4 * P / 8, 1e-9, "the fp32 shard");
  }
}

/* ---- schedules on the engine ------------------------------------------------------------- */
/* Give each compute op a duration proportional to its FLOPs, none to the
 * embedding, output and optimizer (so every stage takes the same time), and
 * make transfers empty: only link latency (~1e-6 s) remains. */
static void idealise(wl_workload *wl, double *tf, double *tb, int stage_prog)
{
  *tf = *tb = 0;
  for (int pi = 0; pi < wl->num_programs; pi++) {
    wl_program *p = &wl->programs[pi];
    for (size_t i = 0; i < p->num_ops; i++) {
      wl_op *o = &p->ops[i];
      const char *n = wl_op_name(p, o);
      if (o->kind == WL_OP_SEND || o->kind == WL_OP_RECV || o->kind == WL_OP_COLL)
        o->bytes = 0; /* p2p and the tied-embedding all-reduce: latency only */
      if (o->kind != WL_OP_COMPUTE)
        continue;
      int zero = !strncmp(n, "emb.", 4) || !strncmp(n, "out.", 4) || o->sub == WL_CLASS_OPTIMIZER;
      o->duration_s = zero ? 0 : o->flops * 1e-12;
      if (pi == stage_prog)
        *(o->phase == WL_PHASE_FORWARD ? tf : tb) += o->duration_s;
    }
  }
}

static void test_schedule__step_times_on_the_engine(void **state)
{
  (void)state;
  wl_model m;
  model_of(GPT_T, &m);
  static const struct {
    const char *spec;
    double p, v;
  } cases[] = {{"pp=4,gbs=8", 4, 1},
               {"pp=4,gbs=8,schedule=gpipe", 4, 1},
               {"pp=4,vpp=2,gbs=8", 4, 2},
               {"pp=2,vpp=4,gbs=4", 2, 4},
               {"pp=4,gbs=3", 4, 1}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_layout l;
    wl_workload *wl = gen(&m, cases[i].spec, (int)cases[i].p, &l);
    double tf, tb;
    idealise(wl, &tf, &tb, 1);
    double mb = l.num_microbatches;
    tf /= mb;
    tb /= mb;
    double want = (mb + (cases[i].p - 1) / cases[i].v) * (tf + tb);
    forked_result *f = sim_run_forked(wl, "node8", NULL);
    assert_non_null(f);
    if (f->rc) {
      print_error("%s: %s\n", cases[i].spec, f->msg);
      fail();
    }
    check_rel(f->step_time_s, want, 1e-4, cases[i].spec);
    forked_result_free(f);
    wl_workload_destroy(wl);
  }
}

/* Every parallelism together replays to the end on the engine (no rank left
 * waiting on a peer or a collective). */
static void test_schedule__layouts_replay_without_deadlock(void **state)
{
  (void)state;
  wl_model g, x;
  model_of(GPT_T, &g);
  model_of(MOE_T, &x);
  static const struct {
    int moe;
    const char *spec;
    int gpus;
  } cases[] = {
      {0, "tp=2,sp=1,pp=2,gbs=8,zero=1,overlap_grad_reduce=1,overlap_param_gather=1,bucket=2M", 8},
      {0, "tp=2,pp=2,vpp=2,gbs=8,recompute=full", 8},
      {0, "cp=2,tp=2,sp=1,pp=2,gbs=4,recompute=selective", 8},
      {0, "dp=4,pp=2,vpp=2,gbs=16,grad_dtype=bf16", 8},
      {0, "dp=8,zero=3,gbs=16", 8},
      {0, "tp=2,sp=1,dp=4,zero=3,gbs=8,recompute=full", 8},
      {1, "tp=2,sp=1,ep=4,gbs=8,zero=2,overlap_grad_reduce=1,bucket=1M", 8},
      {1, "tp=2,sp=1,ep=2,pp=2,cp=2,gbs=8,zero=1,overlap_grad_reduce=1,bucket=1M", 16},
      {0, "tp=2,sp=1,pp=2,vpp=2,gbs=8,recompute=full,tp_overlap=1", 8},
      {0, "cp=2,tp=4,sp=1,gbs=4,recompute=selective,zero=1,overlap_grad_reduce=1,tp_overlap=1", 8},
      {1, "tp=2,sp=1,ep=2,pp=2,cp=2,gbs=8,tp_overlap=1", 16},
      {0, "tp=2,pp=2,gbs=4,account_embedding=1,account_loss=1,zero=1,overlap_grad_reduce=1", 4},
      {0, "pp=2,gbs=4,pp_layout=Et|ttt|ttt|tL", 2},
      {1, "tp=2,sp=1,pp=2,ep=8,etp=1,gbs=8,zero=1,overlap_grad_reduce=1,bucket=1M", 16},
      {1, "tp=4,sp=1,ep=4,etp=2,gbs=2,tp_overlap=1", 8},
      {1, "tp=2,sp=1,pp=2,vpp=2,ep=4,etp=1,gbs=8,zero=1,overlap_grad_reduce=1,"
          "overlap_param_gather=1,bucket=1M,tp_overlap=1,moe_a2a_overlap=1", 16},
      {1, "ep=8,gbs=16,moe_dispatcher=flex,moe_a2a_overlap=1,recompute_modules=moe_act", 8},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_workload *wl = gen(cases[i].moe ? &x : &g, cases[i].spec, cases[i].gpus, NULL);
    forked_result *f = sim_run_forked(wl, cases[i].gpus > 8 ? "node8:2" : "node8", NULL);
    assert_non_null(f);
    if (f->rc) {
      print_error("%s: %s\n", cases[i].spec, f->msg);
      fail();
    }
    assert_true(f->step_time_s > 0);
    forked_result_free(f);
    wl_workload_destroy(wl);
  }
}

/* ---- TP communication overlap (tp_overlap) ------------------------------------------ */
/* tp_overlap=0 is the default: the workload is byte for byte the one of the
 * layout without the key. */
static void test_tp_overlap__off_is_the_default_byte_for_byte(void **state)
{
  (void)state;
  wl_model g, x;
  model_of(GPT_T, &g);
  model_of(MOE_T, &x);
  static const struct {
    int moe;
    const char *spec;
    int gpus;
  } cases[] = {{0, "tp=4,sp=1,pp=2,gbs=4", 8},
               {0, "tp=2,pp=2,vpp=2,gbs=8,recompute=full", 8},
               {0, "cp=2,tp=2,sp=1,gbs=4,zero=1,overlap_grad_reduce=1", 8},
               {1, "tp=2,sp=1,ep=2,gbs=4", 4}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char spec[160];
    snprintf(spec, sizeof spec, "%s,tp_overlap=0", cases[i].spec);
    const wl_model *m = cases[i].moe ? &x : &g;
    wl_workload *a = gen(m, cases[i].spec, cases[i].gpus, NULL);
    wl_workload *b = gen(m, spec, cases[i].gpus, NULL);
    char *ja = wl_workload_to_json(a, 0), *jb = wl_workload_to_json(b, 0);
    assert_non_null(ja);
    assert_non_null(jb);
    if (strcmp(ja, jb)) {
      print_error("%s: workload JSON differs with tp_overlap=0\n", cases[i].spec);
      fail();
    }
    free(ja);
    free(jb);
    wl_workload_destroy(a);
    wl_workload_destroy(b);
  }
}

/* Sum of one rank's TP ring-exchange sends (shift steps) */
static double tp_ring_bytes(const wl_workload *wl, int rank)
{
  return rank_bytes(wl, rank, WL_COMM_TP, WL_OP_COLL, WL_COLL_SHIFT);
}

/* Ops of one rank's program with this name and collective. */
static int count_colls(const wl_workload *wl, int rank, const char *name, int coll)
{
  const wl_program *p = &wl->programs[wl->rank_program[rank]];
  int n = 0;
  for (size_t i = 0; i < p->num_ops; i++)
    if (p->ops[i].kind == WL_OP_COLL && p->ops[i].sub == coll &&
        !strcmp(wl_op_name(p, &p->ops[i]), name))
      n++;
  return n;
}

/* The same data moves and the same model FLOPs are computed: an all-gather
 * of S bytes (nccl-tests size) becomes tp - 1 ring steps of S/tp sent per
 * rank; reduce-scatters are chunked (4 pieces), same sum; the GEMMs fed by the
 * ring run in tp chunks, the row-parallel ones feeding the reduce-scatter in 4. */
static void test_tp_overlap__same_bytes_and_flops(void **state)
{
  (void)state;
  wl_model g;
  model_of(GPT_T, &g);
  const double L = 8, h = 1024, s = 1024, V = 32768;
  for (int t = 2; t <= 4; t += 2) {
    char spec[64], spec0[64];
    snprintf(spec0, sizeof spec0, "tp=%d,sp=1,gbs=2", t);
    snprintf(spec, sizeof spec, "%s,tp_overlap=1", spec0);
    wl_layout l;
    wl_workload *wl = gen(&g, spec, t, &l);
    wl_workload *w0 = gen(&g, spec0, t, NULL);
    double m = 2, T = s;
    double norms = (6 * h * L + 2 * h) * 4;
    /* docs/workloads.md: AG m (6 L + 1 + 2) 2 T h, RS m (4 L + 1 + 1) 2 T h;
     * ring-exchanged: forward 2 per layer, backward 2 per layer */
    double ring = m * 4 * L * 2 * T * h;
    for (int r = 0; r < t; r++) {
      check_rel(tp_ring_bytes(wl, r), ring * (t - 1) / t, 1e-12, "tp ring sends");
      check_rel(rank_bytes(wl, r, WL_COMM_TP, WL_OP_COLL, WL_COLL_ALLGATHER) +
                    tp_ring_bytes(wl, r) * t / (t - 1),
                m * (6 * L + 1 + 2) * T * h * 2, 1e-12, "tp ag");
      check_rel(rank_bytes(wl, r, WL_COMM_TP, WL_OP_COLL, WL_COLL_REDUCESCATTER),
                m * (4 * L + 1 + 1) * T * h * 2, 1e-12, "tp rs");
      check_rel(rank_bytes(wl, r, WL_COMM_TP, WL_OP_COLL, WL_COLL_ALLREDUCE),
                m * 3 * T * 4 + norms, 1e-12, "tp ar");
    }
    /* model FLOPs: SC'21 Eq. 3, and the same as without the overlap */
    double B = l.gbs;
    check_rel(wl->meta.model_flops_per_step,
              72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h)), 0.005, spec);
    check_rel(wl->meta.model_flops_per_step, w0->meta.model_flops_per_step, 1e-12, spec);
    check_rel(job_flops(wl, WL_CLASS_GEMM), job_flops(w0, WL_CLASS_GEMM), 1e-12, spec);
    /* chunks: per micro-batch and layer, tp of each forward GEMM, tp - 1
     * ring steps per gather, 4 reduce-scatters per row-parallel GEMM (TE's
     * default split of its "pipeline" method) */
    assert_int_equal(count_ops(wl, 0, "qkv"), (int)(m * L) * t);
    assert_int_equal(count_ops(wl, 0, "mlp.fc2.dgrad"), (int)(m * L) * t);
    assert_int_equal(count_colls(wl, 0, "attn.tp.ag", WL_COLL_SHIFT), (int)(m * L) * (t - 1));
    assert_int_equal(count_colls(wl, 0, "attn.tp.ag", WL_COLL_ALLGATHER), 0);
    assert_int_equal(count_ops(wl, 0, "attn.tp.rs"), (int)(m * L) * 4);
    /* every TP collective on the "tp" stream, the ring's steps included (one
     * issue order for the communicator), and no send/recv; the chunk GEMMs
     * share the SMs with their k - 1 siblings (TE's round-robin compute
     * streams), the unsplit ones run alone */
    const wl_program *p = &wl->programs[0];
    for (size_t i = 0; i < p->num_ops; i++) {
      const wl_op *o = &p->ops[i];
      const char *on = p->strings + o->name;
      if (!strcmp(on, "qkv") || !strcmp(on, "mlp.fc1") || !strcmp(on, "mlp.fc2.dgrad") ||
          !strcmp(on, "proj.dgrad"))
        assert_int_equal(o->concurrent, t);
      else if (!strcmp(on, "proj") || !strcmp(on, "mlp.fc2"))
        assert_int_equal(o->concurrent, 4);
      else if (o->kind == WL_OP_COMPUTE)
        assert_int_equal(o->concurrent, 0);
      if (o->kind == WL_OP_COLL && wl->roles[o->role] && !strcmp(wl->roles[o->role], "tp"))
        assert_string_equal(p->stream_names[o->stream], "tp");
      assert_true(o->kind != WL_OP_SEND && o->kind != WL_OP_RECV);
    }
    wl_workload_destroy(wl);
    wl_workload_destroy(w0);
  }
}

/* What the compute model reads survives the workload file: every op of a
 * generated workload (flash attention with its causal mask, TP-overlap chunks
 * marked concurrent, recomputation, fp8 GEMMs) is priced the same after a
 * write and a read. */
static void test_file__prices_every_op_as_generated(void **state)
{
  (void)state;
  wl_model g;
  model_of(GPT_T, &g);
  plat_cluster *cl = NULL;
  st_err err;
  st_err_clear(&err);
  assert_int_equal(plat_cluster_load("dgx-h100:1", &cl, &err), 0);
  static const char *const specs[] = {"tp=4,sp=1,pp=2,gbs=4,tp_overlap=1",
                                      "tp=2,sp=1,gbs=4,recompute=selective,dtype=fp8"};
  for (size_t c = 0; c < sizeof specs / sizeof specs[0]; c++) {
    wl_workload *a = gen(&g, specs[c], 8, NULL), *b = NULL;
    char *json = wl_workload_to_json(a, 0);
    assert_non_null(json);
    if (wl_workload_parse(json, strlen(json), "generated", &b, &err)) {
      print_error("%s: %s\n", specs[c], err.msg);
      fail();
    }
    int causal = 0;
    for (int pi = 0; pi < a->num_programs; pi++)
      for (size_t i = 0; i < a->programs[pi].num_ops; i++) {
        const wl_op *x = &a->programs[pi].ops[i], *y = &b->programs[pi].ops[i];
        causal += (x->flags & WL_OPF_CAUSAL) != 0;
        double tx = plat_compute_time(&cl->device, x), ty = plat_compute_time(&cl->device, y);
        if (x->kind == WL_OP_COMPUTE && tx != ty) {
          print_error("%s: op %zu '%s' priced %.17g s as generated, %.17g s from the file\n",
                      specs[c], i, wl_op_name(&a->programs[pi], x), tx, ty);
          fail();
        }
      }
    assert_true(causal > 0);
    free(json);
    wl_workload_destroy(a);
    wl_workload_destroy(b);
  }
  plat_cluster_destroy(cl);
}

/* On the engine: TP=8, PP=2 on two DGX H100 replays to the end, faster with
 * the overlap, and never faster than the compute of its busiest stage
 * (compute ops run one after the other on the compute stream). */
static void test_tp_overlap__replays_faster_on_dgx_h100(void **state)
{
  (void)state;
  static const char BIG[] = "{\"name\":\"gpt-b\",\"layers\":4,\"hidden\":8192,\"heads\":64,"
                            "\"ffn_hidden\":32768,\"ffn_act\":\"gelu\",\"vocab\":32768,"
                            "\"seq_len\":4096,\"tie_embeddings\":true}";
  wl_model m;
  model_of(BIG, &m);
  plat_cluster *cl = NULL;
  st_err err;
  st_err_clear(&err);
  assert_int_equal(plat_cluster_load("dgx-h100:2", &cl, &err), 0);
  double step[2];
  for (int o = 0; o < 2; o++) {
    wl_workload *wl = gen(&m, o ? "tp=8,sp=1,pp=2,gbs=4,tp_overlap=1" : "tp=8,sp=1,pp=2,gbs=4",
                          16, NULL);
    forked_result *f = sim_run_forked(wl, "dgx-h100:2", NULL);
    assert_non_null(f);
    if (f->rc) {
      print_error("tp_overlap=%d: %s\n", o, f->msg);
      fail();
    }
    step[o] = f->step_time_s;
    if (o) {
      /* the ring steps are collectives of the TP communicator, whose NVLink
       * links carry nothing else here: every TP instance has a closed form */
      uint64_t tp_instances = 0, shifts = 0;
      for (int r = 0; r < wl->num_ranks; r++) {
        const wl_program *p = &wl->programs[wl->rank_program[r]];
        for (size_t i = 0; i < p->num_ops; i++) {
          const wl_op *op = &p->ops[i];
          int c = op->kind == WL_OP_COLL ? wl_rank_comm(wl, r, op->role) : -1;
          if (c >= 0 && wl->comms[c].kind == WL_COMM_TP) {
            tp_instances++;
            shifts += op->sub == WL_COLL_SHIFT;
          }
        }
      }
      tp_instances /= 8;
      assert_true(shifts > 0);
      if (f->fast_colls < tp_instances) {
        print_error("%llu closed-form instances, %llu TP instances\n",
                    (unsigned long long)f->fast_colls, (unsigned long long)tp_instances);
        fail();
      }
    }
    forked_result_free(f);
    if (o) {
      double bound = 0;
      for (int pi = 0; pi < wl->num_programs; pi++) {
        const wl_program *p = &wl->programs[pi];
        double sum = 0;
        for (size_t i = 0; i < p->num_ops; i++)
          if (p->ops[i].kind == WL_OP_COMPUTE)
            sum += plat_compute_time(&cl->device, &p->ops[i]);
        bound = fmax(bound, sum);
      }
      if (!(step[1] >= bound)) {
        print_error("tp_overlap=1 step %.6g s below the compute bound %.6g s\n", step[1], bound);
        fail();
      }
    }
    wl_workload_destroy(wl);
  }
  if (!(step[1] < step[0])) {
    print_error("tp_overlap=1 step %.6g s not below tp_overlap=0 %.6g s\n", step[1], step[0]);
    fail();
  }
  plat_cluster_destroy(cl);
}

/* ---- Megatron's pipeline splits ------------------------------------------------------ */
/* NeMo's Llama-3 405B split: account_for_embedding_in_pipeline_split and
 * account_for_loss_in_pipeline_split with pp=8, vpp=8.  Expected counts from
 * Megatron-core's rules, written out here: get_num_layers_to_build gives
 * (126 + 2) / (8 * 8) = 2 layers per virtual stage, one fewer on the first
 * virtual stage of the first stage (the embedding) and on the last virtual
 * stage of the last stage (the loss); get_transformer_layer_offset gives
 * chunk c of stage s the first layer c (128 / 8) + 2 s, minus 1 unless it is
 * virtual stage 0. */
static void test_pipeline__nemo_405b_split_counts_embedding_and_loss(void **state)
{
  (void)state;
  wl_model m;
  model_of("llama3-405b", &m);
  wl_layout l, a;
  st_err err;
  const char *spec = "tp=8,pp=8,vpp=8,cp=2,sp=1,gbs=64,account_embedding=1,account_loss=1";
  assert_int_equal(wl_layout_parse(spec, 1024, &m, &l, &err), 0);
  assert_int_equal(l.dp, 8);
  assert_int_equal(l.vpp, 8);
  for (int vs = 0; vs < 64; vs++)
    assert_int_equal(wl_layout_vstage_layers(&l, vs), 2 - (vs == 0) - (vs == 63));
  assert_int_equal(wl_layout_stage_layers(&l, &m, 0), 15);
  assert_int_equal(wl_layout_stage_layers(&l, &m, 3), 16);
  assert_int_equal(wl_layout_stage_layers(&l, &m, 7), 15);
  /* NeMo's names are the same keys */
  assert_int_equal(wl_layout_parse("tp=8,pp=8,vpp=8,cp=2,sp=1,gbs=64,"
                                   "account_for_embedding_in_pipeline_split=1,"
                                   "account_for_loss_in_pipeline_split=1",
                                   1024, &m, &a, &err),
                   0);
  assert_string_equal(a.spec, l.spec);
  assert_non_null(strstr(l.spec, ",account_embedding=1,account_loss=1"));
  /* the embedding on virtual stage 0 (stage 0's first chunk), the output
   * layer and loss on the last (stage 7's last chunk); every stage runs its
   * chunks' layers (layer markers, forward and backward, 2 x m each), at
   * Megatron's offsets */
  wl_workload *wl = gen(&m, spec, 1024, NULL);
  int per_stage = 1024 / 8, mb = 64 / 8; /* micro-batches: gbs / dp */
  for (int s = 0; s < 8; s++) {
    int r = s * per_stage;
    assert_int_equal(count_ops(wl, r, "emb.lookup"), s == 0 ? mb : 0);
    assert_int_equal(count_ops(wl, r, "out.logits"), s == 7 ? mb : 0);
    int want[126] = {0}, got[126] = {0};
    for (int c = 0; c < 8; c++) {
      int vs = c * 8 + s;
      int count = 2 - (vs == 0) - (vs == 63);
      int first = c * 16 + 2 * s - (vs == 0 ? 0 : 1);
      for (int i = first; i < first + count; i++)
        want[i] = 2 * mb;
    }
    const wl_program *p = &wl->programs[wl->rank_program[r]];
    for (size_t i = 0; i < p->num_ops; i++)
      if (p->ops[i].kind == WL_OP_MARKER && p->ops[i].sub == WL_MARK_LAYER) {
        assert_in_range(p->ops[i].tag, 0, 125);
        got[p->ops[i].tag]++;
      }
    for (int i = 0; i < 126; i++)
      if (got[i] != want[i]) {
        print_error("stage %d: layer %d runs %d times, want %d\n", s, i, got[i], want[i]);
        fail();
      }
  }
  wl_workload_destroy(wl);
}

/* Megatron-core's pipeline_model_parallel_layout strings: stage i of the
 * unrolled string is virtual stage i (chunk i / pp of stage i % pp), its 't'
 * are its transformer layers.  Expected values unrolled by hand. */
static void test_pipeline__layout_strings_follow_megatron(void **state)
{
  (void)state;
  wl_model m;
  model_of("deepseek-v3", &m);
  wl_layout l;
  st_err err;
  /* Megatron-Bridge's DeepSeek-V3 layout for pp=8, vpp=2 (without its MTP
   * layer): E + 4t, 14 x 4t, t + L: 16 stages, vpp = 16 / 8 */
  assert_int_equal(wl_layout_parse("tp=2,pp=8,ep=64,etp=1,sp=1,gbs=256,"
                                   "pp_layout=Et*4|(t*4|)*14tL",
                                   512, &m, &l, &err),
                   0);
  assert_int_equal(l.vpp, 2);
  assert_int_equal(l.schedule, WL_SCHED_INTERLEAVED);
  for (int vs = 0; vs < 16; vs++)
    assert_int_equal(wl_layout_vstage_layers(&l, vs), vs == 15 ? 1 : 4);
  assert_int_equal(wl_layout_stage_layers(&l, &m, 0), 8);
  assert_int_equal(wl_layout_stage_layers(&l, &m, 6), 8);
  assert_int_equal(wl_layout_stage_layers(&l, &m, 7), 5);
  /* the task's "Et|(tt|)*30L": 32 stages, so vpp = 4 with pp = 8: E + t,
   * 30 x tt, L alone */
  assert_int_equal(wl_layout_parse("tp=2,pp=8,ep=64,etp=1,sp=1,gbs=256,pp_layout=Et|(tt|)*30L",
                                   512, &m, &l, &err),
                   0);
  assert_int_equal(l.vpp, 4);
  assert_int_equal(wl_layout_stage_layers(&l, &m, 0), 1 + 2 + 2 + 2);
  assert_int_equal(wl_layout_stage_layers(&l, &m, 7), 2 + 2 + 2 + 0);
  /* PipelineParallelLayerLayout's docstring example without its MTP layer,
   * with the cosmetic comma: "Ettt|(tt|)*29,|L" is E + 3t, 29 x tt, an empty
   * stage, L: 32 stages, vpp = 2 with pp = 16 */
  assert_int_equal(wl_layout_parse("tp=1,pp=16,gbs=16,pp_layout=Ettt|(tt|)*29,|L,zero=0", 16,
                                   &m, &l, &err),
                   0);
  assert_int_equal(l.vpp, 2);
  assert_string_equal(l.pp_layout, "Ettt|(tt|)*29|L");
  assert_int_equal(wl_layout_vstage_layers(&l, 0), 3);
  assert_int_equal(wl_layout_vstage_layers(&l, 29), 2);
  assert_int_equal(wl_layout_vstage_layers(&l, 30), 0);
  assert_int_equal(wl_layout_vstage_layers(&l, 31), 0);
  assert_int_equal(wl_layout_stage_layers(&l, &m, 14), 2 + 0);
  assert_int_equal(wl_layout_stage_layers(&l, &m, 15), 2 + 0);
  /* the canonical spec parses to the same layout */
  wl_layout l2;
  assert_int_equal(wl_layout_parse(l.spec, 16, &m, &l2, &err), 0);
  assert_string_equal(l2.spec, l.spec);
  assert_memory_equal(l2.vs_layers, l.vs_layers, sizeof l.vs_layers);
  /* an empty virtual stage and one with only the loss generate and replay */
  wl_model g;
  model_of(GPT_T, &g);
  wl_workload *wl = gen(&g, "pp=2,gbs=4,pp_layout=Ett|ttt||tttL", 2, NULL);
  forked_result *f = sim_run_forked(wl, "node8", NULL);
  assert_non_null(f);
  if (f->rc) {
    print_error("%s\n", f->msg);
    fail();
  }
  assert_true(f->step_time_s > 0);
  forked_result_free(f);
  wl_workload_destroy(wl);
}

static void test_pipeline__bad_splits_name_the_place(void **state)
{
  (void)state;
  wl_model g;
  model_of(GPT_T, &g);
  static const struct {
    const char *spec;
    int gpus;
    const char *msg;
  } cases[] = {
      {"pp=2,pp_layout=Etttt|ttttX", 2,
       "layout 'pp=2,pp_layout=Etttt|ttttX': pp_layout 'Etttt|ttttX' position 11: 'X' is not a "
       "layer (known: E embedding, t transformer layer, L loss, | stage boundary, (...)*N and "
       "x*N repetitions)"},
      {"pp=2,pp_layout=Etttt|tttmL", 2,
       "layout 'pp=2,pp_layout=Etttt|tttmL': pp_layout 'Etttt|tttmL' position 10: 'm' (a "
       "multi-token-prediction layer) is not modelled"},
      {"pp=2,pp_layout=Etttt|tttt", 2,
       "layout 'pp=2,pp_layout=Etttt|tttt': pp_layout 'Etttt|tttt' has no 'L' (the loss must "
       "close the last stage)"},
      {"pp=2,pp_layout=tEttt|ttttL", 2,
       "layout 'pp=2,pp_layout=tEttt|ttttL': pp_layout 'tEttt|ttttL' position 2: 'E' must open "
       "the first stage (Megatron builds the embedding on virtual stage 0)"},
      {"pp=2,pp_layout=Etttt|ttLtt", 2,
       "layout 'pp=2,pp_layout=Etttt|ttLtt': pp_layout 'Etttt|ttLtt' position 9: 'L' must close "
       "the last stage (Megatron builds the output layer and loss on the last virtual stage)"},
      {"pp=2,pp_layout=Ettt|ttttL", 2,
       "layout 'pp=2,pp_layout=Ettt|ttttL': pp_layout 'Ettt|ttttL' holds 7 transformer layers "
       "'t', but the model has 8"},
      {"pp=2,pp_layout=Et*4|(tttt|L", 2,
       "layout 'pp=2,pp_layout=Et*4|(tttt|L': pp_layout 'Et*4|(tttt|L' position 6: '(' without "
       "its ')'"},
      {"pp=2,pp_layout=Et*4|(tt)tL", 2,
       "layout 'pp=2,pp_layout=Et*4|(tt)tL': pp_layout 'Et*4|(tt)tL' position 9: ')' is not "
       "followed by a repetition count '*N'"},
      {"pp=2,pp_layout=Et*4|((t)*2)*2L", 2,
       "layout 'pp=2,pp_layout=Et*4|((t)*2)*2L': pp_layout 'Et*4|((t)*2)*2L' position 7: '(' "
       "inside '(' at position 6 (groups do not nest)"},
      {"pp=2,pp_layout=E*t4|ttttL", 2,
       "layout 'pp=2,pp_layout=E*t4|ttttL': pp_layout 'E*t4|ttttL' position 2: '*' is not "
       "followed by a repetition count"},
      {"pp=2,pp_layout=Et*4|tttt|L", 2,
       "layout 'pp=2,pp_layout=Et*4|tttt|L': pp_layout 'Et*4|tttt|L' has 3 stages, not "
       "divisible by pp (2)"},
      {"pp=2,vpp=2,gbs=2,pp_layout=Etttt|ttttL", 2,
       "layout 'pp=2,vpp=2,gbs=2,pp_layout=Etttt|ttttL': pp_layout 'Etttt|ttttL' has 2 stages, "
       "but pp*vpp = 2*2 = 4"},
      {"pp=2,pp_layout=Etttt|ttttL,account_loss=1", 2,
       "layout 'pp=2,pp_layout=Etttt|ttttL,account_loss=1': pp_layout cannot be combined with "
       "first_stage_layers, last_stage_layers, account_embedding or account_loss (Megatron-core: "
       "the layout says it all)"},
      {"pp=2,first_stage_layers=3,account_embedding=1", 2,
       "layout 'pp=2,first_stage_layers=3,account_embedding=1': first_stage_layers/"
       "last_stage_layers cannot be combined with account_embedding or account_loss "
       "(Megatron-core rejects the combination)"},
      {"pp=4,account_embedding=1", 4,
       "layout 'pp=4,account_embedding=1': layers (8) + embedding (1) + loss (0) = 9 not "
       "divisible by pp*vpp = 4*1 = 4"},
      {"pp=2,account_loss=2", 2, "layout 'pp=2,account_loss=2': key 'account_loss' is 2 (must be 0 or 1)"},
      {"pp=2,account_loss=1,account_for_loss_in_pipeline_split=1", 2,
       "layout 'pp=2,account_loss=1,account_for_loss_in_pipeline_split=1': key 'account_loss' "
       "is given twice"},
      {"pp=2,pp_layout=", 2, "layout 'pp=2,pp_layout=': key 'pp_layout' is empty"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_layout l;
    st_err err;
    st_err_clear(&err);
    int rc = wl_layout_parse(cases[i].spec, cases[i].gpus, &g, &l, &err);
    if (rc != ST_EINPUT || strcmp(err.msg, cases[i].msg)) {
      print_error("case %zu '%s': rc %d, message\n  got:  %s\n  want: %s\n", i, cases[i].spec,
                  rc, err.msg, cases[i].msg);
      fail();
    }
  }
}

/* Keys at their defaults (etp = tp, no accounting) and a layout string that
 * spells the even split give the workload of the plain layout byte for byte
 * (but for the layout spec the meta records). */
static void test_pipeline__defaults_spelt_out_keep_the_workload(void **state)
{
  (void)state;
  wl_model g, x;
  model_of(GPT_T, &g);
  model_of(MOE_T, &x);
  static const struct {
    int moe;
    const char *plain, *spelt;
    int gpus;
  } cases[] = {
      {1, "tp=2,sp=1,ep=2,pp=2,gbs=4", "tp=2,sp=1,ep=2,pp=2,gbs=4,etp=2,account_embedding=0", 8},
      {0, "pp=2,gbs=4", "pp=2,gbs=4,pp_layout=Etttt|ttttL", 2},
      {0, "tp=2,pp=2,vpp=2,gbs=4", "tp=2,pp=2,gbs=4,pp_layout=Ett|(tt|)*2ttL,account_loss=0", 4},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const wl_model *m = cases[i].moe ? &x : &g;
    wl_workload *a = gen(m, cases[i].plain, cases[i].gpus, NULL);
    wl_workload *b = gen(m, cases[i].spelt, cases[i].gpus, NULL);
    wl_meta_set_str(&b->meta.layout, a->meta.layout);
    char *ja = wl_workload_to_json(a, 0), *jb = wl_workload_to_json(b, 0);
    assert_non_null(ja);
    assert_non_null(jb);
    if (strcmp(ja, jb)) {
      print_error("'%s' and '%s' give different workloads\n", cases[i].plain, cases[i].spelt);
      fail();
    }
    free(ja);
    free(jb);
    wl_workload_destroy(a);
    wl_workload_destroy(b);
  }
}

/* ---- MoE parallel folding ------------------------------------------------------------ */
static int role_of(const wl_workload *wl, const char *name)
{
  for (int i = 0; i < wl->num_roles; i++)
    if (!strcmp(wl->roles[i], name))
      return i;
  return -1;
}

/* The members, in order, of the communicator that plays `role` for `rank`
 * against a list (n = 0: the role is not played). */
static void check_group(const wl_workload *wl, int rank, const char *role, const int *want,
                        int n, const char *what)
{
  int ri = role_of(wl, role);
  int c = ri >= 0 ? wl_rank_comm(wl, rank, ri) : -1;
  if (n == 0) {
    if (c >= 0) {
      print_error("%s: rank %d plays '%s' (%s)\n", what, rank, role, wl->comms[c].name);
      fail();
    }
    return;
  }
  if (c < 0) {
    print_error("%s: rank %d has no '%s'\n", what, rank, role);
    fail();
  }
  const wl_comm *cm = &wl->comms[c];
  int same = cm->size == n;
  for (int i = 0; same && i < n; i++)
    same = cm->ranks[i] == want[i];
  if (!same) {
    print_error("%s: rank %d '%s' is %s of %d ranks, first %d\n", what, rank, role, cm->name,
                cm->size, cm->ranks[0]);
    fail();
  }
}

/* Expert groups against Megatron-core's RankGenerator, computed by hand with
 * generate_masked_orthogonal_rank_groups on the expert order tp-ep-dp-pp
 * (sizes etp, ep, edp, pp): global strides 1, etp, etp ep, etp ep edp; the EP
 * group of (etp rank a, edp rank x, stage p) is a + etp (e + ep x) + 8p for
 * e = 0..ep-1, the expert-DP group the same over x, the expert-TP group over
 * a.  The dense groups keep tp-cp-dp-pp. */
static void test_experts__groups_follow_megatron_rank_generator(void **state)
{
  (void)state;
  wl_model x;
  model_of(MOE_T, &x);
  wl_layout l;
  /* tp=2, dp=4, pp=2, ep=4, etp=1: edp = 2*1*4 / (1*4) = 2 */
  wl_workload *wl = gen(&x, "tp=2,sp=1,pp=2,ep=4,etp=1,gbs=8", 16, &l);
  assert_int_equal(l.edp, 2);
  assert_non_null(strstr(l.spec, ",etp=1"));
  {
    static const int ep0[] = {0, 1, 2, 3}, ep5[] = {4, 5, 6, 7}, ep9[] = {8, 9, 10, 11};
    static const int edp0[] = {0, 4}, edp6[] = {2, 6}, edp13[] = {9, 13};
    static const int tp5[] = {4, 5}, dp5[] = {1, 3, 5, 7};
    check_group(wl, 0, "ep", ep0, 4, "etp=1");
    check_group(wl, 5, "ep", ep5, 4, "etp=1");
    check_group(wl, 9, "ep", ep9, 4, "etp=1");
    check_group(wl, 0, "dp_expert", edp0, 2, "etp=1");
    check_group(wl, 6, "dp_expert", edp6, 2, "etp=1");
    check_group(wl, 13, "dp_expert", edp13, 2, "etp=1");
    check_group(wl, 5, "tp", tp5, 2, "etp=1");
    check_group(wl, 5, "dp", dp5, 4, "etp=1");
    check_group(wl, 5, "etp", NULL, 0, "etp=1"); /* one rank: no communicator */
  }
  /* no expert-TP collectives with etp = 1; the all-to-all on the EP group */
  assert_int_equal(count_ops(wl, 0, "moe.tp.ag"), 0);
  assert_true(count_ops(wl, 0, "ep.dispatch") > 0);
  /* folding moves work between ranks, not the job's model FLOPs: those of
   * the etp = tp layout (checked against 6 N T + attention above) */
  wl_workload *ref = gen(&x, "tp=2,sp=1,pp=2,ep=2,gbs=8", 16, NULL);
  check_rel(wl->meta.model_flops_per_step, ref->meta.model_flops_per_step, 1e-12,
            "model FLOPs with etp=1, ep=4");
  wl_workload_destroy(ref);
  wl_workload_destroy(wl);

  /* ep = 8 > dp = 4: the EP group spans the stage's TP ranks too (edp = 1) */
  wl = gen(&x, "tp=2,sp=1,pp=2,ep=8,etp=1,gbs=8", 16, &l);
  assert_int_equal(l.edp, 1);
  {
    static const int ep3[] = {0, 1, 2, 3, 4, 5, 6, 7}, ep12[] = {8, 9, 10, 11, 12, 13, 14, 15};
    check_group(wl, 3, "ep", ep3, 8, "ep=8");
    check_group(wl, 12, "ep", ep12, 8, "ep=8");
    check_group(wl, 3, "dp_expert", NULL, 0, "ep=8");
  }
  wl_workload_destroy(wl);

  /* etp = 2 < tp = 4 (dp = 2, one stage): expert grid etp 2 x ep 4 x edp 1;
   * the expert-TP groups are pairs, not the TP group */
  wl = gen(&x, "tp=4,sp=1,ep=4,etp=2,gbs=2", 8, &l);
  assert_int_equal(l.edp, 1);
  {
    static const int etp6[] = {6, 7}, ep2[] = {0, 2, 4, 6}, ep5[] = {1, 3, 5, 7};
    static const int tp6[] = {4, 5, 6, 7};
    check_group(wl, 6, "etp", etp6, 2, "etp=2");
    check_group(wl, 2, "ep", ep2, 4, "etp=2");
    check_group(wl, 5, "ep", ep5, 4, "etp=2");
    check_group(wl, 6, "tp", tp6, 4, "etp=2");
  }
  /* the gather of the received tokens is on the expert-TP group: T/tp own
   * tokens x etp x top_k, h values of 2 bytes, per MoE layer (4) and
   * micro-batch (1) */
  double tokens = 1024.0 / 4 * 2 * 2;
  int ri = role_of(wl, "etp");
  const wl_program *p = &wl->programs[wl->rank_program[6]];
  double ag = 0;
  for (size_t i = 0; i < p->num_ops; i++)
    if (!strcmp(wl_op_name(p, &p->ops[i]), "moe.tp.ag")) {
      assert_int_equal(p->ops[i].role, ri);
      ag += p->ops[i].bytes;
    }
  check_rel(ag, 4 * tokens * 1024 * 2, 1e-12, "expert-TP all-gather bytes");
  wl_workload_destroy(wl);
}

/* Expert gradients are reduced over the expert-DP group, as the DP path does
 * (all-reduce with zero=0, reduce-scatter + parameter all-gather with the
 * distributed optimizer); the memory model shards expert weights by etp x ep
 * and their optimizer state over edp.  MOE_T: h = 1024, 8 experts of
 * swiglu width 1024 (3 h f parameters each), 4 MoE layers, 2 per stage. */
static void test_experts__gradients_and_memory_follow_the_expert_groups(void **state)
{
  (void)state;
  wl_model x;
  model_of(MOE_T, &x);
  const double h = 1024, f = 1024;
  /* tp=2, dp=4, pp=2, ep=4, etp=1: 8/4 = 2 experts per rank, unsharded by
   * TP: 2 x 3 h f per layer, 2 layers on the stage */
  double expert = 2 * 2 * 3 * h * f;
  for (int zero = 0; zero <= 1; zero++) {
    char spec[96];
    snprintf(spec, sizeof spec, "tp=2,sp=1,pp=2,ep=4,etp=1,gbs=8,zero=%d", zero);
    wl_layout l;
    wl_workload *wl = gen(&x, spec, 16, &l);
    const char *red = zero ? "dp_expert.grad.rs" : "dp_expert.grad.ar";
    check_rel(named_bytes(wl, 0, red), 4 * expert, 1e-12, red);
    if (zero)
      check_rel(named_bytes(wl, 0, "dp_expert.param.ag"), 2 * expert, 1e-12, "param ag");
    int ri = role_of(wl, "dp_expert");
    const wl_program *p = &wl->programs[wl->rank_program[0]];
    for (size_t i = 0; i < p->num_ops; i++)
      if (!strcmp(wl_op_name(p, &p->ops[i]), red))
        assert_int_equal(p->ops[i].role, ri);
    wl_workload_destroy(wl);

    /* memory of stage 0: dense = 2 layers x (attention + router + norm) +
     * embedding; attention: QKV (q 1024 + 2 kv 256 columns) and projection
     * over tp 2, norm h; router h x 8 + norm h; embedding V/tp x h */
    double attn = (h * (1024 + 2 * 256) + 1024 * h) / 2 + h;
    double dense = 2 * (attn + h * 8 + h) + 32768.0 / 2 * h;
    wl_memory mem;
    st_err err;
    assert_int_equal(wl_memory_estimate(&x, &l, &mem, &err), 0);
    const wl_memory_stage *st = &mem.stages[0];
    check_rel(st->params, dense + expert, 1e-12, "stage 0 parameters");
    check_rel(st->weights_bytes, 2 * (dense + expert), 1e-12, "weights");
    /* distributed optimizer: 12 bytes per parameter over dp x cp = 4 ranks
     * for dense, over edp = 2*4 / (1*4) = 2 for experts */
    double opt = zero ? 12 * (dense / 4 + expert / 2) : 12 * (dense + expert);
    check_rel(st->optimizer_bytes, opt, 1e-12, "optimizer");
  }
}

/* Layer markers (forward phase) before each op named `name`, in order. */
static int markers_before(const wl_workload *wl, const char *name, int *out, int max)
{
  const wl_program *p = &wl->programs[0];
  int nmk = 0, n = 0;
  for (size_t i = 0; i < p->num_ops; i++) {
    const wl_op *o = &p->ops[i];
    if (o->kind == WL_OP_MARKER && o->sub == WL_MARK_LAYER && o->phase == WL_PHASE_FORWARD)
      nmk++;
    else if (!strcmp(wl_op_name(p, o), name) && n < max)
      out[n++] = nmk;
  }
  return n;
}

/* ZeRO-3 as the frameworks run it, on GPT_T (8 layers of P = 12h^2 + 13h =
 * 12,596,224 parameters, h = 1024) over dp = 2, one micro-batch. */
static void test_dp_impl__op_structure_by_hand(void **state)
{
  (void)state;
  wl_model m;
  model_of(GPT_T, &m);
  wl_layout lo;
  const double P = 12.0 * 1024 * 1024 + 13 * 1024, W = 12.0 * 1024 * 1024;
  /* FSDP1: one gather per layer each way, two in flight: the gather of
   * layer k >= 2 follows the forward of layer k - 2 */
  wl_workload *wl = gen(&m, "zero=3,dp=2,gbs=2,dp_impl=fsdp", 2, &lo);
  assert_int_equal(count_ops(wl, 0, "fsdp.ag"), 8);
  assert_int_equal(count_ops(wl, 0, "fsdp.ag.bwd"), 8);
  assert_int_equal(count_ops(wl, 0, "fsdp.rs"), 8);
  assert_int_equal(count_ops(wl, 0, "fsdp.hook"), 8);
  assert_int_equal(count_ops(wl, 0, "fsdp.rs.cast"), 0); /* reduce in bf16 (param dtype) */
  check_rel(named_bytes(wl, 0, "fsdp.ag"), 8 * P * 2, 1e-12, "fsdp ag bytes");
  check_rel(named_bytes(wl, 0, "fsdp.rs"), 8 * P * 2, 1e-12, "fsdp rs bytes");
  int mk[16], want1[8] = {0, 0, 1, 2, 3, 4, 5, 6};
  assert_int_equal(markers_before(wl, "fsdp.ag", mk, 16), 8);
  for (int i = 0; i < 8; i++)
    assert_int_equal(mk[i], want1[i]);
  /* 16 tensors per GPT layer (q k v o, 3 + 1 biases, 2 LayerNorms x 2,
   * fc1 fc2 and their biases) x 20.2 us */
  const wl_program *p = &wl->programs[0];
  for (size_t i = 0; i < p->num_ops; i++)
    if (!strcmp(wl_op_name(p, &p->ops[i]), "fsdp.hook")) {
      check_rel(p->ops[i].duration_s, 16 * 20.2e-6, 1e-12, "fsdp hook");
      assert_string_equal(p->stream_names[p->ops[i].stream], "host");
    }
  wl_workload_destroy(wl);
  /* _reduce_grad's default path over 2 ranks: predivide factor 2, so the
   * unsharded gradient of every unit (the 8 layers and the root: the tied
   * embedding, the positions, the final norm) is read and written once; no
   * postdivide (2 / 2 = 1), no accumulation in one micro-batch */
  const double Proot = 32768.0 * 1024 + 1024.0 * 1024 + 2 * 1024;
  wl = gen(&m, "zero=3,dp=2,gbs=2,dp_impl=fsdp", 2, &lo);
  check_rel(named_bytes(wl, 0, "fsdp.rs.divide"), (8 * P + Proot) * 2 * 2, 1e-12,
            "fsdp predivide bytes");
  wl_workload_destroy(wl);
  wl = gen(&m, "zero=3,dp=2,gbs=2,dp_impl=fsdp,grad_dtype=fp32", 2, &lo);
  assert_int_equal(count_ops(wl, 0, "fsdp.rs.cast"), 9); /* the layers and the root */
  check_rel(named_bytes(wl, 0, "fsdp.rs.cast"), (8 * P + Proot) * (2 + 4), 1e-12,
            "fsdp cast bytes");
  check_rel(named_bytes(wl, 0, "fsdp.rs"), 8 * P * 4, 1e-12, "fsdp rs fp32 bytes");
  wl_workload_destroy(wl);
  /* over 8 ranks, two micro-batches, fp32: predivide 4 (8 % 4 = 0, 8 / 4 = 2
   * not > 4), the shard divided by 2: per unit and micro-batch 2 x 4 P
   * + 2 x 4 P / 8 bytes, and the second micro-batch's shard added to the
   * first's, 3 x 4 P / 8: 19.5 bytes a parameter in all */
  wl = gen(&m, "zero=3,dp=8,gbs=16,dp_impl=fsdp,grad_dtype=fp32", 8, &lo);
  check_rel(named_bytes(wl, 0, "fsdp.rs.divide"), (8 * P + Proot) * 19.5, 1e-12,
            "fsdp divide bytes, 8 ranks");
  wl_workload_destroy(wl);
  /* FSDP2: copy-out of every gather (read + write), the next layer's gather
   * after this layer's copy-out; every unit's reduce-scatter input copied
   * in (foreach_reduce), the 8 layers' and the root's (read 2, write 2) */
  wl = gen(&m, "zero=3,dp=2,gbs=2,dp_impl=fsdp2", 2, &lo);
  assert_int_equal(count_ops(wl, 0, "fsdp.ag"), 8);
  assert_int_equal(count_ops(wl, 0, "fsdp2.ag.copy_out"), 16);
  check_rel(named_bytes(wl, 0, "fsdp2.ag.copy_out"), 16 * P * 4, 1e-12, "copy-out bytes");
  assert_int_equal(count_ops(wl, 0, "fsdp2.rs.copy_in"), 9);
  check_rel(named_bytes(wl, 0, "fsdp2.rs.copy_in"), (8 * P + Proot) * 4, 1e-12,
            "copy-in bytes");
  assert_int_equal(markers_before(wl, "fsdp.ag", mk, 16), 8);
  for (int i = 0; i < 8; i++)
    assert_int_equal(mk[i], want1[i]);
  assert_int_equal(count_ops(wl, 0, "fsdp.hook"), 0);
  wl_workload_destroy(wl);
  /* DeepSpeed: four sub-module fetches per layer (QKV 3h^2, out h^2, fc1
   * 4h^2, fc2 4h^2; the biases and norms, under 1e5 elements, persist); the
   * whole model is within max_reuse_distance (2 x 7 x 12.6M < 1e9), so
   * backward fetches nothing; one reduce bucket (135 M < 5e8 elements) of
   * the layers and the root (embedding 32768 h + positions 1024 h, final
   * LayerNorm 2h), in bf16 */
  wl = gen(&m, "zero=3,dp=2,gbs=2,dp_impl=deepspeed", 2, &lo);
  assert_int_equal(count_ops(wl, 0, "ds.ag"), 32);
  assert_int_equal(count_ops(wl, 0, "ds.ag.bwd"), 0);
  check_rel(named_bytes(wl, 0, "ds.ag"), 8 * W * 2, 1e-12, "ds ag bytes");
  assert_int_equal(count_ops(wl, 0, "ds.grad.rs"), 1);
  double root = 33792.0 * 1024 + 2 * 1024;
  check_rel(named_bytes(wl, 0, "ds.grad.rs"), (8 * P + root) * 2, 1e-12, "ds rs bytes");
  assert_int_equal(count_ops(wl, 0, "ds.grad_norm.ar"), 1);
  assert_int_equal(count_ops(wl, 0, "ds.overflow.ar"), 0);
  wl_workload_destroy(wl);
  wl = gen(&m, "zero=3,dp=2,gbs=2,dp_impl=deepspeed,dtype=fp16", 2, &lo);
  assert_int_equal(count_ops(wl, 0, "ds.overflow.ar"), 1);
  wl_workload_destroy(wl);
}

/* FSDP2 under a pipeline (torch.distributed.pipelining with fully_shard and
 * torchtitan's reshard_after_forward=False): the stage's layers gathered in
 * its first forward only, none in backward, the gradients accumulated
 * unsharded every backward and reduce-scattered once after the last; the
 * memory holds the stage's gathered parameters and its fp32 accumulator. */
static void test_dp_impl__fsdp2_pipeline_by_hand(void **state)
{
  (void)state;
  wl_model m;
  model_of(GPT_T, &m);
  wl_layout lo;
  st_err err;
  const double P = 12.0 * 1024 * 1024 + 13 * 1024; /* one layer */
  const double E = 33792.0 * 1024;                 /* the embedding and positions */
  /* 2 stages of 4 layers, dp 2, 4 micro-batches of one sequence */
  wl_workload *wl = gen(&m, "pp=2,dp=2,mbs=1,gbs=8,zero=3,dp_impl=fsdp2,grad_dtype=fp32", 4, &lo);
  assert_int_equal(count_ops(wl, 0, "fsdp.ag"), 4);
  check_rel(named_bytes(wl, 0, "fsdp.ag"), 4 * P * 2, 1e-12, "pp gathers");
  assert_int_equal(count_ops(wl, 0, "fsdp.ag.bwd"), 0);
  assert_int_equal(count_ops(wl, 0, "fsdp.ag.root"), 1);
  check_rel(named_bytes(wl, 0, "fsdp.ag.root"), E * 2, 1e-12, "root gather");
  assert_int_equal(count_ops(wl, 0, "fsdp2.ag.copy_out"), 4);
  /* every backward: 4 layers and the root; the first casts bf16 to fp32
   * (2 + 4 B), the other three add into the accumulator (2 + 4 + 4 B) */
  assert_int_equal(count_ops(wl, 0, "fsdp2.grad.acc"), 4 * 5);
  check_rel(named_bytes(wl, 0, "fsdp2.grad.acc"), (4 * P + E) * (6 + 3 * 10), 1e-12,
            "accumulation");
  assert_int_equal(count_ops(wl, 0, "fsdp.rs"), 4);
  check_rel(named_bytes(wl, 0, "fsdp.rs"), 4 * P * 4, 1e-12, "pp reduce-scatters");
  assert_int_equal(count_ops(wl, 0, "fsdp.rs.root"), 1);
  check_rel(named_bytes(wl, 0, "fsdp.rs.root"), E * 4, 1e-12, "root reduce-scatter");
  assert_int_equal(count_ops(wl, 0, "fsdp2.rs.copy_in"), 5);
  check_rel(named_bytes(wl, 0, "fsdp2.rs.copy_in"), (4 * P + E) * 8, 1e-12, "copy-in");
  /* the last stage: no embedding; its root is the final norm and the output
   * layer (tied, so a copy of the embedding's vocabulary rows) */
  int last = 2; /* rank of stage 1 (rank = dp + 2 pp) */
  const double O = 32768.0 * 1024 + 2 * 1024;
  assert_int_equal(count_ops(wl, last, "fsdp.ag"), 4);
  check_rel(named_bytes(wl, last, "fsdp.ag.root"), O * 2, 1e-12, "last root gather");
  check_rel(named_bytes(wl, last, "fsdp.rs.root"), O * 4, 1e-12, "last root reduce-scatter");
  wl_workload_destroy(wl);
  /* memory of stage 0 (S parameters): the fp32 shard and the gathered bf16
   * layers, 4 S / 2 + 2 S; the sharded fp32 gradient and the fp32
   * accumulator, 4 S / 2 + 4 S; Adam's moments of the shard, 8 S / 2 */
  wl_memory mem;
  assert_int_equal(wl_layout_parse("pp=2,dp=2,mbs=1,gbs=8,zero=3,dp_impl=fsdp2,grad_dtype=fp32",
                                   4, &m, &lo, &err), ST_OK);
  assert_int_equal(wl_memory_estimate(&m, &lo, &mem, &err), ST_OK);
  double S = 4 * P + E;
  check_rel(mem.stages[0].weights_bytes, 4 * S, 1e-12, "pp weights");
  check_rel(mem.stages[0].grads_bytes, 6 * S, 1e-12, "pp grads");
  check_rel(mem.stages[0].optimizer_bytes, 4 * S, 1e-12, "pp optimizer");
}

/* FSDP2 with reshard_after_forward=0 (torchtitan's fsdp_reshard_after_forward
 * "never", ZeRO-2's communication): each layer gathered in forward only, kept
 * to its backward (no backward gathers or copy-outs), its gradient
 * reduce-scattered as with 1; memory holds every layer gathered when the
 * backward starts, 8 layers against the default's 3 (2 B a parameter). */
static void test_dp_impl__fsdp2_no_reshard_by_hand(void **state)
{
  (void)state;
  wl_model m;
  model_of(GPT_T, &m);
  wl_layout lo;
  st_err err;
  const double P = 12.0 * 1024 * 1024 + 13 * 1024;
  wl_workload *wl = gen(&m, "zero=3,dp=2,gbs=2,dp_impl=fsdp2,reshard_after_forward=0", 2, &lo);
  assert_string_equal(lo.spec + strlen(lo.spec) - strlen(",reshard_after_forward=0"),
                      ",reshard_after_forward=0");
  assert_int_equal(count_ops(wl, 0, "fsdp.ag"), 8);
  assert_int_equal(count_ops(wl, 0, "fsdp.ag.bwd"), 0);
  assert_int_equal(count_ops(wl, 0, "fsdp2.ag.copy_out"), 8);
  assert_int_equal(count_ops(wl, 0, "fsdp.rs"), 8);
  wl_workload_destroy(wl);
  wl = gen(&m, "zero=3,dp=2,gbs=2,dp_impl=fsdp2", 2, &lo);
  assert_int_equal(count_ops(wl, 0, "fsdp.ag.bwd"), 8);
  wl_workload_destroy(wl);
  wl_memory a, b;
  assert_int_equal(wl_layout_parse("zero=3,dp=2,gbs=2,dp_impl=fsdp2", 2, &m, &lo, &err), ST_OK);
  assert_int_equal(wl_memory_estimate(&m, &lo, &a, &err), ST_OK);
  assert_int_equal(wl_layout_parse("zero=3,dp=2,gbs=2,dp_impl=fsdp2,reshard_after_forward=0", 2,
                                   &m, &lo, &err), ST_OK);
  assert_int_equal(wl_memory_estimate(&m, &lo, &b, &err), ST_OK);
  check_rel(b.stages[0].other_bytes - a.stages[0].other_bytes, (8 - 3) * P * 2, 1e-12,
            "gathered layers");
}

/* The PyTorch frameworks' sequence parallelism shards [b, s, h] on dim 1:
 * torch's functional collectives copy the whole [T, h] tensor after each
 * all-gather and before each reduce-scatter (chunk + cat); Megatron's
 * [s, b, h] needs none, nor AsyncTP's fused ops (tp_overlap).  Per layer:
 * forward 2 gathers (attention and MLP inputs) and 2 reduce-scatters
 * (their outputs), backward the same two pairs reversed; the embedding's
 * reduce-scatter and its backward's gather, the output layer's gather and
 * its backward's reduce-scatter: 8 x 4 + 2 of each, T h values read and
 * written each. */
static void test_dp_impl__sp_relayout_by_hand(void **state)
{
  (void)state;
  wl_model m;
  model_of(GPT_T, &m);
  wl_layout lo;
  const double TH = 1024.0 * 1024; /* T = 1,024 tokens, h = 1,024 */
  wl_workload *wl = gen(&m, "tp=2,sp=1,dp=2,gbs=2,zero=3,dp_impl=fsdp2", 4, &lo);
  assert_int_equal(count_ops(wl, 0, "tp.ag.cat"), 34);
  assert_int_equal(count_ops(wl, 0, "tp.rs.cat"), 34);
  check_rel(named_bytes(wl, 0, "tp.ag.cat"), 34 * TH * 2 * 2, 1e-12, "gather re-layout");
  check_rel(named_bytes(wl, 0, "tp.rs.cat"), 34 * TH * 2 * 2, 1e-12, "scatter re-layout");
  wl_workload_destroy(wl);
  const char *none[] = {"tp=2,sp=1,dp=2,gbs=2",
                        "tp=2,sp=1,dp=2,gbs=2,zero=3,dp_impl=fsdp2,tp_overlap=1",
                        "tp=2,sp=0,dp=2,gbs=2,zero=3,dp_impl=fsdp2"};
  for (int i = 0; i < 3; i++) {
    wl = gen(&m, none[i], 4, &lo);
    assert_int_equal(count_ops(wl, 0, "tp.ag.cat") + count_ops(wl, 0, "tp.rs.cat"), 0);
    wl_workload_destroy(wl);
  }
}

/* The largest `concurrent` of the ops named `name` on a rank. */
static int max_concurrent(const wl_workload *wl, int rank, const char *name)
{
  const wl_program *p = &wl->programs[wl->rank_program[rank]];
  int c = 0;
  for (size_t i = 0; i < p->num_ops; i++)
    if (!strcmp(wl_op_name(p, &p->ops[i]), name) && p->ops[i].concurrent > c)
      c = p->ops[i].concurrent;
  return c;
}

/* tp_overlap under the PyTorch frameworks is torchtitan's AsyncTP: the
 * shard matmuls alternate on two streams (two chunks share the waves, where
 * Transformer Engine's three streams let all tp share them), and the
 * matmul + reduce-scatter runs tp chunks (TE's pipeline method 4) and ends
 * in the sum of the tp partials: per layer 2 (attention output, fc2), each
 * reading [T, h] and writing [T/tp, h]. */
static void test_dp_impl__async_tp_by_hand(void **state)
{
  (void)state;
  wl_model m;
  model_of(GPT_T, &m);
  wl_layout lo;
  const double TH = 1024.0 * 1024;
  wl_workload *wl = gen(&m, "tp=4,sp=1,dp=2,gbs=2,zero=3,dp_impl=fsdp2,tp_overlap=1", 8, &lo);
  assert_int_equal(max_concurrent(wl, 0, "qkv"), 2);
  assert_int_equal(count_ops(wl, 0, "tp.rs.sum"), 16);
  check_rel(named_bytes(wl, 0, "tp.rs.sum"), 16 * TH * (1 + 0.25) * 2, 1e-12, "partials' sum");
  wl_workload_destroy(wl);
  wl = gen(&m, "tp=4,sp=1,dp=2,gbs=2,tp_overlap=1", 8, &lo); /* Megatron's, TE's overlap */
  assert_int_equal(max_concurrent(wl, 0, "qkv"), 4);
  assert_int_equal(count_ops(wl, 0, "tp.rs.sum"), 0);
  wl_workload_destroy(wl);
  /* the row-parallel GEMM's chunks: tp = 2 of them under AsyncTP, TE's 4 */
  wl = gen(&m, "tp=2,sp=1,dp=2,gbs=2,zero=3,dp_impl=fsdp2,tp_overlap=1", 4, &lo);
  assert_int_equal(count_ops(wl, 0, "proj"), 8 * 2);
  wl_workload_destroy(wl);
  wl = gen(&m, "tp=2,sp=1,dp=2,gbs=2,tp_overlap=1", 4, &lo);
  assert_int_equal(count_ops(wl, 0, "proj"), 8 * 4);
  wl_workload_destroy(wl);
}

/* Memory: the live parameters each implementation holds, by hand. */
static void test_dp_impl__memory_by_hand(void **state)
{
  (void)state;
  wl_model m;
  model_of(GPT_T, &m);
  wl_layout lo;
  wl_memory a, b;
  st_err err;
  const double P = 12.0 * 1024 * 1024 + 13 * 1024;
  /* and the frameworks' cross entropy, F.cross_entropy on fp32 logits, holds
   * 8 B a logit beyond what it keeps against Megatron-core's 2: 1,024
   * tokens of 32,768 logits */
  const double CE = 6.0 * 1024 * 32768;
  assert_int_equal(wl_layout_parse("zero=3,dp=2,gbs=2", 2, &m, &lo, &err), ST_OK);
  assert_int_equal(wl_memory_estimate(&m, &lo, &a, &err), ST_OK);
  /* FSDP1 in bf16, reduce in fp32: + one unit's bf16 gradient and its fp32 copy */
  assert_int_equal(wl_layout_parse("zero=3,dp=2,gbs=2,dp_impl=fsdp,grad_dtype=fp32", 2, &m, &lo,
                                   &err), ST_OK);
  assert_int_equal(wl_memory_estimate(&m, &lo, &b, &err), ST_OK);
  check_rel(b.stages[0].other_bytes - a.stages[0].other_bytes, P * (2 + 4) + CE, 1e-12,
            "fsdp");
  /* FSDP2: + the all-gather output (2P) and the bf16 gradient + fp32 copy-in */
  assert_int_equal(wl_layout_parse("zero=3,dp=2,gbs=2,dp_impl=fsdp2,grad_dtype=fp32", 2, &m, &lo,
                                   &err), ST_OK);
  assert_int_equal(wl_memory_estimate(&m, &lo, &b, &err), ST_OK);
  check_rel(b.stages[0].other_bytes - a.stages[0].other_bytes, P * 2 + P * (2 + 4) + CE, 1e-12,
            "fsdp2");
  /* DeepSpeed: all 8 layers kept (+1 prefetched) in bf16, the root, a
   * 5e8-element bf16 reduce bucket (against 2 layers + root) */
  assert_int_equal(wl_layout_parse("zero=3,dp=2,gbs=2,dp_impl=deepspeed", 2, &m, &lo, &err),
                   ST_OK);
  assert_int_equal(wl_memory_estimate(&m, &lo, &b, &err), ST_OK);
  check_rel(b.stages[0].other_bytes - a.stages[0].other_bytes,
            9 * P * 2 + 5e8 * 2 - 2 * P * 2 + CE, 1e-12, "deepspeed");
}


/* Bytes of one rank's ops whose names start with `pre`, and their count. */
static double prefix_bytes(const wl_workload *wl, int rank, const char *pre, int *n)
{
  const wl_program *p = &wl->programs[wl->rank_program[rank]];
  double sum = 0;
  size_t k = strlen(pre);
  *n = 0;
  for (size_t i = 0; i < p->num_ops; i++)
    if (!strncmp(wl_op_name(p, &p->ops[i]), pre, k)) {
      sum += p->ops[i].bytes;
      (*n)++;
    }
  return sum;
}

/* FSDP1's backward_prefetch (GPT_T, 8 layers, dp = 2, one micro-batch): the
 * backward gathers ("A") and reduce-scatters ("R") in issue order, and the
 * backward layer markers before each gather.  BACKWARD_PRE: the top unit's
 * hook gathers it and the next, then each unit's reduce-scatter is followed
 * by the gather two below; BACKWARD_POST: each unit's gather right after the
 * unit above computed its gradient, ahead of that unit's reduce-scatter;
 * none: after it. */
static void test_dp_impl__backward_prefetch_orders_the_gathers(void **state)
{
  (void)state;
  wl_model m;
  model_of(GPT_T, &m);
  static const struct {
    const char *spec, *order;
    int mk[8];
  } c[] = {
      {"zero=3,dp=2,gbs=2,dp_impl=fsdp", "AARARARARARARARR", {0, 0, 1, 2, 3, 4, 5, 6}},
      {"zero=3,dp=2,gbs=2,dp_impl=fsdp,backward_prefetch=pre", "AARARARARARARARR",
       {0, 0, 1, 2, 3, 4, 5, 6}},
      {"zero=3,dp=2,gbs=2,dp_impl=fsdp,backward_prefetch=post", "AARARARARARARARR",
       {0, 1, 2, 3, 4, 5, 6, 7}},
      {"zero=3,dp=2,gbs=2,dp_impl=fsdp,backward_prefetch=none", "ARARARARARARARAR",
       {0, 1, 2, 3, 4, 5, 6, 7}},
  };
  for (size_t t = 0; t < sizeof c / sizeof c[0]; t++) {
    wl_layout lo;
    wl_workload *wl = gen(&m, c[t].spec, 2, &lo);
    const wl_program *p = &wl->programs[0];
    char order[64] = "";
    int nmk = 0, na = 0, mk[16];
    size_t n = 0;
    for (size_t i = 0; i < p->num_ops && n < sizeof order - 1; i++) {
      const wl_op *o = &p->ops[i];
      const char *nm = wl_op_name(p, o);
      if (o->kind == WL_OP_MARKER && o->sub == WL_MARK_LAYER && o->phase == WL_PHASE_BACKWARD)
        nmk++;
      else if (!strcmp(nm, "fsdp.ag.bwd")) {
        order[n++] = 'A';
        if (na < 16)
          mk[na++] = nmk;
      } else if (!strcmp(nm, "fsdp.rs"))
        order[n++] = 'R';
    }
    order[n] = '\0';
    if (strcmp(order, c[t].order)) {
      print_error("%s: order %s, want %s\n", c[t].spec, order, c[t].order);
      fail();
    }
    assert_int_equal(na, 8);
    for (int i = 0; i < 8; i++)
      assert_int_equal(mk[i], c[t].mk[i]);
    wl_workload_destroy(wl);
  }
  /* canonical spec: post is written, pre (the default) is not */
  wl_layout lo;
  st_err err;
  assert_int_equal(
      wl_layout_parse("zero=3,dp=2,gbs=2,dp_impl=fsdp,backward_prefetch=post", 2, &m, &lo, &err),
      ST_OK);
  assert_non_null(strstr(lo.spec, ",backward_prefetch=post"));
  assert_int_equal(
      wl_layout_parse("zero=3,dp=2,gbs=2,dp_impl=fsdp,backward_prefetch=pre", 2, &m, &lo, &err),
      ST_OK);
  assert_null(strstr(lo.spec, "backward_prefetch"));
}

/* Llama-style test model (swiglu, RMSNorm, rotary, GQA): 2 layers, h = 1024,
 * 16 heads of 64, 4 KV heads, f = 2816. */
static const char LLAMA_T[] = "{\"name\":\"llama-t\",\"layers\":2,\"hidden\":1024,\"heads\":16,"
                              "\"kv_heads\":4,\"ffn_hidden\":2816,\"ffn_act\":\"swiglu\","
                              "\"vocab\":32000,\"seq_len\":2048,\"tie_embeddings\":false}";

/* eager=1: a Llama block's elementwise work as eager PyTorch's kernels, per
 * element (bf16, a = 2 B): RMSNorm 36 B forward (6 kernels), 76 backward
 * (11); rotary embedding 20 B each way over the queries and keys (3 kernels
 * each); repeat_kv (1 + kv/heads) x 2 B per expanded element, keys and
 * values; SwiGLU 10 B per ffn element forward (silu 4, product 6), 18
 * backward.  T = 2 x 2048 tokens. */
static void test_eager__llama_elementwise_bytes_by_hand(void **state)
{
  (void)state;
  wl_model m;
  model_of(LLAMA_T, &m);
  const double T = 2 * 2048, h = 1024, q = 16 * 64, k = 4 * 64, f = 2816;
  wl_workload *wl = gen(&m, "mbs=2,gbs=2,eager=1", 1, NULL);
  int n;
  check_rel(prefix_bytes(wl, 0, "ln1.bwd", &n), 2 * 76 * T * h, 1e-12, "RMSNorm backward");
  assert_int_equal(n, 2 * 11);
  double ln1 = prefix_bytes(wl, 0, "ln1.", &n) - 2 * 76 * T * h;
  check_rel(ln1, 2 * 36 * T * h, 1e-12, "RMSNorm forward");
  assert_int_equal(n, 2 * 6 + 2 * 11);
  check_rel(prefix_bytes(wl, 0, "rope.q.bwd", &n), 2 * 20 * T * q, 1e-12, "rope q backward");
  check_rel(prefix_bytes(wl, 0, "rope.k", &n), 2 * 2 * 20 * T * k, 1e-12, "rope k both ways");
  assert_int_equal(n, 2 * 6);
  check_rel(named_bytes(wl, 0, "repeat_k"), 2 * (1 + 4.0 / 16) * 2 * T * q, 1e-12, "repeat_kv");
  check_rel(named_bytes(wl, 0, "repeat_v.bwd"), 2 * (1 + 4.0 / 16) * 2 * T * q, 1e-12,
            "repeat_kv backward");
  check_rel(prefix_bytes(wl, 0, "mlp.act.bwd", &n), 2 * 18 * T * f, 1e-12, "SwiGLU backward");
  assert_int_equal(n, 2 * 3);
  check_rel(prefix_bytes(wl, 0, "mlp.act.", &n) - 2 * 18 * T * f, 2 * 10 * T * f, 1e-12,
            "SwiGLU forward");
  wl_workload_destroy(wl);
  /* off: one fused kernel each, as before (2a forward, 3a backward per
   * element for the norm), no rotary or repeat_kv kernel */
  wl = gen(&m, "mbs=2,gbs=2", 1, NULL);
  check_rel(named_bytes(wl, 0, "ln1"), 2 * 4 * T * h, 1e-12, "fused RMSNorm");
  assert_int_equal(count_ops(wl, 0, "rope.q.f32"), 0);
  assert_int_equal(count_ops(wl, 0, "repeat_k"), 0);
  wl_workload_destroy(wl);
  /* a GPT-style model's LayerNorm and GELU are single kernels in eager
   * PyTorch too: the same workload either way */
  wl_model g;
  model_of(GPT_T, &g);
  wl_workload *a = gen(&g, "gbs=1", 1, NULL), *b = gen(&g, "gbs=1,eager=1", 1, NULL);
  const wl_program *pa = &a->programs[0], *pb = &b->programs[0];
  assert_int_equal(pa->num_ops, pb->num_ops);
  for (size_t i = 0; i < pa->num_ops; i++) {
    assert_string_equal(wl_op_name(pa, &pa->ops[i]), wl_op_name(pb, &pb->ops[i]));
    assert_true(pa->ops[i].bytes == pb->ops[i].bytes);
  }
  wl_workload_destroy(a);
  wl_workload_destroy(b);
}

/* The fused MLP activation's bytes per ffn element (bf16, a = 2 B): GELU
 * reads its input and writes its output, 2a forward; backward reads the
 * input and the gradient and writes one, 3a.  SwiGLU reads both halves and
 * writes their product, 3a per ffn element forward; backward reads both
 * halves and the gradient and writes both halves' gradients, 5a.  Per layer
 * of one micro-batch of T tokens. */
static void test_activation__fused_bytes_by_hand(void **state)
{
  (void)state;
  wl_model g, l;
  model_of(GPT_T, &g);
  model_of(LLAMA_T, &l);
  int n;
  wl_workload *wl = gen(&g, "gbs=1", 1, NULL);
  double T = 1024, f = 4096;
  check_rel(prefix_bytes(wl, 0, "mlp.act.bwd", &n), 8 * 3 * 2 * T * f, 1e-12, "GELU backward");
  assert_int_equal(n, 8);
  check_rel(prefix_bytes(wl, 0, "mlp.act", &n) - 8 * 3 * 2 * T * f, 8 * 2 * 2 * T * f, 1e-12,
            "GELU forward");
  wl_workload_destroy(wl);
  wl = gen(&l, "mbs=2,gbs=2", 1, NULL);
  T = 2 * 2048, f = 2816;
  check_rel(prefix_bytes(wl, 0, "mlp.act.bwd", &n), 2 * 5 * 2 * T * f, 1e-12, "SwiGLU backward");
  assert_int_equal(n, 2);
  check_rel(prefix_bytes(wl, 0, "mlp.act", &n) - 2 * 5 * 2 * T * f, 2 * 3 * 2 * T * f, 1e-12,
            "SwiGLU forward");
  wl_workload_destroy(wl);
}

/* ce_fusion: the loss's cross entropy by implementation, by hand (LLAMA_T,
 * T = 2,048 tokens a rank, 32,000 logits each, half a rank with tp 2): its
 * bytes per logit forward and backward (wl_gen_layer.c, ce_of:
 * Megatron-core's unfused 38 and 14, native 22 and 10, Transformer Engine's
 * 6 and 4; PyTorch's F.cross_entropy on the bf16 logits 8 and 10, on an
 * fp32 copy 22 and 26 (38 and 38 as DTensor's loss_parallel with tp 2),
 * Hugging Face's loss 30 and 38, flash-attn's and torch.compile's 4 and 4);
 * its TP collectives (three all-reduces of T floats unfused, two native, one
 * all-gather of 3 floats per token per rank under te); and its memory: what
 * it keeps for the backward among the activations (4 B a logit; 2 under te,
 * flash and torch_compiled; 8 under hf) and what it holds beyond that at its
 * peak in `other` (2, 0, 4, 8, 12, 8, 2 and 2 B).  The default is none under
 * Megatron-core, torch_fp32 elsewhere, and the spec names it only when it is
 * not the default.  Refused: Megatron's with the PyTorch frameworks and
 * theirs with Megatron-core, torch, hf, flash and torch_compiled with
 * tp > 1, an unknown name. */
static void test_ce_fusion__loss_bytes_collectives_and_memory_by_hand(void **state)
{
  (void)state;
  wl_model m;
  model_of(LLAMA_T, &m);
  const double T = 2048, V = 32000;
  static const struct {
    const char *spec;
    int gpus, tp, in_spec;
    double fwd, bwd, ar_max, ar_target, ar_sum, ag, kept, work;
  } cases[] = {
      {"tp=2,sp=1,gbs=1", 2, 2, 0, 38, 14, 4 * T, 4 * T, 4 * T, 0, 4, 2},
      {"tp=2,sp=1,gbs=1,ce_fusion=none", 2, 2, 0, 38, 14, 4 * T, 4 * T, 4 * T, 0, 4, 2},
      {"tp=2,sp=1,gbs=1,ce_fusion=native", 2, 2, 1, 22, 10, 4 * T, 0, 8 * T, 0, 4, 2},
      {"tp=2,sp=1,gbs=1,cross_entropy_fusion_impl=te", 2, 2, 1, 6, 4, 0, 0, 0, 12 * T * 2, 2, 0},
      {"dp=2,gbs=2,zero=3,dp_impl=fsdp2", 2, 1, 0, 22, 26, 0, 0, 0, 0, 4, 8},
      {"dp=2,gbs=2,zero=3,dp_impl=fsdp2,ce_fusion=torch_fp32", 2, 1, 0, 22, 26, 0, 0, 0, 0, 4, 8},
      {"tp=2,sp=1,dp=2,gbs=2,zero=3,dp_impl=fsdp2", 4, 2, 0, 38, 38, 4 * T, 4 * T, 4 * T, 0, 4, 12},
      {"dp=2,gbs=2,zero=3,dp_impl=fsdp2,ce_fusion=torch", 2, 1, 1, 8, 10, 0, 0, 0, 0, 4, 4},
      {"dp=2,gbs=2,zero=3,dp_impl=fsdp2,ce_fusion=hf", 2, 1, 1, 30, 38, 0, 0, 0, 0, 8, 8},
      {"dp=2,gbs=2,zero=3,dp_impl=fsdp2,ce_fusion=flash", 2, 1, 1, 4, 4, 0, 0, 0, 0, 2, 2},
      {"dp=2,gbs=2,zero=3,dp_impl=fsdp2,ce_fusion=torch_compiled", 2, 1, 1, 4, 4, 0, 0, 0, 0, 2,
       2},
  };
  double base_act[2] = {0, 0}, base_other[2] = {0, 0}; /* per dp_impl family: Megatron, FSDP */
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_layout l;
    wl_workload *wl = gen(&m, cases[i].spec, cases[i].gpus, &l);
    double L = T * V / cases[i].tp; /* one rank's logits */
    check_rel(named_bytes(wl, 0, "out.loss"), cases[i].fwd * L, 1e-12, "loss forward");
    check_rel(named_bytes(wl, 0, "out.loss.bwd"), cases[i].bwd * L, 1e-12, "loss backward");
    assert_true(named_bytes(wl, 0, "out.loss.max.ar") == cases[i].ar_max);
    assert_true(named_bytes(wl, 0, "out.loss.target.ar") == cases[i].ar_target);
    assert_true(named_bytes(wl, 0, "out.loss.sum.ar") == cases[i].ar_sum);
    assert_true(named_bytes(wl, 0, "out.loss.stats.ag") == cases[i].ag);
    assert_int_equal(strstr(l.spec, ",ce_fusion=") != NULL, cases[i].in_spec);
    char sw[256]; /* the software keys search --case keeps in every candidate:
                   * Megatron-core's losses only (its candidates are Megatron's) */
    wl_layout_software_keys(&l, sw, sizeof sw);
    assert_int_equal(strstr(sw, ",ce_fusion=") != NULL,
                     cases[i].in_spec && l.dp_impl == WL_DP_MEGATRON);
    wl_memory mem;
    st_err err;
    assert_int_equal(wl_memory_estimate(&m, &l, &mem, &err), 0);
    /* the same layout but the cross entropy differs within each family
     * (the tp = 2 FSDP2 row has its own): measured from the family's first */
    int fam = l.dp_impl == WL_DP_MEGATRON ? 0 : 1;
    double act = mem.stages[0].activations_bytes - cases[i].kept * L;
    double other = mem.stages[0].other_bytes - cases[i].work * L;
    if (i == 6) /* DTensor's loss_parallel: no other choice to compare with at tp 2 */
      assert_true(mem.stages[0].other_bytes > cases[i].work * L &&
                  mem.stages[0].activations_bytes > cases[i].kept * L);
    else if (i == 0 || i == 4) {
      base_act[fam] = act;
      base_other[fam] = other;
    } else { /* the Megatron-core rows keep nothing else in `other` */
      check_rel(act, base_act[fam], 1e-12, "activations but the cross entropy's");
      assert_true(fabs(other - base_other[fam]) <= 1e-12 * act);
    }
    wl_workload_destroy(wl);
  }
  static const struct {
    const char *spec, *msg;
  } bad[] = {
      {"dp=2,gbs=2,zero=3,dp_impl=fsdp,ce_fusion=te",
       "ce_fusion=te is Megatron-core's cross entropy (dp_impl=megatron); dp_impl is fsdp"},
      {"tp=2,gbs=1,ce_fusion=torch_fp32",
       "ce_fusion=torch_fp32 is a PyTorch framework's cross entropy (dp_impl fsdp, fsdp2 or "
       "deepspeed); dp_impl is megatron"},
      {"tp=2,dp=1,gbs=1,zero=3,dp_impl=fsdp2,ce_fusion=flash",
       "ce_fusion=flash with tp (2) > 1: only torch_fp32 (DTensor's loss_parallel) is modelled "
       "on vocabulary-parallel logits"},
      {"tp=2,gbs=1,ce_fusion=apex", "key 'ce_fusion' value 'apex' is unknown (known: none, "
                                    "native, te, torch, torch_fp32, hf, flash, torch_compiled)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    wl_layout l;
    st_err err;
    assert_int_equal(wl_layout_parse(bad[i].spec, 2, &m, &l, &err), ST_EINPUT);
    char want[512];
    snprintf(want, sizeof want, "layout '%s': %s", bad[i].spec, bad[i].msg);
    assert_string_equal(err.msg, want);
  }
}

/* train_metrics: a trainer's cross-entropy passes over each micro-batch's
 * logits after its backward (Composer's train metrics), by hand (LLAMA_T,
 * dp 2 under FSDP2: two micro-batches of 2,048 tokens, 32,000 logits each):
 * 22 B a logit a pass (the fp32 cast and log_softmax), one op per micro-batch
 * after its backward; kept in the spec; refused under Megatron-core and
 * beyond 8 passes. */
static void test_train_metrics__passes_after_each_backward_by_hand(void **state)
{
  (void)state;
  wl_model m;
  model_of(LLAMA_T, &m);
  const double L = 2048.0 * 32000;
  wl_layout l;
  wl_workload *wl = gen(&m, "dp=2,mbs=1,gbs=4,zero=3,dp_impl=fsdp2,train_metrics=2", 2, &l);
  assert_int_equal(count_ops(wl, 0, "out.metrics"), 2);
  check_rel(named_bytes(wl, 0, "out.metrics"), 2 * 2 * 22 * L, 1e-12, "two passes of 22 B");
  assert_non_null(strstr(l.spec, ",train_metrics=2"));
  /* each after its micro-batch's backward: the last op of its compute stream
   * before the next micro-batch's forward begins */
  const wl_program *p = &wl->programs[wl->rank_program[0]];
  size_t last_bwd = 0, metrics = 0;
  for (size_t i = 0; i < p->num_ops; i++) {
    const char *nm = wl_op_name(p, &p->ops[i]);
    if (!strcmp(nm, "emb.grad") && !metrics)
      last_bwd = i;
    if (!strcmp(nm, "out.metrics") && !metrics)
      metrics = i;
  }
  assert_true(metrics > last_bwd && last_bwd > 0);
  wl_workload_destroy(wl);
  wl = gen(&m, "dp=2,mbs=1,gbs=4,zero=3,dp_impl=fsdp2", 2, &l);
  assert_int_equal(count_ops(wl, 0, "out.metrics"), 0);
  assert_null(strstr(l.spec, "train_metrics"));
  wl_workload_destroy(wl);
  st_err err;
  assert_int_equal(wl_layout_parse("tp=2,gbs=1,train_metrics=1", 2, &m, &l, &err), ST_EINPUT);
  assert_string_equal(err.msg, "layout 'tp=2,gbs=1,train_metrics=1': train_metrics=1 is a "
                               "trainer's cross-entropy passes for its training metrics "
                               "(Composer's); dp_impl=megatron computes none");
  assert_int_equal(wl_layout_parse("dp=2,gbs=2,zero=3,dp_impl=fsdp,train_metrics=9", 2, &m, &l,
                                   &err),
                   ST_EINPUT);
  assert_string_equal(err.msg, "layout 'dp=2,gbs=2,zero=3,dp_impl=fsdp,train_metrics=9': key "
                               "'train_metrics' is 9 (at most 8 cross-entropy passes)");
}

/* moe_dispatcher: the flex dispatcher's four all-to-alls per MoE layer carry
 * the same bytes as the all-to-all dispatcher's (top-k copies of the rank's
 * tokens: MOE_T, ep 4, T = 1,024 tokens of 1,024 x 2 B, top-2: 4 MiB), marked
 * deduplicating with top-k 2 and 8 / 4 = 2 experts a member; the key is kept
 * in the spec and in the software keys, and its alias is NeMo's name. */
static void test_moe_dispatcher__flex_marks_the_expert_all_to_alls(void **state)
{
  (void)state;
  wl_model m;
  model_of(MOE_T, &m);
  const char *specs[] = {"ep=4,gbs=4", "ep=4,gbs=4,moe_token_dispatcher_type=flex"};
  for (int f = 0; f < 2; f++) {
    wl_layout l;
    wl_workload *wl = gen(&m, specs[f], 4, &l);
    const wl_program *p = &wl->programs[wl->rank_program[0]];
    int n = 0;
    for (size_t i = 0; i < p->num_ops; i++) {
      const wl_op *o = &p->ops[i];
      if (o->kind != WL_OP_COLL || o->sub != WL_COLL_ALLTOALL)
        continue;
      n++;
      assert_true(o->bytes == 1024.0 * 2 * 1024 * 2);
      assert_int_equal((o->flags & WL_OPF_DEDUP) != 0, f);
      assert_int_equal(wl_op_dedup_arg(o), f ? 2 << 16 | 2 : 0);
    }
    assert_int_equal(n, 4 * 4); /* four a layer, four MoE layers */
    assert_int_equal(strstr(l.spec, ",moe_dispatcher=flex") != NULL, f);
    char sw[256];
    wl_layout_software_keys(&l, sw, sizeof sw);
    assert_int_equal(strstr(sw, ",moe_dispatcher=flex") != NULL, f);
    wl_workload_destroy(wl);
  }
}

/* qk_norm in a model spec: Qwen3's RMSNorm of each query and key head, 2 x
 * head_dim weights a layer (MOE_T: 4 layers of head_dim 64, 512 more
 * parameters); a value that is not a boolean names the key. */
static void test_model__qk_norm_key(void **state)
{
  (void)state;
  wl_model a, b;
  model_of(MOE_T, &a);
  char js[sizeof MOE_T + 32];
  snprintf(js, sizeof js, "%.*s,\"qk_norm\":true}", (int)strlen(MOE_T) - 1, MOE_T);
  model_of(js, &b);
  assert_int_equal(a.qk_norm, 0);
  assert_int_equal(b.qk_norm, 1);
  assert_true(wl_model_params(&b) - wl_model_params(&a) == 4 * 2 * 64);
  snprintf(js, sizeof js, "%.*s,\"qk_norm\":1}", (int)strlen(MOE_T) - 1, MOE_T);
  st_err err;
  st_err_clear(&err);
  assert_int_equal(wl_model_parse(js, "m.json", &b, &err), ST_EINPUT);
  assert_non_null(strstr(err.msg, "qk_norm"));
}

/* ---- moe_a2a_overlap ------------------------------------------------------------------ */
static void named_work(const wl_workload *wl, const char *name, int rec, double *flops,
                       double *bytes, int *n);

/* How many of rank 0's ops named `name` run on the stream named `stream`. */
static int ops_on_stream(const wl_workload *wl, const char *name, const char *stream)
{
  const wl_program *p = &wl->programs[wl->rank_program[0]];
  int n = 0;
  for (size_t i = 0; i < p->num_ops; i++) {
    const wl_op *o = &p->ops[i];
    n += !strcmp(wl_op_name(p, o), name) && !strcmp(p->stream_names[o->stream], stream);
  }
  return n;
}

/* Position of the k-th op (0-based) named `name` in rank 0's program, or -1. */
static long nth_op(const wl_workload *wl, const char *name, int k)
{
  const wl_program *p = &wl->programs[wl->rank_program[0]];
  for (size_t i = 0; i < p->num_ops; i++)
    if (!strcmp(wl_op_name(p, &p->ops[i]), name) && k-- == 0)
      return (long)i;
  return -1;
}

/* Rank 0 of b has the ops of a's (one stream more, the overlap's) and its
 * ops named `name` the same count, FLOPs and bytes; returns the count. */
static int same_named_work(const wl_workload *a, const wl_workload *b, const char *name)
{
  const wl_program *pa = &a->programs[a->rank_program[0]], *pb = &b->programs[b->rank_program[0]];
  assert_int_equal(pa->num_ops, pb->num_ops);
  assert_int_equal(pb->num_streams, pa->num_streams + 1);
  double fa, ba, fb, bb;
  int na, nb;
  named_work(a, name, -1, &fa, &ba, &na);
  named_work(b, name, -1, &fb, &bb, &nb);
  assert_int_equal(na, nb);
  assert_true(fa == fb && ba == bb);
  return nb;
}

/* moe_a2a_overlap (Megatron-core's overlap_moe_expert_parallel_comm with
 * delay_wgrad_compute) on MOE_T, ep 4, 4 micro-batches: the same ops with
 * the same FLOPs and bytes, the four all-to-alls of each layer and
 * micro-batch (16 x 4) on a stream "ep" of their own, with what follows
 * the combine (the unpermute and the residual add, forward and backward,
 * as Megatron's combine node runs them), but those of the forward and the
 * backward that run alone (4 of each kind: they have nothing to overlap,
 * and run in order on the compute stream); the attention's weight
 * gradients (delay_wgrad_compute) after the next layer's combine backward
 * is issued; one forward runs
 * alone first, then each forward with the backward of the micro-batch
 * before it: micro-batch 1's attention (its layer 0's qkv, the fifth)
 * comes after micro-batch 0's backward has begun (its last layer's combine
 * backward, the first) and before its experts' backward (the first fc2
 * dgrad), and the experts' weight gradients follow the dispatch's
 * backward.  One micro-batch's activations more are alive: the memory
 * model's peak has two chunks where it had one.  The key keeps its name in
 * the spec and takes Megatron-core's as an alias. */
static void test_moe_a2a_overlap__same_work_reordered(void **state)
{
  (void)state;
  wl_model m;
  model_of(MOE_T, &m);
  wl_layout l0, l1;
  wl_workload *a = gen(&m, "ep=4,gbs=16", 4, &l0);
  wl_workload *b = gen(&m, "ep=4,gbs=16,overlap_moe_expert_parallel_comm=1", 4, &l1);
  assert_non_null(strstr(l1.spec, ",moe_a2a_overlap=1"));
  assert_null(strstr(l0.spec, "moe_a2a_overlap"));
  const wl_program *pa = &a->programs[a->rank_program[0]];
  for (size_t i = 0; i < pa->num_ops; i++) {
    const char *nm = wl_op_name(pa, &pa->ops[i]);
    int nb = same_named_work(a, b, nm), eb = ops_on_stream(b, nm, "ep");
    assert_int_equal(ops_on_stream(a, nm, "ep"), 0);
    int a2a = !strncmp(nm, "ep.", 3);
    int post = !strcmp(nm, "moe.unpermute") || !strcmp(nm, "res2") ||
               !strcmp(nm, "moe.unpermute.bwd") || !strcmp(nm, "res2.bwd");
    assert_int_equal(eb, a2a || post ? nb - 4 : 0);
    if (a2a)
      assert_int_equal(nb, 4 * 4);
  }
  assert_true(nth_op(b, "qkv", 4) > nth_op(b, "ep.combine.bwd", 0));
  assert_true(nth_op(b, "qkv", 4) < nth_op(b, "expert.fc2.dgrad", 0));
  assert_true(nth_op(b, "expert.fc2.wgrad", 0) > nth_op(b, "ep.dispatch.bwd", 0));
  assert_true(nth_op(b, "qkv.wgrad", 0) > nth_op(b, "ep.combine.bwd", 1));
  assert_true(nth_op(a, "qkv.wgrad", 0) < nth_op(a, "ep.combine.bwd", 1));
  assert_true(nth_op(a, "qkv", 4) > nth_op(a, "router.wgrad", 3));
  int c0, y0, c1, y1;
  wl__peak_alive(&l0, 0, &c0, &y0);
  wl__peak_alive(&l1, 0, &c1, &y1);
  assert_int_equal(c0, 1);
  assert_int_equal(c1, 2);
  assert_int_equal(y1, 2 * y0);
  wl_workload_destroy(a);
  wl_workload_destroy(b);
}

/* With a pipeline, a pair's forward output leaves after its last layer's
 * residual add, which runs on the "ep" stream: every activation send of
 * a stage that runs pairs waits on an op of that stream (MOE_T on pp 2 x
 * vpp 2 with eight micro-batches: stage 0 sends its chunk-0 outputs, the
 * pairs' among them). */
static void test_moe_a2a_overlap__sends_wait_for_the_residual(void **state)
{
  (void)state;
  wl_model m;
  model_of(MOE_T, &m);
  wl_workload *wl = gen(&m, "pp=2,vpp=2,ep=2,gbs=16,moe_a2a_overlap=1", 4, NULL);
  const wl_program *p = &wl->programs[wl->rank_program[0]];
  int sends = 0, after_ep = 0, pairs = 0;
  for (size_t i = 0; i < p->num_ops; i++) {
    const wl_op *o = &p->ops[i];
    if (strcmp(wl_op_name(p, o), "pp.send.act"))
      continue;
    sends++;
    for (uint32_t w = 0; w < o->wait_count; w++) {
      const wl_op *x = &p->ops[p->waits[o->wait_first + w]];
      after_ep += !strcmp(p->stream_names[x->stream], "ep");
    }
  }
  for (size_t i = 0; i < p->num_ops; i++)
    pairs += !strcmp(wl_op_name(p, &p->ops[i]), "ep.combine.bwd") &&
             !strcmp(p->stream_names[p->ops[i].stream], "ep");
  assert_int_equal(sends, 16); /* 8 micro-batches x 2 chunks, the last stage's not */
  assert_true(pairs > 0);
  assert_true(after_ep > 0 && after_ep < sends); /* the pairs' sends, not the warm-up's */
  wl_workload_destroy(wl);
}

/* Every op of rank programs timed by hand: compute at its FLOPs x 1e-12 s
 * (given, so never stretched) or 0 (zero_compute), every collective but the
 * expert all-to-alls of no bytes (latency only), the all-to-alls as
 * generated (a2a 1) or of no bytes (a2a 0). */
static void time_by_hand(wl_workload *wl, int zero_compute, int a2a)
{
  for (int pi = 0; pi < wl->num_programs; pi++) {
    wl_program *p = &wl->programs[pi];
    for (size_t i = 0; i < p->num_ops; i++) {
      wl_op *o = &p->ops[i];
      if (o->kind == WL_OP_COMPUTE)
        o->duration_s = zero_compute ? 0 : o->flops * 1e-12;
      else if (o->kind == WL_OP_COLL && (!a2a || strncmp(wl_op_name(p, o), "ep.", 3)))
        o->bytes = 0;
    }
  }
}

static double step_of(const wl_workload *wl, const char *what)
{
  forked_result *f = sim_run_forked(wl, "node8", NULL);
  assert_non_null(f);
  if (f->rc) {
    print_error("%s: %s\n", what, f->msg);
    fail();
  }
  double t = f->step_time_s;
  forked_result_free(f);
  return t;
}

/* The steps of layouts spec[0] (without an overlap) and spec[1] (with it),
 * 4 micro-batches, timed by hand: t[ov][0] all, [1] the all-to-alls of no
 * bytes, [2] no compute.  Returns A, what one all-to-all's bytes add to the
 * step without the overlap: (its step with no compute less the step of
 * neither) over the 4 L m = 64 all-to-alls of the 4 layers. */
static double overlap_steps(const wl_model *m, const char *const spec[2], double t[2][3])
{
  for (int ov = 0; ov < 2; ov++)
    for (int v = 0; v < 3; v++) {
      wl_workload *wl = gen(m, spec[ov], 4, NULL);
      time_by_hand(wl, v == 2, v != 1);
      t[ov][v] = step_of(wl, spec[ov]);
      wl_workload_destroy(wl);
    }
  wl_workload *wl = gen(m, spec[0], 4, NULL); /* the step with neither: latencies alone */
  time_by_hand(wl, 1, 0);
  double lat = step_of(wl, "latencies");
  wl_workload_destroy(wl);
  double A = (t[0][2] - lat) / (4 * 4 * 4);
  assert_true(A > 1e-6 && A < 1e-4);
  return A;
}

/* The overlap on the engine, by a closed form.  Compute timed by hand
 * (milliseconds a part), the all-to-alls as the network runs them (tens of
 * microseconds on one node8 node), everything else latency only.  Without
 * the overlap every all-to-all is exposed: step = C + 4 L m A, with C the
 * step with the all-to-alls of no bytes (compute and latencies), L = 4
 * layers, m = 4 micro-batches, A what an all-to-all's bytes add to it (4 L
 * m A: the step with no compute less the one of neither).  With it, an
 * all-to-all shorter than every part it runs beside is hidden, except those
 * of the forward that runs alone first and of the backward that runs alone
 * last: step = C' + 4 L A, C' its own step without the bytes, which hides
 * the all-to-alls' latencies likewise and so is shorter than C. */
static void test_moe_a2a_overlap__hides_all_but_the_lone_units(void **state)
{
  (void)state;
  wl_model m;
  model_of(MOE_T, &m);
  const char *spec[2] = {"ep=4,gbs=16", "ep=4,gbs=16,moe_a2a_overlap=1"};
  double t[2][3], L = 4, mb = 4, A = overlap_steps(&m, spec, t);
  assert_true(t[1][1] < t[0][1]);
  check_rel(t[0][0], t[0][1] + 4 * L * mb * A, 1e-3, "without the overlap");
  check_rel(t[1][0], t[1][1] + 4 * L * A, 1e-2, "with the overlap");
}

/* ---- moe_shared_expert_overlap -------------------------------------------------------- */
/* MOE_T with one shared expert of the routed experts' width */
static void moe_shared_model(wl_model *m)
{
  char js[sizeof MOE_T + 32];
  snprintf(js, sizeof js, "%.*s,\"shared_experts\":1}}", (int)strlen(MOE_T) - 2, MOE_T);
  model_of(js, m);
  assert_int_equal(m->moe.shared_experts, 1);
}

/* Whether rank 0's op at position `op` waits for the op at `on`. */
static int op_waits_for(const wl_workload *wl, long op, long on)
{
  const wl_program *p = &wl->programs[wl->rank_program[0]];
  const wl_op *o = &p->ops[op];
  for (uint32_t w = 0; w < o->wait_count; w++)
    if (p->waits[o->wait_first + w] == (uint32_t)on)
      return 1;
  return 0;
}

/* moe_shared_expert_overlap (Megatron-core's token dispatcher with the
 * shared experts on a stream of their own) on MOE_T with a shared expert,
 * ep 4, 4 micro-batches: the same ops with the same FLOPs and bytes; the
 * four all-to-alls of every layer and micro-batch (16 of each) on the "ep"
 * stream and nothing else there; the shared experts' fc1 and activation
 * issued after the dispatch and before the routed experts, which wait for
 * the dispatch; their fc2 after the combine and before the unpermute,
 * which waits for the combine; backward, fc2's gradients after the
 * combine's backward and before the routed experts', the activation's and
 * fc1's after the dispatch's backward and before the permute's backward,
 * which waits for it.  The key keeps its name in the spec; it is refused
 * with recompute_modules shared_experts and with moe_a2a_overlap, as
 * Megatron-core and Megatron-Bridge refuse them. */
static void test_moe_shared_overlap__same_work_reordered(void **state)
{
  (void)state;
  wl_model m;
  moe_shared_model(&m);
  wl_layout l1;
  wl_workload *a = gen(&m, "ep=4,gbs=16", 4, NULL);
  wl_workload *b = gen(&m, "ep=4,gbs=16,moe_shared_expert_overlap=1", 4, &l1);
  assert_non_null(strstr(l1.spec, ",moe_shared_expert_overlap=1"));
  const wl_program *pa = &a->programs[a->rank_program[0]];
  for (size_t i = 0; i < pa->num_ops; i++) {
    const char *nm = wl_op_name(pa, &pa->ops[i]);
    int nb = same_named_work(a, b, nm);
    int a2a = !strncmp(nm, "ep.", 3);
    assert_int_equal(ops_on_stream(b, nm, "ep"), a2a ? nb : 0);
    if (a2a)
      assert_int_equal(nb, 4 * 4);
  }
  long d = nth_op(b, "ep.dispatch", 0), c = nth_op(b, "ep.combine", 0);
  assert_true(nth_op(b, "shared.fc1", 0) > d && nth_op(b, "shared.act", 0) > d);
  assert_true(nth_op(b, "shared.act", 0) < nth_op(b, "expert.fc1", 0));
  assert_true(op_waits_for(b, nth_op(b, "expert.fc1", 0), d));
  assert_true(nth_op(b, "shared.fc2", 0) > c && nth_op(b, "shared.fc2", 0) < nth_op(b, "moe.unpermute", 0));
  assert_true(op_waits_for(b, nth_op(b, "moe.unpermute", 0), c));
  long cb = nth_op(b, "ep.combine.bwd", 0), db = nth_op(b, "ep.dispatch.bwd", 0);
  assert_true(nth_op(b, "shared.fc2.dgrad", 0) > cb);
  assert_true(nth_op(b, "shared.fc2.wgrad", 0) < nth_op(b, "expert.fc2.dgrad", 0));
  assert_true(op_waits_for(b, nth_op(b, "expert.fc2.dgrad", 0), cb));
  assert_true(nth_op(b, "shared.act.bwd", 0) > db && nth_op(b, "shared.fc1.dgrad", 0) > db);
  assert_true(nth_op(b, "shared.fc1.wgrad", 0) < nth_op(b, "moe.permute.bwd", 0));
  assert_true(op_waits_for(b, nth_op(b, "moe.permute.bwd", 0), db));
  /* without the key: the shared experts after the unpermute, all on compute */
  assert_true(nth_op(a, "shared.fc1", 0) > nth_op(a, "moe.unpermute", 0));
  wl_workload_destroy(a);
  wl_workload_destroy(b);
  static const char *const refused[][2] = {
      {"ep=4,gbs=16,recompute=selective,recompute_modules=shared_experts,"
       "moe_shared_expert_overlap=1",
       "with recompute_modules shared_experts: Megatron-core refuses the two together"},
      {"ep=4,gbs=16,moe_a2a_overlap=1,moe_shared_expert_overlap=1",
       "with moe_a2a_overlap: the combined schedule places the shared experts itself"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    wl_layout l;
    st_err err;
    st_err_clear(&err);
    assert_int_equal(wl_layout_parse(refused[i][0], 4, &m, &l, &err), ST_EINPUT);
    if (!strstr(err.msg, refused[i][1]))
      fail_msg("%s: %s", refused[i][0], err.msg);
  }
}

/* The overlap on the engine, by the closed form of the a2a test above:
 * compute timed by hand (the shared experts' halves take milliseconds, the
 * all-to-alls tens of microseconds on one node8 node).  Without the
 * overlap every all-to-all is exposed: step = C + 4 L m A.  With it each
 * runs beside a shared-expert half longer than itself: the step is its own
 * step without the all-to-alls' bytes, to within the stretch the overlap
 * puts on the compute beside them (10% of the time they run, at most). */
static void test_moe_shared_overlap__hides_the_all_to_alls(void **state)
{
  (void)state;
  wl_model m;
  moe_shared_model(&m);
  const char *spec[2] = {"ep=4,gbs=16", "ep=4,gbs=16,moe_shared_expert_overlap=1"};
  double t[2][3], L = 4, mb = 4, A = overlap_steps(&m, spec, t);
  check_rel(t[0][0], t[0][1] + 4 * L * mb * A, 1e-3, "without the overlap");
  double exposed = t[1][0] - t[1][1];
  if (!(exposed >= 0 && exposed <= 0.1 * 4 * L * mb * A))
    fail_msg("with the overlap: %g s of the all-to-alls' %g s exposed", exposed, 4 * L * mb * A);
}

/* FLOPs and HBM bytes of rank 0's ops whose name is `name`, marked
 * recomputed (rec 1) or not (rec 0), or either (rec -1). */
static void named_work(const wl_workload *wl, const char *name, int rec, double *flops,
                       double *bytes, int *n)
{
  const wl_program *p = &wl->programs[wl->rank_program[0]];
  *flops = *bytes = 0;
  *n = 0;
  for (size_t i = 0; i < p->num_ops; i++) {
    const wl_op *o = &p->ops[i];
    int r = (o->flags & WL_OPF_RECOMPUTE) != 0;
    if (strcmp(wl_op_name(p, o), name) || (rec >= 0 && r != rec))
      continue;
    *flops += o->flops;
    *bytes += o->bytes;
    (*n)++;
  }
}

/* recompute_modules (Megatron-core's selective recomputation by module) on
 * MOE_T (4 MoE layers, one micro-batch of 1,024 tokens, ep 2): each module
 * re-runs, once a layer, exactly its forward ops (the same FLOPs and bytes,
 * marked recomputed; the whole MoE layer its all-to-alls too), and nothing
 * else is re-run; the activations kept
 * drop by what the modules discard, by hand: the experts' activation
 * output 2 te f_e (te = 1,024 x 2 routed copies, f_e = 1,024) and the
 * pre-MLP norm's output 2 s h, 6 MiB a layer, 24 MiB over the four.  The
 * default of recompute=selective is core_attn alone, kept out of the spec. */
static void test_recompute_modules__rerun_forward_ops_and_drop_their_activations(void **state)
{
  (void)state;
  wl_model m;
  model_of(MOE_T, &m);
  static const struct {
    const char *spec;
    const char *rerun[4]; /* ops re-run once a layer */
    const char *not_rerun[3];
  } cases[] = {
      {"ep=2,recompute=selective", {"attn", NULL}, {"expert.act", "ln2", "expert.fc1"}},
      {"ep=2,recompute_modules=moe_act+layernorm", {"expert.act", "ln2", NULL},
       {"attn", "expert.fc1", "router"}},
      {"ep=2,recompute_modules=moe", {"router", "expert.fc1", "expert.act", "moe.permute"},
       {"attn", "ln2", NULL}},
  };
  double act[3];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_layout l;
    wl_workload *wl = gen(&m, cases[i].spec, 2, &l);
    for (int j = 0; j < 4 && cases[i].rerun[j]; j++) {
      double f0, b0, f1, b1;
      int n0, n1;
      named_work(wl, cases[i].rerun[j], 0, &f0, &b0, &n0);
      named_work(wl, cases[i].rerun[j], 1, &f1, &b1, &n1);
      assert_int_equal(n0, 4);
      assert_int_equal(n1, 4);
      assert_true(f1 == f0 && b1 == b0);
    }
    for (int j = 0; j < 3 && cases[i].not_rerun[j]; j++) {
      double f1, b1;
      int n1;
      named_work(wl, cases[i].not_rerun[j], 1, &f1, &b1, &n1);
      assert_int_equal(n1, 0);
    }
    /* the layer's recomputation re-runs its all-to-alls too (collectives
     * carry no recompute mark) */
    double f, b;
    int n0, n1;
    named_work(wl, "ep.dispatch", 0, &f, &b, &n0);
    named_work(wl, "ep.dispatch", 1, &f, &b, &n1);
    assert_int_equal(n0 + n1, i == 2 ? 8 : 4);
    assert_int_equal(strstr(l.spec, "recompute_modules=") != NULL, i > 0);
    wl_memory mem;
    st_err err;
    assert_int_equal(wl_memory_estimate(&m, &l, &mem, &err), 0);
    act[i] = mem.stages[0].activations_bytes;
    wl_workload_destroy(wl);
  }
  check_rel(act[0] - act[1], 4 * (2 * 2048.0 * 1024 + 2 * 1024.0 * 1024), 1e-12,
            "moe_act + layernorm discard 6 MiB a layer");
  assert_true(act[2] < act[1]);
  /* MLA (a dense first layer, then MoE): mla_up_proj re-runs q_up and kv_up
   * once a layer, layernorm the MLA input norm on every layer (a module of
   * its own there) and the pre-MLP norm on the MoE layers only (a dense
   * layer's is fused into fc1), mlp the dense layer's MLP */
  static const char MLA_T[] =
      "{\"name\":\"mla-t\",\"layers\":3,\"hidden\":1024,\"heads\":16,\"ffn_hidden\":2048,"
      "\"ffn_act\":\"swiglu\",\"vocab\":32000,\"seq_len\":1024,\"tie_embeddings\":false,"
      "\"mla\":{\"q_lora_rank\":256,\"kv_lora_rank\":128,\"qk_nope_head_dim\":64,"
      "\"qk_rope_head_dim\":32,\"v_head_dim\":64},"
      "\"moe\":{\"experts\":8,\"top_k\":2,\"expert_ffn_hidden\":512,\"dense_layers\":1}}";
  wl_model ml;
  model_of(MLA_T, &ml);
  wl_layout lm;
  wl_workload *wl = gen(&ml, "ep=2,recompute_modules=mla_up_proj+layernorm+mlp", 2, &lm);
  static const struct {
    const char *name;
    int n;
  } rerun[] = {{"q_up", 3},     {"kv_up", 3},   {"ln1", 3},     {"ln2", 2},
               {"mlp.fc1", 1},  {"mlp.fc2", 1}, {"q_down", 0},  {"attn", 0}};
  for (size_t i = 0; i < sizeof rerun / sizeof rerun[0]; i++) {
    double f, b;
    int n;
    named_work(wl, rerun[i].name, 1, &f, &b, &n);
    if (n != rerun[i].n) {
      print_error("%s: re-run %d times, want %d\n", rerun[i].name, n, rerun[i].n);
      fail();
    }
  }
  wl_workload_destroy(wl);
  /* kept, by hand, against recompute=selective (core_attn), the memory
   * model counting each of a stage's layers as its largest (an MoE layer):
   * Q, K, V (16 heads of 96, 96 and 64: 8 MiB), the input norm's output
   * (2 MiB) and the pre-MLP norm's output (2 MiB), three times; the
   * attention core is no longer recomputed, which a flash kernel keeps
   * nothing for */
  wl_layout ls;
  st_err err;
  wl_memory m0, m1;
  assert_int_equal(wl_layout_parse("ep=2,recompute=selective", 2, &ml, &ls, &err), 0);
  assert_int_equal(wl_memory_estimate(&ml, &ls, &m0, &err), 0);
  assert_int_equal(wl_memory_estimate(&ml, &lm, &m1, &err), 0);
  check_rel(m0.stages[0].activations_bytes - m1.stages[0].activations_bytes,
            3 * 12.0 * 1048576, 1e-12, "MLA: what the modules discard");
  /* a dense model's MLP (GPT_T, 8 layers, GELU of 4,096): re-run once a
   * layer, its fc1 input (2 MiB), activation input and fc2 input (8 MiB
   * each) not kept: 144 MiB */
  wl_model gt;
  model_of(GPT_T, &gt);
  wl_layout lg;
  wl = gen(&gt, "recompute_modules=mlp", 1, &lg);
  double f, b;
  int n;
  named_work(wl, "mlp.fc1", 1, &f, &b, &n);
  assert_int_equal(n, 8);
  named_work(wl, "attn", 1, &f, &b, &n);
  assert_int_equal(n, 0);
  wl_workload_destroy(wl);
  assert_int_equal(wl_layout_parse("recompute=selective", 1, &gt, &ls, &err), 0);
  assert_int_equal(wl_memory_estimate(&gt, &ls, &m0, &err), 0);
  assert_int_equal(wl_memory_estimate(&gt, &lg, &m1, &err), 0);
  check_rel(m0.stages[0].activations_bytes - m1.stages[0].activations_bytes, 144.0 * 1048576,
            1e-12, "dense MLP: what its checkpoint does not keep");
}

/* First index of an op by name in rank 0's program, -1 when none. */
static long first_op(const wl_workload *wl, const char *name) { return nth_op(wl, name, 0); }

/* tp_async: Megatron-LM's backward TP all-reduce of a column-parallel
 * block's input gradient (QKV, fc1, the output layer).  Default (since
 * September 2021): issued after dgrad on the TP stream, beside wgrad.
 * tp_async=0 (the code of the SC'21 paper): autograd runs the linear's
 * dgrad and wgrad, then _CopyToModelParallelRegion.backward all-reduces,
 * blocking: on the compute stream, after wgrad.  The same ops, bytes and
 * FLOPs either way; only their order and stream differ. */
static void test_tp_async__backward_allreduce_after_wgrad(void **state)
{
  (void)state;
  wl_model g;
  model_of(GPT_T, &g);
  wl_layout la, ls;
  wl_workload *a = gen(&g, "tp=2,gbs=1", 2, &la), *s = gen(&g, "tp=2,gbs=1,tp_async=0", 2, &ls);
  assert_int_equal(la.tp_async, 1);
  assert_int_equal(ls.tp_async, 0);
  assert_null(strstr(la.spec, "tp_async"));
  assert_non_null(strstr(ls.spec, ",tp_async=0"));
  const wl_program *pa = &a->programs[a->rank_program[0]], *ps = &s->programs[s->rank_program[0]];
  assert_int_equal(pa->num_ops, ps->num_ops);
  static const char *const pairs[][2] = {{"mlp.tp.ar.dgrad", "mlp.fc1.wgrad"},
                                         {"attn.tp.ar.dgrad", "qkv.wgrad"},
                                         {"out.tp.ar.dgrad", "out.logits.wgrad"}};
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    long ar = first_op(a, pairs[i][0]), wg = first_op(a, pairs[i][1]);
    assert_true(ar >= 0 && wg >= 0);
    assert_true(ar < wg);
    assert_int_not_equal(pa->ops[ar].stream, 0);
    ar = first_op(s, pairs[i][0]);
    wg = first_op(s, pairs[i][1]);
    assert_true(ar >= 0 && wg >= 0);
    assert_true(ar > wg);
    assert_int_equal(ps->ops[ar].stream, 0);
    assert_int_equal(count_ops(a, 0, pairs[i][0]), count_ops(s, 0, pairs[i][0]));
    check_rel(named_bytes(s, 0, pairs[i][0]), named_bytes(a, 0, pairs[i][0]), 0, pairs[i][0]);
  }
  check_rel(job_flops(s, WL_CLASS_GEMM), job_flops(a, WL_CLASS_GEMM), 0, "GEMM FLOPs");
  wl_workload_destroy(a);
  wl_workload_destroy(s);
}

/* pp_scatter: Megatron-LM's scatter/gather of pipeline tensors (2021-02 to
 * 2023-03, without SP).  Each of a stage's tp ranks sends 1/tp of the
 * [s, b, h] tensor to its peer of the next (previous) stage, and the
 * receiver all-gathers the whole tensor over its TP group before the unit
 * that uses it.  By hand for gpt-t (s 1,024, h 1,024), mbs 2, bf16: a whole
 * tensor is 1024 x 2 x 1024 x 2 = 4 MiB, a piece 2 MiB at tp = 2; with
 * tp = 1 nothing changes. */
static void test_pp_scatter__pieces_sent_then_gathered(void **state)
{
  (void)state;
  wl_model g;
  model_of(GPT_T, &g);
  wl_layout la, ls;
  wl_workload *a = gen(&g, "tp=2,pp=2,mbs=2,gbs=8", 4, &la),
              *s = gen(&g, "tp=2,pp=2,mbs=2,gbs=8,pp_scatter=1", 4, &ls);
  assert_int_equal(la.pp_scatter, 0);
  assert_int_equal(ls.pp_scatter, 1);
  assert_null(strstr(la.spec, "pp_scatter"));
  assert_non_null(strstr(ls.spec, ",pp_scatter=1"));
  const double whole = 1024.0 * 2 * 1024 * 2;
  int m = 4; /* micro-batches: 8 / (2 x dp 1) */
  /* stage 0 is ranks 0-1, stage 1 ranks 2-3 (tp fastest) */
  for (int r = 0; r < 4; r++) {
    int first = r < 2;
    const char *send = first ? "pp.send.act" : "pp.send.grad";
    const char *recv = first ? "pp.recv.grad" : "pp.recv.act";
    const char *gather = first ? "pp.recv.grad.ag" : "pp.recv.act.ag";
    assert_int_equal(count_ops(a, r, send), m);
    assert_int_equal(count_ops(s, r, send), m);
    check_rel(named_bytes(a, r, send), m * whole, 0, "whole tensors sent");
    check_rel(named_bytes(s, r, send), m * whole / 2, 0, "pieces sent");
    check_rel(named_bytes(s, r, recv), m * whole / 2, 0, "pieces received");
    assert_int_equal(count_ops(a, r, gather), 0);
    assert_int_equal(count_ops(s, r, gather), m);
    check_rel(named_bytes(s, r, gather), m * whole, 0, "whole tensors gathered");
    /* each gather is a TP all-gather on the compute stream, after its receive */
    const wl_program *p = &s->programs[s->rank_program[r]];
    for (size_t i = 0; i < p->num_ops; i++) {
      const wl_op *o = &p->ops[i];
      if (strcmp(wl_op_name(p, o), gather))
        continue;
      assert_int_equal(o->kind, WL_OP_COLL);
      assert_int_equal(o->sub, WL_COLL_ALLGATHER);
      assert_int_equal(o->role, R_TP);
      assert_int_equal(o->stream, 0);
      int waits_recv = 0;
      for (uint32_t w = 0; w < o->wait_count; w++) {
        const wl_op *x = &p->ops[p->waits[o->wait_first + w]];
        waits_recv |= x->kind == WL_OP_RECV && !strcmp(wl_op_name(p, x), recv);
      }
      assert_true(waits_recv);
    }
  }
  check_rel(job_flops(s, WL_CLASS_GEMM), job_flops(a, WL_CLASS_GEMM), 0, "GEMM FLOPs");
  wl_workload_destroy(a);
  wl_workload_destroy(s);
  /* tp = 1: one rank per stage sends the whole tensor either way */
  a = gen(&g, "tp=1,pp=2,mbs=2,gbs=8", 2, NULL);
  s = gen(&g, "tp=1,pp=2,mbs=2,gbs=8,pp_scatter=1", 2, NULL);
  check_rel(named_bytes(s, 0, "pp.send.act"), named_bytes(a, 0, "pp.send.act"), 0, "tp=1");
  assert_int_equal(count_ops(s, 1, "pp.recv.act.ag"), 0);
  assert_int_equal(a->programs[a->rank_program[1]].num_ops, s->programs[s->rank_program[1]].num_ops);
  wl_workload_destroy(a);
  wl_workload_destroy(s);
}

/* The optimizer step's bytes per parameter of the shard (its flops are 12
 * per parameter) and the kernels it stands for.  Megatron's mixed-precision
 * optimizers, by hand from their step(): fp16 (SC'21): .float() copy of the
 * fp16 gradients 2 + 4, unscale and check 4 + 4, norm 4, Adam 28, copy back
 * 4 + 2 = 52; bf16 with fp32 gradients (the default): no copy, no unscale:
 * 38, per shard parameter with the distributed optimizer too; without
 * clipping no norm: 34.  The PyTorch frameworks, bf16 gradients (g = 2):
 * clipping reads the gradient for the norm and scales it in place, 3 g = 6;
 * fused Adam reads the gradient and reads and writes the fp32 shard, m and
 * v: g + 24 = 26; torch's multi-tensor and per-parameter paths: decay 8,
 * m 4 + g + 4, v *= beta2 8, v += g g 4 + g + 4, sqrt 8, / bias correction
 * 8, + eps 8, addcdiv 16: 72 + 2 g = 76.  Under FSDP the fp32 shard is the
 * weight; DeepSpeed writes its bf16 partition too (+ 2). */
static const wl_op *optimizer_op(const wl_workload *wl)
{
  const wl_program *p = &wl->programs[wl->rank_program[0]];
  for (size_t i = 0; i < p->num_ops; i++)
    if (p->ops[i].kind == WL_OP_COMPUTE && p->ops[i].sub == WL_CLASS_OPTIMIZER)
      return &p->ops[i];
  fail();
  return NULL;
}

static double optimizer_bytes_per_param(const wl_workload *wl)
{
  const wl_op *o = optimizer_op(wl);
  return o->bytes / (o->flops / 12);
}

static void test_optimizer__passes_per_parameter(void **state)
{
  (void)state;
  /* the layouts with dp=2 run on two GPUs */
  static const struct {
    const char *spec;
    double bytes;
  } cases[] = {
      {"dtype=fp16,gbs=1", 52},
      {"dtype=bf16,gbs=1", 38},
      {"dtype=bf16,gbs=1,grad_clip=0", 34},
      {"dtype=bf16,dp=2,zero=1,gbs=2", 38},
      {"dtype=bf16,dp=2,zero=3,dp_impl=fsdp2,gbs=2", 6 + 76},
      {"dtype=bf16,dp=2,zero=3,dp_impl=fsdp2,gbs=2,optim_impl=fused", 6 + 26},
      {"dtype=bf16,dp=2,zero=3,dp_impl=fsdp2,gbs=2,optim_impl=fused,grad_clip=0", 26},
      {"dtype=bf16,dp=2,zero=3,dp_impl=fsdp,gbs=2,optim_impl=loop", 6 + 76},
      /* fp32 gradients: 12 + 72 + 8 */
      {"dtype=bf16,dp=2,zero=3,dp_impl=fsdp,gbs=2,optim_impl=loop,grad_dtype=fp32", 92},
      {"dtype=bf16,dp=2,zero=3,dp_impl=deepspeed,gbs=2", 6 + 26 + 2},
  };
  wl_model g;
  model_of(GPT_T, &g);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_workload *wl = gen(&g, cases[i].spec, strstr(cases[i].spec, "dp=2") ? 2 : 1, NULL);
    check_rel(optimizer_bytes_per_param(wl), cases[i].bytes, 1e-12, cases[i].spec);
    wl_workload_destroy(wl);
  }
}

/* The kernels of the step: one for a fused or multi-tensor Adam; eight per
 * parameter tensor for a per-parameter loop.  GPT_T by hand: each of its 8
 * layers holds 16 tensors (q, k, v, o weights and biases, two LayerNorms'
 * weights and biases, the MLP's two weights and biases), the root 4 (token
 * and position embeddings, the final LayerNorm's two; the output is tied).
 * FSDP2 shards every tensor: 8 x 16 + 4 = 132 on each rank, 1,056 kernels;
 * FSDP1 cuts a unit's flat parameter in dp = 2 pieces, each overlapping
 * 1 + (T - 1) / 2 of its T tensors: 8 x 8.5 + 2.5 = 70.5, 564 kernels.
 * Clipping's norm is all-reduced over dp under both FSDPs, not without it. */
static void test_optimizer__kernels_and_norm(void **state)
{
  (void)state;
  static const struct {
    const char *spec;
    int kernels, norms;
  } cases[] = {
      {"dp=2,zero=3,dp_impl=fsdp2,gbs=2,optim_impl=loop", 1056, 1},
      {"dp=2,zero=3,dp_impl=fsdp,gbs=2,optim_impl=loop", 564, 1},
      {"dp=2,zero=3,dp_impl=fsdp,gbs=2", 1, 1},
      {"dp=2,zero=3,dp_impl=fsdp2,gbs=2,optim_impl=fused,grad_clip=0", 1, 0},
      {"dp=2,zero=1,gbs=2", 1, 0},
  };
  wl_model g;
  model_of(GPT_T, &g);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_layout l;
    wl_workload *wl = gen(&g, cases[i].spec, 2, &l);
    assert_int_equal(optimizer_op(wl)->batch, cases[i].kernels);
    assert_int_equal(count_ops(wl, 0, "fsdp.grad_norm.ar"), cases[i].norms);
    /* the spec names what is not the framework's default */
    assert_true((strstr(l.spec, "optim_impl=loop") != NULL) == (cases[i].kernels > 1));
    assert_true((strstr(l.spec, "grad_clip=0") != NULL) == !!strstr(cases[i].spec, "grad_clip=0"));
    wl_workload_destroy(wl);
  }
}

/* The embedding's dense gradient, by hand on llama3-8b (vocabulary 128,256,
 * already a multiple of 128 t for t = 1, 2): per micro-batch, the zero-filled
 * V/t x h bf16 gradient (2 B), and under Megatron its addition to the fp32
 * main gradient (read 2 + 4, write 4): 12 B a value; under FSDP2 the fill
 * alone.  Two micro-batches: twice. */
static void test_embedding__dense_gradient_per_micro_batch(void **state)
{
  (void)state;
  wl_model m;
  model_of("llama3-8b", &m);
  static const struct {
    const char *spec;
    int ranks;
    double t, bytes_per_value;
  } cases[] = {{"tp=2,mbs=1,gbs=2,grad_dtype=fp32", 2, 2, 12},
               {"tp=1,mbs=1,gbs=2,grad_dtype=bf16", 1, 1, 8},
               {"dp=2,zero=3,dp_impl=fsdp2,mbs=1,gbs=4", 2, 1, 2}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_workload *wl = gen(&m, cases[i].spec, cases[i].ranks, NULL);
    double v = 128256.0 / cases[i].t * 4096; /* 128,256 = 1,002 x 128: no padding */
    assert_int_equal(count_ops(wl, 0, "emb.grad.dense"), 2);
    check_rel(named_bytes(wl, 0, "emb.grad.dense"), 2 * v * cases[i].bytes_per_value, 1e-12,
              cases[i].spec);
    wl_workload_destroy(wl);
  }
}

/* dropout=0.1: every fused attention kernel carries WL_OPF_DROPOUT, each
 * residual add moves one more byte a value (the hidden dropout's mask,
 * written forward, read backward), and flash=0 emits the attention's dropout
 * passes; dropout=0 (the default): none of it.  The spec keeps the key. */
static void test_dropout__flags_masks_and_passes(void **state)
{
  (void)state;
  wl_model m;
  model_of(GPT_T, &m);
  for (int flash = 0; flash < 2; flash++) {
    double res[2] = {0, 0};
    int flagged[2] = {0, 0}, attn[2] = {0, 0}, passes[2] = {0, 0};
    for (int d = 0; d < 2; d++) {
      char spec[96];
      snprintf(spec, sizeof spec, "tp=1,mbs=1,gbs=1,flash=%d%s", flash, d ? ",dropout=0.1" : "");
      wl_layout l;
      wl_workload *wl = gen(&m, spec, 1, &l);
      if (d)
        assert_non_null(strstr(l.spec, ",dropout=0.1"));
      else
        assert_null(strstr(l.spec, "dropout"));
      const wl_program *p = &wl->programs[0];
      for (size_t i = 0; i < p->num_ops; i++) {
        const wl_op *o = &p->ops[i];
        if (o->kind != WL_OP_COMPUTE)
          continue;
        const char *nm = wl_op_name(p, o);
        if (o->sub == WL_CLASS_ATTENTION) {
          attn[d]++;
          flagged[d] += (o->flags & WL_OPF_DROPOUT) != 0;
        }
        if (!strncmp(nm, "attn.dropout", 12))
          passes[d]++;
      }
      res[d] = named_bytes(wl, 0, "res1") + named_bytes(wl, 0, "res2.bwd");
      wl_workload_destroy(wl);
    }
    /* GPT_T's layers x tokens x hidden values per residual op, bf16 (2 B) */
    double v = (double)m.layers * m.seq_len * m.hidden;
    check_rel(res[0], 2 * 3 * 2 * v, 1e-12, "residuals without dropout");
    check_rel(res[1], 2 * (3 * 2 + 1) * v, 1e-12, "residuals with the mask");
    assert_int_equal(flagged[0], 0);
    assert_int_equal(passes[0], 0);
    if (flash) {
      assert_true(attn[1] > 0);
      assert_int_equal(flagged[1], attn[1]);
      assert_int_equal(passes[1], 0);
    } else {
      assert_int_equal(attn[1], 0);
      assert_int_equal(passes[1], 2 * m.layers); /* forward and backward */
    }
  }
}

/* Sum of the FLOPs of one rank's recomputed compute ops of a class. */
static double recomputed_flops(const wl_workload *wl, int rank, int cls)
{
  const wl_program *p = &wl->programs[wl->rank_program[rank]];
  double sum = 0;
  for (size_t i = 0; i < p->num_ops; i++) {
    const wl_op *o = &p->ops[i];
    if (o->kind == WL_OP_COMPUTE && o->sub == cls && (o->flags & WL_OPF_RECOMPUTE))
      sum += o->flops;
  }
  return sum;
}

/* recompute_layers=N (Megatron-LM's --recompute-method block): the first N
 * layers of each model chunk re-run their forward, the rest none.  GPT_T's
 * eight layers are alike, so on one stage N = 3 recomputes 3/8 of the full
 * recomputation's GEMM FLOPs; with pp 2 and vpp 2 (chunks of two layers)
 * N = 1 recomputes half of them on every stage, and N = 5 every layer (a
 * chunk with fewer recomputes them all).  Memory: a recomputed layer keeps
 * its input, the others everything, so one stage's activations with N = 3
 * are 3/8 of recompute=full's plus 5/8 of recompute=none's. */
static void test_recompute_layers__first_of_each_chunk(void **state)
{
  (void)state;
  wl_model m;
  model_of(GPT_T, &m);
  static const struct {
    const char *base;
    int ranks, n;
    double share;
  } cases[] = {{"mbs=1,gbs=2", 1, 3, 3.0 / 8},
               {"pp=2,vpp=2,mbs=1,gbs=4", 2, 1, 0.5},
               {"pp=2,vpp=2,mbs=1,gbs=4", 2, 5, 1.0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char full[96], part[128];
    snprintf(full, sizeof full, "%s,recompute=full", cases[i].base);
    snprintf(part, sizeof part, "%s,recompute=full,recompute_layers=%d", cases[i].base,
             cases[i].n);
    wl_layout l;
    wl_workload *a = gen(&m, full, cases[i].ranks, NULL);
    wl_workload *b = gen(&m, part, cases[i].ranks, &l);
    assert_non_null(strstr(l.spec, ",recompute_layers="));
    for (int r = 0; r < cases[i].ranks; r++)
      check_rel(recomputed_flops(b, r, WL_CLASS_GEMM),
                cases[i].share * recomputed_flops(a, r, WL_CLASS_GEMM), 1e-12, part);
    wl_workload_destroy(a);
    wl_workload_destroy(b);
  }
  double act[3];
  const char *const specs[] = {"mbs=1,gbs=1,recompute=full",
                               "mbs=1,gbs=1,recompute=none",
                               "mbs=1,gbs=1,recompute=full,recompute_num_layers=3"};
  for (int i = 0; i < 3; i++) {
    wl_layout l;
    wl_memory mem;
    st_err err;
    assert_int_equal(wl_layout_parse(specs[i], 1, &m, &l, &err), 0);
    assert_int_equal(wl_memory_estimate(&m, &l, &mem, &err), 0);
    act[i] = mem.stages[0].activations_bytes;
  }
  check_rel(act[2], 3.0 / 8 * act[0] + 5.0 / 8 * act[1], 1e-12, "activations");
}

/* How many of rank r's recomputed ops are named `name`. */
static int recomputed_named(const wl_workload *w, int r, const char *name)
{
  const wl_program *p = &w->programs[w->rank_program[r]];
  int count = 0;
  for (size_t i = 0; i < p->num_ops; i++)
    count += (p->ops[i].flags & WL_OPF_RECOMPUTE) && !strcmp(wl_op_name(p, &p->ops[i]), name);
  return count;
}

/* recompute_early_stop (PyTorch's non-reentrant checkpoint, the PyTorch
 * FSDPs' default): a layer's re-run ends where the MLP's output projection
 * saves its input, so fc2 and the residual after it are not re-run.  GPT_T
 * (h = 1024, f = 4h, MHA) re-runs qkv 3h^2, proj h^2 and fc1 4h^2 of the
 * forward's 12h^2 GEMM FLOPs per token: 2/3.  Default on for fsdp and
 * fsdp2 with recompute=full, off for deepspeed (reentrant) and megatron;
 * the spec names it only where it differs from that. */
static void test_recompute_early_stop__not_the_output_projection(void **state)
{
  (void)state;
  wl_model m;
  model_of(GPT_T, &m);
  wl_layout l0, l1;
  wl_workload *full = gen(&m, "dp=2,mbs=1,gbs=4,zero=3,dp_impl=fsdp,recompute=full,"
                              "recompute_early_stop=0", 2, &l0);
  wl_workload *early = gen(&m, "dp=2,mbs=1,gbs=4,zero=3,dp_impl=fsdp,recompute=full", 2, &l1);
  assert_int_equal(l1.recompute_early_stop, 1);
  assert_null(strstr(l1.spec, "recompute_early_stop"));
  assert_non_null(strstr(l0.spec, ",recompute_early_stop=0"));
  for (int r = 0; r < 2; r++) {
    check_rel(recomputed_flops(early, r, WL_CLASS_GEMM),
              2.0 / 3 * recomputed_flops(full, r, WL_CLASS_GEMM), 1e-12, "early stop");
    assert_int_equal(recomputed_named(early, r, "mlp.fc2"), 0);
    assert_int_equal(recomputed_named(early, r, "res2"), 0);
    assert_int_equal(recomputed_named(early, r, "mlp.fc1"), 8 * 2); /* 8 layers, 2 micro-batches */
    assert_int_equal(recomputed_named(full, r, "mlp.fc2"), 8 * 2);
    assert_int_equal(recomputed_named(full, r, "res2"), 8 * 2);
  }
  /* the PyTorch frameworks' GEMMs carry WL_OPF_TORCH, Megatron's do not */
  wl_workload *mg = gen(&m, "dp=2,mbs=1,gbs=4,zero=1,recompute=full", 2, NULL);
  int tg = 0, mgg = 0;
  for (int r = 0; r < 2; r++) {
    const wl_program *pe = &early->programs[early->rank_program[r]];
    for (size_t i = 0; i < pe->num_ops; i++)
      if (pe->ops[i].kind == WL_OP_COMPUTE && pe->ops[i].sub == WL_CLASS_GEMM) {
        assert_true(pe->ops[i].flags & WL_OPF_TORCH);
        tg++;
      }
    const wl_program *pm = &mg->programs[mg->rank_program[r]];
    for (size_t i = 0; i < pm->num_ops; i++)
      if (pm->ops[i].kind == WL_OP_COMPUTE && pm->ops[i].sub == WL_CLASS_GEMM) {
        assert_false(pm->ops[i].flags & WL_OPF_TORCH);
        mgg++;
      }
  }
  assert_true(tg > 0 && mgg > 0);
  wl_workload_destroy(mg);
  wl_workload_destroy(full);
  wl_workload_destroy(early);
  static const struct {
    const char *spec;
    int gpus, want;
  } dflt[] = {{"dp=2,zero=3,dp_impl=fsdp2,recompute=full", 2, 1},
              {"dp=2,zero=3,dp_impl=deepspeed,recompute=full", 2, 0},
              {"dp=2,zero=3,dp_impl=fsdp,recompute=selective", 2, 0},
              {"dp=2,zero=1,recompute=full", 2, 0}};
  for (size_t i = 0; i < sizeof dflt / sizeof dflt[0]; i++) {
    wl_layout l;
    st_err err;
    assert_int_equal(wl_layout_parse(dflt[i].spec, dflt[i].gpus, &m, &l, &err), 0);
    assert_int_equal(l.recompute_early_stop, dflt[i].want);
    assert_null(strstr(l.spec, "recompute_early_stop"));
  }
  wl_layout l;
  st_err err;
  assert_int_equal(wl_layout_parse("dp=2,zero=3,dp_impl=deepspeed,recompute=full,"
                                   "recompute_early_stop=1",
                                   2, &m, &l, &err),
                   0);
  assert_non_null(strstr(l.spec, ",recompute_early_stop=1"));
}

/* recompute=op, torchtitan's per-op policy: a Llama block recomputes wk, wo
 * and w3 (the 2nd, 4th and 6th of its seven matmuls), a GPT block proj and
 * fc2 (2nd and 4th of four); attention is saved.  Memory: the block input
 * and the saved outputs, by hand. */
static void test_recompute_op__torchtitan_policy_by_hand(void **state)
{
  (void)state;
  wl_model m;
  model_of(LLAMA_T, &m);
  const double T = 2048, h = 1024, q = 16 * 64, k = 4 * 64, f = 2816;
  wl_workload *wl = gen(&m, "gbs=1,recompute=op", 1, NULL);
  check_rel(recomputed_flops(wl, 0, WL_CLASS_GEMM), 2 * 2 * T * (h * k + q * h + h * f), 1e-12,
            "llama: wk wo w3");
  assert_true(recomputed_flops(wl, 0, WL_CLASS_ATTENTION) == 0);
  assert_true(recomputed_flops(wl, 0, WL_CLASS_ELEMENTWISE) > 0);
  wl_workload_destroy(wl);
  wl_model g;
  model_of(GPT_T, &g);
  wl = gen(&g, "gbs=1,recompute=op", 1, NULL);
  check_rel(recomputed_flops(wl, 0, WL_CLASS_GEMM), 8 * 2 * 1024.0 * (1024.0 * 1024 + 4096 * 1024),
            1e-12, "gpt: proj fc2");
  wl_workload_destroy(wl);
  /* activations per layer, bf16: input 2Th, wq 2Tq, wv 2Tk, w1 2Tf, w2 2Th,
   * attention output 2Tq and its log-sum-exp 4 T heads */
  wl_layout lo;
  wl_memory mem;
  st_err err;
  assert_int_equal(wl_layout_parse("gbs=1,recompute=op", 1, &m, &lo, &err), ST_OK);
  assert_int_equal(wl_memory_estimate(&m, &lo, &mem, &err), ST_OK);
  wl_memory mn;
  assert_int_equal(wl_layout_parse("gbs=1,recompute=full", 1, &m, &lo, &err), ST_OK);
  assert_int_equal(wl_memory_estimate(&m, &lo, &mn, &err), ST_OK);
  double per = 2 * T * h + 2 * T * q + 2 * T * k + 2 * T * f + 2 * T * h + 2 * T * q + 4 * T * 16;
  check_rel(mem.stages[0].activations_bytes - mn.stages[0].activations_bytes,
            2 * (per - 2 * T * h), 1e-9, "op-SAC activations over full recompute");
  /* MoE and MLA blocks run other matmuls: refused, by name */
  wl_model x;
  model_of(MOE_T, &x);
  assert_int_equal(wl_layout_parse("gbs=1,recompute=op", 1, &x, &lo, &err), ST_EINPUT);
  assert_non_null(strstr(err.msg, "recompute=op"));
  assert_non_null(strstr(err.msg, "MoE"));
}


/* fp8: the output layer stays in the model dtype (Megatron-core's is not a
 * Transformer Engine module; MPT's lm head and torchtitan's float8 filter
 * leave it too); the PyTorch frameworks' te.Linear casts its input and
 * weight before each forward GEMM and its output gradient before dgrad,
 * 4 bytes an element (bf16 read, fp8 and its transpose written);
 * Megatron-core's modules fuse some (below).  GPT_T, T = 1024 tokens, QKV
 * 1024 -> 3072, MLP 1024 -> 4096. */
static void test_fp8__casts_and_output_layer_by_hand(void **state)
{
  (void)state;
  wl_model m;
  model_of(GPT_T, &m);
  const double T = 1024, h = 1024, q = 3072, f = 4096;
  for (int fsdp = 0; fsdp <= 1; fsdp++) {
    wl_workload *wl = gen(&m, fsdp ? "dp=2,gbs=2,zero=3,dp_impl=fsdp,dtype=fp8" : "dp=2,gbs=2,dtype=fp8",
                          2, NULL);
    const wl_program *p = &wl->programs[wl->rank_program[0]];
    int seen_out = 0, seen_qkv = 0;
    for (size_t i = 0; i < p->num_ops; i++) {
      const wl_op *o = &p->ops[i];
      const char *nm = wl_op_name(p, o);
      if (o->kind != WL_OP_COMPUTE || o->sub != WL_CLASS_GEMM)
        continue;
      if (!strncmp(nm, "out.logits", 10)) {
        assert_int_equal(o->dtype, WL_DTYPE_BF16);
        seen_out++;
      } else if (!strcmp(nm, "qkv")) {
        assert_int_equal(o->dtype, WL_DTYPE_FP8);
        seen_qkv++;
      }
    }
    assert_int_equal(seen_out, 3);
    assert_int_equal(seen_qkv, 8);
    if (fsdp) {
      check_rel(named_bytes(wl, 0, "qkv.fp8"), 8 * 4 * (T * h + h * q), 1e-12, "input + weight");
      check_rel(named_bytes(wl, 0, "qkv.dgrad.fp8"), 8 * 4 * T * q, 1e-12, "output gradient");
      check_rel(named_bytes(wl, 0, "mlp.fc2.fp8"), 8 * 4 * (T * f + f * h), 1e-12, "fc2 in + w");
      check_rel(named_bytes(wl, 0, "mlp.fc1.dgrad.fp8"), 8 * 4 * T * f, 1e-12, "fc1 dY");
      assert_int_equal(count_ops(wl, 0, "qkv.wgrad.fp8"), 0);
      assert_int_equal(count_ops(wl, 0, "out.logits.fp8"), 0);
    } else {
      /* Megatron-core: weights cached; qkv's and fc1's inputs cast in the
       * norm, fc2's in the activation, fc1's output gradient in the
       * activation's backward; proj's input and the output gradients of
       * qkv, proj and fc2 cast by kernels of their own */
      assert_int_equal(count_ops(wl, 0, "qkv.fp8"), 0);
      assert_int_equal(count_ops(wl, 0, "mlp.fc1.fp8"), 0);
      assert_int_equal(count_ops(wl, 0, "mlp.fc2.fp8"), 0);
      assert_int_equal(count_ops(wl, 0, "mlp.fc1.dgrad.fp8"), 0);
      check_rel(named_bytes(wl, 0, "proj.fp8"), 8 * 4 * T * h, 1e-12, "proj input");
      check_rel(named_bytes(wl, 0, "qkv.dgrad.fp8"), 8 * 4 * T * q, 1e-12, "qkv dY");
      check_rel(named_bytes(wl, 0, "proj.dgrad.fp8"), 8 * 4 * T * h, 1e-12, "proj dY");
      check_rel(named_bytes(wl, 0, "mlp.fc2.dgrad.fp8"), 8 * 4 * T * h, 1e-12, "fc2 dY");
      assert_int_equal(count_ops(wl, 0, "proj.wgrad.fp8"), 0);
    }
    wl_workload_destroy(wl);
  }
  /* a GEMM split in chunks (tp_overlap) casts its weight once, in the first
   * chunk: QKV's input T x h over two chunks, its weight h x q/2 once */
  wl_workload *wl = gen(&m, "tp=2,sp=1,tp_overlap=1,dp=2,gbs=2,zero=3,dp_impl=fsdp,dtype=fp8", 4, NULL);
  check_rel(named_bytes(wl, 0, "qkv.fp8"), 8 * 4 * (T * h + h * q / 2), 1e-12, "chunked qkv");
  wl_workload_destroy(wl);
}

/* fp8_recipe=current (Megatron-core, GPT_T, 8 layers, T = 1024): a cast of
 * its own reads the tensor for its amax first, 6 bytes an element; a cast
 * the norm or the activation would fuse is a kernel of its own reading their
 * bf16 output, 4 bytes an element.  fp8_param_gather=1: the distributed
 * optimizer gathers the layers' parameters in fp8 (1 B), the embedding in
 * bf16.  With SP, Transformer Engine's modules all-gather their quantized
 * inputs and output gradients in fp8 (1 B an element), the output layer in
 * bf16. */
static void test_fp8__current_scaling_param_gather_and_sp_gathers_by_hand(void **state)
{
  (void)state;
  wl_model m;
  model_of(GPT_T, &m);
  const double T = 1024, h = 1024, q = 3072, f = 4096;
  wl_workload *wl = gen(&m, "dp=2,gbs=2,dtype=fp8,fp8_recipe=current", 2, NULL);
  check_rel(named_bytes(wl, 0, "proj.fp8"), 8 * 6 * T * h, 1e-12, "proj input: amax + cast");
  check_rel(named_bytes(wl, 0, "qkv.dgrad.fp8"), 8 * 6 * T * q, 1e-12, "qkv dY");
  check_rel(named_bytes(wl, 0, "qkv.fp8"), 8 * 4 * T * h, 1e-12, "the norm's output, cast");
  check_rel(named_bytes(wl, 0, "mlp.fc1.fp8"), 8 * 4 * T * h, 1e-12, "fc1's input, cast");
  check_rel(named_bytes(wl, 0, "mlp.fc2.fp8"), 8 * 4 * T * f, 1e-12, "the activation's output");
  check_rel(named_bytes(wl, 0, "mlp.fc1.dgrad.fp8"), 8 * 4 * T * f, 1e-12, "fc1 dY, cast");
  wl_workload_destroy(wl);
  /* the parameter gathers: one bucket of everything without overlap */
  wl_model mm;
  model_of(GPT_T, &mm);
  /* not a layer's: the (tied) embedding, the positions, the final LayerNorm */
  double P = wl_model_params(&mm), E = (double)mm.vocab * h + (double)mm.seq_len * h + 2 * h;
  wl_layout l;
  wl = gen(&m, "dp=2,gbs=2,dtype=fp8,zero=1,grad_dtype=bf16", 2, &l);
  double bf16 = named_bytes(wl, 0, "dp.param.ag");
  wl_workload_destroy(wl);
  wl = gen(&m, "dp=2,gbs=2,dtype=fp8,zero=1,grad_dtype=bf16,fp8_param_gather=1", 2, &l);
  assert_non_null(strstr(l.spec, ",fp8_param_gather=1"));
  check_rel(bf16, 2 * P, 1e-12, "bf16 gather");
  check_rel(named_bytes(wl, 0, "dp.param.ag"), 2 * E + (P - E), 1e-12, "layers in fp8");
  wl_workload_destroy(wl);
  /* sequence parallelism: QKV's and fc1's inputs, proj's and fc2's output
   * gradients, and the re-gathers for wgrad travel in fp8; the output layer's
   * in bf16 */
  for (int fp8 = 0; fp8 <= 1; fp8++) {
    wl = gen(&m, fp8 ? "tp=2,sp=1,gbs=1,dtype=fp8" : "tp=2,sp=1,gbs=1", 2, NULL);
    double b = fp8 ? 1 : 2;
    check_rel(named_bytes(wl, 0, "attn.tp.ag"), 8 * T * h * b, 1e-12, "QKV input");
    check_rel(named_bytes(wl, 0, "mlp.tp.ag.wgrad"), 8 * T * h * b, 1e-12, "fc1 input again");
    check_rel(named_bytes(wl, 0, "attn.tp.ag.bwd"), 8 * T * h * b, 1e-12, "proj dY");
    check_rel(named_bytes(wl, 0, "out.tp.ag"), T * h * 2, 1e-12, "output layer, bf16");
    check_rel(named_bytes(wl, 0, "attn.tp.rs"), 8 * T * h * 2, 1e-12, "reduce-scatter, bf16");
    wl_workload_destroy(wl);
  }
  /* refusals */
  st_err err;
  assert_int_equal(wl_layout_parse("dp=2,gbs=2,fp8_recipe=current", 2, &m, &l, &err), ST_EINPUT);
  assert_string_equal(err.msg, "layout 'dp=2,gbs=2,fp8_recipe=current': fp8_recipe is Transformer "
                               "Engine's fp8 scaling: it needs dtype=fp8 (dtype is bf16)");
  assert_int_equal(wl_layout_parse("dp=2,gbs=2,dtype=fp8,fp8_param_gather=1", 2, &m, &l, &err),
                   ST_EINPUT);
  assert_string_equal(err.msg, "layout 'dp=2,gbs=2,dtype=fp8,fp8_param_gather=1': "
                               "fp8_param_gather is Megatron's distributed optimizer gathering fp8 "
                               "weights: it needs dtype=fp8, dp_impl=megatron and zero=1 or 2 "
                               "(dtype fp8, dp_impl megatron, zero 0)");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_model__builtins_load_with_their_dims),
      cmocka_unit_test(test_model__mla_sizes_multiply_in_doubles),
      cmocka_unit_test(test_model__errors_name_the_key),
      cmocka_unit_test(test_layout__inconsistencies_name_the_numbers),
      cmocka_unit_test(test_layout__defaults_and_canonical_spec),
      cmocka_unit_test(test_layout__attention_library_by_framework),
      cmocka_unit_test(test_flops__gpt_matches_sc21_eq3),
      cmocka_unit_test(test_flops__gqa_swiglu_moe_are_6NT_plus_attention),
      cmocka_unit_test(test_flops__ops_carry_executed_flops),
      cmocka_unit_test(test_bytes__per_rank_match_closed_forms),
      cmocka_unit_test(test_programs__shared_per_stage_at_scale),
      cmocka_unit_test(test_programs__same_input_same_workload),
      cmocka_unit_test(test_memory__activations_match_korthikanti),
      cmocka_unit_test(test_memory__peak_alive_is_the_whole_schedules_peak),
      cmocka_unit_test(test_memory__states_follow_megatron_bytes_per_param),
      cmocka_unit_test(test_schedule__step_times_on_the_engine),
      cmocka_unit_test(test_schedule__layouts_replay_without_deadlock),
      cmocka_unit_test(test_tp_overlap__off_is_the_default_byte_for_byte),
      cmocka_unit_test(test_tp_overlap__same_bytes_and_flops),
      cmocka_unit_test(test_tp_overlap__replays_faster_on_dgx_h100),
      cmocka_unit_test(test_tp_async__backward_allreduce_after_wgrad),
      cmocka_unit_test(test_pp_scatter__pieces_sent_then_gathered),
      cmocka_unit_test(test_optimizer__passes_per_parameter),
      cmocka_unit_test(test_optimizer__kernels_and_norm),
      cmocka_unit_test(test_recompute_layers__first_of_each_chunk),
      cmocka_unit_test(test_recompute_early_stop__not_the_output_projection),
      cmocka_unit_test(test_embedding__dense_gradient_per_micro_batch),
      cmocka_unit_test(test_dropout__flags_masks_and_passes),
      cmocka_unit_test(test_file__prices_every_op_as_generated),
      cmocka_unit_test(test_pipeline__nemo_405b_split_counts_embedding_and_loss),
      cmocka_unit_test(test_pipeline__layout_strings_follow_megatron),
      cmocka_unit_test(test_pipeline__bad_splits_name_the_place),
      cmocka_unit_test(test_pipeline__defaults_spelt_out_keep_the_workload),
      cmocka_unit_test(test_experts__groups_follow_megatron_rank_generator),
      cmocka_unit_test(test_experts__gradients_and_memory_follow_the_expert_groups),
      cmocka_unit_test(test_dp_impl__op_structure_by_hand),
      cmocka_unit_test(test_dp_impl__memory_by_hand),
      cmocka_unit_test(test_dp_impl__fsdp2_pipeline_by_hand),
      cmocka_unit_test(test_dp_impl__fsdp2_no_reshard_by_hand),
      cmocka_unit_test(test_dp_impl__sp_relayout_by_hand),
      cmocka_unit_test(test_dp_impl__async_tp_by_hand),
      cmocka_unit_test(test_dp_impl__backward_prefetch_orders_the_gathers),
      cmocka_unit_test(test_eager__llama_elementwise_bytes_by_hand),
      cmocka_unit_test(test_activation__fused_bytes_by_hand),
      cmocka_unit_test(test_ce_fusion__loss_bytes_collectives_and_memory_by_hand),
      cmocka_unit_test(test_train_metrics__passes_after_each_backward_by_hand),
      cmocka_unit_test(test_moe_dispatcher__flex_marks_the_expert_all_to_alls),
      cmocka_unit_test(test_model__qk_norm_key),
      cmocka_unit_test(test_memory__fp8_keeps_linear_inputs_in_one_byte),
      cmocka_unit_test(test_moe_a2a_overlap__same_work_reordered),
      cmocka_unit_test(test_moe_a2a_overlap__sends_wait_for_the_residual),
      cmocka_unit_test(test_moe_a2a_overlap__hides_all_but_the_lone_units),
      cmocka_unit_test(test_moe_shared_overlap__same_work_reordered),
      cmocka_unit_test(test_moe_shared_overlap__hides_the_all_to_alls),
      cmocka_unit_test(test_recompute_modules__rerun_forward_ops_and_drop_their_activations),
      cmocka_unit_test(test_fp8__current_scaling_param_gather_and_sp_gathers_by_hand),
      cmocka_unit_test(test_recompute_op__torchtitan_policy_by_hand),
      cmocka_unit_test(test_fp8__casts_and_output_layer_by_hand),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
