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
#include "an_results.h"
#include "analysis.h"

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
  case WL_OP_COPY: return wl_copy_dir_name(op->sub); /* "d2h", "h2d" */
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
  hid_t t = an__comm_type();
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
  an__link_layout lay;
  an__link_layout_init(&lay, longest + 1);
  hid_t t = an__link_type(&lay);
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
  hid_t t = an__replay_type();
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


/* /jobs and /shared_links of a run of several jobs. */
static int write_jobs(writer *w, const an_run_info *in)
{
  hid_t t = an__job_type();
  if (t < 0)
    return an__h5_wfail(w, "dataset '/jobs': cannot describe the rows");
  int rc = an__h5_write_rows(w, "jobs", t, (size_t)in->num_jobs, in->jobs, NULL);
  H5Tclose(t);
  if (rc)
    return rc;
  if ((t = an__shared_link_type()) < 0)
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
  for (size_t i = 0; !bad && i < an__num_summary_doubles; i++)
    if ((!an__summary_critical(an__summary_doubles[i].name) || isfinite(s->slowest_rank)) &&
        (!an__summary_offload(an__summary_doubles[i].name) || isfinite(s->offload_s)) &&
        (!an__summary_pods(an__summary_doubles[i].name) || isfinite(s->pod_link_bytes)))
      bad = an__h5_attr_write_num(g, an__summary_doubles[i].name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                         (const char *)s + an__summary_doubles[i].off) < 0;
  bad = bad || an__h5_attr_write_str(g, "reduction", s->reduction) < 0;
  an__h5_close(&g, H5Gclose);
  if (bad)
    return an__h5_wfail(w, "group '/summary': cannot write its attributes");

  const an_measured *m = in->measured;
  hid_t t = an__rank_type();
  if (t < 0)
    return an__h5_wfail(w, "dataset '/ranks': cannot describe the rows");
  int rc = an__h5_write_rows(w, "ranks", t, m->num_ranks, m->ranks, NULL);
  H5Tclose(t);
  if (rc)
    return rc;

  if ((t = an__coll_type(1)) < 0)
    return an__h5_wfail(w, "dataset '/collectives': cannot describe the rows");
  rc = an__h5_write_rows(w, "collectives", t, m->num_colls, NULL, fill_colls);
  H5Tclose(t);
  if (rc)
    return rc;

  if ((rc = write_links(w)) != ST_OK)
    return rc;

  if ((t = an__link_usage_type()) < 0)
    return an__h5_wfail(w, "dataset '/link_usage': cannot describe the rows");
  rc = an__h5_write_rows(w, "link_usage", t, m->usage ? m->num_usage : 0, NULL, fill_link_usage);
  H5Tclose(t);
  if (rc)
    return rc;

  if ((rc = write_comms(w)) != ST_OK)
    return rc;

  if (m->timeline && m->num_timeline > 0) {
    if ((t = an__timeline_type()) < 0)
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
