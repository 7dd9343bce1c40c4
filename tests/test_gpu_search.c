/* GPU batch search (splade_gpu_search_batch, src/gpu/search.cu) against the CPU's batch search
 * (splade_search_batch, the reference), hit for hit: random collections (a --vectors index) split
 * into 1 to 8 segments (some reordered), random deletions (sometimes a whole stretch), weights from
 * a small set (heavy score ties: the tie rule decides most of the top k) or continuous; queries with
 * 1 to 16 terms, some unknown to the index, empty queries, queries whose terms match nothing; k = 1,
 * 10, 100, 1000 (more than the live documents too); batches cut into chunks of a few queries
 * (SPLADE_GPU_SEARCH_CHUNK) and one long-list collection whose lists span many tasks; both ways of
 * adding (SPLADE_GPU_SEARCH_KERNEL=atomic and =window, the latter with odd window sizes too). Runs without a
 * GPU too: then the GPU cases skip visibly and the fallback status (SPLADE_ERR_NO_GPU) is checked;
 * bad arguments always. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/settings.h"
#include "splade.h"
#include "splade/build.h"
#include "splade/encoder.h"
#include "splade/index.h"
#include "splade/query.h"
#include "splade/segments.h"

#include "gpu_test_util.h"

#include "random_vdocs.h"
#include "tmp_dir.h"

/* Documents [0, n) in `segments` consecutive segments (random cuts), then random deletions. */
static char *collection(const vdoc *docs, int n, int segments)
{
    char *dir = td_make("splade_test_gpusearch");
    int cut[10] = {0};
    for (int s = 1; s < segments; s++)
    {
        int c = cut[s - 1] + 1 + (int)(rnd() % (uint32_t)((n - cut[s - 1]) / 2 + 1));
        cut[s] = c < n ? c : n;
    }
    cut[segments] = n;
    splade_index_builder *b = vdocs_builder(docs, 0, cut[1], (int)(rnd() % 2));
    assert_int_equal(splade_builder_set_doc_scale(b, 0.005f), 0);
    splade_builder_allow_empty(b, 1);
    assert_int_equal(splade_builder_write(b, dir, NULL), 0);
    splade_builder_free(b);
    for (int s = 1; s < segments; s++) {
        if (cut[s] == cut[s + 1])
            continue;
        b = vdocs_builder(docs, cut[s], cut[s + 1], (int)(rnd() % 2));
        splade_add_opts o = {.no_merge = 1};
        if (splade_index_add(b, dir, &o, NULL) < 0)
            fail_msg("add: %s", splade_error_detail());
        splade_builder_free(b);
    }
    int share = (int)(rnd() % 4), from = (int)(rnd() % (uint32_t)n), len = rnd() % 3 == 0 ? n / 4 : 0;
    char **ids = calloc((size_t)n, sizeof *ids);
    size_t m = 0;
    for (int i = 0; i < n; i++)
        if ((share && rnd() % 10 < (uint32_t)share) || (i >= from && i < from + len)) {
            ids[m] = malloc(24);
            snprintf(ids[m++], 24, "d%d", i);
        }
    if (m)
        assert_int_equal(splade_index_delete(dir, (const char *const *)ids, m, 1, NULL), 0);
    for (size_t i = 0; i < m; i++)
        free(ids[i]);
    free(ids);
    return dir;
}

/* Query i of a batch: empty every 11th, unknown tokens only every 13th, else 1..16 terms. */
static void random_query(splade_index *ix, int coarse, int i, splade_qvec *q)
{
    int n = i % 11 == 5 ? 0 : 1 + (int)(rnd() % 16), topic = (int)(rnd() % (VOCAB / 10));
    int32_t terms[32];
    float w[32];
    for (int j = 0; j < n; j++) {
        int tok = i % 13 == 7 ? VOCAB + 100 + j
                              : j < n / 2 ? topic * 10 + (int)(rnd() % 10) : (int)(rnd() % (VOCAB + 10));
        char s[16];
        snprintf(s, sizeof s, "w%d", tok);
        terms[j] = splade_index_term_lookup(ix, s, strlen(s)); /* -1 for unknown: dropped */
        w[j] = coarse ? (float)(1 + rnd() % 3) : (float)(1 + rnd() % 1000) / 300.0f;
    }
    assert_int_equal(splade_qvec_build(terms, w, n, splade_index_get_info(ix)->n_terms, q), 0);
}

/* GPU hits == CPU hits for every query of the batch at k. */
static void compare(splade_gpu_searcher *g, splade_index *ix, const splade_qvec *qs, int nq, int k, const char *what)
{
    splade_hit *want = malloc((size_t)nq * (size_t)k * sizeof *want), *got = malloc((size_t)nq * (size_t)k * sizeof *got);
    int *nw = malloc((size_t)nq * sizeof *nw), *ng = malloc((size_t)nq * sizeof *ng);
    assert_int_equal(splade_search_batch(ix, qs, nq, k, SPLADE_ALGO_AUTO, 2, want, nw), 0);
    if (splade_gpu_search_batch(g, qs, nq, k, got, ng) != 0)
        fail_msg("%s k=%d: %s", what, k, splade_error_detail());
    for (int q = 0; q < nq; q++) {
        if (ng[q] != nw[q])
            fail_msg("%s k=%d query %d: GPU %d hits, CPU %d", what, k, q, ng[q], nw[q]);
        for (int i = 0; i < nw[q]; i++) {
            const splade_hit a = got[(size_t)q * k + i], b = want[(size_t)q * k + i];
            if (a.doc != b.doc || a.score != b.score)
                fail_msg("%s k=%d query %d rank %d: GPU doc %u (%u), CPU doc %u (%u)", what, k, q, i, a.doc, a.score,
                         b.doc, b.score);
        }
    }
    free(want);
    free(got);
    free(nw);
    free(ng);
}

static void run_seed(uint64_t seed, int n, int nq)
{
    rng = seed * 0x9E3779B97F4A7C15ull + 11;
    int coarse = (int)(seed % 2), segments = 1 + (int)(rnd() % 8);
    if (segments > n)
        segments = n;
    vdoc *docs = calloc((size_t)n, sizeof *docs);
    for (int i = 0; i < n; i++)
        random_doc(&docs[i], coarse, (int)((uint64_t)i * 37 % (VOCAB / 10)));
    char *dir = collection(docs, n, segments);
    splade_index *ix;
    assert_int_equal(splade_index_open(dir, &ix), 0);
    splade_qvec *qs = calloc((size_t)nq, sizeof *qs);
    for (int i = 0; i < nq; i++)
        random_query(ix, coarse, i, &qs[i]);
    splade_gpu_searcher *g;
    if (splade_gpu_searcher_create(ix, -1, &g) != 0)
        fail_msg("seed %llu: %s", (unsigned long long)seed, splade_error_detail());
    char what[96];
    snprintf(what, sizeof what, "seed %llu (%d docs, %d segments, %s)", (unsigned long long)seed, n, segments,
             coarse ? "ties" : "continuous");
    static const int ks[] = {1, 10, 100, 1000};
    static const char *kernels[] = {"atomic", "window"}; /* src/gpu/search.cu's two ways to add */
    for (int ke = 0; ke < 2; ke++) {
        setenv("SPLADE_GPU_SEARCH_KERNEL", kernels[ke], 1);
        splade_settings_reload(); /* the knobs are read once (src/common/settings.c) */
        char w2[160];
        snprintf(w2, sizeof w2, "%s, %s kernel", what, kernels[ke]);
        for (int ki = 0; ki < 4; ki++)
            compare(g, ix, qs, nq, ks[ki], w2);
        setenv("SPLADE_GPU_SEARCH_CHUNK", "7", 1); /* several chunks per batch, the last one short */
        splade_settings_reload();
        compare(g, ix, qs, nq, 10, w2);
        setenv("SPLADE_GPU_SEARCH_WINDOW", "1000", 1); /* windows that are not powers of two, many of them */
        splade_settings_reload();
        compare(g, ix, qs, nq, 10, w2);
        unsetenv("SPLADE_GPU_SEARCH_WINDOW");
        unsetenv("SPLADE_GPU_SEARCH_CHUNK");
        splade_settings_reload();
    }
    unsetenv("SPLADE_GPU_SEARCH_KERNEL");
    splade_settings_reload();
    splade_gpu_searcher_free(g);
    for (int i = 0; i < nq; i++)
        splade_qvec_free(&qs[i]);
    free(qs);
    splade_index_close(ix);
    td_free(dir);
    free(docs);
}

static void test_random_collections(void **state)
{
    (void)state;
    if (!gpu_available())
        skip();
    for (uint64_t seed = 1; seed <= 16; seed++)
        run_seed(seed, seed % 4 == 0 ? 2000 + (int)(seed * 131 % 3000) : 2 + (int)(seed * 97 % 900), 40);
}

/* Lists far longer than a task (SPLADE_GPU_TASK_POSTINGS): each term's list spans many blocks. */
static void test_long_lists(void **state)
{
    (void)state;
    if (!gpu_available())
        skip();
    run_seed(101, 60000, 64);
}

/* A term id past the index's vocabulary adds nothing: the same hits as the query without it. */
static void test_term_outside_index(void **state)
{
    (void)state;
    if (!gpu_available())
        skip();
    rng = 77;
    vdoc docs[300];
    for (int i = 0; i < 300; i++)
        random_doc(&docs[i], 1, i % 40);
    char *dir = collection(docs, 300, 2);
    splade_index *ix;
    assert_int_equal(splade_index_open(dir, &ix), 0);
    uint32_t nt = splade_index_get_info(ix)->n_terms;
    int32_t t_in[2] = {0, 1};
    uint8_t imp[3] = {200, 100, 255};
    int32_t t_out[3] = {0, 1, (int32_t)nt + 5};
    splade_qvec q[2] = {{2, t_in, imp, 1.0f}, {3, t_out, imp, 1.0f}};
    splade_gpu_searcher *g;
    assert_int_equal(splade_gpu_searcher_create(ix, -1, &g), 0);
    splade_hit h[2][50];
    int n[2];
    assert_int_equal(splade_gpu_search_batch(g, &q[0], 1, 50, h[0], &n[0]), 0);
    assert_int_equal(splade_gpu_search_batch(g, &q[1], 1, 50, h[1], &n[1]), 0);
    assert_int_equal(n[0], n[1]);
    assert_memory_equal(h[0], h[1], (size_t)n[0] * sizeof h[0][0]);
    compare(g, ix, q, 1, 50, "term outside");
    splade_gpu_searcher_free(g);
    splade_index_close(ix);
    td_free(dir);
}

/* Without a GPU: SPLADE_ERR_NO_GPU (the caller falls back to the CPU), never a crash. Bad arguments
 * fail with SPLADE_ERR_INVALID_ARG whether or not there is a GPU. */
static void test_no_gpu_and_bad_arguments(void **state)
{
    (void)state;
    splade_gpu_searcher *g = (splade_gpu_searcher *)1;
    assert_int_equal(splade_gpu_searcher_create(NULL, -1, &g), SPLADE_ERR_INVALID_ARG);
    assert_null(g);
    assert_int_equal(splade_gpu_search_batch(NULL, NULL, 1, 10, NULL, NULL), SPLADE_ERR_INVALID_ARG);
    splade_gpu_searcher_free(NULL);
    rng = 5;
    vdoc docs[20];
    for (int i = 0; i < 20; i++)
        random_doc(&docs[i], 0, i % 40);
    char *dir = collection(docs, 20, 1);
    splade_index *ix;
    assert_int_equal(splade_index_open(dir, &ix), 0);
    assert_int_equal(splade_gpu_searcher_create(ix, -1, NULL), SPLADE_ERR_INVALID_ARG);
    char name[256];
    int rc = splade_gpu_searcher_create(ix, -1, &g);
    if (!splade_gpu_probe(name, sizeof name)) {
        printf("  (no GPU: %s) create -> %s\n", name, splade_error_detail());
        assert_int_equal(rc, SPLADE_ERR_NO_GPU);
        assert_null(g);
    } else {
        assert_int_equal(rc, 0);
        splade_hit h[4];
        int n[1] = {-1};
        splade_qvec q = {0, NULL, NULL, 1.0f};
        assert_int_equal(splade_gpu_search_batch(g, &q, 1, -1, h, n), SPLADE_ERR_INVALID_ARG);
        assert_int_equal(splade_gpu_search_batch(g, &q, -1, 4, h, n), SPLADE_ERR_INVALID_ARG);
        assert_int_equal(splade_gpu_search_batch(g, NULL, 1, 4, h, n), SPLADE_ERR_INVALID_ARG);
        assert_int_equal(splade_gpu_search_batch(g, &q, 1, 0, NULL, n), 0); /* k = 0: no hits */
        assert_int_equal(n[0], 0);
        assert_int_equal(splade_gpu_search_batch(g, &q, 1, 4, h, n), 0); /* empty query */
        assert_int_equal(n[0], 0);
        assert_int_equal(splade_gpu_search_batch(g, &q, 0, 4, h, n), 0);
        splade_gpu_searcher_free(g);
    }
    splade_index_close(ix);
    td_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_gpu_and_bad_arguments),
        cmocka_unit_test(test_term_outside_index),
        cmocka_unit_test(test_random_collections),
        cmocka_unit_test(test_long_lists),
    };
    if (getenv("SPLADE_GPU_TEST_FILTER")) /* bench/gpu.sh's compute-sanitizer runs */
        cmocka_set_test_filter(getenv("SPLADE_GPU_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
