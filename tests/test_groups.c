/* test_groups.c — node groups: a cluster of nodes of more than one kind.
 *
 * Expected numbers are the vendors' figures of each group's node written out
 * here (DGX H100: 18 NVLink4 x 25 GB/s, 8 x 400 Gb/s NDR; DGX A100: 12
 * NVLink3 x 25 GB/s, 8 x 200 Gb/s HDR), never the code under test's.
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

#include "platform.h"

/* 2 DGX H100 nodes (GPUs 0-15) then 2 DGX A100 nodes (GPUs 16-31) on one
 * NDR rail-optimised fat-tree of 64-port switches. */
#define MIXED ST_SOURCE_DIR "/examples/clusters/mixed-a100-h100.json"

static plat_cluster *load(const char *arg)
{
  st_err err = {0};
  plat_cluster *c = NULL;
  int rc = plat_cluster_load(arg, &c, &err);
  if (rc)
    fail_msg("%s: %s", arg, err.msg);
  return c;
}

static const char *write_tmp(const char *text)
{
  static char path[64];
  snprintf(path, sizeof path, "/tmp/test_groups_%d.json", (int)getpid());
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

static void test_groups__nodes_and_devices_in_gpu_order(void **state)
{
  (void)state;
  plat_cluster *c = load(MIXED);
  assert_int_equal(c->num_groups, 2);
  assert_int_equal(c->num_nodes, 4);
  assert_int_equal(c->num_gpus, 32);
  assert_string_equal(c->groups[0].name, "h100");
  assert_string_equal(c->groups[1].name, "a100");
  assert_int_equal(c->groups[1].first_node, 2);
  static const struct {
    int gpu, group;
    const char *device;
  } rows[] = {{0, 0, "H100-SXM"}, {15, 0, "H100-SXM"}, {16, 1, "A100-SXM4-80GB"},
              {31, 1, "A100-SXM4-80GB"}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    assert_int_equal(plat_gpu_group(c, rows[i].gpu), rows[i].group);
    assert_string_equal(plat_gpu_device(c, rows[i].gpu)->name, rows[i].device);
  }
  /* the cluster's own fields are group 0's */
  assert_string_equal(c->device.name, "H100-SXM");
  assert_true(fabs(c->intra_Bps - 18 * 25e9) < 1);
  plat_cluster_destroy(c);
}

/* Each link is worth what its node's group says. */
static void test_groups__links_take_their_node_groups_rates(void **state)
{
  (void)state;
  plat_cluster *c = load(MIXED);
  plat_route r;
  st_err err = {0};
  /* inside an H100 node: NVSwitch up 450 GB/s, down 450 GB/s */
  assert_int_equal(plat_route_get(c, 0, 1, &r, &err), 0);
  assert_int_equal(r.n, 2);
  assert_true(fabs(r.links[0].bw_Bps - 450e9) < 1 && fabs(r.links[1].bw_Bps - 450e9) < 1);
  /* inside an A100 node: 12 x 25 = 300 GB/s */
  assert_int_equal(plat_route_get(c, 16, 17, &r, &err), 0);
  assert_true(fabs(r.links[0].bw_Bps - 300e9) < 1 && fabs(r.links[1].bw_Bps - 300e9) < 1);
  /* H100 GPU 0 (rail 0) to A100 GPU 16 (rail 0): NDR NIC up 400/8 = 50 GB/s,
   * the shared leaf, HDR NIC down 200/8 = 25 GB/s; the route's bandwidth is
   * the HDR NIC's */
  assert_int_equal(plat_route_get(c, 0, 16, &r, &err), 0);
  assert_int_equal(r.n, 2);
  assert_int_equal(r.links[0].kind, PLAT_LINK_NIC);
  assert_true(fabs(r.links[0].bw_Bps - 50e9) < 1);
  assert_true(fabs(r.links[1].bw_Bps - 25e9) < 1);
  assert_true(fabs(r.bw_Bps - 25e9) < 1);
  /* bisection: half the NICs' capacity, (16 x 50 + 16 x 25) / 2 GB/s */
  assert_true(fabs(plat_cluster_bisection_Bps(c) - 600e9) < 1e3);
  plat_cluster_destroy(c);
}

/* A communicator's view is the least of its members' groups. */
static void test_groups__view_is_what_all_members_share(void **state)
{
  (void)state;
  plat_cluster *c = load(MIXED);
  plat_cluster v;
  int32_t h[] = {0, 8}, mix[] = {0, 8, 16, 24}, a[] = {16, 24};
  plat_cluster_view(c, h, 2, &v);
  assert_string_equal(v.device.name, "H100-SXM");
  assert_true(fabs(v.nic_Bps - 50e9) < 1 && v.nvls);
  plat_cluster_view(c, a, 2, &v);
  assert_string_equal(v.device.name, "A100-SXM4-80GB");
  assert_true(fabs(v.intra_Bps - 300e9) < 1 && !v.nvls);
  plat_cluster_view(c, mix, 4, &v);
  assert_string_equal(v.device.name, "A100-SXM4-80GB"); /* the lower peak */
  assert_true(fabs(v.nic_Bps - 25e9) < 1);
  assert_true(fabs(v.intra_Bps - 300e9) < 1);
  assert_false(v.nvls); /* the A100 nodes have no NVLink SHARP */
  plat_cluster_destroy(c);
}

static double one(const plat_device *d, void *u)
{
  (void)d;
  (void)u;
  return 1;
}

/* Sums over the job's GPUs: 16 H100 at 700 W and 16 A100 at 400 W. */
static void test_groups__sums_over_the_jobs_gpus(void **state)
{
  (void)state;
  plat_cluster *c = load(MIXED);
  assert_true(fabs(plat_gpus_sum(c, 32, plat_dev_tdp, NULL) - (16 * 700 + 16 * 400)) < 1e-9);
  assert_true(fabs(plat_gpus_sum(c, 20, plat_dev_tdp, NULL) - (16 * 700 + 4 * 400)) < 1e-9);
  assert_true(fabs(plat_gpus_sum(c, 8, one, NULL) - 8) < 1e-12);
  int dt = WL_DTYPE_BF16; /* 989.4 and 312 TFLOP/s dense bf16 */
  assert_true(fabs(plat_gpus_min(c, 32, plat_dev_peak, &dt) - 312e12) < 1e3);
  assert_true(fabs(plat_gpus_min(c, 16, plat_dev_peak, &dt) - 989.4e12) < 1e3);
  plat_cluster_destroy(c);
}

static void test_groups__bad_specs_are_named(void **state)
{
  (void)state;
#define FAB "\"fabric\":{\"kind\":\"rail-fat-tree\",\"radix\":64}"
#define NODE8 "\"node\":{\"gpus\":8,\"intra\":{\"kind\":\"nvswitch\",\"links_per_gpu\":18," \
              "\"link_GBps\":25,\"lat_us\":0.5},\"nics\":{\"count\":8,\"Gbps\":400,\"lat_us\":1}}"
  static const struct {
    const char *text, *msg;
  } specs[] = {
      {"{\"name\":\"m\",\"groups\":[{\"nodes\":2,\"preset\":\"dgx-h100\"},{\"nodes\":2," NODE8
       "}]," FAB "}",
       "groups[1]: key 'device' is missing (give the group a device, a preset or the spec a "
       "top-level device)"},
      {"{\"name\":\"m\",\"groups\":[{\"nodes\":2,\"device\":\"H100-SXM\"}]," FAB "}",
       "groups[0]: key 'node' is missing (give the group a node, a preset or the spec a top-level "
       "node)"},
      {"{\"name\":\"m\",\"groups\":[{\"preset\":\"dgx-h100\"}]," FAB "}",
       "groups[0]: key 'nodes' is missing"},
      {"{\"name\":\"m\",\"groups\":[]," FAB "}", "groups: is empty, expected an array of one or "
                                                 "more node groups"},
      {"{\"name\":\"m\",\"nodes\":4,\"groups\":[{\"nodes\":2,\"preset\":\"dgx-h100\"}]," FAB "}",
       "key 'nodes' cannot stand beside 'groups': each group has its own node count"},
      {"{\"name\":\"m\",\"groups\":[{\"nodes\":2,\"preset\":\"dgx-h200\"}]," FAB "}",
       "groups[0].preset: 'preset' is 'dgx-h200', not a built-in preset (see `simtrain platform "
       "--list`)"},
      {"{\"name\":\"m\",\"groups\":[{\"nodes\":2,\"preset\":\"dgx-h100\",\"gpus\":4}]," FAB "}",
       "groups[0]: key 'gpus' is unknown (see docs/platforms.md)"},
      {"{\"name\":\"m\",\"groups\":[{\"nodes\":2,\"preset\":\"dgx-h100\"},{\"nodes\":2,"
       "\"device\":\"B300\"," NODE8 "}]," FAB "}",
       "groups[1]: key 'device': device 'B300' is unknown"},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    const char *p = write_tmp(specs[i].text);
    st_err err = {0};
    plat_cluster *c = NULL;
    assert_int_equal(plat_cluster_load(p, &c, &err), ST_EINPUT);
    assert_null(c);
    char want[1024];
    snprintf(want, sizeof want, "spec '%s': %s", p, specs[i].msg);
    if (strncmp(err.msg, want, strlen(want)))
      fail_msg("spec %zu:\n  got  %s\n  want %s", i, err.msg, want);
    unlink(p);
  }
  /* a node count after the name cannot resize a spec of groups */
  const char *p = write_tmp("{\"name\":\"m\",\"groups\":[{\"nodes\":2,\"preset\":\"dgx-h100\"}],"
                            FAB "}");
  char arg[128], want[256];
  snprintf(arg, sizeof arg, "%s:8", p);
  st_err err = {0};
  plat_cluster *c = NULL;
  assert_int_equal(plat_cluster_load(arg, &c, &err), ST_EINPUT);
  snprintf(want, sizeof want, "spec '%s': a spec with groups has its node count per group; ':8' "
                              "cannot change it", p);
  assert_string_equal(err.msg, want);
  unlink(p);
}

/* The route s -> d: n links named names[0..n-1] (NULL: not checked), its
 * bandwidth bw. */
static void expect_route(const plat_cluster *c, int s, int d, int n, const char *const *names,
                         double bw, plat_route *r)
{
  st_err err = {0};
  assert_int_equal(plat_route_get(c, s, d, r, &err), 0);
  assert_int_equal(r->n, n);
  for (int i = 0; i < n; i++)
    if (names[i])
      assert_string_equal(r->links[i].name, names[i]);
  assert_true(fabs(r->bw_Bps - bw) < 1);
}

/* Groups of unlike node shapes: a DGX H100 (NVSwitch, 8 x 400 Gb/s NDR, no
 * PCIe modelled) then a DGX-1 (V100 hybrid cube-mesh of 25 GB/s NVLink2
 * lanes, 4 x 100 Gb/s EDR, one per GPU pair, behind PCIe gen3 x16 of 16
 * GB/s) on one switch. */
static const char *shapes_spec(void)
{
  return write_tmp("{\"name\":\"shapes\",\"groups\":[{\"name\":\"h100\",\"nodes\":1,"
                   "\"preset\":\"dgx-h100\"},{\"name\":\"v100\",\"nodes\":1,\"preset\":"
                   "\"dgx-v100\"}],\"fabric\":{\"kind\":\"switch\",\"switch_lat_us\":0.1}}");
}

static void test_groups__node_shapes_differ(void **state)
{
  (void)state;
  const char *p = shapes_spec();
  plat_cluster *c = load(p);
  unlink(p);
  /* the fabric has the widest node's 8 ports per node */
  assert_int_equal(c->nics_per_node, 8);
  assert_int_equal(plat_node_nics(c, 0), 8);
  assert_int_equal(plat_node_nics(c, 1), 4);
  assert_int_equal(plat_node_intra_kind(c, 1), PLAT_INTRA_CUBEMESH);
  /* links SimGrid gets: H100 16 NVSwitch + 16 NIC, V100 8 x 4 cube-mesh
   * lanes + 16 PCIe + 4 x 2 NIC */
  assert_int_equal(plat_cluster_links_built(c), 32 + 32 + 16 + 8);
  plat_route r;
  st_err err = {0};
  /* H100 0 -> 1: NVSwitch up and down, 18 x 25 GB/s */
  expect_route(c, 0, 1, 2, (const char *const[]){"nvl-0-up", "nvl-1-down"}, 450e9, &r);
  /* V100 local 3 -> 4 (GPUs 11 -> 12) are not neighbours on the cube-mesh:
   * through local 0, two double lanes of 50 GB/s */
  expect_route(c, 11, 12, 2, (const char *const[]){"nvl-11-8", "nvl-8-12"}, 50e9, &r);
  /* V100 local 5 (GPU 13) -> H100 GPU 0: its PCIe (16 GB/s), its pair's
   * EDR NIC 5 x 4 / 8 = 2 (12.5 GB/s), the switch, H100 NIC 0 (50 GB/s);
   * no PCIe on the H100 side */
  expect_route(c, 13, 0, 3, (const char *const[]){"pcie-13-up", "nic-1-2-up", "nic-0-0-down"},
               12.5e9, &r);
  assert_true(fabs(r.links[0].bw_Bps - 16e9) < 1 && fabs(r.links[2].bw_Bps - 50e9) < 1);
  assert_true(fabs(r.bw_Bps - 12.5e9) < 1);
  /* communicators: one node's own shape; across, the fewest NICs and the
   * members ordered as on a switch */
  plat_cluster v;
  int32_t vg[] = {8, 9, 10, 11, 12, 13, 14, 15}, both[] = {0, 8};
  plat_cluster_view(c, vg, 8, &v);
  assert_int_equal(v.intra_kind, PLAT_INTRA_CUBEMESH);
  assert_int_equal(v.nics_per_node, 4);
  plat_cluster_view(c, both, 2, &v);
  assert_int_equal(v.intra_kind, PLAT_INTRA_NVSWITCH);
  assert_int_equal(v.nics_per_node, 4);
  assert_true(fabs(v.nic_Bps - 12.5e9) < 1);
  /* a group's node alone (balance probes) has its own shape */
  plat_cluster *n1 = NULL;
  assert_int_equal(plat_cluster_group_node(c, 1, &n1, &err), 0);
  assert_int_equal(n1->nics_per_node, 4);
  assert_int_equal(n1->intra_kind, PLAT_INTRA_CUBEMESH);
  plat_cluster_destroy(n1);
  /* host memory needs one rule for the GPUs' host links */
  assert_int_equal(plat_cluster_host_memory(c, 1, &err), ST_EINPUT);
  assert_non_null(strstr(err.msg, "needs every node group to model PCIe or none to"));
  plat_cluster_destroy(c);
}

/* Groups of unlike GPUs per node: one DGX H100 (8 GPUs, NVSwitch, 8 NDR
 * NICs) then two 4-GPU A100 boards (HGX A100 4-GPU: a full mesh of 4 NVLink3
 * x 25 = 100 GB/s per pair, 4 HDR NICs of 25 GB/s) on one switch of 0.1 us.
 * GPUs are numbered node after node: 0-7 the H100 node, 8-11 and 12-15 the
 * A100 nodes. */
static void test_groups__unlike_gpus_per_node(void **state)
{
  (void)state;
  const char *p = write_tmp(
      "{\"name\":\"gpn\",\"groups\":[{\"name\":\"h100\",\"nodes\":1,\"preset\":\"dgx-h100\"},"
      "{\"name\":\"a100x4\",\"nodes\":2,\"device\":\"A100-SXM4-80GB\",\"node\":{\"gpus\":4,"
      "\"intra\":{\"kind\":\"full-mesh\",\"links_per_gpu\":3,\"link_GBps\":100,\"lat_us\":0.5},"
      "\"nics\":{\"count\":4,\"Gbps\":200,\"lat_us\":1.0}}}],"
      "\"fabric\":{\"kind\":\"switch\",\"switch_lat_us\":0.1}}");
  plat_cluster *c = load(p);
  unlink(p);
  assert_int_equal(c->num_gpus, 16);
  assert_int_equal(c->num_nodes, 3);
  assert_int_equal(plat_gpus_per_node_uniform(c), 0);
  static const struct {
    int gpu, node, local;
  } at[] = {{0, 0, 0}, {7, 0, 7}, {8, 1, 0}, {11, 1, 3}, {12, 2, 0}, {15, 2, 3}};
  for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
    assert_int_equal(plat_gpu_node(c, at[i].gpu), at[i].node);
    assert_int_equal(plat_gpu_local(c, at[i].gpu), at[i].local);
  }
  assert_int_equal(plat_node_first_gpu(c, 2), 12);
  assert_int_equal(plat_node_gpus(c, 2), 4);
  assert_string_equal(plat_gpu_device(c, 12)->name, "A100-SXM4-80GB");
  /* links SimGrid gets: H100 8 x 2 NVSwitch + 8 x 2 NIC; A100 8 x 3 mesh
   * links + 2 nodes x 4 x 2 NIC */
  assert_int_equal(plat_cluster_links_built(c), 32 + 24 + 16);
  plat_route r;
  st_err err = {0};
  expect_route(c, 8, 11, 1, (const char *const[]){"mesh-8-11"}, 100e9, &r);
  /* GPU 13 (node 2, local 1) uses its node's NIC 1 x 4 / 4 = 1 */
  expect_route(c, 13, 0, 2, (const char *const[]){"nic-2-1-up", "nic-0-0-down"}, 25e9, &r);
  assert_true(fabs(r.latency_s - 2.1e-6) < 1e-12);
  /* bisection: half the NICs, (8 x 50 + 2 x 4 x 25) / 2 GB/s */
  assert_true(fabs(plat_cluster_bisection_Bps(c) - 300e9) < 1e3);
  /* sums over GPUs: 8 x 700 W + 8 x 400 W over all 16; over 10, 2 A100 */
  assert_true(fabs(plat_gpus_sum(c, 16, plat_dev_tdp, NULL) - (8 * 700 + 8 * 400)) < 1e-9);
  assert_true(fabs(plat_gpus_sum(c, 10, plat_dev_tdp, NULL) - (8 * 700 + 2 * 400)) < 1e-9);
  /* what cannot say unlike node sizes is refused: the XML's one
   * gpus_per_node, host memory */
  FILE *f = tmpfile();
  assert_non_null(f);
  assert_int_equal(plat_cluster_write_xml(c, f, &err), ST_EINPUT);
  fclose(f);
  assert_non_null(strstr(err.msg, "unlike GPUs per node"));
  assert_int_equal(plat_cluster_host_memory(c, 1, &err), ST_EINPUT);
  assert_non_null(strstr(err.msg, "unlike GPUs per node"));
  plat_cluster_destroy(c);
}

/* The XML written for a cluster of groups names them, and reads back. */
static void test_groups__xml_keeps_the_groups(void **state)
{
  (void)state;
  plat_cluster *c = load(MIXED);
  char path[64];
  snprintf(path, sizeof path, "/tmp/test_groups_%d.xml", (int)getpid());
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  st_err err = {0};
  assert_int_equal(plat_cluster_write_xml(c, f, &err), 0);
  fclose(f);
  plat_cluster *x = load(path);
  assert_int_equal(x->num_groups, 2);
  assert_int_equal(x->groups[1].first_node, 2);
  assert_string_equal(plat_gpu_device(x, 15)->name, "H100-SXM");
  assert_string_equal(plat_gpu_device(x, 16)->name, "A100-SXM4-80GB");
  plat_cluster_destroy(x);
  plat_cluster_destroy(c);
  unlink(path);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_groups__nodes_and_devices_in_gpu_order),
      cmocka_unit_test(test_groups__links_take_their_node_groups_rates),
      cmocka_unit_test(test_groups__view_is_what_all_members_share),
      cmocka_unit_test(test_groups__sums_over_the_jobs_gpus),
      cmocka_unit_test(test_groups__bad_specs_are_named),
      cmocka_unit_test(test_groups__xml_keeps_the_groups),
      cmocka_unit_test(test_groups__node_shapes_differ),
      cmocka_unit_test(test_groups__unlike_gpus_per_node),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
