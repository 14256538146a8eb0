/* layout.c — where a communicator's members sit, and how rings lie on
 * meshes and tori: the geometry the tuner and the edges share.
 *
 *  1. Layout.  A communicator's members are grouped by node (coll_layout);
 *     every algorithm is laid on that grouping: chains inside nodes, NICs
 *     between them, as NCCL's graph search lays its rings and trees.
 */
#include <stdlib.h>
#include <string.h>

#include "coll_int.h"

/* ---- layout ----------------------------------------------------------------- */

typedef struct mkey {
  int32_t node, local, member;
} mkey;

static int cmp_i32(int32_t a, int32_t b) { return (a > b) - (a < b); }

/* By node, then local GPU index, then member. */
static int mkey_cmp(const void *a, const void *b)
{
  const mkey *x = a, *y = b;
  int c = cmp_i32(x->node, y->node);
  c = c ? c : cmp_i32(x->local, y->local);
  return c ? c : cmp_i32(x->member, y->member);
}

/* The pods of a layout: pod positions in node order, each a run of node
 * positions and of by_node.  0 or ST_ENOMEM. */
static int layout_pods(st_arena *a, const int32_t *ranks, const plat_cluster *cl, coll_layout *l)
{
  int N = l->nnodes, P = 0, last = -1;
  for (int j = 0; j < N; j++) {
    int p = plat_gpu_pod(cl, ranks[l->by_node[l->node_first[j]]]);
    P += p != last;
    last = p;
  }
  size_t szp = (size_t)P * sizeof(int32_t), szn = (size_t)l->n * sizeof(int32_t);
  int32_t *v[7];
  for (int i = 0; i < 7; i++)
    if (!(v[i] = st_arena_alloc(a, i < 5 ? szp : szn)))
      return ST_ENOMEM;
  l->pod_id = v[0];
  l->pod_node_first = v[1];
  l->pod_node_cnt = v[2];
  l->pod_m_min = v[3];
  l->pod_m_max = v[4];
  l->pod_of = v[5];
  l->pod_idx = v[6];
  int pp = -1;
  last = -1;
  for (int j = 0; j < N; j++) {
    int p = plat_gpu_pod(cl, ranks[l->by_node[l->node_first[j]]]);
    if (p != last) {
      pp++;
      l->pod_id[pp] = p;
      l->pod_node_first[pp] = j;
      l->pod_node_cnt[pp] = 0;
      l->pod_m_min[pp] = l->n;
      l->pod_m_max[pp] = 0;
      last = p;
    }
    l->pod_node_cnt[pp]++;
    int cnt = l->node_cnt[j];
    l->pod_m_min[pp] = cnt < l->pod_m_min[pp] ? cnt : l->pod_m_min[pp];
    l->pod_m_max[pp] = cnt > l->pod_m_max[pp] ? cnt : l->pod_m_max[pp];
    int base = l->node_first[l->pod_node_first[pp]];
    for (int i = 0; i < cnt; i++) {
      int m = l->by_node[l->node_first[j] + i];
      l->pod_of[m] = pp;
      l->pod_idx[m] = l->node_first[j] + i - base;
    }
  }
  l->npods = P;
  for (int q = 1; q < P; q++)
    l->pod_uniform &= coll__pod_count(l, q) == coll__pod_count(l, 0);
  return ST_OK;
}

int coll_layout_build(st_arena *a, const int32_t *ranks, int n, const plat_cluster *cl,
                      coll_layout *out)
{
  memset(out, 0, sizeof *out);
  size_t sz = (size_t)n * sizeof(int32_t);
  mkey *k = malloc((size_t)n * sizeof *k);
  out->node_of = st_arena_alloc(a, sz);
  out->pos = st_arena_alloc(a, sz);
  out->local = st_arena_alloc(a, sz);
  out->rail_of = st_arena_alloc(a, sz);
  out->node_first = st_arena_alloc(a, sz);
  out->node_cnt = st_arena_alloc(a, sz);
  out->by_node = st_arena_alloc(a, sz);
  if (!k || !out->node_of || !out->pos || !out->local || !out->rail_of || !out->node_first ||
      !out->node_cnt || !out->by_node) {
    free(k);
    return ST_ENOMEM;
  }
  int nics = cl->nics_per_node > 0 ? cl->nics_per_node : 1;
  for (int m = 0; m < n; m++) { /* (node groups may have unlike GPUs per node) */
    k[m].node = plat_gpu_node(cl, ranks[m]);
    k[m].local = plat_gpu_local(cl, ranks[m]);
    k[m].member = m;
    out->rail_of[m] = k[m].local * nics / plat_node_gpus(cl, k[m].node);
  }
  qsort(k, (size_t)n, sizeof *k, mkey_cmp);
  out->n = n;
  int node = -1;
  for (int i = 0; i < n; i++) {
    if (i == 0 || k[i].node != k[i - 1].node) {
      node++;
      out->node_first[node] = i;
      out->node_cnt[node] = 0;
    }
    int m = k[i].member;
    out->by_node[i] = m;
    out->node_of[m] = node;
    out->pos[m] = out->node_cnt[node]++;
    out->local[m] = k[i].local;
  }
  out->nnodes = node + 1;
  out->m_min = n;
  out->m_max = 0;
  for (int j = 0; j < out->nnodes; j++) {
    if (out->node_cnt[j] < out->m_min)
      out->m_min = out->node_cnt[j];
    if (out->node_cnt[j] > out->m_max)
      out->m_max = out->node_cnt[j];
  }
  free(k);
  out->npods = 1;
  out->pod_uniform = 1;
  return cl->num_pods > 0 ? layout_pods(a, ranks, cl, out) : ST_OK;
}

/* ---- phases across pods ---------------------------------------------------------
 * SIM_ALGO_HIER_PODS runs each phase as a collective of its own: its
 * context is the communicator's with the members, nodes and cluster of the
 * phase (a pod's own cluster inside it, the communicator's view across). */

void coll__phase_ctx(const coll_ctx *c, int pp, int op, double bytes, coll__sub *s)
{
  const coll_layout *l = c->lay;
  s->c = *c;
  s->l = *l;
  s->c.lay = &s->l;
  s->c.op = op;
  s->c.bytes = bytes;
  s->c.phase = 1;
  s->c.splits = NULL;
  if (pp >= 0) {
    s->c.n = coll__pod_count(l, pp);
    s->l.nnodes = l->pod_node_cnt[pp];
    s->l.m_min = l->pod_m_min[pp];
    s->l.m_max = l->pod_m_max[pp];
    if (c->cl->num_pods > 0)
      s->c.cl = c->cl->pods[l->pod_id[pp]].c;
  } else {
    s->c.n = l->npods;
    s->l.nnodes = l->npods;
    s->l.m_min = s->l.m_max = 1;
  }
  s->l.n = s->c.n;
  s->l.npods = 1;
}

int coll__pod_phases(const coll_ctx *c, int *ops, double *bytes, int *in_pod)
{
  double S = c->bytes, shard = S / coll__pod_count(c->lay, 0);
  int n = 0;
  if (c->op != WL_COLL_ALLGATHER) { /* reduce-scatter inside the pods */
    ops[n] = WL_COLL_REDUCESCATTER;
    bytes[n] = S;
    in_pod[n++] = 1;
  }
  ops[n] = c->op; /* the shards across the pods */
  bytes[n] = shard;
  in_pod[n++] = 0;
  if (c->op != WL_COLL_REDUCESCATTER) { /* all-gather inside the pods */
    ops[n] = WL_COLL_ALLGATHER;
    bytes[n] = S;
    in_pod[n++] = 1;
  }
  return n;
}

/* ---- rings on meshes ---------------------------------------------------------
 * On a node whose GPUs are joined pairwise (full mesh, DGX-1 cube-mesh) a
 * ring that runs down the members uses one link of each GPU.  The libraries
 * lay many rings over disjoint links instead:
 *  - RCCL on 8 MI300X (rome_models.cc, the single-node 7-link model): 14
 *    rings, which together cross every directed xGMI link exactly twice;
 *    NCCL on the DGX-1 finds rings over disjoint NVLinks, the 2-lane pairs
 *    carrying two.  The lanes of the DGX-1 cube-mesh split into 3 Hamiltonian
 *    cycles (0-1-5-4-7-6-2-3, 0-4-6-5-7-3-1-2, 0-3-2-1-5-6-7-4), i.e. 6
 *    directed rings, one per lane of every GPU.  Either way every directed
 *    lane carries the same share of the ring's bytes, so member m sends
 *    f S x lanes(m, j) / (its lanes) to each linked member j (f = 2(n-1)/n
 *    for all-reduce) and nothing over two hops.  A full mesh of k members
 *    has k-1 such rings where a decomposition exists (not for k = 4 or 6,
 *    where the same loads need rings of unequal shares; the loads are what
 *    is modelled).
 *  - Across nodes on a full mesh, RCCL's 8-NIC MI300X model lays 8 channels,
 *    each a Hamiltonian path through the node from one GPU's NIC to
 *    another's, which together cross every directed xGMI link once.  Here:
 *    Walecki's zigzag paths (i, i+1, i-1, i+2, ...; k/2 of them cover K_k)
 *    taken both ways, channel ch entering at position ch and leaving at
 *    ch + k/2 on even nodes, the reverse on odd ones, so that every
 *    inter-node edge stays on one rail as the NVSwitch rings do. */

int coll__ring_mesh(const coll_ctx *c)
{
  const plat_cluster *cl = c->cl;
  const coll_layout *l = c->lay;
  if (cl->fabric_kind == PLAT_FABRIC_TORUS || cl->fabric_kind == PLAT_FABRIC_XML || c->n < 2 ||
      c->phase)
    return COLL__MESH_NO;
  if (l->nnodes == 1) {
    if (cl->intra_kind == PLAT_INTRA_FULLMESH)
      return COLL__MESH_ONE_NODE;
    if (cl->intra_kind == PLAT_INTRA_CUBEMESH && c->n == 8)
      return COLL__MESH_ONE_NODE; /* the whole DGX-1 */
    return COLL__MESH_NO;
  }
  if (cl->intra_kind == PLAT_INTRA_FULLMESH && l->m_min == l->m_max && l->m_min % 2 == 0)
    return COLL__MESH_ACROSS;
  return COLL__MESH_NO;
}

int coll__member_lanes(const coll_ctx *c, int a, int b)
{
  return plat_intra_lanes(c->cl, c->lay->local[a], c->lay->local[b]);
}

/* Lanes from member m to the other members (all on m's node). */
int coll__lanes_out(const coll_ctx *c, int m)
{
  int w = 0;
  for (int j = 0; j < c->n; j++)
    w += coll__member_lanes(c, m, j);
  return w;
}

/* Vertex j of zigzag path i of K_k (k even): i, i+1, i-1, i+2, i-2, ..., i+k/2. */
static int zigzag(int k, int i, int j)
{
  int v = j == 0 ? i : j % 2 ? i + (j + 1) / 2 : i - j / 2;
  return ((v % k) + k) % k;
}

/* Position of the j-th member channel ch visits on a node of k members:
 * path ch (ch < k/2) or path ch - k/2 backwards, from ch to ch + k/2;
 * odd nodes run it backwards. */
static int mesh_visit(int k, int node, int ch, int j)
{
  int h = k / 2;
  ch %= k;
  if (node % 2)
    j = k - 1 - j;
  return ch < h ? zigzag(k, ch, j) : zigzag(k, ch - h, k - 1 - j);
}

void coll__mesh_neighbours(const coll_layout *l, int ch, int m, int *next, int *prev)
{
  int k = l->node_of[m], p = l->pos[m], mk = l->node_cnt[k], N = l->nnodes;
  int j = 0;
  while (j < mk - 1 && mesh_visit(mk, k, ch, j) != p)
    j++;
  int kn = (k + 1) % N, kp = (k - 1 + N) % N;
  *next = j < mk - 1 ? coll__lay_member(l, k, mesh_visit(mk, k, ch, j + 1))
                     : coll__lay_member(l, kn, mesh_visit(l->node_cnt[kn], kn, ch, 0));
  *prev = j > 0 ? coll__lay_member(l, k, mesh_visit(mk, k, ch, j - 1))
                : coll__lay_member(l, kp, mesh_visit(l->node_cnt[kp], kp, ch, l->node_cnt[kp] - 1));
}

/* ---- tori ------------------------------------------------------------------ */

void coll__torus_dims(const coll_ctx *c, int *dims)
{
  const plat_cluster *cl = c->cl;
  dims[0] = c->n;
  dims[1] = dims[2] = 1;
  int p = cl->torus_dims[0] * cl->torus_dims[1] * cl->torus_dims[2];
  if (p == c->n && p > 1)
    for (int d = 0; d < 3; d++)
      dims[d] = cl->torus_dims[d] > 0 ? cl->torus_dims[d] : 1;
}

/* Torus all-reduce / reduce-scatter / all-gather as XLA runs it on TPU: a
 * bidirectional ring per torus dimension, every dimension busy at once.  The
 * data is cut into one part per dimension of more than one chip; part p runs
 * its reduce-scatter over the dimensions in the order starting at the p-th
 * (x y z, y z x, z x y), each step on 1/k_d of what the previous one left,
 * and its all-gather back.  A dimension's ring carries half of its part each
 * way.  load[d]: bytes on each directed link of dimension d, payload. */
void coll__torus_loads(const coll_ctx *c, const int *dims, double *load)
{
  double mult = c->op == WL_COLL_ALLREDUCE ? 2.0 : 1.0;
  int act[3], na = 0;
  for (int d = 0; d < 3; d++) {
    load[d] = 0;
    if (dims[d] > 1)
      act[na++] = d;
  }
  for (int p = 0; p < na; p++) {
    double Sd = c->bytes / na;
    for (int j = 0; j < na; j++) {
      int d = act[(p + j) % na];
      load[d] += mult * (dims[d] - 1.0) / dims[d] * Sd / 2;
      Sd /= dims[d];
    }
  }
}
