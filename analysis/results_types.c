/* results_types.c — the results file's columns, shared by its writer
 * (results.c) and its reader (results_read.c): the summary's fields and the
 * compound types of the row datasets (an_results.h). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <hdf5.h>

#include "an_h5.h"
#include "an_results.h"
#include "analysis.h"

/* ---- summary fields -------------------------------------------------------- */
const an__summary_field an__summary_doubles[] = {
#define F(x) {#x, offsetof(an_summary, x)}
    F(step_time_s),       F(tokens_per_step),   F(tokens_per_s),      F(tokens_per_s_per_gpu),
    F(model_flops_per_step), F(model_tflops_per_gpu), F(mfu),        F(compute_s),
    F(exposed_comm_s),    F(overlapped_comm_s), F(bubble_s),          F(idle_s),
    F(peak_memory_bytes), F(device_memory_bytes), F(sim_wall_s),      F(events),
    F(simulated_ranks),   F(train_tokens),      F(train_steps),       F(time_to_train_s),
    F(price_usd_per_gpu_hour), F(cost_usd),     F(gpu_busy_fraction), F(power_W),
    F(pue),               F(energy_MWh),
    F(slowest_rank),      F(num_critical_ranks), F(slowest_wait_s),    F(max_wait_rank),
    F(max_wait_s),        F(offload_s),         F(offload_exposed_s),
    F(pod_exposed_s),     F(pod_link_bytes),    F(pod_link_busy_s),
#undef F
};
const size_t an__num_summary_doubles = sizeof an__summary_doubles / sizeof an__summary_doubles[0];

/* Summary fields added after the first version: absent in older files. */
/* The critical-path ones are written only for runs with stragglers. */
int an__summary_critical(const char *name)
{
  return !strcmp(name, "slowest_rank") || !strcmp(name, "num_critical_ranks") ||
         !strcmp(name, "slowest_wait_s") || !strcmp(name, "max_wait_rank") ||
         !strcmp(name, "max_wait_s");
}

/* The offload ones only for runs with offload. */
int an__summary_offload(const char *name)
{
  return !strcmp(name, "offload_s") || !strcmp(name, "offload_exposed_s");
}
/* The inter-pod ones only for runs on a cluster of pods. */
int an__summary_pods(const char *name) { return !strncmp(name, "pod_", 4); }

int an__summary_optional(const char *name)
{
  static const char *const later[] = {"simulated_ranks", "train_tokens", "train_steps",
                                      "time_to_train_s", "price_usd_per_gpu_hour", "cost_usd",
                                      "gpu_busy_fraction", "power_W", "pue", "energy_MWh",
                                      "slowest_rank", "num_critical_ranks", "slowest_wait_s",
                                      "max_wait_rank", "max_wait_s", "offload_s",
                                      "offload_exposed_s", "pod_exposed_s",
                                      "pod_link_bytes", "pod_link_busy_s", NULL};
  for (int i = 0; later[i]; i++)
    if (!strcmp(name, later[i]))
      return 1;
  return 0;
}

/* ---- compound types ---------------------------------------------------------- */
void an__phase_col(int i, char *buf, size_t n) { snprintf(buf, n, "busy_%s_s", wl_phase_name(i)); }
void an__kind_col(int i, char *buf, size_t n) { snprintf(buf, n, "comm_%s_s", wl_comm_kind_name(i)); }

hid_t an__rank_type(void)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(an_rank_row));
  if (t < 0)
    return -1;
  int bad = 0;
#define D(x) bad |= H5Tinsert(t, #x, offsetof(an_rank_row, x), H5T_NATIVE_DOUBLE) < 0
  bad |= H5Tinsert(t, "rank", offsetof(an_rank_row, rank), H5T_NATIVE_INT32) < 0;
  bad |= H5Tinsert(t, "host", offsetof(an_rank_row, host), H5T_NATIVE_INT32) < 0;
  D(compute_s);
  D(comm_s);
  D(exposed_comm_s);
  D(overlapped_comm_s);
  D(bubble_s);
  D(idle_s);
  D(finish_s);
#undef D
  char name[64];
  for (int i = 0; i < WL_PHASE_COUNT; i++) {
    an__phase_col(i, name, sizeof name);
    bad |= H5Tinsert(t, name, offsetof(an_rank_row, phase_s) + i * sizeof(double),
                     H5T_NATIVE_DOUBLE) < 0;
  }
  for (int i = 0; i < WL_COMM_KIND_COUNT; i++) {
    an__kind_col(i, name, sizeof name);
    bad |= H5Tinsert(t, name, offsetof(an_rank_row, comm_kind_s) + i * sizeof(double),
                     H5T_NATIVE_DOUBLE) < 0;
  }
  if (bad) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

/* The /collectives row; with_run adds the columns saying how each
 * collective ran (algo, proto, channels), absent from older files. */
hid_t an__coll_type(int with_run)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(an_coll_row));
  if (t < 0)
    return -1;
  int bad = 0;
#define S(x) bad |= an__h5_insert_str(t, #x, offsetof(an_coll_row, x), sizeof(((an_coll_row *)0)->x)) < 0
#define D(x) bad |= H5Tinsert(t, #x, offsetof(an_coll_row, x), H5T_NATIVE_DOUBLE) < 0
#define I(x) bad |= H5Tinsert(t, #x, offsetof(an_coll_row, x), H5T_NATIVE_INT32) < 0
  S(op);
  S(comm);
  S(comm_kind);
  I(nranks);
  D(bytes);
  D(first_arrival_s);
  D(start_s);
  D(end_s);
  D(algbw_GBps);
  D(busbw_GBps);
  I(src);
  I(dst);
  if (with_run) {
    S(algo);
    S(proto);
    I(channels);
  }
  if (bad) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

hid_t an__timeline_type(void)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(an_timeline_row));
  if (t < 0)
    return -1;
  int bad = 0;
#undef S
#undef D
#undef I
#define S(x)                                                                                  \
  bad |= an__h5_insert_str(t, #x, offsetof(an_timeline_row, x), sizeof(((an_timeline_row *)0)->x)) < 0
#define D(x) bad |= H5Tinsert(t, #x, offsetof(an_timeline_row, x), H5T_NATIVE_DOUBLE) < 0
#define I(x) bad |= H5Tinsert(t, #x, offsetof(an_timeline_row, x), H5T_NATIVE_INT32) < 0
  I(rank);
  I(stream);
  S(stream_name);
  S(kind);
  S(name);
  D(start_s);
  D(end_s);
  D(bytes);
  D(flops);
  I(peer);
  I(comm);
#undef S
#undef D
#undef I
  if (bad) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

hid_t an__link_usage_type(void)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(an_link_usage_row));
  if (t < 0)
    return -1;
  int bad = 0;
#define S(x)                                                                                  \
  bad |= an__h5_insert_str(t, #x, offsetof(an_link_usage_row, x), sizeof(((an_link_usage_row *)0)->x)) < 0
  bad |= H5Tinsert(t, "link", offsetof(an_link_usage_row, link), H5T_NATIVE_INT32) < 0;
  S(op);
  S(comm);
  S(comm_kind);
  bad |= H5Tinsert(t, "bytes", offsetof(an_link_usage_row, bytes), H5T_NATIVE_DOUBLE) < 0;
#undef S
  if (bad) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

hid_t an__comm_type(void)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(an_comm_row));
  if (t < 0)
    return -1;
  int bad = an__h5_insert_str(t, "name", offsetof(an_comm_row, name), sizeof(((an_comm_row *)0)->name)) < 0;
  bad |= an__h5_insert_str(t, "kind", offsetof(an_comm_row, kind), sizeof(((an_comm_row *)0)->kind)) < 0;
  bad |= H5Tinsert(t, "size", offsetof(an_comm_row, size), H5T_NATIVE_INT32) < 0;
  bad |= H5Tinsert(t, "first", offsetof(an_comm_row, first), H5T_NATIVE_INT32) < 0;
  if (bad) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

hid_t an__replay_type(void)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(an_replay_rank));
  if (t < 0)
    return -1;
  int bad = H5Tinsert(t, "rank", offsetof(an_replay_rank, rank), H5T_NATIVE_INT32) < 0;
  bad |= H5Tinsert(t, "source_rank", offsetof(an_replay_rank, source_rank), H5T_NATIVE_INT32) < 0;
#define D(x) bad |= H5Tinsert(t, #x, offsetof(an_replay_rank, x), H5T_NATIVE_DOUBLE) < 0
  D(start_offset_s);
  D(measured_step_s);
  D(replayed_step_s);
  D(measured_compute_s);
  D(replayed_compute_s);
  D(measured_comm_s);
  D(replayed_comm_s);
#undef D
  if (bad) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

/* Links: the name column is as wide as the longest name, so the row layout
 * is computed at run time: name at 0, four doubles after it. */

void an__link_layout_init(an__link_layout *l, size_t name_size)
{
  l->name_size = name_size ? name_size : 1;
  size_t o = (l->name_size + 7) & ~(size_t)7;
  l->off_bw = o;
  l->off_bytes = o + 8;
  l->off_busy = o + 16;
  l->off_peak = o + 24;
  l->row_size = o + 32;
}

hid_t an__link_type(const an__link_layout *l)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, l->row_size);
  if (t < 0)
    return -1;
  int bad = an__h5_insert_str(t, "name", 0, l->name_size) < 0;
  bad |= H5Tinsert(t, "bandwidth_Bps", l->off_bw, H5T_NATIVE_DOUBLE) < 0;
  bad |= H5Tinsert(t, "bytes", l->off_bytes, H5T_NATIVE_DOUBLE) < 0;
  bad |= H5Tinsert(t, "busy_s", l->off_busy, H5T_NATIVE_DOUBLE) < 0;
  bad |= H5Tinsert(t, "peak_util", l->off_peak, H5T_NATIVE_DOUBLE) < 0;
  if (bad) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

hid_t an__job_type(void)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(an_job_row));
  if (t < 0)
    return -1;
  int bad = 0;
#define S(x) bad |= an__h5_insert_str(t, #x, offsetof(an_job_row, x), sizeof(((an_job_row *)0)->x)) < 0
#define D(x) bad |= H5Tinsert(t, #x, offsetof(an_job_row, x), H5T_NATIVE_DOUBLE) < 0
  S(name);
  S(kind);
  S(gpus);
  bad |= H5Tinsert(t, "num_gpus", offsetof(an_job_row, num_gpus), H5T_NATIVE_INT32) < 0;
  D(step_time_alone_s);
  D(step_time_together_s);
  D(slowdown);
#undef S
#undef D
  if (bad) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

/* /shared_links: name, jobs, bytes (the in-memory mask and per-job bytes
 * are not stored). */
hid_t an__shared_link_type(void)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(an_shared_link));
  if (t < 0)
    return -1;
  int bad = an__h5_insert_str(t, "name", offsetof(an_shared_link, name),
                              sizeof(((an_shared_link *)0)->name)) < 0;
  bad |= an__h5_insert_str(t, "jobs", offsetof(an_shared_link, jobs),
                           sizeof(((an_shared_link *)0)->jobs)) < 0;
  bad |= H5Tinsert(t, "bytes", offsetof(an_shared_link, bytes), H5T_NATIVE_DOUBLE) < 0;
  if (bad) {
    H5Tclose(t);
    return -1;
  }
  return t;
}
