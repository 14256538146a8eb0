/* fuzz_simai.c — libFuzzer entry point for SimAI layer-wise text workloads (traces/tr_astra.c,
 * SimAI's header keys: all_gpus, ep, pp_comm...), expanded over the GPUs the file names. */
#define FUZZ_FORMAT "astra"
#define FUZZ_FILE "w.txt"
#include "fuzz_trace.h"

static void fuzz_options(tr_options *o)
{
  o->num_gpus = 0;
}
