/* wl_gen_int.h — internals shared by the generator sources (wl_model.c,
 * wl_hf.c, wl_layout.c, wl_gen*.c, wl_memory.c): parameter counts per rank and the
 * pipeline schedule.  Not part of the public interface. */
#ifndef WL_GEN_INT_H
#define WL_GEN_INT_H

#include "workload.h"

/* Parameters one rank holds for one transformer layer: dense ones sharded by
 * tp, routed experts by etp (expert tensor parallel) and ep. */
typedef struct wl__params {
  double attn;   /* attention block incl. its norm (dense, reduced over dp x cp) */
  double mlp;    /* dense MLP or router + shared experts, incl. norm (dense) */
  double expert; /* routed experts on this rank (reduced over the expert-dp group) */
} wl__params;

/* A Hugging Face config.json (an object with "architectures" or
 * "model_type"), mapped key by key onto *m (wl_hf.c).  Messages start
 * "model 'WHAT': ".  On error *m is unchanged. */
struct cJSON;
int wl__hf_parse(const struct cJSON *root, const char *what, wl_model *m, st_err *err);
/* How wl_hf.c reads `key` of a config of architecture `arch` (an
 * "architectures" entry): 1 mapped onto the model, 2 read and ignored (it
 * changes neither the step's work nor its memory), 0 not known (accepted,
 * unread), -1 the architecture is not supported. */
int wl__hf_key_class(const char *arch, const char *key);

int wl__vocab_padded(const wl_model *m, int tp);
int wl__is_moe_layer(const wl_model *m, int layer);
void wl__layer_params(const wl_model *m, int tp, int etp, int ep, int layer, wl__params *p);
double wl__embedding_params(const wl_model *m, int tp);
/* final norm + output layer (0 for the output weight when tied and pp == 1) */
double wl__output_params(const wl_model *m, int tp, int pp);
/* Whether a stage's parameters stay gathered from its first forward to its
 * last backward with the gradients accumulated unsharded: FSDP2 under a
 * pipeline schedule (wl_gen_zero.c, the generator; wl_memory.c, its memory). */
int wl__fsdp2_kept(const wl_layout *l);
/* The loss's cross entropy (ce_fusion) per logit: the bytes it keeps from its
 * forward to its backward and the most it holds at once (wl_gen_layer.c). */
void wl__loss_memory(const wl_layout *l, double *kept, double *peak);

/* First global layer of pipeline stage s's virtual chunk c, and its layer count. */
void wl__chunk_layers(const wl_layout *l, const wl_model *m, int stage, int chunk, int *first,
                      int *count);

/* One unit of a pipeline schedule: forward or backward of (micro-batch, chunk). */
typedef struct wl__unit {
  int fwd; /* 1 forward, 0 backward */
  int mb;
  int chunk;
} wl__unit;

/* Units of stage s in execution order; *n = 2 * m * vpp.  Caller frees. */
wl__unit *wl__schedule(const wl_layout *l, int stage, int *n);
/* How many forward units stage s runs before its first backward: after them
 * the schedule alternates forward and backward (the steady state) until its
 * forwards run out. */
int wl__schedule_warm(const wl_layout *l, int stage);
/* The moment of stage s's schedule with the most transformer layers alive
 * (chunks forwarded, not yet backwarded; ties: the most chunks): how many
 * chunks and layers are alive then. */
void wl__peak_alive(const wl_layout *l, int stage, int *chunks, int *layers);

/* wl_pp_layout.c: l->pp_layout into l->vs_layers (vpp_given: the layout
 * gave vpp); 0, -1 with what is wrong in msg, -2 out of memory. */
int wl__pp_layout_split(wl_layout *l, const wl_model *m, int vpp_given, char *msg, size_t msgn);

/* wl_layout_split.c: stage_layers into l->vs_layers, dp_microbatches into
 * l->dp_run_*; 0, or -1 with what is wrong in msg. */
int wl__layout_stage_list(wl_layout *l, const wl_model *m, char *msg, size_t cap);
int wl__layout_dp_list(wl_layout *l, char *msg, size_t cap);

/* ---- wl_offload.c ------------------------------------------------------------ */
/* "none", "optimizer", "params", "both" -> wl_offload, -1 when unknown. */
int wl__offload_from_name(const char *s);
/* The offload default (none) and its rules against the rest of the layout
 * (zero, dp_impl): 0, or -1 with what is wrong in msg. */
int wl__offload_resolve(wl_layout *l, char *msg, size_t n);
/* What offload moves off one rank's GPU: the stage's weights, gradients and
 * optimizer state become host bytes (shard: the rank's parameter shard). */
void wl__offload_memory(const wl_layout *l, double shard, wl_memory_stage *st);

#endif
