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
  char *text = plat__data_read("devices.json", err);
  if (!text)
    return err && err->code ? err->code
                            : st_err_set(err, ST_EIO, "platform data: 'devices.json' is missing");
  cJSON *root = cJSON_Parse(text);
  free(text);
  if (!root)
    return st_err_set(err, ST_EINPUT, "devices 'devices.json': not valid JSON");
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "devices");
  int n = cJSON_GetArraySize(list);
  plat_device *v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);
  int rc = v ? ST_OK : st_err_set(err, ST_ENOMEM, "out of memory");
  int i = 0;
  for (const cJSON *it = list ? list->child : NULL; it && !rc; it = it->next, i++) {
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "name");
    if (!cJSON_IsString(nm))
      rc = st_err_set(err, ST_EINPUT, "devices 'devices.json': key 'devices[%d].name' must be a "
                                      "short string", i);
    else
      rc = plat__device_find(nm->valuestring, &v[i], err);
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
