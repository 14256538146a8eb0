/* commands.h — the subcommand table of the simtrain front end.
 *
 * Each command lives in sim/cli/cmd_<name>.c and defines
 *     int cmd_<name>(int argc, char **argv);
 *     const char cmd_<name>_help[] = "one line for 'simtrain --help'";
 * and has its row here, in the order 'simtrain --help' lists them: what a
 * user does first, then reading results, then the tools.  (The table was
 * generated from the files' names; written out, it is where a reader looks
 * for the commands, and their order is a choice, not the alphabet.)  The
 * front end holds no modelling logic: commands parse options and call the
 * stage libraries. */
#ifndef ST_CLI_COMMANDS_H
#define ST_CLI_COMMANDS_H

#define ST_COMMANDS(X)                                                                     \
  X(run)                /* predict a step: model and layout, workload file or trace */      \
  X(train)              /* the whole run with failures, checkpoints and restarts */         \
  X(search)             /* the best layout for a model on a cluster */                      \
  X(sweep)              /* a grid of predictions, whole or one shard */                     \
  X(merge)              /* a sweep's shards joined */                                       \
  X(gen)                /* generate a workload file */                                      \
  X(memory)             /* memory per GPU of a layout */                                    \
  X(import)             /* a captured trace as a workload file */                           \
  X(report)             /* a results or sweep file for people */                            \
  X(compare)            /* results side by side */                                          \
  X(export)             /* Perfetto timeline */                                             \
  X(plot)               /* SVG pictures */                                                  \
  X(coll)               /* one collective, like nccl-tests */                               \
  X(platform)           /* a cluster: summary, routes, SimGrid XML */                       \
  X(validate)           /* predictions against published runs */

#define ST_DECLARE_CMD(name)                                                              \
  int cmd_##name(int argc, char **argv);                                                  \
  extern const char cmd_##name##_help[];
ST_COMMANDS(ST_DECLARE_CMD)
#undef ST_DECLARE_CMD

#endif
