/* Forward vectors -> quantized, block-compressed postings (docs/FORMAT.md, "Postings"). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/fail.h"
#include "index/builder_internal.h"
#include "index/invert_internal.h"
#include "index/reorder.h"
#include "splade.h"

int splade_build_threads(int requested, uint64_t n_postings)
{
    long n = requested > 0 ? requested : sysconf(_SC_NPROCESSORS_ONLN);
    if (n_postings < (1u << 16))
        n = 1; /* small collections: thread start-up costs more than it saves */
    return n < 1 ? 1 : n > SPLADE_MAX_THREADS ? SPLADE_MAX_THREADS : (int)n;
}

static int check_vectors(const splade_index_builder *b)
{
    for (uint32_t d = 0; d < b->ids.n; d++)
        if (b->fwd_off[d] == NO_VECTOR) {
            size_t len;
            const char *id = strtab_get(&b->ids, d, &len);
            return splade_fail(SPLADE_ERR_INVALID_ARG, "document \"%.*s\" has no vector", (int)len, id);
        }
    return SPLADE_OK;
}

static int cmp_token(const void *pa, const void *pb, void *vocab)
{
    size_t la, lb;
    const char *a = strtab_get(vocab, *(const int32_t *)pa, &la);
    const char *b = strtab_get(vocab, *(const int32_t *)pb, &lb);
    int c = memcmp(a, b, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

static int sorted_vocab(const splade_index_builder *b, int32_t **order_out, int32_t **remap_out)
{
    int32_t T = b->n_terms;
    int32_t *order = malloc(((size_t)T + 1) * sizeof *order);
    int32_t *remap = malloc(((size_t)T + 1) * sizeof *remap);
    if (!order || !remap) {
        free(order);
        free(remap);
        return splade_fail(SPLADE_ERR_NOMEM, "vocabulary order");
    }
    for (int32_t t = 0; t < T; t++)
        order[t] = t;
    /* qsort_r, not a static for the comparator: builders on several threads sort at once */
    qsort_r(order, (size_t)T, sizeof *order, cmp_token, (void *)&b->vocab);
    for (int32_t i = 0; i < T; i++)
        remap[order[i]] = i;
    *order_out = order;
    *remap_out = remap;
    return SPLADE_OK;
}

/* DOCSEQ: each internal id's sequence offset (its input position), so that
 * ties are broken by input order whatever the reordering (docs/FORMAT.md, "Document sequence"). */
static int doc_sequence(const splade_index_builder *b, splade_inverted *out)
{
    out->docseq = malloc(((size_t)b->ids.n + 1) * sizeof *out->docseq);
    if (!out->docseq)
        return splade_fail(SPLADE_ERR_NOMEM, "document sequence of %u documents", b->ids.n);
    for (uint32_t i = 0; i < b->ids.n; i++)
        out->docseq[i] = out->doc_order[i];
    return SPLADE_OK;
}

int splade_invert(const splade_index_builder *b, splade_inverted *out)
{
    memset(out, 0, sizeof *out);
    int rc = check_vectors(b);
    if (rc < 0)
        return rc;
    int32_t *order = NULL, *remap = NULL;
    if (b->dynamic_vocab && (rc = sorted_vocab(b, &order, &remap)) < 0)
        return rc;
    out->n_postings = b->fn;
    out->vocab_order = order;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int P = splade_build_threads(b->threads, b->fn);
    if (!b->keep_order && b->ids.n >= SPLADE_REORDER_MIN_DOCS && (rc = splade_reorder_docs(b, P, &out->doc_order)) < 0) {
        free(remap);
        splade_inverted_free(out);
        return rc;
    }
    if (out->doc_order && (rc = doc_sequence(b, out)) < 0) {
        free(remap);
        splade_inverted_free(out);
        return rc;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    out->reorder_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    csr c = {0};
    float max = 0;
    rc = splade_scatter(b, remap, out->doc_order, P, &c, b->fixed_scale > 0 ? splade_scale_max(b->fixed_scale) : 0,
                        &max, &out->n_clipped);
    out->doc_scale = b->fixed_scale > 0 ? b->fixed_scale : max > 0 ? max / 255.0f : 0;
    free(remap);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    out->scatter_s = (double)(t0.tv_sec - t1.tv_sec) + (double)(t0.tv_nsec - t1.tv_nsec) * 1e-9;
    if (rc == 0)
        rc = splade_encode_terms(&c, b->n_terms, b->ids.n, P, out);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    out->encode_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    free(c.start);
    free(c.docs);
    free(c.imps);
    if (rc < 0)
        splade_inverted_free(out);
    return rc;
}

void splade_inverted_free(splade_inverted *inv)
{
    free(inv->terms);
    free(inv->blocks);
    for (int j = 0; j < inv->n_parts; j++) {
        free(inv->post_part[j]);
        free(inv->rng_part[j]);
    }
    free(inv->range_terms);
    free(inv->vocab_order);
    free(inv->doc_order);
    free(inv->docseq);
    memset(inv, 0, sizeof *inv);
}
