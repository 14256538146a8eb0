/* collective.c — collectives as the engine runs them: the members'
 * rendezvous, the tuner's choice, and the flows of the algorithm or the
 * closed form's wait.
 *
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
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

#include "eng_int.h"

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
  if (eng__E.cl->num_groups > 1) {
    if (!cs->view) {
      plat_cluster *v = st_arena_alloc(&eng__E.arena, sizeof *v);
      if (v)
        plat_cluster_view(eng__E.cl, cm->ranks, cm->size, v);
      else
        eng__fail(ST_ENOMEM, "out of memory");
      cs->view = v;
    }
    if (cs->view)
      ctx->cl = cs->view;
  }
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

/* ---- communicators with several class-0 members (quotient fabric) -------
 * Their class-0 members run (sym_quot.c checked the conditions): a
 * transfer between two of them is a mailbox comm as usual; one to another
 * member y stands for its whole orbit under the translations, and so does
 * the transfer a class-0 member receives from a member x outside class 0:
 * x = g(r') for the class-0 member r' = rep(x) and a translation g that
 * keeps the communicator, and x -> m is the image under g of r' -> g^-1(m)
 * in the same round.  Each such orbit is one host-to-host flow r' ->
 * g^-1(m), started, as a mailbox comm would be, when both its sender (r')
 * and its receiver's class-0 member (m) have posted it, by whichever posts
 * second; the first to post waits for its end (vpend), the second waits on
 * it and, when it ends, tells the first. */
typedef struct eng__vt {
  int32_t round, src, dst; /* the tuple (members of the communicator), and which of */
  int32_t nth;             /* the round's transfers src -> dst (a mailbox's order) */
  uint64_t gen;            /* instance it was last used in */
  uint8_t posted;          /* 1: the sender, 2: the receiver's class-0 member */
  int32_t first;           /* the member that posted first */
  double bytes;
} eng__vt;

static eng__vt *vt_get(eng__comm *cs, int c, int round, int src, int dst, int nth)
{
  uint64_t key = eng__key4((uint64_t)round << 32 | (uint32_t)nth, (uint64_t)src, (uint64_t)dst,
                           0x76740000ULL + (uint64_t)c);
  eng__vt *v = eng__map_get(&cs->vts, key);
  if (v) {
    if (v->round != round || v->src != src || v->dst != dst || v->nth != nth) {
      eng__fail(ST_ESIM, "internal error: two transfers of a communicator share a key");
      return NULL;
    }
  } else {
    v = st_arena_alloc(&eng__E.arena, sizeof *v);
    if (!v || eng__map_put(&cs->vts, key, v)) {
      eng__fail(ST_ENOMEM, "out of memory");
      return NULL;
    }
    *v = (eng__vt){.round = round, .src = src, .dst = dst, .nth = nth, .gen = 0};
  }
  if (v->gen != cs->gen) { /* a new instance */
    v->gen = cs->gen;
    v->posted = 0;
  }
  return v;
}

typedef struct vt_list {
  sg_comm_t *comm;
  int32_t *tell; /* the member to tell when comm[i] ends, or -1 */
  size_t n, cap;
} vt_list;

static int vt_push(vt_list *l, sg_comm_t c, int32_t tell)
{
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 16;
    sg_comm_t *a = realloc(l->comm, cap * sizeof *a);
    if (a)
      l->comm = a;
    int32_t *b = a ? realloc(l->tell, cap * sizeof *b) : NULL;
    if (!a || !b) {
      eng__fail(ST_ENOMEM, "out of memory");
      return -1;
    }
    l->tell = b;
    l->cap = cap;
  }
  l->comm[l->n] = c;
  l->tell[l->n++] = tell;
  return 0;
}

/* Member m posts its side (1: sends, 2: receives for) of the round's nth
 * orbit transfer src -> dst; the second side starts it. */
static void vt_post(int c, eng__comm *cs, int m, int round, int src, int dst, int nth, int side,
                    double bytes, vt_list *mine)
{
  const wl_comm *cm = &eng__E.wl->comms[c];
  eng__vt *v = vt_get(cs, c, round, src, dst, nth);
  if (!v)
    return;
  if (side == 1)
    v->bytes = bytes;
  if (!v->posted) {
    v->posted = (uint8_t)side;
    v->first = m;
    cs->vpend[m]++;
    return;
  }
  if (v->posted == side) {
    eng__fail(ST_ESIM, "internal error: a transfer posted twice from one side");
    return;
  }
  v->posted = 3;
  sg_comm_t h = plat_sendto_async(eng__E.hosts[cm->ranks[src]], eng__E.hosts[cm->ranks[dst]],
                                  v->bytes);
  if (v->first == m) {
    cs->vpend[m]--;
    vt_push(mine, h, -1);
  } else {
    vt_push(mine, h, v->first);
  }
}

/* Transfers before the i-th of a round's list (from first) with the same peer. */
static int nth_of(const coll_sched *sched, uint32_t first, uint32_t i, int peer)
{
  int n = 0;
  for (uint32_t j = 0; j < i; j++)
    n += sched->xfers[first + j].peer == peer;
  return n;
}

static void coll_transfer_multi(int c, eng__comm *cs, int m, const wl_op *op, coll_sched *sched)
{
  const wl_workload *wl = eng__E.wl;
  const wl_comm *cm = &wl->comms[c];
  const eng__sym *s = &eng__E.sym;
  int NR = wl->num_roles, me = cm->ranks[m];
  if (!cs->vpend) {
    cs->vpend = calloc((size_t)cm->size, sizeof *cs->vpend);
    cs->vwq = calloc((size_t)cm->size, sizeof *cs->vwq);
    if (!cs->vpend || !cs->vwq) {
      eng__fail(ST_ENOMEM, "out of memory");
      return;
    }
  }
  vt_list tell = {0}, plain = {0};
  void *data;
  for (size_t r = 0; r < sched->nrounds && !eng__E.failed; r++) {
    const coll_round *rd = &sched->rounds[r];
    tell.n = plain.n = 0;
    for (uint32_t i = 0; i < rd->nrecv; i++) {
      int x = sched->xfers[rd->recv_first + i].peer, xr = cm->ranks[x];
      if (s->cls[xr] == 0) {
        vt_push(&plain, sg_mailbox_get_async(mailbox_for(c, x, m), &data), -1);
        continue;
      }
      /* x = g(r'): the orbit of r' -> g^-1(m) */
      int rr = eng__sym_rep_of(s, xr);
      int q = eng__sym_act(s, me, s->ginv[s->cls[xr]]);
      vt_post(c, cs, m, (int)r, eng__E.member[(size_t)rr * NR + op->role],
              eng__E.member[(size_t)q * NR + op->role],
              nth_of(sched, rd->recv_first, i, x), 2, 0, &plain);
    }
    if (rd->pre_s > 0)
      sg_actor_sleep_for(rd->pre_s);
    for (uint32_t i = 0; i < rd->nsend; i++) {
      const coll_xfer *x = &sched->xfers[rd->send_first + i];
      int y = cm->ranks[x->peer];
      eng__account_flow(me, y, x->bytes, c, WL_OP_COLL, op->sub);
      if (s->cls[y] == 0)
        vt_push(&plain, sg_mailbox_put_async(mailbox_for(c, m, x->peer), &eng__E.dummy_payload,
                                             (long)llround(x->bytes)), -1);
      else
        vt_post(c, cs, m, (int)r, m, x->peer, nth_of(sched, rd->send_first, i, x->peer), 1,
                x->bytes, &plain);
    }
    /* the orbit transfers another member posted first: tell it as each ends */
    for (size_t i = 0; i < plain.n;)
      if (plain.tell[i] >= 0) {
        if (vt_push(&tell, plain.comm[i], plain.tell[i]))
          break;
        plain.comm[i] = plain.comm[--plain.n];
        plain.tell[i] = plain.tell[plain.n];
      } else {
        i++;
      }
    eng__E.events += plain.n + tell.n;
    while (tell.n > 0 && !eng__E.failed) {
      ssize_t k = sg_comm_wait_any(tell.comm, tell.n);
      if (k < 0)
        break;
      int32_t f = tell.tell[k];
      tell.comm[k] = tell.comm[--tell.n];
      tell.tell[k] = tell.tell[tell.n];
      if (--cs->vpend[f] == 0)
        eng__wq_wake(&cs->vwq[f]);
    }
    if (plain.n)
      sg_comm_wait_all(plain.comm, plain.n);
    while (cs->vpend[m] > 0 && !eng__E.failed)
      eng__wq_wait(&cs->vwq[m]);
  }
  free(tell.comm);
  free(tell.tell);
  free(plain.comm);
  free(plain.tell);
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
  ctx.root = wl_op_coll_arg(op);
  ctx.splits = (op->flags & WL_OPF_SPLITS) ? &p->splits[op->split_first] : NULL;
  if (coll_plan(&ctx, m, sched)) {
    eng__fail(ST_ENOMEM, "out of memory planning a collective");
    return;
  }
  if (eng__E.sym.quotient && eng__E.sym.comm_multi[c]) {
    coll_transfer_multi(c, cs, m, op, sched);
    return;
  }
  if (eng__E.sym.quotient && eng__E.sym.comm_collapse[c]) {
    /* member 0 of an R group on the quotient fabric (sym_quot.c): its sends
     * only; what it receives is the images of them, ending with them */
    sg_host_t local_to[8], *to = local_to;
    double local_b[8], *b = local_b;
    size_t cap = 8;
    for (size_t r = 0; r < sched->nrounds && !eng__E.failed; r++) {
      const coll_round *rd = &sched->rounds[r];
      if (rd->nsend > cap) {
        if (to != local_to) {
          free(to);
          free(b);
        }
        cap = rd->nsend;
        to = malloc(cap * sizeof *to);
        b = malloc(cap * sizeof *b);
        if (!to || !b) {
          free(to);
          free(b);
          eng__fail(ST_ENOMEM, "out of memory");
          return;
        }
      }
      if (rd->pre_s > 0)
        sg_actor_sleep_for(rd->pre_s);
      for (uint32_t i = 0; i < rd->nsend; i++) {
        const coll_xfer *x = &sched->xfers[rd->send_first + i];
        eng__account_flow(cm->ranks[m], cm->ranks[x->peer], x->bytes, c, WL_OP_COLL, op->sub);
        to[i] = eng__E.hosts[cm->ranks[x->peer]];
        b[i] = x->bytes;
      }
      plat_sendto_all(eng__E.hosts[cm->ranks[m]], (void *const *)to, b, rd->nsend);
      eng__E.events += 2 * (uint64_t)rd->nsend;
    }
    if (to != local_to) {
      free(to);
      free(b);
    }
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

void eng__run_coll(int rank, const wl_program *p, const wl_op *op, coll_sched *sched)
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
    cs->first_op = op;
  } else if (cs->op != op->sub ||
             (cs->bytes != op->bytes && !(op->flags & WL_OPF_SPLITS))) {
    /* (an all-to-all-v's members send what their splits say: their totals
     * differ; the instance keeps the first member's for the tuner) */
    char msg[1024], w1[256], w2[256];
    snprintf(msg, sizeof msg,
             "collective mismatch on communicator '%s': rank %d called %s of %.17g bytes (%s), "
             "rank %d called %s of %.17g bytes (%s)",
             cm->name, cs->first_rank, wl_coll_name(cs->op), cs->bytes,
             eng__op_where(cs->first_rank, cs->first_op, w1, sizeof w1), rank,
             wl_coll_name(op->sub), op->bytes, eng__op_where(rank, op, w2, sizeof w2));
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
      eng__wq_wait(&cs->wq);
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
      /* the flows are planned again only when links (or pods) count their bytes */
      if (isnan(mm->T) ||
          ((eng__E.link_bytes || (eng__E.comm_xpod && eng__E.comm_xpod[c])) && mm->T >= 0))
        mm->T = eng__fast_duration(c, cs, op, sched, 1);
      T = mm->T;
    }
    if (T < 0 && eng__E.sym.on && eng__E.sym.comm_collapse[c] && !eng__E.sym.quotient) {
      eng__fail(ST_ESIM, "internal error: a rank-class group's collective has no closed form");
      sg_actor_kill_all();
      return;
    }
    cs->fast_end = T >= 0 ? t + T : -1;
    if (T >= 0) {
      cs->done_gen++; /* nothing to wait for: the end is known */
      cs->busy_until = cs->fast_end;
    }
    eng__wq_wake(&cs->wq);
  } else {
    while (cs->gen == my_gen)
      eng__wq_wait(&cs->wq);
  }
  double start = cs->start, first = cs->first_arrival;
  int opk = cs->op;
  double bytes = cs->bytes;

  int xpod = eng__E.comm_xpod && eng__E.comm_xpod[c];
  eng__xfer_start(rank, xpod);
  double fast_end = cs->fast_end;
  if (fast_end >= 0) {
    /* closed form: everyone knows the end; the last to arrive records it */
    if (last) {
      eng__coll_record_add(c, cs, opk, n, bytes, first, start, fast_end);
      /* class 0's instance and its images' */
      uint64_t copies = 1;
      if (eng__E.sym.quotient && eng__E.sym.img_count[c] > 1)
        copies = (uint64_t)eng__E.sym.img_count[c];
      else if (eng__E.sym.on && !eng__E.sym.quotient && !eng__E.sym.comm_collapse[c])
        copies = (uint64_t)eng__E.sym.C;
      eng__E.fast_instances += copies;
    }
    if (fast_end > eng__now())
      sg_actor_sleep_until(fast_end);
    eng__xfer_end(rank, cm, start, xpod);
    return;
  }
  coll_transfer(c, cs, m, p, op, sched);

  uint64_t my_done = cs->done_gen;
  if (--cs->pending == 0) {
    cs->done_gen++;
    eng__coll_record_add(c, cs, opk, n, bytes, first, start, eng__now());
    eng__wq_wake(&cs->wq);
  } else {
    while (cs->done_gen == my_done)
      eng__wq_wait(&cs->wq);
  }
  eng__xfer_end(rank, cm, start, xpod);
}

