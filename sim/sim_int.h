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
 * members together when every member's last round is over. */
#include "platform.h"

enum { SIM_ALGO_RING = 0, SIM_ALGO_DIRECT, SIM_ALGO_CHAIN, SIM_ALGO_COUNT_BASE };

typedef struct sim_xfer {
  int32_t peer;  /* member index */
  double bytes;
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

typedef struct sim_coll_ctx {
  int op;                 /* wl_coll_op */
  int n;                  /* members */
  double bytes;           /* nccl-tests convention */
  int root;               /* broadcast/reduce root member */
  const double *splits;   /* all-to-all-v: this member's per-peer send bytes, or NULL */
  const int32_t *ranks;   /* member -> global rank (= GPU index) */
  const plat_cluster *cl;
  int fidelity;           /* sim_fidelity */
  int algo;               /* chosen algorithm (sim_coll_choose) */
  const double *edge_lat; /* ring: route latency member i -> i+1 */
  double ring_lat_max;
} sim_coll_ctx;

void sim_sched_init(sim_sched *s);
void sim_sched_release(sim_sched *s);
void sim_sched_clear(sim_sched *s);
/* The algorithm for an instance (the same for every member). */
int sim_coll_choose(const sim_coll_ctx *ctx);
const char *sim_coll_algo_name(int algo);
/* Member m's rounds.  Returns 0 or ST_ENOMEM. */
int sim_coll_plan(const sim_coll_ctx *ctx, int m, sim_sched *out);

#endif
