/* Forward vectors -> quantized, block-compressed postings (docs/FORMAT.md, "Postings"). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/fail.h"
#include "index/builder_internal.h"
#include "index/format.h"
#include "index/parallel.h"
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
    const char *t = (const char *)fwd_terms(b, d), *w = (const char *)fwd_weights(b, d);
    for (size_t o = 0; o < (size_t)b->fwd_len[d] * 4; o += 64) {
        __builtin_prefetch(t + o);
        __builtin_prefetch(w + o);
    }
}

int splade_build_threads(int requested, uint64_t n_postings)
{
    long n = requested > 0 ? requested : sysconf(_SC_NPROCESSORS_ONLN);
    if (n_postings < (1u << 16))
        n = 1; /* small collections: thread start-up costs more than it saves */
    return n < 1 ? 1 : n > SPLADE_MAX_THREADS ? SPLADE_MAX_THREADS : (int)n;
}

/* Scattering postings straight into 30k per-term lists costs a cache miss per posting (the lists'
 * current lines do not fit in cache). Two radix passes keep few output streams open each: pass 1
 * appends each posting to its bucket (a run of at most 256 consecutive terms and BUCKET_POSTINGS
 * postings, laid out where those terms' lists will be), pass 2 splits each bucket, through a cached
 * scratch copy, into its terms' lists. Both passes run on P threads: in pass 1 thread j takes the
 * j-th slice of internal ids and writes, inside each bucket, after the postings of the slices before
 * it (per-(slice, bucket) counts give the cursors); in pass 2 threads take whole buckets. Documents
 * are visited in internal-id order within a slice, slices are laid out in order and both passes are
 * stable, so every list comes out ascending and identical for any P. Memory: 6 bytes per posting
 * plus the scratch, all of it touched once (fresh pages cost as much as the passes on our VMs).
 * Buckets of at most 1M postings (was 4M): each thread's scratch is 6 bytes per posting of the
 * largest bucket it splits, so 16 threads touched ~380 MB of fresh scratch with 4M, ~100 MB now;
 * pass 1 then has ~1.5x more buckets open, measured no slower (2 threads, 1M documents). */
#define BUCKET_POSTINGS (1u << 20)

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

typedef struct {
    const splade_index_builder *b;
    const int32_t *remap;
    const uint32_t *order;
    float max;
    const buckets *k;
    csr *c;
    uint8_t *low;
    uint32_t from, to; /* pass 1: internal ids of this slice */
    uint64_t *cur;     /* pass 1: [k->n] next slot per bucket; pass 2: shared [T + 1] per term */
    uint8_t *q;        /* pass 1: a document's quantized weights (longest document + 1) */
    uint32_t *sd;      /* pass 2: scratch of the largest bucket */
    uint8_t *si, *sl;
    atomic_uint *next; /* pass 2: next bucket to split */
} scatter_job;

/* Pass 1: docs/imps/low (term within its bucket) at the bucket's next slot. */
static void *bucket_pass(void *arg)
{
    scatter_job *j = arg;
    const splade_index_builder *b = j->b;
    const uint32_t *order = j->order;
    const int32_t *remap = j->remap;
    uint64_t *cur = j->cur;
    csr *c = j->c;
    for (uint32_t nd = j->from; nd < j->to; nd++) {
        uint32_t d = order ? order[nd] : nd; /* internal id nd */
        const int32_t *terms = fwd_terms(b, d);
        if (order && nd + PREFETCH_DOCS < j->to)
            prefetch_doc(b, order[nd + PREFETCH_DOCS]);
        splade_quantize_many(fwd_weights(b, d), b->fwd_len[d], j->max, j->q);
        for (uint32_t i = 0; i < b->fwd_len[d]; i++) {
            uint32_t x = j->k->of_term[remap ? remap[terms[i]] : terms[i]];
            uint64_t p = cur[x >> 8]++;
            c->docs[p] = nd;
            c->imps[p] = j->q[i];
            j->low[p] = (uint8_t)x;
        }
    }
    return NULL;
}

/* Pass 2: buckets, taken in turn and copied to scratch (sd/si/sl), back into their terms' lists. */
static void *split_pass(void *arg)
{
    scatter_job *j = arg;
    const buckets *k = j->k;
    csr *c = j->c;
    for (uint32_t i; (i = atomic_fetch_add(j->next, 1)) < k->n;) {
        uint64_t s = c->start[k->first[i]], n = c->start[k->first[i + 1]] - s;
        memcpy(j->sd, c->docs + s, n * sizeof *j->sd);
        memcpy(j->si, c->imps + s, n);
        memcpy(j->sl, j->low + s, n);
        uint64_t *at = j->cur + k->first[i];
        for (uint32_t t = k->first[i]; t < k->first[i + 1]; t++)
            j->cur[t] = c->start[t];
        for (uint64_t x = 0; x < n; x++) {
            uint64_t p = at[j->sl[x]]++;
            c->docs[p] = j->sd[x];
            c->imps[p] = j->si[x];
        }
    }
    return NULL;
}

/* The counts that lay pass 1 out, in two parallel passes over the forward arrays in builder order
 * (sequential reads: reading them in internal-id order, as pass 1 must, costs several times more
 * per posting). Pass A, over builder documents [from, to): postings per term (cnt), the longest
 * document and the largest weight; it also records the slice (the thread of pass 1) of internal ids
 * [sfrom, sto). Pass B: postings per (slice, bucket) (bcnt), once the buckets are known. */
typedef struct {
    const splade_index_builder *b;
    const int32_t *remap;
    const uint32_t *order;
    uint32_t from, to, sfrom, sto, slice;
    uint32_t *cnt;     /* A: [T + 1] */
    uint8_t *slice_of; /* builder document -> slice */
    const buckets *k;
    uint64_t *bcnt;    /* B: [P][k->n] */
    uint32_t longest;
    float max;
} count_job;

static void *count_terms(void *arg)
{
    count_job *j = arg;
    const splade_index_builder *b = j->b;
    for (uint32_t nd = j->sfrom; nd < j->sto; nd++)
        j->slice_of[j->order ? j->order[nd] : nd] = (uint8_t)j->slice;
    float m = 0;
    for (uint32_t d = j->from; d < j->to; d++) {
        const int32_t *ft = fwd_terms(b, d);
        const float *fw = fwd_weights(b, d);
        for (uint32_t i = 0; i < b->fwd_len[d]; i++) {
            j->cnt[j->remap ? j->remap[ft[i]] : ft[i]]++;
            m = fw[i] > m ? fw[i] : m;
        }
        j->longest = b->fwd_len[d] > j->longest ? b->fwd_len[d] : j->longest;
    }
    j->max = m;
    return NULL;
}

static void *count_buckets(void *arg)
{
    count_job *j = arg;
    const splade_index_builder *b = j->b;
    const uint32_t *of_term = j->k->of_term;
    for (uint32_t d = j->from; d < j->to; d++) {
        const int32_t *ft = fwd_terms(b, d);
        uint64_t *bc = j->bcnt + (size_t)j->slice_of[d] * j->k->n;
        for (uint32_t i = 0; i < b->fwd_len[d]; i++)
            bc[of_term[j->remap ? j->remap[ft[i]] : ft[i]] >> 8]++;
    }
    return NULL;
}

/* Postings of every term, grouped by term (CSR), on P threads; *max_out: the largest weight of the
 * collection (the quantization scale), found on the way. */
static int scatter(const splade_index_builder *b, const int32_t *remap, const uint32_t *order, int P, csr *c,
                   float *max_out)
{
    size_t T = (size_t)(uint32_t)b->n_terms, n = b->fn ? b->fn : 1;
    uint32_t N = b->ids.n, longest_doc = 0;
    c->start = calloc(T + 1, sizeof *c->start);
    uint32_t *cnt = calloc((size_t)P * (T + 1), sizeof *cnt); /* [thread][term] postings */
    uint8_t *slice_of = malloc((size_t)N + 1);
    if (!c->start || !cnt || !slice_of) {
        free(cnt);
        free(slice_of);
        return splade_fail(SPLADE_ERR_NOMEM, "postings of %llu entries", (unsigned long long)b->fn);
    }
    count_job cj[SPLADE_MAX_THREADS];
    for (int j = 0; j < P; j++)
        cj[j] = (count_job){b, remap, order, (uint32_t)((uint64_t)N * j / P), (uint32_t)((uint64_t)N * (j + 1) / P),
                            (uint32_t)((uint64_t)N * j / P), (uint32_t)((uint64_t)N * (j + 1) / P), (uint32_t)j,
                            cnt + (size_t)j * (T + 1), slice_of, NULL, NULL, 0, 0};
    splade_run_jobs(P, count_terms, cj, sizeof *cj);
    float max = 0;
    for (int j = 0; j < P; j++) {
        longest_doc = cj[j].longest > longest_doc ? cj[j].longest : longest_doc;
        max = cj[j].max > max ? cj[j].max : max;
    }
    *max_out = max;
    for (size_t t = 0; t < T; t++) {
        uint64_t tot = 0;
        for (int j = 0; j < P; j++)
            tot += cnt[(size_t)j * (T + 1) + t];
        c->start[t + 1] = c->start[t] + tot;
    }
    free(cnt);
    buckets k = {0};
    int rc = make_buckets(c, (uint32_t)T, &k);
    size_t sn = (size_t)k.largest + 1;
    c->docs = big_alloc(n * sizeof *c->docs);
    c->imps = big_alloc(n);
    uint8_t *low = big_alloc(n);
    uint64_t *cur = malloc((T + 1) * sizeof *cur), *bcur = malloc((size_t)P * (k.n + 1) * sizeof *bcur);
    scatter_job jobs[SPLADE_MAX_THREADS];
    atomic_uint next = 0;
    int ok = rc == 0 && c->docs && c->imps && low && cur && bcur;
    for (int j = 0; j < P; j++) {
        jobs[j] = (scatter_job){b, remap, order, max, &k, c, low, (uint32_t)((uint64_t)N * j / P),
                                (uint32_t)((uint64_t)N * (j + 1) / P), bcur ? bcur + (size_t)j * (k.n + 1) : NULL,
                                malloc((size_t)longest_doc + 1), malloc(sn * sizeof(uint32_t)), malloc(sn), malloc(sn),
                                &next};
        ok = ok && jobs[j].q && jobs[j].sd && jobs[j].si && jobs[j].sl;
    }
    uint64_t *bcnt = rc == 0 && ok ? calloc((size_t)P * P * k.n + 1, sizeof *bcnt) : NULL; /* [thread][slice][bucket] */
    if (rc == 0 && ok && !bcnt)
        ok = 0;
    if (rc == 0 && !ok)
        rc = splade_fail(SPLADE_ERR_NOMEM, "postings of %llu entries", (unsigned long long)b->fn);
    if (rc == 0) {
        for (int j = 0; j < P; j++) {
            cj[j].k = &k;
            cj[j].bcnt = bcnt + (size_t)j * P * k.n;
        }
        splade_run_jobs(P, count_buckets, cj, sizeof *cj);
        for (uint32_t i = 0; i < k.n; i++) { /* slice j writes after slices 0..j-1 in each bucket */
            uint64_t at = c->start[k.first[i]];
            for (int j = 0; j < P; j++) {
                bcur[(size_t)j * (k.n + 1) + i] = at;
                for (int th = 0; th < P; th++)
                    at += bcnt[((size_t)th * P + j) * k.n + i];
            }
        }
        splade_run_jobs(P, bucket_pass, jobs, sizeof *jobs);
        for (int j = 0; j < P; j++)
            jobs[j].cur = cur;
        splade_run_jobs(P, split_pass, jobs, sizeof *jobs);
    }
    for (int j = 0; j < P; j++) {
        free(jobs[j].q);
        free(jobs[j].sd);
        free(jobs[j].si);
        free(jobs[j].sl);
    }
    free(bcnt);
    free(slice_of);
    free(k.first);
    free(k.of_term);
    free(low);
    free(cur);
    free(bcur);
    return rc;
}

/* One term's blocks: BLOCKS entries from bi on, encoded bytes appended at *pos of out (offsets
 * relative to out: the part's base is added once all parts are known). */
static uint32_t encode_blocks(const csr *c, int32_t t, uint64_t bi, splade_inverted *inv, uint8_t *out, size_t *pos)
{
    uint64_t s = c->start[t], e = c->start[t + 1];
    splade_term_entry *te = &inv->terms[t];
    te->first_block = bi;
    te->n_postings = (uint32_t)(e - s);
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
        *pos += splade_block_encode(c->docs + p, c->imps + p, n, prev, out + *pos);
        prev = be->last_doc;
    }
    return e > s;
}

/* One term's range maxima (docs/FORMAT.md, "Range maxima"): the doc-id ranges it occurs in and its
 * largest impact in each, appended at *pos of out; ids/max are scratch of the term's length. Done
 * right after the term's blocks, while its postings are still in cache. */
static void encode_ranges(const csr *c, int32_t t, uint32_t total, uint32_t *ids, uint8_t *max, splade_inverted *inv,
                          uint8_t *out, size_t *pos)
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
        memset(out + *pos, 0, total);
        for (uint32_t i = 0; i < n; i++)
            out[*pos + ids[i]] = max[i];
        *pos += total;
        return;
    }
    memcpy(out + *pos, max, n);
    *pos += n + splade_svb_delta_encode(ids, n, 0, out + *pos + n);
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
static int encode_terms(const csr *c, int32_t T, uint32_t n_docs, int P, splade_inverted *inv)
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
        jobs[j] = (encode_job){c, inv, fb, t0, t1, total, big_alloc(cap + 16), big_alloc(rcap), 0, 0, 0};
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
    clock_gettime(CLOCK_MONOTONIC, &t1);
    out->reorder_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    csr c = {0};
    float max = 0;
    rc = scatter(b, remap, out->doc_order, P, &c, &max);
    out->doc_scale = max > 0 ? max / 255.0f : 0;
    free(remap);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    out->scatter_s = (double)(t0.tv_sec - t1.tv_sec) + (double)(t0.tv_nsec - t1.tv_nsec) * 1e-9;
    if (rc == 0)
        rc = encode_terms(&c, b->n_terms, b->ids.n, P, out);
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
    memset(inv, 0, sizeof *inv);
}
