/* drv_search_file.c — a search as a sweep file (kind "search"): every
 * estimated candidate a row, so that `report`, `merge` and `plot` read it as
 * they read a sweep (driver.h, drv_search_sweep). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

/* The options as JSON: what the digest covers, with the files they name. */
static char *options_json(const drv_search_opts *o, const drv_search *s)
{
  st_buf b;
  st_buf_init(&b);
  char num[40];
  st_buf_printf(&b, "{\"model\":");
  st_buf_json_str(&b, o->model);
  st_buf_printf(&b, ",\"cluster\":");
  st_buf_json_str(&b, s->cluster);
  st_buf_printf(&b, ",\"gpus\":%d,\"gbs\":%d,\"seq\":%d,\"dtype\":", s->num_gpus, o->gbs, s->seq);
  st_buf_json_str(&b, o->dtype ? o->dtype : "");
  st_buf_printf(&b, ",\"top\":%d,\"fixed\":", o->top);
  st_buf_json_str(&b, o->fixed ? o->fixed : "");
  st_buf_printf(&b, ",\"published\":");
  st_buf_json_str(&b, o->published ? o->published : "");
  st_buf_printf(&b, ",\"tokens\":%s", st_json_num(o->train_tokens ? o->train_tokens : NAN, num,
                                                  sizeof num));
  st_buf_printf(&b, ",\"price_usd_per_gpu_hour\":%s",
                st_json_num(o->price_usd_per_gpu_hour, num, sizeof num));
  st_buf_printf(&b, ",\"pue\":%s", st_json_num(o->pue, num, sizeof num));
  st_buf_printf(&b, ",\"device\":");
  st_buf_json_str(&b, s->device);
  st_buf_printf(&b, ",\"device_memory_bytes\":%s}", st_json_num(s->hbm_bytes, num, sizeof num));
  return st_buf_detach(&b, NULL);
}

static void fill_row(const drv_search_opts *o, const drv_search *s, const drv_candidate *c,
                     an_sweep_row *r)
{
  an_sweep_row_clear(r);
  r->point = c->estimate_rank - 1;
  snprintf(r->model, sizeof r->model, "%s", o->model);
  snprintf(r->request, sizeof r->request, "search");
  snprintf(r->cluster, sizeof r->cluster, "%s", s->cluster);
  r->num_gpus = s->num_gpus;
  r->nodes = s->num_nodes;
  r->gbs = o->gbs;
  r->seq = s->seq;
  snprintf(r->dtype, sizeof r->dtype, "%s", o->dtype ? o->dtype : "");
  snprintf(r->layout, sizeof r->layout, "%s", c->layout);
  r->peak_memory_bytes = c->peak_memory_bytes;
  r->estimate_step_s = c->estimate_s;
  r->estimate_rank = c->estimate_rank;
  if (!c->simulated) {
    snprintf(r->status, sizeof r->status, "estimated");
    return;
  }
  if (c->failed) {
    snprintf(r->status, sizeof r->status, "failed");
    snprintf(r->error, sizeof r->error, "%s", c->failure);
    return;
  }
  snprintf(r->status, sizeof r->status, "ok");
  drv_sweep_row_summary(r, &c->sum);
  r->peak_memory_bytes = c->peak_memory_bytes; /* the memory model's, as for the others */
}

int drv_search_sweep(const drv_search_opts *o, const drv_search *s, an_sweep *out, st_err *err)
{
  memset(out, 0, sizeof *out);
  snprintf(out->kind, sizeof out->kind, "search");
  out->points = (int32_t)s->estimated;
  out->shard = o->shard;
  out->shards = o->shards;
  out->spec_json = options_json(o, s);
  st_buf name;
  st_buf_init(&name);
  st_buf_printf(&name, "%s on %s", o->model, s->cluster);
  out->name = st_buf_detach(&name, NULL);
  out->rows = calloc(s->num + 1, sizeof *out->rows);
  if (!out->spec_json || !out->name || !out->rows) {
    free(out->spec_json);
    free(out->name);
    free(out->rows);
    memset(out, 0, sizeof *out);
    return st_err_set(err, ST_ENOMEM, "search: out of memory");
  }
  uint64_t h = DRV_FNV_SEED;
  drv_fnv(&h, out->spec_json, strlen(out->spec_json) + 1);
  int rc = drv_fnv_file(&h, o->model, err);
  if (!rc)
    rc = drv_fnv_file(&h, o->cluster, err);
  if (rc) {
    free(out->spec_json);
    free(out->name);
    free(out->rows);
    memset(out, 0, sizeof *out);
    return rc;
  }
  snprintf(out->digest, sizeof out->digest, "%016llx", (unsigned long long)h);
  for (size_t i = 0; i < s->num; i++) {
    const drv_candidate *c = &s->cands[i];
    if (c->estimate_rank < 1)
      continue; /* set aside before the estimate */
    /* a shard holds what it simulated; shard 1 also the estimated ones.  A
     * candidate among the best K that another shard simulates is not ours. */
    int in_top = (size_t)c->estimate_rank <= (size_t)o->top;
    if (c->simulated || (!in_top && o->shard == 1))
      fill_row(o, s, c, &out->rows[out->num_rows++]);
  }
  return ST_OK;
}
