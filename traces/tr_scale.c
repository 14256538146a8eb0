/* tr_scale.c — one rank's trace standing for a whole job, and the job resized.
 *
 * Filling (tr__spmd_fill): a trace gives programs for some ranks only (people
 * profile rank 0).  Every other rank runs the program of a given rank: the
 * nearest given rank below it (the lowest given rank when none is below),
 * as data-parallel and SPMD jobs do.  Its communicator for each role is the
 * one of the same family that contains it: the source's own when that
 * contains it, else one another given rank plays the role with and that
 * contains it, else the source's group moved over (an evenly strided group
 * of size g and stride d repeats every d x g ranks).
 *
 * Resizing (tr_workload_resize): the data-parallel groups grow or shrink
 * (all of them by the same factor), every other group keeps its size and
 * stride, every rank keeps its program; see traces.h and docs/traces.md.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tr_int.h"

static int comm_has(const wl_comm *c, int r)
{
  for (int i = 0; i < c->size; i++)
    if (c->ranks[i] == r)
      return 1;
  return 0;
}

/* Stride of an ascending evenly strided group (1 for a group of one), or 0. */
static int comm_stride(const wl_comm *c)
{
  if (c->size < 2)
    return 1;
  int d = c->ranks[1] - c->ranks[0];
  if (d < 1)
    return 0;
  for (int i = 2; i < c->size; i++)
    if (c->ranks[i] - c->ranks[i - 1] != d)
      return 0;
  return d;
}

/* The comm of wl with exactly these members (in this order), added (named
 * after `like`, of its kind) when there is none; < 0 out of memory. */
static int comm_find_add(wl_workload *wl, const wl_comm *like, int kind, const int32_t *ranks,
                         int n)
{
  for (int c = 0; c < wl->num_comms; c++)
    if (wl->comms[c].size == n && !memcmp(wl->comms[c].ranks, ranks, (size_t)n * sizeof *ranks))
      return c;
  char name[160];
  snprintf(name, sizeof name, "%s @%d", like->name, ranks[0]);
  return wl_comm_add(wl, name, kind, n, ranks);
}

/* Rank r's group in a world of `world` ranks laid out as a group of size g
 * and stride d: ranks base + k d, base = (r / (d g)) d g + r mod d. */
static int strided_group(int r, int d, int g, int world, int32_t *out)
{
  long block = (long)d * g;
  if (block <= 0 || world % block)
    return -1;
  long base = (r / block) * block + r % d;
  for (int k = 0; k < g; k++)
    out[k] = (int32_t)(base + (long)k * d);
  return 0;
}

static char *range_text(const int32_t *v, int n, char *b, size_t len)
{
  size_t k = 0;
  b[0] = '\0';
  for (int i = 0; i < n && k + 24 < len; i++) {
    k += (size_t)snprintf(b + k, len - k, "%s%d", i ? "," : "", v[i]);
    if (i == 7 && n > 9) {
      snprintf(b + k, len - k, ",...,%d", v[n - 1]);
      break;
    }
  }
  return b;
}

int tr__spmd_fill(wl_workload *wl, tr_import_stats *st, const char *trace, st_err *err)
{
  int n = wl->num_ranks, nr = wl->num_roles;
  int32_t *given = malloc((size_t)n * sizeof *given);
  int32_t *tmp = malloc((size_t)n * sizeof *tmp);
  if (!given || !tmp) {
    free(given);
    free(tmp);
    return st_err_set(err, ST_ENOMEM, "out of memory");
  }
  int ng = 0;
  for (int r = 0; r < n; r++)
    if (wl->rank_program[r] >= 0)
      given[ng++] = r;
  int rc = ST_OK;
  if (ng == 0)
    rc = st_err_set(err, ST_EINPUT, "trace '%s': no rank has a program", trace);
  for (int r = 0, gi = 0; !rc && r < n; r++) {
    while (gi + 1 < ng && given[gi + 1] <= r)
      gi++;
    if (wl->rank_program[r] >= 0)
      continue;
    int s = given[gi];
    wl->rank_program[r] = wl->rank_program[s];
    for (int role = 0; role < nr && !rc; role++) {
      int c = wl->rank_comm[(size_t)s * nr + role];
      if (c < 0 || wl->rank_comm[(size_t)r * nr + role] >= 0)
        continue; /* not played, or already placed (a group a given rank listed) */
      const wl_comm *cm = &wl->comms[c];
      int pick = comm_has(cm, r) ? c : -1;
      for (int q = 0; pick < 0 && q < ng; q++) {
        int c2 = wl->rank_comm[(size_t)given[q] * nr + role];
        if (c2 >= 0 && comm_has(&wl->comms[c2], r))
          pick = c2;
      }
      if (pick < 0) {
        int d = comm_stride(cm), g = cm->size;
        char b[128];
        if (!d || strided_group(r, d, g, n, tmp)) {
          rc = st_err_set(err, ST_EINPUT,
                          "trace '%s': rank %d has no file and its group for role '%s' cannot "
                          "be inferred: rank %d's group '%s' (ranks %s) is not evenly strided "
                          "over the %d ranks (give that rank's file)",
                          trace, r, wl->roles[role], s, cm->name,
                          range_text(cm->ranks, cm->size, b, sizeof b), n);
          break;
        }
        pick = comm_find_add(wl, cm, cm->kind, tmp, g);
        if (pick < 0) {
          rc = st_err_set(err, ST_ENOMEM, "out of memory");
          break;
        }
      }
      wl->rank_comm[(size_t)r * nr + role] = pick;
    }
    if (st && st->rank_source) {
      st->rank_source[r] = s;
      if (st->rank_start_s)
        st->rank_start_s[r] = st->rank_start_s[s];
    }
  }
  free(given);
  free(tmp);
  return rc;
}

/* ---- resizing ---------------------------------------------------------------- */

static int is_dp(const wl_comm *c, int world, int have_dp)
{
  if (have_dp)
    return c->kind == WL_COMM_DP;
  return c->size == world && (c->kind == WL_COMM_WORLD || c->kind == WL_COMM_OTHER);
}

/* The groups in use, and which of them are the data-parallel ones: *dp_g
 * ranks each, stride *dp_d (0 when none).  ST_EINPUT naming the trace and
 * the group when one cannot be resized. */
static int classify_groups(const wl_workload *wl, const char *trace, int world, int *have_dp_out,
                           int *dp_g_out, int *dp_d_out, st_err *err)
{
  int W = wl->num_ranks, nr = wl->num_roles;
  unsigned char *used = calloc((size_t)(wl->num_comms ? wl->num_comms : 1), 1);
  if (!used)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  for (size_t i = 0; i < (size_t)W * nr; i++)
    if (wl->rank_comm[i] >= 0)
      used[wl->rank_comm[i]] = 1;
  int have_dp = 0;
  for (int c = 0; c < wl->num_comms; c++)
    have_dp |= used[c] && wl->comms[c].kind == WL_COMM_DP;
  int dp_g = 0, dp_d = 0, rc = ST_OK;
  char b[128];
  for (int c = 0; c < wl->num_comms && !rc; c++) {
    const wl_comm *cm = &wl->comms[c];
    if (!used[c])
      continue;
    int d = comm_stride(cm);
    if (is_dp(cm, W, have_dp)) {
      if (!d)
        rc = st_err_set(err, ST_EINPUT,
                        "trace '%s': data-parallel group '%s' (ranks %s) is not evenly strided: "
                        "cannot resize it",
                        trace, cm->name, range_text(cm->ranks, cm->size, b, sizeof b));
      else if (dp_g && (dp_g != cm->size || dp_d != d))
        rc = st_err_set(err, ST_EINPUT,
                        "trace '%s': data-parallel groups of different shapes ('%s': %d ranks, "
                        "stride %d; another: %d ranks, stride %d): cannot resize",
                        trace, cm->name, cm->size, d, dp_g, dp_d);
      dp_g = cm->size;
      dp_d = d;
    } else if (cm->size == W && cm->kind != WL_COMM_WORLD && cm->kind != WL_COMM_OTHER) {
      rc = st_err_set(err, ST_EINPUT,
                      "trace '%s': group '%s' (%s) spans all %d ranks: the job has no data "
                      "parallelism to resize",
                      trace, cm->name, wl_comm_kind_name(cm->kind), W);
    } else if (cm->size == W || cm->size == 1) {
      /* the world (of a job that also has DP groups) grows with it; a group
       * of one stays */
    } else if (cm->kind == WL_COMM_OTHER) {
      rc = st_err_set(err, ST_EINPUT,
                      "trace '%s': process group '%s' (ranks %s) does not say which parallelism "
                      "it is (its pg_desc names no dp, tp, pp, cp or ep): cannot resize",
                      trace, cm->name, range_text(cm->ranks, cm->size, b, sizeof b));
    } else if (!d) {
      rc = st_err_set(err, ST_EINPUT,
                      "trace '%s': group '%s' (ranks %s) is not evenly strided: cannot lay it "
                      "out over %d ranks",
                      trace, cm->name, range_text(cm->ranks, cm->size, b, sizeof b), world);
    }
  }
  free(used);
  *have_dp_out = have_dp;
  *dp_g_out = dp_g;
  *dp_d_out = dp_d;
  return rc;
}

/* All-to-all-v splits on DP groups: the same total spread over the new
 * members, member j taking old member j mod g's share scaled by g / g'. */
static int relay_splits(wl_workload *wl, int have_dp, int dp_g, int g_new, tr_resize_stats *out,
                        st_err *err)
{
  int W = wl->num_ranks, nr = wl->num_roles, rc = ST_OK;
  for (int p = 0; p < wl->num_programs && !rc && g_new != dp_g; p++) {
    wl_program *pg = &wl->programs[p];
    int s = -1;
    for (int r = 0; r < W && s < 0; r++)
      if (wl->rank_program[r] == p)
        s = r;
    double *nsp = malloc((size_t)g_new * sizeof *nsp);
    if (!nsp) {
      rc = st_err_set(err, ST_ENOMEM, "out of memory");
      break;
    }
    for (size_t i = 0; s >= 0 && i < pg->num_ops && !rc; i++) {
      wl_op *o = &pg->ops[i];
      if (o->kind != WL_OP_COLL)
        continue;
      int c = wl->rank_comm[(size_t)s * nr + o->role];
      if (c < 0 || !is_dp(&wl->comms[c], W, have_dp))
        continue;
      out ? out->dp_colls++ : 0;
      if (o->sub != WL_COLL_ALLTOALL || !(o->flags & WL_OPF_SPLITS))
        continue;
      for (int j = 0; j < g_new; j++)
        nsp[j] = pg->splits[o->split_first + (uint32_t)(j % dp_g)] * dp_g / g_new;
      o->split_first = wl_program_splits(pg, nsp, g_new);
      if (out)
        out->splits_relaid++;
    }
    free(nsp);
  }
  return rc;
}

/* The per-rank facts follow: a rank copied from s (src[r]) is s's copy. */
static int follow_rank_stats(tr_import_stats *st, const int32_t *src, int world, int W,
                             st_err *err)
{
  int rc;
  tr_import_stats ns;
  memset(&ns, 0, sizeof ns);
  if ((rc = tr__stats_alloc_ranks(&ns, world, err)) == ST_OK) {
    for (int r = 0; r < world; r++) {
      int s = src[r];
      ns.rank_source[r] = st->rank_source ? st->rank_source[s] : s;
      ns.rank_start_s[r] = st->rank_start_s ? st->rank_start_s[s] : NAN;
      if (r == s && ns.rank_source[r] == r) {
        ns.rank_measured_s[r] = st->rank_measured_s ? st->rank_measured_s[s] : NAN;
        ns.rank_compute_s[r] = st->rank_compute_s ? st->rank_compute_s[s] : NAN;
        ns.rank_comm_s[r] = st->rank_comm_s ? st->rank_comm_s[s] : NAN;
      }
    }
    free(st->rank_measured_s);
    free(st->rank_start_s);
    free(st->rank_compute_s);
    free(st->rank_comm_s);
    free(st->rank_source);
    st->rank_measured_s = ns.rank_measured_s;
    st->rank_start_s = ns.rank_start_s;
    st->rank_compute_s = ns.rank_compute_s;
    st->rank_comm_s = ns.rank_comm_s;
    st->rank_source = ns.rank_source;
    st->num_ranks = world;
    /* the measured whole step was of another job size */
    st->measured_step_s = world == W ? st->measured_step_s : NAN;
  }
  return rc;
}

int tr_workload_resize(wl_workload **wlp, tr_import_stats *st, const char *trace, int world,
                       tr_resize_stats *out, st_err *err)
{
  wl_workload *wl = *wlp;
  int W = wl->num_ranks, nr = wl->num_roles;
  if (out)
    memset(out, 0, sizeof *out);
  if (!st->groups_known)
    return st_err_set(err, ST_EUSAGE,
                      "trace '%s': it does not record its process groups (a Kineto trace's "
                      "distributedInfo: world_size, pg_config), so the job cannot be resized",
                      trace);
  if (world < 1)
    return st_err_set(err, ST_EUSAGE, "--world %d: not a positive size", world);
  int have_dp = 0, dp_g = 0, dp_d = 0;
  int rc = classify_groups(wl, trace, world, &have_dp, &dp_g, &dp_d, err);
  if (rc)
    return rc;
  if (!dp_g)
    return st_err_set(err, ST_EINPUT,
                      "trace '%s': no data-parallel group (pg_desc 'dp', or the world in a "
                      "trace with no other groups): only data parallelism can be resized",
                      trace);
  long g2 = (long)world * dp_g;
  if (g2 % W || (long)world % ((long)dp_d * (g2 / W)))
    return st_err_set(err, ST_EUSAGE,
                      "--world %d: the trace's %d ranks have data-parallel groups of %d (stride "
                      "%d), the rest of the layout %d ranks: the world must be a multiple of %d",
                      world, W, dp_g, dp_d, W / dp_g, W / dp_g);
  int g_new = (int)(g2 / W);

  wl_workload *nw = wl_workload_create(world, nr, (const char *const *)wl->roles);
  int32_t *src = malloc((size_t)world * sizeof *src);
  int32_t *tmp = malloc((size_t)(world > W ? world : W) * sizeof *tmp);
  if (!nw || !src || !tmp) {
    wl_workload_destroy(nw);
    free(src);
    free(tmp);
    return st_err_set(err, ST_ENOMEM, "out of memory");
  }
  long blk_new = (long)dp_d * g_new, blk_old = (long)dp_d * dp_g;
  for (int r = 0; r < world && !rc; r++) {
    long dpc = (r / dp_d) % g_new;
    int s = (int)((r / blk_new) * blk_old + r % dp_d + (dpc % dp_g) * dp_d);
    src[r] = s;
    nw->rank_program[r] = wl->rank_program[s];
    for (int role = 0; role < nr && !rc; role++) {
      int c = wl->rank_comm[(size_t)s * nr + role];
      if (c < 0)
        continue;
      const wl_comm *cm = &wl->comms[c];
      int n, ok;
      if (is_dp(cm, W, have_dp)) {
        n = g_new;
        ok = !strided_group(r, dp_d, g_new, world, tmp);
      } else if (cm->size == W) {
        n = world;
        for (int k = 0; k < world; k++)
          tmp[k] = k;
        ok = 1;
      } else {
        n = cm->size;
        ok = !strided_group(r, comm_stride(cm), n, world, tmp);
      }
      if (!ok) {
        rc = st_err_set(err, ST_EUSAGE, "--world %d: group '%s' (%d ranks) does not tile %d ranks",
                        world, cm->name, cm->size, world);
        break;
      }
      int k = comm_find_add(nw, cm, cm->kind, tmp, n);
      if (k < 0)
        rc = st_err_set(err, ST_ENOMEM, "out of memory");
      else
        nw->rank_comm[(size_t)r * nr + role] = k;
    }
  }
  if (!rc && g_new != dp_g)
    rc = relay_splits(wl, have_dp, dp_g, g_new, out, err);
  if (!rc) {
    /* the programs and the description move to the new workload */
    nw->programs = wl->programs;
    nw->num_programs = wl->num_programs;
    nw->cap_programs = wl->cap_programs;
    wl->programs = NULL;
    wl->num_programs = wl->cap_programs = 0;
    wl_meta keep = nw->meta;
    nw->meta = wl->meta;
    wl->meta = keep;
    wl->meta.model = wl->meta.layout = wl->meta.source = NULL;
    if (isfinite(nw->meta.tokens_per_step))
      nw->meta.tokens_per_step *= (double)world / W;
    rc = wl_workload_check(nw, err);
    if (rc)
      st_err_prefix(err, "trace '%s' resized to %d ranks: ", trace, world);
  }
  if (!rc)
    rc = follow_rank_stats(st, src, world, W, err);
  free(src);
  free(tmp);
  if (rc) {
    wl_workload_destroy(nw);
    return rc;
  }
  if (out) {
    out->from_ranks = W;
    out->to_ranks = world;
    out->dp_from = dp_g;
    out->dp_to = g_new;
  }
  wl_workload_destroy(wl);
  *wlp = nw;
  return ST_OK;
}
