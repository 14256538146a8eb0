/* coll.c — collective algorithms as per-member schedules of flows.
 *
 * Sizes follow nccl-tests (workload.h).  For n members and S bytes:
 *   ring all-reduce       2(n-1) steps of S/n on every edge i -> i+1
 *   ring all-gather and reduce-scatter   n-1 steps of S/n
 *   chain broadcast/reduce  the buffer pipelined along root -> root+1 -> ...
 *   direct all-to-all     member i sends S/n (or its split) to every j
 * Flow fidelity sends each edge's whole traffic as one flow and charges the
 * other steps' latencies up front (steps x slowest edge latency minus the
 * latency the flow itself pays), so on an uncontended ring the time is
 * exactly steps x (lat + S/(n B)) for all-reduce-like rings.  Step fidelity
 * sends every step as its own flow (chains: in up to 64 chunks of >= 1 MiB).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_int.h"

static const char *const algo_names[] = {"ring", "direct", "chain"};

const char *sim_coll_algo_name(int algo)
{
  return algo >= 0 && algo < SIM_ALGO_COUNT_BASE ? algo_names[algo] : "?";
}

void sim_sched_init(sim_sched *s) { memset(s, 0, sizeof *s); }

void sim_sched_release(sim_sched *s)
{
  free(s->rounds);
  free(s->xfers);
  sim_sched_init(s);
}

void sim_sched_clear(sim_sched *s)
{
  s->nrounds = 0;
  s->nxfers = 0;
}

static sim_round *round_new(sim_sched *s, double pre_s)
{
  if (s->nrounds == s->cap_rounds) {
    size_t cap = s->cap_rounds ? s->cap_rounds * 2 : 8;
    sim_round *r = realloc(s->rounds, cap * sizeof *r);
    if (!r)
      return NULL;
    s->rounds = r;
    s->cap_rounds = cap;
  }
  sim_round *r = &s->rounds[s->nrounds++];
  memset(r, 0, sizeof *r);
  r->pre_s = pre_s;
  r->send_first = r->recv_first = (uint32_t)s->nxfers;
  return r;
}

/* Add a transfer to the last round; sends must all come before receives. */
static int xfer_add(sim_sched *s, int is_send, int peer, double bytes)
{
  if (s->nxfers == s->cap_xfers) {
    size_t cap = s->cap_xfers ? s->cap_xfers * 2 : 16;
    sim_xfer *x = realloc(s->xfers, cap * sizeof *x);
    if (!x)
      return ST_ENOMEM;
    s->xfers = x;
    s->cap_xfers = cap;
  }
  sim_round *r = &s->rounds[s->nrounds - 1];
  s->xfers[s->nxfers].peer = peer;
  s->xfers[s->nxfers].bytes = bytes;
  s->nxfers++;
  if (is_send) {
    r->nsend++;
    r->recv_first = r->send_first + r->nsend;
  } else {
    r->nrecv++;
  }
  return ST_OK;
}

int sim_coll_choose(const sim_coll_ctx *ctx)
{
  switch (ctx->op) {
  case WL_COLL_ALLTOALL: return SIM_ALGO_DIRECT;
  case WL_COLL_BROADCAST:
  case WL_COLL_REDUCE: return SIM_ALGO_CHAIN;
  default: return SIM_ALGO_RING;
  }
}

static int ring_steps(int op, int n)
{
  return op == WL_COLL_ALLREDUCE || op == WL_COLL_BARRIER ? 2 * (n - 1) : n - 1;
}

static int plan_direct(const sim_coll_ctx *c, int m, sim_sched *s)
{
  if (!round_new(s, 0))
    return ST_ENOMEM;
  for (int k = 1; k < c->n; k++) {
    int to = (m + k) % c->n;
    double b = c->splits ? c->splits[to] : c->bytes / c->n;
    if (xfer_add(s, 1, to, b))
      return ST_ENOMEM;
  }
  for (int k = 1; k < c->n; k++)
    if (xfer_add(s, 0, (m - k + c->n) % c->n, 0))
      return ST_ENOMEM;
  return ST_OK;
}

static int plan_ring(const sim_coll_ctx *c, int m, sim_sched *s)
{
  int n = c->n, steps = ring_steps(c->op, n);
  int next = (m + 1) % n, prev = (m - 1 + n) % n;
  if (c->fidelity == SIM_FID_STEP && c->op != WL_COLL_BARRIER) {
    for (int k = 0; k < steps; k++) {
      if (!round_new(s, 0) || xfer_add(s, 1, next, c->bytes / n) || xfer_add(s, 0, prev, 0))
        return ST_ENOMEM;
    }
    return ST_OK;
  }
  double edge = c->op == WL_COLL_ALLREDUCE ? 2.0 * (n - 1) / n * c->bytes
                : c->op == WL_COLL_BARRIER ? 0
                                           : (double)(n - 1) / n * c->bytes;
  double pre = steps * c->ring_lat_max - c->edge_lat[m];
  if (!round_new(s, pre > 0 ? pre : 0) || xfer_add(s, 1, next, edge) || xfer_add(s, 0, prev, 0))
    return ST_ENOMEM;
  return ST_OK;
}

/* Broadcast: root -> root+1 -> ... -> root-1.  Reduce: the same chain reversed. */
static int plan_chain(const sim_coll_ctx *c, int m, sim_sched *s)
{
  int n = c->n, root = c->root;
  int pos = (m - root + n) % n; /* distance from the root along the chain */
  int bcast = c->op == WL_COLL_BROADCAST;
  int to, from, sends, recvs;
  if (bcast) {
    sends = pos != n - 1;
    recvs = pos != 0;
    to = (m + 1) % n;
    from = (m - 1 + n) % n;
  } else {
    sends = pos != 0;
    recvs = pos != n - 1;
    to = (m - 1 + n) % n;
    from = (m + 1) % n;
  }
  if (c->fidelity == SIM_FID_STEP) {
    int chunks = (int)fmin(64, fmax(1, floor(c->bytes / (1 << 20))));
    for (int k = 0; k < chunks; k++) {
      if (!round_new(s, 0))
        return ST_ENOMEM;
      if (sends && xfer_add(s, 1, to, c->bytes / chunks))
        return ST_ENOMEM;
      if (recvs && xfer_add(s, 0, from, 0))
        return ST_ENOMEM;
    }
    return ST_OK;
  }
  /* flow: pipelined, every edge carries S concurrently after (n-1) latencies */
  double own = sends ? (bcast ? c->edge_lat[m] : c->edge_lat[to]) : 0;
  double pre = (n - 1) * c->ring_lat_max - own;
  if (!round_new(s, sends && pre > 0 ? pre : 0))
    return ST_ENOMEM;
  if (sends && xfer_add(s, 1, to, c->bytes))
    return ST_ENOMEM;
  if (recvs && xfer_add(s, 0, from, 0))
    return ST_ENOMEM;
  return ST_OK;
}

int sim_coll_plan(const sim_coll_ctx *ctx, int m, sim_sched *out)
{
  sim_sched_clear(out);
  switch (ctx->algo) {
  case SIM_ALGO_DIRECT: return plan_direct(ctx, m, out);
  case SIM_ALGO_CHAIN: return plan_chain(ctx, m, out);
  default: return plan_ring(ctx, m, out);
  }
}
