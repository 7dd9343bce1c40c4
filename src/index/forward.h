/* A forward index (each document's terms and impacts) of one index file, built in memory from its
 * postings on first use and never written: the approximate search's exact rescoring reads it
 * (src/query/rescore.c). Internal: the seam between src/index/ and src/query/. */
#ifndef SPLADE_INDEX_FORWARD_H
#define SPLADE_INDEX_FORWARD_H

#include <stdint.h>

#include "splade/index.h"

typedef struct splade_forward {
    uint32_t n_docs;
    uint64_t *off;    /* n_docs + 1: document d's entries are [off[d], off[d + 1]), by ascending term */
    uint16_t *t16;    /* the file's term ids when it has at most 65,536 terms (else NULL) */
    uint32_t *t32;    /* else these */
    uint8_t *imp;     /* each entry's impact */
    uint64_t bytes;   /* memory held */
    double build_s;   /* wall time of the build */
} splade_forward;

/* Entry e's term. */
static inline int32_t splade_forward_term(const splade_forward *f, uint64_t e)
{
    return f->t16 ? (int32_t)f->t16[e] : (int32_t)f->t32[e];
}

/* A forward index of ix (one file) owned by the caller (splade_forward_free): splade_index_doc_vectors
 * builds one per segment for an export. NULL when memory fails (detail set). */
splade_forward *splade_forward_build(const splade_index *ix);
/* ix's forward index (ix: one file, a segment's g->ix), built on the first call by one thread under
 * a lock (the others wait) and kept until ix is closed; NULL when memory fails (detail set). */
const splade_forward *splade_index_forward(const splade_index *ix);
/* ix's forward index if some search built it, else NULL (never builds). */
const splade_forward *splade_index_forward_built(const splade_index *ix);
/* Frees what splade_index_forward built (splade_index_close). */
void splade_forward_free(splade_forward *f);

#endif
