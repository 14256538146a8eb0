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

/* ---- rank classes (sim_sym.c) -------------------------------------------
 * Ranks that are copies of each other on isomorphic, disjoint links: one of
 * each class is simulated and the others take its timings (sim_sym.c's
 * header gives the conditions, all checked). */
#include "sim.h"

typedef struct sim_sym {
  int on;               /* the reduction is used */
  int role;             /* role whose groups define the classes */
  int C;                /* classes (1 = none) */
  int simulated;        /* ranks simulated */
  int32_t *cls;         /* rank -> class */
  int32_t *comm_img;    /* [c0 * C + k]: class k's copy of class-0 communicator c0, or -1 */
  uint8_t *comm_collapse; /* communicator is one of role's groups */
  uint32_t *link_img;   /* [l * C + k]: phi_k(l) for a class-0 link, or UINT32_MAX */
  uint32_t *link_src;   /* link -> the class-0 link it copies (itself for class 0) */
  int8_t *link_cls;     /* scratch: class whose traffic uses the link, -1 none */
  uint16_t *fixed_cnt;  /* scratch: classes k >= 1 whose copy of a class-0 link is itself */
  uint8_t *link_fixed;  /* shared link every class crosses: simulated at 1/C capacity */
  size_t fixed;         /* such links */
  int32_t *live;        /* per communicator: members simulated */
  char desc[200];       /* what was used, or "none (why)" */
} sim_sym;

/* What the analysis needs from the engine. */
typedef struct sim_sym_env {
  const wl_workload *wl;
  const uint8_t *comm_fast; /* per communicator: its links carry nothing else */
  const int32_t *member;    /* [rank * num_roles + role]: member index */
  size_t num_links;
  const double *link_bw;
  const uint8_t *link_shared;
  /* route between two GPUs: link indices (valid until the next call), count, latency */
  const uint32_t *(*route)(void *u, int src, int dst, uint32_t *n, double *lat_s);
  /* call fn on every flow of communicator c's (op, bytes, root) instance; 0 or ST_ENOMEM */
  int (*walk)(void *u, int c, int op, double bytes, int root, void (*fn)(void *, int, int),
              void *fn_u);
  /* whether that instance has a closed form */
  int (*closed)(void *u, int c, int op, double bytes, int root);
  void *u;
} sim_sym_env;

/* Returns 0 (s->on says whether the reduction applies; s->desc why not) or
 * ST_ENOMEM.  Release with sim_sym_release. */
int sim_sym_prepare(sim_sym *s, const sim_sym_env *env);
void sim_sym_release(sim_sym *s);
int sim_sym_img(const sim_sym *s, const wl_workload *wl, int r0, int k);
int sim_sym_rep(const sim_sym *s, const wl_workload *wl, int r);
void sim_sym_expand_ranks(const sim_sym *s, const wl_workload *wl, sim_rank_stats *ranks);
int sim_sym_expand_colls(const sim_sym *s, const wl_workload *wl, sim_coll_record **recs,
                         size_t *n);
int sim_sym_expand_timeline(const sim_sym *s, const wl_workload *wl, sim_timeline_row **rows,
                            size_t *n);

#endif
