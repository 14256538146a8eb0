/* closed.c — closed-form collectives: which communicators qualify, the
 * duration of an instance, and the memo of both per instance's tuple.
 *
 * A collective whose flows cross only links that no other communicator and no
 * send/recv can ever use is alone on its links whenever it runs (a
 * communicator runs its collectives one at a time).  Its time is
 * then known the moment the last member arrives, and the members just wait
 * until then — the same answer as simulating the flows, without them.
 * "Known" needs the flows not to share links in a way whose outcome depends
 * on SimGrid's sharing rules, so an instance qualifies when, after merging
 * the flows between the same two GPUs (same route, same start: they share a
 * link equally and the last ends when the link has moved their sum), either
 *  (a) no link carries two merged flows: each ends at
 *      pre + latency + bytes / bottleneck bandwidth; or
 *  (b) all merged flows are alike (same pre, bytes and latency) and each
 *      one's smallest share bandwidth / flows-on-link is the same r: by
 *      symmetry every flow runs at r and they end together.
 * Anything else is simulated.  Only for the ideal network model in flow
 * fidelity, single-round schedules, and no all-to-all-v.
 *
 * The tuner's choice and the closed form are memoised per (communicator,
 * op, bytes, root, splits): they depend on nothing else, not on time, not
 * on other traffic.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eng_int.h"

enum { OWNER_NONE = -1, OWNER_SHARED = -2, OWNER_P2P = -3 };

static void fast_mark_route(int32_t *owner, int who, int src_gpu, int dst_gpu)
{
  if (src_gpu == dst_gpu)
    return;
  eng__route *re = eng__route_get(src_gpu, dst_gpu);
  if (!re)
    return;
  for (uint32_t i = 0; i < re->n; i++) {
    if (!eng__E.link_shared[re->links[i]])
      continue;
    int32_t *o = &owner[re->links[i]];
    if (*o == OWNER_NONE)
      *o = who;
    else if (*o != who)
      *o = OWNER_SHARED;
  }
}

/* Plan every member of communicator c for one (op, bytes, root) and call fn
 * on each flow; returns 0, or ST_ENOMEM. */
int eng__fast_walk_flows(int c, const eng__tuple *t, coll_sched *sched,
                         void (*fn)(void *u, int src_gpu, int dst_gpu), void *u)
{
  const wl_comm *cm = &eng__E.wl->comms[c];
  eng__comm *cs = &eng__E.comms[c];
  if (eng__comm_prepare(c, cs))
    return ST_ENOMEM;
  int save_op = cs->op;
  double save_bytes = cs->bytes;
  cs->op = t->op;
  cs->bytes = t->bytes;
  coll_ctx ctx;
  eng__route_ctx rctx;
  eng__coll_ctx_fill(c, cs, &ctx, &rctx);
  ctx.root = t->root; /* before the choice: a deduplicating all-to-all's latency has its call */
  coll_choose(&ctx);
  int rc = ST_OK;
  for (int m = 0; m < cm->size && !rc; m++) {
    if ((rc = coll_plan(&ctx, m, sched)))
      break;
    for (size_t r = 0; r < sched->nrounds; r++) {
      const coll_round *rd = &sched->rounds[r];
      for (uint32_t i = 0; i < rd->nsend; i++)
        fn(u, cm->ranks[m], cm->ranks[sched->xfers[rd->send_first + i].peer]);
    }
  }
  cs->op = save_op;
  cs->bytes = save_bytes;
  return rc;
}

struct mark_ctx {
  int32_t *owner;
  int who;
  int ok;
};

static void fast_mark_cb(void *u, int s, int d)
{
  struct mark_ctx *m = u;
  fast_mark_route(m->owner, m->who, s, d);
}

static void fast_check_cb(void *u, int s, int d)
{
  struct mark_ctx *m = u;
  if (s == d)
    return;
  eng__route *re = eng__route_get(s, d);
  if (!re) {
    m->ok = 0;
    return;
  }
  for (uint32_t i = 0; i < re->n; i++)
    if (eng__E.link_shared[re->links[i]] && m->owner[re->links[i]] != m->who)
      m->ok = 0;
}

/* The distinct collectives the programs issue: once per (communicator, op,
 * bytes, root); the map holds tuple index + 1 (the array moves as it grows). */
typedef struct tuple_set {
  eng__tuple *v;
  size_t n, cap;
  eng__map seen;
} tuple_set;

static int tuple_add(tuple_set *ts, int c, const wl_op *o)
{
  uint64_t bits;
  memcpy(&bits, &o->bytes, sizeof bits);
  int root = wl_op_coll_arg(o);
  uint64_t key = eng__key4((uint64_t)c, o->sub, bits, (uint64_t)(uint32_t)root);
  uintptr_t hi = (uintptr_t)eng__map_get(&ts->seen, key);
  const eng__tuple *had = hi ? &ts->v[hi - 1] : NULL;
  if (had && had->comm == c && had->op == o->sub && had->bytes == o->bytes && had->root == root)
    return ST_OK; /* (a hash collision with another tuple is planned too) */
  if (ts->n == ts->cap) {
    size_t cap = ts->cap ? ts->cap * 2 : 256;
    eng__tuple *v = realloc(ts->v, cap * sizeof *v);
    if (!v)
      return ST_ENOMEM;
    ts->v = v;
    ts->cap = cap;
  }
  ts->v[ts->n] = (eng__tuple){.comm = c, .op = o->sub, .root = root, .bytes = o->bytes};
  if (!had && eng__map_put(&ts->seen, key, (void *)(uintptr_t)(ts->n + 1)))
    return ST_ENOMEM;
  ts->n++;
  return ST_OK;
}

/* The ops of a program that scan_ops acts on, one per distinct (kind,
 * role, op, bytes, peer, splits): every rank running the program marks the
 * same routes and adds the same tuples for all the ops alike, so each is
 * looked at once per rank, not once per instance (a 462b step's stage
 * program repeats its collectives 64 micro-batches x 7 layers times: the
 * scan over 6,144 ranks x 45 k ops took seconds).  NULL on out of memory;
 * *n the count. */
static int is_alltoallv(const wl_op *o)
{
  return o->kind == WL_OP_COLL && o->sub == WL_COLL_ALLTOALL && (o->flags & WL_OPF_SPLITS);
}

static const wl_op **distinct_ops(const wl_program *pg, size_t *n)
{
  *n = 0;
  const wl_op **v = malloc((pg->num_ops + 1) * sizeof *v);
  if (!v)
    return NULL;
  eng__map seen;
  eng__map_init(&seen);
  for (size_t i = 0; i < pg->num_ops; i++) {
    const wl_op *o = &pg->ops[i];
    if (o->kind != WL_OP_COPY && o->kind != WL_OP_SEND && o->kind != WL_OP_COLL)
      continue;
    int splits = is_alltoallv(o);
    uint64_t bits = 0;
    if (o->kind == WL_OP_COLL)
      memcpy(&bits, &o->bytes, sizeof bits);
    uint64_t key = eng__key4((uint64_t)o->kind << 32 | (uint32_t)o->role,
                             (uint64_t)o->sub << 1 | (uint64_t)splits, bits,
                             (uint64_t)(uint32_t)(o->peer + 1) << 32 | (uint32_t)wl_op_dedup_arg(o));
    uintptr_t hi = (uintptr_t)eng__map_get(&seen, key);
    if (hi) {
      const wl_op *h = v[hi - 1];
      if (h->kind == o->kind && h->role == o->role && h->sub == o->sub && h->peer == o->peer &&
          wl_op_dedup_arg(h) == wl_op_dedup_arg(o) &&
          is_alltoallv(h) == splits && (o->kind != WL_OP_COLL || h->bytes == o->bytes))
        continue;
    }
    v[*n] = o; /* a hash collision keeps both */
    if (!hi && eng__map_put(&seen, key, (void *)(uintptr_t)(*n + 1))) {
      eng__map_release(&seen);
      free(v);
      return NULL;
    }
    (*n)++;
  }
  eng__map_release(&seen);
  return v;
}

/* Every op of every program: its collectives into ts; an all-to-all-v
 * disqualifies its communicator (per-peer sizes: every pair may talk, and
 * every pair's route is marked), a send/recv or a copy to or from host
 * memory marks its route as OWNER_P2P.  (Marks do not depend on their
 * order or count, so each program's distinct ops stand for all of them.)
 * 0 or ST_ENOMEM. */
static int scan_ops(tuple_set *ts, uint8_t *ok, int32_t *owner)
{
  const wl_workload *wl = eng__E.wl;
  const wl_op ***dops = calloc((size_t)wl->num_programs + 1, sizeof *dops);
  size_t *nd = calloc((size_t)wl->num_programs + 1, sizeof *nd);
  int rc = dops && nd ? ST_OK : ST_ENOMEM;
  for (int p = 0; !rc && p < wl->num_programs; p++)
    if (!(dops[p] = distinct_ops(&wl->programs[p], &nd[p])))
      rc = ST_ENOMEM;
  for (int r = 0; !rc && r < wl->num_ranks; r++) {
    int p = wl->rank_program[r];
    for (size_t i = 0; !rc && i < nd[p]; i++) {
      const wl_op *o = dops[p][i];
      if (o->kind == WL_OP_COPY) { /* its links (the GPU's PCIe where modelled) are not free */
        int mem = plat_host_endpoint(eng__E.cl, plat_gpu_node(eng__E.cl, r));
        fast_mark_route(owner, OWNER_P2P, o->sub == WL_COPY_D2H ? r : mem,
                        o->sub == WL_COPY_D2H ? mem : r);
        continue;
      }
      int c = wl_rank_comm(wl, r, o->role);
      if (c < 0)
        continue;
      const wl_comm *cm = &wl->comms[c];
      if (o->kind == WL_OP_SEND) {
        fast_mark_route(owner, OWNER_P2P, r, cm->ranks[o->peer]);
        continue;
      }
      if (o->kind != WL_OP_COLL || cm->size < 2)
        continue;
      if (o->sub == WL_COLL_ALLTOALL && (o->flags & WL_OPF_SPLITS)) {
        ok[c] = 0;
        for (int a = 0; a < cm->size; a++)
          for (int b = 0; b < cm->size; b++)
            fast_mark_route(owner, c, cm->ranks[a], cm->ranks[b]);
        continue;
      }
      rc = tuple_add(ts, c, o);
    }
  }
  for (int p = 0; dops && p < wl->num_programs; p++)
    free(dops[p]);
  free(dops);
  free(nd);
  return rc;
}

/* Every link each collective can use (cb fast_mark_cb), or whether every
 * link it uses is its own (cb fast_check_cb: ok[c] = 0 when not).  0 or
 * ST_ENOMEM. */
static int walk_tuples(const tuple_set *ts, uint8_t *ok, int32_t *owner, coll_sched *sched,
                       void (*cb)(void *, int, int))
{
  for (size_t i = 0; i < ts->n; i++) {
    int c = ts->v[i].comm;
    if (cb == fast_check_cb && !ok[c])
      continue;
    struct mark_ctx mc = {owner, c, 1};
    if (eng__fast_walk_flows(c, &ts->v[i], sched, cb, &mc))
      return ST_ENOMEM;
    if (!mc.ok)
      ok[c] = 0;
  }
  return ST_OK;
}

int eng__fast_prepare(st_err *err)
{
  const wl_workload *wl = eng__E.wl;
  const sim_options *opt = eng__E.opt;
  if (!opt->fast_colls || opt->net_model != SIM_NET_IDEAL || opt->fidelity != SIM_FID_FLOW ||
      wl->num_comms == 0 || wl->num_roles == 0)
    return ST_OK;
  uint8_t *ok = malloc((size_t)wl->num_comms);
  int32_t *owner = malloc((eng__E.num_links + 1) * sizeof *owner);
  tuple_set ts = {0};
  eng__map_init(&ts.seen);
  coll_sched sched;
  coll_sched_init(&sched);
  int rc = ST_OK;
  if (ok && owner) {
    for (size_t l = 0; l < eng__E.num_links; l++)
      owner[l] = OWNER_NONE;
    memset(ok, 1, (size_t)wl->num_comms);
  }
  /* A communicator qualifies when every link it uses is its own. */
  if (!ok || !owner || scan_ops(&ts, ok, owner) ||
      walk_tuples(&ts, ok, owner, &sched, fast_mark_cb) ||
      walk_tuples(&ts, ok, owner, &sched, fast_check_cb))
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
  for (int c = 0; !rc && c < wl->num_comms; c++)
    eng__E.comms[c].fast = ok[c];
  coll_sched_release(&sched);
  eng__map_release(&ts.seen);
  free(ts.v);
  free(ok);
  free(owner);
  if (!rc && eng__E.failed)
    rc = err ? err->code : ST_ENOMEM;
  return rc;
}

typedef struct fast_flow {
  int32_t src, dst; /* GPUs */
  double bytes, pre;
  eng__route *re;
} fast_flow;

static int cmp_u32(const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* The closed-form duration of the instance just assembled on c, or < 0 when
 * it must be simulated.  Called by the last member to arrive. */
double eng__fast_duration(int c, eng__comm *cs, const wl_op *op, coll_sched *sched, int account)
{
  const wl_comm *cm = &eng__E.wl->comms[c];
  if (!cs->fast || (op->sub == WL_COLL_ALLTOALL && (op->flags & WL_OPF_SPLITS)))
    return -1;
  coll_ctx ctx;
  eng__route_ctx rctx;
  eng__coll_ctx_fill(c, cs, &ctx, &rctx);
  ctx.root = wl_op_coll_arg(op);
  fast_flow *flows = NULL;
  size_t nf = 0, capf = 0, nlinks = 0;
  double T = -1;
  for (int m = 0; m < cm->size; m++) {
    if (coll_plan(&ctx, m, sched) || sched->nrounds > 1)
      goto out;
    if (sched->nrounds == 0)
      continue;
    const coll_round *rd = &sched->rounds[0];
    for (uint32_t i = 0; i < rd->nsend; i++) {
      const coll_xfer *x = &sched->xfers[rd->send_first + i];
      int src = cm->ranks[m], dst = cm->ranks[x->peer];
      double b = (double)llround(x->bytes);
      size_t f;
      for (f = 0; f < nf; f++)
        if (flows[f].src == src && flows[f].dst == dst)
          break;
      if (f < nf) { /* another channel between the same two GPUs */
        flows[f].bytes += b;
        continue;
      }
      if (nf == capf) {
        size_t cap = capf ? capf * 2 : 32;
        fast_flow *n = realloc(flows, cap * sizeof *n);
        if (!n)
          goto out;
        flows = n;
        capf = cap;
      }
      eng__route *re = eng__route_get(src, dst);
      if (!re)
        goto out;
      flows[nf++] = (fast_flow){src, dst, b, rd->pre_s, re};
      nlinks += re->n;
    }
  }
  if (nf == 0) {
    T = 0;
    goto out;
  }
  /* links used, with multiplicity */
  uint32_t *ids = malloc((nlinks + 1) * sizeof *ids);
  if (!ids)
    goto out;
  size_t k = 0;
  for (size_t f = 0; f < nf; f++)
    for (uint32_t i = 0; i < flows[f].re->n; i++)
      if (eng__E.link_shared[flows[f].re->links[i]])
        ids[k++] = flows[f].re->links[i];
  qsort(ids, k, sizeof *ids, cmp_u32);
  int shared = 0;
  for (size_t i = 1; i < k; i++)
    shared |= ids[i] == ids[i - 1];
  if (!shared) { /* (a) */
    T = 0;
    for (size_t f = 0; f < nf; f++) {
      double t = flows[f].pre + flows[f].re->lat_s + flows[f].bytes / flows[f].re->bw_Bps;
      if (t > T)
        T = t;
    }
  } else { /* (b) */
    double r0 = -1;
    int alike = 1;
    for (size_t f = 0; f < nf && alike; f++) {
      if (flows[f].pre != flows[0].pre || flows[f].bytes != flows[0].bytes ||
          flows[f].re->lat_s != flows[0].re->lat_s)
        alike = 0;
      double r = INFINITY;
      for (uint32_t i = 0; i < flows[f].re->n; i++) {
        uint32_t l = flows[f].re->links[i];
        if (!eng__E.link_shared[l])
          continue;
        /* flows on link l: its run length in the sorted ids */
        size_t lo = 0, hi = k;
        while (lo < hi) {
          size_t mid = (lo + hi) / 2;
          if (ids[mid] < l)
            lo = mid + 1;
          else
            hi = mid;
        }
        size_t cnt = 0;
        while (lo + cnt < k && ids[lo + cnt] == l)
          cnt++;
        double share = eng__E.link_bw[l] / (double)cnt;
        if (share < r)
          r = share;
      }
      if (r0 < 0)
        r0 = r;
      else if (fabs(r - r0) > 1e-12 * r0)
        alike = 0;
    }
    if (alike)
      T = flows[0].pre + flows[0].re->lat_s + flows[0].bytes / r0;
  }
  free(ids);
  if (T >= 0 && account)
    for (size_t f = 0; f < nf; f++)
      eng__account_flow(flows[f].src, flows[f].dst, flows[f].bytes, c, WL_OP_COLL, op->sub);
out:
  free(flows);
  return T;
}

eng__memo *eng__memo_get(int c, eng__comm *cs, const wl_op *op)
{
  int root = wl_op_coll_arg(op);
  uint16_t splits = (op->flags & WL_OPF_SPLITS) != 0;
  /* the instance's bytes as assembled (cs->bytes: an all-to-all-v's first
   * member's), which the tuner's choice depends on */
  double bytes = cs->bytes;
  uint64_t bits;
  memcpy(&bits, &bytes, sizeof bits);
  uint64_t key =
      eng__key4((uint64_t)c, op->sub | ((uint64_t)splits << 8), bits, (uint64_t)(uint32_t)root);
  eng__memo *mm = eng__map_get(&eng__E.memo, key);
  if (mm && mm->comm == c && mm->op == op->sub && mm->bytes == bytes && mm->root == root &&
      mm->splits == splits)
    return mm;
  mm = st_arena_alloc(&eng__E.arena, sizeof *mm);
  if (!mm)
    return NULL;
  coll_ctx cx;
  eng__route_ctx rcx;
  eng__coll_ctx_fill(c, cs, &cx, &rcx);
  cx.root = root; /* as the plan will have it (a deduplicating all-to-all's call) */
  coll_choose(&cx);
  *mm = (eng__memo){c, root, op->sub, splits, bytes, cx.ch, NAN};
  if (!eng__map_get(&eng__E.memo, key) && eng__map_put(&eng__E.memo, key, mm))
    return NULL;
  return mm;
}

