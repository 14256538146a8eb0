/* validate_gen.c — the project's predictor for a validation case: the
 * generators turn the case's model and layout into a workload, the cluster
 * is loaded, and the replay engine predicts the step.
 *
 * It needs the workload generators (wl_model_parse, wl_layout_parse,
 * wl_generate).  The build defines ST_HAVE_GENERATORS when workload.h
 * declares them (analysis/CMakeLists.txt); without them the predictor says
 * so instead of predicting. */
#include <math.h>
#include <stdio.h>

#include "analysis.h"

#ifdef ST_HAVE_GENERATORS

int an_predict_generated(const an_case *c, const plat_compute_params *overrides,
                         int num_overrides, an_prediction *out, st_err *err)
{
  for (int i = 0; i < num_overrides; i++)
    plat_compute_params_override(&overrides[i]);
  wl_model m;
  int rc = wl_model_parse(c->model_json, c->name, &m, err);
  if (rc)
    return rc;
  plat_cluster *cl = NULL;
  wl_layout l;
  wl_workload *wl = NULL;
  sim_result *r = NULL;
  if ((rc = an_case_check_size(c, wl_model_params(&m), err)) ||
      (rc = plat_cluster_load(c->cluster, &cl, err)) ||
      (rc = wl_layout_parse(c->layout, c->num_gpus, &m, &l, err)) ||
      (rc = wl_generate(&m, &l, &wl, err)))
    goto out;
  sim_options opt;
  sim_options_init(&opt);
  opt.quiet = 1;
  opt.link_stats = 0;   /* a prediction needs the step time only */
  opt.record_colls = 0;
  if ((rc = sim_run(wl, cl, &opt, &r, err)))
    goto out;
  out->step_time_s = r->step_time_s;
  out->tokens_per_s_per_gpu = (double)l.gbs * m.seq_len / r->step_time_s / wl->num_ranks;
out:
  sim_result_destroy(r);
  wl_workload_destroy(wl);
  plat_cluster_destroy(cl);
  wl_model_release(&m);
  return rc;
}

#else

int an_predict_generated(const an_case *c, const plat_compute_params *overrides,
                         int num_overrides, an_prediction *out, st_err *err)
{
  (void)overrides;
  (void)num_overrides;
  (void)out;
  (void)c;
  return st_err_set(err, ST_EINPUT,
                    "this build has no workload generators (model + layout -> workload), so it "
                    "cannot predict a case");
}

#endif
