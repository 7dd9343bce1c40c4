/* splade_search_calibrate (query.h): the cheapest approximation whose recall@k on a sample of the
 * caller's queries reaches a target, found by measuring a short ladder of settings against the
 * exact answers. Why measure instead of a formula: the postings a given recall needs depend on the
 * collection and the model (0.3-0.4 x the documents for recall 0.95 on splade-tiny's realistic
 * collections, bench/results/query-approx-scale-2026-11-26.md; no budget reaches 0.3 on a
 * random-weight bert-base's flat vectors, query-1m-bertbase-2026-11-26.md). */
#include "common/fail.h"
#include "splade.h"
#include "splade/index.h"
#include "splade/query.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* The ladder: the query cut and candidates that served recall 0.95-0.98 on the realistic 100 k to
 * 1 M (query-approx-half-2026-11-26.md, query-1m-approx-half-2026-11-26.md), with budgets from a
 * tenth of the documents to 1.6 times them, sqrt(2) apart, cheapest first. */
enum { CUT = 24, CANDIDATES = 200, RUNGS = 9 };
static const double BUDGET_PER_DOC[RUNGS] = {0.1, 0.1414, 0.2, 0.2828, 0.4, 0.5657, 0.8, 1.1314, 1.6};

/* Mean over the queries with exact hits of the share of them the approximate answer holds. Its
 * scores are exact (the rescoring mode), so a hit whose score reaches the exact k-th one counts:
 * a tie at the k-th place is not a miss. */
static double mean_recall(const splade_hit *exact, const int *n_exact, const splade_hit *got, const int *n_got,
                          int n, int k)
{
    double sum = 0.0;
    int counted = 0;
    for (int q = 0; q < n; q++) {
        const int ne = n_exact[q];
        if (ne == 0)
            continue;
        const uint32_t kth = exact[(size_t)q * k + ne - 1].score;
        int hits = 0;
        for (int i = 0; i < n_got[q]; i++)
            hits += got[(size_t)q * k + i].score >= kth;
        sum += (double)(hits < ne ? hits : ne) / ne;
        counted++;
    }
    return counted ? sum / counted : 1.0;
}

static splade_search_opts rung(int r, uint32_t n_docs, int k)
{
    double b = BUDGET_PER_DOC[r] * n_docs + 1.0;
    splade_search_opts o = {CUT, 0.0f, CANDIDATES > k ? CANDIDATES : k, b < INT_MAX ? (int)b : INT_MAX};
    return o;
}

int splade_search_calibrate(const splade_index *ix, const splade_qvec *sample, int n, int k, double target,
                            int threads, splade_search_opts *out, double *recall)
{
    if (!ix || !sample || !out || n < 1 || k < 1 || k > SPLADE_RESCORE_MAX || !(target > 0.0 && target <= 1.0))
        return splade_fail(SPLADE_ERR_INVALID_ARG,
                           "splade_search_calibrate: bad arguments (n=%d, k=%d, target %g: want 0 < target <= 1)", n,
                           k, target);
    memset(out, 0, sizeof *out);
    if (recall)
        *recall = 1.0;
    const size_t hits_n = (size_t)n * (size_t)k;
    splade_hit *exact = malloc(hits_n * sizeof *exact), *got = malloc(hits_n * sizeof *got);
    int *n_exact = malloc((size_t)n * sizeof *n_exact), *n_got = malloc((size_t)n * sizeof *n_got);
    int rc = SPLADE_OK;
    if (!exact || !got || !n_exact || !n_got)
        rc = splade_fail(SPLADE_ERR_NOMEM, "splade_search_calibrate: %d queries", n);
    if (!rc)
        rc = splade_search_batch(ix, sample, n, k, SPLADE_ALGO_AUTO, threads, exact, n_exact);
    const uint32_t n_docs = splade_index_get_info(ix)->n_docs;
    for (int r = 0; !rc && r < RUNGS; r++) {
        const splade_search_opts o = rung(r, n_docs, k);
        rc = splade_search_batch_opts(ix, sample, n, k, SPLADE_ALGO_AUTO, &o, threads, got, n_got);
        const double m = rc ? 0.0 : mean_recall(exact, n_exact, got, n_got, n, k);
        if (!rc && m >= target) {
            *out = o;
            if (recall)
                *recall = m;
            break;
        }
    }
    free(exact), free(got), free(n_exact), free(n_got);
    return rc;
}
