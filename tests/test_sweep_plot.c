/* test_sweep_plot.c — the pictures of a sweep (analysis/sweep_plot.c): the
 * scaling lines and the heat map, drawn from sweeps built in memory with
 * numbers chosen by hand, checked in the SVG text (the tooltips carry each
 * marker's and cell's exact value and point), and their errors.
 *
 * The scaling sweep ("grid.h5"), 8 points:
 *   point cluster  GPUs  status  tok/s/GPU  days to train  layout
 *   0     h100     256   ok      4000       10             tp=8,pp=2,dp=16
 *   1     h100     256   ok      4200        9.5           tp=4,pp=4,dp=16   best at 256
 *   2     h100     512   ok      3900        5.2           tp=8,pp=2,dp=32
 *   3     h100     512   failed  9999        1             tp=8,pp=1,dp=64   not drawn
 *   4     h100    1024   ok      3600        2.8           tp=8,pp=2,dp=64
 *   5     mi300x   256   ok      3000       13             tp=8,pp=2,dp=16
 *   6     mi300x   512   ok      2800        7             tp=8,pp=2,dp=32
 *   7     mi300x   512   ok      2900        6.8           tp=4,pp=4,dp=32   best at 512
 * The heat-map sweep, 6 points on 64 GPUs, knobs tp (x) and pp (y):
 *   point layout                        status  tok/s/GPU  step (s)
 *   0     tp=2,pp=1,dp=32,gbs=512        ok      3000       1.0
 *   1     tp=2,pp=1,dp=32,gbs=512,mbs=2  ok      3100       1.1
 *   2     tp=4,pp=2,dp=8,gbs=512         ok      3500       0.8
 *   3     tp=8,pp=2,dp=4,gbs=512         ok      3300       0.9
 *   4     tp=16,pp=4,dp=1,gbs=512        ok      2000       1.5
 *   5     tp=8,pp=4,dp=2,gbs=512,zero=1  failed  9999       0.1  not drawn
 * tp takes 2, 4, 8, 16 and pp 1, 2, 4: 12 cells, 4 of them filled.
 */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sweep.h"
#include "xml_check.h"

#define DAY 86400.0

typedef struct fixture {
  char dir[256];
  an_sweep s;
  an_sweep_row rows[8];
} fixture;

static an_sweep_row row(int point, const char *cluster, int gpus, const char *status,
                        const char *layout, double tps, double step_s, double days)
{
  an_sweep_row r;
  memset(&r, 0, sizeof r);
  r.point = point;
  snprintf(r.model, sizeof r.model, "llama3-70b");
  snprintf(r.request, sizeof r.request, "%s", layout);
  snprintf(r.cluster, sizeof r.cluster, "%s", cluster);
  r.num_gpus = gpus;
  snprintf(r.status, sizeof r.status, "%s", status);
  snprintf(r.layout, sizeof r.layout, "%s", layout);
  r.tokens_per_s_per_gpu = tps;
  r.step_time_s = step_s;
  r.time_to_train_s = days * DAY;
  r.tokens_per_s = tps * gpus;
  r.mfu = r.compute_s = r.exposed_comm_s = r.bubble_s = r.peak_memory_bytes = NAN;
  r.tokens_per_step = r.model_tflops_per_gpu = r.train_steps = NAN;
  r.cost_usd = r.energy_MWh = r.cost_estimate_s = NAN;
  return r;
}

static void scaling_sweep(fixture *f)
{
  an_sweep_row *r = f->rows;
  r[0] = row(0, "h100", 256, "ok", "tp=8,pp=2,dp=16", 4000, 2.0, 10);
  r[1] = row(1, "h100", 256, "ok", "tp=4,pp=4,dp=16", 4200, 1.9, 9.5);
  r[2] = row(2, "h100", 512, "ok", "tp=8,pp=2,dp=32", 3900, 1.0, 5.2);
  r[3] = row(3, "h100", 512, "failed", "tp=8,pp=1,dp=64", 9999, 0.1, 1);
  r[4] = row(4, "h100", 1024, "ok", "tp=8,pp=2,dp=64", 3600, 0.55, 2.8);
  r[5] = row(5, "mi300x", 256, "ok", "tp=8,pp=2,dp=16", 3000, 2.6, 13);
  r[6] = row(6, "mi300x", 512, "ok", "tp=8,pp=2,dp=32", 2800, 1.4, 7);
  r[7] = row(7, "mi300x", 512, "ok", "tp=4,pp=4,dp=32", 2900, 1.35, 6.8);
  f->s.num_rows = f->s.points = 8;
}

static void heatmap_sweep(fixture *f)
{
  an_sweep_row *r = f->rows;
  r[0] = row(0, "h100", 64, "ok", "tp=2,pp=1,dp=32,gbs=512", 3000, 1.0, NAN);
  r[1] = row(1, "h100", 64, "ok", "tp=2,pp=1,dp=32,gbs=512,mbs=2", 3100, 1.1, NAN);
  r[2] = row(2, "h100", 64, "ok", "tp=4,pp=2,dp=8,gbs=512", 3500, 0.8, NAN);
  r[3] = row(3, "h100", 64, "ok", "tp=8,pp=2,dp=4,gbs=512", 3300, 0.9, NAN);
  r[4] = row(4, "h100", 64, "ok", "tp=16,pp=4,dp=1,gbs=512", 2000, 1.5, NAN);
  r[5] = row(5, "h100", 64, "failed", "tp=8,pp=4,dp=2,gbs=512,zero=1", 9999, 0.1, NAN);
  f->s.num_rows = f->s.points = 6;
}

static int setup(void **state)
{
  fixture *f = calloc(1, sizeof *f);
  const char *tmp = getenv("TMPDIR");
  snprintf(f->dir, sizeof f->dir, "%s/st_swp_XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(f->dir))
    return -1;
  f->s.path = "grid.h5";
  f->s.name = "grid";
  f->s.shard = f->s.shards = 1;
  f->s.rows = f->rows;
  *state = f;
  return 0;
}

static int teardown(void **state)
{
  fixture *f = *state;
  DIR *d = opendir(f->dir);
  if (d) {
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d)))
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
        snprintf(p, sizeof p, "%s/%s", f->dir, e->d_name);
        remove(p);
      }
    closedir(d);
  }
  rmdir(f->dir);
  free(f);
  return 0;
}

static size_t count_str(const char *s, const char *sub)
{
  size_t n = 0;
  for (const char *p = strstr(s, sub); p; p = strstr(p + 1, sub))
    n++;
  return n;
}

/* Occurrences of sub inside <g id="name"> ... </g> (groups are not nested). */
static size_t count_in_group(const char *svg, const char *name, const char *sub)
{
  char open[64];
  snprintf(open, sizeof open, "<g id=\"%s\">", name);
  const char *a = strstr(svg, open);
  if (!a)
    return 0;
  const char *b = strstr(a, "</g>");
  size_t n = 0;
  for (const char *p = strstr(a, sub); p && p < b; p = strstr(p + 1, sub))
    n++;
  return n;
}

static char *read_svg(const char *path)
{
  char *text;
  size_t len;
  st_err err = {0};
  assert_int_equal(st_file_read_all(path, &text, &len, &err), ST_OK);
  const char *bad = xml_check(text);
  if (bad) {
    print_error("SVG '%s' is not well-formed: %s\n", path, bad);
    fail();
  }
  return text;
}

static char *scaling(fixture *f, const char *series, const char *name)
{
  char p[600];
  snprintf(p, sizeof p, "%s/%s", f->dir, name);
  st_err err = {0};
  if (an_sweep_plot_scaling(&f->s, series, p, &err) != ST_OK) {
    print_error("%s\n", err.msg);
    fail();
  }
  return read_svg(p);
}

static char *heatmap(fixture *f, const char *x, const char *y, const char *value, const char *name)
{
  char p[600];
  snprintf(p, sizeof p, "%s/%s", f->dir, name);
  st_err err = {0};
  if (an_sweep_plot_heatmap(&f->s, x, y, value, p, &err) != ST_OK) {
    print_error("%s\n", err.msg);
    fail();
  }
  return read_svg(p);
}

static int exists(fixture *f, const char *name)
{
  char p[600];
  snprintf(p, sizeof p, "%s/%s", f->dir, name);
  return access(p, F_OK) == 0;
}

/* ---- scaling ------------------------------------------------------------------ */
static void test_scaling__one_line_per_series_with_its_best_points(void **state)
{
  fixture *f = *state;
  scaling_sweep(f);
  char *svg = scaling(f, NULL, "s.svg");
  /* two clusters: a line in each panel and a legend entry each */
  assert_int_equal(count_in_group(svg, "throughput", "<polyline"), 2);
  assert_int_equal(count_in_group(svg, "time", "<polyline"), 2);
  assert_int_equal(count_in_group(svg, "legend", "<rect"), 2);
  assert_non_null(strstr(svg, ">h100</text>"));
  assert_non_null(strstr(svg, ">mi300x</text>"));
  /* h100 at 256, 512, 1024 and mi300x at 256, 512: 5 markers per panel */
  assert_int_equal(count_in_group(svg, "throughput", "<circle"), 5);
  assert_int_equal(count_in_group(svg, "time", "<circle"), 5);
  /* the best of two layouts at one GPU count, and its own time to train */
  assert_non_null(strstr(svg, "<title>h100, 256 GPUs: 4200 tokens/s per GPU (point 1: "
                              "tp=4,pp=4,dp=16)</title>"));
  assert_non_null(strstr(svg, "<title>h100, 256 GPUs: 9.5 days to train (point 1: "
                              "tp=4,pp=4,dp=16)</title>"));
  assert_non_null(strstr(svg, "<title>mi300x, 512 GPUs: 2900 tokens/s per GPU (point 7: "
                              "tp=4,pp=4,dp=32)</title>"));
  assert_non_null(strstr(svg, "<title>mi300x, 512 GPUs: 6.8 days to train (point 7:"));
  assert_null(strstr(svg, "4000 tokens/s"));
  assert_null(strstr(svg, "2800 tokens/s"));
  /* the failed point, faster on paper, is not drawn */
  assert_null(strstr(svg, "9999"));
  assert_non_null(strstr(svg, "<title>h100, 512 GPUs: 3900 tokens/s per GPU (point 2:"));
  assert_non_null(strstr(svg, ">time to train (days)</text>"));
  /* GPU ticks 256, 512, 1024 on a log2 axis: evenly spaced */
  assert_int_equal(count_str(svg, ">256</text>"), 2);
  assert_int_equal(count_str(svg, ">1024</text>"), 2);
  free(svg);
}

/* Where the markers land, from the panel's geometry: the left panel's plot
 * area spans x 106..554 (x 90, width 480, 16 of padding each side) over
 * log2 GPUs 8..10, and y 460 (0) up 380 to the axis top, 5000 (4200 rounded
 * up to the ticks' step of 1000).  h100: 256 -> x 106, 4200 -> y 460 - 380 x
 * 0.84 = 140.8; 512 -> 330, 3900 -> 163.6; 1024 -> 554, 3600 -> 186.4. */
static void test_scaling__markers_sit_at_their_values(void **state)
{
  fixture *f = *state;
  scaling_sweep(f);
  char *svg = scaling(f, NULL, "s.svg");
  assert_non_null(strstr(svg, "<polyline points=\"106.00,140.80 330.00,163.60 554.00,186.40\""));
  assert_non_null(strstr(svg, "<circle cx=\"106.00\" cy=\"140.80\" r=\"4.00\" fill=\"#4e79a7\">"
                              "<title>h100, 256 GPUs: 4200"));
  assert_non_null(strstr(svg, ">5000</text>"));
  free(svg);
}

static void test_scaling__step_time_without_a_token_budget(void **state)
{
  fixture *f = *state;
  scaling_sweep(f);
  for (int i = 0; i < 8; i++)
    f->rows[i].time_to_train_s = NAN;
  char *svg = scaling(f, NULL, "s.svg");
  assert_non_null(strstr(svg, ">step time (s)</text>"));
  assert_null(strstr(svg, "days to train"));
  assert_non_null(strstr(svg, "<title>h100, 256 GPUs: 1.9 s per step (point 1:"));
  assert_non_null(strstr(svg, "<title>mi300x, 512 GPUs: 1.35 s per step (point 7:"));
  free(svg);
}

/* A numeric series column: its values in numeric order (1024 after 512,
 * which text order would reverse), named "column=value". */
static void test_scaling__numeric_series_in_numeric_order(void **state)
{
  fixture *f = *state;
  scaling_sweep(f);
  for (int i = 0; i < 8; i++)
    f->rows[i].gbs = f->rows[i].layout[3] == '8' ? 512 : 1024; /* tp=8: 512 */
  char *svg = scaling(f, "gbs", "s.svg");
  assert_int_equal(count_in_group(svg, "legend", "<rect"), 2);
  const char *a = strstr(svg, ">gbs=512</text>"), *b = strstr(svg, ">gbs=1024</text>");
  assert_non_null(a);
  assert_non_null(b);
  assert_true(a < b);
  /* gbs=512 (tp=8) at 256 GPUs: points 0 (4000) and 5 (3000); the best is 0 */
  assert_non_null(strstr(svg, "<title>gbs=512, 256 GPUs: 4000 tokens/s per GPU (point 0:"));
  free(svg);
}

static void test_scaling__same_bytes_twice_and_in_any_row_order(void **state)
{
  fixture *f = *state;
  scaling_sweep(f);
  char *a = scaling(f, NULL, "a.svg"), *b = scaling(f, NULL, "b.svg");
  assert_string_equal(a, b);
  for (int i = 0; i < 4; i++) {
    an_sweep_row t = f->rows[i];
    f->rows[i] = f->rows[7 - i];
    f->rows[7 - i] = t;
  }
  char *c = scaling(f, NULL, "c.svg");
  assert_string_equal(a, c);
  free(a);
  free(b);
  free(c);
}

static void test_scaling__unknown_series_column_lists_the_columns(void **state)
{
  fixture *f = *state;
  scaling_sweep(f);
  char p[600];
  snprintf(p, sizeof p, "%s/s.svg", f->dir);
  st_err err = {0};
  assert_int_equal(an_sweep_plot_scaling(&f->s, "clusters", p, &err), ST_EUSAGE);
  const char *want = "sweep 'grid.h5': no column 'clusters' for the series (columns: point, "
                     "model, request, cluster, nodes, num_gpus,";
  assert_int_equal(strncmp(err.msg, want, strlen(want)), 0);
  assert_non_null(strstr(err.msg, ", tokens_per_s_per_gpu, "));
  assert_false(exists(f, "s.svg"));
}

static void test_scaling__no_ok_point_is_an_error(void **state)
{
  fixture *f = *state;
  scaling_sweep(f);
  for (int i = 0; i < 8; i++)
    snprintf(f->rows[i].status, sizeof f->rows[i].status, i % 2 ? "failed" : "timeout");
  char p[600];
  snprintf(p, sizeof p, "%s/s.svg", f->dir);
  st_err err = {0};
  assert_int_equal(an_sweep_plot_scaling(&f->s, NULL, p, &err), ST_EINPUT);
  assert_string_equal(err.msg, "sweep 'grid.h5': no point succeeded: nothing to plot");
  assert_int_equal(an_sweep_plot_heatmap(&f->s, "tp", "pp", NULL, p, &err), ST_EINPUT);
  assert_string_equal(err.msg, "sweep 'grid.h5': no point succeeded: nothing to plot");
  assert_false(exists(f, "s.svg"));
}

/* ---- heat map ------------------------------------------------------------------ */
static void test_heatmap__best_value_per_cell_and_grey_empty_cells(void **state)
{
  fixture *f = *state;
  heatmap_sweep(f);
  char *svg = heatmap(f, "tp", "pp", NULL, "h.svg");
  assert_int_equal(count_in_group(svg, "cells", "<rect"), 12);
  /* 4 filled cells, 8 empty: grey with "-" (and one grey swatch in the scale) */
  assert_int_equal(count_str(svg, ": no ok point</title>"), 8);
  assert_int_equal(count_in_group(svg, "cells", ">-</text>"), 8);
  assert_int_equal(count_str(svg, "fill=\"#d9d9d9\""), 9);
  /* two points in one cell: the better throughput, printed in the cell */
  assert_non_null(strstr(svg, "<title>tp=2, pp=1: tokens_per_s_per_gpu 3100 (best of 2 ok "
                              "points: point 1: tp=2,pp=1,dp=32,gbs=512,mbs=2)</title>"));
  assert_non_null(strstr(svg, ">3100</text>"));
  assert_null(strstr(svg, ">3000</text>"));
  assert_non_null(strstr(svg, "<title>tp=16, pp=4: tokens_per_s_per_gpu 2000 (best of 1 ok "
                              "point: point 4:"));
  /* the failed point's cell is empty, its number nowhere */
  assert_non_null(strstr(svg, "<title>tp=8, pp=4: no ok point</title>"));
  assert_null(strstr(svg, "9999"));
  /* the best cell darkest, the worst lightest */
  assert_non_null(strstr(svg, "fill=\"#08306b\"><title>tp=4, pp=2: tokens_per_s_per_gpu 3500"));
  assert_non_null(strstr(svg, "fill=\"#eff3ff\"><title>tp=16, pp=4: tokens_per_s_per_gpu 2000"));
  /* tp in numeric order: 8 before 16 (text order would put 16 first) */
  const char *t8 = strstr(svg, "<title>tp=8, pp=1:"), *t16 = strstr(svg, "<title>tp=16, pp=1:");
  assert_non_null(t8);
  assert_non_null(t16);
  assert_true(t8 < t16);
  /* axis names and the scale's ends (2000 .. 3500) */
  assert_non_null(strstr(svg, ">tp</text>"));
  assert_non_null(strstr(svg, ">pp</text>"));
  assert_int_equal(count_in_group(svg, "scale", "<rect"), 51);
  assert_non_null(strstr(svg, ">2000</text>"));
  assert_non_null(strstr(svg, ">3500</text>"));
  assert_non_null(strstr(svg, ">tokens_per_s_per_gpu (higher is better; darker: better)</text>"));
  free(svg);
}

/* step_time_s: the smaller the better, per cell and in the colours. */
static void test_heatmap__lower_is_better_columns(void **state)
{
  fixture *f = *state;
  heatmap_sweep(f);
  char *svg = heatmap(f, "tp", "pp", "step_time_s", "h.svg");
  assert_non_null(strstr(svg, "<title>tp=2, pp=1: step_time_s 1 (best of 2 ok points: point 0:"));
  assert_non_null(strstr(svg, "fill=\"#08306b\"><title>tp=4, pp=2: step_time_s 0.8 "));
  assert_non_null(strstr(svg, "fill=\"#eff3ff\"><title>tp=16, pp=4: step_time_s 1.5 "));
  assert_non_null(strstr(svg, ">step_time_s (lower is better; darker: better)</text>"));
  free(svg);
  /* one cell: it is the best, dark whichever way is better */
  svg = heatmap(f, "gbs", "gbs", "step_time_s", "h1.svg");
  assert_int_equal(count_in_group(svg, "cells", "<rect"), 1);
  assert_non_null(strstr(svg, "fill=\"#08306b\"><title>gbs=512, gbs=512: step_time_s 0.8 "));
  free(svg);
}

/* 501 points by themselves: 501 x 501 = 251001 cells, over the 250000 allowed. */
static void test_heatmap__too_many_cells_is_an_error(void **state)
{
  fixture *f = *state;
  enum { N = 501 };
  an_sweep_row *rows = malloc(N * sizeof *rows);
  assert_non_null(rows);
  for (int i = 0; i < N; i++)
    rows[i] = row(i, "h100", 64, "ok", "tp=8", 1000, 1, NAN);
  f->s.rows = rows;
  f->s.num_rows = f->s.points = N;
  char p[600];
  snprintf(p, sizeof p, "%s/h.svg", f->dir);
  st_err err = {0};
  assert_int_equal(an_sweep_plot_heatmap(&f->s, "point", "point", NULL, p, &err), ST_EUSAGE);
  assert_string_equal(err.msg, "sweep 'grid.h5': a heat map of 'point' (501 values) by 'point' "
                               "(501 values) would have more than 250000 cells");
  assert_false(exists(f, "h.svg"));
  /* 501 values by one: a picture */
  assert_int_equal(an_sweep_plot_heatmap(&f->s, "point", "tp", NULL, p, &err), ST_OK);
  free(rows);
}

/* Columns as knobs, a text one included; gbs comes from the layout run
 * (the rows' gbs column is 0: "the layout's"). */
static void test_heatmap__columns_and_layout_keys_as_knobs(void **state)
{
  fixture *f = *state;
  scaling_sweep(f);
  char *svg = heatmap(f, "num_gpus", "cluster", NULL, "h.svg");
  assert_int_equal(count_in_group(svg, "cells", "<rect"), 6); /* 3 GPU counts x 2 clusters */
  assert_non_null(strstr(svg, "<title>num_gpus=256, cluster=h100: tokens_per_s_per_gpu 4200 "
                              "(best of 2 ok points: point 1:"));
  assert_non_null(strstr(svg, "<title>num_gpus=512, cluster=h100: tokens_per_s_per_gpu 3900 "
                              "(best of 1 ok point: point 2:"));
  assert_non_null(strstr(svg, "<title>num_gpus=1024, cluster=mi300x: no ok point</title>"));
  free(svg);
  heatmap_sweep(f);
  svg = heatmap(f, "gbs", "tp", NULL, "h2.svg");
  assert_int_equal(count_in_group(svg, "cells", "<rect"), 4); /* gbs 512 x tp 2, 4, 8, 16 */
  assert_non_null(strstr(svg, "<title>gbs=512, tp=4: tokens_per_s_per_gpu 3500"));
  assert_null(strstr(svg, "gbs=0"));
  free(svg);
  /* seconds to train: the fewest per cell, six-digit tooltips, short cell text;
   * the failed point 3 (1 day at 512 GPUs) does not count */
  scaling_sweep(f);
  svg = heatmap(f, "num_gpus", "cluster", "time_to_train_s", "h3.svg");
  assert_non_null(strstr(svg, "<title>num_gpus=256, cluster=h100: time_to_train_s 820800 (best of "
                              "2 ok points: point 1:"));
  assert_non_null(strstr(svg, ">821k</text>")); /* 9.5 days */
  assert_non_null(strstr(svg, "<title>num_gpus=512, cluster=h100: time_to_train_s 449280 (best of "
                              "1 ok point: point 2:"));
  assert_non_null(strstr(svg, ">449k</text>"));  /* 5.2 days */
  assert_non_null(strstr(svg, ">1.12M</text>")); /* the scale's top: mi300x at 256, 13 days */
  free(svg);
}

static void test_heatmap__unknown_knob_and_value_are_errors(void **state)
{
  fixture *f = *state;
  heatmap_sweep(f);
  char p[600];
  snprintf(p, sizeof p, "%s/h.svg", f->dir);
  st_err err = {0};
  /* the keys listed are those of the ok points' layouts: zero only in the failed one */
  assert_int_equal(an_sweep_plot_heatmap(&f->s, "tp", "zero", NULL, p, &err), ST_EUSAGE);
  const char *want = "sweep 'grid.h5': 'zero' is neither a column nor a key of an ok point's "
                     "layout (columns: point, model, ";
  assert_int_equal(strncmp(err.msg, want, strlen(want)), 0);
  const char *tail = "; layout keys: tp, pp, dp, gbs, mbs)";
  assert_string_equal(err.msg + strlen(err.msg) - strlen(tail), tail);
  assert_int_equal(an_sweep_plot_heatmap(&f->s, "tq", "pp", NULL, p, &err), ST_EUSAGE);
  assert_non_null(strstr(err.msg, "'tq' is neither a column nor a key"));
  assert_int_equal(an_sweep_plot_heatmap(&f->s, "tp", "pp", "tflops", p, &err), ST_EUSAGE);
  want = "sweep 'grid.h5': no column 'tflops' to plot (numeric columns: point, nodes, num_gpus, "
         "gbs, seq, step_time_s,";
  assert_int_equal(strncmp(err.msg, want, strlen(want)), 0);
  assert_int_equal(an_sweep_plot_heatmap(&f->s, "tp", "pp", "cluster", p, &err), ST_EUSAGE);
  want = "sweep 'grid.h5': column 'cluster' is text, not a value to plot (numeric columns: ";
  assert_int_equal(strncmp(err.msg, want, strlen(want)), 0);
  assert_false(exists(f, "h.svg"));
}

static void test_heatmap__same_bytes_twice_and_in_any_row_order(void **state)
{
  fixture *f = *state;
  heatmap_sweep(f);
  char *a = heatmap(f, "tp", "pp", NULL, "a.svg"), *b = heatmap(f, "tp", "pp", NULL, "b.svg");
  assert_string_equal(a, b);
  for (int i = 0; i < 3; i++) {
    an_sweep_row t = f->rows[i];
    f->rows[i] = f->rows[5 - i];
    f->rows[5 - i] = t;
  }
  char *c = heatmap(f, "tp", "pp", NULL, "c.svg");
  assert_string_equal(a, c);
  free(a);
  free(b);
  free(c);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
      T(test_scaling__one_line_per_series_with_its_best_points),
      T(test_scaling__markers_sit_at_their_values),
      T(test_scaling__step_time_without_a_token_budget),
      T(test_scaling__numeric_series_in_numeric_order),
      T(test_scaling__same_bytes_twice_and_in_any_row_order),
      T(test_scaling__unknown_series_column_lists_the_columns),
      T(test_scaling__no_ok_point_is_an_error),
      T(test_heatmap__best_value_per_cell_and_grey_empty_cells),
      T(test_heatmap__lower_is_better_columns),
      T(test_heatmap__too_many_cells_is_an_error),
      T(test_heatmap__columns_and_layout_keys_as_knobs),
      T(test_heatmap__unknown_knob_and_value_are_errors),
      T(test_heatmap__same_bytes_twice_and_in_any_row_order),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
