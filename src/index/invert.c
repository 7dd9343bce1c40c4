/* Forward vectors -> quantized, block-compressed postings (docs/FORMAT.md, "Postings"). */
#include <stdlib.h>
#include <string.h>

#include "index/builder_internal.h"
#include "index/postings.h"
#include "splade.h"

static float global_max(const splade_index_builder *b)
{
    float m = 0;
    for (uint64_t i = 0; i < b->fn; i++)
        if (b->fweights[i] > m)
            m = b->fweights[i];
    return m;
}

/* Postings of every term, grouped by term (CSR): docs ascending because documents are
 * scattered in id order. start has n_terms + 1 entries. */
typedef struct {
    uint64_t *start;
    uint32_t *docs;
    uint8_t *imps;
} csr;

static int scatter(const splade_index_builder *b, const int32_t *remap, float max, csr *c)
{
    int32_t T = b->n_terms;
    c->start = calloc((size_t)T + 1, sizeof *c->start);
    c->docs = malloc((b->fn ? b->fn : 1) * sizeof *c->docs);
    c->imps = malloc(b->fn ? b->fn : 1);
    uint64_t *cur = malloc(((size_t)T + 1) * sizeof *cur);
    if (!c->start || !c->docs || !c->imps || !cur) {
        free(cur);
        return splade_fail(SPLADE_ERR_NOMEM, "postings of %llu entries", (unsigned long long)b->fn);
    }
    for (uint64_t i = 0; i < b->fn; i++)
        c->start[(remap ? remap[b->fterms[i]] : b->fterms[i]) + 1]++;
    for (int32_t t = 0; t < T; t++)
        c->start[t + 1] += c->start[t];
    memcpy(cur, c->start, (size_t)T * sizeof *cur);
    for (uint32_t d = 0; d < b->ids.n; d++) {
        const int32_t *terms = b->fterms + b->fwd_off[d];
        const float *w = b->fweights + b->fwd_off[d];
        for (uint32_t i = 0; i < b->fwd_len[d]; i++) {
            uint64_t p = cur[remap ? remap[terms[i]] : terms[i]]++;
            c->docs[p] = d;
            c->imps[p] = splade_quantize(w[i], max);
        }
    }
    free(cur);
    return SPLADE_OK;
}

static int encode_terms(const csr *c, int32_t T, splade_inverted *inv)
{
    uint64_t nb = 0;
    for (int32_t t = 0; t < T; t++)
        nb += (c->start[t + 1] - c->start[t] + SPLADE_BLOCK_SIZE - 1) / SPLADE_BLOCK_SIZE;
    size_t cap = 16 + nb * splade_block_max_bytes(SPLADE_BLOCK_SIZE);
    inv->terms = calloc((uint32_t)T + 1u, sizeof *inv->terms);
    inv->blocks = malloc((nb ? nb : 1) * sizeof *inv->blocks);
    inv->postings = malloc(cap);
    if (!inv->terms || !inv->blocks || !inv->postings)
        return splade_fail(SPLADE_ERR_NOMEM, "encoded postings of %zu bytes", cap);
    size_t pos = 0;
    uint64_t bi = 0;
    for (int32_t t = 0; t < T; t++) {
        uint64_t s = c->start[t], e = c->start[t + 1];
        splade_term_entry *te = &inv->terms[t];
        te->first_block = bi;
        te->n_postings = (uint32_t)(e - s);
        inv->n_terms_used += e > s;
        uint32_t prev = 0;
        for (uint64_t p = s; p < e; p += SPLADE_BLOCK_SIZE, bi++) {
            uint32_t n = (uint32_t)(e - p < SPLADE_BLOCK_SIZE ? e - p : SPLADE_BLOCK_SIZE);
            splade_block_entry *be = &inv->blocks[bi];
            memset(be, 0, sizeof *be);
            be->offset = pos;
            be->last_doc = c->docs[p + n - 1];
            for (uint32_t i = 0; i < n; i++)
                if (c->imps[p + i] > be->max_impact)
                    be->max_impact = c->imps[p + i];
            if (be->max_impact > te->max_impact)
                te->max_impact = be->max_impact;
            pos += splade_block_encode(c->docs + p, c->imps + p, n, prev, inv->postings + pos);
            prev = be->last_doc;
        }
    }
    memset(inv->postings + pos, 0, 16);
    inv->postings_len = pos + 16;
    inv->n_blocks = nb;
    return SPLADE_OK;
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

static const strtab *sort_vocab_tab;

static int cmp_token(const void *pa, const void *pb)
{
    size_t la, lb;
    const char *a = strtab_get(sort_vocab_tab, *(const int32_t *)pa, &la);
    const char *b = strtab_get(sort_vocab_tab, *(const int32_t *)pb, &lb);
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
    sort_vocab_tab = &b->vocab; /* qsort has no context argument; the build is single-threaded here */
    qsort(order, (size_t)T, sizeof *order, cmp_token);
    for (int32_t i = 0; i < T; i++)
        remap[order[i]] = i;
    *order_out = order;
    *remap_out = remap;
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
    float max = global_max(b);
    out->doc_scale = max > 0 ? max / 255.0f : 0;
    out->n_postings = b->fn;
    out->vocab_order = order;
    csr c = {0};
    rc = scatter(b, remap, max, &c);
    free(remap);
    if (rc == 0)
        rc = encode_terms(&c, b->n_terms, out);
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
    free(inv->postings);
    free(inv->vocab_order);
    memset(inv, 0, sizeof *inv);
}
