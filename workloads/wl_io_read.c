/* wl_io_read.c — the on-disk form of a workload, reading: (gzip-compressed)
 * JSON.
 *
 * The format is documented for people and other tools in
 * docs/workload-format.md; this file is its only reader (wl_io_write.c its
 * only writer).
 *
 * Reading: cJSON builds the tree; the reader walks it once, in dependency
 * order (roles and streams before the ops that name them), so producers may
 * write keys in any order.  Every value is validated where it is read, and the
 * error names the file and the JSON path of the bad value; unknown and
 * duplicate keys are errors.  The checks are base's JSON reader (st_jrd_*,
 * st_common.h), shared with cluster and model specs.  Finally
 * wl_workload_check() checks what spans the whole workload.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_io_int.h"
#include "workload.h"

/* What a few bytes may ask for (docs/workload-format.md, "Limits"): ranks
 * (ST_RANKS_MAX), roles, and the rank map of ranks x roles entries, checked
 * before the rank map is allocated. */
#define WL_MAX_ROLES 1024
#define WL_MAX_RANK_MAP (1L << 25)

/* The reader: the shared checks of st_common.h (st_jrd_*) with the workload
 * being built and scratch reused from op to op. */
typedef struct rd {
  st_jrd j; /* subject "workload '<what>'" */
  char subject[ST_ERR_MSG_MAX];
  const char *what;
  wl_workload *wl;
  uint32_t *waits;
  size_t cap_waits;
  double *splits;
  size_t cap_splits;
} rd;

/* ---- meta ------------------------------------------------------------------ */
enum { M_MODEL, M_LAYOUT, M_SOURCE, M_TOKENS, M_MFLOPS, M_HWFLOPS, M_PEAKMEM, M_DTYPE, M_ITER,
       M_COUNT };
static const char *const meta_keys[M_COUNT] = {
    "model",           "layout",          "source", "tokens_per_step", "model_flops_per_step",
    "hw_flops_per_step", "peak_memory_bytes", "dtype",  "iterations"};

static int rd_meta(rd *r, const cJSON *obj)
{
  st_jpath at = {NULL, "meta", 0};
  const cJSON *s[M_COUNT];
  if (st_jrd_members(&r->j, &at, obj, meta_keys, M_COUNT, s))
    return ST_EINPUT;
  wl_meta *m = &r->wl->meta;
  char **strs[3] = {&m->model, &m->layout, &m->source};
  for (int i = M_MODEL; i <= M_SOURCE; i++) {
    const char *v = NULL;
    if (!s[i] || cJSON_IsNull(s[i]))
      continue;
    if (st_jrd_string(&r->j, &at, s[i], &v))
      return ST_EINPUT;
    if (wl_meta_set_str(strs[i - M_MODEL], v))
      return st_jrd_oom(&r->j);
  }
  double *nums[4] = {&m->tokens_per_step, &m->model_flops_per_step, &m->hw_flops_per_step,
                     &m->peak_memory_bytes};
  for (int i = M_TOKENS; i <= M_PEAKMEM; i++)
    if (s[i] && !cJSON_IsNull(s[i]) && st_jrd_size(&r->j, &at, s[i], nums[i - M_TOKENS]))
      return ST_EINPUT;
  if (s[M_DTYPE] && st_jrd_enum(&r->j, &at, s[M_DTYPE], wl_dtype_from_name, wl_dtype_name,
                                WL_DTYPE_COUNT, &m->dtype))
    return ST_EINPUT;
  long it = 1;
  if (s[M_ITER]) {
    if (st_jrd_int(&r->j, &at, s[M_ITER], 1, INT32_MAX, &it))
      return ST_EINPUT;
    m->iterations = (int)it;
  }
  return ST_OK;
}

/* ---- communicators --------------------------------------------------------- */
enum { C_NAME, C_KIND, C_RANKS, C_COUNT };
static const char *const comm_keys[C_COUNT] = {"name", "kind", "ranks"};

static int rd_comms(rd *r, const cJSON *arr)
{
  st_jpath top = {NULL, "communicators", 0};
  if (!cJSON_IsArray(arr))
    return st_jrd_fail(&r->j, NULL, "'communicators' is %s, expected an array",
                       st_json_type_name(arr));
  wl_workload *wl = r->wl;
  int32_t *ranks = NULL;
  int32_t *seen = calloc((size_t)wl->num_ranks, sizeof *seen); /* member index + 1, per rank */
  if (!seen)
    return st_jrd_oom(&r->j);
  int rc = ST_OK;
  long ci = 0;
  for (const cJSON *c = arr->child; c && !rc; c = c->next, ci++) {
    st_jpath at = {&top, NULL, ci};
    const cJSON *s[C_COUNT];
    if ((rc = st_jrd_members(&r->j, &at, c, comm_keys, C_COUNT, s)))
      break;
    const char *name = "";
    int kind = WL_COMM_OTHER;
    if (s[C_NAME] && (rc = st_jrd_string(&r->j, &at, s[C_NAME], &name)))
      break;
    if (s[C_KIND] && (rc = st_jrd_enum(&r->j, &at, s[C_KIND], wl_comm_kind_from_name,
                                       wl_comm_kind_name, WL_COMM_KIND_COUNT, &kind)))
      break;
    if (!s[C_RANKS]) {
      rc = st_jrd_missing(&r->j, &at, "ranks");
      break;
    }
    if (!cJSON_IsArray(s[C_RANKS])) {
      rc = st_jrd_fail(&r->j, &at, "'ranks' is %s, expected an array",
                       st_json_type_name(s[C_RANKS]));
      break;
    }
    int n = cJSON_GetArraySize(s[C_RANKS]);
    if (n == 0) {
      rc = st_jrd_fail(&r->j, &at, "'ranks' is empty");
      break;
    }
    if (n > wl->num_ranks) {
      rc = st_jrd_fail(&r->j, &at, "'ranks' has %d entries, more than the %d ranks of the workload",
                       n, wl->num_ranks);
      break;
    }
    int32_t *nr = realloc(ranks, (size_t)n * sizeof *ranks);
    if (!nr) {
      rc = st_jrd_oom(&r->j);
      break;
    }
    ranks = nr;
    st_jpath rp = {&at, "ranks", 0};
    long i = 0;
    for (const cJSON *e = s[C_RANKS]->child; e; e = e->next, i++) {
      st_jpath ep = {&rp, NULL, i};
      long v = 0;
      if ((rc = st_jrd_elem_int(&r->j, &ep, e, "rank", 0, wl->num_ranks - 1, &v)))
        break;
      ranks[i] = (int32_t)v;
    }
    if (rc)
      break;
    /* duplicates: mark, then unmark, so seen[] stays all-zero between communicators */
    for (long j = 0; j < n && !rc; j++) {
      if (seen[ranks[j]] == 0) {
        seen[ranks[j]] = (int32_t)j + 1;
        continue;
      }
      st_jpath ep = {&rp, NULL, j};
      rc = st_jrd_fail(&r->j, &ep, "rank %d appears twice (also at ranks[%d])", ranks[j],
                       seen[ranks[j]] - 1);
    }
    for (long j = 0; j < n; j++)
      seen[ranks[j]] = 0;
    if (rc)
      break;
    int idx = wl_comm_add(wl, name, kind, n, ranks);
    if (idx < 0)
      rc = st_jrd_oom(&r->j);
  }
  free(ranks);
  free(seen);
  return rc;
}

/* ---- ops ------------------------------------------------------------------- */
enum {
  K_OP, K_STREAM, K_NAME, K_PHASE, K_WAITS, K_RECOMPUTE, /* any kind (recompute: not markers) */
  K_CLASS, K_DURATION, K_FLOPS, K_M, K_N, K_K, K_BATCH, K_DTYPE, /* compute */
  K_BYTES,                                                      /* compute, coll, send, recv */
  K_COLL, K_ROLE, K_ROOT, K_SPLITS, K_PEER, K_TAG,              /* communication */
  K_MARK, K_VALUE,                                              /* marker */
  K_CONCURRENT,                                                 /* compute (GEMM) */
  K_CAUSAL,                                                     /* compute (attention) */
  K_HOST,                                                       /* compute (on the CPUs) */
  K_ATTN_IMPL,                                                  /* compute (attention) */
  K_DIR,                                                        /* copy */
  K_UNFUSED,                                                    /* compute (attention) */
  K_DROPOUT,                                                    /* compute (attention) */
  K_WINDOW,                                                     /* compute (attention) */
  K_PYTORCH,                                                    /* compute (gemm) */
  K_TOPK, K_EXPERTS,                                            /* coll (alltoall) */
  K_COUNT
};
static const char *const op_keys[K_COUNT] = {
    "op",    "stream", "name",  "phase", "waits", "recompute", "class", "duration_s",
    "flops", "m",      "n",     "k",     "batch", "dtype",     "bytes", "coll",
    "role",  "root",   "splits", "peer", "tag",   "mark",      "value", "concurrent",
    "causal", "host",  "attn_impl", "dir", "unfused_attn", "dropout",
    "window", "pytorch", "topk", "experts"};

#define KB(k) ((uint64_t)1 << (k))
#define K_ANY (KB(K_OP) | KB(K_STREAM) | KB(K_NAME) | KB(K_PHASE) | KB(K_WAITS))
/* Keys each op kind accepts (root and splits are narrowed further by the collective). */
static const uint64_t op_kind_keys[WL_OP_KIND_COUNT] = {
    [WL_OP_COMPUTE] = K_ANY | KB(K_RECOMPUTE) | KB(K_CLASS) | KB(K_DURATION) | KB(K_FLOPS) |
                      KB(K_M) | KB(K_N) | KB(K_K) | KB(K_BATCH) | KB(K_DTYPE) | KB(K_BYTES) |
                      KB(K_CONCURRENT) | KB(K_CAUSAL) | KB(K_HOST) | KB(K_ATTN_IMPL) |
                      KB(K_UNFUSED) | KB(K_DROPOUT) | KB(K_WINDOW) | KB(K_PYTORCH),
    [WL_OP_COLL] = K_ANY | KB(K_RECOMPUTE) | KB(K_COLL) | KB(K_ROLE) | KB(K_ROOT) | KB(K_SPLITS) |
                   KB(K_BYTES) | KB(K_TOPK) | KB(K_EXPERTS),
    [WL_OP_SEND] = K_ANY | KB(K_RECOMPUTE) | KB(K_ROLE) | KB(K_PEER) | KB(K_TAG) | KB(K_BYTES),
    [WL_OP_RECV] = K_ANY | KB(K_RECOMPUTE) | KB(K_ROLE) | KB(K_PEER) | KB(K_TAG) | KB(K_BYTES),
    [WL_OP_MARKER] = K_ANY | KB(K_MARK) | KB(K_VALUE),
    [WL_OP_COPY] = K_ANY | KB(K_DIR) | KB(K_BYTES),
};

static int kind_from_name(const char *s)
{
  for (int k = 0; k < WL_OP_KIND_COUNT; k++)
    if (strcmp(s, wl_op_kind_name(k)) == 0)
      return k;
  return -1;
}

/* Per-program note of an all-to-all-v op's split count, checked against the
 * communicators once the rank map is known. */
typedef struct split_note {
  uint32_t op;
  int32_t role;
  uint32_t count;
} split_note;

typedef struct prog_notes {
  split_note *v;
  size_t n, cap;
} prog_notes;

static int rd_stream(rd *r, const st_jpath *at, const cJSON *v, const wl_program *p, int *out)
{
  if (cJSON_IsString(v)) {
    int found = -1;
    for (int s = 0; s < p->num_streams; s++)
      if (strcmp(p->stream_names[s], v->valuestring) == 0) {
        if (found >= 0)
          return st_jrd_fail(&r->j, at,
                             "'stream' is '%s', the name of streams %d and %d; use the index",
                             v->valuestring, found, s);
        found = s;
      }
    if (found < 0)
      return st_jrd_fail(&r->j, at, "'stream' is '%s', not a stream of this program",
                         v->valuestring);
    *out = found;
    return ST_OK;
  }
  long idx;
  if (!cJSON_IsNumber(v))
    return st_jrd_fail(&r->j, at, "'stream' is %s, expected a stream name or index",
                       st_json_type_name(v));
  if (st_jrd_int(&r->j, at, v, 0, p->num_streams - 1, &idx))
    return ST_EINPUT;
  *out = (int)idx;
  return ST_OK;
}

static int rd_role(rd *r, const st_jpath *at, const cJSON *v, int *out)
{
  const char *s = "";
  if (st_jrd_string(&r->j, at, v, &s))
    return ST_EINPUT;
  for (int i = 0; i < r->wl->num_roles; i++)
    if (strcmp(r->wl->roles[i], s) == 0) {
      *out = i;
      return ST_OK;
    }
  return st_jrd_fail(&r->j, at, "'role' is '%s', not one of the workload's roles", s);
}

/* The keys of a compute op beyond those every op has, into *op. */
/* A boolean op key (present or not) that sets a WL_OPF_* flag when true. */
static int rd_flag(rd *r, const st_jpath *at, const cJSON *v, unsigned flag, wl_op *op)
{
  int yes = 0;
  if (!v)
    return ST_OK;
  if (st_jrd_bool(&r->j, at, v, &yes))
    return ST_EINPUT;
  if (yes)
    op->flags |= (uint16_t)flag;
  return ST_OK;
}

static int rd_op_compute(rd *r, const st_jpath *at, const cJSON *const *s, wl_op *op)
{
  int e = 0;
  long v = 0;
  if (s[K_CLASS]) {
    if (st_jrd_enum(&r->j, at, s[K_CLASS], wl_class_from_name, wl_class_name, WL_CLASS_COUNT, &e))
      return ST_EINPUT;
    op->sub = (uint8_t)e;
  }
  if (s[K_DURATION] && st_jrd_size(&r->j, at, s[K_DURATION], &op->duration_s))
    return ST_EINPUT;
  if (s[K_FLOPS] && st_jrd_size(&r->j, at, s[K_FLOPS], &op->flops))
    return ST_EINPUT;
  int32_t *dims[3] = {&op->m, &op->n, &op->k};
  for (int i = 0; i < 3; i++)
    if (s[K_M + i]) {
      if (st_jrd_int(&r->j, at, s[K_M + i], 0, INT32_MAX, &v))
        return ST_EINPUT;
      *dims[i] = (int32_t)v;
    }
  if (s[K_BATCH]) {
    if (st_jrd_int(&r->j, at, s[K_BATCH], 1, INT32_MAX, &v))
      return ST_EINPUT;
    op->batch = (int32_t)v;
  }
  if (s[K_CONCURRENT]) {
    if (st_jrd_int(&r->j, at, s[K_CONCURRENT], 1, 255, &v))
      return ST_EINPUT;
    op->concurrent = (uint8_t)v;
  }
  if (s[K_DTYPE]) {
    if (st_jrd_enum(&r->j, at, s[K_DTYPE], wl_dtype_from_name, wl_dtype_name, WL_DTYPE_COUNT, &e))
      return ST_EINPUT;
    op->dtype = (uint8_t)e;
  }
  if (rd_flag(r, at, s[K_CAUSAL], WL_OPF_CAUSAL, op))
    return ST_EINPUT;
  if (s[K_ATTN_IMPL]) {
    if (st_jrd_enum(&r->j, at, s[K_ATTN_IMPL], wl_attn_impl_from_name, wl_attn_impl_name,
                    WL_ATTN_COUNT, &e))
      return ST_EINPUT;
    op->flags = wl_flags_with_attn(op->flags, e);
  }
  if (s[K_UNFUSED]) {
    if (st_jrd_enum(&r->j, at, s[K_UNFUSED], wl_unfused_pass_from_name, wl_unfused_pass_name, 2,
                    &e))
      return ST_EINPUT;
    op->flags |= WL_OPF_UNFUSED | (e ? WL_OPF_BWD : 0);
  }
  if (rd_flag(r, at, s[K_DROPOUT], WL_OPF_DROPOUT, op))
    return ST_EINPUT;
  if (rd_flag(r, at, s[K_WINDOW], WL_OPF_WINDOW, op))
    return ST_EINPUT;
  if (rd_flag(r, at, s[K_PYTORCH], WL_OPF_TORCH, op))
    return ST_EINPUT;
  if ((op->flags & WL_OPF_TORCH) && op->sub != WL_CLASS_GEMM)
    return st_jrd_fail(&r->j, at, "'pytorch' needs class 'gemm' (it names who dispatches a GEMM)");
  if (rd_flag(r, at, s[K_HOST], WL_OPF_HOST, op))
    return ST_EINPUT;
  if ((op->flags & WL_OPF_WINDOW) && (op->sub != WL_CLASS_ATTENTION || op->n <= 0))
    return st_jrd_fail(&r->j, at,
                       "'window' needs class 'attention' and 'n' > 0 (the keys each query "
                       "attends to)");
  if ((op->flags & WL_OPF_HOST) && !s[K_DURATION] &&
      !(op->sub == WL_CLASS_OPTIMIZER && op->flops > 0))
    return st_jrd_fail(&r->j, at,
                       "a host op needs 'duration_s', or class 'optimizer' with 'flops' (priced "
                       "at the platform's host Adam rate)");
  if (!s[K_DURATION] && !(op->flops > 0) && !(op->bytes > 0))
    return st_jrd_fail(&r->j, at,
                       "a compute op needs 'duration_s', or 'flops'/'bytes' for the "
                       "compute model");
  return ST_OK;
}

/* An alltoall's "splits" (bytes per destination), kept in the program and
 * noted for the check against the group's size. */
static int rd_op_splits(rd *r, const st_jpath *at, const cJSON *a, wl_program *p, size_t index,
                        prog_notes *notes, wl_op *op)
{
  if (!cJSON_IsArray(a))
    return st_jrd_fail(&r->j, at, "'splits' is %s, expected an array", st_json_type_name(a));
  int n = cJSON_GetArraySize(a);
  if (n == 0)
    return st_jrd_fail(&r->j, at, "'splits' is empty");
  if ((size_t)n > r->cap_splits) {
    double *ns = realloc(r->splits, (size_t)n * sizeof *ns);
    if (!ns)
      return st_jrd_oom(&r->j);
    r->splits = ns;
    r->cap_splits = (size_t)n;
  }
  st_jpath sp = {at, "splits", 0};
  long i = 0;
  for (const cJSON *x = a->child; x; x = x->next, i++) {
    st_jpath ep = {&sp, NULL, i};
    if (st_jrd_bytes(&r->j, &ep, x, &r->splits[i]))
      return ST_EINPUT;
  }
  uint32_t first = wl_program_splits(p, r->splits, n);
  if (first == UINT32_MAX)
    return st_jrd_oom(&r->j);
  op->split_first = first;
  op->flags |= WL_OPF_SPLITS;
  if (notes->n == notes->cap) {
    size_t cap = notes->cap ? 2 * notes->cap : 8;
    split_note *nv = realloc(notes->v, cap * sizeof *nv);
    if (!nv)
      return st_jrd_oom(&r->j);
    notes->v = nv;
    notes->cap = cap;
  }
  notes->v[notes->n++] = (split_note){(uint32_t)index, op->role, (uint32_t)n};
  return ST_OK;
}

/* The keys of a collective, send or receive beyond those every op has. */
static int rd_op_comm(rd *r, const st_jpath *at, const cJSON *const *s, int kind, wl_program *p,
                      size_t index, prog_notes *notes, wl_op *op)
{
  int e = 0;
  long v = 0;
  if (kind == WL_OP_COLL) {
    if (!s[K_COLL])
      return st_jrd_missing(&r->j, at, "coll");
    if (st_jrd_enum(&r->j, at, s[K_COLL], wl_coll_from_name, wl_coll_name, WL_COLL_COUNT, &e))
      return ST_EINPUT;
    op->sub = (uint8_t)e;
    if (s[K_ROOT] && e != WL_COLL_BROADCAST && e != WL_COLL_REDUCE)
      return st_jrd_fail(&r->j, at, "key 'root' applies only to broadcast and reduce");
    if (s[K_SPLITS] && e != WL_COLL_ALLTOALL)
      return st_jrd_fail(&r->j, at, "key 'splits' applies only to alltoall");
    if (s[K_TOPK] || s[K_EXPERTS]) { /* a deduplicating MoE dispatch (WL_OPF_DEDUP) */
      if (e != WL_COLL_ALLTOALL)
        return st_jrd_fail(&r->j, at, "keys 'topk' and 'experts' apply only to alltoall");
      if (s[K_SPLITS])
        return st_jrd_fail(&r->j, at, "keys 'topk' and 'experts' do not go with 'splits'");
      if (!s[K_TOPK] || !s[K_EXPERTS])
        return st_jrd_missing(&r->j, at, s[K_TOPK] ? "experts" : "topk");
      long nx = 0;
      if (st_jrd_int(&r->j, at, s[K_TOPK], 1, 1024, &v) ||
          st_jrd_int(&r->j, at, s[K_EXPERTS], 1, 65535, &nx))
        return ST_EINPUT;
      wl_op_set_dedup(op, (int)v, (int)nx);
    }
    if (e == WL_COLL_BROADCAST || e == WL_COLL_REDUCE) {
      op->peer = 0;
      if (s[K_ROOT]) {
        if (st_jrd_int(&r->j, at, s[K_ROOT], 0, INT32_MAX, &v))
          return ST_EINPUT;
        op->peer = (int32_t)v;
      }
    }
  } else {
    if (!s[K_PEER])
      return st_jrd_missing(&r->j, at, "peer");
    if (st_jrd_int(&r->j, at, s[K_PEER], 0, INT32_MAX, &v))
      return ST_EINPUT;
    op->peer = (int32_t)v;
    if (s[K_TAG]) {
      if (st_jrd_int(&r->j, at, s[K_TAG], INT32_MIN, INT32_MAX, &v))
        return ST_EINPUT;
      op->tag = (int32_t)v;
    }
  }
  if (!s[K_ROLE])
    return st_jrd_missing(&r->j, at, "role");
  if (rd_role(r, at, s[K_ROLE], &e))
    return ST_EINPUT;
  op->role = e;
  if (s[K_SPLITS])
    return rd_op_splits(r, at, s[K_SPLITS], p, index, notes, op);
  return ST_OK;
}

/* An op's "waits": ops of the same program before it, into r->waits. */
static int rd_op_waits(rd *r, const st_jpath *at, const cJSON *a, size_t index, uint32_t *out)
{
  uint32_t nw = 0;
  long v = 0;
  if (!cJSON_IsArray(a))
    return st_jrd_fail(&r->j, at, "'waits' is %s, expected an array", st_json_type_name(a));
  int n = cJSON_GetArraySize(a);
  if ((size_t)n > r->cap_waits) {
    uint32_t *nv = realloc(r->waits, (size_t)n * sizeof *nv);
    if (!nv)
      return st_jrd_oom(&r->j);
    r->waits = nv;
    r->cap_waits = (size_t)n;
  }
  st_jpath wp = {at, "waits", 0};
  for (const cJSON *x = a->child; x; x = x->next, nw++) {
    st_jpath ep = {&wp, NULL, (long)nw};
    if (st_jrd_elem_int(&r->j, &ep, x, "op", 0, INT32_MAX, &v))
      return ST_EINPUT;
    if ((size_t)v >= index)
      return st_jrd_fail(&r->j, &ep, "op %ld does not come before this op (%zu)", v, index);
    r->waits[nw] = (uint32_t)v;
  }
  *out = nw;
  return ST_OK;
}

static int rd_op(rd *r, const st_jpath *at, const cJSON *obj, wl_program *p, size_t index,
                 prog_notes *notes)
{
  const cJSON *s[K_COUNT];
  if (st_jrd_members(&r->j, at, obj, op_keys, K_COUNT, s))
    return ST_EINPUT;
  if (!s[K_OP])
    return st_jrd_missing(&r->j, at, "op");
  const char *ks = "";
  if (st_jrd_string(&r->j, at, s[K_OP], &ks))
    return ST_EINPUT;
  int kind = kind_from_name(ks);
  if (kind < 0)
    return st_jrd_fail(&r->j, at,
                       "'op' is '%s', expected one of compute, coll, send, recv, marker, copy", ks);
  uint64_t allowed = op_kind_keys[kind];
  for (int k = 0; k < K_COUNT; k++)
    if (s[k] && !(allowed & KB(k)))
      return st_jrd_fail(&r->j, at, "key '%s' does not apply to a '%s' op", op_keys[k], ks);

  wl_op op = wl_op_compute(0, -1.0); /* every field at its default */
  op.kind = (uint8_t)kind;
  int e = 0;
  long v = 0;
  const char *str = "";
  if (s[K_STREAM]) {
    if (rd_stream(r, at, s[K_STREAM], p, &e))
      return ST_EINPUT;
    op.stream = (uint16_t)e;
  }
  if (s[K_NAME]) {
    if (st_jrd_string(&r->j, at, s[K_NAME], &str))
      return ST_EINPUT;
    op.name = wl_program_string(p, str);
    if (str[0] && !op.name)
      return st_jrd_oom(&r->j);
  }
  if (s[K_PHASE]) {
    if (st_jrd_enum(&r->j, at, s[K_PHASE], wl_phase_from_name, wl_phase_name, WL_PHASE_COUNT, &e))
      return ST_EINPUT;
    op.phase = (uint8_t)e;
  }
  int yes = 0, rc = ST_OK;
  if (s[K_RECOMPUTE]) {
    if (st_jrd_bool(&r->j, at, s[K_RECOMPUTE], &yes))
      return ST_EINPUT;
    if (yes)
      op.flags |= WL_OPF_RECOMPUTE;
  }
  if (s[K_BYTES] && st_jrd_bytes(&r->j, at, s[K_BYTES], &op.bytes))
    return ST_EINPUT;

  switch (kind) {
  case WL_OP_COMPUTE:
    if ((rc = rd_op_compute(r, at, s, &op)) != ST_OK)
      return rc;
    break;
  case WL_OP_COLL:
  case WL_OP_SEND:
  case WL_OP_RECV:
    if ((rc = rd_op_comm(r, at, s, kind, p, index, notes, &op)) != ST_OK)
      return rc;
    break;
  case WL_OP_MARKER:
    if (!s[K_MARK])
      return st_jrd_missing(&r->j, at, "mark");
    if (st_jrd_enum(&r->j, at, s[K_MARK], wl_marker_from_name, wl_marker_name, WL_MARK_COUNT, &e))
      return ST_EINPUT;
    op.sub = (uint8_t)e;
    if (s[K_VALUE]) {
      if (st_jrd_int(&r->j, at, s[K_VALUE], INT32_MIN, INT32_MAX, &v))
        return ST_EINPUT;
      op.tag = (int32_t)v;
    }
    break;
  case WL_OP_COPY:
    if (!s[K_DIR])
      return st_jrd_missing(&r->j, at, "dir");
    if (st_jrd_enum(&r->j, at, s[K_DIR], wl_copy_dir_from_name, wl_copy_dir_name,
                    WL_COPY_DIR_COUNT, &e))
      return ST_EINPUT;
    op.sub = (uint8_t)e;
    break;
  }

  uint32_t nw = 0;
  if (s[K_WAITS] && (rc = rd_op_waits(r, at, s[K_WAITS], index, &nw)) != ST_OK)
    return rc;
  if (wl_program_append(p, &op, r->waits, nw) < 0)
    return st_jrd_oom(&r->j);
  return ST_OK;
}

/* ---- programs -------------------------------------------------------------- */
enum { P_NAME, P_STREAMS, P_OPS, P_COUNT };
static const char *const prog_keys[P_COUNT] = {"name", "streams", "ops"};

static int rd_program(rd *r, const st_jpath *at, const cJSON *obj, prog_notes *notes)
{
  const cJSON *s[P_COUNT];
  if (st_jrd_members(&r->j, at, obj, prog_keys, P_COUNT, s))
    return ST_EINPUT;
  const char *name = "";
  if (s[P_NAME] && st_jrd_string(&r->j, at, s[P_NAME], &name))
    return ST_EINPUT;
  if (!s[P_STREAMS])
    return st_jrd_missing(&r->j, at, "streams");
  if (!s[P_OPS])
    return st_jrd_missing(&r->j, at, "ops");
  const cJSON *sa = s[P_STREAMS];
  if (!cJSON_IsArray(sa))
    return st_jrd_fail(&r->j, at, "'streams' is %s, expected an array", st_json_type_name(sa));
  int ns = cJSON_GetArraySize(sa);
  if (ns < 1 || ns > UINT16_MAX)
    return st_jrd_fail(&r->j, at, "'streams' has %d names, expected 1..%d", ns, UINT16_MAX);
  const char **names = malloc((size_t)ns * sizeof *names);
  if (!names)
    return st_jrd_oom(&r->j);
  st_jpath sp = {at, "streams", 0};
  int i = 0;
  for (const cJSON *x = sa->child; x; x = x->next, i++) {
    if (!cJSON_IsString(x) || !x->valuestring[0]) {
      st_jpath ep = {&sp, NULL, i};
      free(names);
      return st_jrd_fail(&r->j, &ep, "is %s, expected a stream name",
                         cJSON_IsString(x) ? "empty" : st_json_type_name(x));
    }
    names[i] = x->valuestring;
  }
  int pi = wl_program_add(r->wl, name, ns, names);
  free(names);
  if (pi < 0)
    return st_jrd_oom(&r->j);
  const cJSON *oa = s[P_OPS];
  if (!cJSON_IsArray(oa))
    return st_jrd_fail(&r->j, at, "'ops' is %s, expected an array", st_json_type_name(oa));
  wl_program *p = &r->wl->programs[pi];
  st_jpath op_at = {at, "ops", 0};
  size_t oi = 0;
  for (const cJSON *x = oa->child; x; x = x->next, oi++) {
    st_jpath ep = {&op_at, NULL, (long)oi};
    if (rd_op(r, &ep, x, p, oi, notes))
      return ST_EINPUT;
  }
  return ST_OK;
}

/* ---- rank map -------------------------------------------------------------- */
enum { R_PROGRAM, R_COMMS, R_COUNT };
static const char *const rmap_keys[R_COUNT] = {"program", "comms"};

/* A per-rank column: one integer for all ranks, or an array of num_ranks
 * integers, each in lo..hi.  out has a stride (roles interleave). */
static int rd_column(rd *r, const st_jpath *at, const char *key, const cJSON *v, const char *noun,
                     long lo, long hi, int32_t *out, size_t stride)
{
  int nr = r->wl->num_ranks;
  long x = 0;
  if (cJSON_IsNumber(v)) {
    if (st_jrd_int(&r->j, at, v, lo, hi, &x))
      return ST_EINPUT;
    for (int i = 0; i < nr; i++)
      out[(size_t)i * stride] = (int32_t)x;
    return ST_OK;
  }
  if (!cJSON_IsArray(v))
    return st_jrd_fail(&r->j, at, "'%s' is %s, expected an integer or an array of one per rank",
                       key, st_json_type_name(v));
  int n = cJSON_GetArraySize(v);
  if (n != nr)
    return st_jrd_fail(&r->j, at, "'%s' has %d entries, expected %d (one per rank) or one integer",
                       key, n, nr);
  st_jpath cp = {at, key, 0};
  int i = 0;
  for (const cJSON *e = v->child; e; e = e->next, i++) {
    st_jpath ep = {&cp, NULL, i};
    if (st_jrd_elem_int(&r->j, &ep, e, noun, lo, hi, &x))
      return ST_EINPUT;
    out[(size_t)i * stride] = (int32_t)x;
  }
  return ST_OK;
}

static int rd_rank_map(rd *r, const cJSON *obj)
{
  wl_workload *wl = r->wl;
  st_jpath at = {NULL, "rank_map", 0};
  const cJSON *s[R_COUNT];
  if (st_jrd_members(&r->j, &at, obj, rmap_keys, R_COUNT, s))
    return ST_EINPUT;
  if (!s[R_PROGRAM])
    return st_jrd_missing(&r->j, &at, "program");
  if (rd_column(r, &at, "program", s[R_PROGRAM], "program", 0, wl->num_programs - 1,
                wl->rank_program, 1))
    return ST_EINPUT;
  if (!s[R_COMMS])
    return ST_OK; /* no role is played */
  const cJSON *cm = s[R_COMMS];
  st_jpath cp = {&at, "comms", 0};
  if (!cJSON_IsObject(cm))
    return st_jrd_fail(&r->j, &at, "'comms' is %s, expected an object", st_json_type_name(cm));
  unsigned char *done = calloc((size_t)wl->num_roles + 1, 1);
  if (!done)
    return st_jrd_oom(&r->j);
  for (const cJSON *m = cm->child; m; m = m->next) {
    int role = -1;
    for (int i = 0; i < wl->num_roles && role < 0; i++)
      if (strcmp(wl->roles[i], m->string) == 0)
        role = i;
    if (role < 0 || done[role]) {
      free(done);
      return st_jrd_fail(&r->j, &cp,
                         role < 0 ? "key '%s' is unknown (not a role)" : "key '%s' appears twice",
                         m->string);
    }
    done[role] = 1;
    if (rd_column(r, &cp, m->string, m, "communicator", -1, wl->num_comms - 1,
                  wl->rank_comm + role, (size_t)wl->num_roles)) {
      free(done);
      return ST_EINPUT;
    }
  }
  free(done);
  return ST_OK;
}

/* Every all-to-all-v op lists one size per member of the communicator that
 * plays its role, for every rank running its program. */
static int rd_check_splits(rd *r, const prog_notes *notes)
{
  wl_workload *wl = r->wl;
  for (int rank = 0; rank < wl->num_ranks; rank++) {
    int pi = wl->rank_program[rank];
    const prog_notes *pn = &notes[pi];
    for (size_t i = 0; i < pn->n; i++) {
      int c = wl_rank_comm(wl, rank, pn->v[i].role);
      if (c < 0 || (uint32_t)wl->comms[c].size == pn->v[i].count)
        continue; /* a missing communicator is wl_workload_check's to report */
      st_jpath top = {NULL, "programs", 0};
      st_jpath pp = {&top, NULL, pi};
      st_jpath ops = {&pp, "ops", 0};
      st_jpath op = {&ops, NULL, (long)pn->v[i].op};
      return st_jrd_fail(&r->j, &op,
                         "'splits' has %u entries, but communicator '%s' (role '%s' of rank %d) "
                         "has %d members",
                         pn->v[i].count, wl->comms[c].name, wl->roles[pn->v[i].role], rank,
                         wl->comms[c].size);
    }
  }
  return ST_OK;
}

enum { T_FORMAT, T_VERSION, T_RANKS, T_ROLES, T_META, T_COMMS, T_PROGRAMS, T_RMAP, T_COUNT };
static const char *const top_keys[T_COUNT] = {"format", "version",  "num_ranks", "roles",
                                              "meta",   "communicators", "programs", "rank_map"};

static int rd_document(rd *r, const cJSON *root, wl_workload **out)
{
  const cJSON *s[T_COUNT];
  if (st_jrd_members(&r->j, NULL, root, top_keys, T_COUNT, s))
    return ST_EINPUT;
  static const int required[] = {T_FORMAT, T_VERSION, T_RANKS, T_PROGRAMS, T_RMAP};
  for (size_t i = 0; i < sizeof required / sizeof *required; i++)
    if (!s[required[i]])
      return st_jrd_missing(&r->j, NULL, top_keys[required[i]]);
  const char *fmt = "";
  if (st_jrd_string(&r->j, NULL, s[T_FORMAT], &fmt))
    return ST_EINPUT;
  if (strcmp(fmt, WL_FORMAT_NAME) != 0)
    return st_jrd_fail(&r->j, NULL, "'format' is '%s', expected '%s'", fmt, WL_FORMAT_NAME);
  long version = 0, nranks = 0;
  if (st_jrd_int(&r->j, NULL, s[T_VERSION], 0, INT32_MAX, &version))
    return ST_EINPUT;
  if (version != WL_FORMAT_VERSION)
    return st_jrd_fail(&r->j, NULL, "'version' is %ld; this simtrain reads version %d", version,
                       WL_FORMAT_VERSION);
  if (st_jrd_int(&r->j, NULL, s[T_RANKS], 1, ST_RANKS_MAX, &nranks))
    return ST_EINPUT;

  /* roles */
  int nroles = 0;
  const char **roles = NULL;
  if (s[T_ROLES]) {
    const cJSON *a = s[T_ROLES];
    if (!cJSON_IsArray(a))
      return st_jrd_fail(&r->j, NULL, "'roles' is %s, expected an array", st_json_type_name(a));
    nroles = cJSON_GetArraySize(a);
    if (nroles > WL_MAX_ROLES)
      return st_jrd_fail(&r->j, NULL, "'roles' has %d roles, above the largest allowed %d", nroles,
                         WL_MAX_ROLES);
    roles = malloc(((size_t)nroles + 1) * sizeof *roles);
    if (!roles)
      return st_jrd_oom(&r->j);
    st_jpath rp = {NULL, "roles", 0};
    int i = 0;
    for (const cJSON *x = a->child; x; x = x->next, i++) {
      st_jpath ep = {&rp, NULL, i};
      int bad = !cJSON_IsString(x) || !x->valuestring[0];
      int dup = -1;
      for (int j = 0; j < i && !bad && dup < 0; j++)
        if (strcmp(roles[j], x->valuestring) == 0)
          dup = j;
      if (bad || dup >= 0) {
        free(roles);
        if (dup >= 0)
          return st_jrd_fail(&r->j, &ep, "role '%s' appears twice (also roles[%d])", x->valuestring,
                             dup);
        return st_jrd_fail(&r->j, &ep, "is %s, expected a role name",
                           cJSON_IsString(x) ? "empty" : st_json_type_name(x));
      }
      roles[i] = x->valuestring;
    }
  }
  if (nranks * nroles > WL_MAX_RANK_MAP) {
    free(roles);
    return st_jrd_fail(&r->j, NULL, "%ld ranks x %d roles is %ld rank map entries, above the "
                       "largest allowed %ld", nranks, nroles, nranks * nroles, WL_MAX_RANK_MAP);
  }
  r->wl = wl_workload_create((int)nranks, nroles, roles);
  free(roles);
  if (!r->wl)
    return st_jrd_oom(&r->j);

  if (s[T_META] && rd_meta(r, s[T_META]))
    return ST_EINPUT;
  int rc = s[T_COMMS] ? rd_comms(r, s[T_COMMS]) : ST_OK;
  if (rc)
    return rc;

  const cJSON *pa = s[T_PROGRAMS];
  if (!cJSON_IsArray(pa))
    return st_jrd_fail(&r->j, NULL, "'programs' is %s, expected an array", st_json_type_name(pa));
  int np = cJSON_GetArraySize(pa);
  if (np == 0)
    return st_jrd_fail(&r->j, NULL, "'programs' is empty");
  prog_notes *notes = calloc((size_t)np, sizeof *notes);
  if (!notes)
    return st_jrd_oom(&r->j);
  st_jpath top = {NULL, "programs", 0};
  int i = 0;
  for (const cJSON *x = pa->child; x && !rc; x = x->next, i++) {
    st_jpath ep = {&top, NULL, i};
    rc = rd_program(r, &ep, x, &notes[i]);
  }
  if (!rc)
    rc = rd_rank_map(r, s[T_RMAP]);
  if (!rc)
    rc = rd_check_splits(r, notes);
  for (int j = 0; j < np; j++)
    free(notes[j].v);
  free(notes);
  if (rc)
    return rc;

  st_err chk;
  st_err_clear(&chk);
  if (wl_workload_check(r->wl, &chk))
    return st_err_set(r->j.err, chk.code, "workload '%s': %s", r->what, chk.msg);
  *out = r->wl;
  r->wl = NULL;
  return ST_OK;
}

int wl_workload_parse(const char *json, size_t len, const char *what, wl_workload **out,
                      st_err *err)
{
  if (!what)
    what = "(memory)";
  st_err local;
  st_err_clear(&local);
  rd r = {.what = what};
  snprintf(r.subject, sizeof r.subject, "workload '%s'", what);
  r.j = (st_jrd){r.subject, NULL, err ? err : &local};
  cJSON *root = NULL;
  if (st_json_parse(json, len, r.subject, &root, err))
    return ST_EINPUT;
  int rc = rd_document(&r, root, out);
  cJSON_Delete(root);
  wl_workload_destroy(r.wl);
  free(r.waits);
  free(r.splits);
  return rc;
}

int wl_workload_read(const char *path, wl_workload **out, st_err *err)
{
  char *data = NULL;
  size_t len = 0;
  st_err e;
  st_err_clear(&e);
  int rc = st_file_read_all(path, &data, &len, &e);
  if (rc) {
    /* st_file_read_all says "cannot open 'p': why" or "'p': what"; make the
     * subject a workload. */
    char open_prefix[ST_ERR_MSG_MAX];
    snprintf(open_prefix, sizeof open_prefix, "cannot open '%s': ", path);
    size_t n = strlen(open_prefix);
    if (strncmp(e.msg, open_prefix, n) == 0)
      return st_err_set(err, rc, "cannot read workload '%s': %s", path, e.msg + n);
    if (e.msg[0] == '\'')
      return st_err_set(err, rc, "workload %s", e.msg);
    return st_err_set(err, rc, "%s", e.msg);
  }
  rc = wl_workload_parse(data, len, path, out, err);
  free(data);
  return rc;
}
