/* sym_env.c — the engine's side of rank classes: what sym.c's analysis asks
 * of it (routes, the flows of an instance, whether an instance has a closed
 * form), and the setup of the reduction before the run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/link.h>

#include "eng_int.h"

static const uint32_t *sym_route(void *u, int src, int dst, uint32_t *n, double *lat_s)
{
  (void)u;
  eng__route *re = eng__route_get(src, dst);
  if (!re)
    return NULL;
  *n = re->n;
  *lat_s = re->lat_s;
  return re->links;
}

static int sym_walk(void *u, int c, int op, double bytes, int root, void (*fn)(void *, int, int),
                    void *fn_u)
{
  (void)u;
  eng__tuple t = {.comm = c, .op = (uint8_t)op, .root = root, .bytes = bytes};
  coll_sched sched;
  coll_sched_init(&sched);
  int rc = eng__fast_walk_flows(c, &t, &sched, fn, fn_u);
  coll_sched_release(&sched);
  return rc;
}

/* Whether communicator c's (op, bytes, root) instance has a closed form; the
 * communicator's state is left as it was. */
/* Communicator c set up for an (op, bytes) instance, the tuner's choice in
 * ctx (and in cs->ch); *saved keeps what was there for instance_end(). */
static int instance_begin(int c, int op, double bytes, eng__comm *saved, coll_ctx *ctx,
                          eng__route_ctx *rctx)
{
  eng__comm *cs = &eng__E.comms[c];
  if (eng__comm_prepare(c, cs))
    return ST_ENOMEM;
  *saved = *cs;
  cs->op = op;
  cs->bytes = bytes;
  eng__coll_ctx_fill(c, cs, ctx, rctx);
  coll_choose(ctx);
  cs->ch = ctx->ch;
  return ST_OK;
}

/* The communicator's state as it was before instance_begin(). */
static void instance_end(int c, const eng__comm *saved)
{
  eng__comm *cs = &eng__E.comms[c];
  cs->op = saved->op;
  cs->bytes = saved->bytes;
  cs->ch = saved->ch;
}

static int sym_closed(void *u, int c, int op, double bytes, int root)
{
  (void)u;
  eng__comm *cs = &eng__E.comms[c], saved;
  coll_ctx ctx;
  eng__route_ctx rctx;
  if (instance_begin(c, op, bytes, &saved, &ctx, &rctx))
    return 0;
  wl_op o;
  memset(&o, 0, sizeof o);
  o.kind = WL_OP_COLL;
  o.sub = (uint8_t)op;
  o.peer = root;
  coll_sched sched;
  coll_sched_init(&sched);
  double T = eng__fast_duration(c, cs, &o, &sched, 0);
  coll_sched_release(&sched);
  instance_end(c, &saved);
  return T >= 0;
}

/* Member m's rounds of communicator c's (op, bytes, root) instance. */
static int sym_plan(void *u, int c, int op, double bytes, int root, int m, coll_sched *sched)
{
  (void)u;
  eng__comm saved;
  coll_ctx ctx;
  eng__route_ctx rctx;
  if (instance_begin(c, op, bytes, &saved, &ctx, &rctx))
    return ST_ENOMEM;
  ctx.root = root;
  int rc = coll_plan(&ctx, m, sched);
  instance_end(c, &saved);
  return rc;
}

/* Why the quotient fabric cannot be used here, or NULL. */
static const char *no_quotient(void)
{
  if (eng__E.opt->net_model != SIM_NET_IDEAL)
    return "the quotient fabric needs the ideal network model";
  if (eng__E.cl->fabric_kind == PLAT_FABRIC_XML)
    return "the quotient fabric needs a cluster spec, not an XML platform";
  if (eng__E.cl->num_groups > 1 || eng__E.rank_group)
    return "the quotient fabric is not built for node groups or pods";
  if (eng__E.opt->fidelity != SIM_FID_FLOW)
    return "the quotient fabric is checked in flow fidelity only";
  return NULL;
}

/* The quotient fabric in SimGrid: every link of an orbit routes through its
 * canonical link, which carries |O|/C of its bandwidth (sym_quot.c).  The
 * engine's own routes (eng__route_get) stay the real ones. */
static int quotient_apply(void)
{
  eng__sym *s = &eng__E.sym;
  sg_link_t *links = sg_link_list();
  size_t n = 0, L = eng__E.num_links;
  void **from = malloc((L + 1) * sizeof *from), **to = malloc((L + 1) * sizeof *to);
  int rc = ST_OK;
  if (!links || !from || !to) {
    rc = ST_ENOMEM;
    goto out;
  }
  for (size_t l = 0; l < L; l++) {
    if (s->canon[l] != UINT32_MAX && s->canon[l] != l) {
      from[n] = links[l];
      to[n++] = links[s->canon[l]];
    }
    if (s->bw_scale[l] != 1)
      sg_link_set_bandwidth(links[l], eng__E.link_bw[l] / s->bw_scale[l]);
  }
  rc = plat_route_alias(from, to, n);
out:
  free(links);
  free(from);
  free(to);
  return rc;
}

int eng__sym_setup(st_err *err)
{
  const wl_workload *wl = eng__E.wl;
  if (!eng__E.opt->symmetry) {
    memset(&eng__E.sym, 0, sizeof eng__E.sym);
    eng__E.sym.C = 1;
    snprintf(eng__E.sym.desc, sizeof eng__E.sym.desc, "none (turned off)");
    return ST_OK;
  }
  if (eng__E.host_use) { /* the checks cover collectives and send/recv only */
    memset(&eng__E.sym, 0, sizeof eng__E.sym);
    eng__E.sym.C = 1;
    snprintf(eng__E.sym.desc, sizeof eng__E.sym.desc,
             "none (host-memory offload: the rank-class checks do not cover copies and host "
             "compute)");
    return ST_OK;
  }
  if (eng__E.slow_why[0]) { /* compute factors: ranks are no copies (slow.c) */
    memset(&eng__E.sym, 0, sizeof eng__E.sym);
    eng__E.sym.C = 1;
    snprintf(eng__E.sym.desc, sizeof eng__E.sym.desc, "none (%s)", eng__E.slow_why);
    return ST_OK;
  }
  uint8_t *fast = malloc((size_t)wl->num_comms + 1);
  if (!fast)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  for (int c = 0; c < wl->num_comms; c++)
    fast[c] = (uint8_t)eng__E.comms[c].fast;
  eng__sym_env env = {.wl = wl,
                      .comm_fast = fast,
                      .member = eng__E.member,
                      .num_links = eng__E.num_links,
                      .link_bw = eng__E.link_bw,
                      .link_shared = eng__E.link_shared,
                      .rank_group = eng__E.rank_group,
                      .route = sym_route,
                      .walk = sym_walk,
                      .closed = sym_closed,
                      .plan = sym_plan,
                      .gpus_per_node = eng__E.cl->gpus_per_node,
                      .no_quotient = no_quotient(),
                      .u = NULL};
  int rc = eng__sym_prepare(&eng__E.sym, &env);
  free(fast);
  if (!rc && eng__E.sym.on && eng__E.sym.quotient)
    rc = quotient_apply();
  if (!rc && eng__E.sym.on && !eng__E.sym.quotient && eng__E.link_bytes && /* links.c */
      !(eng__E.class_bytes = calloc(eng__E.num_links + 1, sizeof(double))))
    rc = ST_ENOMEM;
  if (!rc && eng__E.sym.on && eng__E.sym.fixed) {
    /* links every class crosses carry C identical loads: class 0 alone gets
     * 1/C of them (sym.c, condition 3) */
    sg_link_t *links = sg_link_list();
    if (!links)
      rc = ST_ENOMEM;
    for (size_t l = 0; links && l < eng__E.num_links; l++)
      if (eng__E.sym.link_fixed[l]) {
        eng__E.link_bw[l] /= eng__E.sym.C;
        sg_link_set_bandwidth(links[l], eng__E.link_bw[l]);
      }
    free(links);
  }
  if (rc)
    return st_err_set(err, rc, "out of memory checking rank classes");
  return eng__E.failed ? (err ? err->code : ST_ENOMEM) : ST_OK;
}

