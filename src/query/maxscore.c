/* MaxScore document-at-a-time retrieval (Turtle & Flood), optionally with block-max bounds on the
 * non-essential lists (block-max MaxScore, as in PISA). Lists are ordered by upper bound; the
 * longest prefix whose bounds sum to <= the current k-th score is "non-essential": a document
 * found only there cannot enter the top k, so candidates come from the essential lists alone and
 * the non-essential ones are probed with next_geq while the remaining bound can still win.
 * Pruning is safe for exact top-k: a document is dropped only if its bound cannot rank above the
 * worst kept hit by (score desc, sequence asc); documents do not come in sequence order (reordered
 * files, segments), so a bound equal to the k-th score is dropped only when the document's sequence
 * number loses the tie, and a list is non-essential only when the bounds strictly stay below it. */
#include <stdlib.h>

#include "query/search_internal.h"

static int by_ub(const void *a, const void *b)
{
    const cursor *x = *(cursor *const *)a, *y = *(cursor *const *)b;
    return (x->ub > y->ub) - (x->ub < y->ub);
}

void splade_order_by_bound(splade_searcher *s, int n)
{
    cursor **c = s->order;
    for (int i = 0; i < n; i++)
        c[i] = &s->cursors[i];
    if (n > 1) /* an empty query may have no cursor array at all */
        qsort(c, (size_t)n, sizeof *c, by_ub);
    uint64_t sum = 0;
    for (int i = 0; i < n; i++)
        s->ub_prefix[i] = sum += c[i]->ub;
}

static uint32_t next_candidate(cursor **c, int from, int n)
{
    uint32_t d = CURSOR_END;
    for (int i = from; i < n; i++)
        if (c[i]->doc < d)
            d = c[i]->doc;
    return d;
}

/* Sum of the essential lists' contributions to d; steps those cursors past d. */
static uint32_t score_essential(cursor **c, int from, int n, uint32_t d, uint64_t *scored)
{
    uint32_t score = 0;
    for (int i = from; i < n; i++)
        if (c[i]->doc == d) {
            score += cursor_score(c[i]);
            (*scored)++;
            cursor_next(c[i]);
        }
    return score;
}

/* Bound of the non-essential lists [0, ness) for d: block maxima (filling bm) or list maxima. */
static uint64_t nonessential_bound(splade_searcher *s, int ness, uint32_t d, int block_max)
{
    if (!block_max)
        return ness ? s->ub_prefix[ness - 1] : 0;
    uint64_t b = 0;
    for (int i = 0; i < ness; i++)
        b += s->bm[i] = cursor_block_bound(s->order[i], d);
    return b;
}

/* Adds the non-essential lists' contributions to score while it can still enter t.
 * Returns 0 if d was pruned. */
static int score_nonessential(splade_searcher *s, int ness, uint32_t d, uint32_t *score, uint64_t bound,
                              const topk *t, int block_max)
{
    for (int i = ness - 1; i >= 0; i--) {
        if (!seg_can_enter(s, t, *score + bound, d))
            return 0;
        cursor *c = s->order[i];
        bound -= block_max ? s->bm[i] : c->ub;
        cursor_next_geq(c, d);
        if (c->doc == d) {
            *score += cursor_score(c);
            s->stats.postings_scored++;
        }
    }
    return seg_can_enter(s, t, *score, d);
}

/* Lists whose bounds together stay strictly below the k-th score produce no candidate. */
static int essential_from(const splade_searcher *s, int ness, int n, const topk *t)
{
    while (ness < n && t->n == t->k && s->ub_prefix[ness] < t->h[0].score)
        ness++;
    return ness;
}

void splade_maxscore(splade_searcher *s, int n, topk *t, int block_max)
{
    splade_order_by_bound(s, n);
    cursor **c = s->order;
    int ness = essential_from(s, 0, n, t); /* lists [0, ness) are non-essential */
    for (;;) {
        uint32_t d = next_candidate(c, ness, n);
        if (d == CURSOR_END)
            break;
        uint32_t score = score_essential(c, ness, n, d, &s->stats.postings_scored);
        if (ness > 0) {
            if (!seg_can_enter(s, t, score + s->ub_prefix[ness - 1], d))
                continue;
            uint64_t bound = nonessential_bound(s, ness, d, block_max);
            if (!score_nonessential(s, ness, d, &score, bound, t, block_max))
                continue;
        } else if (!seg_can_enter(s, t, score, d)) {
            continue;
        }
        seg_offer(s, t, d, score);
        ness = essential_from(s, ness, n, t);
    }
}
