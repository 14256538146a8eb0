/* drv_search.c — the best layout for a model on a cluster.
 *
 * 1. Every layout is enumerated: tp (powers of two within a node), cp, pp
 *    (dividing what tp x cp leaves, at most one stage per layer), dp (the
 *    rest), mbs, vpp (dividing a stage's layers; interleaved schedule),
 *    sp and Transformer Engine's tp_overlap (with tp > 1), ep and expert
 *    tp (MoE), zero 0-3, recompute none/selective/full (full with the
 *    fewest layers of each chunk recomputed that fit), 1F1B or GPipe, and
 *    where the layers do not divide into the stages, Megatron's two ways of
 *    evening them out (the embedding and the loss counted as layers, or
 *    lighter first and last stages).  DP overlap is on wherever there is DP
 *    (what every large run does).  Validity is wl_layout_parse's: the same
 *    rules as `run`, counted by reason where they reject.
 * 2. Those that do not fit in device memory (wl_memory_estimate, the
 *    numbers `memory` prints) are counted out, and so are those another
 *    fitting layout dominates: the same layout with less recomputation
 *    (recomputing only adds work), 1F1B instead of GPipe (the same bubble,
 *    less memory), ZeRO-1 instead of ZeRO-2 (the same traffic).
 * 3. The rest are ranked by the analytic estimate (drv_estimate.c).
 * 4. The best K are simulated, each in its own process, and ranked by the
 *    simulated step.
 * Ties keep enumeration order, so the output is the same bytes every run. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

void drv_search_opts_init(drv_search_opts *o)
{
  memset(o, 0, sizeof *o);
  o->top = 16;
  o->jobs = 1;
  o->dtype = "bf16";
  o->price_usd_per_gpu_hour = NAN;
  o->pue = 1;
  o->shard = o->shards = 1;
}

/* ---- pruning reasons -------------------------------------------------------- */

static int reason_add(drv_search *s, const char *why)
{
  for (int i = 0; i < s->num_reasons; i++)
    if (!strcmp(s->reasons[i].why, why)) {
      s->reasons[i].count++;
      return ST_OK;
    }
  if (s->num_reasons == DRV_SEARCH_MAX_REASONS - 1 && strcmp(why, "other"))
    return reason_add(s, "other"); /* the last slot: the rest under one name */
  drv_search_reason *r = &s->reasons[s->num_reasons++];
  snprintf(r->why, sizeof r->why, "%s", why);
  r->count = 1;
  return ST_OK;
}

/* "layout 'tp=8,...': key 'tp' (8) does not divide 'heads' (12)" -> the
 * reason without the layout and with numbers as N, so that alike failures
 * count together; digits inside a name (moe_a2a_overlap, fp8) stay. */
static void reason_of(const char *msg, char *out, size_t n)
{
  const char *p = strstr(msg, "': ");
  p = p ? p + 3 : msg;
  size_t k = 0;
  while (*p && k + 2 < n) {
    int in_name = k > 0 && (isalpha((unsigned char)out[k - 1]) || out[k - 1] == '_');
    if (*p >= '0' && *p <= '9' && !in_name) {
      while ((*p >= '0' && *p <= '9') || *p == '.')
        p++;
      out[k++] = 'N';
    } else {
      out[k++] = *p++;
    }
  }
  out[k] = 0;
}

/* ---- enumeration ------------------------------------------------------------ */

typedef struct enum_ctx {
  drv_search *s;
  const wl_model *m;
  const drv_search_opts *o;
  int n;     /* GPUs */
  double hbm;
  st_err *err;
  int shared_overlap; /* the candidates get moe_shared_expert_overlap=1 where allowed */
  int megatron_dp;    /* Megatron's data parallelism (no other dp_impl fixed): its
                         overlapped reduction and gathers on every candidate */
} enum_ctx;

static int cand_push(drv_search *s, const drv_candidate *c)
{
  if (s->num == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 256;
    drv_candidate *nc = realloc(s->cands, cap * sizeof *nc);
    if (!nc)
      return ST_ENOMEM;
    s->cands = nc;
    s->cap = cap;
  }
  s->cands[s->num++] = *c;
  return ST_OK;
}

/* One request: valid?  fits?  Kept as a candidate either way when valid
 * (dominance is decided once its alternatives are known). */
/* A candidate of a resolved layout and its memory, not yet estimated. */
static void cand_fill(const enum_ctx *x, const wl_layout *l, const wl_memory *mem,
                      const drv_knobs *k, drv_candidate *c)
{
  memset(c, 0, sizeof *c);
  c->k = *k;
  snprintf(c->layout, sizeof c->layout, "%s", l->spec);
  c->microbatches = l->num_microbatches;
  c->peak_memory_bytes = mem->peak_bytes;
  c->fits = mem->peak_bytes <= x->hbm;
  c->estimate_s = c->step_time_s = NAN;
  c->time_to_train_s = c->cost_usd = c->energy_MWh = NAN;
}

/* recompute=full that fits: the fewest layers of each chunk recomputed
 * (recompute_layers, Megatron's block method) that still fit, since
 * recomputing fewer only removes work (memory falls as N grows, so a
 * bisection finds it).  0 (every layer) when only all of them fit, or when
 * --fixed names the key.  *l and *mem become the chosen layout's. */
static int fewest_recomputed(enum_ctx *x, const char *spec, wl_layout *l, wl_memory *mem)
{
  if (l->recompute != WL_RECOMPUTE_FULL || l->recompute_layers) /* --fixed gave it */
    return 0;
  int hi = 0; /* the most layers of a chunk: recompute_layers = hi recomputes all */
  for (int v = 0; v < l->pp * l->vpp && v < WL_MAX_VSTAGES; v++)
    if (l->vs_layers[v] > hi)
      hi = l->vs_layers[v];
  int lo = 1, best = 0;
  wl_layout bl;
  wl_memory bm;
  while (lo < hi) { /* the smallest N in [lo, hi) that fits, if any */
    int mid = lo + (hi - lo) / 2;
    char sp[600];
    snprintf(sp, sizeof sp, "%s,recompute_layers=%d", spec, mid);
    wl_layout t;
    wl_memory tm;
    st_err e;
    st_err_clear(&e);
    if (!wl_layout_parse(sp, x->n, x->m, &t, &e) && !wl_memory_estimate(x->m, &t, &tm, &e) &&
        tm.peak_bytes <= x->hbm) {
      best = mid;
      bl = t;
      bm = tm;
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  if (best) {
    *l = bl;
    *mem = bm;
  }
  return best;
}

static int try_layout(enum_ctx *x, const char *spec, const drv_knobs *k)
{
  drv_search *s = x->s;
  s->enumerated++;
  wl_layout l;
  st_err e;
  st_err_clear(&e);
  if (wl_layout_parse(spec, x->n, x->m, &l, &e)) {
    if (e.code == ST_ENOMEM)
      return st_err_set(x->err, ST_ENOMEM, "out of memory");
    char why[160];
    reason_of(e.msg, why, sizeof why);
    return reason_add(s, why);
  }
  wl_memory mem;
  if (wl_memory_estimate(x->m, &l, &mem, &e))
    return reason_add(s, "no memory estimate");
  drv_knobs kk = *k;
  if (mem.peak_bytes <= x->hbm)
    kk.rc_layers = fewest_recomputed(x, spec, &l, &mem);
  drv_candidate c;
  cand_fill(x, &l, &mem, &kk, &c);
  if (c.fits)
    s->fitting++;
  else if (mem.peak_bytes < s->min_peak_bytes || s->min_peak_bytes == 0)
    s->min_peak_bytes = mem.peak_bytes;
  if (!c.fits)
    return reason_add(s, "does not fit in device memory");
  return cand_push(s, &c) ? st_err_set(x->err, ST_ENOMEM, "out of memory") : ST_OK;
}

static const char *const recompute_names[] = {"none", "selective", "full", "op"};
static const char *const sched_names[] = {"1f1b", "gpipe", "interleaved"};

/* The --fixed keys merged into a candidate's request b (used bytes of n):
 * a key the search also sets (tp, zero, ...) keeps only the candidates
 * that set it to the fixed value, so `--fixed tp=2` searches the layouts
 * with tensor parallelism 2; any other key is added.  0 when b's own value
 * of a fixed key differs (not a candidate of this search), else 1. */
static int merge_fixed(char *b, size_t n, int used, const char *fixed)
{
  for (const char *f = fixed; f && *f;) {
    const char *end = strchr(f, ','), *eq = strchr(f, '=');
    size_t len = end ? (size_t)(end - f) : strlen(f);
    if (eq && eq < f + len) {
      size_t klen = (size_t)(eq - f) + 1; /* "key=" */
      const char *at = NULL; /* the key at the start of one of b's fields */
      for (const char *q = b; q && !at; q = strchr(q, ','), q = q ? q + 1 : NULL)
        if (!strncmp(q, f, klen))
          at = q;
      if (at) {
        const char *v = at + klen, *vend = strchr(v, ',');
        size_t vlen = vend ? (size_t)(vend - v) : strlen(v);
        if (vlen != len - klen || strncmp(v, f + klen, vlen))
          return 0;
      } else if (used >= 0 && (size_t)used < n) {
        used += snprintf(b + used, n - (size_t)used, ",%.*s", (int)len, f);
      }
    }
    f = end ? end + 1 : f + len;
  }
  return 1;
}

/* The knobs as a layout request: 0 when the --fixed keys exclude them. */
static int knobs_spec(const enum_ctx *x, const drv_knobs *k, char *b, size_t n)
{
  int used = snprintf(b, n,
                      "tp=%d,pp=%d,dp=%d,cp=%d,mbs=%d,gbs=%d,vpp=%d,sp=%d,zero=%d,recompute=%s,"
                      "schedule=%s,dtype=%s",
                      k->tp, k->pp, k->dp, k->cp, k->mbs, x->o->gbs, k->vpp, k->sp, k->zero,
                      recompute_names[k->recompute], sched_names[k->schedule], x->o->dtype);
  if (k->recompute == WL_RECOMPUTE_SELECTIVE && x->o->selective[0])
    used += snprintf(b + used, n - (size_t)used, ",recompute_modules=%s", x->o->selective);
  if (k->dp * k->cp > 1 && x->megatron_dp)
    used += snprintf(b + used, n - (size_t)used, ",overlap_grad_reduce=1%s",
                     k->zero == 1 || k->zero == 2 ? ",overlap_param_gather=1" : "");
  if (k->tp_overlap)
    used += snprintf(b + used, n - (size_t)used, ",tp_overlap=1");
  if (k->ep > 1 || k->etp)
    used += snprintf(b + used, n - (size_t)used, ",ep=%d,etp=%d", k->ep, k->etp ? k->etp : k->tp);
  /* stated either way where it is enumerated, so that --fixed
   * moe_a2a_overlap=0 or =1 keeps one side */
  if (k->ep > 1)
    used += snprintf(b + used, n - (size_t)used, ",moe_a2a_overlap=%d", k->a2a_overlap);
  if (x->shared_overlap && !k->a2a_overlap &&
      !(k->recompute == WL_RECOMPUTE_SELECTIVE && strstr(x->o->selective, "shared_experts")))
    used += snprintf(b + used, n - (size_t)used, ",moe_shared_expert_overlap=1");
  if (k->uneven == 1)
    used += snprintf(b + used, n - (size_t)used, ",account_embedding=1,account_loss=1");
  else if (k->uneven == 2)
    used += snprintf(b + used, n - (size_t)used, ",first_stage_layers=%d,last_stage_layers=%d",
             k->edge_layers, k->edge_layers);
  return merge_fixed(b, n, used, x->o->fixed);
}

/* Lighter first and last stages: the largest e <= the middle stages' layers
 * with (layers - 2e) split evenly over pp - 2 stages; 0 when none. */
static int edge_layers(int layers, int pp)
{
  if (pp < 3)
    return 0;
  for (int e = layers / pp; e >= 1; e--)
    if ((layers - 2 * e) % (pp - 2) == 0 && e <= (layers - 2 * e) / (pp - 2))
      return e;
  return 0;
}

/* Megatron-core's expert all-to-all overlap is tried where its rules allow
 * it (docs/workloads.md, "moe_a2a_overlap"): ep > 1, an interleaved
 * schedule when there is a pipeline, no full recomputation, not ZeRO-3.
 * Elsewhere it is not enumerated rather than refused, so the refusal counts
 * stay those of the layouts a user could ask for. */
static int a2a_overlap_allowed(const drv_knobs *k)
{
  return k->ep > 1 && (k->pp == 1 || k->vpp > 1) && k->recompute != WL_RECOMPUTE_FULL &&
         k->zero != 3;
}

static int enum_inner(enum_ctx *x, drv_knobs k)
{
  int rc = ST_OK;
  /* every micro-batch that divides a replica's share of the batch: small
   * models run large ones (llm-foundry's 760M model 24 a GPU), and a
   * search of powers of two up to 8 could not find those */
  if (x->o->gbs % k.dp)
    return ST_OK;
  int share = x->o->gbs / k.dp;
  for (k.mbs = 1; k.mbs <= share && !rc; k.mbs++) {
    if (share % k.mbs)
      continue;
    int per_stage = x->m->layers / k.pp;
    for (k.vpp = 1; k.vpp <= (k.uneven || k.pp == 1 ? 1 : per_stage) && !rc; k.vpp++) {
      if (k.vpp > 1 && per_stage % k.vpp)
        continue;
      int nsched = k.vpp > 1 ? 1 : (k.pp > 1 ? 2 : 1);
      for (int sc = 0; sc < nsched && !rc; sc++) {
        k.schedule = k.vpp > 1 ? 2 : sc;
        /* the PyTorch frameworks' sharding is ZeRO-3 and needs data
         * parallelism (wl_layout_parse refuses the rest): only that */
        for (k.zero = x->megatron_dp ? 0 : 3; k.zero <= (k.dp * k.cp > 1 ? 3 : 0) && !rc;
             k.zero++)
          for (k.recompute = 0; k.recompute < 3 && !rc; k.recompute++)
            for (k.a2a_overlap = 0; k.a2a_overlap <= a2a_overlap_allowed(&k) && !rc;
                 k.a2a_overlap++) {
              char spec[512];
              if (knobs_spec(x, &k, spec, sizeof spec))
                rc = try_layout(x, spec, &k);
            }
      }
    }
  }
  return rc;
}

/* sp, tp_overlap, ep and expert tp for one (tp, cp, pp, dp, uneven). */
static int enum_tp_ways(enum_ctx *x, drv_knobs k)
{
  int rc = ST_OK;
  int experts = x->m->has_moe ? x->m->moe.experts : 1;
  for (k.sp = 0; k.sp <= (k.tp > 1) && !rc; k.sp++)
    for (k.tp_overlap = 0; k.tp_overlap <= k.sp && !rc; k.tp_overlap++)
      for (k.ep = 1; k.ep <= experts && !rc; k.ep *= 2) {
        if (experts % k.ep)
          continue;
        for (int et = 0; et <= (x->m->has_moe && k.tp > 1) && !rc; et++) {
          k.etp = et ? 1 : 0; /* 0: expert tp = tp */
          rc = enum_inner(x, k);
        }
      }
  return rc;
}

static int enumerate(enum_ctx *x)
{
  int rc = ST_OK;
  const wl_model *m = x->m;
  int gpn = x->s->gpus_per_node;
  for (int tp = 1; tp <= gpn && tp <= x->n && !rc; tp *= 2) {
    if (x->n % tp)
      continue;
    for (int cp = 1; cp <= 16 && !rc; cp *= 2) {
      if ((x->n / tp) % cp)
        continue;
      int rest = x->n / tp / cp;
      for (int pp = 1; pp <= rest && pp <= m->layers && !rc; pp++) {
        if (rest % pp)
          continue;
        drv_knobs k;
        memset(&k, 0, sizeof k);
        k.tp = tp;
        k.cp = cp;
        k.pp = pp;
        k.dp = rest / pp;
        if (m->layers % pp == 0) {
          rc = enum_tp_ways(x, k);
          continue;
        }
        /* uneven: Megatron's two ways */
        if ((m->layers + 2) % pp == 0) {
          k.uneven = 1;
          rc = enum_tp_ways(x, k);
        }
        if (!rc && (k.edge_layers = edge_layers(m->layers, pp)) > 0) {
          k.uneven = 2;
          rc = enum_tp_ways(x, k);
        }
      }
    }
  }
  return rc;
}

/* ---- dominance -------------------------------------------------------------- */

/* b is a and differs only in the knobs a improves on (returns 1 when a
 * dominates b): less recomputation, 1F1B for GPipe, ZeRO-1 for ZeRO-2. */
static int dominates(const drv_knobs *a, const drv_knobs *b)
{
  drv_knobs x = *a, y = *b;
  if (x.recompute > y.recompute || (x.schedule == 1 && y.schedule != 1) ||
      (x.zero == 2 && y.zero != 2))
    return 0;
  /* the attention cores of every layer against a few whole layers: neither
   * is less work */
  if (x.recompute == WL_RECOMPUTE_SELECTIVE && y.recompute == WL_RECOMPUTE_FULL && y.rc_layers)
    return 0;
  int better = x.recompute < y.recompute || (x.schedule == 0 && y.schedule == 1) ||
               (x.zero == 1 && y.zero == 2);
  if (!better)
    return 0;
  x.recompute = y.recompute;
  x.rc_layers = y.rc_layers;
  if (x.schedule == 0 && y.schedule == 1)
    x.schedule = 1;
  if (x.zero == 1 && y.zero == 2)
    x.zero = 2;
  return !memcmp(&x, &y, sizeof x);
}

/* Mark dominated candidates; those that share everything but the knobs
 * compared sit close together in enumeration order, within one inner
 * block: only neighbours up to 64 apart are compared. */
static void mark_dominated(drv_search *s)
{
  for (size_t i = 0; i < s->num; i++)
    for (size_t j = i > 64 ? i - 64 : 0; j < s->num && j < i + 64; j++)
      if (j != i && dominates(&s->cands[j].k, &s->cands[i].k)) {
        s->cands[i].dominated = 1;
        break;
      }
  for (size_t i = 0; i < s->num; i++)
    if (s->cands[i].dominated)
      reason_add(s, "dominated (less recomputation, 1F1B or ZeRO-1 fits)");
}

/* ---- estimating ------------------------------------------------------------- */

/* The estimate is made on the step with one micro-batch (one per stage
 * with an interleaved schedule, which needs whole rounds), which the generator builds in a
 * fraction of the time, and carried to the step's count by the per-micro-
 * batch work of the slowest stage: its program is a fill of the pipeline,
 * then one micro-batch after another at that pace, then the drain and the
 * step's tail (gradient reduction, optimizer), which do not depend on the
 * count. */
/* spec with its "gbs=N" replaced by gbs (the canonical spec has it once). */
static int with_gbs(const char *spec, int gbs, char *out, size_t n)
{
  const char *g = strstr(spec, "gbs=");
  while (g && g != spec && g[-1] != ',')
    g = strstr(g + 1, "gbs=");
  if (!g)
    return -1;
  const char *end = g + 4 + strspn(g + 4, "0123456789");
  int k = snprintf(out, n, "%.*sgbs=%d%s", (int)(g - spec), spec, gbs, end);
  return k < 0 || (size_t)k >= n ? -1 : 0;
}

/* The estimate of the candidate's layout with m micro-batches a step. */
static int estimate_at(const enum_ctx *x, const plat_cluster *cl, const drv_candidate *c, int m,
                       drv_estimate *e, st_err *err)
{
  char spec[1024];
  if (with_gbs(c->layout, m * c->k.mbs * c->k.dp, spec, sizeof spec))
    return st_err_set(err, ST_EINPUT, "layout '%s': no gbs to estimate with", c->layout);
  wl_layout l;
  wl_workload *wl = NULL;
  int rc = wl_layout_parse(spec, x->n, x->m, &l, err);
  if (!rc)
    rc = wl_generate(x->m, &l, &wl, err);
  if (!rc)
    rc = drv_estimate_workload(wl, cl, l.num_microbatches, l.vpp, e, err);
  wl_workload_destroy(wl);
  return rc;
}

/* With a pipeline the stages run together on m' and 2 m' micro-batches (m'
 * one, or one round of p with an interleaved schedule) and the step is
 * carried to m along the line through the two: the steady state adds the
 * same time per micro-batch, waits at the stage boundaries included, which
 * the stages alone do not see.  Without one, a stage's program alone is the
 * step, carried to m by its per-micro-batch work. */
/* moe_a2a_overlap: a step of one micro-batch (a round with vpp) has no
 * (forward, backward) pair to overlap, so its per-micro-batch work is the
 * plain schedule's.  The estimate is made on two steps with pairs, 2 m' and
 * 4 m' micro-batches, and carried to m along the line through them (the
 * stage alone, and the stages together when they wait on each other); a
 * step of no more than 4 m' is estimated whole. */
static int estimate_paired(const enum_ctx *x, const plat_cluster *cl, drv_candidate *c,
                           st_err *err)
{
  int m_full = c->microbatches, m1 = 2 * (c->k.vpp > 1 ? c->k.pp : 1), m2 = 2 * m1;
  drv_estimate e1, e2;
  int rc = estimate_at(x, cl, c, m_full <= m2 ? m_full : m1, &e1, err);
  if (rc)
    return rc;
  double step = e1.step_s;
  if (m_full > m2) {
    if ((rc = estimate_at(x, cl, c, m2, &e2, err)))
      return rc;
    double per_mb = (e2.program_s - e1.program_s) / (m2 - m1);
    step = e1.program_s + (m_full - m1) * per_mb + e1.bubble_s;
    if (e1.coupled && e2.coupled)
      step = e1.step_s + (m_full - m1) * fmax((e2.step_s - e1.step_s) / (m2 - m1), per_mb);
  }
  c->estimate_s = step;
  c->est_bubble_s = e1.bubble_s;
  c->est_exposed_comm_s = e1.exposed_comm_s;
  return ST_OK;
}

static int estimate_one(const enum_ctx *x, const plat_cluster *cl, drv_candidate *c, st_err *err)
{
  if (strstr(c->layout, ",moe_a2a_overlap=1"))
    return estimate_paired(x, cl, c, err);
  int m_full = c->microbatches, m_est = c->k.vpp > 1 ? c->k.pp : 1;
  if (m_est > m_full)
    m_est = m_full;
  drv_estimate e;
  int rc = estimate_at(x, cl, c, m_est, &e, err);
  if (rc)
    return rc;
  /* per micro-batch without the stretch data-parallel reductions and
   * gathers cause: they run once a step (ZeRO-3's gathers, which repeat,
   * are then stretched once only); under ZeRO-1/2 without the waits for
   * the overlapped parameter gathers too, which only the step's first
   * micro-batch has (an MoE layout's expert gathers over a rail group of
   * few members outlast the layers' compute: carried to every micro-batch
   * they put GPT-OSS's published layout at 12.7 s against 8.3 s simulated) */
  double once = e.slowest.dp_stretch_work_s;
  if (c->k.zero == 1 || c->k.zero == 2)
    once += e.slowest.dp_wait_work_s;
  double per_mb = (e.slowest.work_s - once) / m_est;
  double alone = e.program_s + (m_full - m_est) * per_mb; /* the slowest stage alone */
  double step = alone + e.bubble_s;
  int m2 = 2 * m_est;
  if (e.coupled && m_full > m_est && m2 <= m_full) {
    drv_estimate e2;
    if ((rc = estimate_at(x, cl, c, m2, &e2, err)))
      return rc;
    /* with fewer micro-batches than stages (1F1B at one and two) the line
     * through the two is not yet the steady state's: a later stage runs the
     * second micro-batch inside the first's fill, and the step grows by less
     * than a micro-batch of the slowest stage, which the steady state cannot
     * (the 177b validation case's 1F1B layouts with pp 9 and stages of 6 and
     * 12 layers: estimated 3.95 s, simulated 5.39 s) */
    if (e2.coupled)
      step = e.step_s + (m_full - m_est) * fmax((e2.step_s - e.step_s) / (m2 - m_est), per_mb);
  }
  c->estimate_s = step;
  c->est_bubble_s = fmax(0, step - alone);
  c->est_exposed_comm_s = e.exposed_comm_s;
  return ST_OK;
}

static int by_estimate(const void *a, const void *b)
{
  const drv_candidate *x = a, *y = b;
  if (x->dominated != y->dominated)
    return x->dominated - y->dominated;
  if (x->estimate_s < y->estimate_s)
    return -1;
  if (x->estimate_s > y->estimate_s)
    return 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* The estimates, in slices of candidates, each slice in a child process
 * (jobs at once): a slice's answer is its estimates in order. */
typedef struct est_pool {
  enum_ctx *x;
  const plat_cluster *cl;
  size_t *todo; /* candidate indices to estimate */
  size_t n, slice, done;
} est_pool;

typedef struct est_answer {
  double estimate_s, bubble_s, exposed_s;
} est_answer;

static int estimate_task(void *u, int i, st_buf *reply, st_err *err)
{
  est_pool *p = u;
  for (size_t j = (size_t)i * p->slice; j < p->n && j < (size_t)(i + 1) * p->slice; j++) {
    drv_candidate *c = &p->x->s->cands[p->todo[j]];
    int rc = estimate_one(p->x, p->cl, c, err);
    if (rc)
      return rc;
    est_answer a = {c->estimate_s, c->est_bubble_s, c->est_exposed_comm_s};
    if (st_buf_append(reply, &a, sizeof a))
      return st_err_set(err, ST_ENOMEM, "out of memory");
  }
  return ST_OK;
}

static void estimate_done(void *u, int i, const drv_answer *a)
{
  est_pool *p = u;
  size_t first = (size_t)i * p->slice, count = 0;
  if (a->end == DRV_END_DONE && !a->rc)
    count = a->len / sizeof(est_answer);
  for (size_t j = 0; j < count && first + j < p->n; j++) {
    est_answer e;
    memcpy(&e, a->data + j * sizeof e, sizeof e);
    drv_candidate *c = &p->x->s->cands[p->todo[first + j]];
    c->estimate_s = e.estimate_s;
    c->est_bubble_s = e.bubble_s;
    c->est_exposed_comm_s = e.exposed_s;
  }
  if (a->end != DRV_END_DONE || a->rc) /* the first failure stops the search */
    if (!p->x->err->code)
      st_err_set(p->x->err, a->rc ? a->rc : ST_ESIM, "estimating layouts: %s",
                 a->rc ? a->msg : "a process ended without an answer");
  p->done += p->slice;
  FILE *f = p->x->o->progress;
  if (f) {
    fprintf(f, "search: estimated %zu of %zu layouts\n", p->done < p->n ? p->done : p->n, p->n);
    fflush(f);
  }
}

static int estimate_all(enum_ctx *x, const plat_cluster *cl)
{
  drv_search *s = x->s;
  est_pool p = {x, cl, malloc((s->num + 1) * sizeof(size_t)), 0, 0, 0};
  if (!p.todo)
    return st_err_set(x->err, ST_ENOMEM, "out of memory");
  for (size_t i = 0; i < s->num; i++) {
    s->cands[i].order = i;
    if (!s->cands[i].dominated)
      p.todo[p.n++] = i;
  }
  /* about 8 slices a process, at least 16 layouts each: progress, and a
   * slow slice does not hold the others */
  int jobs = x->o->jobs > 0 ? x->o->jobs : 1;
  p.slice = p.n / ((size_t)jobs * 8) + 1;
  if (p.slice < 16)
    p.slice = 16;
  int slices = (int)((p.n + p.slice - 1) / p.slice);
  int rc = drv_pool_run(slices, jobs, 0, estimate_task, estimate_done, &p, x->err);
  free(p.todo);
  if (!rc && x->err->code)
    rc = x->err->code;
  if (rc)
    return rc;
  s->estimated = p.n;
  qsort(s->cands, s->num, sizeof *s->cands, by_estimate);
  for (size_t i = 0; i < p.n; i++)
    s->cands[i].estimate_rank = (int)i + 1;
  return ST_OK;
}

/* ---- simulating the best ---------------------------------------------------- */

typedef struct sim_ctx {
  const drv_search_opts *o;
  drv_search *s;
  const size_t *idx; /* the candidates to simulate */
  size_t done, todo;
} sim_ctx;

/* Task i: the idx[i]-th candidate, or past them the published layout. */
static drv_candidate *task_cand(const sim_ctx *x, int i)
{
  return (size_t)i < x->todo ? &x->s->cands[x->idx[i]] : &x->s->published;
}

static int simulate_task(void *u, int i, st_buf *reply, st_err *err)
{
  const sim_ctx *x = u;
  drv_job j;
  drv_job_init(&j);
  j.model = x->o->model;
  j.model_spec = x->o->model_spec;
  j.layout = task_cand(x, i)->layout;
  j.cluster = x->s->cluster;
  j.seq_len = x->o->seq;
  j.train_tokens = x->o->train_tokens;
  j.price_usd_per_gpu_hour = x->o->price_usd_per_gpu_hour;
  j.pue = x->o->pue;
  j.opt.quiet = 1;
  drv_run r;
  int rc = drv_run_job(&j, &r, err);
  if (!rc)
    rc = st_buf_append(reply, &r.sum, sizeof r.sum);
  drv_run_release(&r);
  return rc;
}

static void simulate_done(void *u, int i, const drv_answer *a)
{
  sim_ctx *x = u;
  drv_candidate *c = task_cand(x, i);
  c->simulated = 1;
  if (a->end == DRV_END_DONE && !a->rc && a->len == sizeof(an_summary)) {
    an_summary sum;
    memcpy(&sum, a->data, sizeof sum);
    c->sum = sum;
    c->step_time_s = sum.step_time_s;
    c->tokens_per_s_per_gpu = sum.tokens_per_s_per_gpu;
    c->mfu = sum.mfu;
    c->exposed_comm_s = sum.exposed_comm_s;
    c->bubble_s = sum.bubble_s;
    c->compute_s = sum.compute_s;
    c->time_to_train_s = sum.time_to_train_s;
    c->cost_usd = sum.cost_usd;
    c->energy_MWh = sum.energy_MWh;
  } else {
    c->failed = 1;
    snprintf(c->failure, sizeof c->failure, "%s",
             a->end == DRV_END_DONE ? a->msg
             : a->end == DRV_END_TIMEOUT ? "no answer in time"
             : a->end == DRV_END_CRASH  ? "the simulation crashed"
                                        : "the simulation ended without an answer");
  }
  x->done++;
  if (x->o->progress) {
    if (c->failed)
      fprintf(x->o->progress, "search: simulated %zu of %zu: %s: failed: %s\n", x->done, x->todo,
              c->layout, c->failure);
    else
      fprintf(x->o->progress, "search: simulated %zu of %zu: %.4f s (estimate %.4f s) in %.0f s\n",
              x->done, x->todo, c->step_time_s, c->estimate_s, a->wall_s);
    fflush(x->o->progress);
  }
}

static int by_simulated(const void *a, const void *b)
{
  const drv_candidate *x = a, *y = b;
  int xs = x->simulated && !x->failed, ys = y->simulated && !y->failed;
  if (xs != ys)
    return ys - xs;
  if (xs && x->step_time_s != y->step_time_s)
    return x->step_time_s < y->step_time_s ? -1 : 1;
  return by_estimate(a, b);
}

/* The best K by estimate, or with shards this shard's share of them (the
 * sweep's rule: costliest first to the least loaded shard); the published
 * layout on shard 1. */
static int simulate_best(const drv_search_opts *o, drv_search *s, const wl_model *m,
                         const plat_cluster *cl, st_err *err)
{
  size_t k = (size_t)o->top < s->estimated ? (size_t)o->top : s->estimated;
  size_t *idx = malloc((k + 1) * sizeof *idx), todo = 0;
  double *cost = malloc((k + 1) * sizeof *cost), *load = malloc(((size_t)o->shards + 1) * sizeof *load);
  int *ord = malloc((k + 1) * sizeof *ord), *shard_of = malloc((k + 1) * sizeof *shard_of);
  int rc = ST_OK;
  if (!idx || !cost || !load || !ord || !shard_of) {
    rc = st_err_set(err, ST_ENOMEM, "search: out of memory");
    goto out;
  }
  if (o->shards > 1) {
    for (size_t i = 0; i < k; i++)
      cost[i] = drv_layout_cost(m, s->cands[i].layout, cl);
    drv_sweep_assign(cost, (int)k, o->shards, ord, shard_of, load);
  }
  for (size_t i = 0; i < k; i++)
    if (o->shards == 1 || shard_of[i] == o->shard)
      idx[todo++] = i;
  int published = s->have_published && o->shard == 1;
  sim_ctx x = {o, s, idx, 0, todo};
  if (todo + (size_t)published > 0 &&
      (rc = drv_pool_run((int)todo + published, o->jobs, 0, simulate_task, simulate_done, &x,
                         err)))
    goto out;
  s->simulated = todo;
  qsort(s->cands, s->num, sizeof *s->cands, by_simulated);
out:
  free(idx);
  free(cost);
  free(load);
  free(ord);
  free(shard_of);
  return rc;
}

/* ---- a published layout among the candidates ---------------------------------- */

/* The published layout as a candidate: parsed, its memory, its estimate, its
 * place among the estimated ones (1 + those estimated faster). */
static int place_published(enum_ctx *x, const plat_cluster *cl)
{
  drv_search *s = x->s;
  drv_candidate *c = &s->published;
  wl_layout l;
  wl_memory mem;
  int rc = wl_layout_parse(x->o->published, x->n, x->m, &l, x->err);
  if (!rc)
    rc = wl_memory_estimate(x->m, &l, &mem, x->err);
  if (rc)
    return rc;
  drv_knobs k = {.tp = l.tp,
                 .pp = l.pp,
                 .dp = l.dp,
                 .cp = l.cp,
                 .ep = l.ep,
                 .etp = l.etp != l.tp ? l.etp : 0,
                 .vpp = l.vpp,
                 .sp = l.sp,
                 .tp_overlap = l.tp_overlap,
                 .mbs = l.mbs,
                 .zero = l.zero,
                 .recompute = l.recompute,
                 .schedule = l.schedule,
                 .a2a_overlap = l.moe_a2a_overlap};
  cand_fill(x, &l, &mem, &k, c);
  if ((rc = estimate_one(x, cl, c, x->err)))
    return rc;
  c->estimate_rank = 1;
  for (size_t i = 0; i < s->estimated; i++)
    c->estimate_rank += s->cands[i].estimate_s < c->estimate_s;
  s->have_published = 1;
  return ST_OK;
}

int drv_search_case_opts(const char *path, drv_search_opts *o, drv_case *c, wl_model *m,
                         char *fixed, size_t n, st_err *err)
{
  int rc = drv_case_load(path, c, err);
  if (rc)
    return rc;
  wl_layout l;
  if ((rc = wl_model_parse(c->model_json, c->name, m, err)) ||
      (rc = wl_layout_parse(c->layout, c->num_gpus, m, &l, err))) {
    drv_case_release(c);
    return rc;
  }
  /* what the run's software and data fixed: its dtypes and attention kernel,
   * and the kernel's library (MPT's FlashAttention-1 port, PyTorch SDPA's
   * FlashAttention-2: on Hopper the candidates would otherwise get cuDNN's,
   * 1.6x FlashAttention-2's speed, and beat the published layout by the
   * library), whether it ran eager (no torch.compile), and whether its TP
   * backward all-reduce could overlap (tp_async=0: Megatron-LM of 2021,
   * before sequence parallelism, so the candidates keep sp=0) and whether
   * its pipeline tensors travelled split (pp_scatter=1, likewise sp=0) */
  char sw[256];
  wl_layout_software_keys(&l, sw, sizeof sw);
  snprintf(fixed, n, "grad_dtype=%s,%s", wl_dtype_name(l.grad_dtype), sw);
  /* a selective recomputation by module (Megatron-core's recompute_modules):
   * the candidates that recompute selectively recompute those modules */
  wl_layout_recompute_modules(&l, o->selective, sizeof o->selective);
  o->model = c->name;
  o->model_spec = m;
  o->cluster = c->cluster;
  o->gpus = c->num_gpus;
  o->gbs = l.gbs;
  o->seq = m->seq_len;
  o->dtype = wl_dtype_name(l.dtype);
  o->fixed = fixed;
  o->published = c->layout;
  return ST_OK;
}

/* ---- the search ------------------------------------------------------------- */

/* The cluster to search: the preset at --gpus / GPUs-per-node nodes when
 * fewer GPUs are asked for. */
static int load_cluster(const drv_search_opts *o, drv_search *s, plat_cluster **cl, st_err *err)
{
  int rc = plat_cluster_load(o->cluster, cl, err);
  if (rc)
    return rc;
  snprintf(s->cluster, sizeof s->cluster, "%s", o->cluster);
  if (!o->gpus || o->gpus == (*cl)->num_gpus)
    return ST_OK;
  int gpn = (*cl)->gpus_per_node;
  if (o->gpus > (*cl)->num_gpus || o->gpus % gpn)
    return st_err_set(err, ST_EINPUT,
                      "--gpus %d: cluster '%s' has %d GPUs, %d per node (a whole number of its "
                      "nodes, at most all of them)",
                      o->gpus, o->cluster, (*cl)->num_gpus, gpn);
  if (st_str_ends_with(o->cluster, ".json") || st_str_ends_with(o->cluster, ".xml"))
    return st_err_set(err, ST_EINPUT,
                      "--gpus %d: cluster '%s' is a file; give the node count in the file",
                      o->gpus, o->cluster);
  size_t name = strcspn(o->cluster, ":");
  snprintf(s->cluster, sizeof s->cluster, "%.*s:%d", (int)name, o->cluster, o->gpus / gpn);
  plat_cluster_destroy(*cl);
  *cl = NULL;
  return plat_cluster_load(s->cluster, cl, err);
}

/* A model that fits no layout: how many GPUs would one need?  Doubling the
 * count until some layout fits (sharded state shrinks with the GPUs,
 * activations do not), memory only. */
static int gpus_needed(const enum_ctx *x0)
{
  for (int n = x0->n * 2; n <= (1 << 22); n *= 2) {
    drv_search t;
    memset(&t, 0, sizeof t);
    t.gpus_per_node = x0->s->gpus_per_node;
    enum_ctx x = *x0;
    x.s = &t;
    x.n = n;
    st_err e;
    st_err_clear(&e);
    x.err = &e;
    int rc = enumerate(&x);
    free(t.cands);
    if (rc)
      return 0;
    if (t.fitting)
      return n;
  }
  return 0;
}

int drv_search_run(const drv_search_opts *o, drv_search *s, st_err *err)
{
  memset(s, 0, sizeof *s);
  if (o->gbs < 1)
    return st_err_set(err, ST_EINPUT, "--gbs is required (the global batch in sequences)");
  wl_model m;
  plat_cluster *cl = NULL;
  int rc = drv_model_load(o->model, o->model_spec, o->seq, &m, err);
  if (rc)
    return rc;
  s->seq = m.seq_len;
  if ((rc = load_cluster(o, s, &cl, err)))
    goto out;
  s->num_gpus = cl->num_gpus;
  s->num_nodes = cl->num_nodes;
  /* tensor parallelism stays inside a node: of the smallest node where node
   * groups have unlike GPUs per node */
  s->gpus_per_node = cl->gpus_per_node;
  for (int k = 0; k < cl->num_groups; k++)
    if (cl->groups[k].gpus_per_node < s->gpus_per_node)
      s->gpus_per_node = cl->groups[k].gpus_per_node;
  snprintf(s->device, sizeof s->device, "%s", cl->device.name);
  /* node groups: a layout must fit the smallest device (its stages may land
   * on any group); the device named is that one */
  s->hbm_bytes = plat_gpus_min(cl, cl->num_gpus, plat_dev_hbm, NULL);
  for (int k = 0; k < cl->num_groups; k++)
    if (cl->groups[k].device.hbm_bytes == s->hbm_bytes)
      snprintf(s->device, sizeof s->device, "%s", cl->groups[k].device.name);
  enum_ctx x = {s, &m, o, cl->num_gpus, s->hbm_bytes, err, 0, 0};
  /* the shared experts beside the dispatcher's all-to-alls wherever
   * Megatron-core allows it (never slower in the model: what runs beside an
   * all-to-all is at most stretched by the overlap), unless --fixed names
   * the key or another dp_impl; per candidate, not under moe_a2a_overlap nor
   * with the shared experts recomputed (knobs_spec) */
  const char *fx = o->fixed ? o->fixed : "";
  x.megatron_dp = !(strstr(fx, "dp_impl=") && !strstr(fx, "dp_impl=megatron"));
  x.shared_overlap = m.has_moe && m.moe.shared_experts > 0 &&
                     !strstr(fx, "moe_shared_expert_overlap=") && x.megatron_dp;
  if (o->progress)
    fprintf(o->progress, "search: %s on %s (%d GPUs), gbs %d, seq %d\n", o->model, s->cluster,
            s->num_gpus, o->gbs, s->seq);
  if ((rc = enumerate(&x)))
    goto out;
  if (!s->num) {
    if (!s->fitting && s->min_peak_bytes > 0) {
      char need[32], have[32];
      st_format_bytes(s->min_peak_bytes, need, sizeof need);
      st_format_bytes(s->hbm_bytes, have, sizeof have);
      int more = gpus_needed(&x);
      rc = st_err_set(err, ST_EINPUT,
                      "model '%s' fits no layout on %d GPUs of '%s': the smallest peak any "
                      "layout needs is %s per GPU, one %s has %s%s%d GPUs",
                      o->model, s->num_gpus, s->cluster, need, s->device, have,
                      more ? "; some layout fits on " : "; no layout fits on up to ",
                      more ? more : (1 << 22));
    } else if (s->enumerated == 0 && o->fixed && *o->fixed) {
      rc = st_err_set(err, ST_EINPUT,
                      "--fixed '%s' leaves no layout to search for model '%s' on %d GPUs with "
                      "gbs %d (the search's own keys take the values docs/search.md lists)",
                      o->fixed, o->model, s->num_gpus, o->gbs);
    } else {
      /* the reason most layouts were refused for, so the message says why */
      const drv_search_reason *top = NULL;
      for (int i = 0; i < s->num_reasons; i++)
        if (!top || s->reasons[i].count > top->count)
          top = &s->reasons[i];
      char why[256] = "";
      if (top)
        snprintf(why, sizeof why, "; most often: %s (%ld of %ld refused for it)", top->why,
                 top->count, s->enumerated);
      rc = st_err_set(err, ST_EINPUT, "model '%s' has no valid layout on %d GPUs with gbs %d%s",
                      o->model, s->num_gpus, o->gbs, why);
    }
    goto out;
  }
  mark_dominated(s);
  if ((rc = estimate_all(&x, cl)))
    goto out;
  if (o->published && (rc = place_published(&x, cl)))
    goto out;
  rc = o->top > 0 ? simulate_best(o, s, &m, cl, err) : ST_OK;
out:
  plat_cluster_destroy(cl);
  wl_model_release(&m);
  return rc;
}

void drv_search_release(drv_search *s)
{
  free(s->cands);
  memset(s, 0, sizeof *s);
}
