/* One segment of an opened index, as the search code sees it (docs/FORMAT.md, "Segments and the
 * manifest"). An index opened from a single file has one segment, the file itself; a folder with a
 * MANIFEST has one per live segment file (snapshot.c). Internal: the seam between src/index/ and
 * src/query/, like format.h. */
#ifndef SPLADE_INDEX_SEGMENT_H
#define SPLADE_INDEX_SEGMENT_H

#include <stdint.h>

#include "splade/index.h"

typedef struct {
    const splade_index *ix;   /* the segment's file */
    uint32_t base;            /* snapshot id of the segment's first live document */
    uint32_t n_docs;          /* documents in the file, deleted ones included */
    uint32_t n_live;
    uint64_t seq_base;        /* sequence number of offset 0 (docs/FORMAT.md, "Document sequence") */
    const uint32_t *docseq;   /* each internal id's sequence offset; NULL: the internal id */
    const uint64_t *deleted;  /* bit per internal id; NULL: none deleted */
    const uint32_t *rank;     /* with deletions: live documents before each 64-id word */
    const uint32_t *live;     /* with deletions: internal id of each live document, ascending */
    const int32_t *remap;     /* snapshot term id -> the file's (-1: absent); NULL: the same ids */
} splade_segment;

/* Segments of an open index (>= 1 unless the index has none), in manifest order (ascending
 * seq_base). Valid while ix is open. */
int splade_index_n_segments(const splade_index *ix);
const splade_segment *splade_index_segment(const splade_index *ix, int i);
/* The largest n_docs of any segment (scratch sizes of a searcher). */
uint32_t splade_index_max_segment_docs(const splade_index *ix);
/* SPLADE_INDEX_LEARNED counters that the search code keeps about this open index (what it measured
 * while searching: src/query/auto_learn.c), shared by every thread searching it, never written to
 * the file: zero at open. Mutable through a const index by design (as the lookup built on demand). */
#define SPLADE_INDEX_LEARNED 8
_Atomic long long *splade_index_learned(const splade_index *ix);

static inline int splade_segment_deleted(const splade_segment *g, uint32_t d)
{
    return g->deleted && (g->deleted[d >> 6] >> (d & 63) & 1);
}

/* Snapshot id of internal id d (not deleted). */
static inline uint32_t splade_segment_global(const splade_segment *g, uint32_t d)
{
    if (!g->deleted)
        return g->base + d;
    uint64_t below = ~g->deleted[d >> 6] & ((1ull << (d & 63)) - 1);
    return g->base + g->rank[d >> 6] + (uint32_t)__builtin_popcountll(below);
}

/* Sequence number of internal id d: the tie-break key (lower wins). */
static inline uint64_t splade_segment_seq(const splade_segment *g, uint32_t d)
{
    return g->seq_base + (g->docseq ? g->docseq[d] : d);
}

/* The segment's term for a snapshot term (-1 when it has none). */
static inline int32_t splade_segment_term(const splade_segment *g, int32_t term)
{
    return g->remap ? g->remap[term] : term;
}

#endif
