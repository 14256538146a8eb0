/* train.c — from one predicted step to a whole training run: how many steps
 * a token budget takes, how long, what it costs and how much energy it uses
 * (docs/cost.md gives the formulas, the power model's assumptions and the
 * sources of the TDPs, node powers and prices).
 *
 * Every step is the simulated steady-state step: no warm-up, checkpointing,
 * evaluation, restarts or failures (analysis/failures.c adds those for
 * `simtrain train`).  The power model is a mean over the
 * step: each GPU is busy for its compute time and, at a share of the dynamic
 * power, for its exposed communication; the rest of the step (bubble, idle)
 * it draws its idle power.  Communication hidden under compute costs nothing
 * extra (the GPU is already counted busy). */
#include <math.h>
#include <string.h>

#include "analysis.h"

void an_power_from_cluster(const plat_cluster *cl, an_power *p)
{
  memset(p, 0, sizeof *p);
  p->tdp_W = cl && cl->device.tdp_W > 0 ? cl->device.tdp_W : NAN;
  p->host_W_per_gpu = cl && cl->gpus_per_node > 0 ? cl->host_power_W / cl->gpus_per_node : NAN;
  if (cl && cl->num_groups > 1) { /* node groups: the means over the cluster's GPUs */
    double t = plat_gpus_sum(cl, cl->num_gpus, plat_dev_tdp, NULL) / cl->num_gpus, h = 0;
    p->tdp_W = t > 0 ? t : NAN;
    for (int k = 0; k < cl->num_groups; k++)
      h += cl->groups[k].num_nodes * cl->groups[k].host_power_W;
    p->host_W_per_gpu = h / cl->num_gpus;
  }
  p->idle_W = p->tdp_W * AN_IDLE_FRACTION;
}

/* The fewest whole steps that train at least `tokens`: ceil of the quotient,
 * corrected where the division rounded across a whole number. */
static double steps_for(double tokens, double per_step)
{
  double n = ceil(tokens / per_step);
  if (n > 1 && (n - 1) * per_step >= tokens)
    n -= 1;
  else if (n * per_step < tokens)
    n += 1;
  return n;
}

static void clear_train(an_summary *s)
{
  s->train_tokens = s->train_steps = s->time_to_train_s = NAN;
  s->price_usd_per_gpu_hour = s->cost_usd = NAN;
  s->gpu_busy_fraction = s->power_W = s->pue = s->energy_MWh = NAN;
}

int an_train_check(double tokens, double price_usd_per_gpu_hour, double pue, st_err *err)
{
  if (!isfinite(tokens) || tokens <= 0)
    return st_err_set(err, ST_EUSAGE, "the token budget is %g; it must be a positive number",
                      tokens);
  if (!isnan(price_usd_per_gpu_hour) &&
      !(price_usd_per_gpu_hour >= 0 && isfinite(price_usd_per_gpu_hour)))
    return st_err_set(err, ST_EUSAGE, "the price is %g USD per GPU-hour; it must be 0 or more",
                      price_usd_per_gpu_hour);
  if (!(pue >= 1) || !isfinite(pue))
    return st_err_set(err, ST_EUSAGE, "the PUE is %g; it must be 1 or more", pue);
  return ST_OK;
}

int an_train_compute(an_summary *s, const an_power *p, double tokens, double price_usd_per_gpu_hour,
                     double pue, st_err *err)
{
  clear_train(s);
  int rc = an_train_check(tokens, price_usd_per_gpu_hour, pue, err);
  if (rc)
    return rc;
  if (!(s->tokens_per_step > 0) || !isfinite(s->tokens_per_step))
    return st_err_set(err, ST_EINPUT, "%s", AN_TRAIN_NO_TOKENS);
  if (!(s->step_time_s > 0) || !isfinite(s->step_time_s))
    return st_err_set(err, ST_EINPUT, "the step time is %g s: no time to train", s->step_time_s);
  s->train_tokens = tokens;
  s->train_steps = steps_for(tokens, s->tokens_per_step);
  s->time_to_train_s = s->train_steps * s->step_time_s;
  s->price_usd_per_gpu_hour = price_usd_per_gpu_hour;
  s->cost_usd = s->num_gpus * (s->time_to_train_s / 3600) * price_usd_per_gpu_hour;
  s->pue = pue;
  double busy = (s->compute_s + AN_COMM_POWER_SHARE * s->exposed_comm_s) / s->step_time_s;
  s->gpu_busy_fraction = busy < 0 ? 0 : busy > 1 ? 1 : busy;
  if (p && p->tdp_W > 0 && isfinite(p->host_W_per_gpu)) {
    double gpu_W = p->idle_W + (p->tdp_W - p->idle_W) * s->gpu_busy_fraction;
    s->power_W = s->num_gpus * (gpu_W + p->host_W_per_gpu);
    s->energy_MWh = s->power_W * s->time_to_train_s * pue / 3.6e9;
  }
  return ST_OK;
}
