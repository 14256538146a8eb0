/* st_file.c — files: whole-file reading that understands gzip, output files
 * written atomically (a temporary renamed onto the target, removed when the
 * process is interrupted), paths and folder listings.  See st_common.h for
 * the contracts. */
#include "st_common.h"
#include "st_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* ---- files ---------------------------------------------------------------- */
/* What was read from a stream (standard input, a FIFO, a character device):
 * it cannot be read again, so a second read of the same name in this process
 * (a sweep loading its cluster per point, a search loading it twice, a child
 * forked to probe it) gets the bytes of the first.  Regular files are read
 * afresh each time. */
typedef struct stream_copy {
  struct stream_copy *next;
  char *path, *data;
  size_t len;
} stream_copy;
static stream_copy *stream_copies;

static int is_stream(const char *path)
{
  struct stat sb;
  return !strcmp(path, "-") || (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode));
}

static int stream_copy_get(const char *path, char **data, size_t *len)
{
  for (const stream_copy *c = stream_copies; c; c = c->next)
    if (!strcmp(c->path, path)) {
      if (!(*data = malloc(c->len + 1)))
        return -1;
      memcpy(*data, c->data, c->len + 1);
      *len = c->len;
      return 1;
    }
  return 0;
}

static void stream_copy_keep(const char *path, const char *data, size_t len)
{
  stream_copy *c = malloc(sizeof *c);
  if (!c)
    return;
  c->path = strdup(path);
  c->data = malloc(len + 1);
  if (!c->path || !c->data) {
    free(c->path);
    free(c->data);
    free(c);
    return; /* (a later read of the stream then finds it drained: not kept, not wrong) */
  }
  memcpy(c->data, data, len + 1);
  c->len = len;
  c->next = stream_copies;
  stream_copies = c;
}

int st_file_read_all(const char *path, char **data, size_t *len, st_err *err)
{
  int stream = is_stream(path);
  if (stream) {
    int got = stream_copy_get(path, data, len);
    if (got < 0)
      return st_err_set(err, ST_ENOMEM, "'%s': out of memory reading file", path);
    if (got)
      return ST_OK;
  }
  /* opened once and read as a stream, so that a FIFO or standard input
   * ("-") works: zlib tells gzip from plain data by the first bytes */
  int fd = strcmp(path, "-") ? open(path, O_RDONLY) : dup(STDIN_FILENO);
  if (fd < 0)
    return st_err_set(err, ST_EIO, "cannot open '%s': %s", path, strerror(errno));
  gzFile gz = gzdopen(fd, "rb");
  if (!gz) {
    close(fd);
    return st_err_set(err, ST_EIO, "cannot open '%s': %s", path, strerror(errno));
  }
  gzbuffer(gz, 1 << 17);
  int is_gz = !gzdirect(gz);
  st_buf b;
  st_buf_init(&b);
  char chunk[1 << 16];
  for (;;) {
    int n = gzread(gz, chunk, sizeof chunk);
    if (n < 0) {
      int zerr;
      const char *zmsg = gzerror(gz, &zerr);
      st_err_set(err, ST_EINPUT, "'%s': %s data is corrupt after %zu bytes: %s", path,
                 is_gz ? "gzip" : "file", b.len, zmsg);
      gzclose(gz);
      st_buf_release(&b);
      return ST_EINPUT;
    }
    if (n == 0)
      break;
    if (st_buf_append(&b, chunk, (size_t)n)) {
      gzclose(gz);
      st_buf_release(&b);
      return st_err_set(err, ST_ENOMEM, "'%s': out of memory reading file", path);
    }
  }
  /* A truncated gzip stream reads as EOF without error in some zlib versions:
   * gzclose_r reports Z_BUF_ERROR in that case. */
  int rc = gzclose_r(gz);
  if (is_gz && rc == Z_BUF_ERROR) {
    size_t got = b.len;
    st_buf_release(&b);
    return st_err_set(err, ST_EINPUT, "'%s': gzip data is truncated after %zu bytes", path, got);
  }
  *data = st_buf_detach(&b, len);
  if (!*data)
    return st_err_set(err, ST_ENOMEM, "'%s': out of memory reading file", path);
  if (stream)
    stream_copy_keep(path, *data, *len);
  return ST_OK;
}

/* ---- output files ---------------------------------------------------------- */
#define ST_OUT_SLOTS 8
static char out_tmp[ST_OUT_SLOTS][4200];
static volatile sig_atomic_t out_used[ST_OUT_SLOTS];

void st__out_unlink_all(void)
{
  for (int i = 0; i < ST_OUT_SLOTS; i++)
    if (out_used[i])
      unlink(out_tmp[i]);
}

static void on_signal(int sig)
{
  /* async-signal-safe only: unlink, write, signal, raise, _exit */
  st__out_unlink_all();
  if (sig == SIGINT) {
    static const char msg[] = "simtrain: error: interrupted (SIGINT); temporary files removed\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(130);
  }
  signal(sig, SIG_DFL);
  raise(sig);
  _exit(128 + sig);
}

void st_signals_install(void)
{
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(sigs[i], &sa, NULL);
  }
}

static const char *file_kind(mode_t m)
{
  if (S_ISDIR(m))
    return "a directory";
  if (S_ISCHR(m))
    return "a character device";
  if (S_ISBLK(m))
    return "a block device";
  if (S_ISFIFO(m))
    return "a FIFO";
  if (S_ISSOCK(m))
    return "a socket";
  return "not a plain file";
}

int st_out_begin(st_outfile *o, const char *path, st_err *err)
{
  o->slot = -1;
  if (strlen(path) >= sizeof o->target)
    return st_err_set(err, ST_EIO, "cannot write '%s': the path is too long", path);
  snprintf(o->target, sizeof o->target, "%s", path);
  /* follow symlinks (relative ones from the link's folder), at most 40 */
  for (int hops = 0;; hops++) {
    struct stat st;
    if (lstat(o->target, &st) != 0) {
      if (errno == ENOENT)
        break; /* a new file (a dangling link writes its target) */
      return st_err_set(err, ST_EIO, "cannot write '%s': %s", path, strerror(errno));
    }
    if (!S_ISLNK(st.st_mode)) {
      if (!S_ISREG(st.st_mode))
        return st_err_set(err, ST_EIO, "cannot write '%s': it is %s, not a regular file", path,
                          file_kind(st.st_mode));
      break;
    }
    if (hops == 40)
      return st_err_set(err, ST_EIO, "cannot write '%s': too many levels of symbolic links", path);
    char link[4096];
    ssize_t n = readlink(o->target, link, sizeof link - 1);
    if (n < 0)
      return st_err_set(err, ST_EIO, "cannot write '%s': %s", path, strerror(errno));
    link[n] = '\0';
    if (link[0] != '/') {
      const char *slash = strrchr(o->target, '/');
      int dir = slash ? (int)(slash - o->target + 1) : 0;
      char next[4096];
      if ((size_t)snprintf(next, sizeof next, "%.*s%s", dir, o->target, link) >= sizeof next)
        return st_err_set(err, ST_EIO, "cannot write '%s': the path is too long", path);
      memcpy(o->target, next, sizeof next);
    } else
      memcpy(o->target, link, (size_t)n + 1);
  }
  snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld", o->target, (long)getpid());
  for (int i = 0; i < ST_OUT_SLOTS; i++)
    if (!out_used[i]) {
      memcpy(out_tmp[i], o->tmp, sizeof o->tmp);
      out_used[i] = 1;
      o->slot = i;
      break;
    }
  return ST_OK;
}

int st_out_commit(st_outfile *o, int ok, const char *path, st_err *err)
{
  int rc = ST_OK;
  if (ok && rename(o->tmp, o->target) != 0)
    rc = st_err_set(err, ST_EIO, "cannot write '%s': %s", path, strerror(errno));
  if (!ok || rc)
    remove(o->tmp);
  if (o->slot >= 0)
    out_used[o->slot] = 0;
  o->slot = -1;
  return rc;
}

int st_file_write_atomic(const char *path, const void *data, size_t len, int gzip, st_err *err)
{
  st_outfile o;
  int rc = st_out_begin(&o, path, err);
  if (rc)
    return rc;
  int ok = 1, e = 0;
  if (gzip) {
    gzFile gz = gzopen(o.tmp, "wb6");
    if (!gz) {
      e = errno;
      st_out_commit(&o, 0, path, NULL);
      return st_err_set(err, ST_EIO, "cannot write '%s': %s", path, strerror(e));
    }
    const char *p = data;
    size_t left = len;
    while (left > 0 && ok) {
      unsigned n = left > (1u << 30) ? (1u << 30) : (unsigned)left;
      if (gzwrite(gz, p, n) != (int)n)
        ok = 0, e = errno;
      p += n;
      left -= n;
    }
    if (gzclose(gz) != Z_OK && ok)
      ok = 0, e = errno;
  } else {
    FILE *f = fopen(o.tmp, "wb");
    if (!f) {
      e = errno;
      st_out_commit(&o, 0, path, NULL);
      return st_err_set(err, ST_EIO, "cannot write '%s': %s", path, strerror(e));
    }
    if (len && fwrite(data, 1, len, f) != len)
      ok = 0, e = errno;
    if (fclose(f) != 0 && ok)
      ok = 0, e = errno;
  }
  if (!ok) {
    st_out_commit(&o, 0, path, NULL);
    return st_err_set(err, ST_EIO, "cannot write '%s': %s", path,
                      e ? strerror(e) : "write failed");
  }
  return st_out_commit(&o, 1, path, err);
}

/* ---- paths and folders ------------------------------------------------------ */
const char *st_path_basename(const char *path)
{
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

char *st_path_dirname(const char *path)
{
  const char *s = strrchr(path, '/');
  if (!s)
    return st_strdup(".");
  if (s == path)
    return st_strdup("/");
  size_t n = (size_t)(s - path);
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, path, n);
    d[n] = '\0';
  }
  return d;
}

int st_path_is_file(const char *path)
{
  struct stat st;
  return !stat(path, &st) && S_ISREG(st.st_mode);
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int st_dir_list(const char *dir, int (*keep)(const char *name), char ***names, size_t *count,
                st_err *err)
{
  DIR *d = opendir(dir);
  if (!d)
    return st_err_set(err, ST_EIO, "cannot open folder '%s': %s", dir, strerror(errno));
  char **v = NULL;
  size_t n = 0, cap = 0;
  int rc = ST_OK;
  for (struct dirent *e; !rc && (e = readdir(d));) {
    if (e->d_name[0] == '.' || (keep && !keep(e->d_name)))
      continue;
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    char *full = malloc(len);
    if (!full) {
      rc = ST_ENOMEM;
      break;
    }
    snprintf(full, len, "%s/%s", dir, e->d_name);
    if (!st_path_is_file(full)) {
      free(full);
      continue;
    }
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      char **nv = realloc(v, cap * sizeof *nv);
      if (!nv) {
        free(full);
        rc = ST_ENOMEM;
        break;
      }
      v = nv;
    }
    v[n++] = full;
  }
  closedir(d);
  if (rc) {
    st_str_list_free(v, n);
    return st_err_set(err, rc, "out of memory");
  }
  if (n)
    qsort(v, n, sizeof *v, cmp_str);
  *names = v;
  *count = n;
  return ST_OK;
}
