/* analysis.h — results: the summary numbers, the HDF5 results file, and the
 * views of it people read (report).
 *
 * The results file (one per run) is written under a temporary name and
 * renamed when complete, so a crash never leaves a half file.  Layout:
 *   /                 attributes simtrain_version, command_line, created_utc
 *   /config           attributes workload, cluster, options (JSON strings)
 *   /summary          attributes: the an_summary fields (NaN where n/a)
 *   /ranks            compound rows (an_rank_row)
 *   /collectives      compound rows (op, communicator, ranks, bytes, start_s,
 *                     end_s, algbw_GBps, busbw_GBps, ...)
 *   /links            compound rows (name, bandwidth, bytes, busy_s, ...)
 *   /link_usage       compound rows (link, op, comm, comm_kind, bytes): which
 *                     collectives used each link
 *   /communicators    compound rows (name, kind, size, first) and
 *   /communicator_ranks  int32: members of each, from row `first` on
 *   /timeline         compound rows, only with --timeline
 *   /replay           compound rows (an_replay_rank) with the an_replay
 *                     fields as attributes, only for trace replays
 *   /jobs, /shared_links  compound rows (an_job_row; name, jobs, bytes), only
 *                     for a run of several jobs (docs/jobs.md)
 * Datasets added after the first version (/link_usage, /communicators,
 * /communicator_ranks, the timeline's `comm` column) are optional when
 * reading: files written earlier read back with them empty (comm -1); so
 * are the summary's later attributes (the training block reads as NaN).
 * docs/results-format.md documents every field.
 *
 * What a run measured comes in as an an_measured, analysis's own plain data
 * (the driver fills it from the engine's result, sim/driver/drv_measure.c):
 * the file's layout is that of the an_ row types here, so a change to the
 * engine's structs does not change the format.  Rows that refer to the
 * workload (collectives, link usage, timeline) hold its indices and are
 * named from it as they are written, a batch at a time, so the timeline's
 * millions of rows are never held twice or with their names.
 */
#ifndef AN_ANALYSIS_H
#define AN_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "platform.h"
#include "st_common.h"
#include "workload.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What `run --json` and `report --json` print.  Per-rank times are means
 * over ranks, per step.  NaN means "does not apply" and prints as null. */
/* Ranks listed in an_summary.critical_ranks; a wait within AN_CRITICAL_TOL x
 * the run's length of the least counts as the least. */
#define AN_CRITICAL_LIST 16
#define AN_CRITICAL_TOL 1e-9

typedef struct an_summary {
  int num_gpus;
  int iterations;
  double step_time_s;
  double tokens_per_step;
  double tokens_per_s;
  double tokens_per_s_per_gpu;
  double model_flops_per_step;
  double model_tflops_per_gpu; /* model FLOPs per step / step time / GPUs / 1e12 */
  double mfu;                  /* model_tflops_per_gpu / device peak for the workload dtype */
  double compute_s;
  double exposed_comm_s;
  double overlapped_comm_s;
  double bubble_s;
  double idle_s;
  double peak_memory_bytes;
  double device_memory_bytes;
  double sim_wall_s;
  double events;
  double simulated_ranks;  /* ranks the engine simulated (the rest copied, see reduction) */
  char reduction[200];     /* the engine's symmetry reduction, or "none (why)" */
  /* training to a token budget (an_train_compute, docs/cost.md); NaN when no
   * budget was given, cost_usd also when there is no price and the power and
   * energy when the device has no TDP */
  double train_tokens;           /* the budget */
  double train_steps;            /* ceil(train_tokens / tokens_per_step) */
  double time_to_train_s;        /* train_steps x step_time_s (steady-state steps) */
  double price_usd_per_gpu_hour; /* the price used */
  double cost_usd;               /* num_gpus x time_to_train_s / 3600 x price */
  double gpu_busy_fraction;      /* (compute_s + share x exposed_comm_s) / step_time_s */
  double power_W;                /* mean IT power: GPUs and their share of their nodes */
  double pue;                    /* facility power / IT power, applied to the energy */
  double energy_MWh;             /* power_W x time_to_train_s x pue */
  /* who waited for whom (an_summary_critical, docs/variability.md): NaN, and
   * not printed or stored, unless the run had stragglers or variability.
   * A rank's wait is its idle_s + bubble_s over the run. */
  double slowest_rank;           /* the rank that waited least (lowest index on ties) */
  double num_critical_ranks;     /* ranks within AN_CRITICAL_TOL of that least wait */
  double slowest_wait_s;         /* its wait, per step */
  double max_wait_rank;          /* the rank that waited most */
  double max_wait_s;             /* its wait, per step */
  int32_t critical_ranks[AN_CRITICAL_LIST]; /* the first of them, ascending */
  int num_critical_listed;
  /* host-memory offload (docs/results-format.md): NaN, and not printed or
   * stored, unless the workload copies to host memory or computes on the
   * host.  Means over ranks, per step. */
  double offload_s;         /* a copy to or from host memory or the CPU's step running */
  double offload_exposed_s; /* of it, with nothing else running (its own bucket) */
  /* the inter-pod links of a cluster of pods (docs/results-format.md): NaN,
   * and not printed or stored, on any other cluster.  Per step. */
  double pod_exposed_s;   /* mean over ranks: exposed comm. while a transfer crossing
                                    pods ran (a collective spanning pods, a send/recv between) */
  double pod_link_bytes;  /* bytes that crossed between pods (= out of all pods) */
  double pod_link_busy_s; /* the busiest pod link's time moving its bytes at full rate */
} an_summary;

/* ---- what a run measured ---------------------------------------------------- */
/* Per rank, in seconds, over the whole run: a /ranks row as stored (the
 * column names are the fields', phase_s[i] and comm_kind_s[i] as
 * busy_<phase>_s and comm_<kind>_s).  compute + exposed_comm + bubble + idle
 * (+ offload_exposed with offload) == the run's end (the largest finish_s = step time x iterations): the wait
 * from a rank's last op to the end of the run counts as idle. */
typedef struct an_rank_row {
  int32_t rank;
  int32_t host;             /* GPU index */
  double compute_s;         /* some compute op running */
  double comm_s;            /* some transfer of this rank running (hidden or not) */
  double exposed_comm_s;    /* transfer running, no compute */
  double overlapped_comm_s; /* transfer running under compute */
  double bubble_s;          /* nothing running, waiting for a pipeline peer (send/recv) */
  double idle_s;            /* nothing running otherwise (waiting in a collective, stream waits) */
  double finish_s;          /* the rank's last op ended */
  double phase_s[WL_PHASE_COUNT];         /* busy time per phase */
  double comm_kind_s[WL_COMM_KIND_COUNT]; /* transfer time per communicator kind */
  /* host-memory offload: a copy or host compute running, and of that the
   * time nothing else ran; not stored in /ranks (0 when read back) */
  double offload_s;
  double offload_exposed_s;
} an_rank_row;

/* One link over the run: a /links row. */
typedef struct an_link_row {
  char *name;           /* owned by the an_measured or an_results holding the row */
  double bandwidth_Bps;
  double bytes;         /* bytes carried over the run */
  double busy_s;        /* time with at least one flow */
  double peak_util;     /* largest fraction of bandwidth used at any time */
} an_link_row;

/* One collective instance or matched send/recv pair, by the workload's
 * indices: the writer makes the /collectives row (an_coll_row) of it. */
typedef struct an_coll_rec {
  int32_t comm;     /* communicator: index in the workload */
  uint8_t kind;     /* WL_OP_COLL, or WL_OP_SEND for a matched send/recv pair */
  uint8_t op;       /* wl_coll_op (WL_OP_COLL) */
  uint8_t algo;     /* row of an_measured.algo_names (WL_OP_COLL) */
  uint8_t proto;    /* row of an_measured.proto_names (WL_OP_COLL) */
  int32_t nranks;
  int32_t src, dst; /* send/recv: global ranks */
  int32_t channels; /* channels (rings, tree pairs) the algorithm used (WL_OP_COLL) */
  double bytes;
  double first_arrival_s; /* first member arrived */
  double start_s;         /* all members arrived; transfer starts */
  double end_s;
  double algbw_GBps, busbw_GBps;
} an_coll_rec;

/* Bytes the flows of one communicator's collectives of one op (or its
 * send/recv pairs) carried over one link, by the workload's indices: a
 * /link_usage row (an_link_usage_row) once named. */
typedef struct an_usage_rec {
  int32_t link; /* row of an_measured.links */
  int32_t comm; /* communicator: index in the workload */
  uint8_t kind; /* WL_OP_COLL, or WL_OP_SEND for send/recv */
  uint8_t op;   /* wl_coll_op for WL_OP_COLL */
  double bytes;
} an_usage_rec;

/* One op as it ran, by the workload's indices: a /timeline row
 * (an_timeline_row) once named; its peer and communicator come from the op. */
typedef struct an_timeline_rec {
  int32_t rank;
  uint16_t stream;  /* stream of the rank's program */
  uint8_t kind;     /* wl_op_kind */
  int32_t program;  /* program index in the workload */
  uint32_t op;      /* op index in the program */
  double start_s, end_s;
  double bytes, flops;
} an_timeline_rec;

/* Rows of an_measured's name tables, and the widths of the names (those of
 * the /collectives algo and proto columns). */
#define AN_NAMES_MAX 32
#define AN_ALGO_NAME_SIZE 12
#define AN_PROTO_NAME_SIZE 8

/* What a run measured.  The arrays are malloc'd and owned by it
 * (an_measured_release), link names included; those that were not
 * recorded are NULL with a count of 0. */
typedef struct an_measured {
  int iterations;
  double step_time_s;   /* the largest rank finish time / iterations */
  double wall_s;        /* wall-clock seconds of the simulation */
  uint64_t events;      /* activities simulated */
  int simulated_ranks;  /* ranks simulated, the others copied from symmetric ones (0: all) */
  char reduction[200];  /* the symmetry reduction used, or "none (why)" ("": none) */
  an_rank_row *ranks;
  size_t num_ranks;
  an_coll_rec *colls;   /* only when recorded for a results file */
  size_t num_colls;
  an_link_row *links;
  size_t num_links;
  an_usage_rec *usage;  /* by link, then most bytes first; only with link loads */
  size_t num_usage;
  an_timeline_rec *timeline; /* only when recorded */
  size_t num_timeline;
  /* The collective algorithms' and protocols' names, by an_coll_rec.algo
   * and .proto. */
  char algo_names[AN_NAMES_MAX][AN_ALGO_NAME_SIZE];
  char proto_names[AN_NAMES_MAX][AN_PROTO_NAME_SIZE];
  int num_algo_names, num_proto_names;
  /* a cluster of pods (num_pods > 0; else 0 and NULL), over the run: */
  int num_pods;
  double pod_exposed_s;  /* summed over ranks: exposed time while a transfer crossing pods ran */
  double *pod_out_bytes; /* per pod: bytes out over its data-centre links, owned */
  double *pod_in_bytes;  /* per pod: bytes in over them, owned */
} an_measured;

/* Free the arrays (and link names) and zero m. */
void an_measured_release(an_measured *m);

void an_summary_compute(const wl_workload *wl, const plat_cluster *cl, const an_measured *m,
                        an_summary *s);
/* The critical-path fields of s (who waited for whom) from the per-rank rows
 * of a run of s->iterations steps lasting s->step_time_s each: the slowest
 * rank waited least (idle + bubble); the critical ranks waited within
 * AN_CRITICAL_TOL x the run of that; the rank that waited most and how long
 * (docs/variability.md). */
void an_summary_critical(an_summary *s, const an_rank_row *rows, size_t n);

/* ---- time, cost and energy to train (analysis/train.c, docs/cost.md) ------ */
/* Power model (stated assumptions, docs/cost.md): an idle GPU draws
 * AN_IDLE_FRACTION of its TDP; a busy one its TDP; a GPU that only
 * communicates (exposed communication) draws the idle power plus
 * AN_COMM_POWER_SHARE of the difference.  A node's non-GPU power is
 * constant, split evenly over its GPUs. */
#define AN_IDLE_FRACTION 0.10
#define AN_COMM_POWER_SHARE 0.5

typedef struct an_power {
  double tdp_W;          /* per GPU; NaN or <= 0: unknown (no energy) */
  double idle_W;         /* per GPU */
  double host_W_per_gpu; /* the node's non-GPU power / its GPUs */
} an_power;

/* The power facts of a cluster: its device's TDP, AN_IDLE_FRACTION of it,
 * its nodes' host_power_W over their GPUs. */
void an_power_from_cluster(const plat_cluster *cl, an_power *p);

/* Fills the training fields of s (set by an_summary_compute: step_time_s,
 * tokens_per_step, num_gpus, compute_s, exposed_comm_s) for a budget of
 * tokens: train_steps = ceil(tokens / tokens_per_step), time_to_train_s =
 * train_steps x step_time_s, cost_usd = num_gpus x time_to_train_s / 3600 x
 * price (NaN price: none), gpu_busy_fraction = min(1, (compute_s +
 * AN_COMM_POWER_SHARE x exposed_comm_s) / step_time_s), power_W = num_gpus x
 * (idle_W + (tdp_W - idle_W) x busy + host_W_per_gpu), energy_MWh = power_W x
 * time_to_train_s x pue / 3.6e9.  ST_EUSAGE for tokens not > 0, a negative
 * price or a pue below 1; ST_EINPUT when the run does not say how many tokens
 * a step trains. */
int an_train_compute(an_summary *s, const an_power *p, double tokens, double price_usd_per_gpu_hour,
                     double pue, st_err *err);
/* The error of a budget for a run that does not say how many tokens a step
 * trains (a trace without a token count). */
#define AN_TRAIN_NO_TOKENS                                                                    \
  "the workload does not say how many tokens a step trains, so a token budget cannot be "    \
  "turned into steps"
/* The budget, price (NaN: none) and PUE as an_train_compute checks them. */
int an_train_check(double tokens, double price_usd_per_gpu_hour, double pue, st_err *err);
/* One JSON object, keys as in an_summary, on one line. */
void an_summary_print_json(const an_summary *s, FILE *out);
/* The human summary table (what `run` prints without --json). */
void an_summary_print_text(const an_summary *s, const char *workload_name,
                           const char *cluster_name, FILE *out);

/* ---- replay of a captured trace: measured against replayed (replay.c) ------ */
/* Per rank, in seconds; NaN where the trace did not measure it.  Compute is
 * the sum of the rank's compute kernels (idle gaps, start offsets and host
 * time excluded); communication the sum of its collective and send/recv
 * kernels from the rank's arrival to the end (waiting for peers included,
 * as a measured NCCL kernel's duration is).  A replayed step is the rank's
 * finish time less its start offset (how long after the earliest rank its
 * measured step began), so both count from the rank's own step start. */
typedef struct an_replay_rank {
  int32_t rank;
  int32_t source_rank; /* the rank whose trace it replays: itself, or the given rank it
                          copies (one rank standing for all) */
  double start_offset_s;
  double measured_step_s, replayed_step_s;
  double measured_compute_s, replayed_compute_s;
  double measured_comm_s, replayed_comm_s;
} an_replay_rank;

typedef struct an_replay {
  char source_device[64]; /* the device the trace was measured on, as named there, or "" */
  char replay_device[48]; /* the cluster's device */
  int rescaled;           /* 1: measured compute was moved to replay_device (what-if) */
  double measured_step_s; /* earliest rank's start to latest rank's end, NaN if unknown */
  double replayed_step_s;
  int32_t num_ranks;
  an_replay_rank *ranks;  /* num_ranks rows, owned by the an_replay (an_replay_release) */
} an_replay;

/* Fill the replayed columns (and num_ranks, ranks, replayed_step_s) from a
 * run that recorded its timeline; the caller then sets the measured ones
 * (rows start as NaN, start offsets as 0).  ST_EUSAGE when the run has no
 * timeline. */
int an_replay_init(an_replay *rp, const wl_workload *wl, const an_measured *m,
                   const double *start_offset_s, st_err *err);
void an_replay_release(an_replay *rp);
/* The table `run --trace` prints after the summary (fits 100 columns): the
 * copied-rank map when ranks were copied, the whole step, then one row per
 * rank of sel (nsel ranks) when sel is not NULL, else one per rank up to
 * AN_REPLAY_ALL_ROWS ranks and past that the min, median and max of each
 * column and the AN_REPLAY_SLOWEST slowest ranks (by replayed step). */
#define AN_REPLAY_ALL_ROWS 16
#define AN_REPLAY_SLOWEST 5
void an_replay_print_text(const an_replay *rp, const int32_t *sel, size_t nsel, FILE *out);
/* an_summary_print_json with a "replay" object added (rp NULL: the same as
 * an_summary_print_json): the whole step, num_ranks, the copied-rank map
 * ("copied", when any), the replayed step's min, median and max over the
 * ranks and the slowest ranks; the per-rank array "ranks" only for sel (nsel
 * ranks; sel NULL: left out, the results file keeps every row). */
void an_summary_print_json_replay(const an_summary *s, const an_replay *rp, const int32_t *sel,
                                  size_t nsel, FILE *out);

/* ---- jobs sharing a fabric (analysis/jobs.c, docs/jobs.md) --------------- */
#define AN_JOBS_MAX 64
/* One job of a run of several: a /jobs row as stored. */
typedef struct an_job_row {
  char name[64];
  char kind[16];   /* "workload", "model" or "background" */
  char gpus[256];  /* the GPUs as given ("0-7,16-23"; cut at 255 characters) */
  int32_t num_gpus;
  double step_time_alone_s;    /* the job alone on its GPUs */
  double step_time_together_s; /* with the others: its slowest rank's finish / iterations */
  double slowdown;             /* together / alone */
} an_job_row;

/* A link that carried bytes of more than one job: a /shared_links row is
 * name, jobs (their names, comma-separated) and bytes. */
typedef struct an_shared_link {
  char name[64];
  char jobs[256];
  double bytes;                    /* every job's bytes over it */
  uint64_t job_mask;               /* bit j: job j moved bytes over it (not stored) */
  double job_bytes[AN_JOBS_MAX];   /* by job (not stored) */
} an_shared_link;

/* The links of m that carried bytes of more than one job, the most bytes
 * first (ties: link order), at most top of them (0: all).  comm_job[c] is
 * the job of the workload's communicator c (-1: none); names[j] the jobs'.
 * *out is malloc'ed (the caller frees it); ST_ENOMEM when memory runs out,
 * ST_EUSAGE for more than AN_JOBS_MAX jobs. */
int an_jobs_shared_links(const an_measured *m, const int32_t *comm_job, int num_comms,
                         const char *const *names, int num_jobs, size_t top,
                         an_shared_link **out, size_t *n, st_err *err);
/* The table for people, and the JSON object {"jobs":[{name, kind, gpus,
 * num_gpus, step_time_alone_s, step_time_together_s, slowdown}], "shared_links":
 * [{name, jobs:[...], bytes, job_bytes:[...]}], "step_time_s"} (one line). */
void an_jobs_print_text(const an_job_row *jobs, int num_jobs, const an_shared_link *links,
                        size_t num_links, FILE *out);
void an_jobs_print_json(const an_job_row *jobs, int num_jobs, const an_shared_link *links,
                        size_t num_links, double step_time_s, FILE *out);


/* Everything a results file holds. */
typedef struct an_run_info {
  const char *command_line;
  const char *workload_json; /* description of the inputs, JSON text */
  const char *cluster_json;
  const char *options_json;
  const char *workload_name;
  const char *cluster_name;
  const wl_workload *wl;     /* for names in /collectives, /link_usage and /timeline */
  const an_measured *measured;
  const an_summary *summary;
  const an_replay *replay;   /* trace replays: written as /replay; NULL otherwise */
  const an_job_row *jobs;    /* several jobs: written as /jobs and /shared_links; NULL otherwise */
  int num_jobs;
  const an_shared_link *shared_links;
  size_t num_shared_links;
} an_run_info;

int an_results_write(const char *path, const an_run_info *info, st_err *err);

/* A results file read back (for report, compare, export, plot). */
typedef struct an_coll_row {
  char op[16];        /* wl_coll_name, or "sendrecv" for a matched send/recv pair */
  char comm[64];
  char comm_kind[8];
  int32_t nranks;
  double bytes, start_s, end_s, algbw_GBps, busbw_GBps;
  double first_arrival_s;
  int32_t src, dst;   /* sendrecv: global ranks; else -1 */
  /* How the collective ran (its algorithm's and protocol's names, its
   * channels); "" and 0 for sendrecv; "" and -1 when read from a file
   * written before these columns existed. */
  char algo[AN_ALGO_NAME_SIZE];
  char proto[AN_PROTO_NAME_SIZE];
  int32_t channels;
} an_coll_row;

typedef struct an_timeline_row {
  int32_t rank;
  int32_t stream;
  char stream_name[24];
  char kind[12];
  char name[64];
  double start_s, end_s, bytes, flops;
  int32_t peer; /* send/recv: the peer's global rank; else -1 */
  int32_t comm; /* collective/send/recv: row in /communicators; else -1 */
} an_timeline_row;

/* Bytes one communicator's collectives of one op (or its send/recv pairs)
 * moved over one link. */
typedef struct an_link_usage_row {
  int32_t link;       /* row in /links */
  char op[16];        /* wl_coll_name, or "sendrecv" */
  char comm[64];
  char comm_kind[8];
  double bytes;
} an_link_usage_row;

/* A communicator of the workload; its members are comm_ranks[first ..
 * first + size). */
typedef struct an_comm_row {
  char name[64];
  char kind[8];
  int32_t size;
  int32_t first;
} an_comm_row;

typedef struct an_results {
  char *path;
  char *command_line;
  char *created_utc;
  char *version;
  char *workload_name;
  char *cluster_name;
  char *workload_json, *cluster_json, *options_json;
  an_summary summary;
  an_rank_row *ranks;
  size_t num_ranks;
  an_coll_row *colls;
  size_t num_colls;
  an_link_row *links; /* names owned by the results */
  size_t num_links;
  an_timeline_row *timeline;
  size_t num_timeline;
  an_link_usage_row *link_usage; /* by link, most bytes first; may be empty */
  size_t num_link_usage;
  an_comm_row *comms;            /* may be empty (older files) */
  size_t num_comms;
  int32_t *comm_ranks;
  size_t num_comm_ranks;
  an_replay *replay;         /* /replay when the file has it, else NULL */
  an_job_row *jobs;          /* /jobs when the file has it (a run of several jobs) */
  size_t num_jobs;
  an_shared_link *shared_links; /* /shared_links (job_mask and job_bytes not stored: 0) */
  size_t num_shared_links;
} an_results;

int an_results_read(const char *path, an_results **out, st_err *err);
void an_results_destroy(an_results *r);

/* A rank list from the command line: "0-3,8,12" -> {0,1,2,3,8,12}, in the
 * order given, duplicates dropped; every rank must be < num_ranks.  *out is
 * a new array the caller frees.  Errors (ST_EUSAGE) quote the list and the
 * bad item. */
int an_rank_list_parse(const char *spec, int32_t num_ranks, int32_t **out, size_t *n,
                       st_err *err);

/* `simtrain report`: readable in 100 columns; the per-rank table limited to
 * the given ranks (in that order), or every rank when ranks is NULL. */
void an_report_print_ranks(const an_results *r, const int32_t *ranks, size_t num_ranks,
                           FILE *out);

/* ---- compare: runs side by side (analysis/compare.c) --------------------- */
/* The value of a summary field by its JSON key ("step_time_s"), NaN if unknown. */
double an_summary_value(const an_summary *s, const char *key);
/* runs[0] is the baseline A; every other run X gets X - A and X / A per
 * summary number (n/a / null where A is 0 or a value is NaN). */
void an_compare_print(const an_results *const *runs, size_t n, FILE *out);
/* One JSON object: {"baseline":0,"runs":[{"path","workload","cluster",
 * "values":{...},"delta":{...},"ratio":{...}}, ...]}. */
void an_compare_print_json(const an_results *const *runs, size_t n, FILE *out);

/* ---- export (analysis/export.c) ------------------------------------------ */
/* What an export wrote, for tests and messages. */
typedef struct an_export_counts {
  size_t processes; /* ranks */
  size_t threads;   /* (rank, stream) pairs */
  size_t slices;    /* "X" events: one per /timeline row */
  size_t flows;     /* matched send/recv pairs */
  size_t counters;  /* link counter tracks */
} an_export_counts;

/* Write the timeline as Chrome/Perfetto trace JSON (gzip when path ends in
 * ".gz"), atomically.  counts may be NULL.  Errors when the results have no
 * timeline.  A process per rank, a thread per stream. */
int an_export_perfetto(const an_results *r, const char *path, an_export_counts *counts,
                       st_err *err);

typedef enum an_export_group {
  AN_GROUP_RANK = 0, /* a process per rank, a thread per stream */
  AN_GROUP_NODE,     /* a process per node, a thread per (GPU, stream) */
} an_export_group;

/* The same with a choice of grouping.  AN_GROUP_NODE needs the GPUs per node
 * from '/config' cluster (node.gpus or gpus_per_node); an error otherwise. */
int an_export_perfetto_grouped(const an_results *r, const char *path, int group,
                               an_export_counts *counts, st_err *err);

/* ---- plots (analysis/plot.c): self-contained SVG, written atomically ------- */
/* The chosen ranks' streams over the run (ranks NULL: the first 8 ranks). */
int an_plot_timeline(const an_results *r, const int32_t *ranks, size_t num_ranks,
                     const char *path, st_err *err);
/* Stacked bars per rank: compute, exposed comm, bubble, idle per step (ranks NULL: all). */
int an_plot_breakdown(const an_results *r, const int32_t *ranks, size_t num_ranks,
                      const char *path, st_err *err);
/* Heat map of link utilisation (mean, busy share, peak), busiest first. */
int an_plot_links(const an_results *r, const char *path, st_err *err);
/* Runs side by side: a stacked bar per run of the summary's compute, exposed
 * comm, bubble and idle per step (means over ranks), with a mark at the
 * run's step time. */
int an_plot_compare(const an_results *const *runs, size_t n, const char *path, st_err *err);


/* ---- a whole run with failures, checkpoints and restarts (analysis/failures.c,
 *      failures_out.c; docs/failures.md) ------------------------------------ */
#define AN_FAILURE_MAX_TRIALS 10000000
#define AN_FAILURE_MAX_SPARES 1000000

/* The run (failures.c's header gives the model). */
typedef struct an_failure_params {
  double work_s;     /* failure-free training: steps x step time */
  double rate_per_s; /* the job's failures per second of running, 0 or more */
  double ckpt_s;     /* one blocking checkpoint, > 0 */
  double restart_s;  /* from a failure (and a node) to training again */
  double repair_s;   /* the wait for a repaired node when no spare is free */
  int spare_nodes;   /* -1: unlimited (a failed node is replaced at once) */
  double interval_s; /* work between checkpoints, > 0 */
} an_failure_params;

/* ST_EUSAGE naming the first bad field (not positive, negative, infinite). */
int an_failure_check(const an_failure_params *p, st_err *err);

/* Young (1974): sqrt(2 ckpt M).  Daly (2006, FGCS 22(3) 303-312, eq. 37):
 * sqrt(2 ckpt M) (1 + sqrt(ckpt / 2M) / 3 + ckpt / 18M) - ckpt for ckpt <
 * 2M, else M. */
double an_failure_young_s(double ckpt_s, double mtbf_s);
double an_failure_daly_s(double ckpt_s, double mtbf_s);

typedef struct an_failure_expectation {
  double checkpoints; /* n = ceil(work / interval) */
  double base_s;      /* work + n ckpt: the time without failures */
  double time_s;      /* expected time to train */
  double failures;    /* expected failures */
  double goodput;     /* work / time */
} an_failure_expectation;

/* The exact expectation of the model for exponential failures: n - 1 full
 * segments and the last, each e^(lambda R) (e^(lambda L) - 1) (1/lambda + D)
 * with D the repair time without spares (0 with spares: assumed never to run
 * out).  p must pass an_failure_check. */
void an_failure_expect(const an_failure_params *p, an_failure_expectation *e);
/* The continuous form: work / interval x one full segment's expected time
 * (what the optimum minimises). */
double an_failure_rate_time_s(const an_failure_params *p, double interval_s);
/* The interval that minimises an_failure_rate_time_s (golden-section search
 * over log interval, from Young / 1000 to Young x 1000), at most work_s;
 * work_s without failures. */
double an_failure_optimal_s(const an_failure_params *p);

/* One trial's outcome. */
typedef struct an_failure_trial {
  double finish_s, failures, waits, lost_s, restart_s, wait_s;
} an_failure_trial;

/* The Monte-Carlo over trials (means over trials; p10/p50/p90 of the finish
 * time by linear interpolation between order statistics). */
typedef struct an_failure_mc {
  int trials;
  double mean_s, stddev_s, min_s, max_s, p10_s, p50_s, p90_s;
  double failures;     /* per trial */
  double waits;        /* failures that found no free spare, per trial */
  double lost_s;       /* work and checkpoints lost, and interrupted restarts */
  double restart_s;    /* completed restarts */
  double wait_s;       /* waiting for a node */
  double checkpoint_s; /* n x ckpt */
  double goodput;      /* work / mean */
} an_failure_mc;

/* trials runs of the model, trial k from st_rng stream (seed, k); finish_s
 * (trials entries, or NULL) gets each trial's finish time in trial order.
 * ST_EUSAGE for bad parameters or trials outside 1..AN_FAILURE_MAX_TRIALS. */
int an_failure_simulate(const an_failure_params *p, int trials, uint64_t seed, double *finish_s,
                        an_failure_mc *mc, st_err *err);
/* The q-quantile of n sorted values (linear between order statistics). */
double an_failure_quantile(const double *sorted, size_t n, double q);

typedef struct an_failure_sweep_row {
  double mtbf_scale; /* both MTBFs x this */
  double job_mtbf_s; /* 1 / rate */
  double interval_s, time_s, goodput, failures;
} an_failure_sweep_row;
/* The expectation against the interval for each MTBF scale: points
 * intervals, log-spaced from an eighth of the smallest scale's optimum to
 * eight times the largest's (at most work_s), the same for every scale;
 * rows has num_scales x points entries, scale by scale. */
int an_failure_sweep(const an_failure_params *p, const double *scales, int num_scales, int points,
                     an_failure_sweep_row *rows, st_err *err);

/* Everything `simtrain train` predicts (filled by the driver, drv_train.c). */
typedef struct an_failure_report {
  char workload[256], cluster[256], device[64];
  int num_gpus, num_nodes;
  int simulated;          /* the step was simulated (0: given, --step-time) */
  double step_time_s, tokens_per_step, train_tokens, train_steps;
  double mtbf_gpu_h, mtbf_node_h; /* per GPU, per node */
  double job_mtbf_s;              /* 1 / rate */
  double ckpt_bytes, storage_GBps, reschedule_s, repair_h;
  int interval_auto;              /* the interval is the optimum */
  double young_s, daly_s, optimal_s;
  an_failure_params p;
  an_failure_expectation analytic;
  int trials;
  uint64_t seed;
  an_failure_mc mc;
  double *finish_s; /* trials entries, trial order (owned: an_failure_report_release) */
  an_failure_sweep_row *sweep; /* NULL without a sweep (owned) */
  int sweep_scales, sweep_points;
} an_failure_report;
void an_failure_report_release(an_failure_report *r);

/* A table for people; one JSON object (docs/failures.md lists the keys). */
void an_failure_print_text(const an_failure_report *r, FILE *out);
void an_failure_print_json(const an_failure_report *r, FILE *out);
/* The sweep as a table (tab-separated, a header line). */
void an_failure_print_sweep(const an_failure_report *r, FILE *out);
/* The HDF5 file (docs/results-format.md, "Training runs"), atomically. */
int an_failure_write(const an_failure_report *r, const char *path, const char *command_line,
                     st_err *err);
/* A histogram of the trials' finish times with p10, p50 and p90 marked. */
int an_failure_plot(const an_failure_report *r, const char *path, st_err *err);
/* Goodput against the checkpoint interval, one curve per MTBF scale (the
 * sweep), each one's optimum marked. */
int an_failure_plot_sweep(const an_failure_report *r, const char *path, st_err *err);

#ifdef __cplusplus
}
#endif
#endif /* AN_ANALYSIS_H */
