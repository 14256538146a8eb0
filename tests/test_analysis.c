/* test_analysis.c — the summary arithmetic, the HDF5 results file (round
 * trip, NaN, atomic write, error text) and the report, on a small synthetic
 * workload and result built by hand (no engine involved).
 *
 * The synthetic run: 4 ranks in two TP pairs and two PP pairs, 2 iterations,
 * rank finish times 1.4, 1.4, 1.4, 1.6 s, so step time 0.8 s.  Expected
 * summary numbers below are worked out by hand from those inputs.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <hdf5.h>

#include "an_int.h"
#include "analysis.h"
#include "driver.h"
#include "xml_check.h"

/* ---- the synthetic run ------------------------------------------------------ */
typedef struct fixture {
  char dir[256];
  char path[512];
  wl_workload *wl;
  plat_cluster cl;
  an_measured r;
  an_rank_row ranks[4];
  an_coll_rec colls[3];
  an_link_row links[2];
  an_usage_rec usage[3];
  an_timeline_rec tl[6];
  an_summary s;
  an_run_info info;
} fixture;

static char LONG_LINK[] = "a-rather-long-link-name/spine-3:leaf-17:port-42-uplink";

static void build_workload(fixture *f)
{
  const char *roles[] = {"tp", "pp"};
  f->wl = wl_workload_create(4, 2, roles);
  assert_non_null(f->wl);
  int32_t tp0[] = {0, 1}, tp1[] = {2, 3}, pp0[] = {0, 2}, pp1[] = {1, 3};
  assert_int_equal(wl_comm_add(f->wl, "tp-0", WL_COMM_TP, 2, tp0), 0);
  assert_int_equal(wl_comm_add(f->wl, "tp-1", WL_COMM_TP, 2, tp1), 1);
  assert_int_equal(wl_comm_add(f->wl, "pp-0", WL_COMM_PP, 2, pp0), 2);
  assert_int_equal(wl_comm_add(f->wl, "pp-1", WL_COMM_PP, 2, pp1), 3);
  const char *streams[] = {"compute", "comm"};
  assert_int_equal(wl_program_add(f->wl, "stage", 2, streams), 0);
  wl_program *p = &f->wl->programs[0];
  wl_op op = wl_op_compute(0, 0.1);
  op.flops = 1e12;
  op.name = wl_program_string(p, "fwd_gemm");
  assert_int_equal(wl_program_append(p, &op, NULL, 0), 0);
  op = wl_op_coll(1, WL_COLL_ALLREDUCE, 0, 1 << 20); /* unnamed: shows as "allreduce" */
  assert_int_equal(wl_program_append(p, &op, NULL, 0), 1);
  op = wl_op_p2p(1, WL_OP_SEND, 1, 1, 7, 4096);
  op.name = wl_program_string(p, "send_act");
  assert_int_equal(wl_program_append(p, &op, NULL, 0), 2);
  op = wl_op_p2p(1, WL_OP_RECV, 1, 0, 7, 4096);
  op.name = wl_program_string(p, "recv_act");
  assert_int_equal(wl_program_append(p, &op, NULL, 0), 3);
  for (int r = 0; r < 4; r++) {
    wl_rank_set(f->wl, r, 0);
    wl_rank_set_comm(f->wl, r, 0, r < 2 ? 0 : 1);
    wl_rank_set_comm(f->wl, r, 1, r % 2 == 0 ? 2 : 3);
  }
  f->wl->meta.tokens_per_step = 8192;
  f->wl->meta.model_flops_per_step = 1e15;
  f->wl->meta.peak_memory_bytes = 40e9;
  f->wl->meta.dtype = WL_DTYPE_BF16;
}

static void build_result(fixture *f)
{
  /* compute, exposed, overlapped, bubble, idle, finish (whole run, 2 iterations) */
  static const double t[4][6] = {
      {1.0, 0.2, 0.3, 0.1, 0.1, 1.4},
      {1.1, 0.1, 0.2, 0.2, 0.0, 1.4},
      {0.9, 0.3, 0.1, 0.0, 0.2, 1.4},
      {1.2, 0.2, 0.4, 0.1, 0.1, 1.6},
  };
  for (int k = 0; k < 4; k++) {
    an_rank_row *s = &f->ranks[k];
    s->rank = k;
    s->host = 3 - k;
    s->compute_s = t[k][0];
    s->exposed_comm_s = t[k][1];
    s->overlapped_comm_s = t[k][2];
    s->comm_s = t[k][1] + t[k][2];
    s->bubble_s = t[k][3];
    s->idle_s = t[k][4];
    s->finish_s = t[k][5];
    for (int p = 0; p < WL_PHASE_COUNT; p++)
      s->phase_s[p] = 0.01 * (k + 1) * (p + 1);
    for (int c = 0; c < WL_COMM_KIND_COUNT; c++)
      s->comm_kind_s[c] = c == WL_COMM_TP ? 0.2 : c == WL_COMM_PP ? 0.1 * k : 0;
  }
  f->colls[0] = (an_coll_rec){.comm = 0, .kind = WL_OP_COLL, .op = WL_COLL_ALLREDUCE,
                                  .nranks = 2, .src = -1, .dst = -1, .bytes = 1 << 20,
                                  .first_arrival_s = 0.09, .start_s = 0.1, .end_s = 0.2,
                                  .algbw_GBps = 0.0104858, .busbw_GBps = 0.0104858,
                                  .algo = 1, .proto = 1, .channels = 1}; /* nvls, simple */
  f->colls[1] = (an_coll_rec){.comm = 1, .kind = WL_OP_COLL, .op = WL_COLL_ALLREDUCE,
                                  .nranks = 2, .src = -1, .dst = -1, .bytes = 1 << 20,
                                  .first_arrival_s = 0.1, .start_s = 0.15, .end_s = 0.35,
                                  .algbw_GBps = 0.0052429, .busbw_GBps = 0.0052429,
                                  .algo = 0, .proto = 0, .channels = 4}; /* ring, ll128 */
  f->colls[2] = (an_coll_rec){.comm = 2, .kind = WL_OP_SEND, .nranks = 2, .src = 0,
                                  .dst = 2, .bytes = 4096, .first_arrival_s = 0.2,
                                  .start_s = 0.2, .end_s = 0.3, .algbw_GBps = 4.096e-5,
                                  .busbw_GBps = 4.096e-5};
  f->links[0] = (an_link_row){"gpu0-up", 300e9, 1e9, 0.5, 0.75};
  f->links[1] = (an_link_row){LONG_LINK, 50e9, 2.5e8, 0.125, 1.0};
  /* link, comm, kind, op, bytes: gpu0-up carried tp-0's all-reduce and
   * pp-0's send/recv, the long link tp-1's all-reduce */
  f->usage[0] = (an_usage_rec){0, 0, WL_OP_COLL, WL_COLL_ALLREDUCE, 0.75e9};
  f->usage[1] = (an_usage_rec){0, 2, WL_OP_SEND, 0, 0.25e9};
  f->usage[2] = (an_usage_rec){1, 1, WL_OP_COLL, WL_COLL_ALLREDUCE, 2.5e8};
  /* rank, stream, kind, program, op, start, end, bytes, flops */
  f->tl[0] = (an_timeline_rec){0, 0, WL_OP_COMPUTE, 0, 0, 0.0, 0.1, 0, 1e12};
  f->tl[1] = (an_timeline_rec){0, 1, WL_OP_COLL, 0, 1, 0.1, 0.2, 1 << 20, 0};
  f->tl[2] = (an_timeline_rec){0, 1, WL_OP_SEND, 0, 2, 0.2, 0.3, 4096, 0};
  f->tl[3] = (an_timeline_rec){2, 1, WL_OP_RECV, 0, 3, 0.2, 0.3, 4096, 0};
  f->tl[4] = (an_timeline_rec){1, 0, WL_OP_COMPUTE, 0, 0, 0.0, 0.12, 0, 1e12};
  f->tl[5] = (an_timeline_rec){3, 1, WL_OP_COLL, 0, 1, 0.15, 0.35, 1 << 20, 0};
  /* the algorithms' and protocols' names, by an_coll_rec.algo and .proto */
  snprintf(f->r.algo_names[0], sizeof f->r.algo_names[0], "ring");
  snprintf(f->r.algo_names[1], sizeof f->r.algo_names[1], "nvls");
  snprintf(f->r.proto_names[0], sizeof f->r.proto_names[0], "ll128");
  snprintf(f->r.proto_names[1], sizeof f->r.proto_names[1], "simple");
  f->r.num_algo_names = f->r.num_proto_names = 2;
  f->r.num_ranks = 4;
  f->r.iterations = 2;
  f->r.step_time_s = 0.8;
  f->r.ranks = f->ranks;
  f->r.colls = f->colls;
  f->r.num_colls = 3;
  f->r.links = f->links;
  f->r.num_links = 2;
  f->r.usage = f->usage;
  f->r.num_usage = 3;
  f->r.timeline = f->tl;
  f->r.num_timeline = 6;
  f->r.wall_s = 0.25;
  f->r.events = 1234;
}

static int setup(void **state)
{
  fixture *f = calloc(1, sizeof *f);
  const char *tmp = getenv("TMPDIR");
  snprintf(f->dir, sizeof f->dir, "%s/st_an_XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(f->dir))
    return -1;
  snprintf(f->path, sizeof f->path, "%s/run.h5", f->dir);
  build_workload(f);
  snprintf(f->cl.name, sizeof f->cl.name, "test-cluster");
  f->cl.device.peak_flops[WL_DTYPE_BF16] = 1e15;
  f->cl.device.hbm_bytes = 80e9;
  build_result(f);
  an_summary_compute(f->wl, &f->cl, &f->r, &f->s);
  f->info = (an_run_info){.command_line = "simtrain run --test",
                          .workload_json = "{\"model\":\"tiny\"}",
                          .cluster_json = "{\"preset\":\"test-cluster\"}",
                          .options_json = "{\"net\":\"ideal\"}",
                          .workload_name = "tiny",
                          .cluster_name = "test-cluster",
                          .wl = f->wl,
                          .measured = &f->r,
                          .summary = &f->s};
  *state = f;
  return 0;
}

static int teardown(void **state)
{
  fixture *f = *state;
  DIR *d = opendir(f->dir);
  if (d) {
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d)))
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
        snprintf(p, sizeof p, "%s/%s", f->dir, e->d_name);
        remove(p);
      }
    closedir(d);
  }
  rmdir(f->dir);
  wl_workload_destroy(f->wl);
  free(f);
  return 0;
}

/* Names in the folder, sorted, joined with ' '. */
static void dir_listing(const char *dir, char *buf, size_t n)
{
  struct dirent **list;
  int k = scandir(dir, &list, NULL, alphasort);
  buf[0] = '\0';
  for (int i = 0; i < k; i++) {
    if (strcmp(list[i]->d_name, ".") && strcmp(list[i]->d_name, "..")) {
      if (buf[0])
        strncat(buf, " ", n - strlen(buf) - 1);
      strncat(buf, list[i]->d_name, n - strlen(buf) - 1);
    }
    free(list[i]);
  }
  free(list);
}

static void assert_close(double got, double want)
{
  if (!(fabs(got - want) <= 1e-12 * fmax(1.0, fabs(want)))) {
    print_error("got %.17g, want %.17g\n", got, want);
    fail();
  }
}

/* ---- summary arithmetic ------------------------------------------------------- */
static void test_summary__matches_hand_computed(void **state)
{
  fixture *f = *state;
  const an_summary *s = &f->s;
  assert_int_equal(s->num_gpus, 4);
  assert_int_equal(s->iterations, 2);
  assert_close(s->step_time_s, 0.8);
  assert_close(s->tokens_per_step, 8192);
  assert_close(s->tokens_per_s, 10240);        /* 8192 / 0.8 */
  assert_close(s->tokens_per_s_per_gpu, 2560); /* / 4 GPUs */
  assert_close(s->model_flops_per_step, 1e15);
  assert_close(s->model_tflops_per_gpu, 312.5); /* 1e15 / 0.8 / 4 / 1e12 */
  assert_close(s->mfu, 0.3125);                 /* 312.5 TFLOP/s of a 1000 TFLOP/s peak */
  assert_close(s->compute_s, 0.525);            /* (1.0+1.1+0.9+1.2) / 4 ranks / 2 steps */
  assert_close(s->exposed_comm_s, 0.1);         /* 0.8 / 8 */
  assert_close(s->overlapped_comm_s, 0.125);    /* 1.0 / 8 */
  assert_close(s->bubble_s, 0.05);              /* 0.4 / 8 */
  assert_close(s->idle_s, 0.05);                /* 0.4 / 8 */
  assert_close(s->peak_memory_bytes, 40e9);
  assert_close(s->device_memory_bytes, 80e9);
  assert_close(s->sim_wall_s, 0.25);
  assert_close(s->events, 1234);
}

static void test_summary__nan_where_unknown(void **state)
{
  fixture *f = *state;
  f->wl->meta.tokens_per_step = NAN;
  an_summary s;
  an_summary_compute(f->wl, NULL, &f->r, &s);
  assert_true(isnan(s.tokens_per_step));
  assert_true(isnan(s.tokens_per_s));
  assert_true(isnan(s.tokens_per_s_per_gpu));
  assert_true(isnan(s.mfu));                 /* no cluster: no peak */
  assert_true(isnan(s.device_memory_bytes)); /* no cluster */
  assert_close(s.model_tflops_per_gpu, 312.5);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  an_summary_print_json(&s, m);
  fclose(m);
  assert_non_null(strstr(buf, "\"tokens_per_s\":null,"));
  assert_non_null(strstr(buf, "\"mfu\":null,"));
  assert_non_null(strstr(buf, "\"model_tflops_per_gpu\":312.5,"));
  free(buf);
}

/* ---- training to a token budget (analysis/train.c) -------------------------------- */
/* The fixture's summary: 4 GPUs, step 0.8 s, 8192 tokens per step, compute
 * 0.525 s and exposed communication 0.1 s per rank per step.  The power
 * facts of a DGX H100 GPU: TDP 700 W, idle 10 % = 70 W, its share of the
 * node's 4,600 W non-GPU power 575 W. */
static const an_power H100_POWER = {.tdp_W = 700, .idle_W = 70, .host_W_per_gpu = 575};

static void test_train__matches_hand_computed(void **state)
{
  fixture *f = *state;
  st_err err = {0};
  /* 8,192,000 tokens = exactly 1000 steps of 8192 */
  assert_int_equal(an_train_compute(&f->s, &H100_POWER, 8192e3, 2.0, 1.5, &err), ST_OK);
  const an_summary *s = &f->s;
  assert_close(s->train_tokens, 8192e3);
  assert_close(s->train_steps, 1000);
  assert_close(s->time_to_train_s, 800);           /* 1000 x 0.8 s */
  assert_close(s->price_usd_per_gpu_hour, 2.0);
  assert_close(s->cost_usd, 4 * (800.0 / 3600) * 2); /* GPU-hours x price = 16/9 USD */
  assert_close(s->gpu_busy_fraction, 0.71875);     /* (0.525 + 0.5 x 0.1) / 0.8 */
  /* per GPU 70 + 630 x 0.71875 = 522.8125 W, plus 575 W of host: 1097.8125 W */
  assert_close(s->power_W, 4 * 1097.8125);
  assert_close(s->pue, 1.5);
  /* 4391.25 W x 800 s x PUE 1.5 = 5,269,500 J = 5269500 / 3.6e9 MWh */
  assert_close(s->energy_MWh, 5269500 / 3.6e9);
  /* the same through the TDP directly: TDP x time x busy, plus idle and host */
  double gpu_J = 4 * 800 * (70 + (700 - 70) * 0.71875), host_J = 4 * 800 * 575.0;
  assert_close(s->energy_MWh, (gpu_J + host_J) * 1.5 / 3.6e9);
}

static void test_train__steps_round_up_to_whole_steps(void **state)
{
  fixture *f = *state;
  st_err err = {0};
  static const struct {
    double tokens, steps;
  } cases[] = {{8192e3 + 1, 1001}, {8192e3 - 1, 1000}, {1, 1}, {8192, 1}, {8193, 2},
               /* large budgets: 15e12 / 8192 = 1,831,054,687.5 */
               {15e12, 1831054688}, {8192.0 * 1831054687, 1831054687}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    assert_int_equal(an_train_compute(&f->s, &H100_POWER, cases[i].tokens, NAN, 1, &err), ST_OK);
    if (f->s.train_steps != cases[i].steps) {
      print_error("%.17g tokens: %.17g steps, want %.17g\n", cases[i].tokens, f->s.train_steps,
                  cases[i].steps);
      fail();
    }
    assert_close(f->s.time_to_train_s, cases[i].steps * 0.8);
  }
}

static void test_train__null_without_price_or_tdp(void **state)
{
  fixture *f = *state;
  st_err err = {0};
  /* no price: no cost, the energy still */
  assert_int_equal(an_train_compute(&f->s, &H100_POWER, 8192e3, NAN, 1, &err), ST_OK);
  assert_true(isnan(f->s.cost_usd) && isnan(f->s.price_usd_per_gpu_hour));
  assert_close(f->s.energy_MWh, 4 * 1097.8125 * 800 / 3.6e9);
  /* a price of 0 is free, not unknown */
  assert_int_equal(an_train_compute(&f->s, &H100_POWER, 8192e3, 0, 1, &err), ST_OK);
  assert_close(f->s.cost_usd, 0);
  /* no TDP: no power and no energy, the cost still */
  an_power none = {.tdp_W = NAN, .idle_W = NAN, .host_W_per_gpu = 575};
  assert_int_equal(an_train_compute(&f->s, &none, 8192e3, 3.0, 1, &err), ST_OK);
  assert_true(isnan(f->s.power_W) && isnan(f->s.energy_MWh));
  assert_close(f->s.cost_usd, 4 * (800.0 / 3600) * 3);
  assert_close(f->s.gpu_busy_fraction, 0.71875);
  /* the JSON says null */
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  an_summary_print_json(&f->s, m);
  fclose(m);
  assert_non_null(strstr(buf, ",\"power_W\":null,\"pue\":1,\"energy_MWh\":null}"));
  free(buf);
}

static void test_train__busy_fraction_is_capped_at_one(void **state)
{
  fixture *f = *state;
  st_err err = {0};
  f->s.compute_s = 0.9; /* more compute than the step (several compute streams) */
  assert_int_equal(an_train_compute(&f->s, &H100_POWER, 8192e3, NAN, 1, &err), ST_OK);
  assert_close(f->s.gpu_busy_fraction, 1);
  assert_close(f->s.power_W, 4 * (700 + 575.0));
}

static void test_train__bad_values_are_errors(void **state)
{
  fixture *f = *state;
  st_err err = {0};
  static const struct {
    double tokens, price, pue;
    int code;
    const char *msg;
  } cases[] = {
      {0, NAN, 1, ST_EUSAGE, "the token budget is 0; it must be a positive number"},
      {-5, NAN, 1, ST_EUSAGE, "the token budget is -5; it must be a positive number"},
      {INFINITY, NAN, 1, ST_EUSAGE, "the token budget is inf; it must be a positive number"},
      {1e9, -1, 1, ST_EUSAGE, "the price is -1 USD per GPU-hour; it must be 0 or more"},
      {1e9, NAN, 0.9, ST_EUSAGE, "the PUE is 0.9; it must be 1 or more"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    st_err_clear(&err);
    assert_int_equal(an_train_compute(&f->s, &H100_POWER, cases[i].tokens, cases[i].price,
                                      cases[i].pue, &err),
                     cases[i].code);
    assert_string_equal(err.msg, cases[i].msg);
    assert_true(isnan(f->s.train_steps) && isnan(f->s.cost_usd));
  }
  /* a run that does not say how many tokens a step trains */
  f->s.tokens_per_step = NAN;
  st_err_clear(&err);
  assert_int_equal(an_train_compute(&f->s, &H100_POWER, 1e9, NAN, 1, &err), ST_EINPUT);
  assert_string_equal(err.msg, "the workload does not say how many tokens a step trains, so a "
                               "token budget cannot be turned into steps");
}

static void test_train__power_facts_of_a_preset(void **state)
{
  (void)state;
  plat_cluster *c = NULL;
  st_err err = {0};
  assert_int_equal(plat_cluster_load("dgx-h100:2", &c, &err), ST_OK);
  an_power p;
  an_power_from_cluster(c, &p);
  assert_close(p.tdp_W, 700);
  assert_close(p.idle_W, 70);
  assert_close(p.host_W_per_gpu, 575); /* (10,200 W - 8 x 700 W) / 8 */
  plat_cluster_destroy(c);
  /* a device without a published TDP (GB200): no power facts */
  assert_int_equal(plat_cluster_load("gb200-nvl72", &c, &err), ST_OK);
  an_power_from_cluster(c, &p);
  assert_true(isnan(p.tdp_W) && isnan(p.idle_W));
  plat_cluster_destroy(c);
}

/* ---- results file ----------------------------------------------------------------- */
static void check_read_back(const fixture *f, const an_results *r)
{
  assert_string_equal(r->path, f->path);
  assert_string_equal(r->version, SIMTRAIN_VERSION);
  assert_string_equal(r->command_line, "simtrain run --test");
  assert_int_equal(strlen(r->created_utc), 20); /* 2026-01-02T03:04:05Z */
  assert_int_equal(r->created_utc[10], 'T');
  assert_int_equal(r->created_utc[19], 'Z');
  assert_string_equal(r->workload_json, "{\"model\":\"tiny\"}");
  assert_string_equal(r->cluster_json, "{\"preset\":\"test-cluster\"}");
  assert_string_equal(r->options_json, "{\"net\":\"ideal\"}");
  assert_string_equal(r->workload_name, "tiny");
  assert_string_equal(r->cluster_name, "test-cluster");
  assert_memory_equal(&r->summary, &f->s, sizeof f->s); /* bit for bit */

  assert_int_equal(r->num_ranks, 4);
  assert_memory_equal(r->ranks, f->ranks, sizeof f->ranks);

  assert_int_equal(r->num_colls, 3);
  static const struct {
    const char *op, *comm, *kind;
    int src, dst;
  } cw[3] = {{"allreduce", "tp-0", "tp", -1, -1},
             {"allreduce", "tp-1", "tp", -1, -1},
             {"sendrecv", "pp-0", "pp", 0, 2}};
  for (int i = 0; i < 3; i++) {
    const an_coll_row *c = &r->colls[i];
    const an_coll_rec *w = &f->colls[i];
    assert_string_equal(c->op, cw[i].op);
    assert_string_equal(c->comm, cw[i].comm);
    assert_string_equal(c->comm_kind, cw[i].kind);
    assert_int_equal(c->nranks, w->nranks);
    assert_int_equal(c->src, cw[i].src);
    assert_int_equal(c->dst, cw[i].dst);
    assert_true(c->bytes == w->bytes);
    assert_true(c->first_arrival_s == w->first_arrival_s);
    assert_true(c->start_s == w->start_s);
    assert_true(c->end_s == w->end_s);
    assert_true(c->algbw_GBps == w->algbw_GBps);
    assert_true(c->busbw_GBps == w->busbw_GBps);
  }

  assert_int_equal(r->num_links, 2);
  for (int i = 0; i < 2; i++) {
    assert_string_equal(r->links[i].name, f->links[i].name);
    assert_true(r->links[i].bandwidth_Bps == f->links[i].bandwidth_Bps);
    assert_true(r->links[i].bytes == f->links[i].bytes);
    assert_true(r->links[i].busy_s == f->links[i].busy_s);
    assert_true(r->links[i].peak_util == f->links[i].peak_util);
  }

  assert_int_equal(r->num_timeline, 6);
  static const struct {
    const char *stream, *kind, *name;
    int peer;
  } tw[6] = {{"compute", "compute", "fwd_gemm", -1}, {"comm", "coll", "allreduce", -1},
             {"comm", "send", "send_act", 2},        {"comm", "recv", "recv_act", 0},
             {"compute", "compute", "fwd_gemm", -1}, {"comm", "coll", "allreduce", -1}};
  for (int i = 0; i < 6; i++) {
    const an_timeline_row *t = &r->timeline[i];
    const an_timeline_rec *w = &f->tl[i];
    assert_int_equal(t->rank, w->rank);
    assert_int_equal(t->stream, w->stream);
    assert_string_equal(t->stream_name, tw[i].stream);
    assert_string_equal(t->kind, tw[i].kind);
    assert_string_equal(t->name, tw[i].name);
    assert_int_equal(t->peer, tw[i].peer);
    assert_true(t->start_s == w->start_s);
    assert_true(t->end_s == w->end_s);
    assert_true(t->bytes == w->bytes);
    assert_true(t->flops == w->flops);
  }
}

/* What files of this version add: which collectives used each link, the
 * communicators with their members, and each timeline row's communicator. */
static void check_read_back_additions(const an_results *r)
{
  assert_int_equal(r->num_link_usage, 3);
  static const struct {
    int link;
    const char *op, *comm, *kind;
    double bytes;
  } uw[3] = {{0, "allreduce", "tp-0", "tp", 0.75e9},
             {0, "sendrecv", "pp-0", "pp", 0.25e9},
             {1, "allreduce", "tp-1", "tp", 2.5e8}};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(r->link_usage[i].link, uw[i].link);
    assert_string_equal(r->link_usage[i].op, uw[i].op);
    assert_string_equal(r->link_usage[i].comm, uw[i].comm);
    assert_string_equal(r->link_usage[i].comm_kind, uw[i].kind);
    assert_true(r->link_usage[i].bytes == uw[i].bytes);
  }
  /* tp-0 {0,1}, tp-1 {2,3}, pp-0 {0,2}, pp-1 {1,3}, members one after another */
  assert_int_equal(r->num_comms, 4);
  assert_int_equal(r->num_comm_ranks, 8);
  static const char *const names[4] = {"tp-0", "tp-1", "pp-0", "pp-1"};
  static const int32_t members[8] = {0, 1, 2, 3, 0, 2, 1, 3};
  for (int c = 0; c < 4; c++) {
    assert_string_equal(r->comms[c].name, names[c]);
    assert_string_equal(r->comms[c].kind, c < 2 ? "tp" : "pp");
    assert_int_equal(r->comms[c].size, 2);
    assert_int_equal(r->comms[c].first, 2 * c);
  }
  assert_memory_equal(r->comm_ranks, members, sizeof members);
  /* compute: none; rank 0's all-reduce tp-0, its send and rank 2's recv pp-0
   * (role pp of ranks 0 and 2), rank 3's all-reduce tp-1 */
  static const int32_t tc[6] = {-1, 0, 2, 2, -1, 1};
  for (int i = 0; i < 6; i++)
    assert_int_equal(r->timeline[i].comm, tc[i]);
}

/* The columns saying how each collective ran: written by this version, or
 * absent (an older file: "" and -1). */
static void check_run_columns(const an_results *r, int present)
{
  static const char *const algo[3] = {"nvls", "ring", ""}, *const proto[3] = {"simple", "ll128", ""};
  static const int channels[3] = {1, 4, 0};
  assert_int_equal(r->num_colls, 3);
  for (int i = 0; i < 3; i++) {
    assert_string_equal(r->colls[i].algo, present ? algo[i] : "");
    assert_string_equal(r->colls[i].proto, present ? proto[i] : "");
    assert_int_equal(r->colls[i].channels, present ? channels[i] : -1);
  }
}

static void test_results__round_trip_every_field(void **state)
{
  fixture *f = *state;
  st_err err = {0};
  assert_int_equal(an_results_write(f->path, &f->info, &err), ST_OK);
  an_results *r = NULL;
  assert_int_equal(an_results_read(f->path, &r, &err), ST_OK);
  check_read_back(f, r);
  check_read_back_additions(r);
  check_run_columns(r, 1);
  /* report --json prints the same bytes as run --json */
  char *a = NULL, *b = NULL;
  size_t la = 0, lb = 0;
  FILE *m = open_memstream(&a, &la);
  an_summary_print_json(&f->s, m);
  fclose(m);
  m = open_memstream(&b, &lb);
  an_summary_print_json(&r->summary, m);
  fclose(m);
  assert_string_equal(a, b);
  free(a);
  free(b);
  an_results_destroy(r);
}

/* The training block goes to /summary and reads back bit for bit, so report
 * --json prints what run --json printed. */
static void test_results__round_trip_with_a_budget(void **state)
{
  fixture *f = *state;
  st_err err = {0};
  assert_int_equal(an_train_compute(&f->s, &H100_POWER, 15e12, 6.88, 1.2, &err), ST_OK);
  assert_int_equal(an_results_write(f->path, &f->info, &err), ST_OK);
  an_results *r = NULL;
  assert_int_equal(an_results_read(f->path, &r, &err), ST_OK);
  check_read_back(f, r); /* the whole summary, bit for bit */
  assert_close(r->summary.train_steps, 1831054688);
  char *a = NULL, *b = NULL;
  size_t la = 0, lb = 0;
  FILE *m = open_memstream(&a, &la);
  an_summary_print_json(&f->s, m);
  fclose(m);
  m = open_memstream(&b, &lb);
  an_summary_print_json(&r->summary, m);
  fclose(m);
  assert_string_equal(a, b);
  assert_non_null(strstr(b, ",\"train_tokens\":15000000000000,\"train_steps\":1831054688,"));
  free(a);
  free(b);
  an_results_destroy(r);
}

static void test_results__nan_stays_nan(void **state)
{
  fixture *f = *state;
  f->wl->meta.tokens_per_step = NAN;
  f->wl->meta.peak_memory_bytes = NAN;
  an_summary_compute(f->wl, NULL, &f->r, &f->s);
  assert_true(isnan(f->s.tokens_per_s) && isnan(f->s.mfu) && isnan(f->s.peak_memory_bytes));
  st_err err = {0};
  assert_int_equal(an_results_write(f->path, &f->info, &err), ST_OK);
  an_results *r = NULL;
  assert_int_equal(an_results_read(f->path, &r, &err), ST_OK);
  assert_memory_equal(&r->summary, &f->s, sizeof f->s);
  assert_true(isnan(r->summary.tokens_per_s));
  assert_true(isnan(r->summary.mfu));
  assert_true(isnan(r->summary.device_memory_bytes));
  an_results_destroy(r);
}

static void test_results__no_timeline_dataset_without_rows(void **state)
{
  fixture *f = *state;
  f->r.num_timeline = 0;
  st_err err = {0};
  assert_int_equal(an_results_write(f->path, &f->info, &err), ST_OK);
  hid_t h = H5Fopen(f->path, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(h >= 0);
  assert_int_equal(H5Lexists(h, "timeline", H5P_DEFAULT), 0);
  assert_true(H5Lexists(h, "ranks", H5P_DEFAULT) > 0);
  H5Fclose(h);
  an_results *r = NULL;
  assert_int_equal(an_results_read(f->path, &r, &err), ST_OK);
  assert_int_equal(r->num_timeline, 0);
  assert_null(r->timeline);
  an_results_destroy(r);
}

static void test_results__success_leaves_only_the_file(void **state)
{
  fixture *f = *state;
  st_err err = {0};
  assert_int_equal(an_results_write(f->path, &f->info, &err), ST_OK);
  assert_int_equal(an_results_write(f->path, &f->info, &err), ST_OK); /* overwrite */
  char list[1024];
  dir_listing(f->dir, list, sizeof list);
  assert_string_equal(list, "run.h5");
}

static void test_results__failure_leaves_nothing(void **state)
{
  fixture *f = *state;
  f->tl[4].program = 5; /* no such program: the write fails half way */
  st_err err = {0};
  assert_int_equal(an_results_write(f->path, &f->info, &err), ST_EIO);
  char want[1024];
  snprintf(want, sizeof want,
           "results '%s': dataset '/timeline': row 4: program 5 is not in the workload",
           f->path);
  assert_string_equal(err.msg, want);
  char list[1024];
  dir_listing(f->dir, list, sizeof list);
  assert_string_equal(list, "");
}

static void test_results__failure_keeps_the_previous_file(void **state)
{
  fixture *f = *state;
  st_err err = {0};
  assert_int_equal(an_results_write(f->path, &f->info, &err), ST_OK);
  f->colls[1].comm = 9;
  assert_int_equal(an_results_write(f->path, &f->info, &err), ST_EIO);
  char want[1024];
  snprintf(want, sizeof want,
           "results '%s': dataset '/collectives': record 1: communicator 9 is not in the "
           "workload",
           f->path);
  assert_string_equal(err.msg, want);
  char list[1024];
  dir_listing(f->dir, list, sizeof list);
  assert_string_equal(list, "run.h5");
  f->colls[1].comm = 1;
  an_results *r = NULL;
  assert_int_equal(an_results_read(f->path, &r, &err), ST_OK);
  check_read_back(f, r);
  an_results_destroy(r);
}

static void test_results__bad_path_error_text(void **state)
{
  fixture *f = *state;
  char path[600], want[2048];
  snprintf(path, sizeof path, "%s/no-such-dir/run.h5", f->dir);
  st_err err = {0};
  assert_int_equal(an_results_write(path, &f->info, &err), ST_EIO);
  snprintf(want, sizeof want,
           "results '%s': cannot create '%s.tmp.%ld': No such file or directory", path, path,
           (long)getpid());
  assert_string_equal(err.msg, want);

  an_results *r = NULL;
  assert_int_equal(an_results_read(path, &r, &err), ST_EIO);
  snprintf(want, sizeof want, "results '%s': cannot open: No such file or directory", path);
  assert_string_equal(err.msg, want);
  assert_null(r);
}

static void test_results__not_hdf5_error_text(void **state)
{
  fixture *f = *state;
  FILE *t = fopen(f->path, "w");
  fputs("{\"this is\": \"json\"}\n", t);
  fclose(t);
  st_err err = {0};
  an_results *r = NULL;
  assert_int_equal(an_results_read(f->path, &r, &err), ST_EINPUT);
  char want[1024];
  snprintf(want, sizeof want, "results '%s': not an HDF5 file", f->path);
  assert_string_equal(err.msg, want);
}

static void test_results__missing_dataset_is_named(void **state)
{
  fixture *f = *state;
  st_err err = {0};
  assert_int_equal(an_results_write(f->path, &f->info, &err), ST_OK);
  hid_t h = H5Fopen(f->path, H5F_ACC_RDWR, H5P_DEFAULT);
  assert_true(h >= 0);
  assert_true(H5Ldelete(h, "links", H5P_DEFAULT) >= 0);
  H5Fclose(h);
  an_results *r = NULL;
  assert_int_equal(an_results_read(f->path, &r, &err), ST_EINPUT);
  char want[1024];
  snprintf(want, sizeof want, "results '%s': dataset '/links' is missing", f->path);
  assert_string_equal(err.msg, want);
  assert_null(r);
}

static void test_results__missing_column_is_named(void **state)
{
  fixture *f = *state;
  st_err err = {0};
  assert_int_equal(an_results_write(f->path, &f->info, &err), ST_OK);
  /* Replace /ranks by a table with only a 'rank' column. */
  hid_t h = H5Fopen(f->path, H5F_ACC_RDWR, H5P_DEFAULT);
  assert_true(h >= 0);
  assert_true(H5Ldelete(h, "ranks", H5P_DEFAULT) >= 0);
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(int32_t));
  H5Tinsert(t, "rank", 0, H5T_NATIVE_INT32);
  hsize_t dims[1] = {4};
  hid_t sp = H5Screate_simple(1, dims, NULL);
  hid_t ds = H5Dcreate2(h, "ranks", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int32_t v[4] = {0, 1, 2, 3};
  assert_true(H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
  H5Dclose(ds);
  H5Sclose(sp);
  H5Tclose(t);
  H5Fclose(h);
  an_results *r = NULL;
  assert_int_equal(an_results_read(f->path, &r, &err), ST_EINPUT);
  char want[1024];
  snprintf(want, sizeof want, "results '%s': dataset '/ranks': column 'host' is missing",
           f->path);
  assert_string_equal(err.msg, want);
}

static void test_results__missing_summary_attribute_is_named(void **state)
{
  fixture *f = *state;
  st_err err = {0};
  assert_int_equal(an_results_write(f->path, &f->info, &err), ST_OK);
  hid_t h = H5Fopen(f->path, H5F_ACC_RDWR, H5P_DEFAULT);
  assert_true(H5Adelete_by_name(h, "summary", "mfu", H5P_DEFAULT) >= 0);
  H5Fclose(h);
  an_results *r = NULL;
  assert_int_equal(an_results_read(f->path, &r, &err), ST_EINPUT);
  char want[1024];
  snprintf(want, sizeof want, "results '%s': group '/summary': attribute 'mfu' is missing",
           f->path);
  assert_string_equal(err.msg, want);
}

/* Many timeline rows: several write batches, chunked and compressed. */
static void test_results__large_timeline_is_chunked_and_compressed(void **state)
{
  fixture *f = *state;
  size_t n = 200000;
  an_timeline_rec *tl = malloc(n * sizeof *tl);
  for (size_t i = 0; i < n; i++) {
    tl[i] = f->tl[i % 6];
    tl[i].start_s = (double)i * 1e-6;
    tl[i].end_s = (double)i * 1e-6 + 5e-7;
  }
  f->r.timeline = tl;
  f->r.num_timeline = n;
  st_err err = {0};
  assert_int_equal(an_results_write(f->path, &f->info, &err), ST_OK);

  hid_t h = H5Fopen(f->path, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(h, "timeline", H5P_DEFAULT);
  hid_t dcpl = H5Dget_create_plist(ds);
  assert_int_equal(H5Pget_layout(dcpl), H5D_CHUNKED);
  int nf = H5Pget_nfilters(dcpl), deflate = 0;
  for (int i = 0; i < nf; i++) {
    unsigned flags;
    size_t ne = 0;
    if (H5Pget_filter2(dcpl, (unsigned)i, &flags, &ne, NULL, 0, NULL, NULL) == H5Z_FILTER_DEFLATE)
      deflate = 1;
  }
  assert_true(deflate);
  hsize_t stored = H5Dget_storage_size(ds);
  assert_true(stored < n * sizeof(an_timeline_row) / 4); /* compresses at least 4x */
  H5Pclose(dcpl);
  H5Dclose(ds);
  H5Fclose(h);

  an_results *r = NULL;
  assert_int_equal(an_results_read(f->path, &r, &err), ST_OK);
  assert_int_equal(r->num_timeline, n);
  for (size_t i = 0; i < n; i += 6007) {
    assert_true(r->timeline[i].start_s == tl[i].start_s);
    assert_true(r->timeline[i].end_s == tl[i].end_s);
    assert_int_equal(r->timeline[i].rank, tl[i].rank);
  }
  assert_string_equal(r->timeline[n - 1].name, "allreduce"); /* row 199999 is tl[199999 % 6 = 1] */
  an_results_destroy(r);
  free(tl);
}

/* JSON descriptions over 64 KiB still fit in an attribute. */
static void test_results__big_config_json_round_trips(void **state)
{
  fixture *f = *state;
  size_t n = 200000;
  char *big = malloc(n + 1);
  for (size_t i = 0; i < n; i++)
    big[i] = "{}[]\"abc,:0123"[i % 14];
  big[n] = '\0';
  f->info.workload_json = big;
  st_err err = {0};
  assert_int_equal(an_results_write(f->path, &f->info, &err), ST_OK);
  an_results *r = NULL;
  assert_int_equal(an_results_read(f->path, &r, &err), ST_OK);
  assert_string_equal(r->workload_json, big);
  an_results_destroy(r);
  free(big);
}

/* The committed fixture (written by the first version's writer from the
 * synthetic run, before /link_usage, /communicators and the timeline's comm
 * column) still reads back the same, with those additions empty: files
 * written earlier stay readable.  ST_REGENERATE_FIXTURES=1 rewrites it with
 * this version's writer (then the additions are there). */
static void test_results__committed_fixture_reads_back(void **state)
{
  fixture *f = *state;
  char path[1024];
  snprintf(path, sizeof path, "%s/results-small.h5", ST_TEST_DATA_DIR);
  st_err err = {0};
  if (getenv("ST_REGENERATE_FIXTURES"))
    assert_int_equal(an_results_write(path, &f->info, &err), ST_OK);
  an_results *r = NULL;
  if (an_results_read(path, &r, &err) != ST_OK) {
    print_error("%s\n", err.msg);
    fail();
  }
  snprintf(f->path, sizeof f->path, "%s", path); /* check_read_back compares the path */
  check_read_back(f, r);
  if (getenv("ST_REGENERATE_FIXTURES")) {
    check_read_back_additions(r);
  } else {
    assert_int_equal(r->num_link_usage, 0);
    assert_int_equal(r->num_comms, 0);
    assert_int_equal(r->num_comm_ranks, 0);
    for (size_t i = 0; i < r->num_timeline; i++)
      assert_int_equal(r->timeline[i].comm, -1);
  }
  /* the fixture predates the algo/proto/channels columns */
  check_run_columns(r, getenv("ST_REGENERATE_FIXTURES") != NULL);
  an_results_destroy(r);
}

/* ---- report ---------------------------------------------------------------------- */
static char *report_text(const fixture *f, const int32_t *sel, size_t nsel)
{
  st_err err = {0};
  assert_int_equal(an_results_write(f->path, &f->info, &err), ST_OK);
  an_results *r = NULL;
  assert_int_equal(an_results_read(f->path, &r, &err), ST_OK);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  an_report_print_ranks(r, sel, nsel, m);
  fclose(m);
  an_results_destroy(r);
  /* every line fits in 100 columns */
  for (const char *p = buf; *p;) {
    const char *e = strchr(p, '\n');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l > 100) {
      print_error("line longer than 100 columns: %.*s\n", (int)l, p);
      fail();
    }
    p += l + (e ? 1 : 0);
  }
  return buf;
}

static void test_report__few_ranks_lists_every_rank(void **state)
{
  fixture *f = *state;
  char *t = report_text(f, NULL, 0);
  assert_non_null(strstr(t, "simtrain prediction: tiny on test-cluster (4 GPUs)"));
  assert_non_null(strstr(t, "per rank, per step (ms), 4 ranks:"));
  /* rank 3 (gpu 0): 1.2/0.2/0.4/0.1/0.1/1.6 s over 2 steps, in ms */
  assert_non_null(strstr(t, "       3     0      600.000      100.000      200.000       50.000"
                            "       50.000      800.000\n"));
  /* phase p of rank k: 0.01 (k+1)(p+1) s over 2 steps; tp 0.2 s, pp 0.1 k s */
  assert_non_null(strstr(t, "by phase and communicator kind, per step (ms):\n"
                            "                                        min         mean          max\n"
                            "  busy in no phase                    5.000       12.500       20.000\n"
                            "  busy in forward                    10.000       25.000       40.000\n"
                            "  busy in backward                   15.000       37.500       60.000\n"
                            "  busy in optimizer                  20.000       50.000       80.000\n"
                            "  transfer on tp comms              100.000      100.000      100.000\n"
                            "  transfer on pp comms                0.000       75.000      150.000\n"));
  /* two allreduce groups (tp-0 100 ms, tp-1 200 ms) and the send/recv, longest first */
  const char *a = strstr(t, "allreduce     tp-1");
  const char *b = strstr(t, "allreduce     tp-0");
  const char *c = strstr(t, "sendrecv      pp-0");
  assert_true(a && b && c && a < b && b < c);
  assert_non_null(strstr(t, " 1.00 MiB     1    200.000   200.000   50.000"));
  assert_non_null(strstr(t, "busiest links (2 links; whole run), with the collectives that used them:"));
  /* gpu0-up (busiest) carried 1 GB: 75 % tp-0's all-reduce, 25 % pp-0's send/recv */
  const char *l0 = strstr(t, "\n  gpu0-up  ");
  const char *u0 = strstr(t, "\n      allreduce     tp-0                                     tp     "
                             "715.26 MiB   75.0 %\n"
                             "      sendrecv      pp-0                                     pp     "
                             "238.42 MiB   25.0 %\n");
  const char *l1 = strstr(t, "\n  a-rather-long-link-name/spine-3:leaf ");
  const char *u1 = strstr(t, "\n      allreduce     tp-1                                     tp     "
                             "238.42 MiB  100.0 %\n");
  assert_true(l0 && u0 && l1 && u1 && l0 < u0 && u0 < l1 && l1 < u1);
  free(t);
}

static void test_report__rank_selection(void **state)
{
  fixture *f = *state;
  int32_t sel[] = {2, 0};
  char *t = report_text(f, sel, 2);
  assert_non_null(strstr(t, "per rank, per step (ms), 2 of 4 ranks:"));
  const char *r2 = strstr(t, "\n       2     1 ");
  const char *r0 = strstr(t, "\n       0     3 ");
  assert_true(r2 && r0 && r2 < r0);
  assert_null(strstr(t, "\n       3     0 "));
  free(t);
}

static void test_report__many_ranks_shows_distribution(void **state)
{
  fixture *f = *state;
  enum { N = 41 };
  an_rank_row many[N];
  memset(many, 0, sizeof many);
  for (int k = 0; k < N; k++) {
    many[k].rank = k;
    many[k].host = k;
    many[k].compute_s = 2.0 * (k + 1) / 1000; /* 1..41 ms per step */
    many[k].finish_s = many[k].compute_s;
  }
  f->r.ranks = many;
  f->r.num_ranks = N;
  char *t = report_text(f, NULL, 0);
  assert_non_null(strstr(t, "per rank, per step (ms), 41 ranks:"));
  /* compute: min 1, median 21, mean 21, max 41 ms */
  assert_non_null(strstr(t, "  compute                   1.000       21.000       21.000       41.000\n"));
  const char *s = strstr(t, "slowest ranks (by finish), per step (ms):");
  assert_non_null(s);
  const char *r40 = strstr(s, "\n      40    40       41.000");
  const char *r39 = strstr(s, "\n      39    39       40.000");
  assert_true(r40 && r39 && r40 < r39);
  assert_null(strstr(s, "\n      35    35 ")); /* only the 5 slowest */
  free(t);
}

/* ---- compare --------------------------------------------------------------------- */
/* Write the fixture's run to <dir>/<name> and read it back. */
static an_results *written(fixture *f, const char *name)
{
  char p[600];
  snprintf(p, sizeof p, "%s/%s", f->dir, name);
  st_err err = {0};
  assert_int_equal(an_results_write(p, &f->info, &err), ST_OK);
  an_results *r = NULL;
  assert_int_equal(an_results_read(p, &r, &err), ST_OK);
  return r;
}

static char *capture_compare(an_results **runs, size_t n, int json)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (json)
    an_compare_print_json((const an_results *const *)runs, n, m);
  else
    an_compare_print((const an_results *const *)runs, n, m);
  fclose(m);
  return buf;
}

static void test_compare__run_with_itself_has_zero_deltas(void **state)
{
  fixture *f = *state;
  st_err err = {0};
  /* with a token budget, so that every compared value is a number */
  assert_int_equal(an_train_compute(&f->s, &H100_POWER, 8192e3, 2.0, 1, &err), ST_OK);
  an_results *runs[2] = {written(f, "a.h5"), NULL};
  runs[1] = runs[0];
  char *j = capture_compare(runs, 2, 1);
  cJSON *doc = cJSON_Parse(j);
  assert_non_null(doc);
  cJSON *b = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "runs"), 1);
  cJSON *delta = cJSON_GetObjectItem(b, "delta"), *ratio = cJSON_GetObjectItem(b, "ratio");
  int count = 0;
  for (cJSON *d = delta->child; d; d = d->next, count++) {
    assert_true(cJSON_IsNumber(d));
    assert_true(d->valuedouble == 0.0);
  }
  assert_int_equal(count, 16); /* 13 step numbers, time to train, cost, energy */
  for (cJSON *d = ratio->child; d; d = d->next)
    assert_true(d->valuedouble == 1.0);
  cJSON_Delete(doc);
  free(j);
  char *t = capture_compare(runs, 2, 0);
  assert_non_null(strstr(t, "  step time (s)              +0.000000   1.0000\n"));
  free(t);
  an_results_destroy(runs[0]);
}

static void test_compare__step_time_ratio_is_the_runs_ratio(void **state)
{
  fixture *f = *state;
  an_results *runs[3];
  runs[0] = written(f, "a.h5");
  f->r.step_time_s = 1.0; /* B: slower */
  an_summary_compute(f->wl, &f->cl, &f->r, &f->s);
  runs[1] = written(f, "b.h5");
  f->wl->meta.tokens_per_step = NAN; /* C: no token count */
  an_summary_compute(f->wl, &f->cl, &f->r, &f->s);
  runs[2] = written(f, "c.h5");
  char *j = capture_compare(runs, 3, 1);
  cJSON *doc = cJSON_Parse(j);
  assert_non_null(doc);
  cJSON *b = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "runs"), 1);
  cJSON *rb = cJSON_GetObjectItem(b, "ratio"), *db = cJSON_GetObjectItem(b, "delta");
  assert_true(cJSON_GetObjectItem(rb, "step_time_s")->valuedouble == 1.0 / 0.8);
  assert_true(cJSON_GetObjectItem(rb, "tokens_per_s")->valuedouble ==
              (8192 / 1.0) / (8192 / 0.8));
  assert_true(cJSON_GetObjectItem(db, "step_time_s")->valuedouble == 1.0 - 0.8);
  cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "runs"), 2);
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "ratio"), "tokens_per_s")));
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "delta"), "tokens_per_s")));
  cJSON_Delete(doc);
  free(j);
  char *t = capture_compare(runs, 3, 0);
  /* B: +0.2 s, 1.25x; C likewise */
  assert_non_null(strstr(t, "  step time (s)              +0.200000   1.2500     +0.200000   1.2500\n"));
  /* tokens/s: B 8192 - 10240 = -2048, ratio 0.8; C n/a */
  assert_non_null(strstr(t, "  tokens/s                     -2048.0   0.8000           n/a      n/a\n"));
  for (int i = 0; i < 3; i++)
    an_results_destroy(runs[i]);
  free(t);
}

/* ---- Perfetto export ----------------------------------------------------------- */
static cJSON *export_parsed(fixture *f, const char *name, an_export_counts *c)
{
  an_results *r = written(f, "run.h5");
  char p[600];
  snprintf(p, sizeof p, "%s/%s", f->dir, name);
  st_err err = {0};
  assert_int_equal(an_export_perfetto(r, p, c, &err), ST_OK);
  an_results_destroy(r);
  unsigned char magic[2] = {0, 0};
  FILE *raw = fopen(p, "rb");
  assert_non_null(raw);
  assert_int_equal(fread(magic, 1, 2, raw), 2);
  fclose(raw);
  int is_gz = magic[0] == 0x1f && magic[1] == 0x8b;
  assert_int_equal(is_gz, st_str_ends_with(p, ".gz")); /* gzip exactly when named .gz */
  char *text;
  size_t len;
  assert_int_equal(st_file_read_all(p, &text, &len, &err), ST_OK); /* inflates .gz */
  cJSON *doc = cJSON_Parse(text);
  free(text);
  assert_non_null(doc);
  return doc;
}

static size_t count_ph(const cJSON *events, const char *ph)
{
  size_t n = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, events) if (!strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, ph)) n++;
  return n;
}

static void test_export__slices_match_timeline_one_to_one(void **state)
{
  fixture *f = *state;
  an_export_counts c;
  cJSON *doc = export_parsed(f, "trace.json", &c);
  cJSON *ev = cJSON_GetObjectItem(doc, "traceEvents");
  assert_int_equal(count_ph(ev, "X"), 6);
  assert_int_equal(c.slices, 6);
  size_t k = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, ev)
  {
    if (strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, "X"))
      continue;
    const an_timeline_rec *t = &f->tl[k++];
    assert_int_equal(cJSON_GetObjectItem(e, "pid")->valueint, t->rank);
    assert_int_equal(cJSON_GetObjectItem(e, "tid")->valueint, t->stream);
    assert_true(fabs(cJSON_GetObjectItem(e, "ts")->valuedouble - t->start_s * 1e6) < 1e-3);
    assert_true(fabs(cJSON_GetObjectItem(e, "dur")->valuedouble - (t->end_s - t->start_s) * 1e6) <
                1e-3);
    cJSON *args = cJSON_GetObjectItem(e, "args");
    assert_true(cJSON_GetObjectItem(args, "bytes")->valuedouble == t->bytes);
    assert_true(cJSON_GetObjectItem(args, "flops")->valuedouble == t->flops);
  }
  /* processes: 4 ranks + links; names as "rank N (gpu-H)" */
  int named = 0;
  cJSON_ArrayForEach(e, ev)
  {
    if (strcmp(cJSON_GetObjectItem(e, "name")->valuestring, "process_name"))
      continue;
    const char *nm = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "name")->valuestring;
    int pid = cJSON_GetObjectItem(e, "pid")->valueint;
    char want[32];
    if (pid < 4)
      snprintf(want, sizeof want, "rank %d (gpu-%d)", pid, 3 - pid);
    else
      snprintf(want, sizeof want, "links");
    assert_string_equal(nm, want);
    named++;
  }
  assert_int_equal(named, 5);
  /* threads: rank 0 has compute and comm, ranks 1, 2, 3 one each */
  assert_int_equal(c.threads, 5);
  cJSON_Delete(doc);
}

static void test_export__flow_joins_matching_send_and_recv(void **state)
{
  fixture *f = *state;
  an_export_counts c;
  cJSON *doc = export_parsed(f, "trace.json.gz", &c);
  cJSON *ev = cJSON_GetObjectItem(doc, "traceEvents");
  assert_int_equal(count_ph(ev, "s"), 1);
  assert_int_equal(count_ph(ev, "f"), 1);
  assert_int_equal(c.flows, 1);
  const cJSON *e, *s = NULL, *fin = NULL;
  cJSON_ArrayForEach(e, ev)
  {
    const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
    if (!strcmp(ph, "s"))
      s = e;
    if (!strcmp(ph, "f"))
      fin = e;
  }
  assert_int_equal(cJSON_GetObjectItem(s, "pid")->valueint, 0); /* sender rank 0 */
  assert_int_equal(cJSON_GetObjectItem(fin, "pid")->valueint, 2); /* receiver rank 2 */
  assert_int_equal(cJSON_GetObjectItem(s, "id")->valueint, cJSON_GetObjectItem(fin, "id")->valueint);
  /* counters: two per link (value at 0, back to 0 at the end) */
  assert_int_equal(count_ph(ev, "C"), 4);
  assert_int_equal(c.counters, 2);
  cJSON_Delete(doc);

  /* a recv posted early (it waits for the send) is the same transfer: the
   * flow is drawn where the transfer starts, the send's start */
  f->tl[3].start_s = 0.05;
  doc = export_parsed(f, "trace1.json", &c);
  ev = cJSON_GetObjectItem(doc, "traceEvents");
  assert_int_equal(count_ph(ev, "s"), 1);
  cJSON_ArrayForEach(e, ev)
  {
    const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
    if (!strcmp(ph, "s") || !strcmp(ph, "f"))
      assert_true(fabs(cJSON_GetObjectItem(e, "ts")->valuedouble - 0.2e6) < 1e-3);
  }
  cJSON_Delete(doc);

  /* a recv that ends at another time is not the same transfer: no flow */
  f->tl[3].end_s = 0.31;
  doc = export_parsed(f, "trace2.json", &c);
  ev = cJSON_GetObjectItem(doc, "traceEvents");
  assert_int_equal(count_ph(ev, "s"), 0);
  assert_int_equal(count_ph(ev, "X"), 6);
  cJSON_Delete(doc);
}

/* Collective slices carry their communicator and its members; send/recv
 * slices their communicator and peer. */
static void test_export__collective_slices_name_comm_and_peers(void **state)
{
  fixture *f = *state;
  an_export_counts c;
  cJSON *doc = export_parsed(f, "trace.json", &c);
  cJSON *ev = cJSON_GetObjectItem(doc, "traceEvents");
  static const struct {
    const char *comm, *peers;
    int nranks, peer;
  } want[6] = {{NULL, NULL, 0, -1},   {"tp-0", "0-1", 2, -1}, {"pp-0", NULL, 0, 2},
               {"pp-0", NULL, 0, 0},  {NULL, NULL, 0, -1},   {"tp-1", "2-3", 2, -1}};
  size_t k = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, ev)
  {
    if (strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, "X"))
      continue;
    const cJSON *args = cJSON_GetObjectItem(e, "args");
    const cJSON *cm = cJSON_GetObjectItem(args, "comm"), *pe = cJSON_GetObjectItem(args, "peers");
    const cJSON *nr = cJSON_GetObjectItem(args, "nranks"), *peer = cJSON_GetObjectItem(args, "peer");
    if (want[k].comm)
      assert_string_equal(cm->valuestring, want[k].comm);
    else
      assert_null(cm);
    if (want[k].peers) {
      assert_string_equal(pe->valuestring, want[k].peers);
      assert_int_equal(nr->valueint, want[k].nranks);
    } else {
      assert_null(pe);
      assert_null(nr);
    }
    if (want[k].peer >= 0)
      assert_int_equal(peer->valueint, want[k].peer);
    else
      assert_null(peer);
    k++;
  }
  assert_int_equal(k, 6);
  cJSON_Delete(doc);
}

/* Grouped by node (2 GPUs per node; rank k on GPU 3 - k): a process per
 * node, a thread per (rank, stream) with tid = rank x 2 + stream, and the
 * slices still one per timeline row. */
static void test_export__group_by_node_puts_gpus_under_their_node(void **state)
{
  fixture *f = *state;
  f->info.cluster_json = "{\"name\":\"test\",\"node\":{\"gpus\":2},\"nodes\":2}";
  an_results *r = written(f, "run.h5");
  char p[600];
  snprintf(p, sizeof p, "%s/node.json", f->dir);
  st_err err = {0};
  an_export_counts c;
  assert_int_equal(an_export_perfetto_grouped(r, p, AN_GROUP_NODE, &c, &err), ST_OK);
  assert_int_equal(c.processes, 2);
  assert_int_equal(c.threads, 5);
  assert_int_equal(c.slices, 6);
  assert_int_equal(c.flows, 1);
  char *text;
  size_t len;
  assert_int_equal(st_file_read_all(p, &text, &len, &err), ST_OK);
  cJSON *doc = cJSON_Parse(text);
  free(text);
  assert_non_null(doc);
  cJSON *ev = cJSON_GetObjectItem(doc, "traceEvents");
  size_t k = 0, names = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, ev)
  {
    const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
    const char *nm = cJSON_GetObjectItem(e, "name")->valuestring;
    int pid = cJSON_GetObjectItem(e, "pid")->valueint;
    int tid = cJSON_GetObjectItem(e, "tid")->valueint;
    if (!strcmp(ph, "X")) {
      const an_timeline_rec *t = &f->tl[k++];
      assert_int_equal(pid, (3 - t->rank) / 2);
      assert_int_equal(tid, t->rank * 2 + t->stream);
    } else if (!strcmp(nm, "process_name")) {
      const char *v = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "name")->valuestring;
      char want[16];
      snprintf(want, sizeof want, pid < 2 ? "node %d" : "links", pid);
      assert_string_equal(v, want);
      names++;
    } else if (!strcmp(nm, "thread_name") && pid == 1 && tid == 1) {
      const char *v = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "name")->valuestring;
      assert_string_equal(v, "gpu-3 rank 0 comm");
    }
  }
  assert_int_equal(k, 6);
  assert_int_equal(names, 3); /* node 0, node 1, links */
  cJSON_Delete(doc);
  an_results_destroy(r);

  /* a cluster that does not say its GPUs per node cannot be grouped by node */
  f->info.cluster_json = "{\"preset\":\"test-cluster\"}";
  r = written(f, "run.h5");
  assert_int_equal(an_export_perfetto_grouped(r, p, AN_GROUP_NODE, &c, &err), ST_EINPUT);
  char want[1400];
  snprintf(want, sizeof want, "results '%s/run.h5': '/config' cluster does not say how many GPUs "
           "a node has (node.gpus or gpus_per_node): group by rank instead", f->dir);
  assert_string_equal(err.msg, want);
  an_results_destroy(r);
}

/* Rank lists as text: runs become ranges; a list that does not fit ends
 * with the count. */
static void test_export__rank_list_text(void **state)
{
  (void)state;
  static const int32_t a[] = {0, 1, 2, 3, 8, 12, 13};
  char buf[64];
  assert_string_equal(an__format_rank_list(a, 7, buf, sizeof buf), "0-3,8,12-13");
  assert_string_equal(an__format_rank_list(a, 1, buf, sizeof buf), "0");
  assert_string_equal(an__format_rank_list(a, 0, buf, sizeof buf), "");
  int32_t many[100];
  for (int i = 0; i < 100; i++)
    many[i] = 8 * i; /* 0,8,16,...,792: no runs */
  /* 40 bytes: 21 characters of ranks + ",... (100 ranks)" (16) + NUL; ",64" would not fit */
  assert_string_equal(an__format_rank_list(many, 100, buf, 40),
                      "0,8,16,24,32,40,48,56,... (100 ranks)");
}

/* A results file whose timeline holds a NaN time (written by something else,
 * or damaged) is an error naming the file and the row, never "ts":-nan in
 * the trace (JSON has no NaN). */
static void test_export__non_finite_time_is_an_error_not_nan(void **state)
{
  fixture *f = *state;
  f->tl[2].start_s = NAN;
  an_results *r = written(f, "run.h5");
  char p[600], want[1400];
  snprintf(p, sizeof p, "%s/trace.json", f->dir);
  st_err err = {0};
  assert_int_equal(an_export_perfetto(r, p, NULL, &err), ST_EINPUT);
  snprintf(want, sizeof want, "results '%s/run.h5': /timeline row 2: 'start_s' is not a finite number",
           f->dir);
  assert_string_equal(err.msg, want);
  an_results_destroy(r);
  char list[1024];
  dir_listing(f->dir, list, sizeof list);
  assert_string_equal(list, "run.h5");
}

static void test_export__no_timeline_error_text(void **state)
{
  fixture *f = *state;
  f->r.num_timeline = 0;
  an_results *r = written(f, "run.h5");
  char p[600], want[1400];
  snprintf(p, sizeof p, "%s/trace.json", f->dir);
  st_err err = {0};
  assert_int_equal(an_export_perfetto(r, p, NULL, &err), ST_EINPUT);
  snprintf(want, sizeof want, "results '%s/run.h5': no '/timeline' to export (run with --timeline)",
           f->dir);
  assert_string_equal(err.msg, want);
  an_results_destroy(r);
  char list[1024];
  dir_listing(f->dir, list, sizeof list);
  assert_string_equal(list, "run.h5");
}

/* ---- SVG plots ------------------------------------------------------------------ */
static size_t count_str(const char *s, const char *sub)
{
  size_t n = 0;
  for (const char *p = strstr(s, sub); p; p = strstr(p + 1, sub))
    n++;
  return n;
}

/* Rectangles in <g id="name"> (groups are not nested). */
static size_t rects_in_group(const char *svg, const char *name)
{
  char open[64];
  snprintf(open, sizeof open, "<g id=\"%s\">", name);
  const char *a = strstr(svg, open);
  if (!a)
    return 0;
  const char *b = strstr(a, "</g>");
  size_t n = 0;
  for (const char *p = strstr(a, "<rect"); p && p < b; p = strstr(p + 1, "<rect"))
    n++;
  return n;
}

typedef int (*plot_fn)(const an_results *r, const int32_t *ranks, size_t n, const char *path,
                       st_err *err);
static int plot_links_adapter(const an_results *r, const int32_t *ranks, size_t n,
                              const char *path, st_err *err)
{
  (void)ranks;
  (void)n;
  return an_plot_links(r, path, err);
}

static char *plotted(fixture *f, plot_fn fn, const int32_t *ranks, size_t n)
{
  an_results *r = written(f, "run.h5");
  char p[600];
  snprintf(p, sizeof p, "%s/plot.svg", f->dir);
  st_err err = {0};
  if (fn(r, ranks, n, p, &err) != ST_OK) {
    print_error("%s\n", err.msg);
    fail();
  }
  an_results_destroy(r);
  char *text;
  size_t len;
  assert_int_equal(st_file_read_all(p, &text, &len, &err), ST_OK);
  const char *bad = xml_check(text);
  if (bad) {
    print_error("SVG is not well-formed: %s\n", bad);
    fail();
  }
  return text;
}

static void test_svg__checker_rejects_broken_xml(void **state)
{
  (void)state;
  static const struct {
    const char *xml, *why;
  } cases[] = {
      {"<svg><rect></svg>", "end tag does not match"},
      {"<svg><rect x=1/></svg>", "attribute without a quoted value"},
      {"<svg><text>a & b</text></svg>", "bad entity in text"},
      {"<svg><g>", "element not closed"},
      {"<svg/><svg/>", "more than one root element"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *got = xml_check(cases[i].xml);
    assert_non_null(got);
    assert_string_equal(got, cases[i].why);
  }
  assert_null(xml_check("<?xml version=\"1.0\"?>\n<svg a=\"&lt;&#38;\"><g id='x'><rect/></g></svg>\n"));
}

static void test_plot__timeline_draws_every_op(void **state)
{
  fixture *f = *state;
  char *svg = plotted(f, an_plot_timeline, NULL, 0);
  assert_int_equal(count_str(svg, "<svg "), 1);
  assert_int_equal(rects_in_group(svg, "ops"), 6); /* ops far apart: none merged */
  assert_non_null(strstr(svg, ">time (ms)</text>"));
  assert_non_null(strstr(svg, ">rank 2 comm</text>"));
  assert_non_null(strstr(svg, "<title>send_act (send) 100 ms</title>"));
  assert_int_equal(rects_in_group(svg, "legend"), 4); /* compute coll send recv */
  free(svg);
  /* --ranks 2: only rank 2's lane */
  int32_t two = 2;
  svg = plotted(f, an_plot_timeline, &two, 1);
  assert_int_equal(rects_in_group(svg, "ops"), 1);
  assert_null(strstr(svg, ">rank 0 compute</text>"));
  free(svg);
}

static void test_plot__timeline_merges_ops_under_half_a_pixel(void **state)
{
  fixture *f = *state;
  enum { N = 10000 };
  an_timeline_rec *tl = malloc(N * sizeof *tl);
  for (int i = 0; i < N; i++) /* back-to-back 1 us compute ops on rank 0 */
    tl[i] = (an_timeline_rec){0, 0, WL_OP_COMPUTE, 0, 0, i * 1e-6, (i + 1) * 1e-6, 0, 1e6};
  f->r.timeline = tl;
  f->r.num_timeline = N;
  char *svg = plotted(f, an_plot_timeline, NULL, 0);
  assert_int_equal(rects_in_group(svg, "ops"), 1);
  assert_non_null(strstr(svg, "<title>10000 compute ops</title>"));
  assert_non_null(strstr(svg, ">time (ms)</text>")); /* 10 ms run */
  free(svg);
  free(tl);
}

static void test_plot__breakdown_stacks_four_parts_per_rank(void **state)
{
  fixture *f = *state;
  char *svg = plotted(f, an_plot_breakdown, NULL, 0);
  assert_int_equal(rects_in_group(svg, "bars"), 16);
  assert_non_null(strstr(svg, ">time per step (ms)</text>"));
  assert_non_null(strstr(svg, "<title>rank 3 compute 600 ms</title>"));
  assert_non_null(strstr(svg, "<title>rank 2 idle 100 ms</title>"));
  assert_non_null(strstr(svg, ">exposed comm</text>"));
  assert_non_null(strstr(svg, ">800</text>")); /* y axis reaches rank 3's 800 ms */
  free(svg);
}

static void test_plot__links_heat_map_escapes_names(void **state)
{
  fixture *f = *state;
  f->links[0].name = "leaf<1>&spine \"a\"";
  char *svg = plotted(f, plot_links_adapter, NULL, 0);
  assert_int_equal(rects_in_group(svg, "cells"), 6); /* 2 links x 3 columns */
  assert_non_null(strstr(svg, ">leaf&lt;1&gt;&amp;spine &quot;a&quot;</text>"));
  /* peak 75 % of leaf; mean 1e9 B / 300e9 B/s / 1.6 s = 0.2 %; busy 0.5/1.6 = 31.25 % */
  assert_non_null(strstr(svg, "spine &quot;a&quot;: peak utilisation (%) 75.0%</title>"));
  assert_non_null(strstr(svg, "spine &quot;a&quot;: mean utilisation (%) 0.2%</title>"));
  assert_non_null(strstr(svg, "spine &quot;a&quot;: busy (% of run) 31.2%</title>"));
  assert_non_null(strstr(svg, ">100%</text>"));
  /* the collective with most bytes on each link, with its share */
  assert_non_null(strstr(svg, ">most bytes from</text>"));
  assert_non_null(strstr(svg, ">75% allreduce tp-0 (tp)</text>"));
  assert_non_null(strstr(svg, ">100% allreduce tp-1 (tp)</text>"));
  free(svg);
}

/* Without --ranks the timeline shows 8 ranks spread over the run (i x N / 8),
 * so the last pipeline stages show as well as the first. */
static void test_plot__timeline_default_spreads_ranks(void **state)
{
  fixture *f = *state;
  enum { N = 16 };
  an_rank_row many[N];
  an_timeline_rec tl[N];
  memset(many, 0, sizeof many);
  for (int k = 0; k < N; k++) {
    many[k].rank = k;
    many[k].host = k;
    many[k].compute_s = many[k].finish_s = 1e-3;
    tl[k] = (an_timeline_rec){k, 0, WL_OP_COMPUTE, 0, 0, 0.0, 1e-3, 0, 1e9};
  }
  f->r.ranks = many;
  f->r.num_ranks = N;
  f->r.timeline = tl;
  f->r.num_timeline = N;
  char *svg = plotted(f, an_plot_timeline, NULL, 0);
  assert_int_equal(rects_in_group(svg, "ops"), 8);
  for (int k = 0; k < N; k++) {
    char lane[32];
    snprintf(lane, sizeof lane, ">rank %d compute</text>", k);
    if (k % 2 == 0)
      assert_non_null(strstr(svg, lane));
    else
      assert_null(strstr(svg, lane));
  }
  assert_non_null(strstr(svg, "(8 of 16 ranks)"));
  free(svg);
}

/* compare --plot: a stacked bar per run of the summary's means per step and
 * a mark at each run's step time.  A: 0.8 s per step, B: 1.0 s; both have
 * compute (1.0 + 1.1 + 0.9 + 1.2) / 4 ranks / 2 steps = 525 ms. */
static void test_plot__compare_bars_per_run(void **state)
{
  fixture *f = *state;
  an_results *runs[2];
  runs[0] = written(f, "a.h5");
  f->r.step_time_s = 1.0;
  an_summary_compute(f->wl, &f->cl, &f->r, &f->s);
  runs[1] = written(f, "b.h5");
  char p[600];
  snprintf(p, sizeof p, "%s/cmp.svg", f->dir);
  st_err err = {0};
  assert_int_equal(an_plot_compare((const an_results *const *)runs, 2, p, &err), ST_OK);
  char *svg;
  size_t len;
  assert_int_equal(st_file_read_all(p, &svg, &len, &err), ST_OK);
  assert_null(xml_check(svg));
  assert_int_equal(rects_in_group(svg, "bars"), 8);
  assert_non_null(strstr(svg, "<title>a compute 525 ms</title>"));
  assert_non_null(strstr(svg, "<title>b compute 525 ms</title>"));
  /* exposed (0.2+0.1+0.3+0.2)/8 = 100 ms, bubble and idle 50 ms */
  assert_non_null(strstr(svg, "<title>b exposed comm 100 ms</title>"));
  assert_non_null(strstr(svg, "<title>a idle 50 ms</title>"));
  assert_non_null(strstr(svg, ">800 ms</text>"));
  assert_non_null(strstr(svg, ">1000 ms</text>"));
  const char *steps = strstr(svg, "<g id=\"steps\">"), *end = steps ? strstr(steps, "</g>") : NULL;
  assert_non_null(end);
  size_t marks = 0;
  for (const char *q = strstr(steps, "<line"); q && q < end; q = strstr(q + 1, "<line"))
    marks++;
  assert_int_equal(marks, 2);
  assert_non_null(strstr(svg, ">1200</text>")); /* axis: 1000 ms + room, to the next 200 */
  free(svg);
  an_results_destroy(runs[0]);
  an_results_destroy(runs[1]);
}

static void test_plot__no_timeline_error_text(void **state)
{
  fixture *f = *state;
  f->r.num_timeline = 0;
  an_results *r = written(f, "run.h5");
  char p[600], want[1400];
  snprintf(p, sizeof p, "%s/t.svg", f->dir);
  st_err err = {0};
  assert_int_equal(an_plot_timeline(r, NULL, 0, p, &err), ST_EINPUT);
  snprintf(want, sizeof want, "results '%s/run.h5': no '/timeline' to plot (run with --timeline)",
           f->dir);
  assert_string_equal(err.msg, want);
  an_results_destroy(r);
}

/* ---- end to end: the engine's result through the file and every view ------------ */
/* Two pipeline stages of a TP pair each: stage 0 computes 1 ms, all-reduces
 * 1 MiB in its TP pair and sends 1 MiB to its stage-1 peer; stage 1 receives,
 * computes 1 ms and all-reduces. */
static wl_workload *engine_workload(void)
{
  const char *roles[] = {"tp", "pp"};
  wl_workload *wl = wl_workload_create(4, 2, roles);
  int32_t tp0[] = {0, 1}, tp1[] = {2, 3}, pp0[] = {0, 2}, pp1[] = {1, 3};
  wl_comm_add(wl, "tp-0", WL_COMM_TP, 2, tp0);
  wl_comm_add(wl, "tp-1", WL_COMM_TP, 2, tp1);
  wl_comm_add(wl, "pp-0", WL_COMM_PP, 2, pp0);
  wl_comm_add(wl, "pp-1", WL_COMM_PP, 2, pp1);
  const char *streams[] = {"compute", "comm"};
  for (int stage = 0; stage < 2; stage++) {
    wl_program_add(wl, stage ? "stage1" : "stage0", 2, streams);
    wl_program *p = &wl->programs[stage];
    wl_op c = wl_op_compute(0, 1e-3), a = wl_op_coll(1, WL_COLL_ALLREDUCE, 0, 1 << 20);
    wl_op x = stage ? wl_op_p2p(1, WL_OP_RECV, 1, 0, 1, 1 << 20) : wl_op_p2p(1, WL_OP_SEND, 1, 1, 1, 1 << 20);
    uint32_t prev = 0;
    if (stage) {
      wl_program_append(p, &x, NULL, 0);
      long k = wl_program_append(p, &c, &prev, 1); /* compute after the recv */
      prev = (uint32_t)k;
      wl_program_append(p, &a, &prev, 1);
    } else {
      wl_program_append(p, &c, NULL, 0);
      wl_program_append(p, &a, &prev, 1); /* all-reduce after the compute */
      wl_program_append(p, &x, NULL, 0);
    }
  }
  for (int r = 0; r < 4; r++) {
    wl_rank_set(wl, r, r < 2 ? 0 : 1);
    wl_rank_set_comm(wl, r, 0, r < 2 ? 0 : 1);
    wl_rank_set_comm(wl, r, 1, r % 2 == 0 ? 2 : 3);
  }
  wl->meta.tokens_per_step = 4096;
  wl->meta.model_flops_per_step = 1e12;
  wl->meta.peak_memory_bytes = NAN;
  wl->meta.dtype = WL_DTYPE_BF16;
  wl->meta.iterations = 1;
  return wl;
}

/* In a child process (the engine runs once per process): simulate and write path. */
static int engine_run_to_file(void *u, int index, st_buf *reply, st_err *errp)
{
  (void)index;
  (void)reply;
  const char *path = u;
  wl_workload *wl = engine_workload();
  st_err err = {0};
  plat_cluster *cl = NULL;
  sim_result *res = NULL;
  sim_options opt;
  sim_options_init(&opt);
  opt.timeline = 1;
  opt.quiet = 1;
  int rc = wl_workload_check(wl, &err);
  if (!rc)
    rc = plat_cluster_load("dgx-h100:1", &cl, &err);
  if (!rc)
    rc = sim_run(wl, cl, &opt, &res, &err);
  an_measured m = {0};
  if (!rc)
    rc = drv_measure_take(res, &m, &err);
  if (!rc) {
    an_summary s;
    an_summary_compute(wl, cl, &m, &s);
    an_run_info info = {.command_line = "test", .workload_json = "{}", .cluster_json = "{}",
                        .options_json = "{}", .workload_name = "two-stages",
                        .cluster_name = cl->name, .wl = wl, .measured = &m, .summary = &s};
    rc = an_results_write(path, &info, &err);
  }
  if (rc)
    *errp = err;
  an_measured_release(&m);
  sim_result_destroy(res);
  plat_cluster_destroy(cl);
  wl_workload_destroy(wl);
  return rc;
}

static void test_end_to_end__engine_result_through_every_view(void **state)
{
  fixture *f = *state;
  char path[600];
  snprintf(path, sizeof path, "%s/e2e.h5", f->dir);
  char *reply = NULL;
  size_t reply_len;
  st_err err = {0};
  if (drv_isolated(engine_run_to_file, path, 0, &reply, &reply_len, &err))
    fail_msg("engine run failed: %s", err.msg);
  free(reply);
  an_results *r = NULL;
  assert_int_equal(an_results_read(path, &r, &err), ST_OK);
  assert_int_equal(r->num_ranks, 4);
  double last = 0;
  for (size_t i = 0; i < r->num_ranks; i++)
    last = fmax(last, r->ranks[i].finish_s);
  for (size_t i = 0; i < r->num_ranks; i++) {
    const an_rank_row *k = &r->ranks[i];
    /* sim.h: compute + exposed + bubble + idle == the run's end */
    double sum = k->compute_s + k->exposed_comm_s + k->bubble_s + k->idle_s;
    assert_true(fabs(sum - last) <= 1e-9 * last);
    assert_true(fabs(k->compute_s - 1e-3) <= 1e-12); /* one 1 ms compute op */
  }
  assert_true(r->summary.step_time_s == last); /* one iteration */
  /* two all-reduces and one send/recv pair per pipeline pair */
  size_t ar = 0, sr = 0;
  for (size_t i = 0; i < r->num_colls; i++) {
    ar += !strcmp(r->colls[i].op, "allreduce");
    sr += !strcmp(r->colls[i].op, "sendrecv");
  }
  assert_int_equal(ar, 2);
  assert_int_equal(sr, 2);
  assert_int_equal(r->num_timeline, 12); /* 3 ops x 4 ranks */
  size_t compute_rows = 0;
  for (size_t i = 0; i < r->num_timeline; i++)
    if (!strcmp(r->timeline[i].kind, "compute")) {
      compute_rows++;
      assert_true(fabs(r->timeline[i].end_s - r->timeline[i].start_s - 1e-3) <= 1e-12);
    }
  assert_int_equal(compute_rows, 4);

  char out[700];
  snprintf(out, sizeof out, "%s/e2e.json", f->dir);
  an_export_counts c;
  assert_int_equal(an_export_perfetto(r, out, &c, &err), ST_OK);
  assert_int_equal(c.slices, 12);
  assert_int_equal(c.processes, 4);
  assert_int_equal(c.flows, 2); /* each send meets its recv: the same end (the recv starts early) */
  assert_true(c.counters > 0);   /* the engine reports link loads */
  const struct {
    int (*fn)(const an_results *, const int32_t *, size_t, const char *, st_err *);
    const char *name;
  } plots[] = {{an_plot_timeline, "t.svg"}, {an_plot_breakdown, "b.svg"}, {plot_links_adapter, "l.svg"}};
  for (size_t i = 0; i < 3; i++) {
    snprintf(out, sizeof out, "%s/%s", f->dir, plots[i].name);
    assert_int_equal(plots[i].fn(r, NULL, 0, out, &err), ST_OK);
    char *svg;
    size_t len;
    assert_int_equal(st_file_read_all(out, &svg, &len, &err), ST_OK);
    assert_null(xml_check(svg));
    free(svg);
  }
  an_results_destroy(r);
}

int main(void)
{
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* tests tamper with files on purpose */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_summary__matches_hand_computed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_summary__nan_where_unknown, setup, teardown),
      cmocka_unit_test_setup_teardown(test_train__matches_hand_computed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_train__steps_round_up_to_whole_steps, setup, teardown),
      cmocka_unit_test_setup_teardown(test_train__null_without_price_or_tdp, setup, teardown),
      cmocka_unit_test_setup_teardown(test_train__busy_fraction_is_capped_at_one, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_train__bad_values_are_errors, setup, teardown),
      cmocka_unit_test(test_train__power_facts_of_a_preset),
      cmocka_unit_test_setup_teardown(test_results__round_trip_every_field, setup, teardown),
      cmocka_unit_test_setup_teardown(test_results__round_trip_with_a_budget, setup, teardown),
      cmocka_unit_test_setup_teardown(test_results__nan_stays_nan, setup, teardown),
      cmocka_unit_test_setup_teardown(test_results__no_timeline_dataset_without_rows, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_results__success_leaves_only_the_file, setup, teardown),
      cmocka_unit_test_setup_teardown(test_results__failure_leaves_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_results__failure_keeps_the_previous_file, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_results__bad_path_error_text, setup, teardown),
      cmocka_unit_test_setup_teardown(test_results__not_hdf5_error_text, setup, teardown),
      cmocka_unit_test_setup_teardown(test_results__missing_dataset_is_named, setup, teardown),
      cmocka_unit_test_setup_teardown(test_results__missing_column_is_named, setup, teardown),
      cmocka_unit_test_setup_teardown(test_results__missing_summary_attribute_is_named, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_results__large_timeline_is_chunked_and_compressed,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_results__big_config_json_round_trips, setup, teardown),
      cmocka_unit_test_setup_teardown(test_results__committed_fixture_reads_back, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_report__few_ranks_lists_every_rank, setup, teardown),
      cmocka_unit_test_setup_teardown(test_report__rank_selection, setup, teardown),
      cmocka_unit_test_setup_teardown(test_report__many_ranks_shows_distribution, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_compare__run_with_itself_has_zero_deltas, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_compare__step_time_ratio_is_the_runs_ratio, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_export__slices_match_timeline_one_to_one, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_export__flow_joins_matching_send_and_recv, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_export__no_timeline_error_text, setup, teardown),
      cmocka_unit_test_setup_teardown(test_export__non_finite_time_is_an_error_not_nan, setup, teardown),
      cmocka_unit_test_setup_teardown(test_export__collective_slices_name_comm_and_peers, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_export__group_by_node_puts_gpus_under_their_node,
                                      setup, teardown),
      cmocka_unit_test(test_export__rank_list_text),
      cmocka_unit_test(test_svg__checker_rejects_broken_xml),
      cmocka_unit_test_setup_teardown(test_plot__timeline_draws_every_op, setup, teardown),
      cmocka_unit_test_setup_teardown(test_plot__timeline_merges_ops_under_half_a_pixel, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_plot__breakdown_stacks_four_parts_per_rank, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_plot__links_heat_map_escapes_names, setup, teardown),
      cmocka_unit_test_setup_teardown(test_plot__timeline_default_spreads_ranks, setup, teardown),
      cmocka_unit_test_setup_teardown(test_plot__compare_bars_per_run, setup, teardown),
      cmocka_unit_test_setup_teardown(test_plot__no_timeline_error_text, setup, teardown),
      cmocka_unit_test_setup_teardown(test_end_to_end__engine_result_through_every_view, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
