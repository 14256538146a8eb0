/* fuzz_et.c — libFuzzer entry point for PyTorch host execution traces (ET,
 * joined to a Kineto trace by pid: traces/tr_kineto_read.c).  The input is
 * the ET, in the folder --et names; the Kineto trace is a fixed one whose
 * two NCCL kernels carry no collective arguments, so the join is what sizes
 * them (tests/data/fuzz/et_kineto_rank0.json, its ET et_rank0.json). */
#include "fuzz_common.h"
#include "traces.h"

#ifndef FUZZ_ET_KINETO
#error "FUZZ_ET_KINETO: the Kineto trace the ET joins"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static char dir[800];
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "%s", fuzz_path("et"));
    if (mkdir(dir, 0700))
      abort();
  }
  char et[900];
  snprintf(et, sizeof et, "%s/rank0_et.json", dir);
  FILE *f = fopen(et, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
    abort();
  tr_options o;
  tr_options_init(&o);
  o.et_dir = dir;
  wl_workload *wl = NULL;
  tr_import_stats st;
  memset(&st, 0, sizeof st);
  st_err err;
  st_err_clear(&err);
  int rc = tr_import("kineto:" FUZZ_ET_KINETO, &o, &wl, &st, &err);
  fuzz_check(rc, &err);
  if (!rc) {
    wl_workload_destroy(wl);
    tr_import_stats_release(&st);
  }
  return 0;
}
