/* cmd_export.c — `simtrain export OUT.h5 --perfetto -o trace.json[.gz]`: a
 * results file's timeline for trace viewers. */
#include <getopt.h>
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
  static const struct option longopts[] = {{"perfetto", no_argument, NULL, 'p'},
                                           {"output", required_argument, NULL, 'o'},
                                           {"group", required_argument, NULL, 'g'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  const char *path = NULL, *out = NULL;
  int perfetto = 0, group = AN_GROUP_RANK, ch;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
    switch (ch) {
    case 'p': perfetto = 1; break;
    case 'o': out = optarg; break;
    case 'g':
      if (!strcmp(optarg, "rank"))
        group = AN_GROUP_RANK;
      else if (!strcmp(optarg, "node"))
        group = AN_GROUP_NODE;
      else
        return cli_usage_error("export", "--group '%s' is not rank or node", optarg);
      break;
    case 'h': usage(stdout); return 0;
    default: return cli_bad_option("export", argv);
    }
  }
  for (int i = optind; i < argc; i++) {
    if (path)
      return cli_usage_error("export", "one results file at a time ('%s' and '%s')", path, argv[i]);
    path = argv[i];
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
