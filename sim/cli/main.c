/* main.c — the simtrain executable: git-style dispatch to subcommands.
 * Exit statuses: 0 success, 1 usage error, 2 bad input, 3 simulation failure
 * (ST_ERR_MAP in st_common.h gives each error code its status). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *cli_command_line = "";

struct command {
  const char *name;
  int (*fn)(int, char **);
  const char *help;
};

#define ST_TABLE_ROW(name) {#name, cmd_##name, cmd_##name##_help},
static const struct command commands[] = {ST_COMMANDS(ST_TABLE_ROW)};
#undef ST_TABLE_ROW

int cli_fail(const st_err *err)
{
  fprintf(stderr, "simtrain: error: %s\n", err->msg[0] ? err->msg : st_strerror(err->code));
  return st_err_exit_status(err->code);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
  va_list ap;
  fprintf(stderr, "simtrain: error: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (see 'simtrain %s --help')\n", cmd);
  return st_err_exit_status(ST_EUSAGE);
}

int cli_bad_option(const char *cmd, char **argv)
{
  const char *arg = argv[optind - 1];
  if (optopt && arg[0] == '-' && arg[1] != '-')
    return cli_usage_error(cmd, "option '-%c' is unknown or needs a value", optopt);
  /* getopt_long leaves optopt 0 for an unknown long option and sets it to the
   * option's value for a known one missing its argument. */
  if (optopt)
    return cli_usage_error(cmd, "option '%s' needs a value", arg);
  const char *eq = strchr(arg, '=');
  if (eq)
    return cli_usage_error(cmd, "unknown option '%.*s'", (int)(eq - arg), arg);
  return cli_usage_error(cmd, "unknown option '%s'", arg);
}

void cli_warn(const char *fmt, ...)
{
  va_list ap;
  fprintf(stderr, "simtrain: warning: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static void usage(FILE *out)
{
  fprintf(out, "usage: simtrain <command> [options]   (simtrain <command> --help)\n\n"
               "simtrain %s predicts distributed training time by replaying workloads on\n"
               "SimGrid platforms.\n\ncommands:\n",
          SIMTRAIN_VERSION);
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
  fprintf(out, "\nany command:\n"
               "  --max-memory SIZE  end with an error (exit 2) once the process's resident\n"
               "                     memory passes SIZE (4G, 512M; default 90%% of memory)\n");
}

static char *join_args(int argc, char **argv)
{
  size_t n = 1;
  for (int i = 0; i < argc; i++)
    n += strlen(argv[i]) + 3;
  char *s = malloc(n);
  if (!s)
    return NULL;
  s[0] = '\0';
  for (int i = 0; i < argc; i++) {
    if (i)
      strcat(s, " ");
    strcat(s, argv[i]);
  }
  return s;
}

/* --max-memory SIZE (or =SIZE), anywhere on the command line and for every
 * command: taken out of argv before the command sees it.  Returns 0, or the
 * exit status of a usage error. */
static int take_max_memory(int *argc, char **argv, double *limit)
{
  *limit = 0;
  int k = 1, i = 1;
  for (; i < *argc && strcmp(argv[i], "--"); i++) {
    const char *v = NULL;
    if (!strcmp(argv[i], "--max-memory")) {
      if (i + 1 >= *argc) {
        fprintf(stderr, "simtrain: error: --max-memory needs a size (4G, 512M)\n");
        return st_err_exit_status(ST_EUSAGE);
      }
      v = argv[++i];
    } else if (!strncmp(argv[i], "--max-memory=", 13))
      v = argv[i] + 13;
    if (!v) {
      argv[k++] = argv[i];
      continue;
    }
    double b;
    if (st_parse_bytes(v, &b) || !(b >= 1 << 20) || b > 1e18) {
      fprintf(stderr,
              "simtrain: error: --max-memory '%s' is not a size of at least 1M (4G, 512M)\n", v);
      return st_err_exit_status(ST_EUSAGE);
    }
    *limit = b;
  }
  while (i < *argc) /* "--" and what follows it stay as they are */
    argv[k++] = argv[i++];
  *argc = k;
  argv[k] = NULL;
  return 0;
}

int main(int argc, char **argv)
{
  st_signals_install(); /* temporary output files go when interrupted */
  double limit;
  int urc = take_max_memory(&argc, argv, &limit);
  if (urc)
    return urc;
  st_err merr;
  if (st_mem_guard_start(limit, &merr))
    return cli_fail(&merr);
  if (argc < 2) {
    usage(stderr);
    return st_err_exit_status(ST_EUSAGE);
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("simtrain %s\n", SIMTRAIN_VERSION);
    return 0;
  }
  char *line = join_args(argc, argv);
  if (line)
    cli_command_line = line;
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[1], commands[i].name)) {
      int rc = commands[i].fn(argc - 1, argv + 1);
      free(line);
      return rc;
    }
  free(line);
  fprintf(stderr, "simtrain: error: '%s' is not a simtrain command (see 'simtrain --help')\n",
          argv[1]);
  return st_err_exit_status(ST_EUSAGE);
}
/* A token count: a number with an optional SI suffix (K M B G T, any case:
 * 1e3 1e6 1e9 1e9 1e12), at least 1 and at most 1e18. */
int cli_parse_tokens(const char *s, double *v)
{
  char *end;
  double x = strtod(s, &end);
  if (end == s)
    return -1;
  static const struct {
    char c;
    double scale;
  } si[] = {{'k', 1e3}, {'m', 1e6}, {'b', 1e9}, {'g', 1e9}, {'t', 1e12}};
  for (size_t i = 0; i < sizeof si / sizeof si[0] && *end; i++)
    if ((*end | 0x20) == si[i].c) {
      x *= si[i].scale;
      end++;
      break;
    }
  if (*end || !isfinite(x) || x < 1 || x > 1e18)
    return -1;
  *v = x;
  return 0;
}

/* A real number of at least lo (and finite), nothing after it. */
int cli_parse_real(const char *s, double lo, double *v)
{
  char *end;
  double x = strtod(s, &end);
  if (end == s || *end || !isfinite(x) || x < lo)
    return -1;
  *v = x;
  return 0;
}

int cli_parse_shard(const char *s, int *i, int *n)
{
  char *end;
  long a = strtol(s, &end, 10);
  if (end == s || *end != '/')
    return -1;
  const char *p = end + 1;
  long b = strtol(p, &end, 10);
  if (end == p || *end || a < 1 || b < 1 || a > b || b > 100000)
    return -1;
  *i = (int)a;
  *n = (int)b;
  return 0;
}

int cli_parse_seed(const char *s, uint64_t *v)
{
  char *end;
  errno = 0;
  unsigned long long x = strtoull(s, &end, 10);
  if (end == s || *end || s[0] == '-' || errno)
    return -1;
  *v = (uint64_t)x;
  return 0;
}
