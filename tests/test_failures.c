/* test_failures.c — the whole-run failure model (analysis/failures.c):
 * the random numbers (xoshiro256** against values worked out by hand, the
 * library-free logarithm against log), Young's and Daly's intervals, the
 * analytic expectation against its closed form written out by hand, the
 * optimum against Young, Daly and the exact root of the first-order
 * condition, the Monte-Carlo against the analytic expectation, and the
 * determinism of a seed.  Golden numbers were computed with awk from the
 * formulas in docs/failures.md, not by the code under test. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis.h"

static void assert_close(double got, double want, double rel)
{
  double d = fabs(got - want), m = fabs(want) > 1 ? fabs(want) : 1;
  if (!(d <= rel * m))
    fail_msg("got %.17g, want %.17g (relative %.3g > %.3g)", got, want, d / m, rel);
}

static an_failure_params params(double work, double rate, double ckpt, double restart,
                                double interval)
{
  an_failure_params p = {work, rate, ckpt, restart, 0, -1, interval};
  return p;
}

/* ---- random numbers ------------------------------------------------------------ */

/* From the state {1, 2, 3, 4}, stepped by hand through xoshiro256**'s
 * update: rotl(2*5, 7)*9 = 11520; then s1 = 0 gives 0; then s1 = 262149
 * gives rotl(262149*5, 7)*9 = 1509978240. */
static void test_rng__xoshiro_matches_hand_steps(void **state)
{
  (void)state;
  st_rng r = {{1, 2, 3, 4}};
  assert_int_equal(st_rng_next(&r), 11520);
  assert_int_equal(st_rng_next(&r), 0);
  assert_int_equal(st_rng_next(&r), 1509978240ULL);
}

static void test_rng__log_agrees_with_libm(void **state)
{
  (void)state;
  for (double x = 1e-300; x < 1; x *= 1.37)
    assert_close(st_rng_log(x), log(x), 4e-16);
  assert_true(st_rng_log(1.0) == 0.0);
  assert_close(st_rng_log(0x1p-53), -53 * log(2.0), 1e-16);
}

/* The normal draw: over 10^6 draws its mean is within 5 standard errors
 * (5 / 1000) of 0, its variance within 1% of 1 (the variance's standard
 * error is sqrt(2 / 10^6) = 0.14%). */
static void test_rng__normal_has_mean_0_variance_1(void **state)
{
  (void)state;
  st_rng r;
  st_rng_seed(&r, 7, 0);
  double s = 0, s2 = 0;
  const int n = 1000000;
  for (int i = 0; i < n; i++) {
    double z = st_rng_normal(&r);
    s += z;
    s2 += z * z;
  }
  double mean = s / n, var = s2 / n - mean * mean;
  assert_true(fabs(mean) < 5e-3);
  assert_true(fabs(var - 1) < 1e-2);
}

/* The mean-one lognormal against its analytic moments, E[X] = 1 and
 * Var[X] = exp(sigma^2) - 1, and E[log X] = -sigma^2 / 2, for the sigma of
 * a straggler study (0.05) and a wide one (0.5), 10^6 draws each: the mean
 * within 5 standard errors (5 sqrt(Var / n)), the variance within 3%
 * (its standard error is about 0.3% at sigma 0.5, where the kurtosis is
 * largest). */
static void test_rng__lognormal1_matches_mean_and_variance(void **state)
{
  (void)state;
  static const double sigmas[] = {0.05, 0.5};
  const int n = 1000000;
  for (size_t k = 0; k < 2; k++) {
    double sg = sigmas[k], s = 0, s2 = 0, sl = 0;
    st_rng r;
    st_rng_seed(&r, 1, k);
    for (int i = 0; i < n; i++) {
      double x = st_rng_lognormal1(&r, sg);
      assert_true(x > 0);
      s += x;
      s2 += x * x;
      sl += log(x);
    }
    double mean = s / n, var = s2 / n - mean * mean, want_var = exp(sg * sg) - 1;
    assert_true(fabs(mean - 1) < 5 * sqrt(want_var / n));
    assert_true(fabs(var / want_var - 1) < 0.03);
    assert_true(fabs(sl / n + sg * sg / 2) < 5 * sg / sqrt(n));
  }
  st_rng r;
  st_rng_seed(&r, 1, 0);
  assert_true(st_rng_lognormal1(&r, 0) == 1.0);
}

/* A draw depends on the seed and the stream alone: the same pair, the same
 * bits; another seed or another stream, another value. */
static void test_rng__lognormal1_same_seed_same_bits(void **state)
{
  (void)state;
  st_rng a, b, c, d;
  st_rng_seed(&a, 42, (3ULL << 32) | 1);
  st_rng_seed(&b, 42, (3ULL << 32) | 1);
  st_rng_seed(&c, 43, (3ULL << 32) | 1);
  st_rng_seed(&d, 42, (3ULL << 32) | 2);
  double x = st_rng_lognormal1(&a, 0.05), y = st_rng_lognormal1(&b, 0.05);
  assert_memory_equal(&x, &y, sizeof x);
  assert_true(st_rng_lognormal1(&c, 0.05) != x);
  assert_true(st_rng_lognormal1(&d, 0.05) != x);
}

static void test_rng__uniform_in_open_closed_unit(void **state)
{
  (void)state;
  st_rng r;
  st_rng_seed(&r, 42, 0);
  double sum = 0;
  for (int i = 0; i < 100000; i++) {
    double u = st_rng_uniform(&r);
    assert_true(u > 0 && u <= 1);
    sum += u;
  }
  assert_close(sum / 100000, 0.5, 0.01);
  /* exponential draws: mean 1 / rate */
  double e = 0;
  for (int i = 0; i < 100000; i++)
    e += st_rng_exp(&r, 0.25);
  assert_close(e / 100000, 4, 0.02);
  assert_true(isinf(st_rng_exp(&r, 0)));
}

/* ---- intervals -------------------------------------------------------------------- */

static void test_interval__young_daly_closed_forms(void **state)
{
  (void)state;
  assert_close(an_failure_young_s(60, 1e5), 3464.1016151377544, 1e-14);
  assert_close(an_failure_daly_s(60, 1e5), 3424.2170851915926, 1e-14);
  /* Daly: ckpt >= 2M gives M */
  assert_close(an_failure_daly_s(500, 200), 200, 0);
}

/* The exact optimum of work / tau x (e^(lambda (tau + ckpt)) - 1): x =
 * lambda tau solves (1 - x) e^x = e^(-lambda ckpt), found here by bisection. */
static double exact_optimum(double rate, double ckpt)
{
  double lo = 0, hi = 1, target = exp(-rate * ckpt);
  for (int i = 0; i < 200; i++) {
    double x = (lo + hi) / 2;
    if ((1 - x) * exp(x) > target)
      lo = x;
    else
      hi = x;
  }
  return (lo + hi) / 2 / rate;
}

static void test_interval__optimum_within_5pct_of_young_and_daly(void **state)
{
  (void)state;
  /* checkpoint / MTBF from 1e-5 to 1e-2: the regime both formulas are for */
  static const struct {
    double ckpt_s, mtbf_s;
  } cases[] = {{1, 1e5}, {10, 1e5}, {60, 1e5}, {100, 1e4}, {3, 11136}, {600, 86400}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    an_failure_params p = params(1e9, 1 / cases[i].mtbf_s, cases[i].ckpt_s, 300, 1);
    double opt = an_failure_optimal_s(&p);
    double young = an_failure_young_s(cases[i].ckpt_s, cases[i].mtbf_s);
    double daly = an_failure_daly_s(cases[i].ckpt_s, cases[i].mtbf_s);
    assert_close(opt, young, 0.05);
    assert_close(opt, daly, 0.05);
    assert_close(opt, exact_optimum(p.rate_per_s, p.ckpt_s), 1e-6);
  }
}

static void test_interval__no_failures_one_checkpoint(void **state)
{
  (void)state;
  an_failure_params p = params(5000, 0, 10, 300, 1);
  assert_close(an_failure_optimal_s(&p), 5000, 0);
  /* an optimum longer than the run is cut to the run */
  p = params(100, 1e-6, 10, 300, 1);
  assert_close(an_failure_optimal_s(&p), 100, 0);
}

/* ---- the analytic expectation ------------------------------------------------------ */

static void test_expect__matches_hand_closed_form(void **state)
{
  (void)state;
  an_failure_expectation e;
  /* one segment: work 1000 + ckpt 50, restart 100, rate 1e-3:
   * e^0.1 (e^1.05 - 1) / 1e-3 */
  an_failure_params p = params(1000, 1e-3, 50, 100, 2000);
  an_failure_expect(&p, &e);
  assert_close(e.checkpoints, 1, 0);
  assert_close(e.time_s, 2053.0219916141205, 1e-13);
  /* work 2500 in intervals of 1000: two full segments and one of 500 */
  p = params(2500, 1e-3, 50, 100, 1000);
  an_failure_expect(&p, &e);
  assert_close(e.checkpoints, 3, 0);
  assert_close(e.base_s, 2650, 0);
  assert_close(e.time_s, 4916.4138941664896, 1e-13);
  assert_close(e.failures, 4.9164138941664888, 1e-13);
  assert_close(e.goodput, 2500 / 4916.4138941664896, 1e-13);
  /* no spares: each failure also waits the repair, 3600 s */
  p.spare_nodes = 0;
  p.repair_s = 3600;
  an_failure_expect(&p, &e);
  assert_close(e.time_s, 22615.503913165849, 1e-13);
}

static void test_expect__zero_rate_is_work_plus_checkpoints(void **state)
{
  (void)state;
  an_failure_params p = params(10000, 0, 7, 300, 3000); /* 4 checkpoints */
  an_failure_expectation e;
  an_failure_expect(&p, &e);
  assert_true(e.time_s == 10000 + 4 * 7.0);
  assert_true(e.failures == 0);
  /* a tiny rate: the same to the last digits */
  p.rate_per_s = 1e-30;
  an_failure_expect(&p, &e);
  assert_close(e.time_s, 10028, 1e-15);
}

/* ---- Monte-Carlo ---------------------------------------------------------------- */

static void test_mc__zero_rate_every_trial_is_closed_form(void **state)
{
  (void)state;
  an_failure_params p = params(10000, 0, 7, 300, 3000);
  double t[16];
  an_failure_mc mc;
  st_err err;
  st_err_clear(&err);
  assert_int_equal(an_failure_simulate(&p, 16, 5, t, &mc, &err), ST_OK);
  for (int i = 0; i < 16; i++)
    assert_true(t[i] == 10000 + 4 * 7.0);
  assert_true(mc.mean_s == 10028 && mc.p10_s == 10028 && mc.p90_s == 10028);
  assert_true(mc.failures == 0 && mc.goodput == 10000 / 10028.0);
}

static void test_mc__mean_within_2pct_of_analytic(void **state)
{
  (void)state;
  /* about 15 failures per run (MTBF 20,000 s over 200,000 s of work), each
   * restart 2,000 s and failing itself one time in ten: leaving out the
   * restarts, or their failures, moves the mean by 10 % or more */
  an_failure_params p = params(2e5, 1 / 2e4, 100, 2000, 2000);
  an_failure_expectation e;
  an_failure_mc mc;
  st_err err;
  st_err_clear(&err);
  for (int k = 0; k < 2; k++) {
    if (k == 1) { /* no spares: the repair in every failure */
      p.spare_nodes = 0;
      p.repair_s = 1800;
    }
    an_failure_expect(&p, &e);
    assert_int_equal(an_failure_simulate(&p, 20000, 7, NULL, &mc, &err), ST_OK);
    assert_close(mc.mean_s, e.time_s, 0.02);
    assert_close(mc.mean_s, e.time_s, 0.005); /* 20,000 trials: the standard error is 0.05 % */
    assert_close(mc.failures, e.failures, 0.02);
    assert_true(mc.p10_s < mc.p50_s && mc.p50_s < mc.p90_s);
    assert_true(mc.min_s >= e.base_s);
    /* the parts add up to the mean */
    assert_close(p.work_s + mc.checkpoint_s + mc.lost_s + mc.restart_s + mc.wait_s, mc.mean_s,
                 1e-12);
  }
}

static void test_mc__same_seed_same_bits_other_seed_differs(void **state)
{
  (void)state;
  an_failure_params p = params(2e5, 1 / 2e4, 100, 300, 2000);
  double a[500], b[500], c[500];
  an_failure_mc ma, mb, mc;
  st_err err;
  st_err_clear(&err);
  assert_int_equal(an_failure_simulate(&p, 500, 123, a, &ma, &err), ST_OK);
  assert_int_equal(an_failure_simulate(&p, 500, 123, b, &mb, &err), ST_OK);
  assert_int_equal(an_failure_simulate(&p, 500, 124, c, &mc, &err), ST_OK);
  assert_memory_equal(a, b, sizeof a);
  assert_memory_equal(&ma, &mb, sizeof ma);
  assert_true(memcmp(a, c, sizeof a) != 0);
  assert_true(ma.mean_s != mc.mean_s);
  /* a trial does not depend on how many others run: the first 100 of 500 */
  double d[100];
  assert_int_equal(an_failure_simulate(&p, 100, 123, d, &mc, &err), ST_OK);
  assert_memory_equal(a, d, sizeof d);
}

static void test_mc__spares_between_none_and_unlimited(void **state)
{
  (void)state;
  /* failures every 5,000 s, repairs of 20,000 s: two spares run out now and then */
  an_failure_params p = params(2e5, 1 / 5e3, 50, 300, 1000);
  p.repair_s = 2e4;
  an_failure_mc none, two, many, unlimited;
  st_err err;
  st_err_clear(&err);
  p.spare_nodes = 0;
  assert_int_equal(an_failure_simulate(&p, 2000, 3, NULL, &none, &err), ST_OK);
  p.spare_nodes = 2;
  assert_int_equal(an_failure_simulate(&p, 2000, 3, NULL, &two, &err), ST_OK);
  p.spare_nodes = 100;
  assert_int_equal(an_failure_simulate(&p, 2000, 3, NULL, &many, &err), ST_OK);
  p.spare_nodes = -1;
  assert_int_equal(an_failure_simulate(&p, 2000, 3, NULL, &unlimited, &err), ST_OK);
  assert_true(none.mean_s > two.mean_s && two.mean_s > unlimited.mean_s);
  assert_true(two.waits > 0 && two.waits < two.failures);
  assert_close(none.waits, none.failures, 0);
  /* with more spares than failures nobody waits: the same draws as unlimited */
  assert_true(many.waits == 0 && many.mean_s == unlimited.mean_s);
}

static void test_mc__quantiles_interpolate(void **state)
{
  (void)state;
  double v[] = {1, 2, 3, 4, 5};
  assert_close(an_failure_quantile(v, 5, 0.1), 1.4, 1e-15);
  assert_close(an_failure_quantile(v, 5, 0.5), 3, 0);
  assert_close(an_failure_quantile(v, 5, 0.9), 4.6, 1e-15);
  assert_close(an_failure_quantile(v, 1, 0.9), 1, 0);
}

static void test_check__bad_values_named(void **state)
{
  (void)state;
  st_err err;
  an_failure_mc mc;
  static const struct {
    an_failure_params p;
    int trials;
    const char *msg;
  } bad[] = {
      {{0, 1e-4, 10, 300, 0, -1, 100}, 1, "the failure-free training time is 0 s; it must be positive"},
      {{1e4, -1, 10, 300, 0, -1, 100}, 1, "the failure rate is -1 per s; it must be 0 or more"},
      {{1e4, 1e-4, 0, 300, 0, -1, 100}, 1, "the checkpoint time is 0 s; it must be positive"},
      {{1e4, 1e-4, 10, -5, 0, -1, 100}, 1, "the restart time is -5 s; it must be 0 or more"},
      {{1e4, 1e-4, 10, 300, 0, -1, 0}, 1, "the checkpoint interval is 0 s; it must be positive"},
      {{1e4, 1e-4, 10, 300, 0, -2, 100}, 1, "-2 spare nodes: give 0 to 1000000 (or -1: unlimited)"},
      {{1e4, 1e-4, 10, 300, 0, -1, 100}, 0, "0 trials: give 1 to 10000000"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    st_err_clear(&err);
    assert_int_equal(an_failure_simulate(&bad[i].p, bad[i].trials, 1, NULL, &mc, &err), ST_EUSAGE);
    assert_string_equal(err.msg, bad[i].msg);
  }
}

static void test_sweep__axis_and_optimum(void **state)
{
  (void)state;
  an_failure_params p = params(1e7, 1 / 1e4, 10, 300, 1000);
  double scales[] = {0.5, 1, 2};
  an_failure_sweep_row rows[3 * 21];
  st_err err;
  st_err_clear(&err);
  assert_int_equal(an_failure_sweep(&p, scales, 3, 21, rows, &err), ST_OK);
  for (int s = 0; s < 3; s++) {
    const an_failure_sweep_row *r = &rows[s * 21];
    assert_close(r->job_mtbf_s, 1e4 * scales[s], 1e-15);
    int best = 0;
    for (int i = 0; i < 21; i++) {
      assert_close(r[i].interval_s, rows[i].interval_s, 0); /* one axis */
      if (r[i].goodput > r[best].goodput)
        best = i;
    }
    /* the best point of the grid brackets Young's interval within a grid step */
    double young = an_failure_young_s(10, r->job_mtbf_s);
    double step = rows[1].interval_s / rows[0].interval_s;
    assert_true(r[best].interval_s / young < step && young / r[best].interval_s < step);
  }
  /* longer MTBF, better goodput at the same interval */
  assert_true(rows[2 * 21 + 10].goodput > rows[10].goodput);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rng__xoshiro_matches_hand_steps),
      cmocka_unit_test(test_rng__log_agrees_with_libm),
      cmocka_unit_test(test_rng__uniform_in_open_closed_unit),
      cmocka_unit_test(test_rng__normal_has_mean_0_variance_1),
      cmocka_unit_test(test_rng__lognormal1_matches_mean_and_variance),
      cmocka_unit_test(test_rng__lognormal1_same_seed_same_bits),
      cmocka_unit_test(test_interval__young_daly_closed_forms),
      cmocka_unit_test(test_interval__optimum_within_5pct_of_young_and_daly),
      cmocka_unit_test(test_interval__no_failures_one_checkpoint),
      cmocka_unit_test(test_expect__matches_hand_closed_form),
      cmocka_unit_test(test_expect__zero_rate_is_work_plus_checkpoints),
      cmocka_unit_test(test_mc__zero_rate_every_trial_is_closed_form),
      cmocka_unit_test(test_mc__mean_within_2pct_of_analytic),
      cmocka_unit_test(test_mc__same_seed_same_bits_other_seed_differs),
      cmocka_unit_test(test_mc__spares_between_none_and_unlimited),
      cmocka_unit_test(test_mc__quantiles_interpolate),
      cmocka_unit_test(test_check__bad_values_named),
      cmocka_unit_test(test_sweep__axis_and_optimum),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
