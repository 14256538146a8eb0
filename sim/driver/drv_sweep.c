/* drv_sweep.c — a grid of predictions: the spec, its points, the shard plan
 * and running the points (docs/sweep.md).
 *
 * 1. The spec (JSON) names models, layouts (a list for every model, or one
 *    per model; "search" runs a layout search), clusters, and optionally
 *    node counts, global batches, sequence lengths, dtypes, a token budget,
 *    a price and a PUE.  Files it names (model specs, cluster specs) are
 *    found beside the spec.
 * 2. The points are the product models x layouts x clusters x nodes x gbs x
 *    seq x dtypes, numbered in that order (the last fastest); a point's
 *    layout is the spec's with gbs= and dtype= added from the axes.
 * 3. The digest (FNV-1a 64 over the expanded spec and the bytes of every
 *    file it names) tells shards of one sweep from those of another.  It is
 *    an identity, not a security measure.
 * 4. The shard plan: every point's simulation cost is estimated without
 *    simulating (its workload generated: the op executions of the ranks the
 *    engine will simulate, one per TP group, plus a cost per GPU for the
 *    platform), and the points go, costliest first, to the shard with the
 *    least cost so far (ties: the lower point, the lower shard) — the
 *    longest-processing-time rule, deterministic, so every shard computes
 *    the same plan on its own.
 * 5. Each point runs in its own process (drv_sweep_run.c). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "driver.h"

/* ---- the spec ------------------------------------------------------------------ */

void drv_sweep_release(drv_sweep_spec *s)
{
  for (int i = 0; i < s->num_models; i++) {
    free(s->models[i].name);
    free(s->models[i].path);
    for (int k = 0; k < s->models[i].num_layouts; k++)
      free(s->models[i].layouts[k]);
    free(s->models[i].layouts);
  }
  free(s->models);
  for (int i = 0; i < s->num_clusters; i++) {
    free(s->clusters[i].name);
    free(s->clusters[i].path);
  }
  free(s->clusters);
  free(s->nodes);
  free(s->gbs);
  free(s->seq);
  for (int i = 0; i < s->num_dtypes; i++)
    free(s->dtypes[i]);
  free(s->dtypes);
  free(s->name);
  free(s->path);
  free(s->search_fixed);
  free(s->spec_json);
  memset(s, 0, sizeof *s);
}

/* A name that is a file (ends in .json, .json.gz or .xml) is found beside
 * the spec unless absolute; anything else is a built-in name. */
static char *locate(const char *dir, const char *name)
{
  size_t n = strlen(name);
  int file = (n > 5 && !strcmp(name + n - 5, ".json")) || (n > 8 && !strcmp(name + n - 8, ".json.gz")) ||
             (n > 4 && !strcmp(name + n - 4, ".xml"));
  if (!file || name[0] == '/' || !dir || !strcmp(dir, "."))
    return st_strdup(name);
  st_buf b;
  st_buf_init(&b);
  st_buf_printf(&b, "%s/%s", dir, name);
  return st_buf_detach(&b, NULL);
}

static int string_list(const st_jrd *r, const st_jpath *at, const cJSON *v, char ***out, int *n)
{
  st_jpath here = {at, v ? v->string : NULL, 0};
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0)
    return st_jrd_fail(r, &here, "is %s, expected a non-empty array of strings",
                       cJSON_IsArray(v) ? "empty" : st_json_type_name(v));
  int cnt = cJSON_GetArraySize(v);
  char **list = calloc((size_t)cnt, sizeof *list);
  if (!list)
    return st_jrd_oom(r);
  int i = 0;
  for (const cJSON *e = v->child; e; e = e->next, i++) {
    st_jpath el = {&here, NULL, i};
    const char *s;
    int rc = st_jrd_string(r, &el, e, &s);
    if (!rc && !s[0])
      rc = st_jrd_fail(r, &el, "is empty");
    for (int k = 0; !rc && k < i; k++)
      if (!strcmp(list[k], s))
        rc = st_jrd_fail(r, &el, "'%s' is listed twice", s);
    if (!rc && !(list[i] = st_strdup(s)))
      rc = st_jrd_oom(r);
    if (rc) {
      for (int k = 0; k < i; k++)
        free(list[k]);
      free(list);
      return rc;
    }
  }
  *out = list;
  *n = cnt;
  return ST_OK;
}

static int int_list(const st_jrd *r, const st_jpath *at, const cJSON *v, const char *noun, long lo,
                    long hi, int **out, int *n)
{
  st_jpath here = {at, v->string, 0};
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0)
    return st_jrd_fail(r, &here, "is %s, expected a non-empty array of integers",
                       cJSON_IsArray(v) ? "empty" : st_json_type_name(v));
  int cnt = cJSON_GetArraySize(v), i = 0;
  int *list = calloc((size_t)cnt, sizeof *list);
  if (!list)
    return st_jrd_oom(r);
  for (const cJSON *e = v->child; e; e = e->next, i++) {
    st_jpath el = {&here, NULL, i};
    long x;
    int rc = st_jrd_elem_int(r, &el, e, noun, lo, hi, &x);
    for (int k = 0; !rc && k < i; k++)
      if (list[k] == x)
        rc = st_jrd_fail(r, &el, "%s %ld is listed twice", noun, x);
    if (rc) {
      free(list);
      return rc;
    }
    list[i] = (int)x;
  }
  *out = list;
  *n = cnt;
  return ST_OK;
}

/* Does layout spec l set key k ("gbs=" at the start or after a comma)? */
static int sets_key(const char *l, const char *k)
{
  size_t n = strlen(k);
  for (const char *p = l; p; p = strchr(p, ',')) {
    if (*p == ',')
      p++;
    while (*p == ' ')
      p++;
    if (!strncmp(p, k, n) && (p[n] == '=' || p[n] == ' '))
      return 1;
  }
  return 0;
}

static int check_layouts(const st_jrd *r, const st_jpath *at, const drv_sweep_spec *s,
                         char **layouts, int n)
{
  for (int i = 0; i < n; i++) {
    st_jpath el = {at, NULL, i};
    const char *l = layouts[i];
    if (!strcmp(l, "search")) {
      if (!s->num_gbs)
        return st_jrd_fail(r, &el, "'search' needs the global batch: give 'gbs'");
      continue;
    }
    if (s->num_gbs && sets_key(l, "gbs"))
      return st_jrd_fail(r, &el, "'%s' sets gbs while the key 'gbs' gives the batches", l);
    if (s->num_dtypes && sets_key(l, "dtype"))
      return st_jrd_fail(r, &el, "'%s' sets dtype while the key 'dtypes' gives them", l);
  }
  return ST_OK;
}

static int read_models(const st_jrd *r, const cJSON *models, const cJSON *layouts,
                       drv_sweep_spec *s, const char *dir)
{
  char **names;
  int n, rc = string_list(r, NULL, models, &names, &n);
  if (rc)
    return rc;
  s->models = calloc((size_t)n, sizeof *s->models);
  if (!s->models) {
    for (int i = 0; i < n; i++)
      free(names[i]);
    free(names);
    return st_jrd_oom(r);
  }
  s->num_models = n;
  for (int i = 0; i < n; i++) {
    s->models[i].name = names[i];
    s->models[i].path = locate(dir, names[i]);
    if (!s->models[i].path)
      rc = st_jrd_oom(r);
  }
  free(names);
  if (rc)
    return rc;
  st_jpath lat = {NULL, "layouts", 0};
  if (cJSON_IsArray(layouts)) {
    for (int i = 0; i < n && !rc; i++) {
      rc = string_list(r, NULL, layouts, &s->models[i].layouts, &s->models[i].num_layouts);
      if (!rc)
        rc = check_layouts(r, &lat, s, s->models[i].layouts, s->models[i].num_layouts);
    }
    return rc;
  }
  if (!cJSON_IsObject(layouts))
    return st_jrd_fail(r, &lat, "is %s, expected an array of layouts or an object of them by "
                       "model", st_json_type_name(layouts));
  for (const cJSON *e = layouts->child; e; e = e->next) {
    int m = -1;
    for (int i = 0; i < n; i++)
      if (!strcmp(s->models[i].name, e->string))
        m = i;
    if (m < 0)
      return st_jrd_fail(r, &lat, "key '%s' is not one of 'models'", e->string);
    if (s->models[m].layouts)
      return st_jrd_fail(r, &lat, "key '%s' appears twice", e->string);
    st_jpath mat = {&lat, e->string, 0};
    if ((rc = string_list(r, &lat, e, &s->models[m].layouts, &s->models[m].num_layouts)) ||
        (rc = check_layouts(r, &mat, s, s->models[m].layouts, s->models[m].num_layouts)))
      return rc;
  }
  for (int i = 0; i < n; i++)
    if (!s->models[i].layouts)
      return st_jrd_fail(r, &lat, "model '%s' has no layouts", s->models[i].name);
  return ST_OK;
}

/* The spec as JSON, expanded (every list written out), for the file and the digest. */
static char *canonical(const drv_sweep_spec *s)
{
  st_buf b;
  st_buf_init(&b);
  char num[40];
  st_buf_printf(&b, "{\"name\":");
  st_buf_json_str(&b, s->name);
  st_buf_printf(&b, ",\"models\":[");
  for (int i = 0; i < s->num_models; i++) {
    st_buf_printf(&b, "%s{\"model\":", i ? "," : "");
    st_buf_json_str(&b, s->models[i].name);
    st_buf_printf(&b, ",\"layouts\":[");
    for (int k = 0; k < s->models[i].num_layouts; k++) {
      st_buf_printf(&b, "%s", k ? "," : "");
      st_buf_json_str(&b, s->models[i].layouts[k]);
    }
    st_buf_printf(&b, "]}");
  }
  st_buf_printf(&b, "],\"clusters\":[");
  for (int i = 0; i < s->num_clusters; i++) {
    st_buf_printf(&b, "%s", i ? "," : "");
    st_buf_json_str(&b, s->clusters[i].name);
  }
  const struct {
    const char *key;
    const int *v;
    int n;
  } ints[] = {{s->by_gpus ? "gpus" : "nodes", s->nodes, s->num_nodes}, {"gbs", s->gbs, s->num_gbs},
              {"seq", s->seq, s->num_seq}};
  st_buf_printf(&b, "]");
  for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
    st_buf_printf(&b, ",\"%s\":[", ints[k].key);
    for (int i = 0; i < ints[k].n; i++)
      st_buf_printf(&b, "%s%d", i ? "," : "", ints[k].v[i]);
    st_buf_printf(&b, "]");
  }
  st_buf_printf(&b, ",\"dtypes\":[");
  for (int i = 0; i < s->num_dtypes; i++) {
    st_buf_printf(&b, "%s", i ? "," : "");
    st_buf_json_str(&b, s->dtypes[i]);
  }
  st_buf_printf(&b, "],\"tokens\":%s", st_json_num(s->train_tokens ? s->train_tokens : NAN, num,
                                                    sizeof num));
  st_buf_printf(&b, ",\"price_usd_per_gpu_hour\":%s",
                st_json_num(s->price_usd_per_gpu_hour, num, sizeof num));
  st_buf_printf(&b, ",\"pue\":%s,\"search\":{\"top\":%d,\"fixed\":",
                st_json_num(s->pue, num, sizeof num), s->search_top);
  st_buf_json_str(&b, s->search_fixed ? s->search_fixed : "");
  st_buf_printf(&b, "}}");
  return st_buf_detach(&b, NULL);
}

void drv_fnv(uint64_t *h, const void *p, size_t n)
{
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) {
    *h ^= c[i];
    *h *= 0x100000001b3ull;
  }
}

int drv_fnv_file(uint64_t *h, const char *path, st_err *err)
{
  char buf[1100];
  snprintf(buf, sizeof buf, "%s", path);
  if (!st_path_is_file(buf)) { /* FILE.json:NODES */
    char *colon = strrchr(buf, ':');
    if (!colon)
      return ST_OK;
    *colon = '\0';
    if (!st_path_is_file(buf))
      return ST_OK;
  }
  char *data;
  size_t len;
  int rc = st_file_read_all(buf, &data, &len, err);
  if (rc)
    return rc;
  drv_fnv(h, data, len);
  free(data);
  return ST_OK;
}

/* FNV-1a 64 over the expanded spec and every file it names (a built-in
 * name contributes its name only). */
static int digest(drv_sweep_spec *s, st_err *err)
{
  uint64_t h = DRV_FNV_SEED;
  drv_fnv(&h, s->spec_json, strlen(s->spec_json) + 1);
  for (int k = 0; k < s->num_models + s->num_clusters; k++) {
    const char *path = k < s->num_models ? s->models[k].path : s->clusters[k - s->num_models].path;
    int rc = drv_fnv_file(&h, path, err);
    if (rc)
      return rc;
  }
  snprintf(s->digest, sizeof s->digest, "%016llx", (unsigned long long)h);
  return ST_OK;
}

static const char *const spec_keys[] = {"name",  "models", "layouts", "clusters", "nodes",
                                        "gpus",  "gbs",    "seq",     "dtypes",   "tokens",
                                        "price_usd_per_gpu_hour", "pue", "search"};
enum { K_NAME, K_MODELS, K_LAYOUTS, K_CLUSTERS, K_NODES, K_GPUS, K_GBS, K_SEQ, K_DTYPES,
       K_TOKENS, K_PRICE, K_PUE, K_SEARCH, K_COUNT };

static int read_spec(const st_jrd *r, const cJSON *root, drv_sweep_spec *s, const char *dir)
{
  const cJSON *v[K_COUNT];
  int rc = st_jrd_members(r, NULL, root, spec_keys, K_COUNT, v);
  if (rc)
    return rc;
  const char *req[] = {"models", "layouts", "clusters"};
  const cJSON *reqv[] = {v[K_MODELS], v[K_LAYOUTS], v[K_CLUSTERS]};
  for (int i = 0; i < 3; i++)
    if (!reqv[i])
      return st_jrd_missing(r, NULL, req[i]);
  if (v[K_NAME]) {
    const char *name;
    if ((rc = st_jrd_string(r, NULL, v[K_NAME], &name)))
      return rc;
    free(s->name);
    if (!(s->name = st_strdup(name)))
      return st_jrd_oom(r);
  }
  if (v[K_NODES] && v[K_GPUS])
    return st_jrd_fail(r, NULL, "give 'nodes' or 'gpus', not both");
  s->by_gpus = v[K_GPUS] != NULL;
  if ((v[K_NODES] && (rc = int_list(r, NULL, v[K_NODES], "node count", 1, 1L << 20, &s->nodes,
                                    &s->num_nodes))) ||
      (v[K_GPUS] && (rc = int_list(r, NULL, v[K_GPUS], "GPU count", 1, 1L << 24, &s->nodes,
                                   &s->num_nodes))) ||
      (v[K_GBS] && (rc = int_list(r, NULL, v[K_GBS], "batch", 1, 1L << 30, &s->gbs,
                                  &s->num_gbs))) ||
      (v[K_SEQ] && (rc = int_list(r, NULL, v[K_SEQ], "sequence length", 1, 1L << 30, &s->seq,
                                  &s->num_seq))))
    return rc;
  if (v[K_DTYPES]) {
    if ((rc = string_list(r, NULL, v[K_DTYPES], &s->dtypes, &s->num_dtypes)))
      return rc;
    st_jpath at = {NULL, "dtypes", 0};
    for (int i = 0; i < s->num_dtypes; i++) {
      int d = wl_dtype_from_name(s->dtypes[i]);
      if (d != WL_DTYPE_BF16 && d != WL_DTYPE_FP16 && d != WL_DTYPE_FP8) {
        st_jpath el = {&at, NULL, i};
        return st_jrd_fail(r, &el, "'%s' is unknown (known: bf16, fp16, fp8)", s->dtypes[i]);
      }
    }
  }
  if (v[K_TOKENS] && (rc = st_jrd_number(r, NULL, v[K_TOKENS], ST_NUM_REAL | ST_NUM_OPEN_LO, 0, 1e18,
                                         &s->train_tokens)))
    return rc;
  if (v[K_PRICE] && (rc = st_jrd_number(r, NULL, v[K_PRICE], ST_NUM_REAL, 0, 1e6,
                                        &s->price_usd_per_gpu_hour)))
    return rc;
  if (v[K_PUE] && (rc = st_jrd_number(r, NULL, v[K_PUE], ST_NUM_REAL, 1, 10, &s->pue)))
    return rc;
  if (v[K_SEARCH]) {
    static const char *const skeys[] = {"top", "fixed"};
    const cJSON *sv[2];
    st_jpath at = {NULL, "search", 0};
    long top = s->search_top;
    const char *fixed = NULL;
    if ((rc = st_jrd_members(r, &at, v[K_SEARCH], skeys, 2, sv)) ||
        (sv[0] && (rc = st_jrd_int(r, &at, sv[0], 1, 1024, &top))) ||
        (sv[1] && (rc = st_jrd_string(r, &at, sv[1], &fixed))))
      return rc;
    s->search_top = (int)top;
    if (fixed && fixed[0] && !(s->search_fixed = st_strdup(fixed)))
      return st_jrd_oom(r);
  }
  char **names;
  int n;
  if ((rc = string_list(r, NULL, v[K_CLUSTERS], &names, &n)))
    return rc;
  s->clusters = calloc((size_t)n, sizeof *s->clusters);
  if (!s->clusters) {
    for (int i = 0; i < n; i++)
      free(names[i]);
    free(names);
    return st_jrd_oom(r);
  }
  s->num_clusters = n;
  for (int i = 0; i < n; i++) {
    s->clusters[i].name = names[i];
    if (!(s->clusters[i].path = locate(dir, names[i])))
      rc = st_jrd_oom(r);
    if (!rc && s->num_nodes && strchr(names[i], ':')) {
      st_jpath at = {NULL, "clusters", 0}, el = {&at, NULL, i};
      rc = st_jrd_fail(r, &el, "'%s' gives its node count while the key '%s' gives them",
                       names[i], s->by_gpus ? "gpus" : "nodes");
    }
  }
  free(names);
  if (rc)
    return rc;
  return read_models(r, v[K_MODELS], v[K_LAYOUTS], s, dir);
}

/* Every model and cluster loads (a misspelt name fails here, not at every
 * point); node counts are checked per point. */
static int check_names(const st_jrd *r, drv_sweep_spec *s)
{
  for (int i = 0; i < s->num_models; i++) {
    wl_model m;
    st_err e;
    st_err_clear(&e);
    if (drv_model_load(s->models[i].path, NULL, 0, &m, &e)) {
      st_jpath at = {NULL, "models", 0}, el = {&at, NULL, i};
      return e.code == ST_ENOMEM ? st_jrd_oom(r) : st_jrd_fail(r, &el, "%s", e.msg);
    }
    wl_model_release(&m);
  }
  for (int i = 0; i < s->num_clusters; i++) {
    plat_cluster *cl = NULL;
    st_err e;
    st_err_clear(&e);
    st_jpath at = {NULL, "clusters", 0}, el = {&at, NULL, i};
    if (plat_cluster_load(s->clusters[i].path, &cl, &e))
      return e.code == ST_ENOMEM ? st_jrd_oom(r) : st_jrd_fail(r, &el, "%s", e.msg);
    s->clusters[i].gpus_per_node = cl->gpus_per_node;
    plat_cluster_destroy(cl);
    for (int k = 0; s->by_gpus && k < s->num_nodes; k++)
      if (s->nodes[k] % s->clusters[i].gpus_per_node)
        return st_jrd_fail(r, &el, "'%s' has %d GPUs a node: %d GPUs (gpus[%d]) are not whole "
                           "nodes", s->clusters[i].name, s->clusters[i].gpus_per_node,
                           s->nodes[k], k);
  }
  return ST_OK;
}

int drv_sweep_load(const char *path, drv_sweep_spec *s, st_err *err)
{
  memset(s, 0, sizeof *s);
  s->price_usd_per_gpu_hour = NAN;
  s->pue = 1;
  s->search_top = 4;
  char *text = NULL, *dir = NULL;
  size_t len;
  cJSON *root = NULL;
  char subject[1100];
  snprintf(subject, sizeof subject, "sweep '%s'", path);
  st_jrd r = {subject, "see docs/sweep.md", err};
  int rc = st_file_read_all(path, &text, &len, err);
  if (!rc)
    rc = st_json_parse(text, len, subject, &root, err);
  if (!rc && (!(s->path = st_strdup(path)) || !(dir = st_path_dirname(path))))
    rc = st_jrd_oom(&r);
  if (!rc) {
    const char *base = st_path_basename(path);
    size_t n = strlen(base);
    if (!(s->name = st_strdup(base)))
      rc = st_jrd_oom(&r);
    else if (n > 5 && !strcmp(base + n - 5, ".json"))
      s->name[n - 5] = '\0';
  }
  if (!rc)
    rc = read_spec(&r, root, s, dir);
  if (!rc) {
    long nl = 0;
    for (int i = 0; i < s->num_models; i++)
      nl += s->models[i].num_layouts;
    long pts = nl * s->num_clusters * (s->num_nodes ? s->num_nodes : 1) *
               (s->num_gbs ? s->num_gbs : 1) * (s->num_seq ? s->num_seq : 1) *
               (s->num_dtypes ? s->num_dtypes : 1);
    if (pts > DRV_SWEEP_MAX_POINTS)
      rc = st_err_set(err, ST_EINPUT, "%s: %ld points, more than the %d a sweep may have",
                      subject, pts, DRV_SWEEP_MAX_POINTS);
    else
      s->num_points = (int)pts;
  }
  if (!rc)
    rc = check_names(&r, s);
  if (!rc && !(s->spec_json = canonical(s)))
    rc = st_jrd_oom(&r);
  if (!rc)
    rc = digest(s, err);
  cJSON_Delete(root);
  free(text);
  free(dir);
  if (rc)
    drv_sweep_release(s);
  return rc;
}

/* ---- the points ---------------------------------------------------------------- */

int drv_sweep_point(const drv_sweep_spec *s, int index, drv_sweep_point_t *p)
{
  if (index < 0 || index >= s->num_points)
    return ST_EUSAGE;
  memset(p, 0, sizeof *p);
  int rest = index;
  int nd = s->num_dtypes ? s->num_dtypes : 1, nq = s->num_seq ? s->num_seq : 1,
      nb = s->num_gbs ? s->num_gbs : 1, nn = s->num_nodes ? s->num_nodes : 1;
  int d = rest % nd;
  rest /= nd;
  int q = rest % nq;
  rest /= nq;
  int b = rest % nb;
  rest /= nb;
  int n = rest % nn;
  rest /= nn;
  int c = rest % s->num_clusters;
  rest /= s->num_clusters;
  /* rest counts (model, layout) pairs, models in order */
  int m = 0;
  while (rest >= s->models[m].num_layouts)
    rest -= s->models[m++].num_layouts;
  p->index = index;
  p->model = m;
  p->cluster = c;
  p->request = s->models[m].layouts[rest];
  p->nodes = !s->num_nodes ? 0 : s->by_gpus ? s->nodes[n] / s->clusters[c].gpus_per_node
                                            : s->nodes[n];
  p->gbs = s->num_gbs ? s->gbs[b] : 0;
  p->seq = s->num_seq ? s->seq[q] : 0;
  p->dtype = s->num_dtypes ? s->dtypes[d] : NULL;
  p->search = !strcmp(p->request, "search");
  snprintf(p->cluster_arg, sizeof p->cluster_arg, p->nodes ? "%s:%d" : "%s",
           s->clusters[c].path, p->nodes);
  if (!p->search) {
    size_t len = (size_t)snprintf(p->layout, sizeof p->layout, "%s", p->request);
    if (p->gbs && len < sizeof p->layout)
      len += (size_t)snprintf(p->layout + len, sizeof p->layout - len, ",gbs=%d", p->gbs);
    if (p->dtype && len < sizeof p->layout)
      snprintf(p->layout + len, sizeof p->layout - len, ",dtype=%s", p->dtype);
  }
  return ST_OK;
}

/* ---- the cost of a point, without simulating ---------------------------------- */

/* Seconds on one core of the reference machine (docs/sweep.md): per op
 * executed by a simulated rank, with rank classes (the TP groups' collectives
 * in closed form, a step of the engine per op) and without (every rank's
 * flows through the network model: measured 5 us an op for an MoE on a
 * fat-tree, 11 to 22 us for a dense model on a torus); per GPU of the
 * platform; per process. */
#define COST_PER_OP_CLASSES_S 4.0e-7
#define COST_PER_OP_FLOWS_S 1.0e-5
#define COST_PER_GPU_S 3.4e-4
#define COST_PER_POINT_S 0.5

/* The engine simulates one rank per position in the TP groups where those
 * groups sit on disjoint, alike links and nothing else needs every rank
 * (rank classes: TP inside a node's own NVLink domain, no expert
 * all-to-all); on a torus, on nodes without an NVLink domain, with expert
 * parallelism or without TP, every rank is simulated with its flows. */
static double workload_cost(const wl_workload *wl, const wl_layout *l, const plat_cluster *cl)
{
  double execs = 0;
  for (int r = 0; r < wl->num_ranks; r++)
    execs += (double)wl->programs[wl->rank_program[r]].num_ops;
  int classes = l->tp > 1 && l->ep <= 1 && cl->fabric_kind != PLAT_FABRIC_TORUS &&
                cl->intra_kind != PLAT_INTRA_NONE;
  double ops = classes ? COST_PER_OP_CLASSES_S * execs / l->tp : COST_PER_OP_FLOWS_S * execs;
  return COST_PER_POINT_S + ops + COST_PER_GPU_S * cl->num_gpus;
}

/* The cost of running layout spec on the cluster for model m; a layout the
 * generator refuses costs what a process costs (it fails at once). */
double drv_layout_cost(const wl_model *m, const char *spec, const plat_cluster *cl)
{
  int num_gpus = cl->num_gpus;
  wl_layout l;
  wl_workload *wl = NULL;
  st_err e;
  st_err_clear(&e);
  double c = COST_PER_POINT_S;
  if (!wl_layout_parse(spec, num_gpus, m, &l, &e) && !wl_generate(m, &l, &wl, &e))
    c = workload_cost(wl, &l, cl);
  if (wl)
    wl_workload_destroy(wl);
  return c;
}

double drv_sweep_cost(const drv_sweep_spec *s, const drv_sweep_point_t *p, int *num_gpus)
{
  wl_model m;
  plat_cluster *cl = NULL;
  st_err e;
  st_err_clear(&e);
  double c = COST_PER_POINT_S;
  if (num_gpus)
    *num_gpus = 0;
  if (plat_cluster_load(p->cluster_arg, &cl, &e))
    return c;
  if (num_gpus)
    *num_gpus = cl->num_gpus;
  if (!drv_model_load(s->models[p->model].path, NULL, p->seq, &m, &e)) {
    if (!p->search) {
      c = drv_layout_cost(&m, p->layout, cl);
    } else {
      /* a search: its simulations, each priced as the node-wide TP layout */
      char spec[128];
      snprintf(spec, sizeof spec, "tp=%d,gbs=%d", cl->gpus_per_node, p->gbs);
      c = COST_PER_POINT_S + s->search_top * drv_layout_cost(&m, spec, cl);
    }
    wl_model_release(&m);
  }
  plat_cluster_destroy(cl);
  return c;
}

/* qsort has no context argument: the costs being sorted by. */
static const double *plan_cost;

/* By cost, descending; ties by point (a total order: the plan is the same everywhere). */
static int by_cost(const void *a, const void *b)
{
  int x = *(const int *)a, y = *(const int *)b;
  if (plan_cost[x] != plan_cost[y])
    return plan_cost[x] > plan_cost[y] ? -1 : 1;
  return (x > y) - (x < y);
}

void drv_sweep_assign(const double *cost, int n, int shards, int *ord, int *shard_of,
                      double *load)
{
  for (int i = 0; i < n; i++)
    ord[i] = i;
  plan_cost = cost;
  qsort(ord, (size_t)n, sizeof *ord, by_cost);
  for (int k = 0; k < shards; k++)
    load[k] = 0;
  for (int i = 0; i < n; i++) {
    int best = 0;
    for (int k = 1; k < shards; k++)
      if (load[k] < load[best])
        best = k;
    shard_of[ord[i]] = best + 1;
    load[best] += cost[ord[i]];
  }
}

int drv_sweep_plan(const drv_sweep_spec *s, int shards, double *cost, int *shard_of,
                   double *load, int *gpus)
{
  int n = s->num_points;
  int *ord = malloc(((size_t)n + 1) * sizeof *ord);
  if (!ord)
    return ST_ENOMEM;
  for (int i = 0; i < n; i++) {
    drv_sweep_point_t p;
    drv_sweep_point(s, i, &p);
    cost[i] = drv_sweep_cost(s, &p, gpus ? &gpus[i] : NULL);
  }
  drv_sweep_assign(cost, n, shards, ord, shard_of, load);
  free(ord);
  return ST_OK;
}
