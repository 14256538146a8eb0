/* drv_run.c — one prediction from its inputs: the workload (a file, a model
 * and a layout through the generators, or a captured trace through an
 * importer), the cluster, the engine, the summary, and for a trace the
 * measured-against-replayed comparison; then, when asked, the results file.
 *
 * The decisions between the stages are made here, not by the front end:
 * a trace's compute is rescaled when the cluster's device is not the one it
 * was measured on; a workload that does not fit in device memory is a
 * warning (an error with strict); a trace replay records the timeline it
 * needs for per-rank compute and communication and drops it unless asked;
 * link loads and per-instance collective records are kept only for a
 * results file. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

void drv_job_init(drv_job *j)
{
  memset(j, 0, sizeof *j);
  sim_options_init(&j->opt);
  tr_options_init(&j->topt);
  j->price_usd_per_gpu_hour = NAN;
  j->pue = 1;
}

static void say(const drv_job *j, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(const drv_job *j, const char *kind, const char *fmt, ...)
{
  if (!j->log)
    return;
  va_list ap;
  fprintf(j->log, "simtrain: %s: ", kind);
  va_start(ap, fmt);
  vfprintf(j->log, fmt, ap);
  va_end(ap);
  fputc('\n', j->log);
}

/* A replayed trace keeps its measured compute times; on another device they
 * are rescaled by the compute model (traces.h: tr_workload_retarget). */
static int retarget(const drv_job *j, drv_run *r, st_err *err)
{
  const char *name = j->from_device ? j->from_device : r->st.source_device;
  snprintf(r->source_device, sizeof r->source_device, "%s", name);
  if (!name[0])
    return ST_OK;
  plat_device from;
  int rc;
  if (j->from_device) {
    if ((rc = plat_device_find(name, &from, err)))
      st_err_prefix(err, "--from-device: ");
    if (rc)
      return rc;
  } else if ((rc = tr_device_match(name, &from, err))) {
    say(j, "warning", "%s: measured compute is replayed as it is", err->msg);
    st_err_clear(err);
    return ST_OK;
  }
  if (!strcmp(from.name, r->cl->device.name))
    return ST_OK;
  tr_retarget_stats rs;
  if ((rc = tr_workload_retarget(r->wl, &from, &r->cl->device, &rs, err)))
    return rc;
  r->rescaled = 1;
  char b[256];
  int n = snprintf(b, sizeof b, "compute moved from %s to %s (%ld kernels):", from.name,
                   r->cl->device.name, rs.ops_scaled);
  for (int c = 0; c < WL_CLASS_COUNT && n < (int)sizeof b; c++)
    if (c != WL_CLASS_OTHER && rs.before_s[c] > 0)
      n += snprintf(b + n, sizeof b - (size_t)n, " %s x%.3f", wl_class_name(c),
                    rs.after_s[c] / rs.before_s[c]);
  say(j, "note", "%s", b);
  return ST_OK;
}

/* A trace's job at another size (--world, --dp): its data-parallel groups
 * resized (traces.h: tr_workload_resize); tensor and pipeline parallelism
 * are refused, with the reason. */
static int resize(const drv_job *j, drv_run *r, st_err *err)
{
  if (j->tp_factor != 0 && j->tp_factor != 1)
    return st_err_set(err, ST_EUSAGE,
                      "--tp %g: tensor parallelism cannot be resized from a trace: each rank's "
                      "kernels were measured on its own TP shard, and another TP size changes "
                      "their shapes and adds or removes their collectives",
                      j->tp_factor);
  if (!j->world && !(j->dp_factor > 0))
    return ST_OK;
  int W = r->wl->num_ranks, world = j->world;
  if (j->dp_factor > 0) {
    double w = W * j->dp_factor;
    if (w < 1 || fabs(w - llround(w)) > 1e-9 || w > 1e8)
      return st_err_set(err, ST_EUSAGE,
                        "--dp %g: the trace's %d ranks times %g is not a whole number of ranks",
                        j->dp_factor, W, j->dp_factor);
    if (world && world != (int)llround(w))
      return st_err_set(err, ST_EUSAGE, "--world %d and --dp %g disagree: the trace has %d ranks",
                        world, j->dp_factor, W);
    world = (int)llround(w);
  }
  const char *path = strchr(j->trace, ':') ? strchr(j->trace, ':') + 1 : j->trace;
  int rc = tr_workload_resize(&r->wl, &r->st, path, world, &r->resize, err);
  if (rc)
    return rc;
  if (world != W)
    say(j, "note",
        "the trace's %d ranks resized to %d: data-parallel groups of %d now %d (%ld collectives "
        "on them keep their whole-buffer sizes, each rank's shard now 1/%d; %ld all-to-all-v "
        "re-laid); compute as measured",
        W, world, r->resize.dp_from, r->resize.dp_to, r->resize.dp_colls, r->resize.dp_to,
        r->resize.splits_relaid);
  return ST_OK;
}

static int load_trace(const drv_job *j, drv_run *r, st_buf *desc, st_err *err)
{
  tr_options topt = j->topt;
  /* astra needs a GPU count to expand over: the cluster's unless given; the
   * other formats have their own rank count (chakra expands only when asked,
   * so that a 4-rank trace never turns into 8 ranks) */
  if (topt.num_gpus == 0 && !strncmp(j->trace, "astra:", 6))
    topt.num_gpus = r->cl->num_gpus;
  /* chakra's involved_dim without dims: the cluster's nodes are the dimensions */
  topt.gpus_per_node = r->cl->gpus_per_node;
  st_buf_printf(desc, "{\"kind\":\"trace\",\"trace\":");
  st_buf_json_str(desc, j->trace);
  st_buf_printf(desc, "}");
  int rc = tr_import(j->trace, &topt, &r->wl, &r->st, err);
  if (!rc)
    rc = resize(j, r, err);
  if (!rc)
    rc = retarget(j, r, err);
  return rc;
}

int drv_model_load(const char *name, const wl_model *spec, int seq_len, wl_model *m, st_err *err)
{
  int rc = ST_OK;
  if (spec)
    *m = *spec;
  else if ((rc = wl_model_load(name, m, err)))
    return rc;
  if (seq_len > 0)
    m->seq_len = seq_len;
  return ST_OK;
}

static int load_model(const drv_job *j, drv_run *r, st_buf *desc, st_err *err)
{
  wl_model m;
  wl_layout l;
  int rc = drv_model_load(j->model, j->model_spec, j->seq_len, &m, err);
  if (rc)
    return rc;
  rc = wl_layout_parse(j->layout, r->cl->num_gpus, &m, &l, err);
  char note[600];
  if (!rc && !(rc = drv_balance(&m, r->cl, &l, note, sizeof note, err)) && note[0])
    say(j, "note", "%s", note);
  if (!rc)
    rc = wl_generate(&m, &l, &r->wl, err);
  if (!rc) {
    r->model = m;
    r->layout = l;
    r->have_layout = 1;
    st_buf_printf(desc, "{\"kind\":\"model\",\"model\":");
    st_buf_json_str(desc, j->model);
    st_buf_printf(desc, ",\"layout\":");
    st_buf_json_str(desc, r->wl->meta.layout ? r->wl->meta.layout : j->layout);
    st_buf_printf(desc, "}");
  }
  wl_model_release(&m);
  return rc;
}

static int load_workload(const drv_job *j, drv_run *r, st_err *err)
{
  st_buf desc;
  st_buf_init(&desc);
  int rc;
  if (j->workload) {
    st_buf_printf(&desc, "{\"kind\":\"file\",\"path\":");
    st_buf_json_str(&desc, j->workload);
    st_buf_printf(&desc, "}");
    rc = wl_workload_read(j->workload, &r->wl, err);
  } else if (j->trace) {
    rc = load_trace(j, r, &desc, err);
  } else {
    rc = load_model(j, r, &desc, err);
  }
  r->workload_json = st_buf_detach(&desc, NULL);
  return rc;
}

int drv_stage_group(const plat_cluster *cl, int num_ranks, int pp, int s)
{
  int per = num_ranks / pp, best = plat_gpu_group(cl, s * per);
  for (int g = s * per; g < (s + 1) * per && g < cl->num_gpus && cl->num_groups > 1; g++) {
    int k = plat_gpu_group(cl, g);
    if (cl->groups[k].device.hbm_bytes < cl->groups[best].device.hbm_bytes)
      best = k;
  }
  return best;
}

/* With node groups, each pipeline stage against the smallest device its
 * ranks are on (drv_stage_group); a workload without a layout by its largest
 * peak. */
static int check_memory_groups(const drv_job *j, const drv_run *r, st_err *err)
{
  const plat_cluster *cl = r->cl;
  wl_memory mem;
  int pp = 1;
  double peak[WL_MAX_STAGES] = {r->wl->meta.peak_memory_bytes};
  if (r->have_layout && !wl_memory_estimate(&r->model, &r->layout, &mem, NULL)) {
    pp = mem.num_stages;
    for (int s = 0; s < pp; s++)
      peak[s] = mem.stages[s].peak_bytes;
  }
  for (int s = 0; s < pp; s++) {
    int k = drv_stage_group(cl, r->wl->num_ranks, pp, s);
    const plat_device *d = &cl->groups[k].device;
    if (!isfinite(peak[s]) || peak[s] <= d->hbm_bytes)
      continue;
    char a[32], b[32];
    st_format_bytes(peak[s], a, sizeof a);
    st_format_bytes(d->hbm_bytes, b, sizeof b);
    if (j->strict)
      return st_err_set(err, ST_EINPUT,
                        "stage %d needs %s per GPU at its peak but one %s of group '%s' has %s "
                        "(--strict)",
                        s, a, d->name, cl->groups[k].name, b);
    say(j, "warning",
        "stage %d needs %s per GPU at its peak but one %s of group '%s' has %s: it would not fit",
        s, a, d->name, cl->groups[k].name, b);
  }
  return ST_OK;
}

/* The memory-fit check: a warning, or an error with strict. */
static int check_memory(const drv_job *j, const drv_run *r, st_err *err)
{
  double need = r->wl->meta.peak_memory_bytes, have = r->cl->device.hbm_bytes;
  if (r->cl->num_groups > 1)
    return check_memory_groups(j, r, err);
  if (!isfinite(need) || need <= have)
    return ST_OK;
  char a[32], b[32];
  st_format_bytes(need, a, sizeof a);
  st_format_bytes(have, b, sizeof b);
  if (j->strict)
    return st_err_set(err, ST_EINPUT,
                      "the workload needs %s per GPU at its peak but one %s has %s (--strict)", a,
                      r->cl->device.name, b);
  say(j, "warning", "the workload needs %s per GPU at its peak but one %s has %s: it would not fit",
      a, r->cl->device.name, b);
  return ST_OK;
}

static char *options_json(const sim_options *o)
{
  st_buf b;
  st_buf_init(&b);
  st_buf_printf(&b,
                "{\"fidelity\":\"%s\",\"net_model\":\"%s\",\"timeline\":%s,"
                "\"closed_form\":%s,\"symmetry\":%s,\"cfg\":",
                o->fidelity == SIM_FID_STEP ? "step" : "flow", sim_net_model_name(o->net_model),
                o->timeline ? "true" : "false", o->fast_colls ? "true" : "false",
                o->symmetry ? "true" : "false");
  st_buf_json_str(&b, o->simgrid_cfg ? o->simgrid_cfg : "");
  if (sim_options_stragglers(o)) { /* only then: older files' options stay as they were */
    st_buf_printf(&b, ",\"slow\":[");
    for (int i = 0; i < o->num_slow; i++) {
      st_buf_printf(&b, "%s", i ? "," : "");
      st_buf_json_str(&b, o->slow[i].spec);
    }
    st_buf_printf(&b, "],\"variability\":");
    if (o->var_kind == SIM_VAR_LOGNORMAL)
      st_buf_printf(&b, "{\"dist\":\"lognormal\",\"sigma\":%.17g}", o->var_sigma);
    else
      st_buf_printf(&b, "null");
    st_buf_printf(&b, ",\"seed\":%llu", (unsigned long long)o->seed);
  }
  st_buf_printf(&b, "}");
  return st_buf_detach(&b, NULL);
}

/* Measured (from the import) against replayed (from the run), when the
 * trace measured anything. */
static int trace_replay(drv_run *r, st_err *err)
{
  const tr_import_stats *st = &r->st;
  int measured = isfinite(st->measured_step_s);
  for (int i = 0; i < st->num_ranks && !measured; i++)
    measured = (st->rank_measured_s && isfinite(st->rank_measured_s[i])) ||
               (st->rank_compute_s && isfinite(st->rank_compute_s[i]));
  if (!measured)
    return ST_OK;
  const double *off =
      st->num_ranks >= 0 && (size_t)st->num_ranks >= r->meas.num_ranks ? st->rank_start_s : NULL;
  int rc = an_replay_init(&r->replay, r->wl, &r->meas, off, err);
  if (rc)
    return rc;
  r->have_replay = 1;
  an_replay *rp = &r->replay;
  snprintf(rp->source_device, sizeof rp->source_device, "%s", r->source_device);
  snprintf(rp->replay_device, sizeof rp->replay_device, "%s", r->cl->device.name);
  rp->rescaled = r->rescaled;
  rp->measured_step_s = st->measured_step_s;
  for (int i = 0; i < rp->num_ranks && i < st->num_ranks; i++) {
    an_replay_rank *x = &rp->ranks[i];
    if (st->rank_measured_s)
      x->measured_step_s = st->rank_measured_s[i];
    if (st->rank_compute_s)
      x->measured_compute_s = st->rank_compute_s[i];
    if (st->rank_comm_s)
      x->measured_comm_s = st->rank_comm_s[i];
    if (st->rank_source)
      x->source_rank = st->rank_source[i];
  }
  return ST_OK;
}

/* A simulation failure (exit 3) names what was replayed, as input errors
 * name their file: "workload 'w.json': collective allreduce (op 6 ...". */
static void name_source(const drv_job *j, st_err *err)
{
  if (!err)
    return;
  if (j->workload)
    st_err_prefix(err, "workload '%s': ", j->workload);
  else if (j->trace)
    st_err_prefix(err, "trace '%s': ", j->trace);
  else if (j->model)
    st_err_prefix(err, "model '%s', layout '%s': ", j->model, j->layout ? j->layout : "");
}

static int simulate(const drv_job *j, drv_run *r, st_err *err)
{
  sim_options opt = j->opt;
  /* a trace replay reports per-rank compute and communication: from the
   * timeline, recorded for the purpose and dropped unless asked for */
  if (j->trace)
    opt.timeline = 1;
  /* per-link loads and per-instance collective records only go to the
   * results file: without one they would cost time and memory for nothing */
  if (!j->results_file)
    opt.link_stats = opt.record_colls = 0;
  sim_result *res = NULL;
  int rc = sim_run(r->wl, r->cl, &opt, &res, err);
  if (rc == ST_ESIM)
    name_source(j, err);
  /* analysis reads its own rows: the engine's are converted where they lie
   * and taken over, and the rest of its result goes at once */
  if (!rc)
    rc = drv_measure_take(res, &r->meas, err);
  sim_result_destroy(res);
  if (!rc && j->trace)
    rc = trace_replay(r, err);
  if (!rc && !j->opt.timeline) {
    free(r->meas.timeline);
    r->meas.timeline = NULL;
    r->meas.num_timeline = 0;
  }
  return rc;
}

/* The time, cost and energy of training on the job's token budget: the
 * price given, else the device's list price (none: no cost); the cluster's
 * power facts. */
static int train(const drv_job *j, drv_run *r, st_err *err)
{
  /* node groups: the mean list price of the job's GPUs */
  double list = plat_gpus_sum(r->cl, r->wl->num_ranks, plat_dev_price, NULL) /
                (r->wl->num_ranks < r->cl->num_gpus ? r->wl->num_ranks : r->cl->num_gpus);
  double price = isnan(j->price_usd_per_gpu_hour) ? list : j->price_usd_per_gpu_hour;
  an_power p;
  an_power_from_cluster(r->cl, &p);
  int rc = an_train_compute(&r->sum, &p, j->train_tokens, price, j->pue, err);
  if (rc)
    return rc;
  if (isnan(r->sum.cost_usd))
    say(j, "note", "%s has no built-in price: the cost is n/a (give --price USD_PER_GPU_HOUR)",
        r->cl->device.name);
  if (isnan(r->sum.energy_MWh))
    say(j, "note", "%s has no published TDP: the energy is n/a", r->cl->device.name);
  return ST_OK;
}

/* Standard input can feed one input of a run: two that name '-' would get
 * one stream's bytes twice (st_file_read_all keeps what a stream gave). */
static int one_stdin(const drv_job *j, st_err *err)
{
  const char *trace = j->trace && strchr(j->trace, ':') ? strchr(j->trace, ':') + 1 : j->trace;
  const char *const names[] = {"--cluster", "--workload", "--model", "--trace"};
  const char *const args[] = {j->cluster, j->workload, j->model, trace};
  int first = -1;
  for (int i = 0; i < 4; i++)
    if (args[i] && !strcmp(args[i], "-")) {
      if (first >= 0)
        return st_err_set(err, ST_EUSAGE, "%s and %s both read standard input ('-'): it can "
                          "feed one of them", names[first], names[i]);
      first = i;
    }
  return ST_OK;
}

int drv_run_job(const drv_job *j, drv_run *r, st_err *err)
{
  memset(r, 0, sizeof *r);
  int rc0 = one_stdin(j, err);
  if (rc0)
    return rc0;
  /* 0 is "no budget"; anything else (a bad value included) is checked
   * before the simulation, not after it */
  int budget = !(j->train_tokens == 0);
  int rc = budget ? an_train_check(j->train_tokens, j->price_usd_per_gpu_hour, j->pue, err) : 0;
  if (!rc)
    rc = plat_cluster_load(j->cluster, &r->cl, err);
  if (!rc)
    rc = load_workload(j, r, err);
  if (!rc && j->iterations > 1)
    rc = wl_workload_repeat(r->wl, j->iterations, err);
  if (!rc && budget && !(r->wl->meta.tokens_per_step > 0))
    rc = st_err_set(err, ST_EINPUT, "%s", AN_TRAIN_NO_TOKENS);
  if (!rc)
    rc = check_memory(j, r, err);
  if (!rc)
    rc = simulate(j, r, err);
  if (rc)
    return rc;
  an_summary_compute(r->wl, r->cl, &r->meas, &r->sum);
  if (sim_options_stragglers(&j->opt))
    an_summary_critical(&r->sum, r->meas.ranks, r->meas.num_ranks);
  if (budget && (rc = train(j, r, err)))
    return rc;
  r->options_json = options_json(&j->opt);
  r->name = r->wl->meta.model ? r->wl->meta.model
                              : (j->workload ? j->workload : (j->trace ? j->trace : "?"));
  return ST_OK;
}

int drv_run_write(const drv_run *r, const char *path, const char *command_line, st_err *err)
{
  an_run_info info = {
      .command_line = command_line,
      .workload_json = r->workload_json ? r->workload_json : "{}",
      .cluster_json = r->cl->spec_json ? r->cl->spec_json : "{}",
      .options_json = r->options_json ? r->options_json : "{}",
      .workload_name = r->name,
      .cluster_name = r->cl->name,
      .wl = r->wl,
      .measured = &r->meas,
      .summary = &r->sum,
      .replay = r->have_replay ? &r->replay : NULL,
  };
  return an_results_write(path, &info, err);
}

void drv_run_release(drv_run *r)
{
  an_replay_release(&r->replay);
  tr_import_stats_release(&r->st);
  free(r->workload_json);
  free(r->options_json);
  an_measured_release(&r->meas);
  wl_workload_destroy(r->wl);
  plat_cluster_destroy(r->cl);
  memset(r, 0, sizeof *r);
}
