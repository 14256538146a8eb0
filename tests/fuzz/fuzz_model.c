/* fuzz_model.c — libFuzzer entry point for model specs (our keys and
 * Hugging Face config.json, workloads/wl_model.c, wl_hf.c): read, and what
 * reads has a parameter count. */
#include "fuzz_common.h"
#include "workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = fuzz_text(data, size);
  wl_model m;
  st_err err;
  st_err_clear(&err);
  int rc = wl_model_parse(text, "fuzz.json", &m, &err);
  fuzz_check(rc, &err);
  if (!rc) {
    volatile double p = wl_model_params(&m) + wl_model_active_params(&m);
    (void)p;
    wl_model_release(&m);
  }
  free(text);
  return 0;
}
