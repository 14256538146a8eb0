/* sym_quot.c — rank classes on the quotient fabric: when the role R's
 * groups' own collectives share links with other traffic (tensor
 * parallelism of 4 on 8-GPU nodes, whose pipeline or data-parallel peer
 * sits behind the same NVLink port), simulate member 0 of each group only,
 * its collectives included, on the fabric divided by the groups' symmetry.
 *
 * The symmetry.  A group's C members are numbered node-major: q on each of
 * its nb nodes (member i on the group's node i / q, in place i % q there).
 * The translations g_m (m a member index) send member i to member
 *   ((i/q + m/q) mod nb) * q + (i%q + m%q) mod q
 * of the same group, in every group at once; g_m sends member 0 to member
 * m, and the C translations form a group G (Z_q x Z_nb) acting on the ranks
 * with no fixed point: the classes are its orbits' positions, member 0 of
 * each group the representatives (class 0).  It holds when:
 *  1. every rank runs its representative's program, and every other role's
 *     communicator of a class-0 rank lies in class 0 and is carried member
 *     by member to the rank's own (sym.c, condition 2);
 *  2. every R collective the programs issue is G-invariant: member m's
 *     rounds are member 0's translated by g_m (the same round structure,
 *     latency waits and bytes; peers translated), so that all members run
 *     in lockstep and every transfer member 0 receives is the image of one
 *     it sends in the same round; no send/recv on R, no zero-byte transfer;
 *  3. the links carry the symmetry: for every flow f of the step (the
 *     class-0 ranks' flows and all their images) and each generator g of G
 *     (the shift inside a node, the shift across nodes), the route of g(f)
 *     is the route of f with each link l replaced by Phi_g(l), one
 *     function Phi_g on the links, one-to-one, keeping bandwidth and
 *     sharing, the route latency kept.
 * Then the full simulation is G-invariant: its max-min allocation (unique)
 * gives every image of a flow the flow's rate, and a link l of orbit O
 * (under the Phi) carries, for each class-0 flow f0 and each of its links in
 * O, C/|O| images (the stabiliser of l).  Its constraint reads
 *   sum over f0 of |route(f0) & O| x (C/|O|) x rate(f0) <= B,
 * the same for every link of O.  Simulating the class-0 flows only, each
 * routed over one link per orbit (the canonical one, of bandwidth
 * B x |O| / C), is that system: SimGrid gives the class-0 flows the rates
 * the full simulation gives them, and the members' receives end with the
 * sends they are images of.  Checked too: no class-0 route crosses one
 * orbit twice (SimGrid would count it once per crossing, which is what the
 * constraint says, but it is not relied on).
 *
 * Groups need not be a role's communicators: the nodes a role's groups
 * span are groups too (sym.c, try_nodes), every rank on them numbered node
 * by node.  With DeepSeek-V3's expert groups of 8 nodes inside 16-node
 * data-parallel groups, the expert data-parallel pairs (rank r and r + 64)
 * span two nodes, one in each expert group: their nodes' translations (the
 * places' shift, the two nodes' swap) keep the expert groups and the
 * data-parallel rings, where no shift of either group keeps the other.
 * Then a communicator can hold several class-0 members and others (an
 * expert group holds the place-0 GPUs of its 8 nodes): it runs as its
 * class-0 members, checked further (quot_instances):
 *  4. every member y is the image of a class-0 member of the same
 *     communicator, rep(y), under translation cls(y), and that translation
 *     keeps the communicator.
 * Then every member arrives when a class-0 member does, and a transfer a
 * class-0 member m receives from a member x outside class 0 is the image
 * under g = g_cls(x) of rep(x)'s transfer to g^-1(m), in the same instance
 * and round: one flow of the quotient fabric, started when both rep(x) (its
 * send) and m (its receive) have posted it, as a mailbox comm starts when
 * both sides have, and ended for both (collective.c).  Each transfer's
 * orbit is one flow, so the max-min system is the one above.
 *
 * Results: per-rank figures are copied as for any class (sym.c); a link's
 * bytes are its orbit's (sum over O) x C / |O|, the R groups' per-link
 * shares likewise spread over the orbit, the other communicators' shares
 * copied to their images' links (Phi_{g_k}); a link's peak load is its
 * orbit's canonical link's, relative to that link's simulated bandwidth.
 */
#include <stdlib.h>
#include <string.h>

#include "eng_int.h"

/* member i under g_m: node i/q + m/q, place i%q + m%q, or with the twist,
 * m%q - i%q when m/q is odd, or with two digits of places (rad), each
 * digit shifted on its own */
static int gmul(const eng__sym *s, int i, int m)
{
  int q = s->q, nb = s->nb, t = m / q, v = i % q, w = m % q, place;
  if (s->rad) {
    int r = s->rad;
    place = (v % r + w % r) % r + r * ((v / r + w / r) % (q / r));
  } else {
    if (s->twist && (t & 1))
      v = (q - v) % q;
    place = (v + w) % q;
  }
  return ((i / q + t) % nb) * q + place;
}

/* rank r under g_m */
static int grank(const eng__sym *s, const eng__sym_env *env, int r, int m)
{
  (void)env;
  return s->gmem[(size_t)s->grp[r] * s->C + gmul(s, s->cls[r], m)];
}

int eng__sym_act(const eng__sym *s, int r, int m) { return grank(s, NULL, r, m); }

static int node_of(const eng__sym_env *env, int r)
{
  return env->gpus_per_node > 0 ? r / env->gpus_per_node : r;
}

/* The groups' node structure: q members on each of nb nodes, node-major,
 * the same in every group.  1, or 0 (and why). */
static int node_structure(eng__sym *s, const eng__sym_env *env)
{
  const wl_workload *wl = env->wl;
  int C = s->C, q = 0;
  for (int r = 0; r < wl->num_ranks; r++) {
    if (s->cls[r] != 0)
      continue;
    const int32_t *mem = &s->gmem[(size_t)s->grp[r] * C];
    int qc = 1;
    while (qc < C && node_of(env, mem[qc]) == node_of(env, mem[0]))
      qc++;
    if (q == 0)
      q = qc;
    if (qc != q || C % q) {
      eng__sym_why(s, "the '%s' groups are not spread alike over their nodes",
                   wl->roles[s->role]);
      return 0;
    }
    for (int i = 0; i < C; i++) {
      int first = mem[(i / q) * q];
      if (node_of(env, mem[i]) != node_of(env, first) ||
          (i % q == 0 && i > 0 && node_of(env, first) == node_of(env, mem[i - q]))) {
        eng__sym_why(s, "the '%s' group of rank %d is not numbered node by node",
                     wl->roles[s->role], r);
        return 0;
      }
    }
  }
  s->q = q;
  s->nb = C / q;
  return 1;
}

/* ---- condition 2: the R collectives are G-invariant ---------------------- */

typedef struct xfer_key {
  int peer;
  double bytes;
} xfer_key;

static int cmp_xfer(const void *a, const void *b)
{
  const xfer_key *x = a, *y = b;
  if (x->peer != y->peer)
    return x->peer < y->peer ? -1 : 1;
  return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

/* A round's sends (is_send) or receives as sorted (peer, bytes), the peers
 * mapped by pi when given. */
static void round_keys(const coll_sched *sc, const coll_round *rd, int is_send, const int32_t *pi,
                       xfer_key *out)
{
  uint32_t n = is_send ? rd->nsend : rd->nrecv, first = is_send ? rd->send_first : rd->recv_first;
  for (uint32_t i = 0; i < n; i++) {
    const coll_xfer *x = &sc->xfers[first + i];
    out[i].peer = pi ? pi[x->peer] : x->peer;
    out[i].bytes = is_send ? x->bytes : 0;
  }
  qsort(out, n, sizeof *out, cmp_xfer);
}

/* Whether schedule b is schedule a with its peers mapped by pi. */
static int translated(const coll_sched *a, const coll_sched *b, const int32_t *pi, xfer_key *ka,
                      xfer_key *kb)
{
  if (a->nrounds != b->nrounds)
    return 0;
  for (size_t r = 0; r < a->nrounds; r++) {
    const coll_round *x = &a->rounds[r], *y = &b->rounds[r];
    if (x->nsend != y->nsend || x->nrecv != y->nrecv || x->pre_s != y->pre_s)
      return 0;
    for (int is_send = 0; is_send < 2; is_send++) {
      uint32_t n = is_send ? x->nsend : x->nrecv;
      round_keys(a, x, is_send, pi, ka);
      round_keys(b, y, is_send, NULL, kb);
      for (uint32_t i = 0; i < n; i++)
        if (ka[i].peer != kb[i].peer || ka[i].bytes != kb[i].bytes)
          return 0;
    }
  }
  return 1;
}

static size_t max_round(const coll_sched *sc)
{
  size_t n = 0;
  for (size_t r = 0; r < sc->nrounds; r++) {
    if (sc->rounds[r].nsend > n)
      n = sc->rounds[r].nsend;
    if (sc->rounds[r].nrecv > n)
      n = sc->rounds[r].nrecv;
  }
  return n;
}

/* ---- condition 3: the links carry the symmetry --------------------------- */

enum { NGEN = 3 }; /* the places' shift, the nodes' shift, the places' second digit */

typedef struct quot_ctx {
  eng__sym *s;
  const eng__sym_env *env;
  uint32_t *phi[NGEN]; /* per generator: Phi_g(l), UINT32_MAX unset */
  uint32_t *inv[NGEN]; /* and its inverse, to check it one-to-one */
  int gen_m[NGEN];     /* the generators as member indices (-1: none) */
  uint32_t *routes;  /* scratch: the C images' routes, PLAT_ROUTE_MAX each */
  uint32_t *lens;
  eng__map seen;     /* flows checked */
  st_arena arena;
  int ok, nomem;
} quot_ctx;


/* One class-0 flow s0 -> d0: the routes of its C images, the generators'
 * link maps on them, the class images' map (link_img) of its links. */
static void quot_flow(void *u, int s0, int d0)
{
  quot_ctx *w = u;
  eng__sym *s = w->s;
  const eng__sym_env *env = w->env;
  if (!w->ok || s0 == d0)
    return;
  int first = eng__seen_first(&w->seen, &w->arena, (uint64_t)s0, (uint64_t)d0, 0x71756f74, 1);
  if (first < 0) {
    w->ok = 0;
    w->nomem = 1;
    return;
  }
  if (!first)
    return;
  int C = s->C;
  double lat0 = 0;
  for (int m = 0; m < C; m++) {
    uint32_t n;
    double lat;
    const uint32_t *l = env->route(env->u, grank(s, env, s0, m), grank(s, env, d0, m), &n, &lat);
    if (!l) {
      w->ok = 0;
      w->nomem = 1;
      return;
    }
    if (m == 0) {
      lat0 = lat;
      if (n > PLAT_ROUTE_MAX) {
        eng__sym_why(s, "the route %d->%d is longer than %d links", s0, d0, PLAT_ROUTE_MAX);
        w->ok = 0;
        return;
      }
    }
    if (n != w->lens[0] && m > 0) {
      eng__sym_why(s, "the route %d->%d and its image %d->%d differ", s0, d0,
                   grank(s, env, s0, m), grank(s, env, d0, m));
      w->ok = 0;
      return;
    }
    if (m > 0 && lat != lat0) {
      eng__sym_why(s, "the route %d->%d and its image %d->%d differ in latency", s0, d0,
                   grank(s, env, s0, m), grank(s, env, d0, m));
      w->ok = 0;
      return;
    }
    w->lens[m] = n;
    memcpy(&w->routes[(size_t)m * PLAT_ROUTE_MAX], l, n * sizeof *l);
  }
  uint32_t n = w->lens[0];
  const uint32_t *r0 = w->routes;
  for (uint32_t i = 0; i < n; i++)
    for (int k = 0; k < C; k++) {
      uint32_t y = w->routes[(size_t)k * PLAT_ROUTE_MAX + i];
      uint32_t *img = &s->link_img[(size_t)r0[i] * C + k];
      if (*img == UINT32_MAX)
        *img = y;
      else if (*img != y) {
        eng__sym_why(s, "link %u has two images under one translation", r0[i]);
        w->ok = 0;
        return;
      }
    }
  for (int g = 0; g < NGEN; g++) {
    if (w->gen_m[g] < 0)
      continue;
    for (int m = 0; m < C; m++) {
      int m2 = gmul(s, m, w->gen_m[g]); /* g o g_m = g_m2 */
      for (uint32_t i = 0; i < n; i++) {
        uint32_t x = w->routes[(size_t)m * PLAT_ROUTE_MAX + i];
        uint32_t y = w->routes[(size_t)m2 * PLAT_ROUTE_MAX + i];
        if (w->phi[g][x] == UINT32_MAX) {
          if (w->inv[g][y] != UINT32_MAX) {
            eng__sym_why(s, "links %u and %u have one image %u", w->inv[g][y], x, y);
            w->ok = 0;
            return;
          }
          if (env->link_bw[x] != env->link_bw[y] || env->link_shared[x] != env->link_shared[y]) {
            eng__sym_why(s, "links %u and %u (a route and its image) differ in bandwidth", x, y);
            w->ok = 0;
            return;
          }
          w->phi[g][x] = y;
          w->inv[g][y] = x;
        } else if (w->phi[g][x] != y) {
          eng__sym_why(s, "link %u has two images under one translation", x);
          w->ok = 0;
          return;
        }
      }
    }
  }
}

/* Conditions 2 and 3 on every distinct instance the class-0 ranks issue. */
static int quot_instances(quot_ctx *w)
{
  eng__sym *s = w->s;
  const eng__sym_env *env = w->env;
  const wl_workload *wl = env->wl;
  eng__map seen;
  eng__map_init(&seen);
  st_arena seen_arena;
  st_arena_init(&seen_arena, 1 << 16);
  coll_sched a, b;
  coll_sched_init(&a);
  coll_sched_init(&b);
  xfer_key *ka = NULL, *kb = NULL;
  size_t kcap = 0, picap = 0;
  int32_t *pi = NULL;
  int rc = ST_OK;
  for (int r = 0; r < wl->num_ranks && w->ok && !rc; r++) {
    if (s->cls[r] != 0)
      continue;
    const wl_program *pg = &wl->programs[wl->rank_program[r]];
    for (size_t i = 0; i < pg->num_ops && w->ok && !rc; i++) {
      const wl_op *o = &pg->ops[i];
      if (o->kind != WL_OP_COLL && o->kind != WL_OP_SEND && o->kind != WL_OP_RECV)
        continue;
      int c = wl_rank_comm(wl, r, o->role);
      if (c < 0)
        continue;
      const wl_comm *cm = &wl->comms[c];
      if (o->kind != WL_OP_COLL) {
        if (s->comm_collapse[c] || s->comm_multi[c]) {
          eng__sym_why(s, "send/recv on communicator '%s', across the '%s' groups' positions",
                       cm->name, wl->roles[s->role]);
          w->ok = 0;
        } else if (o->kind == WL_OP_SEND) {
          quot_flow(w, r, cm->ranks[o->peer]);
        }
        continue;
      }
      if (cm->size < 2)
        continue;
      int splits = o->sub == WL_COLL_ALLTOALL && (o->flags & WL_OPF_SPLITS);
      uint64_t bits;
      memcpy(&bits, &o->bytes, sizeof bits);
      /* a communicator with several class-0 members: each member's rounds */
      uint64_t who = s->comm_multi[c] ? (uint64_t)(uint32_t)r << 32 : 0;
      int root = wl_op_coll_arg(o);
      int first = eng__seen_first(&seen, &seen_arena, (uint64_t)c, o->sub | (splits ? 0x100u : 0),
                                  bits, who | (uint64_t)(uint32_t)root);
      if (first <= 0) {
        rc = first < 0 ? ST_ENOMEM : ST_OK;
        continue;
      }
      if (!s->comm_collapse[c] && !s->comm_multi[c]) { /* inside class 0: every member's flows */
        if (splits) {
          for (int x = 0; x < cm->size && w->ok; x++)
            for (int y = 0; y < cm->size && w->ok; y++)
              quot_flow(w, cm->ranks[x], cm->ranks[y]);
        } else if (env->walk(env->u, c, o->sub, o->bytes, root, quot_flow, w)) {
          rc = ST_ENOMEM;
        }
        continue;
      }
      if (splits) {
        eng__sym_why(s, "an all-to-all-v on communicator '%s', across the '%s' groups' positions",
                     cm->name, wl->roles[s->role]);
        w->ok = 0;
        continue;
      }
      /* a group collective: r's rounds, and under each translation g_m the
       * communicator's image with the member r goes to running r's rounds
       * with the peers moved along */
      int NR = wl->num_roles, i0 = env->member[(size_t)r * NR + o->role];
      if (env->plan(env->u, c, o->sub, o->bytes, root, i0, &a)) {
        rc = ST_ENOMEM;
        continue;
      }
      size_t need = max_round(&a) + 1;
      if (need > kcap) {
        free(ka);
        free(kb);
        kcap = need;
        ka = malloc(kcap * sizeof *ka);
        kb = malloc(kcap * sizeof *kb);
        if (!ka || !kb) {
          rc = ST_ENOMEM;
          continue;
        }
      }
      if ((size_t)cm->size > picap) {
        free(pi);
        picap = (size_t)cm->size;
        if (!(pi = malloc(picap * sizeof *pi))) {
          rc = ST_ENOMEM;
          continue;
        }
      }
      for (size_t rr = 0; rr < a.nrounds && w->ok; rr++)
        for (uint32_t x = 0; x < a.rounds[rr].nsend; x++)
          if (!(a.xfers[a.rounds[rr].send_first + x].bytes > 0)) {
            eng__sym_why(s, "a %s on '%s' moves a zero-byte transfer", wl_coll_name(o->sub),
                         cm->name);
            w->ok = 0;
            break;
          }
      for (int m = 0; m < s->C && w->ok && !rc; m++) {
        int cs = wl_rank_comm(wl, grank(s, env, r, m), o->role);
        const wl_comm *im = cs >= 0 ? &wl->comms[cs] : NULL;
        int ok = im && im->size == cm->size;
        for (int k = 0; ok && k < cm->size; k++) {
          int y = grank(s, env, cm->ranks[k], m);
          ok = wl_rank_comm(wl, y, o->role) == cs;
          pi[k] = env->member[(size_t)y * NR + o->role];
        }
        int32_t *img = &s->comm_img[(size_t)c * s->C + m];
        ok = ok && (*img < 0 || *img == cs) && (o->peer < 0 || pi[root] == root);
        if (ok && m > 0) {
          if (env->plan(env->u, cs, o->sub, o->bytes, root, pi[i0], &b)) {
            rc = ST_ENOMEM;
            break;
          }
          ok = max_round(&b) + 1 <= kcap && translated(&a, &b, pi, ka, kb);
        }
        if (!ok) {
          eng__sym_why(s, "a %s of %.17g bytes on '%s': the group's translation %d does not "
                       "carry it, transfer by transfer, onto its image",
                       wl_coll_name(o->sub), o->bytes, cm->name, m);
          w->ok = 0;
          break;
        }
        *img = cs;
      }
      /* several class-0 members: every member is the image of one of them
       * under a translation that keeps the communicator, so all arrive when
       * the class-0 members do and every transfer one of them receives from
       * another member is the image of a class-0 member's send in the same
       * instance and round (collective.c waits for it) */
      for (int k = 0; s->comm_multi[c] && k < cm->size && w->ok; k++) {
        int y = cm->ranks[k], ry = eng__sym_rep_of(s, y);
        if (wl_rank_comm(wl, ry, o->role) != c ||
            s->comm_img[(size_t)c * s->C + s->cls[y]] != c) {
          eng__sym_why(s, "rank %d of '%s' is no image of one of its class-0 members under a "
                       "translation that keeps it", y, cm->name);
          w->ok = 0;
        }
      }
      for (size_t rr = 0; rr < a.nrounds && w->ok; rr++) {
        const coll_round *rd = &a.rounds[rr];
        for (uint32_t x = 0; x < rd->nsend && w->ok; x++)
          quot_flow(w, r, cm->ranks[a.xfers[rd->send_first + x].peer]);
      }
    }
  }
  if (w->nomem)
    rc = ST_ENOMEM;
  free(ka);
  free(kb);
  free(pi);
  coll_sched_release(&a);
  coll_sched_release(&b);
  eng__map_release(&seen);
  st_arena_release(&seen_arena);
  return rc;
}

/* Each communicator's distinct images under the translations, the first
 * translation giving each (for copying records), and their count. */
static int image_counts(eng__sym *s, const eng__sym_env *env)
{
  int C = s->C, NC = env->wl->num_comms;
  s->img_first = calloc((size_t)NC * C + 1, 1);
  s->img_count = calloc((size_t)NC + 1, sizeof *s->img_count);
  if (!s->img_first || !s->img_count)
    return ST_ENOMEM;
  for (int c = 0; c < NC; c++) {
    int32_t *img = &s->comm_img[(size_t)c * C];
    int any = 0;
    for (int k = 1; k < C && !any; k++)
      any = img[k] >= 0;
    if (!any)
      continue;
    if (img[0] < 0) /* a class-0 communicator (sym.c filled k >= 1) */
      img[0] = c;
    for (int k = 0; k < C; k++) {
      int first = img[k] >= 0;
      for (int j = 0; j < k && first; j++)
        first = img[j] != img[k];
      s->img_first[(size_t)c * C + k] = (uint8_t)first;
      s->img_count[c] += first;
    }
  }
  return ST_OK;
}

static uint32_t uf_find(uint32_t *p, uint32_t x)
{
  while (p[x] != x) {
    p[x] = p[p[x]];
    x = p[x];
  }
  return x;
}

/* The orbits of the used links under the generators' maps: canonical link
 * (the smallest index), size, and a cycle through each orbit. */
static int quot_orbits(quot_ctx *w)
{
  eng__sym *s = w->s;
  const eng__sym_env *env = w->env;
  size_t L = env->num_links;
  uint32_t *p = malloc((L + 1) * sizeof *p);
  s->canon = malloc((L + 1) * sizeof *s->canon);
  s->orb_size = calloc(L + 1, sizeof *s->orb_size);
  s->orb_next = malloc((L + 1) * sizeof *s->orb_next);
  uint32_t *last = malloc((L + 1) * sizeof *last);
  if (!p || !s->canon || !s->orb_size || !s->orb_next || !last) {
    free(p);
    free(last);
    return ST_ENOMEM;
  }
  for (size_t l = 0; l < L; l++) {
    p[l] = (uint32_t)l;
    s->canon[l] = UINT32_MAX;
    s->orb_next[l] = UINT32_MAX;
  }
  uint8_t *used = calloc(L + 1, 1);
  if (!used) {
    free(p);
    free(last);
    return ST_ENOMEM;
  }
  for (int g = 0; g < NGEN; g++)
    for (size_t l = 0; w->gen_m[g] >= 0 && l < L; l++)
      if (w->phi[g][l] != UINT32_MAX) {
        used[l] = used[w->phi[g][l]] = 1;
        uint32_t a = uf_find(p, (uint32_t)l), b = uf_find(p, w->phi[g][l]);
        if (a != b)
          p[a > b ? a : b] = a < b ? a : b; /* the smaller index is the root */
      }
  /* with no generator (C = 1 cannot happen) every used link is its own orbit */
  for (size_t l = 0; l < L; l++)
    for (int k = 0; k < s->C && !used[l]; k++)
      if (s->link_img[l * s->C + k] != UINT32_MAX)
        used[l] = 1;
  for (size_t l = 0; l < L; l++) {
    if (!used[l])
      continue;
    uint32_t root = uf_find(p, (uint32_t)l);
    s->canon[l] = root;
    if (s->orb_size[root]++ == 0) {
      s->orbits++;
      last[root] = root;
      s->orb_next[root] = root;
    }
    if (l != root) { /* append l to root's cycle */
      s->orb_next[l] = s->orb_next[last[root]];
      s->orb_next[last[root]] = (uint32_t)l;
      last[root] = (uint32_t)l;
    }
  }
  for (size_t l = 0; l < L; l++)
    if (used[l])
      s->orb_size[l] = s->orb_size[s->canon[l]];
  free(used);
  free(p);
  free(last);
  return ST_OK;
}

/* No class-0 route crosses an orbit twice. */
static void quot_no_twice(quot_ctx *w)
{
  eng__sym *s = w->s;
  const eng__sym_env *env = w->env;
  for (size_t i = 0; i < w->seen.cap && w->ok; i++) {
    if (!w->seen.keys[i])
      continue;
    const uint64_t *e = w->seen.vals[i]; /* the flow (a, b, ...) seen_first keeps */
    uint32_t n;
    double lat;
    const uint32_t *l = env->route(env->u, (int)e[0], (int)e[1], &n, &lat);
    if (!l) {
      w->ok = 0;
      w->nomem = 1;
      return;
    }
    for (uint32_t a = 0; a < n && w->ok; a++)
      for (uint32_t b = a + 1; b < n; b++)
        if (s->canon[l[a]] == s->canon[l[b]]) {
          eng__sym_why(s, "the route %d->%d crosses two links of one orbit", (int)e[0],
                       (int)e[1]);
          w->ok = 0;
          break;
        }
  }
}

/* One attempt with the translations (twist 0) or the twisted group. */
static int attempt(eng__sym *s, const eng__sym_env *env)
{
  size_t L = env->num_links;
  quot_ctx w = {.s = s, .env = env, .ok = 1};
  w.gen_m[0] = s->q > 1 ? 1 : -1;      /* one place along inside each node */
  w.gen_m[1] = s->nb > 1 ? s->q : -1;  /* one node along (reflected, with the twist) */
  w.gen_m[2] = s->rad ? s->rad : -1;   /* the places' second digit one along */
  eng__map_init(&w.seen);
  st_arena_init(&w.arena, 1 << 16);
  int rc = ST_OK;
  w.routes = malloc((size_t)s->C * PLAT_ROUTE_MAX * sizeof *w.routes);
  w.lens = malloc((size_t)s->C * sizeof *w.lens);
  int nomem = !w.routes || !w.lens;
  for (int g = 0; g < NGEN; g++) {
    w.phi[g] = malloc((L + 1) * sizeof *w.phi[g]);
    w.inv[g] = malloc((L + 1) * sizeof *w.inv[g]);
    nomem |= !w.phi[g] || !w.inv[g];
  }
  if (nomem) {
    rc = ST_ENOMEM;
    goto out;
  }
  for (int g = 0; g < NGEN; g++)
    for (size_t l = 0; l <= L; l++)
      w.phi[g][l] = w.inv[g][l] = UINT32_MAX;
  if ((rc = quot_instances(&w)) || !w.ok)
    goto out;
  if ((rc = image_counts(s, env)))
    goto out;
  if ((rc = quot_orbits(&w)))
    goto out;
  quot_no_twice(&w);
  if (w.nomem)
    rc = ST_ENOMEM;
  if (rc || !w.ok)
    goto out;
  /* canonical shared links of orbits smaller than C carry C/|O| copies */
  s->bw_scale = malloc((L + 1) * sizeof *s->bw_scale);
  if (!s->bw_scale) {
    rc = ST_ENOMEM;
    goto out;
  }
  for (size_t l = 0; l < L; l++) {
    s->bw_scale[l] = 1;
    if (s->canon[l] == l && env->link_shared[l] && s->orb_size[l] < (uint32_t)s->C) {
      s->bw_scale[l] = (double)s->C / s->orb_size[l];
      s->scaled++;
    }
    s->link_src[l] = s->canon[l];
  }
  s->quotient = 1;
out:
  free(w.routes);
  free(w.lens);
  for (int g = 0; g < NGEN; g++) {
    free(w.phi[g]);
    free(w.inv[g]);
  }
  eng__map_release(&w.seen);
  st_arena_release(&w.arena);
  return rc ? rc : w.ok;
}

/* What an attempt filled, undone before the next. */
static void attempt_undo(eng__sym *s, const eng__sym_env *env)
{
  const wl_workload *wl = env->wl;
  for (size_t i = 0; i < env->num_links * (size_t)s->C; i++)
    s->link_img[i] = UINT32_MAX;
  for (int c = 0; c < wl->num_comms; c++)
    if (s->comm_collapse[c] || s->comm_multi[c])
      for (int k = 0; k < s->C; k++)
        s->comm_img[(size_t)c * s->C + k] = -1;
  free(s->img_first);
  free(s->img_count);
  free(s->canon);
  free(s->orb_size);
  free(s->orb_next);
  s->img_first = NULL;
  s->img_count = NULL;
  s->canon = s->orb_size = s->orb_next = NULL;
  s->orbits = 0;
}

/* The translations first; then, where the group spans an even number of
 * nodes, the twisted group, whose node shift also reflects the places
 * inside a node: a ring across nodes runs down the places of even nodes and
 * up those of odd ones (NCCL's rings join one rail between nodes), and that
 * flow set is invariant under a node shift only with the reflection; then the places as two digits, each
 * shifted on its own, for every divisor rad of the places per node: with
 * tensor parallelism of 2 or 4 on 8-GPU nodes the places' one cycle moves
 * a TP group onto GPUs of two, while shifting the place inside the TP group
 * and the TP group inside the node keeps them (and the context- or
 * data-parallel groups across them).  The reason given is the plain
 * translations'. */
static int attempts(eng__sym *s, const eng__sym_env *env)
{
  s->twist = 0;
  s->rad = 0;
  int ok = attempt(s, env);
  if (ok != 0)
    return ok;
  char why0[sizeof s->desc];
  snprintf(why0, sizeof why0, "%s", s->desc);
  if (s->nb >= 2 && s->nb % 2 == 0 && s->q >= 3) {
    attempt_undo(s, env);
    s->twist = 1;
    if ((ok = attempt(s, env)) != 0)
      return ok;
    s->twist = 0;
  }
  for (int r = 2; r < s->q && ok == 0; r++) {
    if (s->q % r)
      continue;
    attempt_undo(s, env);
    s->rad = r;
    ok = attempt(s, env);
  }
  if (ok == 0) {
    s->rad = 0;
    snprintf(s->desc, sizeof s->desc, "%s", why0);
  }
  return ok;
}

/* Each translation's inverse (a member of a communicator with several
 * class-0 members receives from the image of a class-0 member's send to
 * the member's image under the inverse: collective.c), checked to be one:
 * 1, 0 (and why) or ST_ENOMEM (negative). */
static int inverses(eng__sym *s)
{
  int C = s->C;
  s->ginv = malloc(((size_t)C + 1) * sizeof *s->ginv);
  if (!s->ginv)
    return ST_ENOMEM;
  for (int k = 0; k < C; k++) {
    s->ginv[k] = -1;
    for (int i = 0; i < C && s->ginv[k] < 0; i++)
      if (gmul(s, i, k) == 0)
        s->ginv[k] = i;
    for (int i = 0; i < C && s->ginv[k] >= 0; i++)
      if (gmul(s, gmul(s, i, k), s->ginv[k]) != i)
        s->ginv[k] = -1;
    if (s->ginv[k] < 0) {
      eng__sym_why(s, "translation %d has no inverse among the translations", k);
      return 0;
    }
  }
  return 1;
}

int eng__sym_quotient(eng__sym *s, const eng__sym_env *env)
{
  if (!node_structure(s, env))
    return 0;
  int ok = attempts(s, env);
  return ok == 1 ? inverses(s) : ok;
}
