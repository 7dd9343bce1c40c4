/* Impact-ordered copies of the long lists (impact_order.h), for the budgeted candidate pass of the
 * approximate search (src/query/rescore.c). Each list of SPLADE_IMPACT_MIN_LIST postings or more is
 * decoded once and, window of documents by window, counting-sorted by its 8-bit impacts (doc ids stay
 * ascending within an impact, as they come): 3 bytes per copied posting (16-bit doc id in its window,
 * impact) plus ~1.2 KB of counts and window offsets per list and 256 bytes of level counts per list and
 * window (impact_order.h); ~183 MB for the realistic 333 k's 58 M postings, built in ~0.35 s on 2
 * threads (bench/results/query-approx-scale-2026-11-26.md, query-approx-half-2026-11-26.md). The common
 * lists are copied too, so that a query under its cut (which keeps them) stays within its budget. Built
 * on a team of threads (copies dealt round the members), like the forward index, only when a search
 * asks for a posting budget. */
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "common/cpu_team.h"
#include "common/fail.h"
#include "common/big_alloc.h"
#include "index/impact_order.h"
#include "index/postings.h"
#include "index/reader_internal.h"

void splade_impact_order_free(splade_impact_order *o)
{
    if (!o)
        return;
    free(o->slot);
    free(o->first);
    free(o->ge);
    free(o->win);
    free(o->lvl);
    free(o->docs);
    free(o->imps);
    free(o);
}

typedef struct {
    const splade_index *ix;
    splade_impact_order *o;
    int32_t *term;    /* per copy, its term */
    uint32_t longest; /* postings of the longest copied list */
    atomic_int failed;
} build_job;

/* Copy j: the list decoded into docs/imps (scratch), counted per impact (ge), then each window's
 * postings (consecutive: the list is in doc-id order) placed by decreasing impact, a counting sort that
 * keeps doc ids ascending within an impact. Doc ids past the file's documents (a damaged list the
 * open-time checks let through) are left out. */
static void copy_list(const build_job *b, uint32_t j, uint32_t *docs, uint8_t *imps)
{
    const splade_index *ix = b->ix;
    const splade_impact_order *o = b->o;
    splade_term_postings tp;
    splade_index_postings(ix, b->term[j], &tp);
    uint32_t n = 0, hist[256] = {0};
    for (uint32_t k = 0; k < tp.n_blocks; k++) {
        const uint8_t *bi;
        const uint32_t at0 = n; /* this block's ids, compacted down to n as they are kept */
        uint32_t count = splade_list_block(tp.blocks, tp.n_blocks, tp.n_postings, tp.postings, k, docs + at0, &bi);
        for (uint32_t i = 0; i < count; i++)
            if (docs[at0 + i] < ix->info.n_docs) {
                docs[n] = docs[at0 + i];
                imps[n] = bi[i];
                hist[bi[i]]++;
                n++;
            }
    }
    uint32_t *ge = o->ge + 256 * (uint64_t)j, *win = o->win + ((uint64_t)o->n_win + 1) * j, above = 0;
    for (int v = 255; v >= 0; v--) {
        above += hist[v];
        ge[v] = above;
    }
    uint16_t *out = o->docs + o->first[j];
    uint8_t *out_imp = o->imps + o->first[j];
    uint32_t i = 0;
    for (uint32_t w = 0; w < o->n_win; w++) {
        const uint32_t from = i;
        const uint64_t end = (uint64_t)(w + 1) << SPLADE_IMPACT_WINDOW_SHIFT;
        uint32_t cnt[256] = {0}, at[256];
        while (i < n && docs[i] < end)
            cnt[imps[i++]]++;
        win[w] = from;
        uint32_t *lvl = o->lvl + ((uint64_t)j * o->n_win + w) * SPLADE_IMPACT_LEVELS;
        for (uint32_t L = SPLADE_IMPACT_LEVELS, v = 256, sum = 0; L-- > 0;) { /* impacts from the top down */
            for (; v > splade_impact_level_floor(L);)
                sum += cnt[--v];
            lvl[L] = sum;
        }
        if (i == from)
            continue;
        for (int v = 255, pos = (int)from; v >= 0; v--) { /* impact v's run starts after those above it */
            at[v] = (uint32_t)pos;
            pos += (int)cnt[v];
        }
        for (uint32_t k = from; k < i; k++) {
            out_imp[at[imps[k]]] = imps[k];
            out[at[imps[k]]++] = (uint16_t)(docs[k] & ((1u << SPLADE_IMPACT_WINDOW_SHIFT) - 1));
        }
    }
    win[o->n_win] = n;
}

static int build_member(void *ctx, int t, splade_team *team)
{
    build_job *b = ctx;
    const uint32_t T = (uint32_t)splade_team_size(team);
    /* (a block decodes whole: room for one more block past the list's postings) */
    uint32_t *docs = malloc(((size_t)b->longest + SPLADE_BLOCK_SIZE) * sizeof *docs);
    uint8_t *imps = malloc((size_t)b->longest + SPLADE_BLOCK_SIZE);
    if (!docs || !imps)
        atomic_store(&b->failed, 1);
    else
        for (uint32_t j = (uint32_t)t; j < b->o->n_copies; j += T)
            copy_list(b, j, docs, imps);
    free(docs);
    free(imps);
    return 0;
}

/* The lists to copy: slots, each copy's first entry, the longest. */
static int plan(build_job *b)
{
    const splade_index *ix = b->ix;
    splade_impact_order *o = b->o;
    uint64_t total = 0;
    o->n_terms = ix->info.n_terms;
    if (!(o->slot = malloc(((size_t)o->n_terms + 1) * sizeof *o->slot)) ||
        !(o->first = malloc(((size_t)o->n_terms + 1) * sizeof *o->first)) ||
        !(b->term = malloc(((size_t)o->n_terms + 1) * sizeof *b->term)))
        return 0;
    for (uint32_t t = 0; t < o->n_terms; t++) {
        splade_term_postings tp;
        splade_index_postings(ix, (int32_t)t, &tp);
        o->slot[t] = -1;
        if (tp.n_postings < SPLADE_IMPACT_MIN_LIST)
            continue;
        o->slot[t] = (int32_t)o->n_copies;
        b->term[o->n_copies] = (int32_t)t;
        o->first[o->n_copies++] = total;
        total += tp.n_postings;
        b->longest = tp.n_postings > b->longest ? tp.n_postings : b->longest;
    }
    o->n_win = (ix->info.n_docs + (1u << SPLADE_IMPACT_WINDOW_SHIFT) - 1) >> SPLADE_IMPACT_WINDOW_SHIFT;
    o->ge = malloc(((size_t)o->n_copies + 1) * 256 * sizeof *o->ge);
    o->win = malloc(((size_t)o->n_copies + 1) * ((size_t)o->n_win + 1) * sizeof *o->win);
    o->lvl = splade_big_alloc(((size_t)o->n_copies + 1) * o->n_win * SPLADE_IMPACT_LEVELS * sizeof *o->lvl);
    o->docs = splade_big_alloc((total ? total : 1) * sizeof *o->docs); /* huge pages: windows read at random */
    o->imps = splade_big_alloc(total ? total : 1);
    o->bytes = (uint64_t)o->n_terms * (sizeof *o->slot + sizeof *o->first) +
               (uint64_t)o->n_copies * ((256 + o->n_win + 1) * 4 + (uint64_t)o->n_win * SPLADE_IMPACT_LEVELS * 4) +
               total * 3;
    return o->ge && o->win && o->lvl && o->docs && o->imps;
}

static int build_threads(void)
{
    const int cpus = splade_cpus_available();
    return cpus > 8 ? 8 : cpus;
}

static splade_impact_order *impact_order_build(const splade_index *ix)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    build_job b = {.ix = ix, .o = calloc(1, sizeof *b.o)};
    int ok = b.o && plan(&b);
    if (ok)
        splade_team_run(build_threads(), build_member, &b);
    ok = ok && !atomic_load(&b.failed);
    free(b.term);
    if (!ok) {
        splade_impact_order_free(b.o);
        splade_fail(SPLADE_ERR_NOMEM, "%s: impact-ordered copies of %llu postings", ix->path,
                    (unsigned long long)ix->info.n_postings);
        return NULL;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    b.o->build_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    return b.o;
}

const splade_impact_order *splade_index_impact_order(const splade_index *cix)
{
    splade_index *ix = (splade_index *)cix; /* built on demand through a const index, as the forward index */
    if (atomic_load_explicit(&ix->imo_ready, memory_order_acquire))
        return ix->imo;
    pthread_mutex_lock(&ix->fwd_lock);
    if (!atomic_load_explicit(&ix->imo_ready, memory_order_relaxed)) {
        ix->imo = impact_order_build(ix);
        if (ix->imo)
            atomic_store_explicit(&ix->imo_ready, 1, memory_order_release);
    }
    splade_impact_order *o = ix->imo;
    pthread_mutex_unlock(&ix->fwd_lock);
    return o;
}

const splade_impact_order *splade_index_impact_order_built(const splade_index *cix)
{
    splade_index *ix = (splade_index *)cix;
    return atomic_load_explicit(&ix->imo_ready, memory_order_acquire) ? ix->imo : NULL;
}
