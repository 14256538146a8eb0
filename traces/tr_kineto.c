/* tr_kineto.c — PyTorch profiler (Kineto) Chrome-trace JSON into a workload.
 *
 * One file per rank.  What is kept of a rank is one iteration (ProfilerStep#N,
 * --step, default the last complete one) as seen by its GPU:
 *   - every kernel, memcpy and memset on a CUDA stream becomes an op on a
 *     workload stream named "stream <tid>", in start order;
 *   - compute kernels keep their measured duration (duration_s);
 *   - NCCL kernels become collectives whose duration is NOT kept: the replay
 *     simulates them (their measured time includes waiting for the slowest
 *     peer).  Op and size come from the kernel's args ("Collective name",
 *     "In msg nelems", "dtype", "Process Group Name"), else from the host
 *     execution trace of the same pid (record_param_comms nodes, joined in
 *     order and checked op by op);
 *   - an idle gap before an op on its stream becomes a delay op (class
 *     OTHER, never scaled) and, where the gap ended because an op of another
 *     stream finished (stream-wait event, or the CPU blocked in a
 *     synchronize call until it finished), a wait on that op.  So a replay
 *     with the measured collective times reproduces every measured start;
 *     with --no-launch-gaps the delays are dropped and only the waits stay.
 *   - a host stream holds the rank's start offset (its step began that long
 *     after the earliest rank's) and the host tail (step end after the last
 *     GPU op), so replayed and measured step times compare directly.
 *
 * Bad input fails with "trace '<file>': event <i>: ...", i being the index in
 * traceEvents; events of unknown kinds are skipped and counted.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "tr_int.h"

/* Two timestamps closer than this (microseconds) are taken as the same
 * instant when matching a start to an end (Kineto rounds to 1 us). */
#define KT_EPS_US 1.0

enum { KG_KERNEL = 0, KG_MEMCPY, KG_MEMSET };

typedef struct kt_gpu {
  double ts, end;   /* microseconds */
  long corr;        /* correlation id, -1 if none */
  long index;       /* event index in traceEvents */
  int tid;          /* CUDA stream */
  int stream;       /* workload stream index */
  int kind;         /* KG_* */
  int nccl;         /* wl_coll_op + 1 for an NCCL kernel, 0 otherwise; -1 SendRecv */
  const cJSON *ev;
  long op;          /* op index in the program, once appended */
} kt_gpu;

typedef struct kt_rt {
  double ts, end;
  long corr;
  int sync;
} kt_rt;

typedef struct kt_pg {
  char *name;
  char desc[64]; /* pg_desc, or "" */
  int size;
  int32_t *ranks;
} kt_pg;

typedef struct kt_file {
  char *path;
  char *data;
  cJSON *root;
  int rank, world;
  double cpu_pid;
  int step_n;
  double step_ts, step_end;
  kt_gpu *gpu;
  size_t ngpu;
  kt_rt *rt;
  size_t nrt;
  int *tids; /* distinct CUDA streams, ascending */
  int ntids;
  char device[64]; /* deviceProperties name of the GPU the kernels ran on, or "" */
} kt_file;

typedef struct kt_ctx {
  const tr_options *opt;
  tr_import_stats *stats;
  st_err *err;
  kt_file *files;
  int nfiles;
  kt_pg *pgs;
  int npgs;
  /* execution traces, loaded on demand */
  int et_loaded;
  char **et_paths;
  cJSON **et_roots;
  double *et_pids;
  size_t net;
} kt_ctx;

/* ---- small JSON helpers -------------------------------------------------- */

static int ev_number(const cJSON *ev, const char *key, double *v)
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

static const char *str_item(const cJSON *o, const char *key)
{
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(x) ? x->valuestring : NULL;
}

/* A stream id: a number, or a string holding one ("stream 7", "7"). */
static int tid_of(const cJSON *ev, int *tid)
{
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(ev, "tid");
  if (cJSON_IsNumber(x)) {
    *tid = (int)x->valuedouble;
    return 0;
  }
  if (cJSON_IsString(x)) {
    const char *s = x->valuestring;
    while (*s && !isdigit((unsigned char)*s))
      s++;
    if (*s) {
      *tid = atoi(s);
      return 0;
    }
    return -2;
  }
  return x ? -2 : -1;
}

/* ---- names ----------------------------------------------------------------- */

/* Collective op from a name used by PyTorch/ET/args ("allreduce",
 * "all_to_allv", "_allgather_base", ...).  Returns wl_coll_op, -2 for
 * point-to-point, -3 for "wait", -1 if unknown. */
static int coll_from_torch_name(const char *s)
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

static double dtype_bytes(const char *s)
{
  static const struct {
    const char *name;
    double bytes;
  } t[] = {{"Float", 4},        {"float", 4},     {"Half", 2},          {"half", 2},
           {"BFloat16", 2},     {"c10::BFloat16", 2}, {"Double", 8},    {"double", 8},
           {"Int", 4},          {"int", 4},       {"Long", 8},          {"long int", 8},
           {"Short", 2},        {"Byte", 1},      {"Char", 1},          {"Bool", 1},
           {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1}, {"ComplexFloat", 8}, {"unsigned char", 1}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(s, t[i].name))
      return t[i].bytes;
  return -1;
}

/* Compute class from a kernel name: matrix multiplies and attention are told
 * apart so that a what-if replay scales them by their own ratio; every other
 * kernel is taken as memory-bound. */
static int class_of_kernel(const char *name, int kind)
{
  if (kind != KG_KERNEL)
    return WL_CLASS_ELEMENTWISE;
  char low[256];
  size_t n = 0;
  for (const char *s = name; *s && n + 1 < sizeof low; s++)
    low[n++] = (char)tolower((unsigned char)*s);
  low[n] = '\0';
  if (strstr(low, "fmha") || strstr(low, "flash") || strstr(low, "attention"))
    return WL_CLASS_ATTENTION;
  if (strstr(low, "gemm") || strstr(low, "cutlass") || strstr(low, "cublas") ||
      strstr(low, "xmma") || strstr(low, "matmul") || strstr(low, "wgmma"))
    return WL_CLASS_GEMM;
  return WL_CLASS_ELEMENTWISE;
}

/* A short op name: the kernel name up to its argument list. */
static void short_name(const char *name, char *buf, size_t n)
{
  const char *s = name;
  if (!strncmp(s, "void ", 5))
    s += 5;
  size_t k = 0;
  for (; s[k] && s[k] != '(' && k + 1 < n; k++)
    buf[k] = s[k];
  buf[k] = '\0';
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

static const kt_rt *find_launch(const kt_file *f, long corr)
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
        return atoi(p);
    }
  }
  for (const char *p = b; *p; p++)
    if (isdigit((unsigned char)*p))
      return atoi(p);
  return -1;
}

/* A list of whole numbers in [0, hi]: a JSON array, or a string as PyTorch
 * writes one ("[0, 1, 2]"; spaces alone also separate).  *out holds *n
 * values (caller frees).  Errors name `what` (file, place and key) and the
 * entry; nothing is skipped and no sign is dropped. */
static int parse_int_list(const cJSON *x, double hi, const char *what, double **out, int *n,
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

/* Ranks of a process group: parse_int_list in [0, INT32_MAX], as int32. */
static int parse_ranks(const cJSON *x, const char *what, int32_t **out, int *n, st_err *err)
{
  double *d;
  int k;
  int rc = parse_int_list(x, ST_INT32_MAX, what, &d, &k, err);
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

static int pg_add(kt_ctx *c, const kt_file *f, const char *name, const int32_t *ranks, int n,
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

static int read_file(kt_ctx *c, kt_file *f)
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

  /* rank, world, process groups */
  f->rank = -1;
  f->world = 0;
  const cJSON *di = cJSON_GetObjectItemCaseSensitive(f->root, "distributedInfo");
  if (cJSON_IsObject(di)) {
    double v;
    if (!ev_number(di, "rank", &v))
      f->rank = (int)v;
    if (!ev_number(di, "world_size", &v))
      f->world = (int)v;
    const cJSON *pgc = cJSON_GetObjectItemCaseSensitive(di, "pg_config");
    const cJSON *pg;
    int k = 0;
    cJSON_ArrayForEach(pg, pgc)
    {
      const char *name = str_item(pg, "pg_name");
      int32_t *ranks;
      int n;
      if (!name)
        return st_err_set(c->err, ST_EINPUT,
                          "trace '%s': distributedInfo.pg_config[%d]: 'pg_name' is missing",
                          f->path, k);
      char what[ST_ERR_MSG_MAX / 2];
      snprintf(what, sizeof what, "trace '%s': distributedInfo.pg_config[%d]: 'ranks'", f->path,
               k);
      int prc = parse_ranks(cJSON_GetObjectItemCaseSensitive(pg, "ranks"), what, &ranks, &n,
                            c->err);
      if (prc)
        return prc;
      int r = pg_add(c, f, name, ranks, n, str_item(pg, "pg_desc"));
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

  /* events */
  long n = cJSON_GetArraySize(events);
  f->gpu = calloc((size_t)(n ? n : 1), sizeof *f->gpu);
  f->rt = calloc((size_t)(n ? n : 1), sizeof *f->rt);
  if (!f->gpu || !f->rt)
    return st_err_set(c->err, ST_ENOMEM, "out of memory");
  int best_n = -1, prev_n = -1;
  double best_ts = 0, best_end = 0, prev_ts = 0, prev_end_ts = 0, prev_pid = 0,
         last_ts = -INFINITY;
  const cJSON *ev;
  long i = -1;
  cJSON_ArrayForEach(ev, events)
  {
    i++;
    c->stats->events_read++;
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
    if (!ev_number(ev, "ts", &ts) && ts > last_ts)
      last_ts = ts;
    if (strcmp(ph, "X")) {
      /* Only complete events carry what a replay needs; the other kinds of
       * the Chrome trace format are read past, unknown ones counted. */
      if (!strchr("BEMsftiICbenPONDRpc", ph[0]) || ph[1])
        c->stats->events_skipped++;
      continue;
    }
    const char *cat = str_item(ev, "cat");
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
      continue;
    }
    if (!is_gpu && !is_rt && !is_ann)
      continue;
    const char *name = str_item(ev, "name");
    if (!name)
      return st_err_set(c->err, ST_EINPUT, "trace '%s': event %ld: 'name' is missing", f->path,
                        i);
    if (is_ann && strncmp(name, "ProfilerStep#", 13))
      continue;
    double dur;
    int w;
    if ((w = ev_number(ev, "ts", &ts)))
      return field_err(c, f, i, "ts", w);
    if ((w = ev_number(ev, "dur", &dur)))
      return field_err(c, f, i, "dur", w);
    if (dur < 0)
      return st_err_set(c->err, ST_EINPUT, "trace '%s': event %ld: 'dur' is negative", f->path,
                        i);
    if (!isfinite(ts) || !isfinite(dur))
      return st_err_set(c->err, ST_EINPUT, "trace '%s': event %ld: 'ts' or 'dur' is not finite",
                        f->path, i);
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
    double corr = -1;
    if (cJSON_IsObject(args))
      ev_number(args, "correlation", &corr);
    if (is_ann) {
      int stepn = atoi(name + 13);
      double pid = 0;
      ev_number(ev, "pid", &pid);
      if (c->opt->step < 0 && stepn < best_n && stepn > prev_n) {
        prev_n = stepn;
        prev_ts = ts;
        prev_end_ts = ts + dur;
        prev_pid = pid;
      } else if ((c->opt->step >= 0 && stepn == c->opt->step) ||
                 (c->opt->step < 0 && stepn > best_n)) {
        prev_n = best_n;
        prev_ts = best_ts;
        prev_end_ts = best_end;
        prev_pid = f->cpu_pid;
        best_n = stepn;
        best_ts = ts;
        best_end = ts + dur;
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
  }
  if (c->opt->step >= 0 && best_n != c->opt->step)
    return st_err_set(c->err, ST_EINPUT, "trace '%s': ProfilerStep#%d is not in the trace",
                      f->path, c->opt->step);
  if (best_n < 0)
    return st_err_set(c->err, ST_EINPUT, "trace '%s': no ProfilerStep#N annotation (no iteration "
                      "to import)", f->path);
  /* The last step is incomplete when the trace stops inside it (its
   * annotation ends after the last event began): take the one before. */
  if (c->opt->step < 0 && best_end > last_ts + KT_EPS_US && prev_n >= 0) {
    best_n = prev_n;
    best_ts = prev_ts;
    best_end = prev_end_ts;
    f->cpu_pid = prev_pid;
  }
  f->step_n = best_n;
  f->step_ts = best_ts;
  f->step_end = best_end;

  /* keep the GPU ops of the step: launched inside it (or, with no launch
   * record, starting inside it) */
  qsort(f->rt, f->nrt, sizeof *f->rt, cmp_rt_corr);
  size_t k = 0;
  for (size_t j = 0; j < f->ngpu; j++) {
    const kt_rt *l = find_launch(f, f->gpu[j].corr);
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
  /* the device: the deviceProperties entry whose id is the kernels' pid
   * (a host lists all its GPUs), else the first entry */
  const cJSON *dp = cJSON_GetObjectItemCaseSensitive(f->root, "deviceProperties");
  double gpid = -1;
  if (f->ngpu)
    ev_number(f->gpu[0].ev, "pid", &gpid);
  const cJSON *d;
  cJSON_ArrayForEach(d, dp)
  {
    double id;
    const char *nm = str_item(d, "name");
    if (!nm)
      continue;
    if (!f->device[0] || (!ev_number(d, "id", &id) && id == gpid))
      snprintf(f->device, sizeof f->device, "%s", nm);
  }
  return ST_OK;
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
        ev_number(root, "pid", &pid)) {
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

static int et_load(kt_ctx *c)
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

typedef struct kt_etcoll {
  int op;        /* wl_coll_op */
  double bytes;  /* input bytes */
  double *split; /* per-peer input split sizes (units of rows), or NULL */
  int nsplit;
  double split_sum;
  char pg[64];
} kt_etcoll;

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

/* Collectives of one ET in node order (record_param_comms, waits left out). */
static int et_collectives(kt_ctx *c, size_t which, kt_etcoll **out, int *count)
{
  const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(c->et_roots[which], "nodes");
  int n = cJSON_GetArraySize(nodes);
  kt_etcoll *v = calloc((size_t)(n ? n : 1), sizeof *v);
  if (!v)
    return st_err_set(c->err, ST_ENOMEM, "out of memory");
  /* nodes are in id order in the files seen; sort to be sure */
  int *order = malloc((size_t)(n ? n : 1) * sizeof *order);
  double *ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
  if (!order || !ids) {
    free(v);
    free(order);
    free(ids);
    return st_err_set(c->err, ST_ENOMEM, "out of memory");
  }
  int k = 0;
  for (int i = 0; i < n; i++) {
    const cJSON *nd = cJSON_GetArrayItem(nodes, i);
    const char *name = str_item(nd, "name");
    if (!name || strcmp(name, "record_param_comms"))
      continue;
    double id = i;
    ev_number(nd, "id", &id);
    int q = k++;
    while (q > 0 && ids[q - 1] > id) {
      ids[q] = ids[q - 1];
      order[q] = order[q - 1];
      q--;
    }
    ids[q] = id;
    order[q] = i;
  }
  int m = 0;
  for (int j = 0; j < k; j++) {
    const cJSON *nd = cJSON_GetArrayItem(nodes, order[j]);
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(nd, "inputs");
    if (cJSON_IsObject(in)) /* schema 1.0.2-chakra: inputs{values,shapes,types} */
      in = cJSON_GetObjectItemCaseSensitive(in, "values");
    int nin = cJSON_GetArraySize(in);
    int at = -1, op = -1;
    double bytes = -1;
    for (int q = 0; q < nin; q++) {
      const cJSON *x = cJSON_GetArrayItem(in, q);
      if (bytes < 0)
        bytes = tensor_bytes(x);
      if (cJSON_IsString(x) && at < 0) {
        int o = coll_from_torch_name(x->valuestring);
        if (o != -1) {
          at = q;
          op = o;
        }
      }
    }
    if (at < 0 || op == -3)
      continue; /* a wait, or nothing recognisable */
    kt_etcoll *e = &v[m++];
    e->op = op;
    e->bytes = bytes < 0 ? 0 : bytes;
    const cJSON *sp = cJSON_GetArrayItem(in, at + 1);
    int ns = cJSON_IsArray(sp) ? cJSON_GetArraySize(sp) : 0;
    if (ns > 0) {
      e->split = malloc((size_t)ns * sizeof *e->split);
      if (!e->split)
        break;
      for (int q = 0; q < ns; q++) {
        const cJSON *x = cJSON_GetArrayItem(sp, q);
        e->split[q] = cJSON_IsNumber(x) ? x->valuedouble : 0;
        e->split_sum += e->split[q];
      }
      e->nsplit = ns;
    }
    const cJSON *attrs = cJSON_GetObjectItemCaseSensitive(nd, "attrs");
    const cJSON *a;
    cJSON_ArrayForEach(a, attrs)
    {
      const char *an = str_item(a, "name");
      if (an && !strcmp(an, "pg_name")) {
        const char *pv = str_item(a, "value");
        if (pv)
          snprintf(e->pg, sizeof e->pg, "%s", pv);
      }
    }
  }
  free(order);
  free(ids);
  *out = v;
  *count = m;
  return ST_OK;
}

static void etcoll_free(kt_etcoll *v, int n)
{
  for (int i = 0; v && i < n; i++)
    free(v[i].split);
  free(v);
}

/* ---- building ------------------------------------------------------------------ */

typedef struct kt_coll {
  int op;
  double bytes;
  double *split; /* per-peer bytes, n entries, or NULL; owned */
  int nsplit;
  int pg;        /* index in c->pgs, or -1 for the world */
} kt_coll;

/* Collective of an NCCL kernel from its own args; 1 if found, 0 if the args
 * say nothing, < 0 on error. */
static int coll_from_args(kt_ctx *c, const kt_file *f, const kt_gpu *g, kt_coll *out)
{
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(g->ev, "args");
  const char *cname = str_item(args, "Collective name");
  if (!cname)
    return 0;
  int op = coll_from_torch_name(cname);
  if (op == -2)
    return st_err_set(c->err, ST_EINPUT,
                      "trace '%s': event %ld: point-to-point '%s' is not supported (no peer rank)",
                      f->path, g->index, cname);
  if (op < 0)
    return st_err_set(c->err, ST_EINPUT, "trace '%s': event %ld: collective '%s' is unknown",
                      f->path, g->index, cname);
  double in_n = -1, out_n = -1, gsize = 0;
  ev_number(args, "In msg nelems", &in_n);
  ev_number(args, "Out msg nelems", &out_n);
  ev_number(args, "Group size", &gsize);
  const char *dt = str_item(args, "dtype");
  if (in_n < 0 && out_n < 0)
    return st_err_set(c->err, ST_EINPUT, "trace '%s': event %ld: 'In msg nelems' is missing",
                      f->path, g->index);
  if (!dt)
    return st_err_set(c->err, ST_EINPUT, "trace '%s': event %ld: 'dtype' is missing", f->path,
                      g->index);
  double eb = dtype_bytes(dt);
  if (eb < 0)
    return st_err_set(c->err, ST_EINPUT, "trace '%s': event %ld: dtype '%s' is unknown", f->path,
                      g->index, dt);
  if (in_n < 0)
    in_n = out_n;
  if (out_n < 0)
    out_n = in_n;
  out->op = op;
  if (op == WL_COLL_ALLGATHER)
    out->bytes = out_n * eb; /* nccl-tests: the whole output */
  else if (op == WL_COLL_BARRIER)
    out->bytes = 0;
  else
    out->bytes = in_n * eb;
  /* process group */
  out->pg = -1;
  const char *pgn = str_item(args, "Process Group Name");
  const cJSON *pgr = cJSON_GetObjectItemCaseSensitive(args, "Process Group Ranks");
  for (int i = 0; pgn && i < c->npgs; i++)
    if (!strcmp(c->pgs[i].name, pgn))
      out->pg = i;
  if (out->pg < 0 && pgr) {
    int32_t *ranks;
    int n;
    char what[ST_ERR_MSG_MAX / 2];
    snprintf(what, sizeof what, "trace '%s': event %ld: 'Process Group Ranks'", f->path,
             g->index);
    int prc = parse_ranks(pgr, what, &ranks, &n, c->err);
    if (prc)
      return prc;
    if (n == 0)
      free(ranks);
    else {
      char nm[96];
      snprintf(nm, sizeof nm, "%s", pgn ? pgn : "ranks");
      int world = 1;
      for (int i = 0; i < n; i++)
        world &= ranks[i] == i;
      if (!(world && n == f->world)) {
        int r = pg_add(c, f, nm, ranks, n, NULL);
        if (r < 0) {
          free(ranks);
          return r;
        }
        out->pg = r;
      }
      free(ranks);
    }
  }
  /* all-to-all-v splits */
  const char *ss = str_item(args, "In split size");
  if (op == WL_COLL_ALLTOALL && ss) {
    cJSON tmp = {0};
    tmp.type = cJSON_String;
    tmp.valuestring = (char *)ss;
    double *sp;
    int n;
    char what[ST_ERR_MSG_MAX / 2];
    snprintf(what, sizeof what, "trace '%s': event %ld: 'In split size'", f->path, g->index);
    int prc = parse_int_list(&tmp, ST_BYTES_MAX, what, &sp, &n, c->err);
    if (prc)
      return prc;
    if (n == 0)
      free(sp);
    else {
      double sum = 0;
      for (int i = 0; i < n; i++)
        sum += sp[i];
      out->split = malloc((size_t)n * sizeof *out->split);
      if (out->split && sum > 0) {
        for (int i = 0; i < n; i++)
          out->split[i] = out->bytes * sp[i] / sum;
        out->nsplit = n;
      } else {
        free(out->split);
        out->split = NULL;
      }
      free(sp);
    }
  }
  (void)gsize;
  return 1;
}

static int compatible(int kernel_nccl, int op)
{
  if (kernel_nccl == -1)
    return op == WL_COLL_ALLTOALL;
  int kop = kernel_nccl - 1;
  if (kop == WL_COLL_ALLREDUCE)
    return op == WL_COLL_ALLREDUCE || op == WL_COLL_BARRIER;
  return kop == op;
}

static int role_of_pg(int pg) { return pg + 1; } /* role 0 is the world */

/* Build rank f's program. */
static int build_program(kt_ctx *c, wl_workload *wl, kt_file *f, double t0)
{
  char pname[64];
  snprintf(pname, sizeof pname, "rank %d", f->rank);
  int ns = f->ntids + 1;
  char **snames = calloc((size_t)ns, sizeof *snames);
  if (!snames)
    return st_err_set(c->err, ST_ENOMEM, "out of memory");
  snames[0] = strdup("host");
  for (int q = 0; q < f->ntids; q++) {
    char b[32];
    snprintf(b, sizeof b, "stream %d", f->tids[q]);
    snames[q + 1] = strdup(b);
  }
  int pi = wl_program_add(wl, pname, ns, (const char *const *)snames);
  for (int q = 0; q < ns; q++)
    free(snames[q]);
  free(snames);
  if (pi < 0)
    return st_err_set(c->err, ST_ENOMEM, "out of memory");
  wl_program *p = &wl->programs[pi];
  wl_rank_set(wl, f->rank, pi);

  /* the collectives' sizes, from the kernels' args or else the ET */
  size_t ncoll = 0;
  for (size_t j = 0; j < f->ngpu; j++)
    ncoll += f->gpu[j].nccl != 0;
  kt_coll *colls = calloc(ncoll ? ncoll : 1, sizeof *colls);
  if (!colls)
    return st_err_set(c->err, ST_ENOMEM, "out of memory");
  int rc = ST_OK;
  kt_etcoll *etc = NULL;
  int netc = 0, et_used = 0;
  size_t ci = 0;
  for (size_t j = 0; j < f->ngpu && !rc; j++) {
    kt_gpu *g = &f->gpu[j];
    if (!g->nccl)
      continue;
    kt_coll *kc = &colls[ci++];
    int got = coll_from_args(c, f, g, kc);
    if (got < 0) {
      rc = got;
      break;
    }
    if (got)
      continue;
    if (!et_used) {
      et_used = 1;
      if ((rc = et_load(c)))
        break;
      size_t w = c->net;
      for (size_t e = 0; e < c->net; e++)
        if (c->et_pids[e] == f->cpu_pid)
          w = e;
      if (w == c->net) {
        rc = st_err_set(c->err, ST_EINPUT,
                        "trace '%s': event %ld: NCCL kernel has no collective args and no host "
                        "execution trace has pid %.0f (give --et DIR)",
                        f->path, g->index, f->cpu_pid);
        break;
      }
      if ((rc = et_collectives(c, w, &etc, &netc)))
        break;
      size_t nk = 0;
      for (size_t q = 0; q < f->ngpu; q++)
        nk += f->gpu[q].nccl != 0;
      if ((size_t)netc != nk) {
        rc = st_err_set(c->err, ST_EINPUT,
                        "trace '%s': execution trace '%s' has %d collectives but "
                        "ProfilerStep#%d has %zu NCCL kernels",
                        f->path, c->et_paths[w], netc, f->step_n, nk);
        break;
      }
      c->stats->events_read += netc;
    }
    kt_etcoll *e = &etc[ci - 1];
    if (!compatible(g->nccl, e->op)) {
      const char *nm = str_item(g->ev, "name");
      rc = st_err_set(c->err, ST_EINPUT,
                      "trace '%s': event %ld: NCCL kernel '%.40s' does not match collective %zu "
                      "'%s' of the execution trace",
                      f->path, g->index, nm ? nm : "", ci - 1, wl_coll_name(e->op));
      break;
    }
    kc->op = e->op;
    kc->bytes = e->bytes;
    kc->pg = -1;
    for (int q = 0; e->pg[0] && q < c->npgs; q++)
      if (!strcmp(c->pgs[q].name, e->pg))
        kc->pg = q;
    if (e->op == WL_COLL_ALLGATHER) {
      int n = kc->pg >= 0 ? c->pgs[kc->pg].size : f->world;
      kc->bytes = e->bytes * n; /* the ET has one rank's input: whole output is n times it */
    }
    if (e->op == WL_COLL_ALLTOALL && e->nsplit > 0 && e->split_sum > 0) {
      kc->split = malloc((size_t)e->nsplit * sizeof *kc->split);
      if (!kc->split) {
        rc = st_err_set(c->err, ST_ENOMEM, "out of memory");
        break;
      }
      for (int q = 0; q < e->nsplit; q++)
        kc->split[q] = e->bytes * e->split[q] / e->split_sum;
      kc->nsplit = e->nsplit;
    }
  }
  etcoll_free(etc, netc);

  /* host stream: iteration marker and start offset */
  if (!rc) {
    wl_op m = wl_op_marker(0, WL_MARK_ITERATION, f->step_n);
    long om = wl_program_append(p, &m, NULL, 0);
    wl_op off = wl_op_compute(0, (f->step_ts - t0) * 1e-6);
    off.name = wl_program_string(p, "step start offset");
    long ooff = wl_program_append(p, &off, NULL, 0);
    if (om < 0 || ooff < 0)
      rc = st_err_set(c->err, ST_ENOMEM, "out of memory");
    double *prev_end = malloc((size_t)ns * sizeof *prev_end);
    long *last_op = malloc((size_t)ns * sizeof *last_op);
    if (!prev_end || !last_op)
      rc = st_err_set(c->err, ST_ENOMEM, "out of memory");
    for (int q = 0; !rc && q < ns; q++) {
      prev_end[q] = f->step_ts;
      last_op[q] = -1;
    }
    /* sync calls sorted by end, for "the CPU waited for the GPU" */
    ci = 0;
    double last_gpu_end = f->step_ts;
    for (size_t j = 0; j < f->ngpu && !rc; j++) {
      kt_gpu *g = &f->gpu[j];
      int s = g->stream;
      double pe = prev_end[s];
      double gap = g->ts - pe;
      uint32_t waits[2];
      uint32_t nw = 0;
      if (last_op[s] < 0)
        waits[nw++] = (uint32_t)ooff;
      if (gap > KT_EPS_US * 0.5) {
        /* what held the op back: the latest-ending op of another stream that
         * ended inside the gap, when the launch came earlier (a stream wait)
         * or the CPU sat in a synchronize call until about then */
        const kt_rt *l = find_launch(f, g->corr);
        double ready = l ? l->end : -INFINITY;
        const kt_gpu *d = NULL;
        for (size_t q = 0; q < j; q++) {
          const kt_gpu *h = &f->gpu[q];
          if (h->stream != s && h->end > pe && h->end <= g->ts + KT_EPS_US &&
              (!d || h->end > d->end))
            d = h;
        }
        int dep = 0;
        if (d) {
          if (ready < g->ts - KT_EPS_US && ready <= d->end + KT_EPS_US)
            dep = 1; /* launched in time: the stream waited for d */
          else
            for (size_t q = 0; q < f->nrt && !dep; q++) {
              const kt_rt *r = &f->rt[q];
              if (r->sync && r->end >= d->end - KT_EPS_US && r->end <= d->end + 3 * KT_EPS_US &&
                  r->ts < d->end && r->end <= ready + KT_EPS_US)
                dep = 1; /* the CPU blocked until d ended, then launched */
            }
        }
        double delay = gap;
        if (dep) {
          waits[nw++] = (uint32_t)d->op;
          delay = g->ts - (d->end > pe ? d->end : pe);
          if (delay < 0)
            delay = 0;
        }
        if (delay > 0 && c->opt->keep_launch_gaps) {
          wl_op dl = wl_op_compute(s, delay * 1e-6);
          dl.name = wl_program_string(p, dep ? "dependency gap" : "launch gap");
          long di = wl_program_append(p, &dl, waits, nw);
          if (di < 0) {
            rc = st_err_set(c->err, ST_ENOMEM, "out of memory");
            break;
          }
          nw = 0;
          c->stats->gaps++;
          c->stats->gap_s += delay * 1e-6;
        }
      }
      const char *nm = str_item(g->ev, "name");
      char sn[96];
      short_name(nm ? nm : "", sn, sizeof sn);
      wl_op op;
      if (g->nccl) {
        kt_coll *kc = &colls[ci++];
        op = wl_op_coll(s, kc->op, role_of_pg(kc->pg), kc->bytes);
        if (kc->split) {
          int n = kc->pg >= 0 ? c->pgs[kc->pg].size : f->world;
          if (kc->nsplit != n) {
            rc = st_err_set(c->err, ST_EINPUT,
                            "trace '%s': event %ld: all-to-all has %d split sizes for a group of "
                            "%d ranks",
                            f->path, g->index, kc->nsplit, n);
            break;
          }
          op.split_first = wl_program_splits(p, kc->split, kc->nsplit);
          op.flags |= WL_OPF_SPLITS;
        }
        c->stats->coll_ops++;
        c->stats->rank_comm_s[f->rank] += (g->end - g->ts) * 1e-6;
      } else {
        op = wl_op_compute(s, (g->end - g->ts) * 1e-6);
        op.sub = (uint8_t)class_of_kernel(sn, g->kind);
        c->stats->compute_ops++;
        c->stats->rank_compute_s[f->rank] += op.duration_s;
      }
      op.name = wl_program_string(p, sn);
      long oi = wl_program_append(p, &op, waits, nw);
      if (oi < 0) {
        rc = st_err_set(c->err, ST_ENOMEM, "out of memory");
        break;
      }
      g->op = oi;
      last_op[s] = oi;
      if (g->end > prev_end[s])
        prev_end[s] = g->end;
      if (g->end > last_gpu_end)
        last_gpu_end = g->end;
    }
    /* host tail: the step ends after every stream has finished */
    if (!rc) {
      uint32_t *w = malloc((size_t)ns * sizeof *w);
      uint32_t nw = 0;
      if (!w)
        rc = st_err_set(c->err, ST_ENOMEM, "out of memory");
      for (int q = 1; !rc && q < ns; q++)
        if (last_op[q] >= 0)
          w[nw++] = (uint32_t)last_op[q];
      if (!rc) {
        double tail = f->step_end - last_gpu_end;
        wl_op t = wl_op_compute(0, (tail > 0 ? tail : 0) * 1e-6);
        t.name = wl_program_string(p, "step end (host)");
        if (wl_program_append(p, &t, w, nw) < 0)
          rc = st_err_set(c->err, ST_ENOMEM, "out of memory");
      }
      free(w);
    }
    free(prev_end);
    free(last_op);
  }
  for (size_t q = 0; q < ncoll; q++)
    free(colls[q].split);
  free(colls);
  return rc;
}

/* The parallelism a process group's pg_desc names (its words: "dp",
 * "data_parallel", "fsdp", "tp", "tensor", "pp", "pipeline", "cp", "ep",
 * "expert"...), WL_COMM_OTHER when it names none or several. */
static int kind_of_desc(const char *desc)
{
  static const struct {
    const char *word;
    int kind;
  } words[] = {
      {"dp", WL_COMM_DP},       {"ddp", WL_COMM_DP},      {"fsdp", WL_COMM_DP},
      {"data", WL_COMM_DP},     {"zero", WL_COMM_DP},     {"replicate", WL_COMM_DP},
      {"tp", WL_COMM_TP},       {"tensor", WL_COMM_TP},   {"pp", WL_COMM_PP},
      {"pipeline", WL_COMM_PP}, {"pipe", WL_COMM_PP},     {"cp", WL_COMM_CP},
      {"context", WL_COMM_CP},  {"ep", WL_COMM_EP},       {"expert", WL_COMM_EP},
      {"moe", WL_COMM_EP},
  };
  int kind = WL_COMM_OTHER;
  const char *s = desc;
  while (*s) {
    while (*s && !isalnum((unsigned char)*s))
      s++;
    size_t n = 0;
    while (isalpha((unsigned char)s[n]))
      n++;
    for (size_t i = 0; n && i < sizeof words / sizeof *words; i++)
      if (strlen(words[i].word) == n && !strncasecmp(s, words[i].word, n)) {
        if (kind != WL_COMM_OTHER && kind != words[i].kind)
          return WL_COMM_OTHER;
        kind = words[i].kind;
      }
    s += n;
    while (*s && isalnum((unsigned char)*s))
      s++;
  }
  return kind;
}

/* ---- entry ------------------------------------------------------------------- */

static int is_kineto_name(const char *n)
{
  return (st_str_ends_with(n, ".json") || st_str_ends_with(n, ".json.gz")) &&
         (strstr(n, "trace") || strstr(n, "rank") || strstr(n, "worker"));
}

static void ctx_release(kt_ctx *c)
{
  for (int i = 0; i < c->nfiles; i++) {
    kt_file *f = &c->files[i];
    free(f->path);
    free(f->data);
    cJSON_Delete(f->root);
    free(f->gpu);
    free(f->rt);
    free(f->tids);
  }
  free(c->files);
  for (int i = 0; i < c->npgs; i++) {
    free(c->pgs[i].name);
    free(c->pgs[i].ranks);
  }
  free(c->pgs);
  for (size_t i = 0; i < c->net; i++) {
    free(c->et_paths[i]);
    cJSON_Delete(c->et_roots[i]);
  }
  free(c->et_paths);
  free(c->et_roots);
  free(c->et_pids);
}

static int list_inputs(const char *spec, char ***names, size_t *count, st_err *err)
{
  char **v = NULL;
  size_t n = 0;
  if (!strchr(spec, ',')) {
    /* a folder, or one file */
    char **d;
    size_t nd;
    st_err quiet;
    if (!st_dir_list(spec, is_kineto_name, &d, &nd, &quiet)) {
      if (nd == 0) {
        free(d);
        return st_err_set(err, ST_EINPUT,
                          "trace '%s': no Kineto trace files (*trace*.json[.gz]) in the folder",
                          spec);
      }
      *names = d;
      *count = nd;
      return ST_OK;
    }
  }
  const char *s = spec;
  while (*s) {
    const char *e = strchr(s, ',');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    char **nv = realloc(v, (n + 1) * sizeof *nv);
    if (!nv || !(nv[n] = strndup(s, len))) {
      st_str_list_free(nv ? nv : v, n);
      return st_err_set(err, ST_ENOMEM, "out of memory");
    }
    v = nv;
    n++;
    s += len;
    if (*s == ',')
      s++;
  }
  *names = v;
  *count = n;
  return ST_OK;
}

int tr__kineto_import(const char *path, const tr_options *opt, wl_workload **out,
                      tr_import_stats *stats, st_err *err)
{
  kt_ctx c;
  memset(&c, 0, sizeof c);
  c.opt = opt;
  c.stats = stats;
  c.err = err;
  char **names = NULL;
  size_t n = 0;
  int rc = list_inputs(path, &names, &n, err);
  if (rc)
    return rc;
  c.files = calloc(n, sizeof *c.files);
  if (!c.files) {
    st_str_list_free(names, n);
    return st_err_set(err, ST_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    c.files[i].path = names[i];
    c.nfiles++;
  }
  free(names);
  wl_workload *wl = NULL;
  for (int i = 0; i < c.nfiles && !rc; i++)
    rc = read_file(&c, &c.files[i]);

  int world = 0, recorded = 0;
  if (!rc) {
    /* the world size: as recorded (every file alike), else --gpus, else the
     * files; ranks without a file run a given rank's program */
    const kt_file *said = NULL;
    for (int i = 0; i < c.nfiles && !rc; i++) {
      kt_file *f = &c.files[i];
      if (f->world <= 0)
        continue;
      if (said && f->world != said->world)
        rc = st_err_set(err, ST_EINPUT,
                        "trace '%s': distributedInfo.world_size is %d but '%s' says %d: the "
                        "files are not of one job",
                        f->path, f->world, said->path, said->world);
      said = f;
    }
    recorded = said != NULL;
    for (int i = 0; i < c.nfiles && !rc; i++)
      if (said && c.files[i].world <= 0)
        rc = st_err_set(err, ST_EINPUT,
                        "trace '%s': no distributedInfo.world_size, but '%s' says %d: the files "
                        "are not of one job",
                        c.files[i].path, said->path, said->world);
    world = said ? said->world : 0;
    if (!rc && opt->num_gpus > 0) {
      if (said && opt->num_gpus != world)
        rc = st_err_set(err, ST_EUSAGE,
                        "--gpus %d: trace '%s' records a world of %d ranks (to replay the job "
                        "at another size, give --world %d)",
                        opt->num_gpus, said->path, world, opt->num_gpus);
      world = opt->num_gpus;
    }
    if (world <= 0)
      world = c.nfiles;
    if (world <= 0 || world > 1000000)
      world = 1;
    for (int i = 0; i < c.nfiles; i++)
      c.files[i].world = world;
    char *seen = calloc((size_t)world, 1);
    if (!rc && !seen)
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
    for (int i = 0; !rc && i < c.nfiles; i++) {
      kt_file *f = &c.files[i];
      if (f->rank >= world)
        rc = st_err_set(err, ST_EINPUT, "trace '%s': rank %d is outside world size %d%s", f->path,
                        f->rank, world, recorded ? "" : " (give the world size: --gpus N)");
      else if (seen[f->rank])
        rc = st_err_set(err, ST_EINPUT, "trace '%s': rank %d appears in two files", f->path,
                        f->rank);
      else
        seen[f->rank] = 1;
    }
    free(seen);
  }
  double t0 = INFINITY, t1 = -INFINITY;
  for (int i = 0; !rc && i < c.nfiles; i++) {
    if (c.files[i].step_ts < t0)
      t0 = c.files[i].step_ts;
    if (c.files[i].step_end > t1)
      t1 = c.files[i].step_end;
  }
  if (!rc) {
    /* Roles: the world, then one per process group.  Groups named by
     * kernels' args are added while building, so collect them first. */
    for (int i = 0; i < c.nfiles && !rc; i++)
      for (size_t j = 0; j < c.files[i].ngpu && !rc; j++) {
        kt_coll kc;
        memset(&kc, 0, sizeof kc);
        if (c.files[i].gpu[j].nccl) {
          int got = coll_from_args(&c, &c.files[i], &c.files[i].gpu[j], &kc);
          if (got < 0)
            rc = got;
          free(kc.split);
        }
      }
  }
  if (!rc) {
    int nroles = c.npgs + 1;
    char **roles = calloc((size_t)nroles, sizeof *roles);
    if (!roles)
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
    for (int i = 0; !rc && i < nroles; i++) {
      char b[96];
      snprintf(b, sizeof b, i ? "pg:%s" : "world", i ? c.pgs[i - 1].name : "");
      roles[i] = strdup(b);
    }
    if (!rc)
      wl = wl_workload_create(world, nroles, (const char *const *)roles);
    for (int i = 0; roles && i < nroles; i++)
      free(roles[i]);
    free(roles);
    if (!rc && !wl)
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
  }
  if (!rc) {
    int32_t *all = malloc((size_t)world * sizeof *all);
    if (!all)
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
    for (int r = 0; !rc && r < world; r++)
      all[r] = r;
    int cw = rc ? -1 : wl_comm_add(wl, "world", WL_COMM_WORLD, world, all);
    free(all);
    if (!rc && cw < 0)
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
    for (int r = 0; !rc && r < world; r++)
      wl_rank_set_comm(wl, r, 0, cw);
    for (int g = 0; !rc && g < c.npgs; g++) {
      char b[96];
      snprintf(b, sizeof b, "pg %s", c.pgs[g].name);
      int ci = wl_comm_add(wl, b, kind_of_desc(c.pgs[g].desc), c.pgs[g].size, c.pgs[g].ranks);
      if (ci < 0) {
        rc = st_err_set(err, ST_ENOMEM, "out of memory");
        break;
      }
      for (int k = 0; k < c.pgs[g].size; k++)
        if (c.pgs[g].ranks[k] >= 0 && c.pgs[g].ranks[k] < world)
          wl_rank_set_comm(wl, c.pgs[g].ranks[k], g + 1, ci);
    }
  }
  if (!rc)
    rc = tr__stats_alloc_ranks(stats, world, err);
  /* programs in rank order, so that program i is rank i's */
  for (int r = 0; !rc && r < world; r++)
    for (int i = 0; i < c.nfiles && !rc; i++)
      if (c.files[i].rank == r) {
        stats->rank_compute_s[r] = stats->rank_comm_s[r] = 0;
        rc = build_program(&c, wl, &c.files[i], t0);
        if (!stats->source_device[0])
          snprintf(stats->source_device, sizeof stats->source_device, "%s", c.files[i].device);
        stats->rank_measured_s[r] = (c.files[i].step_end - c.files[i].step_ts) * 1e-6;
        stats->rank_start_s[r] = (c.files[i].step_ts - t0) * 1e-6;
      }
  /* one rank stands for all: the ranks without a file run a given one's program */
  if (!rc)
    rc = tr__spmd_fill(wl, stats, path, err);
  stats->groups_known = recorded;
  if (!rc) {
    stats->measured_step_s = (t1 - t0) * 1e-6;
    wl->meta.iterations = 1;
    rc = tr__finish(wl, "kineto", path, err);
  }
  ctx_release(&c);
  if (rc) {
    wl_workload_destroy(wl);
    tr_import_stats_release(stats);
    return rc;
  }
  *out = wl;
  return ST_OK;
}
