/* SPLADE_ALGO_AUTO: the method for one query on one segment, from the query's postings per document
 * of the segment (rho = the sum of its lists' lengths / documents), measured per collection in
 * bench/results/query-2026-11-25.md:
 *  - rho >= RHO_DENSE: the query touches each document many times (real SPLADE vectors: ~50 query
 *    terms over lists that cover much of the collection; rho 7.5 on average on the realistic one,
 *    10 on SciFact), no bound prunes enough to pay for its upkeep, and exhaustive TAAT is fastest;
 *  - below: bounds prune (synthetic topical vectors, rho 3.3: windowed TAAT scores 9% of the
 *    postings and beats BMP and TAAT at 200 k documents).
 * rho alone does not separate the two kinds of queries (synthetic ones up to rho 8 gain from wtaat,
 * real ones from rho 3 up lose up to 25% with it at 40 k documents). Replaying the per-query thread
 * CPU times of taat and wtaat (2 rounds each) through the rule, against the better method of each
 * collection: threshold 8 gives synthetic 200 k +0.0%, realistic 97 k -4.0% (better than either),
 * SciFact +3.5%; 6 gives +8.2% / -3.1% / +1.7%; 5 gives +41.6% on synthetic
 * (bench/results/query-2026-11-25.md).
 * Up to WTAAT_MIN_DOCS documents TAAT always (SciFact: auto 54.5 / 54.7 µs of CPU, taat 55.3 / 57.4).
 * Past TAAT_MAX_DOCS documents wtaat always: its pruning grows with the collection (the k-th score
 * rises, the bounds do not) and TAAT's accumulators leave the cache. The realistic vectors repeated
 * 4 times (390 k documents; duplicates raise the k-th score, so this flatters pruning): wtaat 1.44 ms
 * of CPU per query, TAAT 2.93, BMP 2.56. No real collection between 97 k and 390 k was measured.
 * An approximate search (splade_search_opts) always goes to windowed TAAT, the method that has one. */
#include "query/search_internal.h"

#define RHO_DENSE 8.0
#define TAAT_MAX_DOCS (1u << 17) /* 512 KB of accumulators */
#define WTAAT_MIN_DOCS (2u << 12) /* two windows: both scored first, nothing left to prune (wtaat.c) */

splade_algo splade_choose_algo(const splade_searcher *s, int n)
{
    const splade_search_opts *o = &s->opts;
    if (o->query_cut > 0 || (o->bound_factor > 0 && o->bound_factor < 1))
        return SPLADE_ALGO_WTAAT;
    uint64_t postings = 0;
    for (int i = 0; i < n; i++)
        postings += s->cursors[i].n_postings;
    uint32_t n_docs = s->seg->n_docs;
    if (n_docs <= WTAAT_MIN_DOCS)
        return SPLADE_ALGO_TAAT;
    return n_docs <= TAAT_MAX_DOCS && (double)postings >= RHO_DENSE * n_docs ? SPLADE_ALGO_TAAT : SPLADE_ALGO_WTAAT;
}
