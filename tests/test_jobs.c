/* test_jobs.c — several jobs on one fabric: the merge (ranks and
 * communicators renumbered, roles by name, idle GPUs), background traffic,
 * and the must-show of docs/jobs.md: two 2-node DP jobs whose rings cross
 * the same 2:1 oversubscribed leaf up links each slow by what max-min
 * sharing predicts, and placed on disjoint leaves neither slows. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "driver.h"
#include "workload.h"

#define DATA ST_TEST_DATA_DIR
#define CLUSTER DATA "/jobs_fattree.json"
#define DP2 DATA "/jobs_dp2.json"

/* |got - want| <= tol, with both printed when not. */
#define assert_double_equal(got, want, tol) near((got), (want), (tol), #got, __LINE__)
static void near(double got, double want, double tol, const char *what, int line)
{
  if (!(fabs(got - want) <= tol))
    fail_msg("line %d: %s = %.17g, expected %.17g within %g", line, what, got, want, tol);
}

/* A workload of n ranks with the given roles; one communicator per role
 * over all ranks (named ROLE0), one program with a collective per role. */
static wl_workload *small(int n, int nroles, const char *const *roles)
{
  wl_workload *wl = wl_workload_create(n, nroles, roles);
  assert_non_null(wl);
  int32_t ranks[8];
  for (int i = 0; i < n; i++)
    ranks[i] = i;
  for (int k = 0; k < nroles; k++) {
    char name[32];
    snprintf(name, sizeof name, "%s0", roles[k]);
    assert_int_equal(wl_comm_add(wl, name, WL_COMM_OTHER, n, ranks), k);
  }
  const char *streams[] = {"compute", "comm"};
  int p = wl_program_add(wl, "step", 2, streams);
  assert_int_equal(p, 0);
  wl_op c = wl_op_compute(0, 0.001);
  c.name = wl_program_string(&wl->programs[0], "work");
  assert_true(wl_program_append(&wl->programs[0], &c, NULL, 0) >= 0);
  for (int k = 0; k < nroles; k++) {
    wl_op o = wl_op_coll(1, WL_COLL_ALLREDUCE, k, 1e6 * (k + 1));
    assert_true(wl_program_append(&wl->programs[0], &o, NULL, 0) >= 0);
  }
  for (int i = 0; i < n; i++) {
    wl_rank_set(wl, i, 0);
    for (int k = 0; k < nroles; k++)
      wl_rank_set_comm(wl, i, k, k);
  }
  return wl;
}

static void test_merge__renumbers_ranks_and_communicators(void **state)
{
  (void)state;
  const char *ra[] = {"dp"}, *rb[] = {"tp", "dp"};
  wl_workload *a = small(2, 1, ra), *b = small(3, 2, rb);
  const int32_t ga[] = {3, 1}, gb[] = {0, 4, 5};
  wl_merge_part parts[] = {{a, "a", ga}, {b, "b", gb}};
  wl_workload *m = NULL;
  st_err err;
  st_err_clear(&err);
  assert_int_equal(wl_merge(parts, 2, 7, &m, &err), ST_OK);
  assert_int_equal(wl_workload_check(m, &err), ST_OK);
  assert_int_equal(m->num_ranks, 7);
  /* roles by name, in order of first appearance */
  assert_int_equal(m->num_roles, 2);
  assert_string_equal(m->roles[0], "dp");
  assert_string_equal(m->roles[1], "tp");
  /* communicators: a's, then b's, names prefixed, members renumbered */
  assert_int_equal(m->num_comms, 3);
  assert_string_equal(m->comms[0].name, "a/dp0");
  assert_int_equal(m->comms[0].ranks[0], 3);
  assert_int_equal(m->comms[0].ranks[1], 1);
  assert_string_equal(m->comms[1].name, "b/tp0");
  assert_string_equal(m->comms[2].name, "b/dp0");
  assert_int_equal(m->comms[2].size, 3);
  assert_int_equal(m->comms[2].ranks[0], 0);
  assert_int_equal(m->comms[2].ranks[1], 4);
  assert_int_equal(m->comms[2].ranks[2], 5);
  /* programs: a's, b's, then the idle one for GPUs 2 and 6 */
  assert_int_equal(m->num_programs, 3);
  assert_string_equal(m->programs[0].name, "a/step");
  assert_string_equal(m->programs[1].name, "b/step");
  assert_string_equal(m->programs[2].name, "idle");
  assert_int_equal(m->programs[2].num_ops, 0);
  assert_int_equal(m->rank_program[3], 0);
  assert_int_equal(m->rank_program[1], 0);
  assert_int_equal(m->rank_program[0], 1);
  assert_int_equal(m->rank_program[5], 1);
  assert_int_equal(m->rank_program[2], 2);
  assert_int_equal(m->rank_program[6], 2);
  /* b's op on its role 1 (dp) now names merged role 0 (dp), and its role
   * 0 (tp) merged role 1; the rank map follows */
  const wl_program *pb = &m->programs[1];
  assert_int_equal(pb->ops[1].role, 1);
  assert_int_equal(pb->ops[2].role, 0);
  assert_double_equal(pb->ops[2].bytes, 2e6, 0);
  assert_string_equal(wl_op_name(pb, &pb->ops[0]), "work");
  assert_int_equal(wl_rank_comm(m, 4, 0), 2);
  assert_int_equal(wl_rank_comm(m, 4, 1), 1);
  assert_int_equal(wl_rank_comm(m, 3, 0), 0);
  assert_int_equal(wl_rank_comm(m, 3, 1), -1);
  assert_int_equal(wl_rank_comm(m, 2, 0), -1);
  /* the parts are unchanged */
  assert_int_equal(b->programs[0].ops[2].role, 1);
  assert_int_equal(b->comms[0].ranks[1], 1);
  wl_workload_destroy(m);
  wl_workload_destroy(a);
  wl_workload_destroy(b);
}

static void test_merge__overlap_and_range_name_the_jobs(void **state)
{
  (void)state;
  const char *ra[] = {"dp"};
  wl_workload *a = small(2, 1, ra), *b = small(2, 1, ra);
  const int32_t ga[] = {0, 1}, gb[] = {2, 1}, gc[] = {2, 9};
  wl_merge_part parts[] = {{a, "a", ga}, {b, "b", gb}};
  wl_workload *m = NULL;
  st_err err;
  st_err_clear(&err);
  assert_int_equal(wl_merge(parts, 2, 4, &m, &err), ST_EINPUT);
  assert_null(m);
  assert_string_equal(err.msg, "jobs 'a' and 'b' both use GPU 1");
  parts[1].gpus = gc;
  assert_int_equal(wl_merge(parts, 2, 4, &m, &err), ST_EINPUT);
  assert_string_equal(err.msg, "job 'b': rank 1 is placed on GPU 9, outside 0..3");
  wl_workload_destroy(a);
  wl_workload_destroy(b);
}

static void test_background__rounds_released_by_the_timer(void **state)
{
  (void)state;
  wl_workload *wl = NULL;
  st_err err;
  st_err_clear(&err);
  /* 1 GB/s per GPU over 16 ms in 16 rounds: 1 MB all-to-alls every 1 ms */
  assert_int_equal(wl_background_alltoall(4, 1e9, 0.016, 16, &wl, &err), ST_OK);
  assert_int_equal(wl_workload_check(wl, &err), ST_OK);
  const wl_program *p = &wl->programs[0];
  int colls = 0, timers = 0;
  double timer_s = 0;
  for (size_t i = 0; i < p->num_ops; i++) {
    const wl_op *o = &p->ops[i];
    if (o->kind == WL_OP_COLL) {
      assert_int_equal(o->sub, WL_COLL_ALLTOALL);
      assert_double_equal(o->bytes, 1e6, 1e-6);
      /* round k waits for the timer's k-th period: released at k ms */
      if (colls == 0) {
        assert_int_equal(o->wait_count, 0);
      } else {
        assert_int_equal(o->wait_count, 1);
        const wl_op *t = &p->ops[p->waits[o->wait_first]];
        assert_int_equal(t->kind, WL_OP_COMPUTE);
        assert_double_equal(timer_s, colls * 0.001, 1e-15);
      }
      colls++;
    } else {
      assert_int_equal(o->kind, WL_OP_COMPUTE);
      timer_s += o->duration_s;
      timers++;
    }
  }
  assert_int_equal(colls, 16);
  assert_int_equal(timers, 16);
  assert_double_equal(timer_s, 0.016, 1e-15);
  wl_workload_destroy(wl);
  assert_int_equal(wl_background_alltoall(1, 1e9, 0.016, 16, &wl, &err), ST_EINPUT);
  assert_string_equal(err.msg, "background all-to-all: needs 2 GPUs or more, not 1");
}

/* ---- the fabric, run in a child (the run together is in its process) ------ */

typedef struct fabric_case {
  const char *specs[4];
  int exact;
} fabric_case;

typedef struct fabric_out {
  int rc;
  char msg[ST_ERR_MSG_MAX];
  int num_jobs;
  an_job_row rows[4];
  size_t num_shared;
  an_shared_link shared[8];
} fabric_out;

static int fabric_task(void *u, int index, st_buf *reply, st_err *err)
{
  (void)index;
  const fabric_case *c = u;
  drv_fabric f;
  drv_fabric_init(&f);
  f.cluster = CLUSTER;
  f.opt.quiet = 1;
  if (c->exact)
    f.opt.fast_colls = f.opt.symmetry = 0;
  int rc = ST_OK;
  for (int i = 0; i < 4 && c->specs[i] && !rc; i++)
    rc = drv_fabric_add_spec(&f, c->specs[i], err);
  if (!rc)
    rc = drv_fabric_run(&f, err);
  if (!rc) {
    fabric_out o;
    memset(&o, 0, sizeof o);
    o.num_jobs = f.num_jobs;
    memcpy(o.rows, f.rows, (size_t)f.num_jobs * sizeof *f.rows);
    o.num_shared = f.num_shared < 8 ? f.num_shared : 8;
    memcpy(o.shared, f.shared, o.num_shared * sizeof *f.shared);
    rc = st_buf_append(reply, &o, sizeof o);
  }
  drv_fabric_release(&f);
  return rc;
}

static fabric_out fabric(const fabric_case *c)
{
  fabric_out o;
  memset(&o, 0, sizeof o);
  char *data = NULL;
  size_t len = 0;
  st_err err;
  st_err_clear(&err);
  o.rc = drv_isolated(fabric_task, (void *)c, 120, &data, &len, &err);
  if (!o.rc) {
    assert_int_equal(len, sizeof o);
    memcpy(&o, data, sizeof o);
  }
  snprintf(o.msg, sizeof o.msg, "%s", err.msg);
  free(data);
  return o;
}

/* The DP job of tests/data/jobs_dp2.json: 10 ms of compute, then a 1 GiB
 * all-reduce over 2 GPUs on different nodes.  Its ring sends 2(n-1)/n S = S
 * each way over the fabric, as S / 0.94 wire bytes (NCCL Simple on a NIC,
 * docs/collectives.md).  Every link on the way runs at 50 GB/s: the NICs,
 * and a leaf's up (and down) link, 2 x 50 GB/s / 2 (radix 4, 2:1). */
#define S_BYTES 1073741824.0
#define WIRE (S_BYTES / 0.94)
#define LINK_Bps 50e9

static void test_fabric__shared_leaf_links_halve_each_ring(void **state)
{
  (void)state;
  /* a on GPUs 0 and 2, b on 1 and 3: nodes 0, 1 under leaf 0, 2, 3 under
   * leaf 1, so both rings cross ft-g1.0-up, ft-g1.1-down (and back). */
  fabric_case c = {{"a:" DP2 "@gpus=0,2", "b:" DP2 "@gpus=1,3", NULL, NULL}, 0};
  fabric_out o = fabric(&c);
  assert_int_equal(o.rc, ST_OK);
  assert_int_equal(o.num_jobs, 2);
  for (int j = 0; j < 2; j++) {
    const an_job_row *r = &o.rows[j];
    /* alone: compute, the latency terms, the wire bytes at 50 GB/s */
    double bw_alone = WIRE / LINK_Bps;
    double lat = r->step_time_alone_s - 0.01 - bw_alone;
    assert_true(lat > 0 && lat < 100e-6);
    /* together: the two flows on each shared 50 GB/s link get 25 GB/s
     * each (max-min: equal demands, one bottleneck), so the bandwidth term
     * doubles and nothing else changes */
    double expect = 0.01 + lat + WIRE / (LINK_Bps / 2);
    assert_double_equal(r->step_time_together_s, expect, 1e-9 * expect);
    assert_double_equal(r->slowdown, expect / r->step_time_alone_s, 1e-9);
  }
  /* the four leaf links, each with both jobs' wire bytes */
  assert_int_equal(o.num_shared, 4);
  const char *names[] = {"ft-g1.0-down", "ft-g1.0-up", "ft-g1.1-down", "ft-g1.1-up"};
  for (int i = 0; i < 4; i++) {
    assert_string_equal(o.shared[i].name, names[i]);
    assert_string_equal(o.shared[i].jobs, "a,b");
    assert_double_equal(o.shared[i].bytes, 2 * WIRE, 1e-6 * WIRE);
    assert_double_equal(o.shared[i].job_bytes[0], WIRE, 1e-6 * WIRE);
  }
  /* the full simulation agrees (closed forms and rank classes refuse or
   * give the same answer on the merged workload) */
  c.exact = 1;
  fabric_out x = fabric(&c);
  assert_int_equal(x.rc, ST_OK);
  for (int j = 0; j < 2; j++) {
    assert_double_equal(x.rows[j].step_time_together_s, o.rows[j].step_time_together_s,
                        1e-9 * o.rows[j].step_time_together_s);
    assert_double_equal(x.rows[j].step_time_alone_s, o.rows[j].step_time_alone_s,
                        1e-9 * o.rows[j].step_time_alone_s);
  }
}

static void test_fabric__disjoint_leaves_do_not_slow(void **state)
{
  (void)state;
  fabric_case c = {{"a:" DP2 "@gpus=0-1", "b:" DP2 "@gpus=2,3", NULL, NULL}, 0};
  for (int exact = 0; exact < 2; exact++) {
    c.exact = exact;
    fabric_out o = fabric(&c);
    assert_int_equal(o.rc, ST_OK);
    for (int j = 0; j < 2; j++) {
      const an_job_row *r = &o.rows[j];
      /* alone on one leaf: only the NICs, 50 GB/s */
      double lat = r->step_time_alone_s - 0.01 - WIRE / LINK_Bps;
      assert_true(lat > 0 && lat < 100e-6);
      assert_double_equal(r->step_time_together_s, r->step_time_alone_s,
                          1e-9 * r->step_time_alone_s);
    }
    assert_int_equal(o.num_shared, 0);
  }
}

static void test_fabric__background_shares_the_leaf_links(void **state)
{
  (void)state;
  fabric_case c = {{"a:" DP2 "@gpus=0,2", "bg:background=alltoall:10G@gpus=1,3", NULL, NULL}, 0};
  fabric_out o = fabric(&c);
  assert_int_equal(o.rc, ST_OK);
  /* the window is a's run alone, and the background job fills it */
  assert_double_equal(o.rows[1].step_time_alone_s, o.rows[0].step_time_alone_s,
                      1e-9 * o.rows[0].step_time_alone_s);
  assert_true(o.rows[0].slowdown > 1.0);
  assert_int_equal(o.num_shared, 4);
  /* each leaf link carries a's wire bytes and, of bg's 10 GB/s x window of
   * send buffer per GPU, the half that goes to the other GPU (2 GPUs) */
  double bg = 10e9 * o.rows[0].step_time_alone_s / 2 / 0.94;
  assert_double_equal(o.shared[0].job_bytes[1], bg, 1e-6 * bg);
}

static void test_fabric__bad_specs_are_named(void **state)
{
  (void)state;
  const struct {
    const char *specs[2];
    const char *msg;
  } t[] = {
      {{"a:" DP2 "@gpus=0,1", "b:" DP2 "@gpus=1-2"},
       "jobs 'a' and 'b' both use GPU 1 (gpus '0,1' and '1-2')"},
      {{"a:" DP2 "@gpus=0,4", NULL}, "job 'a': gpus '0,4': GPU 4 is not in the cluster (GPUs 0-3)"},
      {{"a:" DP2 "@gpus=0-2", NULL},
       "job 'a': the workload has 2 ranks but gpus '0-2' names 3 GPUs"},
      {{"a:" DP2, NULL}, "job 'a:" DP2 "': expected [NAME:]WHAT@gpus=LIST (docs/jobs.md)"},
      {{"bg:background=alltoall:10G@gpus=0,1", NULL},
       "job 'bg': background traffic needs another job to run beside (its window is their "
       "longest run alone)"},
      {{"x:background=storage:1G@gpus=0,1", NULL},
       "job 'x:background=storage:1G@gpus=0,1': background 'storage:1G' is not "
       "alltoall:RATE[:ROUNDS] (storage traffic has nowhere to go: docs/jobs.md)"},
      {{"a:" DP2 "@gpus=0,1", "a:" DP2 "@gpus=2,3"},
       "job 'a:" DP2 "@gpus=2,3': two jobs are named 'a'"},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    fabric_case c = {{t[i].specs[0], t[i].specs[1], NULL, NULL}, 0};
    fabric_out o = fabric(&c);
    assert_int_not_equal(o.rc, ST_OK);
    assert_string_equal(o.msg, t[i].msg);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_merge__renumbers_ranks_and_communicators),
      cmocka_unit_test(test_merge__overlap_and_range_name_the_jobs),
      cmocka_unit_test(test_background__rounds_released_by_the_timer),
      cmocka_unit_test(test_fabric__shared_leaf_links_halve_each_ring),
      cmocka_unit_test(test_fabric__disjoint_leaves_do_not_slow),
      cmocka_unit_test(test_fabric__background_shares_the_leaf_links),
      cmocka_unit_test(test_fabric__bad_specs_are_named),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
