/* test_coll.c — collective algorithms, protocols and tuner (sim/coll/):
 * closed forms per algorithm, flow vs step fidelity, per-link bytes, shared
 * rails, and the comparison with published nccl-tests measurements. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"
#include "sim_fork.h"

#define MiB (1024.0 * 1024.0)
#define GiB (1024.0 * MiB)

/* ---- helpers ---------------------------------------------------------------- */

/* ranks[0..n-1] in one communicator, each doing the sizes one after another. */
static wl_workload *coll_workload(int num_ranks, int n, const int32_t *ranks, int op, int nsizes,
                                  const double *sizes)
{
  const char *roles[] = {"world"};
  const char *streams[] = {"comm"};
  wl_workload *wl = wl_workload_create(num_ranks, 1, roles);
  int p = wl_program_add(wl, "p", 1, streams);
  int idle = wl_program_add(wl, "idle", 1, streams);
  for (int k = 0; k < nsizes; k++) {
    wl_op o = wl_op_coll(0, op, 0, sizes[k]);
    wl_program_append(&wl->programs[p], &o, NULL, 0);
  }
  wl_op z = wl_op_compute(0, 0);
  wl_program_append(&wl->programs[idle], &z, NULL, 0);
  int c = wl_comm_add(wl, "world", WL_COMM_WORLD, n, ranks);
  for (int r = 0; r < num_ranks; r++)
    wl_rank_set(wl, r, idle);
  for (int i = 0; i < n; i++) {
    wl_rank_set(wl, ranks[i], p);
    wl_rank_set_comm(wl, ranks[i], 0, c);
  }
  return wl;
}

static wl_workload *first_n(int num_ranks, int n, int op, int nsizes, const double *sizes)
{
  int32_t *r = malloc((size_t)n * sizeof *r);
  for (int i = 0; i < n; i++)
    r[i] = i;
  wl_workload *wl = coll_workload(num_ranks, n, r, op, nsizes, sizes);
  free(r);
  return wl;
}

static void check_rel(double got, double want, double tol, const char *what)
{
  double rel = fabs(got - want) / want;
  if (rel > tol) {
    print_error("%s: got %.9g, want %.9g (rel. error %.3g > %.3g)\n", what, got, want, rel, tol);
    fail();
  }
}

static double dur(const forked_result *f, size_t i) { return f->colls[i].end_s - f->colls[i].start_s; }

/* Stand-ins for the DGX presets, built from node8 (H100, 450 GB/s NVSwitch,
 * 8 x 400 Gb/s NICs): the parameters the collective model reads. */
typedef struct standin {
  const char *device;
  double intra_Bps, nic_Bps;
  int nvls, sharp;
} standin;

static const standin SI_A100 = {"A100-SXM4-80GB", 300e9, 25e9, 0, 0};
static const standin SI_H100 = {"H100-SXM", 450e9, 50e9, 1, 0};
static const standin SI_H100_SHARP = {"H100-SXM", 450e9, 50e9, 1, 1};
static const standin SI_H200 = {"H200", 450e9, 50e9, 1, 0};
static const standin SI_NODE8_SHARP = {"H100-SXM", 450e9, 50e9, 0, 1};

static void tweak(plat_cluster *cl, const void *u)
{
  const standin *s = u;
  snprintf(cl->device.name, sizeof cl->device.name, "%s", s->device);
  plat_device d; /* the stand-in device's architecture: the collective tables' row */
  if (!plat_device_find(s->device, &d, NULL))
    cl->device.arch = d.arch;
  cl->intra_Bps = s->intra_Bps;
  cl->nic_Bps = s->nic_Bps;
  cl->nvls = s->nvls;
  cl->in_network_reduction = s->sharp;
}

static forked_result *run(const wl_workload *wl, const char *cluster, const standin *si,
                          const sim_options *opt)
{
  forked_result *f = sim_run_forked_tweaked(wl, cluster, opt, si ? tweak : NULL, si);
  assert_non_null(f);
  if (f->rc)
    print_error("%s\n", f->msg);
  assert_int_equal(f->rc, 0);
  return f;
}

/* The first collective's time of wl on cluster (options o, or NULL), its
 * algorithm checked when algo >= 0; wl is destroyed. */
static double first_time(wl_workload *wl, const char *cluster, const sim_options *o, int algo)
{
  forked_result *f = run(wl, cluster, NULL, o);
  if (algo >= 0)
    assert_int_equal(f->colls[0].algo, algo);
  double t = dur(f, 0);
  forked_result_free(f);
  wl_workload_destroy(wl);
  return t;
}

static sim_options opts(int algo, int proto, int fidelity)
{
  sim_options o;
  sim_options_init(&o);
  o.coll_algo = algo;
  o.coll_proto = proto;
  o.fidelity = fidelity;
  return o;
}

/* ---- closed forms ---------------------------------------------------------- */

/* NCCL's ring Simple on one node: latency 8.4 + 2(n-1) x 3.4 us (tuning.cc),
 * bandwidth 0.824 x 450 GB/s (20.6 of 25 GB/s per NVLink4 lane). */
static void test_ring__matches_nccl_model_on_one_node(void **state)
{
  (void)state;
  double sizes[] = {64 * MiB, 1 * GiB};
  wl_workload *wl = first_n(8, 8, WL_COLL_ALLREDUCE, 2, sizes);
  sim_options o = opts(SIM_ALGO_RING, SIM_PROTO_SIMPLE, SIM_FID_FLOW);
  forked_result *f = run(wl, "node8", NULL, &o);
  for (int i = 0; i < 2; i++) {
    double want = (8.4 + 14 * 3.4) * 1e-6 + 2.0 * 7 / 8 * sizes[i] / (450e9 * 0.824);
    check_rel(dur(f, (size_t)i), want, 1e-6, "ring simple");
    assert_int_equal(f->colls[i].algo, SIM_ALGO_RING);
    assert_int_equal(f->colls[i].proto, SIM_PROTO_SIMPLE);
  }
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* LL: half of Simple's bandwidth, capped at 141 GB/s busBw on Hopper, latency
 * 6.6 + 14 x 0.6 us; LL128: 0.92 of Simple, 14 + 14 x 1.9 us. */
static void test_protocols__match_nccl_model(void **state)
{
  (void)state;
  double S = 4 * MiB;
  wl_workload *wl = first_n(8, 8, WL_COLL_ALLREDUCE, 1, &S);
  sim_options o = opts(SIM_ALGO_RING, SIM_PROTO_LL, SIM_FID_FLOW);
  forked_result *f = run(wl, "node8", NULL, &o);
  check_rel(dur(f, 0), (6.6 + 14 * 0.6) * 1e-6 + 1.75 * S / 141e9, 1e-6, "ring LL");
  forked_result_free(f);
  o = opts(SIM_ALGO_RING, SIM_PROTO_LL128, SIM_FID_FLOW);
  f = run(wl, "node8", NULL, &o);
  check_rel(dur(f, 0), (14 + 14 * 1.9) * 1e-6 + 1.75 * S / (450e9 * 0.824 * 0.92), 1e-6,
            "ring LL128");
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* Ring Simple on Ampere pays the fitted pipeline fill on top of NCCL's model:
 * 0.29 of the bandwidth term below one loop (16 MiB a member, 128 MiB on 8
 * GPUs), 0.29 of one loop's worth above; Hopper has none. */
static void test_ring__ampere_simple_fill(void **state)
{
  (void)state;
  double sizes[2] = {32 * MiB, 1 * GiB};
  wl_workload *wl = first_n(8, 8, WL_COLL_ALLREDUCE, 2, sizes);
  sim_options o = opts(SIM_ALGO_RING, SIM_PROTO_SIMPLE, SIM_FID_FLOW);
  forked_result *f = run(wl, "node8", &SI_A100, &o);
  double lat = (8.4 + 14 * 3.4) * 1e-6, B = 300e9 * 0.80;
  for (int i = 0; i < 2; i++) {
    double bw = 1.75 * sizes[i] / B;
    double fill = 0.29 * bw * fmin(1.0, 128 * MiB / sizes[i]);
    check_rel(dur(f, (size_t)i), lat + bw + fill, 1e-6, "A100 ring simple + fill");
  }
  forked_result_free(f);
  f = run(wl, "node8", &SI_H100, &o);
  check_rel(dur(f, 1), lat + 1.75 * sizes[1] / (450e9 * 0.824), 1e-6, "H100 ring simple, no fill");
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* NVLS: each GPU's NVLink carries (n+1)/n S each way at 0.824 x 0.85 of line
 * rate; latency 25 us (NCCL) + 65 us pipeline fill (fitted). */
static void test_nvls__matches_link_loads(void **state)
{
  (void)state;
  double S = 1 * GiB;
  wl_workload *wl = first_n(8, 8, WL_COLL_ALLREDUCE, 1, &S);
  sim_options o = opts(SIM_ALGO_NVLS, -1, SIM_FID_FLOW);
  forked_result *f = run(wl, "node8", &SI_H100, &o);
  assert_int_equal(f->colls[0].algo, SIM_ALGO_NVLS);
  check_rel(dur(f, 0), 90e-6 + 9.0 / 8 * S / (450e9 * 0.824 * 0.85), 1e-6, "nvls");
  /* busbw at 8 GPUs = 2(n-1)/(n+1) x 315 GB/s = 490 GB/s, above the 450 GB/s line rate */
  assert_true(f->colls[0].busbw_GBps > 450);
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* Double binary tree over two nodes, 8 channels: the chains inside the node
 * carry 2 S (m-1)/m per GPU on NVLink; each NIC S/8 each way. */
static void test_tree__matches_link_loads(void **state)
{
  (void)state;
  double S = 1 * GiB;
  wl_workload *wl = first_n(16, 16, WL_COLL_ALLREDUCE, 1, &S);
  sim_options o = opts(SIM_ALGO_TREE, SIM_PROTO_SIMPLE, SIM_FID_FLOW);
  forked_result *f = run(wl, "node8:2", NULL, &o);
  assert_int_equal(f->colls[0].channels, 8);
  double lat = (8.4 + 2 * (7 * 4.0 + 1 * 14)) * 1e-6;
  /* each GPU is inside 6 of the 8 chains (D to both neighbours) and an end
   * of 2 (D to one): 14 D = 2 S (m-1)/m out of its NVLink */
  double t_nvl = 2.0 * S * 7 / 8 / (450e9 * 0.824);
  double t_nic = S / 8 / (50e9 * 0.94);
  /* every GPU heads one channel's tree, so its flows start after lat minus the
   * NIC route latency (2 us); its NVLink flows pay 1 us: they end 1 us early */
  check_rel(dur(f, 0), lat - 1e-6 + fmax(t_nvl, t_nic), 1e-6, "tree");
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* All-to-all on one node: 7 blocks of S/8 out of each GPU at 0.824 x 450 GB/s. */
static void test_direct__matches_closed_form(void **state)
{
  (void)state;
  double S = 256 * MiB;
  wl_workload *wl = first_n(8, 8, WL_COLL_ALLTOALL, 1, &S);
  forked_result *f = run(wl, "node8", NULL, NULL);
  assert_int_equal(f->colls[0].algo, SIM_ALGO_DIRECT);
  check_rel(dur(f, 0), (8.4 + 3.4) * 1e-6 + 7.0 / 8 * S / (450e9 * 0.824), 1e-6, "alltoall");
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* Shift (one ring-exchange step): every GPU sends S to the next at its route's
 * line rate after the route's latency, no NCCL terms (node8: NVLink route
 * 2 x 0.5 us at 450 GB/s; across its two nodes, NIC route 2 x 1 us at
 * 50 GB/s, which members 7 -> 8 and 15 -> 0 take).  The closed form and the
 * simulated flows give the same time. */
static void test_shift__moves_at_line_rate(void **state)
{
  (void)state;
  double S = 256 * MiB;
  for (int fast = 0; fast < 2; fast++) {
    sim_options o;
    sim_options_init(&o);
    o.fast_colls = fast;
    wl_workload *one = first_n(8, 8, WL_COLL_SHIFT, 1, &S);
    forked_result *f = run(one, "node8", NULL, &o);
    assert_int_equal(f->colls[0].algo, SIM_ALGO_DIRECT);
    check_rel(dur(f, 0), 1e-6 + S / 450e9, 1e-9, "shift on one node");
    forked_result_free(f);
    wl_workload_destroy(one);
    wl_workload *two = first_n(16, 16, WL_COLL_SHIFT, 1, &S);
    f = run(two, "node8:2", NULL, &o);
    check_rel(dur(f, 0), 2e-6 + S / 50e9, 1e-9, "shift across two nodes");
    forked_result_free(f);
    wl_workload_destroy(two);
  }
}

/* ---- tuner --------------------------------------------------------------- */

/* Small messages take LL, medium LL128, large Simple (or NVLS where there is
 * NVLink SHARP), as NCCL's tuner does on one H100 node. */
static void test_tuner__picks_protocol_by_size(void **state)
{
  (void)state;
  double sizes[] = {64 * 1024, 8 * MiB, 4 * GiB};
  wl_workload *wl = first_n(8, 8, WL_COLL_ALLREDUCE, 3, sizes);
  forked_result *f = run(wl, "node8", NULL, NULL);
  assert_int_equal(f->colls[0].proto, SIM_PROTO_LL);
  assert_int_equal(f->colls[1].proto, SIM_PROTO_LL128);
  assert_int_equal(f->colls[2].proto, SIM_PROTO_SIMPLE);
  assert_int_equal(f->colls[2].algo, SIM_ALGO_RING);
  forked_result_free(f);
  f = run(wl, "node8", &SI_H100, NULL);
  assert_int_equal(f->colls[2].algo, SIM_ALGO_NVLS);
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* ---- fidelity ---------------------------------------------------------------- */

typedef struct fid_case {
  int algo, op, gpus;
  const char *cluster;
  const standin *si;
} fid_case;

/* Step and flow fidelity agree within 1% from 64 MiB on every algorithm. */
static void test_fidelity__step_matches_flow_from_64MiB(void **state)
{
  (void)state;
  static const standin nvls_sharp = {"H100-SXM", 450e9, 50e9, 1, 1};
  const fid_case cases[] = {
      {SIM_ALGO_RING, WL_COLL_ALLREDUCE, 16, "node8:2", NULL},
      {SIM_ALGO_RING, WL_COLL_ALLGATHER, 16, "node8:2", NULL},
      {SIM_ALGO_RING, WL_COLL_REDUCESCATTER, 8, "node8", NULL},
      {SIM_ALGO_TREE, WL_COLL_ALLREDUCE, 32, "node8:4", NULL},
      {SIM_ALGO_NVLS, WL_COLL_ALLREDUCE, 8, "node8", &SI_H100},
      {SIM_ALGO_NVLS, WL_COLL_ALLREDUCE, 16, "node8:2", &nvls_sharp},
      {SIM_ALGO_NVLS_TREE, WL_COLL_ALLREDUCE, 32, "node8:4", &SI_H100},
      {SIM_ALGO_COLLNET, WL_COLL_ALLREDUCE, 16, "node8:2", &SI_NODE8_SHARP},
      {SIM_ALGO_HIER, WL_COLL_ALLREDUCE, 16, "node8:2", NULL},
      {SIM_ALGO_TORUS, WL_COLL_ALLREDUCE, 8, "node8", NULL},
      {SIM_ALGO_DIRECT, WL_COLL_ALLTOALL, 16, "node8:2", NULL},
      {SIM_ALGO_CHAIN, WL_COLL_BROADCAST, 8, "node8", NULL},
  };
  double sizes[] = {64 * MiB, 512 * MiB};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const fid_case *c = &cases[i];
    wl_workload *wl = first_n(c->gpus, c->gpus, c->op, 2, sizes);
    sim_options of = opts(c->algo, -1, SIM_FID_FLOW), os = opts(c->algo, -1, SIM_FID_STEP);
    forked_result *ff = run(wl, c->cluster, c->si, &of), *fs = run(wl, c->cluster, c->si, &os);
    for (size_t k = 0; k < 2; k++) {
      char what[128];
      snprintf(what, sizeof what, "%s %s on %d GPUs, %.0f MiB: step vs flow",
               sim_coll_algo_name(c->algo), wl_coll_name(c->op), c->gpus, sizes[k] / MiB);
      assert_int_equal(ff->colls[k].algo, c->algo);
      assert_int_equal(fs->colls[k].algo, c->algo);
      check_rel(dur(fs, k), dur(ff, k), 0.01, what);
    }
    forked_result_free(ff);
    forked_result_free(fs);
    wl_workload_destroy(wl);
  }
}

/* ---- links ------------------------------------------------------------------- */

static double link_bytes(const forked_result *f, const char *name)
{
  for (size_t i = 0; i < f->num_links; i++)
    if (!strcmp(f->link_names[i], name))
      return f->link_bytes[i];
  return 0;
}

/* A ring over two nodes drives all 8 NICs of each node, each way, equally:
 * one channel per NIC, each carrying 2(n-1)/n S / 8 / 0.94 wire bytes. */
static void test_ring__two_nodes_drive_every_nic(void **state)
{
  (void)state;
  double S = 1 * GiB;
  wl_workload *wl = first_n(16, 16, WL_COLL_ALLREDUCE, 1, &S);
  sim_options o = opts(SIM_ALGO_RING, SIM_PROTO_SIMPLE, SIM_FID_FLOW);
  forked_result *f = run(wl, "node8:2", NULL, &o);
  double want = 2.0 * 15 / 16 * S / 8 / 0.94;
  for (int g = 0; g < 16; g++)
    for (int up = 0; up < 2; up++) {
      char name[64];
      /* platform link names: nic-<node>-<local GPU>-up|down */
      snprintf(name, sizeof name, "nic-%d-%d-%s", g / 8, g % 8, up ? "up" : "down");
      check_rel(link_bytes(f, name), want, 1e-3, name);
    }
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* Two communicators at once, each a ring over 2 nodes on two streams.  Rails
 * disjoint (local GPUs 0-3 vs 4-7): no slowdown.  Same rails (both on all 16
 * GPUs): every NIC shared, both take twice as long. */
static void shared_rails(int disjoint, double *t_alone, double *t_both)
{
  const char *roles[] = {"x", "y"};
  const char *streams[] = {"sx", "sy"};
  double S = 1 * GiB;
  wl_workload *wl = wl_workload_create(16, 2, roles);
  int p = wl_program_add(wl, "p", 2, streams);
  int32_t xa[16], ya[16];
  int nx = 0, ny = 0;
  for (int g = 0; g < 16; g++) {
    if (!disjoint || g % 8 < 4)
      xa[nx++] = g;
    if (!disjoint || g % 8 >= 4)
      ya[ny++] = g;
  }
  int cx = wl_comm_add(wl, "x", WL_COMM_DP, nx, xa), cy = wl_comm_add(wl, "y", WL_COMM_DP, ny, ya);
  int q = wl_program_add(wl, "q", 2, streams), r = wl_program_add(wl, "r", 2, streams);
  wl_op ox = wl_op_coll(0, WL_COLL_ALLREDUCE, 0, S), oy = wl_op_coll(1, WL_COLL_ALLREDUCE, 1, S);
  wl_program_append(&wl->programs[p], &ox, NULL, 0);
  wl_program_append(&wl->programs[p], &oy, NULL, 0);
  wl_program_append(&wl->programs[q], &ox, NULL, 0);
  wl_program_append(&wl->programs[r], &oy, NULL, 0);
  for (int g = 0; g < 16; g++) {
    int inx = !disjoint || g % 8 < 4, iny = !disjoint || g % 8 >= 4;
    wl_rank_set(wl, g, inx && iny ? p : inx ? q : r);
    if (inx)
      wl_rank_set_comm(wl, g, 0, cx);
    if (iny)
      wl_rank_set_comm(wl, g, 1, cy);
  }
  sim_options o = opts(SIM_ALGO_RING, SIM_PROTO_SIMPLE, SIM_FID_FLOW);
  forked_result *f = run(wl, "node8:2", NULL, &o);
  assert_int_equal(f->num_colls, 2);
  *t_both = fmax(dur(f, 0), dur(f, 1));
  forked_result_free(f);
  wl_workload_destroy(wl);
  wl_workload *w1 = coll_workload(16, nx, xa, WL_COLL_ALLREDUCE, 1, &S);
  f = run(w1, "node8:2", NULL, &o);
  *t_alone = dur(f, 0);
  forked_result_free(f);
  wl_workload_destroy(w1);
}

static void test_rails__shared_fraction_sets_slowdown(void **state)
{
  (void)state;
  double alone, both;
  shared_rails(1, &alone, &both);
  check_rel(both, alone, 1e-6, "disjoint rails");
  shared_rails(0, &alone, &both);
  double lat = alone - 2.0 * 15 / 16 * 1 * GiB / 8 / (50e9 * 0.94);
  check_rel(both - lat, 2 * (alone - lat), 1e-3, "shared rails: transfer time doubles");
}

/* Two all-reduce communicators at once on node8:2 (rings, Simple, flow
 * fidelity), each GPU in both on two streams; *tx, *ty their times. */
static void two_comms(const int32_t *xa, int nx, double sx, const int32_t *ya, int ny, double sy,
                      double *tx, double *ty)
{
  const char *roles[] = {"x", "y"};
  const char *streams[] = {"sx", "sy"};
  wl_workload *wl = wl_workload_create(16, 2, roles);
  int cx = wl_comm_add(wl, "x", WL_COMM_DP, nx, xa), cy = wl_comm_add(wl, "y", WL_COMM_DP, ny, ya);
  int pb = wl_program_add(wl, "both", 2, streams), px = wl_program_add(wl, "x", 2, streams);
  int py = wl_program_add(wl, "y", 2, streams), pn = wl_program_add(wl, "none", 2, streams);
  wl_op ox = wl_op_coll(0, WL_COLL_ALLREDUCE, 0, sx), oy = wl_op_coll(1, WL_COLL_ALLREDUCE, 1, sy);
  wl_op z = wl_op_compute(0, 0);
  wl_program_append(&wl->programs[pb], &ox, NULL, 0);
  wl_program_append(&wl->programs[pb], &oy, NULL, 0);
  wl_program_append(&wl->programs[px], &ox, NULL, 0);
  wl_program_append(&wl->programs[py], &oy, NULL, 0);
  wl_program_append(&wl->programs[pn], &z, NULL, 0);
  for (int g = 0; g < 16; g++) {
    int inx = 0, iny = 0;
    for (int i = 0; i < nx; i++)
      inx |= xa[i] == g;
    for (int i = 0; i < ny; i++)
      iny |= ya[i] == g;
    wl_rank_set(wl, g, inx && iny ? pb : inx ? px : iny ? py : pn);
    if (inx)
      wl_rank_set_comm(wl, g, 0, cx);
    if (iny)
      wl_rank_set_comm(wl, g, 1, cy);
  }
  sim_options o = opts(SIM_ALGO_RING, SIM_PROTO_SIMPLE, SIM_FID_FLOW);
  forked_result *f = run(wl, "node8:2", NULL, &o);
  int got_x = 0, got_y = 0;
  for (size_t i = 0; i < f->num_colls; i++) {
    if (f->colls[i].comm == cx) {
      *tx = dur(f, i);
      got_x = 1;
    } else {
      *ty = dur(f, i);
      got_y = 1;
    }
  }
  assert_true(got_x && got_y);
  forked_result_free(f);
  wl_workload_destroy(wl);
}

static double alone(const int32_t *a, int n, double S)
{
  sim_options o = opts(SIM_ALGO_RING, SIM_PROTO_SIMPLE, SIM_FID_FLOW);
  return first_time(coll_workload(16, n, a, WL_COLL_ALLREDUCE, 1, &S), "node8:2", &o, -1);
}

/* Partial overlap: x is a ring over all 16 GPUs (8 channels, one per rail,
 * D_x = 2 (15/16) S_x / 8 per NIC and direction); y a ring over local GPUs
 * 0 and 1 of both nodes (2 channels on rails 0 and 1, D_y = 2 (3/4) S_y / 2),
 * so 2 of x's 8 rails are shared.  With S_y = S_x / 6.4, D_y = D_x / 2: on the
 * two shared NICs both flows get half until y is done (at D_x / B), then x
 * alone: x's transfer time grows by D_y / D_x = 1/2 (its other 6 rails are
 * idle by then: a collective ends with its slowest channel, as NCCL's static
 * channels do), y's doubles.  Without overlap (y on local GPUs 0 and 1, x on
 * local 2-7) neither slows. */
static void test_rails__partial_overlap_slows_by_shared_load(void **state)
{
  (void)state;
  double sx = 1 * GiB, sy = sx / 6.4, B = 50e9 * 0.94;
  int32_t xa[16], ya[4] = {0, 1, 8, 9}, xd[12];
  int nxd = 0;
  for (int g = 0; g < 16; g++) {
    xa[g] = g;
    if (g % 8 >= 2)
      xd[nxd++] = g;
  }
  double dx = 2.0 * 15 / 16 * sx / 8, dy = 2.0 * 3 / 4 * sy / 2;
  assert_true(fabs(dy / dx - 0.5) < 1e-12);
  double tx1 = alone(xa, 16, sx), ty1 = alone(ya, 4, sy), tx2 = 0, ty2 = 0;
  double lx = tx1 - dx / B, ly = ty1 - dy / B; /* latency terms */
  two_comms(xa, 16, sx, ya, 4, sy, &tx2, &ty2);
  print_message("2 of 8 rails shared: x %.1f -> %.1f us, y %.1f -> %.1f us\n", tx1 * 1e6,
                tx2 * 1e6, ty1 * 1e6, ty2 * 1e6);
  /* y's latency terms are shorter: it runs alone on the shared NICs for
   * lx - ly before x starts, which both of them gain */
  double early = lx - ly;
  check_rel(tx2 - lx, 1.5 * dx / B - early, 2e-3, "x: transfer time x (1 + D_y/D_x)");
  check_rel(ty2 - ly, 2.0 * dy / B - early, 2e-3, "y: transfer time doubles");
  /* disjoint rails: x over local GPUs 2-7 (12 GPUs, 6 channels) */
  double tx3 = alone(xd, 12, sx), tx4 = 0, ty4 = 0;
  two_comms(xd, 12, sx, ya, 4, sy, &tx4, &ty4);
  check_rel(tx4, tx3, 1e-6, "disjoint rails: x unchanged");
  check_rel(ty4, ty1, 1e-6, "disjoint rails: y unchanged");
}

/* All-to-all over two 4-GPU nodes, one node per leaf of a two-level fat-tree
 * (tests/data/leaf_*.json): each GPU sends 4 blocks of S/8 to the other node,
 * S/2 per NIC; with non-blocking leaves that is S/2 / (0.94 x 50 GB/s), with
 * the leaves' up links at half their capacity (oversub [2]: the four NICs'
 * S/2 each share up links worth two NICs) twice that. */
static double alltoall_on(const char *spec, double S)
{
  return first_time(first_n(8, 8, WL_COLL_ALLTOALL, 1, &S), spec, NULL, SIM_ALGO_DIRECT);
}

/* The deduplicating all-to-all of an MoE dispatch (DeepEP, HybridEP;
 * WL_OPF_DEDUP), k = top-k, e experts on each of the n members: a member's
 * T = S / k tokens go once to each other node holding any of a token's
 * experts (share 1 - C(E - g e, k) / C(E, k) of them for a node of g
 * members, E = n e), and over NVLink once to each member of the node holding
 * any (share p1 = 1 - C(E - e, k) / C(E, k)), for its own tokens and for
 * those each member of the other nodes sends through it. */
static double miss(double E, double s, int k)
{
  double v = 1;
  for (int i = 0; i < k; i++)
    v *= (E - s - i) / (E - i);
  return v;
}

static double dedup_time(int n, const char *cluster, int k, int e, double S, int dedup)
{
  wl_workload *wl = first_n(n, n, WL_COLL_ALLTOALL, 1, &S);
  if (dedup)
    wl_op_set_dedup(&wl->programs[0].ops[0], k, e);
  return first_time(wl, cluster, NULL, SIM_ALGO_DIRECT);
}

static void test_alltoall__dedup_matches_closed_form(void **state)
{
  (void)state;
  double S = 1 * GiB, nvl = 450e9 * 0.824, nic = 50e9 * 0.94;
  /* one node, 8 GPUs, top-2 of 32 experts (4 a GPU): 7 peers x T p1 out of
   * each GPU, against the plain all-to-all's 7 S / 8; the latency terms alike */
  double p1 = 1 - miss(32, 4, 2);
  double t0 = dedup_time(8, "node8", 2, 4, S, 0), t1 = dedup_time(8, "node8", 2, 4, S, 1);
  double lat = t0 - 7.0 / 8 * S / nvl;
  assert_true(lat > 0 && lat < 50e-6);
  check_rel(t1 - lat, 7 * (S / 2) * p1 / nvl, 1e-6, "one node: per-GPU dedup over NVLink");
  /* two nodes of 8, top-8 of 128 experts (Qwen3-30B-A3B on ep 16): the NIC
   * carries T (1 - C(64, 8) / C(128, 8)) against the plain all-to-all's S/2,
   * four times less; NVLink 7 x T p1 x 2 (own tokens and the other node's
   * member's) and is not the bound */
  double T = S / 8, pn = 1 - miss(128, 64, 8);
  p1 = 1 - miss(128, 8, 8);
  t0 = dedup_time(16, "node8:2", 8, 8, S, 0);
  t1 = dedup_time(16, "node8:2", 8, 8, S, 1);
  lat = t0 - S / 2 / nic;
  assert_true(lat > 0 && lat < 50e-6);
  assert_true(7 * T * p1 * 2 / nvl < T * pn / nic);
  /* and HybridEP's per-call cost across nodes, from its published H100
   * table (DeepEP hybrid-ep branch, docs/README_Hybrid-EP.md, 16 ranks, 8
   * SMs, 4096 tokens of 7168, top 8 of 128): the Torch API's time less the
   * kernel's for the bytes the test counts (tokens once to each node with
   * any of their experts: B), less one read and write of the tokens a rank
   * receives (R) at 3.35 TB/s x 0.88; the mean of dispatch (BF16, 57.74 and
   * 76.80 GB/s) and combine (56.96 and 68.00 GB/s) */
  double B = 4096 * 2 * (1 - miss(128, 64, 8)) * 7168 * 2.0;
  double R = 4096 * 16 * (1 - miss(128, 8, 8)) * 7168 * 2.0, move = 2 * R / (3.35e12 * 0.88);
  double call = ((B / 57.74e9 - B / 76.80e9 - move) + (B / 56.96e9 - B / 68.00e9 - move)) / 2;
  assert_true(call > 150e-6 && call < 160e-6);
  check_rel(t1 - lat, T * pn / nic + call, 1e-4, "two nodes: once per node over the NIC");
  print_message("dedup all-to-all 1 GiB over 2 x 8 GPUs, top-8 of 128: %.1f us, plain %.1f us\n",
                t1 * 1e6, t0 * 1e6);
}

static void test_alltoall__oversubscribed_leaf_slows_by_ratio(void **state)
{
  (void)state;
  double S = 1 * GiB, x = S / 2 / (0.94 * 50e9);
  double t1 = alltoall_on(ST_TEST_DATA_DIR "/leaf_nonblocking.json", S);
  double t2 = alltoall_on(ST_TEST_DATA_DIR "/leaf_oversub_2.json", S);
  double lat = t1 - x;
  print_message("all-to-all 1 GiB, 8 GPUs over 2 leaves: %.1f us non-blocking, %.1f us at 2:1\n",
                t1 * 1e6, t2 * 1e6);
  assert_true(lat > 0 && lat < 50e-6);
  check_rel(t2 - lat, 2 * x, 1e-3, "2:1 leaf: transfer time doubles");
}


/* ---- meshes and tori ------------------------------------------------------------ */

/* 8 MI300X on one xGMI full mesh (mi300x:1), all-reduce 1 GiB: rings over
 * every link, each of the 56 directed links carrying 1/7 of the ring's
 * 2(n-1)/n S, at RCCL's 48 of 64 GB/s per link (GFX94X_XGMI_WIDTH), after
 * RCCL's ring Simple latency 17 + 14 x 2.1 us (baseLat, tuning_model_5). */
static void test_ring__full_mesh_uses_every_link(void **state)
{
  (void)state;
  double S = 1 * GiB;
  wl_workload *wl = first_n(8, 8, WL_COLL_ALLREDUCE, 1, &S);
  forked_result *f = run(wl, "mi300x:1", NULL, NULL);
  double per_link = 2.0 * 7 / 8 * S / 7;
  check_rel(dur(f, 0), (17 + 14 * 2.1) * 1e-6 + per_link / (64e9 * 0.75), 1e-6, "mesh rings");
  assert_int_equal(f->colls[0].algo, SIM_ALGO_RING);
  assert_int_equal(f->colls[0].proto, SIM_PROTO_SIMPLE);
  assert_int_equal(f->colls[0].channels, 7);
  for (int a = 0; a < 8; a++)
    for (int b = 0; b < 8; b++)
      if (a != b) {
        char name[32];
        snprintf(name, sizeof name, "mesh-%d-%d", a, b);
        check_rel(link_bytes(f, name), per_link / 0.75, 1e-6, name);
      }
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* Two MI300X nodes: 8 channels, each a Hamiltonian path through the node;
 * together they cross every directed xGMI link once (2(n-1)/n S / 8 each),
 * and every NIC carries one channel each way. */
static void test_ring__full_mesh_across_nodes_one_channel_per_link(void **state)
{
  (void)state;
  double S = 1 * GiB, per = 2.0 * 15 / 16 * S / 8;
  wl_workload *wl = first_n(16, 16, WL_COLL_ALLREDUCE, 1, &S);
  sim_options o = opts(SIM_ALGO_RING, SIM_PROTO_SIMPLE, SIM_FID_FLOW);
  forked_result *f = run(wl, "mi300x:2", NULL, &o);
  assert_int_equal(f->colls[0].channels, 8);
  for (int g = 0; g < 16; g++) {
    for (int j = 0; j < 8; j++)
      if (j != g % 8) {
        char name[32];
        snprintf(name, sizeof name, "mesh-%d-%d", g, g / 8 * 8 + j);
        check_rel(link_bytes(f, name), per / 0.75, 1e-6, name);
      }
    char nic[32];
    snprintf(nic, sizeof nic, "nic-%d-%d-up", g / 8, g % 8);
    check_rel(link_bytes(f, nic), per / 0.94, 1e-6, nic);
  }
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* The DGX-1 (dgx-v100:1): 6 rings, one per NVLink lane of every GPU, so a
 * 2-lane pair carries twice a 1-lane pair's bytes and the time is NCCL's
 * Volta ring: 8.4 + 14 x 3.4 us + 2(n-1)/n S / 6 / (0.80 x 25 GB/s). */
static void test_ring__cube_mesh_one_ring_per_lane(void **state)
{
  (void)state;
  double S = 1 * GiB, lane = 2.0 * 7 / 8 * S / 6;
  wl_workload *wl = first_n(8, 8, WL_COLL_ALLREDUCE, 1, &S);
  forked_result *f = run(wl, "dgx-v100:1", NULL, NULL);
  check_rel(dur(f, 0), (8.4 + 14 * 3.4) * 1e-6 + lane / (25e9 * 0.80), 1e-6, "cube-mesh rings");
  assert_int_equal(f->colls[0].algo, SIM_ALGO_RING);
  assert_int_equal(f->colls[0].channels, 6);
  /* GPU 0: one lane to 1 and 2, two to 3 and 4 (nvidia-smi topo -m of a DGX-1) */
  check_rel(link_bytes(f, "nvl-0-1"), lane / 0.80, 1e-6, "nvl-0-1");
  check_rel(link_bytes(f, "nvl-0-3"), 2 * lane / 0.80, 1e-6, "nvl-0-3");
  check_rel(link_bytes(f, "nvl-0-4"), 2 * lane / 0.80, 1e-6, "nvl-0-4");
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* RCCL's choice on 8 MI300X (MSCCL all-pairs up to 16 MiB, LL below 512
 * KiB; rings above), and the all-pairs time: 2 S/8 on every link after two
 * exchanges, 17 + 2 x 2.1 us (Simple) or 12 + 2 x 0.8 us (LL). */
static void test_direct__rccl_all_pairs_up_to_16MiB(void **state)
{
  (void)state;
  double sizes[] = {256 * 1024.0, 1 * MiB, 16 * MiB, 32 * MiB};
  static const int algo[] = {SIM_ALGO_DIRECT, SIM_ALGO_DIRECT, SIM_ALGO_DIRECT, SIM_ALGO_RING};
  static const int proto[] = {SIM_PROTO_LL, SIM_PROTO_SIMPLE, SIM_PROTO_SIMPLE, SIM_PROTO_SIMPLE};
  wl_workload *wl = first_n(8, 8, WL_COLL_ALLREDUCE, 4, sizes);
  forked_result *f = run(wl, "mi300x:1", NULL, NULL);
  for (size_t i = 0; i < 4; i++) {
    assert_int_equal(f->colls[i].algo, algo[i]);
    assert_int_equal(f->colls[i].proto, proto[i]);
  }
  check_rel(dur(f, 1), (17 + 2 * 2.1) * 1e-6 + 2 * sizes[1] / 8 / (64e9 * 0.75), 1e-6,
            "all-pairs 1 MiB");
  forked_result_free(f);
  wl_workload_destroy(wl);
  /* 4 of the 8: no MSCCL algorithm for them, rings over the 3 links each */
  int32_t four[] = {0, 1, 2, 3};
  double S = 1 * MiB;
  wl = coll_workload(8, 4, four, WL_COLL_ALLREDUCE, 1, &S);
  f = run(wl, "mi300x:1", NULL, NULL);
  assert_int_equal(f->colls[0].algo, SIM_ALGO_RING);
  assert_int_equal(f->colls[0].channels, 3);
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* HCCL on one Ascend 910B server (ascend-910b:1): the mesh algorithm at every
 * size, Simple only: 2 S/8 per HCCS link after two exchanges of NCCL's
 * latency table (8.4 + 2 x 3.4 us; no HCCL latency figure is used), at the
 * default link efficiency 0.824 of 28 GB/s.  No published hccl_test figure
 * for 910B was found to compare with (docs/collectives.md, "Calibration"). */
static void test_direct__hccl_mesh_at_every_size(void **state)
{
  (void)state;
  double sizes[] = {8192, 1 * MiB, 1 * GiB};
  wl_workload *wl = first_n(8, 8, WL_COLL_ALLREDUCE, 3, sizes);
  forked_result *f = run(wl, "ascend-910b:1", NULL, NULL);
  for (size_t i = 0; i < 3; i++) {
    assert_int_equal(f->colls[i].algo, SIM_ALGO_DIRECT);
    assert_int_equal(f->colls[i].proto, SIM_PROTO_SIMPLE);
    check_rel(dur(f, i), (8.4 + 2 * 3.4) * 1e-6 + 2 * sizes[i] / 8 / (28e9 * 0.824), 1e-5,
              "hccl mesh"); /* 1e-5: wire bytes are whole bytes */
  }
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* 64 TPU v4 chips (tpu-v4:16, a 4x4x4 torus): XLA's rings per dimension, all
 * three at once, never NCCL's tree.  Each part S/3 reduces over its three
 * dimensions in turn (S/3, S/12, S/48 entering them), so every ICI link
 * carries 2 x 3/4 x (S/3)(1 + 1/4 + 1/16) / 2 each way, at 0.94 x 50 GB/s;
 * latency: the ring form over 2 x (3+3+3) steps of 3.4 us plus 8.4. */
static void test_torus__rings_on_every_dimension_at_once(void **state)
{
  (void)state;
  double sizes[] = {4096, 1 * MiB, 64 * MiB, 1 * GiB};
  wl_workload *wl = first_n(64, 64, WL_COLL_ALLREDUCE, 4, sizes);
  forked_result *f = run(wl, "tpu-v4:16", NULL, NULL);
  for (size_t i = 0; i < 4; i++) {
    assert_int_equal(f->colls[i].algo, SIM_ALGO_TORUS);
    assert_int_equal(f->colls[i].proto, SIM_PROTO_SIMPLE);
  }
  double share = 2 * 0.75 / 3 * (1 + 0.25 + 0.0625) / 2, load = share * sizes[3];
  check_rel(dur(f, 3), (8.4 + 18 * 3.4) * 1e-6 + load / (50e9 * 0.94), 1e-6, "torus 1 GiB");
  /* a link's bytes add up over the four sizes */
  double all = share * (sizes[0] + sizes[1] + sizes[2] + sizes[3]) / 0.94;
  check_rel(link_bytes(f, "ici-0-x+"), all, 1e-6, "ici-0-x+");
  check_rel(link_bytes(f, "ici-0-z-"), all, 1e-6, "ici-0-z-");
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* ---- large fat-trees ------------------------------------------------------- */

/* The DP groups of a tp x pp layout of 8-GPU nodes, as the generators lay
 * ranks out (rank = t + tp (d + dp p), docs/workloads.md): group (p, t) is
 * GPU t of dp consecutive nodes, so the tp groups of a stage sit side by side
 * on the 8 rails.  With pp = 0 only rail 0 of every node (one group). */
static wl_workload *dp_groups(int nodes, int tp, int pp, int op, double S)
{
  const char *roles[] = {"dp"};
  const char *streams[] = {"comm"};
  int G = nodes * 8, groups = pp ? tp * pp : 1, dp = pp ? G / (tp * pp) : nodes;
  wl_workload *wl = wl_workload_create(G, 1, roles);
  int p = wl_program_add(wl, "ar", 1, streams);
  int idle = wl_program_add(wl, "idle", 1, streams);
  wl_op o = wl_op_coll(0, op, 0, S);
  wl_program_append(&wl->programs[p], &o, NULL, 0);
  wl_op z = wl_op_compute(0, 0);
  wl_program_append(&wl->programs[idle], &z, NULL, 0);
  for (int r = 0; r < G; r++)
    wl_rank_set(wl, r, idle);
  int32_t *ranks = malloc((size_t)dp * sizeof *ranks);
  for (int g = 0; g < groups; g++) {
    int t = g % tp, st = g / tp;
    for (int d = 0; d < dp; d++)
      ranks[d] = pp ? t + tp * (d + dp * st) : 8 * d;
    int c = wl_comm_add(wl, "dp", WL_COMM_DP, dp, ranks);
    for (int d = 0; d < dp; d++) {
      wl_rank_set(wl, ranks[d], p);
      wl_rank_set_comm(wl, ranks[d], 0, c);
    }
  }
  free(ranks);
  return wl;
}

/* NCCL's ring Simple all-reduce over n GPUs, one per node, on 400 Gb/s NICs
 * (tuning.cc; docs/collectives.md): latency 1.4 x (8.4 + 2(n-1) x 14) us
 * (every step crosses the network; x1.4 multi-node Simple all-reduce), then
 * 2(n-1)/n S at 0.94 x 50 GB/s on each NIC. */
static double ring_ar_closed_form(int n, double S)
{
  return 1.4 * (8.4 + 2.0 * (n - 1) * 14.0) * 1e-6 + 2.0 * (n - 1) / n * S / (0.94 * 50e9);
}

/* Ring Simple all-reduces on cluster:NODES for three sizes: every DP group
 * runs at its closed form, and bus bandwidth stays within 5% across the
 * sizes, as on any non-blocking fat-tree.  Returns the busbw spread
 * (max / min - 1). */
static double fattree_ring_case(const char *cluster, const int *sizes, int pp, double S,
                                const char *what)
{
  double bmin = INFINITY, bmax = 0;
  sim_options o = opts(SIM_ALGO_RING, SIM_PROTO_SIMPLE, SIM_FID_FLOW);
  for (int k = 0; k < 3; k++) {
    int nodes = sizes[k], n = pp ? nodes / pp : nodes;
    char spec[512];
    snprintf(spec, sizeof spec, "%s:%d", cluster, nodes);
    wl_workload *wl = dp_groups(nodes, 8, pp, WL_COLL_ALLREDUCE, S);
    forked_result *f = run(wl, spec, NULL, &o);
    double want = ring_ar_closed_form(n, S), t = 0;
    for (size_t i = 0; i < f->num_colls; i++)
      t = fmax(t, dur(f, i));
    double busbw = 2.0 * (n - 1) / n * S / t;
    print_message("%s, %d nodes: %zu groups of %d, %.3f ms, busbw %.2f GB/s (closed form %.3f ms)\n",
                  what, nodes, f->num_colls, n, t * 1e3, busbw / 1e9, want * 1e3);
    check_rel(t, want, 1e-6, what);
    bmin = fmin(bmin, busbw);
    bmax = fmax(bmax, busbw);
    forked_result_free(f);
    wl_workload_destroy(wl);
  }
  return bmax / bmin - 1;
}

/* dgx-h100 at 1,024, 1,280 and 1,344 nodes: 3 levels of 64-port switches,
 * 8, 10 and 11 spine-leaf groups of 128 nodes under the top level. */
static const int H100_SIZES[] = {1024, 1280, 1344};

/* One rail: rail 0 of every node in one ring (16 GiB, so that the latency
 * terms, which grow with n, stay under 2% of the time).  Its flows leave
 * each spine-leaf group once, so even single-path routing kept them apart;
 * the test pins the closed form at the three sizes. */
static void test_fattree__rail_ring_busbw_flat_from_1024_to_1344_nodes(void **state)
{
  (void)state;
  assert_true(fattree_ring_case("dgx-h100", H100_SIZES, 0, 16 * GiB, "rail 0 ring") < 0.05);
}

/* A whole tp=8,pp=8 layout: its 64 DP groups (128, 160, 168 nodes) at once,
 * 8 per stage side by side on the rails.  From 1,280 nodes a stage's groups
 * straddle spine-leaf groups, and single-path D-mod-k routing put two
 * groups' crossing flows on one spine up port: 97.1 ms at 1,280 nodes, 1.88
 * x the closed form.  Adaptive routing spreads them over the group's up
 * links. */
static void test_fattree__tp8_pp8_dp_rings_flat_from_1024_to_1344_nodes(void **state)
{
  (void)state;
  assert_true(fattree_ring_case("dgx-h100", H100_SIZES, 8, 1 * GiB, "tp=8,pp=8 DP rings") < 0.05);
}

/* The same on four levels with a partial top (tests/data/rail_fattree_4level.json,
 * 8-port switches: 4, 5 and 6 level-3 groups at 32, 40 and 48 nodes): the DP
 * groups of tp=8,pp=4 (8, 10, 12 nodes) straddle groups at every level from
 * 40 nodes (D-mod-k: 2 x the transfer time at 40 and 48 nodes). */
static void test_fattree__four_levels_dp_rings_flat_with_partial_top(void **state)
{
  (void)state;
  static const int sizes[] = {32, 40, 48};
  assert_true(fattree_ring_case(ST_TEST_DATA_DIR "/rail_fattree_4level.json", sizes, 4, 1 * GiB,
                                "4 levels, tp=8,pp=4 DP rings") < 0.05);
}

/* ---- published measurements -------------------------------------------------- */

typedef struct calib_row {
  char series[40], system[16];
  double bytes, busbw, overhead_s;
} calib_row;

static int read_subset(calib_row *rows, int max)
{
  FILE *fp = fopen(ST_TEST_DATA_DIR "/nccl_busbw_subset.csv", "r");
  assert_non_null(fp);
  char line[512];
  int n = 0, header = 0;
  while (fgets(line, sizeof line, fp) && n < max) {
    if (line[0] == '#')
      continue;
    if (!header) {
      header = 1;
      continue;
    }
    calib_row *r = &rows[n];
    int gpus;
    double ov;
    if (sscanf(line, "%39[^,],%15[^,],%d,%lf,%lf,%lf", r->series, r->system, &gpus, &r->bytes,
               &r->busbw, &ov) == 6) {
      r->overhead_s = ov * 1e-6;
      n++;
    }
  }
  fclose(fp);
  return n;
}

/* Rows the model cannot meet honestly, with the band they are held to
 * instead (docs/collectives.md, "Calibration"): the 8x A100 series (nccl-tests
 * -g 8, one run) takes 101.9 us at 1 MiB, the same as at 2 and 4 MiB, while
 * its 512 KiB row takes 80.4 us: no latency-bandwidth model (nor a constant
 * per-call cost) has a time that stays flat while the message quadruples.
 * Its 16 MiB row is slower in busbw than its 8 MiB row (106.2 against 109.9
 * GB/s): one side of that is outside any monotone model's 20% band unless
 * the protocol changes in between, which NCCL's tuning model does not do
 * there (LL128 at both).  The bands bound the present deviation so that a
 * change of the model is seen. */
typedef struct calib_exception {
  const char *system;
  double bytes_min, bytes_max, rel_lo, rel_hi;
} calib_exception;

static const calib_exception calib_exceptions[] = {
    {"a100", 1 * MiB, 1 * MiB, -0.20, 0.65},   /* +59%: the 100 us floor */
    {"a100", 16 * MiB, 16 * MiB, -0.20, 0.42}, /* +37%: below the 8 MiB row */
};

static void calib_band(const calib_row *r, double *lo, double *hi, int *exempt)
{
  double tol = r->bytes >= 64 * MiB ? 0.10 : 0.20;
  *lo = -tol;
  *hi = tol;
  *exempt = 0;
  for (size_t i = 0; i < sizeof calib_exceptions / sizeof calib_exceptions[0]; i++) {
    const calib_exception *x = &calib_exceptions[i];
    if (!strcmp(x->system, r->system) && r->bytes >= x->bytes_min && r->bytes <= x->bytes_max) {
      *lo = x->rel_lo;
      *hi = x->rel_hi;
      *exempt = 1;
    }
  }
}

/* Model busbw for every row of one system: one simulation of the sweep.
 * Returns the rows outside their band; *n_issue counts the rows held to the
 * issue's band (10% from 64 MiB, 20% from 1 MiB). */
static int compare_system(const calib_row *rows, int n, const char *system, const char *cluster,
                          const standin *si, int *n_issue)
{
  double sizes[64] = {0};
  int idx[64], k = 0;
  for (int i = 0; i < n && k < 64; i++)
    if (!strcmp(rows[i].system, system)) {
      sizes[k] = rows[i].bytes;
      idx[k++] = i;
    }
  assert_true(k > 0);
  wl_workload *wl = first_n(8, 8, WL_COLL_ALLREDUCE, k, sizes);
  forked_result *f = run(wl, cluster, si, NULL);
  int bad = 0;
  if (n_issue)
    *n_issue = 0;
  for (int j = 0; j < k; j++) {
    const calib_row *r = &rows[idx[j]];
    double t = dur(f, (size_t)j) + r->overhead_s;
    double bus = 1.75 * r->bytes / t / 1e9;
    double lo, hi, rel = bus / r->busbw - 1;
    int exempt;
    calib_band(r, &lo, &hi, &exempt);
    int out = rel < lo || rel > hi;
    bad += out;
    if (n_issue && !exempt)
      (*n_issue)++;
    print_message("%-20s %-12s %8.0f MiB  measured %6.1f  model %6.1f GB/s  %+6.1f%%  %s/%s/%d%s%s\n",
                  r->series, cluster, r->bytes / MiB, r->busbw, bus, rel * 100,
                  sim_coll_algo_name(f->colls[j].algo), sim_coll_proto_name(f->colls[j].proto),
                  f->colls[j].channels, exempt ? "  (documented exception)" : "",
                  out ? "  OUTSIDE" : "");
  }
  forked_result_free(f);
  wl_workload_destroy(wl);
  return bad;
}

/* H100 and H200: every size within 10% from 64 MiB, within 20% from 1 MiB. */
static void test_calibration__hopper_single_node(void **state)
{
  (void)state;
  calib_row rows[64];
  int n = read_subset(rows, 64), held;
  assert_true(n > 40);
  assert_int_equal(compare_system(rows, n, "h100", "node8", &SI_H100, &held), 0);
  assert_int_equal(held, 15);
  assert_int_equal(compare_system(rows, n, "h200", "node8", &SI_H200, &held), 0);
  assert_int_equal(held, 15);
}

/* A100: the issue's bands at every size but 1 and 16 MiB (13 of 15 rows),
 * the documented exceptions there. */
static void test_calibration__a100_single_node(void **state)
{
  (void)state;
  calib_row rows[64];
  int n = read_subset(rows, 64), held;
  assert_int_equal(compare_system(rows, n, "a100", "node8", &SI_A100, &held), 0);
  assert_int_equal(held, 13);
}

/* The project's subset equals the shared calibration set's rows. */
static void test_calibration__subset_matches_shared_csv(void **state)
{
  (void)state;
  FILE *fp = fopen(ST_SHARED_DIR "/calibration/nccl_busbw.csv", "r");
  if (!fp) {
    print_message("skipped: " ST_SHARED_DIR "/calibration/nccl_busbw.csv is not there\n");
    skip();
  }
  calib_row rows[64];
  int n = read_subset(rows, 64), found = 0;
  char line[4096];
  while (fgets(line, sizeof line, fp)) {
    for (int i = 0; i < n; i++) {
      size_t L = strlen(rows[i].series);
      if (strncmp(line, rows[i].series, L) || line[L] != ',')
        continue;
      /* message_bytes is column 12 and busbw_GBps column 16, no quoted commas
       * before them in these series' system text is not guaranteed: find the
       * bytes value as a field */
      char key[64];
      snprintf(key, sizeof key, ",%.0f,", rows[i].bytes);
      char *at = strstr(line, key);
      if (!at)
        continue;
      /* ...,message_bytes,message_label,time_us,algbw,busbw,... */
      char *q = at + 1;
      for (int col = 0; col < 4 && q; col++)
        q = strchr(q + 1, ',');
      if (q && fabs(strtod(q + 1, NULL) - rows[i].busbw) < 1e-9)
        found++;
    }
  }
  fclose(fp);
  assert_int_equal(found, n);
}

/* Multi-node, 8 x 400 Gb/s per node, 8 GiB: ~370-380 GB/s published without
 * in-network reduction (NVIDIA GTC24 S62129: 380; GTC25 S72583: 370 on 32
 * GPUs), ~480 with it.  Two nodes are not in that set: there NCCL's default
 * is NVLS tree, which its tuning model (tuning.cc perChMaxNVLSTreeBws, Hopper
 * 2 nodes) caps at 57.7 GB/s per channel, 8 channels: 461.6 GB/s, and the
 * NCCL maintainers warn that 2-node numbers "can be misleading when comparing
 * it to >2 nodes unless you set NCCL_ALGO=RING" (NVIDIA/nccl issue #1031). */
static void test_calibration__multi_node_h100(void **state)
{
  (void)state;
  double S = 8 * GiB;
  struct {
    int gpus;
    const char *cluster;
    const standin *si;
    int algo, want_algo;
    double want, tol;
  } cases[] = {
      /* published, >2 nodes or the ring that NCCL's maintainers ask for on 2 */
      {16, "node8:2", &SI_H100, SIM_ALGO_RING, SIM_ALGO_RING, 375, 0.10},
      {32, "node8:4", &SI_H100, -1, SIM_ALGO_RING, 370, 0.10}, /* default: ring */
      {32, "node8:4", &SI_H100, SIM_ALGO_NVLS_TREE, SIM_ALGO_NVLS_TREE, 370, 0.10},
      {32, "node8:4", NULL, -1, SIM_ALGO_RING, 370, 0.10}, /* no NVLS: ring */
      /* NCCL's own figure on 2 nodes: 8 x 57.7 (closed form, not published) */
      {16, "node8:2", &SI_H100, -1, SIM_ALGO_NVLS_TREE, 8 * 57.7, 0.01},
      /* NVLS + SHARP: NIC-bound, 8 NICs x 50 GB/s x 0.94 x 0.66 = 248 GB/s of
       * algbw: busbw 465 (16 GPUs), 481 (32) against the published ~480 */
      {16, "node8:2", &SI_H100_SHARP, -1, SIM_ALGO_NVLS, 480, 0.05},
      {32, "node8:4", &SI_H100_SHARP, -1, SIM_ALGO_NVLS, 480, 0.02},
      /* the presets */
      {32, "dgx-h100:4", NULL, -1, SIM_ALGO_RING, 370, 0.10},
      {16, "dgx-h100:2", NULL, -1, SIM_ALGO_NVLS_TREE, 8 * 57.7, 0.01},
      {32, "h100-superpod:4", NULL, -1, SIM_ALGO_NVLS, 480, 0.02},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wl_workload *wl = first_n(cases[i].gpus, cases[i].gpus, WL_COLL_ALLREDUCE, 1, &S);
    sim_options o = opts(cases[i].algo, -1, SIM_FID_FLOW);
    forked_result *f = run(wl, cases[i].cluster, cases[i].si, &o);
    char what[96];
    snprintf(what, sizeof what, "%d GPUs %s%s: busbw (%s)", cases[i].gpus, cases[i].cluster,
             cases[i].si && cases[i].si->sharp ? " + SHARP" : "",
             sim_coll_algo_name(f->colls[0].algo));
    print_message("%s = %.1f GB/s (reference %.1f)\n", what, f->colls[0].busbw_GBps, cases[i].want);
    assert_int_equal(f->colls[0].algo, cases[i].want_algo);
    check_rel(f->colls[0].busbw_GBps, cases[i].want, cases[i].tol, what);
    forked_result_free(f);
    wl_workload_destroy(wl);
  }
}

/* DGX A100 across nodes, 8 x 200 Gb/s per node, 8 GiB on 32 GPUs: NVIDIA's
 * published 192 GB/s (GTC24 S62129, GTC25 S72583 "NVL3 + 8x 200Gb RDMA").
 * Ring, NIC-bound: 8 x 25 GB/s x 0.94, less the Ampere ring fill on one
 * loop (16 MiB x 32 of 8 GiB: 0.29 x 1/16 of the transfer). */
static void test_calibration__multi_node_a100(void **state)
{
  (void)state;
  double S = 8 * GiB;
  wl_workload *wl = first_n(32, 32, WL_COLL_ALLREDUCE, 1, &S);
  forked_result *f = run(wl, "dgx-a100:4", NULL, NULL);
  print_message("32 GPUs dgx-a100:4: busbw (%s) = %.1f GB/s (reference 192.0)\n",
                sim_coll_algo_name(f->colls[0].algo), f->colls[0].busbw_GBps);
  assert_int_equal(f->colls[0].algo, SIM_ALGO_RING);
  check_rel(f->colls[0].busbw_GBps, 192, 0.10, "32 GPUs dgx-a100:4");
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* 8 MI300X against AMD's published rccl-tests all-reduce sweep
 * (bench/collectives/mesh_busbw.csv, sources there): every row from 64 MiB
 * within 15%.  The rows below are printed, not held: from 4 to 16 MiB the
 * MSCCL all-pairs kernel reaches 32-35 GB/s per link where the model gives it
 * RCCL's 48 (docs/collectives.md, "Calibration"). */
static void test_calibration__mi300x_rccl_tests(void **state)
{
  (void)state;
  FILE *fp = fopen(ST_SOURCE_DIR "/bench/collectives/mesh_busbw.csv", "r");
  assert_non_null(fp);
  char line[1024];
  double sizes[64], bus[64];
  int k = 0, header = 0;
  while (fgets(line, sizeof line, fp) && k < 64) {
    if (line[0] == '#')
      continue;
    if (!header) {
      header = 1;
      continue;
    }
    char series[40], dev[16];
    int gpus, nodes;
    double b, t, alg, bb;
    if (sscanf(line, "%39[^,],%15[^,],%d,%d,%*[^,],%*[^,],%*[^,],%lf,%lf,%lf,%lf", series, dev,
               &gpus, &nodes, &b, &t, &alg, &bb) == 8 &&
        !strcmp(series, "MI300X-1node-AR")) {
      assert_int_equal(gpus, 8);
      sizes[k] = b;
      bus[k++] = bb;
    }
  }
  fclose(fp);
  assert_int_equal(k, 15);
  wl_workload *wl = first_n(8, 8, WL_COLL_ALLREDUCE, k, sizes);
  forked_result *f = run(wl, "mi300x:1", NULL, NULL);
  int held = 0, bad = 0;
  for (int j = 0; j < k; j++) {
    double model = 1.75 * sizes[j] / dur(f, (size_t)j) / 1e9, rel = model / bus[j] - 1;
    int hold = sizes[j] >= 64 * MiB, out = hold && fabs(rel) > 0.15;
    held += hold;
    bad += out;
    print_message("MI300X-1node-AR %8.0f MiB  measured %6.1f  model %6.1f GB/s  %+6.1f%%  %s/%s%s\n",
                  sizes[j] / MiB, bus[j], model, rel * 100, sim_coll_algo_name(f->colls[j].algo),
                  sim_coll_proto_name(f->colls[j].proto), out ? "  OUTSIDE" : hold ? "" : "  (not held)");
  }
  assert_int_equal(held, 9);
  assert_int_equal(bad, 0);
  forked_result_free(f);
  wl_workload_destroy(wl);
}

/* The presets themselves: dgx-a100:1, dgx-h100:1 and hgx-h200:1, every row
 * of their series, in the same bands as the stand-ins. */
static void test_calibration__presets(void **state)
{
  (void)state;
  static const char *const presets[][2] = {
      {"dgx-a100:1", "a100"}, {"dgx-h100:1", "h100"}, {"hgx-h200:1", "h200"}};
  static const int held_want[] = {13, 15, 15};
  calib_row rows[64];
  int n = read_subset(rows, 64);
  for (int i = 0; i < 3; i++) {
    plat_cluster *cl = NULL;
    st_err err;
    st_err_clear(&err);
    if (plat_cluster_load(presets[i][0], &cl, &err)) {
      print_error("preset %s: %s\n", presets[i][0], err.msg);
      fail();
    }
    plat_cluster_destroy(cl);
    int held;
    assert_int_equal(compare_system(rows, n, presets[i][1], presets[i][0], NULL, &held), 0);
    assert_int_equal(held, held_want[i]);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ring__matches_nccl_model_on_one_node),
      cmocka_unit_test(test_protocols__match_nccl_model),
      cmocka_unit_test(test_ring__ampere_simple_fill),
      cmocka_unit_test(test_nvls__matches_link_loads),
      cmocka_unit_test(test_tree__matches_link_loads),
      cmocka_unit_test(test_direct__matches_closed_form),
      cmocka_unit_test(test_shift__moves_at_line_rate),
      cmocka_unit_test(test_tuner__picks_protocol_by_size),
      cmocka_unit_test(test_fidelity__step_matches_flow_from_64MiB),
      cmocka_unit_test(test_ring__two_nodes_drive_every_nic),
      cmocka_unit_test(test_rails__shared_fraction_sets_slowdown),
      cmocka_unit_test(test_rails__partial_overlap_slows_by_shared_load),
      cmocka_unit_test(test_alltoall__oversubscribed_leaf_slows_by_ratio),
      cmocka_unit_test(test_alltoall__dedup_matches_closed_form),
      cmocka_unit_test(test_ring__full_mesh_uses_every_link),
      cmocka_unit_test(test_ring__full_mesh_across_nodes_one_channel_per_link),
      cmocka_unit_test(test_ring__cube_mesh_one_ring_per_lane),
      cmocka_unit_test(test_direct__rccl_all_pairs_up_to_16MiB),
      cmocka_unit_test(test_direct__hccl_mesh_at_every_size),
      cmocka_unit_test(test_torus__rings_on_every_dimension_at_once),
      cmocka_unit_test(test_fattree__rail_ring_busbw_flat_from_1024_to_1344_nodes),
      cmocka_unit_test(test_fattree__tp8_pp8_dp_rings_flat_from_1024_to_1344_nodes),
      cmocka_unit_test(test_fattree__four_levels_dp_rings_flat_with_partial_top),
      cmocka_unit_test(test_calibration__hopper_single_node),
      cmocka_unit_test(test_calibration__a100_single_node),
      cmocka_unit_test(test_calibration__subset_matches_shared_csv),
      cmocka_unit_test(test_calibration__multi_node_h100),
      cmocka_unit_test(test_calibration__multi_node_a100),
      cmocka_unit_test(test_calibration__presets),
      cmocka_unit_test(test_calibration__mi300x_rccl_tests),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
