/* jobs.c — jobs sharing a fabric: which links they fought over, and the
 * per-job table (docs/jobs.md).
 *
 * The engine records, per link, the bytes each communicator's collectives
 * (and send/recv pairs) moved over it (an_measured.usage, by link).  A
 * communicator belongs to one job, so a link's bytes split by job; a link
 * is shared when more than one job moved bytes over it.  Shared links are
 * ranked by all their bytes, ties by link order, so the list is the same
 * for the same run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

static int by_bytes(const void *a, const void *b)
{
  const an_shared_link *x = a, *y = b;
  if (x->bytes != y->bytes)
    return x->bytes > y->bytes ? -1 : 1;
  return 0; /* ties: by_bytes_then_link */
}

typedef struct ranked {
  an_shared_link l;
  size_t link;
} ranked;

static int by_bytes_then_link(const void *a, const void *b)
{
  const ranked *x = a, *y = b;
  int c = by_bytes(&x->l, &y->l);
  return c ? c : (x->link < y->link ? -1 : x->link > y->link);
}

int an_jobs_shared_links(const an_measured *m, const int32_t *comm_job, int num_comms,
                         const char *const *names, int num_jobs, size_t top,
                         an_shared_link **out, size_t *n, st_err *err)
{
  *out = NULL;
  *n = 0;
  if (num_jobs > AN_JOBS_MAX)
    return st_err_set(err, ST_EUSAGE, "%d jobs: at most %d share a fabric", num_jobs, AN_JOBS_MAX);
  ranked *v = calloc(m->num_links + 1, sizeof *v);
  if (!v)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  for (size_t i = 0; i < m->num_links; i++)
    v[i].link = i;
  for (size_t u = 0; u < m->num_usage && m->usage; u++) {
    const an_usage_rec *r = &m->usage[u];
    if (r->link < 0 || (size_t)r->link >= m->num_links || r->comm < 0 || r->comm >= num_comms)
      continue;
    int j = comm_job[r->comm];
    if (j < 0 || j >= num_jobs || !(r->bytes > 0))
      continue;
    an_shared_link *l = &v[r->link].l;
    l->job_mask |= 1ull << j;
    l->job_bytes[j] += r->bytes;
    l->bytes += r->bytes;
  }
  size_t k = 0;
  for (size_t i = 0; i < m->num_links; i++)
    if (v[i].l.job_mask & (v[i].l.job_mask - 1))
      v[k++] = v[i];
  qsort(v, k, sizeof *v, by_bytes_then_link);
  if (top && k > top)
    k = top;
  an_shared_link *res = calloc(k + 1, sizeof *res);
  if (!res) {
    free(v);
    return st_err_set(err, ST_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < k; i++) {
    res[i] = v[i].l;
    snprintf(res[i].name, sizeof res[i].name, "%s", m->links[v[i].link].name);
    size_t used = 0;
    for (int j = 0; j < num_jobs; j++)
      if (res[i].job_mask >> j & 1) {
        int w = snprintf(res[i].jobs + used, sizeof res[i].jobs - used, "%s%s", used ? "," : "",
                         names[j]);
        if (w < 0 || (size_t)w >= sizeof res[i].jobs - used)
          break;
        used += (size_t)w;
      }
  }
  free(v);
  *out = res;
  *n = k;
  return ST_OK;
}

static const char *ms(double s, char *b, size_t n)
{
  if (isfinite(s))
    snprintf(b, n, "%.3f ms", s * 1e3);
  else
    snprintf(b, n, "n/a");
  return b;
}

void an_jobs_print_text(const an_job_row *jobs, int num_jobs, const an_shared_link *links,
                        size_t num_links, FILE *out)
{
  fprintf(out, "%-16s %-10s %6s  %-20s %14s %14s %9s\n", "job", "kind", "gpus", "placed on",
          "alone", "together", "slowdown");
  for (int j = 0; j < num_jobs; j++) {
    const an_job_row *r = &jobs[j];
    char a[32], t[32];
    fprintf(out, "%-16s %-10s %6d  %-20.20s %14s %14s %8.4fx\n", r->name, r->kind, r->num_gpus,
            r->gpus, ms(r->step_time_alone_s, a, sizeof a), ms(r->step_time_together_s, t, sizeof t),
            r->slowdown);
  }
  fputc('\n', out);
  if (!num_links) {
    fprintf(out, "no link carried bytes of more than one job\n");
    return;
  }
  fprintf(out, "links they fought over (most bytes first):\n");
  fprintf(out, "  %-32s %12s  %s\n", "link", "bytes", "jobs");
  for (size_t i = 0; i < num_links; i++) {
    char b[32];
    fprintf(out, "  %-32s %12s  %s\n", links[i].name, st_format_bytes(links[i].bytes, b, sizeof b),
            links[i].jobs);
  }
}

void an_jobs_print_json(const an_job_row *jobs, int num_jobs, const an_shared_link *links,
                        size_t num_links, double step_time_s, FILE *out)
{
  char b[40];
  fputs("{\"jobs\":[", out);
  for (int j = 0; j < num_jobs; j++) {
    const an_job_row *r = &jobs[j];
    fputs(j ? ",{\"name\":" : "{\"name\":", out);
    st_json_str(out, r->name);
    fputs(",\"kind\":", out);
    st_json_str(out, r->kind);
    fputs(",\"gpus\":", out);
    st_json_str(out, r->gpus);
    fprintf(out, ",\"num_gpus\":%d", r->num_gpus);
    fprintf(out, ",\"step_time_alone_s\":%s", st_json_num(r->step_time_alone_s, b, sizeof b));
    fprintf(out, ",\"step_time_together_s\":%s",
            st_json_num(r->step_time_together_s, b, sizeof b));
    fprintf(out, ",\"slowdown\":%s}", st_json_num(r->slowdown, b, sizeof b));
  }
  fputs("],\"shared_links\":[", out);
  for (size_t i = 0; i < num_links; i++) {
    const an_shared_link *l = &links[i];
    fputs(i ? ",{\"name\":" : "{\"name\":", out);
    st_json_str(out, l->name);
    fputs(",\"jobs\":[", out);
    int first = 1;
    for (int j = 0; j < num_jobs; j++)
      if (l->job_mask >> j & 1) {
        if (!first)
          fputc(',', out);
        st_json_str(out, jobs[j].name);
        first = 0;
      }
    fprintf(out, "],\"bytes\":%s,\"job_bytes\":[", st_json_num(l->bytes, b, sizeof b));
    first = 1;
    for (int j = 0; j < num_jobs; j++)
      if (l->job_mask >> j & 1) {
        fprintf(out, "%s%s", first ? "" : ",", st_json_num(l->job_bytes[j], b, sizeof b));
        first = 0;
      }
    fputs("]}", out);
  }
  fprintf(out, "],\"step_time_s\":%s}\n", st_json_num(step_time_s, b, sizeof b));
}
