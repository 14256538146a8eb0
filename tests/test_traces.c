/* test_traces.c — the importers: counts on real traces, exact errors on
 * broken Kineto files, and the small ASTRA-sim / SMPI files in tests/data.
 *
 * Expected numbers come from the trace-format notes (measured on the files
 * with other tools) or from hand calculation on the generated trace below. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim.h"
#include "sim_fork.h"
#include "traces.h"

static char tmpdir[64];

static int shared_has(const char *rel)
{
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", ST_SHARED_DIR, rel);
  struct stat s;
  return !stat(p, &s);
}

static int do_import(const char *spec, const tr_options *opt, wl_workload **wl,
                     tr_import_stats *st, st_err *err)
{
  st_err_clear(err);
  *wl = NULL;
  return tr_import(spec, opt, wl, st, err);
}

/* ---- a small generated Kineto trace --------------------------------------- */

/* Event 0 the step [1000, 1500]; 1-2 launches; 3 a GEMM on stream 7 at
 * 1030 for 100; 4 an NCCL all-reduce of 1024 floats on stream 20 at 1140
 * (launched at 1020, so it waited for the GEMM); 5 metadata. */
static const char *kineto_events[] = {
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#3\",\"pid\":100,"
    "\"tid\":100,\"ts\":1000,\"dur\":500}",
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":100,\"tid\":100,"
    "\"ts\":1010,\"dur\":5,\"args\":{\"correlation\":1}}",
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":100,\"tid\":100,"
    "\"ts\":1020,\"dur\":5,\"args\":{\"correlation\":2}}",
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"sgemm_128x64(float*)\",\"pid\":0,\"tid\":7,"
    "\"ts\":1030,\"dur\":100,\"args\":{\"correlation\":1,\"stream\":7}}",
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)\","
    "\"pid\":0,\"tid\":20,\"ts\":1140,\"dur\":50,\"args\":{\"correlation\":2,\"Collective "
    "name\":\"allreduce\",\"In msg nelems\":1024,\"Out msg nelems\":1024,\"dtype\":\"Float\"}}",
    "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":7,\"args\":{\"name\":\"stream 7\"}}",
};
enum { KN = sizeof kineto_events / sizeof kineto_events[0] };

/* The trace with event `which` replaced by `repl` (NULL: unchanged), or an
 * extra event appended. */
static char *kineto_json(int which, const char *repl, const char *extra)
{
  size_t cap = 8192;
  char *s = malloc(cap);
  strcpy(s, "{\"schemaVersion\":1,\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":0,"
            "\"world_size\":1},\"traceEvents\":[");
  for (int i = 0; i < KN; i++) {
    if (i)
      strcat(s, ",");
    strcat(s, i == which && repl ? repl : kineto_events[i]);
  }
  if (extra) {
    strcat(s, ",");
    strcat(s, extra);
  }
  strcat(s, "]}");
  return s;
}

static void write_file(const char *path, const void *data, size_t len)
{
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, len, f), len);
  fclose(f);
}

static void test_kineto__small_trace_maps_gaps_waits_and_sizes(void **state)
{
  (void)state;
  char path[128], spec[160];
  snprintf(path, sizeof path, "%s/rank0.json", tmpdir);
  char *js = kineto_json(-1, NULL, NULL);
  write_file(path, js, strlen(js));
  free(js);
  snprintf(spec, sizeof spec, "kineto:%s", path);
  wl_workload *wl;
  tr_import_stats st;
  st_err err;
  assert_int_equal(do_import(spec, NULL, &wl, &st, &err), 0);
  assert_int_equal(wl->num_ranks, 1);
  const wl_program *p = &wl->programs[0];
  /* host marker, start offset, 30 us launch gap, GEMM 100 us, 10 us gap
   * after the GEMM (waits on it), all-reduce of 4096 B, host tail 310 us */
  assert_int_equal(p->num_ops, 7);
  assert_int_equal(p->ops[0].kind, WL_OP_MARKER);
  assert_true(fabs(p->ops[1].duration_s - 0) < 1e-12);
  assert_true(fabs(p->ops[2].duration_s - 30e-6) < 1e-12);
  assert_string_equal(wl_op_name(p, &p->ops[2]), "launch gap");
  assert_int_equal(p->ops[3].sub, WL_CLASS_GEMM);
  assert_true(fabs(p->ops[3].duration_s - 100e-6) < 1e-12);
  assert_string_equal(wl_op_name(p, &p->ops[4]), "dependency gap");
  assert_true(fabs(p->ops[4].duration_s - 10e-6) < 1e-12);
  /* the first op of its stream also waits on the start offset (op 1) */
  assert_int_equal(p->ops[4].wait_count, 2);
  assert_int_equal(p->waits[p->ops[4].wait_first], 1);
  assert_int_equal(p->waits[p->ops[4].wait_first + 1], 3);
  assert_int_equal(p->ops[5].kind, WL_OP_COLL);
  assert_int_equal(p->ops[5].sub, WL_COLL_ALLREDUCE);
  assert_true(p->ops[5].bytes == 4096);
  assert_true(fabs(p->ops[6].duration_s - 310e-6) < 1e-12);
  assert_true(fabs(st.measured_step_s - 500e-6) < 1e-12);
  assert_int_equal(st.coll_ops, 1);
  assert_int_equal(st.compute_ops, 1);
  tr_import_stats_release(&st);
  wl_workload_destroy(wl);

  /* --no-launch-gaps keeps the wait, drops the delays */
  tr_options o;
  tr_options_init(&o);
  o.keep_launch_gaps = 0;
  assert_int_equal(do_import(spec, &o, &wl, &st, &err), 0);
  p = &wl->programs[0];
  assert_int_equal(p->num_ops, 5);
  assert_int_equal(p->ops[3].kind, WL_OP_COLL);
  assert_int_equal(p->ops[3].wait_count, 2);
  assert_int_equal(p->waits[p->ops[3].wait_first + 1], 2); /* the GEMM */
  tr_import_stats_release(&st);
  wl_workload_destroy(wl);
}

static const struct {
  int which;
  const char *repl;
  const char *msg; /* after "trace '<path>': " */
} kineto_broken[] = {
    {3,
     "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":1030,"
     "\"args\":{}}",
     "event 3: 'dur' is missing"},
    {3,
     "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":1030,"
     "\"dur\":-4}",
     "event 3: 'dur' is negative"},
    {3, "{\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":1030,\"dur\":4}",
     "event 3: 'ph' is missing"},
    {3, "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"ts\":1030,\"dur\":4}",
     "event 3: 'tid' is missing"},
    {4,
     "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclKernel_AllReduce_RING_LL_Sum_float(x)\","
     "\"pid\":0,\"tid\":20,\"ts\":1140,\"dur\":50,\"args\":{\"correlation\":2,\"Collective "
     "name\":\"allreduce\",\"In msg nelems\":1024,\"dtype\":\"Quaternion\"}}",
     "event 4: dtype 'Quaternion' is unknown"},
    {0, "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#3\",\"ts\":\"soon\","
        "\"dur\":500}",
     "event 0: 'ts' is not a number"},
    {0, "7", "event 0: not an object"},
};

static void test_kineto__broken_events_fail_naming_file_and_event(void **state)
{
  (void)state;
  char path[128], spec[160];
  snprintf(path, sizeof path, "%s/rank0.json", tmpdir);
  snprintf(spec, sizeof spec, "kineto:%s", path);
  for (size_t i = 0; i < sizeof kineto_broken / sizeof kineto_broken[0]; i++) {
    char *js = kineto_json(kineto_broken[i].which, kineto_broken[i].repl, NULL);
    write_file(path, js, strlen(js));
    free(js);
    wl_workload *wl;
    tr_import_stats st;
    st_err err;
    assert_int_equal(do_import(spec, NULL, &wl, &st, &err), ST_EINPUT);
    assert_null(wl);
    char want[512];
    snprintf(want, sizeof want, "trace '%s': %s", path, kineto_broken[i].msg);
    assert_string_equal(err.msg, want);
  }
}

static void test_kineto__unknown_event_kind_is_skipped_and_counted(void **state)
{
  (void)state;
  char path[128], spec[160];
  snprintf(path, sizeof path, "%s/rank0.json", tmpdir);
  snprintf(spec, sizeof spec, "kineto:%s", path);
  char *js = kineto_json(-1, NULL, "{\"ph\":\"Zq\",\"name\":\"future\",\"ts\":1}");
  write_file(path, js, strlen(js));
  free(js);
  wl_workload *wl;
  tr_import_stats st;
  st_err err;
  assert_int_equal(do_import(spec, NULL, &wl, &st, &err), 0);
  assert_int_equal(st.events_skipped, 1);
  assert_int_equal(st.events_read, KN + 1);
  tr_import_stats_release(&st);
  wl_workload_destroy(wl);
}

static void test_kineto__truncated_at_any_byte_fails_cleanly(void **state)
{
  (void)state;
  char path[128], spec[160];
  snprintf(path, sizeof path, "%s/rank0.json", tmpdir);
  snprintf(spec, sizeof spec, "kineto:%s", path);
  char *js = kineto_json(-1, NULL, NULL);
  size_t len = strlen(js);
  char prefix[200];
  snprintf(prefix, sizeof prefix, "trace '%s': ", path);
  for (size_t k = 0; k < len; k++) {
    write_file(path, js, k);
    wl_workload *wl;
    tr_import_stats st;
    st_err err;
    int rc = do_import(spec, NULL, &wl, &st, &err);
    assert_int_equal(rc, ST_EINPUT);
    assert_null(wl);
    assert_memory_equal(err.msg, prefix, strlen(prefix));
    char want[256];
    snprintf(want, sizeof want, "%snot valid JSON at byte", prefix);
    assert_memory_equal(err.msg, want, strlen(want));
  }
  /* the same compressed, cut every 7 bytes */
  char gz[160];
  snprintf(gz, sizeof gz, "%s/rank0.json.gz", tmpdir);
  st_err err;
  assert_int_equal(st_file_write_atomic(gz, js, len, 1, &err), 0);
  char *zdata;
  size_t zlen;
  FILE *f = fopen(gz, "rb");
  zdata = malloc(1 << 16);
  zlen = fread(zdata, 1, 1 << 16, f);
  fclose(f);
  snprintf(spec, sizeof spec, "kineto:%s", gz);
  snprintf(prefix, sizeof prefix, "trace '%s': ", gz);
  for (size_t k = 0; k < zlen; k += 7) {
    write_file(gz, zdata, k);
    wl_workload *wl;
    tr_import_stats st;
    assert_int_not_equal(do_import(spec, NULL, &wl, &st, &err), 0);
    assert_null(wl);
    assert_memory_equal(err.msg, prefix, strlen(prefix));
  }
  free(zdata);
  free(js);
  unlink(gz);
}

/* ---- the shared real traces ------------------------------------------------- */

static void test_kineto__dlrm_v100x8_counts_and_measured_step(void **state)
{
  (void)state;
  if (!shared_has("traces/param-dlrm-v100x8/kineto")) {
    print_message("shared traces not found under %s: skipped\n", ST_SHARED_DIR);
    skip();
  }
  wl_workload *wl;
  tr_import_stats st;
  st_err err;
  assert_int_equal(
      do_import("kineto:" ST_SHARED_DIR "/traces/param-dlrm-v100x8/kineto", NULL, &wl, &st, &err),
      0);
  assert_int_equal(wl->num_ranks, 8);
  assert_int_equal(st.coll_ops, 64); /* eight collectives per step per rank */
  assert_true(fabs(st.measured_step_s - 20823e-6) < 1e-9);
  double lo = INFINITY, hi = 0;
  for (int r = 0; r < 8; r++) {
    lo = fmin(lo, st.rank_measured_s[r]);
    hi = fmax(hi, st.rank_measured_s[r]);
  }
  assert_true(lo > 12.4e-3 && hi < 20.0e-3);
  /* the two large all-reduces whose sizes come from the execution traces */
  int seen_a = 0, seen_b = 0;
  for (int p = 0; p < wl->num_programs; p++)
    for (size_t i = 0; i < wl->programs[p].num_ops; i++) {
      const wl_op *op = &wl->programs[p].ops[i];
      if (op->kind == WL_OP_COLL && op->sub == WL_COLL_ALLREDUCE) {
        seen_a += op->bytes == 1576964;
        seen_b += op->bytes == 907840;
      }
    }
  assert_int_equal(seen_a, 8);
  assert_int_equal(seen_b, 8);
  tr_import_stats_release(&st);
  wl_workload_destroy(wl);
}

static void test_chakra__resnet50_every_node_accounted(void **state)
{
  (void)state;
  if (!shared_has("traces/chakra-resnet50-ddp/chakra.0.et")) {
    print_message("shared traces not found under %s: skipped\n", ST_SHARED_DIR);
    skip();
  }
  wl_workload *wl;
  tr_import_stats st;
  st_err err;
  assert_int_equal(
      do_import("chakra:" ST_SHARED_DIR "/traces/chakra-resnet50-ddp/chakra", NULL, &wl, &st, &err),
      0);
  assert_int_equal(st.nodes_by_type[4], 3643);
  assert_int_equal(st.nodes_by_type[7], 21);
  assert_int_equal(st.coll_ops, 7);
  assert_int_equal(wl_workload_num_ops(wl), 3664);
  /* GPU compute: 1,209 nodes, 292,828 us */
  const wl_program *p = &wl->programs[0];
  long n = 0;
  double us = 0;
  for (size_t i = 0; i < p->num_ops; i++) {
    const wl_op *op = &p->ops[i];
    if (op->kind == WL_OP_COMPUTE && strncmp(p->stream_names[op->stream], "cpu", 3)) {
      n++;
      us += op->duration_s * 1e6;
    }
  }
  assert_int_equal(n, 1209);
  assert_true(fabs(us - 292828) < 1e-3);
  tr_import_stats_release(&st);
  wl_workload_destroy(wl);
}

static void test_chakra__astra_microbenchmarks_are_one_collective(void **state)
{
  (void)state;
  if (!shared_has("traces/astra-sim/microbench-et/microbenchmarks")) {
    print_message("shared traces not found under %s: skipped\n", ST_SHARED_DIR);
    skip();
  }
  static const struct {
    const char *dir;
    int coll;
  } kinds[] = {{"all_reduce", WL_COLL_ALLREDUCE},
               {"all_gather", WL_COLL_ALLGATHER},
               {"reduce_scatter", WL_COLL_REDUCESCATTER},
               {"all_to_all", WL_COLL_ALLTOALL}};
  for (size_t k = 0; k < 4; k++)
    for (int n = 4; n <= 16; n *= 2) {
      char spec[512];
      snprintf(spec, sizeof spec,
               "chakra:%s/traces/astra-sim/microbench-et/microbenchmarks/%s/%dnpus_1MB/%s",
               ST_SHARED_DIR, kinds[k].dir, n, kinds[k].dir);
      wl_workload *wl;
      tr_import_stats st;
      st_err err;
      assert_int_equal(do_import(spec, NULL, &wl, &st, &err), 0);
      assert_int_equal(wl->num_ranks, n);
      assert_int_equal(st.coll_ops, n);
      for (int r = 0; r < n; r++) {
        const wl_program *p = &wl->programs[wl->rank_program[r]];
        assert_int_equal(p->num_ops, 1);
        assert_int_equal(p->ops[0].sub, kinds[k].coll);
        assert_true(p->ops[0].bytes == 1048576);
      }
      tr_import_stats_release(&st);
      wl_workload_destroy(wl);
    }
}

static void test_smpi__shared_split_traces_list(void **state)
{
  (void)state;
  if (!shared_has("traces/simgrid-ti/split_traces")) {
    print_message("shared traces not found under %s: skipped\n", ST_SHARED_DIR);
    skip();
  }
  wl_workload *wl;
  tr_import_stats st;
  st_err err;
  assert_int_equal(
      do_import("smpi:" ST_SHARED_DIR "/traces/simgrid-ti/split_traces", NULL, &wl, &st, &err), 0);
  assert_int_equal(wl->num_ranks, 2);
  assert_int_equal(st.p2p_ops, 6);
  tr_import_stats_release(&st);
  wl_workload_destroy(wl);
}

/* ---- small files of our own -------------------------------------------------- */

static void test_astra__transformer_groups_and_phases(void **state)
{
  (void)state;
  tr_options o;
  tr_options_init(&o);
  o.num_gpus = 4;
  wl_workload *wl;
  tr_import_stats st;
  st_err err;
  assert_int_equal(do_import("astra:" ST_TEST_DATA_DIR "/astra_tiny.txt", &o, &wl, &st, &err), 0);
  assert_int_equal(wl->num_ranks, 4);
  /* tp 2 x dp 2: fwd/ig collectives over the tp group, wg over dp */
  assert_int_equal(st.compute_ops, 6);
  assert_int_equal(st.coll_ops, 4);
  const wl_program *p = &wl->programs[0];
  int tp = -1, dp = -1;
  for (int r = 0; r < wl->num_roles; r++) {
    if (!strcmp(wl->roles[r], "tp"))
      tp = r;
    if (!strcmp(wl->roles[r], "dp"))
      dp = r;
  }
  const wl_comm *c1 = &wl->comms[wl_rank_comm(wl, 1, tp)];
  assert_int_equal(c1->size, 2);
  assert_int_equal(c1->ranks[0], 0);
  assert_int_equal(c1->ranks[1], 1);
  const wl_comm *c2 = &wl->comms[wl_rank_comm(wl, 1, dp)];
  assert_int_equal(c2->ranks[0], 1);
  assert_int_equal(c2->ranks[1], 3);
  /* forward attn all-gather; backward in reverse: mlp wg reduce-scatter
   * (mlp has no ig comm), attn ig all-reduce, attn wg all-reduce */
  double expect_bytes[] = {4096, 32768, 8192, 16384};
  int expect_role[] = {tp, dp, tp, dp};
  int k = 0;
  double comp_ns = 0;
  for (size_t i = 0; i < p->num_ops; i++) {
    if (p->ops[i].kind == WL_OP_COLL) {
      assert_true(p->ops[i].bytes == expect_bytes[k]);
      assert_int_equal(p->ops[i].role, expect_role[k]);
      k++;
    }
    if (p->ops[i].kind == WL_OP_COMPUTE && p->ops[i].stream == 0)
      comp_ns += p->ops[i].duration_s * 1e9;
  }
  assert_int_equal(k, 4);
  assert_true(fabs(comp_ns - (1000 + 2000 + 3000 + 500 + 600 + 700)) < 1e-6);
  tr_import_stats_release(&st);
  wl_workload_destroy(wl);
}

static void test_astra__errors_name_file_and_line(void **state)
{
  (void)state;
  wl_workload *wl;
  tr_import_stats st;
  st_err err;
  assert_int_equal(do_import("astra:" ST_TEST_DATA_DIR "/astra_badsize.txt", NULL, &wl, &st, &err),
                   ST_EINPUT);
  assert_string_equal(err.msg, "trace '" ST_TEST_DATA_DIR
                               "/astra_badsize.txt': line 3: wg_bytes 'twelve' is not a number >= 0");
  assert_int_equal(do_import("astra:" ST_TEST_DATA_DIR "/astra_tiny.txt", NULL, &wl, &st, &err),
                   ST_EUSAGE);
  assert_string_equal(err.msg, "trace '" ST_TEST_DATA_DIR
                               "/astra_tiny.txt': the GPU count is not in the file: give --gpus N");
}

static void test_smpi__actions_map_to_ops(void **state)
{
  (void)state;
  wl_workload *wl;
  tr_import_stats st;
  st_err err;
  assert_int_equal(do_import("smpi:" ST_TEST_DATA_DIR "/smpi_tiny.txt", NULL, &wl, &st, &err), 0);
  assert_int_equal(wl->num_ranks, 2);
  const wl_program *p0 = &wl->programs[wl->rank_program[0]];
  const wl_program *p1 = &wl->programs[wl->rank_program[1]];
  /* rank 0: compute, send, allreduce + its flops, alltoallv */
  assert_int_equal(p0->num_ops, 5);
  assert_true(p0->ops[0].flops == 1e9);
  assert_int_equal(p0->ops[1].kind, WL_OP_SEND);
  assert_int_equal(p0->ops[1].tag, 7);
  assert_true(p0->ops[2].bytes == 250);
  assert_true(p0->ops[3].flops == 1e6);
  assert_int_equal(p0->ops[4].flags & WL_OPF_SPLITS, WL_OPF_SPLITS);
  assert_true(p0->ops[4].bytes == 30);
  assert_true(p0->splits[p0->ops[4].split_first] == 10);
  assert_true(p0->splits[p0->ops[4].split_first + 1] == 20);
  /* rank 1: irecv on a request stream, sleep, wait (waits on the irecv) */
  assert_int_equal(p1->ops[0].kind, WL_OP_RECV);
  assert_int_not_equal(p1->ops[0].stream, 0);
  assert_true(p1->ops[1].duration_s == 0.5);
  assert_int_equal(p1->ops[2].wait_count, 1);
  assert_int_equal(p1->waits[p1->ops[2].wait_first], 0);
  tr_import_stats_release(&st);
  wl_workload_destroy(wl);

  assert_int_equal(do_import("smpi:" ST_TEST_DATA_DIR "/smpi_bad.txt", NULL, &wl, &st, &err),
                   ST_EINPUT);
  assert_string_equal(err.msg, "trace '" ST_TEST_DATA_DIR
                               "/smpi_bad.txt': line 2: action 'frobnicate' is not supported");
}

static void test_import__unknown_format_lists_known(void **state)
{
  (void)state;
  wl_workload *wl;
  tr_import_stats st;
  st_err err;
  assert_int_equal(do_import("dumpi:x", NULL, &wl, &st, &err), ST_EUSAGE);
  assert_string_equal(err.msg,
                      "trace format 'dumpi' is unknown (known: kineto, chakra, astra, smpi)");
}

/* ---- replays (one SimGrid engine per process: each run is forked) ---------- */

/* Platform "node8": 8 GPUs on an NVSwitch, B = 450e9 B/s per GPU per
 * direction, a GPU-to-GPU route of latency 1e-6 s. */
static void test_replay__astra_microbenchmarks_match_closed_form(void **state)
{
  (void)state;
  if (!shared_has("traces/astra-sim/microbench-et/microbenchmarks")) {
    print_message("shared traces not found under %s: skipped\n", ST_SHARED_DIR);
    skip();
  }
  const double B = 450e9, L = 1e-6, S = 1048576, n = 8;
  static const char *const dirs[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
  /* ring all-reduce 2(n-1)/n S/B + 2(n-1)L; ring all-gather and
   * reduce-scatter (n-1)/n S/B + (n-1)L; direct all-to-all (n-1)/n S/B + L */
  const double expect[] = {2 * (n - 1) / n * S / B + 2 * (n - 1) * L,
                           (n - 1) / n * S / B + (n - 1) * L, (n - 1) / n * S / B + (n - 1) * L,
                           (n - 1) / n * S / B + L};
  for (int k = 0; k < 4; k++) {
    char spec[512];
    snprintf(spec, sizeof spec,
             "chakra:%s/traces/astra-sim/microbench-et/microbenchmarks/%s/8npus_1MB/%s",
             ST_SHARED_DIR, dirs[k], dirs[k]);
    wl_workload *wl;
    tr_import_stats st;
    st_err err;
    assert_int_equal(do_import(spec, NULL, &wl, &st, &err), 0);
    sim_options o;
    sim_options_init(&o);
    o.quiet = 1;
    o.coll_model = SIM_COLL_IDEAL; /* the closed forms are alpha-beta */
    forked_result *r = sim_run_forked(wl, "node8", &o);
    assert_non_null(r);
    assert_int_equal(r->rc, 0);
    print_message("%s: replayed %.3f us, closed form %.3f us\n", dirs[k], r->step_time_s * 1e6,
                  expect[k] * 1e6);
    assert_true(fabs(r->step_time_s - expect[k]) <= 0.01 * expect[k]);
    forked_result_free(r);
    tr_import_stats_release(&st);
    wl_workload_destroy(wl);
  }
}

/* The DLRM step replayed on an 8-GPU single-node platform reproduces the
 * measured step: the whole step within 10 %, each rank within 15 %. */
static void test_replay__dlrm_v100x8_reproduces_measured_step(void **state)
{
  (void)state;
  if (!shared_has("traces/param-dlrm-v100x8/kineto")) {
    print_message("shared traces not found under %s: skipped\n", ST_SHARED_DIR);
    skip();
  }
  wl_workload *wl;
  tr_import_stats st;
  st_err err;
  assert_int_equal(
      do_import("kineto:" ST_SHARED_DIR "/traces/param-dlrm-v100x8/kineto", NULL, &wl, &st, &err),
      0);
  sim_options o;
  sim_options_init(&o);
  o.quiet = 1;
  forked_result *r = sim_run_forked(wl, "node8", &o);
  assert_non_null(r);
  assert_int_equal(r->rc, 0);
  print_message("whole step: replayed %.1f us, measured %.1f us\n", r->step_time_s * 1e6,
                st.measured_step_s * 1e6);
  assert_true(fabs(r->step_time_s - st.measured_step_s) <= 0.10 * st.measured_step_s);
  for (int i = 0; i < r->num_ranks; i++) {
    double rep = r->ranks[i].finish_s - st.rank_start_s[i];
    print_message("  rank %d: replayed %.1f us, measured %.1f us\n", i, rep * 1e6,
                  st.rank_measured_s[i] * 1e6);
    assert_true(fabs(rep - st.rank_measured_s[i]) <= 0.15 * st.rank_measured_s[i]);
  }
  forked_result_free(r);
  tr_import_stats_release(&st);
  wl_workload_destroy(wl);
}

int main(void)
{
  snprintf(tmpdir, sizeof tmpdir, "/tmp/st_traces_XXXXXX");
  if (!mkdtemp(tmpdir))
    return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kineto__small_trace_maps_gaps_waits_and_sizes),
      cmocka_unit_test(test_kineto__broken_events_fail_naming_file_and_event),
      cmocka_unit_test(test_kineto__unknown_event_kind_is_skipped_and_counted),
      cmocka_unit_test(test_kineto__truncated_at_any_byte_fails_cleanly),
      cmocka_unit_test(test_kineto__dlrm_v100x8_counts_and_measured_step),
      cmocka_unit_test(test_chakra__resnet50_every_node_accounted),
      cmocka_unit_test(test_chakra__astra_microbenchmarks_are_one_collective),
      cmocka_unit_test(test_smpi__shared_split_traces_list),
      cmocka_unit_test(test_astra__transformer_groups_and_phases),
      cmocka_unit_test(test_astra__errors_name_file_and_line),
      cmocka_unit_test(test_smpi__actions_map_to_ops),
      cmocka_unit_test(test_import__unknown_format_lists_known),
      cmocka_unit_test(test_replay__astra_microbenchmarks_match_closed_form),
      cmocka_unit_test(test_replay__dlrm_v100x8_reproduces_measured_step),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char p[128];
  snprintf(p, sizeof p, "%s/rank0.json", tmpdir);
  unlink(p);
  rmdir(tmpdir);
  return rc;
}
