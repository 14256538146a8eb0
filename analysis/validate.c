/* validate.c — predictions against published training runs.
 *
 * A validation case is one published run (one JSON file per run in
 * bench/validation): a model, a layout, a cluster and the measured per-GPU
 * throughput.  an_validate_run
 * predicts every case in its own child process (SimGrid allows one engine
 * per process), at most `jobs` at a time, and brings back the predicted step
 * time and tokens/s per GPU over a pipe; a slot goes to the next case as soon
 * as any child ends.  Results are collected in case order
 * whatever order the children finish in, so the output is the same bytes on
 * every run.
 *
 * an_validate_loo is the leave-one-out calibration of docs/calibration.md:
 * each case is predicted with the GEMM efficiency fitted on the other cases
 * of its device, so the reported errors are predictions, not fits.
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "analysis.h"

/* ---- case files ------------------------------------------------------------- */

static char *dup_str(const char *s)
{
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

static int json_line_of(const char *text, const char *at)
{
  int line = 1;
  for (const char *p = text; p && at && p < at && *p; p++)
    if (*p == '\n')
      line++;
  return line;
}

static int str_key(const cJSON *root, const char *key, const char *path, char **out, st_err *err)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!v)
    return st_err_set(err, ST_EINPUT, "case '%s': '%s' is missing", path, key);
  if (!cJSON_IsString(v) || !v->valuestring[0])
    return st_err_set(err, ST_EINPUT, "case '%s': '%s' is not a non-empty string", path, key);
  *out = dup_str(v->valuestring);
  return *out ? ST_OK : st_err_set(err, ST_ENOMEM, "out of memory");
}

static int parse_case(const char *path, const char *text, an_case *c, st_err *err)
{
  cJSON *root = cJSON_Parse(text);
  if (!root)
    return st_err_set(err, ST_EINPUT, "case '%s': not valid JSON (line %d)", path,
                      json_line_of(text, cJSON_GetErrorPtr()));
  int rc = ST_OK;
  if (!cJSON_IsObject(root)) {
    rc = st_err_set(err, ST_EINPUT, "case '%s': the file is not a JSON object", path);
    goto out;
  }
  if ((rc = str_key(root, "name", path, &c->name, err)) ||
      (rc = str_key(root, "layout", path, &c->layout, err)) ||
      (rc = str_key(root, "cluster", path, &c->cluster, err)))
    goto out;
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  if (!model) {
    rc = st_err_set(err, ST_EINPUT, "case '%s': 'model' is missing", path);
    goto out;
  }
  if (!cJSON_IsObject(model)) {
    rc = st_err_set(err, ST_EINPUT, "case '%s': 'model' is not an object", path);
    goto out;
  }
  c->model_json = cJSON_PrintUnformatted(model);
  const cJSON *ng = cJSON_GetObjectItemCaseSensitive(root, "num_gpus");
  if (!ng) {
    rc = st_err_set(err, ST_EINPUT, "case '%s': 'num_gpus' is missing", path);
    goto out;
  }
  if (!cJSON_IsNumber(ng) || ng->valuedouble < 1 || ng->valuedouble != floor(ng->valuedouble) ||
      ng->valuedouble > 1e7) {
    rc = st_err_set(err, ST_EINPUT, "case '%s': 'num_gpus' is not a positive integer", path);
    goto out;
  }
  c->num_gpus = (int)ng->valuedouble;
  const cJSON *meas = cJSON_GetObjectItemCaseSensitive(root, "measured");
  if (!cJSON_IsObject(meas)) {
    rc = st_err_set(err, ST_EINPUT, "case '%s': 'measured' is %s", path,
                    meas ? "not an object" : "missing");
    goto out;
  }
  const cJSON *tok = cJSON_GetObjectItemCaseSensitive(meas, "tokens_per_s_per_gpu");
  if (!tok) {
    rc = st_err_set(err, ST_EINPUT, "case '%s': 'measured.tokens_per_s_per_gpu' is missing", path);
    goto out;
  }
  if (!cJSON_IsNumber(tok) || !(tok->valuedouble > 0) || !isfinite(tok->valuedouble)) {
    rc = st_err_set(err, ST_EINPUT,
                    "case '%s': 'measured.tokens_per_s_per_gpu' is not a positive number", path);
    goto out;
  }
  c->measured = tok->valuedouble;
  c->measured_step_s = NAN;
  const cJSON *st = cJSON_GetObjectItemCaseSensitive(meas, "step_time_s");
  if (st) {
    if (!cJSON_IsNumber(st) || !(st->valuedouble > 0)) {
      rc = st_err_set(err, ST_EINPUT, "case '%s': 'measured.step_time_s' is not a positive number",
                      path);
      goto out;
    }
    c->measured_step_s = st->valuedouble;
  }
  c->params_b = NAN;
  const cJSON *pb = cJSON_GetObjectItemCaseSensitive(root, "params_b");
  if (pb) {
    if (!cJSON_IsNumber(pb) || !(pb->valuedouble > 0) || !isfinite(pb->valuedouble)) {
      rc = st_err_set(err, ST_EINPUT, "case '%s': 'params_b' is not a positive number", path);
      goto out;
    }
    c->params_b = pb->valuedouble;
  }
  if (!c->model_json)
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
out:
  cJSON_Delete(root);
  return rc;
}

static void case_release(an_case *c)
{
  free(c->path);
  free(c->name);
  free(c->model_json);
  free(c->layout);
  free(c->cluster);
  memset(c, 0, sizeof *c);
}

void an_cases_free(an_case *cases, int n)
{
  for (int i = 0; cases && i < n; i++)
    case_release(&cases[i]);
  free(cases);
}

int an_cases_select(an_case *cases, int *n, const char *pattern, st_err *err)
{
  int k = 0;
  for (int i = 0; i < *n; i++)
    k += fnmatch(pattern, cases[i].name, 0) == 0;
  if (k == 0)
    return st_err_set(err, ST_EINPUT, "no case name matches '%s'", pattern);
  k = 0;
  for (int i = 0; i < *n; i++) {
    if (fnmatch(pattern, cases[i].name, 0) == 0)
      cases[k++] = cases[i];
    else
      case_release(&cases[i]);
  }
  /* slots past k hold released cases or copies of moved ones */
  memset(&cases[k], 0, (size_t)(*n - k) * sizeof *cases);
  *n = k;
  return ST_OK;
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int an_cases_load(const char *dir, an_case **out, int *n, st_err *err)
{
  DIR *d = opendir(dir);
  if (!d)
    return st_err_set(err, ST_EIO, "validation folder '%s': cannot be opened", dir);
  char **names = NULL;
  size_t num = 0, cap = 0;
  int rc = ST_OK;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.' || !st_str_ends_with(e->d_name, ".json"))
      continue;
    if (num == cap) {
      cap = cap ? 2 * cap : 32;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn) {
        rc = st_err_set(err, ST_ENOMEM, "out of memory");
        break;
      }
      names = nn;
    }
    if (!(names[num] = dup_str(e->d_name))) {
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
      break;
    }
    num++;
  }
  closedir(d);
  if (!rc && num == 0)
    rc = st_err_set(err, ST_EINPUT, "validation folder '%s': no case files (*.json)", dir);
  an_case *cases = NULL;
  if (!rc) {
    qsort(names, num, sizeof *names, cmp_str);
    cases = calloc(num, sizeof *cases);
    if (!cases)
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
  }
  for (size_t i = 0; !rc && i < num; i++) {
    st_buf path;
    st_buf_init(&path);
    st_buf_printf(&path, "%s/%s", dir, names[i]);
    char *text = NULL;
    size_t len;
    cases[i].path = path.data;
    rc = st_file_read_all(path.data, &text, &len, err);
    if (!rc)
      rc = parse_case(path.data, text, &cases[i], err);
    free(text);
    for (size_t j = 0; !rc && j < i; j++)
      if (strcmp(cases[j].name, cases[i].name) == 0)
        rc = st_err_set(err, ST_EINPUT, "case '%s': name '%s' is already used by '%s'",
                        path.data, cases[i].name, cases[j].path);
  }
  for (size_t i = 0; i < num; i++)
    free(names[i]);
  free(names);
  if (rc) {
    an_cases_free(cases, (int)num);
    return rc;
  }
  *out = cases;
  *n = (int)num;
  return ST_OK;
}

/* One unit of the last non-zero decimal digit of x (1 for a whole number):
 * 1.7 -> 0.1, 18.4 -> 0.1, 0.25 -> 0.01, 177 -> 1. */
static double last_digit_unit(double x)
{
  double unit = 1;
  for (int d = 0; d < 6; d++, unit /= 10) {
    double scaled = x / unit;
    if (fabs(scaled - round(scaled)) <= 1e-9 * scaled)
      break;
  }
  return unit;
}

int an_case_check_size(const an_case *c, double params, st_err *err)
{
  if (isnan(c->params_b))
    return ST_OK;
  double unit = last_digit_unit(c->params_b), have = params / 1e9;
  if (fabs(have - c->params_b) <= unit * (1 + 1e-9))
    return ST_OK;
  return st_err_set(err, ST_EINPUT,
                    "case '%s': the model has %.3f B parameters but the source states %g B "
                    "(allowed %g to %g); check its layers, hidden, ffn_hidden, vocab and "
                    "tie_embeddings",
                    c->path, have, c->params_b, c->params_b - unit, c->params_b + unit);
}

/* ---- running the cases ---------------------------------------------------- */

typedef struct child_msg {
  int rc;
  char msg[ST_ERR_MSG_MAX];
  an_prediction pred;
} child_msg;

typedef struct child {
  pid_t pid;
  int fd;
} child;

static int start_child(const an_case *c, an_predict_fn fn, const plat_compute_params *ov,
                       int nov, int timeout_s, child *ch, st_err *err)
{
  int fds[2];
  if (pipe(fds))
    return st_err_set(err, ST_EIO, "case '%s': cannot create a pipe", c->name);
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return st_err_set(err, ST_EIO, "case '%s': cannot fork", c->name);
  }
  if (pid == 0) {
    /* a crash must end the child, whatever handlers the parent installed */
    static const int sigs[] = {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
      signal(sigs[i], SIG_DFL);
    close(fds[0]);
    if (timeout_s > 0)
      alarm((unsigned)timeout_s); /* SIGALRM ends the child: finish_child names it */
    child_msg m;
    memset(&m, 0, sizeof m);
    st_err e = {0};
    m.rc = fn(c, ov, nov, &m.pred, &e);
    if (m.rc)
      snprintf(m.msg, sizeof m.msg, "%s", e.msg[0] ? e.msg : st_strerror(m.rc));
    const char *p = (const char *)&m;
    size_t left = sizeof m;
    while (left) {
      ssize_t w = write(fds[1], p, left);
      if (w <= 0)
        break;
      p += w;
      left -= (size_t)w;
    }
    _exit(0);
  }
  close(fds[1]);
  ch->pid = pid;
  ch->fd = fds[0];
  return ST_OK;
}

/* Read a child's answer and reap it. */
static int finish_child(const an_case *c, child *ch, int timeout_s, an_case_result *r,
                        st_err *err)
{
  child_msg m;
  char *p = (char *)&m;
  size_t got = 0;
  while (got < sizeof m) {
    ssize_t k = read(ch->fd, p + got, sizeof m - got);
    if (k <= 0)
      break;
    got += (size_t)k;
  }
  close(ch->fd);
  int status = 0;
  waitpid(ch->pid, &status, 0);
  if (got != sizeof m) {
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
      return st_err_set(err, ST_ESIM, "case '%s': no prediction within %d s", c->name,
                        timeout_s);
    if (WIFSIGNALED(status))
      return st_err_set(err, ST_ESIM, "case '%s': the prediction crashed (signal %d)", c->name,
                        WTERMSIG(status));
    return st_err_set(err, ST_ESIM, "case '%s': the prediction ended without an answer",
                      c->name);
  }
  if (m.rc)
    return st_err_set(err, m.rc, "case '%s': %s", c->name, m.msg);
  if (!(m.pred.tokens_per_s_per_gpu > 0) || !isfinite(m.pred.tokens_per_s_per_gpu))
    return st_err_set(err, ST_ESIM, "case '%s': predicted throughput is %g tokens/s per GPU",
                      c->name, m.pred.tokens_per_s_per_gpu);
  r->measured = c->measured;
  r->predicted = m.pred.tokens_per_s_per_gpu;
  r->error = r->predicted / r->measured - 1.0;
  r->measured_step_s = c->measured_step_s;
  r->predicted_step_s = m.pred.step_time_s;
  return ST_OK;
}

static FILE *progress;

void an_validate_progress(FILE *f) { progress = f; }

static double wall_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Case i runs with overrides + i * stride (num_overrides of them). */
static int run_cases(const an_case *cases, int n, an_predict_fn fn,
                     const plat_compute_params *overrides, int num_overrides, size_t stride,
                     int jobs, int timeout_s, an_case_result *res, st_err *err)
{
  if (jobs < 1)
    jobs = 1;
  child *kids = calloc((size_t)n + 1, sizeof *kids);
  if (!kids)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  /* Up to `jobs` children at a time; whichever ends first is read first and
   * its slot goes to the next case (cases differ in length by 100x, so
   * reading in order would leave slots idle behind a long one).  Results
   * land at their case's index: the output does not depend on the order. */
  struct pollfd *pf = calloc((size_t)jobs, sizeof *pf);
  int *slot_case = calloc((size_t)jobs, sizeof *slot_case);
  double *slot_t0 = calloc((size_t)jobs, sizeof *slot_t0);
  if (!pf || !slot_case || !slot_t0) {
    free(pf);
    free(slot_case);
    free(slot_t0);
    free(kids);
    return st_err_set(err, ST_ENOMEM, "out of memory");
  }
  int next = 0, running = 0, done = 0, rc = ST_OK, first_case = n;
  st_err first = {0};
  for (int j = 0; j < jobs; j++)
    slot_case[j] = -1;
  for (;;) {
    for (int j = 0; j < jobs && next < n && !rc; j++) {
      if (slot_case[j] >= 0)
        continue;
      const plat_compute_params *ov = overrides ? overrides + (size_t)next * stride : NULL;
      rc = start_child(&cases[next], fn, ov, num_overrides, timeout_s, &kids[next], err);
      if (rc)
        break;
      slot_t0[j] = wall_s();
      slot_case[j] = next++;
      running++;
    }
    if (!running)
      break;
    for (int j = 0; j < jobs; j++) {
      pf[j].fd = slot_case[j] >= 0 ? kids[slot_case[j]].fd : -1;
      pf[j].events = POLLIN;
      pf[j].revents = 0;
    }
    if (poll(pf, (nfds_t)jobs, -1) < 0) {
      if (errno == EINTR)
        continue;
      /* cannot wait on them: read them in order, blocking */
      for (int j = 0; j < jobs; j++)
        if (slot_case[j] >= 0)
          pf[j].revents = POLLIN;
    }
    for (int j = 0; j < jobs; j++) {
      int i = slot_case[j];
      if (i < 0 || !pf[j].revents)
        continue;
      st_err e = {0};
      memset(&res[i], 0, sizeof res[i]);
      res[i].measured = cases[i].measured;
      res[i].measured_step_s = cases[i].measured_step_s;
      res[i].predicted = res[i].error = res[i].predicted_step_s = NAN;
      int r = finish_child(&cases[i], &kids[i], timeout_s, &res[i], &e);
      if (r) {
        res[i].rc = r;
        snprintf(res[i].msg, sizeof res[i].msg, "%s", e.msg);
        if (!first.code || i < first_case) {
          first = e;
          first_case = i;
        }
      }
      if (progress) {
        done++;
        if (r)
          fprintf(progress, "[%d/%d] %s: failed in %.0f s\n", done, n, cases[i].name,
                  wall_s() - slot_t0[j]);
        else
          fprintf(progress, "[%d/%d] %s: %+.2f%% in %.0f s\n", done, n, cases[i].name,
                  100 * res[i].error, wall_s() - slot_t0[j]);
        fflush(progress);
      }
      slot_case[j] = -1;
      running--;
    }
  }
  free(pf);
  free(slot_case);
  free(slot_t0);
  free(kids);
  if (rc)
    return rc;
  if (first.code) {
    if (err)
      *err = first;
    return first.code;
  }
  return ST_OK;
}

int an_validate_run(const an_case *cases, int n, an_predict_fn fn,
                    const plat_compute_params *overrides, int num_overrides, int jobs,
                    int timeout_s, an_case_result *res, st_err *err)
{
  return run_cases(cases, n, fn, overrides, num_overrides, 0, jobs, timeout_s, res, err);
}

int an_validate_run_each(const an_case *cases, int n, an_predict_fn fn,
                         const plat_compute_params *overrides, int num_overrides, int jobs,
                         int timeout_s, an_case_result *res, st_err *err)
{
  return run_cases(cases, n, fn, overrides, num_overrides, (size_t)num_overrides, jobs, timeout_s,
                   res, err);
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y ? 1 : 0;
}

int an_validate_stats(const an_case_result *res, int n, double *median_abs, double *max_abs)
{
  double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
  double mx = 0;
  int k = 0;
  for (int i = 0; i < n; i++) {
    if (res[i].rc)
      continue;
    double a = fabs(res[i].error);
    if (v)
      v[k] = a;
    k++;
    if (a > mx)
      mx = a;
  }
  double med = NAN;
  if (v && k > 0) {
    qsort(v, (size_t)k, sizeof *v, cmp_double);
    med = k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
  }
  free(v);
  *median_abs = med;
  *max_abs = k > 0 ? mx : NAN;
  return k;
}

void an_validate_print(const an_case *cases, const an_case_result *res, int n, FILE *out)
{
  int w = 4;
  for (int i = 0; i < n; i++)
    if ((int)strlen(cases[i].name) > w)
      w = (int)strlen(cases[i].name);
  fprintf(out, "%-*s  %12s  %12s  %8s  %10s  %10s\n", w, "case", "measured", "predicted", "error",
          "step meas.", "step pred.");
  fprintf(out, "%-*s  %12s  %12s  %8s  %10s  %10s\n", w, "", "tokens/s/GPU", "tokens/s/GPU", "",
          "s", "s");
  int worst = -1, failed = 0;
  for (int i = 0; i < n; i++) {
    const an_case_result *r = &res[i];
    char ms[32];
    if (isnan(r->measured_step_s))
      snprintf(ms, sizeof ms, "-");
    else
      snprintf(ms, sizeof ms, "%.4g", r->measured_step_s);
    if (r->rc) {
      fprintf(out, "%-*s  %12.1f  %12s  %8s  %10s  %10s\n", w, cases[i].name, r->measured,
              "failed", "", ms, "-");
      failed++;
      continue;
    }
    fprintf(out, "%-*s  %12.1f  %12.1f  %+7.2f%%  %10s  %10.4g\n", w, cases[i].name, r->measured,
            r->predicted, 100 * r->error, ms, r->predicted_step_s);
    if (worst < 0 || fabs(r->error) > fabs(res[worst].error))
      worst = i;
  }
  double med, mx;
  int k = an_validate_stats(res, n, &med, &mx);
  fprintf(out, "\n%d case%s: median |error| %.2f%%, max |error| %.2f%% (%s)\n", k,
          k == 1 ? "" : "s", 100 * med, 100 * mx, worst >= 0 ? cases[worst].name : "-");
  if (failed)
    fprintf(out, "%d case%s not predicted:\n", failed, failed == 1 ? "" : "s");
  for (int i = 0; i < n; i++)
    if (res[i].rc)
      fprintf(out, "  %s\n", res[i].msg);
  fprintf(out, "error = predicted / measured - 1, in per-GPU throughput\n");
}

void an_validate_print_json(const an_case *cases, const an_case_result *res, int n, FILE *out)
{
  fprintf(out, "{\"cases\":[");
  for (int i = 0; i < n; i++) {
    fprintf(out, "%s{\"name\":", i ? "," : "");
    st_json_str(out, cases[i].name);
    if (res[i].rc) {
      fprintf(out, ",\"measured\":%.10g,\"predicted\":null,\"error\":null,\"failure\":",
              res[i].measured);
      st_json_str(out, res[i].msg);
      fputc('}', out);
      continue;
    }
    fprintf(out, ",\"measured\":%.10g,\"predicted\":%.10g,\"error\":%.6g}", res[i].measured,
            res[i].predicted, res[i].error);
  }
  double med, mx;
  int k = an_validate_stats(res, n, &med, &mx);
  if (k)
    fprintf(out, "],\"count\":%d,\"median_abs_error\":%.6g,\"max_abs_error\":%.6g}\n", k, med,
            mx);
  else
    fprintf(out, "],\"count\":0,\"median_abs_error\":null,\"max_abs_error\":null}\n");
}

/* ---- leave-one-out calibration ------------------------------------------ */

/* Case c's result with gemm_eff = g, interpolating the step time linearly in
 * 1 / g between grid points (the GEMM share of a step scales as 1 / g). */
static an_case_result at_eff(const an_case_result *pred, int c, const double *grid, int ngrid,
                             double g)
{
  const an_case_result *row = &pred[(size_t)c * ngrid];
  int j = 0;
  while (j + 2 < ngrid && g > grid[j + 1])
    j++;
  double x0 = 1 / grid[j], x1 = 1 / grid[j + 1], x = 1 / g;
  double t = (x - x0) / (x1 - x0);
  double step = row[j].predicted_step_s + t * (row[j + 1].predicted_step_s - row[j].predicted_step_s);
  /* tokens per step per GPU is the same at every grid point */
  double k = row[j].predicted * row[j].predicted_step_s;
  an_case_result r = row[j];
  r.predicted_step_s = step;
  r.predicted = k / step;
  r.error = r.predicted / r.measured - 1.0;
  return r;
}

static int predicted_all(const an_case_result *pred, int c, int ngrid)
{
  for (int j = 0; j < ngrid; j++)
    if (pred[(size_t)c * ngrid + j].rc)
      return 0;
  return 1;
}

/* gemm_eff minimising the squared log errors of the cases of group g, leaving out `skip`. */
static double fit_group(const an_case_result *pred, int ncases, const double *grid, int ngrid,
                        const int *group, int g, int skip)
{
  double best = grid[0], best_cost = INFINITY;
  long steps = lround((grid[ngrid - 1] - grid[0]) / 0.001);
  for (long s = 0; s <= steps; s++) {
    double e = grid[0] + 0.001 * (double)s;
    double cost = 0;
    int used = 0;
    for (int c = 0; c < ncases; c++) {
      if (group[c] != g || c == skip || !predicted_all(pred, c, ngrid))
        continue;
      an_case_result r = at_eff(pred, c, grid, ngrid, e);
      double l = log(r.predicted / r.measured);
      cost += l * l;
      used++;
    }
    if (used && cost < best_cost) {
      best_cost = cost;
      best = e;
    }
  }
  return best;
}

void an_validate_loo(const an_case_result *pred, int ncases, const double *grid, int ngrid,
                     const int *group, int ngroups, double *fit_eff, double *loo_eff,
                     an_case_result *loo)
{
  for (int g = 0; g < ngroups; g++)
    fit_eff[g] = fit_group(pred, ncases, grid, ngrid, group, g, -1);
  for (int c = 0; c < ncases; c++) {
    if (!predicted_all(pred, c, ngrid)) {
      /* keep the failure of the first grid point that failed */
      for (int j = 0; j < ngrid; j++)
        if (pred[(size_t)c * ngrid + j].rc) {
          loo[c] = pred[(size_t)c * ngrid + j];
          break;
        }
      loo_eff[c] = NAN;
      continue;
    }
    loo_eff[c] = fit_group(pred, ncases, grid, ngrid, group, group[c], c);
    loo[c] = at_eff(pred, c, grid, ngrid, loo_eff[c]);
  }
}
