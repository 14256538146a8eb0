/* cli.h — helpers shared by the subcommands: error printing with the one
 * message format, and the exit statuses.  It also declares every command
 * (commands.h), so that each cmd_<name>.c is compiled against its own
 * prototype. */
#ifndef ST_CLI_H
#define ST_CLI_H

#include <stdio.h>

#include "commands.h"
#include "st_common.h"

/* The full command line, for results files. */
extern const char *cli_command_line;

/* Print "simtrain: error: <msg>" and return the exit status for err->code. */
int cli_fail(const st_err *err);
/* Usage error: print the message and a hint to --help; returns 1. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* For getopt_long users (call with opterr = 0): the usage error for the
 * option getopt_long just rejected, e.g. "unknown option '--bogus'" or
 * "option '--gpus' needs a value"; returns 1. */
int cli_bad_option(const char *cmd, char **argv);
/* Warning on stderr: "simtrain: warning: ...". */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A token count: a number with an optional SI suffix (K M B G T, any case:
 * 1e3 1e6 1e9 1e9 1e12), at least 1 and at most 1e18; 0 or -1. */
int cli_parse_tokens(const char *s, double *v);
/* "I/N", a shard: 1 <= I <= N <= 100000; 0 or -1. */
int cli_parse_shard(const char *s, int *i, int *n);
/* A finite real number of at least lo, nothing after it; 0 or -1. */
int cli_parse_real(const char *s, double lo, double *v);
/* A seed: a whole number from 0 to 2^64 - 1, nothing after it; 0 or -1. */
int cli_parse_seed(const char *s, uint64_t *v);

#endif
