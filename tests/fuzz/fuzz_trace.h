/* fuzz_trace.h — one libFuzzer entry point per trace format: the input is
 * written to a file named as the importer expects, imported with
 * tr_import(), and what imports is written as a workload (the writer sees
 * every value an importer produced).  The including file defines
 * FUZZ_FORMAT ("kineto"), FUZZ_FILE (the file name) and fuzz_options(). */
#include "fuzz_common.h"
#include "traces.h"

static void fuzz_options(tr_options *o);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = fuzz_write(FUZZ_FILE, data, size);
  char spec[800];
  snprintf(spec, sizeof spec, "%s:%s", FUZZ_FORMAT, path);
  tr_options o;
  tr_options_init(&o);
  fuzz_options(&o);
  wl_workload *wl = NULL;
  tr_import_stats st;
  memset(&st, 0, sizeof st);
  st_err err;
  st_err_clear(&err);
  int rc = tr_import(spec, &o, &wl, &st, &err);
  fuzz_check(rc, &err);
  if (!rc) {
    char *json = wl_workload_to_json(wl, 0);
    if (!json)
      abort();
    free(json);
    wl_workload_destroy(wl);
    tr_import_stats_release(&st);
  }
  return 0;
}
