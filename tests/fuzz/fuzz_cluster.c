/* fuzz_cluster.c — libFuzzer entry point for cluster specs (JSON,
 * platforms/cluster.c and groups.c), loaded as a file the way --cluster
 * FILE.json is. */
#include "fuzz_common.h"
#include "platform.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = fuzz_write("c.json", data, size);
  plat_cluster *c = NULL;
  st_err err;
  st_err_clear(&err);
  int rc = plat_cluster_load(path, &c, &err);
  fuzz_check(rc, &err);
  if (!rc)
    plat_cluster_destroy(c);
  return 0;
}
