/* cmd_merge.c — `simtrain merge OUT.h5 SHARD.h5...`: the shards of one
 * sweep joined into the file the whole sweep would have written. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sweep.h"

static const char usage_text[] =
    "usage: simtrain merge OUT.h5 SHARD.h5... [--quiet]\n"
    "\n"
    "Join the shard files of one sweep ('simtrain sweep --shard I/N -o ...') into one\n"
    "sweep file, the same bytes an unsharded run writes.  Every shard must be of the\n"
    "same sweep (the spec's digest), each shard number given once, and every point in\n"
    "exactly one file; otherwise nothing is written and the error names the culprit.\n"
    "\n"
    "  --quiet     print nothing on success\n"
    "  -h, --help  this text\n";

const char cmd_merge_help[] = "join the shard files of one sweep";

int cmd_merge(int argc, char **argv)
{
  static const struct option longopts[] = {{"quiet", no_argument, NULL, 'q'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  int quiet = 0, ch;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch (ch) {
    case 'q': quiet = 1; break;
    case 'h': fputs(usage_text, stdout); return 0;
    default: return cli_bad_option("merge", argv);
    }
  }
  if (argc - optind < 2)
    return cli_usage_error("merge", "give the output file and at least one shard");
  const char *out = argv[optind];
  int n = argc - optind - 1;
  for (int i = 0; i < n; i++)
    if (!strcmp(argv[optind + 1 + i], out))
      return cli_usage_error("merge", "the output '%s' is also a shard", out);
  an_sweep **sh = calloc((size_t)n, sizeof *sh);
  st_err err;
  st_err_clear(&err);
  int rc = sh ? ST_OK : st_err_set(&err, ST_ENOMEM, "merge: out of memory");
  for (int i = 0; !rc && i < n; i++)
    rc = an_sweep_read(argv[optind + 1 + i], &sh[i], &err);
  an_sweep m;
  memset(&m, 0, sizeof m);
  if (!rc)
    rc = an_sweep_merge(sh, (size_t)n, &m, &err);
  if (!rc)
    rc = an_sweep_write(out, &m, &err);
  if (!rc && !quiet) {
    size_t failed = 0;
    for (size_t i = 0; i < m.num_rows; i++)
      failed += strcmp(m.rows[i].status, "ok") && strcmp(m.rows[i].status, "estimated");
    fprintf(stderr, "merge: %d shard%s, %d %s (%zu failed) -> '%s'\n", n, n == 1 ? "" : "s",
            (int)m.points, strcmp(m.kind, "search") ? "points" : "candidates", failed, out);
  }
  free(m.rows);
  free(m.name);
  free(m.spec_json);
  free(m.version);
  for (int i = 0; sh && i < n; i++)
    an_sweep_destroy(sh[i]);
  free(sh);
  return rc ? cli_fail(&err) : 0;
}
