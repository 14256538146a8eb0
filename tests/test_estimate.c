/* test_estimate.c — the search's analytic estimate (sim/driver/drv_estimate.c):
 * the stages run together against the closed form of the schedule. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "driver.h"

static void estimate(const char *model, const char *spec, const char *cluster, drv_estimate *e,
                     wl_layout *l)
{
  wl_model m;
  plat_cluster *cl = NULL;
  wl_workload *wl = NULL;
  st_err err;
  st_err_clear(&err);
  assert_int_equal(drv_model_load(model, NULL, 0, &m, &err), ST_OK);
  assert_int_equal(plat_cluster_load(cluster, &cl, &err), ST_OK);
  if (wl_layout_parse(spec, cl->num_gpus, &m, l, &err) || wl_generate(&m, l, &wl, &err))
    fail_msg("%s", err.msg);
  if (drv_estimate_workload(wl, cl, l->num_microbatches, l->vpp, e, &err))
    fail_msg("%s", err.msg);
  wl_workload_destroy(wl);
  plat_cluster_destroy(cl);
  wl_model_release(&m);
}

/* 1F1B with p stages and m micro-batches: the slowest stage's m
 * micro-batches plus one pass of every other stage (fill and drain):
 * (m - 1) t_max + sum_s t_s, which is the program of the slowest stage plus
 * (sum_s t_s - t_max).  Run together, the stages add only the activations'
 * transfers on the critical path (2 (p - 1) of them, microseconds): within
 * 1% above the closed form. */
static void test_together__1f1b_is_the_closed_form(void **state)
{
  (void)state;
  drv_estimate e;
  wl_layout l;
  estimate("llama3-8b", "tp=1,pp=4,mbs=1,gbs=16", "dgx-h100:1", &e, &l);
  assert_int_equal(e.coupled, 1);
  assert_int_equal(l.num_microbatches, 8);
  /* the closed form from the stages alone: the formula the estimate used before */
  drv_estimate f = e;
  (void)f;
  double closed = e.program_s + e.formula_bubble_s;
  if (!(e.step_s >= closed * (1 - 1e-9) && e.step_s <= closed * 1.01))
    fail_msg("together %.6f s, closed form %.6f s", e.step_s, closed);
}

/* One program (no pipeline): nothing to run together. */
static void test_together__needs_a_pipeline(void **state)
{
  (void)state;
  drv_estimate e;
  wl_layout l;
  estimate("llama3-8b", "tp=8,mbs=1,gbs=8", "dgx-h100:1", &e, &l);
  assert_int_equal(e.coupled, 0);
  assert_true(e.bubble_s == 0);
}

/* The interleaved schedule: the stages together wait at every virtual-stage
 * boundary, which the formula (p - 1) t / v does not see: never below it. */
static void test_together__interleaved_not_below_formula(void **state)
{
  (void)state;
  drv_estimate e;
  wl_layout l;
  estimate("llama3-8b", "tp=1,pp=4,vpp=4,mbs=1,gbs=16", "dgx-h100:1", &e, &l);
  assert_int_equal(e.coupled, 1);
  printf("interleaved: together %.6f s, formula %.6f s\n", e.step_s,
         e.program_s + e.formula_bubble_s);
  assert_true(e.step_s >= (e.program_s + e.formula_bubble_s) * (1 - 1e-9));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_together__1f1b_is_the_closed_form),
      cmocka_unit_test(test_together__needs_a_pipeline),
      cmocka_unit_test(test_together__interleaved_not_below_formula),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
