/* drv_train.c — `simtrain train`: a whole training run with failures,
 * checkpoints and restarts, from one simulated step.
 *
 * The step comes from drv_run_job (the same job as `run`), or is given
 * (--step-time: the model and the layout still say the tokens per step and
 * the model's size, the cluster the GPUs and nodes).  Then the failure
 * model of analysis/failures.c: the job's failure rate is gpus / MTBF_gpu +
 * nodes / MTBF_node, the checkpoint takes its bytes (by default the
 * model's weights and optimizer state, what wl_memory counts: 2 + 12 bytes a
 * parameter) over the storage bandwidth, a restart reschedules and reads the
 * checkpoint back at the same bandwidth.  docs/failures.md cites the
 * defaults. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

/* Checkpointed bytes per parameter: bf16 weights (2) and the fp32 master
 * weights and Adam moments (12), as wl_memory.c counts them. */
#define CKPT_BYTES_PER_PARAM 14.0

void drv_train_opts_init(drv_train_opts *o)
{
  memset(o, 0, sizeof *o);
  drv_job_init(&o->job);
  o->mtbf_gpu_h = DRV_MTBF_GPU_H;
  o->mtbf_node_h = DRV_MTBF_NODE_H;
  o->storage_GBps = DRV_STORAGE_GBPS;
  o->reschedule_s = DRV_RESCHEDULE_S;
  o->restart_s = NAN;
  o->spare_nodes = -1;
  o->repair_h = DRV_REPAIR_H;
  o->trials = DRV_TRAIN_TRIALS;
  o->seed = 1;
  static const double scales[] = {0.25, 0.5, 1, 2, 4};
  memcpy(o->sweep_scales, scales, sizeof scales);
  o->num_sweep_scales = 5;
  o->sweep_points = 41;
}

static void copy_name(char *dst, size_t n, const char *src)
{
  snprintf(dst, n, "%s", src ? src : "");
}

/* The step without simulation: tokens per step from the layout, GPUs and
 * nodes from the cluster. */
static int given_step(const drv_train_opts *o, an_failure_report *r, double *params, st_err *err)
{
  const drv_job *j = &o->job;
  if (!j->model || !j->layout)
    return st_err_set(err, ST_EUSAGE, "--step-time needs --model and --layout (for the tokens "
                                      "per step and the model's size)");
  plat_cluster *cl = NULL;
  wl_model m;
  wl_layout l;
  int rc = plat_cluster_load(j->cluster, &cl, err);
  if (!rc)
    rc = drv_model_load(j->model, j->model_spec, j->seq_len, &m, err);
  if (!rc)
    rc = wl_layout_parse(j->layout, cl->num_gpus, &m, &l, err);
  if (!rc) {
    an_summary s;
    memset(&s, 0, sizeof s);
    s.num_gpus = cl->num_gpus;
    s.step_time_s = o->step_time_s;
    s.tokens_per_step = (double)l.gbs * m.seq_len;
    rc = an_train_compute(&s, NULL, j->train_tokens, NAN, 1, err);
    r->num_gpus = cl->num_gpus;
    r->num_nodes = cl->num_nodes;
    r->step_time_s = o->step_time_s;
    r->tokens_per_step = s.tokens_per_step;
    r->train_steps = s.train_steps;
    r->p.work_s = s.time_to_train_s;
    copy_name(r->workload, sizeof r->workload, m.name);
    copy_name(r->cluster, sizeof r->cluster, cl->name);
    copy_name(r->device, sizeof r->device, cl->device.name);
    *params = wl_model_params(&m);
  }
  plat_cluster_destroy(cl);
  return rc;
}

static int simulated_step(const drv_train_opts *o, an_failure_report *r, double *params,
                          st_err *err)
{
  drv_run run;
  int rc = drv_run_job(&o->job, &run, err);
  if (!rc) {
    const an_summary *s = &run.sum;
    int per_node = run.cl->gpus_per_node > 0 ? run.cl->gpus_per_node : 1;
    r->simulated = 1;
    r->num_gpus = s->num_gpus;
    /* the nodes its GPUs are on (node groups may have unlike GPUs per node) */
    r->num_nodes = s->num_gpus >= 1 && s->num_gpus <= run.cl->num_gpus
                       ? plat_gpu_node(run.cl, s->num_gpus - 1) + 1
                       : (s->num_gpus + per_node - 1) / per_node;
    r->step_time_s = s->step_time_s;
    r->tokens_per_step = s->tokens_per_step;
    r->train_steps = s->train_steps;
    r->p.work_s = s->time_to_train_s;
    copy_name(r->workload, sizeof r->workload, run.name);
    copy_name(r->cluster, sizeof r->cluster, run.cl->name);
    copy_name(r->device, sizeof r->device, run.cl->device.name);
  }
  drv_run_release(&run);
  *params = NAN;
  if (!rc && o->job.model && !(o->ckpt_bytes > 0)) {
    wl_model m;
    rc = drv_model_load(o->job.model, o->job.model_spec, o->job.seq_len, &m, err);
    if (!rc)
      *params = wl_model_params(&m);
  }
  return rc;
}

static int check_opts(const drv_train_opts *o, st_err *err)
{
  if (!(o->job.train_tokens > 0))
    return st_err_set(err, ST_EUSAGE, "--tokens is required: the token budget of the run");
  if (!(o->mtbf_gpu_h > 0))
    return st_err_set(err, ST_EUSAGE, "--mtbf-gpu-h is %g; it must be positive", o->mtbf_gpu_h);
  if (!(o->mtbf_node_h > 0))
    return st_err_set(err, ST_EUSAGE, "--mtbf-node-h is %g; it must be positive", o->mtbf_node_h);
  if (!(o->storage_GBps > 0) || !isfinite(o->storage_GBps))
    return st_err_set(err, ST_EUSAGE, "--storage-GBps is %g; it must be positive",
                      o->storage_GBps);
  if (!o->job.model && !(o->ckpt_bytes > 0))
    return st_err_set(err, ST_EUSAGE, "--ckpt-bytes is needed: the workload does not say the "
                                      "model's size (give --model, or the checkpoint's bytes)");
  if (!(o->ckpt_bytes >= 0) || !isfinite(o->ckpt_bytes))
    return st_err_set(err, ST_EUSAGE, "--ckpt-bytes is %g; it must be positive", o->ckpt_bytes);
  if (!(o->interval_s >= 0) || !isfinite(o->interval_s))
    return st_err_set(err, ST_EUSAGE, "--ckpt-interval is %g; it must be positive", o->interval_s);
  if (!(o->reschedule_s >= 0) || !isfinite(o->reschedule_s))
    return st_err_set(err, ST_EUSAGE, "the rescheduling time is %g s; it must be 0 or more",
                      o->reschedule_s);
  if (!isnan(o->restart_s) && (!(o->restart_s >= 0) || !isfinite(o->restart_s)))
    return st_err_set(err, ST_EUSAGE, "--restart-s is %g; it must be 0 or more", o->restart_s);
  if (!(o->repair_h >= 0) || !isfinite(o->repair_h))
    return st_err_set(err, ST_EUSAGE, "--repair-h is %g; it must be 0 or more", o->repair_h);
  if (o->trials < 1 || o->trials > AN_FAILURE_MAX_TRIALS)
    return st_err_set(err, ST_EUSAGE, "--trials is %d; give 1 to %d", o->trials,
                      AN_FAILURE_MAX_TRIALS);
  if (o->step_time_s < 0 || !isfinite(o->step_time_s))
    return st_err_set(err, ST_EUSAGE, "--step-time is %g; it must be positive", o->step_time_s);
  if (o->sweep && (o->num_sweep_scales < 1 || o->num_sweep_scales > DRV_TRAIN_MAX_SCALES))
    return st_err_set(err, ST_EUSAGE, "%d MTBF scales: give 1 to %d", o->num_sweep_scales,
                      DRV_TRAIN_MAX_SCALES);
  return ST_OK;
}

int drv_train_run(const drv_train_opts *o, an_failure_report *r, st_err *err)
{
  memset(r, 0, sizeof *r);
  int rc = check_opts(o, err);
  if (rc)
    return rc;
  double params = NAN;
  rc = o->step_time_s > 0 ? given_step(o, r, &params, err) : simulated_step(o, r, &params, err);
  if (rc)
    return rc;
  r->train_tokens = o->job.train_tokens;
  r->mtbf_gpu_h = o->mtbf_gpu_h;
  r->mtbf_node_h = o->mtbf_node_h;
  r->storage_GBps = o->storage_GBps;
  r->reschedule_s = o->reschedule_s;
  r->repair_h = o->repair_h;
  r->ckpt_bytes = o->ckpt_bytes > 0 ? o->ckpt_bytes : params * CKPT_BYTES_PER_PARAM;
  if (!(r->ckpt_bytes > 0) || !isfinite(r->ckpt_bytes))
    return st_err_set(err, ST_EUSAGE, "--ckpt-bytes is needed: the workload does not say the "
                                      "model's size (give --model, or the checkpoint's bytes)");

  an_failure_params *p = &r->p;
  p->rate_per_s = (r->num_gpus / o->mtbf_gpu_h + r->num_nodes / o->mtbf_node_h) / 3600;
  r->job_mtbf_s = p->rate_per_s > 0 ? 1 / p->rate_per_s : INFINITY;
  p->ckpt_s = r->ckpt_bytes / (o->storage_GBps * 1e9);
  p->restart_s = isnan(o->restart_s) ? o->reschedule_s + p->ckpt_s : o->restart_s;
  p->repair_s = o->repair_h * 3600;
  p->spare_nodes = o->spare_nodes;
  r->young_s = an_failure_young_s(p->ckpt_s, r->job_mtbf_s);
  r->daly_s = an_failure_daly_s(p->ckpt_s, r->job_mtbf_s);
  p->interval_s = p->work_s; /* for the check; the optimum needs a valid p */
  if ((rc = an_failure_check(p, err)))
    return rc;
  r->optimal_s = an_failure_optimal_s(p);
  r->interval_auto = !(o->interval_s > 0);
  p->interval_s = r->interval_auto ? r->optimal_s : o->interval_s;
  an_failure_expect(p, &r->analytic);

  r->trials = o->trials;
  r->seed = o->seed;
  r->finish_s = malloc((size_t)o->trials * sizeof *r->finish_s);
  if (!r->finish_s)
    return st_err_set(err, ST_ENOMEM, "out of memory for %d trials", o->trials);
  if ((rc = an_failure_simulate(p, o->trials, o->seed, r->finish_s, &r->mc, err)))
    return rc;
  if (o->sweep) {
    size_t n = (size_t)o->num_sweep_scales * o->sweep_points;
    if (!(r->sweep = malloc(n * sizeof *r->sweep)))
      return st_err_set(err, ST_ENOMEM, "out of memory for the sweep");
    r->sweep_scales = o->num_sweep_scales;
    r->sweep_points = o->sweep_points;
    rc = an_failure_sweep(p, o->sweep_scales, o->num_sweep_scales, o->sweep_points, r->sweep, err);
  }
  return rc;
}
