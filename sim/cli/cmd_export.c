/* cmd_export.c — `simtrain export OUT.h5 --perfetto -o trace.json[.gz]`: a
 * results file's timeline for trace viewers. */
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"

static void usage(FILE *out)
{
  fprintf(out,
          "usage: simtrain export OUT.h5 --perfetto -o TRACE.json[.gz]\n\n"
          "Write the timeline of a results file (a run with --timeline) as a Chrome/Perfetto\n"
          "trace: a process per rank, a thread per stream, a slice per op, flows between\n"
          "matching send/recv, and link utilisation counters.  Open it in ui.perfetto.dev.\n\n"
          "options:\n"
          "  --perfetto   Chrome/Perfetto trace JSON (the one format for now)\n"
          "  -o FILE      where to write it; gzip-compressed when FILE ends in .gz\n"
          "  -h, --help   this help\n");
}

const char cmd_export_help[] = "a results file's timeline as a Perfetto/Chrome trace";

int cmd_export(int argc, char **argv)
{
  const char *path = NULL, *out = NULL;
  int perfetto = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--perfetto")) {
      perfetto = 1;
    } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
      if (i + 1 >= argc)
        return cli_usage_error("export", "'%s' needs a file name", a);
      out = argv[++i];
    } else if (a[0] == '-' && a[1]) {
      return cli_usage_error("export", "unknown option '%s'", a);
    } else if (path) {
      return cli_usage_error("export", "one results file at a time ('%s' and '%s')", path, a);
    } else {
      path = a;
    }
  }
  if (!path)
    return cli_usage_error("export", "no results file given");
  if (!perfetto)
    return cli_usage_error("export", "choose a format (--perfetto)");
  if (!out)
    return cli_usage_error("export", "no output file given (-o TRACE.json)");
  st_err err = {0};
  an_results *r = NULL;
  if (an_results_read(path, &r, &err) != ST_OK)
    return cli_fail(&err);
  an_export_counts c;
  int rc = an_export_perfetto(r, out, &c, &err);
  an_results_destroy(r);
  if (rc != ST_OK)
    return cli_fail(&err);
  fprintf(stderr, "wrote '%s': %zu ranks, %zu streams, %zu slices, %zu send/recv flows, %zu link counters\n",
          out, c.processes, c.threads, c.slices, c.flows, c.counters);
  return 0;
}
