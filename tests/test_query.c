/* Exact top-k: block-max MaxScore, MaxScore and exhaustive TAAT against brute force over random
 * synthetic collections (many seeds, varied k, repeated / absent terms, empty queries, heavy
 * score ties, which go to the document added first), and batch search independent of the thread count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/format.h"
#include "index/forward.h"
#include "index/impact_order.h"
#include "index/segment.h"
#include "splade.h"
#include "splade/index.h"
#include "splade/query.h"
#include "tmp_dir.h"
#include "xorshift.h"

typedef struct {
    uint32_t n_docs;
    int32_t n_terms;
    int32_t **terms; /* per doc */
    float **w;
    int32_t *len;
    float max;
    uint32_t *internal; /* corpus position -> internal id of the built index (reordering) */
} collection;


/* Weights from a small set when `coarse` (many equal scores), else continuous in (0, 3]. */
static float rnd_weight(int coarse)
{
    return coarse ? (float)(1 + rnd() % 3) * 0.5f : 3.0f * (float)(1 + rnd() % 100000) / 100000.0f;
}

/* Skewed term choice (lower ids far more frequent), as in a Zipf-like vocabulary. */
static int32_t rnd_term(int32_t n_terms)
{
    uint32_t a = rnd() % (uint32_t)n_terms, b = rnd() % (uint32_t)n_terms;
    return (int32_t)(a < b ? a : b) % n_terms;
}

static void make_collection(collection *c, uint32_t n_docs, int32_t n_terms, int max_len, int coarse)
{
    c->n_docs = n_docs;
    c->n_terms = n_terms;
    c->terms = calloc(n_docs + 1, sizeof *c->terms);
    c->w = calloc(n_docs + 1, sizeof *c->w);
    c->len = calloc(n_docs + 1, sizeof *c->len);
    c->internal = calloc(n_docs + 1, sizeof *c->internal);
    c->max = 0;
    char *seen = calloc((size_t)n_terms, 1);
    for (uint32_t d = 0; d < n_docs; d++) {
        int want = (int)(rnd() % (uint32_t)(max_len + 1)); /* 0: an empty document */
        c->terms[d] = malloc((size_t)want * sizeof(int32_t) + 4);
        c->w[d] = malloc((size_t)want * sizeof(float) + 4);
        int n = 0;
        for (int i = 0; i < want; i++) {
            int32_t t = rnd_term(n_terms);
            if (seen[t])
                continue;
            seen[t] = 1;
            c->terms[d][n] = t;
            c->w[d][n] = rnd_weight(coarse);
            if (c->w[d][n] > c->max)
                c->max = c->w[d][n];
            n++;
        }
        for (int i = 0; i < n; i++)
            seen[c->terms[d][i]] = 0;
        c->len[d] = n;
    }
    free(seen);
}

static void free_collection(collection *c)
{
    for (uint32_t d = 0; d < c->n_docs; d++) {
        free(c->terms[d]);
        free(c->w[d]);
    }
    free(c->terms);
    free(c->w);
    free(c->len);
    free(c->internal);
}

static char **vocab_tokens(int32_t n_terms)
{
    char **tok = malloc((size_t)n_terms * sizeof *tok);
    for (int32_t t = 0; t < n_terms; t++) {
        tok[t] = malloc(16);
        snprintf(tok[t], 16, "t%d", t);
    }
    return tok;
}

/* Internal ids may differ from corpus positions (build-time reordering): read the mapping back
 * from the index's id table ("doc<position>"), checking that it is a permutation. */
static void map_internal_ids(collection *c, const splade_index *ix)
{
    char *seen = calloc(c->n_docs + 1, 1);
    for (uint32_t i = 0; i < c->n_docs; i++) {
        size_t len;
        const char *id = splade_index_doc_id(ix, i, &len);
        char buf[32];
        assert_true(len > 3 && len < sizeof buf);
        memcpy(buf, id, len);
        buf[len] = '\0';
        uint32_t d = (uint32_t)strtoul(buf + 3, NULL, 10);
        assert_true(d < c->n_docs && !seen[d]);
        seen[d] = 1;
        c->internal[d] = i;
    }
    free(seen);
}

static int build_threads = 1; /* inversion threads of the next build() */

static splade_index *build(collection *c, char *dir)
{
    char **tok = vocab_tokens(c->n_terms);
    splade_index_builder *b;
    assert_int_equal(splade_builder_create((const char *const *)tok, c->n_terms, NULL, &b), 0);
    for (uint32_t d = 0; d < c->n_docs; d++) {
        char id[32];
        snprintf(id, sizeof id, "doc%u", d);
        uint32_t doc;
        assert_int_equal(splade_builder_add_doc(b, "test", id, "", "", (long)d + 1, &doc), 0);
        assert_int_equal(doc, d);
    }
    /* vectors attached in reverse order, as length-sorted encoding would do */
    for (uint32_t d = c->n_docs; d-- > 0;)
        assert_int_equal(splade_builder_set_vector(b, d, c->terms[d], c->w[d], c->len[d]), 0);
    splade_builder_set_threads(b, build_threads);
    assert_int_equal(splade_builder_write(b, dir, NULL), 0);
    splade_builder_free(b);
    for (int32_t t = 0; t < c->n_terms; t++)
        free(tok[t]);
    free(tok);
    splade_index *ix;
    assert_int_equal(splade_index_open(dir, &ix), 0);
    map_internal_ids(c, ix);
    return ix;
}

/* Brute force straight from the collection: quantize (with the index's quantization maximum, a
 * function of its doc_scale), dot, sort by (score desc, corpus position asc): ties go to the document
 * added first, whatever the build-time reordering made of its internal id. */
typedef struct {
    splade_hit h;
    uint32_t pos;
} ranked;

static int cmp_hit(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->h.score != y->h.score)
        return x->h.score > y->h.score ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

static int brute_force(const collection *c, const splade_qvec *q, int k, splade_hit *out)
{
    ranked *all = malloc((c->n_docs + 1) * sizeof *all);
    int n = 0;
    float max = splade_scale_max(c->max / 255.0f);
    for (uint32_t d = 0; d < c->n_docs; d++) {
        uint32_t s = 0;
        for (int i = 0; i < c->len[d]; i++)
            for (int j = 0; j < q->n; j++)
                if (q->terms[j] == c->terms[d][i])
                    s += q->impacts[j] * (uint32_t)splade_quantize(c->w[d][i], max);
        if (s > 0)
            all[n++] = (ranked){{c->internal[d], s}, d};
    }
    qsort(all, (size_t)n, sizeof *all, cmp_hit);
    if (n > k)
        n = k;
    for (int i = 0; i < n; i++)
        out[i] = all[i].h;
    free(all);
    return n;
}

/* A query of up to 30 raw terms: repeats, ids past the vocabulary, terms without postings. */
static void random_query(const collection *c, splade_qvec *q, int coarse)
{
    int n = (int)(rnd() % 31);
    int32_t terms[40];
    float w[40];
    for (int i = 0; i < n; i++) {
        uint32_t r = rnd() % 10;
        terms[i] = r == 0 ? c->n_terms + (int32_t)(rnd() % 5) : r == 1 && i > 0 ? terms[i - 1] : rnd_term(c->n_terms);
        w[i] = rnd_weight(coarse);
    }
    assert_int_equal(splade_qvec_build(terms, w, n, (uint32_t)c->n_terms, q), 0);
}

static void check_query(const collection *c, splade_searcher *s, const splade_qvec *q, int k)
{
    splade_hit *want = malloc(((size_t)k + 1) * sizeof *want), *got = malloc(((size_t)k + 1) * sizeof *got);
    int nw = brute_force(c, q, k, want);
    static const splade_algo algos[] = {SPLADE_ALGO_BMM,       SPLADE_ALGO_MAXSCORE, SPLADE_ALGO_TAAT, SPLADE_ALGO_BMP,
                                        SPLADE_ALGO_WMAXSCORE, SPLADE_ALGO_WTAAT,    SPLADE_ALGO_AUTO};
    for (int a = 0; a < 7; a++) {
        int ng = -1;
        assert_int_equal(splade_search(s, q, k, algos[a], got, &ng), 0);
        if (ng != nw)
            fail_msg("algo %d k=%d: %d hits, brute force %d", a, k, ng, nw);
        for (int i = 0; i < nw; i++)
            if (got[i].doc != want[i].doc || got[i].score != want[i].score)
                fail_msg("algo %d k=%d rank %d: doc %u score %u, brute force doc %u score %u", a, k, i, got[i].doc,
                         got[i].score, want[i].doc, want[i].score);
    }
    free(want);
    free(got);
}

static void run_seed(uint64_t seed)
{
    rng = seed * 0x9E3779B97F4A7C15ull + 1;
    int coarse = (int)(seed % 2);
    uint32_t n_docs = seed % 7 == 0 ? rnd() % 5 : seed % 5 == 0 ? 5000 + rnd() % 15000 : 1 + rnd() % 3000;
    int32_t n_terms = 1 + (int32_t)(rnd() % (seed % 3 == 0 ? 40 : 3000));
    collection c;
    make_collection(&c, n_docs, n_terms, 1 + (int)(rnd() % 60), coarse);
    char *dir = td_make("splade_test_query");
    splade_index *ix = build(&c, dir);
    /* large collections are reordered at build time: the brute force maps through the id table */
    assert_int_equal(!!(splade_index_get_info(ix)->flags & SPLADE_IX_REORDERED), n_docs >= 1024);
    splade_searcher *s;
    assert_int_equal(splade_searcher_create(ix, &s), 0);
    static const int ks[] = {0, 1, 3, 10, 100, 1000, 5000};
    for (int qi = 0; qi < 25; qi++) {
        splade_qvec q;
        random_query(&c, &q, coarse);
        check_query(&c, s, &q, ks[rnd() % 7]);
        splade_qvec_free(&q);
    }
    splade_searcher_free(s);
    splade_index_close(ix);
    td_free(dir);
    free_collection(&c);
}

static void test_random_collections_match_brute_force(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 60; seed++)
        run_seed(seed);
}

/* More documents than TAAT's window of 131,072 (src/query/taat.c): its sums are added window by window,
 * dense lists' blocks straddle the windows' edges (decoded for each) and rare terms start in later
 * windows; every method, TAAT included, against the brute force. A term of the last 300 documents
 * only is in every query. */
static void test_taat_windows_match_brute_force(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 2; seed++) {
        rng = seed * 0x51ED270B27A0B3A1ull + 7;
        const int coarse = (int)(seed % 2);
        collection c;
        make_collection(&c, 270000 + rnd() % 140000, 400, 5, coarse);
        const int32_t late = c.n_terms++; /* its postings: the last 300 documents */
        for (uint32_t d = c.n_docs - 300; d < c.n_docs; d++) {
            c.terms[d] = realloc(c.terms[d], ((size_t)c.len[d] + 1) * sizeof(int32_t));
            c.w[d] = realloc(c.w[d], ((size_t)c.len[d] + 1) * sizeof(float));
            c.terms[d][c.len[d]] = late;
            c.w[d][c.len[d]++] = rnd_weight(coarse);
        }
        char *dir = td_make("splade_test_query_windows");
        splade_index *ix = build(&c, dir);
        splade_searcher *s;
        assert_int_equal(splade_searcher_create(ix, &s), 0);
        for (int qi = 0; qi < 8; qi++) {
            int32_t terms[12];
            float w[12];
            int n = 0;
            terms[n] = late, w[n++] = rnd_weight(coarse);
            while (n < 12)
                terms[n] = rnd_term(c.n_terms - 1), w[n++] = rnd_weight(coarse);
            splade_qvec q;
            assert_int_equal(splade_qvec_build(terms, w, n, (uint32_t)c.n_terms, &q), 0);
            check_query(&c, s, &q, qi % 2 ? 10 : 1000);
            splade_qvec_free(&q);
        }
        splade_searcher_free(s);
        splade_index_close(ix);
        td_free(dir);
        free_collection(&c);
    }
}

static void test_empty_query_and_absent_terms(void **state)
{
    (void)state;
    rng = 99;
    collection c;
    make_collection(&c, 200, 50, 20, 0);
    char *dir = td_make("splade_test_query");
    splade_index *ix = build(&c, dir);
    splade_searcher *s;
    assert_int_equal(splade_searcher_create(ix, &s), 0);
    splade_qvec q;
    splade_hit hits[10];
    int n = -1;
    assert_int_equal(splade_qvec_build(NULL, NULL, 0, 50, &q), 0);
    assert_int_equal(splade_search(s, &q, 10, SPLADE_ALGO_BMM, hits, &n), 0);
    assert_int_equal(n, 0);
    splade_qvec_free(&q);
    int32_t absent[] = {50, 51, -1};
    float w[] = {1, 2, 3};
    assert_int_equal(splade_qvec_build(absent, w, 3, 50, &q), 0);
    assert_int_equal(q.n, 0);
    assert_int_equal(splade_search(s, &q, 10, SPLADE_ALGO_MAXSCORE, hits, &n), 0);
    assert_int_equal(n, 0);
    splade_qvec_free(&q);
    int32_t rep[] = {3, 3, 7};
    float rw[] = {0.5f, 0.5f, 1.0f};
    assert_int_equal(splade_qvec_build(rep, rw, 3, 50, &q), 0);
    assert_int_equal(q.n, 2); /* term 3 once, weight 1.0 == term 7's */
    assert_int_equal(q.impacts[0], 255);
    assert_int_equal(q.impacts[1], 255);
    splade_qvec_free(&q);
    splade_searcher_free(s);
    splade_index_close(ix);
    td_free(dir);
    free_collection(&c);
}

static void test_batch_same_for_any_thread_count(void **state)
{
    (void)state;
    rng = 7;
    collection c;
    make_collection(&c, 2000, 300, 40, 1);
    char *dir = td_make("splade_test_query");
    splade_index *ix = build(&c, dir);
    enum { NQ = 64, K = 20 };
    splade_qvec qs[NQ];
    for (int i = 0; i < NQ; i++)
        random_query(&c, &qs[i], 1);
    static splade_hit h1[NQ * K], h4[NQ * K];
    int n1[NQ], n4[NQ];
    assert_int_equal(splade_search_batch(ix, qs, NQ, K, SPLADE_ALGO_BMM, 1, h1, n1), 0);
    assert_int_equal(splade_search_batch(ix, qs, NQ, K, SPLADE_ALGO_BMM, 4, h4, n4), 0);
    assert_memory_equal(n1, n4, sizeof n1);
    for (int i = 0; i < NQ; i++) {
        assert_memory_equal(h1 + i * K, h4 + i * K, (size_t)n1[i] * sizeof *h1);
        splade_hit want[K];
        assert_int_equal(brute_force(&c, &qs[i], K, want), n1[i]);
        assert_memory_equal(want, h1 + i * K, (size_t)n1[i] * sizeof *h1);
        splade_qvec_free(&qs[i]);
    }
    splade_index_close(ix);
    td_free(dir);
    free_collection(&c);
}

/* The document order (and so every internal id) does not depend on the inversion's threads. */
static void test_reorder_independent_of_threads(void **state)
{
    (void)state;
    rng = 4242;
    collection c;
    make_collection(&c, 9000, 2000, 50, 0);
    char *d1 = td_make("splade_test_query"), *d3 = td_make("splade_test_query");
    build_threads = 1;
    splade_index *a = build(&c, d1);
    uint32_t *first = malloc(c.n_docs * sizeof *first);
    memcpy(first, c.internal, c.n_docs * sizeof *first);
    build_threads = 3;
    splade_index *b = build(&c, d3);
    build_threads = 1;
    assert_true(splade_index_get_info(a)->flags & SPLADE_IX_REORDERED);
    assert_memory_equal(first, c.internal, c.n_docs * sizeof *first);
    free(first);
    splade_index_close(a);
    splade_index_close(b);
    td_free(d1);
    td_free(d3);
    free_collection(&c);
}

/* The build-time order keeps a topic together: documents of T topics (each with its own strong
 * terms, plus weak shared ones) in random corpus order come out in about T runs of one topic, not
 * one per cluster. 20k documents get 626 clusters, ~6 per topic: in cluster-number order (before
 * the chain of neighbouring clusters) a topic's clusters lay apart, ~600 runs. */
static void test_reorder_keeps_topics_together(void **state)
{
    (void)state;
    enum { DOCS = 20000, TOPICS = 100, TOPIC_TERMS = 30, SHARED = 2000 };
    rng = 777;
    collection c;
    make_collection(&c, DOCS, TOPICS * TOPIC_TERMS + SHARED, 0, 0); /* empty documents, filled below */
    uint32_t *topic = malloc(DOCS * sizeof *topic);
    for (uint32_t d = 0; d < DOCS; d++) {
        topic[d] = rnd() % TOPICS;
        c.terms[d] = realloc(c.terms[d], 40 * sizeof(int32_t));
        c.w[d] = realloc(c.w[d], 40 * sizeof(float));
        int n = 0;
        for (int i = 0; i < TOPIC_TERMS; i += 2) { /* every other term of its topic, from a random start */
            c.terms[d][n] = (int32_t)(topic[d] * TOPIC_TERMS + (i + rnd() % 2) % TOPIC_TERMS);
            c.w[d][n++] = 1.0f + (float)(rnd() % 1000) / 500.0f;
        }
        for (int i = 0; i < 10; i++) /* weak shared terms, distinct: one from each tenth of the pool */
            c.terms[d][n] = TOPICS * TOPIC_TERMS + i * (SHARED / 10) + (int32_t)(rnd() % (SHARED / 10)),
            c.w[d][n++] = 0.1f + (float)(rnd() % 100) / 500.0f;
        c.len[d] = n;
    }
    char *dir = td_make("splade_test_query");
    splade_index *ix = build(&c, dir);
    assert_true(splade_index_get_info(ix)->flags & SPLADE_IX_REORDERED);
    uint32_t *at = malloc(DOCS * sizeof *at), runs = 1;
    for (uint32_t d = 0; d < DOCS; d++)
        at[c.internal[d]] = topic[d];
    for (uint32_t i = 1; i < DOCS; i++)
        runs += at[i] != at[i - 1];
    print_message("topic runs in internal order: %u for %d topics\n", runs, TOPICS);
    assert_true(runs <= 2 * TOPICS);
    free(at);
    free(topic);
    splade_index_close(ix);
    td_free(dir);
    free_collection(&c);
}

/* Approximate wtaat (splade_search_opts): options of no effect give the exact answer; query_cut = 1
 * gives the exact answer of the query reduced to its heaviest term; a bound factor < 1 returns
 * hits with their exact scores, best first, never more than the exact answer's, among the exact
 * answer's documents or below its k-th score; bad options are refused. */
static void test_approximate_options(void **state)
{
    (void)state;
    rng = 31337;
    collection c;
    make_collection(&c, 12000, 400, 40, 0);
    char *dir = td_make("splade_test_query");
    splade_index *ix = build(&c, dir);
    splade_searcher *s;
    assert_int_equal(splade_searcher_create(ix, &s), 0);
    enum { K = 10 };
    for (int qi = 0; qi < 40; qi++) {
        splade_qvec q;
        random_query(&c, &q, 0);
        splade_hit want[K], got[K];
        int nw = brute_force(&c, &q, K, want), ng = -1;
        splade_search_opts none = {q.n + 3, 1.0f, 0, 0};
        assert_int_equal(splade_searcher_set_opts(s, &none), 0);
        assert_int_equal(splade_search(s, &q, K, SPLADE_ALGO_WTAAT, got, &ng), 0);
        assert_int_equal(ng, nw);
        assert_memory_equal(got, want, (size_t)nw * sizeof *got);
        splade_search_opts loose = {0, 0.5f, 0, 0};
        assert_int_equal(splade_searcher_set_opts(s, &loose), 0);
        assert_int_equal(splade_search(s, &q, K, SPLADE_ALGO_AUTO, got, &ng), 0);
        assert_true(ng <= nw);
        for (int i = 0; i < ng; i++) {
            if (i > 0)
                assert_true(got[i].score <= got[i - 1].score);
            assert_true(got[i].score <= want[i].score); /* the i-th best can only get worse */
        }
        if (q.n > 0) { /* the heaviest term alone: first of the largest impacts, by term id */
            int top = 0;
            for (int i = 1; i < q.n; i++)
                top = q.impacts[i] > q.impacts[top] ? i : top;
            splade_qvec one = {1, &q.terms[top], &q.impacts[top], q.query_max};
            splade_search_opts cut = {1, 0, 0, 0};
            int n1 = brute_force(&c, &one, K, want), ties = 0;
            for (int i = 0; i < q.n; i++)
                ties += q.impacts[i] == q.impacts[top];
            assert_int_equal(splade_searcher_set_opts(s, &cut), 0);
            assert_int_equal(splade_search(s, &q, K, SPLADE_ALGO_WTAAT, got, &ng), 0);
            if (ties == 1) { /* (equal impacts: either term may be kept) */
                assert_int_equal(ng, n1);
                assert_memory_equal(got, want, (size_t)n1 * sizeof *got);
            }
        }
        splade_qvec_free(&q);
    }
    splade_search_opts bad = {-1, 0, 0, 0}, bad2 = {0, 1.5f, 0, 0};
    assert_true(splade_searcher_set_opts(s, &bad) < 0);
    assert_true(splade_searcher_set_opts(s, &bad2) < 0);
    assert_true(splade_searcher_set_opts(NULL, NULL) < 0);
    assert_int_equal(splade_searcher_set_opts(s, NULL), 0);
    splade_searcher_free(s);
    splade_index_close(ix);
    td_free(dir);
    free_collection(&c);
}

/* The default method with query_cut on a collection small enough for TAAT: exactly the brute force
 * of the query reduced to its query_cut terms of largest impact among those with postings (ties: the
 * first in term order), whatever the bound factor (TAAT skips nothing). */
static void test_query_cut_taat(void **state)
{
    (void)state;
    rng = 4242;
    collection c;
    make_collection(&c, 3000, 200, 50, 1); /* coarse weights: many tied impacts */
    char *dir = td_make("splade_test_query");
    splade_index *ix = build(&c, dir);
    splade_searcher *s;
    assert_int_equal(splade_searcher_create(ix, &s), 0);
    char *has = calloc((size_t)c.n_terms, 1);
    for (uint32_t d = 0; d < c.n_docs; d++)
        for (int i = 0; i < c.len[d]; i++)
            has[c.terms[d][i]] = 1;
    enum { K = 10 };
    for (int qi = 0; qi < 60; qi++) {
        splade_qvec q;
        random_query(&c, &q, 1);
        int cut = 1 + (int)(rnd() % 6);
        int32_t terms[64];
        uint8_t imps[64];
        int m = 0;
        for (int v = 255; v > 0 && m < cut; v--) /* by impact, then term order (q is sorted by term) */
            for (int i = 0; i < q.n && m < cut; i++)
                if (q.impacts[i] == v && q.terms[i] < c.n_terms && has[q.terms[i]])
                    terms[m] = q.terms[i], imps[m++] = q.impacts[i];
        splade_qvec small = {m, terms, imps, q.query_max};
        splade_hit want[K], got[K];
        int nw = brute_force(&c, &small, K, want), ng = -1;
        for (int f = 0; f < 2; f++) {
            splade_search_opts o = {cut, f ? 0.5f : 0, 0, 0};
            assert_int_equal(splade_searcher_set_opts(s, &o), 0);
            assert_int_equal(splade_search(s, &q, K, SPLADE_ALGO_AUTO, got, &ng), 0);
            assert_int_equal(ng, nw);
            assert_memory_equal(got, want, (size_t)nw * sizeof *got);
        }
        splade_qvec_free(&q);
    }
    free(has);
    splade_searcher_free(s);
    splade_index_close(ix);
    td_free(dir);
    free_collection(&c);
}

/* Exact score of internal id `doc` for q, from the collection (0 when absent). */
static uint32_t doc_score(const collection *c, const splade_qvec *q, uint32_t doc)
{
    float max = splade_scale_max(c->max / 255.0f);
    for (uint32_t d = 0; d < c->n_docs; d++) {
        if (c->internal[d] != doc)
            continue;
        uint32_t s = 0;
        for (int i = 0; i < c->len[d]; i++)
            for (int j = 0; j < q->n; j++)
                if (q->terms[j] == c->terms[d][i])
                    s += q->impacts[j] * (uint32_t)splade_quantize(c->w[d][i], max);
        return s;
    }
    return 0;
}

/* Rescoring (splade_search_opts.rescore) on a random collection of 12,000 documents (auto takes
 * windowed TAAT there, or the rescoring pass): with a cut keeping every term, the exact answer;
 * with a third of the query's terms picking 60 candidates (with and without a bound factor), every
 * hit carries its document's exact score, best first, and recall@10 against brute force over the
 * queries exceeds a floor and the cut alone's by 0.2 (random vectors have no heavy terms: the cut
 * alone finds 0.55); the forward index is reported once built; bad values are refused. */
static void test_rescore(void **state)
{
    (void)state;
    rng = 777;
    collection c;
    make_collection(&c, 12000, 400, 40, 0);
    char *dir = td_make("splade_test_query");
    splade_index *ix = build(&c, dir);
    splade_searcher *s;
    assert_int_equal(splade_searcher_create(ix, &s), 0);
    enum { K = 10 };
    int found[3] = {0, 0, 0}, total = 0;
    for (int qi = 0; qi < 60; qi++) {
        splade_qvec q;
        random_query(&c, &q, 0);
        splade_hit want[K], got[K];
        int nw = brute_force(&c, &q, K, want), ng = -1;
        splade_search_opts all = {q.n + 1, 0, 1 + (int)(rnd() % 20), 0};
        assert_int_equal(splade_searcher_set_opts(s, &all), 0);
        assert_int_equal(splade_search(s, &q, K, SPLADE_ALGO_AUTO, got, &ng), 0);
        assert_int_equal(ng, nw);
        assert_memory_equal(got, want, (size_t)nw * sizeof *got);
        total += nw;
        for (int f = 0; f < 3; f++) { /* rescored, rescored with a bound factor, the cut alone */
            splade_search_opts few = {q.n / 3 + 1, f == 1 ? 0.7f : 0, f < 2 ? 60 : 0, 0};
            assert_int_equal(splade_searcher_set_opts(s, &few), 0);
            assert_int_equal(splade_search(s, &q, K, SPLADE_ALGO_AUTO, got, &ng), 0);
            assert_true(ng <= nw);
            for (int i = 0; i < ng; i++) {
                if (f < 2)
                    assert_int_equal(got[i].score, doc_score(&c, &q, got[i].doc));
                if (i > 0)
                    assert_true(got[i].score <= got[i - 1].score);
                for (int j = 0; j < nw; j++)
                    found[f] += got[i].doc == want[j].doc;
            }
        }
        splade_qvec_free(&q);
    }
    print_message("recall@10 with a third of the terms: rescoring 60 candidates %.3f (and bound factor 0.7: "
                  "%.3f), the cut alone %.3f\n", (double)found[0] / total, (double)found[1] / total,
                  (double)found[2] / total);
    assert_true(found[0] > 0.80 * total); /* measured 0.843, 0.820 and 0.545 when written */
    assert_true(found[1] > 0.78 * total);
    assert_true(found[0] > found[2] + total / 5);
    const splade_search_stats *st = splade_searcher_stats(s);
    assert_true(st->rescored > 0);
    assert_true(st->forward_bytes >= 3 * splade_index_get_info(ix)->n_postings);
    splade_search_opts bad = {3, 0, -1, 0}, bad2 = {3, 0, SPLADE_RESCORE_MAX + 1, 0};
    assert_true(splade_searcher_set_opts(s, &bad) < 0);
    assert_true(strstr(splade_error_detail(), "rescore -1") != NULL);
    assert_true(splade_searcher_set_opts(s, &bad2) < 0);
    splade_searcher_free(s);
    splade_index_close(ix);
    td_free(dir);
    free_collection(&c);
}

/* The forward index (src/index/forward.c, built on a team of threads, each inverting a run of terms)
 * against the collection itself: every document's entries are its terms of nonzero quantized weight,
 * ascending, with their impacts. A team's runs joined in the wrong order would break the ascent. */
static void test_forward_index(void **state)
{
    (void)state;
    rng = 4242;
    collection c;
    make_collection(&c, 3000, 700, 60, 0);
    char *dir = td_make("splade_test_query");
    splade_index *ix = build(&c, dir);
    const splade_index *file = splade_index_segment(ix, 0)->ix;
    splade_forward *f = splade_forward_build(file);
    assert_non_null(f);
    assert_int_equal(f->n_docs, c.n_docs);
    const float max = splade_scale_max(c.max / 255.0f);
    uint64_t entries = 0;
    for (uint32_t d = 0; d < c.n_docs; d++) {
        const uint32_t id = c.internal[d];
        int32_t want_t[700];
        int want_n = 0;
        uint8_t want_q[700];
        for (int32_t t = 0; t < c.n_terms; t++) /* ascending terms, those of nonzero impact */
            for (int i = 0; i < c.len[d]; i++)
                if (c.terms[d][i] == t && splade_quantize(c.w[d][i], max) > 0) {
                    want_t[want_n] = t;
                    want_q[want_n++] = (uint8_t)splade_quantize(c.w[d][i], max);
                }
        assert_int_equal(f->off[id + 1] - f->off[id], want_n);
        for (int i = 0; i < want_n; i++) {
            assert_int_equal(splade_forward_term(f, f->off[id] + (uint64_t)i), want_t[i]);
            assert_int_equal(f->imp[f->off[id] + (uint64_t)i], want_q[i]);
        }
        entries += (uint64_t)want_n;
    }
    assert_int_equal(f->off[c.n_docs], entries);
    assert_int_equal(entries, splade_index_get_info(file)->n_postings);
    splade_forward_free(f);
    splade_index_close(ix);
    td_free(dir);
    free_collection(&c);
}

/* Rescoring over threads and common terms: a batch on 4 threads (the forward index built once, by
 * whichever searcher comes first, the others waiting) answers as on 1, from a fresh index each time;
 * a query whose terms all cover more than a fifth of the documents still finds its candidates (the
 * candidate pass keeps them all rather than none): both terms are in every document, the second with
 * one weight, so the first alone ranks as both do and its 100 best hold the exact top 10. */
static void test_rescore_threads_and_common_terms(void **state)
{
    (void)state;
    rng = 99;
    collection c;
    make_collection(&c, 6000, 300, 40, 0);
    for (uint32_t d = 0; d < c.n_docs; d++) { /* terms 300 and 301 in every document */
        c.terms[d] = realloc(c.terms[d], ((size_t)c.len[d] + 2) * sizeof(int32_t));
        c.w[d] = realloc(c.w[d], ((size_t)c.len[d] + 2) * sizeof(float));
        c.terms[d][c.len[d]] = 300;
        c.w[d][c.len[d]++] = 1.0f + (float)(d % 100) / 100.0f;
        c.terms[d][c.len[d]] = 301;
        c.w[d][c.len[d]++] = 1.0f;
    }
    c.n_terms = 302;
    c.max = c.max > 2.0f ? c.max : 2.0f;
    enum { NQ = 48, K = 10 };
    splade_qvec qs[NQ];
    for (int i = 0; i < NQ; i++)
        random_query(&c, &qs[i], 0);
    static splade_hit h1[NQ * K], h4[NQ * K];
    int n1[NQ], n4[NQ];
    splade_search_opts o = {4, 0, 50, 0};
    for (int threads = 1; threads <= 4; threads += 3) {
        char *dir = td_make("splade_test_query");
        splade_index *ix = build(&c, dir);
        assert_int_equal(splade_search_batch_opts(ix, qs, NQ, K, SPLADE_ALGO_AUTO, &o, threads,
                                                  threads == 1 ? h1 : h4, threads == 1 ? n1 : n4), 0);
        if (threads == 4) {
            assert_memory_equal(n1, n4, sizeof n1);
            for (int i = 0; i < NQ; i++)
                assert_memory_equal(h1 + i * K, h4 + i * K, (size_t)n1[i] * sizeof *h1);
            int32_t terms[2] = {300, 301};
            float w[2] = {3.0f, 1.0f};
            splade_qvec q;
            assert_int_equal(splade_qvec_build(terms, w, 2, 302, &q), 0);
            splade_searcher *s;
            splade_search_opts one = {1, 0, 100, 0};
            splade_hit want[K], got[K];
            int nw = brute_force(&c, &q, K, want), ng = -1;
            assert_int_equal(splade_searcher_create(ix, &s), 0);
            assert_int_equal(splade_searcher_set_opts(s, &one), 0);
            assert_int_equal(splade_search(s, &q, K, SPLADE_ALGO_AUTO, got, &ng), 0);
            assert_int_equal(ng, K);
            assert_int_equal(nw, K);
            assert_memory_equal(got, want, (size_t)K * sizeof *got);
            splade_searcher_free(s);
            splade_qvec_free(&q);
        }
        splade_index_close(ix);
        td_free(dir);
    }
    for (int i = 0; i < NQ; i++)
        splade_qvec_free(&qs[i]);
    free_collection(&c);
}

/* A vocabulary past 65,536 terms (multilingual models: 105 k): the forward index keeps 32-bit term
 * ids; a rescoring search whose cut keeps every term is exact, and a cut one returns exact scores. */
static void test_rescore_wide_vocabulary(void **state)
{
    (void)state;
    rng = 4321;
    collection c;
    make_collection(&c, 3000, 70000, 30, 0);
    for (uint32_t d = 0; d < c.n_docs; d += 3) /* terms past 65,536 in a third of the documents */
        if (c.len[d] > 0)
            c.terms[d][0] = 65536 + (int32_t)(rnd() % 4000);
    char *dir = td_make("splade_test_query");
    splade_index *ix = build(&c, dir);
    splade_searcher *s;
    assert_int_equal(splade_searcher_create(ix, &s), 0);
    enum { K = 10 };
    for (int qi = 0; qi < 30; qi++) {
        int32_t terms[8];
        float w[8];
        for (int i = 0; i < 8; i++) { /* half of them past 65,536 */
            terms[i] = i % 2 ? 65536 + (int32_t)(rnd() % 4000) : rnd_term(c.n_terms);
            w[i] = rnd_weight(0);
        }
        splade_qvec q;
        assert_int_equal(splade_qvec_build(terms, w, 8, (uint32_t)c.n_terms, &q), 0);
        splade_hit want[K], got[K];
        int nw = brute_force(&c, &q, K, want), ng = -1;
        splade_search_opts all = {q.n + 1, 0, 30, 0}, cut = {2, 0, 30, 0};
        assert_int_equal(splade_searcher_set_opts(s, &all), 0);
        assert_int_equal(splade_search(s, &q, K, SPLADE_ALGO_AUTO, got, &ng), 0);
        assert_int_equal(ng, nw);
        assert_memory_equal(got, want, (size_t)nw * sizeof *got);
        assert_int_equal(splade_searcher_set_opts(s, &cut), 0);
        assert_int_equal(splade_search(s, &q, K, SPLADE_ALGO_AUTO, got, &ng), 0);
        for (int i = 0; i < ng; i++)
            assert_int_equal(got[i].score, doc_score(&c, &q, got[i].doc));
        splade_qvec_free(&q);
    }
    const splade_search_stats *st = splade_searcher_stats(s);
    assert_true(st->forward_bytes >= 5 * splade_index_get_info(ix)->n_postings); /* 4-byte ids */
    splade_searcher_free(s);
    splade_index_close(ix);
    td_free(dir);
    free_collection(&c);
}


/* The posting budget (splade_search_opts.budget) on a random collection of 70,000 documents (two
 * windows of the copies) whose lists mostly exceed SPLADE_IMPACT_MIN_LIST (copied): a budget covering every posting with a cut
 * keeping every term is the exact answer (ties included: coarse weights every other query); a budget
 * of a third of the query's postings returns exact scores, best first, with recall@10 above a floor
 * and above a third of the terms alone's; the copies are reported; bad values are refused. */
static void test_budget(void **state)
{
    (void)state;
    rng = 2468;
    collection c;
    make_collection(&c, 70000, 200, 12, 0); /* ~2,100 postings a list (most copied, the rarest not), two windows */
    char *dir = td_make("splade_test_query");
    splade_index *ix = build(&c, dir);
    splade_searcher *s;
    assert_int_equal(splade_searcher_create(ix, &s), 0);
    enum { K = 10 };
    int found[2] = {0, 0}, total = 0;
    for (int qi = 0; qi < 60; qi++) {
        splade_qvec q;
        random_query(&c, &q, qi % 2);
        splade_hit want[K], got[K];
        int nw = brute_force(&c, &q, K, want), ng = -1;
        /* every posting: INT_MAX, or just the query's postings (the threshold's first step) */
        uint64_t sum = 0;
        for (int i = 0; i < q.n; i++) {
            splade_term_postings tp;
            splade_index_postings(splade_index_segment(ix, 0)->ix, q.terms[i], &tp);
            sum += tp.n_postings;
        }
        splade_search_opts all = {q.n + 1, 0, 1 + (int)(rnd() % 20), qi % 3 ? (int)sum : INT_MAX};
        assert_int_equal(splade_searcher_set_opts(s, &all), 0);
        assert_int_equal(splade_search(s, &q, K, SPLADE_ALGO_AUTO, got, &ng), 0);
        assert_int_equal(ng, nw);
        assert_memory_equal(got, want, (size_t)nw * sizeof *got);
        total += nw;
        for (int f = 0; f < 2; f++) { /* a third of the postings by the budget, or by the cut alone */
            splade_search_opts few = f == 0 ? (splade_search_opts){q.n + 1, 0, 60, (int)(sum / 3) + 1}
                                            : (splade_search_opts){q.n / 3 + 1, 0, 0, 0};
            assert_int_equal(splade_searcher_set_opts(s, &few), 0);
            assert_int_equal(splade_search(s, &q, K, SPLADE_ALGO_AUTO, got, &ng), 0);
            assert_true(ng <= nw);
            for (int i = 0; i < ng; i++) {
                if (f == 0)
                    assert_int_equal(got[i].score, doc_score(&c, &q, got[i].doc));
                if (i > 0)
                    assert_true(got[i].score <= got[i - 1].score);
                for (int j = 0; j < nw; j++)
                    found[f] += got[i].doc == want[j].doc;
            }
        }
        splade_qvec_free(&q);
    }
    print_message("recall@10 from a third of the postings: 60 candidates by the budget %.3f, a third of the terms "
                  "alone %.3f\n",
                  (double)found[0] / total, (double)found[1] / total);
    assert_true(found[0] > 0.85 * total); /* measured 0.955 and 0.545 when written */
    assert_true(found[0] > found[1] + total / 5);
    const splade_search_stats *st = splade_searcher_stats(s);
    assert_true(st->impact_bytes >= 5 * (splade_index_get_info(ix)->n_postings / 2)); /* most lists copied */
    splade_search_opts neg = {3, 0, 10, -1}, alone = {3, 0, 0, 100}, both = {3, 0.5f, 10, 100};
    assert_true(splade_searcher_set_opts(s, &neg) < 0);
    assert_true(strstr(splade_error_detail(), "budget -1") != NULL);
    assert_true(splade_searcher_set_opts(s, &alone) < 0);
    assert_true(strstr(splade_error_detail(), "only with rescore") != NULL);
    assert_true(splade_searcher_set_opts(s, &both) < 0);
    assert_true(strstr(splade_error_detail(), "bound_factor") != NULL);
    splade_searcher_free(s);
    splade_index_close(ix);
    td_free(dir);
    free_collection(&c);
}

/* Mean recall@k of searches with o against brute force, every returned score checked exact; a hit
 * whose score ties the exact k-th counts (splade_search_calibrate's measure, computed apart). */
static double recall_with(const collection *c, const splade_index *ix, const splade_qvec *qs, int nq, int k,
                          const splade_search_opts *o)
{
    splade_searcher *s;
    assert_int_equal(splade_searcher_create(ix, &s), 0);
    assert_int_equal(splade_searcher_set_opts(s, o), 0);
    splade_hit want[16], got[16];
    double sum = 0.0;
    int counted = 0;
    for (int i = 0; i < nq; i++) {
        int nw = brute_force(c, &qs[i], k, want), ng = -1, hits = 0;
        assert_int_equal(splade_search(s, &qs[i], k, SPLADE_ALGO_AUTO, got, &ng), 0);
        for (int j = 0; j < ng; j++) {
            assert_int_equal(got[j].score, doc_score(c, &qs[i], got[j].doc));
            hits += nw > 0 && got[j].score >= want[nw - 1].score;
        }
        if (nw > 0)
            sum += (double)(hits < nw ? hits : nw) / nw, counted++;
    }
    splade_searcher_free(s);
    return counted ? sum / counted : 1.0;
}

/* splade_search_calibrate: on 70,000 documents, the setting it picks for recall 0.99 is a rung of its
 * ladder whose recall, measured apart against brute force, is the one reported and reaches 0.9,
 * while the rung below (half the budget) does not; for a target no rung reaches (queries of 120
 * equally weighted terms, of which the cut keeps 24) it answers exact (zeros, recall 1); bad
 * arguments are refused with a detail. */
static void test_calibrate(void **state)
{
    (void)state;
    rng = 1357;
    collection c;
    make_collection(&c, 70000, 200, 12, 0);
    char *dir = td_make("splade_test_query");
    splade_index *ix = build(&c, dir);
    enum { K = 10, NQ = 40, WIDE = 8 };
    splade_qvec qs[NQ], wide[WIDE];
    for (int i = 0; i < NQ; i++)
        random_query(&c, &qs[i], 0);
    splade_search_opts o;
    double r = -1.0, target = 0.99; /* the first rung measured 0.985 here: the second is taken */
    assert_int_equal(splade_search_calibrate(ix, qs, NQ, K, target, 2, &o, &r), 0);
    assert_int_equal(o.query_cut, 24);
    assert_int_equal(o.rescore, 200);
    assert_true(o.budget > 0 && o.bound_factor == 0.0f);
    const double apart = recall_with(&c, ix, qs, NQ, K, &o);
    print_message("calibrated for %.2f: budget %d, recall %.4f (apart %.4f)\n", target, o.budget, r, apart);
    assert_true(r >= target && fabs(apart - r) < 1e-9);
    /* not the first rung (0.1 x 70,000 + 1), and the rung below (a budget sqrt(2) smaller) falls short */
    static const double per_doc[] = {0.1, 0.1414, 0.2, 0.2828, 0.4, 0.5657, 0.8, 1.1314, 1.6};
    int rung = 0;
    while (rung < 9 && (int)(per_doc[rung] * c.n_docs + 1.0) != o.budget)
        rung++;
    assert_true(rung > 0 && rung < 9);
    splade_search_opts below = o;
    below.budget = (int)(per_doc[rung - 1] * c.n_docs + 1.0);
    assert_true(recall_with(&c, ix, qs, NQ, K, &below) < target);
    int32_t terms[120];
    float w[120];
    for (int i = 0; i < 120; i++)
        terms[i] = i, w[i] = 1.0f;
    for (int i = 0; i < WIDE; i++) {
        terms[i] = 120 + i; /* each query a little different */
        assert_int_equal(splade_qvec_build(terms, w, 120, (uint32_t)c.n_terms, &wide[i]), 0);
    }
    assert_int_equal(splade_search_calibrate(ix, wide, WIDE, K, 0.999, 1, &o, &r), 0);
    splade_search_opts zero;
    memset(&zero, 0, sizeof zero);
    assert_memory_equal(&o, &zero, sizeof o);
    assert_true(r == 1.0);
    assert_true(splade_search_calibrate(ix, qs, 0, K, 0.9, 1, &o, &r) == SPLADE_ERR_INVALID_ARG);
    assert_true(splade_search_calibrate(ix, qs, NQ, K, 0.9, 1, NULL, &r) == SPLADE_ERR_INVALID_ARG);
    assert_true(splade_search_calibrate(ix, qs, NQ, 0, 0.9, 1, &o, &r) == SPLADE_ERR_INVALID_ARG);
    assert_true(splade_search_calibrate(ix, qs, NQ, K, 0.0, 1, &o, &r) == SPLADE_ERR_INVALID_ARG);
    assert_true(splade_search_calibrate(ix, qs, NQ, K, 1.5, 1, &o, &r) == SPLADE_ERR_INVALID_ARG);
    assert_true(strstr(splade_error_detail(), "target 1.5") != NULL);
    assert_true(splade_search_calibrate(NULL, qs, NQ, K, 0.9, 1, &o, &r) == SPLADE_ERR_INVALID_ARG);
    for (int i = 0; i < NQ; i++)
        splade_qvec_free(&qs[i]);
    for (int i = 0; i < WIDE; i++)
        splade_qvec_free(&wide[i]);
    splade_index_close(ix);
    td_free(dir);
    free_collection(&c);
}

/* The budgeted pass's window heads, found from each window's counts at impact levels (4 impacts apart)
 * and a search within the level bracket of the lowest impact taken: on 70,000 documents (two windows)
 * of continuous weights, every copy's level counts match its postings; a term of impacts 1, 2 and 3
 * only (below the first level's floor of 4: found by the search alone) answers a query of it alone
 * exactly with every posting, and with a budget of its postings of impact >= 2 (>= 3) returns just
 * the documents of those impacts. */
static void test_budget_levels(void **state)
{
    (void)state;
    rng = 8642;
    collection c;
    make_collection(&c, 70000, 300, 10, 0);
    const int32_t T = c.n_terms++; /* the new term, in every 7th document */
    const float max = splade_scale_max(c.max / 255.0f);
    float w[4] = {0};
    for (int v = 1; v <= 3; v++) { /* a weight quantized to impact v */
        w[v] = c.max * (float)v / 255.0f;
        for (int i = 0; i < 100 && splade_quantize(w[v], max) != v; i++)
            w[v] *= splade_quantize(w[v], max) < v ? 1.01f : 0.99f;
        assert_int_equal(splade_quantize(w[v], max), v);
    }
    for (uint32_t d = 3, i = 0; d < c.n_docs; d += 7, i++) { /* 5 of impact 3, 5 of 2, the rest 1 */
        c.terms[d] = realloc(c.terms[d], ((size_t)c.len[d] + 1) * sizeof(int32_t));
        c.w[d] = realloc(c.w[d], ((size_t)c.len[d] + 1) * sizeof(float));
        c.terms[d][c.len[d]] = T;
        c.w[d][c.len[d]++] = w[i < 5 ? 3 : i < 10 ? 2 : 1];
    }
    char *dir = td_make("splade_test_query");
    splade_index *ix = build(&c, dir);
    const splade_impact_order *o = splade_index_impact_order(splade_index_segment(ix, 0)->ix);
    assert_non_null(o);
    assert_int_equal(o->n_win, 2);
    int copies = 0;
    for (int32_t t = 0; t < c.n_terms; t++) {
        splade_impact_list l;
        if (!splade_impact_list_of(o, t, &l))
            continue;
        copies++;
        for (uint32_t win = 0; win < o->n_win; win++)
            for (uint32_t L = 0; L < SPLADE_IMPACT_LEVELS; L++) {
                uint32_t at = 0;
                for (uint32_t i = l.win[win]; i < l.win[win + 1]; i++)
                    at += l.imps[i] >= splade_impact_level_floor(L);
                assert_int_equal(l.lvl[win * SPLADE_IMPACT_LEVELS + L], at);
            }
    }
    assert_true(copies > 20);
    float qw = 1.0f;
    splade_qvec q;
    assert_int_equal(splade_qvec_build(&T, &qw, 1, (uint32_t)c.n_terms, &q), 0);
    enum { K = 10 };
    splade_hit want[K], got[K];
    int nw = brute_force(&c, &q, K, want), ng = -1;
    assert_int_equal(nw, K);
    splade_searcher *s;
    assert_int_equal(splade_searcher_create(ix, &s), 0);
    const int budgets[3] = {INT_MAX, 10, 9}, found[3] = {K, K, 5}; /* every posting; impact >= 2; >= 3 */
    for (int b = 0; b < 3; b++) {
        splade_search_opts opts = {2, 0, K, budgets[b]};
        assert_int_equal(splade_searcher_set_opts(s, &opts), 0);
        assert_int_equal(splade_search(s, &q, K, SPLADE_ALGO_AUTO, got, &ng), 0);
        assert_int_equal(ng, found[b]);
        assert_memory_equal(got, want, (size_t)ng * sizeof *got);
    }
    splade_searcher_free(s);
    splade_qvec_free(&q);
    splade_index_close(ix);
    td_free(dir);
    free_collection(&c);
}

/* The impact-ordered copies (src/index/impact_order.c, built on a team of threads) against the
 * collection itself: a term has a copy iff it has SPLADE_IMPACT_MIN_LIST postings or more; a copy holds
 * exactly the documents of nonzero quantized weight, each with its impact, window by window (windows
 * of 2^SPLADE_IMPACT_WINDOW_SHIFT internal ids: two here), by decreasing impact within a window and
 * ascending id within an impact; its counts ge[v] are its postings of impact >= v, and each window's
 * counts at the impact levels (lvl) its postings of impact >= each level's floor. */
static void test_impact_order(void **state)
{
    (void)state;
    rng = 1357;
    collection c;
    make_collection(&c, 70000, 1500, 36, 1); /* coarse: few impacts, long runs of one; two windows */
    char *dir = td_make("splade_test_query");
    splade_index *ix = build(&c, dir);
    const splade_impact_order *o = splade_index_impact_order(splade_index_segment(ix, 0)->ix);
    assert_non_null(o);
    assert_int_equal(o->n_win, (70000 + (1u << SPLADE_IMPACT_WINDOW_SHIFT) - 1) >> SPLADE_IMPACT_WINDOW_SHIFT);
    assert_true(o->n_win >= 2);
    const float max = splade_scale_max(c.max / 255.0f);
    uint8_t *want = malloc(c.n_docs);
    int copies = 0, missing = 0;
    for (int32_t t = 0; t < c.n_terms; t++) {
        memset(want, 0, c.n_docs);
        uint32_t n = 0, ge[256] = {0};
        for (uint32_t d = 0; d < c.n_docs; d++)
            for (int i = 0; i < c.len[d]; i++)
                if (c.terms[d][i] == t && splade_quantize(c.w[d][i], max) > 0) {
                    want[c.internal[d]] = (uint8_t)splade_quantize(c.w[d][i], max);
                    for (int v = 0; v <= want[c.internal[d]]; v++)
                        ge[v]++;
                    n++;
                }
        splade_impact_list l = {0};
        if (n < SPLADE_IMPACT_MIN_LIST) {
            missing++;
            assert_int_equal(splade_impact_list_of(o, t, &l), 0);
            continue;
        }
        assert_int_equal(splade_impact_list_of(o, t, &l), 1);
        copies++;
        assert_memory_equal(l.ge, ge, sizeof ge);
        assert_int_equal(l.win[0], 0);
        assert_int_equal(l.win[o->n_win], n);
        for (uint32_t w = 0; w < o->n_win; w++) /* each window's counts at the impact levels */
            for (uint32_t L = 0; L < SPLADE_IMPACT_LEVELS; L++) {
                uint32_t at = 0;
                for (uint32_t i = l.win[w]; i < l.win[w + 1]; i++)
                    at += l.imps[i] >= splade_impact_level_floor(L);
                assert_int_equal(l.lvl[w * SPLADE_IMPACT_LEVELS + L], at);
            }
        for (uint32_t w = 0; w < o->n_win; w++)
            for (uint32_t i = l.win[w]; i < l.win[w + 1]; i++) {
                const uint32_t d = (w << SPLADE_IMPACT_WINDOW_SHIFT) + l.docs[i];
                assert_true(d < c.n_docs);
                assert_true(l.imps[i] > 0);
                assert_int_equal(l.imps[i], want[d]);
                want[d] = 0; /* each document once */
                if (i > l.win[w])
                    assert_true(l.imps[i] < l.imps[i - 1] || (l.imps[i] == l.imps[i - 1] && l.docs[i] > l.docs[i - 1]));
            }
    }
    assert_true(copies > 10 && missing > 10); /* both kinds of lists are in the collection */
    free(want);
    splade_index_close(ix);
    td_free(dir);
    free_collection(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_collections_match_brute_force),
        cmocka_unit_test(test_taat_windows_match_brute_force),
        cmocka_unit_test(test_empty_query_and_absent_terms),
        cmocka_unit_test(test_batch_same_for_any_thread_count),
        cmocka_unit_test(test_reorder_independent_of_threads),
        cmocka_unit_test(test_reorder_keeps_topics_together),
        cmocka_unit_test(test_approximate_options),
        cmocka_unit_test(test_query_cut_taat),
        cmocka_unit_test(test_rescore),
        cmocka_unit_test(test_rescore_threads_and_common_terms),
        cmocka_unit_test(test_rescore_wide_vocabulary),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_budget_levels), cmocka_unit_test(test_calibrate),
        cmocka_unit_test(test_impact_order),
        cmocka_unit_test(test_forward_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
