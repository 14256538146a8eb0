/* coll_int.h — internals of the collective layer shared between its files
 * (layout.c, tuner.c, edges.c); nothing outside sim/coll/ includes it. */
#ifndef SIM_COLL_INT_H
#define SIM_COLL_INT_H

#include "coll.h"
#include "sim.h"

/* Member at position pos (taken modulo the node's count) of node position node. */
static inline int coll__lay_member(const coll_layout *l, int node, int pos)
{
  int c = l->node_cnt[node];
  return l->by_node[l->node_first[node] + ((pos % c) + c) % c];
}

/* Members in pod position pp, and the member at index i of its run. */
static inline int coll__pod_count(const coll_layout *l, int pp)
{
  int k0 = l->pod_node_first[pp], k1 = k0 + l->pod_node_cnt[pp] - 1;
  return l->node_first[k1] + l->node_cnt[k1] - l->node_first[k0];
}
static inline int coll__pod_member(const coll_layout *l, int pp, int i)
{
  return l->by_node[l->node_first[l->pod_node_first[pp]] + i];
}

/* A phase of the hierarchical algorithm across pods as a collective of its
 * own: the ring inside pod position pp (pp >= 0) or the ring of each pod
 * index across the pods (pp < 0), op over bytes.  c.lay points at l: use it
 * in place, never copied. */
typedef struct coll__sub {
  coll_ctx c;
  coll_layout l;
} coll__sub;
void coll__phase_ctx(const coll_ctx *c, int pp, int op, double bytes, coll__sub *s);
/* The phases of c's op: their ops, bytes and pod (1) or inter-pod (0)
 * kind; returns how many. */
int coll__pod_phases(const coll_ctx *c, int *ops, double *bytes, int *in_pod);

/* ---- the deduplicating all-to-all (edges.c) ------------------------------ */

/* Is c a deduplicating all-to-all (an MoE dispatch or combine of DeepEP or
 * HybridEP: WL_OPF_DEDUP, its top-k and experts per member in c->root)? */
static inline int coll__dedup(const coll_ctx *c)
{
  return c->op == WL_COLL_ALLTOALL && c->root >= (1 << 16);
}
/* Its top-k and its experts per member (wl_op_dedup_arg's two halves). */
static inline int coll__dedup_topk(const coll_ctx *c) { return c->root >> 16; }
static inline int coll__dedup_experts(const coll_ctx *c) { return c->root & 0xffff; }
/* The share of a member's tokens with at least one of their top-k experts
 * among s members' experts (uniform routing). */
double coll__dedup_share(const coll_ctx *c, int s);
/* Bytes member m sends across the network and over its node's links. */
void coll__dedup_loads(const coll_ctx *c, int m, double *net, double *intra);

/* ---- the cost model (tuner.c) ------------------------------------------- */

typedef struct coll__model {
  int arch, ideal;
  double e_intra, e_nic, e_nvls, e_sharp; /* payload / wire, per link kind */
  double e_nvls_tree; /* NVLS inside nodes under NVLS tree: e_nvls, or less
                         where NCCL's per-channel ceiling binds */
} coll__model;

/* The link efficiencies of protocol proto for the instance c. */
void coll__model_init(const coll_ctx *c, int proto, coll__model *md);

/* ---- rings on meshes and tori (layout.c) -------------------------------- */

enum { COLL__MESH_NO = 0, COLL__MESH_ONE_NODE, COLL__MESH_ACROSS };

/* How rings lie on the instance's node topology: COLL__MESH_*. */
int coll__ring_mesh(const coll_ctx *c);
/* Lanes between members a and b (on one node). */
int coll__member_lanes(const coll_ctx *c, int a, int b);
/* Lanes from member m to the other members (all on m's node). */
int coll__lanes_out(const coll_ctx *c, int m);
/* Mesh channel ch across nodes: member m's next and previous. */
void coll__mesh_neighbours(const coll_layout *l, int ch, int m, int *next, int *prev);
/* The torus dimensions the members span (n x 1 x 1 unless they fill the torus). */
void coll__torus_dims(const coll_ctx *c, int *dims);
/* Bytes on each directed link of each torus dimension (payload). */
void coll__torus_loads(const coll_ctx *c, const int *dims, double *load);

#endif
