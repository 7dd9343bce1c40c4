/* Each live document's stored vector, de-quantized (include/splade/index.h, splade_index_doc_vectors):
 * the postings of one segment file inverted back into per-document vectors (forward.c, the decoding
 * merge.c does; terms ascending per document), then handed out in sequence order with the opened index's term ids. An impact i becomes the
 * weight i × doc_scale (docs/FORMAT.md, "Quantization and scores"). */
#include <stdlib.h>

#include "common/fail.h"
#include "index/forward.h"
#include "index/reader_internal.h"
#include "index/segment.h"
#include "splade/index.h"

typedef struct {
    uint64_t seq;
    uint32_t doc;
} seq_doc;

static int by_seq(const void *a, const void *b)
{
    uint64_t x = ((const seq_doc *)a)->seq, y = ((const seq_doc *)b)->seq;
    return (x > y) - (x < y);
}

/* The opened index's term id of each of the file's terms (a --vectors segment has its own sorted
 * vocabulary; the snapshot's remap goes the other way). NULL: the same ids. */
static int file_to_index_terms(const splade_index *ix, const splade_segment *g, int32_t **out)
{
    *out = NULL;
    if (!g->remap)
        return SPLADE_OK;
    int32_t *m = malloc(((size_t)g->ix->info.n_terms + 1) * sizeof *m);
    if (!m)
        return splade_fail(SPLADE_ERR_NOMEM, "vocabulary map");
    for (uint32_t t = 0; t < ix->info.n_terms; t++)
        if (g->remap[t] >= 0)
            m[g->remap[t]] = (int32_t)t;
    *out = m;
    return SPLADE_OK;
}

static int emit_segment(const splade_index *ix, const splade_segment *g, splade_doc_vector_fn fn, void *user)
{
    splade_forward *f = NULL;
    int32_t *map = NULL, *terms = NULL;
    float *weights = NULL;
    seq_doc *order = malloc(((size_t)g->n_live + 1) * sizeof *order);
    int rc = !order ? splade_fail(SPLADE_ERR_NOMEM, "document order")
                    : !(f = splade_forward_build(g->ix)) ? SPLADE_ERR_NOMEM : SPLADE_OK;
    if (!rc)
        rc = file_to_index_terms(ix, g, &map);
    uint32_t k = 0, widest = 0;
    for (uint32_t d = 0; !rc && d < g->n_docs; d++) {
        uint32_t len = (uint32_t)(f->off[d + 1] - f->off[d]);
        widest = len > widest ? len : widest;
        if (!splade_segment_deleted(g, d))
            order[k++] = (seq_doc){splade_segment_seq(g, d), d};
    }
    if (!rc && (!(terms = malloc(((size_t)widest + 1) * sizeof *terms)) ||
                !(weights = malloc(((size_t)widest + 1) * sizeof *weights))))
        rc = splade_fail(SPLADE_ERR_NOMEM, "a vector of %u terms", widest);
    if (!rc)
        qsort(order, k, sizeof *order, by_seq);
    float scale = ix->info.doc_scale;
    for (uint32_t i = 0; !rc && i < k; i++) {
        uint32_t d = order[i].doc;
        uint64_t a = f->off[d], e = f->off[d + 1];
        for (uint64_t p = a; p < e; p++) {
            terms[p - a] = map ? map[splade_forward_term(f, p)] : splade_forward_term(f, p);
            weights[p - a] = (float)f->imp[p] * scale;
        }
        rc = fn(user, splade_segment_global(g, d), terms, weights, (int32_t)(e - a));
    }
    free(order);
    free(map);
    free(terms);
    free(weights);
    splade_forward_free(f);
    return rc;
}

int splade_index_doc_vectors(const splade_index *ix, splade_doc_vector_fn fn, void *user)
{
    if (!ix || !fn)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "doc_vectors: NULL index or callback");
    for (int s = 0; s < splade_index_n_segments(ix); s++) {
        int rc = emit_segment(ix, splade_index_segment(ix, s), fn, user);
        if (rc)
            return rc;
    }
    return SPLADE_OK;
}
