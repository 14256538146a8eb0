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

#include "coll.h"

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
