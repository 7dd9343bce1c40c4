/* JSON output helpers (cli_json.h). */
#include "cli/cli_json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void splade_cli_json_string(FILE *f, const char *s)
{
    /* most strings (tokens, ids) need no escape: one write of the whole string */
    const unsigned char *p = (const unsigned char *)s;
    while (*p && *p != '"' && *p != '\\' && *p >= 0x20)
        p++;
    putc_unlocked('"', f);
    fwrite_unlocked(s, 1, (size_t)(p - (const unsigned char *)s), f);
    for (; *p; p++) {
        if (*p == '"' || *p == '\\') {
            putc_unlocked('\\', f);
            putc_unlocked(*p, f);
        } else if (*p < 0x20) {
            fprintf(f, "\\u%04x", *p);
        } else {
            putc_unlocked(*p, f);
        }
    }
    putc_unlocked('"', f);
}

/* %.{n}g of a value whose first 9 significant digits (rounded once, by printf) are d9[0..9) with
 * decimal exponent x, for n < 9: rounds the digit string half-even. Returns 0 when the 9 digits sit
 * exactly on an n-digit midpoint (the dropped digits read 5000...), where rounding them again could
 * differ from rounding the exact value: the caller asks printf then. Elsewhere the result is the same
 * as printf's, because rounding to 9 digits keeps a value on its side of every n-digit midpoint (the
 * midpoints are 9-digit numbers, and rounding is monotonic). */
static int round_digits(const char *d9, int x, int n, char *out, size_t cap)
{
    char d[10];
    memcpy(d, d9, 9);
    int tail_half = d[n] == '5', tail_more = d[n] > '5';
    for (int i = n + 1; i < 9; i++)
        tail_more |= tail_half && d[i] != '0';
    if (tail_half && !tail_more)
        return 0; /* a midpoint of the 9-digit string: printf decides */
    if (tail_more) {
        int i = n - 1;
        while (i >= 0 && d[i] == '9')
            d[i--] = '0';
        if (i < 0) { /* 99..9 -> 100..0: one more decimal place */
            memmove(d + 1, d, (size_t)n - 1);
            d[0] = '1';
            x++;
        } else {
            d[i]++;
        }
    }
    int len = n;
    while (len > 1 && d[len - 1] == '0')
        len--; /* %g drops trailing zeros */
    char *o = out;
    if (x < -4 || x >= n) { /* exponent form: d.ddde+XX */
        *o++ = d[0];
        if (len > 1) {
            *o++ = '.';
            memcpy(o, d + 1, (size_t)len - 1);
            o += len - 1;
        }
        snprintf(o, cap - (size_t)(o - out), "e%c%02d", x < 0 ? '-' : '+', abs(x));
        return 1;
    }
    if (x < 0) { /* 0.000ddd */
        memcpy(o, "0.", 2);
        o += 2;
        memset(o, '0', (size_t)(-x - 1));
        o += -x - 1;
        memcpy(o, d, (size_t)len);
        o += len;
    } else { /* ddd.ddd */
        memcpy(o, d, (size_t)(len < x + 1 ? len : x + 1));
        o += len < x + 1 ? len : x + 1;
        for (int i = len; i < x + 1; i++)
            *o++ = '0';
        if (len > x + 1) {
            *o++ = '.';
            memcpy(o, d + x + 1, (size_t)(len - x - 1));
            o += len - x - 1;
        }
    }
    *o = 0;
    return 1;
}

/* The shortest of %.6g .. %.9g that strtof reads back to w: one printf for 9 digits, the shorter
 * forms rounded from them (round_digits), strtof to check each: the same text as calling printf for
 * each length, in less time. */
void splade_cli_format_weight(float w, char buf[32])
{
    char e[32];
    snprintf(e, sizeof e, "%.8e", (double)w);
    const char *p = e;
    int neg = *p == '-';
    p += neg;
    if (p[0] < '0' || p[0] > '9' || p[1] != '.') { /* inf, nan: as printf writes them */
        snprintf(buf, 32, "%.9g", (double)w);
        return;
    }
    char d9[10];
    d9[0] = p[0];
    memcpy(d9 + 1, p + 2, 8);
    d9[9] = 0;
    int x = atoi(p + 11);
    if (d9[0] == '0') /* zero */
        x = 0;
    for (int n = 6; n <= 9; n++) {
        if (n == 9 || !round_digits(d9, x, n, buf + neg, 31))
            snprintf(buf, 32, "%.*g", n, (double)w);
        else if (neg)
            buf[0] = '-';
        float back = strtof(buf, NULL);
        if (memcmp(&back, &w, sizeof w) == 0)
            break;
    }
}

/* Texts of recent weights by their bits: an index's stored weights take at most 255 values
 * (impact x doc_scale), so exporting an index formats each once. Direct-mapped; the CLI writes JSON
 * from one thread. */
enum { WEIGHT_CACHE = 1024 };
static struct {
    uint32_t bits;
    char text[31];
    char used;
} weight_cache[WEIGHT_CACHE];

void splade_cli_json_weight(FILE *f, float w)
{
    uint32_t bits;
    memcpy(&bits, &w, sizeof bits);
    unsigned slot = (bits * 2654435761u) >> 22; /* top 10 bits of a multiplicative hash */
    if (!weight_cache[slot].used || weight_cache[slot].bits != bits) {
        char buf[32];
        splade_cli_format_weight(w, buf);
        weight_cache[slot].bits = bits;
        weight_cache[slot].used = 1;
        memcpy(weight_cache[slot].text, buf, strlen(buf) + 1); /* at most "-1.23456789e-45" */
    }
    fputs(weight_cache[slot].text, f);
}
