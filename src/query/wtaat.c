/* Windowed dense-accumulator term-at-a-time (SINDI-style, Li et al. 2025), exact by default.
 *
 * On real SPLADE vectors the bounds of block-max methods are loose (a frequent term's impacts are
 * near-uniform within blocks), so BMP's 64-document ranges mostly survive and each costs a seek per
 * term; exhaustive TAAT streams every posting but scatters into an accumulator as large as the
 * collection (cache misses) and scans all of it. Here the documents are cut into windows of
 * WINDOW = 64 ranges (4,096 documents, a 16 KB accumulator that stays in L1):
 *  - each range's bound is Σ query impact × the term's range maximum (the RANGES section, as BMP);
 *    a window's bound is the largest of its ranges';
 *  - the PRIME most promising windows are scored first (to raise the k-th score early: those with
 *    the most ranges whose bound is within 10% of the largest, then by bound), then the rest in
 *    ascending order, each skipped if its bound cannot beat the k-th score;
 *  - inside a window, a 64-bit mask marks the ranges that can still win; each term scores only the
 *    posting blocks that overlap a live range where it occurs (whole blocks otherwise skipped
 *    without decoding), adding impacts straight into the dense window accumulator (a conflict-free
 *    SIMD scatter: a block's doc ids are distinct);
 *  - then only live, touched ranges are scanned for hits and zeroed.
 * Exact: a range is dropped only when its bound is strictly below the k-th score (an equal bound may
 * still win on the sequence number), and every document of a live range gets all its postings.
 * Approximate (splade_search_opts): keep only the query's heaviest terms, and/or drop a range unless
 * bound × bound_factor beats the k-th score (Seismic's heap factor). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "index/format.h"
#include "index/postings.h"
#include "query/dense_ranges.h"
#include "query/search_internal.h"
#include "query/wtaat.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define RANGE_DOCS (1u << SPLADE_RANGE_SHIFT)
#define WINDOW (64 * RANGE_DOCS)
#define PRIME 4

struct splade_wtaat {
    uint32_t max_ranges, words;  /* ranges of the largest segment; 64-bit words (= windows) per bitmap */
    uint32_t *ub;                /* bound per range */
    uint32_t *ids;               /* decoded range ids (sparse tables), then window order */
    uint32_t *wub;               /* bound per window */
    uint32_t *promise;           /* per window, the order key of the first windows (window_promise) */
    uint64_t *present;           /* per term, a bit per range where it occurs */
    uint8_t *wmax;               /* per term, its largest impact in each window */
    const uint8_t **dense;       /* per term, its dense range maxima (NULL: a sparse table) */
    int n_dense;                 /* terms with dense tables: the first n_dense of use[] */
    uint32_t ne_ub[64];          /* bound of the non-essential terms per range of a window */
    int terms_cap;
    cursor **use;                /* the cursors searched (all, or the heaviest query_cut) */
    uint32_t acc[WINDOW];
};

void splade_wtaat_free(struct splade_wtaat *w)
{
    if (!w)
        return;
    free(w->ub);
    free(w->ids);
    free(w->wub);
    free(w->promise);
    free(w->present);
    free(w->wmax);
    free(w->dense);
    free(w->use);
    free(w);
}

/* Scratch for n terms over the index's largest segment (kept across queries). */
static struct splade_wtaat *scratch(splade_searcher *s, int n)
{
    struct splade_wtaat *w = s->wt;
    if (!w) {
        w = s->wt = calloc(1, sizeof *w);
        if (!w)
            return NULL;
        w->max_ranges = (uint32_t)((splade_index_max_segment_docs(s->ix) + RANGE_DOCS - 1) / RANGE_DOCS);
        w->words = w->max_ranges / 64 + 1;
        w->ub = malloc((size_t)w->words * 64 * sizeof *w->ub);
        w->ids = malloc(((size_t)w->words * 64 + 16) * sizeof *w->ids); /* decoder may write ahead */
        w->wub = malloc((size_t)w->words * sizeof *w->wub);
        w->promise = malloc((size_t)w->words * sizeof *w->promise);
        if (!w->ub || !w->ids || !w->wub || !w->promise)
            return NULL;
    }
    if (n > w->terms_cap) {
        free(w->present);
        free(w->wmax);
        free(w->dense);
        free(w->use);
        w->present = malloc((size_t)n * w->words * sizeof *w->present);
        w->wmax = malloc((size_t)n * w->words);
        w->dense = malloc((size_t)n * sizeof *w->dense);
        w->use = malloc((size_t)n * sizeof *w->use);
        w->terms_cap = w->present && w->wmax && w->dense && w->use ? n : 0;
        if (!w->terms_cap)
            return NULL;
    }
    return w;
}

/* The largest of 64 bytes (a window's range maxima of one term). GCC -O2 does not vectorize the
 * plain loop (it was over half of a long query's setup); SSE2 is part of x86-64. */
static inline uint8_t max64(const uint8_t *d)
{
#if defined(__x86_64__)
    __m128i m = _mm_max_epu8(_mm_max_epu8(_mm_loadu_si128((const __m128i *)d), _mm_loadu_si128((const __m128i *)(d + 16))),
                             _mm_max_epu8(_mm_loadu_si128((const __m128i *)(d + 32)), _mm_loadu_si128((const __m128i *)(d + 48))));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 8));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 4));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 2));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 1));
    return (uint8_t)_mm_cvtsi128_si32(m);
#else
    uint8_t m = 0;
    for (int r = 0; r < 64; r++)
        m = d[r] > m ? d[r] : m;
    return m;
#endif
}

/* Adds a term's range maxima into w->ub, sets its presence bits and its per-window maxima;
 * n_ranges of this segment. */
static void add_term_ranges(struct splade_wtaat *w, const splade_segment *g, int32_t term, uint32_t qw,
                            uint64_t *present, uint8_t *wmax, const uint8_t **dense, uint32_t n_ranges)
{
    splade_term_ranges tr;
    splade_index_ranges(g->ix, term, &tr);
    *dense = tr.dense ? tr.data : NULL;
    memset(present, 0, w->words * sizeof *present);
    memset(wmax, 0, w->words);
    splade_ranges_add(&tr, n_ranges, qw, w->ids, w->ub, present);
    if (tr.dense) {
        uint32_t r0 = 0;
        for (; r0 + 64 <= n_ranges; r0 += 64)
            wmax[r0 >> 6] = max64(tr.data + r0);
        uint8_t m = 0;
        for (uint32_t r = r0; r < n_ranges; r++)
            m = tr.data[r] > m ? tr.data[r] : m;
        if (r0 < n_ranges)
            wmax[r0 >> 6] = m;
        return;
    }
    for (uint32_t j = 0; j < tr.n; j++) { /* w->ids: the range ids splade_ranges_add decoded */
        uint32_t r = w->ids[j];
        if (r < n_ranges)
            wmax[r >> 6] = tr.data[j] > wmax[r >> 6] ? tr.data[j] : wmax[r >> 6];
    }
}

static int by_qw_desc(const void *a, const void *b)
{
    const cursor *x = *(cursor *const *)a, *y = *(cursor *const *)b;
    return (x->qw < y->qw) - (x->qw > y->qw);
}

/* Terms with dense range tables first (only they may be non-essential: their maxima per range are
 * at hand; a sparse table's term has few postings and is always scored), then by ascending bound
 * over the square root of the list's length: the order in which score_window makes them
 * non-essential. Any order is exact; this one decides which postings the essential pass reads in
 * full. MaxScore's ascending bound leaves long lists of middling weight essential; bound per posting
 * (the knapsack's greedy order) sends the longest lists to the non-essential pass, which still reads
 * them over every candidate range. The square root between the two, measured on the realistic 100 k,
 * 333 k, its 1 M of copies and a synthetic 200 k: essential postings -17..-22%, median -3..-6%, p99
 * -4..-10%, the same hits (bench/results/query-term-order-2026-11-26.md).
 * The sort key: bit 63 set for a sparse table, 31 bits of bound / sqrt(postings), the cursor's index. */
static int by_key(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The cursors to search (all of them, or the query_cut with the largest query impacts), by ascending
 * upper bound: the order in which MaxScore makes terms non-essential. */
static int pick_terms(splade_searcher *s, struct splade_wtaat *w, int n, int query_cut, int32_t *term_of)
{
    for (int i = 0; i < n; i++)
        w->use[i] = &s->cursors[i];
    if (query_cut <= 0 || query_cut >= n)
        query_cut = n;
    else
        qsort(w->use, (size_t)n, sizeof *w->use, by_qw_desc);
    uint64_t key[query_cut > 0 ? query_cut : 1];
    w->n_dense = 0;
    for (int i = 0; i < query_cut; i++) {
        splade_term_ranges tr;
        int idx = (int)(w->use[i] - s->cursors);
        splade_index_ranges(s->seg->ix, s->terms[idx], &tr);
        w->n_dense += tr.dense;
        /* ub <= 255 x 255, so ub x 2^15 / sqrt(n) < 2^31 */
        const uint64_t order = (uint64_t)((double)w->use[i]->ub * 32768.0 / sqrt((double)w->use[i]->n_postings + 1.0));
        key[i] = (uint64_t)!tr.dense << 63 | order << 32 | (uint32_t)idx;
    }
    qsort(key, (size_t)query_cut, sizeof *key, by_key);
    for (int i = 0; i < query_cut; i++) {
        w->use[i] = &s->cursors[(uint32_t)key[i]];
        term_of[i] = s->terms[(uint32_t)key[i]];
    }
    return query_cut;
}

/* Could a document with this bound enter, given the factor? (Not full: any positive bound.) */
static inline int bound_live(const topk *t, uint32_t bound, float factor)
{
    if (t->n < t->k)
        return bound > 0;
    if (factor < 1.0f)
        return (float)bound * factor > (float)t->h[0].score;
    return bound >= t->h[0].score;
}

/* Mask of the window's ranges that can still win. */
static uint64_t live_ranges(const struct splade_wtaat *w, uint32_t win, uint32_t n_ranges, const topk *t,
                            float factor)
{
    uint64_t live = 0;
    uint32_t first = win * 64, n = n_ranges - first < 64 ? n_ranges - first : 64;
    for (uint32_t j = 0; j < n; j++)
        live |= (uint64_t)bound_live(t, w->ub[first + j], factor) << j;
    return live;
}

/* Ranges of the window [base, base + WINDOW) that docs [lo, hi] overlap, as a mask. */
static inline uint64_t span_mask(uint32_t lo, uint32_t hi, uint32_t base)
{
    uint32_t a = lo > base ? (lo - base) >> SPLADE_RANGE_SHIFT : 0;
    uint32_t b = hi - base < WINDOW ? (hi - base) >> SPLADE_RANGE_SHIFT : 63;
    return (b == 63 ? ~0ull : (2ull << b) - 1) & ~((1ull << a) - 1);
}

static void decode_block(cursor *c, uint32_t b, uint64_t *decodes)
{
    c->count = splade_list_block(c->blocks, c->n_blocks, c->n_postings, c->postings, b, c->docs, &c->imps);
    c->decoded = b;
    (*decodes)++;
}

static void scatter_scalar(uint32_t *acc, const uint32_t *docs, const uint8_t *imps, uint32_t from, uint32_t to,
                           uint32_t base, uint32_t qw)
{
    for (uint32_t j = from; j < to; j++)
        acc[docs[j] - base] += qw * imps[j];
}

#if defined(__x86_64__)
/* 16 postings per step: gather, add, scatter. Safe without conflict detection: the doc ids of one
 * block are strictly ascending, hence distinct. */
__attribute__((target("avx512f"))) static void scatter_avx512(uint32_t *acc, const uint32_t *docs,
                                                              const uint8_t *imps, uint32_t from, uint32_t to,
                                                              uint32_t base, uint32_t qw)
{
    const __m512i b = _mm512_set1_epi32((int)base), w = _mm512_set1_epi32((int)qw);
    uint32_t j = from;
    for (; j + 16 <= to; j += 16) {
        __m512i idx = _mm512_sub_epi32(_mm512_loadu_si512(docs + j), b);
        __m512i imp = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(imps + j)));
        __m512i a = _mm512_i32gather_epi32(idx, (const void *)acc, 4);
        a = _mm512_add_epi32(a, _mm512_mullo_epi32(imp, w));
        _mm512_i32scatter_epi32((void *)acc, idx, a, 4);
    }
    scatter_scalar(acc, docs, imps, j, to, base, qw);
}
#endif

typedef void scatter_fn(uint32_t *, const uint32_t *, const uint8_t *, uint32_t, uint32_t, uint32_t, uint32_t);

static scatter_fn *pick_scatter(void)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f"))
        return scatter_avx512;
#endif
    return scatter_scalar;
}

/* First position in the decoded block with doc >= target (the block's last doc is >= target). */
static uint32_t lower_bound(const cursor *c, uint32_t target)
{
    uint32_t a = 0, b = c->count - 1;
    while (a < b) {
        uint32_t mid = (a + b) / 2;
        if (c->docs[mid] < target)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

/* Asks for the data of c's blocks from block b on that overlap the window's ranges `want`, so that
 * their memory reads overlap instead of stalling one decode after the other. */
static void prefetch_blocks(const cursor *c, uint32_t b, uint64_t want, uint32_t base)
{
    uint32_t end = base + WINDOW;
    for (; b < c->n_blocks; b++) {
        uint32_t lo = b ? c->blocks[b - 1].last_doc + 1 : 0, hi = c->blocks[b].last_doc;
        if (lo >= end)
            break;
        if (span_mask(lo, hi, base) & want) {
            const char *p = (const char *)c->postings + c->blocks[b].offset;
            size_t len = b + 1 < c->n_blocks ? c->blocks[b + 1].offset - c->blocks[b].offset : 64;
            for (size_t o = 0; o < len; o += 64)
                __builtin_prefetch(p + o);
        }
        if (hi >= end - 1)
            break;
    }
}

/* Adds c's postings in the window's ranges `want` into acc; returns the ranges touched. */
static uint64_t score_term(splade_searcher *s, cursor *c, uint64_t want, uint32_t base, scatter_fn *scatter)
{
    uint32_t end = base + WINDOW, touched = 0;
    uint64_t mask = 0;
    uint32_t b = c->block = cursor_find_block(c, c->block, base + ((uint32_t)__builtin_ctzll(want) << SPLADE_RANGE_SHIFT));
    prefetch_blocks(c, b, want, base);
    for (; b < c->n_blocks; b++) {
        uint32_t lo = b ? c->blocks[b - 1].last_doc + 1 : 0, hi = c->blocks[b].last_doc;
        if (lo >= end)
            break;
        uint64_t span = span_mask(lo, hi, base);
        if (span & want) {
            if (c->decoded != b)
                decode_block(c, b, &s->stats.blocks_decoded);
            uint32_t from = lo < base ? lower_bound(c, base) : 0;
            uint32_t to = hi < end ? c->count : lower_bound(c, end);
            scatter(s->wt->acc, c->docs, c->imps, from, to, base, c->qw);
            touched += to - from;
            mask |= span;
        }
        if (hi >= end - 1)
            break; /* the block reaches the next window: keep it */
    }
    c->block = b < c->n_blocks ? b : c->n_blocks;
    s->stats.postings_scored += touched;
    return mask;
}

/* Offers the documents of the ranges `scan` and zeroes the ranges `touched`. */
static void collect(splade_searcher *s, uint32_t base, uint32_t n_docs, uint64_t scan, uint64_t touched, topk *t)
{
    uint32_t *acc = s->wt->acc;
    for (uint64_t m = scan; m; m &= m - 1) {
        uint32_t r = (uint32_t)__builtin_ctzll(m), o = r * RANGE_DOCS, best = 0;
        for (uint32_t j = 0; j < RANGE_DOCS; j++) /* vectorized: most ranges hold no winner */
            best = acc[o + j] > best ? acc[o + j] : best;
        if (t->n == t->k ? best < t->h[0].score : best == 0)
            continue; /* (an equal score may still win on its sequence number) */
        for (uint32_t j = 0; j < RANGE_DOCS && base + o + j < n_docs; j++)
            if (acc[o + j])
                seg_offer(s, t, base + o + j, acc[o + j]);
    }
    for (uint64_t m = touched; m; m &= m - 1)
        memset(acc + (uint32_t)__builtin_ctzll(m) * RANGE_DOCS, 0, RANGE_DOCS * sizeof *acc);
}

/* ub[j] += qw × m[j] for the n ranges of a window; qw = -(query impact) subtracts (modulo 2^32). The
 * loop of a full window has a constant count, which GCC's -O2 vectorizes (a variable one it does not). */
static inline void add_maxima(uint32_t *restrict ub, const uint8_t *restrict m, uint32_t qw, uint32_t n)
{
    if (n == 64) {
        for (uint32_t j = 0; j < 64; j++)
            ub[j] += qw * m[j];
        return;
    }
    for (uint32_t j = 0; j < n; j++)
        ub[j] += qw * m[j];
}

/* Takes dense term i's range maxima in window win out of w->ne_ub (it has been scored). */
static void drop_bounds(struct splade_wtaat *w, int i, uint32_t win, uint32_t n_ranges)
{
    uint32_t first = win * 64, n = n_ranges - first < 64 ? n_ranges - first : 64;
    add_maxima(w->ne_ub, w->dense[i] + first, -w->use[i]->qw, n);
}

/* w->ne_ub[j]: bound of the first ne terms (dense tables) in range j of window win. */
static void ne_bounds(struct splade_wtaat *w, int ne, uint32_t win, uint32_t n_ranges)
{
    uint32_t first = win * 64, n = n_ranges - first < 64 ? n_ranges - first : 64;
    memset(w->ne_ub, 0, sizeof w->ne_ub);
    for (int i = 0; i < ne; i++)
        add_maxima(w->ne_ub, w->dense[i] + first, w->use[i]->qw, n);
}

/* Ranges of `ranges` holding a document whose accumulated score plus rest[range] may still win. */
static uint64_t candidates(const uint32_t *acc, uint64_t ranges, const uint32_t *rest, const topk *t, float factor)
{
    uint64_t cand = 0;
    for (uint64_t m = ranges; m; m &= m - 1) {
        uint32_t r = (uint32_t)__builtin_ctzll(m), best = 0;
        for (uint32_t j = 0; j < RANGE_DOCS; j++) /* vectorized */
            best = acc[r * RANGE_DOCS + j] > best ? acc[r * RANGE_DOCS + j] : best;
        if (bound_live(t, best + rest[r], factor))
            cand |= 1ull << r;
    }
    return cand;
}

/* MaxScore inside the window: the dense-table terms (ascending bound) whose window maxima sum below
 * the k-th score are non-essential (a document holding only them cannot win). The essential terms
 * are added into the accumulator over the live ranges; the non-essential ones, heaviest first, only
 * over the ranges where some document's sum plus the range maxima of the non-essential terms not yet
 * added may still win: after each such term its maxima leave that rest and the candidate ranges are
 * narrowed again, so the lighter terms are decoded for ever fewer ranges (on the realistic 333 k
 * this cut the postings of the non-essential terms by 3.8x and the median time by ~30%,
 * bench/results/query-tail-2026-11-25.md). Only the ranges still candidates at the end are
 * collected; every document of a collected range has all its postings added, so its score is exact. */
static void score_window(splade_searcher *s, int n, uint32_t win, uint32_t n_ranges, topk *t, float factor,
                         scatter_fn *scatter)
{
    struct splade_wtaat *w = s->wt;
    if (!bound_live(t, w->wub[win], factor))
        return;
    uint64_t live = live_ranges(w, win, n_ranges, t, factor), touched = 0, scan;
    uint32_t base = win * WINDOW, rest = 0;
    int ne = 0;
    while (ne < w->n_dense) {
        uint32_t b = rest + w->use[ne]->qw * w->wmax[(size_t)ne * w->words + win];
        if (bound_live(t, b, factor))
            break;
        rest = b;
        ne++;
    }
    for (int i = ne; i < n && live; i++) {
        uint64_t want = w->present[(size_t)i * w->words + win] & live;
        if (want)
            touched |= score_term(s, w->use[i], want, base, scatter);
    }
    scan = live & touched;
    if (ne > 0 && scan) {
        ne_bounds(w, ne, win, n_ranges);
        scan = candidates(w->acc, scan, w->ne_ub, t, factor);
        for (int i = ne - 1; i >= 0 && scan; i--) {
            uint64_t want = w->present[(size_t)i * w->words + win] & scan;
            if (!want)
                continue; /* absent from the candidates: their rest does not change */
            touched |= score_term(s, w->use[i], want, base, scatter);
            if (i > 0) { /* (after the last term, collect checks the sums alone) */
                drop_bounds(w, i, win, n_ranges); /* changes only the ranges in want: rechecked */
                /* exactly, whatever the bound factor: these bounds near the documents' exact scores,
                 * and a factor applied to those would drop documents that beat the k-th score (an
                 * approximate search keeps its factor on the range bounds alone, as before) */
                scan = (scan & ~want) | candidates(w->acc, want, w->ne_ub, t, 1.0f);
            }
        }
    }
    collect(s, base, s->seg->n_docs, scan, touched, t);
}

/* Each window's bound: the largest of its ranges'. */
static uint32_t window_bounds(struct splade_wtaat *w, uint32_t n_ranges)
{
    uint32_t n_win = (n_ranges + 63) / 64;
    for (uint32_t v = 0; v < n_win; v++) {
        uint32_t m = 0, first = v * 64, last = first + 64 < n_ranges ? first + 64 : n_ranges;
        for (uint32_t r = first; r < last; r++)
            m = w->ub[r] > m ? w->ub[r] : m;
        w->wub[v] = m;
    }
    return n_win;
}

/* Each window's promise: its ranges whose bound is within 10% of the largest range bound, then its
 * own bound (16 bits each). A window holding many near-top ranges more often holds the documents
 * that set the k-th score than the one holding the single largest bound: scoring the 4 such windows
 * first cut the blocks decoded at p99 by ~10% on the realistic 333 k (2 by bound alone before),
 * bench/results/query-tail-2026-11-25.md. */
static void window_promise(struct splade_wtaat *w, uint32_t n_ranges, uint32_t n_win)
{
    uint32_t top = 0;
    for (uint32_t v = 0; v < n_win; v++)
        top = w->wub[v] > top ? w->wub[v] : top;
    uint64_t near = (uint64_t)top * 9; /* ub >= 0.9 top, in integers: 10 ub >= 9 top */
    for (uint32_t v = 0; v < n_win; v++) {
        uint32_t c = 0, first = v * 64, last = first + 64 < n_ranges ? first + 64 : n_ranges;
        for (uint32_t r = first; r < last; r++)
            c += (uint64_t)w->ub[r] * 10 >= near;
        w->promise[v] = c << 16 | (uint32_t)((uint64_t)w->wub[v] * 65535 / (top ? top : 1));
    }
}

int splade_wtaat(splade_searcher *s, int n, topk *t, const splade_search_opts *o)
{
    struct splade_wtaat *w = scratch(s, n);
    if (!w)
        return -1;
    int32_t term_of[n > 0 ? n : 1];
    n = pick_terms(s, w, n, o ? o->query_cut : 0, term_of);
    float factor = o && o->bound_factor > 0 && o->bound_factor < 1 ? o->bound_factor : 1.0f;
    uint32_t n_ranges = (s->seg->n_docs + RANGE_DOCS - 1) / RANGE_DOCS;
    memset(w->ub, 0, (size_t)n_ranges * sizeof *w->ub);
    for (int i = 0; i < n; i++)
        add_term_ranges(w, s->seg, term_of[i], w->use[i]->qw, w->present + (size_t)i * w->words,
                        w->wmax + (size_t)i * w->words, &w->dense[i], n_ranges);
    uint32_t n_win = window_bounds(w, n_ranges);
    window_promise(w, n_ranges, n_win);
    scatter_fn *scatter = pick_scatter();
    uint32_t primed[PRIME], n_primed = 0;
    for (int p = 0; p < PRIME; p++) { /* the most promising windows first: a high k-th score early */
        uint32_t best = UINT32_MAX;
        for (uint32_t v = 0; v < n_win; v++) {
            int seen = 0;
            for (uint32_t q = 0; q < n_primed; q++)
                seen |= primed[q] == v;
            if (!seen && w->wub[v] && (best == UINT32_MAX || w->promise[v] > w->promise[best]))
                best = v;
        }
        if (best == UINT32_MAX)
            break;
        primed[n_primed++] = best;
        score_window(s, n, best, n_ranges, t, factor, scatter);
    }
    for (uint32_t v = 0; v < n_win; v++) {
        int seen = 0;
        for (uint32_t q = 0; q < n_primed; q++)
            seen |= primed[q] == v;
        if (!seen)
            score_window(s, n, v, n_ranges, t, factor, scatter);
    }
    return 0;
}
