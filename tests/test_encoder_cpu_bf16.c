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
        cmocka_unit_test(test_random_model),
        cmocka_unit_test(test_threads_identical),
        cmocka_unit_test(test_paths_identical),
        cmocka_unit_test(test_splade_tiny),
        cmocka_unit_test(test_bad_precision),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
