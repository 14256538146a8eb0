/* sweep.c — the sweep file (sweep.h): write, read, merge, print.
 *
 * The /points table's columns are the an_sweep_row fields, in the table
 * below; the reader matches them by name (HDF5 converts by name), so
 * columns may be added later without breaking old readers.  Strings are
 * fixed-length and NUL-terminated at their field's width. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#include "an_h5.h"
#include "sweep.h"

#define SWEEP_FORMAT "simtrain-sweep"

static const an_sweep_col columns[] = {
#define I(x) {#x, AN_SW_INT, offsetof(an_sweep_row, x), sizeof(int32_t)}
#define S(x) {#x, AN_SW_STR, offsetof(an_sweep_row, x), sizeof(((an_sweep_row *)0)->x)}
#define D(x) {#x, AN_SW_NUM, offsetof(an_sweep_row, x), sizeof(double)}
    I(point),       S(model),          S(request),        S(cluster),
    I(nodes),       I(num_gpus),       I(gbs),            I(seq),
    S(dtype),       S(status),         S(error),          S(layout),
    D(step_time_s), D(tokens_per_step), D(tokens_per_s),  D(tokens_per_s_per_gpu),
    D(model_tflops_per_gpu), D(mfu),   D(compute_s),      D(exposed_comm_s),
    D(bubble_s),    D(peak_memory_bytes), D(train_steps), D(time_to_train_s),
    D(cost_usd),    D(energy_MWh),     D(cost_estimate_s), D(estimate_step_s),
    I(estimate_rank),
#undef I
#undef S
#undef D
};
#define NUM_COLUMNS (sizeof columns / sizeof columns[0])

const an_sweep_col *an_sweep_columns(size_t *n)
{
  *n = NUM_COLUMNS;
  return columns;
}

const an_sweep_col *an_sweep_column(const char *name)
{
  for (size_t i = 0; name && i < NUM_COLUMNS; i++)
    if (!strcmp(columns[i].name, name))
      return &columns[i];
  return NULL;
}

double an_sweep_value(const an_sweep_row *r, const an_sweep_col *c)
{
  const char *p = (const char *)r + c->off;
  if (c->kind == AN_SW_INT) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
  }
  if (c->kind == AN_SW_NUM) {
    double v;
    memcpy(&v, p, sizeof v);
    return v;
  }
  return NAN;
}

void an_sweep_row_clear(an_sweep_row *r)
{
  memset(r, 0, sizeof *r);
  const double nan = NAN;
  for (size_t i = 0; i < NUM_COLUMNS; i++)
    if (columns[i].kind == AN_SW_NUM)
      memcpy((char *)r + columns[i].off, &nan, sizeof nan);
}

static hid_t row_type(void)
{
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(an_sweep_row));
  int bad = t < 0;
  for (size_t i = 0; !bad && i < NUM_COLUMNS; i++) {
    const an_sweep_col *c = &columns[i];
    if (c->kind == AN_SW_STR)
      bad = an__h5_insert_str(t, c->name, c->off, c->size) < 0;
    else
      bad = H5Tinsert(t, c->name, c->off,
                      c->kind == AN_SW_INT ? H5T_NATIVE_INT32 : H5T_NATIVE_DOUBLE) < 0;
  }
  if (bad && t >= 0) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

/* ---- writing ------------------------------------------------------------------ */
static int by_point(const void *a, const void *b)
{
  const an_sweep_row *x = a, *y = b;
  return (x->point > y->point) - (x->point < y->point);
}

static int write_body(an__h5w *w)
{
  const an_sweep *s = w->u;
  hid_t f = w->file;
  if (an__h5_attr_write_str(f, "format", SWEEP_FORMAT) < 0 ||
      an__h5_attr_write_str(f, "kind", s->kind[0] ? s->kind : "sweep") < 0 ||
      an__h5_attr_write_str(f, "simtrain_version", SIMTRAIN_VERSION) < 0 ||
      an__h5_attr_write_str(f, "name", s->name) < 0 ||
      an__h5_attr_write_str(f, "spec", s->spec_json) < 0 ||
      an__h5_attr_write_str(f, "digest", s->digest) < 0 ||
      an__h5_attr_write_num(f, "points", H5T_STD_I32LE, H5T_NATIVE_INT32, &s->points) < 0 ||
      an__h5_attr_write_num(f, "shard", H5T_STD_I32LE, H5T_NATIVE_INT32, &s->shard) < 0 ||
      an__h5_attr_write_num(f, "shards", H5T_STD_I32LE, H5T_NATIVE_INT32, &s->shards) < 0)
    return an__h5_wfail(w, "cannot write the root attributes");
  hid_t t = row_type();
  if (t < 0)
    return an__h5_wfail(w, "dataset '/points': cannot describe the rows");
  an_sweep_row *rows = NULL;
  if (s->num_rows) {
    rows = malloc(s->num_rows * sizeof *rows);
    if (!rows) {
      H5Tclose(t);
      return st_err_set(w->err, ST_ENOMEM, "sweep '%s': out of memory", w->path);
    }
    memcpy(rows, s->rows, s->num_rows * sizeof *rows);
    qsort(rows, s->num_rows, sizeof *rows, by_point);
  }
  int rc = an__h5_write_rows(w, "points", t, s->num_rows, rows, NULL);
  free(rows);
  H5Tclose(t);
  return rc;
}

int an_sweep_write(const char *path, const an_sweep *s, st_err *err)
{
  if (s->shards < 1 || s->shard < 1 || s->shard > s->shards || s->points < 0)
    return st_err_set(err, ST_EUSAGE, "sweep '%s': shard %d of %d is not a shard", path,
                      (int)s->shard, (int)s->shards);
  return an__h5_create(path, "sweep", write_body, s, err);
}

/* ---- reading ------------------------------------------------------------------ */
int an_sweep_is_file(const char *path)
{
  an__h5_quiet_state q;
  an__h5_quiet(&q);
  int yes = 0;
  FILE *probe = fopen(path, "rb");
  if (probe) {
    fclose(probe);
    if (H5Fis_hdf5(path) > 0) {
      hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
      if (f >= 0) {
        if (H5Aexists(f, "format") > 0) {
          hid_t a = H5Aopen(f, "format", H5P_DEFAULT), t = an__h5_str_type(sizeof SWEEP_FORMAT);
          char buf[sizeof SWEEP_FORMAT] = "";
          hid_t ft = a >= 0 ? H5Aget_type(a) : -1;
          if (ft >= 0 && H5Tget_class(ft) == H5T_STRING && H5Tget_size(ft) == sizeof buf &&
              t >= 0 && H5Aread(a, t, buf) >= 0)
            yes = !strcmp(buf, SWEEP_FORMAT);
          an__h5_close(&ft, H5Tclose);
          an__h5_close(&t, H5Tclose);
          an__h5_close(&a, H5Aclose);
        }
        H5Fclose(f);
      }
    }
  }
  an__h5_restore(&q);
  return yes;
}

static int read_body(an__h5r *rd, an_sweep *s)
{
  char *format = NULL, *digest = NULL, *kind = NULL;
  const char *where = "group '/'";
  int rc = an__h5_attr_read_str(rd, rd->file, where, "format", &format);
  if (!rc && strcmp(format, SWEEP_FORMAT))
    rc = an__h5_rfail(rd, ST_EINPUT, "not a sweep file (format '%s', expected '%s')", format,
                      SWEEP_FORMAT);
  free(format);
  /* 'kind' came with search files: a file without it is a sweep */
  if (!rc && H5Aexists(rd->file, "kind") <= 0)
    snprintf(s->kind, sizeof s->kind, "sweep");
  else if (!rc && !(rc = an__h5_attr_read_str(rd, rd->file, where, "kind", &kind))) {
    if (strcmp(kind, "sweep") && strcmp(kind, "search"))
      rc = an__h5_rfail(rd, ST_EINPUT, "attribute 'kind' is '%s', expected 'sweep' or 'search'",
                        kind);
    else
      snprintf(s->kind, sizeof s->kind, "%s", kind);
  }
  free(kind);
  if (!rc)
    (void)((rc = an__h5_attr_read_str(rd, rd->file, where, "simtrain_version", &s->version)) ||
           (rc = an__h5_attr_read_str(rd, rd->file, where, "name", &s->name)) ||
           (rc = an__h5_attr_read_str(rd, rd->file, where, "spec", &s->spec_json)) ||
           (rc = an__h5_attr_read_str(rd, rd->file, where, "digest", &digest)) ||
           (rc = an__h5_attr_read_num(rd, rd->file, where, "points", H5T_NATIVE_INT32,
                                      &s->points)) ||
           (rc = an__h5_attr_read_num(rd, rd->file, where, "shard", H5T_NATIVE_INT32,
                                      &s->shard)) ||
           (rc = an__h5_attr_read_num(rd, rd->file, where, "shards", H5T_NATIVE_INT32,
                                      &s->shards)));
  if (!rc && strlen(digest) != 16)
    rc = an__h5_rfail(rd, ST_EINPUT, "attribute 'digest' is '%s', expected 16 hex digits",
                      digest);
  if (!rc)
    memcpy(s->digest, digest, 17);
  free(digest);
  if (!rc && (s->shards < 1 || s->shard < 1 || s->shard > s->shards || s->points < 0))
    rc = an__h5_rfail(rd, ST_EINPUT, "shard %d of %d with %d points is not a shard",
                      (int)s->shard, (int)s->shards, (int)s->points);
  if (rc)
    return rc;
  hid_t t = row_type();
  if (t < 0)
    return an__h5_rfail(rd, ST_ENOMEM, "dataset '/points': cannot describe the rows");
  void *rows = NULL;
  /* columns that came with search files: absent in older sweep files */
  static const char *const later[] = {"estimate_step_s", "estimate_rank", NULL};
  unsigned missing = 0;
  rc = an__h5_read_rows_opt(rd, "points", t, 0, later, &missing, &rows, &s->num_rows);
  H5Tclose(t);
  if (rc)
    return rc;
  s->rows = rows;
  for (size_t i = 0; (missing & 1u) && i < s->num_rows; i++)
    s->rows[i].estimate_step_s = NAN;
  for (size_t i = 0; i < s->num_rows; i++) {
    an_sweep_row *r = &s->rows[i];
    for (size_t c = 0; c < NUM_COLUMNS; c++)
      if (columns[c].kind == AN_SW_STR)
        ((char *)r)[columns[c].off + columns[c].size - 1] = '\0';
    if (r->point < 0 || r->point >= s->points)
      return an__h5_rfail(rd, ST_EINPUT, "dataset '/points': row %zu: point %d is outside 0..%d",
                          i, (int)r->point, (int)s->points - 1);
    if (i > 0 && r->point <= s->rows[i - 1].point)
      return an__h5_rfail(rd, ST_EINPUT, "dataset '/points': row %zu: point %d %s", i,
                          (int)r->point,
                          r->point == s->rows[i - 1].point ? "appears twice" : "is out of order");
  }
  if (s->shards == 1 && s->num_rows != (size_t)s->points)
    return an__h5_rfail(rd, ST_EINPUT, "a whole sweep of %d points holds %zu rows",
                        (int)s->points, s->num_rows);
  return ST_OK;
}

int an_sweep_read(const char *path, an_sweep **out, st_err *err)
{
  an__h5r rd;
  int rc = an__h5_open(&rd, path, "sweep", err);
  if (rc)
    return rc;
  an_sweep *s = calloc(1, sizeof *s);
  if (!s || !(s->path = strdup(path)))
    rc = st_err_set(err, ST_ENOMEM, "sweep '%s': out of memory", path);
  else
    rc = read_body(&rd, s);
  an__h5_close_reader(&rd);
  if (rc) {
    an_sweep_destroy(s);
    return rc;
  }
  *out = s;
  return ST_OK;
}

void an_sweep_destroy(an_sweep *s)
{
  if (!s)
    return;
  free(s->path);
  free(s->version);
  free(s->name);
  free(s->spec_json);
  free(s->rows);
  free(s);
}

/* ---- merging ------------------------------------------------------------------ */
static const char *name_of(const an_sweep *s) { return s->path ? s->path : "(shard)"; }

int an_sweep_merge(an_sweep *const *sh, size_t n, an_sweep *out, st_err *err)
{
  memset(out, 0, sizeof *out);
  if (n == 0)
    return st_err_set(err, ST_EUSAGE, "merge: no shards given");
  const an_sweep *a = sh[0];
  for (size_t i = 1; i < n; i++) {
    const an_sweep *b = sh[i];
    if (strcmp(a->digest, b->digest))
      return st_err_set(err, ST_EINPUT, "merge: shard '%s' is of another sweep (digest %s; "
                        "'%s' has %s)", name_of(b), b->digest, name_of(a), a->digest);
    if (strcmp(a->kind, b->kind))
      return st_err_set(err, ST_EINPUT, "merge: '%s' is a %s file, '%s' a %s file", name_of(b),
                        b->kind, name_of(a), a->kind);
    if (a->points != b->points || a->shards != b->shards)
      return st_err_set(err, ST_EINPUT, "merge: shard '%s' is shard %d of %d with %d points, "
                        "'%s' shard %d of %d with %d points", name_of(b), (int)b->shard,
                        (int)b->shards, (int)b->points, name_of(a), (int)a->shard,
                        (int)a->shards, (int)a->points);
  }
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++)
      if (sh[i]->shard == sh[j]->shard)
        return st_err_set(err, ST_EINPUT, "merge: '%s' and '%s' are both shard %d of %d",
                          name_of(sh[i]), name_of(sh[j]), (int)sh[i]->shard, (int)a->shards);
  int32_t *owner = malloc(((size_t)a->points + 1) * sizeof *owner);
  if (!owner)
    return st_err_set(err, ST_ENOMEM, "merge: out of memory");
  for (int32_t p = 0; p < a->points; p++)
    owner[p] = -1;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < sh[i]->num_rows; k++) {
      int32_t p = sh[i]->rows[k].point;
      if (owner[p] >= 0) {
        int rc = st_err_set(err, ST_EINPUT, "merge: point %d is in both '%s' and '%s'", (int)p,
                            name_of(sh[owner[p]]), name_of(sh[i]));
        free(owner);
        return rc;
      }
      owner[p] = (int32_t)i;
    }
  {
    /* a shard number absent: say which, with the points nobody holds */
    for (int32_t k = 1; k <= a->shards; k++) {
      int have = 0;
      for (size_t i = 0; i < n && !have; i++)
        have = sh[i]->shard == k;
      if (have)
        continue;
      char list[160] = "";
      size_t len = 0;
      int shown = 0, missing = 0;
      for (int32_t p = 0; p < a->points; p++)
        if (owner[p] < 0) {
          missing++;
          if (shown < 8 && len + 16 < sizeof list) {
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%d", shown ? ", " : "",
                                    (int)p);
            shown++;
          }
        }
      int rc = st_err_set(err, ST_EINPUT, "merge: shard %d of %d is missing (%d points held by "
                          "no file%s%s%s)", (int)k, (int)a->shards, missing, missing ? ": " : "",
                          list, missing > shown ? ", ..." : "");
      free(owner);
      return rc;
    }
  }
  for (int32_t p = 0; p < a->points; p++)
    if (owner[p] < 0) {
      int rc = st_err_set(err, ST_EINPUT, "merge: point %d is in no shard (a shard file was "
                          "cut short?)", (int)p);
      free(owner);
      return rc;
    }
  free(owner);
  out->rows = malloc(((size_t)a->points + 1) * sizeof *out->rows);
  out->name = strdup(a->name ? a->name : "");
  out->spec_json = strdup(a->spec_json ? a->spec_json : "");
  out->version = strdup(a->version ? a->version : "");
  if (!out->rows || !out->name || !out->spec_json || !out->version) {
    free(out->rows);
    free(out->name);
    free(out->spec_json);
    free(out->version);
    memset(out, 0, sizeof *out);
    return st_err_set(err, ST_ENOMEM, "merge: out of memory");
  }
  memcpy(out->digest, a->digest, sizeof out->digest);
  memcpy(out->kind, a->kind, sizeof out->kind);
  out->points = a->points;
  out->shard = out->shards = 1;
  for (size_t i = 0; i < n; i++) {
    memcpy(out->rows + out->num_rows, sh[i]->rows, sh[i]->num_rows * sizeof *out->rows);
    out->num_rows += sh[i]->num_rows;
  }
  qsort(out->rows, out->num_rows, sizeof *out->rows, by_point);
  return ST_OK;
}

/* ---- printing ----------------------------------------------------------------- */
typedef struct sort_ctx {
  const an_sweep_row *rows;
  const an_sweep_col *col;
  int desc;
} sort_ctx;

/* qsort has no context argument: the order is set here for one sort. */
static sort_ctx sort_by;

static int cmp_rows(const void *pa, const void *pb)
{
  const an_sweep_row *a = &sort_by.rows[*(const size_t *)pa];
  const an_sweep_row *b = &sort_by.rows[*(const size_t *)pb];
  const an_sweep_col *c = sort_by.col;
  int r = 0;
  if (c->kind == AN_SW_STR) {
    r = strcmp((const char *)a + c->off, (const char *)b + c->off);
  } else {
    double x = an_sweep_value(a, c), y = an_sweep_value(b, c);
    int nx = isnan(x), ny = isnan(y);
    if (nx || ny) /* NaN (does not apply, failed) last either way */
      r = nx - ny;
    else
      r = (x > y) - (x < y);
    if (!nx && !ny && sort_by.desc)
      r = -r;
    if (r)
      return r;
    return (a->point > b->point) - (a->point < b->point);
  }
  if (sort_by.desc)
    r = -r;
  return r ? r : (a->point > b->point) - (a->point < b->point);
}

/* The rows' order: by column `by` (NULL: by point). */
static int order(const an_sweep *s, const char *by, int desc, size_t **idx, st_err *err)
{
  const an_sweep_col *c = an_sweep_column(by ? by : "point");
  if (!c) {
    st_buf b;
    st_buf_init(&b);
    for (size_t i = 0; i < NUM_COLUMNS; i++)
      st_buf_printf(&b, "%s%s", i ? ", " : "", columns[i].name);
    int rc = st_err_set(err, ST_EUSAGE, "sweep: no column '%s' to sort by (columns: %s)", by,
                        b.data ? b.data : "");
    st_buf_release(&b);
    return rc;
  }
  *idx = malloc((s->num_rows + 1) * sizeof **idx);
  if (!*idx)
    return st_err_set(err, ST_ENOMEM, "sweep: out of memory");
  for (size_t i = 0; i < s->num_rows; i++)
    (*idx)[i] = i;
  sort_by = (sort_ctx){s->rows, c, desc};
  qsort(*idx, s->num_rows, sizeof **idx, cmp_rows);
  return ST_OK;
}

/* Neither simulated nor (a search's candidate) estimated. */
static int failed(const an_sweep_row *r)
{
  return strcmp(r->status, "ok") != 0 && strcmp(r->status, "estimated") != 0;
}

static void duration(double s, char *buf, size_t n)
{
  if (isnan(s))
    snprintf(buf, n, "-");
  else if (s >= 86400)
    snprintf(buf, n, "%.1f d", s / 86400);
  else if (s >= 3600)
    snprintf(buf, n, "%.1f h", s / 3600);
  else
    snprintf(buf, n, "%.0f s", s);
}

int an_sweep_print(const an_sweep *s, const char *by, int desc, FILE *out, st_err *err)
{
  size_t *idx;
  int rc = order(s, by, desc, &idx, err);
  if (rc)
    return rc;
  int train = 0, cost = 0;
  size_t nfail = 0;
  for (size_t i = 0; i < s->num_rows; i++) {
    train |= !isnan(s->rows[i].time_to_train_s);
    cost |= !isnan(s->rows[i].cost_usd);
    nfail += failed(&s->rows[i]);
  }
  fprintf(out, "%s '%s': %zu of %d %s", s->kind[0] ? s->kind : "sweep", s->name, s->num_rows,
          (int)s->points, strcmp(s->kind, "search") ? "points" : "candidates");
  if (s->shards > 1)
    fprintf(out, " (shard %d of %d)", (int)s->shard, (int)s->shards);
  fprintf(out, ", %zu failed, digest %s\n\n", nfail, s->digest);
  fprintf(out, "%5s  %-16s %-24s %6s %5s %6s %5s  %10s %10s %6s", "point", "model", "cluster",
          "gpus", "gbs", "seq", "dtype", "step (s)", "tok/s/GPU", "MFU");
  if (train)
    fprintf(out, " %9s", "to train");
  if (cost)
    fprintf(out, " %11s", "cost ($)");
  fprintf(out, "  layout\n");
  for (size_t k = 0; k < s->num_rows; k++) {
    const an_sweep_row *r = &s->rows[idx[k]];
    char gbs[16], seq[16];
    snprintf(gbs, sizeof gbs, r->gbs ? "%d" : "-", (int)r->gbs);
    snprintf(seq, sizeof seq, r->seq ? "%d" : "-", (int)r->seq);
    fprintf(out, "%5d  %-16.16s %-24.24s %6d %5s %6s %5s", (int)r->point, r->model, r->cluster,
            (int)r->num_gpus, gbs, seq, r->dtype[0] ? r->dtype : "-");
    if (failed(r)) {
      fprintf(out, "  %s: %s\n", r->status, r->error);
      continue;
    }
    if (strcmp(r->status, "ok")) { /* a search's candidate, estimated only */
      fprintf(out, "  %10.4f %10s %6s", r->estimate_step_s, "(estimate)", "");
      if (train)
        fprintf(out, " %9s", "");
      if (cost)
        fprintf(out, " %11s", "");
      fprintf(out, "  %s\n", r->layout);
      continue;
    }
    fprintf(out, "  %10.4f %10.1f %5.1f%%", r->step_time_s, r->tokens_per_s_per_gpu,
            100 * r->mfu);
    if (train) {
      char d[32];
      duration(r->time_to_train_s, d, sizeof d);
      fprintf(out, " %9s", d);
    }
    if (cost) {
      if (isnan(r->cost_usd))
        fprintf(out, " %11s", "-");
      else
        fprintf(out, " %11.0f", r->cost_usd);
    }
    fprintf(out, "  %s%s\n", strcmp(r->request, "search") ? "" : "search: ", r->layout);
  }
  free(idx);
  return ST_OK;
}

int an_sweep_print_json(const an_sweep *s, const char *by, int desc, FILE *out, st_err *err)
{
  size_t *idx;
  int rc = order(s, by, desc, &idx, err);
  if (rc)
    return rc;
  size_t nfail = 0;
  for (size_t i = 0; i < s->num_rows; i++)
    nfail += failed(&s->rows[i]);
  fprintf(out, "{\"kind\":\"%s\",\"name\":", s->kind[0] ? s->kind : "sweep");
  st_json_str(out, s->name);
  fprintf(out, ",\"digest\":\"%s\",\"points\":%d,\"shard\":%d,\"shards\":%d,\"rows_held\":%zu,"
          "\"failed\":%zu,\"spec\":%s,\"rows\":[",
          s->digest, (int)s->points, (int)s->shard, (int)s->shards, s->num_rows, nfail,
          s->spec_json && s->spec_json[0] ? s->spec_json : "null");
  char num[40];
  for (size_t k = 0; k < s->num_rows; k++) {
    const an_sweep_row *r = &s->rows[idx[k]];
    fputs(k ? ",{" : "{", out);
    for (size_t c = 0; c < NUM_COLUMNS; c++) {
      const an_sweep_col *col = &columns[c];
      fprintf(out, "%s\"%s\":", c ? "," : "", col->name);
      if (col->kind == AN_SW_STR)
        st_json_str(out, (const char *)r + col->off);
      else if (col->kind == AN_SW_INT)
        fprintf(out, "%d", (int)an_sweep_value(r, col));
      else
        fputs(st_json_num(an_sweep_value(r, col), num, sizeof num), out);
    }
    fputc('}', out);
  }
  fputs("]}\n", out);
  free(idx);
  return ST_OK;
}

/* ---- choosing rows (sweep.h) ---------------------------------------------------- */
int an_sweep_keep(an_sweep *sw, const char *where, st_err *err)
{
  const char *eq = strchr(where, '=');
  char col[64];
  if (!eq || eq == where || (size_t)(eq - where) >= sizeof col)
    return st_err_set(err, ST_EUSAGE, "--where '%s' is not COL=VALUE", where);
  snprintf(col, sizeof col, "%.*s", (int)(eq - where), where);
  const an_sweep_col *c = an_sweep_column(col);
  if (!c)
    return st_err_set(err, ST_EUSAGE, "--where '%s': no column '%s' (docs/sweep.md)", where, col);
  const char *want = eq + 1;
  char *end;
  double num = strtod(want, &end);
  if (c->kind != AN_SW_STR && (end == want || *end))
    return st_err_set(err, ST_EUSAGE, "--where '%s': column '%s' holds numbers", where, col);
  size_t k = 0;
  for (size_t i = 0; i < sw->num_rows; i++) {
    const an_sweep_row *r = &sw->rows[i];
    int keep = c->kind == AN_SW_STR ? !strcmp((const char *)r + c->off, want)
                                    : an_sweep_value(r, c) == num;
    if (keep)
      sw->rows[k++] = *r;
  }
  if (!k)
    return st_err_set(err, ST_EINPUT, "sweep '%s': no row has %s", sw->path, where);
  sw->num_rows = k;
  /* the picture's title says which rows it draws */
  st_buf b;
  st_buf_init(&b);
  st_buf_printf(&b, "%s, %s", sw->name ? sw->name : "", where);
  char *name = st_buf_detach(&b, NULL);
  if (name) {
    free(sw->name);
    sw->name = name;
  }
  return ST_OK;
}
