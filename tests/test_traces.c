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

/* The all-reduce (event 4) with more args. */
static char *kineto_coll_json(const char *more_args)
{
  char ev[4096];
  snprintf(ev, sizeof ev,
           "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)\","
           "\"pid\":0,\"tid\":20,\"ts\":1140,\"dur\":50,\"args\":{\"correlation\":2,\"Collective "
           "name\":\"allreduce\",\"In msg nelems\":1024,\"Out msg nelems\":1024,\"dtype\":\"Float\","
           "%s}}",
           more_args);
  return kineto_json(4, ev, NULL);
}

static int import_json(const char *js, st_err *err)
{
  char path[128], spec[160];
  snprintf(path, sizeof path, "%s/rank0.json", tmpdir);
  snprintf(spec, sizeof spec, "kineto:%s", path);
  write_file(path, js, strlen(js));
  wl_workload *wl;
  tr_import_stats st;
  int rc = do_import(spec, NULL, &wl, &st, err);
  if (rc == 0) {
    tr_import_stats_release(&st);
    wl_workload_destroy(wl);
  }
  return rc;
}

/* Rank lists are read by their numbers, whatever separates them: a list of
 * 64 ranks written with spaces once overflowed an array sized by its commas. */
static void test_kineto__rank_lists_with_spaces_read_as_with_commas(void **state)
{
  (void)state;
  char commas[1024] = "[", spaces[1024] = "[", args[1200];
  for (int i = 0; i < 64; i++) {
    char n[16];
    snprintf(n, sizeof n, "%s%d", i ? ", " : "", i);
    strcat(commas, n);
    snprintf(n, sizeof n, "%s%d", i ? "  " : "", i);
    strcat(spaces, n);
  }
  strcat(commas, "]");
  strcat(spaces, "]");
  const char *want = "communicator 'pg g': member 1 is rank 1, outside 0..0";
  for (int k = 0; k < 2; k++) {
    snprintf(args, sizeof args, "\"Process Group Name\":\"g\",\"Process Group Ranks\":\"%s\"",
             k ? spaces : commas);
    char *js = kineto_coll_json(args);
    st_err err;
    assert_int_equal(import_json(js, &err), ST_EINPUT);
    free(js);
    if (!strstr(err.msg, want))
      fail_msg("%s list: %s", k ? "spaced" : "comma", err.msg);
  }
  /* distributedInfo.pg_config[].ranks likewise */
  char *js = kineto_json(-1, NULL, NULL);
  char *di = strstr(js, "\"world_size\":1}");
  assert_non_null(di);
  char buf[8192];
  snprintf(buf, sizeof buf, "%.*s\"world_size\":1,\"pg_config\":[{\"pg_name\":\"h\",\"ranks\":\"%s\"}]%s",
           (int)(di - js), js, spaces, di + strlen("\"world_size\":1"));
  free(js);
  st_err err;
  assert_int_equal(import_json(buf, &err), ST_EINPUT);
  if (!strstr(err.msg, "communicator 'pg h': member 1 is rank 1, outside 0..0"))
    fail_msg("pg_config with spaces: %s", err.msg);
}

/* Negative or malformed entries are errors naming the key, not numbers with
 * their sign dropped or text skipped. */
static void test_kineto__bad_rank_and_split_entries_fail_naming_the_key(void **state)
{
  (void)state;
  static const struct {
    const char *args, *msg;
  } t[] = {
      {"\"Process Group Name\":\"g\",\"Process Group Ranks\":\"[0, -1]\"",
       "event 4: 'Process Group Ranks' entry 1 is -1, below the smallest allowed 0"},
      {"\"Process Group Name\":\"g\",\"Process Group Ranks\":\"[0, x1]\"",
       "event 4: 'Process Group Ranks' is not a list of integers at 'x1]'"},
      {"\"Process Group Name\":\"g\",\"Process Group Ranks\":\"[0, 99999999999]\"",
       "event 4: 'Process Group Ranks' entry 1 is 99999999999, above the largest allowed "
       "2147483647"},
      {"\"Process Group Name\":\"g\",\"Process Group Ranks\":[0, 1.5]",
       "event 4: 'Process Group Ranks' entry 1 is 1.5, not a whole number"},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    char *js = kineto_coll_json(t[i].args);
    st_err err;
    int rc = import_json(js, &err);
    free(js);
    char want[512];
    snprintf(want, sizeof want, "trace '%s/rank0.json': %s", tmpdir, t[i].msg);
    if (rc != ST_EINPUT || strcmp(err.msg, want))
      fail_msg("row %zu: rc %d, '%s'\n  want '%s'", i, rc, err.msg, want);
  }
  /* an all-to-all's split sizes keep their sign: -1 is an error, not 1 */
  const char *a2a =
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_SendRecv(x)\",\"pid\":0,"
      "\"tid\":20,\"ts\":1140,\"dur\":50,\"args\":{\"correlation\":2,\"Collective "
      "name\":\"all_to_all\",\"In msg nelems\":1024,\"Out msg nelems\":1024,\"dtype\":\"Float\","
      "\"In split size\":\"[-1]\"}}";
  char *js = kineto_json(4, a2a, NULL);
  st_err err;
  int rc = import_json(js, &err);
  free(js);
  char want[512];
  snprintf(want, sizeof want,
           "trace '%s/rank0.json': event 4: 'In split size' entry 0 is -1, below the smallest "
           "allowed 0",
           tmpdir);
  assert_int_equal(rc, ST_EINPUT);
  assert_string_equal(err.msg, want);
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

/* The DLRM step on 8 V100s (Kineto, one file per rank), or skip the test when
 * the shared traces are not there. */
static void import_dlrm_or_skip(wl_workload **wl, tr_import_stats *st)
{
  if (!shared_has("traces/param-dlrm-v100x8/kineto")) {
    print_message("shared traces not found under %s: skipped\n", ST_SHARED_DIR);
    skip();
  }
  st_err err;
  assert_int_equal(
      do_import("kineto:" ST_SHARED_DIR "/traces/param-dlrm-v100x8/kineto", NULL, wl, st, &err), 0);
}

static void test_kineto__dlrm_v100x8_counts_and_measured_step(void **state)
{
  (void)state;
  wl_workload *wl;
  tr_import_stats st;
  import_dlrm_or_skip(&wl, &st);
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
                               "/astra_badsize.txt': line 3: wg_bytes is 'twelve', not a number");
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

/* The ASTRA-sim microbenchmarks: one collective of S = 1 MiB per rank.
 * 4 and 8 NPUs replay on "node8" (8 GPUs on an NVSwitch: a GPU-to-GPU route
 * of B = 450e9 B/s per direction and latency 2 x 0.5 us); 16 NPUs on
 * "node8:2", where GPU 7 -> 8 and 15 -> 0 cross the NICs (one 400 Gb/s NIC
 * per GPU, B_nic = 50e9 B/s, route latency 2 x 1 us, a switch of 0 us).
 *
 * Closed forms (sim/coll/edges.c's algorithms, every flow on its own links):
 *   ring all-reduce: 2(n-1) steps; each edge carries 2(n-1)/n S and pays
 *     the slowest edge's latency per step, and the ring ends with its
 *     slowest edge: T = 2(n-1) L_max + 2(n-1)/n S / B_min;
 *   ring all-gather, reduce-scatter: T = (n-1) L_max + (n-1)/n S / B_min;
 *   direct all-to-all: rank i sends S/n to each other rank, all at once.
 *     One node: its n-1 flows share its NVSwitch uplink, T = L + (n-1)/n S/B.
 *     Two nodes of 8: each GPU's NIC uplink carries its 8 flows to the other
 *     node and each NIC downlink 8 flows from it, so every such flow gets
 *     B_nic/8: T = L_nic + 8 (S/16) / B_nic = L_nic + S / (2 B_nic); the
 *     7 flows inside the node (7/16 S over 450e9 B/s) end well before.
 * For 16 the ring's slowest edge is a NIC edge (50e9 B/s, 2 us) in both
 * terms, so the two-node platform is what the closed form describes. */
static void test_replay__astra_microbenchmarks_match_closed_form(void **state)
{
  (void)state;
  if (!shared_has("traces/astra-sim/microbench-et/microbenchmarks")) {
    print_message("shared traces not found under %s: skipped\n", ST_SHARED_DIR);
    skip();
  }
  const double S = 1048576;
  static const char *const dirs[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
  for (int npus = 4; npus <= 16; npus *= 2) {
    const double n = npus;
    const double B = npus == 16 ? 50e9 : 450e9, L = npus == 16 ? 2e-6 : 1e-6;
    const double a2a = npus == 16 ? L + S / (2 * B) : L + (n - 1) / n * S / B;
    const double expect[] = {2 * (n - 1) * L + 2 * (n - 1) / n * S / B,
                             (n - 1) * L + (n - 1) / n * S / B,
                             (n - 1) * L + (n - 1) / n * S / B, a2a};
    for (int k = 0; k < 4; k++) {
      char spec[512];
      snprintf(spec, sizeof spec,
               "chakra:%s/traces/astra-sim/microbench-et/microbenchmarks/%s/%dnpus_1MB/%s",
               ST_SHARED_DIR, dirs[k], npus, dirs[k]);
      wl_workload *wl;
      tr_import_stats st;
      st_err err;
      assert_int_equal(do_import(spec, NULL, &wl, &st, &err), 0);
      assert_int_equal(wl->num_ranks, npus);
      sim_options o;
      sim_options_init(&o);
      o.quiet = 1;
      o.coll_model = SIM_COLL_IDEAL; /* the closed forms are alpha-beta */
      o.coll_channels = 1;           /* one ring (NCCL would use one per NIC) */
      o.coll_algo = k < 3 ? SIM_ALGO_RING : -1; /* not a tree or NVLS; all-to-all: direct */
      forked_result *r = sim_run_forked(wl, npus == 16 ? "node8:2" : "node8", &o);
      assert_non_null(r);
      assert_int_equal(r->rc, 0);
      print_message("%2d NPUs %-14s: replayed %8.3f us, closed form %8.3f us\n", npus, dirs[k],
                    r->step_time_s * 1e6, expect[k] * 1e6);
      assert_true(fabs(r->step_time_s - expect[k]) <= 0.01 * expect[k]);
      forked_result_free(r);
      tr_import_stats_release(&st);
      wl_workload_destroy(wl);
    }
  }
}

/* The DLRM job resized (its only group is the world, so the world is its
 * data-parallel group): every all-reduce keeps its whole-buffer size S and
 * runs on the new world, and its time grows as the ring's closed form says
 * (the ideal collective model, one ring channel, the ring asked for, as in
 * the ASTRA-sim test above): T = 2(n-1) L + 2(n-1)/n S / B, L and B the
 * ring's slowest edge.  One channel rings the members in index order, so
 * each node's local 7 sends to the next node's local 0 over the NICs:
 *  - dgx-v100 (DGX-1: EDR 100 Gb/s NICs of 12.5 GB/s behind PCIe gen3 of
 *    16 GB/s, 1 us per NIC link and 0.5 us per PCIe link, a fat-tree of
 *    36-port switches of 0.09 us): 8 nodes have 32 NICs, one switch:
 *    L = 2 x 0.5 + 2 x 1 + 0.09 = 3.09 us; 16 nodes have 64 NICs, two levels
 *    (18 NICs per leaf), and 7 -> 0 of the next node crosses a spine at
 *    NICs 35 -> 36: L = 3 + 3 x 0.09 = 3.27 us; B = 12.5e9 (the NIC) both.
 *    Inside a node the index ring's lanes are 25-50 GB/s, above the NIC.
 *  - dgx-a100 (HDR 200 Gb/s NICs of 25 GB/s, 1 us, no PCIe modelled, a
 *    rail-optimised fat-tree of 40-port switches of 0.13 us: a leaf per rail
 *    of 20 nodes, the 8 rails' leaves under one spine group): local 7 (rail
 *    7) to local 0 (rail 0) crosses the spine: L = 2 x 1 + 3 x 0.13 = 2.39
 *    us, B = 25e9, for 8 and for 16 nodes.
 * The trace's three all-reduces are 1,576,964, 448 and 907,840 bytes (the
 * compute replayed as measured is checked in tests/cli/trace_run.sh). */
static void test_replay__dlrm_resized_allreduces_grow_as_the_ring_closed_form(void **state)
{
  (void)state;
  static const struct {
    const char *cluster;
    int world;
    double L, B;
  } rows[] = {{"dgx-v100:8", 64, 3.09e-6, 12.5e9},   {"dgx-v100:16", 128, 3.27e-6, 12.5e9},
              {"dgx-a100:8", 64, 2.39e-6, 25e9},     {"dgx-a100:16", 128, 2.39e-6, 25e9},
              {"dgx-v100:64", 512, 3.27e-6, 12.5e9}, {"dgx-a100:64", 512, 2.39e-6, 25e9}};
  /* 512 ranks take about nine CPU-minutes each (the all-to-all-v of every
   * rank with every rank, 261,632 flows, SimGrid's max-min solve): only with
   * SIMTRAIN_LONG_TESTS=1 (docs/traces.md).  dgx-v100:64 has 256 NICs under a two-level tree, as
   * at 16 nodes; dgx-a100:64's 32 rail leaves fit one spine layer. */
  const char *lt = getenv("SIMTRAIN_LONG_TESTS");
  size_t nrows = lt && !strcmp(lt, "1") ? 6 : 4;
  if (nrows == 4)
    print_message("the 512-rank rows need SIMTRAIN_LONG_TESTS=1 (minutes each)\n");
  for (size_t k = 0; k < nrows; k++) {
    wl_workload *wl;
    tr_import_stats st;
    import_dlrm_or_skip(&wl, &st);
    st_err err = {0};
    tr_resize_stats rs;
    assert_int_equal(tr_workload_resize(&wl, &st, "dlrm", rows[k].world, &rs, &err), 0);
    assert_int_equal(wl->num_ranks, rows[k].world);
    sim_options o;
    sim_options_init(&o);
    o.quiet = 1;
    o.coll_model = SIM_COLL_IDEAL;
    o.coll_channels = 1;
    o.coll_algo = SIM_ALGO_RING;
    /* the collective records are what is checked; the per-link peak loads
     * (SimGrid's link-load plugin, which sums every flow on a link at each
     * flow's start and end) cost 4.6x the whole replay at 128 ranks, where
     * the all-to-all-v puts thousands of flows on a link, and are not read */
    o.link_stats = 0;
    forked_result *r = sim_run_forked(wl, rows[k].cluster, &o);
    assert_non_null(r);
    if (r->rc)
      fail_msg("%s: %s", rows[k].cluster, r->msg);
    const double n = rows[k].world, L = rows[k].L, B = rows[k].B;
    int seen = 0;
    for (size_t i = 0; i < r->num_colls; i++) {
      const sim_coll_record *c = &r->colls[i];
      if (c->kind != WL_OP_COLL || c->op != WL_COLL_ALLREDUCE)
        continue;
      assert_int_equal(c->nranks, rows[k].world);
      double S = c->bytes, want = 2 * (n - 1) * L + 2 * (n - 1) / n * S / B;
      double got = c->end_s - c->start_s;
      print_message("%-12s %4d ranks: all-reduce of %9.0f B %9.3f us, closed form %9.3f us\n",
                      rows[k].cluster, rows[k].world, S, got * 1e6, want * 1e6);
      assert_true(S == 1576964 || S == 448 || S == 907840);
      assert_true(fabs(got - want) <= 0.01 * want);
      seen++;
    }
    assert_int_equal(seen, 3); /* one step: the trace's three all-reduces */
    forked_result_free(r);
    tr_import_stats_release(&st);
    wl_workload_destroy(wl);
  }
}

/* The DLRM step replayed on the preset of the machine it was measured on
 * (dgx-v100: DGX-1, V100 on the NVLink hybrid cube-mesh) reproduces the
 * measured step: the whole step within 10 %, each rank within 15 %.  Both
 * devices are V100-SXM2, so compute is replayed as measured. */
static void test_replay__dlrm_v100x8_reproduces_measured_step(void **state)
{
  (void)state;
  wl_workload *wl;
  tr_import_stats st;
  import_dlrm_or_skip(&wl, &st);
  assert_string_equal(st.source_device, "Tesla V100-SXM2-32GB");
  plat_device dev;
  st_err err;
  assert_int_equal(tr_device_match(st.source_device, &dev, &err), 0);
  assert_string_equal(dev.name, "V100-SXM2");
  sim_options o;
  sim_options_init(&o);
  o.quiet = 1;
  forked_result *r = sim_run_forked(wl, "dgx-v100:1", &o);
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

/* The ResNet-50 trace (rank 0 of a 2-rank DDP step on A100; its nodes have
 * durations but no start times, so there is no measured step to match)
 * replays over 2 ranks with every collective completed, and the replayed
 * step is bounded by what the trace fixes:
 *  - at least the busiest GPU stream's kernel time (292,828 us on stream
 *    7): a stream runs its kernels one after another, as measured;
 *  - at most everything of the rank run one after another: all GPU and CPU
 *    compute nodes (their measured durations) plus every replayed
 *    collective (the two ranks run the same program, so neither waits for
 *    the other beyond that). */
static void test_replay__resnet50_between_critical_stream_and_serial_sum(void **state)
{
  (void)state;
  if (!shared_has("traces/chakra-resnet50-ddp/chakra.0.et")) {
    print_message("shared traces not found under %s: skipped\n", ST_SHARED_DIR);
    skip();
  }
  tr_options to;
  tr_options_init(&to);
  to.num_gpus = 2;
  wl_workload *wl;
  tr_import_stats st;
  st_err err;
  assert_int_equal(do_import("chakra:" ST_SHARED_DIR "/traces/chakra-resnet50-ddp/chakra", &to,
                             &wl, &st, &err),
                   0);
  assert_int_equal(wl->num_ranks, 2);
  assert_true(isnan(st.measured_step_s)); /* no start times in the file */
  assert_true(fabs(st.rank_compute_s[0] - 0.292828) < 1e-9);
  const wl_program *p = &wl->programs[wl->rank_program[0]];
  double per_stream[64] = {0}, all_compute = 0;
  for (size_t i = 0; i < p->num_ops; i++)
    if (p->ops[i].kind == WL_OP_COMPUTE) {
      per_stream[p->ops[i].stream] += p->ops[i].duration_s;
      all_compute += p->ops[i].duration_s;
    }
  double critical = 0;
  for (int q = 0; q < p->num_streams; q++)
    critical = fmax(critical, per_stream[q]);
  assert_true(fabs(critical - 0.292828) < 1e-9);
  sim_options o;
  sim_options_init(&o);
  o.quiet = 1;
  forked_result *r = sim_run_forked(wl, "dgx-a100:1", &o);
  assert_non_null(r);
  assert_int_equal(r->rc, 0);
  assert_int_equal(r->num_colls, 7);
  double colls = 0;
  for (size_t i = 0; i < r->num_colls; i++)
    colls += r->colls[i].end_s - r->colls[i].first_arrival_s;
  print_message("replayed %.1f us; critical stream %.1f us; serial sum %.1f us\n",
                r->step_time_s * 1e6, critical * 1e6, (all_compute + colls) * 1e6);
  assert_true(r->step_time_s >= critical - 1e-9);
  assert_true(r->step_time_s <= all_compute + colls + 1e-9);
  forked_result_free(r);
  tr_import_stats_release(&st);
  wl_workload_destroy(wl);
}

/* ---- what-if: measured compute on another device ------------------------------ */

/* Two made-up devices with round numbers: B has 4x A's fp32 peak, 5x its
 * bf16 peak and 3x its HBM bandwidth.  Kernels of 1 s are long enough that
 * the model's launch overhead (a few microseconds, kept as it is: it adds
 * launch x (1 - ratio) to the ideal) moves the results by less than 1e-4
 * relative. */
static void test_whatif__compute_scales_by_peak_and_bandwidth_ratios(void **state)
{
  (void)state;
  plat_device A, B;
  memset(&A, 0, sizeof A);
  memset(&B, 0, sizeof B);
  snprintf(A.name, sizeof A.name, "A");
  snprintf(B.name, sizeof B.name, "B");
  A.peak_flops[WL_DTYPE_FP32] = 10e12;
  B.peak_flops[WL_DTYPE_FP32] = 40e12;
  A.peak_flops[WL_DTYPE_BF16] = 100e12;
  B.peak_flops[WL_DTYPE_BF16] = 500e12;
  A.hbm_Bps = 1e12;
  B.hbm_Bps = 3e12;
  static const struct {
    int cls, dtype;
    double before_s, after_s; /* hand-computed */
  } cases[] = {
      {WL_CLASS_GEMM, WL_DTYPE_FP32, 1.0, 0.25},        /* 10 / 40 */
      {WL_CLASS_ATTENTION, WL_DTYPE_BF16, 1.0, 0.2},    /* 100 / 500 */
      {WL_CLASS_ELEMENTWISE, WL_DTYPE_FP32, 1.0, 1.0 / 3}, /* 1 / 3 */
      {WL_CLASS_OPTIMIZER, WL_DTYPE_BF16, 2.0, 2.0 / 3},
      {WL_CLASS_OTHER, WL_DTYPE_FP32, 1.0, 1.0},        /* host time, gaps: kept */
      {WL_CLASS_GEMM, WL_DTYPE_FP32, 0.0, 0.0},         /* nothing to scale */
  };
  enum { NC = sizeof cases / sizeof cases[0] };
  const char *role = "world";
  wl_workload *wl = wl_workload_create(1, 1, &role);
  const char *sn = "s";
  int pi = wl_program_add(wl, "p", 1, &sn);
  wl_rank_set(wl, 0, pi);
  for (int i = 0; i < NC; i++) {
    wl_op op = wl_op_compute(0, cases[i].before_s);
    op.sub = (uint8_t)cases[i].cls;
    op.dtype = (uint8_t)cases[i].dtype;
    assert_true(wl_program_append(&wl->programs[pi], &op, NULL, 0) >= 0);
  }
  wl_op c = wl_op_coll(0, WL_COLL_ALLREDUCE, 0, 1e6);
  assert_true(wl_program_append(&wl->programs[pi], &c, NULL, 0) >= 0);
  tr_retarget_stats rs;
  st_err err;
  st_err_clear(&err);
  assert_int_equal(tr_workload_retarget(wl, &A, &B, &rs, &err), 0);
  const wl_program *p = &wl->programs[pi];
  for (int i = 0; i < NC; i++) {
    double got = p->ops[i].duration_s, want = cases[i].after_s;
    print_message("%-12s %.3f s -> %.9f s (hand: %.9f s)\n", wl_class_name(cases[i].cls),
                  cases[i].before_s, got, want);
    assert_true(fabs(got - want) <= 1e-4 * fmax(want, 1e-9) || (want == 0 && got == 0));
  }
  assert_true(p->ops[NC].bytes == 1e6 && p->ops[NC].kind == WL_OP_COLL); /* untouched */
  assert_int_equal(rs.ops_scaled, 4);
  assert_int_equal(rs.ops_kept, 2);
  assert_true(fabs(rs.before_s[WL_CLASS_GEMM] - 1.0) < 1e-12);
  assert_true(fabs(rs.after_s[WL_CLASS_GEMM] - 0.25) < 1e-4 * 0.25);

  /* and back: B -> A undoes it */
  assert_int_equal(tr_workload_retarget(wl, &B, &A, NULL, &err), 0);
  for (int i = 0; i < NC; i++)
    assert_true(fabs(p->ops[i].duration_s - cases[i].before_s) <= 1e-9);

  /* a device without HBM bandwidth cannot time a memory-bound kernel:
   * the error names it, and nothing is changed */
  plat_device Z = A;
  snprintf(Z.name, sizeof Z.name, "Z");
  Z.hbm_Bps = 0;
  assert_int_equal(tr_workload_retarget(wl, &Z, &B, NULL, &err), ST_EUSAGE);
  assert_string_equal(err.msg, "what-if: the compute model of device 'Z' does not reach 1 s for "
                               "class 'elementwise' (no HBM bandwidth?)");
  assert_true(p->ops[0].duration_s == 1.0 || fabs(p->ops[0].duration_s - 1.0) <= 1e-9);
  assert_true(fabs(p->ops[2].duration_s - 1.0) <= 1e-9);
  wl_workload_destroy(wl);
}

static void test_whatif__trace_device_names_match_builtin_devices(void **state)
{
  (void)state;
  static const struct {
    const char *trace, *device; /* NULL: no single match */
  } cases[] = {
      {"Tesla V100-SXM2-32GB", "V100-SXM2"},
      {"NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"},
      {"NVIDIA H100 80GB HBM3", "H100-SXM"},
      {"h100-sxm", "H100-SXM"},
      {"H100-SXM-HBM2e-500W", "H100-SXM-HBM2e-500W"}, /* a variant: by its whole name */
      {"NVIDIA A100-PCIE-40GB", NULL}, /* A100: two devices */
      {"NVIDIA GeForce RTX 4090", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    plat_device d;
    st_err err;
    st_err_clear(&err);
    int rc = tr_device_match(cases[i].trace, &d, &err);
    if (cases[i].device) {
      assert_int_equal(rc, 0);
      assert_string_equal(d.name, cases[i].device);
    } else {
      assert_int_equal(rc, ST_EINPUT);
    }
  }
  plat_device d;
  st_err err;
  assert_int_equal(tr_device_match("NVIDIA A100-PCIE-40GB", &d, &err), ST_EINPUT);
  assert_string_equal(err.msg, "device 'NVIDIA A100-PCIE-40GB' of the trace matches more than one "
                               "built-in device: give --from-device NAME "
                               "(platforms/data/devices.json)");
}

/* ---- Chakra involved_dim: a small .et written here -------------------------
 *
 * The file is encoded by hand from the protobuf wire format (a varint
 * length before each message; field tags (number << 3 | wire type)), not
 * with the importer's generated code, so that a mistake in one does not
 * hide in the other.  Field numbers are Chakra's: Node id 1, name 2, type 3,
 * data_deps 5, attr 10; Attr name 1, int64_val 9, int64_list 10,
 * uint64_val 13, bool_list 28; GlobalMetadata version 1. */
typedef struct pb {
  uint8_t b[4096];
  size_t n;
} pb;

static void pb_varint(pb *p, uint64_t v)
{
  do {
    p->b[p->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
}
static void pb_key(pb *p, int field, int wire) { pb_varint(p, (uint64_t)(field << 3 | wire)); }
static void pb_uint(pb *p, int field, uint64_t v)
{
  pb_key(p, field, 0);
  pb_varint(p, v);
}
static void pb_bytes(pb *p, int field, const void *d, size_t n)
{
  pb_key(p, field, 2);
  pb_varint(p, n);
  memcpy(p->b + p->n, d, n);
  p->n += n;
}
static void pb_sub(pb *p, int field, const pb *sub) { pb_bytes(p, field, sub->b, sub->n); }

static void attr_uint(pb *node, const char *name, uint64_t v)
{
  pb a = {.n = 0};
  pb_bytes(&a, 1, name, strlen(name));
  pb_uint(&a, 13, v);
  pb_sub(node, 10, &a);
}

/* "TF": a bool_list of those entries; "i10": an int64_list; "" none */
static void attr_dims(pb *node, const char *spec)
{
  if (!spec[0])
    return;
  pb list = {.n = 0}, a = {.n = 0};
  int as_int = spec[0] == 'i';
  for (const char *c = spec + as_int; *c; c++) /* unpacked repeated: one key per value */
    pb_uint(&list, 1, as_int ? (uint64_t)(*c - '0') : *c == 'T');
  pb_bytes(&a, 1, "involved_dim", 12);
  pb_sub(&a, as_int ? 10 : 28, &list);
  pb_sub(node, 10, &a);
}

/* One rank's file: node 1..n, each an all-reduce (comm_type 0) of
 * bytes[i] that depends on the one before, with involved_dim dims[i]. */
static void write_et(const char *path, int n, const char *const *dims, const double *bytes)
{
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  pb msg = {.n = 0}, len = {.n = 0};
  pb_bytes(&msg, 1, "0.0.4", 5);
  pb_varint(&len, msg.n);
  fwrite(len.b, 1, len.n, f);
  fwrite(msg.b, 1, msg.n, f);
  for (int i = 0; i < n; i++) {
    char name[32];
    snprintf(name, sizeof name, "ar%d", i);
    msg.n = len.n = 0;
    pb_uint(&msg, 1, (uint64_t)i + 1);
    pb_bytes(&msg, 2, name, strlen(name));
    pb_uint(&msg, 3, 7); /* COMM_COLL */
    if (i)
      pb_uint(&msg, 5, (uint64_t)i);
    attr_uint(&msg, "comm_type", 0);
    attr_uint(&msg, "comm_size", (uint64_t)bytes[i]);
    attr_dims(&msg, dims[i]);
    pb_varint(&len, msg.n);
    fwrite(len.b, 1, len.n, f);
    fwrite(msg.b, 1, msg.n, f);
  }
  fclose(f);
}

/* Node ids are any uint64: the largest one is a node like any other.  A
 * compute node with id 2^64-1 on thread 1 and one that depends on it on
 * thread 2: the second waits for the first, and nothing is dropped. */
static void test_chakra__largest_node_id_is_a_node(void **state)
{
  (void)state;
  char prefix[128], file[160];
  snprintf(prefix, sizeof prefix, "%s/ckmax", tmpdir);
  snprintf(file, sizeof file, "%s.0.et", prefix);
  FILE *f = fopen(file, "wb");
  assert_non_null(f);
  pb msg = {.n = 0}, len = {.n = 0};
  pb_bytes(&msg, 1, "0.0.4", 5);
  pb_varint(&len, msg.n);
  fwrite(len.b, 1, len.n, f);
  fwrite(msg.b, 1, msg.n, f);
  static const uint64_t ids[2] = {UINT64_MAX, 5};
  for (int i = 0; i < 2; i++) {
    msg.n = len.n = 0;
    pb_uint(&msg, 1, ids[i]);
    pb_bytes(&msg, 2, i ? "b" : "a", 1);
    pb_uint(&msg, 3, 4); /* COMP */
    if (i)
      pb_uint(&msg, 5, UINT64_MAX); /* data dependency on the first */
    pb_uint(&msg, 7, i ? 10 : 100); /* duration_micros */
    attr_uint(&msg, "tid", (uint64_t)i + 1);
    pb_varint(&len, msg.n);
    fwrite(len.b, 1, len.n, f);
    fwrite(msg.b, 1, msg.n, f);
  }
  fclose(f);
  char spec[192];
  snprintf(spec, sizeof spec, "chakra:%s", prefix);
  wl_workload *wl;
  tr_import_stats st;
  st_err err;
  assert_int_equal(do_import(spec, NULL, &wl, &st, &err), 0);
  assert_int_equal(st.deps_dropped, 0);
  const wl_program *p = &wl->programs[0];
  int waits = 0;
  for (size_t i = 0; i < p->num_ops; i++)
    if (!strcmp(wl_op_name(p, &p->ops[i]), "b"))
      waits = (int)p->ops[i].wait_count;
  assert_int_equal(waits, 1);
  wl_workload_destroy(wl);
  tr_import_stats_release(&st);
}

/* Integer attributes are checked before they are stored: a comm_tag of
 * 2^64-1 (a uint64 attribute) was cast from a double to long, which is
 * undefined; a comm_size above 2^53 bytes is refused where it is read. */
static void test_chakra__attributes_out_of_range_are_errors(void **state)
{
  (void)state;
  static const struct {
    const char *attr;
    uint64_t v;
    const char *msg; /* after "trace 'FILE': " */
  } cases[] = {
      {"comm_tag", UINT64_MAX,
       "node 1: attribute 'comm_tag' is 1.8446744073709552e+19, above the largest allowed "
       "2147483647"},
      {"comm_src", (uint64_t)1 << 40,
       "node 1: attribute 'comm_src' is 1099511627776, above the largest allowed 2147483647"},
      {"comm_size", (uint64_t)1 << 60,
       "node 1: attribute 'comm_size' is 1.152921504606847e+18, above the largest allowed "
       "9007199254740992"},
  };
  char prefix[128], file[160], spec[192], want[512];
  snprintf(prefix, sizeof prefix, "%s/ckattr", tmpdir);
  snprintf(file, sizeof file, "%s.0.et", prefix);
  snprintf(spec, sizeof spec, "chakra:%s", prefix);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    FILE *f = fopen(file, "wb");
    assert_non_null(f);
    pb msg = {.n = 0}, len = {.n = 0};
    pb_bytes(&msg, 1, "0.0.4", 5);
    pb_varint(&len, msg.n);
    fwrite(len.b, 1, len.n, f);
    fwrite(msg.b, 1, msg.n, f);
    msg.n = len.n = 0;
    pb_uint(&msg, 1, 1);
    pb_bytes(&msg, 2, "send", 4);
    pb_uint(&msg, 3, 5); /* COMM_SEND */
    attr_uint(&msg, "comm_dst", 0);
    attr_uint(&msg, cases[c].attr, cases[c].v);
    pb_varint(&len, msg.n);
    fwrite(len.b, 1, len.n, f);
    fwrite(msg.b, 1, msg.n, f);
    fclose(f);
    wl_workload *wl;
    tr_import_stats st;
    st_err err;
    assert_int_equal(do_import(spec, NULL, &wl, &st, &err), ST_EINPUT);
    snprintf(want, sizeof want, "trace '%s': %s", file, cases[c].msg);
    assert_string_equal(err.msg, want);
  }
  unlink(file);
}

static int role_index(const wl_workload *wl, const char *name)
{
  for (int i = 0; i < wl->num_roles; i++)
    if (!strcmp(wl->roles[i], name))
      return i;
  return -1;
}

/* The members of rank r's communicator for a role, as "0,2,4,6". */
static void group_text(const wl_workload *wl, int r, int role, char *b, size_t cap)
{
  int c = wl_rank_comm(wl, r, role);
  size_t m = 0;
  b[0] = '\0';
  for (int i = 0; c >= 0 && i < wl->comms[c].size; i++)
    m += (size_t)snprintf(b + m, cap - m, "%s%d", i ? "," : "", wl->comms[c].ranks[i]);
}

static void ck_opts(tr_options *o, int gpus, const char *dims)
{
  tr_options_init(o);
  o->num_gpus = gpus;
  if (dims) {
    st_err e;
    assert_int_equal(tr_dims_parse(dims, o, &e), 0);
  }
}

/* 8 ranks as 2 x 4 (dimension 0 fastest: rank r = x + 2 y, x < 2, y < 4).
 * dim0 groups: pairs {2y, 2y+1}; dim1 groups: {x, x+2, x+4, x+6}; no
 * involved_dim and [T,T] are the world.  One file copied to 8 ranks: one
 * program, each rank its own groups. */
static void test_chakra__involved_dim_groups_by_coordinates(void **state)
{
  (void)state;
  char prefix[128], file[160];
  snprintf(prefix, sizeof prefix, "%s/ck", tmpdir);
  snprintf(file, sizeof file, "%s.0.et", prefix);
  static const char *const dims[] = {"TF", "FT", "", "TT", "i10"};
  static const double bytes[] = {1048576, 2097152, 4096, 8192, 512};
  write_et(file, 5, dims, bytes);
  char spec[192];
  snprintf(spec, sizeof spec, "chakra:%s", prefix);
  tr_options o;
  ck_opts(&o, 8, "2,4");
  wl_workload *wl;
  tr_import_stats st;
  st_err err;
  assert_int_equal(do_import(spec, &o, &wl, &st, &err), 0);
  assert_int_equal(wl->num_ranks, 8);
  assert_int_equal(wl->num_programs, 1);
  assert_int_equal(wl->num_roles, 3);
  int d0 = role_index(wl, "dim0"), d1 = role_index(wl, "dim1"), w = role_index(wl, "world");
  assert_true(d0 >= 0 && d1 >= 0 && w >= 0);
  assert_int_equal(wl->num_comms, 4 + 2 + 1); /* each group once */
  static const char *const want0[8] = {"0,1", "0,1", "2,3", "2,3", "4,5", "4,5", "6,7", "6,7"};
  static const char *const want1[8] = {"0,2,4,6", "1,3,5,7", "0,2,4,6", "1,3,5,7",
                                       "0,2,4,6", "1,3,5,7", "0,2,4,6", "1,3,5,7"};
  for (int r = 0; r < 8; r++) {
    char b[64];
    group_text(wl, r, d0, b, sizeof b);
    assert_string_equal(b, want0[r]);
    group_text(wl, r, d1, b, sizeof b);
    assert_string_equal(b, want1[r]);
    group_text(wl, r, w, b, sizeof b);
    assert_string_equal(b, "0,1,2,3,4,5,6,7");
    assert_int_equal(wl->comms[wl_rank_comm(wl, r, d0)].kind, WL_COMM_OTHER);
    assert_int_equal(wl->comms[wl_rank_comm(wl, r, w)].kind, WL_COMM_WORLD);
  }
  const wl_program *p = &wl->programs[0];
  assert_int_equal(p->num_ops, 5);
  int want_role[5] = {d0, d1, w, w, d0}; /* the int64 list [1,0] is dim 0 too */
  for (int i = 0; i < 5; i++) {
    assert_int_equal(p->ops[i].kind, WL_OP_COLL);
    assert_int_equal(p->ops[i].role, want_role[i]);
    assert_true(p->ops[i].bytes == bytes[i]);
  }
  tr_import_stats_release(&st);
  wl_workload_destroy(wl);

  /* no --dims, 2 GPUs per node (run's default from the cluster): 2 x 4 again */
  ck_opts(&o, 8, NULL);
  o.gpus_per_node = 2;
  assert_int_equal(do_import(spec, &o, &wl, &st, &err), 0);
  for (int r = 0; r < 8; r++) {
    char b[64];
    group_text(wl, r, role_index(wl, "dim1"), b, sizeof b);
    assert_string_equal(b, want1[r]);
  }
  tr_import_stats_release(&st);
  wl_workload_destroy(wl);
  unlink(file);
}

/* A trace without involved_dim (or only all-true ones) is the world
 * workload it always was: one role, one communicator. */
static void test_chakra__without_involved_dim_one_world(void **state)
{
  (void)state;
  char prefix[128], file[160], spec[192];
  snprintf(prefix, sizeof prefix, "%s/cw", tmpdir);
  snprintf(file, sizeof file, "%s.0.et", prefix);
  snprintf(spec, sizeof spec, "chakra:%s", prefix);
  static const char *const dims[] = {"", "TTTT"}; /* ASTRA-sim's default: four trues */
  static const double bytes[] = {4096, 4096};
  write_et(file, 2, dims, bytes);
  tr_options o;
  ck_opts(&o, 4, NULL); /* no --dims needed */
  wl_workload *wl;
  tr_import_stats st;
  st_err err;
  assert_int_equal(do_import(spec, &o, &wl, &st, &err), 0);
  assert_int_equal(wl->num_roles, 1);
  assert_string_equal(wl->roles[0], "world");
  assert_int_equal(wl->num_comms, 1);
  assert_int_equal(wl->comms[0].size, 4);
  assert_int_equal(wl->comms[0].kind, WL_COMM_WORLD);
  tr_import_stats_release(&st);
  wl_workload_destroy(wl);
  unlink(file);
}

static void test_chakra__involved_dim_errors_name_file_and_node(void **state)
{
  (void)state;
  char prefix[128], file[160], spec[192], want[512];
  snprintf(prefix, sizeof prefix, "%s/ce", tmpdir);
  snprintf(file, sizeof file, "%s.0.et", prefix);
  snprintf(spec, sizeof spec, "chakra:%s", prefix);
  static const struct {
    const char *dim, *dims; /* node 2's involved_dim; --dims */
    int gpus_per_node, rc;
    const char *msg; /* %s: the file (or the prefix for --dims) */
  } cases[] = {
      {"FT", NULL, 0, ST_EUSAGE,
       "trace '%s': node 2: 'involved_dim' refers to topology dimensions: pass --dims "
       "N0,N1,... (their product the 8 ranks)"},
      {"FT", "2,2", 0, ST_EUSAGE,
       "--dims 2,2 makes 4 ranks but trace '%s' has 8 (its files, or --gpus)"},
      {"FTF", "2,4", 0, ST_EINPUT,
       "trace '%s': node 2: 'involved_dim' has 3 entries but --dims 2,4 has 2"},
      {"T", "2,4", 0, ST_OK, NULL}, /* all true: the world, whatever its length */
      {"TTTTTTTTTT", NULL, 0, ST_OK, NULL},
      {"TTTTTTTTF", "2,4", 0, ST_EINPUT,
       "trace '%s': node 2: 'involved_dim' has 9 entries (at most 8 dimensions)"},
      {"F", "8", 0, ST_EINPUT,
       "trace '%s': node 2: 'involved_dim' involves no dimension"},
      {"FF", "2,4", 0, ST_EINPUT, "trace '%s': node 2: 'involved_dim' involves no dimension"},
      {"i12", "2,4", 0, ST_EINPUT,
       "trace '%s': node 2: 'involved_dim' entry 1 is 2, not 0 or 1"},
      {"TFT", NULL, 8, ST_EINPUT,
       "trace '%s': node 2: 'involved_dim' has 3 entries but the default dims (GPUs per node, "
       "nodes) 8,1 has 2: pass --dims"},
      {"FT", NULL, 3, ST_EUSAGE,
       "trace '%s': node 2: 'involved_dim' refers to topology dimensions and 8 ranks are not "
       "whole nodes of 3 GPUs: pass --dims N0,N1,..."},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *dims[] = {"", cases[i].dim};
    const double bytes[] = {64, 64};
    write_et(file, 2, dims, bytes);
    tr_options o;
    ck_opts(&o, 8, cases[i].dims);
    o.gpus_per_node = cases[i].gpus_per_node;
    wl_workload *wl;
    tr_import_stats st;
    st_err err;
    int rc = do_import(spec, &o, &wl, &st, &err);
    assert_int_equal(rc, cases[i].rc);
    if (rc == ST_OK) {
      tr_import_stats_release(&st);
      wl_workload_destroy(wl);
      continue;
    }
    assert_null(wl);
    const char *hole = strstr(cases[i].msg, "%s");
    snprintf(want, sizeof want, "%.*s%s%s", (int)(hole - cases[i].msg), cases[i].msg,
             strncmp(cases[i].msg, "--dims", 6) ? file : prefix, hole + 2);
    assert_string_equal(err.msg, want);
  }
  unlink(file);
  /* the option's text */
  static const struct {
    const char *text, *msg;
  } bad[] = {
      {"8,", "--dims '8,': sizes must be positive whole numbers, as in 8,16"},
      {"0,8", "--dims '0,8': sizes must be positive whole numbers, as in 8,16"},
      {"8x8", "--dims '8x8': sizes must be positive whole numbers, as in 8,16"},
      {"-8", "--dims '-8': sizes must be positive whole numbers, as in 8,16"},
      {"1,1,1,1,1,1,1,1,1", "--dims '1,1,1,1,1,1,1,1,1': more than 8 dimensions"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tr_options o;
    tr_options_init(&o);
    st_err err;
    assert_int_equal(tr_dims_parse(bad[i].text, &o, &err), ST_EUSAGE);
    assert_string_equal(err.msg, bad[i].msg);
    assert_int_equal(o.num_dims, 0);
  }
  tr_options o;
  tr_options_init(&o);
  st_err err;
  assert_int_equal(tr_dims_parse("8,128", &o, &err), 0);
  assert_int_equal(o.num_dims, 2);
  assert_int_equal(o.dims[0], 8);
  assert_int_equal(o.dims[1], 128);
}

/* The side-by-side ASTRA-sim workload (peer-astra README): per layer four
 * TP all-reduces of 16 MiB over dimension 0 and one DP all-reduce of 48 MiB
 * over dimension 1.  On 64 ranks as 8 x 8: TP groups are the 8 consecutive
 * ranks of a node, DP groups the ranks with one local index. */
static void test_chakra__peer_astra_tp_on_dim0_dp_on_dim1(void **state)
{
  (void)state;
  if (!shared_has("peer-astra/transformer_L10.0.et")) {
    print_message("shared peer-astra workload not found under %s: skipped\n", ST_SHARED_DIR);
    skip();
  }
  tr_options o;
  ck_opts(&o, 64, "8,8");
  wl_workload *wl;
  tr_import_stats st;
  st_err err;
  assert_int_equal(
      do_import("chakra:" ST_SHARED_DIR "/peer-astra/transformer_L10.0.et", &o, &wl, &st, &err), 0);
  assert_int_equal(wl->num_ranks, 64);
  assert_int_equal(wl->num_programs, 1);
  int d0 = role_index(wl, "dim0"), d1 = role_index(wl, "dim1");
  assert_true(d0 >= 0 && d1 >= 0);
  assert_int_equal(wl->num_roles, 2);
  const wl_program *p = &wl->programs[0];
  long tp = 0, dp = 0;
  for (size_t i = 0; i < p->num_ops; i++) {
    const wl_op *op = &p->ops[i];
    if (op->kind != WL_OP_COLL)
      continue;
    assert_int_equal(op->sub, WL_COLL_ALLREDUCE);
    if (op->role == d0) {
      assert_true(op->bytes == 16.0 * 1048576);
      tp++;
    } else {
      assert_int_equal(op->role, d1);
      assert_true(op->bytes == 48.0 * 1048576);
      dp++;
    }
  }
  assert_int_equal(tp, 10 * 4);
  assert_int_equal(dp, 10);
  for (int r = 0; r < 64; r++) {
    const wl_comm *c0 = &wl->comms[wl_rank_comm(wl, r, d0)];
    const wl_comm *c1 = &wl->comms[wl_rank_comm(wl, r, d1)];
    assert_int_equal(c0->size, 8);
    assert_int_equal(c1->size, 8);
    for (int i = 0; i < 8; i++) {
      assert_int_equal(c0->ranks[i], r / 8 * 8 + i);
      assert_int_equal(c1->ranks[i], r % 8 + 8 * i);
    }
  }
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
      cmocka_unit_test(test_kineto__rank_lists_with_spaces_read_as_with_commas),
      cmocka_unit_test(test_kineto__bad_rank_and_split_entries_fail_naming_the_key),
      cmocka_unit_test(test_kineto__unknown_event_kind_is_skipped_and_counted),
      cmocka_unit_test(test_kineto__truncated_at_any_byte_fails_cleanly),
      cmocka_unit_test(test_kineto__dlrm_v100x8_counts_and_measured_step),
      cmocka_unit_test(test_chakra__resnet50_every_node_accounted),
      cmocka_unit_test(test_chakra__astra_microbenchmarks_are_one_collective),
      cmocka_unit_test(test_chakra__involved_dim_groups_by_coordinates),
      cmocka_unit_test(test_chakra__without_involved_dim_one_world),
      cmocka_unit_test(test_chakra__involved_dim_errors_name_file_and_node),
      cmocka_unit_test(test_chakra__peer_astra_tp_on_dim0_dp_on_dim1),
      cmocka_unit_test(test_chakra__largest_node_id_is_a_node),
      cmocka_unit_test(test_chakra__attributes_out_of_range_are_errors),
      cmocka_unit_test(test_smpi__shared_split_traces_list),
      cmocka_unit_test(test_astra__transformer_groups_and_phases),
      cmocka_unit_test(test_astra__errors_name_file_and_line),
      cmocka_unit_test(test_smpi__actions_map_to_ops),
      cmocka_unit_test(test_import__unknown_format_lists_known),
      cmocka_unit_test(test_replay__astra_microbenchmarks_match_closed_form),
      cmocka_unit_test(test_replay__dlrm_v100x8_reproduces_measured_step),
      cmocka_unit_test(test_replay__dlrm_resized_allreduces_grow_as_the_ring_closed_form),
      cmocka_unit_test(test_replay__resnet50_between_critical_stream_and_serial_sum),
      cmocka_unit_test(test_whatif__compute_scales_by_peak_and_bandwidth_ratios),
      cmocka_unit_test(test_whatif__trace_device_names_match_builtin_devices),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char p[128];
  snprintf(p, sizeof p, "%s/rank0.json", tmpdir);
  unlink(p);
  rmdir(tmpdir);
  return rc;
}
