/* Approximate search with exact rescoring from an in-memory forward index (rescore.c). */
#ifndef SPLADE_QUERY_RESCORE_H
#define SPLADE_QUERY_RESCORE_H

#include "query/topk.h"

struct splade_searcher;
struct splade_rescore;

/* Adds the current segment's hits for the query's n cursors (initialized, s->terms set) into t, by
 * s->opts.rescore candidates over the query_cut heaviest terms rescored exactly; -1 when memory
 * fails (the forward index or scratch: nothing was added, the cursors are untouched). */
int splade_rescore(struct splade_searcher *s, int n, topk *t);
void splade_rescore_free(struct splade_rescore *r);

#endif
