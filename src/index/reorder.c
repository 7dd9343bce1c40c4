/* Document reordering at build time (docs/FORMAT.md, "Document order"): documents about the same
 * thing get consecutive internal ids. BMP (query/bmp.c) bounds each range of 64 consecutive ids by
 * the per-term maxima inside it; when a range's documents share their strong terms, a query's
 * strong ranges are few and the others' bounds fall below the k-th score, so few are scored.
 *
 * Recursive graph bisection orders best but costs minutes per million documents. This is a
 * linear-time stand-in: spherical k-means of documents by their ~32 strongest terms, trained on a
 * sample (1 in 8) with sparse centroids, then one assignment pass over all documents; documents
 * are sorted by (cluster in a chain of neighbouring clusters, strongest term), corpus order inside. Measured on the 1M synthetic
 * collection (bench/results/index-*.md): BMP scores 5x fewer postings than in corpus order, as few
 * as with the order of the generator's hidden topics. Tried before and dropped: sorting by the
 * strongest term alone (1.4x fewer), label propagation on documents' 12 strongest terms (1.5x). */
#include "common/fail.h"
#include "index/builder_internal.h"
#include "index/reorder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "index/parallel.h"
#include "splade.h"

#define SAMPLE_EVERY 8   /* documents the centroids are trained on: 1 in 8 ... */
#define MIN_SAMPLE 32768 /* ... but at least about this many (every document below it): a segment of a
                          * bounded build or an add (100k documents, 3,126 clusters) had 12.5k sample
                          * documents, 4 per cluster. Measured on the 1M synthetic collection cut into
                          * 10 segments of 100k, with the chain and 32 documents per cluster
                          * (bench/results/segments-bmp-2026-11-25b.md): ranges whose bound reaches the
                          * final 10th score 40 per query (median) with 16k sample documents, 34 with
                          * 33k, 32 with all 100k; 8 rounds instead of 4 gained 1. */
#define TOP_TERMS 32     /* a document's representation for training: its strongest terms */
#define FINAL_TERMS 16   /* ... and for the final assignment of every document: measured on the 1M synthetic
                          * collection, BMP scores 1.7% more postings than with 32, for 23% less reordering time */
#define CLUSTER_DOCS 256 /* documents per cluster (4 BMP ranges) ... */
#define MIN_CLUSTERS 4096 /* ... but at least this many clusters (what 1M documents get), as long as each
                           * still holds half a range (32 documents; 64 before the chain of clusters,
                           * whose neighbours now share the ranges between them: 10 x 100k, ranges that
                           * reach the final 10th score 38 -> 33 per query, median): a segment of a bounded build or an
                           * add is a slice of a larger collection and meets all of its topics, fewer
                           * documents each. Measured on the 1M synthetic collection cut into 10
                           * segments of 100k (bench/results/segments-bmp-2026-11-25.md): BMP scores
                           * 72k postings per query instead of 164k (55k in one file); one 100k file:
                           * 37k instead of 57k. Not smaller clusters for everyone: 64 documents per
                           * cluster at 1M scored 121k (a topic's terms then sit in more centroids
                           * than MAX_TERM_CLUSTERS and are left out of the matching). */
#define MIN_CLUSTER_DOCS 32
#define CENT_TERMS 64    /* terms kept per centroid */
#define ROUNDS 4
#define MAX_TERM_CLUSTERS 16 /* terms in more centroids are left out of the matching */

/* About the document's `want` strongest terms, into t/w (returns the count), and its strongest
 * term (largest weight, lower id on ties; n_terms if empty). Exact order does not matter for the
 * clustering, so the cut is a 64-bin histogram of weight / max weight: all terms of the bins above
 * the one where `want` is reached, then that bin's first ones in document order. */
static uint32_t top_terms(const splade_index_builder *b, uint32_t d, uint32_t want, uint32_t *t, float *w,
                          uint32_t *strongest)
{
    const int32_t *ft = fwd_terms(b, d);
    const float *fw = fwd_weights(b, d);
    uint32_t len = b->fwd_len[d], hist[65] = {0}, key = (uint32_t)b->n_terms;
    float m = 0;
    for (uint32_t i = 0; i < len; i++)
        if (fw[i] > m || (fw[i] == m && (uint32_t)ft[i] < key)) {
            m = fw[i];
            key = (uint32_t)ft[i];
        }
    *strongest = key;
    if (len <= want) {
        for (uint32_t i = 0; i < len; i++) {
            t[i] = (uint32_t)ft[i];
            w[i] = fw[i];
        }
        return len;
    }
    float scale = 64.0f / m;
    for (uint32_t i = 0; i < len; i++)
        hist[(uint32_t)(fw[i] * scale)]++; /* weights are in (0, m]: bins 0..64 */
    uint32_t cut = 65, above = 0;
    while (cut > 0 && above + hist[cut - 1] < want)
        above += hist[--cut];
    cut--; /* bin where want is reached: take want - above of it */
    uint32_t n = 0, from_cut = 0;
    for (uint32_t i = 0; i < len; i++) {
        uint32_t bin = (uint32_t)(fw[i] * scale);
        if (bin > cut || (bin == cut && from_cut++ < want - above)) {
            t[n] = (uint32_t)ft[i];
            w[n++] = fw[i];
        }
    }
    return n;
}

/* Weighted plurality vote: acc[label] accumulates, touched lists the labels seen. Ties go to the
 * lower label, so the result does not depend on visiting order. */
typedef struct {
    float *acc;
    uint32_t *touched, n;
} vote;

/* Branch-free: which labels are new is unpredictable (perf: the mispredicted branch was most of
 * the assignment passes' time). A label is listed when its score is 0 before the add, as before. */
static inline void vote_add(vote *v, uint32_t label, float w)
{
    v->touched[v->n] = label;
    v->n += v->acc[label] == 0;
    v->acc[label] += w;
}

static uint32_t vote_winner(vote *v)
{
    uint32_t best = UINT32_MAX;
    float bw = 0;
    for (uint32_t i = 0; i < v->n; i++) {
        uint32_t l = v->touched[i];
        if (v->acc[l] > bw || (v->acc[l] == bw && l < best)) {
            bw = v->acc[l];
            best = l;
        }
        v->acc[l] = 0;
    }
    v->n = 0;
    return best;
}

/* Sparse centroids, and their inverted index term -> (cluster, weight). */
typedef struct {
    uint32_t k, n_terms;
    uint32_t *term;  /* [k × CENT_TERMS], UINT32_MAX = unused */
    float *w;
    uint32_t *istart;       /* inverted: [istart[t], istart[t + 1]) of inv */
    struct posting_cw {
        uint32_t cl;
        float w;
    } *inv;                 /* cluster and weight side by side: one cache line per term, not two */
} centroids;

static int index_centroids(centroids *c)
{
    memset(c->istart, 0, ((size_t)c->n_terms + 2) * sizeof *c->istart);
    size_t n = (size_t)c->k * CENT_TERMS;
    for (size_t i = 0; i < n; i++)
        if (c->term[i] != UINT32_MAX)
            c->istart[c->term[i] + 1]++;
    for (uint32_t t = 0; t < c->n_terms; t++) { /* a term in many centroids tells them apart poorly */
        if (c->istart[t + 1] > MAX_TERM_CLUSTERS)
            c->istart[t + 1] = 0;
        c->istart[t + 1] += c->istart[t];
    }
    uint32_t *cur = malloc(((size_t)c->n_terms + 1) * sizeof *cur);
    if (!cur)
        return splade_fail(SPLADE_ERR_NOMEM, "document clustering");
    memcpy(cur, c->istart, ((size_t)c->n_terms + 1) * sizeof *cur);
    for (size_t i = 0; i < n; i++)
        if (c->term[i] != UINT32_MAX && cur[c->term[i]] < c->istart[c->term[i] + 1]) {
            c->inv[cur[c->term[i]]].cl = (uint32_t)(i / CENT_TERMS);
            c->inv[cur[c->term[i]]++].w = c->w[i];
        }
    free(cur);
    return SPLADE_OK;
}

/* The cluster whose centroid has the largest dot product with (t, w); fallback if none shares a term. */
static uint32_t nearest(const centroids *c, const uint32_t *t, const float *w, uint32_t n, vote *v, uint32_t fallback)
{
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = c->istart[t[i]]; j < c->istart[t[i] + 1]; j++)
            vote_add(v, c->inv[j].cl, w[i] * c->inv[j].w);
    uint32_t best = vote_winner(v);
    return best == UINT32_MAX ? fallback : best;
}

/* Unit length: a centroid scores a document by direction, so a one-member cluster does not beat a
 * topic's centroid on a single shared term (spherical k-means). */
static void normalize(float *w, uint32_t n)
{
    double ss = 0;
    for (uint32_t i = 0; i < n; i++)
        ss += (double)w[i] * w[i];
    float inv = ss > 0 ? (float)(1.0 / sqrt(ss)) : 0;
    for (uint32_t i = 0; i < n; i++)
        w[i] *= inv;
}

/* New centroids [cl0, cl1): the mean of each cluster's members, cut to its CENT_TERMS largest terms.
 * Members are sample documents i, (t, w)[i × TOP_TERMS ..][0 .. len[i]), grouped by cluster in `by`.
 * Each cluster's result depends on its members only, so clusters can be split among threads. */
static void update_centroids(centroids *c, uint32_t cl0, uint32_t cl1, const uint32_t *len, const uint32_t *t,
                             const float *w, const uint32_t *by, const uint32_t *cstart, vote *v)
{
    for (uint32_t cl = cl0; cl < cl1; cl++) {
        if (cstart[cl] == cstart[cl + 1])
            continue; /* empty: keeps its centroid */
        for (uint32_t m = cstart[cl]; m < cstart[cl + 1]; m++)
            for (size_t x = (size_t)by[m] * TOP_TERMS; x < (size_t)by[m] * TOP_TERMS + len[by[m]]; x++)
                vote_add(v, t[x], w[x]);
        uint32_t *ct = c->term + (size_t)cl * CENT_TERMS, n = 0;
        float *cw = c->w + (size_t)cl * CENT_TERMS, inv = 1.0f / (float)(cstart[cl + 1] - cstart[cl]);
        for (uint32_t i = 0; i < v->n; i++) { /* top CENT_TERMS by insertion; ties to the lower term */
            uint32_t term = v->touched[i];
            float a = v->acc[term] * inv;
            v->acc[term] = 0;
            if (n == CENT_TERMS && (a < cw[n - 1] || (a == cw[n - 1] && term > ct[n - 1])))
                continue;
            uint32_t j = n < CENT_TERMS ? n++ : n - 1;
            while (j > 0 && (cw[j - 1] < a || (cw[j - 1] == a && ct[j - 1] > term))) {
                ct[j] = ct[j - 1];
                cw[j] = cw[j - 1];
                j--;
            }
            ct[j] = term;
            cw[j] = a;
        }
        v->n = 0;
        for (uint32_t j = n; j < CENT_TERMS; j++)
            ct[j] = UINT32_MAX;
        normalize(cw, n);
    }
}

/* Stable counting sort of ids[0..n) by key[id] < n_keys into out. */
static int sort_by(const uint32_t *ids, uint32_t n, const uint32_t *key, uint32_t n_keys, uint32_t *out)
{
    uint32_t *start = calloc((size_t)n_keys + 1, sizeof *start);
    if (!start)
        return splade_fail(SPLADE_ERR_NOMEM, "document order");
    for (uint32_t i = 0; i < n; i++)
        start[key[ids[i]] + 1]++;
    for (uint32_t k = 0; k < n_keys; k++)
        start[k + 1] += start[k];
    for (uint32_t i = 0; i < n; i++)
        out[start[key[ids[i]]]++] = ids[i];
    free(start);
    return SPLADE_OK;
}

typedef struct {
    uint32_t every;       /* sample document i is document i × every */
    uint32_t n, *len, *t; /* sample document i: (t, w)[i × TOP_TERMS ..][0 .. len[i]) */
    float *w;
    uint32_t *cl, *by, *cstart;
} sample;

typedef struct {
    vote v;
    sample s;
    centroids c;
    uint32_t *label, *strongest, *ids, *order;
} state;

static void free_state(state *x)
{
    void *p[] = {x->v.acc, x->v.touched, x->s.len, x->s.t, x->s.w, x->s.cl, x->s.by, x->s.cstart, x->c.term,
                 x->c.w, x->c.istart, x->c.inv, x->label, x->strongest, x->ids, x->order};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++)
        free(p[i]);
}

static int alloc_state(uint32_t N, uint32_t T, state *x)
{
    uint32_t every = N / MIN_SAMPLE < 1 ? 1 : N / MIN_SAMPLE > SAMPLE_EVERY ? SAMPLE_EVERY : N / MIN_SAMPLE;
    uint32_t K = N / CLUSTER_DOCS + 1, S = (N + every - 1) / every;
    if (K < MIN_CLUSTERS)
        K = N / MIN_CLUSTER_DOCS + 1 < MIN_CLUSTERS ? N / MIN_CLUSTER_DOCS + 1 : MIN_CLUSTERS;
    size_t V = (T > K ? T : K) + 1, E = (size_t)S * TOP_TERMS + 1, C = (size_t)K * CENT_TERMS + 1;
    *x = (state){
        .v = {calloc(V, sizeof(float)), malloc(V * sizeof(uint32_t)), 0},
        .s = {every, S, malloc(((size_t)S + 1) * 4), malloc(E * 4), malloc(E * sizeof(float)), calloc((size_t)S + 1, 4),
              malloc(((size_t)S + 1) * 4), malloc(((size_t)K + 3) * 4)},
        .c = {K, T, malloc(C * 4), malloc(C * sizeof(float)), malloc(((size_t)T + 2) * 4),
              malloc(C * sizeof(struct posting_cw))},
        .label = malloc(((size_t)N + 1) * 4), .strongest = malloc(((size_t)N + 1) * 4),
        .ids = malloc(((size_t)N + 1) * 4), .order = malloc(((size_t)N + 1) * 4)};
    void *p[] = {x->v.acc, x->v.touched, x->s.len, x->s.t, x->s.w, x->s.cl, x->s.by, x->s.cstart, x->c.term,
                 x->c.w, x->c.istart, x->c.inv, x->label, x->strongest, x->ids, x->order};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++)
        if (!p[i])
            return splade_fail(SPLADE_ERR_NOMEM, "document order of %u documents", N);
    return SPLADE_OK;
}

/* One thread's share of a pass over documents, sample documents or clusters, with its own vote
 * scratch v (sized for terms and clusters). */
enum { SAMPLE_TERMS, SAMPLE_ASSIGN, UPDATE, FINAL_ASSIGN };

typedef struct {
    const splade_index_builder *b;
    state *x;
    uint32_t from, to;
    vote v;
    int what;
} assign_job;

static void *assign_range(void *arg)
{
    assign_job *j = arg;
    uint32_t t[TOP_TERMS];
    float w[TOP_TERMS];
    sample *s = &j->x->s;
    centroids *c = &j->x->c;
    if (j->what == SAMPLE_TERMS) /* the training representation of sample documents */
        for (uint32_t i = j->from, strongest; i < j->to; i++)
            s->len[i] = top_terms(j->b, i * s->every, TOP_TERMS, s->t + (size_t)i * TOP_TERMS,
                                  s->w + (size_t)i * TOP_TERMS, &strongest);
    else if (j->what == SAMPLE_ASSIGN)
        for (uint32_t i = j->from; i < j->to; i++)
            s->cl[i] = nearest(c, s->t + (size_t)i * TOP_TERMS, s->w + (size_t)i * TOP_TERMS, s->len[i], &j->v, c->k);
    else if (j->what == UPDATE)
        update_centroids(c, j->from, j->to, s->len, s->t, s->w, s->by, s->cstart, &j->v);
    else
        for (uint32_t d = j->from; d < j->to; d++) {
            uint32_t n = top_terms(j->b, d, FINAL_TERMS, t, w, &j->x->strongest[d]);
            j->x->label[d] = nearest(c, t, w, n, &j->v, c->k);
        }
    return NULL;
}

/* Splits a pass over `threads` threads (the calling one included), each with its own vote scratch,
 * over items [0, n) — documents, sample documents, or clusters weighted by their members (UPDATE).
 * Uses fewer threads if scratch cannot be allocated: same result. */
static void assign_all(const splade_index_builder *b, state *x, int threads, int what)
{
    enum { MAX_THREADS = 64 };
    uint32_t N = what == FINAL_ASSIGN ? b->ids.n : what == UPDATE ? x->c.k : x->s.n;
    size_t V = (x->c.n_terms > x->c.k ? x->c.n_terms : x->c.k) + 1;
    threads = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
    assign_job jobs[MAX_THREADS];
    jobs[0].v = x->v;
    for (int i = 1; i < threads; i++) {
        jobs[i].v = (vote){calloc(V, sizeof(float)), malloc(V * sizeof(uint32_t)), 0};
        if (!jobs[i].v.acc || !jobs[i].v.touched) {
            free(jobs[i].v.acc);
            free(jobs[i].v.touched);
            threads = i;
        }
    }
    uint32_t from = 0;
    for (int i = 0; i < threads; i++) {
        uint32_t to = (uint32_t)((uint64_t)N * (i + 1) / threads);
        if (what == UPDATE) { /* about equal members per thread */
            uint64_t until = (uint64_t)x->s.n * (i + 1) / threads;
            for (to = from; to < N && x->s.cstart[to] < until;)
                to++;
        }
        if (i == threads - 1)
            to = N;
        jobs[i] = (assign_job){b, x, from, to, jobs[i].v, what};
        from = to;
    }
    splade_run_jobs(threads, assign_range, jobs, sizeof *jobs);
    for (int i = 1; i < threads; i++) {
        free(jobs[i].v.acc);
        free(jobs[i].v.touched);
    }
}

static void train(const splade_index_builder *b, state *x, int threads)
{
    sample *s = &x->s;
    centroids *c = &x->c;
    assign_all(b, x, threads, SAMPLE_TERMS);
    for (uint32_t cl = 0; cl < c->k; cl++) { /* seeds: evenly spaced sample documents */
        uint32_t i = (uint32_t)(((uint64_t)cl * 2654435761u) % s->n), n = s->len[i];
        for (uint32_t j = 0; j < CENT_TERMS; j++) {
            c->term[(size_t)cl * CENT_TERMS + j] = j < n ? s->t[(size_t)i * TOP_TERMS + j] : UINT32_MAX;
            c->w[(size_t)cl * CENT_TERMS + j] = j < n ? s->w[(size_t)i * TOP_TERMS + j] : 0;
        }
        normalize(c->w + (size_t)cl * CENT_TERMS, n < CENT_TERMS ? n : CENT_TERMS);
        s->cl[i] = cl;
    }
    for (int r = 0; r < ROUNDS; r++) {
        if (index_centroids(c) < 0)
            return; /* out of memory: the order is only an optimization, keep what we have */
        assign_all(b, x, threads, SAMPLE_ASSIGN);
        memset(s->cstart, 0, ((size_t)c->k + 2) * sizeof *s->cstart);
        for (uint32_t i = 0; i < s->n; i++)
            s->cstart[s->cl[i] + 1]++;
        for (uint32_t cl = 0; cl <= c->k; cl++)
            s->cstart[cl + 1] += s->cstart[cl];
        for (uint32_t i = 0; i < s->n; i++)
            s->by[s->cstart[s->cl[i]]++] = i;
        for (uint32_t cl = c->k + 1; cl-- > 0;)
            s->cstart[cl + 1] = s->cstart[cl];
        s->cstart[0] = 0;
        assign_all(b, x, threads, UPDATE);
    }
    index_centroids(c);
}

/* The clusters in a chain of neighbours: rank[cl] = place of cluster cl. Starting from cluster 0,
 * the next is the unvisited cluster whose centroid has the largest dot product with the current
 * one's (ties to the lower cluster; the lowest unvisited one when none shares a term). A topic split
 * over several clusters then gets consecutive ids, and a range that straddles two clusters mixes
 * neighbours, not strangers: clusters average 64 documents (one range) in a segment of 100k, so
 * most ranges straddle. Cost: K steps of at most CENT_TERMS × MAX_TERM_CLUSTERS votes. */
static void chain_clusters(const centroids *c, vote *v, uint8_t *seen, uint32_t *rank)
{
    uint32_t cur = 0, next_free = 0;
    memset(seen, 0, (size_t)c->k + 1);
    for (uint32_t at = 0; at < c->k; at++) {
        rank[cur] = at;
        seen[cur] = 1;
        for (uint32_t j = 0; j < CENT_TERMS; j++) {
            uint32_t term = c->term[(size_t)cur * CENT_TERMS + j];
            if (term == UINT32_MAX)
                break;
            for (uint32_t i = c->istart[term]; i < c->istart[term + 1]; i++)
                if (!seen[c->inv[i].cl])
                    vote_add(v, c->inv[i].cl, c->w[(size_t)cur * CENT_TERMS + j] * c->inv[i].w);
        }
        cur = vote_winner(v);
        if (cur == UINT32_MAX) {
            while (next_free < c->k && seen[next_free])
                next_free++;
            cur = next_free;
        }
    }
    rank[c->k] = c->k; /* documents that share no term with any centroid: last */
}

int splade_reorder_docs(const splade_index_builder *b, int threads, uint32_t **order_out)
{
    uint32_t N = b->ids.n, T = (uint32_t)b->n_terms;
    state x;
    int rc = alloc_state(N, T, &x);
    if (rc == 0) {
        train(b, &x, threads);
        assign_all(b, &x, threads, FINAL_ASSIGN);
        for (uint32_t d = 0; d < N; d++)
            x.ids[d] = d;
        rc = sort_by(x.ids, N, x.strongest, T + 1, x.order);
        if (rc == 0) { /* clusters in chain order (out of memory: label order, only less tight) */
            uint8_t *seen = malloc((size_t)x.c.k + 1);
            uint32_t *rank = malloc(((size_t)x.c.k + 1) * sizeof *rank);
            if (seen && rank) {
                chain_clusters(&x.c, &x.v, seen, rank);
                for (uint32_t d = 0; d < N; d++)
                    x.label[d] = rank[x.label[d]];
            }
            free(seen);
            free(rank);
        }
        if (rc == 0)
            rc = sort_by(x.order, N, x.label, x.c.k + 1, x.ids);
    }
    *order_out = rc == 0 ? x.ids : NULL;
    if (rc == 0)
        x.ids = NULL;
    free_state(&x);
    return rc;
}
