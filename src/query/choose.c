/* SPLADE_ALGO_AUTO: the method for one query on one segment, from the query's postings per document
 * of the segment (rho = sum of its lists' lengths / documents), measured per query in
 * bench/results/query-2026-11-25.md:
 *  - rho below RHO_PRUNE: few documents match several terms, range bounds are selective, BMP wins
 *    (synthetic topical collections);
 *  - otherwise the query touches most documents (real SPLADE vectors: 53 terms per query, lists
 *    covering a large share of the documents), no bound prunes much and the methods that stream
 *    every posting win: TAAT while its accumulator stays in the core's cache, windowed TAAT beyond.
 * An approximate search (splade_search_opts) always goes to windowed TAAT, the method that has one. */
#include "query/search_internal.h"

#define RHO_PRUNE 2.0
#define TAAT_MAX_DOCS (1u << 17) /* 512 KB of accumulators */

splade_algo splade_choose_algo(const splade_searcher *s, int n)
{
    const splade_search_opts *o = &s->opts;
    if (o->query_cut > 0 || (o->bound_factor > 0 && o->bound_factor < 1))
        return SPLADE_ALGO_WTAAT; /* the only method with an approximate mode */
    uint64_t postings = 0;
    for (int i = 0; i < n; i++)
        postings += s->cursors[i].n_postings;
    uint32_t n_docs = s->seg->n_docs;
    if ((double)postings < RHO_PRUNE * n_docs)
        return SPLADE_ALGO_BMP;
    return n_docs <= TAAT_MAX_DOCS ? SPLADE_ALGO_TAAT : SPLADE_ALGO_WTAAT;
}
