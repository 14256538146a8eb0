/* results_read.c — reading a results file back (results.c writes it; its
 * header says what the file guarantees): every dataset checked against the
 * columns it must have, optional ones absent in older files, rows referring
 * to others checked to exist. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#include "an_h5.h"
#include "an_results.h"
#include "analysis.h"

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
  an__link_layout lay;
  an__link_layout_init(&lay, name_size ? name_size + 1 : 1);
  hid_t t = an__link_type(&lay);
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
  hid_t t = an__replay_type();
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
  hid_t t = an__job_type();
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
  if ((t = an__shared_link_type()) < 0)
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

/* /config and /summary. */
static int read_config_summary(reader *rd, an_results *res)
{
  int rc;
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
  s->offload_s = s->offload_exposed_s = NAN;
  s->pod_exposed_s = s->pod_link_bytes = s->pod_link_busy_s = NAN;
  for (size_t i = 0; !rc && i < an__num_summary_doubles; i++) {
    if (an__summary_optional(an__summary_doubles[i].name) && H5Aexists(g, an__summary_doubles[i].name) <= 0)
      continue;
    rc = an__h5_attr_read_num(rd, g, "group '/summary'", an__summary_doubles[i].name, H5T_NATIVE_DOUBLE,
                       (char *)s + an__summary_doubles[i].off);
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

  return ST_OK;
}

/* /ranks and /collectives. */
static int read_ranks_colls(reader *rd, an_results *res)
{
  int rc;
  void *rows;
  size_t n;
  hid_t t;
  t = an__rank_type();
  if (t < 0)
    return an__h5_rfail(rd, ST_ENOMEM, "dataset '/ranks': cannot describe the rows");
  rc = an__h5_read_rows(rd, "ranks", t, 0, &rows, &n);
  H5Tclose(t);
  if (rc)
    return rc;
  res->ranks = rows;
  res->num_ranks = n;
  if (isfinite(res->summary.slowest_rank)) /* the list of critical ranks, from the rows */
    an_summary_critical(&res->summary, res->ranks, res->num_ranks);

  /* files written before the algo/proto/channels columns: without them */
  int with_run = 0;
  if (H5Lexists(rd->file, "collectives", H5P_DEFAULT) > 0) {
    hid_t ds = H5Dopen2(rd->file, "collectives", H5P_DEFAULT), ft = -1;
    if (ds >= 0 && (ft = H5Dget_type(ds)) >= 0 && H5Tget_class(ft) == H5T_COMPOUND)
      with_run = H5Tget_member_index(ft, "algo") >= 0;
    an__h5_close(&ft, H5Tclose);
    an__h5_close(&ds, H5Dclose);
  }
  if ((t = an__coll_type(with_run)) < 0)
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

  return ST_OK;
}

/* /timeline and /link_usage. */
static int read_timeline_usage(reader *rd, an_results *res)
{
  int rc;
  void *rows;
  size_t n;
  hid_t t;
  if ((t = an__timeline_type()) < 0)
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

  if ((t = an__link_usage_type()) < 0)
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

  return ST_OK;
}

/* /communicators and their members; the timeline's communicators checked against them. */
static int read_comms(reader *rd, an_results *res)
{
  int rc;
  void *rows;
  size_t n;
  hid_t t;
  if ((t = an__comm_type()) < 0)
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
  return ST_OK;
}

static int read_body(reader *rd, an_results *res)
{
  int rc;
  if ((rc = an__h5_attr_read_str(rd, rd->file, "group '/'", "simtrain_version", &res->version)) ||
      (rc = an__h5_attr_read_str(rd, rd->file, "group '/'", "command_line", &res->command_line)) ||
      (rc = an__h5_attr_read_str(rd, rd->file, "group '/'", "created_utc", &res->created_utc)))
    return rc;

  if ((rc = read_config_summary(rd, res)) || (rc = read_ranks_colls(rd, res)) ||
      (rc = read_links(rd, res)) || (rc = read_timeline_usage(rd, res)) ||
      (rc = read_comms(rd, res)))
    return rc;
  return (rc = read_replay(rd, res)) ? rc : read_jobs(rd, res);
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
