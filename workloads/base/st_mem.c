/* st_mem.c — the memory guard: a limit on the process's resident memory
 * (--max-memory), so that an input that asks for more than the machine has
 * ends with one clear line instead of swapping or the kernel's OOM killer.
 *
 * A thread of its own reads /proc/self/statm every 20 ms; once the resident
 * set passes the limit it removes the temporary output files (as a signal
 * would, st__out_unlink_all), writes
 *     simtrain: error: out of memory: resident memory passed --max-memory 1 GiB
 * and ends the process with exit status 2 (bad input, as ST_ENOMEM).  It
 * allocates nothing and takes no lock, so it may stop the process in the
 * middle of anything, SimGrid's engine included.  A thread is not inherited
 * by fork(): a child of the process runner calls st_mem_guard_restart().
 * Linux only (elsewhere the guard does nothing).
 */
#include "st_common.h"
#include "st_int.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double guard_limit; /* bytes; 0: no guard */
static char guard_msg[160];
static size_t guard_msg_len;

/* A whole small file into buf (NUL-terminated); bytes read or -1. */
static long read_small(const char *path, char *buf, size_t cap)
{
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n < 0)
    return -1;
  buf[n] = '\0';
  return (long)n;
}

/* Resident bytes of this process (statm's second field), or -1. */
static double rss_bytes(void)
{
  char b[256];
  if (read_small("/proc/self/statm", b, sizeof b) <= 0)
    return -1;
  const char *p = b;
  while (*p && *p != ' ')
    p++;
  double pages = 0;
  int any = 0;
  for (p += *p == ' '; *p >= '0' && *p <= '9'; p++, any = 1)
    pages = pages * 10 + (*p - '0');
  return any ? pages * (double)sysconf(_SC_PAGESIZE) : -1;
}

double st_mem_default_limit(void)
{
  double total = 0, cg = 0;
  char b[4096];
  if (read_small("/proc/meminfo", b, sizeof b) > 0) {
    const char *p = strstr(b, "MemTotal:");
    if (p)
      total = strtod(p + 9, NULL) * 1024;
  }
  if (read_small("/sys/fs/cgroup/memory.max", b, sizeof b) > 0 && b[0] >= '0' && b[0] <= '9')
    cg = strtod(b, NULL);
  double m = total > 0 && (cg <= 0 || total < cg) ? total : cg;
  return m > 0 ? 0.9 * m : 0;
}

static void *guard_main(void *arg)
{
  (void)arg;
  for (;;) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    double rss = rss_bytes();
    if (rss > guard_limit) {
      st__out_unlink_all();
      ssize_t w = write(2, guard_msg, guard_msg_len);
      (void)w;
      _exit(2);
    }
  }
  return NULL;
}

static int guard_thread(void)
{
  pthread_t t;
  pthread_attr_t a;
  if (pthread_attr_init(&a))
    return -1;
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&a, 64 * 1024);
  int rc = pthread_create(&t, &a, guard_main, NULL);
  pthread_attr_destroy(&a);
  return rc ? -1 : 0;
}

int st_mem_guard_start(double limit_bytes, st_err *err)
{
#ifdef __linux__
  guard_limit = limit_bytes > 0 ? limit_bytes : st_mem_default_limit();
  if (guard_limit <= 0)
    return ST_OK; /* nothing known to guard */
  char sz[32];
  st_format_bytes(guard_limit, sz, sizeof sz);
  int n = snprintf(guard_msg, sizeof guard_msg,
                   "simtrain: error: out of memory: resident memory passed %s %s\n",
                   limit_bytes > 0 ? "--max-memory" : "the default limit (90% of memory),", sz);
  guard_msg_len = n > 0 && (size_t)n < sizeof guard_msg ? (size_t)n : 0;
  if (guard_thread())
    return st_err_set(err, ST_ENOMEM, "cannot start the memory guard");
#else
  (void)limit_bytes;
  (void)err;
#endif
  return ST_OK;
}

void st_mem_guard_restart(void)
{
#ifdef __linux__
  if (guard_limit > 0)
    guard_thread();
#endif
}

double st_mem_guard_limit(void) { return guard_limit; }
