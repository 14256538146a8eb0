/* cmd_platform.c — `simtrain platform`: look at a cluster before simulating on it.
 *
 *   simtrain platform NAME[:NODES]|FILE.json|FILE.xml [-o platform.xml]
 *                     [--route A B] [--summary] [--host-memory] [--list]
 *
 * --summary (the default) prints the cluster: device, GPUs, intra-node fabric,
 * NICs, fabric, switches, links and bisection bandwidth.  --route prints the
 * links between two GPUs with their bandwidth and latency: for a spec or a
 * preset from the same route function the SimGrid platform uses; for an XML
 * file from SimGrid itself.  -o writes an equivalent SimGrid XML platform.
 * --host-memory adds the nodes' host memory (the endpoints host-<n> and
 * their links, as a run with offload builds them): to the summary's link
 * count, the XML and the routes; a route to or from host-<n> implies it.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "platform.h"

static void usage(FILE *f)
{
  fprintf(f,
          "usage: simtrain platform NAME[:NODES]|FILE.json|FILE.xml [-o platform.xml]\n"
          "                         [--route A B] [--summary] [--host-memory]\n"
          "       simtrain platform --list\n\n"
          "  -o FILE        write an equivalent SimGrid XML platform (up to 256 GPUs)\n"
          "  --route A B    the links from A to B (GPUs: an index or gpu-<index>; a node's\n"
          "                 host memory: host-<node>), their bandwidth and latency\n"
          "  --summary      GPUs, fabric, links, bisection bandwidth (default without -o/--route)\n"
          "  --host-memory  with the nodes' host memory and its links, as offload builds them\n"
          "  --list         the presets\n");
}

/* "N", "gpu-N" or (host: 1) "host-N". */
static int parse_gpu(const char *s, int *g, int *host)
{
  *host = !strncmp(s, "host-", 5);
  if (!strncmp(s, "gpu-", 4))
    s += 4;
  else if (*host)
    s += 5;
  char *end;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < 0 || v > (1 << 24))
    return -1;
  *g = (int)v;
  return 0;
}

static void endpoint_name(const plat_cluster *c, int e, char *buf, size_t n)
{
  if (e >= c->num_gpus)
    snprintf(buf, n, "host-%d", e - c->num_gpus);
  else
    snprintf(buf, n, "gpu-%d", e);
}

static const char *kind_name(int k)
{
  static const char *const n[PLAT_LINK_KIND_COUNT] = {"intra", "pcie",   "nic",     "fabric",
                                                      "global", "ici", "host", "hostmem", "pod", "unused"};
  return k >= 0 && k < PLAT_LINK_KIND_COUNT ? n[k] : "?";
}

/* A node's lines: device, power, intra-node, PCIe (the cluster's, or a
 * group's through a view); `in` indents them under a group's heading. */
static void print_node(const plat_cluster *c, const char *in)
{
  const plat_device *d = &c->device;
  int w = 15 - (int)strlen(in); /* the values stay in one column */
  printf("%s%-*s%s: fp32 %g, tf32 %g, bf16 %g, fp16 %g, fp8 %g TFLOP/s; HBM %g GB at %g GB/s\n",
         in, w, "device", d->name, d->peak_flops[WL_DTYPE_FP32] / 1e12,
         d->peak_flops[WL_DTYPE_TF32] / 1e12, d->peak_flops[WL_DTYPE_BF16] / 1e12,
         d->peak_flops[WL_DTYPE_FP16] / 1e12, d->peak_flops[WL_DTYPE_FP8] / 1e12,
         d->hbm_bytes / 1e9, d->hbm_Bps / 1e9);
  if (d->tuning[0]) /* devices.json "tuning": whose fitted parameters and kernel rates */
    printf("%s%-*s%s's compute parameters and published kernel rates, the rates at %.4g of "
           "its clock\n",
           in, w, "variant of", d->tuning, d->clock_ratio);
  /* the facts behind run --tokens (docs/cost.md) */
  char tdp[32] = "n/a", host[32] = "n/a", price[48] = "none built in";
  if (d->tdp_W > 0)
    snprintf(tdp, sizeof tdp, "%g W", d->tdp_W);
  if (c->host_power_W >= 0)
    snprintf(host, sizeof host, "%g W", c->host_power_W);
  if (d->price_usd_per_gpu_hour >= 0)
    snprintf(price, sizeof price, "%g USD per GPU-hour", d->price_usd_per_gpu_hour);
  printf("%s%-*sTDP %s per GPU, non-GPU %s per node; list price %s\n", in, w, "power", tdp, host,
         price);
  if (c->fabric_kind == PLAT_FABRIC_XML)
    return;
  if (c->intra_kind == PLAT_INTRA_NONE)
    printf("%s%-*snone\n", in, w, "intra-node");
  else
    printf("%s%-*s%s, %d links x %g GB/s = %g GB/s per GPU per direction, %g us per link%s\n", in,
           w, "intra-node", plat_intra_kind_name(c->intra_kind), c->intra_links_per_gpu,
           c->intra_link_Bps / 1e9, c->intra_Bps / 1e9, c->intra_lat_s * 1e6,
           c->nvls ? ", NVLink SHARP" : "");
  if (c->pcie_Bps > 0)
    printf("%s%-*s%g GB/s per GPU per direction, %g us\n", in, w, "pcie", c->pcie_Bps / 1e9,
           c->pcie_lat_s * 1e6);
  if (c->fabric_kind == PLAT_FABRIC_TORUS && c->dcn_nics > 0)
    printf("%s%-*s%d per host x %g GB/s (%g Gb/s) per direction to the data-centre network, %g "
           "us\n", in, w, "dcn", c->dcn_nics, c->dcn_Bps / 1e9, c->dcn_Bps * 8 / 1e9,
           c->dcn_lat_s * 1e6);
  if (c->fabric_kind != PLAT_FABRIC_TORUS)
    printf("%s%-*s%d per node x %g GB/s (%g Gb/s) per direction, %g us; %g GB/s per GPU\n", in, w,
           "nics", c->nics_per_node, c->nic_Bps / 1e9, c->nic_Bps * 8 / 1e9, c->nic_lat_s * 1e6,
           c->nic_Bps * c->nics_per_node / c->gpus_per_node / 1e9);
}

/* The host-memory line of a cluster (or of group `group` through its view). */
static void print_host(const plat_cluster *c, const char *group)
{
  char mem[96] = "not given", mbw[48] = "", link[48] = "none built in", head[32] = "host memory";
  if (group)
    snprintf(head, sizeof head, "host %.9s", group);
  if (c->host_mem_bytes >= 0)
    snprintf(mem, sizeof mem, "%g GB per node", c->host_mem_bytes / 1e9);
  if (c->host_mem_Bps > 0)
    snprintf(mbw, sizeof mbw, " at %g GB/s", c->host_mem_Bps / 1e9);
  if (c->host_link_Bps > 0)
    snprintf(link, sizeof link, "%g GB/s per direction, %g us", c->host_link_Bps / 1e9,
             c->host_link_lat_s * 1e6);
  printf("%-15s%s%s; GPU link to it %s%s; CPU Adam %g G parameters/s per node%s\n", head, mem,
         mbw, link, c->pcie_Bps > 0 ? " (the PCIe link)" : "", c->host_adam_params_per_s / 1e9,
         c->host_memory ? "" : " (endpoints built with offload)");
}

/* The fabric's lines (not for XML); `in` indents them under a pod's heading. */
static void print_fabric(const plat_cluster *c, const char *in)
{
  int w = 15 - (int)strlen(in);
  if (c->fabric_kind == PLAT_FABRIC_TORUS) {
    printf("%s%-*storus %dx%dx%d%s%s, 6 ICI links per chip x %g GB/s = %g GB/s per chip "
           "per direction, %g us per hop\n",
           in, w, "fabric", c->torus_dims[0], c->torus_dims[1], c->torus_dims[2],
           c->torus_wrap ? " with wrap-around" : " (mesh, no wrap-around)",
           c->torus_cube[0] ? " of 4x4x4 cubes" : "", c->fabric_link_Bps / 1e9, c->nic_Bps / 1e9,
           c->fabric_link_lat_s * 1e6);
    return;
  }
  printf("%s%-*s%s", in, w, "fabric", plat_fabric_kind_name(c->fabric_kind));
  if (c->fabric_kind == PLAT_FABRIC_FATTREE || c->fabric_kind == PLAT_FABRIC_RAIL_FATTREE) {
    printf(", %d levels of %d-port switches, children per switch by level", c->fabric_levels,
           c->fabric_radix);
    for (int i = 0; i < c->fabric_levels; i++)
      printf("%s%d", i ? "/" : " ", c->fabric_radix_used[i]);
    printf(", %g GB/s links, oversubscription", c->fabric_link_Bps / 1e9);
    for (int i = 0; i + 1 < c->fabric_levels; i++)
      printf("%s%g:1", i ? "/" : " ", c->oversub[i]);
    if (c->fabric_levels == 1)
      printf(" none (one level)");
  } else if (c->fabric_kind == PLAT_FABRIC_DRAGONFLY) {
    printf(", %d routers per group, %d NICs per router, %d global links per router, %g GB/s "
           "local, %g GB/s global",
           c->dragonfly[0], c->dragonfly[1], c->dragonfly[2], c->fabric_link_Bps / 1e9,
           c->fabric_global_Bps / 1e9);
  } else if (c->fabric_kind == PLAT_FABRIC_PODS) {
    printf(": %d pods joined by a non-blocking data-centre core", c->num_pods);
  }
  printf(", %g us per switch%s\n", c->switch_lat_s * 1e6, c->in_network_reduction ? ", SHARP" : "");
  printf("%s%-*s%ld\n", in, w, "switches", plat_cluster_switch_count(c));
}

/* Each pod: its GPUs, node, fabric and links to the data-centre network. */
static void print_pods(const plat_cluster *c)
{
  printf("gpus           %d (%d nodes x %d) in %d pods\n", c->num_gpus, c->num_nodes,
         c->gpus_per_node, c->num_pods);
  for (int k = 0; k < c->num_pods; k++) {
    const plat_pod *p = &c->pods[k];
    int gpn = c->gpus_per_node;
    printf("pod %-10s nodes %d-%d, GPUs %d-%d (%d GPUs), from %s\n", p->name, p->first_node,
           p->first_node + p->num_nodes - 1, p->first_node * gpn,
           (p->first_node + p->num_nodes) * gpn - 1, p->num_nodes * gpn, p->c->name);
    print_node(p->c, "  ");
    print_fabric(p->c, "  ");
    printf("  %-13s%d x %g GB/s (%g Gb/s) = %g GB/s per direction to the data-centre network, "
           "%g us per link\n",
           "pod links", p->dc_links, p->dc_link_Bps / 1e9, p->dc_link_Bps * 8 / 1e9,
           p->dc_links * p->dc_link_Bps / 1e9, p->dc_lat_s * 1e6);
  }
}

static void print_summary(const plat_cluster *c)
{
  printf("cluster        %s\n", c->name);
  if (c->num_pods > 0) {
    print_pods(c);
  } else if (c->num_groups > 1) {
    if (plat_gpus_per_node_uniform(c))
      printf("gpus           %d (%d nodes x %d) in %d node groups\n", c->num_gpus, c->num_nodes,
             c->gpus_per_node, c->num_groups);
    else
      printf("gpus           %d (%d nodes) in %d node groups\n", c->num_gpus, c->num_nodes,
             c->num_groups);
    for (int k = 0; k < c->num_groups; k++) {
      const plat_group *g = &c->groups[k];
      int gpn = g->gpus_per_node;
      printf("group %-8s nodes %d-%d, GPUs %d-%d (%d GPUs, %d per node)\n", g->name, g->first_node,
             g->first_node + g->num_nodes - 1, g->first_gpu,
             g->first_gpu + g->num_nodes * gpn - 1, g->num_nodes * gpn, gpn);
      plat_cluster v = *c;
      plat_group_apply(&v, g);
      print_node(&v, "  ");
    }
  } else {
    printf("gpus           %d (%d nodes x %d)\n", c->num_gpus, c->num_nodes, c->gpus_per_node);
    print_node(c, "");
  }
  if (c->fabric_kind == PLAT_FABRIC_XML) {
    printf("fabric         SimGrid XML '%s' (links and routes as the file declares them)\n",
           c->xml_path);
    return;
  }
  print_fabric(c, "");
  for (int k = 0; k < (c->num_groups > 1 && !c->num_pods ? c->num_groups : 1); k++) {
    plat_cluster v = *c; /* node groups: each group's host */
    if (c->num_groups > 1 && !c->num_pods)
      plat_group_apply(&v, &c->groups[k]);
    print_host(&v, c->num_groups > 1 && !c->num_pods ? c->groups[k].name : NULL);
  }
  printf("links          %ld directed\n", plat_cluster_links_built(c));
  printf("bisection      %g GB/s per direction%s\n", plat_cluster_bisection_Bps(c) / 1e9,
         c->num_pods > 0 ? " (across the data-centre network: half the pods against the rest)"
                         : "");
}

static int print_route_spec(const plat_cluster *c, int a, int b)
{
  plat_route r;
  st_err err = {0};
  if (plat_route_get(c, a, b, &r, &err))
    return cli_fail(&err);
  char an[32], bn[32];
  endpoint_name(c, a, an, sizeof an);
  endpoint_name(c, b, bn, sizeof bn);
  int na = a >= c->num_gpus ? a - c->num_gpus : plat_gpu_node(c, a);
  int nb = b >= c->num_gpus ? b - c->num_gpus : plat_gpu_node(c, b);
  printf("route %s -> %s (node %d -> node %d): %d links, %d switches\n", an, bn, na, nb, r.n,
         r.switches);
  double lat_links = 0;
  for (int i = 0; i < r.n; i++) {
    printf("  %-28s %-7s %10g GB/s %8g us\n", r.links[i].name, kind_name(r.links[i].kind),
           r.links[i].bw_Bps / 1e9, r.links[i].lat_s * 1e6);
    lat_links += r.links[i].lat_s;
  }
  printf("bandwidth      %g GB/s (smallest link)\n", r.bw_Bps / 1e9);
  printf("latency        %g us (links %g us + %d switches x %g us)\n", r.latency_s * 1e6,
         lat_links * 1e6, r.switches, c->switch_lat_s * 1e6);
  return 0;
}

static int print_route_engine(const plat_cluster *c, int a, int b)
{
  plat_route r;
  st_err err = {0};
  if (plat_route_from_engine(c, a, b, &r, &err))
    return cli_fail(&err);
  printf("route gpu-%d -> gpu-%d: %d links (from SimGrid)\n", a, b, r.n);
  /* (host memory in an XML platform: ask SimGrid with gpu-/host- names there) */
  for (int i = 0; i < r.n; i++)
    printf("  %-28s %10g GB/s %8g us\n", r.links[i].name, r.links[i].bw_Bps / 1e9,
           r.links[i].lat_s * 1e6);
  printf("bandwidth      %g GB/s (smallest link)\n", r.bw_Bps / 1e9);
  printf("latency        %g us\n", r.latency_s * 1e6);
  return 0;
}

const char cmd_platform_help[] = "show a cluster: summary, routes between GPUs, SimGrid XML";

int cmd_platform(int argc, char **argv)
{
  const char *cluster = NULL, *out = NULL;
  const char *ra = NULL, *rb = NULL;
  int summary = 0, host_memory = 0, ch;
  static const struct option longopts[] = {{"list", no_argument, NULL, 'L'},
                                           {"output", required_argument, NULL, 'o'},
                                           {"route", required_argument, NULL, 'r'},
                                           {"summary", no_argument, NULL, 's'},
                                           {"host-memory", no_argument, NULL, 'H'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
    switch (ch) {
    case 'L':
      for (const char *const *p = plat_preset_names(); *p; p++)
        printf("%s\n", *p);
      return 0;
    case 'o': out = optarg; break;
    case 'r': /* two values: the second is the next argument */
      if (optind >= argc)
        return cli_usage_error("platform", "--route needs two GPUs");
      ra = optarg;
      rb = argv[optind++];
      break;
    case 's': summary = 1; break;
    case 'H': host_memory = 1; break;
    case 'h': usage(stdout); return 0;
    default: return cli_bad_option("platform", argv);
    }
  }
  for (int i = optind; i < argc; i++) {
    if (cluster)
      return cli_usage_error("platform", "one cluster only ('%s' and '%s')", cluster, argv[i]);
    cluster = argv[i];
  }
  if (!cluster)
    return cli_usage_error("platform", "no cluster given (a preset NAME[:NODES], FILE.json or FILE.xml)");
  int a = 0, b = 0, ha = 0, hb = 0;
  if (ra && parse_gpu(ra, &a, &ha))
    return cli_usage_error("platform", "--route: '%s' is not a GPU index or host-<node>", ra);
  if (rb && parse_gpu(rb, &b, &hb))
    return cli_usage_error("platform", "--route: '%s' is not a GPU index or host-<node>", rb);
  st_err err = {0};
  plat_cluster *c = NULL;
  if (plat_cluster_load(cluster, &c, &err))
    return cli_fail(&err);
  int rc = 0;
  if (ra && ((!ha && a >= c->num_gpus) || (!hb && b >= c->num_gpus))) {
    st_err_set(&err, ST_EINPUT, "cluster '%s': --route: GPU %d is out of range (0..%d)", c->name,
               !ha && a >= c->num_gpus ? a : b, c->num_gpus - 1);
    rc = cli_fail(&err);
    goto done;
  }
  if (ra && ((ha && a >= c->num_nodes) || (hb && b >= c->num_nodes))) {
    st_err_set(&err, ST_EINPUT, "cluster '%s': --route: host-%d is out of range (nodes 0..%d)",
               c->name, ha && a >= c->num_nodes ? a : b, c->num_nodes - 1);
    rc = cli_fail(&err);
    goto done;
  }
  if ((host_memory || ha || hb) && plat_cluster_host_memory(c, 1, &err)) {
    rc = cli_fail(&err);
    goto done;
  }
  if (ha)
    a += c->num_gpus;
  if (hb)
    b += c->num_gpus;
  if (out) {
    /* into memory first: nothing is half-written on error */
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) {
      st_err_set(&err, ST_ENOMEM, "out of memory");
      rc = cli_fail(&err);
      goto done;
    }
    int wrc = plat_cluster_write_xml(c, mem, &err);
    fclose(mem);
    if (!wrc)
      wrc = st_file_write_atomic(out, buf, len, 0, &err);
    free(buf);
    if (wrc) {
      rc = cli_fail(&err);
      goto done;
    }
    printf("wrote %s (%d GPUs)\n", out, c->num_gpus);
  }
  if (summary || (!out && !ra))
    print_summary(c);
  if (ra && c->fabric_kind == PLAT_FABRIC_XML && (ha || hb)) {
    st_err_set(&err, ST_EINPUT,
               "cluster '%s': --route to host memory: routes of a SimGrid XML platform are known "
               "only to SimGrid, which names GPUs only here",
               c->name);
    rc = cli_fail(&err);
  } else if (ra) {
    rc = c->fabric_kind == PLAT_FABRIC_XML ? print_route_engine(c, a, b) : print_route_spec(c, a, b);
  }
done:
  plat_cluster_destroy(c);
  return rc;
}
