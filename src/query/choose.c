/* SPLADE_ALGO_AUTO: first, per query, BMP over all segments where its ranges prune (splade_choose_bmp,
 * below, checked on each open index by timing its first picks both ways: auto_learn.c); otherwise the method for one query on one segment, from the query's postings per document
 * of the segment (rho = the sum of its lists' lengths / documents), measured per collection in
 * bench/results/query-2026-11-25.md:
 *  - rho >= documents / RHO_DOCS: the query touches each document many times (real SPLADE vectors:
 *    ~50 query terms over lists that cover much of the collection; rho 7.5 on average on the
 *    realistic one, 10 on SciFact), no bound prunes enough to pay for its upkeep, and exhaustive TAAT
 *    is fastest;
 *  - below: bounds prune (synthetic topical vectors, rho 3.3: windowed TAAT scores 9% of the
 *    postings and beats BMP and TAAT at 200 k documents).
 * The threshold grows with the segment: TAAT's advantage on dense queries shrinks as its
 * accumulators grow (the realistic collection's first 48 k documents: TAAT alone is the fastest at
 * the median; its first 75 k: TAAT and wtaat level; all 100 k: wtaat 10% ahead of TAAT). A fixed
 * threshold (8, below) mixed the two methods on the realistic 100 k and left auto +13% above wtaat
 * at the median; rho >= documents / 8192 (12.2 at 100 k, 5.9 at 48 k) replays within +0.2% / +1.6% /
 * +2.3% of the best method at 100 k / 75 k / 48 k and +3.0% on a synthetic 50 k (where a fixed 4
 * gives +13.6%), measured in bench/results/query-2026-11-25b.md. The earlier fixed threshold's
 * history follows.
 * After wtaat added its non-essential terms heaviest first over narrowing candidates and prefetched
 * its blocks (bench/results/query-tail-2026-11-25.md), it became 1.1-1.6x faster than TAAT at every
 * rho on the realistic 48 k and 100 k, and TAAT kept its lead only at 20 k: rho >= documents / 4096
 * (4.9 at 20 k, 11.7 at 48 k, 24 at 100 k) replays within +0.5% / +0.1% / +0.0% of the best method
 * at the median there, where / 8192 gives +0.0% / +23% / +0.9% (and p99 +13% at 100 k).
 * rho alone does not separate the two kinds of queries (synthetic ones up to rho 8 gain from wtaat,
 * real ones from rho 3 up lose up to 25% with it at 40 k documents). Replaying the per-query thread
 * CPU times of taat and wtaat (2 rounds each) through the rule, against the better method of each
 * collection: threshold 8 gives synthetic 200 k +0.0%, realistic 97 k -4.0% (better than either),
 * SciFact +3.5%; 6 gives +8.2% / -3.1% / +1.7%; 5 gives +41.6% on synthetic
 * (bench/results/query-2026-11-25.md).
 * Up to WTAAT_MIN_DOCS documents TAAT always (SciFact: auto 54.5 / 54.7 µs of CPU, taat 55.3 / 57.4).
 * Past TAAT_MAX_DOCS documents wtaat always: its pruning grows with the collection (the k-th score
 * rises, the bounds do not) and TAAT's accumulators leave the cache. (TAAT now adds in windows of
 * 128 k documents, taat.c, and no longer pays for the cache: still 4x wtaat's time at the median on
 * 1 M documents, query-taat-window-2026-11-26.md.) The realistic vectors repeated
 * 4 times (390 k documents; duplicates raise the k-th score, so this flatters pruning): wtaat 1.44 ms
 * of CPU per query, TAAT 2.93, BMP 2.56. No real collection between 97 k and 390 k was measured.
 * An approximate search (splade_search_opts) goes to BMP where the exact one would (BMP has no
 * approximation, it answers exactly: synthetic 200 k, BMP 71-82 µs of CPU at the median, windowed
 * TAAT at bound factor 0.8 107, recall 0.98); otherwise it keeps the query_cut terms of largest impact
 * (splade_cut_cursors) and then takes the same rule over them: TAAT where it would answer the cut
 * query exactly fastest (small segments, dense queries: it cannot skip ranges, so bound_factor is not
 * used there; the answer is only closer to the exact one), else windowed TAAT with the bound factor.
 * SciFact, query_cut 35, bound factor 0.8 (recall@10 0.951 either way): wtaat 48.6 / 51.4 µs of CPU
 * per query at the median, TAAT 40.9 / 44.4 (query-2026-11-25b.md). */
#include <math.h>
#include <string.h>

#include "index/format.h"
#include "query/search_internal.h"

#define RHO_DOCS 4096.0 /* TAAT when rho >= documents / RHO_DOCS (above; 8192 until wtaat's tail work) */
#define TAAT_MAX_DOCS (1u << 17) /* 512 KB of accumulators */
#define WTAAT_MIN_DOCS (2u << 12) /* two windows: both scored first, nothing left to prune (wtaat.c) */
#define BMP_MIN_GAIN 1.19         /* the query's clustering gain from which BMP is taken (below) */
#define BMP_MIN_PEAK 0.06         /* ... if its largest impact is at least this share of their sum */
#define BMP_MAX_DUP_GAIN 1.3      /* ... and its terms' unweighted gain is below this (duplicates) */

/* BMP for the whole query (it takes all segments at once, so this is decided before them), from
 * two statistics that separate the queries it answers fastest (after the clustering of
 * src/index/reorder.c made its ranges tighter, bench/results/query-2026-11-25.md, "After the BMP
 * changes"):
 *  - the clustering gain: how much fewer doc-id ranges the query's terms occur in than if their
 *    postings were spread at random (expected R (1 - e^(-df / R)) of R ranges), weighted by query
 *    impact. BMP prunes by range bounds; they separate only where the heavy terms' postings gather
 *    in few ranges. Topical (synthetic) queries: median 1.24, realistic SPLADE ones 1.13;
 *  - the largest query impact's share of their sum: flat queries (many terms of similar weight,
 *    share < 6%) reach the k-th score by many small contributions, no range stands out;
 *  - the same gain unweighted, every term alike: 1.3 or more means the collection's documents
 *    themselves come in clusters (the realistic collection with each document 4 times: median
 *    1.49, weighted 1.56, and BMP 2.1x slower than wtaat there), not the query's heavy terms.
 * Replaying the per-query thread CPU times of the four methods through the rule (3 rounds) on 7
 * collections: median within +9.2% of the best method on each, p99 within +1.8% (the guard against
 * duplicates was added after the 390 k duplicated collection failed the first rule: fitted, not
 * held out). Read from the TERMS table and the RANGES directory only (no posting is touched). */
int splade_choose_bmp(const splade_searcher *s, const splade_qvec *q)
{
    double expected = 0, present = 0, expected_u = 0, present_u = 0, docs = 0, sum = 0, peak = 0;
    for (int g = 0; g < splade_index_n_segments(s->ix); g++)
        docs += splade_index_segment(s->ix, g)->n_live ? splade_index_segment(s->ix, g)->n_docs : 0;
    if (docs <= WTAAT_MIN_DOCS)
        return 0; /* small: TAAT (splade_choose_algo), without the cost of the statistics */
    for (int g = 0; g < splade_index_n_segments(s->ix); g++) {
        const splade_segment *seg = splade_index_segment(s->ix, g);
        if (!seg->n_live)
            continue;
        double R = (double)(((size_t)seg->n_docs + (1u << SPLADE_RANGE_SHIFT) - 1) >> SPLADE_RANGE_SHIFT);
        for (int32_t i = 0; i < q->n; i++) {
            int32_t term = splade_segment_term(seg, q->terms[i]);
            splade_term_postings tp;
            splade_term_ranges tr;
            splade_index_postings(seg->ix, term, &tp);
            splade_index_ranges(seg->ix, term, &tr);
            if (!tp.n_postings || !tr.n)
                continue;
            double e = R * -expm1(-(double)tp.n_postings / R);
            expected += q->impacts[i] * e;
            present += (double)q->impacts[i] * tr.n;
            expected_u += q->impacts[i] ? e : 0;
            present_u += q->impacts[i] ? tr.n : 0;
        }
    }
    for (int32_t i = 0; i < q->n; i++) {
        sum += q->impacts[i];
        peak = q->impacts[i] > peak ? q->impacts[i] : peak;
    }
    return present > 0 && expected >= BMP_MIN_GAIN * present && peak >= BMP_MIN_PEAK * sum &&
           expected_u < BMP_MAX_DUP_GAIN * present_u;
}

/* Keeps the query_cut cursors of largest query impact (ties: the first in query order), moved to the
 * front in their order; returns their number (n without a cut). */
int splade_cut_cursors(splade_searcher *s, int n)
{
    int cut = s->opts.query_cut;
    if (cut <= 0 || cut >= n)
        return n;
    int count[256] = {0}, above = 0, thr = 255;
    for (int i = 0; i < n; i++)
        count[s->cursors[i].qw & 255]++; /* query impacts are 8-bit */
    while (above + count[thr] < cut)
        above += count[thr--];
    int m = 0, ties = cut - above;
    for (int i = 0; i < n; i++) {
        int qw = (int)s->cursors[i].qw;
        if (qw > thr || (qw == thr && ties-- > 0)) {
            if (m != i) {
                s->cursors[m] = s->cursors[i];
                s->terms[m] = s->terms[i];
            }
            m++;
        }
    }
    return m;
}

splade_algo splade_choose_algo(const splade_searcher *s, int n)
{
    uint64_t postings = 0;
    for (int i = 0; i < n; i++)
        postings += s->cursors[i].n_postings;
    uint32_t n_docs = s->seg->n_docs;
    if (n_docs <= WTAAT_MIN_DOCS)
        return SPLADE_ALGO_TAAT;
    return n_docs <= TAAT_MAX_DOCS && (double)postings * RHO_DOCS >= (double)n_docs * n_docs ? SPLADE_ALGO_TAAT
                                                                                            : SPLADE_ALGO_WTAAT;
}
