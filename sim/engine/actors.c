/* actors.c — the stream actors: one per (rank, stream), their waits on other
 * streams and on state changes, and the progress of the run.
 *
 *  1. Actors.  Each (rank, stream) whose program has ops on that stream is a
 *     SimGrid actor on the rank's GPU host.  Programs are shared between
 *     ranks; per-rank state is only counters (ops done per stream) and the
 *     time accounting, so memory is O(ranks x streams), not O(ranks x ops).
 *     An actor runs its stream's ops in order: it waits for the ops of
 *     other streams its next op depends on, then hands the op to compute.c,
 *     collective.c or p2p.c.
 */
#include <stdio.h>
#include <stdlib.h>

#include <simgrid/actor.h>
#include <simgrid/host.h>
#include <simgrid/semaphore.h>

#include "eng_int.h"

void eng__wq_wait(eng__waitq *q)
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
void eng__wq_wake(eng__waitq *q)
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

void eng__wq_release(eng__waitq *q)
{
  free(q->a);
  q->a = NULL;
  q->n = q->cap = 0;
}

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
      eng__wq_wait(&rs->wq);
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
  double wall = (double)(t.tv_sec - eng__E.wall0.tv_sec) +
                1e-9 * (double)(t.tv_nsec - eng__E.wall0.tv_nsec);
  if (wall < 2.0 || wall - eng__E.last_progress < 0.5)
    return;
  eng__E.last_progress = wall;
  double frac = (double)eng__E.ops_done / (double)eng__E.ops_total;
  double eta = frac > 0 ? wall * (1 / frac - 1) : 0;
  fprintf(stderr, "\rsimtrain: simulated %.6f s, %llu/%llu ops (%.0f%%), %.0f ops/s, ETA %.0f s   ",
          eng__now(), (unsigned long long)eng__E.ops_done, (unsigned long long)eng__E.ops_total,
          100 * frac, (double)eng__E.ops_done / wall, eta);
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
      eng__run_coll(rank, p, op, &a->sched);
      break;
    case WL_OP_SEND:
    case WL_OP_RECV:
      eng__run_p2p(rank, op);
      break;
    case WL_OP_COPY:
      eng__run_copy(rank, op);
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

/* One actor per (rank, stream) with ops, class-0 ranks only with rank
 * classes (the others are copies of their representative). */
int eng__actors_start(st_err *err)
{
  const wl_workload *wl = eng__E.wl;
  size_t max_actors = 0;
  for (int rank = 0; rank < wl->num_ranks; rank++)
    max_actors += (size_t)wl->programs[wl->rank_program[rank]].num_streams;
  eng__E.actors = calloc(max_actors + 1, sizeof *eng__E.actors);
  if (!eng__E.actors)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  for (int rank = 0; rank < wl->num_ranks; rank++) {
    if (eng__E.sym.on && eng__E.sym.cls[rank] != 0)
      continue; /* a copy of its class-0 representative */
    int pidx = wl->rank_program[rank];
    const wl_program *p = &wl->programs[pidx];
    const eng__prog *pi = &eng__E.progs[pidx];
    eng__rank *rs = &eng__E.ranks[rank];
    rs->done = st_arena_alloc(&eng__E.arena, (size_t)p->num_streams * sizeof(uint32_t));
    if (!rs->done)
      return st_err_set(err, ST_ENOMEM, "out of memory");
    eng__E.ops_total += p->num_ops;
    rs->first_actor = eng__E.actors_total;
    for (int s = 0; s < p->num_streams; s++) {
      if (!pi->stream_len[s])
        continue;
      rs->n_actors++;
      eng__actor *a = st_arena_alloc(&eng__E.arena, sizeof *a);
      if (!a)
        return st_err_set(err, ST_ENOMEM, "out of memory");
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
  return ST_OK;
}
