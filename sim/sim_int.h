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

#endif
