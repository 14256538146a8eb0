/* st_json.c — JSON: the one escaping string writer and numbers as JSON.
 * See st_common.h for the contracts. */
#include "st_common.h"

#include <math.h>
#include <stdio.h>

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
