/* sim_fork.h — run sim_run in a child process (drv_isolated: SimGrid allows
 * one engine per process) and bring back what tests check: the return code,
 * the error text, the step time, per-rank stats, collective records and
 * link stats. */
#ifndef ST_TEST_SIM_FORK_H
#define ST_TEST_SIM_FORK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

typedef struct forked_result {
  int rc;
  char msg[ST_ERR_MSG_MAX];
  double step_time_s;
  uint64_t fast_colls;
  int num_ranks;
  sim_rank_stats *ranks;
  size_t num_colls;
  sim_coll_record *colls;
  size_t num_links;
  char (*link_names)[64];
  double *link_bytes;
  double *link_bw;   /* bandwidth reported, B/s */
  double *link_peak; /* peak utilisation */
  size_t num_link_usage;
  sim_link_usage *link_usage;
  int simulated_ranks;
  char reduction[200];
  uint64_t events;
  uint64_t chains, chains_cut;
} forked_result;

static void forked_result_free(forked_result *f)
{
  if (!f)
    return;
  free(f->ranks);
  free(f->colls);
  free(f->link_names);
  free(f->link_bytes);
  free(f->link_bw);
  free(f->link_peak);
  free(f->link_usage);
  free(f);
}

typedef struct fork_job {
  const wl_workload *wl;
  const char *cluster;
  const sim_options *opt;
  void (*tweak)(plat_cluster *, const void *);
  const void *u;
} fork_job;

#define FR_PUT(b, x) st_buf_append(b, &(x), sizeof(x))

static int fork_task(void *u, int index, st_buf *b, st_err *err)
{
  (void)index;
  const fork_job *j = u;
  plat_cluster *cl = NULL;
  sim_result *r = NULL;
  int rc = plat_cluster_load(j->cluster, &cl, err);
  if (!rc && j->tweak)
    j->tweak(cl, j->u);
  if (!rc)
    rc = sim_run(j->wl, cl, j->opt, &r, err);
  if (rc)
    return rc;
  FR_PUT(b, r->step_time_s);
  FR_PUT(b, r->fast_colls);
  FR_PUT(b, r->simulated_ranks);
  FR_PUT(b, r->reduction);
  FR_PUT(b, r->events);
  FR_PUT(b, r->chains);
  FR_PUT(b, r->chains_cut);
  FR_PUT(b, r->num_ranks);
  st_buf_append(b, r->ranks, (size_t)r->num_ranks * sizeof *r->ranks);
  FR_PUT(b, r->num_colls);
  st_buf_append(b, r->colls, r->num_colls * sizeof *r->colls);
  FR_PUT(b, r->num_links);
  for (size_t i = 0; i < r->num_links; i++) {
    char name[64] = {0};
    snprintf(name, sizeof name, "%s", r->links[i].name);
    FR_PUT(b, name);
    FR_PUT(b, r->links[i].bytes);
    FR_PUT(b, r->links[i].bandwidth_Bps);
    FR_PUT(b, r->links[i].peak_util);
  }
  FR_PUT(b, r->num_link_usage);
  st_buf_append(b, r->link_usage, r->num_link_usage * sizeof *r->link_usage);
  sim_result_destroy(r);
  plat_cluster_destroy(cl);
  return ST_OK;
}

/* An array of n items read from the reply (NULL when it ran short). */
static void *fr_array(drv_reader *rd, size_t n, size_t size)
{
  void *p = calloc(n + 1, size);
  if (p)
    drv_read(rd, p, n * size);
  return p;
}

/* Runs sim_run(wl, cluster, opt) in a child, after tweak(cluster, u) when
 * tweak is not NULL (tests that change a preset's parameters).  Returns NULL
 * only if the child crashed or its answer was cut short. */
static forked_result *sim_run_forked_tweaked(const wl_workload *wl, const char *cluster,
                                             const sim_options *opt,
                                             void (*tweak)(plat_cluster *, const void *),
                                             const void *u)
{
  fork_job j = {wl, cluster, opt, tweak, u};
  char *data = NULL;
  size_t len = 0;
  st_err err;
  st_err_clear(&err);
  int rc = drv_isolated(fork_task, &j, 0, &data, &len, &err);
  forked_result *f = calloc(1, sizeof *f);
  if (!f || (rc == ST_ESIM && (!strncmp(err.msg, "crashed (signal", 15) ||
                                   !strcmp(err.msg, "ended without an answer"))) || rc == ST_EIO || rc == ST_ENOMEM) {
    free(data);
    free(f);
    return NULL;
  }
  f->rc = rc;
  snprintf(f->msg, sizeof f->msg, "%s", err.msg);
  if (!rc) {
    drv_reader rd = {data, data + len, 0};
    drv_read(&rd, &f->step_time_s, sizeof f->step_time_s);
    drv_read(&rd, &f->fast_colls, sizeof f->fast_colls);
    drv_read(&rd, &f->simulated_ranks, sizeof f->simulated_ranks);
    drv_read(&rd, f->reduction, sizeof f->reduction);
    drv_read(&rd, &f->events, sizeof f->events);
    drv_read(&rd, &f->chains, sizeof f->chains);
    drv_read(&rd, &f->chains_cut, sizeof f->chains_cut);
    drv_read(&rd, &f->num_ranks, sizeof f->num_ranks);
    f->ranks = fr_array(&rd, (size_t)(f->num_ranks > 0 ? f->num_ranks : 0), sizeof *f->ranks);
    drv_read(&rd, &f->num_colls, sizeof f->num_colls);
    f->colls = rd.bad ? NULL : fr_array(&rd, f->num_colls, sizeof *f->colls);
    drv_read(&rd, &f->num_links, sizeof f->num_links);
    if (!rd.bad) {
      f->link_names = calloc(f->num_links + 1, sizeof *f->link_names);
      f->link_bytes = calloc(f->num_links + 1, sizeof *f->link_bytes);
      f->link_bw = calloc(f->num_links + 1, sizeof *f->link_bw);
      f->link_peak = calloc(f->num_links + 1, sizeof *f->link_peak);
    }
    for (size_t i = 0; !rd.bad && f->link_names && f->link_bytes && f->link_bw && f->link_peak &&
                       i < f->num_links;
         i++) {
      drv_read(&rd, f->link_names[i], sizeof f->link_names[i]);
      drv_read(&rd, &f->link_bytes[i], sizeof(double));
      drv_read(&rd, &f->link_bw[i], sizeof(double));
      drv_read(&rd, &f->link_peak[i], sizeof(double));
    }
    drv_read(&rd, &f->num_link_usage, sizeof f->num_link_usage);
    f->link_usage = rd.bad ? NULL : fr_array(&rd, f->num_link_usage, sizeof *f->link_usage);
    if (rd.bad || !f->ranks || !f->colls || !f->link_names || !f->link_bytes || !f->link_bw ||
        !f->link_peak || !f->link_usage) {
      free(data);
      forked_result_free(f);
      return NULL;
    }
  }
  free(data);
  return f;
}

static inline forked_result *sim_run_forked(const wl_workload *wl, const char *cluster,
                                            const sim_options *opt)
{
  return sim_run_forked_tweaked(wl, cluster, opt, NULL, NULL);
}

#endif
