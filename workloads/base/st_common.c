/* st_common.c — error values, checked numbers, arena, string buffer, sizes.
 * Files are in st_file.c, JSON in st_json.c; st_common.h has the contracts. */
#include "st_common.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A message is one line: control characters that it quotes from an input
 * (a key holding a newline, an escape sequence) are written as \n, \r, \t
 * or \xNN, so that stderr's first line is the whole error and a terminal
 * sees no control codes.  Bytes of 0x80 and above (UTF-8) stay. */
static void msg_one_line(char *msg, size_t cap)
{
  size_t n = strlen(msg), bad = 0;
  for (size_t i = 0; i < n; i++)
    bad += (unsigned char)msg[i] < 0x20 || msg[i] == 0x7f;
  if (!bad)
    return;
  char old[ST_ERR_MSG_MAX];
  memcpy(old, msg, n + 1);
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)old[i];
    char esc[8];
    if (c == '\n' || c == '\r' || c == '\t')
      snprintf(esc, sizeof esc, "\\%c", c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
    else if (c < 0x20 || c == 0x7f)
      snprintf(esc, sizeof esc, "\\x%02x", c);
    else
      esc[0] = (char)c, esc[1] = '\0';
    size_t k = strlen(esc);
    if (o + k >= cap)
      break;
    memcpy(msg + o, esc, k);
    o += k;
  }
  msg[o] = '\0';
}

int st_err_set(st_err *err, int code, const char *fmt, ...)
{
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    msg_one_line(err->msg, sizeof err->msg);
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
  msg_one_line(err->msg, sizeof err->msg);
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
  else if ((kind & ST_NUM_OPEN_LO) ? v <= lo : v < lo)
    why = (kind & ST_NUM_OPEN_LO) ? "greater" : "below", bound = lo;
  else if (v > hi)
    why = "above", bound = hi;
  else if ((kind & ST_NUM_INTEGER) && v != floor(v))
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
    else if (why[0] == 'g')
      st_err_set(err, ST_EINPUT, "%s is %s; it must be greater than %s", subject, a, b);
    else
      st_err_set(err, ST_EINPUT, "%s is %s, %s the %s allowed %s", subject, a, why,
                 why[0] == 'b' ? "smallest" : "largest", b);
  }
  return ST_EINPUT;
}

__attribute__((format(printf, 6, 0))) static int num_vcheck(double v, int kind, double lo,
                                                             double hi, st_err *err,
                                                             const char *fmt, va_list ap)
{
  char subject[ST_ERR_MSG_MAX];
  vsnprintf(subject, sizeof subject, fmt, ap);
  return st_num_check(v, kind, lo, hi, err, "%s", subject);
}

/* The whole of text is one number for strtod ("12", "1e6", "-3"), with no
 * space around it; strtod's overflow (1e400) is infinite, so not finite. */
__attribute__((format(printf, 7, 0))) static int num_vparse(const char *text, int kind, double lo,
                                                             double hi, double *out, st_err *err,
                                                             const char *fmt, va_list ap)
{
  char *end = NULL;
  double v = text && *text && !isspace((unsigned char)*text) ? strtod(text, &end) : 0;
  if (!text || !*text || isspace((unsigned char)*text) || *end || end == text) {
    if (err) {
      char subject[ST_ERR_MSG_MAX];
      vsnprintf(subject, sizeof subject, fmt, ap);
      st_err_set(err, ST_EINPUT, "%s is '%.64s', not a number", subject, text ? text : "");
    }
    return ST_EINPUT;
  }
  int rc = num_vcheck(v, kind, lo, hi, err, fmt, ap);
  if (!rc)
    *out = v;
  return rc;
}

int st_num_parse(const char *text, int kind, double lo, double hi, double *out, st_err *err,
                 const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int rc = num_vparse(text, kind, lo, hi, out, err, fmt, ap);
  va_end(ap);
  return rc;
}

int st_num_parse_long(const char *text, long lo, long hi, long *out, st_err *err,
                      const char *fmt, ...)
{
  double v;
  va_list ap;
  va_start(ap, fmt);
  int rc = num_vparse(text, ST_NUM_INTEGER, (double)lo, (double)hi, &v, err, fmt, ap);
  va_end(ap);
  if (!rc)
    *out = (long)v;
  return rc;
}

int st_num_to_long(double v, long lo, long hi, long *out, st_err *err, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int rc = num_vcheck(v, ST_NUM_INTEGER, (double)lo, (double)hi, err, fmt, ap);
  va_end(ap);
  if (!rc)
    *out = (long)v;
  return rc;
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

void st_buf_reset(st_buf *b)
{
  b->len = 0;
  if (b->data)
    b->data[0] = '\0';
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
  d[b->len] = '\0'; /* NUL-terminated from the first reserve on, empty included */
  b->data = d;
  b->cap = cap;
  return ST_OK;
}

int st_buf_append(st_buf *b, const void *data, size_t len)
{
  if (buf_reserve(b, len))
    return ST_ENOMEM;
  if (len) /* data may be NULL with nothing to append (an empty array) */
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

int st_str_ends_with(const char *s, const char *suffix)
{
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

char *st_strdup(const char *s)
{
  if (!s)
    return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

void st_str_list_free(char **v, size_t count)
{
  for (size_t i = 0; v && i < count; i++)
    free(v[i]);
  free(v);
}

void st_text_line_col(const char *text, size_t len, size_t off, long *line, long *col)
{
  *line = 1;
  *col = 1;
  for (size_t i = 0; i < off && i < len; i++) {
    if (text[i] == '\n') {
      (*line)++;
      *col = 1;
    } else {
      (*col)++;
    }
  }
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
