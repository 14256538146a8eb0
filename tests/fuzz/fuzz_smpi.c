/* fuzz_smpi.c — libFuzzer entry point for SimGrid/SMPI time-independent traces
 * (traces/tr_smpi.c): one file of actions (a listing of files reads files beside it). */
#define FUZZ_FORMAT "smpi"
#define FUZZ_FILE "t.txt"
#include "fuzz_trace.h"

static void fuzz_options(tr_options *o)
{
  (void)o;
}
