/* eng_int.h — internals of the replay engine shared between its files
 * (sim/engine/); nothing outside the engine includes it.
 *
 * Names: eng__ for everything declared here, static names inside a file.
 * The engine's state is one struct, eng__E, defined in engine.c: sim_run()
 * fills it, the actors read and change it, sim_run() releases it.  SimGrid
 * runs one actor at a time, so nothing in it needs a lock.
 */
#ifndef SIM_ENG_INT_H
#define SIM_ENG_INT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <simgrid/engine.h>
#include <simgrid/forward.h>

#include "coll.h"
#include "sim.h"

/* ---- hash map (map.c) ----------------------------------------------------
 * Open addressing from a non-zero 64-bit key to a pointer.  Deterministic
 * (no random seed); grows at 50% load. */
typedef struct eng__map {
  uint64_t *keys;
  void **vals;
  size_t cap, len;
} eng__map;

void eng__map_init(eng__map *m);
void eng__map_release(eng__map *m);
void *eng__map_get(const eng__map *m, uint64_t key);
/* Returns 0, or -1 when out of memory. */
int eng__map_put(eng__map *m, uint64_t key, void *val);

/* Mix several small integers into a non-zero key. */
static inline uint64_t eng__key4(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  uint64_t v[4] = {a, b, c, d};
  for (int i = 0; i < 4; i++) {
    h ^= v[i] + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
  }
  return h ? h : 1;
}

/* ---- rank classes (sym.c) -----------------------------------------------
 * Ranks that are copies of each other on isomorphic, disjoint links: one of
 * each class is simulated and the others take its timings (sym.c's
 * header gives the conditions, all checked). */

typedef struct eng__sym {
  int on;               /* the reduction is used */
  int role;             /* role whose groups define the classes */
  int virt;             /* the groups are the nodes of the role's groups (sym.c) */
  int C;                /* classes (1 = none) */
  int simulated;        /* ranks simulated */
  int32_t *cls;         /* rank -> class: its member index in its group */
  int32_t *grp;         /* rank -> its group */
  int32_t *gmem;        /* [group * C + i]: the group's member i */
  int32_t *comm_img;    /* [c0 * C + k]: class k's copy of class-0 communicator c0, or -1 */
  uint8_t *comm_collapse; /* communicator is one of role's groups */
  uint8_t *comm_multi;  /* quotient fabric: a communicator with class-0 members and others,
                           not inside one group (sym_quot.c) */
  uint32_t *link_img;   /* [l * C + k]: phi_k(l) for a class-0 link, or UINT32_MAX */
  uint32_t *link_src;   /* link -> the class-0 link it copies (itself for class 0) */
  int8_t *link_cls;     /* scratch: class whose traffic uses the link, -1 none */
  uint16_t *fixed_cnt;  /* scratch: classes k >= 1 whose copy of a class-0 link is itself */
  uint8_t *link_fixed;  /* shared link every class crosses: simulated at 1/C capacity */
  size_t fixed;         /* such links */
  int32_t *live;        /* per communicator: members simulated */
  /* the quotient fabric (sym_quot.c): the classes' group acts on the links
   * too, each orbit of links is simulated as one */
  int quotient;         /* the R groups' collectives run as their member 0's flows */
  int q, nb;            /* members of an R group per node, and its nodes */
  int twist;            /* node shifts reflect the places inside a node (sym_quot.c) */
  int rad;              /* 0, or the places shift as two digits, rad and q / rad (sym_quot.c) */
  int32_t *ginv;        /* [k]: the translation inverse to translation k */
  uint32_t *canon;      /* link -> the link standing for its orbit (UINT32_MAX: unused) */
  uint32_t *orb_size;   /* link -> the size of its orbit */
  uint32_t *orb_next;   /* link -> the next link of its orbit (a cycle) */
  double *bw_scale;     /* link -> reported bandwidth / simulated bandwidth, or NULL */
  uint8_t *img_first;   /* [c * C + k]: k is the first translation giving comm_img[c * C + k] */
  int32_t *img_count;   /* per communicator: its distinct images (itself included) */
  size_t orbits, scaled; /* orbits of used links; links simulated at |orbit|/C */
  char desc[200];       /* what was used, or "none (why)" */
} eng__sym;

/* What the analysis needs from the engine. */
typedef struct eng__sym_env {
  const wl_workload *wl;
  const uint8_t *comm_fast; /* per communicator: its links carry nothing else */
  const int32_t *member;    /* [rank * num_roles + role]: member index */
  size_t num_links;
  const double *link_bw;
  const uint8_t *link_shared;
  const int32_t *rank_group; /* node groups: each rank's group, or NULL */
  /* route between two GPUs: link indices (valid until the next call), count, latency */
  const uint32_t *(*route)(void *u, int src, int dst, uint32_t *n, double *lat_s);
  /* call fn on every flow of communicator c's (op, bytes, root) instance; 0 or ST_ENOMEM */
  int (*walk)(void *u, int c, int op, double bytes, int root, void (*fn)(void *, int, int),
              void *fn_u);
  /* whether that instance has a closed form */
  int (*closed)(void *u, int c, int op, double bytes, int root);
  /* member m's rounds of that instance (sched); 0 or ST_ENOMEM */
  int (*plan)(void *u, int c, int op, double bytes, int root, int m, coll_sched *sched);
  int gpus_per_node;        /* rank r runs on GPU r, node r / gpus_per_node */
  const char *no_quotient;  /* why the quotient fabric cannot be used, or NULL */
  void *u;
} eng__sym_env;

/* Returns 0 (s->on says whether the reduction applies; s->desc why not) or
 * ST_ENOMEM.  Release with eng__sym_release. */
int eng__sym_prepare(eng__sym *s, const eng__sym_env *env);
void eng__sym_release(eng__sym *s);
/* sym.c's pieces the quotient analysis (sym_quot.c) shares */
void eng__sym_why(eng__sym *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int eng__seen_first(eng__map *m, st_arena *ar, uint64_t a, uint64_t b, uint64_t c, uint64_t d);
/* The quotient analysis of role s->role (classes filled, conditions 1 and 2
 * checked): 1 when it holds, 0 (and why) when not, or ST_ENOMEM (negative). */
int eng__sym_quotient(eng__sym *s, const eng__sym_env *env);
int eng__sym_img(const eng__sym *s, const wl_workload *wl, int r0, int k);
/* The representative of rank r (member 0 of its group), once the groups are
 * filled, during the analysis too (eng__sym_rep answers only when in use). */
static inline int eng__sym_rep_of(const eng__sym *s, int r)
{
  return s->gmem[(size_t)s->grp[r] * s->C];
}
/* Any rank under translation k of the quotient fabric's group (sym_quot.c). */
int eng__sym_act(const eng__sym *s, int r, int k);
int eng__sym_rep(const eng__sym *s, const wl_workload *wl, int r);
void eng__sym_expand_ranks(const eng__sym *s, const wl_workload *wl, sim_rank_stats *ranks);
int eng__sym_expand_colls(const eng__sym *s, const wl_workload *wl, sim_coll_record **recs,
                          size_t *n);
int eng__sym_expand_timeline(const eng__sym *s, const wl_workload *wl, sim_timeline_row **rows,
                             size_t *n);


/* ---- the engine's state -------------------------------------------------- */

/* Actors blocked until some state changes: each waits on its own semaphore
 * and the actor that changes the state releases every waiter's semaphore
 * (they re-check and may block again).  A semaphore remembers a release
 * that comes before the acquire is processed, so no wake-up is lost even
 * when both happen in the same scheduling round (suspend/resume can lose
 * one there). */
struct eng__actor;
typedef struct eng__waitq {
  struct eng__actor **a;
  int n, cap;
} eng__waitq;

/* One planned piece of a run-ahead chain: a compute run (ops k..k2 of the
 * stream) or a closed-form collective (k == k2): arrival t0, transfer start
 * ts (collective), end t1. */
typedef struct eng__seg {
  uint32_t k, k2;
  uint8_t coll;
  double t0, ts, t1;
  double total, modelled; /* compute run: duration, and its modelled share */
  struct eng__memo *mm;   /* collective: its memo (choice, closed form) */
} eng__seg;

typedef struct eng__rank {
  uint32_t *done;       /* ops completed per stream of the rank's program */
  eng__waitq wq;        /* streams waiting for another stream of this rank */
  int waiters;
  int n_compute, n_xfer, n_bubble;
  int n_offload;        /* copies to or from host memory and host compute running */
  int n_xpod; /* of n_xfer, transfers that cross pods (design note 5) */
  double last_t;
  /* A stream running ahead (design note 7): its planned segments stand in
   * for its counters until ahead_end; a transfer of another stream starting
   * before then interrupts it. */
  const eng__seg *ahead;
  int ahead_n, ahead_pos, interrupted;
  double ahead_end;
  struct eng__actor *ahead_actor;
  int first_actor, n_actors; /* its streams' actors in eng__E.actors */
} eng__rank;

typedef struct eng__comm {
  uint64_t gen;         /* instances started */
  uint64_t done_gen;    /* instances completed */
  int arrived, pending;
  int op;               /* op of the instance being assembled */
  coll_choice ch;       /* algorithm, protocol, channels chosen for it */
  coll_layout lay;      /* members by node (built at the first instance) */
  int have_lay;
  double bytes;
  int first_rank;       /* rank that arrived first (for mismatch messages) */
  const wl_op *first_op; /* its op (messages name it: eng__op_where) */
  double first_arrival, start;
  uint64_t *arrived_gen; /* per member: gen+1 when it arrived at instance gen */
  eng__waitq wq;
  int have_ring_lat;    /* ring_lat_max computed */
  double ring_lat_max;  /* largest route latency between ring neighbours */
  int fast;             /* its links carry no other traffic (closed form allowed) */
  double fast_end;      /* closed-form end of the current instance, or < 0 */
  double busy_until;    /* end of the last closed-form instance */
  const plat_cluster *view; /* node groups: the cluster as its members see it together
                               (plat_cluster_view), made at its first instance */
  /* the quotient fabric's communicators with several class-0 members
   * (collective.c): transfers between a class-0 member and another's image */
  eng__map vts;         /* (round, sender, receiver) -> eng__vt */
  int32_t *vpend;       /* per member: such transfers it posted first, not ended yet */
  eng__waitq *vwq;      /* per member: waiting for them */
} eng__comm;

typedef struct eng__p2p {
  int32_t comm, src, dst, tag; /* the tuple (members) */
  int here[2];                 /* sender, receiver waiting */
  uint64_t gen;
  double first_arrival, start, bytes;
  int first_rank;              /* the side that waits, and its op (messages) */
  const wl_op *first_op;
  eng__waitq wq;
  sg_mailbox_t mb;
} eng__p2p;

typedef struct eng__route {
  int32_t src, dst;
  uint32_t n;
  uint32_t *links; /* link indices */
  double lat_s;    /* route latency */
  double bw_Bps;   /* smallest link bandwidth */
} eng__route;

/* One (link, communicator, op) with the bytes its flows put on the link. */
typedef struct eng__usage {
  uint32_t link;
  int32_t comm;
  uint8_t kind, op, used;
  double bytes;
} eng__usage;

typedef struct eng__actor {
  int rank, stream;
  const uint32_t *ops; /* op indices of this stream in program order */
  uint32_t num_ops;
  coll_sched sched;    /* scratch for collective schedules */
  sg_sem_t sem;        /* this actor's wake-up semaphore */
  uint32_t cur;        /* op index being run (for deadlock reports) */
  int64_t waiting_for; /* op index of another stream it waits for, or -1 */
  int wait_stream;     /* ... on this stream, */
  uint32_t wait_pos;   /* ... at this position in it */
  eng__seg *segs;      /* run-ahead plan (design note 7) */
  size_t cap_segs;
  int finished;        /* its last op is done */
} eng__actor;

typedef struct eng__prog {
  uint32_t **stream_ops;  /* per stream: op indices */
  uint32_t *stream_len;
  uint32_t *pos;          /* per op: position within its stream */
  uint8_t *is_target;     /* per op: some op of another stream waits on it */
  double *dur;            /* per op: compute time on the cluster's device (priced once
                             per program, not once per rank), else 0; unused with groups */
  double **gdur;          /* node groups: per group, the same on its device (NULL for a
                             group that runs no rank of the program); NULL without groups */
  uint32_t *role_streams; /* per role: bit s set when ops of stream s play it
                             (all bits when the program has over 32 streams) */
  uint32_t *iter;         /* per op: its iteration (design note 8), or NULL without variability */
} eng__prog;

/* What an instance's (communicator, op, bytes, root, splits) decides once
 * for all its instances: the tuner's choice, and the closed-form duration
 * (both depend on nothing else: not on time, not on other traffic). */
typedef struct eng__memo {
  int32_t comm, root;
  uint16_t op, splits;
  double bytes;
  coll_choice ch;
  double T; /* closed-form duration, < 0 none, NAN not computed yet */
} eng__memo;

typedef struct eng__state {
  const wl_workload *wl;
  const plat_cluster *cl;  /* the caller's cluster, or cl_host */
  plat_cluster cl_host;    /* with copies to host memory: the caller's with host_memory on
                              (pointers borrowed) */
  int host_use;            /* wl_workload_host_use() of the workload */
  const sim_options *opt;
  sg_host_t *hosts;
  eng__rank *ranks;
  eng__comm *comms;
  int32_t *member;        /* [rank * num_roles + role] member index */
  eng__prog *progs;
  eng__map mailboxes, p2ps;
  st_arena arena;
  sim_result *res;
  size_t cap_colls, cap_timeline;
  int used;               /* sim_run() has run: SimGrid allows one engine per process */
  int failed;
  st_err *err;
  int actors_total, actors_done;
  eng__actor **actors;    /* to release their scratch */
  uint64_t ops_total, ops_done;
  eng__map memo;          /* (comm, op, bytes, root) -> eng__memo */
  eng__map link_index;    /* sg_link_t -> index + 1 */
  eng__map routes;        /* (src gpu, dst gpu) -> eng__route */
  double *link_bytes;     /* bytes each link carried (exact, per flow), or NULL */
  double *link_bw;        /* bandwidth of each link */
  uint8_t *link_shared;   /* 0 for FATPIPE links (no sharing) */
  size_t num_links;
  uint64_t fast_instances;
  eng__usage *usage;      /* (link, comm, op) -> bytes; open addressing, grows at 50% */
  size_t usage_cap, usage_len;
  int progress_on, progress_shown;
  struct timespec wall0;
  double last_progress;
  uint64_t events;
  double overlap_slowdown; /* plat_compute_overlap_factor() - 1 for the cluster's device */
  double *group_slowdown;  /* node groups: the same per group; NULL without groups */
  int32_t *rank_group;     /* node groups: each rank's (its GPU's) group; NULL without */
  uint8_t *comm_xpod;      /* pods: per communicator, its members span pods; NULL without */
  double *pod_out_bytes;   /* pods: bytes out of / into each pod over its data-centre links */
  double *pod_in_bytes;
  eng__sym sym;           /* rank classes (sym.c); sym.on when used */
  double *class_bytes;    /* with sym.on: bytes of class-0 flows per link, copied to the
                             images after the run (the groups' closed forms count all) */
  double *cfactor;        /* [rank * n_iter + iteration]: compute time multiplier (design
                             note 8, slow.c), or NULL: none */
  int n_iter;
  char slow_why[120];     /* why compute factors rule rank classes out, or "" */
  char dummy_payload;
} eng__state;

extern eng__state eng__E;

static inline double eng__now(void) { return simgrid_get_clock(); }

/* The compute time of op opi of rank's program: its priced time, times the
 * rank's factor in the op's iteration when there are stragglers (slow.c). */
static inline double eng__op_dur(int rank, const eng__prog *pi, uint32_t opi)
{
  double d = eng__E.rank_group ? pi->gdur[eng__E.rank_group[rank]][opi] : pi->dur[opi];
  if (eng__E.cfactor)
    d *= eng__E.cfactor[(size_t)rank * (size_t)eng__E.n_iter + (pi->iter ? pi->iter[opi] : 0)];
  return d;
}

/* The compute stretch per overlapped second of rank's device. */
static inline double eng__overlap_slowdown(int rank)
{
  return eng__E.rank_group ? eng__E.group_slowdown[eng__E.rank_group[rank]] : eng__E.overlap_slowdown;
}

/* ---- engine.c ------------------------------------------------------------ */

/* The run fails with code and msg (the first failure is kept). */
void eng__fail(int code, const char *msg);

/* ---- acct.c -------------------------------------------------------------- */

/* Account the rank's time since its last change to one bucket (design note
 * 5), then apply the deltas to its streams computing, transferring and
 * waiting for a pipeline peer. */
void eng__acct(int rank, int dc, int dx, int db);
/* A copy to or from host memory, or host compute, of the rank starts (+1)
 * or ends (-1): the accounting (offload time, exposed when nothing else
 * runs) as eng__acct. */
void eng__acct_offload(int rank, int d);
/* Transfers of the rank running now, a running-ahead stream's included. */
int eng__xfer_now(int rank);
/* A transfer of rank's starts; xpod: it crosses pods.  (The accounting up
 * to now, then one more transfer running.) */
void eng__xfer_start(int rank, int xpod);
/* A transfer of rank's that started at start on communicator cm ends (xpod:
 * it crossed pods): the accounting, and its time on cm's kind. */
void eng__xfer_end(int rank, const wl_comm *cm, double start, int xpod);
/* One timeline row (when the options record them). */
void eng__timeline_add(int rank, const wl_op *op, uint32_t opi, double t0, double t1);
/* A new collective record (zeroed), or NULL when the options record none or
 * out of memory. */
sim_coll_record *eng__coll_record_new(void);
/* One collective record (when the options record them). */
void eng__coll_record_add(int c, const eng__comm *cs, int opk, int n, double bytes,
                          double first, double start, double end);

/* ---- actors.c ------------------------------------------------------------ */

/* Start the stream actors (design note 1).  0, or an error set in err. */
int eng__actors_start(st_err *err);
/* Wait on q until woken (the caller re-checks what it waits for). */
void eng__wq_wait(eng__waitq *q);
/* Wake every waiter of q. */
void eng__wq_wake(eng__waitq *q);
void eng__wq_release(eng__waitq *q);
/* n more ops of the rank's stream are done: wake the streams waiting for it. */
void eng__stream_progress(int rank, int stream, uint32_t n);

/* ---- compute.c ----------------------------------------------------------- */

/* The compute run starting at stream position k: up to the next op another
 * stream waits on, or the next op that itself waits or is not compute.
 * Returns its last position; *total its time, *modelled the share the
 * compute model priced; phase times are charged when charge_phase. */
uint32_t eng__compute_run_end(const eng__actor *a, int rank, const wl_program *p,
                              const eng__prog *pi, uint32_t k, double *total, double *modelled,
                              int charge_phase);
/* A compute run k..k2 that began at t0 after its first wait (of `slept`
 * seconds; ov0 the rank's overlapped time when that wait began): the
 * overlap stretch, its rows and phase times, and the stream's progress. */
void eng__compute_run_tail(eng__actor *a, int rank, const wl_program *p, const eng__prog *pi,
                           uint32_t k, uint32_t k2, double t0, double total, double modelled,
                           double ov0, double slept);
/* Run the compute ops from stream position k; returns the position to go
 * on from. */
uint32_t eng__compute_run(eng__actor *a, int rank, const wl_program *p, const eng__prog *pi,
                          uint32_t k);

/* ---- chain.c ------------------------------------------------------------- */

/* With rank classes and running ahead: when stream position k (its waits
 * met) starts a chain worth running ahead, run it, set *k to the position
 * to go on from and return 1; else 0. */
int eng__chain_try(eng__actor *a, int rank, const wl_program *p, const eng__prog *pi, uint32_t *k);

/* ---- collective.c -------------------------------------------------------- */

/* What a communicator's route-latency callback needs. */
typedef struct eng__route_ctx {
  const int32_t *ranks;
} eng__route_ctx;

/* What every instance of communicator c needs, built at its first: the
 * largest ring-neighbour latency and the members' layout.  0 or ST_ENOMEM. */
int eng__comm_prepare(int c, eng__comm *cs);
/* The algorithm context of communicator c's current instance (rc: the
 * storage its route-latency callback reads). */
void eng__coll_ctx_fill(int c, eng__comm *cs, coll_ctx *ctx, eng__route_ctx *rc);
/* The collective op of rank's stream (design note 3). */
void eng__run_coll(int rank, const wl_program *p, const wl_op *op, coll_sched *sched);

/* ---- closed.c ------------------------------------------------------------ */

/* One distinct collective a communicator runs. */
typedef struct eng__tuple {
  int32_t comm;
  uint8_t op;
  int32_t root;
  double bytes;
} eng__tuple;

/* Mark the communicators whose links carry nothing else (eng__comm.fast).
 * 0, or an error set in err. */
int eng__fast_prepare(st_err *err);
/* Plan every member of communicator c for one tuple and call fn on each
 * flow (source and destination GPU); 0, or ST_ENOMEM. */
int eng__fast_walk_flows(int c, const eng__tuple *t, coll_sched *sched,
                         void (*fn)(void *u, int src_gpu, int dst_gpu), void *u);
/* The closed-form duration of the instance assembled on c, or < 0 when it
 * must be simulated; with account, its flows' bytes go on their links. */
double eng__fast_duration(int c, eng__comm *cs, const wl_op *op, coll_sched *sched,
                          int account);
/* The memo of the instance assembled on c (made at its first); NULL when
 * out of memory. */
eng__memo *eng__memo_get(int c, eng__comm *cs, const wl_op *op);

/* ---- copy.c -------------------------------------------------------------- */

/* The copy op of rank's stream: one flow between its GPU and its node's
 * host memory. */
void eng__run_copy(int rank, const wl_op *op);

/* ---- p2p.c --------------------------------------------------------------- */

/* The send or recv op of rank's stream (design note 4). */
void eng__run_p2p(int rank, const wl_op *op);

/* ---- links.c ------------------------------------------------------------- */

/* Index the platform's links (bandwidth, sharing) and, when track, count
 * their bytes and have SimGrid track their load.  0 or ST_ENOMEM. */
int eng__links_index(int track);
/* The route between two GPUs as link indices, latency and bottleneck
 * bandwidth, cached per pair.  NULL only when out of memory. */
eng__route *eng__route_get(int src_gpu, int dst_gpu);
/* Add a flow's bytes to every link of its route, and to the link's share
 * of communicator comm's op (kind: WL_OP_COLL or WL_OP_SEND). */
void eng__account_flow(int src_gpu, int dst_gpu, double bytes, int comm, int kind, int op);
/* A copy's bytes on every link of its route (endpoints: a GPU and a host
 * memory, plat_host_endpoint); no communicator share. */
void eng__account_copy(int src, int dst, double bytes);
/* After the run, with rank classes: class 0's bytes and usage copied to
 * the other classes' links. */
void eng__links_expand_classes(void);
/* The result's links (those that carried bytes) and their usage. */
void eng__links_collect(void);

/* ---- deadlock.c ---------------------------------------------------------- */

/* The run ended with streams unfinished: fail with what they were stuck on
 * (design note 6). */
void eng__describe_deadlock(void);
/* "op 6 'grad_norm' of program 'stage0'": which op of rank's program op is,
 * for the messages of a run that failed (deadlock.c). */
const char *eng__op_where(int rank, const wl_op *op, char *buf, size_t n);

/* ---- slow.c -------------------------------------------------------------- */

/* Check the --slow ranks and nodes against the workload and build the
 * compute factors (design note 8).  0, or an error set in err. */
int eng__slow_setup(st_err *err);
/* Give the --slow links their slowed bandwidth in SimGrid, before the links
 * are indexed.  0, or an error naming an unknown link. */
int eng__slow_links(st_err *err);

/* ---- sym_env.c ----------------------------------------------------------- */

/* Find the rank classes (eng__E.sym), or say why there are none.  0, or an
 * error set in err. */
int eng__sym_setup(st_err *err);

#endif
