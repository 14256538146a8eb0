/* fuzz_chakra.c — libFuzzer entry point for Chakra execution traces (protobuf .et,
 * traces/tr_chakra*.c), one rank's file, replayed on 4 ranks as a 2 x 2 torus. */
#define FUZZ_FORMAT "chakra"
#define FUZZ_FILE "t.0.et"
#include "fuzz_trace.h"

static void fuzz_options(tr_options *o)
{
  o->num_gpus = 4;
  o->dims[0] = o->dims[1] = 2;
  o->num_dims = 2;
}
