/* Forward vectors -> quantized, block-compressed postings (docs/FORMAT.md, "Postings"). */
#include <stdlib.h>
#include <string.h>

#include "index/builder_internal.h"
#include "index/postings.h"
#include "index/quantize.h"
#include "index/reorder.h"
#include "index/svb.h"
#include "splade.h"

static float global_max(const splade_index_builder *b)
{
    float m = 0;
    for (uint64_t i = 0; i < b->fn; i++)
        m = b->fweights[i] > m ? b->fweights[i] : m;
    return m;
}

/* Postings of every term, grouped by term (CSR): docs ascending because documents are
 * scattered in internal-id order. start has n_terms + 1 entries. */
typedef struct {
    uint64_t *start;
    uint32_t *docs;
    uint8_t *imps;
} csr;

/* Per-term staging buffers: postings are scattered into small per-term buffers that stay in cache
 * and are flushed 16 at a time, instead of one random write per posting into a list spread over
 * hundreds of megabytes (software write-combining; 10x faster inversion at 1M documents). */
#define STAGE 16

typedef struct {
    uint32_t *docs; /* [T × STAGE] */
    uint8_t *imps;
    uint8_t *fill;  /* [T] */
    uint64_t *cur;  /* [T]: next free slot of each term in the CSR arrays */
} stage;

static void flush_term(stage *g, csr *c, int32_t t, uint32_t n)
{
    memcpy(c->docs + g->cur[t], g->docs + (size_t)t * STAGE, n * sizeof *c->docs);
    memcpy(c->imps + g->cur[t], g->imps + (size_t)t * STAGE, n);
    g->cur[t] += n;
    g->fill[t] = 0;
}

/* imp: the quantized weight of every forward entry (same layout as fterms). */
static void scatter_docs(const splade_index_builder *b, const int32_t *remap, const uint32_t *order,
                         const uint8_t *imp, stage *g, csr *c)
{
    for (uint32_t nd = 0; nd < b->ids.n; nd++) {
        uint32_t d = order ? order[nd] : nd; /* internal id nd */
        const int32_t *terms = b->fterms + b->fwd_off[d];
        const uint8_t *q = imp + b->fwd_off[d];
        for (uint32_t i = 0; i < b->fwd_len[d]; i++) {
            int32_t t = remap ? remap[terms[i]] : terms[i];
            size_t slot = (size_t)t * STAGE + g->fill[t];
            g->docs[slot] = nd;
            g->imps[slot] = q[i];
            if (++g->fill[t] == STAGE)
                flush_term(g, c, t, STAGE); /* constant size: inlined copies */
        }
    }
    for (int32_t t = 0; t < b->n_terms; t++)
        flush_term(g, c, t, g->fill[t]);
}

/* Postings of every term, grouped by term (CSR): docs ascending because documents are
 * scattered in id order. */
static int scatter(const splade_index_builder *b, const int32_t *remap, const uint32_t *order, float max, csr *c)
{
    size_t T = (size_t)(uint32_t)b->n_terms;
    c->start = calloc(T + 1, sizeof *c->start);
    c->docs = malloc((b->fn ? b->fn : 1) * sizeof *c->docs);
    c->imps = malloc(b->fn ? b->fn : 1);
    uint8_t *imp = malloc(b->fn ? b->fn : 1);
    stage g = {malloc((T + 1) * STAGE * sizeof *g.docs), malloc((T + 1) * STAGE), calloc(T + 1, 1),
               malloc((T + 1) * sizeof *g.cur)};
    int rc = SPLADE_OK;
    if (!c->start || !c->docs || !c->imps || !imp || !g.docs || !g.imps || !g.fill || !g.cur) {
        rc = splade_fail(SPLADE_ERR_NOMEM, "postings of %llu entries", (unsigned long long)b->fn);
    } else {
        splade_quantize_many(b->fweights, b->fn, max, imp);
        for (uint64_t i = 0; i < b->fn; i++)
            c->start[(remap ? remap[b->fterms[i]] : b->fterms[i]) + 1]++;
        for (size_t t = 0; t < T; t++)
            c->start[t + 1] += c->start[t];
        memcpy(g.cur, c->start, T * sizeof *g.cur);
        scatter_docs(b, remap, order, imp, &g, c);
    }
    free(imp);
    free(g.docs);
    free(g.imps);
    free(g.fill);
    free(g.cur);
    return rc;
}

/* One term's blocks: BLOCKS entries from bi on, encoded bytes appended at *pos. */
static void encode_blocks(const csr *c, int32_t t, uint64_t bi, splade_inverted *inv, size_t *pos)
{
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
        be->offset = *pos;
        be->last_doc = c->docs[p + n - 1];
        uint8_t m = 0;
        for (uint32_t i = 0; i < n; i++)
            m = c->imps[p + i] > m ? c->imps[p + i] : m;
        be->max_impact = m;
        if (m > te->max_impact)
            te->max_impact = m;
        *pos += splade_block_encode(c->docs + p, c->imps + p, n, prev, inv->postings + *pos);
        prev = be->last_doc;
    }
}

/* One term's range maxima (docs/FORMAT.md, "Range maxima"): the doc-id ranges it occurs in and its
 * largest impact in each, appended at *pos; ids/max are scratch of the term's length. Done right
 * after the term's blocks, while its postings are still in cache. */
static void encode_ranges(const csr *c, int32_t t, uint32_t *ids, uint8_t *max, splade_inverted *inv, size_t *pos)
{
    uint32_t n = 0;
    for (uint64_t p = c->start[t]; p < c->start[t + 1]; p++) {
        uint32_t r = c->docs[p] >> SPLADE_RANGE_SHIFT;
        if (n && ids[n - 1] == r) {
            max[n - 1] = c->imps[p] > max[n - 1] ? c->imps[p] : max[n - 1];
        } else {
            ids[n] = r;
            max[n++] = c->imps[p];
        }
    }
    inv->range_terms[t] = (splade_range_term){.offset = *pos, .n_ranges = n};
    memcpy(inv->ranges + *pos, max, n);
    *pos += n + splade_svb_delta_encode(ids, n, 0, inv->ranges + *pos + n);
}

static int encode_terms(const csr *c, int32_t T, splade_inverted *inv)
{
    uint64_t nb = 0, longest = 0;
    for (int32_t t = 0; t < T; t++) {
        uint64_t len = c->start[t + 1] - c->start[t];
        nb += (len + SPLADE_BLOCK_SIZE - 1) / SPLADE_BLOCK_SIZE;
        longest = len > longest ? len : longest;
    }
    size_t cap = 16 + nb * splade_block_max_bytes(SPLADE_BLOCK_SIZE);
    size_t rcap = 16 + (size_t)c->start[T] * 6 + (size_t)T * 8; /* max + up to 5 coded bytes per entry */
    inv->terms = calloc((uint32_t)T + 1u, sizeof *inv->terms);
    inv->blocks = malloc((nb ? nb : 1) * sizeof *inv->blocks);
    inv->postings = malloc(cap);
    inv->range_terms = calloc((uint32_t)T + 1u, sizeof *inv->range_terms);
    inv->ranges = malloc(rcap);
    uint32_t *ids = malloc((longest + 1) * sizeof *ids);
    uint8_t *max = malloc(longest + 1);
    int rc = SPLADE_OK;
    if (!inv->terms || !inv->blocks || !inv->postings || !inv->range_terms || !inv->ranges || !ids || !max) {
        rc = splade_fail(SPLADE_ERR_NOMEM, "encoded postings of %zu bytes", cap + rcap);
    } else {
        size_t pos = 0, rpos = 0;
        uint64_t bi = 0;
        for (int32_t t = 0; t < T; t++) {
            encode_blocks(c, t, bi, inv, &pos);
            bi += (c->start[t + 1] - c->start[t] + SPLADE_BLOCK_SIZE - 1) / SPLADE_BLOCK_SIZE;
            encode_ranges(c, t, ids, max, inv, &rpos);
        }
        memset(inv->postings + pos, 0, 16);
        inv->postings_len = pos + 16;
        inv->n_blocks = nb;
        memset(inv->ranges + rpos, 0, 16);
        inv->ranges_len = rpos + 16;
    }
    free(ids);
    free(max);
    return rc;
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
    if (!b->keep_order && b->ids.n >= SPLADE_REORDER_MIN_DOCS && (rc = splade_reorder_docs(b, &out->doc_order)) < 0) {
        free(remap);
        splade_inverted_free(out);
        return rc;
    }
    csr c = {0};
    rc = scatter(b, remap, out->doc_order, max, &c);
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
    free(inv->range_terms);
    free(inv->ranges);
    free(inv->vocab_order);
    free(inv->doc_order);
    memset(inv, 0, sizeof *inv);
}
