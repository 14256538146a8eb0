/* summary.c — the headline numbers of a run, from the workload's metadata,
 * the cluster's device and what the run measured.
 *
 * Definitions (docs/results-format.md repeats them):
 *   step_time_s          largest rank finish time / iterations
 *   tokens_per_s         tokens_per_step / step_time_s
 *   model_tflops_per_gpu model FLOPs per step / step_time_s / num_gpus / 1e12
 *   mfu                  model_tflops_per_gpu / device dense peak of the
 *                        workload's dtype (node groups: the mean peak of the
 *                        job's GPUs)
 *   compute_s, exposed_comm_s, overlapped_comm_s, bubble_s, idle_s
 *                        means over ranks, per step
 *   offload_s, offload_exposed_s
 *                        the same, for host-memory offload (NaN without)
 *   pod_exposed_s        (pods) mean over ranks per step of the exposed time
 *                        while a transfer crossing pods ran
 *   pod_link_bytes       (pods) bytes out of all pods per step
 *   pod_link_busy_s      (pods) the busiest pod link's bytes / its rate, per step
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"

/* The inter-pod links' figures per step: NaN without pods. */

/* "  (TEXT TAIL" in lines of at most 100 columns, broken after ", ". */
static void print_wrapped(FILE *out, const char *text, const char *tail)
{
  char buf[512];
  snprintf(buf, sizeof buf, "%s%s", text, tail);
  const char *p = buf;
  int first = 1;
  while (*p) {
    size_t room = 100 - 3, n = strlen(p);
    if (n > room) { /* the last ", " that fits, or a hard cut */
      size_t cut = 0;
      for (size_t i = 0; i + 1 < room; i++)
        if (p[i] == ',' && p[i + 1] == ' ')
          cut = i + 1;
      n = cut ? cut : room;
    }
    fprintf(out, "%s%.*s\n", first ? "  (" : "   ", (int)n, p);
    p += n;
    while (*p == ' ')
      p++;
    first = 0;
  }
}

static void pods_compute(const plat_cluster *cl, const an_measured *m, an_summary *s)
{
  s->pod_exposed_s = s->pod_link_bytes = s->pod_link_busy_s = NAN;
  if (!cl || cl->num_pods == 0 || m->num_pods != cl->num_pods || !m->pod_out_bytes)
    return;
  int it = m->iterations > 0 ? m->iterations : 1;
  double bytes = 0, busy = 0;
  for (int k = 0; k < m->num_pods; k++) {
    double cap = cl->pods[k].dc_links * cl->pods[k].dc_link_Bps;
    bytes += m->pod_out_bytes[k];
    busy = fmax(busy, fmax(m->pod_out_bytes[k], m->pod_in_bytes[k]) / cap);
  }
  s->pod_exposed_s = m->num_ranks > 0 ? m->pod_exposed_s / ((double)m->num_ranks * it) : 0;
  s->pod_link_bytes = bytes / it;
  s->pod_link_busy_s = busy / it;
}

void an_summary_compute(const wl_workload *wl, const plat_cluster *cl, const an_measured *m,
                        an_summary *s)
{
  memset(s, 0, sizeof *s);
  int it = m->iterations > 0 ? m->iterations : 1;
  s->num_gpus = wl->num_ranks;
  s->iterations = it;
  s->step_time_s = m->step_time_s;
  s->tokens_per_step = wl->meta.tokens_per_step;
  s->tokens_per_s = s->tokens_per_step / s->step_time_s;
  s->tokens_per_s_per_gpu = s->tokens_per_s / s->num_gpus;
  s->model_flops_per_step = wl->meta.model_flops_per_step;
  s->model_tflops_per_gpu = s->model_flops_per_step / s->step_time_s / s->num_gpus / 1e12;
  double peak = NAN; /* per GPU, the mean over the job's GPUs (node groups differ) */
  int dt = wl->meta.dtype;
  if (cl && dt >= 0 && dt < WL_DTYPE_COUNT && plat_gpus_min(cl, s->num_gpus, plat_dev_peak, &dt) > 0)
    peak = plat_gpus_sum(cl, s->num_gpus, plat_dev_peak, &dt) / s->num_gpus;
  s->mfu = s->model_tflops_per_gpu * 1e12 / peak;
  double c = 0, e = 0, o = 0, b = 0, i = 0;
  for (size_t k = 0; k < m->num_ranks; k++) {
    c += m->ranks[k].compute_s;
    e += m->ranks[k].exposed_comm_s;
    o += m->ranks[k].overlapped_comm_s;
    b += m->ranks[k].bubble_s;
    i += m->ranks[k].idle_s;
  }
  double n = m->num_ranks > 0 ? (double)m->num_ranks * it : 1;
  s->compute_s = c / n;
  s->exposed_comm_s = e / n;
  s->overlapped_comm_s = o / n;
  s->bubble_s = b / n;
  s->idle_s = i / n;
  s->peak_memory_bytes = wl->meta.peak_memory_bytes;
  /* the least of the job's devices: each group is checked against its own
   * (drv_run), the summary names the tightest */
  s->device_memory_bytes = cl ? plat_gpus_min(cl, s->num_gpus, plat_dev_hbm, NULL) : NAN;
  s->sim_wall_s = m->wall_s;
  s->events = (double)m->events;
  s->simulated_ranks = m->simulated_ranks > 0 ? (double)m->simulated_ranks : (double)m->num_ranks;
  snprintf(s->reduction, sizeof s->reduction, "%s", m->reduction[0] ? m->reduction : "none");
  /* no token budget yet (an_train_compute) */
  s->train_tokens = s->train_steps = s->time_to_train_s = NAN;
  s->price_usd_per_gpu_hour = s->cost_usd = NAN;
  s->gpu_busy_fraction = s->power_W = s->pue = s->energy_MWh = NAN;
  /* no critical path unless asked for (an_summary_critical) */
  s->slowest_rank = s->num_critical_ranks = s->slowest_wait_s = NAN;
  s->max_wait_rank = s->max_wait_s = NAN;
  /* offload figures only for workloads that use the host */
  s->offload_s = s->offload_exposed_s = NAN;
  if (wl_workload_host_use(wl)) {
    double of = 0, ox = 0;
    for (size_t k = 0; k < m->num_ranks; k++) {
      of += m->ranks[k].offload_s;
      ox += m->ranks[k].offload_exposed_s;
    }
    s->offload_s = of / n;
    s->offload_exposed_s = ox / n;
  }
  pods_compute(cl, m, s);
}

void an_summary_critical(an_summary *s, const an_rank_row *rows, size_t n)
{
  s->num_critical_listed = 0;
  if (n == 0)
    return;
  int it = s->iterations > 0 ? s->iterations : 1;
  size_t lo = 0, hi = 0;
  for (size_t k = 1; k < n; k++) {
    double w = rows[k].idle_s + rows[k].bubble_s;
    if (w < rows[lo].idle_s + rows[lo].bubble_s)
      lo = k;
    if (w > rows[hi].idle_s + rows[hi].bubble_s)
      hi = k;
  }
  double least = rows[lo].idle_s + rows[lo].bubble_s;
  double tol = AN_CRITICAL_TOL * (isfinite(s->step_time_s) ? s->step_time_s * it : 0);
  size_t crit = 0;
  for (size_t k = 0; k < n; k++)
    if (rows[k].idle_s + rows[k].bubble_s <= least + tol) {
      if (s->num_critical_listed < AN_CRITICAL_LIST)
        s->critical_ranks[s->num_critical_listed++] = rows[k].rank;
      crit++;
    }
  s->slowest_rank = rows[lo].rank;
  s->num_critical_ranks = (double)crit;
  s->slowest_wait_s = least / it;
  s->max_wait_rank = rows[hi].rank;
  s->max_wait_s = (rows[hi].idle_s + rows[hi].bubble_s) / it;
}

/* %.17g round-trips a double exactly, so report --json reprints the same numbers. */
static void num(FILE *out, const char *key, double v, int first)
{
  if (isfinite(v))
    fprintf(out, "%s\"%s\":%.17g", first ? "" : ",", key, v);
  else
    fprintf(out, "%s\"%s\":null", first ? "" : ",", key);
}

void an_summary_print_json(const an_summary *s, FILE *out)
{
  fprintf(out, "{\"num_gpus\":%d", s->num_gpus);
  num(out, "step_time_s", s->step_time_s, 0);
  num(out, "tokens_per_step", s->tokens_per_step, 0);
  num(out, "tokens_per_s", s->tokens_per_s, 0);
  num(out, "tokens_per_s_per_gpu", s->tokens_per_s_per_gpu, 0);
  num(out, "model_flops_per_step", s->model_flops_per_step, 0);
  num(out, "model_tflops_per_gpu", s->model_tflops_per_gpu, 0);
  num(out, "mfu", s->mfu, 0);
  num(out, "compute_s", s->compute_s, 0);
  num(out, "exposed_comm_s", s->exposed_comm_s, 0);
  num(out, "overlapped_comm_s", s->overlapped_comm_s, 0);
  num(out, "bubble_s", s->bubble_s, 0);
  num(out, "idle_s", s->idle_s, 0);
  num(out, "peak_memory_bytes", s->peak_memory_bytes, 0);
  num(out, "device_memory_bytes", s->device_memory_bytes, 0);
  fprintf(out, ",\"iterations\":%d", s->iterations);
  num(out, "sim_wall_s", s->sim_wall_s, 0);
  num(out, "events", s->events, 0);
  num(out, "simulated_ranks", s->simulated_ranks, 0);
  fputs(",\"reduction\":", out);
  st_json_str(out, s->reduction);
  num(out, "train_tokens", s->train_tokens, 0);
  num(out, "train_steps", s->train_steps, 0);
  num(out, "time_to_train_s", s->time_to_train_s, 0);
  num(out, "price_usd_per_gpu_hour", s->price_usd_per_gpu_hour, 0);
  num(out, "cost_usd", s->cost_usd, 0);
  num(out, "gpu_busy_fraction", s->gpu_busy_fraction, 0);
  num(out, "power_W", s->power_W, 0);
  num(out, "pue", s->pue, 0);
  num(out, "energy_MWh", s->energy_MWh, 0);
  if (isfinite(s->offload_s)) { /* only with offload: other runs print as before */
    num(out, "offload_s", s->offload_s, 0);
    num(out, "offload_exposed_s", s->offload_exposed_s, 0);
  }
  if (isfinite(s->slowest_rank)) { /* only with stragglers: other runs print as before */
    num(out, "slowest_rank", s->slowest_rank, 0);
    fputs(",\"critical_ranks\":[", out);
    for (int i = 0; i < s->num_critical_listed; i++)
      fprintf(out, "%s%d", i ? "," : "", (int)s->critical_ranks[i]);
    fputc(']', out);
    num(out, "num_critical_ranks", s->num_critical_ranks, 0);
    num(out, "slowest_wait_s", s->slowest_wait_s, 0);
    num(out, "max_wait_rank", s->max_wait_rank, 0);
    num(out, "max_wait_s", s->max_wait_s, 0);
  }
  if (isfinite(s->pod_link_bytes)) { /* only on a cluster of pods */
    num(out, "pod_exposed_s", s->pod_exposed_s, 0);
    num(out, "pod_link_bytes", s->pod_link_bytes, 0);
    num(out, "pod_link_busy_s", s->pod_link_busy_s, 0);
  }
  fprintf(out, "}\n");
}

static void row(FILE *out, const char *label, int decimals, double v, const char *unit)
{
  if (!isfinite(v)) {
    fprintf(out, "  %-24s %14s\n", label, "n/a");
    return;
  }
  char buf[64];
  snprintf(buf, sizeof buf, "%.*f", decimals, v);
  fprintf(out, "  %-24s %14s %s\n", label, buf, unit);
}

/* A token count with an SI suffix: 1.5e13 -> "15T", 3e11 -> "300B". */
static void si_tokens(double v, char *buf, size_t n)
{
  static const struct {
    double scale;
    const char *suffix;
  } si[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}, {1, ""}};
  for (size_t i = 0; i < sizeof si / sizeof si[0]; i++)
    if (v >= si[i].scale || si[i].scale == 1) {
      snprintf(buf, n, "%.4g%s", v / si[i].scale, si[i].suffix);
      return;
    }
}

/* The training block: steps, time, cost, power, energy for the budget. */
static void print_train(const an_summary *s, FILE *out)
{
  char t[32], unit[96];
  si_tokens(s->train_tokens, t, sizeof t);
  fprintf(out, "  to train on %s tokens (steady-state steps, docs/cost.md):\n", t);
  row(out, "  steps", 0, s->train_steps, "");
  snprintf(unit, sizeof unit, "days (%.1f hours)", s->time_to_train_s / 3600);
  row(out, "  time to train", 2, s->time_to_train_s / 86400, unit);
  snprintf(unit, sizeof unit, "USD (%.4g USD per GPU-hour)", s->price_usd_per_gpu_hour);
  row(out, "  cost", 0, s->cost_usd, unit);
  snprintf(unit, sizeof unit, "kW (GPUs %.1f%% busy)", s->gpu_busy_fraction * 100);
  row(out, "  mean IT power", 1, s->power_W / 1e3, unit);
  snprintf(unit, sizeof unit, "MWh (PUE %.2f)", s->pue);
  row(out, "  energy", 3, s->energy_MWh, unit);
}

void an_summary_print_text(const an_summary *s, const char *workload_name,
                           const char *cluster_name, FILE *out)
{
  fprintf(out, "simtrain prediction: %s on %s (%d GPUs)\n", workload_name ? workload_name : "?",
          cluster_name ? cluster_name : "?", s->num_gpus);
  row(out, "step time", 6, s->step_time_s, "s");
  row(out, "tokens per step", 0, s->tokens_per_step, "");
  row(out, "throughput", 1, s->tokens_per_s, "tokens/s");
  row(out, "per GPU", 1, s->tokens_per_s_per_gpu, "tokens/s/GPU");
  row(out, "model TFLOP/s per GPU", 1, s->model_tflops_per_gpu, "TFLOP/s");
  row(out, "MFU", 1, s->mfu * 100, "%");
  fprintf(out, "  per rank, mean per step:\n");
  row(out, "  compute", 6, s->compute_s, "s");
  row(out, "  exposed communication", 6, s->exposed_comm_s, "s");
  row(out, "  overlapped comm.", 6, s->overlapped_comm_s, "s");
  row(out, "  pipeline bubble", 6, s->bubble_s, "s");
  if (isfinite(s->offload_s)) /* its own bucket, between exposed comm. and bubble */
    row(out, "  exposed offload", 6, s->offload_exposed_s, "s");
  row(out, "  idle", 6, s->idle_s, "s");
  if (isfinite(s->offload_s)) {
    char unit[96];
    snprintf(unit, sizeof unit, "s (%.1f%% of the step; copies to and from host memory, "
             "the CPU's step)", 100 * s->offload_s / s->step_time_s);
    row(out, "  offload, in all", 6, s->offload_s, unit);
  }
  if (isfinite(s->peak_memory_bytes)) {
    char a[32], b[32];
    fprintf(out, "  %-24s %14s of %s\n", "peak memory per GPU",
            st_format_bytes(s->peak_memory_bytes, a, sizeof a),
            st_format_bytes(s->device_memory_bytes, b, sizeof b));
  }
  if (isfinite(s->train_tokens))
    print_train(s, out);
  if (isfinite(s->slowest_rank)) {
    fprintf(out, "  %-24s rank %.0f", "critical path", s->slowest_rank);
    if (s->num_critical_ranks > 1)
      fprintf(out, " and %.0f more", s->num_critical_ranks - 1);
    fprintf(out, " (waited %.6f s per step); rank %.0f waited longest for it, %.6f s per step\n",
            s->slowest_wait_s, s->max_wait_rank, s->max_wait_s);
  }
  if (isfinite(s->pod_link_bytes)) {
    char unit[64], b[32];
    fprintf(out, "  inter-pod links, per step:\n");
    snprintf(unit, sizeof unit, "s (%.1f%% of the step), mean per rank",
             s->pod_exposed_s / s->step_time_s * 100);
    row(out, "  exposed, crossing pods", 6, s->pod_exposed_s, unit);
    fprintf(out, "  %-24s %14s\n", "  bytes between pods",
            st_format_bytes(s->pod_link_bytes, b, sizeof b));
    snprintf(unit, sizeof unit, "s (%.1f%% of the step), the busiest pod link",
             s->pod_link_busy_s / s->step_time_s * 100);
    row(out, "  busy", 6, s->pod_link_busy_s, unit);
  }
  fprintf(out, "  (simulated in %.2f s wall, %.0f activities)\n", s->sim_wall_s, s->events);
  if (isfinite(s->simulated_ranks) && s->simulated_ranks < s->num_gpus)
    print_wrapped(out, s->reduction, ": the others are exact copies)");
}
