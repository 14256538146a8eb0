/* acct.c — where each rank's time goes, and what the run records (timeline
 * rows, collective records).
 *
 *  5. Accounting.  Per rank, counters of streams computing / transferring /
 *     waiting for a pipeline peer / offloading (a copy to or from host
 *     memory, or the optimizer step on the CPU); at each change the elapsed
 *     time goes to one bucket by priority (compute > exposed comm > exposed
 *     offload > bubble > idle), so the buckets add up to the rank's finish
 *     time exactly.  Offload time is also counted whatever else runs.
 *     A stream running ahead (chain.c) stands in for its counters with its
 *     plan, cut at the plan's changes.  Exposed time while a transfer that
 *     crosses pods runs (a collective of a communicator spanning pods, a
 *     send/recv between pods) is also counted apart (pod_exposed_s): the
 *     step's wait on the data-centre links.  Chains never hold one.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/semaphore.h>

#include "eng_int.h"

static void charge(sim_rank_stats *st, double dt, int nc, int nx, int nb, int no, int nxp)
{
  if (!(dt > 0))
    return;
  if (no > 0)
    st->offload_s += dt;
  if (nc > 0) {
    st->compute_s += dt;
    if (nx > 0)
      st->overlapped_comm_s += dt;
  } else if (nx > 0) {
    st->exposed_comm_s += dt;
    if (nxp > 0)
      st->pod_exposed_s += dt;
  } else if (no > 0) {
    st->offload_exposed_s += dt;
  } else if (nb > 0) {
    st->bubble_s += dt;
  } else {
    st->idle_s += dt;
  }
}

/* What a running-ahead stream is doing at time u: 1 computing, 2
 * transferring, 0 waiting; *until: when that changes. */
static int ahead_state(eng__rank *rs, double u, double *until)
{
  while (rs->ahead_pos < rs->ahead_n && rs->ahead[rs->ahead_pos].t1 <= u)
    rs->ahead_pos++;
  if (rs->ahead_pos >= rs->ahead_n || u >= rs->ahead_end) {
    *until = INFINITY;
    return 0;
  }
  const eng__seg *g = &rs->ahead[rs->ahead_pos];
  if (!g->coll) {
    *until = fmin(g->t1, rs->ahead_end);
    return 1;
  }
  if (u < g->ts) {
    *until = g->ts;
    return 0;
  }
  *until = fmin(g->t1, rs->ahead_end);
  return 2;
}

/* Account the time since the last change to one bucket, then apply deltas.
 * With a stream running ahead, the time is cut where its state changes. */
void eng__acct(int rank, int dc, int dx, int db)
{
  eng__rank *rs = &eng__E.ranks[rank];
  sim_rank_stats *st = &eng__E.res->ranks[rank];
  double t = eng__now();
  if (!rs->ahead) {
    charge(st, t - rs->last_t, rs->n_compute, rs->n_xfer, rs->n_bubble, rs->n_offload, rs->n_xpod);
  } else {
    for (double u = rs->last_t; u < t;) {
      double until;
      int a = ahead_state(rs, u, &until);
      double v = fmin(until, t);
      charge(st, v - u, rs->n_compute + (a == 1), rs->n_xfer + (a == 2), rs->n_bubble,
             rs->n_offload, rs->n_xpod);
      u = v;
    }
    if (dx > 0 && !rs->interrupted && t < rs->ahead_end) {
      rs->interrupted = 1; /* a transfer beside its compute: it must see it */
      sg_sem_release(rs->ahead_actor->sem);
    }
  }
  rs->last_t = t;
  rs->n_compute += dc;
  rs->n_xfer += dx;
  rs->n_bubble += db;
}

void eng__acct_offload(int rank, int d)
{
  eng__acct(rank, 0, 0, 0);
  eng__E.ranks[rank].n_offload += d;
}

/* Transfers of the rank running now, a running-ahead stream's included. */
int eng__xfer_now(int rank)
{
  eng__rank *rs = &eng__E.ranks[rank];
  if (!rs->ahead)
    return rs->n_xfer;
  double until;
  return rs->n_xfer + (ahead_state(rs, eng__now(), &until) == 2);
}

void eng__timeline_add(int rank, const wl_op *op, uint32_t opi, double t0, double t1)
{
  if (!eng__E.opt->timeline)
    return;
  sim_result *r = eng__E.res;
  if (r->num_timeline == eng__E.cap_timeline) {
    size_t cap = eng__E.cap_timeline ? eng__E.cap_timeline * 2 : 4096;
    sim_timeline_row *n = realloc(r->timeline, cap * sizeof *n);
    if (!n) {
      eng__fail(ST_ENOMEM, "out of memory recording the timeline");
      return;
    }
    r->timeline = n;
    eng__E.cap_timeline = cap;
  }
  sim_timeline_row *row = &r->timeline[r->num_timeline++];
  row->rank = rank;
  row->stream = op->stream;
  row->kind = op->kind;
  row->sub = op->sub;
  row->program = eng__E.wl->rank_program[rank];
  row->op = opi;
  row->start_s = t0;
  row->end_s = t1;
  row->bytes = op->bytes;
  row->flops = op->flops;
}

sim_coll_record *eng__coll_record_new(void)
{
  sim_result *r = eng__E.res;
  if (!eng__E.opt->record_colls)
    return NULL;
  if (r->num_colls == eng__E.cap_colls) {
    size_t cap = eng__E.cap_colls ? eng__E.cap_colls * 2 : 1024;
    sim_coll_record *n = realloc(r->colls, cap * sizeof *n);
    if (!n) {
      eng__fail(ST_ENOMEM, "out of memory recording collectives");
      return NULL;
    }
    r->colls = n;
    eng__E.cap_colls = cap;
  }
  sim_coll_record *c = &r->colls[r->num_colls++];
  memset(c, 0, sizeof *c);
  return c;
}

void eng__coll_record_add(int c, const eng__comm *cs, int opk, int n, double bytes,
                          double first, double start, double end)
{
  sim_coll_record *rec = eng__coll_record_new();
  if (!rec)
    return;
  rec->comm = c;
  rec->kind = WL_OP_COLL;
  rec->op = (uint8_t)opk;
  rec->algo = (uint8_t)cs->ch.algo;
  rec->proto = (uint8_t)cs->ch.proto;
  rec->channels = cs->ch.nch;
  rec->nranks = n;
  rec->src = rec->dst = -1;
  rec->bytes = bytes;
  rec->first_arrival_s = first;
  rec->start_s = start;
  rec->end_s = end;
  double dt = end - start;
  rec->algbw_GBps = dt > 0 ? bytes / dt / 1e9 : 0;
  rec->busbw_GBps = rec->algbw_GBps * sim_busbw_factor(opk, n);
}

void eng__xfer_start(int rank, int xpod)
{
  eng__acct(rank, 0, 1, 0);
  eng__E.ranks[rank].n_xpod += xpod != 0;
}

void eng__xfer_end(int rank, const wl_comm *cm, double start, int xpod)
{
  eng__acct(rank, 0, -1, 0);
  eng__E.ranks[rank].n_xpod -= xpod != 0;
  int kind = cm->kind < WL_COMM_KIND_COUNT ? cm->kind : 0;
  eng__E.res->ranks[rank].comm_kind_s[kind] += eng__now() - start;
}
