/* test_compute.c — the compute model (platforms/compute.c) against hand
 * calculations.
 *
 * Most cases use a small made-up device and parameter set (4 SMs, 128 x 128
 * tiles, gemm_eff 0.5, no launch cost) so that every expected time below is
 * a few multiplications worked out in the comment beside it.  The last cases
 * check the built-in sets against published kernel figures. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "platform.h"

static void check_rel(double got, double want, double tol, const char *what)
{
  double rel = fabs(got - want) / fabs(want);
  if (!(rel <= tol)) {
    print_error("%s: got %.9g, want %.9g (rel. error %.3g > %.3g)\n", what, got, want, rel, tol);
    fail();
  }
}

/* peak bf16 100 TFLOP/s, fp8 200, fp32 10; HBM 1e12 B/s */
static plat_device toy_device(void)
{
  plat_device d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "toy");
  d.peak_flops[WL_DTYPE_BF16] = 100e12;
  d.peak_flops[WL_DTYPE_FP16] = 100e12;
  d.peak_flops[WL_DTYPE_FP8] = 200e12;
  d.peak_flops[WL_DTYPE_FP32] = 10e12;
  d.hbm_Bps = 1e12;
  return d;
}

static plat_compute_params toy_params(void)
{
  plat_compute_params p;
  memset(&p, 0, sizeof p);
  snprintf(p.device, sizeof p.device, "toy");
  p.sms = 4;
  p.tile_m = 128;
  p.tile_n = 128;
  p.gemm_eff = 0.5;
  p.gemm_k_overhead = 0;
  p.fp8_gemm_eff = 0.4;
  p.attn_eff = 0.5;
  p.attn_bwd_ratio = 0.8;
  p.mem_eff = 1.0;
  p.launch_s = 0;
  p.overlap_slowdown = 0.25;
  return p;
}

static wl_op gemm(int m, int n, int k, int batch, int dtype)
{
  wl_op op = wl_op_compute(0, -1);
  op.sub = WL_CLASS_GEMM;
  op.dtype = (uint8_t)dtype;
  op.m = m;
  op.n = n;
  op.k = k;
  op.batch = batch;
  op.flops = 2.0 * m * n * k * batch;
  op.bytes = 0;
  return op;
}

/* One SM inside a full tile: 100e12 / 4 x 0.5 = 12.5e12 FLOP/s. */
static const double SM_RATE = 12.5e12;

static void test_gemm__whole_waves_match_hand_count(void **state)
{
  (void)state;
  plat_device d = toy_device();
  plat_compute_params p = toy_params();
  /* 512 x 384 output = 4 x 3 = 12 tiles of 128 x 128 -> 3 waves on 4 SMs.
   * tile time = 2 x 128 x 128 x 1024 / 12.5e12 = 2.68435456e-6 s.
   * (half tiles: 24 tiles, 6 waves of half the work at 0.9 -> 3.33 units: slower) */
  wl_op op = gemm(512, 384, 1024, 1, WL_DTYPE_BF16);
  plat_compute_detail det;
  double t = plat_compute_explain(&p, &d, &op, &det);
  check_rel(t, 3 * 2.0 * 128 * 128 * 1024 / SM_RATE, 1e-12, "3 waves");
  assert_int_equal(det.waves, 3);
  assert_int_equal(det.tiles, 12);
  assert_int_equal(det.tile_m, 128);
  assert_int_equal(det.split_k, 1);
  assert_int_equal(det.bound, PLAT_BOUND_MATH);
  check_rel(det.eff, 0.5, 1e-12, "exact tiling reaches gemm_eff");
}

static void test_gemm__partial_wave_costs_a_whole_wave(void **state)
{
  (void)state;
  plat_device d = toy_device();
  plat_compute_params p = toy_params();
  /* 640 x 128: 5 full tiles -> 2 waves (2.0 tile units, 62.5% of SMs busy);
   * half tiles 64 x 128: 10 tiles -> 3 waves x 0.5 / 0.9 = 1.667 units  <- best;
   * quarter tiles 64 x 64: 20 tiles -> 5 waves x 0.25 / 0.7 = 1.786 units. */
  wl_op op = gemm(640, 128, 1024, 1, WL_DTYPE_BF16);
  plat_compute_detail det;
  double t = plat_compute_explain(&p, &d, &op, &det);
  check_rel(t, 3 * 2.0 * 64 * 128 * 1024 / (SM_RATE * 0.9), 1e-12, "half tiles, 3 waves");
  assert_int_equal(det.tile_m, 64);
  assert_int_equal(det.tile_n, 128);
  assert_int_equal(det.waves, 3);
  /* one more row of output (641) adds a whole half-tile row: 11 tiles, still 3 waves */
  wl_op op2 = gemm(641, 128, 1024, 1, WL_DTYPE_BF16);
  check_rel(plat_compute_time_with(&p, &d, &op2), t, 1e-12, "641 rows cost as 704");
}

/* Chunks of a comm-overlap split in flight together share the waves. */
static void test_gemm__concurrent_chunks_share_waves(void **state)
{
  (void)state;
  plat_device d = toy_device();
  plat_compute_params p = toy_params();
  /* 128 x 128 x 1024 alone: one 128 x 128 tile is 1 wave with 3 SMs idle
   * (1 tile unit); 64 x 64 quarter tiles at 0.7: 4 tiles, 1 wave, 0.25 / 0.7 =
   * 0.357 units  <- best (split K in 4: 0.25 units + 0.524 us of partial sums
   * = 0.445 units; half tiles split in 2: 0.278 + 0.262 us = 0.376 units). */
  wl_op op = gemm(128, 128, 1024, 1, WL_DTYPE_BF16);
  double tile = 2.0 * 128 * 128 * 1024 / SM_RATE; /* 2.68435456 us */
  double alone = plat_compute_time_with(&p, &d, &op);
  check_rel(alone, tile * 0.25 / 0.7, 1e-12, "alone: quarter tiles, one wave");
  /* Four such chunks in flight: 4 full tiles fill the 4 SMs in one wave; each
   * chunk is charged a quarter of it (0.25 units, 30% less than alone). */
  op.concurrent = 4;
  plat_compute_detail det;
  double t = plat_compute_explain(&p, &d, &op, &det);
  check_rel(t, tile / 4, 1e-12, "a quarter of one full wave");
  assert_int_equal(det.split_k, 1);
  assert_int_equal(det.waves, 1);
  assert_int_equal(det.tiles, 4);
  /* Six in flight: full tiles need 2 waves (6 tiles, 2/6 = 0.333 units each);
   * half tiles 64 x 128 at 0.9: 12 tiles, 3 waves of 0.5 / 0.9 units, a sixth
   * each = 0.278 units  <- best. */
  op.concurrent = 6;
  check_rel(plat_compute_time_with(&p, &d, &op), 3 * tile * 0.5 / 0.9 / 6, 1e-12,
            "half tiles, 3 waves over 6");
  /* concurrent 0 and 1 both mean alone */
  op.concurrent = 1;
  check_rel(plat_compute_time_with(&p, &d, &op), alone, 1e-12, "1 = alone");
}

static void test_gemm__tile_quantisation_of_ragged_shape(void **state)
{
  (void)state;
  plat_device d = toy_device();
  plat_compute_params p = toy_params();
  /* 129 x 129 x 512 on 4 SMs: full tiles 2 x 2 = 4 -> 1 wave of 4 full
   * tiles: 2 x 128 x 128 x 512 / 12.5e12 = 1.34217728e-6 s, for 2 x 129^2 x 512
   * useful flops: efficiency 0.5 x 129^2 / 256^2 = 0.1270. */
  wl_op op = gemm(129, 129, 512, 1, WL_DTYPE_BF16);
  plat_compute_detail det;
  double t = plat_compute_explain(&p, &d, &op, &det);
  check_rel(t, 2.0 * 128 * 128 * 512 / SM_RATE, 1e-12, "one wave");
  check_rel(det.eff, 0.5 * 129.0 * 129.0 / (256.0 * 256.0), 1e-12, "ragged efficiency");
}

static void test_gemm__small_k_pays_tile_overhead(void **state)
{
  (void)state;
  plat_device d = toy_device();
  plat_compute_params p = toy_params();
  p.gemm_k_overhead = 128;
  /* 1024 x 1024 = 64 tiles = 16 whole waves; each tile costs k + 128. */
  static const int ks[] = {128, 1024, 8192};
  for (size_t i = 0; i < 3; i++) {
    wl_op op = gemm(1024, 1024, ks[i], 1, WL_DTYPE_BF16);
    plat_compute_detail det;
    plat_compute_explain(&p, &d, &op, &det);
    check_rel(det.eff, 0.5 * ks[i] / (ks[i] + 128.0), 1e-12, "k / (k + overhead)");
  }
}

static void test_gemm__split_k_fills_idle_sms(void **state)
{
  (void)state;
  plat_device d = toy_device();
  plat_compute_params p = toy_params();
  /* 128 x 128 x 8192: one tile, 3 SMs idle.  Split in 4: 4 tiles of K 2048,
   * one wave: 2 x 128 x 128 x 2048 / 12.5e12 = 5.36870912e-6 s, plus partial
   * sums 128 x 128 x 4 B x 2 (write + read) x 4 / 1e12 = 0.524288e-6 s. */
  wl_op op = gemm(128, 128, 8192, 1, WL_DTYPE_BF16);
  plat_compute_detail det;
  double t = plat_compute_explain(&p, &d, &op, &det);
  check_rel(t, 2.0 * 128 * 128 * 2048 / SM_RATE + 128.0 * 128 * 4 * 2 * 4 / 1e12, 1e-12,
            "split-K 4");
  assert_int_equal(det.split_k, 4);
  assert_int_equal(det.tiles, 4);
}

static void test_gemm__batch_multiplies_tiles(void **state)
{
  (void)state;
  plat_device d = toy_device();
  plat_compute_params p = toy_params();
  /* 8 x (128 x 128 x 1024): 8 tiles, 2 waves. */
  wl_op op = gemm(128, 128, 1024, 8, WL_DTYPE_BF16);
  check_rel(plat_compute_time_with(&p, &d, &op), 2 * 2.0 * 128 * 128 * 1024 / SM_RATE, 1e-12,
            "batched");
}

static void test_roofline__memory_bound_gemm_takes_bytes_time(void **state)
{
  (void)state;
  plat_device d = toy_device();
  plat_compute_params p = toy_params();
  p.launch_s = 5e-6;
  /* a GEMV: 1 x 8192 x 8192, bf16 weights 134 MB: 134217728 B / 1e12 B/s */
  wl_op op = gemm(1, 8192, 8192, 1, WL_DTYPE_BF16);
  op.bytes = 8192.0 * 8192 * 2 + 8192 * 2 * 2;
  plat_compute_detail det;
  double t = plat_compute_explain(&p, &d, &op, &det);
  assert_int_equal(det.bound, PLAT_BOUND_MEMORY);
  check_rel(t, 5e-6 + op.bytes / 1e12, 1e-12, "bytes / HBM + launch");
}

static void test_roofline__shapeless_op_runs_at_efficiency_of_peak(void **state)
{
  (void)state;
  plat_device d = toy_device();
  plat_compute_params p = toy_params();
  /* no shape: flops / (peak x gemm_eff) = 1e12 / 50e12 */
  wl_op op = wl_op_compute(0, -1);
  op.sub = WL_CLASS_GEMM;
  op.flops = 1e12;
  check_rel(plat_compute_time_with(&p, &d, &op), 0.02, 1e-12, "shapeless GEMM");
  op.sub = WL_CLASS_OTHER;
  check_rel(plat_compute_time_with(&p, &d, &op), 0.02, 1e-12, "class other");
}

static void test_launch__empty_kernel_costs_launch(void **state)
{
  (void)state;
  plat_device d = toy_device();
  plat_compute_params p = toy_params();
  p.launch_s = 3e-6;
  static const int classes[] = {WL_CLASS_GEMM, WL_CLASS_ATTENTION, WL_CLASS_ELEMENTWISE,
                                WL_CLASS_OPTIMIZER, WL_CLASS_COMM_KERNEL, WL_CLASS_OTHER};
  for (size_t i = 0; i < 6; i++) {
    wl_op op = wl_op_compute(0, -1);
    op.sub = (uint8_t)classes[i];
    check_rel(plat_compute_time_with(&p, &d, &op), 3e-6, 1e-12, wl_class_name(classes[i]));
  }
  /* and 1000 tiny kernels cost 1000 launches: 1 KB each is 1 ns of HBM time */
  wl_op tiny = wl_op_compute(0, -1);
  tiny.sub = WL_CLASS_ELEMENTWISE;
  tiny.bytes = 1000;
  check_rel(1000 * plat_compute_time_with(&p, &d, &tiny), 1000 * (3e-6 + 1e-9), 1e-12,
            "1000 small kernels");
}

static void test_given_duration__is_returned_unchanged(void **state)
{
  (void)state;
  plat_device d = toy_device();
  plat_compute_params p = toy_params();
  wl_op op = gemm(4096, 4096, 4096, 1, WL_DTYPE_BF16);
  op.duration_s = 1.25e-3;
  assert_true(plat_compute_time_with(&p, &d, &op) == 1.25e-3);
  assert_true(plat_compute_time(&d, &op) == 1.25e-3);
  op.duration_s = 0;
  assert_true(plat_compute_time(&d, &op) == 0);
}

static void test_fp8__twice_the_peak_at_its_own_efficiency(void **state)
{
  (void)state;
  plat_device d = toy_device();
  plat_compute_params p = toy_params();
  /* 1024 x 1024 x 1024: 16 whole waves either way; fp8 rate per SM is
   * 200e12 / 4 x 0.4 = 20e12 against 12.5e12 for bf16: time ratio 0.625. */
  wl_op b = gemm(1024, 1024, 1024, 1, WL_DTYPE_BF16);
  wl_op f = gemm(1024, 1024, 1024, 1, WL_DTYPE_FP8);
  double tb = plat_compute_time_with(&p, &d, &b), tf = plat_compute_time_with(&p, &d, &f);
  check_rel(tb, 16 * 2.0 * 128 * 128 * 1024 / 12.5e12, 1e-12, "bf16");
  check_rel(tf / tb, 12.5 / 20.0, 1e-12, "fp8 / bf16");
  /* a device without fp8 runs it at its bf16 rate */
  d.peak_flops[WL_DTYPE_FP8] = 0;
  check_rel(plat_compute_time_with(&p, &d, &f), tb, 1e-12, "no fp8 on the device");
}

/* A GEMM a PyTorch framework dispatches (WL_OPF_TORCH) runs at the set's
 * gemm_eff_torch: 1024^3 on the toy device is 16 whole waves, so its time
 * is the bf16 time x gemm_eff / gemm_eff_torch; with gemm_eff_torch 0 (no
 * value for the device) it takes gemm_eff, and an fp8 GEMM keeps
 * fp8_gemm_eff whoever dispatches it. */
static void test_gemm__pytorch_frameworks_at_their_own_efficiency(void **state)
{
  (void)state;
  plat_device d = toy_device();
  plat_compute_params p = toy_params();
  p.gemm_eff_torch = 0.4;
  wl_op b = gemm(1024, 1024, 1024, 1, WL_DTYPE_BF16), t = b;
  t.flags |= WL_OPF_TORCH;
  double tb = plat_compute_time_with(&p, &d, &b);
  check_rel(tb, 16 * 2.0 * 128 * 128 * 1024 / 12.5e12, 1e-12, "Megatron's");
  check_rel(plat_compute_time_with(&p, &d, &t), tb * 0.5 / 0.4, 1e-12, "PyTorch's");
  p.gemm_eff_torch = 0;
  check_rel(plat_compute_time_with(&p, &d, &t), tb, 1e-12, "no PyTorch value: gemm_eff");
  p.gemm_eff_torch = 0.4;
  wl_op f = gemm(1024, 1024, 1024, 1, WL_DTYPE_FP8), ft = f;
  ft.flags |= WL_OPF_TORCH;
  check_rel(plat_compute_time_with(&p, &d, &ft), plat_compute_time_with(&p, &d, &f), 1e-12,
            "fp8 at fp8_gemm_eff");
}

static void test_memory_bound__elementwise_and_optimizer_at_hbm_fraction(void **state)
{
  (void)state;
  plat_device d = toy_device();
  plat_compute_params p = toy_params();
  p.mem_eff = 0.8;
  p.launch_s = 2e-6;
  /* LayerNorm over 8192 tokens x 4096 hidden in bf16: read + write 2 x 64 MiB,
   * 8 flops per element: 0.27 GFLOP at 10e12 x 0.7 = 38 us < 168 us of HBM. */
  wl_op ln = wl_op_compute(0, -1);
  ln.sub = WL_CLASS_ELEMENTWISE;
  ln.bytes = 2.0 * 8192 * 4096 * 2;
  ln.flops = 8.0 * 8192 * 4096;
  plat_compute_detail det;
  double t = plat_compute_explain(&p, &d, &ln, &det);
  assert_int_equal(det.bound, PLAT_BOUND_MEMORY);
  check_rel(t, 2e-6 + ln.bytes / 0.8e12, 1e-12, "layernorm");
  check_rel(det.math_s, ln.flops / (10e12 * 0.7), 1e-12, "vector math at fp32 peak");
  /* Adam over 1e9 parameters: 16 bytes read and 16 written per parameter */
  wl_op adam = wl_op_compute(0, -1);
  adam.sub = WL_CLASS_OPTIMIZER;
  adam.bytes = 32e9;
  check_rel(plat_compute_time_with(&p, &d, &adam), 2e-6 + 32e9 / 0.8e12, 1e-12, "adam");
  /* the same bytes as a per-parameter loop of 800 kernels: 800 launches */
  adam.batch = 800;
  check_rel(plat_compute_time_with(&p, &d, &adam), 800 * 2e-6 + 32e9 / 0.8e12, 1e-12,
            "adam, 800 kernels");
  /* a GEMM's batch is its batch count, launched once */
  wl_op bg = gemm(1024, 1024, 1024, 1, WL_DTYPE_BF16), b4 = bg;
  b4.batch = 4;
  b4.flops *= 4;
  plat_compute_explain(&p, &d, &b4, &det);
  check_rel(det.launch_s, 2e-6, 1e-12, "batched GEMM: one launch");
  /* an elementwise op with much math becomes math-bound on the vector units */
  ln.flops = 1e12;
  check_rel(plat_compute_time_with(&p, &d, &ln), 2e-6 + 1e12 / 7e12, 1e-12, "vector-bound");
}

static wl_op attention(int s, int hd, int heads, int causal, int phase)
{
  wl_op op = wl_op_compute(0, -1);
  op.sub = WL_CLASS_ATTENTION;
  op.m = s;
  op.n = s;
  op.k = hd;
  op.batch = heads;
  op.phase = (uint8_t)phase;
  /* QK^T and PV: 4 s^2 hd per head forward, halved under a causal mask */
  op.flops = 4.0 * s * s * hd * heads * (causal ? 0.5 : 1.0) * (phase == WL_PHASE_BACKWARD ? 2.5 : 1.0);
  op.flags = causal ? WL_OPF_CAUSAL : 0;
  return op;
}

static void test_attention__sequence_head_dim_and_mask(void **state)
{
  (void)state;
  plat_device d = toy_device();
  plat_compute_params p = toy_params();
  /* s = 4096, head dim 128, not causal: eff = 0.5 x 4096 / (4096 + 192) */
  wl_op a = attention(4096, 128, 32, 0, WL_PHASE_FORWARD);
  double eff = 0.5 * 4096.0 / (4096.0 + 192.0);
  check_rel(plat_compute_time_with(&p, &d, &a), a.flops / (100e12 * eff), 1e-12, "forward");
  /* causal: half the flops, plus the diagonal blocks: x (1 + 128 / 4096) */
  wl_op c = attention(4096, 128, 32, 1, WL_PHASE_FORWARD);
  check_rel(plat_compute_time_with(&p, &d, &c), c.flops * (1 + 128.0 / 4096) / (100e12 * eff),
            1e-12, "causal");
  /* head dim 64: (64 / 96) / (128 / 160) = 0.8333 of the rate */
  wl_op h = attention(4096, 64, 32, 0, WL_PHASE_FORWARD);
  check_rel(plat_compute_time_with(&p, &d, &h), h.flops / (100e12 * eff * (64.0 / 96) / 0.8),
            1e-12, "head dim 64");
  /* head dim 256 is capped at the head-dim-128 rate */
  wl_op h2 = attention(4096, 256, 32, 0, WL_PHASE_FORWARD);
  check_rel(plat_compute_time_with(&p, &d, &h2), h2.flops / (100e12 * eff), 1e-12, "head dim 256");
  /* backward: 2.5x the flops at 0.8 of the efficiency */
  wl_op b = attention(4096, 128, 32, 0, WL_PHASE_BACKWARD);
  check_rel(plat_compute_time_with(&p, &d, &b), b.flops / (100e12 * eff * 0.8), 1e-12, "bwd");
  /* short sequences are less efficient: s = 512 vs 8192 per flop */
  wl_op s1 = attention(512, 128, 32, 0, WL_PHASE_FORWARD), s2 = attention(8192, 128, 32, 0, WL_PHASE_FORWARD);
  double r = (plat_compute_time_with(&p, &d, &s1) / s1.flops) /
             (plat_compute_time_with(&p, &d, &s2) / s2.flops);
  check_rel(r, (8192.0 / (8192 + 192)) / (512.0 / (512 + 192)), 1e-12, "seq 512 vs 8192");
}

/* The published Hopper attention rates (platforms/attention.c, FlashAttention-3
 * paper figures 5 and 6), worked out by hand from the printed numbers.  The
 * H100 device is the toy one renamed: the rate depends on the name only, and
 * the toy's zero launch cost leaves time = flops / rate. */
static void test_attention__published_hopper_rates_by_library(void **state)
{
  (void)state;
  plat_device d = toy_device();
  snprintf(d.name, sizeof d.name, "H100-SXM");
  plat_compute_params p = toy_params();
  p.attn_published = 1;
  /* a published point: causal forward, head dim 128, 2,048: FA2 298, cuDNN 484 TFLOP/s */
  wl_op c = attention(2048, 128, 32, 1, WL_PHASE_FORWARD);
  c.flags = wl_flags_with_attn(c.flags, WL_ATTN_FA2);
  check_rel(plat_compute_time_with(&p, &d, &c), c.flops / 298e12, 1e-12, "fa2 causal 2k");
  c.flags = wl_flags_with_attn(c.flags, WL_ATTN_CUDNN);
  check_rel(plat_compute_time_with(&p, &d, &c), c.flops / 484e12, 1e-12, "cudnn causal 2k");
  c.flags = wl_flags_with_attn(c.flags, WL_ATTN_DEFAULT); /* Hopper's default: cuDNN */
  check_rel(plat_compute_time_with(&p, &d, &c), c.flops / 484e12, 1e-12, "default causal 2k");
  /* between points, linear in log2(s): s = 2^11.5 is halfway between 2k and 4k
   * (FA3 non-causal: 625 and 638) */
  check_rel(plat_attn_published_rate(&d, WL_ATTN_FA3, 0, 0, 128, pow(2, 11.5)), 631.5e12, 1e-12,
            "fa3 halfway in log2(s)");
  /* head dim 96 halfway between 64 and 128 (cuDNN non-causal 8k: 412 and 600) */
  check_rel(plat_attn_published_rate(&d, WL_ATTN_CUDNN, 0, 0, 96, 8192), 506e12, 1e-12,
            "cudnn head dim 96");
  /* outside the published lengths: the nearest point (FA2 non-causal 128: 309 at 512, 370 at 16k) */
  check_rel(plat_attn_published_rate(&d, WL_ATTN_FA2, 0, 0, 128, 128), 309e12, 1e-12, "s 128");
  check_rel(plat_attn_published_rate(&d, WL_ATTN_FA2, 0, 0, 128, 65536), 370e12, 1e-12, "s 64k");
  /* filled cells: a causal backward is the non-causal backward times the
   * forward's causal / non-causal ratio: FA2, 128, 8k: 318 x 333 / 370 */
  wl_op b = attention(8192, 128, 32, 1, WL_PHASE_BACKWARD);
  b.flags = wl_flags_with_attn(b.flags, WL_ATTN_FA2);
  check_rel(plat_compute_time_with(&p, &d, &b), b.flops / (318e12 * 333 / 370), 1e-12,
            "fa2 causal backward");
  /* causal forward at head dim 64: non-causal 64 x (causal / non-causal at 128):
   * cuDNN 4k: 408 x 518 / 609 */
  check_rel(plat_attn_published_rate(&d, WL_ATTN_CUDNN, 0, 1, 64, 4096), 408e12 * 518 / 609,
            1e-12, "cudnn causal head dim 64");
  /* Triton's backward is FlashAttention-2's; its head dim 256 its 128:
   * non-causal 1k backward 260, forward at 256 = 372 */
  check_rel(plat_attn_published_rate(&d, WL_ATTN_TRITON, 1, 0, 128, 1024), 260e12, 1e-12,
            "triton backward");
  check_rel(plat_attn_published_rate(&d, WL_ATTN_TRITON, 0, 0, 256, 1024), 372e12, 1e-12,
            "triton head dim 256");
  /* head dim 256 backward: 128's times the forward's 256 / 128 (FA3 16k: 561 x 756 / 648) */
  check_rel(plat_attn_published_rate(&d, WL_ATTN_FA3, 1, 0, 256, 16384), 561e12 * 756 / 648,
            1e-12, "fa3 backward head dim 256");
  /* FlashAttention-1: half FlashAttention-2's rate ("around 2x", FlashAttention-2
   * paper 4.1), forward and backward: causal 2k forward 298 / 2, the causal
   * 8k backward above / 2 */
  c.flags = wl_flags_with_attn(c.flags, WL_ATTN_FA1);
  check_rel(plat_compute_time_with(&p, &d, &c), c.flops / (298e12 / 2), 1e-12, "fa1 causal 2k");
  b.flags = wl_flags_with_attn(b.flags, WL_ATTN_FA1);
  check_rel(plat_compute_time_with(&p, &d, &b), b.flops / (318e12 * 333 / 370 / 2), 1e-12,
            "fa1 causal backward");
  c.flags = wl_flags_with_attn(c.flags, WL_ATTN_FA2);
  /* a parameter set that turns the tables off prices by attn_eff */
  p.attn_published = 0;
  double eff0 = 0.5 * 2048.0 / (2048.0 + 192.0);
  check_rel(plat_compute_time_with(&p, &d, &c), c.flops * (1 + 128.0 / 2048) / (100e12 * eff0),
            1e-12, "attn_published 0: attn_eff");
  p.attn_published = 1;
  /* a device without a table keeps its efficiency (the A100, the toy) */
  snprintf(d.name, sizeof d.name, "A100-SXM4-80GB");
  assert_true(plat_attn_published_rate(&d, WL_ATTN_FA2, 0, 1, 128, 2048) == 0);
  double eff = 0.5 * 2048.0 / (2048.0 + 192.0);
  c.flags = wl_flags_with_attn(c.flags, WL_ATTN_FA2);
  check_rel(plat_compute_time_with(&p, &d, &c), c.flops * (1 + 128.0 / 2048) / (100e12 * eff),
            1e-12, "no table: attn_eff");
  /* there FlashAttention-1 runs at half attn_eff (FlashAttention-2's level) */
  c.flags = wl_flags_with_attn(c.flags, WL_ATTN_FA1);
  check_rel(plat_compute_time_with(&p, &d, &c),
            c.flops * (1 + 128.0 / 2048) / (100e12 * eff * 0.5), 1e-12, "no table: fa1");
}

/* A sliding window of w keys (WL_OPF_WINDOW, n = w): every query block runs
 * w keys and one more block, all alike, so the band's FLOPs take (1 + 128 /
 * w) times the unmasked rate at w + 128 keys: on the H100 table cuDNN's
 * forward at head dim 128 between 1,024 (574) and 2,048 (617), linear in
 * log2; without a table attn_eff at that length.  Sequence 8,192, w = 1,024:
 * w s - w (w - 1) / 2 scores a head. */
static void test_attention__sliding_window_runs_its_band(void **state)
{
  (void)state;
  plat_device d = toy_device();
  snprintf(d.name, sizeof d.name, "H100-SXM");
  plat_compute_params p = toy_params();
  p.attn_published = 1;
  double s = 8192, w = 1024, band = w * s - w * (w - 1) / 2;
  wl_op a = attention(8192, 128, 32, 1, WL_PHASE_FORWARD);
  a.n = (int32_t)w;
  a.flags |= WL_OPF_WINDOW;
  a.flops = 4.0 * 128 * 32 * band;
  a.flags = wl_flags_with_attn(a.flags, WL_ATTN_CUDNN);
  double rate = (574 + (617 - 574) * log2(1152.0 / 1024)) * 1e12;
  check_rel(plat_compute_time_with(&p, &d, &a), a.flops * (1 + 128 / w) / rate, 1e-12,
            "cudnn window 1024");
  /* a window of one block: twice its band at the shortest published length
   * (512: 497) */
  a.n = 128;
  a.flops = 4.0 * 128 * 32 * (128 * s - 128.0 * 127 / 2);
  check_rel(plat_compute_time_with(&p, &d, &a), a.flops * 2 / 497e12, 1e-12, "cudnn window 128");
  /* without a table: attn_eff at 1,152 keys, no causal term */
  a.n = (int32_t)w;
  a.flops = 4.0 * 128 * 32 * band;
  p.attn_published = 0;
  double eff = 0.5 * 1152.0 / (1152.0 + 192.0);
  check_rel(plat_compute_time_with(&p, &d, &a), a.flops * (1 + 128 / w) / (100e12 * eff), 1e-12,
            "attn_eff window");
}

/* A fused attention kernel with dropout (WL_OPF_DROPOUT) takes 1.25 times its
 * time forward and 1.24 backward, on a published table and without one; the
 * factors are the FlashAttention paper's long-sequence ratios (its tables 15
 * and 16 against 18 and 19, FlashAttention at 16k, 32k, 64k). */
static void test_attention__dropout_takes_the_measured_factor(void **state)
{
  (void)state;
  static const double fwd[3][2] = {{167.01, 134.03}, {668.74, 535.95}, {2678.11, 2147.05}};
  static const double bwd[3][2] = {{416.10, 336.00}, {1661.92, 1338.56}, {6643.01, 5343.19}};
  for (int i = 0; i < 3; i++) {
    check_rel(PLAT_ATTN_DROPOUT_FWD, fwd[i][0] / fwd[i][1], 0.005, "forward ratio");
    check_rel(PLAT_ATTN_DROPOUT_BWD, bwd[i][0] / bwd[i][1], 0.005, "backward ratio");
  }
  plat_device d = toy_device();
  plat_compute_params p = toy_params();
  for (int table = 0; table < 2; table++) {
    if (table)
      snprintf(d.name, sizeof d.name, "H100-SXM");
    p.attn_published = table;
    for (int ph = 0; ph < 2; ph++) {
      wl_op a = attention(4096, 128, 32, 1, ph ? WL_PHASE_BACKWARD : WL_PHASE_FORWARD);
      double t0 = plat_compute_time_with(&p, &d, &a) - p.launch_s;
      a.flags |= WL_OPF_DROPOUT;
      double t1 = plat_compute_time_with(&p, &d, &a) - p.launch_s;
      check_rel(t1 / t0, ph ? 1.24 : 1.25, 1e-12, table ? "published rate" : "attn_eff");
    }
  }
}

static void test_overlap__factor_is_one_plus_slowdown(void **state)
{
  (void)state;
  plat_compute_params p = toy_params();
  plat_device d = toy_device();
  plat_compute_params_override(&p);
  check_rel(plat_compute_overlap_factor(&d), 1.25, 1e-12, "1 + 0.25");
  p.overlap_slowdown = 0;
  plat_compute_params_override(&p);
  check_rel(plat_compute_overlap_factor(&d), 1.0, 1e-12, "no slowdown");
  plat_compute_params_override(NULL);
}

static void test_params__lookup_by_name_generic_and_override(void **state)
{
  (void)state;
  plat_device d = toy_device();
  assert_string_equal(plat_compute_params_for(&d)->device, "generic");
  snprintf(d.name, sizeof d.name, "A100-SXM4-80GB");
  assert_string_equal(plat_compute_params_for(&d)->device, "A100-SXM4-80GB");
  assert_int_equal(plat_compute_params_for(&d)->sms, 108);
  snprintf(d.name, sizeof d.name, "H100-SXM");
  assert_int_equal(plat_compute_params_for(&d)->sms, 132);
  plat_compute_params o = *plat_compute_params_for(&d);
  o.gemm_eff = 0.5;
  plat_compute_params_override(&o);
  assert_true(plat_compute_params_for(&d)->gemm_eff == 0.5);
  plat_compute_params_override(NULL);
  assert_true(plat_compute_params_for(&d)->gemm_eff != 0.5);
  /* every built-in set is complete */
  for (const plat_compute_params *const *l = plat_compute_params_list(); *l; l++) {
    const plat_compute_params *s = *l;
    assert_true(s->gemm_eff > 0.3 && s->gemm_eff <= 1);
    assert_true(s->attn_eff > 0.2 && s->attn_eff <= 1);
    assert_true(s->mem_eff > 0.5 && s->mem_eff <= 1);
    assert_true(s->launch_s > 0 && s->launch_s < 20e-6);
    assert_true(s->overlap_slowdown >= 0 && s->overlap_slowdown < 0.5);
    assert_true(s->sms == 0 || (s->tile_m > 0 && s->tile_n > 0));
  }
}

/* The built-in sets against published kernel figures (independent of the
 * fitting): a large bf16 GEMM (8192^3) reaches 77-88% of the dense peak in
 * cuBLAS on both devices (published figures: A100 about 250-270 of 312
 * TFLOP/s, H100 SXM about 760-800 of 989, XLA's sm_90 table 793 at
 * 4 x 4096^3).  gemm_eff is fitted on end-to-end runs and may sit up to 25%
 * below the kernels (as test_compute_measured.c holds it), so the model's
 * 8192^3 GEMM must run at 58-88% of the peak; a copy kernel streams
 * 1.6-1.9 TB/s on A100-80GB and 2.7-3.1 TB/s on H100. */
static void test_builtin__large_gemm_and_stream_match_published_figures(void **state)
{
  (void)state;
  static const struct {
    const char *name;
    double peak, hbm, lo, hi, bw_lo, bw_hi;
  } devs[] = {
      {"A100-SXM4-80GB", 312e12, 2.039e12, 0.58 * 312e12, 0.88 * 312e12, 1.6e12, 1.9e12},
      {"H100-SXM", 989.4e12, 3.35e12, 0.58 * 989.4e12, 0.88 * 989.4e12, 2.7e12, 3.1e12},
  };
  for (size_t i = 0; i < 2; i++) {
    plat_device d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "%s", devs[i].name);
    d.peak_flops[WL_DTYPE_BF16] = devs[i].peak;
    d.peak_flops[WL_DTYPE_FP32] = devs[i].peak / 16;
    d.hbm_Bps = devs[i].hbm;
    wl_op op = gemm(8192, 8192, 8192, 1, WL_DTYPE_BF16);
    op.bytes = 3.0 * 8192 * 8192 * 2;
    double tf = op.flops / plat_compute_time(&d, &op);
    if (tf < devs[i].lo || tf > devs[i].hi) {
      print_error("%s: 8192^3 bf16 GEMM at %.0f TFLOP/s, outside [%.0f, %.0f]\n", devs[i].name,
                  tf / 1e12, devs[i].lo / 1e12, devs[i].hi / 1e12);
      fail();
    }
    wl_op cp = wl_op_compute(0, -1);
    cp.sub = WL_CLASS_ELEMENTWISE;
    cp.bytes = 2.0 * 1024 * 1024 * 1024;
    double bw = cp.bytes / plat_compute_time(&d, &cp);
    assert_true(bw > devs[i].bw_lo && bw < devs[i].bw_hi);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemm__whole_waves_match_hand_count),
      cmocka_unit_test(test_gemm__partial_wave_costs_a_whole_wave),
      cmocka_unit_test(test_gemm__concurrent_chunks_share_waves),
      cmocka_unit_test(test_gemm__tile_quantisation_of_ragged_shape),
      cmocka_unit_test(test_gemm__small_k_pays_tile_overhead),
      cmocka_unit_test(test_gemm__split_k_fills_idle_sms),
      cmocka_unit_test(test_gemm__batch_multiplies_tiles),
      cmocka_unit_test(test_roofline__memory_bound_gemm_takes_bytes_time),
      cmocka_unit_test(test_roofline__shapeless_op_runs_at_efficiency_of_peak),
      cmocka_unit_test(test_launch__empty_kernel_costs_launch),
      cmocka_unit_test(test_given_duration__is_returned_unchanged),
      cmocka_unit_test(test_fp8__twice_the_peak_at_its_own_efficiency),
      cmocka_unit_test(test_gemm__pytorch_frameworks_at_their_own_efficiency),
      cmocka_unit_test(test_memory_bound__elementwise_and_optimizer_at_hbm_fraction),
      cmocka_unit_test(test_attention__sequence_head_dim_and_mask),
      cmocka_unit_test(test_attention__published_hopper_rates_by_library),
      cmocka_unit_test(test_attention__sliding_window_runs_its_band),
      cmocka_unit_test(test_attention__dropout_takes_the_measured_factor),
      cmocka_unit_test(test_overlap__factor_is_one_plus_slowdown),
      cmocka_unit_test(test_params__lookup_by_name_generic_and_override),
      cmocka_unit_test(test_builtin__large_gemm_and_stream_match_published_figures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
