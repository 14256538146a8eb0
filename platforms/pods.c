/* pods.c — clusters of pods: whole clusters (each a preset or a spec of
 * its own) joined by their links to a data-centre (or wide-area) network.
 *
 * A spec with "pods" lists them in GPU order (docs/platforms.md, "Clusters
 * of pods"); each keeps its own devices, nodes and fabric, and has
 * dc_links links of dc_link_Bps to the data-centre core, which is taken as
 * non-blocking.  Invariants:
 *  - every pod has the same GPUs per node (plat_gpu_node(), g / gpus per
 *    node, is the node arithmetic of every stage), NICs per node, kind of
 *    intra-node fabric, PCIe presence and switch latency (the collective
 *    layer lays rings per node from one of each; a route's latency is
 *    links + switches x one switch latency);
 *  - each pod is also node group k of the cluster (groups.c), so a GPU's
 *    device, its compute price, the views a collective is tuned on, MFU and
 *    the memory check are per pod with no code of their own here;
 *  - link ids: pod k's own links, in its own layout (topo.c), from
 *    pods[k].link_base, pod after pod; then 2 per pod for its data-centre
 *    links (up: out of the pod, down: into it).  A route inside a pod is the
 *    pod's route; between pods it goes up the source pod's fabric to its
 *    top (plat__route_up), out over the source pod's links, in over the
 *    destination pod's, and down (plat__route_down).  Nothing per pair.
 * The cluster's own fields are pod 0's where a pod has them (device, node
 * links), fabric_kind is PLAT_FABRIC_PODS and in_network_reduction is off
 * (SHARP trees do not span the data-centre network).
 */
#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plat_int.h"

#define DC_COUNT_MAX 65536

int plat_gpu_pod(const plat_cluster *c, int gpu)
{
  return c->num_pods > 0 ? plat_gpu_group(c, gpu) : 0;
}

/* ---- spec ------------------------------------------------------------------ */

/* A pod's links as given at one place: each key where present. */
typedef struct dc_spec {
  int has_count, has_bps, has_lat;
  long count;
  double Gbps, lat_us;
} dc_spec;

static int dc_parse(const st_jrd *j, const st_jpath *at, const cJSON *o, dc_spec *d)
{
  static const char *const keys[] = {"count", "Gbps", "lat_us", NULL};
  const cJSON *v[3];
  int rc = st_jrd_members(j, at, o, keys, -1, v);
  if (rc)
    return rc;
  if (v[0] && (rc = st_jrd_int(j, at, v[0], 1, DC_COUNT_MAX, &d->count)))
    return rc;
  /* rates as for NICs: > 0, up to 8e6 Gb/s; latencies up to 1 s (1e6 us) */
  if (v[1] && (rc = st_jrd_number(j, at, v[1], ST_NUM_REAL | ST_NUM_OPEN_LO, 0, 8e6, &d->Gbps)))
    return rc;
  if (v[2] && (rc = st_jrd_number(j, at, v[2], ST_NUM_REAL, 0, 1e6, &d->lat_us)))
    return rc;
  d->has_count |= v[0] != NULL;
  d->has_bps |= v[1] != NULL;
  d->has_lat |= v[2] != NULL;
  return ST_OK;
}

/* The pod's links: its own keys, else the top level's. */
static int dc_merge(const st_jrd *j, const st_jpath *at, const dc_spec *top, const dc_spec *own,
                    plat_pod *p)
{
  static const char *const names[3] = {"count", "Gbps", "lat_us"};
  int has[3] = {own->has_count || top->has_count, own->has_bps || top->has_bps,
                own->has_lat || top->has_lat};
  for (int k = 0; k < 3; k++)
    if (!has[k])
      return st_jrd_fail(j, at,
                         "pod_links: key '%s' is missing (give it here or in the top-level "
                         "pod_links)",
                         names[k]);
  p->dc_links = (int)(own->has_count ? own->count : top->count);
  p->dc_link_Bps = (own->has_bps ? own->Gbps : top->Gbps) * 1e9 / 8;
  p->dc_lat_s = (own->has_lat ? own->lat_us : top->lat_us) * 1e-6;
  return ST_OK;
}

/* The cluster a pod entry names: a preset[:NODES] or a spec file, a path
 * relative to the spec's folder. */
static int pod_load(const char *what, int i, const char *arg, const char *dir, plat_cluster **out,
                    st_err *err)
{
  if (st_str_ends_with(arg, ".xml"))
    return st_err_set(err, ST_EINPUT,
                      "%s: pods[%d]: 'cluster' is '%s': a SimGrid XML platform "
                      "cannot be a pod (its routes are its own; give a preset or a spec)",
                      what, i, arg);
  const char *colon = strrchr(arg, ':');
  size_t base = colon && !strchr(colon, '/') ? (size_t)(colon - arg) : strlen(arg);
  int file = base >= 5 && !strncmp(arg + base - 5, ".json", 5);
  char path[4096];
  if (file && dir && strcmp(dir, ".") && arg[0] != '/')
    snprintf(path, sizeof path, "%s/%s", dir, arg);
  else
    snprintf(path, sizeof path, "%s", arg);
  int rc = plat_cluster_load(path, out, err);
  if (rc)
    st_err_prefix(err, "%s: pods[%d].cluster: ", what, i);
  return rc;
}

/* What a pod may be, and what every pod must share with pod 0. */
static int pod_check(const char *what, int i, const plat_cluster *p, const plat_cluster *p0,
                     st_err *err)
{
  const char *why = NULL;
  if (p->num_pods > 0)
    why = "a pod cannot itself be a cluster of pods";
  else if (p->num_groups > 0)
    why = "a pod of node groups is not supported (give each kind of node a pod of its own)";
  else if (p->fabric_kind == PLAT_FABRIC_TORUS && p->dcn_nics < 1)
    return st_err_set(err, ST_EINPUT,
                      "%s: pods[%d] ('%s'): its fabric is a torus without node.dcn; a torus pod "
                      "reaches the data-centre network through its hosts' NICs (node.dcn: "
                      "count, Gbps, lat_us)",
                      what, i, p->name);
  else if (p->fabric_kind != PLAT_FABRIC_SWITCH && p->fabric_kind != PLAT_FABRIC_FATTREE &&
           p->fabric_kind != PLAT_FABRIC_RAIL_FATTREE && p->fabric_kind != PLAT_FABRIC_TORUS)
    return st_err_set(err, ST_EINPUT,
                      "%s: pods[%d] ('%s'): its fabric is a %s; a pod reaches the "
                      "data-centre network from the top of a switch or fat-tree fabric, or "
                      "from a torus's hosts",
                      what, i, p->name, plat_fabric_kind_name(p->fabric_kind));
  else if (p->nic_Bps <= 0)
    why = "its nodes have no NICs (node.nics) to reach the data-centre network";
  if (why)
    return st_err_set(err, ST_EINPUT, "%s: pods[%d] ('%s'): %s", what, i, p->name, why);
  if (!p0)
    return ST_OK;
  if (p->gpus_per_node != p0->gpus_per_node)
    return st_err_set(err, ST_EINPUT,
                      "%s: pods[%d] ('%s'): its nodes have %d GPUs, pod 0's have "
                      "%d: the pods of one cluster have the same GPUs per node (GPU g is on node "
                      "g / GPUs per node everywhere)",
                      what, i, p->name, p->gpus_per_node, p0->gpus_per_node);
  /* NICs, the intra-node kind and PCIe may differ: each pod lays out and
   * routes its own nodes, and a route between pods joins the two pods' own
   * routes to their tops */
  if (p->switch_lat_s != p0->switch_lat_s)
    return st_err_set(err, ST_EINPUT,
                      "%s: pods[%d] ('%s'): fabric.switch_lat_us is %g, pod 0's is "
                      "%g: the pods of one cluster have one switch latency",
                      what, i, p->name, p->switch_lat_s * 1e6, p0->switch_lat_s * 1e6);
  return ST_OK;
}

/* A copy of cluster p (its own spec text) for a repeated pod. */
static plat_cluster *pod_copy(const plat_cluster *p)
{
  plat_cluster *c = malloc(sizeof *c);
  if (!c)
    return NULL;
  *c = *p;
  c->spec_json = p->spec_json ? strdup(p->spec_json) : NULL;
  if (p->spec_json && !c->spec_json) {
    free(c);
    return NULL;
  }
  return c;
}

/* Room for one more pod in *v (n of them, *cap allocated). */
static int pods_grow(plat_pod **v, int n, int *cap)
{
  if (n < *cap)
    return ST_OK;
  int nc = *cap ? 2 * *cap : 4;
  plat_pod *x = realloc(*v, (size_t)nc * sizeof *x);
  if (!x)
    return ST_ENOMEM;
  memset(x + *cap, 0, (size_t)(nc - *cap) * sizeof *x);
  *v = x;
  *cap = nc;
  return ST_OK;
}

/* Entry i of the pods array: its cluster, name, count and links, appended
 * (count times) to c->pods. */
static int entry_parse(const st_jrd *j, const char *what, const st_jpath *at_pods, int i,
                       const cJSON *e, const dc_spec *top, const char *dir, plat_cluster *c,
                       int *cap)
{
  static const char *const keys[] = {"cluster", "spec", "name", "count", "pod_links", NULL};
  st_jpath at = {at_pods, NULL, i};
  const cJSON *v[5];
  int rc = st_jrd_members(j, &at, e, keys, -1, v);
  if (rc)
    return rc;
  if (!v[0] == !v[1])
    return st_jrd_fail(j, &at,
                       v[0] ? "give 'cluster' or 'spec', not both"
                            : "key 'cluster' is missing (a preset[:NODES] or a spec "
                              "file; or 'spec', an inline spec)");
  long count = 1;
  st_jpath at_l = {&at, "pod_links", 0};
  if (v[3] && (rc = st_jrd_int(j, &at, v[3], 1, 1 << 20, &count)))
    return rc;
  const char *name = NULL;
  if (v[2] && (rc = st_jrd_string(j, &at, v[2], &name)))
    return rc;
  if (name && strlen(name) > 40)
    return st_jrd_fail(j, &at, "'name' is longer than 40 characters");
  dc_spec own = {0};
  if (v[4] && (rc = dc_parse(j, &at_l, v[4], &own)))
    return rc;
  plat_pod proto = {0};
  if ((rc = dc_merge(j, &at, top, &own, &proto)))
    return rc;
  plat_cluster *pc = NULL;
  if (v[0]) {
    const char *arg = NULL;
    if ((rc = st_jrd_string(j, &at, v[0], &arg)) || (rc = pod_load(what, i, arg, dir, &pc, j->err)))
      return rc;
  } else {
    if (!cJSON_IsObject(v[1]))
      return st_jrd_fail(j, &at, "'spec' is %s, expected an object (a cluster spec)",
                         st_json_type_name(v[1]));
    char *text = cJSON_PrintUnformatted(v[1]);
    char w[4400];
    snprintf(w, sizeof w, "%s: pods[%d].spec", what, i);
    rc = text ? plat__spec_parse(w, text, 0, dir, &pc, j->err) : st_jrd_oom(j);
    free(text);
    if (rc)
      return rc;
  }
  rc = pod_check(what, i, pc, c->num_pods ? c->pods[0].c : NULL, j->err);
  const plat_cluster *first = pc;
  for (long k = 0; !rc && k < count; k++) {
    if ((rc = pods_grow(&c->pods, c->num_pods, cap)))
      break;
    plat_pod *p = &c->pods[c->num_pods];
    *p = proto;
    p->c = k == 0 ? pc : pod_copy(first);
    if (!p->c) {
      rc = ST_ENOMEM;
      break;
    }
    if (k == 0)
      pc = NULL; /* owned by the pod now */
    c->num_pods++;
    if (!name)
      snprintf(p->name, sizeof p->name, "pod%d", c->num_pods - 1);
    else if (count > 1)
      snprintf(p->name, sizeof p->name, "%s-%ld", name, k);
    else
      snprintf(p->name, sizeof p->name, "%s", name);
  }
  plat_cluster_destroy(pc);
  if (rc == ST_ENOMEM)
    return st_jrd_oom(j);
  return rc;
}

/* The resolved spec (results' /config): the name, and every pod expanded
 * with its spec and links. */
static int pods_spec_json(plat_cluster *c, const cJSON *root, st_err *err)
{
  cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "pods");
  int bad = !o || !arr || !cJSON_AddStringToObject(o, "name", c->name);
  const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "description");
  if (!bad && cJSON_IsString(d))
    bad = !cJSON_AddStringToObject(o, "description", d->valuestring);
  for (int k = 0; !bad && k < c->num_pods; k++) {
    const plat_pod *p = &c->pods[k];
    cJSON *e = cJSON_CreateObject(), *l = cJSON_CreateObject();
    cJSON *spec = cJSON_Parse(p->c->spec_json);
    /* each child goes to its parent at once, so that deleting e frees all */
    int own_l = 1, own_spec = 1;
    bad = !e || !l || !spec || !cJSON_AddStringToObject(e, "name", p->name);
    if (!bad) {
      bad = !cJSON_AddItemToObject(e, "spec", spec);
      own_spec = bad;
    }
    if (!bad) {
      bad = !cJSON_AddItemToObject(e, "pod_links", l);
      own_l = bad;
    }
    bad = bad || !cJSON_AddNumberToObject(l, "count", p->dc_links) ||
          !cJSON_AddNumberToObject(l, "Gbps", p->dc_link_Bps * 8 / 1e9) ||
          !cJSON_AddNumberToObject(l, "lat_us", p->dc_lat_s * 1e6);
    if (own_spec)
      cJSON_Delete(spec);
    if (own_l)
      cJSON_Delete(l);
    if (bad || !cJSON_AddItemToArray(arr, e)) {
      cJSON_Delete(e);
      bad = 1;
    }
  }
  if (!bad)
    bad = !(c->spec_json = cJSON_PrintUnformatted(o));
  cJSON_Delete(o);
  return bad ? st_err_set(err, ST_ENOMEM, "out of memory") : ST_OK;
}

/* The whole from its pods: nodes, groups, links, the cluster's fields. */
static int pods_finish(plat_cluster *c, const char *what, st_err *err)
{
  int P = c->num_pods;
  if (!(c->groups = calloc((size_t)P, sizeof *c->groups)))
    return st_err_set(err, ST_ENOMEM, "out of memory");
  c->num_groups = P;
  long nodes = 0, links = 0;
  for (int k = 0; k < P; k++) {
    plat_pod *p = &c->pods[k];
    p->first_node = (int)nodes;
    p->num_nodes = p->c->num_nodes;
    p->link_base = links;
    nodes += p->num_nodes;
    links += p->c->num_links;
    plat_group *g = &c->groups[k];
    plat__group_from(g, p->c);
    snprintf(g->name, sizeof g->name, "%s", p->name);
    g->first_node = p->first_node;
    g->first_gpu = p->first_node * p->c->gpus_per_node; /* (one GPUs per node for all pods) */
    g->num_nodes = p->num_nodes;
  }
  long gpus = nodes * c->pods[0].c->gpus_per_node;
  if (gpus > (1L << 24))
    return st_err_set(err, ST_EINPUT, "%s: the pods have %ld GPUs in all, more than %ld", what,
                      gpus, 1L << 24);
  if (links + 2L * P > INT_MAX)
    return st_err_set(err, ST_EINPUT, "%s: %ld links is too many", what, links + 2L * P);
  const plat_cluster *p0 = c->pods[0].c;
  c->num_nodes = c->default_nodes = (int)nodes;
  c->gpus_per_node = p0->gpus_per_node;
  c->num_gpus = (int)gpus;
  c->nics_per_node = p0->nics_per_node;
  c->intra_kind = p0->intra_kind;
  plat_group_apply(c, &c->groups[0]);
  c->fabric_kind = PLAT_FABRIC_PODS;
  c->switch_lat_s = p0->switch_lat_s;
  c->in_network_reduction = 0;
  for (int i = 0; i < 4; i++)
    c->oversub[i] = 1;
  c->num_links = (int)(links + 2L * P);
  return ST_OK;
}

int plat__pods_parse(const char *what, const cJSON *root, const char *dir, plat_cluster **out,
                     st_err *err)
{
  st_jrd j = {what, "docs/platforms.md", err};
  static const char *const beside[] = {"nodes",  "device", "device_memory_GB", "node", "fabric",
                                       "groups", NULL};
  for (int i = 0; beside[i]; i++)
    if (cJSON_GetObjectItemCaseSensitive(root, beside[i]))
      return st_jrd_fail(&j, NULL, "key '%s' cannot stand beside 'pods': each pod has its own",
                         beside[i]);
  static const char *const keys[] = {"name", "description", "pods", "pod_links", NULL};
  const cJSON *v[4];
  int rc = st_jrd_members(&j, NULL, root, keys, -1, v);
  if (rc)
    return rc;
  const char *name = NULL;
  if (!v[0])
    return st_jrd_missing(&j, NULL, "name");
  st_jpath at_l = {NULL, "pod_links", 0}, at_p = {NULL, "pods", 0};
  if ((rc = st_jrd_string(&j, NULL, v[0], &name)))
    return rc;
  dc_spec top = {0};
  if (v[3] && (rc = dc_parse(&j, &at_l, v[3], &top)))
    return rc;
  if (!cJSON_IsArray(v[2]) || cJSON_GetArraySize(v[2]) < 1)
    return st_jrd_fail(&j, &at_p, "is %s, expected an array of pods",
                       cJSON_IsArray(v[2]) ? "empty" : st_json_type_name(v[2]));
  plat_cluster *c = calloc(1, sizeof *c);
  if (!c)
    return st_jrd_oom(&j);
  snprintf(c->name, sizeof c->name, "%s", name);
  int cap = 0, i = 0;
  for (const cJSON *e = v[2]->child; e && !rc; e = e->next, i++)
    rc = entry_parse(&j, what, &at_p, i, e, &top, dir, c, &cap);
  if (!rc && c->num_pods < 2)
    rc = st_jrd_fail(&j, &at_p,
                     "has one pod; a cluster of pods needs two or more (give 'count' "
                     "or another pod; one pod alone is its own spec)");
  if (!rc)
    rc = pods_finish(c, what, err);
  if (!rc)
    rc = pods_spec_json(c, root, err);
  if (rc) {
    plat_cluster_destroy(c);
    return rc;
  }
  *out = c;
  return ST_OK;
}

/* ---- links and routes -------------------------------------------------------- */

static long dc_base(const plat_cluster *c)
{
  const plat_pod *last = &c->pods[c->num_pods - 1];
  return last->link_base + last->c->num_links;
}

void plat__pods_layout(const plat_cluster *c, plat__lay *L)
{
  L->dc_base = dc_base(c);
  L->total = L->dc_base + 2L * c->num_pods;
}

/* Shift ids[from..n-1] by base. */
static void shift(int *ids, int from, int n, long base)
{
  for (int i = from; i < n; i++)
    ids[i] += (int)base;
}

int plat__pods_route_ids(const plat_cluster *c, int s, int d, int *ids, int *switches)
{
  int ps = plat_gpu_pod(c, s), pd = plat_gpu_pod(c, d), gpn = c->gpus_per_node;
  const plat_pod *a = &c->pods[ps], *b = &c->pods[pd];
  int ga = a->first_node * gpn, gb = b->first_node * gpn;
  plat__lay La, Lb;
  plat__layout(a->c, &La);
  if (ps == pd) {
    int n = plat__route_ids(a->c, &La, s - ga, d - ga, ids, switches);
    if (n > 0)
      shift(ids, 0, n, a->link_base);
    return n;
  }
  int n = 0, up = 0, down = 0;
  if (plat__route_up(a->c, &La, s - ga, ids, &n, &up) < 0 || n + 2 > PLAT_ROUTE_MAX)
    return -1;
  shift(ids, 0, n, a->link_base);
  long dc = dc_base(c);
  ids[n++] = (int)(dc + 2L * ps);     /* out of the source pod */
  ids[n++] = (int)(dc + 2L * pd + 1); /* into the destination pod */
  int from = n;
  plat__layout(b->c, &Lb);
  if (plat__route_down(b->c, &Lb, d - gb, ids, &n, &down) < 0)
    return -1;
  shift(ids, from, n, b->link_base);
  *switches = up + down;
  return n;
}

void plat__pods_link_info(const plat_cluster *c, const plat__lay *L, long id, plat_link_info *o)
{
  memset(o, 0, sizeof *o);
  if (id >= L->dc_base) {
    long r = id - L->dc_base;
    const plat_pod *p = &c->pods[r / 2];
    snprintf(o->name, sizeof o->name, "pod%ld.dc-%s", r / 2, r % 2 ? "down" : "up");
    o->kind = PLAT_LINK_POD;
    o->bw_Bps = p->dc_links * p->dc_link_Bps;
    o->lat_s = p->dc_lat_s;
    return;
  }
  int lo = 0, hi = c->num_pods - 1; /* the last pod whose links start at or before id */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (c->pods[mid].link_base <= id)
      lo = mid;
    else
      hi = mid - 1;
  }
  const plat_pod *p = &c->pods[lo];
  plat__lay Lp;
  plat__layout(p->c, &Lp);
  char pfx[16];
  snprintf(pfx, sizeof pfx, "pod%d.", lo);
  plat__link_info_at(p->c, &Lp, id - p->link_base, (long)p->first_node * c->gpus_per_node,
                     p->first_node, pfx, o);
}

double plat__pods_bisection_Bps(const plat_cluster *c)
{
  /* the cut across the data-centre network, pods [0, P/2) against the rest:
   * the smaller side's links */
  double a = 0, b = 0;
  for (int k = 0; k < c->num_pods; k++) {
    double cap = c->pods[k].dc_links * c->pods[k].dc_link_Bps;
    const plat_cluster *p = c->pods[k].c;
    if (p->fabric_kind == PLAT_FABRIC_TORUS) /* a torus leaves by its hosts' NICs */
      cap = fmin(cap, (double)p->num_nodes * p->dcn_nics * p->dcn_Bps);
    if (k < c->num_pods / 2)
      a += cap;
    else
      b += cap;
  }
  return fmin(a, b);
}

long plat__pods_switch_count(const plat_cluster *c)
{
  long s = 0;
  for (int k = 0; k < c->num_pods; k++)
    s += plat_cluster_switch_count(c->pods[k].c);
  return s;
}
