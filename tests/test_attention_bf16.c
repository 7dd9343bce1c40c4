/* src/encoder/attention_bf16.c (the reduced-precision forwards' attention: bf16 products, fp32
 * softmax and sums) against a double-precision reference of softmax(q·kᵀ·scale)·v, on random
 * heads of many lengths: 1, lengths that are not multiples of the 32-row padding (so padding keys
 * must get no weight and padding queries never reach ctx), exact multiples, 512; head widths 64
 * and 32; a head inside a wider row (stride > width, a head at a column offset) whose neighbours'
 * columns must stay untouched. The fp32 kernel (attention_cpu.c) is checked against the same
 * reference, to show the reference itself is right and to bound how far bf16 may drift from fp32.
 * Skips visibly where the CPU (or the build) has no native bf16. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encoder/attention_bf16.h"
#include "encoder/attention_cpu.h"
#include "encoder/gemm_dnnl.h"
#include "splade.h"

static uint32_t rng = 2463534242u;

/* Roughly N(0, 1): the sum of 4 uniforms, scaled. */
static float grand(void)
{
    float s = 0.0f;
    for (int i = 0; i < 4; i++) {
        rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
        s += (float)((rng >> 8) / 16777216.0 - 0.5);
    }
    return s * 1.7320508f;
}

/* ref [L, dh] = softmax(q kᵀ scale) v in double; rows at stride ld. */
static void reference(const float *q, const float *k, const float *v, int32_t L, int32_t dh, int32_t ld, float scale,
                      double *ref)
{
    double *p = malloc((size_t)L * sizeof *p);
    for (int32_t i = 0; i < L; i++) {
        double mx = -INFINITY, sum = 0.0;
        for (int32_t j = 0; j < L; j++) {
            double s = 0.0;
            for (int32_t d = 0; d < dh; d++)
                s += (double)q[(size_t)i * ld + d] * k[(size_t)j * ld + d];
            p[j] = s * scale;
            mx = p[j] > mx ? p[j] : mx;
        }
        for (int32_t j = 0; j < L; j++)
            sum += p[j] = exp(p[j] - mx);
        for (int32_t d = 0; d < dh; d++) {
            double acc = 0.0;
            for (int32_t j = 0; j < L; j++)
                acc += p[j] / sum * v[(size_t)j * ld + d];
            ref[(size_t)i * dh + d] = acc;
        }
    }
    free(p);
}

static float bf16_value(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Largest |out - ref| over the head's columns; asserts the other columns kept the sentinel. */
static double head_error(const float *ctx, int32_t L, int32_t dh, int32_t ld, int32_t c0, const double *ref)
{
    double worst = 0.0;
    for (int32_t i = 0; i < L; i++)
        for (int32_t c = 0; c < ld; c++) {
            float x = ctx[(size_t)i * ld + c];
            if (c < c0 || c >= c0 + dh) {
                assert_true(x == -7.0f);
                continue;
            }
            double d = fabs(x - ref[(size_t)i * dh + c - c0]);
            worst = d > worst ? d : worst;
        }
    return worst;
}

/* The bf16-blocks entry (q, k, v rounded into zero-padded [Lp][dh] blocks, as the bf16 forward's Q/K/V
 * GEMMs write them) gives ctx and ctxb byte for byte as the fp32-rows entry did (cbf, cb); with ctx
 * NULL only ctxb is written. */
static void check_blocks(const float *q, const float *k, const float *v, const float *cbf, const uint16_t *cb,
                         int32_t L, int32_t dh, int32_t ld, float scale, float *scratch)
{
    const int32_t Lp = splade_attention_bf16_padded(L);
    assert_true(Lp >= L && Lp % 32 == 0);
    uint16_t *blk[3];
    const float *src[3] = {q, k, v};
    for (int i = 0; i < 3; i++) {
        blk[i] = calloc((size_t)Lp * dh, sizeof(uint16_t));
        for (int32_t r = 0; r < L; r++)
            splade_to_bf16(src[i] + (size_t)r * ld, blk[i] + (size_t)r * dh, (size_t)dh);
    }
    float *c2 = malloc((size_t)L * ld * sizeof *c2);
    uint16_t *b2 = malloc((size_t)L * ld * sizeof *b2), *b3 = malloc((size_t)L * ld * sizeof *b3);
    for (size_t i = 0; i < (size_t)L * ld; i++)
        c2[i] = -7.0f, b2[i] = b3[i] = 0xABCD;
    assert_int_equal(splade_attention_head_bf16_blocks(blk[0], blk[1], blk[2], c2, b2, L, dh, ld, scale, scratch),
                     SPLADE_OK);
    assert_int_equal(splade_attention_head_bf16_blocks(blk[0], blk[1], blk[2], NULL, b3, L, dh, ld, scale, scratch),
                     SPLADE_OK);
    for (int32_t r = 0; r < L; r++) {
        const size_t at = (size_t)r * ld;
        assert_memory_equal(c2 + at, cbf + at, (size_t)dh * sizeof *c2);
        assert_memory_equal(b2 + at, cb + at, (size_t)dh * sizeof *b2);
        assert_memory_equal(b3 + at, cb + at, (size_t)dh * sizeof *b3);
    }
    free(blk[0]), free(blk[1]), free(blk[2]), free(c2), free(b2), free(b3);
}

/* One head of L tokens, dh wide, at column c0 of rows ld wide; sharp says how peaked the softmax is. */
static void check_head(int32_t L, int32_t dh, int32_t ld, int32_t c0, float sharp)
{
    const size_t n = (size_t)L * ld;
    float *q = malloc(n * sizeof *q), *k = malloc(n * sizeof *k), *v = malloc(n * sizeof *v);
    float *c32 = malloc(n * sizeof *c32), *cbf = malloc(n * sizeof *cbf);
    uint16_t *cb = malloc(n * sizeof *cb);
    double *ref = malloc((size_t)L * dh * sizeof *ref);
    for (size_t i = 0; i < n; i++)
        q[i] = grand() * sharp, k[i] = grand(), v[i] = grand(), c32[i] = cbf[i] = -7.0f, cb[i] = 0xABCD;
    const float scale = 1.0f / sqrtf((float)dh);
    size_t sf = splade_attention_bf16_scratch_floats(L, dh), s32 = splade_attention_scratch_floats(L, dh);
    float *scratch = aligned_alloc(64, ((sf > s32 ? sf : s32) + 15) / 16 * 16 * sizeof(float));
    reference(q + c0, k + c0, v + c0, L, dh, ld, scale, ref);
    splade_attention_head(q + c0, k + c0, v + c0, c32 + c0, L, dh, ld, scale, scratch);
    assert_int_equal(splade_attention_head_bf16(q + c0, k + c0, v + c0, cbf + c0, cb + c0, L, dh, ld, scale, scratch),
                     SPLADE_OK);
    const double e32 = head_error(c32, L, dh, ld, c0, ref), ebf = head_error(cbf, L, dh, ld, c0, ref);
    /* bf16 keeps 8 bits: q, k, v and p each rounded by <= 2^-9 relative. With |v| ~ 1 and scores of
     * a few units the context moves by ~1e-2 at worst (more as the scores grow with sharp); a padding
     * key with weight, a lost row or a wrong column is off by ~0.1-1. fp32 is ~1e-6. */
    printf("  L=%3d dh=%d ld=%d sharp=%.1f: max |err| fp32 %.2e, bf16 %.2e\n", (int)L, (int)dh, (int)ld, sharp, e32,
           ebf);
    assert_true(e32 < 1e-4);
    assert_true(ebf < 1e-2 * (1.0 + sharp));
    assert_true(ebf > 0.0); /* bf16 did round: it ran, not the fp32 kernel */
    for (int32_t i = 0; i < L; i++)
        for (int32_t c = 0; c < ld; c++) {
            const size_t at = (size_t)i * ld + c;
            if (c < c0 || c >= c0 + dh)
                assert_true(cb[at] == 0xABCD);
            else /* ctxb is ctx rounded to bf16: within half a bf16 step */
                assert_true(fabsf(bf16_value(cb[at]) - cbf[at]) <= fabsf(cbf[at]) * (1.0f / 256.0f));
        }
    check_blocks(q + c0, k + c0, v + c0, cbf + c0, cb + c0, L, dh, ld, scale, scratch);
    free(q), free(k), free(v), free(c32), free(cbf), free(cb), free(ref), free(scratch);
}

static int have_bf16(void)
{
    if (splade_dnnl_bf16_check() == SPLADE_OK)
        return 1;
    printf("  skipped: no native bf16 here (%s)\n", splade_error_detail());
    return 0;
}

static void test_lengths(void **state)
{
    (void)state;
    if (!have_bf16())
        skip();
    static const int32_t lens[] = {1, 2, 31, 33, 65, 77, 96, 129, 200, 255, 256, 300, 511, 512};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++)
        check_head(lens[i], 64, 64, 0, 1.0f);
}

/* A head of a multi-head row (stride 768, columns 128..191), and a narrower head (32 of 96). */
static void test_strided_heads(void **state)
{
    (void)state;
    if (!have_bf16())
        skip();
    check_head(257, 64, 768, 128, 1.0f);
    check_head(70, 32, 96, 32, 1.0f);
    check_head(130, 32, 96, 64, 1.0f);
}

/* Peaked softmaxes (scores of tens: the max subtraction and the scale matter) and flat ones. */
static void test_sharp_and_flat(void **state)
{
    (void)state;
    if (!have_bf16())
        skip();
    check_head(160, 64, 64, 0, 4.0f);
    check_head(160, 64, 64, 0, 0.05f);
}

/* The forwards only take it for documents, where oneDNN has bf16. */
static void test_usable(void **state)
{
    (void)state;
    if (!have_bf16())
        skip();
    assert_false(splade_attention_bf16_usable(32));
    assert_false(splade_attention_bf16_usable(64));
    assert_true(splade_attention_bf16_usable(65));
    assert_true(splade_attention_bf16_usable(512));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lengths),
        cmocka_unit_test(test_strided_heads),
        cmocka_unit_test(test_sharp_and_flat),
        cmocka_unit_test(test_usable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
