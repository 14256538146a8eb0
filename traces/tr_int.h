/* tr_int.h — helpers shared by the importers (internal to traces/).
 *
 * Each importer lives in tr_<format>.c and exports one tr_<format>_import()
 * listed in traces.c's table.  Errors all start with "trace '<file>': " so a
 * person sees which file was bad before what was wrong in it.
 */
#ifndef TR_INT_H
#define TR_INT_H

#include <stddef.h>

#include "traces.h"

int tr__kineto_import(const char *path, const tr_options *opt, wl_workload **out,
                      tr_import_stats *stats, st_err *err);
int tr__chakra_import(const char *path, const tr_options *opt, wl_workload **out,
                      tr_import_stats *stats, st_err *err);
int tr__astra_import(const char *path, const tr_options *opt, wl_workload **out,
                     tr_import_stats *stats, st_err *err);
int tr__smpi_import(const char *path, const tr_options *opt, wl_workload **out,
                    tr_import_stats *stats, st_err *err);

/* Read a whole (possibly gzip) file; on error the message reads
 * "trace '<path>': ..." . */
int tr__read_file(const char *path, char **data, size_t *len, st_err *err);

/* Set stats->rank_measured_s, rank_start_s, rank_compute_s and rank_comm_s to
 * n entries of NAN, and rank_source to 0..n-1 (owned by stats). */
int tr__stats_alloc_ranks(tr_import_stats *stats, int n, st_err *err);

/* A workload of n ranks with one role, "world", played by one communicator
 * of all ranks (the importers whose traces name no process groups).  NULL
 * and err set when out of memory. */
wl_workload *tr__world_workload(int n, st_err *err);

/* The common end of an import: meta.source = "FORMAT:PATH", then the
 * workload is checked; a failure names the trace. */
int tr__finish(wl_workload *wl, const char *format, const char *path, st_err *err);

/* Give every rank of wl without a program (rank_program -1) the program of a
 * given rank and its communicators (tr_scale.c: the rule); st->rank_source
 * and rank_start_s follow (st may be NULL).  ST_EINPUT naming the trace,
 * the rank and the group when a group cannot be placed. */
int tr__spmd_fill(wl_workload *wl, tr_import_stats *st, const char *trace, st_err *err);

#endif
