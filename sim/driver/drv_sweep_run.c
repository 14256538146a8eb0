/* drv_sweep_run.c — running a sweep's points (drv_sweep.c has the spec, the
 * points and the shard plan): each point in its own process (drv_pool_run),
 * one `run` (memory-fit strict: a layout that does not fit fails) or one
 * search; a failure, a crash or a time-out is recorded in its row and the
 * sweep goes on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

/* ---- running the points -------------------------------------------------------- */

void drv_sweep_opts_init(drv_sweep_opts *o)
{
  memset(o, 0, sizeof *o);
  o->shard = o->shards = 1;
  o->jobs = 1;
}

typedef struct sweep_ctx {
  const drv_sweep_spec *s;
  const drv_sweep_opts *o;
  const int *todo; /* the points of this shard, in order */
  int ntodo, done, failed;
  an_sweep_row *rows; /* [ntodo] */
} sweep_ctx;

void drv_sweep_row_summary(an_sweep_row *row, const an_summary *u)
{
  row->num_gpus = u->num_gpus;
  row->step_time_s = u->step_time_s;
  row->tokens_per_step = u->tokens_per_step;
  row->tokens_per_s = u->tokens_per_s;
  row->tokens_per_s_per_gpu = u->tokens_per_s_per_gpu;
  row->model_tflops_per_gpu = u->model_tflops_per_gpu;
  row->mfu = u->mfu;
  row->compute_s = u->compute_s;
  row->exposed_comm_s = u->exposed_comm_s;
  row->bubble_s = u->bubble_s;
  row->peak_memory_bytes = u->peak_memory_bytes;
  row->train_steps = u->train_steps;
  row->time_to_train_s = u->time_to_train_s;
  row->cost_usd = u->cost_usd;
  row->energy_MWh = u->energy_MWh;
}

static int run_point(const drv_sweep_spec *s, const drv_sweep_point_t *p, an_sweep_row *row,
                     st_err *err)
{
  drv_job j;
  drv_job_init(&j);
  j.model = s->models[p->model].path;
  j.layout = p->layout;
  j.cluster = p->cluster_arg;
  j.seq_len = p->seq;
  j.strict = 1;
  j.train_tokens = s->train_tokens;
  j.price_usd_per_gpu_hour = s->price_usd_per_gpu_hour;
  j.pue = s->pue;
  j.opt.quiet = 1;
  drv_run r;
  int rc = drv_run_job(&j, &r, err);
  if (!rc) {
    drv_sweep_row_summary(row, &r.sum);
    snprintf(row->layout, sizeof row->layout, "%s",
             r.wl->meta.layout ? r.wl->meta.layout : p->layout);
  }
  drv_run_release(&r);
  return rc;
}

static int search_point(const drv_sweep_spec *s, const drv_sweep_point_t *p, an_sweep_row *row,
                        st_err *err)
{
  drv_search_opts o;
  drv_search_opts_init(&o);
  o.model = s->models[p->model].path;
  o.cluster = p->cluster_arg;
  o.gbs = p->gbs;
  o.seq = p->seq;
  if (p->dtype)
    o.dtype = p->dtype;
  o.top = s->search_top;
  o.fixed = s->search_fixed;
  o.train_tokens = s->train_tokens;
  o.price_usd_per_gpu_hour = s->price_usd_per_gpu_hour;
  o.pue = s->pue;
  drv_search r;
  int rc = drv_search_run(&o, &r, err);
  if (!rc) {
    if (r.simulated > 0 && r.num > 0 && !r.cands[0].failed) {
      drv_sweep_row_summary(row, &r.cands[0].sum);
      snprintf(row->layout, sizeof row->layout, "%s", r.cands[0].layout);
      row->estimate_step_s = r.cands[0].estimate_s;
      row->estimate_rank = r.cands[0].estimate_rank;
    } else if (r.num == 0) {
      char need[32];
      st_format_bytes(r.min_peak_bytes, need, sizeof need);
      rc = st_err_set(err, ST_EINPUT, "search: none of %ld layouts fits (the smallest needs %s "
                      "per GPU)", r.enumerated, need);
    } else {
      rc = st_err_set(err, ST_ESIM, "search: every simulated layout failed (the best: %s)",
                      r.cands[0].failure);
    }
  }
  drv_search_release(&r);
  return rc;
}

static int point_task(void *u, int i, st_buf *reply, st_err *err)
{
  const sweep_ctx *x = u;
  drv_sweep_point_t p;
  drv_sweep_point(x->s, x->todo[i], &p);
  an_sweep_row row = x->rows[i];
  int rc = p.search ? search_point(x->s, &p, &row, err) : run_point(x->s, &p, &row, err);
  if (!rc)
    rc = st_buf_append(reply, &row, sizeof row);
  return rc;
}

static void point_done(void *u, int i, const drv_answer *a)
{
  sweep_ctx *x = u;
  an_sweep_row *row = &x->rows[i];
  if (a->end == DRV_END_DONE && !a->rc && a->len == sizeof *row) {
    memcpy(row, a->data, sizeof *row);
    snprintf(row->status, sizeof row->status, "ok");
  } else {
    x->failed++;
    snprintf(row->status, sizeof row->status, "%s",
             a->end == DRV_END_TIMEOUT ? "timeout" : a->end == DRV_END_CRASH ? "crashed" : "failed");
    if (a->end == DRV_END_DONE && a->rc)
      snprintf(row->error, sizeof row->error, "%s", a->msg);
    else if (a->end == DRV_END_TIMEOUT)
      snprintf(row->error, sizeof row->error, "no answer within %d s (--point-timeout)",
               x->o->point_timeout_s);
    else if (a->end == DRV_END_CRASH)
      snprintf(row->error, sizeof row->error, "the simulation crashed (signal %d)", a->signal);
    else
      snprintf(row->error, sizeof row->error, "the simulation ended without an answer");
  }
  x->done++;
  FILE *f = x->o->progress;
  if (f) {
    fprintf(f, "sweep: [%d/%d] point %d %s %s %s: ", x->done, x->ntodo, (int)row->point,
            row->model, row->request, row->cluster);
    if (strcmp(row->status, "ok"))
      fprintf(f, "%s: %s\n", row->status, row->error);
    else
      fprintf(f, "%.4f s/step, %.0f tokens/s/GPU in %.1f s (estimated %.1f s)\n",
              row->step_time_s, row->tokens_per_s_per_gpu, a->wall_s, row->cost_estimate_s);
    fflush(f);
  }
}

/* The inputs of point p in row (the numbers NaN until it ran). */
static void row_init(const drv_sweep_spec *s, const drv_sweep_point_t *p, double cost,
                     int num_gpus, an_sweep_row *row)
{
  an_sweep_row_clear(row);
  row->point = p->index;
  snprintf(row->model, sizeof row->model, "%s", s->models[p->model].name);
  snprintf(row->request, sizeof row->request, "%s", p->request);
  snprintf(row->cluster, sizeof row->cluster, "%s", s->clusters[p->cluster].name);
  row->nodes = p->nodes;
  row->num_gpus = num_gpus;
  row->gbs = p->gbs;
  row->seq = p->seq;
  snprintf(row->dtype, sizeof row->dtype, "%s", p->dtype ? p->dtype : "");
  snprintf(row->status, sizeof row->status, "failed");
  snprintf(row->layout, sizeof row->layout, "%s", p->layout);
  row->cost_estimate_s = cost;
}

int drv_sweep_run(const drv_sweep_spec *s, const drv_sweep_opts *o, an_sweep *out, int *failed,
                  st_err *err)
{
  memset(out, 0, sizeof *out);
  *failed = 0;
  if (o->shards < 1 || o->shard < 1 || o->shard > o->shards)
    return st_err_set(err, ST_EUSAGE, "sweep: shard %d of %d is not a shard", o->shard,
                      o->shards);
  int n = s->num_points;
  double *cost = malloc(((size_t)n + 1) * sizeof *cost);
  double *load = malloc(((size_t)o->shards + 1) * sizeof *load);
  int *shard_of = malloc(((size_t)n + 1) * sizeof *shard_of);
  int *todo = malloc(((size_t)n + 1) * sizeof *todo);
  int *gpus = malloc(((size_t)n + 1) * sizeof *gpus);
  an_sweep_row *rows = calloc((size_t)n + 1, sizeof *rows);
  int rc = ST_OK;
  if (!cost || !load || !shard_of || !todo || !gpus || !rows) {
    rc = st_err_set(err, ST_ENOMEM, "sweep: out of memory for %d points", n);
    goto out;
  }
  if ((rc = drv_sweep_plan(s, o->shards, cost, shard_of, load, gpus))) {
    rc = st_err_set(err, rc, "sweep: out of memory planning %d points", n);
    goto out;
  }
  int k = 0;
  for (int i = 0; i < n; i++) {
    if (shard_of[i] != o->shard)
      continue;
    drv_sweep_point_t p;
    drv_sweep_point(s, i, &p);
    row_init(s, &p, cost[i], gpus[i], &rows[k]);
    todo[k++] = i;
  }
  if (o->progress) {
    double mean = 0, max = 0;
    for (int i = 0; i < o->shards; i++) {
      mean += load[i] / o->shards;
      max = load[i] > max ? load[i] : max;
    }
    fprintf(o->progress, "sweep '%s': %d points", s->name, n);
    if (o->shards > 1)
      fprintf(o->progress, ", shard %d of %d: %d points, estimated %.0f s (shards: max/mean "
              "%.3f)", o->shard, o->shards, k, load[o->shard - 1], mean > 0 ? max / mean : 1);
    fprintf(o->progress, "\n");
    fflush(o->progress);
  }
  sweep_ctx x = {s, o, todo, k, 0, 0, rows};
  if (k > 0 && (rc = drv_pool_run(k, o->jobs, o->point_timeout_s, point_task, point_done, &x,
                                  err)))
    goto out;
  out->name = st_strdup(s->name);
  out->spec_json = st_strdup(s->spec_json);
  if (!out->name || !out->spec_json) {
    rc = st_err_set(err, ST_ENOMEM, "sweep: out of memory");
    goto out;
  }
  memcpy(out->digest, s->digest, sizeof out->digest);
  snprintf(out->kind, sizeof out->kind, "sweep");
  out->points = n;
  out->shard = o->shard;
  out->shards = o->shards;
  out->rows = rows;
  out->num_rows = (size_t)k;
  rows = NULL;
  *failed = x.failed;
out:
  if (rc) {
    free(out->name);
    free(out->spec_json);
    memset(out, 0, sizeof *out);
  }
  free(rows);
  free(todo);
  free(gpus);
  free(shard_of);
  free(load);
  free(cost);
  return rc;
}
