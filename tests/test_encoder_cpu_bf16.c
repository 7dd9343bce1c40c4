/* The CPU's opt-in bf16 forward (`--precision bf16`, issue #13) against the fp32 forward, which the
 * transformers goldens pin (test_encoder_cpu.c): bf16 rounds every GEMM input, so vectors move by
 * a documented tolerance, not bits. On random models (widths that are not multiples of the
 * 128-column panels, batches over several 128-row blocks, short query-like sequences) and on
 * splade-tiny's golden ids. Also: the thread count never changes a bf16 vector, an unknown
 * cpu_precision is rejected. Skips visibly where the CPU (or the build) has no native bf16; the
 * masked-CPU error is tests/cli/test_cpu_bf16.sh's (oneDNN reads $ONEDNN_MAX_CPU_ISA once). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "encoder/gemm_dnnl.h"
#include "encoder/model_internal.h"
#include "gpu_random_model.h"
#include "splade.h"
#include "splade/encoder.h"
#include "splade/model.h"

/* Tolerances of bf16 vs fp32 (bench/results/encoder-cpu-2026-11-25.md: splade-tiny max |diff|
 * ~0.03, rel. L2 ~0.006; a bert-base-shaped random model rel. L2 ~0.02): relative L2 distance of
 * all vectors together, and the share of each vector's top-10 terms (by fp32 weight) that stay
 * in bf16's top 20. */
#define REL_L2_TOL 0.05
#define TOP10_MIN 0.8

static int bf16_here(void)
{
    if (splade_dnnl_bf16_check() == SPLADE_OK)
        return 1;
    printf("SKIP: no native bf16 here: %s\n", splade_error_detail());
    return 0;
}

#define PRECISION_NAME "bf16"
#include "cpu_precision_check.h"

/* Random weights, shapes with panel tails (hidden 192, FFN 704, vocab 3001), sequences from 2
 * tokens (the few-rows path) to 300 (several 128-row blocks), in one batch and one at a time. */
static void test_random_model(void **state)
{
    (void)state;
    if (!bf16_here())
        skip();
    splade_model m;
    memset(&m, 0, sizeof m);
    m.cfg = rm_config(3001, 192, 2, 3, 704, 512, 0);
    assert_int_equal(rm_build(&m, 7), 0);
    static const int lens[] = {300, 129, 64, 33, 9, 2};
    enum { N = sizeof lens / sizeof *lens };
    int32_t *ids, *off;
    rm_make_batch(lens, N, m.cfg.vocab_size, 11, &ids, &off);
    const int32_t V = m.cfg.vocab_size;
    float *f = malloc((size_t)N * V * sizeof *f), *b = malloc((size_t)N * V * sizeof *b);
    float *b1 = malloc((size_t)N * V * sizeof *b1);
    encode_dense(&m, SPLADE_CPU_FP32, 1, N, ids, off, N, f);
    encode_dense(&m, SPLADE_CPU_BF16, 1, N, ids, off, N, b);
    compare_precision("random H192 batch", f, b, N, V);
    encode_dense(&m, SPLADE_CPU_BF16, 1, 1, ids, off, N, b1);
    compare_precision("random H192 one at a time", f, b1, N, V);
    free(f), free(b), free(b1), free(ids), free(off);
    rm_free(&m);
}

/* A batch of documents only (> 64 tokens: Q, K, V go from their GEMMs to attention in bf16 blocks,
 * splade_dnnl_share_heads) and the same documents with a short one (the fp32-rows path for the batch)
 * give the documents the same bits; row blocks of 117 and 126 rows (padded to 120 and 128 rows:
 * SPLADE_DNNL_PAD_ROWS) on both sides. */
static void test_paths_identical(void **state)
{
    (void)state;
    if (!bf16_here())
        skip();
    splade_model m;
    memset(&m, 0, sizeof m);
    m.cfg = rm_config(3001, 192, 2, 3, 704, 512, 0);
    assert_int_equal(rm_build(&m, 9), 0);
    static const int lens[] = {300, 129, 200, 9};
    enum { N = sizeof lens / sizeof *lens };
    int32_t *ids, *off;
    rm_make_batch(lens, N, m.cfg.vocab_size, 5, &ids, &off);
    const size_t V = (size_t)m.cfg.vocab_size;
    float *docs = malloc(N * V * sizeof *docs), *mixed = malloc(N * V * sizeof *mixed);
    encode_dense(&m, SPLADE_CPU_BF16, 1, N - 1, ids, off, N - 1, docs);
    encode_dense(&m, SPLADE_CPU_BF16, 2, N, ids, off, N, mixed);
    assert_memory_equal(docs, mixed, (N - 1) * V * sizeof *docs);
    free(docs), free(mixed), free(ids), free(off);
    rm_free(&m);
}

/* splade_dnnl_member_grid: over any team size, the members' units cover every (row block, panel)
 * exactly once with the same rows, and a unit's place does not depend on the team size (the bits
 * do not); the order keeps a weight panel for several row blocks: groups of SPLADE_DNNL_GROUP row
 * blocks per panel while their A rows fit SPLADE_DNNL_GROUP_BYTES (K = 768 in bf16), else panels outer
 * (K = 3072). Pure arithmetic: runs without oneDNN too. */
static void test_unit_grid(void **state)
{
    (void)state;
    static const int32_t Ms[] = {1, 50, 64, 65, 128, 129, 300, 515, 2040, 2700};
    static const int32_t nps[] = {1, 3, 6, 24};
    static const size_t row_bytes[] = {768 * 2, 3072 * 2, 768, 3072, 192 * 2};
    for (size_t a = 0; a < sizeof Ms / sizeof *Ms; a++)
        for (size_t b = 0; b < sizeof nps / sizeof *nps; b++)
            for (size_t c = 0; c < sizeof row_bytes / sizeof *row_bytes; c++) {
                const int32_t M = Ms[a], np = nps[b], rb = M <= 64 ? M : SPLADE_DNNL_ROWS;
                const int32_t n_rb = (M + rb - 1) / rb;
                int *seen = calloc((size_t)(n_rb * np), sizeof *seen);
                const splade_dnnl_grid one = splade_dnnl_member_grid(M, np, row_bytes[c], 0, 1);
                assert_int_equal(one.u1 - one.u0, n_rb * np);
                for (int n = 1; n <= 4; n++) {
                    int next = 0; /* members' ranges are contiguous, in tid order */
                    for (int tid = 0; tid < n; tid++) {
                        const splade_dnnl_grid g = splade_dnnl_member_grid(M, np, row_bytes[c], tid, n);
                        assert_int_equal(g.u0, next);
                        next = g.u1;
                        for (int u = g.u0; u < g.u1; u++) {
                            int32_t r0, rows, p, r1, rows1, p1;
                            splade_dnnl_grid_unit(&g, u, &r0, &rows, &p);
                            splade_dnnl_grid_unit(&one, u, &r1, &rows1, &p1);
                            assert_true(r0 == r1 && rows == rows1 && p == p1);
                            assert_true(r0 % rb == 0 && r0 < M && p >= 0 && p < np);
                            assert_int_equal(rows, M - r0 < rb ? M - r0 : rb);
                            seen[r0 / rb * np + p]++;
                        }
                    }
                    assert_int_equal(next, n_rb * np);
                }
                for (int32_t i = 0; i < n_rb * np; i++)
                    assert_int_equal(seen[i], 4); /* once per team size */
                free(seen);
            }
    /* the order: 2040 rows = 16 row blocks */
    int32_t r0, rows, p;
    splade_dnnl_grid g = splade_dnnl_member_grid(2040, 24, 768 * 2, 0, 1);
    for (int u = 0; u < 4; u++) { /* K = 768: panel 0 for row blocks 0..3, then panel 1 */
        splade_dnnl_grid_unit(&g, u, &r0, &rows, &p);
        assert_true(p == 0 && r0 == u * SPLADE_DNNL_ROWS);
    }
    splade_dnnl_grid_unit(&g, 4, &r0, &rows, &p);
    assert_true(p == 1 && r0 == 0);
    splade_dnnl_grid_unit(&g, 4 * 24, &r0, &rows, &p); /* the next group */
    assert_true(p == 0 && r0 == 4 * SPLADE_DNNL_ROWS);
    g = splade_dnnl_member_grid(2040, 6, 3072 * 2, 0, 1);
    for (int u = 0; u < 16; u++) { /* K = 3072: panel 0 for every row block first */
        splade_dnnl_grid_unit(&g, u, &r0, &rows, &p);
        assert_true(p == 0 && r0 == u * SPLADE_DNNL_ROWS);
    }
    splade_dnnl_grid_unit(&g, 16, &r0, &rows, &p);
    assert_true(p == 1 && r0 == 0);
}

/* 1, 2 and 3 threads give the same bf16 vectors, bit for bit (fixed units of work). */
static void test_threads_identical(void **state)
{
    (void)state;
    if (!bf16_here())
        skip();
    check_threads_identical(SPLADE_CPU_BF16);
}

/* splade-tiny (trained weights) on real-text-like ids: query and document lengths. */
static void test_splade_tiny(void **state)
{
    (void)state;
    if (!bf16_here() || !check_splade_tiny(SPLADE_CPU_BF16))
        skip();
}

static void test_bad_precision(void **state)
{
    (void)state;
    splade_model m;
    memset(&m, 0, sizeof m);
    m.cfg = rm_config(500, 32, 1, 2, 64, 64, 0);
    assert_int_equal(rm_build(&m, 1), 0);
    splade_encoder_opts o;
    splade_encoder_opts_init(&o);
    o.device = SPLADE_DEVICE_CPU, o.cpu_precision = (splade_cpu_precision)7;
    splade_encoder *e = NULL;
    assert_int_equal(splade_encoder_create(&m, &o, &e), SPLADE_ERR_INVALID_ARG);
    assert_non_null(strstr(splade_error_detail(), "cpu_precision 7"));
    splade_cpu_precision p;
    assert_int_equal(splade_parse_cpu_precision("int4", &p), SPLADE_ERR_INVALID_ARG);
    assert_int_equal(splade_parse_cpu_precision(NULL, &p), SPLADE_OK);
    assert_int_equal(p, SPLADE_CPU_FP32);
    assert_int_equal(splade_parse_cpu_precision("bf16", &p), SPLADE_OK);
    assert_int_equal(p, SPLADE_CPU_BF16);
    rm_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unit_grid),
        cmocka_unit_test(test_random_model),
        cmocka_unit_test(test_threads_identical),
        cmocka_unit_test(test_paths_identical),
        cmocka_unit_test(test_splade_tiny),
        cmocka_unit_test(test_bad_precision),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
