/* The GPU's compacted SPLADE output (splade_gpu_encoder_forward_sparse, src/encoder/gpu_sparse.cu)
 * against splade_sparse_from_dense on the same dense values, bit for bit:
 *   - synthetic [B, V] arrays through the compaction alone (splade_gpu_sparse_compact_host): rows
 *     with no nonzero, all V nonzero, ~250 nonzeros, values at the threshold, -0, NaN, inf;
 *     V = 30522, small V, tile edges (1024, 1025), V = 1; B = 1 and B > 1024 (the offsets scan in
 *     several chunks); thresholds 0, negative, positive, NaN;
 *   - random models: the GPU encoder's dense output + splade_sparse_from_dense vs its compacted
 *     output (bf16 and fp32, fused and naive heads, batches growing and shrinking);
 *   - the encoder (splade_encoder_encode_ids on the GPU): the compacted path (default) vs
 *     gpu_dense_output = 1, with thresholds, top_k (ties included) and the out-of-memory split;
 *   - splade_sparse_from_pairs vs splade_sparse_from_dense on the CPU (runs without a GPU);
 *   - bad arguments.
 * GPU tests skip visibly without a GPU. SPLADE_GPU_TEST_SMALL=1: smaller cases (sanitizers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encoder/model_internal.h"
#include "splade.h"
#include "splade/encoder.h"
#include "encoder/gpu_encoder.h"
#include "splade/model.h"
#include "splade/sparse.h"

#include "gpu_random_model.h"
#include "gpu_test_util.h"

#ifdef SPLADE_HAVE_CUDA
#include "encoder/gpu_encoder_internal.h"
#endif



static int small_mode(void) { return getenv("SPLADE_GPU_TEST_SMALL") != NULL; }

/* Asserts a == b: same n, same terms, same weight bits. */
static void assert_same_vec(const splade_sparse *a, const splade_sparse *b, const char *what, int row)
{
    if (a->n != b->n)
        fail_msg("%s, row %d: %d terms vs %d", what, row, (int)a->n, (int)b->n);
    for (int32_t i = 0; i < a->n; i++)
        if (a->terms[i] != b->terms[i] || memcmp(&a->weights[i], &b->weights[i], sizeof(float)) != 0)
            fail_msg("%s, row %d, pair %d: (%d, %a) vs (%d, %a)", what, row, (int)i, (int)a->terms[i],
                     (double)a->weights[i], (int)b->terms[i], (double)b->weights[i]);
}

/* Row b of a compacted batch (offsets/terms/weights) equals splade_sparse_from_dense(dense row). */
UNUSED_OK static void assert_row_matches(const float *dense_row, int32_t V, float thr, const int32_t *offsets,
                               const int32_t *terms, const float *weights, int b, const char *what)
{
    splade_sparse ref, got;
    assert_int_equal(splade_sparse_from_dense(dense_row, V, thr, 0, &ref), SPLADE_OK);
    const int32_t o = offsets[b], n = offsets[b + 1] - o;
    if (n < 0)
        fail_msg("%s, row %d: offsets %d .. %d decrease", what, b, (int)o, (int)offsets[b + 1]);
    got.n = n;
    got.terms = (int32_t *)(n ? terms + o : NULL);
    got.weights = (float *)(n ? weights + o : NULL);
    assert_same_vec(&got, &ref, what, b);
    splade_sparse_free(&ref);
}

static float unit(uint64_t *s) { return (float)((rm_next(s) >> 40) * (1.0 / 16777216.0)); } /* [0, 1) */

/* ---- CPU: splade_sparse_from_pairs ------------------------------------------------------- */

/* Keeping the pairs from_dense keeps, then top_k: same vectors, ties included. */
static void test_from_pairs_cpu(void **state)
{
    (void)state;
    const int32_t V = 3000;
    float *d = malloc(V * sizeof *d);
    int32_t *t = malloc(V * sizeof *t);
    float *w = malloc(V * sizeof *w);
    uint64_t s = 77;
    const float thr[] = {0.0f, 0.25f, -1.0f};
    const int32_t ks[] = {0, 1, 7, 50, 2999, 5000};
    for (int rep = 0; rep < 20; rep++) {
        for (int32_t i = 0; i < V; i++) {
            const float u = unit(&s);
            /* few distinct values: many exact ties at any top-k boundary */
            d[i] = u < 0.6f ? 0.0f : u < 0.7f ? -u : (float)(rm_next(&s) % (rep % 2 ? 5 : 1000)) * 0.125f;
        }
        for (size_t ti = 0; ti < sizeof thr / sizeof *thr; ti++) {
            int32_t n = 0;
            for (int32_t i = 0; i < V; i++)
                if (d[i] > thr[ti] && d[i] > 0.0f)
                    t[n] = i, w[n++] = d[i];
            for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++) {
                splade_sparse a, b;
                assert_int_equal(splade_sparse_from_dense(d, V, thr[ti], ks[ki], &a), SPLADE_OK);
                assert_int_equal(splade_sparse_from_pairs(t, w, n, ks[ki], &b), SPLADE_OK);
                assert_same_vec(&b, &a, "from_pairs vs from_dense", rep);
                splade_sparse_free(&a), splade_sparse_free(&b);
            }
        }
    }
    splade_sparse v;
    assert_int_equal(splade_sparse_from_pairs(NULL, NULL, 0, 10, &v), SPLADE_OK);
    assert_int_equal(v.n, 0);
    splade_sparse_free(&v);
    assert_int_equal(splade_sparse_from_pairs(NULL, w, 3, 0, &v), SPLADE_ERR_INVALID_ARG);
    assert_int_equal(splade_sparse_from_pairs(t, w, -1, 0, &v), SPLADE_ERR_INVALID_ARG);
    assert_int_equal(splade_sparse_from_pairs(t, w, 1, 0, NULL), SPLADE_ERR_INVALID_ARG);
    free(d), free(t), free(w);
}

/* ---- the compaction alone, synthetic inputs ------------------------------------------------ */

/* Row kinds: 0 none kept, 1 all V positive, 2 ~250 positive among zeros/negatives, 3 values at
 * and around 0.5 plus -0, NaN and inf, 4 a single nonzero at the last term, 5 dense random. */
UNUSED_OK static void fill_row(float *r, int32_t V, int kind, uint64_t *s)
{
    for (int32_t i = 0; i < V; i++) {
        const float u = unit(s);
        switch (kind) {
        case 0: r[i] = u < 0.5f ? 0.0f : -u; break;
        case 1: r[i] = 1e-30f + u * 3.0f; break;
        case 2: r[i] = (int64_t)(rm_next(s) % (uint64_t)V) < 250 ? 0.01f + 2.5f * u : (u < 0.5f ? 0.0f : -u); break;
        case 3: {
            const uint64_t k = rm_next(s) % 8;
            r[i] = k == 0 ? 0.5f : k == 1 ? nextafterf(0.5f, 1.0f) : k == 2 ? nextafterf(0.5f, 0.0f)
                 : k == 3 ? -0.0f : k == 4 ? NAN : k == 5 ? INFINITY : k == 6 ? 1e-38f : u;
            break;
        }
        case 4: r[i] = i == V - 1 ? 0.75f : 0.0f; break;
        default: r[i] = 2.0f * u - 0.5f; break;
        }
    }
}

static void check_synthetic(int32_t B, int32_t V, float thr, uint64_t seed)
{
#ifdef SPLADE_HAVE_CUDA
    float *d = malloc((size_t)B * V * sizeof *d);
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 3;
    for (int32_t b = 0; b < B; b++)
        fill_row(d + (size_t)b * V, V, (int)((b + seed) % 6), &s);
    int32_t *off = NULL, *terms = NULL;
    float *w = NULL;
    int rc = splade_gpu_sparse_compact_host(d, B, V, thr, &off, &terms, &w);
    if (rc != SPLADE_OK)
        fail_msg("compact B=%d V=%d: %s: %s", (int)B, (int)V, splade_strerror(rc), splade_error_detail());
    assert_int_equal(off[0], 0);
    char what[96];
    snprintf(what, sizeof what, "synthetic B=%d V=%d threshold %g", (int)B, (int)V, (double)thr);
    for (int32_t b = 0; b < B; b++)
        assert_row_matches(d + (size_t)b * V, V, thr, off, terms, w, b, what);
    printf("  %s: %d pairs, identical\n", what, (int)off[B]);
    free(d), free(off), free(terms), free(w);
#else
    (void)B, (void)V, (void)thr, (void)seed;
#endif
}

static void test_compact_synthetic(void **state)
{
    (void)state;
    if (!gpu_available())
        skip();
    const float thr[] = {0.0f, 0.5f, -2.0f, 1.5f, NAN};
    for (size_t ti = 0; ti < sizeof thr / sizeof *thr; ti++) {
        check_synthetic(1, 30522, thr[ti], 1 + ti);
        check_synthetic(small_mode() ? 7 : 64, 30522, thr[ti], 2 + ti);
        check_synthetic(6, 37, thr[ti], 3 + ti);
    }
    check_synthetic(12, 1024, 0.0f, 11);
    check_synthetic(12, 1025, 0.0f, 12);
    check_synthetic(12, 1023, 0.3f, 13);
    check_synthetic(5, 1, 0.0f, 14);
    check_synthetic(1, 1, 0.0f, 15);
    check_synthetic(small_mode() ? 1100 : 2500, 40, 0.0f, 16);  /* offsets scanned in several chunks of 1024 */
}

/* ---- random models: dense output + from_dense vs the compacted output -------------------- */


UNUSED_OK static void check_model(const splade_model *m, splade_precision prec, splade_lmhead_kind head)
{
#ifdef SPLADE_HAVE_CUDA
    const int V = m->cfg.vocab_size, P = m->cfg.max_position;
    splade_gpu_encoder *g = NULL;
    int rc = splade_gpu_encoder_create_ex(m, head, prec, &g);
    if (rc != SPLADE_OK)
        fail_msg("create: %s: %s", splade_strerror(rc), splade_error_detail());
    /* batches growing then shrinking: the pair buffers grow and are reused */
    const int shapes[][6] = {{1, 2, 0, 0, 0, 0}, {5, 5, 1, 2, P, 17}, {3, P, 9, 1, 0, 0}, {1, 1, 0, 0, 0, 0}};
    const float thr[] = {0.0f, 1.0f, 2.5f};
    for (int r = 0; r < 4; r++) {
        const int B = shapes[r][0];
        int32_t *ids, *off;
        rm_make_batch(&shapes[r][1], B, V, 900 + r, &ids, &off);
        float *d = malloc((size_t)B * V * sizeof *d);
        rc = splade_gpu_encoder_forward(g, ids, off, B, d);
        if (rc != SPLADE_OK)
            fail_msg("forward: %s: %s", splade_strerror(rc), splade_error_detail());
        for (size_t ti = 0; ti < sizeof thr / sizeof *thr; ti++) {
            splade_gpu_sparse sp;
            rc = splade_gpu_encoder_forward_sparse(g, ids, off, B, thr[ti], &sp);
            if (rc != SPLADE_OK)
                fail_msg("forward_sparse: %s: %s", splade_strerror(rc), splade_error_detail());
            assert_int_equal(sp.B, B);
            assert_int_equal(sp.offsets[0], 0);
            assert_true(sp.nnz == sp.offsets[B]);
            char what[128];
            snprintf(what, sizeof what, "%s %s V=%d B=%d threshold %g", prec == SPLADE_PRECISION_FP32 ? "fp32" : "bf16",
                     head == SPLADE_LMHEAD_NAIVE ? "naive" : "fused", V, B, (double)thr[ti]);
            for (int b = 0; b < B; b++)
                assert_row_matches(d + (size_t)b * V, V, thr[ti], sp.offsets, sp.terms, sp.weights, b, what);
            printf("  %s: %lld pairs (%.1f per row), identical to the dense output\n", what, (long long)sp.nnz,
                   (double)sp.nnz / B);
        }
        free(ids), free(off), free(d);
    }
    splade_gpu_encoder_free(g);
#else
    (void)m, (void)prec, (void)head;
#endif
}

static void test_model_outputs(void **state)
{
    (void)state;
    if (!gpu_available())
        skip();
    const struct {
        int V, H, L, heads, I, P, tied;
        uint64_t seed;
    } c[] = {{1500, 96, 2, 3, 384, 128, 1, 11}, {3000, 128, 1, 2, 512, 130, 0, 22}, {30522, 64, 1, 2, 256, 64, 1, 33}};
    const int nc = small_mode() ? 2 : 3;
    for (int i = 0; i < nc; i++) {
        splade_model m;
        memset(&m, 0, sizeof m);
        m.cfg = rm_config(c[i].V, c[i].H, c[i].L, c[i].heads, c[i].I, c[i].P, c[i].tied);
        assert_int_equal(rm_build(&m, c[i].seed), 0);
        check_model(&m, SPLADE_PRECISION_BF16, SPLADE_LMHEAD_FUSED);
        check_model(&m, SPLADE_PRECISION_FP32, SPLADE_LMHEAD_FUSED);
        if (i == 0)
            check_model(&m, SPLADE_PRECISION_BF16, SPLADE_LMHEAD_NAIVE);
        rm_free(&m);
    }
}

/* ---- the encoder: compacted path vs gpu_dense_output ------------------------------------- */

UNUSED_OK static void encode_all(const splade_model *m, splade_encoder_opts o, const int32_t *ids, const int32_t *off,
                                 int n, splade_sparse *out)
{
    splade_encoder *e = NULL;
    int rc = splade_encoder_create(m, &o, &e);
    if (rc != SPLADE_OK)
        fail_msg("encoder create: %s: %s", splade_strerror(rc), splade_error_detail());
    assert_int_equal(splade_encoder_device(e), SPLADE_DEVICE_CUDA);
    rc = splade_encoder_encode_ids(e, ids, off, n, out);
    if (rc != SPLADE_OK)
        fail_msg("encode_ids: %s: %s", splade_strerror(rc), splade_error_detail());
    assert_int_equal(splade_encoder_device(e), SPLADE_DEVICE_CUDA);  /* no fallback happened */
    splade_encoder_free(e);
}

static void test_encoder_paths(void **state)
{
    (void)state;
    if (!gpu_available())
        skip();
#ifdef SPLADE_HAVE_CUDA
    splade_model m;
    memset(&m, 0, sizeof m);
    m.cfg = rm_config(2000, 128, 2, 4, 512, 96, 1);
    assert_int_equal(rm_build(&m, 5150), 0);
    enum { N = 23 };
    int lens[N];
    for (int i = 0; i < N; i++)
        lens[i] = 2 + (i * 37) % 95;  /* 2 .. 96 */
    lens[4] = 96;
    lens[9] = 2;
    int32_t *ids, *off;
    rm_make_batch(lens, N, 2000, 4242, &ids, &off);
    const struct {
        float thr;
        int32_t top_k, batch, cap;
        splade_precision prec;
    } cfg[] = {
        {0.0f, 0, 0, 0, SPLADE_PRECISION_BF16},    {1.0f, 0, 8, 0, SPLADE_PRECISION_BF16},
        {0.0f, 50, 0, 0, SPLADE_PRECISION_BF16},   {0.5f, 5, 5, 0, SPLADE_PRECISION_BF16},
        {0.0f, 1999, 0, 0, SPLADE_PRECISION_BF16}, {0.0f, 30, 16, 300, SPLADE_PRECISION_BF16}, /* OOM split */
        {0.0f, 0, 0, 0, SPLADE_PRECISION_FP32},    {0.8f, 40, 7, 250, SPLADE_PRECISION_FP32},
    };
    for (size_t k = 0; k < sizeof cfg / sizeof *cfg; k++) {
        splade_encoder_opts o = {.device = SPLADE_DEVICE_CUDA, .quiet = 1, .threshold = cfg[k].thr,
                                 .top_k = cfg[k].top_k, .batch_size = cfg[k].batch,
                                 .max_batch_tokens = cfg[k].cap, .precision = cfg[k].prec};
        splade_sparse a[N], b[N];
        o.gpu_dense_output = 1;
        encode_all(&m, o, ids, off, N, a);
        o.gpu_dense_output = 0;
        encode_all(&m, o, ids, off, N, b);
        char what[128];
        snprintf(what, sizeof what, "encoder %s threshold %g top_k %d batch %d token cap %d",
                 cfg[k].prec == SPLADE_PRECISION_FP32 ? "fp32" : "bf16", (double)cfg[k].thr, (int)cfg[k].top_k,
                 (int)cfg[k].batch, (int)cfg[k].cap);
        long long tot = 0;
        for (int i = 0; i < N; i++) {
            assert_same_vec(&b[i], &a[i], what, i);
            tot += a[i].n;
            splade_sparse_free(&a[i]), splade_sparse_free(&b[i]);
        }
        printf("  %s: compacted == dense path (%lld terms over %d docs)\n", what, tot, N);
    }
    free(ids), free(off);
    rm_free(&m);
#endif
}

/* ---- bad arguments ----------------------------------------------------------------------- */

static void test_bad_args(void **state)
{
    (void)state;
    splade_gpu_sparse sp;
    int32_t ids[4] = {1, 2, 3, 4}, off[3] = {0, 2, 4};
    /* NULL encoder: refused in every build (no CUDA: NO_GPU) */
    const int rc0 = splade_gpu_encoder_forward_sparse(NULL, ids, off, 2, 0.0f, &sp);
    assert_true(rc0 == SPLADE_ERR_INVALID_ARG || rc0 == SPLADE_ERR_NO_GPU);
    if (!gpu_available())
        skip();
#ifdef SPLADE_HAVE_CUDA
    assert_int_equal(rc0, SPLADE_ERR_INVALID_ARG);
    splade_model m;
    memset(&m, 0, sizeof m);
    m.cfg = rm_config(500, 64, 1, 2, 256, 32, 1);
    assert_int_equal(rm_build(&m, 66), 0);
    splade_gpu_encoder *g = NULL;
    assert_int_equal(splade_gpu_encoder_create(&m, SPLADE_LMHEAD_FUSED, &g), SPLADE_OK);
    assert_int_equal(splade_gpu_encoder_forward_sparse(g, ids, off, 2, 0.0f, NULL), SPLADE_ERR_INVALID_ARG);
    assert_int_equal(splade_gpu_encoder_forward_sparse(g, NULL, off, 2, 0.0f, &sp), SPLADE_ERR_INVALID_ARG);
    assert_int_equal(splade_gpu_encoder_forward_sparse(g, ids, NULL, 2, 0.0f, &sp), SPLADE_ERR_INVALID_ARG);
    assert_int_equal(splade_gpu_encoder_forward_sparse(g, ids, off, -1, 0.0f, &sp), SPLADE_ERR_INVALID_ARG);
    ids[1] = 500;  /* outside the vocabulary */
    assert_int_equal(splade_gpu_encoder_forward_sparse(g, ids, off, 2, 0.0f, &sp), SPLADE_ERR_INVALID_ARG);
    printf("  bad id: %s\n", splade_error_detail());
    ids[1] = 2;
    /* B = 0: nothing to do, an empty result */
    memset(&sp, 0xAB, sizeof sp);
    assert_int_equal(splade_gpu_encoder_forward_sparse(g, ids, off, 0, 0.0f, &sp), SPLADE_OK);
    assert_int_equal(sp.B, 0);
    assert_true(sp.nnz == 0);
    assert_non_null(sp.offsets);
    assert_int_equal(sp.offsets[0], 0);
    /* and the encoder still works after all that */
    assert_int_equal(splade_gpu_encoder_forward_sparse(g, ids, off, 2, 0.0f, &sp), SPLADE_OK);
    assert_int_equal(sp.B, 2);
    splade_gpu_encoder_free(g);
    rm_free(&m);

    float d[4] = {1, 0, 2, 0};
    int32_t *o = NULL, *t = NULL;
    float *w = NULL;
    assert_int_equal(splade_gpu_sparse_compact_host(NULL, 1, 4, 0.0f, &o, &t, &w), SPLADE_ERR_INVALID_ARG);
    assert_int_equal(splade_gpu_sparse_compact_host(d, 1, 0, 0.0f, &o, &t, &w), SPLADE_ERR_INVALID_ARG);
    assert_int_equal(splade_gpu_sparse_compact_host(d, -1, 4, 0.0f, &o, &t, &w), SPLADE_ERR_INVALID_ARG);
    assert_int_equal(splade_gpu_sparse_compact_host(d, 1, 4, 0.0f, NULL, &t, &w), SPLADE_ERR_INVALID_ARG);
    /* B * V over 2^31 - 1: refused before anything is read */
    assert_int_equal(splade_gpu_sparse_compact_host(d, 70400, 30522, 0.0f, &o, &t, &w), SPLADE_ERR_INVALID_ARG);
    printf("  B*V too large: %s\n", splade_error_detail());
    assert_int_equal(splade_gpu_sparse_compact_host(d, 0, 4, 0.0f, &o, &t, &w), SPLADE_OK);
    assert_int_equal(o[0], 0);
    free(o), free(t), free(w);
    assert_int_equal(splade_gpu_sparse_compact_host(d, 2, 2, 0.0f, &o, &t, &w), SPLADE_OK);
    assert_int_equal(o[1], 1);
    assert_int_equal(o[2], 2);
    assert_int_equal(t[0], 0);
    assert_int_equal(t[1], 0);
    assert_true(w[0] == 1.0f && w[1] == 2.0f);
    free(o), free(t), free(w);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_from_pairs_cpu),  cmocka_unit_test(test_compact_synthetic),
        cmocka_unit_test(test_model_outputs),   cmocka_unit_test(test_encoder_paths),
        cmocka_unit_test(test_bad_args),
    };
    if (getenv("SPLADE_GPU_TEST_FILTER"))
        cmocka_set_test_filter(getenv("SPLADE_GPU_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
