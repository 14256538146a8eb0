/* devices.c — the built-in device table (platforms/data/devices.json) as a
 * public lookup: one device by its exact name, or all of them in table
 * order (importers match a trace's device name against the list). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "plat_int.h"

int plat_device_find(const char *name, plat_device *d, st_err *err)
{
  return plat__device_find(name, d, err);
}

int plat_device_list(plat_device **out, int *count, st_err *err)
{
  *out = NULL;
  *count = 0;
  cJSON *root = NULL;
  int rc = plat__devices_json(&root, err);
  if (rc)
    return rc;
  st_jrd j = {PLAT__DEVICES, NULL, err};
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "devices");
  st_jpath at_list = {NULL, "devices", 0};
  int n = cJSON_GetArraySize(list);
  plat_device *v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);
  if (!v)
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
  int i = 0;
  for (const cJSON *it = list ? list->child : NULL; it && !rc; it = it->next, i++) {
    st_jpath at = {&at_list, NULL, i};
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "name");
    const char *name = NULL;
    rc = nm ? st_jrd_string(&j, &at, nm, &name) : st_jrd_missing(&j, &at, "name");
    if (!rc)
      rc = plat__device_find(name, &v[i], err);
  }
  cJSON_Delete(root);
  if (rc) {
    free(v);
    return rc;
  }
  *out = v;
  *count = n;
  return ST_OK;
}
