/* The inversion's second phase (invert_internal.h): blocks, postings bytes and range maxima per
 * term (docs/FORMAT.md, "Postings", "Range maxima"). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "index/builder_internal.h"
#include "index/format.h"
#include "index/invert_internal.h"
#include "index/parallel.h"
#include "index/postings.h"
#include "index/svb.h"
#include "splade.h"

void splade_encode_list(const uint32_t *docs, const uint8_t *imps, uint64_t n, splade_block_entry *blocks,
                        splade_term_entry *te, uint8_t *out, size_t *pos)
{
    te->n_postings = (uint32_t)n;
    uint32_t prev = 0;
    for (uint64_t p = 0; p < n; p += SPLADE_BLOCK_SIZE, blocks++) {
        uint32_t k = (uint32_t)(n - p < SPLADE_BLOCK_SIZE ? n - p : SPLADE_BLOCK_SIZE);
        memset(blocks, 0, sizeof *blocks);
        blocks->offset = *pos;
        blocks->last_doc = docs[p + k - 1];
        uint8_t m = 0;
        for (uint32_t i = 0; i < k; i++)
            m = imps[p + i] > m ? imps[p + i] : m;
        blocks->max_impact = m;
        if (m > te->max_impact)
            te->max_impact = m;
        *pos += splade_block_encode(docs + p, imps + p, k, prev, out + *pos);
        prev = blocks->last_doc;
    }
}

/* One term's blocks: BLOCKS entries from bi on, encoded bytes appended at *pos of out (offsets
 * relative to out: the part's base is added once all parts are known). */
static uint32_t encode_blocks(const csr *c, int32_t t, uint64_t bi, splade_inverted *inv, uint8_t *out, size_t *pos)
{
    uint64_t s = c->start[t], e = c->start[t + 1];
    inv->terms[t].first_block = bi;
    splade_encode_list(c->docs + s, c->imps + s, e - s, inv->blocks + bi, &inv->terms[t], out, pos);
    return e > s;
}

void splade_encode_list_ranges(const uint32_t *docs, const uint8_t *imps, uint64_t len, uint32_t total, uint32_t *ids,
                               uint8_t *max, splade_range_term *rt, uint8_t *out, size_t *pos)
{
    uint32_t n = 0;
    for (uint64_t p = 0; p < len; p++) {
        uint32_t r = docs[p] >> SPLADE_RANGE_SHIFT;
        if (n && ids[n - 1] == r) {
            max[n - 1] = imps[p] > max[n - 1] ? imps[p] : max[n - 1];
        } else {
            ids[n] = r;
            max[n++] = imps[p];
        }
    }
    *rt = (splade_range_term){.offset = *pos, .n_ranges = n};
    if (splade_ranges_dense(n, total)) { /* one maximum per range, 0 where absent: SIMD-summed by BMP */
        rt->flags = SPLADE_RANGES_DENSE;
        memset(out + *pos, 0, total);
        for (uint32_t i = 0; i < n; i++)
            out[*pos + ids[i]] = max[i];
        *pos += total;
        return;
    }
    memcpy(out + *pos, max, n);
    *pos += n + splade_svb_delta_encode(ids, n, 0, out + *pos + n);
}

/* One term's range maxima, right after the term's blocks, while its postings are still in cache. */
static void encode_ranges(const csr *c, int32_t t, uint32_t total, uint32_t *ids, uint8_t *max, splade_inverted *inv,
                          uint8_t *out, size_t *pos)
{
    uint64_t s = c->start[t];
    splade_encode_list_ranges(c->docs + s, c->imps + s, c->start[t + 1] - s, total, ids, max, &inv->range_terms[t],
                              out, pos);
}

/* Terms [t0, t1) encoded into their own POSTINGS and RANGES parts. */
typedef struct {
    const csr *c;
    splade_inverted *inv;
    const uint64_t *first_block; /* [T + 1] */
    int32_t t0, t1;
    uint32_t total;              /* ranges in the collection */
    uint8_t *post, *rng;
    size_t post_len, rng_len;
    uint32_t used;
} encode_job;

static void *encode_part(void *arg)
{
    encode_job *j = arg;
    uint64_t longest = 0;
    for (int32_t t = j->t0; t < j->t1; t++)
        longest = j->c->start[t + 1] - j->c->start[t] > longest ? j->c->start[t + 1] - j->c->start[t] : longest;
    uint32_t *ids = malloc((longest + 1) * sizeof *ids);
    uint8_t *max = malloc(longest + 1);
    if (!ids || !max) {
        free(ids);
        free(max);
        j->post_len = SIZE_MAX; /* reported by the caller */
        return NULL;
    }
    size_t pos = 0, rpos = 0;
    for (int32_t t = j->t0; t < j->t1; t++) {
        j->used += encode_blocks(j->c, t, j->first_block[t], j->inv, j->post, &pos);
        encode_ranges(j->c, t, j->total, ids, max, j->inv, j->rng, &rpos);
    }
    j->post_len = pos;
    j->rng_len = rpos;
    free(ids);
    free(max);
    return NULL;
}

/* Encodes every term on P threads, each over a contiguous run of terms holding about 1/P of the
 * postings, into its own buffers; the parts are written back to back (writer.c), so the file is
 * the same for any P. */
int splade_encode_terms(const csr *c, int32_t T, uint32_t n_docs, int P, splade_inverted *inv)
{
    uint32_t total = (uint32_t)(((uint64_t)n_docs + (1u << SPLADE_RANGE_SHIFT) - 1) >> SPLADE_RANGE_SHIFT);
    uint64_t *fb = malloc(((size_t)T + 1) * sizeof *fb);
    if (!fb)
        return splade_fail(SPLADE_ERR_NOMEM, "block table");
    fb[0] = 0;
    for (int32_t t = 0; t < T; t++)
        fb[t + 1] = fb[t] + (c->start[t + 1] - c->start[t] + SPLADE_BLOCK_SIZE - 1) / SPLADE_BLOCK_SIZE;
    uint64_t nb = fb[T];
    inv->terms = calloc((uint32_t)T + 1u, sizeof *inv->terms);
    inv->blocks = malloc((nb ? nb : 1) * sizeof *inv->blocks);
    inv->range_terms = calloc((uint32_t)T + 1u, sizeof *inv->range_terms);
    encode_job jobs[SPLADE_MAX_THREADS];
    int ok = inv->terms && inv->blocks && inv->range_terms;
    int32_t t0 = 0;
    for (int j = 0; j < P; j++) {
        int32_t t1 = t0;
        uint64_t until = j == P - 1 ? UINT64_MAX : c->start[T] * (uint64_t)(j + 1) / (uint64_t)P;
        while (t1 < T && c->start[t1] < until)
            t1++;
        if (j == P - 1)
            t1 = T;
        size_t cap = 16 + (fb[t1] - fb[t0]) * splade_block_max_bytes(SPLADE_BLOCK_SIZE);
        size_t rcap = 16 + (size_t)(c->start[t1] - c->start[t0]) * 6 + (size_t)(t1 - t0) * 8 +
                      (j == P - 1 ? 16 : 0); /* max + up to 5 coded bytes per entry */
        jobs[j] = (encode_job){c, inv, fb, t0, t1, total, splade_big_alloc(cap + 16), splade_big_alloc(rcap), 0, 0, 0};
        ok = ok && jobs[j].post && jobs[j].rng;
        t0 = t1;
    }
    int rc = SPLADE_OK;
    if (ok)
        splade_run_jobs(P, encode_part, jobs, sizeof *jobs);
    for (int j = 0; j < P; j++)
        ok = ok && jobs[j].post_len != SIZE_MAX;
    if (!ok) {
        rc = splade_fail(SPLADE_ERR_NOMEM, "encoded postings of %llu blocks", (unsigned long long)nb);
        for (int j = 0; j < P; j++) {
            free(jobs[j].post);
            free(jobs[j].rng);
        }
    } else {
        size_t base = 0, rbase = 0;
        for (int j = 0; j < P; j++) { /* part-relative offsets -> section offsets */
            for (uint64_t bi = fb[jobs[j].t0]; bi < fb[jobs[j].t1]; bi++)
                inv->blocks[bi].offset += base;
            for (int32_t t = jobs[j].t0; t < jobs[j].t1; t++)
                inv->range_terms[t].offset += rbase;
            if (j == P - 1) { /* the section's 16 trailing zero bytes */
                memset(jobs[j].post + jobs[j].post_len, 0, 16);
                memset(jobs[j].rng + jobs[j].rng_len, 0, 16);
                jobs[j].post_len += 16;
                jobs[j].rng_len += 16;
            }
            inv->post_part[j] = jobs[j].post;
            inv->post_part_len[j] = jobs[j].post_len;
            inv->rng_part[j] = jobs[j].rng;
            inv->rng_part_len[j] = jobs[j].rng_len;
            base += jobs[j].post_len;
            rbase += jobs[j].rng_len;
            inv->n_terms_used += jobs[j].used;
        }
        inv->n_parts = P;
        inv->postings_len = base;
        inv->ranges_len = rbase;
        inv->n_blocks = nb;
    }
    free(fb);
    return rc;
}

