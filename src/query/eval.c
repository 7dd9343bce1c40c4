/* Metrics with trec_eval's definitions (see include/splade/eval.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "query/trec_files.h"
#include "splade.h"
#include "splade/eval.h"

/* The cutoff K of "name@K": a whole positive integer (0, "10x" or "-1" would be silently useless). */
static int parse_cutoff(const char *metric, const char *s, int *k)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > INT_MAX)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "metric \"%s\": the cutoff \"%s\" must be a positive integer",
                           metric, s);
    *k = (int)v;
    return SPLADE_OK;
}

int splade_metrics_parse(const char *spec, splade_metric *out, int max, int *n)
{
    static const struct { const char *name; splade_metric_kind kind; } names[] = {
        {"ndcg", SPLADE_METRIC_NDCG}, {"ndcg_cut", SPLADE_METRIC_NDCG}, {"mrr", SPLADE_METRIC_RR},
        {"rr", SPLADE_METRIC_RR}, {"recall", SPLADE_METRIC_RECALL}, {"p", SPLADE_METRIC_P},
        {"P", SPLADE_METRIC_P}, {"map", SPLADE_METRIC_MAP}};
    *n = 0;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char metric[64];
        snprintf(metric, sizeof metric, "%s", tok); /* as written, for messages */
        const char *cut = NULL;
        char *at = strchr(tok, '@');
        if (!strncmp(tok, "ndcg_cut", 8) && (tok[8] == '_' || tok[8] == '.')) { /* trec_eval's spelling */
            cut = tok + 9;
            tok[8] = '\0';
        } else if (at) {
            cut = at + 1;
            *at = '\0';
        }
        size_t i = 0;
        while (i < sizeof names / sizeof *names && strcmp(tok, names[i].name))
            i++;
        if (i == sizeof names / sizeof *names)
            return splade_fail(SPLADE_ERR_INVALID_ARG, "unknown metric \"%s\" (use ndcg@K, mrr@K, recall@K, p@K, map)",
                               metric);
        if (*n == max)
            return splade_fail(SPLADE_ERR_INVALID_ARG, "more than %d metrics", max);
        int k = 0;
        if (cut && parse_cutoff(metric, cut, &k) < 0)
            return SPLADE_ERR_INVALID_ARG;
        if (!cut && names[i].kind != SPLADE_METRIC_MAP)
            return splade_fail(SPLADE_ERR_INVALID_ARG, "metric \"%s\" needs a cutoff: %s@K with K a positive integer",
                               metric, metric);
        out[*n].kind = names[i].kind;
        out[*n].k = k;
        static const char *pretty[] = {"ndcg", "mrr", "recall", "p", "map"};
        if (k)
            snprintf(out[*n].name, sizeof out[*n].name, "%s@%d", pretty[names[i].kind], k);
        else
            snprintf(out[*n].name, sizeof out[*n].name, "%s", pretty[names[i].kind]);
        (*n)++;
    }
    return *n ? SPLADE_OK : splade_fail(SPLADE_ERR_INVALID_ARG, "no metric given");
}

/* The qrels of one query: e[lo, hi), docno ascending. */
typedef struct {
    const trec_entry *e;
    size_t n;
} judged;

static double relevance(const judged *j, const char *doc)
{
    size_t lo = 0, hi = j->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(j->e[mid].doc, doc);
        if (!c)
            return j->e[mid].score;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static int by_rel_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

static double ideal_dcg(const judged *j, int k)
{
    double *g = malloc((j->n + 1) * sizeof *g), dcg = 0;
    if (!g)
        return 0;
    for (size_t i = 0; i < j->n; i++)
        g[i] = j->e[i].score > 0 ? j->e[i].score : 0;
    qsort(g, j->n, sizeof *g, by_rel_desc);
    for (size_t i = 0; i < j->n && (int)i < k; i++)
        dcg += g[i] / log2((double)i + 2);
    free(g);
    return dcg;
}

static double metric(const splade_metric *m, const judged *j, size_t num_rel, const trec_entry *r, size_t nr)
{
    size_t depth = m->k > 0 && (size_t)m->k < nr ? (size_t)m->k : nr;
    double dcg = 0, hits = 0, ap = 0;
    for (size_t i = 0; i < depth; i++) {
        double rel = relevance(j, r[i].doc);
        if (rel >= 1) {
            hits++;
            ap += hits / (double)(i + 1);
            if (m->kind == SPLADE_METRIC_RR)
                return 1.0 / (double)(i + 1);
        }
        if (rel > 0)
            dcg += rel / log2((double)i + 2);
    }
    switch (m->kind) {
    case SPLADE_METRIC_NDCG: {
        double ideal = ideal_dcg(j, m->k);
        return ideal > 0 ? dcg / ideal : 0;
    }
    case SPLADE_METRIC_RECALL: return hits / (double)num_rel;
    case SPLADE_METRIC_P: return hits / (double)m->k;
    case SPLADE_METRIC_MAP: return ap / (double)num_rel;
    default: return 0;
    }
}

/* Qrels of qid (binary search over the qid-sorted qrels). */
static judged find_judged(const splade_trec_file *q, const char *qid)
{
    size_t lo = 0, hi = q->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (strcmp(q->e[mid].qid, qid) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < q->n && !strcmp(q->e[end].qid, qid))
        end++;
    return (judged){q->e + lo, end - lo};
}

static int alloc_result(splade_eval_result *out, int nm, size_t max_q)
{
    memset(out, 0, sizeof *out);
    out->n_metrics = nm;
    out->mean = calloc((size_t)nm, sizeof *out->mean);
    out->qids = malloc((max_q + 1) * sizeof *out->qids);
    out->per_query = malloc((max_q + 1) * (size_t)nm * sizeof *out->per_query);
    if (!out->mean || !out->qids || !out->per_query) {
        splade_eval_result_free(out);
        return splade_fail(SPLADE_ERR_NOMEM, "evaluation of %zu queries", max_q);
    }
    return SPLADE_OK;
}

int splade_evaluate(const splade_trec_file *qrels, const splade_trec_file *run, const splade_metric *m, int nm,
                    splade_eval_result *out)
{
    int rc = alloc_result(out, nm, run->n);
    if (rc < 0)
        return rc;
    for (size_t s = 0, e; s < run->n; s = e) {
        for (e = s + 1; e < run->n && !strcmp(run->e[e].qid, run->e[s].qid);)
            e++;
        judged j = find_judged(qrels, run->e[s].qid);
        size_t num_rel = 0;
        for (size_t i = 0; i < j.n; i++)
            num_rel += j.e[i].score >= 1;
        if (!num_rel)
            continue; /* no relevant document: not evaluated (see eval.h) */
        double *row = out->per_query + (size_t)out->n_queries * (size_t)nm;
        for (int i = 0; i < nm; i++) {
            row[i] = metric(&m[i], &j, num_rel, run->e + s, e - s);
            out->mean[i] += row[i];
        }
        out->qids[out->n_queries++] = run->e[s].qid;
    }
    for (int i = 0; i < nm && out->n_queries; i++)
        out->mean[i] /= out->n_queries;
    return SPLADE_OK;
}

void splade_eval_result_free(splade_eval_result *r)
{
    free(r->mean);
    free(r->qids);
    free(r->per_query);
    memset(r, 0, sizeof *r);
}
