/* SPLADE_ALGO_AUTO's choice of BMP, checked by measurement on the open index (auto_learn.c). */
#ifndef SPLADE_QUERY_AUTO_LEARN_H
#define SPLADE_QUERY_AUTO_LEARN_H

#include "splade/index.h"

enum { SPLADE_LEARN_BMP = 1, SPLADE_LEARN_RULE = 0, SPLADE_LEARN_TRIAL = -1 };
/* The index's counters (splade_index_learned): trials started and done, the verdict (0 undecided,
 * 1 BMP, 2 the per-segment methods), and the trials' summed CPU ns of each. */
enum { SPLADE_LEARNED_STARTED, SPLADE_LEARNED_DONE, SPLADE_LEARNED_VERDICT, SPLADE_LEARNED_BMP_NS,
       SPLADE_LEARNED_RULE_NS };
#define SPLADE_LEARN_TRIALS 8

/* For a query that splade_choose_bmp sends to BMP: SPLADE_LEARN_BMP (keep BMP), SPLADE_LEARN_RULE (the
 * per-segment methods instead: BMP measured slower on this index), or SPLADE_LEARN_TRIAL (this query is
 * one of the trials: time both, then splade_learn_record). */
int splade_learn_bmp(const splade_index *ix);
/* A trial's thread CPU times, in ns, of BMP and of the per-segment methods on the same query. */
void splade_learn_record(const splade_index *ix, long long bmp_ns, long long rule_ns);
/* The calling thread's CPU time in ns. */
long long splade_learn_now(void);

#endif
