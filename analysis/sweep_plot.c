/* sweep_plot.c — the pictures of a sweep (sweep.h), drawn with svg.c:
 *   scaling  two panels against GPUs (log2 axis): throughput per GPU, and
 *            time to train in days (step time in seconds when the sweep
 *            has no token budget); one line per series, the best point of
 *            a series at each GPU count;
 *   heatmap  a grid over two knobs (numeric columns or layout keys), each
 *            cell the best value of its ok points, printed in it.
 * Only points whose status is "ok" are drawn.  Every choice is made by a
 * total order (values, then point number), so the same sweep gives the
 * same bytes.  Every marker and cell carries a <title> tooltip with its
 * exact value and the point it comes from (docs/sweep.md,
 * "Pictures of a sweep").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_int.h"
#include "sweep.h"

#define WIDTH 1200.0
#define HM_MAX_CELLS 250000 /* 500 x 500: beyond, no one reads the picture */

/* Tableau 10: distinct at a glance; series beyond ten reuse them in order. */
static const char *const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define PALETTE_N (sizeof palette / sizeof palette[0])

static const char *subject(const an_sweep *s)
{
  return s->path ? s->path : s->name ? s->name : "(in memory)";
}

static int is_ok(const an_sweep_row *r) { return !strcmp(r->status, "ok"); }

/* "point, model, ..." (every column) or only the numeric ones. */
static void column_names(st_buf *b, int numeric_only)
{
  size_t n;
  const an_sweep_col *c = an_sweep_columns(&n);
  int first = 1;
  for (size_t i = 0; i < n; i++)
    if (!numeric_only || c[i].kind != AN_SW_STR) {
      st_buf_printf(b, "%s%s", first ? "" : ", ", c[i].name);
      first = 0;
    }
}

/* "sweep 's.h5': no column 'x' for the series (columns: ...)", or with what NULL
 * "column 'x' is text, not a value to plot (numeric columns: ...)". */
static int no_column(const an_sweep *s, const char *name, const char *what, int numeric_only,
                     st_err *err)
{
  st_buf b;
  st_buf_init(&b);
  column_names(&b, numeric_only);
  int rc =
      what ? st_err_set(err, ST_EUSAGE, "sweep '%s': no column '%s' %s (%scolumns: %s)", subject(s),
                        name, what, numeric_only ? "numeric " : "", b.data ? b.data : "")
           : st_err_set(err, ST_EUSAGE,
                        "sweep '%s': column '%s' is text, not a value to "
                        "plot (numeric columns: %s)",
                        subject(s), name, b.data ? b.data : "");
  st_buf_release(&b);
  return rc;
}

static int nothing_ok(const an_sweep *s, st_err *err)
{
  for (size_t i = 0; i < s->num_rows; i++)
    if (is_ok(&s->rows[i]))
      return ST_OK;
  return st_err_set(err, ST_EINPUT, "sweep '%s': no point succeeded: nothing to plot", subject(s));
}

static int oom(const char *path, st_err *err)
{
  return st_err_set(err, ST_ENOMEM, "plot '%s': out of memory", path);
}

/* The top of a value axis: max rounded up to its next tick. */
static double nice_top(double max)
{
  if (!(max > 0) || !isfinite(max))
    return 1;
  double step = an__nice_step(max, 6);
  return ceil(max / step * (1 - 1e-12)) * step;
}

/* Ticks from 0 (at y0) up h to top, grid lines across [x, x + w]. */
static void value_axis(an__svg *s, double x, double w, double y0, double h, double top,
                       const char *label)
{
  double step = an__nice_step(top, 6);
  for (int i = 0;; i++) {
    double v = i * step;
    if (v > top * (1 + 1e-9))
      break;
    double y = y0 - h * v / top;
    an__svg_line(s, x, y, x + w, y, "#dddddd", 0.5);
    an__svg_line(s, x - 5, y, x, y, "black", 1);
    an__svg_text(s, x - 8, y + 4, "end", 11, 0, "%g", v);
  }
  an__svg_line(s, x, y0, x, y0 - h, "black", 1);
  an__svg_text(s, x - 58, y0 - h / 2, "middle", 12, -90, "%s", label);
}

/* ---- scaling ------------------------------------------------------------------ */
/* An ok point with a throughput, and its series' value (the string, or the
 * number when ss is NULL). */
typedef struct sc_entry {
  const an_sweep_row *r;
  const char *ss;
  double sv;
} sc_entry;

static int cmp_num(double a, double b) /* NaN last, equal to itself */
{
  int na = isnan(a), nb = isnan(b);
  if (na || nb)
    return na - nb;
  return (a > b) - (a < b);
}

static int cmp_series(const sc_entry *a, const sc_entry *b)
{
  return a->ss ? strcmp(a->ss, b->ss) : cmp_num(a->sv, b->sv);
}

/* By series, GPUs, best throughput first, then point. */
static int cmp_sc_entry(const void *pa, const void *pb)
{
  const sc_entry *a = pa, *b = pb;
  int c = cmp_series(a, b);
  if (c)
    return c;
  if (a->r->num_gpus != b->r->num_gpus)
    return a->r->num_gpus < b->r->num_gpus ? -1 : 1;
  c = cmp_num(b->r->tokens_per_s_per_gpu, a->r->tokens_per_s_per_gpu);
  if (c)
    return c;
  return (a->r->point > b->r->point) - (a->r->point < b->r->point);
}

/* The points drawn: the best row of each (series, GPU count), by series
 * then GPUs; series[k] is the number of the series of pick k. */
typedef struct sc_plan {
  const an_sweep_row **pick;
  size_t *series;
  size_t num_picks, num_series;
  char (*label)[160]; /* per series */
  int train;          /* panel 2 is time to train (else step time) */
  double lo2, hi2;    /* log2 of the GPU axis's ends */
  double top_tput, top_time;
} sc_plan;

static void sc_plan_release(sc_plan *p)
{
  free(p->pick);
  free(p->series);
  free(p->label);
}

static double sc_time(const sc_plan *p, const an_sweep_row *r)
{
  return p->train ? r->time_to_train_s / 86400 : r->step_time_s;
}

static void series_label(const an_sweep_col *c, const sc_entry *e, char *buf, size_t n)
{
  if (e->ss)
    snprintf(buf, n, "%s", e->ss[0] ? e->ss : "-");
  else
    snprintf(buf, n, "%s=%g", c->name, e->sv);
}

static int sc_plan_build(const an_sweep *s, const an_sweep_col *c, sc_plan *p, const char *path,
                         st_err *err)
{
  memset(p, 0, sizeof *p);
  sc_entry *e = malloc((s->num_rows + 1) * sizeof *e);
  p->pick = malloc((s->num_rows + 1) * sizeof *p->pick);
  p->series = malloc((s->num_rows + 1) * sizeof *p->series);
  p->label = malloc((s->num_rows + 1) * sizeof *p->label);
  if (!e || !p->pick || !p->series || !p->label) {
    free(e);
    sc_plan_release(p);
    return oom(path, err);
  }
  size_t n = 0;
  for (size_t i = 0; i < s->num_rows; i++) {
    const an_sweep_row *r = &s->rows[i];
    if (!is_ok(r))
      continue;
    p->train |= isfinite(r->time_to_train_s);
    if (r->num_gpus > 0 && isfinite(r->tokens_per_s_per_gpu))
      e[n++] = (sc_entry){r, c->kind == AN_SW_STR ? (const char *)r + c->off : NULL,
                          an_sweep_value(r, c)};
  }
  if (n == 0) {
    free(e);
    sc_plan_release(p);
    return st_err_set(err, ST_EINPUT,
                      "sweep '%s': no ok point has a throughput per GPU: "
                      "nothing to plot",
                      subject(s));
  }
  qsort(e, n, sizeof *e, cmp_sc_entry);
  double gmin = INFINITY, gmax = 0;
  for (size_t i = 0; i < n; i++) {
    int new_series = i == 0 || cmp_series(&e[i - 1], &e[i]) != 0;
    if (new_series)
      series_label(c, &e[i], p->label[p->num_series++], sizeof p->label[0]);
    if (!new_series && e[i - 1].r->num_gpus == e[i].r->num_gpus)
      continue; /* a worse row of the same series and GPU count */
    p->pick[p->num_picks] = e[i].r;
    p->series[p->num_picks++] = p->num_series - 1;
    gmin = fmin(gmin, e[i].r->num_gpus);
    gmax = fmax(gmax, e[i].r->num_gpus);
    p->top_tput = fmax(p->top_tput, e[i].r->tokens_per_s_per_gpu);
    double t = sc_time(p, e[i].r);
    if (isfinite(t))
      p->top_time = fmax(p->top_time, t);
  }
  free(e);
  p->lo2 = floor(log2(gmin));
  p->hi2 = ceil(log2(gmax));
  if (p->hi2 - p->lo2 < 2) { /* room on both sides of one or two GPU counts */
    p->lo2 -= p->hi2 - p->lo2 < 1 ? 1 : 0;
    p->hi2 = p->lo2 + 2;
  }
  p->top_tput = nice_top(p->top_tput);
  p->top_time = nice_top(p->top_time);
  return ST_OK;
}

typedef struct panel {
  double x, y0, w, h; /* left, bottom, size */
} panel;

static double gpu_x(const sc_plan *p, const panel *pn, double gpus)
{
  double pad = 16;
  return pn->x + pad + (pn->w - 2 * pad) * (log2(gpus) - p->lo2) / (p->hi2 - p->lo2);
}

static void gpu_axis(an__svg *s, const sc_plan *p, const panel *pn)
{
  an__svg_line(s, pn->x, pn->y0, pn->x + pn->w, pn->y0, "black", 1);
  int ticks = (int)(p->hi2 - p->lo2) + 1, every = (ticks + 11) / 12;
  for (int i = 0; i < ticks; i++) {
    double g = exp2(p->lo2 + i), x = gpu_x(p, pn, g);
    an__svg_line(s, x, pn->y0, x, pn->y0 + 5, "black", 1);
    if (i % every == 0)
      an__svg_text(s, x, pn->y0 + 18, "middle", 11, 0, "%.0f", g);
  }
  an__svg_text(s, pn->x + pn->w / 2, pn->y0 + 38, "middle", 12, 0, "GPUs (log2 scale)");
}

/* One panel's lines and markers: which = 0 throughput, 1 time. */
static void sc_panel(an__svg *s, const sc_plan *p, const panel *pn, int which)
{
  double top = which ? p->top_time : p->top_tput;
  const char *label = which ? (p->train ? "time to train (days)" : "step time (s)")
                            : "throughput (tokens/s per GPU)";
  an__svg_text(s, pn->x + pn->w / 2, pn->y0 - pn->h - 12, "middle", 14, 0, "%s",
               which ? (p->train ? "Time to train" : "Step time") : "Throughput per GPU");
  value_axis(s, pn->x, pn->w, pn->y0, pn->h, top, label);
  gpu_axis(s, p, pn);
  an__svg_group(s, which ? "time" : "throughput");
  double *xs = malloc((p->num_picks + 1) * sizeof *xs);
  double *ys = malloc((p->num_picks + 1) * sizeof *ys);
  if (!xs || !ys) {
    s->oom = 1; /* an__svg_finish reports it */
    free(xs);
    free(ys);
    an__svg_group_end(s);
    return;
  }
  for (size_t k = 0, first = 0; k < p->num_picks; first = k) {
    size_t n = 0, ser = p->series[first];
    for (; k < p->num_picks && p->series[k] == ser; k++) {
      const an_sweep_row *r = p->pick[k];
      double v = which ? sc_time(p, r) : r->tokens_per_s_per_gpu;
      if (!isfinite(v))
        continue;
      xs[n] = gpu_x(p, pn, r->num_gpus);
      ys[n++] = pn->y0 - pn->h * v / top;
    }
    const char *color = palette[ser % PALETTE_N];
    if (n)
      an__svg_polyline(s, xs, ys, n, color, 2, p->label[ser]);
    for (size_t j = first, m = 0; j < k; j++) {
      const an_sweep_row *r = p->pick[j];
      double v = which ? sc_time(p, r) : r->tokens_per_s_per_gpu;
      if (!isfinite(v))
        continue;
      char tip[1024];
      snprintf(tip, sizeof tip, "%s, %d GPUs: %.6g %s (point %d: %s)", p->label[ser],
               (int)r->num_gpus, v,
               which ? (p->train ? "days to train" : "s per step") : "tokens/s per GPU",
               (int)r->point, r->layout);
      an__svg_circle(s, xs[m], ys[m], 4, color, tip);
      m++;
    }
  }
  an__svg_group_end(s);
  free(xs);
  free(ys);
}

/* Swatch and name per series, wrapping at the right edge; returns the
 * bottom of the last row. */
static double sc_legend(an__svg *s, const sc_plan *p, double x0, double y)
{
  an__svg_group(s, "legend");
  double x = x0;
  for (size_t i = 0; i < p->num_series; i++) {
    double w = 30 + 7.0 * strlen(p->label[i]);
    if (x > x0 && x + w > WIDTH - 20) {
      x = x0;
      y += 20;
    }
    an__svg_rect(s, x, y - 10, 12, 12, palette[i % PALETTE_N], NULL);
    an__svg_text(s, x + 16, y, "start", 12, 0, "%s", p->label[i]);
    x += w;
  }
  an__svg_group_end(s);
  return y;
}

/* Legend rows needed for the series names (the same wrapping as sc_legend). */
static int sc_legend_rows(const sc_plan *p, double x0)
{
  int rows = 1;
  double x = x0;
  for (size_t i = 0; i < p->num_series; i++) {
    double w = 30 + 7.0 * strlen(p->label[i]);
    if (x > x0 && x + w > WIDTH - 20) {
      x = x0;
      rows++;
    }
    x += w;
  }
  return rows;
}

int an_sweep_plot_scaling(const an_sweep *s, const char *series, const char *path, st_err *err)
{
  const char *name = series ? series : "cluster";
  const an_sweep_col *c = an_sweep_column(name);
  if (!c)
    return no_column(s, name, "for the series", 0, err);
  int rc = nothing_ok(s, err);
  if (rc)
    return rc;
  sc_plan p;
  rc = sc_plan_build(s, c, &p, path, err);
  if (rc)
    return rc;
  panel pn[2] = {{90, 460, 480, 380}, {680, 460, 480, 380}};
  double legend_y = pn[0].y0 + 70, height = legend_y + 20.0 * sc_legend_rows(&p, pn[0].x) + 10;
  an__svg svg;
  char title[512];
  snprintf(title, sizeof title, "simtrain sweep scaling: %s", s->name ? s->name : "");
  an__svg_begin(&svg, WIDTH, height, title);
  an__svg_text(&svg, WIDTH / 2, 26, "middle", 16, 0,
               "Scaling of sweep '%.200s' by %s (best ok point per GPU count)",
               s->name ? s->name : "", name);
  sc_panel(&svg, &p, &pn[0], 0);
  sc_panel(&svg, &p, &pn[1], 1);
  sc_legend(&svg, &p, pn[0].x, legend_y);
  sc_plan_release(&p);
  return an__svg_finish(&svg, path, err);
}

/* ---- heat map ------------------------------------------------------------------ */
/* Columns whose smaller values are better; every other one: larger. */
static int lower_is_better(const char *col)
{
  static const char *const lower[] = {"step_time_s",      "time_to_train_s", "cost_usd",
                                      "energy_MWh",       "exposed_comm_s",  "bubble_s",
                                      "peak_memory_bytes"};
  for (size_t i = 0; i < sizeof lower / sizeof lower[0]; i++)
    if (!strcmp(col, lower[i]))
      return 1;
  return 0;
}

/* The value of key in a layout "k=v,k=v,..." into buf; 0 when absent. */
static int layout_get(const char *layout, const char *key, char *buf, size_t n)
{
  size_t kl = strlen(key);
  for (const char *p = layout; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > kl && !strncmp(p, key, kl) && p[kl] == '=') {
      snprintf(buf, n, "%.*s", (int)(len - kl - 1), p + kl + 1);
      return 1;
    }
    p = end ? end + 1 : NULL;
  }
  return 0;
}

/* A knob's value in row r as text: the layout's key when the layout run has
 * it (it is what ran: a gbs column of 0 means "the layout's"), else the
 * column's; 0 when the row has neither. */
static int knob_get(const char *knob, const an_sweep_col *c, const an_sweep_row *r, char *buf,
                    size_t n)
{
  if (layout_get(r->layout, knob, buf, n))
    return 1;
  if (!c)
    return 0;
  if (c->kind == AN_SW_STR) {
    snprintf(buf, n, "%s", (const char *)r + c->off);
    return 1;
  }
  double v = an_sweep_value(r, c);
  if (isnan(v))
    return 0;
  snprintf(buf, n, "%g", v);
  return 1;
}

/* "tp, pp, dp, ..." the keys of the ok rows' layouts, in order of first
 * sight (the first 64). */
static void layout_keys(const an_sweep *s, st_buf *b)
{
  char keys[64][32];
  size_t n = 0;
  for (size_t i = 0; i < s->num_rows; i++) {
    if (!is_ok(&s->rows[i]))
      continue;
    for (const char *p = s->rows[i].layout; *p && n < 64;) {
      const char *eq = strchr(p, '='), *end = strchr(p, ',');
      if (!end)
        end = p + strlen(p);
      if (eq && eq < end && eq - p < (long)sizeof keys[0]) {
        snprintf(keys[n], sizeof keys[0], "%.*s", (int)(eq - p), p);
        size_t j = 0;
        while (j < n && strcmp(keys[j], keys[n]))
          j++;
        if (j == n)
          st_buf_printf(b, "%s%s", n++ ? ", " : "", keys[j]);
      }
      p = *end ? end + 1 : end;
    }
  }
}

static int check_knob(const an_sweep *s, const char *knob, const an_sweep_col **c, st_err *err)
{
  *c = an_sweep_column(knob);
  if (*c)
    return ST_OK;
  char v[8];
  for (size_t i = 0; i < s->num_rows; i++)
    if (is_ok(&s->rows[i]) && layout_get(s->rows[i].layout, knob, v, sizeof v))
      return ST_OK;
  st_buf cols, keys;
  st_buf_init(&cols);
  st_buf_init(&keys);
  column_names(&cols, 0);
  layout_keys(s, &keys);
  int rc = st_err_set(err, ST_EUSAGE,
                      "sweep '%s': '%s' is neither a column nor a key of an ok "
                      "point's layout (columns: %s; layout keys: %s)",
                      subject(s), knob, cols.data ? cols.data : "", keys.data ? keys.data : "none");
  st_buf_release(&cols);
  st_buf_release(&keys);
  return rc;
}

/* The distinct values of one knob: numbers in numeric order when every one
 * is a number, else text in strcmp order. */
typedef struct hm_axis {
  char (*v)[64];
  size_t n;
  int numeric;
} hm_axis;

static int is_number(const char *t)
{
  char *end;
  double v = strtod(t, &end);
  return *t && !*end && isfinite(v);
}

static int hm_cmp(const hm_axis *a, const char *x, const char *y)
{
  if (a->numeric) {
    double u = strtod(x, NULL), w = strtod(y, NULL);
    if (u != w)
      return u < w ? -1 : 1;
    return 0;
  }
  return strcmp(x, y);
}

static size_t hm_find(const hm_axis *a, const char *t)
{
  for (size_t i = 0; i < a->n; i++)
    if (!hm_cmp(a, a->v[i], t))
      return i;
  return a->n;
}

/* Add t (sorted insertion; duplicates dropped). */
static void hm_add(hm_axis *a, const char *t)
{
  if (hm_find(a, t) < a->n)
    return;
  size_t i = a->n;
  while (i > 0 && hm_cmp(a, a->v[i - 1], t) > 0) {
    memcpy(a->v[i], a->v[i - 1], sizeof a->v[0]);
    i--;
  }
  snprintf(a->v[i], sizeof a->v[0], "%s", t);
  a->n++;
}

/* One cell: its best row and how many ok rows fell in it. */
typedef struct hm_cell {
  const an_sweep_row *best;
  double v;
  size_t count;
} hm_cell;

typedef struct hm_plan {
  const char *x, *y, *value;
  const an_sweep_col *cx, *cy, *cv;
  hm_axis ax, ay;
  hm_cell *cells; /* ay.n rows of ax.n, by (iy, ix) */
  int lower;
  double vmin, vmax; /* over the filled cells; NaN when none */
} hm_plan;

static void hm_plan_release(hm_plan *p)
{
  free(p->ax.v);
  free(p->ay.v);
  free(p->cells);
}

static int hm_better(const hm_plan *p, double v, const an_sweep_row *r, const hm_cell *c)
{
  if (!c->best)
    return 1;
  if (v != c->v)
    return p->lower ? v < c->v : v > c->v;
  return r->point < c->best->point;
}

static int hm_plan_fill(const an_sweep *s, hm_plan *p, const char *path, st_err *err)
{
  p->ax.v = malloc((s->num_rows + 1) * sizeof *p->ax.v);
  p->ay.v = malloc((s->num_rows + 1) * sizeof *p->ay.v);
  if (!p->ax.v || !p->ay.v)
    return oom(path, err);
  char tx[64], ty[64];
  p->ax.numeric = p->ay.numeric = 1;
  for (int pass = 0; pass < 2; pass++) /* 0: are all values numbers; 1: collect */
    for (size_t i = 0; i < s->num_rows; i++) {
      const an_sweep_row *r = &s->rows[i];
      if (!is_ok(r) || !knob_get(p->x, p->cx, r, tx, sizeof tx) ||
          !knob_get(p->y, p->cy, r, ty, sizeof ty))
        continue;
      if (pass == 0) {
        p->ax.numeric &= is_number(tx);
        p->ay.numeric &= is_number(ty);
      } else {
        hm_add(&p->ax, tx);
        hm_add(&p->ay, ty);
      }
    }
  if (p->ax.n == 0)
    return st_err_set(err, ST_EINPUT,
                      "sweep '%s': no ok point has both '%s' and '%s': nothing "
                      "to plot",
                      subject(s), p->x, p->y);
  if (p->ax.n * p->ay.n > HM_MAX_CELLS)
    return st_err_set(err, ST_EUSAGE,
                      "sweep '%s': a heat map of '%s' (%zu values) by '%s' (%zu values) "
                      "would have more than %d cells",
                      subject(s), p->x, p->ax.n, p->y, p->ay.n, HM_MAX_CELLS);
  p->cells = calloc(p->ax.n * p->ay.n, sizeof *p->cells);
  if (!p->cells)
    return oom(path, err);
  p->vmin = p->vmax = NAN;
  for (size_t i = 0; i < s->num_rows; i++) {
    const an_sweep_row *r = &s->rows[i];
    if (!is_ok(r) || !knob_get(p->x, p->cx, r, tx, sizeof tx) ||
        !knob_get(p->y, p->cy, r, ty, sizeof ty))
      continue;
    double v = an_sweep_value(r, p->cv);
    if (!isfinite(v))
      continue;
    hm_cell *c = &p->cells[hm_find(&p->ay, ty) * p->ax.n + hm_find(&p->ax, tx)];
    c->count++;
    if (hm_better(p, v, r, c)) {
      c->best = r;
      c->v = v;
    }
  }
  for (size_t k = 0; k < p->ax.n * p->ay.n; k++)
    if (p->cells[k].best) {
      double v = p->cells[k].v;
      p->vmin = isnan(p->vmin) || v < p->vmin ? v : p->vmin;
      p->vmax = isnan(p->vmax) || v > p->vmax ? v : p->vmax;
    }
  return ST_OK;
}

/* The colour of v: light (worst) to dark blue (best); *dark says the text
 * on it should be white. */
static void hm_color(const hm_plan *p, double v, char *buf, size_t n, int *dark)
{
  double t = 1; /* one value: it is the best */
  if (p->vmax > p->vmin) {
    t = (v - p->vmin) / (p->vmax - p->vmin);
    if (p->lower)
      t = 1 - t;
  }
  t = t < 0 ? 0 : t > 1 ? 1 : t;
  static const double lo[3] = {239, 243, 255}, hi[3] = {8, 48, 107};
  int c[3];
  for (int i = 0; i < 3; i++)
    c[i] = (int)lround(lo[i] + t * (hi[i] - lo[i]));
  snprintf(buf, n, "#%02x%02x%02x", c[0], c[1], c[2]);
  if (dark)
    *dark = t > 0.5;
}

/* v in at most about five characters for a cell or the scale: "3100",
 * "0.85", "12.3k", "15.7M", "75.2G" (the tooltips keep six digits). */
static const char *compact(double v, char *buf, size_t n)
{
  static const char suffix[] = "kMGTPE";
  double a = fabs(v);
  if (a < 1e4) {
    snprintf(buf, n, "%.4g", v);
    return buf;
  }
  int k = 0;
  while (a >= 999.5 && k < 6) {
    a /= 1000;
    v /= 1000;
    k++;
  }
  snprintf(buf, n, "%.3g%c", v, suffix[k - 1]);
  return buf;
}

typedef struct hm_geom {
  double left, top, cw, ch, width, height;
} hm_geom;

static void hm_cells(an__svg *s, const hm_plan *p, const hm_geom *g)
{
  an__svg_group(s, "cells");
  double fs = fmin(11, fmin(g->ch * 0.45, g->cw / 4.5));
  for (size_t iy = 0; iy < p->ay.n; iy++)
    for (size_t ix = 0; ix < p->ax.n; ix++) {
      const hm_cell *c = &p->cells[iy * p->ax.n + ix];
      double x = g->left + ix * g->cw, y = g->top + (p->ay.n - 1 - iy) * g->ch;
      char color[16], tip[1024];
      int dark = 0;
      if (c->best) {
        hm_color(p, c->v, color, sizeof color, &dark);
        snprintf(tip, sizeof tip, "%s=%s, %s=%s: %s %.6g (best of %zu ok point%s: point %d: %s)",
                 p->x, p->ax.v[ix], p->y, p->ay.v[iy], p->value, c->v, c->count,
                 c->count == 1 ? "" : "s", (int)c->best->point, c->best->layout);
      } else {
        snprintf(color, sizeof color, "#d9d9d9");
        snprintf(tip, sizeof tip, "%s=%s, %s=%s: no ok point", p->x, p->ax.v[ix], p->y,
                 p->ay.v[iy]);
      }
      an__svg_rect(s, x, y, g->cw - 2, g->ch - 2, color, tip);
      char num[32];
      s->text_fill = dark ? "white" : NULL;
      an__svg_text(s, x + g->cw / 2 - 1, y + g->ch / 2 + fs / 3, "middle", fs, 0, "%s",
                   c->best ? compact(c->v, num, sizeof num) : "-");
      s->text_fill = NULL;
    }
  an__svg_group_end(s);
}

static void hm_axes(an__svg *s, const hm_plan *p, const hm_geom *g)
{
  double bottom = g->top + p->ay.n * g->ch;
  int tilt = g->cw < 48;
  for (size_t ix = 0; ix < p->ax.n; ix++) {
    double x = g->left + ix * g->cw + g->cw / 2 - 1;
    an__svg_text(s, x, bottom + 16, tilt ? "end" : "middle", 11, tilt ? -45 : 0, "%.24s",
                 p->ax.v[ix]);
  }
  an__svg_text(s, g->left + p->ax.n * g->cw / 2, bottom + (tilt ? 70 : 38), "middle", 13, 0, "%s",
               p->x);
  for (size_t iy = 0; iy < p->ay.n; iy++) {
    double y = g->top + (p->ay.n - 1 - iy) * g->ch + g->ch / 2 + 3;
    an__svg_text(s, g->left - 8, y, "end", 11, 0, "%.24s", p->ay.v[iy]);
  }
  an__svg_text(s, g->left - 100, g->top + p->ay.n * g->ch / 2, "middle", 13, -90, "%s", p->y);
}

/* The colour scale: the filled cells' smallest value at the left, largest
 * at the right. */
static void hm_scale(an__svg *s, const hm_plan *p, double x, double y, double w)
{
  char num[32];
  an__svg_group(s, "scale");
  if (!isnan(p->vmin)) {
    for (int i = 0; i < 50; i++) {
      char color[16];
      hm_color(p, p->vmin + (p->vmax - p->vmin) * (i + 0.5) / 50, color, sizeof color, NULL);
      an__svg_rect(s, x + w * i / 50, y, w / 50 + 0.5, 12, color, NULL);
    }
    an__svg_text(s, x, y + 28, "start", 11, 0, "%s", compact(p->vmin, num, sizeof num));
    an__svg_text(s, x + w / 2, y + 28, "middle", 11, 0, "%s",
                 compact((p->vmin + p->vmax) / 2, num, sizeof num));
    an__svg_text(s, x + w, y + 28, "end", 11, 0, "%s", compact(p->vmax, num, sizeof num));
  }
  an__svg_rect(s, x + w + 20, y, 12, 12, "#d9d9d9", NULL);
  an__svg_text(s, x + w + 36, y + 11, "start", 11, 0, "no ok point");
  an__svg_text(s, x, y - 8, "start", 12, 0, "%s (%s is better; darker: better)", p->value,
               p->lower ? "lower" : "higher");
  an__svg_group_end(s);
}

int an_sweep_plot_heatmap(const an_sweep *s, const char *x, const char *y, const char *value,
                          const char *path, st_err *err)
{
  hm_plan p = {.x = x, .y = y, .value = value ? value : "tokens_per_s_per_gpu"};
  if (!x || !y)
    return st_err_set(err, ST_EUSAGE, "plot '%s': a heat map needs two knobs", path);
  p.cv = an_sweep_column(p.value);
  if (!p.cv || p.cv->kind == AN_SW_STR)
    return no_column(s, p.value, p.cv ? NULL : "to plot", 1, err);
  int rc;
  if ((rc = nothing_ok(s, err)) || (rc = check_knob(s, x, &p.cx, err)) ||
      (rc = check_knob(s, y, &p.cy, err)))
    return rc;
  p.lower = lower_is_better(p.value);
  rc = hm_plan_fill(s, &p, path, err);
  if (rc) {
    hm_plan_release(&p);
    return rc;
  }
  hm_geom g = {.left = 140, .top = 70};
  g.cw = fmin(110, fmax(28, 900.0 / p.ax.n));
  g.ch = fmin(44, fmax(18, 480.0 / p.ay.n));
  g.width = fmax(760, g.left + p.ax.n * g.cw + 40);
  double scale_y = g.top + p.ay.n * g.ch + 110;
  g.height = scale_y + 50;
  an__svg svg;
  char title[512];
  snprintf(title, sizeof title, "simtrain sweep heat map: %s by %s and %s", p.value, x, y);
  an__svg_begin(&svg, g.width, g.height, title);
  an__svg_text(&svg, g.width / 2, 26, "middle", 16, 0,
               "%s by %s and %s, sweep '%.200s' (best ok point per cell)", p.value, x, y,
               s->name ? s->name : "");
  hm_cells(&svg, &p, &g);
  hm_axes(&svg, &p, &g);
  hm_scale(&svg, &p, g.left, scale_y, fmin(400, fmax(200, p.ax.n * g.cw - 160)));
  hm_plan_release(&p);
  return an__svg_finish(&svg, path, err);
}

/* ---- step time against memory (a search's candidates) ----------------------------- */
/* The step a candidate is drawn at: simulated when it was, else estimated. */
static double mem_step(const an_sweep_row *r)
{
  return is_ok(r) ? r->step_time_s : r->estimate_step_s;
}

int an_sweep_plot_memory(const an_sweep *s, const char *path, st_err *err)
{
  /* the device's memory, as the search recorded it in its options */
  double device_bytes = NAN;
  const char *dm = s->spec_json ? strstr(s->spec_json, "\"device_memory_bytes\":") : NULL;
  if (dm)
    device_bytes = strtod(dm + strlen("\"device_memory_bytes\":"), NULL);
  double top_mem = 0, top_step = 0;
  size_t n = 0;
  for (size_t i = 0; i < s->num_rows; i++) {
    const an_sweep_row *r = &s->rows[i];
    double y = mem_step(r), x = r->peak_memory_bytes;
    if (!isfinite(x) || !isfinite(y) || (strcmp(r->status, "ok") && strcmp(r->status, "estimated")))
      continue;
    n++;
    top_mem = x > top_mem ? x : top_mem;
    top_step = y > top_step ? y : top_step;
  }
  if (!n)
    return st_err_set(err, ST_EINPUT, "sweep '%s': no candidate with a step and a peak memory: "
                      "nothing to plot", subject(s));
  if (isfinite(device_bytes) && device_bytes > top_mem)
    top_mem = device_bytes;
  const double GiB = 1073741824.0;
  double xtop = nice_top(top_mem / GiB), ytop = nice_top(top_step);
  panel pn = {90, 560, 1040, 480};
  an__svg svg;
  char title[512];
  snprintf(title, sizeof title, "simtrain search: step time against memory: %s",
           s->name ? s->name : "");
  an__svg_begin(&svg, WIDTH, 660, title);
  an__svg_text(&svg, WIDTH / 2, 26, "middle", 16, 0, "%.300s: step time against peak memory",
               s->name ? s->name : "");
  value_axis(&svg, pn.x, pn.w, pn.y0, pn.h, ytop, "step time (s)");
  /* the memory axis: ticks from 0 to xtop GiB */
  an__svg_line(&svg, pn.x, pn.y0, pn.x + pn.w, pn.y0, "black", 1);
  double step = an__nice_step(xtop, 8);
  for (int i = 0;; i++) {
    double v = i * step;
    if (v > xtop * (1 + 1e-9))
      break;
    double x = pn.x + pn.w * v / xtop;
    an__svg_line(&svg, x, pn.y0, x, pn.y0 + 5, "black", 1);
    an__svg_text(&svg, x, pn.y0 + 18, "middle", 11, 0, "%g", v);
  }
  an__svg_text(&svg, pn.x + pn.w / 2, pn.y0 + 38, "middle", 12, 0,
               "peak memory per GPU (GiB, the memory model's)");
  if (isfinite(device_bytes) && device_bytes > 0) {
    double x = pn.x + pn.w * device_bytes / GiB / xtop;
    an__svg_line(&svg, x, pn.y0, x, pn.y0 - pn.h, "#e15759", 1.5);
    an__svg_text(&svg, x - 4, pn.y0 - pn.h + 12, "end", 11, 0, "device memory %.1f GiB",
                 device_bytes / GiB);
  }
  /* estimated first (underneath), then the simulated ones on top */
  for (int pass = 0; pass < 2; pass++) {
    an__svg_group(&svg, pass ? "simulated" : "estimated");
    for (size_t i = 0; i < s->num_rows; i++) {
      const an_sweep_row *r = &s->rows[i];
      if (is_ok(r) != pass || (!pass && strcmp(r->status, "estimated")))
        continue;
      double y = mem_step(r), x = r->peak_memory_bytes;
      if (!isfinite(x) || !isfinite(y))
        continue;
      char tip[1024];
      snprintf(tip, sizeof tip, "%s %.6g s, %.2f GiB (rank %d by estimate: %s)",
               pass ? "simulated" : "estimated", y, x / GiB, (int)r->estimate_rank, r->layout);
      an__svg_circle(&svg, pn.x + pn.w * x / GiB / xtop, pn.y0 - pn.h * y / ytop, pass ? 5 : 2.5,
                     pass ? palette[1] : palette[0], tip);
    }
    an__svg_group_end(&svg);
  }
  an__svg_rect(&svg, pn.x, pn.y0 + 52, 12, 12, palette[0], NULL);
  an__svg_text(&svg, pn.x + 16, pn.y0 + 62, "start", 12, 0, "estimated (analytic model)");
  an__svg_rect(&svg, pn.x + 240, pn.y0 + 52, 12, 12, palette[1], NULL);
  an__svg_text(&svg, pn.x + 256, pn.y0 + 62, "start", 12, 0, "simulated (engine)");
  return an__svg_finish(&svg, path, err);
}
