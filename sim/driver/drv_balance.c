/* drv_balance.c — balance=compute|time: a layout's uneven splits from the
 * speeds of a cluster's node groups (docs/workloads.md, "Clusters of unlike
 * GPUs").
 *
 * Each group's speed is its time for the model: one transformer layer's
 * forward and backward for one micro-batch (t_k), and the rest of a
 * micro-batch (e_k: embedding, output layer and loss).  The probe runs the
 * layout's tp, cp, sp, mbs, dtype and recomputation with pp = dp = 1.
 *   compute  the probe's compute ops priced by the compute model on the
 *            group's device; t_k the difference of probes of two layers and
 *            of one.  Communication is not counted.
 *   time     the probe simulated on one node of the group (the engine, in a
 *            child process: SimGrid runs one engine per process), so the
 *            tensor- and context-parallel collectives inside a micro-batch
 *            count as they run; per layer count L in {1, 2}, the step of two
 *            micro-batches less the step of one is L t_k + e_k.
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
/* The probe: the model with `layers` layers, `mb` micro-batches, pp = dp = 1. */
static int probe_make(const wl_model *m, const wl_layout *l, int layers, int mb, wl_workload **wl,
                      st_err *err)
{
  wl_model pm = *m;
  pm.layers = layers;
  char spec[640], sw[256], mods[128];
  wl_layout sl = *l;
  sl.moe_dispatcher = WL_MOE_ALLTOALL; /* the probe has no expert parallelism (ep 1) */
  wl_layout_software_keys(&sl, sw, sizeof sw);
  wl_layout_recompute_modules(l, mods, sizeof mods);
  snprintf(spec, sizeof spec,
           "tp=%d,cp=%d,sp=%d,mbs=%d,gbs=%d,pp=1,dp=1,dtype=%s,recompute=%s%s%s,%s", l->tp, l->cp,
           l->sp, l->mbs, l->mbs * mb, wl_dtype_name(l->dtype), wl_recompute_name(l->recompute),
           mods[0] ? ",recompute_modules=" : "", mods, sw);
  wl_layout pl;
  int rc = wl_layout_parse(spec, l->tp * l->cp, &pm, &pl, err);
  if (!rc)
    rc = wl_generate(&pm, &pl, wl, err);
  return rc ? st_err_prefix(err, "balance: the probe (%s): ", spec) : ST_OK;
}

/* Compute seconds of rank 0's program of the probe on device d. */
static int probe_time(const wl_model *m, const wl_layout *l, int layers, const plat_device *d,
                      double *t, st_err *err)
{
  wl_workload *wl = NULL;
  int rc = probe_make(m, l, layers, 1, &wl, err);
  if (rc)
    return rc;
  const wl_program *p = &wl->programs[wl->rank_program[0]];
  double s = 0;
  for (size_t i = 0; i < p->num_ops; i++)
    if (p->ops[i].kind == WL_OP_COMPUTE)
      s += plat_compute_time(d, &p->ops[i]);
  wl_workload_destroy(wl);
  *t = s;
  return ST_OK;
}

/* balance=time: the probes simulated, each in a child process. */
typedef struct sim_probe {
  const wl_model *m;
  const wl_layout *l;
  const plat_cluster *cl;
  double *step; /* [(k * 2 + L - 1) * 2 + mb - 1] */
} sim_probe;

static int probe_task(void *u, int i, st_buf *reply, st_err *err)
{
  const sim_probe *x = u;
  int k = i / 4, layers = i / 2 % 2 + 1, mb = i % 2 + 1;
  plat_cluster *node = NULL;
  wl_workload *wl = NULL;
  sim_result *res = NULL;
  int rc = plat_cluster_group_node(x->cl, k, &node, err);
  if (!rc)
    rc = probe_make(x->m, x->l, layers, mb, &wl, err);
  sim_options o;
  sim_options_init(&o);
  o.quiet = 1;
  if (!rc)
    rc = sim_run(wl, node, &o, &res, err);
  if (!rc)
    rc = st_buf_append(reply, &res->step_time_s, sizeof res->step_time_s);
  sim_result_destroy(res);
  wl_workload_destroy(wl);
  free(node);
  return rc;
}

static void probe_done(void *u, int i, const drv_answer *a)
{
  const sim_probe *x = u;
  x->step[i] = NAN;
  if (a->end == DRV_END_DONE && !a->rc && a->len == sizeof(double))
    memcpy(&x->step[i], a->data, sizeof(double));
}

static int probe_simulated(const wl_model *m, const wl_layout *l, const plat_cluster *cl, double *t,
                           double *e, st_err *err)
{
  int ng = cl->num_groups;
  double *step = calloc((size_t)ng * 4, sizeof *step);
  if (!step)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  sim_probe x = {m, l, cl, step};
  int rc = drv_pool_run(ng * 4, 1, 0, probe_task, probe_done, &x, err);
  for (int k = 0; k < ng && !rc; k++) {
    const double *s = &step[k * 4];
    double a1 = s[1] - s[0], a2 = s[3] - s[2]; /* t + e, 2t + e */
    if (!isfinite(a1) || !isfinite(a2) || a2 <= a1)
      rc = st_err_set(err, ST_ESIM, "balance=time: the probes of group '%s' did not run (steps "
                      "%g %g %g %g s)", cl->groups[k].name, s[0], s[1], s[2], s[3]);
    else {
      t[k] = a2 - a1;
      e[k] = fmax(0, a1 - t[k]);
    }
  }
  free(step);
  return rc;
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
  const char *how = l->balance == WL_BALANCE_TIME ? "time" : "compute";
  if (l->stage_layers[0] || l->dp_microbatches[0])
    return st_err_set(err, ST_EINPUT,
                      "layout '%s': balance=%s chooses stage_layers and dp_microbatches "
                      "itself: give the one or the others",
                      l->spec, how);
  if (cl->num_groups <= 1) {
    snprintf(note, cap, "balance=%s: every GPU of %s is alike; the even split stands", how,
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
  if (l->balance == WL_BALANCE_TIME)
    rc = probe_simulated(m, l, cl, t, e, err);
  for (int k = 0; k < ng && !rc && l->balance != WL_BALANCE_TIME; k++) {
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
  char *b = strstr(spec, ",balance=");
  if (b) { /* the key out, wherever it stands */
    char *next = strchr(b + 1, ',');
    memmove(b, next ? next : b + strlen(b), strlen(next ? next : b + strlen(b)) + 1);
  }
  size_t n = strlen(spec);
  if (stages[0])
    n += (size_t)snprintf(spec + n, sizeof spec - n, ",stage_layers=%s", stages);
  if (reps[0])
    snprintf(spec + n, sizeof spec - n, ",dp_microbatches=%s", reps);
  wl_layout nl;
  if ((rc = wl_layout_parse(spec, l->num_gpus, m, &nl, err)))
    goto out;
  *l = nl;
  const char *what = how;
  n = (size_t)snprintf(note, cap, "balance=%s: %s%s%s%s%s (%s per layer and micro-batch:", what,
                       stages[0] ? "stage_layers=" : "", stages, stages[0] && reps[0] ? ", " : "",
                       reps[0] ? "dp_microbatches=" : "", reps, what);
  if (!stages[0] && !reps[0])
    n = (size_t)snprintf(note, cap, "balance=%s: the even split is the balanced one (%s per "
                                    "layer and micro-batch:", what, what);
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
