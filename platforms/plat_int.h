/* plat_int.h — internals shared by the platform sources: the link layout of
 * a cluster (topo.c), device and spec data (spec.c), XML (xml.c). */
#ifndef PLAT_INT_H
#define PLAT_INT_H

#include "platform.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PLAT__MAX_LEVELS 5

/* Link id blocks and fat-tree/dragonfly shape, derived from a cluster by
 * plat__layout() (a few dozen integer operations; nothing per GPU). */
typedef struct plat__lay {
  long intra_base, pcie_base, nic_base, fab_base, total;
  long intra_slots; /* intra-node link slots per GPU: GPU g's are intra_base + g x intra_slots .. */
  /* fat-tree: m (children), w (up ports), M = prod m, W = prod w, N = nodes per level */
  int h;
  long m[PLAT__MAX_LEVELS + 1], w[PLAT__MAX_LEVELS + 1];
  long M[PLAT__MAX_LEVELS + 1], W[PLAT__MAX_LEVELS + 1], N[PLAT__MAX_LEVELS + 1];
  long ft_base[PLAT__MAX_LEVELS + 1];
  /* dragonfly: routers per group, NICs per router, global links per router */
  long a, p, hh, groups, dl_base, dg_base;
  /* host memory (host.c), with c->host_memory: the GPUs' own host links
   * (none when they are the pcie block's) and the nodes' memory links */
  long host_base, hostmem_base, host_end;
  /* pods: the pods' links to the data-centre network (2 per pod) start here */
  long dc_base;
} plat__lay;

void plat__layout(const plat_cluster *c, plat__lay *L);
/* 1 + the largest endpoint (NIC slot) index of a fat-tree or dragonfly. */
long plat__endpoint_max(const plat_cluster *c);
/* Link ids from GPU s to GPU d into ids[PLAT_ROUTE_MAX]; returns the count,
 * or -1 when the route would be longer than PLAT_ROUTE_MAX. */
int plat__route_ids(const plat_cluster *c, const plat__lay *L, int s, int d, int *ids,
                    int *switches);
void plat__link_info(const plat_cluster *c, const plat__lay *L, long id, plat_link_info *o);
int plat__cube_lanes(int i, int j);
/* Link ids of a route to or from the top of c's fabric (a fat-tree's top
 * level, a switch): from GPU s, [pcie up] NIC up and the up links of every
 * level; to GPU d, the down links of every level, NIC down [pcie down].
 * Appended to ids at *n (at most PLAT_ROUTE_MAX); -1 when too long.
 * *switches gets the switches crossed up to (down from) the top. */
int plat__route_up(const plat_cluster *c, const plat__lay *L, int s, int *ids, int *n,
                   int *switches);
int plat__route_down(const plat_cluster *c, const plat__lay *L, int d, int *ids, int *n,
                     int *switches);
/* Link id's name, kind, rate and latency in a cluster whose GPU and node
 * names start at gpu0 and node0, fabric link names prefixed with pfx. */
void plat__link_info_at(const plat_cluster *c, const plat__lay *L, long id, long gpu0, long node0,
                        const char *pfx, plat_link_info *o);

/* pods.c: a spec's "pods" (root: the spec; dir: the folder its relative
 * paths start from) into a cluster of pods; its layout, routes and links
 * (called by plat__layout, plat__route_ids and plat__link_info). */
int plat__pods_parse(const char *what, const struct cJSON *root, const char *dir,
                     plat_cluster **out, st_err *err);
void plat__pods_layout(const plat_cluster *c, plat__lay *L);
int plat__pods_route_ids(const plat_cluster *c, int s, int d, int *ids, int *switches);
void plat__pods_link_info(const plat_cluster *c, const plat__lay *L, long id, plat_link_info *o);
double plat__pods_bisection_Bps(const plat_cluster *c);
long plat__pods_switch_count(const plat_cluster *c);

/* ---- host memory (host.c) ---- */
/* Lay out the host-memory block from link id *id on (nothing without
 * c->host_memory); *id moves past it. */
void plat__host_layout(const plat_cluster *c, plat__lay *L, long *id);
/* The route between a GPU and a host-memory endpoint (either way) into ids;
 * returns the count, or -1 when the pair has no route (another node's
 * memory, two memories). */
int plat__host_route_ids(const plat_cluster *c, const plat__lay *L, int s, int d, int *ids);
/* Whether link id is in the host block; its info when it is. */
int plat__host_link_info(const plat_cluster *c, const plat__lay *L, long id, plat_link_info *o);
/* The spec's node.host object (at `at`, may be NULL: defaults) into c,
 * after node.pcie and the device are known. */
struct cJSON;
int plat__host_parse(const st_jrd *j, const st_jpath *at, const struct cJSON *host,
                     plat_cluster *c);

/* Data folder: $SIMTRAIN_PLATFORMS_DATA, else the embedded copy of
 * platforms/data (see embed.cmake).  Returns the text of "devices.json" or
 * "presets/<name>.json" (caller frees), or NULL when there is no such file. */
char *plat__data_read(const char *rel, st_err *err);

/* The devices table, platform data "devices.json", parsed (caller frees it
 * with cJSON_Delete); messages name it PLAT__DEVICES. */
#define PLAT__DEVICES "devices 'devices.json'"
struct cJSON;
int plat__devices_json(struct cJSON **root, st_err *err);
/* Every device of the table, parsed once (*out the caller frees). */
int plat__devices_all(plat_device **out, int *count, st_err *err);
/* Parse the devices table and fill d for device 'name'. */
int plat__device_find(const char *name, plat_device *d, st_err *err);

/* Spec text (JSON) -> cluster; 'what' names the source in messages;
 * nodes_override > 0 replaces the spec's node count; dir: the folder a
 * pod's relative path starts from (NULL: the working directory). */
int plat__spec_parse(const char *what, const char *text, int nodes_override, const char *dir,
                     plat_cluster **out, st_err *err);
/* Validate and derive: levels, m_i, num_links (called by the parser). */
int plat__cluster_fabric(plat_cluster *c, const char *what, st_err *err);
int plat__cluster_finish(plat_cluster *c, const char *what, st_err *err);

/* A spec's "node" object under `up` (NULL: the top) onto c (its device set). */
int plat__parse_node(const st_jrd *j, const st_jpath *up, const struct cJSON *node, plat_cluster *c);
/* groups.c: the spec's "groups" array into c->groups, and c's node fields
 * from group 0; then, after the fabric, each group checked as a cluster. */
int plat__groups_parse(const st_jrd *j, const struct cJSON *root, const struct cJSON *groups,
                       plat_cluster *c);
int plat__groups_finish(plat_cluster *c, const char *what, st_err *err);
/* A group's worth (device, node links, host power, node shape) from t. */
void plat__group_from(plat_group *g, const plat_cluster *t);

/* SimGrid XML platform: count hosts gpu-<g>, read simtrain.* properties. */
int plat__xml_load(const char *path, plat_cluster **out, st_err *err);

#ifdef __cplusplus
}
#endif
#endif
