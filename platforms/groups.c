/* groups.c — clusters of node groups: nodes of more than one kind (an A100
 * part and an H100 part, older GPUs beside new ones) on one fabric.
 *
 * A spec with "groups" lists them in GPU order; group i holds nodes
 * first_node .. first_node + num_nodes - 1 and has its own device, intra-node
 * fabric (kind and links), NICs (count and rate), PCIe and host power
 * (docs/platforms.md, "Node groups").  The fabric is the cluster's, cabled
 * for the widest node: every node has nics_per_node = the most NICs of any
 * group as fabric ports, and a group with fewer NICs leaves the others
 * unused (its GPU g reaches NIC g x its NICs / GPUs per node); every GPU has
 * as many intra-node link slots as the richest kind needs (topo.c), a kind
 * with fewer leaving some unused, and PCIe links where any group models
 * PCIe (crossed only by the GPUs of groups that do).  GPUs per node stay one
 * per cluster: a GPU's node is g / gpus_per_node everywhere.  plat__link_info()
 * and the routes ask the group of a link's node what it is and is worth.
 *
 * The cluster's own fields (device, intra_*, nic_*, pcie_*, nvls,
 * host_power_W) are group 0's, so code that reads one device still gets a
 * real one, except nics_per_node, which is the fabric's ports per node (the
 * most of any group); code that must see the difference asks
 * plat_gpu_device(), plat_cluster_view() (a communicator's: its groups'
 * NICs and kind) or plat_group_apply().
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plat_int.h"

/* ---- lookups -------------------------------------------------------------- */

/* The last group whose first node (by_gpu: first GPU) is at most v. */
static int group_at(const plat_cluster *c, int v, int by_gpu)
{
  if (c->num_groups <= 1)
    return 0;
  int lo = 0, hi = c->num_groups - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if ((by_gpu ? c->groups[mid].first_gpu : c->groups[mid].first_node) <= v)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

int plat_node_group(const plat_cluster *c, int node) { return group_at(c, node, 0); }

int plat_gpu_group(const plat_cluster *c, int gpu) { return group_at(c, gpu, 1); }

int plat_gpu_node(const plat_cluster *c, int gpu)
{
  if (c->num_groups <= 1)
    return gpu / c->gpus_per_node;
  const plat_group *g = &c->groups[plat_gpu_group(c, gpu)];
  return g->first_node + (gpu - g->first_gpu) / g->gpus_per_node;
}

int plat_node_first_gpu(const plat_cluster *c, int node)
{
  if (c->num_groups <= 1)
    return node * c->gpus_per_node;
  const plat_group *g = &c->groups[plat_node_group(c, node)];
  return g->first_gpu + (node - g->first_node) * g->gpus_per_node;
}

int plat_node_gpus(const plat_cluster *c, int node)
{
  return c->num_groups <= 1 ? c->gpus_per_node : c->groups[plat_node_group(c, node)].gpus_per_node;
}

int plat_gpu_local(const plat_cluster *c, int gpu)
{
  return gpu - plat_node_first_gpu(c, plat_gpu_node(c, gpu));
}

int plat_gpus_per_node_uniform(const plat_cluster *c)
{
  for (int k = 1; k < c->num_groups; k++)
    if (c->groups[k].gpus_per_node != c->groups[0].gpus_per_node)
      return 0;
  return c->gpus_per_node;
}

const plat_device *plat_gpu_device(const plat_cluster *c, int gpu)
{
  return c->num_groups <= 1 ? &c->device : &c->groups[plat_gpu_group(c, gpu)].device;
}

/* What a group's nodes are worth, field by field: the same names in
 * plat_group and plat_cluster. */
#define GROUP_WORTH(X)                                                                     \
  X(device) X(intra_link_Bps) X(intra_links_per_gpu) X(intra_Bps) X(intra_lat_s) X(nvls)  \
  X(nic_Bps) X(nic_lat_s) X(pcie_Bps) X(pcie_lat_s) X(host_power_W) X(host_link_Bps)     \
  X(host_link_lat_s) X(host_mem_bytes) X(host_mem_Bps) X(host_adam_params_per_s)
/* ... and what its nodes are made of (the cluster's own nics_per_node is the
 * fabric's ports: plat__groups_parse sets it after applying group 0) */
#define GROUP_SHAPE(X) X(gpus_per_node) X(nics_per_node) X(intra_kind)

void plat_group_apply(plat_cluster *v, const plat_group *g)
{
#define TO_CLUSTER(f) v->f = g->f;
  GROUP_WORTH(TO_CLUSTER)
  GROUP_SHAPE(TO_CLUSTER)
#undef TO_CLUSTER
}

int plat_node_nics(const plat_cluster *c, long node)
{
  return c->num_groups > 1 ? c->groups[plat_node_group(c, (int)node)].nics_per_node
                           : c->nics_per_node;
}

int plat_node_intra_kind(const plat_cluster *c, long node)
{
  return c->num_groups > 1 ? c->groups[plat_node_group(c, (int)node)].intra_kind : c->intra_kind;
}

int plat_node_pcie(const plat_cluster *c, long node)
{
  return (c->num_groups > 1 ? c->groups[plat_node_group(c, (int)node)].pcie_Bps : c->pcie_Bps) > 0;
}

int plat_any_pcie(const plat_cluster *c)
{
  int any = c->pcie_Bps > 0;
  for (int k = 0; k < c->num_groups && c->num_groups > 1; k++)
    any |= c->groups[k].pcie_Bps > 0;
  return any;
}

/* The group's worth from a cluster parsed with its node. */
void plat__group_from(plat_group *g, const plat_cluster *t)
{
#define TO_GROUP(f) g->f = t->f;
  GROUP_WORTH(TO_GROUP)
  GROUP_SHAPE(TO_GROUP)
#undef TO_GROUP
}

/* The peak a device has for dtype, bf16 where it has none of that. */
static double dev_peak(const plat_device *d)
{
  return d->peak_flops[WL_DTYPE_BF16] > 0 ? d->peak_flops[WL_DTYPE_BF16]
                                          : d->peak_flops[WL_DTYPE_FP32];
}

void plat_cluster_view(const plat_cluster *c, const int32_t *gpus, int n, plat_cluster *v)
{
  *v = *c;
  if (c->num_groups <= 1 || n <= 0)
    return;
  int first = plat_gpu_group(c, gpus[0]), mixed = 0;
  for (int i = 1; i < n && !mixed; i++)
    mixed = plat_gpu_group(c, gpus[i]) != first;
  if (c->num_pods > 0 && !mixed) { /* one pod: the pod as it is, fabric and all */
    *v = *c->pods[first].c;
    return;
  }
  if (c->fabric_kind == PLAT_FABRIC_XML) {
    /* a SimGrid XML platform's groups are devices only (simtrain.groups):
     * its links are the file's, and the cluster's link fields stay */
    v->device = c->groups[first].device;
    for (int i = 1; i < n; i++) {
      const plat_device *d = &c->groups[plat_gpu_group(c, gpus[i])].device;
      if (dev_peak(d) < dev_peak(&v->device))
        v->device = *d;
    }
    return;
  }
  plat_group_apply(v, &c->groups[first]);
  if (!mixed)
    return;
  /* Across groups a collective library settles on what every member can do
   * (NCCL's graph search keeps the speed all ranks reach): the least of each
   * rate, the most of each latency, NVLS only where all have it, and the
   * slowest device's tuning.  Taking a group twice changes nothing, so only
   * runs of members in one group (a node's, say) are skipped. */
  for (int i = 1, prev = first; i < n; i++) {
    int k = plat_gpu_group(c, gpus[i]);
    if (k == prev)
      continue;
    prev = k;
    const plat_group *g = &c->groups[k];
    if (dev_peak(&g->device) < dev_peak(&v->device))
      v->device = g->device;
    v->intra_link_Bps = fmin(v->intra_link_Bps, g->intra_link_Bps);
    v->intra_Bps = fmin(v->intra_Bps, g->intra_Bps);
    v->intra_lat_s = fmax(v->intra_lat_s, g->intra_lat_s);
    v->nvls = v->nvls && g->nvls;
    v->nic_Bps = fmin(v->nic_Bps, g->nic_Bps);
    v->nic_lat_s = fmax(v->nic_lat_s, g->nic_lat_s);
    v->pcie_Bps = fmin(v->pcie_Bps, g->pcie_Bps);
    v->pcie_lat_s = fmax(v->pcie_lat_s, g->pcie_lat_s);
    /* channels by the fewest NICs; nodes of unlike intra-node kinds have
     * their members ordered by index, as on a switch (each hop then takes
     * its node's own route: two NVLink hops where a cube-mesh has no
     * direct lane) */
    if (g->nics_per_node < v->nics_per_node)
      v->nics_per_node = g->nics_per_node;
    if (g->intra_kind != v->intra_kind)
      v->intra_kind = PLAT_INTRA_NVSWITCH;
  }
}

double plat_dev_peak(const plat_device *d, void *dtype) { return d->peak_flops[*(int *)dtype]; }
double plat_dev_hbm(const plat_device *d, void *u)
{
  (void)u;
  return d->hbm_bytes;
}
double plat_dev_tdp(const plat_device *d, void *u)
{
  (void)u;
  return d->tdp_W;
}
double plat_dev_price(const plat_device *d, void *u)
{
  (void)u;
  return d->price_usd_per_gpu_hour;
}

double plat_gpus_sum(const plat_cluster *c, int n,
                     double (*per_gpu)(const plat_device *, void *), void *u)
{
  if (c->num_groups <= 1)
    return n * per_gpu(&c->device, u);
  if (n > c->num_gpus)
    n = c->num_gpus;
  double s = 0;
  for (int k = 0; k < c->num_groups; k++) {
    const plat_group *g = &c->groups[k];
    long lo = g->first_gpu, hi = lo + (long)g->num_nodes * g->gpus_per_node;
    if (hi > n)
      hi = n;
    if (hi > lo)
      s += (double)(hi - lo) * per_gpu(&c->groups[k].device, u);
  }
  return s;
}

double plat_gpus_min(const plat_cluster *c, int n,
                     double (*per_gpu)(const plat_device *, void *), void *u)
{
  if (c->num_groups <= 1 || n <= 0)
    return per_gpu(&c->device, u);
  double m = INFINITY;
  for (int k = 0; k < c->num_groups && c->groups[k].first_gpu < n; k++)
    m = fmin(m, per_gpu(&c->groups[k].device, u));
  return m;
}

int plat_cluster_group_node(const plat_cluster *c, int k, plat_cluster **out, st_err *err)
{
  if (c->fabric_kind == PLAT_FABRIC_XML)
    return st_err_set(err, ST_EINPUT, "cluster '%s': a SimGrid XML platform's nodes cannot be "
                      "taken apart (its links are the file's)", c->name);
  plat_cluster *n = malloc(sizeof *n);
  if (!n)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  *n = *c;
  if (c->num_groups > 1 && k >= 0 && k < c->num_groups)
    plat_group_apply(n, &c->groups[k]);
  n->num_groups = 0;
  n->groups = NULL;
  n->spec_json = NULL;
  n->xml_path = NULL;
  n->num_nodes = 1;
  snprintf(n->name, sizeof n->name, "%.40s/node", c->num_groups > 1 ? c->groups[k].name : c->name);
  int rc = plat__cluster_finish(n, n->name, err);
  if (rc) {
    free(n);
    return rc;
  }
  *out = n;
  return ST_OK;
}

/* ---- spec ----------------------------------------------------------------- */

/* The preset named at `at` as parsed JSON (caller deletes). */
static int preset_json(const st_jrd *j, const st_jpath *at, const char *name, cJSON **out)
{
  int known = 0;
  for (const char *const *p = plat_preset_names(); *p; p++)
    known |= !strcmp(*p, name);
  if (!known)
    return st_jrd_fail(j, at, "'preset' is '%s', not a built-in preset (see `simtrain platform "
                              "--list`)", name);
  char rel[256];
  snprintf(rel, sizeof rel, "presets/%.200s.json", name);
  char *text = plat__data_read(rel, j->err);
  if (!text)
    return j->err && j->err->code ? j->err->code : st_jrd_fail(j, at, "preset '%s' is missing", name);
  char what[300];
  snprintf(what, sizeof what, "preset '%s'", name);
  int rc = st_json_parse(text, strlen(text), what, out, j->err);
  free(text);
  return rc;
}

/* Group gi of the array at `at_groups`: its nodes, name and worth. */
static int group_parse(const st_jrd *j, const st_jpath *at_groups, int gi, const cJSON *g,
                       const cJSON *root, plat_cluster *c, plat_group *out)
{
  static const char *const keys[] = {"name", "nodes", "preset", "device", "device_memory_GB",
                                     "node", NULL};
  st_jpath at = {at_groups, NULL, gi};
  const cJSON *slot[6];
  int rc = st_jrd_members(j, &at, g, keys, -1, slot);
  if (rc)
    return rc;
  long nodes;
  if (!slot[1])
    return st_jrd_missing(j, &at, "nodes");
  st_jpath at_n = {&at, "nodes", 0};
  if ((rc = st_jrd_int(j, &at_n, slot[1], 1, ST_RANKS_MAX, &nodes)))
    return rc;
  out->num_nodes = (int)nodes;
  cJSON *preset = NULL;
  const char *s = NULL;
  if (slot[2]) {
    st_jpath at_p = {&at, "preset", 0};
    if ((rc = st_jrd_string(j, &at_p, slot[2], &s)) || (rc = preset_json(j, &at_p, s, &preset)))
      return rc;
  }
  /* each setting from the group, else its preset, else the spec's top level */
  const cJSON *dv = slot[3] ? slot[3]
                    : preset ? cJSON_GetObjectItemCaseSensitive(preset, "device")
                             : cJSON_GetObjectItemCaseSensitive(root, "device");
  const cJSON *mem = slot[4] ? slot[4]
                     : preset ? cJSON_GetObjectItemCaseSensitive(preset, "device_memory_GB")
                              : cJSON_GetObjectItemCaseSensitive(root, "device_memory_GB");
  const cJSON *node = slot[5] ? slot[5]
                      : preset ? cJSON_GetObjectItemCaseSensitive(preset, "node")
                               : cJSON_GetObjectItemCaseSensitive(root, "node");
  const char *nm = NULL;
  if (slot[0]) {
    st_jpath at_nm = {&at, "name", 0};
    if ((rc = st_jrd_string(j, &at_nm, slot[0], &nm)))
      goto out;
    if (strlen(nm) >= sizeof out->name) {
      rc = st_jrd_fail(j, &at_nm, "'name' is longer than %zu characters", sizeof out->name - 1);
      goto out;
    }
  }
  plat_cluster t = *c; /* the group's node parsed onto a copy */
  t.nics_per_node = 0;
  t.pcie_Bps = 0;
  t.pcie_lat_s = 0;
  if (!dv) {
    rc = st_jrd_fail(j, &at, "key 'device' is missing (give the group a device, a preset or the "
                             "spec a top-level device)");
    goto out;
  }
  st_jpath at_dv = {&at, "device", 0};
  if ((rc = st_jrd_string(j, &at_dv, dv, &s)))
    goto out;
  if ((rc = plat__device_find(s, &t.device, j->err))) {
    st_err_prefix(j->err, "%s: groups[%d]: key 'device': ", j->subject, gi);
    goto out;
  }
  if (mem) {
    st_jpath at_m = {&at, "device_memory_GB", 0};
    double gb;
    if ((rc = st_jrd_number(j, &at_m, mem, ST_NUM_REAL | ST_NUM_OPEN_LO, 0, 1e6, &gb)))
      goto out;
    t.device.hbm_bytes = gb * 1e9;
  }
  if (!node) {
    rc = st_jrd_fail(j, &at, "key 'node' is missing (give the group a node, a preset or the spec "
                             "a top-level node)");
    goto out;
  }
  if ((rc = plat__parse_node(j, &at, node, &t)))
    goto out;
  snprintf(out->name, sizeof out->name, "%s", nm ? nm : slot[2] ? cJSON_GetStringValue(slot[2])
                                                              : t.device.name);
  plat__group_from(out, &t);
out:
  cJSON_Delete(preset);
  return rc;
}

int plat__groups_parse(const st_jrd *j, const cJSON *root, const cJSON *groups, plat_cluster *c)
{
  st_jpath at_g = {NULL, "groups", 0};
  if (!cJSON_IsArray(groups) || cJSON_GetArraySize(groups) < 1)
    return st_jrd_fail(j, &at_g, "is %s, expected an array of one or more node groups",
                       cJSON_IsArray(groups) ? "empty" : st_json_type_name(groups));
  if (cJSON_GetObjectItemCaseSensitive(root, "nodes"))
    return st_jrd_fail(j, NULL, "key 'nodes' cannot stand beside 'groups': each group has its "
                                "own node count");
  int n = cJSON_GetArraySize(groups);
  c->groups = calloc((size_t)n, sizeof *c->groups);
  if (!c->groups)
    return st_jrd_oom(j);
  c->num_groups = n;
  int gi = 0, rc = ST_OK;
  long nodes = 0, gpus = 0;
  for (const cJSON *g = groups->child; g && !rc; g = g->next, gi++) {
    plat_group *gr = &c->groups[gi];
    if ((rc = group_parse(j, &at_g, gi, g, root, c, gr)))
      break;
    gr->first_node = (int)nodes;
    gr->first_gpu = (int)gpus;
    nodes += gr->num_nodes;
    gpus += (long)gr->num_nodes * gr->gpus_per_node;
    if (gpus > ST_RANKS_MAX)
      return st_jrd_fail(j, &at_g, "%ld GPUs in all is more than %d", gpus, ST_RANKS_MAX);
  }
  if (rc)
    return rc;
  c->default_nodes = (int)nodes;
  c->gpus_per_node = c->groups[0].gpus_per_node;
  plat_group_apply(c, &c->groups[0]);
  for (int k = 1; k < n; k++) /* the fabric's ports per node: the widest node's */
    if (c->groups[k].nics_per_node > c->nics_per_node)
      c->nics_per_node = c->groups[k].nics_per_node;
  return ST_OK;
}

int plat__groups_finish(plat_cluster *c, const char *what, st_err *err)
{
  if (c->fabric_kind == PLAT_FABRIC_TORUS)
    return st_err_set(err, ST_EINPUT, "%s: key 'groups': node groups need a switched fabric (a "
                      "torus's chips are its links); fabric.kind is torus", what);
  for (int k = 0; k < c->num_groups; k++) {
    plat_cluster t = *c; /* the group's nodes, as many as a cluster of more than one node */
    plat_group_apply(&t, &c->groups[k]);
    t.num_groups = 0;
    t.groups = NULL;
    t.num_nodes = c->num_nodes > 1 && c->groups[k].num_nodes < 2 ? 2 : c->groups[k].num_nodes;
    char w[300];
    snprintf(w, sizeof w, "%.200s: groups[%d] ('%s')", what, k, c->groups[k].name);
    int rc = plat__cluster_finish(&t, w, err);
    if (rc)
      return rc;
  }
  return ST_OK;
}
