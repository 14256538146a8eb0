/* drv_estimate.c — the analytic estimate of a training step, no simulation:
 * the same generated workload the engine would replay, priced by the same
 * compute model and the NCCL tuner's closed form on the cluster's links.
 *
 * Each pipeline stage's program runs alone on one of its ranks: every
 * stream in order, an op starting when its stream is free and the ops it
 * waits on have ended, compute priced by plat_compute_time, a collective by
 * sim_coll_estimate over its communicator's GPUs (no other traffic), a send
 * by its route's latency plus bytes over the route's bandwidth, a receive
 * free (the peer's progress is the pipeline's business, below).  So the
 * overlap the program allows (DP buckets under the backward, FSDP gathers
 * ahead of their layer, TP comm-overlap chunks) is counted as the program
 * allows it, and what it leaves exposed is exposed.  The pipeline's bubble
 * is the schedule's: with t_s the stage's forward and backward work per
 * micro-batch and v virtual stages, (sum_s t_s - max_s t_s) / v (for even
 * stages the (p - 1) t / v of Narayanan et al., 2021); the step is the
 * slowest stage's program plus the bubble.
 *
 * Compute beside communication is stretched as the engine stretches it
 * (sim/engine/compute.c, design note 2): a modelled compute op that runs
 * while a collective, send or copy of its rank is in flight takes
 * (factor - 1) x the overlapped time longer, factor the device's
 * plat_compute_overlap_factor(), to the fixed point of the stretch
 * overlapping more.  The bubble is taken from programs without the
 * stretch (the stages run together are not stretched), so it is the
 * schedule's waits alone.
 *
 * A send between nodes while a collective across nodes of either end is
 * in flight shares that GPU's NIC with the collective's flow (rail
 * fabrics: one NIC per GPU, every GPU's NIC carrying one of a ring's
 * channels), and max-min sharing gives it half the NIC: d seconds of
 * transfer take d + ov/2, ov their overlap (the engine's contention; an
 * estimate without it put pipelined MoE layouts, whose activations cross
 * nodes beside ZeRO's gradient reduce-scatters, 1-1.5% fast against the
 * layouts without a pipeline).  The stages run together twice: the first
 * run lays out the collectives, the second prices the sends against them
 * (the sends hardly move the collectives); the difference is nic_shared_s. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

/* Collective and route prices are the same for every instance of a
 * (communicator, op, bytes) and every (src, dst): memoised. */
typedef struct est_memo {
  uint64_t *keys;
  double *vals;
  size_t cap, len;
} est_memo;

static uint64_t mix(uint64_t h, uint64_t v)
{
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdULL;
  return h ^ (h >> 33);
}

static uint64_t dbl_bits(double d)
{
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

static int memo_find(const est_memo *m, uint64_t key, size_t *slot)
{
  size_t i = key & (m->cap - 1);
  while (m->keys[i] && m->keys[i] != key)
    i = (i + 1) & (m->cap - 1);
  *slot = i;
  return m->keys[i] == key;
}

static int memo_put(est_memo *m, uint64_t key, double v)
{
  if (2 * (m->len + 1) > m->cap) {
    est_memo n = {calloc(m->cap ? 2 * m->cap : 1024, sizeof(uint64_t)),
                  calloc(m->cap ? 2 * m->cap : 1024, sizeof(double)), m->cap ? 2 * m->cap : 1024,
                  0};
    if (!n.keys || !n.vals) {
      free(n.keys);
      free(n.vals);
      return ST_ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++)
      if (m->keys[i]) {
        size_t s;
        memo_find(&n, m->keys[i], &s);
        n.keys[s] = m->keys[i];
        n.vals[s] = m->vals[i];
        n.len++;
      }
    free(m->keys);
    free(m->vals);
    *m = n;
  }
  size_t s;
  if (!memo_find(m, key, &s)) {
    m->keys[s] = key;
    m->len++;
  }
  m->vals[s] = v;
  return ST_OK;
}

typedef struct est_ctx {
  const wl_workload *wl;
  const plat_cluster *cl;
  est_memo memo;
  double **price; /* per program: each op's price on its representative (op_price) */
  int8_t *xnode;  /* per communicator: its members span nodes (1), not (0), unknown (-1) */
} est_ctx;

/* A 64-bit key, never 0, for a memo entry; kinds keep the spaces apart. */
static uint64_t key_of(uint64_t kind, uint64_t a, uint64_t b, uint64_t c)
{
  uint64_t h = mix(mix(mix(mix(0x51ed270b27bd7f8dULL, kind), a), b), c);
  return h ? h : 1;
}

static double compute_time(est_ctx *x, int rank, const wl_op *op)
{
  if (op->duration_s >= 0)
    return op->duration_s;
  if (op->flags & WL_OPF_HOST) /* the CPUs' share of an offloaded step */
    return plat_host_compute_time(x->cl, op);
  int g = plat_gpu_group(x->cl, rank); /* node groups: priced on the rank's device */
  uint64_t k = key_of(1, mix(mix(op->sub, op->dtype), mix(op->flags, op->concurrent)) + (uint64_t)g,
                      mix(mix(dbl_bits(op->flops), dbl_bits(op->bytes)), (uint64_t)op->m),
                      mix(mix((uint64_t)op->n, (uint64_t)op->k), (uint64_t)op->batch));
  size_t s;
  if (x->memo.cap && memo_find(&x->memo, k, &s))
    return x->memo.vals[s];
  double t = plat_compute_time(plat_gpu_device(x->cl, rank), op);
  memo_put(&x->memo, k, t);
  return t;
}

/* A copy to or from host memory: the GPU's link to it, alone. */
static double copy_time(const est_ctx *x, const wl_op *op)
{
  const plat_cluster *c = x->cl;
  return c->host_link_Bps > 0 ? c->host_link_lat_s + op->bytes / c->host_link_Bps : NAN;
}

static double coll_time(est_ctx *x, int comm, const wl_op *op)
{
  int arg = wl_op_coll_arg(op);
  uint64_t k = key_of(2, (uint64_t)comm, (uint64_t)(uint32_t)arg << 8 | op->sub, dbl_bits(op->bytes));
  size_t s;
  if (x->memo.cap && memo_find(&x->memo, k, &s))
    return x->memo.vals[s];
  const wl_comm *c = &x->wl->comms[comm];
  double t = sim_coll_estimate(x->cl, c->ranks, c->size, op->sub, op->bytes, arg);
  memo_put(&x->memo, k, t);
  return t;
}

static double send_time(est_ctx *x, int src, int dst, double bytes)
{
  uint64_t k = key_of(3, (uint64_t)src, (uint64_t)dst, dbl_bits(bytes));
  size_t s;
  if (x->memo.cap && memo_find(&x->memo, k, &s))
    return x->memo.vals[s];
  plat_route r;
  st_err e;
  st_err_clear(&e);
  double t = NAN;
  if (src == dst)
    t = 0;
  else if (!plat_route_get(x->cl, src, dst, &r, &e))
    t = r.latency_s + (r.bw_Bps > 0 ? bytes / r.bw_Bps : 0);
  memo_put(&x->memo, k, t);
  return t;
}

/* The transfers of a rank in flight, as intervals, for the overlap
 * stretch; stage_run drops those no compute op to come can meet. */
typedef struct xfer {
  double a, b;
  uint8_t dp;  /* a data-parallel communicator's (reduced once a step, not per micro-batch) */
  uint8_t nic; /* a collective across nodes: its flows leave through the GPUs' NICs */
} xfer;

typedef struct xfer_set {
  xfer *v, *tmp; /* tmp: scratch, the pieces inside one compute op */
  size_t n, cap;
} xfer_set;

/* Drop the transfers that end before lo. */
static void xfer_prune(xfer_set *x, double lo)
{
  size_t k = 0;
  for (size_t i = 0; i < x->n; i++)
    if (x->v[i].b > lo)
      x->v[k++] = x->v[i];
  x->n = k;
}

static int xfer_add(xfer_set *x, double a, double b, int dp, int nic)
{
  if (!(b > a))
    return ST_OK;
  if (x->n == x->cap) {
    size_t cap = x->cap ? 2 * x->cap : 64;
    xfer *v = realloc(x->v, cap * sizeof *v);
    if (v)
      x->v = v;
    xfer *t = v ? realloc(x->tmp, cap * sizeof *t) : NULL;
    if (!t)
      return ST_ENOMEM;
    x->tmp = t;
    x->cap = cap;
  }
  x->v[x->n++] = (xfer){a, b, (uint8_t)dp, (uint8_t)nic};
  return ST_OK;
}

enum { OV_ALL, OV_NO_DP, OV_NIC };

/* How long [t0, t1] is covered by at least one transfer (OV_NO_DP: one of
 * a communicator other than data-parallel; OV_NIC: a collective across
 * nodes). */
static double xfer_overlap(xfer_set *x, double t0, double t1, int which)
{
  size_t k = 0;
  for (size_t i = 0; i < x->n; i++) {
    if ((which == OV_NO_DP && x->v[i].dp) || (which == OV_NIC && !x->v[i].nic))
      continue;
    double a = x->v[i].a > t0 ? x->v[i].a : t0, b = x->v[i].b < t1 ? x->v[i].b : t1;
    if (b <= a)
      continue;
    size_t j = k++; /* insertion by start */
    while (j > 0 && x->tmp[j - 1].a > a) {
      x->tmp[j] = x->tmp[j - 1];
      j--;
    }
    x->tmp[j] = (xfer){a, b, 0, 0};
  }
  double cov = 0, cur_a = 0, cur_b = -INFINITY;
  for (size_t i = 0; i < k; i++) {
    if (x->tmp[i].a > cur_b) {
      if (cur_b > cur_a)
        cov += cur_b - cur_a;
      cur_a = x->tmp[i].a;
      cur_b = x->tmp[i].b;
    } else if (x->tmp[i].b > cur_b) {
      cur_b = x->tmp[i].b;
    }
  }
  if (cur_b > cur_a)
    cov += cur_b - cur_a;
  return cov;
}

/* A modelled compute op of d seconds from start beside the transfers: d
 * plus q x the time they cover it, the stretch itself covered too (the
 * fixed point, reached in a few rounds: q is about 0.1); *not_dp the
 * part of the stretch transfers other than data-parallel ones cause. */
static double stretched(xfer_set *x, double q, double start, double d, double *not_dp)
{
  double dd = d;
  for (int it = 0; it < 8; it++) {
    double nd = d + q * xfer_overlap(x, start, start + dd, OV_ALL);
    int done = fabs(nd - dd) <= 1e-12 * d;
    dd = nd;
    if (done)
      break;
  }
  *not_dp = fmin(dd - d, q * xfer_overlap(x, start, start + dd, OV_NO_DP));
  return dd;
}

/* A send of d seconds from start between two nodes, beside collectives
 * across nodes: their flows leave through the same NIC, and max-min
 * sharing gives the send half of it while they overlap, so d of transfer
 * takes d + ov/2, ov the overlap (its fixed point, as above). */
static double nic_cover(const xfer_set *x, double t0, double t1);

static double shared_nic(xfer_set *x, int merged, double start, double d)
{
  double dd = d;
  for (int it = 0; it < 8; it++) {
    double ov = merged ? nic_cover(x, start, start + dd) : xfer_overlap(x, start, start + dd, OV_NIC);
    double nd = d + 0.5 * ov;
    int done = fabs(nd - dd) <= 1e-12 * d;
    dd = nd;
    if (done)
      break;
  }
  return dd;
}

/* Whether communicator c's members sit on more than one node (once per
 * communicator). */
static int across_nodes(const est_ctx *x, int c)
{
  if (x->xnode[c] >= 0)
    return x->xnode[c];
  const wl_comm *cm = &x->wl->comms[c];
  int g = x->cl->gpus_per_node, any = 0;
  for (int i = 1; g > 0 && i < cm->size && !any; i++)
    any = cm->ranks[i] / g != cm->ranks[0] / g;
  return x->xnode[c] = (int8_t)any;
}

static double op_price(est_ctx *x, int rank, const wl_op *op);

/* Every op's price on program p's representative rank r, once: the runs
 * below read them.  0 or ST_ENOMEM. */
static int prices(est_ctx *x, int p, int r)
{
  const wl_program *pg = &x->wl->programs[p];
  double *v = malloc((pg->num_ops + 1) * sizeof *v);
  if (!v)
    return ST_ENOMEM;
  for (size_t i = 0; i < pg->num_ops; i++)
    v[i] = op_price(x, r, &pg->ops[i]);
  x->price[p] = v;
  return ST_OK;
}

/* Is op a collective of a data-parallel communicator of rank r? */
static int is_dp_coll(const wl_workload *wl, int r, const wl_op *op)
{
  if (op->kind != WL_OP_COLL)
    return 0;
  int c = wl_rank_comm(wl, r, op->role);
  return c >= 0 && wl->comms[c].kind == WL_COMM_DP;
}

/* One stage's program alone on rank r; with stretch, compute beside the
 * rank's transfers is stretched (the header). */
static int stage_run(est_ctx *x, int r, int stretch, drv_stage_estimate *out, st_err *err)
{
  const wl_workload *wl = x->wl;
  const wl_program *p = &wl->programs[wl->rank_program[r]];
  double *end = malloc((p->num_ops + 1) * sizeof *end);
  double *free_at = calloc((size_t)p->num_streams + 1, sizeof *free_at);
  /* the streams that run compute: only their ops ask what is in flight */
  uint8_t *computes = calloc((size_t)p->num_streams + 1, 1);
  xfer_set xs = {0};
  int rc = ST_OK;
  if (!end || !free_at || !computes) {
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
    goto done;
  }
  double q = stretch ? plat_compute_overlap_factor(plat_gpu_device(x->cl, r)) - 1 : 0;
  const double *price = x->price[wl->rank_program[r]];
  for (size_t i = 0; i < p->num_ops; i++)
    if (p->ops[i].kind == WL_OP_COMPUTE)
      computes[p->ops[i].stream] = 1;
  memset(out, 0, sizeof *out);
  double last = 0;
  for (size_t i = 0; i < p->num_ops; i++) {
    const wl_op *op = &p->ops[i];
    double start = free_at[op->stream], d = 0, start_not_dp = start;
    for (uint32_t w = 0; w < op->wait_count; w++) {
      uint32_t j = p->waits[op->wait_first + w];
      start = fmax(start, end[j]);
      if (!is_dp_coll(wl, r, &p->ops[j]))
        start_not_dp = fmax(start_not_dp, end[j]);
    }
    if (op->kind == WL_OP_COMPUTE &&
        (op->phase == WL_PHASE_FORWARD || op->phase == WL_PHASE_BACKWARD))
      out->dp_wait_work_s += start - start_not_dp;
    int comm = op->kind == WL_OP_MARKER || op->kind == WL_OP_COMPUTE ? -1
                                                                      : wl_rank_comm(wl, r, op->role);
    switch (op->kind) {
    case WL_OP_COMPUTE:
      d = price[i];
      if (xs.n > 8) { /* keep the set to what a compute op to come can meet */
        double lo = start;
        for (int k = 0; k < p->num_streams; k++)
          if (computes[k] && free_at[k] < lo)
            lo = free_at[k];
        xfer_prune(&xs, lo);
      }
      if (q > 0 && op->duration_s < 0 && !(op->flags & WL_OPF_HOST) && xs.n) {
        double d0 = d, not_dp;
        d = stretched(&xs, q, start, d, &not_dp);
        out->stretch_s += d - d0;
        if (op->phase == WL_PHASE_FORWARD || op->phase == WL_PHASE_BACKWARD)
          out->dp_stretch_work_s += d - d0 - not_dp;
      }
      out->compute_s += d;
      if (op->phase == WL_PHASE_FORWARD || op->phase == WL_PHASE_BACKWARD)
        out->work_s = fmax(out->work_s, start + d);
      break;
    case WL_OP_COLL:
      d = price[i];
      out->comm_s += d;
      break;
    case WL_OP_SEND: {
      int dst = wl->comms[comm].ranks[op->peer], g = x->cl->gpus_per_node;
      d = price[i];
      /* (with several programs the stages run together share it: coupled_step) */
      if (stretch && wl->num_programs < 2 && g > 0 && r / g != dst / g && xs.n)
        d = shared_nic(&xs, 0, start, d);
      out->comm_s += d;
      break;
    }
    case WL_OP_COPY:
      d = price[i];
      out->comm_s += d;
      break;
    default: break; /* receives and markers */
    }
    if (!isfinite(d)) {
      rc = st_err_set(err, ST_EINPUT, "cluster '%s': no route of its own to price op %zu of "
                      "program '%s' (analytic estimates need a preset or a cluster spec)",
                      x->cl->name, i, p->name);
      goto done;
    }
    end[i] = start + d;
    free_at[op->stream] = end[i];
    last = fmax(last, end[i]);
    if (stretch && (op->kind == WL_OP_COLL || op->kind == WL_OP_SEND || op->kind == WL_OP_COPY) &&
        xfer_add(&xs, start, end[i], comm >= 0 && wl->comms[comm].kind == WL_COMM_DP,
                 op->kind == WL_OP_COLL && across_nodes(x, comm))) {
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
      goto done;
    }
  }
  out->program_s = last;
done:
  free(end);
  free(free_at);
  free(computes);
  free(xs.v);
  free(xs.tmp);
  return rc;
}

/* ---- the stages together ---------------------------------------------------- */
/* One representative rank per program, all run together: the same pricing
 * as stage_run, but a send and its receive meet (the engine's rendezvous:
 * both end when the later of the two has started, plus the transfer), and a
 * collective whose members run different programs (tied embeddings across
 * the first and last stage) starts when the last of them has arrived.  A
 * collective among copies of one program needs no meeting: the copies are in
 * step.  Each stream runs its ops in order; a stream waits where its next
 * op's peer has not arrived, while the others go on, so the pipeline's fill,
 * drain and the waits at virtual-stage boundaries come out of the schedule
 * itself instead of a formula.  A send and a receive are matched by (the
 * kind of their communicator, the programs on both sides, tag, and how many
 * such ops came before), a collective by (role, its programs, how many came
 * before) — what the engine's (communicator, source, destination, tag) order
 * gives between copies. */

typedef struct cp_post {
  uint64_t key;
  uint32_t gen;    /* the run it belongs to (another run's is an empty slot) */
  int need, have;  /* participants needed and arrived */
  int rep[8];      /* who arrived, at which op, when */
  uint32_t op[8];
  double start[8];
} cp_post;

typedef struct cp_rep {
  int rank;
  const wl_program *p;
  double *end;          /* per op, NAN until known */
  uint8_t *pending;     /* per op: posted, waiting for its peers */
  uint32_t **list;      /* per stream: its ops in order */
  size_t *len, *cur;    /* per stream */
  double *free_at;      /* per stream */
  uint32_t *seq;        /* per op: its match number (filled in order) */
  uint64_t *key;        /* per op: its match key with the number (cp_number) */
  uint8_t *need;        /* per op: the programs taking part */
  xfer_set nic;         /* its collectives across nodes (the first run), merged */
} cp_rep;

typedef struct cp_ctx {
  est_ctx *x;
  cp_rep *reps;
  int nreps;
  int *rep_of_prog;     /* program -> index in reps */
  cp_post *posts;
  size_t cap;
  int pass;             /* 0: record the collectives across nodes; 1: sends share NICs */
  uint32_t gen;         /* the run (posts of earlier runs are empty slots) */
} cp_ctx;

static cp_post *cp_find(cp_ctx *c, uint64_t key, int create)
{
  size_t i = key & (c->cap - 1);
  while (c->posts[i].gen == c->gen && c->posts[i].key != key)
    i = (i + 1) & (c->cap - 1);
  if (c->posts[i].gen != c->gen) {
    if (!create)
      return NULL;
    memset(&c->posts[i], 0, sizeof c->posts[i]);
    c->posts[i].gen = c->gen;
  }
  return &c->posts[i];
}

/* The match key of op i of rep r (seq: how many ops with the same key
 * before it), and how many distinct programs take part (1: no meeting). */
static uint64_t cp_key(cp_ctx *c, int r, const wl_op *op, uint64_t seq, int *need)
{
  const wl_workload *wl = c->x->wl;
  cp_rep *R = &c->reps[r];
  int comm = wl_rank_comm(wl, R->rank, op->role);
  const wl_comm *cm = &wl->comms[comm];
  if (op->kind == WL_OP_SEND || op->kind == WL_OP_RECV) {
    int peer = cm->ranks[op->peer], me = wl->rank_program[R->rank],
        other = wl->rank_program[peer];
    int src = op->kind == WL_OP_SEND ? me : other, dst = op->kind == WL_OP_SEND ? other : me;
    *need = 2;
    if (src == dst)
      *need = 1; /* a copy of this program: in step with us */
    /* the two sides name the pair by different roles (pp_next, pp_prev) of
     * one communicator: its kind stands for both */
    return key_of(10, mix((uint64_t)cm->kind, (uint64_t)(uint32_t)op->tag),
                  mix((uint64_t)src, (uint64_t)dst), seq);
  }
  /* a collective: the distinct programs among its members */
  int progs[8], np = 0;
  for (int k = 0; k < cm->size && np <= 8; k++) {
    int pg = wl->rank_program[cm->ranks[k]], seen = 0;
    for (int j = 0; j < np && !seen; j++)
      seen = progs[j] == pg;
    if (!seen) {
      if (np == 8) {
        np = 9;
        break;
      }
      progs[np++] = pg;
    }
  }
  *need = np;
  uint64_t set = 0;
  for (int j = 0; j < np && j < 8; j++)
    set += mix((uint64_t)progs[j], 77); /* order-free */
  return key_of(11, (uint64_t)op->role, set, seq);
}

static double op_price(est_ctx *x, int rank, const wl_op *op)
{
  const wl_workload *wl = x->wl;
  switch (op->kind) {
  case WL_OP_COMPUTE: return compute_time(x, rank, op);
  case WL_OP_COLL: return coll_time(x, wl_rank_comm(wl, rank, op->role), op);
  case WL_OP_SEND: {
    int comm = wl_rank_comm(wl, rank, op->role);
    return send_time(x, rank, wl->comms[comm].ranks[op->peer], op->bytes);
  }
  case WL_OP_RECV: { /* the transfer is the sender's: priced from its side */
    int comm = wl_rank_comm(wl, rank, op->role);
    return send_time(x, wl->comms[comm].ranks[op->peer], rank, op->bytes);
  }
  case WL_OP_COPY: return copy_time(x, op);
  default: return 0;
  }
}

static void cp_release(cp_ctx *c)
{
  for (int r = 0; c->reps && r < c->nreps; r++) {
    cp_rep *R = &c->reps[r];
    for (int s = 0; R->list && s < R->p->num_streams; s++)
      free(R->list[s]);
    free(R->list);
    free(R->len);
    free(R->cur);
    free(R->free_at);
    free(R->end);
    free(R->pending);
    free(R->seq);
    free(R->key);
    free(R->need);
    free(R->nic.v);
    free(R->nic.tmp);
  }
  free(c->reps);
  free(c->rep_of_prog);
  free(c->posts);
}

/* Sequence numbers: per rep, ops with the same (kind, role, tag, programs)
 * key counted in program order. */
static int cp_number(cp_ctx *c)
{
  est_memo counts = {0};
  int rc = ST_OK;
  for (int r = 0; r < c->nreps && !rc; r++) {
    cp_rep *R = &c->reps[r];
    for (size_t i = 0; i < R->p->num_ops && !rc; i++) {
      const wl_op *op = &R->p->ops[i];
      if (op->kind != WL_OP_COLL && op->kind != WL_OP_SEND && op->kind != WL_OP_RECV)
        continue;
      int need;
      uint64_t k0 = cp_key(c, r, op, 0, &need);
      uint64_t base = key_of(12, (uint64_t)r, k0, op->kind);
      size_t slot;
      double n = counts.cap && memo_find(&counts, base, &slot) ? counts.vals[slot] : 0;
      R->seq[i] = (uint32_t)n;
      R->key[i] = key_of(13, k0, (uint64_t)n, 0); /* both sides: the same key, the same number */
      R->need[i] = (uint8_t)(need > 255 ? 255 : need);
      rc = memo_put(&counts, base, n + 1);
    }
  }
  free(counts.keys);
  free(counts.vals);
  return rc;
}

static int cp_setup(cp_ctx *c, est_ctx *x)
{
  const wl_workload *wl = x->wl;
  memset(c, 0, sizeof *c);
  c->x = x;
  c->rep_of_prog = malloc(((size_t)wl->num_programs + 1) * sizeof *c->rep_of_prog);
  c->reps = calloc((size_t)wl->num_programs + 1, sizeof *c->reps);
  if (!c->rep_of_prog || !c->reps)
    return ST_ENOMEM;
  for (int p = 0; p < wl->num_programs; p++)
    c->rep_of_prog[p] = -1;
  size_t total = 0;
  for (int r = 0; r < wl->num_ranks; r++) {
    int p = wl->rank_program[r];
    if (c->rep_of_prog[p] >= 0)
      continue;
    c->rep_of_prog[p] = c->nreps;
    cp_rep *R = &c->reps[c->nreps++];
    R->rank = r;
    R->p = &wl->programs[p];
    size_t n = R->p->num_ops, ns = (size_t)R->p->num_streams;
    for (size_t i = 0; i < n; i++) { /* the ops that may meet a peer: the posts' table */
      int k = R->p->ops[i].kind;
      total += k == WL_OP_COLL || k == WL_OP_SEND || k == WL_OP_RECV;
    }
    R->end = malloc((n + 1) * sizeof *R->end);
    R->pending = calloc(n + 1, 1);
    R->seq = calloc(n + 1, sizeof *R->seq);
    R->key = calloc(n + 1, sizeof *R->key);
    R->need = calloc(n + 1, 1);
    R->list = calloc(ns + 1, sizeof *R->list);
    R->len = calloc(ns + 1, sizeof *R->len);
    R->cur = calloc(ns + 1, sizeof *R->cur);
    R->free_at = calloc(ns + 1, sizeof *R->free_at);
    if (!R->end || !R->pending || !R->seq || !R->key || !R->need || !R->list || !R->len || !R->cur || !R->free_at)
      return ST_ENOMEM;
    for (size_t i = 0; i < n; i++) {
      R->end[i] = NAN;
      R->len[R->p->ops[i].stream]++;
    }
    for (size_t s = 0; s < ns; s++)
      if (!(R->list[s] = malloc((R->len[s] + 1) * sizeof **R->list)))
        return ST_ENOMEM;
    memset(R->len, 0, ns * sizeof *R->len);
    for (size_t i = 0; i < n; i++) {
      int s = R->p->ops[i].stream;
      R->list[s][R->len[s]++] = (uint32_t)i;
    }
  }
  for (c->cap = 64; c->cap < 4 * total + 4; c->cap *= 2)
    ;
  c->posts = calloc(c->cap, sizeof *c->posts);
  if (!c->posts)
    return ST_ENOMEM;
  c->gen = 1;
  return cp_number(c);
}

/* Whether rep r's send or receive op crosses nodes. */
static int cp_across(const cp_ctx *c, int r, const wl_op *op)
{
  const wl_workload *wl = c->x->wl;
  int rank = c->reps[r].rank, g = c->x->cl->gpus_per_node;
  int peer = wl->comms[wl_rank_comm(wl, rank, op->role)].ranks[op->peer];
  return g > 0 && rank / g != peer / g;
}

/* Advance every stream as far as it can; returns how many ops ended. */
static size_t cp_sweep(cp_ctx *c, int *bad)
{
  size_t moved = 0;
  for (int r = 0; r < c->nreps; r++) {
    cp_rep *R = &c->reps[r];
    const wl_program *p = R->p;
    for (int s = 0; s < p->num_streams; s++) {
      while (R->cur[s] < R->len[s]) {
        uint32_t i = R->list[s][R->cur[s]];
        if (!isnan(R->end[i])) { /* ended (its peers arrived) */
          R->free_at[s] = R->end[i];
          R->cur[s]++;
          moved++;
          continue;
        }
        if (R->pending[i])
          break;
        const wl_op *op = &p->ops[i];
        double start = R->free_at[s];
        int ready = 1;
        for (uint32_t w = 0; w < op->wait_count && ready; w++) {
          double e = R->end[p->waits[op->wait_first + w]];
          ready = !isnan(e);
          start = fmax(start, e);
        }
        if (!ready)
          break;
        double d = c->x->price[c->x->wl->rank_program[R->rank]][i];
        if (!isfinite(d)) {
          *bad = 1;
          return moved;
        }
        int need = 1;
        uint64_t key = 0;
        if (op->kind == WL_OP_COLL || op->kind == WL_OP_SEND || op->kind == WL_OP_RECV) {
          key = R->key[i];
          need = R->need[i];
        }
        if (need <= 1) {
          R->end[i] = start + d;
          if (c->pass == 0 && op->kind == WL_OP_COLL && d > 0 &&
              across_nodes(c->x, wl_rank_comm(c->x->wl, R->rank, op->role)) &&
              xfer_add(&R->nic, start, start + d, 0, 1)) {
            *bad = 1;
            return moved;
          }
          continue; /* taken up at the top of the loop */
        }
        if (need > 8) {
          *bad = 1;
          return moved;
        }
        cp_post *po = cp_find(c, key, 1);
        if (!po->key) {
          po->key = key;
          po->need = need;
        }
        if (po->have >= 8) {
          *bad = 1;
          return moved;
        }
        po->rep[po->have] = r;
        po->op[po->have] = i;
        po->start[po->have++] = start;
        R->pending[i] = 1;
        if (po->have < po->need)
          break;
        /* everyone is here: all end together, after the latest arrival */
        double t0 = 0, dur = 0;
        for (int k = 0; k < po->have; k++) {
          t0 = fmax(t0, po->start[k]);
          cp_rep *Q = &c->reps[po->rep[k]];
          dur = fmax(dur, c->x->price[c->x->wl->rank_program[Q->rank]][po->op[k]]);
        }
        if (c->pass == 1 && op->kind != WL_OP_COLL && cp_across(c, r, op)) {
          double d1 = dur; /* the sender's NIC out, the receiver's in: the longer */
          for (int k = 0; k < po->have; k++)
            d1 = fmax(d1, shared_nic(&c->reps[po->rep[k]].nic, 1, t0, dur));
          dur = d1;
        }
        for (int k = 0; k < po->have; k++) {
          cp_rep *Q = &c->reps[po->rep[k]];
          Q->end[po->op[k]] = t0 + dur;
          Q->pending[po->op[k]] = 0;
        }
      }
    }
  }
  return moved;
}

/* A rep's collectives across nodes as disjoint intervals, by start. */
static int cmp_xfer_a(const void *a, const void *b)
{
  const xfer *x = a, *y = b;
  return (x->a > y->a) - (x->a < y->a);
}

static void nic_merge(xfer_set *x)
{
  if (!x->n)
    return;
  qsort(x->v, x->n, sizeof *x->v, cmp_xfer_a);
  size_t k = 0;
  for (size_t i = 1; i < x->n; i++) {
    if (x->v[i].a <= x->v[k].b)
      x->v[k].b = fmax(x->v[k].b, x->v[i].b);
    else
      x->v[++k] = x->v[i];
  }
  x->n = k + 1;
}

/* How long [t0, t1] meets a merged set (disjoint, by start). */
static double nic_cover(const xfer_set *x, double t0, double t1)
{
  size_t lo = 0, hi = x->n;
  while (lo < hi) { /* the first interval ending after t0 */
    size_t mid = (lo + hi) / 2;
    if (x->v[mid].b <= t0)
      lo = mid + 1;
    else
      hi = mid;
  }
  double cov = 0;
  for (size_t i = lo; i < x->n && x->v[i].a < t1; i++)
    cov += fmin(t1, x->v[i].b) - fmax(t0, x->v[i].a);
  return cov;
}

/* One run of the stages together: the latest end, or NAN when they could
 * not be matched. */
static double cp_run(cp_ctx *c)
{
  int bad = 0;
  while (!bad && cp_sweep(c, &bad) > 0)
    ;
  int done = !bad;
  for (int r = 0; done && r < c->nreps; r++)
    for (int s = 0; done && s < c->reps[r].p->num_streams; s++)
      done = c->reps[r].cur[s] == c->reps[r].len[s];
  if (!done)
    return NAN;
  double step = 0;
  for (int r = 0; r < c->nreps; r++)
    for (size_t i = 0; i < c->reps[r].p->num_ops; i++)
      step = fmax(step, c->reps[r].end[i]);
  return step;
}

static void cp_reset(cp_ctx *c)
{
  for (int r = 0; r < c->nreps; r++) {
    cp_rep *R = &c->reps[r];
    for (size_t i = 0; i < R->p->num_ops; i++) {
      R->end[i] = NAN;
      R->pending[i] = 0;
    }
    memset(R->cur, 0, (size_t)R->p->num_streams * sizeof *R->cur);
    memset(R->free_at, 0, (size_t)R->p->num_streams * sizeof *R->free_at);
  }
  c->gen++; /* every post of the run before is an empty slot now */
}

/* The step of the stages run together, or NAN when they could not be
 * matched (a program shape this does not follow; the formula stands).
 * *shared: what sends across nodes lose to the collectives across nodes
 * they meet on their NICs (max-min sharing halves a send beside one): a
 * second run, whose sends share the NIC with the first run's collectives
 * of both ends (which the sends hardly move), less the first. */
static double coupled_step(est_ctx *x, double *shared, st_err *err)
{
  cp_ctx c;
  int rc = cp_setup(&c, x);
  double step = NAN;
  *shared = 0;
  if (rc) {
    cp_release(&c);
    st_err_set(err, ST_ENOMEM, "out of memory");
    return NAN;
  }
  step = cp_run(&c);
  int any = 0;
  for (int r = 0; r < c.nreps; r++) {
    nic_merge(&c.reps[r].nic);
    any |= c.reps[r].nic.n > 0;
  }
  if (isfinite(step) && any) {
    cp_reset(&c);
    c.pass = 1;
    double s1 = cp_run(&c);
    if (isfinite(s1))
      *shared = fmax(0, s1 - step);
  }
  cp_release(&c);
  return step;
}

int drv_estimate_workload(const wl_workload *wl, const plat_cluster *cl, int microbatches,
                          int vstages, drv_estimate *out, st_err *err)
{
  memset(out, 0, sizeof *out);
  est_ctx x = {.wl = wl, .cl = cl};
  int rc = ST_OK;
  x.price = calloc((size_t)wl->num_programs + 1, sizeof *x.price);
  x.xnode = malloc((size_t)wl->num_comms + 1);
  if (!x.price || !x.xnode) {
    free(x.price);
    free(x.xnode);
    return st_err_set(err, ST_ENOMEM, "out of memory");
  }
  memset(x.xnode, 0xff, (size_t)wl->num_comms + 1);
  double sum_t = 0, max_t = 0, plain_max = 0;
  for (int p = 0; p < wl->num_programs && !rc; p++) {
    int r = 0;
    while (r < wl->num_ranks && wl->rank_program[r] != p)
      r++;
    if (r == wl->num_ranks)
      continue;
    if ((rc = prices(&x, p, r))) {
      st_err_set(err, rc, "out of memory");
      break;
    }
    drv_stage_estimate st, plain;
    if ((rc = stage_run(&x, r, 1, &st, err)))
      break;
    if (wl->num_programs > 1) { /* the bubble is the stages together less the slowest
                                   alone, both without the stretch */
      if ((rc = stage_run(&x, r, 0, &plain, err)))
        break;
      plain_max = fmax(plain_max, plain.program_s);
    }
    double t = st.work_s / (microbatches > 0 ? microbatches : 1);
    sum_t += t;
    max_t = fmax(max_t, t);
    if (st.program_s > out->program_s) {
      out->program_s = st.program_s;
      out->slowest = st;
    }
  }
  double shared = 0;
  double together = rc || wl->num_programs < 2 ? NAN : coupled_step(&x, &shared, err);
  free(x.memo.keys);
  free(x.memo.vals);
  for (int p = 0; p < wl->num_programs; p++)
    free(x.price[p]);
  free(x.price);
  free(x.xnode);
  if (rc)
    return rc;
  if (err && err->code == ST_ENOMEM)
    return err->code;
  out->coupled = isfinite(together);
  out->formula_bubble_s = (sum_t - max_t) / (vstages > 0 ? vstages : 1);
  out->bubble_s = out->coupled ? fmax(0, together - plain_max) : out->formula_bubble_s;
  out->nic_shared_s = shared;
  out->step_s = out->program_s + out->bubble_s + shared;
  out->exposed_comm_s = fmax(0, out->program_s - out->slowest.compute_s) + shared;
  return ST_OK;
}
