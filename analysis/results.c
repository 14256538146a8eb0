/* results.c — the HDF5 results file: one per run, written whole or not at all,
 * and read back for report, compare, export and plot.
 *
 * Invariants (and those of every file written through h5.c, its header):
 *   - Row datasets are 1-D compound datasets whose member names are the
 *     column names of docs/results-format.md.  The reader matches columns by
 *     name (HDF5 converts by name), so columns may be added later without
 *     breaking old readers; a column the reader needs and the file lacks is
 *     an error that names the dataset and the column.
 *   - Strings are fixed-length, NUL-terminated; a row dataset's string
 *     column is as wide as its longest value (links) or as the row struct's
 *     field (collectives, timeline: longer names are cut there).
 *   - Numbers are IEEE doubles written as they are, so NaN stays NaN and the
 *     summary reads back bit for bit.
 *   - Datasets, columns and summary attributes added after the first version
 *     (/link_usage, /communicators, /communicator_ranks, /timeline's `comm`;
 *     simulated_ranks, reduction and the training block of /summary) are
 *     optional when reading, so files written earlier stay readable.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hdf5.h>

#include "an_h5.h"
#include "analysis.h"

/* ---- summary fields -------------------------------------------------------- */
static const struct {
  const char *name;
  size_t off;
} summary_doubles[] = {
#define F(x) {#x, offsetof(an_summary, x)}
    F(step_time_s),       F(tokens_per_step),   F(tokens_per_s),      F(tokens_per_s_per_gpu),
    F(model_flops_per_step), F(model_tflops_per_gpu), F(mfu),        F(compute_s),
    F(exposed_comm_s),    F(overlapped_comm_s), F(bubble_s),          F(idle_s),
    F(peak_memory_bytes), F(device_memory_bytes), F(sim_wall_s),      F(events),
    F(simulated_ranks),   F(train_tokens),      F(train_steps),       F(time_to_train_s),
    F(price_usd_per_gpu_hour), F(cost_usd),     F(gpu_busy_fraction), F(power_W),
    F(pue),               F(energy_MWh),
    F(slowest_rank),      F(num_critical_ranks), F(slowest_wait_s),    F(max_wait_rank),
    F(max_wait_s),
#undef F
};
#define NUM_SUMMARY_DOUBLES (sizeof summary_doubles / sizeof summary_doubles[0])

/* Summary fields added after the first version: absent in older files. */
/* The critical-path ones are written only for runs with stragglers. */
static int summary_critical(const char *name)
{
  return !strcmp(name, "slowest_rank") || !strcmp(name, "num_critical_ranks") ||
         !strcmp(name, "slowest_wait_s") || !strcmp(name, "max_wait_rank") ||
         !strcmp(name, "max_wait_s");
}

static int summary_optional(const char *name)
{
  static const char *const later[] = {"simulated_ranks", "train_tokens", "train_steps",
                                      "time_to_train_s", "price_usd_per_gpu_hour", "cost_usd",
                                      "gpu_busy_fraction", "power_W", "pue", "energy_MWh",
                                      "slowest_rank", "num_critical_ranks", "slowest_wait_s",
                                      "max_wait_rank", "max_wait_s", NULL};
  for (int i = 0; later[i]; i++)
    if (!strcmp(name, later[i]))
      return 1;
  return 0;
}

/* ---- compound types ---------------------------------------------------------- */
static void phase_col(int i, char *buf, size_t n) { snprintf(buf, n, "busy_%s_s", wl_phase_name(i)); }
static void kind_col(int i, char *buf, size_t n) { snprintf(buf, n, "comm_%s_s", wl_comm_kind_name(i)); }

static hid_t rank_type(void)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(an_rank_row));
  if (t < 0)
    return -1;
  int bad = 0;
#define D(x) bad |= H5Tinsert(t, #x, offsetof(an_rank_row, x), H5T_NATIVE_DOUBLE) < 0
  bad |= H5Tinsert(t, "rank", offsetof(an_rank_row, rank), H5T_NATIVE_INT32) < 0;
  bad |= H5Tinsert(t, "host", offsetof(an_rank_row, host), H5T_NATIVE_INT32) < 0;
  D(compute_s);
  D(comm_s);
  D(exposed_comm_s);
  D(overlapped_comm_s);
  D(bubble_s);
  D(idle_s);
  D(finish_s);
#undef D
  char name[64];
  for (int i = 0; i < WL_PHASE_COUNT; i++) {
    phase_col(i, name, sizeof name);
    bad |= H5Tinsert(t, name, offsetof(an_rank_row, phase_s) + i * sizeof(double),
                     H5T_NATIVE_DOUBLE) < 0;
  }
  for (int i = 0; i < WL_COMM_KIND_COUNT; i++) {
    kind_col(i, name, sizeof name);
    bad |= H5Tinsert(t, name, offsetof(an_rank_row, comm_kind_s) + i * sizeof(double),
                     H5T_NATIVE_DOUBLE) < 0;
  }
  if (bad) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

/* The /collectives row; with_run adds the columns saying how each
 * collective ran (algo, proto, channels), absent from older files. */
static hid_t coll_type(int with_run)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(an_coll_row));
  if (t < 0)
    return -1;
  int bad = 0;
#define S(x) bad |= an__h5_insert_str(t, #x, offsetof(an_coll_row, x), sizeof(((an_coll_row *)0)->x)) < 0
#define D(x) bad |= H5Tinsert(t, #x, offsetof(an_coll_row, x), H5T_NATIVE_DOUBLE) < 0
#define I(x) bad |= H5Tinsert(t, #x, offsetof(an_coll_row, x), H5T_NATIVE_INT32) < 0
  S(op);
  S(comm);
  S(comm_kind);
  I(nranks);
  D(bytes);
  D(first_arrival_s);
  D(start_s);
  D(end_s);
  D(algbw_GBps);
  D(busbw_GBps);
  I(src);
  I(dst);
  if (with_run) {
    S(algo);
    S(proto);
    I(channels);
  }
  if (bad) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

static hid_t timeline_type(void)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(an_timeline_row));
  if (t < 0)
    return -1;
  int bad = 0;
#undef S
#undef D
#undef I
#define S(x)                                                                                  \
  bad |= an__h5_insert_str(t, #x, offsetof(an_timeline_row, x), sizeof(((an_timeline_row *)0)->x)) < 0
#define D(x) bad |= H5Tinsert(t, #x, offsetof(an_timeline_row, x), H5T_NATIVE_DOUBLE) < 0
#define I(x) bad |= H5Tinsert(t, #x, offsetof(an_timeline_row, x), H5T_NATIVE_INT32) < 0
  I(rank);
  I(stream);
  S(stream_name);
  S(kind);
  S(name);
  D(start_s);
  D(end_s);
  D(bytes);
  D(flops);
  I(peer);
  I(comm);
#undef S
#undef D
#undef I
  if (bad) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

static hid_t link_usage_type(void)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(an_link_usage_row));
  if (t < 0)
    return -1;
  int bad = 0;
#define S(x)                                                                                  \
  bad |= an__h5_insert_str(t, #x, offsetof(an_link_usage_row, x), sizeof(((an_link_usage_row *)0)->x)) < 0
  bad |= H5Tinsert(t, "link", offsetof(an_link_usage_row, link), H5T_NATIVE_INT32) < 0;
  S(op);
  S(comm);
  S(comm_kind);
  bad |= H5Tinsert(t, "bytes", offsetof(an_link_usage_row, bytes), H5T_NATIVE_DOUBLE) < 0;
#undef S
  if (bad) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

static hid_t comm_type(void)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(an_comm_row));
  if (t < 0)
    return -1;
  int bad = an__h5_insert_str(t, "name", offsetof(an_comm_row, name), sizeof(((an_comm_row *)0)->name)) < 0;
  bad |= an__h5_insert_str(t, "kind", offsetof(an_comm_row, kind), sizeof(((an_comm_row *)0)->kind)) < 0;
  bad |= H5Tinsert(t, "size", offsetof(an_comm_row, size), H5T_NATIVE_INT32) < 0;
  bad |= H5Tinsert(t, "first", offsetof(an_comm_row, first), H5T_NATIVE_INT32) < 0;
  if (bad) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

static hid_t replay_type(void)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(an_replay_rank));
  if (t < 0)
    return -1;
  int bad = H5Tinsert(t, "rank", offsetof(an_replay_rank, rank), H5T_NATIVE_INT32) < 0;
  bad |= H5Tinsert(t, "source_rank", offsetof(an_replay_rank, source_rank), H5T_NATIVE_INT32) < 0;
#define D(x) bad |= H5Tinsert(t, #x, offsetof(an_replay_rank, x), H5T_NATIVE_DOUBLE) < 0
  D(start_offset_s);
  D(measured_step_s);
  D(replayed_step_s);
  D(measured_compute_s);
  D(replayed_compute_s);
  D(measured_comm_s);
  D(replayed_comm_s);
#undef D
  if (bad) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

/* Links: the name column is as wide as the longest name, so the row layout
 * is computed at run time: name at 0, four doubles after it. */
typedef struct link_layout {
  size_t name_size, row_size, off_bw, off_bytes, off_busy, off_peak;
} link_layout;

static void link_layout_init(link_layout *l, size_t name_size)
{
  l->name_size = name_size ? name_size : 1;
  size_t o = (l->name_size + 7) & ~(size_t)7;
  l->off_bw = o;
  l->off_bytes = o + 8;
  l->off_busy = o + 16;
  l->off_peak = o + 24;
  l->row_size = o + 32;
}

static hid_t link_type(const link_layout *l)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, l->row_size);
  if (t < 0)
    return -1;
  int bad = an__h5_insert_str(t, "name", 0, l->name_size) < 0;
  bad |= H5Tinsert(t, "bandwidth_Bps", l->off_bw, H5T_NATIVE_DOUBLE) < 0;
  bad |= H5Tinsert(t, "bytes", l->off_bytes, H5T_NATIVE_DOUBLE) < 0;
  bad |= H5Tinsert(t, "busy_s", l->off_busy, H5T_NATIVE_DOUBLE) < 0;
  bad |= H5Tinsert(t, "peak_util", l->off_peak, H5T_NATIVE_DOUBLE) < 0;
  if (bad) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

/* ---- writing ------------------------------------------------------------------- */
typedef an__h5w writer;
#define W_INFO(w) ((const an_run_info *)(w)->u)

static void copy_str(char *dst, size_t n, const char *src)
{
  snprintf(dst, n, "%s", src ? src : "");
}

static int fill_colls(writer *w, size_t first, size_t n, void *buf)
{
  const wl_workload *wl = W_INFO(w)->wl;
  const an_measured *m = W_INFO(w)->measured;
  an_coll_row *rows = buf;
  for (size_t i = 0; i < n; i++) {
    const an_coll_rec *c = &m->colls[first + i];
    an_coll_row *o = &rows[i];
    int coll = c->kind == WL_OP_COLL;
    if (c->comm < 0 || c->comm >= wl->num_comms)
      return an__h5_wfail(w, "dataset '/collectives': record %zu: communicator %d is not in the workload",
                   first + i, (int)c->comm);
    if (coll && (c->algo >= m->num_algo_names || c->proto >= m->num_proto_names))
      return an__h5_wfail(w, "dataset '/collectives': record %zu: algorithm %u or protocol %u has no "
                      "name (%d and %d known)", first + i, (unsigned)c->algo,
                   (unsigned)c->proto, m->num_algo_names, m->num_proto_names);
    const wl_comm *cm = &wl->comms[c->comm];
    copy_str(o->op, sizeof o->op, c->kind == WL_OP_COLL ? wl_coll_name(c->op) : "sendrecv");
    copy_str(o->comm, sizeof o->comm, cm->name);
    copy_str(o->comm_kind, sizeof o->comm_kind, wl_comm_kind_name(cm->kind));
    o->nranks = c->nranks;
    o->bytes = c->bytes;
    o->first_arrival_s = c->first_arrival_s;
    o->start_s = c->start_s;
    o->end_s = c->end_s;
    o->algbw_GBps = c->algbw_GBps;
    o->busbw_GBps = c->busbw_GBps;
    o->src = c->kind == WL_OP_COLL ? -1 : c->src;
    o->dst = c->kind == WL_OP_COLL ? -1 : c->dst;
    copy_str(o->algo, sizeof o->algo, coll ? m->algo_names[c->algo] : "");
    copy_str(o->proto, sizeof o->proto, coll ? m->proto_names[c->proto] : "");
    o->channels = coll ? c->channels : 0;
  }
  return ST_OK;
}

/* The name a timeline row shows: the op's name in its program, else what it does. */
static const char *op_label(const wl_op *op, const char *name)
{
  if (name && name[0])
    return name;
  switch (op->kind) {
  case WL_OP_COLL: return wl_coll_name(op->sub);
  case WL_OP_COMPUTE: return wl_class_name(op->sub);
  case WL_OP_MARKER: return wl_marker_name(op->sub);
  default: return wl_op_kind_name(op->kind);
  }
}

static int fill_timeline(writer *w, size_t first, size_t n, void *buf)
{
  const wl_workload *wl = W_INFO(w)->wl;
  const an_measured *m = W_INFO(w)->measured;
  an_timeline_row *rows = buf;
  for (size_t i = 0; i < n; i++) {
    const an_timeline_rec *t = &m->timeline[first + i];
    an_timeline_row *o = &rows[i];
    if (t->program < 0 || t->program >= wl->num_programs)
      return an__h5_wfail(w, "dataset '/timeline': row %zu: program %d is not in the workload",
                   first + i, (int)t->program);
    const wl_program *p = &wl->programs[t->program];
    if (t->op >= p->num_ops)
      return an__h5_wfail(w, "dataset '/timeline': row %zu: op %u is not in program '%s'", first + i,
                   (unsigned)t->op, p->name);
    if (t->stream >= p->num_streams)
      return an__h5_wfail(w, "dataset '/timeline': row %zu: stream %u is not in program '%s'",
                   first + i, (unsigned)t->stream, p->name);
    const wl_op *op = &p->ops[t->op];
    o->rank = t->rank;
    o->stream = t->stream;
    copy_str(o->stream_name, sizeof o->stream_name, p->stream_names[t->stream]);
    copy_str(o->kind, sizeof o->kind, wl_op_kind_name(t->kind));
    copy_str(o->name, sizeof o->name, op_label(op, wl_op_name(p, op)));
    o->start_s = t->start_s;
    o->end_s = t->end_s;
    o->bytes = t->bytes;
    o->flops = t->flops;
    o->peer = -1;
    o->comm = -1;
    if ((t->kind == WL_OP_SEND || t->kind == WL_OP_RECV || t->kind == WL_OP_COLL) &&
        t->rank >= 0 && t->rank < wl->num_ranks) {
      int c = wl_rank_comm(wl, t->rank, op->role);
      if (c >= 0 && c < wl->num_comms) {
        o->comm = c;
        if (t->kind != WL_OP_COLL && op->peer >= 0 && op->peer < wl->comms[c].size)
          o->peer = wl->comms[c].ranks[op->peer];
      }
    }
  }
  return ST_OK;
}

static int fill_link_usage(writer *w, size_t first, size_t n, void *buf)
{
  const wl_workload *wl = W_INFO(w)->wl;
  const an_measured *m = W_INFO(w)->measured;
  an_link_usage_row *rows = buf;
  for (size_t i = 0; i < n; i++) {
    const an_usage_rec *u = &m->usage[first + i];
    if (u->comm < 0 || u->comm >= wl->num_comms || u->link < 0 ||
        (size_t)u->link >= m->num_links)
      return an__h5_wfail(w, "dataset '/link_usage': row %zu: communicator %d or link %d is unknown",
                   first + i, (int)u->comm, (int)u->link);
    an_link_usage_row *o = &rows[i];
    const wl_comm *cm = &wl->comms[u->comm];
    o->link = u->link;
    copy_str(o->op, sizeof o->op, u->kind == WL_OP_COLL ? wl_coll_name(u->op) : "sendrecv");
    copy_str(o->comm, sizeof o->comm, cm->name);
    copy_str(o->comm_kind, sizeof o->comm_kind, wl_comm_kind_name(cm->kind));
    o->bytes = u->bytes;
  }
  return ST_OK;
}

static int fill_comms(writer *w, size_t first, size_t n, void *buf)
{
  const wl_workload *wl = W_INFO(w)->wl;
  an_comm_row *rows = buf;
  int64_t at = 0;
  for (size_t c = 0; c < first; c++)
    at += wl->comms[c].size;
  for (size_t i = 0; i < n; i++) {
    const wl_comm *cm = &wl->comms[first + i];
    if (at + cm->size > INT32_MAX)
      return an__h5_wfail(w, "dataset '/communicators': more than 2^31 members in all");
    copy_str(rows[i].name, sizeof rows[i].name, cm->name);
    copy_str(rows[i].kind, sizeof rows[i].kind, wl_comm_kind_name(cm->kind));
    rows[i].size = cm->size;
    rows[i].first = (int32_t)at;
    at += cm->size;
  }
  return ST_OK;
}

/* /communicators and /communicator_ranks (every communicator's members, in order). */
static int write_comms(writer *w)
{
  const wl_workload *wl = W_INFO(w)->wl;
  size_t total = 0;
  for (int c = 0; c < wl->num_comms; c++)
    total += (size_t)wl->comms[c].size;
  int32_t *all = malloc((total ? total : 1) * sizeof *all);
  if (!all)
    return st_err_set(w->err, ST_ENOMEM, "results '%s': dataset '/communicator_ranks': out of "
                                         "memory", w->path);
  size_t k = 0;
  for (int c = 0; c < wl->num_comms; c++)
    for (int m = 0; m < wl->comms[c].size; m++)
      all[k++] = wl->comms[c].ranks[m];
  hid_t t = comm_type();
  int rc = t < 0 ? an__h5_wfail(w, "dataset '/communicators': cannot describe the rows")
                 : an__h5_write_rows(w, "communicators", t, (size_t)wl->num_comms, NULL, fill_comms);
  if (t >= 0)
    H5Tclose(t);
  if (rc == ST_OK)
    rc = an__h5_write_rows(w, "communicator_ranks", H5T_NATIVE_INT32, total, all, NULL);
  free(all);
  return rc;
}

static int write_links(writer *w)
{
  const an_measured *m = W_INFO(w)->measured;
  size_t longest = 0;
  for (size_t i = 0; i < m->num_links; i++) {
    size_t l = m->links[i].name ? strlen(m->links[i].name) : 0;
    if (l > longest)
      longest = l;
  }
  link_layout lay;
  link_layout_init(&lay, longest + 1);
  hid_t t = link_type(&lay);
  if (t < 0)
    return an__h5_wfail(w, "dataset '/links': cannot describe the rows");
  char *buf = calloc(m->num_links ? m->num_links : 1, lay.row_size);
  if (!buf) {
    H5Tclose(t);
    return st_err_set(w->err, ST_ENOMEM, "results '%s': dataset '/links': out of memory",
                      w->path);
  }
  for (size_t i = 0; i < m->num_links; i++) {
    char *row = buf + i * lay.row_size;
    const an_link_row *l = &m->links[i];
    copy_str(row, lay.name_size, l->name);
    memcpy(row + lay.off_bw, &l->bandwidth_Bps, 8);
    memcpy(row + lay.off_bytes, &l->bytes, 8);
    memcpy(row + lay.off_busy, &l->busy_s, 8);
    memcpy(row + lay.off_peak, &l->peak_util, 8);
  }
  int rc = an__h5_write_rows(w, "links", t, m->num_links, buf, NULL);
  free(buf);
  H5Tclose(t);
  return rc;
}

/* /replay: one row per rank, the run-wide fields as attributes of the dataset. */
static int write_replay(writer *w, const an_replay *rp)
{
  hid_t t = replay_type();
  if (t < 0)
    return an__h5_wfail(w, "dataset '/replay': cannot describe the rows");
  int rc = an__h5_write_rows(w, "replay", t, rp->num_ranks > 0 ? (size_t)rp->num_ranks : 0, rp->ranks,
                      NULL);
  H5Tclose(t);
  if (rc)
    return rc;
  hid_t ds = H5Dopen2(w->file, "replay", H5P_DEFAULT);
  int bad = ds < 0;
  bad = bad || an__h5_attr_write_str(ds, "source_device", rp->source_device) < 0;
  bad = bad || an__h5_attr_write_str(ds, "replay_device", rp->replay_device) < 0;
  bad = bad || an__h5_attr_write_num(ds, "rescaled", H5T_STD_I32LE, H5T_NATIVE_INT, &rp->rescaled) < 0;
  bad = bad || an__h5_attr_write_num(ds, "measured_step_s", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                              &rp->measured_step_s) < 0;
  bad = bad || an__h5_attr_write_num(ds, "replayed_step_s", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                              &rp->replayed_step_s) < 0;
  an__h5_close(&ds, H5Dclose);
  return bad ? an__h5_wfail(w, "dataset '/replay': cannot write its attributes") : ST_OK;
}

static void utc_now(char *buf, size_t n)
{
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm))
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
  else
    snprintf(buf, n, "unknown");
}


static hid_t job_type(void)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(an_job_row));
  if (t < 0)
    return -1;
  int bad = 0;
#define S(x) bad |= an__h5_insert_str(t, #x, offsetof(an_job_row, x), sizeof(((an_job_row *)0)->x)) < 0
#define D(x) bad |= H5Tinsert(t, #x, offsetof(an_job_row, x), H5T_NATIVE_DOUBLE) < 0
  S(name);
  S(kind);
  S(gpus);
  bad |= H5Tinsert(t, "num_gpus", offsetof(an_job_row, num_gpus), H5T_NATIVE_INT32) < 0;
  D(step_time_alone_s);
  D(step_time_together_s);
  D(slowdown);
#undef S
#undef D
  if (bad) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

/* /shared_links: name, jobs, bytes (the in-memory mask and per-job bytes
 * are not stored). */
static hid_t shared_link_type(void)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(an_shared_link));
  if (t < 0)
    return -1;
  int bad = an__h5_insert_str(t, "name", offsetof(an_shared_link, name),
                              sizeof(((an_shared_link *)0)->name)) < 0;
  bad |= an__h5_insert_str(t, "jobs", offsetof(an_shared_link, jobs),
                           sizeof(((an_shared_link *)0)->jobs)) < 0;
  bad |= H5Tinsert(t, "bytes", offsetof(an_shared_link, bytes), H5T_NATIVE_DOUBLE) < 0;
  if (bad) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

/* /jobs and /shared_links of a run of several jobs. */
static int write_jobs(writer *w, const an_run_info *in)
{
  hid_t t = job_type();
  if (t < 0)
    return an__h5_wfail(w, "dataset '/jobs': cannot describe the rows");
  int rc = an__h5_write_rows(w, "jobs", t, (size_t)in->num_jobs, in->jobs, NULL);
  H5Tclose(t);
  if (rc)
    return rc;
  if ((t = shared_link_type()) < 0)
    return an__h5_wfail(w, "dataset '/shared_links': cannot describe the rows");
  rc = an__h5_write_rows(w, "shared_links", t, in->num_shared_links, in->shared_links, NULL);
  H5Tclose(t);
  return rc;
}

static int write_body(writer *w)
{
  const an_run_info *in = W_INFO(w);
  char now[32];
  utc_now(now, sizeof now);
  if (an__h5_attr_write_str(w->file, "simtrain_version", SIMTRAIN_VERSION) < 0 ||
      an__h5_attr_write_str(w->file, "command_line", in->command_line) < 0 ||
      an__h5_attr_write_str(w->file, "created_utc", now) < 0)
    return an__h5_wfail(w, "cannot write the root attributes");

  hid_t g = an__h5_group(w->file, "config");
  int bad = g < 0;
  bad = bad || an__h5_attr_write_str(g, "workload", in->workload_json) < 0;
  bad = bad || an__h5_attr_write_str(g, "cluster", in->cluster_json) < 0;
  bad = bad || an__h5_attr_write_str(g, "options", in->options_json) < 0;
  bad = bad || an__h5_attr_write_str(g, "workload_name", in->workload_name) < 0;
  bad = bad || an__h5_attr_write_str(g, "cluster_name", in->cluster_name) < 0;
  an__h5_close(&g, H5Gclose);
  if (bad)
    return an__h5_wfail(w, "group '/config': cannot write its attributes");

  g = an__h5_group(w->file, "summary");
  bad = g < 0;
  const an_summary *s = in->summary;
  bad = bad || an__h5_attr_write_num(g, "num_gpus", H5T_STD_I32LE, H5T_NATIVE_INT, &s->num_gpus) < 0;
  bad = bad || an__h5_attr_write_num(g, "iterations", H5T_STD_I32LE, H5T_NATIVE_INT, &s->iterations) < 0;
  for (size_t i = 0; !bad && i < NUM_SUMMARY_DOUBLES; i++)
    if (!summary_critical(summary_doubles[i].name) || isfinite(s->slowest_rank))
      bad = an__h5_attr_write_num(g, summary_doubles[i].name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                         (const char *)s + summary_doubles[i].off) < 0;
  bad = bad || an__h5_attr_write_str(g, "reduction", s->reduction) < 0;
  an__h5_close(&g, H5Gclose);
  if (bad)
    return an__h5_wfail(w, "group '/summary': cannot write its attributes");

  const an_measured *m = in->measured;
  hid_t t = rank_type();
  if (t < 0)
    return an__h5_wfail(w, "dataset '/ranks': cannot describe the rows");
  int rc = an__h5_write_rows(w, "ranks", t, m->num_ranks, m->ranks, NULL);
  H5Tclose(t);
  if (rc)
    return rc;

  if ((t = coll_type(1)) < 0)
    return an__h5_wfail(w, "dataset '/collectives': cannot describe the rows");
  rc = an__h5_write_rows(w, "collectives", t, m->num_colls, NULL, fill_colls);
  H5Tclose(t);
  if (rc)
    return rc;

  if ((rc = write_links(w)) != ST_OK)
    return rc;

  if ((t = link_usage_type()) < 0)
    return an__h5_wfail(w, "dataset '/link_usage': cannot describe the rows");
  rc = an__h5_write_rows(w, "link_usage", t, m->usage ? m->num_usage : 0, NULL, fill_link_usage);
  H5Tclose(t);
  if (rc)
    return rc;

  if ((rc = write_comms(w)) != ST_OK)
    return rc;

  if (m->timeline && m->num_timeline > 0) {
    if ((t = timeline_type()) < 0)
      return an__h5_wfail(w, "dataset '/timeline': cannot describe the rows");
    rc = an__h5_write_rows(w, "timeline", t, m->num_timeline, NULL, fill_timeline);
    H5Tclose(t);
  }
  if (rc == ST_OK && in->replay)
    rc = write_replay(w, in->replay);
  if (rc == ST_OK && in->jobs)
    rc = write_jobs(w, in);
  return rc;
}


/* ---- reading ------------------------------------------------------------------- */
typedef an__h5r reader;

/* NUL-terminate fixed strings that were cut to their field's width. */
#define TERMINATE(field) ((field)[sizeof(field) - 1] = '\0')

static int read_links(reader *rd, an_results *res)
{
  if (H5Lexists(rd->file, "links", H5P_DEFAULT) <= 0)
    return an__h5_rfail(rd, ST_EINPUT, "dataset '/links' is missing");
  /* The name column's width comes from the file. */
  hid_t ds = H5Dopen2(rd->file, "links", H5P_DEFAULT), ft = -1, nt = -1;
  size_t name_size = 0;
  if (ds >= 0 && (ft = H5Dget_type(ds)) >= 0 && H5Tget_class(ft) == H5T_COMPOUND) {
    int idx = H5Tget_member_index(ft, "name");
    if (idx >= 0 && (nt = H5Tget_member_type(ft, (unsigned)idx)) >= 0 &&
        H5Tget_class(nt) == H5T_STRING && H5Tis_variable_str(nt) <= 0)
      name_size = H5Tget_size(nt);
  }
  an__h5_close(&nt, H5Tclose);
  an__h5_close(&ft, H5Tclose);
  an__h5_close(&ds, H5Dclose);
  link_layout lay;
  link_layout_init(&lay, name_size ? name_size + 1 : 1);
  hid_t t = link_type(&lay);
  if (t < 0)
    return an__h5_rfail(rd, ST_ENOMEM, "dataset '/links': cannot describe the rows");
  void *rows;
  size_t n;
  int rc = an__h5_read_rows(rd, "links", t, 0, &rows, &n);
  H5Tclose(t);
  if (rc)
    return rc;
  res->links = calloc(n ? n : 1, sizeof *res->links);
  if (!res->links) {
    free(rows);
    return an__h5_rfail(rd, ST_ENOMEM, "dataset '/links': out of memory");
  }
  res->num_links = n;
  for (size_t i = 0; i < n; i++) {
    const char *row = (const char *)rows + i * lay.row_size;
    an_link_row *l = &res->links[i];
    char *name = strndup(row, lay.name_size);
    if (!name) {
      free(rows);
      return an__h5_rfail(rd, ST_ENOMEM, "dataset '/links': out of memory");
    }
    l->name = name;
    memcpy(&l->bandwidth_Bps, row + lay.off_bw, 8);
    memcpy(&l->bytes, row + lay.off_bytes, 8);
    memcpy(&l->busy_s, row + lay.off_busy, 8);
    memcpy(&l->peak_util, row + lay.off_peak, 8);
  }
  free(rows);
  return ST_OK;
}

/* /replay, when the file has it (trace replays). */
static int read_replay(reader *rd, an_results *res)
{
  if (H5Lexists(rd->file, "replay", H5P_DEFAULT) <= 0)
    return ST_OK;
  hid_t t = replay_type();
  if (t < 0)
    return an__h5_rfail(rd, ST_ENOMEM, "dataset '/replay': cannot describe the rows");
  void *rows;
  size_t n;
  int rc = an__h5_read_rows(rd, "replay", t, 0, &rows, &n);
  H5Tclose(t);
  if (rc)
    return rc;
  an_replay *rp = calloc(1, sizeof *rp);
  if (!rp) {
    free(rows);
    return an__h5_rfail(rd, ST_ENOMEM, "dataset '/replay': out of memory");
  }
  rp->ranks = rows;
  rp->num_ranks = (int32_t)n;
  res->replay = rp;
  hid_t ds = H5Dopen2(rd->file, "replay", H5P_DEFAULT);
  if (ds < 0)
    return an__h5_rfail(rd, ST_EINPUT, "dataset '/replay' cannot be opened");
  /* files written before the copied-rank column: every rank is its own */
  hid_t ft = H5Dget_type(ds);
  int has_source = ft >= 0 && H5Tget_member_index(ft, "source_rank") >= 0;
  if (ft >= 0)
    H5Tclose(ft);
  for (size_t i = 0; !has_source && i < n; i++)
    rp->ranks[i].source_rank = rp->ranks[i].rank;
  char *src = NULL, *dst = NULL;
  const char *where = "dataset '/replay'";
  (void)((rc = an__h5_attr_read_str(rd, ds, where, "source_device", &src)) ||
         (rc = an__h5_attr_read_str(rd, ds, where, "replay_device", &dst)) ||
         (rc = an__h5_attr_read_num(rd, ds, where, "rescaled", H5T_NATIVE_INT, &rp->rescaled)) ||
         (rc = an__h5_attr_read_num(rd, ds, where, "measured_step_s", H5T_NATIVE_DOUBLE,
                             &rp->measured_step_s)) ||
         (rc = an__h5_attr_read_num(rd, ds, where, "replayed_step_s", H5T_NATIVE_DOUBLE,
                             &rp->replayed_step_s)));
  H5Dclose(ds);
  if (src)
    snprintf(rp->source_device, sizeof rp->source_device, "%s", src);
  if (dst)
    snprintf(rp->replay_device, sizeof rp->replay_device, "%s", dst);
  free(src);
  free(dst);
  return rc;
}

/* /jobs and /shared_links, optional (a run of several jobs only). */
static int read_jobs(reader *rd, an_results *res)
{
  void *rows = NULL;
  size_t n = 0;
  hid_t t = job_type();
  if (t < 0)
    return an__h5_rfail(rd, ST_ENOMEM, "dataset '/jobs': cannot describe the rows");
  int rc = an__h5_read_rows(rd, "jobs", t, 1, &rows, &n);
  H5Tclose(t);
  if (rc)
    return rc;
  res->jobs = rows;
  res->num_jobs = n;
  for (size_t i = 0; i < n; i++) {
    TERMINATE(res->jobs[i].name);
    TERMINATE(res->jobs[i].kind);
    TERMINATE(res->jobs[i].gpus);
  }
  if ((t = shared_link_type()) < 0)
    return an__h5_rfail(rd, ST_ENOMEM, "dataset '/shared_links': cannot describe the rows");
  rc = an__h5_read_rows(rd, "shared_links", t, 1, &rows, &n);
  H5Tclose(t);
  if (rc)
    return rc;
  res->shared_links = rows;
  res->num_shared_links = n;
  for (size_t i = 0; i < n; i++) {
    an_shared_link *l = &res->shared_links[i];
    TERMINATE(l->name);
    TERMINATE(l->jobs);
    l->job_mask = 0;
    memset(l->job_bytes, 0, sizeof l->job_bytes);
  }
  return ST_OK;
}

static int read_body(reader *rd, an_results *res)
{
  int rc;
  if ((rc = an__h5_attr_read_str(rd, rd->file, "group '/'", "simtrain_version", &res->version)) ||
      (rc = an__h5_attr_read_str(rd, rd->file, "group '/'", "command_line", &res->command_line)) ||
      (rc = an__h5_attr_read_str(rd, rd->file, "group '/'", "created_utc", &res->created_utc)))
    return rc;

  if (H5Lexists(rd->file, "config", H5P_DEFAULT) <= 0)
    return an__h5_rfail(rd, ST_EINPUT, "group '/config' is missing");
  hid_t g = H5Gopen2(rd->file, "config", H5P_DEFAULT);
  if (g < 0)
    return an__h5_rfail(rd, ST_EINPUT, "'/config' is not a group");
  (void)((rc = an__h5_attr_read_str(rd, g, "group '/config'", "workload", &res->workload_json)) ||
         (rc = an__h5_attr_read_str(rd, g, "group '/config'", "cluster", &res->cluster_json)) ||
         (rc = an__h5_attr_read_str(rd, g, "group '/config'", "options", &res->options_json)) ||
         (rc = an__h5_attr_read_str(rd, g, "group '/config'", "workload_name", &res->workload_name)) ||
         (rc = an__h5_attr_read_str(rd, g, "group '/config'", "cluster_name", &res->cluster_name)));
  H5Gclose(g);
  if (rc)
    return rc;

  if (H5Lexists(rd->file, "summary", H5P_DEFAULT) <= 0)
    return an__h5_rfail(rd, ST_EINPUT, "group '/summary' is missing");
  if ((g = H5Gopen2(rd->file, "summary", H5P_DEFAULT)) < 0)
    return an__h5_rfail(rd, ST_EINPUT, "'/summary' is not a group");
  an_summary *s = &res->summary;
  rc = an__h5_attr_read_num(rd, g, "group '/summary'", "num_gpus", H5T_NATIVE_INT, &s->num_gpus);
  if (!rc)
    rc = an__h5_attr_read_num(rd, g, "group '/summary'", "iterations", H5T_NATIVE_INT, &s->iterations);
  /* files written before the symmetry reduction have neither
   * simulated_ranks nor reduction: every rank was simulated; files written
   * before the training block have none of its fields: no budget (NaN) */
  s->simulated_ranks = s->num_gpus;
  snprintf(s->reduction, sizeof s->reduction, "none");
  s->train_tokens = s->train_steps = s->time_to_train_s = NAN;
  s->price_usd_per_gpu_hour = s->cost_usd = NAN;
  s->gpu_busy_fraction = s->power_W = s->pue = s->energy_MWh = NAN;
  s->slowest_rank = s->num_critical_ranks = s->slowest_wait_s = NAN;
  s->max_wait_rank = s->max_wait_s = NAN;
  for (size_t i = 0; !rc && i < NUM_SUMMARY_DOUBLES; i++) {
    if (summary_optional(summary_doubles[i].name) && H5Aexists(g, summary_doubles[i].name) <= 0)
      continue;
    rc = an__h5_attr_read_num(rd, g, "group '/summary'", summary_doubles[i].name, H5T_NATIVE_DOUBLE,
                       (char *)s + summary_doubles[i].off);
  }
  if (!rc && H5Aexists(g, "reduction") > 0) {
    char *red = NULL;
    rc = an__h5_attr_read_str(rd, g, "group '/summary'", "reduction", &red);
    if (!rc)
      snprintf(s->reduction, sizeof s->reduction, "%s", red);
    free(red);
  }
  H5Gclose(g);
  if (rc)
    return rc;

  void *rows;
  size_t n;
  hid_t t = rank_type();
  if (t < 0)
    return an__h5_rfail(rd, ST_ENOMEM, "dataset '/ranks': cannot describe the rows");
  rc = an__h5_read_rows(rd, "ranks", t, 0, &rows, &n);
  H5Tclose(t);
  if (rc)
    return rc;
  res->ranks = rows;
  res->num_ranks = n;
  if (isfinite(s->slowest_rank)) /* the list of critical ranks, from the rows */
    an_summary_critical(s, res->ranks, res->num_ranks);

  /* files written before the algo/proto/channels columns: without them */
  int with_run = 0;
  if (H5Lexists(rd->file, "collectives", H5P_DEFAULT) > 0) {
    hid_t ds = H5Dopen2(rd->file, "collectives", H5P_DEFAULT), ft = -1;
    if (ds >= 0 && (ft = H5Dget_type(ds)) >= 0 && H5Tget_class(ft) == H5T_COMPOUND)
      with_run = H5Tget_member_index(ft, "algo") >= 0;
    an__h5_close(&ft, H5Tclose);
    an__h5_close(&ds, H5Dclose);
  }
  if ((t = coll_type(with_run)) < 0)
    return an__h5_rfail(rd, ST_ENOMEM, "dataset '/collectives': cannot describe the rows");
  rc = an__h5_read_rows(rd, "collectives", t, 0, &rows, &n);
  H5Tclose(t);
  if (rc)
    return rc;
  res->colls = rows;
  res->num_colls = n;
  for (size_t i = 0; i < n; i++) {
    TERMINATE(res->colls[i].op);
    TERMINATE(res->colls[i].comm);
    TERMINATE(res->colls[i].comm_kind);
    TERMINATE(res->colls[i].algo);
    TERMINATE(res->colls[i].proto);
    if (!with_run)
      res->colls[i].channels = -1;
  }

  if ((rc = read_links(rd, res)) != ST_OK)
    return rc;

  if ((t = timeline_type()) < 0)
    return an__h5_rfail(rd, ST_ENOMEM, "dataset '/timeline': cannot describe the rows");
  static const char *const tl_optional[] = {"comm", NULL};
  unsigned missing = 0;
  rc = an__h5_read_rows_opt(rd, "timeline", t, 1, tl_optional, &missing, &rows, &n);
  H5Tclose(t);
  if (rc)
    return rc;
  res->timeline = rows;
  res->num_timeline = n;
  for (size_t i = 0; i < n; i++) {
    TERMINATE(res->timeline[i].stream_name);
    TERMINATE(res->timeline[i].kind);
    TERMINATE(res->timeline[i].name);
    if (missing & 1u)
      res->timeline[i].comm = -1;
  }

  if ((t = link_usage_type()) < 0)
    return an__h5_rfail(rd, ST_ENOMEM, "dataset '/link_usage': cannot describe the rows");
  rc = an__h5_read_rows(rd, "link_usage", t, 1, &rows, &n);
  H5Tclose(t);
  if (rc)
    return rc;
  res->link_usage = rows;
  res->num_link_usage = n;
  for (size_t i = 0; i < n; i++) {
    an_link_usage_row *u = &res->link_usage[i];
    TERMINATE(u->op);
    TERMINATE(u->comm);
    TERMINATE(u->comm_kind);
    if (u->link < 0 || (size_t)u->link >= res->num_links)
      return an__h5_rfail(rd, ST_EINPUT, "dataset '/link_usage': row %zu: link %d is not a row of "
                                  "'/links' (%zu rows)", i, (int)u->link, res->num_links);
  }

  if ((t = comm_type()) < 0)
    return an__h5_rfail(rd, ST_ENOMEM, "dataset '/communicators': cannot describe the rows");
  rc = an__h5_read_rows(rd, "communicators", t, 1, &rows, &n);
  H5Tclose(t);
  if (rc)
    return rc;
  res->comms = rows;
  res->num_comms = n;
  rc = an__h5_read_rows(rd, "communicator_ranks", H5T_NATIVE_INT32, 1, &rows, &n);
  if (rc)
    return rc;
  res->comm_ranks = rows;
  res->num_comm_ranks = n;
  for (size_t i = 0; i < res->num_comms; i++) {
    an_comm_row *c = &res->comms[i];
    TERMINATE(c->name);
    TERMINATE(c->kind);
    if (c->size < 0 || c->first < 0 || (size_t)c->first + (size_t)c->size > res->num_comm_ranks)
      return an__h5_rfail(rd, ST_EINPUT, "dataset '/communicators': row %zu ('%s'): members %d..%d "
                                  "are not in '/communicator_ranks' (%zu values)", i, c->name,
                   (int)c->first, (int)c->first + (int)c->size - 1, res->num_comm_ranks);
  }
  for (size_t i = 0; i < res->num_timeline; i++) {
    int32_t c = res->timeline[i].comm;
    if (c < -1 || (c >= 0 && (size_t)c >= res->num_comms))
      return an__h5_rfail(rd, ST_EINPUT, "dataset '/timeline': row %zu: communicator %d is not a row "
                                  "of '/communicators' (%zu rows)", i, (int)c, res->num_comms);
  }
  return (rc = read_replay(rd, res)) ? rc : read_jobs(rd, res);
}


void an_results_destroy(an_results *r)
{
  if (!r)
    return;
  free(r->path);
  free(r->command_line);
  free(r->created_utc);
  free(r->version);
  free(r->workload_name);
  free(r->cluster_name);
  free(r->workload_json);
  free(r->cluster_json);
  free(r->options_json);
  free(r->ranks);
  free(r->colls);
  for (size_t i = 0; i < r->num_links; i++)
    free(r->links[i].name);
  free(r->links);
  free(r->timeline);
  free(r->link_usage);
  free(r->comms);
  free(r->comm_ranks);
  free(r->jobs);
  free(r->shared_links);
  if (r->replay) {
    an_replay_release(r->replay);
    free(r->replay);
  }
  free(r);
}

int an_results_write(const char *path, const an_run_info *info, st_err *err)
{
  if (!info || !info->wl || !info->measured || !info->summary)
    return st_err_set(err, ST_EUSAGE, "results '%s': nothing to write (no workload, "
                                      "measurements or summary)", path);
  return an__h5_create(path, "results", write_body, info, err);
}

int an_results_read(const char *path, an_results **out, st_err *err)
{
  reader rd;
  int rc = an__h5_open(&rd, path, "results", err);
  if (rc)
    return rc;
  an_results *res = calloc(1, sizeof *res);
  if (!res || !(res->path = strdup(path)))
    rc = st_err_set(err, ST_ENOMEM, "results '%s': out of memory", path);
  else
    rc = read_body(&rd, res);
  an__h5_close_reader(&rd);
  if (rc != ST_OK) {
    an_results_destroy(res);
    return rc;
  }
  *out = res;
  return ST_OK;
}
