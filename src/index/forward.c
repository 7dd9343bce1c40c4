/* The in-memory forward index (forward.h), inverted back from the postings in two passes over every
 * list: the first counts each document's postings, the second places them (terms ascending per
 * document: lists are visited in term order). Kept on the open index only when an approximate search
 * asks for exact rescoring, so the index file and exact searches are unchanged; its memory (3 bytes
 * per posting with 16-bit term ids, plus 8 per document) and build time are reported by
 * splade_searcher_stats and in bench/results/query-approx-2026-11-26.md (53 MB and 0.26 s for the
 * realistic 100 k, on one thread). An export (doc_vectors.c) builds one per segment and drops it. */
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "common/fail.h"
#include "index/forward.h"
#include "index/postings.h"
#include "index/reader_internal.h"

void splade_forward_free(splade_forward *f)
{
    if (!f)
        return;
    free(f->off);
    free(f->t16);
    free(f->t32);
    free(f->imp);
    free(f);
}

/* Pass 1 (fill == NULL): off[d + 1] += postings of d. Pass 2: entries placed at off[d]++ (off then
 * holds each document's end; the caller shifts it back). Doc ids past n_docs (a damaged list that
 * the open-time checks let through) are skipped, never written. */
static void walk(const splade_index *ix, splade_forward *f, int fill)
{
    uint32_t docs[SPLADE_BLOCK_SIZE];
    for (uint32_t term = 0; term < ix->info.n_terms; term++) {
        splade_term_postings tp;
        splade_index_postings(ix, (int32_t)term, &tp);
        for (uint32_t b = 0; b < tp.n_blocks; b++) {
            const uint8_t *imps;
            uint32_t count = splade_list_block(tp.blocks, tp.n_blocks, tp.n_postings, tp.postings, b, docs, &imps);
            for (uint32_t j = 0; j < count; j++) {
                uint32_t d = docs[j];
                if (d >= f->n_docs)
                    continue;
                if (!fill) {
                    f->off[d + 1]++;
                    continue;
                }
                uint64_t at = f->off[d]++;
                if (f->t16)
                    f->t16[at] = (uint16_t)term;
                else
                    f->t32[at] = term;
                f->imp[at] = imps[j];
            }
        }
    }
}

splade_forward *splade_forward_build(const splade_index *ix)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    splade_forward *f = calloc(1, sizeof *f);
    if (!f)
        goto fail;
    f->n_docs = ix->info.n_docs;
    f->off = calloc((size_t)f->n_docs + 1, sizeof *f->off);
    if (!f->off)
        goto fail;
    walk(ix, f, 0);
    for (uint32_t d = 0; d < f->n_docs; d++)
        f->off[d + 1] += f->off[d];
    uint64_t n = f->off[f->n_docs];
    int narrow = ix->info.n_terms <= 65536;
    f->imp = malloc(n ? n : 1);
    if (narrow)
        f->t16 = malloc((n ? n : 1) * sizeof *f->t16);
    else
        f->t32 = malloc((n ? n : 1) * sizeof *f->t32);
    if (!f->imp || (narrow ? !f->t16 : !f->t32))
        goto fail;
    walk(ix, f, 1);
    for (uint32_t d = f->n_docs; d > 0; d--) /* off[d] is now d's end = d + 1's start */
        f->off[d] = f->off[d - 1];
    f->off[0] = 0;
    f->bytes = ((uint64_t)f->n_docs + 1) * sizeof *f->off + n * (1 + (narrow ? 2 : 4));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    f->build_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    return f;
fail:
    splade_forward_free(f);
    splade_fail(SPLADE_ERR_NOMEM, "%s: forward index of %llu postings", ix->path, (unsigned long long)ix->info.n_postings);
    return NULL;
}

const splade_forward *splade_index_forward(const splade_index *cix)
{
    splade_index *ix = (splade_index *)cix; /* built on demand through a const index, as the lookup */
    if (atomic_load_explicit(&ix->fwd_ready, memory_order_acquire))
        return ix->fwd;
    pthread_mutex_lock(&ix->fwd_lock);
    if (!atomic_load_explicit(&ix->fwd_ready, memory_order_relaxed)) {
        ix->fwd = splade_forward_build(ix);
        if (ix->fwd)
            atomic_store_explicit(&ix->fwd_ready, 1, memory_order_release);
    }
    splade_forward *f = ix->fwd;
    pthread_mutex_unlock(&ix->fwd_lock);
    return f;
}

const splade_forward *splade_index_forward_built(const splade_index *cix)
{
    splade_index *ix = (splade_index *)cix;
    return atomic_load_explicit(&ix->fwd_ready, memory_order_acquire) ? ix->fwd : NULL;
}
