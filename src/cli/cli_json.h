/* JSON output helpers shared by encode and export (src/cli/cli_json.c). */
#ifndef SPLADE_CLI_JSON_H
#define SPLADE_CLI_JSON_H

#include <stdio.h>

/* s as a JSON string: quotes, backslashes and control bytes escaped; other bytes (UTF-8) as they are. */
void splade_cli_json_string(FILE *f, const char *s);
/* The shortest of %.6g .. %.9g that strtof reads back to the same bits: parsing the output gives the
 * float32 exactly (%.9g always does), and most weights keep 6 or 7 digits. */
void splade_cli_json_weight(FILE *f, float w);
/* The same text into buf (NUL-terminated); thread-safe (splade_cli_json_weight caches, from one thread). */
void splade_cli_format_weight(float w, char buf[32]);

#endif
