/* commands.h — the subcommand table of the simtrain front end.
 *
 * Each command lives in sim/cli/cmd_<name>.c and defines
 *     int cmd_<name>(int argc, char **argv);
 *     const char cmd_<name>_help[] = "one line for 'simtrain --help'";
 * The build finds the cmd_*.c files and generates the table
 * (cli_commands.inc, one X(name) per file), so adding a command is adding
 * its file.  The front end holds no modelling logic: commands parse options
 * and call the stage libraries. */
#ifndef ST_CLI_COMMANDS_H
#define ST_CLI_COMMANDS_H

#include "cli_commands.inc" /* #define ST_COMMANDS(X) X(coll) X(compare) ... */

#define ST_DECLARE_CMD(name)                                                              \
  int cmd_##name(int argc, char **argv);                                                  \
  extern const char cmd_##name##_help[];
ST_COMMANDS(ST_DECLARE_CMD)
#undef ST_DECLARE_CMD

#endif
