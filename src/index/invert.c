/* Forward vectors -> quantized, block-compressed postings (docs/FORMAT.md, "Postings"). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "index/builder_internal.h"
#include "index/postings.h"
#include "index/quantize.h"
#include "index/reorder.h"
#include "index/svb.h"
#include "splade.h"

/* A large buffer on transparent huge pages where the kernel allows them (madvise mode): the
 * inversion touches over a GB of fresh memory per million documents, and faulting it in 4 KB pages
 * cost more CPU than the radix passes themselves (perf: clear_page + fault handling). free()able. */
static void *big_alloc(size_t n)
{
    void *p = NULL;
    size_t huge = (size_t)2 << 20;
    if (n < huge)
        return malloc(n ? n : 1);
    if (posix_memalign(&p, huge, n) != 0)
        return NULL;
    madvise(p, (n + huge - 1) & ~(huge - 1), MADV_HUGEPAGE); /* a hint: failure is harmless */
    return p;
}

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

/* Reordered documents are read from scattered places of the forward arrays: fetch a later
 * document's terms and weights ahead (perf: a quarter of the pass waited on those loads). */
#define PREFETCH_DOCS 4

static void prefetch_doc(const splade_index_builder *b, uint32_t d)
{
    const char *t = (const char *)(b->fterms + b->fwd_off[d]), *w = (const char *)(b->fweights + b->fwd_off[d]);
    for (size_t o = 0; o < (size_t)b->fwd_len[d] * 4; o += 64) {
        __builtin_prefetch(t + o);
        __builtin_prefetch(w + o);
    }
}

/* Scattering postings straight into 30k per-term lists costs a cache miss per posting (the lists'
 * current lines do not fit in cache). Two radix passes keep few output streams open each: pass 1
 * appends each posting to its bucket (a run of at most 256 consecutive terms and BUCKET_POSTINGS
 * postings, laid out where those terms' lists will be), pass 2 splits each bucket, through a cached
 * scratch copy, into its terms' lists. Documents are visited in internal-id order and both passes
 * are stable, so every list comes out ascending. Memory: 6 bytes per posting plus the scratch, all
 * of it touched once (fresh pages cost as much as the passes on our VMs). */
#define BUCKET_POSTINGS (4u << 20)

typedef struct {
    uint32_t n, *first; /* bucket i holds terms [first[i], first[i + 1]) */
    uint32_t *of_term;  /* bucket << 8 | term - first term of the bucket */
    uint64_t largest;   /* postings in the largest bucket */
} buckets;

static int make_buckets(const csr *c, uint32_t T, buckets *k)
{
    k->first = malloc(((size_t)T + 2) * sizeof *k->first);
    k->of_term = malloc(((size_t)T + 1) * sizeof *k->of_term);
    if (!k->first || !k->of_term)
        return splade_fail(SPLADE_ERR_NOMEM, "inversion buckets");
    k->n = 0;
    k->largest = 0;
    for (uint32_t t = 0; t < T;) {
        uint32_t u = t + 1;
        while (u < T && u - t < 256 && c->start[u + 1] - c->start[t] <= BUCKET_POSTINGS)
            u++;
        for (uint32_t x = t; x < u; x++)
            k->of_term[x] = k->n << 8 | (x - t);
        k->largest = c->start[u] - c->start[t] > k->largest ? c->start[u] - c->start[t] : k->largest;
        k->first[k->n++] = t;
        t = u;
    }
    k->first[k->n] = T;
    return SPLADE_OK;
}

/* Pass 1: docs/imps/low (term within its bucket) at the bucket's next slot; q: a document's
 * quantized weights (scratch of the longest document). */
static void bucket_pass(const splade_index_builder *b, const int32_t *remap, const uint32_t *order, float max,
                        const buckets *k, uint64_t *cur, uint8_t *q, uint8_t *low, csr *c)
{
    for (uint32_t i = 0; i < k->n; i++)
        cur[i] = c->start[k->first[i]];
    for (uint32_t nd = 0; nd < b->ids.n; nd++) {
        uint32_t d = order ? order[nd] : nd; /* internal id nd */
        const int32_t *terms = b->fterms + b->fwd_off[d];
        if (order && nd + PREFETCH_DOCS < b->ids.n)
            prefetch_doc(b, order[nd + PREFETCH_DOCS]);
        splade_quantize_many(b->fweights + b->fwd_off[d], b->fwd_len[d], max, q);
        for (uint32_t i = 0; i < b->fwd_len[d]; i++) {
            uint32_t x = k->of_term[remap ? remap[terms[i]] : terms[i]];
            uint64_t p = cur[x >> 8]++;
            c->docs[p] = nd;
            c->imps[p] = q[i];
            low[p] = (uint8_t)x;
        }
    }
}

/* Pass 2: each bucket, copied to scratch (sd/si/sl), back into its terms' lists. */
static void split_pass(const buckets *k, uint64_t *cur, const uint8_t *low, uint32_t *sd, uint8_t *si,
                       uint8_t *sl, csr *c)
{
    for (uint32_t i = 0; i < k->n; i++) {
        uint64_t s = c->start[k->first[i]], n = c->start[k->first[i + 1]] - s;
        memcpy(sd, c->docs + s, n * sizeof *sd);
        memcpy(si, c->imps + s, n);
        memcpy(sl, low + s, n);
        uint64_t *at = cur + k->first[i];
        for (uint32_t t = k->first[i]; t < k->first[i + 1]; t++)
            cur[t] = c->start[t];
        for (uint64_t j = 0; j < n; j++) {
            uint64_t p = at[sl[j]]++;
            c->docs[p] = sd[j];
            c->imps[p] = si[j];
        }
    }
}

/* Postings of every term, grouped by term (CSR). */
static int scatter(const splade_index_builder *b, const int32_t *remap, const uint32_t *order, float max, csr *c)
{
    size_t T = (size_t)(uint32_t)b->n_terms, n = b->fn ? b->fn : 1;
    uint32_t longest_doc = 0;
    c->start = calloc(T + 1, sizeof *c->start);
    if (!c->start)
        return splade_fail(SPLADE_ERR_NOMEM, "postings of %llu entries", (unsigned long long)b->fn);
    for (uint64_t i = 0; i < b->fn; i++)
        c->start[(remap ? remap[b->fterms[i]] : b->fterms[i]) + 1]++;
    for (size_t t = 0; t < T; t++)
        c->start[t + 1] += c->start[t];
    for (uint32_t d = 0; d < b->ids.n; d++)
        longest_doc = b->fwd_len[d] > longest_doc ? b->fwd_len[d] : longest_doc;
    buckets k = {0};
    int rc = make_buckets(c, (uint32_t)T, &k);
    size_t sn = (size_t)k.largest + 1;
    c->docs = big_alloc(n * sizeof *c->docs);
    c->imps = big_alloc(n);
    uint8_t *low = big_alloc(n), *q = malloc((size_t)longest_doc + 1), *si = malloc(sn), *sl = malloc(sn);
    uint32_t *sd = malloc(sn * sizeof *sd);
    uint64_t *cur = malloc((T + 1) * sizeof *cur);
    if (rc == 0 && (!c->docs || !c->imps || !low || !q || !si || !sl || !sd || !cur))
        rc = splade_fail(SPLADE_ERR_NOMEM, "postings of %llu entries", (unsigned long long)b->fn);
    if (rc == 0) {
        bucket_pass(b, remap, order, max, &k, cur, q, low, c);
        split_pass(&k, cur, low, sd, si, sl, c);
    }
    free(k.first);
    free(k.of_term);
    free(low);
    free(q);
    free(si);
    free(sl);
    free(sd);
    free(cur);
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
static void encode_ranges(const csr *c, int32_t t, uint32_t total, uint32_t *ids, uint8_t *max, splade_inverted *inv,
                          size_t *pos)
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
    if (splade_ranges_dense(n, total)) { /* one maximum per range, 0 where absent: SIMD-summed by BMP */
        inv->range_terms[t].flags = SPLADE_RANGES_DENSE;
        memset(inv->ranges + *pos, 0, total);
        for (uint32_t i = 0; i < n; i++)
            inv->ranges[*pos + ids[i]] = max[i];
        *pos += total;
        return;
    }
    memcpy(inv->ranges + *pos, max, n);
    *pos += n + splade_svb_delta_encode(ids, n, 0, inv->ranges + *pos + n);
}

static int encode_terms(const csr *c, int32_t T, uint32_t n_docs, splade_inverted *inv)
{
    uint32_t total = (uint32_t)(((uint64_t)n_docs + (1u << SPLADE_RANGE_SHIFT) - 1) >> SPLADE_RANGE_SHIFT);
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
    inv->postings = big_alloc(cap);
    inv->range_terms = calloc((uint32_t)T + 1u, sizeof *inv->range_terms);
    inv->ranges = big_alloc(rcap);
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
            encode_ranges(c, t, total, ids, max, inv, &rpos);
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
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!b->keep_order && b->ids.n >= SPLADE_REORDER_MIN_DOCS && (rc = splade_reorder_docs(b, b->threads, &out->doc_order)) < 0) {
        free(remap);
        splade_inverted_free(out);
        return rc;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    out->reorder_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    csr c = {0};
    rc = scatter(b, remap, out->doc_order, max, &c);
    free(remap);
    if (rc == 0)
        rc = encode_terms(&c, b->n_terms, b->ids.n, out);
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
