/* coll.c — collective algorithms as NCCL runs them, as per-member schedules of flows.
 *
 * docs/collectives.md is the long form of these notes (derivations, sources).
 *
 *  1. Layout.  A communicator's members are grouped by node (sim_coll_layout);
 *     every algorithm is laid on that grouping: chains inside nodes, NICs
 *     between them, as NCCL's graph search lays its rings and trees.
 *  2. Edges.  An algorithm lists, for member m, the flows it sends and
 *     receives (peer, payload bytes, link kind).  All of them run at once
 *     (NCCL pipelines chunks through every stage), so the time is set by the
 *     most loaded link.  The payload is divided by the protocol's efficiency
 *     on that link kind: what the link carries is the wire traffic.
 *  3. Fidelity.  Flow fidelity: one round with every edge as one flow, after
 *     a wait for the algorithm's latency terms (minus the route latency the
 *     flow pays itself).  Step fidelity: the same edges cut into K rounds
 *     (ring: its 2(n-1) or n-1 steps; others: chunks of >= 16 MiB, at most
 *     64), each after 1/K of the latency terms.  Each round ends when all of
 *     a member's flows end; each round pays the route latency of the link
 *     kind that ends it (NVLink 1 us, NIC 2 us), so the two agree unless
 *     that kind differs from the one that ends the whole transfer (then step
 *     is up to K x the latency difference slower).
 *  4. Cost model (NCCL_MODEL below): latencies from NCCL's tuning model
 *     (src/graph/tuning.cc: baseLat, hwLat, per algorithm and protocol),
 *     bandwidth efficiencies from NCCL's per-link NVLink bandwidths
 *     (src/graph/topo.h) and protocol factors (tuning.cc), NIC efficiency
 *     from the nccl-tests maintainers' figures, NCCL's per-channel NVLS-tree
 *     ceiling, and three fitted terms (the NVLS pipeline fill, the ring
 *     Simple fill on Ampere, the in-network reduction rate on Hopper) — each
 *     documented where it is defined.
 *  5. Tuner.  sim_coll_choose() estimates every (algorithm, protocol) the op,
 *     the platform and the layout allow with closed forms of the same link
 *     loads, and takes the fastest, as NCCL's ncclTopoGetAlgoTime() does.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_int.h"

static const char *const algo_names[SIM_ALGO_COUNT] = {
    "ring", "direct", "chain", "tree", "nvls", "nvls_tree", "collnet", "hier", "torus"};
static const char *const proto_names[SIM_PROTO_COUNT] = {"ll", "ll128", "simple"};

const char *sim_coll_algo_name(int algo)
{
  return algo >= 0 && algo < SIM_ALGO_COUNT ? algo_names[algo] : "?";
}

const char *sim_coll_proto_name(int proto)
{
  return proto >= 0 && proto < SIM_PROTO_COUNT ? proto_names[proto] : "?";
}

int sim_coll_algo_from_name(const char *s)
{
  for (int i = 0; i < SIM_ALGO_COUNT; i++)
    if (!strcmp(s, algo_names[i]))
      return i;
  return -1;
}

int sim_coll_proto_from_name(const char *s)
{
  for (int i = 0; i < SIM_PROTO_COUNT; i++)
    if (!strcmp(s, proto_names[i]))
      return i;
  return -1;
}

/* ---- schedules ------------------------------------------------------------ */

void sim_sched_init(sim_sched *s) { memset(s, 0, sizeof *s); }

void sim_sched_release(sim_sched *s)
{
  free(s->rounds);
  free(s->xfers);
  sim_sched_init(s);
}

void sim_sched_clear(sim_sched *s)
{
  s->nrounds = 0;
  s->nxfers = 0;
}

static sim_round *round_new(sim_sched *s, double pre_s)
{
  if (s->nrounds == s->cap_rounds) {
    size_t cap = s->cap_rounds ? s->cap_rounds * 2 : 8;
    sim_round *r = realloc(s->rounds, cap * sizeof *r);
    if (!r)
      return NULL;
    s->rounds = r;
    s->cap_rounds = cap;
  }
  sim_round *r = &s->rounds[s->nrounds++];
  memset(r, 0, sizeof *r);
  r->pre_s = pre_s;
  r->send_first = r->recv_first = (uint32_t)s->nxfers;
  return r;
}

/* Add a transfer to the last round; sends must all come before receives. */
static int xfer_add(sim_sched *s, int is_send, int peer, double bytes)
{
  if (s->nxfers == s->cap_xfers) {
    size_t cap = s->cap_xfers ? s->cap_xfers * 2 : 16;
    sim_xfer *x = realloc(s->xfers, cap * sizeof *x);
    if (!x)
      return ST_ENOMEM;
    s->xfers = x;
    s->cap_xfers = cap;
  }
  sim_round *r = &s->rounds[s->nrounds - 1];
  s->xfers[s->nxfers].peer = peer;
  s->xfers[s->nxfers].bytes = bytes;
  s->nxfers++;
  if (is_send) {
    r->nsend++;
    r->recv_first = r->send_first + r->nsend;
  } else {
    r->nrecv++;
  }
  return ST_OK;
}

/* ---- layout ----------------------------------------------------------------- */

typedef struct mkey {
  int32_t node, local, member;
} mkey;

static int mkey_cmp(const void *a, const void *b)
{
  const mkey *x = a, *y = b;
  if (x->node != y->node)
    return x->node < y->node ? -1 : 1;
  if (x->local != y->local)
    return x->local < y->local ? -1 : 1;
  return x->member < y->member ? -1 : x->member > y->member;
}

int sim_coll_layout_build(st_arena *a, const int32_t *ranks, int n, const plat_cluster *cl,
                          sim_coll_layout *out)
{
  memset(out, 0, sizeof *out);
  size_t sz = (size_t)n * sizeof(int32_t);
  mkey *k = malloc((size_t)n * sizeof *k);
  out->node_of = st_arena_alloc(a, sz);
  out->pos = st_arena_alloc(a, sz);
  out->local = st_arena_alloc(a, sz);
  out->node_first = st_arena_alloc(a, sz);
  out->node_cnt = st_arena_alloc(a, sz);
  out->by_node = st_arena_alloc(a, sz);
  if (!k || !out->node_of || !out->pos || !out->local || !out->node_first || !out->node_cnt ||
      !out->by_node) {
    free(k);
    return ST_ENOMEM;
  }
  int gpn = cl->gpus_per_node > 0 ? cl->gpus_per_node : 1;
  for (int m = 0; m < n; m++) {
    k[m].node = ranks[m] / gpn;
    k[m].local = ranks[m] % gpn;
    k[m].member = m;
  }
  qsort(k, (size_t)n, sizeof *k, mkey_cmp);
  out->n = n;
  int node = -1;
  for (int i = 0; i < n; i++) {
    if (i == 0 || k[i].node != k[i - 1].node) {
      node++;
      out->node_first[node] = i;
      out->node_cnt[node] = 0;
    }
    int m = k[i].member;
    out->by_node[i] = m;
    out->node_of[m] = node;
    out->pos[m] = out->node_cnt[node]++;
    out->local[m] = k[i].local;
  }
  out->nnodes = node + 1;
  out->m_min = n;
  out->m_max = 0;
  for (int j = 0; j < out->nnodes; j++) {
    if (out->node_cnt[j] < out->m_min)
      out->m_min = out->node_cnt[j];
    if (out->node_cnt[j] > out->m_max)
      out->m_max = out->node_cnt[j];
  }
  free(k);
  return ST_OK;
}

static int lay_member(const sim_coll_layout *l, int node, int pos)
{
  int c = l->node_cnt[node];
  return l->by_node[l->node_first[node] + ((pos % c) + c) % c];
}

/* ---- the cost model (NCCL_MODEL) ----------------------------------------- */

enum { ARCH_VOLTA = 0, ARCH_AMPERE, ARCH_HOPPER, ARCH_BLACKWELL, ARCH_CDNA3, ARCH_COUNT };

static int device_arch(const plat_device *d)
{
  const char *s = d->name;
  if (strstr(s, "V100"))
    return ARCH_VOLTA;
  if (strstr(s, "MI300") || strstr(s, "MI325"))
    return ARCH_CDNA3;
  if (strstr(s, "A100") || strstr(s, "A800") || strstr(s, "A30") || strstr(s, "A10"))
    return ARCH_AMPERE;
  if (strstr(s, "B100") || strstr(s, "B200") || strstr(s, "B300"))
    return ARCH_BLACKWELL;
  return ARCH_HOPPER; /* H100, H200, H800, GH200, and accelerators without NCCL data */
}

/* NVLink payload efficiency with the Simple protocol: NCCL's per-link
 * bandwidth over the link's line rate (src/graph/topo.h: SM70/SM80 20.0,
 * SM90 20.6, SM100 40.1 GB/s per link of 25, 25, 25, 50 GB/s).  CDNA3
 * (MI300X xGMI): RCCL's per-link bandwidth the same way, GFX94X_XGMI_WIDTH
 * 48.0 GB/s (ROCm/rccl src/graph/topo.h) of 64 GB/s per link, which AMD's
 * TransferBench run measures at 45-47 GB/s per link (ROCm blog "Understanding
 * RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X", 2025-03-02). */
static const double nvl_eff[ARCH_COUNT] = {0.80, 0.80, 0.824, 0.802, 0.75};
/* NVLS efficiency (src/graph/tuning.cc nvlsEfficiency): Hopper 0.85, Blackwell 0.74. */
static const double nvls_eff[ARCH_COUNT] = {0, 0, 0.85, 0.74, 0};
/* LL's single-node bandwidth ceiling in GB/s of busBw (tuning.cc llMaxBws, N1 column)
 * and the multi-node ones (x86 Intel row: 2 nodes 39.0, more 20.4).  RCCL's
 * tuner has no such ceiling (it scales LL by a ratio of its own channel
 * model); CDNA3 takes Hopper's. */
static const double ll_max_GBps[ARCH_COUNT] = {39.0, 87.7, 141.0, 282.0, 141.0};
/* NIC payload efficiency with Simple: 400 Gb/s NDR reaches 46-48 GB/s of 50
 * per NIC in nccl-tests (NVIDIA/nccl-tests issue #290, maintainer). */
#define NIC_EFF 0.94
/* In-network reduction on Hopper and later, fitted: NVIDIA's published
 * NVLink SHARP + IB SHARP all-reduce on DGX H100 is ~480 GB/s busBw on 32
 * GPUs (GTC24 S62129, GTC25 S72583), i.e. algbw 248 GB/s, which the NICs
 * carry at S/8 each: 31 GB/s of payload per 400 Gb/s NIC, 0.66 of NIC_EFF.
 * (NCCL's tuning model ranks CollNet with 0.85 there, tuning.cc "if
 * (minCompCap >= 90) busBw *= .85"; that leaves NVLS NVLink-bound at
 * 523-541 GB/s, above every published figure.)  Ampere's CollNet: 1. */
#define SHARP_EFF 0.66
/* Protocol factors against Simple (tuning.cc): LL128 0.92 (120/128 payload
 * minus flag overhead), LL 0.5 (8-byte flag per 8-byte datum). */
static const double proto_factor[SIM_PROTO_COUNT] = {0.5, 0.92, 1.0};

/* NCCL's latency tables in microseconds (tuning.cc, NCCL 2.2x):
 * baseLat[algo][proto] and hwLat[NVLINK|NET][algo][proto], for the NCCL
 * algorithms Tree, Ring, CollNet(chain), NVLS, NVLS tree. */
enum { NA_TREE = 0, NA_RING, NA_COLLNET, NA_NVLS, NA_NVLS_TREE, NA_COUNT };
static const double base_lat[NA_COUNT][SIM_PROTO_COUNT] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
static const double hw_lat_nvl[NA_COUNT][SIM_PROTO_COUNT] = {
    {0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}};
static const double hw_lat_net[NA_COUNT][SIM_PROTO_COUNT] = {
    {5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 30}, {0, 0, 18}, {0, 0, 14}};
/* NVLS tree's per-channel bus bandwidth ceiling in GB/s (tuning.cc,
 * ncclTunerConstantsDefaults perChMaxNVLSTreeBws, columns 2 nodes / more):
 * NCCL's tuner caps each NVLS-tree channel there, below both its NVLink term
 * (bwIntra x nvlsEfficiency x 2) and its network term; NVLS has one channel
 * per GPU of the node (src/graph/search.cc: "NVLS channels correspond to GPUs
 * pulling from NVLS").  Volta and Ampere have no NVLS. */
static const double nvls_tree_ch_max_GBps[ARCH_COUNT][2] = {
    {0, 0}, {0, 0}, {57.7, 45.5}, {96.0, 80.0}, {0, 0}};
/* NVLS pipeline fill, fitted: NCCL's tuning latency for NVLS (25 us) is a
 * ranking figure; DGX H100 nccl-tests all_reduce times from 64 MiB to 1 GiB
 * sit 80-110 us above the bandwidth term (docs/collectives.md, "Calibration"). */
#define NVLS_FILL_US 65.0
/* Ring pipeline fill with the Simple protocol, fitted (Ampere only): what a
 * ring step loses to its slice hand-offs, as a share of the step's transfer,
 * charged on at most one loop of NCCL's chunks, since later loops overlap it
 * (RING_FILL_LOOP_B per member, also fitted: 128 MiB on 8 GPUs, where the
 * series' busbw stops plateauing).  NCCL's tuning model has no such
 * term, so the tuner does not see it (NCCL picks Simple where it then runs
 * slower than its model says).  Fitted on the DGX A100 nccl-tests series from
 * 32 MiB (docs/collectives.md, "Calibration"); Hopper's all-reduce runs NVLS
 * at those sizes and its only ring Simple figure (16 GiB) cannot see a fill,
 * so it has none. */
static const double ring_fill[ARCH_COUNT] = {0, 0.29, 0, 0, 0};
#define RING_FILL_LOOP_B (16.0 * 1048576)
/* Network post overhead per inter-node step (tuning.cc getNetOverhead: 1 us
 * on x86, three times that with Simple). */
#define NET_OVERHEAD_US 1.0

/* The collective library each device runs, for what differs from NCCL:
 * which algorithms its tuner picks on which fabric, its protocols and (RCCL)
 * its latency table.  XLA: any chip on a torus fabric. */
enum { LIB_NCCL = 0, LIB_RCCL, LIB_HCCL, LIB_XLA };

static int coll_lib(const plat_cluster *cl)
{
  if (cl->fabric_kind == PLAT_FABRIC_TORUS)
    return LIB_XLA;
  if (device_arch(&cl->device) == ARCH_CDNA3)
    return LIB_RCCL;
  if (strstr(cl->device.name, "Ascend"))
    return LIB_HCCL;
  return LIB_NCCL;
}

/* RCCL's latencies for the MI300X single node (ROCm/rccl src/graph/tuning.cc,
 * baseLat and tuning_model_5, the model its rome_models.cc assigns to 8
 * MI300X on one xGMI mesh), microseconds: baseLat {12, 12, 17} for Tree and
 * Ring; xGMI hwLat Tree {0.9, 0, 2.3}, Ring {0.8, 0, 2.1}, CollNet 0.9.
 * Network latencies stay NCCL's (tuning_model_5's network Ring Simple, 320
 * us a step, ranks rather than times). */
static const double rccl_base_lat[NA_COUNT][SIM_PROTO_COUNT] = {
    {12.0, 12.0, 17.0}, {12.0, 12.0, 17.0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
static const double rccl_hw_lat_nvl[NA_COUNT][SIM_PROTO_COUNT] = {
    {0.9, 0, 2.3}, {0.8, 0, 2.1}, {0, 0, 0.9}, {0, 0, 0}, {0, 0, 0}};

/* RCCL's direct all-reduce on one node of 8 MI300X: MSCCL's all-pairs
 * algorithms (ROCm/rccl tools/msccl-algorithms/allreduce-allpairs-8n-*.xml,
 * enabled by rome_models.cc "mscclEnabled=1" for that node), LL from 0 to
 * 524287 bytes, Simple from 524288 to 16 MiB; rings above. */
#define RCCL_DIRECT_LL_MAX_B 524287.0
#define RCCL_DIRECT_MAX_B (16.0 * 1048576)

static double log2i(int n)
{
  int l = 0;
  while (n > 1) {
    n >>= 1;
    l++;
  }
  return l;
}

typedef struct model {
  int arch, ideal;
  double e_intra, e_nic, e_nvls, e_sharp; /* payload / wire, per link kind */
  double e_nvls_tree; /* NVLS inside nodes under NVLS tree: e_nvls, or less
                         where NCCL's per-channel ceiling binds */
} model;

static void model_init(const sim_coll_ctx *c, int proto, model *md)
{
  const plat_cluster *cl = c->cl;
  md->arch = device_arch(&cl->device);
  md->ideal = c->model == SIM_COLL_IDEAL;
  if (md->ideal) {
    md->e_intra = md->e_nic = md->e_nvls = md->e_sharp = md->e_nvls_tree = 1.0;
    return;
  }
  double f = proto_factor[proto];
  md->e_intra = nvl_eff[md->arch] * f;
  md->e_nic = NIC_EFF * f;
  if (proto == SIM_PROTO_LL) {
    int nodes = c->lay->nnodes;
    if (cl->intra_Bps > 0)
      md->e_intra = fmin(md->e_intra, ll_max_GBps[md->arch] * 1e9 / cl->intra_Bps);
    double net_cap = nodes <= 2 ? 39.0e9 : 20.4e9;
    double node_nic = cl->nic_Bps * (cl->nics_per_node > 0 ? cl->nics_per_node : 1);
    if (nodes > 1 && node_nic > 0)
      md->e_nic = fmin(md->e_nic, net_cap / node_nic);
  }
  md->e_nvls = nvl_eff[md->arch] * nvls_eff[md->arch];
  md->e_sharp = NIC_EFF * (md->arch >= ARCH_HOPPER ? SHARP_EFF : 1.0);
  /* NVLS tree: busbw <= k x ceiling (k channels), i.e. algbw <= k x ceiling x
   * n / (2 (n-1)); the NVLink load per GPU is (k+1)/k S, so the ceiling is an
   * NVLS efficiency of that algbw x (k+1)/k / per-GPU NVLink rate.  It is
   * charged on the NVLink flows: the ceiling is the heads' pipeline (NVLS
   * and network in the same channel), not a NIC's wire. */
  md->e_nvls_tree = md->e_nvls;
  const sim_coll_layout *l = c->lay;
  double ch_max = l->nnodes > 1 ? nvls_tree_ch_max_GBps[md->arch][l->nnodes > 2] : 0;
  if (ch_max > 0 && cl->intra_Bps > 0 && c->n > 1) {
    int k = l->m_max;
    double alg_Bps = k * ch_max * 1e9 * c->n / (2.0 * (c->n - 1));
    md->e_nvls_tree = fmin(md->e_nvls, alg_Bps * (k + 1.0) / k / cl->intra_Bps);
  }
}

static int nccl_algo_of(int algo)
{
  switch (algo) {
  case SIM_ALGO_TREE: return NA_TREE;
  case SIM_ALGO_COLLNET: return NA_COLLNET;
  case SIM_ALGO_NVLS: return NA_NVLS;
  case SIM_ALGO_NVLS_TREE: return NA_NVLS_TREE;
  default: return NA_RING;
  }
}

/* The algorithm's sequential hops (IDEAL model: each costs one route latency). */
static double algo_hops(int algo, int op, int n, int nodes, int m, const int *dims)
{
  switch (algo) {
  case SIM_ALGO_RING:
    return op == WL_COLL_ALLREDUCE || op == WL_COLL_BARRIER ? 2.0 * (n - 1) : n - 1;
  case SIM_ALGO_DIRECT: return op == WL_COLL_ALLREDUCE ? 2 : 1; /* all-reduce: RS + AG */
  case SIM_ALGO_CHAIN: return n - 1;
  case SIM_ALGO_TREE: return 2 * ((m - 1) + log2i(nodes));
  case SIM_ALGO_NVLS: return nodes > 1 ? 4 : 2;
  case SIM_ALGO_NVLS_TREE: return 2 + 2 * log2i(nodes);
  case SIM_ALGO_COLLNET: return 2 * (m - 1) + 2;
  case SIM_ALGO_HIER: return 2.0 * (m - 1) + 2.0 * (nodes - 1);
  case SIM_ALGO_TORUS: {
    double h = 0;
    for (int d = 0; d < 3; d++)
      h += dims[d] - 1;
    return op == WL_COLL_ALLREDUCE ? 2 * h : h;
  }
  }
  return 1;
}

/* Latency terms of (algo, proto) in seconds: NCCL's formulas (tuning.cc
 * ncclTopoTuneModel and ncclTopoGetAlgoTime). */
static double algo_latency(const sim_coll_ctx *c, int algo, int proto, const int *dims)
{
  const sim_coll_layout *l = c->lay;
  int n = c->n, nodes = l->nnodes, ppn = l->m_max;
  if (c->op == WL_COLL_SHIFT) /* point-to-point copies: each flow pays its own route */
    return 0;
  if (c->model == SIM_COLL_IDEAL)
    return algo_hops(algo, c->op, n, nodes, ppn, dims) * c->ring_lat_max;
  int a = nccl_algo_of(algo), p = proto;
  int rccl = coll_lib(c->cl) == LIB_RCCL;
  const double(*bl)[SIM_PROTO_COUNT] = rccl ? rccl_base_lat : base_lat;
  const double(*hn)[SIM_PROTO_COUNT] = rccl ? rccl_hw_lat_nvl : hw_lat_nvl;
  double intra = hn[a][p], inter = hw_lat_net[a][p], lat = bl[a][p];
  int op = c->op;
  switch (algo) {
  case SIM_ALGO_RING:
  case SIM_ALGO_HIER:
  case SIM_ALGO_TORUS: {
    int steps = op == WL_COLL_ALLREDUCE || op == WL_COLL_BARRIER ? 2 * (n - 1) : n - 1;
    int isteps = nodes == 1 ? 0 : op == WL_COLL_ALLREDUCE ? 2 * (nodes - 1) : nodes - 1;
    if (algo == SIM_ALGO_TORUS)
      steps = (int)algo_hops(algo, op, n, nodes, ppn, dims), isteps = 0;
    if (algo == SIM_ALGO_HIER)
      steps = (int)algo_hops(algo, op, n, nodes, ppn, dims);
    if (nodes > 1)
      intra = fmax(intra, NET_OVERHEAD_US * (p == SIM_PROTO_SIMPLE ? 3 : 1));
    lat += (steps - isteps) * intra + isteps * inter;
    /* "Plateau effect of ring": multi-node Simple all-reduce, x1.4 from Ampere on */
    if (algo == SIM_ALGO_RING && p == SIM_PROTO_SIMPLE && nodes > 1 && op == WL_COLL_ALLREDUCE)
      lat *= 1.4;
    break;
  }
  case SIM_ALGO_CHAIN: /* ring broadcast/reduce: nsteps x chunk latency of the tree column */
    lat += n * (nodes > 1 ? hw_lat_net[NA_RING][p] : p == SIM_PROTO_SIMPLE ? hn[NA_TREE][p]
                                                                           : hn[NA_RING][p]);
    break;
  case SIM_ALGO_DIRECT: /* one exchange (all-reduce: two, RS then AG), a ring step each */
    lat = bl[NA_RING][p] + algo_hops(algo, op, n, nodes, ppn, dims) *
                               (nodes > 1 ? hw_lat_net[NA_RING][p] : hn[NA_RING][p]);
    break;
  case SIM_ALGO_TREE: lat += 2 * ((ppn - 1) * intra + log2i(nodes) * inter); break;
  case SIM_ALGO_COLLNET: lat += 2 * (ppn - 1) * intra + inter; break;
  case SIM_ALGO_NVLS:
    lat = intra + NVLS_FILL_US + (nodes > 1 ? inter : 0);
    break;
  case SIM_ALGO_NVLS_TREE: lat = intra + NVLS_FILL_US + 2 * log2i(nodes) * inter; break;
  }
  return lat * 1e-6;
}

/* ---- rings on meshes ---------------------------------------------------------
 * On a node whose GPUs are joined pairwise (full mesh, DGX-1 cube-mesh) a
 * ring that runs down the members uses one link of each GPU.  The libraries
 * lay many rings over disjoint links instead:
 *  - RCCL on 8 MI300X (rome_models.cc, the single-node 7-link model): 14
 *    rings, which together cross every directed xGMI link exactly twice;
 *    NCCL on the DGX-1 finds rings over disjoint NVLinks, the 2-lane pairs
 *    carrying two.  The lanes of the DGX-1 cube-mesh split into 3 Hamiltonian
 *    cycles (0-1-5-4-7-6-2-3, 0-4-6-5-7-3-1-2, 0-3-2-1-5-6-7-4), i.e. 6
 *    directed rings, one per lane of every GPU.  Either way every directed
 *    lane carries the same share of the ring's bytes, so member m sends
 *    f S x lanes(m, j) / (its lanes) to each linked member j (f = 2(n-1)/n
 *    for all-reduce) and nothing over two hops.  A full mesh of k members
 *    has k-1 such rings where a decomposition exists (not for k = 4 or 6,
 *    where the same loads need rings of unequal shares; the loads are what
 *    is modelled).
 *  - Across nodes on a full mesh, RCCL's 8-NIC MI300X model lays 8 channels,
 *    each a Hamiltonian path through the node from one GPU's NIC to
 *    another's, which together cross every directed xGMI link once.  Here:
 *    Walecki's zigzag paths (i, i+1, i-1, i+2, ...; k/2 of them cover K_k)
 *    taken both ways, channel ch entering at position ch and leaving at
 *    ch + k/2 on even nodes, the reverse on odd ones, so that every
 *    inter-node edge stays on one rail as the NVSwitch rings do. */

enum { MESH_NO = 0, MESH_ONE_NODE, MESH_ACROSS };

static int ring_mesh(const sim_coll_ctx *c)
{
  const plat_cluster *cl = c->cl;
  const sim_coll_layout *l = c->lay;
  if (cl->fabric_kind == PLAT_FABRIC_TORUS || cl->fabric_kind == PLAT_FABRIC_XML || c->n < 2)
    return MESH_NO;
  if (l->nnodes == 1) {
    if (cl->intra_kind == PLAT_INTRA_FULLMESH)
      return MESH_ONE_NODE;
    if (cl->intra_kind == PLAT_INTRA_CUBEMESH && c->n == 8)
      return MESH_ONE_NODE; /* the whole DGX-1 */
    return MESH_NO;
  }
  if (cl->intra_kind == PLAT_INTRA_FULLMESH && l->m_min == l->m_max && l->m_min % 2 == 0)
    return MESH_ACROSS;
  return MESH_NO;
}

static int member_lanes(const sim_coll_ctx *c, int a, int b)
{
  return plat_intra_lanes(c->cl, c->lay->local[a], c->lay->local[b]);
}

/* Lanes from member m to the other members (all on m's node). */
static int lanes_out(const sim_coll_ctx *c, int m)
{
  int w = 0;
  for (int j = 0; j < c->n; j++)
    w += member_lanes(c, m, j);
  return w;
}

/* Vertex j of zigzag path i of K_k (k even): i, i+1, i-1, i+2, i-2, ..., i+k/2. */
static int zigzag(int k, int i, int j)
{
  int v = j == 0 ? i : j % 2 ? i + (j + 1) / 2 : i - j / 2;
  return ((v % k) + k) % k;
}

/* Position of the j-th member channel ch visits on a node of k members:
 * path ch (ch < k/2) or path ch - k/2 backwards, from ch to ch + k/2;
 * odd nodes run it backwards. */
static int mesh_visit(int k, int node, int ch, int j)
{
  int h = k / 2;
  ch %= k;
  if (node % 2)
    j = k - 1 - j;
  return ch < h ? zigzag(k, ch, j) : zigzag(k, ch - h, k - 1 - j);
}

static void mesh_neighbours(const sim_coll_layout *l, int ch, int m, int *next, int *prev)
{
  int k = l->node_of[m], p = l->pos[m], mk = l->node_cnt[k], N = l->nnodes;
  int j = 0;
  while (j < mk - 1 && mesh_visit(mk, k, ch, j) != p)
    j++;
  int kn = (k + 1) % N, kp = (k - 1 + N) % N;
  *next = j < mk - 1 ? lay_member(l, k, mesh_visit(mk, k, ch, j + 1))
                     : lay_member(l, kn, mesh_visit(l->node_cnt[kn], kn, ch, 0));
  *prev = j > 0 ? lay_member(l, k, mesh_visit(mk, k, ch, j - 1))
                : lay_member(l, kp, mesh_visit(l->node_cnt[kp], kp, ch, l->node_cnt[kp] - 1));
}

/* ---- which algorithms may run -------------------------------------------- */

static void torus_dims(const sim_coll_ctx *c, int *dims)
{
  const plat_cluster *cl = c->cl;
  dims[0] = c->n;
  dims[1] = dims[2] = 1;
  int p = cl->torus_dims[0] * cl->torus_dims[1] * cl->torus_dims[2];
  if (p == c->n && p > 1)
    for (int d = 0; d < 3; d++)
      dims[d] = cl->torus_dims[d] > 0 ? cl->torus_dims[d] : 1;
}

static int algo_allowed(const sim_coll_ctx *c, int algo, int forced)
{
  const plat_cluster *cl = c->cl;
  const sim_coll_layout *l = c->lay;
  int nodes = l->nnodes, op = c->op;
  int uniform = l->m_min == l->m_max;
  /* XLA on a torus runs its rings per dimension, never NCCL's tree, NVLS or
   * CollNet (those need switches the torus does not have) */
  int torus = cl->fabric_kind == PLAT_FABRIC_TORUS;
  switch (algo) {
  case SIM_ALGO_RING:
    return (op == WL_COLL_ALLREDUCE || op == WL_COLL_ALLGATHER || op == WL_COLL_REDUCESCATTER ||
            op == WL_COLL_BARRIER) &&
           (forced || !torus || op == WL_COLL_BARRIER);
  case SIM_ALGO_DIRECT:
    /* all-pairs reduce-scatter / all-gather on one node: chosen by the
     * library rule (lib_rule), or when asked */
    return op == WL_COLL_ALLTOALL || op == WL_COLL_SHIFT ||
           (forced && nodes == 1 && cl->intra_kind != PLAT_INTRA_CUBEMESH && !torus &&
            (op == WL_COLL_ALLREDUCE || op == WL_COLL_ALLGATHER || op == WL_COLL_REDUCESCATTER));
  case SIM_ALGO_CHAIN: return op == WL_COLL_BROADCAST || op == WL_COLL_REDUCE;
  case SIM_ALGO_TREE: return op == WL_COLL_ALLREDUCE && nodes > 1 && (forced || !torus);
  case SIM_ALGO_NVLS:
    return op == WL_COLL_ALLREDUCE && cl->nvls && l->m_min >= 2 && uniform &&
           (nodes == 1 || cl->in_network_reduction);
  case SIM_ALGO_NVLS_TREE:
    return op == WL_COLL_ALLREDUCE && cl->nvls && nodes > 1 && l->m_min >= 2 && uniform;
  case SIM_ALGO_COLLNET:
    return op == WL_COLL_ALLREDUCE && cl->in_network_reduction && nodes > 1 && uniform;
  case SIM_ALGO_HIER:
    return op == WL_COLL_ALLREDUCE && nodes > 1 && uniform && forced;
  case SIM_ALGO_TORUS:
    return (op == WL_COLL_ALLREDUCE || op == WL_COLL_ALLGATHER || op == WL_COLL_REDUCESCATTER) &&
           (forced || cl->fabric_kind == PLAT_FABRIC_TORUS);
  }
  return 0;
}

static int proto_allowed(const sim_coll_ctx *c, int algo, int proto, int ideal)
{
  if (ideal)
    return proto == SIM_PROTO_SIMPLE;
  switch (coll_lib(c->cl)) {
  case LIB_HCCL: /* copies by DMA engines: no LL protocols */
  case LIB_XLA: return proto == SIM_PROTO_SIMPLE;
  case LIB_RCCL: /* LL128 only on gfx90a (rccl tuning.cc; tuning_model_5 rates it 0) */
    if (proto == SIM_PROTO_LL128)
      return 0;
    break;
  }
  switch (algo) {
  case SIM_ALGO_NVLS:
  case SIM_ALGO_NVLS_TREE:
  case SIM_ALGO_COLLNET:
  case SIM_ALGO_DIRECT: return proto == SIM_PROTO_SIMPLE;
  default: return 1;
  }
}

static int default_channels(const sim_coll_ctx *c, int algo)
{
  const sim_coll_layout *l = c->lay;
  if (c->force_nch > 0)
    return c->force_nch;
  if (algo == SIM_ALGO_RING && ring_mesh(c) == MESH_ONE_NODE)
    return lanes_out(c, 0); /* one ring per lane (see "rings on meshes") */
  if (l->nnodes == 1 || (algo != SIM_ALGO_RING && algo != SIM_ALGO_TREE))
    return 1; /* on one switch every channel loads the same links in the same shares */
  return l->m_min > 0 ? l->m_min : 1;
}

/* Torus all-reduce / reduce-scatter / all-gather as XLA runs it on TPU: a
 * bidirectional ring per torus dimension, every dimension busy at once.  The
 * data is cut into one part per dimension of more than one chip; part p runs
 * its reduce-scatter over the dimensions in the order starting at the p-th
 * (x y z, y z x, z x y), each step on 1/k_d of what the previous one left,
 * and its all-gather back.  A dimension's ring carries half of its part each
 * way.  load[d]: bytes on each directed link of dimension d, payload. */
static void torus_loads(const sim_coll_ctx *c, const int *dims, double *load)
{
  double mult = c->op == WL_COLL_ALLREDUCE ? 2.0 : 1.0;
  int act[3], na = 0;
  for (int d = 0; d < 3; d++) {
    load[d] = 0;
    if (dims[d] > 1)
      act[na++] = d;
  }
  for (int p = 0; p < na; p++) {
    double Sd = c->bytes / na;
    for (int j = 0; j < na; j++) {
      int d = act[(p + j) % na];
      load[d] += mult * (dims[d] - 1.0) / dims[d] * Sd / 2;
      Sd /= dims[d];
    }
  }
}

/* ---- closed forms for the tuner --------------------------------------------
 * Per-GPU link loads on an NVSwitch node with per-GPU NICs (the shape of
 * every NCCL system), the same loads the flows below put on the links. */
static double estimate(const sim_coll_ctx *c, int algo, int proto, int nch, const int *dims)
{
  const plat_cluster *cl = c->cl;
  const sim_coll_layout *l = c->lay;
  model md;
  model_init(c, proto, &md);
  int n = c->n, N = l->nnodes, m = l->m_max;
  double S = c->bytes;
  double Bi = cl->intra_Bps > 0 ? cl->intra_Bps : cl->nic_Bps;
  double Bn = cl->nic_Bps > 0 ? cl->nic_Bps : Bi;
  int nics = cl->nics_per_node > 0 ? cl->nics_per_node : 1;
  int gpn = cl->gpus_per_node > 0 ? cl->gpus_per_node : 1;
  /* distinct NICs the members of one node reach */
  double u = fmax(1.0, fmin((double)m, (double)m * nics / gpn));
  double t_i = 0, t_n = 0;
  double f = c->op == WL_COLL_ALLREDUCE ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
  double Bl = cl->intra_link_Bps > 0 ? cl->intra_link_Bps : Bi; /* one mesh lane */
  int mesh = algo == SIM_ALGO_RING ? ring_mesh(c) : MESH_NO;
  switch (algo) {
  case SIM_ALGO_RING:
    if (mesh == MESH_ONE_NODE) /* every lane f S / (lanes per member) */
      t_i = f * S / lanes_out(c, 0) / (Bl * md.e_intra);
    else if (mesh == MESH_ACROSS) { /* one channel per directed link and per NIC */
      t_i = f * S / nch / (Bl * md.e_intra);
      t_n = f * S / nch * ceil(nch / fmin(u, nch)) / (Bn * md.e_nic);
    } else if (N == 1)
      t_i = f * S / (Bi * md.e_intra);
    else {
      t_i = f * S * (m - 1) / m / (Bi * md.e_intra);
      t_n = f * S / nch * ceil(nch / fmin(u, nch)) / (Bn * md.e_nic);
    }
    break;
  case SIM_ALGO_TREE:
    t_i = 2.0 * S * (m - 1) / m / (Bi * md.e_intra);
    t_n = (N > 2 ? 2.0 : 1.0) * S / nch * ceil(nch / fmin(u, nch)) / (Bn * md.e_nic);
    break;
  case SIM_ALGO_NVLS:
    t_i = (m + 1.0) / m * S / (Bi * md.e_nvls);
    if (N > 1)
      t_n = S / m / (Bn * md.e_sharp);
    break;
  case SIM_ALGO_NVLS_TREE:
    t_i = (m + 1.0) / m * S / (Bi * md.e_nvls_tree);
    t_n = (N > 2 ? 2.0 : 1.0) * S / m / (Bn * md.e_nic);
    break;
  case SIM_ALGO_COLLNET:
    t_i = 2.0 * (m - 1) / m * S / (Bi * md.e_intra);
    t_n = S / m / (Bn * md.e_sharp);
    break;
  case SIM_ALGO_HIER:
    t_i = 2.0 * (m - 1) / m * S / (Bi * md.e_intra);
    t_n = 2.0 * (N - 1) / N * S / m / (Bn * md.e_nic);
    break;
  case SIM_ALGO_TORUS: {
    double load[3], t = 0;
    torus_loads(c, dims, load);
    for (int d = 0; d < 3; d++) {
      if (cl->fabric_kind == PLAT_FABRIC_TORUS) /* each direction its own ICI link */
        t = fmax(t, load[d] / (cl->fabric_link_Bps * md.e_nic));
      else /* both directions through the member's one port */
        t += 2 * load[d] / (N > 1 ? Bn * md.e_nic : Bi * md.e_intra);
    }
    t_i = t;
    break;
  }
  case SIM_ALGO_DIRECT:
    if (c->op == WL_COLL_SHIFT) { /* S to the next member, at the rate of the link between */
      if (N == 1)
        t_i = S / Bi;
      else
        t_n = S / Bn;
      break;
    }
    if (c->op != WL_COLL_ALLTOALL) { /* all-pairs RS and/or AG on one node: D to every peer */
      double D = (c->op == WL_COLL_ALLREDUCE ? 2.0 : 1.0) * S / n;
      t_i = cl->intra_kind == PLAT_INTRA_FULLMESH ? D / (Bl * md.e_intra)
                                                   : (n - 1) * D / (Bi * md.e_intra);
      break;
    }
    t_i = (N == 1 ? (n - 1.0) / n : (m - 1.0) / n) * S / (Bi * md.e_intra);
    if (N > 1)
      t_n = (double)(n - m) / n * S / (Bn * md.e_nic);
    break;
  case SIM_ALGO_CHAIN: t_i = S / ((N > 1 ? Bn * md.e_nic : Bi * md.e_intra)); break;
  }
  return algo_latency(c, algo, proto, dims) + fmax(t_i, t_n);
}

static int default_algo(int op)
{
  switch (op) {
  case WL_COLL_ALLTOALL:
  case WL_COLL_SHIFT: return SIM_ALGO_DIRECT;
  case WL_COLL_BROADCAST:
  case WL_COLL_REDUCE: return SIM_ALGO_CHAIN;
  default: return SIM_ALGO_RING;
  }
}

/* Where a library picks by a fixed rule rather than by its cost model, the
 * rule (the sizes come from the libraries' sources, docs/collectives.md):
 *  - RCCL, all 8 MI300X of one node, all-reduce up to 16 MiB: MSCCL's
 *    all-pairs algorithm (direct), LL below 512 KiB, Simple from there;
 *  - HCCL, one node of a full mesh (Ascend 910B, 8 NPUs on HCCS), all-reduce,
 *    reduce-scatter, all-gather: the mesh algorithm (direct) at every size;
 *    HCCL's SelectAlgfor910B (all_reduce_operator.cc) takes
 *    AllReduceMeshSmallCountExecutor up to 256 KiB and
 *    AllReduceMeshOpbaseLoopExecutor above, both over the full mesh; the
 *    one-shot small-count variant is modelled as the two-shot one.
 * Returns 1 with the algorithm and protocol, or 0 for the ranking. */
static int lib_rule(const sim_coll_ctx *c, int *algo, int *proto)
{
  const plat_cluster *cl = c->cl;
  if (c->lay->nnodes != 1 || cl->intra_kind != PLAT_INTRA_FULLMESH || c->n < 2)
    return 0;
  int op = c->op;
  switch (coll_lib(cl)) {
  case LIB_RCCL:
    if (op != WL_COLL_ALLREDUCE || c->n != 8 || c->bytes > RCCL_DIRECT_MAX_B)
      return 0;
    *algo = SIM_ALGO_DIRECT;
    *proto = c->bytes <= RCCL_DIRECT_LL_MAX_B ? SIM_PROTO_LL : SIM_PROTO_SIMPLE;
    return 1;
  case LIB_HCCL:
    if (op != WL_COLL_ALLREDUCE && op != WL_COLL_ALLGATHER && op != WL_COLL_REDUCESCATTER)
      return 0;
    *algo = SIM_ALGO_DIRECT;
    *proto = SIM_PROTO_SIMPLE;
    return 1;
  }
  return 0;
}

void sim_coll_choose(sim_coll_ctx *c)
{
  int dims[3];
  torus_dims(c, dims);
  int ideal = c->model == SIM_COLL_IDEAL;
  int best_a = -1, best_p = -1;
  double best = INFINITY;
  int fa = c->force_algo >= 0 && c->force_algo < SIM_ALGO_COUNT && algo_allowed(c, c->force_algo, 1)
               ? c->force_algo
               : -1;
  for (int a = 0; a < SIM_ALGO_COUNT; a++) {
    if (fa >= 0 ? a != fa : !algo_allowed(c, a, 0))
      continue;
    for (int p = 0; p < SIM_PROTO_COUNT; p++) {
      if (!proto_allowed(c, a, p, ideal))
        continue;
      if (c->force_proto >= 0 && p != c->force_proto && proto_allowed(c, a, c->force_proto, ideal))
        continue;
      double t = estimate(c, a, p, default_channels(c, a), dims);
      if (t < best) { /* ties: the first in table order */
        best = t;
        best_a = a;
        best_p = p;
      }
    }
  }
  int ra, rp;
  if (fa < 0 && c->force_proto < 0 && lib_rule(c, &ra, &rp)) {
    best_a = ra;
    best_p = ideal ? SIM_PROTO_SIMPLE : rp;
    best = estimate(c, best_a, best_p, default_channels(c, best_a), dims);
  }
  if (best_a < 0) {
    best_a = default_algo(c->op);
    best_p = SIM_PROTO_SIMPLE;
    best = estimate(c, best_a, best_p, default_channels(c, best_a), dims);
  }
  c->ch.algo = best_a;
  c->ch.proto = best_p;
  c->ch.nch = default_channels(c, best_a);
  c->ch.lat_s = algo_latency(c, best_a, best_p, dims);
  c->ch.est_s = best;
  if (best_a == SIM_ALGO_RING && best_p == SIM_PROTO_SIMPLE && !ideal) {
    double phi = ring_fill[device_arch(&c->cl->device)];
    if (phi > 0 && c->bytes > 0) {
      double t_bw = best - c->ch.lat_s;
      c->ch.lat_s += phi * t_bw * fmin(1.0, RING_FILL_LOOP_B * c->n / c->bytes);
    }
  }
}

/* ---- edges ----------------------------------------------------------------- */

typedef struct edge_list {
  sim_xfer *send, *recv;
  size_t ns, nr, cap_s, cap_r;
  int fail;
} edge_list;

static void edge_push(edge_list *e, int is_send, int peer, double bytes)
{
  sim_xfer **v = is_send ? &e->send : &e->recv;
  size_t *n = is_send ? &e->ns : &e->nr, *cap = is_send ? &e->cap_s : &e->cap_r;
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    sim_xfer *x = realloc(*v, nc * sizeof *x);
    if (!x) {
      e->fail = 1;
      return;
    }
    *v = x;
    *cap = nc;
  }
  (*v)[*n].peer = peer;
  (*v)[(*n)++].bytes = bytes;
}

/* Send payload to peer over a link of efficiency eff. */
static void snd(edge_list *e, int peer, double payload, double eff)
{
  edge_push(e, 1, peer, payload / eff);
}
static void rcv(edge_list *e, int peer) { edge_push(e, 0, peer, 0); }

static double eff_between(const sim_coll_ctx *c, const model *md, int a, int b)
{
  if (c->cl->fabric_kind == PLAT_FABRIC_TORUS) /* every chip-to-chip link is ICI */
    return md->e_nic;
  return c->lay->node_of[a] == c->lay->node_of[b] ? md->e_intra : md->e_nic;
}

/* Ring channel ch: member m's next and previous.  Inside a node the chain
 * runs down from position ch on even node positions and up from ch+1 on odd
 * ones, so that every inter-node edge joins the same local index (one rail)
 * and channel ch leaves even nodes by the NIC of position ch+1 and odd ones
 * by that of position ch: every NIC carries one channel each way. */
static void ring_neighbours(const sim_coll_layout *l, int ch, int m, int *next, int *prev)
{
  int k = l->node_of[m], p = l->pos[m], mk = l->node_cnt[k], N = l->nnodes;
  int even = (k % 2 == 0);
  int i = even ? (((ch - p) % mk) + mk) % mk : (((p - ch - 1) % mk) + mk) % mk;
  int kn = (k + 1) % N, kp = (k - 1 + N) % N;
  /* first member of node kn / last of node kp on this channel */
  int first_n = lay_member(l, kn, kn % 2 == 0 ? ch : ch + 1);
  int last_p = lay_member(l, kp, kp % 2 == 0 ? ch + 1 : ch);
  if (N == 1) {
    *next = lay_member(l, k, p - 1);
    *prev = lay_member(l, k, p + 1);
    return;
  }
  *next = i < mk - 1 ? lay_member(l, k, even ? p - 1 : p + 1) : first_n;
  *prev = i > 0 ? lay_member(l, k, even ? p + 1 : p - 1) : last_p;
}

static void edges_ring(const sim_coll_ctx *c, const model *md, int nch, int m, edge_list *e)
{
  int n = c->n;
  double f = c->op == WL_COLL_ALLREDUCE ? 2.0 * (n - 1) / n
             : c->op == WL_COLL_BARRIER ? 0
                                        : (double)(n - 1) / n;
  int mesh = ring_mesh(c);
  if (mesh == MESH_ONE_NODE) { /* rings over every lane: f S x lanes / W to each linked member */
    double w = lanes_out(c, m);
    for (int j = 0; j < n; j++)
      if (member_lanes(c, m, j) > 0)
        snd(e, j, f * c->bytes * member_lanes(c, m, j) / w, md->e_intra);
    for (int j = 0; j < n; j++)
      if (member_lanes(c, j, m) > 0)
        rcv(e, j);
    return;
  }
  double per = f * c->bytes / nch;
  for (int ch = 0; ch < nch; ch++) {
    int next, prev;
    if (mesh == MESH_ACROSS)
      mesh_neighbours(c->lay, ch, m, &next, &prev);
    else
      ring_neighbours(c->lay, ch, m, &next, &prev);
    snd(e, next, per, eff_between(c, md, m, next));
  }
  for (int ch = 0; ch < nch; ch++) {
    int next, prev;
    if (mesh == MESH_ACROSS)
      mesh_neighbours(c->lay, ch, m, &next, &prev);
    else
      ring_neighbours(c->lay, ch, m, &next, &prev);
    rcv(e, prev);
  }
}

/* All-pairs reduce-scatter and/or all-gather on one node (RCCL's MSCCL
 * all-pairs, HCCL's mesh): S/n to every peer per phase, 2 S/n for all-reduce. */
static void edges_direct_reduce(const sim_coll_ctx *c, const model *md, int m, edge_list *e)
{
  int n = c->n;
  double D = (c->op == WL_COLL_ALLREDUCE ? 2.0 : 1.0) * c->bytes / n;
  for (int s = 1; s < n; s++)
    snd(e, (m + s) % n, D, eff_between(c, md, m, (m + s) % n));
  for (int s = 1; s < n; s++)
    rcv(e, (m - s + n) % n);
}

/* NCCL's binary tree (src/graph/trees.cc ncclGetBtree): rank r's parent and
 * children among nranks; -1 when none. */
static void btree(int nranks, int r, int *up, int *d0, int *d1)
{
  int bit;
  for (bit = 1; bit < nranks; bit <<= 1)
    if (bit & r)
      break;
  if (r == 0) {
    *up = -1;
    *d0 = -1;
    *d1 = nranks > 1 ? bit >> 1 : -1;
    return;
  }
  int u = (r ^ bit) | (bit << 1);
  if (u >= nranks)
    u = r ^ bit;
  *up = u;
  int low = bit >> 1;
  *d0 = low == 0 ? -1 : r - low;
  int dd = low == 0 ? -1 : r + low;
  while (dd >= nranks) {
    low >>= 1;
    dd = low == 0 ? -1 : r + low;
  }
  *d1 = dd;
}

/* Tree t (0 or 1) of NCCL's double binary tree: the second is the first
 * mirrored (even node counts) or shifted by one (odd). */
static void dtree(int nranks, int t, int r, int *up, int *d0, int *d1)
{
  if (t == 0) {
    btree(nranks, r, up, d0, d1);
    return;
  }
  int odd = nranks % 2;
  int rr = odd ? (r - 1 + nranks) % nranks : nranks - 1 - r;
  int u, a, b;
  btree(nranks, rr, &u, &a, &b);
#define BACK(x) ((x) < 0 ? -1 : odd ? ((x) + 1) % nranks : nranks - 1 - (x))
  *up = BACK(u);
  *d0 = BACK(a);
  *d1 = BACK(b);
#undef BACK
}

/* Member m as head (position pos) of a tree across nodes carrying D over
 * both trees (D/2 each): reduce up, broadcast down. */
static void tree_across(const sim_coll_ctx *c, double eff, int pos, int m, double D, edge_list *e)
{
  const sim_coll_layout *l = c->lay;
  int N = l->nnodes, k = l->node_of[m];
  for (int t = 0; t < 2; t++) {
    int up, d0, d1;
    dtree(N, t, k, &up, &d0, &d1);
    int nb[3] = {up, d0, d1};
    for (int i = 0; i < 3; i++)
      if (nb[i] >= 0)
        snd(e, lay_member(l, nb[i], pos), D / 2, eff);
  }
  for (int t = 0; t < 2; t++) {
    int up, d0, d1;
    dtree(N, t, k, &up, &d0, &d1);
    int nb[3] = {up, d0, d1};
    for (int i = 0; i < 3; i++)
      if (nb[i] >= 0)
        rcv(e, lay_member(l, nb[i], pos));
  }
}

/* Chain inside m's node starting at position `head`: reduce towards the
 * head and broadcast away from it, D each way on each chain edge. */
static void chain_inside(const sim_coll_ctx *c, double eff, int head, int m, double D, edge_list *e)
{
  const sim_coll_layout *l = c->lay;
  int k = l->node_of[m], mk = l->node_cnt[k], p = l->pos[m];
  int i = (((p - head) % mk) + mk) % mk;
  if (i > 0)
    snd(e, lay_member(l, k, p - 1), D, eff);
  if (i < mk - 1)
    snd(e, lay_member(l, k, p + 1), D, eff);
  if (i > 0)
    rcv(e, lay_member(l, k, p - 1));
  if (i < mk - 1)
    rcv(e, lay_member(l, k, p + 1));
}

static void edges_tree(const sim_coll_ctx *c, const model *md, int nch, int m, edge_list *e)
{
  const sim_coll_layout *l = c->lay;
  double D = c->bytes / nch;
  int mk = l->node_cnt[l->node_of[m]];
  for (int ch = 0; ch < nch; ch++) {
    chain_inside(c, md->e_intra, ch, m, D, e);
    if (l->pos[m] == ch % mk)
      tree_across(c, md->e_nic, l->pos[m], m, D, e);
  }
}

/* NVLS inside m's node: every GPU reads all its data into the switch's
 * reduction and receives its reduced shard (S out, S/k in), then multicasts
 * its shard and receives all shards (S/k out, S in).  Pairwise flows of
 * (k+1) S / (k (k-1)) give each GPU's NVLink exactly (k+1)/k S each way. */
static void nvls_inside(const sim_coll_ctx *c, double eff, int m, edge_list *e)
{
  const sim_coll_layout *l = c->lay;
  int k = l->node_of[m], mk = l->node_cnt[k];
  if (mk < 2)
    return;
  double X = (mk + 1.0) * c->bytes / (mk * (mk - 1.0));
  for (int j = 1; j < mk; j++)
    snd(e, lay_member(l, k, l->pos[m] + j), X, eff);
  for (int j = 1; j < mk; j++)
    rcv(e, lay_member(l, k, l->pos[m] - j));
}

/* In-network reduction across nodes for m's shard D: up to the switch and
 * the reduced result back, D each way on m's NIC, written as a flow to the
 * same position on the next node (no switch host: the NIC links carry what
 * they carry with SHARP). */
static void sharp_across(const sim_coll_ctx *c, const model *md, int m, double D, edge_list *e)
{
  const sim_coll_layout *l = c->lay;
  int N = l->nnodes, k = l->node_of[m], p = l->pos[m];
  if (N < 2)
    return;
  snd(e, lay_member(l, (k + 1) % N, p), D, md->e_sharp);
  rcv(e, lay_member(l, (k - 1 + N) % N, p));
}

/* Ring inside m's node (reduce-scatter + all-gather): 2(k-1)/k S per edge. */
static void ring_inside(const sim_coll_ctx *c, const model *md, int m, edge_list *e)
{
  const sim_coll_layout *l = c->lay;
  int k = l->node_of[m], mk = l->node_cnt[k];
  if (mk < 2)
    return;
  snd(e, lay_member(l, k, l->pos[m] + 1), 2.0 * (mk - 1) / mk * c->bytes, md->e_intra);
  rcv(e, lay_member(l, k, l->pos[m] - 1));
}

static void edges_direct(const sim_coll_ctx *c, const model *md, int m, edge_list *e)
{
  const sim_coll_layout *l = c->lay;
  const plat_cluster *cl = c->cl;
  int n = c->n;
  int gpn = cl->gpus_per_node > 0 ? cl->gpus_per_node : 1;
  int nics = cl->nics_per_node > 0 ? cl->nics_per_node : 1;
  /* PXN: NCCL sends to a GPU on another rail through the local NVLink peer
   * on the destination's rail; only for uniform all-to-all (the relay must
   * know the bytes) and when the peer is a member. */
  int pxn = !c->splits && l->nnodes > 1 && nics > 1 && c->model != SIM_COLL_IDEAL;
#define RAIL(mm) (l->local[mm] * nics / gpn)
  double blk = c->bytes / n;
  int km = l->node_of[m];
  /* relay member on m's node for rail r, or -1 */
  for (int pass = 0; pass < 2; pass++) { /* 0: sends, 1: receives */
    for (int s = 1; s < n; s++) {
      int j = pass == 0 ? (m + s) % n : (m - s + n) % n; /* peer */
      int src = pass == 0 ? m : j, dst = pass == 0 ? j : m;
      double b = pass == 0 && c->splits ? c->splits[j] : blk;
      int ks = l->node_of[src], kd = l->node_of[dst];
      int relay = -1;
      if (pxn && ks != kd && RAIL(src) != RAIL(dst)) {
        int cnt = l->node_cnt[ks];
        for (int q = 0; q < cnt; q++) {
          int cand = lay_member(l, ks, q);
          if (RAIL(cand) == RAIL(dst)) {
            relay = cand;
            break;
          }
        }
      }
      if (relay < 0) {
        if (pass == 0)
          snd(e, j, b, eff_between(c, md, m, j));
        else
          rcv(e, j);
      } else if (pass == 0) {
        snd(e, relay, b, md->e_intra); /* first hop, NVLink */
      } else {
        rcv(e, relay); /* second hop arrives from the relay */
      }
    }
    /* m as a relay: for every local member s with another rail and every
     * destination j on m's rail on another node, forward s -> j. */
    if (pxn) {
      int cnt = l->node_cnt[km];
      for (int q = 0; q < cnt; q++) {
        int s2 = lay_member(l, km, q);
        if (s2 == m || RAIL(s2) == RAIL(m))
          continue;
        /* is m the first member of its node on its rail? (the relay chosen above) */
        int first = -1;
        for (int r2 = 0; r2 < cnt; r2++) {
          int cand = lay_member(l, km, r2);
          if (RAIL(cand) == RAIL(m)) {
            first = cand;
            break;
          }
        }
        if (first != m)
          break;
        for (int j = 0; j < n; j++) {
          if (l->node_of[j] == km || RAIL(j) != RAIL(m))
            continue;
          if (pass == 0)
            snd(e, j, blk, md->e_nic);
          else
            rcv(e, s2);
        }
      }
    }
  }
#undef RAIL
}

/* One ring step: S to the next member, from the previous one, at the link's
 * rate (the copies of a ring exchange are not NCCL kernels). */
static void edges_shift(const sim_coll_ctx *c, int m, edge_list *e)
{
  int n = c->n;
  snd(e, (m + 1) % n, c->bytes, 1.0);
  rcv(e, (m - 1 + n) % n);
}

static void edges_chain(const sim_coll_ctx *c, const model *md, int m, edge_list *e)
{
  int n = c->n, root = c->root;
  int pos = (m - root + n) % n;
  int bcast = c->op == WL_COLL_BROADCAST;
  int sends = bcast ? pos != n - 1 : pos != 0;
  int recvs = bcast ? pos != 0 : pos != n - 1;
  int to = bcast ? (m + 1) % n : (m - 1 + n) % n;
  int from = bcast ? (m - 1 + n) % n : (m + 1) % n;
  if (sends)
    snd(e, to, c->bytes, eff_between(c, md, m, to));
  if (recvs)
    rcv(e, from);
}

static void edges_torus(const sim_coll_ctx *c, const model *md, int m, edge_list *e)
{
  int dims[3];
  torus_dims(c, dims);
  int coord[3] = {m % dims[0], (m / dims[0]) % dims[1], m / (dims[0] * dims[1])};
  int stride[3] = {1, dims[0], dims[0] * dims[1]};
  double load[3];
  torus_loads(c, dims, load);
  for (int pass = 0; pass < 2; pass++) {
    for (int d = 0; d < 3; d++) {
      int k = dims[d];
      if (k > 1) {
        int up = m + (((coord[d] + 1) % k) - coord[d]) * stride[d];
        int dn = m + (((coord[d] - 1 + k) % k) - coord[d]) * stride[d];
        if (pass == 0) {
          snd(e, up, load[d], eff_between(c, md, m, up));
          snd(e, dn, load[d], eff_between(c, md, m, dn));
        } else {
          rcv(e, dn);
          rcv(e, up);
        }
      }
    }
  }
}

static void edges_for(const sim_coll_ctx *c, const model *md, int m, edge_list *e)
{
  const sim_coll_layout *l = c->lay;
  int mk = l->node_cnt[l->node_of[m]];
  switch (c->ch.algo) {
  case SIM_ALGO_RING: edges_ring(c, md, c->ch.nch, m, e); break;
  case SIM_ALGO_DIRECT:
    if (c->op == WL_COLL_SHIFT)
      edges_shift(c, m, e);
    else if (c->op == WL_COLL_ALLTOALL)
      edges_direct(c, md, m, e);
    else
      edges_direct_reduce(c, md, m, e);
    break;
  case SIM_ALGO_CHAIN: edges_chain(c, md, m, e); break;
  case SIM_ALGO_TREE: edges_tree(c, md, c->ch.nch, m, e); break;
  case SIM_ALGO_NVLS:
    nvls_inside(c, md->e_nvls, m, e);
    sharp_across(c, md, m, c->bytes / mk, e);
    break;
  case SIM_ALGO_NVLS_TREE:
    nvls_inside(c, md->e_nvls_tree, m, e);
    tree_across(c, md->e_nic, l->pos[m], m, c->bytes / mk, e);
    break;
  case SIM_ALGO_COLLNET:
    ring_inside(c, md, m, e);
    sharp_across(c, md, m, c->bytes / mk, e);
    break;
  case SIM_ALGO_HIER: {
    ring_inside(c, md, m, e);
    int N = l->nnodes, k = l->node_of[m];
    double D = 2.0 * (N - 1) / N * c->bytes / mk;
    snd(e, lay_member(l, (k + 1) % N, l->pos[m]), D, md->e_nic);
    rcv(e, lay_member(l, (k - 1 + N) % N, l->pos[m]));
    break;
  }
  case SIM_ALGO_TORUS: edges_torus(c, md, m, e); break;
  }
}

/* Sends then receives of one round, bytes scaled by 1/k. */
static int round_emit(sim_sched *s, const edge_list *e, double pre, double k)
{
  if (!round_new(s, pre))
    return ST_ENOMEM;
  for (size_t i = 0; i < e->ns; i++)
    if (xfer_add(s, 1, e->send[i].peer, e->send[i].bytes / k))
      return ST_ENOMEM;
  for (size_t i = 0; i < e->nr; i++)
    if (xfer_add(s, 0, e->recv[i].peer, 0))
      return ST_ENOMEM;
  return ST_OK;
}

int sim_coll_plan(const sim_coll_ctx *c, int m, sim_sched *out)
{
  sim_sched_clear(out);
  model md;
  model_init(c, c->ch.proto, &md);
  edge_list e;
  memset(&e, 0, sizeof e);
  edges_for(c, &md, m, &e);
  int rc = ST_OK;
  if (e.fail) {
    rc = ST_ENOMEM;
    goto done;
  }
  /* own: the largest route latency among m's sends (what its flows pay
   * themselves); lb: the route latency of its likely bottleneck flow (the
   * link kind with the most bytes per unit of bandwidth), which step
   * fidelity pays once per round */
  double own = 0, lb = 0, t_in = 0, t_out = 0, l_in = 0, l_out = 0;
  double bi = c->cl->intra_Bps > 0 ? c->cl->intra_Bps : 1, bn = c->cl->nic_Bps > 0 ? c->cl->nic_Bps : 1;
  for (size_t i = 0; i < e.ns; i++) {
    double l = c->route_lat ? c->route_lat(c->route_u, m, e.send[i].peer) : 0;
    if (l > own)
      own = l;
    if (c->lay->node_of[e.send[i].peer] == c->lay->node_of[m]) {
      t_in += e.send[i].bytes / bi;
      l_in = fmax(l_in, l);
    } else {
      t_out += e.send[i].bytes / bn;
      l_out = fmax(l_out, l);
    }
  }
  double L = c->ch.lat_s;
  int rounds = 1;
  if (c->fidelity == SIM_FID_STEP && c->op != WL_COLL_BARRIER && c->op != WL_COLL_SHIFT) {
    if (c->ch.algo == SIM_ALGO_RING)
      rounds = c->op == WL_COLL_ALLREDUCE ? 2 * (c->n - 1) : c->n - 1;
    else
      rounds = (int)fmin(64, fmax(1, floor(c->bytes / (16 << 20))));
  }
  /* the link kind that ends a round: its latency plus its share of the
   * round's transfer (with about equal loads, the one with more latency) */
  lb = l_out + t_out / rounds >= l_in + t_in / rounds ? l_out : l_in;
  /* flow: L - own + (bottleneck's own latency); step: the same total when
   * each round pays lb */
  double pre = rounds == 1 ? L - own : (L - own - (rounds - 1) * lb) / rounds;
  if (e.ns == 0)
    pre = 0;
  for (int r = 0; r < rounds && !rc; r++)
    rc = round_emit(out, &e, pre > 0 ? pre : 0, rounds);
done:
  free(e.send);
  free(e.recv);
  return rc;
}
