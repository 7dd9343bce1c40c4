/* What the CLI shows on stderr for the library (src/cli/cli_output.c): its log messages and a
 * build's progress bar. The library itself prints nothing (include/splade.h, splade_set_log). */
#ifndef SPLADE_CLI_OUTPUT_H
#define SPLADE_CLI_OUTPUT_H

#include <stdint.h>

/* Installs the stderr log callback: "splade-index: MESSAGE" per message; debug messages dropped. */
void splade_cli_log_install(void);
/* quiet: info messages dropped too (--quiet), warnings and errors still shown. */
void splade_cli_log_quiet(int quiet);
/* bare: info messages printed without the "splade-index: " prefix (fetch-model's report lines). */
void splade_cli_log_bare_info(int bare);

/* The build progress bar on a terminal: documents, docs/s and ETA, redrawn at most 10 times a
 * second, a newline after the last call. A splade_progress_fn with a splade_cli_bar as user. */
typedef struct {
    double start, last;
    int unknown_total;  /* the calls before the last had no total: no bar, no ETA */
} splade_cli_bar;
/* Starts the clock; returns 1 when a bar should be drawn (stderr is a terminal and not quiet). */
int splade_cli_bar_start(splade_cli_bar *b, int quiet);
void splade_cli_bar_progress(void *user, const char *stage, uint64_t done, uint64_t total);

/* Monotonic seconds. */
double splade_cli_now(void);

#endif
