/* fuzz_workload.c — libFuzzer entry point for the workload reader.
 *
 * Any input must either parse, or fail with an error message; never crash,
 * leak or read out of bounds.  What parses must also survive the writer:
 * writing it and reading that back gives the same JSON again (the reader and
 * the writer agree on every value the reader accepts).
 *
 * bench/fuzz.sh runs it with the others (tests/fuzz/CMakeLists.txt builds
 * them with clang, -DSIMTRAIN_FUZZ=ON).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  wl_workload *wl = NULL;
  st_err err;
  st_err_clear(&err);
  int rc = wl_workload_parse((const char *)data, size, "fuzz", &wl, &err);
  fuzz_check(rc, &err); /* an error comes with its one-line message */
  if (rc != ST_OK) {
    if (wl != NULL)
      abort(); /* ... and no workload */
    return 0;
  }
  /* The round trip writes every rank's map twice: for a million ranks and
   * tens of roles that is half a minute under ASan (past libFuzzer's
   * time-out on a loaded machine) and reaches no code a thousand ranks do
   * not; such inputs are only read. */
  if ((size_t)wl->num_ranks * (size_t)(wl->num_roles + 1) > ((size_t)1 << 20)) {
    wl_workload_destroy(wl);
    return 0;
  }
  char *json = wl_workload_to_json(wl, 0);
  if (!json)
    abort();
  wl_workload *again = NULL;
  if (wl_workload_parse(json, strlen(json), "fuzz (rewritten)", &again, &err) != ST_OK)
    abort(); /* the writer produced something the reader refuses */
  char *json2 = wl_workload_to_json(again, 0);
  if (!json2 || strcmp(json, json2) != 0)
    abort(); /* not stable under a round trip */
  free(json2);
  free(json);
  wl_workload_destroy(again);
  wl_workload_destroy(wl);
  return 0;
}
