/* Dense range maxima -> BMP bounds (see dense_ranges.h). The frequent terms of a query occur in
 * most ranges; summing their tables 16 ranges per step replaces one decoded id, one scattered add
 * and one bit set per range, which was about a third of a BMP query on the 1M collection. */
#include "query/dense_ranges.h"

#include "index/svb.h"

static void add_scalar(const uint8_t *max, uint32_t from, uint32_t n, uint32_t qw, uint32_t *ub, uint64_t *present)
{
    for (uint32_t r = from; r < n; r++)
        if (max[r]) {
            ub[r] += qw * max[r];
            present[r >> 6] |= 1ull << (r & 63);
        }
}

#if defined(__x86_64__)
#include <immintrin.h>

/* 255 × 255 fits 16 bits: multiply in 16-bit lanes, widen to 32 for the sums. */
__attribute__((target("avx2"))) static uint32_t add_avx2(const uint8_t *max, uint32_t n, uint32_t qw, uint32_t *ub,
                                                        uint64_t *present)
{
    const __m256i w = _mm256_set1_epi16((short)qw);
    uint32_t r = 0;
    for (; r + 16 <= n; r += 16) {
        if (!(r & 63))
            __builtin_prefetch(max + r + 256); /* ahead of the hardware prefetcher on short tables */
        __m128i m = _mm_loadu_si128((const __m128i *)(max + r));
        __m256i p = _mm256_mullo_epi16(_mm256_cvtepu8_epi16(m), w);
        __m256i *u = (__m256i *)(ub + r);
        _mm256_storeu_si256(u, _mm256_add_epi32(_mm256_loadu_si256(u), _mm256_cvtepu16_epi32(_mm256_castsi256_si128(p))));
        _mm256_storeu_si256(u + 1, _mm256_add_epi32(_mm256_loadu_si256(u + 1),
                                                    _mm256_cvtepu16_epi32(_mm256_extracti128_si256(p, 1))));
        uint32_t zero = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(m, _mm_setzero_si128()));
        present[r >> 6] |= (uint64_t)(~zero & 0xFFFFu) << (r & 63); /* r is a multiple of 16 */
    }
    return r;
}
#endif

void splade_dense_ranges_add(const uint8_t *max, uint32_t n, uint32_t qw, uint32_t *ub, uint64_t *present)
{
    uint32_t r = 0;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2"))
        r = add_avx2(max, n, qw, ub, present);
#endif
    add_scalar(max, r, n, qw, ub, present);
}

void splade_ranges_add(const splade_term_ranges *tr, uint32_t n_ranges, uint32_t qw, uint32_t *ids, uint32_t *ub,
                       uint64_t *present)
{
    if (tr->dense) { /* n_ranges entries, checked at open */
        splade_dense_ranges_add(tr->data, n_ranges, qw, ub, present);
        return;
    }
    splade_svb_delta_decode(tr->data + tr->n, tr->n, 0, ids);
    for (uint32_t j = 0; j < tr->n; j++) {
        uint32_t r = ids[j];
        if (r < n_ranges) { /* a damaged list must not write outside the arrays */
            ub[r] += qw * tr->data[j];
            present[r >> 6] |= 1ull << (r & 63);
        }
    }
}
