/* fuzz_kineto.c — libFuzzer entry point for Kineto (PyTorch profiler) traces, one rank's file
 * (traces/tr_kineto*.c). */
#define FUZZ_FORMAT "kineto"
#define FUZZ_FILE "trace.json"
#include "fuzz_trace.h"

static void fuzz_options(tr_options *o)
{
  o->num_gpus = 0;
}
