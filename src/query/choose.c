/* SPLADE_ALGO_AUTO: the method for one query on one segment, from the query's postings per document
 * of the segment (rho = the sum of its lists' lengths / documents), measured per collection in
 * bench/results/query-2026-11-25.md:
 *  - rho >= RHO_DENSE: the query touches each document many times (real SPLADE vectors: ~50 query
 *    terms over lists that cover much of the collection; rho 7-10 on SciFact and the realistic
 *    collection), no bound prunes enough to pay for its upkeep, and exhaustive TAAT is fastest;
 *  - below: bounds prune (synthetic topical vectors, rho 3.3: windowed TAAT scores 9% of the
 *    postings and beats BMP and TAAT at 200 k documents).
 * rho alone does not separate the two kinds of queries (synthetic ones up to rho 8 gain from wtaat,
 * real ones from rho 3 up lose 25%); 6 kept every collection within 7% of its best method in thread
 * CPU per query (mean; 5: synthetic 38% behind, 7: realistic 7%, 8: 10%), see
 * bench/results/query-2026-11-25.md.
 * An approximate search (splade_search_opts) always goes to windowed TAAT, the method that has one. */
#include "query/search_internal.h"

#define RHO_DENSE 6.0

splade_algo splade_choose_algo(const splade_searcher *s, int n)
{
    const splade_search_opts *o = &s->opts;
    if (o->query_cut > 0 || (o->bound_factor > 0 && o->bound_factor < 1))
        return SPLADE_ALGO_WTAAT;
    uint64_t postings = 0;
    for (int i = 0; i < n; i++)
        postings += s->cursors[i].n_postings;
    return (double)postings >= RHO_DENSE * s->seg->n_docs ? SPLADE_ALGO_TAAT : SPLADE_ALGO_WTAAT;
}
