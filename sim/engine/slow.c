/* slow.c — stragglers and compute variability: the per-(rank, iteration)
 * compute factors and the slowed links (docs/variability.md).
 *
 *  8. Stragglers.  A compute op of rank r in iteration i takes its priced
 *     time x F(r, i), where F(r, i) is the product of the --slow factors of
 *     r's GPU and r's node, times (with variability) a draw from the
 *     distribution on st_rng stream (seed, r x 2^32 + i) — one stream per
 *     (rank, iteration), so a factor depends on nothing but the seed, the
 *     rank and the iteration, whatever the order the actors run in.  The
 *     iteration of an op is the number of iteration markers before it in
 *     its program's op order, less one (0 without markers).  The factors are
 *     one table, built before the run; without stragglers there is none and
 *     compute times are the priced ones, untouched.  A slowed link is given
 *     factor x its bandwidth in SimGrid before the engine indexes the links,
 *     so routes, closed forms (closed.c) and the rank classes' bandwidth
 *     checks (sym.c, condition 3) all see the bandwidth the flows get.
 *     Compute factors break the copies rank classes stand on: with any, the
 *     reduction is refused and the reason kept (eng__E.slow_why).
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/link.h>

#include "eng_int.h"

int eng__slow_setup(st_err *err)
{
  const sim_options *o = eng__E.opt;
  const wl_workload *wl = eng__E.wl;
  const plat_cluster *cl = eng__E.cl;
  int gpn = cl->gpus_per_node > 0 ? cl->gpus_per_node : 1;
  /* nodes the ranks are on (node groups may have unlike GPUs per node) */
  int nodes = wl->num_ranks <= cl->num_gpus && cl->num_gpus > 0
                  ? plat_gpu_node(cl, wl->num_ranks - 1) + 1
                  : (wl->num_ranks + gpn - 1) / gpn;
  int var = o->var_kind == SIM_VAR_LOGNORMAL && o->var_sigma > 0;
  int any = var;
  for (int i = 0; i < o->num_slow; i++) {
    const sim_slow *s = &o->slow[i];
    if (s->kind == SIM_SLOW_GPU && (s->index < 0 || s->index >= wl->num_ranks))
      return st_err_set(err, ST_EUSAGE,
                        "--slow '%s': rank %d is out of range: the workload has %d ranks (0..%d)",
                        s->spec, s->index, wl->num_ranks, wl->num_ranks - 1);
    if (s->kind == SIM_SLOW_NODE && (s->index < 0 || s->index >= nodes))
      return st_err_set(err, ST_EUSAGE,
                        "--slow '%s': node %d is out of range: the workload's %d ranks are on "
                        "nodes 0..%d of cluster '%s' (%s%d GPUs per node)",
                        s->spec, s->index, wl->num_ranks, nodes - 1, cl->name,
                        plat_gpus_per_node_uniform(cl) ? "" : "node 0: ", gpn);
    if (s->kind != SIM_SLOW_LINK && s->factor != 1.0) {
      any = 1;
      if (!eng__E.slow_why[0])
        snprintf(eng__E.slow_why, sizeof eng__E.slow_why, "%s %d is slowed",
                 s->kind == SIM_SLOW_GPU ? "rank" : "node", s->index);
    }
  }
  if (var && !eng__E.slow_why[0])
    snprintf(eng__E.slow_why, sizeof eng__E.slow_why,
             "compute varies by rank and iteration: --variability");
  if (!any)
    return ST_OK;

  int n_iter = 1;
  for (int p = 0; var && p < wl->num_programs; p++) {
    const wl_program *pg = &wl->programs[p];
    eng__prog *pi = &eng__E.progs[p];
    pi->iter = st_arena_alloc(&eng__E.arena, (pg->num_ops + 1) * sizeof *pi->iter);
    if (!pi->iter)
      return st_err_set(err, ST_ENOMEM, "out of memory");
    uint32_t marks = 0;
    for (size_t k = 0; k < pg->num_ops; k++) {
      const wl_op *op = &pg->ops[k];
      if (op->kind == WL_OP_MARKER && op->sub == WL_MARK_ITERATION)
        marks++;
      pi->iter[k] = marks ? marks - 1 : 0;
    }
    if ((int)marks > n_iter)
      n_iter = (int)marks;
  }
  size_t n = (size_t)wl->num_ranks * (size_t)n_iter;
  double *f = malloc((n + 1) * sizeof *f);
  if (!f)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  for (int r = 0; r < wl->num_ranks; r++) {
    double base = 1.0;
    for (int i = 0; i < o->num_slow; i++) {
      const sim_slow *s = &o->slow[i];
      if ((s->kind == SIM_SLOW_GPU && s->index == r) ||
          (s->kind == SIM_SLOW_NODE && r < cl->num_gpus && s->index == plat_gpu_node(cl, r)))
        base *= s->factor;
    }
    for (int it = 0; it < n_iter; it++) {
      double v = base;
      if (var) {
        st_rng g;
        st_rng_seed(&g, o->seed, ((uint64_t)(uint32_t)r << 32) | (uint32_t)it);
        v *= st_rng_lognormal1(&g, o->var_sigma);
      }
      f[(size_t)r * n_iter + it] = v;
    }
  }
  eng__E.cfactor = f;
  eng__E.n_iter = n_iter;
  return ST_OK;
}

int eng__slow_links(st_err *err)
{
  const sim_options *o = eng__E.opt;
  int links_slowed = 0;
  for (int i = 0; i < o->num_slow; i++)
    links_slowed |= o->slow[i].kind == SIM_SLOW_LINK;
  if (!links_slowed)
    return ST_OK;
  size_t n = sg_link_count();
  sg_link_t *links = sg_link_list();
  if (!links)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  int rc = ST_OK;
  for (int i = 0; i < o->num_slow && !rc; i++) {
    const sim_slow *s = &o->slow[i];
    if (s->kind != SIM_SLOW_LINK)
      continue;
    size_t hits = 0;
    for (size_t l = 0; l < n; l++)
      if (!fnmatch(s->link, sg_link_get_name(links[l]), 0)) {
        sg_link_set_bandwidth(links[l], sg_link_get_bandwidth(links[l]) * s->factor);
        hits++;
      }
    if (!hits)
      rc = st_err_set(err, ST_EUSAGE,
                      "--slow '%s': cluster '%s' has no link named '%s' (its %zu links are "
                      "named like '%s' and '%s'; the results file's /links lists them)",
                      s->spec, eng__E.cl->name, s->link, n, n ? sg_link_get_name(links[0]) : "?",
                      n ? sg_link_get_name(links[n - 1]) : "?");
  }
  free(links);
  return rc;
}
