/* test_measure.c — the engine's result turned into what analysis reads
 * (sim/driver/drv_measure.c: drv_measure_take), on a sim_result built by
 * hand (no engine run): every field arrives where analysis looks for it, the
 * algorithm and protocol names are the engine's (docs/collectives.md), the
 * large arrays are taken over rather than copied, and the engine's result
 * is left without them, so freeing it frees none of them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "driver.h"

/* A result as sim_run leaves it: every array malloc'd, link names in the arena. */
static sim_result *hand_result(void)
{
  sim_result *r = calloc(1, sizeof *r);
  assert_non_null(r);
  st_arena_init(&r->arena, 1 << 12);
  r->num_ranks = 2;
  r->iterations = 3;
  r->step_time_s = 0.5;
  r->sim_time_s = 1.5;
  r->wall_s = 0.25;
  r->events = 123456789012ULL;
  r->simulated_ranks = 1;
  snprintf(r->reduction, sizeof r->reduction, "rank classes: 1 of 2");
  r->ranks = calloc(2, sizeof *r->ranks);
  for (int k = 0; k < 2; k++) {
    sim_rank_stats *s = &r->ranks[k];
    s->rank = k;
    s->host = 7 - k;
    s->compute_s = 1.0 + k;
    s->comm_s = 0.25;
    s->exposed_comm_s = 0.125;
    s->overlapped_comm_s = 0.125;
    s->bubble_s = 0.0625 * k;
    s->idle_s = 0.03125;
    s->finish_s = 1.5;
    for (int p = 0; p < WL_PHASE_COUNT; p++)
      s->phase_s[p] = 10.0 * k + p;
    for (int c = 0; c < WL_COMM_KIND_COUNT; c++)
      s->comm_kind_s[c] = 100.0 * k + c;
    s->pod_exposed_s = 0.015625 * (k + 1);
  }
  /* a cluster of two pods: bytes out of and into each */
  r->num_pods = 2;
  r->pod_out_bytes = calloc(2, sizeof *r->pod_out_bytes);
  r->pod_in_bytes = calloc(2, sizeof *r->pod_in_bytes);
  r->pod_out_bytes[0] = r->pod_in_bytes[1] = 3e9;
  r->pod_out_bytes[1] = r->pod_in_bytes[0] = 1e9;
  r->num_colls = 2;
  r->colls = calloc(2, sizeof *r->colls);
  r->colls[0] = (sim_coll_record){.comm = 3, .kind = WL_OP_COLL, .op = WL_COLL_ALLGATHER,
                                  .algo = SIM_ALGO_TREE, .proto = SIM_PROTO_LL, .nranks = 8,
                                  .src = -1, .dst = -1, .bytes = 4096, .start_s = 0.2,
                                  .end_s = 0.3, .first_arrival_s = 0.1, .algbw_GBps = 4.5,
                                  .busbw_GBps = 3.9375, .channels = 2};
  r->colls[1] = (sim_coll_record){.comm = 1, .kind = WL_OP_SEND, .nranks = 2, .src = 0,
                                  .dst = 1, .bytes = 512, .start_s = 0.4, .end_s = 0.45,
                                  .first_arrival_s = 0.35, .algbw_GBps = 0.01,
                                  .busbw_GBps = 0.01};
  r->num_links = 2;
  r->links = calloc(2, sizeof *r->links);
  r->links[0] = (sim_link_stats){st_arena_strdup(&r->arena, "gpu0-nvlink"), 450e9, 1e6, 0.5, 0.75};
  r->links[1] = (sim_link_stats){st_arena_strdup(&r->arena, "leaf1:spine0"), 50e9, 2e6, 0.25, 1.0};
  r->num_link_usage = 1;
  r->link_usage = calloc(1, sizeof *r->link_usage);
  r->link_usage[0] = (sim_link_usage){.link = 1, .comm = 3, .kind = WL_OP_COLL,
                                      .op = WL_COLL_ALLGATHER, .bytes = 2e6};
  r->num_timeline = 3;
  r->timeline = calloc(3, sizeof *r->timeline);
  r->timeline[0] = (sim_timeline_row){.rank = 0, .stream = 0, .kind = WL_OP_COMPUTE, .sub = 2,
                                      .program = 1, .op = 5, .start_s = 0, .end_s = 0.1,
                                      .bytes = 0, .flops = 1e12};
  r->timeline[1] = (sim_timeline_row){.rank = 1, .stream = 3, .kind = WL_OP_COLL,
                                      .sub = WL_COLL_ALLGATHER, .program = 0, .op = 70000,
                                      .start_s = 0.2, .end_s = 0.3, .bytes = 4096, .flops = 0};
  r->timeline[2] = (sim_timeline_row){.rank = 1, .stream = 1, .kind = WL_OP_RECV, .program = 0,
                                      .op = 2, .start_s = 0.4, .end_s = 0.45, .bytes = 512};
  return r;
}

static void test_take__every_field_arrives(void **state)
{
  (void)state;
  sim_result *r = hand_result();
  an_measured m;
  st_err err = {0};
  assert_int_equal(drv_measure_take(r, &m, &err), ST_OK);
  sim_result_destroy(r); /* what m holds must not live in r */

  assert_int_equal(m.iterations, 3);
  assert_true(m.step_time_s == 0.5);
  assert_true(m.wall_s == 0.25);
  assert_true(m.events == 123456789012ULL);
  assert_int_equal(m.simulated_ranks, 1);
  assert_string_equal(m.reduction, "rank classes: 1 of 2");

  assert_int_equal(m.num_ranks, 2);
  for (int k = 0; k < 2; k++) {
    const an_rank_row *s = &m.ranks[k];
    assert_int_equal(s->rank, k);
    assert_int_equal(s->host, 7 - k);
    assert_true(s->compute_s == 1.0 + k);
    assert_true(s->comm_s == 0.25);
    assert_true(s->exposed_comm_s == 0.125);
    assert_true(s->overlapped_comm_s == 0.125);
    assert_true(s->bubble_s == 0.0625 * k);
    assert_true(s->idle_s == 0.03125);
    assert_true(s->finish_s == 1.5);
    for (int p = 0; p < WL_PHASE_COUNT; p++)
      assert_true(s->phase_s[p] == 10.0 * k + p);
    for (int c = 0; c < WL_COMM_KIND_COUNT; c++)
      assert_true(s->comm_kind_s[c] == 100.0 * k + c);
  }

  assert_int_equal(m.num_colls, 2);
  const an_coll_rec *c = &m.colls[0];
  assert_int_equal(c->comm, 3);
  assert_int_equal(c->kind, WL_OP_COLL);
  assert_int_equal(c->op, WL_COLL_ALLGATHER);
  assert_int_equal(c->nranks, 8);
  assert_int_equal(c->src, -1);
  assert_int_equal(c->dst, -1);
  assert_int_equal(c->channels, 2);
  assert_true(c->bytes == 4096 && c->start_s == 0.2 && c->end_s == 0.3);
  assert_true(c->first_arrival_s == 0.1 && c->algbw_GBps == 4.5 && c->busbw_GBps == 3.9375);
  /* the names docs/collectives.md gives the tree algorithm and the LL protocol */
  assert_true(c->algo < m.num_algo_names && c->proto < m.num_proto_names);
  assert_string_equal(m.algo_names[c->algo], "tree");
  assert_string_equal(m.proto_names[c->proto], "ll");
  c = &m.colls[1];
  assert_int_equal(c->comm, 1);
  assert_int_equal(c->kind, WL_OP_SEND);
  assert_int_equal(c->src, 0);
  assert_int_equal(c->dst, 1);
  assert_true(c->bytes == 512 && c->start_s == 0.4 && c->end_s == 0.45);
  /* every algorithm and protocol the engine has, by the engine's number */
  static const char *const algos[] = {"ring",      "direct",  "chain", "tree",  "nvls",
                                      "nvls_tree", "collnet", "hier",  "torus", "hier_pods"};
  static const char *const protos[] = {"ll", "ll128", "simple"};
  assert_int_equal(m.num_algo_names, 10);
  assert_int_equal(m.num_proto_names, 3);
  for (int i = 0; i < 10; i++)
    assert_string_equal(m.algo_names[i], algos[i]);
  for (int i = 0; i < 3; i++)
    assert_string_equal(m.proto_names[i], protos[i]);

  /* link names copied out of the (now released) arena */
  assert_int_equal(m.num_links, 2);
  assert_string_equal(m.links[0].name, "gpu0-nvlink");
  assert_string_equal(m.links[1].name, "leaf1:spine0");
  assert_true(m.links[0].bandwidth_Bps == 450e9 && m.links[0].bytes == 1e6);
  assert_true(m.links[0].busy_s == 0.5 && m.links[0].peak_util == 0.75);
  assert_true(m.links[1].bandwidth_Bps == 50e9 && m.links[1].peak_util == 1.0);

  assert_int_equal(m.num_usage, 1);
  assert_int_equal(m.usage[0].link, 1);
  assert_int_equal(m.usage[0].comm, 3);
  assert_int_equal(m.usage[0].kind, WL_OP_COLL);
  assert_int_equal(m.usage[0].op, WL_COLL_ALLGATHER);
  assert_true(m.usage[0].bytes == 2e6);

  /* the pods' bytes taken over; the exposed time crossing pods summed over
   * the ranks (0.015625 + 0.03125) */
  assert_int_equal(m.num_pods, 2);
  assert_true(m.pod_out_bytes[0] == 3e9 && m.pod_out_bytes[1] == 1e9);
  assert_true(m.pod_in_bytes[0] == 1e9 && m.pod_in_bytes[1] == 3e9);
  assert_true(m.pod_exposed_s == 0.046875);

  assert_int_equal(m.num_timeline, 3);
  static const struct {
    int rank, stream, kind, program;
    unsigned op;
    double start, end, bytes, flops;
  } tw[3] = {{0, 0, WL_OP_COMPUTE, 1, 5, 0, 0.1, 0, 1e12},
             {1, 3, WL_OP_COLL, 0, 70000, 0.2, 0.3, 4096, 0},
             {1, 1, WL_OP_RECV, 0, 2, 0.4, 0.45, 512, 0}};
  for (int i = 0; i < 3; i++) {
    const an_timeline_rec *t = &m.timeline[i];
    assert_int_equal(t->rank, tw[i].rank);
    assert_int_equal(t->stream, tw[i].stream);
    assert_int_equal(t->kind, tw[i].kind);
    assert_int_equal(t->program, tw[i].program);
    assert_int_equal(t->op, tw[i].op);
    assert_true(t->start_s == tw[i].start && t->end_s == tw[i].end);
    assert_true(t->bytes == tw[i].bytes && t->flops == tw[i].flops);
  }
  an_measured_release(&m);
  assert_null(m.timeline);
  assert_int_equal(m.num_links, 0);
}

/* The timeline is converted where it lies: the block the engine filled is
 * the one analysis gets, and the engine's result no longer has it. */
static void test_take__large_arrays_are_taken_not_copied(void **state)
{
  (void)state;
  sim_result *r = hand_result();
  const void *tl = r->timeline, *colls = r->colls, *usage = r->link_usage;
  an_measured m;
  st_err err = {0};
  assert_int_equal(drv_measure_take(r, &m, &err), ST_OK);
  assert_null(r->timeline);
  assert_int_equal(r->num_timeline, 0);
  assert_null(r->colls);
  assert_int_equal(r->num_colls, 0);
  assert_null(r->link_usage);
  assert_int_equal(r->num_link_usage, 0);
  assert_null(r->ranks);
  /* same size of row: not even shrunk, so the very block */
  if (sizeof(an_timeline_rec) == sizeof(sim_timeline_row))
    assert_ptr_equal(m.timeline, tl);
  if (sizeof(an_coll_rec) == sizeof(sim_coll_record))
    assert_ptr_equal(m.colls, colls);
  if (sizeof(an_usage_rec) == sizeof(sim_link_usage))
    assert_ptr_equal(m.usage, usage);
  sim_result_destroy(r);
  an_measured_release(&m);
}

/* A run without a results file records no collectives, link loads or
 * timeline: those stay empty. */
static void test_take__what_was_not_recorded_stays_empty(void **state)
{
  (void)state;
  sim_result *r = hand_result();
  free(r->colls);
  free(r->link_usage);
  free(r->timeline);
  r->colls = NULL;
  r->link_usage = NULL;
  r->timeline = NULL;
  r->num_colls = r->num_link_usage = r->num_timeline = 0;
  an_measured m;
  st_err err = {0};
  assert_int_equal(drv_measure_take(r, &m, &err), ST_OK);
  sim_result_destroy(r);
  assert_null(m.colls);
  assert_int_equal(m.num_colls, 0);
  assert_null(m.usage);
  assert_int_equal(m.num_usage, 0);
  assert_null(m.timeline);
  assert_int_equal(m.num_timeline, 0);
  assert_int_equal(m.num_ranks, 2);
  assert_int_equal(m.num_links, 2);
  an_measured_release(&m);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_take__every_field_arrives),
      cmocka_unit_test(test_take__large_arrays_are_taken_not_copied),
      cmocka_unit_test(test_take__what_was_not_recorded_stays_empty),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
