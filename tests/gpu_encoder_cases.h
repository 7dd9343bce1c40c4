/* The random-model cases both GPU encoder tests run, one cmocka test each: bf16
 * (tests/test_gpu_encoder.c, against a float64 forward) and fp32 (tests/test_gpu_encoder_fp32.c,
 * against splade_forward_cpu). Head sizes 32, 64 and 128; tied and untied decoders; lengths 1, 2,
 * tile edges (63/64/65, 127/128/129) and the maximum position; B = 1; sequences longer than the
 * attention kernels' ring of K/V stages (refills while a block runs); once the naive head kind
 * with the FFN in slices of 128 tokens.
 *
 * Before including this header (after gpu_random_model.h) a test file defines
 *   static int gpu_available(void);
 *   static void check_case(const splade_model *m, splade_lmhead_kind head, const int *lens, int B,
 *                          uint64_t seed);   (encode B sequences of these lengths, compare, assert)
 * and puts gpu_encoder_case_tests() into its cmocka table. The test names stay those of the
 * functions they replaced (SPLADE_GPU_TEST_FILTER=test_long_sequences selects one in bench/gpu.sh). */
#ifndef SPLADE_GPU_ENCODER_CASES_H
#define SPLADE_GPU_ENCODER_CASES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "encoder/model_internal.h"

typedef struct {
    int V, H, L, heads, I, P, tied, B;
    int lens[8];
    uint64_t seed;
} rm_case;

typedef struct {
    const char *name;
    int n;
    rm_case c[3];
    int naive_ffn_slices; /* also run c[0] with the naive head kind and SPLADE_GPU_FFN_CHUNK=128 */
} rm_test;

static const rm_test rm_tests[] = {
    {"test_head32_varlen", 1, {{1500, 96, 2, 3, 384, 128, 1, 8, {2, 64, 37, 65, 1, 96, 128, 5}, 11}}, 0},
    {"test_head64_varlen", 1, {{3000, 128, 3, 2, 512, 130, 1, 7, {130, 2, 17, 63, 64, 129, 3}, 22}}, 1},
    {"test_head128_untied", 1, {{1000, 256, 2, 2, 1024, 80, 0, 4, {80, 2, 33, 79}, 33}}, 0},
    /* head size 32 (4 heads); one sequence of 1, of 2 and of the maximum position */
    {"test_batch_of_one", 3,
     {{2000, 128, 2, 4, 512, 200, 1, 1, {1}, 44}, {2000, 128, 2, 4, 512, 200, 1, 1, {2}, 46},
      {2000, 128, 2, 4, 512, 200, 1, 1, {200}, 45}},
     0},
    /* head size 64 then 128, maximum positions 512 and 320 */
    {"test_long_sequences", 2,
     {{2000, 128, 2, 2, 512, 512, 1, 6, {512, 3, 300, 257, 129, 450}, 55},
      {1000, 256, 1, 2, 512, 320, 0, 4, {320, 193, 64, 1}, 66}},
     0},
};
#define RM_NTESTS ((int)(sizeof rm_tests / sizeof *rm_tests))

/* Builds the case's random model, runs check_case on it, frees it. */
static void run_rm_case(const rm_case *c, splade_lmhead_kind head)
{
    splade_model m;
    memset(&m, 0, sizeof m);
    m.cfg = rm_config(c->V, c->H, c->L, c->heads, c->I, c->P, c->tied);
    assert_int_equal(rm_build(&m, c->seed), 0);
    check_case(&m, head, c->lens, c->B, c->seed + 1);
    rm_free(&m);
}

static void test_rm_case(void **state)
{
    const rm_test *t = (const rm_test *)*state;
    if (!gpu_available())
        skip();
    for (int i = 0; i < t->n; i++)
        run_rm_case(&t->c[i], SPLADE_LMHEAD_FUSED);
    if (t->naive_ffn_slices) {
        printf("  naive head kind, FFN in slices of 128 tokens:\n");
        setenv("SPLADE_GPU_FFN_CHUNK", "128", 1);
        run_rm_case(&t->c[0], SPLADE_LMHEAD_NAIVE);
        unsetenv("SPLADE_GPU_FFN_CHUNK");
    }
}

/* Writes the RM_NTESTS cmocka entries into out[]. */
static void gpu_encoder_case_tests(struct CMUnitTest *out)
{
    for (int i = 0; i < RM_NTESTS; i++)
        out[i] = (struct CMUnitTest){rm_tests[i].name, test_rm_case, NULL, NULL, (void *)&rm_tests[i]};
}

#endif
