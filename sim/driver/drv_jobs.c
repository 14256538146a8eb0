/* drv_jobs.c — several jobs on one fabric: each alone, then all together
 * (docs/jobs.md).
 *
 * A job is a workload (a file, or a model and a layout through the
 * generators) or background traffic, placed on a list of the cluster's
 * GPUs: its rank i runs on the i-th GPU listed.  The design:
 *
 *   1. Every job, alone on its GPUs, is one merged workload (wl_merge of
 *      that job only, the other GPUs idle) simulated in its own process
 *      (SimGrid allows one engine per process): its step alone.
 *   2. Background traffic needs a window to fill: the longest of the other
 *      jobs' runs alone (steps x step time).  It is generated then
 *      (wl_background_alltoall) and simulated alone like the others.
 *   3. All jobs merged into one workload are simulated in this process,
 *      with link loads recorded: a job's step together is its slowest
 *      rank's finish over its iterations; the links that carried bytes of
 *      more than one job are the ones they fought over (an_jobs_shared_links,
 *      communicators attributed to their job by the merge's order).
 *
 * Every job starts at time 0 in both runs and plays its iterations once;
 * a job that ends first stops loading the links it shared. */
#include <ctype.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include "driver.h"

void drv_fabric_init(drv_fabric *f)
{
  memset(f, 0, sizeof *f);
  sim_options_init(&f->opt);
  f->top_links = 10;
  f->procs = 1;
}

static const char *kind_name(int k)
{
  return k == DRV_FJOB_MODEL ? "model" : k == DRV_FJOB_BACKGROUND ? "background" : "workload";
}

static drv_fabric_job *job_new(drv_fabric *f, st_err *err)
{
  if (f->num_jobs >= AN_JOBS_MAX) {
    st_err_set(err, ST_EUSAGE, "more than %d jobs", AN_JOBS_MAX);
    return NULL;
  }
  drv_fabric_job *v = realloc(f->jobs, ((size_t)f->num_jobs + 1) * sizeof *v);
  if (!v) {
    st_err_set(err, ST_ENOMEM, "out of memory");
    return NULL;
  }
  f->jobs = v;
  drv_fabric_job *j = &v[f->num_jobs++];
  memset(j, 0, sizeof *j);
  snprintf(j->name, sizeof j->name, "job%d", f->num_jobs);
  j->rounds = DRV_BACKGROUND_ROUNDS;
  return j;
}

/* RATE: a number of bytes per second with an optional K, M, G or T (1e3,
 * 1e6, 1e9, 1e12). */
static int parse_rate(const char *s, double *out)
{
  char *e;
  double v = strtod(s, &e);
  if (e == s)
    return -1;
  double scale = 1;
  switch (*e) {
  case 'K': scale = 1e3; e++; break;
  case 'M': scale = 1e6; e++; break;
  case 'G': scale = 1e9; e++; break;
  case 'T': scale = 1e12; e++; break;
  default: break;
  }
  v *= scale;
  if (*e || !isfinite(v) || !(v > 0) || v > 1e15)
    return -1;
  *out = v;
  return 0;
}

/* "alltoall:RATE[:ROUNDS]" into j; what names the job in messages. */
static int parse_background(drv_fabric_job *j, const char *s, const char *what, st_err *err)
{
  if (strncmp(s, "alltoall:", 9))
    return st_err_set(err, ST_EUSAGE, "%s: background '%s' is not alltoall:RATE[:ROUNDS] "
                                      "(storage traffic has nowhere to go: docs/jobs.md)",
                      what, s);
  char rate[64];
  const char *r = s + 9, *colon = strchr(r, ':');
  size_t n = colon ? (size_t)(colon - r) : strlen(r);
  if (n >= sizeof rate)
    n = sizeof rate - 1;
  memcpy(rate, r, n);
  rate[n] = '\0';
  if (parse_rate(rate, &j->rate_Bps))
    return st_err_set(err, ST_EUSAGE, "%s: '%s' is not a rate in bytes/s (a positive number "
                                      "with an optional K, M, G or T: 10G)", what, rate);
  if (colon) {
    char *e;
    long k = strtol(colon + 1, &e, 10);
    if (e == colon + 1 || *e || k < 1 || k > 100000)
      return st_err_set(err, ST_EUSAGE, "%s: rounds '%s' is not a count from 1 to 100000", what,
                        colon + 1);
    j->rounds = (int)k;
  }
  j->kind = DRV_FJOB_BACKGROUND;
  return ST_OK;
}

/* "model=M,layout=L[,seq=S]": the layout runs to ",seq=" or the end (no
 * layout key is called seq). */
static int parse_model(drv_fabric_job *j, const char *s, const char *what, st_err *err)
{
  const char *lay = strstr(s, ",layout=");
  if (!lay)
    return st_err_set(err, ST_EUSAGE, "%s: 'model=M' needs ',layout=L' after it", what);
  const char *seq = strstr(lay, ",seq=");
  j->model = strndup(s + 6, (size_t)(lay - s - 6));
  lay += 8;
  j->layout = strndup(lay, seq ? (size_t)(seq - lay) : strlen(lay));
  if (!j->model || !j->layout)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  if (!j->model[0] || !j->layout[0])
    return st_err_set(err, ST_EUSAGE, "%s: the model or the layout is empty", what);
  if (seq) {
    char *e;
    long v = strtol(seq + 5, &e, 10);
    if (e == seq + 5 || *e || v < 1 || v > (1L << 30))
      return st_err_set(err, ST_EUSAGE, "%s: seq '%s' is not a positive length", what, seq + 5);
    j->seq = (int)v;
  }
  j->kind = DRV_FJOB_MODEL;
  return ST_OK;
}

static int name_check(const drv_fabric *f, const drv_fabric_job *j, const char *what, st_err *err)
{
  if (!j->name[0])
    return st_err_set(err, ST_EUSAGE, "%s: the job's name is empty", what);
  for (const char *p = j->name; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.')
      return st_err_set(err, ST_EUSAGE, "%s: job name '%s' has '%c' (letters, digits, '_', '-' "
                                        "and '.' only)", what, j->name, *p);
  for (const drv_fabric_job *o = f->jobs; o < j; o++)
    if (!strcmp(o->name, j->name))
      return st_err_set(err, ST_EUSAGE, "%s: two jobs are named '%s'", what, j->name);
  return ST_OK;
}

int drv_fabric_add_spec(drv_fabric *f, const char *spec, st_err *err)
{
  drv_fabric_job *j = job_new(f, err);
  if (!j)
    return err ? err->code : ST_ENOMEM;
  char what[300];
  snprintf(what, sizeof what, "job '%s'", spec);
  const char *s = spec;
  /* NAME: in front (no '=' or '/' before the colon) */
  size_t k = strcspn(s, ":=/@");
  if (s[k] == ':' && k > 0 && k < sizeof j->name) {
    memcpy(j->name, s, k);
    j->name[k] = '\0';
    s += k + 1;
  }
  const char *at = strrchr(s, '@');
  if (!at || strncmp(at, "@gpus=", 6) || !at[6])
    return st_err_set(err, ST_EUSAGE, "%s: expected [NAME:]WHAT@gpus=LIST (docs/jobs.md)", what);
  if (!(j->gpus = st_strdup(at + 6)))
    return st_err_set(err, ST_ENOMEM, "out of memory");
  char *body = strndup(s, (size_t)(at - s));
  if (!body)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  int rc;
  if (!body[0])
    rc = st_err_set(err, ST_EUSAGE, "%s: nothing before '@gpus='", what);
  else if (!strncmp(body, "background=", 11))
    rc = parse_background(j, body + 11, what, err);
  else if (!strncmp(body, "model=", 6))
    rc = parse_model(j, body, what, err);
  else {
    j->kind = DRV_FJOB_WORKLOAD;
    rc = (j->workload = st_strdup(body)) ? ST_OK : st_err_set(err, ST_ENOMEM, "out of memory");
  }
  free(body);
  return rc ? rc : name_check(f, j, what, err);
}

/* ---- the jobs file ---------------------------------------------------------- */

static char *beside(const char *file, const char *name)
{
  const char *slash = strrchr(file, '/');
  if (name[0] == '/' || !slash)
    return st_strdup(name);
  st_buf b;
  st_buf_init(&b);
  st_buf_printf(&b, "%.*s/%s", (int)(slash - file), file, name);
  return st_buf_detach(&b, NULL);
}

enum { J_NAME, J_WORKLOAD, J_MODEL, J_LAYOUT, J_SEQ, J_BACKGROUND, J_GPUS, J_COUNT };
static const char *const job_keys[J_COUNT] = {"name",  "workload",   "model", "layout",
                                              "seq",   "background", "gpus"};

static int read_job(drv_fabric *f, const st_jrd *r, const st_jpath *at, const cJSON *o,
                    const char *path)
{
  const cJSON *v[J_COUNT];
  int rc = st_jrd_members(r, at, o, job_keys, J_COUNT, v);
  if (rc)
    return rc;
  drv_fabric_job *j = job_new(f, r->err);
  if (!j)
    return r->err ? r->err->code : ST_ENOMEM;
  const char *s;
  if (!v[J_GPUS])
    return st_jrd_missing(r, at, "gpus");
  if ((rc = st_jrd_string(r, at, v[J_GPUS], &s)))
    return rc;
  if (!(j->gpus = st_strdup(s)))
    return st_jrd_oom(r);
  if (v[J_NAME]) {
    if ((rc = st_jrd_string(r, at, v[J_NAME], &s)))
      return rc;
    snprintf(j->name, sizeof j->name, "%s", s);
  }
  int sources = !!v[J_WORKLOAD] + !!v[J_MODEL] + !!v[J_BACKGROUND];
  if (sources != 1)
    return st_jrd_fail(r, at, "give one of 'workload', 'model' (with 'layout') or 'background'");
  if ((v[J_LAYOUT] || v[J_SEQ]) && !v[J_MODEL])
    return st_jrd_fail(r, at, "'layout' and 'seq' go with 'model'");
  char what[300];
  snprintf(what, sizeof what, "%s: job '%s'", r->subject, j->name);
  if (v[J_WORKLOAD]) {
    if ((rc = st_jrd_string(r, at, v[J_WORKLOAD], &s)))
      return rc;
    j->kind = DRV_FJOB_WORKLOAD;
    if (!(j->workload = beside(path, s)))
      return st_jrd_oom(r);
  } else if (v[J_MODEL]) {
    if (!v[J_LAYOUT])
      return st_jrd_missing(r, at, "layout");
    const char *m, *l;
    if ((rc = st_jrd_string(r, at, v[J_MODEL], &m)) || (rc = st_jrd_string(r, at, v[J_LAYOUT], &l)))
      return rc;
    long seq = 0;
    if (v[J_SEQ] && (rc = st_jrd_int(r, at, v[J_SEQ], 1, 1L << 30, &seq)))
      return rc;
    j->kind = DRV_FJOB_MODEL;
    j->seq = (int)seq;
    size_t n = strlen(m);
    int file = n > 5 && !strcmp(m + n - 5, ".json");
    j->model = file ? beside(path, m) : st_strdup(m);
    j->layout = st_strdup(l);
    if (!j->model || !j->layout)
      return st_jrd_oom(r);
  } else {
    if ((rc = st_jrd_string(r, at, v[J_BACKGROUND], &s)) ||
        (rc = parse_background(j, s, what, r->err)))
      return rc;
  }
  return name_check(f, j, what, r->err);
}

int drv_fabric_load(drv_fabric *f, const char *path, st_err *err)
{
  char subject[1100];
  snprintf(subject, sizeof subject, "jobs '%s'", path);
  char *text = NULL;
  size_t len = 0;
  int rc = st_file_read_all(path, &text, &len, err);
  if (rc)
    return rc;
  cJSON *root = NULL;
  rc = st_json_parse(text, len, subject, &root, err);
  free(text);
  if (rc)
    return rc;
  st_jrd r = {subject, "see docs/jobs.md", err};
  if (!cJSON_IsArray(root) || cJSON_GetArraySize(root) == 0)
    rc = st_jrd_fail(&r, NULL, "the document is %s, expected a non-empty array of jobs",
                     cJSON_IsArray(root) ? "empty" : st_json_type_name(root));
  long i = 0;
  for (const cJSON *o = root ? root->child : NULL; o && !rc; o = o->next, i++) {
    st_jpath at = {NULL, NULL, i};
    rc = read_job(f, &r, &at, o, path);
  }
  cJSON_Delete(root);
  return rc;
}

/* ---- placing and loading ---------------------------------------------------- */

/* "0-7,16-23" into j->gpu, in the order given; each GPU once, all below
 * num_gpus. */
static int gpus_parse(drv_fabric_job *j, int num_gpus, st_err *err)
{
  size_t cap = 16, n = 0;
  int32_t *v = malloc(cap * sizeof *v);
  if (!v)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  const char *p = j->gpus;
  int rc = ST_OK;
  while (!rc) {
    char *e;
    long a = strtol(p, &e, 10), b;
    if (e == p || a < 0 || !isdigit((unsigned char)*p)) {
      rc = st_err_set(err, ST_EUSAGE, "job '%s': gpus '%s': '%s' is not a GPU or a range (like "
                                      "0-7,16-23)", j->name, j->gpus, p);
      break;
    }
    b = a;
    if (*e == '-') {
      const char *q = e + 1;
      b = strtol(q, &e, 10);
      if (e == q || !isdigit((unsigned char)*q) || b < a) {
        rc = st_err_set(err, ST_EUSAGE, "job '%s': gpus '%s': the range from %ld is not A-B with "
                                        "A <= B", j->name, j->gpus, a);
        break;
      }
    }
    if (*e != ',' && *e) {
      rc = st_err_set(err, ST_EUSAGE, "job '%s': gpus '%s': '%s' is not a GPU or a range (like "
                                      "0-7,16-23)", j->name, j->gpus, p);
      break;
    }
    if (b >= num_gpus) {
      rc = st_err_set(err, ST_EUSAGE, "job '%s': gpus '%s': GPU %ld is not in the cluster (GPUs "
                                      "0-%d)", j->name, j->gpus, b, num_gpus - 1);
      break;
    }
    for (long g = a; g <= b && !rc; g++) {
      if (n == cap) {
        int32_t *nv = realloc(v, 2 * cap * sizeof *v);
        if (!nv) {
          rc = st_err_set(err, ST_ENOMEM, "out of memory");
          break;
        }
        v = nv;
        cap *= 2;
      }
      v[n++] = (int32_t)g;
    }
    if (!*e)
      break;
    p = e + 1;
  }
  if (rc) {
    free(v);
    return rc;
  }
  j->gpu = v;
  j->num_gpus = (int)n;
  return ST_OK;
}

/* Every GPU used by one job only: the first clash names both. */
static int overlap_check(const drv_fabric *f, int num_gpus, st_err *err)
{
  int *owner = malloc((size_t)num_gpus * sizeof *owner);
  if (!owner)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  for (int g = 0; g < num_gpus; g++)
    owner[g] = -1;
  int rc = ST_OK;
  for (int k = 0; k < f->num_jobs && !rc; k++)
    for (int i = 0; i < f->jobs[k].num_gpus && !rc; i++) {
      int g = f->jobs[k].gpu[i];
      if (owner[g] == k)
        rc = st_err_set(err, ST_EUSAGE, "job '%s': gpus '%s' names GPU %d twice", f->jobs[k].name,
                        f->jobs[k].gpus, g);
      else if (owner[g] >= 0)
        rc = st_err_set(err, ST_EUSAGE, "jobs '%s' and '%s' both use GPU %d (gpus '%s' and '%s')",
                        f->jobs[owner[g]].name, f->jobs[k].name, g, f->jobs[owner[g]].gpus,
                        f->jobs[k].gpus);
      else
        owner[g] = k;
    }
  free(owner);
  return rc;
}

static int job_load(drv_fabric_job *j, st_err *err)
{
  int rc;
  if (j->kind == DRV_FJOB_WORKLOAD) {
    rc = wl_workload_read(j->workload, &j->wl, err);
  } else {
    wl_model m;
    wl_layout l;
    rc = drv_model_load(j->model, NULL, j->seq, &m, err);
    if (!rc)
      rc = wl_layout_parse(j->layout, j->num_gpus, &m, &l, err);
    if (!rc)
      rc = wl_generate(&m, &l, &j->wl, err);
  }
  if (rc)
    return st_err_prefix(err, "job '%s': ", j->name), rc;
  if (j->wl->num_ranks != j->num_gpus)
    return st_err_set(err, ST_EINPUT, "job '%s': the workload has %d ranks but gpus '%s' names "
                                      "%d GPUs", j->name, j->wl->num_ranks, j->gpus, j->num_gpus);
  return ST_OK;
}

/* ---- simulating --------------------------------------------------------------- */

/* The merged workload of jobs [0..n) where use[k] (NULL: all). */
static int merge(const drv_fabric *f, const int *use, wl_workload **out, st_err *err)
{
  wl_merge_part *parts = calloc((size_t)f->num_jobs + 1, sizeof *parts);
  if (!parts)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  int n = 0;
  for (int k = 0; k < f->num_jobs; k++)
    if (!use || use[k])
      parts[n++] = (wl_merge_part){f->jobs[k].wl, f->jobs[k].name, f->jobs[k].gpu};
  int rc = wl_merge(parts, n, f->num_ranks, out, err);
  free(parts);
  return rc;
}

/* The slowest of rank rows' finish over the job's GPUs, per iteration. */
static double job_step(const drv_fabric_job *j, const void *rows, size_t stride, size_t off)
{
  double end = 0;
  for (int i = 0; i < j->num_gpus; i++) {
    double t;
    memcpy(&t, (const char *)rows + (size_t)j->gpu[i] * stride + off, sizeof t);
    if (t > end)
      end = t;
  }
  int it = j->wl->meta.iterations > 0 ? j->wl->meta.iterations : 1;
  return end / it;
}

typedef struct alone_ctx {
  drv_fabric *f;
  const int *which; /* task i simulates job which[i] */
  st_err first;
  int failed;
} alone_ctx;

static int alone_task(void *u, int i, st_buf *reply, st_err *err)
{
  const alone_ctx *x = u;
  const drv_fabric *f = x->f;
  int k = x->which[i];
  int *use = calloc((size_t)f->num_jobs, sizeof *use);
  if (!use)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  use[k] = 1;
  wl_workload *wl = NULL;
  sim_result *res = NULL;
  sim_options opt = f->opt;
  opt.link_stats = opt.record_colls = opt.timeline = 0;
  opt.quiet = 1;
  int rc = merge(f, use, &wl, err);
  free(use);
  if (!rc)
    rc = sim_run(wl, f->run.cl, &opt, &res, err);
  if (!rc) {
    double step = job_step(&f->jobs[k], res->ranks, sizeof *res->ranks,
                           offsetof(sim_rank_stats, finish_s));
    rc = st_buf_append(reply, &step, sizeof step);
  }
  sim_result_destroy(res);
  wl_workload_destroy(wl);
  return rc;
}

static void alone_done(void *u, int i, const drv_answer *a)
{
  alone_ctx *x = u;
  drv_fabric_job *j = &x->f->jobs[x->which[i]];
  st_err e;
  st_err_clear(&e);
  if (a->end == DRV_END_DONE && a->rc == 0 && a->len == sizeof(double))
    memcpy(&j->step_alone_s, a->data, sizeof(double));
  else if (a->end == DRV_END_DONE && a->rc)
    st_err_set(&e, a->rc, "job '%s' alone: %s", j->name, a->msg);
  else if (a->end == DRV_END_CRASH)
    st_err_set(&e, ST_ESIM, "job '%s' alone: the simulation crashed (signal %d)", j->name,
               a->signal);
  else
    st_err_set(&e, ST_ESIM, "job '%s' alone: the simulation ended without an answer", j->name);
  if (e.code && !x->failed) {
    x->first = e;
    x->failed = 1;
  }
}

/* Jobs of one kind (background or not) alone, in processes. */
static int run_alone(drv_fabric *f, int background, st_err *err)
{
  int *which = malloc(((size_t)f->num_jobs + 1) * sizeof *which), n = 0;
  if (!which)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  for (int k = 0; k < f->num_jobs; k++)
    if ((f->jobs[k].kind == DRV_FJOB_BACKGROUND) == background)
      which[n++] = k;
  alone_ctx x = {f, which, {0, ""}, 0};
  int rc = n ? drv_pool_run(n, f->procs, 0, alone_task, alone_done, &x, err) : ST_OK;
  free(which);
  if (!rc && x.failed) {
    *err = x.first;
    rc = x.first.code;
  }
  return rc;
}

/* Background jobs fill the longest of the others' runs alone. */
static int make_background(drv_fabric *f, st_err *err)
{
  double window = 0;
  int others = 0;
  for (int k = 0; k < f->num_jobs; k++) {
    const drv_fabric_job *j = &f->jobs[k];
    if (j->kind == DRV_FJOB_BACKGROUND)
      continue;
    others++;
    double run = j->step_alone_s * (j->wl->meta.iterations > 0 ? j->wl->meta.iterations : 1);
    if (run > window)
      window = run;
  }
  for (int k = 0; k < f->num_jobs; k++) {
    drv_fabric_job *j = &f->jobs[k];
    if (j->kind != DRV_FJOB_BACKGROUND)
      continue;
    if (!others || !(window > 0))
      return st_err_set(err, ST_EUSAGE, "job '%s': background traffic needs another job to run "
                                        "beside (its window is their longest run alone)", j->name);
    int rc = wl_background_alltoall(j->num_gpus, j->rate_Bps, window, j->rounds, &j->wl, err);
    if (rc)
      return st_err_prefix(err, "job '%s': ", j->name), rc;
    j->window_s = window;
  }
  return ST_OK;
}

static int run_together(drv_fabric *f, st_err *err)
{
  drv_run *r = &f->run;
  int rc = merge(f, NULL, &r->wl, err);
  if (rc)
    return rc;
  sim_options opt = f->opt;
  opt.link_stats = 1; /* the links they fought over */
  opt.record_colls = f->results_file;
  sim_result *res = NULL;
  rc = sim_run(r->wl, r->cl, &opt, &res, err);
  if (!rc)
    rc = drv_measure_take(res, &r->meas, err);
  sim_result_destroy(res);
  if (rc)
    return rc;
  an_summary_compute(r->wl, r->cl, &r->meas, &r->sum);
  f->rows = calloc((size_t)f->num_jobs, sizeof *f->rows);
  int32_t *comm_job = malloc(((size_t)r->wl->num_comms + 1) * sizeof *comm_job);
  const char **names = calloc((size_t)f->num_jobs, sizeof *names);
  if (!f->rows || !comm_job || !names)
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
  int c = 0;
  for (int k = 0; k < f->num_jobs && !rc; k++) {
    drv_fabric_job *j = &f->jobs[k];
    an_job_row *row = &f->rows[k];
    names[k] = j->name;
    for (int i = 0; i < j->wl->num_comms; i++)
      comm_job[c++] = k;
    j->step_together_s = job_step(j, r->meas.ranks, sizeof *r->meas.ranks,
                                  offsetof(an_rank_row, finish_s));
    snprintf(row->name, sizeof row->name, "%s", j->name);
    snprintf(row->kind, sizeof row->kind, "%s", kind_name(j->kind));
    snprintf(row->gpus, sizeof row->gpus, "%s", j->gpus);
    row->num_gpus = j->num_gpus;
    row->step_time_alone_s = j->step_alone_s;
    row->step_time_together_s = j->step_together_s;
    row->slowdown = j->step_alone_s > 0 ? j->step_together_s / j->step_alone_s : NAN;
  }
  if (!rc)
    rc = an_jobs_shared_links(&r->meas, comm_job, c, names, f->num_jobs, (size_t)f->top_links,
                              &f->shared, &f->num_shared, err);
  free(comm_job);
  free(names);
  return rc;
}

static char *jobs_json(const drv_fabric *f)
{
  st_buf b;
  st_buf_init(&b);
  st_buf_printf(&b, "{\"kind\":\"jobs\",\"jobs\":[");
  for (int k = 0; k < f->num_jobs; k++) {
    const drv_fabric_job *j = &f->jobs[k];
    st_buf_printf(&b, "%s{\"name\":", k ? "," : "");
    st_buf_json_str(&b, j->name);
    st_buf_printf(&b, ",\"kind\":\"%s\",\"gpus\":", kind_name(j->kind));
    st_buf_json_str(&b, j->gpus);
    if (j->kind == DRV_FJOB_WORKLOAD) {
      st_buf_printf(&b, ",\"workload\":");
      st_buf_json_str(&b, j->workload);
    } else if (j->kind == DRV_FJOB_MODEL) {
      st_buf_printf(&b, ",\"model\":");
      st_buf_json_str(&b, j->model);
      st_buf_printf(&b, ",\"layout\":");
      st_buf_json_str(&b, j->wl && j->wl->meta.layout ? j->wl->meta.layout : j->layout);
      if (j->seq)
        st_buf_printf(&b, ",\"seq\":%d", j->seq);
    } else {
      st_buf_printf(&b, ",\"background\":\"alltoall\",\"rate_Bps\":%.17g,\"rounds\":%d,"
                        "\"window_s\":%.17g", j->rate_Bps, j->rounds, j->window_s);
    }
    st_buf_printf(&b, "}");
  }
  st_buf_printf(&b, "]}");
  return st_buf_detach(&b, NULL);
}

int drv_fabric_run(drv_fabric *f, st_err *err)
{
  if (!f->num_jobs)
    return st_err_set(err, ST_EUSAGE, "no jobs");
  int rc = plat_cluster_load(f->cluster, &f->run.cl, err);
  for (int k = 0; k < f->num_jobs && !rc; k++)
    rc = gpus_parse(&f->jobs[k], f->run.cl->num_gpus, err);
  if (!rc)
    rc = overlap_check(f, f->run.cl->num_gpus, err);
  f->num_ranks = 0;
  for (int k = 0; k < f->num_jobs && !rc; k++)
    for (int i = 0; i < f->jobs[k].num_gpus; i++)
      if (f->jobs[k].gpu[i] + 1 > f->num_ranks)
        f->num_ranks = f->jobs[k].gpu[i] + 1;
  for (int k = 0; k < f->num_jobs && !rc; k++)
    if (f->jobs[k].kind != DRV_FJOB_BACKGROUND)
      rc = job_load(&f->jobs[k], err);
  if (!rc)
    rc = run_alone(f, 0, err);
  if (!rc)
    rc = make_background(f, err);
  if (!rc)
    rc = run_alone(f, 1, err);
  if (!rc)
    rc = run_together(f, err);
  if (rc)
    return rc;
  f->run.workload_json = jobs_json(f);
  f->run.name = "jobs";
  return ST_OK;
}

int drv_fabric_write(const drv_fabric *f, const char *path, const char *command_line, st_err *err)
{
  const drv_run *r = &f->run;
  an_run_info info = {
      .command_line = command_line,
      .workload_json = r->workload_json ? r->workload_json : "{}",
      .cluster_json = r->cl->spec_json ? r->cl->spec_json : "{}",
      .options_json = "{}",
      .workload_name = "jobs",
      .cluster_name = r->cl->name,
      .wl = r->wl,
      .measured = &r->meas,
      .summary = &r->sum,
      .jobs = f->rows,
      .num_jobs = f->num_jobs,
      .shared_links = f->shared,
      .num_shared_links = f->num_shared,
  };
  return an_results_write(path, &info, err);
}

void drv_fabric_print(const drv_fabric *f, int json, FILE *out)
{
  if (json)
    an_jobs_print_json(f->rows, f->num_jobs, f->shared, f->num_shared, f->run.sum.step_time_s,
                       out);
  else {
    fprintf(out, "%d jobs on %s (%d GPUs), each alone and all together\n\n", f->num_jobs,
            f->run.cl->name, f->run.cl->num_gpus);
    an_jobs_print_text(f->rows, f->num_jobs, f->shared, f->num_shared, out);
  }
}

void drv_fabric_release(drv_fabric *f)
{
  for (int k = 0; k < f->num_jobs; k++) {
    drv_fabric_job *j = &f->jobs[k];
    free(j->workload);
    free(j->model);
    free(j->layout);
    free(j->gpus);
    free(j->gpu);
    wl_workload_destroy(j->wl);
  }
  free(f->jobs);
  free(f->rows);
  free(f->shared);
  drv_run_release(&f->run);
  memset(f, 0, sizeof *f);
}
