/* Status strings, the JSONL corpus reader and sparse-vector helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "splade.h"
#include "splade/corpus.h"
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
    for (int code = 0; code >= SPLADE_ERR_MISMATCH; code--)
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
        cmocka_unit_test(test_sparse_from_dense_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
