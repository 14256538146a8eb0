/* traces.c — the importer table and "FORMAT:PATH" dispatch. */
#include "traces.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tr_int.h"

/* Importers register here; each lives in tr_<format>.c. */
static const tr_format formats[] = {
    {"kineto",
     "PyTorch profiler Chrome-trace JSON (.json/.json.gz), one file per rank: DIR or FILE,FILE...",
     tr__kineto_import},
    {"chakra", "Chakra execution traces PREFIX.<rank>.et (or one .et file)", tr__chakra_import},
    {"astra", "ASTRA-sim 1.0 / SimAI layer-wise text workload, expanded over --gpus N",
     tr__astra_import},
    {"smpi", "SimGrid time-independent trace (actions file, or a file listing per-rank files)",
     tr__smpi_import},
    {NULL, NULL, NULL},
};

void tr_options_init(tr_options *o)
{
  memset(o, 0, sizeof *o);
  o->step = -1;
  o->keep_launch_gaps = 1;
}

int tr_dims_parse(const char *text, tr_options *o, st_err *err)
{
  int dims[TR_MAX_DIMS], n = 0;
  const char *s = text;
  for (;;) {
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (end == s || *s == '-' || *s == '+' || *s == ' ' || errno || x < 1 || x > 100000000)
      return st_err_set(err, ST_EUSAGE, "--dims '%s': sizes must be positive whole numbers, "
                        "as in 8,16", text);
    if (n == TR_MAX_DIMS)
      return st_err_set(err, ST_EUSAGE, "--dims '%s': more than %d dimensions", text,
                        TR_MAX_DIMS);
    dims[n++] = (int)x;
    if (!*end)
      break;
    if (*end != ',')
      return st_err_set(err, ST_EUSAGE, "--dims '%s': sizes must be positive whole numbers, "
                        "as in 8,16", text);
    s = end + 1;
  }
  memcpy(o->dims, dims, (size_t)n * sizeof *dims);
  o->num_dims = n;
  return ST_OK;
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
  /* before an importer allocates for them (ST_RANKS_MAX) */
  if (opt->num_gpus > ST_RANKS_MAX)
    return st_err_set(err, ST_EUSAGE, "trace '%s': %d GPUs asked for, above the largest allowed %d",
                      colon + 1, opt->num_gpus, ST_RANKS_MAX);
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
  free(s->rank_start_s);
  s->rank_start_s = NULL;
  free(s->rank_compute_s);
  s->rank_compute_s = NULL;
  free(s->rank_comm_s);
  s->rank_comm_s = NULL;
  free(s->rank_source);
  s->rank_source = NULL;
}

/* ---- helpers shared by the importers (tr_int.h) ------------------------- */

int tr__read_file(const char *path, char **data, size_t *len, st_err *err)
{
  int rc = st_file_read_all(path, data, len, err);
  if (rc && err) {
    /* st_file_read_all says "'path': ..." or "cannot open 'path': ...". */
    if (err->msg[0] == '\'')
      st_err_prefix(err, "trace ");
    else
      st_err_prefix(err, "trace '%s': ", path);
  }
  return rc;
}

int tr__stats_alloc_ranks(tr_import_stats *stats, int n, st_err *err)
{
  tr_import_stats_release(stats);
  size_t sz = (size_t)(n > 0 ? n : 1) * sizeof(double);
  stats->rank_measured_s = malloc(sz);
  stats->rank_start_s = malloc(sz);
  stats->rank_compute_s = malloc(sz);
  stats->rank_comm_s = malloc(sz);
  stats->rank_source = malloc((size_t)(n > 0 ? n : 1) * sizeof *stats->rank_source);
  if (!stats->rank_measured_s || !stats->rank_start_s || !stats->rank_compute_s ||
      !stats->rank_comm_s || !stats->rank_source) {
    tr_import_stats_release(stats);
    return st_err_set(err, ST_ENOMEM, "out of memory");
  }
  for (int i = 0; i < n; i++)
    stats->rank_measured_s[i] = stats->rank_start_s[i] = stats->rank_compute_s[i] =
        stats->rank_comm_s[i] = NAN;
  for (int i = 0; i < n; i++)
    stats->rank_source[i] = i;
  stats->num_ranks = n;
  return ST_OK;
}

wl_workload *tr__world_workload(int n, st_err *err)
{
  const char *role = "world";
  wl_workload *wl = wl_workload_create(n, 1, &role);
  int32_t *all = malloc((size_t)n * sizeof *all);
  int cw = -1;
  if (wl && all) {
    for (int r = 0; r < n; r++)
      all[r] = r;
    cw = wl_comm_add(wl, "world", WL_COMM_WORLD, n, all);
  }
  free(all);
  if (cw < 0) {
    wl_workload_destroy(wl);
    st_err_set(err, ST_ENOMEM, "out of memory");
    return NULL;
  }
  for (int r = 0; r < n; r++)
    wl_rank_set_comm(wl, r, 0, cw);
  return wl;
}

int tr__finish(wl_workload *wl, const char *format, const char *path, st_err *err)
{
  char src[512];
  snprintf(src, sizeof src, "%s:%s", format, path);
  if (wl_meta_set_str(&wl->meta.source, src))
    return st_err_set(err, ST_ENOMEM, "out of memory");
  int rc = wl_workload_check(wl, err);
  if (rc)
    st_err_prefix(err, "trace '%s': imported workload is inconsistent: ", path);
  return rc;
}
