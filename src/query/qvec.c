/* Query vector quantization (same 8-bit rule as documents, over the query's own maximum). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "index/format.h"
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
            p[u - 1].w = fminf(p[u - 1].w + p[i].w, FLT_MAX); /* two huge repeats: no inf (NaN impacts) */
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
    /* A term the index does not know still sets the scale: a query's impacts must not depend on the
     * index's vocabulary (a segmented --vectors index keeps the tokens of deleted documents until a
     * merge; docs/FORMAT.md, "Quantization and scores"). */
    for (int32_t i = 0; i < n; i++)
        if ((terms[i] < 0 || (uint32_t)terms[i] >= n_terms) && weights[i] > out->query_max && isfinite(weights[i]))
            out->query_max = weights[i];
    uint64_t sum = 0;
    for (int32_t i = 0; i < u; i++) {
        out->terms[i] = p[i].t;
        out->impacts[i] = splade_quantize(p[i].w, out->query_max);
        sum += out->impacts[i];
    }
    out->n = u;
    free(p);
    /* Scores are uint32 sums of query x document impacts, at most 255 x (sum of query impacts).
     * Past 2^32 (possible only when a query has more than 66,052 terms: vocabularies such as
     * XLM-R's 250,002), scale the query impacts down instead of letting scores wrap around; the
     * printed scores keep their size through query_max. */
    const uint64_t limit = UINT32_MAX / 255;
    for (int round = 0; sum > limit && round < 8; round++) {
        double f = (double)limit / (double)sum;
        sum = 0;
        for (int32_t i = 0; i < u; i++) {
            double q = floor(out->impacts[i] * f);
            out->impacts[i] = q < 1 ? 1 : (uint8_t)q;
            sum += out->impacts[i];
        }
        out->query_max = (float)(out->query_max / f);
    }
    if (sum > limit) {
        splade_qvec_free(out);
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "query of %d terms: scores would overflow 32 bits", u);
    }
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
