/* workload.h — the workload: the one data structure every stage agrees on.
 *
 * A workload is
 *   - communicators: named groups of global ranks, in communicator order
 *     (ring order for ring algorithms; index i in a communicator is "member i");
 *   - roles: workload-wide names ("tp", "dp", "pp_next", ...) through which a
 *     program names a communicator without knowing which ranks it holds;
 *   - programs: ordered op lists on named streams;
 *   - a rank map: the program each rank runs, and for each role the
 *     communicator that plays it for that rank (or -1).
 *
 * Ranks of a 3D-parallel job mostly run the same program with different
 * communicators, so memory is O(programs x ops + ranks x roles), not
 * O(ranks x ops).  An imported trace is one program per rank.
 *
 * Ops on one stream run in program order.  An op may also wait on other ops
 * of the same program (usually on other streams, like CUDA events): it starts
 * only when they have finished.  A wait on an op of the same stream that
 * comes earlier is implied and need not be listed.
 *
 * Sizes follow nccl-tests: a collective's bytes is the buffer size S that
 * nccl-tests reports (all-reduce: the buffer; all-gather: the whole output,
 * N x per-rank; reduce-scatter: the whole input; all-to-all: one rank's whole
 * send buffer; broadcast/reduce: the buffer).  Send/recv bytes is the message.
 *
 * Ownership: wl_workload_create() returns a handle that owns everything
 * reachable from it (strings included); wl_workload_destroy() frees it all.
 * Pointers returned by accessors stay valid until the workload is destroyed
 * (or, for ops, until more ops are added to that program).
 */
#ifndef WL_WORKLOAD_H
#define WL_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "st_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum wl_op_kind {
  WL_OP_COMPUTE = 0,
  WL_OP_COLL = 1,
  WL_OP_SEND = 2,
  WL_OP_RECV = 3,
  WL_OP_MARKER = 4,
  WL_OP_COPY = 5, /* between the GPU's memory and its node's host memory (offload) */
  WL_OP_KIND_COUNT
} wl_op_kind;

/* Direction of a copy op (its sub). */
typedef enum wl_copy_dir {
  WL_COPY_D2H = 0, /* device to host: the GPU's link to host memory, up */
  WL_COPY_H2D,     /* host to device */
  WL_COPY_DIR_COUNT
} wl_copy_dir;

typedef enum wl_coll_op {
  WL_COLL_ALLREDUCE = 0,
  WL_COLL_ALLGATHER,
  WL_COLL_REDUCESCATTER,
  WL_COLL_BROADCAST,
  WL_COLL_REDUCE,
  WL_COLL_ALLTOALL, /* uniform, or per-peer sizes when the op has splits (all-to-all-v) */
  WL_COLL_BARRIER,
  WL_COLL_SHIFT, /* one ring step: member i sends bytes to i + 1, receives from i - 1 (mod n) */
  WL_COLL_COUNT
} wl_coll_op;

/* Op class of a compute op, for the compute model. */
typedef enum wl_op_class {
  WL_CLASS_OTHER = 0,   /* only a duration is known */
  WL_CLASS_GEMM,        /* m, n, k set; flops = 2mnk x batch */
  WL_CLASS_ATTENTION,   /* fused attention core: flops, bytes; m = query length,
                           n = key length, k = head dim, batch = micro-batch x heads
                           (0 when unknown); WL_OPF_CAUSAL for a causal mask */
  WL_CLASS_ELEMENTWISE, /* memory-bound: norms, activations, dropout, residuals */
  WL_CLASS_OPTIMIZER,   /* optimizer step: memory-bound over the shard's state */
  WL_CLASS_COMM_KERNEL, /* SM cost of a communication kernel */
  WL_CLASS_COUNT
} wl_op_class;

typedef enum wl_marker_kind {
  WL_MARK_ITERATION = 0, /* value = iteration number */
  WL_MARK_PHASE,         /* value = wl_phase */
  WL_MARK_LAYER,         /* value = layer number */
  WL_MARK_MICROBATCH,    /* value = micro-batch number */
  WL_MARK_COUNT
} wl_marker_kind;

typedef enum wl_phase {
  WL_PHASE_NONE = 0,
  WL_PHASE_FORWARD,
  WL_PHASE_BACKWARD,
  WL_PHASE_OPTIMIZER,
  WL_PHASE_COUNT
} wl_phase;

/* What a communicator is for; breakdowns are reported per kind. */
typedef enum wl_comm_kind {
  WL_COMM_OTHER = 0,
  WL_COMM_TP,
  WL_COMM_PP,
  WL_COMM_DP,
  WL_COMM_CP,
  WL_COMM_EP,
  WL_COMM_WORLD,
  WL_COMM_KIND_COUNT
} wl_comm_kind;

typedef enum wl_dtype {
  WL_DTYPE_FP32 = 0,
  WL_DTYPE_TF32,
  WL_DTYPE_BF16,
  WL_DTYPE_FP16,
  WL_DTYPE_FP8,
  WL_DTYPE_COUNT
} wl_dtype;

typedef struct wl_op {
  uint8_t kind;      /* wl_op_kind */
  uint8_t sub;       /* COLL: wl_coll_op; COMPUTE: wl_op_class; MARKER: wl_marker_kind;
                        COPY: wl_copy_dir */
  uint8_t phase;     /* wl_phase the op belongs to (for breakdowns) */
  uint8_t dtype;     /* COMPUTE: wl_dtype of the math */
  uint16_t stream;   /* stream index in the program */
  uint16_t flags;    /* WL_OPF_* */
  int32_t role;      /* COLL/SEND/RECV: role index; the rank map gives the communicator */
  int32_t peer;      /* SEND/RECV: peer's member index in the communicator;
                        BROADCAST/REDUCE: root's member index; else -1 */
  int32_t tag;       /* SEND/RECV: tag matched between sender and receiver;
                        MARKER: value */
  uint32_t name;     /* offset in the program's string pool; 0 = no name */
  uint32_t wait_first, wait_count; /* ops (indices in this program) to wait on */
  uint32_t split_first;            /* ALLTOALL with WL_OPF_SPLITS: index in
                                      program splits of comm-size byte counts */
  uint8_t concurrent; /* GEMM: how many GEMMs of this shape the library keeps in
                         flight on separate streams (Transformer Engine's comm-
                         overlap chunks); the compute model quantises waves over
                         all of them.  0 or 1: alone */
  double duration_s; /* COMPUTE: given duration in seconds, or < 0 for the compute model */
  double flops;      /* COMPUTE: floating-point operations */
  double bytes;      /* COMPUTE: HBM bytes moved (host ops: host memory bytes); COLL/SEND/RECV:
                        message bytes (see top); COPY: bytes copied */
  int32_t m, n, k;   /* GEMM: shape (per batch element); 0 otherwise */
  int32_t batch;     /* GEMM: batch count (>= 1) */
} wl_op;

enum {
  WL_OPF_SPLITS = 1u << 0,    /* ALLTOALL: per-peer send bytes in program splits */
  WL_OPF_RECOMPUTE = 1u << 1, /* COMPUTE: re-run of forward for activation recomputation */
  WL_OPF_CAUSAL = 1u << 2,    /* COMPUTE (attention): causal mask; flops count only the
                                 unmasked half */
  WL_OPF_HOST = 1u << 3,      /* COMPUTE: runs on the node's CPUs, not the GPU (an optimizer
                                 step offloaded to the host); priced by the platform's host
                                 rate unless it has a duration */
  WL_OPF_ATTN_SHIFT = 4,      /* COMPUTE (attention): bits 4-6 hold the wl_attn_impl that
                                 runs the kernel (0: the device's default library) */
  WL_OPF_ATTN_MASK = 7u << 4,
  WL_OPF_UNFUSED = 1u << 7,   /* COMPUTE: a kernel of an unfused attention core (its
                                 batched GEMMs and softmax, not its dropout), priced
                                 at the compute model's measured factor for its pass */
  WL_OPF_BWD = 1u << 8,       /* COMPUTE (with WL_OPF_UNFUSED): a backward kernel */
  WL_OPF_DROPOUT = 1u << 9,   /* COMPUTE (fused attention): the kernel drops out its
                                 probabilities (in-kernel random numbers), priced at the
                                 published measurement (platform.h PLAT_ATTN_DROPOUT_*) */
  WL_OPF_WINDOW = 1u << 10,   /* COMPUTE (fused attention): a sliding window: each query
                                 attends to the n keys up to and including its own
                                 position; flops count that band (n s - n (n - 1) / 2 scores
                                 of s queries), the compute model adds the band's edge
                                 blocks (platforms/compute.c) */
  WL_OPF_DEDUP = 1u << 11,    /* ALLTOALL: an MoE token dispatch or combine that sends a
                                 token once to each member, and once across the network to
                                 each node, holding at least one of its experts (DeepEP,
                                 HybridEP: Megatron-core's flex dispatcher); bytes count m
                                 copies of every token (one per expert, as the plain
                                 all-to-all sends them), m = top-k, n = experts on each
                                 member, uniform routing (sim/coll/edges.c) */
  WL_OPF_TORCH = 1u << 12,    /* COMPUTE (GEMM): dispatched by a PyTorch framework's own
                                 code (FSDP, FSDP2, DeepSpeed: torch's matmul and linear),
                                 priced at the device's PyTorch GEMM efficiency
                                 (plat_compute_params gemm_eff_torch) */
};

/* A deduplicating all-to-all's top-k and experts per member as one integer
 * (the collective's argument where a broadcast has its root): 0 for any
 * other op. */
static inline int wl_op_dedup_arg(const wl_op *o)
{
  return (o->flags & WL_OPF_DEDUP) ? (o->m << 16) | o->n : 0;
}

/* Make an all-to-all a deduplicating MoE dispatch of top-k experts out of
 * `experts` on each member (WL_OPF_DEDUP). */
static inline void wl_op_set_dedup(wl_op *o, int topk, int experts)
{
  o->flags |= WL_OPF_DEDUP;
  o->m = topk;
  o->n = experts;
}

/* A collective's one integer argument as the collective layer takes it
 * (coll_ctx.root, sim_coll_estimate): a broadcast's or reduce's root member,
 * a deduplicating all-to-all's wl_op_dedup_arg, else 0. */
static inline int wl_op_coll_arg(const wl_op *o)
{
  if (o->flags & WL_OPF_DEDUP)
    return wl_op_dedup_arg(o);
  return o->peer >= 0 ? o->peer : 0;
}

/* Which fused-attention kernel library runs an attention op (layout key
 * attn_impl, op key "attn_impl"): the device's default (on Hopper cuDNN, as
 * Transformer Engine picks it), cuDNN's fused attention, FlashAttention-2,
 * FlashAttention-3, a Triton flash-attention kernel, or FlashAttention-1
 * (its CUDA kernels, and the 2022 Triton port of them that MPT runs as
 * attn_impl triton on triton-pre-mlir).  The compute model
 * prices each from its published rates where the device has them
 * (platforms/compute.c, docs/calibration.md). */
typedef enum wl_attn_impl {
  WL_ATTN_DEFAULT = 0,
  WL_ATTN_CUDNN,
  WL_ATTN_FA2,
  WL_ATTN_FA3,
  WL_ATTN_TRITON,
  WL_ATTN_FA1,
  WL_ATTN_COUNT
} wl_attn_impl;

/* The op's wl_attn_impl, and the flags with it set. */
static inline int wl_op_attn_impl(const wl_op *o)
{
  return (int)((o->flags & WL_OPF_ATTN_MASK) >> WL_OPF_ATTN_SHIFT);
}
static inline uint16_t wl_flags_with_attn(uint16_t flags, int impl)
{
  return (uint16_t)((flags & ~(unsigned)WL_OPF_ATTN_MASK) |
                    (((unsigned)impl << WL_OPF_ATTN_SHIFT) & WL_OPF_ATTN_MASK));
}
/* "default", "cudnn", "fa2", "fa3", "triton", "fa1"; from a name, or -1. */
const char *wl_attn_impl_name(int a);
int wl_attn_impl_from_name(const char *s);
/* The pass of an unfused attention kernel (op key "unfused_attn",
 * WL_OPF_UNFUSED): 0 "forward", 1 "backward"; from a name, or -1. */
const char *wl_unfused_pass_name(int bwd);
int wl_unfused_pass_from_name(const char *s);

/* FLOPs an Adam step counts per parameter (the generator's optimizer ops):
 * a host optimizer op's parameters are its flops / this. */
#define WL_ADAM_FLOPS_PER_PARAM 12.0

typedef struct wl_program {
  char *name;
  int num_streams;
  char **stream_names; /* e.g. "compute", "comm", "dp" */
  wl_op *ops;
  size_t num_ops, cap_ops;
  uint32_t *waits; /* op indices referenced by wl_op.wait_first/wait_count */
  size_t num_waits, cap_waits;
  double *splits; /* all-to-all-v per-peer byte counts */
  size_t num_splits, cap_splits;
  char *strings; /* pool of NUL-terminated names; offset 0 is "" */
  size_t strings_len, strings_cap;
} wl_program;

typedef struct wl_comm {
  char *name;
  int kind; /* wl_comm_kind */
  int size;
  int32_t *ranks; /* global ranks, member order */
} wl_comm;

/* What the workload says about the job; NAN where it does not apply
 * (a raw trace has no tokens). */
typedef struct wl_meta {
  char *model;             /* model name, or NULL */
  char *layout;            /* layout spec, or NULL */
  char *source;            /* "gen", "kineto:...", ... */
  double tokens_per_step;  /* NAN when unknown */
  double model_flops_per_step; /* whole job, NAN when unknown */
  double hw_flops_per_step;    /* including recomputation, NAN when unknown */
  double peak_memory_bytes;    /* largest per-rank peak, NAN when unknown */
  int dtype;               /* wl_dtype of the main math */
  int iterations;          /* iterations (steps) in the programs, >= 1 */
} wl_meta;

typedef struct wl_workload {
  int num_ranks;
  int num_roles;
  char **roles;
  int num_comms, cap_comms;
  wl_comm *comms;
  int num_programs, cap_programs;
  wl_program *programs;
  int32_t *rank_program; /* [num_ranks] */
  int32_t *rank_comm;    /* [num_ranks * num_roles], -1 = role not played */
  wl_meta meta;
} wl_workload;

/* ---- names <-> enums (tables shared by reader, writer, importers, CLI) --- */
const char *wl_op_kind_name(int kind);
const char *wl_coll_name(int op);        /* "allreduce", "allgather", ... */
int wl_coll_from_name(const char *name); /* also accepts "all_reduce", "all-reduce"; -1 if unknown */
const char *wl_class_name(int cls);
int wl_class_from_name(const char *name);
const char *wl_marker_name(int kind);
int wl_marker_from_name(const char *name);
const char *wl_phase_name(int phase);
int wl_phase_from_name(const char *name);
const char *wl_comm_kind_name(int kind);
int wl_comm_kind_from_name(const char *name);
const char *wl_dtype_name(int dtype);
int wl_dtype_from_name(const char *name);
double wl_dtype_bytes(int dtype);

/* ---- building ----------------------------------------------------------- */
/* A workload of num_ranks ranks with the given roles (may be 0). */
wl_workload *wl_workload_create(int num_ranks, int num_roles, const char *const *role_names);
void wl_workload_destroy(wl_workload *wl);

/* Add a communicator; ranks are copied.  Returns its index, or < 0. */
int wl_comm_add(wl_workload *wl, const char *name, int kind, int size, const int32_t *ranks);
/* Add a program with the given streams.  Returns its index, or < 0. */
int wl_program_add(wl_workload *wl, const char *name, int num_streams,
                   const char *const *stream_names);
/* Append an op (copied) to a program; waits (count n) are op indices of the
 * same program, all smaller than the new op's index.  Returns the new op's
 * index, or < 0 on out-of-memory. */
long wl_program_append(wl_program *p, const wl_op *op, const uint32_t *waits, uint32_t n);
/* Intern a name in the program's string pool; returns its offset (0 for "" or NULL). */
uint32_t wl_program_string(wl_program *p, const char *s);
/* Store per-peer sizes for an all-to-all-v; returns split_first. */
uint32_t wl_program_splits(wl_program *p, const double *bytes, int n);
static inline const char *wl_op_name(const wl_program *p, const wl_op *op)
{
  return p->strings ? p->strings + op->name : "";
}

/* Convenience constructors (fill a wl_op; the caller appends it). */
wl_op wl_op_compute(int stream, double duration_s);
wl_op wl_op_coll(int stream, int coll, int role, double bytes);
wl_op wl_op_p2p(int stream, int kind, int role, int peer, int tag, double bytes);
wl_op wl_op_marker(int stream, int marker_kind, int value);
wl_op wl_op_copy(int stream, int dir, double bytes);
const char *wl_copy_dir_name(int dir); /* "d2h", "h2d" */
int wl_copy_dir_from_name(const char *name);
/* What of the host the workload uses: WL_HOST_COPIES when some op copies to
 * or from host memory, WL_HOST_COMPUTE when some compute op runs on the
 * host's CPUs (0: neither). */
enum { WL_HOST_COPIES = 1, WL_HOST_COMPUTE = 2 };
int wl_workload_host_use(const wl_workload *wl);

/* Rank map. */
void wl_rank_set(wl_workload *wl, int rank, int program);
void wl_rank_set_comm(wl_workload *wl, int rank, int role, int comm);
static inline int wl_rank_comm(const wl_workload *wl, int rank, int role)
{
  return role >= 0 && role < wl->num_roles ? wl->rank_comm[(size_t)rank * wl->num_roles + role] : -1;
}
/* Member index of rank in communicator c, or -1 (linear scan; for checks). */
int wl_comm_member_index(const wl_comm *c, int rank);

/* Set a string field of meta (copied). */
int wl_meta_set_str(char **field, const char *value);

/* ---- checking ----------------------------------------------------------- */
/* Check everything a replay relies on: every rank has a program; every op's
 * role is played by a communicator containing the rank; peers and roots are
 * inside the communicator; waits point backwards; streams exist; sizes are
 * finite and >= 0.  The message names the program, op index and field. */
int wl_workload_check(const wl_workload *wl, st_err *err);

/* ---- repeating ------------------------------------------------------------ */
#define WL_REPEAT_MAX 1000
/* Every program's ops repeated `times` times in a row (1..WL_REPEAT_MAX), so
 * the workload runs that many steps: each copy waits on its own copy's ops,
 * streams go on in order from one copy to the next, iteration markers count
 * on, and meta.iterations is multiplied (per-step metadata unchanged).  0,
 * or an error (out of memory), after which the workload is only partly
 * repeated and must be destroyed. */
int wl_workload_repeat(wl_workload *wl, int times, st_err *err);

/* Number of ops in all programs, bytes held (for reports and benchmarks). */
size_t wl_workload_num_ops(const wl_workload *wl);
size_t wl_workload_memory_bytes(const wl_workload *wl);

/* ---- on-disk form (gzip JSON, docs/workload-format.md) ------------------ */
/* Read a workload file (gzip or plain JSON).  Errors name the file and the
 * JSON path of the bad value: "workload 'w.json.gz': programs[0].ops[12]: 'bytes' is negative". */
int wl_workload_read(const char *path, wl_workload **out, st_err *err);
int wl_workload_parse(const char *json, size_t len, const char *what, wl_workload **out,
                      st_err *err);
/* Write atomically; gzip when the name ends in ".gz". */
int wl_workload_write(const wl_workload *wl, const char *path, st_err *err);
/* Serialise to a JSON string (caller frees). */
char *wl_workload_to_json(const wl_workload *wl, int pretty);


/* ---- generators: model + layout -> workload (docs/workloads.md) ---------- */
/* A transformer model, parsed from a JSON spec, a Hugging Face config.json
 * or a built-in name.  The keys of a spec are: name, layers, hidden, heads,
 * kv_heads, ffn_hidden, ffn_act, vocab, seq_len, tie_embeddings,
 * moe{experts, top_k, expert_ffn_hidden, shared_experts, dense_layers,
 * capacity_factor}; plus the documented extras head_dim and
 * mla{q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
 * v_head_dim}.  A Hugging Face config is mapped key by key (wl_hf.c).
 * Plain data, no heap. */
typedef enum wl_ffn_act { WL_ACT_GELU = 0, WL_ACT_SWIGLU, WL_ACT_COUNT } wl_ffn_act;

typedef struct wl_moe {
  int experts;            /* routed experts */
  int top_k;              /* experts per token */
  int expert_ffn_hidden;  /* FFN width of one expert */
  int shared_experts;     /* always-on experts of width expert_ffn_hidden (0 = none) */
  int dense_layers;       /* leading layers with a dense FFN of width ffn_hidden */
  double capacity_factor; /* 0 = dropless (balanced routing); > 0 pads each expert to capacity */
} wl_moe;

typedef struct wl_mla { /* multi-head latent attention (DeepSeek-V2/V3) */
  int q_lora_rank; /* 0: queries projected directly, no low-rank step (DeepSeek-V2-Lite) */
  int kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
} wl_mla;

#define WL_POSITIONS_SEQ (-1)
#define WL_WINDOW_PATTERN_MAX 64

typedef struct wl_model {
  char name[64];
  int layers, hidden, heads, kv_heads;
  int head_dim;       /* hidden / heads unless given */
  int ffn_hidden, ffn_act; /* wl_ffn_act; swiglu stands for every gated MLP (GeGLU too) */
  int vocab;
  int seq_len;        /* the step's sequence length (run's and search's --seq set it) */
  int tie_embeddings;
  int has_moe;
  wl_moe moe;
  int has_mla;
  wl_mla mla;
  /* Details that change parameter counts or a few elementwise passes, not
   * the GEMMs.  A spec and the built-ins take them from ffn_act (gelu:
   * GPT-style, LayerNorm, every linear biased, learned positions, one per
   * token of seq_len; swiglu: Llama-style, RMSNorm, no biases, rotary); a
   * Hugging Face config states them. */
  int layer_norm;      /* 1 LayerNorm (weight and bias), 0 RMSNorm (weight) */
  int norms_per_layer; /* 2; 4 with Gemma 2's norms after attention and MLP too */
  int qkv_bias, out_bias, mlp_bias; /* biases of QKV, attention output, MLP linears */
  int qk_norm;         /* RMSNorm of each query and key head (Qwen3): 2 head_dim weights */
  int positions;       /* rows of a learned position embedding: 0 none (rotary),
                          WL_POSITIONS_SEQ one per token of seq_len (a spec's
                          GPT-style model), else that many (GPT-2's n_positions) */
  int sliding_window;  /* the attention window of the sliding layers (keys each query
                          attends to, its own included); 0 = none */
  char window_pattern[WL_WINDOW_PATTERN_MAX + 1]; /* which layers slide: 's' (sliding) or
                          'f' (full) per layer, repeated from layer 0; "" = every layer */
} wl_model;

/* The attention window of a layer (0-based, over the whole model): the
 * model's sliding_window where the layer slides, else 0 (full attention). */
int wl_model_layer_window(const wl_model *m, int layer);

/* Load a built-in (wl_model_names()) or a JSON file.  Errors name the file and
 * the key: "model 'm.json': key 'heads' (96) does not divide 'hidden' (1000)". */
int wl_model_load(const char *name_or_json_path, wl_model *m, st_err *err);
int wl_model_parse(const char *json, const char *what, wl_model *m, st_err *err);
void wl_model_release(wl_model *m); /* nothing owned today; kept for symmetry */
const char *const *wl_model_names(void); /* built-ins, NULL-terminated */
/* Parameter count of the whole model (embedding once if tied), and the
 * parameters one token passes through (routed experts: top_k of them). */
double wl_model_params(const wl_model *m);
double wl_model_active_params(const wl_model *m);

/* PyTorch FSDP1's BackwardPrefetch (layout key backward_prefetch, dp_impl=fsdp):
 * the next unit's all-gather issued in this unit's pre-backward hook
 * (BACKWARD_PRE, FullyShardedDataParallel's default), in its post-backward
 * hook once its gradient is computed (BACKWARD_POST, Composer's default), or
 * not prefetched (None: in the next unit's own pre-backward hook). */
typedef enum wl_bwd_prefetch {
  WL_BWD_PREFETCH_PRE = 0,
  WL_BWD_PREFETCH_POST,
  WL_BWD_PREFETCH_NONE,
  WL_BWD_PREFETCH_COUNT
} wl_bwd_prefetch;

/* How the optimizer's Adam step runs (layout key optim_impl; docs/workloads.md,
 * "The optimizer step"): the passes it makes over the shard's state and the
 * kernels it launches. */
typedef enum wl_optim_impl {
  WL_OPTIM_FUSED = 0, /* one kernel per tensor list: Megatron's and DeepSpeed's FusedAdam,
                         torch.optim.AdamW(fused=True) */
  WL_OPTIM_FOREACH,   /* torch.optim.AdamW's multi-tensor path (_multi_tensor_adamw, its
                         default on CUDA): eight passes, each over every tensor */
  WL_OPTIM_LOOP,      /* a Python loop over the parameters (torch's foreach=False,
                         Composer's DecoupledAdamW): the same passes, per tensor */
  WL_OPTIM_COUNT
} wl_optim_impl;

/* Transformer Engine's fp8 scaling (layout key fp8_recipe, dtype=fp8):
 * delayed (DelayedScaling: each tensor cast with the scale of past steps'
 * amax history, in one pass) or current (Float8CurrentScaling, Megatron's
 * --fp8-recipe tensorwise: the tensor's own amax first, then the cast). */
typedef enum wl_fp8_recipe {
  WL_FP8_DELAYED = 0,
  WL_FP8_CURRENT,
  WL_FP8_RECIPE_COUNT
} wl_fp8_recipe;

/* Megatron-core's MoE token dispatcher (layout key moe_dispatcher,
 * --moe-token-dispatcher-type): alltoall (MoEAlltoAllTokenDispatcher: one
 * copy of a token per routed expert through an all-to-all over the EP group)
 * or flex (MoEFlexTokenDispatcher over DeepEP or HybridEP: one copy per
 * member holding any of its experts, one per node across the network,
 * forwarded over NVLink there). */
typedef enum wl_moe_dispatcher {
  WL_MOE_ALLTOALL = 0,
  WL_MOE_FLEX,
  WL_MOE_DISPATCHER_COUNT
} wl_moe_dispatcher;

/* How the loss's cross entropy is computed (layout key ce_fusion).
 * Megatron-core's (dp_impl=megatron; --cross-entropy-loss-fusion and
 * --cross-entropy-fusion-impl): unfused (tensor_parallel/cross_entropy.py,
 * the default), its torch.compile-fused functions (native,
 * fusions/fused_cross_entropy.py) or Transformer Engine's Triton kernels
 * (te, parallel_cross_entropy).  The PyTorch frameworks' (dp_impl fsdp,
 * fsdp2, deepspeed): F.cross_entropy on the model-dtype logits, which the
 * training loop keeps to the end of backward (torch, fms-fsdp); on an fp32
 * copy of them, freed before backward (torch_fp32, torchtitan; with tp > 1
 * DTensor's loss_parallel, the default); Hugging Face transformers'
 * causal-LM loss, the logits cast to fp32 and returned, and a shifted
 * contiguous copy (hf); flash-attn's kernel (flash, llm-foundry's
 * fused_crossentropy); torch_fp32's function under torch.compile (torchtitan
 * from 2025 with training.compile: torch_compiled). */
typedef enum wl_ce_fusion {
  WL_CE_NONE = 0,
  WL_CE_NATIVE,
  WL_CE_TE,
  WL_CE_TORCH,
  WL_CE_TORCH_FP32,
  WL_CE_HF,
  WL_CE_FLASH,
  WL_CE_TORCH_COMPILED,
  WL_CE_COUNT
} wl_ce_fusion;

/* Megatron-core's selective recomputation, module by module (layout key
 * recompute_modules, --recompute-modules, with recompute=selective): bits of
 * wl_layout.recompute_modules, in the order of rcm_names (wl_layout.c). */
enum {
  WL_RCM_CORE_ATTN = 1 << 0,      /* the attention core (the default) */
  WL_RCM_MOE_ACT = 1 << 1,        /* the experts' activation (its output discarded) */
  WL_RCM_LAYERNORM = 1 << 2,      /* the norms that are modules of their own (discarded) */
  WL_RCM_MLA_UP_PROJ = 1 << 3,    /* MLA's up projections and rotary (discarded) */
  WL_RCM_MLP = 1 << 4,            /* a dense layer's MLP (checkpointed) */
  WL_RCM_MOE = 1 << 5,            /* the whole MoE layer (checkpointed) */
  WL_RCM_SHARED_EXPERTS = 1 << 6, /* the shared experts (checkpointed) */
  WL_RCM_COUNT = 7
};

typedef enum wl_recompute {
  WL_RECOMPUTE_NONE = 0,
  WL_RECOMPUTE_SELECTIVE, /* attention core only (Korthikanti et al. 2022) */
  WL_RECOMPUTE_FULL,      /* whole layer, from its input */
  WL_RECOMPUTE_OP,        /* torchtitan's per-op selective checkpointing (ac_mode
                             selective, selective_ac_option op): every matmul's output
                             but every second one's, and attention's, kept; the rest
                             of the block recomputed */
  WL_RECOMPUTE_COUNT
} wl_recompute;

/* How sharded data parallelism runs (layout key dp_impl): Megatron-LM's
 * distributed optimizer and an ideal ZeRO-3 (the default), or ZeRO-3 as
 * PyTorch FSDP1, FSDP2 and DeepSpeed run it (docs/workloads.md). */
typedef enum wl_dp_impl {
  WL_DP_MEGATRON = 0,
  WL_DP_FSDP,      /* PyTorch FSDP1: FlatParameter per unit, FULL_SHARD */
  WL_DP_FSDP2,     /* PyTorch fully_shard: per-parameter DTensor sharding */
  WL_DP_DEEPSPEED, /* DeepSpeed ZeRO stage 3 */
  WL_DP_IMPL_COUNT
} wl_dp_impl;

/* Host-memory offload (layout key offload, docs/workloads.md): bits of what
 * leaves the GPU, as DeepSpeed's offload_optimizer and offload_param. */
typedef enum wl_offload {
  WL_OFFLOAD_NONE = 0,
  WL_OFFLOAD_OPTIMIZER = 1, /* optimizer state (and gradients) on the host, the step on the CPU */
  WL_OFFLOAD_PARAMS = 2,    /* the parameter shard on the host, fetched before each gather */
  WL_OFFLOAD_BOTH = 3,
  WL_OFFLOAD_COUNT
} wl_offload;

typedef enum wl_schedule {
  WL_SCHED_1F1B = 0,
  WL_SCHED_GPIPE,
  WL_SCHED_INTERLEAVED,
  WL_SCHED_COUNT
} wl_schedule;

#define WL_MAX_STAGES 256
#define WL_MAX_VSTAGES 1024  /* pipeline stages x virtual stages */
#define WL_LIST_MAX 256      /* stage_layers, dp_microbatches as given */
/* balance=: how the driver splits work over unlike GPUs */
typedef enum wl_balance { WL_BALANCE_NONE = 0, WL_BALANCE_COMPUTE, WL_BALANCE_TIME } wl_balance;
#define WL_MAX_DP_RUNS 32    /* runs of dp_microbatches */
#define WL_PP_LAYOUT_MAX 512 /* characters of a pp_layout string, NUL included */

/* A parallel layout, resolved against a model and a GPU count.  Plain data.
 * Before wl_layout_resolve() it is a request (wl_layout_request_init): a
 * size of 0 and an enum of -1 mean "not given, take the default". */
typedef struct wl_layout {
  int num_gpus;          /* tp * pp * dp * cp */
  int tp, pp, dp, cp, ep, vpp, sp;
  int etp;               /* expert tensor-parallel size (Megatron's
                            expert_tensor_parallel_size; default tp) */
  int edp;               /* expert data-parallel size: tp * cp * dp / (etp * ep) */
  int mbs, gbs, num_microbatches; /* num_microbatches = gbs / (mbs * dp) */
  int zero;              /* 0 DDP, 1/2 distributed optimizer, 3 FSDP */
  int dp_impl;           /* wl_dp_impl: who runs the sharding (zero=3 only, but megatron) */
  int recompute;         /* wl_recompute */
  int recompute_layers;  /* recompute=full: the layers of each model chunk recomputed, the
                            first ones (Megatron-LM's --recompute-method block with
                            --recompute-num-layers); the rest keep their activations;
                            0 (default): every layer */
  int reshard_after_forward; /* dp_impl=fsdp2: 1 frees a layer's gathered parameters after its
                                forward (gathered again for its backward); 0 keeps them to the
                                end of its backward (default 1, 0 under a pipeline) */
  int grad_nan_check;    /* dp_impl=megatron, zero < 3: the norm of each gradient bucket
                            before its reduction (check_for_nan_in_grad; default 1) */
  int grad_scale_pass;   /* dp_impl=megatron, zero < 3: each bucket scaled by 1/(dp cp) in place
                            before its reduction (Megatron without average_in_collective
                            or calculate_per_token_loss; default 1) */
  int recompute_early_stop; /* recompute=full: the re-run stops once the backward's last
                            needed tensor is saved again (PyTorch's non-reentrant
                            checkpoint): the MLP's output projection and the residual
                            after it are not re-run; default 1 for dp_impl fsdp and
                            fsdp2, else 0 */
  int recompute_modules; /* WL_RCM_* bits recompute=selective recomputes (Megatron-core's
                            --recompute-modules; default core_attn), 0 under any other
                            recompute (-1 in a request: not given) */
  int schedule;          /* wl_schedule */
  int dtype, grad_dtype; /* wl_dtype of the math and of gradient reduction */
  int overlap_grad_reduce, overlap_param_gather;
  double bucket_params;  /* DP bucket size in parameters (Megatron's default when 0) */
  int flash;             /* fused attention: no s^2 activations stored (default 1) */
  int attn_impl;         /* wl_attn_impl of the fused attention kernels (default: the
                            device's library under dp_impl=megatron, FlashAttention-2
                            under the PyTorch frameworks' dp_impl) */
  int first_stage_layers, last_stage_layers; /* 0 = even split */
  int account_embedding, account_loss; /* Megatron's account_for_{embedding,loss}_in_
                                          pipeline_split: each counts as a layer */
  char pp_layout[WL_PP_LAYOUT_MAX]; /* Megatron's pipeline_model_parallel_layout, "" = none */
  int tp_async;          /* 1 (default): the backward TP all-reduce of a column-parallel
                            block's input gradient runs beside its weight gradient
                            (Megatron-LM's async TP all-reduce, from September 2021);
                            0: after it, blocking, as Megatron-LM ran before (-1 in a
                            request: not given) */
  int pp_scatter;        /* 1: each TP rank sends 1/tp of a pipeline tensor and the
                            receiver all-gathers it over the TP group (Megatron-LM's
                            scatter_gather_tensors_in_pipeline, February 2021 to March
                            2023, not under SP); 0 (default): whole tensors, as
                            Megatron-core sends them (-1 in a request: not given) */
  double dropout;        /* dropout probability of the attention probabilities and of
                            the hidden states (Megatron's --attention-dropout and
                            --hidden-dropout; any value > 0 costs alike: the random
                            numbers and the masks); 0 (default): none */
  int ce_fusion;         /* wl_ce_fusion: the loss's kernels (-1 in a request: not given) */
  int train_metrics;     /* cross-entropy passes over each micro-batch's logits after its
                            backward for the trainer's training metrics (Composer's
                            train_metrics; 0: none, the default) */
  int fp8_recipe;        /* wl_fp8_recipe (dtype=fp8; -1 in a request: not given) */
  int moe_dispatcher;    /* wl_moe_dispatcher (-1 in a request: not given) */
  int moe_shared_overlap; /* 1: Megatron-core's moe_shared_expert_overlap: the shared
                            experts' fc1 and activation beside the dispatch all-to-all, their
                            fc2 beside the combine, on a stream of their own */
  int moe_a2a_overlap;   /* 1: Megatron-core's overlap_moe_expert_parallel_comm with
                            delay_wgrad_compute (Megatron-Bridge's moe_a2a_overlap): one
                            micro-batch's forward and another's backward run layer by
                            layer together, each one's expert all-to-alls on a stream of
                            their own beside the other's compute */
  int fp8_param_gather;  /* 1: the distributed optimizer all-gathers the transformer layers'
                            parameters in fp8 (Megatron's --fp8-param-gather: fp8 weights) */
  int tp_overlap;        /* Megatron's --tp-comm-overlap: SP collectives chunked and
                            overlapped with their GEMMs (needs sp) */
  int bwd_prefetch;      /* wl_bwd_prefetch: FSDP1's backward_prefetch (dp_impl=fsdp) */
  int optim_impl;        /* wl_optim_impl (-1 in a request: the framework's own) */
  int grad_clip;         /* 1 (default): the gradients clipped by their global norm, as every
                            framework's default (-1 in a request: not given) */
  int eager;             /* 1: the model's elementwise ops run as eager PyTorch runs
                            them (no torch.compile): RMSNorm, rotary embedding, GQA's
                            repeat_kv and SwiGLU as their separate kernels */
  int offload;           /* wl_offload bits (-1 in a request: not given) */
  int vs_layers[WL_MAX_VSTAGES]; /* transformer layers of virtual stage c * pp + s
                                    (chunk c of stage s); resolved */
  /* ---- uneven splits, for clusters of unlike GPUs (wl_layout_split.c) ---- */
  char stage_layers[WL_LIST_MAX];  /* "8/8/12/12": layers per stage as given, "" = none */
  char dp_microbatches[WL_LIST_MAX]; /* "6*2/2*2": micro-batches per data-parallel
                                      replica (N, or N*K for K replicas), "" = none */
  int balance;           /* wl_balance: the driver fills both lists from the cluster's
                            groups before generating (docs/workloads.md) */
  int dp_runs;           /* resolved dp_microbatches: runs of replicas */
  int dp_run_mb[WL_MAX_DP_RUNS], dp_run_len[WL_MAX_DP_RUNS];
  char spec[1024];       /* canonical spec: every key, resolved */
} wl_layout;

/* Micro-batches data-parallel replica d runs (num_microbatches without
 * dp_microbatches). */
int wl_layout_replica_microbatches(const wl_layout *l, int d);

/* Parse "tp=8,pp=4,mbs=1,gbs=512,...".  num_gpus 0 means "what the layout
 * says" (dp defaults to 1); otherwise dp defaults to what the GPU count
 * leaves.  Every inconsistency is an error that names the numbers.  Parsing
 * fills a request and hands it to wl_layout_resolve(). */
int wl_layout_parse(const char *spec, int num_gpus, const wl_model *m, wl_layout *l, st_err *err);
/* An empty request: every key not given. */
void wl_layout_request_init(wl_layout *l);
/* The keys of a resolved layout that say what software ran it rather than
 * how it is laid out, as "flash=1,attn_impl=fa2,eager=0[,tp_async=0][,pp_scatter=1]":
 * the attention kernel and its library, eager kernels, whether the TP
 * backward overlaps and whether pipeline tensors travel split, and
 * Megatron-core's cross entropy (a PyTorch framework's is not carried: the
 * layouts made from these keys are Megatron-core's).  search --case and the
 * balance probe carry them into the layouts they make.  Truncated to n
 * bytes. */
void wl_layout_software_keys(const wl_layout *l, char *b, size_t n);
/* A resolved layout's recompute_modules as the key's value ("moe_act+layernorm"),
 * or "" where it has none to state (no selective recomputation, or the
 * default list, core_attn).  Truncated to n bytes. */
void wl_layout_recompute_modules(const wl_layout *l, char *b, size_t n);
/* Apply the defaults to a request and check it against the model and the GPU
 * count: every validity rule of a layout lives here, so that parsing and an
 * enumeration of layouts agree.  Messages start "layout 'WHAT': ".  On error
 * *l is unchanged. */
int wl_layout_resolve(wl_layout *l, int num_gpus, const wl_model *m, const char *what,
                      st_err *err);
/* Transformer layers held by pipeline stage s (all its virtual chunks). */
int wl_layout_stage_layers(const wl_layout *l, const wl_model *m, int stage);
/* Transformer layers of virtual stage vs = chunk * pp + stage (0 outside). */
int wl_layout_vstage_layers(const wl_layout *l, int vs);
const char *wl_recompute_name(int r);
const char *wl_schedule_name(int s);
const char *wl_dp_impl_name(int d);
const char *wl_offload_name(int o); /* "none", "optimizer", "params", "both" */

/* Build the per-rank workload: one program per pipeline stage, communicators
 * for tp, dp (x cp), cp ring, pp neighbours, ep, expert dp and tied
 * embeddings.  The caller destroys *out with wl_workload_destroy(). */
int wl_generate(const wl_model *m, const wl_layout *l, wl_workload **out, st_err *err);

/* Memory per rank, per pipeline stage (bytes). */
typedef struct wl_memory_stage {
  int layers;                /* transformer layers on the stage */
  double params;             /* parameters held by one rank (before ZeRO sharding) */
  double weights_bytes;      /* model weights (sharded under zero=3) */
  double grads_bytes;        /* gradient buffers (sharded under zero>=2) */
  double optimizer_bytes;    /* fp32 master weights + Adam moments (sharded under zero>=1) */
  double act_layer_bytes;    /* activations of one layer for one micro-batch */
  double inflight;           /* micro-batches (layer-chunks / chunk size) alive at the peak */
  double activations_bytes;  /* all activations alive at the peak */
  double other_bytes;        /* gathered FSDP parameters, communication buffers, and the
                                larger of loss_work_bytes and recompute_work_bytes */
  double loss_work_bytes;    /* the loss's cross entropy at its peak beyond what it keeps
                                (last stage; 0 elsewhere) */
  double recompute_work_bytes; /* one layer's full activations while it is recomputed
                                  (recompute=full; 0 otherwise) */
  double peak_bytes;         /* sum of the above */
  double host_bytes;         /* host memory one rank holds with offload (0 without) */
} wl_memory_stage;

typedef struct wl_memory {
  int num_stages;
  wl_memory_stage stages[WL_MAX_STAGES];
  int peak_stage;      /* stage with the largest peak */
  double peak_bytes;   /* largest per-rank peak */
} wl_memory;

int wl_memory_estimate(const wl_model *m, const wl_layout *l, wl_memory *out, st_err *err);
/* The most host memory any node of gpus_per_node GPUs holds: the sum of its
 * ranks' host_bytes (rank r on GPU r, of stage r / (num_gpus / pp)). */
double wl_memory_host_per_node(const wl_layout *l, const wl_memory *mem, int gpus_per_node);


/* ---- several jobs on one platform (wl_jobs.c, docs/jobs.md) -------------- */
/* One job of a merge: its workload, its name (prefixed to its programs' and
 * communicators' names, "NAME/..."), and the merged rank (= GPU) of each of
 * its ranks, gpus[0..wl->num_ranks-1]. */
typedef struct wl_merge_part {
  const wl_workload *wl;
  const char *name;
  const int32_t *gpus;
} wl_merge_part;

/* The parts as one workload of num_ranks ranks: part p's rank i is merged
 * rank gpus[i], its communicators (members renumbered) and programs are
 * copied in order after those of parts 0..p-1, roles are merged by name,
 * and ranks no part places run an empty program "idle".  Meta: model and
 * source "jobs", no tokens or FLOPs, the largest peak memory, the parts'
 * iterations when they agree, else 1.  A GPU used twice is an error naming
 * both parts ("jobs 'a' and 'b' both use GPU 3"), and so is one outside
 * 0..num_ranks-1.  The caller destroys *out. */
int wl_merge(const wl_merge_part *parts, int n, int num_ranks, wl_workload **out, st_err *err);

/* Steady background traffic among n ranks: `rounds` all-to-alls of
 * rate_Bps x window_s / rounds bytes each (one rank's whole send buffer,
 * nccl-tests' convention), round k released at k x window_s / rounds by a
 * timer stream (later when round k-1 has not ended: a communicator runs one
 * collective at a time), the timer running to window_s.  Each rank offers
 * rate_Bps over the window.  The caller destroys *out. */
int wl_background_alltoall(int n, double rate_Bps, double window_s, int rounds,
                           wl_workload **out, st_err *err);


#ifdef __cplusplus
}
#endif
#endif /* WL_WORKLOAD_H */
