/* Sparse vector helpers shared by the encoder (dense -> sparse) and the index. */
#include "common/fail.h"
#include "splade/sparse.h"
#include "splade.h"

#include <stdlib.h>
#include <string.h>

void splade_sparse_free(splade_sparse *v)
{
    if (!v)
        return;
    free(v->terms);
    free(v->weights);
    memset(v, 0, sizeof *v);
}

typedef struct {
    float w;
    int32_t t;
} term_weight;

/* Descending weight, then ascending term id: a total order, so top-k is deterministic. */
static int by_weight_desc(const void *pa, const void *pb)
{
    const term_weight *a = pa, *b = pb;
    if (a->w != b->w)
        return a->w > b->w ? -1 : 1;
    return (a->t > b->t) - (a->t < b->t);
}

static int by_term_asc(const void *pa, const void *pb)
{
    const term_weight *a = pa, *b = pb;
    return (a->t > b->t) - (a->t < b->t);
}

/* v from the n pairs of tw (term order): the top_k largest (weight descending, then lower term id)
 * when top_k > 0 and n > top_k, back in term order. Frees tw. */
static int finish(term_weight *tw, int32_t n, int32_t top_k, splade_sparse *v)
{
    if (top_k > 0 && n > top_k) {
        qsort(tw, (size_t)n, sizeof *tw, by_weight_desc);
        n = top_k;
        qsort(tw, (size_t)n, sizeof *tw, by_term_asc);
    }
    v->terms = malloc((size_t)(n ? n : 1) * sizeof *v->terms);
    v->weights = malloc((size_t)(n ? n : 1) * sizeof *v->weights);
    if (!v->terms || !v->weights) {
        free(tw);
        splade_sparse_free(v);
        return splade_fail(SPLADE_ERR_NOMEM, "sparse vector of %d terms", (int)n);
    }
    for (int32_t i = 0; i < n; i++) {
        v->terms[i] = tw[i].t;
        v->weights[i] = tw[i].w;
    }
    v->n = n;
    free(tw);
    return SPLADE_OK;
}

int splade_sparse_from_dense(const float *dense, int32_t V, float threshold, int32_t top_k,
                             splade_sparse *v)
{
    if (!dense || !v || V < 0)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_sparse_from_dense: bad arguments");
    memset(v, 0, sizeof *v);
    int32_t n = 0;
    for (int32_t i = 0; i < V; i++)
        n += dense[i] > threshold && dense[i] > 0.0f;
    term_weight *tw = malloc((size_t)(n ? n : 1) * sizeof *tw);
    if (!tw)
        return splade_fail(SPLADE_ERR_NOMEM, "sparse vector of %d terms", (int)n);
    int32_t k = 0;
    for (int32_t i = 0; i < V; i++)
        if (dense[i] > threshold && dense[i] > 0.0f)
            tw[k++] = (term_weight){dense[i], i};
    return finish(tw, n, top_k, v);
}

int splade_sparse_from_pairs(const int32_t *terms, const float *weights, int32_t n, int32_t top_k,
                             splade_sparse *v)
{
    if (!v || n < 0 || (n > 0 && (!terms || !weights)))
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_sparse_from_pairs: bad arguments (n=%d)", (int)n);
    memset(v, 0, sizeof *v);
    term_weight *tw = malloc((size_t)(n ? n : 1) * sizeof *tw);
    if (!tw)
        return splade_fail(SPLADE_ERR_NOMEM, "sparse vector of %d terms", (int)n);
    for (int32_t i = 0; i < n; i++)
        tw[i] = (term_weight){weights[i], terms[i]};
    return finish(tw, n, top_k, v);
}

double splade_sparse_dot(const splade_sparse *a, const splade_sparse *b)
{
    double s = 0.0;
    int32_t i = 0, j = 0;
    while (i < a->n && j < b->n) {
        if (a->terms[i] < b->terms[j])
            i++;
        else if (a->terms[i] > b->terms[j])
            j++;
        else
            s += (double)a->weights[i++] * b->weights[j++];
    }
    return s;
}
