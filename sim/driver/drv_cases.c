/* drv_cases.c — the validation set's case files: one published training run per
 * file (bench/validation/README.md), read, checked and selected by name, and
 * the check of a case's model against the size its source states. */
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "driver.h"

/* ---- case files ------------------------------------------------------------- */

static int str_key(const cJSON *root, const char *key, const char *path, char **out, st_err *err)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!v)
    return st_err_set(err, ST_EINPUT, "case '%s': '%s' is missing", path, key);
  if (!cJSON_IsString(v) || !v->valuestring[0])
    return st_err_set(err, ST_EINPUT, "case '%s': '%s' is not a non-empty string", path, key);
  *out = st_strdup(v->valuestring);
  return *out ? ST_OK : st_err_set(err, ST_ENOMEM, "out of memory");
}

/* A cluster spec or XML file named by a case ("clusters/x.json", with or
 * without ":NODES") is relative to the case file's folder, so a validation
 * set runs from any working directory; presets and absolute paths stay. */
static int case_cluster_path(const char *path, char **cluster, st_err *err)
{
  const char *v = *cluster, *colon = strrchr(v, ':');
  size_t len = strlen(v);
  if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1))
    len = (size_t)(colon - v);
  int file = (len > 5 && !strncmp(v + len - 5, ".json", 5)) ||
             (len > 4 && !strncmp(v + len - 4, ".xml", 4));
  const char *slash = strrchr(path, '/');
  if (!file || v[0] == '/' || !slash)
    return ST_OK;
  size_t dir = (size_t)(slash - path) + 1, n = dir + strlen(v) + 1;
  char *r = malloc(n);
  if (!r)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  snprintf(r, n, "%.*s%s", (int)dir, path, v);
  free(*cluster);
  *cluster = r;
  return ST_OK;
}

static int parse_case(const char *path, const char *text, drv_case *c, st_err *err)
{
  cJSON *root = NULL;
  char subject[600];
  snprintf(subject, sizeof subject, "case '%s'", path);
  int prc = st_json_parse(text, strlen(text), subject, &root, err);
  if (prc)
    return prc;
  int rc = ST_OK;
  if (!cJSON_IsObject(root)) {
    rc = st_err_set(err, ST_EINPUT, "case '%s': the file is not a JSON object", path);
    goto out;
  }
  if ((rc = str_key(root, "name", path, &c->name, err)) ||
      (rc = str_key(root, "layout", path, &c->layout, err)) ||
      (rc = str_key(root, "cluster", path, &c->cluster, err)) ||
      (rc = case_cluster_path(path, &c->cluster, err)))
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
  c->measured_mem_gib = NAN;
  const cJSON *mem = cJSON_GetObjectItemCaseSensitive(meas, "peak_memory_gib");
  if (mem) {
    if (!cJSON_IsNumber(mem) || !(mem->valuedouble > 0) || !isfinite(mem->valuedouble)) {
      rc = st_err_set(err, ST_EINPUT,
                      "case '%s': 'measured.peak_memory_gib' is not a positive number", path);
      goto out;
    }
    const cJSON *rd = cJSON_GetObjectItemCaseSensitive(meas, "memory_reading");
    if (!cJSON_IsString(rd) ||
        (strcmp(rd->valuestring, "reserved") && strcmp(rd->valuestring, "allocated"))) {
      rc = st_err_set(err, ST_EINPUT,
                      "case '%s': 'measured.memory_reading' is %s: with peak_memory_gib it "
                      "says which reading it is, \"reserved\" or \"allocated\"",
                      path, rd ? "neither" : "missing");
      goto out;
    }
    c->measured_mem_gib = mem->valuedouble;
    c->mem_reserved = !strcmp(rd->valuestring, "reserved");
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

static void case_release(drv_case *c)
{
  free(c->path);
  free(c->name);
  free(c->model_json);
  free(c->layout);
  free(c->cluster);
  memset(c, 0, sizeof *c);
}

void drv_cases_free(drv_case *cases, int n)
{
  for (int i = 0; cases && i < n; i++)
    case_release(&cases[i]);
  free(cases);
}

int drv_cases_select(drv_case *cases, int *n, const char *pattern, st_err *err)
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

static int is_case_file(const char *name) { return st_str_ends_with(name, ".json"); }

int drv_cases_load(const char *dir, drv_case **out, int *n, st_err *err)
{
  char **names = NULL;
  size_t num = 0;
  int rc = st_dir_list(dir, is_case_file, &names, &num, err);
  if (rc == ST_EIO)
    return st_err_set(err, ST_EIO, "validation folder '%s': cannot be opened", dir);
  if (rc)
    return rc;
  if (!rc && num == 0)
    rc = st_err_set(err, ST_EINPUT, "validation folder '%s': no case files (*.json)", dir);
  drv_case *cases = NULL;
  if (!rc) {
    cases = calloc(num, sizeof *cases);
    if (!cases)
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
  }
  for (size_t i = 0; !rc && i < num; i++) {
    char *text = NULL;
    size_t len;
    const char *path = names[i];
    if (!(cases[i].path = st_strdup(path)))
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
    if (!rc)
      rc = st_file_read_all(path, &text, &len, err);
    if (!rc)
      rc = parse_case(path, text, &cases[i], err);
    free(text);
    for (size_t j = 0; !rc && j < i; j++)
      if (strcmp(cases[j].name, cases[i].name) == 0)
        rc = st_err_set(err, ST_EINPUT, "case '%s': name '%s' is already used by '%s'",
                        path, cases[i].name, cases[j].path);
  }
  for (size_t i = 0; i < num; i++)
    free(names[i]);
  free(names);
  if (rc) {
    drv_cases_free(cases, (int)num);
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

int drv_case_check_size(const drv_case *c, double params, st_err *err)
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


int drv_case_load(const char *path, drv_case *c, st_err *err)
{
  memset(c, 0, sizeof *c);
  char *text = NULL;
  size_t len;
  int rc = st_file_read_all(path, &text, &len, err);
  if (!rc && !(c->path = st_strdup(path)))
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
  if (!rc)
    rc = parse_case(path, text, c, err);
  free(text);
  if (rc)
    case_release(c);
  return rc;
}

void drv_case_release(drv_case *c) { case_release(c); }
