/* Retrieval evaluation with trec_eval's definitions (src/query/eval.c, trec_files.c):
 *  - a run's documents are ranked by score descending, ties by docno descending (trec_eval's sort;
 *    the rank column is ignored);
 *  - relevant means relevance >= 1; nDCG uses the relevance value as a linear gain and log2(rank+1)
 *    discounts (trec_eval's ndcg_cut), the ideal ranking from all judged relevant documents;
 *  - a query is evaluated when it is in the run and has at least one relevant document in the
 *    qrels; the mean is over those queries.
 * Metrics: ndcg@K, mrr@K (reciprocal rank of the first relevant document within K, rr@K too),
 * recall@K, p@K, map (trec_eval's full-depth AP). */
#ifndef SPLADE_EVAL_H
#define SPLADE_EVAL_H

#include "splade.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Thread safety: read-only once loaded; splade_evaluate may run on several threads over the same files. */
typedef struct splade_trec_file splade_trec_file;

/* Qrels: BEIR TSV (query-id corpus-id score, optional header line) or TREC (qid iter docno rel). */
SPLADE_API int splade_qrels_load(const char *path, splade_trec_file **out);
/* A TREC run: qid Q0 docno rank score tag. A document repeated within a query is an error. */
SPLADE_API int splade_run_load(const char *path, splade_trec_file **out);
SPLADE_API void splade_trec_file_free(splade_trec_file *f);

typedef enum { SPLADE_METRIC_NDCG, SPLADE_METRIC_RR, SPLADE_METRIC_RECALL, SPLADE_METRIC_P, SPLADE_METRIC_MAP } splade_metric_kind;

typedef struct {
    splade_metric_kind kind;
    int k;          /* cutoff; 0 = none (map) */
    char name[32];  /* as printed, e.g. "ndcg@10" */
} splade_metric;

/* Parses "ndcg@10,mrr@10,recall@100" into up to max metrics. */
SPLADE_API int splade_metrics_parse(const char *spec, splade_metric *out, int max, int *n);

typedef struct {
    int n_metrics;
    int n_queries;        /* evaluated queries */
    double *mean;         /* [n_metrics] */
    const char **qids;    /* [n_queries], pointing into the run */
    double *per_query;    /* [n_queries × n_metrics] */
} splade_eval_result;

SPLADE_API int splade_evaluate(const splade_trec_file *qrels, const splade_trec_file *run, const splade_metric *m, int nm,
                               splade_eval_result *out);
SPLADE_API void splade_eval_result_free(splade_eval_result *r);

#ifdef __cplusplus
}
#endif
#endif
