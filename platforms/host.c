/* host.c — host memory, for offload: each node's memory as an endpoint of
 * its own, the GPUs' links to it, and the node's CPUs that run an offloaded
 * optimizer step.
 *
 * The host is not a rank: node n's memory is the endpoint num_gpus + n of
 * routes (a SimGrid host "host-<n>" in the built platform), reached only
 * from the node's own GPUs (DeepSpeed offloads to the local host).  What is
 * modelled (docs/platforms.md, "Host memory"):
 *   - one link per GPU and direction to host memory: the GPU's PCIe link
 *     `pcie-<g>-up|down` when the spec models PCIe (shared with the GPU's
 *     NIC traffic, as a GPU has one PCIe interface), else a link of its own,
 *     `gpuhost-<g>-up|down`, at node.host.link_GBps or the device's
 *     generation (PCIe Gen3/4/5 x16, NVLink-C2C);
 *   - optionally the node's memory bandwidth, one link `hostmem-<n>` shared
 *     by every copy of the node in both directions (DRAM bandwidth is one
 *     pool for reads and writes);
 *   - the CPUs: a host optimizer op runs at the node's CPU-Adam rate split
 *     evenly over its GPUs (each rank's process bound to its share of the
 *     cores, as DeepSpeed's --bind_cores_to_rank does).
 * The block is laid out after every other link (plat__host_layout), and
 * only when c->host_memory is on: a cluster without offload keeps its links,
 * ids and XML byte for byte. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plat_int.h"

/* Default latency of a GPU's own link to host memory (a PCIe round of the
 * same order as a NIC link's); a modelling assumption like those. */
#define HOST_LINK_LAT_US 1.0

/* The GPUs' host links are the pcie block's (which a torus never has). */
static int pcie_block(const plat_cluster *c)
{
  return c->pcie_Bps > 0 && c->fabric_kind != PLAT_FABRIC_TORUS;
}

/* number at obj.key: absent -> def; present: lo < v (or lo <= v when incl)
 * and v <= hi */
static int host_num(const st_jrd *j, const st_jpath *at, const cJSON *obj, const char *key,
                    double def, int incl, double hi, double *out)
{
  const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
  if (!v) {
    *out = def;
    return ST_OK;
  }
  return st_jrd_number(j, at, v, incl ? ST_NUM_REAL : ST_NUM_REAL | ST_NUM_OPEN_LO, 0, hi, out);
}

int plat__host_parse(const st_jrd *j, const st_jpath *at, const cJSON *host, plat_cluster *c)
{
  static const char *const keys[] = {"memory_GB",   "memory_GBps",        "link_GBps",
                                     "link_lat_us", "adam_Gparams_per_s", NULL};
  int rc;
  if (host && (rc = st_jrd_members(j, at, host, keys, -1, NULL)))
    return rc;
  const cJSON *lk = host ? cJSON_GetObjectItemCaseSensitive(host, "link_GBps") : NULL;
  const cJSON *ll = host ? cJSON_GetObjectItemCaseSensitive(host, "link_lat_us") : NULL;
  if (pcie_block(c) && (lk || ll))
    return st_jrd_fail(j, at,
                       "'%s' is given, but node.pcie models the GPU's PCIe link, which is its "
                       "link to host memory: give one of them",
                       lk ? "link_GBps" : "link_lat_us");
  double gb, gbps, link, lat, adam;
  if ((rc = host_num(j, at, host, "memory_GB", NAN, 0, 1e6, &gb)) ||
      (rc = host_num(j, at, host, "memory_GBps", 0, 0, 1e6, &gbps)) ||
      (rc = host_num(j, at, host, "link_GBps", c->device.host_link_Bps / 1e9, 0, 1e6, &link)) ||
      (rc = host_num(j, at, host, "link_lat_us", HOST_LINK_LAT_US, 1, 1e6, &lat)) ||
      (rc = host_num(j, at, host, "adam_Gparams_per_s", PLAT_HOST_ADAM_PARAMS_PER_S / 1e9, 0, 1e6,
                     &adam)))
    return rc;
  c->host_mem_bytes = gb * 1e9;
  c->host_mem_Bps = gbps * 1e9;
  c->host_link_Bps = pcie_block(c) ? c->pcie_Bps : link * 1e9;
  c->host_link_lat_s = pcie_block(c) ? c->pcie_lat_s : lat * 1e-6;
  c->host_adam_params_per_s = adam * 1e9;
  return ST_OK;
}

int plat_cluster_host_memory(plat_cluster *c, int on, st_err *err)
{
  /* a cluster of pods lays its links out pod by pod (pods.c): the host
   * block is not in that layout */
  if (on && c->num_pods > 0)
    return st_err_set(err, ST_EINPUT,
                      "cluster '%s': host memory (offload, copies to the host) is not modelled on "
                      "a cluster of pods; run each pod's cluster alone",
                      c->name);
  if (on && c->num_groups > 1 && !plat_gpus_per_node_uniform(c))
    return st_err_set(err, ST_EINPUT,
                      "cluster '%s': host memory (offload, copies to the host) is not modelled "
                      "on node groups with unlike GPUs per node", c->name);
  /* the GPUs' host links are the pcie block's or a block of their own, one
   * rule for the whole cluster */
  for (int k = 1; on && k < c->num_groups; k++)
    if ((c->groups[k].pcie_Bps > 0) != (c->groups[0].pcie_Bps > 0))
      return st_err_set(err, ST_EINPUT,
                        "cluster '%s': host memory (offload, copies to the host) needs every node "
                        "group to model PCIe or none to; group '%s' %s, group '%s' %s",
                        c->name, c->groups[0].name, c->groups[0].pcie_Bps > 0 ? "does" : "does not",
                        c->groups[k].name, c->groups[k].pcie_Bps > 0 ? "does" : "does not");
  if (on && c->fabric_kind != PLAT_FABRIC_XML && !(c->host_link_Bps > 0))
    return st_err_set(err, ST_EINPUT,
                      "cluster '%s': the GPUs' link to host memory has no rate (the %s has none "
                      "built in): give node.host.link_GBps or node.pcie in a cluster spec "
                      "(docs/platforms.md, \"Host memory\")",
                      c->name, c->device.name);
  c->host_memory = on ? 1 : 0;
  if (c->fabric_kind != PLAT_FABRIC_XML) {
    plat__lay L;
    plat__layout(c, &L);
    c->num_links = (int)L.total;
  }
  return ST_OK;
}

double plat_host_compute_time(const plat_cluster *c, const wl_op *op)
{
  if (op->duration_s >= 0)
    return op->duration_s;
  double rate = c->host_adam_params_per_s / (c->gpus_per_node > 0 ? c->gpus_per_node : 1);
  if (op->sub != WL_CLASS_OPTIMIZER || !(rate > 0))
    return INFINITY; /* the workload check refuses such an op */
  return op->flops / WL_ADAM_FLOPS_PER_PARAM / rate;
}

void plat__host_layout(const plat_cluster *c, plat__lay *L, long *id)
{
  L->host_base = L->hostmem_base = L->host_end = *id;
  if (!c->host_memory)
    return;
  if (!pcie_block(c))
    *id += 2L * c->num_gpus;
  L->hostmem_base = *id;
  if (c->host_mem_Bps > 0)
    *id += c->num_nodes;
  L->host_end = *id;
}

int plat__host_route_ids(const plat_cluster *c, const plat__lay *L, int s, int d, int *ids)
{
  int G = c->num_gpus;
  int s_host = s >= G, d_host = d >= G;
  if (!c->host_memory || s_host == d_host)
    return -1;
  long gpu = s_host ? d : s, node = (s_host ? s : d) - G;
  if (node >= c->num_nodes || plat_gpu_node(c, (int)gpu) != node)
    return -1;
  long up = pcie_block(c) ? L->pcie_base + 2 * gpu : L->host_base + 2 * gpu;
  int mem = c->host_mem_Bps > 0, n = 0;
  /* The GPU's own link comes first both ways.  The order of a route's links
   * changes nothing in the fluid model, but SimGrid 3.32's lazy max-min
   * update (network/optim:Lazy, the default) missed the private link of
   * flows that start together from one shared link: of 8 copies from host
   * memory at 614.4 GB/s to 8 GPUs at 64 GB/s, routed memory first, 7 ran
   * at 78.6 GB/s, past their own link (network/optim:Full gave 64 each). */
  if (!s_host) {
    ids[n++] = (int)up;
    if (mem)
      ids[n++] = (int)(L->hostmem_base + node);
  } else {
    ids[n++] = (int)(up + 1);
    if (mem)
      ids[n++] = (int)(L->hostmem_base + node);
  }
  return n;
}

int plat__host_link_info(const plat_cluster *c, const plat__lay *L, long id, plat_link_info *o)
{
  if (!c->host_memory || id < L->host_base || id >= L->host_end)
    return 0;
  if (id < L->hostmem_base) {
    long r = id - L->host_base;
    const plat_group *g = c->num_groups > 1 ? &c->groups[plat_gpu_group(c, (int)(r / 2))] : NULL;
    snprintf(o->name, sizeof o->name, "gpuhost-%ld-%s", r / 2, r % 2 ? "down" : "up");
    o->kind = PLAT_LINK_HOST;
    o->bw_Bps = g ? g->host_link_Bps : c->host_link_Bps; /* node groups: the node's group's */
    o->lat_s = g ? g->host_link_lat_s : c->host_link_lat_s;
  } else {
    long node = id - L->hostmem_base;
    const plat_group *g = c->num_groups > 1 ? &c->groups[plat_node_group(c, (int)node)] : NULL;
    snprintf(o->name, sizeof o->name, "hostmem-%ld", node);
    o->kind = PLAT_LINK_HOSTMEM;
    o->bw_Bps = g ? g->host_mem_Bps : c->host_mem_Bps;
    o->lat_s = 0;
  }
  return 1;
}
