/* engine.c — the replay engine: sim_run() sets a run up, lets SimGrid run
 * the actors and turns what they did into the result (see sim.h for the
 * contract).
 *
 * The engine is one file per concern, sharing one state, eng__E
 * (eng_int.h).  Its design notes are numbered as the docs cite them and
 * stand in the file whose code they describe:
 *  1. Actors: actors.c (one per (rank, stream); waits between streams).
 *  2. Compute: compute.c (coalesced waits; the overlap stretch).
 *  3. Collectives: collective.c (rendezvous and flows); closed.c (closed
 *     forms, where a collective's links carry nothing else).
 *  4. Send/recv: p2p.c.
 *  5. Accounting: acct.c (time buckets; timeline and collective records).
 *  6. Failure: deadlock.c.
 *  7. Rank classes and running ahead: chain.c; sym.c finds the classes and
 *     sym_env.c answers what it asks of the engine.
 *  8. Stragglers and variability: slow.c (compute factors, slowed links).
 *  9. Copies to and from host memory (offload): copy.c.
 * links.c counts each link's bytes, map.c is the engine's hash map,
 * options.c its options.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <simgrid/engine.h>
#include <simgrid/plugins/load.h>
#include <simgrid/semaphore.h>

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
    size_t role_bytes = ((size_t)wl->num_roles + 1) * sizeof(uint32_t);
    pi->role_streams = st_arena_alloc(&eng__E.arena, role_bytes);
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

/* An op's priced time on device d: compute on the GPU, or (WL_OPF_HOST) on
 * its node's CPUs; 0 for what is not compute. */
static double op_price(const plat_cluster *cl, const plat_device *d, const wl_op *o)
{
  return o->kind != WL_OP_COMPUTE    ? 0
         : (o->flags & WL_OPF_HOST) ? plat_host_compute_time(cl, o)
                                    : plat_compute_time(d, o);
}

/* Each program's compute times on the devices that run it: one table per
 * node group with a rank of the program (design note 2: an op is priced
 * once per program and device, not once per rank). */
static int price_programs(st_err *err)
{
  const wl_workload *wl = eng__E.wl;
  const plat_cluster *cl = eng__E.cl;
  int ng = cl->num_groups > 1 ? cl->num_groups : 0;
  if (ng) {
    eng__E.rank_group = st_arena_alloc(&eng__E.arena, (size_t)wl->num_ranks * sizeof(int32_t));
    eng__E.group_slowdown = st_arena_alloc(&eng__E.arena, (size_t)ng * sizeof(double));
    if (!eng__E.rank_group || !eng__E.group_slowdown)
      return st_err_set(err, ST_ENOMEM, "out of memory");
    for (int r = 0; r < wl->num_ranks; r++)
      eng__E.rank_group[r] = plat_gpu_group(cl, r);
    for (int g = 0; g < ng; g++)
      eng__E.group_slowdown[g] = plat_compute_overlap_factor(&cl->groups[g].device) - 1.0;
    for (int pidx = 0; pidx < wl->num_programs; pidx++) {
      eng__prog *pi = &eng__E.progs[pidx];
      if (!(pi->gdur = st_arena_alloc(&eng__E.arena, (size_t)ng * sizeof *pi->gdur)))
        return st_err_set(err, ST_ENOMEM, "out of memory");
      memset(pi->gdur, 0, (size_t)ng * sizeof *pi->gdur);
    }
  }
  for (int r = 0; r < (ng ? wl->num_ranks : 0); r++) {
    int pidx = wl->rank_program[r], g = eng__E.rank_group[r];
    eng__prog *pi = &eng__E.progs[pidx];
    if (pi->gdur[g])
      continue;
    const wl_program *p = &wl->programs[pidx];
    if (!(pi->gdur[g] = st_arena_alloc(&eng__E.arena, (p->num_ops + 1) * sizeof(double))))
      return st_err_set(err, ST_ENOMEM, "out of memory");
    plat_cluster gv = *cl; /* the group's node: its device, its CPUs */
    plat_group_apply(&gv, &cl->groups[g]);
    for (size_t i = 0; i < p->num_ops; i++)
      pi->gdur[g][i] = op_price(&gv, &gv.device, &p->ops[i]);
  }
  for (int pidx = 0; pidx < wl->num_programs; pidx++) {
    const wl_program *p = &wl->programs[pidx];
    eng__prog *pi = &eng__E.progs[pidx];
    if (pi->gdur) /* eng__op_dur reads gdur */
      continue;
    for (size_t i = 0; i < p->num_ops; i++)
      pi->dur[i] = op_price(cl, &cl->device, &p->ops[i]);
  }
  return ST_OK;
}

/* A cluster of pods: which communicators span pods, and the pods' byte
 * counts (the result's).  Each pod is node group k, so rank_group is each
 * rank's pod. */
static int pods_setup(st_err *err)
{
  const wl_workload *wl = eng__E.wl;
  const plat_cluster *cl = eng__E.cl;
  sim_result *r = eng__E.res;
  if (cl->num_pods == 0)
    return ST_OK;
  eng__E.comm_xpod = st_arena_alloc(&eng__E.arena, (size_t)wl->num_comms + 1);
  r->pod_out_bytes = calloc((size_t)cl->num_pods, sizeof(double));
  r->pod_in_bytes = calloc((size_t)cl->num_pods, sizeof(double));
  if (!eng__E.comm_xpod || !r->pod_out_bytes || !r->pod_in_bytes)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  r->num_pods = cl->num_pods;
  eng__E.pod_out_bytes = r->pod_out_bytes;
  eng__E.pod_in_bytes = r->pod_in_bytes;
  for (int c = 0; c < wl->num_comms; c++) {
    const wl_comm *cm = &wl->comms[c];
    int x = 0;
    for (int i = 1; i < cm->size && !x; i++)
      x = eng__E.rank_group[cm->ranks[i]] != eng__E.rank_group[cm->ranks[0]];
    eng__E.comm_xpod[c] = (uint8_t)x;
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

/* The run's state and its result's skeleton: members, program infos.
 * 0, or an error set in err. */
static int run_init(const wl_workload *wl, const plat_cluster *cl, const sim_options *opt,
                    st_err *err)
{
  memset(&eng__E, 0, sizeof eng__E);
  eng__E.used = 1;
  eng__E.wl = wl;
  eng__E.cl = cl;
  eng__E.opt = opt;
  eng__E.err = err;
  eng__E.overlap_slowdown = plat_compute_overlap_factor(&cl->device) - 1.0;
  /* copies to host memory: the platform gets its host-memory endpoints */
  eng__E.host_use = wl_workload_host_use(wl);
  if (eng__E.host_use & WL_HOST_COPIES) {
    eng__E.cl_host = *cl;
    if (plat_cluster_host_memory(&eng__E.cl_host, 1, err))
      return err ? err->code : ST_EINPUT;
    eng__E.cl = cl = &eng__E.cl_host;
  }
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
  eng__E.hosts = calloc((size_t)cl->num_gpus + (cl->host_memory ? cl->num_nodes : 0),
                        sizeof *eng__E.hosts);
  if (!r->ranks || !eng__E.ranks || !eng__E.comms || !eng__E.hosts)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  for (int i = 0; i < wl->num_ranks; i++) {
    r->ranks[i].rank = i;
    r->ranks[i].host = i;
  }
  for (int c = 0; c < wl->num_comms; c++) {
    size_t bytes = (size_t)wl->comms[c].size * sizeof(uint64_t);
    if (!(eng__E.comms[c].arrived_gen = st_arena_alloc(&eng__E.arena, bytes)))
      return st_err_set(err, ST_ENOMEM, "out of memory");
  }
  int rc = build_members(err);
  if (!rc)
    rc = build_prog_info(err);
  if (!rc)
    rc = price_programs(err);
  if (!rc)
    rc = pods_setup(err);
  return rc ? rc : eng__slow_setup(err);
}

/* On the platform SimGrid has been given: the links' index, the closed
 * forms, the rank classes and the actors.  0, or an error set in err. */
static int run_prepare(st_err *err)
{
  const sim_options *opt = eng__E.opt;
  int rc;
  if ((rc = plat_cluster_build(eng__E.cl, (void **)eng__E.hosts, err)))
    return rc;
  if ((rc = eng__slow_links(err)))
    return rc;
  if (eng__links_index(opt->link_stats))
    return st_err_set(err, ST_ENOMEM, "out of memory indexing links");
  if ((rc = eng__fast_prepare(err)) || (rc = eng__sym_setup(err)))
    return rc;
  return eng__actors_start(err);
}

/* SimGrid runs the actors to the end; the result's counters.  0, or the
 * run's failure (a deadlock described). */
static int run_simulate(st_err *err)
{
  sim_result *r = eng__E.res;
  eng__E.progress_on = !eng__E.opt->quiet && isatty(STDERR_FILENO);
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
  r->simulated_ranks = eng__E.sym.on ? eng__E.sym.simulated : eng__E.wl->num_ranks;

  if (!eng__E.failed && eng__E.actors_done != eng__E.actors_total)
    eng__describe_deadlock();
  return eng__E.failed ? (err ? err->code : ST_ESIM) : ST_OK;
}

/* The result once the run is over: the ranks the classes stand for, and
 * every rank's accounting closed at the end of the run (the last rank's
 * finish): from its own last op to there a rank waits for the slowest one
 * (idle, as such waits are inside the run), so every rank's parts add up
 * to the run time.  0, or an error set in err. */
static int run_finish(st_err *err)
{
  const wl_workload *wl = eng__E.wl;
  sim_result *r = eng__E.res;
  if (eng__E.sym.on) {
    eng__sym_expand_ranks(&eng__E.sym, wl, r->ranks);
    for (int rank = 0; rank < wl->num_ranks; rank++)
      eng__E.ranks[rank].last_t = eng__E.ranks[eng__sym_rep(&eng__E.sym, wl, rank)].last_t;
    if (eng__sym_expand_colls(&eng__E.sym, wl, &r->colls, &r->num_colls) ||
        eng__sym_expand_timeline(&eng__E.sym, wl, &r->timeline, &r->num_timeline))
      return st_err_set(err, ST_ENOMEM, "out of memory expanding rank classes");
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
  if (eng__E.opt->link_stats)
    eng__links_collect();
  return ST_OK;
}

/* Everything the run holds but the result it hands out. */
static void run_release(void)
{
  const wl_workload *wl = eng__E.wl;
  for (int i = 0; eng__E.ranks && i < wl->num_ranks; i++)
    eng__wq_release(&eng__E.ranks[i].wq);
  for (int c = 0; eng__E.comms && c < wl->num_comms; c++) {
    eng__comm *cs = &eng__E.comms[c];
    eng__wq_release(&cs->wq);
    for (int m = 0; cs->vwq && m < wl->comms[c].size; m++)
      eng__wq_release(&cs->vwq[m]);
    free(cs->vwq);
    free(cs->vpend);
    eng__map_release(&cs->vts);
  }
  for (int i = 0; eng__E.actors && i < eng__E.actors_total; i++) {
    coll_sched_release(&eng__E.actors[i]->sched);
    free(eng__E.actors[i]->segs);
    if (eng__E.actors[i]->sem)
      sg_sem_destroy(eng__E.actors[i]->sem);
  }
  free(eng__E.actors);
  sim_result_destroy(eng__E.res);
  eng__E.res = NULL;
  free(eng__E.ranks);
  free(eng__E.comms);
  free(eng__E.hosts);
  free(eng__E.member);
  eng__map_release(&eng__E.mailboxes);
  for (size_t i = 0; i < eng__E.p2ps.cap; i++)
    if (eng__E.p2ps.keys[i])
      eng__wq_release(&((eng__p2p *)eng__E.p2ps.vals[i])->wq);
  eng__map_release(&eng__E.p2ps);
  eng__map_release(&eng__E.link_index);
  eng__map_release(&eng__E.memo);
  eng__map_release(&eng__E.routes);
  free(eng__E.link_bytes);
  free(eng__E.usage);
  free(eng__E.link_bw);
  free(eng__E.link_shared);
  free(eng__E.class_bytes);
  free(eng__E.cfactor);
  eng__sym_release(&eng__E.sym);
  st_arena_release(&eng__E.arena);
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
  if (wl->num_ranks > cl->num_gpus && plat_gpus_per_node_uniform(cl))
    return st_err_set(err, ST_EINPUT,
                      "workload has %d ranks but cluster '%s' has %d GPUs (%d per node: it "
                      "needs %d nodes)",
                      wl->num_ranks, cl->name, cl->num_gpus, cl->gpus_per_node,
                      (wl->num_ranks + cl->gpus_per_node - 1) / cl->gpus_per_node);
  if (wl->num_ranks > cl->num_gpus)
    return st_err_set(err, ST_EINPUT, "workload has %d ranks but cluster '%s' has %d GPUs",
                      wl->num_ranks, cl->name, cl->num_gpus);
  int rc = wl_workload_check(wl, err);
  if (rc)
    return rc;

  if (!(rc = run_init(wl, cl, opt, err))) {
    /* the arguments outlive the run, whatever SimGrid keeps of them */
    char *argv[32], store[1024];
    int argc;
    build_cfg_argv(opt, &argc, argv, store, sizeof store);
    simgrid_init(&argc, argv);
    if (opt->link_stats)
      sg_link_load_plugin_init();
    if (!(rc = run_prepare(err)) && !(rc = run_simulate(err)) && !(rc = run_finish(err))) {
      *out = eng__E.res;
      eng__E.res = NULL;
    }
  }
  run_release();
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
  free(r->pod_out_bytes);
  free(r->pod_in_bytes);
  st_arena_release(&r->arena);
  free(r);
}
