/* topo.c — the links of a cluster and the route between any two GPUs, computed
 * from the spec by arithmetic, without SimGrid.
 *
 * Why: the SimGrid zone (build.cpp), the XML writer and plat_route_get() all
 * ask this one function for a route, so the three agree by construction; and
 * nothing here is stored per GPU pair, so memory and load time grow linearly
 * with the GPUs (a route is computed when SimGrid asks for it).
 *
 * Every link is directed (one SimGrid link per direction) and has an integer
 * id.  Ids are laid out in blocks, in this order (see struct lay):
 *   intra   NVSwitch/NVL rack: 2 per GPU (up to the switch, down from it);
 *           cube-mesh: 4 per GPU (one per neighbour); full mesh: gpn-1 per GPU
 *   pcie    2 per GPU when the spec models PCIe
 *   nic     2 per NIC (up to the first switch, down from it); none for a torus
 *   fabric  fat-tree: for each level i >= 2, 2 per level-(i-1) group (below);
 *           dragonfly: local links (a-1 per router), then global links
 *           (a*h per group); torus: 6 per chip (+x -x +y -y +z -z)
 *
 * Fat-trees are XGFT(h; m_1..m_h; w_1..w_h) with w_1 = 1 and w_i = radix/2:
 * a leaf holds m_1 = radix/2 NICs (radix for a one-level tree) and has
 * radix/2 up ports; the top level holds m_h <= radix children.  Endpoint
 * (NIC) numbering decides which NICs share a leaf:
 *   fat-tree       e = node * nics + k          (a node's NICs side by side)
 *   rail-fat-tree  e = ((node / m_1) * nics + k) * m_1 + node % m_1
 *                  (leaf = (group of m_1 nodes, rail k): one leaf per rail
 *                  per scalable unit, the rails of a unit side by side)
 * A level-i group is the subtree of the M_i endpoints with the same e / M_i
 * and its W_i level-i switches: a level-1 group is one leaf, a level-2 group
 * the m_2 leaves and W_2 spines of a spine-leaf group.
 *
 * Routing is adaptive, as InfiniBand fat-trees run it: the subnet manager
 * puts every up port towards a destination in one adaptive-routing group
 * (TREE) and switches pick a port per packet by load; NCCL enables adaptive
 * routing on IB by default.  A flow's packets thus spread over all up ports
 * of its group, and the W_{i+1} up links of a level-i group act as one link
 * of W_{i+1} x link rate / oversub (and likewise the down links into it).
 * A route is NIC up, the up links of the source's groups of levels
 * 1..l-1, the down links of the destination's groups of levels l-1..1, NIC
 * down, l the lowest common level; it crosses 2l-1 switches.  Single-path
 * D-mod-k (ftree without adaptive routing), the earlier model, puts two
 * flows on one up port whenever they leave a group towards destinations with
 * the same port residue: the rail rings of DP groups that straddle
 * spine-leaf groups ran at half rate from 1,280 DGX H100 nodes on
 * (docs/platforms.md, "Fat-tree routing").
 *
 * A cluster of pods (pods.c) is its pods' layouts one after the other and
 * their links to the data-centre network; a route between two pods joins
 * plat__route_up() in one to plat__route_down() in the other, and a pod's
 * links are named by plat__link_info_at() with the cluster's GPU and node
 * numbers and the pod's prefix on its fabric's links.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plat_int.h"

/* DGX-1 (V100) hybrid cube-mesh: NVLink lanes between GPU pairs (nvidia-smi topo -m). */
static const int cube_lanes[8][8] = {
    {0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0},
    {2, 1, 2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1},
    {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0},
};

int plat__cube_lanes(int i, int j) { return cube_lanes[i][j]; }

int plat_intra_lanes(const plat_cluster *c, int a, int b)
{
  int gpn = c->gpus_per_node;
  if (a == b || a < 0 || b < 0 || a >= gpn || b >= gpn)
    return 0;
  switch (c->intra_kind) {
  case PLAT_INTRA_FULLMESH: return 1;
  case PLAT_INTRA_CUBEMESH: return gpn == 8 ? cube_lanes[a][b] : 0;
  default: return 0;
  }
}

/* slot of neighbour j among i's neighbours in increasing order, -1 if not adjacent */
static int cube_slot(int i, int j)
{
  if (!cube_lanes[i][j])
    return -1;
  int s = 0;
  for (int k = 0; k < j; k++)
    s += cube_lanes[i][k] != 0;
  return s;
}

/* Intra-node link slots per GPU of a kind: up and down to the switch, one per
 * cube-mesh neighbour, one per other GPU of a full mesh. */
static int intra_slots(int kind, int gpn)
{
  switch (kind) {
  case PLAT_INTRA_NVSWITCH:
  case PLAT_INTRA_NVL_RACK: return 2;
  case PLAT_INTRA_CUBEMESH: return 4;
  case PLAT_INTRA_FULLMESH: return gpn - 1;
  default: return 0;
  }
}

void plat__layout(const plat_cluster *c, plat__lay *L)
{
  memset(L, 0, sizeof *L);
  if (c->num_pods > 0) {
    plat__pods_layout(c, L);
    return;
  }
  long G = c->num_gpus;
  long id = 0;
  L->intra_base = id;
  L->intra_slots = intra_slots(c->intra_kind, c->gpus_per_node);
  for (int k = 0; k < c->num_groups && c->num_groups > 1; k++) { /* the richest node's */
    int sk = intra_slots(c->groups[k].intra_kind, c->groups[k].gpus_per_node);
    if (sk > L->intra_slots)
      L->intra_slots = sk;
  }
  id += G * L->intra_slots;
  L->pcie_base = id;
  if (plat_any_pcie(c) && c->fabric_kind != PLAT_FABRIC_TORUS)
    id += 2 * G;
  L->nic_base = id; /* a torus: its hosts' data-centre NICs (node.dcn), if any */
  id += 2L * c->num_nodes * (c->fabric_kind != PLAT_FABRIC_TORUS ? c->nics_per_node : c->dcn_nics);
  L->fab_base = id;
  if (c->fabric_kind == PLAT_FABRIC_FATTREE || c->fabric_kind == PLAT_FABRIC_RAIL_FATTREE) {
    int h = c->fabric_levels;
    L->h = h;
    L->M[0] = 1;
    L->W[0] = 1;
    for (int i = 1; i <= h; i++) {
      L->m[i] = c->fabric_radix_used[i - 1];
      L->w[i] = i == 1 ? 1 : L->m[i - 1]; /* as many up ports as down ports in use */
      L->M[i] = L->M[i - 1] * L->m[i];
      L->W[i] = L->W[i - 1] * L->w[i];
    }
    long emax = plat__endpoint_max(c);
    for (int i = 0; i <= h; i++)
      L->N[i] = (emax + L->M[i] - 1) / L->M[i] * L->W[i];
    for (int i = 2; i <= h; i++) {
      L->ft_base[i] = id;
      id += 2 * ((emax + L->M[i - 1] - 1) / L->M[i - 1]);
    }
  } else if (c->fabric_kind == PLAT_FABRIC_DRAGONFLY) {
    long E = (long)c->num_nodes * c->nics_per_node;
    L->a = c->dragonfly[0];
    L->p = c->dragonfly[1];
    L->hh = c->dragonfly[2];
    long routers = (E + L->p - 1) / L->p;
    L->groups = (routers + L->a - 1) / L->a;
    L->dl_base = id;
    id += L->groups * L->a * (L->a - 1);
    L->dg_base = id;
    id += L->groups * L->a * L->hh;
  } else if (c->fabric_kind == PLAT_FABRIC_TORUS) {
    id += 6 * G;
  }
  plat__host_layout(c, L, &id); /* last, and only with host memory (host.c) */
  L->total = id;
}

/* Endpoint (NIC slot) of NIC k of node n. */
static long endpoint(const plat_cluster *c, long n, int k)
{
  if (c->fabric_kind == PLAT_FABRIC_RAIL_FATTREE) {
    long m1 = c->fabric_radix_used[0];
    return ((n / m1) * c->nics_per_node + k) * m1 + n % m1;
  }
  return n * c->nics_per_node + k;
}

long plat__endpoint_max(const plat_cluster *c)
{
  long last = c->num_nodes - 1, mx = 0;
  for (int k = 0; k < c->nics_per_node; k++) {
    long e = endpoint(c, last, k);
    if (e > mx)
      mx = e;
  }
  return mx + 1;
}

/* The NIC GPU g uses: its node's NICs shared evenly by its GPUs in order. */
static int gpu_nic(const plat_cluster *c, int g)
{
  int node = plat_gpu_node(c, g);
  return plat_gpu_local(c, g) * plat_node_nics(c, node) / plat_node_gpus(c, node);
}

#define PUSH(x)                                                                                    \
  do {                                                                                             \
    if (n >= PLAT_ROUTE_MAX)                                                                       \
      return -1;                                                                                   \
    ids[n++] = (x);                                                                                \
  } while (0)

int plat__route_ids(const plat_cluster *c, const plat__lay *L, int s, int d, int *ids,
                    int *switches)
{
  int n = 0;
  *switches = 0;
  if (s == d)
    return 0;
  if (s >= c->num_gpus || d >= c->num_gpus)
    return plat__host_route_ids(c, L, s, d, ids);
  if (c->num_pods > 0)
    return plat__pods_route_ids(c, s, d, ids, switches);
  long ns = plat_gpu_node(c, s), nd = plat_gpu_node(c, d);
  if (c->fabric_kind == PLAT_FABRIC_TORUS) {
    int D[3] = {c->torus_dims[0], c->torus_dims[1], c->torus_dims[2]};
    int cs[3] = {s % D[0], (s / D[0]) % D[1], s / (D[0] * D[1])};
    int ct[3] = {d % D[0], (d / D[0]) % D[1], d / (D[0] * D[1])};
    int stride[3] = {1, D[0], D[0] * D[1]};
    long cur = s;
    for (int k = 0; k < 3; k++) {
      int delta = ((ct[k] - cs[k]) % D[k] + D[k]) % D[k];
      int dir, steps;
      if (c->torus_wrap) {
        dir = delta <= D[k] / 2 ? 0 : 1;
        steps = dir == 0 ? delta : D[k] - delta;
      } else {
        dir = ct[k] >= cs[k] ? 0 : 1;
        steps = dir == 0 ? ct[k] - cs[k] : cs[k] - ct[k];
      }
      int x = cs[k];
      for (int t = 0; t < steps; t++) {
        PUSH(L->fab_base + 6 * cur + 2 * k + dir);
        int nx = dir == 0 ? (x + 1) % D[k] : (x - 1 + D[k]) % D[k];
        cur += (long)(nx - x) * stride[k];
        x = nx;
      }
    }
    return n;
  }
  if (ns == nd) {
    int ls = plat_gpu_local(c, s), ld = plat_gpu_local(c, d);
    long S = L->intra_slots; /* GPU g's intra links: intra_base + g S + slot */
    switch (plat_node_intra_kind(c, ns)) {
    case PLAT_INTRA_NVSWITCH:
    case PLAT_INTRA_NVL_RACK:
      PUSH(L->intra_base + S * s);
      PUSH(L->intra_base + S * d + 1);
      *switches = 1;
      return n;
    case PLAT_INTRA_FULLMESH:
      PUSH(L->intra_base + S * s + (ld < ls ? ld : ld - 1));
      return n;
    case PLAT_INTRA_CUBEMESH: {
      long base = L->intra_base + S * plat_node_first_gpu(c, (int)ns);
      if (cube_lanes[ls][ld]) {
        PUSH(base + ls * S + cube_slot(ls, ld));
        return n;
      }
      for (int m = 0; m < 8; m++)
        if (cube_lanes[ls][m] && cube_lanes[m][ld]) {
          PUSH(base + ls * S + cube_slot(ls, m));
          PUSH(base + m * S + cube_slot(m, ld));
          return n;
        }
      return -1;
    }
    default: return -1; /* rejected at load: NONE with several GPUs needs a torus */
    }
  }
  int ks = gpu_nic(c, s), kd = gpu_nic(c, d);
  if (plat_node_pcie(c, ns))
    PUSH(L->pcie_base + 2L * s);
  PUSH(L->nic_base + 2 * (ns * c->nics_per_node + ks));
  if (c->fabric_kind == PLAT_FABRIC_SWITCH) {
    *switches = 1;
  } else if (c->fabric_kind == PLAT_FABRIC_FATTREE || c->fabric_kind == PLAT_FABRIC_RAIL_FATTREE) {
    long es = endpoint(c, ns, ks), ed = endpoint(c, nd, kd);
    int l = 1;
    while (es / L->M[l] != ed / L->M[l])
      l++;
    for (int i = 2; i <= l; i++)
      PUSH(L->ft_base[i] + 2 * (es / L->M[i - 1]));
    for (int i = l; i >= 2; i--)
      PUSH(L->ft_base[i] + 2 * (ed / L->M[i - 1]) + 1);
    *switches = 2 * l - 1;
  } else if (c->fabric_kind == PLAT_FABRIC_DRAGONFLY) {
    long es = endpoint(c, ns, ks), ed = endpoint(c, nd, kd);
    long rs = es / L->p, rd = ed / L->p;
    long a = L->a, Gs = rs / a, Gd = rd / a;
    long is = rs % a, id = rd % a;
#define LOCAL(G, i, j) (L->dl_base + ((G) * a + (i)) * (a - 1) + ((j) < (i) ? (j) : (j) - 1))
    if (rs == rd) {
      *switches = 1;
    } else if (Gs == Gd) {
      PUSH(LOCAL(Gs, is, id));
      *switches = 2;
    } else {
      long q1 = Gd < Gs ? Gd : Gd - 1, q2 = Gs < Gd ? Gs : Gs - 1;
      long gw1 = q1 / L->hh, gw2 = q2 / L->hh;
      int sw = 1;
      if (is != gw1) {
        PUSH(LOCAL(Gs, is, gw1));
        sw++;
      }
      PUSH(L->dg_base + Gs * a * L->hh + q1);
      sw++;
      if (gw2 != id) {
        PUSH(LOCAL(Gd, gw2, id));
        sw++;
      }
      *switches = sw;
    }
#undef LOCAL
  }
  PUSH(L->nic_base + 2 * (nd * c->nics_per_node + kd) + 1);
  if (plat_node_pcie(c, nd))
    PUSH(L->pcie_base + 2L * d + 1);
  return n;
}

/* A torus chip's way out: the up link of its host's data-centre NIC (the
 * host's chips shared evenly among its NICs); the down link is the next id. */
static long dcn_up_link(const plat_cluster *c, const plat__lay *L, int g)
{
  long node = plat_gpu_node(c, g);
  return L->nic_base + 2 * (node * c->dcn_nics + plat_gpu_local(c, g) * c->dcn_nics / c->gpus_per_node);
}

/* The route to the top of the fabric (pods.c joins two of them across the
 * data-centre network): as if the destination were beyond the top level,
 * every up link of the source's groups; a switch fabric is its one switch. */
int plat__route_up(const plat_cluster *c, const plat__lay *L, int s, int *ids, int *np,
                   int *switches)
{
  int n = *np;
  long ns = plat_gpu_node(c, s);
  if (c->fabric_kind == PLAT_FABRIC_TORUS) { /* the chip's host's data-centre NIC */
    if (c->dcn_nics < 1)
      return -1;
    PUSH(dcn_up_link(c, L, s));
    *switches = 1;
    *np = n;
    return n;
  }
  int ks = gpu_nic(c, s);
  if (plat_node_pcie(c, ns))
    PUSH(L->pcie_base + 2L * s);
  PUSH(L->nic_base + 2 * (ns * c->nics_per_node + ks));
  *switches = 1;
  if (c->fabric_kind == PLAT_FABRIC_FATTREE || c->fabric_kind == PLAT_FABRIC_RAIL_FATTREE) {
    long es = endpoint(c, ns, ks);
    for (int i = 2; i <= L->h; i++)
      PUSH(L->ft_base[i] + 2 * (es / L->M[i - 1]));
    *switches = L->h;
  }
  *np = n;
  return n;
}

int plat__route_down(const plat_cluster *c, const plat__lay *L, int d, int *ids, int *np,
                     int *switches)
{
  int n = *np;
  long nd = plat_gpu_node(c, d);
  if (c->fabric_kind == PLAT_FABRIC_TORUS) {
    if (c->dcn_nics < 1)
      return -1;
    PUSH(dcn_up_link(c, L, d) + 1);
    *switches = 1;
    *np = n;
    return n;
  }
  int kd = gpu_nic(c, d);
  *switches = 1;
  if (c->fabric_kind == PLAT_FABRIC_FATTREE || c->fabric_kind == PLAT_FABRIC_RAIL_FATTREE) {
    long ed = endpoint(c, nd, kd);
    for (int i = L->h; i >= 2; i--)
      PUSH(L->ft_base[i] + 2 * (ed / L->M[i - 1]) + 1);
    *switches = L->h;
  }
  PUSH(L->nic_base + 2 * (nd * c->nics_per_node + kd) + 1);
  if (plat_node_pcie(c, nd))
    PUSH(L->pcie_base + 2L * d + 1);
  *np = n;
  return n;
}

static const char *const dir_name[2] = {"up", "down"};

/* The node-level worth of node's links: its group's (groups.c), or the
 * cluster's. */
typedef struct node_worth {
  double intra_link_Bps, intra_Bps, intra_lat_s, pcie_Bps, pcie_lat_s, nic_Bps, nic_lat_s;
} node_worth;

static node_worth worth_of(const plat_cluster *c, long node)
{
  if (c->num_groups > 1) {
    const plat_group *g = &c->groups[plat_node_group(c, (int)node)];
    return (node_worth){g->intra_link_Bps, g->intra_Bps, g->intra_lat_s, g->pcie_Bps,
                        g->pcie_lat_s,     g->nic_Bps,   g->nic_lat_s};
  }
  return (node_worth){c->intra_link_Bps, c->intra_Bps, c->intra_lat_s, c->pcie_Bps,
                      c->pcie_lat_s,     c->nic_Bps,   c->nic_lat_s};
}

void plat__link_info(const plat_cluster *c, const plat__lay *L, long id, plat_link_info *o)
{
  if (c->num_pods > 0)
    plat__pods_link_info(c, L, id, o);
  else
    plat__link_info_at(c, L, id, 0, 0, "", o);
}

void plat__link_info_at(const plat_cluster *c, const plat__lay *L, long id, long gpu0, long node0,
                        const char *pfx, plat_link_info *o)
{
  memset(o, 0, sizeof *o);
  /* pfx NULL: no name (route latencies asked many times over: the names'
   * formatting was most of their cost) */
  int named = pfx != NULL;
  if (!named)
    pfx = "";
#define NAME(...)                                                                        \
  do {                                                                                   \
    if (named)                                                                           \
      snprintf(o->name, sizeof o->name, __VA_ARGS__);                                    \
  } while (0)
  if (plat__host_link_info(c, L, id, o))
    return;
  if (id < L->pcie_base) {
    long r = id - L->intra_base, S = L->intra_slots;
    long g = r / S, node = plat_gpu_node(c, (int)g);
    int slot = (int)(r % S), kind = plat_node_intra_kind(c, node), gpn = plat_node_gpus(c, (int)node);
    node_worth w = worth_of(c, node);
    o->kind = PLAT_LINK_INTRA;
    o->lat_s = w.intra_lat_s;
    if (slot >= intra_slots(kind, gpn)) { /* a richer kind's slot in another group */
      o->kind = PLAT_LINK_UNUSED;
      NAME( "unused-%ld", id);
    } else if (kind == PLAT_INTRA_CUBEMESH) {
      int l = (int)(g % 8), j = 0;
      for (int k = 0, q = 0; k < 8; k++)
        if (cube_lanes[l][k] && q++ == slot)
          j = k;
      NAME( "nvl-%ld-%ld", gpu0 + g,
               gpu0 + plat_node_first_gpu(c, (int)node) + j);
      o->bw_Bps = cube_lanes[l][j] * w.intra_link_Bps;
    } else if (kind == PLAT_INTRA_FULLMESH) {
      int l = plat_gpu_local(c, (int)g), j = slot;
      if (j >= l)
        j++;
      NAME( "mesh-%ld-%ld", gpu0 + g, gpu0 + g - l + j);
      o->bw_Bps = w.intra_link_Bps;
    } else {
      NAME( "nvl-%ld-%s", gpu0 + g, dir_name[slot]);
      o->bw_Bps = w.intra_Bps;
    }
  } else if (id < L->nic_base) {
    long r = id - L->pcie_base;
    long node = plat_gpu_node(c, (int)(r / 2));
    node_worth w = worth_of(c, node);
    o->kind = plat_node_pcie(c, node) ? PLAT_LINK_PCIE : PLAT_LINK_UNUSED;
    if (o->kind == PLAT_LINK_UNUSED) /* a group that does not model PCIe */
      NAME( "unused-%ld", id);
    else
      NAME( "pcie-%ld-%s", gpu0 + r / 2, dir_name[r % 2]);
    o->bw_Bps = w.pcie_Bps;
    o->lat_s = w.pcie_lat_s;
  } else if (id < L->fab_base && c->fabric_kind == PLAT_FABRIC_TORUS) {
    long r = id - L->nic_base, q = r / 2, node = q / c->dcn_nics;
    NAME( "%sdcn-%ld-%ld-%s", pfx, node0 + node, q % c->dcn_nics,
             dir_name[r % 2]);
    o->kind = PLAT_LINK_NIC;
    o->bw_Bps = c->dcn_Bps;
    o->lat_s = c->dcn_lat_s;
  } else if (id < L->fab_base) {
    long r = id - L->nic_base, q = r / 2, node = q / c->nics_per_node;
    node_worth w = worth_of(c, node);
    NAME( "nic-%ld-%ld-%s", node0 + node, q % c->nics_per_node,
             dir_name[r % 2]);
    /* a port of the widest node's that this node's group does not cable */
    o->kind = q % c->nics_per_node < plat_node_nics(c, node) ? PLAT_LINK_NIC : PLAT_LINK_UNUSED;
    o->bw_Bps = w.nic_Bps;
    o->lat_s = w.nic_lat_s;
  } else if (c->fabric_kind == PLAT_FABRIC_TORUS) {
    long r = id - L->fab_base;
    static const char axis[3] = {'x', 'y', 'z'};
    NAME( "%sici-%ld-%c%c", pfx, gpu0 + r / 6, axis[(r % 6) / 2],
             r % 2 ? '-' : '+');
    o->kind = PLAT_LINK_ICI;
    o->bw_Bps = c->fabric_link_Bps;
    o->lat_s = c->fabric_link_lat_s;
  } else if (c->fabric_kind == PLAT_FABRIC_DRAGONFLY) {
    if (id < L->dg_base) {
      long r = id - L->dl_base, router = r / (L->a - 1);
      long j = r % (L->a - 1), i = router % L->a;
      if (j >= i)
        j++;
      NAME( "%sdf-g%ld-r%ld-r%ld", pfx, router / L->a, i, j);
      o->kind = PLAT_LINK_FABRIC;
      o->bw_Bps = c->fabric_link_Bps;
    } else {
      long r = id - L->dg_base, per = L->a * L->hh;
      long G = r / per, q = r % per, G2 = q < G ? q : q + 1;
      NAME( "%sdf-g%ld-g%ld", pfx, G, G2);
      o->kind = PLAT_LINK_GLOBAL;
      o->bw_Bps = c->fabric_global_Bps;
    }
    o->lat_s = c->fabric_link_lat_s;
  } else {
    int i = L->h;
    while (i > 2 && id < L->ft_base[i])
      i--;
    long r = id - L->ft_base[i], q = r / 2;
    /* the up (down) links of level-(i-1) group q, one link of their sum */
    NAME( "%sft-g%d.%ld-%s", pfx, i - 1, q, dir_name[r % 2]);
    o->kind = PLAT_LINK_FABRIC;
    o->bw_Bps = (double)L->W[i] * c->fabric_link_Bps / c->oversub[i - 2];
    o->lat_s = c->fabric_link_lat_s;
  }
#undef NAME
}

int plat_route_get(const plat_cluster *c, int src, int dst, plat_route *r, st_err *err)
{
  if (c->fabric_kind == PLAT_FABRIC_XML)
    return st_err_set(err, ST_EINPUT,
                      "cluster '%s': routes of a SimGrid XML platform are known only to SimGrid "
                      "(use sg_host_get_route)",
                      c->name);
  int ends = c->num_gpus + (c->host_memory ? c->num_nodes : 0);
  if (src < 0 || src >= ends || dst < 0 || dst >= ends)
    return st_err_set(err, ST_EINPUT, "cluster '%s': GPU %d is out of range (0..%d)", c->name,
                      src < 0 || src >= ends ? src : dst, c->num_gpus - 1);
  plat__lay L;
  plat__layout(c, &L);
  memset(r, 0, sizeof *r);
  int n = plat__route_ids(c, &L, src, dst, r->link_ids, &r->switches);
  if (n < 0 && (src >= c->num_gpus || dst >= c->num_gpus))
    return st_err_set(err, ST_EINPUT,
                      "cluster '%s': no route from %s%d to %s%d (host memory is reached from its "
                      "node's own GPUs only)",
                      c->name, src >= c->num_gpus ? "host-" : "gpu-",
                      src >= c->num_gpus ? src - c->num_gpus : src,
                      dst >= c->num_gpus ? "host-" : "gpu-",
                      dst >= c->num_gpus ? dst - c->num_gpus : dst);
  if (n < 0)
    return st_err_set(err, ST_EINPUT, "cluster '%s': route gpu-%d -> gpu-%d has more than %d links",
                      c->name, src, dst, PLAT_ROUTE_MAX);
  r->n = n;
  r->bw_Bps = 0;
  for (int i = 0; i < n; i++) {
    plat__link_info(c, &L, r->link_ids[i], &r->links[i]);
    r->latency_s += r->links[i].lat_s;
    if (i == 0 || r->links[i].bw_Bps < r->bw_Bps)
      r->bw_Bps = r->links[i].bw_Bps;
  }
  r->latency_s += r->switches * c->switch_lat_s;
  return ST_OK;
}

double plat_route_latency(const plat_cluster *c, int src, int dst)
{
  int ends = c->num_gpus + (c->host_memory ? c->num_nodes : 0);
  if (c->fabric_kind == PLAT_FABRIC_XML || src < 0 || src >= ends || dst < 0 || dst >= ends)
    return NAN;
  if (c->num_pods > 0) { /* the pods' own link table: by the full route */
    plat_route r;
    st_err e;
    return plat_route_get(c, src, dst, &r, &e) ? NAN : r.latency_s;
  }
  plat__lay L;
  plat__layout(c, &L);
  int ids[PLAT_ROUTE_MAX], sw = 0;
  int n = plat__route_ids(c, &L, src, dst, ids, &sw);
  if (n < 0)
    return NAN;
  double lat = 0;
  plat_link_info li;
  for (int i = 0; i < n; i++) {
    plat__link_info_at(c, &L, ids[i], 0, 0, NULL, &li);
    lat += li.lat_s;
  }
  return lat + sw * c->switch_lat_s;
}

long plat_cluster_links_built(const plat_cluster *c)
{
  if (c->num_groups <= 1 || c->num_pods > 0 || c->fabric_kind == PLAT_FABRIC_XML)
    return c->num_links;
  plat__lay L;
  plat__layout(c, &L);
  long n = 0;
  plat_link_info li;
  for (long id = 0; id < L.total; id++) {
    plat__link_info(c, &L, id, &li);
    n += li.kind != PLAT_LINK_UNUSED;
  }
  return n;
}

long plat_cluster_switch_count(const plat_cluster *c)
{
  if (c->num_pods > 0)
    return plat__pods_switch_count(c);
  plat__lay L;
  plat__layout(c, &L);
  switch (c->fabric_kind) {
  case PLAT_FABRIC_SWITCH: return 1;
  case PLAT_FABRIC_FATTREE:
  case PLAT_FABRIC_RAIL_FATTREE: {
    /* Levels below the top as the XGFT has them.  The top level as it is
     * cabled: its switches form W_{h-1} core groups, group g joining switch g
     * of every level-(h-1) group; a group's m_h x w_h links fill
     * ceil(m_h w_h / radix) switches, each reaching every level-(h-1) group
     * (the DGX SuperPOD counts: 16 SU 64 core switches, 32 SU 128, 64 SU 256). */
    if (L.h == 1)
      return 1;
    long s = 0, R = c->fabric_radix;
    for (int i = 1; i < L.h; i++)
      s += L.N[i];
    return s + L.W[L.h - 1] * ((L.m[L.h] * L.w[L.h] + R - 1) / R);
  }
  case PLAT_FABRIC_DRAGONFLY: return L.groups * L.a;
  default: return 0;
  }
}

double plat_cluster_bisection_Bps(const plat_cluster *c)
{
  if (c->num_pods > 0)
    return plat__pods_bisection_Bps(c);
  plat__lay L;
  plat__layout(c, &L);
  if (c->fabric_kind == PLAT_FABRIC_TORUS) {
    int dmax = 0;
    for (int k = 0; k < 3; k++)
      if (c->torus_dims[k] > dmax)
        dmax = c->torus_dims[k];
    if (dmax < 2)
      return 0;
    double cross = (double)c->num_gpus / dmax * c->fabric_link_Bps;
    return c->torus_wrap && dmax > 2 ? 2 * cross : cross;
  }
  if (c->num_nodes == 1) {
    /* GPUs [0, gpn/2) against the rest: the capacity of intra links from the
     * first half to the second. */
    int gpn = c->gpus_per_node, half = gpn / 2;
    switch (c->intra_kind) {
    case PLAT_INTRA_NVSWITCH:
    case PLAT_INTRA_NVL_RACK: return half * c->intra_Bps;
    case PLAT_INTRA_FULLMESH: return (double)half * (gpn - half) * c->intra_link_Bps;
    case PLAT_INTRA_CUBEMESH: {
      double s = 0;
      for (int i = 0; i < 4; i++)
        for (int j = 4; j < 8; j++)
          s += cube_lanes[i][j] * c->intra_link_Bps;
      return s;
    }
    default: return 0;
    }
  }
  /* Whole nodes on each side: the NICs' capacity, then each fabric level's
   * up-link capacity; the cut crosses half of the smallest. */
  double nics = (double)c->num_nodes * c->nics_per_node * c->nic_Bps;
  if (c->num_groups > 1) {
    nics = 0;
    for (int k = 0; k < c->num_groups; k++)
      nics += (double)c->groups[k].num_nodes * c->groups[k].nics_per_node * c->groups[k].nic_Bps;
  }
  double best = nics;
  if (c->fabric_kind == PLAT_FABRIC_FATTREE || c->fabric_kind == PLAT_FABRIC_RAIL_FATTREE) {
    for (int i = 2; i <= L.h; i++) {
      double cap = (double)L.N[i - 1] * L.w[i] * c->fabric_link_Bps / c->oversub[i - 2];
      /* only levels whose switches have traffic to carry across the cut */
      if (L.N[i - 1] / L.W[i - 1] > 1 && cap < best)
        best = cap;
    }
  } else if (c->fabric_kind == PLAT_FABRIC_DRAGONFLY && L.groups > 1) {
    double half = (double)(L.groups / 2);
    double cap = 2 * half * (L.groups - half) * c->fabric_global_Bps;
    if (cap < best)
      best = cap;
  }
  return best / 2;
}

const char *plat_intra_kind_name(int kind)
{
  static const char *const names[PLAT_INTRA_COUNT] = {"nvswitch", "cube-mesh", "full-mesh",
                                                      "nvl-rack", "none"};
  return kind >= 0 && kind < PLAT_INTRA_COUNT ? names[kind] : "?";
}

const char *plat_fabric_kind_name(int kind)
{
  static const char *const names[PLAT_FABRIC_COUNT] = {
      "switch", "rail-fat-tree", "fat-tree", "dragonfly", "torus", "xml", "pods"};
  return kind >= 0 && kind < PLAT_FABRIC_COUNT ? names[kind] : "?";
}
