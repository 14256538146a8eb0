/* cmd_compare.c — `simtrain compare A.h5 B.h5 ...`: runs side by side, the
 * first as the baseline. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"

static void usage(FILE *out)
{
  fprintf(out, "usage: simtrain compare A.h5 B.h5 ... [--json] [--plot [-o FILE.svg]]\n\n"
               "Put the summaries of results files side by side.  The first file (A) is the\n"
               "baseline: every other run X gets X-A and X/A for step time, throughput, MFU,\n"
               "the per-step breakdown and memory.\n\n"
               "options:\n"
               "  --json      one JSON object: values, differences and ratios per run\n"
               "  --plot      also draw the runs' per-step breakdown as stacked bars (SVG)\n"
               "  -o FILE     where --plot writes (default: A-compare.svg beside A.h5)\n"
               "  -h, --help  this help\n");
}

const char cmd_compare_help[] = "results files side by side, with differences and ratios";

int cmd_compare(int argc, char **argv)
{
  static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
                                           {"plot", no_argument, NULL, 'p'},
                                           {"output", required_argument, NULL, 'o'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  int json = 0, plot = 0, ch;
  const char *out = NULL;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
    switch (ch) {
    case 'j': json = 1; break;
    case 'p': plot = 1; break;
    case 'o': out = optarg; break;
    case 'h': usage(stdout); return 0;
    default: return cli_bad_option("compare", argv);
    }
  }
  const char **paths = calloc((size_t)argc, sizeof *paths);
  size_t n = 0;
  if (!paths) {
    st_err e;
    st_err_set(&e, ST_ENOMEM, "compare: out of memory");
    return cli_fail(&e);
  }
  for (int i = optind; i < argc; i++)
    paths[n++] = argv[i];
  if (n < 2) {
    free(paths);
    return cli_usage_error("compare", "give at least two results files (got %zu)", n);
  }
  if (out && !plot) {
    free(paths);
    return cli_usage_error("compare", "'-o' names the picture: it needs --plot");
  }
  char def[4096];
  if (plot && !out) {
    size_t l = strlen(paths[0]);
    if (l > 3 && !strcmp(paths[0] + l - 3, ".h5"))
      l -= 3;
    snprintf(def, sizeof def, "%.*s-compare.svg", (int)l, paths[0]);
    out = def;
  }
  an_results **runs = calloc(n, sizeof *runs);
  st_err err = {0};
  int rc = 0;
  for (size_t i = 0; runs && i < n && !rc; i++)
    if (an_results_read(paths[i], &runs[i], &err) != ST_OK)
      rc = cli_fail(&err);
  if (!runs) {
    st_err_set(&err, ST_ENOMEM, "compare: out of memory");
    rc = cli_fail(&err);
  }
  if (!rc && plot) {
    if (an_plot_compare((const an_results *const *)runs, n, out, &err) != ST_OK)
      rc = cli_fail(&err);
    else
      fprintf(stderr, "wrote '%s'\n", out);
  }
  if (!rc) {
    if (json)
      an_compare_print_json((const an_results *const *)runs, n, stdout);
    else
      an_compare_print((const an_results *const *)runs, n, stdout);
  }
  for (size_t i = 0; runs && i < n; i++)
    an_results_destroy(runs[i]);
  free(runs);
  free(paths);
  return rc;
}
