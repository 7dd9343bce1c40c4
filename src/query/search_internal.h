/* Scratch space of one searching thread (search.c) and the methods it dispatches to. A search runs
 * each method on one segment at a time (s->seg), all of them filling one heap: internal ids are the
 * segment's; seg_offer and seg_can_enter bring in deletions, snapshot ids and the tie rule. BMP is
 * the exception: it takes all segments at once (bmp_part), their ranges in one queue. */
#ifndef SPLADE_QUERY_SEARCH_INTERNAL_H
#define SPLADE_QUERY_SEARCH_INTERNAL_H

#include "index/segment.h"
#include "query/cursor.h"
#include "query/topk.h"
#include "splade/query.h"

/* One segment of a BMP search: its cursors, and its ranges' place in the shared range queue. */
typedef struct {
    const splade_segment *seg;
    cursor *cursors;   /* the query's terms in this segment */
    int32_t *terms;    /* their term ids in the segment */
    int n;
    uint32_t first;    /* queue number of the segment's range 0 (set by splade_bmp) */
    uint32_t n_ranges;
    uint32_t words;    /* 64-bit words per term bitmap */
    uint64_t *bits;    /* per term, a bitmap of the ranges it occurs in */
} bmp_part;

struct splade_searcher {
    const splade_index *ix;
    const splade_segment *seg; /* the segment being searched */
    cursor *cursors;       /* one per query term */
    cursor **order;        /* cursors by ascending upper bound */
    uint64_t *ub_prefix;   /* ub_prefix[i] = sum of the i+1 smallest upper bounds */
    uint32_t *bm;          /* block-max bounds of the non-essential lists for one candidate */
    int32_t *terms;        /* term of each cursor (the segment's ids) */
    int cap;               /* terms the arrays above hold */
    uint32_t *acc;         /* TAAT accumulators, one per document (allocated on first use) */
    uint32_t *range_ub;    /* BMP: score bound per doc-id range of every segment, and scratch (allocated on first use) */
    uint32_t *range_ids;
    uint64_t *range_bits;  /* bmp_part.bits of every segment */
    size_t range_bits_cap; /* 64-bit words range_bits holds */
    bmp_part *parts;       /* BMP: one per segment searched */
    cursor *part_cursors;  /* BMP: bmp_part.cursors and .terms of every segment */
    int32_t *part_terms;
    size_t part_cap;       /* (segment, term) pairs they hold */
    int *seg_terms;        /* query terms with postings, per segment (order_segments) */
    topk_hit *heap;
    int heap_cap;
    uint64_t *seg_order;   /* segments by decreasing bound for the query */
    int seg_cap;
    splade_search_stats stats;
    struct splade_wtaat *wt; /* wtaat.c's scratch (allocated on first use) */
    struct splade_rescore *rs; /* rescore.c's scratch (allocated on first use) */
    splade_search_opts opts;
    int learn_flip;          /* which method an auto_learn.c trial runs first (search.c) */
};

/* Could internal id d of the current segment, with this score (or bound), rank above the worst kept
 * hit? (A tie wins when d was added before it: the sequence number is read only then.) */
static inline int seg_can_enter(const splade_searcher *s, const topk *t, uint64_t score, uint32_t d)
{
    if (t->n < t->k)
        return score > 0;
    if (score != t->h[0].score)
        return score > t->h[0].score;
    return splade_segment_seq(s->seg, d) < t->h[0].key;
}

/* Offers internal id d of the current segment with its exact score: deleted documents never enter. */
static inline void seg_offer(const splade_searcher *s, topk *t, uint32_t d, uint32_t score)
{
    if (!seg_can_enter(s, t, score, d) || splade_segment_deleted(s->seg, d))
        return;
    topk_push(t, (topk_hit){splade_segment_seq(s->seg, d), splade_segment_global(s->seg, d), score});
}

/* MaxScore's setup, shared by its variants: s->order = the n cursors by ascending upper bound,
 * s->ub_prefix[i] = the sum of the first i+1 bounds. */
void splade_order_by_bound(splade_searcher *s, int n);

/* Each adds the current segment's hits for the query's n cursors (already initialized) into t. */
void splade_maxscore(splade_searcher *s, int n, topk *t, int block_max);
void splade_taat(splade_searcher *s, int n, topk *t);
void splade_taat_cursors(splade_searcher *s, const cursor *c, int n, topk *t); /* the n cursors at c */
/* Every posting of the n cursors at c added into s->acc[0 .. n_docs) (doc ids past it skipped: a
 * damaged list never writes outside); TAAT's and the rescoring candidate pass's accumulation. */
void splade_taat_add_lists(splade_searcher *s, const cursor *c, int n, uint32_t n_docs);
void splade_wmaxscore(splade_searcher *s, int n, topk *t);
/* Adds the hits of the m segments of parts (seg, cursors, terms, n set) into t: every segment's
 * ranges are ordered together by their bounds against the one heap. */
void splade_bmp(splade_searcher *s, bmp_part *parts, int m, topk *t);
/* An approximate search's query_cut: the kept cursors moved to the front; returns their number (choose.c). */
int splade_cut_cursors(splade_searcher *s, int n);
/* SPLADE_ALGO_AUTO's choice for the current segment and the query's n cursors (choose.c). */
splade_algo splade_choose_algo(const splade_searcher *s, int n);
/* SPLADE_ALGO_AUTO: 1 when the whole query goes to BMP (choose.c). */
int splade_choose_bmp(const splade_searcher *s, const splade_qvec *q);

#endif
