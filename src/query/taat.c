/* Exhaustive term-at-a-time scoring: every posting of every query term is added into a
 * per-document accumulator, then one pass keeps the top k. The baseline the pruned methods are
 * measured against (bench/bench_index.c) and a second exact method for the tests. */

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "index/format.h"
#include "index/postings.h"
#include "query/search_internal.h"

static void scatter_scalar(uint32_t *acc, const uint32_t *docs, const uint8_t *imps, uint32_t from, uint32_t to,
                           uint32_t n_docs, uint32_t qw)
{
    for (uint32_t j = from; j < to; j++)
        if (docs[j] < n_docs) /* a damaged list must not write outside the accumulators */
            acc[docs[j]] += qw * imps[j];
}

#if defined(__x86_64__)
/* 16 postings per step (a block's doc ids are distinct: no conflict); lanes past n_docs masked. */
__attribute__((target("avx512f"))) static void scatter_avx512(uint32_t *acc, const uint32_t *docs,
                                                              const uint8_t *imps, uint32_t from, uint32_t to,
                                                              uint32_t n_docs, uint32_t qw)
{
    const __m512i lim = _mm512_set1_epi32((int)n_docs), w = _mm512_set1_epi32((int)qw);
    uint32_t j = from;
    for (; j + 16 <= to; j += 16) {
        __m512i idx = _mm512_loadu_si512(docs + j);
        __mmask16 ok = _mm512_cmplt_epu32_mask(idx, lim);
        __m512i imp = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(imps + j)));
        __m512i a = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), ok, idx, (const void *)acc, 4);
        a = _mm512_add_epi32(a, _mm512_mullo_epi32(imp, w));
        _mm512_mask_i32scatter_epi32((void *)acc, ok, idx, a, 4);
    }
    scatter_scalar(acc, docs, imps, j, to, n_docs, qw);
}
#endif

typedef void scatter_fn(uint32_t *, const uint32_t *, const uint8_t *, uint32_t, uint32_t, uint32_t, uint32_t);

static scatter_fn *pick_scatter(void)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f"))
        return scatter_avx512;
#endif
    return scatter_scalar;
}

void splade_taat_add_lists(splade_searcher *s, const cursor *c, int n, uint32_t n_docs)
{
    scatter_fn *scatter = pick_scatter();
    uint32_t docs[SPLADE_BLOCK_SIZE];
    for (int i = 0; i < n; i++) {
        for (uint32_t b = 0; b < c[i].n_blocks; b++) {
            const uint8_t *imps;
            uint32_t count =
                splade_list_block(c[i].blocks, c[i].n_blocks, c[i].n_postings, c[i].postings, b, docs, &imps);
            scatter(s->acc, docs, imps, 0, count, n_docs, c[i].qw);
        }
        s->stats.postings_scored += c[i].n_postings;
        s->stats.blocks_decoded += c[i].n_blocks;
    }
}

void splade_taat(splade_searcher *s, int n, topk *t)
{
    splade_taat_cursors(s, s->cursors, n, t);
}

void splade_taat_cursors(splade_searcher *s, const cursor *c, int n, topk *t)
{
    uint32_t n_docs = s->seg->n_docs;
    splade_taat_add_lists(s, c, n, n_docs);
    uint32_t theta = topk_threshold(t); /* below it nothing enters; a tie is decided by seg_offer */
    for (uint32_t d = 0; d < n_docs; d++) {
        uint32_t a = s->acc[d];
        if (!a)
            continue;
        s->acc[d] = 0;
        if (a >= theta) {
            seg_offer(s, t, d, a);
            theta = topk_threshold(t);
        }
    }
}
