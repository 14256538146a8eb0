/* tr_chakra_read.c — the Chakra importer's reading side: a .et file's
 * length-prefixed protobuf messages (protobuf-c, from chakra.proto) into one
 * rank's nodes, and the order in which they are replayed (topological in the
 * data dependencies, ties by start time, then id).  What a node becomes and
 * why: tr_chakra.c, which builds the programs and groups from what is read
 * here.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chakra.pb-c.h"
#include "tr_int.h"

static void rank_release_node(ck_node *k)
{
  free(k->name);
  free(k->data);
  free(k->drop);
  free(k->ctrl);
}

void tr__ck_rank_release(ck_rank *r)
{
  for (size_t i = 0; i < r->n; i++)
    rank_release_node(&r->nodes[i]);
  free(r->nodes);
  free(r->by_id);
}

static int read_varint32(const uint8_t *p, size_t len, size_t *at, uint32_t *v)
{
  uint64_t x = 0;
  for (int shift = 0; shift < 35; shift += 7) {
    if (*at >= len)
      return -1;
    uint8_t b = p[(*at)++];
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      if (x > UINT32_MAX)
        return -2;
      *v = (uint32_t)x;
      return 0;
    }
  }
  return -2;
}

static double attr_number(const StChakra__Attr *a, int *ok)
{
  *ok = 1;
  switch (a->value_case) {
  case ST_CHAKRA__ATTR__VALUE_DOUBLE_VAL: return a->double_val;
  case ST_CHAKRA__ATTR__VALUE_FLOAT_VAL: return a->float_val;
  case ST_CHAKRA__ATTR__VALUE_INT32_VAL: return a->int32_val;
  case ST_CHAKRA__ATTR__VALUE_INT64_VAL: return (double)a->int64_val;
  case ST_CHAKRA__ATTR__VALUE_UINT32_VAL: return a->uint32_val;
  case ST_CHAKRA__ATTR__VALUE_UINT64_VAL: return (double)a->uint64_val;
  case ST_CHAKRA__ATTR__VALUE_SINT32_VAL: return a->sint32_val;
  case ST_CHAKRA__ATTR__VALUE_SINT64_VAL: return (double)a->sint64_val;
  case ST_CHAKRA__ATTR__VALUE_BOOL_VAL: return a->bool_val;
  default: *ok = 0; return 0;
  }
}

/* A numeric attribute of node k: the integers this reader stores are
 * checked before they are (a cast of a double out of range is undefined),
 * the sizes are finite and at most 2^53 bytes. */
static int node_attr_number(const char *path, ck_node *k, const char *an, double x, st_err *err)
{
  static const struct {
    const char *name;
    double lo, hi;
  } ints[] = {{"tid", ST_INT32_MIN, ST_INT32_MAX},       {"comm_type", 0, ST_INT32_MAX},
              {"comm_src", ST_INT32_MIN, ST_INT32_MAX}, {"comm_dst", ST_INT32_MIN, ST_INT32_MAX},
              {"comm_tag", ST_INT32_MIN, ST_INT32_MAX}};
  long *field[] = {&k->tid, NULL, &k->src, &k->dst, &k->tag};
  int which = -1;
  for (int q = 0; q < 5; q++)
    if (!strcmp(an, ints[q].name))
      which = q;
  long iv = 0;
  if (which >= 0 && st_num_to_long(x, (long)ints[which].lo, (long)ints[which].hi, &iv, err,
                                   "trace '%s': node %llu: attribute '%s'", path,
                                   (unsigned long long)k->id, an))
    return ST_EINPUT;
  if (which == 1)
    k->comm_type = (int)iv;
  else if (which >= 0)
    *field[which] = iv;
  else if (!strcmp(an, "is_cpu_op"))
    k->cpu = x != 0;
  else if (!strcmp(an, "comm_size") || !strcmp(an, "num_ops") || !strcmp(an, "tensor_size")) {
    if (st_num_check(x, ST_NUM_REAL, 0, an[0] == 'n' ? DBL_MAX : ST_BYTES_MAX, err,
                     "trace '%s': node %llu: attribute '%s'", path, (unsigned long long)k->id, an))
      return ST_EINPUT;
    *(an[0] == 'c' ? &k->comm_size : an[0] == 'n' ? &k->num_ops : &k->tensor_size) = x;
  }
  return ST_OK;
}

/* ASTRA-sim's involved_dim: a bool_list, one entry per topology dimension
 * (Workload::issue_coll_comm reads attr.bool_list(); Sys::generate_collective
 * runs a phase on every dimension whose entry is true).  Lists of 0/1
 * integers are taken too, for writers that used them. */
static int read_involved_dim(const char *path, ck_node *k, const StChakra__Attr *a, st_err *err)
{
  size_t n;
  const protobuf_c_boolean *b = NULL;
  const int64_t *i64 = NULL;
  const uint64_t *u64 = NULL;
  switch (a->value_case) {
  case ST_CHAKRA__ATTR__VALUE_BOOL_LIST:
    n = a->bool_list->n_values;
    b = a->bool_list->values;
    break;
  case ST_CHAKRA__ATTR__VALUE_INT64_LIST:
    n = a->int64_list->n_values;
    i64 = a->int64_list->values;
    break;
  case ST_CHAKRA__ATTR__VALUE_UINT64_LIST:
    n = a->uint64_list->n_values;
    u64 = a->uint64_list->values;
    break;
  default:
    return st_err_set(err, ST_EINPUT, "trace '%s': node %llu: 'involved_dim' is not a list of bools",
                      path, (unsigned long long)k->id);
  }
  if (n == 0)
    return st_err_set(err, ST_EINPUT, "trace '%s': node %llu: 'involved_dim' is empty", path,
                      (unsigned long long)k->id);
  uint64_t mask = 0;
  size_t on = 0;
  for (size_t d = 0; d < n; d++) {
    int bit;
    if (b) {
      bit = b[d] != 0;
    } else if (i64 ? i64[d] != 0 && i64[d] != 1 : u64[d] > 1) {
      char v[32];
      if (i64)
        snprintf(v, sizeof v, "%lld", (long long)i64[d]);
      else
        snprintf(v, sizeof v, "%llu", (unsigned long long)u64[d]);
      return st_err_set(err, ST_EINPUT,
                        "trace '%s': node %llu: 'involved_dim' entry %zu is %s, not 0 or 1", path,
                        (unsigned long long)k->id, d, v);
    } else {
      bit = i64 ? (int)i64[d] : (int)u64[d];
    }
    on += (size_t)bit;
    if (bit && d < TR_MAX_DIMS)
      mask |= 1u << d;
  }
  if (!on)
    return st_err_set(err, ST_EINPUT, "trace '%s': node %llu: 'involved_dim' involves no dimension",
                      path, (unsigned long long)k->id);
  if (on == n) /* every dimension, however many: the world (inv_len stays -1) */
    return ST_OK;
  if (n > TR_MAX_DIMS)
    return st_err_set(err, ST_EINPUT,
                      "trace '%s': node %llu: 'involved_dim' has %zu entries (at most %d dimensions)",
                      path, (unsigned long long)k->id, n, TR_MAX_DIMS);
  k->inv_len = (int)n;
  k->inv_mask = (uint32_t)mask;
  return ST_OK;
}

static ck_node *g_sort_nodes; /* qsort has no context argument in C11 */
static int cmp_by_id(const void *a, const void *b)
{
  uint64_t x = g_sort_nodes[*(const size_t *)a].id, y = g_sort_nodes[*(const size_t *)b].id;
  return x < y ? -1 : x > y;
}

long tr__ck_find_node(const ck_rank *r, uint64_t id)
{
  size_t lo = 0, hi = r->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    uint64_t x = r->nodes[r->by_id[mid]].id;
    if (x == id)
      return (long)r->by_id[mid];
    if (x < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

int tr__ck_read_rank(const char *path, ck_rank *r, tr_import_stats *stats, st_err *err)
{
  char *data;
  size_t len;
  int rc = tr__read_file(path, &data, &len, err);
  if (rc)
    return rc;
  const uint8_t *p = (const uint8_t *)data;
  size_t at = 0, cap = 0;
  long msg = 0;
  while (at < len && !rc) {
    size_t start = at;
    uint32_t mlen;
    int v = read_varint32(p, len, &at, &mlen);
    if (v || mlen > len - at) {
      rc = st_err_set(err, ST_EINPUT, "trace '%s': message %ld at byte %zu is truncated", path,
                      msg, start);
      break;
    }
    if (msg == 0) {
      StChakra__GlobalMetadata *gm = st_chakra__global_metadata__unpack(NULL, mlen, p + at);
      if (!gm) {
        rc = st_err_set(err, ST_EINPUT,
                        "trace '%s': message 0 at byte %zu is not a Chakra GlobalMetadata", path,
                        start);
        break;
      }
      st_chakra__global_metadata__free_unpacked(gm, NULL);
      at += mlen;
      msg++;
      continue;
    }
    StChakra__Node *nd = st_chakra__node__unpack(NULL, mlen, p + at);
    if (!nd) {
      rc = st_err_set(err, ST_EINPUT, "trace '%s': message %ld at byte %zu is not a Chakra Node",
                      path, msg, start);
      break;
    }
    at += mlen;
    msg++;
    stats->events_read++;
    if (r->n == cap) {
      cap = cap ? cap * 2 : 1024;
      ck_node *nn = realloc(r->nodes, cap * sizeof *nn);
      if (!nn) {
        st_chakra__node__free_unpacked(nd, NULL);
        rc = st_err_set(err, ST_ENOMEM, "out of memory");
        break;
      }
      r->nodes = nn;
    }
    ck_node *k = &r->nodes[r->n];
    memset(k, 0, sizeof *k);
    k->id = nd->id;
    k->type = nd->type;
    k->tid = -1;
    k->comm_type = -1;
    k->src = k->dst = -1;
    k->dur_us = (double)nd->duration_micros;
    k->start_us = (double)nd->start_time_micros;
    k->op = -1;
    k->inv_len = -1;
    k->name = strdup(nd->name ? nd->name : "");
    k->ndata = nd->n_data_deps;
    k->nctrl = nd->n_ctrl_deps;
    k->data = malloc((k->ndata ? k->ndata : 1) * sizeof *k->data);
    k->drop = calloc(k->ndata ? k->ndata : 1, 1);
    k->ctrl = malloc((k->nctrl ? k->nctrl : 1) * sizeof *k->ctrl);
    if (!k->name || !k->data || !k->drop || !k->ctrl) {
      free(k->name);
      free(k->data);
      free(k->drop);
      free(k->ctrl);
      st_chakra__node__free_unpacked(nd, NULL);
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
      break;
    }
    if (k->ndata)
      memcpy(k->data, nd->data_deps, k->ndata * sizeof *k->data);
    if (k->nctrl)
      memcpy(k->ctrl, nd->ctrl_deps, k->nctrl * sizeof *k->ctrl);
    for (size_t a = 0; a < nd->n_attr; a++) {
      const StChakra__Attr *at_ = nd->attr[a];
      int ok;
      double x = attr_number(at_, &ok);
      const char *an = at_->name ? at_->name : "";
      if (!strcmp(an, "involved_dim") && k->type == CK_COLL) {
        if ((rc = read_involved_dim(path, k, at_, err)))
          break;
        continue;
      }
      if (!ok)
        continue;
      if ((rc = node_attr_number(path, k, an, x, err)))
        break;
    }
    st_chakra__node__free_unpacked(nd, NULL);
    if (rc) {
      rank_release_node(k);
      break;
    }
    r->n++;
  }
  free(data);
  if (!rc && msg == 0)
    rc = st_err_set(err, ST_EINPUT, "trace '%s': empty (no GlobalMetadata message)", path);
  if (rc)
    return rc;
  r->by_id = malloc((r->n ? r->n : 1) * sizeof *r->by_id);
  if (!r->by_id)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  for (size_t i = 0; i < r->n; i++)
    r->by_id[i] = i;
  g_sort_nodes = r->nodes;
  qsort(r->by_id, r->n, sizeof *r->by_id, cmp_by_id);
  for (size_t i = 1; i < r->n; i++)
    if (r->nodes[r->by_id[i]].id == r->nodes[r->by_id[i - 1]].id)
      return st_err_set(err, ST_EINPUT, "trace '%s': node id %llu appears twice", path,
                        (unsigned long long)r->nodes[r->by_id[i]].id);
  return ST_OK;
}

/* ---- ordering ---------------------------------------------------------------- */

/* min-heap of node indices keyed by (start, id) */
typedef struct ck_heap {
  size_t *v;
  size_t n;
  const ck_node *nodes;
} ck_heap;

static int heap_less(const ck_heap *h, size_t a, size_t b)
{
  const ck_node *x = &h->nodes[a], *y = &h->nodes[b];
  if (x->start_us != y->start_us)
    return x->start_us < y->start_us;
  return x->id < y->id;
}

static void heap_push(ck_heap *h, size_t x)
{
  size_t i = h->n++;
  h->v[i] = x;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!heap_less(h, h->v[i], h->v[p]))
      break;
    size_t t = h->v[i];
    h->v[i] = h->v[p];
    h->v[p] = t;
    i = p;
  }
}

static size_t heap_pop(ck_heap *h)
{
  size_t top = h->v[0];
  h->v[0] = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->n && heap_less(h, h->v[l], h->v[m]))
      m = l;
    if (r < h->n && heap_less(h, h->v[r], h->v[m]))
      m = r;
    if (m == i)
      break;
    size_t t = h->v[i];
    h->v[i] = h->v[m];
    h->v[m] = t;
    i = m;
  }
  return top;
}

/* Topological order of the data dependencies; returns node indices. */
int tr__ck_order_nodes(ck_rank *r, size_t **order_out, tr_import_stats *stats, st_err *err)
{
  size_t n = r->n;
  size_t *order = malloc((n ? n : 1) * sizeof *order);
  size_t *succ_first = calloc(n + 1, sizeof *succ_first);
  size_t *heapv = malloc((n ? n : 1) * sizeof *heapv);
  if (!order || !succ_first || !heapv) {
    free(order);
    free(succ_first);
    free(heapv);
    return st_err_set(err, ST_ENOMEM, "out of memory");
  }
  /* successor lists in CSR form over valid data deps */
  for (size_t i = 0; i < n; i++) {
    ck_node *k = &r->nodes[i];
    k->indeg = 0;
    for (size_t d = 0; d < k->ndata; d++) {
      long j = tr__ck_find_node(r, k->data[d]);
      if (j < 0 || (size_t)j == i) {
        stats->deps_dropped++;
        k->drop[d] = 1;
        continue;
      }
      /* duplicate deps count once */
      int dup = 0;
      for (size_t e = 0; e < d && !dup; e++)
        dup = !k->drop[e] && k->data[e] == k->data[d];
      if (dup) {
        k->drop[d] = 1;
        continue;
      }
      k->indeg++;
      succ_first[j + 1]++;
    }
  }
  for (size_t i = 0; i < n; i++)
    succ_first[i + 1] += succ_first[i];
  size_t *succ = malloc((succ_first[n] ? succ_first[n] : 1) * sizeof *succ);
  size_t *fill = calloc(n ? n : 1, sizeof *fill);
  if (!succ || !fill) {
    free(order);
    free(succ_first);
    free(heapv);
    free(succ);
    free(fill);
    return st_err_set(err, ST_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    ck_node *k = &r->nodes[i];
    for (size_t d = 0; d < k->ndata; d++)
      if (!k->drop[d]) {
        long j = tr__ck_find_node(r, k->data[d]);
        succ[succ_first[j] + fill[j]++] = i;
      }
  }
  ck_heap h = {heapv, 0, r->nodes};
  char *done = calloc(n ? n : 1, 1);
  if (!done) {
    free(order);
    free(succ_first);
    free(heapv);
    free(succ);
    free(fill);
    return st_err_set(err, ST_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++)
    if (r->nodes[i].indeg == 0)
      heap_push(&h, i);
  size_t m = 0;
  while (m < n) {
    if (h.n == 0) {
      /* a cycle: release the earliest waiting node, dropping its open deps */
      size_t best = n;
      for (size_t i = 0; i < n; i++)
        if (!done[i] && (best == n || heap_less(&h, i, best)))
          best = i;
      stats->deps_dropped += r->nodes[best].indeg;
      r->nodes[best].indeg = 0;
      heap_push(&h, best);
    }
    size_t x = heap_pop(&h);
    if (done[x])
      continue;
    done[x] = 1;
    r->nodes[x].pos = (long)m;
    order[m++] = x;
    for (size_t s = succ_first[x]; s < succ_first[x + 1]; s++) {
      ck_node *y = &r->nodes[succ[s]];
      if (!done[succ[s]] && y->indeg > 0 && --y->indeg == 0)
        heap_push(&h, succ[s]);
    }
  }
  free(done);
  free(succ_first);
  free(heapv);
  free(succ);
  free(fill);
  *order_out = order;
  return ST_OK;
}
