/* bench_gen.c — how long and how much memory building a large generated
 * workload takes.  Default: llama3-405b on 16,384 GPUs (tp=8, pp=16, dp=128,
 * mbs=1, gbs=2048, seq 8192, 7 layers on the first and last stages).
 *
 *   bench_gen [MODEL [LAYOUT [GPUS]]]
 *
 * Prints wall time, peak RSS (getrusage), programs, ops and communicators. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "workload.h"

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
  const char *model = argc > 1 ? argv[1] : "llama3-405b";
  const char *spec = argc > 2 ? argv[2]
                              : "tp=8,pp=16,dp=128,mbs=1,gbs=2048,sp=1,first_stage_layers=7,"
                                "last_stage_layers=7";
  int gpus = argc > 3 ? atoi(argv[3]) : 16384;
  st_err err;
  st_err_clear(&err);
  struct rusage ru0;
  getrusage(RUSAGE_SELF, &ru0);
  double t0 = now_s();
  wl_model m;
  wl_layout l;
  wl_workload *wl = NULL;
  if (wl_model_load(model, &m, &err) || wl_layout_parse(spec, gpus, &m, &l, &err) ||
      wl_generate(&m, &l, &wl, &err)) {
    fprintf(stderr, "bench_gen: error: %s\n", err.msg);
    return 2;
  }
  double t1 = now_s();
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("model          %s\n", model);
  printf("layout         %s\n", l.spec);
  printf("ranks          %d\n", wl->num_ranks);
  printf("programs       %d\n", wl->num_programs);
  printf("communicators  %d\n", wl->num_comms);
  size_t largest = 0;
  for (int i = 0; i < wl->num_programs; i++)
    if (wl->programs[i].num_ops > largest)
      largest = wl->programs[i].num_ops;
  printf("ops            %zu (largest program %zu)\n", wl_workload_num_ops(wl), largest);
  printf("workload bytes %.1f MB (wl_workload_memory_bytes)\n", wl_workload_memory_bytes(wl) / 1e6);
  printf("build time     %.3f s\n", t1 - t0);
  printf("peak RSS       %.1f MB (getrusage ru_maxrss; %.1f MB before the build)\n",
         ru.ru_maxrss / 1024.0, ru0.ru_maxrss / 1024.0);
  printf("model FLOPs    %.4g per step\n", wl->meta.model_flops_per_step);
  printf("peak memory    %.2f GiB per rank (largest stage)\n", wl->meta.peak_memory_bytes / 1073741824.0);
  wl_workload_destroy(wl);
  return 0;
}
