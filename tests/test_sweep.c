/* test_sweep.c — sweeps: the spec's checks, the numbering of points, the
 * shard rule, and merging shards (sim/driver/drv_sweep.c, analysis/sweep.c).
 * Expected numbers are worked out by hand in the comments. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "driver.h"

#define DATA ST_TEST_DATA_DIR "/sweep/"

/* Writes text to a temporary spec file; returns its path (static buffer). */
static const char *spec_file(const char *text)
{
  static char path[64];
  snprintf(path, sizeof path, "/tmp/st_sweep_%d.json", (int)getpid());
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

static void expect_error(const char *text, const char *needle)
{
  drv_sweep_spec s;
  st_err e;
  st_err_clear(&e);
  const char *path = spec_file(text);
  int rc = drv_sweep_load(path, &s, &e);
  unlink(path);
  if (rc == ST_OK)
    drv_sweep_release(&s);
  assert_int_equal(rc, ST_EINPUT);
  if (!strstr(e.msg, needle))
    fail_msg("message '%s' lacks '%s'", e.msg, needle);
  assert_non_null(strstr(e.msg, "sweep '/tmp/st_sweep_"));
}

static void test_spec__errors_name_the_key(void **state)
{
  (void)state;
  expect_error("{\"layouts\":[\"tp=1\"],\"clusters\":[\"node8\"]}", "key 'models' is missing");
  expect_error("{\"models\":[\"llama3-8b\"],\"layouts\":[\"tp=1\"],\"clusters\":[\"node8\"],"
               "\"colour\":1}", "key 'colour' is unknown");
  expect_error("{\"models\":[\"llama3-8b\"],\"layouts\":[\"tp=1,gbs=8\"],\"clusters\":[\"node8\"],"
               "\"gbs\":[16]}", "layouts[0]: 'tp=1,gbs=8' sets gbs");
  expect_error("{\"models\":[\"llama3-8b\"],\"layouts\":[\"search\"],\"clusters\":[\"node8\"]}",
               "'search' needs the global batch");
  expect_error("{\"models\":[\"llama3-8b\",\"llama3-8b\"],\"layouts\":[\"tp=1\"],"
               "\"clusters\":[\"node8\"]}", "models[1]: 'llama3-8b' is listed twice");
  expect_error("{\"models\":[\"no-such-model\"],\"layouts\":[\"tp=1\"],\"clusters\":[\"node8\"]}",
               "models[0]: model 'no-such-model'");
  expect_error("{\"models\":[\"llama3-8b\"],\"layouts\":[\"tp=1\"],\"clusters\":[\"node8\"],"
               "\"gpus\":[12]}", "clusters[0]: 'node8' has 8 GPUs a node: 12 GPUs (gpus[0])");
  expect_error("{\"models\":[\"llama3-8b\"],\"layouts\":[\"tp=1\"],\"clusters\":[\"node8\"],"
               "\"gpus\":[8],\"nodes\":[1]}", "give 'nodes' or 'gpus', not both");
  expect_error("{\"models\":[\"llama3-8b\"],\"layouts\":{\"llama3-70b\":[\"tp=1\"]},"
               "\"clusters\":[\"node8\"]}", "layouts: key 'llama3-70b' is not one of 'models'");
  expect_error("{\"models\":[\"llama3-8b\"],\"layouts\":[],\"clusters\":[\"node8\"]}",
               "layouts: is empty");
  expect_error("{\"models\":[\"llama3-8b\"],\"layouts\":[\"tp=1\"],\"clusters\":[\"node8\"],"
               "\"nodes\":[0]}", "node count 0 is outside");
}

/* grid.json: 3 layouts x 2 clusters x 3 node counts x 2 gbs x 2 seq x 2
 * dtypes = 144 points, the dtype fastest. */
static void test_points__numbered_last_axis_fastest(void **state)
{
  (void)state;
  drv_sweep_spec s;
  st_err e;
  st_err_clear(&e);
  assert_int_equal(drv_sweep_load(DATA "grid.json", &s, &e), ST_OK);
  assert_int_equal(s.num_points, 144);
  assert_string_equal(s.name, "grid");
  drv_sweep_point_t p;
  /* 0: the first of everything */
  assert_int_equal(drv_sweep_point(&s, 0, &p), ST_OK);
  assert_string_equal(p.layout, "tp=1,gbs=64,dtype=bf16");
  assert_string_equal(p.cluster_arg, "node8:1");
  assert_int_equal(p.seq, 1024);
  /* 1 = dtype 1 */
  drv_sweep_point(&s, 1, &p);
  assert_string_equal(p.layout, "tp=1,gbs=64,dtype=fp8");
  /* 2 = seq 1; 4 = gbs 1; 8 = nodes 1; 24 = cluster 1; 48 = layout 1.
   * 48 + 24 + 2 * 8 + 4 + 2 + 1 = 95: tp=2, dgx-a100, 4 nodes, gbs 128, seq 2048, fp8 */
  drv_sweep_point(&s, 95, &p);
  assert_string_equal(p.layout, "tp=2,gbs=128,dtype=fp8");
  assert_string_equal(p.cluster_arg, "dgx-a100:4");
  assert_int_equal(p.seq, 2048);
  assert_int_equal(p.nodes, 4);
  assert_int_equal(drv_sweep_point(&s, 144, &p), ST_EUSAGE);
  drv_sweep_release(&s);
}

/* The same spec written differently has the same digest; another value does not. */
static void test_digest__follows_content_not_form(void **state)
{
  (void)state;
  const char *a = "{\"models\":[\"llama3-8b\"],\"layouts\":[\"tp=1\"],\"clusters\":[\"node8\"],"
                  "\"name\":\"x\",\"gbs\":[8]}";
  const char *b = "{\n  \"name\": \"x\",\n  \"gbs\": [8],\n  \"clusters\": [\"node8\"],\n"
                  "  \"layouts\": [\"tp=1\"],\n  \"models\": [\"llama3-8b\"]\n}\n";
  const char *c = "{\"models\":[\"llama3-8b\"],\"layouts\":[\"tp=1\"],\"clusters\":[\"node8\"],"
                  "\"name\":\"x\",\"gbs\":[16]}";
  char d[3][17];
  const char *texts[3] = {a, b, c};
  for (int i = 0; i < 3; i++) {
    drv_sweep_spec s;
    st_err e;
    st_err_clear(&e);
    const char *path = spec_file(texts[i]);
    assert_int_equal(drv_sweep_load(path, &s, &e), ST_OK);
    unlink(path);
    memcpy(d[i], s.digest, 17);
    drv_sweep_release(&s);
  }
  assert_string_equal(d[0], d[1]);
  assert_string_not_equal(d[0], d[2]);
}

/* Costs 3 7 2 5 3 4 (points 0..5) on 2 shards, costliest first, ties by point:
 *   7 (p1) -> A 7;  5 (p3) -> B 5;  4 (p5) -> B 9;  3 (p0) -> A 10;
 *   3 (p4) -> B 12; 2 (p2) -> A 12.   A = {1, 0, 2}, B = {3, 5, 4}, 12 / 12. */
static void test_assign__longest_first_to_least_loaded(void **state)
{
  (void)state;
  const double cost[6] = {3, 7, 2, 5, 3, 4};
  int ord[6], shard[6];
  double load[2];
  drv_sweep_assign(cost, 6, 2, ord, shard, load);
  const int want[6] = {1, 1, 1, 2, 2, 2};
  for (int i = 0; i < 6; i++)
    assert_int_equal(shard[i], want[i]);
  assert_true(load[0] == 12 && load[1] == 12);
  /* more shards than points: the rest are empty */
  double load4[8];
  int shard4[6];
  drv_sweep_assign(cost, 6, 8, ord, shard4, load4);
  assert_true(load4[6] == 0 && load4[7] == 0);
}

static an_sweep *shard(int k, int of, int points, const int *pts, int n, const char *digest,
                       const char *path)
{
  an_sweep *s = calloc(1, sizeof *s);
  s->path = strdup(path);
  s->name = strdup("t");
  s->spec_json = strdup("{}");
  s->version = strdup("0");
  snprintf(s->digest, sizeof s->digest, "%s", digest);
  s->points = points;
  s->shard = k;
  s->shards = of;
  s->rows = calloc((size_t)n + 1, sizeof *s->rows);
  s->num_rows = (size_t)n;
  for (int i = 0; i < n; i++) {
    s->rows[i].point = pts[i];
    snprintf(s->rows[i].status, sizeof s->rows[i].status, "ok");
    s->rows[i].step_time_s = pts[i] + 0.5;
  }
  return s;
}

static void merge_expect(an_sweep **sh, size_t n, int rc, const char *needle)
{
  an_sweep out;
  st_err e;
  st_err_clear(&e);
  assert_int_equal(an_sweep_merge(sh, n, &out, &e), rc);
  if (rc) {
    if (!strstr(e.msg, needle))
      fail_msg("message '%s' lacks '%s'", e.msg, needle);
    return;
  }
  assert_int_equal(out.num_rows, 5);
  assert_int_equal(out.shard, 1);
  assert_int_equal(out.shards, 1);
  for (int i = 0; i < 5; i++) {
    assert_int_equal(out.rows[i].point, i);
    assert_true(out.rows[i].step_time_s == i + 0.5);
  }
  free(out.rows);
  free(out.name);
  free(out.spec_json);
  free(out.version);
}

static void test_merge__checks_and_joins(void **state)
{
  (void)state;
  const char *D = "0123456789abcdef", *X = "fedcba9876543210";
  const int p1[] = {0, 3}, p2[] = {1, 4}, p3[] = {2};
  an_sweep *a = shard(1, 3, 5, p1, 2, D, "a.h5"), *b = shard(2, 3, 5, p2, 2, D, "b.h5"),
           *c = shard(3, 3, 5, p3, 1, D, "c.h5"), *f = shard(3, 3, 5, p3, 1, X, "f.h5"),
           *b2 = shard(2, 3, 5, p2, 2, D, "b2.h5"), *g = shard(3, 4, 5, p3, 1, D, "g.h5");
  const int p3dup[] = {2, 3};
  an_sweep *cd = shard(3, 3, 5, p3dup, 2, D, "cd.h5");
  an_sweep *ok[] = {c, a, b}; /* any order */
  merge_expect(ok, 3, ST_OK, NULL);
  an_sweep *foreign[] = {a, b, f};
  merge_expect(foreign, 3, ST_EINPUT, "shard 'f.h5' is of another sweep (digest fedcba9876543210");
  an_sweep *twice[] = {a, b, b2};
  merge_expect(twice, 3, ST_EINPUT, "'b.h5' and 'b2.h5' are both shard 2 of 3");
  an_sweep *missing[] = {a, c};
  merge_expect(missing, 2, ST_EINPUT, "shard 2 of 3 is missing (2 points held by no file: 1, 4)");
  an_sweep *other_n[] = {a, b, g};
  merge_expect(other_n, 3, ST_EINPUT, "'g.h5' is shard 3 of 4");
  an_sweep *dup[] = {a, b, cd};
  merge_expect(dup, 3, ST_EINPUT, "point 3 is in both 'a.h5' and 'cd.h5'");
  an_sweep *all[] = {a, b, c, f, b2, g, cd};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    an_sweep_destroy(all[i]);
}

/* A sweep file reads back row for row and bit for bit, NaN included. */
static void test_file__round_trip(void **state)
{
  (void)state;
  const int pts[] = {4, 1};
  an_sweep *s = shard(2, 2, 6, pts, 2, "00000000000000aa", "x");
  s->rows[0].mfu = NAN;
  snprintf(s->rows[1].layout, sizeof s->rows[1].layout, "tp=2,pp=4");
  char path[64];
  snprintf(path, sizeof path, "/tmp/st_sweep_%d.h5", (int)getpid());
  st_err e;
  st_err_clear(&e);
  assert_int_equal(an_sweep_write(path, s, &e), ST_OK);
  assert_int_equal(an_sweep_is_file(path), 1);
  an_sweep *r = NULL;
  assert_int_equal(an_sweep_read(path, &r, &e), ST_OK);
  unlink(path);
  assert_int_equal(r->num_rows, 2);
  assert_int_equal(r->rows[0].point, 1); /* written by point */
  assert_int_equal(r->rows[1].point, 4);
  assert_true(isnan(r->rows[1].mfu));
  assert_string_equal(r->rows[0].layout, "tp=2,pp=4");
  assert_true(r->rows[1].step_time_s == 4.5);
  assert_int_equal(r->shard, 2);
  assert_int_equal(r->shards, 2);
  assert_int_equal(r->points, 6);
  assert_string_equal(r->digest, "00000000000000aa");
  an_sweep_destroy(r);
  an_sweep_destroy(s);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spec__errors_name_the_key),
      cmocka_unit_test(test_points__numbered_last_axis_fastest),
      cmocka_unit_test(test_digest__follows_content_not_form),
      cmocka_unit_test(test_assign__longest_first_to_least_loaded),
      cmocka_unit_test(test_merge__checks_and_joins),
      cmocka_unit_test(test_file__round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
