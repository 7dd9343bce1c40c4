/* A corpus batch (src/common/corpus_batch.h) parses its lines on several threads; walked in order,
 * its lines must say exactly what the serial reader (splade_corpus_next) says line after line: the
 * same documents, the same errors with the same details (line numbers, field names), the same end.
 * Reference: splade_corpus_next on the same bytes. Inputs: random corpora (fixed seeds, printed) of
 * good records (string and integer ids, titles or none, escapes and multi-byte text, blank lines, a
 * byte-order mark) mixed with every kind of bad line the reader reports, read plain and gzip-compressed,
 * whole and truncated (a stream error ends the batch), in batches of 1 to more than the corpus, on
 * 1 to 7 threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/corpus_batch.h"
#include "splade.h"
#include "splade/corpus.h"

/* One line's outcome, as either reader reports it. */
typedef struct {
    int rc;
    char *detail, *id, *title, *body, *text;
    long line;
} outcome;

typedef struct {
    outcome *o;
    int n, cap;
} outcomes;

static char *dup_n(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    assert_non_null(p);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

static void push(outcomes *os, int rc, const char *detail, const splade_doc *d)
{
    if (os->n == os->cap) {
        os->cap = os->cap ? 2 * os->cap : 64;
        os->o = realloc(os->o, (size_t)os->cap * sizeof *os->o);
        assert_non_null(os->o);
    }
    outcome *o = &os->o[os->n++];
    memset(o, 0, sizeof *o);
    o->rc = rc;
    if (rc < 0) {
        o->detail = strdup(detail ? detail : "");
        return;
    }
    o->id = strdup(d->id);
    o->title = strdup(d->title);
    o->body = strdup(d->body);
    o->text = dup_n(d->text, d->text_len);
    o->line = d->line;
}

static void outcomes_free(outcomes *os)
{
    for (int i = 0; i < os->n; i++) {
        free(os->o[i].detail);
        free(os->o[i].id);
        free(os->o[i].title);
        free(os->o[i].body);
        free(os->o[i].text);
    }
    free(os->o);
    memset(os, 0, sizeof *os);
}

static void serial(const void *data, size_t len, size_t max_line, outcomes *os)
{
    splade_corpus_reader *r;
    assert_int_equal(splade_corpus_open_memory(data, len, "c.jsonl", &r), SPLADE_OK);
    splade_corpus_set_max_line(r, max_line);
    for (;;) {
        splade_doc d;
        int rc = splade_corpus_next(r, &d);
        if (rc == 0)
            break;
        push(os, rc, splade_error_detail(), &d);
        if (rc < 0 && rc != SPLADE_ERR_FORMAT)
            break;
    }
    splade_corpus_close(r);
}

/* Batches of `want` lines on `threads` threads, cleared every `keep` batches (a chunk keeps its
 * lines across reads while it fills: their strings must survive later reads into the same batch). */
static void batched(const void *data, size_t len, size_t max_line, int want, int threads, int keep, outcomes *os)
{
    splade_corpus_reader *r;
    assert_int_equal(splade_corpus_open_memory(data, len, "c.jsonl", &r), SPLADE_OK);
    splade_corpus_set_max_line(r, max_line);
    splade_corpus_batch b = {0};
    int reads = 0, stop = 0;
    while (!stop) {
        int got = splade_corpus_batch_read(r, &b, want, threads);
        assert_true(got >= 0 && got <= want);
        stop = got == 0;
        for (int i = b.n - got; i < b.n; i++) /* a stream error ends the input, as it ends serial() */
            stop |= b.lines[i]->rc < 0 && b.lines[i]->rc != SPLADE_ERR_FORMAT;
        if (++reads % keep == 0 || stop) {
            for (int i = 0; i < b.n; i++) {
                const splade_corpus_line *l = b.lines[i];
                push(os, l->rc, l->detail, &l->rec.doc);
            }
            splade_corpus_batch_clear(&b);
        }
    }
    splade_corpus_batch_free(&b);
    splade_corpus_close(r);
}

static void assert_same(const outcomes *a, const outcomes *b)
{
    assert_int_equal(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        const outcome *x = &a->o[i], *y = &b->o[i];
        assert_int_equal(x->rc, y->rc);
        if (x->rc < 0) {
            assert_string_equal(x->detail, y->detail);
            continue;
        }
        assert_string_equal(x->id, y->id);
        assert_string_equal(x->title, y->title);
        assert_string_equal(x->body, y->body);
        assert_string_equal(x->text, y->text);
        assert_int_equal(x->line, y->line);
    }
}

/* Every bad line the reader reports (the last one is longer than the tests' 2 KiB line limit). */
static const char *const bad_lines[] = {
    "{\"_id\": \"a\", \"text\": ",
    "[1, 2]",
    "{\"text\": \"no id\"}",
    "{\"_id\": 1.5, \"text\": \"x\"}",
    "{\"_id\": \"\", \"text\": \"x\"}",
    "{\"_id\": \"has space\", \"text\": \"x\"}",
    "{\"_id\": \"a\"}",
    "{\"_id\": \"a\", \"text\": 3}",
    "{\"_id\": \"a\", \"text\": \"x\", \"title\": 5}",
    "{\"_id\": \"a\", \"text\": \"\xff\xfe\"}",
    "{\"_id\": \"a\", \"_id\": \"b\", \"text\": \"x\"}",
    "{\"_id\": \"a\", \"text\": \"nul \\u0000 escape\"}",
    "\"just a string\"",
    "LONG",
};
enum { N_BAD = sizeof bad_lines / sizeof *bad_lines, MAX_LINE = 2048 };

typedef struct {
    char *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *s, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 4096;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void puts_(buf *b, const char *s) { put(b, s, strlen(s)); }

static void random_words(buf *b, unsigned *seed, int words)
{
    static const char *const w[] = {"protein", "cell", "Caf\xc3\xa9", "na\\u00efve", "\\\"quoted\\\"", "tab\\t",
                                    "\xe4\xb8\xad\xe6\x96\x87", "x", "DNA-binding", "\\n"};
    for (int i = 0; i < words; i++) {
        puts_(b, i ? " " : "");
        puts_(b, w[rand_r(seed) % 10]);
    }
}

/* n records, one in `bad_every` bad (0: none), with a byte-order mark and blank lines. */
static buf make_corpus(unsigned seed, int n, int bad_every)
{
    buf b = {0};
    puts_(&b, "\xef\xbb\xbf");
    for (int i = 0; i < n; i++) {
        const int kind = rand_r(&seed) % 100;
        if (bad_every && kind % bad_every == 0) {
            const char *bad = bad_lines[rand_r(&seed) % N_BAD];
            if (!strcmp(bad, "LONG"))
                for (int k = 0; k < MAX_LINE + 10; k++)
                    put(&b, "y", 1);
            else if (kind % 7 == 0)
                put(&b, "{\"_id\":\"n\",\"text\":\"a\0b\"}", 24); /* a raw NUL byte */
            else
                puts_(&b, bad);
        } else {
            char head[96];
            if (kind % 3 == 0)
                snprintf(head, sizeof head, "{\"id\": %d, \"contents\": \"", i);
            else
                snprintf(head, sizeof head, "{\"_id\": \"d%d\", \"title\": %s, \"text\": \"", i,
                         kind % 3 == 1 ? "\"A title\"" : kind % 2 ? "null" : "\"\"");
            puts_(&b, head);
            random_words(&b, &seed, 1 + rand_r(&seed) % 60);
            puts_(&b, "\"}");
        }
        puts_(&b, kind % 11 == 0 ? "\r\n\n   \n" : "\n");
    }
    return b;
}

static unsigned char *gzip(const buf *b, size_t *out_len)
{
    uLong cap = compressBound(b->n) + 64;
    unsigned char *out = malloc(cap);
    z_stream z = {0};
    assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (unsigned char *)b->p;
    z.avail_in = (uInt)b->n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    *out_len = z.total_out;
    deflateEnd(&z);
    return out;
}

static void check_all_ways(const void *data, size_t len)
{
    outcomes ref = {0};
    serial(data, len, MAX_LINE, &ref);
    static const int wants[] = {1, 5, 64, 100000}, threads[] = {1, 2, 4, 7}, keeps[] = {1, 3};
    for (int w = 0; w < 4; w++)
        for (int t = 0; t < 4; t++)
            for (int k = 0; k < 2; k++) {
                outcomes got = {0};
                batched(data, len, MAX_LINE, wants[w], threads[t], keeps[k], &got);
                assert_same(&ref, &got);
                outcomes_free(&got);
            }
    outcomes_free(&ref);
}

static void test_good_corpora(void **state)
{
    (void)state;
    for (unsigned seed = 1; seed <= 3; seed++) {
        printf("seed %u\n", seed);
        buf b = make_corpus(seed, 300 * (int)seed, 0);
        check_all_ways(b.p, b.n);
        free(b.p);
    }
}

static void test_bad_lines_in_order(void **state)
{
    (void)state;
    for (unsigned seed = 11; seed <= 14; seed++) {
        printf("seed %u\n", seed);
        buf b = make_corpus(seed, 500, seed % 2 ? 5 : 13);
        outcomes ref = {0};
        serial(b.p, b.n, MAX_LINE, &ref);
        int bad = 0;
        for (int i = 0; i < ref.n; i++)
            bad += ref.o[i].rc == SPLADE_ERR_FORMAT;
        assert_true(bad >= 10); /* the corpus does hold bad lines of several kinds */
        outcomes_free(&ref);
        check_all_ways(b.p, b.n);
        free(b.p);
    }
}

/* gzip, whole and cut short: the cut is a stream error the batch ends with, after the same lines. */
static void test_gzip_whole_and_truncated(void **state)
{
    (void)state;
    buf b = make_corpus(21, 2000, 9);
    size_t n;
    unsigned char *gz = gzip(&b, &n);
    check_all_ways(gz, n);
    outcomes ref = {0};
    serial(gz, n / 2, MAX_LINE, &ref);
    assert_true(ref.n > 10);
    assert_true(ref.o[ref.n - 1].rc < 0 && ref.o[ref.n - 1].rc != SPLADE_ERR_FORMAT);
    outcomes_free(&ref);
    check_all_ways(gz, n / 2);
    free(gz);
    free(b.p);
}

static void test_empty_input(void **state)
{
    (void)state;
    check_all_ways("", 0);
    check_all_ways("\n\n  \r\n", 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_corpora),
        cmocka_unit_test(test_bad_lines_in_order),
        cmocka_unit_test(test_gzip_whole_and_truncated),
        cmocka_unit_test(test_empty_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
