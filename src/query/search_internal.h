/* Scratch space of one searching thread (search.c) and the methods it dispatches to. */
#ifndef SPLADE_QUERY_SEARCH_INTERNAL_H
#define SPLADE_QUERY_SEARCH_INTERNAL_H

#include "query/cursor.h"
#include "query/topk.h"
#include "splade/query.h"

struct splade_searcher {
    const splade_index *ix;
    cursor *cursors;       /* one per query term */
    cursor **order;        /* cursors by ascending upper bound */
    uint64_t *ub_prefix;   /* ub_prefix[i] = sum of the i+1 smallest upper bounds */
    uint32_t *bm;          /* block-max bounds of the non-essential lists for one candidate */
    int32_t *terms;        /* term of each cursor */
    int cap;               /* terms the arrays above hold */
    uint32_t *acc;         /* TAAT accumulators, one per document (allocated on first use) */
    uint32_t *range_ub;    /* BMP: score bound per doc-id range, and scratch (allocated on first use) */
    uint32_t *range_ids;
    uint64_t *range_heap;
    uint64_t *range_bits;  /* per query term, a bitmap of the ranges it occurs in */
    uint32_t range_words;  /* 64-bit words per bitmap */
    int range_bits_cap;    /* terms the bitmaps hold */
    splade_hit *heap;
    int heap_cap;
    splade_search_stats stats;
};

/* MaxScore's setup, shared by its variants: s->order = the n cursors by ascending upper bound,
 * s->ub_prefix[i] = the sum of the first i+1 bounds. */
void splade_order_by_bound(splade_searcher *s, int n);

/* Each fills t from the query's n cursors (already initialized). */
void splade_maxscore(splade_searcher *s, int n, topk *t, int block_max);
void splade_taat(splade_searcher *s, int n, topk *t);
void splade_wmaxscore(splade_searcher *s, int n, topk *t);
void splade_bmp(splade_searcher *s, const int32_t *terms, int n, topk *t);

#endif
