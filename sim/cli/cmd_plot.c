/* cmd_plot.c — `simtrain plot OUT.h5 --timeline|--breakdown|--links`: an SVG
 * picture of a results file. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "sweep.h"

static void usage(FILE *out)
{
  fprintf(out,
          "usage: simtrain plot OUT.h5 --timeline|--breakdown|--links [-o FILE.svg]\n"
          "                    [--ranks LIST]\n"
          "       simtrain plot SWEEP.h5 --scaling [--series COL] [-o FILE.svg]\n"
          "       simtrain plot SWEEP.h5 --heatmap X Y [--value COL] [-o FILE.svg]\n"
          "       simtrain plot SEARCH.h5 --memory [-o FILE.svg]\n\n"
          "Draw a results file or a sweep file as a self-contained SVG picture.\n\n"
          "options:\n"
          "  --timeline    the chosen ranks' streams over the run (needs run --timeline)\n"
          "  --breakdown   stacked bars per rank: compute, exposed comm, bubble, idle\n"
          "  --links       heat map of link utilisation, busiest first\n"
          "  --scaling     a sweep: throughput per GPU and time to train against GPUs, a line\n"
          "                per cluster (or per --series COL, e.g. model, request)\n"
          "  --heatmap X Y a sweep: the best --value COL (default tokens_per_s_per_gpu) over\n"
          "                two knobs, each a layout key (tp, pp, dp, ...) or a column (gbs, ...)\n"
          "  --where C=V   a sweep: draw only the rows whose column C is V (e.g. model=llama3-70b)\n"
          "  --memory      a search file ('search -o'): every candidate's step time (simulated,\n"
          "                else estimated) against its peak memory per GPU\n"
          "  -o FILE       where to write it (default: OUT-<kind>.svg beside OUT.h5)\n"
          "  --ranks LIST  ranks to draw, like 0-3,8 (timeline default: the first 8)\n"
          "  -h, --help    this help\n");
}

const char cmd_plot_help[] = "SVG pictures of a results file: timeline, per-rank breakdown, links";

int cmd_plot(int argc, char **argv)
{
  static const struct option longopts[] = {
      {"timeline", no_argument, NULL, 'T'},    {"breakdown", no_argument, NULL, 'B'},
      {"links", no_argument, NULL, 'L'},       {"output", required_argument, NULL, 'o'},
      {"ranks", required_argument, NULL, 'r'}, {"help", no_argument, NULL, 'h'},
      {"scaling", no_argument, NULL, 'S'},     {"heatmap", required_argument, NULL, 'H'},
      {"series", required_argument, NULL, 's'}, {"value", required_argument, NULL, 'v'},
      {"memory", no_argument, NULL, 'M'},       {"where", required_argument, NULL, 'w'},
      {NULL, 0, NULL, 0}};
  const char *path = NULL, *out = NULL, *ranks_spec = NULL, *kind = NULL;
  const char *series = NULL, *value = NULL, *hx = NULL, *hy = NULL, *where = NULL;
  int ch;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
    const char *k = ch == 'T'   ? "timeline"
                    : ch == 'B' ? "breakdown"
                    : ch == 'L' ? "links"
                    : ch == 'S' ? "scaling"
                    : ch == 'H' ? "heatmap"
                    : ch == 'M' ? "memory"
                                : NULL;
    if (ch == 'H') {
      /* --heatmap X Y: Y is the next argument */
      if (optind >= argc || argv[optind][0] == '-')
        return cli_usage_error("plot", "--heatmap needs two knobs, X and Y (e.g. --heatmap tp pp)");
      hx = optarg;
      hy = argv[optind++];
    }
    if (k) {
      if (kind && strcmp(kind, k))
        return cli_usage_error("plot", "one picture at a time ('--%s' and '--%s')", kind, k);
      kind = k;
      continue;
    }
    switch (ch) {
    case 'o': out = optarg; break;
    case 'r': ranks_spec = optarg; break;
    case 's': series = optarg; break;
    case 'v': value = optarg; break;
    case 'w': where = optarg; break;
    case 'h': usage(stdout); return 0;
    default: return cli_bad_option("plot", argv);
    }
  }
  for (int i = optind; i < argc; i++) {
    if (path)
      return cli_usage_error("plot", "one results file at a time ('%s' and '%s')", path, argv[i]);
    path = argv[i];
  }
  if (!path)
    return cli_usage_error("plot", "no results file given");
  if (!kind)
    return cli_usage_error("plot", "choose a picture (--timeline, --breakdown or --links; "
                                   "--scaling, --heatmap X Y or --memory for a sweep)");
  int sweep_kind = !strcmp(kind, "scaling") || !strcmp(kind, "heatmap") || !strcmp(kind, "memory");
  if (series && strcmp(kind, "scaling"))
    return cli_usage_error("plot", "'--series' goes with '--scaling'");
  if (value && strcmp(kind, "heatmap"))
    return cli_usage_error("plot", "'--value' goes with '--heatmap'");
  if (ranks_spec && sweep_kind)
    return cli_usage_error("plot", "'--ranks' does not apply to a sweep");
  if (where && !sweep_kind)
    return cli_usage_error("plot", "'--where' chooses rows of a sweep file");
  if (ranks_spec && !strcmp(kind, "links"))
    return cli_usage_error("plot", "'--ranks' does not apply to '--links'");
  char def[4096];
  if (!out) {
    size_t n = strlen(path);
    if (n > 3 && !strcmp(path + n - 3, ".h5"))
      n -= 3;
    snprintf(def, sizeof def, "%.*s-%s.svg", (int)n, path, kind);
    out = def;
  }
  st_err err = {0};
  int is_sweep = an_sweep_is_file(path);
  if (sweep_kind != is_sweep)
    return cli_usage_error("plot", is_sweep ? "'%s' is a sweep file: --scaling, --heatmap X Y or --memory"
                                            : "'--%s' draws a sweep file; '%s' is not one",
                           is_sweep ? path : kind, path);
  if (is_sweep) {
    an_sweep *sw;
    if (an_sweep_read(path, &sw, &err))
      return cli_fail(&err);
    if (where && an_sweep_keep(sw, where, &err)) {
      an_sweep_destroy(sw);
      return cli_fail(&err);
    }
    int rc = !strcmp(kind, "scaling") ? an_sweep_plot_scaling(sw, series, out, &err)
             : !strcmp(kind, "memory") ? an_sweep_plot_memory(sw, out, &err)
                                       : an_sweep_plot_heatmap(sw, hx, hy, value, out, &err);
    an_sweep_destroy(sw);
    if (rc)
      return cli_fail(&err);
    fprintf(stderr, "wrote '%s'\n", out);
    return 0;
  }
  an_results *r = NULL;
  if (an_results_read(path, &r, &err) != ST_OK)
    return cli_fail(&err);
  int32_t *sel = NULL;
  size_t nsel = 0;
  int rc = ST_OK;
  if (ranks_spec)
    rc = an_rank_list_parse(ranks_spec, (int32_t)r->num_ranks, &sel, &nsel, &err);
  if (rc == ST_OK) {
    if (!strcmp(kind, "timeline"))
      rc = an_plot_timeline(r, sel, nsel, out, &err);
    else if (!strcmp(kind, "breakdown"))
      rc = an_plot_breakdown(r, sel, nsel, out, &err);
    else
      rc = an_plot_links(r, out, &err);
  }
  free(sel);
  an_results_destroy(r);
  if (rc != ST_OK)
    return cli_fail(&err);
  fprintf(stderr, "wrote '%s'\n", out);
  return 0;
}
