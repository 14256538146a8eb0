/* sim_int.h — internals of the engine shared between its files. */
#ifndef SIM_INT_H
#define SIM_INT_H

#include <stddef.h>
#include <stdint.h>

/* Open-addressing hash map from a non-zero 64-bit key to a pointer.
 * Deterministic (no random seed); grows at 50% load. */
typedef struct sim_map {
  uint64_t *keys;
  void **vals;
  size_t cap, len;
} sim_map;

void sim_map_init(sim_map *m);
void sim_map_release(sim_map *m);
void *sim_map_get(const sim_map *m, uint64_t key);
/* Returns 0, or -1 when out of memory. */
int sim_map_put(sim_map *m, uint64_t key, void *val);

/* Mix several small integers into a non-zero key. */
static inline uint64_t sim_key4(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  uint64_t v[4] = {a, b, c, d};
  for (int i = 0; i < 4; i++) {
    h ^= v[i] + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
  }
  return h ? h : 1;
}

/* ---- collective algorithms (coll.c) --------------------------------------
 * An algorithm turns one collective instance into, for each member, a list
 * of rounds; a round is a wait (pre_s: latency terms not charged by the
 * flows themselves) followed by flows sent to and received from other
 * members, all of which must end before the next round.  The engine posts
 * the flows as SimGrid comms between the members' hosts and releases all
 * members together when every member's last round is over.  Several flows
 * between the same pair in one round are fine: mailboxes match FIFO. */
#include "platform.h"

typedef struct sim_xfer {
  int32_t peer;  /* member index */
  double bytes;  /* on the wire (payload / protocol efficiency) */
} sim_xfer;

typedef struct sim_round {
  double pre_s;
  uint32_t send_first, nsend, recv_first, nrecv; /* into sim_sched.xfers */
} sim_round;

typedef struct sim_sched {
  sim_round *rounds;
  size_t nrounds, cap_rounds;
  sim_xfer *xfers;
  size_t nxfers, cap_xfers;
} sim_sched;

/* Where a communicator's members sit: grouped by node (nodes in ascending
 * order, members of a node by ascending local GPU index).  Built once per
 * communicator. */
typedef struct sim_coll_layout {
  int n, nnodes, m_min, m_max;
  int32_t *node_of;    /* member -> node position 0..nnodes-1 */
  int32_t *pos;        /* member -> position within its node's list */
  int32_t *local;      /* member -> local GPU index on its node */
  int32_t *node_first; /* node position -> first entry in by_node */
  int32_t *node_cnt;   /* node position -> members on it */
  int32_t *by_node;    /* members grouped by node */
} sim_coll_layout;

/* What the tuner chose for one instance (the same for every member). */
typedef struct sim_coll_choice {
  int algo;        /* sim_coll_algo */
  int proto;       /* sim_coll_proto */
  int nch;         /* channels */
  double lat_s;    /* the algorithm's latency terms, whole collective */
  double est_s;    /* the tuner's closed-form estimate */
} sim_coll_choice;

typedef struct sim_coll_ctx {
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
  const sim_coll_layout *lay;
  sim_coll_choice ch;     /* filled by sim_coll_choose */
  /* route latency between two members (the engine asks SimGrid) */
  double (*route_lat)(void *u, int src, int dst);
  void *route_u;
  double ring_lat_max;    /* largest route latency between ring neighbours */
} sim_coll_ctx;

void sim_sched_init(sim_sched *s);
void sim_sched_release(sim_sched *s);
void sim_sched_clear(sim_sched *s);
/* Build the layout of a communicator in arena a.  Returns 0 or ST_ENOMEM. */
int sim_coll_layout_build(st_arena *a, const int32_t *ranks, int n, const plat_cluster *cl,
                          sim_coll_layout *out);
/* Choose algorithm, protocol and channels for an instance: fills ctx->ch.
 * A forced algorithm that cannot run the op (or on this platform) falls back
 * to the automatic choice for that op. */
void sim_coll_choose(sim_coll_ctx *ctx);
/* Member m's rounds.  Returns 0 or ST_ENOMEM. */
int sim_coll_plan(const sim_coll_ctx *ctx, int m, sim_sched *out);

#endif
