/* fuzz_layout.c — libFuzzer entry point for layout strings
 * ("tp=8,pp=4,mbs=1,gbs=512,..."), parsed and resolved against a built-in
 * model, with the GPU count left to the layout and with 64 GPUs. */
#include "fuzz_common.h"
#include "workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static wl_model models[2];
  static int loaded;
  if (!loaded) {
    st_err e;
    if (wl_model_load("llama3-8b", &models[0], &e) || wl_model_load("mixtral-8x7b", &models[1], &e))
      abort();
    loaded = 1;
  }
  char *text = fuzz_text(data, size);
  for (int i = 0; i < 4; i++) {
    wl_layout l;
    st_err err;
    st_err_clear(&err);
    fuzz_check(wl_layout_parse(text, i & 1 ? 64 : 0, &models[i >> 1], &l, &err), &err);
  }
  free(text);
  return 0;
}
