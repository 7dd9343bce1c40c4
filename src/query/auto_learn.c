/* SPLADE_ALGO_AUTO's BMP choice, checked on the index it searches.
 *
 * splade_choose_bmp (choose.c) sends a query to BMP from statistics of its terms' ranges; they were
 * fitted on synthetic and realistic collections up to 390 k documents, and on the realistic 1 M the
 * queries it picks run ~1.5x slower on BMP than on windowed TAAT (auto +40% over wtaat at the median,
 * bench/results/query-1m-2026-11-25.md): the features do not tell, per query, a collection where
 * BMP's ranges prune from one where they do not. The speed of the two methods on the index does. So
 * the first SPLADE_LEARN_TRIALS (8) queries that the rule sends to BMP run both ways, timed in thread
 * CPU time, and BMP is kept for the index's later queries only if it took no longer in sum. Both methods are exact
 * with the same tie rule, so the hits never depend on the verdict, only the time does.
 *
 * The counters live in the open index (index/segment.h: shared by every searcher and thread, zero at
 * open, never written to the file), so a batch, a Python loop of single searches or a server learns
 * once per open index. Trials beyond SPLADE_LEARN_TRIALS in flight at once, and queries meanwhile,
 * follow the rule. */
#include <time.h>

#include "index/segment.h"
#include "query/auto_learn.h"

int splade_learn_bmp(const splade_index *ix)
{
    _Atomic long long *c = splade_index_learned(ix);
    long long v = c[SPLADE_LEARNED_VERDICT];
    if (v)
        return v == 1 ? SPLADE_LEARN_BMP : SPLADE_LEARN_RULE;
    if (c[SPLADE_LEARNED_STARTED] >= SPLADE_LEARN_TRIALS || ++c[SPLADE_LEARNED_STARTED] > SPLADE_LEARN_TRIALS)
        return SPLADE_LEARN_BMP; /* enough trials under way: the rule until they report */
    return SPLADE_LEARN_TRIAL;
}

void splade_learn_record(const splade_index *ix, long long bmp_ns, long long rule_ns)
{
    _Atomic long long *c = splade_index_learned(ix);
    c[SPLADE_LEARNED_BMP_NS] += bmp_ns;
    c[SPLADE_LEARNED_RULE_NS] += rule_ns;
    /* the last trial decides (the sums are complete: each trial adds its times before counting itself) */
    if (++c[SPLADE_LEARNED_DONE] == SPLADE_LEARN_TRIALS)
        c[SPLADE_LEARNED_VERDICT] = c[SPLADE_LEARNED_BMP_NS] <= c[SPLADE_LEARNED_RULE_NS] ? 1 : 2;
}

long long splade_learn_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
