/* wl_layout_split.c — uneven splits of a layout, for clusters whose GPUs
 * are not alike (platforms/groups.c): layers per pipeline stage
 * (stage_layers=8/8/12/12) and micro-batches per data-parallel replica
 * (dp_microbatches=6*2/2*2), as hardware-aware load balancing gives a fast
 * stage more layers and a fast replica more of the batch (Whale, ATC'22;
 * HetPipe).  Both are plain numbers here; balance=compute, which derives
 * them from the cluster, lives in the driver (sim/driver/drv_balance.c): the
 * workload layer does not see the platform.
 *
 * A replica is the ranks of one data-parallel index d (rank = tp + T (cp +
 * C (d + D pp))); all its stages run its micro-batches, so the pipeline's
 * sends and receives pair up as they do with an even split, and the
 * gradient reduction, once per step, waits for the replica that runs
 * longest.  What is issued per micro-batch across replicas cannot differ,
 * so zero=3 (parameters gathered across the data-parallel group every
 * micro-batch) and expert parallelism (all-to-alls across the replicas of a
 * stage) refuse dp_microbatches.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_gen_int.h"

/* "a/b/c" -> up to cap numbers >= 1; each item N or (with runs) N*K.
 * Returns the count, or -1 with msg set. */
static int parse_list(const char *s, int runs, int *val, int *len, int cap, char *msg, size_t mcap)
{
  int n = 0;
  const char *p = s;
  while (1) {
    char *end;
    long v = strtol(p, &end, 10), k = 1;
    if (end == p || v < 1 || v > 1000000000L) {
      snprintf(msg, mcap, "item %d ('%.*s') is not a positive integer", n + 1,
               (int)strcspn(p, "/"), p);
      return -1;
    }
    if (runs && *end == '*') {
      const char *q = end + 1;
      k = strtol(q, &end, 10);
      if (end == q || k < 1 || k > 100000000L) {
        snprintf(msg, mcap, "item %d: the count after '*' is not a positive integer", n + 1);
        return -1;
      }
    }
    if (*end && *end != '/') {
      snprintf(msg, mcap, "item %d ('%.*s') is not %s", n + 1, (int)strcspn(p, "/"), p,
               runs ? "N or N*K" : "a positive integer");
      return -1;
    }
    if (n == cap) {
      snprintf(msg, mcap, "has more than %d items", cap);
      return -1;
    }
    val[n] = (int)v;
    len[n] = (int)k;
    n++;
    if (!*end)
      return n;
    p = end + 1;
  }
}

int wl__layout_stage_list(wl_layout *l, const wl_model *m, char *msg, size_t cap)
{
  int val[WL_MAX_STAGES], len[WL_MAX_STAGES];
  int n = parse_list(l->stage_layers, 0, val, len, WL_MAX_STAGES, msg, cap);
  if (n < 0)
    return -1;
  if (n != l->pp) {
    snprintf(msg, cap, "has %d stages, pp is %d", n, l->pp);
    return -1;
  }
  long sum = 0;
  for (int s = 0; s < n; s++)
    sum += val[s];
  if (sum != m->layers) {
    snprintf(msg, cap, "sums to %ld layers, the model has %d", sum, m->layers);
    return -1;
  }
  for (int s = 0; s < n; s++) {
    if (val[s] % l->vpp) {
      snprintf(msg, cap, "gives stage %d %d layers, not divisible by vpp (%d)", s, val[s], l->vpp);
      return -1;
    }
    for (int c = 0; c < l->vpp; c++)
      l->vs_layers[c * l->pp + s] = val[s] / l->vpp;
  }
  return 0;
}

int wl__layout_dp_list(wl_layout *l, char *msg, size_t cap)
{
  int n = parse_list(l->dp_microbatches, 1, l->dp_run_mb, l->dp_run_len, WL_MAX_DP_RUNS, msg,
                     cap);
  if (n < 0)
    return -1;
  long replicas = 0, mb = 0;
  int most = 0;
  for (int i = 0; i < n; i++) {
    replicas += l->dp_run_len[i];
    mb += (long)l->dp_run_mb[i] * l->dp_run_len[i];
    most = l->dp_run_mb[i] > most ? l->dp_run_mb[i] : most;
    if (l->schedule == WL_SCHED_INTERLEAVED && l->dp_run_mb[i] % l->pp) {
      snprintf(msg, cap, "gives %d micro-batches, not divisible by pp (%d) as the interleaved "
                         "schedule needs", l->dp_run_mb[i], l->pp);
      return -1;
    }
  }
  if (replicas != l->dp) {
    snprintf(msg, cap, "covers %ld replicas, dp is %d", replicas, l->dp);
    return -1;
  }
  if (mb > l->gbs || mb * l->mbs != l->gbs) { /* (mb <= gbs keeps the product in a long) */
    snprintf(msg, cap, "gives %ld micro-batches of mbs %d = %.0f samples, gbs is %d", mb, l->mbs,
             (double)mb * l->mbs, l->gbs);
    return -1;
  }
  if (l->zero == 3) {
    snprintf(msg, cap, "cannot go with zero=3: parameters are gathered across the data-parallel "
                       "group every micro-batch, so every replica runs as many");
    return -1;
  }
  if (l->ep > 1) {
    snprintf(msg, cap, "cannot go with ep > 1: the experts' all-to-alls span the replicas of a "
                       "stage every micro-batch");
    return -1;
  }
  l->dp_runs = n;
  l->num_microbatches = most; /* what the schedule and memory bound: the longest replica */
  return 0;
}

int wl_layout_replica_microbatches(const wl_layout *l, int d)
{
  for (int i = 0; i < l->dp_runs; i++) {
    if (d < l->dp_run_len[i])
      return l->dp_run_mb[i];
    d -= l->dp_run_len[i];
  }
  return l->num_microbatches;
}
