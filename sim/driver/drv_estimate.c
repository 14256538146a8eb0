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
 * slowest stage's program plus the bubble. */
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
} est_ctx;

/* A 64-bit key, never 0, for a memo entry; kinds keep the spaces apart. */
static uint64_t key_of(uint64_t kind, uint64_t a, uint64_t b, uint64_t c)
{
  uint64_t h = mix(mix(mix(mix(0x51ed270b27bd7f8dULL, kind), a), b), c);
  return h ? h : 1;
}

static double compute_time(est_ctx *x, const wl_op *op)
{
  if (op->duration_s >= 0)
    return op->duration_s;
  uint64_t k = key_of(1, mix(mix(op->sub, op->dtype), mix(op->flags, op->concurrent)),
                      mix(mix(dbl_bits(op->flops), dbl_bits(op->bytes)), (uint64_t)op->m),
                      mix(mix((uint64_t)op->n, (uint64_t)op->k), (uint64_t)op->batch));
  size_t s;
  if (x->memo.cap && memo_find(&x->memo, k, &s))
    return x->memo.vals[s];
  double t = plat_compute_time(&x->cl->device, op);
  memo_put(&x->memo, k, t);
  return t;
}

static double coll_time(est_ctx *x, int comm, const wl_op *op)
{
  uint64_t k = key_of(2, (uint64_t)comm, op->sub, dbl_bits(op->bytes));
  size_t s;
  if (x->memo.cap && memo_find(&x->memo, k, &s))
    return x->memo.vals[s];
  const wl_comm *c = &x->wl->comms[comm];
  double t = sim_coll_estimate(x->cl, c->ranks, c->size, op->sub, op->bytes);
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

/* One stage's program alone on rank r. */
static int stage_run(est_ctx *x, int r, drv_stage_estimate *out, st_err *err)
{
  const wl_workload *wl = x->wl;
  const wl_program *p = &wl->programs[wl->rank_program[r]];
  double *end = malloc((p->num_ops + 1) * sizeof *end);
  double *free_at = calloc((size_t)p->num_streams + 1, sizeof *free_at);
  if (!end || !free_at) {
    free(end);
    free(free_at);
    return st_err_set(err, ST_ENOMEM, "out of memory");
  }
  memset(out, 0, sizeof *out);
  double last = 0;
  for (size_t i = 0; i < p->num_ops; i++) {
    const wl_op *op = &p->ops[i];
    double start = free_at[op->stream], d = 0;
    for (uint32_t w = 0; w < op->wait_count; w++)
      start = fmax(start, end[p->waits[op->wait_first + w]]);
    int comm = op->kind == WL_OP_MARKER || op->kind == WL_OP_COMPUTE ? -1
                                                                      : wl_rank_comm(wl, r, op->role);
    switch (op->kind) {
    case WL_OP_COMPUTE:
      d = compute_time(x, op);
      out->compute_s += d;
      if (op->phase == WL_PHASE_FORWARD || op->phase == WL_PHASE_BACKWARD)
        out->work_s = fmax(out->work_s, start + d);
      break;
    case WL_OP_COLL:
      d = coll_time(x, comm, op);
      out->comm_s += d;
      break;
    case WL_OP_SEND:
      d = send_time(x, r, wl->comms[comm].ranks[op->peer], op->bytes);
      out->comm_s += d;
      break;
    default: break; /* receives and markers */
    }
    if (!isfinite(d)) {
      free(end);
      free(free_at);
      return st_err_set(err, ST_EINPUT, "cluster '%s': no route of its own to price op %zu of "
                        "program '%s' (analytic estimates need a preset or a cluster spec)",
                        x->cl->name, i, p->name);
    }
    end[i] = start + d;
    free_at[op->stream] = end[i];
    last = fmax(last, end[i]);
  }
  out->program_s = last;
  free(end);
  free(free_at);
  return ST_OK;
}

int drv_estimate_workload(const wl_workload *wl, const plat_cluster *cl, int microbatches,
                          int vstages, drv_estimate *out, st_err *err)
{
  memset(out, 0, sizeof *out);
  est_ctx x = {.wl = wl, .cl = cl};
  int rc = ST_OK;
  double sum_t = 0, max_t = 0;
  for (int p = 0; p < wl->num_programs && !rc; p++) {
    int r = 0;
    while (r < wl->num_ranks && wl->rank_program[r] != p)
      r++;
    if (r == wl->num_ranks)
      continue;
    drv_stage_estimate st;
    if ((rc = stage_run(&x, r, &st, err)))
      break;
    double t = st.work_s / (microbatches > 0 ? microbatches : 1);
    sum_t += t;
    max_t = fmax(max_t, t);
    if (st.program_s > out->program_s) {
      out->program_s = st.program_s;
      out->slowest = st;
    }
  }
  free(x.memo.keys);
  free(x.memo.vals);
  if (rc)
    return rc;
  out->bubble_s = (sum_t - max_t) / (vstages > 0 ? vstages : 1);
  out->step_s = out->program_s + out->bubble_s;
  out->exposed_comm_s = fmax(0, out->program_s - out->slowest.compute_s);
  return ST_OK;
}
