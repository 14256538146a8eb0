/* platform.h — hardware: devices, nodes and fabrics, and how a cluster spec
 * becomes a SimGrid platform.
 *
 * A cluster is num_nodes nodes of gpus_per_node accelerators.  GPU g (global
 * index, 0-based) is on node g / gpus_per_node, local index g % gpus_per_node,
 * and is the SimGrid host named "gpu-<g>".  Rank r of a workload runs on GPU r.
 *
 * Life cycle:
 *   plat_cluster_load("dgx-h100:4" | "spec.json" | "platform.xml", &c, &err);
 *   ... simgrid_init(...) ...
 *   plat_cluster_build(c, hosts, &err);   creates the SimGrid platform, fills hosts[g]
 *   ... simulate ...
 *   plat_cluster_destroy(c);
 * plat_cluster_build() may be called once per process (SimGrid allows one platform).
 *
 * Units: bandwidths in bytes/s per direction, latencies in seconds, FLOP/s.
 */
#ifndef PLAT_PLATFORM_H
#define PLAT_PLATFORM_H

#include <stdio.h>

#include "st_common.h"
#include "workload.h" /* wl_dtype for peak FLOP/s per dtype */

#ifdef __cplusplus
extern "C" {
#endif

/* A device's architecture (devices.json "arch"): what the collective
 * library's tables are indexed by (sim/coll/tuner.c). */
typedef enum plat_arch {
  PLAT_ARCH_VOLTA = 0,
  PLAT_ARCH_AMPERE,
  PLAT_ARCH_HOPPER,
  PLAT_ARCH_BLACKWELL,
  PLAT_ARCH_CDNA3,
  PLAT_ARCH_TPU,
  PLAT_ARCH_ASCEND,
  PLAT_ARCH_COUNT
} plat_arch;
const char *plat_arch_name(int arch);

typedef struct plat_device {
  char name[48];
  int arch;                          /* plat_arch */
  double peak_flops[WL_DTYPE_COUNT]; /* dense peak FLOP/s per dtype; 0 = not supported */
  double hbm_bytes;                  /* HBM capacity */
  double hbm_Bps;                    /* HBM bandwidth */
  double link_Bps;                   /* NVLink/ICI/HCCS bandwidth per direction, whole device */
  /* ---- power and price (docs/cost.md) ---- */
  double tdp_W;                      /* board power at full load (TDP / TBP); NaN: not published */
  double price_usd_per_gpu_hour;     /* on-demand list price per GPU-hour; NaN: none built in */
  double host_link_Bps;              /* the device's link to host memory per direction (PCIe
                                        generation x16, NVLink-C2C); 0: none built in */
  /* ---- a variant of another device (devices.json "tuning") ---- */
  char tuning[48];                   /* the device whose compute parameter set and published
                                        kernel rates this one takes (the same die and
                                        libraries at another clock or memory); "": its own */
  double clock_ratio;                /* bf16 peak over the tuning device's: what its published
                                        kernel rates are scaled by; 1 with no tuning */
} plat_device;

typedef enum plat_intra_kind {
  PLAT_INTRA_NVSWITCH = 0, /* non-blocking switch: route i->j = up_i, down_j */
  PLAT_INTRA_CUBEMESH,     /* DGX-1 hybrid cube-mesh */
  PLAT_INTRA_FULLMESH,     /* HCCS full mesh (Ascend) */
  PLAT_INTRA_NVL_RACK,     /* NVL72-style rack-scale NVLink domain */
  PLAT_INTRA_NONE,
  PLAT_INTRA_COUNT
} plat_intra_kind;

typedef enum plat_fabric_kind {
  PLAT_FABRIC_SWITCH = 0, /* one non-blocking switch */
  PLAT_FABRIC_RAIL_FATTREE,
  PLAT_FABRIC_FATTREE,
  PLAT_FABRIC_DRAGONFLY,
  PLAT_FABRIC_TORUS,
  PLAT_FABRIC_XML,  /* user-supplied SimGrid XML */
  PLAT_FABRIC_PODS, /* pods joined by data-centre links (platforms/pods.c); not a spec kind */
  PLAT_FABRIC_COUNT
} plat_fabric_kind;

/* A node group of a cluster (platforms/groups.c): nodes first_node ..
 * first_node + num_nodes - 1, with their own device and links. */
typedef struct plat_group {
  char name[48];       /* the spec's "name", else its preset's or device's name */
  int first_node, num_nodes;
  int first_gpu; /* GPUs first_gpu .. first_gpu + num_nodes x gpus_per_node - 1 */
  int gpus_per_node, nics_per_node, intra_kind; /* the same in every group */
  plat_device device;
  double intra_link_Bps, intra_Bps, intra_lat_s;
  int intra_links_per_gpu, nvls;
  double nic_Bps, nic_lat_s, pcie_Bps, pcie_lat_s;
  double host_power_W;
  double host_link_Bps, host_link_lat_s, host_mem_bytes, host_mem_Bps, host_adam_params_per_s;
} plat_group;

typedef struct plat_cluster plat_cluster;

/* A pod of a cluster of pods (platforms/pods.c): a cluster of its own,
 * nodes first_node .. first_node + num_nodes - 1 of the whole, joined to the
 * data-centre network by dc_links links of dc_link_Bps each (per direction,
 * taken together as one link of their sum, as adaptive routing spreads a
 * pod's flows over them). */
typedef struct plat_pod {
  char name[48]; /* the spec's "name" (with -<i> for a repeated pod), else pod<k> */
  int first_node, num_nodes;
  long link_base;     /* the pod's own links are ids link_base .. + (its link count - 1) */
  int dc_links;       /* links to the data-centre network */
  double dc_link_Bps; /* one such link, per direction */
  double dc_lat_s;    /* latency of one (a route between pods crosses two) */
  plat_cluster *c;    /* the pod as a cluster (GPU 0 = its first), owned */
} plat_pod;

struct plat_cluster {
  char name[64];      /* preset or file name */
  char *spec_json;    /* the resolved spec as JSON (stored in results' /config), owned */
  int num_nodes;
  int gpus_per_node;
  int num_gpus;
  plat_device device;
  /* intra-node */
  int intra_kind;        /* plat_intra_kind */
  double intra_Bps;      /* per GPU, per direction, to the intra-node fabric */
  double intra_lat_s;    /* per link */
  int nvls;              /* NVSwitch with in-switch reduction (NVLink SHARP) */
  /* inter-node (torus: each chip's 6 ICI links act as its NIC: nics_per_node =
   * gpus_per_node, nic_Bps = 6 x ICI link, nic_lat_s = per hop; intra_Bps = 0) */
  int nics_per_node;
  double nic_Bps;        /* per NIC, per direction */
  double nic_lat_s;
  int fabric_kind;       /* plat_fabric_kind */
  int fabric_levels;     /* switch levels (fat-trees) */
  int fabric_radix;      /* switch radix */
  double oversub[4];     /* oversubscription per level (1 = non-blocking) */
  double switch_lat_s;
  int torus_dims[3];     /* torus shape in chips; unused dims are 1 */
  int in_network_reduction; /* SHARP/CollNet available */
  char *xml_path;        /* PLAT_FABRIC_XML: the file, owned */
  char *xml_load_path;   /* what SimGrid loads when not xml_path (a FIFO, '-' or gzip file
                            read once: its copy, /proc/self/fd/N of xml_copy), or NULL; owned */
  void *xml_copy;        /* that copy (a FILE *, unlinked), or NULL; owned */
  /* ---- added with the platform library (spec keys in docs/platforms.md) ---- */
  double intra_link_Bps;   /* one NVLink/HCCS link (lane), per direction */
  int intra_links_per_gpu; /* links from a GPU into the intra-node fabric */
  double pcie_Bps;         /* GPU<->NIC PCIe per direction; 0 = not modelled */
  double pcie_lat_s;
  double fabric_link_Bps;  /* switch-to-switch link (fat-tree, dragonfly local), or ICI link (torus) */
  double fabric_link_lat_s;
  double fabric_global_Bps; /* dragonfly global links */
  int dragonfly[3];        /* routers per group, NICs per router, global links per router */
  int torus_wrap;          /* 1: wrap-around links in every dimension */
  int torus_cube[3];       /* building block (TPU v4: 4x4x4); 0 = none */
  int fabric_radix_used[5]; /* fat-tree: children per switch per level (m_1..m_h), derived */
  int num_links;           /* directed links of the built platform, derived */
  int default_nodes;       /* node count of the spec when NAME has no :NODES */
  double host_power_W;     /* a node's non-GPU power (CPUs, memory, NICs, switches, fans) at
                              full load: node.host_power_W, or plat_host_power_default */
  /* ---- node groups (spec key "groups"; docs/platforms.md) ---- */
  int num_groups;          /* 0: every node alike; else the groups, in node order, and the
                              fields above (device, intra_*, nic_*, pcie_*, nvls,
                              host_power_W), gpus_per_node and the host-memory ones below
                              are group 0's, but nics_per_node is the most of any group's
                              (fabric ports); num_gpus is the groups' sum */
  plat_group *groups;      /* owned */
  /* ---- host memory, for offload (node.host, docs/platforms.md "Host memory") ---- */
  double host_link_Bps;    /* a GPU's link to its node's host memory, per direction: node.pcie
                              when the spec models PCIe (then shared with NIC traffic), else
                              node.host.link_GBps, else the device's; 0: unknown */
  double host_link_lat_s;
  double host_mem_bytes;   /* the node's host memory, node.host.memory_GB; NaN: not given */
  double host_mem_Bps;     /* its bandwidth, one link shared by the node's copies both ways;
                              0: not modelled */
  double host_adam_params_per_s; /* the node's CPU-Adam rate, parameters per second, shared
                                    evenly by its GPUs */
  int host_memory;         /* 1: the built platform has the host-memory endpoints (a host
                              "host-<n>" per node, index num_gpus + n) and their links; the
                              engine sets it on its copy for workloads with copies */
  /* ---- a torus host's links to the data-centre network (node.dcn), which a
   * pod of a cluster of pods leaves by: its chips have no NICs ---- */
  int dcn_nics;            /* per host (node); 0: none */
  double dcn_Bps, dcn_lat_s;
  /* ---- pods (spec key "pods"; docs/platforms.md, "Clusters of pods") ---- */
  int num_pods;   /* 0: one fabric; else >= 2 pods, in node order, each also
                              node group k (groups[k]), fabric_kind PLAT_FABRIC_PODS */
  plat_pod *pods; /* owned */
};

/* The pod of a node or GPU (0 when the cluster has no pods). */
int plat_gpu_pod(const plat_cluster *c, int gpu);
/* The group of a node or GPU (0 when the cluster has no groups). */
int plat_node_group(const plat_cluster *c, int node);
int plat_gpu_group(const plat_cluster *c, int gpu);
/* The device GPU gpu is (its group's, or the cluster's). */
const plat_device *plat_gpu_device(const plat_cluster *c, int gpu);
/* *v = *c with the group-dependent fields those of g (its NICs and
 * intra-node kind included). */
void plat_group_apply(plat_cluster *v, const plat_group *g);
/* A node's own NICs, intra-node kind and whether its PCIe is modelled (its
 * group's; c->nics_per_node is the fabric's ports per node, the most of any
 * group), and whether any node's is. */
int plat_node_nics(const plat_cluster *c, long node);
int plat_node_intra_kind(const plat_cluster *c, long node);
int plat_node_pcie(const plat_cluster *c, long node);
int plat_any_pcie(const plat_cluster *c);
/* The cluster as the n GPUs gpus[] see it together: *v = *c with the
 * group-dependent fields the least of the groups the GPUs are in (each rate
 * the least, each latency the most, NVLS where all have it, the device of
 * the lowest peak), as a collective library across them settles on.  With
 * pods: the pod's own cluster when all the GPUs are in one pod; across pods
 * the least as above and no in-network reduction (SHARP does not span the
 * data-centre network).  v shares c's pointers: it must not be destroyed,
 * nor outlive c. */
void plat_cluster_view(const plat_cluster *c, const int32_t *gpus, int n, plat_cluster *v);
/* One node of group k (of the cluster, without groups) as a cluster of its
 * own, its fabric unused: for probes of a group's speed. */
int plat_cluster_group_node(const plat_cluster *c, int k, plat_cluster **out, st_err *err);
/* Over GPUs 0 .. n-1 (those a job of n ranks runs on): the sum, and the
 * least, of per_gpu(the GPU's device, u). */
double plat_gpus_sum(const plat_cluster *c, int n,
                     double (*per_gpu)(const plat_device *, void *), void *u);
double plat_gpus_min(const plat_cluster *c, int n,
                     double (*per_gpu)(const plat_device *, void *), void *u);
/* per_gpu functions: the peak of dtype (u points at a wl_dtype int), HBM
 * bytes, TDP, list price per GPU-hour. */
double plat_dev_peak(const plat_device *d, void *dtype);
double plat_dev_hbm(const plat_device *d, void *u);
double plat_dev_tdp(const plat_device *d, void *u);
double plat_dev_price(const plat_device *d, void *u);

/* NAME[:NODES] (a preset), FILE.json (a cluster spec) or FILE.xml (SimGrid
 * platform whose hosts are named gpu-0 ... gpu-(N-1)). */
int plat_cluster_load(const char *arg, plat_cluster **out, st_err *err);
void plat_cluster_destroy(plat_cluster *c);
/* Names of the presets, NULL-terminated. */
const char *const *plat_preset_names(void);

/* After simgrid_init(): create the platform in the engine and fill hosts[g]
 * (an array of num_gpus sg_host_t, given as void* so this header does not
 * pull in SimGrid; with c->host_memory num_gpus + num_nodes of them, node
 * n's host memory at num_gpus + n). */
int plat_cluster_build(const plat_cluster *c, void **hosts, st_err *err);

/* Links standing for others in the routes SimGrid asks plat_cluster_build()'s
 * zone for (the engine's quotient fabric, sim/engine/sym_quot.c): every
 * route's link from[i] becomes to[i] (sg_link_t values); n = 0 clears.
 * Only the cluster zone routes through it (not an XML platform): 0, or
 * ST_EUSAGE there.  plat_route_alias_on(0) suspends it while the engine asks
 * for the real routes, plat_route_alias_on(1) resumes. */
int plat_route_alias(void *const *from, void *const *to, size_t n);
void plat_route_alias_on(int on);
/* Host-to-host transfers without a receiving actor (SimGrid's sendto):
 * n of them from host `from` (sg_host_t) to to[i], bytes[i] each, started
 * together; returns when all have ended.  For the calling actor. */
void plat_sendto_all(void *from, void *const *to, const double *bytes, size_t n);
/* One such transfer, started now: an sg_comm_t the caller owns, to wait
 * for with sg_comm_wait_any/_all like a mailbox comm. */
void *plat_sendto_async(void *from, void *to, double bytes);
/* One extra SimGrid setting ("key:value") as SimGrid would take it, tried
 * before the simulation (in a child process, see build.cpp): ST_EUSAGE with
 * "--cfg 'foo:1': unknown SimGrid setting" or a bad-value message, where the
 * engine would abort with an uncaught exception. */
int plat_simgrid_cfg_check(const char *setting, st_err *err);

/* Write an equivalent SimGrid XML platform (with c->host_memory, the
 * host-memory endpoints, their links and the routes to them too). */
int plat_cluster_write_xml(const plat_cluster *c, FILE *out, st_err *err);

/* ---- host memory (platforms/host.c, docs/platforms.md "Host memory") ----- */
/* The default CPU-Adam rate of a node (parameters per second, the whole
 * node): DeepSpeedCPUAdam's measured throughput (docs/platforms.md). */
#define PLAT_HOST_ADAM_PARAMS_PER_S 3.89e9
/* Turn the host-memory endpoints on (on) or off in c, keeping num_links in
 * step.  0, or ST_EINPUT naming the cluster when a GPU's link to host memory
 * has no rate (neither the spec nor the device gives one). */
int plat_cluster_host_memory(plat_cluster *c, int on, st_err *err);
/* Time in seconds of a compute op that runs on the host (WL_OPF_HOST): its
 * duration, else an optimizer op's parameters (flops /
 * WL_ADAM_FLOPS_PER_PARAM) at the node's CPU-Adam rate over its GPUs. */
double plat_host_compute_time(const plat_cluster *c, const wl_op *op);
/* The endpoint index of node n's host memory in routes (plat_route_get):
 * num_gpus + n. */
static inline int plat_host_endpoint(const plat_cluster *c, int node) { return c->num_gpus + node; }

/* ---- built-in devices (platforms/data/devices.json) ---------------------- */
/* The device of that exact name ("V100-SXM2", "H100-SXM", ...). */
int plat_device_find(const char *name, plat_device *d, st_err *err);
/* Every built-in device, in table order: *out is a new array of *count
 * devices the caller frees. */
int plat_device_list(plat_device **out, int *count, st_err *err);
/* A node's non-GPU power when its spec does not say (docs/cost.md): the
 * node's GPUs' TDP x PLAT_HOST_POWER_RATIO, the ratio of a DGX H100's
 * non-GPU to GPU power at its rated maximum (10.2 kW system, 8 x 700 W
 * GPUs: 4,600 W / 5,600 W).  NaN when the device has no TDP. */
#define PLAT_HOST_POWER_RATIO (4600.0 / 5600.0)
double plat_host_power_default(const plat_device *d, int gpus_per_node);

/* ---- compute model (platforms/compute.c, docs/calibration.md) ----------- */
/* Per-device parameters of the compute model.  Few, each documented in
 * compute.c with how it was obtained.  A device without its own set gets the
 * generic one (plat_compute_params_for says which). */
typedef struct plat_compute_params {
  char device[48];         /* device name the set is for; "generic" for the fallback */
  int sms;                 /* streaming multiprocessors; 0 = no tile/wave model */
  int tile_m, tile_n;      /* largest GEMM output tile of the BLAS library */
  double gemm_eff;         /* fraction of dense peak one SM reaches inside a full tile */
  double gemm_k_overhead;  /* per-tile prologue + epilogue, in equivalent K elements */
  double gemm_eff_torch;   /* gemm_eff of the bf16/fp16 GEMMs a PyTorch framework's runs
                              make (WL_OPF_TORCH); 0: gemm_eff */
  double fp8_gemm_eff;     /* as gemm_eff for fp8 GEMMs, fraction of the fp8 peak */
  double attn_eff;         /* fused attention forward, long sequence, head dim 128 */
  double attn_bwd_ratio;   /* backward efficiency / forward efficiency */
  int attn_published;      /* 1: fused attention at the published rates of its library
                              (plat_attn_published_rate) where the device has them;
                              attn_eff and attn_bwd_ratio price it otherwise */
  double mem_eff;          /* fraction of HBM bandwidth reached by streaming kernels */
  double launch_s;         /* per-kernel overhead (launch gap, prologue) */
  double overlap_slowdown; /* compute runs (1 + this) slower while a transfer of the same
                              GPU is running (communication kernels take SMs and HBM) */
} plat_compute_params;

/* Published fused-attention rates (platforms/attention.c): FLOP/s of the
 * kernel library impl (wl_attn_impl; the default is the device's library:
 * cuDNN on Hopper) for a forward or backward pass with or without a causal
 * mask, at a head dimension and key length, interpolated between the
 * published points; 0 when the device has no published table (then the
 * compute model's attn_eff prices attention). */
int plat_attn_has_rates(const plat_device *d);
/* FlashAttention-1 (wl_attn_impl fa1) at this fraction of FlashAttention-2's
 * rate, forward and backward, on every device: "FlashAttention-2 is around
 * 2x faster than FlashAttention" over the forward, backward and combined
 * benchmarks (Dao 2023, arXiv:2307.08691, section 4.1, A100 figures 4-6;
 * 1.7-3.0x over its settings), and FlashAttention-1's kernels use no Hopper
 * instruction, as FlashAttention-2's did not when that paper measured it on
 * H100 (figure 7).  The 2022 Triton port of FlashAttention-1 that MPT runs
 * (flash_attn_triton.py on triton-pre-mlir) is priced the same: its author
 * puts its forward + backward at "slightly slower" than the CUDA kernels'. */
#define PLAT_ATTN_FA1_SPEED 0.5
/* An unfused attention core's batched GEMMs and softmax (WL_OPF_UNFUSED,
 * forward or backward) take these times their roofline on every device:
 * Megatron-LM's attention without a fused kernel (baddbmm,
 * FusedScaleMaskSoftmax, dropout, bmm) as the FlashAttention paper measured
 * it (Dao et al. 2022, arXiv:2205.14135, appendix E.6, tables 15-20, row
 * "Megatron": A100-SXM4-40GB, fp16, batch 16, 8 heads of 64, averages of
 * 100 calls; platforms/measure/A100-attention-megatron.json).  Without
 * dropout, at sequence 2,048: forward 4.28 ms, backward 8.86; at 128, where
 * the GPU work is microseconds, 0.24 and 0.29, the calls' fixed cost, which
 * a training step's queue hides.  Net of it, 4.04 and 8.57 ms against the
 * compute model's 3.566 and 6.267 ms for the same ops on the A100-40GB set:
 * 1.13 and 1.37.  Checked, not fitted, on the other rows
 * (tests/test_compute_measured.c): sequence 1,024, and both lengths with
 * the dropout, which the model prices at its roofline and the tables at
 * the same cost, within 5%.  Measured on A100 only and taken to hold on
 * the other devices: what the roofline misses is how the implementation
 * runs (single-K-step GEMMs whose stores do not overlap their math,
 * transposed operands backward, a softmax below streaming bandwidth), not
 * the A100. */
#define PLAT_UNFUSED_FWD 1.13
#define PLAT_UNFUSED_BWD 1.37
/* A fused attention kernel that drops out its probabilities (WL_OPF_DROPOUT:
 * random numbers drawn in the kernel, the mask never stored) takes these
 * times its time without.  Source: the same paper's tables 15 and 16 (with
 * dropout 0.1) against 18 and 19 (without), row "FlashAttention": forward
 * 167.01 / 134.03, 668.74 / 535.95 and 2678.11 / 2147.05 ms at sequence
 * 16k, 32k and 64k (1.246-1.248), backward 416.10 / 336.00, 1661.92 /
 * 1338.56 and 6643.01 / 5343.19 (1.238-1.243); at 2k-8k, where the calls'
 * fixed cost weighs in, 1.17-1.23.  Measured with FlashAttention-1 on an A100
 * and taken for every library and device: the work added (a counter-based
 * random number per score, a compare and a scale) is per score like the
 * kernel's own, so it keeps its share where the kernel runs faster. */
#define PLAT_ATTN_DROPOUT_FWD 1.25
#define PLAT_ATTN_DROPOUT_BWD 1.24
double plat_attn_published_rate(const plat_device *d, int impl, int bwd, int causal,
                                double head_dim, double seq);

/* The parameter set for a device (by name), or the generic set.  Never NULL;
 * points at static storage. */
const plat_compute_params *plat_compute_params_for(const plat_device *d);
/* Calibration only: in this process, use *p for the device named p->device
 * (p == NULL drops every override).  The set is copied. */
void plat_compute_params_override(const plat_compute_params *p);
/* Every built-in set, NULL-terminated (for docs and tests). */
const plat_compute_params *const *plat_compute_params_list(void);

/* How an op's time was obtained (plat_compute_explain). */
typedef enum plat_bound {
  PLAT_BOUND_GIVEN = 0, /* the op had a duration */
  PLAT_BOUND_MATH,      /* tensor/vector math */
  PLAT_BOUND_MEMORY,    /* HBM traffic */
  PLAT_BOUND_COUNT
} plat_bound;

typedef struct plat_compute_detail {
  double time_s;     /* total: launch_s + max(math_s, memory_s), or the given duration */
  double math_s;     /* math time including tile and wave quantisation */
  double memory_s;   /* bytes / (HBM x mem_eff) */
  double launch_s;
  double peak_flops; /* the peak the math ran against */
  double eff;        /* achieved fraction of that peak (flops / math_s / peak) */
  int bound;         /* plat_bound */
  long tiles, waves; /* GEMM: output tiles (x splits) and waves over the SMs; else 0 */
  int tile_m, tile_n, split_k; /* GEMM: the tile chosen and its K split */
} plat_compute_detail;

/* Time in seconds of a compute op on the device: its given duration when it
 * has one (duration_s >= 0), else the model of compute.c:
 *   GEMM        waves x tile time, tile time = 2 tm tn (k + k_overhead) / (SM peak x gemm_eff)
 *   attention   flops / (peak x attn_eff x f(seq) x g(head dim) [x bwd ratio]), causal waste
 *   elementwise, optimizer, comm kernel: bytes / (HBM x mem_eff), flops at the fp32 peak
 *   each with max(math, memory) + launch_s; an unfused attention core's GEMMs
 *   and softmax (WL_OPF_UNFUSED) with max(math, memory) x PLAT_UNFUSED_FWD or _BWD. */
double plat_compute_time(const plat_device *d, const wl_op *op);
double plat_compute_time_with(const plat_compute_params *p, const plat_device *d,
                              const wl_op *op);
/* The same, with the parts (detail may not be NULL). */
double plat_compute_explain(const plat_compute_params *p, const plat_device *d, const wl_op *op,
                            plat_compute_detail *detail);
/* Stretch factor (>= 1) of compute while a transfer of the same GPU runs. */
double plat_compute_overlap_factor(const plat_device *d);

/* ---- routes, without SimGrid -------------------------------------------- */
/* Every link is directed (one SimGrid link per direction).  Kinds: */
typedef enum plat_link_kind {
  PLAT_LINK_INTRA = 0, /* NVLink/HCCS: GPU<->NVSwitch or GPU<->GPU */
  PLAT_LINK_PCIE,      /* GPU<->NIC */
  PLAT_LINK_NIC,       /* NIC<->first switch (the rail) */
  PLAT_LINK_FABRIC,    /* switch<->switch */
  PLAT_LINK_GLOBAL,    /* dragonfly global link */
  PLAT_LINK_ICI,       /* torus chip-to-chip link */
  PLAT_LINK_HOST,      /* GPU<->host memory (PCIe, NVLink-C2C), when PCIe is not modelled */
  PLAT_LINK_HOSTMEM,   /* a node's host memory bandwidth, shared by both directions */
  PLAT_LINK_POD,       /* a pod's links to the data-centre network (up: out of the pod) */
  PLAT_LINK_UNUSED,    /* a link slot no route crosses (node groups: an intra-node kind or
                          PCIe a group does not have); not built, not written */
  PLAT_LINK_KIND_COUNT
} plat_link_kind;

typedef struct plat_link_info {
  char name[48];
  int kind; /* plat_link_kind */
  double bw_Bps;
  double lat_s;
} plat_link_info;

#define PLAT_ROUTE_MAX 96
typedef struct plat_route {
  int n;              /* links, in order from src to dst */
  int link_ids[PLAT_ROUTE_MAX];
  plat_link_info links[PLAT_ROUTE_MAX];
  int switches;       /* switches crossed (each adds switch_lat_s) */
  double latency_s;   /* sum of link latencies + switches * switch_lat_s */
  double bw_Bps;      /* smallest link bandwidth (0 when src == dst) */
} plat_route;

/* The route from GPU src to GPU dst, exactly as the SimGrid platform built by
 * plat_cluster_build() has it (same links, same order, same latency).
 * Works without SimGrid.  Not for PLAT_FABRIC_XML clusters (ask SimGrid:
 * sg_host_get_route).  src == dst gives an empty route.  With
 * c->host_memory, an endpoint may also be a node's host memory
 * (plat_host_endpoint), routed to and from the node's own GPUs only. */
int plat_route_get(const plat_cluster *c, int src, int dst, plat_route *r, st_err *err);
/* plat_route_get's latency_s alone, without naming the links (the
 * estimates ask it many times over); NAN where plat_route_get fails. */
double plat_route_latency(const plat_cluster *c, int src, int dst);
/* The route as the SimGrid engine has it (any cluster, XML platforms too):
 * starts the engine and builds the platform in this process (once per
 * process); link kinds are PLAT_LINK_KIND_COUNT (unknown), switches 0. */
int plat_route_from_engine(const plat_cluster *c, int src, int dst, plat_route *r, st_err *err);
/* Direct links (lanes) joining local GPUs a and b of one node: 1 on a full
 * mesh, 1 or 2 on the DGX-1 cube-mesh, 0 where the two are not joined by
 * their own link (not adjacent on the cube-mesh; NVSwitch and rack nodes,
 * where every GPU reaches the switch and none another GPU; a = b). */
int plat_intra_lanes(const plat_cluster *c, int a, int b);
/* Bisection bandwidth per direction, bytes/s (see docs/platforms.md for the cut). */
double plat_cluster_bisection_Bps(const plat_cluster *c);
/* The directed links SimGrid is given: num_links less the slots no route
 * crosses (node groups of unlike NICs, intra-node kinds or PCIe). */
long plat_cluster_links_built(const plat_cluster *c);
/* Switches of the fabric (0 for torus and XML). */
long plat_cluster_switch_count(const plat_cluster *c);
const char *plat_intra_kind_name(int kind);
const char *plat_fabric_kind_name(int kind);

/* A GPU's node, and its index on it; a node's first GPU and GPU count.
 * Node groups may have unlike GPUs per node (GPUs are numbered node after
 * node, group after group); without groups, g / gpus_per_node and so on. */
int plat_gpu_node(const plat_cluster *c, int gpu);
int plat_gpu_local(const plat_cluster *c, int gpu);
int plat_node_first_gpu(const plat_cluster *c, int node);
int plat_node_gpus(const plat_cluster *c, int node);
/* gpus_per_node when every node has as many GPUs, else 0 (node groups of
 * unlike sizes: ask plat_node_gpus()). */
int plat_gpus_per_node_uniform(const plat_cluster *c);

#ifdef __cplusplus
}
#endif
#endif /* PLAT_PLATFORM_H */
