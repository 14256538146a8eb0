/* workload.c — building, naming and checking workloads (see workload.h). */
#include "workload.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- name tables ---------------------------------------------------------- */
static const char *const kind_names[WL_OP_KIND_COUNT] = {"compute", "coll", "send", "recv",
                                                         "marker",  "copy"};
static const char *const copy_dir_names[WL_COPY_DIR_COUNT] = {"d2h", "h2d"};
static const char *const coll_names[WL_COLL_COUNT] = {
    "allreduce", "allgather", "reducescatter", "broadcast",
    "reduce",    "alltoall",  "barrier",       "shift"};
static const char *const class_names[WL_CLASS_COUNT] = {
    "other", "gemm", "attention", "elementwise", "optimizer", "comm_kernel"};
static const char *const marker_names[WL_MARK_COUNT] = {"iteration", "phase", "layer",
                                                        "microbatch"};
static const char *const phase_names[WL_PHASE_COUNT] = {"none", "forward", "backward",
                                                        "optimizer"};
static const char *const comm_kind_names[WL_COMM_KIND_COUNT] = {"other", "tp", "pp", "dp",
                                                                "cp",    "ep", "world"};
static const char *const dtype_names[WL_DTYPE_COUNT] = {"fp32", "tf32", "bf16", "fp16", "fp8"};

static int lookup(const char *const *names, int n, const char *s)
{
  if (!s)
    return -1;
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], s) == 0)
      return i;
  return -1;
}

#define NAME_OF(tab, n, i) ((i) >= 0 && (i) < (n) ? (tab)[i] : "?")

const char *wl_op_kind_name(int k) { return NAME_OF(kind_names, WL_OP_KIND_COUNT, k); }
const char *wl_coll_name(int op) { return NAME_OF(coll_names, WL_COLL_COUNT, op); }
const char *wl_class_name(int c) { return NAME_OF(class_names, WL_CLASS_COUNT, c); }
const char *wl_marker_name(int k) { return NAME_OF(marker_names, WL_MARK_COUNT, k); }
const char *wl_phase_name(int p) { return NAME_OF(phase_names, WL_PHASE_COUNT, p); }
const char *wl_comm_kind_name(int k) { return NAME_OF(comm_kind_names, WL_COMM_KIND_COUNT, k); }
const char *wl_dtype_name(int d) { return NAME_OF(dtype_names, WL_DTYPE_COUNT, d); }
const char *wl_copy_dir_name(int d) { return NAME_OF(copy_dir_names, WL_COPY_DIR_COUNT, d); }
int wl_copy_dir_from_name(const char *s) { return lookup(copy_dir_names, WL_COPY_DIR_COUNT, s); }

int wl_coll_from_name(const char *name)
{
  if (!name)
    return -1;
  /* Accept "all_reduce", "all-reduce", "AllReduce", "reduce_scatter", "all_to_allv". */
  char norm[64];
  size_t j = 0;
  for (size_t i = 0; name[i] && j + 1 < sizeof norm; i++) {
    char c = name[i];
    if (c == '_' || c == '-' || c == ' ')
      continue;
    norm[j++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  norm[j] = '\0';
  if (strcmp(norm, "alltoallv") == 0 || strcmp(norm, "alltoallbase") == 0)
    return WL_COLL_ALLTOALL;
  if (strcmp(norm, "allgatherbase") == 0 || strcmp(norm, "allgatherintotensor") == 0)
    return WL_COLL_ALLGATHER;
  if (strcmp(norm, "reducescatterbase") == 0 || strcmp(norm, "reducescattertensor") == 0)
    return WL_COLL_REDUCESCATTER;
  return lookup(coll_names, WL_COLL_COUNT, norm);
}
int wl_class_from_name(const char *s) { return lookup(class_names, WL_CLASS_COUNT, s); }
int wl_marker_from_name(const char *s) { return lookup(marker_names, WL_MARK_COUNT, s); }
int wl_phase_from_name(const char *s) { return lookup(phase_names, WL_PHASE_COUNT, s); }
int wl_comm_kind_from_name(const char *s) { return lookup(comm_kind_names, WL_COMM_KIND_COUNT, s); }
int wl_dtype_from_name(const char *s) { return lookup(dtype_names, WL_DTYPE_COUNT, s); }

double wl_dtype_bytes(int d)
{
  switch (d) {
  case WL_DTYPE_FP32: case WL_DTYPE_TF32: return 4;
  case WL_DTYPE_BF16: case WL_DTYPE_FP16: return 2;
  case WL_DTYPE_FP8: return 1;
  default: return 4;
  }
}

/* ---- building ------------------------------------------------------------- */
wl_workload *wl_workload_create(int num_ranks, int num_roles, const char *const *role_names)
{
  if (num_ranks <= 0 || num_roles < 0)
    return NULL;
  wl_workload *wl = calloc(1, sizeof *wl);
  if (!wl)
    return NULL;
  wl->num_ranks = num_ranks;
  wl->num_roles = num_roles;
  wl->roles = calloc((size_t)num_roles + 1, sizeof *wl->roles);
  wl->rank_program = malloc((size_t)num_ranks * sizeof *wl->rank_program);
  wl->rank_comm = malloc(((size_t)num_ranks * num_roles + 1) * sizeof *wl->rank_comm);
  if (!wl->roles || !wl->rank_program || !wl->rank_comm) {
    wl_workload_destroy(wl);
    return NULL;
  }
  for (int i = 0; i < num_roles; i++) {
    wl->roles[i] = st_strdup(role_names ? role_names[i] : "");
    if (!wl->roles[i]) {
      wl_workload_destroy(wl);
      return NULL;
    }
  }
  for (int r = 0; r < num_ranks; r++)
    wl->rank_program[r] = -1;
  for (size_t i = 0; i < (size_t)num_ranks * num_roles; i++)
    wl->rank_comm[i] = -1;
  wl->meta.tokens_per_step = NAN;
  wl->meta.model_flops_per_step = NAN;
  wl->meta.hw_flops_per_step = NAN;
  wl->meta.peak_memory_bytes = NAN;
  wl->meta.dtype = WL_DTYPE_BF16;
  wl->meta.iterations = 1;
  return wl;
}

static void program_release(wl_program *p)
{
  free(p->name);
  for (int s = 0; s < p->num_streams; s++)
    free(p->stream_names[s]);
  free(p->stream_names);
  free(p->ops);
  free(p->waits);
  free(p->splits);
  free(p->strings);
}

void wl_workload_destroy(wl_workload *wl)
{
  if (!wl)
    return;
  if (wl->roles)
    for (int i = 0; i < wl->num_roles; i++)
      free(wl->roles[i]);
  free(wl->roles);
  for (int c = 0; c < wl->num_comms; c++) {
    free(wl->comms[c].name);
    free(wl->comms[c].ranks);
  }
  free(wl->comms);
  for (int p = 0; p < wl->num_programs; p++)
    program_release(&wl->programs[p]);
  free(wl->programs);
  free(wl->rank_program);
  free(wl->rank_comm);
  free(wl->meta.model);
  free(wl->meta.layout);
  free(wl->meta.source);
  free(wl);
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
  if (need <= *cap)
    return 0;
  size_t c = *cap ? *cap : 16;
  while (c < need)
    c *= 2;
  void *n = realloc(*arr, c * elem);
  if (!n)
    return -1;
  *arr = n;
  *cap = c;
  return 0;
}

int wl_comm_add(wl_workload *wl, const char *name, int kind, int size, const int32_t *ranks)
{
  if (size <= 0)
    return ST_EINPUT;
  size_t cap = (size_t)wl->cap_comms;
  if (grow((void **)&wl->comms, &cap, (size_t)wl->num_comms + 1, sizeof *wl->comms))
    return ST_ENOMEM;
  wl->cap_comms = (int)cap;
  wl_comm *c = &wl->comms[wl->num_comms];
  memset(c, 0, sizeof *c);
  c->name = st_strdup(name ? name : "");
  c->ranks = malloc((size_t)size * sizeof *c->ranks);
  if (!c->name || !c->ranks) {
    free(c->name);
    free(c->ranks);
    return ST_ENOMEM;
  }
  memcpy(c->ranks, ranks, (size_t)size * sizeof *c->ranks);
  c->kind = kind;
  c->size = size;
  return wl->num_comms++;
}

int wl_program_add(wl_workload *wl, const char *name, int num_streams,
                   const char *const *stream_names)
{
  if (num_streams <= 0 || num_streams > UINT16_MAX)
    return ST_EINPUT;
  size_t cap = (size_t)wl->cap_programs;
  if (grow((void **)&wl->programs, &cap, (size_t)wl->num_programs + 1, sizeof *wl->programs))
    return ST_ENOMEM;
  wl->cap_programs = (int)cap;
  wl_program *p = &wl->programs[wl->num_programs];
  memset(p, 0, sizeof *p);
  p->name = st_strdup(name ? name : "");
  p->stream_names = calloc((size_t)num_streams, sizeof *p->stream_names);
  if (!p->name || !p->stream_names) {
    program_release(p);
    return ST_ENOMEM;
  }
  p->num_streams = num_streams;
  for (int s = 0; s < num_streams; s++) {
    p->stream_names[s] = st_strdup(stream_names && stream_names[s] ? stream_names[s] : "stream");
    if (!p->stream_names[s]) {
      program_release(p);
      return ST_ENOMEM;
    }
  }
  /* offset 0 of the string pool is the empty name */
  if (grow((void **)&p->strings, &p->strings_cap, 1, 1)) {
    program_release(p);
    return ST_ENOMEM;
  }
  p->strings[0] = '\0';
  p->strings_len = 1;
  return wl->num_programs++;
}

long wl_program_append(wl_program *p, const wl_op *op, const uint32_t *waits, uint32_t n)
{
  if (grow((void **)&p->ops, &p->cap_ops, p->num_ops + 1, sizeof *p->ops))
    return ST_ENOMEM;
  if (n && grow((void **)&p->waits, &p->cap_waits, p->num_waits + n, sizeof *p->waits))
    return ST_ENOMEM;
  wl_op *o = &p->ops[p->num_ops];
  *o = *op;
  o->wait_first = (uint32_t)p->num_waits;
  o->wait_count = n;
  if (n) {
    memcpy(p->waits + p->num_waits, waits, n * sizeof *waits);
    p->num_waits += n;
  }
  return (long)p->num_ops++;
}

uint32_t wl_program_string(wl_program *p, const char *s)
{
  if (!s || !*s)
    return 0;
  /* Names repeat a lot (per layer, per micro-batch): look back over the last
   * few distinct names before adding.  A full hash is not worth it here. */
  size_t n = strlen(s) + 1;
  size_t scan_from = p->strings_len > 4096 ? p->strings_len - 4096 : 1;
  for (size_t off = scan_from; off < p->strings_len;) {
    size_t m = strlen(p->strings + off) + 1;
    if (m == n && memcmp(p->strings + off, s, n) == 0 &&
        (off == 1 || p->strings[off - 1] == '\0'))
      return (uint32_t)off;
    off += m;
  }
  if (grow((void **)&p->strings, &p->strings_cap, p->strings_len + n, 1))
    return 0;
  memcpy(p->strings + p->strings_len, s, n);
  uint32_t off = (uint32_t)p->strings_len;
  p->strings_len += n;
  return off;
}

uint32_t wl_program_splits(wl_program *p, const double *bytes, int n)
{
  if (grow((void **)&p->splits, &p->cap_splits, p->num_splits + (size_t)n, sizeof *p->splits))
    return UINT32_MAX;
  uint32_t first = (uint32_t)p->num_splits;
  memcpy(p->splits + first, bytes, (size_t)n * sizeof *bytes);
  p->num_splits += (size_t)n;
  return first;
}

static wl_op op_blank(int stream)
{
  wl_op op;
  memset(&op, 0, sizeof op);
  op.stream = (uint16_t)stream;
  op.role = -1;
  op.peer = -1;
  op.duration_s = -1;
  op.batch = 1;
  op.dtype = WL_DTYPE_BF16;
  return op;
}

wl_op wl_op_compute(int stream, double duration_s)
{
  wl_op op = op_blank(stream);
  op.kind = WL_OP_COMPUTE;
  op.sub = WL_CLASS_OTHER;
  op.duration_s = duration_s;
  return op;
}

wl_op wl_op_coll(int stream, int coll, int role, double bytes)
{
  wl_op op = op_blank(stream);
  op.kind = WL_OP_COLL;
  op.sub = (uint8_t)coll;
  op.role = role;
  op.bytes = bytes;
  if (coll == WL_COLL_BROADCAST || coll == WL_COLL_REDUCE)
    op.peer = 0;
  return op;
}

wl_op wl_op_p2p(int stream, int kind, int role, int peer, int tag, double bytes)
{
  wl_op op = op_blank(stream);
  op.kind = (uint8_t)kind;
  op.role = role;
  op.peer = peer;
  op.tag = tag;
  op.bytes = bytes;
  return op;
}

wl_op wl_op_marker(int stream, int marker_kind, int value)
{
  wl_op op = op_blank(stream);
  op.kind = WL_OP_MARKER;
  op.sub = (uint8_t)marker_kind;
  op.tag = value;
  return op;
}

wl_op wl_op_copy(int stream, int dir, double bytes)
{
  wl_op op = op_blank(stream);
  op.kind = WL_OP_COPY;
  op.sub = (uint8_t)dir;
  op.bytes = bytes;
  return op;
}

int wl_workload_host_use(const wl_workload *wl)
{
  int use = 0;
  for (int p = 0; p < wl->num_programs; p++)
    for (size_t i = 0; i < wl->programs[p].num_ops; i++) {
      const wl_op *o = &wl->programs[p].ops[i];
      if (o->kind == WL_OP_COPY)
        use |= WL_HOST_COPIES;
      else if (o->kind == WL_OP_COMPUTE && (o->flags & WL_OPF_HOST))
        use |= WL_HOST_COMPUTE;
    }
  return use;
}

void wl_rank_set(wl_workload *wl, int rank, int program) { wl->rank_program[rank] = program; }

void wl_rank_set_comm(wl_workload *wl, int rank, int role, int comm)
{
  wl->rank_comm[(size_t)rank * wl->num_roles + role] = comm;
}

int wl_comm_member_index(const wl_comm *c, int rank)
{
  for (int i = 0; i < c->size; i++)
    if (c->ranks[i] == rank)
      return i;
  return -1;
}

int wl_meta_set_str(char **field, const char *value)
{
  char *d = st_strdup(value);
  if (value && !d)
    return ST_ENOMEM;
  free(*field);
  *field = d;
  return ST_OK;
}

/* ---- checking ------------------------------------------------------------- */
static int check_program(const wl_workload *wl, int pi, st_err *err)
{
  const wl_program *p = &wl->programs[pi];
  for (size_t s = 0; s < p->num_splits; s++)
    if (!(p->splits[s] >= 0) || !isfinite(p->splits[s]))
      return st_err_set(err, ST_EINPUT, "program '%s': split size %zu is %g (must be finite and >= 0)",
                        p->name, s, p->splits[s]);
  for (size_t i = 0; i < p->num_ops; i++) {
    const wl_op *o = &p->ops[i];
#define BAD(...)                                                                         \
  do {                                                                                   \
    st_err_set(err, ST_EINPUT, __VA_ARGS__);                                             \
    return st_err_prefix(err, "program '%s': op %zu (%s): ", p->name, i,                 \
                         wl_op_kind_name(o->kind));                                      \
  } while (0)
    if (o->kind >= WL_OP_KIND_COUNT)
      BAD("kind %d is unknown", o->kind);
    if (o->stream >= p->num_streams)
      BAD("stream %d does not exist (the program has %d)", o->stream, p->num_streams);
    if (o->name >= p->strings_len)
      BAD("name offset %u is outside the string pool", o->name);
    if ((size_t)o->wait_first + o->wait_count > p->num_waits)
      BAD("waits [%u, +%u) are outside the wait list", o->wait_first, o->wait_count);
    for (uint32_t w = 0; w < o->wait_count; w++)
      if (p->waits[o->wait_first + w] >= i)
        BAD("waits on op %u, which does not come before it", p->waits[o->wait_first + w]);
    if (!(o->bytes >= 0) || !isfinite(o->bytes))
      BAD("'bytes' is %g (must be finite and >= 0)", o->bytes);
    st_err ne; /* importers and generators alike: the engine stores sizes as integers */
    if (st_num_check(o->bytes, ST_NUM_REAL, 0, ST_BYTES_MAX, &ne, "'bytes'"))
      BAD("%s", ne.msg);
    if (o->phase >= WL_PHASE_COUNT)
      BAD("phase %d is unknown", o->phase);
    switch (o->kind) {
    case WL_OP_COMPUTE:
      if (o->sub >= WL_CLASS_COUNT)
        BAD("op class %d is unknown", o->sub);
      if (o->dtype >= WL_DTYPE_COUNT)
        BAD("dtype %d is unknown", o->dtype);
      if (!isfinite(o->duration_s) || !isfinite(o->flops) || o->flops < 0)
        BAD("'duration_s'/'flops' must be finite, flops >= 0");
      if (o->duration_s < 0 && o->flops == 0 && o->bytes == 0)
        BAD("has neither a duration nor flops/bytes for the compute model");
      if (o->m < 0 || o->n < 0 || o->k < 0 || o->batch < 1)
        BAD("GEMM shape m=%d n=%d k=%d batch=%d (need m, n, k >= 0 and batch >= 1)", o->m, o->n,
            o->k, o->batch);
      if ((o->flags & WL_OPF_HOST) && o->duration_s < 0 &&
          !(o->sub == WL_CLASS_OPTIMIZER && o->flops > 0))
        BAD("a host op needs a duration, or class optimizer with flops (priced at the "
            "platform's host Adam rate)");
      break;
    case WL_OP_COPY:
      if (o->sub >= WL_COPY_DIR_COUNT)
        BAD("copy direction %d is unknown", o->sub);
      break;
    case WL_OP_COLL:
      if (o->sub >= WL_COLL_COUNT)
        BAD("collective %d is unknown", o->sub);
      if ((o->sub == WL_COLL_BROADCAST || o->sub == WL_COLL_REDUCE) && o->peer < 0)
        BAD("root %d is negative", o->peer);
      if (o->sub == WL_COLL_ALLTOALL && (o->flags & WL_OPF_SPLITS)) {
        if (o->split_first > p->num_splits)
          BAD("splits start at %u, outside the program's %zu split sizes", o->split_first,
              p->num_splits);
      }
      if ((o->flags & WL_OPF_DEDUP) &&
          (o->sub != WL_COLL_ALLTOALL || (o->flags & WL_OPF_SPLITS) || o->m < 1 || o->m > 1024 ||
           o->n < 1 || o->n > 65535))
        BAD("a deduplicating dispatch must be an alltoall without splits, topk 1-1024 and "
            "experts 1-65535 (it is %s, topk %d, experts %d)",
            wl_coll_name(o->sub), o->m, o->n);
      /* fall through */
    case WL_OP_SEND:
    case WL_OP_RECV:
      if (o->role < 0 || o->role >= wl->num_roles)
        BAD("role %d does not exist (the workload has %d)", o->role, wl->num_roles);
      if (o->kind != WL_OP_COLL && o->peer < 0)
        BAD("peer %d is negative", o->peer);
      break;
    case WL_OP_MARKER:
      if (o->sub >= WL_MARK_COUNT)
        BAD("marker kind %d is unknown", o->sub);
      break;
    }
#undef BAD
  }
  return ST_OK;
}

/* Per (program, role) facts gathered from the ops, so that the per-rank pass
 * costs O(ranks x roles) whatever the number of ops. */
typedef struct role_use {
  int32_t max_peer;   /* largest peer/root named, -1 if none */
  int64_t split_room; /* all-to-all-v: fewest split sizes any op has room for; -1 if none */
  int32_t split_size; /* communicator size seen for the first rank, -1 before */
  uint8_t used;
} role_use;

int wl_workload_check(const wl_workload *wl, st_err *err)
{
  int nr = wl->num_roles;
  if (wl->meta.dtype < 0 || wl->meta.dtype >= WL_DTYPE_COUNT)
    return st_err_set(err, ST_EINPUT, "meta: dtype %d is unknown", wl->meta.dtype);
  if (wl->meta.iterations < 1)
    return st_err_set(err, ST_EINPUT, "meta: iterations is %d (must be >= 1)",
                      wl->meta.iterations);

  /* Communicators: known kind, members are ranks, no rank twice. */
  int32_t *seen = malloc(((size_t)wl->num_ranks + 1) * sizeof *seen);
  if (!seen)
    return st_err_set(err, ST_ENOMEM, "out of memory checking the workload");
  for (int r = 0; r < wl->num_ranks; r++)
    seen[r] = -1;
  for (int c = 0; c < wl->num_comms; c++) {
    const wl_comm *cm = &wl->comms[c];
    if (cm->kind < 0 || cm->kind >= WL_COMM_KIND_COUNT) {
      free(seen);
      return st_err_set(err, ST_EINPUT, "communicator '%s': kind %d is unknown", cm->name,
                        cm->kind);
    }
    for (int i = 0; i < cm->size; i++) {
      int32_t r = cm->ranks[i];
      if (r < 0 || r >= wl->num_ranks) {
        free(seen);
        return st_err_set(err, ST_EINPUT, "communicator '%s': member %d is rank %d, outside 0..%d",
                          cm->name, i, r, wl->num_ranks - 1);
      }
      if (seen[r] == c) {
        free(seen);
        return st_err_set(err, ST_EINPUT, "communicator '%s': rank %d is a member twice",
                          cm->name, r);
      }
      seen[r] = c;
    }
  }
  free(seen);

  for (int p = 0; p < wl->num_programs; p++)
    if (check_program(wl, p, err))
      return err ? err->code : ST_EINPUT;
  for (int r = 0; r < wl->num_ranks; r++) {
    int p = wl->rank_program[r];
    if (p < 0 || p >= wl->num_programs)
      return st_err_set(err, ST_EINPUT, "rank %d has no program (program index %d of %d)", r, p,
                        wl->num_programs);
    for (int role = 0; role < nr; role++) {
      int c = wl_rank_comm(wl, r, role);
      if (c < -1 || c >= wl->num_comms)
        return st_err_set(err, ST_EINPUT, "rank %d: role '%s' maps to communicator %d of %d", r,
                          wl->roles[role], c, wl->num_comms);
    }
  }
  if (nr == 0 || wl->num_programs == 0)
    return ST_OK;

  /* Membership: the communicator that plays a role for a rank contains it.
   * Walk each communicator's members once instead of searching per rank. */
  size_t slots = (size_t)wl->num_ranks * nr;
  unsigned char *member = calloc(slots, 1);
  role_use *use = malloc((size_t)wl->num_programs * nr * sizeof *use);
  if (!member || !use) {
    free(member);
    free(use);
    return st_err_set(err, ST_ENOMEM, "out of memory checking the workload");
  }
  int rc = ST_OK;
  for (int c = 0; c < wl->num_comms; c++)
    for (int i = 0; i < wl->comms[c].size; i++) {
      size_t r = (size_t)wl->comms[c].ranks[i];
      for (int role = 0; role < nr; role++)
        if (wl->rank_comm[r * nr + role] == c)
          member[r * nr + role] = 1;
    }
  for (size_t i = 0; i < slots && !rc; i++) {
    int c = wl->rank_comm[i];
    if (c >= 0 && !member[i])
      rc = st_err_set(err, ST_EINPUT,
                      "rank %zu: role '%s' maps to communicator '%s', which does not contain it",
                      i / nr, wl->roles[i % nr], wl->comms[c].name);
  }

  /* Per rank: every role its program uses is played by a communicator, with
   * peers and roots in range and all-to-all-v split counts matching. */
  for (size_t i = 0; i < (size_t)wl->num_programs * nr; i++)
    use[i] = (role_use){-1, -1, -1, 0};
  for (int p = 0; p < wl->num_programs && !rc; p++) {
    const wl_program *pg = &wl->programs[p];
    for (size_t i = 0; i < pg->num_ops; i++) {
      const wl_op *o = &pg->ops[i];
      if (o->kind != WL_OP_COLL && o->kind != WL_OP_SEND && o->kind != WL_OP_RECV)
        continue;
      role_use *u = &use[(size_t)p * nr + o->role];
      u->used = 1;
      if (o->peer > u->max_peer)
        u->max_peer = o->peer;
      if (o->kind == WL_OP_COLL && o->sub == WL_COLL_ALLTOALL && (o->flags & WL_OPF_SPLITS)) {
        int64_t room = (int64_t)pg->num_splits - o->split_first;
        if (u->split_room < 0 || room < u->split_room)
          u->split_room = room;
      }
    }
  }
  for (int r = 0; r < wl->num_ranks && !rc; r++) {
    int p = wl->rank_program[r];
    const char *pname = wl->programs[p].name;
    for (int role = 0; role < nr && !rc; role++) {
      role_use *u = &use[(size_t)p * nr + role];
      if (!u->used)
        continue;
      int c = wl_rank_comm(wl, r, role);
      if (c < 0) {
        rc = st_err_set(err, ST_EINPUT,
                        "rank %d: program '%s' uses role '%s', but no communicator plays it "
                        "for this rank",
                        r, pname, wl->roles[role]);
        break;
      }
      const wl_comm *cm = &wl->comms[c];
      if (u->max_peer >= cm->size)
        rc = st_err_set(err, ST_EINPUT,
                        "rank %d: program '%s' names member %d of communicator '%s' (role "
                        "'%s'), which has %d members",
                        r, pname, u->max_peer, cm->name, wl->roles[role], cm->size);
      else if (u->split_room >= 0 && cm->size > u->split_room)
        rc = st_err_set(err, ST_EINPUT,
                        "rank %d: program '%s' has an all-to-all-v on role '%s' with fewer "
                        "split sizes than communicator '%s' has members (%d)",
                        r, pname, wl->roles[role], cm->name, cm->size);
      else if (u->split_room >= 0 && u->split_size >= 0 && cm->size != u->split_size)
        rc = st_err_set(err, ST_EINPUT,
                        "rank %d: program '%s' has an all-to-all-v on role '%s', whose "
                        "communicator '%s' has %d members where another rank's has %d",
                        r, pname, wl->roles[role], cm->name, cm->size, u->split_size);
      else if (u->split_room >= 0)
        u->split_size = cm->size;
    }
  }
  free(member);
  free(use);
  return rc;
}

size_t wl_workload_num_ops(const wl_workload *wl)
{
  size_t n = 0;
  for (int p = 0; p < wl->num_programs; p++)
    n += wl->programs[p].num_ops;
  return n;
}

size_t wl_workload_memory_bytes(const wl_workload *wl)
{
  size_t b = sizeof *wl + (size_t)wl->num_ranks * sizeof(int32_t) * (1 + (size_t)wl->num_roles);
  for (int c = 0; c < wl->num_comms; c++)
    b += sizeof(wl_comm) + (size_t)wl->comms[c].size * sizeof(int32_t);
  for (int p = 0; p < wl->num_programs; p++) {
    const wl_program *pg = &wl->programs[p];
    b += sizeof *pg + pg->cap_ops * sizeof(wl_op) + pg->cap_waits * sizeof(uint32_t) +
         pg->cap_splits * sizeof(double) + pg->strings_cap;
  }
  return b;
}

int wl_workload_repeat(wl_workload *wl, int times, st_err *err)
{
  if (times < 1 || times > WL_REPEAT_MAX)
    return st_err_set(err, ST_EUSAGE, "iterations %d: expected 1 to %d", times, WL_REPEAT_MAX);
  if (times == 1)
    return ST_OK;
  int it0 = wl->meta.iterations > 0 ? wl->meta.iterations : 1;
  for (int pi = 0; pi < wl->num_programs; pi++) {
    wl_program *p = &wl->programs[pi];
    size_t n0 = p->num_ops, w0 = p->num_waits;
    if ((double)n0 * times > 4e9 || (double)w0 * times > 4e9 ||
        grow((void **)&p->ops, &p->cap_ops, n0 * (size_t)times, sizeof *p->ops) ||
        (w0 && grow((void **)&p->waits, &p->cap_waits, w0 * (size_t)times, sizeof *p->waits)))
      return st_err_set(err, ST_ENOMEM, "program '%s': out of memory repeating it %d times",
                        p->name, times);
    for (int i = 1; i < times; i++) {
      for (size_t k = 0; k < n0; k++) {
        wl_op o = p->ops[k];
        o.wait_first += (uint32_t)(w0 * (size_t)i);
        if (o.kind == WL_OP_MARKER && o.sub == WL_MARK_ITERATION)
          o.tag += i * it0;
        p->ops[n0 * (size_t)i + k] = o; /* names and splits: the same pool entries */
      }
      for (size_t w = 0; w < w0; w++)
        p->waits[w0 * (size_t)i + w] = p->waits[w] + (uint32_t)(n0 * (size_t)i);
    }
    p->num_ops = n0 * (size_t)times;
    p->num_waits = w0 * (size_t)times;
  }
  wl->meta.iterations = it0 * times;
  return ST_OK;
}
