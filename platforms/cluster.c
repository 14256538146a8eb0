/* cluster.c — cluster specs (JSON), presets and devices: text in, a checked
 * plat_cluster out.
 *
 * A preset NAME is the spec platforms/data/presets/NAME.json; NAME:NODES
 * replaces its node count.  Data files are read from $SIMTRAIN_PLATFORMS_DATA
 * when set, else from the copy embedded at build time (data_embed.c), so an
 * installed binary needs no data folder.  Every key of a spec is checked:
 * an unknown key, a wrong type or a value out of range is an error naming the
 * file and the key (docs/platforms.md documents them all).
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plat_int.h"

static const char *const preset_names[] = {
    "node8",   "dgx-v100", "dgx-a100",    "selene",     "dgx-h100",    "h100-superpod", "hgx-h200",
    "dgx-b200", "gb200-nvl72", "mi300x", "tpu-v4", "tpu-v5p", "ascend-910b", NULL};

const char *const *plat_preset_names(void) { return preset_names; }

/* ---- data files ---------------------------------------------------------- */
extern const struct plat_embedded_file {
  const char *path;
  const char *text;
} plat_embedded_files[];

char *plat__data_read(const char *rel, st_err *err)
{
  const char *dir = getenv("SIMTRAIN_PLATFORMS_DATA");
  if (dir && *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    char *data = NULL;
    size_t len;
    FILE *f = fopen(path, "rb");
    if (!f)
      return NULL;
    fclose(f);
    if (st_file_read_all(path, &data, &len, err))
      return NULL;
    return data;
  }
  for (int i = 0; plat_embedded_files[i].path; i++)
    if (!strcmp(plat_embedded_files[i].path, rel)) {
      char *s = strdup(plat_embedded_files[i].text);
      if (!s)
        st_err_set(err, ST_ENOMEM, "out of memory");
      return s;
    }
  return NULL;
}

/* ---- JSON: base's checked reader, with a spec's defaults and limits ------ */
/* The largest value a key may hold, by its unit: rates up to 1 PB/s, times
 * up to 1 s, capacities up to 1 PB, peaks up to 1 EFLOP/s per device, powers
 * up to 10 MW, prices up to 10,000 USD per GPU-hour.  Far above any real part,
 * and low enough that the conversions to SI units (x 1e9, x 1e12) and
 * SimGrid's arithmetic on them stay finite. */
static double key_max(const st_jpath *at, const char *key)
{
  if (st_str_ends_with(key, "GBps"))
    return 1e6;
  if (st_str_ends_with(key, "Gbps"))
    return 8e6;
  if (st_str_ends_with(key, "_us"))
    return 1e6;
  if (st_str_ends_with(key, "_GB"))
    return 1e6;
  if (at && at->key && !strcmp(at->key, "peak_TFLOPS"))
    return 1e6;
  if (st_str_ends_with(key, "_W"))
    return 1e7; /* 10 MW: a device or a node */
  if (st_str_ends_with(key, "_per_gpu_hour"))
    return 1e4;
  return 1e12;
}

/* number at obj.key; absent -> def (required when def is NAN); must be > lo
 * (or >= lo if incl) and at most key_max() */
static int get_num(const st_jrd *j, const st_jpath *at, const cJSON *obj, const char *key,
                   double def, double lo, int incl, double *out)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) {
    if (isnan(def))
      return st_jrd_missing(j, at, key);
    *out = def;
    return ST_OK;
  }
  return st_jrd_number(j, at, v, incl ? ST_NUM_REAL : ST_NUM_REAL | ST_NUM_OPEN_LO, lo,
                       key_max(at, key), out);
}

/* integer at obj.key; absent -> def (required when def is INT_MIN); >= lo */
static int get_int(const st_jrd *j, const st_jpath *at, const cJSON *obj, const char *key, int def,
                   int lo, int *out)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) {
    if (def == INT_MIN)
      return st_jrd_missing(j, at, key);
    *out = def;
    return ST_OK;
  }
  double x, hi = key_max(at, key) < INT_MAX / 2 ? key_max(at, key) : INT_MAX / 2;
  int rc = st_jrd_number(j, at, v, ST_NUM_INTEGER, lo, hi, &x);
  if (!rc)
    *out = (int)x;
  return rc;
}

/* true or false at obj.key; absent leaves *out */
static int get_bool(const st_jrd *j, const st_jpath *at, const cJSON *obj, const char *key,
                    int *out)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  return v ? st_jrd_bool(j, at, v, out) : ST_OK;
}

/* one of name(0 .. count-1) at obj.key, required */
static int get_enum(const st_jrd *j, const st_jpath *at, const cJSON *obj, const char *key,
                    const char *(*name)(int), int count, int *out)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  return v ? st_jrd_enum(j, at, v, NULL, name, count, out) : st_jrd_missing(j, at, key);
}

/* 1 to 3 positive integers at obj.key (the rest 1); absent leaves out */
static int get_int3(const st_jrd *j, const st_jpath *at, const cJSON *obj, const char *key,
                    int *out)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v)
    return ST_OK;
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 || cJSON_GetArraySize(v) > 3)
    return st_jrd_fail(j, at, "'%s' is %s, expected an array of 1 to 3 integers", key,
                       cJSON_IsArray(v) ? "an array of another size" : st_json_type_name(v));
  st_jpath arr = {at, key, 0};
  int n[3] = {1, 1, 1}, i = 0;
  for (const cJSON *it = v->child; it; it = it->next, i++) {
    st_jpath el = {&arr, NULL, i};
    long x;
    if (st_jrd_elem_int(j, &el, it, "size", 1, 1 << 16, &x))
      return ST_EINPUT;
    n[i] = (int)x;
  }
  memcpy(out, n, sizeof n);
  return ST_OK;
}

/* ---- devices ------------------------------------------------------------- */
int plat__devices_json(cJSON **root, st_err *err)
{
  char *text = plat__data_read("devices.json", err);
  if (!text)
    return err && err->code ? err->code
                            : st_err_set(err, ST_EIO, "platform data: 'devices.json' is missing");
  int rc = st_json_parse(text, strlen(text), PLAT__DEVICES, root, err);
  free(text);
  return rc;
}

/* The name of device entry v (at `at`), which must fit plat_device.name. */
static int device_name(const st_jrd *j, const st_jpath *at, const cJSON *v, const char **out)
{
  const cJSON *nm = cJSON_GetObjectItemCaseSensitive(v, "name");
  if (!nm)
    return st_jrd_missing(j, at, "name");
  if (st_jrd_string(j, at, nm, out))
    return ST_EINPUT;
  if (strlen(*out) >= sizeof((plat_device *)0)->name)
    return st_jrd_fail(j, at, "'name' is longer than %zu characters",
                       sizeof((plat_device *)0)->name - 1);
  return ST_OK;
}

static const char *const arch_names[PLAT_ARCH_COUNT] = {"volta", "ampere", "hopper", "blackwell",
                                                        "cdna3", "tpu",    "ascend"};
const char *plat_arch_name(int a) { return a >= 0 && a < PLAT_ARCH_COUNT ? arch_names[a] : "?"; }

/* Device entry `it` (at `at`) of the table into *d. */
static int parse_device(const st_jrd *j, const st_jpath *at, const cJSON *it, plat_device *d)
{
  static const char *const keys[] = {"name",      "arch",  "peak_TFLOPS",
                                     "hbm_GB",    "hbm_GBps", "link_GBps",
                                     "tdp_W",     "price_usd_per_gpu_hour", "host_link_GBps",
                                     "tuning",    NULL};
  static const char *const dt[] = {"fp32", "tf32", "bf16", "fp16", "fp8", NULL};
  const char *nm = NULL;
  int rc;
  if ((rc = st_jrd_members(j, at, it, keys, -1, NULL)) || (rc = device_name(j, at, it, &nm)))
    return rc;
  plat_device dv;
  memset(&dv, 0, sizeof dv);
  snprintf(dv.name, sizeof dv.name, "%s", nm);
  if ((rc = get_enum(j, at, it, "arch", plat_arch_name, PLAT_ARCH_COUNT, &dv.arch)))
    return rc;
  const cJSON *pk = cJSON_GetObjectItemCaseSensitive(it, "peak_TFLOPS");
  st_jpath pp = {at, "peak_TFLOPS", 0};
  if ((rc = st_jrd_members(j, &pp, pk, dt, -1, NULL)))
    return rc;
  for (int k = 0; k < WL_DTYPE_COUNT && !rc; k++) {
    double x;
    rc = get_num(j, &pp, pk, dt[k], 0, 0, 1, &x);
    dv.peak_flops[k] = x * 1e12;
  }
  double gb = 0, gbps = 0, lk = 0;
  if (!rc)
    rc = get_num(j, at, it, "hbm_GB", NAN, 0, 0, &gb);
  if (!rc)
    rc = get_num(j, at, it, "hbm_GBps", NAN, 0, 0, &gbps);
  if (!rc)
    rc = get_num(j, at, it, "link_GBps", 0, 0, 1, &lk);
  double hl = 0; /* absent: none built in */
  if (!rc)
    rc = get_num(j, at, it, "host_link_GBps", 0, 0, 1, &hl);
  dv.host_link_Bps = hl * 1e9;
  /* absent: not published (NaN); never 0, which would read as free or powerless */
  double tdp = NAN, price = NAN;
  if (!rc)
    rc = get_num(j, at, it, "tdp_W", INFINITY, 0, 0, &tdp);
  if (!rc)
    rc = get_num(j, at, it, "price_usd_per_gpu_hour", INFINITY, 0, 0, &price);
  if (rc)
    return rc;
  dv.hbm_bytes = gb * 1e9;
  dv.hbm_Bps = gbps * 1e9;
  dv.link_Bps = lk * 1e9;
  dv.tdp_W = isinf(tdp) ? NAN : tdp;
  dv.price_usd_per_gpu_hour = isinf(price) ? NAN : price;
  dv.clock_ratio = 1;
  const cJSON *tn = cJSON_GetObjectItemCaseSensitive(it, "tuning");
  if (tn) {
    const char *t = NULL;
    st_jpath tp = {at, "tuning", 0};
    if (st_jrd_string(j, &tp, tn, &t))
      return ST_EINPUT;
    if (strlen(t) >= sizeof dv.tuning)
      return st_jrd_fail(j, &tp, "longer than %zu characters", sizeof dv.tuning - 1);
    snprintf(dv.tuning, sizeof dv.tuning, "%s", t);
  }
  *d = dv;
  return ST_OK;
}

/* Device i's "tuning": another device of the table, of the same architecture
 * and with no tuning of its own (one level: a variant of a variant would hide
 * which published rates it runs at); sets the clock ratio from the two bf16
 * peaks. */
static int resolve_tuning(const st_jrd *j, plat_device *v, int n, int i)
{
  plat_device *d = &v[i];
  if (!d->tuning[0])
    return ST_OK;
  st_jpath at_list = {NULL, "devices", 0}, at = {&at_list, NULL, i}, tp = {&at, "tuning", 0};
  for (int k = 0; k < n; k++) {
    if (k == i || strcmp(v[k].name, d->tuning))
      continue;
    if (v[k].tuning[0])
      return st_jrd_fail(j, &tp, "'%s' is itself a variant (of '%s'): name that one", d->tuning,
                         v[k].tuning);
    if (v[k].arch != d->arch)
      return st_jrd_fail(j, &tp, "'%s' is %s, this device %s: a variant keeps its architecture",
                         d->tuning, plat_arch_name(v[k].arch), plat_arch_name(d->arch));
    double p0 = v[k].peak_flops[WL_DTYPE_BF16], p1 = d->peak_flops[WL_DTYPE_BF16];
    if (!(p0 > 0 && p1 > 0))
      return st_jrd_fail(j, &tp, "both devices need a bf16 peak to scale the rates by");
    d->clock_ratio = p1 / p0;
    return ST_OK;
  }
  return st_jrd_fail(j, &tp, "no other device is named '%s'", d->tuning);
}

int plat__devices_all(plat_device **out, int *count, st_err *err)
{
  *out = NULL;
  *count = 0;
  cJSON *root = NULL;
  int rc = plat__devices_json(&root, err);
  if (rc)
    return rc;
  st_jrd j = {PLAT__DEVICES, "docs/platforms.md", err};
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "devices");
  st_jpath at_list = {NULL, "devices", 0};
  int n = cJSON_GetArraySize(list), i = 0;
  plat_device *v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);
  if (!v)
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
  for (const cJSON *it = list ? list->child : NULL; it && !rc; it = it->next, i++) {
    st_jpath at = {&at_list, NULL, i};
    rc = parse_device(&j, &at, it, &v[i]);
  }
  for (int k = 0; k < n && !rc; k++)
    rc = resolve_tuning(&j, v, n, k);
  cJSON_Delete(root);
  if (rc) {
    free(v);
    return rc;
  }
  *out = v;
  *count = n;
  return ST_OK;
}

int plat__device_find(const char *name, plat_device *d, st_err *err)
{
  plat_device *v;
  int n, rc = plat__devices_all(&v, &n, err);
  if (rc)
    return rc;
  st_buf known;
  st_buf_init(&known);
  int found = 0;
  for (int i = 0; i < n && !found; i++) {
    st_buf_printf(&known, "%s%s", i ? ", " : "", v[i].name);
    if (!strcmp(v[i].name, name)) {
      *d = v[i];
      found = 1;
    }
  }
  if (!found)
    rc = st_err_set(err, ST_EINPUT, "device '%s' is unknown (known: %s)", name,
                    known.data ? known.data : "none");
  st_buf_release(&known);
  free(v);
  return rc;
}

double plat_host_power_default(const plat_device *d, int gpus_per_node)
{
  return d->tdp_W > 0 ? gpus_per_node * d->tdp_W * PLAT_HOST_POWER_RATIO : NAN;
}

/* ---- spec ---------------------------------------------------------------- */
static const char *intra_name(int k) { return plat_intra_kind_name(k); }
static const char *fabric_name(int k) { return plat_fabric_kind_name(k); }

/* {count, Gbps, lat_us} at `at` (absent: nothing set): count, bytes/s, s. */
static int parse_nics(const st_jrd *j, const st_jpath *at, const cJSON *o, int *count,
                      double *Bps, double *lat_s)
{
  static const char *const nkeys[] = {"count", "Gbps", "lat_us", NULL};
  if (!o)
    return ST_OK;
  double gbps, lat;
  int rc;
  if ((rc = st_jrd_members(j, at, o, nkeys, -1, NULL)) ||
      (rc = get_int(j, at, o, "count", INT_MIN, 1, count)) ||
      (rc = get_num(j, at, o, "Gbps", NAN, 0, 0, &gbps)) ||
      (rc = get_num(j, at, o, "lat_us", NAN, 0, 1, &lat)))
    return rc;
  *Bps = gbps * 1e9 / 8;
  *lat_s = lat * 1e-6;
  return ST_OK;
}

int plat__parse_node(const st_jrd *j, const st_jpath *up, const cJSON *node, plat_cluster *c)
{
  static const char *const keys[] = {"gpus", "intra", "nics", "pcie", "host_power_W", "host",
                                     "dcn", NULL};
  static const char *const ikeys[] = {"kind", "links_per_gpu", "link_GBps", "lat_us", "nvls", NULL};
  static const char *const pkeys[] = {"GBps", "lat_us", NULL};
  st_jpath at_node = {up, "node", 0}, at_intra = {&at_node, "intra", 0};
  st_jpath at_nics = {&at_node, "nics", 0}, at_pcie = {&at_node, "pcie", 0};
  int rc;
  if (!node)
    return st_jrd_missing(j, up, "node");
  if ((rc = st_jrd_members(j, &at_node, node, keys, -1, NULL)) ||
      (rc = get_int(j, &at_node, node, "gpus", INT_MIN, 1, &c->gpus_per_node)))
    return rc;
  const cJSON *in = cJSON_GetObjectItemCaseSensitive(node, "intra");
  if (!in)
    return st_jrd_missing(j, &at_node, "intra");
  if ((rc = st_jrd_members(j, &at_intra, in, ikeys, -1, NULL)) ||
      (rc = get_enum(j, &at_intra, in, "kind", intra_name, PLAT_INTRA_COUNT, &c->intra_kind)))
    return rc;
  if (c->intra_kind != PLAT_INTRA_NONE) {
    double bw, lat;
    if ((rc = get_int(j, &at_intra, in, "links_per_gpu", INT_MIN, 1, &c->intra_links_per_gpu)) ||
        (rc = get_num(j, &at_intra, in, "link_GBps", NAN, 0, 0, &bw)) ||
        (rc = get_num(j, &at_intra, in, "lat_us", NAN, 0, 1, &lat)) ||
        (rc = get_bool(j, &at_intra, in, "nvls", &c->nvls)))
      return rc;
    c->intra_link_Bps = bw * 1e9;
    c->intra_lat_s = lat * 1e-6;
    c->intra_Bps = c->intra_links_per_gpu * c->intra_link_Bps;
  } else if (cJSON_GetArraySize(in) > 1) {
    return st_jrd_fail(j, &at_intra, "kind none takes no other key");
  }
  /* NICs, and a torus host's data-centre NICs (the fabric is checked at the end) */
  st_jpath at_dcn = {&at_node, "dcn", 0};
  if ((rc = parse_nics(j, &at_nics, cJSON_GetObjectItemCaseSensitive(node, "nics"),
                       &c->nics_per_node, &c->nic_Bps, &c->nic_lat_s)) ||
      (rc = parse_nics(j, &at_dcn, cJSON_GetObjectItemCaseSensitive(node, "dcn"), &c->dcn_nics,
                       &c->dcn_Bps, &c->dcn_lat_s)))
    return rc;
  const cJSON *pc = cJSON_GetObjectItemCaseSensitive(node, "pcie");
  if (pc) {
    double bw, lat;
    if ((rc = st_jrd_members(j, &at_pcie, pc, pkeys, -1, NULL)) ||
        (rc = get_num(j, &at_pcie, pc, "GBps", NAN, 0, 0, &bw)) ||
        (rc = get_num(j, &at_pcie, pc, "lat_us", NAN, 0, 1, &lat)))
      return rc;
    c->pcie_Bps = bw * 1e9;
    c->pcie_lat_s = lat * 1e-6;
  }
  /* the node's non-GPU power: given (0 allowed: count the GPUs alone), else
   * derived from the GPUs' TDP */
  if ((rc = get_num(j, &at_node, node, "host_power_W", INFINITY, 0, 1, &c->host_power_W)))
    return rc;
  if (isinf(c->host_power_W))
    c->host_power_W = plat_host_power_default(&c->device, c->gpus_per_node);
  st_jpath at_host = {&at_node, "host", 0}; /* host memory, for offload (host.c) */
  return plat__host_parse(j, &at_host, cJSON_GetObjectItemCaseSensitive(node, "host"), c);
}

static int parse_fabric(const st_jrd *j, const cJSON *f, plat_cluster *c)
{
  static const char *const keys[] = {
      "kind",    "levels",       "radix",          "oversub",        "link_Gbps",
      "link_lat_us", "switch_lat_us", "sharp",     "routers_per_group", "nics_per_router",
      "global_links_per_router", "global_Gbps", "dims", "cube", "wrap", "link_GBps", "lat_us",
      NULL};
  st_jpath at_fab = {NULL, "fabric", 0};
  int rc;
  if ((rc = st_jrd_members(j, &at_fab, f, keys, -1, NULL)) ||
      (rc = get_enum(j, &at_fab, f, "kind", fabric_name, PLAT_FABRIC_XML, &c->fabric_kind)))
    return rc;
  double x;
  for (int i = 0; i < 4; i++)
    c->oversub[i] = 1;
  if ((rc = get_num(j, &at_fab, f, "switch_lat_us", 0, 0, 1, &x)))
    return rc;
  c->switch_lat_s = x * 1e-6;
  if ((rc = get_bool(j, &at_fab, f, "sharp", &c->in_network_reduction)))
    return rc;
  int k = c->fabric_kind;
  /* keys that belong to other kinds are errors, so a typo'd kind is seen */
  static const char *const by_kind[PLAT_FABRIC_XML][12] = {
      [PLAT_FABRIC_SWITCH] = {"kind", "switch_lat_us", "sharp", NULL},
      [PLAT_FABRIC_RAIL_FATTREE] = {"kind", "levels", "radix", "oversub", "link_Gbps",
                                    "link_lat_us", "switch_lat_us", "sharp", NULL},
      [PLAT_FABRIC_FATTREE] = {"kind", "levels", "radix", "oversub", "link_Gbps", "link_lat_us",
                               "switch_lat_us", "sharp", NULL},
      [PLAT_FABRIC_DRAGONFLY] = {"kind", "routers_per_group", "nics_per_router",
                                 "global_links_per_router", "link_Gbps", "global_Gbps",
                                 "link_lat_us", "switch_lat_us", "sharp", NULL},
      [PLAT_FABRIC_TORUS] = {"kind", "dims", "cube", "wrap", "link_GBps", "lat_us", NULL},
  };
  for (const cJSON *it = f->child; it; it = it->next) {
    int ok = 0;
    for (int i = 0; by_kind[k][i]; i++)
      ok |= !strcmp(it->string, by_kind[k][i]);
    if (!ok)
      return st_jrd_fail(j, &at_fab, "key '%s' does not apply to a fabric of kind %s", it->string,
                         fabric_name(k));
  }
  if (k == PLAT_FABRIC_FATTREE || k == PLAT_FABRIC_RAIL_FATTREE) {
    if ((rc = get_int(j, &at_fab, f, "radix", INT_MIN, 2, &c->fabric_radix)) ||
        (rc = get_int(j, &at_fab, f, "levels", 0, 0, &c->fabric_levels)))
      return rc;
    if (c->fabric_radix % 2)
      return st_jrd_fail(j, &at_fab, "'radix' is %d; it must be even", c->fabric_radix);
    if (c->fabric_levels > PLAT__MAX_LEVELS)
      return st_jrd_fail(j, &at_fab, "'levels' is %d; at most %d are supported", c->fabric_levels,
                         PLAT__MAX_LEVELS);
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(f, "oversub");
    if (o) {
      if (!cJSON_IsArray(o) || cJSON_GetArraySize(o) > 4)
        return st_jrd_fail(j, &at_fab, "'oversub' is %s, expected an array of up to 4 numbers",
                           cJSON_IsArray(o) ? "a longer array" : st_json_type_name(o));
      st_jpath at_o = {&at_fab, "oversub", 0};
      int i = 0;
      for (const cJSON *it = o->child; it; it = it->next, i++) {
        st_jpath el = {&at_o, NULL, i}; /* a down:up ratio */
        if ((rc = st_jrd_number(j, &el, it, ST_NUM_REAL, 1, 1e12, &c->oversub[i])))
          return rc;
      }
    }
    if ((rc = get_num(j, &at_fab, f, "link_Gbps", c->nic_Bps * 8 / 1e9, 0, 0, &x)))
      return rc;
    c->fabric_link_Bps = x * 1e9 / 8;
    if ((rc = get_num(j, &at_fab, f, "link_lat_us", 0, 0, 1, &x)))
      return rc;
    c->fabric_link_lat_s = x * 1e-6;
  } else if (k == PLAT_FABRIC_DRAGONFLY) {
    if ((rc = get_int(j, &at_fab, f, "routers_per_group", INT_MIN, 2, &c->dragonfly[0])) ||
        (rc = get_int(j, &at_fab, f, "nics_per_router", INT_MIN, 1, &c->dragonfly[1])) ||
        (rc = get_int(j, &at_fab, f, "global_links_per_router", INT_MIN, 1, &c->dragonfly[2])))
      return rc;
    if ((rc = get_num(j, &at_fab, f, "link_Gbps", c->nic_Bps * 8 / 1e9, 0, 0, &x)))
      return rc;
    c->fabric_link_Bps = x * 1e9 / 8;
    if ((rc = get_num(j, &at_fab, f, "global_Gbps", x, 0, 0, &x)))
      return rc;
    c->fabric_global_Bps = x * 1e9 / 8;
    if ((rc = get_num(j, &at_fab, f, "link_lat_us", 0, 0, 1, &x)))
      return rc;
    c->fabric_link_lat_s = x * 1e-6;
  } else if (k == PLAT_FABRIC_TORUS) {
    c->torus_wrap = 1;
    if ((rc = get_int3(j, &at_fab, f, "dims", c->torus_dims)) ||
        (rc = get_int3(j, &at_fab, f, "cube", c->torus_cube)) ||
        (rc = get_bool(j, &at_fab, f, "wrap", &c->torus_wrap)) ||
        (rc = get_num(j, &at_fab, f, "link_GBps", NAN, 0, 0, &x)))
      return rc;
    c->fabric_link_Bps = x * 1e9;
    if ((rc = get_num(j, &at_fab, f, "lat_us", NAN, 0, 1, &x)))
      return rc;
    c->fabric_link_lat_s = x * 1e-6;
  }
  return ST_OK;
}

/* Torus shape from whole cubes: as close to a cube as possible, shortest dim first. */
static int torus_auto(plat_cluster *c, const char *what, st_err *err)
{
  long cube = (long)c->torus_cube[0] * c->torus_cube[1] * c->torus_cube[2];
  if (c->num_gpus % cube)
    return st_err_set(err, ST_EINPUT,
                      "%s: %d chips do not make whole %dx%dx%d cubes (nodes x gpus must be a "
                      "multiple of %ld)",
                      what, c->num_gpus, c->torus_cube[0], c->torus_cube[1], c->torus_cube[2], cube);
  long n = c->num_gpus / cube, best[3] = {1, 1, n};
  for (long p = 1; p * p * p <= n; p++)
    for (long q = p; p * q * q <= n; q++)
      if (n % (p * q) == 0) {
        long r = n / (p * q);
        if (r >= q && r - p < best[2] - best[0]) {
          best[0] = p;
          best[1] = q;
          best[2] = r;
        }
      }
  for (int k = 0; k < 3; k++)
    c->torus_dims[k] = (int)(best[k] * c->torus_cube[k]);
  return ST_OK;
}

int plat__cluster_finish(plat_cluster *c, const char *what, st_err *err)
{
  if (c->num_groups > 1 && !plat_gpus_per_node_uniform(c)) {
    /* node groups of unlike sizes: their sum (groups.c); each group's node
     * is checked on its own (plat__groups_finish) */
    const plat_group *last = &c->groups[c->num_groups - 1];
    c->num_gpus = last->first_gpu + last->num_nodes * last->gpus_per_node;
    return plat__cluster_fabric(c, what, err);
  }
  if ((long)c->num_nodes * c->gpus_per_node > ST_RANKS_MAX)
    return st_err_set(err, ST_EINPUT, "%s: %d nodes x %d GPUs is more than %d GPUs", what,
                      c->num_nodes, c->gpus_per_node, ST_RANKS_MAX);
  c->num_gpus = c->num_nodes * c->gpus_per_node;
  int gpn = c->gpus_per_node;
  if (c->intra_kind == PLAT_INTRA_CUBEMESH && (gpn != 8 || c->intra_links_per_gpu != 6))
    return st_err_set(err, ST_EINPUT,
                      "%s: a cube-mesh node has 8 GPUs with 6 NVLink links each (node.gpus is %d, "
                      "node.intra.links_per_gpu is %d)",
                      what, gpn, c->intra_links_per_gpu);
  if (c->intra_kind == PLAT_INTRA_FULLMESH && c->intra_links_per_gpu != gpn - 1)
    return st_err_set(err, ST_EINPUT,
                      "%s: in a full mesh of %d GPUs each GPU has %d links (node.intra.links_per_gpu "
                      "is %d)",
                      what, gpn, gpn - 1, c->intra_links_per_gpu);
  if (c->fabric_kind == PLAT_FABRIC_TORUS) {
    if (c->intra_kind != PLAT_INTRA_NONE)
      return st_err_set(err, ST_EINPUT,
                        "%s: a torus carries all chip-to-chip traffic: node.intra.kind must be none",
                        what);
    if (c->nics_per_node)
      return st_err_set(err, ST_EINPUT, "%s: a torus has no NICs: remove node.nics", what);
    if (c->torus_cube[0] && c->torus_dims[0] == 0) {
      int rc = torus_auto(c, what, err);
      if (rc)
        return rc;
    } else if (c->torus_dims[0] == 0) {
      return st_err_set(err, ST_EINPUT, "%s: a torus needs fabric.dims or fabric.cube", what);
    }
    long prod = (long)c->torus_dims[0] * c->torus_dims[1] * c->torus_dims[2];
    if (prod != c->num_gpus)
      return st_err_set(err, ST_EINPUT, "%s: fabric.dims %dx%dx%d make %ld chips, but the cluster has %d",
                        what, c->torus_dims[0], c->torus_dims[1], c->torus_dims[2], prod,
                        c->num_gpus);
    if (c->torus_cube[0])
      for (int k = 0; k < 3; k++)
        if (c->torus_dims[k] % c->torus_cube[k])
          return st_err_set(err, ST_EINPUT, "%s: fabric.dims %dx%dx%d is not made of %dx%dx%d cubes",
                            what, c->torus_dims[0], c->torus_dims[1], c->torus_dims[2],
                            c->torus_cube[0], c->torus_cube[1], c->torus_cube[2]);
    if (c->dcn_nics && (c->dcn_nics > gpn || gpn % c->dcn_nics))
      return st_err_set(err, ST_EINPUT,
                        "%s: node.dcn.count is %d; it must divide node.gpus (%d) so that each "
                        "data-centre NIC serves the same number of chips",
                        what, c->dcn_nics, gpn);
    /* per chip: all 6 ICI links, as its "NIC" (see platform.h / docs) */
    c->nics_per_node = gpn;
    c->nic_Bps = 6 * c->fabric_link_Bps;
    c->nic_lat_s = c->fabric_link_lat_s;
  } else {
    if (c->dcn_nics)
      return st_err_set(err, ST_EINPUT,
                        "%s: node.dcn is a torus host's link to the data-centre network; the "
                        "nodes of a %s fabric reach it through node.nics",
                        what, plat_fabric_kind_name(c->fabric_kind));
    if (c->intra_kind == PLAT_INTRA_NONE && gpn > 1)
      return st_err_set(err, ST_EINPUT,
                        "%s: node.intra.kind none with %d GPUs per node: GPUs of a node need an "
                        "intra-node fabric (or a torus)",
                        what, gpn);
    if (c->nics_per_node == 0 && c->num_nodes > 1)
      return st_err_set(err, ST_EINPUT, "%s: %d nodes but node.nics is missing", what, c->num_nodes);
    if (c->nics_per_node == 0) {
      c->nics_per_node = 1; /* never used: one node */
    }
    if (c->nics_per_node > gpn || gpn % c->nics_per_node)
      return st_err_set(err, ST_EINPUT,
                        "%s: node.nics.count is %d; it must divide node.gpus (%d) so that each NIC "
                        "serves the same number of GPUs",
                        what, c->nics_per_node, gpn);
  }
  return plat__cluster_fabric(c, what, err);
}

/* The fabric's levels (fat-trees), its fit (dragonfly) and the link count. */
int plat__cluster_fabric(plat_cluster *c, const char *what, st_err *err)
{
  if (c->fabric_kind == PLAT_FABRIC_FATTREE || c->fabric_kind == PLAT_FABRIC_RAIL_FATTREE) {
    int R = c->fabric_radix, want = c->fabric_levels;
    int lo = want ? want : 1, hi = want ? want : PLAT__MAX_LEVELS;
    int found = 0;
    for (int h = lo; h <= hi && !found; h++) {
      c->fabric_levels = h;
      c->fabric_radix_used[0] = h == 1 ? R : R / 2;
      long M = 1;
      for (int i = 1; i < h; i++) {
        int m = R / 2;
        /* a rail fat-tree's spine-leaf group holds whole scalable units (all
         * the rails of m_1 nodes), as the DGX SuperPOD's hold four: with
         * 40-port switches 2 units of 8 rails (16 leaves), not 20 leaves
         * that would put rails 0-3 of a unit under one group of spines and
         * rails 4-7 under another (docs/platforms.md, "Fat-tree routing") */
        if (i == 2 && h > 2 && c->fabric_kind == PLAT_FABRIC_RAIL_FATTREE &&
            c->nics_per_node > 1 && m >= c->nics_per_node)
          m -= m % c->nics_per_node;
        c->fabric_radix_used[i - 1] = m;
        M *= m;
      }
      long emax = plat__endpoint_max(c);
      long top = (emax + M - 1) / M;
      if (top <= R) {
        c->fabric_radix_used[h - 1] = (int)(h == 1 ? R : top);
        if (h == 1)
          c->fabric_radix_used[0] = R;
        found = 1;
      }
    }
    if (!found)
      return st_err_set(err, ST_EINPUT,
                        "%s: %d NICs do not fit a %d-level fat-tree of %d-port switches%s", what,
                        c->num_nodes * c->nics_per_node, hi, R,
                        want ? " (raise fabric.levels or fabric.radix)" : "");
  }
  if (c->fabric_kind == PLAT_FABRIC_DRAGONFLY) {
    long E = (long)c->num_nodes * c->nics_per_node;
    long routers = (E + c->dragonfly[1] - 1) / c->dragonfly[1];
    long groups = (routers + c->dragonfly[0] - 1) / c->dragonfly[0];
    if (groups - 1 > (long)c->dragonfly[0] * c->dragonfly[2])
      return st_err_set(err, ST_EINPUT,
                        "%s: %ld dragonfly groups need %ld global links per group, but a group has "
                        "%d routers x %d global links",
                        what, groups, groups - 1, c->dragonfly[0], c->dragonfly[2]);
  }
  plat__lay L;
  plat__layout(c, &L);
  if (L.total > INT_MAX)
    return st_err_set(err, ST_EINPUT, "%s: %ld links is too many", what, L.total);
  c->num_links = (int)L.total;
  return ST_OK;
}

/* A spec without groups: its node count, device and node. */
static int spec_device_node(const st_jrd *j, const char *what, const cJSON *root, plat_cluster *c,
                            st_err *err)
{
  const char *device = NULL;
  int rc = get_int(j, NULL, root, "nodes", 1, 1, &c->default_nodes);
  const cJSON *dv = cJSON_GetObjectItemCaseSensitive(root, "device");
  if (!rc)
    rc = dv ? st_jrd_string(j, NULL, dv, &device) : st_jrd_missing(j, NULL, "device");
  if (!rc && (rc = plat__device_find(device, &c->device, err)))
    st_err_prefix(err, "%s: key 'device': ", what);
  if (!rc) { /* memory a job can use, when it is not the device's (another part, a reserve) */
    double gb;
    rc = get_num(j, NULL, root, "device_memory_GB", 0, 0, 0, &gb);
    if (!rc && gb > 0)
      c->device.hbm_bytes = gb * 1e9;
  }
  if (!rc)
    rc = plat__parse_node(j, NULL, cJSON_GetObjectItemCaseSensitive(root, "node"), c);
  return rc;
}

int plat__spec_parse(const char *what, const char *text, int nodes_override, const char *dir,
                     plat_cluster **out, st_err *err)
{
  cJSON *root = NULL;
  if (st_json_parse(text, strlen(text), what, &root, err))
    return ST_EINPUT;
  if (cJSON_IsObject(root) && cJSON_GetObjectItemCaseSensitive(root, "pods")) {
    /* the node count is the pods': ':NODES' may only repeat it (as a sweep's size does) */
    int rc = plat__pods_parse(what, root, dir, out, err);
    cJSON_Delete(root);
    if (!rc && nodes_override > 0 && nodes_override != (*out)->num_nodes) {
      rc = st_err_set(err, ST_EINPUT,
                      "%s: a cluster of pods has its node count per pod (%d nodes in all); "
                      "':%d' cannot change it",
                      what, (*out)->num_nodes, nodes_override);
      plat_cluster_destroy(*out);
      *out = NULL;
    } else if (!rc && nodes_override > 0) {
      size_t len = strlen((*out)->name);
      snprintf((*out)->name + len, sizeof(*out)->name - len, ":%d", nodes_override);
    }
    return rc;
  }
  st_jrd j = {what, "docs/platforms.md", err};
  static const char *const keys[] = {"name", "description", "nodes",  "device", "device_memory_GB",
                                     "node", "fabric",      "groups", NULL};
  plat_cluster *c = calloc(1, sizeof *c);
  int rc = c ? ST_OK : st_err_set(err, ST_ENOMEM, "out of memory");
  if (!rc)
    rc = st_jrd_members(&j, NULL, root, keys, -1, NULL);
  const char *name = NULL;
  const cJSON *nm = cJSON_GetObjectItemCaseSensitive(root, "name");
  if (!rc)
    rc = nm ? st_jrd_string(&j, NULL, nm, &name) : st_jrd_missing(&j, NULL, "name");
  const cJSON *groups = cJSON_GetObjectItemCaseSensitive(root, "groups");
  if (!rc && groups) {
    rc = plat__groups_parse(&j, root, groups, c);
    if (!rc && nodes_override > 0)
      rc = st_err_set(err, ST_EINPUT, "%s: a spec with groups has its node count per group; "
                      "':%d' cannot change it", what, nodes_override);
  } else if (!rc) {
    rc = spec_device_node(&j, what, root, c, err);
  }
  if (!rc) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "fabric");
    rc = f ? parse_fabric(&j, f, c) : st_jrd_missing(&j, NULL, "fabric");
  }
  if (!rc) {
    c->num_nodes = nodes_override > 0 ? nodes_override : c->default_nodes;
    rc = plat__cluster_finish(c, what, err);
    if (!rc && c->num_groups)
      rc = plat__groups_finish(c, what, err);
  }
  if (!rc) {
    if (nodes_override > 0)
      snprintf(c->name, sizeof c->name, "%s:%d", name, c->num_nodes);
    else
      snprintf(c->name, sizeof c->name, "%s", name);
    if (!c->num_groups) {
      cJSON_DeleteItemFromObjectCaseSensitive(root, "nodes");
      cJSON_AddNumberToObject(root, "nodes", c->num_nodes);
    }
    c->spec_json = cJSON_PrintUnformatted(root);
    if (!c->spec_json)
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
  }
  cJSON_Delete(root);
  if (rc) {
    plat_cluster_destroy(c);
    return rc;
  }
  *out = c;
  return ST_OK;
}

static int parse_nodes(const char *s, int *nodes)
{
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (!isdigit((unsigned char)*s) || *end != '\0' || errno || v <= 0 || v > ST_RANKS_MAX)
    return -1;
  *nodes = (int)v;
  return 0;
}

/* A spec named by neither suffix: standard input ("-") or a file that is no
 * preset's name (a FIFO, /dev/fd/N of a shell's <(...)), JSON or, when its
 * first character is '<', SimGrid XML.  1 when it is XML, 0 when JSON, -1
 * when it is not such a file; the stream is read once (st_file_read_all
 * keeps what a stream gave for the spec's second read). */
static int unsuffixed_kind(const char *path, int known_preset)
{
  struct stat sb;
  if (strcmp(path, "-") && (known_preset || stat(path, &sb) != 0 || S_ISDIR(sb.st_mode)))
    return -1;
  char *text;
  size_t len;
  st_err e = {0};
  if (st_file_read_all(path, &text, &len, &e))
    return 0; /* the JSON reader reports the failure */
  const char *p = text;
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
    p++;
  int xml = *p == '<';
  free(text);
  return xml;
}

int plat_cluster_load(const char *arg, plat_cluster **out, st_err *err)
{
  if (st_str_ends_with(arg, ".xml") || (!strchr(arg, ':') && unsuffixed_kind(arg, 0) == 1))
    return plat__xml_load(arg, out, err);
  /* FILE.json or FILE.json:NODES or NAME or NAME:NODES */
  char buf[4096];
  if (strlen(arg) >= sizeof buf)
    return st_err_set(err, ST_EINPUT, "cluster '%.40s...': name is too long", arg);
  snprintf(buf, sizeof buf, "%s", arg);
  int nodes = 0;
  char *colon = strrchr(buf, ':');
  if (colon && !strchr(colon, '/')) {
    if (parse_nodes(colon + 1, &nodes))
      return st_err_set(err, ST_EINPUT, "cluster '%s': node count '%s' is not a whole number in "
                        "1..%d", arg, colon + 1, ST_RANKS_MAX);
    *colon = '\0';
  }
  char what[4200];
  char *text, *dir = NULL;
  int known = 0;
  for (int i = 0; preset_names[i]; i++)
    known |= !strcmp(preset_names[i], buf);
  if (st_str_ends_with(buf, ".json") || unsuffixed_kind(buf, known) == 0) {
    size_t len;
    int rc = st_file_read_all(buf, &text, &len, err);
    if (rc)
      return rc;
    snprintf(what, sizeof what, "spec '%s'", buf);
    if (!(dir = st_path_dirname(buf))) {
      free(text);
      return st_err_set(err, ST_ENOMEM, "out of memory");
    }
  } else {
    char rel[256];
    snprintf(rel, sizeof rel, "presets/%.200s.json", buf);
    text = known ? plat__data_read(rel, err) : NULL;
    if (!text) {
      if (err && err->code)
        return err->code;
      st_buf b;
      st_buf_init(&b);
      for (int i = 0; preset_names[i]; i++)
        st_buf_printf(&b, "%s%s", i ? ", " : "", preset_names[i]);
      int rc = st_err_set(err, ST_EINPUT,
                          "cluster '%s': no such preset (known: %s; or give a FILE.json or FILE.xml)",
                          arg, b.data);
      st_buf_release(&b);
      return rc;
    }
    snprintf(what, sizeof what, "preset '%s'", buf);
  }
  int rc = plat__spec_parse(what, text, nodes, dir, out, err);
  free(text);
  free(dir);
  return rc;
}

void plat_cluster_destroy(plat_cluster *c)
{
  if (!c)
    return;
  free(c->spec_json);
  free(c->xml_path);
  free(c->xml_load_path);
  if (c->xml_copy)
    fclose(c->xml_copy);
  free(c->groups);
  for (int k = 0; k < c->num_pods; k++)
    plat_cluster_destroy(c->pods[k].c);
  free(c->pods);
  free(c);
}
