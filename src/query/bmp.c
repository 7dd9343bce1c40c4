/* BMP: block-max pruning over doc-id ranges (Mallia, Suel, Tonellotto, SIGIR 2024), exact mode.
 * Every range of 2^SPLADE_RANGE_SHIFT consecutive documents gets a score bound, the sum over query
 * terms of query impact × the term's largest impact in that range (the RANGES section). The PRIME
 * ranges of largest bound are scored first, best first, each with random access into the posting
 * lists, until the next bound cannot beat the k-th score. With the threshold they set, the ranges
 * that can still win are then scored in ascending id order, so the posting cursors move forward and
 * reuse decoded blocks (each is still skipped if its bound fell below the k-th score meanwhile).
 * Ties stay exact: a range is dropped only if its bound is below the k-th
 * score (a document of a range whose bound equals it may still win on its sequence number), and a
 * document enters only if it ranks above the worst kept hit by (score desc, sequence asc).
 *
 * Segments (src/index/segment.h) share the queue: every segment's ranges get their bounds first, and
 * the ranges of all of them are compared together, so that the first PRIME ranges scored are the best
 * of the whole index and one k-th score prunes every segment, as in one file of the same documents.
 * (Searched one segment after the other, the first segment started from an empty heap and the
 * ranges of later ones were never compared with it: 4x the postings at 10 segments.) A range is
 * numbered in the queue by its segment's first range (bmp_part.first) plus its number there. */

#include <stdlib.h>
#include <string.h>

#include "index/format.h"
#include "query/dense_ranges.h"
#include "query/search_internal.h"

#define RANGE_DOCS (1u << SPLADE_RANGE_SHIFT)

#define LOOKAHEAD 32
#define AHEAD 2 /* tables prefetched whole this many terms ahead of the one being summed */

/* Asks for every line of a range table: a segment's tables are short (1.5 kB at 100k documents),
 * too short for the hardware prefetcher to ramp up, so that each began with misses in turn.
 * Measured over 10 segments of 100k (bench/results/segments-bmp-2026-11-25b.md): bounds 245k -> 174k
 * cycles per query (median), one file 139k -> 124k. */
static void prefetch_table(const splade_term_ranges *tr, uint32_t n_ranges)
{
    size_t bytes = tr->dense ? n_ranges : (size_t)tr->n * 2 + tr->n / 4; /* sparse: maxima, then coded ids */
    for (size_t o = 128; o < bytes; o += 64) /* the first two lines were asked for at lookup */
        __builtin_prefetch(tr->data + o);
}

/* Adds each query term's range maxima in segment p into its part of range_ub and its bitmaps.
 * The tables of a segment's terms lie far apart in its file, each a cache and TLB miss away: they
 * are looked up and prefetched LOOKAHEAD terms at a time, so that the misses overlap, and summed
 * afterwards. */
static void range_bounds(splade_searcher *s, const bmp_part *p)
{
    uint32_t n_ranges = p->n_ranges, *ub = s->range_ub + p->first;
    memset(ub, 0, (size_t)n_ranges * sizeof *ub);
    memset(p->bits, 0, (size_t)p->n * p->words * sizeof *p->bits);
    splade_term_ranges tr[LOOKAHEAD];
    for (int at = 0; at < p->n; at += LOOKAHEAD) {
        int n = p->n - at < LOOKAHEAD ? p->n - at : LOOKAHEAD;
        for (int i = 0; i < n; i++) {
            splade_index_ranges(p->seg->ix, p->terms[at + i], &tr[i]);
            __builtin_prefetch(tr[i].data);
            __builtin_prefetch(tr[i].data + 64);
            if (!tr[i].dense) /* the coded range ids follow the n maxima */
                __builtin_prefetch(tr[i].data + tr[i].n);
            if (i < AHEAD)
                prefetch_table(&tr[i], n_ranges);
        }
        for (int i = 0; i < n; i++) {
            if (i + AHEAD < n)
                prefetch_table(&tr[i + AHEAD], n_ranges);
            splade_ranges_add(&tr[i], n_ranges, p->cursors[at + i].qw, s->range_ids, ub,
                              p->bits + (size_t)(at + i) * p->words);
        }
    }
}

/* Min-heap of range keys (bound << 32 | ~range: larger bound first, then lower range number):
 * the root is the worst key kept. */
static void sift_min(uint64_t *h, uint32_t n, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && h[l] < h[m])
            m = l;
        if (r < n && h[r] < h[m])
            m = r;
        if (m == i)
            return;
        uint64_t x = h[i];
        h[i] = h[m];
        h[m] = x;
        i = m;
    }
}

/* Scores range r (its number in segment p) exactly into t. The cursors of the terms present are
 * placed first and their blocks prefetched, then decoded and summed: a segment's cursors are often
 * cold (first use, or far from the last range), and their misses then overlap. */
static void score_range(splade_searcher *s, const bmp_part *p, uint32_t r, topk *t)
{
    uint32_t acc[RANGE_DOCS] = {0}, first = r * RANGE_DOCS, end = first + RANGE_DOCS, n_docs = p->seg->n_docs;
    for (int i = 0; i < p->n; i++)
        if (p->bits[(size_t)i * p->words + (r >> 6)] >> (r & 63) & 1) { /* the term has postings in this range */
            cursor_locate(&p->cursors[i], first);
            cursor_prefetch(&p->cursors[i]);
        }
    for (int i = 0; i < p->n; i++) {
        if (!(p->bits[(size_t)i * p->words + (r >> 6)] >> (r & 63) & 1))
            continue;
        cursor *c = &p->cursors[i];
        cursor_seek_located(c, first);
        for (; c->doc < end; cursor_next(c)) {
            acc[c->doc - first] += cursor_score(c);
            s->stats.postings_scored++;
        }
    }
    s->seg = p->seg;
    for (uint32_t d = first; d < end && d < n_docs; d++)
        if (acc[d - first])
            seg_offer(s, t, d, acc[d - first]);
}

#define PRIME 16

static int can_win(const topk *t, uint32_t bound)
{
    return t->n < t->k || bound >= t->h[0].score;
}

static int by_key_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x < y) - (x > y);
}

static int by_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The (at most) PRIME ranges of largest key into best, best first; returns how many. One pass
 * with a heap of PRIME keys, most ranges rejected by one comparison with its root: a heap of all
 * ranges, built for every query, cost as much as summing the bounds. */
static uint32_t best_ranges(const uint32_t *ub, uint32_t total, uint64_t *best)
{
    uint32_t n = 0;
    for (uint32_t q = 0; q < total; q++) {
        if (!ub[q] || (n == PRIME && ub[q] < (uint32_t)(best[0] >> 32)))
            continue;
        uint64_t key = (uint64_t)ub[q] << 32 | (UINT32_MAX - q);
        if (n < PRIME) {
            best[n++] = key;
            for (uint32_t i = n == PRIME ? n / 2 : 0; i-- > 0;)
                sift_min(best, n, i);
        } else if (key > best[0]) {
            best[0] = key;
            sift_min(best, n, 0);
        }
    }
    qsort(best, n, sizeof *best, by_key_desc);
    return n;
}

/* The segment that queue range q belongs to (parts ascend by first). */
static const bmp_part *part_of(const bmp_part *parts, int m, uint32_t q)
{
    int lo = 0, hi = m - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (parts[mid].first <= q)
            lo = mid;
        else
            hi = mid - 1;
    }
    return &parts[lo];
}

/* When the bounds leave more than a quarter of a segment's ranges in the running (no topical
 * structure, or a small collection: 0.3x of TAAT measured on independent random vectors, 0.2x on
 * SciFact), the segment is answered exhaustively instead: one pass over each list beats a seek per
 * term and range. The ranges of it scored so far are forgotten (its hits leave the heap), so the
 * result is TAAT's, exact. */
static int exhaustive_instead(splade_searcher *s, const bmp_part *p, uint32_t survivors, topk *t)
{
    if ((uint64_t)survivors * 4 <= p->n_ranges)
        return 0;
    if (!s->acc && !(s->acc = calloc((size_t)splade_index_max_segment_docs(s->ix) + 1, sizeof *s->acc)))
        return 0; /* no memory for accumulators: keep going range by range */
    s->seg = p->seg;
    topk_drop(t, p->seg->base, p->seg->base + p->seg->n_live); /* this segment's hits, found again */
    splade_taat_cursors(s, p->cursors, p->n, t);
    return 1;
}

/* The ranges not scored yet that can still win, segment by segment in ascending order, so that each
 * segment's cursors only move forward. */
static void sweep(splade_searcher *s, const bmp_part *parts, int n_parts, topk *t)
{
    for (int j = 0; j < n_parts; j++) {
        const bmp_part *p = &parts[j];
        const uint32_t *ub = s->range_ub + p->first;
        uint32_t survivors = 0, min = t->n < t->k ? 1 : t->h[0].score; /* ub 0: no posting */
        for (uint32_t r = 0; r < p->n_ranges; r++)
            survivors += ub[r] >= min;
        if (!survivors || exhaustive_instead(s, p, survivors, t))
            continue;
        for (uint32_t r = 0; r < p->n_ranges; r++)
            if (ub[r] && can_win(t, ub[r]))
                score_range(s, p, r, t);
    }
}

void splade_bmp(splade_searcher *s, bmp_part *parts, int n_parts, topk *t)
{
    uint32_t total = 0;
    uint64_t *bits = s->range_bits;
    for (int j = 0; j < n_parts; j++) {
        bmp_part *p = &parts[j];
        p->first = total;
        p->n_ranges = (p->seg->n_docs + RANGE_DOCS - 1) / RANGE_DOCS;
        p->words = p->n_ranges / 64 + 1;
        p->bits = bits;
        bits += (size_t)p->n * p->words;
        range_bounds(s, p);
        total += p->n_ranges;
    }
    uint64_t best[PRIME];
    uint32_t n = best_ranges(s->range_ub, total, best), at[PRIME];
    /* The PRIME ranges are taken in queue order (segment by segment, ascending ids), not by bound:
     * the best ranges of a segment are often neighbours, and in this order their cursors move
     * forward and reuse decoded blocks instead of seeking back and forth. A range whose bound
     * cannot win by the time it comes is left to the sweep (which drops it then too). */
    for (uint32_t i = 0; i < n; i++)
        at[i] = UINT32_MAX - (uint32_t)best[i];
    qsort(at, n, sizeof *at, by_u32);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t q = at[i];
        if (!can_win(t, s->range_ub[q]))
            continue;
        const bmp_part *p = part_of(parts, n_parts, q);
        score_range(s, p, q - p->first, t);
        s->range_ub[q] = 0; /* scored: not again in the sweep */
    }
    if (n == PRIME && can_win(t, (uint32_t)(best[n - 1] >> 32))) /* else nothing else can win */
        sweep(s, parts, n_parts, t);
}
