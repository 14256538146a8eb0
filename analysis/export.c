/* export.c — a results file's timeline as a Chrome / Perfetto trace (the
 * JSON "Trace Event Format"), for ui.perfetto.dev or chrome://tracing.
 *
 * Mapping (docs/results-format.md, "Perfetto export"):
 *   - grouped by rank (the default): one process per rank, pid = rank,
 *     named "rank N (gpu-H)"; one thread per stream, tid = stream index,
 *     named after the stream;
 *   - grouped by node: one process per node, pid = node, named "node N";
 *     one thread per (rank, stream), tid = rank x S + stream (S = streams
 *     per rank at most), named "gpu-H rank R <stream>", in that order;
 *   - one complete event ("ph":"X") per /timeline row, in file order, so the
 *     X events and the timeline rows match one to one; ts and dur in
 *     microseconds; args hold bytes, flops, the peer rank (send/recv), the
 *     communicator and, for collectives, its members ("peers", a rank list
 *     like "0-3,8");
 *   - a flow (an "s" event on the sender's slice, an "f" event on the
 *     receiver's) for every send row matched with a recv row of the peer
 *     that ends at the same time: the transfer ends for both sides together,
 *     while a recv posted early starts before its send (it waits), so the
 *     ends match and the starts need not.  Equal ends between the same two
 *     ranks are paired in start order.  The flow is drawn at the transfer's
 *     start (the later of the two starts), which lies in both slices;
 *   - when /links has rows, a process "links" (pid = number of ranks) with a
 *     counter per link: its mean utilisation over the run (bytes carried /
 *     bandwidth / run time) and its peak, from time 0 to the end of the run.
 *     The results file holds no utilisation over time, only these.
 * The trace is written to "<path>.tmp.<pid>" and renamed when complete;
 * gzip-compressed when the path ends in ".gz".
 */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include <cjson/cJSON.h>

#include "an_int.h"
#include "analysis.h"

typedef struct out_t {
  gzFile gz;
  int bad;
  st_buf str; /* scratch for one escaped string */
} out_t;

static void put(out_t *o, const char *s)
{
  if (!o->bad && gzputs(o->gz, s) < 0)
    o->bad = 1;
}

static void putf(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(out_t *o, const char *fmt, ...)
{
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof buf) { /* numbers only: never this long */
    o->bad = 1;
    return;
  }
  put(o, buf);
}

static void put_str(out_t *o, const char *s)
{
  st_buf_reset(&o->str);
  if (st_buf_json_str(&o->str, s))
    o->bad = 1;
  else
    put(o, o->str.data);
}

/* Microseconds, to the nanosecond. */
static double us(double s) { return s * 1e6; }

/* A send or recv row, keyed by (src, dst, end, start). */
typedef struct p2p_key {
  int32_t src, dst;
  double end_s, start_s;
  size_t row;
} p2p_key;

/* Order of the match: ranks and end time only. */
static int cmp_p2p_match(const p2p_key *x, const p2p_key *y)
{
  if (x->src != y->src)
    return x->src < y->src ? -1 : 1;
  if (x->dst != y->dst)
    return x->dst < y->dst ? -1 : 1;
  if (x->end_s != y->end_s)
    return x->end_s < y->end_s ? -1 : 1;
  return 0;
}

static int cmp_p2p(const void *a, const void *b)
{
  const p2p_key *x = a, *y = b;
  int c = cmp_p2p_match(x, y);
  if (c)
    return c;
  if (x->start_s != y->start_s)
    return x->start_s < y->start_s ? -1 : 1;
  return (x->row > y->row) - (x->row < y->row);
}

/* Pairs (send row, recv row) matched by ranks and times; *pairs is new (caller frees). */
static int match_p2p(const an_results *r, size_t (**pairs)[2], size_t *npairs)
{
  size_t ns = 0, nr = 0;
  for (size_t i = 0; i < r->num_timeline; i++) {
    ns += !strcmp(r->timeline[i].kind, "send");
    nr += !strcmp(r->timeline[i].kind, "recv");
  }
  p2p_key *s = malloc((ns ? ns : 1) * sizeof *s), *v = malloc((nr ? nr : 1) * sizeof *v);
  size_t(*p)[2] = malloc((ns ? ns : 1) * sizeof *p);
  if (!s || !v || !p) {
    free(s);
    free(v);
    free(p);
    return -1;
  }
  ns = nr = 0;
  for (size_t i = 0; i < r->num_timeline; i++) {
    const an_timeline_row *t = &r->timeline[i];
    if (!strcmp(t->kind, "send"))
      s[ns++] = (p2p_key){t->rank, t->peer, t->end_s, t->start_s, i};
    else if (!strcmp(t->kind, "recv"))
      v[nr++] = (p2p_key){t->peer, t->rank, t->end_s, t->start_s, i};
  }
  qsort(s, ns, sizeof *s, cmp_p2p);
  qsort(v, nr, sizeof *v, cmp_p2p);
  size_t i = 0, j = 0, n = 0;
  while (i < ns && j < nr) {
    int c = cmp_p2p_match(&s[i], &v[j]);
    if (c == 0) {
      p[n][0] = s[i++].row;
      p[n++][1] = v[j++].row;
    } else if (c < 0) {
      i++;
    } else {
      j++;
    }
  }
  free(s);
  free(v);
  *pairs = p;
  *npairs = n;
  return 0;
}

typedef struct thread_key {
  int32_t rank, stream;
  size_t row;
} thread_key;

static int cmp_thread(const void *a, const void *b)
{
  const thread_key *x = a, *y = b;
  if (x->rank != y->rank)
    return x->rank < y->rank ? -1 : 1;
  if (x->stream != y->stream)
    return x->stream < y->stream ? -1 : 1;
  return (x->row > y->row) - (x->row < y->row);
}

/* Where a (rank, stream) goes: process and thread ids. */
typedef struct layout {
  int group;        /* an_export_group */
  int gpn;          /* GPUs per node (node grouping) */
  int32_t streams;  /* S: largest stream index + 1 */
  int32_t nranks;   /* rank index bound: largest rank + 1 */
  int32_t *host;    /* [rank] GPU index, -1 when the rank has no /ranks row */
  int nprocs;       /* processes (ranks or nodes) */
} layout;

static int pid_of(const layout *L, int32_t rank)
{
  if (L->group == AN_GROUP_RANK)
    return rank;
  int32_t h = rank >= 0 && rank < L->nranks ? L->host[rank] : -1;
  return h >= 0 ? h / L->gpn : 0;
}

static long long tid_of(const layout *L, int32_t rank, int32_t stream)
{
  return L->group == AN_GROUP_RANK ? stream : (long long)rank * L->streams + stream;
}

/* GPUs per node from the results' cluster JSON, or 0 when it does not say. */
static int gpus_per_node(const an_results *r)
{
  cJSON *doc = r->cluster_json ? cJSON_Parse(r->cluster_json) : NULL;
  if (!doc)
    return 0;
  const cJSON *g = cJSON_GetObjectItemCaseSensitive(doc, "gpus_per_node");
  if (!cJSON_IsNumber(g))
    g = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "node"), "gpus");
  int v = cJSON_IsNumber(g) && g->valuedouble >= 1 && g->valuedouble < 1e6 ? (int)g->valuedouble : 0;
  cJSON_Delete(doc);
  return v;
}

/* threads: the timeline's (rank, stream, row) sorted, or NULL when out of memory */
static void write_trace(out_t *o, const an_results *r, const layout *L, thread_key *threads,
                        size_t (*pairs)[2], size_t npairs, an_export_counts *cnt)
{
  put(o, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"simtrain\",\"workload\":");
  put_str(o, r->workload_name ? r->workload_name : "");
  put(o, ",\"cluster\":");
  put_str(o, r->cluster_name ? r->cluster_name : "");
  put(o, "},\"traceEvents\":[\n");
  int first = 1;
#define SEP() (first ? (first = 0, "") : ",\n")
  /* processes: one per rank, or one per node */
  for (int i = 0; i < L->nprocs; i++) {
    char name[64];
    int pid = i;
    if (L->group == AN_GROUP_RANK) {
      const an_rank_row *k = &r->ranks[i];
      snprintf(name, sizeof name, "rank %d (gpu-%d)", k->rank, k->host);
      pid = k->rank;
    } else {
      snprintf(name, sizeof name, "node %d", i);
    }
    putf(o, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":",
         SEP(), pid);
    put_str(o, name);
    put(o, "}}");
    putf(o, ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,"
            "\"args\":{\"sort_index\":%d}}",
         pid, pid);
    cnt->processes++;
  }
  /* threads: one per (rank, stream) in the timeline, named from its first row */
  size_t nt = 0;
  for (size_t i = 0; threads && i < r->num_timeline; i++)
    if (nt == 0 || threads[nt - 1].rank != threads[i].rank ||
        threads[nt - 1].stream != threads[i].stream)
      threads[nt++] = threads[i]; /* sorted: the first row of each (rank, stream) */
  for (size_t i = 0; i < nt; i++) {
    const an_timeline_row *t = &r->timeline[threads[i].row];
    int pid = pid_of(L, t->rank);
    long long tid = tid_of(L, t->rank, t->stream);
    putf(o, "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%lld,"
            "\"args\":{\"name\":",
         SEP(), pid, tid);
    if (L->group == AN_GROUP_RANK) {
      put_str(o, t->stream_name);
    } else {
      char name[96];
      int32_t h = t->rank >= 0 && t->rank < L->nranks ? L->host[t->rank] : -1;
      snprintf(name, sizeof name, "gpu-%d rank %d %s", h, t->rank, t->stream_name);
      put_str(o, name);
    }
    put(o, "}}");
    if (L->group != AN_GROUP_RANK)
      putf(o, ",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%lld,"
              "\"args\":{\"sort_index\":%lld}}",
           pid, tid, tid);
    cnt->threads++;
  }
  /* slices */
  for (size_t i = 0; i < r->num_timeline && !o->bad; i++) {
    const an_timeline_row *t = &r->timeline[i];
    putf(o, "%s{\"ph\":\"X\",\"pid\":%d,\"tid\":%lld,\"ts\":%.3f,\"dur\":%.3f,\"name\":",
         SEP(), pid_of(L, t->rank), tid_of(L, t->rank, t->stream), us(t->start_s),
         us(t->end_s - t->start_s));
    put_str(o, t->name);
    put(o, ",\"cat\":");
    put_str(o, t->kind);
    char nb[32], nf[32];
    putf(o, ",\"args\":{\"bytes\":%s,\"flops\":%s", st_json_num(t->bytes, nb, sizeof nb),
         st_json_num(t->flops, nf, sizeof nf));
    if (t->peer >= 0)
      putf(o, ",\"peer\":%d", t->peer);
    if (t->comm >= 0 && (size_t)t->comm < r->num_comms) {
      const an_comm_row *c = &r->comms[t->comm];
      put(o, ",\"comm\":");
      put_str(o, c->name);
      if (!strcmp(t->kind, "coll")) {
        char peers[256];
        an__format_rank_list(&r->comm_ranks[c->first], (size_t)c->size, peers, sizeof peers);
        putf(o, ",\"nranks\":%d,\"peers\":", c->size);
        put_str(o, peers);
      }
    }
    put(o, "}}");
    cnt->slices++;
  }
  /* flows between matched send/recv slices */
  for (size_t i = 0; i < npairs; i++) {
    const an_timeline_row *s = &r->timeline[pairs[i][0]], *v = &r->timeline[pairs[i][1]];
    double ts = us(fmax(s->start_s, v->start_s));
    putf(o, "%s{\"ph\":\"s\",\"id\":%zu,\"pid\":%d,\"tid\":%lld,\"ts\":%.3f,\"name\":\"p2p\","
            "\"cat\":\"p2p\"}",
         SEP(), i + 1, pid_of(L, s->rank), tid_of(L, s->rank, s->stream), ts);
    putf(o, ",\n{\"ph\":\"f\",\"bp\":\"e\",\"id\":%zu,\"pid\":%d,\"tid\":%lld,\"ts\":%.3f,"
            "\"name\":\"p2p\",\"cat\":\"p2p\"}",
         i + 1, pid_of(L, v->rank), tid_of(L, v->rank, v->stream), ts);
    cnt->flows++;
  }
  /* link counters */
  double run_s = 0;
  for (size_t i = 0; i < r->num_ranks; i++)
    run_s = fmax(run_s, r->ranks[i].finish_s);
  if (r->num_links > 0 && run_s > 0) {
    int pid = L->group == AN_GROUP_RANK ? (int)r->num_ranks : L->nprocs;
    putf(o, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,"
            "\"args\":{\"name\":\"links\"}}",
         SEP(), pid);
    for (size_t i = 0; i < r->num_links; i++) {
      const an_link_row *l = &r->links[i];
      double mean = l->bandwidth_Bps > 0 ? l->bytes / l->bandwidth_Bps / run_s : 0;
      for (int end = 0; end < 2; end++) {
        putf(o, ",\n{\"ph\":\"C\",\"pid\":%d,\"tid\":0,\"ts\":%.3f,\"name\":", pid,
             end ? us(run_s) : 0.0);
        put_str(o, l->name);
        putf(o, ",\"args\":{\"mean_util\":%.6g,\"peak_util\":%.6g}}", end ? 0.0 : mean,
             end ? 0.0 : l->peak_util);
      }
      cnt->counters++;
    }
  }
#undef SEP
  put(o, "\n]}\n");
}

/* The layout of processes and threads; L->host is new (caller frees). */
static int layout_init(const an_results *r, int group, const char *path, layout *L, st_err *err)
{
  memset(L, 0, sizeof *L);
  L->group = group;
  L->nranks = 0;
  for (size_t i = 0; i < r->num_ranks; i++)
    if (r->ranks[i].rank >= L->nranks)
      L->nranks = r->ranks[i].rank + 1;
  for (size_t i = 0; i < r->num_timeline; i++) {
    if (r->timeline[i].rank >= L->nranks)
      L->nranks = r->timeline[i].rank + 1;
    if (r->timeline[i].stream >= L->streams)
      L->streams = r->timeline[i].stream + 1;
  }
  L->host = malloc(((size_t)L->nranks + 1) * sizeof *L->host);
  if (!L->host)
    return st_err_set(err, ST_ENOMEM, "trace '%s': out of memory", path);
  for (int32_t i = 0; i < L->nranks; i++)
    L->host[i] = -1;
  int32_t top_host = -1;
  for (size_t i = 0; i < r->num_ranks; i++) {
    if (r->ranks[i].rank >= 0)
      L->host[r->ranks[i].rank] = r->ranks[i].host;
    if (r->ranks[i].host > top_host)
      top_host = r->ranks[i].host;
  }
  if (group == AN_GROUP_RANK) {
    L->nprocs = (int)r->num_ranks;
    return ST_OK;
  }
  if ((L->gpn = gpus_per_node(r)) == 0) {
    free(L->host);
    L->host = NULL;
    return st_err_set(err, ST_EINPUT,
                      "results '%s': '/config' cluster does not say how many GPUs a node has "
                      "(node.gpus or gpus_per_node): group by rank instead", r->path);
  }
  L->nprocs = top_host >= 0 ? top_host / L->gpn + 1 : 0;
  return ST_OK;
}

int an_export_perfetto(const an_results *r, const char *path, an_export_counts *counts,
                       st_err *err)
{
  return an_export_perfetto_grouped(r, path, AN_GROUP_RANK, counts, err);
}

int an_export_perfetto_grouped(const an_results *r, const char *path, int group,
                               an_export_counts *counts, st_err *err)
{
  if (r->num_timeline == 0)
    return st_err_set(err, ST_EINPUT,
                      "results '%s': no '/timeline' to export (run with --timeline)", r->path);
  /* JSON has no NaN or inf: a row whose times are not finite is bad input */
  for (size_t i = 0; i < r->num_timeline; i++) {
    const an_timeline_row *t = &r->timeline[i];
    if (st_num_check(t->start_s, ST_NUM_REAL, -INFINITY, INFINITY, err,
                     "results '%s': /timeline row %zu: 'start_s'", r->path, i) ||
        st_num_check(t->end_s, ST_NUM_REAL, -INFINITY, INFINITY, err,
                     "results '%s': /timeline row %zu: 'end_s'", r->path, i))
      return ST_EINPUT;
  }
  layout L;
  int lrc = layout_init(r, group, path, &L, err);
  if (lrc != ST_OK)
    return lrc;
  size_t(*pairs)[2] = NULL;
  size_t npairs = 0;
  if (match_p2p(r, &pairs, &npairs) < 0) {
    free(L.host);
    return st_err_set(err, ST_ENOMEM, "trace '%s': out of memory matching send/recv", path);
  }
  st_outfile of;
  int orc = st_out_begin(&of, path, err);
  if (orc) {
    free(pairs);
    free(L.host);
    return orc;
  }
  const char *tmp = of.tmp;
  int gz = st_str_ends_with(path, ".gz");
  out_t o = {gzopen(tmp, gz ? "wb6" : "wbT"), 0, {NULL, 0, 0}};
  if (!o.gz) {
    int e = errno;
    st_out_commit(&of, 0, path, NULL);
    free(pairs);
    free(L.host);
    return st_err_set(err, ST_EIO, "trace '%s': cannot create '%s': %s", path, tmp,
                      e ? strerror(e) : "out of memory");
  }
  gzbuffer(o.gz, 1 << 18);
  thread_key *threads = malloc(r->num_timeline * sizeof *threads);
  if (!threads) {
    gzclose(o.gz);
    st_out_commit(&of, 0, path, NULL);
    free(pairs);
    free(L.host);
    return st_err_set(err, ST_ENOMEM, "trace '%s': out of memory", path);
  }
  for (size_t i = 0; i < r->num_timeline; i++)
    threads[i] = (thread_key){r->timeline[i].rank, r->timeline[i].stream, i};
  qsort(threads, r->num_timeline, sizeof *threads, cmp_thread);
  an_export_counts cnt = {0};
  write_trace(&o, r, &L, threads, pairs, npairs, &cnt);
  st_buf_release(&o.str);
  free(threads);
  free(pairs);
  free(L.host);
  int e = errno;
  if (gzclose(o.gz) != Z_OK)
    o.bad = 1;
  if (o.bad) {
    e = errno ? errno : e;
    st_out_commit(&of, 0, path, NULL);
    return st_err_set(err, ST_EIO, "trace '%s': writing failed: %s", path,
                      e ? strerror(e) : "unknown error");
  }
  if ((orc = st_out_commit(&of, 1, path, err)))
    return orc;
  if (counts)
    *counts = cnt;
  return ST_OK;
}
