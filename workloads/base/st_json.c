/* st_json.c — JSON: the one escaping string writer and numbers as JSON.
 * See st_common.h for the contracts. */
#include "st_common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int st_buf_json_str(st_buf *b, const char *s)
{
  if (!s)
    s = "";
  int rc = st_buf_append(b, "\"", 1);
  const char *run = s; /* the characters since the last escape, copied at once */
  for (const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
    if (*p >= 0x20 && *p != '"' && *p != '\\')
      continue;
    rc = st_buf_append(b, run, (size_t)((const char *)p - run));
    if (rc)
      break;
    switch (*p) {
    case '"': rc = st_buf_append(b, "\\\"", 2); break;
    case '\\': rc = st_buf_append(b, "\\\\", 2); break;
    case '\n': rc = st_buf_append(b, "\\n", 2); break;
    case '\t': rc = st_buf_append(b, "\\t", 2); break;
    default: rc = st_buf_printf(b, "\\u%04x", *p);
    }
    run = (const char *)p + 1;
  }
  if (!rc)
    rc = st_buf_append(b, run, strlen(run));
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
