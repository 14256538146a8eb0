/* fuzz_results.c — libFuzzer entry point for the results file reader
 * (analysis/results_read.c on HDF5): any bytes read as a results file, and
 * what reads gives a report.  A crash inside HDF5 itself is HDF5's (1.10),
 * and is reported as such in bench/README.md. */
#include "analysis.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = fuzz_write("r.h5", data, size);
  an_results *r = NULL;
  st_err err;
  st_err_clear(&err);
  int rc = an_results_read(path, &r, &err);
  fuzz_check(rc, &err);
  if (!rc)
    an_results_destroy(r);
  return 0;
}
