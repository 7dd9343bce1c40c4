/* Bounded min-heap of the k best (score, doc): the root is the worst kept hit (lowest score,
 * then highest doc id), so ties keep the lower doc id as the ranking requires. */
#ifndef SPLADE_QUERY_TOPK_H
#define SPLADE_QUERY_TOPK_H

#include "splade/query.h"

typedef struct {
    splade_hit *h;
    int n, k;
} topk;

static inline int topk_worse(splade_hit a, splade_hit b)
{
    return a.score < b.score || (a.score == b.score && a.doc > b.doc);
}

/* Score a new (higher-id) document must beat to enter: 0 until the heap is full. */
static inline uint32_t topk_threshold(const topk *t)
{
    return t->n < t->k ? 0 : t->h[0].score;
}

void topk_push(topk *t, splade_hit x);    /* x must beat the threshold (or the heap not be full) */
void topk_offer(topk *t, splade_hit x);   /* pushes x if it ranks above the worst kept hit */
int topk_sorted(topk *t, splade_hit *out); /* best first; empties the heap; returns the count */

#endif
