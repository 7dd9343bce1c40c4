/* Windowed dense-accumulator TAAT (wtaat.c): scratch kept by the searcher, and the method. */
#ifndef SPLADE_QUERY_WTAAT_H
#define SPLADE_QUERY_WTAAT_H

#include "query/topk.h"
#include "splade/query.h"

struct splade_searcher;
struct splade_wtaat;
void splade_wtaat_free(struct splade_wtaat *w);
/* Adds the current segment's hits for the query's n cursors into t; o may be NULL (exact).
 * Returns 0, or -1 when out of memory. */
int splade_wtaat(struct splade_searcher *s, int n, topk *t, const splade_search_opts *o);

#endif
