/* bench_platform.c — load time and memory of a cluster's SimGrid platform as
 * the GPUs grow (the construction must stay about linear).
 *
 *   bench_platform [PRESET] [NODES ...]     (default: dgx-h100 256 2048 16384)
 *
 * Each size runs in its own forked process (one SimGrid engine per process):
 * spec load + simgrid_init + plat_cluster_build + seal, then 10,000 route
 * queries between random GPU pairs and one 2-host ptask.  Prints wall time
 * of the build, peak resident memory of the child, and the route query rate.
 */
#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <xbt/dynar.h>

#include "driver.h"
#include "platform.h"

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static sg_host_t *hosts;
static int ngpus;

static void driver(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  sg_host_t h[2] = {hosts[0], hosts[ngpus - 1]};
  double m[4] = {0, 1e9, 0, 0};
  sg_exec_t e = sg_actor_parallel_exec_init(2, h, NULL, m);
  sg_exec_start(e);
  sg_exec_wait(e);
}

static int run_one(const char *arg)
{
  double t0 = now();
  st_err err = {0};
  plat_cluster *c = NULL;
  if (plat_cluster_load(arg, &c, &err)) {
    fprintf(stderr, "bench_platform: %s\n", err.msg);
    return 1;
  }
  int argc = 5;
  char a0[] = "bench", a1[] = "--cfg=host/model:ptask_L07", a2[] = "--cfg=network/TCP-gamma:0",
       a3[] = "--log=root.thres:critical", a4[] = "--cfg=contexts/guard-size:0";
  char *argv[] = {a0, a1, a2, a3, a4, NULL};
  simgrid_init(&argc, argv);
  hosts = calloc((size_t)c->num_gpus, sizeof *hosts);
  ngpus = c->num_gpus;
  if (plat_cluster_build(c, (void **)hosts, &err)) {
    fprintf(stderr, "bench_platform: %s\n", err.msg);
    return 1;
  }
  double t_build = now() - t0;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double rss_build = ru.ru_maxrss / 1024.0;
  /* route queries */
  uint64_t seed = 42;
  xbt_dynar_t links = xbt_dynar_new(sizeof(void *), NULL);
  double t1 = now();
  long nlinks = 0;
  for (int i = 0; i < 10000; i++) {
    int a = (int)(st_splitmix64(&seed) % (uint64_t)ngpus), b = (int)(st_splitmix64(&seed) % (uint64_t)ngpus);
    xbt_dynar_reset(links);
    sg_host_get_route(hosts[a], hosts[b], links);
    nlinks += (long)xbt_dynar_length(links);
  }
  double t_routes = now() - t1;
  xbt_dynar_free(&links);
  sg_actor_create("driver", hosts[0], driver, 0, NULL);
  simgrid_run();
  getrusage(RUSAGE_SELF, &ru);
  printf("| %-18s | %7d | %9d | %8.2f | %8.0f | %8.2f | %6.2f |\n", c->name, c->num_gpus,
         c->num_links, t_build, rss_build, t_routes / 10000 * 1e6, (double)nlinks / 10000);
  fflush(stdout);
  plat_cluster_destroy(c);
  return 0;
}

static int run_task(void *u, int index, st_buf *reply, st_err *err)
{
  (void)index;
  (void)reply;
  return run_one(u) ? st_err_set(err, ST_EIO, "the run failed") : ST_OK;
}

int main(int argc, char **argv)
{
  const char *preset = argc > 1 ? argv[1] : "dgx-h100";
  static const char *const def[] = {"256", "2048", "16384"};
  int n = argc > 2 ? argc - 2 : 3;
  printf("| cluster            |    GPUs |     links |  build s | peak MiB | route us | links/route |\n");
  printf("|---|---|---|---|---|---|---|\n");
  fflush(stdout);
  int fails = 0;
  for (int i = 0; i < n; i++) {
    char arg[256];
    snprintf(arg, sizeof arg, "%s:%s", preset, argc > 2 ? argv[i + 2] : def[i]);
    /* one SimGrid engine per process: each size in a child of its own */
    char *reply = NULL;
    size_t len;
    st_err err = {0};
    if (drv_isolated(run_task, arg, 0, &reply, &len, &err)) {
      fprintf(stderr, "bench_platform: %s: %s\n", arg, err.msg);
      fails++;
    }
    free(reply);
  }
  return fails ? 1 : 0;
}
