/* bench_engine.c — replay-engine throughput on a synthetic 2D-parallel step.
 *
 * NODES nodes of 8 GPUs; every GPU runs one program: LAYERS x (compute,
 * tensor-parallel all-reduce over its node's 8 GPUs), then a data-parallel
 * all-reduce over the GPUs of the same local index on every node (one rail),
 * overlapped on a second stream.  Prints wall time, simulated activities,
 * activities per second and peak memory.
 *
 * Collectives use the ideal model (alpha-beta rings) so the step has a closed
 * form; "exact" as the fourth argument turns the closed-form shortcut off.
 *
 * usage: bench_engine [NODES] [LAYERS] [CLUSTER] [exact]   (defaults 16 32 node8:NODES)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "sim.h"

int main(int argc, char **argv)
{
  int nodes = argc > 1 ? atoi(argv[1]) : 16;
  int layers = argc > 2 ? atoi(argv[2]) : 32;
  char cluster[64];
  if (argc > 3)
    snprintf(cluster, sizeof cluster, "%s", argv[3]);
  else
    snprintf(cluster, sizeof cluster, "node8:%d", nodes);
  int n = nodes * 8;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);

  const char *roles[] = {"tp", "dp"};
  const char *streams[] = {"compute", "dp"};
  wl_workload *wl = wl_workload_create(n, 2, roles);
  int p = wl_program_add(wl, "layer-stack", 2, streams);
  wl_program *pg = &wl->programs[p];
  long last = -1;
  for (int l = 0; l < layers; l++) {
    wl_op c = wl_op_compute(0, 200e-6);
    wl_program_append(pg, &c, NULL, 0);
    wl_op ar = wl_op_coll(0, WL_COLL_ALLREDUCE, 0, 16.0 * (1 << 20));
    last = wl_program_append(pg, &ar, NULL, 0);
  }
  wl_op dp = wl_op_coll(1, WL_COLL_ALLREDUCE, 1, 256.0 * (1 << 20));
  uint32_t w = (uint32_t)last;
  wl_program_append(pg, &dp, &w, 1);
  int32_t *ranks = malloc((size_t)(n > 8 ? n : 8) * sizeof *ranks);
  for (int node = 0; node < nodes; node++) {
    for (int g = 0; g < 8; g++)
      ranks[g] = node * 8 + g;
    char name[32];
    snprintf(name, sizeof name, "tp-%d", node);
    int c = wl_comm_add(wl, name, WL_COMM_TP, 8, ranks);
    for (int g = 0; g < 8; g++)
      wl_rank_set_comm(wl, node * 8 + g, 0, c);
  }
  for (int g = 0; g < 8; g++) {
    for (int node = 0; node < nodes; node++)
      ranks[node] = node * 8 + g;
    char name[32];
    snprintf(name, sizeof name, "dp-%d", g);
    int c = wl_comm_add(wl, name, WL_COMM_DP, nodes, ranks);
    for (int node = 0; node < nodes; node++)
      wl_rank_set_comm(wl, node * 8 + g, 1, c);
  }
  free(ranks);
  for (int r = 0; r < n; r++)
    wl_rank_set(wl, r, p);

  st_err err;
  plat_cluster *cl;
  if (plat_cluster_load(cluster, &cl, &err)) {
    fprintf(stderr, "bench_engine: %s\n", err.msg);
    return 2;
  }
  sim_options opt;
  sim_options_init(&opt);
  opt.coll_model = SIM_COLL_IDEAL;
  opt.quiet = 1;
  if (argc > 4 && !strcmp(argv[4], "exact"))
    opt.fast_colls = 0;
  sim_result *res;
  if (sim_run(wl, cl, &opt, &res, &err)) {
    fprintf(stderr, "bench_engine: %s\n", err.msg);
    return 3;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double total = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  printf("gpus=%d layers=%d collectives=%zu closed_form=%llu activities=%llu "
         "simulated_step=%.6f s wall_total=%.2f s wall_sim=%.2f s maxrss=%.0f MiB\n",
         n, layers, res->num_colls, (unsigned long long)res->fast_colls,
         (unsigned long long)res->events, res->step_time_s, total, res->wall_s,
         ru.ru_maxrss / 1024.0);
  sim_result_destroy(res);
  plat_cluster_destroy(cl);
  wl_workload_destroy(wl);
  return 0;
}
