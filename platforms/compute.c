/* compute.c — the compute model: a compute op's time on a device.
 *
 * Every op is a roofline, max(math, memory) + launch overhead, where each
 * side carries the efficiency of the kind of kernel that runs it:
 *
 *  1. GEMM (m, n, k, batch known).  The BLAS library cuts the m x n output
 *     into tiles of tm x tn and runs one tile per SM at a time; the machine
 *     runs ceil(tiles / SMs) waves.  One tile costs its K loop plus a fixed
 *     prologue/epilogue worth gemm_k_overhead K elements:
 *         tile_s = 2 tm tn (k + k_overhead) / (peak / SMs x gemm_eff)
 *         math_s = waves x tile_s
 *     so partial tiles (tile quantisation), a last wave that leaves SMs idle
 *     (wave quantisation) and small K all cost what they cost on the device.
 *     Like cuBLAS's heuristics the model takes the fastest of a few tile
 *     shapes (tile_shapes below: smaller and skinnier tiles reuse less data
 *     and run at a lower rate) and, when the tiles cannot fill the SMs, of
 *     splitting K (partial sums of 4 bytes written and read back).
 *     A GEMM marked concurrent = c (c chunks of one split in flight on
 *     separate streams) is quantised over all c and charged 1/c of that.
 *     fp8 GEMMs run against the fp8 peak with fp8_gemm_eff; a device without
 *     fp8 runs them at its bf16 rate.
 *  2. Fused attention (flash attention), where the parameter set has
 *     attn_published and the device a published table (H100, H200:
 *     platforms/attention.c): flops / the published rate of the op's kernel
 *     library (wl_attn_impl: cuDNN, FlashAttention-1, -2 or -3, Triton) at its
 *     head dim and length, masked blocks included.  Elsewhere
 *     flops / (peak x attn_eff x f_seq x
 *     f_hd), f_seq = s / (s + ATTN_SEQ_HALF) (short sequences do not fill
 *     the pipeline), f_hd = h / (h + ATTN_HD_HALF) normalised at head dim 128
 *     and capped at 1, times attn_bwd_ratio for the backward kernel, and
 *     times PLAT_ATTN_FA1_SPEED for FlashAttention-1's kernels.  With a
 *     causal mask the op's flops count the unmasked half and the kernel also
 *     computes the diagonal blocks: x (1 + ATTN_BLOCK / s).
 *  3. Elementwise, norms, optimizer, communication kernels: memory-bound,
 *     bytes / (HBM x mem_eff); their flops run on the vector units at the
 *     fp32 peak x VEC_EFF.
 *  4. Every kernel pays launch_s; a memory-bound op (3.) stands for
 *     `batch` kernels (an optimizer's per-parameter loop) and pays it that
 *     many times.
 *  5. An unfused attention core (WL_OPF_UNFUSED: the batched GEMMs and the
 *     softmax of attention without a fused kernel) takes PLAT_UNFUSED_FWD
 *     or PLAT_UNFUSED_BWD times its roofline: the published measurement of
 *     that implementation against this model (platform.h).  A fused one
 *     with dropout (WL_OPF_DROPOUT) takes PLAT_ATTN_DROPOUT_FWD or _BWD
 *     times its rate's time, the same paper's measurement.
 *
 * The engine stretches compute by plat_compute_overlap_factor() while a
 * transfer of the same GPU runs (sim/engine/compute.c, design note 2).
 *
 * Why a table in C and not a data file: the engine asks for an op's time
 * millions of times with no error channel, so the lookup must not fail; the
 * parameters are ten numbers per device, each with its source beside it; and
 * calibration replaces them in-process (plat_compute_params_override), which
 * is what the fitting of docs/calibration.md does.
 */
#include <math.h>
#include <string.h>

#include "platform.h"

/* Library-level constants (the same on every device).
 * ATTN_SEQ_HALF, ATTN_HD_HALF: FlashAttention-2 paper (Dao 2023, Fig. 4-7):
 *   forward throughput at seq 512 is about 0.7 of its value at 16k, head dim
 *   64 about 0.85 of head dim 128 -> s/(s+192) and h/(h+32) give 0.73 and 0.83.
 * ATTN_BLOCK: the 128-row query block of flash attention kernels.
 * tile_shapes[].rel: rate of smaller tiles relative to the largest (CUTLASS
 *   profiler on A100: 128x128 reaches about 0.9 of 256x128 on large shapes,
 *   64x64 about 0.7).
 * VEC_EFF: vector (non-tensor) math of elementwise kernels. */
#define ATTN_SEQ_HALF 192.0
#define ATTN_HD_HALF 32.0
#define ATTN_BLOCK 128.0
#define VEC_EFF 0.7
#define SPLITK_MAX 16
#define SPLITK_MIN_K 256
/* Tile shapes tried for a GEMM: m and n > 0 are rows and columns, < 0 divide
 * the device's largest tile (-2: half of it); rel is the rate relative to the
 * largest tile.  The skinny ones (16 or 32 rows or columns) are what BLAS
 * libraries use for few-token or few-output shapes; their low rate follows
 * their low arithmetic intensity (tm tn / (tm + tn): 85 for 256 x 128, 26
 * for 32 x 128, 14 for 16 x 128). */
static const struct {
  int m, n;
  double rel;
} tile_shapes[] = {{-1, -1, 1.0}, {-2, -1, 0.9}, {-2, -2, 0.7}, {32, -1, 0.5},
                   {16, -1, 0.35}, {-1, 32, 0.5},  {-1, 16, 0.35}};

/* The built-in parameter sets.  How each was obtained:
 *  sms: vendor whitepapers (A100: 108 SMs; H100 SXM5 and H200: 132).
 *  tile_m x tile_n: the largest bf16 tile of cuBLAS/CUTLASS kernels on the
 *    architecture (sm80: 256x128x64; sm90: 128x256x64, the same area).
 *  gemm_eff: FITTED per device on its published training runs by `simtrain
 *    validate --fit` (docs/calibration.md, sections 4-5; leave-one-out
 *    errors there): A100 0.741 on the ten SC'21 runs as the authors' scripts
 *    and their code ran them (examples/sc21/run_table_1.sh: micro-batch
 *    sizes, DDP and interleaving per run; the backward TP all-reduce not
 *    overlapped, tp_async=0; pipeline tensors split over the TP ranks,
 *    pp_scatter=1; their unfused attention at PLAT_UNFUSED_FWD and
 *    PLAT_UNFUSED_BWD), H100/H200 0.668 on the nine Megatron-LM H100
 *    runs (H200: the same SMs and clocks).  An
 *    end-to-end value: it carries what a step loses outside the kernels'
 *    best rates (data loading, optimizer, logging, any clock difference
 *    between a short benchmark and a long run) and sits below
 *    microbenchmarks: fitted to XLA's published sm_90 GEMM table
 *    (platforms/measure/H100-SXM-xla.json) the same model needs 0.810, and
 *    with it reproduces every GEMM of 10 GFLOP or more within 8%
 *    (tests/test_compute_measured.c).
 *  gemm_eff_torch: the same end-to-end value for the bf16 GEMMs of the
 *    PyTorch frameworks' runs (WL_OPF_TORCH: FSDP, FSDP2, DeepSpeed; torch's
 *    own matmul and linear through cuBLAS, with the frameworks' eager
 *    host side), FITTED per device on those runs of the validation set
 *    (llm-foundry, torchtitan, fms-fsdp, Accelerate; docs/accuracy.md,
 *    leave-one-out there): A100 0.718 on 14, H100/H200 0.595 on 24 (the fp8
 *    runs' bf16 output layers only).  Megatron's value on H100 does not
 *    carry over: at 0.668 the PyTorch frameworks' bf16 H100 runs came out
 *    up to 18% fast while their A100 runs sat within a few percent.
 *  gemm_k_overhead: 128 K elements (two K-stages of pipeline fill plus the
 *    epilogue), which makes a K = 1024 GEMM reach 0.89 of a K = 8192 one,
 *    as cuBLAS does on both architectures.
 *  fp8_gemm_eff: H100 fp8 GEMMs reach about 1350 of 1979 TF/s (Transformer
 *    Engine and cuBLASLt benchmarks): 0.68 at the kernel level, scaled like
 *    the bf16 value from the kernel level to the end-to-end one
 *    (0.68 x 0.668 / 0.810 = 0.561), so that an fp8 GEMM stays 1.68x a bf16
 *    one, as in the benchmarks.
 *  attn_eff, attn_bwd_ratio: FlashAttention-2 on A100 (about 220 TF/s
 *    forward at head dim 128, backward 0.8 of that); on H100, cuDNN fused
 *    attention as used by Transformer Engine (about 550 TF/s forward): used
 *    on H100/H200 only with attn_published 0, whose published rates by
 *    library (FlashAttention-3 paper) replace them.
 *  mem_eff: streaming kernels (copy, Adam) reach 1.75 of 2.04 TB/s on
 *    A100-80GB and 2.9-3.0 of 3.35 TB/s on H100 (0.85, 0.88).
 *  launch_s: device-side gap between back-to-back kernels in a captured
 *    training step (Nsight traces of Megatron: 1.5-3 us).
 *  overlap_slowdown: GEMMs slow by about 10% while an NCCL kernel runs beside
 *    them (the NCCL channels take 8-16 SMs of 108/132 and HBM bandwidth;
 *    Megatron-LM's tp-comm-overlap notes and Rashidi et al. 2022).
 */
static const plat_compute_params builtin_sets[] = {
    {.device = "A100-SXM4-80GB", .sms = 108, .tile_m = 256, .tile_n = 128, .gemm_eff = 0.741,
     .gemm_eff_torch = 0.718, .gemm_k_overhead = 128, .fp8_gemm_eff = 0,
     .attn_eff = 0.70, .attn_bwd_ratio = 0.80,
     .mem_eff = 0.85, .launch_s = 2e-6, .overlap_slowdown = 0.10},
    {.device = "A100-SXM4-40GB", .sms = 108, .tile_m = 256, .tile_n = 128, .gemm_eff = 0.741,
     .gemm_eff_torch = 0.718, .gemm_k_overhead = 128, .fp8_gemm_eff = 0,
     .attn_eff = 0.70, .attn_bwd_ratio = 0.80,
     .mem_eff = 0.80, .launch_s = 2e-6, .overlap_slowdown = 0.10},
    {.device = "H100-SXM", .sms = 132, .tile_m = 256, .tile_n = 128, .gemm_eff = 0.668,
     .gemm_eff_torch = 0.595, .gemm_k_overhead = 128, .fp8_gemm_eff = 0.561,
     .attn_eff = 0.55, .attn_bwd_ratio = 0.80,
     .attn_published = 1,
     .mem_eff = 0.88, .launch_s = 2e-6, .overlap_slowdown = 0.10},
    {.device = "H200", .sms = 132, .tile_m = 256, .tile_n = 128, .gemm_eff = 0.668,
     .gemm_eff_torch = 0.595, .gemm_k_overhead = 128, .fp8_gemm_eff = 0.561,
     .attn_eff = 0.55, .attn_bwd_ratio = 0.80,
     .attn_published = 1,
     .mem_eff = 0.88, .launch_s = 2e-6, .overlap_slowdown = 0.10},
};

/* Devices without a set: no tile model, middle-of-the-road efficiencies. */
static const plat_compute_params generic_set = {
    .device = "generic", .sms = 0, .tile_m = 0, .tile_n = 0, .gemm_eff = 0.70,
    .gemm_k_overhead = 128, .fp8_gemm_eff = 0.60, .attn_eff = 0.50, .attn_bwd_ratio = 0.80,
    .mem_eff = 0.80, .launch_s = 3e-6, .overlap_slowdown = 0.10};

#define NUM_BUILTIN (sizeof builtin_sets / sizeof builtin_sets[0])
#define MAX_OVERRIDES 8
static plat_compute_params overrides[MAX_OVERRIDES];
static int num_overrides;

const plat_compute_params *const *plat_compute_params_list(void)
{
  static const plat_compute_params *list[NUM_BUILTIN + 2];
  if (!list[0]) {
    for (size_t i = 0; i < NUM_BUILTIN; i++)
      list[i] = &builtin_sets[i];
    list[NUM_BUILTIN] = &generic_set;
  }
  return list;
}

void plat_compute_params_override(const plat_compute_params *p)
{
  if (!p) {
    num_overrides = 0;
    return;
  }
  for (int i = 0; i < num_overrides; i++)
    if (strcmp(overrides[i].device, p->device) == 0) {
      overrides[i] = *p;
      return;
    }
  if (num_overrides < MAX_OVERRIDES)
    overrides[num_overrides++] = *p;
}

const plat_compute_params *plat_compute_params_for(const plat_device *d)
{
  /* its own name first (an override made for the variant itself), then the
   * device it is a variant of (devices.json "tuning") */
  for (int pass = 0; pass < 2; pass++) {
    const char *nm = pass ? d->tuning : d->name;
    if (!nm[0])
      continue;
    for (int i = 0; i < num_overrides; i++)
      if (strcmp(overrides[i].device, nm) == 0)
        return &overrides[i];
    for (size_t i = 0; i < NUM_BUILTIN; i++)
      if (strcmp(builtin_sets[i].device, nm) == 0)
        return &builtin_sets[i];
  }
  return &generic_set;
}

/* ---- the model ------------------------------------------------------------ */

static double peak_for(const plat_device *d, int dtype)
{
  if (dtype >= 0 && dtype < WL_DTYPE_COUNT && d->peak_flops[dtype] > 0)
    return d->peak_flops[dtype];
  if (d->peak_flops[WL_DTYPE_BF16] > 0)
    return d->peak_flops[WL_DTYPE_BF16];
  if (d->peak_flops[WL_DTYPE_FP16] > 0)
    return d->peak_flops[WL_DTYPE_FP16];
  return 1e12; /* a device with no figures at all: 1 TFLOP/s, visibly slow */
}

static double ceil_div(double a, double b) { return ceil(a / b); }

/* GEMM math time with tile and wave quantisation; fills the tile fields of det. */
static double gemm_math_s(const plat_compute_params *p, const wl_op *op, double peak, double eff,
                          double mem_Bps, plat_compute_detail *det)
{
  /* c GEMMs of this shape in flight on separate streams share the waves:
   * quantise over all of them and charge this one its 1/c */
  double c = op->concurrent > 1 ? op->concurrent : 1;
  double m = op->m, n = op->n, k = op->k, b = (op->batch > 0 ? op->batch : 1) * c;
  if (!(m > 0 && n > 0 && k > 0) || p->sms <= 0 || p->tile_m <= 0 || p->tile_n <= 0) {
    /* no shape (or no tile model): the K-loop efficiency alone */
    double kf = k > 0 ? k / (k + p->gemm_k_overhead) : 1;
    return op->flops / (peak * eff * kf);
  }
  double sm_rate = peak / p->sms * eff; /* FLOP/s of one SM inside a full tile */
  double best = INFINITY;
  for (size_t t = 0; t < sizeof tile_shapes / sizeof tile_shapes[0]; t++) {
    int tm = tile_shapes[t].m > 0 ? tile_shapes[t].m : p->tile_m / -tile_shapes[t].m;
    int tn = tile_shapes[t].n > 0 ? tile_shapes[t].n : p->tile_n / -tile_shapes[t].n;
    if (tm <= 0 || tn <= 0)
      continue;
    double tiles = ceil_div(m, tm) * ceil_div(n, tn) * b;
    for (int s = 1; s <= SPLITK_MAX; s++) {
      if (s > 1 && (tiles * s > p->sms || k / s < SPLITK_MIN_K))
        break;
      double waves = ceil_div(tiles * s, p->sms);
      double tile_s = 2.0 * tm * tn * (ceil_div(k, s) + p->gemm_k_overhead) /
                      (sm_rate * tile_shapes[t].rel);
      double reduce_s = s > 1 && mem_Bps > 0 ? m * n * b * 4.0 * 2.0 * s / mem_Bps : 0;
      double ts = waves * tile_s + reduce_s;
      if (ts / c < best) {
        best = ts / c;
        det->tiles = (long)(tiles * s);
        det->waves = (long)waves;
        det->tile_m = tm;
        det->tile_n = tn;
        det->split_k = s;
      }
    }
  }
  return best;
}

double plat_compute_explain(const plat_compute_params *p, const plat_device *d, const wl_op *op,
                            plat_compute_detail *det)
{
  memset(det, 0, sizeof *det);
  if (op->duration_s >= 0) {
    det->time_s = op->duration_s;
    det->bound = PLAT_BOUND_GIVEN;
    return det->time_s;
  }
  int cls = op->sub < WL_CLASS_COUNT ? op->sub : WL_CLASS_OTHER;
  double mem_Bps = d->hbm_Bps * p->mem_eff;
  double flops = op->flops > 0 ? op->flops : 0;
  double math = 0, peak;
  switch (cls) {
  case WL_CLASS_GEMM:
  case WL_CLASS_OTHER: {
    int fp8 = op->dtype == WL_DTYPE_FP8 && d->peak_flops[WL_DTYPE_FP8] > 0;
    peak = peak_for(d, op->dtype);
    double eff = fp8 && p->fp8_gemm_eff > 0                             ? p->fp8_gemm_eff
                 : (op->flags & WL_OPF_TORCH) && p->gemm_eff_torch > 0 ? p->gemm_eff_torch
                                                                         : p->gemm_eff;
    math = flops > 0 ? gemm_math_s(p, op, peak, eff, mem_Bps, det) : 0;
    break;
  }
  case WL_CLASS_ATTENTION: {
    peak = peak_for(d, op->dtype);
    double s = op->n > 0 ? op->n : 0, h = op->k;
    int causal = (op->flags & WL_OPF_CAUSAL) != 0, bwd = op->phase == WL_PHASE_BACKWARD;
    /* A sliding window of s keys: every query block runs the s keys before
     * it plus a block (the band's two partly masked edge blocks), all blocks
     * alike, so it runs as a kernel without a mask over s + ATTN_BLOCK keys
     * at (1 + ATTN_BLOCK / s) times the band's FLOPs (docs/calibration.md,
     * "Sliding windows"). */
    int window = (op->flags & WL_OPF_WINDOW) && s > 0;
    double waste = (window || causal) && s > 0 ? 1.0 + ATTN_BLOCK / s : 1.0;
    if (window) {
      s += ATTN_BLOCK;
      causal = 0;
    }
    double rate = !p->attn_published || op->dtype == WL_DTYPE_FP8
                      ? 0 /* the tables are bf16/fp16 */
                      : plat_attn_published_rate(d, wl_op_attn_impl(op), bwd, causal, h, s);
    double drop = !(op->flags & WL_OPF_DROPOUT) ? 1 : bwd ? PLAT_ATTN_DROPOUT_BWD
                                                           : PLAT_ATTN_DROPOUT_FWD;
    if (rate > 0) { /* the library's published rate, masked blocks included */
      math = flops * (window ? waste : 1) / rate * drop;
      break;
    }
    double eff = p->attn_eff;
    if (s > 0)
      eff *= s / (s + ATTN_SEQ_HALF);
    if (h > 0)
      eff *= fmin(1.0, (h / (h + ATTN_HD_HALF)) / (128.0 / (128.0 + ATTN_HD_HALF)));
    if (bwd)
      eff *= p->attn_bwd_ratio;
    if (wl_op_attn_impl(op) == WL_ATTN_FA1) /* attn_eff is FlashAttention-2's level */
      eff *= PLAT_ATTN_FA1_SPEED;
    math = flops * waste / (peak * eff) * drop;
    break;
  }
  default: /* elementwise, optimizer, communication kernels */
    peak = d->peak_flops[WL_DTYPE_FP32] > 0 ? d->peak_flops[WL_DTYPE_FP32]
                                              : peak_for(d, WL_DTYPE_BF16);
    math = flops / (peak * VEC_EFF);
    break;
  }
  double mem = mem_Bps > 0 && op->bytes > 0 ? op->bytes / mem_Bps : 0;
  det->math_s = math;
  det->memory_s = mem;
  /* a memory-bound op of `batch` kernels (3.) pays each one's launch */
  int mem_class = cls != WL_CLASS_GEMM && cls != WL_CLASS_OTHER && cls != WL_CLASS_ATTENTION;
  det->launch_s = p->launch_s * (mem_class && op->batch > 1 ? op->batch : 1);
  det->peak_flops = peak;
  det->bound = mem > math ? PLAT_BOUND_MEMORY : PLAT_BOUND_MATH;
  det->eff = math > 0 ? flops / (math * peak) : 0;
  double unf = !(op->flags & WL_OPF_UNFUSED) ? 1
               : (op->flags & WL_OPF_BWD)    ? PLAT_UNFUSED_BWD
                                             : PLAT_UNFUSED_FWD;
  det->time_s = det->launch_s + fmax(math, mem) * unf;
  return det->time_s;
}

double plat_compute_time_with(const plat_compute_params *p, const plat_device *d,
                              const wl_op *op)
{
  plat_compute_detail det;
  return plat_compute_explain(p, d, op, &det);
}

double plat_compute_time(const plat_device *d, const wl_op *op)
{
  if (op->duration_s >= 0)
    return op->duration_s;
  return plat_compute_time_with(plat_compute_params_for(d), d, op);
}

double plat_compute_overlap_factor(const plat_device *d)
{
  double s = plat_compute_params_for(d)->overlap_slowdown;
  return s > 0 ? 1.0 + s : 1.0;
}
