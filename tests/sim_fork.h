/* sim_fork.h — run sim_run in a forked child (SimGrid allows one engine per
 * process) and bring back what tests check: the return code, the error text,
 * the step time, per-rank stats, collective records and link stats. */
#ifndef ST_TEST_SIM_FORK_H
#define ST_TEST_SIM_FORK_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim.h"

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
  size_t num_link_usage;
  sim_link_usage *link_usage;
  int simulated_ranks;
  char reduction[200];
  uint64_t events;
  uint64_t chains, chains_cut;
} forked_result;

static int fr_write_all(int fd, const void *p, size_t n)
{
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w <= 0)
      return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

static int fr_read_all(int fd, void *p, size_t n)
{
  char *c = p;
  while (n) {
    ssize_t r = read(fd, c, n);
    if (r <= 0)
      return -1;
    c += r;
    n -= (size_t)r;
  }
  return 0;
}

static void forked_result_free(forked_result *f)
{
  if (!f)
    return;
  free(f->ranks);
  free(f->colls);
  free(f->link_names);
  free(f->link_bytes);
  free(f->link_usage);
  free(f);
}

/* Runs sim_run(wl, cluster, opt) in a child, after tweak(cluster, u) when
 * tweak is not NULL (tests that change a preset's parameters).  Returns NULL
 * only if the child crashed or the pipe broke. */
static forked_result *sim_run_forked_tweaked(const wl_workload *wl, const char *cluster,
                                             const sim_options *opt,
                                             void (*tweak)(plat_cluster *, const void *),
                                             const void *u)
{
  int fds[2];
  if (pipe(fds))
    return NULL;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    /* cmocka's handlers would carry a crash back into the test loop here */
    signal(SIGSEGV, SIG_DFL);
    signal(SIGABRT, SIG_DFL);
    signal(SIGBUS, SIG_DFL);
    signal(SIGFPE, SIG_DFL);
    signal(SIGILL, SIG_DFL);
    close(fds[0]);
    st_err err;
    st_err_clear(&err);
    plat_cluster *cl = NULL;
    sim_result *r = NULL;
    int rc = plat_cluster_load(cluster, &cl, &err);
    if (!rc && tweak)
      tweak(cl, u);
    if (!rc)
      rc = sim_run(wl, cl, opt, &r, &err);
    fr_write_all(fds[1], &rc, sizeof rc);
    fr_write_all(fds[1], err.msg, sizeof err.msg);
    if (!rc) {
      fr_write_all(fds[1], &r->step_time_s, sizeof r->step_time_s);
      fr_write_all(fds[1], &r->fast_colls, sizeof r->fast_colls);
      fr_write_all(fds[1], &r->simulated_ranks, sizeof r->simulated_ranks);
      fr_write_all(fds[1], r->reduction, sizeof r->reduction);
      fr_write_all(fds[1], &r->events, sizeof r->events);
      fr_write_all(fds[1], &r->chains, sizeof r->chains);
      fr_write_all(fds[1], &r->chains_cut, sizeof r->chains_cut);
      fr_write_all(fds[1], &r->num_ranks, sizeof r->num_ranks);
      fr_write_all(fds[1], r->ranks, (size_t)r->num_ranks * sizeof *r->ranks);
      fr_write_all(fds[1], &r->num_colls, sizeof r->num_colls);
      fr_write_all(fds[1], r->colls, r->num_colls * sizeof *r->colls);
      fr_write_all(fds[1], &r->num_links, sizeof r->num_links);
      for (size_t i = 0; i < r->num_links; i++) {
        char name[64] = {0};
        snprintf(name, sizeof name, "%s", r->links[i].name);
        fr_write_all(fds[1], name, sizeof name);
        fr_write_all(fds[1], &r->links[i].bytes, sizeof(double));
      }
      fr_write_all(fds[1], &r->num_link_usage, sizeof r->num_link_usage);
      fr_write_all(fds[1], r->link_usage, r->num_link_usage * sizeof *r->link_usage);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  forked_result *f = calloc(1, sizeof *f);
  int ok = f && !fr_read_all(fds[0], &f->rc, sizeof f->rc) &&
           !fr_read_all(fds[0], f->msg, sizeof f->msg);
  if (ok && !f->rc) {
    ok = !fr_read_all(fds[0], &f->step_time_s, sizeof f->step_time_s) &&
         !fr_read_all(fds[0], &f->fast_colls, sizeof f->fast_colls) &&
         !fr_read_all(fds[0], &f->simulated_ranks, sizeof f->simulated_ranks) &&
         !fr_read_all(fds[0], f->reduction, sizeof f->reduction) &&
         !fr_read_all(fds[0], &f->events, sizeof f->events) &&
         !fr_read_all(fds[0], &f->chains, sizeof f->chains) &&
         !fr_read_all(fds[0], &f->chains_cut, sizeof f->chains_cut) &&
         !fr_read_all(fds[0], &f->num_ranks, sizeof f->num_ranks);
    if (ok) {
      f->ranks = calloc((size_t)f->num_ranks + 1, sizeof *f->ranks);
      ok = f->ranks && !fr_read_all(fds[0], f->ranks, (size_t)f->num_ranks * sizeof *f->ranks) &&
           !fr_read_all(fds[0], &f->num_colls, sizeof f->num_colls);
    }
    if (ok) {
      f->colls = calloc(f->num_colls + 1, sizeof *f->colls);
      ok = f->colls && !fr_read_all(fds[0], f->colls, f->num_colls * sizeof *f->colls) &&
           !fr_read_all(fds[0], &f->num_links, sizeof f->num_links);
    }
    if (ok) {
      f->link_names = calloc(f->num_links + 1, sizeof *f->link_names);
      f->link_bytes = calloc(f->num_links + 1, sizeof *f->link_bytes);
      for (size_t i = 0; ok && i < f->num_links; i++)
        ok = !fr_read_all(fds[0], f->link_names[i], sizeof f->link_names[i]) &&
             !fr_read_all(fds[0], &f->link_bytes[i], sizeof(double));
      ok = ok && !fr_read_all(fds[0], &f->num_link_usage, sizeof f->num_link_usage);
    }
    if (ok) {
      f->link_usage = calloc(f->num_link_usage + 1, sizeof *f->link_usage);
      ok = f->link_usage &&
           !fr_read_all(fds[0], f->link_usage, f->num_link_usage * sizeof *f->link_usage);
    }
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!ok || !WIFEXITED(status)) {
    forked_result_free(f);
    return NULL;
  }
  return f;
}

static inline forked_result *sim_run_forked(const wl_workload *wl, const char *cluster,
                                            const sim_options *opt)
{
  return sim_run_forked_tweaked(wl, cluster, opt, NULL, NULL);
}

#endif
