/* tr_chakra.c — Chakra execution traces (.et) into a workload.
 *
 * A .et file is a stream of protobuf messages, each preceded by its length as
 * a varint: first a GlobalMetadata, then one Node per operator.  The messages
 * are decoded by protobuf-c from chakra.proto (our own, with only the fields
 * used; the rest are kept as unknown fields and ignored).
 *
 * One file per rank (PREFIX.<rank>.et).  Each rank becomes one program:
 *   - COMP nodes: compute ops with the node's measured duration (or, with no
 *     duration but a num_ops attr, FLOPs for the compute model);
 *   - COMM_COLL nodes run by the GPU: collectives of comm_type with
 *     comm_size bytes (Chakra's sizes are the whole buffer, the nccl-tests
 *     convention of workload.h) over the world, or over the topology
 *     dimensions that ASTRA-sim's involved_dim names (groups below, sizes
 *     from tr_options.dims); COMM_COLL nodes with
 *     is_cpu_op set are the host side of a collective call and replay as
 *     host time;
 *   - COMM_SEND / COMM_RECV: point-to-point with comm_dst / comm_src and
 *     comm_tag;
 *   - MEM_LOAD / MEM_STORE: compute ops of their duration;
 *   - METADATA and INVALID nodes carry no work: counted, not replayed.
 * Streams: one per (CPU thread | GPU stream) from the tid attr.  Ops are
 * placed in a topological order of the data dependencies (ties by start
 * time, then id); a control dependency is kept when it points backwards in
 * that order.  Dependencies on nodes absent from the file, on the node
 * itself, or that would close a cycle are dropped and counted (real files
 * have all three: converters cut parents out and some versions write control
 * edges both ways).
 *
 * This file builds programs and groups; reading the protobuf messages and
 * ordering the nodes is tr_chakra_read.c (shared names: tr_int.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tr_int.h"

/* ---- building ---------------------------------------------------------------- */

static int coll_of_comm_type(int t)
{
  switch (t) {
  case 0: return WL_COLL_ALLREDUCE;
  case 1: return WL_COLL_REDUCE;
  case 2: return WL_COLL_ALLGATHER;
  case 5: return WL_COLL_BROADCAST;
  case 6: return WL_COLL_ALLTOALL;
  case 7:
  case 8: return WL_COLL_REDUCESCATTER;
  case 9: return WL_COLL_BARRIER;
  default: return -1; /* GATHER 3, SCATTER 4: no counterpart in the workload */
  }
}

static int class_of_name(const char *name)
{
  if (strstr(name, "gemm") || strstr(name, "Gemm") || strstr(name, "cutlass") ||
      strstr(name, "cublas") || strstr(name, "xmma"))
    return WL_CLASS_GEMM;
  if (strstr(name, "fmha") || strstr(name, "flash"))
    return WL_CLASS_ATTENTION;
  return WL_CLASS_ELEMENTWISE;
}

typedef struct ck_stream {
  int cpu;
  long tid;
  int comm;
} ck_stream;

/* ---- groups over topology dimensions (involved_dim) -------------------------
 *
 * A collective whose involved_dim is absent, or true on every entry, spans
 * every rank (ASTRA-sim's Workload::issue_coll_comm assumes all dimensions
 * when the attribute is absent).  Otherwise it spans the ranks that share
 * the rank's coordinates on every dimension not involved.  One role per
 * distinct mask ("dim0", "dim1", "dim0+1"; every dimension is "world"), one
 * communicator per distinct group; programs name roles, so ranks copied from
 * one file keep one program while each finds its own groups in the rank map. */
typedef struct ck_roles {
  int num_dims;
  int dims[TR_MAX_DIMS];
  int n;                /* roles */
  uint32_t mask[1u << TR_MAX_DIMS]; /* role i's mask (the world's: every dimension) */
  int world;            /* role of the world, -1 if none */
} ck_roles;

static int node_is_world(const ck_node *k)
{
  return k->inv_len < 0 || k->inv_mask == (1u << k->inv_len) - 1;
}

static int role_of_node(const ck_roles *ro, const ck_node *k)
{
  if (node_is_world(k))
    return ro->world;
  for (int i = 0; i < ro->n; i++)
    if (ro->mask[i] == k->inv_mask)
      return i;
  return -1; /* not reached: every mask was collected */
}

static int build_program(const char *path, ck_rank *r, int rank, wl_workload *wl,
                         const ck_roles *ro, tr_import_stats *stats, st_err *err, int *prog)
{
  size_t *order = NULL;
  int rc = tr__ck_order_nodes(r, &order, stats, err);
  if (rc)
    return rc;
  /* streams */
  ck_stream st[64];
  int ns = 0;
  for (size_t i = 0; i < r->n && !rc; i++) {
    ck_node *k = &r->nodes[i];
    k->stream = -1;
    if (k->type == CK_INVALID || k->type == CK_METADATA || k->type > CK_COLL)
      continue;
    ck_stream key = {k->cpu, k->tid,
                     !k->cpu && k->tid < 0 && (k->type >= CK_SEND && k->type <= CK_COLL)};
    int s = -1;
    for (int q = 0; q < ns; q++)
      if (st[q].cpu == key.cpu && st[q].tid == key.tid && st[q].comm == key.comm)
        s = q;
    if (s < 0) {
      if (ns == (int)(sizeof st / sizeof st[0])) {
        rc = st_err_set(err, ST_EINPUT, "trace '%s': node %llu: more than %d threads and streams",
                        path, (unsigned long long)k->id, ns);
        break;
      }
      st[ns] = key;
      s = ns++;
    }
    k->stream = s;
  }
  char *names[64];
  for (int q = 0; q < ns; q++) {
    char b[48];
    if (st[q].tid >= 0)
      snprintf(b, sizeof b, "%s %ld", st[q].cpu ? "cpu thread" : "gpu stream", st[q].tid);
    else
      snprintf(b, sizeof b, "%s", st[q].cpu ? "cpu" : st[q].comm ? "comm" : "gpu");
    names[q] = strdup(b);
  }
  char pname[32];
  snprintf(pname, sizeof pname, "rank %d", rank);
  int pi = rc ? -1 : wl_program_add(wl, pname, ns ? ns : 1, ns ? (const char *const *)names : NULL);
  for (int q = 0; q < ns; q++)
    free(names[q]);
  if (!rc && pi < 0)
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
  wl_program *p = rc ? NULL : &wl->programs[pi];
  uint32_t *waits = malloc((size_t)(ns ? ns : 1) * sizeof *waits);
  long *latest = malloc((size_t)(ns ? ns : 1) * sizeof *latest);
  if (!rc && (!waits || !latest))
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
  for (size_t o = 0; o < r->n && !rc; o++) {
    ck_node *k = &r->nodes[order[o]];
    if (k->type >= 0 && k->type < 8)
      stats->nodes_by_type[k->type]++;
    else
      stats->events_skipped++;
    if (k->stream < 0) {
      if (k->type != CK_METADATA)
        stats->events_skipped++; /* INVALID or a type with no work we know */
      continue;
    }
    /* waits: per other stream, the latest op among the deps */
    for (int q = 0; q < ns; q++)
      latest[q] = -1;
    for (int pass = 0; pass < 2; pass++) {
      uint64_t *deps = pass ? k->ctrl : k->data;
      size_t nd = pass ? k->nctrl : k->ndata;
      for (size_t d = 0; d < nd; d++) {
        if (!pass && k->drop[d])
          continue;
        long j = tr__ck_find_node(r, deps[d]);
        if (j < 0 || (size_t)j == order[o]) {
          if (pass)
            stats->deps_dropped++;
          continue;
        }
        ck_node *dn = &r->nodes[j];
        if (dn->pos > k->pos) {
          if (pass)
            stats->deps_dropped++; /* would close a cycle (data ones counted when ordering) */
          continue;
        }
        if (dn->op < 0)
          continue;
        if (dn->stream != k->stream && dn->op > latest[dn->stream])
          latest[dn->stream] = dn->op;
      }
    }
    uint32_t nw = 0;
    for (int q = 0; q < ns; q++)
      if (latest[q] >= 0)
        waits[nw++] = (uint32_t)latest[q];
    wl_op op;
    int s = k->stream;
    if (k->type == CK_COLL && !k->cpu) {
      int c = coll_of_comm_type(k->comm_type);
      if (k->comm_type < 0)
        rc = st_err_set(err, ST_EINPUT, "trace '%s': node %llu: 'comm_type' is missing", path,
                        (unsigned long long)k->id);
      else if (c < 0)
        rc = st_err_set(err, ST_EINPUT,
                        "trace '%s': node %llu: comm_type %d (gather/scatter) is not supported",
                        path, (unsigned long long)k->id, k->comm_type);
      if (rc)
        break;
      op = wl_op_coll(s, c, role_of_node(ro, k), k->comm_size);
      stats->coll_ops++;
    } else if ((k->type == CK_SEND || k->type == CK_RECV) && !k->cpu) {
      long peer = k->type == CK_SEND ? k->dst : k->src;
      if (peer < 0 || peer >= wl->num_ranks) {
        rc = st_err_set(err, ST_EINPUT, "trace '%s': node %llu: peer rank %ld is outside 0..%d",
                        path, (unsigned long long)k->id, peer, wl->num_ranks - 1);
        break;
      }
      op = wl_op_p2p(s, k->type == CK_SEND ? WL_OP_SEND : WL_OP_RECV, ro->world, (int)peer, (int)k->tag,
                     k->comm_size);
      stats->p2p_ops++;
    } else {
      op = wl_op_compute(s, k->dur_us * 1e-6);
      op.sub = k->cpu ? WL_CLASS_OTHER : (uint8_t)class_of_name(k->name);
      if (k->dur_us == 0 && k->num_ops > 0) {
        op.duration_s = -1; /* compute model from FLOPs and bytes */
        op.flops = k->num_ops;
        op.bytes = k->tensor_size;
      }
      stats->compute_ops++;
    }
    char nm[96];
    snprintf(nm, sizeof nm, "%s", k->name);
    op.name = wl_program_string(p, nm);
    long oi = wl_program_append(p, &op, waits, nw);
    if (oi < 0) {
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
      break;
    }
    k->op = oi;
  }
  free(waits);
  free(latest);
  free(order);
  *prog = pi;
  return rc;
}

/* ---- what the trace measured ------------------------------------------------- */

/* A rank's measured step: first node start to last node end (NAN when the
 * nodes have no start times: the ResNet-50 file's are all 0), the GPU
 * compute time (COMP nodes run by the GPU) and the GPU communication time
 * (COMM nodes run by the GPU, waiting for peers included); NAN when no node
 * has a duration (ASTRA-sim's generated traces). */
static void measure_rank(const ck_rank *r, double *first_us, double *last_us, double *comp_s,
                         double *comm_s)
{
  double t0 = INFINITY, t1 = -INFINITY, cp = 0, cm = 0;
  int started = 0, timed = 0;
  for (size_t i = 0; i < r->n; i++) {
    const ck_node *k = &r->nodes[i];
    if (k->type == CK_INVALID || k->type == CK_METADATA || k->type > CK_COLL)
      continue;
    t0 = fmin(t0, k->start_us);
    t1 = fmax(t1, k->start_us + k->dur_us);
    started |= k->start_us > 0;
    timed |= k->dur_us > 0;
    if (k->cpu)
      continue;
    if (k->type == CK_COMP)
      cp += k->dur_us * 1e-6;
    else if (k->type >= CK_SEND)
      cm += k->dur_us * 1e-6;
  }
  /* a span needs start times (converters may leave them out: all 0) */
  *first_us = started && t1 > t0 ? t0 : NAN;
  *last_us = started && t1 > t0 ? t1 : NAN;
  *comp_s = timed ? cp : NAN;
  *comm_s = timed ? cm : NAN;
}

/* ---- roles and groups -------------------------------------------------------- */

static int cmp_u32(const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* The roles the ranks' GPU collectives and send/recv use, and the dimension
 * sizes they need; errors name the first node that cannot be placed. */
static void dims_text(const int *dims, int n, char *b, size_t cap)
{
  size_t m = 0;
  b[0] = '\0';
  for (int d = 0; d < n && m < cap; d++)
    m += (size_t)snprintf(b + m, cap - m, "%s%d", d ? "," : "", dims[d]);
}

static int plan_roles(const char *path, char **files, const ck_rank *ranks, int nf, int nranks,
                      const tr_options *opt, ck_roles *ro, st_err *err)
{
  memset(ro, 0, sizeof *ro);
  ro->world = -1;
  char dt[128];
  if (opt && opt->num_dims > 0) {
    long long prod = 1;
    for (int d = 0; d < opt->num_dims; d++)
      prod *= opt->dims[d];
    dims_text(opt->dims, opt->num_dims, dt, sizeof dt);
    if (prod != nranks)
      return st_err_set(err, ST_EUSAGE,
                        "--dims %s makes %lld ranks but trace '%s' has %d (its files, or --gpus)",
                        dt, prod, path, nranks);
    ro->num_dims = opt->num_dims;
    memcpy(ro->dims, opt->dims, sizeof ro->dims);
  }
  int any_world = 0, first_f = -1;
  const ck_node *first = NULL;
  for (int f = 0; f < nf; f++)
    for (size_t i = 0; i < ranks[f].n; i++) {
      const ck_node *k = &ranks[f].nodes[i];
      if (k->cpu || k->type < CK_SEND || k->type > CK_COLL)
        continue;
      if (k->type != CK_COLL || node_is_world(k)) {
        any_world = 1;
      } else if (!first) {
        first = k;
        first_f = f;
      }
    }
  if (!first) { /* every collective over every rank: the world, as without involved_dim */
    ro->n = 1;
    ro->world = 0;
    ro->mask[0] = UINT32_MAX;
    return ST_OK;
  }
  int defaulted = 0;
  if (ro->num_dims == 0) {
    int g = opt ? opt->gpus_per_node : 0;
    if (g <= 0)
      return st_err_set(err, ST_EUSAGE,
                        "trace '%s': node %llu: 'involved_dim' refers to topology dimensions: pass "
                        "--dims N0,N1,... (their product the %d ranks)",
                        files[first_f], (unsigned long long)first->id, nranks);
    if (nranks > g && nranks % g)
      return st_err_set(err, ST_EUSAGE,
                        "trace '%s': node %llu: 'involved_dim' refers to topology dimensions and "
                        "%d ranks are not whole nodes of %d GPUs: pass --dims N0,N1,...",
                        files[first_f], (unsigned long long)first->id, nranks, g);
    ro->num_dims = 2;
    ro->dims[0] = nranks < g ? nranks : g;
    ro->dims[1] = nranks / ro->dims[0];
    defaulted = 1;
    dims_text(ro->dims, 2, dt, sizeof dt);
  }
  int nm = 0;
  uint32_t seen[1u << TR_MAX_DIMS];
  for (int f = 0; f < nf; f++)
    for (size_t i = 0; i < ranks[f].n; i++) {
      const ck_node *k = &ranks[f].nodes[i];
      if (k->cpu || k->type != CK_COLL || node_is_world(k))
        continue;
      if (k->inv_len != ro->num_dims)
        return st_err_set(err, ST_EINPUT,
                          "trace '%s': node %llu: 'involved_dim' has %d entries but %s %s has "
                          "%d%s",
                          files[f], (unsigned long long)k->id, k->inv_len,
                          defaulted ? "the default dims (GPUs per node, nodes)" : "--dims", dt,
                          ro->num_dims, defaulted ? ": pass --dims" : "");
      int dup = 0;
      for (int q = 0; q < nm && !dup; q++)
        dup = seen[q] == k->inv_mask;
      if (!dup)
        seen[nm++] = k->inv_mask;
    }
  qsort(seen, (size_t)nm, sizeof *seen, cmp_u32);
  memcpy(ro->mask, seen, (size_t)nm * sizeof *seen);
  ro->n = nm;
  if (any_world) {
    ro->world = ro->n;
    ro->mask[ro->n++] = (1u << ro->num_dims) - 1;
  }
  return ST_OK;
}

/* The workload's roles and communicators: for a mask, the group of rank r is
 * the ranks equal to r on every dimension not in the mask, in rank order (so
 * a ring over a group steps along its lowest dimension first). */
static wl_workload *roles_workload(int nranks, const ck_roles *ro, st_err *err)
{
  if (ro->n == 1 && ro->world == 0)
    return tr__world_workload(nranks, err);
  char names[1u << TR_MAX_DIMS][8 + 3 * TR_MAX_DIMS];
  const char *np[1u << TR_MAX_DIMS];
  for (int i = 0; i < ro->n; i++) {
    if (i == ro->world) {
      snprintf(names[i], sizeof names[i], "world");
    } else {
      int m = snprintf(names[i], sizeof names[i], "dim");
      for (int d = 0, any = 0; d < ro->num_dims; d++)
        if (ro->mask[i] >> d & 1) {
          m += snprintf(names[i] + m, sizeof names[i] - (size_t)m, "%s%d", any ? "+" : "", d);
          any = 1;
        }
    }
    np[i] = names[i];
  }
  wl_workload *wl = wl_workload_create(nranks, ro->n, np);
  int32_t *members = malloc((size_t)nranks * sizeof *members);
  int32_t *comm_of = malloc((size_t)nranks * sizeof *comm_of);
  int ok = wl && members && comm_of;
  long stride[TR_MAX_DIMS];
  for (int d = 0; d < ro->num_dims; d++)
    stride[d] = d ? stride[d - 1] * ro->dims[d - 1] : 1;
  for (int i = 0; i < ro->n && ok; i++) {
    uint32_t mask = i == ro->world ? (1u << ro->num_dims) - 1 : ro->mask[i];
    int groups = 0;
    for (int r = 0; r < nranks && ok; r++) {
      long base = r;
      for (int d = 0; d < ro->num_dims; d++)
        if (mask >> d & 1)
          base -= (r / stride[d]) % ro->dims[d] * stride[d];
      if (base == r) { /* r leads its group: members by the involved coordinates, the
                          lowest dimension fastest, which is rank order */
        int n = 1;
        members[0] = r;
        for (int d = 0; d < ro->num_dims; d++)
          if (mask >> d & 1) {
            int have = n;
            for (int c = 1; c < ro->dims[d]; c++)
              for (int q = 0; q < have; q++)
                members[n++] = members[q] + (int32_t)(c * stride[d]);
          }
        char cn[48];
        if (i == ro->world)
          snprintf(cn, sizeof cn, "world");
        else
          snprintf(cn, sizeof cn, "%s g%d", names[i], groups);
        groups++;
        comm_of[r] = wl_comm_add(wl, cn, i == ro->world ? WL_COMM_WORLD : WL_COMM_OTHER, n, members);
        ok = comm_of[r] >= 0;
      }
      if (ok)
        wl_rank_set_comm(wl, r, i, comm_of[base]);
    }
  }
  free(members);
  free(comm_of);
  if (!ok) {
    wl_workload_destroy(wl);
    st_err_set(err, ST_ENOMEM, "out of memory");
    return NULL;
  }
  return wl;
}

/* ---- entry ------------------------------------------------------------------- */

int tr__chakra_import(const char *path, const tr_options *opt, wl_workload **out,
                      tr_import_stats *stats, st_err *err)
{
  /* PREFIX.<rank>.et for rank 0, 1, ... ; or one .et file (a FIFO or '-'
   * too: it is read once) */
  char **files = NULL;
  int nf = 0;
  int rc = ST_OK;
  struct stat ps;
  if (!strcmp(path, "-") || (stat(path, &ps) == 0 && !S_ISDIR(ps.st_mode))) {
    files = malloc(sizeof *files);
    if (!files || !(files[0] = strdup(path)))
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
    else
      nf = 1;
  } else {
    for (;;) {
      char b[4096];
      snprintf(b, sizeof b, "%s.%d.et", path, nf);
      if (!st_path_is_file(b))
        break;
      char **nv = realloc(files, (size_t)(nf + 1) * sizeof *nv);
      if (!nv || !(nv[nf] = strdup(b))) {
        files = nv ? nv : files;
        rc = st_err_set(err, ST_ENOMEM, "out of memory");
        break;
      }
      files = nv;
      nf++;
    }
    if (!rc && nf == 0)
      rc = st_err_set(err, ST_EIO, "trace '%s': no file '%s.0.et' (expected PREFIX.<rank>.et)",
                      path, path);
  }
  int nranks = nf;
  if (opt && opt->num_gpus > nf)
    nranks = opt->num_gpus; /* ranks without a file run a copy of rank (r mod files) */
  ck_rank *ranks = calloc((size_t)(nf ? nf : 1), sizeof *ranks);
  if (!rc && !ranks)
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
  for (int i = 0; i < nf && !rc; i++)
    rc = tr__ck_read_rank(files[i], &ranks[i], stats, err);
  wl_workload *wl = NULL;
  ck_roles *ro = rc ? NULL : malloc(sizeof *ro);
  if (!rc && !ro)
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
  if (!rc)
    rc = plan_roles(path, files, ranks, nf, nranks, opt, ro, err);
  if (!rc) {
    if (!(wl = roles_workload(nranks, ro, err)))
      rc = ST_ENOMEM;
  }
  for (int i = 0; i < nf && !rc; i++) {
    int pi;
    rc = build_program(files[i], &ranks[i], i, wl, ro, stats, err, &pi);
    for (int r = i; !rc && r < nranks; r += nf)
      wl_rank_set(wl, r, pi);
  }
  if (!rc) {
    rc = tr__stats_alloc_ranks(stats, nranks, err);
    /* Measured values for the ranks that have a file; the whole step (first
     * start to last end) only when every rank has one. */
    double first = INFINITY, last = -INFINITY;
    for (int i = 0; !rc && i < nf; i++) {
      double a, b;
      measure_rank(&ranks[i], &a, &b, &stats->rank_compute_s[i], &stats->rank_comm_s[i]);
      stats->rank_measured_s[i] = (b - a) * 1e-6;
      stats->rank_start_s[i] = isnan(a) ? NAN : 0; /* the replay starts every rank at 0 */
      first = fmin(first, a);
      last = fmax(last, b);
    }
    for (int r = nf; !rc && r < nranks; r++)
      stats->rank_source[r] = r % nf;
    if (!rc && nf == nranks && last > first)
      stats->measured_step_s = (last - first) * 1e-6;
  }
  if (!rc)
    rc = tr__finish(wl, "chakra", path, err);
  free(ro);
  for (int i = 0; i < nf; i++)
    tr__ck_rank_release(&ranks[i]);
  free(ranks);
  for (int i = 0; i < nf; i++)
    free(files[i]);
  free(files);
  if (rc) {
    wl_workload_destroy(wl);
    tr_import_stats_release(stats);
    return rc;
  }
  *out = wl;
  return ST_OK;
}
