/* JSON output helpers (cli_json.h). */
#include "cli/cli_json.h"

#include <stdlib.h>
#include <string.h>

void splade_cli_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

void splade_cli_json_weight(FILE *f, float w)
{
    char buf[32];
    for (int digits = 6; digits <= 9; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, (double)w);
        float back = strtof(buf, NULL);
        if (memcmp(&back, &w, sizeof w) == 0)
            break;
    }
    fputs(buf, f);
}
