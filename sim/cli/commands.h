/* commands.h — the subcommand table of the simtrain front end.
 * Each command lives in cmd_<name>.c with its own option table and --help;
 * add one line here to add a command.  The front end holds no modelling
 * logic: commands parse options and call the stage libraries. */
#ifndef ST_CLI_COMMANDS_H
#define ST_CLI_COMMANDS_H

#define ST_COMMANDS(X)                                                                    \
  X(report, "print a results file for people (or --json)")                                \
  X(coll, "one collective over N GPUs, printed like nccl-tests")                          \
  X(compare, "results files side by side, with differences and ratios")                  \
  X(export, "a results file's timeline as a Perfetto/Chrome trace")                      \
  X(platform, "show a cluster: summary, routes between GPUs, SimGrid XML")                \
  X(plot, "SVG pictures of a results file: timeline, per-rank breakdown, links")

#define ST_DECLARE_CMD(name, help) int cmd_##name(int argc, char **argv);
ST_COMMANDS(ST_DECLARE_CMD)
#undef ST_DECLARE_CMD

#endif
