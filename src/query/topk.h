/* Bounded min-heap of the k best hits: the root is the worst kept hit (lowest score, then highest
 * sequence number), so ties go to the document added first (docs/FORMAT.md, "Quantization and
 * scores"): a rule that does not depend on how documents were split into segments nor on the
 * build-time reordering. Each entry carries its sequence number (key) and its snapshot doc id. */
#ifndef SPLADE_QUERY_TOPK_H
#define SPLADE_QUERY_TOPK_H

#include "splade/query.h"

typedef struct {
    uint64_t key;   /* the document's sequence number: the lower wins a tie */
    uint32_t doc;   /* snapshot doc id (what splade_hit reports) */
    uint32_t score;
} topk_hit;

typedef struct {
    topk_hit *h;
    int n, k;
} topk;

static inline int topk_worse(topk_hit a, topk_hit b)
{
    return a.score < b.score || (a.score == b.score && a.key > b.key);
}

/* Lowest score that may still enter (a tie must also win on the key): 0 until the heap is full. */
static inline uint32_t topk_threshold(const topk *t)
{
    return t->n < t->k ? 0 : t->h[0].score;
}

void topk_push(topk *t, topk_hit x);    /* x must rank above the worst kept hit (or the heap not be full) */
void topk_offer(topk *t, topk_hit x);   /* pushes x if it ranks above the worst kept hit */
int topk_sorted(topk *t, splade_hit *out); /* best first; empties the heap; returns the count */
/* Removes the hits whose doc lies in [lo, hi) (a segment searched again from scratch). */
void topk_drop(topk *t, uint32_t lo, uint32_t hi);

#endif
