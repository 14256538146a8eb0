/* drv_pool.c — tasks in child processes, at most N at once.
 *
 * SimGrid allows one engine per process, so every prediction that is not the
 * process's only one (validation cases, search candidates, tests, benches)
 * runs in a child of its own.  The child's answer comes back over a pipe:
 * a fixed header (return code, message) and then the task's reply bytes;
 * the parent polls every running child's pipe and reads whatever arrived,
 * so a child with a large reply never blocks on a full pipe, and whichever
 * ends first frees its slot for the next task.  The time limit is the
 * child's own alarm(): SIGALRM ends it and the parent names it. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <time.h>
#include <unistd.h>

#include "driver.h"

typedef struct drv__head {
  int rc;
  char msg[ST_ERR_MSG_MAX];
} drv__head;

typedef struct drv__slot {
  int task; /* -1: free */
  pid_t pid;
  int fd;
  st_buf in; /* what the child wrote so far */
  double t0;
} drv__slot;

static double wall_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void write_all(int fd, const char *p, size_t n)
{
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return;
    p += w;
    n -= (size_t)w;
  }
}

/* In the child: run the task and write its answer; never returns. */
static void child_main(int fd, int timeout_s, drv_task_fn task, void *u, int index, pid_t parent)
{
#ifdef __linux__
  /* the child dies with its parent (a sweep killed, a search point past its
   * time-out): no orphan simulations left running */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
    _exit(1);
#else
  (void)parent;
#endif
  /* a crash must end the child, whatever handlers the parent installed
   * (cmocka's would carry it back into the test loop) */
  static const int sigs[] = {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGALRM};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    signal(sigs[i], SIG_DFL);
  if (timeout_s > 0)
    alarm((unsigned)timeout_s);
  st_mem_guard_restart(); /* threads do not survive fork() */
  st_buf reply;
  st_buf_init(&reply);
  st_err e;
  st_err_clear(&e);
  drv__head h;
  memset(&h, 0, sizeof h);
  h.rc = task(u, index, &reply, &e);
  if (h.rc)
    snprintf(h.msg, sizeof h.msg, "%s", e.msg[0] ? e.msg : st_strerror(h.rc));
  write_all(fd, (const char *)&h, sizeof h);
  if (!h.rc && reply.len)
    write_all(fd, reply.data, reply.len);
  close(fd);
  _exit(0);
}

static int slot_start(drv__slot *s, int index, int timeout_s, drv_task_fn task, void *u,
                      st_err *err)
{
  int fds[2];
  if (pipe(fds))
    return st_err_set(err, ST_EIO, "cannot create a pipe: %s", strerror(errno));
  fflush(NULL);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return st_err_set(err, ST_EIO, "cannot start a process: %s", strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    child_main(fds[1], timeout_s, task, u, index, parent);
  }
  close(fds[1]);
  s->task = index;
  s->pid = pid;
  s->fd = fds[0];
  st_buf_init(&s->in);
  s->t0 = wall_now();
  return ST_OK;
}

/* The child's pipe is at its end: reap the child and say how it went. */
static void slot_finish(drv__slot *s, drv_done_fn done, void *u)
{
  close(s->fd);
  int status = 0;
  while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
    ;
  drv_answer a;
  memset(&a, 0, sizeof a);
  a.wall_s = wall_now() - s->t0;
  if (s->in.len >= sizeof(drv__head)) {
    drv__head h;
    memcpy(&h, s->in.data, sizeof h);
    a.end = DRV_END_DONE;
    a.rc = h.rc;
    memcpy(a.msg, h.msg, sizeof a.msg);
    a.msg[sizeof a.msg - 1] = 0;
    a.data = s->in.data + sizeof h;
    a.len = s->in.len - sizeof h;
  } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
    a.end = DRV_END_TIMEOUT;
  } else if (WIFSIGNALED(status)) {
    a.end = DRV_END_CRASH;
    a.signal = WTERMSIG(status);
  } else {
    a.end = DRV_END_SILENT;
  }
  if (done)
    done(u, s->task, &a);
  st_buf_release(&s->in);
  s->task = -1;
}

/* Read what a child wrote; returns 1 when its pipe is at its end. */
static int slot_read(drv__slot *s)
{
  char chunk[65536];
  ssize_t k = read(s->fd, chunk, sizeof chunk);
  if (k < 0 && (errno == EINTR || errno == EAGAIN))
    return 0;
  if (k <= 0)
    return 1;
  return st_buf_append(&s->in, chunk, (size_t)k) != ST_OK; /* out of memory: stop reading */
}

int drv_pool_run(int n, int jobs, int timeout_s, drv_task_fn task, drv_done_fn done, void *u,
                 st_err *err)
{
  if (jobs < 1)
    jobs = 1;
  if (jobs > n)
    jobs = n > 0 ? n : 1;
  drv__slot *slots = calloc((size_t)jobs, sizeof *slots);
  struct pollfd *pf = calloc((size_t)jobs, sizeof *pf);
  if (!slots || !pf) {
    free(slots);
    free(pf);
    return st_err_set(err, ST_ENOMEM, "out of memory");
  }
  for (int j = 0; j < jobs; j++)
    slots[j].task = -1;
  int next = 0, running = 0, rc = ST_OK;
  for (;;) {
    for (int j = 0; j < jobs && next < n && !rc; j++)
      if (slots[j].task < 0) {
        if ((rc = slot_start(&slots[j], next, timeout_s, task, u, err)))
          break;
        next++;
        running++;
      }
    if (!running)
      break;
    for (int j = 0; j < jobs; j++) {
      pf[j].fd = slots[j].task >= 0 ? slots[j].fd : -1;
      pf[j].events = POLLIN;
      pf[j].revents = 0;
    }
    if (poll(pf, (nfds_t)jobs, -1) < 0) {
      if (errno == EINTR)
        continue;
      for (int j = 0; j < jobs; j++) /* cannot wait on them: read in turn, blocking */
        pf[j].revents = slots[j].task >= 0 ? POLLIN : 0;
    }
    for (int j = 0; j < jobs; j++)
      if (slots[j].task >= 0 && pf[j].revents && slot_read(&slots[j])) {
        slot_finish(&slots[j], done, u);
        running--;
      }
  }
  free(slots);
  free(pf);
  return rc;
}

typedef struct drv__one {
  drv_task_fn task;
  void *u;
  drv_answer a;
  char *data;
  size_t len;
} drv__one;

static int one_task(void *u, int index, st_buf *reply, st_err *err)
{
  drv__one *t = u;
  return t->task(t->u, index, reply, err);
}

static void one_done(void *u, int index, const drv_answer *a)
{
  (void)index;
  drv__one *o = u;
  o->a = *a;
  o->a.data = NULL;
  if (a->end == DRV_END_DONE && !a->rc && (o->data = malloc(a->len + 1))) {
    memcpy(o->data, a->data, a->len);
    o->data[a->len] = 0;
    o->len = a->len;
  }
}

int drv_isolated(drv_task_fn task, void *u, int timeout_s, char **data, size_t *len, st_err *err)
{
  drv__one t;
  memset(&t, 0, sizeof t);
  t.task = task;
  t.u = u;
  *data = NULL;
  *len = 0;
  int rc = drv_pool_run(1, 1, timeout_s, one_task, one_done, &t, err);
  if (rc)
    return rc;
  const drv_answer *a = &t.a;
  switch (a->end) {
  case DRV_END_TIMEOUT: return st_err_set(err, ST_ESIM, "no answer within %d s", timeout_s);
  case DRV_END_CRASH: return st_err_set(err, ST_ESIM, "crashed (signal %d)", a->signal);
  case DRV_END_SILENT: return st_err_set(err, ST_ESIM, "ended without an answer");
  case DRV_END_DONE: break;
  }
  if (a->rc)
    return st_err_set(err, a->rc, "%s", a->msg);
  if (!t.data)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  *data = t.data;
  *len = t.len;
  return ST_OK;
}

void drv_read(drv_reader *r, void *out, size_t n)
{
  if (r->bad || (size_t)(r->end - r->p) < n) {
    r->bad = 1;
    memset(out, 0, n);
    return;
  }
  if (n)
    memcpy(out, r->p, n);
  r->p += n;
}
