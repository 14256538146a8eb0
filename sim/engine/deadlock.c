/* deadlock.c — what a run that stopped before its end was stuck on.
 *
 *  6. Failure.  A member that never arrives leaves the others blocked; when
 *     SimGrid runs out of events the run ends and the rendezvous states say
 *     which communicator, op and ranks were stuck (ST_ESIM).
 */
#include "eng_int.h"

const char *eng__op_where(int rank, const wl_op *op, char *buf, size_t n)
{
  const wl_workload *wl = eng__E.wl;
  const wl_program *p = &wl->programs[wl->rank_program[rank]];
  const char *nm = op ? wl_op_name(p, op) : "";
  if (!op)
    snprintf(buf, n, "an op of program '%s'", p->name);
  else if (*nm)
    snprintf(buf, n, "op %ld '%s' of program '%s'", (long)(op - p->ops), nm, p->name);
  else
    snprintf(buf, n, "op %ld of program '%s'", (long)(op - p->ops), p->name);
  return buf;
}

void eng__describe_deadlock(void)
{
  const wl_workload *wl = eng__E.wl;
  st_buf b;
  st_buf_init(&b);
  for (int c = 0; c < wl->num_comms && !b.len; c++) {
    eng__comm *cs = &eng__E.comms[c];
    const wl_comm *cm = &wl->comms[c];
    if (cs->arrived == 0)
      continue;
    char where[256];
    st_buf_printf(&b,
                  "collective %s (%s, rank %d) on communicator '%s' never completed: %d of %d "
                  "ranks reached it (",
                  wl_coll_name(cs->op), eng__op_where(cs->first_rank, cs->first_op, where,
                  sizeof where), cs->first_rank, cm->name, cs->arrived, cm->size);
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
      char where[256];
      st_buf_printf(&b,
                    "%s from rank %d to rank %d on communicator '%s' (tag %d; %s of rank %d) was "
                    "never matched by a %s",
                    ps->here[0] ? "send" : "recv", cm->ranks[ps->src], cm->ranks[ps->dst], cm->name,
                    ps->tag, eng__op_where(ps->first_rank, ps->first_op, where, sizeof where),
                    ps->first_rank, ps->here[0] ? "recv" : "send");
    }
  if (!b.len) {
    st_buf_printf(&b, "the replay deadlocked at %.9g s: %d of %d streams never finished",
                  eng__now(), eng__E.actors_total - eng__E.actors_done, eng__E.actors_total);
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

