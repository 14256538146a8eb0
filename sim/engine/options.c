/* options.c — engine options, their names, and nccl-tests' bus-bandwidth factors. */
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
