/* test_sym.c — rank classes (sim/engine/sym.c): simulating one rank of each
 * symmetric class gives what simulating every rank gives.
 *
 * Each case runs three ways in forked children: the full simulation
 * (`--exact`: no closed forms, every rank), closed forms on every rank
 * (`--no-symmetry`), and the default (closed forms and rank classes).  The
 * default must agree with the second to 1e-9 in every per-rank number, every
 * link's bytes and the collectives' count and total time, and with the
 * first in step time; and it must say whether the reduction was used, as
 * each case expects (used where the checks hold, the full simulation where
 * they do not). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sys/stat.h>

#include "sim.h"
#include "sim_fork.h"
#include "traces.h"
#include "workload.h"

static int close_enough(double got, double want, double tol)
{
  double scale = fmax(fabs(want), 1e-12);
  return fabs(got - want) <= tol * scale;
}

static void check_rel(double got, double want, double tol, const char *what, const char *name)
{
  if (!close_enough(got, want, tol)) {
    print_error("%s: %s: got %.12g, want %.12g\n", name, what, got, want);
    fail();
  }
}

static forked_result *run(const wl_workload *wl, const char *cluster, int fast, int sym)
{
  sim_options o;
  sim_options_init(&o);
  o.quiet = 1;
  o.fast_colls = fast;
  o.symmetry = sym;
  forked_result *r = sim_run_forked(wl, cluster, &o);
  assert_non_null(r);
  if (r->rc)
    print_error("%s\n", r->msg);
  assert_int_equal(r->rc, 0);
  return r;
}

static int cmp_name(const void *a, const void *b) { return strcmp(a, b); }

/* links by name: bytes, bandwidth and peak utilisation must agree */
static void check_links(const forked_result *a, const forked_result *b, const char *name)
{
  assert_int_equal(a->num_links, b->num_links);
  for (size_t i = 0; i < a->num_links; i++) {
    size_t j;
    for (j = 0; j < b->num_links; j++)
      if (!strcmp(a->link_names[i], b->link_names[j]))
        break;
    if (j == b->num_links) {
      print_error("%s: link %s missing\n", name, a->link_names[i]);
      fail();
    }
    check_rel(a->link_bytes[i], b->link_bytes[j], 1e-9, a->link_names[i], name);
    /* the bandwidth reported is the link's, whatever the simulation ran it at */
    check_rel(a->link_bw[i], b->link_bw[j], 1e-12, a->link_names[i], name);
    check_rel(a->link_peak[i], b->link_peak[j], 1e-9, a->link_names[i], name);
  }
  /* usage: per link, the shares add up to the same bytes */
  double ua = 0, ub = 0;
  for (size_t i = 0; i < a->num_link_usage; i++)
    ua += a->link_usage[i].bytes;
  for (size_t i = 0; i < b->num_link_usage; i++)
    ub += b->link_usage[i].bytes;
  check_rel(ua, ub, 1e-9, "link usage bytes", name);
  assert_int_equal(a->num_link_usage, b->num_link_usage);
  (void)cmp_name;
}

static void check_same(const forked_result *got, const forked_result *want, const char *name)
{
  check_rel(got->step_time_s, want->step_time_s, 1e-9, "step time", name);
  assert_int_equal(got->num_ranks, want->num_ranks);
  for (int k = 0; k < got->num_ranks; k++) {
    const sim_rank_stats *x = &got->ranks[k], *y = &want->ranks[k];
    assert_int_equal(x->rank, y->rank);
    assert_int_equal(x->host, y->host);
    check_rel(x->finish_s, y->finish_s, 1e-9, "finish", name);
    check_rel(x->compute_s, y->compute_s, 1e-9, "compute", name);
    check_rel(x->exposed_comm_s, y->exposed_comm_s, 1e-9, "exposed comm", name);
    check_rel(x->overlapped_comm_s, y->overlapped_comm_s, 1e-9, "overlapped comm", name);
    check_rel(x->bubble_s, y->bubble_s, 1e-9, "bubble", name);
    check_rel(x->idle_s, y->idle_s, 1e-9, "idle", name);
    for (int i = 0; i < WL_PHASE_COUNT; i++)
      check_rel(x->phase_s[i], y->phase_s[i], 1e-9, "phase", name);
    for (int i = 0; i < WL_COMM_KIND_COUNT; i++)
      check_rel(x->comm_kind_s[i], y->comm_kind_s[i], 1e-9, "comm kind", name);
  }
}

static void check_colls(const forked_result *got, const forked_result *want, const char *name)
{
  assert_int_equal(got->num_colls, want->num_colls);
  double d0 = 0, d1 = 0, b0 = 0, b1 = 0;
  for (size_t k = 0; k < got->num_colls; k++) {
    d0 += want->colls[k].end_s - want->colls[k].start_s;
    d1 += got->colls[k].end_s - got->colls[k].start_s;
    b0 += want->colls[k].bytes;
    b1 += got->colls[k].bytes;
  }
  check_rel(d1, d0, 1e-9, "total collective time", name);
  check_rel(b1, b0, 1e-12, "total collective bytes", name);
  assert_int_equal(got->fast_colls, want->fast_colls);
}

static wl_workload *generate(const char *model, const char *layout, const char *cluster)
{
  wl_model m;
  wl_layout l;
  wl_workload *wl = NULL;
  st_err err;
  plat_cluster *cl;
  if (plat_cluster_load(cluster, &cl, &err))
    print_error("%s\n", err.msg);
  assert_non_null(cl);
  assert_int_equal(wl_model_load(model, &m, &err), 0);
  if (wl_layout_parse(layout, cl->num_gpus, &m, &l, &err) || wl_generate(&m, &l, &wl, &err))
    print_error("%s\n", err.msg);
  assert_non_null(wl);
  wl_model_release(&m);
  plat_cluster_destroy(cl);
  return wl;
}

/* run-ahead chains over all cases, and those a transfer interrupted: the
 * matrix must exercise both */
static unsigned long long chains_seen, cuts_seen;

/* expect: 1 the reduction applies, 0 it must not (the checks fail) */
static void check_case(const wl_workload *wl, const char *cluster, int expect, const char *name)
{
  forked_result *ex = run(wl, cluster, 0, 0);
  forked_result *full = run(wl, cluster, 1, 0);
  forked_result *red = run(wl, cluster, 1, 1);
  print_message("%-52s %.9f s, %d of %d ranks simulated, %llu vs %llu activities, %llu chains "
                "(%llu cut): %s\n",
                name, red->step_time_s, red->simulated_ranks, red->num_ranks,
                (unsigned long long)red->events, (unsigned long long)full->events,
                (unsigned long long)red->chains, (unsigned long long)red->chains_cut,
                red->reduction);
  chains_seen += red->chains;
  cuts_seen += red->chains_cut;
  assert_int_equal(full->simulated_ranks, full->num_ranks);
  assert_true(!strncmp(full->reduction, "none (", 6));
  if (expect) {
    assert_true(red->simulated_ranks < red->num_ranks);
    assert_true(!strncmp(red->reduction, "rank classes: ", 14));
    assert_true(red->events < full->events);
  } else {
    assert_int_equal(red->simulated_ranks, red->num_ranks);
    assert_true(!strncmp(red->reduction, "none (", 6));
  }
  /* against the flows simulated one by one: SimGrid ends each activity on its
   * time grid (surf/precision, 1e-9 s), so closed forms and simulated flows
   * may differ by that much per collective on the critical path */
  double grid = 1e-9 * (double)ex->num_colls;
  if (fabs(red->step_time_s - ex->step_time_s) > fmax(grid, 1e-9 * ex->step_time_s)) {
    print_error("%s: step time against --exact: %.12g vs %.12g\n", name, red->step_time_s,
                ex->step_time_s);
    fail();
  }
  check_same(red, full, name);
  check_colls(red, full, name);
  check_links(red, full, name);
  forked_result_free(ex);
  forked_result_free(full);
  forked_result_free(red);
}

#define DATA(f) ST_TEST_DATA_DIR "/" f

static void test_sym__generated_layouts_match_full_simulation(void **state)
{
  (void)state;
  static const struct {
    const char *model, *layout, *cluster;
    int expect;
  } cases[] = {
      /* tensor, pipeline and data parallelism on rail-optimised DGX fabrics */
      {"llama3-8b", "tp=8,pp=2,dp=2,mbs=1,gbs=8,sp=1", "dgx-h100:4", 1},
      /* Transformer Engine's TP overlap: ring-exchange chunks on a second
       * stream, all waiting on one norm (chained once it is done) */
      {"llama3-8b", "tp=8,pp=2,dp=2,mbs=1,gbs=8,sp=1,tp_overlap=1", "dgx-h100:4", 1},
      {"llama3-8b", "tp=8,pp=2,vpp=2,dp=2,mbs=1,gbs=8", "dgx-h100:4", 1},
      {"llama3-8b", "tp=8,pp=4,dp=1,mbs=1,gbs=8,schedule=gpipe", "dgx-h100:4", 1},
      {"llama3-8b", "tp=8,pp=1,dp=4,zero=1,mbs=1,gbs=8,sp=1", "dgx-h100:4", 1},
      {"llama3-8b", "tp=8,pp=1,dp=2,zero=3,mbs=1,gbs=4", "dgx-h100:2", 1},
      {"llama3-8b", "tp=8,cp=2,pp=1,dp=2,mbs=1,gbs=4,sp=1", "dgx-h100:4", 1},
      {"llama3-8b", "tp=8,pp=2,dp=2,mbs=1,gbs=8,recompute=full", "selene:4", 1},
      {"mixtral-8x7b", "tp=8,pp=1,dp=2,ep=2,mbs=1,gbs=4,sp=1", "dgx-h100:2", 1},
      /* one non-blocking switch; an oversubscribed rail fat-tree */
      {"llama3-8b", "tp=8,pp=2,mbs=1,gbs=8,sp=1", "node8:2", 1},
      {"llama3-8b", "tp=4,pp=1,dp=4,mbs=1,gbs=8", DATA("rail_oversub_2.json"), 1},
      /* three levels where radix/2 is not a multiple of the rails: spine
       * groups of whole scalable units keep the rails alike */
      {"llama3-8b", "tp=4,pp=2,dp=9,mbs=1,gbs=18", DATA("rail_whole_su.json"), 1},
      /* data parallelism inside a node crosses the TP groups' NVLinks: the
       * TP groups' collectives are simulated, member 0's flows only, on the
       * quotient fabric (sym_quot.c) */
      {"llama3-8b", "tp=4,pp=2,dp=2,mbs=1,gbs=8", "dgx-h100:2", 1},
      {"llama3-8b", "tp=4,pp=2,vpp=2,dp=2,mbs=1,gbs=8,zero=1", "dgx-h100:2", 1},
      {"mixtral-8x7b", "tp=2,ep=4,dp=8,mbs=1,gbs=8,sp=1", "dgx-h100:2", 1},
      /* orbits of links smaller than the groups: simulated at |orbit|/C of
       * their bandwidth (a NIC or leaf up links that two positions share) */
      {"llama3-8b", "tp=2,pp=2,dp=2,mbs=1,gbs=8", DATA("leaf_oversub_2.json"), 1},
      {"llama3-8b", "tp=2,pp=2,dp=2,mbs=1,gbs=8", DATA("one_nic.json"), 1},
      /* expert and data parallelism over the same eight GPUs: the expert
       * all-to-all (PXN relays) and the data-parallel ring are the group's own */
      {"mixtral-8x7b", "tp=1,ep=8,dp=8,mbs=1,gbs=8", "dgx-h100:1", 1},
      /* expert groups of half a data-parallel group, one node each: one
       * class-0 member, the node shift carries each onto the other; with
       * ZeRO-1's rings across the nodes and a pipeline, the twisted group
       * (node shifts reflect places) */
      {"mixtral-8x7b", "tp=1,ep=8,dp=16,mbs=1,gbs=16", "dgx-h100:2", 1},
      {"mixtral-8x7b", "tp=1,ep=8,pp=2,dp=16,zero=1,mbs=1,gbs=32", "dgx-h100:4", 1},
      /* expert groups of two nodes in a four-node data-parallel group: no
       * node shift of either group keeps the other, but the nodes of the
       * expert data-parallel pairs (two nodes, one in each expert group)
       * are groups whose translations keep both: two class-0 members in
       * each expert group, four in the data-parallel group, each receiving
       * the images of the others' sends; with a pipeline, ZeRO-1 and uneven
       * stages too */
      {"deepseek-v3", "tp=1,ep=16,dp=32,mbs=1,gbs=32", "dgx-h100:4", 1},
      {"deepseek-v3", "tp=1,ep=16,pp=2,dp=32,zero=1,mbs=1,gbs=64,first_stage_layers=29",
       "dgx-h100:8", 1},
      {"deepseek-v3", "tp=1,ep=16,dp=64,zero=1,mbs=1,gbs=64", "dgx-h100:8", 1},
      /* tensor parallelism of 2 with context parallelism of 4 in each
       * node, and of 4 with data-parallel pairs: the places' one cycle
       * breaks the TP groups, the places as two digits (the place inside the
       * TP group, the TP group inside the node) keep them, the node's
       * groups of eight */
      {"llama3-8b", "tp=2,cp=4,pp=2,dp=2,vpp=2,mbs=1,gbs=8,sp=1,zero=2", "dgx-h100:4", 1},
      {"llama3-8b", "tp=4,pp=2,dp=4,vpp=2,mbs=1,gbs=16,sp=1,zero=1,tp_overlap=1", "dgx-h100:4", 1},
      /* links every position's traffic crosses alike, simulated at 1/C of
       * their capacity: a leaf holding whole nodes (its up links one
       * adaptive-routing group), oversubscribed; one NIC for a node */
      {"llama3-8b", "tp=4,pp=1,dp=2,mbs=1,gbs=4", DATA("leaf_oversub_2.json"), 1},
      {"llama3-8b", "tp=4,pp=1,dp=2,mbs=1,gbs=4", DATA("one_nic.json"), 1},
      /* the DGX-1: two GPUs share each NIC, two TP positions' traffic meets
       * there and not the others' (no TP classes); the data-parallel pairs
       * across the two nodes are classes on the quotient fabric (node shift);
       * on the torus the checks find the groups' links their own and the
       * positions' traffic apart */
      {"llama3-8b", "tp=8,pp=1,dp=2,mbs=1,gbs=4", "dgx-v100:2", 1},
      {"llama3-8b", "tp=4,pp=1,dp=16,mbs=1,gbs=16", "tpu-v4:16", 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_workload *wl = generate(cases[i].model, cases[i].layout, cases[i].cluster);
    char name[160];
    snprintf(name, sizeof name, "%s %s on %s", cases[i].model, cases[i].layout,
             strrchr(cases[i].cluster, '/') ? strrchr(cases[i].cluster, '/') + 1 : cases[i].cluster);
    check_case(wl, cases[i].cluster, cases[i].expect, name);
    wl_workload_destroy(wl);
  }
  print_message("%llu run-ahead chains, %llu of them interrupted\n", chains_seen, cuts_seen);
  assert_true(chains_seen > 0);
  assert_true(cuts_seen > 0);
}

/* Give rank `slow` a program of its own whose compute takes `f` times as
 * long on the cluster's device: a slow GPU (f = 0: an unchanged copy). */
static void slow_down(wl_workload *wl, int slow, double f, const char *cluster)
{
  plat_cluster *cl;
  st_err err;
  assert_int_equal(plat_cluster_load(cluster, &cl, &err), 0);
  const wl_program *p = &wl->programs[wl->rank_program[slow]];
  int np = wl_program_add(wl, "slow", p->num_streams, (const char *const *)p->stream_names);
  assert_true(np >= 0);
  p = &wl->programs[wl->rank_program[slow]]; /* the array may have moved */
  wl_program *q = &wl->programs[np];
  for (size_t i = 0; i < p->num_ops; i++) {
    wl_op o = p->ops[i];
    if (o.kind == WL_OP_COMPUTE && f > 0)
      o.duration_s = f * plat_compute_time(&cl->device, &o);
    assert_int_equal(o.flags & WL_OPF_SPLITS, 0);
    o.name = wl_program_string(q, wl_op_name(p, &p->ops[i]));
    assert_true(wl_program_append(q, &o, &p->waits[p->ops[i].wait_first], p->ops[i].wait_count) >= 0);
  }
  wl_rank_set(wl, slow, np);
  plat_cluster_destroy(cl);
}

static void test_sym__a_slow_rank_falls_back_to_full_simulation(void **state)
{
  (void)state;
  wl_workload *wl = generate("llama3-8b", "tp=8,pp=2,dp=2,mbs=1,gbs=8,sp=1", "dgx-h100:4");
  slow_down(wl, 13, 1.3, "dgx-h100:4");
  forked_result *red = run(wl, "dgx-h100:4", 1, 1);
  assert_int_equal(red->simulated_ranks, red->num_ranks);
  if (!strstr(red->reduction, "rank 13 runs program")) {
    print_error("reduction: %s\n", red->reduction);
    fail();
  }
  forked_result_free(red);
  check_case(wl, "dgx-h100:4", 0, "llama3-8b with rank 13 slowed 1.3x");
  wl_workload_destroy(wl);
}

/* An imported trace gives every rank a program of its own: programs that
 * are copies (same ops, waits and sizes) count as one. */
static void test_sym__identical_programs_count_as_one(void **state)
{
  (void)state;
  wl_workload *wl = generate("llama3-8b", "tp=8,pp=2,dp=2,mbs=1,gbs=8,sp=1", "dgx-h100:4");
  slow_down(wl, 13, 0, "dgx-h100:4");
  slow_down(wl, 21, 0, "dgx-h100:4");
  check_case(wl, "dgx-h100:4", 1, "llama3-8b with ranks 13 and 21 on copied programs");
  wl_workload_destroy(wl);
}

/* An imported trace: ASTRA-sim's transformer (Chakra, involved_dim over 8 x
 * 8 ranks, every rank a copy of rank 0's file) on the network it was
 * written for, with its TP groups on NVSwitch. */
static void test_sym__imported_chakra_trace_matches_full_simulation(void **state)
{
  (void)state;
  struct stat sb;
  const char *f = ST_SHARED_DIR "/peer-astra/transformer_L10.0.et";
  if (stat(f, &sb)) {
    print_message("%s not found: skipped\n", f);
    skip();
  }
  tr_options o;
  tr_options_init(&o);
  o.num_gpus = 64;
  st_err err;
  assert_int_equal(tr_dims_parse("8,8", &o, &err), 0);
  wl_workload *wl = NULL;
  tr_import_stats st;
  memset(&st, 0, sizeof st);
  if (tr_import("chakra:" ST_SHARED_DIR "/peer-astra/transformer_L10.0.et", &o, &wl, &st, &err))
    print_error("%s\n", err.msg);
  assert_non_null(wl);
  check_case(wl, ST_SOURCE_DIR "/bench/peer-astra/astra_2d_switch.json", 1,
             "peer-astra transformer_L10, 64 ranks");
  tr_import_stats_release(&st);
  wl_workload_destroy(wl);
}

/* A chain interrupted after pieces with markers between them must count
 * those markers in the stream's progress (it did not: a later wait was
 * never met and the replay deadlocked).  The 177B Megatron-Core layout of
 * the validation set on 4 replicas, interleaved, with every overlap on, at
 * gemm_eff 1.0 (where it deadlocked): running ahead gives what stepping
 * through gives. */
static void gemm_eff_one(plat_cluster *cl, const void *u)
{
  (void)u;
  plat_compute_params q = *plat_compute_params_for(&cl->device);
  q.gemm_eff = 1.0;
  q.attn_published = 0; /* attention at attn_eff, as when the deadlock was found: the
                           published Hopper rates leave no transfer starting mid-chain */
  plat_compute_params_override(&q);
}

static void test_sym__interrupted_chain_counts_its_markers(void **state)
{
  (void)state;
  static const char model[] =
      "{\"name\": \"gpt-177b\", \"layers\": 96, \"hidden\": 12288, \"heads\": 96, "
      "\"kv_heads\": 96, \"ffn_hidden\": 49152, \"ffn_act\": \"gelu\", \"vocab\": 131072, "
      "\"seq_len\": 4096, \"tie_embeddings\": false}";
  wl_model m;
  wl_layout l;
  wl_workload *wl = NULL;
  st_err err;
  assert_int_equal(wl_model_parse(model, "gpt-177b", &m, &err), 0);
  if (wl_layout_parse("tp=8,pp=6,dp=4,mbs=1,gbs=96,vpp=2,schedule=interleaved,sp=1,zero=1,"
                      "overlap_grad_reduce=1,overlap_param_gather=1,tp_overlap=1",
                      192, &m, &l, &err) ||
      wl_generate(&m, &l, &wl, &err))
    print_error("%s\n", err.msg);
  assert_non_null(wl);
  forked_result *r[2];
  for (int ahead = 0; ahead < 2; ahead++) {
    sim_options o;
    sim_options_init(&o);
    o.quiet = 1;
    o.run_ahead = ahead;
    r[ahead] = sim_run_forked_tweaked(wl, "dgx-h100:24", &o, gemm_eff_one, NULL);
    assert_non_null(r[ahead]);
    if (r[ahead]->rc)
      print_error("%s\n", r[ahead]->msg);
    assert_int_equal(r[ahead]->rc, 0);
  }
  print_message("%.9f s, %llu chains (%llu cut)\n", r[1]->step_time_s,
                (unsigned long long)r[1]->chains, (unsigned long long)r[1]->chains_cut);
  assert_true(r[1]->chains_cut > 0);
  /* an interrupted piece resumes at SimGrid's clock, which keeps to a grid
   * of 1e-9 s (surf/precision) where the plan is exact arithmetic: up to
   * that much per interruption */
  double grid = 1e-9 * (double)(r[1]->chains_cut + 1);
  check_rel(r[1]->step_time_s, r[0]->step_time_s, 1e-9, "step time", "177b");
  for (int k = 0; k < r[0]->num_ranks; k++) {
    const sim_rank_stats *x = &r[1]->ranks[k], *y = &r[0]->ranks[k];
    const double got[] = {x->finish_s, x->compute_s, x->exposed_comm_s, x->overlapped_comm_s,
                          x->bubble_s, x->idle_s};
    const double want[] = {y->finish_s, y->compute_s, y->exposed_comm_s, y->overlapped_comm_s,
                           y->bubble_s, y->idle_s};
    for (int i = 0; i < 6; i++)
      if (fabs(got[i] - want[i]) > grid + 1e-9 * fabs(want[i])) {
        print_error("177b rank %d, field %d: %.12g against %.12g\n", k, i, got[i], want[i]);
        fail();
      }
  }
  check_colls(r[1], r[0], "177b layout, chains against none");
  forked_result_free(r[0]);
  forked_result_free(r[1]);
  wl_workload_destroy(wl);
  wl_model_release(&m);
}

/* A slow rank in one class slows everyone through the TP collectives: the
 * step is longer than with no slow rank (the fallback really simulates it). */
static void test_sym__slow_rank_slows_the_step(void **state)
{
  (void)state;
  wl_workload *a = generate("llama3-8b", "tp=8,pp=1,dp=2,mbs=1,gbs=4,sp=1", "dgx-h100:2");
  wl_workload *b = generate("llama3-8b", "tp=8,pp=1,dp=2,mbs=1,gbs=4,sp=1", "dgx-h100:2");
  slow_down(b, 5, 1.3, "dgx-h100:2");
  forked_result *ra = run(a, "dgx-h100:2", 1, 1), *rb = run(b, "dgx-h100:2", 1, 1);
  assert_true(ra->simulated_ranks < ra->num_ranks);
  assert_int_equal(rb->simulated_ranks, rb->num_ranks);
  assert_true(rb->step_time_s > ra->step_time_s * 1.05);
  forked_result_free(ra);
  forked_result_free(rb);
  wl_workload_destroy(a);
  wl_workload_destroy(b);
}

/* The first role whose groups partition the ranks in closed form need not
 * be the one the symmetry follows.  Eight GPUs of one fully meshed node
 * (every pair its own link): role 'a' pairs {0,1} {2,3} {4,5} {6,7}, role
 * 'b' pairs {0,2} {1,3} {4,6} {5,7}; even ranks compute 1 ms after their two
 * all-reduces, odd ranks 2 ms.  Under 'a' the members of a pair run
 * different programs (rank 1's is not rank 0's); under 'b' they run the
 * same, and 'a's pairs are each other's images ({2,3} of {0,1}), so the
 * classes follow 'b': four of eight ranks simulated, the same answers. */
static void test_sym__a_later_role_defines_the_classes(void **state)
{
  (void)state;
  const char *roles[] = {"a", "b"};
  const char *streams[] = {"main"};
  wl_workload *wl = wl_workload_create(8, 2, roles);
  int prog[2];
  for (int k = 0; k < 2; k++) {
    prog[k] = wl_program_add(wl, k ? "odd" : "even", 1, streams);
    wl_op ar = wl_op_coll(0, WL_COLL_ALLREDUCE, 0, 1 << 20);
    wl_program_append(&wl->programs[prog[k]], &ar, NULL, 0);
    wl_op br = wl_op_coll(0, WL_COLL_ALLREDUCE, 1, 1 << 20);
    wl_program_append(&wl->programs[prog[k]], &br, NULL, 0);
    wl_op c = wl_op_compute(0, k ? 2e-3 : 1e-3);
    wl_program_append(&wl->programs[prog[k]], &c, NULL, 0);
  }
  for (int g = 0; g < 4; g++) {
    int32_t pa[2] = {2 * g, 2 * g + 1};
    int32_t pb[2] = {(g / 2) * 4 + g % 2, (g / 2) * 4 + g % 2 + 2};
    char name[16];
    snprintf(name, sizeof name, "a%d", g);
    int ca = wl_comm_add(wl, name, WL_COMM_OTHER, 2, pa);
    snprintf(name, sizeof name, "b%d", g);
    int cb = wl_comm_add(wl, name, WL_COMM_OTHER, 2, pb);
    for (int i = 0; i < 2; i++) {
      wl_rank_set_comm(wl, pa[i], 0, ca);
      wl_rank_set_comm(wl, pb[i], 1, cb);
    }
  }
  for (int r = 0; r < 8; r++)
    wl_rank_set(wl, r, prog[r % 2]);
  st_err err;
  assert_int_equal(wl_workload_check(wl, &err), 0);
  forked_result *red = run(wl, "mi300x:1", 1, 1);
  if (strcmp(red->reduction, "rank classes: 2 positions in the 'b' groups, one simulated, 4 of 8 ranks")) {
    print_error("reduction: %s\n", red->reduction);
    fail();
  }
  forked_result_free(red);
  check_case(wl, "mi300x:1", 1, "two pairings of 8 GPUs, classes by the second");
  wl_workload_destroy(wl);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sym__generated_layouts_match_full_simulation),
      cmocka_unit_test(test_sym__a_slow_rank_falls_back_to_full_simulation),
      cmocka_unit_test(test_sym__identical_programs_count_as_one),
      cmocka_unit_test(test_sym__imported_chakra_trace_matches_full_simulation),
      cmocka_unit_test(test_sym__interrupted_chain_counts_its_markers),
      cmocka_unit_test(test_sym__slow_rank_slows_the_step),
      cmocka_unit_test(test_sym__a_later_role_defines_the_classes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
