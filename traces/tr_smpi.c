/* tr_smpi.c — SimGrid/SMPI time-independent traces into a workload.
 *
 * One action per line, "<rank> <action> args...": either one file holding
 * the actions of one or more ranks, or a file listing per-rank files (one
 * path per line, relative to the listing's folder; a path that does not
 * exist there is looked up by its last component).
 *
 * Mapping (counts are elements of the default datatype: bytes, or doubles
 * after "init 1"; explicit datatype arguments are trace-local ids and are
 * read past):
 *   compute F         compute op of F flops for the compute model
 *   sleep S           compute op of S seconds
 *   send/recv         blocking point-to-point on the world communicator
 *   isend/irecv       the same on a request stream of its own; "wait
 *                     [src dst tag]" waits for the matching (else oldest)
 *                     request, "waitall" for all; "test" changes nothing
 *   barrier, bcast, reduce, allreduce, alltoall(v), allgather(v),
 *   reducescatter     collectives over the world, sized as nccl-tests does;
 *                     the flops of reduce/allreduce/reducescatter follow as
 *                     a compute op
 *   init, finalize, comm_size, location: no op.
 * gather/scatter, comm_split and comm_dup have no counterpart and fail.
 */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tr_int.h"

#define SM_MAXTOK 1024

typedef struct sm_line {
  char *file;
  int lineno;
  int rank;
  int ntok;
  char **tok; /* tok[0] is the action */
} sm_line;

typedef struct sm_req {
  long op;
  int src, dst, tag;
  int slot;
} sm_req;

static int is_number(const char *s)
{
  char *end;
  strtod(s, &end);
  return end != s && *end == '\0';
}

/* The action lines of data (path's text, NUL-terminated, cut in place and
 * kept by the caller). */
static int add_lines(const char *path, char *data, sm_line **lines, size_t *n, size_t *cap,
                     st_err *err)
{
  char *cur = data;
  int lineno = 0;
  while (*cur) {
    char *line = cur;
    char *nl = strchr(cur, '\n');
    if (nl) {
      *nl = '\0';
      cur = nl + 1;
    } else
      cur += strlen(cur);
    lineno++;
    char *tok[SM_MAXTOK];
    int k = 0;
    char *save;
    for (char *t = strtok_r(line, " \t\r", &save); t && k < SM_MAXTOK;
         t = strtok_r(NULL, " \t\r", &save))
      tok[k++] = t;
    if (k == 0 || tok[0][0] == '#')
      continue;
    if (k < 2 || !is_number(tok[0]))
      return st_err_set(err, ST_EINPUT, "trace '%s': line %d: expected '<rank> <action> ...'",
                        path, lineno);
    long r;
    if (st_num_parse_long(tok[0], 0, ST_RANKS_MAX - 1, &r, err, "trace '%s': line %d: rank", path,
                          lineno))
      return ST_EINPUT;
    if (*n == *cap) {
      *cap = *cap ? *cap * 2 : 256;
      sm_line *nl2 = realloc(*lines, *cap * sizeof *nl2);
      if (!nl2)
        return st_err_set(err, ST_ENOMEM, "out of memory");
      *lines = nl2;
    }
    sm_line *L = &(*lines)[(*n)++];
    L->file = (char *)path;
    L->lineno = lineno;
    L->rank = (int)r;
    L->ntok = k - 1;
    L->tok = malloc((size_t)(k - 1) * sizeof *L->tok);
    if (!L->tok) {
      (*n)--;
      return st_err_set(err, ST_ENOMEM, "out of memory");
    }
    memcpy(L->tok, tok + 1, (size_t)(k - 1) * sizeof *L->tok);
  }
  return ST_OK;
}

static int add_file_lines(const char *path, sm_line **lines, size_t *n, size_t *cap,
                          char **bufs, st_err *err)
{
  char *data;
  size_t len;
  int rc = tr__read_file(path, &data, &len, err);
  if (rc)
    return rc;
  *bufs = data;
  return add_lines(path, data, lines, n, cap, err);
}

/* An action file starts with a rank; anything else is a listing of files. */
static int first_token_is_number(const char *data)
{
  const char *s = data;
  while (*s && isspace((unsigned char)*s))
    s++;
  return isdigit((unsigned char)*s);
}

typedef struct sm_build {
  wl_workload *wl;
  wl_program *p;
  int rank, nranks;
  double dtype;
  sm_req *reqs;
  int nreq, capreq;
  int *slot_busy;
  int nslots;
  tr_import_stats *stats;
  st_err *err;
} sm_build;

/* Argument i of an action, a number in 0..hi (whole with ST_NUM_INTEGER):
 *   trace 't.txt': line 3: 'send' argument 3 is -5, below the smallest allowed 0 */
static int argnum_in(sm_build *b, const sm_line *L, int i, int kind, double hi, double *v)
{
  if (i >= L->ntok)
    return st_err_set(b->err, ST_EINPUT, "trace '%s': line %d: '%s' needs argument %d", L->file,
                      L->lineno, L->tok[0], i);
  return st_num_parse(L->tok[i], kind, 0, hi, v, b->err, "trace '%s': line %d: '%s' argument %d",
                      L->file, L->lineno, L->tok[0], i);
}

/* A count of elements (bytes once multiplied by the datatype's size). */
static int argnum(sm_build *b, const sm_line *L, int i, double *v)
{
  return argnum_in(b, L, i, ST_NUM_REAL, ST_BYTES_MAX / b->dtype, v);
}

/* A rank, root or tag: a whole number an int holds. */
static int argint(sm_build *b, const sm_line *L, int i, double hi, double *v)
{
  return argnum_in(b, L, i, ST_NUM_INTEGER, hi, v);
}

/* Flops or seconds: any finite amount >= 0. */
static int argamount(sm_build *b, const sm_line *L, int i, double *v)
{
  return argnum_in(b, L, i, ST_NUM_REAL, DBL_MAX, v);
}

static long app(sm_build *b, wl_op *op, const uint32_t *w, uint32_t nw)
{
  long i = wl_program_append(b->p, op, w, nw);
  if (i < 0)
    st_err_set(b->err, ST_ENOMEM, "out of memory");
  return i;
}

/* send, isend, recv, irecv: a point-to-point op; an i- one on a free request
 * stream, pending until a wait. */
static int do_p2p(sm_build *b, const sm_line *L, uint32_t nm, int send)
{
  const char *a = L->tok[0];
  double x;
  int rc;
  wl_op op;
  double peer, tag;
  if ((rc = argint(b, L, 1, ST_RANKS_MAX, &peer)) || (rc = argint(b, L, 2, ST_INT32_MAX, &tag)) ||
      (rc = argnum(b, L, 3, &x)))
    return rc;
  if (peer >= b->nranks)
    return st_err_set(b->err, ST_EINPUT, "trace '%s': line %d: peer %.0f is outside 0..%d",
                      L->file, L->lineno, peer, b->nranks - 1);
  int async = a[0] == 'i';
  int stream = 0, slot = -1;
  if (async) {
    for (int s = 0; s < b->nslots && slot < 0; s++)
      if (!b->slot_busy[s])
        slot = s;
    if (slot < 0)
      return st_err_set(b->err, ST_EINPUT, "trace '%s': line %d: more than %d requests pending",
                        L->file, L->lineno, b->nslots);
    stream = 1 + slot;
  }
  op = wl_op_p2p(stream, send ? WL_OP_SEND : WL_OP_RECV, 0, (int)peer, (int)tag, x * b->dtype);
  op.name = nm;
  /* a request posted now must not start before the main stream got here */
  uint32_t w;
  uint32_t nw = 0;
  if (async && b->p->num_ops > 0) {
    w = (uint32_t)(b->p->num_ops - 1);
    nw = 1;
  }
  long oi = app(b, &op, &w, nw);
  if (oi < 0)
    return ST_ENOMEM;
  b->stats->p2p_ops++;
  if (async) {
    b->slot_busy[slot] = 1;
    if (b->nreq == b->capreq) {
      b->capreq = b->capreq ? 2 * b->capreq : 16;
      sm_req *nr = realloc(b->reqs, (size_t)b->capreq * sizeof *nr);
      if (!nr)
        return st_err_set(b->err, ST_ENOMEM, "out of memory");
      b->reqs = nr;
    }
    sm_req *r = &b->reqs[b->nreq++];
    r->op = oi;
    r->src = send ? b->rank : (int)peer;
    r->dst = send ? (int)peer : b->rank;
    r->tag = (int)tag;
    r->slot = slot;
  }
  return 0;
}

/* wait, waitall: an empty op waiting for the pending requests it names. */
static int do_wait(sm_build *b, const sm_line *L, uint32_t nm)
{
  const char *a = L->tok[0];
  wl_op op;
  int all = a[4] == 'a';
  if (b->nreq == 0)
    return 0;
  uint32_t *w = malloc((size_t)b->nreq * sizeof *w);
  if (!w)
    return st_err_set(b->err, ST_ENOMEM, "out of memory");
  uint32_t nw = 0;
  int pick = 0;
  if (!all && L->ntok >= 4) {
    double a1, a2, a3;
    int rc;
    if ((rc = argint(b, L, 1, ST_RANKS_MAX, &a1)) || (rc = argint(b, L, 2, ST_RANKS_MAX, &a2)) ||
        (rc = argint(b, L, 3, ST_INT32_MAX, &a3))) {
      free(w);
      return rc;
    }
    int src = (int)a1, dst = (int)a2, tag = (int)a3;
    pick = -1;
    for (int i = 0; i < b->nreq && pick < 0; i++)
      if (b->reqs[i].src == src && b->reqs[i].dst == dst && b->reqs[i].tag == tag)
        pick = i;
    if (pick < 0) {
      free(w);
      return st_err_set(b->err, ST_EINPUT,
                        "trace '%s': line %d: no pending request from %d to %d with tag %d",
                        L->file, L->lineno, src, dst, tag);
    }
  }
  for (int i = 0; i < b->nreq; i++)
    if (all || i == pick) {
      w[nw++] = (uint32_t)b->reqs[i].op;
      b->slot_busy[b->reqs[i].slot] = 0;
    }
  /* drop the waited requests */
  int k = 0;
  for (int i = 0; i < b->nreq; i++)
    if (!(all || i == pick))
      b->reqs[k++] = b->reqs[i];
  b->nreq = k;
  op = wl_op_compute(0, 0);
  op.name = nm;
  long oi = app(b, &op, w, nw);
  free(w);
  return oi < 0 ? ST_ENOMEM : 0;
}

/* A collective action, with its reduction FLOPs after it when it has any. */
static int do_coll(sm_build *b, const sm_line *L, uint32_t nm)
{
  const char *a = L->tok[0];
  double x, y;
  int rc;
  wl_op op;
  /* collectives */
  int n = b->nranks;
  int coll = -1, root = 0;
  double bytes = 0, flops = 0;
  double *split = NULL;
  if (!strcmp(a, "barrier")) {
    coll = WL_COLL_BARRIER;
  } else if (!strcmp(a, "bcast")) {
    if ((rc = argnum(b, L, 1, &x)))
      return rc;
    coll = WL_COLL_BROADCAST;
    bytes = x * b->dtype;
    if (L->ntok > 2 && (rc = argint(b, L, 2, ST_RANKS_MAX, &y)))
      return rc;
    if (L->ntok > 2)
      root = (int)y;
  } else if (!strcmp(a, "reduce") || !strcmp(a, "allreduce")) {
    if ((rc = argnum(b, L, 1, &x)) || (rc = argamount(b, L, 2, &flops)))
      return rc;
    coll = a[0] == 'r' ? WL_COLL_REDUCE : WL_COLL_ALLREDUCE;
    bytes = x * b->dtype;
    if (coll == WL_COLL_REDUCE && L->ntok > 3 && (rc = argint(b, L, 3, ST_RANKS_MAX, &y)))
      return rc;
    if (coll == WL_COLL_REDUCE && L->ntok > 3)
      root = (int)y;
  } else if (!strcmp(a, "alltoall") || !strcmp(a, "allgather")) {
    if ((rc = argnum(b, L, 1, &x)) || (rc = argnum(b, L, 2, &y)))
      return rc;
    coll = a[3] == 't' ? WL_COLL_ALLTOALL : WL_COLL_ALLGATHER;
    bytes = x * n * b->dtype; /* per-peer count x ranks: the whole send buffer / output */
  } else if (!strcmp(a, "alltoallv")) {
    /* send_size sendcounts[n] recv_size recvcounts[n] */
    if (L->ntok < 2 * n + 3)
      return st_err_set(b->err, ST_EINPUT, "trace '%s': line %d: alltoallv needs %d numbers for "
                        "%d ranks, has %d", L->file, L->lineno, 2 * n + 2, n, L->ntok - 1);
    split = malloc((size_t)n * sizeof *split);
    if (!split)
      return st_err_set(b->err, ST_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
      if ((rc = argnum(b, L, 2 + i, &x))) {
        free(split);
        return rc;
      }
      split[i] = x * b->dtype;
      bytes += split[i];
    }
    coll = WL_COLL_ALLTOALL;
  } else if (!strcmp(a, "allgatherv")) {
    /* sendcount recvcounts[n] */
    if (L->ntok < n + 2)
      return st_err_set(b->err, ST_EINPUT, "trace '%s': line %d: allgatherv needs %d numbers for "
                        "%d ranks, has %d", L->file, L->lineno, n + 1, n, L->ntok - 1);
    for (int i = 0; i < n; i++) {
      if ((rc = argnum(b, L, 2 + i, &x)))
        return rc;
      bytes += x * b->dtype;
    }
    coll = WL_COLL_ALLGATHER;
  } else if (!strcmp(a, "reducescatter")) {
    /* recvcounts[n] flops */
    if (L->ntok < n + 2)
      return st_err_set(b->err, ST_EINPUT, "trace '%s': line %d: reducescatter needs %d numbers "
                        "for %d ranks, has %d", L->file, L->lineno, n + 1, n, L->ntok - 1);
    for (int i = 0; i < n; i++) {
      if ((rc = argnum(b, L, 1 + i, &x)))
        return rc;
      bytes += x * b->dtype;
    }
    if ((rc = argamount(b, L, 1 + n, &flops)))
      return rc;
    coll = WL_COLL_REDUCESCATTER;
  } else {
    return st_err_set(b->err, ST_EINPUT, "trace '%s': line %d: action '%s' is not supported",
                      L->file, L->lineno, a);
  }
  if (root >= n)
    return st_err_set(b->err, ST_EINPUT, "trace '%s': line %d: root %d is outside 0..%d", L->file,
                      L->lineno, root, n - 1);
  op = wl_op_coll(0, coll, 0, bytes);
  if (coll == WL_COLL_BROADCAST || coll == WL_COLL_REDUCE)
    op.peer = root;
  if (split) {
    op.split_first = wl_program_splits(b->p, split, n);
    op.flags |= WL_OPF_SPLITS;
    free(split);
  }
  op.name = nm;
  if (app(b, &op, NULL, 0) < 0)
    return ST_ENOMEM;
  b->stats->coll_ops++;
  if (flops > 0) {
    wl_op c = wl_op_compute(0, -1);
    c.flops = flops;
    c.name = nm;
    if (app(b, &c, NULL, 0) < 0)
      return ST_ENOMEM;
    b->stats->compute_ops++;
  }
  return 0;
}

static int do_line(sm_build *b, const sm_line *L)
{
  const char *a = L->tok[0];
  double x;
  int rc;
  wl_op op;
  uint32_t nm = wl_program_string(b->p, a);
  if (!strcmp(a, "init")) {
    if (L->ntok > 1 && !strcmp(L->tok[1], "1"))
      b->dtype = 8;
    return 0;
  }
  if (!strcmp(a, "finalize") || !strcmp(a, "comm_size") || !strcmp(a, "location") ||
      !strcmp(a, "test"))
    return 0;
  if (!strcmp(a, "compute") || !strcmp(a, "sleep")) {
    if ((rc = argamount(b, L, 1, &x)))
      return rc;
    op = wl_op_compute(0, a[0] == 's' ? x : -1);
    if (a[0] == 'c')
      op.flops = x;
    op.name = nm;
    b->stats->compute_ops++;
    return app(b, &op, NULL, 0) < 0 ? ST_ENOMEM : 0;
  }
  int send = !strcmp(a, "send") || !strcmp(a, "isend");
  int recv = !strcmp(a, "recv") || !strcmp(a, "irecv");
  if (send || recv)
    return do_p2p(b, L, nm, send);
  if (!strcmp(a, "wait") || !strcmp(a, "waitall"))
    return do_wait(b, L, nm);
  return do_coll(b, L, nm);
}

int tr__smpi_import(const char *path, const tr_options *opt, wl_workload **out,
                    tr_import_stats *stats, st_err *err)
{
  (void)opt;
  sm_line *lines = NULL;
  size_t n = 0, cap = 0;
  char *bufs[1024];
  char *paths[1024];
  int nbufs = 0, npaths = 0;
  int rc = ST_OK;
  wl_workload *wl = NULL;
  /* read once (a FIFO or standard input cannot be read again) */
  char *first;
  size_t first_len;
  rc = tr__read_file(path, &first, &first_len, err);
  if (!rc && first_token_is_number(first)) {
    bufs[nbufs++] = first;
    rc = add_lines(path, first, &lines, &n, &cap, err);
  } else if (!rc) {
    char *list = first;
    char *dir = st_path_dirname(path);
    char *save;
    if (!dir)
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
    for (char *l = dir ? strtok_r(list, "\r\n", &save) : NULL; l && !rc;
         l = strtok_r(NULL, "\r\n", &save)) {
      while (isspace((unsigned char)*l))
        l++;
      if (!*l || *l == '#')
        continue;
      if (npaths == 1024) {
        rc = st_err_set(err, ST_EINPUT, "trace '%s': lists more than 1024 files", path);
        break;
      }
      size_t m = strlen(dir) + strlen(l) + 2;
      char *p = malloc(m);
      if (!p) {
        rc = st_err_set(err, ST_ENOMEM, "out of memory");
        break;
      }
      if (l[0] == '/')
        snprintf(p, m, "%s", l);
      else
        snprintf(p, m, "%s/%s", dir, l);
      struct stat s;
      if (stat(p, &s))
        snprintf(p, m, "%s/%s", dir, st_path_basename(l));
      paths[npaths++] = p;
      bufs[nbufs] = NULL;
      rc = add_file_lines(p, &lines, &n, &cap, &bufs[nbufs++], err);
    }
    free(dir);
    free(list);
  }
  int nranks = 0;
  for (size_t i = 0; i < n; i++)
    if (lines[i].rank + 1 > nranks)
      nranks = lines[i].rank + 1;
  if (!rc && nranks == 0)
    rc = st_err_set(err, ST_EINPUT, "trace '%s': no actions", path);
  /* every rank has a line (its init at least): the ranks, and so what is
   * allocated for them, follow the lines read, not one large rank number */
  char *seen = rc ? NULL : calloc((size_t)nranks, 1);
  if (!rc && !seen)
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
  for (size_t i = 0; i < n && seen; i++)
    seen[lines[i].rank] = 1;
  for (int r = 0; r < nranks && seen && !rc; r++)
    if (!seen[r])
      rc = st_err_set(err, ST_EINPUT, "trace '%s': rank %d has no actions (ranks go up to %d)",
                      path, r, nranks - 1);
  free(seen);
  sm_build b;
  memset(&b, 0, sizeof b);
  if (!rc) {
    if (!(wl = tr__world_workload(nranks, err)))
      rc = ST_ENOMEM;
  }
  /* request streams: as many as the most requests one rank has pending */
  enum { SM_SLOTS = 16 };
  for (int r = 0; r < nranks && !rc; r++) {
    const char *sn[1 + SM_SLOTS];
    char names[SM_SLOTS][16];
    sn[0] = "main";
    for (int s = 0; s < SM_SLOTS; s++) {
      snprintf(names[s], sizeof names[s], "request %d", s);
      sn[1 + s] = names[s];
    }
    char pn[32];
    snprintf(pn, sizeof pn, "rank %d", r);
    int pi = wl_program_add(wl, pn, 1 + SM_SLOTS, sn);
    if (pi < 0) {
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
      break;
    }
    wl_rank_set(wl, r, pi);
    int busy[SM_SLOTS] = {0};
    b.wl = wl;
    b.p = &wl->programs[pi];
    b.rank = r;
    b.nranks = nranks;
    b.dtype = 1;
    b.nreq = 0;
    b.slot_busy = busy;
    b.nslots = SM_SLOTS;
    b.stats = stats;
    b.err = err;
    for (size_t i = 0; i < n && !rc; i++)
      if (lines[i].rank == r) {
        stats->events_read++;
        rc = do_line(&b, &lines[i]);
      }
  }
  free(b.reqs);
  if (!rc)
    rc = tr__stats_alloc_ranks(stats, nranks, err);
  if (!rc)
    rc = tr__finish(wl, "smpi", path, err);
  for (size_t i = 0; i < n; i++)
    free(lines[i].tok);
  free(lines);
  for (int i = 0; i < nbufs; i++)
    free(bufs[i]);
  for (int i = 0; i < npaths; i++)
    free(paths[i]);
  if (rc) {
    wl_workload_destroy(wl);
    tr_import_stats_release(stats);
    return rc;
  }
  *out = wl;
  return ST_OK;
}
