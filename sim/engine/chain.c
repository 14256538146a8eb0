/* chain.c — running ahead: a stream waits once for a chain of compute runs
 * and closed-form collectives whose times it knows in advance.
 *
 *  7. Rank classes and running ahead.  Where sym.c finds ranks that are
 *     exact copies of others (the positions of the TP groups on a rail-
 *     optimised fabric), only one rank per class has actors; results are
 *     copied to the others after the run.  A group's collective then has one
 *     simulated member and a closed form, so a stream whose next ops are
 *     compute runs and such collectives knows their times and waits once for
 *     the chain (see "Running ahead" below for how accounting and the
 *     overlap stretch stay exact).  The tuner's choice and closed forms are memoised
 *     per (communicator, op, bytes, root): they do not depend on time.
 *
 * Running ahead.  With rank classes, a communicator of the classes' groups
 * has one simulated member: its collective starts when that member arrives
 * (or when its previous instance ends) and its closed form gives the end.
 * A stream whose next ops are compute runs and such collectives, with no
 * transfer of the rank running, then knows their times in advance and
 * waits once for the whole chain, up to the first op another stream waits
 * on, an op that waits for another stream's op not done yet, or any other
 * kind of op.  Its planned
 * states stand in for its counters in the rank's accounting (acct cuts the
 * time at their changes), so every bucket is what stepping through the
 * chain gives.  A transfer of another stream starting during the chain
 * would stretch the chain's compute: it interrupts the chain (acct
 * releases the stream's semaphore), the pieces already over are applied,
 * and the piece in progress goes on as it would have: a compute run
 * continues its wait and its stretch counts from where it began, a
 * collective waits for its known end.
 */
#include <math.h>
#include <stdlib.h>

#include <simgrid/actor.h>
#include <simgrid/semaphore.h>

#include "eng_int.h"

/* A collective the chain may hold: closed form on a group with one
 * simulated member, and every other stream of the rank that issues ops on
 * it finished or waiting for this stream (so none can issue one before the
 * chain has ended and published its progress). */
static int chain_coll_ok(int rank, const eng__prog *pi, const eng__actor *a, const wl_op *op)
{
  if (op->kind != WL_OP_COLL || (op->flags & WL_OPF_SPLITS))
    return 0;
  int c = wl_rank_comm(eng__E.wl, rank, op->role);
  if (c < 0 || eng__E.wl->comms[c].size < 2 || !eng__E.sym.comm_collapse[c] ||
      eng__E.sym.live[c] != 1 || !eng__E.comms[c].fast ||
      (eng__E.comm_xpod && eng__E.comm_xpod[c])) /* its pod accounting is eng__run_coll's */
    return 0;
  uint32_t others = pi->role_streams[op->role] & ~(1u << (a->stream & 31));
  const eng__rank *rs = &eng__E.ranks[rank];
  for (int i = 0; others && i < rs->n_actors; i++) {
    const eng__actor *b = eng__E.actors[rs->first_actor + i];
    if (b == a || !(others & (1u << (b->stream & 31))))
      continue;
    /* waiting for a position of this stream not reached yet (released
     * waiters that have not run yet do not count) */
    if (!b->finished && !(b->waiting_for >= 0 && b->wait_stream == a->stream &&
                          rs->done[a->stream] <= b->wait_pos))
      return 0;
  }
  return 1;
}

/* Whether every op op waits on in another stream is done already: its start
 * then depends on this stream alone, as stepping would find it (wait_deps
 * returns at once), so the chain may hold it.  TE's TP overlap issues a
 * layer's ring-exchange chunks all waiting on the same norm, done before
 * the first of them starts. */
static int waits_met(int rank, const wl_program *p, const eng__prog *pi, const wl_op *op)
{
  const eng__rank *rs = &eng__E.ranks[rank];
  for (uint32_t w = 0; w < op->wait_count; w++) {
    uint32_t target = p->waits[op->wait_first + w];
    const wl_op *t = &p->ops[target];
    if (t->stream != op->stream && rs->done[t->stream] <= pi->pos[target])
      return 0;
  }
  return 1;
}

static eng__seg *seg_new(eng__actor *a, size_t n)
{
  if (n == a->cap_segs) {
    size_t cap = a->cap_segs ? 2 * a->cap_segs : 64;
    eng__seg *g = realloc(a->segs, cap * sizeof *g);
    if (!g)
      return NULL;
    a->segs = g;
    a->cap_segs = cap;
  }
  return &a->segs[n];
}

/* The chain from stream position k (its waits met): number of pieces
 * planned in a->segs, 0 when there is none worth running. */
static size_t chain_plan(eng__actor *a, int rank, const wl_program *p, const eng__prog *pi,
                         uint32_t k)
{
  double t = eng__now();
  size_t n = 0;
  int c0 = -1;
  double busy = 0;
  for (uint32_t j = k; j < a->num_ops;) {
    const wl_op *op = &p->ops[a->ops[j]];
    if (j > k && op->wait_count > 0 && !waits_met(rank, p, pi, op))
      break;
    if (op->kind == WL_OP_MARKER) {
      if (pi->is_target[a->ops[j]])
        break;
      j++;
      continue;
    }
    eng__seg *g;
    if (op->kind == WL_OP_COMPUTE) {
      if (!(g = seg_new(a, n)))
        return 0;
      double total, modelled;
      uint32_t k2 = eng__compute_run_end(a, rank, p, pi, j, &total, &modelled, 0);
      *g = (eng__seg){j, k2, 0, t, t, t + total, total, modelled, NULL};
      t = g->t1;
      n++;
      j = k2 + 1;
      if (pi->is_target[a->ops[k2]])
        break;
      continue;
    }
    if (!chain_coll_ok(rank, pi, a, op))
      break;
    int c = wl_rank_comm(eng__E.wl, rank, op->role);
    eng__comm *cs = &eng__E.comms[c];
    if (c0 < 0) {
      c0 = c;
      busy = cs->busy_until;
    } else if (c != c0) {
      break;
    }
    if (eng__comm_prepare(c, cs))
      return 0;
    /* the instance as run_coll assembles it (one member: nobody else is
     * assembling one) */
    cs->op = op->sub;
    cs->bytes = op->bytes;
    eng__memo *mm = eng__memo_get(c, cs, op);
    if (!mm)
      return 0;
    if (isnan(mm->T)) {
      cs->ch = mm->ch;
      mm->T = eng__fast_duration(c, cs, op, &a->sched, 0);
    }
    if (!(mm->T >= 0) || !(g = seg_new(a, n)))
      break;
    double ts = fmax(t, busy);
    *g = (eng__seg){j, j, 1, t, ts, ts + mm->T, 0, 0, mm};
    busy = t = g->t1;
    n++;
    j++;
    if (pi->is_target[a->ops[j - 1]])
      break;
  }
  return n >= 2 ? n : 0;
}

/* Apply a finished piece: what stepping through it records. */
static void chain_apply(eng__actor *a, int rank, const wl_program *p, const eng__prog *pi,
                        const eng__seg *g)
{
  sim_rank_stats *st = &eng__E.res->ranks[rank];
  if (!g->coll) {
    double off = 0;
    for (uint32_t j = g->k; j <= g->k2; j++) {
      const wl_op *o = &p->ops[a->ops[j]];
      double d = eng__op_dur(rank, pi, a->ops[j]);
      st->phase_s[o->phase < WL_PHASE_COUNT ? o->phase : 0] += d;
      eng__timeline_add(rank, o, a->ops[j], g->t0 + off, g->t0 + off + d);
      off += d;
    }
    return;
  }
  const wl_op *op = &p->ops[a->ops[g->k]];
  int c = wl_rank_comm(eng__E.wl, rank, op->role);
  eng__comm *cs = &eng__E.comms[c];
  const wl_comm *cm = &eng__E.wl->comms[c];
  cs->ch = g->mm->ch;
  cs->op = op->sub;
  cs->bytes = op->bytes;
  cs->first_arrival = g->t0;
  cs->start = g->ts;
  cs->gen++;
  cs->done_gen++;
  cs->busy_until = cs->fast_end = g->t1;
  if (eng__E.link_bytes) /* the flows' bytes on their links */
    eng__fast_duration(c, cs, op, &a->sched, 1);
  eng__coll_record_add(c, cs, op->sub, cm->size, op->bytes, g->t0, g->ts, g->t1);
  eng__E.fast_instances++;
  st->comm_kind_s[cm->kind < WL_COMM_KIND_COUNT ? cm->kind : 0] += g->t1 - g->ts;
  eng__timeline_add(rank, op, a->ops[g->k], g->t0, g->t1);
}

/* Run the chain planned from position k (n pieces); returns the position
 * to go on from. */
static uint32_t chain_run(eng__actor *a, int rank, const wl_program *p, const eng__prog *pi,
                          uint32_t k, size_t n)
{
  eng__rank *rs = &eng__E.ranks[rank];
  const eng__seg *g = a->segs;
  double end = g[n - 1].t1;
  eng__acct(rank, 0, 0, 0); /* the time before the chain, by the counters alone */
  rs->ahead = g;
  rs->ahead_n = (int)n;
  rs->ahead_pos = 0;
  rs->ahead_end = end;
  rs->ahead_actor = a;
  rs->interrupted = 0;
  int timed_out = sg_sem_acquire_timeout(a->sem, end - eng__now());
  if (rs->interrupted && timed_out)
    sg_sem_acquire(a->sem); /* the interrupt's release, issued as time ran out */
  eng__E.events++;
  eng__E.res->chains++;
  eng__E.res->chains_cut += rs->interrupted != 0;
  double t = eng__now();
  eng__acct(rank, 0, 0, 0); /* up to now, by the plan */
  rs->ahead = NULL;
  size_t i = 0;
  while (i < n && g[i].t1 <= t)
    chain_apply(a, rank, p, pi, &g[i++]);
  if (i == n) {
    uint32_t done_to = g[n - 1].k2 + 1; /* markers between pieces included */
    eng__stream_progress(rank, a->stream, done_to - k);
    return done_to;
  }
  /* interrupted inside piece i: a collective in progress holds its
   * communicator before anyone can see this stream's progress; what is
   * finished is every position before the piece (the markers between the
   * pieces over count too, or the stream's count would lag its position) */
  const eng__seg *h = &g[i];
  if (h->coll)
    chain_apply(a, rank, p, pi, h);
  if (h->k > k)
    eng__stream_progress(rank, a->stream, h->k - k);
  if (h->coll) {
    if (t < h->ts)
      sg_actor_sleep_until(h->ts);
    eng__acct(rank, 0, 1, 0);
    sg_actor_sleep_until(h->t1);
    eng__acct(rank, 0, -1, 0);
    eng__stream_progress(rank, a->stream, 1);
    return h->k2 + 1;
  }
  for (uint32_t j = h->k; j <= h->k2; j++) {
    const wl_op *o = &p->ops[a->ops[j]];
    eng__E.res->ranks[rank].phase_s[o->phase < WL_PHASE_COUNT ? o->phase : 0] +=
        eng__op_dur(rank, pi, a->ops[j]);
  }
  eng__acct(rank, 1, 0, 0);
  double ov0 = eng__E.res->ranks[rank].overlapped_comm_s;
  if (h->t1 > t)
    sg_actor_sleep_for(h->t1 - t);
  eng__compute_run_tail(a, rank, p, pi, h->k, h->k2, h->t0, h->total, h->modelled, ov0, h->total);
  return h->k2 + 1;
}

int eng__chain_try(eng__actor *a, int rank, const wl_program *p, const eng__prog *pi, uint32_t *k)
{
  const wl_op *op = &p->ops[a->ops[*k]];
  if (eng__E.ranks[rank].n_xfer != 0 || eng__E.ranks[rank].ahead ||
      !(op->kind == WL_OP_COMPUTE || chain_coll_ok(rank, pi, a, op)))
    return 0;
  size_t n = chain_plan(a, rank, p, pi, *k);
  if (!n)
    return 0;
  *k = chain_run(a, rank, p, pi, *k, n);
  return 1;
}
