/* Exhaustive term-at-a-time scoring: every posting of every query term is added into a
 * per-document accumulator, then one pass keeps the top k. The baseline the pruned methods are
 * measured against (bench/bench_index.c) and a second exact method for the tests.
 *
 * In windows of documents (splade_taat_cursors): every term adds its postings of one window of
 * TAAT_WINDOW documents into an accumulator of that size, which is then scanned and zeroed, before
 * the next window. Term by term over the whole collection, each term swept the whole accumulator
 * (4 bytes a document: 4 MB at 1 M documents) through the cache once more, so a long query (100
 * terms) streamed ~400 MB from L3 or memory. A window of 128 k documents (512 KB) stays in L2 while
 * every term passes; a block that straddles two windows is decoded for each (~1% more blocks). On 1 M
 * documents (the realistic 333 k three times, the VM) TAAT went from 7.7-7.9 to 6.0 ms at the median,
 * 333 k unchanged, 64 k and 256 k windows measured beside it
 * (bench/results/query-taat-window-2026-11-26.md). The sums, and so the hits, are the same as term by
 * term. */

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <string.h>

#include "index/format.h"
#include "index/postings.h"
#include "query/search_internal.h"

/* The postings [from, to) of a decoded block whose docs lie in [base, base + span), into acc[doc - base];
 * the others (a block straddling the window's edges) are masked off: doc - base wraps past span below
 * base, and a damaged list's doc id can never write outside the window. */
static void window_scalar(uint32_t *acc, const uint32_t *docs, const uint8_t *imps, uint32_t from, uint32_t to,
                          uint32_t base, uint32_t span, uint32_t qw)
{
    for (uint32_t j = from; j < to; j++)
        if (docs[j] - base < span) /* unsigned: below base wraps past span */
            acc[docs[j] - base] += qw * imps[j];
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static void window_avx512(uint32_t *acc, const uint32_t *docs, const uint8_t *imps,
                                                             uint32_t from, uint32_t to, uint32_t base, uint32_t span,
                                                             uint32_t qw)
{
    const __m512i b = _mm512_set1_epi32((int)base), lim = _mm512_set1_epi32((int)span), w = _mm512_set1_epi32((int)qw);
    uint32_t j = from;
    for (; j + 16 <= to; j += 16) {
        __m512i idx = _mm512_sub_epi32(_mm512_loadu_si512(docs + j), b);
        __mmask16 ok = _mm512_cmplt_epu32_mask(idx, lim);
        __m512i imp = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(imps + j)));
        __m512i a = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), ok, idx, (const void *)acc, 4);
        a = _mm512_add_epi32(a, _mm512_mullo_epi32(imp, w));
        _mm512_mask_i32scatter_epi32((void *)acc, ok, idx, a, 4);
    }
    window_scalar(acc, docs, imps, j, to, base, span, qw);
}
#endif

typedef void window_fn(uint32_t *, const uint32_t *, const uint8_t *, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t);

static window_fn *pick_window(void)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f"))
        return window_avx512;
#endif
    return window_scalar;
}

void splade_taat_add_lists(splade_searcher *s, const cursor *c, int n, uint32_t n_docs)
{
    window_fn *add = pick_window(); /* one window: the whole accumulator array */
    uint32_t docs[SPLADE_BLOCK_SIZE];
    for (int i = 0; i < n; i++) {
        for (uint32_t b = 0; b < c[i].n_blocks; b++) {
            const uint8_t *imps;
            uint32_t count =
                splade_list_block(c[i].blocks, c[i].n_blocks, c[i].n_postings, c[i].postings, b, docs, &imps);
            add(s->acc, docs, imps, 0, count, 0, n_docs, c[i].qw);
        }
        s->stats.postings_scored += c[i].n_postings;
        s->stats.blocks_decoded += c[i].n_blocks;
    }
}

void splade_taat(splade_searcher *s, int n, topk *t)
{
    splade_taat_cursors(s, s->cursors, n, t);
}

#define TAAT_WINDOW (1u << 17)

/* Offers the window's documents [base, base + span) with a positive sum and zeroes their sums. */
static void offer_window(splade_searcher *s, topk *t, uint32_t base, uint32_t span)
{
    uint32_t theta = topk_threshold(t); /* below it nothing enters; a tie is decided by seg_offer */
    for (uint32_t d = 0; d < span; d++) {
        uint32_t a = s->acc[d];
        if (!a)
            continue;
        s->acc[d] = 0;
        if (a >= theta) {
            seg_offer(s, t, base + d, a);
            theta = topk_threshold(t);
        }
    }
}

void splade_taat_cursors(splade_searcher *s, const cursor *c, int n, topk *t)
{
    const uint32_t n_docs = s->seg->n_docs;
    window_fn *add = pick_window();
    uint32_t docs[SPLADE_BLOCK_SIZE];
    uint32_t next[n > 0 ? n : 1];  /* per term, its first block not wholly added yet */
    uint32_t first[n > 0 ? n : 1]; /* per term, its first doc once block 0 was decoded (else 0) */
    memset(next, 0, sizeof next);
    memset(first, 0, sizeof first);
    for (uint32_t base = 0; base < n_docs; base += TAAT_WINDOW) {
        const uint32_t span = n_docs - base < TAAT_WINDOW ? n_docs - base : TAAT_WINDOW, end = base + span;
        for (int i = 0; i < n; i++) {
            const cursor *ci = &c[i];
            uint32_t b = next[i];
            /* block b holds docs after blocks[b - 1].last_doc: none in this window once that reaches end - 1 */
            while (b < ci->n_blocks && (b ? ci->blocks[b - 1].last_doc + 1 : first[i]) < end) {
                const uint8_t *imps;
                uint32_t count = splade_list_block(ci->blocks, ci->n_blocks, ci->n_postings, ci->postings, b, docs, &imps);
                if (b == 0)
                    first[i] = docs[0];
                add(s->acc, docs, imps, 0, count, base, span, ci->qw);
                s->stats.blocks_decoded++;
                if (ci->blocks[b].last_doc >= end)
                    break; /* it goes on in the next window: decoded again there */
                b++;
            }
            next[i] = b;
        }
        offer_window(s, t, base, span);
    }
    for (int i = 0; i < n; i++)
        s->stats.postings_scored += c[i].n_postings;
}
