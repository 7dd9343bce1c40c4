/* Document reordering at build time (docs/FORMAT.md, "Document order"): documents that share their
 * strongest term get consecutive internal ids. BMP (query/bmp.c) bounds each range of 64
 * consecutive ids by the per-term maxima inside it; when a range's documents are about the same
 * thing, a query's strong ranges are few and the others' bounds fall below the k-th score, so far
 * fewer ranges are scored. Recursive graph bisection orders better but costs minutes per million
 * documents; this is one counting sort (linear, about 0.1 s per million documents). */
#include "index/reorder.h"

#include <stdlib.h>

#include "splade.h"

/* The document's key term: its largest weight (first such term on ties); n_terms if empty. */
static uint32_t key_term(const splade_index_builder *b, uint32_t d)
{
    const int32_t *t = b->fterms + b->fwd_off[d];
    const float *w = b->fweights + b->fwd_off[d];
    uint32_t key = (uint32_t)b->n_terms;
    float best = 0;
    for (uint32_t i = 0; i < b->fwd_len[d]; i++)
        if (w[i] > best || (w[i] == best && (uint32_t)t[i] < key)) {
            best = w[i];
            key = (uint32_t)t[i];
        }
    return key;
}

int splade_reorder_docs(const splade_index_builder *b, uint32_t **order_out)
{
    uint32_t n = b->ids.n, T = (uint32_t)b->n_terms;
    uint32_t *order = malloc(((size_t)n + 1) * sizeof *order);
    uint32_t *key = malloc(((size_t)n + 1) * sizeof *key);
    uint32_t *start = calloc((size_t)T + 2, sizeof *start);
    if (!order || !key || !start) {
        free(order);
        free(key);
        free(start);
        return splade_fail(SPLADE_ERR_NOMEM, "document order of %u documents", n);
    }
    for (uint32_t d = 0; d < n; d++)
        start[(key[d] = key_term(b, d)) + 1]++;
    for (uint32_t t = 0; t <= T; t++)
        start[t + 1] += start[t];
    for (uint32_t d = 0; d < n; d++) /* stable: corpus order inside a key */
        order[start[key[d]]++] = d;
    free(key);
    free(start);
    *order_out = order;
    return SPLADE_OK;
}
