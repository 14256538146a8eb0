/* edges.c — each collective algorithm as per-member flows, and the flows as
 * rounds of a schedule.
 *
 * docs/collectives.md is the long form of these notes (derivations, sources).
 *
 *  2. Edges.  An algorithm lists, for member m, the flows it sends and
 *     receives (peer, payload bytes, link kind).  All of them run at once
 *     (NCCL pipelines chunks through every stage), so the time is set by the
 *     most loaded link.  The payload is divided by the protocol's efficiency
 *     on that link kind: what the link carries is the wire traffic.
 *  3. Fidelity.  Flow fidelity: one round with every edge as one flow, after
 *     a wait for the algorithm's latency terms (minus the route latency the
 *     flow pays itself).  Step fidelity: the same edges cut into K rounds
 *     (ring: its 2(n-1) or n-1 steps; others: chunks of >= 16 MiB, at most
 *     64), each after 1/K of the latency terms.  Each round ends when all of
 *     a member's flows end; each round pays the route latency of the link
 *     kind that ends it (NVLink 1 us, NIC 2 us), so the two agree unless
 *     that kind differs from the one that ends the whole transfer (then step
 *     is up to K x the latency difference slower).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll_int.h"

/* ---- schedules ------------------------------------------------------------ */

void coll_sched_init(coll_sched *s) { memset(s, 0, sizeof *s); }

void coll_sched_release(coll_sched *s)
{
  free(s->rounds);
  free(s->xfers);
  coll_sched_init(s);
}

void coll_sched_clear(coll_sched *s)
{
  s->nrounds = 0;
  s->nxfers = 0;
}

/* The array v of n elements of elem bytes with room for one more: v, or v
 * moved (*cap grown) when it was full; NULL when out of memory (v is left
 * as it was). */
static void *room(void *v, size_t n, size_t *cap, size_t elem, size_t first)
{
  if (n < *cap)
    return v;
  size_t nc = *cap ? *cap * 2 : first;
  void *x = realloc(v, nc * elem);
  if (x)
    *cap = nc;
  return x;
}

static coll_round *round_new(coll_sched *s, double pre_s)
{
  coll_round *rs = room(s->rounds, s->nrounds, &s->cap_rounds, sizeof *rs, 8);
  if (!rs)
    return NULL;
  s->rounds = rs;
  coll_round *r = &rs[s->nrounds++];
  memset(r, 0, sizeof *r);
  r->pre_s = pre_s;
  r->send_first = r->recv_first = (uint32_t)s->nxfers;
  return r;
}

/* Add a transfer to the last round; sends must all come before receives. */
static int xfer_add(coll_sched *s, int is_send, int peer, double bytes)
{
  coll_xfer *x = room(s->xfers, s->nxfers, &s->cap_xfers, sizeof *x, 16);
  if (!x)
    return ST_ENOMEM;
  s->xfers = x;
  coll_round *r = &s->rounds[s->nrounds - 1];
  s->xfers[s->nxfers].peer = peer;
  s->xfers[s->nxfers].bytes = bytes;
  s->nxfers++;
  if (is_send) {
    r->nsend++;
    r->recv_first = r->send_first + r->nsend;
  } else {
    r->nrecv++;
  }
  return ST_OK;
}

/* ---- edges ----------------------------------------------------------------- */

typedef struct edge_list {
  coll_xfer *send, *recv;
  size_t ns, nr, cap_s, cap_r;
  int fail;
} edge_list;

static void edge_push(edge_list *e, int is_send, int peer, double bytes)
{
  coll_xfer **v = is_send ? &e->send : &e->recv;
  size_t *n = is_send ? &e->ns : &e->nr, *cap = is_send ? &e->cap_s : &e->cap_r;
  coll_xfer *x = room(*v, *n, cap, sizeof *x, 16);
  if (!x) {
    e->fail = 1;
    return;
  }
  *v = x;
  (*v)[*n].peer = peer;
  (*v)[(*n)++].bytes = bytes;
}

/* Send payload to peer over a link of efficiency eff. */
static void snd(edge_list *e, int peer, double payload, double eff)
{
  edge_push(e, 1, peer, payload / eff);
}
static void rcv(edge_list *e, int peer) { edge_push(e, 0, peer, 0); }

static double eff_between(const coll_ctx *c, const coll__model *md, int a, int b)
{
  if (c->cl->fabric_kind == PLAT_FABRIC_TORUS) /* every chip-to-chip link is ICI */
    return md->e_nic;
  return c->lay->node_of[a] == c->lay->node_of[b] ? md->e_intra : md->e_nic;
}

/* Ring channel ch: member m's next and previous.  Inside a node the chain
 * runs down from position ch on even node positions and up from ch+1 on odd
 * ones, so that every inter-node edge joins the same local index (one rail)
 * and channel ch leaves even nodes by the NIC of position ch+1 and odd ones
 * by that of position ch: every NIC carries one channel each way. */
static void ring_neighbours_in(const coll_layout *l, int k0, int N, int ch, int m, int *next,
                               int *prev)
{
  int k = l->node_of[m] - k0, p = l->pos[m], mk = l->node_cnt[k0 + k];
  int even = (k % 2 == 0);
  int i = even ? (((ch - p) % mk) + mk) % mk : (((p - ch - 1) % mk) + mk) % mk;
  int kn = (k + 1) % N, kp = (k - 1 + N) % N;
  /* first member of node kn / last of node kp on this channel */
  int first_n = coll__lay_member(l, k0 + kn, kn % 2 == 0 ? ch : ch + 1);
  int last_p = coll__lay_member(l, k0 + kp, kp % 2 == 0 ? ch + 1 : ch);
  if (N == 1) {
    *next = coll__lay_member(l, k0 + k, p - 1);
    *prev = coll__lay_member(l, k0 + k, p + 1);
    return;
  }
  *next = i < mk - 1 ? coll__lay_member(l, k0 + k, even ? p - 1 : p + 1) : first_n;
  *prev = i > 0 ? coll__lay_member(l, k0 + k, even ? p + 1 : p - 1) : last_p;
}

/* The ring over all the members' nodes. */
static void ring_neighbours(const coll_layout *l, int ch, int m, int *next, int *prev)
{
  ring_neighbours_in(l, 0, l->nnodes, ch, m, next, prev);
}

static void edges_ring(const coll_ctx *c, const coll__model *md, int nch, int m, edge_list *e)
{
  int n = c->n;
  double f = c->op == WL_COLL_ALLREDUCE ? 2.0 * (n - 1) / n
             : c->op == WL_COLL_BARRIER ? 0
                                        : (double)(n - 1) / n;
  int mesh = coll__ring_mesh(c);
  /* rings over every lane: f S x lanes / W to each linked member */
  if (mesh == COLL__MESH_ONE_NODE) {
    double w = coll__lanes_out(c, m);
    for (int j = 0; j < n; j++)
      if (coll__member_lanes(c, m, j) > 0)
        snd(e, j, f * c->bytes * coll__member_lanes(c, m, j) / w, md->e_intra);
    for (int j = 0; j < n; j++)
      if (coll__member_lanes(c, j, m) > 0)
        rcv(e, j);
    return;
  }
  double per = f * c->bytes / nch;
  for (int pass = 0; pass < 2; pass++) /* every channel's send, then every receive */
    for (int ch = 0; ch < nch; ch++) {
      int next, prev;
      if (mesh == COLL__MESH_ACROSS)
        coll__mesh_neighbours(c->lay, ch, m, &next, &prev);
      else
        ring_neighbours(c->lay, ch, m, &next, &prev);
      if (pass == 0)
        snd(e, next, per, eff_between(c, md, m, next));
      else
        rcv(e, prev);
    }
}

/* All-pairs reduce-scatter and/or all-gather on one node (RCCL's MSCCL
 * all-pairs, HCCL's mesh): S/n to every peer per phase, 2 S/n for all-reduce. */
static void edges_direct_reduce(const coll_ctx *c, const coll__model *md, int m, edge_list *e)
{
  int n = c->n;
  double D = (c->op == WL_COLL_ALLREDUCE ? 2.0 : 1.0) * c->bytes / n;
  for (int s = 1; s < n; s++)
    snd(e, (m + s) % n, D, eff_between(c, md, m, (m + s) % n));
  for (int s = 1; s < n; s++)
    rcv(e, (m - s + n) % n);
}

/* NCCL's binary tree (src/graph/trees.cc ncclGetBtree): rank r's parent and
 * children among nranks; -1 when none. */
static void btree(int nranks, int r, int *up, int *d0, int *d1)
{
  int bit;
  for (bit = 1; bit < nranks; bit <<= 1)
    if (bit & r)
      break;
  if (r == 0) {
    *up = -1;
    *d0 = -1;
    *d1 = nranks > 1 ? bit >> 1 : -1;
    return;
  }
  int u = (r ^ bit) | (bit << 1);
  if (u >= nranks)
    u = r ^ bit;
  *up = u;
  int low = bit >> 1;
  *d0 = low == 0 ? -1 : r - low;
  int dd = low == 0 ? -1 : r + low;
  while (dd >= nranks) {
    low >>= 1;
    dd = low == 0 ? -1 : r + low;
  }
  *d1 = dd;
}

/* Tree t (0 or 1) of NCCL's double binary tree: the second is the first
 * mirrored (even node counts) or shifted by one (odd). */
static void dtree(int nranks, int t, int r, int *up, int *d0, int *d1)
{
  if (t == 0) {
    btree(nranks, r, up, d0, d1);
    return;
  }
  int odd = nranks % 2;
  int rr = odd ? (r - 1 + nranks) % nranks : nranks - 1 - r;
  int u, a, b;
  btree(nranks, rr, &u, &a, &b);
#define BACK(x) ((x) < 0 ? -1 : odd ? ((x) + 1) % nranks : nranks - 1 - (x))
  *up = BACK(u);
  *d0 = BACK(a);
  *d1 = BACK(b);
#undef BACK
}

/* Member m as head (position pos) of a tree across nodes carrying D over
 * both trees (D/2 each): reduce up, broadcast down. */
static void tree_across(const coll_ctx *c, double eff, int pos, int m, double D, edge_list *e)
{
  const coll_layout *l = c->lay;
  int N = l->nnodes, k = l->node_of[m];
  for (int pass = 0; pass < 2; pass++) /* sends on both trees, then receives */
    for (int t = 0; t < 2; t++) {
      int up, d0, d1;
      dtree(N, t, k, &up, &d0, &d1);
      int nb[3] = {up, d0, d1};
      for (int i = 0; i < 3; i++) {
        if (nb[i] < 0)
          continue;
        int peer = coll__lay_member(l, nb[i], pos);
        if (pass == 0)
          snd(e, peer, D / 2, eff);
        else
          rcv(e, peer);
      }
    }
}

/* Chain inside m's node starting at position `head`: reduce towards the
 * head and broadcast away from it, D each way on each chain edge. */
static void chain_inside(const coll_ctx *c, double eff, int head, int m, double D, edge_list *e)
{
  const coll_layout *l = c->lay;
  int k = l->node_of[m], mk = l->node_cnt[k], p = l->pos[m];
  int i = (((p - head) % mk) + mk) % mk;
  if (i > 0)
    snd(e, coll__lay_member(l, k, p - 1), D, eff);
  if (i < mk - 1)
    snd(e, coll__lay_member(l, k, p + 1), D, eff);
  if (i > 0)
    rcv(e, coll__lay_member(l, k, p - 1));
  if (i < mk - 1)
    rcv(e, coll__lay_member(l, k, p + 1));
}

static void edges_tree(const coll_ctx *c, const coll__model *md, int nch, int m, edge_list *e)
{
  const coll_layout *l = c->lay;
  double D = c->bytes / nch;
  int mk = l->node_cnt[l->node_of[m]];
  for (int ch = 0; ch < nch; ch++) {
    chain_inside(c, md->e_intra, ch, m, D, e);
    if (l->pos[m] == ch % mk)
      tree_across(c, md->e_nic, l->pos[m], m, D, e);
  }
}

/* NVLS inside m's node: every GPU reads all its data into the switch's
 * reduction and receives its reduced shard (S out, S/k in), then multicasts
 * its shard and receives all shards (S/k out, S in).  Pairwise flows of
 * (k+1) S / (k (k-1)) give each GPU's NVLink exactly (k+1)/k S each way. */
static void nvls_inside(const coll_ctx *c, double eff, int m, edge_list *e)
{
  const coll_layout *l = c->lay;
  int k = l->node_of[m], mk = l->node_cnt[k];
  if (mk < 2)
    return;
  double X = (mk + 1.0) * c->bytes / (mk * (mk - 1.0));
  for (int j = 1; j < mk; j++)
    snd(e, coll__lay_member(l, k, l->pos[m] + j), X, eff);
  for (int j = 1; j < mk; j++)
    rcv(e, coll__lay_member(l, k, l->pos[m] - j));
}

/* In-network reduction across nodes for m's shard D: up to the switch and
 * the reduced result back, D each way on m's NIC, written as a flow to the
 * same position on the next node (no switch host: the NIC links carry what
 * they carry with SHARP). */
static void sharp_across(const coll_ctx *c, const coll__model *md, int m, double D, edge_list *e)
{
  const coll_layout *l = c->lay;
  int N = l->nnodes, k = l->node_of[m], p = l->pos[m];
  if (N < 2)
    return;
  snd(e, coll__lay_member(l, (k + 1) % N, p), D, md->e_sharp);
  rcv(e, coll__lay_member(l, (k - 1 + N) % N, p));
}

/* Ring inside m's node (reduce-scatter + all-gather): 2(k-1)/k S per edge. */
static void ring_inside(const coll_ctx *c, const coll__model *md, int m, edge_list *e)
{
  const coll_layout *l = c->lay;
  int k = l->node_of[m], mk = l->node_cnt[k];
  if (mk < 2)
    return;
  snd(e, coll__lay_member(l, k, l->pos[m] + 1), 2.0 * (mk - 1) / mk * c->bytes, md->e_intra);
  rcv(e, coll__lay_member(l, k, l->pos[m] - 1));
}

static void edges_direct(const coll_ctx *c, const coll__model *md, int m, edge_list *e)
{
  const coll_layout *l = c->lay;
  const plat_cluster *cl = c->cl;
  int n = c->n;
  int nics = cl->nics_per_node > 0 ? cl->nics_per_node : 1;
  /* PXN: NCCL sends to a GPU on another rail through the local NVLink peer
   * on the destination's rail; only for uniform all-to-all (the relay must
   * know the bytes) and when the peer is a member. */
  int pxn = !c->splits && l->nnodes > 1 && nics > 1 && c->model != SIM_COLL_IDEAL;
#define RAIL(mm) (l->rail_of[mm])
  double blk = c->bytes / n;
  int km = l->node_of[m];
  /* relay member on m's node for rail r, or -1 */
  for (int pass = 0; pass < 2; pass++) { /* 0: sends, 1: receives */
    for (int s = 1; s < n; s++) {
      int j = pass == 0 ? (m + s) % n : (m - s + n) % n; /* peer */
      int src = pass == 0 ? m : j, dst = pass == 0 ? j : m;
      double b = pass == 0 && c->splits ? c->splits[j] : blk;
      int ks = l->node_of[src], kd = l->node_of[dst];
      int relay = -1;
      if (pxn && ks != kd && RAIL(src) != RAIL(dst)) {
        int cnt = l->node_cnt[ks];
        for (int q = 0; q < cnt; q++) {
          int cand = coll__lay_member(l, ks, q);
          if (RAIL(cand) == RAIL(dst)) {
            relay = cand;
            break;
          }
        }
      }
      if (relay < 0) {
        if (pass == 0)
          snd(e, j, b, eff_between(c, md, m, j));
        else
          rcv(e, j);
      } else if (pass == 0) {
        snd(e, relay, b, md->e_intra); /* first hop, NVLink */
      } else {
        rcv(e, relay); /* second hop arrives from the relay */
      }
    }
    /* m as a relay: for every local member s with another rail and every
     * destination j on m's rail on another node, forward s -> j. */
    if (pxn) {
      int cnt = l->node_cnt[km];
      for (int q = 0; q < cnt; q++) {
        int s2 = coll__lay_member(l, km, q);
        if (s2 == m || RAIL(s2) == RAIL(m))
          continue;
        /* is m the first member of its node on its rail? (the relay chosen above) */
        int first = -1;
        for (int r2 = 0; r2 < cnt; r2++) {
          int cand = coll__lay_member(l, km, r2);
          if (RAIL(cand) == RAIL(m)) {
            first = cand;
            break;
          }
        }
        if (first != m)
          break;
        for (int j = 0; j < n; j++) {
          if (l->node_of[j] == km || RAIL(j) != RAIL(m))
            continue;
          if (pass == 0)
            snd(e, j, blk, md->e_nic);
          else
            rcv(e, s2);
        }
      }
    }
  }
#undef RAIL
}

/* One ring step: S to the next member, from the previous one, at the link's
 * rate (the copies of a ring exchange are not NCCL kernels). */
static void edges_shift(const coll_ctx *c, int m, edge_list *e)
{
  int n = c->n;
  snd(e, (m + 1) % n, c->bytes, 1.0);
  rcv(e, (m - 1 + n) % n);
}

static void edges_chain(const coll_ctx *c, const coll__model *md, int m, edge_list *e)
{
  int n = c->n, root = c->root;
  int pos = (m - root + n) % n;
  int bcast = c->op == WL_COLL_BROADCAST;
  int sends = bcast ? pos != n - 1 : pos != 0;
  int recvs = bcast ? pos != 0 : pos != n - 1;
  int to = bcast ? (m + 1) % n : (m - 1 + n) % n;
  int from = bcast ? (m - 1 + n) % n : (m + 1) % n;
  if (sends)
    snd(e, to, c->bytes, eff_between(c, md, m, to));
  if (recvs)
    rcv(e, from);
}

static void edges_torus(const coll_ctx *c, const coll__model *md, int m, edge_list *e)
{
  int dims[3];
  coll__torus_dims(c, dims);
  int coord[3] = {m % dims[0], (m / dims[0]) % dims[1], m / (dims[0] * dims[1])};
  int stride[3] = {1, dims[0], dims[0] * dims[1]};
  double load[3];
  coll__torus_loads(c, dims, load);
  for (int pass = 0; pass < 2; pass++) {
    for (int d = 0; d < 3; d++) {
      int k = dims[d];
      if (k > 1) {
        int up = m + (((coord[d] + 1) % k) - coord[d]) * stride[d];
        int dn = m + (((coord[d] - 1 + k) % k) - coord[d]) * stride[d];
        if (pass == 0) {
          snd(e, up, load[d], eff_between(c, md, m, up));
          snd(e, dn, load[d], eff_between(c, md, m, dn));
        } else {
          rcv(e, dn);
          rcv(e, up);
        }
      }
    }
  }
}

/* ---- the deduplicating all-to-all ------------------------------------------
 * Megatron-core's flex dispatcher over DeepEP or HybridEP (WL_OPF_DEDUP).  A
 * member holds T tokens (c->bytes counts k copies of each, as the plain
 * all-to-all sends them), each routed to k of the E = n e experts (e on
 * every member), uniformly and without replacement (balanced routing).  A
 * token goes once to every other node holding any of its experts, over RDMA
 * to the member at the sender's position on that node (the rail-aligned
 * path of both libraries' inter-node kernels), and that member forwards it
 * over NVLink to each member of its node holding any of its experts; a
 * token for the sender's own node goes straight to those members.  The
 * combine runs the same paths back.  One round: the libraries pipeline the
 * forwarding with the RDMA transfers in chunks, so the slower of the two
 * paths sets the time. */
double coll__dedup_share(const coll_ctx *c, int s)
{
  int k = coll__dedup_topk(c), e = coll__dedup_experts(c);
  double E = (double)c->n * e, miss = 1; /* C(E - s e, k) / C(E, k) */
  for (int i = 0; i < k; i++) {
    double left = E - (double)s * e - i;
    if (left <= 0)
      return 1;
    miss *= left / (E - i);
  }
  return 1 - miss;
}

/* Does member q (on another node) send its RDMA share for m's node to m? */
static int dedup_via(const coll_layout *l, int q, int m)
{
  return l->node_of[q] != l->node_of[m] && l->pos[q] % l->node_cnt[l->node_of[m]] == l->pos[m];
}

/* Tokens (in units of a member's T) that member m hands to each member of
 * its node: its own and those the members of other nodes send through it. */
static int dedup_relayed(const coll_layout *l, int m)
{
  int r = 1;
  for (int q = 0; q < l->n; q++)
    r += dedup_via(l, q, m);
  return r;
}

void coll__dedup_loads(const coll_ctx *c, int m, double *net, double *intra)
{
  const coll_layout *l = c->lay;
  double tok = c->bytes / coll__dedup_topk(c);
  int km = l->node_of[m];
  *net = 0;
  for (int v = 0; v < l->nnodes; v++)
    if (v != km)
      *net += tok * coll__dedup_share(c, l->node_cnt[v]);
  *intra = (l->node_cnt[km] - 1) * tok * coll__dedup_share(c, 1) * dedup_relayed(l, m);
}

static void edges_dedup(const coll_ctx *c, const coll__model *md, int m, edge_list *e)
{
  const coll_layout *l = c->lay;
  double tok = c->bytes / coll__dedup_topk(c);
  int km = l->node_of[m], g = l->node_cnt[km];
  double local = tok * coll__dedup_share(c, 1) * dedup_relayed(l, m);
  for (int v = 0; v < l->nnodes; v++)
    if (v != km) {
      int t = coll__lay_member(l, v, l->pos[m]);
      snd(e, t, tok * coll__dedup_share(c, l->node_cnt[v]), eff_between(c, md, m, t));
    }
  for (int i = 0; i < g; i++) {
    int q = coll__lay_member(l, km, i);
    if (q != m)
      snd(e, q, local, md->e_intra);
  }
  for (int q = 0; q < l->n; q++)
    if (dedup_via(l, q, m) || (q != m && l->node_of[q] == km))
      rcv(e, q);
}

static void edges_for(const coll_ctx *c, const coll__model *md, int m, edge_list *e)
{
  const coll_layout *l = c->lay;
  int mk = l->node_cnt[l->node_of[m]];
  switch (c->ch.algo) {
  case SIM_ALGO_RING: edges_ring(c, md, c->ch.nch, m, e); break;
  case SIM_ALGO_DIRECT:
    if (c->op == WL_COLL_SHIFT)
      edges_shift(c, m, e);
    else if (coll__dedup(c))
      edges_dedup(c, md, m, e);
    else if (c->op == WL_COLL_ALLTOALL)
      edges_direct(c, md, m, e);
    else
      edges_direct_reduce(c, md, m, e);
    break;
  case SIM_ALGO_CHAIN: edges_chain(c, md, m, e); break;
  case SIM_ALGO_TREE: edges_tree(c, md, c->ch.nch, m, e); break;
  case SIM_ALGO_NVLS:
    nvls_inside(c, md->e_nvls, m, e);
    sharp_across(c, md, m, c->bytes / mk, e);
    break;
  case SIM_ALGO_NVLS_TREE:
    nvls_inside(c, md->e_nvls_tree, m, e);
    tree_across(c, md->e_nic, l->pos[m], m, c->bytes / mk, e);
    break;
  case SIM_ALGO_COLLNET:
    ring_inside(c, md, m, e);
    sharp_across(c, md, m, c->bytes / mk, e);
    break;
  case SIM_ALGO_HIER: {
    ring_inside(c, md, m, e);
    int N = l->nnodes, k = l->node_of[m];
    double D = 2.0 * (N - 1) / N * c->bytes / mk;
    snd(e, coll__lay_member(l, (k + 1) % N, l->pos[m]), D, md->e_nic);
    rcv(e, coll__lay_member(l, (k - 1 + N) % N, l->pos[m]));
    break;
  }
  case SIM_ALGO_TORUS: edges_torus(c, md, m, e); break;
  }
}

/* Sends then receives of one round, bytes scaled by 1/k. */
static int round_emit(coll_sched *s, const edge_list *e, double pre, double k)
{
  if (!round_new(s, pre))
    return ST_ENOMEM;
  for (size_t i = 0; i < e->ns; i++)
    if (xfer_add(s, 1, e->send[i].peer, e->send[i].bytes / k))
      return ST_ENOMEM;
  for (size_t i = 0; i < e->nr; i++)
    if (xfer_add(s, 0, e->recv[i].peer, 0))
      return ST_ENOMEM;
  return ST_OK;
}

/* Member m's rounds for the edges e of one phase (or the whole) of latency
 * terms L, cut into `rounds` rounds in step fidelity, appended to out. */
static int emit_phase(const coll_ctx *c, int m, const edge_list *e, double L, int rounds,
                      coll_sched *out)
{
  /* own: the largest route latency among m's sends (what its flows pay
   * themselves); lb: the route latency of its likely bottleneck flow (the
   * link kind with the most bytes per unit of bandwidth), which step
   * fidelity pays once per round */
  double own = 0, lb = 0, t_in = 0, t_out = 0, l_in = 0, l_out = 0;
  double bi = c->cl->intra_Bps > 0 ? c->cl->intra_Bps : 1;
  double bn = c->cl->nic_Bps > 0 ? c->cl->nic_Bps : 1;
  for (size_t i = 0; i < e->ns; i++) {
    double l = c->route_lat ? c->route_lat(c->route_u, m, e->send[i].peer) : 0;
    if (l > own)
      own = l;
    if (c->lay->node_of[e->send[i].peer] == c->lay->node_of[m]) {
      t_in += e->send[i].bytes / bi;
      l_in = fmax(l_in, l);
    } else {
      t_out += e->send[i].bytes / bn;
      l_out = fmax(l_out, l);
    }
  }
  /* the link kind that ends a round: its latency plus its share of the
   * round's transfer (with about equal loads, the one with more latency) */
  lb = l_out + t_out / rounds >= l_in + t_in / rounds ? l_out : l_in;
  /* flow: L - own + (bottleneck's own latency); step: the same total when
   * each round pays lb */
  double pre = rounds == 1 ? L - own : (L - own - (rounds - 1) * lb) / rounds;
  if (e->ns == 0)
    pre = 0;
  int rc = ST_OK;
  for (int r = 0; r < rounds && !rc; r++)
    rc = round_emit(out, e, pre > 0 ? pre : 0, rounds);
  return rc;
}

/* SIM_ALGO_HIER_PODS: member m's phases (layout.c coll__pod_phases), one
 * after the other, each the flows of its ring: inside m's pod down its
 * nodes as the ring across nodes runs, or to the member of the same index
 * in the next pod.  Each phase runs on its own protocol and pays its own
 * latency terms (tuner.c). */
static int plan_pods(const coll_ctx *c, int m, coll_sched *out)
{
  const coll_layout *l = c->lay;
  int ops[COLL_PHASES], in_pod[COLL_PHASES];
  double bytes[COLL_PHASES];
  int np = coll__pod_phases(c, ops, bytes, in_pod);
  int pp = l->pod_of[m], P = l->npods, rc = ST_OK;
  for (int k = 0; k < np && !rc; k++) {
    coll__sub s;
    coll__phase_ctx(c, in_pod[k] ? pp : -1, ops[k], bytes[k], &s);
    coll__model md;
    coll__model_init(&s.c, c->ch.phase_proto[k], &md);
    edge_list e;
    memset(&e, 0, sizeof e);
    int n = s.c.n, rounds = 1;
    double f = ops[k] == WL_COLL_ALLREDUCE ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
    if (in_pod[k] && n > 1 && s.c.cl->fabric_kind == PLAT_FABRIC_TORUS) {
      /* a torus pod runs its part as XLA runs it on the torus (the torus
       * algorithm on the pod's members, in their chip order), its peers
       * mapped back to the communicator's members */
      edges_torus(&s.c, &md, l->pod_idx[m], &e);
      for (size_t i = 0; i < e.ns; i++)
        e.send[i].peer = coll__pod_member(l, pp, e.send[i].peer);
      for (size_t i = 0; i < e.nr; i++)
        e.recv[i].peer = coll__pod_member(l, pp, e.recv[i].peer);
      rounds = (int)fmin(64, fmax(1, floor(bytes[k] / (16 << 20))));
    } else if (in_pod[k] && n > 1) {
      int nch = c->force_nch > 0 ? c->force_nch : s.l.nnodes > 1 ? s.l.m_min : 1;
      for (int pass = 0; pass < 2; pass++) /* every channel's send, then every receive */
        for (int ch = 0; ch < nch; ch++) {
          int next, prev;
          ring_neighbours_in(l, l->pod_node_first[pp], l->pod_node_cnt[pp], ch, m, &next, &prev);
          if (pass == 0)
            snd(&e, next, f * bytes[k] / nch, eff_between(c, &md, m, next));
          else
            rcv(&e, prev);
        }
      rounds = n - 1;
    } else if (!in_pod[k]) {
      int i = l->pod_idx[m];
      snd(&e, coll__pod_member(l, (pp + 1) % P, i), f * bytes[k], md.e_nic);
      rcv(&e, coll__pod_member(l, (pp - 1 + P) % P, i));
      rounds = ops[k] == WL_COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;
    }
    if (e.fail)
      rc = ST_ENOMEM;
    else if (e.ns + e.nr > 0)
      rc = emit_phase(c, m, &e, c->ch.phase_lat_s[k],
                      c->fidelity == SIM_FID_STEP && c->op != WL_COLL_BARRIER ? rounds : 1, out);
    free(e.send);
    free(e.recv);
  }
  return rc;
}

int coll_plan(const coll_ctx *c, int m, coll_sched *out)
{
  coll_sched_clear(out);
  if (c->ch.algo == SIM_ALGO_HIER_PODS)
    return plan_pods(c, m, out);
  coll__model md;
  coll__model_init(c, c->ch.proto, &md);
  edge_list e;
  memset(&e, 0, sizeof e);
  edges_for(c, &md, m, &e);
  int rc = ST_OK;
  if (e.fail) {
    rc = ST_ENOMEM;
    goto done;
  }
  int rounds = 1;
  if (c->fidelity == SIM_FID_STEP && c->op != WL_COLL_BARRIER && c->op != WL_COLL_SHIFT) {
    if (c->ch.algo == SIM_ALGO_RING)
      rounds = c->op == WL_COLL_ALLREDUCE ? 2 * (c->n - 1) : c->n - 1;
    else
      rounds = (int)fmin(64, fmax(1, floor(c->bytes / (16 << 20))));
  }
  rc = emit_phase(c, m, &e, c->ch.lat_s, rounds, out);
done:
  free(e.send);
  free(e.recv);
  return rc;
}
