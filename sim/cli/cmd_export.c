/* cmd_export.c — `simtrain export OUT.h5 --perfetto -o trace.json[.gz]`: a
 * results file's timeline for trace viewers. */
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"

static void usage(FILE *out)
{
  fprintf(out,
          "usage: simtrain export OUT.h5 --perfetto -o TRACE.json[.gz] [--group rank|node]\n\n"
          "Write the timeline of a results file (a run with --timeline) as a Chrome/Perfetto\n"
          "trace: a process per rank, a thread per stream, a slice per op (collectives with\n"
          "their communicator and members), flows between matching send/recv, and link\n"
          "utilisation counters.  Open it in ui.perfetto.dev.\n\n"
          "options:\n"
          "  --perfetto      Chrome/Perfetto trace JSON (the one format for now)\n"
          "  -o FILE         where to write it; gzip-compressed when FILE ends in .gz\n"
          "  --group rank    a process per rank, a thread per stream (default)\n"
          "  --group node    a process per node, a thread per GPU and stream\n"
          "  -h, --help      this help\n");
}

const char cmd_export_help[] = "a results file's timeline as a Perfetto/Chrome trace";

int cmd_export(int argc, char **argv)
{
  const char *path = NULL, *out = NULL;
  int perfetto = 0, group = AN_GROUP_RANK;
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
    } else if (!strcmp(a, "--group")) {
      if (i + 1 >= argc)
        return cli_usage_error("export", "'%s' needs rank or node", a);
      const char *g = argv[++i];
      if (!strcmp(g, "rank"))
        group = AN_GROUP_RANK;
      else if (!strcmp(g, "node"))
        group = AN_GROUP_NODE;
      else
        return cli_usage_error("export", "--group '%s' is not rank or node", g);
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
  int rc = an_export_perfetto_grouped(r, out, group, &c, &err);
  an_results_destroy(r);
  if (rc != ST_OK)
    return cli_fail(&err);
  fprintf(stderr, "wrote '%s': %zu %s, %zu streams, %zu slices, %zu send/recv flows, %zu link counters\n",
          out, c.processes, group == AN_GROUP_NODE ? "nodes" : "ranks", c.threads, c.slices, c.flows,
          c.counters);
  return 0;
}
