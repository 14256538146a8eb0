/* attention.c — published fused-attention kernel rates, by library.
 *
 * Why: the attention core is the one kernel whose speed depends more on the
 * library than on the device.  On an H100 the same causal attention of head
 * dimension 128 at sequence 2,048 runs at 298 TFLOP/s with FlashAttention-2,
 * 323 with a Triton kernel, 484 with cuDNN and 521 with FlashAttention-3: a
 * factor 1.75 between what PyTorch's scaled_dot_product_attention runs (its
 * flash backend is FlashAttention-2) and what Transformer Engine runs on
 * Hopper (cuDNN's fused attention, which TE prefers there "for performance
 * reasons": dot_product_attention/utils.py, get_attention_backend).  One
 * efficiency per device cannot price both; a layout names the library
 * (wl_attn_impl, layout key attn_impl) and the model takes its rate here.
 *
 * Source: Shah, Bikshandi, Zhang, Thakkar, Ramani, Dao, "FlashAttention-3:
 * Fast and Accurate Attention with Asynchrony and Low-precision" (2024,
 * arXiv:2407.08608), figures 5 (forward) and 6 (backward): H100 80GB SXM5,
 * bf16/fp16, batch x sequence = 16,384 tokens, 16 heads of 128 (2,048
 * hidden; head dims 64 and 256 keep the hidden size), TFLOP/s counted as
 * 4 s^2 d per head forward (half of it under a causal mask) and 2.5 times
 * that backward: the same convention as the generator's attention ops
 * (workloads/wl_gen_layer.c), so time = flops / rate.  The values are the
 * numbers printed above the bars; platforms/measure/H100-SXM-attention.json
 * holds them row by row with the figure each comes from, and
 * tests/test_compute_measured.c checks this table against it.
 *
 * Cells the figures do not give (0 below), and how they are filled:
 *  - forward with a causal mask, head dim 64: the non-causal rate times the
 *    same library's causal / non-causal ratio at head dim 128 (same length);
 *  - Triton at head dim 256 (not benchmarked): its head dim 128 rates;
 *  - backward is published without the mask only: a causal backward is the
 *    non-causal one times the forward's causal / non-causal ratio (same
 *    library, head dim and length); head dim 256 backward (not in the
 *    figures): head dim 128's times the forward's non-causal 256 / 128;
 *    Triton's backward (not benchmarked): FlashAttention-2's, whose
 *    algorithm the Triton kernels implement.
 * FlashAttention-1 is not in the figures: FlashAttention-2's rates times
 * PLAT_ATTN_FA1_SPEED (platform.h, from the FlashAttention-2 paper).
 * Between the published points: linear in log2(sequence) and in head dim;
 * outside them the nearest point (sequences under 512 and over 16,384 are
 * not published).  The batch x heads of a real layer (a few heads per
 * tensor-parallel rank) can fill the SMs less than the benchmark did; that
 * is not modelled, as the previous per-device efficiency did not model it. */
#include <math.h>
#include <string.h>

#include "platform.h"

enum { D_FWD, D_FWD_CAUSAL, D_BWD, D_COUNT };
enum { L_CUDNN, L_FA2, L_FA3, L_TRITON, L_COUNT };
#define NSEQ 6
#define NHD 3
/* the published lengths, 512 ... 16k, as log2: interpolation is in log2(s) */
static const double log2_seqs[NSEQ] = {9, 10, 11, 12, 13, 14};
static const double hds[NHD] = {64, 128, 256};

/* TFLOP/s [library][direction][head dim 64, 128, 256][sequence 512 ... 16k] */
static const double h100[L_COUNT][D_COUNT][NHD][NSEQ] = {
    [L_CUDNN] = {[D_FWD] = {{335, 373, 395, 408, 412, 413},
                            {497, 574, 617, 609, 600, 595},
                            {470, 546, 580, 581, 580, 581}},
                 [D_FWD_CAUSAL] = {{0},
                                   {315, 410, 484, 518, 529, 539},
                                   {308, 391, 450, 483, 497, 509}},
                 [D_BWD] = {{266, 348, 395, 417, 432, 433}, {305, 408, 465, 499, 518, 516}, {0}}},
    [L_FA2] = {[D_FWD] = {{282, 306, 318, 321, 322, 324},
                          {309, 350, 362, 368, 370, 370},
                          {275, 313, 321, 323, 324, 326}},
               [D_FWD_CAUSAL] = {{0},
                                 {191, 260, 298, 319, 333, 335},
                                 {208, 251, 278, 293, 297, 298}},
               [D_BWD] = {{198, 238, 264, 279, 287, 291}, {214, 260, 291, 310, 318, 322}, {0}}},
    [L_FA3] = {[D_FWD] = {{333, 392, 460, 476, 496, 497},
                          {467, 565, 625, 638, 646, 648},
                          {482, 639, 707, 736, 746, 756}},
               [D_FWD_CAUSAL] = {{0},
                                 {292, 423, 521, 579, 602, 616},
                                 {286, 427, 537, 612, 628, 642}},
               [D_BWD] = {{272, 363, 422, 453, 472, 474}, {316, 424, 501, 542, 559, 561}, {0}}},
    [L_TRITON] = {[D_FWD] = {{340, 382, 396, 400, 401, 403}, {323, 372, 389, 389, 392, 395}, {0}},
                  [D_FWD_CAUSAL] = {{0}, {146, 273, 323, 353, 369, 378}, {0}},
                  [D_BWD] = {{0}, {0}, {0}}},
};

/* A published or filled cell, TFLOP/s (the rules in the header). */
static double cell(int lib, int dir, int hi, int si)
{
  const double(*t)[NHD][NSEQ] = h100[lib];
  switch (dir) {
  case D_FWD:
    if (t[D_FWD][hi][si] > 0)
      return t[D_FWD][hi][si];
    return t[D_FWD][1][si]; /* Triton at 256: its 128 */
  case D_FWD_CAUSAL:
    if (t[D_FWD_CAUSAL][hi][si] > 0)
      return t[D_FWD_CAUSAL][hi][si];
    if (hi == 2) /* Triton at 256 */
      return cell(lib, D_FWD_CAUSAL, 1, si);
    return cell(lib, D_FWD, hi, si) * t[D_FWD_CAUSAL][1][si] / t[D_FWD][1][si];
  default: /* D_BWD, non-causal */
    if (lib == L_TRITON)
      return cell(L_FA2, D_BWD, hi, si);
    if (t[D_BWD][hi][si] > 0)
      return t[D_BWD][hi][si];
    return t[D_BWD][1][si] * cell(lib, D_FWD, hi, si) / cell(lib, D_FWD, 1, si);
  }
}

static double rate_at(int lib, int bwd, int causal, int hi, int si)
{
  if (!bwd)
    return cell(lib, causal ? D_FWD_CAUSAL : D_FWD, hi, si);
  double b = cell(lib, D_BWD, hi, si);
  return causal ? b * cell(lib, D_FWD_CAUSAL, hi, si) / cell(lib, D_FWD, hi, si) : b;
}

/* Index i and weight w of x on a grid: x = (1-w) g[i] + w g[i+1] (in f(g)). */
static void locate(const double *g, int n, double x, int *i, double *w)
{
  if (!(x > g[0])) {
    *i = 0;
    *w = 0;
    return;
  }
  if (x >= g[n - 1]) {
    *i = n - 2;
    *w = 1;
    return;
  }
  int k = 0;
  while (x > g[k + 1])
    k++;
  *i = k;
  *w = (x - g[k]) / (g[k + 1] - g[k]);
}

static int lib_of(int impl)
{
  switch (impl) {
  case WL_ATTN_FA2:
  case WL_ATTN_FA1: return L_FA2; /* times PLAT_ATTN_FA1_SPEED */
  case WL_ATTN_FA3: return L_FA3;
  case WL_ATTN_TRITON: return L_TRITON;
  default: return L_CUDNN; /* the default on Hopper: cuDNN, as Transformer Engine picks it */
  }
}

/* The table is H100 SXM's, taken for the H200 (the same 132 SMs and
 * clocks) and for any variant of either (devices.json "tuning"), scaled by
 * its clock ratio. */
int plat_attn_has_rates(const plat_device *d)
{
  const char *nm = d->tuning[0] ? d->tuning : d->name;
  return !strcmp(nm, "H100-SXM") || !strcmp(nm, "H200");
}

double plat_attn_published_rate(const plat_device *d, int impl, int bwd, int causal,
                                double head_dim, double seq)
{
  if (!plat_attn_has_rates(d) || impl < 0 || impl >= WL_ATTN_COUNT)
    return 0;
  int lib = lib_of(impl), si, hi;
  double ws, wh;
  locate(log2_seqs, NSEQ, seq > 0 ? log2(seq) : 0, &si, &ws);
  locate(hds, NHD, head_dim > 0 ? head_dim : 128, &hi, &wh);
  double r = 0;
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++) {
      double w = (a ? wh : 1 - wh) * (b ? ws : 1 - ws);
      if (w > 0)
        r += w * rate_at(lib, bwd, causal, hi + a, si + b);
    }
  double clock = d->clock_ratio > 0 ? d->clock_ratio : 1.0;
  return r * 1e12 * clock * (impl == WL_ATTN_FA1 ? PLAT_ATTN_FA1_SPEED : 1.0);
}
