/* p2p.c — send/recv pairs.
 *
 *  4. Send/recv.  The two sides rendezvous on (communicator, src, dst, tag);
 *     the first to arrive waits (pipeline bubble), then one flow.
 */
#include <math.h>
#include <stdio.h>

#include <simgrid/actor.h>
#include <simgrid/mailbox.h>

#include "eng_int.h"

void eng__run_p2p(int rank, const wl_op *op)
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
    eng__wq_wait(&ps->wq);
  ps->here[side] = 1;
  if (is_send)
    ps->bytes = op->bytes;
  if (!ps->here[1 - side]) {
    ps->first_arrival = eng__now();
    ps->first_rank = rank;
    ps->first_op = op;
    uint64_t my_gen = ps->gen;
    eng__acct(rank, 0, 0, 1);
    while (ps->gen == my_gen)
      eng__wq_wait(&ps->wq);
    eng__acct(rank, 0, 0, -1);
  } else {
    ps->gen++;
    ps->here[0] = ps->here[1] = 0;
    ps->start = eng__now();
    eng__wq_wake(&ps->wq);
  }
  double first = ps->first_arrival, start = ps->start, bytes = ps->bytes;
  if (!is_send && bytes != op->bytes) {
    char msg[1024], w[256];
    snprintf(msg, sizeof msg,
             "send/recv mismatch on communicator '%s': rank %d sends %.17g bytes to rank %d, "
             "which receives %.17g bytes (tag %d; %s)",
             cm->name, cm->ranks[src], bytes, cm->ranks[dst], op->bytes, op->tag,
             eng__op_where(rank, op, w, sizeof w));
    eng__fail(ST_ESIM, msg);
    sg_actor_kill_all();
    return;
  }
  int xpod = eng__E.comm_xpod &&
             plat_gpu_pod(eng__E.cl, cm->ranks[src]) != plat_gpu_pod(eng__E.cl, cm->ranks[dst]);
  eng__xfer_start(rank, xpod);
  if (is_send) {
    eng__account_flow(cm->ranks[src], cm->ranks[dst], bytes, c, WL_OP_SEND, 0);
    sg_mailbox_put(ps->mb, &eng__E.dummy_payload, (long)llround(bytes));
  } else {
    sg_mailbox_get(ps->mb);
    sim_coll_record *rec = eng__coll_record_new();
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
  eng__xfer_end(rank, cm, start, xpod);
}

