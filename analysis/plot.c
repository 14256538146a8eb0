/* plot.c — SVG pictures of a results file, drawn with the writer in svg.c:
 *   timeline   the chosen ranks' streams over the run, one lane per
 *              (rank, stream), ops coloured by kind;
 *   breakdown  a stacked bar per rank: compute, exposed communication,
 *              bubble and idle, per step (they add up to the step time);
 *   links      a heat map: one row per link, columns mean utilisation
 *              (bytes / bandwidth / run time), busy share of the run and
 *              peak utilisation;
 *   compare    a stacked bar per run (the summary's means over ranks per
 *              step), with a mark at each run's step time.
 * Millions of timeline rows stay a picture of bounded size: ops of one kind
 * on one lane closer than half a pixel are drawn as one rectangle.  Markers
 * (zero-length iteration/phase/layer marks) are not drawn: they would only
 * break those runs into slivers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_int.h"
#include "analysis.h"

#define WIDTH 1200.0
#define LEFT 170.0
#define RIGHT 30.0
#define TOP 50.0
#define DEFAULT_TIMELINE_RANKS 8
#define MAX_LINK_ROWS 200

static const struct {
  const char *kind, *color;
} kind_colors[] = {
    {"compute", "#4e79a7"}, {"coll", "#f28e2b"}, {"send", "#59a14f"},
    {"recv", "#8cd17d"},
};
#define NUM_KINDS (sizeof kind_colors / sizeof kind_colors[0])

static int kind_index(const char *k)
{
  for (size_t i = 0; i < NUM_KINDS; i++)
    if (!strcmp(k, kind_colors[i].kind))
      return (int)i;
  return 0;
}

static int drawn(const an_timeline_row *t) { return strcmp(t->kind, "marker") != 0; }

/* A unit for a time axis whose largest value is max_s. */
static void time_unit(double max_s, const char **name, double *scale)
{
  if (max_s < 1e-3) {
    *name = "us";
    *scale = 1e6;
  } else if (max_s < 10) {
    *name = "ms";
    *scale = 1e3;
  } else {
    *name = "s";
    *scale = 1;
  }
}

/* Horizontal axis at y from x0 (value 0) to x0 + w (value max), in unit. */
static void x_axis(an__svg *s, double x0, double w, double y, double max, const char *label)
{
  an__svg_line(s, x0, y, x0 + w, y, "black", 1);
  double step = an__nice_step(max, 8);
  for (int i = 0;; i++) {
    double v = i * step;
    if (v > max * (1 + 1e-9))
      break;
    double x = x0 + w * v / max;
    an__svg_line(s, x, y, x, y + 5, "black", 1);
    an__svg_text(s, x, y + 18, "middle", 11, 0, "%g", v);
  }
  an__svg_text(s, x0 + w / 2, y + 36, "middle", 12, 0, "%s", label);
}

/* Vertical axis at x from y0 (value 0, bottom) up h (value max). */
static void y_axis(an__svg *s, double x, double y0, double h, double max, const char *label)
{
  an__svg_line(s, x, y0, x, y0 - h, "black", 1);
  double step = an__nice_step(max, 6);
  for (int i = 0;; i++) {
    double v = i * step;
    if (v > max * (1 + 1e-9))
      break;
    double y = y0 - h * v / max;
    an__svg_line(s, x - 5, y, x, y, "black", 1);
    an__svg_line(s, x, y, WIDTH - RIGHT, y, "#dddddd", 0.5);
    an__svg_text(s, x - 8, y + 4, "end", 11, 0, "%g", v);
  }
  an__svg_text(s, x - 50, y0 - h / 2, "middle", 12, -90, "%s", label);
}

/* The top of a vertical axis: max rounded up to the axis's next tick. */
static double nice_top(double max)
{
  if (!(max > 0) || !isfinite(max))
    return 1;
  double step = an__nice_step(max, 6);
  return ceil(max / step * (1 - 1e-12)) * step;
}

static void legend(an__svg *s, double x, double y, const char *const *names,
                   const char *const *colors, size_t n)
{
  an__svg_group(s, "legend");
  for (size_t i = 0; i < n; i++) {
    an__svg_rect(s, x, y - 10, 12, 12, colors[i], NULL);
    an__svg_text(s, x + 16, y, "start", 12, 0, "%s", names[i]);
    x += 30 + 7.0 * strlen(names[i]);
  }
  an__svg_group_end(s);
}

static int no_timeline(const an_results *r, st_err *err)
{
  return st_err_set(err, ST_EINPUT, "results '%s': no '/timeline' to plot (run with --timeline)",
                    r->path);
}

/* ---- timeline ----------------------------------------------------------------- */
typedef struct lane {
  int32_t rank, stream;
  size_t first_row; /* for the stream's name */
} lane;

typedef struct lane_row {
  size_t lane, row;
  double start_s;
} lane_row;

static int cmp_lane(const void *a, const void *b)
{
  const lane *x = a, *y = b;
  if (x->rank != y->rank)
    return x->rank < y->rank ? -1 : 1;
  return (x->stream > y->stream) - (x->stream < y->stream);
}

static int cmp_lane_row(const void *a, const void *b)
{
  const lane_row *x = a, *y = b;
  if (x->lane != y->lane)
    return x->lane < y->lane ? -1 : 1;
  if (x->start_s != y->start_s)
    return x->start_s < y->start_s ? -1 : 1;
  return (x->row > y->row) - (x->row < y->row);
}

int an_plot_timeline(const an_results *r, const int32_t *ranks, size_t num_ranks,
                     const char *path, st_err *err)
{
  if (r->num_timeline == 0)
    return no_timeline(r, err);
  /* chosen[rank]: default the first ranks */
  int32_t top_rank = 0;
  for (size_t i = 0; i < r->num_timeline; i++)
    if (r->timeline[i].rank > top_rank)
      top_rank = r->timeline[i].rank;
  char *chosen = calloc((size_t)top_rank + 1, 1);
  lane *lanes = malloc(r->num_timeline * sizeof *lanes);
  lane_row *rows = malloc(r->num_timeline * sizeof *rows);
  if (!chosen || !lanes || !rows) {
    free(chosen);
    free(lanes);
    free(rows);
    return st_err_set(err, ST_ENOMEM, "plot '%s': out of memory", path);
  }
  if (ranks) {
    for (size_t j = 0; j < num_ranks; j++)
      if (ranks[j] >= 0 && ranks[j] <= top_rank)
        chosen[ranks[j]] = 1;
  } else {
    /* spread over the run (ranks i x N / k), so pipeline stages and
     * data-parallel replicas far apart in rank order both show */
    size_t k = r->num_ranks < DEFAULT_TIMELINE_RANKS ? r->num_ranks : DEFAULT_TIMELINE_RANKS;
    num_ranks = 0;
    for (size_t j = 0; j < k; j++) {
      int32_t rk = r->ranks[j * r->num_ranks / k].rank;
      if (rk >= 0 && rk <= top_rank && !chosen[rk]) {
        chosen[rk] = 1;
        num_ranks++;
      }
    }
  }
  /* lanes: (rank, stream) of the chosen ranks, by rank then stream */
  size_t nl = 0, nr = 0;
  for (size_t i = 0; i < r->num_timeline; i++) {
    const an_timeline_row *t = &r->timeline[i];
    if (t->rank >= 0 && chosen[t->rank] && drawn(t))
      lanes[nl++] = (lane){t->rank, t->stream, i};
  }
  qsort(lanes, nl, sizeof *lanes, cmp_lane);
  size_t u = 0;
  for (size_t i = 0; i < nl; i++)
    if (u == 0 || cmp_lane(&lanes[u - 1], &lanes[i]) != 0)
      lanes[u++] = lanes[i];
    else if (lanes[i].first_row < lanes[u - 1].first_row)
      lanes[u - 1].first_row = lanes[i].first_row;
  nl = u;
  double tmax = 0;
  for (size_t i = 0; i < r->num_timeline; i++) {
    const an_timeline_row *t = &r->timeline[i];
    if (t->rank < 0 || !chosen[t->rank] || !drawn(t))
      continue;
    lane key = {t->rank, t->stream, 0};
    const lane *l = bsearch(&key, lanes, nl, sizeof *lanes, cmp_lane);
    rows[nr++] = (lane_row){(size_t)(l - lanes), i, t->start_s};
    if (t->end_s > tmax)
      tmax = t->end_s;
  }
  free(chosen);
  if (nl == 0 || nr == 0) {
    free(lanes);
    free(rows);
    return st_err_set(err, ST_EINPUT, "results '%s': the chosen ranks have no timeline rows",
                      r->path);
  }
  if (!(tmax > 0))
    tmax = 1e-6;
  qsort(rows, nr, sizeof *rows, cmp_lane_row);

  const char *unit;
  double scale;
  time_unit(tmax, &unit, &scale);
  double lane_h = 18, gap = 4, rank_gap = 10, plot_w = WIDTH - LEFT - RIGHT;
  /* lane_y[l]: top of lane l; ranks are set apart by a wider gap */
  double *lane_y = malloc((nl + 1) * sizeof *lane_y);
  if (!lane_y) {
    free(lanes);
    free(rows);
    return st_err_set(err, ST_ENOMEM, "plot '%s': out of memory", path);
  }
  double yy = TOP;
  for (size_t l = 0; l < nl; l++) {
    if (l > 0)
      yy += lane_h + gap + (lanes[l].rank != lanes[l - 1].rank ? rank_gap : 0);
    lane_y[l] = yy;
  }
  double lanes_bottom = nl ? lane_y[nl - 1] + lane_h + gap : TOP;
  double height = lanes_bottom + 90;
  an__svg s;
  char title[256];
  snprintf(title, sizeof title, "simtrain timeline: %s on %s", r->workload_name,
           r->cluster_name);
  an__svg_begin(&s, WIDTH, height, title);
  an__svg_text(&s, WIDTH / 2, 24, "middle", 16, 0, "Timeline: %s on %s (%zu of %zu ranks)",
               r->workload_name, r->cluster_name, num_ranks, r->num_ranks);
  for (size_t l = 0; l < nl; l++) {
    double y = lane_y[l];
    an__svg_rect(&s, LEFT, y, plot_w, lane_h, "#f4f4f4", NULL);
    an__svg_text(&s, LEFT - 8, y + lane_h - 5, "end", 11, 0, "rank %d %s", lanes[l].rank,
                 r->timeline[lanes[l].first_row].stream_name);
  }
  an__svg_group(&s, "ops");
  double px = plot_w / tmax; /* pixels per second */
  for (size_t i = 0; i < nr;) {
    /* one rectangle: a run of same-kind ops on one lane closer than half a pixel */
    const an_timeline_row *t = &r->timeline[rows[i].row];
    size_t l = rows[i].lane, j = i + 1;
    int k = kind_index(t->kind);
    double x0 = t->start_s * px, x1 = t->end_s * px;
    while (j < nr && rows[j].lane == l) {
      const an_timeline_row *n = &r->timeline[rows[j].row];
      if (kind_index(n->kind) != k || n->start_s * px > x1 + 0.5)
        break;
      if (n->end_s * px > x1)
        x1 = n->end_s * px;
      j++;
    }
    char tip[160];
    if (j == i + 1)
      snprintf(tip, sizeof tip, "%s (%s) %.6g %s", t->name, t->kind,
               (t->end_s - t->start_s) * scale, unit);
    else
      snprintf(tip, sizeof tip, "%zu %s ops", j - i, t->kind);
    double w = x1 - x0 < 1 ? 1 : x1 - x0; /* at least a pixel, so short ops show */
    an__svg_rect(&s, LEFT + x0, lane_y[l], w, lane_h, kind_colors[k].color, tip);
    i = j;
  }
  an__svg_group_end(&s);
  double axis_y = lanes_bottom + 4;
  char label[64];
  snprintf(label, sizeof label, "time (%s)", unit);
  x_axis(&s, LEFT, plot_w, axis_y, tmax * scale, label);
  const char *names[NUM_KINDS], *colors[NUM_KINDS];
  for (size_t i = 0; i < NUM_KINDS; i++) {
    names[i] = kind_colors[i].kind;
    colors[i] = kind_colors[i].color;
  }
  legend(&s, LEFT, axis_y + 64, names, colors, NUM_KINDS);
  free(lane_y);
  free(lanes);
  free(rows);
  return an__svg_finish(&s, path, err);
}

/* ---- breakdown ---------------------------------------------------------------- */
int an_plot_breakdown(const an_results *r, const int32_t *ranks, size_t num_ranks,
                      const char *path, st_err *err)
{
  if (r->num_ranks == 0)
    return st_err_set(err, ST_EINPUT, "results '%s': '/ranks' is empty: nothing to plot",
                      r->path);
  const an_rank_row **sel = malloc(r->num_ranks * sizeof *sel);
  if (!sel)
    return st_err_set(err, ST_ENOMEM, "plot '%s': out of memory", path);
  size_t n = 0;
  if (ranks) {
    for (size_t j = 0; j < num_ranks; j++)
      for (size_t i = 0; i < r->num_ranks; i++)
        if (r->ranks[i].rank == ranks[j]) {
          sel[n++] = &r->ranks[i];
          break;
        }
  } else {
    for (size_t i = 0; i < r->num_ranks; i++)
      sel[n++] = &r->ranks[i];
  }
  int it = r->summary.iterations > 0 ? r->summary.iterations : 1;
  double vmax = 0;
  for (size_t i = 0; i < n; i++) {
    const an_rank_row *k = sel[i];
    double tot = k->compute_s + k->exposed_comm_s + k->bubble_s + k->idle_s;
    if (tot > vmax)
      vmax = tot;
  }
  vmax = vmax / it;
  const char *unit;
  double scale;
  time_unit(vmax, &unit, &scale);
  double ymax = nice_top(vmax * scale);
  double plot_w = WIDTH - LEFT - RIGHT, plot_h = 400, y0 = TOP + plot_h;
  an__svg s;
  char title[256];
  snprintf(title, sizeof title, "simtrain breakdown: %s on %s", r->workload_name,
           r->cluster_name);
  an__svg_begin(&s, WIDTH, y0 + 90, title);
  an__svg_text(&s, WIDTH / 2, 24, "middle", 16, 0, "Per-rank time per step: %s on %s",
               r->workload_name, r->cluster_name);
  char label[64];
  snprintf(label, sizeof label, "time per step (%s)", unit);
  y_axis(&s, LEFT, y0, plot_h, ymax, label);
  static const char *const names[] = {"compute", "exposed comm", "bubble", "idle"};
  static const char *const colors[] = {"#4e79a7", "#e15759", "#edc948", "#bab0ac"};
  double slot = plot_w / n, bar = slot * 0.8;
  size_t label_every = n <= 64 ? 1 : (n + 63) / 64;
  an__svg_group(&s, "bars");
  for (size_t i = 0; i < n; i++) {
    const an_rank_row *k = sel[i];
    double v[4] = {k->compute_s, k->exposed_comm_s, k->bubble_s, k->idle_s};
    double x = LEFT + i * slot + (slot - bar) / 2, y = y0;
    for (int c = 0; c < 4; c++) {
      double h = v[c] / it * scale / ymax * plot_h;
      char tip[128];
      snprintf(tip, sizeof tip, "rank %d %s %.6g %s", k->rank, names[c], v[c] / it * scale, unit);
      an__svg_rect(&s, x, y - h, bar, h, colors[c], tip);
      y -= h;
    }
    if (i % label_every == 0)
      an__svg_text(&s, x + bar / 2, y0 + 16, "middle", 10, 0, "%d", k->rank);
  }
  an__svg_group_end(&s);
  an__svg_line(&s, LEFT, y0, LEFT + plot_w, y0, "black", 1);
  an__svg_text(&s, LEFT + plot_w / 2, y0 + 36, "middle", 12, 0, "rank");
  legend(&s, LEFT, y0 + 70, names, colors, 4);
  free(sel);
  return an__svg_finish(&s, path, err);
}

/* ---- links -------------------------------------------------------------------- */
typedef struct link_util {
  const an_link_row *l;
  double v[3]; /* mean utilisation, busy share, peak utilisation (0..1) */
} link_util;

static int cmp_link_util(const void *a, const void *b)
{
  const link_util *x = a, *y = b;
  if (x->v[0] != y->v[0])
    return x->v[0] > y->v[0] ? -1 : 1;
  return strcmp(x->l->name, y->l->name);
}

/* white (0) to dark red (1) */
static void heat_color(double v, char *buf, size_t n)
{
  if (!(v >= 0))
    v = 0;
  if (v > 1)
    v = 1;
  int r = (int)lround(255 - v * (255 - 165)), g = (int)lround(255 - v * 255),
      b = (int)lround(255 - v * 255);
  snprintf(buf, n, "#%02x%02x%02x", r, g, b);
}

int an_plot_links(const an_results *r, const char *path, st_err *err)
{
  if (r->num_links == 0)
    return st_err_set(err, ST_EINPUT, "results '%s': '/links' is empty: nothing to plot",
                      r->path);
  double run_s = 0;
  for (size_t i = 0; i < r->num_ranks; i++)
    run_s = fmax(run_s, r->ranks[i].finish_s);
  link_util *u = malloc(r->num_links * sizeof *u);
  if (!u)
    return st_err_set(err, ST_ENOMEM, "plot '%s': out of memory", path);
  for (size_t i = 0; i < r->num_links; i++) {
    const an_link_row *l = &r->links[i];
    u[i].l = l;
    u[i].v[0] = run_s > 0 && l->bandwidth_Bps > 0 ? l->bytes / l->bandwidth_Bps / run_s : 0;
    u[i].v[1] = run_s > 0 ? l->busy_s / run_s : 0;
    u[i].v[2] = l->peak_util;
  }
  qsort(u, r->num_links, sizeof *u, cmp_link_util);
  size_t n = r->num_links < MAX_LINK_ROWS ? r->num_links : MAX_LINK_ROWS;
  double row_h = 14, col_w = 160, left = 330, top = TOP + 30;
  double height = top + n * row_h + 90;
  an__svg s;
  char title[256];
  snprintf(title, sizeof title, "simtrain links: %s on %s", r->workload_name, r->cluster_name);
  an__svg_begin(&s, WIDTH, height, title);
  an__svg_text(&s, WIDTH / 2, 24, "middle", 16, 0,
               "Link utilisation over the run: %s on %s (%zu of %zu links, busiest first)",
               r->workload_name, r->cluster_name, n, r->num_links);
  static const char *const cols[] = {"mean utilisation (%)", "busy (% of run)",
                                     "peak utilisation (%)"};
  for (int c = 0; c < 3; c++)
    an__svg_text(&s, left + c * col_w + col_w / 2, top - 8, "middle", 12, 0, "%s", cols[c]);
  if (r->num_link_usage)
    an__svg_text(&s, left + 3 * col_w + 8, top - 8, "start", 12, 0, "most bytes from");
  an__svg_group(&s, "cells");
  for (size_t i = 0; i < n; i++) {
    double y = top + i * row_h;
    an__svg_text(&s, left - 8, y + row_h - 3, "end", 10, 0, "%.48s", u[i].l->name);
    for (int c = 0; c < 3; c++) {
      char color[16], tip[256];
      heat_color(u[i].v[c], color, sizeof color);
      snprintf(tip, sizeof tip, "%s: %s %.1f%%", u[i].l->name, cols[c], u[i].v[c] * 100);
      an__svg_rect(&s, left + c * col_w, y, col_w - 2, row_h - 2, color, tip);
      s.text_fill = u[i].v[c] > 0.6 ? "white" : NULL; /* readable on dark cells */
      an__svg_text(&s, left + c * col_w + col_w / 2, y + row_h - 4, "middle", 9, 0, "%.1f",
                   u[i].v[c] * 100);
      s.text_fill = NULL;
    }
    /* the collective that put the most bytes on it */
    size_t li = (size_t)(u[i].l - r->links), k = an__link_first_use(r, li);
    if (k < r->num_link_usage && (size_t)r->link_usage[k].link == li && u[i].l->bytes > 0) {
      const an_link_usage_row *lu = &r->link_usage[k];
      an__svg_text(&s, left + 3 * col_w + 8, y + row_h - 3, "start", 10, 0, "%.0f%% %s %.40s (%s)",
                   lu->bytes / u[i].l->bytes * 100, lu->op, lu->comm, lu->comm_kind);
    }
  }
  an__svg_group_end(&s);
  /* colour scale */
  double sy = top + n * row_h + 30, sx = left, sw = 3 * col_w - 2;
  an__svg_group(&s, "legend");
  for (int i = 0; i < 50; i++) {
    char color[16];
    heat_color((i + 0.5) / 50, color, sizeof color);
    an__svg_rect(&s, sx + sw * i / 50, sy, sw / 50 + 0.5, 12, color, NULL);
  }
  an__svg_text(&s, sx, sy + 28, "start", 11, 0, "0%%");
  an__svg_text(&s, sx + sw / 2, sy + 28, "middle", 11, 0, "50%%");
  an__svg_text(&s, sx + sw, sy + 28, "end", 11, 0, "100%%");
  an__svg_text(&s, sx - 8, sy + 11, "end", 11, 0, "utilisation");
  an__svg_group_end(&s);
  free(u);
  return an__svg_finish(&s, path, err);
}

/* ---- compare ------------------------------------------------------------------ */
/* A run's label: its file name without the folder and ".h5". */
static void run_label(const char *path, char *buf, size_t n)
{
  const char *b = st_path_basename(path);
  size_t l = strlen(b);
  if (l > 3 && !strcmp(b + l - 3, ".h5"))
    l -= 3;
  snprintf(buf, n, "%.*s", (int)l, b);
}

int an_plot_compare(const an_results *const *runs, size_t n, const char *path, st_err *err)
{
  if (n == 0)
    return st_err_set(err, ST_EUSAGE, "plot '%s': no runs to compare", path);
  double vmax = 0;
  for (size_t i = 0; i < n; i++) {
    const an_summary *m = &runs[i]->summary;
    double tot = m->compute_s + m->exposed_comm_s + m->bubble_s + m->idle_s;
    vmax = fmax(vmax, fmax(tot, m->step_time_s));
  }
  const char *unit;
  double scale;
  time_unit(vmax, &unit, &scale);
  double ymax = nice_top(vmax * scale * 1.04); /* room for the step-time labels */
  double plot_w = WIDTH - LEFT - RIGHT, plot_h = 400, y0 = TOP + plot_h;
  an__svg s;
  an__svg_begin(&s, WIDTH, y0 + 90, "simtrain compare: time per step");
  an__svg_text(&s, WIDTH / 2, 24, "middle", 16, 0,
               "Time per step, mean over ranks (%zu runs; black mark: step time)", n);
  char label[64];
  snprintf(label, sizeof label, "time per step (%s)", unit);
  y_axis(&s, LEFT, y0, plot_h, ymax, label);
  static const char *const names[] = {"compute", "exposed comm", "bubble", "idle"};
  static const char *const colors[] = {"#4e79a7", "#e15759", "#edc948", "#bab0ac"};
  double slot = plot_w / n, bar = fmin(slot * 0.6, 120);
  an__svg_group(&s, "bars");
  for (size_t i = 0; i < n; i++) {
    const an_summary *m = &runs[i]->summary;
    char name[64];
    run_label(runs[i]->path ? runs[i]->path : "?", name, sizeof name);
    double v[4] = {m->compute_s, m->exposed_comm_s, m->bubble_s, m->idle_s};
    double x = LEFT + i * slot + (slot - bar) / 2, y = y0;
    for (int c = 0; c < 4; c++) {
      double h = (isfinite(v[c]) ? v[c] : 0) * scale / ymax * plot_h;
      char tip[160];
      snprintf(tip, sizeof tip, "%s %s %.6g %s", name, names[c], v[c] * scale, unit);
      an__svg_rect(&s, x, y - h, bar, h, colors[c], tip);
      y -= h;
    }
    an__svg_text(&s, x + bar / 2, y0 + 16, "middle", 11, 0, "%.28s", name);
    an__svg_text(&s, x + bar / 2, y0 + 30, "middle", 10, 0, "%.40s on %.30s",
                 runs[i]->workload_name ? runs[i]->workload_name : "?",
                 runs[i]->cluster_name ? runs[i]->cluster_name : "?");
  }
  an__svg_group_end(&s);
  an__svg_group(&s, "steps");
  for (size_t i = 0; i < n; i++) {
    const an_summary *m = &runs[i]->summary;
    if (!isfinite(m->step_time_s))
      continue;
    double x = LEFT + i * slot + (slot - bar) / 2, y = y0 - m->step_time_s * scale / ymax * plot_h;
    an__svg_line(&s, x - 6, y, x + bar + 6, y, "black", 2);
    an__svg_text(&s, x + bar / 2, y - 5, "middle", 11, 0, "%.4g %s", m->step_time_s * scale, unit);
  }
  an__svg_group_end(&s);
  an__svg_line(&s, LEFT, y0, LEFT + plot_w, y0, "black", 1);
  legend(&s, LEFT, y0 + 70, names, colors, 4);
  return an__svg_finish(&s, path, err);
}
