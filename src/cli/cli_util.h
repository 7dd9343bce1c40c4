/* Helpers shared by every subcommand (src/cli/cli_util.c): strict number parsing for options and
 * the final check that standard output was really written. */
#ifndef SPLADE_CLI_UTIL_H
#define SPLADE_CLI_UTIL_H

#include <stdint.h>

/* Accepted ranges of the options several commands share (documented in README.md). */
#define SPLADE_CLI_MAX_THREADS 1024
#define SPLADE_CLI_MAX_BATCH 4096
#define SPLADE_CLI_MAX_LENGTH 8192 /* the model's max_position caps it further */

/* Parses s as a whole decimal integer in lo..hi (no sign games, no trailing text, no overflow).
 * On failure prints "splade-index CMD: OPTION: 'S' is not an integer in LO..HI" and returns 2 (the
 * usage exit status); returns 0 with *out set otherwise. */
int splade_cli_int(const char *cmd, const char *option, const char *s, long lo, long hi, int *out);
/* The same for a finite decimal number in lo..hi (hi = INFINITY: no upper bound). */
/* A size in bytes: digits, optionally followed by K, M, G or T (powers of 1024): "512M", "4G".
 * Prints the error naming the option and returns 2 (the exit status) on anything else. */
int splade_cli_size(const char *cmd, const char *option, const char *s, uint64_t *out);
int splade_cli_float(const char *cmd, const char *option, const char *s, double lo, double hi, float *out);
/* Flushes and closes standard output. A failed write anywhere before (full disk, /dev/full, a closed
 * pipe) is reported as "splade-index CMD: input/output error: writing standard output: REASON" and
 * turns a 0 status into 1; returns the status to exit with. */
int splade_cli_finish_stdout(const char *cmd, int status);
/* SPLADE_ERR_IO naming standard output when an earlier write to it failed, else SPLADE_OK: lets a
 * long-running command stop at the first failed write instead of computing output nobody gets. */
int splade_cli_check_stdout(void);

#endif
