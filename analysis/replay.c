/* replay.c — a captured trace's replay set against what the trace measured:
 * per rank, step, compute and communication, measured and replayed (the
 * measured columns come from the importer, the replayed ones from the run's
 * timeline).  Printed by `run --trace`, stored as /replay in the results. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

int an_replay_init(an_replay *rp, const wl_workload *wl, const an_measured *m,
                   const double *start_offset_s, st_err *err)
{
  memset(rp, 0, sizeof *rp);
  rp->measured_step_s = NAN;
  if (m->num_ranks > 0 && m->num_timeline == 0)
    return st_err_set(err, ST_EUSAGE, "replay report: the run recorded no timeline");
  if (m->num_ranks > INT32_MAX)
    return st_err_set(err, ST_EUSAGE, "replay report: %zu ranks are too many", m->num_ranks);
  int n = (int)m->num_ranks;
  rp->ranks = calloc((size_t)(n > 0 ? n : 1), sizeof *rp->ranks);
  if (!rp->ranks)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  rp->num_ranks = n;
  for (int i = 0; i < n; i++) {
    an_replay_rank *x = &rp->ranks[i];
    x->rank = i;
    x->source_rank = i;
    x->start_offset_s = start_offset_s && isfinite(start_offset_s[i]) ? start_offset_s[i] : 0;
    x->measured_step_s = x->measured_compute_s = x->measured_comm_s = NAN;
    x->replayed_step_s = m->ranks[i].finish_s - x->start_offset_s;
  }
  for (size_t t = 0; t < m->num_timeline; t++) {
    const an_timeline_rec *row = &m->timeline[t];
    if (row->rank < 0 || row->rank >= n || row->program < 0 || row->program >= wl->num_programs)
      continue;
    const wl_program *p = &wl->programs[row->program];
    if (row->op >= p->num_ops)
      continue;
    const wl_op *op = &p->ops[row->op];
    double d = row->end_s - row->start_s;
    if (op->kind == WL_OP_COMPUTE && op->sub != WL_CLASS_OTHER)
      rp->ranks[row->rank].replayed_compute_s += d;
    else if (op->kind == WL_OP_COLL || op->kind == WL_OP_SEND || op->kind == WL_OP_RECV)
      rp->ranks[row->rank].replayed_comm_s += d;
  }
  rp->replayed_step_s = m->step_time_s;
  return ST_OK;
}

void an_replay_release(an_replay *rp)
{
  free(rp->ranks);
  rp->ranks = NULL;
  rp->num_ranks = 0;
}

/* "  12,345.6" (microseconds, thousands separated) or "n/a", right-aligned in w. */
static void us(FILE *out, double s, int w)
{
  char b[48];
  if (!isfinite(s)) {
    fprintf(out, "%*s", w, "n/a");
    return;
  }
  double v = fabs(s) * 1e6;
  long whole = (long)floor(v);
  int tenth = (int)llround((v - (double)whole) * 10);
  if (tenth == 10) {
    whole++;
    tenth = 0;
  }
  char digits[32], grouped[48];
  snprintf(digits, sizeof digits, "%ld", whole);
  size_t nd = strlen(digits), k = 0;
  for (size_t i = 0; i < nd; i++) {
    if (i && (nd - i) % 3 == 0)
      grouped[k++] = ',';
    grouped[k++] = digits[i];
  }
  grouped[k] = '\0';
  snprintf(b, sizeof b, "%s%s.%d", s < 0 ? "-" : "", grouped, tenth);
  fprintf(out, "%*s", w, b);
}

static void err_pct(FILE *out, double meas, double rep)
{
  if (isfinite(meas) && isfinite(rep) && meas > 0) {
    double pct = (rep - meas) / meas * 100;
    fprintf(out, " %+7.1f%%", fabs(pct) < 0.05 ? 0.0 : pct); /* no "-0.0%" */
  }
  else
    fprintf(out, " %8s", "");
}

static void row(FILE *out, const char *label, const an_replay_rank *x)
{
  fprintf(out, "  %-6s", label);
  us(out, x->measured_step_s, 12);
  us(out, x->replayed_step_s, 12);
  err_pct(out, x->measured_step_s, x->replayed_step_s);
  us(out, x->measured_compute_s, 12);
  us(out, x->replayed_compute_s, 12);
  err_pct(out, x->measured_compute_s, x->replayed_compute_s);
  us(out, x->measured_comm_s, 12);
  us(out, x->replayed_comm_s, 12);
  fprintf(out, "\n");
}

static int any_copied(const an_replay *rp)
{
  for (int i = 0; i < rp->num_ranks; i++)
    if (rp->ranks[i].source_rank != rp->ranks[i].rank)
      return 1;
  return 0;
}

/* The copied-rank map: for each given rank that others copy, the ranges of
 * ranks that copy it ("0 <- 1-2, 4-7"), cut at about `max` characters. */
static void copied_map(const an_replay *rp, st_buf *b, size_t max)
{
  int n = rp->num_ranks, first = 1;
  for (int s = 0; s < n; s++) {
    int any = 0;
    for (int i = 0; i < n && !any; i++)
      any = rp->ranks[i].source_rank == s && rp->ranks[i].rank != s;
    if (!any)
      continue;
    st_buf_printf(b, "%s%d <- ", first ? "" : "; ", s);
    first = 0;
    int ranges = 0;
    for (int i = 0; i < n; i++) {
      if (rp->ranks[i].source_rank != s || rp->ranks[i].rank == s)
        continue;
      int j = i;
      while (j + 1 < n && rp->ranks[j + 1].source_rank == s && rp->ranks[j + 1].rank != s)
        j++;
      if (b->len > max) {
        st_buf_printf(b, ", ...");
        return;
      }
      st_buf_printf(b, "%s%d", ranges++ ? ", " : "", rp->ranks[i].rank);
      if (j > i)
        st_buf_printf(b, "-%d", rp->ranks[j].rank);
      i = j;
    }
  }
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  if (isnan(x) || isnan(y))
    return isnan(x) - isnan(y); /* NaN last */
  return (x > y) - (x < y);
}

/* min, median and max of one column over the ranks (NaN entries left out). */
static void column_stats(const an_replay *rp, size_t off, double *v, double out[3])
{
  int k = 0;
  for (int i = 0; i < rp->num_ranks; i++) {
    double x = *(const double *)((const char *)&rp->ranks[i] + off);
    if (!isnan(x))
      v[k++] = x;
  }
  out[0] = out[1] = out[2] = NAN;
  if (!k)
    return;
  qsort(v, (size_t)k, sizeof *v, cmp_double);
  out[0] = v[0];
  out[1] = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
  out[2] = v[k - 1];
}

static const size_t replay_cols[6] = {
    offsetof(an_replay_rank, measured_step_s),    offsetof(an_replay_rank, replayed_step_s),
    offsetof(an_replay_rank, measured_compute_s), offsetof(an_replay_rank, replayed_compute_s),
    offsetof(an_replay_rank, measured_comm_s),    offsetof(an_replay_rank, replayed_comm_s),
};

/* rows min, median, max (stat 0..2): each column's own statistic */
static int summary_rows(const an_replay *rp, an_replay_rank rows[3])
{
  double *v = malloc((size_t)(rp->num_ranks > 0 ? rp->num_ranks : 1) * sizeof *v);
  if (!v)
    return -1;
  for (int c = 0; c < 6; c++) {
    double s[3];
    column_stats(rp, replay_cols[c], v, s);
    for (int k = 0; k < 3; k++)
      *(double *)((char *)&rows[k] + replay_cols[c]) = s[k];
  }
  free(v);
  return 0;
}

/* The `count` ranks of longest replayed step, slowest first (ties: lower rank). */
static int slowest(const an_replay *rp, int32_t *out, int count)
{
  int k = 0;
  for (int i = 0; i < rp->num_ranks; i++) {
    double t = rp->ranks[i].replayed_step_s;
    int q;
    if (k < count)
      q = k++;
    else if (t > rp->ranks[out[count - 1]].replayed_step_s)
      q = count - 1;
    else
      continue;
    while (q > 0 && t > rp->ranks[out[q - 1]].replayed_step_s) {
      out[q] = out[q - 1];
      q--;
    }
    out[q] = i;
  }
  return k;
}

void an_replay_print_text(const an_replay *rp, const int32_t *sel, size_t nsel, FILE *out)
{
  fprintf(out, "replay of the trace, measured against replayed (us):\n");
  fprintf(out, "  measured on %s, replayed on %s%s\n",
          rp->source_device[0] ? rp->source_device : "an unnamed device", rp->replay_device,
          rp->rescaled ? " (compute rescaled by the compute model)" : "");
  if (any_copied(rp)) {
    st_buf b;
    st_buf_init(&b);
    copied_map(rp, &b, 60);
    fprintf(out, "  ranks without a trace run a given rank's (given <- copies): %s\n",
            b.data ? b.data : "");
    st_buf_release(&b);
  }
  fprintf(out, "  %-6s %11s %11s %8s %11s %11s %8s %11s %11s\n", "rank", "step meas.", "replayed",
          "error", "compute m.", "replayed", "error", "comm m.", "replayed");
  fprintf(out, "  %-6s", "whole");
  us(out, rp->measured_step_s, 12);
  us(out, rp->replayed_step_s, 12);
  err_pct(out, rp->measured_step_s, rp->replayed_step_s);
  fprintf(out, "\n");
  char label[16];
  if (sel) {
    for (size_t i = 0; i < nsel; i++)
      if (sel[i] >= 0 && sel[i] < rp->num_ranks) {
        snprintf(label, sizeof label, "%d", (int)sel[i]);
        row(out, label, &rp->ranks[sel[i]]);
      }
    return;
  }
  if (rp->num_ranks <= AN_REPLAY_ALL_ROWS) {
    for (int i = 0; i < rp->num_ranks; i++) {
      snprintf(label, sizeof label, "%d", (int)rp->ranks[i].rank);
      row(out, label, &rp->ranks[i]);
    }
    return;
  }
  an_replay_rank rows[3];
  memset(rows, 0, sizeof rows);
  if (summary_rows(rp, rows))
    return;
  fprintf(out, "  over the %d ranks (each column on its own):\n", (int)rp->num_ranks);
  row(out, "min", &rows[0]);
  row(out, "median", &rows[1]);
  row(out, "max", &rows[2]);
  int32_t top[AN_REPLAY_SLOWEST];
  int k = slowest(rp, top, AN_REPLAY_SLOWEST);
  fprintf(out, "  the %d slowest ranks (replayed step; --ranks LIST for others):\n", k);
  for (int i = 0; i < k; i++) {
    snprintf(label, sizeof label, "%d", (int)top[i]);
    row(out, label, &rp->ranks[top[i]]);
  }
}

static void jnum(FILE *out, const char *key, double v, int comma)
{
  if (isfinite(v))
    fprintf(out, "%s\"%s\":%.17g", comma ? "," : "", key, v);
  else
    fprintf(out, "%s\"%s\":null", comma ? "," : "", key);
}

static void jstr(FILE *out, const char *key, const char *v)
{
  st_json_str(out, key);
  fputc(':', out);
  st_json_str(out, v);
}

void an_summary_print_json_replay(const an_summary *s, const an_replay *rp, const int32_t *sel,
                                  size_t nsel, FILE *out)
{
  if (!rp) {
    an_summary_print_json(s, out);
    return;
  }
  /* the summary object, less its closing "}\n", then the replay object */
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  if (!m) {
    an_summary_print_json(s, out);
    return;
  }
  an_summary_print_json(s, m);
  fclose(m);
  while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '}'))
    if (text[--len] == '}')
      break;
  fwrite(text, 1, len, out);
  free(text);
  fprintf(out, ",\"replay\":{");
  jstr(out, "source_device", rp->source_device);
  fputc(',', out);
  jstr(out, "replay_device", rp->replay_device);
  fprintf(out, ",\"rescaled\":%s", rp->rescaled ? "true" : "false");
  jnum(out, "measured_step_s", rp->measured_step_s, 1);
  jnum(out, "replayed_step_s", rp->replayed_step_s, 1);
  fprintf(out, ",\"num_ranks\":%d", (int)rp->num_ranks);
  if (any_copied(rp)) {
    /* {"from":S,"ranks":"1-7"} per given rank that others copy */
    fprintf(out, ",\"copied\":[");
    int first = 1;
    for (int sr = 0; sr < rp->num_ranks; sr++) {
      st_buf b;
      st_buf_init(&b);
      for (int i = 0; i < rp->num_ranks; i++) {
        if (rp->ranks[i].source_rank != sr || rp->ranks[i].rank == sr)
          continue;
        int j = i;
        while (j + 1 < rp->num_ranks && rp->ranks[j + 1].source_rank == sr &&
               rp->ranks[j + 1].rank != sr)
          j++;
        st_buf_printf(&b, "%s%d", b.len ? "," : "", rp->ranks[i].rank);
        if (j > i)
          st_buf_printf(&b, "-%d", rp->ranks[j].rank);
        i = j;
      }
      if (b.len) {
        fprintf(out, "%s{\"from\":%d,\"ranks\":", first ? "" : ",", sr);
        st_json_str(out, b.data);
        fputc('}', out);
        first = 0;
      }
      st_buf_release(&b);
    }
    fputc(']', out);
  }
  an_replay_rank rows[3];
  memset(rows, 0, sizeof rows);
  if (rp->num_ranks > 0 && !summary_rows(rp, rows)) {
    fprintf(out, ",\"replayed_step_over_ranks_s\":{");
    jnum(out, "min", rows[0].replayed_step_s, 0);
    jnum(out, "median", rows[1].replayed_step_s, 1);
    jnum(out, "max", rows[2].replayed_step_s, 1);
    int32_t top[AN_REPLAY_SLOWEST];
    int k = slowest(rp, top, AN_REPLAY_SLOWEST);
    fprintf(out, "},\"slowest_ranks\":[");
    for (int i = 0; i < k; i++)
      fprintf(out, "%s%d", i ? "," : "", (int)top[i]);
    fputc(']', out);
  }
  if (sel) {
    fprintf(out, ",\"ranks\":[");
    int first = 1;
    for (size_t q = 0; q < nsel; q++) {
      if (sel[q] < 0 || sel[q] >= rp->num_ranks)
        continue;
      const an_replay_rank *x = &rp->ranks[sel[q]];
      fprintf(out, "%s{\"rank\":%d,\"source_rank\":%d", first ? "" : ",", (int)x->rank,
              (int)x->source_rank);
      first = 0;
      jnum(out, "start_offset_s", x->start_offset_s, 1);
      jnum(out, "measured_step_s", x->measured_step_s, 1);
      jnum(out, "replayed_step_s", x->replayed_step_s, 1);
      jnum(out, "measured_compute_s", x->measured_compute_s, 1);
      jnum(out, "replayed_compute_s", x->replayed_compute_s, 1);
      jnum(out, "measured_comm_s", x->measured_comm_s, 1);
      jnum(out, "replayed_comm_s", x->replayed_comm_s, 1);
      fputc('}', out);
    }
    fputc(']', out);
  }
  fprintf(out, "}}\n");
}
