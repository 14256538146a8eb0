/* ranklist.c — rank lists on the command line ("0-3,8,12"), shared by
 * report, plot and export. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_int.h"
#include "analysis.h"

static int parse_int(const char *s, const char **end, long *v)
{
  if (*s < '0' || *s > '9')
    return -1;
  char *e;
  errno = 0;
  *v = strtol(s, &e, 10);
  if (errno)
    return -1;
  *end = e;
  return 0;
}

int an_rank_list_parse(const char *spec, int32_t num_ranks, int32_t **out, size_t *n,
                       st_err *err)
{
  size_t cap = 16, len = 0;
  int32_t *v = malloc(cap * sizeof *v);
  if (!v)
    return st_err_set(err, ST_ENOMEM, "rank list '%s': out of memory", spec);
  const char *p = spec;
  for (;;) {
    const char *item = p, *e;
    long a, b;
    if (parse_int(p, &e, &a) < 0)
      goto bad;
    b = a;
    if (*e == '-' && parse_int(e + 1, &e, &b) < 0)
      goto bad;
    if (*e != ',' && *e != '\0')
      goto bad;
    if (b < a) {
      free(v);
      return st_err_set(err, ST_EUSAGE, "rank list '%s': range '%.*s' runs backwards", spec,
                        (int)(e - item), item);
    }
    if (b >= num_ranks) {
      free(v);
      return st_err_set(err, ST_EUSAGE,
                        "rank list '%s': rank %ld is out of range (the run has %d ranks)", spec,
                        b, (int)num_ranks);
    }
    for (long k = a; k <= b; k++) {
      int dup = 0;
      for (size_t j = 0; j < len && !dup; j++)
        dup = v[j] == k;
      if (dup)
        continue;
      if (len == cap) {
        int32_t *nv = realloc(v, 2 * cap * sizeof *v);
        if (!nv) {
          free(v);
          return st_err_set(err, ST_ENOMEM, "rank list '%s': out of memory", spec);
        }
        v = nv;
        cap *= 2;
      }
      v[len++] = (int32_t)k;
    }
    if (*e == '\0')
      break;
    p = e + 1;
    continue;
  bad:;
    const char *stop = strchr(item, ',');
    int l = stop ? (int)(stop - item) : (int)strlen(item);
    free(v);
    return st_err_set(err, ST_EUSAGE,
                      "rank list '%s': '%.*s' is not a rank or a range (like 0-3,8,12)", spec, l,
                      item);
  }
  *out = v;
  *n = len;
  return ST_OK;
}

char *an__format_rank_list(const int32_t *ranks, size_t count, char *buf, size_t n)
{
  if (n == 0)
    return buf;
  char tail[48];
  snprintf(tail, sizeof tail, ",... (%zu ranks)", count);
  size_t len = 0, tl = strlen(tail);
  buf[0] = '\0';
  for (size_t i = 0; i < count;) {
    size_t j = i;
    while (j + 1 < count && ranks[j + 1] == ranks[j] + 1)
      j++;
    char item[32];
    if (j > i)
      snprintf(item, sizeof item, "%s%d-%d", i ? "," : "", ranks[i], ranks[j]);
    else
      snprintf(item, sizeof item, "%s%d", i ? "," : "", ranks[i]);
    size_t il = strlen(item);
    /* room for this item, and for the tail unless it is the last one */
    if (len + il + (j + 1 < count ? tl : 0) + 1 > n) {
      if (len + tl + 1 <= n)
        memcpy(buf + len, tail, tl + 1);
      return buf;
    }
    memcpy(buf + len, item, il + 1);
    len += il;
    i = j + 1;
  }
  return buf;
}
