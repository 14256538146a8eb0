/* cmd_coll.c — `simtrain coll`: one collective over the first N GPUs of a
 * cluster, at one size or a sweep of sizes, printed like nccl-tests so users
 * can put it beside their own nccl-tests runs.
 *
 * Sizes follow nccl-tests (see workload.h); busbw uses nccl-tests' factors
 * (sim_busbw_factor).  A sweep runs the sizes one after the other in one
 * simulation; each size's time is from the moment all GPUs have arrived to
 * the moment the last one finishes. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sim.h"

#define OP_SENDRECV WL_COLL_COUNT

static const char usage_text[] =
    "usage: simtrain coll OP --gpus N --cluster C [--bytes B | --sweep MIN:MAX] [options]\n"
    "\n"
    "Simulate one collective over the first N GPUs of cluster C and print, per size,\n"
    "the time, algorithm bandwidth and bus bandwidth as nccl-tests does.\n"
    "\n"
    "  OP                  allreduce, allgather, reducescatter, alltoall, broadcast,\n"
    "                      reduce, shift (GPU i to i+1 as one collective), sendrecv\n"
    "                      (the same ring as point-to-point pairs)\n"
    "  --gpus N            GPUs taking part (the first N of the cluster)\n"
    "  --cluster C         NAME[:NODES] preset, spec .json or SimGrid .xml\n"
    "  --bytes B           one size (nccl-tests convention), e.g. 64M, 1G, 4096\n"
    "  --sweep MIN:MAX     sizes MIN, 2 MIN, 4 MIN ... up to MAX (default 1K:1G)\n"
    "  --algo A            ring, tree, nvls, nvls_tree, collnet, hier, torus, direct,\n"
    "                      chain, hier_pods (default: chosen per size like NCCL's tuner;\n"
    "                      hier_pods whenever the GPUs span pods)\n"
    "  --proto P           ll, ll128 or simple (default: chosen per size)\n"
    "  --channels K        rings/tree pairs across nodes (default: GPUs per node)\n"
    "  --ideal             links at line rate, latency = route latency per hop\n"
    "  --dedup TOPK:E      alltoall as an MoE dispatch of DeepEP or HybridEP: each token\n"
    "                      of the TOPK copies the bytes count goes once to each GPU and\n"
    "                      once to each node holding any of its TOPK experts (E on\n"
    "                      each GPU, uniform routing; docs/collectives.md)\n"
    "  --fidelity F        flow (default: one flow per algorithm edge) or step\n"
    "  --net-model M       ideal (default), cm02 or lv08 (SimGrid's models)\n"
    "  --json              print a JSON list of {bytes, time_s, algbw_GBps, busbw_GBps}\n"
    "  -h, --help          this text\n";

static int add_sendrecv(wl_program *p, int nsizes, const double *sizes)
{
  /* Stream 0 sends to the next GPU, stream 1 receives from the previous one;
   * size k+1 starts on each stream once both streams finished size k. */
  long last_send = -1, last_recv = -1;
  for (int k = 0; k < nsizes; k++) {
    uint32_t w[2];
    uint32_t nw = 0;
    if (last_recv >= 0)
      w[nw++] = (uint32_t)last_recv;
    wl_op s = wl_op_p2p(0, WL_OP_SEND, 0, 1, k, sizes[k]);
    long si = wl_program_append(p, &s, w, nw);
    nw = 0;
    if (last_send >= 0)
      w[nw++] = (uint32_t)last_send;
    wl_op r = wl_op_p2p(1, WL_OP_RECV, 1, 0, k, sizes[k]);
    long ri = wl_program_append(p, &r, w, nw);
    if (si < 0 || ri < 0)
      return ST_ENOMEM;
    last_send = si;
    last_recv = ri;
  }
  return ST_OK;
}

/* The sendrecv workload: rank i sends to i+1 on the pair communicator
 * {i, i+1} (role "next") and receives from i-1 on {i-1, i} (role "prev"). */
static wl_workload *build_workload(int op, int n, int nsizes, const double *sizes, int topk,
                                   int experts, st_err *err)
{
  static const char *const roles_coll[] = {"world"};
  static const char *const roles_p2p[] = {"next", "prev"};
  int p2p = op == OP_SENDRECV;
  wl_workload *wl = wl_workload_create(n, p2p ? 2 : 1, p2p ? roles_p2p : roles_coll);
  if (!wl) {
    st_err_set(err, ST_ENOMEM, "out of memory");
    return NULL;
  }
  static const char *const streams_coll[] = {"comm"};
  static const char *const streams_p2p[] = {"send", "recv"};
  int prog = wl_program_add(wl, p2p ? "sendrecv" : wl_coll_name(op), p2p ? 2 : 1,
                            p2p ? streams_p2p : streams_coll);
  if (prog < 0)
    goto oom;
  wl_program *p = &wl->programs[prog];
  if (p2p) {
    if (add_sendrecv(p, nsizes, sizes))
      goto oom;
    for (int i = 0; i < n; i++) {
      int32_t pair[2] = {i, (i + 1) % n};
      char name[32];
      snprintf(name, sizeof name, "pair-%d", i);
      int c = wl_comm_add(wl, name, WL_COMM_OTHER, 2, pair);
      if (c < 0)
        goto oom;
    }
    for (int i = 0; i < n; i++) {
      wl_rank_set(wl, i, prog);
      wl_rank_set_comm(wl, i, 0, i);               /* {i, i+1}: I am member 0 */
      wl_rank_set_comm(wl, i, 1, (i - 1 + n) % n); /* {i-1, i}: I am member 1 */
    }
  } else {
    for (int k = 0; k < nsizes; k++) {
      wl_op o = wl_op_coll(0, op, 0, sizes[k]);
      if (topk) /* a deduplicating MoE dispatch */
        wl_op_set_dedup(&o, topk, experts);
      if (wl_program_append(p, &o, NULL, 0) < 0)
        goto oom;
    }
    int32_t *ranks = malloc((size_t)n * sizeof *ranks);
    if (!ranks)
      goto oom;
    for (int i = 0; i < n; i++)
      ranks[i] = i;
    int c = wl_comm_add(wl, "world", WL_COMM_WORLD, n, ranks);
    free(ranks);
    if (c < 0)
      goto oom;
    for (int i = 0; i < n; i++) {
      wl_rank_set(wl, i, prog);
      wl_rank_set_comm(wl, i, 0, c);
    }
  }
  wl_meta_set_str(&wl->meta.source, "coll");
  return wl;
oom:
  wl_workload_destroy(wl);
  st_err_set(err, ST_ENOMEM, "out of memory");
  return NULL;
}

const char cmd_coll_help[] = "one collective over N GPUs, printed like nccl-tests";

/* --bytes (one size) or --sweep MIN:MAX (powers of two; default 1K:1G) into
 * sizes[64]: 0, or the usage error's exit status. */
static int parse_sizes(const char *bytes_s, const char *sweep_s, double *sizes, int *nsizes)
{
  if (bytes_s) {
    if (st_parse_bytes(bytes_s, &sizes[0]) || sizes[0] < 1)
      return cli_usage_error("coll", "--bytes '%s' is not a size like 4096, 64M or 1G", bytes_s);
    st_err e;
    if (st_num_check(sizes[0], ST_NUM_REAL, 1, ST_BYTES_MAX, &e, "--bytes '%s'", bytes_s))
      return cli_usage_error("coll", "%s", e.msg);
    *nsizes = 1;
  } else {
    char lo_s[64], *colon;
    snprintf(lo_s, sizeof lo_s, "%s", sweep_s ? sweep_s : "1K:1G");
    colon = strchr(lo_s, ':');
    double lo, hi;
    if (!colon)
      return cli_usage_error("coll", "--sweep '%s' is not MIN:MAX", sweep_s);
    *colon = '\0';
    if (st_parse_bytes(lo_s, &lo) || st_parse_bytes(colon + 1, &hi) || lo < 1 || hi < lo)
      return cli_usage_error("coll", "--sweep '%s' is not MIN:MAX with 1 <= MIN <= MAX", sweep_s);
    st_err e;
    if (st_num_check(hi, ST_NUM_REAL, 1, ST_BYTES_MAX, &e, "--sweep '%s'", sweep_s))
      return cli_usage_error("coll", "%s", e.msg);
    for (double s = lo; s <= hi * (1 + 1e-12) && *nsizes < 64; s *= 2)
      sizes[(*nsizes)++] = s;
  }

  return 0;
}

/* The table (or JSON array) of the sizes' times, algorithm bandwidths and
 * bus bandwidths, from the run's records. */
static void print_coll(const sim_result *res, int op, const char *opname, int gpus,
                       const plat_cluster *cl, const sim_options *opt, const double *sizes,
                       int nsizes, int json)
{
  if (json)
    fputc('[', stdout);
  else {
    printf("# simtrain coll %s: %d GPUs on %s, %s fidelity, network model %s\n", opname, gpus,
           cl->name, opt->fidelity == SIM_FID_STEP ? "step" : "flow",
           sim_net_model_name(opt->net_model));
    printf("# %14s %14s %12s %12s %12s  %-9s %-6s %s\n", "size(B)", "count(float)", "time(us)",
           "algbw(GB/s)", "busbw(GB/s)", "algo", "proto", "channels");
  }
  /* A collective's sizes complete in order, one record each; the pairs of a
   * sendrecv sweep do not wait for each other, so records of different sizes
   * interleave: take a size's records by their bytes (the sizes differ), and
   * time it from the last pair's start (all GPUs there) to the last end. */
  int p2p = op == OP_SENDRECV;
  for (int k = 0; k < nsizes; k++) {
    double t0 = 0, t1 = 0;
    const sim_coll_record *first = NULL;
    for (size_t i = 0; i < res->num_colls; i++) {
      const sim_coll_record *rc = &res->colls[i];
      if (p2p ? rc->bytes != sizes[k] : i != (size_t)k)
        continue;
      if (!first)
        first = rc;
      t0 = fmax(t0, rc->start_s);
      t1 = fmax(t1, rc->end_s);
    }
    double t = t1 - t0;
    double algbw = sizes[k] / t / 1e9;
    double busbw = algbw * (p2p ? 1.0 : sim_busbw_factor(op, gpus));
    const char *an = p2p ? "p2p" : first ? sim_coll_algo_name(first->algo) : "?";
    const char *pn = p2p ? "-" : first ? sim_coll_proto_name(first->proto) : "?";
    int nch = p2p ? 1 : first ? first->channels : 0;
    char jt[32], ja[32], jb[32]; /* JSON has no inf/nan (a zero time): null */
    if (json)
      printf("%s{\"bytes\":%.17g,\"time_s\":%s,\"algbw_GBps\":%s,\"busbw_GBps\":%s,"
             "\"algo\":\"%s\",\"proto\":\"%s\",\"channels\":%d}",
             k ? "," : "", sizes[k], st_json_num(t, jt, sizeof jt),
             st_json_num(algbw, ja, sizeof ja), st_json_num(busbw, jb, sizeof jb), an, pn, nch);
    else
      printf("  %14.0f %14.0f %12.2f %12.2f %12.2f  %-9s %-6s %d\n", sizes[k], floor(sizes[k] / 4),
             t * 1e6, algbw, busbw, an, pn, nch);
  }
  if (json)
    fputs("]\n", stdout);
}

int cmd_coll(int argc, char **argv)
{
  static const struct option longopts[] = {
      {"gpus", required_argument, NULL, 'g'},      {"cluster", required_argument, NULL, 'c'},
      {"bytes", required_argument, NULL, 'b'},     {"sweep", required_argument, NULL, 's'},
      {"fidelity", required_argument, NULL, 'f'},  {"net-model", required_argument, NULL, 'n'},
      {"json", no_argument, NULL, 'j'},            {"help", no_argument, NULL, 'h'},
      {"algo", required_argument, NULL, 'A'},      {"proto", required_argument, NULL, 'P'},
      {"channels", required_argument, NULL, 'C'},  {"ideal", no_argument, NULL, 'I'},
      {"dedup", required_argument, NULL, 'D'},     {NULL, 0, NULL, 0}};
  int gpus = 0, json = 0, topk = 0, experts = 0;
  const char *cluster = NULL, *bytes_s = NULL, *sweep_s = NULL;
  sim_options opt;
  sim_options_init(&opt);
  opt.quiet = 1;
  optind = 1;
  opterr = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch (ch) {
    case 'g': {
      char *end;
      long v = strtol(optarg, &end, 10);
      if (*end || v < 1 || v > ST_RANKS_MAX)
        return cli_usage_error("coll", "--gpus '%s' is not a GPU count 1..%d", optarg, ST_RANKS_MAX);
      gpus = (int)v;
      break;
    }
    case 'c': cluster = optarg; break;
    case 'b': bytes_s = optarg; break;
    case 's': sweep_s = optarg; break;
    case 'f':
      if (!strcmp(optarg, "flow"))
        opt.fidelity = SIM_FID_FLOW;
      else if (!strcmp(optarg, "step"))
        opt.fidelity = SIM_FID_STEP;
      else
        return cli_usage_error("coll", "--fidelity '%s' is not flow or step", optarg);
      break;
    case 'n':
      if ((opt.net_model = sim_net_model_from_name(optarg)) < 0)
        return cli_usage_error("coll", "--net-model '%s' is not ideal, cm02 or lv08", optarg);
      break;
    case 'j': json = 1; break;
    case 'A':
      if ((opt.coll_algo = sim_coll_algo_from_name(optarg)) < 0)
        return cli_usage_error("coll", "--algo '%s' is not ring, tree, nvls, nvls_tree, collnet, "
                                       "hier, torus, direct, chain or hier_pods", optarg);
      break;
    case 'P':
      if ((opt.coll_proto = sim_coll_proto_from_name(optarg)) < 0)
        return cli_usage_error("coll", "--proto '%s' is not ll, ll128 or simple", optarg);
      break;
    case 'C': {
      char *end;
      long v = strtol(optarg, &end, 10);
      if (*end || v < 1 || v > 64)
        return cli_usage_error("coll", "--channels '%s' is not an integer from 1 to 64", optarg);
      opt.coll_channels = (int)v;
      break;
    }
    case 'I': opt.coll_model = SIM_COLL_IDEAL; break;
    case 'D': {
      char *end;
      long k = strtol(optarg, &end, 10), e = 0;
      if (*end == ':')
        e = strtol(end + 1, &end, 10);
      if (*end || k < 1 || k > 1024 || e < 1 || e > 65535)
        return cli_usage_error("coll", "--dedup '%s' is not TOPK:EXPERTS (top-k 1-1024, experts "
                                       "per GPU 1-65535)", optarg);
      topk = (int)k;
      experts = (int)e;
      break;
    }
    case 'h': fputs(usage_text, stdout); return 0;
    default: return cli_bad_option("coll", argv);
    }
  }
  if (optind + 1 != argc)
    return cli_usage_error("coll", optind >= argc ? "the collective (OP) is missing"
                                                  : "expected one OP, got more arguments");
  const char *opname = argv[optind];
  int op = !strcmp(opname, "sendrecv") ? OP_SENDRECV : wl_coll_from_name(opname);
  if (op < 0 || op == WL_COLL_BARRIER)
    return cli_usage_error("coll", "'%s' is not a collective (allreduce, allgather, "
                                   "reducescatter, alltoall, broadcast, reduce, shift, sendrecv)",
                           opname);
  if (!gpus)
    return cli_usage_error("coll", "--gpus is required");
  if (!cluster)
    return cli_usage_error("coll", "--cluster is required");
  if (bytes_s && sweep_s)
    return cli_usage_error("coll", "give --bytes or --sweep, not both");
  if (gpus < 2)
    return cli_usage_error("coll", "--gpus must be at least 2");
  if (topk && op != WL_COLL_ALLTOALL)
    return cli_usage_error("coll", "--dedup applies only to alltoall");

  double sizes[64];
  int nsizes = 0, urc = parse_sizes(bytes_s, sweep_s, sizes, &nsizes);
  if (urc)
    return urc;

  st_err err;
  st_err_clear(&err);
  plat_cluster *cl = NULL;
  if (plat_cluster_load(cluster, &cl, &err))
    return cli_fail(&err);
  if (gpus > cl->num_gpus) {
    st_err_set(&err, ST_EINPUT, "--gpus %d: cluster '%s' has only %d GPUs", gpus, cl->name,
               cl->num_gpus);
    plat_cluster_destroy(cl);
    return cli_fail(&err);
  }
  wl_workload *wl = build_workload(op, gpus, nsizes, sizes, topk, experts, &err);
  sim_result *res = NULL;
  if (!wl || sim_run(wl, cl, &opt, &res, &err)) {
    wl_workload_destroy(wl);
    plat_cluster_destroy(cl);
    return cli_fail(&err);
  }

  print_coll(res, op, opname, gpus, cl, &opt, sizes, nsizes, json);
  sim_result_destroy(res);
  wl_workload_destroy(wl);
  plat_cluster_destroy(cl);
  return 0;
}
