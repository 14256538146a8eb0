/* test_platforms.c — presets, specs, routes and the SimGrid platform.
 *
 * Expected numbers come from the vendors' figures written out here (links x
 * per-link bandwidth, Gb/s / 8) and from closed forms (torus distance,
 * latency + bytes / bandwidth), never from the code under test.  Checks that
 * need a SimGrid engine run in a forked child (one engine per process).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/config.h>
#include <xbt/dynar.h>

#include "driver.h"
#include "platform.h"

static plat_cluster *load(const char *arg)
{
  st_err err = {0};
  plat_cluster *c = NULL;
  int rc = plat_cluster_load(arg, &c, &err);
  if (rc)
    fail_msg("loading '%s': %s", arg, err.msg);
  return c;
}

static void route(const plat_cluster *c, int a, int b, plat_route *r)
{
  st_err err = {0};
  if (plat_route_get(c, a, b, r, &err))
    fail_msg("route %d -> %d: %s", a, b, err.msg);
}

/* ---- presets: documented values ----------------------------------------- */
static const struct preset_row {
  const char *arg;
  int gpus;
  double intra_Bps; /* per GPU per direction, into the intra-node fabric */
  double nic_Bps;   /* per GPU per direction, to other nodes (torus: all ICI links) */
} preset_rows[] = {
    {"node8:2", 16, 18 * 25e9, 400e9 / 8},
    {"dgx-v100:2", 16, 6 * 25e9, 4 * 100e9 / 8 / 8},
    {"dgx-a100:2", 16, 12 * 25e9, 200e9 / 8},
    {"selene:4", 32, 12 * 25e9, 200e9 / 8},
    {"dgx-h100:2", 16, 18 * 25e9, 400e9 / 8},
    {"h100-superpod:2", 16, 18 * 25e9, 400e9 / 8},
    {"hgx-h200:2", 16, 18 * 25e9, 400e9 / 8},
    {"dgx-b200:2", 16, 18 * 50e9, 400e9 / 8},
    {"gb200-nvl72:2", 144, 18 * 50e9, 400e9 / 8},
    {"mi300x:2", 16, 7 * 64e9, 400e9 / 8},
    {"ascend-910b:2", 16, 7 * 28e9, 200e9 / 8},
    {"tpu-v4:16", 64, 0, 6 * 50e9},
    {"tpu-v5p:16", 64, 0, 6 * 100e9},
};

/* Sum of the distinct links of kind k that the routes from the GPUs of node 0
 * to 'peers' use first (first link of that kind on each route). */
static double distinct_first_links(const plat_cluster *c, int from_lo, int from_hi, int to_lo,
                                   int to_hi, int kind)
{
  int seen_n = 0, *seen = calloc(4096, sizeof *seen);
  double sum = 0;
  plat_route *r = malloc(sizeof *r);
  for (int a = from_lo; a < from_hi; a++)
    for (int b = to_lo; b < to_hi; b++) {
      if (a == b)
        continue;
      route(c, a, b, r);
      for (int i = 0; i < r->n; i++)
        if (r->links[i].kind == kind) {
          int dup = 0;
          for (int k = 0; k < seen_n; k++)
            dup |= seen[k] == r->link_ids[i];
          if (!dup && seen_n < 4096) {
            seen[seen_n++] = r->link_ids[i];
            sum += r->links[i].bw_Bps;
          }
          break;
        }
    }
  free(r);
  free(seen);
  return sum;
}

static void test_presets__match_documented_values(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof preset_rows / sizeof preset_rows[0]; i++) {
    const struct preset_row *p = &preset_rows[i];
    plat_cluster *c = load(p->arg);
    int gpn = c->gpus_per_node;
    if (c->num_gpus != p->gpus)
      fail_msg("%s: %d GPUs, expected %d", p->arg, c->num_gpus, p->gpus);
    if (c->fabric_kind == PLAT_FABRIC_TORUS) {
      double ici = distinct_first_links(c, 0, 1, 0, c->num_gpus, PLAT_LINK_ICI);
      if (c->intra_Bps != 0 || fabs(ici - p->nic_Bps) > 1 || fabs(c->nic_Bps - p->nic_Bps) > 1)
        fail_msg("%s: ICI %g (routes) / %g (field), expected %g", p->arg, ici, c->nic_Bps,
                 p->nic_Bps);
    } else {
      double intra = distinct_first_links(c, 0, 1, 0, gpn, PLAT_LINK_INTRA);
      if (fabs(intra - p->intra_Bps) > 1 || fabs(c->intra_Bps - p->intra_Bps) > 1)
        fail_msg("%s: intra %g (routes) / %g (field), expected %g", p->arg, intra, c->intra_Bps,
                 p->intra_Bps);
      double nic = distinct_first_links(c, 0, gpn, gpn, 2 * gpn, PLAT_LINK_NIC) / gpn;
      double field = c->nic_Bps * c->nics_per_node / gpn;
      if (fabs(nic - p->nic_Bps) > 1 || fabs(field - p->nic_Bps) > 1)
        fail_msg("%s: NIC per GPU %g (routes) / %g (fields), expected %g", p->arg, nic, field,
                 p->nic_Bps);
    }
    plat_cluster_destroy(c);
  }
}

static void test_presets__every_name_loads_at_its_default_size(void **state)
{
  (void)state;
  for (const char *const *n = plat_preset_names(); *n; n++) {
    plat_cluster *c = load(*n);
    assert_true(c->num_gpus > 0);
    assert_int_equal(c->num_nodes, c->default_nodes);
    assert_non_null(c->spec_json);
    plat_cluster_destroy(c);
  }
}

static void test_node8__keeps_the_first_version_numbers(void **state)
{
  (void)state;
  plat_cluster *c = load("node8:3");
  assert_int_equal(c->num_gpus, 24);
  assert_int_equal(c->gpus_per_node, 8);
  assert_string_equal(c->device.name, "H100-SXM");
  assert_true(c->intra_kind == PLAT_INTRA_NVSWITCH);
  assert_true(c->intra_Bps == 450e9 && c->intra_lat_s == 0.5e-6);
  assert_int_equal(c->nics_per_node, 8);
  assert_true(c->nic_Bps == 50e9 && c->nic_lat_s == 1e-6);
  assert_true(c->fabric_kind == PLAT_FABRIC_SWITCH);
  plat_route r;
  route(c, 0, 9, &r);
  assert_int_equal(r.n, 2);
  assert_string_equal(r.links[0].name, "nic-0-0-up");
  assert_string_equal(r.links[1].name, "nic-1-1-down");
  assert_true(r.latency_s == 2e-6);
  plat_cluster_destroy(c);
}

/* ---- routes ---------------------------------------------------------------- */
static void test_route__dgx_h100_same_node_crosses_nvswitch_only(void **state)
{
  (void)state;
  plat_cluster *c = load("dgx-h100:4");
  plat_route r;
  route(c, 0, 1, &r);
  assert_int_equal(r.n, 2);
  assert_int_equal(r.switches, 1);
  for (int i = 0; i < r.n; i++)
    assert_int_equal(r.links[i].kind, PLAT_LINK_INTRA);
  assert_string_equal(r.links[0].name, "nvl-0-up");
  assert_string_equal(r.links[1].name, "nvl-1-down");
  assert_true(r.bw_Bps == 450e9);
  plat_cluster_destroy(c);
}

static void test_route__dgx_h100_same_rail_crosses_its_leaf_only(void **state)
{
  (void)state;
  plat_cluster *c = load("dgx-h100:4");
  plat_route r;
  route(c, 0, 8, &r); /* GPU 0 of node 0 -> GPU 0 of node 1: rail 0 */
  assert_int_equal(r.n, 2);
  assert_int_equal(r.switches, 1);
  assert_string_equal(r.links[0].name, "nic-0-0-up");
  assert_string_equal(r.links[1].name, "nic-1-0-down");
  assert_true(fabs(r.latency_s - (2 * 1e-6 + 0.13e-6)) < 1e-15);
  plat_cluster_destroy(c);
}

static void test_route__dgx_h100_cross_rail_crosses_the_spine(void **state)
{
  (void)state;
  plat_cluster *c = load("dgx-h100:4");
  plat_route r;
  route(c, 0, 9, &r); /* rail 0 -> rail 1 */
  assert_int_equal(r.switches, 3);
  assert_int_equal(r.n, 4);
  assert_int_equal(r.links[0].kind, PLAT_LINK_NIC);
  assert_int_equal(r.links[1].kind, PLAT_LINK_FABRIC);
  assert_int_equal(r.links[2].kind, PLAT_LINK_FABRIC);
  assert_int_equal(r.links[3].kind, PLAT_LINK_NIC);
  assert_string_equal(r.links[3].name, "nic-1-1-down");
  /* a classic (not rail-optimised) tree puts a node's NICs on one leaf: GPU 0 of
   * node 0 and GPU 1 of node 1 then meet at the leaf */
  plat_cluster_destroy(c);
}

static int torus_dist(int a, int b, int d) /* independent closed form */
{
  int x = abs(a - b);
  return x < d - x ? x : d - x;
}

static void test_route__tpu_v4_follows_dimension_order_with_wraparound(void **state)
{
  (void)state;
  plat_cluster *c = load("tpu-v4:128"); /* 512 chips = 8 cubes -> 8x8x8 */
  assert_int_equal(c->torus_dims[0], 8);
  assert_int_equal(c->torus_dims[1], 8);
  assert_int_equal(c->torus_dims[2], 8);
  static const int pairs[][2] = {{0, 7}, {0, 511}, {5, 300}, {63, 64}, {100, 411}, {0, 4}, {9, 9}};
  plat_route r;
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    int a = pairs[i][0], b = pairs[i][1];
    route(c, a, b, &r);
    int hops = torus_dist(a % 8, b % 8, 8) + torus_dist(a / 8 % 8, b / 8 % 8, 8) +
               torus_dist(a / 64, b / 64, 8);
    if (r.n != hops)
      fail_msg("chip %d -> %d: %d hops, torus distance %d", a, b, r.n, hops);
    char last = 'x';
    for (int k = 0; k < r.n; k++) {
      char axis = r.links[k].name[strlen(r.links[k].name) - 2];
      assert_true(axis >= last); /* x hops, then y, then z */
      last = axis;
      assert_int_equal(r.links[k].kind, PLAT_LINK_ICI);
    }
  }
  route(c, 0, 7, &r); /* one hop backwards over the wrap-around link */
  assert_int_equal(r.n, 1);
  assert_string_equal(r.links[0].name, "ici-0-x-");
  plat_cluster_destroy(c);
}

static const char *write_tmp(const char *text)
{
  static char path[64];
  snprintf(path, sizeof path, "/tmp/test_platforms_%d.json", (int)getpid());
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

static plat_cluster *load_spec_text(const char *text, int nodes)
{
  char arg[128];
  const char *p = write_tmp(text);
  if (nodes)
    snprintf(arg, sizeof arg, "%s:%d", p, nodes);
  else
    snprintf(arg, sizeof arg, "%s", p);
  plat_cluster *c = load(arg);
  unlink(p);
  return c;
}

/* 4 nodes, 1 GPU + 1 NIC each, radix-4 switches: 2 nodes per leaf, 2 spines. */
#define SMALL_TREE \
    "{\"name\":\"small\",\"nodes\":4,\"device\":\"H100-SXM\"," \
    "\"node\":{\"gpus\":1,\"intra\":{\"kind\":\"none\"},\"nics\":{\"count\":1,\"Gbps\":800," \
    "\"lat_us\":1}}," \
    "\"fabric\":{\"kind\":\"rail-fat-tree\",\"radix\":4,\"levels\":2,\"oversub\":[%g],\"switch_lat_us\":0}}"

/* A leaf's 2 up links (radix 4) are one link of their sum (adaptive routing
 * spreads a flow over both), at 1/o of it with oversub [o]. */
static void test_oversub__two_to_one_halves_leaf_uplinks(void **state)
{
  (void)state;
  char text[1024];
  for (int o = 1; o <= 2; o++) {
    snprintf(text, sizeof text, SMALL_TREE, (double)o);
    plat_cluster *c = load_spec_text(text, 0);
    plat_route r;
    route(c, 0, 2, &r); /* leaf 0 -> leaf 1 */
    assert_int_equal(r.n, 4);
    assert_true(r.links[0].bw_Bps == 100e9);
    assert_string_equal(r.links[1].name, "ft-g1.0-up");
    assert_string_equal(r.links[2].name, "ft-g1.1-down");
    assert_true(r.links[1].bw_Bps == 2 * 100e9 / o);
    assert_true(r.links[2].bw_Bps == 2 * 100e9 / o);
    route(c, 0, 1, &r); /* same leaf: no uplink */
    assert_int_equal(r.n, 2);
    assert_true(r.bw_Bps == 100e9);
    plat_cluster_destroy(c);
  }
}

/* Switch counts of dgx-h100 against the DGX SuperPOD reference architectures'
 * tables (leaves + spines + cores; 64-port NDR switches, 32-node SUs, 8
 * rails): 4 SU 32 + 16, 16 SU 128 + 128 + 64, 32 SU 256 + 256 + 128, 64 SU
 * 512 + 512 + 256.  A partial top level counts its core groups' switches as
 * cabled: 10 SLGs (1,280 nodes) 32 groups x ceil(10 x 32 / 64). */
static void test_summary__switch_counts_match_superpod_tables(void **state)
{
  (void)state;
  static const struct {
    int nodes;
    long switches;
  } rows[] = {
      {128, 32 + 16},
      {512, 128 + 128 + 64},
      {1024, 256 + 256 + 128},
      {1280, 320 + 320 + 32 * 5},
      {2048, 512 + 512 + 256},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char spec[32];
    snprintf(spec, sizeof spec, "dgx-h100:%d", rows[i].nodes);
    plat_cluster *c = load(spec);
    long got = plat_cluster_switch_count(c);
    if (got != rows[i].switches)
      fail_msg("%s: %ld switches, expected %ld", spec, got, rows[i].switches);
    plat_cluster_destroy(c);
  }
}

/* 40-port HDR switches (selene): a leaf has 20 nodes, an SU 8 rail leaves,
 * and a spine-leaf group the whole SUs that fit in 20 leaves: 2 (16
 * leaves).  selene:128 is 6.4 SUs: 7 x 8 = 56 leaves (the last SU's 8
 * built for its 8 nodes), 3.5 groups (the last, half filled, with its 20
 * spines counted whole: 80), and 20 core groups of ceil(4 groups x 16 up
 * links / 40) = 2 switches: 56 + 80 + 40.  Every rail is then alike: the route from GPU k of node a to GPU k of
 * node b crosses as many switches on all eight rails (filled leaf by leaf,
 * rails 4-7 of SU 2 sat under another group than its rails 0-3). */
static void test_route__selene_groups_whole_scalable_units(void **state)
{
  (void)state;
  plat_cluster *c = load("selene:128");
  assert_int_equal(c->fabric_levels, 3);
  assert_int_equal(c->fabric_radix_used[0], 20);
  assert_int_equal(c->fabric_radix_used[1], 16);
  assert_int_equal(c->fabric_radix_used[2], 4);
  assert_int_equal(plat_cluster_switch_count(c), 56 + 80 + 40);
  static const int pairs[][3] = {/* node a, node b, switches on every rail */
                                 {0, 1, 1},   {0, 20, 3},  {20, 40, 5}, {40, 60, 3},
                                 {45, 30, 5}, {0, 127, 5}, {100, 120, 5}};
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
    for (int k = 0; k < 8; k++) {
      plat_route r;
      route(c, pairs[i][0] * 8 + k, pairs[i][1] * 8 + k, &r);
      if (r.switches != pairs[i][2])
        fail_msg("node %d -> node %d on rail %d: %d switches, expected %d", pairs[i][0],
                 pairs[i][1], k, r.switches, pairs[i][2]);
    }
  plat_cluster_destroy(c);
}

static void test_route__dragonfly_takes_minimal_paths(void **state)
{
  (void)state;
  /* 2 NICs per router, 2 routers per group, 2 global links per router: 4 NICs a group */
  plat_cluster *c = load_spec_text(
      "{\"name\":\"df\",\"nodes\":16,\"device\":\"H100-SXM\","
      "\"node\":{\"gpus\":1,\"intra\":{\"kind\":\"none\"},\"nics\":{\"count\":1,\"Gbps\":400,"
      "\"lat_us\":1}},"
      "\"fabric\":{\"kind\":\"dragonfly\",\"routers_per_group\":2,\"nics_per_router\":2,"
      "\"global_links_per_router\":2,\"switch_lat_us\":0.1}}",
      0);
  static const struct {
    int a, b, n, switches;
  } rows[] = {
      {0, 1, 2, 1},  /* same router */
      {0, 2, 3, 2},  /* same group, other router */
      {0, 4, 3, 2},  /* group 0 -> 1: router 0 owns the global link, and group 1's router 0 too */
      {0, 15, 5, 4}, /* group 0 -> 3: via router 1 of group 0, then router 1 of group 3 -> 1 */
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    plat_route r;
    route(c, rows[i].a, rows[i].b, &r);
    if (r.n != rows[i].n || r.switches != rows[i].switches)
      fail_msg("%d -> %d: %d links %d switches, expected %d and %d", rows[i].a, rows[i].b, r.n,
               r.switches, rows[i].n, rows[i].switches);
  }
  plat_cluster_destroy(c);
}

/* ---- spec errors: exact text ------------------------------------------------ */
/* Board power and list price per device as docs/cost.md tabulates them
 * (NaN: not published / no price found). */
static void test_devices__power_and_price_match_docs(void **state)
{
  (void)state;
  static const struct {
    const char *name;
    double tdp_W, price;
  } rows[] = {
      {"V100-SXM2", 300, NAN},         {"A100-SXM4-40GB", 400, 2.745},
      {"A100-SXM4-80GB", 400, 5.121},  {"H100-SXM", 700, 6.88},
      {"H100-SXM-HBM2e-500W", 500, NAN},
      {"H200", 700, 7.912},            {"B200", 1000, 14.2416},
      {"GB200", NAN, NAN},             {"MI300X", 750, NAN},
      {"TPU-v4", NAN, NAN},            {"TPU-v5p", NAN, NAN},
      {"Ascend-910B", NAN, NAN},
  };
  plat_device *all = NULL;
  int n = 0;
  st_err err = {0};
  assert_int_equal(plat_device_list(&all, &n, &err), ST_OK);
  assert_int_equal(n, (int)(sizeof rows / sizeof rows[0]));
  for (int i = 0; i < n; i++) {
    assert_string_equal(all[i].name, rows[i].name);
    int tdp_ok = isnan(rows[i].tdp_W) ? isnan(all[i].tdp_W) : all[i].tdp_W == rows[i].tdp_W;
    int price_ok = isnan(rows[i].price) ? isnan(all[i].price_usd_per_gpu_hour)
                                        : all[i].price_usd_per_gpu_hour == rows[i].price;
    if (!tdp_ok || !price_ok)
      fail_msg("%s: TDP %g W, price %g USD/GPU-h; expected %g, %g", rows[i].name, all[i].tdp_W,
               all[i].price_usd_per_gpu_hour, rows[i].tdp_W, rows[i].price);
  }
  free(all);
}

/* A variant (devices.json "tuning"): the H100 that torchtitan's benchmarks
 * ran takes H100 SXM's parameter set and published attention rates, the
 * rates scaled by its bf16 peak over H100 SXM's (886.8 / 989.4); a GEMM
 * bound by math takes that ratio too, an elementwise op its own HBM. */
static void test_devices__variant_takes_its_tuning_at_its_clock(void **state)
{
  (void)state;
  st_err err = {0};
  plat_device v, h;
  assert_int_equal(plat_device_find("H100-SXM-HBM2e-500W", &v, &err), ST_OK);
  assert_int_equal(plat_device_find("H100-SXM", &h, &err), ST_OK);
  assert_string_equal(v.tuning, "H100-SXM");
  assert_string_equal(h.tuning, "");
  assert_true(fabs(v.clock_ratio - 886.8 / 989.4) < 1e-12);
  assert_true(h.clock_ratio == 1);
  assert_ptr_equal(plat_compute_params_for(&v), plat_compute_params_for(&h));
  double rv = plat_attn_published_rate(&v, WL_ATTN_FA2, 0, 1, 128, 4096);
  double rh = plat_attn_published_rate(&h, WL_ATTN_FA2, 0, 1, 128, 4096);
  assert_true(rh == 319e12); /* the FlashAttention-3 paper's FA2 causal cell, hd 128, 4k */
  assert_true(fabs(rv / rh - 886.8 / 989.4) < 1e-12);
  wl_op g = {.kind = WL_OP_COMPUTE, .sub = WL_CLASS_GEMM, .dtype = WL_DTYPE_BF16, .m = 8192,
             .n = 8192, .k = 8192, .batch = 1, .duration_s = -1};
  g.flops = 2.0 * g.m * g.n * g.k;
  g.bytes = 2.0 * (g.m * g.k + g.k * g.n + g.m * g.n);
  double lv = plat_compute_params_for(&v)->launch_s;
  assert_true(fabs((plat_compute_time(&v, &g) - lv) / (plat_compute_time(&h, &g) - lv) -
                   989.4 / 886.8) < 1e-9);
  wl_op e = {.kind = WL_OP_COMPUTE, .sub = WL_CLASS_ELEMENTWISE, .dtype = WL_DTYPE_BF16,
             .flops = 1e6, .bytes = 1e9, .duration_s = -1};
  assert_true(fabs((plat_compute_time(&v, &e) - lv) / (plat_compute_time(&h, &e) - lv) -
                   3350.0 / 2400.0) < 1e-9);
}

/* A variant's tuning must name another device of the same architecture that
 * is no variant itself: each error names the entry and what is wrong. */
static void test_devices__bad_tuning_is_named(void **state)
{
  (void)state;
  static const struct {
    const char *extra, *msg;
  } rows[] = {
      {"{\"name\":\"X\",\"arch\":\"hopper\",\"tuning\":\"Nope\",\"peak_TFLOPS\":{\"bf16\":900},"
       "\"hbm_GB\":80,\"hbm_GBps\":2000}",
       "devices[2].tuning: no other device is named 'Nope'"},
      {"{\"name\":\"X\",\"arch\":\"ampere\",\"tuning\":\"H100-SXM\",\"peak_TFLOPS\":{\"bf16\":900},"
       "\"hbm_GB\":80,\"hbm_GBps\":2000}",
       "devices[2].tuning: 'H100-SXM' is hopper, this device ampere: a variant keeps its "
       "architecture"},
      {"{\"name\":\"X\",\"arch\":\"hopper\",\"tuning\":\"H100-SXM-HBM2e-500W\",\"peak_TFLOPS\":"
       "{\"bf16\":900},\"hbm_GB\":80,\"hbm_GBps\":2000}",
       "devices[2].tuning: 'H100-SXM-HBM2e-500W' is itself a variant (of 'H100-SXM'): name "
       "that one"},
      {"{\"name\":\"X\",\"arch\":\"hopper\",\"tuning\":\"H100-SXM\",\"peak_TFLOPS\":{\"fp32\":9},"
       "\"hbm_GB\":80,\"hbm_GBps\":2000}",
       "devices[2].tuning: both devices need a bf16 peak to scale the rates by"},
  };
  /* a table of its own: the two H100 entries, then the row's */
  static const char *const head =
      "{\"devices\":[{\"name\":\"H100-SXM\",\"arch\":\"hopper\",\"peak_TFLOPS\":{\"bf16\":989.4},"
      "\"hbm_GB\":80,\"hbm_GBps\":3350},{\"name\":\"H100-SXM-HBM2e-500W\",\"arch\":\"hopper\","
      "\"tuning\":\"H100-SXM\",\"peak_TFLOPS\":{\"bf16\":886.8},\"hbm_GB\":96,"
      "\"hbm_GBps\":2400},";
  char dir[] = "/tmp/st_tuning_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/devices.json", dir);
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%s%s]}", head, rows[i].extra);
    fclose(f);
    setenv("SIMTRAIN_PLATFORMS_DATA", dir, 1);
    plat_device *all = NULL;
    int n = 0;
    st_err err = {0};
    int rc = plat_device_list(&all, &n, &err);
    unsetenv("SIMTRAIN_PLATFORMS_DATA");
    free(all);
    assert_int_equal(rc, ST_EINPUT);
    if (!strstr(err.msg, rows[i].msg))
      fail_msg("row %zu: '%s' does not contain '%s'", i, err.msg, rows[i].msg);
  }
  unlink(path);
  rmdir(dir);
}

/* A node's non-GPU power: the preset's (DGX system maximum less its GPUs'
 * TDP), else the GPUs' TDP x 4,600 / 5,600 (a DGX H100's ratio). */
static void test_presets__host_power_is_system_max_less_gpus(void **state)
{
  (void)state;
  static const struct {
    const char *arg;
    double host_W;
  } rows[] = {
      {"dgx-h100", 10200 - 8 * 700},      {"h100-superpod", 10200 - 8 * 700},
      {"hgx-h200", 10200 - 8 * 700},      {"dgx-a100", 6500 - 8 * 400},
      {"selene", 6500 - 8 * 400},         {"dgx-b200", 14300 - 8 * 1000},
      {"dgx-v100", 3500 - 8 * 300},       {"node8", 8 * 700 * 4600.0 / 5600},
      {"mi300x", 8 * 750 * 4600.0 / 5600},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    plat_cluster *c = load(rows[i].arg);
    if (fabs(c->host_power_W - rows[i].host_W) > 1e-9)
      fail_msg("%s: host power %.17g W, expected %.17g", rows[i].arg, c->host_power_W,
               rows[i].host_W);
    plat_cluster_destroy(c);
  }
  /* no TDP, no default */
  plat_cluster *c = load("tpu-v4");
  assert_true(isnan(c->host_power_W));
  plat_cluster_destroy(c);
  /* a spec's own value, 0 included */
  c = load_spec_text("{\"name\":\"a\",\"device\":\"A100-SXM4-80GB\",\"node\":{\"gpus\":1,"
                     "\"host_power_W\":0,\"intra\":{\"kind\":\"none\"}},"
                     "\"fabric\":{\"kind\":\"switch\"}}",
                     0);
  assert_true(c->host_power_W == 0);
  plat_cluster_destroy(c);
  c = load_spec_text("{\"name\":\"a\",\"device\":\"A100-SXM4-80GB\",\"node\":{\"gpus\":1,"
                     "\"intra\":{\"kind\":\"none\"}},\"fabric\":{\"kind\":\"switch\"}}",
                     0);
  if (fabs(c->host_power_W - 400 * 4600.0 / 5600) > 1e-9)
    fail_msg("default host power %.17g W", c->host_power_W);
  plat_cluster_destroy(c);
}

static void test_spec__bad_input_is_named(void **state)
{
  (void)state;
  static const struct {
    const char *arg;
    const char *msg;
  } rows[] = {
      {"nope:4", "cluster 'nope:4': no such preset (known: node8, dgx-v100, dgx-a100, selene, "
                 "dgx-h100, h100-superpod, hgx-h200, dgx-b200, gb200-nvl72, mi300x, tpu-v4, "
                 "tpu-v5p, ascend-910b; or give a FILE.json or FILE.xml)"},
      {"dgx-h100:0", "cluster 'dgx-h100:0': node count '0' is not a whole number in 1..1048576"},
      {"dgx-h100:x", "cluster 'dgx-h100:x': node count 'x' is not a whole number in 1..1048576"},
      {"tpu-v4:3", "preset 'tpu-v4': 12 chips do not make whole 4x4x4 cubes (nodes x gpus must be "
                   "a multiple of 64)"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    st_err err = {0};
    plat_cluster *c = NULL;
    assert_int_equal(plat_cluster_load(rows[i].arg, &c, &err), ST_EINPUT);
    assert_null(c);
    assert_string_equal(err.msg, rows[i].msg);
  }
  static const struct {
    const char *text;
    const char *msg; /* after "spec '<path>': " */
  } specs[] = {
      {"{\"name\":\"a\",\"device\":\"H100-SXM\",\"node\":{\"gpus\":8,\"intra\":{\"kind\":"
       "\"nvswitch\",\"links_per_gpu\":18,\"link_GBps\":25,\"lat_us\":0.5,\"colour\":1}},"
       "\"fabric\":{\"kind\":\"switch\"}}",
       "node.intra: key 'colour' is unknown (see docs/platforms.md)"},
      {"{\"name\":\"a\",\"device\":\"H100-SXM\",\"node\":{\"gpus\":8,\"intra\":{\"kind\":"
       "\"nvswitch\",\"links_per_gpu\":18,\"link_GBps\":25,\"lat_us\":0.5}},"
       "\"fabric\":{\"kind\":\"ring\"}}",
       "fabric: 'kind' is 'ring', expected one of switch, rail-fat-tree, fat-tree, dragonfly, "
       "torus"},
      {"{\"name\":\"a\",\"device\":\"H100-SXM\",\"node\":{\"gpus\":8,\"intra\":{\"kind\":"
       "\"nvswitch\",\"links_per_gpu\":18,\"link_GBps\":-25,\"lat_us\":0.5}},"
       "\"fabric\":{\"kind\":\"switch\"}}",
       "node.intra: 'link_GBps' is -25; it must be greater than 0"},
      {"{\"name\":\"a\",\"device\":\"H100-SXM\",\"node\":{\"gpus\":8,\"intra\":{\"kind\":"
       "\"nvswitch\",\"links_per_gpu\":18,\"link_GBps\":25,\"lat_us\":0.5}},"
       "\"fabric\":{\"kind\":\"switch\",\"radix\":64}}",
       "fabric: key 'radix' does not apply to a fabric of kind switch"},
      {"{\"name\":\"a\",\"nodes\":2,\"device\":\"H100-SXM\",\"node\":{\"gpus\":8,\"intra\":{"
       "\"kind\":"
       "\"nvswitch\",\"links_per_gpu\":18,\"link_GBps\":25,\"lat_us\":0.5}},"
       "\"fabric\":{\"kind\":\"switch\"}}",
       "2 nodes but node.nics is missing"},
      {"{\"name\":\"a\",\"device\":\"Z80\",\"node\":{\"gpus\":8},\"fabric\":{\"kind\":\"switch\"}}",
       "key 'device': device 'Z80' is unknown (known: V100-SXM2, A100-SXM4-40GB, A100-SXM4-80GB, "
       "H100-SXM, H100-SXM-HBM2e-500W, H200, B200, GB200, MI300X, TPU-v4, TPU-v5p, "
       "Ascend-910B)"},
      {"{\"name\":\"a\",\n\"device\":}", "JSON syntax error near line 2, column 10"},
      {"{\"name\":\"a\"} x", "unexpected text after the JSON document at line 1, column 14"},
      {"{\"name\":\"a\",\"name\":\"b\"}", "key 'name' appears twice"},
      {"{\"name\":\"a\",\"device\":\"H100-SXM\",\"fabric\":{\"kind\":\"switch\"}}",
       "key 'node' is missing"},
      {"{\"name\":\"a\",\"device\":\"H100-SXM\",\"node\":3}",
       "node: is a number, expected an object"},
      {"{\"name\":\"a\",\"device\":\"H100-SXM\",\"node\":{\"gpus\":8,\"intra\":{\"kind\":"
       "\"nvswitch\",\"links_per_gpu\":18,\"link_GBps\":\"25\",\"lat_us\":0.5}},"
       "\"fabric\":{\"kind\":\"switch\"}}",
       "node.intra: 'link_GBps' is a string, expected a number"},
      {"{\"name\":\"a\",\"device\":\"H100-SXM\",\"node\":{\"gpus\":2.5}}",
       "node: 'gpus' is 2.5, not a whole number"},
      {"{\"name\":\"a\",\"device\":\"H100-SXM\",\"node\":{\"gpus\":8,\"intra\":{\"kind\":"
       "\"nvswitch\",\"links_per_gpu\":18,\"link_GBps\":25,\"lat_us\":0.5,\"nvls\":1}},"
       "\"fabric\":{\"kind\":\"switch\"}}",
       "node.intra: 'nvls' is a number, expected true or false"},
      {"{\"name\":\"a\",\"device\":\"H100-SXM\",\"node\":{\"gpus\":8,\"intra\":{\"kind\":"
       "\"nvswitch\",\"links_per_gpu\":18,\"link_GBps\":25,\"lat_us\":0.5}},"
       "\"fabric\":{\"kind\":\"fat-tree\",\"radix\":64,\"oversub\":[2,0.5]}}",
       "fabric.oversub[1]: is 0.5, below the smallest allowed 1"},
      {"{\"name\":\"a\",\"device\":\"TPU-v4\",\"node\":{\"gpus\":4,\"intra\":{\"kind\":\"none\"}},"
       "\"fabric\":{\"kind\":\"torus\",\"dims\":[4,0],\"link_GBps\":50,\"lat_us\":1}}",
       "fabric.dims[1]: size 0 is outside 1..65536"},
      {"{\"name\":\"a\",\"device\":\"H100-SXM\",\"node\":{\"gpus\":8,\"host_power_W\":-1,"
       "\"intra\":{\"kind\":\"none\"}},\"fabric\":{\"kind\":\"switch\"}}",
       "node: 'host_power_W' is -1, below the smallest allowed 0"},
      {"{\"name\":\"a\",\"device\":\"H100-SXM\",\"node\":{\"gpus\":8,\"host_power_W\":\"4.6kW\","
       "\"intra\":{\"kind\":\"none\"}},\"fabric\":{\"kind\":\"switch\"}}",
       "node: 'host_power_W' is a string, expected a number"},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    const char *p = write_tmp(specs[i].text);
    st_err err = {0};
    plat_cluster *c = NULL;
    assert_int_equal(plat_cluster_load(p, &c, &err), ST_EINPUT);
    char want[1024];
    snprintf(want, sizeof want, "spec '%s': %s", p, specs[i].msg);
    assert_string_equal(err.msg, want);
    unlink(p);
  }
}

/* ---- SimGrid: a forked child per engine ---------------------------------- */
typedef void (*child_fn)(void);
typedef struct child_job {
  child_fn fn;
} child_job;

static int child_task(void *u, int index, st_buf *reply, st_err *err)
{
  (void)index;
  (void)reply;
  (void)err;
  ((const child_job *)u)->fn(); /* a failed CHECK ends the child without an answer */
  return ST_OK;
}

static void in_child(child_fn fn)
{
  child_job j = {fn};
  char *data = NULL;
  size_t len;
  st_err err = {0};
  int rc = drv_isolated(child_task, &j, 0, &data, &len, &err);
  free(data);
  if (rc)
    fail_msg("child failed: %s", err.msg);
}

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "child: %s:%d: ", __FILE__, __LINE__);                                       \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      _exit(1);                                                                                    \
    }                                                                                              \
  } while (0)

static sg_host_t *child_hosts;
static plat_cluster *child_cluster;

static void engine_start(const char *arg)
{
  int argc = 4;
  char a0[] = "test", a1[] = "--cfg=host/model:ptask_L07", a2[] = "--cfg=network/TCP-gamma:0",
       a3[] = "--log=root.thres:critical";
  char *argv[] = {a0, a1, a2, a3, NULL};
  simgrid_init(&argc, argv);
  st_err err = {0};
  CHECK(!plat_cluster_load(arg, &child_cluster, &err), "%s", err.msg);
  child_hosts = calloc((size_t)child_cluster->num_gpus, sizeof *child_hosts);
  CHECK(!plat_cluster_build(child_cluster, (void **)child_hosts, &err), "%s", err.msg);
}

/* Every ordered pair: SimGrid's route = plat_route_get's (names, latency, bandwidth). */
static void compare_all_routes(const plat_cluster *c, const sg_host_t *hosts, int skip_switch_hops)
{
  plat_route r;
  xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
  for (int a = 0; a < c->num_gpus; a++)
    for (int b = 0; b < c->num_gpus; b++) {
      if (a == b)
        continue;
      plat_route_get(c, a, b, &r, NULL);
      xbt_dynar_reset(links);
      sg_host_get_route(hosts[a], hosts[b], links);
      int n = 0;
      for (unsigned long i = 0; i < xbt_dynar_length(links); i++) {
        const char *nm = sg_link_get_name(xbt_dynar_get_as(links, i, sg_link_t));
        if (skip_switch_hops && !strncmp(nm, "switch-hop-", 11))
          continue;
        CHECK(n < r.n && !strcmp(nm, r.links[n].name), "%d -> %d: link %d is %s", a, b, n, nm);
        n++;
      }
      CHECK(n == r.n, "%d -> %d: %d links in SimGrid, %d expected", a, b, n, r.n);
      double lat = sg_host_get_route_latency(hosts[a], hosts[b]);
      CHECK(fabs(lat - r.latency_s) <= 1e-12 * r.latency_s + 1e-18, "%d -> %d: latency %g vs %g",
            a, b, lat, r.latency_s);
      double bw = sg_host_get_route_bandwidth(hosts[a], hosts[b]);
      CHECK(bw == r.bw_Bps, "%d -> %d: bandwidth %g vs %g", a, b, bw, r.bw_Bps);
    }
  xbt_dynar_free(&links);
}

static const char *route_arg;
static void child_routes(void)
{
  engine_start(route_arg);
  compare_all_routes(child_cluster, child_hosts, 0);
}

static void test_simgrid__routes_match_plat_route(void **state)
{
  (void)state;
  static const char *const args[] = {"dgx-h100:5", "dgx-v100:3", "tpu-v4:16", "mi300x:2",
                                     "selene:3", "gb200-nvl72:2",
                                     ST_SOURCE_DIR "/examples/clusters/mixed-a100-h100.json"};
  for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) {
    route_arg = args[i];
    in_child(child_routes);
  }
}

static char xml_path[64];
static void child_xml(void)
{
  /* the written XML, loaded by SimGrid, routes like the in-memory platform */
  engine_start(xml_path);
  st_err err = {0};
  plat_cluster *spec = NULL;
  CHECK(!plat_cluster_load("dgx-h100:3", &spec, &err), "%s", err.msg);
  CHECK(child_cluster->num_gpus == 24 && child_cluster->gpus_per_node == 8, "xml: %d GPUs, %d per node",
        child_cluster->num_gpus, child_cluster->gpus_per_node);
  compare_all_routes(spec, child_hosts, 1);
}

static void test_xml__written_platform_routes_like_the_built_one(void **state)
{
  (void)state;
  plat_cluster *c = load("dgx-h100:3");
  snprintf(xml_path, sizeof xml_path, "/tmp/test_platforms_%d.xml", (int)getpid());
  FILE *f = fopen(xml_path, "w");
  st_err err = {0};
  assert_int_equal(plat_cluster_write_xml(c, f, &err), 0);
  fclose(f);
  plat_cluster_destroy(c);
  in_child(child_xml);
  unlink(xml_path);
}

/* ptasks: one actor runs them and records the clock */
static double ptask_times[4];
static int ptask_case;
static sg_exec_t ptask(int a, int b, double bytes)
{
  sg_host_t h[2] = {child_hosts[a], child_hosts[b]};
  double m[4] = {0, bytes, 0, 0};
  sg_exec_t e = sg_actor_parallel_exec_init(2, h, NULL, m);
  sg_exec_start(e);
  return e;
}

static void driver(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  const double S = 1e9;
  if (ptask_case == 0) { /* one flow, cross-node same rail, then cross-rail */
    double t0 = simgrid_get_clock();
    sg_exec_wait(ptask(0, 8, S));
    ptask_times[0] = simgrid_get_clock() - t0;
    t0 = simgrid_get_clock();
    sg_exec_wait(ptask(0, 9, S));
    ptask_times[1] = simgrid_get_clock() - t0;
  } else if (ptask_case == 1) { /* two flows out of GPU 0's NIC (rail 0) */
    double t0 = simgrid_get_clock();
    sg_exec_t e1 = ptask(0, 8, S), e2 = ptask(0, 16, S);
    sg_exec_wait(e1);
    ptask_times[0] = simgrid_get_clock() - t0;
    sg_exec_wait(e2);
    ptask_times[1] = simgrid_get_clock() - t0;
  } else { /* all-to-all from leaf 0 (GPUs 0,1) to leaf 1 (GPUs 2,3) as one ptask */
    sg_host_t h[4] = {child_hosts[0], child_hosts[1], child_hosts[2], child_hosts[3]};
    double m[16] = {0};
    for (int i = 0; i < 2; i++)
      for (int j = 2; j < 4; j++)
        m[i * 4 + j] = S;
    double t0 = simgrid_get_clock();
    sg_exec_t e = sg_actor_parallel_exec_init(4, h, NULL, m);
    sg_exec_start(e);
    sg_exec_wait(e);
    ptask_times[0] = simgrid_get_clock() - t0;
  }
}

static void child_ptask_one_flow(void)
{
  engine_start("dgx-h100:3");
  ptask_case = 0;
  sg_actor_create("driver", child_hosts[0], driver, 0, NULL);
  simgrid_run();
  /* closed form: latency + bytes / bandwidth; same rail: 2 NIC links of 1 us, one 0.13 us switch */
  double same = 2e-6 + 0.13e-6 + 1e9 / 50e9;
  double cross = 2e-6 + 3 * 0.13e-6 + 1e9 / 50e9;
  CHECK(fabs(ptask_times[0] - same) < 1e-9, "same rail: %.12g s, expected %.12g", ptask_times[0], same);
  CHECK(fabs(ptask_times[1] - cross) < 1e-9, "cross rail: %.12g s, expected %.12g", ptask_times[1],
        cross);
}

static void child_ptask_shared_rail(void)
{
  engine_start("dgx-h100:3");
  ptask_case = 1;
  sg_actor_create("driver", child_hosts[0], driver, 0, NULL);
  simgrid_run();
  double t = 2e-6 + 0.13e-6 + 2 * 1e9 / 50e9; /* each flow at half the NIC rate */
  CHECK(fabs(ptask_times[0] - t) < 1e-9 && fabs(ptask_times[1] - t) < 1e-9,
        "shared rail: %.12g and %.12g s, expected %.12g", ptask_times[0], ptask_times[1], t);
}

static void test_ptask__two_hosts_take_latency_plus_bytes_over_bandwidth(void **state)
{
  (void)state;
  in_child(child_ptask_one_flow);
}

static void test_ptask__two_flows_on_one_rail_get_half_each(void **state)
{
  (void)state;
  in_child(child_ptask_shared_rail);
}

static double oversub_value;
static void child_alltoall(void)
{
  char text[1024];
  snprintf(text, sizeof text, SMALL_TREE, oversub_value);
  char path[64];
  snprintf(path, sizeof path, "/tmp/test_platforms_ov_%d.json", (int)getpid());
  FILE *f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
  engine_start(path);
  unlink(path);
  ptask_case = 2;
  sg_actor_create("driver", child_hosts[0], driver, 0, NULL);
  simgrid_run();
  /* Each NIC sends (or receives) 2 S: 2S / 100 GB/s.  Leaf 0's up links
   * carry the four flows to leaf 1: 4 S at 2 x 100/o GB/s.  A ptask moves at
   * its most loaded link's pace. */
  double S = 1e9, B = 100e9, o = oversub_value;
  double t = 2e-6 + fmax(2 * S / B, 4 * S / (2 * B / o));
  CHECK(fabs(ptask_times[0] - t) < 1e-9, "oversub %g: %.12g s, expected %.12g", o, ptask_times[0], t);
}

static void test_oversub__cross_leaf_alltoall_slows_accordingly(void **state)
{
  (void)state;
  oversub_value = 1;
  in_child(child_alltoall);
  oversub_value = 2;
  in_child(child_alltoall);
}

static void test_xml__user_platform_follows_the_naming_rule(void **state)
{
  (void)state;
  char path[64];
  snprintf(path, sizeof path, "/tmp/test_platforms_user_%d.xml", (int)getpid());
  FILE *f = fopen(path, "w");
  fputs("<?xml version='1.0'?>\n<platform version=\"4.1\">\n<zone id=\"z\" routing=\"Full\">\n"
        "<prop id=\"simtrain.gpus_per_node\" value=\"4\"/>\n"
        "<cluster id=\"c\" prefix=\"gpu-\" suffix=\"\" radical=\"0-7\" speed=\"1Gf\" bw=\"1GBps\" "
        "lat=\"1us\"/>\n</zone></platform>\n",
        f);
  fclose(f);
  plat_cluster *c = load(path);
  assert_int_equal(c->num_gpus, 8);
  assert_int_equal(c->num_nodes, 2);
  assert_int_equal(c->fabric_kind, PLAT_FABRIC_XML);
  plat_cluster_destroy(c);
  f = fopen(path, "w");
  fputs("<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">\n<host id=\"gpu-0\" "
        "speed=\"1f\"/>\n<host id=\"node-1\" speed=\"1f\"/></zone></platform>\n",
        f);
  fclose(f);
  st_err err = {0};
  assert_int_equal(plat_cluster_load(path, &c, &err), ST_EINPUT);
  char want[256];
  snprintf(want, sizeof want,
           "platform '%s': line 3: host 'node-1' does not follow the naming rule gpu-<index>", path);
  assert_string_equal(err.msg, want);
  unlink(path);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_presets__match_documented_values),
      cmocka_unit_test(test_presets__every_name_loads_at_its_default_size),
      cmocka_unit_test(test_node8__keeps_the_first_version_numbers),
      cmocka_unit_test(test_route__dgx_h100_same_node_crosses_nvswitch_only),
      cmocka_unit_test(test_route__dgx_h100_same_rail_crosses_its_leaf_only),
      cmocka_unit_test(test_route__dgx_h100_cross_rail_crosses_the_spine),
      cmocka_unit_test(test_route__tpu_v4_follows_dimension_order_with_wraparound),
      cmocka_unit_test(test_route__dragonfly_takes_minimal_paths),
      cmocka_unit_test(test_oversub__two_to_one_halves_leaf_uplinks),
      cmocka_unit_test(test_summary__switch_counts_match_superpod_tables),
      cmocka_unit_test(test_route__selene_groups_whole_scalable_units),
      cmocka_unit_test(test_devices__power_and_price_match_docs),
      cmocka_unit_test(test_devices__variant_takes_its_tuning_at_its_clock),
      cmocka_unit_test(test_devices__bad_tuning_is_named),
      cmocka_unit_test(test_presets__host_power_is_system_max_less_gpus),
      cmocka_unit_test(test_spec__bad_input_is_named),
      cmocka_unit_test(test_xml__user_platform_follows_the_naming_rule),
      cmocka_unit_test(test_simgrid__routes_match_plat_route),
      cmocka_unit_test(test_xml__written_platform_routes_like_the_built_one),
      cmocka_unit_test(test_ptask__two_hosts_take_latency_plus_bytes_over_bandwidth),
      cmocka_unit_test(test_ptask__two_flows_on_one_rail_get_half_each),
      cmocka_unit_test(test_oversub__cross_leaf_alltoall_slows_accordingly),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
