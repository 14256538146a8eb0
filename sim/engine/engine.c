/* engine.c — the replay engine (see sim.h for the contract).
 *
 * Design notes
 *  1. Actors.  Each (rank, stream) whose program has ops on that stream is a
 *     SimGrid actor on the rank's GPU host.  Programs are shared between
 *     ranks; per-rank state is only counters (ops done per stream) and the
 *     time accounting, so memory is O(ranks x streams), not O(ranks x ops).
 *  2. Compute: compute.c (coalesced waits, the overlap stretch).
 *  3. Collectives.  Members rendezvous (generation counter + condition per
 *     communicator): nobody starts until all have arrived, as in NCCL.  Then
 *     each member posts the flows of the algorithm it sends and receives
 *     (mailbox comms between GPU hosts, so SimGrid shares links max-min
 *     fairly with every other flow), and a completion rendezvous releases
 *     all members together when the last flow ends — a synchronous ring
 *     runs at the pace of its slowest edge.  In flow fidelity each algorithm
 *     edge is one flow carrying that edge's total bytes, and the algorithm's
 *     remaining latency terms are charged as a wait before it; in step
 *     fidelity every step is its own flow.
 *  4. Send/recv.  The two sides rendezvous on (communicator, src, dst, tag);
 *     the first to arrive waits (pipeline bubble), then one flow.
 *  5. Accounting.  Per rank, counters of streams computing / transferring /
 *     waiting for a pipeline peer; at each change the elapsed time goes to
 *     one bucket by priority (compute > exposed comm > bubble > idle), so
 *     the buckets add up to the rank's finish time exactly.
 *  6. Failure.  A member that never arrives leaves the others blocked; when
 *     SimGrid runs out of events the run ends and the rendezvous states say
 *     which communicator, op and ranks were stuck (ST_ESIM).
 *  7. Rank classes and running ahead: chain.c (and sym.c, the classes).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <simgrid/mailbox.h>
#include <simgrid/plugins/load.h>
#include <simgrid/semaphore.h>
#include <xbt/dynar.h>

#include "eng_int.h"

eng__state eng__E;

/* ---- small helpers -------------------------------------------------------- */

void eng__fail(int code, const char *msg)
{
  if (!eng__E.failed) {
    eng__E.failed = 1;
    st_err_set(eng__E.err, code, "%s", msg);
  }
}

static void charge(sim_rank_stats *st, double dt, int nc, int nx, int nb)
{
  if (!(dt > 0))
    return;
  if (nc > 0) {
    st->compute_s += dt;
    if (nx > 0)
      st->overlapped_comm_s += dt;
  } else if (nx > 0) {
    st->exposed_comm_s += dt;
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
    charge(st, t - rs->last_t, rs->n_compute, rs->n_xfer, rs->n_bubble);
  } else {
    for (double u = rs->last_t; u < t;) {
      double until;
      int a = ahead_state(rs, u, &until);
      double v = fmin(until, t);
      charge(st, v - u, rs->n_compute + (a == 1), rs->n_xfer + (a == 2), rs->n_bubble);
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

/* Transfers of the rank running now, a running-ahead stream's included. */
int eng__xfer_now(int rank)
{
  eng__rank *rs = &eng__E.ranks[rank];
  if (!rs->ahead)
    return rs->n_xfer;
  double until;
  return rs->n_xfer + (ahead_state(rs, eng__now(), &until) == 2);
}

static void wq_wait(eng__waitq *q)
{
  if (q->n == q->cap) {
    int cap = q->cap ? q->cap * 2 : 4;
    eng__actor **a = realloc(q->a, (size_t)cap * sizeof *a);
    if (!a) {
      eng__fail(ST_ENOMEM, "out of memory");
      return;
    }
    q->a = a;
    q->cap = cap;
  }
  eng__actor *self = sg_actor_self_get_data();
  q->a[q->n++] = self;
  sg_sem_acquire(self->sem);
}

/* Every release is a simcall, during which other actors run and may queue
 * themselves again: the waiters are taken out of the queue first, so those
 * new entries neither overwrite nor join the ones being woken. */
static void wq_wake(eng__waitq *q)
{
  int n = q->n, cap = q->cap;
  if (!n)
    return;
  eng__actor **a = q->a;
  q->a = NULL;
  q->n = q->cap = 0;
  for (int i = 0; i < n; i++)
    sg_sem_release(a[i]->sem);
  if (!q->a) {
    q->a = a;
    q->cap = cap;
  } else {
    free(a);
  }
}

static void wq_release(eng__waitq *q)
{
  free(q->a);
  q->a = NULL;
  q->n = q->cap = 0;
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

static sim_coll_record *coll_record_new(void)
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

typedef struct mb_entry {
  int32_t comm, src, dst;
  sg_mailbox_t mb;
} mb_entry;

static sg_mailbox_t mailbox_for(int comm, int src, int dst)
{
  uint64_t key = eng__key4((uint64_t)comm, (uint64_t)src, (uint64_t)dst, 0x636f6c6cULL);
  mb_entry *e = eng__map_get(&eng__E.mailboxes, key);
  if (e && e->comm == comm && e->src == src && e->dst == dst)
    return e->mb;
  char name[96];
  snprintf(name, sizeof name, "c%d:%d>%d", comm, src, dst);
  sg_mailbox_t mb = sg_mailbox_by_name(name);
  if (!e) {
    e = st_arena_alloc(&eng__E.arena, sizeof *e);
    if (!e || eng__map_put(&eng__E.mailboxes, key, e)) {
      eng__fail(ST_ENOMEM, "out of memory creating mailboxes");
      return mb;
    }
    e->comm = comm;
    e->src = src;
    e->dst = dst;
    e->mb = mb;
  }
  return mb;
}

/* ---- cross-stream waits -------------------------------------------------- */

static void wait_deps(eng__actor *a, int rank, const wl_program *p, const eng__prog *pi,
                      const wl_op *op)
{
  eng__rank *rs = &eng__E.ranks[rank];
  for (uint32_t w = 0; w < op->wait_count; w++) {
    uint32_t target = p->waits[op->wait_first + w];
    const wl_op *t = &p->ops[target];
    if (t->stream == op->stream)
      continue; /* implied by stream order */
    while (rs->done[t->stream] <= pi->pos[target]) {
      a->waiting_for = target;
      a->wait_stream = t->stream;
      a->wait_pos = pi->pos[target];
      rs->waiters++;
      wq_wait(&rs->wq);
      rs->waiters--;
    }
  }
  a->waiting_for = -1;
}

/* A progress line on stderr for runs longer than about two seconds, when
 * stderr is a terminal: simulated time, ops done, rate and ETA (from the
 * fraction of all ranks' ops done). */
static void progress(uint32_t n)
{
  eng__E.ops_done += n;
  if (!eng__E.progress_on || (eng__E.ops_done & 0x3ff) != 0)
    return;
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  double wall = (double)(t.tv_sec - eng__E.wall0.tv_sec) + 1e-9 * (double)(t.tv_nsec - eng__E.wall0.tv_nsec);
  if (wall < 2.0 || wall - eng__E.last_progress < 0.5)
    return;
  eng__E.last_progress = wall;
  double frac = (double)eng__E.ops_done / (double)eng__E.ops_total;
  double eta = frac > 0 ? wall * (1 / frac - 1) : 0;
  fprintf(stderr, "\rsimtrain: simulated %.6f s, %llu/%llu ops (%.0f%%), %.0f ops/s, ETA %.0f s   ",
          eng__now(), (unsigned long long)eng__E.ops_done, (unsigned long long)eng__E.ops_total, 100 * frac,
          (double)eng__E.ops_done / wall, eta);
  eng__E.progress_shown = 1;
}

/* A stream of the rank moved on: wake the streams whose wait it satisfies
 * (only those: waking all of them at every op made each re-check and queue
 * again).  They leave the queue before any release, since a release is a
 * simcall during which others may queue. */
void eng__stream_progress(int rank, int stream, uint32_t n)
{
  progress(n);
  eng__rank *rs = &eng__E.ranks[rank];
  rs->done[stream] += n;
  if (rs->waiters == 0)
    return;
  eng__waitq *q = &rs->wq;
  eng__actor *local[16], **wake = local;
  if (q->n > 16 && !(wake = malloc((size_t)q->n * sizeof *wake))) {
    eng__fail(ST_ENOMEM, "out of memory");
    return;
  }
  int k = 0, j = 0;
  for (int i = 0; i < q->n; i++) {
    eng__actor *a = q->a[i];
    if (a->wait_stream == stream && rs->done[stream] > a->wait_pos)
      wake[k++] = a;
    else
      q->a[j++] = a;
  }
  q->n = j;
  for (int i = 0; i < k; i++)
    sg_sem_release(wake[i]->sem);
  if (wake != local)
    free(wake);
}

/* ---- collectives --------------------------------------------------------- */

static void comm_ring_latency(int c, eng__comm *cs)
{
  const wl_comm *cm = &eng__E.wl->comms[c];
  cs->ring_lat_max = 0;
  for (int i = 0; i < cm->size; i++) {
    int j = (i + 1) % cm->size;
    double l = sg_host_get_route_latency(eng__E.hosts[cm->ranks[i]], eng__E.hosts[cm->ranks[j]]);
    if (l > cs->ring_lat_max)
      cs->ring_lat_max = l;
  }
  cs->have_ring_lat = 1;
}

/* What every instance of communicator c needs, built at its first: the
 * largest ring-neighbour latency and the members' layout.  0 or ST_ENOMEM. */
int eng__comm_prepare(int c, eng__comm *cs)
{
  const wl_comm *cm = &eng__E.wl->comms[c];
  if (!cs->have_ring_lat)
    comm_ring_latency(c, cs);
  if (!cs->have_lay) {
    if (coll_layout_build(&eng__E.arena, cm->ranks, cm->size, eng__E.cl, &cs->lay))
      return ST_ENOMEM;
    cs->have_lay = 1;
  }
  return ST_OK;
}

static double member_route_lat(void *u, int a, int b)
{
  const eng__route_ctx *rc = u;
  return sg_host_get_route_latency(eng__E.hosts[rc->ranks[a]], eng__E.hosts[rc->ranks[b]]);
}

/* The algorithm context of communicator c's current instance. */
void eng__coll_ctx_fill(int c, eng__comm *cs, coll_ctx *ctx, eng__route_ctx *rc)
{
  const wl_comm *cm = &eng__E.wl->comms[c];
  memset(ctx, 0, sizeof *ctx);
  rc->ranks = cm->ranks;
  ctx->op = cs->op;
  ctx->n = cm->size;
  ctx->bytes = cs->bytes;
  ctx->ranks = cm->ranks;
  ctx->cl = eng__E.cl;
  ctx->fidelity = eng__E.opt->fidelity;
  ctx->model = eng__E.opt->coll_model;
  ctx->force_algo = eng__E.opt->coll_algo;
  ctx->force_proto = eng__E.opt->coll_proto;
  ctx->force_nch = eng__E.opt->coll_channels;
  ctx->lay = &cs->lay;
  ctx->ch = cs->ch;
  ctx->route_lat = member_route_lat;
  ctx->route_u = rc;
  ctx->ring_lat_max = cs->ring_lat_max;
}

/* Member m's part of one collective instance: the algorithm's rounds, each
 * a wait for latency terms then flows to and from other members. */
static void coll_transfer(int c, eng__comm *cs, int m, const wl_program *p, const wl_op *op,
                          coll_sched *sched)
{
  const wl_comm *cm = &eng__E.wl->comms[c];
  if (!cs->have_ring_lat)
    comm_ring_latency(c, cs);
  if (eng__E.failed)
    return;
  coll_ctx ctx;
  eng__route_ctx rctx;
  eng__coll_ctx_fill(c, cs, &ctx, &rctx);
  ctx.root = op->peer >= 0 ? op->peer : 0;
  ctx.splits = (op->flags & WL_OPF_SPLITS) ? &p->splits[op->split_first] : NULL;
  if (coll_plan(&ctx, m, sched)) {
    eng__fail(ST_ENOMEM, "out of memory planning a collective");
    return;
  }
  sg_comm_t local[8];
  void *data;
  for (size_t r = 0; r < sched->nrounds; r++) {
    const coll_round *rd = &sched->rounds[r];
    size_t nc = rd->nsend + rd->nrecv;
    sg_comm_t *comms = nc <= 8 ? local : malloc(nc * sizeof *comms);
    if (!comms) {
      eng__fail(ST_ENOMEM, "out of memory");
      return;
    }
    size_t k = 0;
    /* receives first, so a peer with less latency to charge is not held up */
    for (uint32_t i = 0; i < rd->nrecv; i++)
      comms[k++] = sg_mailbox_get_async(mailbox_for(c, sched->xfers[rd->recv_first + i].peer, m),
                                        &data);
    if (rd->pre_s > 0)
      sg_actor_sleep_for(rd->pre_s);
    for (uint32_t i = 0; i < rd->nsend; i++) {
      const coll_xfer *x = &sched->xfers[rd->send_first + i];
      eng__account_flow(cm->ranks[m], cm->ranks[x->peer], x->bytes, c, WL_OP_COLL, op->sub);
      comms[k++] = sg_mailbox_put_async(mailbox_for(c, m, x->peer), &eng__E.dummy_payload,
                                        (long)llround(x->bytes));
    }
    sg_comm_wait_all(comms, k);
    eng__E.events += k;
    if (comms != local)
      free(comms);
  }
}

void eng__coll_record_add(int c, const eng__comm *cs, int opk, int n, double bytes,
                            double first, double start, double end)
{
  sim_coll_record *rec = coll_record_new();
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

static void run_coll(int rank, const wl_program *p, const wl_op *op, coll_sched *sched)
{
  const wl_workload *wl = eng__E.wl;
  int c = wl_rank_comm(wl, rank, op->role);
  int m = eng__E.member[(size_t)rank * wl->num_roles + op->role];
  const wl_comm *cm = &wl->comms[c];
  eng__comm *cs = &eng__E.comms[c];
  int n = cm->size;
  /* members that run here: all, or with rank classes those of class 0 */
  int live = eng__E.sym.on ? eng__E.sym.live[c] : n;

  if (n == 1) /* a communicator of one: nothing to move */
    return;

  double t = eng__now();
  if (cs->arrived == 0) {
    cs->first_arrival = t;
    cs->op = op->sub;
    cs->bytes = op->bytes;
    cs->first_rank = rank;
  } else if (cs->op != op->sub ||
             (cs->bytes != op->bytes && !(op->flags & WL_OPF_SPLITS))) {
    /* (an all-to-all-v's members send what their splits say: their totals
     * differ; the instance keeps the first member's for the tuner) */
    char msg[512];
    snprintf(msg, sizeof msg,
             "collective mismatch on communicator '%s': rank %d called %s of %.17g bytes, "
             "rank %d called %s of %.17g bytes",
             cm->name, cs->first_rank, wl_coll_name(cs->op), cs->bytes, rank, wl_coll_name(op->sub),
             op->bytes);
    eng__fail(ST_ESIM, msg);
    sg_actor_kill_all();
    return;
  }
  uint64_t my_gen = cs->gen;
  cs->arrived_gen[m] = my_gen + 1;
  int last = 0;
  if (++cs->arrived == live) {
    last = 1;
    /* A communicator runs one collective at a time, in the order its members
     * issue them, as NCCL does: wait for the previous instance to end. */
    while (cs->done_gen < cs->gen)
      wq_wait(&cs->wq);
    if (cs->busy_until > eng__now())
      sg_actor_sleep_until(cs->busy_until);
    t = eng__now();
    cs->gen++;
    cs->arrived = 0;
    cs->start = t;
    cs->pending = live;
    if (eng__comm_prepare(c, cs)) {
      eng__fail(ST_ENOMEM, "out of memory laying out a communicator");
      sg_actor_kill_all();
      return;
    }
    eng__memo *mm = eng__memo_get(c, cs, op);
    if (!mm) {
      eng__fail(ST_ENOMEM, "out of memory");
      sg_actor_kill_all();
      return;
    }
    cs->ch = mm->ch;
    double T = -1;
    if (cs->fast) {
      /* the flows are planned again only when links count their bytes */
      if (isnan(mm->T) || (eng__E.link_bytes && mm->T >= 0))
        mm->T = eng__fast_duration(c, cs, op, sched, 1);
      T = mm->T;
    }
    if (T < 0 && eng__E.sym.on && eng__E.sym.comm_collapse[c]) {
      eng__fail(ST_ESIM, "internal error: a rank-class group's collective has no closed form");
      sg_actor_kill_all();
      return;
    }
    cs->fast_end = T >= 0 ? t + T : -1;
    if (T >= 0) {
      cs->done_gen++; /* nothing to wait for: the end is known */
      cs->busy_until = cs->fast_end;
    }
    wq_wake(&cs->wq);
  } else {
    while (cs->gen == my_gen)
      wq_wait(&cs->wq);
  }
  double start = cs->start, first = cs->first_arrival;
  int opk = cs->op;
  double bytes = cs->bytes;

  eng__acct(rank, 0, 1, 0);
  double fast_end = cs->fast_end;
  if (fast_end >= 0) {
    /* closed form: everyone knows the end; the last to arrive records it */
    if (last) {
      eng__coll_record_add(c, cs, opk, n, bytes, first, start, fast_end);
      eng__E.fast_instances += eng__E.sym.on && !eng__E.sym.comm_collapse[c] ? (uint64_t)eng__E.sym.C : 1;
    }
    if (fast_end > eng__now())
      sg_actor_sleep_until(fast_end);
    eng__acct(rank, 0, -1, 0);
    eng__E.res->ranks[rank].comm_kind_s[cm->kind < WL_COMM_KIND_COUNT ? cm->kind : 0] += eng__now() - start;
    return;
  }
  coll_transfer(c, cs, m, p, op, sched);

  uint64_t my_done = cs->done_gen;
  if (--cs->pending == 0) {
    cs->done_gen++;
    eng__coll_record_add(c, cs, opk, n, bytes, first, start, eng__now());
    wq_wake(&cs->wq);
  } else {
    while (cs->done_gen == my_done)
      wq_wait(&cs->wq);
  }
  eng__acct(rank, 0, -1, 0);
  eng__E.res->ranks[rank].comm_kind_s[cm->kind < WL_COMM_KIND_COUNT ? cm->kind : 0] += eng__now() - start;
}

/* ---- send / recv --------------------------------------------------------- */

static void run_p2p(int rank, const wl_op *op)
{
  const wl_workload *wl = eng__E.wl;
  int c = wl_rank_comm(wl, rank, op->role);
  int me = eng__E.member[(size_t)rank * wl->num_roles + op->role];
  const wl_comm *cm = &wl->comms[c];
  int is_send = op->kind == WL_OP_SEND;
  int src = is_send ? me : op->peer, dst = is_send ? op->peer : me;
  uint64_t key = eng__key4((uint64_t)c, (uint64_t)src, (uint64_t)dst, (uint64_t)(uint32_t)op->tag);
  eng__p2p *ps = eng__map_get(&eng__E.p2ps, key);
  if (!ps) {
    ps = st_arena_alloc(&eng__E.arena, sizeof *ps);
    if (!ps || eng__map_put(&eng__E.p2ps, key, ps)) {
      eng__fail(ST_ENOMEM, "out of memory");
      return;
    }
    ps->comm = c;
    ps->src = src;
    ps->dst = dst;
    ps->tag = op->tag;
    char name[96];
    snprintf(name, sizeof name, "p%d:%d>%d#%d", c, src, dst, op->tag);
    ps->mb = sg_mailbox_by_name(name);
  }
  int side = is_send ? 0 : 1;
  while (ps->here[side]) /* our previous message with this tag is not matched yet */
    wq_wait(&ps->wq);
  ps->here[side] = 1;
  if (is_send)
    ps->bytes = op->bytes;
  if (!ps->here[1 - side]) {
    ps->first_arrival = eng__now();
    uint64_t my_gen = ps->gen;
    eng__acct(rank, 0, 0, 1);
    while (ps->gen == my_gen)
      wq_wait(&ps->wq);
    eng__acct(rank, 0, 0, -1);
  } else {
    ps->gen++;
    ps->here[0] = ps->here[1] = 0;
    ps->start = eng__now();
    wq_wake(&ps->wq);
  }
  double first = ps->first_arrival, start = ps->start, bytes = ps->bytes;
  if (!is_send && bytes != op->bytes) {
    char msg[512];
    snprintf(msg, sizeof msg,
             "send/recv mismatch on communicator '%s': rank %d sends %.17g bytes to rank %d, "
             "which receives %.17g bytes (tag %d)",
             cm->name, cm->ranks[src], bytes, cm->ranks[dst], op->bytes, op->tag);
    eng__fail(ST_ESIM, msg);
    sg_actor_kill_all();
    return;
  }
  eng__acct(rank, 0, 1, 0);
  if (is_send) {
    eng__account_flow(cm->ranks[src], cm->ranks[dst], bytes, c, WL_OP_SEND, 0);
    sg_mailbox_put(ps->mb, &eng__E.dummy_payload, (long)llround(bytes));
  } else {
    sg_mailbox_get(ps->mb);
    sim_coll_record *rec = coll_record_new();
    if (rec) {
      rec->comm = c;
      rec->kind = WL_OP_SEND;
      rec->op = 0;
      rec->nranks = 2;
      rec->src = cm->ranks[src];
      rec->dst = cm->ranks[dst];
      rec->bytes = bytes;
      rec->first_arrival_s = first;
      rec->start_s = start;
      rec->end_s = eng__now();
      double dt = rec->end_s - start;
      rec->algbw_GBps = dt > 0 ? bytes / dt / 1e9 : 0;
      rec->busbw_GBps = rec->algbw_GBps;
    }
  }
  eng__E.events++;
  eng__acct(rank, 0, -1, 0);
  eng__E.res->ranks[rank].comm_kind_s[cm->kind < WL_COMM_KIND_COUNT ? cm->kind : 0] += eng__now() - start;
}

/* ---- the stream actor ---------------------------------------------------- */

static void stream_actor(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  eng__actor *a = sg_actor_self_get_data();
  int rank = a->rank;
  int pidx = eng__E.wl->rank_program[rank];
  const wl_program *p = &eng__E.wl->programs[pidx];
  const eng__prog *pi = &eng__E.progs[pidx];

  for (uint32_t k = 0; k < a->num_ops && !eng__E.failed;) {
    uint32_t opi = a->ops[k];
    const wl_op *op = &p->ops[opi];
    a->cur = opi;
    wait_deps(a, rank, p, pi, op);
    if (eng__E.sym.on && eng__E.opt->run_ahead && eng__chain_try(a, rank, p, pi, &k))
      continue;
    double t0 = eng__now();
    switch (op->kind) {
    case WL_OP_COMPUTE:
      k = eng__compute_run(a, rank, p, pi, k);
      continue;
    case WL_OP_COLL:
      run_coll(rank, p, op, &a->sched);
      break;
    case WL_OP_SEND:
    case WL_OP_RECV:
      run_p2p(rank, op);
      break;
    case WL_OP_MARKER: /* no time; breakdowns use each op's own phase */
      break;
    }
    if (op->kind != WL_OP_MARKER)
      eng__timeline_add(rank, op, opi, t0, eng__now());
    eng__stream_progress(rank, a->stream, 1);
    k++;
  }
  if (!eng__E.failed) {
    sim_rank_stats *st = &eng__E.res->ranks[rank];
    double t = eng__now();
    if (t > st->finish_s)
      st->finish_s = t;
  }
  a->finished = 1;
  eng__E.actors_done++;
}

/* ---- setup ---------------------------------------------------------------- */

static int build_prog_info(st_err *err)
{
  const wl_workload *wl = eng__E.wl;
  eng__E.progs = st_arena_alloc(&eng__E.arena, (size_t)wl->num_programs * sizeof *eng__E.progs);
  if (!eng__E.progs)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  for (int pidx = 0; pidx < wl->num_programs; pidx++) {
    const wl_program *p = &wl->programs[pidx];
    eng__prog *pi = &eng__E.progs[pidx];
    pi->stream_ops = st_arena_alloc(&eng__E.arena, (size_t)p->num_streams * sizeof *pi->stream_ops);
    pi->stream_len = st_arena_alloc(&eng__E.arena, (size_t)p->num_streams * sizeof *pi->stream_len);
    pi->pos = st_arena_alloc(&eng__E.arena, (p->num_ops + 1) * sizeof *pi->pos);
    pi->is_target = st_arena_alloc(&eng__E.arena, p->num_ops + 1);
    pi->dur = st_arena_alloc(&eng__E.arena, (p->num_ops + 1) * sizeof *pi->dur);
    pi->role_streams = st_arena_alloc(&eng__E.arena, ((size_t)wl->num_roles + 1) * sizeof(uint32_t));
    if (!pi->stream_ops || !pi->stream_len || !pi->pos || !pi->is_target || !pi->dur ||
        !pi->role_streams)
      return st_err_set(err, ST_ENOMEM, "out of memory");
    memset(pi->role_streams, 0, ((size_t)wl->num_roles + 1) * sizeof(uint32_t));
    for (size_t i = 0; i < p->num_ops; i++) {
      const wl_op *o = &p->ops[i];
      if (o->kind == WL_OP_MARKER || o->kind == WL_OP_COMPUTE || o->role < 0 ||
          o->role >= wl->num_roles)
        continue;
      pi->role_streams[o->role] |= p->num_streams > 32 ? 0xffffffffu : 1u << o->stream;
    }
    for (size_t i = 0; i < p->num_ops; i++) {
      const wl_op *o = &p->ops[i];
      pi->dur[i] = o->kind == WL_OP_COMPUTE ? plat_compute_time(&eng__E.cl->device, o) : 0;
      pi->pos[i] = pi->stream_len[o->stream]++;
      for (uint32_t w = 0; w < o->wait_count; w++) {
        uint32_t t = p->waits[o->wait_first + w];
        if (p->ops[t].stream != o->stream)
          pi->is_target[t] = 1;
      }
    }
    for (int s = 0; s < p->num_streams; s++) {
      pi->stream_ops[s] = st_arena_alloc(&eng__E.arena, (pi->stream_len[s] + 1) * sizeof(uint32_t));
      if (!pi->stream_ops[s])
        return st_err_set(err, ST_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < p->num_ops; i++)
      pi->stream_ops[p->ops[i].stream][pi->pos[i]] = (uint32_t)i;
  }
  return ST_OK;
}

static int build_members(st_err *err)
{
  const wl_workload *wl = eng__E.wl;
  size_t n = (size_t)wl->num_ranks * wl->num_roles;
  eng__E.member = malloc((n + 1) * sizeof *eng__E.member);
  if (!eng__E.member)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++)
    eng__E.member[i] = -1;
  for (int c = 0; c < wl->num_comms; c++) {
    const wl_comm *cm = &wl->comms[c];
    for (int i = 0; i < cm->size; i++) {
      int r = cm->ranks[i];
      for (int role = 0; role < wl->num_roles; role++)
        if (wl_rank_comm(wl, r, role) == c)
          eng__E.member[(size_t)r * wl->num_roles + role] = i;
    }
  }
  for (int r = 0; r < wl->num_ranks; r++)
    for (int role = 0; role < wl->num_roles; role++) {
      int c = wl_rank_comm(wl, r, role);
      if (c >= 0 && eng__E.member[(size_t)r * wl->num_roles + role] < 0)
        return st_err_set(err, ST_EINPUT,
                          "rank %d: communicator '%s' plays role '%s' for it but does not contain "
                          "it",
                          r, wl->comms[c].name, wl->roles[role]);
    }
  return ST_OK;
}

static void build_cfg_argv(const sim_options *opt, int *argc, char **argv, char *store, size_t cap)
{
  static const char *ideal[] = {"--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                                "--cfg=network/TCP-gamma:0"};
  int n = 0;
  argv[n++] = "simtrain";
  if (opt->net_model == SIM_NET_IDEAL)
    for (size_t i = 0; i < 3; i++)
      argv[n++] = (char *)ideal[i];
  else if (opt->net_model == SIM_NET_CM02)
    argv[n++] = "--cfg=network/model:CM02";
  else
    argv[n++] = "--cfg=network/model:LV08";
  argv[n++] = "--cfg=contexts/stack-size:64";
  argv[n++] = "--cfg=contexts/guard-size:0";
  argv[n++] = "--cfg=surf/precision:1e-9";
  argv[n++] = "--log=root.thres:critical";
  argv[n++] = "--log=xbt_cfg.thres:critical";
  argv[n++] = "--log=root.app:file:/dev/null";
  /* extra user settings, space-separated */
  if (opt->simgrid_cfg && *opt->simgrid_cfg) {
    snprintf(store, cap, "%s", opt->simgrid_cfg);
    for (char *tok = strtok(store, " "); tok && n < 30; tok = strtok(NULL, " "))
      argv[n++] = tok;
  }
  argv[n] = NULL;
  *argc = n;
}

static void describe_deadlock(void)
{
  const wl_workload *wl = eng__E.wl;
  st_buf b;
  st_buf_init(&b);
  for (int c = 0; c < wl->num_comms && !b.len; c++) {
    eng__comm *cs = &eng__E.comms[c];
    const wl_comm *cm = &wl->comms[c];
    if (cs->arrived == 0)
      continue;
    st_buf_printf(&b, "collective %s on communicator '%s' never completed: %d of %d ranks reached it (",
                  wl_coll_name(cs->op), cm->name, cs->arrived, cm->size);
    int shown = 0;
    for (int i = 0; i < cm->size && shown < 16; i++)
      if (cs->arrived_gen[i] == cs->gen + 1)
        st_buf_printf(&b, "%s%d", shown++ ? "," : "", cm->ranks[i]);
    st_buf_printf(&b, "); ranks still missing: ");
    shown = 0;
    for (int i = 0; i < cm->size && shown < 16; i++)
      if (cs->arrived_gen[i] != cs->gen + 1)
        st_buf_printf(&b, "%s%d", shown++ ? "," : "", cm->ranks[i]);
    if (shown == 16)
      st_buf_printf(&b, ",...");
  }
  if (!b.len)
    for (size_t i = 0; i < eng__E.p2ps.cap && !b.len; i++) {
      if (!eng__E.p2ps.keys[i])
        continue;
      eng__p2p *ps = eng__E.p2ps.vals[i];
      if (!ps->here[0] && !ps->here[1])
        continue;
      const wl_comm *cm = &wl->comms[ps->comm];
      st_buf_printf(&b, "%s from rank %d to rank %d on communicator '%s' (tag %d) was never matched by a %s",
                    ps->here[0] ? "send" : "recv", cm->ranks[ps->src], cm->ranks[ps->dst], cm->name,
                    ps->tag, ps->here[0] ? "recv" : "send");
    }
  if (!b.len) {
    st_buf_printf(&b, "the replay deadlocked at %.9g s: %d of %d streams never finished", eng__now(),
                  eng__E.actors_total - eng__E.actors_done, eng__E.actors_total);
    int shown = 0;
    for (int i = 0; i < eng__E.actors_total && shown < 2; i++) {
      const eng__actor *a = eng__E.actors[i];
      if (a->waiting_for < 0)
        continue;
      const wl_program *p = &wl->programs[wl->rank_program[a->rank]];
      const wl_op *o = &p->ops[a->cur], *t = &p->ops[a->waiting_for];
      st_buf_printf(&b, "%s rank %d: op %u ('%s') on stream '%s' waits for op %lld ('%s') on "
                    "stream '%s'",
                    shown++ ? ";" : "; e.g.", a->rank, a->cur, wl_op_name(p, o),
                    p->stream_names[o->stream], (long long)a->waiting_for, wl_op_name(p, t),
                    p->stream_names[t->stream]);
    }
  }
  eng__fail(ST_ESIM, b.data);
  st_buf_release(&b);
}

int sim_run(const wl_workload *wl, const plat_cluster *cl, const sim_options *opt,
            sim_result **out, st_err *err)
{
  if (eng__E.used)
    return st_err_set(err, ST_ESIM, "sim_run: SimGrid allows one engine per process");
  eng__E.used = 1;
  sim_options defaults;
  if (!opt) {
    sim_options_init(&defaults);
    opt = &defaults;
  }
  if (wl->num_ranks > cl->num_gpus)
    return st_err_set(err, ST_EINPUT,
                      "workload has %d ranks but cluster '%s' has %d GPUs (%d per node: it "
                      "needs %d nodes)",
                      wl->num_ranks, cl->name, cl->num_gpus, cl->gpus_per_node,
                      (wl->num_ranks + cl->gpus_per_node - 1) / cl->gpus_per_node);
  int rc = wl_workload_check(wl, err);
  if (rc)
    return rc;

  memset(&eng__E, 0, sizeof eng__E);
  eng__E.used = 1;
  eng__E.wl = wl;
  eng__E.cl = cl;
  eng__E.opt = opt;
  eng__E.err = err;
  eng__E.overlap_slowdown = plat_compute_overlap_factor(&cl->device) - 1.0;
  st_arena_init(&eng__E.arena, 1 << 20);
  eng__map_init(&eng__E.mailboxes);
  eng__map_init(&eng__E.p2ps);
  eng__map_init(&eng__E.memo);

  sim_result *r = calloc(1, sizeof *r);
  if (!r)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  st_arena_init(&r->arena, 1 << 16);
  r->num_ranks = wl->num_ranks;
  r->iterations = wl->meta.iterations > 0 ? wl->meta.iterations : 1;
  r->ranks = calloc((size_t)wl->num_ranks, sizeof *r->ranks);
  eng__E.res = r;
  eng__E.ranks = calloc((size_t)wl->num_ranks, sizeof *eng__E.ranks);
  eng__E.comms = calloc((size_t)wl->num_comms + 1, sizeof *eng__E.comms);
  eng__E.hosts = calloc((size_t)cl->num_gpus, sizeof *eng__E.hosts);
  if (!r->ranks || !eng__E.ranks || !eng__E.comms || !eng__E.hosts) {
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
    goto out;
  }
  for (int i = 0; i < wl->num_ranks; i++) {
    r->ranks[i].rank = i;
    r->ranks[i].host = i;
  }
  for (int c = 0; c < wl->num_comms; c++) {
    eng__E.comms[c].arrived_gen = st_arena_alloc(&eng__E.arena, (size_t)wl->comms[c].size * sizeof(uint64_t));
    if (!eng__E.comms[c].arrived_gen) {
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
      goto out;
    }
  }
  if ((rc = build_members(err)) || (rc = build_prog_info(err)))
    goto out;

  char *argv[32], store[1024];
  int argc;
  build_cfg_argv(opt, &argc, argv, store, sizeof store);
  simgrid_init(&argc, argv);
  if (opt->link_stats)
    sg_link_load_plugin_init();
  if ((rc = plat_cluster_build(cl, (void **)eng__E.hosts, err)))
    goto out;
  if (eng__links_index(opt->link_stats)) {
    rc = st_err_set(err, ST_ENOMEM, "out of memory indexing links");
    goto out;
  }
  if ((rc = eng__fast_prepare(err)) || (rc = eng__sym_setup(err)))
    goto out;

  /* actors */
  size_t max_actors = 0;
  for (int rank = 0; rank < wl->num_ranks; rank++)
    max_actors += (size_t)wl->programs[wl->rank_program[rank]].num_streams;
  eng__E.actors = calloc(max_actors + 1, sizeof *eng__E.actors);
  if (!eng__E.actors) {
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
    goto out;
  }
  for (int rank = 0; rank < wl->num_ranks; rank++) {
    if (eng__E.sym.on && eng__E.sym.cls[rank] != 0)
      continue; /* a copy of its class-0 representative */
    int pidx = wl->rank_program[rank];
    const wl_program *p = &wl->programs[pidx];
    const eng__prog *pi = &eng__E.progs[pidx];
    eng__E.ranks[rank].done = st_arena_alloc(&eng__E.arena, (size_t)p->num_streams * sizeof(uint32_t));
    if (!eng__E.ranks[rank].done) {
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
      goto out;
    }
    eng__E.ranks[rank].first_actor = eng__E.actors_total;
    for (int s = 0; s < p->num_streams; s++) {
      if (!pi->stream_len[s])
        continue;
      eng__E.ranks[rank].n_actors++;
      eng__actor *a = st_arena_alloc(&eng__E.arena, sizeof *a);
      if (!a) {
        rc = st_err_set(err, ST_ENOMEM, "out of memory");
        goto out;
      }
      a->rank = rank;
      a->stream = s;
      a->ops = pi->stream_ops[s];
      a->num_ops = pi->stream_len[s];
      a->waiting_for = -1;
      a->sem = sg_sem_init(0);
      char name[48];
      snprintf(name, sizeof name, "r%d.s%d", rank, s);
      eng__E.actors[eng__E.actors_total] = a;
      sg_actor_t act = sg_actor_init(name, eng__E.hosts[rank]);
      sg_actor_set_data(act, a);
      sg_actor_start(act, stream_actor, 0, NULL);
      eng__E.actors_total++;
    }
  }

  for (int rank = 0; rank < wl->num_ranks; rank++)
    if (!eng__E.sym.on || eng__E.sym.cls[rank] == 0)
      eng__E.ops_total += wl->programs[wl->rank_program[rank]].num_ops;
  eng__E.progress_on = !opt->quiet && isatty(STDERR_FILENO);
  struct timespec w0, w1;
  clock_gettime(CLOCK_MONOTONIC, &w0);
  eng__E.wall0 = w0;
  simgrid_run();
  clock_gettime(CLOCK_MONOTONIC, &w1);
  if (eng__E.progress_shown)
    fputs("\r\033[K", stderr);
  r->wall_s = (double)(w1.tv_sec - w0.tv_sec) + 1e-9 * (double)(w1.tv_nsec - w0.tv_nsec);
  r->sim_time_s = eng__now();
  r->events = eng__E.events;
  r->fast_colls = eng__E.fast_instances;
  snprintf(r->reduction, sizeof r->reduction, "%s", eng__E.sym.desc);
  r->simulated_ranks = eng__E.sym.on ? eng__E.sym.simulated : wl->num_ranks;

  if (!eng__E.failed && eng__E.actors_done != eng__E.actors_total)
    describe_deadlock();
  if (eng__E.failed) {
    rc = err ? err->code : ST_ESIM;
    goto out;
  }
  /* close every rank's accounting at the end of the run (the last rank's
   * finish): from its own last op to there a rank waits for the slowest one
   * (idle, as such waits are inside the run), so every rank's parts add up
   * to the run time */
  if (eng__E.sym.on) {
    eng__sym_expand_ranks(&eng__E.sym, wl, r->ranks);
    for (int rank = 0; rank < wl->num_ranks; rank++)
      eng__E.ranks[rank].last_t = eng__E.ranks[eng__sym_rep(&eng__E.sym, wl, rank)].last_t;
    if (eng__sym_expand_colls(&eng__E.sym, wl, &r->colls, &r->num_colls) ||
        eng__sym_expand_timeline(&eng__E.sym, wl, &r->timeline, &r->num_timeline)) {
      rc = st_err_set(err, ST_ENOMEM, "out of memory expanding rank classes");
      goto out;
    }
    eng__links_expand_classes();
  }
  double last = 0;
  for (int rank = 0; rank < wl->num_ranks; rank++)
    if (r->ranks[rank].finish_s > last)
      last = r->ranks[rank].finish_s;
  for (int rank = 0; rank < wl->num_ranks; rank++) {
    sim_rank_stats *st = &r->ranks[rank];
    eng__rank *rs = &eng__E.ranks[rank];
    double dt = last - rs->last_t;
    if (dt > 0)
      st->idle_s += dt;
    st->comm_s = st->exposed_comm_s + st->overlapped_comm_s;
  }
  r->step_time_s = last / r->iterations;
  if (opt->link_stats)
    eng__links_collect();
  *out = r;
  r = NULL;
  rc = ST_OK;

out:
  for (int i = 0; eng__E.ranks && i < wl->num_ranks; i++)
    wq_release(&eng__E.ranks[i].wq);
  for (int c = 0; eng__E.comms && c < wl->num_comms; c++)
    wq_release(&eng__E.comms[c].wq);
  for (int i = 0; eng__E.actors && i < eng__E.actors_total; i++) {
    coll_sched_release(&eng__E.actors[i]->sched);
    free(eng__E.actors[i]->segs);
    if (eng__E.actors[i]->sem)
      sg_sem_destroy(eng__E.actors[i]->sem);
  }
  free(eng__E.actors);
  sim_result_destroy(r);
  free(eng__E.ranks);
  free(eng__E.comms);
  free(eng__E.hosts);
  free(eng__E.member);
  eng__map_release(&eng__E.mailboxes);
  for (size_t i = 0; i < eng__E.p2ps.cap; i++)
    if (eng__E.p2ps.keys[i])
      wq_release(&((eng__p2p *)eng__E.p2ps.vals[i])->wq);
  eng__map_release(&eng__E.p2ps);
  eng__map_release(&eng__E.link_index);
  eng__map_release(&eng__E.memo);
  eng__map_release(&eng__E.routes);
  free(eng__E.link_bytes);
  free(eng__E.usage);
  free(eng__E.link_bw);
  free(eng__E.link_shared);
  free(eng__E.class_bytes);
  eng__sym_release(&eng__E.sym);
  st_arena_release(&eng__E.arena);
  return rc;
}

void sim_result_destroy(sim_result *r)
{
  if (!r)
    return;
  free(r->ranks);
  free(r->colls);
  free(r->timeline);
  free(r->links);
  free(r->link_usage);
  st_arena_release(&r->arena);
  free(r);
}
