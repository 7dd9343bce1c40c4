/* Windowed MaxScore (the bulk MaxScore of Lucene's MaxScoreBulkScorer): the doc-id space is cut into
 * windows of WINDOW documents; in each window the essential lists are added term-at-a-time into a
 * small accumulator (no per-document cursor minimum as in DAAT MaxScore), then each touched
 * document whose bound (essential score + non-essential upper bounds) can still beat the k-th score
 * probes the non-essential lists, tightened by their block maxima. A window whose essential
 * block-max bound cannot win is skipped without decoding. Documents inside a window are offered in
 * any order, so the pruning tests compare (score, sequence) exactly as the ranking does. */
#include <string.h>

#include "query/search_internal.h"

#define WINDOW 4096

/* Would a document d with this score (or bound) rank above the worst kept hit? */
#define can_enter(t, score, d) seg_can_enter(s, t, score, d)

/* Upper bound of the essential lists over [base, end) from block maxima (no decoding). */
static uint64_t window_bound(cursor **c, int from, int n, uint32_t base, uint32_t end)
{
    uint64_t b = 0;
    for (int i = from; i < n; i++) {
        cursor *x = c[i];
        uint32_t blk = x->block, m = 0;
        while (blk < x->n_blocks && x->blocks[blk].last_doc < base)
            blk++;
        x->block = blk; /* a shallow move: the cursor decodes on its next next_geq */
        for (; blk < x->n_blocks; blk++) {
            if (x->blocks[blk].max_impact > m)
                m = x->blocks[blk].max_impact;
            if (x->blocks[blk].last_doc >= end - 1)
                break;
        }
        b += (uint64_t)x->qw * m;
    }
    return b;
}

/* Adds the essential lists' postings in [base, end) into acc, marking touched offsets in a bitmap
 * (so that they are visited in ascending order: the non-essential cursors only move forward). */
static void accumulate(splade_searcher *s, cursor **c, int from, int n, uint32_t base, uint32_t end,
                       uint32_t *acc, uint64_t *touched)
{
    for (int i = from; i < n; i++) {
        cursor *x = c[i];
        cursor_next_geq(x, base);
        for (; x->doc < end; cursor_next(x)) {
            uint32_t o = x->doc - base;
            touched[o >> 6] |= 1ull << (o & 63);
            acc[o] += cursor_score(x);
            s->stats.postings_scored++;
        }
    }
}

/* Completes document d (essential score known) from the non-essential lists [0, ness). */
static void finish_doc(splade_searcher *s, cursor **c, int ness, uint32_t d, uint32_t score, topk *t)
{
    if (!can_enter(t, score + (ness ? s->ub_prefix[ness - 1] : 0), d))
        return;
    uint64_t bound = 0;
    for (int i = 0; i < ness; i++)
        bound += s->bm[i] = cursor_block_bound(c[i], d);
    for (int i = ness - 1; i >= 0; i--) {
        if (!can_enter(t, score + bound, d))
            return;
        bound -= s->bm[i];
        cursor_next_geq(c[i], d);
        if (c[i]->doc == d) {
            score += cursor_score(c[i]);
            s->stats.postings_scored++;
        }
    }
    seg_offer(s, t, d, score);
}

void splade_wmaxscore(splade_searcher *s, int n, topk *t)
{
    splade_order_by_bound(s, n);
    cursor **c = s->order;
    uint32_t n_docs = s->seg->n_docs, acc[WINDOW] = {0};
    uint64_t touched[WINDOW / 64] = {0};
    int ness = 0;
    while (ness < n && t->n == t->k && s->ub_prefix[ness] < t->h[0].score)
        ness++; /* the heap may already hold the other segments' hits */
    for (uint32_t base = 0; base < n_docs && ness < n; base += WINDOW) {
        uint32_t end = base + WINDOW < n_docs ? base + WINDOW : n_docs;
        uint64_t rest = ness ? s->ub_prefix[ness - 1] : 0;
        if (t->n == t->k && window_bound(c, ness, n, base, end) + rest < t->h[0].score)
            continue; /* strictly below the k-th score: no document here can enter */
        accumulate(s, c, ness, n, base, end, acc, touched);
        for (uint32_t w = 0; w < WINDOW / 64; w++)
            for (uint64_t bits = touched[w]; bits; bits &= bits - 1) {
                uint32_t o = w * 64 + (uint32_t)__builtin_ctzll(bits);
                finish_doc(s, c, ness, base + o, acc[o], t);
                acc[o] = 0;
            }
        memset(touched, 0, sizeof touched);
        while (ness < n && t->n == t->k && s->ub_prefix[ness] < t->h[0].score)
            ness++; /* lists whose bounds together stay below the k-th score stop producing candidates */
    }
}
