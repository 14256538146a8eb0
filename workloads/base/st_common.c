/* st_common.c — error values, arena, string buffer, gzip-aware file I/O.
 * See st_common.h for the contracts. */
#include "st_common.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

int st_err_set(st_err *err, int code, const char *fmt, ...)
{
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
  }
  return code;
}

int st_err_prefix(st_err *err, const char *fmt, ...)
{
  if (!err)
    return ST_OK;
  char pre[ST_ERR_MSG_MAX], old[ST_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(pre, sizeof pre, fmt, ap);
  va_end(ap);
  memcpy(old, err->msg, sizeof old);
  size_t n = strlen(pre);
  if (n >= sizeof err->msg)
    n = sizeof err->msg - 1;
  memcpy(err->msg, pre, n);
  size_t m = strlen(old);
  if (m > sizeof err->msg - 1 - n)
    m = sizeof err->msg - 1 - n;
  memcpy(err->msg + n, old, m);
  err->msg[n + m] = '\0';
  return err->code;
}

void st_err_clear(st_err *err)
{
  if (err) {
    err->code = ST_OK;
    err->msg[0] = '\0';
  }
}

const char *st_strerror(int code)
{
  switch (code) {
#define ST__ERR_TEXT(name, text, status) case ST_##name: return text;
    ST_ERR_MAP(ST__ERR_TEXT)
#undef ST__ERR_TEXT
  default: return "unknown error";
  }
}

int st_err_exit_status(int code)
{
  switch (code) {
#define ST__ERR_STATUS(name, text, status) case ST_##name: return status;
    ST_ERR_MAP(ST__ERR_STATUS)
#undef ST__ERR_STATUS
  default: return 2;
  }
}

/* ---- checked numbers -------------------------------------------------------- */
/* v in the fewest digits that read back as v ("1e+308", not 1.0000000000000001e+308). */
static const char *num_shortest(double v, char *buf, size_t n)
{
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, n, "%.*g", prec, v);
    if (strtod(buf, NULL) == v)
      break;
  }
  return buf;
}

int st_num_check(double v, int kind, double lo, double hi, st_err *err, const char *fmt, ...)
{
  const char *why = NULL;
  double bound = 0;
  if (!isfinite(v))
    why = "not finite";
  else if (v < lo)
    why = "below", bound = lo;
  else if (v > hi)
    why = "above", bound = hi;
  else if (kind == ST_NUM_INTEGER && v != floor(v))
    why = "whole";
  if (!why)
    return ST_OK;
  if (err) {
    char subject[ST_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(subject, sizeof subject, fmt, ap);
    va_end(ap);
    char a[32], b[32];
    num_shortest(v, a, sizeof a);
    num_shortest(bound, b, sizeof b);
    if (why[0] == 'n')
      st_err_set(err, ST_EINPUT, "%s is not a finite number", subject);
    else if (why[0] == 'w')
      st_err_set(err, ST_EINPUT, "%s is %s, not a whole number", subject, a);
    else
      st_err_set(err, ST_EINPUT, "%s is %s, %s the %s allowed %s", subject, a, why,
                 why[0] == 'b' ? "smallest" : "largest", b);
  }
  return ST_EINPUT;
}

/* ---- arena ---------------------------------------------------------------- */
struct st_arena_block {
  st_arena_block *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
};

void st_arena_init(st_arena *a, size_t block_bytes)
{
  a->head = NULL;
  a->block_bytes = block_bytes ? block_bytes : 64 * 1024;
  a->used_bytes = 0;
}

void st_arena_release(st_arena *a)
{
  st_arena_block *b = a->head;
  while (b) {
    st_arena_block *n = b->next;
    free(b);
    b = n;
  }
  a->head = NULL;
  a->used_bytes = 0;
}

void *st_arena_alloc(st_arena *a, size_t bytes)
{
  size_t need = (bytes + 15) & ~(size_t)15;
  st_arena_block *b = a->head;
  if (!b || b->size - b->used < need) {
    size_t size = need > a->block_bytes ? need : a->block_bytes;
    b = malloc(sizeof *b + size);
    if (!b)
      return NULL;
    b->size = size;
    b->used = 0;
    b->next = a->head;
    a->head = b;
  }
  void *p = b->data + b->used;
  b->used += need;
  a->used_bytes += need;
  memset(p, 0, need);
  return p;
}

char *st_arena_strdup(st_arena *a, const char *s)
{
  size_t n = strlen(s) + 1;
  char *p = st_arena_alloc(a, n);
  if (p)
    memcpy(p, s, n);
  return p;
}

/* ---- buffer --------------------------------------------------------------- */
void st_buf_init(st_buf *b)
{
  b->data = NULL;
  b->len = b->cap = 0;
}

void st_buf_release(st_buf *b)
{
  free(b->data);
  st_buf_init(b);
}

static int buf_reserve(st_buf *b, size_t extra)
{
  if (b->len + extra + 1 <= b->cap)
    return ST_OK;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1)
    cap *= 2;
  char *d = realloc(b->data, cap);
  if (!d)
    return ST_ENOMEM;
  b->data = d;
  b->cap = cap;
  return ST_OK;
}

int st_buf_append(st_buf *b, const void *data, size_t len)
{
  if (buf_reserve(b, len))
    return ST_ENOMEM;
  memcpy(b->data + b->len, data, len);
  b->len += len;
  b->data[b->len] = '\0';
  return ST_OK;
}

int st_buf_printf(st_buf *b, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    return ST_EINPUT;
  if (buf_reserve(b, (size_t)n))
    return ST_ENOMEM;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return ST_OK;
}

char *st_buf_detach(st_buf *b, size_t *len)
{
  if (!b->data && buf_reserve(b, 0))
    return NULL;
  char *d = b->data;
  if (len)
    *len = b->len;
  st_buf_init(b);
  return d;
}

/* ---- files ---------------------------------------------------------------- */
int st_file_read_all(const char *path, char **data, size_t *len, st_err *err)
{
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
  return ST_OK;
}

/* ---- output files ---------------------------------------------------------- */
#define ST_OUT_SLOTS 8
static char out_tmp[ST_OUT_SLOTS][4200];
static volatile sig_atomic_t out_used[ST_OUT_SLOTS];

static void on_signal(int sig)
{
  /* async-signal-safe only: unlink, write, signal, raise, _exit */
  for (int i = 0; i < ST_OUT_SLOTS; i++)
    if (out_used[i])
      unlink(out_tmp[i]);
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

int st_str_ends_with(const char *s, const char *suffix)
{
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

int st_parse_bytes(const char *s, double *bytes)
{
  /* A plain decimal number: strtod alone would also take " 4", "0x10", "inf". */
  if (!((*s >= '0' && *s <= '9') || *s == '.') || s[strspn(s, "0123456789.")] == 'x' ||
      s[strspn(s, "0123456789.")] == 'X')
    return ST_EINPUT;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || !(v >= 0) || !isfinite(v))
    return ST_EINPUT;
  double mult = 1;
  switch (*end) {
  case '\0': case 'B': case 'b': break;
  case 'k': case 'K': mult = 1024.0; end++; break;
  case 'm': case 'M': mult = 1024.0 * 1024; end++; break;
  case 'g': case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
  case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
  default: return ST_EINPUT;
  }
  if (mult > 1 && (*end == 'i' || *end == 'I'))
    end++;
  if (*end == 'B' || *end == 'b')
    end++;
  if (*end != '\0')
    return ST_EINPUT;
  *bytes = v * mult;
  return ST_OK;
}

const char *st_format_bytes(double bytes, char *buf, size_t n)
{
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 5) {
    bytes /= 1024.0;
    u++;
  }
  if (u == 0)
    snprintf(buf, n, "%.0f B", bytes);
  else
    snprintf(buf, n, "%.2f %s", bytes, units[u]);
  return buf;
}

uint64_t st_splitmix64(uint64_t *state)
{
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int st_buf_json_str(st_buf *b, const char *s)
{
  int rc = st_buf_append(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p && !rc; p++) {
    if (*p == '"' || *p == '\\')
      rc = st_buf_printf(b, "\\%c", *p);
    else if (*p < 0x20)
      rc = st_buf_printf(b, "\\u%04x", *p);
    else
      rc = st_buf_append(b, p, 1);
  }
  return rc ? rc : st_buf_append(b, "\"", 1);
}

void st_json_str(FILE *out, const char *s)
{
  st_buf b;
  st_buf_init(&b);
  if (st_buf_json_str(&b, s))
    fputs("\"\"", out);
  else
    fwrite(b.data, 1, b.len, out);
  st_buf_release(&b);
}

const char *st_json_num(double v, char *buf, size_t n)
{
  if (isfinite(v))
    snprintf(buf, n, "%.17g", v);
  else
    snprintf(buf, n, "null");
  return buf;
}
