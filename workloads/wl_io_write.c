/* wl_io_write.c — the on-disk form of a workload, writing: (gzip-compressed)
 * JSON.
 *
 * The format is documented for people and other tools in
 * docs/workload-format.md; this file is its only writer (wl_io_read.c its
 * only reader).
 *
 * Writing: an own emitter (not cJSON's printer) so that the layout is fixed
 * (one op per line, keys in a fixed order, keys at their defaults left out)
 * and numbers round-trip bit for bit: integral values print exactly, others
 * with the shortest of %.15g / %.17g that reads back to the same double.
 * Same workload in, same bytes out.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_io_int.h"
#include "workload.h"

typedef struct wr {
  st_buf b;
  int pretty;
  int oom;
} wr;

static void w_raw(wr *w, const char *s, size_t n)
{
  if (!w->oom && st_buf_append(&w->b, s, n))
    w->oom = 1;
}

static void w_str(wr *w, const char *s) { w_raw(w, s, strlen(s)); }

/* Newline and indentation in pretty mode, nothing in compact mode. */
static void w_nl(wr *w, int indent)
{
  static const char spaces[] = "\n                                ";
  if (!w->pretty)
    return;
  int n = 1 + 2 * indent;
  w_raw(w, spaces, (size_t)(n < (int)sizeof spaces - 1 ? n : (int)sizeof spaces - 1));
}

/* ", " between items on one line (pretty) or "," (compact). */
static void w_sep(wr *w) { w_raw(w, ", ", w->pretty ? 2 : 1); }

static void w_quoted(wr *w, const char *s)
{
  if (!w->oom && st_buf_json_str(&w->b, s))
    w->oom = 1;
}

/* A double that reads back bit for bit.  Integral values below 1e16 (all
 * byte counts, FLOPs and most durations in practice) print without exponent;
 * -0 prints as "-0", which strtod reads back as -0. */
static void w_double(wr *w, double v)
{
  char buf[40];
  if (!isfinite(v)) {
    w_str(w, "null");
    return;
  }
  if (v == floor(v) && fabs(v) < 1e16) {
    snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v)
      snprintf(buf, sizeof buf, "%.17g", v);
  }
  w_str(w, buf);
}

static void w_long(wr *w, long v)
{
  char buf[24];
  int n = snprintf(buf, sizeof buf, "%ld", v);
  w_raw(w, buf, (size_t)n);
}

/* '"key": ' (pretty) or '"key":' — keys are plain identifiers, no escaping. */
static void w_key(wr *w, const char *key)
{
  w_raw(w, "\"", 1);
  w_str(w, key);
  w_raw(w, w->pretty ? "\": " : "\":", w->pretty ? 3 : 2);
}

/* ', "key": v' after an earlier member: an integer member. */
static void w_long_member(wr *w, const char *key, long v)
{
  w_sep(w);
  w_key(w, key);
  w_long(w, v);
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* An int32 array: the single value when all entries are equal (and the
 * shorthand is allowed), else the whole array on one line. */
static void w_int_array(wr *w, const int32_t *v, size_t n, int allow_shorthand)
{
  int all_same = n > 0;
  for (size_t i = 1; i < n && all_same; i++)
    all_same = v[i] == v[0];
  if (allow_shorthand && all_same) {
    w_long(w, v[0]);
    return;
  }
  w_raw(w, "[", 1);
  for (size_t i = 0; i < n; i++) {
    if (i)
      w_sep(w);
    w_long(w, v[i]);
  }
  w_raw(w, "]", 1);
}

/* Number of per-peer sizes of an all-to-all-v op: the size of the
 * communicator that plays its role for the ranks running the program
 * (wl_workload_check makes it the same for all of them).  For a program no
 * rank runs, the sizes up to the next all-to-all-v op. */
static size_t split_count(const wl_workload *wl, int pi, size_t oi)
{
  const wl_program *p = &wl->programs[pi];
  const wl_op *o = &p->ops[oi];
  for (int r = 0; r < wl->num_ranks; r++) {
    if (wl->rank_program[r] != pi)
      continue;
    int c = wl_rank_comm(wl, r, o->role);
    if (c >= 0 && c < wl->num_comms)
      return (size_t)wl->comms[c].size;
    break;
  }
  size_t end = p->num_splits;
  for (size_t j = oi + 1; j < p->num_ops; j++)
    if (p->ops[j].kind == WL_OP_COLL && p->ops[j].sub == WL_COLL_ALLTOALL &&
        (p->ops[j].flags & WL_OPF_SPLITS)) {
      end = p->ops[j].split_first;
      break;
    }
  return end > o->split_first ? end - o->split_first : 0;
}

/* 1 if stream s's name is used by no other stream of the program. */
static int stream_name_unique(const wl_program *p, int s)
{
  for (int t = 0; t < p->num_streams; t++)
    if (t != s && strcmp(p->stream_names[t], p->stream_names[s]) == 0)
      return 0;
  return 1;
}

/* The keys of a compute op after those every op has. */
/* A boolean op key, written only when the op has the flag. */
static void w_flag(wr *w, const wl_op *o, unsigned flag, const char *key)
{
  if (!(o->flags & flag))
    return;
  w_sep(w);
  w_key(w, key);
  w_str(w, "true");
}

static void w_op_compute(wr *w, const wl_op *o)
{
  if (o->sub != WL_CLASS_OTHER) {
    w_sep(w);
    w_key(w, "class");
    w_quoted(w, wl_class_name(o->sub));
  }
  if (o->duration_s >= 0) { /* negative: the compute model decides */
    w_sep(w);
    w_key(w, "duration_s");
    w_double(w, o->duration_s);
  }
  if (!same_bits(o->flops, 0)) {
    w_sep(w);
    w_key(w, "flops");
    w_double(w, o->flops);
  }
  if (!same_bits(o->bytes, 0)) {
    w_sep(w);
    w_key(w, "bytes");
    w_double(w, o->bytes);
  }
  if (o->m || o->n || o->k) {
    w_long_member(w, "m", o->m);
    w_long_member(w, "n", o->n);
    w_long_member(w, "k", o->k);
  }
  if (o->batch != 1)
    w_long_member(w, "batch", o->batch);
  if (o->concurrent > 1)
    w_long_member(w, "concurrent", o->concurrent);
  if (o->dtype != WL_DTYPE_BF16) {
    w_sep(w);
    w_key(w, "dtype");
    w_quoted(w, wl_dtype_name(o->dtype));
  }
  w_flag(w, o, WL_OPF_CAUSAL, "causal");
  w_flag(w, o, WL_OPF_HOST, "host");
  w_flag(w, o, WL_OPF_DROPOUT, "dropout");
  w_flag(w, o, WL_OPF_WINDOW, "window");
  w_flag(w, o, WL_OPF_TORCH, "pytorch");
  if (wl_op_attn_impl(o)) {
    w_sep(w);
    w_key(w, "attn_impl");
    w_quoted(w, wl_attn_impl_name(wl_op_attn_impl(o)));
  }
  if (o->flags & WL_OPF_UNFUSED) {
    w_sep(w);
    w_key(w, "unfused_attn");
    w_quoted(w, wl_unfused_pass_name((o->flags & WL_OPF_BWD) != 0));
  }
}

/* The keys of a collective, send or receive after those every op has. */
static void w_op_comm(wr *w, const wl_workload *wl, int pi, size_t oi)
{
  const wl_program *p = &wl->programs[pi];
  const wl_op *o = &p->ops[oi];
  int kind = o->kind;
  if (kind == WL_OP_COLL) {
    w_sep(w);
    w_key(w, "coll");
    w_quoted(w, wl_coll_name(o->sub));
  }
  w_sep(w);
  w_key(w, "role");
  if (o->role >= 0 && o->role < wl->num_roles)
    w_quoted(w, wl->roles[o->role]);
  else
    w_long(w, o->role); /* invalid; wl_workload_write refuses it before */
  if (kind != WL_OP_COLL) {
    w_long_member(w, "peer", o->peer);
    if (o->tag != 0)
      w_long_member(w, "tag", o->tag);
  } else if ((o->sub == WL_COLL_BROADCAST || o->sub == WL_COLL_REDUCE) && o->peer != 0) {
    w_long_member(w, "root", o->peer);
  }
  if (!same_bits(o->bytes, 0)) {
    w_sep(w);
    w_key(w, "bytes");
    w_double(w, o->bytes);
  }
  if (kind == WL_OP_COLL && (o->flags & WL_OPF_DEDUP)) {
    w_long_member(w, "topk", o->m);
    w_long_member(w, "experts", o->n);
  }
  if (kind == WL_OP_COLL && o->sub == WL_COLL_ALLTOALL && (o->flags & WL_OPF_SPLITS)) {
    size_t n = split_count(wl, pi, oi);
    w_sep(w);
    w_key(w, "splits");
    w_raw(w, "[", 1);
    for (size_t i = 0; i < n && o->split_first + i < p->num_splits; i++) {
      if (i)
        w_sep(w);
      w_double(w, p->splits[o->split_first + i]);
    }
    w_raw(w, "]", 1);
  }
}

static void w_op(wr *w, const wl_workload *wl, int pi, size_t oi, const unsigned char *unique)
{
  const wl_program *p = &wl->programs[pi];
  const wl_op *o = &p->ops[oi];
  int kind = o->kind;
  w_raw(w, "{", 1);
  w_key(w, "op");
  w_quoted(w, wl_op_kind_name(kind));
  if (o->name && o->name < p->strings_len) {
    w_sep(w);
    w_key(w, "name");
    w_quoted(w, p->strings + o->name);
  }
  if (o->stream != 0) {
    w_sep(w);
    w_key(w, "stream");
    if (o->stream < p->num_streams && unique[o->stream])
      w_quoted(w, p->stream_names[o->stream]);
    else
      w_long(w, o->stream);
  }
  if (o->phase != WL_PHASE_NONE) {
    w_sep(w);
    w_key(w, "phase");
    w_quoted(w, wl_phase_name(o->phase));
  }
  switch (kind) {
  case WL_OP_COMPUTE: w_op_compute(w, o); break;
  case WL_OP_COLL:
  case WL_OP_SEND:
  case WL_OP_RECV: w_op_comm(w, wl, pi, oi); break;
  case WL_OP_MARKER:
    w_sep(w);
    w_key(w, "mark");
    w_quoted(w, wl_marker_name(o->sub));
    w_long_member(w, "value", o->tag);
    break;
  case WL_OP_COPY:
    w_sep(w);
    w_key(w, "dir");
    w_quoted(w, wl_copy_dir_name(o->sub));
    if (!same_bits(o->bytes, 0)) {
      w_sep(w);
      w_key(w, "bytes");
      w_double(w, o->bytes);
    }
    break;
  }
  if (kind != WL_OP_MARKER && kind != WL_OP_COPY && (o->flags & WL_OPF_RECOMPUTE)) {
    w_sep(w);
    w_key(w, "recompute");
    w_str(w, "true");
  }
  if (o->wait_count) {
    w_sep(w);
    w_key(w, "waits");
    w_raw(w, "[", 1);
    for (uint32_t i = 0; i < o->wait_count; i++) {
      if (i)
        w_sep(w);
      if ((size_t)o->wait_first + i < p->num_waits)
        w_long(w, (long)p->waits[o->wait_first + i]);
    }
    w_raw(w, "]", 1);
  }
  w_raw(w, "}", 1);
}

static void w_meta_str(wr *w, const char *key, const char *v)
{
  w_nl(w, 2);
  w_key(w, key);
  if (v)
    w_quoted(w, v);
  else
    w_str(w, "null");
  w_raw(w, ",", 1);
}

static void w_meta_num(wr *w, const char *key, double v)
{
  w_nl(w, 2);
  w_key(w, key);
  w_double(w, v); /* NaN (unknown) -> null */
  w_raw(w, ",", 1);
}

/* "meta": the workload's description, every key written. */
static void w_meta(wr *w, const wl_meta *m)
{
  w_nl(w, 1);
  w_key(w, "meta");
  w_raw(w, "{", 1);
  w_meta_str(w, "model", m->model);
  w_meta_str(w, "layout", m->layout);
  w_meta_str(w, "source", m->source);
  w_meta_num(w, "tokens_per_step", m->tokens_per_step);
  w_meta_num(w, "model_flops_per_step", m->model_flops_per_step);
  w_meta_num(w, "hw_flops_per_step", m->hw_flops_per_step);
  w_meta_num(w, "peak_memory_bytes", m->peak_memory_bytes);
  w_nl(w, 2);
  w_key(w, "dtype");
  w_quoted(w, wl_dtype_name(m->dtype));
  w_raw(w, ",", 1);
  w_nl(w, 2);
  w_key(w, "iterations");
  w_long(w, m->iterations);
  w_nl(w, 1);
  w_raw(w, "},", 2);
}

/* "communicators": one per line. */
static void w_comms(wr *w, const wl_workload *wl)
{
  w_nl(w, 1);
  w_key(w, "communicators");
  w_raw(w, "[", 1);
  for (int c = 0; c < wl->num_comms; c++) {
    const wl_comm *cm = &wl->comms[c];
    w_nl(w, 2);
    w_raw(w, "{", 1);
    w_key(w, "name");
    w_quoted(w, cm->name);
    w_sep(w);
    w_key(w, "kind");
    w_quoted(w, wl_comm_kind_name(cm->kind));
    w_sep(w);
    w_key(w, "ranks");
    w_int_array(w, cm->ranks, (size_t)cm->size, 0);
    w_raw(w, c + 1 < wl->num_comms ? "}," : "}", c + 1 < wl->num_comms ? 2 : 1);
  }
  if (wl->num_comms)
    w_nl(w, 1);
  w_raw(w, "],", 2);
}

/* "programs": each with its streams and its ops, one op per line. */
static void w_programs(wr *w, const wl_workload *wl)
{
  w_nl(w, 1);
  w_key(w, "programs");
  w_raw(w, "[", 1);
  unsigned char *unique = NULL;
  for (int pi = 0; pi < wl->num_programs && !w->oom; pi++) {
    const wl_program *p = &wl->programs[pi];
    free(unique);
    unique = malloc((size_t)p->num_streams);
    if (!unique) {
      w->oom = 1;
      break;
    }
    for (int s = 0; s < p->num_streams; s++)
      unique[s] = (unsigned char)stream_name_unique(p, s);
    w_nl(w, 2);
    w_raw(w, "{", 1);
    w_nl(w, 3);
    w_key(w, "name");
    w_quoted(w, p->name);
    w_raw(w, ",", 1);
    w_nl(w, 3);
    w_key(w, "streams");
    w_raw(w, "[", 1);
    for (int s = 0; s < p->num_streams; s++) {
      if (s)
        w_sep(w);
      w_quoted(w, p->stream_names[s]);
    }
    w_raw(w, "],", 2);
    w_nl(w, 3);
    w_key(w, "ops");
    w_raw(w, "[", 1);
    for (size_t i = 0; i < p->num_ops && !w->oom; i++) {
      w_nl(w, 4);
      w_op(w, wl, pi, i, unique);
      if (i + 1 < p->num_ops)
        w_raw(w, ",", 1);
    }
    if (p->num_ops)
      w_nl(w, 3);
    w_raw(w, "]", 1);
    w_nl(w, 2);
    w_raw(w, pi + 1 < wl->num_programs ? "}," : "}", pi + 1 < wl->num_programs ? 2 : 1);
  }
  free(unique);
  if (wl->num_programs)
    w_nl(w, 1);
  w_raw(w, "],", 2);
}

/* "rank_map": each rank's program and, per role, its communicator. */
static void w_rank_map(wr *w, const wl_workload *wl)
{
  w_nl(w, 1);
  w_key(w, "rank_map");
  w_raw(w, "{", 1);
  w_nl(w, 2);
  w_key(w, "program");
  w_int_array(w, wl->rank_program, (size_t)wl->num_ranks, 1);
  w_raw(w, ",", 1);
  w_nl(w, 2);
  w_key(w, "comms");
  w_raw(w, "{", 1);
  int32_t *col = NULL;
  if (wl->num_roles > 0) {
    col = malloc((size_t)wl->num_ranks * sizeof *col);
    if (!col)
      w->oom = 1;
  }
  for (int role = 0; role < wl->num_roles && col; role++) {
    for (int r = 0; r < wl->num_ranks; r++)
      col[r] = wl_rank_comm(wl, r, role);
    w_nl(w, 3);
    w_quoted(w, wl->roles[role]);
    w_raw(w, w->pretty ? ": " : ":", w->pretty ? 2 : 1);
    w_int_array(w, col, (size_t)wl->num_ranks, 1);
    if (role + 1 < wl->num_roles)
      w_raw(w, ",", 1);
  }
  free(col);
  if (wl->num_roles)
    w_nl(w, 2);
  w_raw(w, "}", 1);
  w_nl(w, 1);
  w_raw(w, "}", 1);
}

char *wl_workload_to_json(const wl_workload *wl, int pretty)
{
  wr w = {.pretty = pretty != 0};
  st_buf_init(&w.b);
  w_raw(&w, "{", 1);
  w_nl(&w, 1);
  w_key(&w, "format");
  w_quoted(&w, WL_FORMAT_NAME);
  w_raw(&w, ",", 1);
  w_nl(&w, 1);
  w_key(&w, "version");
  w_long(&w, WL_FORMAT_VERSION);
  w_raw(&w, ",", 1);
  w_nl(&w, 1);
  w_key(&w, "num_ranks");
  w_long(&w, wl->num_ranks);
  w_raw(&w, ",", 1);
  w_nl(&w, 1);
  w_key(&w, "roles");
  w_raw(&w, "[", 1);
  for (int i = 0; i < wl->num_roles; i++) {
    if (i)
      w_sep(&w);
    w_quoted(&w, wl->roles[i]);
  }
  w_raw(&w, "],", 2);

  w_meta(&w, &wl->meta);
  w_comms(&w, wl);
  w_programs(&w, wl);
  w_rank_map(&w, wl);
  w_nl(&w, 0);
  w_raw(&w, "}", 1);
  if (w.pretty)
    w_raw(&w, "\n", 1);
  if (w.oom) {
    st_buf_release(&w.b);
    return NULL;
  }
  return st_buf_detach(&w.b, NULL);
}

int wl_workload_write(const wl_workload *wl, const char *path, st_err *err)
{
  /* Refuse what the reader would refuse, so a written file always reads back. */
  st_err chk;
  st_err_clear(&chk);
  if (wl_workload_check(wl, &chk))
    return st_err_set(err, chk.code, "cannot write workload '%s': %s", path, chk.msg);
  for (int i = 0; i < wl->num_roles; i++) {
    if (!wl->roles[i][0])
      return st_err_set(err, ST_EINPUT, "cannot write workload '%s': role %d has no name", path,
                        i);
    for (int j = 0; j < i; j++)
      if (strcmp(wl->roles[i], wl->roles[j]) == 0)
        return st_err_set(err, ST_EINPUT,
                          "cannot write workload '%s': roles %d and %d are both named '%s'", path,
                          j, i, wl->roles[i]);
  }
  char *json = wl_workload_to_json(wl, 1);
  if (!json)
    return st_err_set(err, ST_ENOMEM, "cannot write workload '%s': out of memory", path);
  int rc = st_file_write_atomic(path, json, strlen(json), st_str_ends_with(path, ".gz"), err);
  free(json);
  return rc;
}
