/* Windowed TAAT (src/query/wtaat.c) on the queries that make the latency tail: long, flat queries
 * (60 to 200 terms of near-equal weight) over collections of several windows whose frequent terms
 * have dense range tables, so that most terms are non-essential and are added heaviest first over
 * candidate ranges narrowed after each term. wtaat and auto must return exactly what exhaustive
 * TAAT returns (documents, scores and order; ties to the document added first) at k = 1, 10 and
 * 100, also with heavy score ties (coarse weights, every document repeated, whole ranges of copies
 * of one document), deleted documents and several segments; approximate (a bound factor), wtaat
 * must keep what the factor promises. The test also checks that wtaat pruned (scored fewer
 * postings than TAAT), so that a wrong bound shows as a different answer rather than go unexercised. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "splade.h"
#include "splade/build.h"
#include "splade/index.h"
#include "splade/query.h"
#include "splade/segments.h"

#include "random_vdocs.h"
#include "tmp_dir.h"

/* n documents; with `repeat`, each of the first n / repeat is copied repeat times (runs of equal
 * scores across ranges and windows). */
static vdoc *make_docs(int n, int coarse, int repeat)
{
    vdoc *docs = calloc((size_t)n, sizeof *docs);
    int distinct = repeat > 1 ? n / repeat : n;
    for (int i = 0; i < n; i++) {
        if (i < distinct)
            random_doc(&docs[i], coarse, (int)(rnd() % (VOCAB / 10)));
        else
            docs[i] = docs[rnd() % (uint32_t)distinct];
    }
    return docs;
}

/* Documents [0, n) written as `segments` consecutive segments (the first built, the rest added). */
static char *write_index(const vdoc *docs, int n, int segments)
{
    char *dir = td_make("splade_test_wtaat_tail");
    for (int s = 0; s < segments; s++) {
        int from = (int)((int64_t)n * s / segments), to = (int)((int64_t)n * (s + 1) / segments);
        splade_index_builder *b = vdocs_builder(docs, from, to, 0);
        if (s == 0) {
            assert_int_equal(splade_builder_write(b, dir, NULL), 0);
        } else {
            splade_add_opts o = {.no_merge = 1};
            if (splade_index_add(b, dir, &o, NULL) < 0)
                fail_msg("add: %s", splade_error_detail());
        }
        splade_builder_free(b);
    }
    return dir;
}

/* Deletes about one document in eight. */
static void delete_some(const char *dir, int n)
{
    char **ids = calloc((size_t)n, sizeof *ids);
    size_t m = 0;
    for (int i = 0; i < n; i++)
        if (rnd() % 8 == 0) {
            ids[m] = malloc(24);
            vdoc_id(i, ids[m++], 24);
        }
    if (m)
        assert_int_equal(splade_index_delete(dir, (const char *const *)ids, m, 1, NULL), 0);
    for (size_t i = 0; i < m; i++)
        free(ids[i]);
    free(ids);
}

/* A long flat query: n_terms distinct tokens (frequent ones included, some unknown to the index),
 * weights equal (`flat` 2), from two values (1), or continuous within 10% (0). */
static void long_query(splade_index *ix, int n_terms, int flat, splade_qvec *q)
{
    int32_t terms[VOCAB + 10];
    float w[VOCAB + 10];
    char seen[VOCAB + 10] = {0};
    int n = 0;
    while (n < n_terms) {
        int tok = (int)(rnd() % (VOCAB + 10));
        if (seen[tok])
            continue;
        seen[tok] = 1;
        char name[16];
        snprintf(name, sizeof name, "w%d", tok);
        terms[n] = splade_index_term_lookup(ix, name, strlen(name));
        w[n++] = flat == 2 ? 1.0f : flat == 1 ? (float)(2 + rnd() % 2) : 1.0f + (float)(rnd() % 1000) / 10000.0f;
    }
    assert_int_equal(splade_qvec_build(terms, w, n, splade_index_get_info(ix)->n_terms, q), 0);
}

/* Every query at k = 1, 10, 100: wtaat and auto against TAAT, hit for hit. Returns the postings
 * wtaat scored minus TAAT's (negative: it pruned). */
static int64_t check_queries(splade_index *ix, int queries, const char *what)
{
    static const int ks[] = {1, 10, 100};
    static const splade_algo algos[] = {SPLADE_ALGO_WTAAT, SPLADE_ALGO_AUTO};
    splade_searcher *s;
    assert_int_equal(splade_searcher_create(ix, &s), 0);
    splade_hit want[100], got[100];
    int64_t diff = 0;
    for (int qi = 0; qi < queries; qi++) {
        splade_qvec q;
        long_query(ix, 60 + (int)(rnd() % 141), (int)(rnd() % 3), &q);
        for (int ki = 0; ki < 3; ki++) {
            int k = ks[ki], nw = -1;
            uint64_t p0 = splade_searcher_stats(s)->postings_scored;
            assert_int_equal(splade_search(s, &q, k, SPLADE_ALGO_TAAT, want, &nw), 0);
            diff -= (int64_t)(splade_searcher_stats(s)->postings_scored - p0);
            for (int a = 0; a < 2; a++) {
                int ng = -1;
                p0 = splade_searcher_stats(s)->postings_scored;
                assert_int_equal(splade_search(s, &q, k, algos[a], got, &ng), 0);
                if (a == 0)
                    diff += (int64_t)(splade_searcher_stats(s)->postings_scored - p0);
                if (ng != nw)
                    fail_msg("%s query %d (%d terms) k=%d algo %d: %d hits, taat %d", what, qi, q.n, k, algos[a], ng,
                             nw);
                for (int i = 0; i < nw; i++)
                    if (got[i].doc != want[i].doc || got[i].score != want[i].score)
                        fail_msg("%s query %d (%d terms) k=%d algo %d rank %d: doc %u score %u, taat doc %u score %u",
                                 what, qi, q.n, k, algos[a], i, got[i].doc, got[i].score, want[i].doc,
                                 want[i].score);
            }
        }
        splade_qvec_free(&q);
    }
    splade_searcher_free(s);
    return diff;
}

static void run_case(uint64_t seed, int n, int coarse, int repeat, int segments, int deletes, const char *what)
{
    rng = seed * 0x9E3779B97F4A7C15ull + 7;
    vdoc *docs = make_docs(n, coarse, repeat);
    char *dir = write_index(docs, n, segments);
    if (deletes)
        delete_some(dir, n);
    splade_index *ix;
    assert_int_equal(splade_index_open(dir, &ix), 0);
    int64_t diff = check_queries(ix, 12, what);
    if (diff >= 0)
        fail_msg("%s: wtaat scored %lld postings more than taat: nothing pruned, the test proves little", what,
                 (long long)diff);
    splade_index_close(ix);
    td_free(dir);
    free(docs);
}

/* Approximate wtaat (bound factor f = 0.8) on long queries: every document whose exact score × f
 * beats the answer's k-th score is in the answer (a range or a candidate is dropped only when its
 * bound × f does not beat the k-th score, and a bound is never below a score), and recall@10
 * against TAAT stays >= 0.9 (0.99 measured on the realistic 100 k, query-tail-2026-11-25.md): the
 * factor must not reach the near-exact bounds of the non-essential terms' narrowing. */
static void test_long_queries_approximate(void **state)
{
    (void)state;
    rng = 11 * 0x9E3779B97F4A7C15ull + 7;
    int n = 24000, found = 0, total = 0;
    vdoc *docs = make_docs(n, 0, 1);
    char *dir = write_index(docs, n, 1);
    splade_index *ix;
    splade_searcher *s;
    assert_int_equal(splade_index_open(dir, &ix), 0);
    assert_int_equal(splade_searcher_create(ix, &s), 0);
    const float f = 0.8f;
    for (int qi = 0; qi < 20; qi++) {
        splade_qvec q;
        splade_hit want[10], got[10];
        int nw = -1, ng = -1;
        long_query(ix, 60 + (int)(rnd() % 141), 0, &q);
        assert_int_equal(splade_searcher_set_opts(s, &(splade_search_opts){0, 0, 0, 0}), 0);
        assert_int_equal(splade_search(s, &q, 10, SPLADE_ALGO_TAAT, want, &nw), 0);
        assert_int_equal(splade_searcher_set_opts(s, &(splade_search_opts){0, f, 0, 0}), 0);
        assert_int_equal(splade_search(s, &q, 10, SPLADE_ALGO_WTAAT, got, &ng), 0);
        assert_int_equal(ng, nw);
        for (int i = 0; i < nw; i++) {
            int in = 0;
            for (int j = 0; j < ng; j++)
                in |= got[j].doc == want[i].doc;
            found += in;
            if (!in && ng == 10 && (float)want[i].score * f > (float)got[9].score)
                fail_msg("query %d: doc %u (score %u) missing though %.0f x %.1f beats the k-th %u", qi, want[i].doc,
                         want[i].score, (double)want[i].score, (double)f, got[9].score);
        }
        total += nw;
        splade_qvec_free(&q);
    }
    if (found < 0.9 * total)
        fail_msg("recall@10 %.3f at bound factor %.1f", (double)found / total, (double)f);
    splade_searcher_free(s);
    splade_index_close(ix);
    td_free(dir);
    free(docs);
}

/* Continuous weights, one segment of 4 to 6 windows of 4,096 documents. */
static void test_long_queries_continuous(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 3; seed++)
        run_case(seed, 16000 + (int)(seed * 3000), 0, 1, 1, 0, "continuous");
}

/* Coarse weights and every document repeated 4 times: many equal scores, decided by the order added. */
static void test_long_queries_ties(void **state)
{
    (void)state;
    for (uint64_t seed = 4; seed <= 6; seed++)
        run_case(seed, 20000, 1, 4, 1, 0, "ties");
}

/* 40 distinct documents, each copied ~500 times: whole ranges of equal documents, so that a range's
 * bound equals its documents' exact score and the k-th score; the copies added first must win,
 * wherever their windows come in the search order (a bound equal to the k-th score stays live). */
static void test_long_queries_copies(void **state)
{
    (void)state;
    for (uint64_t seed = 9; seed <= 10; seed++)
        run_case(seed, 20000, (int)(seed % 2), 500, 1, 0, "copies");
}

/* Three segments and deleted documents (the heap carries over from segment to segment). */
static void test_long_queries_segments_deletions(void **state)
{
    (void)state;
    for (uint64_t seed = 7; seed <= 8; seed++)
        run_case(seed, 30000, (int)(seed % 2), seed % 2 ? 2 : 1, 3, 1, "segments");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_long_queries_continuous),
        cmocka_unit_test(test_long_queries_ties),
        cmocka_unit_test(test_long_queries_copies),
        cmocka_unit_test(test_long_queries_segments_deletions),
        cmocka_unit_test(test_long_queries_approximate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
