/* src/encoder/gemm_cpu.c against a double-precision reference: random shapes (M = 1, sizes that
 * are not multiples of 8 or 16, more than one 32-row block), column ranges, the accumulate flag,
 * on the AVX-512 path (when this CPU has it) and the generic OpenBLAS path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encoder/gemm_cpu.h"
#include "encoder/gemm_packed_cpu.h"
#include "encoder/rowops_cpu.h"

static uint32_t rng = 2463534242u;

static float frand(void)
{
    rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
    return (float)((rng >> 8) / 16777216.0 - 0.5);
}

static float *rand_buf(size_t n)
{
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = frand();
    return p;
}

/* Checks C against the reference in double. The bound is the worst case of fp32 accumulation,
 * (K + 2) eps sum|a w|, plus one rounding of the result: any summation order passes, a wrong
 * element (an index slip, a missed tail) is off by ~|a||w| and fails. */
static void check(splade_gemm_path path, int32_t M, int32_t K, int32_t N, int32_t n0, int32_t n1, int flags)
{
    const int32_t ldc = N + 3; /* a row stride that is not N */
    float *A = rand_buf((size_t)M * K), *W = rand_buf((size_t)N * K), *bias = rand_buf((size_t)N);
    float *C = rand_buf((size_t)M * ldc), *C0 = malloc((size_t)M * ldc * sizeof *C0);
    float *scratch = aligned_alloc(64, splade_gemm_scratch_floats(K) * sizeof(float));
    memcpy(C0, C, (size_t)M * ldc * sizeof *C);
    splade_gemm_nt(path, A, M, K, W, bias, n0, n1, C, ldc, flags, scratch);
    const double eps = 5.96e-8;
    for (int32_t m = 0; m < M; m++)
        for (int32_t n = 0; n < ldc; n++) {
            size_t at = (size_t)m * ldc + n;
            if (n < n0 || n >= n1) { /* outside the range (and the stride padding): untouched */
                assert_true(C[at] == C0[at]);
                continue;
            }
            double ref = bias[n] + ((flags & SPLADE_GEMM_ACCUM) ? C0[at] : 0.0), mag = fabs(bias[n]) + fabs(C0[at]);
            for (int32_t k = 0; k < K; k++) {
                double p = (double)A[(size_t)m * K + k] * W[(size_t)n * K + k];
                ref += p;
                mag += fabs(p);
            }
            double tol = (K + 2) * eps * mag + eps * fabs(ref);
            if (fabs(C[at] - ref) > tol) {
                fprintf(stderr, "path %d M=%d K=%d N=%d [%d,%d) flags %d: C[%d][%d] = %.9g, reference %.9g\n",
                        (int)path, (int)M, (int)K, (int)N, (int)n0, (int)n1, flags, (int)m, (int)n, C[at], ref);
                fail();
            }
        }
    free(A), free(W), free(bias), free(C), free(C0), free(scratch);
}

static const int32_t shapes[][3] = {
    {1, 1, 1},     {1, 16, 8},    {1, 100, 37},   {3, 7, 9},     {5, 768, 24},   {16, 64, 16},
    {17, 33, 45},  {31, 129, 63}, {32, 128, 256}, {32, 768, 40}, {33, 70, 17},   {64, 96, 72},
    {65, 200, 50}, {100, 31, 23}, {7, 3072, 16},  {32, 1, 8},    {40, 17, 1003},
};

static void run_all(splade_gemm_path path)
{
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        int32_t M = shapes[i][0], K = shapes[i][1], N = shapes[i][2];
        check(path, M, K, N, 0, N, 0);
        check(path, M, K, N, 0, N, SPLADE_GEMM_ACCUM);
        /* a thread's share: a middle range, boundaries not multiples of 8 */
        int32_t n0 = N / 3, n1 = N - N / 5;
        check(path, M, K, N, n0, n1, 0);
        check(path, M, K, N, n0, n1, SPLADE_GEMM_ACCUM);
    }
}

static void test_avx512(void **state)
{
    (void)state;
    if (!splade_gemm_avx512_usable()) {
        printf("  AVX-512 GEMM not available on this CPU\n");
        skip();
    }
    run_all(SPLADE_GEMM_AVX512);
}

static void test_avx2(void **state)
{
    (void)state;
    if (!splade_gemm_avx2_usable()) {
        printf("  AVX2 + FMA not available on this CPU\n");
        skip();
    }
    run_all(SPLADE_GEMM_AVX2);
}

/* The AVX2 kernels (in place and packed) give the AVX-512 in-place kernel's bits, element for
 * element: the same FMA chain per output, so a CPU without AVX-512 encodes as one with it, and
 * before its packed copy exists as after. Random shapes with tails, both flags. */
static void test_avx2_same_bits(void **state)
{
    (void)state;
    if (!splade_gemm_avx2_usable() || !splade_gemm_avx512_usable()) {
        printf("  needs AVX2 and AVX-512 to compare\n");
        skip();
    }
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const int32_t M = shapes[i][0], K = shapes[i][1], N = shapes[i][2];
        if (M > SPLADE_GEMM_SMALL_M)
            continue;
        float *A = rand_buf((size_t)M * K), *W = rand_buf((size_t)N * K), *bias = rand_buf((size_t)N);
        float *C0 = rand_buf((size_t)M * N), *ref = malloc((size_t)M * N * 4), *got = malloc((size_t)M * N * 4);
        float *scratch = aligned_alloc(64, splade_gemm_scratch_floats(K) * sizeof(float));
        splade_gemm_packed P;
        assert_int_equal(splade_gemm_packed_alloc(N, K, &P), 0);
        splade_gemm_pack_cols(W, &P, 0, N);
        for (int flags = 0; flags <= SPLADE_GEMM_ACCUM; flags++)
            for (int form = 0; form < 2; form++) {
                memcpy(ref, C0, (size_t)M * N * 4);
                memcpy(got, C0, (size_t)M * N * 4);
                splade_gemm_nt(SPLADE_GEMM_AVX512, A, M, K, W, bias, 0, N, ref, N, flags, scratch);
                if (form == 0)
                    splade_gemm_nt(SPLADE_GEMM_AVX2, A, M, K, W, bias, 0, N, got, N, flags, scratch);
                else
                    splade_gemm_packed_nt_avx2(A, M, K, &P, bias, 0, N, got, N, flags, scratch);
                if (memcmp(ref, got, (size_t)M * N * 4))
                    fail_msg("M=%d K=%d N=%d flags %d: the AVX2 %s kernel gives other bits", (int)M, (int)K, (int)N,
                             flags, form ? "packed" : "in-place");
            }
        splade_gemm_packed_free(&P);
        free(A), free(W), free(bias), free(C0), free(ref), free(got), free(scratch);
    }
}

static void test_generic(void **state)
{
    (void)state;
    run_all(SPLADE_GEMM_BLAS);
}

static void test_auto_and_empty(void **state)
{
    (void)state;
    run_all(SPLADE_GEMM_AUTO);
    /* M = 0 and an empty column range write nothing */
    float x = 1.0f, c = 42.0f;
    splade_gemm_nt(SPLADE_GEMM_AUTO, &x, 0, 1, &x, &x, 0, 1, &c, 1, 0, NULL);
    splade_gemm_nt(SPLADE_GEMM_AUTO, &x, 1, 1, &x, &x, 1, 1, &c, 1, 0, NULL);
    assert_true(c == 42.0f);
    /* AUTO keeps OpenBLAS for many rows (where its packing pays off) */
    assert_int_equal(splade_gemm_auto_path(4096), SPLADE_GEMM_BLAS);
}

/* All members of a team of n, one after the other, into C [M, N]. */
static void share_all(int n, const float *A, int32_t M, int32_t K, const float *W, const float *bias, int32_t N,
                      float *C, int flags, float *scratch)
{
    for (int tid = 0; tid < n; tid++)
        splade_gemm_nt_share(A, M, K, W, bias, N, C, flags, scratch, tid, n);
}

/* The team split covers every element once (the plain call's result within rounding, GELU and
 * the residual applied once) and gives the same bits for 1 to 5 members: few rows, a few row
 * blocks (row x column units), many (whole-row units), widths with tails. */
static void test_share_same_bits(void **state)
{
    (void)state;
    static const int32_t ms[] = {1, 40, 64, 65, 300, 700}, ns[] = {1, 72, 200};
    const int32_t K = 33;
    float *scratch = aligned_alloc(64, splade_gemm_scratch_floats(K) * sizeof(float));
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++)
        for (size_t j = 0; j < sizeof ns / sizeof *ns; j++)
            for (int flags = 0; flags <= (SPLADE_GEMM_ACCUM | SPLADE_GEMM_GELU); flags++) {
                const int32_t M = ms[i], N = ns[j];
                const size_t mn = (size_t)M * N;
                float *A = rand_buf((size_t)M * K), *W = rand_buf((size_t)N * K), *bias = rand_buf((size_t)N);
                float *C0 = rand_buf(mn), *one = malloc(mn * sizeof *one), *more = malloc(mn * sizeof *more);
                float *ref = malloc(mn * sizeof *ref);
                memcpy(ref, C0, mn * sizeof *ref);
                splade_gemm_nt(SPLADE_GEMM_AUTO, A, M, K, W, bias, 0, N, ref, N, flags & SPLADE_GEMM_ACCUM, scratch);
                if (flags & SPLADE_GEMM_GELU)
                    splade_gelu(ref, (int32_t)mn);
                memcpy(one, C0, mn * sizeof *one);
                share_all(1, A, M, K, W, bias, N, one, flags, scratch);
                for (size_t e = 0; e < mn; e++)
                    if (fabsf(one[e] - ref[e]) > 1e-5f * (1.0f + fabsf(ref[e])))
                        fail_msg("M=%d N=%d flags %d: element %zu is %.9g, the plain call %.9g", (int)M, (int)N,
                                 flags, e, one[e], ref[e]);
                for (int n = 2; n <= 5; n++) {
                    memcpy(more, C0, mn * sizeof *more);
                    share_all(n, A, M, K, W, bias, N, more, flags, scratch);
                    if (memcmp(one, more, mn * sizeof *one))
                        fail_msg("M=%d N=%d flags %d: %d members give other bits than 1", (int)M, (int)N, flags, n);
                }
                free(A), free(W), free(bias), free(C0), free(one), free(more), free(ref);
            }
    free(scratch);
}

/* The packed copy (gemm_packed_cpu.h) gives the in-place kernel's bits for few rows: every tile
 * height (M 1..64: tiles of 1 to 6 rows), K that is not a multiple of its 64-row blocks, panels
 * with tails (N not a multiple of 64), the flags, 1 to 3 team members; many rows fall back to
 * the plain path. With the in-place kernel checked against double precision above, the same bits
 * mean the same accuracy; a mutated tile (a row or a k skipped) changes them. */
static void test_packed_same_bits(void **state)
{
    (void)state;
    if (!splade_gemm_packed_usable()) {
        skip(); /* the packed kernels need AVX-512 or AVX2, like the in-place ones */
        return;
    }
    static const int32_t ms[] = {1, 2, 5, 6, 7, 13, 25, 32, 33, 64, 65}, ks[] = {1, 65, 200}, ns[] = {1, 63, 64, 200};
    for (size_t a = 0; a < sizeof ks / sizeof *ks; a++) {
        const int32_t K = ks[a];
        float *scratch = aligned_alloc(64, splade_gemm_scratch_floats(K) * sizeof(float));
        for (size_t j = 0; j < sizeof ns / sizeof *ns; j++) {
            const int32_t N = ns[j];
            float *W = rand_buf((size_t)N * K), *bias = rand_buf((size_t)N);
            splade_gemm_packed P;
            assert_int_equal(splade_gemm_packed_alloc(N, K, &P), 0);
            splade_gemm_pack_cols(W, &P, 0, N > 64 ? 64 : N); /* in two calls, as a team packs */
            if (N > 64)
                splade_gemm_pack_cols(W, &P, 64, N);
            for (size_t i = 0; i < sizeof ms / sizeof *ms; i++)
                for (int flags = 0; flags <= (SPLADE_GEMM_ACCUM | SPLADE_GEMM_GELU); flags++) {
                    const int32_t M = ms[i];
                    const size_t mn = (size_t)M * N;
                    float *A = rand_buf((size_t)M * K), *C0 = rand_buf(mn);
                    float *ref = malloc(mn * sizeof *ref), *got = malloc(mn * sizeof *got);
                    memcpy(ref, C0, mn * sizeof *ref);
                    share_all(1, A, M, K, W, bias, N, ref, flags, scratch);
                    for (int n = 1; n <= 3; n++) {
                        memcpy(got, C0, mn * sizeof *got);
                        for (int tid = 0; tid < n; tid++)
                            splade_gemm_nt_share_packed(A, M, K, W, &P, bias, N, got, flags, scratch, tid, n);
                        for (size_t e = 0; e < mn; e++)
                            if (memcmp(&got[e], &ref[e], sizeof *got))
                                fail_msg("M=%d K=%d N=%d flags %d, %d members: element %zu is %.9g, in place %.9g",
                                         (int)M, (int)K, (int)N, flags, n, e, got[e], ref[e]);
                    }
                    free(A), free(C0), free(ref), free(got);
                }
            splade_gemm_packed_free(&P);
            free(W), free(bias);
        }
        free(scratch);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_avx512),
        cmocka_unit_test(test_avx2),
        cmocka_unit_test(test_avx2_same_bits),
        cmocka_unit_test(test_generic),
        cmocka_unit_test(test_auto_and_empty),
        cmocka_unit_test(test_share_same_bits),
        cmocka_unit_test(test_packed_same_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
