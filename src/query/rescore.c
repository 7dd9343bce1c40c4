/* Approximate search with exact rescoring (splade_search_opts.rescore), Seismic's scheme with the
 * forward index built in memory instead of stored:
 *  1. the query's query_cut terms of largest impact, leaving out those whose lists cover more than
 *     COMMON_SHARE of the documents, are scored exhaustively into the accumulators, and the
 *     max(rescore, k) best documents by that partial score are the candidates (with a bound factor:
 *     windowed TAAT with it over those terms instead, for the same number of documents; with a
 *     posting budget: only the budget's postings of largest contribution, score-at-a-time, from
 *     impact-ordered copies of the long lists: budget_pass);
 *  2. each of them is scored again over all the query's terms from the forward index (one pass over
 *     the document's ~175 terms against a per-term table of query impacts), and offered with that
 *     exact score to the k-hit heap.
 * Every returned score is exact; what is approximate is only which documents are candidates. Why:
 * dropping the light terms altogether (query_cut alone) makes the partial score rank documents, so
 * recall 0.95 needs ~35 of ~53 terms on the realistic 100 k; completing candidate ranges from the
 * postings instead cost a block decode per light term and range (query-2026-11-25b.md, rejected).
 * An exact pass over 100 candidates costs ~20 µs, and lets the cut fall to ~10 terms
 * (bench/results/query-approx-2026-11-26.md). */
#include <stdlib.h>
#include <string.h>

#include "index/format.h"
#include "index/forward.h"
#include "index/impact_order.h"
#include "index/postings.h"
#include "query/rescore.h"
#include "query/search_internal.h"
#include "query/wtaat.h"

#define RANGE_DOCS (1u << SPLADE_RANGE_SHIFT)

struct splade_rescore {
    uint8_t *qimp;   /* query impact per term of the segment file (zero but while rescoring) */
    uint32_t qimp_cap;
    int32_t *terms;  /* the query's terms in the segment (all of them, before the cut) */
    int terms_cap;
    topk_hit *cand;  /* the candidates */
    topk_hit *ties;  /* those tied at the lowest score taken, settled by sequence numbers (cand_cap) */
    int cand_cap;
    uint32_t *kept;  /* the 64-document ranges kept by collect_candidates */
    uint32_t kept_cap;
    uint32_t *top;   /* the largest partial scores so far (2 cand_cap + 64) */
    uint32_t tail[RANGE_DOCS]; /* the last, partial range's scores */
    struct copied *copies; /* the budgeted pass's impact-ordered lists (terms_cap of them) */
    struct head_search *heads; /* the budgeted pass's (window, copy) pairs */
    uint32_t heads_cap;
};

/* A cut term's impact-ordered copy (impact_order.h), for the budgeted pass. */
struct copied {
    splade_impact_list l;
    uint32_t qw;
    double inv;  /* 1 / qw */
    uint8_t low; /* its lowest impact taken (0: none) */
};


void splade_rescore_free(struct splade_rescore *r)
{
    if (!r)
        return;
    free(r->qimp);
    free(r->terms);
    free(r->cand);
    free(r->kept);
    free(r->top);
    free(r->ties);
    free(r->copies);
    free(r->heads);
    free(r);
}

static struct splade_rescore *scratch(splade_searcher *s, uint32_t n_terms, int n, int cands)
{
    struct splade_rescore *r = s->rs ? s->rs : (s->rs = calloc(1, sizeof *s->rs));
    if (!r)
        return NULL;
    uint32_t ranges = (splade_index_max_segment_docs(s->ix) + RANGE_DOCS - 1) / RANGE_DOCS + 1;
    if (ranges > r->kept_cap) {
        free(r->kept);
        r->kept = malloc(ranges * sizeof *r->kept);
        r->kept_cap = r->kept ? ranges : 0;
    }
    if (r->kept_cap < ranges)
        return NULL;
    if (n_terms > r->qimp_cap) {
        free(r->qimp);
        r->qimp = calloc((size_t)n_terms + 4, 1); /* (+4: exact_score reads 4 bytes from any term) */
        r->qimp_cap = r->qimp ? n_terms : 0;
    }
    if (n > r->terms_cap) {
        free(r->terms);
        free(r->copies);
        r->terms = malloc((size_t)n * sizeof *r->terms);
        r->copies = malloc((size_t)n * sizeof *r->copies);
        r->terms_cap = r->terms && r->copies ? n : 0;
    }
    if (cands > r->cand_cap) {
        free(r->cand);
        free(r->top);
        free(r->ties);
        r->cand = malloc((size_t)cands * sizeof *r->cand);
        r->ties = malloc((size_t)cands * sizeof *r->ties);
        r->top = malloc((2 * (size_t)cands + RANGE_DOCS) * sizeof *r->top);
        r->cand_cap = r->cand && r->ties && r->top ? cands : 0;
    }
    return r->qimp_cap >= n_terms && r->terms_cap >= n && r->cand_cap >= cands ? r : NULL;
}

/* Internal id of snapshot doc id `doc` in the current segment (a hit of it: not deleted). */
static uint32_t internal_id(const splade_segment *g, uint32_t doc)
{
    return g->deleted ? g->live[doc - g->base] : doc - g->base;
}

static uint32_t exact_score_scalar(const splade_forward *f, const uint8_t *qimp, uint32_t d)
{
    uint32_t score = 0;
    const uint8_t *imp = f->imp;
    if (f->t16)
        for (uint64_t e = f->off[d]; e < f->off[d + 1]; e++)
            score += (uint32_t)qimp[f->t16[e]] * imp[e];
    else
        for (uint64_t e = f->off[d]; e < f->off[d + 1]; e++)
            score += (uint32_t)qimp[f->t32[e]] * imp[e];
    return score;
}

#if defined(__x86_64__)
#include <immintrin.h>
/* 16 entries a step: the query impacts gathered as 32-bit words at byte offsets (qimp has 4 bytes of
 * slack), the low byte kept. Scalar, a candidate's ~175 entries cost ~2.5 cycles each (a load whose
 * address is a load), as much as the rest of its rescoring. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static uint32_t exact_score_avx512(const splade_forward *f,
                                                                                     const uint8_t *qimp, uint32_t d)
{
    if (!f->t16)
        return exact_score_scalar(f, qimp, d);
    const uint64_t from = f->off[d];
    const uint32_t n = (uint32_t)(f->off[d + 1] - from);
    const uint16_t *t = f->t16 + from;
    const uint8_t *imp = f->imp + from;
    const __m512i low = _mm512_set1_epi32(0xff);
    __m512i sum = _mm512_setzero_si512();
    for (uint32_t i = 0; i < n; i += 16) {
        const __mmask16 in = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m512i idx = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(in, t + i));
        const __m512i g = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), in, idx, (const void *)qimp, 1);
        const __m512i q = _mm512_and_si512(g, low);
        sum = _mm512_add_epi32(sum, _mm512_mullo_epi32(q, _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(in, imp + i))));
    }
    return (uint32_t)_mm512_reduce_add_epi32(sum);
}
#endif

typedef uint32_t exact_score_fn(const splade_forward *, const uint8_t *, uint32_t);

static exact_score_fn *pick_exact_score(void)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
        return exact_score_avx512;
#endif
    return exact_score_scalar;
}

#if defined(__x86_64__)
/* A full range a of 64 accumulators: when its largest reaches bound, its scores that do are appended
 * to out and their number returned (the range kept as it is); else 0, the range zeroed if touched
 * (while in cache). */
__attribute__((target("avx512f"))) static uint32_t take64_avx512(uint32_t *a, uint32_t bound, uint32_t *out)
{
    const __m512i a0 = _mm512_loadu_si512(a), a1 = _mm512_loadu_si512(a + 16), a2 = _mm512_loadu_si512(a + 32),
                  a3 = _mm512_loadu_si512(a + 48), b = _mm512_set1_epi32((int)bound);
    const __m512i m = _mm512_max_epu32(_mm512_max_epu32(a0, a1), _mm512_max_epu32(a2, a3));
    if (_mm512_cmpge_epu32_mask(m, b)) {
        const __mmask16 k0 = _mm512_cmpge_epu32_mask(a0, b), k1 = _mm512_cmpge_epu32_mask(a1, b),
                        k2 = _mm512_cmpge_epu32_mask(a2, b), k3 = _mm512_cmpge_epu32_mask(a3, b);
        uint32_t n = 0;
        _mm512_mask_compressstoreu_epi32(out, k0, a0);
        n += (uint32_t)__builtin_popcount(k0);
        _mm512_mask_compressstoreu_epi32(out + n, k1, a1);
        n += (uint32_t)__builtin_popcount(k1);
        _mm512_mask_compressstoreu_epi32(out + n, k2, a2);
        n += (uint32_t)__builtin_popcount(k2);
        _mm512_mask_compressstoreu_epi32(out + n, k3, a3);
        return n + (uint32_t)__builtin_popcount(k3);
    }
    if (_mm512_test_epi32_mask(m, m)) {
        const __m512i z = _mm512_setzero_si512();
        _mm512_storeu_si512(a, z);
        _mm512_storeu_si512(a + 16, z);
        _mm512_storeu_si512(a + 32, z);
        _mm512_storeu_si512(a + 48, z);
    }
    return 0;
}

/* Bit j: v[j] >= floor, for the 64 scores of v. */
__attribute__((target("avx512f"))) static uint64_t ge64_avx512(const uint32_t *v, uint32_t floor)
{
    const __m512i f = _mm512_set1_epi32((int)floor);
    uint64_t m = 0;
    for (int q = 0; q < 64; q += 16)
        m |= (uint64_t)_mm512_cmpge_epu32_mask(_mm512_loadu_si512(v + q), f) << q;
    return m;
}
#endif

static uint32_t take_scalar(uint32_t *a, uint32_t bound, uint32_t *out)
{
    uint32_t n = 0, touched = 0;
    for (uint32_t j = 0; j < RANGE_DOCS; j++) {
        touched |= a[j];
        if (a[j] >= bound)
            out[n++] = a[j];
    }
    if (!n && touched)
        memset(a, 0, RANGE_DOCS * sizeof *a);
    return n;
}

static uint64_t ge_scalar(const uint32_t *v, uint32_t floor)
{
    uint64_t m = 0;
    for (uint32_t j = 0; j < RANGE_DOCS; j++)
        m |= (uint64_t)(v[j] >= floor) << j;
    return m;
}

/* v[lo .. hi) split without branches (a swap each, the boundary moving by the compare): those above
 * pivot (equal: those equal to it) first; returns the boundary. */
static uint32_t split(uint32_t *v, uint32_t lo, uint32_t hi, uint32_t pivot, int equal)
{
    uint32_t at = lo;
    for (uint32_t i = lo; i < hi; i++) {
        const uint32_t x = v[i];
        const uint32_t in = equal ? x == pivot : x > pivot;
        v[i] = v[at];
        v[at] = x;
        at += in;
    }
    return at;
}

/* The cands-th largest of v[0 .. n) (n > cands), by quickselect (v reordered: the cands largest in
 * front). Branch-free three-way splits: the scores are small integers with many ties, and a branchy
 * partition's mispredictions cost ~8% of a query on the realistic 333 k. */
static uint32_t select_nth(uint32_t *v, uint32_t n, uint32_t cands)
{
    uint32_t lo = 0, hi = n, want = cands - 1;
    for (;;) {
        const uint32_t a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi - 1];
        const uint32_t pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b); /* median of 3 */
        const uint32_t gt = split(v, lo, hi, pivot, 0), eq = split(v, gt, hi, pivot, 1);
        if (want < gt)
            hi = gt;
        else if (want < eq)
            return pivot;
        else
            lo = eq;
    }
}

/* The kept range g's 64 scores: in the accumulators, the last partial one in r->tail. */
static uint32_t *kept_scores(splade_searcher *s, struct splade_rescore *r, uint32_t g, uint32_t full)
{
    return g < full ? s->acc + (size_t)g * RANGE_DOCS : r->tail;
}

/* The cands documents of largest partial score in s->acc into c (their internal ids as docs: only
 * candidates; ties to the document added first, so that a cut keeping every term is exact), acc
 * zeroed. One pass over the accumulators, range by range (64 documents), keeps a running floor: the
 * cands-th largest score seen so far, never above the final cands-th largest S. A range whose maximum
 * is below it holds no candidate and is zeroed while in cache; the others are kept as they are and
 * their scores reaching the floor are collected (the floor rises each time cands more are in, by
 * quickselect). The collected scores give S; the kept ranges' documents above S are the candidates,
 * with those equal to S settled by sequence numbers. Separate passes (range maxima, a floor from
 * their histogram, every document reaching it offered to a heap, one memset) cost ~15% more of a
 * query on the realistic 333 k (bench/results/query-approx-half-2026-11-26.md). */
static void collect_candidates(splade_searcher *s, struct splade_rescore *r, uint32_t n_docs, topk *c)
{
    const uint32_t n_ranges = (n_docs + RANGE_DOCS - 1) / RANGE_DOCS, full = n_docs / RANGE_DOCS;
    const uint32_t k = (uint32_t)c->k;
    uint32_t *acc = s->acc, *at = r->kept, *top = r->top, kept = 0, nt = 0, bound = 1, dropped = 0;
    if (s->seg->deleted) /* a deleted document must not raise the floor */
        for (uint32_t w = 0; w < (n_docs + 63) / 64; w++)
            for (uint64_t m = s->seg->deleted[w]; m; m &= m - 1)
                if (w * 64 + (uint32_t)__builtin_ctzll(m) < n_docs)
                    acc[w * 64 + (uint32_t)__builtin_ctzll(m)] = 0;
    uint32_t (*take)(uint32_t *, uint32_t, uint32_t *) = take_scalar;
    uint64_t (*ge)(const uint32_t *, uint32_t) = ge_scalar;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) {
        take = take64_avx512;
        ge = ge64_avx512;
    }
#endif
    for (uint32_t g = 0; g < n_ranges; g++) {
        uint32_t got;
        if (g < full)
            got = take(acc + g * RANGE_DOCS, bound, top + nt);
        else { /* the last, partial range, moved into r->tail */
            const uint32_t left = n_docs - g * RANGE_DOCS;
            memset(r->tail, 0, sizeof r->tail);
            memcpy(r->tail, acc + g * RANGE_DOCS, left * sizeof *acc);
            memset(acc + g * RANGE_DOCS, 0, left * sizeof *acc);
            got = take_scalar(r->tail, bound, top + nt);
        }
        if (got) {
            at[kept++] = g;
            nt += got;
            if (nt >= 2 * k) { /* the k largest so far stay in front: the floor rises */
                bound = select_nth(top, nt, k);
                for (uint32_t i = k; i < nt; i++) /* scores equal to it left out: a tie to settle */
                    dropped = top[i] == bound ? bound : dropped;
                nt = k;
            }
        }
    }
    const uint32_t kth = nt >= k ? select_nth(top, nt, k) : 1; /* (fewer than k scores: all of them) */
    uint32_t above = 0, equal = 0;
    for (uint32_t i = 0; i < nt; i++) {
        above += top[i] > kth;
        equal += top[i] == kth;
    }
    /* every score equal to kth is in top unless some were left out: then, or if they outnumber the
     * places left, the tie is settled by sequence numbers (a lookup each, at random) */
    const int tie = above + equal > k || dropped == kth;
    topk ties = {r->ties, 0, (int)(k - above)};
    for (uint32_t i = 0; i < kept; i++) {
        uint32_t *v = kept_scores(s, r, at[i], full);
        for (uint64_t m = ge(v, kth); m; m &= m - 1) {
            const uint32_t j = (uint32_t)__builtin_ctzll(m), d = at[i] * RANGE_DOCS + j;
            if (v[j] > kth || !tie)
                c->h[c->n++] = (topk_hit){0, d, v[j]}; /* (no tie to settle: no key) */
            else
                topk_offer(&ties, (topk_hit){splade_segment_seq(s->seg, d), d, v[j]}); /* the exact search's tie rule */
        }
        memset(v, 0, RANGE_DOCS * sizeof *v);
    }
    for (int i = 0; i < ties.n; i++)
        c->h[c->n++] = ties.h[i];
}

/* Swaps query terms a and b (their cursors and term ids) in the searcher's order. */
static void swap_terms(splade_searcher *s, int a, int b)
{
    if (a == b)
        return;
    cursor c = s->cursors[a];
    int32_t t = s->terms[a];
    s->cursors[a] = s->cursors[b];
    s->terms[a] = s->terms[b];
    s->cursors[b] = c;
    s->terms[b] = t;
}

/* The candidates are picked without the terms whose lists hold more than COMMON_SHARE of the segment's
 * documents: such a term adds about the same to every candidate, so it ranks them little, and it
 * costs the most postings (the rescoring adds it back exactly). On the realistic 100 k, with 12
 * terms and 100 candidates: recall@10 0.9565 either way, 126-129 µs of CPU at the median instead of
 * 157 (p99 201 instead of 292); at 0.1 the recall falls to 0.88 (query-approx-2026-11-26.md). Fitted
 * on that collection. */
#define COMMON_SHARE 0.2

/* Moves the cursors of the lists no longer than COMMON_SHARE of the segment's documents to the front,
 * returns their number (n, all kept, when there is none or only such lists). Only where the cut
 * drops terms anyway: a cut that keeps every term stays exact. */
static int drop_common(splade_searcher *s, int n)
{
    uint64_t most = (uint64_t)(COMMON_SHARE * s->seg->n_docs);
    int m = 0;
    for (int i = 0; i < n; i++)
        m += s->cursors[i].n_postings <= most;
    if (m == 0 || m == n)
        return n;
    m = 0;
    for (int i = 0; i < n; i++)
        if (s->cursors[i].n_postings <= most) {
            swap_terms(s, m, i);
            m++;
        }
    return m;
}

/* Asks for document d's forward entries (a candidate's are rarely in cache). */
static void prefetch_doc(const splade_forward *f, uint32_t d)
{
    uint64_t from = f->off[d], n = f->off[d + 1] - from;
    if (!n)
        return;
    const char *t = f->t16 ? (const char *)(f->t16 + from) : (const char *)(f->t32 + from);
    size_t tbytes = n * (f->t16 ? 2 : 4);
    for (size_t o = 0; o < tbytes; o += 64)
        __builtin_prefetch(t + o);
    __builtin_prefetch(t + tbytes - 1);
    for (size_t o = 0; o < n; o += 64)
        __builtin_prefetch(f->imp + from + o);
    __builtin_prefetch(f->imp + from + n - 1);
}

/* acc[base + docs[i]] += qw x imps[i] for the n distinct doc ids of a copy's window head (ids past
 * n_docs skipped). */
static void add_prefix_scalar(uint32_t *acc, uint32_t base, const uint16_t *docs, const uint8_t *imps, uint32_t n,
                              uint32_t qw, uint32_t n_docs)
{
    for (uint32_t i = 0; i < n; i++)
        if (base + docs[i] < n_docs)
            acc[base + docs[i]] += qw * imps[i];
}

#if defined(__x86_64__)
/* 16 postings a step, the last step masked (a window's share of a list is often short). */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void add_prefix_avx512(uint32_t *acc, uint32_t base,
                                                                 const uint16_t *docs, const uint8_t *imps,
                                                                 uint32_t n, uint32_t qw, uint32_t n_docs)
{
    const __m512i lim = _mm512_set1_epi32((int)n_docs), w = _mm512_set1_epi32((int)qw), b = _mm512_set1_epi32((int)base);
    for (uint32_t i = 0; i < n; i += 16) {
        const __mmask16 in = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512i idx = _mm512_add_epi32(b, _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(in, docs + i)));
        __mmask16 ok = _mm512_mask_cmplt_epu32_mask(in, idx, lim);
        __m512i imp = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(in, imps + i));
        __m512i a = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), ok, idx, (const void *)acc, 4);
        _mm512_mask_i32scatter_epi32((void *)acc, ok, idx, _mm512_add_epi32(a, _mm512_mullo_epi32(imp, w)), 4);
    }
}
#endif

typedef void add_prefix_fn(uint32_t *, uint32_t, const uint16_t *, const uint8_t *, uint32_t, uint32_t, uint32_t);

static add_prefix_fn *pick_add_prefix(void)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
        return add_prefix_avx512;
#endif
    return add_prefix_scalar;
}

/* The lowest impact of copy c reached at threshold theta (query impact x impact >= theta). */
static uint32_t lowest_impact(const struct copied *c, uint32_t theta)
{
    /* ceil(theta / qw) = floor((theta - 1) / qw) + 1, by a multiplication: the bisection's divisions
     * cost ~2% of a query; (theta - 1) / qw is an integer or at least 1/255 from one, far beyond a
     * double's error */
    return (uint32_t)((double)(theta - 1) * c->inv) + 1;
}

/* One (window, copy) pair's search for its head: the postings of impact >= low at the front of the
 * window's imps (by decreasing impact), found as lo once len is 0. */
struct head_search {
    const uint8_t *imps;
    uint32_t lo, len;
    uint8_t low;
};

/* Every pair's head, the binary searches advanced in lockstep without branches: one search after the
 * other cost ~9% of a query on the realistic 333 k (24 copies x 6 windows, each probe a miss into the
 * copies and a mispredicted branch); in lockstep a round's probes are independent loads whose misses
 * overlap, and each search starts within its level bracket (impact_order.h): a few postings. */
static void search_heads(struct head_search *h, uint32_t n)
{
    uint32_t any = 1;
    while (any) {
        any = 0;
        for (uint32_t p = 0; p < n; p++) {
            const uint32_t len = h[p].len, half = len >> 1, i = len ? h[p].lo + half : 0;
            const int take = len && h[p].imps[i] >= h[p].low;
            h[p].lo += take ? half + 1 : 0;
            h[p].len = take ? len - half - 1 : half;
            any |= h[p].len;
        }
    }
}

/* Postings of the n copies at threshold theta. */
static uint64_t taken(const struct copied *c, int n, uint32_t theta)
{
    uint64_t sum = 0;
    for (int j = 0; j < n; j++) {
        uint32_t v = lowest_impact(&c[j], theta);
        sum += v <= 255 ? c[j].l.ge[v] : 0;
    }
    return sum;
}

/* The lowest threshold whose postings fit in the budget (1: every posting of impact >= 1, the exact
 * pass; impact-0 postings add nothing). The count falls as the threshold rises: bisection over the
 * 16-bit products. */
static uint32_t budget_threshold(const struct copied *c, int n, uint64_t budget)
{
    uint32_t lo = 1, hi = 255 * 255 + 1; /* taken(hi) = 0 */
    if (taken(c, n, lo) <= budget)
        return lo;
    while (hi - lo > 1) { /* taken(lo) > budget >= taken(hi) */
        uint32_t mid = lo + (hi - lo) / 2;
        if (taken(c, n, mid) <= budget)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

/* The budgeted candidate pass (splade_search_opts.budget), score-at-a-time as JASS: over the m cut
 * terms, the lists without an impact-ordered copy (short ones) are added whole; from the copies, the
 * postings of query impact x impact >= the threshold that keeps them within the budget: in each window
 * of a copy, the head of its postings by decreasing impact, window after window. Score-at-a-time
 * reads the postings that move scores most first: on the realistic 333 k, 120 k postings pick
 * candidates as well as the 264 k of the 14 heaviest terms' whole lists (bench/results/
 * query-approx-scale-2026-11-26.md). They visit the accumulators out of order (~1 ns a posting, as
 * much as a whole list's in doc-id order with its decoding); smaller windows that keep them in L1
 * were slower (the heads' reads from memory, scattered). -1 when memory fails. */
static int budget_pass(splade_searcher *s, struct splade_rescore *r, int m)
{
    const splade_impact_order *o = splade_index_impact_order(s->seg->ix);
    if (!o)
        return -1;
    const uint32_t n_docs = s->seg->n_docs;
    int whole = 0, n = 0;
    for (int i = 0; i < m; i++) {
        splade_impact_list l;
        if (s->cursors[i].qw && splade_impact_list_of(o, s->terms[i], &l)) {
            r->copies[n++] = (struct copied){l, s->cursors[i].qw, 1.0 / s->cursors[i].qw, 0};
        } else { /* to the front, for one splade_taat_add_lists */
            swap_terms(s, whole, i);
            whole++;
        }
    }
    splade_taat_add_lists(s, s->cursors, whole, n_docs);
    const uint32_t theta = budget_threshold(r->copies, n, (uint64_t)s->opts.budget);
    int live = 0;
    for (int j = 0; j < n; j++) { /* the copies that reach the threshold, to the front */
        uint32_t low = lowest_impact(&r->copies[j], theta);
        if (low <= 255) {
            struct copied c = r->copies[live];
            r->copies[live] = r->copies[j];
            r->copies[j] = c;
            r->copies[live].low = (uint8_t)low;
            s->stats.postings_scored += r->copies[live].l.ge[low];
            live++;
        }
    }
    const uint32_t pairs = o->n_win * (uint32_t)live;
    if (pairs > r->heads_cap) {
        free(r->heads);
        r->heads = malloc((size_t)pairs * sizeof *r->heads);
        r->heads_cap = r->heads ? pairs : 0;
        if (!r->heads)
            return -1;
    }
    static const uint8_t none = 0; /* an empty bracket's probe (never read: its len is 0) */
    for (uint32_t w = 0, p = 0; w < o->n_win; w++)
        for (int j = 0; j < live; j++, p++) { /* each head within its impact levels' bracket */
            const struct copied *c = &r->copies[j];
            const uint32_t *lvl = c->l.lvl + (size_t)w * SPLADE_IMPACT_LEVELS;
            const uint32_t below = c->low / 4, above = (c->low + 3) / 4;
            const uint32_t hi = lvl[below], lo = above < SPLADE_IMPACT_LEVELS ? lvl[above] : 0;
            r->heads[p] = (struct head_search){hi > lo ? c->l.imps + c->l.win[w] : &none, lo, hi - lo, c->low};
        }
    search_heads(r->heads, pairs);
    add_prefix_fn *add_prefix = pick_add_prefix();
    for (uint32_t w = 0, p = 0; w < o->n_win; w++) /* window by window: its accumulators stay in cache */
        for (int j = 0; j < live; j++, p++) {
            const struct copied *c = &r->copies[j];
            const uint32_t from = c->l.win[w];
            add_prefix(s->acc, w << SPLADE_IMPACT_WINDOW_SHIFT, c->l.docs + from, c->l.imps + from, r->heads[p].lo,
                       c->qw, n_docs);
        }
    return 0;
}

int splade_rescore(splade_searcher *s, int n, topk *t)
{
    const int cands = s->opts.rescore > t->k ? s->opts.rescore : t->k; /* (fewer could not fill the k) */
    const splade_forward *f = splade_index_forward(s->seg->ix);
    struct splade_rescore *r = f ? scratch(s, splade_index_get_info(s->seg->ix)->n_terms, n, cands) : NULL;
    if (!r)
        return -1;
    for (int i = 0; i < n; i++) {
        r->terms[i] = s->terms[i];
        r->qimp[s->terms[i]] = (uint8_t)s->cursors[i].qw; /* query impacts are 8-bit */
    }
    int cut = s->opts.query_cut; /* (a cut keeping every term keeps the common ones: exact) */
    int m = splade_cut_cursors(s, cut > 0 && cut < n ? drop_common(s, n) : n);
    topk c = {r->cand, 0, cands};
    const float f_ = s->opts.bound_factor;
    int dense = 1;
    if (f_ > 0 && f_ < 1) { /* the bound factor asks for pruning: windowed TAAT over the cut */
        dense = 0;
        if (splade_choose_algo(s, m) == SPLADE_ALGO_TAAT || splade_wtaat(s, m, &c, &s->opts) != 0)
            splade_taat(s, m, &c);
    } else {
        if (s->opts.budget <= 0)
            splade_taat_add_lists(s, s->cursors, m, s->seg->n_docs);
        else if (budget_pass(s, r, m) != 0) {
            for (int i = 0; i < n; i++) /* (the query impacts set above: zero again) */
                r->qimp[r->terms[i]] = 0;
            return -1;
        }
        collect_candidates(s, r, s->seg->n_docs, &c);
    }
    for (int i = 0; i < c.n; i++) { /* the candidates' entries asked for at once: their misses overlap */
        uint32_t d = c.h[i].doc = dense ? c.h[i].doc : internal_id(s->seg, c.h[i].doc);
        prefetch_doc(f, d);
    }
    exact_score_fn *exact_score = pick_exact_score();
    for (int i = 0; i < c.n; i++) {
        uint32_t d = c.h[i].doc;
        seg_offer(s, t, d, exact_score(f, r->qimp, d));
        s->stats.postings_scored += f->off[d + 1] - f->off[d];
    }
    s->stats.rescored += (uint64_t)c.n;
    for (int i = 0; i < n; i++)
        r->qimp[r->terms[i]] = 0;
    return 0;
}
