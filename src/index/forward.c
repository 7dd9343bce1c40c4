/* The in-memory forward index (forward.h), inverted back from the postings in two passes over every
 * list: the first counts each document's postings, the second places them (terms ascending per
 * document: lists are visited in term order). Kept on the open index only when an approximate search
 * asks for exact rescoring, so the index file and exact searches are unchanged; its memory (3 bytes
 * per posting with 16-bit term ids, plus 8 per document) and build time are reported by
 * splade_searcher_stats and in bench/results/query-approx-2026-11-26.md (53 MB and 0.26 s for the
 * realistic 100 k, on one thread), now on a team of threads. An export (doc_vectors.c) builds one per
 * segment and drops it. */
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "common/cpu_team.h"
#include "common/fail.h"
#include "common/big_alloc.h"
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

/* The build on a team: member t inverts a run of terms holding ~1/T of the postings. Pass 1 counts
 * each document's postings per member (cnt[t][d]); the counts turn into each document's start (off)
 * and each member's place within it (member t's entries of d follow members 0..t-1's: their terms
 * come first, so a document's terms stay ascending); pass 2 writes there. Decoding every block is the
 * cost (~1 s for 58 M postings on one core), which members share without repeating any. */
typedef struct {
    const splade_index *ix;
    splade_forward *f;
    uint32_t **cnt;   /* per member, per document: a count, then the member's offset within it */
    uint32_t *first;  /* per member, its first term; first[T] = n_terms */
    int failed;       /* the entry arrays could not be allocated (member 0 says so between barriers) */
} build_job;

/* Member t's terms, pass 1 (fill 0: counts) or 2 (fill 1: entries placed). Doc ids past n_docs (a
 * damaged list that the open-time checks let through) are skipped, never written. */
static void walk(const build_job *j, int t, int fill)
{
    const splade_index *ix = j->ix;
    splade_forward *f = j->f;
    uint32_t *cnt = j->cnt[t], docs[SPLADE_BLOCK_SIZE];
    for (uint32_t term = j->first[t]; term < j->first[t + 1]; term++) {
        splade_term_postings tp;
        splade_index_postings(ix, (int32_t)term, &tp);
        for (uint32_t b = 0; b < tp.n_blocks; b++) {
            const uint8_t *imps;
            uint32_t count = splade_list_block(tp.blocks, tp.n_blocks, tp.n_postings, tp.postings, b, docs, &imps);
            for (uint32_t i = 0; i < count; i++) {
                uint32_t d = docs[i];
                if (d >= f->n_docs)
                    continue;
                if (!fill) {
                    cnt[d]++;
                    continue;
                }
                uint64_t at = f->off[d] + cnt[d]++;
                if (f->t16)
                    f->t16[at] = (uint16_t)term;
                else
                    f->t32[at] = term;
                f->imp[at] = imps[i];
            }
        }
    }
}

/* Member 0, between the passes: documents' starts, members' offsets, the entry arrays. */
static int place(build_job *j, int T)
{
    splade_forward *f = j->f;
    uint64_t n = 0;
    for (uint32_t d = 0; d < f->n_docs; d++) {
        f->off[d] = n;
        uint32_t within = 0;
        for (int t = 0; t < T; t++) {
            uint32_t c = j->cnt[t][d];
            j->cnt[t][d] = within;
            within += c;
        }
        n += within;
    }
    f->off[f->n_docs] = n;
    const int narrow = j->ix->info.n_terms <= 65536;
    f->imp = splade_big_alloc(n ? n : 1); /* huge pages: a candidate's entries are read at random */
    if (narrow)
        f->t16 = splade_big_alloc((n ? n : 1) * sizeof *f->t16);
    else
        f->t32 = splade_big_alloc((n ? n : 1) * sizeof *f->t32);
    f->bytes = ((uint64_t)f->n_docs + 1) * sizeof *f->off + n * (1 + (narrow ? 2 : 4));
    return f->imp && (narrow ? f->t16 != NULL : f->t32 != NULL);
}

/* first[0 .. T]: runs of terms of about equal postings. */
static void split_terms(build_job *j, int T)
{
    const splade_index *ix = j->ix;
    const uint64_t total = ix->info.n_postings;
    uint64_t seen = 0;
    int t = 1;
    j->first[0] = 0;
    for (uint32_t term = 0; term < ix->info.n_terms && t < T; term++) {
        splade_term_postings tp;
        splade_index_postings(ix, (int32_t)term, &tp);
        seen += tp.n_postings;
        while (t < T && seen * (uint64_t)T >= total * (uint64_t)t)
            j->first[t++] = term + 1;
    }
    while (t <= T)
        j->first[t++] = ix->info.n_terms;
}

static int build_member(void *ctx, int t, splade_team *team)
{
    build_job *j = ctx;
    const int T = splade_team_size(team);
    if (t == 0) /* the terms split for the team that actually came */
        split_terms(j, T);
    splade_team_barrier(team);
    walk(j, t, 0);
    splade_team_barrier(team);
    if (t == 0)
        j->failed = !place(j, T);
    splade_team_barrier(team);
    if (!j->failed)
        walk(j, t, 1);
    return 0;
}

/* Threads for a build: the CPUs this process may run on (taskset counts), at most 8; it runs once
 * per open index file, while the searches that asked for it wait. */
static int build_threads(void)
{
    const int cpus = splade_cpus_available();
    return cpus > 8 ? 8 : cpus;
}

splade_forward *splade_forward_build(const splade_index *ix)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const int T = build_threads();
    splade_forward *f = calloc(1, sizeof *f);
    build_job j = {.ix = ix, .f = f, .cnt = calloc((size_t)T, sizeof *j.cnt),
                   .first = calloc((size_t)T + 1, sizeof *j.first)};
    int ok = f && j.cnt && j.first;
    if (ok) {
        f->n_docs = ix->info.n_docs;
        ok = (f->off = splade_big_alloc(((size_t)f->n_docs + 1) * sizeof *f->off)) != NULL;
    }
    for (int t = 0; ok && t < T; t++)
        ok = (j.cnt[t] = calloc((size_t)f->n_docs + 1, sizeof **j.cnt)) != NULL;
    if (ok)
        splade_team_run(T, build_member, &j);
    ok = ok && !j.failed;
    for (int t = 0; j.cnt && t < T; t++)
        free(j.cnt[t]);
    free(j.cnt);
    free(j.first);
    if (!ok) {
        splade_forward_free(f);
        splade_fail(SPLADE_ERR_NOMEM, "%s: forward index of %llu postings", ix->path,
                    (unsigned long long)ix->info.n_postings);
        return NULL;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    f->build_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    return f;
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
