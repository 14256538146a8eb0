/* compute.c — compute runs: coalesced timed waits, and the overlap stretch.
 *
 *  2. Compute.  A compute op is a timed wait (sg_actor_sleep_for, ten times
 *     cheaper than an exec).  Consecutive compute ops of a stream are
 *     coalesced into one wait up to the next op another stream waits on, or
 *     the next op that itself waits; timeline rows are rebuilt from offsets.
 *     Communication kernels share the SMs and HBM with compute: a compute
 *     run holding modelled ops (duration_s < 0) is lengthened by
 *     (plat_compute_overlap_factor() - 1) x the time it ran beside a transfer
 *     of the same rank (the overlapped time that accounting charged during
 *     the run), in extra timed waits until the extension no longer overlaps
 *     (a geometric series: a transfer still running over the whole last
 *     wait gets the series' remaining sum in one wait, so one to three
 *     waits per run, at most 16).  Only the modelled share of
 *     the run is stretched; given durations (traces) were measured as they
 *     ran.  Deterministic, and a run with no transfer beside it costs one
 *     wait as before.  Host ops (WL_OPF_HOST, an offloaded optimizer step)
 *     run on the CPUs: a run holds only host ops or none, counts as offload
 *     in the accounting, not compute, and is never stretched.
 */
#include <simgrid/actor.h>

#include "eng_int.h"

/* The compute run starting at stream position k: up to the next op another
 * stream waits on, or the next op that itself waits or is not compute.
 * Returns its last position; *total its time, *modelled the share the
 * compute model priced; phase times are charged when charge_phase. */
uint32_t eng__compute_run_end(const eng__actor *a, int rank, const wl_program *p,
                              const eng__prog *pi, uint32_t k, double *total, double *modelled,
                              int charge_phase)
{
  uint32_t k2 = k;
  double tot = 0, mod = 0;
  int host = (p->ops[a->ops[k]].flags & WL_OPF_HOST) != 0;
  for (;;) {
    const wl_op *o = &p->ops[a->ops[k2]];
    double d = eng__op_dur(rank, pi, a->ops[k2]);
    tot += d;
    if (o->duration_s < 0 && !host) /* the CPUs: no stretch beside transfers */
      mod += d;
    if (charge_phase)
      eng__E.res->ranks[rank].phase_s[o->phase < WL_PHASE_COUNT ? o->phase : 0] += d;
    if (pi->is_target[a->ops[k2]] || k2 + 1 >= a->num_ops)
      break;
    const wl_op *nx = &p->ops[a->ops[k2 + 1]];
    if (nx->kind != WL_OP_COMPUTE || nx->wait_count > 0 || ((nx->flags & WL_OPF_HOST) != 0) != host)
      break;
    k2++;
  }
  *total = tot;
  *modelled = mod;
  return k2;
}

/* A compute run k..k2 that began at t0 after its first wait (of `slept`
 * seconds; ov0 the rank's overlapped time when that wait began): the
 * overlap stretch, its rows and phase times, and the stream's progress. */
void eng__compute_run_tail(eng__actor *a, int rank, const wl_program *p, const eng__prog *pi,
                           uint32_t k, uint32_t k2, double t0, double total, double modelled,
                           double ov0, double slept)
{
  sim_rank_stats *st = &eng__E.res->ranks[rank];
  double extra = 0;
  double slowdown = eng__overlap_slowdown(rank);
  if (modelled > 0 && slowdown > 0) {
    /* Each overlapped second costs q more; the stretch may overlap a
     * transfer too, and so on.  A transfer that covered the whole last
     * sleep and is still running covers the rest of that series as
     * well: add (1 + q + q^2 + ...) = add / (1 - q) in one sleep, the
     * limit the step-by-step stretches reach (a transfer that ends
     * inside it leaves at most q / (1 - q) of its uncovered part too
     * much).  One to three sleeps instead of one per factor q. */
    double q = slowdown * (modelled / total);
    double seen = 0; /* overlapped time already paid for */
    eng__acct(rank, 0, 0, 0);
    for (int it = 0; it < 16; it++) {
      double ov = st->overlapped_comm_s - ov0 - seen;
      seen += ov;
      double add = q * ov;
      if (!(add > 1e-12))
        break;
      int whole = q < 0.5 && eng__xfer_now(rank) > 0 && ov >= slept * (1 - 1e-9);
      if (whole)
        add /= 1 - q;
      extra += add;
      sg_actor_sleep_for(add);
      slept = add; /* length of the last sleep */
      eng__acct(rank, 0, 0, 0);
      if (whole)
        break;
    }
  }
  if (p->ops[a->ops[k]].flags & WL_OPF_HOST)
    eng__acct_offload(rank, -1);
  else
    eng__acct(rank, -1, 0, 0);
  double scale = modelled > 0 ? 1.0 + extra / modelled : 1.0, off = 0;
  for (uint32_t j = k; (eng__E.opt->timeline || extra > 0) && j <= k2; j++) {
    const wl_op *o = &p->ops[a->ops[j]];
    double d = eng__op_dur(rank, pi, a->ops[j]);
    if (o->duration_s < 0) {
      st->phase_s[o->phase < WL_PHASE_COUNT ? o->phase : 0] += d * (scale - 1);
      d *= scale;
    }
    eng__timeline_add(rank, o, a->ops[j], t0 + off, t0 + off + d);
    off += d;
  }
  eng__E.events++;
  eng__stream_progress(rank, a->stream, k2 - k + 1);
}

/* Coalesce the run of compute ops from stream position k into one timed
 * wait, then lengthen it by the overlap slowdown x the time it ran beside
 * a transfer of this rank (design note 2). */
uint32_t eng__compute_run(eng__actor *a, int rank, const wl_program *p, const eng__prog *pi,
                          uint32_t k)
{
  double t0 = eng__now();
  double total, modelled;
  uint32_t k2 = eng__compute_run_end(a, rank, p, pi, k, &total, &modelled, 1);
  if (p->ops[a->ops[k]].flags & WL_OPF_HOST) /* on the CPUs: offload, not GPU compute */
    eng__acct_offload(rank, 1);
  else
    eng__acct(rank, 1, 0, 0);
  double ov0 = eng__E.res->ranks[rank].overlapped_comm_s; /* charged up to t0 */
  if (total > 0)
    sg_actor_sleep_for(total);
  eng__compute_run_tail(a, rank, p, pi, k, k2, t0, total, modelled, ov0, total);
  return k2 + 1;
}
