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

struct splade_rescore {
    uint8_t *qimp;   /* query impact per term of the segment file (zero but while rescoring) */
    uint32_t qimp_cap;
    int32_t *terms;  /* the query's terms in the segment (all of them, before the cut) */
    int terms_cap;
    topk_hit *cand;  /* the candidates' heap */
    int cand_cap;
    uint32_t *rmax;  /* per 64-document range, its largest partial score (then scratch of select) */
    uint32_t rmax_cap;
    uint32_t *vals;  /* the nonzero partial scores, where ranges are fewer than candidates */
    uint32_t vals_cap;
    struct copied *copies; /* the budgeted pass's impact-ordered lists (terms_cap of them) */
};

/* A cut term's impact-ordered copy (impact_order.h), for the budgeted pass. */
struct copied {
    splade_impact_list l;
    uint32_t qw;
    uint8_t low; /* its lowest impact taken (0: none) */
};

#define RANGE_DOCS (1u << SPLADE_RANGE_SHIFT)

void splade_rescore_free(struct splade_rescore *r)
{
    if (!r)
        return;
    free(r->qimp);
    free(r->terms);
    free(r->cand);
    free(r->rmax);
    free(r->vals);
    free(r->copies);
    free(r);
}

static struct splade_rescore *scratch(splade_searcher *s, uint32_t n_terms, int n, int cands)
{
    struct splade_rescore *r = s->rs ? s->rs : (s->rs = calloc(1, sizeof *s->rs));
    if (!r)
        return NULL;
    uint32_t ranges = 2 * ((splade_index_max_segment_docs(s->ix) + RANGE_DOCS - 1) / RANGE_DOCS) + 1;
    if (ranges > r->rmax_cap) {
        free(r->rmax);
        r->rmax = malloc(ranges * sizeof *r->rmax);
        r->rmax_cap = r->rmax ? ranges : 0;
    }
    if (r->rmax_cap < ranges)
        return NULL;
    if (n_terms > r->qimp_cap) {
        free(r->qimp);
        r->qimp = calloc(n_terms, 1);
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
        r->cand = malloc((size_t)cands * sizeof *r->cand);
        r->cand_cap = r->cand ? cands : 0;
    }
    return r->qimp_cap >= n_terms && r->terms_cap >= n && r->cand_cap >= cands ? r : NULL;
}

/* Internal id of snapshot doc id `doc` in the current segment (a hit of it: not deleted). */
static uint32_t internal_id(const splade_segment *g, uint32_t doc)
{
    return g->deleted ? g->live[doc - g->base] : doc - g->base;
}

static uint32_t exact_score(const splade_forward *f, const uint8_t *qimp, uint32_t d)
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
/* The largest of 64 accumulators (a full range). */
__attribute__((target("avx512f"))) static uint32_t max64_avx512(const uint32_t *a)
{
    __m512i m = _mm512_max_epu32(_mm512_max_epu32(_mm512_loadu_si512(a), _mm512_loadu_si512(a + 16)),
                                 _mm512_max_epu32(_mm512_loadu_si512(a + 32), _mm512_loadu_si512(a + 48)));
    return _mm512_reduce_max_epu32(m);
}
#endif

static uint32_t max_scalar(const uint32_t *a, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t d = 0; d < n; d++)
        best = a[d] > best ? a[d] : best;
    return best;
}

/* rmax[g] = the largest of range g's accumulators, for the n_docs documents' ranges. */
static void range_maxima(const uint32_t *acc, uint32_t n_docs, uint32_t *rmax)
{
    uint32_t g = 0;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f"))
        for (; (g + 1) * RANGE_DOCS <= n_docs; g++)
            rmax[g] = max64_avx512(acc + g * RANGE_DOCS);
#endif
    for (; g * RANGE_DOCS < n_docs; g++) {
        uint32_t o = g * RANGE_DOCS;
        rmax[g] = max_scalar(acc + o, o + RANGE_DOCS < n_docs ? RANGE_DOCS : n_docs - o);
    }
}

static int by_desc_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x < y) - (x > y);
}

/* The cands-th largest of v[0 .. n) (n > cands), by quickselect (v reordered). */
static uint32_t select_nth(uint32_t *v, uint32_t n, uint32_t cands)
{
    uint32_t lo = 0, hi = n - 1, want = cands - 1;
    while (hi - lo > 16) {
        uint32_t pivot = v[lo + (hi - lo) / 2], i = lo, j = hi;
        while (i <= j) { /* Hoare partition, descending */
            while (v[i] > pivot)
                i++;
            while (v[j] < pivot)
                j--;
            if (i <= j) {
                uint32_t x = v[i];
                v[i++] = v[j];
                v[j--] = x;
            }
        }
        if (want <= j)
            hi = j;
        else if (want >= i)
            lo = i;
        else
            return v[want];
    }
    qsort(v + lo, hi - lo + 1, sizeof *v, by_desc_u32);
    return v[want];
}

/* The cands-th largest nonzero score of acc[0 .. n_docs) (1 if fewer), for a segment of fewer ranges
 * than candidates (SciFact's 81 ranges for 100: offering every document instead cost 40 µs a
 * query); without memory for the copy, 1 (every document offered: slower, the same candidates). */
static uint32_t score_floor(struct splade_rescore *r, const uint32_t *acc, uint32_t n_docs, uint32_t cands)
{
    if (n_docs > r->vals_cap) {
        free(r->vals);
        r->vals = malloc((size_t)n_docs * sizeof *r->vals);
        r->vals_cap = r->vals ? n_docs : 0;
        if (!r->vals)
            return 1;
    }
    uint32_t nz = 0;
    for (uint32_t d = 0; d < n_docs; d++)
        if (acc[d])
            r->vals[nz++] = acc[d];
    return nz > cands ? select_nth(r->vals, nz, cands) : 1;
}

/* A floor of the cands-th largest of the n range maxima (fewer than cands are zero; top: the largest):
 * the lower edge of the histogram bucket (of 4,096 up to top) holding it. Ranges in that bucket but
 * below the cands-th maximum are scanned for nothing (a few); its exact value by quickselect cost
 * 7% of a query on the realistic 333 k's 5,207 ranges. */
static uint32_t maxima_floor(const uint32_t *rmax, uint32_t n, uint32_t top, uint32_t cands)
{
    enum { BUCKETS = 4096 };
    uint32_t hist[BUCKETS] = {0}, shift = 0;
    while ((top >> shift) >= BUCKETS)
        shift++;
    for (uint32_t g = 0; g < n; g++)
        hist[rmax[g] >> shift]++;
    uint32_t seen = 0, b = top >> shift;
    while (seen + hist[b] < cands && b > 0)
        seen += hist[b--];
    return b << shift ? b << shift : 1;
}

/* The cands documents of largest partial score in s->acc into c (their internal ids as docs: only
 * candidates; ties to the document added first, so that a cut keeping every term is exact), acc
 * zeroed. The cands-th largest range maximum is a floor of the cands-th largest score (each of those
 * ranges holds a document at its maximum), so only ranges reaching it are scanned: ~cands of ~1,600
 * on the realistic 100 k. */
static void collect_candidates(splade_searcher *s, struct splade_rescore *r, uint32_t n_docs, topk *c)
{
    uint32_t n_ranges = (n_docs + RANGE_DOCS - 1) / RANGE_DOCS, *rmax = r->rmax;
    const uint32_t *acc = s->acc;
    uint32_t nz = 0;
    if (s->seg->deleted) /* a deleted document must not set a range's maximum (the floor below) */
        for (uint32_t w = 0; w < (n_docs + 63) / 64; w++)
            for (uint64_t m = s->seg->deleted[w]; m; m &= m - 1)
                if (w * 64 + (uint32_t)__builtin_ctzll(m) < n_docs)
                    s->acc[w * 64 + (uint32_t)__builtin_ctzll(m)] = 0;
    range_maxima(acc, n_docs, rmax);
    uint32_t top = 0;
    for (uint32_t g = 0; g < n_ranges; g++) {
        nz += rmax[g] != 0;
        top = rmax[g] > top ? rmax[g] : top;
    }
    uint32_t floor = nz > (uint32_t)c->k ? maxima_floor(rmax, n_ranges, top, (uint32_t)c->k)
                                         : score_floor(r, acc, n_docs, (uint32_t)c->k);
    for (uint32_t g = 0; g < n_ranges; g++) {
        if (rmax[g] < floor)
            continue;
        uint32_t o = g * RANGE_DOCS, e = o + RANGE_DOCS < n_docs ? o + RANGE_DOCS : n_docs;
        for (uint32_t d = o; d < e; d++) {
            uint32_t a = acc[d];
            if (a >= floor && a >= topk_threshold(c))
                topk_offer(c, (topk_hit){splade_segment_seq(s->seg, d), d, a}); /* the exact search's tie rule */
        }
    }
    memset(s->acc, 0, (size_t)n_docs * sizeof *s->acc);
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
    return (theta + c->qw - 1) / c->qw;
}

/* Postings of impact >= low at the head of a window's n (by decreasing impact): a lower bound. */
static uint32_t head_of(const uint8_t *imps, uint32_t n, uint8_t low)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (imps[mid] >= low)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
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
            r->copies[n++] = (struct copied){l, s->cursors[i].qw, 0};
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
    add_prefix_fn *add_prefix = pick_add_prefix();
    for (uint32_t w = 0; w < o->n_win; w++) /* window by window: its accumulators stay in cache */
        for (int j = 0; j < live; j++) {
            const struct copied *c = &r->copies[j];
            const uint32_t from = c->l.win[w], len = head_of(c->l.imps + from, c->l.win[w + 1] - from, c->low);
            add_prefix(s->acc, w << SPLADE_IMPACT_WINDOW_SHIFT, c->l.docs + from, c->l.imps + from, len, c->qw, n_docs);
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
