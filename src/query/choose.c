/* SPLADE_ALGO_AUTO: the method for one query on one segment (see bench/results/query-2026-11-25.md). */
#include "query/search_internal.h"

splade_algo splade_choose_algo(const splade_searcher *s, int n)
{
    (void)s;
    (void)n;
    return SPLADE_ALGO_WTAAT;
}
