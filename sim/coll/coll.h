/* coll.h — the collective layer: what the engine asks of it.
 *
 * An algorithm turns one collective instance into, for each member, a list
 * of rounds; a round is a wait (pre_s: latency terms not charged by the
 * flows themselves) followed by flows sent to and received from other
 * members, all of which must end before the next round.  The engine posts
 * the flows as SimGrid comms between the members' hosts and releases all
 * members together when every member's last round is over.  Several flows
 * between the same pair in one round are fine: mailboxes match FIFO.
 *
 * The layer's files (docs/collectives.md is the long form of their notes):
 *  - layout.c: where a communicator's members sit (design note 1), rings
 *    on meshes and tori;
 *  - tuner.c: NCCL's cost model and the tuner's choice of algorithm,
 *    protocol and channels (design notes 4 and 5), the libraries' rules;
 *  - edges.c: each algorithm's flows (design note 2) and their rounds in
 *    flow and step fidelity (design note 3);
 *  - estimate.c: one collective's time by the tuner's closed form alone,
 *    without the engine (sim_coll_estimate, sim.h).
 * coll_int.h holds what those files share.
 *
 * Ownership: a coll_sched is the caller's (coll_sched_init/_release); a
 * layout lives in the arena it was built in.
 */
#ifndef SIM_COLL_H
#define SIM_COLL_H

#include <stddef.h>
#include <stdint.h>

#include "platform.h"

typedef struct coll_xfer {
  int32_t peer;  /* member index */
  double bytes;  /* on the wire (payload / protocol efficiency) */
} coll_xfer;

typedef struct coll_round {
  double pre_s;
  uint32_t send_first, nsend, recv_first, nrecv; /* into coll_sched.xfers */
} coll_round;

typedef struct coll_sched {
  coll_round *rounds;
  size_t nrounds, cap_rounds;
  coll_xfer *xfers;
  size_t nxfers, cap_xfers;
} coll_sched;

/* Where a communicator's members sit: grouped by node (nodes in ascending
 * order, members of a node by ascending local GPU index).  Built once per
 * communicator. */
typedef struct coll_layout {
  int n, nnodes, m_min, m_max;
  int32_t *node_of;    /* member -> node position 0..nnodes-1 */
  int32_t *pos;        /* member -> position within its node's list */
  int32_t *local;      /* member -> local GPU index on its node */
  int32_t *rail_of;    /* member -> its rail: local x NICs / its node's GPUs (the view's NICs) */
  int32_t *node_first; /* node position -> first entry in by_node */
  int32_t *node_cnt;   /* node position -> members on it */
  int32_t *by_node;    /* members grouped by node */
  /* pods (a cluster of pods; else npods 1 and the arrays NULL): pods are
   * runs of nodes, so a pod's members are a run of by_node */
  int npods;                              /* pods the members are in */
  int pod_uniform;                        /* every one of them holds the same number of members */
  int32_t *pod_id;                        /* pod position -> the cluster's pod index */
  int32_t *pod_node_first, *pod_node_cnt; /* pod position -> its node positions */
  int32_t *pod_m_min, *pod_m_max;         /* pod position -> members per node */
  int32_t *pod_of;                        /* member -> pod position */
  int32_t *pod_idx;                       /* member -> its index in its pod's run of by_node */
} coll_layout;

/* The phases of the hierarchical algorithm across pods (SIM_ALGO_HIER_PODS):
 * up to three, each one collective of its own (tuner.c, edges.c). */
#define COLL_PHASES 3

/* What the tuner chose for one instance (the same for every member). */
typedef struct coll_choice {
  int algo;        /* sim_coll_algo */
  int proto;       /* sim_coll_proto */
  int nch;         /* channels */
  double lat_s;    /* the algorithm's latency terms, whole collective */
  double est_s;    /* the tuner's closed-form estimate */
  /* SIM_ALGO_HIER_PODS: each phase's protocol and latency terms (proto is
   * the inter-pod phase's, lat_s their sum) */
  uint8_t phase_proto[COLL_PHASES];
  double phase_lat_s[COLL_PHASES];
} coll_choice;

typedef struct coll_ctx {
  int op;                 /* wl_coll_op */
  int n;                  /* members */
  double bytes;           /* nccl-tests convention */
  int root;               /* broadcast/reduce root member */
  const double *splits;   /* all-to-all-v: this member's per-peer send bytes, or NULL */
  const int32_t *ranks;   /* member -> global rank (= GPU index) */
  const plat_cluster *cl;
  int fidelity;           /* sim_fidelity */
  int model;              /* sim_coll_model */
  int force_algo, force_proto, force_nch; /* options: -1 / -1 / 0 = automatic */
  const coll_layout *lay;
  coll_choice ch;         /* filled by coll_choose */
  /* route latency between two members (the engine asks SimGrid) */
  double (*route_lat)(void *u, int src, int dst);
  void *route_u;
  double ring_lat_max;    /* largest route latency between ring neighbours */
  int phase;              /* a phase of SIM_ALGO_HIER_PODS on a part of the members: rings
                             run down the members (no mesh rings); 0 otherwise */
} coll_ctx;

void coll_sched_init(coll_sched *s);
void coll_sched_release(coll_sched *s);
void coll_sched_clear(coll_sched *s);
/* Build the layout of a communicator in arena a.  Returns 0 or ST_ENOMEM. */
int coll_layout_build(st_arena *a, const int32_t *ranks, int n, const plat_cluster *cl,
                      coll_layout *out);
/* Choose algorithm, protocol and channels for an instance: fills ctx->ch.
 * A forced algorithm that cannot run the op (or on this platform) falls back
 * to the automatic choice for that op. */
void coll_choose(coll_ctx *ctx);
/* Member m's rounds.  Returns 0 or ST_ENOMEM. */
int coll_plan(const coll_ctx *ctx, int m, coll_sched *out);

#endif
