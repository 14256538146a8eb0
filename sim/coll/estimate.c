/* estimate.c — one collective's time by the tuner's closed form, with
 * no engine: the members' layout, the largest ring-neighbour latency from
 * the cluster's own routes (plat_route_get, the same links and latencies
 * SimGrid is given), and coll_choose's estimate. */
#include <math.h>
#include <string.h>

#include "coll.h"
#include "sim.h"

typedef struct est_route {
  const plat_cluster *cl;
  const int32_t *ranks;
} est_route;

static double route_lat(const plat_cluster *cl, int a, int b)
{
  return plat_route_latency(cl, a, b);
}

static double member_lat(void *u, int a, int b)
{
  const est_route *x = u;
  return route_lat(x->cl, x->ranks[a], x->ranks[b]);
}

double sim_coll_estimate(const plat_cluster *cl, const int32_t *ranks, int n, int op, double bytes,
                         int arg)
{
  if (n < 2 || cl->fabric_kind == PLAT_FABRIC_XML)
    return n < 2 ? 0.0 : NAN;
  st_arena arena;
  st_arena_init(&arena, 1 << 16);
  coll_layout lay;
  double t = NAN;
  if (!coll_layout_build(&arena, ranks, n, cl, &lay)) {
    est_route u = {cl, ranks};
    coll_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.op = op;
    ctx.n = n;
    ctx.bytes = bytes;
    ctx.root = arg;
    ctx.ranks = ranks;
    plat_cluster view; /* node groups: what the members settle on together */
    plat_cluster_view(cl, ranks, n, &view);
    ctx.cl = &view;
    ctx.fidelity = SIM_FID_FLOW;
    ctx.model = SIM_COLL_NCCL;
    ctx.force_algo = ctx.force_proto = -1;
    ctx.lay = &lay;
    ctx.route_lat = member_lat;
    ctx.route_u = &u;
    for (int i = 0; i < n; i++) {
      double l = route_lat(cl, ranks[i], ranks[(i + 1) % n]);
      if (l > ctx.ring_lat_max)
        ctx.ring_lat_max = l;
    }
    coll_choose(&ctx);
    t = ctx.ch.est_s;
  }
  st_arena_release(&arena);
  return t;
}
