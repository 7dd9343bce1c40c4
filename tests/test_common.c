/* Status strings, the JSONL corpus reader and sparse-vector helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "common/fail.h"
#include "splade.h"
#include "splade/corpus.h"
#include "common/jsonl.h"
#include "splade/sparse.h"

static char *write_temp(const char *content, size_t len)
{
    char *path = strdup("/tmp/splade_test_corpusXXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    assert_int_equal(fwrite(content, 1, len, f), len);
    fclose(f);
    return path;
}

static void test_strerror_covers_all_codes(void **state)
{
    (void)state;
    for (int code = 0; code >= SPLADE_ERR_CANCELLED; code--)
        assert_string_not_equal(splade_strerror(code), "unknown error");
    assert_string_equal(splade_strerror(-999), "unknown error");
    assert_int_equal(splade_fail(SPLADE_ERR_IO, "x=%d", 7), SPLADE_ERR_IO);
    assert_string_equal(splade_error_detail(), "x=7");
}

static void test_corpus_formats(void **state)
{
    (void)state;
    const char *txt =
        "{\"_id\": \"d1\", \"title\": \"Title\", \"text\": \"body one\"}\n"
        "\n"
        "{\"id\": 42, \"contents\": \"caf\\u00e9\"}\n"
        "{\"_id\": \"d3\", \"title\": \"\", \"text\": \"\"}\n"
        "{\"id\": \"d4\", \"text\": \"t\", \"title\": null}";
    char *path = write_temp(txt, strlen(txt));
    splade_corpus_reader *r;
    splade_doc d;
    assert_int_equal(splade_corpus_open(path, &r), SPLADE_OK);
    assert_int_equal(splade_corpus_next(r, &d), 1);
    assert_string_equal(d.id, "d1");
    assert_string_equal(d.text, "Title body one");
    assert_int_equal(d.text_len, 14);
    assert_int_equal(d.line, 1);
    assert_int_equal(splade_corpus_next(r, &d), 1);
    assert_string_equal(d.id, "42");
    assert_string_equal(d.text, "caf\xc3\xa9");
    assert_int_equal(d.line, 3);
    assert_int_equal(splade_corpus_next(r, &d), 1);
    assert_string_equal(d.text, "");
    assert_int_equal(splade_corpus_next(r, &d), 1);
    assert_string_equal(d.id, "d4");
    assert_string_equal(d.text, "t");
    assert_int_equal(splade_corpus_next(r, &d), 0);
    splade_corpus_close(r);
    unlink(path);
    free(path);
}

typedef struct {
    const char *line;
    const char *expect_in_error;
} bad_case;

static void test_corpus_bad_lines_name_the_line(void **state)
{
    (void)state;
    static const bad_case cases[] = {
        {"{\"_id\": \"a\", \"text\": ", "invalid JSON"},
        {"[1, 2]", "expected a JSON object"},
        {"{\"text\": \"no id\"}", "\"_id\""},
        {"{\"_id\": 1.5, \"text\": \"x\"}", "\"_id\""},
        {"{\"_id\": \"a\"}", "\"text\""},
        {"{\"_id\": \"a\", \"text\": 3}", "\"text\""},
        {"{\"_id\": \"a\", \"text\": \"x\", \"title\": 5}", "\"title\""},
        {"{\"_id\": \"a\", \"text\": \"\xff\xfe\"}", "invalid JSON"},
        {"{\"_id\": \"a\", \"_id\": \"b\", \"text\": \"x\"}", "invalid JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char buf[256];
        /* good line, bad line, good line: the reader reports line 2 and then continues */
        int n = snprintf(buf, sizeof buf, "{\"_id\":\"ok\",\"text\":\"a\"}\n%s\n{\"_id\":\"ok2\",\"text\":\"b\"}\n",
                         cases[i].line);
        char *path = write_temp(buf, (size_t)n);
        splade_corpus_reader *r;
        splade_doc d;
        assert_int_equal(splade_corpus_open(path, &r), SPLADE_OK);
        assert_int_equal(splade_corpus_next(r, &d), 1);
        assert_int_equal(splade_corpus_next(r, &d), SPLADE_ERR_FORMAT);
        char expect_line[300];
        snprintf(expect_line, sizeof expect_line, "%s:2:", path);
        assert_non_null(strstr(splade_error_detail(), expect_line));
        assert_non_null(strstr(splade_error_detail(), cases[i].expect_in_error));
        assert_int_equal(splade_corpus_next(r, &d), 1);
        assert_string_equal(d.id, "ok2");
        splade_corpus_close(r);
        unlink(path);
        free(path);
    }
}

static void test_corpus_missing_file_and_nul(void **state)
{
    (void)state;
    splade_corpus_reader *r;
    assert_int_equal(splade_corpus_open("/nonexistent/c.jsonl", &r), SPLADE_ERR_IO);
    assert_non_null(strstr(splade_error_detail(), "/nonexistent/c.jsonl"));
    char *path = write_temp("{\"_id\":\"a\",\0\"text\":\"x\"}\n", 24);
    splade_doc d;
    assert_int_equal(splade_corpus_open(path, &r), SPLADE_OK);
    assert_int_equal(splade_corpus_next(r, &d), SPLADE_ERR_FORMAT);
    assert_non_null(strstr(splade_error_detail(), ":1: NUL"));
    splade_corpus_close(r);
    unlink(path);
    free(path);
}

/* Lines of `cap` bytes pass, one byte more fails naming the line and the limit, and the reader
 * goes on after the long line (which it never held whole: the limit is checked per chunk). */
static void test_corpus_line_limit(void **state)
{
    (void)state;
    const char *txt = "{\"_id\":\"a\",\"text\":\"x\"}\n"               /* 22 bytes */
                      "{\"_id\":\"b\",\"text\":\"xyzw\"}\n"            /* 25 bytes */
                      "{\"_id\":\"c\",\"text\":\"yy\"}";                /* 23, no newline */
    splade_corpus_reader *r;
    splade_doc d;
    assert_int_equal(splade_corpus_open_memory(txt, strlen(txt), "mem.jsonl", &r), SPLADE_OK);
    splade_corpus_set_max_line(r, 24);
    assert_int_equal(splade_corpus_next(r, &d), 1);
    assert_string_equal(d.id, "a");
    assert_int_equal(splade_corpus_next(r, &d), SPLADE_ERR_FORMAT);
    assert_string_equal(splade_error_detail(), "mem.jsonl:2: line longer than the limit of 24 bytes");
    assert_int_equal(splade_corpus_next(r, &d), 1);
    assert_string_equal(d.id, "c");
    assert_int_equal(d.line, 3);
    assert_int_equal(splade_corpus_next(r, &d), 0);
    splade_corpus_close(r);
    /* the default limit, named in MiB */
    static const char big_head[] = "{\"_id\":\"big\",\"text\":\"";
    size_t n = SPLADE_JSONL_MAX_LINE + 16;
    char *big = malloc(n);
    assert_non_null(big);
    memset(big, 'a', n);
    memcpy(big, big_head, sizeof big_head - 1);
    assert_int_equal(splade_corpus_open_memory(big, n, "big.jsonl", &r), SPLADE_OK);
    assert_int_equal(splade_corpus_next(r, &d), SPLADE_ERR_FORMAT);
    assert_string_equal(splade_error_detail(), "big.jsonl:1: line longer than the limit of 64 MiB");
    assert_int_equal(splade_corpus_next(r, &d), 0);
    splade_corpus_close(r);
    free(big);
}

static unsigned char *gzip_members(const char *data, size_t len, int members, size_t *out_len)
{
    size_t cap = 2 * len + 64 * (size_t)members + 64, off = 0, at = 0;
    unsigned char *out = malloc(cap);
    assert_non_null(out);
    for (int m = 0; m < members; m++) {
        size_t part = m == members - 1 ? len - at : len / (size_t)members;
        z_stream z = {0};
        assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
        z.next_in = (unsigned char *)data + at;
        z.avail_in = (uInt)part;
        z.next_out = out + off;
        z.avail_out = (uInt)(cap - off);
        assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
        off = cap - z.avail_out;
        deflateEnd(&z);
        at += part;
    }
    *out_len = off;
    return out;
}

/* A corpus of ~400 KB with lines of 10 B to 90 KB (crossing every 64 KiB read): the same records
 * from memory, from a file, gzip-compressed in one member and in three (boundaries mid-line). */
static void test_corpus_gzip_and_chunks_read_alike(void **state)
{
    (void)state;
    size_t cap = 1 << 20, len = 0;
    char *txt = malloc(cap);
    assert_non_null(txt);
    int n_docs = 0;
    for (int i = 0; len < 400000; i++, n_docs++) {
        int words = (i * 7919) % 9 == 0 ? 15000 + i * 10 : 1 + (i * 31) % 200;
        len += (size_t)sprintf(txt + len, "{\"_id\":\"d%d\",\"text\":\"", i);
        for (int w = 0; w < words; w++)
            len += (size_t)sprintf(txt + len, "w%d ", (i + w) % 97);
        len += (size_t)sprintf(txt + len, "\"}%s", i % 5 == 0 ? "\r\n\n" : "\n");
    }
    size_t gz1_len, gz3_len;
    unsigned char *gz1 = gzip_members(txt, len, 1, &gz1_len), *gz3 = gzip_members(txt, len, 3, &gz3_len);
    char *plain_path = write_temp(txt, len), *gz_path = write_temp((const char *)gz3, gz3_len);
    splade_corpus_reader *r[5];
    assert_int_equal(splade_corpus_open_memory(txt, len, "m", &r[0]), 0);
    assert_int_equal(splade_corpus_open(plain_path, &r[1]), 0);
    assert_int_equal(splade_corpus_open_memory(gz1, gz1_len, "g1", &r[2]), 0);
    assert_int_equal(splade_corpus_open_memory(gz3, gz3_len, "g3", &r[3]), 0);
    assert_int_equal(splade_corpus_open(gz_path, &r[4]), 0);
    for (int i = 0; i <= n_docs; i++) {
        splade_doc d0, d;
        int rc = splade_corpus_next(r[0], &d0);
        assert_int_equal(rc, i < n_docs ? 1 : 0);
        for (int k = 1; k < 5; k++) {
            assert_int_equal(splade_corpus_next(r[k], &d), rc);
            if (rc == 1) {
                assert_string_equal(d.id, d0.id);
                assert_int_equal(d.text_len, d0.text_len);
                assert_memory_equal(d.text, d0.text, d.text_len);
                assert_int_equal(d.line, d0.line);
            }
        }
    }
    for (int k = 0; k < 5; k++)
        splade_corpus_close(r[k]);
    unlink(plain_path);
    unlink(gz_path);
    free(plain_path);
    free(gz_path);
    free(gz1);
    free(gz3);
    free(txt);
}

/* Stream errors are not the end of the input: a truncated or damaged gzip file gives its first
 * records, then an error naming the line, and an error again on every later call. So is a read
 * error (a directory given as the corpus), and compressed formats other than gzip are named. */
static void test_corpus_stream_errors_are_not_eof(void **state)
{
    (void)state;
    char txt[40000];
    size_t len = 0;
    for (int i = 0; len < sizeof txt - 100; i++)
        len += (size_t)sprintf(txt + len, "{\"_id\":\"d%d\",\"text\":\"text %d\"}\n", i, i * 7919);
    size_t gz_len;
    unsigned char *gz = gzip_members(txt, len, 1, &gz_len);
    for (int damage = 0; damage < 2; damage++) {
        unsigned char *copy = malloc(gz_len);
        memcpy(copy, gz, gz_len);
        if (damage)
            copy[gz_len - 6] ^= 0x55; /* the stored CRC-32: detected at the end of the member */
        size_t use = damage ? gz_len : gz_len / 2;
        splade_corpus_reader *r;
        splade_doc d;
        assert_int_equal(splade_corpus_open_memory(copy, use, "c.jsonl.gz", &r), 0);
        int docs = 0, rc;
        while ((rc = splade_corpus_next(r, &d)) == 1)
            docs++;
        assert_int_equal(rc, SPLADE_ERR_IO);
        assert_true(docs > 10);
        char where[64];
        snprintf(where, sizeof where, "c.jsonl.gz:%d: ", docs + 1);
        assert_non_null(strstr(splade_error_detail(), where));
        assert_non_null(strstr(splade_error_detail(), damage ? "corrupt gzip data" : "truncated gzip data"));
        assert_int_equal(splade_corpus_next(r, &d), SPLADE_ERR_IO);
        assert_int_equal(splade_corpus_next(r, &d), SPLADE_ERR_IO);
        splade_corpus_close(r);
        free(copy);
    }
    free(gz);

    char dir[] = "/tmp/splade_test_dirXXXXXX";
    assert_non_null(mkdtemp(dir));
    splade_corpus_reader *r;
    assert_int_equal(splade_corpus_open(dir, &r), SPLADE_ERR_IO);
    assert_non_null(strstr(splade_error_detail(), ":1: read error: Is a directory"));
    rmdir(dir);

    static const struct { const char *magic; size_t len; const char *name; } kinds[] = {
        {"BZh91AY", 7, "(bzip2)"}, {"\xfd" "7zXZ\0\0", 7, "(xz)"}, {"\x28\xb5\x2f\xfd\0", 5, "(zstd)"}};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(splade_corpus_open_memory(kinds[k].magic, kinds[k].len, "x", &r), SPLADE_ERR_UNSUPPORTED);
        assert_non_null(strstr(splade_error_detail(), "compressed input "));
        assert_non_null(strstr(splade_error_detail(), kinds[k].name));
    }
}

/* A byte-order mark starts the file: skipped. Anywhere else it is not JSON. \u0000 in a string is
 * refused naming the field (not jansson's flag). */
static void test_corpus_bom_and_nul_escape(void **state)
{
    (void)state;
    const char *txt = "\xef\xbb\xbf{\"_id\":\"a\",\"text\":\"x\"}\n\xef\xbb\xbf{\"_id\":\"b\",\"text\":\"y\"}\n"
                      "{\"_id\":\"c\",\"title\":\"t\",\"text\":\"p\\u0000q\"}\n";
    splade_corpus_reader *r;
    splade_doc d;
    assert_int_equal(splade_corpus_open_memory(txt, strlen(txt), "bom.jsonl", &r), 0);
    assert_int_equal(splade_corpus_next(r, &d), 1);
    assert_string_equal(d.id, "a");
    assert_int_equal(splade_corpus_next(r, &d), SPLADE_ERR_FORMAT);
    assert_non_null(strstr(splade_error_detail(), "bom.jsonl:2: invalid JSON"));
    assert_int_equal(splade_corpus_next(r, &d), SPLADE_ERR_FORMAT);
    assert_string_equal(splade_error_detail(),
                        "bom.jsonl:3: field \"text\" holds \\u0000 (a NUL character), which is not supported");
    assert_int_equal(splade_corpus_next(r, &d), 0);
    splade_corpus_close(r);
}

/* Out of memory while assembling a line is an error naming the line, not the end of the input
 * (getline's ENOMEM used to read as EOF and `build` installed the documents read so far). A child
 * process reads a 40 MiB line under an address-space limit too small for the line buffer. Skipped
 * under AddressSanitizer, whose shadow memory does not fit under such a limit. */
static void test_corpus_out_of_memory_is_not_eof(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    skip();
#else
    size_t n = (size_t)40 << 20;
    char *big = malloc(n);
    assert_non_null(big);
    static const char head[] = "{\"_id\":\"ok\",\"text\":\"a\"}\n{\"_id\":\"big\",\"text\":\"";
    memset(big, 'a', n);
    memcpy(big, head, sizeof head - 1);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        long pages = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        if (!f || fscanf(f, "%ld", &pages) != 1)
            _exit(3);
        fclose(f);
        struct rlimit lim = {(rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)24 << 20), RLIM_INFINITY};
        lim.rlim_max = lim.rlim_cur;
        if (setrlimit(RLIMIT_AS, &lim) != 0)
            _exit(3);
        splade_corpus_reader *r;
        splade_doc d;
        if (splade_corpus_open_memory(big, n, "m.jsonl", &r) != 0 || splade_corpus_next(r, &d) != 1)
            _exit(4);
        int rc = splade_corpus_next(r, &d), again = splade_corpus_next(r, &d);
        _exit(rc == SPLADE_ERR_NOMEM && strstr(splade_error_detail(), "m.jsonl:2:") && again < 0 ? 0 : 1);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    free(big);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
#endif
}

static void test_id_rule(void **state)
{
    (void)state;
    static const char *good[] = {"a", "doc-1/x:y", "caf\xc3\xa9", "\xf0\x9f\x98\x80", "-7", "\"quoted\""};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_null(splade_id_problem(good[i], strlen(good[i])));
    assert_string_equal(splade_id_problem("", 0), "is empty");
    static const char *spaced[] = {"a b", "a\tb", "a\nb", "a\rb", "\x01", "x\x7f", "a\x0b"};
    for (size_t i = 0; i < sizeof spaced / sizeof *spaced; i++)
        assert_string_equal(splade_id_problem(spaced[i], strlen(spaced[i])),
                            "contains whitespace or a control character");
    assert_string_equal(splade_id_problem("a\0b", 3), "contains whitespace or a control character");
    assert_string_equal(splade_id_problem("\xff", 1), "is not valid UTF-8");
    assert_string_equal(splade_id_problem("\xed\xa0\x80", 3), "is not valid UTF-8"); /* a surrogate */
    char longest[SPLADE_ID_MAX + 1];
    memset(longest, 'i', sizeof longest);
    assert_null(splade_id_problem(longest, SPLADE_ID_MAX));
    assert_string_equal(splade_id_problem(longest, SPLADE_ID_MAX + 1), "is longer than 1024 bytes");
    /* through the corpus reader: the field and line are named, integers are always valid ids */
    const char *txt = "{\"id\":12,\"text\":\"x\"}\n{\"id\":\"a b\",\"text\":\"y\"}\n{\"_id\":\"\",\"id\":\"z\",\"text\":\"y\"}\n";
    splade_corpus_reader *r;
    splade_doc d;
    assert_int_equal(splade_corpus_open_memory(txt, strlen(txt), "ids.jsonl", &r), 0);
    assert_int_equal(splade_corpus_next(r, &d), 1);
    assert_string_equal(d.id, "12");
    assert_int_equal(splade_corpus_next(r, &d), SPLADE_ERR_FORMAT);
    assert_non_null(strstr(splade_error_detail(), "ids.jsonl:2: field \"id\" contains whitespace"));
    assert_int_equal(splade_corpus_next(r, &d), SPLADE_ERR_FORMAT);
    assert_non_null(strstr(splade_error_detail(), "ids.jsonl:3: field \"_id\" is empty"));
    splade_corpus_close(r);
}

static void test_sparse_from_dense_random(void **state)
{
    (void)state;
    srand(1234);
    for (int trial = 0; trial < 50; trial++) {
        int V = 1 + rand() % 300;
        float *dense = malloc(sizeof(float) * V);
        for (int i = 0; i < V; i++)
            dense[i] = (rand() % 3 == 0) ? (float)(rand() % 100) / 10.0f : 0.0f;
        int top_k = rand() % 10;
        float thr = (rand() % 2) ? 0.5f : 0.0f;
        splade_sparse v;
        assert_int_equal(splade_sparse_from_dense(dense, V, thr, top_k, &v), SPLADE_OK);
        /* reference: count strictly-greater entries per kept weight */
        int expect_n = 0;
        for (int i = 0; i < V; i++)
            expect_n += dense[i] > thr && dense[i] > 0;
        if (top_k > 0 && expect_n > top_k)
            expect_n = top_k;
        assert_int_equal(v.n, expect_n);
        for (int i = 0; i < v.n; i++) {
            assert_true(i == 0 || v.terms[i] > v.terms[i - 1]);
            assert_true(v.weights[i] == dense[v.terms[i]]);
            /* every dropped entry ranks below every kept one */
            int better = 0;
            for (int j = 0; j < V; j++)
                if (dense[j] > thr && (dense[j] > v.weights[i] || (dense[j] == v.weights[i] && j < v.terms[i])))
                    better++;
            assert_true(top_k <= 0 || better < top_k);
        }
        double dot = splade_sparse_dot(&v, &v), ref = 0;
        for (int i = 0; i < v.n; i++)
            ref += (double)v.weights[i] * v.weights[i];
        assert_true(dot == ref);
        splade_sparse_free(&v);
        assert_null(v.terms);
        free(dense);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strerror_covers_all_codes),
        cmocka_unit_test(test_corpus_formats),
        cmocka_unit_test(test_corpus_bad_lines_name_the_line),
        cmocka_unit_test(test_corpus_missing_file_and_nul),
        cmocka_unit_test(test_corpus_line_limit),
        cmocka_unit_test(test_corpus_gzip_and_chunks_read_alike),
        cmocka_unit_test(test_corpus_stream_errors_are_not_eof),
        cmocka_unit_test(test_corpus_bom_and_nul_escape),
        cmocka_unit_test(test_corpus_out_of_memory_is_not_eof),
        cmocka_unit_test(test_id_rule),
        cmocka_unit_test(test_sparse_from_dense_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
