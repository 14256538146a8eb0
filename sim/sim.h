/* sim.h — the replay engine: a workload on a platform, in SimGrid, and what
 * happened.
 *
 * sim_run() replays every rank's program on its GPU.  Each (rank, stream)
 * with ops is a SimGrid actor; compute ops are timed waits; collectives and
 * send/recv are rendezvous between the members of a communicator followed by
 * the flows of the collective's algorithm on the platform's links (SimGrid
 * shares links max-min fairly between concurrent flows, so contention is
 * real).  A collective that some member never reaches ends the run with
 * ST_ESIM and names the communicator, the op and the ranks still waiting.
 *
 * One SimGrid engine per process: sim_run() may be called once.  Callers that
 * need several runs (tests) fork.
 *
 * Ownership: sim_run() returns a sim_result the caller frees with
 * sim_result_destroy().  Strings in it point into the workload (op names,
 * communicator names), which must outlive the result.  Its arrays (ranks,
 * colls, timeline, links, link_usage) are each malloc'd: a caller may take
 * one over, setting it to NULL, and free() it (sim/driver/drv_measure.c).
 */
#ifndef SIM_SIM_H
#define SIM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "platform.h"
#include "st_common.h"
#include "workload.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sim_net_model {
  SIM_NET_IDEAL = 0, /* CM02, no cross-traffic, no TCP window: exact alpha-beta */
  SIM_NET_LV08,      /* SimGrid's default, with its latency/bandwidth factors */
  SIM_NET_CM02,      /* CM02 with SimGrid's defaults otherwise */
  SIM_NET_COUNT
} sim_net_model;

typedef enum sim_fidelity {
  SIM_FID_FLOW = 0, /* each algorithm edge one flow carrying its total bytes + latency terms */
  SIM_FID_STEP,     /* every algorithm step (ring step, tree level) simulated */
} sim_fidelity;

/* Collective algorithms and protocols (docs/collectives.md). */
typedef enum sim_coll_algo {
  SIM_ALGO_RING = 0,  /* rings laid on the node topology, one channel per NIC */
  SIM_ALGO_DIRECT,    /* all-to-all: pairwise exchange, PXN across rails */
  SIM_ALGO_CHAIN,     /* broadcast/reduce: pipelined chain */
  SIM_ALGO_TREE,      /* double binary tree across nodes, chains inside */
  SIM_ALGO_NVLS,      /* NVLink SHARP in-switch reduction (+ SHARP across nodes) */
  SIM_ALGO_NVLS_TREE, /* NVLS inside nodes, double binary tree across */
  SIM_ALGO_COLLNET,   /* in-network reduction (SHARP) across nodes, rings inside */
  SIM_ALGO_HIER,      /* intra reduce-scatter, inter all-reduce, intra all-gather */
  SIM_ALGO_TORUS,     /* bidirectional ring per torus dimension */
  SIM_ALGO_HIER_PODS, /* across pods: reduce-scatter in each pod, the shards across pods,
                         all-gather in each pod (sim/coll/edges.c) */
  SIM_ALGO_COUNT
} sim_coll_algo;

typedef enum sim_coll_proto {
  SIM_PROTO_LL = 0,
  SIM_PROTO_LL128,
  SIM_PROTO_SIMPLE,
  SIM_PROTO_COUNT
} sim_coll_proto;

typedef enum sim_coll_model {
  SIM_COLL_NCCL = 0, /* NCCL's latencies and protocol efficiencies (default) */
  SIM_COLL_IDEAL,    /* links at line rate, latency = route latency per algorithm hop */
} sim_coll_model;

/* Stragglers (docs/variability.md): a GPU, a node's GPUs or a link made
 * slower for the whole run.  GPU and node: every compute op of the rank(s)
 * takes factor x its time; link: the link(s) whose name matches `link` (a
 * name or an fnmatch(3) glob, e.g. "nic-*-up") run at factor x their
 * bandwidth. */
typedef enum sim_slow_kind {
  SIM_SLOW_GPU = 0,
  SIM_SLOW_NODE,
  SIM_SLOW_LINK,
} sim_slow_kind;

typedef struct sim_slow {
  int kind;          /* sim_slow_kind */
  int index;         /* GPU: the rank (= its GPU); NODE: the node */
  char link[64];     /* LINK: a link name or a glob */
  double factor;     /* > 0: compute time multiplier (GPU, NODE), bandwidth multiplier (LINK) */
  char spec[96];     /* as given ("gpu=17:1.3"), for messages */
} sim_slow;

/* Per-step compute variability: none, or every rank's compute in every
 * iteration multiplied by a factor drawn from a distribution of mean 1. */
typedef enum sim_var_kind {
  SIM_VAR_NONE = 0,
  SIM_VAR_LOGNORMAL, /* exp(sigma Z - sigma^2/2), Z ~ N(0, 1) (st_rng_lognormal1) */
} sim_var_kind;

typedef struct sim_options {
  int net_model;      /* sim_net_model */
  int fidelity;       /* sim_fidelity */
  int timeline;       /* record one row per op (memory: rows x 48 bytes) */
  int quiet;          /* no progress line */
  int fast_colls;     /* closed-form collectives where no other traffic can
                         touch their links (same answer, fewer activities) */
  int link_stats;     /* per-link bytes and peak load (SimGrid's link-load
                         plugin; costs about 45% more time at 2,048 GPUs) */
  int record_colls;   /* one sim_coll_record per collective instance and
                         send/recv pair (the results file's /collectives);
                         80 bytes each, millions at thousands of GPUs */
  int symmetry;       /* simulate one rank per class of symmetric ranks where
                         the checks of engine/sym.c hold (same answer) */
  int run_ahead;      /* with rank classes: a stream waits once for a chain of
                         compute and closed-form collectives (same answer) */
  int coll_algo;      /* sim_coll_algo, -1 = automatic */
  int coll_proto;     /* -1 = automatic */
  int coll_channels;  /* 0 = automatic */
  int coll_model;     /* sim_coll_model */
  const char *simgrid_cfg; /* extra "--cfg=..." settings, space-separated, or NULL */
  /* stragglers and variability (docs/variability.md); none by default */
  const sim_slow *slow; /* num_slow entries, owned by the caller (outlive the run) */
  int num_slow;
  int var_kind;         /* sim_var_kind */
  double var_sigma;     /* lognormal: sigma of log(factor) */
  uint64_t seed;        /* variability: factor (rank, iteration) from st_rng stream
                           (seed, rank x 2^32 + iteration) */
} sim_options;

void sim_options_init(sim_options *o);
const char *sim_net_model_name(int m);
int sim_net_model_from_name(const char *s);
/* "gpu=R:F", "node=N:F" or "link=NAME:F" (F > 0; NAME a link name or a
 * glob) into *out.  0, or ST_EUSAGE with a message naming the value. */
int sim_slow_parse(const char *s, sim_slow *out, st_err *err);
/* "lognormal:SIGMA" (SIGMA >= 0) into o->var_kind and o->var_sigma.  0, or
 * ST_EUSAGE with a message naming the value. */
int sim_variability_parse(const char *s, sim_options *o, st_err *err);
/* Whether o asks for any straggler or variability. */
int sim_options_stragglers(const sim_options *o);

/* Per rank, in seconds, over the whole run.  compute + exposed_comm + bubble
 * + idle (+ offload_exposed with offload) == the run's end (the largest
 * finish_s = step time x iterations):
 * the wait from a rank's last op (finish_s) to the end of the run, for the
 * slowest rank, counts as idle, like waits inside the run. */
typedef struct sim_rank_stats {
  int32_t rank;
  int32_t host;           /* GPU index */
  double compute_s;       /* some compute op running */
  double comm_s;          /* some transfer of this rank running (hidden or not) */
  double exposed_comm_s;  /* transfer running, no compute */
  double overlapped_comm_s; /* transfer running under compute */
  double bubble_s;        /* nothing running, waiting for a pipeline peer (send/recv) */
  double idle_s;          /* nothing running otherwise (waiting in a collective, stream waits) */
  double finish_s;
  double phase_s[WL_PHASE_COUNT];          /* busy time per phase */
  double comm_kind_s[WL_COMM_KIND_COUNT];  /* transfer time per communicator kind */
  /* host-memory offload (docs/results-format.md): a copy to or from host
   * memory or host compute (the optimizer step on the CPU) running, and of
   * that the time nothing else ran (no compute, no transfer: its own
   * bucket, so compute + exposed_comm + offload_exposed + bubble + idle is
   * the run's end) */
  double offload_s;
  double offload_exposed_s;
  double pod_exposed_s; /* of exposed_comm_s, while a transfer crossing pods ran */
} sim_rank_stats;

/* One collective (or send/recv pair) instance. */
typedef struct sim_coll_record {
  int32_t comm;     /* communicator index in the workload */
  uint8_t kind;     /* WL_OP_COLL or WL_OP_SEND (a matched send/recv pair) */
  uint8_t op;       /* wl_coll_op for COLL */
  uint8_t algo;     /* sim_coll_algo used */
  uint8_t proto;    /* sim_coll_proto used */
  int32_t nranks;
  int32_t src, dst; /* send/recv: global ranks; else -1 */
  double bytes;
  double start_s;   /* all members arrived; transfer starts */
  double end_s;
  double first_arrival_s; /* first member arrived */
  double algbw_GBps;
  double busbw_GBps;
  int32_t channels; /* channels (rings, tree pairs) the algorithm used */
} sim_coll_record;

typedef struct sim_timeline_row {
  int32_t rank;
  uint16_t stream;
  uint8_t kind;    /* wl_op_kind */
  uint8_t sub;
  int32_t program;
  uint32_t op;     /* op index in the program (name: wl_op_name) */
  double start_s, end_s;
  double bytes, flops;
} sim_timeline_row;

typedef struct sim_link_stats {
  const char *name; /* owned by the result */
  double bandwidth_Bps;
  double bytes;     /* bytes carried over the run */
  double busy_s;    /* time with at least one flow */
  double peak_util; /* largest fraction of bandwidth used at any time */
} sim_link_stats;

/* Bytes the flows of one communicator's collectives of one kind (or its
 * send/recv pairs) carried over one link: which collectives used the link.
 * Only with link_stats; one entry per (link, communicator, op) that moved
 * bytes, so their bytes add up to the link's. */
typedef struct sim_link_usage {
  uint32_t link;  /* index into sim_result.links */
  int32_t comm;   /* communicator index in the workload */
  uint8_t kind;   /* WL_OP_COLL, or WL_OP_SEND for send/recv */
  uint8_t op;     /* wl_coll_op for WL_OP_COLL, else 0 */
  double bytes;
} sim_link_usage;

typedef struct sim_result {
  int num_ranks;
  double step_time_s;   /* whole run: largest rank finish time / iterations */
  double sim_time_s;    /* simulated time at the end */
  int iterations;
  sim_rank_stats *ranks;
  sim_coll_record *colls;
  size_t num_colls;
  sim_timeline_row *timeline;
  size_t num_timeline;
  sim_link_stats *links;
  size_t num_links;
  double wall_s;        /* wall-clock seconds of the simulation */
  uint64_t events;      /* activities simulated */
  uint64_t fast_colls;  /* collective instances computed in closed form */
  st_arena arena;       /* strings owned by the result */
  sim_link_usage *link_usage; /* by link, then most bytes first (link_stats only) */
  size_t num_link_usage;
  int simulated_ranks;  /* ranks simulated; the others copied from symmetric ones */
  uint64_t chains;      /* run-ahead chains waited for (design note 7, engine/chain.c) */
  uint64_t chains_cut;  /* ... of them interrupted by a transfer beside them */
  char reduction[200];  /* the symmetry reduction used, or "none (why)" */
  /* a cluster of pods (else 0 and NULL): bytes each pod sent out over its
   * data-centre links and received over them, over the run */
  int num_pods;
  double *pod_out_bytes, *pod_in_bytes;
} sim_result;

int sim_run(const wl_workload *wl, const plat_cluster *cl, const sim_options *opt,
            sim_result **out, st_err *err);
void sim_result_destroy(sim_result *r);

const char *sim_coll_algo_name(int algo);
const char *sim_coll_proto_name(int proto);
/* -1 when the name is unknown. */
int sim_coll_algo_from_name(const char *s);
int sim_coll_proto_from_name(const char *s);

/* nccl-tests' bus-bandwidth factor for op over n ranks (allreduce 2(n-1)/n,
 * allgather/reducescatter/alltoall (n-1)/n, broadcast/reduce/sendrecv 1). */
double sim_busbw_factor(int coll_op, int n);

/* The tuner's closed-form time of one collective (op, bytes in nccl-tests'
 * convention, arg its wl_op_coll_arg: a root, a deduplicating all-to-all's
 * top-k and experts) over the GPUs ranks[0..n-1] of cl, with NCCL's latency and
 * bandwidth tables on the cluster's links and no other traffic: what NCCL's
 * ncclTopoGetAlgoTime ranks algorithms by, without SimGrid (for analytic
 * estimates; the engine simulates the flows).  NaN when the cluster has no
 * routes of its own (SimGrid XML) or memory runs out. */
double sim_coll_estimate(const plat_cluster *cl, const int32_t *ranks, int n, int op, double bytes,
                         int arg);

#ifdef __cplusplus
}
#endif
#endif /* SIM_SIM_H */
