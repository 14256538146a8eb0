/* tuner.c — NCCL's cost model and the tuner's choice of algorithm,
 * protocol and channels for one collective instance.
 *
 * docs/collectives.md is the long form of these notes (derivations, sources).
 *
 *  4. Cost model (NCCL_MODEL below): latencies from NCCL's tuning model
 *     (src/graph/tuning.cc: baseLat, hwLat, per algorithm and protocol),
 *     bandwidth efficiencies from NCCL's per-link NVLink bandwidths
 *     (src/graph/topo.h) and protocol factors (tuning.cc), NIC efficiency
 *     from the nccl-tests maintainers' figures, NCCL's per-channel NVLS-tree
 *     ceiling, and three fitted terms (the NVLS pipeline fill, the ring
 *     Simple fill on Ampere, the in-network reduction rate on Hopper) — each
 *     documented where it is defined.
 *  5. Tuner.  coll_choose() estimates every (algorithm, protocol) the op,
 *     the platform and the layout allow with closed forms of the same link
 *     loads, and takes the fastest, as NCCL's ncclTopoGetAlgoTime() does.
 */
#include <math.h>
#include <string.h>

#include "coll_int.h"

static const char *const algo_names[SIM_ALGO_COUNT] = {"ring",  "direct",    "chain",   "tree",
                                                       "nvls",  "nvls_tree", "collnet", "hier",
                                                       "torus", "hier_pods"};
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
/* ---- the cost model (NCCL_MODEL) ----------------------------------------- */

enum { ARCH_VOLTA = 0, ARCH_AMPERE, ARCH_HOPPER, ARCH_BLACKWELL, ARCH_CDNA3, ARCH_COUNT };

/* The library tables' row of a device (devices.json "arch"): TPU and Ascend
 * have no NCCL data and take Hopper's. */
static int device_arch(const plat_device *d)
{
  switch (d->arch) {
  case PLAT_ARCH_VOLTA: return ARCH_VOLTA;
  case PLAT_ARCH_AMPERE: return ARCH_AMPERE;
  case PLAT_ARCH_BLACKWELL: return ARCH_BLACKWELL;
  case PLAT_ARCH_CDNA3: return ARCH_CDNA3;
  default: return ARCH_HOPPER;
  }
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
  if (cl->device.arch == PLAT_ARCH_ASCEND)
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

void coll__model_init(const coll_ctx *c, int proto, coll__model *md)
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
  const coll_layout *l = c->lay;
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
  case SIM_ALGO_HIER_PODS: return 0; /* per phase (choose_pods) */
  }
  return 1;
}

/* HybridEP's cost of a dispatch or combine call across nodes beyond its
 * kernel and one read and write of the tokens a member receives (the copy
 * out of its buffer, or the permute, which the workload prices as an op of
 * its own): the library's device syncs and flag updates.  Source: DeepEP's
 * hybrid-ep branch (94a9f8f6), docs/README_Hybrid-EP.md, H100 table at 8
 * SMs (its multi-node default, csrc/hybrid_ep/config.cuh), 4,096 tokens of
 * 7,168, top 8, 8 experts a member, uniform routing: the "Torch API" time
 * (CUDA events around the call, tests/test_hybrid_ep.py) less the "Kernel
 * only" time, both from the published bandwidths and the test's bytes
 * (tokens once to each node holding any of their experts), less that read
 * and write at the HBM rate of the compute model (3.35 TB/s x 0.88):
 * dispatch 0.240, 0.377, 1.039 ms and combine 0.071, 0.135, 0.123 ms on
 * 2, 4 and 8 nodes.  A layer calls each kind twice (a combine's backward
 * is a dispatch), so every call is charged the mean: 0.156, 0.256, 0.581
 * ms, linear in the node count between them, 8 nodes' beyond, none on one
 * node (no H100 figure; NVLink only).  Taken to hold at other hidden sizes
 * and token counts: what it counts is synchronisation, not bytes. */
static double hybridep_call_s(int nodes)
{
  static const double at[][2] = {{2, 0.1555e-3}, {4, 0.256e-3}, {8, 0.581e-3}};
  if (nodes < 2)
    return 0;
  if (nodes >= 8)
    return at[2][1];
  int i = nodes < 4 ? 0 : 1;
  return at[i][1] + (nodes - at[i][0]) / (at[i + 1][0] - at[i][0]) * (at[i + 1][1] - at[i][1]);
}

/* Latency terms of (algo, proto) in seconds: NCCL's formulas (tuning.cc
 * ncclTopoTuneModel and ncclTopoGetAlgoTime); a deduplicating all-to-all
 * (HybridEP, DeepEP) adds its library's per-call cost. */
static double algo_latency(const coll_ctx *c, int algo, int proto, const int *dims)
{
  const coll_layout *l = c->lay;
  int n = c->n, nodes = l->nnodes, ppn = l->m_max;
  if (c->op == WL_COLL_SHIFT) /* point-to-point copies: each flow pays its own route */
    return 0;
  double call = coll__dedup(c) ? hybridep_call_s(nodes) : 0;
  if (c->model == SIM_COLL_IDEAL)
    return call + algo_hops(algo, c->op, n, nodes, ppn, dims) * c->ring_lat_max;
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
  return call + lat * 1e-6;
}

/* ---- which algorithms may run -------------------------------------------- */

static int algo_allowed(const coll_ctx *c, int algo, int forced)
{
  const plat_cluster *cl = c->cl;
  const coll_layout *l = c->lay;
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
  case SIM_ALGO_HIER_PODS: /* chosen by coll_choose before the ranking */
    return (op == WL_COLL_ALLREDUCE || op == WL_COLL_ALLGATHER || op == WL_COLL_REDUCESCATTER) &&
           l->npods > 1 && l->pod_uniform;
  }
  return 0;
}

static int proto_allowed(const coll_ctx *c, int algo, int proto, int ideal)
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

static int default_channels(const coll_ctx *c, int algo)
{
  const coll_layout *l = c->lay;
  if (c->force_nch > 0)
    return c->force_nch;
  if (algo == SIM_ALGO_RING && coll__ring_mesh(c) == COLL__MESH_ONE_NODE)
    return coll__lanes_out(c, 0); /* one ring per lane (see "rings on meshes") */
  if (l->nnodes == 1 || (algo != SIM_ALGO_RING && algo != SIM_ALGO_TREE))
    return 1; /* on one switch every channel loads the same links in the same shares */
  return l->m_min > 0 ? l->m_min : 1;
}

/* ---- closed forms for the tuner --------------------------------------------
 * Per-GPU link loads on an NVSwitch node with per-GPU NICs (the shape of
 * every NCCL system), the same loads the flows below put on the links. */
static double estimate(const coll_ctx *c, int algo, int proto, int nch, const int *dims)
{
  const plat_cluster *cl = c->cl;
  const coll_layout *l = c->lay;
  coll__model md;
  coll__model_init(c, proto, &md);
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
  int mesh = algo == SIM_ALGO_RING ? coll__ring_mesh(c) : COLL__MESH_NO;
  switch (algo) {
  case SIM_ALGO_RING:
    if (mesh == COLL__MESH_ONE_NODE) /* every lane f S / (lanes per member) */
      t_i = f * S / coll__lanes_out(c, 0) / (Bl * md.e_intra);
    else if (mesh == COLL__MESH_ACROSS) { /* one channel per directed link and per NIC */
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
    coll__torus_loads(c, dims, load);
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
    if (coll__dedup(c)) { /* the busiest member's RDMA and NVLink bytes (edges.c) */
      for (int x = 0; x < n; x++) {
        double net, intra;
        coll__dedup_loads(c, x, &net, &intra);
        t_n = fmax(t_n, net / (Bn * md.e_nic));
        t_i = fmax(t_i, intra / (Bi * md.e_intra));
      }
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
static int lib_rule(const coll_ctx *c, int *algo, int *proto)
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

/* ---- across pods (SIM_ALGO_HIER_PODS) ---------------------------------------
 * Each phase is one collective on a communicator of its own, as
 * hierarchical libraries run them (three calls on three communicators), so
 * each gets the protocol its own closed form ranks first: a pod's ring on
 * the pod's own cluster (the slowest pod sets the phase), the inter-pod
 * ring on the members' view.  The inter-pod ring's steps each pay NCCL's
 * network latency and the pod links' (egress + ingress: the data-centre
 * latency NCCL's tables do not hold), and its bandwidth term is the larger
 * of a member's NIC and a pod's links carrying all q members' shards. */

/* The largest route latency between ring neighbours of phase ctx s (the
 * ideal model's hop), from the engine's routes where it has them. */
static double phase_hop_lat(const coll_ctx *c, int pp)
{
  const coll_layout *l = c->lay;
  if (!c->route_lat)
    return c->ring_lat_max;
  double mx = 0;
  if (pp >= 0) {
    int q = coll__pod_count(l, pp);
    for (int i = 0; i < q && q > 1; i++)
      mx = fmax(mx, c->route_lat(c->route_u, coll__pod_member(l, pp, i),
                                 coll__pod_member(l, pp, (i + 1) % q)));
  } else {
    for (int p = 0; p < l->npods; p++)
      mx = fmax(mx, c->route_lat(c->route_u, coll__pod_member(l, p, 0),
                                 coll__pod_member(l, (p + 1) % l->npods, 0)));
  }
  return mx;
}

/* One phase (k) with protocol proto: its time; *lat its latency terms. */
static double pods_phase_time(const coll_ctx *c, int op, double bytes, int in_pod, int proto,
                              double *lat)
{
  const coll_layout *l = c->lay;
  int dims[3] = {1, 1, 1};
  coll__sub s;
  double worst = 0;
  *lat = 0;
  if (in_pod) {
    for (int pp = 0; pp < l->npods; pp++) {
      coll__phase_ctx(c, pp, op, bytes, &s);
      if (s.c.n < 2)
        continue;
      s.c.ring_lat_max = c->model == SIM_COLL_IDEAL ? phase_hop_lat(c, pp) : 0;
      /* a torus pod: the torus algorithm (edges.c plan_pods) */
      int a = s.c.cl->fabric_kind == PLAT_FABRIC_TORUS ? SIM_ALGO_TORUS : SIM_ALGO_RING;
      int tdims[3] = {1, 1, 1};
      if (a == SIM_ALGO_TORUS)
        coll__torus_dims(&s.c, tdims);
      double t = estimate(&s.c, a, proto, default_channels(&s.c, a), tdims);
      worst = fmax(worst, t);
      *lat = fmax(*lat, algo_latency(&s.c, a, proto, tdims));
    }
    return worst;
  }
  coll__phase_ctx(c, -1, op, bytes, &s);
  s.c.ring_lat_max = c->model == SIM_COLL_IDEAL ? phase_hop_lat(c, -1) : 0;
  double L = algo_latency(&s.c, SIM_ALGO_RING, proto, dims);
  double bw = estimate(&s.c, SIM_ALGO_RING, proto, 1, dims) - L;
  /* a pod's links carry the shards of its q members; with NCCL's model each
   * step also pays the pod links' latency */
  coll__model md;
  coll__model_init(&s.c, proto, &md);
  const plat_cluster *cl = c->cl;
  double f =
      op == WL_COLL_ALLREDUCE ? 2.0 * (l->npods - 1) / l->npods : (double)(l->npods - 1) / l->npods;
  double cap = INFINITY, hop = 0;
  for (int p = 0; p < l->npods && cl->num_pods > 0; p++) {
    const plat_pod *a = &cl->pods[l->pod_id[p]], *b = &cl->pods[l->pod_id[(p + 1) % l->npods]];
    cap = fmin(cap, a->dc_links * a->dc_link_Bps);
    hop = fmax(hop, a->dc_lat_s + b->dc_lat_s);
  }
  double dc = isfinite(cap) ? coll__pod_count(l, 0) * f * bytes / (cap * md.e_nic) : 0;
  if (c->model != SIM_COLL_IDEAL)
    L += (op == WL_COLL_ALLREDUCE ? 2.0 * (l->npods - 1) : l->npods - 1.0) * hop;
  *lat = L;
  return L + fmax(bw, dc);
}

static void choose_pods(coll_ctx *c)
{
  int ops[COLL_PHASES], in_pod[COLL_PHASES];
  double bytes[COLL_PHASES];
  int np = coll__pod_phases(c, ops, bytes, in_pod), ideal = c->model == SIM_COLL_IDEAL;
  coll_choice ch;
  memset(&ch, 0, sizeof ch);
  ch.algo = SIM_ALGO_HIER_PODS;
  for (int k = 0; k < np; k++) {
    double best = INFINITY, best_lat = 0;
    int best_p = SIM_PROTO_SIMPLE;
    for (int p = 0; p < SIM_PROTO_COUNT; p++) {
      if (!proto_allowed(c, SIM_ALGO_RING, p, ideal) ||
          (c->force_proto >= 0 && p != c->force_proto &&
           proto_allowed(c, SIM_ALGO_RING, c->force_proto, ideal)))
        continue;
      double lat, t = pods_phase_time(c, ops[k], bytes[k], in_pod[k], p, &lat);
      if (t < best) { /* ties: the first in table order */
        best = t;
        best_lat = lat;
        best_p = p;
      }
    }
    ch.phase_proto[k] = (uint8_t)best_p;
    ch.phase_lat_s[k] = best_lat;
    ch.lat_s += best_lat;
    ch.est_s += best;
    if (!in_pod[k])
      ch.proto = best_p;
  }
  coll__sub s;
  coll__phase_ctx(c, 0, WL_COLL_REDUCESCATTER, c->bytes, &s);
  ch.nch = default_channels(&s.c, SIM_ALGO_RING);
  c->ch = ch;
}

void coll_choose(coll_ctx *c)
{
  int dims[3];
  coll__torus_dims(c, dims);
  int ideal = c->model == SIM_COLL_IDEAL;
  int best_a = -1, best_p = -1;
  double best = INFINITY;
  int fa = c->force_algo >= 0 && c->force_algo < SIM_ALGO_COUNT && algo_allowed(c, c->force_algo, 1)
               ? c->force_algo
               : -1;
  /* members in several pods: the hierarchical algorithm, unless another is asked for */
  if ((fa < 0 || fa == SIM_ALGO_HIER_PODS) && algo_allowed(c, SIM_ALGO_HIER_PODS, 0)) {
    choose_pods(c);
    return;
  }
  for (int a = 0; a < SIM_ALGO_COUNT; a++) {
    if (a == SIM_ALGO_HIER_PODS || (fa >= 0 ? a != fa : !algo_allowed(c, a, 0)))
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
    double t_bw = best - c->ch.lat_s;
    /* (a SimGrid XML platform's links are the file's: the estimate has no
     * rates there, t_bw is infinite, and the fill is not known) */
    if (phi > 0 && c->bytes > 0 && t_bw < INFINITY)
      c->ch.lat_s += phi * t_bw * fmin(1.0, RING_FILL_LOOP_B * c->n / c->bytes);
  }
}
