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
/* Copies are cut into windows of 2^16 documents, each window's postings by decreasing impact, so that a
 * doc id takes 2 bytes (its offset in the window): the budgeted pass streams the copies from memory,
 * 3 bytes a posting instead of 5 (rescore.c). */
#define SPLADE_IMPACT_WINDOW_SHIFT 16
/* Each window's postings are counted at impact levels: level L's count is of those of impact >= 4 L
 * (>= 1 for level 0), so that the budgeted pass finds a window's head (its postings of impact >= some
 * v) within the bracket of levels around v, a few postings, instead of searching the whole window
 * (bench/results/query-approx-half-2026-11-26.md). 256 bytes a window and copy. */
#define SPLADE_IMPACT_LEVELS 64
static inline uint32_t splade_impact_level_floor(uint32_t level)
{
    return level ? 4 * level : 1;
}

typedef struct splade_impact_order {
    uint32_t n_terms;
    uint32_t n_win;  /* windows: the file's documents / 2^SPLADE_IMPACT_WINDOW_SHIFT, rounded up */
    int32_t *slot;   /* per term of the file: its copy's number, -1 for none */
    uint64_t *first; /* per copy j: its postings are docs[first[j] ..] and imps[first[j] ..] */
    uint32_t *ge;    /* per copy j, 256 counts: ge[256 j + v] postings have impact >= v */
    uint32_t *win;   /* per copy j, n_win + 1 offsets from first[j]: window w's postings */
    uint32_t *lvl;   /* per copy j and window w, SPLADE_IMPACT_LEVELS counts at lvl[(j n_win + w) LEVELS]:
                      * lvl[.. + L] of the window's postings have impact >= splade_impact_level_floor(L) */
    uint16_t *docs;  /* each copy's doc ids less their window's first, window by window; by decreasing
                      * impact within a window, ascending within an impact */
    uint8_t *imps;   /* their impacts */
    uint32_t n_copies;
    uint64_t bytes;  /* memory held */
    double build_s;  /* wall time of the build */
} splade_impact_order;

/* One term's copy. */
typedef struct {
    const uint16_t *docs; /* window w's: doc id = (w << SPLADE_IMPACT_WINDOW_SHIFT) + docs[i] */
    const uint32_t *ge, *win;
    const uint32_t *lvl; /* window w's counts: lvl[w * SPLADE_IMPACT_LEVELS + L] */
    const uint8_t *imps;
} splade_impact_list;

/* Term t's copy into *l; 0 when t has none. */
static inline int splade_impact_list_of(const splade_impact_order *o, int32_t t, splade_impact_list *l)
{
    int32_t j = t >= 0 && (uint32_t)t < o->n_terms ? o->slot[t] : -1;
    if (j < 0)
        return 0;
    l->docs = o->docs + o->first[j];
    l->imps = o->imps + o->first[j];
    l->ge = o->ge + 256 * (uint64_t)j;
    l->win = o->win + ((uint64_t)o->n_win + 1) * (uint64_t)j;
    l->lvl = o->lvl + (uint64_t)o->n_win * SPLADE_IMPACT_LEVELS * (uint64_t)j;
    return 1;
}

/* ix's impact-ordered copies (ix: one file, a segment's g->ix), built on the first call by one thread
 * under the forward index's lock (the others wait), kept until ix is closed; NULL when memory fails
 * (detail set). */
const splade_impact_order *splade_index_impact_order(const splade_index *ix);
/* ix's copies if some search built them, else NULL (never builds). */
const splade_impact_order *splade_index_impact_order_built(const splade_index *ix);
void splade_impact_order_free(splade_impact_order *o);

#endif
