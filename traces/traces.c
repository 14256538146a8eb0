/* traces.c — the importer table and "FORMAT:PATH" dispatch. */
#include "traces.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Importers register here; each lives in tr_<format>.c. */
static const tr_format formats[] = {
    {NULL, NULL, NULL},
};

void tr_options_init(tr_options *o)
{
  memset(o, 0, sizeof *o);
  o->step = -1;
  o->keep_launch_gaps = 1;
}

const tr_format *tr_formats(size_t *count)
{
  size_t n = 0;
  while (formats[n].name)
    n++;
  *count = n;
  return formats;
}

const tr_format *tr_format_find(const char *name)
{
  for (size_t i = 0; formats[i].name; i++)
    if (!strcmp(formats[i].name, name))
      return &formats[i];
  return NULL;
}

int tr_import(const char *spec, const tr_options *opt, wl_workload **out, tr_import_stats *stats,
              st_err *err)
{
  const char *colon = strchr(spec, ':');
  if (!colon || colon == spec || !colon[1])
    return st_err_set(err, ST_EUSAGE, "trace '%s': expected FORMAT:PATH", spec);
  char fmt[32];
  size_t n = (size_t)(colon - spec);
  if (n >= sizeof fmt)
    n = sizeof fmt - 1;
  memcpy(fmt, spec, n);
  fmt[n] = '\0';
  const tr_format *f = tr_format_find(fmt);
  if (!f) {
    st_buf known;
    st_buf_init(&known);
    size_t count;
    const tr_format *all = tr_formats(&count);
    for (size_t i = 0; i < count; i++)
      st_buf_printf(&known, "%s%s", i ? ", " : "", all[i].name);
    st_err_set(err, ST_EUSAGE, "trace format '%s' is unknown (known: %s)", fmt,
               known.data ? known.data : "none");
    st_buf_release(&known);
    return ST_EUSAGE;
  }
  tr_options defaults;
  if (!opt) {
    tr_options_init(&defaults);
    opt = &defaults;
  }
  tr_import_stats local;
  if (!stats)
    stats = &local;
  memset(stats, 0, sizeof *stats);
  stats->measured_step_s = NAN;
  int rc = f->import(colon + 1, opt, out, stats, err);
  if (stats == &local)
    tr_import_stats_release(&local);
  return rc;
}

void tr_import_stats_release(tr_import_stats *s)
{
  free(s->rank_measured_s);
  s->rank_measured_s = NULL;
}
