/* tr_kineto_read.c — the Kineto importer's reading side: one rank's Chrome-
 * trace JSON into its step's GPU ops and launches (tr__kt_read_file), its process
 * groups, and the host execution traces (ET) joined to it by pid.
 * What is kept and why: tr_kineto.c; the building of programs and
 * communicators from what is read here is there too.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tr_int.h"

/* ---- small JSON helpers -------------------------------------------------- */

int tr__kt_ev_number(const cJSON *ev, const char *key, double *v)
{
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(ev, key);
  if (!x)
    return -1;
  if (cJSON_IsNumber(x)) {
    *v = x->valuedouble;
    return 0;
  }
  if (cJSON_IsString(x)) {
    char *end;
    double d = strtod(x->valuestring, &end);
    if (end != x->valuestring && *end == '\0') {
      *v = d;
      return 0;
    }
  }
  return -2;
}

static int field_err(kt_ctx *c, const kt_file *f, long i, const char *key, int why)
{
  return st_err_set(c->err, ST_EINPUT, "trace '%s': event %ld: '%s' is %s", f->path, i, key,
                    why == -1 ? "missing" : "not a number");
}

const char *tr__kt_str_item(const cJSON *o, const char *key)
{
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(x) ? x->valuestring : NULL;
}

/* The leading digits of s as an int, or -1 when there are none or the number
 * does not fit (atoi's overflow is undefined). */
static int digits_int(const char *s)
{
  if (!isdigit((unsigned char)*s))
    return -1;
  errno = 0;
  long v = strtol(s, NULL, 10);
  return errno || v > INT32_MAX ? -1 : (int)v;
}

/* A stream id: a whole number an int holds, or a string holding one
 * ("stream 7", "7"). */
static int tid_of(const cJSON *ev, int *tid)
{
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(ev, "tid");
  if (cJSON_IsNumber(x)) {
    long v;
    if (st_num_to_long(x->valuedouble, INT32_MIN, INT32_MAX, &v, NULL, "tid"))
      return -2;
    *tid = (int)v;
    return 0;
  }
  if (cJSON_IsString(x)) {
    const char *s = x->valuestring;
    while (*s && !isdigit((unsigned char)*s))
      s++;
    int v = digits_int(s);
    if (v < 0)
      return -2;
    *tid = v;
    return 0;
  }
  return x ? -2 : -1;
}

/* ---- names ----------------------------------------------------------------- */

/* Collective op from a name used by PyTorch/ET/args ("allreduce",
 * "all_to_allv", "_allgather_base", ...).  Returns wl_coll_op, -2 for
 * point-to-point, -3 for "wait", -1 if unknown. */
int tr__kt_coll_from_torch_name(const char *s)
{
  char b[64];
  size_t n = 0;
  for (; *s && n + 1 < sizeof b; s++)
    if (*s != '_' && *s != '-' && *s != ' ')
      b[n++] = (char)tolower((unsigned char)*s);
  b[n] = '\0';
  if (strstr(b, "alltoall"))
    return WL_COLL_ALLTOALL;
  if (strstr(b, "allgather"))
    return WL_COLL_ALLGATHER;
  if (strstr(b, "reducescatter"))
    return WL_COLL_REDUCESCATTER;
  if (strstr(b, "allreduce"))
    return WL_COLL_ALLREDUCE;
  if (strstr(b, "broadcast"))
    return WL_COLL_BROADCAST;
  if (strstr(b, "barrier"))
    return WL_COLL_BARRIER;
  if (strstr(b, "reduce"))
    return WL_COLL_REDUCE;
  if (strstr(b, "send") || strstr(b, "recv"))
    return -2;
  if (!strcmp(b, "wait"))
    return -3;
  return -1;
}

/* NCCL kernel name -> 1 + wl_coll_op, -1 for SendRecv, 0 if not NCCL. */
static int nccl_kernel_op(const char *name)
{
  const char *p = NULL;
  if (!strncmp(name, "ncclKernel_", 11))
    p = name + 11;
  else if (!strncmp(name, "ncclDevKernel_", 14))
    p = name + 14;
  if (!p)
    return 0;
  static const struct {
    const char *pre;
    int op;
  } t[] = {{"AllReduce", WL_COLL_ALLREDUCE},         {"AllGather", WL_COLL_ALLGATHER},
           {"ReduceScatter", WL_COLL_REDUCESCATTER}, {"Broadcast", WL_COLL_BROADCAST},
           {"Reduce", WL_COLL_REDUCE},               {"AllToAll", WL_COLL_ALLTOALL}};
  if (!strncmp(p, "SendRecv", 8) || !strncmp(p, "SendOrRecv", 10) || !strncmp(p, "Send", 4) ||
      !strncmp(p, "Recv", 4))
    return -1;
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strncmp(p, t[i].pre, strlen(t[i].pre)))
      return t[i].op + 1;
  return 0;
}

/* ---- reading one file -------------------------------------------------------- */

static int cmp_gpu(const void *a, const void *b)
{
  const kt_gpu *x = a, *y = b;
  if (x->ts != y->ts)
    return x->ts < y->ts ? -1 : 1;
  if (x->tid != y->tid)
    return x->tid < y->tid ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static int cmp_rt_corr(const void *a, const void *b)
{
  const kt_rt *x = a, *y = b;
  return x->corr < y->corr ? -1 : x->corr > y->corr;
}

const kt_rt *tr__kt_find_launch(const kt_file *f, long corr)
{
  if (corr < 0)
    return NULL;
  kt_rt key = {0, 0, corr, 0};
  return bsearch(&key, f->rt, f->nrt, sizeof *f->rt, cmp_rt_corr);
}

/* Rank number from a file name: digits after "rank" or "worker", else the
 * first number in the name.  -1 if none. */
static int rank_from_name(const char *path)
{
  const char *b = st_path_basename(path);
  const char *keys[] = {"rank", "worker"};
  for (int k = 0; k < 2; k++) {
    const char *p = strstr(b, keys[k]);
    if (p) {
      p += strlen(keys[k]);
      while (*p == '_' || *p == '-')
        p++;
      if (isdigit((unsigned char)*p))
        return digits_int(p);
    }
  }
  for (const char *p = b; *p; p++)
    if (isdigit((unsigned char)*p))
      return digits_int(p);
  return -1;
}

/* A list of whole numbers in [0, hi]: a JSON array, or a string as PyTorch
 * writes one ("[0, 1, 2]"; spaces alone also separate).  *out holds *n
 * values (caller frees).  Errors name `what` (file, place and key) and the
 * entry; nothing is skipped and no sign is dropped. */
int tr__kt_parse_int_list(const cJSON *x, double hi, const char *what, double **out, int *n,
                          st_err *err)
{
  double *v = NULL;
  int k = 0, cap = 0;
  if (!cJSON_IsArray(x) && !cJSON_IsString(x))
    return st_err_set(err, ST_EINPUT, "%s is not a list", what);
  const cJSON *e = cJSON_IsArray(x) ? x->child : NULL;
  const char *s = cJSON_IsString(x) ? x->valuestring : NULL;
  if (s) {
    while (isspace((unsigned char)*s))
      s++;
    if (*s == '[')
      s++;
  }
  for (;;) {
    double d;
    if (!s) {
      if (!e)
        break;
      if (!cJSON_IsNumber(e)) {
        free(v);
        return st_err_set(err, ST_EINPUT, "%s entry %d is not a number", what, k);
      }
      d = e->valuedouble;
      e = e->next;
    } else {
      while (isspace((unsigned char)*s) || *s == ',')
        s++;
      if (*s == ']') {
        const char *t = s + 1;
        while (isspace((unsigned char)*t))
          t++;
        if (*t) {
          free(v);
          return st_err_set(err, ST_EINPUT, "%s is not a list of integers at '%s'", what, s);
        }
        break;
      }
      if (!*s)
        break;
      size_t len = strspn(s, "0123456789+-.eE");
      char *end = NULL;
      d = len ? strtod(s, &end) : 0;
      if (!len || end != s + len ||
          !(*end == '\0' || *end == ',' || *end == ']' || isspace((unsigned char)*end))) {
        free(v);
        return st_err_set(err, ST_EINPUT, "%s is not a list of integers at '%s'", what, s);
      }
      s = end;
    }
    if (st_num_check(d, ST_NUM_INTEGER, 0, hi, err, "%s entry %d", what, k)) {
      free(v);
      return ST_EINPUT;
    }
    if (k == cap) {
      int nc = cap ? 2 * cap : 16;
      double *nv = realloc(v, (size_t)nc * sizeof *nv);
      if (!nv) {
        free(v);
        return st_err_set(err, ST_ENOMEM, "%s: out of memory", what);
      }
      v = nv;
      cap = nc;
    }
    v[k++] = d;
  }
  *out = v;
  *n = k;
  return ST_OK;
}

/* Ranks of a process group: tr__kt_parse_int_list in [0, INT32_MAX], as int32. */
int tr__kt_parse_ranks(const cJSON *x, const char *what, int32_t **out, int *n, st_err *err)
{
  double *d;
  int k;
  int rc = tr__kt_parse_int_list(x, ST_INT32_MAX, what, &d, &k, err);
  if (rc)
    return rc;
  int32_t *v = malloc((size_t)(k ? k : 1) * sizeof *v);
  if (!v) {
    free(d);
    return st_err_set(err, ST_ENOMEM, "%s: out of memory", what);
  }
  for (int i = 0; i < k; i++)
    v[i] = (int32_t)d[i];
  free(d);
  *out = v;
  *n = k;
  return ST_OK;
}

int tr__kt_pg_add(kt_ctx *c, const kt_file *f, const char *name, const int32_t *ranks, int n,
                  const char *desc)
{
  for (int i = 0; i < c->npgs; i++)
    if (!strcmp(c->pgs[i].name, name)) {
      if (c->pgs[i].size != n || memcmp(c->pgs[i].ranks, ranks, (size_t)n * sizeof *ranks))
        return st_err_set(c->err, ST_EINPUT,
                          "trace '%s': process group '%s' has other ranks than in another file "
                          "(the files are not of one job?)",
                          f->path, name);
      if (desc && desc[0] && !c->pgs[i].desc[0])
        snprintf(c->pgs[i].desc, sizeof c->pgs[i].desc, "%s", desc);
      return i;
    }
  kt_pg *np = realloc(c->pgs, (size_t)(c->npgs + 1) * sizeof *np);
  if (!np)
    return st_err_set(c->err, ST_ENOMEM, "out of memory");
  c->pgs = np;
  kt_pg *p = &c->pgs[c->npgs];
  p->name = strdup(name);
  p->ranks = malloc((size_t)(n ? n : 1) * sizeof *ranks);
  if (!p->name || !p->ranks) {
    free(p->name);
    free(p->ranks);
    return st_err_set(c->err, ST_ENOMEM, "out of memory");
  }
  memcpy(p->ranks, ranks, (size_t)n * sizeof *ranks);
  p->size = n;
  snprintf(p->desc, sizeof p->desc, "%s", desc ? desc : "");
  return c->npgs++;
}

/* rank, world and process groups (distributedInfo), else the rank from the
 * file name */
static int read_dist_info(kt_ctx *c, kt_file *f)
{
  f->rank = -1;
  f->world = 0;
  const cJSON *di = cJSON_GetObjectItemCaseSensitive(f->root, "distributedInfo");
  if (cJSON_IsObject(di)) {
    double v;
    long x;
    if (!tr__kt_ev_number(di, "rank", &v)) {
      if (st_num_to_long(v, 0, ST_RANKS_MAX - 1, &x, c->err, "trace '%s': distributedInfo: 'rank'",
                         f->path))
        return ST_EINPUT;
      f->rank = (int)x;
    }
    if (!tr__kt_ev_number(di, "world_size", &v)) {
      if (st_num_to_long(v, 1, ST_RANKS_MAX, &x, c->err,
                         "trace '%s': distributedInfo: 'world_size'", f->path))
        return ST_EINPUT;
      f->world = (int)x;
    }
    const cJSON *pgc = cJSON_GetObjectItemCaseSensitive(di, "pg_config");
    const cJSON *pg;
    int k = 0;
    cJSON_ArrayForEach(pg, pgc)
    {
      const char *name = tr__kt_str_item(pg, "pg_name");
      int32_t *ranks;
      int n;
      if (!name)
        return st_err_set(c->err, ST_EINPUT,
                          "trace '%s': distributedInfo.pg_config[%d]: 'pg_name' is missing",
                          f->path, k);
      char what[ST_ERR_MSG_MAX / 2];
      snprintf(what, sizeof what, "trace '%s': distributedInfo.pg_config[%d]: 'ranks'", f->path,
               k);
      int prc = tr__kt_parse_ranks(cJSON_GetObjectItemCaseSensitive(pg, "ranks"), what, &ranks, &n,
                            c->err);
      if (prc)
        return prc;
      int r = tr__kt_pg_add(c, f, name, ranks, n, tr__kt_str_item(pg, "pg_desc"));
      free(ranks);
      if (r < 0)
        return r;
      k++;
    }
  }
  if (f->rank < 0)
    f->rank = rank_from_name(f->path);
  if (f->rank < 0)
    return st_err_set(c->err, ST_EINPUT,
                      "trace '%s': no rank: 'distributedInfo' has none and the file name has no "
                      "number",
                      f->path);
  return ST_OK;
}

/* The step being chosen while the events are read: the best ProfilerStep#N
 * so far and the one before it, and the latest event start. */
typedef struct kt_steps {
  int best_n, prev_n;
  double best_ts, best_end, prev_ts, prev_end_ts, prev_pid, last_ts;
} kt_steps;

/* Event i of traceEvents: a GPU op, a runtime call or a step annotation is
 * kept, anything else read past. */
static int read_event(kt_ctx *c, kt_file *f, const cJSON *ev, long i, kt_steps *st)
{
  if (!cJSON_IsObject(ev))
    return st_err_set(c->err, ST_EINPUT, "trace '%s': event %ld: not an object", f->path, i);
  const cJSON *phj = cJSON_GetObjectItemCaseSensitive(ev, "ph");
  if (!phj)
    return st_err_set(c->err, ST_EINPUT, "trace '%s': event %ld: 'ph' is missing", f->path, i);
  if (!cJSON_IsString(phj))
    return st_err_set(c->err, ST_EINPUT, "trace '%s': event %ld: 'ph' is not a string",
                      f->path, i);
  const char *ph = phj->valuestring;
  double ts;
  if (!tr__kt_ev_number(ev, "ts", &ts) && ts > st->last_ts)
    st->last_ts = ts;
  if (strcmp(ph, "X")) {
    /* Only complete events carry what a replay needs; the other kinds of
     * the Chrome trace format are read past, unknown ones counted. */
    if (!strchr("BEMsftiICbenPONDRpc", ph[0]) || ph[1])
      c->stats->events_skipped++;
    return ST_OK;
  }
  const char *cat = tr__kt_str_item(ev, "cat");
  int is_gpu = 0, gkind = 0;
  if (cat && !strcmp(cat, "kernel"))
    is_gpu = 1, gkind = KG_KERNEL;
  else if (cat && (!strcmp(cat, "gpu_memcpy") || !strcmp(cat, "Memcpy")))
    is_gpu = 1, gkind = KG_MEMCPY;
  else if (cat && (!strcmp(cat, "gpu_memset") || !strcmp(cat, "Memset")))
    is_gpu = 1, gkind = KG_MEMSET;
  int is_rt = cat && (!strcmp(cat, "cuda_runtime") || !strcmp(cat, "cuda_driver"));
  int is_ann = cat && (!strcmp(cat, "user_annotation") || !strcmp(cat, "cpu_op"));
  if (!cat) {
    c->stats->events_skipped++;
    return ST_OK;
  }
  if (!is_gpu && !is_rt && !is_ann)
    return ST_OK;
  const char *name = tr__kt_str_item(ev, "name");
  if (!name)
    return st_err_set(c->err, ST_EINPUT, "trace '%s': event %ld: 'name' is missing", f->path,
                      i);
  if (is_ann && strncmp(name, "ProfilerStep#", 13))
    return ST_OK;
  double dur;
  int w;
  if ((w = tr__kt_ev_number(ev, "ts", &ts)))
    return field_err(c, f, i, "ts", w);
  if ((w = tr__kt_ev_number(ev, "dur", &dur)))
    return field_err(c, f, i, "dur", w);
  if (dur < 0)
    return st_err_set(c->err, ST_EINPUT, "trace '%s': event %ld: 'dur' is negative", f->path,
                      i);
  if (!isfinite(ts) || !isfinite(dur))
    return st_err_set(c->err, ST_EINPUT, "trace '%s': event %ld: 'ts' or 'dur' is not finite",
                      f->path, i);
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
  double corr = -1;
  if (cJSON_IsObject(args) && !tr__kt_ev_number(args, "correlation", &corr) &&
      st_num_check(corr, ST_NUM_INTEGER, -ST_BYTES_MAX, ST_BYTES_MAX, c->err,
                   "trace '%s': event %ld: 'correlation'", f->path, i))
    return ST_EINPUT;
  if (is_ann) {
    int stepn = isdigit((unsigned char)name[13]) ? digits_int(name + 13) : 0;
    if (stepn < 0)
      return st_err_set(c->err, ST_EINPUT, "trace '%s': event %ld: step number '%.20s' is too large",
                        f->path, i, name + 13);
    double pid = 0;
    tr__kt_ev_number(ev, "pid", &pid);
    if (c->opt->step < 0 && stepn < st->best_n && stepn > st->prev_n) {
      st->prev_n = stepn;
      st->prev_ts = ts;
      st->prev_end_ts = ts + dur;
      st->prev_pid = pid;
    } else if ((c->opt->step >= 0 && stepn == c->opt->step) ||
               (c->opt->step < 0 && stepn > st->best_n)) {
      st->prev_n = st->best_n;
      st->prev_ts = st->best_ts;
      st->prev_end_ts = st->best_end;
      st->prev_pid = f->cpu_pid;
      st->best_n = stepn;
      st->best_ts = ts;
      st->best_end = ts + dur;
      f->cpu_pid = pid;
    }
  } else if (is_rt) {
    kt_rt *r = &f->rt[f->nrt++];
    r->ts = ts;
    r->end = ts + dur;
    r->corr = (long)corr;
    r->sync = strstr(name, "Synchronize") != NULL ||
              !strcmp(name, "cudaMemcpy") || !strcmp(name, "cuMemcpy");
  } else {
    int tid;
    if ((w = tid_of(ev, &tid)))
      return st_err_set(c->err, ST_EINPUT, "trace '%s': event %ld: 'tid' is %s", f->path, i,
                        w == -1 ? "missing" : "not a stream number");
    kt_gpu *g = &f->gpu[f->ngpu++];
    g->ts = ts;
    g->end = ts + dur;
    g->corr = (long)corr;
    g->index = i;
    g->tid = tid;
    g->kind = gkind;
    g->ev = ev;
    g->nccl = gkind == KG_KERNEL ? nccl_kernel_op(name) : 0;
  }
  return ST_OK;
}

/* The events: GPU ops and runtime calls into f->gpu and f->rt, and the step
 * to import into f->step_n, step_ts and step_end. */
static int read_events(kt_ctx *c, kt_file *f, const cJSON *events)
{
  long n = cJSON_GetArraySize(events);
  f->gpu = calloc((size_t)(n ? n : 1), sizeof *f->gpu);
  f->rt = calloc((size_t)(n ? n : 1), sizeof *f->rt);
  if (!f->gpu || !f->rt)
    return st_err_set(c->err, ST_ENOMEM, "out of memory");
  kt_steps s = {-1, -1, 0, 0, 0, 0, 0, -INFINITY}, *st = &s;
  const cJSON *ev;
  long i = -1;
  cJSON_ArrayForEach(ev, events)
  {
    i++;
    c->stats->events_read++;
    int rc = read_event(c, f, ev, i, st);
    if (rc)
      return rc;
  }
  if (c->opt->step >= 0 && st->best_n != c->opt->step)
    return st_err_set(c->err, ST_EINPUT, "trace '%s': ProfilerStep#%d is not in the trace",
                      f->path, c->opt->step);
  if (st->best_n < 0)
    return st_err_set(c->err, ST_EINPUT, "trace '%s': no ProfilerStep#N annotation (no iteration "
                      "to import)", f->path);
  /* The last step is incomplete when the trace stops inside it (its
   * annotation ends after the last event began): take the one before. */
  if (c->opt->step < 0 && st->best_end > st->last_ts + KT_EPS_US && st->prev_n >= 0) {
    st->best_n = st->prev_n;
    st->best_ts = st->prev_ts;
    st->best_end = st->prev_end_ts;
    f->cpu_pid = st->prev_pid;
  }
  f->step_n = st->best_n;
  f->step_ts = st->best_ts;
  f->step_end = st->best_end;
  return ST_OK;
}

/* Keep the GPU ops of the step, sorted by start, and number their streams. */
static int keep_step_ops(kt_ctx *c, kt_file *f)
{
  /* keep the GPU ops of the step: launched inside it (or, with no launch
   * record, starting inside it) */
  qsort(f->rt, f->nrt, sizeof *f->rt, cmp_rt_corr);
  size_t k = 0;
  for (size_t j = 0; j < f->ngpu; j++) {
    const kt_rt *l = tr__kt_find_launch(f, f->gpu[j].corr);
    double t = l ? l->ts : f->gpu[j].ts;
    if (t >= f->step_ts && t <= f->step_end)
      f->gpu[k++] = f->gpu[j];
  }
  f->ngpu = k;
  qsort(f->gpu, f->ngpu, sizeof *f->gpu, cmp_gpu);
  /* distinct streams */
  f->tids = malloc((f->ngpu ? f->ngpu : 1) * sizeof *f->tids);
  if (!f->tids)
    return st_err_set(c->err, ST_ENOMEM, "out of memory");
  for (size_t j = 0; j < f->ngpu; j++) {
    int t = f->gpu[j].tid, found = 0;
    for (int q = 0; q < f->ntids; q++)
      found |= f->tids[q] == t;
    if (!found) {
      int q = f->ntids++;
      while (q > 0 && f->tids[q - 1] > t) {
        f->tids[q] = f->tids[q - 1];
        q--;
      }
      f->tids[q] = t;
    }
  }
  for (size_t j = 0; j < f->ngpu; j++)
    for (int q = 0; q < f->ntids; q++)
      if (f->tids[q] == f->gpu[j].tid)
        f->gpu[j].stream = q + 1; /* stream 0 is the host */
  return ST_OK;
}

/* f->device: the deviceProperties entry whose id is the kernels' pid (a host
 * lists all its GPUs), else the first entry. */
static void read_device(kt_file *f)
{
  const cJSON *dp = cJSON_GetObjectItemCaseSensitive(f->root, "deviceProperties");
  double gpid = -1;
  if (f->ngpu)
    tr__kt_ev_number(f->gpu[0].ev, "pid", &gpid);
  const cJSON *d;
  cJSON_ArrayForEach(d, dp)
  {
    double id;
    const char *nm = tr__kt_str_item(d, "name");
    if (!nm)
      continue;
    if (!f->device[0] || (!tr__kt_ev_number(d, "id", &id) && id == gpid))
      snprintf(f->device, sizeof f->device, "%s", nm);
  }
}

int tr__kt_read_file(kt_ctx *c, kt_file *f)
{
  size_t len;
  int rc = tr__read_file(f->path, &f->data, &len, c->err);
  if (rc)
    return rc;
  const char *end = NULL;
  f->root = cJSON_ParseWithLengthOpts(f->data, len, &end, 0);
  if (!f->root) {
    size_t at = end && end >= f->data ? (size_t)(end - f->data) : 0;
    return st_err_set(c->err, ST_EINPUT,
                      "trace '%s': not valid JSON at byte %zu (truncated or malformed)", f->path,
                      at);
  }
  if (!cJSON_IsObject(f->root))
    return st_err_set(c->err, ST_EINPUT, "trace '%s': top level is not a JSON object", f->path);
  const cJSON *events = cJSON_GetObjectItemCaseSensitive(f->root, "traceEvents");
  if (!events)
    return st_err_set(c->err, ST_EINPUT, "trace '%s': 'traceEvents' is missing", f->path);
  if (!cJSON_IsArray(events))
    return st_err_set(c->err, ST_EINPUT, "trace '%s': 'traceEvents' is not an array", f->path);

  rc = read_dist_info(c, f);
  if (!rc)
    rc = read_events(c, f, events);
  if (!rc)
    rc = keep_step_ops(c, f);
  if (!rc)
    read_device(f);
  return rc;
}

/* ---- host execution traces (ET), joined by pid ------------------------------ */

static int is_json_name(const char *n)
{
  return st_str_ends_with(n, ".json") || st_str_ends_with(n, ".json.gz");
}

static int et_load_dir(kt_ctx *c, const char *dir)
{
  char **names;
  size_t n;
  st_err quiet;
  if (st_dir_list(dir, is_json_name, &names, &n, &quiet))
    return 0;
  for (size_t i = 0; i < n; i++) {
    char *data;
    size_t len;
    if (tr__read_file(names[i], &data, &len, c->err)) {
      st_str_list_free(names, n);
      return c->err->code;
    }
    cJSON *root = cJSON_ParseWithLengthOpts(data, len, NULL, 0);
    free(data);
    double pid;
    if (!root || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "nodes")) ||
        tr__kt_ev_number(root, "pid", &pid)) {
      cJSON_Delete(root); /* not an execution trace (a Kineto file, say) */
      continue;
    }
    size_t m = c->net + 1;
    char **np = realloc(c->et_paths, m * sizeof *np);
    if (np)
      c->et_paths = np;
    cJSON **nr = realloc(c->et_roots, m * sizeof *nr);
    if (nr)
      c->et_roots = nr;
    double *nd = realloc(c->et_pids, m * sizeof *nd);
    if (nd)
      c->et_pids = nd;
    if (!np || !nr || !nd) {
      cJSON_Delete(root);
      st_str_list_free(names, n);
      return st_err_set(c->err, ST_ENOMEM, "out of memory");
    }
    c->et_paths[c->net] = names[i];
    names[i] = NULL;
    c->et_roots[c->net] = root;
    c->et_pids[c->net] = pid;
    c->net++;
  }
  st_str_list_free(names, n);
  return 0;
}

int tr__kt_et_load(kt_ctx *c)
{
  if (c->et_loaded)
    return 0;
  c->et_loaded = 1;
  if (c->opt->et_dir)
    return et_load_dir(c, c->opt->et_dir);
  /* beside the Kineto files, or in a sibling folder named "et" */
  char *kdir = st_path_dirname(c->files[0].path);
  if (!kdir)
    return st_err_set(c->err, ST_ENOMEM, "out of memory");
  int rc = et_load_dir(c, kdir);
  if (!rc && c->net == 0) {
    size_t len = strlen(kdir) + 8;
    char *sib = malloc(len);
    if (sib) {
      snprintf(sib, len, "%s/../et", kdir);
      rc = et_load_dir(c, sib);
      free(sib);
    }
  }
  free(kdir);
  return rc;
}

/* A tensor in the ET: [tensor_id, storage_id, offset, numel, elem_bytes, device]. */
static double tensor_bytes(const cJSON *v)
{
  if (!cJSON_IsArray(v))
    return -1;
  int n = cJSON_GetArraySize(v);
  if (n == 6 && cJSON_IsNumber(cJSON_GetArrayItem(v, 3)) &&
      cJSON_IsNumber(cJSON_GetArrayItem(v, 4)) && cJSON_IsString(cJSON_GetArrayItem(v, 5)))
    return cJSON_GetArrayItem(v, 3)->valuedouble * cJSON_GetArrayItem(v, 4)->valuedouble;
  /* a list of tensors */
  double sum = 0;
  int any = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, v)
  {
    double b = tensor_bytes(e);
    if (b < 0)
      return -1;
    sum += b;
    any = 1;
  }
  return any ? sum : -1;
}

/* A record_param_comms node and where it came: sorted by (id, place), the
 * order of the nodes' ids with ties in file order. */
typedef struct et_rec {
  double id;
  long seq;
  const cJSON *node;
} et_rec;

static int cmp_et_rec(const void *a, const void *b)
{
  const et_rec *x = a, *y = b;
  if (x->id != y->id)
    return x->id < y->id ? -1 : 1;
  return (x->seq > y->seq) - (x->seq < y->seq);
}

/* One collective from its node's inputs; 0 when it is a wait or nothing
 * recognisable (no entry made), 1 when made, < 0 on error.  The inputs are
 * walked as the list they are (cJSON_GetArrayItem walks from the head each
 * time: quadratic in a node's inputs). */
static int et_coll(kt_ctx *c, size_t which, const cJSON *nd, double id, kt_etcoll *e)
{
  const cJSON *in = cJSON_GetObjectItemCaseSensitive(nd, "inputs");
  if (cJSON_IsObject(in)) /* schema 1.0.2-chakra: inputs{values,shapes,types} */
    in = cJSON_GetObjectItemCaseSensitive(in, "values");
  const cJSON *at = NULL;
  int op = -1;
  double bytes = -1;
  for (const cJSON *x = cJSON_IsArray(in) ? in->child : NULL; x; x = x->next) {
    if (bytes < 0)
      bytes = tensor_bytes(x);
    if (cJSON_IsString(x) && !at) {
      int o = tr__kt_coll_from_torch_name(x->valuestring);
      if (o != -1) {
        at = x;
        op = o;
      }
    }
  }
  if (!at || op == -3)
    return 0; /* a wait, or nothing recognisable */
  e->op = op;
  e->bytes = bytes < 0 ? 0 : bytes;
  if (st_num_check(e->bytes, ST_NUM_REAL, 0, ST_BYTES_MAX, c->err,
                   "execution trace '%s': node %.17g: the collective's input bytes",
                   c->et_paths[which], id))
    return ST_EINPUT;
  const cJSON *sp = at->next;
  int ns = cJSON_IsArray(sp) ? cJSON_GetArraySize(sp) : 0;
  if (ns > 0) {
    e->split = malloc((size_t)ns * sizeof *e->split);
    if (!e->split)
      return st_err_set(c->err, ST_ENOMEM, "out of memory");
    int q = 0;
    for (const cJSON *x = sp->child; x; x = x->next, q++) {
      e->split[q] = cJSON_IsNumber(x) ? x->valuedouble : 0;
      if (st_num_check(e->split[q], ST_NUM_REAL, 0, ST_BYTES_MAX, c->err,
                       "execution trace '%s': node %.17g: split entry %d", c->et_paths[which], id,
                       q))
        return ST_EINPUT;
      e->split_sum += e->split[q];
    }
    e->nsplit = ns;
  }
  const cJSON *attrs = cJSON_GetObjectItemCaseSensitive(nd, "attrs");
  const cJSON *a;
  cJSON_ArrayForEach(a, attrs)
  {
    const char *an = tr__kt_str_item(a, "name");
    if (an && !strcmp(an, "pg_name")) {
      const char *pv = tr__kt_str_item(a, "value");
      if (pv)
        snprintf(e->pg, sizeof e->pg, "%s", pv);
    }
  }
  return 1;
}

/* Collectives of one ET in node order (record_param_comms, waits left out). */
int tr__kt_et_collectives(kt_ctx *c, size_t which, kt_etcoll **out, int *count)
{
  const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(c->et_roots[which], "nodes");
  int n = cJSON_GetArraySize(nodes);
  kt_etcoll *v = calloc((size_t)(n ? n : 1), sizeof *v);
  et_rec *recs = malloc((size_t)(n ? n : 1) * sizeof *recs);
  if (!v || !recs) {
    free(v);
    free(recs);
    return st_err_set(c->err, ST_ENOMEM, "out of memory");
  }
  /* nodes are in id order in the files seen; sort to be sure */
  int k = 0;
  long i = 0;
  for (const cJSON *nd = nodes->child; nd; nd = nd->next, i++) {
    const char *name = tr__kt_str_item(nd, "name");
    if (!name || strcmp(name, "record_param_comms"))
      continue;
    double id = (double)i;
    tr__kt_ev_number(nd, "id", &id);
    recs[k++] = (et_rec){id, i, nd};
  }
  qsort(recs, (size_t)k, sizeof *recs, cmp_et_rec);
  int m = 0, rc = ST_OK;
  for (int j = 0; j < k && rc >= 0; j++) {
    rc = et_coll(c, which, recs[j].node, recs[j].id, &v[m]);
    m += rc == 1 || (rc < 0 && v[m].split); /* a made entry, or one holding memory */
  }
  free(recs);
  if (rc < 0) {
    tr__kt_etcoll_free(v, m);
    return rc;
  }
  *out = v;
  *count = m;
  return ST_OK;
}

void tr__kt_etcoll_free(kt_etcoll *v, int n)
{
  for (int i = 0; v && i < n; i++)
    free(v[i].split);
  free(v);
}
