/* The fp32 GPU LM head (splade_lmhead_gpu_fp32, src/lmhead_fused/lmhead_fp32.cu) against the CPU
 * head (splade_lmhead_cpu) on random shapes: V = 30522 and odd vocabulary sizes, sequence lengths
 * that are not multiples of 16 or of the kernel's 64-position step, B = 1, empty sequences,
 * packed rows with huge garbage rows between sequences (which must never count), D a multiple of
 * 4 but not of 16, and more sequences than a grid dimension holds (B = 66,000).
 * Checks: output poisoned (NaN) first and every element written; rel-L2 <= 1e-5; the same set of
 * nonzero outputs (an entry may differ in being nonzero only when both sides are below 1e-5, the
 * fp32 rounding of a logit of a few units); argument
 * validation. Skips visibly without a GPU. SPLADE_LMHEAD_TEST_SMALL=1 keeps to small shapes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "splade.h"
#include "encoder/gpu_encoder.h"
#include "lmhead_fused/lmhead.h"

#include "gpu_test_util.h"



typedef struct {
    const char *name;
    int B, D, V;
    int gap;       /* garbage rows (+-1e30) before each sequence */
    int lens[8];   /* B <= 8: explicit lengths; else every sequence has lens[0] */
    int small;     /* part of the SMALL (sanitizer) set */
} tcase;

static const tcase cases[] = {
    {"B1 S5 D128 V1000", 1, 128, 1000, 0, {5}, 1},
    {"B3 D768 V1000 lens 37,2,20", 3, 768, 1000, 0, {37, 2, 20}, 1},
    {"B4 D128 V30522 lens 70,1,63,65", 4, 128, 30522, 0, {70, 1, 63, 65}, 1},
    {"B2 D128 V30522 lens 130,17 (3 position steps)", 2, 128, 30522, 0, {130, 17}, 0},
    {"B1 D768 V30522 S300", 1, 768, 30522, 0, {300}, 0},
    {"packed B5 D64 V1000 lens 17,0,2,40,9 garbage 3", 5, 64, 1000, 3, {17, 0, 2, 40, 9}, 1},
    {"B2 D36 V777 lens 5,3", 2, 36, 777, 1, {5, 3}, 1},
    {"B8 D256 V30522 lens 256,255,129,128,127,64,33,16", 8, 256, 30522, 0, {256, 255, 129, 128, 127, 64, 33, 16}, 0},
    {"B66000 D4 V100 S1 (grid y loop)", 66000, 4, 100, 0, {1}, 1},
};

static uint64_t rng = 88172645463325252ull;
__attribute__((unused)) static float urand(void) /* [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) * (2.0 / 16777216.0) - 1.0);
}

static void run_case(const tcase *tc)
{
#ifdef SPLADE_HAVE_CUDA
    const int small_only = getenv("SPLADE_LMHEAD_TEST_SMALL") && atoi(getenv("SPLADE_LMHEAD_TEST_SMALL"));
    if (small_only && !tc->small) {
        printf("    [lmhead_fp32] %s: not in the small set (SPLADE_LMHEAD_TEST_SMALL)\n", tc->name);
        return;
    }
    const int B = tc->B, D = tc->D, V = tc->V;
    int32_t *start = malloc(sizeof(int32_t) * B), *len = malloc(sizeof(int32_t) * B);
    assert_non_null(start);
    assert_non_null(len);
    size_t rows = 0;
    for (int b = 0; b < B; b++) {
        len[b] = B <= 8 ? tc->lens[b] : tc->lens[0];
        rows += (size_t)tc->gap;
        start[b] = (int32_t)rows;
        rows += (size_t)len[b];
    }
    rows += (size_t)tc->gap;
    float *H = malloc(sizeof(float) * (rows ? rows : 1) * D), *W = malloc(sizeof(float) * (size_t)V * D),
          *bias = malloc(sizeof(float) * V), *ref = malloc(sizeof(float) * (size_t)B * V),
          *out = malloc(sizeof(float) * (size_t)B * V);
    assert_true(H && W && bias && ref && out);
    for (size_t i = 0; i < rows * D; i++)
        H[i] = urand() > 0 ? 1e30f : -1e30f; /* garbage: overwritten where a sequence lives */
    for (int b = 0; b < B; b++)
        for (size_t i = 0; i < (size_t)len[b] * D; i++)
            H[(size_t)start[b] * D + i] = urand();
    const float wscale = 3.5f / sqrtf((float)D);  /* logits spread over a few units */
    for (size_t i = 0; i < (size_t)V * D; i++)
        W[i] = wscale * urand();
    for (int v = 0; v < V; v++)
        bias[v] = 0.5f * urand() - 0.3f;
    assert_int_equal(splade_lmhead_cpu(H, start, len, B, D, W, bias, V, ref, 0), SPLADE_OK);

    void *dH, *dW;
    float *dbias, *dout;
    int32_t *dstart, *dlen;
    CK(cudaMalloc(&dH, sizeof(float) * (rows ? rows : 1) * D));
    CK(cudaMalloc(&dW, sizeof(float) * (size_t)V * D));
    CK(cudaMalloc((void **)&dbias, sizeof(float) * V));
    CK(cudaMalloc((void **)&dout, sizeof(float) * (size_t)B * V));
    CK(cudaMalloc((void **)&dstart, sizeof(int32_t) * B));
    CK(cudaMalloc((void **)&dlen, sizeof(int32_t) * B));
    CK(cudaMemcpy(dH, H, sizeof(float) * rows * D, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dW, W, sizeof(float) * (size_t)V * D, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dbias, bias, sizeof(float) * V, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dstart, start, sizeof(int32_t) * B, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dlen, len, sizeof(int32_t) * B, cudaMemcpyHostToDevice));
    CK(cudaMemset(dout, 0xFF, sizeof(float) * (size_t)B * V)); /* NaN: every element must be written */
    int32_t max_len = 0;
    for (int b = 0; b < B; b++)
        max_len = len[b] > max_len ? len[b] : max_len;
    splade_lmhead_args a = {.H = dH, .seq_start = dstart, .seq_len = dlen, .B = B, .max_len = max_len, .D = D,
                            .V = V, .W = dW, .bias = dbias, .out = dout};
    int rc = splade_lmhead_gpu_fp32(&a, NULL);
    if (rc != SPLADE_OK)
        fail_msg("%s: %s: %s", tc->name, splade_strerror(rc), splade_error_detail());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(out, dout, sizeof(float) * (size_t)B * V, cudaMemcpyDeviceToHost));

    double num = 0, den = 0;
    size_t bad = 0, nz_diff = 0, nz_diff_strict = 0, nz = 0;
    for (size_t i = 0; i < (size_t)B * V; i++) {
        if (!isfinite(out[i]))
            bad++;
        num += ((double)out[i] - ref[i]) * ((double)out[i] - ref[i]);
        den += (double)ref[i] * ref[i];
        nz += ref[i] > 0;
        if ((out[i] > 0) != (ref[i] > 0)) {
            nz_diff_strict++;
            if (fmaxf(out[i], ref[i]) > 1e-5f) /* beyond fp32 rounding of a logit near 0 */
                nz_diff++;
        }
    }
    const double rel = sqrt(num / (den > 0 ? den : 1));
    printf("    [lmhead_fp32] %s: rel-L2 %.2e, %zu nonzero, %zu differ in being nonzero (%zu below 1e-5)\n", tc->name,
           rel, nz, nz_diff_strict, nz_diff_strict - nz_diff);
    assert_int_equal(bad, 0);
    assert_true(rel <= 1e-5);
    assert_int_equal(nz_diff, 0);
    assert_true(nz > 0);
    for (int b = 0; b < B; b++) /* an empty sequence gives zeros */
        if (len[b] == 0)
            for (int v = 0; v < V; v++)
                assert_true(out[(size_t)b * V + v] == 0.0f);
    cudaFree(dH), cudaFree(dW), cudaFree(dbias), cudaFree(dout), cudaFree(dstart), cudaFree(dlen);
    free(H), free(W), free(bias), free(ref), free(out), free(start), free(len);
#else
    (void)tc;
#endif
}

static void test_against_cpu(void **state)
{
    (void)state;
    if (!gpu_available())
        skip();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        run_case(&cases[i]);
}

static void test_invalid_args(void **state)
{
    (void)state;
    if (!gpu_available())
        skip();
#ifdef SPLADE_HAVE_CUDA
    float *d = NULL;
    int32_t *di = NULL;
    CK(cudaMalloc((void **)&d, 4096));
    CK(cudaMalloc((void **)&di, 64));
    splade_lmhead_args a = {.H = d, .seq_start = di, .seq_len = di, .B = 1, .max_len = 1, .D = 8, .V = 4, .W = d,
                            .bias = d, .out = d};
    assert_int_equal(splade_lmhead_gpu_fp32(NULL, NULL), SPLADE_ERR_INVALID_ARG);
    a.D = 6; /* not a multiple of 4 */
    assert_int_equal(splade_lmhead_gpu_fp32(&a, NULL), SPLADE_ERR_UNSUPPORTED);
    a.D = 8;
    a.H = (const char *)d + 4; /* not 16-byte aligned */
    assert_int_equal(splade_lmhead_gpu_fp32(&a, NULL), SPLADE_ERR_UNSUPPORTED);
    a.H = d;
    a.bias = NULL;
    assert_int_equal(splade_lmhead_gpu_fp32(&a, NULL), SPLADE_ERR_INVALID_ARG);
    a.bias = d;
    a.V = 0;
    assert_int_equal(splade_lmhead_gpu_fp32(&a, NULL), SPLADE_ERR_INVALID_ARG);
    a.V = 4;
    a.B = 0; /* nothing to do */
    assert_int_equal(splade_lmhead_gpu_fp32(&a, NULL), SPLADE_OK);
    CK(cudaDeviceSynchronize());
    cudaFree(d);
    cudaFree(di);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_cpu),
        cmocka_unit_test(test_invalid_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
