/* The inversion's first phase (invert_internal.h): quantize and group postings by term. */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "index/builder_internal.h"
#include "index/invert_internal.h"
#include "index/parallel.h"
#include "index/quantize.h"
#include "splade.h"

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
    float fixed_max;   /* a forced quantization maximum (0: none), against which clipped counts */
    uint64_t clipped;  /* weights whose impact would exceed 255 under fixed_max */
} count_job;

static void *count_terms(void *arg)
{
    count_job *j = arg;
    const splade_index_builder *b = j->b;
    for (uint32_t nd = j->sfrom; nd < j->sto; nd++)
        j->slice_of[j->order ? j->order[nd] : nd] = (uint8_t)j->slice;
    float m = 0, fm = j->fixed_max;
    for (uint32_t d = j->from; d < j->to; d++) {
        const int32_t *ft = fwd_terms(b, d);
        const float *fw = fwd_weights(b, d);
        for (uint32_t i = 0; i < b->fwd_len[d]; i++) {
            j->cnt[j->remap ? j->remap[ft[i]] : ft[i]]++;
            m = fw[i] > m ? fw[i] : m;
            if (fm > 0 && fw[i] > fm) /* splade_quantize's rounding, before its clamp to 255 */
                j->clipped += floor((double)fw[i] * 255.0 / (double)fm + 0.5) > 255;
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
int splade_scatter(const splade_index_builder *b, const int32_t *remap, const uint32_t *order, int P, csr *c,
                   float fixed_max, float *max_out, uint64_t *clipped)
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
                            cnt + (size_t)j * (T + 1), slice_of, NULL, NULL, 0, 0, fixed_max, 0};
    splade_run_jobs(P, count_terms, cj, sizeof *cj);
    float max = 0;
    *clipped = 0;
    for (int j = 0; j < P; j++) {
        longest_doc = cj[j].longest > longest_doc ? cj[j].longest : longest_doc;
        max = cj[j].max > max ? cj[j].max : max;
        *clipped += cj[j].clipped;
    }
    *max_out = max;
    /* the quantization maximum is a function of the stored doc_scale alone (format.h) */
    max = fixed_max > 0 ? fixed_max : splade_scale_max(max / 255.0f);
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
    c->docs = splade_big_alloc(n * sizeof *c->docs);
    c->imps = splade_big_alloc(n);
    uint8_t *low = splade_big_alloc(n);
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

