/* test_pods.c — clusters of pods: specs (and their errors, each located),
 * routes within and between pods, the views collectives are tuned on, and
 * the SimGrid platform and the written XML routing like plat_route_get.
 *
 * Expected routes, rates and latencies are worked out here from the presets'
 * documented figures (docs/platforms.md: dgx-h100 NICs 400 Gb/s = 50 GB/s and
 * 1 us, 130 ns per switch, a rail-fat-tree of 64-port switches; node8's one
 * switch of 0 us), never from the code under test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "driver.h"
#include "platform.h"

static char dir[64];

/* dir/name with text in it; the path (static storage, one at a time per slot). */
static const char *put(const char *name, const char *text)
{
  static char paths[4][256];
  static int slot;
  char *p = paths[slot++ % 4];
  snprintf(p, 256, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return p;
}

static int setup(void **state)
{
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/test_pods_%d", (int)getpid());
  mkdir(dir, 0700);
  char sub[128];
  snprintf(sub, sizeof sub, "%s/sub", dir);
  mkdir(sub, 0700);
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static plat_cluster *load(const char *arg)
{
  st_err err = {0};
  plat_cluster *c = NULL;
  if (plat_cluster_load(arg, &c, &err))
    fail_msg("loading '%s': %s", arg, err.msg);
  return c;
}

static void route(const plat_cluster *c, int a, int b, plat_route *r)
{
  st_err err = {0};
  if (plat_route_get(c, a, b, r, &err))
    fail_msg("route %d -> %d: %s", a, b, err.msg);
}

/* Two dgx-h100:2 pods (16 GPUs each), 8 x 400 Gb/s each at 5 us, the
 * second's links overridden to 4 x 100 Gb/s. */
static const char *two_pods(void)
{
  return put("two.json",
             "{\"name\": \"two\", \"pods\": [{\"cluster\": \"dgx-h100:2\", \"name\": \"a\"},\n"
             " {\"cluster\": \"sub/b.json\", \"pod_links\": {\"count\": 4, \"Gbps\": 100}}],\n"
             " \"pod_links\": {\"count\": 8, \"Gbps\": 400, \"lat_us\": 5}}");
}

static void put_pod_b(void)
{
  /* dgx-a100 with 2 nodes: another device, NIC rate and fabric, one switch latency */
  put("sub/b.json",
      "{\"name\": \"b\", \"nodes\": 2, \"device\": \"A100-SXM4-80GB\", \"node\": {\"gpus\": 8,\n"
      " \"intra\": {\"kind\": \"nvswitch\", \"links_per_gpu\": 12, \"link_GBps\": 25, \"lat_us\": "
      "0.5},\n \"nics\": {\"count\": 8, \"Gbps\": 200, \"lat_us\": 1.0}},\n"
      " \"fabric\": {\"kind\": \"rail-fat-tree\", \"radix\": 40, \"switch_lat_us\": 0.13}}");
}

static void test_spec__pods_in_gpu_order_with_their_own_devices(void **state)
{
  (void)state;
  put_pod_b();
  plat_cluster *c = load(two_pods());
  assert_int_equal(c->num_pods, 2);
  assert_int_equal(c->num_gpus, 32);
  assert_int_equal(c->num_nodes, 4);
  assert_int_equal(c->fabric_kind, PLAT_FABRIC_PODS);
  assert_string_equal(c->pods[0].name, "a");
  assert_string_equal(c->pods[1].name, "pod1");
  assert_int_equal(c->pods[1].first_node, 2);
  assert_string_equal(plat_gpu_device(c, 15)->name, "H100-SXM");
  assert_string_equal(plat_gpu_device(c, 16)->name, "A100-SXM4-80GB");
  assert_int_equal(plat_gpu_pod(c, 15), 0);
  assert_int_equal(plat_gpu_pod(c, 16), 1);
  /* links: 8 x 400 Gb/s = 400 GB/s at 5 us; the override 4 x 100 Gb/s = 50 GB/s, 5 us */
  assert_int_equal(c->pods[0].dc_links, 8);
  assert_true(c->pods[0].dc_link_Bps == 50e9 && fabs(c->pods[0].dc_lat_s - 5e-6) < 1e-18);
  assert_int_equal(c->pods[1].dc_links, 4);
  assert_true(c->pods[1].dc_link_Bps == 12.5e9 && fabs(c->pods[1].dc_lat_s - 5e-6) < 1e-18);
  /* the cut across the data-centre network: the smaller side, pod 1's 50 GB/s */
  assert_true(plat_cluster_bisection_Bps(c) == 50e9);
  plat_cluster_destroy(c);
  /* count repeats a pod; unnamed pods are pod<k>, named repeats <name>-<i> */
  c = load(put("rep.json", "{\"name\": \"r\", \"pods\": [{\"cluster\": \"node8:2\", \"name\": "
                           "\"dc\", \"count\": 3}], \"pod_links\": {\"count\": 1, \"Gbps\": 800, "
                           "\"lat_us\": 0}}"));
  assert_int_equal(c->num_pods, 3);
  assert_int_equal(c->num_gpus, 48);
  assert_string_equal(c->pods[2].name, "dc-2");
  assert_int_equal(c->pods[2].first_node, 4);
  plat_cluster_destroy(c);
}

/* The names of a route's links, space-separated. */
static void names(const plat_route *r, char *buf, size_t n)
{
  buf[0] = '\0';
  for (int i = 0; i < r->n; i++)
    snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", i ? " " : "", r->links[i].name);
}

static void test_route__across_pods_goes_up_over_both_pods_links_and_down(void **state)
{
  (void)state;
  put_pod_b();
  plat_cluster *c = load(two_pods());
  plat_route r;
  char buf[1024];
  /* GPU 0 (pod a, node 0, rail 0) -> GPU 16 (pod 1, its node 0, rail 0): NIC up, the leaf's
   * up links (pod a is a two-level rail-fat-tree: its top is the spine), out of a, into
   * pod 1, its leaf's down links, NIC down.  Latency: NICs 1 + 1 us, pod links 5 + 5 us,
   * 2 switches in each pod x 0.13 us = 12.52 us; bandwidth: the A100 pod's 200 Gb/s NIC */
  route(c, 0, 16, &r);
  names(&r, buf, sizeof buf);
  assert_string_equal(buf, "nic-0-0-up pod0.ft-g1.0-up pod0.dc-up pod1.dc-down "
                           "pod1.ft-g1.0-down nic-2-0-down");
  assert_int_equal(r.switches, 4);
  assert_true(fabs(r.latency_s - 12.52e-6) < 1e-15);
  assert_true(r.bw_Bps == 25e9);
  assert_int_equal(r.links[2].kind, PLAT_LINK_POD);
  assert_true(r.links[2].bw_Bps == 8 * 50e9);   /* 8 x 400 Gb/s */
  assert_true(r.links[3].bw_Bps == 4 * 12.5e9); /* 4 x 100 Gb/s */
  /* back the other way, rail 1 -> rail 3: over pod 1's links out, pod a's in */
  route(c, 17, 3, &r);
  names(&r, buf, sizeof buf);
  assert_string_equal(buf, "nic-2-1-up pod1.ft-g1.1-up pod1.dc-up pod0.dc-down "
                           "pod0.ft-g1.3-down nic-0-3-down");
  /* inside a pod: its own route, its links named by global node and GPU: GPU 16 -> 24 is
   * pod 1's node 0 -> node 1 on rail 0, one leaf: 2 x 1 us + 0.13 us */
  route(c, 16, 24, &r);
  names(&r, buf, sizeof buf);
  assert_string_equal(buf, "nic-2-0-up nic-3-0-down");
  assert_int_equal(r.switches, 1);
  assert_true(fabs(r.latency_s - 2.13e-6) < 1e-15);
  route(c, 17, 18, &r);
  names(&r, buf, sizeof buf);
  assert_string_equal(buf, "nvl-17-up nvl-18-down");
  plat_cluster_destroy(c);
  /* pods of one switch each (node8, 0 us per switch): NIC up, out, in, NIC down; one
   * switch in each pod */
  c = load(put("sw.json", "{\"name\": \"s\", \"pods\": [{\"cluster\": \"node8:2\", \"count\": "
                          "2}], \"pod_links\": {\"count\": 2, \"Gbps\": 400, \"lat_us\": 3}}"));
  route(c, 9, 16, &r);
  names(&r, buf, sizeof buf);
  assert_string_equal(buf, "nic-1-1-up pod0.dc-up pod1.dc-down nic-2-0-down");
  assert_int_equal(r.switches, 2);
  assert_true(fabs(r.latency_s - 8e-6) < 1e-15); /* 1 + 3 + 3 + 1 us */
  assert_true(r.links[1].bw_Bps == 2 * 50e9);
  plat_cluster_destroy(c);
}

static void test_view__one_pod_is_the_pod_across_pods_the_least(void **state)
{
  (void)state;
  put_pod_b();
  plat_cluster *c = load(two_pods());
  int32_t in_b[2] = {16, 24}, across[2] = {0, 16};
  plat_cluster v;
  plat_cluster_view(c, in_b, 2, &v);
  assert_string_equal(v.device.name, "A100-SXM4-80GB");
  assert_int_equal(v.fabric_kind, PLAT_FABRIC_RAIL_FATTREE);
  assert_int_equal(v.fabric_radix, 40);
  assert_true(v.nic_Bps == 25e9);
  plat_cluster_view(c, across, 2, &v);
  assert_int_equal(v.fabric_kind, PLAT_FABRIC_PODS);
  assert_string_equal(v.device.name, "A100-SXM4-80GB"); /* the lower peak */
  assert_true(v.nic_Bps == 25e9 && v.intra_Bps == 12 * 25e9);
  assert_int_equal(v.in_network_reduction, 0);
  plat_cluster_destroy(c);
}

/* Pods of unlike node shapes: a dgx-h100:2 pod (NVSwitch, 8 NDR NICs, no
 * PCIe modelled) and a DGX-1 pod (V100 cube-mesh, 4 x 100 Gb/s EDR NICs, one
 * per GPU pair, behind 16 GB/s PCIe; a one-level fat-tree with the H100
 * pod's switch latency), 4 x 400 Gb/s pod links of 2 us each.  Each pod
 * routes its own nodes; a route between them joins the two. */
static void test_spec__pods_may_differ_in_node_shape(void **state)
{
  (void)state;
  put("sub/v.json",
      "{\"name\": \"v\", \"nodes\": 2, \"device\": \"V100-SXM2\", \"node\": {\"gpus\": 8,\n"
      " \"intra\": {\"kind\": \"cube-mesh\", \"links_per_gpu\": 6, \"link_GBps\": 25, "
      "\"lat_us\": 0.5},\n \"nics\": {\"count\": 4, \"Gbps\": 100, \"lat_us\": 1.0},\n"
      " \"pcie\": {\"GBps\": 16, \"lat_us\": 0.5}},\n"
      " \"fabric\": {\"kind\": \"fat-tree\", \"radix\": 36, \"switch_lat_us\": 0.13}}");
  plat_cluster *c = load(put("shapes.json",
                             "{\"name\": \"shapes\", \"pods\": [{\"cluster\": \"dgx-h100:2\"},\n"
                             " {\"cluster\": \"sub/v.json\"}],\n"
                             " \"pod_links\": {\"count\": 4, \"Gbps\": 400, \"lat_us\": 2}}"));
  plat_route r;
  /* V100 local 3 -> 4 (GPUs 19 -> 20): not cube-mesh neighbours, two lanes
   * of 2 x 25 GB/s through local 0 */
  route(c, 19, 20, &r);
  assert_int_equal(r.n, 2);
  assert_true(fabs(r.bw_Bps - 50e9) < 1);
  /* V100 local 5 (GPU 29, node 3) -> H100 GPU 0: its PCIe, its pair's NIC
   * 5 x 4 / 8 = 2 (12.5 GB/s), its pod's link up, the H100 pod's link down
   * and fat-tree down, H100 NIC 0 (50 GB/s); no PCIe on the H100 side */
  route(c, 29, 0, &r);
  assert_int_equal(r.n, 6);
  assert_int_equal(r.links[0].kind, PLAT_LINK_PCIE);
  assert_int_equal(r.links[1].kind, PLAT_LINK_NIC);
  assert_non_null(strstr(r.links[1].name, "nic-3-2-up"));
  assert_true(fabs(r.links[1].bw_Bps - 12.5e9) < 1);
  assert_int_equal(r.links[2].kind, PLAT_LINK_POD);
  assert_int_equal(r.links[5].kind, PLAT_LINK_NIC);
  assert_true(fabs(r.links[5].bw_Bps - 50e9) < 1);
  assert_true(fabs(r.bw_Bps - 12.5e9) < 1);
  plat_cluster_destroy(c);
}

static void test_spec__bad_pods_are_named_where_they_are(void **state)
{
  (void)state;
  put_pod_b();
  static const struct {
    const char *text;
    const char *msg; /* after "spec '<path>': " */
  } rows[] = {
      {"{\"name\":\"z\",\"pods\":[{\"cluster\":\"dgx-h100:2\",\"count\":2}],"
       "\"pod_links\":{\"count\":8,\"Gbps\":0,\"lat_us\":5}}",
       "pod_links: 'Gbps' is 0; it must be greater than 0"},
      {"{\"name\":\"z\",\"pods\":[{\"cluster\":\"dgx-h100:2\"},{\"cluster\":\"dgx-h100:2\","
       "\"pod_links\":{\"Gbps\":0}}],\"pod_links\":{\"count\":8,\"Gbps\":400,\"lat_us\":5}}",
       "pods[1].pod_links: 'Gbps' is 0; it must be greater than 0"},
      {"{\"name\":\"z\",\"pods\":[{\"cluster\":\"dgx-h100:2\"},{\"cluster\":\"gb200-nvl72:1\"}],"
       "\"pod_links\":{\"count\":8,\"Gbps\":400,\"lat_us\":5}}",
       "pods[1] ('gb200-nvl72:1'): its nodes have 72 GPUs, pod 0's have 8: the pods of one "
       "cluster have the same GPUs per node (GPU g is on node g / GPUs per node everywhere)"},
      {"{\"name\":\"z\",\"pods\":[{\"cluster\":\"dgx-h100:2\"},{\"cluster\":\"node8:2\"}],"
       "\"pod_links\":{\"count\":8,\"Gbps\":400,\"lat_us\":5}}",
       "pods[1] ('node8:2'): fabric.switch_lat_us is 0, pod 0's is 0.13: the pods of one "
       "cluster have one switch latency"},
      {"{\"name\":\"z\",\"pods\":[{\"cluster\":\"tpu-v4:16\",\"count\":2}],"
       "\"pod_links\":{\"count\":8,\"Gbps\":400,\"lat_us\":5}}",
       "pods[0] ('tpu-v4:16'): its fabric is a torus without node.dcn; a torus pod reaches the "
       "data-centre network through its hosts' NICs (node.dcn: count, Gbps, lat_us)"},
      {"{\"name\":\"z\",\"pods\":[{\"cluster\":\"dgx-h100:2\",\"count\":2}],\"colour\":1,"
       "\"pod_links\":{\"count\":8,\"Gbps\":400,\"lat_us\":5}}",
       "key 'colour' is unknown (see docs/platforms.md)"},
      {"{\"name\":\"z\",\"pods\":[{\"cluster\":\"dgx-h100:2\",\"count\":2,\"nodez\":3}],"
       "\"pod_links\":{\"count\":8,\"Gbps\":400,\"lat_us\":5}}",
       "pods[0]: key 'nodez' is unknown (see docs/platforms.md)"},
      {"{\"name\":\"z\",\"pods\":[{\"cluster\":\"dgx-h100:2\",\"count\":2}],"
       "\"pod_links\":{\"count\":8,\"gbps\":400,\"lat_us\":5}}",
       "pod_links: key 'gbps' is unknown (see docs/platforms.md)"},
      {"{\"name\":\"z\",\"pods\":[{\"cluster\":\"dgx-h100:2\",\"count\":2}],"
       "\"pod_links\":{\"count\":8,\"lat_us\":5}}",
       "pods[0]: pod_links: key 'Gbps' is missing (give it here or in the top-level pod_links)"},
      {"{\"name\":\"z\",\"pods\":[{\"cluster\":\"dgx-h100:2\",\"count\":2}],"
       "\"fabric\":{\"kind\":\"switch\"}}",
       "key 'fabric' cannot stand beside 'pods': each pod has its own"},
      {"{\"name\":\"z\",\"pods\":[{\"cluster\":\"dgx-h100:2\"}],"
       "\"pod_links\":{\"count\":8,\"Gbps\":400,\"lat_us\":5}}",
       "pods: has one pod; a cluster of pods needs two or more (give 'count' or another pod; "
       "one pod alone is its own spec)"},
      {"{\"name\":\"z\",\"pods\":[{\"spec\":{\"name\":\"i\",\"device\":\"H100-SXM\",\"node\":"
       "{\"gpus\":8,\"intra\":{\"kind\":\"nvswitch\",\"links_per_gpu\":18,\"link_GBps\":25,"
       "\"lat_us\":0.5,\"colour\":1}},\"fabric\":{\"kind\":\"switch\"}},\"count\":2}],"
       "\"pod_links\":{\"count\":8,\"Gbps\":400,\"lat_us\":5}}",
       "pods[0].spec: node.intra: key 'colour' is unknown (see docs/platforms.md)"},
      {"{\"name\":\"z\",\"pods\":[{\"cluster\":\"dgx-h100:2\",\"spec\":{}}],"
       "\"pod_links\":{\"count\":8,\"Gbps\":400,\"lat_us\":5}}",
       "pods[0]: give 'cluster' or 'spec', not both"},
      {"{\"name\":\"z\",\"pods\":[{\"cluster\":\"examples/clusters/mixed-a100-h100.json\"}],"
       "\"pod_links\":{\"count\":8,\"Gbps\":400,\"lat_us\":5}}",
       NULL}, /* checked below: a missing file, named with the spec's folder */
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const char *p = put("bad.json", rows[i].text);
    st_err err = {0};
    plat_cluster *c = NULL;
    int rc = plat_cluster_load(p, &c, &err);
    assert_null(c);
    char want[2048];
    if (rows[i].msg) {
      assert_int_equal(rc, ST_EINPUT);
      snprintf(want, sizeof want, "spec '%s': %s", p, rows[i].msg);
    } else { /* relative to the spec's folder, not the working directory */
      assert_int_equal(rc, ST_EIO);
      snprintf(want, sizeof want,
               "spec '%s': pods[0].cluster: cannot open "
               "'%s/examples/clusters/mixed-a100-h100.json': No such file or directory",
               p, dir);
    }
    assert_string_equal(err.msg, want);
  }
  /* the node count of a cluster of pods is its pods' */
  char arg[512];
  snprintf(arg, sizeof arg, "%s:8", two_pods());
  st_err err = {0};
  plat_cluster *c = NULL;
  assert_int_equal(plat_cluster_load(arg, &c, &err), ST_EINPUT);
  assert_null(c);
  assert_non_null(strstr(err.msg, "a cluster of pods has its node count per pod (4 nodes in all); "
                                  "':8' cannot change it"));
  /* ... which ':NODES' may repeat, as a sweep's size does */
  snprintf(arg, sizeof arg, "%s:4", two_pods());
  c = load(arg);
  assert_int_equal(c->num_nodes, 4);
  assert_string_equal(c->name, "two:4");
  plat_cluster_destroy(c);
}

/* ---- SimGrid: a forked child per engine ------------------------------------ */
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

static char spec_path[256], xml_path[256];

/* The platform SimGrid has for arg: every ordered pair's route is
 * plat_route_get's for the spec (names, latency, bandwidth); the switch-hop
 * links of a written XML carry the switch latency and are not counted. */
static void check_routes(const char *arg)
{
  int argc = 2;
  char a0[] = "test", a1[] = "--log=root.thres:critical";
  char *argv[] = {a0, a1, NULL};
  simgrid_init(&argc, argv);
  st_err err = {0};
  plat_cluster *built = NULL, *spec = NULL;
  CHECK(!plat_cluster_load(arg, &built, &err), "%s", err.msg);
  CHECK(!plat_cluster_load(spec_path, &spec, &err), "%s", err.msg);
  CHECK(built->num_gpus == spec->num_gpus, "%d GPUs, %d expected", built->num_gpus, spec->num_gpus);
  sg_host_t *hosts = calloc((size_t)built->num_gpus, sizeof *hosts);
  CHECK(!plat_cluster_build(built, (void **)hosts, &err), "%s", err.msg);
  plat_route r;
  xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
  for (int a = 0; a < spec->num_gpus; a++)
    for (int b = 0; b < spec->num_gpus; b++) {
      if (a == b)
        continue;
      plat_route_get(spec, a, b, &r, NULL);
      xbt_dynar_reset(links);
      sg_host_get_route(hosts[a], hosts[b], links);
      int n = 0;
      for (unsigned long i = 0; i < xbt_dynar_length(links); i++) {
        const char *nm = sg_link_get_name(xbt_dynar_get_as(links, i, sg_link_t));
        if (!strncmp(nm, "switch-hop-", 11))
          continue;
        CHECK(n < r.n && !strcmp(nm, r.links[n].name), "%d -> %d: link %d is %s", a, b, n, nm);
        n++;
      }
      CHECK(n == r.n, "%d -> %d: %d links in SimGrid, %d expected", a, b, n, r.n);
      double lat = sg_host_get_route_latency(hosts[a], hosts[b]);
      CHECK(fabs(lat - r.latency_s) <= 1e-12 * r.latency_s, "%d -> %d: latency %g vs %g", a, b, lat,
            r.latency_s);
      double bw = sg_host_get_route_bandwidth(hosts[a], hosts[b]);
      CHECK(bw == r.bw_Bps, "%d -> %d: bandwidth %g vs %g", a, b, bw, r.bw_Bps);
    }
  xbt_dynar_free(&links);
}

static void child_built(void) { check_routes(spec_path); }
static void child_xml(void) { check_routes(xml_path); }

static void test_simgrid__built_and_written_platforms_route_like_plat_route(void **state)
{
  (void)state;
  put_pod_b();
  snprintf(spec_path, sizeof spec_path, "%s", two_pods());
  in_child(child_built);
  plat_cluster *c = load(spec_path);
  snprintf(xml_path, sizeof xml_path, "%s/two.xml", dir);
  FILE *f = fopen(xml_path, "w");
  st_err err = {0};
  assert_int_equal(plat_cluster_write_xml(c, f, &err), 0);
  fclose(f);
  plat_cluster_destroy(c);
  in_child(child_xml);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spec__pods_in_gpu_order_with_their_own_devices),
      cmocka_unit_test(test_route__across_pods_goes_up_over_both_pods_links_and_down),
      cmocka_unit_test(test_view__one_pod_is_the_pod_across_pods_the_least),
      cmocka_unit_test(test_spec__bad_pods_are_named_where_they_are),
      cmocka_unit_test(test_spec__pods_may_differ_in_node_shape),
      cmocka_unit_test(test_simgrid__built_and_written_platforms_route_like_plat_route),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
