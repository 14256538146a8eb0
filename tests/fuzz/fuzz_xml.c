/* fuzz_xml.c — libFuzzer entry point for the SimGrid XML platform loader's
 * scan (platforms/xml.c: hosts, links' rates, Full routes, simtrain.*
 * properties), loaded as --cluster FILE.xml is.  SimGrid's own parse happens
 * when the engine builds the platform, not here. */
#include "fuzz_common.h"
#include "platform.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = fuzz_write("p.xml", data, size);
  plat_cluster *c = NULL;
  st_err err;
  st_err_clear(&err);
  int rc = plat_cluster_load(path, &c, &err);
  fuzz_check(rc, &err);
  if (!rc)
    plat_cluster_destroy(c);
  return 0;
}
