/* links.c — the platform's links as the engine counts them: their index,
 * the routes between GPUs as link indices, the bytes each flow puts on each
 * link and on each (link, communicator, op), and the per-link results.
 *
 * Bytes are counted per flow on the flow's route (exact), not from
 * SimGrid's link-load plugin, whose cumulated load also counts the latency
 * phase of each comm; the plugin gives the peak load only.  With rank
 * classes, class 0's bytes are also kept apart (class_bytes) and copied to
 * the links of the other classes after the run.
 */
#include <stdlib.h>

#include <simgrid/host.h>
#include <simgrid/link.h>
#include <simgrid/plugins/load.h>
#include <xbt/dynar.h>

#include "eng_int.h"

/* The link-load plugin only measures links it is told to track (it gives the
 * peak load); bytes are counted per flow on the flow's route, because the
 * plugin's cumulated load also counts the latency phase of each comm. */
int eng__links_index(int track)
{
  size_t n = sg_link_count();
  sg_link_t *links = sg_link_list();
  eng__E.num_links = n;
  eng__E.link_bw = calloc(n + 1, sizeof *eng__E.link_bw);
  eng__E.link_shared = calloc(n + 1, 1);
  if (track)
    eng__E.link_bytes = calloc(n + 1, sizeof *eng__E.link_bytes);
  if (!links || !eng__E.link_bw || !eng__E.link_shared || (track && !eng__E.link_bytes)) {
    free(links);
    return ST_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    if (track)
      sg_link_load_track(links[i]);
    eng__E.link_bw[i] = sg_link_get_bandwidth(links[i]);
    eng__E.link_shared[i] = (uint8_t)sg_link_is_shared(links[i]);
    uint64_t key = (uint64_t)(uintptr_t)links[i];
    if (eng__map_put(&eng__E.link_index, key, (void *)(uintptr_t)(i + 1))) {
      free(links);
      return ST_ENOMEM;
    }
  }
  free(links);
  return ST_OK;
}

static int usage_grow(void)
{
  size_t cap = eng__E.usage_cap ? eng__E.usage_cap * 2 : 1024;
  eng__usage *t = calloc(cap, sizeof *t);
  if (!t)
    return -1;
  for (size_t i = 0; i < eng__E.usage_cap; i++) {
    const eng__usage *u = &eng__E.usage[i];
    if (!u->used)
      continue;
    size_t j = (size_t)eng__key4(u->link, (uint32_t)u->comm, u->kind, u->op) & (cap - 1);
    while (t[j].used)
      j = (j + 1) & (cap - 1);
    t[j] = *u;
  }
  free(eng__E.usage);
  eng__E.usage = t;
  eng__E.usage_cap = cap;
  return 0;
}

/* The slot of (link, comm, kind, op), made when new; NULL when out of memory. */
static eng__usage *usage_slot_for(uint32_t link, int32_t comm, uint8_t kind, uint8_t op)
{
  if (2 * (eng__E.usage_len + 1) > eng__E.usage_cap && usage_grow())
    return NULL;
  size_t mask = eng__E.usage_cap - 1;
  for (size_t i = (size_t)eng__key4(link, (uint32_t)comm, kind, op) & mask;; i = (i + 1) & mask) {
    eng__usage *u = &eng__E.usage[i];
    if (!u->used) {
      *u = (eng__usage){link, comm, kind, op, 1, 0.0};
      eng__E.usage_len++;
      return u;
    }
    if (u->link == link && u->comm == comm && u->kind == kind && u->op == op)
      return u;
  }
}

/* The route between two GPUs (or a GPU and a host memory) as link indices,
 * latency and bottleneck bandwidth, cached per pair.  NULL only when out of
 * memory. */
eng__route *eng__route_get(int src_gpu, int dst_gpu)
{
  uint64_t key = eng__key4((uint64_t)src_gpu, (uint64_t)dst_gpu, 0x726f757465ULL, 1);
  eng__route *re = eng__map_get(&eng__E.routes, key);
  if (re && re->src == src_gpu && re->dst == dst_gpu)
    return re;
  xbt_dynar_t d = xbt_dynar_new(sizeof(sg_link_t), NULL);
  plat_route_alias_on(0); /* the real route, not the quotient fabric's (sym_quot.c) */
  sg_host_get_route(eng__E.hosts[src_gpu], eng__E.hosts[dst_gpu], d);
  unsigned long n = xbt_dynar_length(d);
  re = st_arena_alloc(&eng__E.arena, sizeof *re);
  uint32_t *idx = st_arena_alloc(&eng__E.arena, (n + 1) * sizeof *idx);
  if (!re || !idx || eng__map_put(&eng__E.routes, key, re)) {
    xbt_dynar_free(&d);
    plat_route_alias_on(1);
    eng__fail(ST_ENOMEM, "out of memory");
    return NULL;
  }
  re->src = src_gpu;
  re->dst = dst_gpu;
  re->n = 0;
  re->links = idx;
  for (unsigned long i = 0; i < n; i++) {
    sg_link_t l = xbt_dynar_get_as(d, i, sg_link_t);
    uintptr_t v = (uintptr_t)eng__map_get(&eng__E.link_index, (uint64_t)(uintptr_t)l);
    if (v)
      re->links[re->n++] = (uint32_t)(v - 1);
  }
  xbt_dynar_free(&d);
  re->lat_s = sg_host_get_route_latency(eng__E.hosts[src_gpu], eng__E.hosts[dst_gpu]);
  re->bw_Bps = sg_host_get_route_bandwidth(eng__E.hosts[src_gpu], eng__E.hosts[dst_gpu]);
  plat_route_alias_on(1);
  return re;
}

/* Add a flow's bytes to every link of its route, and to the link's share
 * of communicator comm's op (kind, op). */
void eng__account_flow(int src_gpu, int dst_gpu, double bytes, int comm, int kind, int op)
{
  int copied = eng__E.sym.on && !eng__E.sym.comm_collapse[comm];
  if (eng__E.sym.quotient && eng__E.sym.cls[src_gpu] != 0)
    return; /* a group's closed form lists every member's flows: class 0's stand for all */
  if (eng__E.pod_out_bytes && eng__E.rank_group[src_gpu] != eng__E.rank_group[dst_gpu]) {
    /* a flow between pods: out of one, into the other (class 0's flow
     * stands for all C classes' copies, which cross the same pods) */
    double w = copied ? eng__E.sym.C * bytes : bytes;
    eng__E.pod_out_bytes[eng__E.rank_group[src_gpu]] += w;
    eng__E.pod_in_bytes[eng__E.rank_group[dst_gpu]] += w;
  }
  if (!eng__E.link_bytes || src_gpu == dst_gpu)
    return;
  eng__route *re = eng__route_get(src_gpu, dst_gpu);
  if (!re)
    return;
  for (uint32_t i = 0; i < re->n; i++) {
    eng__E.link_bytes[re->links[i]] += bytes;
    if (copied && eng__E.class_bytes)
      eng__E.class_bytes[re->links[i]] += bytes;
    eng__usage *u = usage_slot_for(re->links[i], comm, (uint8_t)kind, (uint8_t)op);
    if (!u) {
      eng__fail(ST_ENOMEM, "out of memory counting link usage");
      return;
    }
    u->bytes += bytes;
  }
}

void eng__account_copy(int src, int dst, double bytes)
{
  if (!eng__E.link_bytes || src == dst)
    return;
  eng__route *re = eng__route_get(src, dst);
  for (uint32_t i = 0; re && i < re->n; i++)
    eng__E.link_bytes[re->links[i]] += bytes;
}

/* A class-0 usage share copied to its images' links and communicators:
 * 0, or -1 (the engine failed) when out of memory. */
static int usage_to_images(const eng__usage *src)
{
  int C = eng__E.sym.C;
  for (int k = 1; k < C; k++) {
    uint32_t y = eng__E.sym.link_img[(size_t)src->link * C + k];
    int32_t c = eng__E.sym.comm_img[(size_t)src->comm * C + k];
    if (y == UINT32_MAX || c < 0)
      continue;
    eng__usage *u = usage_slot_for(y, c, src->kind, src->op);
    if (!u) {
      eng__fail(ST_ENOMEM, "out of memory");
      return -1;
    }
    u->bytes += src->bytes;
  }
  return 0;
}

/* The quotient fabric (sym_quot.c): a link carries its orbit's bytes x C /
 * |orbit|; every (link, communicator) share goes to its images under the
 * translations (an R group is its own image). */
static void expand_quotient(void)
{
  const eng__sym *s = &eng__E.sym;
  int C = s->C;
  size_t L = eng__E.num_links;
  double *orb = calloc(L + 1, sizeof *orb);
  eng__usage *copy = malloc((eng__E.usage_len + 1) * sizeof *copy);
  if (!orb || !copy) {
    free(orb);
    free(copy);
    eng__fail(ST_ENOMEM, "out of memory");
    return;
  }
  for (size_t l = 0; l < L; l++)
    if (s->canon[l] != UINT32_MAX)
      orb[s->canon[l]] += eng__E.link_bytes[l];
  for (size_t l = 0; l < L; l++)
    if (s->canon[l] != UINT32_MAX)
      eng__E.link_bytes[l] = orb[s->canon[l]] * C / s->orb_size[l];
  size_t n = 0;
  for (size_t i = 0; i < eng__E.usage_cap; i++)
    if (eng__E.usage[i].used && eng__E.usage[i].comm >= 0)
      copy[n++] = eng__E.usage[i];
  for (size_t i = 0; i < n && !eng__E.failed; i++)
    if (usage_to_images(&copy[i]))
      break;
  free(orb);
  free(copy);
}

/* Class k's links carry copies of class 0's bytes and usage; their peak
 * load is their original's. */
void eng__links_expand_classes(void)
{
  if (!eng__E.sym.on || !eng__E.link_bytes)
    return;
  if (eng__E.sym.quotient) {
    expand_quotient();
    return;
  }
  int C = eng__E.sym.C;
  for (size_t l = 0; l < eng__E.num_links; l++)
    for (int k = 1; k < C; k++) {
      uint32_t y = eng__E.sym.link_img[l * C + k];
      if (y != UINT32_MAX)
        eng__E.link_bytes[y] += eng__E.class_bytes[l];
    }
  size_t n = 0;
  eng__usage *copy = malloc((eng__E.usage_len + 1) * sizeof *copy);
  if (!copy) {
    eng__fail(ST_ENOMEM, "out of memory");
    return;
  }
  for (size_t i = 0; i < eng__E.usage_cap; i++)
    if (eng__E.usage[i].used && eng__E.usage[i].comm >= 0 &&
        !eng__E.sym.comm_collapse[eng__E.usage[i].comm])
      copy[n++] = eng__E.usage[i];
  for (size_t i = 0; i < n && !eng__E.failed; i++)
    if (usage_to_images(&copy[i]))
      break;
  free(copy);
}

/* By link, then most bytes first; ties in a fixed order. */
static int cmp_usage(const void *a, const void *b)
{
  const sim_link_usage *x = a, *y = b;
  if (x->link != y->link)
    return x->link < y->link ? -1 : 1;
  if (x->bytes != y->bytes)
    return x->bytes > y->bytes ? -1 : 1;
  if (x->comm != y->comm)
    return x->comm < y->comm ? -1 : 1;
  if (x->kind != y->kind)
    return x->kind < y->kind ? -1 : 1;
  return (x->op > y->op) - (x->op < y->op);
}

/* result: the (link, comm, op) shares of the links that made it into r->links
 * (row[] maps an engine link index to its row, or UINT32_MAX). */
static void collect_usage(const uint32_t *row, size_t nrow)
{
  sim_result *r = eng__E.res;
  r->link_usage = calloc(eng__E.usage_len + 1, sizeof *r->link_usage);
  if (!r->link_usage)
    return;
  for (size_t i = 0; i < eng__E.usage_cap; i++) {
    const eng__usage *u = &eng__E.usage[i];
    if (!u->used || !(u->bytes > 0) || u->link >= nrow || row[u->link] == UINT32_MAX)
      continue;
    r->link_usage[r->num_link_usage++] =
        (sim_link_usage){row[u->link], u->comm, u->kind, u->op, u->bytes};
  }
  qsort(r->link_usage, r->num_link_usage, sizeof *r->link_usage, cmp_usage);
}

void eng__links_collect(void)
{
  size_t n = sg_link_count();
  sg_link_t *links = sg_link_list();
  sim_result *r = eng__E.res;
  r->links = calloc(n + 1, sizeof *r->links);
  uint32_t *row = malloc((n + 1) * sizeof *row);
  if (!r->links || !row) {
    free(row);
    free(links);
    return;
  }
  for (size_t i = 0; i < n; i++)
    row[i] = UINT32_MAX;
  for (size_t i = 0; i < n; i++) {
    uintptr_t v = (uintptr_t)eng__map_get(&eng__E.link_index, (uint64_t)(uintptr_t)links[i]);
    double bytes = v ? eng__E.link_bytes[v - 1] : 0;
    if (!(bytes > 0))
      continue;
    row[v - 1] = (uint32_t)r->num_links;
    sim_link_stats *l = &r->links[r->num_links++];
    l->name = st_arena_strdup(&r->arena, sg_link_get_name(links[i]));
    l->bandwidth_Bps = sg_link_get_bandwidth(links[i]);
    /* a link every class crosses ran at 1/C of its bandwidth (see eng__sym_setup),
     * a quotient fabric's canonical link at |orbit|/C */
    double scale = !eng__E.sym.on         ? 1
                   : eng__E.sym.quotient ? eng__E.sym.bw_scale[v - 1]
                   : eng__E.sym.link_fixed[v - 1] ? eng__E.sym.C
                                                  : 1;
    l->bytes = bytes;
    /* the time the link spends moving these bytes at full rate */
    l->busy_s = l->bandwidth_Bps > 0 ? bytes / l->bandwidth_Bps : 0;
    sg_link_t src = links[i];
    if (eng__E.sym.on && eng__E.sym.link_src[v - 1] != UINT32_MAX && eng__E.sym.link_src[v - 1] < n)
      src = links[eng__E.sym.link_src[v - 1]];
    double peak = sg_link_get_max_instantaneous_load(src), src_bw = sg_link_get_bandwidth(src);
    l->peak_util = src_bw > 0 ? peak / src_bw : 0;
    l->bandwidth_Bps *= scale;
    l->busy_s = l->bandwidth_Bps > 0 ? bytes / l->bandwidth_Bps : 0;
  }
  collect_usage(row, n);
  free(row);
  free(links);
}

