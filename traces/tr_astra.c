/* tr_astra.c — ASTRA-sim 1.0 / SimAI layer-wise text workloads into a workload.
 *
 * Line 1: the parallelism kind and options (model_parallel_NPU_group, and
 * SimAI's ep, pp, vpp, ga, all_gpus, pp_comm, checkpoints...); line 2: the
 * number of layers; then one line per layer:
 *   name -1 fwd_comp fwd_type fwd_bytes ig_comp ig_type ig_bytes
 *        wg_comp wg_type wg_bytes update_delay [kind, HYBRID_CUSTOMIZED]
 * Times are cycles, taken as 1 ns (SimAI's convention); sizes are bytes of
 * the whole buffer (the nccl-tests convention of workload.h).
 *
 * Expanded over N GPUs (--gpus, else all_gpus) laid out tp-innermost:
 * rank = (stage * dp + d) * tp + t, tp = model_parallel_NPU_group, pp stages,
 * dp = N / (tp * pp); SimAI's EP groups are ep consecutive DP members and
 * the DP_EP groups the dp/ep members with equal EP index.  Which group a
 * collective uses:
 *   MICRO, DATA, MODEL, HYBRID_DLRM:           every comm over all ranks of the stage
 *   HYBRID_TRANSFORMER[_FWD_IN_BCKWD],
 *   HYBRID_DATA_MODEL:                         fwd/ig over the tp group, wg over dp
 *   HYBRID_MODEL_DATA:                         fwd/ig over dp, wg over the tp group
 *   HYBRID_CUSTOMIZED:                         per layer, by its 13th column
 *   *_EP / *_DP_EP (SimAI):                    the EP / DP_EP group
 * One program per pipeline stage (ranks of a stage share it): for each of
 * ga micro-batches, forward (fwd compute then its blocking collective,
 * activations sent to the next stage), backward in reverse layer order (ig
 * compute and collective, wg compute); weight-gradient collectives run on
 * their own stream in the last micro-batch, each followed by the layer's
 * update delay.  Collectives over a group of one rank are left out.
 */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tr_int.h"

enum { AK_MICRO, AK_DATA, AK_MODEL, AK_HDM, AK_HMD, AK_HT, AK_HTF, AK_DLRM, AK_CUSTOM, AK_COUNT };
static const char *const kind_names[AK_COUNT] = {
    "MICRO",           "DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "HYBRID_TRANSFORMER",
    "HYBRID_TRANSFORMER_FWD_IN_BCKWD", "HYBRID_DLRM", "HYBRID_CUSTOMIZED"};

/* groups a collective can use */
enum { AG_ALL, AG_TP, AG_DP, AG_EP, AG_DPEP, AG_PP_NEXT, AG_PP_PREV, AG_COUNT };
static const char *const group_roles[AG_COUNT] = {"stage", "tp", "dp", "ep", "dp_ep", "pp_next",
                                                  "pp_prev"};

typedef struct as_comm {
  int coll;  /* wl_coll_op, -1 = none */
  int group; /* AG_*, or -1 = by phase */
  double bytes;
} as_comm;

typedef struct as_layer {
  char name[64];
  double comp_ns[3]; /* fwd, ig, wg */
  as_comm comm[3];
  double update_ns;
  int kind; /* HYBRID_CUSTOMIZED: the layer's kind */
} as_layer;

static int parse_comm_type(const char *s, as_comm *c)
{
  char b[64];
  snprintf(b, sizeof b, "%s", s);
  c->group = -1;
  char *suf;
  if ((suf = strstr(b, "_DP_EP"))) {
    c->group = AG_DPEP;
    *suf = '\0';
  } else if ((suf = strstr(b, "_EP"))) {
    c->group = AG_EP;
    *suf = '\0';
  }
  if (!strcmp(b, "NONE"))
    c->coll = -1;
  else if (!strcmp(b, "ALLREDUCE"))
    c->coll = WL_COLL_ALLREDUCE;
  else if (!strcmp(b, "ALLGATHER"))
    c->coll = WL_COLL_ALLGATHER;
  else if (!strcmp(b, "REDUCESCATTER"))
    c->coll = WL_COLL_REDUCESCATTER;
  else if (!strcmp(b, "ALLTOALL"))
    c->coll = WL_COLL_ALLTOALL;
  else if (!strcmp(b, "BROADCAST"))
    c->coll = WL_COLL_BROADCAST;
  else
    return -1;
  return 0;
}

static int kind_from(const char *s)
{
  for (int k = 0; k < AK_COUNT; k++)
    if (!strcmp(s, kind_names[k]))
      return k;
  return -1;
}

static int next_line(char **cur, char **line)
{
  if (!*cur || !**cur)
    return 0;
  *line = *cur;
  char *nl = strchr(*cur, '\n');
  if (nl) {
    *nl = '\0';
    *cur = nl + 1;
  } else
    *cur += strlen(*cur);
  size_t n = strlen(*line);
  if (n && (*line)[n - 1] == '\r')
    (*line)[n - 1] = '\0';
  return 1;
}

static int split_ws(char *s, char **tok, int max)
{
  int n = 0;
  char *save;
  for (char *t = strtok_r(s, " \t", &save); t && n < max; t = strtok_r(NULL, " \t", &save))
    tok[n++] = t;
  return n;
}

static int parse_num(const char *s, double *v)
{
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  return end == s || *end || errno || !isfinite(*v) || *v < 0 ? -1 : 0;
}

/* Which group a collective of layer l in phase ph (0 fwd, 1 ig, 2 wg) uses. */
static int group_of(int kind, const as_layer *l, int ph, const as_comm *c)
{
  if (c->group >= 0)
    return c->group;
  int k = kind == AK_CUSTOM ? l->kind : kind;
  switch (k) {
  case AK_HT:
  case AK_HTF:
  case AK_HDM: return ph == 2 ? AG_DP : AG_TP;
  case AK_HMD: return ph == 2 ? AG_TP : AG_DP;
  default: return AG_ALL;
  }
}

/* The header: the parallelism line with its options, then the number of
 * layers. */
typedef struct as_head {
  int kind, tp, pp, ep, ga, all_gpus, nlayers;
  double pp_comm;
} as_head;

static int read_header(const char *path, char **cur, int *lineno, as_head *h, st_err *err)
{
  char *line;
  int rc = ST_OK;
  int kind = -1, tp = 0, pp = 1, ep = 1, ga = 1, all_gpus = 0, nlayers = 0;
  double pp_comm = 0;
  while (next_line(cur, &line)) {
    (*lineno)++;
    char *tok[64];
    int n = split_ws(line, tok, 64);
    if (n == 0)
      continue;
    kind = kind_from(tok[0]);
    if (kind < 0) {
      rc = st_err_set(err, ST_EINPUT, "trace '%s': line %d: parallelism '%s' is unknown", path,
                      *lineno, tok[0]);
      goto done;
    }
    for (int i = 1; i < n; i++) {
      char key[48];
      snprintf(key, sizeof key, "%s", tok[i]);
      size_t kl = strlen(key);
      if (kl && key[kl - 1] == ':')
        key[kl - 1] = '\0';
      double v = 0;
      int has = i + 1 < n && !parse_num(tok[i + 1], &v);
      /* the counts this reader stores: key, field, smallest, largest */
      static const struct {
        const char *key;
        int lo;
        long hi;
      } ints[] = {{"model_parallel_NPU_group", 0, ST_RANKS_MAX}, {"pp", 1, ST_RANKS_MAX},
                  {"ep", 1, ST_RANKS_MAX}, {"ga", 1, ST_LAYERS_MAX}, {"all_gpus", 0, ST_RANKS_MAX}};
      int *field[] = {&tp, &pp, &ep, &ga, &all_gpus};
      int which = -1;
      for (int q = 0; q < 5 && has; q++)
        if (!strcmp(key, ints[q].key))
          which = q;
      if (which >= 0) {
        long x;
        if ((rc = st_num_to_long(v, ints[which].lo, ints[which].hi, &x, err,
                                 "trace '%s': line %d: '%s'", path, *lineno, key)))
          goto done;
        *field[which] = (int)x, i++;
      } else if (!strcmp(key, "pp_comm") && has) {
        if ((rc = st_num_check(v, ST_NUM_REAL, 0, ST_BYTES_MAX, err, "trace '%s': line %d: '%s'",
                               path, *lineno, key)))
          goto done;
        pp_comm = v, i++;
      }
      /* vpp, checkpoints, checkpoint_initiates, HYBRID_DLRM's last bottom
       * layer: read past (see docs/traces.md) */
    }
    break;
  }
  if (kind < 0) {
    rc = st_err_set(err, ST_EINPUT, "trace '%s': empty (no parallelism line)", path);
    goto done;
  }
  while (next_line(cur, &line)) {
    (*lineno)++;
    char *tok[4];
    if (split_ws(line, tok, 4) == 0)
      continue;
    long x;
    if ((rc = st_num_parse_long(tok[0], 1, ST_LAYERS_MAX, &x, err,
                                "trace '%s': line %d: the number of layers", path, *lineno)))
      goto done;
    nlayers = (int)x;
    break;
  }
  if (nlayers == 0) {
    rc = st_err_set(err, ST_EINPUT, "trace '%s': line %d: number of layers is missing", path,
                    *lineno);
    goto done;
  }
done:
  *h = (as_head){kind, tp, pp, ep, ga, all_gpus, nlayers, pp_comm};
  return rc;
}

/* The members of the group of kind g (AG_ALL .. AG_DPEP) of stage s whose
 * first member is (d, t), in rank order, into buf; returns their count.
 * Each kind's members are listed directly (a filter over the whole stage
 * per group made the import quadratic in the GPUs). */
static int group_members(int g, int s, int d, int t, int dp, int tp, int ep, int32_t *buf)
{
  int n = 0;
  int d_lo = 0, d_hi = dp, d_step = 1, t_lo = t, t_hi = t + 1;
  switch (g) {
  case AG_ALL: t_lo = 0, t_hi = tp; break;
  case AG_TP: d_lo = d, d_hi = d + 1, t_lo = 0, t_hi = tp; break;
  case AG_DP: break;
  case AG_EP: d_lo = d / ep * ep, d_hi = d_lo + ep; break;
  default: d_lo = d % ep, d_step = ep; break; /* DP_EP */
  }
  for (int d2 = d_lo; d2 < d_hi; d2 += d_step)
    for (int t2 = t_lo; t2 < t_hi; t2++)
      buf[n++] = (s * dp + d2) * tp + t2;
  return n;
}

/* The communicators of every stage (all, tp, dp, ep, dp over ep) and the
 * pipeline pairs between stages; buf has room for every rank. */
static int add_groups(wl_workload *wl, int pp, int dp, int tp, int ep, int32_t *buf, st_err *err)
{
  int rc = ST_OK;
  for (int s = 0; s < pp && !rc; s++)
    for (int g = 0; g < AG_PP_NEXT && !rc; g++) {
      /* enumerate groups of kind g in stage s by a canonical member */
      for (int d = 0; d < dp && !rc; d++)
        for (int t = 0; t < tp && !rc; t++) {
          int lead; /* is (d,t) the first member of its group? */
          switch (g) {
          case AG_ALL: lead = d == 0 && t == 0; break;
          case AG_TP: lead = t == 0; break;
          case AG_DP: lead = d == 0; break;
          case AG_EP: lead = d % ep == 0; break;
          default: lead = d < ep; break; /* DP_EP */
          }
          if (!lead)
            continue;
          int n = group_members(g, s, d, t, dp, tp, ep, buf);
          char nm[64];
          snprintf(nm, sizeof nm, "%s s%d d%d t%d", group_roles[g], s, d, t);
          int kinds[AG_COUNT] = {WL_COMM_WORLD, WL_COMM_TP, WL_COMM_DP, WL_COMM_EP, WL_COMM_DP};
          int ci = wl_comm_add(wl, nm, kinds[g], n, buf);
          if (ci < 0) {
            rc = st_err_set(err, ST_ENOMEM, "out of memory");
            break;
          }
          for (int q = 0; q < n; q++)
            wl_rank_set_comm(wl, buf[q], g, ci);
        }
    }
  /* pipeline pairs */
  for (int s = 0; s + 1 < pp && !rc; s++)
    for (int d = 0; d < dp && !rc; d++)
      for (int t = 0; t < tp && !rc; t++) {
        buf[0] = (s * dp + d) * tp + t;
        buf[1] = ((s + 1) * dp + d) * tp + t;
        char nm[64];
        snprintf(nm, sizeof nm, "pp s%d-s%d d%d t%d", s, s + 1, d, t);
        int ci = wl_comm_add(wl, nm, WL_COMM_PP, 2, buf);
        if (ci < 0) {
          rc = st_err_set(err, ST_ENOMEM, "out of memory");
          break;
        }
        wl_rank_set_comm(wl, buf[0], AG_PP_NEXT, ci);
        wl_rank_set_comm(wl, buf[1], AG_PP_PREV, ci);
      }
  return rc;
}

/* The program of stage s: ga microbatches forward, then backward with the
 * gradient collectives (on stream "dp") after the last one. */
static int build_stage(wl_workload *wl, int s, const as_layer *layers, int nlayers, int kind,
                       int pp, int dp, int tp, int ga, double pp_comm, const int *sizes,
                       tr_import_stats *stats, st_err *err)
{
  int rc = ST_OK;
  static const char *const streams[2] = {"compute", "dp"};
  char pn[32];
  snprintf(pn, sizeof pn, "stage %d", s);
  int pi = wl_program_add(wl, pn, 2, streams);
  if (pi < 0) {
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
    goto done;
  }
  wl_program *p = &wl->programs[pi];
  for (int d = 0; d < dp; d++)
    for (int t = 0; t < tp; t++)
      wl_rank_set(wl, (s * dp + d) * tp + t, pi);
  long last_wg = -1;
#define APPEND(opv, w, nw)                                                                         \
  do {                                                                                             \
    if (wl_program_append(p, &(opv), (w), (nw)) < 0) {                                             \
      rc = st_err_set(err, ST_ENOMEM, "out of memory");                                            \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)
  wl_op mk = wl_op_marker(0, WL_MARK_ITERATION, 0);
  APPEND(mk, NULL, 0);
  for (int mb = 0; mb < ga; mb++) {
    wl_op m = wl_op_marker(0, WL_MARK_MICROBATCH, mb);
    APPEND(m, NULL, 0);
    m = wl_op_marker(0, WL_MARK_PHASE, WL_PHASE_FORWARD);
    APPEND(m, NULL, 0);
    if (s > 0 && pp_comm > 0) {
      wl_op r = wl_op_p2p(0, WL_OP_RECV, AG_PP_PREV, 0, mb, pp_comm);
      r.phase = WL_PHASE_FORWARD;
      APPEND(r, NULL, 0);
      stats->p2p_ops++;
    }
    for (int li = 0; li < nlayers; li++) {
      const as_layer *l = &layers[li];
      wl_op c = wl_op_compute(0, l->comp_ns[0] * 1e-9);
      c.phase = WL_PHASE_FORWARD;
      c.name = wl_program_string(p, l->name);
      APPEND(c, NULL, 0);
      stats->compute_ops++;
      int g = group_of(kind, l, 0, &l->comm[0]);
      if (l->comm[0].coll >= 0 && sizes[g] > 1) {
        wl_op o = wl_op_coll(0, l->comm[0].coll, g, l->comm[0].bytes);
        o.phase = WL_PHASE_FORWARD;
        o.name = c.name;
        APPEND(o, NULL, 0);
        stats->coll_ops++;
      }
    }
    if (s + 1 < pp && pp_comm > 0) {
      wl_op sd = wl_op_p2p(0, WL_OP_SEND, AG_PP_NEXT, 1, mb, pp_comm);
      sd.phase = WL_PHASE_FORWARD;
      APPEND(sd, NULL, 0);
      stats->p2p_ops++;
    }
  }
  for (int mb = 0; mb < ga; mb++) {
    wl_op m = wl_op_marker(0, WL_MARK_PHASE, WL_PHASE_BACKWARD);
    APPEND(m, NULL, 0);
    if (s + 1 < pp && pp_comm > 0) {
      wl_op r = wl_op_p2p(0, WL_OP_RECV, AG_PP_NEXT, 1, 1000000 + mb, pp_comm);
      r.phase = WL_PHASE_BACKWARD;
      APPEND(r, NULL, 0);
      stats->p2p_ops++;
    }
    for (int li = nlayers - 1; li >= 0; li--) {
      const as_layer *l = &layers[li];
      uint32_t nm = wl_program_string(p, l->name);
      wl_op c = wl_op_compute(0, l->comp_ns[1] * 1e-9);
      c.phase = WL_PHASE_BACKWARD;
      c.name = nm;
      APPEND(c, NULL, 0);
      stats->compute_ops++;
      int g = group_of(kind, l, 1, &l->comm[1]);
      if (l->comm[1].coll >= 0 && sizes[g] > 1) {
        wl_op o = wl_op_coll(0, l->comm[1].coll, g, l->comm[1].bytes);
        o.phase = WL_PHASE_BACKWARD;
        o.name = nm;
        APPEND(o, NULL, 0);
        stats->coll_ops++;
      }
      wl_op w = wl_op_compute(0, l->comp_ns[2] * 1e-9);
      w.phase = WL_PHASE_BACKWARD;
      w.name = nm;
      long wi = wl_program_append(p, &w, NULL, 0);
      if (wi < 0) {
        rc = st_err_set(err, ST_ENOMEM, "out of memory");
        goto done;
      }
      stats->compute_ops++;
      g = group_of(kind, l, 2, &l->comm[2]);
      if (mb == ga - 1 && l->comm[2].coll >= 0 && sizes[g] > 1) {
        uint32_t wt = (uint32_t)wi;
        wl_op o = wl_op_coll(1, l->comm[2].coll, g, l->comm[2].bytes);
        o.phase = WL_PHASE_BACKWARD;
        o.name = nm;
        APPEND(o, &wt, 1);
        stats->coll_ops++;
        wl_op u = wl_op_compute(1, l->update_ns * 1e-9);
        u.phase = WL_PHASE_OPTIMIZER;
        u.name = wl_program_string(p, "update delay");
        last_wg = wl_program_append(p, &u, NULL, 0);
        if (last_wg < 0) {
          rc = st_err_set(err, ST_ENOMEM, "out of memory");
          goto done;
        }
      }
    }
    if (s > 0 && pp_comm > 0) {
      wl_op sd = wl_op_p2p(0, WL_OP_SEND, AG_PP_PREV, 0, 1000000 + mb, pp_comm);
      sd.phase = WL_PHASE_BACKWARD;
      APPEND(sd, NULL, 0);
      stats->p2p_ops++;
    }
  }
  /* the step ends when the gradient collectives are done */
  wl_op e = wl_op_marker(0, WL_MARK_PHASE, WL_PHASE_OPTIMIZER);
  uint32_t lw = (uint32_t)last_wg;
  APPEND(e, last_wg >= 0 ? &lw : NULL, last_wg >= 0 ? 1 : 0);
#undef APPEND
done:
  return rc;
}

int tr__astra_import(const char *path, const tr_options *opt, wl_workload **out,
                     tr_import_stats *stats, st_err *err)
{
  char *data;
  size_t len;
  int rc = tr__read_file(path, &data, &len, err);
  if (rc)
    return rc;
  char *cur = data, *line;
  int lineno = 0;
  as_layer *layers = NULL;
  wl_workload *wl = NULL;
  int kind = -1, tp = 0, pp = 1, ep = 1, ga = 1, all_gpus = 0, nlayers = 0;
  double pp_comm = 0;

  as_head h;
  rc = read_header(path, &cur, &lineno, &h, err);
  if (rc)
    goto done;
  kind = h.kind, tp = h.tp, pp = h.pp, ep = h.ep, ga = h.ga, all_gpus = h.all_gpus;
  nlayers = h.nlayers;
  pp_comm = h.pp_comm;
  layers = calloc((size_t)nlayers, sizeof *layers);
  if (!layers) {
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
    goto done;
  }
  int nl = 0;
  static const char *const cols[12] = {"name",    "reserved", "fwd_comp", "fwd_type",
                                       "fwd_bytes", "ig_comp", "ig_type",  "ig_bytes",
                                       "wg_comp", "wg_type",  "wg_bytes", "update_delay"};
  while (nl < nlayers && next_line(&cur, &line)) {
    lineno++;
    char *tok[16];
    int n = split_ws(line, tok, 16);
    if (n == 0)
      continue;
    if (n < 12) {
      rc = st_err_set(err, ST_EINPUT, "trace '%s': line %d: %d columns, expected 12", path,
                      lineno, n);
      goto done;
    }
    as_layer *l = &layers[nl];
    snprintf(l->name, sizeof l->name, "%s", tok[0]);
    for (int ph = 0; ph < 3; ph++) {
      int c = 2 + 3 * ph;
      if ((rc = st_num_parse(tok[c], ST_NUM_REAL, 0, DBL_MAX, &l->comp_ns[ph], err,
                             "trace '%s': line %d: %s", path, lineno, cols[c])) ||
          (rc = st_num_parse(tok[c + 2], ST_NUM_REAL, 0, ST_BYTES_MAX, &l->comm[ph].bytes, err,
                             "trace '%s': line %d: %s", path, lineno, cols[c + 2])))
        goto done;
      if (parse_comm_type(tok[c + 1], &l->comm[ph])) {
        rc = st_err_set(err, ST_EINPUT, "trace '%s': line %d: %s '%s' is unknown", path, lineno,
                        cols[c + 1], tok[c + 1]);
        goto done;
      }
    }
    if ((rc = st_num_parse(tok[11], ST_NUM_REAL, 0, DBL_MAX, &l->update_ns, err,
                           "trace '%s': line %d: update_delay", path, lineno)))
      goto done;
    l->kind = kind;
    if (kind == AK_CUSTOM) {
      l->kind = n > 12 ? kind_from(tok[12]) : -1;
      if (l->kind < 0 || l->kind == AK_CUSTOM) {
        rc = st_err_set(err, ST_EINPUT,
                        "trace '%s': line %d: HYBRID_CUSTOMIZED layer needs its parallelism in "
                        "column 13",
                        path, lineno);
        goto done;
      }
    }
    nl++;
    stats->events_read++;
  }
  if (nl < nlayers) {
    rc = st_err_set(err, ST_EINPUT, "trace '%s': declares %d layers but has %d", path, nlayers,
                    nl);
    goto done;
  }

  /* layout */
  int N = opt && opt->num_gpus > 0 ? opt->num_gpus : all_gpus;
  if (N <= 0) {
    rc = st_err_set(err, ST_EUSAGE, "trace '%s': the GPU count is not in the file: give --gpus N",
                    path);
    goto done;
  }
  if (kind == AK_MODEL || kind == AK_MICRO || kind == AK_DATA || kind == AK_DLRM)
    tp = 1;
  else if (tp <= 0)
    tp = N / pp < 8 ? N / pp : 8; /* no group size given: one 8-GPU package */
  if (tp < 1 || pp < 1 || ep < 1 || ga < 1 || (long)tp * pp > N || N % (tp * pp)) {
    rc = st_err_set(err, ST_EINPUT,
                    "trace '%s': %d GPUs cannot be laid out as tp %d x pp %d (x dp)", path, N, tp,
                    pp);
    goto done;
  }
  int dp = N / (tp * pp);
  if (dp % ep) {
    rc = st_err_set(err, ST_EINPUT, "trace '%s': ep %d does not divide dp %d (%d GPUs)", path, ep,
                    dp, N);
    goto done;
  }
  wl = wl_workload_create(N, AG_COUNT, group_roles);
  int32_t *buf = malloc((size_t)N * sizeof *buf);
  if (!wl || !buf) {
    free(buf);
    rc = st_err_set(err, ST_ENOMEM, "out of memory");
    goto done;
  }
  /* communicators */
  int sizes[AG_COUNT] = {tp * dp, tp, dp, ep, dp / ep, 2, 2};
  rc = add_groups(wl, pp, dp, tp, ep, buf, err);
  free(buf);
  if (rc)
    goto done;

  /* one program per stage */
  for (int s = 0; s < pp && !rc; s++)
    rc = build_stage(wl, s, layers, nlayers, kind, pp, dp, tp, ga, pp_comm, sizes, stats, err);
  if (!rc)
    rc = tr__stats_alloc_ranks(stats, N, err);
  if (!rc)
    rc = tr__finish(wl, "astra", path, err);
done:
  free(layers);
  free(data);
  if (rc) {
    wl_workload_destroy(wl);
    tr_import_stats_release(stats);
    return rc;
  }
  *out = wl;
  return ST_OK;
}
