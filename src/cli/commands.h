/* One function per subcommand; each lives in src/cli/cmd_<name>.c and returns the process
 * exit status (0 ok, 1 runtime error, 2 usage error). Only main() calls exit(). */
#ifndef SPLADE_CLI_COMMANDS_H
#define SPLADE_CLI_COMMANDS_H

int cmd_tokenize(int argc, char **argv);
int cmd_encode(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_fetch_model(int argc, char **argv);
int cmd_build(int argc, char **argv);
int cmd_add(int argc, char **argv);
int cmd_update(int argc, char **argv);
int cmd_delete(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_bench_lmhead(int argc, char **argv);

#endif
