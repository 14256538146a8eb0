/* cmd_report.c — `simtrain report`: a results file for people, or its
 * summary as JSON (the same bytes `run --json` printed for that run). */
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
          "usage: simtrain report OUT.h5 [--json] [--ranks LIST]\n"
          "       simtrain report SWEEP.h5 [--json] [--sort COL [--desc]]\n\n"
          "Print a results file written by 'simtrain run': the summary, per-rank times\n"
          "(all ranks when there are few, a distribution and the slowest when many), the\n"
          "collectives that took the most time and the busiest links.  A sweep file\n"
          "('simtrain sweep -o', 'simtrain merge') prints a row per point.\n\n"
          "options:\n"
          "  --json        print only the summary, as the one-line JSON 'run --json' prints\n"
          "  --ranks LIST  per-rank table for these ranks only (e.g. 0-3,8,12)\n"
          "  --sort COL    a sweep's rows by a column (docs/sweep.md); --desc largest first\n"
          "  -h, --help    this help\n");
}

const char cmd_report_help[] = "print a results file for people (or --json)";

int cmd_report(int argc, char **argv)
{
  static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
                                           {"ranks", required_argument, NULL, 'r'},
                                           {"sort", required_argument, NULL, 's'},
                                           {"desc", no_argument, NULL, 'D'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  const char *path = NULL, *ranks_spec = NULL, *sort = NULL;
  int json = 0, desc = 0, ch;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch (ch) {
    case 'j': json = 1; break;
    case 'r': ranks_spec = optarg; break;
    case 's': sort = optarg; break;
    case 'D': desc = 1; break;
    case 'h': usage(stdout); return 0;
    default: return cli_bad_option("report", argv);
    }
  }
  for (int i = optind; i < argc; i++) {
    if (path)
      return cli_usage_error("report", "one results file at a time ('%s' and '%s')", path, argv[i]);
    path = argv[i];
  }
  if (!path)
    return cli_usage_error("report", "no results file given");

  st_err err = {0};
  if (an_sweep_is_file(path)) {
    if (ranks_spec)
      return cli_usage_error("report", "'--ranks' is for results files, '%s' is a sweep", path);
    if (desc && !sort)
      return cli_usage_error("report", "--desc needs --sort COL");
    an_sweep *sw;
    if (an_sweep_read(path, &sw, &err))
      return cli_fail(&err);
    int rc = json ? an_sweep_print_json(sw, sort, desc, stdout, &err)
                  : an_sweep_print(sw, sort, desc, stdout, &err);
    an_sweep_destroy(sw);
    return rc ? cli_fail(&err) : 0;
  }
  if (sort || desc)
    return cli_usage_error("report", "'--sort' and '--desc' are for sweep files");
  an_results *r = NULL;
  if (an_results_read(path, &r, &err) != ST_OK)
    return cli_fail(&err);
  int32_t *sel = NULL;
  size_t nsel = 0;
  if (ranks_spec &&
      an_rank_list_parse(ranks_spec, (int32_t)r->num_ranks, &sel, &nsel, &err) != ST_OK) {
    an_results_destroy(r);
    return cli_fail(&err);
  }
  if (json)
    an_summary_print_json_replay(&r->summary, r->replay, sel, nsel, stdout);
  else
    an_report_print_ranks(r, sel, nsel, stdout);
  free(sel);
  an_results_destroy(r);
  return 0;
}
