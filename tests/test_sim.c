/* test_sim.c — the replay engine against closed forms.
 *
 * Platform "node8": 8 GPUs on an NVSwitch, B = 450e9 B/s per direction per
 * GPU, 0.5 us per link, so a GPU-to-GPU route has latency lat = 1e-6 s and
 * bandwidth B.  Across nodes: one 50e9 B/s NIC per GPU, 1 us per NIC link.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"
#include "sim_fork.h"

static const double B = 450e9, LAT = 1e-6;

/* n ranks in one communicator "world", each doing the given collectives on one stream. */
static wl_workload *coll_workload(int n, int nops, const int *ops, const double *bytes)
{
  const char *roles[] = {"world"};
  const char *streams[] = {"comm"};
  wl_workload *wl = wl_workload_create(n, 1, roles);
  int p = wl_program_add(wl, "p", 1, streams);
  for (int k = 0; k < nops; k++) {
    wl_op o = wl_op_coll(0, ops[k], 0, bytes[k]);
    wl_program_append(&wl->programs[p], &o, NULL, 0);
  }
  int32_t ranks[64];
  for (int i = 0; i < n; i++)
    ranks[i] = i;
  int c = wl_comm_add(wl, "world", WL_COMM_WORLD, n, ranks);
  for (int i = 0; i < n; i++) {
    wl_rank_set(wl, i, p);
    wl_rank_set_comm(wl, i, 0, c);
  }
  return wl;
}

/* These tests check the engine against alpha-beta closed forms: links at line
 * rate and one route latency per algorithm hop (NCCL's cost model is tested
 * in test_coll.c). */
static const sim_options *ideal_options(void)
{
  static sim_options o;
  sim_options_init(&o);
  o.coll_model = SIM_COLL_IDEAL;
  return &o;
}

static void check_rel(double got, double want, double tol, const char *what)
{
  double rel = fabs(got - want) / want;
  if (rel > tol) {
    print_error("%s: got %.9g, want %.9g (rel. error %.3g > %.3g)\n", what, got, want, rel, tol);
    fail();
  }
}

static void ring_closed_form(int fidelity)
{
  static const int ns[] = {2, 4, 8};
  static const double sizes[] = {1024, 1 << 20, 64.0 * (1 << 20), 4096.0 * (1 << 20)};
  static const int ops[] = {WL_COLL_ALLREDUCE, WL_COLL_ALLGATHER, WL_COLL_REDUCESCATTER};
  for (size_t in = 0; in < 3; in++) {
    int n = ns[in];
    int opl[12];
    double bl[12];
    int k = 0;
    for (size_t io = 0; io < 3; io++)
      for (size_t is = 0; is < 4; is++) {
        opl[k] = ops[io];
        bl[k++] = sizes[is];
      }
    wl_workload *wl = coll_workload(n, k, opl, bl);
    sim_options opt;
    sim_options_init(&opt);
    opt.fidelity = fidelity;
    opt.coll_model = SIM_COLL_IDEAL;
    forked_result *f = sim_run_forked(wl, "node8", &opt);
    assert_non_null(f);
    if (f->rc)
      print_error("%s\n", f->msg);
    assert_int_equal(f->rc, 0);
    assert_int_equal(f->num_colls, (size_t)k);
    for (int i = 0; i < k; i++) {
      double S = bl[i];
      double steps = opl[i] == WL_COLL_ALLREDUCE ? 2.0 * (n - 1) : (double)(n - 1);
      double want = steps * (LAT + S / (n * B));
      char what[96];
      snprintf(what, sizeof what, "%s n=%d S=%.0f %s", wl_coll_name(opl[i]), n, S,
               fidelity == SIM_FID_STEP ? "step" : "flow");
      check_rel(f->colls[i].end_s - f->colls[i].start_s, want, 1e-3, what);
    }
    forked_result_free(f);
    wl_workload_destroy(wl);
  }
}

static void test_ring__matches_alpha_beta_flow(void **state)
{
  (void)state;
  ring_closed_form(SIM_FID_FLOW);
}

static void test_ring__matches_alpha_beta_step(void **state)
{
  (void)state;
  ring_closed_form(SIM_FID_STEP);
}

/* All-to-all on one NVSwitch node: each GPU sends 7 blocks of S/8 through its
 * one port, so lat + 7S/(8B).  Broadcast and reduce as a pipelined chain:
 * (n-1) lat + S/B in flow fidelity. */
static void test_direct_and_chain__match_closed_forms(void **state)
{
  (void)state;
  static const int ops[] = {WL_COLL_ALLTOALL, WL_COLL_BROADCAST, WL_COLL_REDUCE};
  double S = 512.0 * (1 << 20);
  double bytes[] = {S, S, S};
  wl_workload *wl = coll_workload(8, 3, ops, bytes);
  forked_result *f = sim_run_forked(wl, "node8", ideal_options());
  assert_non_null(f);
  assert_int_equal(f->rc, 0);
  assert_int_equal(f->num_colls, 3);
  check_rel(f->colls[0].end_s - f->colls[0].start_s, LAT + 7 * S / (8 * B), 1e-6, "alltoall");
  check_rel(f->colls[1].end_s - f->colls[1].start_s, 7 * LAT + S / B, 1e-6, "broadcast");
  check_rel(f->colls[2].end_s - f->colls[2].start_s, 7 * LAT + S / B, 1e-6, "reduce");
  /* busbw as nccl-tests: alltoall algbw x 7/8, broadcast x 1 */
  check_rel(f->colls[0].busbw_GBps, S / (LAT + 7 * S / (8 * B)) / 1e9 * 7 / 8, 1e-6, "busbw");
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* Two 4-GPU all-reduces on disjoint GPUs of one node at once take as long as one. */
static void test_contention__disjoint_allreduces_do_not_interfere(void **state)
{
  (void)state;
  const char *roles[] = {"half"};
  const char *streams[] = {"comm"};
  double S = 256.0 * (1 << 20);
  wl_workload *wl = wl_workload_create(8, 1, roles);
  int p = wl_program_add(wl, "p", 1, streams);
  wl_op o = wl_op_coll(0, WL_COLL_ALLREDUCE, 0, S);
  wl_program_append(&wl->programs[p], &o, NULL, 0);
  int32_t a[] = {0, 1, 2, 3}, b[] = {4, 5, 6, 7};
  int ca = wl_comm_add(wl, "a", WL_COMM_DP, 4, a), cb = wl_comm_add(wl, "b", WL_COMM_DP, 4, b);
  for (int i = 0; i < 8; i++) {
    wl_rank_set(wl, i, p);
    wl_rank_set_comm(wl, i, 0, i < 4 ? ca : cb);
  }
  forked_result *f = sim_run_forked(wl, "node8", ideal_options());
  assert_non_null(f);
  assert_int_equal(f->rc, 0);
  double want = 2.0 * 3 * (LAT + S / (4 * B));
  check_rel(f->step_time_s, want, 1e-4, "two disjoint all-reduces");
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* GPU 0 in two 2-GPU all-reduces at once ({0,1} and {0,2}) on two streams:
 * both flows leave through GPU 0's one NVLink port, so each gets B/2 and the
 * pair takes 2 (lat + S/B) instead of 2 (lat + S/(2B)). */
static void test_contention__shared_link_halves_bandwidth(void **state)
{
  (void)state;
  const char *roles[] = {"x", "y"};
  const char *streams[] = {"s0", "s1"};
  double S = 1024.0 * (1 << 20);
  wl_workload *wl = wl_workload_create(3, 2, roles);
  int p0 = wl_program_add(wl, "gpu0", 2, streams);
  int p1 = wl_program_add(wl, "gpu1", 2, streams);
  int p2 = wl_program_add(wl, "gpu2", 2, streams);
  wl_op ox = wl_op_coll(0, WL_COLL_ALLREDUCE, 0, S), oy = wl_op_coll(1, WL_COLL_ALLREDUCE, 1, S);
  wl_program_append(&wl->programs[p0], &ox, NULL, 0);
  wl_program_append(&wl->programs[p0], &oy, NULL, 0);
  wl_program_append(&wl->programs[p1], &ox, NULL, 0);
  wl_program_append(&wl->programs[p2], &oy, NULL, 0);
  int32_t x[] = {0, 1}, y[] = {0, 2};
  int cx = wl_comm_add(wl, "x", WL_COMM_DP, 2, x), cy = wl_comm_add(wl, "y", WL_COMM_DP, 2, y);
  wl_rank_set(wl, 0, p0);
  wl_rank_set(wl, 1, p1);
  wl_rank_set(wl, 2, p2);
  wl_rank_set_comm(wl, 0, 0, cx);
  wl_rank_set_comm(wl, 0, 1, cy);
  wl_rank_set_comm(wl, 1, 0, cx);
  wl_rank_set_comm(wl, 2, 1, cy);
  forked_result *f = sim_run_forked(wl, "node8", ideal_options());
  assert_non_null(f);
  assert_int_equal(f->rc, 0);
  double alone = 2.0 * (LAT + S / (2 * B)), shared = 2.0 * (LAT + S / B);
  check_rel(f->step_time_s, shared, 1e-4, "all-reduces sharing a link");
  assert_true(f->step_time_s > 1.9 * alone);
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* Which collectives used each link: three GPUs of one node, all-reduces of
 * S bytes on x = {0,1} and y = {0,2} and a send of S/2 from GPU 1 to GPU 2
 * on p = {1,2}, all at once.  A 2-rank ring all-reduce on one channel sends
 * S from each member (2(n-1) steps of S/n), so GPU 0's port carries S for x and S for y each
 * way, GPU 1's uplink S for x and S/2 for p, GPU 2's downlink S for y and
 * S/2 for p.  Per link the shares add up to the link's bytes. */
static void test_link_usage__bytes_per_communicator_add_up_to_the_link(void **state)
{
  (void)state;
  const char *roles[] = {"x", "y", "p"};
  const char *streams[] = {"s0", "s1"};
  double S = 256.0 * (1 << 20);
  wl_workload *wl = wl_workload_create(3, 3, roles);
  int p0 = wl_program_add(wl, "gpu0", 2, streams);
  int p1 = wl_program_add(wl, "gpu1", 2, streams);
  int p2 = wl_program_add(wl, "gpu2", 2, streams);
  wl_op ox = wl_op_coll(0, WL_COLL_ALLREDUCE, 0, S), oy = wl_op_coll(1, WL_COLL_ALLREDUCE, 1, S);
  wl_op snd = wl_op_p2p(1, WL_OP_SEND, 2, 1, 0, S / 2), rcv = wl_op_p2p(1, WL_OP_RECV, 2, 0, 0, S / 2);
  wl_op oy0 = wl_op_coll(0, WL_COLL_ALLREDUCE, 1, S);
  wl_program_append(&wl->programs[p0], &ox, NULL, 0);
  wl_program_append(&wl->programs[p0], &oy, NULL, 0);
  wl_program_append(&wl->programs[p1], &ox, NULL, 0);
  wl_program_append(&wl->programs[p1], &snd, NULL, 0);
  wl_program_append(&wl->programs[p2], &oy0, NULL, 0);
  wl_program_append(&wl->programs[p2], &rcv, NULL, 0);
  int32_t x[] = {0, 1}, y[] = {0, 2}, pp[] = {1, 2};
  int cx = wl_comm_add(wl, "x", WL_COMM_DP, 2, x), cy = wl_comm_add(wl, "y", WL_COMM_DP, 2, y);
  int cp = wl_comm_add(wl, "p", WL_COMM_PP, 2, pp);
  wl_rank_set(wl, 0, p0);
  wl_rank_set(wl, 1, p1);
  wl_rank_set(wl, 2, p2);
  wl_rank_set_comm(wl, 0, 0, cx);
  wl_rank_set_comm(wl, 0, 1, cy);
  wl_rank_set_comm(wl, 1, 0, cx);
  wl_rank_set_comm(wl, 1, 2, cp);
  wl_rank_set_comm(wl, 2, 1, cy);
  wl_rank_set_comm(wl, 2, 2, cp);
  st_err err;
  assert_int_equal(wl_workload_check(wl, &err), 0);
  sim_options opt = *ideal_options();
  opt.coll_algo = SIM_ALGO_RING; /* one ring: each member sends 2(n-1)/n S */
  opt.coll_channels = 1;
  forked_result *f = sim_run_forked(wl, "node8", &opt);
  assert_non_null(f);
  if (f->rc)
    print_error("%s\n", f->msg);
  assert_int_equal(f->rc, 0);
  /* link, then (comm, kind, bytes) most bytes first */
  static const struct {
    const char *link;
    int n;
    int comm[2], kind[2];
    double share[2]; /* x S */
  } want[] = {
      {"nvl-0-up", 2, {0, 1}, {WL_OP_COLL, WL_OP_COLL}, {1, 1}},
      {"nvl-0-down", 2, {0, 1}, {WL_OP_COLL, WL_OP_COLL}, {1, 1}},
      {"nvl-1-up", 2, {0, 2}, {WL_OP_COLL, WL_OP_SEND}, {1, 0.5}},
      {"nvl-1-down", 1, {0, 0}, {WL_OP_COLL, 0}, {1, 0}},
      {"nvl-2-up", 1, {1, 0}, {WL_OP_COLL, 0}, {1, 0}},
      {"nvl-2-down", 2, {1, 2}, {WL_OP_COLL, WL_OP_SEND}, {1, 0.5}},
  };
  size_t seen = 0;
  for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
    size_t li = f->num_links;
    for (size_t i = 0; i < f->num_links; i++)
      if (!strcmp(f->link_names[i], want[w].link))
        li = i;
    if (li == f->num_links) {
      print_error("link %s not reported\n", want[w].link);
      fail();
    }
    double sum = 0;
    int k = 0;
    for (size_t u = 0; u < f->num_link_usage; u++) {
      const sim_link_usage *lu = &f->link_usage[u];
      if (lu->link != li)
        continue;
      assert_true(k < want[w].n);
      assert_int_equal(lu->comm, want[w].comm[k]);
      assert_int_equal(lu->kind, want[w].kind[k]);
      assert_int_equal(lu->op, want[w].kind[k] == WL_OP_COLL ? WL_COLL_ALLREDUCE : 0);
      check_rel(lu->bytes, want[w].share[k] * S, 1e-12, want[w].link);
      sum += lu->bytes;
      k++;
      seen++;
    }
    assert_int_equal(k, want[w].n);
    check_rel(sum, f->link_bytes[li], 1e-12, "shares add up to the link's bytes");
  }
  assert_int_equal(seen, f->num_link_usage); /* no share on any other link */
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* A collective computed in closed form (nothing else on its links) is
 * counted on its links and attributed like a simulated one: one 2-rank ring
 * all-reduce of S puts S on each GPU's uplink and downlink, all of it x's. */
static void test_link_usage__closed_form_collective_is_attributed(void **state)
{
  (void)state;
  double S = 64.0 * (1 << 20);
  wl_workload *wl = coll_workload(2, 1, (const int[]){WL_COLL_ALLREDUCE}, (const double[]){S});
  sim_options opt = *ideal_options();
  opt.coll_algo = SIM_ALGO_RING;
  opt.coll_channels = 1;
  forked_result *f = sim_run_forked(wl, "node8", &opt);
  assert_non_null(f);
  assert_int_equal(f->rc, 0);
  assert_int_equal(f->fast_colls, 1);
  assert_int_equal(f->num_links, 4); /* nvl-0-up/down, nvl-1-up/down */
  assert_int_equal(f->num_link_usage, 4);
  for (size_t u = 0; u < f->num_link_usage; u++) {
    const sim_link_usage *lu = &f->link_usage[u];
    assert_int_equal(lu->link, u); /* one share per link, in link order */
    assert_int_equal(lu->comm, 0);
    assert_int_equal(lu->kind, WL_OP_COLL);
    assert_int_equal(lu->op, WL_COLL_ALLREDUCE);
    check_rel(lu->bytes, S, 1e-12, f->link_names[lu->link]);
    check_rel(f->link_bytes[lu->link], S, 1e-12, "link bytes");
  }
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* Two stages, two micro-batches (GPipe forward only):
 *   stage 0: F(1 ms), send, F(1 ms), send
 *   stage 1: recv, F(2 ms), recv, F(2 ms)
 * With T = lat + S/B for one transfer, by hand:
 *   send 1: 1 .. 1+T;  stage 0's F2: 1+T .. 2+T;  stage 1's F1: 1+T .. 3+T;
 *   send 2 waits for stage 1 (bubble on stage 0 from 2+T to 3+T): 3+T .. 3+2T;
 *   stage 1's F2: 3+2T .. 5+2T.   Step = 5 ms + 2T. */
static wl_workload *pipeline2(double S)
{
  const char *roles[] = {"pp"};
  const char *streams[] = {"compute"};
  wl_workload *wl = wl_workload_create(2, 1, roles);
  int p0 = wl_program_add(wl, "stage0", 1, streams);
  int p1 = wl_program_add(wl, "stage1", 1, streams);
  for (int mb = 0; mb < 2; mb++) {
    wl_op f = wl_op_compute(0, 1e-3);
    wl_op s = wl_op_p2p(0, WL_OP_SEND, 0, 1, mb, S);
    wl_program_append(&wl->programs[p0], &f, NULL, 0);
    wl_program_append(&wl->programs[p0], &s, NULL, 0);
    wl_op r = wl_op_p2p(0, WL_OP_RECV, 0, 0, mb, S);
    wl_op g = wl_op_compute(0, 2e-3);
    wl_program_append(&wl->programs[p1], &r, NULL, 0);
    wl_program_append(&wl->programs[p1], &g, NULL, 0);
  }
  int32_t pair[] = {0, 1};
  int c = wl_comm_add(wl, "pp", WL_COMM_PP, 2, pair);
  wl_rank_set(wl, 0, p0);
  wl_rank_set(wl, 1, p1);
  wl_rank_set_comm(wl, 0, 0, c);
  wl_rank_set_comm(wl, 1, 0, c);
  return wl;
}

static void test_pipeline__two_stages_match_hand_critical_path(void **state)
{
  (void)state;
  double S = 64.0 * (1 << 20);
  double T = LAT + S / B;
  wl_workload *wl = pipeline2(S);
  forked_result *f = sim_run_forked(wl, "node8", ideal_options());
  assert_non_null(f);
  assert_int_equal(f->rc, 0);
  check_rel(f->step_time_s, 5e-3 + 2 * T, 1e-6, "pipeline step");
  /* stage 0: compute 2 ms, comm 2T, bubble 1 ms (waiting for stage 1's second recv) */
  check_rel(f->ranks[0].compute_s, 2e-3, 1e-6, "stage 0 compute");
  check_rel(f->ranks[0].exposed_comm_s, 2 * T, 1e-6, "stage 0 comm");
  check_rel(f->ranks[0].bubble_s, 1e-3, 1e-6, "stage 0 bubble");
  check_rel(f->ranks[0].finish_s, 3e-3 + 2 * T, 1e-6, "stage 0 finish");
  /* stage 1: compute 4 ms, comm 2T, bubble 1 ms (waiting for the first activation) */
  check_rel(f->ranks[1].compute_s, 4e-3, 1e-6, "stage 1 compute");
  check_rel(f->ranks[1].bubble_s, 1e-3, 1e-6, "stage 1 bubble");
  /* stage 0 waits from its finish to stage 1's, 2 ms: idle; every rank's
   * parts add up to the step */
  check_rel(f->ranks[0].idle_s, 2e-3, 1e-6, "stage 0 idle after its last op");
  assert_true(f->ranks[1].idle_s < 1e-12);
  for (int r = 0; r < 2; r++) {
    const sim_rank_stats *s = &f->ranks[r];
    assert_true(fabs(s->compute_s + s->exposed_comm_s + s->bubble_s + s->idle_s - f->step_time_s) <
                1e-9);
  }
  /* the two transfers are recorded as send/recv pairs */
  assert_int_equal(f->num_colls, 2);
  assert_int_equal(f->colls[0].src, 0);
  assert_int_equal(f->colls[0].dst, 1);
  check_rel(f->colls[1].end_s - f->colls[1].start_s, T, 1e-6, "transfer time");
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* Without the results file's per-instance records and link loads (what
 * `run` without -o and `validate` ask for) the replay is the same to the bit;
 * only the records and the link table are missing. */
static void test_options__records_and_link_stats_do_not_change_the_replay(void **state)
{
  (void)state;
  wl_workload *wl = pipeline2(64.0 * (1 << 20));
  sim_options lean = *ideal_options();
  lean.record_colls = 0;
  lean.link_stats = 0;
  forked_result *full = sim_run_forked(wl, "node8", ideal_options());
  forked_result *f = sim_run_forked(wl, "node8", &lean);
  assert_non_null(full);
  assert_non_null(f);
  assert_int_equal(full->rc, 0);
  assert_int_equal(f->rc, 0);
  assert_true(full->num_colls == 2 && full->num_links > 0);
  assert_true(f->num_colls == 0 && f->num_links == 0);
  assert_true(f->step_time_s == full->step_time_s);
  for (int r = 0; r < 2; r++)
    assert_memory_equal(&f->ranks[r], &full->ranks[r], sizeof f->ranks[r]);
  forked_result_free(full);
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* A compute stream and a communication stream: the all-reduce waits for the
 * first compute op, then runs under the second one. */
static void test_overlap__comm_hidden_under_compute_is_not_exposed(void **state)
{
  (void)state;
  const char *roles[] = {"dp"};
  const char *streams[] = {"compute", "dp"};
  double S = 900e6; /* 2 ranks: 2 (lat + S/(2B)) = 2 us + 2 ms */
  wl_workload *wl = wl_workload_create(2, 1, roles);
  int p = wl_program_add(wl, "p", 2, streams);
  wl_op c1 = wl_op_compute(0, 1e-3), c2 = wl_op_compute(0, 3e-3);
  long i1 = wl_program_append(&wl->programs[p], &c1, NULL, 0);
  wl_program_append(&wl->programs[p], &c2, NULL, 0);
  wl_op ar = wl_op_coll(1, WL_COLL_ALLREDUCE, 0, S);
  uint32_t w = (uint32_t)i1;
  wl_program_append(&wl->programs[p], &ar, &w, 1);
  int32_t both[] = {0, 1};
  int c = wl_comm_add(wl, "dp", WL_COMM_DP, 2, both);
  for (int r = 0; r < 2; r++) {
    wl_rank_set(wl, r, p);
    wl_rank_set_comm(wl, r, 0, c);
  }
  forked_result *f = sim_run_forked(wl, "node8", ideal_options());
  assert_non_null(f);
  assert_int_equal(f->rc, 0);
  double tc = 2 * (LAT + S / (2 * B));
  check_rel(f->step_time_s, 4e-3, 1e-9, "step = compute");
  for (int r = 0; r < 2; r++) {
    check_rel(f->ranks[r].compute_s, 4e-3, 1e-9, "compute");
    check_rel(f->ranks[r].overlapped_comm_s, tc, 1e-6, "overlapped");
    assert_true(f->ranks[r].exposed_comm_s < 1e-12);
  }
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* A modelled compute op that runs beside the rank's all-reduce is lengthened
 * by the device's overlap slowdown x the overlapped time; the same op with
 * nothing in flight is not.  node8's device is H100-SXM. */
static void overlap_case(int with_comm, double S, double *step, double *xfer_s,
                         double *compute_s)
{
  const char *roles[] = {"dp"};
  const char *streams[] = {"compute", "dp"};
  wl_workload *wl = wl_workload_create(2, 1, roles);
  int p = wl_program_add(wl, "p", 2, streams);
  wl_op c1 = wl_op_compute(0, 1e-3);
  wl_op c2 = wl_op_compute(0, -1);
  c2.sub = WL_CLASS_ELEMENTWISE;
  c2.bytes = 8e9;
  long i1 = wl_program_append(&wl->programs[p], &c1, NULL, 0);
  wl_program_append(&wl->programs[p], &c2, NULL, 0);
  if (with_comm) {
    wl_op ar = wl_op_coll(1, WL_COLL_ALLREDUCE, 0, S);
    uint32_t w = (uint32_t)i1;
    wl_program_append(&wl->programs[p], &ar, &w, 1);
  } else {
    /* keep c1 a wait target so the two ops are separate runs in both cases */
    wl_op mk = wl_op_marker(1, WL_MARK_ITERATION, 0);
    uint32_t w = (uint32_t)i1;
    wl_program_append(&wl->programs[p], &mk, &w, 1);
  }
  int32_t both[] = {0, 1};
  int c = wl_comm_add(wl, "dp", WL_COMM_DP, 2, both);
  for (int r = 0; r < 2; r++) {
    wl_rank_set(wl, r, p);
    wl_rank_set_comm(wl, r, 0, c);
  }
  forked_result *f = sim_run_forked(wl, "node8", NULL);
  assert_non_null(f);
  if (f->rc)
    print_error("%s\n", f->msg);
  assert_int_equal(f->rc, 0);
  *step = f->step_time_s;
  *xfer_s = f->num_colls ? f->colls[0].end_s - f->colls[0].start_s : 0;
  *compute_s = f->ranks[0].compute_s;
  forked_result_free(f);
  wl_workload_destroy(wl);
}

static void test_overlap__modelled_compute_under_transfer_is_stretched(void **state)
{
  (void)state;
  plat_device d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "H100-SXM");
  const plat_compute_params *cp = plat_compute_params_for(&d);
  assert_string_equal(cp->device, "H100-SXM");
  double t2 = cp->launch_s + 8e9 / (3.35e12 * cp->mem_eff); /* about 2.7 ms */
  double s = cp->overlap_slowdown, with, without, tc, none, comp;
  overlap_case(1, 900e6, &with, &tc, &comp);
  overlap_case(0, 900e6, &without, &none, &comp);
  check_rel(without, 1e-3 + t2, 1e-9, "no transfer: not stretched");
  /* the all-reduce (900 MB over 2 GPUs: about 2 ms) starts with c2 and ends
   * before it: c2 is lengthened by slowdown x the all-reduce's duration */
  assert_true(tc > 1e-3 && tc < t2);
  check_rel(with, 1e-3 + t2 + s * tc, 1e-9, "under the all-reduce");
  assert_true(s > 0);
  /* a 4x larger all-reduce (about 8 ms) outlasts c2: every stretch is
   * overlapped too, s t2 (1 + s + s^2 + ...), so c2 takes t2 / (1 - s) and
   * the step ends with the all-reduce */
  overlap_case(1, 3.6e9, &with, &tc, &comp);
  assert_true(tc > t2 / (1 - s));
  check_rel(comp, 1e-3 + t2 / (1 - s), 1e-9, "compute under a longer all-reduce");
  check_rel(with, 1e-3 + tc, 1e-9, "the step ends with the all-reduce");
}

static void test_failure__unmatched_collective_names_comm_and_ranks(void **state)
{
  (void)state;
  const char *roles[] = {"world"};
  const char *streams[] = {"comm"};
  wl_workload *wl = wl_workload_create(4, 1, roles);
  int p = wl_program_add(wl, "p", 1, streams);
  int q = wl_program_add(wl, "q", 1, streams);
  wl_op o = wl_op_coll(0, WL_COLL_ALLREDUCE, 0, 1024);
  wl_program_append(&wl->programs[p], &o, NULL, 0);
  wl_op c = wl_op_compute(0, 1e-3);
  wl_program_append(&wl->programs[q], &c, NULL, 0);
  int32_t all[] = {0, 1, 2, 3};
  int cm = wl_comm_add(wl, "world", WL_COMM_WORLD, 4, all);
  for (int r = 0; r < 4; r++) {
    wl_rank_set(wl, r, r == 3 ? q : p);
    wl_rank_set_comm(wl, r, 0, cm);
  }
  forked_result *f = sim_run_forked(wl, "node8", ideal_options());
  assert_non_null(f);
  assert_int_equal(f->rc, ST_ESIM);
  assert_string_equal(f->msg, "collective allreduce (op 0 of program 'p', rank 0) on "
                              "communicator 'world' never completed: 3 of 4 ranks reached it "
                              "(0,1,2); ranks still missing: 3");
  forked_result_free(f);
  wl_workload_destroy(wl);
}

static void test_failure__mismatched_sizes_are_reported(void **state)
{
  (void)state;
  const char *roles[] = {"world"};
  const char *streams[] = {"comm"};
  wl_workload *wl = wl_workload_create(2, 1, roles);
  int p = wl_program_add(wl, "p", 1, streams);
  int q = wl_program_add(wl, "q", 1, streams);
  wl_op a = wl_op_coll(0, WL_COLL_ALLREDUCE, 0, 1024), b = wl_op_coll(0, WL_COLL_ALLREDUCE, 0, 2048);
  wl_program_append(&wl->programs[p], &a, NULL, 0);
  wl_program_append(&wl->programs[q], &b, NULL, 0);
  int32_t all[] = {0, 1};
  int cm = wl_comm_add(wl, "world", WL_COMM_WORLD, 2, all);
  for (int r = 0; r < 2; r++) {
    wl_rank_set(wl, r, r ? q : p);
    wl_rank_set_comm(wl, r, 0, cm);
  }
  forked_result *f = sim_run_forked(wl, "node8", ideal_options());
  assert_non_null(f);
  assert_int_equal(f->rc, ST_ESIM);
  assert_string_equal(f->msg, "collective mismatch on communicator 'world': rank 0 called "
                              "allreduce of 1024 bytes (op 0 of program 'p'), rank 1 called "
                              "allreduce of 2048 bytes (op 0 of program 'q')");
  forked_result_free(f);
  wl_workload_destroy(wl);
}

static void test_setup__too_few_gpus_is_an_input_error(void **state)
{
  (void)state;
  int op = WL_COLL_ALLREDUCE;
  double S = 1024;
  wl_workload *wl = coll_workload(16, 1, &op, &S);
  forked_result *f = sim_run_forked(wl, "node8", ideal_options());
  assert_non_null(f);
  assert_int_equal(f->rc, ST_EINPUT);
  assert_string_equal(f->msg, "workload has 16 ranks but cluster 'node8' has 8 GPUs (8 per "
                              "node: it needs 2 nodes)");
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* Across two nodes the ring's node-crossing edges use the NICs: 2 GPUs on
 * different nodes, all-reduce = 2 (lat_nic + S/(2 B_nic)) with lat_nic = 2 us. */
static void test_ring__across_nodes_uses_nics(void **state)
{
  (void)state;
  const char *roles[] = {"world"};
  const char *streams[] = {"comm"};
  double S = 256.0 * (1 << 20);
  wl_workload *wl = wl_workload_create(9, 1, roles);
  int p = wl_program_add(wl, "p", 1, streams);
  int idle = wl_program_add(wl, "idle", 1, streams);
  wl_op o = wl_op_coll(0, WL_COLL_ALLREDUCE, 0, S);
  wl_program_append(&wl->programs[p], &o, NULL, 0);
  wl_op z = wl_op_compute(0, 0);
  wl_program_append(&wl->programs[idle], &z, NULL, 0);
  int32_t pair[] = {0, 8};
  int c = wl_comm_add(wl, "x", WL_COMM_DP, 2, pair);
  for (int r = 0; r < 9; r++)
    wl_rank_set(wl, r, (r == 0 || r == 8) ? p : idle);
  wl_rank_set_comm(wl, 0, 0, c);
  wl_rank_set_comm(wl, 8, 0, c);
  forked_result *f = sim_run_forked(wl, "node8:2", ideal_options());
  assert_non_null(f);
  if (f->rc)
    print_error("%s\n", f->msg);
  assert_int_equal(f->rc, 0);
  check_rel(f->colls[0].end_s - f->colls[0].start_s, 2 * (2e-6 + S / (2 * 50e9)), 1e-4,
            "cross-node all-reduce");
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* Random DAGs of compute ops on many streams of one rank, with cross-stream
 * waits: the replay must finish and its step time must equal the longest
 * path computed here independently (op start = max(previous op on its
 * stream, every op it waits for)).  Many streams waking each other at once
 * is what exposed a lost wake-up in the engine once. */
static void test_waits__random_dags_match_longest_path(void **state)
{
  (void)state;
  const char *roles[] = {"none"};
  const char *streams[] = {"s0", "s1", "s2", "s3", "s4", "s5"};
  for (uint64_t seed = 1; seed <= 6; seed++) {
    uint64_t rng = seed * 7919;
    int nops = 400;
    wl_workload *wl = wl_workload_create(2, 1, roles);
    int p = wl_program_add(wl, "dag", 6, streams);
    double *end = calloc((size_t)nops, sizeof *end);
    double stream_end[6] = {0};
    double makespan = 0;
    for (int i = 0; i < nops; i++) {
      int st = (int)(st_splitmix64(&rng) % 6);
      double dur = 1e-6 * (double)(1 + st_splitmix64(&rng) % 50);
      uint32_t w[3];
      uint32_t nw = 0;
      if (i > 0) {
        int k = (int)(st_splitmix64(&rng) % 3);
        for (int j = 0; j < k; j++) {
          uint32_t t = (uint32_t)(st_splitmix64(&rng) % (uint64_t)i);
          int dup = 0;
          for (uint32_t q = 0; q < nw; q++)
            dup |= w[q] == t;
          if (!dup)
            w[nw++] = t;
        }
      }
      double start = stream_end[st];
      for (uint32_t q = 0; q < nw; q++)
        if (end[w[q]] > start)
          start = end[w[q]];
      end[i] = start + dur;
      stream_end[st] = end[i];
      if (end[i] > makespan)
        makespan = end[i];
      wl_op o = wl_op_compute(st, dur);
      wl_program_append(&wl->programs[p], &o, w, nw);
    }
    wl_rank_set(wl, 0, p);
    wl_rank_set(wl, 1, p);
    forked_result *f = sim_run_forked(wl, "node8", NULL);
    assert_non_null(f);
    if (f->rc)
      print_error("seed %llu: %s\n", (unsigned long long)seed, f->msg);
    assert_int_equal(f->rc, 0);
    check_rel(f->step_time_s, makespan, 1e-9, "DAG longest path");
    forked_result_free(f);
    free(end);
    wl_workload_destroy(wl);
  }
}

/* Closed-form collectives give the simulated answer.  Each case runs twice,
 * with the shortcut off and on: same step time, same collective times, and
 * the shortcut really taken where the layout isolates a communicator (TP=8
 * alone on a node's NVSwitch) and not where it does not (TP=4 beside an
 * intra-node DP group). */
static void test_fast__closed_form_collectives_match_simulation(void **state)
{
  (void)state;
  static const struct {
    const char *model, *layout, *cluster;
    int expect_fast;
  } cases[] = {
      {"llama3-8b", "tp=8,pp=2,mbs=1,gbs=8,sp=1", "node8:2", 1},
      {"llama3-8b", "tp=8,pp=2,mbs=1,gbs=8", "dgx-h100:2", 1},
      {"llama3-8b", "tp=4,pp=2,dp=2,mbs=1,gbs=8,sp=1", "node8:2", 0},
      {"mixtral-8x7b", "tp=2,pp=1,dp=4,ep=4,mbs=1,gbs=8,sp=1", "node8:1", -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_model m;
    wl_layout l;
    wl_workload *wl = NULL;
    st_err err;
    plat_cluster *cl;
    assert_int_equal(plat_cluster_load(cases[i].cluster, &cl, &err), 0);
    assert_int_equal(wl_model_load(cases[i].model, &m, &err), 0);
    if (wl_layout_parse(cases[i].layout, cl->num_gpus, &m, &l, &err) ||
        wl_generate(&m, &l, &wl, &err))
      print_error("%s\n", err.msg);
    assert_non_null(wl);
    forked_result *r[2];
    for (int fast = 0; fast < 2; fast++) {
      sim_options o;
      sim_options_init(&o);
      o.quiet = 1;
      o.fast_colls = fast;
      r[fast] = sim_run_forked(wl, cases[i].cluster, &o);
      assert_non_null(r[fast]);
      if (r[fast]->rc)
        print_error("%s\n", r[fast]->msg);
      assert_int_equal(r[fast]->rc, 0);
    }
    print_message("%s %s on %s: %.9f s, %llu of %zu collectives in closed form\n",
                  cases[i].model, cases[i].layout, cases[i].cluster, r[1]->step_time_s,
                  (unsigned long long)r[1]->fast_colls, r[1]->num_colls);
    assert_int_equal(r[0]->fast_colls, 0);
    if (cases[i].expect_fast == 1)
      assert_true(r[1]->fast_colls > 0);
    if (cases[i].expect_fast == 0)
      assert_int_equal(r[1]->fast_colls, 0);
    check_rel(r[1]->step_time_s, r[0]->step_time_s, 1e-9, "step time, closed form vs simulated");
    assert_int_equal(r[1]->num_colls, r[0]->num_colls);
    /* records come in a different order (closed-form ones when they start):
     * compare the sums of their durations */
    double d0 = 0, d1 = 0;
    for (size_t k = 0; k < r[0]->num_colls; k++) {
      d0 += r[0]->colls[k].end_s - r[0]->colls[k].start_s;
      d1 += r[1]->colls[k].end_s - r[1]->colls[k].start_s;
    }
    check_rel(d1, d0, 1e-9, "total collective time");
    for (int k = 0; k < r[0]->num_ranks; k++)
      check_rel(r[1]->ranks[k].finish_s, r[0]->ranks[k].finish_s, 1e-9, "rank finish");
    forked_result_free(r[0]);
    forked_result_free(r[1]);
    wl_workload_destroy(wl);
    wl_model_release(&m);
    plat_cluster_destroy(cl);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ring__matches_alpha_beta_flow),
      cmocka_unit_test(test_ring__matches_alpha_beta_step),
      cmocka_unit_test(test_ring__across_nodes_uses_nics),
      cmocka_unit_test(test_direct_and_chain__match_closed_forms),
      cmocka_unit_test(test_contention__disjoint_allreduces_do_not_interfere),
      cmocka_unit_test(test_contention__shared_link_halves_bandwidth),
      cmocka_unit_test(test_link_usage__bytes_per_communicator_add_up_to_the_link),
      cmocka_unit_test(test_link_usage__closed_form_collective_is_attributed),
      cmocka_unit_test(test_pipeline__two_stages_match_hand_critical_path),
      cmocka_unit_test(test_options__records_and_link_stats_do_not_change_the_replay),
      cmocka_unit_test(test_overlap__comm_hidden_under_compute_is_not_exposed),
      cmocka_unit_test(test_overlap__modelled_compute_under_transfer_is_stretched),
      cmocka_unit_test(test_waits__random_dags_match_longest_path),
      cmocka_unit_test(test_fast__closed_form_collectives_match_simulation),
      cmocka_unit_test(test_failure__unmatched_collective_names_comm_and_ranks),
      cmocka_unit_test(test_failure__mismatched_sizes_are_reported),
      cmocka_unit_test(test_setup__too_few_gpus_is_an_input_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
