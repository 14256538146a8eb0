/* map.c — a small open-addressing hash map (see eng_int.h).
 * Keys are hashes of several integers; a collision of two different tuples
 * onto one 64-bit key is treated as the same entry, so callers keep the
 * tuple in the value and check it (the engine does). */
#include <stdlib.h>

#include "eng_int.h"

void eng__map_init(eng__map *m)
{
  m->keys = NULL;
  m->vals = NULL;
  m->cap = m->len = 0;
}

void eng__map_release(eng__map *m)
{
  free(m->keys);
  free(m->vals);
  eng__map_init(m);
}

static size_t slot(uint64_t key, size_t cap) { return (size_t)(key ^ (key >> 29)) & (cap - 1); }

void *eng__map_get(const eng__map *m, uint64_t key)
{
  if (!m->cap)
    return NULL;
  for (size_t i = slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (m->keys[i] == key)
      return m->vals[i];
    if (m->keys[i] == 0)
      return NULL;
  }
}

static int grow(eng__map *m)
{
  size_t cap = m->cap ? m->cap * 2 : 64;
  uint64_t *keys = calloc(cap, sizeof *keys);
  void **vals = calloc(cap, sizeof *vals);
  if (!keys || !vals) {
    free(keys);
    free(vals);
    return -1;
  }
  for (size_t i = 0; i < m->cap; i++)
    if (m->keys[i]) {
      size_t j = slot(m->keys[i], cap);
      while (keys[j])
        j = (j + 1) & (cap - 1);
      keys[j] = m->keys[i];
      vals[j] = m->vals[i];
    }
  free(m->keys);
  free(m->vals);
  m->keys = keys;
  m->vals = vals;
  m->cap = cap;
  return 0;
}

int eng__map_put(eng__map *m, uint64_t key, void *val)
{
  if ((m->len + 1) * 2 > m->cap && grow(m))
    return -1;
  size_t i = slot(key, m->cap);
  while (m->keys[i] && m->keys[i] != key)
    i = (i + 1) & (m->cap - 1);
  if (!m->keys[i])
    m->len++;
  m->keys[i] = key;
  m->vals[i] = val;
  return 0;
}
