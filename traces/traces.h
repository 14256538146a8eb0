/* traces.h — importers: captured traces into workloads.
 *
 * Importers are a table of named readers looked up by format name
 * ("kineto", "chakra", "astra", "smpi"), each turning files into the common
 * workload (one program per rank).  Errors name the file and the event:
 *   trace 'rank3.json.gz': event 4031: 'dur' is negative
 * What is safe to skip is skipped and counted in tr_import_stats.
 */
#ifndef TR_TRACES_H
#define TR_TRACES_H

#include <stdio.h>

#include "platform.h"
#include "st_common.h"
#include "workload.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TR_MAX_DIMS 8

typedef struct tr_options {
  int step;             /* iteration to import (kineto ProfilerStep#N); -1 = last complete */
  int keep_launch_gaps; /* keep gaps where the CPU launched late (default 1) */
  const char *et_dir;   /* host execution traces to join (kineto), or NULL */
  /* astra: GPUs to expand a layer-wise workload over; 0 = from file.
   * chakra: ranks, those without a file copying rank (r mod files).
   * kineto: the world size when the trace does not record one (else it must
   * equal the recorded one); ranks without a file run a given rank's program
   * (tr_workload_resize changes the world size). */
  int num_gpus;
  /* chakra: the topology dimensions that a node's involved_dim refers to
   * (ASTRA-sim's npus_count, dimension 0 fastest: rank r's coordinate on
   * dimension d is (r / (dims[0] x ... x dims[d-1])) mod dims[d]); their
   * product must be the number of ranks.  num_dims 0 = not given: then
   * (gpus_per_node, ranks / gpus_per_node) when gpus_per_node > 0 (run sets
   * it from the cluster), else a trace that names dimensions is an error. */
  int dims[TR_MAX_DIMS];
  int num_dims;
  int gpus_per_node;
} tr_options;

typedef struct tr_import_stats {
  long events_read;
  long events_skipped;  /* safe to skip, counted */
  long compute_ops;
  long coll_ops;
  long p2p_ops;
  long nodes_by_type[8]; /* chakra: node counts by type */
  double measured_step_s; /* what the trace measured for the whole step, NAN if unknown */
  double *rank_measured_s; /* per rank, num_ranks entries, or NULL; owned */
  int num_ranks;
  /* Where each rank's measured step began, in seconds after the earliest
   * rank's start (the replay starts every rank at 0 and delays each by this
   * much), num_ranks entries or NULL; owned. */
  double *rank_start_s;
  long deps_dropped;    /* chakra: dependencies dropped (dangling, self, or cycle-forming) */
  long gaps;            /* kineto: delay ops made from idle gaps on GPU streams */
  double gap_s;         /* kineto: their total duration (all ranks) */
  /* What each rank's measured step spent (num_ranks entries of NAN where
   * unknown, or NULL; owned): the sum of its compute kernels' measured
   * durations, and of its communication kernels' (from the kernel's start,
   * waiting for peers included, to its end). */
  double *rank_compute_s;
  double *rank_comm_s;
  /* The device the trace was measured on, as the trace names it (Kineto
   * deviceProperties), or "" when the trace does not say. */
  /* Which given rank each rank runs the program of (num_ranks entries, r
   * itself where the trace gave rank r; NULL when all were given); owned.
   * The measured columns of a copied rank are NAN. */
  int32_t *rank_source;
  /* The trace records its world size and process groups (a Kineto trace's
   * distributedInfo), so the job can be resized (tr_workload_resize). */
  int groups_known;
  char source_device[64];
} tr_import_stats;

typedef struct tr_format {
  const char *name;
  const char *help;
  int (*import)(const char *path, const tr_options *opt, wl_workload **out,
                tr_import_stats *stats, st_err *err);
} tr_format;

void tr_options_init(tr_options *o);
/* "N0,N1,..." (1 to TR_MAX_DIMS positive sizes) into o->dims / o->num_dims;
 * ST_EUSAGE naming the text when it is not that, o unchanged. */
int tr_dims_parse(const char *text, tr_options *o, st_err *err);
const tr_format *tr_format_find(const char *name);
const tr_format *tr_formats(size_t *count);
/* "FORMAT:PATH" -> import. */
int tr_import(const char *format_colon_path, const tr_options *opt, wl_workload **out,
              tr_import_stats *stats, st_err *err);
void tr_import_stats_release(tr_import_stats *s);

/* ---- what-if: replaying measured compute on another device ---------------
 * A compute op with a measured duration (duration_s >= 0) and a class other
 * than OTHER (OTHER is host time and idle gaps: never scaled) is rescaled to
 * what the compute model predicts for the same work on the target device:
 * the op's work W is the amount (FLOPs for GEMM and ATTENTION, HBM bytes for
 * ELEMENTWISE, OPTIMIZER and COMM_KERNEL) for which plat_compute_time() on
 * the source device equals the measured duration, and the new duration is
 * plat_compute_time() of that work on the target device (same class and
 * dtype).  A measured duration shorter than the model's time for no work at
 * all (the launch overhead) is kept as it is.  Collectives are not touched:
 * the replay simulates them on the target fabric anyway.  docs/traces.md
 * states the rule and its limits. */
typedef struct tr_retarget_stats {
  long ops_scaled;                    /* compute ops rescaled */
  long ops_kept;                      /* measured ops left as they were (OTHER, too short) */
  double before_s[WL_CLASS_COUNT];    /* sum of measured durations per class, all ranks */
  double after_s[WL_CLASS_COUNT];     /* the same after rescaling */
} tr_retarget_stats;

/* Rescale every compute op of wl in place (all programs).  stats may be
 * NULL.  Fails (ST_EUSAGE), changing nothing, when the source device's model
 * never reaches an op's measured duration (a memory-bound class on a device
 * without HBM bandwidth), naming the device and the class. */
int tr_workload_retarget(wl_workload *wl, const plat_device *from, const plat_device *to,
                         tr_retarget_stats *stats, st_err *err);

/* ---- scale: one rank standing for all, and the job resized (tr_scale.c) ---
 * Resize a trace's job to `world` ranks by resizing its data-parallel groups:
 * the groups of kind DP (Kineto pg_desc naming dp), or, in a trace with no
 * DP groups, the world itself when it is the only group of more than one
 * rank.  Each DP group of size g (stride d) becomes one of g x world / W
 * (the trace's W ranks), every other group keeps its size and stride, laid
 * out again over the new world, and every new rank runs the program of the
 * rank with the same place in the old layout (the same TP/PP coordinates,
 * DP coordinate mod g), its compute as measured.  Collective sizes are whole
 * buffers (all-reduce in = out, all-gather the whole output, reduce-scatter
 * the whole input), so they stay and each rank's shard (bytes / g) follows
 * the new size; an all-to-all-v on a DP group keeps its total, re-laid over
 * the new members (member j takes old member j mod g's share x g / g').
 * Fails (ST_EUSAGE or ST_EINPUT, naming the trace and the group) when the
 * trace records no process groups (st->groups_known 0), when a group of
 * more than one rank does not say what it is, when the DP groups are not
 * evenly strided and alike, or when world is not a multiple of W / g.  On
 * success *wl is replaced and st's per-rank arrays follow the new ranks
 * (rank_source: the given rank each copies; measured columns NAN on the
 * copies; measured_step_s NAN when the size changed). */
typedef struct tr_resize_stats {
  int from_ranks, to_ranks; /* the trace's world, the new one */
  int dp_from, dp_to;       /* the DP group size before and after */
  long dp_colls;            /* collectives on DP groups (per program) */
  long splits_relaid;       /* all-to-all-v on DP groups re-laid */
} tr_resize_stats;
int tr_workload_resize(wl_workload **wl, tr_import_stats *st, const char *trace, int world,
                       tr_resize_stats *out, st_err *err);

/* The built-in device (platforms/data/devices.json) a trace's device name
 * stands for: the exact name (any case); else the device whose name the
 * trace's name contains ("Tesla V100-SXM2-32GB" -> V100-SXM2), the longest
 * such; else the device whose model (its name up to the first '-') is a
 * word of the trace's name, when only one device has that model
 * ("NVIDIA H100 80GB HBM3" -> H100-SXM).  ST_EINPUT naming the trace's
 * device when none or several fit. */
int tr_device_match(const char *trace_device, plat_device *out, st_err *err);

#ifdef __cplusplus
}
#endif
#endif
