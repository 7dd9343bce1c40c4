/* Impact quantization and the default index location: small helpers both build and query use. */
#include "index/format.h"
#include "index/quantize.h"

#include <math.h>
#include <string.h>

uint8_t splade_quantize(float w, float max)
{
    if (!(w > 0) || !(max > 0))
        return 0;
    /* Computed in double so the result does not depend on FMA contraction or x87 excess precision. */
    double q = floor((double)w * 255.0 / (double)max + 0.5);
    if (q < 1)
        return 1; /* a positive weight never vanishes */
    return q > 255 ? 255 : (uint8_t)q;
}

#if defined(__x86_64__)
#include <immintrin.h>

/* The same double-precision steps as splade_quantize, four lanes at a time: IEEE multiply, divide,
 * add and floor round identically in vector and scalar form, so the impacts are bit-identical
 * (tests/test_index.c checks it). The inversion quantizes every posting: one division per weight
 * made this the largest single cost of a 1M-document build. */
__attribute__((target("avx2"))) static size_t quantize_avx2(const float *w, size_t n, float max, uint8_t *out)
{
    const __m256d scale = _mm256_set1_pd(255.0), m = _mm256_set1_pd((double)max), half = _mm256_set1_pd(0.5);
    const __m256d lo = _mm256_set1_pd(1.0), hi = _mm256_set1_pd(255.0), zero = _mm256_setzero_pd();
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d x = _mm256_cvtps_pd(_mm_loadu_ps(w + i));
        __m256d q = _mm256_floor_pd(_mm256_add_pd(_mm256_div_pd(_mm256_mul_pd(x, scale), m), half));
        q = _mm256_min_pd(_mm256_max_pd(q, lo), hi);
        q = _mm256_and_pd(q, _mm256_cmp_pd(x, zero, _CMP_GT_OQ)); /* w <= 0 or NaN: 0 */
        __m128i v = _mm256_cvttpd_epi32(q);
        v = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1));
        uint32_t packed = (uint32_t)_mm_cvtsi128_si32(v);
        memcpy(out + i, &packed, 4);
    }
    return i;
}
#endif

void splade_quantize_many(const float *w, size_t n, float max, uint8_t *out)
{
    size_t i = 0;
#if defined(__x86_64__)
    if (max > 0 && __builtin_cpu_supports("avx2"))
        i = quantize_avx2(w, n, max, out);
#endif
    for (; i < n; i++)
        out[i] = splade_quantize(w[i], max);
}
