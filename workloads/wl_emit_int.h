/* wl_emit_int.h — the generator's emission state and the functions its
 * sources share: wl_gen.c (the stage's program, the DP buckets, the
 * communicators), wl_gen_emit.c (ops and TP linear layers), wl_gen_layer.c
 * (attention, MLP, MoE, one transformer layer, embedding and output) and
 * wl_gen_zero.c (ZeRO-3: Megatron's FSDP and the frameworks' dp_impl).  Not
 * part of the public interface. */
#ifndef WL_EMIT_INT_H
#define WL_EMIT_INT_H

#include <stdint.h>

#include "wl_gen_int.h"
#include "workload.h"

/* R_ETP (the expert-TP group) is last: a workload has it only when the
 * layout's etp differs from tp (otherwise the expert-TP group is the TP group
 * and the workload keeps the roles it always had) */
enum { R_TP, R_DP, R_DPX, R_EP, R_CP, R_PPN, R_PPP, R_EMBD, R_ETP, R_COUNT };
/* S_HOST (the frameworks' hooks on the CPU) comes after the first six: a
 * workload has it only when dp_impl is not megatron, so older layouts keep
 * their streams; the offload streams (copies to and from host memory, the
 * optimizer step on the CPU) follow it, only with offload */
enum { S_COMPUTE, S_TP, S_DP, S_PPS, S_PPR, S_CP, S_HOST, S_D2H, S_H2D, S_CPU, S_OFF_ALL };
#define S_COUNT S_HOST
#define S_ALL S_D2H
/* moe_a2a_overlap's stream of the expert all-to-alls takes the seventh place:
 * it needs dp_impl=megatron, so its workloads have no host stream */
#define S_EP S_HOST

/* moe_a2a_overlap: the part of a transformer layer being emitted, as
 * Megatron-core's fine-grained schedule splits it (the combined 1F1B's
 * nodes): forward attention to the router and the permutation (WL_PT_PRE),
 * the dispatch all-to-all, the experts (WL_PT_MLP), the combine all-to-all
 * and what follows it (WL_PT_POST); backward the same in reverse, the
 * experts' weight gradients apart (WL_PT_DW, delay_wgrad_compute).  0: the
 * whole layer. */
enum {
  WL_PT_PRE = 1 << 0,
  WL_PT_DISPATCH = 1 << 1,
  WL_PT_MLP = 1 << 2,
  WL_PT_DW = 1 << 3,
  WL_PT_COMBINE = 1 << 4,
  WL_PT_POST = 1 << 5
};

#define MAXPEND 16

/* DP gradient groups of one model chunk, in backward order. */
typedef struct wl__dp_group {
  double dense, expert; /* parameters per rank */
  int layer;            /* 1: a transformer layer's (fp8 under fp8_param_gather) */
  int close_dense;      /* 1: the dense bucket closes after this group */
  int close_expert;
  double bucket_dense, bucket_expert; /* size of the bucket closing here */
  long ag_dense, ag_expert;           /* overlapped param all-gather to wait for, or -1 */
} wl__dp_group;

typedef struct wl__gen {
  const wl_model *m;
  const wl_layout *l;
  wl_workload *wl;
  wl_program *p;
  /* the names the current program has interned (wl__nm): a generated
   * program has a few dozen distinct op names for thousands of ops, and
   * wl_program_string scans back for each; direct-mapped by hash, emptied
   * when a program starts */
#define WL__NM_SLOTS 256
  uint32_t nm_off[WL__NM_SLOTS];
  uint32_t nm_hash[WL__NM_SLOTS];
  int stage, oom;
  char bad[ST_ERR_MSG_MAX / 2]; /* the first op whose numbers do not fit, or "" */
  /* shapes */
  double b, s, sl, T, Tsp, h, t; /* micro-batch, seq, local seq (s/cp), tokens, SP tokens */
  int win; /* the attention window of the layer being emitted (wl_model_layer_window); 0 full */
  double ab, gb, pb;             /* activation, gradient, parameter bytes */
  double cf;                     /* MoE capacity factor (1 when dropless) */
  int gemm_dtype;
  int te_modules; /* Megatron-core's Transformer Engine modules (dp_impl megatron): fp8 casts
                    fused, fp8 weights cached; else a PyTorch framework's GEMMs (WL_OPF_TORCH) */
  int dp_size, edp_size; /* dp x cp, expert dp */
  int etp, r_etp;        /* expert TP size, and the role its collectives use */
  /* emission state */
  uint32_t pend[MAXPEND];
  int npend;
  long last_c; /* last op on the compute stream */
  int phase;
  uint16_t flags;
  /* FLOPs of Megatron's convention for one rank of this program */
  double conv_model, conv_hw;
  /* DP buckets of the current program, per chunk */
  wl__dp_group **groups;
  int *ngroups;
  long *dp_ops;
  size_t ndp_ops, cap_dp_ops;
  int grad_sync; /* emitting the last backward of a chunk: buckets fire */
  int param_wait; /* first forward of a chunk under overlap_param_gather */
  int chunk_first; /* emitting the chunk's first forward (first backward) of the step */
  /* FSDP */
  long *z3_ag; /* per layer of the stage: latest all-gather op */
  long z3_root;
  long *z3_fend;                 /* per layer: its last forward (backward) compute op */
  int z3_first;                  /* first layer of the unit being emitted */
  double ds_bucket_d, ds_bucket_x; /* DeepSpeed reduce bucket being filled */
  long off_d2h;                    /* offload: the last copy to host memory, or -1 */
  /* moe_a2a_overlap: the part of the layer to emit (WL_PT_* bits, 0: all), and
   * the all-to-all the emitted part ends with, for the part that needs it */
  int part;
  long part_a2a;
  int on_ep; /* wl__put_c's ops go on the "ep" stream, the last kept in part_a2a */
  /* delay_wgrad_compute: the attention's weight-gradient GEMMs of the
   * backward layer being emitted, held back (defer_wgrad) until
   * wl__flush_wgrad emits them, then its DP group's bucket (defer_group) */
  int defer_wgrad, ndefer;
  struct wl__wgrad {
    const char *name; /* a string literal */
    unsigned te;
    double M, N, K, batch, scale;
    int dtype;
    uint16_t flags;
  } defer[8];
  int defer_c, defer_gi; /* the group to close after them, or defer_gi -1 */
} wl__gen;

/* What a GEMM is, for the fp8 casts around it (wl__gemm): a matmul with no
 * weight of its own or outside Transformer Engine (attention's batched GEMMs,
 * the router), or a linear layer's forward, dgrad or wgrad.  A linear's
 * te bits say which of its casts Megatron-core's modules fuse into the op
 * before them (fp8_casts in wl_gen_emit.c). */
enum { WL__MM, WL__FWD, WL__DGRAD, WL__WGRAD };
enum {
  WL__TE_IN = 1, /* forward input cast inside the preceding LayerNorm or activation */
  WL__TE_DY = 2, /* output-gradient cast inside the activation's backward */
  WL__TE_W = 4,  /* the weight is fp8 already (a later chunk of a split GEMM) */
};

typedef struct wl__col_gemm {
  const char *fwd, *dgrad, *wgrad;
  double N, K;  /* per-rank output width, input width */
  double scale; /* conv-FLOPs scale (1/tp for weights duplicated across TP) */
  unsigned te;  /* WL__TE_* (Megatron-core's fused casts) */
} wl__col_gemm;
/* ---- wl_gen_emit.c: ops on the streams ---------------------------------------- */
long wl__put(wl__gen *g, wl_op op, const uint32_t *w, int nw);
void wl__need(wl__gen *g, long op);
long wl__put_c(wl__gen *g, wl_op op);
void wl__marker(wl__gen *g, int kind, int value);
uint32_t wl__nm(wl__gen *g, const char *s);
int32_t wl__i32(wl__gen *g, const char *op, const char *key, double x);
long wl__gemm(wl__gen *g, const char *name, int pass, unsigned te, double M, double N, double K,
              double batch, double conv_scale);
long wl__elem(wl__gen *g, const char *name, double elems, double rw, double flops_per);
int wl__role_size(const wl__gen *g, int role);
long wl__coll_s(wl__gen *g, int stream, const char *name, int coll, int role, double bytes,
                long extra);
long wl__coll_c(wl__gen *g, const char *name, int coll, int role, double bytes);
/* Emit the weight-gradient GEMMs held back under g->defer_wgrad, then close
 * the DP group they complete (wl__group_done), if one waits. */
void wl__flush_wgrad(wl__gen *g);
void wl__tp_enter(wl__gen *g, const char *name);
/* the PyTorch frameworks' re-layout of a [T, h] tensor around a sequence-parallel
 * collective on dim 1 (nothing elsewhere) */
void wl__sp_cat(wl__gen *g, const char *name);
void wl__col_fwd(wl__gen *g, const wl__col_gemm *c, int n);
void wl__col_fwd_sp(wl__gen *g, const wl__col_gemm *c, int n, const char *ag_name);
void wl__col_bwd(wl__gen *g, const wl__col_gemm *c, int n, const char *ag_name,
                 const char *red_name);
void wl__row_fwd(wl__gen *g, const char *name, unsigned te, double Kloc, const char *red_name);
void wl__row_bwd(wl__gen *g, const char *dgrad, const char *wgrad, unsigned te, double Kloc,
                 const char *ag_name);
long wl__p2p(wl__gen *g, int stream, int kind, int role, int peer, int tag, double bytes,
             const char *name, long extra);

/* ---- wl_gen_layer.c: the model pieces -------------------------------------------- */
void wl__layer_fwd(wl__gen *g, int layer, int c, int gi_mlp);
void wl__layer_bwd(wl__gen *g, int layer, int c, int gi_mlp);
void wl__embed_fwd(wl__gen *g);
void wl__embed_bwd(wl__gen *g);
void wl__output_fwd(wl__gen *g);
void wl__output_bwd(wl__gen *g);
/* The trainer's training-metric passes over the logits (train_metrics), at
 * the end of a micro-batch's backward on the last stage. */
void wl__train_metrics(wl__gen *g);

/* ---- wl_gen_zero.c: ZeRO-3 ------------------------------------------------------- */
double wl__z3_bytes(const wl__gen *g, int layer, int grads, int expert);
/* the root unit's parameters (embedding, final norm, output) on virtual stage vs */
double wl__z3_root(const wl__gen *g, int vs);
/* Parameter tensors the optimizer steps on this rank (the per-parameter loop's count). */
double wl__optim_tensors(const wl__gen *g);
long wl__z3_gather(wl__gen *g, int layer, long after, int bwd);
void wl__unit_fwd_z3(wl__gen *g, int c, int first, int count, int vs, int last_vs);
void wl__unit_bwd_z3(wl__gen *g, int c, int first, int count, int vs, int last_vs);

/* ---- wl_offload.c: host-memory offload ------------------------------------------ */
/* With offload=optimizer: this rank's shard of the gradients a reduction
 * (op red, or -1 when there was none) produced for dense and expert
 * parameters (the bucket's, before sharding) copied to host memory. */
void wl__offload_grad(wl__gen *g, long red, double dense, double expert);
/* With offload=params: the shard of `params` parameters (before sharding
 * over dp; expert ones over the expert dp group) copied to the GPU before
 * its gather, after op `after` (and the last compute op when with_last);
 * returns the copy, or -1 without params offload. */
long wl__offload_fetch(wl__gen *g, double dense, double expert, long after, int with_last);
/* The optimizer step when the optimizer is offloaded: the CPU's Adam over
 * the shard of dense and expert parameters in DeepSpeed's sub-groups, each
 * followed by the copy of its updated parameters to the GPU (not with
 * params offload); the last copy, or -1.  With offload=params only, the GPU
 * step's updated shard copied back to host memory (after op `gpu_step`). */
long wl__offload_step(wl__gen *g, double dense, double expert);
void wl__offload_after_gpu_step(wl__gen *g, long gpu_step, double dense, double expert);
/* The end of the step: a marker on the compute stream waiting for op last
 * (the step's last copy or CPU op), so a next iteration starts after it. */
void wl__offload_end(wl__gen *g, long last);

/* ---- wl_gen.c: DP buckets -------------------------------------------------------- */
void wl__dp_push(wl__gen *g, long op);
void wl__group_done(wl__gen *g, int c, int gi);
void wl__param_wait(wl__gen *g, int c, int gi);

#endif
