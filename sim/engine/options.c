/* options.c — engine options, their names, the straggler and variability specs,
 * and nccl-tests' bus-bandwidth factors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static const char *const net_names[SIM_NET_COUNT] = {"ideal", "lv08", "cm02"};

void sim_options_init(sim_options *o)
{
  memset(o, 0, sizeof *o);
  o->net_model = SIM_NET_IDEAL;
  o->fidelity = SIM_FID_FLOW;
  o->link_stats = 1;
  o->record_colls = 1;
  o->fast_colls = 1;
  o->symmetry = 1;
  o->run_ahead = 1;
  o->coll_algo = -1;
  o->coll_proto = -1;
  o->seed = 1;
}

const char *sim_net_model_name(int m) { return m >= 0 && m < SIM_NET_COUNT ? net_names[m] : "?"; }

int sim_net_model_from_name(const char *s)
{
  for (int i = 0; i < SIM_NET_COUNT; i++)
    if (!strcmp(s, net_names[i]))
      return i;
  return -1;
}

double sim_busbw_factor(int op, int n)
{
  if (n <= 1)
    return op == WL_COLL_ALLREDUCE || op == WL_COLL_ALLGATHER || op == WL_COLL_REDUCESCATTER ||
                   op == WL_COLL_ALLTOALL
               ? 0.0
               : 1.0;
  switch (op) {
  case WL_COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
  case WL_COLL_ALLGATHER:
  case WL_COLL_REDUCESCATTER:
  case WL_COLL_ALLTOALL: return (double)(n - 1) / n;
  default: return 1.0;
  }
}

/* A factor after ':' at the end of s: a finite number > 0. */
static int parse_factor(const char *s, double *f)
{
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end || !isfinite(v))
    return -1;
  *f = v;
  return 0;
}

int sim_slow_parse(const char *s, sim_slow *out, st_err *err)
{
  sim_slow x;
  memset(&x, 0, sizeof x);
  snprintf(x.spec, sizeof x.spec, "%s", s);
  const char *eq = strchr(s, '='), *colon = strrchr(s, ':');
  if (!eq || !colon || colon < eq)
    return st_err_set(err, ST_EUSAGE,
                      "--slow '%s' is not gpu=RANK:FACTOR, node=NODE:FACTOR or link=NAME:FACTOR",
                      s);
  size_t klen = (size_t)(eq - s), vlen = (size_t)(colon - eq - 1);
  if (klen == 3 && !strncmp(s, "gpu", 3))
    x.kind = SIM_SLOW_GPU;
  else if (klen == 4 && !strncmp(s, "node", 4))
    x.kind = SIM_SLOW_NODE;
  else if (klen == 4 && !strncmp(s, "link", 4))
    x.kind = SIM_SLOW_LINK;
  else
    return st_err_set(err, ST_EUSAGE, "--slow '%s': '%.*s' is not gpu, node or link", s, (int)klen,
                      s);
  if (vlen == 0)
    return st_err_set(err, ST_EUSAGE, "--slow '%s': the %.*s is missing", s, (int)klen, s);
  if (x.kind == SIM_SLOW_LINK) {
    if (vlen >= sizeof x.link)
      return st_err_set(err, ST_EUSAGE, "--slow '%s': the link name is longer than %zu characters",
                        s, sizeof x.link - 1);
    memcpy(x.link, eq + 1, vlen);
  } else {
    long v = 0;
    for (size_t i = 0; i < vlen; i++) {
      char c = eq[1 + i];
      if (c < '0' || c > '9' || v > 100000000)
        return st_err_set(err, ST_EUSAGE, "--slow '%s': '%.*s' is not a %s number", s, (int)vlen,
                          eq + 1, x.kind == SIM_SLOW_GPU ? "rank" : "node");
      v = v * 10 + (c - '0');
    }
    x.index = (int)v;
  }
  if (parse_factor(colon + 1, &x.factor) || !(x.factor > 0))
    return st_err_set(err, ST_EUSAGE, "--slow '%s': the factor '%s' is not a number greater than 0",
                      s, colon + 1);
  *out = x;
  return ST_OK;
}

int sim_variability_parse(const char *s, sim_options *o, st_err *err)
{
  const char *colon = strchr(s, ':');
  if (!colon || (size_t)(colon - s) != 9 || strncmp(s, "lognormal", 9))
    return st_err_set(err, ST_EUSAGE,
                      "--variability '%s': the distribution is not lognormal (lognormal:SIGMA)", s);
  double sigma;
  if (parse_factor(colon + 1, &sigma) || sigma < 0 || sigma > 10)
    return st_err_set(err, ST_EUSAGE,
                      "--variability '%s': sigma '%s' is not a number from 0 to 10", s, colon + 1);
  o->var_kind = SIM_VAR_LOGNORMAL;
  o->var_sigma = sigma;
  return ST_OK;
}

int sim_options_stragglers(const sim_options *o)
{
  return o->num_slow > 0 || (o->var_kind != SIM_VAR_NONE && o->var_sigma > 0);
}
