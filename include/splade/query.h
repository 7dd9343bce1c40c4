/* Exact top-k retrieval over an open index (src/query/). Owner of returned memory is stated per call.
 *
 * Scores are integers: sum over shared terms of query_impact × doc_impact (both 8-bit, see
 * docs/FORMAT.md), so every method returns the same top-k; ties go to the document added first (the
 * lower sequence number, docs/FORMAT.md), whatever the segments and the build-time reordering.
 * Only documents with score > 0 are returned. */
#ifndef SPLADE_QUERY_H
#define SPLADE_QUERY_H

#include "splade.h"

#include <stdint.h>

#include "splade/index.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A quantized query: distinct term ids ascending, impacts 1..255, query_max = weight of 255. */
typedef struct {
    int32_t n;
    int32_t *terms;
    uint8_t *impacts;
    float query_max;
} splade_qvec;

/* Builds a qvec from n (term, weight) pairs in any order: repeated terms are summed, terms outside
 * [0, n_terms) and weights <= 0 or not finite are dropped (an empty result is a valid query that
 * matches nothing). query_max is the largest weight of the query, a dropped term's included, so that
 * impacts do not depend on which tokens the index knows. out owns its arrays: splade_qvec_free. */
SPLADE_API int splade_qvec_build(const int32_t *terms, const float *weights, int32_t n, uint32_t n_terms,
                                 splade_qvec *out);
SPLADE_API void splade_qvec_free(splade_qvec *q);

typedef struct {
    uint32_t doc;
    uint32_t score;
} splade_hit;

/* Printed score of an integer score (float, for display and TREC runs). */
SPLADE_API double splade_hit_score(const splade_index *ix, const splade_qvec *q, uint32_t score);

typedef enum {
    SPLADE_ALGO_BMM = 0,      /* block-max MaxScore (DAAT) */
    SPLADE_ALGO_MAXSCORE = 1, /* MaxScore with list-wide bounds only */
    SPLADE_ALGO_TAAT = 2,     /* exhaustive term-at-a-time with an accumulator per document */
    SPLADE_ALGO_BMP = 3,      /* block-max pruning over doc-id ranges (Mallia et al., SIGIR 2024); the
                               * CLI default, fastest measured on reordered indexes (bench/results) */
    SPLADE_ALGO_WMAXSCORE = 4, /* windowed MaxScore: essential lists term-at-a-time per window of docs */
    SPLADE_ALGO_WTAAT = 5,    /* windowed dense-accumulator term-at-a-time with range-bound pruning
                               * (SINDI-style, src/query/wtaat.c) */
    SPLADE_ALGO_AUTO = 6,     /* picks one of the above per query and segment from their statistics
                               * (src/query/choose.c, measured in bench/results/query-2026-11-25.md) */
} splade_algo;

/* Approximate search (wtaat and auto only; the others ignore it). Zeros = exact. Auto may answer
 * more exactly than asked: where it takes BMP (exact) or, on small segments, TAAT over the
 * query_cut terms (no range skipped). */
typedef struct {
    int query_cut;      /* > 0: only the query's query_cut terms of largest impact are searched */
    float bound_factor; /* in (0, 1): a doc-id range is scored only if bound x bound_factor beats the
                         * k-th score (Seismic's heap factor); 0 or 1: exact */
    int rescore;        /* > 0 (auto only, at most SPLADE_RESCORE_MAX): the max(rescore, k) documents of
                         * largest score over the query_cut terms are scored again over all the query's
                         * terms, exactly, and the best k of them kept (src/query/rescore.c; BMP is not
                         * taken then; bound_factor, if set, prunes the first pass). Needs a forward
                         * index, built in memory from the postings on the first such search (3 bytes
                         * per posting; splade_search_stats.forward_bytes); the file is unchanged */
    int budget;         /* > 0 (with rescore): the candidates are picked from at most budget postings of
                         * the cut terms' long lists, those of largest query impact x impact first
                         * (score-at-a-time; lists under 1,024 postings are read whole). Needs
                         * impact-ordered copies of the long lists, built in memory on the first such
                         * search (4 bytes per copied posting; splade_search_stats.impact_bytes); the
                         * file is unchanged. 0: every posting of the cut terms */
} splade_search_opts;

#define SPLADE_RESCORE_MAX 65536

typedef struct {
    uint64_t postings_scored;  /* postings whose impact was added */
    uint64_t blocks_decoded;
    uint64_t rescored;        /* documents rescored exactly (splade_search_opts.rescore) */
    uint64_t forward_bytes;   /* memory of the forward indexes the rescoring built (0: none yet) */
    double forward_build_s;   /* their build time (wall, by whichever search built them) */
    uint64_t impact_bytes;    /* memory of the impact-ordered copies (splade_search_opts.budget; 0: none) */
    double impact_build_s;    /* their build time (wall) */
} splade_search_stats;

/* Scratch space for searching one index. Thread safety: one thread at a time per searcher; give
 * each thread its own (they may share the index). splade_search_batch makes its own. */
typedef struct splade_searcher splade_searcher;
SPLADE_API int splade_searcher_create(const splade_index *ix, splade_searcher **out);
SPLADE_API void splade_searcher_free(splade_searcher *s);

/* Top k of q into hits[0 .. *n_hits) (caller's array of k entries), best first. */
SPLADE_API int splade_search(splade_searcher *s, const splade_qvec *q, int k, splade_algo algo, splade_hit *hits,
                             int *n_hits);
SPLADE_API const splade_search_stats *splade_searcher_stats(const splade_searcher *s);
/* Approximation for the searcher's later searches (NULL: exact again). */
SPLADE_API int splade_searcher_set_opts(splade_searcher *s, const splade_search_opts *o);

/* Searches nq queries on `threads` threads (<= 0: online cores). hits has nq × k entries (query i
 * uses hits[i*k ..]), n_hits nq entries. The results do not depend on the thread count. */
SPLADE_API int splade_search_batch(const splade_index *ix, const splade_qvec *qs, int nq, int k, splade_algo algo,
                                   int threads, splade_hit *hits, int *n_hits);
/* The same with an approximation (o may be NULL: exact). */
SPLADE_API int splade_search_batch_opts(const splade_index *ix, const splade_qvec *qs, int nq, int k, splade_algo algo,
                                        const splade_search_opts *o, int threads, splade_hit *hits, int *n_hits);

/* The cheapest approximation whose recall@k, measured on the caller's sample of n queries against
 * the exact answers, reaches target (0 < target <= 1): a short ladder of settings (query_cut 24,
 * rescore 200, budgets of 0.1 to 1.6 x the index's documents, sqrt(2) apart, src/query/calibrate.c)
 * is tried cheapest first; the first that reaches it goes to *out, and *recall (may be NULL) gets
 * its measured recall. None reaching it: *out all zeros (exact) and *recall 1. Recall counts a
 * returned document whose exact score ties the k-th exact one. Costs one exact and up to nine
 * approximate batches of the sample (on `threads` threads; the first approximate one builds the
 * in-memory structures the options need); a sample of a few hundred of the real queries is enough
 * for a mean within ~0.01. */
SPLADE_API int splade_search_calibrate(const splade_index *ix, const splade_qvec *sample, int n, int k, double target,
                                       int threads, splade_search_opts *out, double *recall);

/* GPU batch search (src/pipeline/gpu_search.c, src/gpu/search.cu): exhaustive term-at-a-time on a
 * CUDA device, many queries at once, with exactly the CPU's results (the same hits, scores and tie
 * rule; deleted documents never returned). create uploads the index's live postings (about 5 bytes
 * per posting of device memory, plus a dense accumulator of 4 bytes per document for each query of a
 * chunk: the chunk is sized to the free memory); device -1: the current CUDA device. Without a usable
 * GPU (or a CUDA build) create fails with SPLADE_ERR_NO_GPU: callers fall back to splade_search_batch.
 * Thread safety: one thread at a time per GPU searcher. */
typedef struct splade_gpu_searcher splade_gpu_searcher;
SPLADE_API int splade_gpu_searcher_create(const splade_index *ix, int device, splade_gpu_searcher **out);
SPLADE_API void splade_gpu_searcher_free(splade_gpu_searcher *g);
/* Like splade_search_batch: hits has nq x k entries (query i uses hits[i*k ..]), n_hits nq entries.
 * The index must stay open while the searcher lives. */
SPLADE_API int splade_gpu_search_batch(splade_gpu_searcher *g, const splade_qvec *qs, int nq, int k, splade_hit *hits,
                                       int *n_hits);

#ifdef __cplusplus
}
#endif
#endif
