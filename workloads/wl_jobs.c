/* wl_jobs.c — several jobs as one workload (wl_merge), and steady
 * background traffic as a job of its own (wl_background_alltoall).
 *
 * Jobs sharing a fabric are replayed as one workload whose rank r runs on
 * GPU r (the engine's rule): each part's rank i becomes the merged rank
 * gpus[i], its programs and communicators are copied with the part's name
 * prefixed ("a/stage0", "a/dp0"), and its roles are merged by name.  Ranks
 * no part places run one empty program, "idle", so the merged workload
 * covers GPUs 0..num_ranks-1 and the engine needs no rank-to-host map.
 *
 * Invariants: part p's communicators are the merged ones from
 * sum(parts[q].wl->num_comms, q < p) on, in their order (which is how a
 * caller attributes a communicator to its job), and its programs likewise;
 * an op keeps everything but its role index, which is mapped to the merged
 * role of the same name.  Nothing of the parts is changed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"

/* Index of name in roles[0..n-1], or -1. */
static int role_find(char **roles, int n, const char *name)
{
  for (int i = 0; i < n; i++)
    if (!strcmp(roles[i], name))
      return i;
  return -1;
}

static char *prefixed(const char *prefix, const char *name)
{
  size_t a = strlen(prefix), b = strlen(name ? name : "");
  char *s = malloc(a + b + 2);
  if (!s)
    return NULL;
  memcpy(s, prefix, a);
  s[a] = '/';
  memcpy(s + a + 1, name ? name : "", b + 1);
  return s;
}

static void *dup_bytes(const void *p, size_t n)
{
  if (!n)
    return NULL;
  void *q = malloc(n);
  if (q)
    memcpy(q, p, n);
  return q;
}

/* Copy program src into out as a new program named prefix/name, roles
 * through role_map.  Returns its index or < 0. */
static int program_copy(wl_workload *out, const wl_program *src, const char *prefix,
                        const int *role_map)
{
  char *name = prefixed(prefix, src->name);
  if (!name)
    return ST_ENOMEM;
  int pi = wl_program_add(out, name, src->num_streams, (const char *const *)src->stream_names);
  free(name);
  if (pi < 0)
    return pi;
  wl_program *p = &out->programs[pi];
  free(p->strings);
  p->strings = NULL;
  p->ops = dup_bytes(src->ops, src->num_ops * sizeof *src->ops);
  p->waits = dup_bytes(src->waits, src->num_waits * sizeof *src->waits);
  p->splits = dup_bytes(src->splits, src->num_splits * sizeof *src->splits);
  p->strings = dup_bytes(src->strings, src->strings_len);
  if ((src->num_ops && !p->ops) || (src->num_waits && !p->waits) ||
      (src->num_splits && !p->splits) || (src->strings_len && !p->strings))
    return ST_ENOMEM;
  p->num_ops = p->cap_ops = src->num_ops;
  p->num_waits = p->cap_waits = src->num_waits;
  p->num_splits = p->cap_splits = src->num_splits;
  p->strings_len = p->strings_cap = src->strings_len;
  for (size_t i = 0; i < p->num_ops; i++)
    if (p->ops[i].role >= 0)
      p->ops[i].role = role_map[p->ops[i].role];
  return pi;
}

/* The merged roles: every part's, by name, in order of first appearance. */
static int merged_roles(const wl_merge_part *parts, int n, char ***roles, int *nroles)
{
  int cap = 0;
  for (int j = 0; j < n; j++)
    cap += parts[j].wl->num_roles;
  char **r = calloc((size_t)cap + 1, sizeof *r);
  if (!r)
    return ST_ENOMEM;
  int k = 0;
  for (int j = 0; j < n; j++)
    for (int i = 0; i < parts[j].wl->num_roles; i++)
      if (role_find(r, k, parts[j].wl->roles[i]) < 0)
        r[k++] = parts[j].wl->roles[i];
  *roles = r;
  *nroles = k;
  return ST_OK;
}

/* The job that placed each merged rank (-1: none); an overlap or a GPU out
 * of range is an error naming the parts. */
static int place(const wl_merge_part *parts, int n, int num_ranks, int *owner, st_err *err)
{
  for (int r = 0; r < num_ranks; r++)
    owner[r] = -1;
  for (int j = 0; j < n; j++) {
    const wl_merge_part *pj = &parts[j];
    for (int i = 0; i < pj->wl->num_ranks; i++) {
      int g = pj->gpus[i];
      if (g < 0 || g >= num_ranks)
        return st_err_set(err, ST_EINPUT, "job '%s': rank %d is placed on GPU %d, outside 0..%d",
                          pj->name, i, g, num_ranks - 1);
      if (owner[g] >= 0)
        return st_err_set(err, ST_EINPUT, "jobs '%s' and '%s' both use GPU %d",
                          parts[owner[g]].name, pj->name, g);
      owner[g] = j;
    }
  }
  return ST_OK;
}

static void merge_meta(const wl_merge_part *parts, int n, wl_workload *out)
{
  wl_meta *m = &out->meta;
  m->dtype = parts[0].wl->meta.dtype;
  m->iterations = parts[0].wl->meta.iterations;
  double peak = NAN;
  for (int j = 0; j < n; j++) {
    const wl_meta *s = &parts[j].wl->meta;
    if (s->iterations != m->iterations)
      m->iterations = 1;
    if (isfinite(s->peak_memory_bytes) && !(peak >= s->peak_memory_bytes))
      peak = s->peak_memory_bytes;
  }
  m->peak_memory_bytes = peak;
}

int wl_merge(const wl_merge_part *parts, int n, int num_ranks, wl_workload **out, st_err *err)
{
  *out = NULL;
  if (n <= 0 || num_ranks <= 0)
    return st_err_set(err, ST_EUSAGE, "nothing to merge");
  int *owner = malloc((size_t)num_ranks * sizeof *owner);
  char **roles = NULL;
  int nroles = 0, rc = owner ? ST_OK : ST_ENOMEM;
  if (!rc)
    rc = place(parts, n, num_ranks, owner, err);
  if (!rc)
    rc = merged_roles(parts, n, &roles, &nroles);
  wl_workload *wl = NULL;
  if (!rc && !(wl = wl_workload_create(num_ranks, nroles, (const char *const *)roles)))
    rc = ST_ENOMEM;
  free(roles);
  int *role_map = NULL;
  for (int j = 0; j < n && !rc; j++) {
    const wl_merge_part *pj = &parts[j];
    const wl_workload *src = pj->wl;
    free(role_map);
    if (!(role_map = malloc(((size_t)src->num_roles + 1) * sizeof *role_map))) {
      rc = ST_ENOMEM;
      break;
    }
    for (int i = 0; i < src->num_roles; i++)
      role_map[i] = role_find(wl->roles, wl->num_roles, src->roles[i]);
    int comm0 = wl->num_comms, prog0 = wl->num_programs;
    for (int c = 0; c < src->num_comms && !rc; c++) {
      const wl_comm *sc = &src->comms[c];
      int32_t *ranks = malloc((size_t)sc->size * sizeof *ranks);
      char *name = prefixed(pj->name, sc->name);
      if (!ranks || !name)
        rc = ST_ENOMEM;
      for (int i = 0; i < sc->size && !rc; i++)
        ranks[i] = pj->gpus[sc->ranks[i]];
      if (!rc && wl_comm_add(wl, name, sc->kind, sc->size, ranks) < 0)
        rc = ST_ENOMEM;
      free(ranks);
      free(name);
    }
    for (int p = 0; p < src->num_programs && !rc; p++)
      if (program_copy(wl, &src->programs[p], pj->name, role_map) < 0)
        rc = ST_ENOMEM;
    for (int i = 0; i < src->num_ranks && !rc; i++) {
      int g = pj->gpus[i];
      wl_rank_set(wl, g, prog0 + src->rank_program[i]);
      for (int k = 0; k < src->num_roles; k++) {
        int c = wl_rank_comm(src, i, k);
        if (c >= 0)
          wl_rank_set_comm(wl, g, role_map[k], comm0 + c);
      }
    }
  }
  free(role_map);
  int idle = -1;
  for (int r = 0; r < num_ranks && !rc; r++) {
    if (owner[r] >= 0)
      continue;
    if (idle < 0) {
      const char *stream = "compute";
      if ((idle = wl_program_add(wl, "idle", 1, &stream)) < 0)
        rc = ST_ENOMEM;
    }
    if (!rc)
      wl_rank_set(wl, r, idle);
  }
  free(owner);
  if (!rc) {
    merge_meta(parts, n, wl);
    if (wl_meta_set_str(&wl->meta.model, "jobs") || wl_meta_set_str(&wl->meta.source, "jobs"))
      rc = ST_ENOMEM;
  }
  if (rc) {
    wl_workload_destroy(wl);
    return rc == ST_ENOMEM ? st_err_set(err, rc, "out of memory merging jobs") : rc;
  }
  *out = wl;
  return ST_OK;
}

int wl_background_alltoall(int n, double rate_Bps, double window_s, int rounds,
                           wl_workload **out, st_err *err)
{
  *out = NULL;
  if (n < 2)
    return st_err_set(err, ST_EINPUT, "background all-to-all: needs 2 GPUs or more, not %d", n);
  if (!(rate_Bps > 0) || !isfinite(rate_Bps))
    return st_err_set(err, ST_EINPUT, "background all-to-all: the rate %g is not positive", rate_Bps);
  if (!(window_s > 0) || !isfinite(window_s))
    return st_err_set(err, ST_EINPUT, "background all-to-all: the window %g s is not positive",
                      window_s);
  if (rounds < 1 || rounds > 1000000)
    return st_err_set(err, ST_EINPUT, "background all-to-all: %d rounds (1 to 1000000)", rounds);
  const char *role = "bg";
  const char *streams[] = {"timer", "comm"};
  wl_workload *wl = wl_workload_create(n, 1, &role);
  int32_t *ranks = wl ? malloc((size_t)n * sizeof *ranks) : NULL;
  int rc = ranks ? ST_OK : ST_ENOMEM;
  for (int i = 0; i < n && !rc; i++)
    ranks[i] = i;
  int c = rc ? -1 : wl_comm_add(wl, "world", WL_COMM_OTHER, n, ranks);
  int p = c < 0 ? -1 : wl_program_add(wl, "background", 2, streams);
  free(ranks);
  if (p < 0)
    rc = ST_ENOMEM;
  double period = window_s / rounds, bytes = rate_Bps * period;
  wl_program *pg = rc ? NULL : &wl->programs[p];
  /* round 0 at once; round k after timer op k-1 (k periods in); the last
   * timer op holds the job to the end of the window */
  for (int k = 0; k <= rounds && !rc; k++) {
    uint32_t timer = (uint32_t)pg->num_ops - 1;
    if (k > 0) {
      wl_op t = wl_op_compute(0, period);
      t.name = wl_program_string(pg, "period");
      if (wl_program_append(pg, &t, NULL, 0) < 0)
        rc = ST_ENOMEM;
      timer = (uint32_t)pg->num_ops - 1;
    }
    if (k < rounds && !rc) {
      wl_op a = wl_op_coll(1, WL_COLL_ALLTOALL, 0, bytes);
      a.name = wl_program_string(pg, "background");
      if (wl_program_append(pg, &a, k ? &timer : NULL, k ? 1 : 0) < 0)
        rc = ST_ENOMEM;
    }
  }
  for (int i = 0; i < n && !rc; i++) {
    wl_rank_set(wl, i, p);
    wl_rank_set_comm(wl, i, 0, c);
  }
  if (!rc && (wl_meta_set_str(&wl->meta.model, "background") ||
              wl_meta_set_str(&wl->meta.source, "background")))
    rc = ST_ENOMEM;
  if (rc) {
    wl_workload_destroy(wl);
    return st_err_set(err, ST_ENOMEM, "out of memory generating background traffic");
  }
  *out = wl;
  return ST_OK;
}
