/* compare.c — results files side by side: the first run is the baseline
 * (A), every other run gets its change from A as a difference (X - A) and a
 * ratio (X / A).  Only summary numbers are compared, so runs of different
 * sizes compare as well as runs of the same workload on different clusters.
 *
 * A ratio is "n/a" (null in JSON) when A's value is 0 or either value is not
 * a number; a difference is n/a when either value is not a number.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"

typedef struct metric {
  const char *key;   /* JSON key: the an_summary field */
  const char *label; /* text table */
  double scale;      /* text shows value x scale */
  int decimals;
} metric;

static const metric metrics[] = {
    {"num_gpus", "GPUs", 1, 0},
    {"step_time_s", "step time (s)", 1, 6},
    {"tokens_per_s", "tokens/s", 1, 1},
    {"tokens_per_s_per_gpu", "tokens/s per GPU", 1, 1},
    {"model_tflops_per_gpu", "model TFLOP/s per GPU", 1, 1},
    {"mfu", "MFU (%)", 100, 2},
    {"compute_s", "compute (ms/step)", 1e3, 3},
    {"exposed_comm_s", "exposed comm (ms/step)", 1e3, 3},
    {"overlapped_comm_s", "overlapped (ms/step)", 1e3, 3},
    {"bubble_s", "bubble (ms/step)", 1e3, 3},
    {"idle_s", "idle (ms/step)", 1e3, 3},
    {"peak_memory_bytes", "peak memory (GiB)", 1.0 / (1 << 30), 2},
    {"device_memory_bytes", "device memory (GiB)", 1.0 / (1 << 30), 2},
    {"time_to_train_s", "time to train (days)", 1.0 / 86400, 2},
    {"cost_usd", "cost (USD)", 1, 0},
    {"energy_MWh", "energy (MWh)", 1, 1},
};
#define NUM_METRICS (sizeof metrics / sizeof metrics[0])

double an_summary_value(const an_summary *s, const char *key)
{
  if (!strcmp(key, "num_gpus"))
    return s->num_gpus;
  if (!strcmp(key, "iterations"))
    return s->iterations;
#define F(x)                                                                                  \
  if (!strcmp(key, #x))                                                                       \
    return s->x;
  F(step_time_s) F(tokens_per_step) F(tokens_per_s) F(tokens_per_s_per_gpu)
  F(model_flops_per_step) F(model_tflops_per_gpu) F(mfu) F(compute_s) F(exposed_comm_s)
  F(overlapped_comm_s) F(bubble_s) F(idle_s) F(peak_memory_bytes) F(device_memory_bytes)
  F(sim_wall_s) F(events) F(simulated_ranks) F(train_tokens) F(train_steps) F(time_to_train_s)
  F(price_usd_per_gpu_hour) F(cost_usd) F(gpu_busy_fraction) F(power_W) F(pue) F(energy_MWh)
#undef F
  return NAN;
}

static double diff(double a, double b) { return isfinite(a) && isfinite(b) ? b - a : NAN; }
static double ratio(double a, double b)
{
  return isfinite(a) && isfinite(b) && a != 0 ? b / a : NAN;
}

static char run_letter(size_t i) { return i < 26 ? (char)('A' + i) : '?'; }

static void run_name(size_t i, char *buf, size_t n)
{
  if (i < 26)
    snprintf(buf, n, "%c", run_letter(i));
  else
    snprintf(buf, n, "#%zu", i + 1);
}

static void cell(FILE *out, int width, double v, int decimals, int sign)
{
  char b[64];
  if (!isfinite(v))
    snprintf(b, sizeof b, "n/a");
  else
    snprintf(b, sizeof b, sign ? "%+.*f" : "%.*f", decimals, v);
  fprintf(out, " %*s", width, b);
}

#define LABEL_W 24
#define VALUE_W 13
#define RUNS_PER_TABLE 5  /* 24 + 5 x 14 = 94 columns */
#define PAIRS_PER_TABLE 3 /* 24 + 3 x (14 + 9) = 93 columns */

void an_compare_print(const an_results *const *runs, size_t n, FILE *out)
{
  fprintf(out, "runs (A is the baseline):\n");
  for (size_t i = 0; i < n; i++) {
    char nm[16];
    run_name(i, nm, sizeof nm);
    const an_results *r = runs[i];
    fprintf(out, "  %-3s %s: %s on %s (%d GPUs)\n", nm, r->path ? r->path : "?",
            r->workload_name ? r->workload_name : "?", r->cluster_name ? r->cluster_name : "?",
            r->summary.num_gpus);
  }
  for (size_t first = 0; first < n; first += RUNS_PER_TABLE) {
    size_t last = first + RUNS_PER_TABLE < n ? first + RUNS_PER_TABLE : n;
    fprintf(out, "\n  %-*s", LABEL_W - 2, "");
    for (size_t i = first; i < last; i++) {
      char nm[16];
      run_name(i, nm, sizeof nm);
      fprintf(out, " %*s", VALUE_W, nm);
    }
    fprintf(out, "\n");
    for (size_t m = 0; m < NUM_METRICS; m++) {
      fprintf(out, "  %-*s", LABEL_W - 2, metrics[m].label);
      for (size_t i = first; i < last; i++)
        cell(out, VALUE_W, an_summary_value(&runs[i]->summary, metrics[m].key) * metrics[m].scale,
             metrics[m].decimals, 0);
      fprintf(out, "\n");
    }
  }
  for (size_t first = 1; first < n; first += PAIRS_PER_TABLE) {
    size_t last = first + PAIRS_PER_TABLE < n ? first + PAIRS_PER_TABLE : n;
    fprintf(out, "\nchange from A:\n  %-*s", LABEL_W - 2, "");
    for (size_t i = first; i < last; i++) {
      char h1[24], h2[24], nm[16];
      run_name(i, nm, sizeof nm);
      snprintf(h1, sizeof h1, "%s-A", nm);
      snprintf(h2, sizeof h2, "%s/A", nm);
      fprintf(out, " %*s %8s", VALUE_W, h1, h2);
    }
    fprintf(out, "\n");
    for (size_t m = 0; m < NUM_METRICS; m++) {
      fprintf(out, "  %-*s", LABEL_W - 2, metrics[m].label);
      double a = an_summary_value(&runs[0]->summary, metrics[m].key);
      for (size_t i = first; i < last; i++) {
        double b = an_summary_value(&runs[i]->summary, metrics[m].key);
        cell(out, VALUE_W, diff(a, b) * metrics[m].scale, metrics[m].decimals, 1);
        cell(out, 8, ratio(a, b), 4, 0);
      }
      fprintf(out, "\n");
    }
  }
}

static void json_num(FILE *out, double v)
{
  if (isfinite(v))
    fprintf(out, "%.17g", v);
  else
    fputs("null", out);
}

/* {"key":value,...} over all metrics of f(a, b). */
static void json_metrics(FILE *out, const an_summary *a, const an_summary *b,
                         double (*f)(double, double))
{
  fputc('{', out);
  for (size_t m = 0; m < NUM_METRICS; m++) {
    fprintf(out, "%s\"%s\":", m ? "," : "", metrics[m].key);
    json_num(out, f(an_summary_value(a, metrics[m].key), an_summary_value(b, metrics[m].key)));
  }
  fputc('}', out);
}

static double second(double a, double b)
{
  (void)a;
  return b;
}

void an_compare_print_json(const an_results *const *runs, size_t n, FILE *out)
{
  fputs("{\"baseline\":0,\"runs\":[", out);
  for (size_t i = 0; i < n; i++) {
    const an_results *r = runs[i];
    fputs(i ? ",{\"path\":" : "{\"path\":", out);
    st_json_str(out, r->path);
    fputs(",\"workload\":", out);
    st_json_str(out, r->workload_name);
    fputs(",\"cluster\":", out);
    st_json_str(out, r->cluster_name);
    fputs(",\"values\":", out);
    json_metrics(out, &r->summary, &r->summary, second);
    fputs(",\"delta\":", out);
    json_metrics(out, &runs[0]->summary, &r->summary, diff);
    fputs(",\"ratio\":", out);
    json_metrics(out, &runs[0]->summary, &r->summary, ratio);
    fputc('}', out);
  }
  fputs("]}\n", out);
}
