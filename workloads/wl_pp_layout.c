/* wl_pp_layout.c — Megatron-core's pipeline_model_parallel_layout strings
 * ("Et*3|(tt|)*29,m|L"): expanded and split into layers per virtual stage
 * for wl_layout_resolve (docs/workloads.md, "Pipeline splits"). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_gen_int.h"
#include "workload.h"

/* ---- Megatron-core's pipeline_model_parallel_layout strings ---------------------------- */
/* The grammar of PipelineParallelLayerLayout.parse_str_to_list
 * (megatron/core/transformer/pipeline_parallel_layer_layout.py): '(...)*N'
 * groups are unrolled first (one level: the regex takes no ')' inside), then
 * 'x*N' repeats one character; '|' separates stages; E embedding,
 * t transformer layer, L loss, m multi-token prediction (not modelled here).
 * Positions in messages are 1-based, in the string as given (commas dropped). */
typedef struct pp_str {
  char *c;
  int *pos; /* position in the given string of each character */
  size_t n, cap;
} pp_str;

#define PP_EXPAND_MAX 1000000

static int pp_push(pp_str *s, char c, int pos)
{
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 256;
    if (cap > PP_EXPAND_MAX)
      cap = PP_EXPAND_MAX;
    if (s->n >= cap)
      return -1;
    char *nc = realloc(s->c, cap);
    if (!nc)
      return -2;
    s->c = nc;
    int *np = realloc(s->pos, cap * sizeof *np);
    if (!np)
      return -2;
    s->pos = np;
    s->cap = cap;
  }
  s->c[s->n] = c;
  s->pos[s->n++] = pos;
  return 0;
}

/* A repetition count after '*' at src[*i]; returns -1 when there is none. */
static long pp_count(const char *src, size_t len, size_t *i)
{
  size_t j = *i;
  if (j >= len || src[j] != '*' || j + 1 >= len || !isdigit((unsigned char)src[j + 1]))
    return -1;
  long v = 0;
  for (j++; j < len && isdigit((unsigned char)src[j]); j++) {
    v = v * 10 + (src[j] - '0');
    if (v > PP_EXPAND_MAX)
      v = PP_EXPAND_MAX + 1;
  }
  *i = j;
  return v;
}

static void pp_free(pp_str *s)
{
  free(s->c);
  free(s->pos);
  memset(s, 0, sizeof *s);
}

/* Both layout-string functions report into msg (msgn bytes), set rc and
 * leave through their 'done' label. */
#define PPERR(...)                                                                       \
  do {                                                                                   \
    snprintf(msg, msgn, __VA_ARGS__);                                                    \
    rc = -1;                                                                             \
    goto done;                                                                           \
  } while (0)

/* Expand the layout string s into one character per layer or boundary.
 * Returns 0, or fills msg with what is wrong (and returns -1; -2 out of memory). */
static int pp_expand(const char *s, pp_str *out, char *msg, size_t msgn)
{
  size_t len = strlen(s);
  pp_str a = {0};
  int rc = 0;
#define PUSH(s_, c_, p_)                                                                 \
  do {                                                                                   \
    int pr_ = pp_push(s_, c_, p_);                                                       \
    if (pr_ == -2) {                                                                     \
      rc = -2;                                                                           \
      goto done;                                                                         \
    }                                                                                    \
    if (pr_)                                                                             \
      PPERR("expands to more than %d characters", PP_EXPAND_MAX);                        \
  } while (0)
  /* pass 1: '(...)*N' */
  for (size_t i = 0; i < len;) {
    if (s[i] == ')')
      PPERR("position %zu: ')' without its '('", i + 1);
    if (s[i] != '(') {
      PUSH(&a, s[i], (int)i + 1);
      i++;
      continue;
    }
    size_t close = i + 1;
    while (close < len && s[close] != ')') {
      if (s[close] == '(')
        PPERR("position %zu: '(' inside '(' at position %zu (groups do not nest)", close + 1,
              i + 1);
      close++;
    }
    if (close >= len)
      PPERR("position %zu: '(' without its ')'", i + 1);
    if (close == i + 1)
      PPERR("position %zu: '()' repeats nothing", i + 1);
    size_t j = close + 1;
    long reps = pp_count(s, len, &j);
    if (reps < 0)
      PPERR("position %zu: ')' is not followed by a repetition count '*N'", close + 1);
    for (long r = 0; r < reps; r++)
      for (size_t k = i + 1; k < close; k++)
        PUSH(&a, s[k], (int)k + 1);
    i = j;
  }
  /* pass 2: 'x*N' */
  for (size_t i = 0; i < a.n;) {
    if (a.c[i] == '*')
      PPERR("position %d: '*' repeats nothing", a.pos[i]);
    if (i + 1 < a.n && a.c[i + 1] == '*') {
      size_t j = i + 1;
      long reps = pp_count(a.c, a.n, &j);
      if (reps < 0)
        PPERR("position %d: '*' is not followed by a repetition count", a.pos[i + 1]);
      for (long r = 0; r < reps; r++)
        PUSH(out, a.c[i], a.pos[i]);
      i = j;
      continue;
    }
    PUSH(out, a.c[i], a.pos[i]);
    i++;
  }
  for (size_t i = 0; i < out->n; i++) {
    char c = out->c[i];
    if (c == 'm')
      PPERR("position %d: 'm' (a multi-token-prediction layer) is not modelled", out->pos[i]);
    if (c != 'E' && c != 't' && c != 'L' && c != '|')
      PPERR("position %d: '%c' is not a layer (known: E embedding, t transformer layer, "
            "L loss, | stage boundary, (...)*N and x*N repetitions)",
            out->pos[i], c);
  }
done:
#undef PUSH
  pp_free(&a);
  return rc;
}

/* The layers of each virtual stage from a layout string, with Megatron-core's
 * validate_layer_layout rules: exactly one E, opening the first stage (where
 * Megatron builds the embedding: pre_process on virtual stage 0), exactly
 * one L closing the last, as many t as the model has layers, pp*vpp stages
 * (the string's stage count sets vpp when vpp is not given). */
int wl__pp_layout_split(wl_layout *l, const wl_model *m, int vpp_given, char *msg, size_t msgn)
{
  pp_str e = {0};
  int rc = pp_expand(l->pp_layout, &e, msg, msgn);
  if (rc)
    goto done;
  int nstages = 1, ts = 0, ne = 0, nl = 0;
  for (size_t i = 0; i < e.n; i++)
    nstages += e.c[i] == '|';
  if (nstages % l->pp)
    PPERR("has %d stages, not divisible by pp (%d)", nstages, l->pp);
  if (vpp_given && nstages != l->pp * l->vpp)
    PPERR("has %d stages, but pp*vpp = %d*%d = %d", nstages, l->pp, l->vpp, l->pp * l->vpp);
  if (nstages > WL_MAX_VSTAGES)
    PPERR("has %d stages, more than the %d virtual stages supported", nstages, WL_MAX_VSTAGES);
  l->vpp = nstages / l->pp;
  int vs = 0;
  memset(l->vs_layers, 0, sizeof l->vs_layers);
  for (size_t i = 0; i < e.n; i++) {
    char c = e.c[i];
    if (c == '|') {
      vs++;
      continue;
    }
    if (c == 't') {
      l->vs_layers[vs]++;
      ts++;
    } else if (c == 'E') {
      if (ne++)
        PPERR("position %d: a second 'E' (the embedding is one layer)", e.pos[i]);
      if (i != 0)
        PPERR("position %d: 'E' must open the first stage (Megatron builds the embedding "
              "on virtual stage 0)",
              e.pos[i]);
    } else if (c == 'L') {
      if (nl++)
        PPERR("position %d: a second 'L' (the loss is one layer)", e.pos[i]);
      if (i != e.n - 1)
        PPERR("position %d: 'L' must close the last stage (Megatron builds the output layer "
              "and loss on the last virtual stage)",
              e.pos[i]);
    }
  }
  if (!ne)
    PPERR("has no 'E' (the embedding must open the first stage)");
  if (!nl)
    PPERR("has no 'L' (the loss must close the last stage)");
  if (ts != m->layers)
    PPERR("holds %d transformer layers 't', but the model has %d", ts, m->layers);
#undef PPERR
done:
  pp_free(&e);
  return rc;
}

