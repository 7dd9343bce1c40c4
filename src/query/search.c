/* Searcher scratch space and the splade_search entry point (include/splade/query.h). */
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "index/format.h"
#include "index/segment.h"
#include "index/forward.h"
#include "index/impact_order.h"
#include "common/big_alloc.h"
#include "query/auto_learn.h"
#include "query/rescore.h"
#include "query/search_internal.h"
#include "query/wtaat.h"
#include "splade.h"

int splade_searcher_create(const splade_index *ix, splade_searcher **out)
{
    if (!ix || !out)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_searcher_create: NULL argument");
    *out = calloc(1, sizeof **out);
    if (!*out)
        return splade_fail(SPLADE_ERR_NOMEM, "searcher");
    (*out)->ix = ix;
    return SPLADE_OK;
}

void splade_searcher_free(splade_searcher *s)
{
    if (!s)
        return;
    free(s->cursors);
    free(s->order);
    free(s->ub_prefix);
    free(s->bm);
    free(s->terms);
    free(s->acc);
    free(s->range_ub);
    free(s->range_ids);
    free(s->range_bits);
    free(s->heap);
    free(s->seg_order);
    free(s->seg_terms);
    free(s->parts);
    free(s->part_cursors);
    free(s->part_terms);
    splade_wtaat_free(s->wt);
    splade_rescore_free(s->rs);
    free(s);
}

/* Doc-id ranges of all segments together (BMP's queue covers them all). */
static size_t total_ranges(const splade_index *ix)
{
    size_t ranges = 0;
    for (int i = 0; i < splade_index_n_segments(ix); i++)
        ranges += ((size_t)splade_index_segment(ix, i)->n_docs + (1u << SPLADE_RANGE_SHIFT) - 1) >> SPLADE_RANGE_SHIFT;
    return ranges;
}

static int reserve_bmp(splade_searcher *s, int S)
{
    if (s->range_ub)
        return SPLADE_OK;
    size_t ranges = total_ranges(s->ix);
    s->range_ub = malloc((ranges + 1) * sizeof *s->range_ub);
    s->range_ids = malloc((ranges + 16) * sizeof *s->range_ids); /* decoder may write ahead */
    s->parts = malloc((size_t)(S + 1) * sizeof *s->parts);
    if (!s->range_ub || !s->range_ids || !s->parts)
        return splade_fail(SPLADE_ERR_NOMEM, "range bounds");
    return SPLADE_OK;
}

static int reserve(splade_searcher *s, int n, int k, splade_algo algo)
{
    int any = algo == SPLADE_ALGO_AUTO; /* may pick any method: scratch for all of them */
    if (n > s->cap) {
        free(s->cursors);
        free(s->order);
        free(s->ub_prefix);
        free(s->bm);
        free(s->terms);
        s->terms = malloc((size_t)n * sizeof *s->terms);
        s->cursors = malloc((size_t)n * sizeof *s->cursors);
        s->order = malloc((size_t)n * sizeof *s->order);
        s->ub_prefix = malloc((size_t)n * sizeof *s->ub_prefix);
        s->bm = malloc((size_t)n * sizeof *s->bm);
        s->cap = n;
        if (!s->cursors || !s->order || !s->ub_prefix || !s->bm || !s->terms) {
            s->cap = 0;
            return splade_fail(SPLADE_ERR_NOMEM, "searcher for %d terms", n);
        }
    }
    if (k > s->heap_cap) {
        free(s->heap);
        s->heap = malloc((size_t)k * sizeof *s->heap);
        s->heap_cap = s->heap ? k : 0;
        if (!s->heap)
            return splade_fail(SPLADE_ERR_NOMEM, "top-%d heap", k);
    }
    int S = splade_index_n_segments(s->ix);
    if (S > s->seg_cap) {
        free(s->seg_order);
        free(s->seg_terms);
        s->seg_order = malloc((size_t)S * sizeof *s->seg_order);
        s->seg_terms = malloc((size_t)S * sizeof *s->seg_terms);
        s->seg_cap = s->seg_order && s->seg_terms ? S : 0;
        if (!s->seg_cap)
            return splade_fail(SPLADE_ERR_NOMEM, "segment order");
    }
    if (algo == SPLADE_ALGO_BMP)
        return reserve_bmp(s, S);
    if ((algo == SPLADE_ALGO_TAAT || any) && !s->acc) {
        /* past 1 MB, on huge pages (a whole one at least): the budgeted candidate pass adds into
         * them at random, and with 4 KB pages its TLB misses cost ~3% of a query on the realistic
         * 333 k (bench/results/query-approx-half-2026-11-26.md) */
        const size_t huge = (size_t)2 << 20;
        size_t bytes = ((size_t)splade_index_max_segment_docs(s->ix) + 1) * sizeof *s->acc;
        bytes = bytes < huge / 2 ? bytes : (bytes + huge - 1) / huge * huge;
        if ((s->acc = splade_big_alloc(bytes)) != NULL)
            memset(s->acc, 0, bytes);
        if (!s->acc)
            return splade_fail(SPLADE_ERR_NOMEM, "accumulators");
    }
    return SPLADE_OK;
}

/* The query's cursors over segment g into c (their term ids into terms); returns their number.
 * seek_only: cursors for cursor_seek (no block decoded yet). */
static int open_cursors(splade_searcher *s, const splade_segment *g, const splade_qvec *q, cursor *c, int32_t *terms,
                        int seek_only)
{
    int n = 0;
    for (int32_t i = 0; i < q->n; i++) {
        int32_t term = splade_segment_term(g, q->terms[i]);
        splade_term_postings tp;
        splade_index_postings(g->ix, term, &tp); /* none for -1 */
        if (tp.n_postings && q->impacts[i]) {
            terms[n] = term;
            (seek_only ? cursor_init_seek : cursor_init)(&c[n++], &tp, q->impacts[i], &s->stats.blocks_decoded);
        }
    }
    return n;
}

/* Bound of any score in segment g: the sum of query impact × the term's largest impact there;
 * *present = the query terms with postings there. */
static uint64_t segment_bound(const splade_segment *g, const splade_qvec *q, int *present)
{
    uint64_t b = 0;
    *present = 0;
    for (int32_t i = 0; i < q->n; i++) {
        splade_term_postings tp;
        splade_index_postings(g->ix, splade_segment_term(g, q->terms[i]), &tp);
        b += (uint64_t)q->impacts[i] * tp.max_impact;
        *present += tp.n_postings && q->impacts[i];
    }
    return b;
}

static int by_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x < y) - (x > y);
}

/* Segments with any live match, by decreasing bound (then manifest order): bound << 24 | ~index. */
static int order_segments(splade_searcher *s, const splade_qvec *q)
{
    int m = 0, S = splade_index_n_segments(s->ix);
    for (int i = 0; i < S; i++) {
        const splade_segment *g = splade_index_segment(s->ix, i);
        uint64_t b = g->n_live ? segment_bound(g, q, &s->seg_terms[i]) : 0;
        if (b)
            s->seg_order[m++] = b << 24 | (uint64_t)(0xFFFFFF - i);
    }
    qsort(s->seg_order, (size_t)m, sizeof *s->seg_order, by_desc);
    return m;
}

static const splade_segment *ordered_segment(const splade_searcher *s, int i)
{
    return splade_index_segment(s->ix, 0xFFFFFF - (int)(s->seg_order[i] & 0xFFFFFF));
}

static void search_segment(splade_searcher *s, const splade_qvec *q, splade_algo algo, topk *t)
{
    /* (the rescoring's dense pass reads whole blocks, never a cursor's first one: ~10 µs of ~50
     * decodes a query on the realistic 333 k; windowed TAAT, with a bound factor, moves cursors) */
    const int rescoring = algo == SPLADE_ALGO_AUTO && s->opts.rescore > 0,
              dense = rescoring && !(s->opts.bound_factor > 0 && s->opts.bound_factor < 1);
    int n = open_cursors(s, s->seg, q, s->cursors, s->terms, dense);
    if (rescoring && splade_rescore(s, n, t) == 0)
        return;
    if (dense) /* (without memory for it: the approximate search below, on cursors of its own) */
        n = open_cursors(s, s->seg, q, s->cursors, s->terms, 0);
    if (algo == SPLADE_ALGO_AUTO) {
        n = splade_cut_cursors(s, n); /* approximate: the query_cut heaviest terms */
        algo = splade_choose_algo(s, n);
    }
    if (algo == SPLADE_ALGO_WTAAT && splade_wtaat(s, n, t, &s->opts) == 0)
        return;
    if (algo == SPLADE_ALGO_WTAAT) /* no memory for its scratch: a method that needs none */
        splade_wmaxscore(s, n, t);
    else if (algo == SPLADE_ALGO_TAAT)
        splade_taat(s, n, t);
    else if (algo == SPLADE_ALGO_WMAXSCORE)
        splade_wmaxscore(s, n, t);
    else
        splade_maxscore(s, n, t, algo == SPLADE_ALGO_BMM);
}

/* BMP takes the m ordered segments at once: one range queue across them (bmp.c). Its cursors and
 * range bitmaps are sized by the (segment, term) pairs that have postings, not terms × segments. */
static int search_bmp(splade_searcher *s, const splade_qvec *q, int m, topk *t)
{
    size_t pairs = 0, words = 0;
    for (int i = 0; i < m; i++) {
        const splade_segment *g = ordered_segment(s, i);
        size_t n = (size_t)s->seg_terms[0xFFFFFF - (int)(s->seg_order[i] & 0xFFFFFF)];
        pairs += n;
        words += n * ((((size_t)g->n_docs + (1u << SPLADE_RANGE_SHIFT) - 1) >> SPLADE_RANGE_SHIFT) / 64 + 1);
    }
    if (pairs > s->part_cap) {
        free(s->part_cursors);
        free(s->part_terms);
        s->part_cursors = malloc(pairs * sizeof *s->part_cursors);
        s->part_terms = malloc(pairs * sizeof *s->part_terms);
        s->part_cap = s->part_cursors && s->part_terms ? pairs : 0;
        if (!s->part_cap)
            return splade_fail(SPLADE_ERR_NOMEM, "cursors for %zu segment terms", pairs);
    }
    if (words > s->range_bits_cap) {
        free(s->range_bits);
        s->range_bits = malloc(words * sizeof *s->range_bits);
        s->range_bits_cap = s->range_bits ? words : 0;
        if (!s->range_bits)
            return splade_fail(SPLADE_ERR_NOMEM, "range bitmaps");
    }
    size_t at = 0;
    for (int i = 0; i < m; i++) {
        bmp_part *p = &s->parts[i];
        p->seg = ordered_segment(s, i);
        p->cursors = s->part_cursors + at;
        p->terms = s->part_terms + at;
        p->n = open_cursors(s, p->seg, q, p->cursors, p->terms, 1);
        at += (size_t)p->n;
    }
    splade_bmp(s, s->parts, m, t);
    return SPLADE_OK;
}

/* The search with algo; SPLADE_ALGO_AUTO here: the per-segment choice (splade_choose_algo) alone. */
static int search_with(splade_searcher *s, const splade_qvec *q, int k, splade_algo algo, splade_hit *hits,
                       int *n_hits)
{
    int rc = reserve(s, q->n, k, algo);
    if (rc < 0 || k == 0)
        return rc;
    /* One heap for the whole index: each segment starts from the threshold the others left, the
     * most promising first; a segment whose bound is below the k-th score is not searched. */
    topk t = {s->heap, 0, k};
    int m = order_segments(s, q);
    if (algo == SPLADE_ALGO_BMP && (rc = search_bmp(s, q, m, &t)) < 0)
        return rc;
    for (int i = 0; i < m && algo != SPLADE_ALGO_BMP; i++) {
        uint64_t bound = s->seg_order[i] >> 24;
        if (t.n == t.k && bound < t.h[0].score)
            break; /* (an equal bound may still win a tie) */
        s->seg = ordered_segment(s, i);
        search_segment(s, q, algo, &t);
    }
    *n_hits = topk_sorted(&t, hits);
    return SPLADE_OK;
}

/* One of auto_learn.c's trials: the query by BMP and by the per-segment methods, each timed, in
 * alternating order (the second run finds the postings in cache). Both give the same hits; the stats
 * count one run. */
static int search_trial(splade_searcher *s, const splade_qvec *q, int k, splade_hit *hits, int *n_hits)
{
    const splade_search_stats before = s->stats;
    long long ns[2];
    const int first = s->learn_flip ^= 1; /* 1: BMP first */
    for (int r = 0; r < 2; r++) {
        const int bmp = r == 0 ? first : !first;
        s->stats = before;
        const long long t0 = splade_learn_now();
        int rc = search_with(s, q, k, bmp ? SPLADE_ALGO_BMP : SPLADE_ALGO_AUTO, hits, n_hits);
        if (rc < 0) {
            splade_learn_record(s->ix, 0, 0); /* counted, so that the other trials still decide */
            return rc;
        }
        ns[bmp] = splade_learn_now() - t0;
    }
    splade_learn_record(s->ix, ns[1], ns[0]);
    return SPLADE_OK;
}

/* Exact search: the only kind whose hits are the same by BMP and by the per-segment methods (an
 * approximate one goes to BMP, which is exact, where the rule says so: choose.c). */
static int exact(const splade_searcher *s)
{
    const float f = s->opts.bound_factor;
    return s->opts.query_cut == 0 && !(f > 0 && f < 1);
}

int splade_search(splade_searcher *s, const splade_qvec *q, int k, splade_algo algo, splade_hit *hits,
                  int *n_hits)
{
    *n_hits = 0;
    if (k < 0 || !q || (unsigned)algo > SPLADE_ALGO_AUTO)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_search: bad arguments (k=%d)", k);
    /* (a rescoring search skips BMP, exact and slower than it: rescore.c) */
    if (algo == SPLADE_ALGO_AUTO && s->opts.rescore <= 0 && splade_choose_bmp(s, q)) {
        /* is BMP measured faster on this index? (exact searches only, k > 0: a trial must run) */
        const int v = k > 0 && exact(s) ? splade_learn_bmp(s->ix) : SPLADE_LEARN_BMP;
        if (v == SPLADE_LEARN_TRIAL)
            return search_trial(s, q, k, hits, n_hits);
        if (v != SPLADE_LEARN_RULE)
            algo = SPLADE_ALGO_BMP;
    }
    return search_with(s, q, k, algo, hits, n_hits);
}

int splade_searcher_set_opts(splade_searcher *s, const splade_search_opts *o)
{
    if (!s)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_searcher_set_opts: NULL searcher");
    if (o && (o->query_cut < 0 || !(o->bound_factor >= 0 && o->bound_factor <= 1)))
        return splade_fail(SPLADE_ERR_INVALID_ARG, "search options: query_cut %d must be >= 0, bound_factor %g in [0, 1]",
                           o->query_cut, (double)o->bound_factor);
    if (o && (o->rescore < 0 || o->rescore > SPLADE_RESCORE_MAX))
        return splade_fail(SPLADE_ERR_INVALID_ARG, "search options: rescore %d must be in [0, %d]", o->rescore,
                           SPLADE_RESCORE_MAX);
    if (o && (o->budget < 0 || (o->budget > 0 && o->rescore <= 0)))
        return splade_fail(SPLADE_ERR_INVALID_ARG, "search options: budget %d must be >= 0, and > 0 only with rescore",
                           o->budget);
    if (o && o->budget > 0 && o->bound_factor > 0 && o->bound_factor < 1)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "search options: budget and bound_factor %g both prune the candidate "
                           "pass: set one", (double)o->bound_factor);
    s->opts = o ? *o : (splade_search_opts){0};
    return SPLADE_OK;
}

const splade_search_stats *splade_searcher_stats(const splade_searcher *s)
{
    splade_search_stats *st = (splade_search_stats *)&s->stats; /* the forward indexes: the index's */
    st->forward_bytes = 0;
    st->forward_build_s = 0;
    st->impact_bytes = 0;
    st->impact_build_s = 0;
    for (int i = 0; i < splade_index_n_segments(s->ix); i++) {
        const splade_forward *f = splade_index_forward_built(splade_index_segment(s->ix, i)->ix);
        st->forward_bytes += f ? f->bytes : 0;
        st->forward_build_s += f ? f->build_s : 0;
        const splade_impact_order *o = splade_index_impact_order_built(splade_index_segment(s->ix, i)->ix);
        st->impact_bytes += o ? o->bytes : 0;
        st->impact_build_s += o ? o->build_s : 0;
    }
    return &s->stats;
}
