/* devices.c — the built-in device table (platforms/data/devices.json) as a
 * public lookup: one device by its exact name, or all of them in table
 * order (importers match a trace's device name against the list). */
#include "plat_int.h"

int plat_device_find(const char *name, plat_device *d, st_err *err)
{
  return plat__device_find(name, d, err);
}

int plat_device_list(plat_device **out, int *count, st_err *err)
{
  return plat__devices_all(out, count, err);
}
