/* drv_balance.c — balance=compute: a layout's uneven splits from the
 * speeds of a cluster's node groups (docs/workloads.md, "Clusters of unlike
 * GPUs").
 *
 * Each group's speed is its device's compute time for the model: one
 * transformer layer's forward and backward for one micro-batch (t_k, the
 * difference of probes of two layers and one), and the rest of a step's
 * compute (e_k: embedding, output layer and loss), priced by the compute
 * model on the group's device; the probe runs the layout's tp, cp, sp, mbs,
 * dtype and recomputation with pp = dp = 1.  Communication is not counted:
 * this balances compute, as its name says.
 *
 * Then, greedily (each step the cheapest, which is optimal for a min-max of
 * sums that grow by a fixed step):
 *   stage_layers     stage s costs L_s w_s (+ e on the last stage), w_s the
 *                    slowest t_k among its GPUs; layers go vpp at a time
 *                    to the stage whose cost after taking them is least;
 *   dp_microbatches  replica d costs m_d tau_d, tau_d = the largest stage
 *                    cost per micro-batch among its ranks; micro-batches go
 *                    one (pp under the interleaved schedule) at a time to
 *                    the replica whose cost after taking them is least.
 * A split that comes out even is left out, so a cluster split by stage
 * gets only stage_layers, one split by replica only dp_microbatches.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

/* Compute seconds of rank 0's program of the probe on device d. */
static int probe_time(const wl_model *m, const wl_layout *l, int layers, const plat_device *d,
                      double *t, st_err *err)
{
  wl_model pm = *m;
  pm.layers = layers;
  char spec[300];
  snprintf(spec, sizeof spec, "tp=%d,cp=%d,sp=%d,mbs=%d,gbs=%d,pp=1,dp=1,dtype=%s,flash=%d%s",
           l->tp, l->cp, l->sp, l->mbs, l->mbs, wl_dtype_name(l->dtype), l->flash,
           l->recompute == WL_RECOMPUTE_FULL        ? ",recompute=full"
           : l->recompute == WL_RECOMPUTE_SELECTIVE ? ",recompute=selective"
                                                    : "");
  wl_layout pl;
  wl_workload *wl = NULL;
  int rc = wl_layout_parse(spec, l->tp * l->cp, &pm, &pl, err);
  if (!rc)
    rc = wl_generate(&pm, &pl, &wl, err);
  if (rc)
    return st_err_prefix(err, "balance=compute: the probe of one micro-batch: ");
  const wl_program *p = &wl->programs[wl->rank_program[0]];
  double s = 0;
  for (size_t i = 0; i < p->num_ops; i++)
    if (p->ops[i].kind == WL_OP_COMPUTE)
      s += plat_compute_time(d, &p->ops[i]);
  wl_workload_destroy(wl);
  *t = s;
  return ST_OK;
}

/* The slowest group among GPUs [lo, hi) of a stride: the largest of v[]. */
static double worst(const plat_cluster *cl, const double *v, int lo, int hi, int step)
{
  double w = 0;
  for (int g = lo; g < hi && g < cl->num_gpus; g += step)
    w = fmax(w, v[plat_gpu_group(cl, g)]);
  return w;
}

/* list "a/b/c" of n integers, or run-length "a*k/b" with runs */
static void put_list(char *out, size_t cap, const int *v, int n, int runs)
{
  size_t len = 0;
  out[0] = '\0';
  for (int i = 0; i < n && len < cap;) {
    int k = 1;
    while (runs && i + k < n && v[i + k] == v[i])
      k++;
    len += (size_t)snprintf(out + len, cap - len, k > 1 ? "%s%d*%d" : "%s%d", i ? "/" : "", v[i], k);
    i += k;
  }
}

static int all_equal(const int *v, int n)
{
  for (int i = 1; i < n; i++)
    if (v[i] != v[0])
      return 0;
  return 1;
}

/* Layers per stage: L (vpp at a time) by least cost after the step. */
static void split_layers(const plat_cluster *cl, const wl_layout *l, int layers, const double *t,
                         const double *e, int *L, double *w, double *ex)
{
  int R = l->num_gpus / l->pp;
  for (int s = 0; s < l->pp; s++) {
    w[s] = worst(cl, t, s * R, (s + 1) * R, 1);
    ex[s] = s == l->pp - 1 ? worst(cl, e, s * R, (s + 1) * R, 1) : 0;
    L[s] = l->vpp;
  }
  for (int left = layers - l->pp * l->vpp; left > 0; left -= l->vpp) {
    int best = 0;
    for (int s = 1; s < l->pp; s++)
      if ((L[s] + l->vpp) * w[s] + ex[s] < (L[best] + l->vpp) * w[best] + ex[best])
        best = s;
    L[best] += l->vpp;
  }
}

int drv_balance(const wl_model *m, const plat_cluster *cl, wl_layout *l, char *note, size_t cap,
                st_err *err)
{
  note[0] = '\0';
  if (!l->balance)
    return ST_OK;
  if (l->stage_layers[0] || l->dp_microbatches[0])
    return st_err_set(err, ST_EINPUT,
                      "layout '%s': balance=compute chooses stage_layers and dp_microbatches "
                      "itself: give the one or the others",
                      l->spec);
  if (cl->num_groups <= 1) {
    snprintf(note, cap, "balance=compute: every GPU of %s is alike; the even split stands",
             cl->name);
    return ST_OK;
  }
  int ng = cl->num_groups, rc = ST_OK;
  double *t = calloc((size_t)ng * 2, sizeof *t), *e = t ? t + ng : NULL;
  int *L = calloc(WL_MAX_STAGES, sizeof *L), *mb = calloc((size_t)l->dp, sizeof *mb);
  double *w = calloc(WL_MAX_STAGES * 2, sizeof *w), *ex = w ? w + WL_MAX_STAGES : NULL;
  if (!t || !L || !mb || !w) {
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
    goto out;
  }
  for (int k = 0; k < ng && !rc; k++) {
    double one, two;
    if (!(rc = probe_time(m, l, 1, &cl->groups[k].device, &one, err)) &&
        !(rc = probe_time(m, l, 2, &cl->groups[k].device, &two, err))) {
      t[k] = two - one;
      e[k] = fmax(0, one - t[k]);
    }
  }
  if (rc)
    goto out;
  split_layers(cl, l, m->layers, t, e, L, w, ex);
  /* replicas: the largest stage cost per micro-batch among a replica's ranks */
  int TC = l->tp * l->cp, R = l->num_gpus / l->pp, step = l->schedule == WL_SCHED_INTERLEAVED ? l->pp : 1;
  int total = l->gbs / l->mbs, can_dp = l->dp > 1 && l->zero != 3 && l->ep == 1;
  double *tau = (double *)calloc((size_t)l->dp, sizeof *tau);
  if (!tau) {
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
    goto out;
  }
  for (int d = 0; d < l->dp; d++) {
    mb[d] = step;
    for (int s = 0; s < l->pp; s++) {
      int lo = s * R + d * TC;
      double c = 0;
      for (int g = lo; g < lo + TC; g++) {
        int k = plat_gpu_group(cl, g);
        c = fmax(c, L[s] * t[k] + (s == l->pp - 1 ? e[k] : 0));
      }
      tau[d] = fmax(tau[d], c);
    }
  }
  for (int left = total - l->dp * step; can_dp && left >= step; left -= step) {
    int best = 0;
    for (int d = 1; d < l->dp; d++)
      if ((mb[d] + step) * tau[d] < (mb[best] + step) * tau[best])
        best = d;
    mb[best] += step;
  }
  free(tau);
  char stages[WL_LIST_MAX] = "", reps[WL_LIST_MAX] = "";
  if (l->pp > 1 && !all_equal(L, l->pp))
    put_list(stages, sizeof stages, L, l->pp, 0);
  if (can_dp && !all_equal(mb, l->dp))
    put_list(reps, sizeof reps, mb, l->dp, 1);
  /* the layout again, with the lists in place of balance */
  char spec[sizeof l->spec + 2 * WL_LIST_MAX + 64];
  snprintf(spec, sizeof spec, "%s", l->spec);
  char *b = strstr(spec, ",balance=compute");
  if (b)
    *b = '\0';
  size_t n = strlen(spec);
  if (stages[0])
    n += (size_t)snprintf(spec + n, sizeof spec - n, ",stage_layers=%s", stages);
  if (reps[0])
    snprintf(spec + n, sizeof spec - n, ",dp_microbatches=%s", reps);
  wl_layout nl;
  if ((rc = wl_layout_parse(spec, l->num_gpus, m, &nl, err)))
    goto out;
  *l = nl;
  n = (size_t)snprintf(note, cap, "balance=compute: %s%s%s%s%s (compute per layer and micro-batch:",
                       stages[0] ? "stage_layers=" : "", stages, stages[0] && reps[0] ? ", " : "",
                       reps[0] ? "dp_microbatches=" : "", reps);
  if (!stages[0] && !reps[0])
    n = (size_t)snprintf(note, cap, "balance=compute: the even split is the balanced one (compute "
                                    "per layer and micro-batch:");
  for (int k = 0; k < ng && n < cap; k++)
    n += (size_t)snprintf(note + n, cap - n, "%s %s %.3g ms", k ? "," : "", cl->groups[k].name,
                          t[k] * 1e3);
  if (n < cap)
    snprintf(note + n, cap - n, ")");
out:
  free(t);
  free(L);
  free(mb);
  free(w);
  return rc;
}
