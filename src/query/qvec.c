/* Query vector quantization (same 8-bit rule as documents, over the query's own maximum). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "splade.h"
#include "splade/query.h"

typedef struct {
    int32_t t;
    float w;
} pair;

static int by_term(const void *a, const void *b)
{
    int32_t x = ((const pair *)a)->t, y = ((const pair *)b)->t;
    return (x > y) - (x < y);
}

/* Valid pairs, sorted by term, repeats summed; returns the count. */
static int32_t merge_pairs(const int32_t *terms, const float *weights, int32_t n, uint32_t n_terms, pair *p)
{
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (terms[i] >= 0 && (uint32_t)terms[i] < n_terms && weights[i] > 0 && isfinite(weights[i]))
            p[m++] = (pair){terms[i], weights[i]};
    qsort(p, (size_t)m, sizeof *p, by_term);
    int32_t u = 0;
    for (int32_t i = 0; i < m; i++) {
        if (u > 0 && p[u - 1].t == p[i].t)
            p[u - 1].w += p[i].w;
        else
            p[u++] = p[i];
    }
    return u;
}

int splade_qvec_build(const int32_t *terms, const float *weights, int32_t n, uint32_t n_terms,
                      splade_qvec *out)
{
    memset(out, 0, sizeof *out);
    if (n < 0 || (n > 0 && (!terms || !weights)))
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_qvec_build: bad arguments");
    pair *p = malloc(((size_t)n + 1) * sizeof *p);
    out->terms = malloc(((size_t)n + 1) * sizeof *out->terms);
    out->impacts = malloc((size_t)n + 1);
    if (!p || !out->terms || !out->impacts) {
        free(p);
        splade_qvec_free(out);
        return splade_fail(SPLADE_ERR_NOMEM, "query of %d terms", n);
    }
    int32_t u = merge_pairs(terms, weights, n, n_terms, p);
    for (int32_t i = 0; i < u; i++)
        if (p[i].w > out->query_max)
            out->query_max = p[i].w;
    for (int32_t i = 0; i < u; i++) {
        out->terms[i] = p[i].t;
        out->impacts[i] = splade_quantize(p[i].w, out->query_max);
    }
    out->n = u;
    free(p);
    return SPLADE_OK;
}

void splade_qvec_free(splade_qvec *q)
{
    if (!q)
        return;
    free(q->terms);
    free(q->impacts);
    memset(q, 0, sizeof *q);
}

double splade_hit_score(const splade_index *ix, const splade_qvec *q, uint32_t score)
{
    return (double)score * splade_index_get_info(ix)->doc_scale * (q->query_max / 255.0);
}
