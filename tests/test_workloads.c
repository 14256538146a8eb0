/* test_workloads.c — the workload library: building, name tables, checking,
 * the shared basics of st_common, and the on-disk form (round trip, stable
 * bytes, exact error messages for broken files). */
#include <dirent.h>
#include <malloc.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "traces.h"
#include "workload.h"

/* ---- helpers ---------------------------------------------------------------- */

static char tmpdir[256];

static int make_tmpdir(void **state)
{
  (void)state;
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/test_workloads.XXXXXX", base && *base ? base : "/tmp");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
  (void)state;
  DIR *d = opendir(tmpdir);
  if (!d)
    return 0;
  struct dirent *e;
  char p[512];
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
      remove(p);
    }
  closedir(d);
  rmdir(tmpdir);
  return 0;
}

static const char *tmp_path(const char *name)
{
  static char bufs[4][512];
  static int next;
  char *b = bufs[next++ % 4];
  snprintf(b, 512, "%s/%s", tmpdir, name);
  return b;
}

static void write_bytes(const char *path, const void *data, size_t n)
{
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  fclose(f);
}

static char *read_bytes(const char *path, size_t *n)
{
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *d = malloc((size_t)len + 1);
  assert_non_null(d);
  assert_int_equal(fread(d, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  d[len] = '\0';
  *n = (size_t)len;
  return d;
}

/* gzip-compress with zlib's gz* API (independent of st_file_write_atomic). */
static void write_gzip(const char *path, const void *data, size_t n)
{
  gzFile gz = gzopen(path, "wb");
  assert_non_null(gz);
  assert_int_equal(gzwrite(gz, data, (unsigned)n), (int)n);
  assert_int_equal(gzclose(gz), Z_OK);
}

/* Test documents are written with ' for " so the tables stay readable. */
static char *doc(const char *s)
{
  char *d = strdup(s);
  for (char *p = d; *p; p++)
    if (*p == '\'')
      *p = '"';
  return d;
}

static int bits_equal(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* ---- the two-stage pipeline of examples/pipeline2.json, built in C --------- */

enum { ROLE_PP, ROLE_WORLD };

static wl_workload *build_pipeline2(void)
{
  const char *roles[] = {"pp", "world"};
  const char *streams[] = {"compute", "comm"};
  wl_workload *wl = wl_workload_create(2, 2, roles);
  assert_non_null(wl);
  assert_int_equal(wl_meta_set_str(&wl->meta.model, "toy-2-layer"), 0);
  assert_int_equal(wl_meta_set_str(&wl->meta.layout, "pp=2"), 0);
  assert_int_equal(wl_meta_set_str(&wl->meta.source, "hand-written example"), 0);
  wl->meta.tokens_per_step = 4096;
  wl->meta.model_flops_per_step = 2.5e12;
  int32_t both[] = {0, 1};
  assert_int_equal(wl_comm_add(wl, "pp0", WL_COMM_PP, 2, both), 0);
  assert_int_equal(wl_comm_add(wl, "world", WL_COMM_WORLD, 2, both), 1);

  const double mib16 = 16777216, opt_bytes = 805306368;
  /* stage 0 */
  assert_int_equal(wl_program_add(wl, "stage0", 2, streams), 0);
  wl_program *p = &wl->programs[0];
  wl_op op = wl_op_marker(0, WL_MARK_ITERATION, 0);
  assert_int_equal(wl_program_append(p, &op, NULL, 0), 0);
  op = wl_op_compute(0, -1);
  op.name = wl_program_string(p, "fwd.layer0.qkv");
  op.phase = WL_PHASE_FORWARD;
  op.sub = WL_CLASS_GEMM;
  op.m = 4096, op.n = 6144, op.k = 2048;
  op.flops = 2.0 * 4096 * 6144 * 2048;
  wl_program_append(p, &op, NULL, 0);
  op = wl_op_compute(0, 0.00125);
  op.name = wl_program_string(p, "fwd.layer0.rest");
  op.phase = WL_PHASE_FORWARD;
  wl_program_append(p, &op, NULL, 0);
  uint32_t w2 = 2, w4 = 4, w5 = 5, w6 = 6;
  op = wl_op_p2p(1, WL_OP_SEND, ROLE_PP, 1, 0, mib16);
  op.name = wl_program_string(p, "act");
  op.phase = WL_PHASE_FORWARD;
  wl_program_append(p, &op, &w2, 1);
  op = wl_op_p2p(1, WL_OP_RECV, ROLE_PP, 1, 1, mib16);
  op.name = wl_program_string(p, "grad");
  op.phase = WL_PHASE_BACKWARD;
  wl_program_append(p, &op, NULL, 0);
  op = wl_op_compute(0, 0.0041);
  op.name = wl_program_string(p, "bwd.layer0");
  op.phase = WL_PHASE_BACKWARD;
  wl_program_append(p, &op, &w4, 1);
  op = wl_op_coll(1, WL_COLL_ALLREDUCE, ROLE_WORLD, 4);
  op.name = wl_program_string(p, "grad_norm");
  op.phase = WL_PHASE_OPTIMIZER;
  wl_program_append(p, &op, &w5, 1);
  op = wl_op_compute(0, -1);
  op.name = wl_program_string(p, "adam");
  op.phase = WL_PHASE_OPTIMIZER;
  op.sub = WL_CLASS_OPTIMIZER;
  op.bytes = opt_bytes;
  wl_program_append(p, &op, &w6, 1);

  /* stage 1 */
  assert_int_equal(wl_program_add(wl, "stage1", 2, streams), 1);
  p = &wl->programs[1];
  uint32_t w1 = 1, w3 = 3;
  op = wl_op_marker(0, WL_MARK_ITERATION, 0);
  wl_program_append(p, &op, NULL, 0);
  op = wl_op_p2p(1, WL_OP_RECV, ROLE_PP, 0, 0, mib16);
  op.name = wl_program_string(p, "act");
  op.phase = WL_PHASE_FORWARD;
  wl_program_append(p, &op, NULL, 0);
  op = wl_op_compute(0, 0.0025);
  op.name = wl_program_string(p, "fwd.layer1");
  op.phase = WL_PHASE_FORWARD;
  wl_program_append(p, &op, &w1, 1);
  op = wl_op_compute(0, 0.005);
  op.name = wl_program_string(p, "bwd.layer1");
  op.phase = WL_PHASE_BACKWARD;
  wl_program_append(p, &op, NULL, 0);
  op = wl_op_p2p(1, WL_OP_SEND, ROLE_PP, 0, 1, mib16);
  op.name = wl_program_string(p, "grad");
  op.phase = WL_PHASE_BACKWARD;
  wl_program_append(p, &op, &w3, 1);
  op = wl_op_coll(1, WL_COLL_ALLREDUCE, ROLE_WORLD, 4);
  op.name = wl_program_string(p, "grad_norm");
  op.phase = WL_PHASE_OPTIMIZER;
  wl_program_append(p, &op, NULL, 0);
  op = wl_op_compute(0, -1);
  op.name = wl_program_string(p, "adam");
  op.phase = WL_PHASE_OPTIMIZER;
  op.sub = WL_CLASS_OPTIMIZER;
  op.bytes = opt_bytes;
  wl_program_append(p, &op, &w5, 1);

  for (int r = 0; r < 2; r++) {
    wl_rank_set(wl, r, r);
    wl_rank_set_comm(wl, r, ROLE_PP, 0);
    wl_rank_set_comm(wl, r, ROLE_WORLD, 1);
  }
  return wl;
}

/* A workload that uses every field with a value away from its default, and
 * numbers that are hard to print: the round-trip subject. */
static wl_workload *build_everything(void)
{
  const char *roles[] = {"tp", "ep", "pp_next"};
  const char *streams[] = {"compute", "comm", "comm"}; /* a duplicated stream name */
  wl_workload *wl = wl_workload_create(4, 3, roles);
  assert_non_null(wl);
  wl_meta_set_str(&wl->meta.model, "m\"odel\\ \n\t\x01 \xc3\xa9"); /* escapes and UTF-8 */
  wl_meta_set_str(&wl->meta.source, "gen");
  wl->meta.tokens_per_step = 0.1;
  wl->meta.hw_flops_per_step = 1.0 / 3.0;
  wl->meta.peak_memory_bytes = 7.9e10;
  wl->meta.dtype = WL_DTYPE_FP8;
  wl->meta.iterations = 3;
  int32_t g0[] = {0, 1}, g1[] = {3, 2}, all[] = {2, 0, 3, 1};
  wl_comm_add(wl, "tp0", WL_COMM_TP, 2, g0);
  wl_comm_add(wl, "tp1", WL_COMM_TP, 2, g1);
  wl_comm_add(wl, "ep", WL_COMM_EP, 4, all);
  wl_comm_add(wl, "odd kind", WL_COMM_OTHER, 4, all);

  wl_program_add(wl, "main", 3, streams);
  wl_program *p = &wl->programs[0];
  wl_op op = wl_op_compute(0, 1.0 / 7.0);
  op.flops = 1e300;
  op.bytes = 1234567890123456.75; /* 17 digits, below the 2^53 limit on byte counts */
  op.sub = WL_CLASS_GEMM;
  op.m = 1, op.n = 2147483647, op.k = 3;
  op.batch = 5;
  op.concurrent = 3;
  op.dtype = WL_DTYPE_FP32;
  op.phase = WL_PHASE_FORWARD;
  op.flags = WL_OPF_RECOMPUTE | WL_OPF_UNFUSED; /* an unfused attention GEMM, forward */
  op.name = wl_program_string(p, "gemm \"quoted\"");
  wl_program_append(p, &op, NULL, 0);
  op.flags = WL_OPF_TORCH; /* a GEMM a PyTorch framework dispatches */
  wl_program_append(p, &op, NULL, 0);
  op = wl_op_compute(1, -1); /* causal attention: the mask travels with the op */
  op.sub = WL_CLASS_ATTENTION;
  op.flops = 3e12;
  op.m = op.n = 4096, op.k = 128;
  op.batch = 32;
  op.flags = wl_flags_with_attn(WL_OPF_CAUSAL | WL_OPF_DROPOUT, WL_ATTN_FA3); /* its library,
                                                                              its dropout */
  wl_program_append(p, &op, NULL, 0);
  op.n = 128; /* a sliding window of 128 keys */
  op.flags = WL_OPF_CAUSAL | WL_OPF_WINDOW;
  wl_program_append(p, &op, NULL, 0);
  op = wl_op_compute(2, -0.0); /* -0 is a given duration of zero, kept bit for bit */
  op.sub = WL_CLASS_ELEMENTWISE;
  op.flags = WL_OPF_UNFUSED | WL_OPF_BWD; /* an unfused attention softmax, backward */
  wl_program_append(p, &op, NULL, 0);
  op = wl_op_compute(1, -1);
  op.bytes = 5e-324; /* smallest subnormal */
  op.sub = WL_CLASS_ATTENTION;
  op.flops = 0.30000000000000004;
  wl_program_append(p, &op, NULL, 0);
  uint32_t w[] = {0, 2, 1};
  op = wl_op_coll(1, WL_COLL_REDUCE, 0, 1.5);
  op.peer = 1;
  wl_program_append(p, &op, w, 3);
  op = wl_op_coll(2, WL_COLL_BROADCAST, 0, 2048);
  wl_program_append(p, &op, NULL, 0); /* root 0, the default */
  double splits[] = {0, 1e9, 3.25, 7};
  op = wl_op_coll(1, WL_COLL_ALLTOALL, 1, 4096);
  op.flags = WL_OPF_SPLITS;
  op.split_first = wl_program_splits(p, splits, 4);
  wl_program_append(p, &op, NULL, 0);
  op = wl_op_coll(1, WL_COLL_ALLTOALL, 1, 8192); /* uniform */
  wl_program_append(p, &op, NULL, 0);
  op = wl_op_coll(1, WL_COLL_ALLTOALL, 1, 8192); /* an MoE dispatch, deduplicated */
  op.flags = WL_OPF_DEDUP;
  op.m = 8, op.n = 16;
  wl_program_append(p, &op, NULL, 0);
  double splits2[] = {1, 2, 3, 4};
  op = wl_op_coll(1, WL_COLL_ALLTOALL, 1, 10);
  op.flags = WL_OPF_SPLITS;
  op.split_first = wl_program_splits(p, splits2, 4);
  wl_program_append(p, &op, NULL, 0);
  op = wl_op_coll(0, WL_COLL_BARRIER, 0, 0);
  wl_program_append(p, &op, NULL, 0);
  op = wl_op_p2p(1, WL_OP_SEND, 2, 1, -7, 3e6);
  op.phase = WL_PHASE_BACKWARD;
  wl_program_append(p, &op, NULL, 0);
  op = wl_op_p2p(1, WL_OP_RECV, 2, 0, 2147483647, 3e6);
  op.flags = WL_OPF_RECOMPUTE;
  wl_program_append(p, &op, NULL, 0);
  for (int k = 0; k < WL_MARK_COUNT; k++) {
    op = wl_op_marker(0, k, k == 0 ? -2147483647 - 1 : k * 1000);
    op.phase = WL_PHASE_OPTIMIZER;
    wl_program_append(p, &op, NULL, 0);
  }

  /* a second program with the allgather / reducescatter and a compute-model op */
  const char *one[] = {"s"};
  wl_program_add(wl, "", 1, one);
  p = &wl->programs[1];
  op = wl_op_coll(0, WL_COLL_ALLGATHER, 0, 1 << 20);
  wl_program_append(p, &op, NULL, 0);
  op = wl_op_coll(0, WL_COLL_REDUCESCATTER, 0, 1 << 21);
  op.name = wl_program_string(p, "rs");
  wl_program_append(p, &op, NULL, 0);
  op = wl_op_compute(0, -1);
  op.flops = 4e12;
  op.dtype = WL_DTYPE_TF32;
  wl_program_append(p, &op, NULL, 0);

  int tp[] = {0, 0, 1, 1};
  for (int r = 0; r < 4; r++) {
    wl_rank_set(wl, r, r == 3 ? 1 : 0);
    wl_rank_set_comm(wl, r, 0, tp[r]);
    wl_rank_set_comm(wl, r, 1, 2);
    wl_rank_set_comm(wl, r, 2, r < 2 ? 0 : 1);
  }
  return wl;
}

/* Field-by-field equality; names, waits and splits compare by content. */
static void assert_same_workload(const wl_workload *a, const wl_workload *b)
{
  assert_int_equal(a->num_ranks, b->num_ranks);
  assert_int_equal(a->num_roles, b->num_roles);
  for (int i = 0; i < a->num_roles; i++)
    assert_string_equal(a->roles[i], b->roles[i]);
  const char *sa[] = {a->meta.model, a->meta.layout, a->meta.source};
  const char *sb[] = {b->meta.model, b->meta.layout, b->meta.source};
  for (int i = 0; i < 3; i++) {
    assert_true((sa[i] == NULL) == (sb[i] == NULL));
    if (sa[i])
      assert_string_equal(sa[i], sb[i]);
  }
  assert_true(bits_equal(a->meta.tokens_per_step, b->meta.tokens_per_step) ||
              (isnan(a->meta.tokens_per_step) && isnan(b->meta.tokens_per_step)));
  assert_true(bits_equal(a->meta.model_flops_per_step, b->meta.model_flops_per_step) ||
              (isnan(a->meta.model_flops_per_step) && isnan(b->meta.model_flops_per_step)));
  assert_true(bits_equal(a->meta.hw_flops_per_step, b->meta.hw_flops_per_step) ||
              (isnan(a->meta.hw_flops_per_step) && isnan(b->meta.hw_flops_per_step)));
  assert_true(bits_equal(a->meta.peak_memory_bytes, b->meta.peak_memory_bytes) ||
              (isnan(a->meta.peak_memory_bytes) && isnan(b->meta.peak_memory_bytes)));
  assert_int_equal(a->meta.dtype, b->meta.dtype);
  assert_int_equal(a->meta.iterations, b->meta.iterations);
  assert_int_equal(a->num_comms, b->num_comms);
  for (int c = 0; c < a->num_comms; c++) {
    assert_string_equal(a->comms[c].name, b->comms[c].name);
    assert_int_equal(a->comms[c].kind, b->comms[c].kind);
    assert_int_equal(a->comms[c].size, b->comms[c].size);
    assert_memory_equal(a->comms[c].ranks, b->comms[c].ranks,
                        (size_t)a->comms[c].size * sizeof(int32_t));
  }
  assert_int_equal(a->num_programs, b->num_programs);
  for (int pi = 0; pi < a->num_programs; pi++) {
    const wl_program *pa = &a->programs[pi], *pb = &b->programs[pi];
    assert_string_equal(pa->name, pb->name);
    assert_int_equal(pa->num_streams, pb->num_streams);
    for (int s = 0; s < pa->num_streams; s++)
      assert_string_equal(pa->stream_names[s], pb->stream_names[s]);
    assert_int_equal(pa->num_ops, pb->num_ops);
    for (size_t i = 0; i < pa->num_ops; i++) {
      const wl_op *x = &pa->ops[i], *y = &pb->ops[i];
      assert_int_equal(x->kind, y->kind);
      assert_int_equal(x->sub, y->sub);
      assert_int_equal(x->phase, y->phase);
      assert_int_equal(x->dtype, y->dtype);
      assert_int_equal(x->stream, y->stream);
      assert_int_equal(x->flags, y->flags);
      assert_int_equal(x->role, y->role);
      assert_int_equal(x->peer, y->peer);
      assert_int_equal(x->tag, y->tag);
      assert_string_equal(wl_op_name(pa, x), wl_op_name(pb, y));
      assert_int_equal(x->wait_count, y->wait_count);
      assert_memory_equal(pa->waits + x->wait_first, pb->waits + y->wait_first,
                          x->wait_count * sizeof(uint32_t));
      if (x->flags & WL_OPF_SPLITS) {
        int n = 0; /* one size per member of the communicator of a rank running the program */
        for (int r = 0; r < a->num_ranks && !n; r++)
          if (a->rank_program[r] == pi)
            n = a->comms[wl_rank_comm(a, r, x->role)].size;
        assert_memory_equal(pa->splits + x->split_first, pb->splits + y->split_first,
                            (size_t)n * sizeof(double));
      }
      assert_true(bits_equal(x->duration_s, y->duration_s));
      assert_true(bits_equal(x->flops, y->flops));
      assert_true(bits_equal(x->bytes, y->bytes));
      assert_int_equal(x->m, y->m);
      assert_int_equal(x->n, y->n);
      assert_int_equal(x->k, y->k);
      assert_int_equal(x->batch, y->batch);
      assert_int_equal(x->concurrent, y->concurrent);
    }
  }
  assert_memory_equal(a->rank_program, b->rank_program, (size_t)a->num_ranks * sizeof(int32_t));
  if (a->num_roles)
    assert_memory_equal(a->rank_comm, b->rank_comm,
                        (size_t)a->num_ranks * a->num_roles * sizeof(int32_t));
}

/* ---- builder ---------------------------------------------------------------- */

static void test_append__returns_indices_and_copies_waits(void **state)
{
  (void)state;
  const char *s[] = {"compute", "comm"};
  wl_workload *wl = wl_workload_create(1, 0, NULL);
  assert_int_equal(wl_program_add(wl, "p", 2, s), 0);
  wl_program *p = &wl->programs[0];
  wl_op op = wl_op_compute(0, 1e-3);
  for (long i = 0; i < 100; i++) /* past the first growth */
    assert_int_equal(wl_program_append(p, &op, NULL, 0), i);
  uint32_t waits[] = {3, 99, 7};
  op = wl_op_compute(1, 2e-3);
  assert_int_equal(wl_program_append(p, &op, waits, 3), 100);
  waits[0] = 55; /* the program keeps its own copy */
  const wl_op *o = &p->ops[100];
  assert_int_equal(o->wait_count, 3);
  assert_int_equal(p->waits[o->wait_first], 3);
  assert_int_equal(p->waits[o->wait_first + 1], 99);
  assert_int_equal(p->waits[o->wait_first + 2], 7);
  assert_int_equal(o->stream, 1);
  assert_true(o->duration_s == 2e-3);
  assert_int_equal(p->ops[5].wait_count, 0);
  wl_workload_destroy(wl);
}

/* Repeating a step three times: 3 x the ops and waits, each copy's waits
 * shifted onto its own copy (op 2 of copy i waits on op 0 of copy i), the
 * iteration markers counting 0, 1, 2, meta.iterations 3, and the result
 * passing the check; 0 and 1001 times are refused. */
static void test_repeat__copies_ops_waits_and_markers(void **state)
{
  (void)state;
  const char *s[] = {"compute", "comm"};
  wl_workload *wl = wl_workload_create(1, 0, NULL);
  assert_int_equal(wl_program_add(wl, "p", 2, s), 0);
  wl_rank_set(wl, 0, 0);
  wl_program *p = &wl->programs[0];
  wl_op op = wl_op_marker(0, WL_MARK_ITERATION, 0);
  assert_int_equal(wl_program_append(p, &op, NULL, 0), 0);
  op = wl_op_compute(0, 1e-3);
  assert_int_equal(wl_program_append(p, &op, NULL, 0), 1);
  uint32_t w = 1;
  op = wl_op_compute(1, 2e-3);
  assert_int_equal(wl_program_append(p, &op, &w, 1), 2);
  st_err err;
  st_err_clear(&err);
  assert_int_equal(wl_workload_repeat(wl, 3, &err), 0);
  p = &wl->programs[0];
  assert_int_equal(p->num_ops, 9);
  assert_int_equal(p->num_waits, 3);
  assert_int_equal(wl->meta.iterations, 3);
  for (int i = 0; i < 3; i++) {
    const wl_op *m = &p->ops[3 * i], *c = &p->ops[3 * i + 2];
    assert_int_equal(m->kind, WL_OP_MARKER);
    assert_int_equal(m->tag, i);
    assert_int_equal(c->wait_count, 1);
    assert_int_equal(p->waits[c->wait_first], 3 * i + 1);
    assert_int_equal(c->stream, 1);
    assert_true(c->duration_s == 2e-3);
  }
  assert_int_equal(wl_workload_check(wl, &err), 0);
  assert_int_equal(wl_workload_repeat(wl, 0, &err), ST_EUSAGE);
  assert_string_equal(err.msg, "iterations 0: expected 1 to 1000");
  assert_int_equal(wl_workload_repeat(wl, 1001, &err), ST_EUSAGE);
  assert_int_equal(wl_workload_repeat(wl, 1, &err), 0);
  assert_int_equal(wl->programs[0].num_ops, 9);
  wl_workload_destroy(wl);
}

static void test_constructors__set_defaults(void **state)
{
  (void)state;
  wl_op c = wl_op_compute(1, 0.5);
  assert_int_equal(c.kind, WL_OP_COMPUTE);
  assert_int_equal(c.sub, WL_CLASS_OTHER);
  assert_int_equal(c.role, -1);
  assert_int_equal(c.peer, -1);
  assert_int_equal(c.batch, 1);
  assert_int_equal(c.dtype, WL_DTYPE_BF16);
  assert_true(c.duration_s == 0.5);
  wl_op b = wl_op_coll(0, WL_COLL_BROADCAST, 2, 64);
  assert_int_equal(b.peer, 0); /* root defaults to member 0 */
  assert_true(b.bytes == 64);
  wl_op a = wl_op_coll(0, WL_COLL_ALLREDUCE, 2, 64);
  assert_int_equal(a.peer, -1);
  assert_true(a.duration_s == -1);
  wl_op s = wl_op_p2p(1, WL_OP_SEND, 3, 4, 5, 6);
  assert_int_equal(s.kind, WL_OP_SEND);
  assert_int_equal(s.role, 3);
  assert_int_equal(s.peer, 4);
  assert_int_equal(s.tag, 5);
  wl_op m = wl_op_marker(0, WL_MARK_LAYER, 12);
  assert_int_equal(m.kind, WL_OP_MARKER);
  assert_int_equal(m.sub, WL_MARK_LAYER);
  assert_int_equal(m.tag, 12);
}

static void test_string__interns_repeats_and_empty_is_zero(void **state)
{
  (void)state;
  const char *s[] = {"c"};
  wl_workload *wl = wl_workload_create(1, 0, NULL);
  wl_program_add(wl, "p", 1, s);
  wl_program *p = &wl->programs[0];
  assert_int_equal(wl_program_string(p, NULL), 0);
  assert_int_equal(wl_program_string(p, ""), 0);
  uint32_t a = wl_program_string(p, "attn");
  uint32_t b = wl_program_string(p, "mlp");
  assert_int_not_equal(a, 0);
  assert_int_not_equal(a, b);
  assert_int_equal(wl_program_string(p, "attn"), a);
  assert_int_equal(wl_program_string(p, "mlp"), b);
  /* a suffix of an earlier name is a name of its own */
  uint32_t t = wl_program_string(p, "tn");
  assert_int_not_equal(t, a + 2);
  assert_string_equal(p->strings + t, "tn");
  assert_string_equal(p->strings + a, "attn");
  wl_op op = wl_op_compute(0, 1);
  op.name = b;
  assert_string_equal(wl_op_name(p, &op), "mlp");
  wl_workload_destroy(wl);
}

static void test_splits__stored_back_to_back(void **state)
{
  (void)state;
  const char *s[] = {"c"};
  wl_workload *wl = wl_workload_create(1, 0, NULL);
  wl_program_add(wl, "p", 1, s);
  wl_program *p = &wl->programs[0];
  double x[] = {1, 2, 3}, y[] = {4, 5};
  assert_int_equal(wl_program_splits(p, x, 3), 0);
  assert_int_equal(wl_program_splits(p, y, 2), 3);
  assert_int_equal(p->num_splits, 5);
  for (int i = 0; i < 5; i++)
    assert_true(p->splits[i] == i + 1);
  wl_workload_destroy(wl);
}

static void test_create__rejects_bad_sizes_and_starts_unmapped(void **state)
{
  (void)state;
  assert_null(wl_workload_create(0, 0, NULL));
  assert_null(wl_workload_create(-1, 0, NULL));
  assert_null(wl_workload_create(4, -1, NULL));
  const char *roles[] = {"tp"};
  wl_workload *wl = wl_workload_create(3, 1, roles);
  for (int r = 0; r < 3; r++) {
    assert_int_equal(wl->rank_program[r], -1);
    assert_int_equal(wl_rank_comm(wl, r, 0), -1);
  }
  assert_int_equal(wl_rank_comm(wl, 0, 1), -1); /* role out of range */
  assert_true(isnan(wl->meta.tokens_per_step));
  assert_int_equal(wl->meta.iterations, 1);
  int32_t rk[] = {0, 2};
  assert_true(wl_comm_add(wl, "x", WL_COMM_TP, 0, rk) < 0);
  assert_int_equal(wl_comm_member_index(&(wl_comm){.size = 2, .ranks = rk}, 2), 1);
  assert_int_equal(wl_comm_member_index(&(wl_comm){.size = 2, .ranks = rk}, 1), -1);
  assert_true(wl_program_add(wl, "p", 0, NULL) < 0);
  wl_workload_destroy(wl);
}

static void test_pipeline2__passes_check_and_counts(void **state)
{
  (void)state;
  wl_workload *wl = build_pipeline2();
  st_err err;
  st_err_clear(&err);
  assert_int_equal(wl_workload_check(wl, &err), 0);
  assert_int_equal(wl_workload_num_ops(wl), 15);
  assert_true(wl_workload_memory_bytes(wl) > 15 * sizeof(wl_op));
  wl_workload_destroy(wl);
}

/* ---- wl_workload_check: a table of broken workloads ------------------------ */

typedef struct broken {
  const char *what;
  void (*mutate)(wl_workload *wl);
  const char *msg;
} broken;

static void m_no_program(wl_workload *wl) { wl->rank_program[1] = -1; }
static void m_rank_outside(wl_workload *wl) { wl->comms[0].ranks[1] = 7; }
static void m_rank_twice(wl_workload *wl) { wl->comms[1].ranks[1] = 0; }
static void m_wait_forward(wl_workload *wl)
{
  wl_program *p = &wl->programs[0];
  p->waits[p->ops[3].wait_first] = 5;
}
static void m_wait_self(wl_workload *wl)
{
  wl_program *p = &wl->programs[0];
  p->waits[p->ops[3].wait_first] = 3;
}
static void m_stream(wl_workload *wl) { wl->programs[0].ops[1].stream = 9; }
static void m_bytes(wl_workload *wl) { wl->programs[0].ops[3].bytes = -1; }
static void m_bytes_inf(wl_workload *wl) { wl->programs[1].ops[1].bytes = INFINITY; }
static void m_compute_empty(wl_workload *wl)
{
  wl_op *o = &wl->programs[0].ops[7];
  o->bytes = 0;
}
static void m_duration_nan(wl_workload *wl) { wl->programs[1].ops[2].duration_s = NAN; }
static void m_gemm_shape(wl_workload *wl) { wl->programs[0].ops[1].batch = 0; }
static void m_role(wl_workload *wl) { wl->programs[0].ops[6].role = 5; }
static void m_peer_negative(wl_workload *wl) { wl->programs[1].ops[1].peer = -1; }
static void m_peer_big(wl_workload *wl) { wl->programs[0].ops[3].peer = 2; }
static void m_not_played(wl_workload *wl) { wl_rank_set_comm(wl, 1, ROLE_WORLD, -1); }
static void m_comm_index(wl_workload *wl) { wl_rank_set_comm(wl, 0, ROLE_PP, 9); }
static void m_not_member(wl_workload *wl)
{
  int32_t one = 1;
  int c = wl_comm_add(wl, "solo", WL_COMM_OTHER, 1, &one);
  wl_rank_set_comm(wl, 0, ROLE_WORLD, c);
}
static void m_iterations(wl_workload *wl) { wl->meta.iterations = 0; }
static void m_comm_kind(wl_workload *wl) { wl->comms[1].kind = 42; }
static void m_phase(wl_workload *wl) { wl->programs[1].ops[0].phase = 9; }
static void m_kind(wl_workload *wl) { wl->programs[1].ops[0].kind = 7; }
static void m_root_negative(wl_workload *wl)
{
  wl_op *o = &wl->programs[1].ops[5];
  o->sub = WL_COLL_BROADCAST;
  o->peer = -3;
}
static void m_splits_short(wl_workload *wl)
{
  wl_program *p = &wl->programs[1];
  double one = 8;
  wl_op *o = &p->ops[5];
  o->sub = WL_COLL_ALLTOALL;
  o->flags = WL_OPF_SPLITS;
  o->split_first = wl_program_splits(p, &one, 1);
}
static void m_split_negative(wl_workload *wl)
{
  wl_program *p = &wl->programs[1];
  double two[] = {8, -8};
  wl_op *o = &p->ops[5];
  o->sub = WL_COLL_ALLTOALL;
  o->flags = WL_OPF_SPLITS;
  o->split_first = wl_program_splits(p, two, 2);
}

static const broken broken_workloads[] = {
    {"rank without program", m_no_program, "rank 1 has no program (program index -1 of 2)"},
    {"member outside", m_rank_outside,
     "communicator 'pp0': member 1 is rank 7, outside 0..1"},
    {"member twice", m_rank_twice, "communicator 'world': rank 0 is a member twice"},
    {"wait forward", m_wait_forward,
     "program 'stage0': op 3 (send): waits on op 5, which does not come before it"},
    {"wait on itself", m_wait_self,
     "program 'stage0': op 3 (send): waits on op 3, which does not come before it"},
    {"stream", m_stream,
     "program 'stage0': op 1 (compute): stream 9 does not exist (the program has 2)"},
    {"negative bytes", m_bytes,
     "program 'stage0': op 3 (send): 'bytes' is -1 (must be finite and >= 0)"},
    {"infinite bytes", m_bytes_inf,
     "program 'stage1': op 1 (recv): 'bytes' is inf (must be finite and >= 0)"},
    {"compute with nothing", m_compute_empty,
     "program 'stage0': op 7 (compute): has neither a duration nor flops/bytes for the "
     "compute model"},
    {"NaN duration", m_duration_nan,
     "program 'stage1': op 2 (compute): 'duration_s'/'flops' must be finite, flops >= 0"},
    {"GEMM batch 0", m_gemm_shape,
     "program 'stage0': op 1 (compute): GEMM shape m=4096 n=6144 k=2048 batch=0 (need m, n, k "
     ">= 0 and batch >= 1)"},
    {"unknown role", m_role,
     "program 'stage0': op 6 (coll): role 5 does not exist (the workload has 2)"},
    {"negative peer", m_peer_negative, "program 'stage1': op 1 (recv): peer -1 is negative"},
    {"peer outside communicator", m_peer_big,
     "rank 0: program 'stage0' names member 2 of communicator 'pp0' (role 'pp'), which has 2 "
     "members"},
    {"role not played", m_not_played,
     "rank 1: program 'stage1' uses role 'world', but no communicator plays it for this rank"},
    {"communicator index", m_comm_index, "rank 0: role 'pp' maps to communicator 9 of 2"},
    {"not a member", m_not_member,
     "rank 0: role 'world' maps to communicator 'solo', which does not contain it"},
    {"iterations", m_iterations, "meta: iterations is 0 (must be >= 1)"},
    {"communicator kind", m_comm_kind, "communicator 'world': kind 42 is unknown"},
    {"phase", m_phase, "program 'stage1': op 0 (marker): phase 9 is unknown"},
    {"op kind", m_kind, "program 'stage1': op 0 (?): kind 7 is unknown"},
    {"negative root", m_root_negative, "program 'stage1': op 5 (coll): root -3 is negative"},
    {"too few splits", m_splits_short,
     "rank 1: program 'stage1' has an all-to-all-v on role 'world' with fewer split sizes than "
     "communicator 'world' has members (2)"},
    {"negative split", m_split_negative,
     "program 'stage1': split size 1 is -8 (must be finite and >= 0)"},
};

static void test_check__reports_each_broken_workload_exactly(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof broken_workloads / sizeof *broken_workloads; i++) {
    const broken *b = &broken_workloads[i];
    wl_workload *wl = build_pipeline2();
    b->mutate(wl);
    st_err err;
    st_err_clear(&err);
    int rc = wl_workload_check(wl, &err);
    if (rc != ST_EINPUT || strcmp(err.msg, b->msg) != 0)
      fail_msg("case '%s': rc %d, message\n  got:  %s\n  want: %s", b->what, rc, err.msg, b->msg);
    wl_workload_destroy(wl);
  }
}

static void test_check__split_sizes_must_agree_across_ranks(void **state)
{
  (void)state;
  const char *roles[] = {"ep"};
  const char *s[] = {"c"};
  wl_workload *wl = wl_workload_create(3, 1, roles);
  int32_t a[] = {0, 1}, b[] = {2};
  wl_comm_add(wl, "ep0", WL_COMM_EP, 2, a);
  wl_comm_add(wl, "ep1", WL_COMM_EP, 1, b);
  wl_program_add(wl, "p", 1, s);
  double sp[] = {1, 2};
  wl_op op = wl_op_coll(0, WL_COLL_ALLTOALL, 0, 3);
  op.flags = WL_OPF_SPLITS;
  op.split_first = wl_program_splits(&wl->programs[0], sp, 2);
  wl_program_append(&wl->programs[0], &op, NULL, 0);
  for (int r = 0; r < 3; r++) {
    wl_rank_set(wl, r, 0);
    wl_rank_set_comm(wl, r, 0, r < 2 ? 0 : 1);
  }
  st_err err;
  st_err_clear(&err);
  assert_int_equal(wl_workload_check(wl, &err), ST_EINPUT);
  assert_string_equal(err.msg, "rank 2: program 'p' has an all-to-all-v on role 'ep', whose "
                               "communicator 'ep1' has 1 members where another rank's has 2");
  wl_workload_destroy(wl);
}

/* ---- name tables ------------------------------------------------------------ */

static void test_names__round_trip_every_table(void **state)
{
  (void)state;
  struct {
    const char *(*name)(int);
    int (*from)(const char *);
    int count;
  } tabs[] = {
      {wl_coll_name, wl_coll_from_name, WL_COLL_COUNT},
      {wl_class_name, wl_class_from_name, WL_CLASS_COUNT},
      {wl_marker_name, wl_marker_from_name, WL_MARK_COUNT},
      {wl_phase_name, wl_phase_from_name, WL_PHASE_COUNT},
      {wl_comm_kind_name, wl_comm_kind_from_name, WL_COMM_KIND_COUNT},
      {wl_dtype_name, wl_dtype_from_name, WL_DTYPE_COUNT},
  };
  for (size_t t = 0; t < sizeof tabs / sizeof *tabs; t++) {
    for (int i = 0; i < tabs[t].count; i++)
      assert_int_equal(tabs[t].from(tabs[t].name(i)), i);
    assert_string_equal(tabs[t].name(tabs[t].count), "?");
    assert_string_equal(tabs[t].name(-1), "?");
    assert_int_equal(tabs[t].from("no-such-name"), -1);
    assert_int_equal(tabs[t].from(NULL), -1);
  }
  assert_string_equal(wl_op_kind_name(WL_OP_RECV), "recv");
  assert_string_equal(wl_op_kind_name(WL_OP_KIND_COUNT), "?");
}

static void test_names__collective_aliases(void **state)
{
  (void)state;
  struct {
    const char *name;
    int coll;
  } t[] = {
      {"allreduce", WL_COLL_ALLREDUCE},         {"all_reduce", WL_COLL_ALLREDUCE},
      {"all-reduce", WL_COLL_ALLREDUCE},        {"AllReduce", WL_COLL_ALLREDUCE},
      {"reduce_scatter", WL_COLL_REDUCESCATTER}, {"_reduce_scatter_base", WL_COLL_REDUCESCATTER},
      {"all_gather_into_tensor", WL_COLL_ALLGATHER}, {"all_to_allv", WL_COLL_ALLTOALL},
      {"alltoall", WL_COLL_ALLTOALL},           {"Broadcast", WL_COLL_BROADCAST},
      {"reduce", WL_COLL_REDUCE},               {"barrier", WL_COLL_BARRIER},
      {"allreduc", -1},                         {"", -1},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    if (wl_coll_from_name(t[i].name) != t[i].coll)
      fail_msg("'%s' -> %d, want %d", t[i].name, wl_coll_from_name(t[i].name), t[i].coll);
}

static void test_names__dtype_bytes(void **state)
{
  (void)state;
  assert_true(wl_dtype_bytes(WL_DTYPE_FP32) == 4);
  assert_true(wl_dtype_bytes(WL_DTYPE_TF32) == 4);
  assert_true(wl_dtype_bytes(WL_DTYPE_BF16) == 2);
  assert_true(wl_dtype_bytes(WL_DTYPE_FP16) == 2);
  assert_true(wl_dtype_bytes(WL_DTYPE_FP8) == 1);
}

/* ---- st_common ---------------------------------------------------------------- */

static void test_parse_bytes__table(void **state)
{
  (void)state;
  struct {
    const char *s;
    int rc;
    double bytes;
  } t[] = {
      {"512", 0, 512},
      {"0", 0, 0},
      {"1K", 0, 1024},
      {"1.5K", 0, 1536},
      {"1M", 0, 1048576},
      {"64MiB", 0, 64.0 * 1048576},
      {"4G", 0, 4.0 * 1073741824},
      {"4GB", 0, 4.0 * 1073741824},
      {"4gib", 0, 4.0 * 1073741824},
      {"2T", 0, 2.0 * 1099511627776},
      {"8B", 0, 8},
      {"", ST_EINPUT, 0},
      {"abc", ST_EINPUT, 0},
      {"-1", ST_EINPUT, 0},
      {"4X", ST_EINPUT, 0},
      {"4GiBx", ST_EINPUT, 0},
      {"4 G", ST_EINPUT, 0},
      {"4iB", ST_EINPUT, 0},
      {"inf", ST_EINPUT, 0},
      {"nan", ST_EINPUT, 0},
      {"0x10", ST_EINPUT, 0},
      {" 4", ST_EINPUT, 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    double b = -42;
    int rc = st_parse_bytes(t[i].s, &b);
    if (rc != t[i].rc)
      fail_msg("'%s': rc %d, want %d", t[i].s, rc, t[i].rc);
    if (rc == 0 && b != t[i].bytes)
      fail_msg("'%s': %.17g bytes, want %.17g", t[i].s, b, t[i].bytes);
    if (rc != 0 && b != -42)
      fail_msg("'%s': output changed on error", t[i].s);
  }
}

static void test_format_bytes__binary_units(void **state)
{
  (void)state;
  char buf[32];
  assert_string_equal(st_format_bytes(512, buf, sizeof buf), "512 B");
  assert_string_equal(st_format_bytes(64.0 * 1048576, buf, sizeof buf), "64.00 MiB");
  assert_string_equal(st_format_bytes(1536, buf, sizeof buf), "1.50 KiB");
}

static void test_err__set_and_prefix(void **state)
{
  (void)state;
  st_err err;
  st_err_clear(&err);
  assert_int_equal(st_err_set(&err, ST_EINPUT, "event %d: 'dur' is negative", 4031), ST_EINPUT);
  assert_int_equal(st_err_prefix(&err, "trace '%s': ", "rank3.json.gz"), ST_EINPUT);
  assert_string_equal(err.msg, "trace 'rank3.json.gz': event 4031: 'dur' is negative");
  assert_int_equal(st_err_set(NULL, ST_EIO, "x"), ST_EIO);
}

/* The error table: every code keeps the value, text and exit status the
 * command-line tests and docs promise (0 ok, 1 usage, 2 input, 3 simulation). */
static void test_err__table_gives_code_text_and_status(void **state)
{
  (void)state;
  static const struct {
    int code, value, status;
    const char *text;
  } rows[] = {
      {ST_OK, 0, 0, "success"},
      {ST_EUSAGE, -1, 1, "usage error"},
      {ST_EINPUT, -2, 2, "bad input"},
      {ST_EIO, -3, 2, "input/output error"},
      {ST_ENOMEM, -4, 2, "out of memory"},
      {ST_ESIM, -5, 3, "simulation failure"},
      {-99, -99, 2, "unknown error"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    assert_int_equal(rows[i].code, rows[i].value);
    assert_int_equal(st_err_exit_status(rows[i].code), rows[i].status);
    assert_string_equal(st_strerror(rows[i].code), rows[i].text);
  }
}

static void test_num_check__finite_in_range_and_whole(void **state)
{
  (void)state;
  struct {
    double v;
    int kind;
    double lo, hi;
    const char *msg; /* NULL: accepted */
  } t[] = {
      {512, ST_NUM_INTEGER, 0, ST_BYTES_MAX, NULL},
      {ST_BYTES_MAX, ST_NUM_INTEGER, 0, ST_BYTES_MAX, NULL},
      {1e19, ST_NUM_INTEGER, 0, ST_BYTES_MAX,
       "spec 'x.json': 'bytes' is 1e+19, above the largest allowed 9007199254740992"},
      {-1, ST_NUM_INTEGER, 0, ST_BYTES_MAX,
       "spec 'x.json': 'bytes' is -1, below the smallest allowed 0"},
      {2.5, ST_NUM_INTEGER, 0, 10, "spec 'x.json': 'bytes' is 2.5, not a whole number"},
      {2.5, ST_NUM_REAL, 0, 10, NULL},
      {NAN, ST_NUM_REAL, 0, 10, "spec 'x.json': 'bytes' is not a finite number"},
      {INFINITY, ST_NUM_REAL, 0, INFINITY, "spec 'x.json': 'bytes' is not a finite number"},
      {-INFINITY, ST_NUM_REAL, -INFINITY, 0, "spec 'x.json': 'bytes' is not a finite number"},
      {1e308, ST_NUM_REAL, 0, 1e6,
       "spec 'x.json': 'bytes' is 1e+308, above the largest allowed 1000000"},
      {3e9, ST_NUM_INTEGER, ST_INT32_MIN, ST_INT32_MAX,
       "spec 'x.json': 'bytes' is 3000000000, above the largest allowed 2147483647"},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    st_err err;
    st_err_clear(&err);
    int rc = st_num_check(t[i].v, t[i].kind, t[i].lo, t[i].hi, &err, "spec '%s': '%s'", "x.json",
                          "bytes");
    if (!t[i].msg) {
      if (rc != 0)
        fail_msg("row %zu: rejected: %s", i, err.msg);
      continue;
    }
    assert_int_equal(rc, ST_EINPUT);
    assert_int_equal(err.code, ST_EINPUT);
    assert_string_equal(err.msg, t[i].msg);
  }
  /* the limits are what they say: every byte count up to ST_BYTES_MAX is exact in a double */
  assert_true(ST_BYTES_MAX == 9007199254740992.0);
  assert_true(ST_BYTES_MAX + 1 == ST_BYTES_MAX);
  assert_true((double)(int32_t)ST_INT32_MAX == ST_INT32_MAX);
}

/* Numbers in text: the whole text is one number, then st_num_check's rules;
 * nothing is written on error, and a long gets no value a cast would wrap. */
/* An error message is one line whatever it quotes: control characters from
 * an input are escaped by st_err_set and st_err_prefix (UTF-8 stays). */
static void test_err__message_is_one_line(void **state)
{
  (void)state;
  st_err err;
  st_err_set(&err, ST_EINPUT, "key '%s' is unknown", "a\nb\tc\r\x1b[1m\x7f\xc3\xa9");
  assert_string_equal(err.msg, "key 'a\\nb\\tc\\r\\x1b[1m\\x7f\xc3\xa9' is unknown");
  st_err_prefix(&err, "model '%s': ", "m\n.json");
  assert_string_equal(err.msg,
                      "model 'm\\n.json': key 'a\\nb\\tc\\r\\x1b[1m\\x7f\xc3\xa9' is unknown");
  /* escaping never overruns: a message of control characters fills the buffer */
  char many[ST_ERR_MSG_MAX];
  memset(many, '\n', sizeof many - 1);
  many[sizeof many - 1] = '\0';
  st_err_set(&err, ST_EINPUT, "%s", many);
  assert_true(strlen(err.msg) < ST_ERR_MSG_MAX);
  assert_null(strchr(err.msg, '\n'));
}

static void test_num_parse__whole_text_then_checked(void **state)
{
  (void)state;
  struct {
    const char *text;
    int kind;
    double lo, hi;
    double want;     /* when accepted */
    const char *msg; /* NULL: accepted */
  } t[] = {
      {"12", ST_NUM_INTEGER, 0, 100, 12, NULL},
      {"1e3", ST_NUM_INTEGER, 0, 1e6, 1000, NULL},
      {"2.5", ST_NUM_REAL, 0, 10, 2.5, NULL},
      {"-3", ST_NUM_REAL, -5, 5, -3, NULL},
      {"-3", ST_NUM_REAL, 0, 5, 0, "trace 't': line 2: 'tag' is -3, below the smallest allowed 0"},
      {"1e300", ST_NUM_INTEGER, 0, ST_INT32_MAX, 0,
       "trace 't': line 2: 'tag' is 1e+300, above the largest allowed 2147483647"},
      {"1e400", ST_NUM_REAL, 0, 10, 0, "trace 't': line 2: 'tag' is not a finite number"},
      {"nan", ST_NUM_REAL, 0, 10, 0, "trace 't': line 2: 'tag' is not a finite number"},
      {"2.5", ST_NUM_INTEGER, 0, 10, 0, "trace 't': line 2: 'tag' is 2.5, not a whole number"},
      {"12x", ST_NUM_INTEGER, 0, 100, 0, "trace 't': line 2: 'tag' is '12x', not a number"},
      {"", ST_NUM_INTEGER, 0, 100, 0, "trace 't': line 2: 'tag' is '', not a number"},
      {" 1", ST_NUM_INTEGER, 0, 100, 0, "trace 't': line 2: 'tag' is ' 1', not a number"},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    st_err err;
    st_err_clear(&err);
    double v = -99;
    int rc = st_num_parse(t[i].text, t[i].kind, t[i].lo, t[i].hi, &v, &err,
                          "trace '%s': line %d: '%s'", "t", 2, "tag");
    if (!t[i].msg) {
      if (rc != 0)
        fail_msg("row %zu: rejected: %s", i, err.msg);
      assert_true(v == t[i].want);
      continue;
    }
    assert_int_equal(rc, ST_EINPUT);
    assert_string_equal(err.msg, t[i].msg);
    assert_true(v == -99); /* untouched */
  }
  long x = -1;
  st_err err;
  assert_int_equal(st_num_parse_long("1048575", 0, ST_RANKS_MAX - 1, &x, &err, "rank"), 0);
  assert_int_equal(x, 1048575);
  assert_int_equal(st_num_parse_long("1048576", 0, ST_RANKS_MAX - 1, &x, &err, "rank"), ST_EINPUT);
  assert_string_equal(err.msg, "rank is 1048576, above the largest allowed 1048575");
  assert_int_equal(x, 1048575);
  assert_int_equal(st_num_to_long(4.5e9, 0, INT32_MAX, &x, &err, "'n'"), ST_EINPUT);
  assert_string_equal(err.msg, "'n' is 4500000000, above the largest allowed 2147483647");
  assert_int_equal(st_num_to_long(65536, 1, ST_LAYERS_MAX, &x, &err, "'layers'"), 0);
  assert_int_equal(x, 65536);
}

static void test_read_all__plain_and_gzip_give_the_same_bytes(void **state)
{
  (void)state;
  char text[5000];
  for (size_t i = 0; i < sizeof text; i++)
    text[i] = (char)('a' + (i * 7) % 26);
  write_bytes(tmp_path("plain.txt"), text, sizeof text);
  write_gzip(tmp_path("packed.txt"), text, sizeof text); /* no .gz: detected by magic */
  const char *paths[] = {tmp_path("plain.txt"), tmp_path("packed.txt")};
  for (int i = 0; i < 2; i++) {
    char *data = NULL;
    size_t len = 0;
    st_err err;
    st_err_clear(&err);
    assert_int_equal(st_file_read_all(paths[i], &data, &len, &err), 0);
    assert_int_equal(len, sizeof text);
    assert_memory_equal(data, text, sizeof text);
    assert_int_equal(data[len], '\0');
    free(data);
  }
}

/* An empty file reads as "" (length 0, NUL-terminated): the buffer is
 * terminated from its first allocation, not only by an append.  glibc's
 * M_PERTURB (and ASan's malloc fill) make fresh memory non-zero, so an
 * unterminated buffer fails here rather than reading as "" by chance (an
 * empty SMPI trace once read its garbage as a file name). */
static void test_read_all__empty_file_is_an_empty_string(void **state)
{
  (void)state;
#ifdef M_PERTURB
  mallopt(M_PERTURB, 0x5a);
#endif
  const char *empty = tmp_path("empty.txt");
  write_bytes(empty, "", 0);
  for (int round = 0; round < 4; round++) {
    char *data = NULL;
    size_t len = 7;
    st_err err;
    st_err_clear(&err);
    assert_int_equal(st_file_read_all(empty, &data, &len, &err), 0);
    assert_int_equal(len, 0);
    assert_non_null(data);
    assert_int_equal(data[0], '\0');
    free(data);
  }
  st_buf b;
  st_buf_init(&b);
  char *d = st_buf_detach(&b, NULL);
  assert_non_null(d);
  assert_int_equal(d[0], '\0');
  free(d);
#ifdef M_PERTURB
  mallopt(M_PERTURB, 0);
#endif
}

static void test_read_all__truncated_and_corrupt_gzip_are_errors(void **state)
{
  (void)state;
  char text[1000];
  for (size_t i = 0; i < sizeof text; i++)
    text[i] = (char)('a' + (i * 13) % 26);
  const char *full = tmp_path("full.gz");
  write_gzip(full, text, sizeof text);
  size_t n;
  char *gz = read_bytes(full, &n);

  /* Without its 8-byte trailer (CRC and size) all data inflates, then the
   * stream ends early. */
  const char *cut = tmp_path("cut.gz");
  write_bytes(cut, gz, n - 4);
  char *data = NULL;
  size_t len = 0;
  st_err err;
  st_err_clear(&err);
  char want[600];
  assert_int_equal(st_file_read_all(cut, &data, &len, &err), ST_EINPUT);
  snprintf(want, sizeof want, "'%s': gzip data is truncated after 1000 bytes", cut);
  assert_string_equal(err.msg, want);
  assert_null(data);

  /* Cut in the middle of the deflate stream. */
  write_bytes(cut, gz, n / 2);
  assert_int_equal(st_file_read_all(cut, &data, &len, &err), ST_EINPUT);
  snprintf(want, sizeof want, "'%s': gzip data is truncated after ", cut);
  assert_memory_equal(err.msg, want, strlen(want));

  /* A damaged deflate stream (bad block type). */
  gz[10] = (char)0xff;
  write_bytes(cut, gz, n);
  assert_int_equal(st_file_read_all(cut, &data, &len, &err), ST_EINPUT);
  snprintf(want, sizeof want, "'%s': gzip data is corrupt after 0 bytes: ", cut);
  assert_memory_equal(err.msg, want, strlen(want));
  free(gz);

  assert_int_equal(st_file_read_all(tmp_path("missing"), &data, &len, &err), ST_EIO);
  snprintf(want, sizeof want, "cannot open '%s': No such file or directory",
           tmp_path("missing"));
  assert_string_equal(err.msg, want);
}

static int count_tmp_files(void)
{
  int n = 0;
  DIR *d = opendir(tmpdir);
  struct dirent *e;
  while ((e = readdir(d)))
    if (strstr(e->d_name, ".tmp."))
      n++;
  closedir(d);
  return n;
}

/* The memory guard: a child with a 64 MiB limit and an output file being
 * written touches memory until the guard ends it: exit status 2, the one
 * line on stderr, and the temporary file removed (the target never made). */
static void test_mem_guard__ends_the_process_and_removes_temporaries(void **state)
{
  (void)state;
  const char *target = tmp_path("guarded.json");
  const char *errf = tmp_path("guarded.err");
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (!freopen(errf, "w", stderr))
      _exit(90);
    st_outfile o;
    st_err e;
    if (st_out_begin(&o, target, &e) || !fopen(o.tmp, "w"))
      _exit(91);
    if (st_mem_guard_start(64 << 20, &e))
      _exit(92);
    for (int i = 0; i < 64; i++) { /* up to 1 GiB, 16 MiB at a time, touched */
      char *p = malloc(16 << 20);
      if (!p)
        _exit(93);
      memset(p, i + 1, 16 << 20);
      struct timespec ts = {0, 10 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    _exit(94); /* the guard never fired */
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 2);
  size_t n;
  char *msg = read_bytes(errf, &n);
  assert_string_equal(msg, "simtrain: error: out of memory: resident memory passed --max-memory "
                           "64.00 MiB\n");
  free(msg);
  struct stat st;
  assert_int_not_equal(stat(target, &st), 0);
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", target, (long)pid);
  assert_int_not_equal(stat(tmp, &st), 0);
  assert_int_equal(count_tmp_files(), 0);
}

static void test_write_atomic__replaces_and_leaves_no_temp_file(void **state)
{
  (void)state;
  const char *p = tmp_path("atomic.bin");
  st_err err;
  st_err_clear(&err);
  assert_int_equal(st_file_write_atomic(p, "old contents", 12, 0, &err), 0);
  assert_int_equal(st_file_write_atomic(p, "new", 3, 0, &err), 0);
  size_t n;
  char *d = read_bytes(p, &n);
  assert_int_equal(n, 3);
  assert_memory_equal(d, "new", 3);
  free(d);
  const char *g = tmp_path("atomic.gz");
  assert_int_equal(st_file_write_atomic(g, "hello gzip", 10, 1, &err), 0);
  d = read_bytes(g, &n);
  assert_true(n > 2 && (unsigned char)d[0] == 0x1f && (unsigned char)d[1] == 0x8b);
  free(d);
  char *back = NULL;
  assert_int_equal(st_file_read_all(g, &back, &n, &err), 0);
  assert_int_equal(n, 10);
  assert_memory_equal(back, "hello gzip", 10);
  free(back);
  assert_int_equal(count_tmp_files(), 0);
  /* a folder that does not exist: error, nothing left behind */
  char bad[600];
  snprintf(bad, sizeof bad, "%s/no/such/dir/x.json", tmpdir);
  assert_int_equal(st_file_write_atomic(bad, "x", 1, 0, &err), ST_EIO);
  char want[700];
  snprintf(want, sizeof want, "cannot write '%s': No such file or directory", bad);
  assert_string_equal(err.msg, want);
  assert_int_equal(count_tmp_files(), 0);
}

static void test_write_atomic__writes_through_symlinks_and_refuses_non_files(void **state)
{
  (void)state;
  st_err err;
  st_err_clear(&err);
  /* a relative link to a file in a sub-folder: the target is replaced, the link stays */
  char dir[600], target[700], link[700], back[4096];
  snprintf(dir, sizeof dir, "%s/sub", tmpdir);
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(target, sizeof target, "%s/sub/t.json", tmpdir);
  snprintf(link, sizeof link, "%s/l.json", tmpdir);
  assert_int_equal(symlink("sub/t.json", link), 0);
  assert_int_equal(st_file_write_atomic(link, "abc", 3, 0, &err), 0);
  struct stat st;
  assert_int_equal(lstat(link, &st), 0);
  assert_true(S_ISLNK(st.st_mode));
  ssize_t n = readlink(link, back, sizeof back);
  assert_int_equal(n, 10);
  size_t len;
  char *d = read_bytes(target, &len);
  assert_int_equal(len, 3);
  assert_memory_equal(d, "abc", 3);
  free(d);
  /* a folder is refused and stays */
  assert_int_equal(st_file_write_atomic(dir, "x", 1, 0, &err), ST_EIO);
  char want[800];
  snprintf(want, sizeof want, "cannot write '%s': it is a directory, not a regular file", dir);
  assert_string_equal(err.msg, want);
  assert_int_equal(lstat(dir, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  /* a link to a folder likewise, naming the path given */
  char dl[700];
  snprintf(dl, sizeof dl, "%s/dl", tmpdir);
  assert_int_equal(symlink("sub", dl), 0);
  assert_int_equal(st_file_write_atomic(dl, "x", 1, 0, &err), ST_EIO);
  snprintf(want, sizeof want, "cannot write '%s': it is a directory, not a regular file", dl);
  assert_string_equal(err.msg, want);
  /* a loop of links */
  char a[700], b[700];
  snprintf(a, sizeof a, "%s/loop-a", tmpdir);
  snprintf(b, sizeof b, "%s/loop-b", tmpdir);
  assert_int_equal(symlink("loop-b", a), 0);
  assert_int_equal(symlink("loop-a", b), 0);
  assert_int_equal(st_file_write_atomic(a, "x", 1, 0, &err), ST_EIO);
  snprintf(want, sizeof want, "cannot write '%s': too many levels of symbolic links", a);
  assert_string_equal(err.msg, want);
  assert_int_equal(count_tmp_files(), 0);
  unlink(a);
  unlink(b);
  unlink(dl);
  unlink(link);
  unlink(target);
  rmdir(dir);
}

static void test_path__basename_and_dirname_table(void **state)
{
  (void)state;
  static const struct {
    const char *path, *base, *dir;
  } rows[] = {
      {"runs/a.h5", "a.h5", "runs"}, {"a.h5", "a.h5", "."},       {"/a.h5", "a.h5", "/"},
      {"x/y/z", "z", "x/y"},         {"x/", "", "x"},             {"", "", "."},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    assert_string_equal(st_path_basename(rows[i].path), rows[i].base);
    char *d = st_path_dirname(rows[i].path);
    assert_non_null(d);
    assert_string_equal(d, rows[i].dir);
    free(d);
  }
  assert_null(st_strdup(NULL));
  char *c = st_strdup("copy");
  assert_string_equal(c, "copy");
  free(c);
}

static int is_json(const char *name) { return st_str_ends_with(name, ".json"); }

static void test_dir_list__sorted_regular_files_that_pass_the_filter(void **state)
{
  (void)state;
  char dir[600], p[700];
  snprintf(dir, sizeof dir, "%s/list", tmpdir);
  assert_int_equal(mkdir(dir, 0700), 0);
  const char *files[] = {"c.json", "a.json", "b.txt", ".hidden.json"};
  for (size_t i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    write_bytes(p, "{}", 2);
  }
  snprintf(p, sizeof p, "%s/sub.json", dir); /* a folder: not listed */
  assert_int_equal(mkdir(p, 0700), 0);
  char **names = NULL;
  size_t n = 0;
  st_err err;
  st_err_clear(&err);
  assert_int_equal(st_dir_list(dir, is_json, &names, &n, &err), 0);
  assert_int_equal(n, 2);
  snprintf(p, sizeof p, "%s/a.json", dir);
  assert_string_equal(names[0], p);
  snprintf(p, sizeof p, "%s/c.json", dir);
  assert_string_equal(names[1], p);
  assert_true(st_path_is_file(names[0]));
  st_str_list_free(names, n);
  assert_int_equal(st_dir_list(dir, NULL, &names, &n, &err), 0);
  assert_int_equal(n, 3); /* b.txt too; never the dot file or the folder */
  st_str_list_free(names, n);
  snprintf(p, sizeof p, "%s/sub.json", dir);
  assert_false(st_path_is_file(p));
  assert_false(st_path_is_file(tmp_path("missing")));
  rmdir(p);
  for (size_t i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  rmdir(dir);
  char want[800];
  assert_int_equal(st_dir_list(dir, NULL, &names, &n, &err), ST_EIO);
  snprintf(want, sizeof want, "cannot open folder '%s': No such file or directory", dir);
  assert_string_equal(err.msg, want);
}

static void test_text_line_col__counts_from_one(void **state)
{
  (void)state;
  static const char text[] = "ab\ncd\n\nx";
  static const struct {
    size_t off;
    long line, col;
  } rows[] = {{0, 1, 1}, {1, 1, 2}, {2, 1, 3}, {3, 2, 1}, {5, 2, 3}, {6, 3, 1}, {7, 4, 1},
              {8, 4, 2}, {99, 4, 2}}; /* past the end: the end */
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    long line = 0, col = 0;
    st_text_line_col(text, sizeof text - 1, rows[i].off, &line, &col);
    assert_int_equal(line, rows[i].line);
    assert_int_equal(col, rows[i].col);
  }
}

/* The one JSON string writer, against RFC 8259's escapes written out by hand. */
static void test_json_str__escapes_quotes_backslashes_and_controls(void **state)
{
  (void)state;
  static const struct {
    const char *in, *out;
  } rows[] = {
      {NULL, "\"\""},
      {"", "\"\""},
      {"plain", "\"plain\""},
      {"q\"d", "\"q\\\"d\""},
      {"a\\b", "\"a\\\\b\""},
      {"l1\nl2\tx", "\"l1\\nl2\\tx\""},
      {"\x01\x1f\r", "\"\\u0001\\u001f\\u000d\""},
      {"\xc3\xa9 \x7f", "\"\xc3\xa9 \x7f\""}, /* UTF-8 and DEL pass as they are */
      {"dir/q\"d\\w.json", "\"dir/q\\\"d\\\\w.json\""},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    st_buf b;
    st_buf_init(&b);
    assert_int_equal(st_buf_append(&b, "x", 1), 0);
    assert_int_equal(st_buf_json_str(&b, rows[i].in), 0);
    assert_string_equal(b.data + 1, rows[i].out); /* appended after what was there */
    assert_int_equal(b.data[0], 'x');
    st_buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.data, "");
    st_buf_release(&b);
  }
}

static const char *const fabric_names[] = {"switch", "fat-tree"};
static const char *fabric_name(int i) { return fabric_names[i]; }

/* The shared JSON reader: each check's message, subject, path and key
 * written out by hand. */
static void test_jrd__messages_name_the_subject_the_path_and_the_value(void **state)
{
  (void)state;
  st_err err;
  st_err_clear(&err);
  st_jrd r = {"spec 'c.json'", "docs/platforms.md", &err};
  static const char text[] = "{'a': {'b': [1, 'x', 2.5, -1, 1e300]}, 's': 3, 't': true, "
                             "'e': 'ring', 'n': 0, 'big': 1e308}";
  char *json = doc(text);
  cJSON *root = NULL;
  assert_int_equal(st_json_parse(json, strlen(json), r.subject, &root, &err), 0);
  free(json);
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "a");
  const cJSON *b = cJSON_GetObjectItemCaseSensitive(a, "b");
  st_jpath at_a = {NULL, "a", 0}, at_b = {&at_a, "b", 0};
  st_jpath el[5];
  const cJSON *e[5];
  const cJSON *x = b->child;
  for (int i = 0; i < 5; i++, x = x->next) {
    el[i] = (st_jpath){&at_b, NULL, i};
    e[i] = x;
  }
#define MEMBER(k) cJSON_GetObjectItemCaseSensitive(root, k)
  const char *const top[] = {"a", "s", "t", "e", "n", "big"};
  const cJSON *slots[6];
  assert_int_equal(st_jrd_members(&r, NULL, root, top, 6, slots), 0);
  assert_ptr_equal(slots[1], MEMBER("s"));
  const char *const top_null[] = {"a", "s", "t", "e", "n", "big", NULL};
  assert_int_equal(st_jrd_members(&r, NULL, root, top_null, -1, NULL), 0);
  const char *sv = NULL;
  double d = 0;
  long l = 0;
  int k = 0;
  /* each check fails with exactly its message (and leaves *out alone) */
#define CHECK(call, code, want)                                                                    \
  do {                                                                                             \
    st_err_clear(&err);                                                                            \
    assert_int_equal(call, code);                                                                  \
    assert_string_equal(err.msg, want);                                                            \
  } while (0)
  CHECK(st_jrd_members(&r, NULL, root, top, 5, NULL), ST_EINPUT,
        "spec 'c.json': key 'big' is unknown (see docs/platforms.md)");
  CHECK(st_jrd_members(&r, &at_a, a, top, 1, NULL), ST_EINPUT,
        "spec 'c.json': a: key 'b' is unknown (see docs/platforms.md)");
  CHECK(st_jrd_members(&r, NULL, b, top, 1, NULL), ST_EINPUT,
        "spec 'c.json': the document is an array, expected an object");
  CHECK(st_jrd_members(&r, &at_b, b, top, 1, NULL), ST_EINPUT,
        "spec 'c.json': a.b: is an array, expected an object");
  CHECK(st_jrd_missing(&r, &at_a, "z"), ST_EINPUT, "spec 'c.json': a: key 'z' is missing");
  CHECK(st_jrd_string(&r, NULL, MEMBER("s"), &sv), ST_EINPUT,
        "spec 'c.json': 's' is a number, expected a string");
  CHECK(st_jrd_bool(&r, NULL, MEMBER("s"), &k), ST_EINPUT,
        "spec 'c.json': 's' is a number, expected true or false");
  CHECK(st_jrd_number(&r, NULL, MEMBER("n"), ST_NUM_REAL | ST_NUM_OPEN_LO, 0, 10, &d), ST_EINPUT,
        "spec 'c.json': 'n' is 0; it must be greater than 0");
  CHECK(st_jrd_number(&r, NULL, MEMBER("big"), ST_NUM_REAL, 0, 1e6, &d), ST_EINPUT,
        "spec 'c.json': 'big' is 1e+308, above the largest allowed 1000000");
  CHECK(st_jrd_number(&r, NULL, MEMBER("t"), ST_NUM_REAL, 0, 1e6, &d), ST_EINPUT,
        "spec 'c.json': 't' is true, expected a number");
  CHECK(st_jrd_number(&r, &el[2], e[2], ST_NUM_INTEGER, 0, 9, &d), ST_EINPUT,
        "spec 'c.json': a.b[2]: is 2.5, not a whole number");
  CHECK(st_jrd_size(&r, &el[1], e[1], &d), ST_EINPUT,
        "spec 'c.json': a.b[1]: is a string, expected a number");
  CHECK(st_jrd_size(&r, &el[3], e[3], &d), ST_EINPUT, "spec 'c.json': a.b[3]: is negative");
  CHECK(st_jrd_bytes(&r, &el[4], e[4], &d), ST_EINPUT,
        "spec 'c.json': a.b[4]: is 1e+300, above the largest allowed 9007199254740992");
  CHECK(st_jrd_int(&r, &el[2], e[2], 0, 9, &l), ST_EINPUT,
        "spec 'c.json': a.b[2]: is 2.5, expected an integer");
  CHECK(st_jrd_int(&r, NULL, MEMBER("s"), 4, 9, &l), ST_EINPUT,
        "spec 'c.json': 's' is 3, outside 4..9");
  CHECK(st_jrd_elem_int(&r, &el[0], e[0], "rank", 2, 5, &l), ST_EINPUT,
        "spec 'c.json': a.b[0]: rank 1 is outside 2..5");
  CHECK(st_jrd_elem_int(&r, &el[1], e[1], "rank", 2, 5, &l), ST_EINPUT,
        "spec 'c.json': a.b[1]: rank is a string, expected an integer");
  CHECK(st_jrd_enum(&r, NULL, MEMBER("e"), NULL, fabric_name, 2, &k), ST_EINPUT,
        "spec 'c.json': 'e' is 'ring', expected one of switch, fat-tree");
  CHECK(st_jrd_oom(&r), ST_ENOMEM, "spec 'c.json': out of memory");
  assert_null(sv);
  assert_true(d == 0 && l == 0 && k == 0);
  /* and succeed with the value */
  assert_int_equal(st_jrd_int(&r, NULL, MEMBER("s"), 3, 3, &l), 0);
  assert_int_equal(l, 3);
  assert_int_equal(st_jrd_bool(&r, NULL, MEMBER("t"), &k), 0);
  assert_int_equal(k, 1);
  assert_int_equal(st_jrd_number(&r, &el[0], e[0], ST_NUM_INTEGER | ST_NUM_OPEN_LO, 0, 1, &d), 0);
  assert_true(d == 1);
  cJSON_Delete(root);
  json = doc("{'k': 1, 'k': 2}");
  assert_int_equal(st_json_parse(json, strlen(json), r.subject, &root, &err), 0);
  free(json);
  CHECK(st_jrd_members(&r, NULL, root, top_null, -1, NULL), ST_EINPUT,
        "spec 'c.json': key 'k' is unknown (see docs/platforms.md)");
  const char *const just_k[] = {"k"};
  CHECK(st_jrd_members(&r, NULL, root, just_k, 1, NULL), ST_EINPUT,
        "spec 'c.json': key 'k' appears twice");
#undef CHECK
#undef MEMBER
  cJSON_Delete(root);
}

/* Syntax errors point at the line and column; what follows the document is
 * an error; an empty file says so. */
static void test_json_parse__errors_point_at_the_place(void **state)
{
  (void)state;
  static const struct {
    const char *text, *msg;
  } rows[] = {
      {"", "m: the file is empty"},
      {"{\n  \"a\": }", "m: JSON syntax error near line 2, column 8"},
      {"{} x", "m: unexpected text after the JSON document at line 1, column 4"},
      {"[1,\n2]\n\n  {}", "m: unexpected text after the JSON document at line 4, column 3"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    st_err err;
    st_err_clear(&err);
    cJSON *root = NULL;
    assert_int_equal(st_json_parse(rows[i].text, strlen(rows[i].text), "m", &root, &err),
                     ST_EINPUT);
    assert_null(root);
    assert_string_equal(err.msg, rows[i].msg);
  }
  cJSON *root = NULL;
  assert_int_equal(st_json_parse("{\"k\": 1} \n", 10, "m", &root, NULL), 0);
  assert_non_null(root);
  cJSON_Delete(root);
}

/* ---- on-disk form --------------------------------------------------------------- */

static void test_example__reads_as_the_pipeline_built_in_c(void **state)
{
  (void)state;
  wl_workload *got = NULL;
  st_err err;
  st_err_clear(&err);
  if (wl_workload_read(ST_SOURCE_DIR "/examples/pipeline2.json", &got, &err))
    fail_msg("%s", err.msg);
  wl_workload *want = build_pipeline2();
  assert_same_workload(got, want);
  wl_workload_destroy(got);
  wl_workload_destroy(want);
}

static void test_example__is_in_the_writers_layout(void **state)
{
  (void)state;
  size_t n;
  char *file = read_bytes(ST_SOURCE_DIR "/examples/pipeline2.json", &n);
  wl_workload *wl = build_pipeline2();
  char *json = wl_workload_to_json(wl, 1);
  assert_string_equal(json, file);
  free(json);
  free(file);
  wl_workload_destroy(wl);
}

static void round_trip(wl_workload *(*build)(void), const char *name)
{
  wl_workload *wl = build();
  st_err err;
  st_err_clear(&err);
  const char *p = tmp_path(name);
  if (wl_workload_write(wl, p, &err))
    fail_msg("%s", err.msg);
  wl_workload *back = NULL;
  if (wl_workload_read(p, &back, &err))
    fail_msg("%s", err.msg);
  assert_same_workload(wl, back);
  /* and the compact form reads back the same too */
  char *compact = wl_workload_to_json(wl, 0);
  assert_null(strchr(compact, '\n'));
  wl_workload *back2 = NULL;
  if (wl_workload_parse(compact, strlen(compact), "compact", &back2, &err))
    fail_msg("%s", err.msg);
  assert_same_workload(wl, back2);
  free(compact);
  wl_workload_destroy(back2);
  wl_workload_destroy(back);
  wl_workload_destroy(wl);
}

static void test_round_trip__plain_keeps_every_field(void **state)
{
  (void)state;
  round_trip(build_everything, "everything.json");
  round_trip(build_pipeline2, "pipeline2.json");
}

static void test_round_trip__gzip_keeps_every_field(void **state)
{
  (void)state;
  round_trip(build_everything, "everything.json.gz");
  size_t n;
  char *d = read_bytes(tmp_path("everything.json.gz"), &n);
  assert_true((unsigned char)d[0] == 0x1f && (unsigned char)d[1] == 0x8b);
  free(d);
  d = read_bytes(tmp_path("everything.json"), &n);
  assert_true(d[0] == '{');
  free(d);
}

static void test_write__twice_gives_the_same_bytes(void **state)
{
  (void)state;
  const char *names[][2] = {{"a.json", "b.json"}, {"a.json.gz", "b.json.gz"}};
  for (int i = 0; i < 2; i++) {
    wl_workload *wl = build_everything();
    st_err err;
    st_err_clear(&err);
    assert_int_equal(wl_workload_write(wl, tmp_path(names[i][0]), &err), 0);
    wl_workload_destroy(wl);
    wl = build_everything();
    assert_int_equal(wl_workload_write(wl, tmp_path(names[i][1]), &err), 0);
    /* and a workload that was read back writes the same bytes again */
    wl_workload *back = NULL;
    assert_int_equal(wl_workload_read(tmp_path(names[i][1]), &back, &err), 0);
    char *x = wl_workload_to_json(wl, 1), *y = wl_workload_to_json(back, 1);
    assert_string_equal(x, y);
    free(x);
    free(y);
    wl_workload_destroy(back);
    wl_workload_destroy(wl);
    size_t na, nb;
    char *a = read_bytes(tmp_path(names[i][0]), &na), *b = read_bytes(tmp_path(names[i][1]), &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na);
    free(a);
    free(b);
  }
}

static void test_write__numbers_print_exactly(void **state)
{
  (void)state;
  /* The text, not just the value: integral sizes print as integers, others
   * in the shortest of %.15g / %.17g that reads back. */
  wl_workload *wl = build_everything();
  char *json = wl_workload_to_json(wl, 0);
  const char *want[] = {
      "\"duration_s\":0.14285714285714285", "\"flops\":1e+300",
      "\"bytes\":1234567890123456.8",      "\"duration_s\":-0",
      "\"bytes\":4.94065645841247e-324",   "\"flops\":0.30000000000000004",
      "\"bytes\":1.5",                     "\"splits\":[0,1000000000,3.25,7]",
      "\"tokens_per_step\":0.1",           "\"hw_flops_per_step\":0.33333333333333331",
      "\"model_flops_per_step\":null",     "\"tag\":-7",
      "\"value\":-2147483648",             "\"stream\":2",
      "\"m\":1,\"n\":2147483647,\"k\":3",
  };
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    if (!strstr(json, want[i]))
      fail_msg("'%s' is not in the output:\n%s", want[i], json);
  /* stream 0 and the defaults are left out */
  const char *absent[] = {"\"stream\":0", "\"stream\":\"compute\"", "\"batch\":1,",
                          "\"tag\":0", "\"phase\":\"none\"", "\"class\":\"other\""};
  for (size_t i = 0; i < sizeof absent / sizeof *absent; i++)
    if (strstr(json, absent[i]))
      fail_msg("'%s' is in the output", absent[i]);
  assert_non_null(strstr(json, "\"model\":\"m\\\"odel\\\\ \\n\\t\\u0001 \xc3\xa9\""));
  free(json);
  wl_workload_destroy(wl);
}

static void test_write__refuses_a_workload_that_fails_its_check(void **state)
{
  (void)state;
  wl_workload *wl = build_pipeline2();
  wl->programs[0].ops[3].bytes = -1;
  st_err err;
  st_err_clear(&err);
  const char *p = tmp_path("refused.json");
  assert_int_equal(wl_workload_write(wl, p, &err), ST_EINPUT);
  char want[700];
  snprintf(want, sizeof want,
           "cannot write workload '%s': program 'stage0': op 3 (send): 'bytes' is -1 (must be "
           "finite and >= 0)",
           p);
  assert_string_equal(err.msg, want);
  assert_int_equal(access(p, F_OK), -1);
  wl_workload_destroy(wl);

  const char *roles[] = {"tp", "tp"};
  const char *s[] = {"c"};
  wl = wl_workload_create(1, 2, roles);
  wl_program_add(wl, "p", 1, s);
  wl_rank_set(wl, 0, 0);
  assert_int_equal(wl_workload_write(wl, p, &err), ST_EINPUT);
  snprintf(want, sizeof want, "cannot write workload '%s': roles 0 and 1 are both named 'tp'", p);
  assert_string_equal(err.msg, want);
  wl_workload_destroy(wl);
}

static void test_read__file_errors_name_the_workload(void **state)
{
  (void)state;
  wl_workload *wl = NULL;
  st_err err;
  st_err_clear(&err);
  char want[700];
  const char *missing = tmp_path("nope.json.gz");
  assert_int_equal(wl_workload_read(missing, &wl, &err), ST_EIO);
  snprintf(want, sizeof want, "cannot read workload '%s': No such file or directory", missing);
  assert_string_equal(err.msg, want);

  /* a gzip workload with its trailer cut off */
  wl_workload *good = build_pipeline2();
  const char *p = tmp_path("cut.json.gz");
  assert_int_equal(wl_workload_write(good, p, &err), 0);
  wl_workload_destroy(good);
  size_t n;
  char *gz = read_bytes(p, &n);
  write_bytes(p, gz, n - 3);
  free(gz);
  assert_int_equal(wl_workload_read(p, &wl, &err), ST_EINPUT);
  size_t json_len;
  char *json = read_bytes(ST_SOURCE_DIR "/examples/pipeline2.json", &json_len);
  free(json);
  snprintf(want, sizeof want, "workload '%s': gzip data is truncated after %zu bytes", p,
           json_len);
  assert_string_equal(err.msg, want);
  assert_null(wl);

  const char *empty = tmp_path("empty.json");
  write_bytes(empty, "", 0);
  assert_int_equal(wl_workload_read(empty, &wl, &err), ST_EINPUT);
  snprintf(want, sizeof want, "workload '%s': the file is empty", empty);
  assert_string_equal(err.msg, want);
}

/* A minimal valid document, and broken variants of it. */
#define HEAD "{'format':'simtrain-workload','version':1,'num_ranks':2,'roles':['tp'],"
#define COMMS "'communicators':[{'name':'tp0','kind':'tp','ranks':[0,1]}],"
#define PROG(ops) "'programs':[{'name':'p','streams':['compute','comm'],'ops':[" ops "]}],"
#define OPS_OK                                                                              \
  "{'op':'compute','duration_s':1},{'op':'coll','coll':'allreduce','role':'tp','bytes':8," \
  "'stream':'comm','waits':[0]}"
#define RMAP "'rank_map':{'program':0,'comms':{'tp':0}}"
#define DOC_OK HEAD COMMS PROG(OPS_OK) RMAP "}"

typedef struct bad_doc {
  const char *doc;
  const char *msg; /* after "workload 'w.json': " */
} bad_doc;

static const bad_doc bad_docs[] = {
    {DOC_OK "x", "unexpected text after the JSON document at line 1, column 351"},
    {"{'format':\n 'simtrain-workload',\n 'version': 1,,}", "JSON syntax error near line 3, column 16"},
    {"[1,2]", "the document is an array, expected an object"},
    {HEAD COMMS PROG(OPS_OK) RMAP ",'extra':1}", "key 'extra' is unknown"},
    {HEAD COMMS PROG(OPS_OK) RMAP ",'roles':[]}", "key 'roles' appears twice"},
    {"{'format':'other','version':1,'num_ranks':1,'programs':[],'rank_map':{}}",
     "'format' is 'other', expected 'simtrain-workload'"},
    {"{'format':'simtrain-workload','version':2,'num_ranks':1,'programs':[],'rank_map':{}}",
     "'version' is 2; this simtrain reads version 1"},
    {"{'format':'simtrain-workload','version':1,'programs':[],'rank_map':{}}",
     "key 'num_ranks' is missing"},
    {"{'format':'simtrain-workload','version':1,'num_ranks':0,'programs':[],'rank_map':{}}",
     "'num_ranks' is 0, outside 1..1048576"},
    {"{'format':'simtrain-workload','version':1,'num_ranks':2.5,'programs':[],'rank_map':{}}",
     "'num_ranks' is 2.5, expected an integer"},
    {"{'format':'simtrain-workload','version':1,'num_ranks':'2','programs':[],'rank_map':{}}",
     "'num_ranks' is a string, expected an integer"},
    {HEAD COMMS "'programs':[]," RMAP "}", "'programs' is empty"},
    {"{'format':'simtrain-workload','version':1,'num_ranks':1,'roles':['a','b','a'],"
     "'programs':[],'rank_map':{}}",
     "roles[2]: role 'a' appears twice (also roles[0])"},
    {"{'format':'simtrain-workload','version':1,'num_ranks':1,'roles':['a',''],"
     "'programs':[],'rank_map':{}}",
     "roles[1]: is empty, expected a role name"},
    /* meta */
    {HEAD "'meta':{'dtype':'bf17'}," COMMS PROG(OPS_OK) RMAP "}",
     "meta: 'dtype' is 'bf17', expected one of fp32, tf32, bf16, fp16, fp8"},
    {HEAD "'meta':{'tokens_per_step':-1}," COMMS PROG(OPS_OK) RMAP "}",
     "meta: 'tokens_per_step' is negative"},
    {HEAD "'meta':{'iterations':0}," COMMS PROG(OPS_OK) RMAP "}",
     "meta: 'iterations' is 0, outside 1..2147483647"},
    {HEAD "'meta':{'model':3}," COMMS PROG(OPS_OK) RMAP "}",
     "meta: 'model' is a number, expected a string"},
    {HEAD "'meta':{'models':'x'}," COMMS PROG(OPS_OK) RMAP "}", "meta: key 'models' is unknown"},
    /* communicators */
    {HEAD "'communicators':[{'name':'tp0','kind':'tp','ranks':[0,99]}]," PROG(OPS_OK) RMAP "}",
     "communicators[0].ranks[1]: rank 99 is outside 0..1"},
    {HEAD "'communicators':[{'name':'tp0','kind':'tp','ranks':[1,1]}]," PROG(OPS_OK) RMAP "}",
     "communicators[0].ranks[1]: rank 1 appears twice (also at ranks[0])"},
    {HEAD "'communicators':[{'name':'tp0','kind':'tp','ranks':[]}]," PROG(OPS_OK) RMAP "}",
     "communicators[0]: 'ranks' is empty"},
    {HEAD "'communicators':[{'name':'tp0','kind':'tq','ranks':[0]}]," PROG(OPS_OK) RMAP "}",
     "communicators[0]: 'kind' is 'tq', expected one of other, tp, pp, dp, cp, ep, world"},
    {HEAD "'communicators':[{'name':'tp0','kind':'tp'}]," PROG(OPS_OK) RMAP "}",
     "communicators[0]: key 'ranks' is missing"},
    {HEAD "'communicators':[{'name':'tp0','ranks':[0,'1']}]," PROG(OPS_OK) RMAP "}",
     "communicators[0].ranks[1]: rank is a string, expected an integer"},
    {HEAD "'communicators':[7]," PROG(OPS_OK) RMAP "}",
     "communicators[0]: is a number, expected an object"},
    /* programs and ops */
    {HEAD COMMS "'programs':[{'name':'p','ops':[]}]," RMAP "}",
     "programs[0]: key 'streams' is missing"},
    {HEAD COMMS "'programs':[{'name':'p','streams':[],'ops':[]}]," RMAP "}",
     "programs[0]: 'streams' has 0 names, expected 1..65535"},
    {HEAD COMMS PROG("{'op':'compute','duration_s':1,'byts':4}") RMAP "}",
     "programs[0].ops[0]: key 'byts' is unknown"},
    {HEAD COMMS PROG(OPS_OK ",{'op':'send','role':'tp','peer':1,'bytes':-4}") RMAP "}",
     "programs[0].ops[2]: 'bytes' is negative"},
    {HEAD COMMS PROG(OPS_OK ",{'op':'coll','coll':'allreduce','role':'tpx','bytes':4}") RMAP "}",
     "programs[0].ops[2]: 'role' is 'tpx', not one of the workload's roles"},
    {HEAD COMMS PROG("{'op':'compute','duration_s':1,'waits':[1]},{'op':'compute','duration_s':1}")
         RMAP "}",
     "programs[0].ops[0].waits[0]: op 1 does not come before this op (0)"},
    {HEAD COMMS PROG("{'op':'compute','duration_s':1},{'op':'compute','duration_s':1,'waits':[0,1]}")
         RMAP "}",
     "programs[0].ops[1].waits[1]: op 1 does not come before this op (1)"},
    {HEAD COMMS PROG("{'op':'compute','duration_s':1,'waits':[-1]}") RMAP "}",
     "programs[0].ops[0].waits[0]: op -1 is outside 0..2147483647"},
    {HEAD COMMS PROG("{'op':'compute'}") RMAP "}",
     "programs[0].ops[0]: a compute op needs 'duration_s', or 'flops'/'bytes' for the compute "
     "model"},
    {HEAD COMMS PROG("{'op':'compute','duration_s':-1}") RMAP "}",
     "programs[0].ops[0]: 'duration_s' is negative"},
    {HEAD COMMS PROG("{'op':'compute','duration_s':1e999}") RMAP "}",
     "programs[0].ops[0]: 'duration_s' is not a finite number"},
    {HEAD COMMS PROG("{'duration_s':1}") RMAP "}", "programs[0].ops[0]: key 'op' is missing"},
    {HEAD COMMS PROG("{'op':'kernel','duration_s':1}") RMAP "}",
     "programs[0].ops[0]: 'op' is 'kernel', expected one of compute, coll, send, recv, marker, copy"},
    {HEAD COMMS PROG("{'op':'compute','duration_s':1,'peer':1}") RMAP "}",
     "programs[0].ops[0]: key 'peer' does not apply to a 'compute' op"},
    {HEAD COMMS PROG("{'op':'marker','mark':'layer','bytes':1}") RMAP "}",
     "programs[0].ops[0]: key 'bytes' does not apply to a 'marker' op"},
    {HEAD COMMS PROG("{'op':'marker','mark':'layers'}") RMAP "}",
     "programs[0].ops[0]: 'mark' is 'layers', expected one of iteration, phase, layer, "
     "microbatch"},
    {HEAD COMMS PROG("{'op':'marker','mark':'layer','value':1.5}") RMAP "}",
     "programs[0].ops[0]: 'value' is 1.5, expected an integer"},
    {HEAD COMMS PROG("{'op':'compute','duration_s':1,'stream':'net'}") RMAP "}",
     "programs[0].ops[0]: 'stream' is 'net', not a stream of this program"},
    {HEAD COMMS PROG("{'op':'compute','duration_s':1,'stream':2}") RMAP "}",
     "programs[0].ops[0]: 'stream' is 2, outside 0..1"},
    {HEAD COMMS PROG("{'op':'compute','duration_s':1,'stream':true}") RMAP "}",
     "programs[0].ops[0]: 'stream' is true, expected a stream name or index"},
    {HEAD COMMS PROG("{'op':'compute','duration_s':1,'phase':'fwd'}") RMAP "}",
     "programs[0].ops[0]: 'phase' is 'fwd', expected one of none, forward, backward, optimizer"},
    {HEAD COMMS PROG("{'op':'compute','flops':1,'class':'gemm','batch':0}") RMAP "}",
     "programs[0].ops[0]: 'batch' is 0, outside 1..2147483647"},
    {HEAD COMMS PROG("{'op':'compute','flops':1,'class':'gemm','concurrent':256}") RMAP "}",
     "programs[0].ops[0]: 'concurrent' is 256, outside 1..255"},
    {HEAD COMMS PROG("{'op':'compute','flops':1,'recompute':1}") RMAP "}",
     "programs[0].ops[0]: 'recompute' is a number, expected true or false"},
    {HEAD COMMS PROG("{'op':'compute','flops':1,'class':'attention','causal':'yes'}") RMAP "}",
     "programs[0].ops[0]: 'causal' is a string, expected true or false"},
    {HEAD COMMS PROG("{'op':'coll','coll':'allreduce','role':'tp','causal':true}") RMAP "}",
     "programs[0].ops[0]: key 'causal' does not apply to a 'coll' op"},
    {HEAD COMMS PROG("{'op':'compute','flops':1,'class':'attention','attn_impl':'xformers'}") RMAP "}",
     "programs[0].ops[0]: 'attn_impl' is 'xformers', expected one of default, cudnn, fa2, fa3, triton, fa1"},
    {HEAD COMMS PROG("{'op':'compute','flops':1,'class':'gemm','unfused_attn':'both'}") RMAP "}",
     "programs[0].ops[0]: 'unfused_attn' is 'both', expected one of forward, backward"},
    {HEAD COMMS PROG("{'op':'send','peer':1,'bytes':1,'unfused_attn':'forward'}") RMAP "}",
     "programs[0].ops[0]: key 'unfused_attn' does not apply to a 'send' op"},
    {HEAD COMMS PROG("{'op':'compute','flops':1,'class':'attention','dropout':0.1}") RMAP "}",
     "programs[0].ops[0]: 'dropout' is a number, expected true or false"},
    {HEAD COMMS PROG("{'op':'coll','coll':'allreduce','role':'tp','dropout':true}") RMAP "}",
     "programs[0].ops[0]: key 'dropout' does not apply to a 'coll' op"},
    {HEAD COMMS PROG("{'op':'compute','flops':1,'class':'gemm','m':8,'n':8,'k':8,'window':true}")
         RMAP "}",
     "programs[0].ops[0]: 'window' needs class 'attention' and 'n' > 0 (the keys each query "
     "attends to)"},
    {HEAD COMMS PROG("{'op':'compute','flops':1,'class':'attention','window':1}") RMAP "}",
     "programs[0].ops[0]: 'window' is a number, expected true or false"},
    {HEAD COMMS PROG("{'op':'compute','flops':1,'class':'attention','pytorch':true}") RMAP "}",
     "programs[0].ops[0]: 'pytorch' needs class 'gemm' (it names who dispatches a GEMM)"},
    {HEAD COMMS PROG("{'op':'coll','coll':'allgather','role':'tp','topk':2,'experts':4}") RMAP "}",
     "programs[0].ops[0]: keys 'topk' and 'experts' apply only to alltoall"},
    {HEAD COMMS PROG("{'op':'coll','coll':'alltoall','role':'tp','topk':2}") RMAP "}",
     "programs[0].ops[0]: key 'experts' is missing"},
    {HEAD COMMS PROG("{'op':'coll','coll':'alltoall','role':'tp','topk':0,'experts':4}") RMAP "}",
     "programs[0].ops[0]: 'topk' is 0, outside 1..1024"},
    {HEAD COMMS PROG("{'op':'compute','flops':1,'class':'gemm','topk':2}") RMAP "}",
     "programs[0].ops[0]: key 'topk' does not apply to a 'compute' op"},
    {HEAD COMMS PROG("{'op':'coll','coll':'allreduc','role':'tp'}") RMAP "}",
     "programs[0].ops[0]: 'coll' is 'allreduc', expected one of allreduce, allgather, "
     "reducescatter, broadcast, reduce, alltoall, barrier, shift"},
    {HEAD COMMS PROG("{'op':'coll','coll':'allreduce'}") RMAP "}",
     "programs[0].ops[0]: key 'role' is missing"},
    {HEAD COMMS PROG("{'op':'coll','coll':'allreduce','role':'tp','root':1}") RMAP "}",
     "programs[0].ops[0]: key 'root' applies only to broadcast and reduce"},
    {HEAD COMMS PROG("{'op':'coll','coll':'allgather','role':'tp','splits':[1,2]}") RMAP "}",
     "programs[0].ops[0]: key 'splits' applies only to alltoall"},
    {HEAD COMMS PROG("{'op':'coll','coll':'alltoall','role':'tp','splits':[1,-2]}") RMAP "}",
     "programs[0].ops[0].splits[1]: is negative"},
    {HEAD COMMS PROG("{'op':'coll','coll':'alltoall','role':'tp','splits':[1,2,3]}") RMAP "}",
     "programs[0].ops[0]: 'splits' has 3 entries, but communicator 'tp0' (role 'tp' of rank 0) "
     "has 2 members"},
    {HEAD COMMS PROG("{'op':'send','role':'tp','bytes':4}") RMAP "}",
     "programs[0].ops[0]: key 'peer' is missing"},
    {HEAD COMMS PROG("{'op':'send','role':'tp','peer':2,'bytes':4}") RMAP "}",
     "rank 0: program 'p' names member 2 of communicator 'tp0' (role 'tp'), which has 2 "
     "members"},
    {HEAD COMMS PROG("{'op':'recv','role':'tp','peer':0,'tag':3000000000}") RMAP "}",
     "programs[0].ops[0]: 'tag' is 3000000000, outside -2147483648..2147483647"},
    /* rank map */
    {HEAD COMMS PROG(OPS_OK) "'rank_map':{'program':[0,0,0],'comms':{'tp':0}}}",
     "rank_map: 'program' has 3 entries, expected 2 (one per rank) or one integer"},
    {HEAD COMMS PROG(OPS_OK) "'rank_map':{'program':[0,1],'comms':{'tp':0}}}",
     "rank_map.program[1]: program 1 is outside 0..0"},
    {HEAD COMMS PROG(OPS_OK) "'rank_map':{'program':0,'comms':{'tp':[0,1]}}}",
     "rank_map.comms.tp[1]: communicator 1 is outside -1..0"},
    {HEAD COMMS PROG(OPS_OK) "'rank_map':{'program':0,'comms':{'tpx':0}}}",
     "rank_map.comms: key 'tpx' is unknown (not a role)"},
    {HEAD COMMS PROG(OPS_OK) "'rank_map':{'program':0,'comms':{'tp':0,'tp':0}}}",
     "rank_map.comms: key 'tp' appears twice"},
    {HEAD COMMS PROG(OPS_OK) "'rank_map':{'comms':{'tp':0}}}", "rank_map: key 'program' is missing"},
    {HEAD COMMS PROG(OPS_OK) "'rank_map':{'program':0,'comms':{'tp':[0,-1]}}}",
     "rank 1: program 'p' uses role 'tp', but no communicator plays it for this rank"},
    {HEAD COMMS PROG(OPS_OK) "'rank_map':{'program':0}}",
     "rank 0: program 'p' uses role 'tp', but no communicator plays it for this rank"},
    {HEAD "'communicators':[{'name':'solo','kind':'tp','ranks':[1]}]," PROG(OPS_OK) RMAP "}",
     "rank 0: role 'tp' maps to communicator 'solo', which does not contain it"},
};

static void test_parse__reports_each_broken_document_exactly(void **state)
{
  (void)state;
  char *ok = doc(DOC_OK);
  wl_workload *wl = NULL;
  st_err err;
  st_err_clear(&err);
  if (wl_workload_parse(ok, strlen(ok), "w.json", &wl, &err))
    fail_msg("the base document does not parse: %s", err.msg);
  assert_int_equal(wl->programs[0].ops[1].stream, 1);
  wl_workload_destroy(wl);
  free(ok);
  for (size_t i = 0; i < sizeof bad_docs / sizeof *bad_docs; i++) {
    char *d = doc(bad_docs[i].doc);
    char want[ST_ERR_MSG_MAX];
    snprintf(want, sizeof want, "workload 'w.json': %s", bad_docs[i].msg);
    wl = NULL;
    st_err_clear(&err);
    int rc = wl_workload_parse(d, strlen(d), "w.json", &wl, &err);
    if (rc != ST_EINPUT || strcmp(err.msg, want) != 0)
      fail_msg("case %zu: rc %d\n  doc:  %s\n  got:  %s\n  want: %s", i, rc, d, err.msg, want);
    assert_null(wl);
    free(d);
  }
}

static void test_parse__accepts_any_key_order_and_shorthands(void **state)
{
  (void)state;
  /* keys in an order no writer uses; rank map as one integer per role;
   * stream by index; defaults everywhere */
  char *d = doc("{'rank_map':{'comms':{'tp':[0,0]},'program':[0,0]},"
                "'programs':[{'ops':[{'op':'coll','stream':1,'role':'tp','coll':'broadcast'},"
                "{'op':'send','role':'tp','peer':1,'waits':[0]}],'streams':['a','b']}],"
                "'communicators':[{'ranks':[1,0]}],'roles':['tp'],'num_ranks':2,"
                "'version':1,'format':'simtrain-workload'}");
  wl_workload *wl = NULL;
  st_err err;
  st_err_clear(&err);
  if (wl_workload_parse(d, strlen(d), "w", &wl, &err))
    fail_msg("%s", err.msg);
  free(d);
  assert_string_equal(wl->comms[0].name, "");
  assert_int_equal(wl->comms[0].kind, WL_COMM_OTHER);
  assert_string_equal(wl->programs[0].name, "");
  const wl_op *b = &wl->programs[0].ops[0];
  assert_int_equal(b->sub, WL_COLL_BROADCAST);
  assert_int_equal(b->peer, 0); /* root defaults to member 0 */
  assert_int_equal(b->stream, 1);
  assert_true(b->bytes == 0);
  const wl_op *s = &wl->programs[0].ops[1];
  assert_int_equal(s->tag, 0);
  assert_int_equal(s->stream, 0);
  assert_int_equal(s->wait_count, 1);
  assert_true(isnan(wl->meta.tokens_per_step));
  assert_int_equal(wl->meta.dtype, WL_DTYPE_BF16);
  assert_int_equal(wl->meta.iterations, 1);
  assert_null(wl->meta.model);
  wl_workload_destroy(wl);
}

/* ---- scale ------------------------------------------------------------------------ */

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* 16,384 ranks (TP 8 x PP 16 x DP 128), one program per pipeline stage of
 * 3,000 ops: writes and reads back in seconds, the rank map stays small. */
static void test_scale__16k_ranks_round_trip(void **state)
{
  (void)state;
  enum { TP = 8, PP = 16, DP = 128, N = TP * PP * DP, OPS = 3000 };
  const char *roles[] = {"tp", "dp", "pp_next", "pp_prev"};
  const char *streams[] = {"compute", "tp", "dp", "pp"};
  wl_workload *wl = wl_workload_create(N, 4, roles);
  /* rank = ((pp * DP) + dp) * TP + tp */
  int32_t *ranks = malloc(DP * sizeof *ranks);
  for (int pp = 0; pp < PP; pp++)
    for (int dp = 0; dp < DP; dp++) {
      int32_t g[TP];
      for (int t = 0; t < TP; t++)
        g[t] = (pp * DP + dp) * TP + t;
      wl_comm_add(wl, "tp", WL_COMM_TP, TP, g);
    }
  for (int pp = 0; pp < PP; pp++)
    for (int t = 0; t < TP; t++) {
      for (int dp = 0; dp < DP; dp++)
        ranks[dp] = (pp * DP + dp) * TP + t;
      wl_comm_add(wl, "dp", WL_COMM_DP, DP, ranks);
    }
  int first_pp = wl->num_comms;
  for (int pp = 0; pp < PP; pp++)
    for (int dp = 0; dp < DP; dp++)
      for (int t = 0; t < TP; t++) {
        int32_t pair[2] = {(pp * DP + dp) * TP + t, (((pp + 1) % PP) * DP + dp) * TP + t};
        wl_comm_add(wl, "pp", WL_COMM_PP, 2, pair);
      }
  free(ranks);
  for (int pp = 0; pp < PP; pp++) {
    char name[32];
    snprintf(name, sizeof name, "stage%d", pp);
    wl_program_add(wl, name, 4, streams);
    wl_program *p = &wl->programs[pp];
    for (int i = 0; i < OPS; i++) {
      wl_op op;
      uint32_t w = (uint32_t)(i - 1);
      switch (i % 6) {
      case 0: op = wl_op_marker(0, WL_MARK_LAYER, i / 6); break;
      case 1:
        op = wl_op_compute(0, -1);
        op.sub = WL_CLASS_GEMM;
        op.m = 4096, op.n = 1536, op.k = 12288;
        op.flops = 2.0 * 4096 * 1536 * 12288;
        op.name = wl_program_string(p, "mlp.fc1");
        break;
      case 2: op = wl_op_coll(1, WL_COLL_ALLREDUCE, 0, 33554432); break;
      case 3: op = wl_op_compute(0, 1.234e-4 * (1 + i % 7)); break;
      case 4: op = wl_op_p2p(3, i % 12 < 6 ? WL_OP_SEND : WL_OP_RECV, 2, 1, i, 1 << 24); break;
      default: op = wl_op_coll(2, WL_COLL_REDUCESCATTER, 1, 1.5e8); break;
      }
      wl_program_append(p, &op, i % 6 == 2 ? &w : NULL, i % 6 == 2 ? 1 : 0);
    }
  }
  for (int r = 0; r < N; r++) {
    int pp = r / (DP * TP), dp = (r / TP) % DP, t = r % TP;
    wl_rank_set(wl, r, pp);
    wl_rank_set_comm(wl, r, 0, pp * DP + dp);
    wl_rank_set_comm(wl, r, 1, PP * DP + pp * TP + t);
    wl_rank_set_comm(wl, r, 2, first_pp + r);
    int prev = (((pp + PP - 1) % PP) * DP + dp) * TP + t;
    wl_rank_set_comm(wl, r, 3, first_pp + prev);
  }
  st_err err;
  st_err_clear(&err);
  const char *p = tmp_path("big.json.gz");
  double t0 = now_s();
  if (wl_workload_write(wl, p, &err))
    fail_msg("%s", err.msg);
  double t1 = now_s();
  wl_workload *back = NULL;
  if (wl_workload_read(p, &back, &err))
    fail_msg("%s", err.msg);
  double t2 = now_s();
  size_t gz_bytes;
  free(read_bytes(p, &gz_bytes));
  char *json = wl_workload_to_json(wl, 1);
  printf("# 16,384 ranks, %zu ops, %d communicators: write %.2f s, read %.2f s, "
         "%zu bytes of JSON, %zu gzip\n",
         wl_workload_num_ops(back), back->num_comms, t1 - t0, t2 - t1, strlen(json), gz_bytes);
  free(json);
  assert_same_workload(wl, back);
  wl_workload_destroy(back);
  wl_workload_destroy(wl);
}

/* Real traces (when the shared folder is there): what the importers produce
 * writes and reads back unchanged. */
static void test_real_traces__imported_workloads_read_back_unchanged(void **state)
{
  (void)state;
  const char *dir = ST_SHARED_DIR "/traces";
  if (access(dir, R_OK) != 0) {
    printf("# skipped: no traces folder at %s\n", dir);
    skip();
  }
  struct {
    const char *spec;
    const char *et;
    int gpus;
  } t[] = {
      {"kineto:" ST_SHARED_DIR "/traces/param-dlrm-v100x8/kineto",
       ST_SHARED_DIR "/traces/param-dlrm-v100x8/et", 0},
      {"chakra:" ST_SHARED_DIR "/traces/chakra-resnet50-ddp/chakra.0.et", NULL, 2},
      {"chakra:" ST_SHARED_DIR "/traces/astra-sim/microbench-et/microbenchmarks/all_to_all/"
       "16npus_1MB/all_to_all",
       NULL, 0},
      {"astra:" ST_SHARED_DIR "/traces/astra-sim/text-workloads-1.0/Transformer_HybridParallel.txt",
       NULL, 64},
      {"smpi:" ST_SHARED_DIR "/traces/simgrid-ti/actions_allgatherv.txt", NULL, 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    tr_options opt;
    tr_options_init(&opt);
    opt.et_dir = t[i].et;
    opt.num_gpus = t[i].gpus;
    tr_import_stats stats;
    memset(&stats, 0, sizeof stats);
    wl_workload *wl = NULL;
    st_err err;
    st_err_clear(&err);
    if (tr_import(t[i].spec, &opt, &wl, &stats, &err))
      fail_msg("%s: %s", t[i].spec, err.msg);
    tr_import_stats_release(&stats);
    const char *p = tmp_path("imported.json.gz");
    double t0 = now_s();
    if (wl_workload_write(wl, p, &err))
      fail_msg("%s", err.msg);
    double t1 = now_s();
    wl_workload *back = NULL;
    if (wl_workload_read(p, &back, &err))
      fail_msg("%s", err.msg);
    double t2 = now_s();
    size_t gz;
    free(read_bytes(p, &gz));
    printf("# %s: %d ranks, %zu ops: write %.3f s, read %.3f s, %zu bytes gzip\n",
           strrchr(t[i].spec, '/') + 1, wl->num_ranks, wl_workload_num_ops(wl), t1 - t0, t2 - t1,
           gz);
    assert_same_workload(wl, back);
    wl_workload_destroy(back);
    wl_workload_destroy(wl);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_append__returns_indices_and_copies_waits),
      cmocka_unit_test(test_repeat__copies_ops_waits_and_markers),
      cmocka_unit_test(test_constructors__set_defaults),
      cmocka_unit_test(test_string__interns_repeats_and_empty_is_zero),
      cmocka_unit_test(test_splits__stored_back_to_back),
      cmocka_unit_test(test_create__rejects_bad_sizes_and_starts_unmapped),
      cmocka_unit_test(test_pipeline2__passes_check_and_counts),
      cmocka_unit_test(test_check__reports_each_broken_workload_exactly),
      cmocka_unit_test(test_check__split_sizes_must_agree_across_ranks),
      cmocka_unit_test(test_names__round_trip_every_table),
      cmocka_unit_test(test_names__collective_aliases),
      cmocka_unit_test(test_names__dtype_bytes),
      cmocka_unit_test(test_parse_bytes__table),
      cmocka_unit_test(test_format_bytes__binary_units),
      cmocka_unit_test(test_err__set_and_prefix),
      cmocka_unit_test(test_err__table_gives_code_text_and_status),
      cmocka_unit_test(test_num_check__finite_in_range_and_whole),
      cmocka_unit_test(test_num_parse__whole_text_then_checked),
      cmocka_unit_test(test_err__message_is_one_line),
      cmocka_unit_test(test_mem_guard__ends_the_process_and_removes_temporaries),
      cmocka_unit_test(test_read_all__plain_and_gzip_give_the_same_bytes),
      cmocka_unit_test(test_read_all__empty_file_is_an_empty_string),
      cmocka_unit_test(test_read_all__truncated_and_corrupt_gzip_are_errors),
      cmocka_unit_test(test_write_atomic__replaces_and_leaves_no_temp_file),
      cmocka_unit_test(test_write_atomic__writes_through_symlinks_and_refuses_non_files),
      cmocka_unit_test(test_path__basename_and_dirname_table),
      cmocka_unit_test(test_dir_list__sorted_regular_files_that_pass_the_filter),
      cmocka_unit_test(test_text_line_col__counts_from_one),
      cmocka_unit_test(test_json_str__escapes_quotes_backslashes_and_controls),
      cmocka_unit_test(test_jrd__messages_name_the_subject_the_path_and_the_value),
      cmocka_unit_test(test_json_parse__errors_point_at_the_place),
      cmocka_unit_test(test_example__reads_as_the_pipeline_built_in_c),
      cmocka_unit_test(test_example__is_in_the_writers_layout),
      cmocka_unit_test(test_round_trip__plain_keeps_every_field),
      cmocka_unit_test(test_round_trip__gzip_keeps_every_field),
      cmocka_unit_test(test_write__twice_gives_the_same_bytes),
      cmocka_unit_test(test_write__numbers_print_exactly),
      cmocka_unit_test(test_write__refuses_a_workload_that_fails_its_check),
      cmocka_unit_test(test_read__file_errors_name_the_workload),
      cmocka_unit_test(test_parse__reports_each_broken_document_exactly),
      cmocka_unit_test(test_parse__accepts_any_key_order_and_shorthands),
      cmocka_unit_test(test_scale__16k_ranks_round_trip),
      cmocka_unit_test(test_real_traces__imported_workloads_read_back_unchanged),
  };
  return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
