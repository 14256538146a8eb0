/* wl_layout.c — parallel layout specs ("tp=8,pp=4,mbs=1,gbs=512,...") and the
 * pipeline schedules.
 *
 * A layout is parsed against a model and a GPU count and every disagreement
 * between the numbers is an error that names them; what is left unsaid takes
 * Megatron-LM's defaults (docs/workloads.md lists them).  The canonical spec
 * (every key, resolved) is what the workload's meta records.
 *
 * Schedules follow Megatron-LM's megatron/core/pipeline_parallel/schedules.py:
 * forward_backward_pipelining_without_interleaving (1F1B: warm-up of
 * p - s - 1 forwards, steady one-forward-one-backward, cool-down backwards)
 * and forward_backward_pipelining_with_interleaving (warm-up of
 * 2(p - s - 1) + (v - 1)p virtual micro-batches, chunk ids from
 * get_model_chunk_id).  GPipe runs every forward, then the backwards in
 * reverse micro-batch order (torchgpipe).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_gen_int.h"
#include "workload.h"

static const char *const recompute_names[WL_RECOMPUTE_COUNT] = {"none", "selective", "full"};
static const char *const schedule_names[WL_SCHED_COUNT] = {"1f1b", "gpipe", "interleaved"};

const char *wl_recompute_name(int r)
{
  return r >= 0 && r < WL_RECOMPUTE_COUNT ? recompute_names[r] : "?";
}
const char *wl_schedule_name(int s)
{
  return s >= 0 && s < WL_SCHED_COUNT ? schedule_names[s] : "?";
}

enum {
  K_TP, K_PP, K_DP, K_CP, K_EP, K_VPP, K_SP, K_MBS, K_GBS, K_ZERO, K_RECOMPUTE, K_SCHEDULE,
  K_DTYPE, K_GRAD_DTYPE, K_OVERLAP_GRAD, K_OVERLAP_PARAM, K_BUCKET, K_FLASH, K_FIRST, K_LAST,
  K_TP_OVERLAP, K_COUNT
};
static const char *const key_names[K_COUNT] = {
    "tp",    "pp",        "dp",       "cp",    "ep",         "vpp",
    "sp",    "mbs",       "gbs",      "zero",  "recompute",  "schedule",
    "dtype", "grad_dtype", "overlap_grad_reduce", "overlap_param_gather", "bucket", "flash",
    "first_stage_layers", "last_stage_layers", "tp_overlap"};

static int parse_int(const char *s, long *v)
{
  char *end;
  errno = 0;
  long x = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || errno || x < 0 || x > 1000000000L)
    return -1;
  *v = x;
  return 0;
}

/* "40000000", "40M", "1.5G" (decimal multipliers: parameters, not bytes) */
static int parse_count(const char *s, double *v)
{
  char *end;
  errno = 0;
  double x = strtod(s, &end);
  if (end == s || errno || !(x >= 0) || !isfinite(x))
    return -1;
  double mult = 1;
  if (*end == 'k' || *end == 'K')
    mult = 1e3, end++;
  else if (*end == 'M' || *end == 'm')
    mult = 1e6, end++;
  else if (*end == 'G' || *end == 'g')
    mult = 1e9, end++;
  if (*end)
    return -1;
  *v = floor(x * mult);
  return 0;
}


static int lookup(const char *const *names, int n, const char *v)
{
  for (int i = 0; i < n; i++)
    if (!strcmp(names[i], v))
      return i;
  return -1;
}

int wl_layout_parse(const char *spec, int num_gpus, const wl_model *m, wl_layout *out, st_err *err)
{
  long iv[K_COUNT];
  int given[K_COUNT] = {0};
  char sv[K_COUNT][32];
  memset(iv, 0, sizeof iv);
  memset(sv, 0, sizeof sv);
  wl_layout l;
  memset(&l, 0, sizeof l);

#define ERR(...)                                                                         \
  do {                                                                                   \
    st_err_set(err, ST_EINPUT, __VA_ARGS__);                                             \
    return st_err_prefix(err, "layout '%s': ", spec);                                    \
  } while (0)

  /* split on ',' into key=value */
  const char *p = spec;
  while (*p) {
    while (*p == ',' || isspace((unsigned char)*p))
      p++;
    if (!*p)
      break;
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    char item[96];
    if (n >= sizeof item)
      ERR("item '%.*s...' is too long", 20, p);
    memcpy(item, p, n);
    item[n] = '\0';
    while (n && isspace((unsigned char)item[n - 1]))
      item[--n] = '\0';
    char *eq = strchr(item, '=');
    if (!eq)
      ERR("item '%s' is not key=value", item);
    *eq = '\0';
    const char *key = item, *val = eq + 1;
    int k = lookup(key_names, K_COUNT, key);
    if (k < 0) {
      char known[400] = "";
      for (int i = 0; i < K_COUNT; i++) {
        strcat(known, i ? ", " : "");
        strcat(known, key_names[i]);
      }
      ERR("key '%s' is unknown (known: %s)", key, known);
    }
    if (given[k])
      ERR("key '%s' is given twice", key);
    given[k] = 1;
    if (k == K_RECOMPUTE || k == K_SCHEDULE || k == K_DTYPE || k == K_GRAD_DTYPE) {
      snprintf(sv[k], sizeof sv[k], "%s", val);
    } else if (k == K_BUCKET) {
      double b;
      if (parse_count(val, &b) || b < 1)
        ERR("key 'bucket' value '%s' is not a positive parameter count (like 40M)", val);
      l.bucket_params = b;
    } else {
      if (parse_int(val, &iv[k]))
        ERR("key '%s' value '%s' is not a non-negative integer", key, val);
      int positive = k != K_ZERO && k != K_SP && k != K_OVERLAP_GRAD && k != K_OVERLAP_PARAM &&
                     k != K_FLASH && k != K_FIRST && k != K_LAST && k != K_TP_OVERLAP;
      if (positive && iv[k] < 1)
        ERR("key '%s' is 0 (must be >= 1)", key);
      int boolean = k == K_SP || k == K_OVERLAP_GRAD || k == K_OVERLAP_PARAM || k == K_FLASH ||
                    k == K_TP_OVERLAP;
      if (boolean && iv[k] > 1)
        ERR("key '%s' is %ld (must be 0 or 1)", key, iv[k]);
      if (k == K_ZERO && iv[k] > 3)
        ERR("key 'zero' is %ld (must be 0, 1, 2 or 3)", iv[k]);
    }
    p += n;
  }

  l.tp = given[K_TP] ? (int)iv[K_TP] : 1;
  l.pp = given[K_PP] ? (int)iv[K_PP] : 1;
  l.cp = given[K_CP] ? (int)iv[K_CP] : 1;
  l.ep = given[K_EP] ? (int)iv[K_EP] : 1;
  l.vpp = given[K_VPP] ? (int)iv[K_VPP] : 1;
  l.mbs = given[K_MBS] ? (int)iv[K_MBS] : 1;
  l.zero = (int)iv[K_ZERO];
  l.flash = given[K_FLASH] ? (int)iv[K_FLASH] : 1;
  l.overlap_grad_reduce = (int)iv[K_OVERLAP_GRAD];
  l.overlap_param_gather = (int)iv[K_OVERLAP_PARAM];
  l.first_stage_layers = (int)iv[K_FIRST];
  l.last_stage_layers = (int)iv[K_LAST];
  l.tp_overlap = (int)iv[K_TP_OVERLAP];
  long tpc = (long)l.tp * l.pp * l.cp;
  if (given[K_DP]) {
    l.dp = (int)iv[K_DP];
    if (num_gpus > 0 && tpc * l.dp != num_gpus)
      ERR("tp*pp*dp*cp = %d*%d*%d*%d = %ld, but there are %d GPUs", l.tp, l.pp, l.dp, l.cp,
          tpc * l.dp, num_gpus);
  } else if (num_gpus > 0) {
    if (num_gpus % tpc)
      ERR("%d GPUs are not divisible by tp*pp*cp = %d*%d*%d = %ld", num_gpus, l.tp, l.pp, l.cp,
          tpc);
    l.dp = (int)(num_gpus / tpc);
  } else {
    l.dp = 1;
  }
  if (tpc * l.dp > 100000000L)
    ERR("tp*pp*dp*cp = %ld GPUs is too many", tpc * l.dp);
  l.num_gpus = (int)(tpc * l.dp);
  if (l.pp > WL_MAX_STAGES)
    ERR("pp %d exceeds the %d pipeline stages supported", l.pp, WL_MAX_STAGES);

  /* model shape against the layout */
  if (m->heads % l.tp)
    ERR("heads (%d) not divisible by tp (%d)", m->heads, l.tp);
  if (!m->has_mla && m->kv_heads % l.tp)
    ERR("kv_heads (%d) not divisible by tp (%d)", m->kv_heads, l.tp);
  if ((m->ffn_hidden % l.tp) || (m->has_moe && m->moe.expert_ffn_hidden % l.tp))
    ERR("ffn_hidden (%d) not divisible by tp (%d)",
        m->ffn_hidden % l.tp ? m->ffn_hidden : m->moe.expert_ffn_hidden, l.tp);
  if (l.vpp > 1 && l.pp == 1)
    ERR("vpp (%d) needs pp > 1", l.vpp);
  /* layers per stage */
  if (given[K_FIRST] || given[K_LAST]) {
    if (l.pp < 2)
      ERR("first_stage_layers/last_stage_layers need pp > 1 (pp is %d)", l.pp);
    int fixed = (given[K_FIRST] ? 1 : 0) + (given[K_LAST] ? 1 : 0);
    int rest_stages = l.pp - fixed;
    long rest = (long)m->layers - l.first_stage_layers - l.last_stage_layers;
    if ((given[K_FIRST] && l.first_stage_layers < 1) || (given[K_LAST] && l.last_stage_layers < 1))
      ERR("first_stage_layers/last_stage_layers must be >= 1");
    if (rest < 0 || (rest_stages == 0 && rest != 0) ||
        (rest_stages > 0 && (rest % rest_stages || rest == 0)))
      ERR("layers (%d) minus first_stage_layers (%d) and last_stage_layers (%d) = %ld not "
          "divisible into the %d other stages",
          m->layers, l.first_stage_layers, l.last_stage_layers, rest, rest_stages);
    for (int s = 0; s < l.pp; s++)
      if (wl_layout_stage_layers(&l, m, s) % l.vpp)
        ERR("stage %d has %d layers, not divisible by vpp (%d)", s,
            wl_layout_stage_layers(&l, m, s), l.vpp);
  } else if (m->layers % (l.pp * l.vpp)) {
    ERR("layers (%d) not divisible by pp*vpp = %d*%d = %d (first_stage_layers and "
        "last_stage_layers give an uneven split)",
        m->layers, l.pp, l.vpp, l.pp * l.vpp);
  }
  /* batch */
  l.gbs = given[K_GBS] ? (int)iv[K_GBS] : l.mbs * l.dp;
  if (l.gbs % ((long)l.mbs * l.dp))
    ERR("gbs (%d) not divisible by mbs*dp = %d*%d = %d", l.gbs, l.mbs, l.dp, l.mbs * l.dp);
  l.num_microbatches = l.gbs / (l.mbs * l.dp);
  /* sequence */
  l.sp = l.tp > 1 ? (int)iv[K_SP] : 0; /* Megatron turns SP off when tp == 1 */
  if (l.cp > 1 && m->seq_len % (2 * l.cp))
    ERR("seq_len (%d) not divisible by 2*cp = %d (context parallelism splits it into 2*cp "
        "chunks)",
        m->seq_len, 2 * l.cp);
  if (l.sp && (m->seq_len / l.cp) % l.tp)
    ERR("seq_len/cp = %d/%d = %d not divisible by tp (%d) for sequence parallelism",
        m->seq_len, l.cp, m->seq_len / l.cp, l.tp);
  /* Megatron-LM asserts sequence_parallel under --tp-comm-overlap (and turns
   * SP off when tp == 1) */
  if (l.tp_overlap && !l.sp)
    ERR("tp_overlap=1 needs sp=1 and tp > 1 (Megatron-LM's --tp-comm-overlap overlaps the "
        "sequence-parallel all-gathers and reduce-scatters); sp is %d, tp is %d",
        l.sp, l.tp);
  /* experts */
  if (l.ep > 1 && !m->has_moe)
    ERR("ep (%d) needs a model with 'moe'", l.ep);
  if (((long)l.dp * l.cp) % l.ep)
    ERR("ep (%d) does not divide dp*cp = %d*%d = %d", l.ep, l.dp, l.cp, l.dp * l.cp);
  if (m->has_moe && m->moe.experts % l.ep)
    ERR("moe.experts (%d) not divisible by ep (%d)", m->moe.experts, l.ep);
  if (m->has_moe && l.tp > 1 && !l.sp)
    ERR("a MoE model with tp (%d) > 1 needs sp=1 (as Megatron-LM requires)", l.tp);
  /* schedule */
  if (sv[K_SCHEDULE][0]) {
    l.schedule = lookup(schedule_names, WL_SCHED_COUNT, sv[K_SCHEDULE]);
    if (l.schedule < 0)
      ERR("key 'schedule' value '%s' is unknown (known: 1f1b, gpipe, interleaved)",
          sv[K_SCHEDULE]);
  } else {
    l.schedule = l.vpp > 1 ? WL_SCHED_INTERLEAVED : WL_SCHED_1F1B;
  }
  if (l.schedule == WL_SCHED_INTERLEAVED && l.vpp < 2)
    ERR("schedule 'interleaved' needs vpp > 1 (vpp is %d)", l.vpp);
  if (l.schedule != WL_SCHED_INTERLEAVED && l.vpp > 1)
    ERR("vpp (%d) needs schedule 'interleaved' (schedule is '%s')", l.vpp,
        schedule_names[l.schedule]);
  if (l.schedule == WL_SCHED_INTERLEAVED && l.num_microbatches % l.pp)
    ERR("schedule 'interleaved': micro-batches gbs/(mbs*dp) = %d not divisible by pp (%d)",
        l.num_microbatches, l.pp);
  /* recomputation and precision */
  l.recompute = WL_RECOMPUTE_NONE;
  if (sv[K_RECOMPUTE][0]) {
    l.recompute = lookup(recompute_names, WL_RECOMPUTE_COUNT, sv[K_RECOMPUTE]);
    if (l.recompute < 0)
      ERR("key 'recompute' value '%s' is unknown (known: none, selective, full)", sv[K_RECOMPUTE]);
  }
  l.dtype = WL_DTYPE_BF16;
  if (sv[K_DTYPE][0]) {
    l.dtype = wl_dtype_from_name(sv[K_DTYPE]);
    if (l.dtype != WL_DTYPE_BF16 && l.dtype != WL_DTYPE_FP16 && l.dtype != WL_DTYPE_FP8)
      ERR("key 'dtype' value '%s' is unknown (known: bf16, fp16, fp8)", sv[K_DTYPE]);
  }
  /* Megatron accumulates and all-reduces bf16 gradients in fp32; fp16 in fp16. */
  l.grad_dtype = l.dtype == WL_DTYPE_FP16 ? WL_DTYPE_FP16 : WL_DTYPE_FP32;
  if (sv[K_GRAD_DTYPE][0]) {
    l.grad_dtype = wl_dtype_from_name(sv[K_GRAD_DTYPE]);
    if (l.grad_dtype != WL_DTYPE_FP32 && l.grad_dtype != WL_DTYPE_BF16 &&
        l.grad_dtype != WL_DTYPE_FP16)
      ERR("key 'grad_dtype' value '%s' is unknown (known: fp32, bf16, fp16)", sv[K_GRAD_DTYPE]);
  }
  /* data parallelism */
  if (l.zero == 3 && l.pp > 1)
    ERR("zero=3 (FSDP) with pp (%d) > 1 is not supported (DeepSpeed and PyTorch FSDP do not "
        "combine it with pipeline schedules)",
        l.pp);
  if (l.overlap_param_gather && (l.zero == 0 || l.zero == 3))
    ERR("overlap_param_gather=1 needs zero=1 or zero=2 (the distributed optimizer); zero is %d",
        l.zero);
  if (given[K_BUCKET] && (!l.overlap_grad_reduce || l.zero == 3))
    ERR("bucket has no effect without overlap_grad_reduce=1 and zero < 3 (the whole gradient "
        "buffer is reduced at once)");
  if (!given[K_BUCKET] && l.overlap_grad_reduce && l.zero < 3) {
    /* Megatron DistributedDataParallel: max(40M, 1M x data-parallel size) parameters */
    double d = (double)l.dp * l.cp;
    l.bucket_params = fmax(4e7, 1e6 * d);
  }

  int off = snprintf(l.spec, sizeof l.spec,
                     "tp=%d,pp=%d,dp=%d,cp=%d,ep=%d,vpp=%d,sp=%d,mbs=%d,gbs=%d,zero=%d,"
                     "recompute=%s,schedule=%s,dtype=%s,grad_dtype=%s,overlap_grad_reduce=%d,"
                     "overlap_param_gather=%d,flash=%d",
                     l.tp, l.pp, l.dp, l.cp, l.ep, l.vpp, l.sp, l.mbs, l.gbs, l.zero,
                     recompute_names[l.recompute], schedule_names[l.schedule],
                     wl_dtype_name(l.dtype), wl_dtype_name(l.grad_dtype), l.overlap_grad_reduce,
                     l.overlap_param_gather, l.flash);
  if (l.bucket_params > 0 && off > 0 && (size_t)off < sizeof l.spec)
    off += snprintf(l.spec + off, sizeof l.spec - (size_t)off, ",bucket=%.0f", l.bucket_params);
  if (l.first_stage_layers && off > 0 && (size_t)off < sizeof l.spec)
    off += snprintf(l.spec + off, sizeof l.spec - (size_t)off, ",first_stage_layers=%d",
                    l.first_stage_layers);
  if (l.last_stage_layers && off > 0 && (size_t)off < sizeof l.spec)
    off += snprintf(l.spec + off, sizeof l.spec - (size_t)off, ",last_stage_layers=%d",
                    l.last_stage_layers);
  /* only when set, so that layouts without it keep their canonical spec */
  if (l.tp_overlap && off > 0 && (size_t)off < sizeof l.spec)
    snprintf(l.spec + off, sizeof l.spec - (size_t)off, ",tp_overlap=1");
  *out = l;
#undef ERR
  return ST_OK;
}

int wl_layout_stage_layers(const wl_layout *l, const wl_model *m, int s)
{
  if (!l->first_stage_layers && !l->last_stage_layers)
    return m->layers / l->pp;
  if (s == 0 && l->first_stage_layers)
    return l->first_stage_layers;
  if (s == l->pp - 1 && l->last_stage_layers)
    return l->last_stage_layers;
  int fixed = (l->first_stage_layers ? 1 : 0) + (l->last_stage_layers ? 1 : 0);
  return (m->layers - l->first_stage_layers - l->last_stage_layers) / (l->pp - fixed);
}

void wl__chunk_layers(const wl_layout *l, const wl_model *m, int stage, int chunk, int *first,
                      int *count)
{
  int f = 0;
  for (int vs = 0; vs < chunk * l->pp + stage; vs++)
    f += wl_layout_stage_layers(l, m, vs % l->pp) / l->vpp;
  *first = f;
  *count = wl_layout_stage_layers(l, m, stage) / l->vpp;
}

wl__unit *wl__schedule(const wl_layout *l, int s, int *n)
{
  int m = l->num_microbatches, p = l->pp, v = l->vpp;
  int total = m * v;
  wl__unit *u = malloc(sizeof *u * (size_t)(2 * total));
  if (!u)
    return NULL;
  int k = 0;
  if (l->schedule == WL_SCHED_GPIPE) {
    for (int i = 0; i < m; i++)
      u[k++] = (wl__unit){1, i, 0};
    for (int i = m - 1; i >= 0; i--)
      u[k++] = (wl__unit){0, i, 0};
  } else if (l->schedule == WL_SCHED_1F1B) {
    int warm = p - s - 1 < m ? p - s - 1 : m;
    for (int i = 0; i < warm; i++)
      u[k++] = (wl__unit){1, i, 0};
    for (int i = 0; i < m - warm; i++) {
      u[k++] = (wl__unit){1, warm + i, 0};
      u[k++] = (wl__unit){0, i, 0};
    }
    for (int i = m - warm; i < m; i++)
      u[k++] = (wl__unit){0, i, 0};
  } else {
    int warm;
    if (m == p)
      warm = total; /* Megatron: all_warmup_microbatches */
    else {
      warm = (p - s - 1) * 2 + (v - 1) * p;
      if (warm > total)
        warm = total;
    }
#define CHUNK(kk, fwd) ((fwd) ? ((kk) % (p * v)) / p : v - 1 - ((kk) % (p * v)) / p)
#define MB(kk) (((kk) / (p * v)) * p + (kk) % p)
    for (int i = 0; i < warm; i++)
      u[k++] = (wl__unit){1, MB(i), CHUNK(i, 1)};
    for (int i = 0; i < total - warm; i++) {
      u[k++] = (wl__unit){1, MB(warm + i), CHUNK(warm + i, 1)};
      u[k++] = (wl__unit){0, MB(i), CHUNK(i, 0)};
    }
    for (int i = total - warm; i < total; i++)
      u[k++] = (wl__unit){0, MB(i), CHUNK(i, 0)};
#undef CHUNK
#undef MB
  }
  *n = k;
  return u;
}

int wl__max_inflight_chunks(const wl_layout *l, int stage)
{
  int n = 0;
  wl__unit *u = wl__schedule(l, stage, &n);
  if (!u)
    return l->num_microbatches * l->vpp;
  int cur = 0, best = 0;
  for (int i = 0; i < n; i++) {
    cur += u[i].fwd ? 1 : -1;
    if (cur > best)
      best = cur;
  }
  free(u);
  return best;
}
