/* sweep.h — the sweep file: one row per point of a grid of predictions
 * (models x layouts x clusters x node counts x batches x sequence lengths x
 * dtypes), its shards and their merge, the table and JSON for people and
 * programs, and the sweep's pictures (docs/sweep.md).
 *
 * A sweep file (HDF5, docs/results-format.md "Sweep files") holds
 *   /            attributes format = "simtrain-sweep", kind ("sweep" or
 *                "search"), simtrain_version,
 *                name, spec (the expanded spec as JSON), digest (16 hex
 *                digits: the spec and the files it names), points (in the
 *                whole sweep), shard and shards (1-based; 1 of 1 when whole)
 *   /points      the rows of this file's points, by point number
 * Nothing in it depends on when or where it was written: the same sweep
 * gives the same bytes, whether run whole or merged from shards. */
#ifndef AN_SWEEP_H
#define AN_SWEEP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "st_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One point: its inputs, how it went, and the prediction (NaN where it does
 * not apply: a failed point, no token budget, no price). */
typedef struct an_sweep_row {
  int32_t point;      /* 0-based number in the whole sweep */
  char model[128];    /* as the spec names it */
  char request[256];  /* the spec's layout, or "search" */
  char cluster[256];  /* as the spec names it */
  int32_t nodes;      /* from the spec's node counts; 0: the cluster's own */
  int32_t num_gpus;
  int32_t gbs, seq;   /* 0: the layout's / the model's */
  char dtype[16];     /* "" when the spec gives no dtypes */
  char status[16];    /* "ok", "failed", "timeout", "crashed" */
  char error[512];    /* why, when not ok */
  char layout[512];   /* the layout run (canonical; a search: the best found) */
  double step_time_s, tokens_per_step, tokens_per_s, tokens_per_s_per_gpu, model_tflops_per_gpu,
      mfu, compute_s, exposed_comm_s, bubble_s, peak_memory_bytes;
  double train_steps, time_to_train_s, cost_usd, energy_MWh;
  double cost_estimate_s; /* the planner's estimate of the point's simulation time */
  double estimate_step_s; /* a search's analytic estimate of the step (NaN in a sweep) */
  int32_t estimate_rank;  /* its 1-based rank by that estimate (0 in a sweep) */
} an_sweep_row;

/* A row with nothing in it: zeros, every number NaN ("does not apply"). */
void an_sweep_row_clear(an_sweep_row *r);

typedef struct an_sweep {
  char *path;      /* read from (an_sweep_read), or NULL */
  char kind[16];   /* "sweep", or "search": a search's candidates (status "ok" for the
                      simulated, "estimated" for the others), point = estimate rank - 1 */
  char *version;   /* simtrain version that wrote it */
  char *name;
  char *spec_json; /* the expanded spec */
  char digest[17];
  int32_t points;  /* in the whole sweep */
  int32_t shard, shards;
  an_sweep_row *rows; /* by point */
  size_t num_rows;
} an_sweep;

/* Write s (rows sorted by point first) atomically; errors name the file. */
int an_sweep_write(const char *path, const an_sweep *s, st_err *err);
/* Read a sweep file; "sweep 'x.h5': ..." errors name what is wrong. */
int an_sweep_read(const char *path, an_sweep **out, st_err *err);
void an_sweep_destroy(an_sweep *s);
/* 1 when path is an HDF5 file with format "simtrain-sweep". */
int an_sweep_is_file(const char *path);

/* Merge shards into one whole sweep (out->points rows): every shard has the
 * same digest, points and shards; each shard number appears once; every
 * point is in exactly one file.  Errors name the culprit: "shard 'b.h5' is
 * of another sweep (digest ... , 'a.h5' has ...)", "'c.h5' and 'd.h5' are
 * both shard 2 of 4", "shard 3 of 4 is missing (points 2, 7, ...)". */
int an_sweep_merge(an_sweep *const *shards, size_t n, an_sweep *out, st_err *err);

/* Keep the rows whose column equals the value of where, "COL=VALUE" (text
 * as written, a number as a number) and name s after it ("name, COL=VALUE");
 * an unknown column or a bad value is ST_EUSAGE, no row left ST_EINPUT. */
int an_sweep_keep(an_sweep *s, const char *where, st_err *err);

/* ---- columns: by name, for sorting, printing and plotting ---- */
typedef enum an_sweep_kind { AN_SW_INT, AN_SW_NUM, AN_SW_STR } an_sweep_kind;
typedef struct an_sweep_col {
  const char *name;
  an_sweep_kind kind;
  size_t off, size;
} an_sweep_col;
/* The columns, in file order; *n gets their count. */
const an_sweep_col *an_sweep_columns(size_t *n);
/* The column named so, or NULL. */
const an_sweep_col *an_sweep_column(const char *name);
/* A numeric column's value (NaN for a string column). */
double an_sweep_value(const an_sweep_row *r, const an_sweep_col *c);

/* The table for people: the rows sorted by column `by` (NULL: by point),
 * descending with desc; a failed point shows its error.  Unknown column:
 * an error listing the known ones. */
int an_sweep_print(const an_sweep *s, const char *by, int desc, FILE *out, st_err *err);
/* One JSON object: the attributes and "rows": [{column: value...}] (NaN as
 * null), in the same order as an_sweep_print. */
int an_sweep_print_json(const an_sweep *s, const char *by, int desc, FILE *out, st_err *err);

/* ---- pictures (SVG, atomically; docs/sweep.md, "Pictures of a sweep") ----
 * Only points whose status is "ok" are drawn; every marker and cell has a
 * <title> tooltip with its exact value and the point it comes from.  The
 * same sweep gives the same bytes, whatever the order of its rows.  No ok
 * point: ST_EINPUT "sweep 'x.h5': no point succeeded: nothing to plot"
 * (the sweep is named by its path, else its name). */
/* Two panels against GPUs (num_gpus, log2 axis): throughput per GPU
 * (tokens_per_s_per_gpu), and time to train in days (time_to_train_s) when
 * any ok point has one, else step time in seconds.  One line with point
 * markers per series: the distinct values of column `series` (NULL:
 * "cluster"; a string or numeric column, in strcmp or numeric order), each
 * a colour of a fixed palette and a legend entry.  Of the rows of one
 * series at one GPU count (layouts, batches...) the one with the best
 * throughput is drawn, in both panels.  Unknown column: ST_EUSAGE listing
 * the columns. */
int an_sweep_plot_scaling(const an_sweep *s, const char *series, const char *path, st_err *err);
/* A heat map of column `value` (NULL: tokens_per_s_per_gpu) over two knobs
 * x and y.  A knob is a key of the layout run (tp, pp, dp, cp, ep, vpp, mbs,
 * gbs, zero, recompute...: any key of the "k=v,..." string), or else a
 * column (num_gpus, nodes, seq, point, cluster...); its distinct values,
 * in numeric order when all are numbers, else in strcmp order, are the
 * columns and rows of the grid (a row with neither is left out).  A cell
 * shows the best value of its ok points (the smallest for step_time_s,
 * time_to_train_s, cost_usd, energy_MWh, exposed_comm_s, bubble_s and
 * peak_memory_bytes, else the largest; ties: the lower point), darker for
 * better; a cell without one is grey with "-".  A knob that is neither a
 * column nor a key of an ok point's layout, or a value that is not a
 * numeric column: ST_EUSAGE naming it with what there is. */
int an_sweep_plot_heatmap(const an_sweep *s, const char *x, const char *y, const char *value,
                          const char *path, st_err *err);

/* A search file's candidates: step time (simulated, else the estimate)
 * against peak memory per GPU, with a line at the device's memory (the
 * spec's "device_memory_bytes", when it has one). */
int an_sweep_plot_memory(const an_sweep *s, const char *path, st_err *err);

#ifdef __cplusplus
}
#endif
#endif /* AN_SWEEP_H */
