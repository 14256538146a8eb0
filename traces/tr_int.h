/* tr_int.h — helpers shared by the importers (internal to traces/).
 *
 * Each importer lives in tr_<format>.c (Kineto and Chakra read in
 * tr_<format>_read.c, their shared names below) and exports one tr__<format>_import()
 * listed in traces.c's table.  Errors all start with "trace '<file>': " so a
 * person sees which file was bad before what was wrong in it.
 */
#ifndef TR_INT_H
#define TR_INT_H

#include <stddef.h>

#include "traces.h"

int tr__kineto_import(const char *path, const tr_options *opt, wl_workload **out,
                      tr_import_stats *stats, st_err *err);
int tr__chakra_import(const char *path, const tr_options *opt, wl_workload **out,
                      tr_import_stats *stats, st_err *err);
int tr__astra_import(const char *path, const tr_options *opt, wl_workload **out,
                     tr_import_stats *stats, st_err *err);
int tr__smpi_import(const char *path, const tr_options *opt, wl_workload **out,
                    tr_import_stats *stats, st_err *err);

/* Read a whole (possibly gzip) file; on error the message reads
 * "trace '<path>': ..." . */
int tr__read_file(const char *path, char **data, size_t *len, st_err *err);

/* Set stats->rank_measured_s, rank_start_s, rank_compute_s and rank_comm_s to
 * n entries of NAN, and rank_source to 0..n-1 (owned by stats). */
int tr__stats_alloc_ranks(tr_import_stats *stats, int n, st_err *err);

/* A workload of n ranks with one role, "world", played by one communicator
 * of all ranks (the importers whose traces name no process groups).  NULL
 * and err set when out of memory. */
wl_workload *tr__world_workload(int n, st_err *err);

/* The common end of an import: meta.source = "FORMAT:PATH", then the
 * workload is checked; a failure names the trace. */
int tr__finish(wl_workload *wl, const char *format, const char *path, st_err *err);

/* Give every rank of wl without a program (rank_program -1) the program of a
 * given rank and its communicators (tr_scale.c: the rule); st->rank_source
 * and rank_start_s follow (st may be NULL).  ST_EINPUT naming the trace,
 * the rank and the group when a group cannot be placed. */
int tr__spmd_fill(wl_workload *wl, tr_import_stats *st, const char *trace, st_err *err);

/* ---- Kineto importer (tr_kineto_read.c reads, tr_kineto.c builds) ------- */

typedef struct cJSON cJSON;

/* Two timestamps closer than this (microseconds) are taken as the same
 * instant when matching a start to an end (Kineto rounds to 1 us). */
#define KT_EPS_US 1.0

enum { KG_KERNEL = 0, KG_MEMCPY, KG_MEMSET };

typedef struct kt_gpu {
  double ts, end;   /* microseconds */
  long corr;        /* correlation id, -1 if none */
  long index;       /* event index in traceEvents */
  int tid;          /* CUDA stream */
  int stream;       /* workload stream index */
  int kind;         /* KG_* */
  int nccl;         /* wl_coll_op + 1 for an NCCL kernel, 0 otherwise; -1 SendRecv */
  const cJSON *ev;
  long op;          /* op index in the program, once appended */
} kt_gpu;

typedef struct kt_rt {
  double ts, end;
  long corr;
  int sync;
} kt_rt;

typedef struct kt_pg {
  char *name;
  char desc[64]; /* pg_desc, or "" */
  int size;
  int32_t *ranks;
} kt_pg;

typedef struct kt_file {
  char *path;
  char *data;
  cJSON *root;
  int rank, world;
  double cpu_pid;
  int step_n;
  double step_ts, step_end;
  kt_gpu *gpu;
  size_t ngpu;
  kt_rt *rt;
  size_t nrt;
  int *tids; /* distinct CUDA streams, ascending */
  int ntids;
  char device[64]; /* deviceProperties name of the GPU the kernels ran on, or "" */
} kt_file;

typedef struct kt_ctx {
  const tr_options *opt;
  tr_import_stats *stats;
  st_err *err;
  kt_file *files;
  int nfiles;
  kt_pg *pgs;
  int npgs;
  /* execution traces, loaded on demand */
  int et_loaded;
  char **et_paths;
  cJSON **et_roots;
  double *et_pids;
  size_t net;
} kt_ctx;
typedef struct kt_etcoll {
  int op;        /* wl_coll_op */
  double bytes;  /* input bytes */
  double *split; /* per-peer input split sizes (units of rows), or NULL */
  int nsplit;
  double split_sum;
  char pg[64];
} kt_etcoll;


/* A number at ev[key], also when written as a string: 0, -1 when missing,
 * -2 when not a number. */
int tr__kt_ev_number(const cJSON *ev, const char *key, double *v);
/* The string at o[key], or NULL. */
const char *tr__kt_str_item(const cJSON *o, const char *key);
/* Collective op from a name used by PyTorch/ET/args ("allreduce",
 * "all_to_allv", "_allgather_base", ...).  Returns wl_coll_op, -2 for
 * point-to-point, -3 for "wait", -1 if unknown. */
int tr__kt_coll_from_torch_name(const char *s);
/* The runtime call that launched correlation id corr (f->rt sorted by
 * correlation), or NULL. */
const kt_rt *tr__kt_find_launch(const kt_file *f, long corr);
/* A list of whole numbers in [0, hi]: a JSON array, or a string as PyTorch
 * writes one ("[0, 1, 2]"; spaces alone also separate).  *out holds *n
 * values (caller frees).  Errors name `what` (file, place and key) and the
 * entry; nothing is skipped and no sign is dropped. */
int tr__kt_parse_int_list(const cJSON *x, double hi, const char *what, double **out, int *n,
                          st_err *err);
/* Ranks of a process group: tr__kt_parse_int_list in [0, INT32_MAX], as int32. */
int tr__kt_parse_ranks(const cJSON *x, const char *what, int32_t **out, int *n, st_err *err);
/* Index of process group `name` in c->pgs, added when new; < 0 on error
 * (other ranks than an earlier file gave it, out of memory). */
int tr__kt_pg_add(kt_ctx *c, const kt_file *f, const char *name, const int32_t *ranks, int n,
                  const char *desc);
/* Read f->path: rank, world, process groups, and the chosen step's GPU ops
 * (sorted by start, streams numbered) and runtime calls. */
int tr__kt_read_file(kt_ctx *c, kt_file *f);
/* Load the host execution traces once: from --et, else beside the Kineto
 * files or in a sibling folder "et". */
int tr__kt_et_load(kt_ctx *c);
/* Collectives of one ET in node order (record_param_comms, waits left out). */
int tr__kt_et_collectives(kt_ctx *c, size_t which, kt_etcoll **out, int *count);
void tr__kt_etcoll_free(kt_etcoll *v, int n);

/* ---- Chakra importer (tr_chakra_read.c reads, tr_chakra.c builds) ------- */


enum {
  CK_INVALID = 0,
  CK_METADATA = 1,
  CK_MEM_LOAD = 2,
  CK_MEM_STORE = 3,
  CK_COMP = 4,
  CK_SEND = 5,
  CK_RECV = 6,
  CK_COLL = 7,
};

typedef struct ck_node {
  uint64_t id;
  int type;
  int cpu;
  long tid;      /* -1 if absent */
  int comm_type; /* -1 if absent */
  double comm_size, num_ops, tensor_size;
  long src, dst, tag;
  double dur_us, start_us;
  int inv_len;       /* entries of involved_dim, -1 if absent */
  uint32_t inv_mask; /* bit d: dimension d involved */
  char *name;
  uint64_t *data;
  uint8_t *drop;   /* per data dependency: dropped (dangling, self or repeated);
                      a flag, not a marker id: every uint64 is a valid node id */
  size_t ndata;
  uint64_t *ctrl;
  size_t nctrl;
  int stream;
  long op;   /* op index once appended, -1 if not replayed */
  long pos;  /* position in the order */
  int indeg;
} ck_node;

typedef struct ck_rank {
  ck_node *nodes;
  size_t n;
  size_t *by_id; /* node indices sorted by id */
} ck_rank;


/* Read one rank's .et file into r (nodes sorted by id in r->by_id); counts
 * into stats. */
int tr__ck_read_rank(const char *path, ck_rank *r, tr_import_stats *stats, st_err *err);
void tr__ck_rank_release(ck_rank *r);
/* Index in r->nodes of the node with this id, or -1. */
long tr__ck_find_node(const ck_rank *r, uint64_t id);
/* Topological order of the data dependencies; returns node indices. */
int tr__ck_order_nodes(ck_rank *r, size_t **order_out, tr_import_stats *stats, st_err *err);

#endif
