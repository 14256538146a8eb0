/* fuzz_astra.c — libFuzzer entry point for ASTRA-sim 1.0 layer-wise text workloads
 * (traces/tr_astra.c), expanded over 16 GPUs. */
#define FUZZ_FORMAT "astra"
#define FUZZ_FILE "w.txt"
#include "fuzz_trace.h"

static void fuzz_options(tr_options *o)
{
  o->num_gpus = 16;
}
