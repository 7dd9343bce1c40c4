/* See cli_util.h. */
#include "cli/cli_util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "splade.h"

int splade_cli_int(const char *cmd, const char *option, const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || isspace((unsigned char)*s) || v < lo || v > hi) {
        fprintf(stderr, "splade-index %s: %s: '%s' is not an integer in %ld..%ld\n", cmd, option, s, lo, hi);
        return 2;
    }
    *out = (int)v;
    return 0;
}

int splade_cli_float(const char *cmd, const char *option, const char *s, double lo, double hi, float *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || isspace((unsigned char)*s) || !isfinite(v) || v < lo || v > hi) {
        if (isinf(hi))
            fprintf(stderr, "splade-index %s: %s: '%s' is not a finite number >= %g\n", cmd, option, s, lo);
        else
            fprintf(stderr, "splade-index %s: %s: '%s' is not a number in %g..%g\n", cmd, option, s, lo, hi);
        return 2;
    }
    *out = (float)v;
    return 0;
}

int splade_cli_size(const char *cmd, const char *option, const char *s, uint64_t *out)
{
    uint64_t v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10)
            break;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    static const char units[] = "KMGT";
    const char *u = *p ? strchr(units, *p) : NULL;
    int shift = u ? 10 * (int)(u - units + 1) : 0;
    int ok = p > s && (!*p || (u && !p[1])) && v > 0 && v <= (UINT64_MAX >> 40);
    if (!ok) {
        fprintf(stderr, "splade-index %s: %s: '%s' is not a size (a positive number of bytes, or with K, M, G "
                "or T: 512M, 4G)\n", cmd, option, s);
        return 2;
    }
    *out = v << shift;
    return 0;
}

int splade_cli_check_stdout(void)
{
    if (!ferror(stdout))
        return SPLADE_OK;
    return splade_fail(SPLADE_ERR_IO, "writing standard output: %s", errno ? strerror(errno) : "write failed");
}

int splade_cli_finish_stdout(const char *cmd, int status)
{
    errno = 0;
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int err = errno;
    /* EBADF with nothing pending: stdout was closed (>&-) by a caller that wants no output */
    if (fclose(stdout) != 0 && errno != EBADF && !bad) {
        bad = 1;
        err = errno;
    }
    if (!bad)
        return status;
    fprintf(stderr, "splade-index%s%s: %s: writing standard output: %s\n", *cmd ? " " : "", cmd,
            splade_strerror(SPLADE_ERR_IO), err ? strerror(err) : "write failed");
    return status ? status : 1;
}
