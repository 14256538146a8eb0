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

#include "st_common.h"
#include "workload.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tr_options {
  int step;             /* iteration to import (kineto ProfilerStep#N); -1 = last complete */
  int keep_launch_gaps; /* keep gaps where the CPU launched late (default 1) */
  const char *et_dir;   /* host execution traces to join (kineto), or NULL */
  int num_gpus;         /* astra: GPUs to expand a layer-wise workload over; 0 = from file */
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
} tr_import_stats;

typedef struct tr_format {
  const char *name;
  const char *help;
  int (*import)(const char *path, const tr_options *opt, wl_workload **out,
                tr_import_stats *stats, st_err *err);
} tr_format;

void tr_options_init(tr_options *o);
const tr_format *tr_format_find(const char *name);
const tr_format *tr_formats(size_t *count);
/* "FORMAT:PATH" -> import. */
int tr_import(const char *format_colon_path, const tr_options *opt, wl_workload **out,
              tr_import_stats *stats, st_err *err);
void tr_import_stats_release(tr_import_stats *s);

#ifdef __cplusplus
}
#endif
#endif
