/* drv_measure.c — the engine's result (sim_result) turned into what
 * analysis/ reads (an_measured), so that analysis knows neither the engine
 * nor its structs and a change to those does not change the results file.
 *
 * The large arrays are converted where they lie: each an_ row is no larger
 * than the engine's, so row i of the new layout ends at the latest where row
 * i of the old one ends and overwrites only rows already converted (each is
 * read whole before its row is written).  The block is then taken over from
 * the result, so at no time are two copies of the timeline held.  Were an
 * an_ row ever larger, its rows would go to a new block (allocated before
 * anything is converted, so that a failure changes nothing) and the old one
 * be freed at once.  The rows are converted field by field, never by
 * layout, so the engine may reorder or widen its structs freely. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

/* Read engine row `from` whole, write analysis row `to` (they may overlap). */
typedef void (*row_fn)(const void *from, void *to);

/* The block rows of to_size bytes go to when they do not fit where the
 * engine's rows of from_size bytes lie (*out NULL when they do); -1 when
 * memory runs out. */
static int new_block(size_t n, size_t from_size, size_t to_size, void **out)
{
  *out = NULL;
  if (n == 0 || to_size <= from_size)
    return 0;
  return (*out = malloc(n * to_size)) ? 0 : -1;
}

/* n rows of from_size bytes at rows converted by f into rows of to_size
 * bytes, in out (from new_block: rows is then freed) or, when out is NULL,
 * in rows itself (shrunk to fit).  Returns the rows' block; NULL for n 0. */
static void *convert_rows(void *rows, void *out, size_t n, size_t from_size, size_t to_size,
                          row_fn f)
{
  if (n == 0) {
    free(rows);
    return NULL;
  }
  char *to = out ? out : rows;
  for (size_t i = 0; i < n; i++)
    f((const char *)rows + i * from_size, to + i * to_size);
  if (out) {
    free(rows);
    return out;
  }
  char *shrunk = to_size < from_size ? realloc(rows, n * to_size) : NULL;
  return shrunk ? shrunk : rows;
}

static void rank_row(const void *from, void *to)
{
  sim_rank_stats s;
  memcpy(&s, from, sizeof s);
  an_rank_row d = {
      .rank = s.rank,
      .host = s.host,
      .compute_s = s.compute_s,
      .comm_s = s.comm_s,
      .exposed_comm_s = s.exposed_comm_s,
      .overlapped_comm_s = s.overlapped_comm_s,
      .bubble_s = s.bubble_s,
      .idle_s = s.idle_s,
      .finish_s = s.finish_s,
      .offload_s = s.offload_s,
      .offload_exposed_s = s.offload_exposed_s,
  };
  memcpy(d.phase_s, s.phase_s, sizeof d.phase_s);
  memcpy(d.comm_kind_s, s.comm_kind_s, sizeof d.comm_kind_s);
  memcpy(to, &d, sizeof d);
}

static void coll_rec(const void *from, void *to)
{
  sim_coll_record s;
  memcpy(&s, from, sizeof s);
  an_coll_rec d = {
      .comm = s.comm,
      .kind = s.kind,
      .op = s.op,
      .algo = s.algo,
      .proto = s.proto,
      .nranks = s.nranks,
      .src = s.src,
      .dst = s.dst,
      .channels = s.channels,
      .bytes = s.bytes,
      .first_arrival_s = s.first_arrival_s,
      .start_s = s.start_s,
      .end_s = s.end_s,
      .algbw_GBps = s.algbw_GBps,
      .busbw_GBps = s.busbw_GBps,
  };
  memcpy(to, &d, sizeof d);
}

static void usage_rec(const void *from, void *to)
{
  sim_link_usage s;
  memcpy(&s, from, sizeof s);
  an_usage_rec d = {
      .link = s.link > INT32_MAX ? -1 : (int32_t)s.link, /* -1: the writer says it is unknown */
      .comm = s.comm,
      .kind = s.kind,
      .op = s.op,
      .bytes = s.bytes,
  };
  memcpy(to, &d, sizeof d);
}

static void timeline_rec(const void *from, void *to)
{
  sim_timeline_row s;
  memcpy(&s, from, sizeof s);
  an_timeline_rec d = {
      .rank = s.rank,
      .stream = s.stream,
      .kind = s.kind,
      .program = s.program,
      .op = s.op,
      .start_s = s.start_s,
      .end_s = s.end_s,
      .bytes = s.bytes,
      .flops = s.flops,
  };
  memcpy(to, &d, sizeof d);
}

int drv_measure_take(sim_result *r, an_measured *m, st_err *err)
{
  _Static_assert(SIM_ALGO_COUNT <= AN_NAMES_MAX && SIM_PROTO_COUNT <= AN_NAMES_MAX,
                 "an_measured's name tables are too short for the engine's algorithms");
  memset(m, 0, sizeof *m);
  size_t nr = r->ranks && r->num_ranks > 0 ? (size_t)r->num_ranks : 0;
  size_t nc = r->colls ? r->num_colls : 0, nu = r->link_usage ? r->num_link_usage : 0;
  size_t nt = r->timeline ? r->num_timeline : 0, nl = r->links ? r->num_links : 0;
  /* everything that may fail first, so that on failure r is as it was:
   * the link rows (their names are copied from r's arena) and any block
   * that rows cannot be converted in */
  void *b_ranks = NULL, *b_colls = NULL, *b_usage = NULL, *b_timeline = NULL;
  int bad = nl > 0 && !(m->links = calloc(nl, sizeof *m->links));
  for (size_t i = 0; !bad && i < nl; i++) {
    const sim_link_stats *s = &r->links[i];
    an_link_row *d = &m->links[i];
    m->num_links = i + 1;
    bad = !(d->name = strdup(s->name ? s->name : ""));
    d->bandwidth_Bps = s->bandwidth_Bps;
    d->bytes = s->bytes;
    d->busy_s = s->busy_s;
    d->peak_util = s->peak_util;
  }
  bad = bad || new_block(nr, sizeof *r->ranks, sizeof *m->ranks, &b_ranks) ||
        new_block(nc, sizeof *r->colls, sizeof *m->colls, &b_colls) ||
        new_block(nu, sizeof *r->link_usage, sizeof *m->usage, &b_usage) ||
        new_block(nt, sizeof *r->timeline, sizeof *m->timeline, &b_timeline);
  if (bad) {
    free(b_ranks);
    free(b_colls);
    free(b_usage);
    free(b_timeline);
    an_measured_release(m);
    return st_err_set(err, ST_ENOMEM, "out of memory taking the run's results over");
  }

  m->iterations = r->iterations;
  m->step_time_s = r->step_time_s;
  m->wall_s = r->wall_s;
  m->events = r->events;
  m->simulated_ranks = r->simulated_ranks;
  snprintf(m->reduction, sizeof m->reduction, "%s", r->reduction);
  for (int i = 0; i < SIM_ALGO_COUNT; i++)
    snprintf(m->algo_names[i], sizeof m->algo_names[i], "%s", sim_coll_algo_name(i));
  for (int i = 0; i < SIM_PROTO_COUNT; i++)
    snprintf(m->proto_names[i], sizeof m->proto_names[i], "%s", sim_coll_proto_name(i));
  m->num_algo_names = SIM_ALGO_COUNT;
  m->num_proto_names = SIM_PROTO_COUNT;
  if (r->num_pods > 0 && r->pod_out_bytes && r->pod_in_bytes) {
    m->num_pods = r->num_pods;
    m->pod_out_bytes = r->pod_out_bytes;
    m->pod_in_bytes = r->pod_in_bytes;
    r->pod_out_bytes = r->pod_in_bytes = NULL;
    r->num_pods = 0;
    for (size_t i = 0; i < nr; i++)
      m->pod_exposed_s += r->ranks[i].pod_exposed_s;
  }

  m->ranks = convert_rows(r->ranks, b_ranks, nr, sizeof *r->ranks, sizeof *m->ranks, rank_row);
  m->num_ranks = nr;
  r->ranks = NULL;
  m->colls = convert_rows(r->colls, b_colls, nc, sizeof *r->colls, sizeof *m->colls, coll_rec);
  m->num_colls = nc;
  r->colls = NULL;
  r->num_colls = 0;
  m->usage = convert_rows(r->link_usage, b_usage, nu, sizeof *r->link_usage, sizeof *m->usage,
                          usage_rec);
  m->num_usage = nu;
  r->link_usage = NULL;
  r->num_link_usage = 0;
  m->timeline = convert_rows(r->timeline, b_timeline, nt, sizeof *r->timeline,
                             sizeof *m->timeline, timeline_rec);
  m->num_timeline = nt;
  r->timeline = NULL;
  r->num_timeline = 0;
  return ST_OK;
}
