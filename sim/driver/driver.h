/* driver.h — the pipeline as a library: the one place that runs a prediction
 * from its inputs (a workload file, a model and a layout, or a captured
 * trace; a cluster; options) to its results, and the one runner of isolated
 * processes that validation, search, tests and benchmarks share (SimGrid
 * allows one engine per process).
 *
 * The front end (sim/cli) only turns options into a drv_job and prints what
 * comes back; every modelling decision between the stages (rescaling a
 * trace's compute to another device, the memory-fit check, what the engine
 * records for a results file) is made here. */
#ifndef DRV_DRIVER_H
#define DRV_DRIVER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis.h"
#include "sweep.h"
#include "platform.h"
#include "sim.h"
#include "st_common.h"
#include "traces.h"
#include "workload.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- isolated processes (drv_pool.c) --------------------------------------- */

/* A task, run in a child process: it may append any bytes to reply (its
 * answer) and returns 0 or an ST_E* code with err set. */
typedef int (*drv_task_fn)(void *u, int index, st_buf *reply, st_err *err);

typedef enum drv_end {
  DRV_END_DONE = 0, /* the task returned: rc and msg say how */
  DRV_END_TIMEOUT,  /* it ran past the time limit and was stopped */
  DRV_END_CRASH,    /* it died of a signal (signal) */
  DRV_END_SILENT,   /* it exited without an answer */
} drv_end;

/* How a task ended, as the parent sees it. */
typedef struct drv_answer {
  drv_end end;
  int signal;                /* DRV_END_CRASH */
  int rc;                    /* DRV_END_DONE: the task's return code */
  char msg[ST_ERR_MSG_MAX];  /* its error message when rc != 0 */
  const char *data;          /* its reply (valid during the callback) */
  size_t len;
  double wall_s;             /* how long it ran */
} drv_answer;

/* Called in the parent as each task ends, in the order they end. */
typedef void (*drv_done_fn)(void *u, int index, const drv_answer *a);

/* Run tasks 0..n-1, each in its own child process, at most `jobs` at once,
 * each given at most timeout_s seconds (0: no limit): whichever child ends
 * first is read first and its slot goes to the next task.  Returns 0, or
 * ST_EIO / ST_ENOMEM when children cannot be started (the tasks' own
 * failures are in their answers). */
int drv_pool_run(int n, int jobs, int timeout_s, drv_task_fn task, drv_done_fn done, void *u,
                 st_err *err);

/* One task, waited for: its reply (malloc'ed, NUL-terminated; *data may be
 * NULL when it wrote none) in *data and *len.  Returns the task's code with
 * its message, or ST_ESIM when it crashed, ran out of time or said nothing
 * ("crashed (signal 11)", "no answer within 5 s", "ended without an answer"). */
int drv_isolated(drv_task_fn task, void *u, int timeout_s, char **data, size_t *len, st_err *err);

/* The reply's bytes read back in order: a cursor and its end. */
typedef struct drv_reader {
  const char *p, *end;
  int bad; /* a read ran past the end */
} drv_reader;
void drv_read(drv_reader *r, void *out, size_t n);

/* ---- one prediction (drv_run.c) -------------------------------------------- */

/* What to predict: exactly one workload source, a cluster and the engine's
 * options. */
typedef struct drv_job {
  const char *workload;       /* a workload file (.json, .json.gz), or */
  const char *model, *layout; /* a model (name or spec file) and a layout spec, or */
  const char *trace;          /* a captured trace, FORMAT:PATH */
  tr_options topt;            /* the importer's options (trace) */
  const char *from_device;    /* the device the trace was measured on, when it does not say */
  /* Resizing a trace's job (tr_workload_resize): world > 0 the new world size;
   * dp_factor > 0 the data-parallel size multiplied by it (world = the
   * trace's x dp_factor; both given must agree); tp_factor other than 0 or 1
   * is refused (tensor parallelism cannot be resized from a trace). */
  int world;
  double dp_factor;
  double tp_factor;
  const char *cluster;        /* NAME[:NODES], cluster spec .json or SimGrid .xml */
  sim_options opt;            /* opt.timeline: the timeline is kept in the result */
  int strict;                 /* a workload that does not fit in device memory is an error */
  int results_file;           /* the result goes to a results file: link loads and
                               * per-instance collective records are recorded */
  int seq_len;                /* model: the sequence length, 0 = the model's */
  const wl_model *model_spec; /* the model itself, instead of loading `model` (named by it) */
  /* Training to a token budget (docs/cost.md): with train_tokens other than
   * 0 the summary gets the steps, time, cost and energy (an_train_compute);
   * a bad budget, price or PUE is an error before anything is simulated. */
  double train_tokens;           /* tokens to train on; 0: no budget */
  double price_usd_per_gpu_hour; /* NaN: the device's list price (none: no cost) */
  double pue;                    /* facility / IT power, applied to the energy; >= 1 */
  int iterations;             /* > 1: the workload's programs repeated that many times
                               * (wl_workload_repeat), steps run back to back; 0 or 1: as
                               * loaded */
  FILE *log;                  /* warnings and notes ("simtrain: warning: ..."); NULL: none */
} drv_job;

/* The defaults: no source, sim_options_init, tr_options_init, no token
 * budget, the device's price, PUE 1. */
void drv_job_init(drv_job *j);
/* The model: spec when not NULL, else loaded by name (built-in or file); its
 * sequence length replaced by seq_len when > 0. */
int drv_model_load(const char *name, const wl_model *spec, int seq_len, wl_model *m, st_err *err);

/* A prediction and everything it was made from. */
/* The node group, among those pipeline stage s's GPUs are on (ranks s * R ..
 * (s+1) * R - 1, R = num_ranks / pp, the generator's order), with the
 * smallest device memory: the one the stage must fit (0 without groups). */
int drv_stage_group(const plat_cluster *cl, int num_ranks, int pp, int s);

/* balance=compute (drv_balance.c): replace the layout's even split by
 * stage_layers and dp_microbatches from the speeds of cl's node groups
 * (*l re-parsed; note says what was chosen, "" when balance is not set). */
int drv_balance(const wl_model *m, const plat_cluster *cl, wl_layout *l, char *note, size_t cap,
                st_err *err);

typedef struct drv_run {
  plat_cluster *cl;
  wl_workload *wl;
  an_measured meas; /* what the run measured, taken over from the engine's result */
  an_summary sum;
  an_replay replay; /* a trace that measured anything: measured against replayed */
  int have_replay;
  tr_import_stats st;       /* what the import measured (trace) */
  tr_resize_stats resize;   /* the trace's job resized (resize.to_ranks > 0) */
  int rescaled;             /* the trace's compute was moved to the cluster's device */
  char source_device[64];   /* the device the trace names, or from_device */
  char *workload_json;      /* where the workload came from (results file /config) */
  char *options_json;       /* the options as JSON (results file /config) */
  const char *name;         /* the workload's name for reports */
  wl_model model;           /* a generated workload's model and layout (have_layout) */
  wl_layout layout;
  int have_layout;
} drv_run;

/* Load, generate or import; check memory; simulate; summarise.  On failure
 * r holds what was made so far (drv_run_release frees it). */
int drv_run_job(const drv_job *j, drv_run *r, st_err *err);
/* The HDF5 results file of the run (atomically). */
int drv_run_write(const drv_run *r, const char *path, const char *command_line, st_err *err);
void drv_run_release(drv_run *r);

/* ---- several jobs on one fabric (drv_jobs.c, docs/jobs.md) ------------------ */

#define DRV_BACKGROUND_ROUNDS 16 /* all-to-alls of a background job by default */

typedef enum drv_fjob_kind {
  DRV_FJOB_WORKLOAD = 0, /* a workload file */
  DRV_FJOB_MODEL,        /* a model and a layout through the generators */
  DRV_FJOB_BACKGROUND,   /* a steady all-to-all (wl_background_alltoall) */
} drv_fjob_kind;

/* One job: what it runs, where, and its two step times. */
typedef struct drv_fabric_job {
  char name[64];
  int kind;                    /* drv_fjob_kind */
  char *workload;              /* DRV_FJOB_WORKLOAD */
  char *model, *layout;        /* DRV_FJOB_MODEL */
  int seq;                     /* DRV_FJOB_MODEL: 0 = the model's */
  double rate_Bps;             /* DRV_FJOB_BACKGROUND: offered per GPU */
  int rounds;                  /* DRV_FJOB_BACKGROUND */
  double window_s;             /* DRV_FJOB_BACKGROUND: the window it fills */
  char *gpus;                  /* the GPU list as given */
  int32_t *gpu;                /* resolved: rank i on GPU gpu[i] */
  int num_gpus;
  wl_workload *wl;
  double step_alone_s, step_together_s;
} drv_fabric_job;

/* Jobs on one cluster; drv_fabric_run fills the results. */
typedef struct drv_fabric {
  drv_fabric_job *jobs;
  int num_jobs;
  const char *cluster; /* NAME[:NODES] or a cluster spec */
  sim_options opt;
  int results_file;    /* collective records for a results file */
  int top_links;       /* shared links reported (0: all) */
  int procs;           /* runs alone at once */
  /* results */
  int num_ranks;       /* merged ranks: the highest GPU used + 1 */
  drv_run run;         /* the run together: cluster, merged workload, measured, summary */
  an_job_row *rows;    /* num_jobs */
  an_shared_link *shared;
  size_t num_shared;
} drv_fabric;

/* Ten shared links, one process at a time, sim_options_init. */
void drv_fabric_init(drv_fabric *f);
/* One job from "[NAME:]WHAT@gpus=LIST", WHAT a workload file,
 * model=M,layout=L[,seq=S] or background=alltoall:RATE[:ROUNDS]
 * (docs/jobs.md); default names job1, job2, ... */
int drv_fabric_add_spec(drv_fabric *f, const char *spec, st_err *err);
/* The jobs of a jobs file (a JSON array of {name, workload | model, layout,
 * seq | background, gpus}; files beside it). */
int drv_fabric_load(drv_fabric *f, const char *path, st_err *err);
/* Place, load, simulate each job alone (in processes) and all together
 * (here: once per process), find the shared links. */
int drv_fabric_run(drv_fabric *f, st_err *err);
/* The results file of the run together, with /jobs and /shared_links. */
int drv_fabric_write(const drv_fabric *f, const char *path, const char *command_line, st_err *err);
/* The table for people, or one JSON object (an_jobs_print_json). */
void drv_fabric_print(const drv_fabric *f, int json, FILE *out);
void drv_fabric_release(drv_fabric *f);

/* ---- a whole training run with failures (drv_train.c, docs/failures.md) ---- */

/* Defaults from the Llama 3 405B pre-training (Dubey et al. 2024, "The Llama 3
 * Herd of Models", sec. 3.3.4): 419 unexpected interruptions in 54 days on
 * 16,384 H100 in 2,048 nodes, 58.7% of them GPU issues.  The GPU share over
 * the GPU-hours, the rest over the node-hours. */
#define DRV_MTBF_GPU_H (16384.0 * 54 * 24 / (0.587 * 419))
#define DRV_MTBF_NODE_H (2048.0 * 54 * 24 / (0.413 * 419))
#define DRV_STORAGE_GBPS 2000.0 /* Tectonic's sustained 2 TB/s, same paper */
#define DRV_RESCHEDULE_S 600.0  /* an assumption, docs/failures.md */
#define DRV_REPAIR_H 24.0       /* an assumption, docs/failures.md */
#define DRV_TRAIN_TRIALS 1000
#define DRV_TRAIN_MAX_SCALES 16

typedef struct drv_train_opts {
  drv_job job;          /* the step, as `run` simulates it; job.train_tokens > 0 */
  double step_time_s;   /* > 0: this step, no simulation (job.model and job.layout) */
  double mtbf_gpu_h;    /* > 0 (infinity: no GPU failures) */
  double mtbf_node_h;   /* > 0 */
  double interval_s;    /* work between checkpoints; 0: the optimum */
  double storage_GBps;  /* checkpoint write and read bandwidth, > 0 */
  double ckpt_bytes;    /* 0: the model's weights and optimizer state (14 bytes a parameter) */
  double reschedule_s;  /* part of the restart before loading the checkpoint */
  double restart_s;     /* NaN: reschedule_s + ckpt_bytes / storage */
  int spare_nodes;      /* -1: unlimited */
  double repair_h;      /* the wait for a node when no spare is free */
  int trials;
  uint64_t seed;
  int sweep;            /* the expectation against the interval for the MTBF scales */
  double sweep_scales[DRV_TRAIN_MAX_SCALES];
  int num_sweep_scales;
  int sweep_points;
} drv_train_opts;
/* The defaults above, 1000 trials, seed 1, an automatic interval, unlimited
 * spares, the sweep at MTBF x 0.25, 0.5, 1, 2, 4 with 41 intervals. */
void drv_train_opts_init(drv_train_opts *o);
/* Simulate the step (or take o->step_time_s), then the whole run: the
 * analytic expectation, the Monte-Carlo and, with o->sweep, the sweep.  r
 * owns its arrays (an_failure_report_release, also after an error). */
int drv_train_run(const drv_train_opts *o, an_failure_report *r, st_err *err);

/* ---- the engine's result as analysis holds it (drv_measure.c) --------------- */

/* What r measured, moved into m (analysis's own rows; the algorithm and
 * protocol names).  The per-rank rows, collective records, link usage and
 * timeline are converted where they lie and taken over: r is left without
 * them (NULL, their counts 0, num_ranks kept), so the timeline's and the
 * collective records' millions of rows are never held twice.  The links are
 * copied, names too (they live in r's arena).  r still goes to
 * sim_result_destroy.  ST_ENOMEM when memory runs out (m left empty, r as
 * it was). */
int drv_measure_take(sim_result *r, an_measured *m, st_err *err);

/* ---- analytic estimate (drv_estimate.c) ------------------------------------ */

/* One pipeline stage's program run alone (no peers), in seconds. */
typedef struct drv_stage_estimate {
  double program_s; /* its end */
  double compute_s; /* compute ops */
  double comm_s;    /* collectives and sends, hidden or not */
  double work_s;    /* the end of its last forward or backward compute op: the work of
                       its micro-batches, with what the program leaves exposed */
  double stretch_s; /* compute stretched beside the rank's transfers (in compute_s) */
  double dp_stretch_work_s; /* the part of it on forward and backward compute that
                       data-parallel transfers cause: once a step, not per micro-batch */
  double dp_wait_work_s; /* forward and backward compute held back waiting on data-parallel
                       collectives (the first micro-batch's overlapped parameter gathers
                       under ZeRO-1/2: once a step; ZeRO-3's repeat every micro-batch) */
} drv_stage_estimate;

typedef struct drv_estimate {
  double step_s;         /* program_s + bubble_s + nic_shared_s */
  double program_s;      /* the slowest stage's program */
  double bubble_s;       /* the pipeline's waits: the stages run together less the slowest
                            alone, or (not coupled) the schedule's formula */
  int coupled;           /* the stages were run together (else the formula stood) */
  double formula_bubble_s; /* the schedule's formula, (sum_s t_s - max_s t_s) / v */
  double nic_shared_s;   /* the stages together: what sends across nodes lose sharing their
                            NICs with collectives across nodes (drv_estimate.c) */
  double exposed_comm_s; /* the slowest stage's program less its compute, and nic_shared_s */
  drv_stage_estimate slowest;
} drv_estimate;

/* The step of a workload generated with that many micro-batches per step
 * and virtual pipeline stages, without simulation (drv_estimate.c's header
 * gives the model).  Errors when the cluster has no routes of its own. */
int drv_estimate_workload(const wl_workload *wl, const plat_cluster *cl, int microbatches,
                          int vstages, drv_estimate *out, st_err *err);

/* ---- layout search (drv_search.c, drv_search_print.c) ---------------------- */

typedef struct drv_search_opts {
  const char *model;   /* built-in name, model spec or Hugging Face config.json */
  const char *cluster; /* NAME[:NODES] or a cluster spec */
  int gbs;             /* global batch, sequences */
  int seq;             /* sequence length; 0: the model's */
  const char *dtype;   /* the math's dtype (bf16, fp8, ...) */
  int gpus;            /* 0: the cluster's; else a whole number of its nodes */
  int top;             /* layouts simulated (0: estimates only) */
  int jobs;            /* simulations at once */
  const wl_model *model_spec; /* the model itself (model names it), or NULL to load model */
  const char *fixed;   /* layout keys every candidate gets (e.g. "flash=0"; one the search
                        * sets keeps the candidates with that value), or NULL */
  const char *published; /* a layout to place among the candidates (its estimate rank and
                            simulated step), or NULL */
  char selective[128];  /* what the candidates with recompute=selective recompute, as
                            recompute_modules (search --case: the case's own list), or
                            "": the attention core */
  double train_tokens; /* 0, or the time, cost and energy to train on that many tokens */
  double price_usd_per_gpu_hour; /* NaN: the device's list price */
  double pue;
  int shard, shards;   /* simulate only shard `shard` (1-based) of `shards` of the best K,
                          split by estimated simulation cost; 1 of 1: all */
  FILE *progress;      /* progress lines, or NULL */
} drv_search_opts;
void drv_search_opts_init(drv_search_opts *o);

/* The enumerated knobs of a layout. */
typedef struct drv_knobs {
  int tp, pp, dp, cp, ep, etp, vpp, sp, tp_overlap, mbs, zero, recompute, schedule;
  int a2a_overlap; /* MoE with ep > 1: Megatron-core's moe_a2a_overlap, 0 or 1 */
  int uneven;      /* 0 even; 1 embedding and loss counted as layers; 2 lighter edges */
  int edge_layers; /* uneven 2: layers of the first and of the last stage */
  int rc_layers;   /* recompute full: layers of each chunk recomputed (recompute_layers),
                      the fewest that fit; 0 every layer */
} drv_knobs;

typedef struct drv_candidate {
  drv_knobs k;
  char layout[1024];        /* canonical spec (wl_layout.spec) */
  int microbatches;
  double peak_memory_bytes; /* wl_memory_estimate */
  int fits, dominated;
  size_t order;             /* enumeration order (ties) */
  int estimate_rank;        /* 1-based among the estimated, 0: not estimated */
  double estimate_s, est_bubble_s, est_exposed_comm_s;
  int simulated, failed;
  char failure[200];
  double step_time_s, tokens_per_s_per_gpu, mfu, compute_s, exposed_comm_s, bubble_s;
  double time_to_train_s, cost_usd, energy_MWh; /* with a token budget (NaN otherwise) */
  an_summary sum;            /* the simulation's whole summary (simulated, not failed) */
} drv_candidate;

#define DRV_SEARCH_MAX_REASONS 32
typedef struct drv_search_reason {
  char why[160];
  long count;
} drv_search_reason;

typedef struct drv_search {
  char cluster[256];        /* as searched (NAME:NODES with --gpus) */
  char device[64];
  double hbm_bytes;
  int num_gpus, gpus_per_node, seq; /* gpus_per_node: the smallest node's */
  int num_nodes;
  long enumerated, fitting;
  double min_peak_bytes;    /* smallest peak among valid layouts that do not fit */
  drv_candidate *cands;     /* the fitting layouts: simulated first by step, then by estimate */
  size_t num, cap;
  size_t estimated, simulated;
  drv_search_reason reasons[DRV_SEARCH_MAX_REASONS];
  int num_reasons;
  drv_candidate published; /* the published layout (opts.published), when have_published */
  int have_published;
} drv_search;

/* The search as a sweep file's rows (kind "search"): every estimated
 * candidate, point = estimate rank - 1; those simulated with status "ok" (or
 * their failure), the others "estimated".  A shard holds the candidates it
 * simulated, and shard 1 also the estimated ones, so that merging the shards
 * gives the unsharded file.  The digest covers the options and the files
 * they name (drv_search_file.c). */
int drv_search_sweep(const drv_search_opts *o, const drv_search *s, an_sweep *out, st_err *err);

/* Enumerate, prune, estimate, simulate the best (drv_search.c's header). */
int drv_search_run(const drv_search_opts *o, drv_search *s, st_err *err);
void drv_search_release(drv_search *s);
/* The table for people (top rows), or one JSON object. */
void drv_search_print(const drv_search_opts *o, const drv_search *s, int rows, FILE *out);
void drv_search_print_json(const drv_search_opts *o, const drv_search *s, FILE *out);

/* ---- sweeps: a grid of predictions (drv_sweep.c) ---------------------------- */

#define DRV_SWEEP_MAX_POINTS 1000000

typedef struct drv_sweep_model {
  char *name;     /* as the spec gives it */
  char *path;     /* where it is loaded from (a file: beside the spec) */
  char **layouts; /* layout specs, or "search" */
  int num_layouts;
} drv_sweep_model;

typedef struct drv_sweep_cluster {
  char *name; /* as the spec gives it */
  char *path; /* where it is loaded from */
  int gpus_per_node;
} drv_sweep_cluster;

/* A sweep spec (docs/sweep.md), read and checked. */
typedef struct drv_sweep_spec {
  char *path, *name;
  drv_sweep_model *models;
  int num_models;
  drv_sweep_cluster *clusters;
  int num_clusters;
  int *nodes, num_nodes; /* 0 of them: the clusters' own */
  int by_gpus;           /* nodes[] are GPU counts ("gpus"), whole nodes of every cluster */
  int *gbs, num_gbs;     /* 0: the layouts' */
  int *seq, num_seq;     /* 0: the models' */
  char **dtypes;
  int num_dtypes;        /* 0: the layouts' */
  double train_tokens;   /* 0: no budget */
  double price_usd_per_gpu_hour; /* NaN: the device's */
  double pue;
  int search_top;        /* layouts a search point simulates (default 4) */
  char *search_fixed;    /* layout keys every searched candidate gets, or NULL */
  int num_points;
  char *spec_json;       /* the expanded spec (what the digest covers, with the files) */
  char digest[17];
} drv_sweep_spec;

/* FNV-1a 64 (an identity for sweep and search files, not a security
 * measure): h starts at DRV_FNV_SEED; drv_fnv_file adds a file's bytes when
 * path (or path without its ":NODES") is a file, and nothing otherwise. */
#define DRV_FNV_SEED 0xcbf29ce484222325ull
void drv_fnv(uint64_t *h, const void *p, size_t n);
int drv_fnv_file(uint64_t *h, const char *path, st_err *err);
/* The estimated simulation cost (s) of a layout of model m on cluster cl
 * (drv_sweep.c's header). */
double drv_layout_cost(const wl_model *m, const char *spec, const plat_cluster *cl);

/* Read and check a spec; errors name the file and the key:
 * "sweep 's.json': layouts[2]: 'tp=8,gbs=512' sets gbs while the key 'gbs'
 * gives the batches". */
int drv_sweep_load(const char *path, drv_sweep_spec *s, st_err *err);
void drv_sweep_release(drv_sweep_spec *s);

/* One point of the grid. */
typedef struct drv_sweep_point_t {
  int index, model, cluster;
  const char *request;   /* the spec's layout, or "search" */
  int search;
  int nodes, gbs, seq;   /* 0: not from the axes */
  const char *dtype;     /* NULL: not from the axes */
  char cluster_arg[1100]; /* PATH[:NODES], for plat_cluster_load */
  char layout[1100];     /* the layout run (not for a search) */
} drv_sweep_point_t;
/* Point index (0..num_points-1) of the grid; ST_EUSAGE outside. */
int drv_sweep_point(const drv_sweep_spec *s, int index, drv_sweep_point_t *p);
/* The point's simulation cost in seconds, estimated without simulating
 * (drv_sweep.c's header); *num_gpus (may be NULL) its cluster's GPUs, 0 when
 * the cluster does not load. */
double drv_sweep_cost(const drv_sweep_spec *s, const drv_sweep_point_t *p, int *num_gpus);
/* Every point's cost and shard (1..shards; longest processing time first),
 * load[k] the cost of shard k+1, gpus[i] (may be NULL) point i's GPUs.
 * Returns 0 or ST_ENOMEM. */
int drv_sweep_plan(const drv_sweep_spec *s, int shards, double *cost, int *shard_of,
                   double *load, int *gpus);
/* The rule itself: points (costs cost[0..n-1]) costliest first (ties: the
 * lower point) to the shard with the least cost so far (ties: the lower
 * shard).  ord is scratch of n ints. */
void drv_sweep_assign(const double *cost, int n, int shards, int *ord, int *shard_of,
                      double *load);

typedef struct drv_sweep_opts {
  int shard, shards;   /* this shard (1-based) of how many; 1 of 1: the whole sweep */
  int jobs;            /* points at once */
  int point_timeout_s; /* a point running longer is stopped and recorded; 0: no limit */
  FILE *progress;      /* a line per point as it ends, or NULL */
} drv_sweep_opts;
void drv_sweep_opts_init(drv_sweep_opts *o);

/* Run this shard's points, each in its own process, into out (its rows by
 * point; out->shard and shards as asked).  A point that fails, crashes or
 * runs out of time is recorded in its row and the others still run;
 * *failed counts them.  Returns 0, or an error when nothing could be run. */
/* The numbers of a simulated step into a sweep row (num_gpus and the
 * step's figures; the inputs stay). */
void drv_sweep_row_summary(an_sweep_row *row, const an_summary *u);
int drv_sweep_run(const drv_sweep_spec *s, const drv_sweep_opts *o, an_sweep *out, int *failed,
                  st_err *err);

/* ---- validation against published runs (drv_cases.c, drv_validate.c) ------------ */
/* A case: one published training run (bench/validation/<name>.json, format
 * in bench/validation/README.md): a model, a layout, a cluster and what was
 * measured, as per-GPU throughput in tokens/s.  Strings are owned by the case
 * list (drv_cases_free). */
typedef struct drv_case {
  char *path;          /* the file */
  char *name;
  char *model_json;    /* the "model" object, as JSON text (wl_model_parse) */
  char *layout;        /* layout spec (wl_layout_parse) */
  char *cluster;       /* NAME[:NODES], spec or XML (plat_cluster_load); a relative
                          file path is joined to the case file's folder */
  int num_gpus;
  double measured;     /* tokens/s per GPU */
  double measured_step_s; /* derived step time, NaN when the file has none */
  double params_b;     /* the source's stated model size in billions, NaN when none */
  double measured_mem_gib; /* the source's peak memory per GPU in GiB, NaN when none */
  int mem_reserved;        /* that reading: 1 reserved by PyTorch's caching allocator
                              (max_memory_reserved), 0 allocated (max_memory_allocated) */
} drv_case;

/* Every *.json file of dir, in name order.  Errors name the file and key:
 * "case 'dir/x.json': 'measured.tokens_per_s_per_gpu' is missing".  An empty
 * folder is an error too. */
int drv_cases_load(const char *dir, drv_case **out, int *n, st_err *err);
/* One case file (drv_case_release frees it). */
int drv_case_load(const char *path, drv_case *c, st_err *err);
void drv_case_release(drv_case *c);
void drv_cases_free(drv_case *cases, int n);

/* Keeps the cases whose name matches the shell pattern (fnmatch: "*", "?",
 * "[...]"), in order, and frees the others; *n becomes their count.  None
 * matching is an error that names the pattern (the list is then unchanged). */
int drv_cases_select(drv_case *cases, int *n, const char *pattern, st_err *err);

/* Checks a case's model against the size its source states: params (the
 * model's parameter count) must lie within one unit of the last digit of
 * params_b (sizes are labels, rounded or cut: "1.7" allows 1.6e9 to 1.8e9,
 * "177" 176e9 to 178e9).  No stated size: nothing to check.  The error names
 * the case file and both sizes. */
int drv_case_check_size(const drv_case *c, double params, st_err *err);

typedef struct drv_prediction {
  double step_time_s;
  double tokens_per_s_per_gpu;
  double peak_memory_bytes; /* the memory model's peak per GPU (wl_memory_estimate) */
} drv_prediction;

/* Predicts one case.  Runs in a forked child (it may call sim_run, which
 * allows one engine per process); overrides (may be NULL) are compute
 * parameter sets to install first (plat_compute_params_override). */
typedef int (*drv_predict_fn)(const drv_case *c, const plat_compute_params *overrides,
                             int num_overrides, drv_prediction *out, st_err *err);
/* The project's predictor: generators (model + layout -> workload), the
 * cluster, sim_run, in this process. */
int drv_predict_generated(const drv_case *c, const plat_compute_params *overrides,
                         int num_overrides, drv_prediction *out, st_err *err);

typedef struct drv_case_result {
  double measured, predicted; /* tokens/s per GPU */
  double error;               /* predicted / measured - 1 */
  double measured_step_s, predicted_step_s;
  double measured_mem_gib, predicted_mem_gib; /* peak memory per GPU; NaN: no reading */
  double mem_error;                           /* predicted / measured - 1 */
  int rc;                     /* 0, or the ST_E* code of a failed prediction */
  char msg[256];              /* why it failed: "case 'x': ..." */
} drv_case_result;

/* Run every case, each in its own child process, at most jobs at once, each
 * given at most timeout_s seconds (0: no limit).  res has n entries; a case
 * that fails has res[i].rc and res[i].msg set and the others still run.
 * Returns 0 when every case was predicted, else the first failure's code
 * with its message in err. */
int drv_validate_run(const drv_case *cases, int n, drv_predict_fn fn,
                    const plat_compute_params *overrides, int num_overrides, int jobs,
                    int timeout_s, drv_case_result *res, st_err *err);
/* The same with overrides per case: case i installs
 * overrides[i * num_overrides .. (i + 1) * num_overrides - 1].  One queue for
 * differently parametrised runs (the grid of --fit): a slot never waits for a
 * pass to end. */
int drv_validate_run_each(const drv_case *cases, int n, drv_predict_fn fn,
                         const plat_compute_params *overrides, int num_overrides, int jobs,
                         int timeout_s, drv_case_result *res, st_err *err);
/* Where drv_validate_run reports each case as it ends ("[k/n] name: error in
 * T s", wall time), or NULL (the default) for nothing. */
void drv_validate_progress(FILE *f);
/* Median and largest |error| over the predicted results (rc == 0); returns
 * their count (NaN statistics when 0). */
int drv_validate_stats(const drv_case_result *res, int n, double *median_abs, double *max_abs);
/* Text table (people) or one JSON object {"cases":[{"name","measured",
 * "predicted","error"}...],"count","median_abs_error","max_abs_error"}; a
 * failed case has "predicted" and "error" null and a "failure" message, and
 * count is the number of cases predicted.  Cases with a published peak
 * memory add a second table (JSON: a case's "memory":{"measured","reading",
 * "predicted","error"} and "memory":{"count","median_abs_error",
 * "max_abs_error"} beside the count). */
void drv_validate_print(const drv_case *cases, const drv_case_result *res, int n, FILE *out);
void drv_validate_print_json(const drv_case *cases, const drv_case_result *res, int n, FILE *out);

/* Leave-one-out calibration of one compute parameter (gemm_eff) per device.
 * pred[c * ngrid + j] is case c predicted with gemm_eff = grid[j] (ascending);
 * between grid points the step time is interpolated linearly in 1 / gemm_eff.
 * group[c] is the case's device group.  For each case, gemm_eff is fitted on
 * the other cases of its group (least squares of log(predicted / measured),
 * searched in steps of 0.001 within the grid) and the case predicted with it:
 * loo[c] (its result) and loo_eff[c].  fit_eff[g] is the fit on the whole
 * group g (groups numbered 0..ngroups-1).  A case that failed at some grid
 * point is left out of every fit and keeps that failure in loo[c]. */
void drv_validate_loo(const drv_case_result *pred, int ncases, const double *grid, int ngrid,
                     const int *group, int ngroups, double *fit_eff, double *loo_eff,
                     drv_case_result *loo);
/* The leave-one-out calibration over the grid of GEMM efficiencies
 * (docs/calibration.md), every case at every grid point in one queue, the
 * cases with the most GPUs first; prints the fit per device and the
 * leave-one-out errors (a table, or one JSON object with json).  Returns 0,
 * or the first failed case's code with its message. */
int drv_validate_fit(const drv_case *cases, int n, int jobs, int timeout_s, int json, FILE *out,
                     st_err *err);

/* The options that search a validation case's cluster, GPUs, batch, sequence
 * and dtypes, with its published layout placed among the candidates; c and m
 * (the case and its model) must outlive the search. */
int drv_search_case_opts(const char *path, drv_search_opts *o, drv_case *c, wl_model *m,
                         char *fixed, size_t n, st_err *err);

#ifdef __cplusplus
}
#endif
#endif /* DRV_DRIVER_H */
