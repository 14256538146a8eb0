/* failures_out.c — what `simtrain train` predicts, for people (a table), for
 * programs (one JSON object), in an HDF5 file of its own (docs/results-format.md,
 * "Training runs") and as SVG plots: the finish-time distribution and goodput
 * against the checkpoint interval.
 *
 * Numbers go out with 17 significant digits (JSON, HDF5 as IEEE doubles), so
 * two runs with the same seed compare byte for byte; an infinite value
 * (MTBF without failures) is JSON null. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "an_h5.h"
#include "an_int.h"
#include "analysis.h"

/* What the HDF5 body writes. */
struct train_file {
  const an_failure_report *r;
  const char *command_line;
};

void an_failure_report_release(an_failure_report *r)
{
  free(r->finish_s);
  free(r->sweep);
  r->finish_s = NULL;
  r->sweep = NULL;
}

/* ---- text and JSON ---------------------------------------------------------- */

static double days(double s) { return s / 86400; }
static double hours(double s) { return s / 3600; }

void an_failure_print_text(const an_failure_report *r, FILE *out)
{
  const an_failure_params *p = &r->p;
  const an_failure_mc *mc = &r->mc;
  fprintf(out, "simtrain train: %s on %s (%d GPUs, %d node%s)\n", r->workload, r->cluster,
          r->num_gpus, r->num_nodes, r->num_nodes == 1 ? "" : "s");
  fprintf(out, "  step time                %14.6f s (%s)\n", r->step_time_s,
          r->simulated ? "simulated" : "given, --step-time");
  fprintf(out, "  steps                    %14.0f (%.6g tokens, %.0f per step)\n", r->train_steps,
          r->train_tokens, r->tokens_per_step);
  fprintf(out, "  failure-free training    %14.2f days\n", days(p->work_s));
  fprintf(out, "\n  failures (docs/failures.md):\n");
  fprintf(out, "    MTBF per GPU, per node %14.0f h, %.0f h\n", r->mtbf_gpu_h, r->mtbf_node_h);
  if (p->rate_per_s > 0)
    fprintf(out, "    job MTBF               %14.3f h (%.4g failures per day)\n",
            hours(r->job_mtbf_s), p->rate_per_s * 86400);
  else
    fprintf(out, "    job MTBF               %14s (no failures)\n", "infinite");
  fprintf(out, "    checkpoint             %14.3f s (%.4g GB at %.4g GB/s, blocking)\n", p->ckpt_s,
          r->ckpt_bytes / 1e9, r->storage_GBps);
  fprintf(out, "    restart                %14.3f s (%.4g s rescheduling + loading)\n",
          p->restart_s, r->reschedule_s);
  if (p->spare_nodes < 0)
    fprintf(out, "    spare nodes            %14s (a failed node is replaced at once)\n",
            "unlimited");
  else
    fprintf(out, "    spare nodes            %14d (repair %.4g h)\n", p->spare_nodes, r->repair_h);
  fprintf(out, "\n  checkpoint interval      %14.3f s (%.1f steps; %s)\n", p->interval_s,
          p->interval_s / r->step_time_s, r->interval_auto ? "auto: the optimum" : "given");
  fprintf(out, "    Young, Daly, optimum   %14.3f s, %.3f s, %.3f s\n", r->young_s, r->daly_s,
          r->optimal_s);
  fprintf(out, "\n  analytic expectation:\n");
  fprintf(out, "    time to train          %14.2f days (goodput %.4f)\n",
          days(r->analytic.time_s), r->analytic.goodput);
  fprintf(out, "    failures               %14.2f\n", r->analytic.failures);
  fprintf(out, "\n  Monte-Carlo, %d trials, seed %llu:\n", mc->trials, (unsigned long long)r->seed);
  fprintf(out, "    time to train, mean    %14.2f days (goodput %.4f)\n", days(mc->mean_s),
          mc->goodput);
  fprintf(out, "    p10, p50, p90          %14.2f days, %.2f days, %.2f days\n", days(mc->p10_s),
          days(mc->p50_s), days(mc->p90_s));
  fprintf(out, "    failures, mean         %14.2f (%.2f waited for a node)\n", mc->failures,
          mc->waits);
  fprintf(out, "    where the time goes    %14.2f days training, %.2f checkpointing,\n",
          days(p->work_s), days(mc->checkpoint_s));
  fprintf(out, "                           %14s %.2f lost to failures, %.2f restarting, %.2f "
               "waiting\n",
          "", days(mc->lost_s), days(mc->restart_s), days(mc->wait_s));
}

static void jnum(FILE *out, const char *key, double v, int first)
{
  if (isfinite(v))
    fprintf(out, "%s\"%s\":%.17g", first ? "" : ",", key, v);
  else
    fprintf(out, "%s\"%s\":null", first ? "" : ",", key);
}

static void jstr(FILE *out, const char *key, const char *v)
{
  fprintf(out, ",\"%s\":", key);
  st_json_str(out, v);
}

void an_failure_print_json(const an_failure_report *r, FILE *out)
{
  const an_failure_params *p = &r->p;
  const an_failure_mc *mc = &r->mc;
  fputs("{", out);
  fprintf(out, "\"num_gpus\":%d,\"num_nodes\":%d", r->num_gpus, r->num_nodes);
  jstr(out, "workload", r->workload);
  jstr(out, "cluster", r->cluster);
  fprintf(out, ",\"step_simulated\":%s", r->simulated ? "true" : "false");
  jnum(out, "step_time_s", r->step_time_s, 0);
  jnum(out, "tokens_per_step", r->tokens_per_step, 0);
  jnum(out, "train_tokens", r->train_tokens, 0);
  jnum(out, "train_steps", r->train_steps, 0);
  jnum(out, "steady_time_to_train_s", p->work_s, 0);
  jnum(out, "mtbf_gpu_h", r->mtbf_gpu_h, 0);
  jnum(out, "mtbf_node_h", r->mtbf_node_h, 0);
  jnum(out, "failure_rate_per_s", p->rate_per_s, 0);
  jnum(out, "job_mtbf_s", r->job_mtbf_s, 0);
  jnum(out, "ckpt_bytes", r->ckpt_bytes, 0);
  jnum(out, "storage_GBps", r->storage_GBps, 0);
  jnum(out, "checkpoint_s", p->ckpt_s, 0);
  jnum(out, "reschedule_s", r->reschedule_s, 0);
  jnum(out, "restart_s", p->restart_s, 0);
  if (p->spare_nodes < 0)
    fputs(",\"spare_nodes\":null", out);
  else
    fprintf(out, ",\"spare_nodes\":%d", p->spare_nodes);
  jnum(out, "repair_h", r->repair_h, 0);
  jnum(out, "checkpoint_interval_s", p->interval_s, 0);
  fprintf(out, ",\"checkpoint_interval_auto\":%s", r->interval_auto ? "true" : "false");
  jnum(out, "young_interval_s", r->young_s, 0);
  jnum(out, "daly_interval_s", r->daly_s, 0);
  jnum(out, "optimal_interval_s", r->optimal_s, 0);
  jnum(out, "checkpoints", r->analytic.checkpoints, 0);
  jnum(out, "failure_free_time_s", r->analytic.base_s, 0);
  jnum(out, "analytic_time_to_train_s", r->analytic.time_s, 0);
  jnum(out, "analytic_goodput", r->analytic.goodput, 0);
  jnum(out, "failures_expected", r->analytic.failures, 0);
  fprintf(out, ",\"trials\":%d,\"seed\":%llu", mc->trials, (unsigned long long)r->seed);
  jnum(out, "time_to_train_s", mc->mean_s, 0);
  jnum(out, "time_to_train_stddev_s", mc->stddev_s, 0);
  jnum(out, "goodput", mc->goodput, 0);
  jnum(out, "p10_s", mc->p10_s, 0);
  jnum(out, "p50_s", mc->p50_s, 0);
  jnum(out, "p90_s", mc->p90_s, 0);
  jnum(out, "min_s", mc->min_s, 0);
  jnum(out, "max_s", mc->max_s, 0);
  jnum(out, "failures_mean", mc->failures, 0);
  jnum(out, "waits_mean", mc->waits, 0);
  jnum(out, "checkpoint_total_s", mc->checkpoint_s, 0);
  jnum(out, "lost_s", mc->lost_s, 0);
  jnum(out, "restart_total_s", mc->restart_s, 0);
  jnum(out, "wait_s", mc->wait_s, 0);
  if (r->sweep) {
    fputs(",\"sweep\":[", out);
    size_t n = (size_t)r->sweep_scales * r->sweep_points;
    for (size_t i = 0; i < n; i++) {
      const an_failure_sweep_row *w = &r->sweep[i];
      fputs(i ? ",{" : "{", out);
      jnum(out, "mtbf_scale", w->mtbf_scale, 1);
      jnum(out, "job_mtbf_s", w->job_mtbf_s, 0);
      jnum(out, "interval_s", w->interval_s, 0);
      jnum(out, "time_to_train_s", w->time_s, 0);
      jnum(out, "goodput", w->goodput, 0);
      jnum(out, "failures", w->failures, 0);
      fputs("}", out);
    }
    fputs("]", out);
  }
  fputs("}\n", out);
}

void an_failure_print_sweep(const an_failure_report *r, FILE *out)
{
  fputs("mtbf_scale\tjob_mtbf_h\tinterval_s\ttime_to_train_days\tgoodput\tfailures\n", out);
  size_t n = r->sweep ? (size_t)r->sweep_scales * r->sweep_points : 0;
  for (size_t i = 0; i < n; i++) {
    const an_failure_sweep_row *w = &r->sweep[i];
    fprintf(out, "%g\t%.4f\t%.3f\t%.4f\t%.6f\t%.3f\n", w->mtbf_scale, hours(w->job_mtbf_s),
            w->interval_s, days(w->time_s), w->goodput, w->failures);
  }
}

/* ---- HDF5 (through analysis/h5.c: atomic, no modification times) --------------- */

static int h5_num(hid_t obj, const char *name, double v)
{
  return an__h5_attr_write_num(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}

static int write_train(an__h5w *w)
{
  const an_failure_report *r = ((const struct train_file *)w->u)->r;
  const char *command_line = ((const struct train_file *)w->u)->command_line;
  char now[32] = "";
  time_t t = time(NULL);
  struct tm tm;
  if (gmtime_r(&t, &tm))
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (an__h5_attr_write_str(w->file, "simtrain_version", SIMTRAIN_VERSION) < 0 ||
      an__h5_attr_write_str(w->file, "command_line", command_line) < 0 ||
      an__h5_attr_write_str(w->file, "created_utc", now) < 0 ||
      an__h5_attr_write_str(w->file, "kind", "train") < 0)
    return an__h5_wfail(w, "cannot write the root attributes");
  hid_t g = an__h5_group(w->file, "train");
  if (g < 0)
    return an__h5_wfail(w, "cannot create group '/train'");
  const an_failure_params *p = &r->p;
  const an_failure_mc *mc = &r->mc;
  const struct {
    const char *name;
    double v;
  } nums[] = {
      {"num_gpus", r->num_gpus},
      {"num_nodes", r->num_nodes},
      {"step_simulated", r->simulated},
      {"step_time_s", r->step_time_s},
      {"tokens_per_step", r->tokens_per_step},
      {"train_tokens", r->train_tokens},
      {"train_steps", r->train_steps},
      {"steady_time_to_train_s", p->work_s},
      {"mtbf_gpu_h", r->mtbf_gpu_h},
      {"mtbf_node_h", r->mtbf_node_h},
      {"failure_rate_per_s", p->rate_per_s},
      {"job_mtbf_s", r->job_mtbf_s},
      {"ckpt_bytes", r->ckpt_bytes},
      {"storage_GBps", r->storage_GBps},
      {"checkpoint_s", p->ckpt_s},
      {"reschedule_s", r->reschedule_s},
      {"restart_s", p->restart_s},
      {"spare_nodes", p->spare_nodes},
      {"repair_h", r->repair_h},
      {"checkpoint_interval_s", p->interval_s},
      {"checkpoint_interval_auto", r->interval_auto},
      {"young_interval_s", r->young_s},
      {"daly_interval_s", r->daly_s},
      {"optimal_interval_s", r->optimal_s},
      {"checkpoints", r->analytic.checkpoints},
      {"failure_free_time_s", r->analytic.base_s},
      {"analytic_time_to_train_s", r->analytic.time_s},
      {"analytic_goodput", r->analytic.goodput},
      {"failures_expected", r->analytic.failures},
      {"trials", mc->trials},
      {"seed", (double)r->seed},
      {"time_to_train_s", mc->mean_s},
      {"time_to_train_stddev_s", mc->stddev_s},
      {"goodput", mc->goodput},
      {"p10_s", mc->p10_s},
      {"p50_s", mc->p50_s},
      {"p90_s", mc->p90_s},
      {"failures_mean", mc->failures},
      {"waits_mean", mc->waits},
  };
  int bad = an__h5_attr_write_str(g, "workload", r->workload) < 0 ||
            an__h5_attr_write_str(g, "cluster", r->cluster) < 0;
  for (size_t i = 0; !bad && i < sizeof nums / sizeof nums[0]; i++)
    bad = h5_num(g, nums[i].name, nums[i].v) < 0;
  an__h5_close(&g, H5Gclose);
  if (bad)
    return an__h5_wfail(w, "cannot write the attributes of '/train'");
  /* the finish time of every trial, in trial order */
  int rc = an__h5_write_rows(w, "train/finish_s", H5T_NATIVE_DOUBLE, (size_t)mc->trials,
                             r->finish_s, NULL);
  if (rc == ST_OK && r->sweep) {
    hid_t ct = H5Tcreate(H5T_COMPOUND, sizeof(an_failure_sweep_row));
    H5Tinsert(ct, "mtbf_scale", HOFFSET(an_failure_sweep_row, mtbf_scale), H5T_NATIVE_DOUBLE);
    H5Tinsert(ct, "job_mtbf_s", HOFFSET(an_failure_sweep_row, job_mtbf_s), H5T_NATIVE_DOUBLE);
    H5Tinsert(ct, "interval_s", HOFFSET(an_failure_sweep_row, interval_s), H5T_NATIVE_DOUBLE);
    H5Tinsert(ct, "time_to_train_s", HOFFSET(an_failure_sweep_row, time_s), H5T_NATIVE_DOUBLE);
    H5Tinsert(ct, "goodput", HOFFSET(an_failure_sweep_row, goodput), H5T_NATIVE_DOUBLE);
    H5Tinsert(ct, "failures", HOFFSET(an_failure_sweep_row, failures), H5T_NATIVE_DOUBLE);
    rc = an__h5_write_rows(w, "train/sweep", ct, (size_t)r->sweep_scales * r->sweep_points,
                           r->sweep, NULL);
    an__h5_close(&ct, H5Tclose);
  }
  return rc;
}

int an_failure_write(const an_failure_report *r, const char *path, const char *command_line,
                     st_err *err)
{
  struct train_file f = {r, command_line ? command_line : ""};
  return an__h5_create(path, "train results", write_train, &f, err);
}

/* ---- SVG -------------------------------------------------------------------------- */

#define W 900.0
#define H 520.0
#define LEFT 90.0
#define RIGHT 40.0
#define TOP 60.0
#define BOTTOM 70.0

int an_failure_plot(const an_failure_report *r, const char *path, st_err *err)
{
  const an_failure_mc *mc = &r->mc;
  if (!r->finish_s || mc->trials < 1)
    return st_err_set(err, ST_EUSAGE, "plot '%s': no trials to plot", path);
  enum { BINS = 40 };
  double lo = days(mc->min_s), hi = days(mc->max_s);
  if (!(hi > lo)) {
    lo -= 0.5;
    hi += 0.5;
  }
  double width = (hi - lo) / BINS;
  int count[BINS] = {0}, top = 0;
  for (int i = 0; i < mc->trials; i++) {
    int b = (int)((days(r->finish_s[i]) - lo) / width);
    b = b < 0 ? 0 : b >= BINS ? BINS - 1 : b;
    if (++count[b] > top)
      top = count[b];
  }
  double pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM, y0 = H - BOTTOM;
  an__svg s;
  char title[600];
  snprintf(title, sizeof title, "Time to train: %s on %s", r->workload, r->cluster);
  an__svg_begin(&s, W, H, title);
  an__svg_text(&s, W / 2, 24, "middle", 16, 0, "Time to train with failures: %s on %s",
               r->workload, r->cluster);
  an__svg_text(&s, W / 2, 44, "middle", 12, 0,
               "%d trials, seed %llu; job MTBF %.2f h, checkpoint every %.0f s; goodput %.3f",
               mc->trials, (unsigned long long)r->seed, hours(r->job_mtbf_s), r->p.interval_s,
               mc->goodput);
  double ystep = an__nice_step(top, 5), ytop = ceil(top / ystep) * ystep;
  if (!(ytop > 0))
    ytop = 1;
  an__svg_group(&s, "bars");
  for (int b = 0; b < BINS; b++) {
    if (!count[b])
      continue;
    double h = ph * count[b] / ytop;
    char tip[120];
    snprintf(tip, sizeof tip, "%.3f to %.3f days: %d trials", lo + b * width, lo + (b + 1) * width,
             count[b]);
    an__svg_rect(&s, LEFT + pw * b / BINS, y0 - h, pw / BINS - 1, h, "#4477aa", tip);
  }
  an__svg_group_end(&s);
  /* axes */
  an__svg_line(&s, LEFT, y0, LEFT + pw, y0, "black", 1);
  an__svg_line(&s, LEFT, y0, LEFT, TOP, "black", 1);
  for (double v = 0; v <= ytop + 1e-9; v += ystep) {
    double y = y0 - ph * v / ytop;
    an__svg_line(&s, LEFT - 5, y, LEFT, y, "black", 1);
    an__svg_text(&s, LEFT - 8, y + 4, "end", 11, 0, "%g", v);
  }
  an__svg_text(&s, LEFT - 55, TOP + ph / 2, "middle", 12, -90, "trials");
  double xstep = an__nice_step(hi - lo, 8);
  for (double v = ceil(lo / xstep) * xstep; v <= hi + 1e-9; v += xstep) {
    double x = LEFT + pw * (v - lo) / (hi - lo);
    an__svg_line(&s, x, y0, x, y0 + 5, "black", 1);
    an__svg_text(&s, x, y0 + 18, "middle", 11, 0, "%g", v);
  }
  an__svg_text(&s, LEFT + pw / 2, y0 + 40, "middle", 12, 0, "finish time (days)");
  /* p10, p50, p90 */
  const struct {
    const char *name;
    double v;
    const char *color;
  } marks[] = {{"p10", mc->p10_s, "#228833"}, {"p50", mc->p50_s, "#cc3311"},
               {"p90", mc->p90_s, "#aa3377"}};
  an__svg_group(&s, "quantiles");
  for (int i = 0; i < 3; i++) {
    double x = LEFT + pw * (days(marks[i].v) - lo) / (hi - lo);
    an__svg_line(&s, x, y0, x, TOP, marks[i].color, 2);
    s.text_fill = marks[i].color;
    an__svg_text(&s, x + 3, TOP + 12 + 14 * i, "start", 11, 0, "%s %.2f d", marks[i].name,
                 days(marks[i].v));
  }
  s.text_fill = NULL;
  an__svg_group_end(&s);
  return an__svg_finish(&s, path, err);
}

int an_failure_plot_sweep(const an_failure_report *r, const char *path, st_err *err)
{
  if (!r->sweep || r->sweep_points < 2)
    return st_err_set(err, ST_EUSAGE, "plot '%s': no interval sweep to plot", path);
  static const char *const colors[] = {"#4477aa", "#ee6677", "#228833", "#ccbb44",
                                       "#66ccee", "#aa3377", "#bbbbbb", "#000000"};
  int ns = r->sweep_scales, np = r->sweep_points;
  double xlo = log10(r->sweep[0].interval_s), xhi = log10(r->sweep[np - 1].interval_s);
  double gmin = 1;
  for (int i = 0; i < ns * np; i++)
    gmin = fmin(gmin, r->sweep[i].goodput);
  double ystep = 0.05, ylo = floor(gmin / ystep) * ystep;
  if (ylo > 0.9)
    ylo = 0.9;
  if (ylo < 0)
    ylo = 0;
  double pw = W - LEFT - RIGHT - 150, ph = H - TOP - BOTTOM, y0 = H - BOTTOM;
#define PX(v) (LEFT + pw * (log10(v) - xlo) / (xhi - xlo))
#define PY(g) (y0 - ph * ((g) - ylo) / (1 - ylo))
  an__svg s;
  char title[600];
  snprintf(title, sizeof title, "Goodput against checkpoint interval: %s on %s", r->workload,
           r->cluster);
  an__svg_begin(&s, W, H, title);
  an__svg_text(&s, (W - 150) / 2, 24, "middle", 16, 0, "Goodput against checkpoint interval");
  an__svg_text(&s, (W - 150) / 2, 44, "middle", 12, 0,
               "%s on %s; checkpoint %.1f s, restart %.0f s (analytic expectation)", r->workload,
               r->cluster, r->p.ckpt_s, r->p.restart_s);
  an__svg_line(&s, LEFT, y0, LEFT + pw, y0, "black", 1);
  an__svg_line(&s, LEFT, y0, LEFT, TOP, "black", 1);
  for (double g = ylo; g <= 1 + 1e-9; g += ystep) {
    double y = PY(g);
    an__svg_line(&s, LEFT - 5, y, LEFT, y, "black", 1);
    an__svg_line(&s, LEFT, y, LEFT + pw, y, "#dddddd", 0.5);
    an__svg_text(&s, LEFT - 8, y + 4, "end", 11, 0, "%.2f", g);
  }
  an__svg_text(&s, LEFT - 55, TOP + ph / 2, "middle", 12, -90, "goodput (training / wall time)");
  for (int e = (int)floor(xlo); e <= (int)ceil(xhi); e++) {
    for (int m = 1; m <= 5; m += (m == 1 ? 1 : 3)) { /* 1, 2, 5 */
      double v = m * pow(10, e);
      if (log10(v) < xlo - 1e-9 || log10(v) > xhi + 1e-9)
        continue;
      double x = PX(v);
      an__svg_line(&s, x, y0, x, y0 + 5, "black", 1);
      an__svg_line(&s, x, y0, x, TOP, "#eeeeee", 0.5);
      an__svg_text(&s, x, y0 + 18, "middle", 11, 0, "%g", v);
    }
  }
  an__svg_text(&s, LEFT + pw / 2, y0 + 40, "middle", 12, 0, "checkpoint interval (s, log scale)");
  for (int c = 0; c < ns; c++) {
    const an_failure_sweep_row *row = &r->sweep[(size_t)c * np];
    const char *color = colors[c % 8];
    char id[32];
    snprintf(id, sizeof id, "mtbf-x%g", row->mtbf_scale);
    an__svg_group(&s, id);
    int best = 0;
    for (int i = 0; i < np; i++) {
      if (row[i].goodput > row[best].goodput)
        best = i;
      if (i > 0)
        an__svg_line(&s, PX(row[i - 1].interval_s), PY(fmax(row[i - 1].goodput, ylo)),
                     PX(row[i].interval_s), PY(fmax(row[i].goodput, ylo)), color, 2);
    }
    char tip[160];
    snprintf(tip, sizeof tip, "job MTBF %.2f h: best %.0f s, goodput %.4f", hours(row->job_mtbf_s),
             row[best].interval_s, row[best].goodput);
    an__svg_rect(&s, PX(row[best].interval_s) - 4, PY(row[best].goodput) - 4, 8, 8, color, tip);
    an__svg_rect(&s, LEFT + pw + 20, TOP + 20 * c, 12, 12, color, NULL);
    an__svg_text(&s, LEFT + pw + 36, TOP + 20 * c + 10, "start", 12, 0, "job MTBF %.2f h",
                 hours(row->job_mtbf_s));
    an__svg_group_end(&s);
  }
#undef PX
#undef PY
  return an__svg_finish(&s, path, err);
}
