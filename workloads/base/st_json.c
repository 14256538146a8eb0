/* st_json.c — JSON: the one escaping string writer, numbers as JSON, and the
 * checked reader every input format shares (workload files, cluster and
 * model specs).  See st_common.h for the contracts. */
#include "st_common.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
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

/* ---- reading ---------------------------------------------------------------- */
int st_json_parse(const char *text, size_t len, const char *subject, cJSON **root, st_err *err)
{
  const char *end = NULL;
  cJSON *doc = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  long line, col;
  if (!doc) {
    if (len == 0)
      return st_err_set(err, ST_EINPUT, "%s: the file is empty", subject);
    size_t off = end && end >= text ? (size_t)(end - text) : 0;
    st_text_line_col(text, len, off, &line, &col);
    return st_err_set(err, ST_EINPUT, "%s: JSON syntax error near line %ld, column %ld", subject,
                      line, col);
  }
  /* Only whitespace may follow the document. */
  for (const char *p = end; p && p < text + len; p++)
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
      st_text_line_col(text, len, (size_t)(p - text), &line, &col);
      cJSON_Delete(doc);
      return st_err_set(err, ST_EINPUT,
                        "%s: unexpected text after the JSON document at line %ld, column %ld",
                        subject, line, col);
    }
  *root = doc;
  return ST_OK;
}

const char *st_json_type_name(const cJSON *v)
{
  static const struct {
    int type;
    const char *name;
  } names[] = {{cJSON_NULL, "null"},        {cJSON_True, "true"},    {cJSON_False, "false"},
               {cJSON_Number, "a number"}, {cJSON_String, "a string"}, {cJSON_Array, "an array"},
               {cJSON_Object, "an object"}};
  for (size_t i = 0; v && i < sizeof names / sizeof names[0]; i++)
    if ((v->type & 0xff) == names[i].type)
      return names[i].name;
  return "invalid";
}

static void path_render(const st_jpath *at, st_buf *b)
{
  if (!at)
    return;
  path_render(at->up, b);
  if (at->key)
    st_buf_printf(b, "%s%s", at->up ? "." : "", at->key);
  else
    st_buf_printf(b, "[%ld]", at->idx);
}

int st_jrd_fail(const st_jrd *r, const st_jpath *at, const char *fmt, ...)
{
  char msg[ST_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  st_buf b;
  st_buf_init(&b);
  path_render(at, &b);
  st_err_set(r->err, ST_EINPUT, "%s: %s%s%s", r->subject, b.data ? b.data : "", b.data ? ": " : "",
             msg);
  st_buf_release(&b);
  return ST_EINPUT;
}

int st_jrd_oom(const st_jrd *r)
{
  return st_err_set(r->err, ST_ENOMEM, "%s: out of memory", r->subject);
}

int st_jrd_missing(const st_jrd *r, const st_jpath *at, const char *key)
{
  return st_jrd_fail(r, at, "key '%s' is missing", key);
}

int st_jrd_members(const st_jrd *r, const st_jpath *at, const cJSON *obj, const char *const *keys,
                   int n, const cJSON **slots)
{
  if (!cJSON_IsObject(obj))
    return st_jrd_fail(r, at, "%sis %s, expected an object", at ? "" : "the document ",
                       st_json_type_name(obj));
  if (n < 0)
    for (n = 0; keys[n];)
      n++;
  const cJSON *local[64];
  if (!slots) {
    if (n > (int)(sizeof local / sizeof *local))
      return st_jrd_fail(r, at, "too many keys to check"); /* a programming error */
    slots = local;
  }
  for (int i = 0; i < n; i++)
    slots[i] = NULL;
  for (const cJSON *m = obj->child; m; m = m->next) {
    int k = 0;
    while (k < n && strcmp(keys[k], m->string) != 0)
      k++;
    if (k == n)
      return st_jrd_fail(r, at, "key '%s' is unknown%s%s%s", m->string, r->doc ? " (see " : "",
                         r->doc ? r->doc : "", r->doc ? ")" : "");
    if (slots[k])
      return st_jrd_fail(r, at, "key '%s' appears twice", m->string);
    slots[k] = m;
  }
  return ST_OK;
}

/* "'key' " for a member, "" for an array element (its path names it). */
static const char *who(const cJSON *v, char *buf, size_t n)
{
  if (!v->string)
    return "";
  snprintf(buf, n, "'%s' ", v->string);
  return buf;
}

/* "'key' is a number, expected <what>" */
static int wrong_type(const st_jrd *r, const st_jpath *at, const cJSON *v, const char *what)
{
  char w[256];
  return st_jrd_fail(r, at, "%sis %s, expected %s", who(v, w, sizeof w), st_json_type_name(v),
                     what);
}

int st_jrd_string(const st_jrd *r, const st_jpath *at, const cJSON *v, const char **out)
{
  if (!cJSON_IsString(v))
    return wrong_type(r, at, v, "a string");
  *out = v->valuestring;
  return ST_OK;
}

int st_jrd_bool(const st_jrd *r, const st_jpath *at, const cJSON *v, int *out)
{
  if (!cJSON_IsBool(v))
    return wrong_type(r, at, v, "true or false");
  *out = cJSON_IsTrue(v);
  return ST_OK;
}

int st_jrd_size(const st_jrd *r, const st_jpath *at, const cJSON *v, double *out)
{
  char w[256];
  if (!cJSON_IsNumber(v))
    return wrong_type(r, at, v, "a number");
  double d = v->valuedouble;
  if (!isfinite(d))
    return st_jrd_fail(r, at, "%sis not a finite number", who(v, w, sizeof w));
  if (d < 0)
    return st_jrd_fail(r, at, "%sis negative", who(v, w, sizeof w));
  *out = d;
  return ST_OK;
}

int st_jrd_number(const st_jrd *r, const st_jpath *at, const cJSON *v, int kind, double lo,
                  double hi, double *out)
{
  if (!cJSON_IsNumber(v))
    return wrong_type(r, at, v, "a number");
  /* st_num_check says "<subject> is ...": an element has no subject but its
   * path, so "it is ..." loses its "it " */
  st_err e;
  if (v->string ? st_num_check(v->valuedouble, kind, lo, hi, &e, "'%s'", v->string)
                : st_num_check(v->valuedouble, kind, lo, hi, &e, "it"))
    return st_jrd_fail(r, at, "%s", v->string ? e.msg : e.msg + 3);
  *out = v->valuedouble;
  return ST_OK;
}

int st_jrd_bytes(const st_jrd *r, const st_jpath *at, const cJSON *v, double *out)
{
  double d;
  if (st_jrd_size(r, at, v, &d))
    return ST_EINPUT;
  return st_jrd_number(r, at, v, ST_NUM_REAL, 0, ST_BYTES_MAX, out);
}

int st_jrd_int(const st_jrd *r, const st_jpath *at, const cJSON *v, long lo, long hi, long *out)
{
  char w[256];
  if (!cJSON_IsNumber(v))
    return wrong_type(r, at, v, "an integer");
  double d = v->valuedouble;
  if (d != floor(d))
    return st_jrd_fail(r, at, "%sis %.17g, expected an integer", who(v, w, sizeof w), d);
  if (!(d >= (double)lo && d <= (double)hi))
    return st_jrd_fail(r, at, "%sis %.17g, outside %ld..%ld", who(v, w, sizeof w), d, lo, hi);
  *out = (long)d;
  return ST_OK;
}

int st_jrd_elem_int(const st_jrd *r, const st_jpath *at, const cJSON *v, const char *noun, long lo,
                    long hi, long *out)
{
  if (!cJSON_IsNumber(v))
    return st_jrd_fail(r, at, "%s is %s, expected an integer", noun, st_json_type_name(v));
  double d = v->valuedouble;
  if (d != floor(d))
    return st_jrd_fail(r, at, "%s %.17g is not an integer", noun, d);
  if (!(d >= (double)lo && d <= (double)hi))
    return st_jrd_fail(r, at, "%s %.17g is outside %ld..%ld", noun, d, lo, hi);
  *out = (long)d;
  return ST_OK;
}

int st_jrd_enum(const st_jrd *r, const st_jpath *at, const cJSON *v, int (*from_name)(const char *),
                const char *(*name_of)(int), int count, int *out)
{
  const char *s = "";
  if (st_jrd_string(r, at, v, &s))
    return ST_EINPUT;
  int e = -1;
  if (from_name)
    e = from_name(s);
  else
    for (int i = 0; i < count && e < 0; i++)
      if (!strcmp(s, name_of(i)))
        e = i;
  if (e < 0 || e >= count) {
    st_buf list;
    st_buf_init(&list);
    for (int i = 0; i < count; i++)
      st_buf_printf(&list, "%s%s", i ? ", " : "", name_of(i));
    char w[256];
    st_jrd_fail(r, at, "%sis '%s', expected one of %s", who(v, w, sizeof w), s,
                list.data ? list.data : "");
    st_buf_release(&list);
    return ST_EINPUT;
  }
  *out = e;
  return ST_OK;
}
