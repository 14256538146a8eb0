/* drv_search_print.c — a search's results: the table people read and the
 * JSON object programs read. */
#include <math.h>
#include <string.h>

#include "driver.h"

static const char *const rec_short[] = {"none", "sel", "full", "op"};
static const char *const sched_short[] = {"1f1b", "gpipe", "intl"};

/* "tp8 pp4 v5 dp32 cp1 ep1 mbs1 z1 sp ovl rc=sel 1f1b" */
static void knobs_short(const drv_knobs *k, char *b, size_t n)
{
  int u = snprintf(b, n, "tp%d pp%d v%d dp%d cp%d", k->tp, k->pp, k->vpp, k->dp, k->cp);
  if (k->ep > 1 || k->etp)
    u += snprintf(b + u, n - (size_t)u, " ep%d etp%d", k->ep, k->etp ? k->etp : k->tp);
  char rl[16] = "";
  if (k->rc_layers)
    snprintf(rl, sizeof rl, "/%d", k->rc_layers);
  u += snprintf(b + u, n - (size_t)u, " mbs%d z%d%s%s%s rc=%s%s %s", k->mbs, k->zero,
                k->sp ? " sp" : "", k->tp_overlap ? " ovl" : "", k->a2a_overlap ? " a2a" : "",
                rec_short[k->recompute], rl, sched_short[k->schedule]);
  if (k->uneven == 1)
    snprintf(b + u, n - (size_t)u, " +emb/loss");
  else if (k->uneven == 2)
    snprintf(b + u, n - (size_t)u, " edges=%d", k->edge_layers);
}

/* The run command of a candidate, to paste into a shell. */
static void command_line(const drv_search_opts *o, const drv_search *s, const drv_candidate *c,
                         char *b, size_t n)
{
  if (o->model_spec) { /* a model without a name run knows: the layout only */
    snprintf(b, n, "%s", c->layout);
    return;
  }
  int u = snprintf(b, n, "simtrain run --model %s --layout %s --cluster %s", o->model, c->layout,
                   s->cluster);
  if (o->seq > 0 && u >= 0 && (size_t)u < n)
    u += snprintf(b + u, n - (size_t)u, " --seq %d", o->seq);
  /* a spec read from standard input must be fed to the run the same way */
  int model_in = !strcmp(o->model, "-"), cluster_in = !strcmp(s->cluster, "-") ||
                                                       !strncmp(s->cluster, "-:", 2);
  if ((model_in || cluster_in) && u >= 0 && (size_t)u < n)
    snprintf(b + u, n - (size_t)u, "  # with the same %s on standard input",
             model_in ? "model spec" : "cluster spec");
}

void drv_search_print(const drv_search_opts *o, const drv_search *s, int rows, FILE *out)
{
  fprintf(out, "%s on %s (%d x %s), gbs %d, seq %d", o->model, s->cluster, s->num_gpus,
          s->device, o->gbs, s->seq);
  if (o->train_tokens > 0)
    fprintf(out, ", to train on %.4g tokens", o->train_tokens);
  fputc('\n', out);
  fprintf(out, "layouts: %ld enumerated, %ld fit in memory, %zu estimated, %zu simulated\n",
          s->enumerated, s->fitting, s->estimated, s->simulated);
  fprintf(out, "pruned:\n");
  for (int i = 0; i < s->num_reasons; i++)
    fprintf(out, "  %8ld  %s\n", s->reasons[i].count, s->reasons[i].why);
  fprintf(out, "\n%3s  %-44s %9s %9s %7s %9s %6s %8s %9s %8s", "#", "layout", "step s", "est s",
          "est/sim", "tok/s/GPU", "MFU", "peak GiB", "exposed s", "bubble s");
  if (o->train_tokens > 0)
    fprintf(out, " %8s %9s %9s", "days", "M USD", "MWh");
  fputc('\n', out);
  int shown = 0;
  for (size_t i = 0; i < s->num && shown < rows; i++) {
    const drv_candidate *c = &s->cands[i];
    if (c->dominated)
      break;
    char k[128];
    knobs_short(&c->k, k, sizeof k);
    shown++;
    if (c->simulated && !c->failed)
      fprintf(out, "%3d  %-44s %9.4f %9.4f %7.3f %9.1f %5.1f%% %8.1f %9.4f %8.4f", shown, k,
              c->step_time_s, c->estimate_s, c->estimate_s / c->step_time_s,
              c->tokens_per_s_per_gpu, 100 * c->mfu, c->peak_memory_bytes / 1073741824.0,
              c->exposed_comm_s, c->bubble_s);
    if (c->simulated && !c->failed && o->train_tokens > 0)
      fprintf(out, " %8.2f %9.3f %9.1f\n", c->time_to_train_s / 86400, c->cost_usd / 1e6,
              c->energy_MWh);
    else if (c->simulated && !c->failed)
      fputc('\n', out);
    else
      fprintf(out, "%3d  %-44s %9s %9.4f %7s %9s %6s %8.1f %9.4f %8.4f%s%s\n", shown, k, "-",
              c->estimate_s, "-", "-", "-", c->peak_memory_bytes / 1073741824.0,
              c->est_exposed_comm_s, c->est_bubble_s, c->failed ? "  failed: " : "",
              c->failed ? c->failure : "");
  }
  if (s->have_published) {
    const drv_candidate *p = &s->published;
    char k[128];
    knobs_short(&p->k, k, sizeof k);
    fprintf(out, "\npublished: %s: estimate %.4f s, rank %d of %zu (top %.1f%%)", k,
            p->estimate_s, p->estimate_rank, s->estimated,
            100.0 * p->estimate_rank / (double)(s->estimated ? s->estimated : 1));
    if (p->simulated && !p->failed)
      fprintf(out, ", simulated %.4f s; the best found is %.4f s (%+.2f%%)", p->step_time_s,
              s->cands[0].step_time_s, 100 * (s->cands[0].step_time_s / p->step_time_s - 1));
    fputc('\n', out);
  }
  if (s->num && !s->cands[0].dominated) {
    char cmd[2048];
    command_line(o, s, &s->cands[0], cmd, sizeof cmd);
    fprintf(out, "\nbest: %s\n", cmd);
  }
}

static void num(FILE *out, const char *key, double v)
{
  char b[40];
  fprintf(out, ",\"%s\":%s", key, st_json_num(v, b, sizeof b));
}

static void candidate_json(const drv_candidate *c, const char *command, FILE *out)
{
  fprintf(out, "{\"layout\":");
  st_json_str(out, c->layout);
  fprintf(out, ",\"estimate_rank\":%d", c->estimate_rank);
  num(out, "estimate_s", c->estimate_s);
  num(out, "estimate_bubble_s", c->est_bubble_s);
  num(out, "estimate_exposed_comm_s", c->est_exposed_comm_s);
  int ok = c->simulated && !c->failed;
  num(out, "step_time_s", ok ? c->step_time_s : NAN);
  num(out, "tokens_per_s_per_gpu", ok ? c->tokens_per_s_per_gpu : NAN);
  num(out, "mfu", ok ? c->mfu : NAN);
  num(out, "exposed_comm_s", ok ? c->exposed_comm_s : NAN);
  num(out, "bubble_s", ok ? c->bubble_s : NAN);
  num(out, "peak_memory_bytes", c->peak_memory_bytes);
  num(out, "time_to_train_s", ok ? c->time_to_train_s : NAN);
  num(out, "cost_usd", ok ? c->cost_usd : NAN);
  num(out, "energy_MWh", ok ? c->energy_MWh : NAN);
  if (c->failed) {
    fprintf(out, ",\"failure\":");
    st_json_str(out, c->failure);
  }
  if (command) {
    fprintf(out, ",\"command\":");
    st_json_str(out, command);
  }
  fputc('}', out);
}

void drv_search_print_json(const drv_search_opts *o, const drv_search *s, FILE *out)
{
  fprintf(out, "{\"model\":");
  st_json_str(out, o->model);
  fprintf(out, ",\"cluster\":");
  st_json_str(out, s->cluster);
  fprintf(out, ",\"num_gpus\":%d,\"gbs\":%d,\"seq\":%d,\"enumerated\":%ld,\"fitting\":%ld,"
               "\"estimated\":%zu,\"simulated\":%zu,\"candidates\":[",
          s->num_gpus, o->gbs, s->seq, s->enumerated, s->fitting, s->estimated, s->simulated);
  size_t n = 0;
  for (size_t i = 0; i < s->num && !s->cands[i].dominated; i++, n++) {
    if (i)
      fputc(',', out);
    candidate_json(&s->cands[i], NULL, out);
  }
  fprintf(out, "],\"pruned\":{");
  for (int i = 0; i < s->num_reasons; i++) {
    if (i)
      fputc(',', out);
    st_json_str(out, s->reasons[i].why);
    fprintf(out, ":%ld", s->reasons[i].count);
  }
  fprintf(out, "}");
  if (s->have_published) {
    fprintf(out, ",\"published\":");
    candidate_json(&s->published, NULL, out);
  }
  fprintf(out, ",\"best\":");
  if (n) {
    char cmd[2048];
    command_line(o, s, &s->cands[0], cmd, sizeof cmd);
    candidate_json(&s->cands[0], cmd, out);
  } else {
    fprintf(out, "null");
  }
  fprintf(out, "}\n");
}
