/* Fuzz target: the JSONL corpus reader must return records or errors, never crash or leak, and:
 * - the length handed to the tokenizer matches the string, and no text exceeds the line limit;
 * - a stream error is never followed by a record or by "end of input";
 * - the same bytes read from memory, from a file descriptor, and gzip-compressed (in two gzip
 *   members, so the member boundary lands mid-line) give the same records, line numbers and
 *   statuses, with the default line limit and with a small one (every line-cap path). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fuzz_memfile.h"
#include "splade.h"
#include "splade/corpus.h"

typedef struct {
    uint64_t hash;
    int n;
} outcome;

static void mix(uint64_t *h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        *h = (*h ^ s[i]) * 1099511628211ull;
}

static outcome read_all(splade_corpus_reader *r, size_t max_line)
{
    outcome o = {14695981039346656037ull, 0};
    splade_corpus_set_max_line(r, max_line);
    splade_doc d;
    long last_line = 0;
    int stream_failed = 0;
    for (int i = 0; i < 10000; i++) {
        int rc = splade_corpus_next(r, &d);
        mix(&o.hash, &rc, sizeof rc);
        o.n++;
        if (stream_failed && rc >= 0)
            __builtin_trap(); /* an I/O, memory or gzip error must not turn into data or EOF */
        if (rc == 0 || (stream_failed && rc < 0))
            break;
        stream_failed = rc < 0 && rc != SPLADE_ERR_FORMAT;
        if (rc != 1)
            continue;
        if (strlen(d.text) != d.text_len || d.line <= last_line || (max_line && d.text_len > max_line))
            __builtin_trap();
        last_line = d.line;
        mix(&o.hash, &d.line, sizeof d.line);
        mix(&o.hash, d.id, strlen(d.id) + 1);
        mix(&o.hash, d.text, d.text_len);
    }
    splade_corpus_close(r);
    return o;
}

/* gzip of data in two members (split at half). NULL when deflate fails. */
static unsigned char *gzip2(const uint8_t *data, size_t size, size_t *out_len)
{
    size_t half = size / 2, cap = 2 * (size + 64) + 256, len = 0;
    unsigned char *out = malloc(cap);
    for (int m = 0; out && m < 2; m++) {
        z_stream z = {0};
        if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
            break;
        z.next_in = (unsigned char *)data + (m ? half : 0);
        z.avail_in = (uInt)(m ? size - half : half);
        z.next_out = out + len;
        z.avail_out = (uInt)(cap - len);
        int zr = deflate(&z, Z_FINISH);
        len = cap - z.avail_out;
        deflateEnd(&z);
        if (zr != Z_STREAM_END) {
            free(out);
            return NULL;
        }
    }
    *out_len = len;
    return out;
}

static int same(outcome a, outcome b) { return a.hash == b.hash && a.n == b.n; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    splade_corpus_reader *r;
    static const size_t limits[] = {0, 24};
    for (int k = 0; k < 2; k++) {
        if (splade_corpus_open_memory(data, size, "fuzz.jsonl", &r) != SPLADE_OK)
            return 0; /* another compression format: refused at open */
        outcome mem = read_all(r, limits[k]);
        char path[64];
        int fd = memfile_open(data, size, path, sizeof path);
        if (fd >= 0 && splade_corpus_open(path, &r) == SPLADE_OK && !same(mem, read_all(r, limits[k])))
            __builtin_trap();
        if (fd >= 0)
            close(fd);
        size_t gz_len;
        unsigned char *gz = size && data[0] == 0x1f ? NULL : gzip2(data, size, &gz_len);
        if (gz && splade_corpus_open_memory(gz, gz_len, "fuzz.jsonl", &r) == SPLADE_OK &&
            !same(mem, read_all(r, limits[k])))
            __builtin_trap();
        free(gz);
    }
    return 0;
}
