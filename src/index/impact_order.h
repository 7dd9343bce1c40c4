/* Impact-ordered copies of an index file's long lists, built in memory from its postings on first use
 * and never written: the approximate search's budgeted candidate pass (src/query/rescore.c) takes each
 * list's postings of largest impact first (score-at-a-time, JASS-style). Internal: the seam between
 * src/index/ and src/query/. */
#ifndef SPLADE_INDEX_IMPACT_ORDER_H
#define SPLADE_INDEX_IMPACT_ORDER_H

#include <stdint.h>

#include "splade/index.h"

/* Lists with fewer postings are not copied (read whole from the file: they cost little). */
#define SPLADE_IMPACT_MIN_LIST 1024u

typedef struct splade_impact_order {
    uint32_t n_terms;
    int32_t *slot;   /* per term of the file: its copy's number, -1 for none */
    uint64_t *first; /* per copy j: its doc ids are docs[first[j] ..] */
    uint32_t *ge;    /* per copy j, 256 counts: ge[256 j + v] postings have impact >= v (a prefix of docs) */
    uint32_t *docs;  /* each copy's doc ids by decreasing impact, ascending within an impact */
    uint8_t *imps;   /* their impacts (a prefix of a copy is added in one pass, not run by run) */
    uint32_t n_copies;
    uint64_t bytes;  /* memory held */
    double build_s;  /* wall time of the build */
} splade_impact_order;

/* Term t's copy (its doc ids; its impacts into *imps) and counts, or NULL when t has none. */
static inline const uint32_t *splade_impact_docs(const splade_impact_order *o, int32_t t, const uint32_t **ge,
                                                 const uint8_t **imps)
{
    int32_t j = t >= 0 && (uint32_t)t < o->n_terms ? o->slot[t] : -1;
    if (j < 0)
        return NULL;
    *ge = o->ge + 256 * (uint64_t)j;
    *imps = o->imps + o->first[j];
    return o->docs + o->first[j];
}

/* ix's impact-ordered copies (ix: one file, a segment's g->ix), built on the first call by one thread
 * under the forward index's lock (the others wait), kept until ix is closed; NULL when memory fails
 * (detail set). */
const splade_impact_order *splade_index_impact_order(const splade_index *ix);
/* ix's copies if some search built them, else NULL (never builds). */
const splade_impact_order *splade_index_impact_order_built(const splade_index *ix);
void splade_impact_order_free(splade_impact_order *o);

#endif
