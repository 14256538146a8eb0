/* sym.c — rank classes: simulate one rank of each symmetric class and
 * give the others its timings.
 *
 * Why: in an SPMD step on a rail-optimised cluster, the k-th GPU of every
 * tensor-parallel group runs the same program as the first, with
 * communicators that are copies of the first's shifted onto rail k, and
 * their traffic crosses links that no other rail's traffic touches.  Their
 * timings are then identical, and simulating the first GPU of each group
 * gives every one of them (8x fewer actors and activities on a DGX).
 *
 * The reduction is exact, not approximate, when these hold, and each is
 * checked on the actual workload and platform before it is used (any
 * failure falls back to the full simulation and says why):
 *  1. A role R whose communicators partition the ranks into groups of the
 *     same size C >= 2; class(r) = r's member index in its R group, the
 *     representative of r the group's member 0, and sigma_k(r0) the group's
 *     member k.  Every R communicator is closed-form (its links carry
 *     nothing else, closed.c) for every instance the programs issue, so its
 *     duration depends only on when its members arrive; they arrive
 *     together, by the symmetry below.  No send/recv on role R.
 *  2. Every rank runs its representative's program, and for every other
 *     role its programs use, its communicator is the image under sigma_k
 *     of the representative's, member by member (the representative's lies
 *     inside class 0).
 *  3. Every flow the class-0 communicators and send/recv pairs can put on
 *     the network, mapped by sigma_k, has a route of the same length, the
 *     same latency and, link by link, the same bandwidth and sharing; the
 *     link map phi_k so defined is one function per class, one-to-one on
 *     shared links, and no shared link carries flows of two classes.  Then
 *     class k's flows and links are an isomorphic copy of class 0's that
 *     never meets it, and SimGrid's max-min sharing, which is the same
 *     computation on each copy, gives the same rates.  One exception: a
 *     shared link that every class's copy crosses (phi_k(l) = l for all k,
 *     such as a spine group's up links under adaptive routing, or one NIC
 *     for a whole node) carries C identical loads; the max-min allocation is
 *     unique, hence symmetric, so each copy gets exactly what it would get
 *     alone on a link of 1/C the capacity, and the simulation gives the link
 *     that capacity.  A link crossed by some classes' copies but not all
 *     falls back.
 * Results are expanded afterwards: per-rank stats, collective records and
 * timeline rows are copied to the images, link bytes and usage are added
 * to phi_k's images (the R communicators' closed forms account every
 * member's flows already).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eng_int.h"

void eng__sym_release(eng__sym *s)
{
  free(s->cls);
  free(s->grp);
  free(s->gmem);
  free(s->ginv);
  free(s->comm_img);
  free(s->comm_collapse);
  free(s->comm_multi);
  free(s->link_img);
  free(s->link_src);
  free(s->link_cls);
  free(s->fixed_cnt);
  free(s->link_fixed);
  free(s->live);
  free(s->canon);
  free(s->orb_size);
  free(s->orb_next);
  free(s->bw_scale);
  free(s->img_first);
  free(s->img_count);
  memset(s, 0, sizeof *s);
}

/* sigma_k of a class-0 rank: member k of its group. */
int eng__sym_img(const eng__sym *s, const wl_workload *wl, int r0, int k)
{
  (void)wl;
  return s->gmem[(size_t)s->grp[r0] * s->C + k];
}

#define rep_of eng__sym_rep_of

/* The groups' tables for groups of C members, gmem filled by the caller. */
static int groups_alloc(eng__sym *s, const wl_workload *wl, int C)
{
  free(s->grp);
  free(s->gmem);
  s->grp = malloc(((size_t)wl->num_ranks + 1) * sizeof *s->grp);
  s->gmem = malloc(((size_t)wl->num_ranks + 1) * sizeof *s->gmem);
  if (!s->grp || !s->gmem)
    return ST_ENOMEM;
  s->C = C;
  return ST_OK;
}

#define why eng__sym_why
void eng__sym_why(eng__sym *s, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->desc, sizeof s->desc, fmt, ap);
  va_end(ap);
}

/* Roles each program's ops use, as a flag per (program, role). */
static uint8_t *used_roles(const wl_workload *wl)
{
  uint8_t *u = calloc((size_t)wl->num_programs * (size_t)wl->num_roles + 1, 1);
  if (!u)
    return NULL;
  for (int p = 0; p < wl->num_programs; p++) {
    const wl_program *pg = &wl->programs[p];
    for (size_t i = 0; i < pg->num_ops; i++) {
      const wl_op *o = &pg->ops[i];
      if ((o->kind == WL_OP_COLL || o->kind == WL_OP_SEND || o->kind == WL_OP_RECV) &&
          o->role >= 0 && o->role < wl->num_roles)
        u[(size_t)p * wl->num_roles + o->role] = 1;
    }
  }
  return u;
}

/* Condition 1 for role R: its groups partition the ranks, size C >= 2, all
 * closed-form (with need_fast; the quotient fabric simulates them).  Fills
 * s->role, s->C, s->cls and the groups' tables.  1, 0, or ST_ENOMEM
 * (negative). */
static int try_role(eng__sym *s, const eng__sym_env *env, const uint8_t *used, int R, int need_fast)
{
  const wl_workload *wl = env->wl;
  int C = 0, in_use = 0;
  for (int p = 0; p < wl->num_programs; p++)
    in_use |= used[(size_t)p * wl->num_roles + R];
  if (!in_use) /* a role no op plays says nothing about the timings */
    return 0;
  for (int r = 0; r < wl->num_ranks; r++) {
    int c = wl_rank_comm(wl, r, R);
    if (c < 0)
      return 0;
    const wl_comm *cm = &wl->comms[c];
    if (C == 0)
      C = cm->size;
    if (cm->size != C || C < 2 || (need_fast && !env->comm_fast[c]))
      return 0;
  }
  if (C < 2)
    return 0;
  /* a partition: every member of a rank's group has that group (two-member
   * communicators {i, i+1} of a ring of pairs do not: each rank's is
   * another's) */
  for (int r = 0; r < wl->num_ranks; r++) {
    int c = wl_rank_comm(wl, r, R);
    const wl_comm *cm = &wl->comms[c];
    for (int i = 0; i < cm->size; i++)
      if (wl_rank_comm(wl, cm->ranks[i], R) != c)
        return 0;
  }
  if (groups_alloc(s, wl, C))
    return ST_ENOMEM;
  s->role = R;
  s->virt = 0;
  int ng = 0;
  for (int r = 0; r < wl->num_ranks; r++) {
    const wl_comm *cm = &wl->comms[wl_rank_comm(wl, r, R)];
    if (cm->ranks[0] != r)
      continue;
    for (int i = 0; i < C; i++) {
      s->grp[cm->ranks[i]] = ng;
      s->gmem[(size_t)ng * C + i] = cm->ranks[i];
    }
    ng++;
  }
  for (int r = 0; r < wl->num_ranks; r++)
    s->cls[r] = env->member[(size_t)r * wl->num_roles + R];
  return 1;
}

static int node_of(const eng__sym_env *env, int r)
{
  return env->gpus_per_node > 0 ? r / env->gpus_per_node : r;
}

/* The groups as the nodes of role R's groups (the quotient fabric's
 * candidates beside the roles' own): every rank on the nodes an R group
 * spans, node by node, place by place.  Expert data-parallel pairs across
 * two nodes give groups of two whole nodes, whose translations (the places'
 * shift, the nodes' swap) keep both the expert groups of whole nodes and
 * the data-parallel rings across them.  1 when they partition the ranks
 * into groups larger than R's, 0 when not, ST_ENOMEM (negative). */
static int try_nodes(eng__sym *s, const eng__sym_env *env, const uint8_t *used, int R)
{
  const wl_workload *wl = env->wl;
  int g = env->gpus_per_node, NR = wl->num_ranks;
  if (g < 2 || NR % g)
    return 0;
  int t = try_role(s, env, used, R, 0);
  if (t <= 0)
    return t;
  int C0 = s->C, nb = 0;
  const wl_comm *c0 = &wl->comms[wl_rank_comm(wl, 0, R)];
  for (int i = 0; i < C0; i++) /* nodes of the first group, each once */
    nb += i == 0 || node_of(env, c0->ranks[i]) != node_of(env, c0->ranks[i - 1]);
  int C = nb * g;
  if (C <= C0 || C > NR || C > 4096)
    return 0;
  int32_t *first = malloc(((size_t)NR / g + 1) * sizeof *first); /* node -> its group's first node */
  int32_t *nodes = malloc(((size_t)C0 + 1) * sizeof *nodes);
  if (!first || !nodes) {
    free(first);
    free(nodes);
    return ST_ENOMEM;
  }
  for (int n = 0; n < NR / g; n++)
    first[n] = -1;
  int ok = 1, ng = 0;
  /* each R group's nodes, sorted; every group on the same nodes gives the
   * same set, and groups on other nodes meet none of them */
  for (int r = 0; r < NR && ok; r++) {
    const wl_comm *cm = &wl->comms[wl_rank_comm(wl, r, R)];
    int k = 0;
    for (int i = 0; i < C0; i++) {
      int n = node_of(env, cm->ranks[i]), j = k;
      while (j > 0 && nodes[j - 1] > n)
        j--;
      if (j > 0 && nodes[j - 1] == n)
        continue;
      memmove(&nodes[j + 1], &nodes[j], (size_t)(k - j) * sizeof *nodes);
      nodes[j] = n;
      k++;
    }
    if (k != nb) {
      ok = 0;
      break;
    }
    if (first[nodes[0]] >= 0) { /* a group seen: the same nodes */
      for (int j = 0; j < k && ok; j++)
        ok = first[nodes[j]] == nodes[0];
      continue;
    }
    for (int j = 0; j < k && ok; j++)
      ok = first[nodes[j]] < 0;
    for (int j = 0; j < k && ok; j++) {
      first[nodes[j]] = nodes[0];
      for (int p = 0; p < g; p++) {
        int x = nodes[j] * g + p;
        s->grp[x] = ng;
        s->cls[x] = j * g + p;
        s->gmem[(size_t)ng * C + j * g + p] = x;
      }
    }
    ng++;
  }
  free(first);
  free(nodes);
  if (!ok)
    return 0;
  s->C = C;
  s->virt = 1;
  return 1;
}

/* "Seen" sets keyed by a hash: an entry keeps what it stands for, so that a
 * collision is checked again rather than skipped.  1 when (a, b, c, d) is
 * new (and now recorded), 0 when seen, -1 out of memory. */
typedef struct seen_entry {
  uint64_t a, b, c, d;
} seen_entry;

#define seen_first eng__seen_first
int eng__seen_first(eng__map *m, st_arena *ar, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
  uint64_t key = eng__key4(a, b, c, d);
  const seen_entry *e = eng__map_get(m, key);
  if (e)
    return e->a == a && e->b == b && e->c == c && e->d == d ? 0 : 1;
  seen_entry *n = st_arena_alloc(ar, sizeof *n);
  if (!n || eng__map_put(m, key, n))
    return -1;
  *n = (seen_entry){a, b, c, d};
  return 1;
}

/* Whether programs a and b time alike: the same ops on the same streams with
 * the same waits and sizes (names aside).  Imported traces give every rank a
 * program of its own, often identical. */
static int same_program(const wl_program *a, const wl_program *b)
{
  if (a->num_ops != b->num_ops || a->num_streams != b->num_streams)
    return 0;
  for (size_t i = 0; i < a->num_ops; i++) {
    const wl_op *x = &a->ops[i], *y = &b->ops[i];
    if (x->kind != y->kind || x->sub != y->sub || x->phase != y->phase || x->dtype != y->dtype ||
        x->stream != y->stream || x->flags != y->flags || x->role != y->role ||
        x->peer != y->peer || x->tag != y->tag || x->wait_count != y->wait_count ||
        x->concurrent != y->concurrent || x->duration_s != y->duration_s ||
        x->flops != y->flops || x->bytes != y->bytes || x->m != y->m || x->n != y->n ||
        x->k != y->k || x->batch != y->batch)
      return 0;
    if (x->wait_count && memcmp(&a->waits[x->wait_first], &b->waits[y->wait_first],
                                x->wait_count * sizeof *a->waits))
      return 0;
  }
  if (a->num_splits != b->num_splits ||
      (a->num_splits && memcmp(a->splits, b->splits, a->num_splits * sizeof *a->splits)))
    return 0;
  return 1;
}

/* Condition 2: programs and communicators map, member by member. */
static int check_ranks(eng__sym *s, const eng__sym_env *env, const uint8_t *used)
{
  const wl_workload *wl = env->wl;
  int C = s->C, NR = wl->num_roles;
  eng__map same; /* (program, program) pairs found alike */
  eng__map_init(&same);
  st_arena same_arena;
  st_arena_init(&same_arena, 4096);
  int ok = 0;
  for (int r = 0; r < wl->num_ranks; r++) {
    int k = s->cls[r];
    int r0 = rep_of(s, r);
    if (k == 0)
      continue;
    int p = wl->rank_program[r], p0 = wl->rank_program[r0];
    if (env->rank_group && env->rank_group[r] != env->rank_group[r0]) {
      why(s, "rank %d and rank %d of its '%s' group are in different node groups", r, r0,
          wl->roles[s->role]);
      goto out;
    }
    int first =
        p != p0 ? seen_first(&same, &same_arena, (uint64_t)p, (uint64_t)p0, 0x73616d65, 3) : 0;
    if (first < 0) {
      why(s, "out of memory");
      goto out;
    }
    if (first && !same_program(&wl->programs[p], &wl->programs[p0])) {
      why(s, "rank %d runs program %d, rank %d of its '%s' group program %d", r, p, r0,
          wl->roles[s->role], p0);
      goto out;
    }
    for (int role = 0; role < NR; role++) {
      if ((role == s->role && !s->virt) || !used[(size_t)p * NR + role])
        continue;
      int c = wl_rank_comm(wl, r, role), c0 = wl_rank_comm(wl, r0, role);
      if ((c < 0) != (c0 < 0)) {
        why(s, "rank %d and rank %d differ in playing role '%s'", r, r0, wl->roles[role]);
        goto out;
      }
      if (c < 0 || s->comm_collapse[c0] || s->comm_multi[c0]) /* sym_quot.c checks them */
        continue;
      int32_t *img = &s->comm_img[(size_t)c0 * C + k];
      if (*img == c)
        continue;
      if (*img >= 0) {
        why(s, "communicator '%s' has two images in class %d", wl->comms[c0].name, k);
        goto out;
      }
      const wl_comm *a = &wl->comms[c0], *b = &wl->comms[c];
      if (a->size != b->size || a->kind != b->kind) {
        why(s, "communicators '%s' and '%s' differ in size or kind", a->name, b->name);
        goto out;
      }
      for (int i = 0; i < a->size; i++) {
        int m = a->ranks[i];
        if (s->cls[m] != 0 || eng__sym_img(s, wl, m, k) != b->ranks[i]) {
          why(s, "communicator '%s' (role '%s') spans several '%s' positions", a->name,
              wl->roles[role], wl->roles[s->role]);
          goto out;
        }
      }
      *img = c;
    }
  }
  ok = 1;
out:
  eng__map_release(&same);
  st_arena_release(&same_arena);
  return ok;
}

typedef struct walk_ctx {
  eng__sym *s;
  const eng__sym_env *env;
  int ok;
} walk_ctx;

/* Condition 3 for one class-0 flow and its images. */
static void check_flow(void *u, int s0, int d0)
{
  walk_ctx *w = u;
  eng__sym *s = w->s;
  const eng__sym_env *env = w->env;
  if (!w->ok || s0 == d0)
    return;
  uint32_t n0;
  double lat0;
  const uint32_t *l0 = env->route(env->u, s0, d0, &n0, &lat0);
  if (!l0) {
    w->ok = 0;
    why(s, "out of memory");
    return;
  }
  /* the route's links may be freed by the next call: copy them */
  uint32_t local[64], *a = n0 <= 64 ? local : malloc(n0 * sizeof *a);
  if (!a) {
    w->ok = 0;
    why(s, "out of memory");
    return;
  }
  memcpy(a, l0, n0 * sizeof *a);
  for (uint32_t i = 0; i < n0; i++) {
    uint32_t l = a[i];
    if (s->link_cls[l] < 0) {
      s->link_cls[l] = 0;
      s->link_src[l] = l;
    } else if (s->link_cls[l] != 0 && env->link_shared[l]) {
      why(s, "link %u (route %d->%d) carries traffic of two classes", l, s0, d0);
      w->ok = 0;
    }
  }
  for (int k = 1; k < s->C && w->ok; k++) {
    int sk = eng__sym_img(s, env->wl, s0, k), dk = eng__sym_img(s, env->wl, d0, k);
    uint32_t nk;
    double latk;
    const uint32_t *lk = env->route(env->u, sk, dk, &nk, &latk);
    if (!lk || nk != n0 || latk != lat0) {
      why(s, "the route %d->%d and its image %d->%d differ", s0, d0, sk, dk);
      w->ok = 0;
      break;
    }
    for (uint32_t i = 0; i < n0; i++) {
      uint32_t x = a[i], y = lk[i];
      uint32_t *img = &s->link_img[(size_t)x * s->C + k];
      if (*img == UINT32_MAX) {
        if (env->link_bw[x] != env->link_bw[y] || env->link_shared[x] != env->link_shared[y]) {
          why(s, "links %u and %u (route %d->%d and its image) differ in bandwidth", x, y, s0, d0);
          w->ok = 0;
          break;
        }
        if (y == x) { /* class k's copy crosses the same link (see condition 3) */
          *img = y;
          s->fixed_cnt[x]++;
          continue;
        }
        if (env->link_shared[y] && s->link_cls[y] >= 0 &&
            (s->link_cls[y] != k || s->link_src[y] != x)) {
          why(s, "link %u (route %d->%d) carries traffic of two classes", y, sk, dk);
          w->ok = 0;
          break;
        }
        *img = y;
        if (s->link_cls[y] < 0) {
          s->link_cls[y] = (int8_t)k;
          s->link_src[y] = x;
        }
      } else if (*img != y) {
        why(s, "link %u has two images in class %d", x, k);
        w->ok = 0;
        break;
      }
    }
  }
  if (a != local)
    free(a);
}

/* Condition 1's closed form, or condition 3's flows, for one collective or
 * send/recv op of class-0 rank r, once per distinct instance (seen).  0,
 * or ST_ENOMEM; w->ok = 0 (and why) when a condition fails. */
static int check_op(walk_ctx *w, eng__map *seen, st_arena *ar, int r, const wl_op *o)
{
  eng__sym *s = w->s;
  const eng__sym_env *env = w->env;
  const wl_workload *wl = env->wl;
  int c = wl_rank_comm(wl, r, o->role);
  if (c < 0)
    return ST_OK;
  const wl_comm *cm = &wl->comms[c];
  if (o->kind != WL_OP_COLL) {
    if (s->comm_collapse[c]) {
      why(s, "send/recv on the '%s' communicators", wl->roles[s->role]);
      w->ok = 0;
    } else if (o->kind == WL_OP_SEND) {
      int dst = cm->ranks[o->peer];
      int first = seen_first(seen, ar, (uint64_t)r, (uint64_t)dst, 0x7032, UINT64_MAX);
      if (first < 0)
        return ST_ENOMEM;
      if (first)
        check_flow(w, r, dst);
    }
    return ST_OK;
  }
  if (cm->size < 2)
    return ST_OK;
  int splits = o->sub == WL_COLL_ALLTOALL && (o->flags & WL_OPF_SPLITS);
  uint64_t bits;
  memcpy(&bits, &o->bytes, sizeof bits);
  int root = wl_op_coll_arg(o);
  int first = seen_first(seen, ar, (uint64_t)c, o->sub | (splits ? 0x100u : 0), bits,
                         (uint64_t)(uint32_t)root);
  if (first <= 0)
    return first < 0 ? ST_ENOMEM : ST_OK;
  if (s->comm_collapse[c]) {
    if (splits || !env->closed(env->u, c, o->sub, o->bytes, root)) {
      why(s, "a %s on a '%s' communicator has no closed form", wl_coll_name(o->sub),
          wl->roles[s->role]);
      w->ok = 0;
    }
  } else if (splits) {
    for (int a = 0; a < cm->size && w->ok; a++)
      for (int b = 0; b < cm->size && w->ok; b++)
        check_flow(w, cm->ranks[a], cm->ranks[b]);
  } else if (env->walk(env->u, c, o->sub, o->bytes, root, check_flow, w)) {
    return ST_ENOMEM;
  }
  return ST_OK;
}

/* Conditions 1 and 3 on every distinct instance the class-0 ranks issue:
 * 0 (*ok: whether they hold) or ST_ENOMEM. */
static int check_instances(eng__sym *s, const eng__sym_env *env, int *ok)
{
  const wl_workload *wl = env->wl;
  eng__map seen;
  eng__map_init(&seen);
  st_arena seen_arena;
  st_arena_init(&seen_arena, 1 << 16);
  walk_ctx w = {s, env, 1};
  int rc = ST_OK;
  for (int r = 0; r < wl->num_ranks && w.ok && !rc; r++) {
    if (s->cls[r] != 0)
      continue;
    const wl_program *pg = &wl->programs[wl->rank_program[r]];
    for (size_t i = 0; i < pg->num_ops && w.ok && !rc; i++) {
      const wl_op *o = &pg->ops[i];
      if (o->kind == WL_OP_COLL || o->kind == WL_OP_SEND || o->kind == WL_OP_RECV)
        rc = check_op(&w, &seen, &seen_arena, r, o);
    }
  }
  eng__map_release(&seen);
  st_arena_release(&seen_arena);
  *ok = w.ok;
  return rc;
}

/* The tables of the classes' images, before the checks fill them.  0 or
 * ST_ENOMEM. */
static int alloc_images(eng__sym *s, const eng__sym_env *env)
{
  const wl_workload *wl = env->wl;
  int C = s->C;
  s->comm_img = malloc(((size_t)wl->num_comms * C + 1) * sizeof *s->comm_img);
  s->comm_collapse = calloc((size_t)wl->num_comms + 1, 1);
  s->comm_multi = calloc((size_t)wl->num_comms + 1, 1);
  s->link_img = malloc((env->num_links * C + 1) * sizeof *s->link_img);
  s->link_src = malloc((env->num_links + 1) * sizeof *s->link_src);
  s->link_cls = malloc(env->num_links + 1);
  s->fixed_cnt = calloc(env->num_links + 1, sizeof *s->fixed_cnt);
  s->link_fixed = calloc(env->num_links + 1, 1);
  s->live = malloc(((size_t)wl->num_comms + 1) * sizeof *s->live);
  if (!s->comm_img || !s->comm_collapse || !s->comm_multi || !s->link_img || !s->link_src || !s->link_cls ||
      !s->live || !s->fixed_cnt || !s->link_fixed)
    return ST_ENOMEM;
  for (size_t i = 0; i < (size_t)wl->num_comms * C; i++)
    s->comm_img[i] = -1;
  for (size_t i = 0; i < env->num_links * C; i++)
    s->link_img[i] = UINT32_MAX;
  memset(s->link_cls, 0xff, env->num_links + 1);
  /* links no class-0 flow crosses have no source: links.c reads every entry */
  memset(s->link_src, 0xff, (env->num_links + 1) * sizeof *s->link_src);
  for (int r = 0; r < wl->num_ranks && !s->virt; r++)
    s->comm_collapse[wl_rank_comm(wl, r, s->role)] = 1;
  return ST_OK;
}

/* Condition 3's exception: the shared links every class's copy crosses.
 * 1, or 0 (and why) when a link is crossed by some classes' copies but not
 * all. */
static int check_fixed(eng__sym *s, const eng__sym_env *env)
{
  for (size_t l = 0; l < env->num_links; l++) {
    if (s->link_cls[l] != 0 || !env->link_shared[l] || s->fixed_cnt[l] == 0)
      continue;
    if (s->fixed_cnt[l] != s->C - 1) {
      why(s, "link %zu carries the traffic of %d of %d classes", l, s->fixed_cnt[l] + 1, s->C);
      return 0;
    }
    s->link_fixed[l] = 1;
    s->fixed++;
  }
  return 1;
}

/* The reduction holds: the members simulated per communicator, the ranks
 * simulated, and what was used. */
static void sym_use(eng__sym *s, const wl_workload *wl)
{
  for (int c = 0; c < wl->num_comms; c++) {
    const wl_comm *cm = &wl->comms[c];
    int n = 0;
    for (int i = 0; i < cm->size; i++)
      n += s->cls[cm->ranks[i]] == 0;
    s->live[c] = n;
  }
  s->on = 1;
  s->simulated = 0;
  for (int r = 0; r < wl->num_ranks; r++)
    s->simulated += s->cls[r] == 0;
  snprintf(s->desc, sizeof s->desc,
           "rank classes: %d positions in the %s'%s' groups, one simulated, %d of %d ranks", s->C,
           s->virt ? "nodes of the " : "", wl->roles[s->role], s->simulated, wl->num_ranks);
  if (s->fixed)
    snprintf(s->desc + strlen(s->desc), sizeof s->desc - strlen(s->desc),
             ", %zu links shared by all", s->fixed);
  if (s->quotient)
    snprintf(s->desc + strlen(s->desc), sizeof s->desc - strlen(s->desc),
             ", quotient fabric%s: %zu link orbits, %zu links at |orbit|/%d",
             s->twist ? " (node shifts reflected)" : s->rad ? " (places in two digits)" : "",
             s->orbits, s->scaled, s->C);
  free(s->link_cls);
  s->link_cls = NULL;
  free(s->fixed_cnt);
  s->fixed_cnt = NULL;
}

/* The images' tables of one candidate role, released before the next is
 * tried (the classes s->cls stay: try_role fills them again). */
static void release_images(eng__sym *s)
{
  int32_t *cls = s->cls;
  s->cls = NULL;
  eng__sym_release(s);
  s->cls = cls;
}

/* Conditions 2 and 3 for the role try_role chose: 1 when they hold, 0
 * (and why) when not, or ST_ENOMEM (negative). */
static int check_role(eng__sym *s, const eng__sym_env *env, const uint8_t *used)
{
  int rc, ok = 0;
  if ((rc = alloc_images(s, env)))
    return rc;
  if (!check_ranks(s, env, used))
    return 0;
  if ((rc = check_instances(s, env, &ok)))
    return rc;
  return ok && check_fixed(s, env);
}

/* Condition 2, then the quotient fabric's conditions (sym_quot.c).  A
 * communicator of another role inside one group with one class-0 member
 * (expert parallelism over the same ranks as data parallelism, or over
 * half of them; the expert data-parallel pairs) runs as the groups do:
 * that member alone, sending; one with class-0 members and others beyond
 * one group (expert and data-parallel groups across the nodes of several
 * groups) runs as its class-0 members, each sending its own transfers and
 * receiving the images of the others' (collective.c).  sym_quot.c checks
 * that the translations carry each onto itself or onto its images,
 * transfer by transfer. */
static int check_role_quotient(eng__sym *s, const eng__sym_env *env, const uint8_t *used)
{
  const wl_workload *wl = env->wl;
  int rc;
  if ((rc = alloc_images(s, env)))
    return rc;
  for (int c = 0; c < wl->num_comms; c++) {
    const wl_comm *cm = &wl->comms[c];
    if (s->comm_collapse[c] || cm->size < 2)
      continue;
    int zeros = 0, r0 = -1;
    for (int i = 0; i < cm->size; i++)
      if (s->cls[cm->ranks[i]] == 0) {
        zeros++;
        r0 = cm->ranks[i];
      }
    if (zeros == 0 || zeros == cm->size)
      continue;
    int inside = zeros == 1;
    for (int i = 0; i < cm->size && inside; i++)
      inside = rep_of(s, cm->ranks[i]) == r0;
    if (inside)
      s->comm_collapse[c] = 1;
    else
      s->comm_multi[c] = 1;
  }
  if (!check_ranks(s, env, used))
    return 0;
  return eng__sym_quotient(s, env);
}

/* Candidate groups: role R's own (virt 0), or the nodes its groups span
 * (virt 1, the quotient fabric only).  1, 0 or ST_ENOMEM (negative). */
static int try_candidate(eng__sym *s, const eng__sym_env *env, const uint8_t *used, int R,
                         int virt, int pass)
{
  if (virt)
    return pass == 0 ? 0 : try_nodes(s, env, used, R);
  return try_role(s, env, used, R, pass == 0);
}

/* Every role that meets condition 1 is a candidate, in the workload's
 * order; the first that meets them all is used.  A layout's first such
 * role need not be the one its symmetry follows: in an interleaved
 * pipeline on one node the pairs of neighbouring stages ('pp_prev') are
 * closed-form groups that partition the ranks too, but their members run
 * different programs, while the tensor-parallel groups' members do not.
 * When none holds, the reason given is the first candidate's. */
int eng__sym_prepare(eng__sym *s, const eng__sym_env *env)
{
  const wl_workload *wl = env->wl;
  memset(s, 0, sizeof *s);
  s->C = 1;
  snprintf(s->desc, sizeof s->desc, "none");
  if (wl->num_roles == 0 || wl->num_ranks < 2) {
    why(s, "no communicators");
    return ST_OK;
  }
  int rc = ST_OK, candidates = 0;
  char first_why[sizeof s->desc] = "";
  uint8_t *used = used_roles(wl);
  s->cls = calloc((size_t)wl->num_ranks, sizeof *s->cls);
  s->link_cls = NULL;
  if (!used || !s->cls) {
    rc = ST_ENOMEM;
    goto out;
  }
  /* closed-form groups first (pass 0: the first role that holds), then the
   * quotient fabric (pass 1: of the candidates that hold, a role's groups
   * or their nodes, the one with the most positions, i.e. the fewest ranks
   * simulated, when a layout holds for two, say expert parallelism over a
   * node and data parallelism over two; pass 2 runs the chosen one's checks
   * again) */
  int best = -1, best_C = 0;
  for (int pass = 0; pass < 3; pass++) {
    if (pass >= 1 && env->no_quotient)
      break;
    if (pass == 2 && best < 0)
      break;
    for (int cand = 0; cand < 2 * wl->num_roles; cand++) {
      int R = cand / 2, virt = cand % 2;
      if (pass == 2 && cand != best)
        continue;
      int t = try_candidate(s, env, used, R, virt, pass);
      if (t < 0) {
        rc = t;
        goto out;
      }
      if (!t)
        continue;
      candidates++;
      int ok = pass == 0 ? check_role(s, env, used) : check_role_quotient(s, env, used);
      if (ok < 0) {
        rc = ok;
        goto out;
      }
      if (ok && pass == 1) {
        if (s->C > best_C) {
          best_C = s->C;
          best = cand;
        }
      } else if (ok) {
        sym_use(s, wl);
        free(used);
        return ST_OK;
      }
      if (candidates == 1)
        snprintf(first_why, sizeof first_why, "%s", s->desc);
      release_images(s);
    }
  }
  if (!candidates)
    why(s, "no role whose groups partition the ranks and run in closed form");
  else
    why(s, "%s", first_why);

  char d[sizeof s->desc];
  snprintf(d, sizeof d, "none (%s)", s->desc);
  free(used);
  used = NULL;
  eng__sym_release(s);
  s->C = 1;
  snprintf(s->desc, sizeof s->desc, "%s", d);
  return ST_OK;
out:
  free(used);
  eng__sym_release(s);
  return rc;
}

/* ---- expanding the results ------------------------------------------------ */

void eng__sym_expand_ranks(const eng__sym *s, const wl_workload *wl, sim_rank_stats *ranks)
{
  if (!s->on)
    return;
  for (int r = 0; r < wl->num_ranks; r++) {
    if (s->cls[r] == 0)
      continue;
    ranks[r] = ranks[rep_of(s, r)];
    ranks[r].rank = r;
    ranks[r].host = r;
  }
}

int eng__sym_rep(const eng__sym *s, const wl_workload *wl, int r)
{
  (void)wl;
  return s->on ? rep_of(s, r) : r;
}

static int cmp_f64(double a, double b) { return (a > b) - (a < b); }
static int cmp_i64(int64_t a, int64_t b) { return (a > b) - (a < b); }

/* Chronological by end, then start; ties by communicator and ranks. */
static int cmp_rec(const void *a, const void *b)
{
  const sim_coll_record *x = a, *y = b;
  int c = cmp_f64(x->end_s, y->end_s);
  c = c ? c : cmp_f64(x->start_s, y->start_s);
  c = c ? c : cmp_i64(x->comm, y->comm);
  c = c ? c : cmp_i64(x->src, y->src);
  return c ? c : cmp_i64(x->dst, y->dst);
}

/* Whether communicator c's records are copied to its image under class k:
 * with the closed-form classes every communicator but an R group's, on the
 * quotient fabric each distinct image once. */
static int copied_to(const eng__sym *s, int c, int k)
{
  if (s->quotient)
    return s->img_first[(size_t)c * s->C + k];
  return !s->comm_collapse[c];
}

int eng__sym_expand_colls(const eng__sym *s, const wl_workload *wl, sim_coll_record **recs,
                          size_t *n)
{
  if (!s->on || !*n)
    return ST_OK;
  size_t n0 = *n, add = 0;
  for (size_t i = 0; i < n0; i++)
    for (int k = 1; k < s->C; k++)
      add += copied_to(s, (*recs)[i].comm, k);
  sim_coll_record *r = realloc(*recs, (n0 + add + 1) * sizeof *r);
  if (!r)
    return ST_ENOMEM;
  size_t m = n0;
  for (size_t i = 0; i < n0; i++)
    for (int k = 1; k < s->C; k++) {
      if (!copied_to(s, r[i].comm, k))
        continue;
      sim_coll_record x = r[i];
      x.comm = s->comm_img[(size_t)r[i].comm * s->C + k];
      if (x.src >= 0)
        x.src = eng__sym_img(s, wl, x.src, k);
      if (x.dst >= 0)
        x.dst = eng__sym_img(s, wl, x.dst, k);
      r[m++] = x;
    }
  qsort(r, m, sizeof *r, cmp_rec);
  *recs = r;
  *n = m;
  return ST_OK;
}

/* Chronological by start; ties by rank and op. */
static int cmp_row(const void *a, const void *b)
{
  const sim_timeline_row *x = a, *y = b;
  int c = cmp_f64(x->start_s, y->start_s);
  c = c ? c : cmp_i64(x->rank, y->rank);
  return c ? c : cmp_i64(x->op, y->op);
}

int eng__sym_expand_timeline(const eng__sym *s, const wl_workload *wl, sim_timeline_row **rows,
                             size_t *n)
{
  if (!s->on || !*n)
    return ST_OK;
  size_t n0 = *n;
  sim_timeline_row *r = realloc(*rows, (n0 * (size_t)s->C + 1) * sizeof *r);
  if (!r)
    return ST_ENOMEM;
  size_t m = n0;
  for (size_t i = 0; i < n0; i++)
    for (int k = 1; k < s->C; k++) {
      r[m] = r[i];
      r[m].rank = eng__sym_img(s, wl, r[i].rank, k);
      r[m].program = wl->rank_program[r[m].rank]; /* alike, maybe another index */
      m++;
    }
  qsort(r, m, sizeof *r, cmp_row);
  *rows = r;
  *n = m;
  return ST_OK;
}
