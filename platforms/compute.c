/* compute.c — the compute model: a compute op's time on a device.
 *
 * A roofline with one efficiency per op class: the op is bound either by its
 * math (flops at a fraction of the dense peak for its dtype) or by its memory
 * traffic (bytes at a fraction of HBM bandwidth), plus a kernel launch
 * overhead.  The efficiencies are first estimates from public figures (large
 * bf16 GEMMs reach 70-80% of dense peak on A100/H100 in vendor and cuBLAS
 * benchmarks; fused attention about 50-60%; streaming kernels 80-90% of HBM
 * bandwidth); docs/calibration.md is where fitted values and their sources
 * belong.
 */
#include <math.h>

#include "platform.h"

static const double class_flop_eff[WL_CLASS_COUNT] = {
    [WL_CLASS_OTHER] = 0.50,       [WL_CLASS_GEMM] = 0.75,      [WL_CLASS_ATTENTION] = 0.55,
    [WL_CLASS_ELEMENTWISE] = 0.50, [WL_CLASS_OPTIMIZER] = 0.50, [WL_CLASS_COMM_KERNEL] = 0.50,
};
static const double mem_eff = 0.85;
static const double launch_s = 3e-6;

double plat_compute_time(const plat_device *d, const wl_op *op)
{
  if (op->duration_s >= 0)
    return op->duration_s;
  int dt = op->dtype < WL_DTYPE_COUNT ? op->dtype : WL_DTYPE_BF16;
  double peak = d->peak_flops[dt];
  if (!(peak > 0))
    peak = d->peak_flops[WL_DTYPE_BF16] > 0 ? d->peak_flops[WL_DTYPE_BF16] : 1e12;
  int cls = op->sub < WL_CLASS_COUNT ? op->sub : WL_CLASS_OTHER;
  double t_math = op->flops / (peak * class_flop_eff[cls]);
  double t_mem = d->hbm_Bps > 0 ? op->bytes / (d->hbm_Bps * mem_eff) : 0;
  return launch_s + fmax(t_math, t_mem);
}
