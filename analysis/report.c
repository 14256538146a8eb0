/* report.c — a results file for people: the summary, the per-rank breakdown
 * (every rank when there are few, a distribution and the slowest ranks when
 * there are many), busy time per phase and transfer time per communicator
 * kind, the collectives that took the most time and the busiest links with
 * the collectives whose flows crossed them.  Every line fits in 100 columns.
 *
 * Per-rank times are shown per step (the file holds them for the whole run:
 * divided by the iterations), in milliseconds, so they add up the way the
 * summary's do: compute + exposed + bubble + idle = the step time (a rank
 * that finishes early is idle until the step ends; "finish" is its last op).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_int.h"
#include "analysis.h"

#define FEW_RANKS 16    /* up to this many ranks, list them all */
#define SLOWEST_SHOWN 5
#define TOP_COLLS 10
#define TOP_LINKS 5
#define USES_PER_LINK 3 /* collectives named under each busiest link */

static double per_step_ms(const an_results *r, double s)
{
  int it = r->summary.iterations > 0 ? r->summary.iterations : 1;
  return s / it * 1e3;
}

static void rank_header(FILE *out)
{
  fprintf(out, "  %6s %5s %12s %12s %12s %12s %12s %12s\n", "rank", "gpu", "compute", "exposed",
          "overlapped", "bubble", "idle", "finish");
}

static void rank_line(const an_results *r, const an_rank_row *k, FILE *out)
{
  fprintf(out, "  %6d %5d %12.3f %12.3f %12.3f %12.3f %12.3f %12.3f\n", k->rank, k->host,
          per_step_ms(r, k->compute_s), per_step_ms(r, k->exposed_comm_s),
          per_step_ms(r, k->overlapped_comm_s), per_step_ms(r, k->bubble_s),
          per_step_ms(r, k->idle_s), per_step_ms(r, k->finish_s));
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Slowest first; ties by rank, so the order is deterministic. */
static int cmp_finish_desc(const void *a, const void *b)
{
  const an_rank_row *x = *(const an_rank_row *const *)a, *y = *(const an_rank_row *const *)b;
  if (x->finish_s != y->finish_s)
    return x->finish_s > y->finish_s ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

static void rank_distribution(const an_results *r, FILE *out)
{
  size_t n = r->num_ranks;
  double *v = malloc(n * sizeof *v);
  const an_rank_row **by = malloc(n * sizeof *by);
  if (!v || !by) {
    fprintf(out, "  (out of memory for the per-rank distribution)\n");
    free(v);
    free(by);
    return;
  }
  static const struct {
    const char *label;
    size_t off;
  } cols[] = {
      {"compute", offsetof(an_rank_row, compute_s)},
      {"exposed comm.", offsetof(an_rank_row, exposed_comm_s)},
      {"overlapped comm.", offsetof(an_rank_row, overlapped_comm_s)},
      {"bubble", offsetof(an_rank_row, bubble_s)},
      {"idle", offsetof(an_rank_row, idle_s)},
      {"finish", offsetof(an_rank_row, finish_s)},
  };
  fprintf(out, "  %-18s %12s %12s %12s %12s\n", "", "min", "median", "mean", "max");
  for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
      memcpy(&v[i], (const char *)&r->ranks[i] + cols[c].off, sizeof(double));
      sum += v[i];
    }
    qsort(v, n, sizeof *v, cmp_double);
    double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    fprintf(out, "  %-18s %12.3f %12.3f %12.3f %12.3f\n", cols[c].label, per_step_ms(r, v[0]),
            per_step_ms(r, med), per_step_ms(r, sum / n), per_step_ms(r, v[n - 1]));
  }
  for (size_t i = 0; i < n; i++)
    by[i] = &r->ranks[i];
  qsort(by, n, sizeof *by, cmp_finish_desc);
  fprintf(out, "\n  slowest ranks (by finish), per step (ms):\n");
  rank_header(out);
  for (size_t i = 0; i < n && i < SLOWEST_SHOWN; i++)
    rank_line(r, by[i], out);
  free(v);
  free(by);
}

static void rank_section(const an_results *r, const int32_t *sel, size_t nsel, FILE *out)
{
  if (r->num_ranks == 0)
    return;
  if (sel) {
    fprintf(out, "\nper rank, per step (ms), %zu of %zu ranks:\n", nsel, r->num_ranks);
    rank_header(out);
    for (size_t j = 0; j < nsel; j++)
      for (size_t i = 0; i < r->num_ranks; i++)
        if (r->ranks[i].rank == sel[j])
          rank_line(r, &r->ranks[i], out);
    return;
  }
  fprintf(out, "\nper rank, per step (ms), %zu ranks:\n", r->num_ranks);
  if (r->num_ranks <= FEW_RANKS) {
    rank_header(out);
    for (size_t i = 0; i < r->num_ranks; i++)
      rank_line(r, &r->ranks[i], out);
  } else {
    rank_distribution(r, out);
  }
}

/* min / mean / max over ranks of one per-rank time (whole run) at byte offset off */
static void spread(const an_results *r, size_t off, double *mn, double *mean, double *mx)
{
  double sum = 0;
  for (size_t i = 0; i < r->num_ranks; i++) {
    double v;
    memcpy(&v, (const char *)&r->ranks[i] + off, sizeof v);
    if (i == 0 || v < *mn)
      *mn = v;
    if (i == 0 || v > *mx)
      *mx = v;
    sum += v;
  }
  *mean = sum / r->num_ranks;
}

/* Busy time per phase and transfer time per communicator kind, over ranks;
 * rows where every rank has zero are left out (the workload does not say). */
static void phase_kind_section(const an_results *r, FILE *out)
{
  if (r->num_ranks == 0)
    return;
  int header = 0;
  for (int k = 0; k < WL_PHASE_COUNT + WL_COMM_KIND_COUNT; k++) {
    int is_phase = k < WL_PHASE_COUNT;
    int i = is_phase ? k : k - WL_PHASE_COUNT;
    size_t off = is_phase ? offsetof(an_rank_row, phase_s) + (size_t)i * sizeof(double)
                          : offsetof(an_rank_row, comm_kind_s) + (size_t)i * sizeof(double);
    double mn = 0, mean = 0, mx = 0;
    spread(r, off, &mn, &mean, &mx);
    if (!(mx > 0))
      continue;
    if (!header) {
      fprintf(out, "\nby phase and communicator kind, per step (ms):\n");
      fprintf(out, "  %-28s %12s %12s %12s\n", "", "min", "mean", "max");
      header = 1;
    }
    char label[64];
    if (is_phase)
      snprintf(label, sizeof label, "busy in %s", i == WL_PHASE_NONE ? "no phase" : wl_phase_name(i));
    else
      snprintf(label, sizeof label, "transfer on %s comms", wl_comm_kind_name(i));
    fprintf(out, "  %-28s %12.3f %12.3f %12.3f\n", label, per_step_ms(r, mn),
            per_step_ms(r, mean), per_step_ms(r, mx));
  }
  if (header)
    fprintf(out, "  (busy: some op of the phase running; transfer: hidden or not, so rows can\n"
                 "  overlap and need not add up to the step)\n");
}

/* Collectives grouped by (op, communicator, bytes). */
typedef struct coll_group {
  const an_coll_row *first;
  size_t count;
  double total_s, wait_s, busbw_sum;
} coll_group;

static int cmp_coll_key(const void *a, const void *b)
{
  const an_coll_row *x = *(const an_coll_row *const *)a, *y = *(const an_coll_row *const *)b;
  int c = strcmp(x->op, y->op);
  if (!c)
    c = strcmp(x->comm, y->comm);
  if (!c)
    c = (x->bytes > y->bytes) - (x->bytes < y->bytes);
  return c;
}

static int cmp_group_time(const void *a, const void *b)
{
  const coll_group *x = a, *y = b;
  if (x->total_s != y->total_s)
    return x->total_s > y->total_s ? -1 : 1;
  return cmp_coll_key(&x->first, &y->first);
}

static void coll_section(const an_results *r, FILE *out)
{
  size_t n = r->num_colls;
  if (n == 0)
    return;
  const an_coll_row **idx = malloc(n * sizeof *idx);
  coll_group *g = calloc(n, sizeof *g);
  if (!idx || !g) {
    fprintf(out, "  (out of memory for the collectives table)\n");
    free(idx);
    free(g);
    return;
  }
  for (size_t i = 0; i < n; i++)
    idx[i] = &r->colls[i];
  qsort(idx, n, sizeof *idx, cmp_coll_key);
  size_t ng = 0;
  for (size_t i = 0; i < n; i++) {
    if (i == 0 || cmp_coll_key(&idx[i - 1], &idx[i]) != 0)
      g[ng++].first = idx[i];
    coll_group *c = &g[ng - 1];
    c->count++;
    c->total_s += idx[i]->end_s - idx[i]->start_s;
    c->wait_s += idx[i]->start_s - idx[i]->first_arrival_s;
    c->busbw_sum += idx[i]->busbw_GBps;
  }
  qsort(g, ng, sizeof *g, cmp_group_time);
  fprintf(out, "\ncollectives by transfer time (%zu calls in %zu groups; whole run):\n", n, ng);
  fprintf(out, "  %-13s %-18s %5s %10s %5s %10s %9s %8s %10s\n", "op", "communicator", "ranks",
          "size", "calls", "total ms", "mean ms", "wait ms", "busbw GB/s");
  for (size_t i = 0; i < ng && i < TOP_COLLS; i++) {
    const an_coll_row *c = g[i].first;
    char size[32];
    fprintf(out, "  %-13.13s %-18.18s %5d %10s %5zu %10.3f %9.3f %8.3f %10.1f\n", c->op, c->comm,
            c->nranks, st_format_bytes(c->bytes, size, sizeof size), g[i].count,
            g[i].total_s * 1e3, g[i].total_s / g[i].count * 1e3, g[i].wait_s / g[i].count * 1e3,
            g[i].busbw_sum / g[i].count);
  }
  if (ng > TOP_COLLS)
    fprintf(out, "  ... %zu more groups\n", ng - TOP_COLLS);
  free(idx);
  free(g);
}

static int cmp_link_busy(const void *a, const void *b)
{
  const an_link_row *x = *(const an_link_row *const *)a,
                       *y = *(const an_link_row *const *)b;
  if (x->busy_s != y->busy_s)
    return x->busy_s > y->busy_s ? -1 : 1;
  return strcmp(x->name, y->name);
}

size_t an__link_first_use(const an_results *r, size_t li)
{
  size_t lo = 0, hi = r->num_link_usage;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if ((size_t)r->link_usage[mid].link < li)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Under a link: the collectives whose flows crossed it, most bytes first. */
static void link_uses(const an_results *r, size_t li, double link_bytes, FILE *out)
{
  size_t i = an__link_first_use(r, li), shown = 0;
  double rest = 0;
  size_t more = 0;
  for (; i < r->num_link_usage && (size_t)r->link_usage[i].link == li; i++) {
    const an_link_usage_row *u = &r->link_usage[i];
    if (shown == USES_PER_LINK) {
      rest += u->bytes;
      more++;
      continue;
    }
    char b[32], share[16];
    if (link_bytes > 0)
      snprintf(share, sizeof share, "%.1f %%", u->bytes / link_bytes * 100);
    else
      snprintf(share, sizeof share, "n/a");
    fprintf(out, "      %-13.13s %-40.40s %-5.5s %11s %8s\n", u->op, u->comm, u->comm_kind,
            st_format_bytes(u->bytes, b, sizeof b), share);
    shown++;
  }
  if (more) {
    char b[32];
    fprintf(out, "      ... %zu more (%s)\n", more, st_format_bytes(rest, b, sizeof b));
  }
}

static void link_section(const an_results *r, FILE *out)
{
  size_t n = r->num_links;
  if (n == 0)
    return;
  const an_link_row **by = malloc(n * sizeof *by);
  if (!by)
    return;
  for (size_t i = 0; i < n; i++)
    by[i] = &r->links[i];
  qsort(by, n, sizeof *by, cmp_link_busy);
  double run_s = r->summary.step_time_s * (r->summary.iterations > 0 ? r->summary.iterations : 1);
  fprintf(out, "\nbusiest links (%zu links; whole run)%s:\n", n,
          r->num_link_usage ? ", with the collectives that used them" : "");
  fprintf(out, "  %-36s %11s %11s %11s %7s %7s\n", "link", "bandwidth", "carried", "busy ms",
          "busy %", "peak %");
  for (size_t i = 0; i < n && i < TOP_LINKS; i++) {
    const an_link_row *l = by[i];
    char bw[32], b[32], share[16];
    snprintf(bw, sizeof bw, "%.1f GB/s", l->bandwidth_Bps / 1e9);
    if (run_s > 0 && isfinite(run_s))
      snprintf(share, sizeof share, "%.1f", l->busy_s / run_s * 100);
    else
      snprintf(share, sizeof share, "n/a");
    fprintf(out, "  %-36.36s %11s %11s %11.3f %7s %7.1f\n", l->name, bw,
            st_format_bytes(l->bytes, b, sizeof b), l->busy_s * 1e3, share, l->peak_util * 100);
    link_uses(r, (size_t)(l - r->links), l->bytes, out);
  }
  free(by);
}

void an_report_print_ranks(const an_results *r, const int32_t *ranks, size_t num_ranks, FILE *out)
{
  an_summary_print_text(&r->summary, r->workload_name, r->cluster_name, out);
  fprintf(out, "  (results '%s', simtrain %s, %s)\n", r->path ? r->path : "?",
          r->version ? r->version : "?", r->created_utc ? r->created_utc : "?");
  rank_section(r, ranks, num_ranks, out);
  phase_kind_section(r, out);
  coll_section(r, out);
  link_section(r, out);
  if (r->replay) {
    fprintf(out, "\n");
    an_replay_print_text(r->replay, ranks, num_ranks, out);
  }
  if (r->num_jobs) {
    fprintf(out, "\nJobs sharing the fabric\n");
    an_jobs_print_text(r->jobs, (int)r->num_jobs, r->shared_links, r->num_shared_links, out);
  }
}
