/* replay.c — a captured trace's replay set against what the trace measured:
 * per rank, step, compute and communication, measured and replayed (the
 * measured columns come from the importer, the replayed ones from the run's
 * timeline).  Printed by `run --trace`, stored as /replay in the results. */
#include <math.h>
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

void an_replay_print_text(const an_replay *rp, FILE *out)
{
  fprintf(out, "replay of the trace, measured against replayed (us):\n");
  fprintf(out, "  measured on %s, replayed on %s%s\n",
          rp->source_device[0] ? rp->source_device : "an unnamed device", rp->replay_device,
          rp->rescaled ? " (compute rescaled by the compute model)" : "");
  fprintf(out, "  %-6s %11s %11s %8s %11s %11s %8s %11s %11s\n", "rank", "step meas.", "replayed",
          "error", "compute m.", "replayed", "error", "comm m.", "replayed");
  fprintf(out, "  %-6s", "whole");
  us(out, rp->measured_step_s, 12);
  us(out, rp->replayed_step_s, 12);
  err_pct(out, rp->measured_step_s, rp->replayed_step_s);
  fprintf(out, "\n");
  for (int i = 0; i < rp->num_ranks; i++) {
    const an_replay_rank *x = &rp->ranks[i];
    fprintf(out, "  %-6d", x->rank);
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

void an_summary_print_json_replay(const an_summary *s, const an_replay *rp, FILE *out)
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
  fprintf(out, ",\"ranks\":[");
  for (int i = 0; i < rp->num_ranks; i++) {
    const an_replay_rank *x = &rp->ranks[i];
    fprintf(out, "%s{\"rank\":%d", i ? "," : "", (int)x->rank);
    jnum(out, "start_offset_s", x->start_offset_s, 1);
    jnum(out, "measured_step_s", x->measured_step_s, 1);
    jnum(out, "replayed_step_s", x->replayed_step_s, 1);
    jnum(out, "measured_compute_s", x->measured_compute_s, 1);
    jnum(out, "replayed_compute_s", x->replayed_compute_s, 1);
    jnum(out, "measured_comm_s", x->measured_comm_s, 1);
    jnum(out, "replayed_comm_s", x->replayed_comm_s, 1);
    fputc('}', out);
  }
  fprintf(out, "]}}\n");
}
