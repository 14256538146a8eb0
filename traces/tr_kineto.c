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
 *
 * This file builds programs and communicators; reading the JSON events and
 * the execution-trace join is tr_kineto_read.c (shared names: tr_int.h).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "tr_int.h"

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
  const char *cname = tr__kt_str_item(args, "Collective name");
  if (!cname)
    return 0;
  int op = tr__kt_coll_from_torch_name(cname);
  if (op == -2)
    return st_err_set(c->err, ST_EINPUT,
                      "trace '%s': event %ld: point-to-point '%s' is not supported (no peer rank)",
                      f->path, g->index, cname);
  if (op < 0)
    return st_err_set(c->err, ST_EINPUT, "trace '%s': event %ld: collective '%s' is unknown",
                      f->path, g->index, cname);
  double in_n = -1, out_n = -1, gsize = 0;
  tr__kt_ev_number(args, "In msg nelems", &in_n);
  tr__kt_ev_number(args, "Out msg nelems", &out_n);
  tr__kt_ev_number(args, "Group size", &gsize);
  const char *dt = tr__kt_str_item(args, "dtype");
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
  const char *pgn = tr__kt_str_item(args, "Process Group Name");
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
    int prc = tr__kt_parse_ranks(pgr, what, &ranks, &n, c->err);
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
        int r = tr__kt_pg_add(c, f, nm, ranks, n, NULL);
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
  const char *ss = tr__kt_str_item(args, "In split size");
  if (op == WL_COLL_ALLTOALL && ss) {
    cJSON tmp = {0};
    tmp.type = cJSON_String;
    tmp.valuestring = (char *)ss;
    double *sp;
    int n;
    char what[ST_ERR_MSG_MAX / 2];
    snprintf(what, sizeof what, "trace '%s': event %ld: 'In split size'", f->path, g->index);
    int prc = tr__kt_parse_int_list(&tmp, ST_BYTES_MAX, what, &sp, &n, c->err);
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
/* The sizes of rank f's collectives, one per NCCL kernel in colls: from the
 * kernels' args, else from the host execution trace of f's pid. */
static int resolve_colls(kt_ctx *c, kt_file *f, kt_coll *colls)
{
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
      if ((rc = tr__kt_et_load(c)))
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
      if ((rc = tr__kt_et_collectives(c, w, &etc, &netc)))
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
      const char *nm = tr__kt_str_item(g->ev, "name");
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
  tr__kt_etcoll_free(etc, netc);
  return rc;
}

/* What held GPU op j back in the idle gap after pe on its stream: the
 * latest-ending op of another stream that ended inside the gap, when the
 * launch came earlier (a stream wait) or the CPU sat in a synchronize call
 * until about then; NULL when nothing did. */
static const kt_gpu *held_by(const kt_file *f, size_t j, double pe)
{
  const kt_gpu *g = &f->gpu[j];
  int s = g->stream;
  const kt_rt *l = tr__kt_find_launch(f, g->corr);
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
  return dep ? d : NULL;
}

/* Rank f's ops into p: the host stream's marker and start offset, every GPU
 * op after its gap (a delay and a wait) and the host tail. */
static int emit_ops(kt_ctx *c, wl_program *p, kt_file *f, kt_coll *colls, int ns, double t0)
{
  int rc = ST_OK;
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
  size_t ci = 0;
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
      const kt_gpu *d = held_by(f, j, pe);
      int dep = d != NULL;
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
    const char *nm = tr__kt_str_item(g->ev, "name");
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
  return rc;
}

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
  int rc = resolve_colls(c, f, colls);
  if (!rc)
    rc = emit_ops(c, p, f, colls, ns, t0);
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

/* The world size: as recorded (every file alike), else --gpus, else the
 * files; every file's rank inside it and in one file only.  *recorded: the
 * files record it. */
static int check_world(kt_ctx *c, int *world_out, int *recorded_out)
{
  const tr_options *opt = c->opt;
  st_err *err = c->err;
  int rc = ST_OK, world = 0, recorded = 0;
  const kt_file *said = NULL;
  for (int i = 0; i < c->nfiles && !rc; i++) {
    kt_file *f = &c->files[i];
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
  for (int i = 0; i < c->nfiles && !rc; i++)
    if (said && c->files[i].world <= 0)
      rc = st_err_set(err, ST_EINPUT,
                      "trace '%s': no distributedInfo.world_size, but '%s' says %d: the files "
                      "are not of one job",
                      c->files[i].path, said->path, said->world);
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
    world = c->nfiles;
  if (world <= 0 || world > 1000000)
    world = 1;
  for (int i = 0; i < c->nfiles; i++)
    c->files[i].world = world;
  char *seen = calloc((size_t)world, 1);
  if (!rc && !seen)
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
  for (int i = 0; !rc && i < c->nfiles; i++) {
    kt_file *f = &c->files[i];
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
  *world_out = world;
  *recorded_out = recorded;
  return rc;
}

/* The communicators: "world" of every rank (role 0), then one per process
 * group (role g + 1). */
static int add_comms(kt_ctx *c, wl_workload *wl, int world)
{
  st_err *err = c->err;
  int rc = ST_OK;
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
  for (int g = 0; !rc && g < c->npgs; g++) {
    char b[96];
    snprintf(b, sizeof b, "pg %s", c->pgs[g].name);
    int ci = wl_comm_add(wl, b, kind_of_desc(c->pgs[g].desc), c->pgs[g].size, c->pgs[g].ranks);
    if (ci < 0) {
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
      break;
    }
    for (int k = 0; k < c->pgs[g].size; k++)
      if (c->pgs[g].ranks[k] >= 0 && c->pgs[g].ranks[k] < world)
        wl_rank_set_comm(wl, c->pgs[g].ranks[k], g + 1, ci);
  }
  return rc;
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
    rc = tr__kt_read_file(&c, &c.files[i]);

  int world = 0, recorded = 0;
  if (!rc)
    rc = check_world(&c, &world, &recorded);
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
  if (!rc)
    rc = add_comms(&c, wl, world);
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
