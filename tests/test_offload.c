/* test_offload.c — host-memory offload (layout key offload): the layout's
 * rules, the memory model's bytes, the generated copies and CPU step, the
 * host-memory endpoints of the platform, and the engine's step time, each
 * against numbers worked out by hand in the comments.
 *
 * Hand figures used throughout:
 *   llama3-70b (80 layers, h 8192, 64 heads, 8 KV heads of 128, ffn 28672,
 *   vocab 128256, untied): per layer q, o 8192^2 each, k, v 8192 x 1024
 *   each, MLP 3 x 8192 x 28672, two RMSNorms of 8192:
 *     2 x 67,108,864 + 2 x 8,388,608 + 704,643,072 + 2 x 8,192 = 855,654,400;
 *   x 80 = 68,452,352,000; embedding and output 2 x 128256 x 8192 =
 *   2,101,346,304, final norm 8,192: P = 70,553,706,496 parameters.
 *   With dp = 8 a rank's shard is s = P / 8 = 8,819,213,312 parameters.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "sim.h"
#include "sim_fork.h"

#define DATA ST_TEST_DATA_DIR "/"

static void check_rel(double got, double want, double tol, const char *what)
{
  double rel = fabs(got - want) / fabs(want);
  if (!(rel <= tol)) {
    print_error("%s: got %.12g, want %.12g (rel. error %.3g > %.3g)\n", what, got, want, rel, tol);
    fail();
  }
}

static wl_model model_70b(void)
{
  wl_model m;
  st_err err = {0};
  assert_int_equal(wl_model_load("llama3-70b", &m, &err), 0);
  m.seq_len = 4096;
  return m;
}

static wl_layout layout(const char *spec, int gpus, const wl_model *m)
{
  wl_layout l;
  st_err err = {0};
  if (wl_layout_parse(spec, gpus, m, &l, &err))
    fail_msg("%s: %s", spec, err.msg);
  return l;
}

/* ---- the layout key --------------------------------------------------------- */
static void test_layout__bad_offload_values_are_located_errors(void **state)
{
  (void)state;
  wl_model m = model_70b();
  static const struct {
    const char *spec, *msg;
  } rows[] = {
      {"dp=8,zero=3,offload=cpu",
       "key 'offload' value 'cpu' is unknown (known: none, optimizer, params, both)"},
      {"dp=8,offload=optimizer",
       "offload=optimizer needs zero=1, 2 or 3 (DeepSpeed offloads the ZeRO partitions: "
       "offload_optimizer from stage 1, offload_param at stage 3); zero is 0"},
      {"dp=8,zero=2,offload=params",
       "offload=params needs zero=3 (DeepSpeed's offload_param is available only with ZeRO stage "
       "3, where each rank holds a parameter shard); zero is 2"},
      {"dp=8,zero=1,offload=both",
       "offload=both needs zero=3 (DeepSpeed's offload_param is available only with ZeRO stage "
       "3, where each rank holds a parameter shard); zero is 1"},
      {"dp=8,zero=3,dp_impl=fsdp,offload=both",
       "offload=both with dp_impl=fsdp is not modelled (PyTorch FSDP's CPU offload moves "
       "parameters, gradients and the optimizer step together on a schedule of its own): use "
       "dp_impl=deepspeed or megatron"},
      {"dp=8,zero=3,dp_impl=fsdp2,offload=optimizer",
       "offload=optimizer with dp_impl=fsdp2 is not modelled (PyTorch FSDP's CPU offload moves "
       "parameters, gradients and the optimizer step together on a schedule of its own): use "
       "dp_impl=deepspeed or megatron"},
      {"dp=8,zero=1,overlap_param_gather=1,offload=optimizer",
       "offload=optimizer cannot be combined with overlap_param_gather=1 (the parameter "
       "all-gathers wait for the updated shard copied back from the host)"},
      {"dp=8,zero=1,offload=optimizer,offload=none", "key 'offload' is given twice"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    wl_layout l;
    st_err err = {0};
    assert_int_equal(wl_layout_parse(rows[i].spec, 8, &m, &l, &err), ST_EINPUT);
    char want[1024];
    snprintf(want, sizeof want, "layout '%s': %s", rows[i].spec, rows[i].msg);
    assert_string_equal(err.msg, want);
  }
  /* the canonical spec names offload only when it is on */
  wl_layout l = layout("dp=8,zero=1,offload=none", 8, &m);
  assert_null(strstr(l.spec, "offload"));
  l = layout("dp=8,zero=3,dp_impl=deepspeed,offload=both", 8, &m);
  assert_int_equal(l.offload, WL_OFFLOAD_BOTH);
  assert_non_null(strstr(l.spec, ",dp_impl=deepspeed,offload=both"));
}

/* ---- memory ------------------------------------------------------------------- */
/* The must-show numbers: llama3-70b, zero=3 over the 8 H100 (80 GB) of one
 * DGX H100.  Without offload the states alone are 2 + 4 + 12 = 18 bytes per
 * shard parameter: weights 2 s = 17,638,426,624, fp32 gradients 4 s =
 * 35,276,853,248, optimizer 12 s = 105,830,559,744, 158,745,839,616 bytes
 * > 80e9: it cannot fit, whatever the activations.  offload=optimizer moves
 * the gradients and the optimizer state to the host, which holds 12 s + 4 s
 * (the fp32 gradient partition) = 141,107,412,992 bytes per rank,
 * 1,128,859,303,936 per node of 8 (under the DGX H100's 2,048e9); both adds
 * the weights (2 s) on the host: 158,745,839,616 per rank. */
static void test_memory__70b_on_one_dgx_h100_by_hand(void **state)
{
  (void)state;
  wl_model m = model_70b();
  assert_true(wl_model_params(&m) == 70553706496.0);
  const double s = 8819213312.0, device = 80e9, node = 2048e9;
  static wl_memory none, opt, both;
  st_err err = {0};
  wl_layout l0 = layout("tp=1,pp=1,dp=8,zero=3,mbs=1,gbs=8,recompute=full", 8, &m);
  wl_layout l1 =
      layout("tp=1,pp=1,dp=8,zero=3,mbs=1,gbs=8,recompute=full,offload=optimizer", 8, &m);
  wl_layout l2 = layout("tp=1,pp=1,dp=8,zero=3,mbs=1,gbs=8,recompute=full,offload=both", 8, &m);
  assert_int_equal(wl_memory_estimate(&m, &l0, &none, &err), 0);
  assert_int_equal(wl_memory_estimate(&m, &l1, &opt, &err), 0);
  assert_int_equal(wl_memory_estimate(&m, &l2, &both, &err), 0);
  const wl_memory_stage *a = &none.stages[0], *b = &opt.stages[0], *c = &both.stages[0];
  assert_true(a->weights_bytes == 2 * s && a->grads_bytes == 4 * s && a->optimizer_bytes == 12 * s);
  assert_true(a->host_bytes == 0);
  assert_true(none.peak_bytes > device); /* does NOT fit */
  assert_true(b->weights_bytes == 2 * s && b->grads_bytes == 0 && b->optimizer_bytes == 0);
  assert_true(b->host_bytes == 141107412992.0);
  assert_true(opt.peak_bytes == none.peak_bytes - 4 * s - 12 * s);
  assert_true(opt.peak_bytes < device); /* fits */
  assert_true(wl_memory_host_per_node(&l1, &opt, 8) == 1128859303936.0);
  assert_true(wl_memory_host_per_node(&l1, &opt, 8) < node);
  assert_true(c->weights_bytes == 0 && c->host_bytes == 158745839616.0);
  assert_true(both.peak_bytes == opt.peak_bytes - 2 * s);
  /* four GPUs per node hold half of it */
  assert_true(wl_memory_host_per_node(&l1, &opt, 4) == 4 * 141107412992.0);
}

/* zero=1 keeps the whole fp32 gradient buffer on the GPU (4 P); only the
 * optimizer state (12 P / 8) leaves, and the host holds 16 P / 8 per rank
 * (llama3-8b: P = 8,030,261,248, shard 1,003,782,656). */
static void test_memory__zero1_keeps_its_gradient_buffer(void **state)
{
  (void)state;
  wl_model m;
  st_err err = {0};
  assert_int_equal(wl_model_load("llama3-8b", &m, &err), 0);
  const double P = wl_model_params(&m), s = P / 8;
  assert_true(P == 8030261248.0);
  static wl_memory mem;
  wl_layout l = layout("tp=1,pp=1,dp=8,zero=1,mbs=1,gbs=8,offload=optimizer", 8, &m);
  assert_int_equal(wl_memory_estimate(&m, &l, &mem, &err), 0);
  assert_true(mem.stages[0].grads_bytes == 4 * P);
  assert_true(mem.stages[0].optimizer_bytes == 0);
  assert_true(mem.stages[0].host_bytes == 16 * s);
}

/* ---- the generated ops ---------------------------------------------------------- */
/* A small Llama-style model: 2 layers, h 4096, 32 heads (no GQA), ffn 14336,
 * vocab 32768 (a multiple of 128: no padding), untied.  Per layer: q, k, v, o
 * 4 x 4096^2 = 67,108,864, MLP 3 x 4096 x 14336 = 176,160,768, two norms
 * 8,192: 243,277,824; x 2 = 486,555,648; embedding and output 2 x 32768 x
 * 4096 = 268,435,456, final norm 4,096: P = 754,995,200, shard over 8:
 * 94,374,400. */
static const char small_model[] =
    "{\"name\": \"offload-small\", \"layers\": 2, \"hidden\": 4096, \"heads\": 32, "
    "\"kv_heads\": 32, \"ffn_hidden\": 14336, \"ffn_act\": \"swiglu\", \"vocab\": 32768, "
    "\"seq_len\": 128, \"tie_embeddings\": false}";
#define SMALL_P 754995200.0
#define SMALL_LAYER 243277824.0
#define SMALL_ROOT 268439552.0 /* embedding + output + final norm */

static wl_model model_small(void)
{
  wl_model m;
  st_err err = {0};
  if (wl_model_parse(small_model, "small", &m, &err))
    fail_msg("%s", err.msg);
  assert_true(wl_model_params(&m) == SMALL_P);
  return m;
}

typedef struct op_sums {
  int d2h, h2d, cpu, gpu_adam;
  double d2h_bytes, h2d_bytes, cpu_flops;
} op_sums;

static op_sums sum_ops(const wl_workload *wl)
{
  op_sums t = {0};
  const wl_program *p = &wl->programs[0];
  for (size_t i = 0; i < p->num_ops; i++) {
    const wl_op *o = &p->ops[i];
    if (o->kind == WL_OP_COPY && o->sub == WL_COPY_D2H) {
      t.d2h++;
      t.d2h_bytes += o->bytes;
      assert_string_equal(p->stream_names[o->stream], "d2h");
    } else if (o->kind == WL_OP_COPY) {
      t.h2d++;
      t.h2d_bytes += o->bytes;
      assert_string_equal(p->stream_names[o->stream], "h2d");
    } else if (o->kind == WL_OP_COMPUTE && (o->flags & WL_OPF_HOST)) {
      t.cpu++;
      t.cpu_flops += o->flops;
      assert_string_equal(p->stream_names[o->stream], "cpu");
    } else if (o->kind == WL_OP_COMPUTE && o->sub == WL_CLASS_OPTIMIZER) {
      t.gpu_adam++;
    }
  }
  return t;
}

/* zero=1, offload=optimizer: one reduce-scatter of the fp32 gradients, its
 * shard to the host (4 x 94,374,400 = 377,497,600 bytes), the CPU's Adam on
 * it (12 FLOPs a parameter: 1,132,492,800, one sub-group of at most 1e9),
 * the bf16 shard back (188,748,800 bytes), no GPU optimizer op.  zero=3
 * with offload=params over 2 micro-batches: each fetches the root's shard
 * (268,439,552 / 8 x 2 = 67,109,888 bytes) and each layer's twice (forward
 * and backward: 4 x 243,277,824 / 8 x 2 = 243,277,824), 620,775,424 bytes
 * in all; the GPU steps and its updated bf16 shard goes back to the host
 * (188,748,800 bytes). */
static void test_gen__offload_copies_and_cpu_step_by_hand(void **state)
{
  (void)state;
  wl_model m = model_small();
  st_err err = {0};
  wl_workload *wl = NULL;
  wl_layout l = layout("tp=1,pp=1,dp=8,zero=1,mbs=1,gbs=8,offload=optimizer", 8, &m);
  assert_int_equal(wl_generate(&m, &l, &wl, &err), 0);
  assert_int_equal(wl->programs[0].num_streams, 10);
  op_sums t = sum_ops(wl);
  assert_int_equal(t.d2h, 1);
  assert_true(t.d2h_bytes == 377497600.0);
  assert_int_equal(t.cpu, 1);
  assert_true(t.cpu_flops == 12 * 94374400.0);
  assert_int_equal(t.h2d, 1);
  assert_true(t.h2d_bytes == 188748800.0);
  assert_int_equal(t.gpu_adam, 0);
  assert_int_equal(wl_workload_host_use(wl), WL_HOST_COPIES | WL_HOST_COMPUTE);
  wl_workload_destroy(wl);

  l = layout("tp=1,pp=1,dp=8,zero=3,mbs=1,gbs=16,offload=params", 8, &m);
  assert_int_equal(wl_generate(&m, &l, &wl, &err), 0);
  t = sum_ops(wl);
  assert_int_equal(t.h2d, 2 * (1 + 2 * 2));
  assert_true(t.h2d_bytes == 2 * (SMALL_ROOT / 8 * 2 + 4 * SMALL_LAYER / 8 * 2));
  assert_true(t.h2d_bytes == 620775424.0);
  assert_int_equal(t.d2h, 1);
  assert_true(t.d2h_bytes == 188748800.0);
  assert_int_equal(t.cpu, 0);
  assert_int_equal(t.gpu_adam, 1);
  wl_workload_destroy(wl);

  /* a 70B shard is stepped in DeepSpeed's sub-groups of 1e9 parameters:
   * 8,819,213,312 = 8 x 1e9 + 819,213,312, each followed by its copy back */
  wl_model b = model_70b();
  l = layout("tp=1,pp=1,dp=8,zero=3,mbs=1,gbs=8,recompute=full,offload=optimizer", 8, &b);
  assert_int_equal(wl_generate(&b, &l, &wl, &err), 0);
  t = sum_ops(wl);
  assert_int_equal(t.cpu, 9);
  assert_int_equal(t.h2d, 9);
  assert_true(t.cpu_flops == 12 * 8819213312.0);
  assert_true(t.h2d_bytes == 2 * 8819213312.0);
  wl_workload_destroy(wl);
}

/* ---- the workload format ------------------------------------------------------- */
static void test_format__copies_and_host_ops_round_trip_and_bad_ones_are_located(void **state)
{
  (void)state;
  const char *head = "{\"format\":\"simtrain-workload\",\"version\":1,\"num_ranks\":1,"
                     "\"programs\":[{\"name\":\"p\",\"streams\":[\"compute\",\"d2h\"],\"ops\":[";
  const char *tail = "]}],\"rank_map\":{\"program\":0}}";
  static const struct {
    const char *ops, *msg; /* msg NULL: reads */
  } rows[] = {
      {"{\"op\":\"copy\",\"stream\":\"d2h\",\"dir\":\"d2h\",\"bytes\":1e9},"
       "{\"op\":\"compute\",\"class\":\"optimizer\",\"host\":true,\"flops\":12e9,\"waits\":[0]}",
       NULL},
      {"{\"op\":\"copy\",\"bytes\":1}", "programs[0].ops[0]: key 'dir' is missing"},
      {"{\"op\":\"copy\",\"dir\":\"sideways\",\"bytes\":1}",
       "programs[0].ops[0]: 'dir' is 'sideways', expected one of d2h, h2d"},
      {"{\"op\":\"copy\",\"dir\":\"h2d\",\"bytes\":-1}", "programs[0].ops[0]: 'bytes' is negative"},
      {"{\"op\":\"copy\",\"dir\":\"h2d\",\"role\":\"x\"}",
       "programs[0].ops[0]: key 'role' does not apply to a 'copy' op"},
      {"{\"op\":\"compute\",\"dir\":\"h2d\",\"duration_s\":1}",
       "programs[0].ops[0]: key 'dir' does not apply to a 'compute' op"},
      {"{\"op\":\"compute\",\"host\":true,\"bytes\":100}",
       "programs[0].ops[0]: a host op needs 'duration_s', or class 'optimizer' with 'flops' "
       "(priced at the platform's host Adam rate)"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char doc[2048];
    snprintf(doc, sizeof doc, "%s%s%s", head, rows[i].ops, tail);
    wl_workload *wl = NULL;
    st_err err = {0};
    int rc = wl_workload_parse(doc, strlen(doc), "w.json", &wl, &err);
    if (!rows[i].msg) {
      assert_int_equal(rc, 0);
      const wl_op *o = wl->programs[0].ops;
      assert_true(o[0].kind == WL_OP_COPY && o[0].sub == WL_COPY_D2H && o[0].bytes == 1e9);
      assert_true((o[1].flags & WL_OPF_HOST) && o[1].sub == WL_CLASS_OPTIMIZER);
      char *json = wl_workload_to_json(wl, 0);
      wl_workload *back = NULL;
      assert_int_equal(wl_workload_parse(json, strlen(json), "back", &back, &err), 0);
      char *again = wl_workload_to_json(back, 0);
      assert_string_equal(json, again); /* the same bytes */
      assert_non_null(strstr(json, "\"op\":\"copy\""));
      assert_non_null(strstr(json, "\"dir\":\"d2h\""));
      assert_non_null(strstr(json, "\"host\":true"));
      free(json);
      free(again);
      wl_workload_destroy(back);
      wl_workload_destroy(wl);
      continue;
    }
    assert_int_equal(rc, ST_EINPUT);
    char want[1024];
    snprintf(want, sizeof want, "workload 'w.json': %s", rows[i].msg);
    assert_string_equal(err.msg, want);
  }
}

/* ---- the platform ------------------------------------------------------------------ */
static plat_cluster *load(const char *arg)
{
  plat_cluster *c = NULL;
  st_err err = {0};
  if (plat_cluster_load(arg, &c, &err))
    fail_msg("%s", err.msg);
  return c;
}

/* dgx-h100:2: 16 GPUs, 2 nodes; host memory adds a link per GPU and
 * direction and one memory link per node (2 x 16 + 2 = 34).  GPU 9 (node 1)
 * reaches host-1 (endpoint 16 + 1) over gpuhost-9-up (64 GB/s, H100's PCIe
 * Gen5 x16; 1 us) and hostmem-1 (2 sockets x 8 DDR5-4800 channels x 8 bytes
 * = 614.4 GB/s).  dgx-v100: the GPU's PCIe link (16 GB/s, 0.5 us) is its
 * link to host memory, so only the memory links are new. */
static void test_platform__host_routes_by_hand(void **state)
{
  (void)state;
  plat_cluster *c = load("dgx-h100:2");
  int before = c->num_links;
  st_err err = {0};
  assert_int_equal(plat_route_get(c, 0, 16, &(plat_route){0}, &err), ST_EINPUT);
  assert_int_equal(plat_cluster_host_memory(c, 1, &err), 0);
  assert_int_equal(c->num_links, before + 34);
  assert_true(c->host_mem_bytes == 2048e9 && c->host_adam_params_per_s == 3.89e9);
  plat_route r;
  assert_int_equal(plat_route_get(c, 9, plat_host_endpoint(c, 1), &r, &err), 0);
  assert_int_equal(r.n, 2);
  assert_string_equal(r.links[0].name, "gpuhost-9-up");
  assert_int_equal(r.links[0].kind, PLAT_LINK_HOST);
  assert_true(r.links[0].bw_Bps == 64e9 && r.links[0].lat_s == 1e-6);
  assert_string_equal(r.links[1].name, "hostmem-1");
  assert_int_equal(r.links[1].kind, PLAT_LINK_HOSTMEM);
  assert_true(r.links[1].bw_Bps == 614.4e9);
  assert_true(r.latency_s == 1e-6 && r.bw_Bps == 64e9 && r.switches == 0);
  assert_int_equal(plat_route_get(c, plat_host_endpoint(c, 1), 9, &r, &err), 0);
  assert_int_equal(r.n, 2);
  assert_string_equal(r.links[0].name, "gpuhost-9-down"); /* the GPU's own link first */
  assert_string_equal(r.links[1].name, "hostmem-1");
  assert_int_equal(plat_route_get(c, 3, plat_host_endpoint(c, 1), &r, &err), ST_EINPUT);
  assert_string_equal(err.msg, "cluster 'dgx-h100:2': no route from gpu-3 to host-1 (host memory "
                               "is reached from its node's own GPUs only)");
  assert_int_equal(plat_cluster_host_memory(c, 0, &err), 0);
  assert_int_equal(c->num_links, before);
  plat_cluster_destroy(c);

  c = load("dgx-v100:1");
  before = c->num_links;
  assert_int_equal(plat_cluster_host_memory(c, 1, &err), 0);
  assert_int_equal(c->num_links, before + 1);
  assert_int_equal(plat_route_get(c, 2, plat_host_endpoint(c, 0), &r, &err), 0);
  assert_string_equal(r.links[0].name, "pcie-2-up");
  assert_true(r.links[0].bw_Bps == 16e9 && r.latency_s == 0.5e-6);
  assert_string_equal(r.links[1].name, "hostmem-0");
  assert_true(r.links[1].bw_Bps == 136.5e9);
  plat_cluster_destroy(c);

  /* GB200: NVLink-C2C, 900 GB/s both ways for a superchip's 2 GPUs */
  c = load("gb200-nvl72");
  assert_true(c->host_link_Bps == 225e9 && c->host_mem_bytes == 17280e9);
  plat_cluster_destroy(c);

  c = load("tpu-v4");
  assert_int_equal(plat_cluster_host_memory(c, 1, &err), ST_EINPUT);
  assert_string_equal(err.msg, "cluster 'tpu-v4': the GPUs' link to host memory has no rate (the "
                               "TPU-v4 has none built in): give node.host.link_GBps or node.pcie "
                               "in a cluster spec (docs/platforms.md, \"Host memory\")");
  plat_cluster_destroy(c);
}

static void test_platform__bad_host_keys_are_located_errors(void **state)
{
  (void)state;
  const char *a = "{\"name\":\"x\",\"device\":\"H100-SXM\",\"node\":{\"gpus\":1,"
                  "\"intra\":{\"kind\":\"none\"}";
  const char *z = "},\"fabric\":{\"kind\":\"switch\"}}";
  static const struct {
    const char *node, *msg;
  } rows[] = {
      {",\"host\":{\"colour\":1}", "node.host: key 'colour' is unknown (see docs/platforms.md)"},
      {",\"host\":{\"memory_GB\":-1}", "node.host: 'memory_GB' is -1; it must be greater than 0"},
      {",\"host\":{\"link_GBps\":\"fast\"}",
       "node.host: 'link_GBps' is a string, expected a number"},
      {",\"host\":{\"adam_Gparams_per_s\":0}",
       "node.host: 'adam_Gparams_per_s' is 0; it must be greater than 0"},
      {",\"pcie\":{\"GBps\":16,\"lat_us\":0.5},\"host\":{\"link_GBps\":32}",
       "node.host: 'link_GBps' is given, but node.pcie models the GPU's PCIe link, which is its "
       "link to host memory: give one of them"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char p[64];
    snprintf(p, sizeof p, "/tmp/test_offload_%d_%zu.json", (int)getpid(), i);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fprintf(f, "%s%s%s", a, rows[i].node, z);
    fclose(f);
    plat_cluster *c = NULL;
    st_err err = {0};
    assert_int_equal(plat_cluster_load(p, &c, &err), ST_EINPUT);
    char want[1024];
    snprintf(want, sizeof want, "spec '%s': %s", p, rows[i].msg);
    assert_string_equal(err.msg, want);
    unlink(p);
  }
}

/* SimGrid, the built platform and its written XML route every GPU to its
 * node's host memory and back as plat_route_get does (a child per engine). */
static const char *child_arg;
static char child_fail[512];

static int child_routes(void *u, int index, st_buf *reply, st_err *err)
{
  (void)u;
  (void)index;
  (void)reply;
  int argc = 2;
  char a0[] = "test", a1[] = "--log=root.thres:critical";
  char *argv[] = {a0, a1, NULL};
  simgrid_init(&argc, argv);
  plat_cluster *c = NULL, *spec = NULL;
  int rc = plat_cluster_load(child_arg, &c, err);
  if (!rc)
    rc = plat_cluster_load("dgx-h100:2", &spec, err);
  if (!rc)
    rc = plat_cluster_host_memory(c, 1, err);
  if (!rc)
    rc = plat_cluster_host_memory(spec, 1, err);
  sg_host_t hosts[32];
  if (!rc)
    rc = plat_cluster_build(c, (void **)hosts, err);
  xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
  for (int g = 0; !rc && g < 16; g++)
    for (int back = 0; back < 2 && !rc; back++) {
      int h = plat_host_endpoint(spec, g / 8), s = back ? h : g, d = back ? g : h;
      plat_route r;
      rc = plat_route_get(spec, s, d, &r, err);
      xbt_dynar_reset(links);
      sg_host_get_route(hosts[s], hosts[d], links);
      if (!rc && (int)xbt_dynar_length(links) != r.n)
        rc = st_err_set(err, ST_ESIM, "%d -> %d: %lu links in SimGrid, %d expected", s, d,
                        xbt_dynar_length(links), r.n);
      for (int i = 0; !rc && i < r.n; i++) {
        const char *nm = sg_link_get_name(xbt_dynar_get_as(links, (unsigned long)i, sg_link_t));
        if (strcmp(nm, r.links[i].name))
          rc = st_err_set(err, ST_ESIM, "%d -> %d: link %d is %s, not %s", s, d, i, nm,
                          r.links[i].name);
      }
      if (!rc && sg_host_get_route_latency(hosts[s], hosts[d]) != r.latency_s)
        rc = st_err_set(err, ST_ESIM, "%d -> %d: latency", s, d);
    }
  xbt_dynar_free(&links);
  plat_cluster_destroy(c);
  plat_cluster_destroy(spec);
  return rc;
}

static void routes_in_child(const char *arg)
{
  child_arg = arg;
  char *data = NULL;
  size_t len;
  st_err err = {0};
  int rc = drv_isolated(child_routes, NULL, 0, &data, &len, &err);
  free(data);
  if (rc) {
    snprintf(child_fail, sizeof child_fail, "%s: %s", arg, err.msg);
    fail_msg("%s", child_fail);
  }
}

static void test_platform__simgrid_and_xml_route_to_host_memory_alike(void **state)
{
  (void)state;
  routes_in_child("dgx-h100:2");
  plat_cluster *c = load("dgx-h100:2");
  st_err err = {0};
  assert_int_equal(plat_cluster_host_memory(c, 1, &err), 0);
  char path[64];
  snprintf(path, sizeof path, "/tmp/test_offload_%d.xml", (int)getpid());
  FILE *f = fopen(path, "w");
  assert_int_equal(plat_cluster_write_xml(c, f, &err), 0);
  fclose(f);
  plat_cluster_destroy(c);
  routes_in_child(path);
  unlink(path);
}

/* ---- the engine ------------------------------------------------------------------- */
/* tests/data/offload_exact.json: 4 GPUs, each 10 GB/s (2 us) to host
 * memory, 30 GB/s of host memory for all, CPU Adam 4e9 parameters/s for the
 * node, 1e9 per GPU.  Each copying rank: a 0.15 s GPU op, and meanwhile 1e9
 * bytes to the host, the CPU's step over 4e8 parameters (flops 4.8e9), 5e8
 * bytes back.  Four copying at once share the memory: 30 / 4 = 7.5 GB/s
 * each (below their 10): 0.133333 s + 2 us, 0.4 s, 0.066667 s + 2 us =
 * 0.600004 s.  Two copying (ranks 2 and 3 only compute): their own links
 * bind (10 GB/s; 15 is their share of the memory): 0.1 s + 2 us + 0.4 s
 * (the CPUs are still split over the node's 4 GPUs) + 0.05 s + 2 us =
 * 0.550004 s.  The GPU op hides 0.15 s of it. */
static wl_workload *exact_workload(int copying)
{
  const char *streams[] = {"compute", "d2h", "cpu", "h2d"};
  wl_workload *wl = wl_workload_create(4, 0, NULL);
  int p = wl_program_add(wl, "offload", 4, streams);
  int q = wl_program_add(wl, "gpu", 1, streams);
  wl_op gpu = wl_op_compute(0, 0.15);
  wl_program_append(&wl->programs[p], &gpu, NULL, 0);
  wl_program_append(&wl->programs[q], &gpu, NULL, 0);
  wl_op d2h = wl_op_copy(1, WL_COPY_D2H, 1e9);
  uint32_t w = (uint32_t)wl_program_append(&wl->programs[p], &d2h, NULL, 0);
  wl_op adam = wl_op_compute(2, -1);
  adam.sub = WL_CLASS_OPTIMIZER;
  adam.flags = WL_OPF_HOST;
  adam.flops = 12 * 4e8;
  w = (uint32_t)wl_program_append(&wl->programs[p], &adam, &w, 1);
  wl_op h2d = wl_op_copy(3, WL_COPY_H2D, 5e8);
  wl_program_append(&wl->programs[p], &h2d, &w, 1);
  for (int r = 0; r < 4; r++)
    wl_rank_set(wl, r, r < copying ? p : q);
  return wl;
}

static const sim_options *stats_options(void)
{
  static sim_options o;
  sim_options_init(&o);
  o.link_stats = 1;
  return &o;
}

static double link_bytes(const forked_result *f, const char *name)
{
  for (size_t i = 0; i < f->num_links; i++)
    if (!strcmp(f->link_names[i], name))
      return f->link_bytes[i];
  return -1;
}

static void test_engine__copies_and_cpu_step_match_the_hand_calculation(void **state)
{
  (void)state;
  static const struct {
    int copying;
    double step;
  } rows[] = {{4, 1e9 / 7.5e9 + 0.4 + 5e8 / 7.5e9 + 4e-6}, {2, 0.1 + 0.4 + 0.05 + 4e-6}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    wl_workload *wl = exact_workload(rows[i].copying);
    forked_result *f = sim_run_forked(wl, DATA "offload_exact.json", stats_options());
    assert_non_null(f);
    if (f->rc)
      fail_msg("%s", f->msg);
    check_rel(f->step_time_s, rows[i].step, 1e-9, "step time");
    assert_non_null(strstr(f->reduction, "none (host-memory offload"));
    for (int r = 0; r < 4; r++) {
      const sim_rank_stats *st = &f->ranks[r];
      int copies = r < rows[i].copying;
      check_rel(st->compute_s, 0.15, 1e-12, "compute");
      if (copies) {
        check_rel(st->offload_s, rows[i].step, 1e-9, "offload");
        check_rel(st->offload_exposed_s, rows[i].step - 0.15, 1e-9, "exposed offload");
      } else {
        assert_true(st->offload_s == 0 && st->offload_exposed_s == 0);
      }
      /* the buckets still add up to the run */
      check_rel(st->compute_s + st->exposed_comm_s + st->offload_exposed_s + st->bubble_s +
                    st->idle_s,
                rows[i].step, 1e-9, "buckets");
    }
    check_rel(link_bytes(f, "hostmem-0"), rows[i].copying * 1.5e9, 1e-12, "hostmem-0 bytes");
    check_rel(link_bytes(f, "gpuhost-0-up"), 1e9, 1e-12, "gpuhost-0-up bytes");
    check_rel(link_bytes(f, "gpuhost-0-down"), 5e8, 1e-12, "gpuhost-0-down bytes");
    forked_result_free(f);
    wl_workload_destroy(wl);
  }
}

/* The golden step of a generated workload whose offload traffic is the
 * critical path: the small model (P = 754,995,200, shard s = 94,374,400)
 * with zero=1 and offload=optimizer on tests/data/offload_slow_pcie.json
 * (8 GPUs, 0.1 GB/s each to host memory, which gives the 8 together 0.4
 * GB/s: 0.05 GB/s each; CPU Adam 0.8e9 parameters/s for the node, 1e8 per
 * GPU).  After the backward and the gradients' reduce-scatter:
 *   fp32 gradient shard to the host   4 s / 0.05e9 = 7.549952 s + 1 us
 *   the CPU's Adam                    s / 1e8       = 0.943744 s
 *   bf16 shard back                   2 s / 0.05e9 = 3.774976 s + 1 us
 * = 12.268674 s.  The rest (128 tokens a GPU through 2 layers, the NVLink
 * reduce-scatter of 3 GB and all-gather of 1.5 GB) is well under 0.5%
 * of it, the tolerance: a CPU rate not split over the node's GPUs, copies
 * not sharing the memory or a byte count off by a factor all move the step
 * by 6% or more. */
static void test_engine__generated_offload_step_is_the_hand_sum(void **state)
{
  (void)state;
  wl_model m = model_small();
  wl_layout l = layout("tp=1,pp=1,dp=8,zero=1,mbs=1,gbs=8,offload=optimizer", 8, &m);
  wl_workload *wl = NULL;
  st_err err = {0};
  assert_int_equal(wl_generate(&m, &l, &wl, &err), 0);
  const double s = SMALL_P / 8, hand = 4 * s / 0.05e9 + s / 1e8 + 2 * s / 0.05e9 + 2e-6;
  check_rel(hand, 12.268674, 1e-9, "hand sum");
  forked_result *f = sim_run_forked(wl, DATA "offload_slow_pcie.json", NULL);
  assert_non_null(f);
  if (f->rc)
    fail_msg("%s", f->msg);
  assert_true(f->step_time_s > hand);
  check_rel(f->step_time_s, hand, 5e-3, "step time");
  for (int r = 0; r < 8; r++)
    check_rel(f->ranks[r].offload_exposed_s, hand, 5e-3, "exposed offload");
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* Steps in a row: a step's first parameter fetches and compute wait for the
 * previous step's CPU work and copies (the step's end marker, the next
 * step's iteration marker), so three steps take three times one step. */
static void test_engine__repeated_steps_wait_for_the_host(void **state)
{
  (void)state;
  wl_model m = model_small();
  static const char *const specs[] = {
      "tp=1,pp=1,dp=8,zero=3,mbs=1,gbs=8,offload=both",
      "tp=1,pp=1,dp=8,zero=3,mbs=1,gbs=8,dp_impl=deepspeed,offload=both",
      "tp=1,pp=1,dp=8,zero=1,mbs=1,gbs=8,offload=optimizer",
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    wl_layout l = layout(specs[i], 8, &m);
    wl_workload *one = NULL, *three = NULL;
    st_err err = {0};
    assert_int_equal(wl_generate(&m, &l, &one, &err), 0);
    assert_int_equal(wl_generate(&m, &l, &three, &err), 0);
    assert_int_equal(wl_workload_repeat(three, 3, &err), 0);
    forked_result *a = sim_run_forked(one, "dgx-h100:1", NULL);
    forked_result *b = sim_run_forked(three, "dgx-h100:1", NULL);
    assert_true(a && b && !a->rc && !b->rc);
    check_rel(b->step_time_s, a->step_time_s, 1e-9, specs[i]);
    forked_result_free(a);
    forked_result_free(b);
    wl_workload_destroy(one);
    wl_workload_destroy(three);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout__bad_offload_values_are_located_errors),
      cmocka_unit_test(test_memory__70b_on_one_dgx_h100_by_hand),
      cmocka_unit_test(test_memory__zero1_keeps_its_gradient_buffer),
      cmocka_unit_test(test_gen__offload_copies_and_cpu_step_by_hand),
      cmocka_unit_test(test_format__copies_and_host_ops_round_trip_and_bad_ones_are_located),
      cmocka_unit_test(test_platform__host_routes_by_hand),
      cmocka_unit_test(test_platform__bad_host_keys_are_located_errors),
      cmocka_unit_test(test_platform__simgrid_and_xml_route_to_host_memory_alike),
      cmocka_unit_test(test_engine__copies_and_cpu_step_match_the_hand_calculation),
      cmocka_unit_test(test_engine__generated_offload_step_is_the_hand_sum),
      cmocka_unit_test(test_engine__repeated_steps_wait_for_the_host),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
