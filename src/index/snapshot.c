/* Opening an index folder that has a MANIFEST: one generation's segment files, their deletions,
 * and the numbering and vocabulary that make them one index for every reader (docs/FORMAT.md,
 * "Segments and the manifest"). A writer may install the next generation and remove this one's
 * files while we open them: a named file that has disappeared sends us back to the new MANIFEST
 * (bounded), so the result is always one whole generation. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "common/fail.h"
#include "index/manifest.h"
#include "index/reader_internal.h"
#include "splade.h"

static int cmp_bytes(const char *a, size_t la, const char *b, size_t lb)
{
    int c = memcmp(a, b, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

static int bad(const splade_index *ix, const char *file, const char *what)
{
    return splade_fail(SPLADE_ERR_FORMAT, "%s/%s: %s", ix->path, file, what);
}

/* rank (live documents before each 64-id word) and live (internal id of each live document). */
static int live_tables(splade_segment *g)
{
    size_t words = ((size_t)g->n_docs + 63) / 64;
    uint32_t *rank = malloc((words + 1) * sizeof *rank), *live = malloc(((size_t)g->n_live + 1) * sizeof *live);
    if (!rank || !live) {
        free(rank);
        free(live);
        return splade_fail(SPLADE_ERR_NOMEM, "deletions of %u documents", g->n_docs);
    }
    uint32_t n = 0;
    for (size_t w = 0; w < words; w++) {
        rank[w] = n;
        for (uint32_t d = (uint32_t)w * 64; d < g->n_docs && d < (w + 1) * 64; d++)
            if (!splade_segment_deleted(g, d))
                live[n++] = d;
    }
    g->rank = rank;
    g->live = live;
    return SPLADE_OK;
}

/* Opens segment i's file and deletion file and fills its description. */
static int open_segment(splade_index *ix, const char *dir, int i, int threads, int lean)
{
    const splade_manifest_seg *m = &ix->man.segs[i];
    splade_segment *g = &ix->segs[i];
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, m->file) >= (int)sizeof path)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "index path too long: %s", dir);
    int rc = splade_index_open_threads(path, threads, &ix->files[i]);
    if (rc < 0)
        return rc;
    const splade_index *f = ix->files[i];
    if (lean) /* a merge: the checked pages leave the process (not the page cache) before the next file */
        madvise(f->map, f->size, MADV_DONTNEED);
    if (f->info.n_docs != m->n_docs) {
        char why[128];
        snprintf(why, sizeof why, "holds %u documents, the manifest says %u", f->info.n_docs, m->n_docs);
        return bad(ix, m->file, why);
    }
    *g = (splade_segment){.ix = f, .n_docs = m->n_docs, .n_live = m->n_docs - m->n_deleted, .seq_base = m->seq_base,
                          .docseq = f->docseq};
    if (!m->deletions[0])
        return SPLADE_OK;
    uint64_t *bits;
    if ((rc = splade_deletions_read(dir, m->deletions, m->n_docs, m->n_deleted, &bits)) < 0)
        return rc;
    g->deleted = bits;
    return live_tables(g);
}

/* Every segment must score on one scale and one vocabulary kind (model: the same model). */
static int check_compatible(splade_index *ix)
{
    const splade_index_info *a = &ix->files[0]->info;
    for (int i = 0; i < ix->n_segs; i++) {
        const splade_index_info *b = &ix->files[i]->info;
        const char *file = ix->man.segs[i].file;
        if ((a->flags ^ b->flags) & (SPLADE_IX_HAS_MODEL | SPLADE_IX_SORTED_VOCAB | SPLADE_IX_LOWERCASE | SPLADE_IX_QUERY_TABLE))
            return bad(ix, file, "built with another kind of vocabulary than the first segment (model / --vectors)");
        if ((b->flags & SPLADE_IX_HAS_MODEL) && (b->fingerprint != a->fingerprint || b->n_terms != a->n_terms))
            return bad(ix, file, "built with another model than the first segment");
        if (b->n_postings && b->doc_scale != ix->man.doc_scale) {
            char why[160];
            snprintf(why, sizeof why, "doc_scale %.9g differs from the manifest's %.9g", (double)b->doc_scale,
                     (double)ix->man.doc_scale);
            return bad(ix, file, why);
        }
    }
    return SPLADE_OK;
}

/* --vectors segments each have their own sorted vocabulary: the snapshot's is their union (sorted),
 * and each segment gets a remap from snapshot term ids to its own (-1 where it lacks the term),
 * left NULL when its vocabulary is the union. */
static int union_vocab(splade_index *ix)
{
    int S = ix->n_segs;
    size_t total = 0, bytes = 0;
    for (int s = 0; s < S; s++) {
        total += ix->files[s]->info.n_terms;
        bytes += ix->files[s]->vocab_off[ix->files[s]->info.n_terms];
    }
    if (total >= INT32_MAX)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "%s: union vocabulary of %zu terms", ix->path, total);
    uint32_t *pos = calloc((size_t)(unsigned)S + 1, sizeof *pos);
    ix->uvocab_off = malloc((total + 1) * sizeof *ix->uvocab_off);
    ix->uvocab = malloc(bytes + 1);
    int ok = pos && ix->uvocab_off && ix->uvocab;
    for (int s = 0; ok && s < S; s++)
        ok = (ix->segs[s].remap = malloc((total + 1) * sizeof(int32_t))) != NULL;
    if (!ok) {
        free(pos);
        return splade_fail(SPLADE_ERR_NOMEM, "%s: union vocabulary of %zu terms", ix->path, total);
    }
    uint32_t u = 0, at = 0;
    for (;; u++) {
        const char *best = NULL;
        size_t best_len = 0;
        for (int s = 0; s < S; s++) {
            size_t l;
            const char *t = splade_index_term(ix->files[s], (int32_t)pos[s], &l);
            if (t && (!best || cmp_bytes(t, l, best, best_len) < 0))
                best = t, best_len = l;
        }
        if (!best)
            break;
        ix->uvocab_off[u] = at;
        memcpy(ix->uvocab + at, best, best_len);
        at += (uint32_t)best_len;
        for (int s = 0; s < S; s++) {
            size_t l;
            const char *t = splade_index_term(ix->files[s], (int32_t)pos[s], &l);
            int32_t *r = (int32_t *)ix->segs[s].remap;
            r[u] = t && !cmp_bytes(t, l, ix->uvocab + ix->uvocab_off[u], best_len) ? (int32_t)pos[s]++ : -1;
        }
    }
    ix->uvocab_off[u] = at;
    free(pos);
    for (int s = 0; s < S; s++)
        if (ix->files[s]->info.n_terms == u) { /* every term: the same ids */
            free((void *)ix->segs[s].remap);
            ix->segs[s].remap = NULL;
        }
    ix->vocab_off = ix->uvocab_off;
    ix->vocab = ix->uvocab;
    ix->info.n_terms = u;
    return SPLADE_OK;
}

/* The snapshot's own numbers: live documents numbered segment after segment. */
static int summarize(splade_index *ix)
{
    const splade_index_info *a = &ix->files[0]->info;
    ix->info = (splade_index_info){.n_terms = a->n_terms, .doc_scale = ix->man.doc_scale, .fingerprint = a->fingerprint,
                                   .flags = a->flags, .max_length = a->max_length};
    ix->model_name = strdup(a->model_name);
    ix->model_dir = strdup(a->model_dir);
    if (!ix->model_name || !ix->model_dir)
        return splade_fail(SPLADE_ERR_NOMEM, "%s", ix->path);
    ix->info.model_name = ix->model_name;
    ix->info.model_dir = ix->model_dir;
    uint64_t live = 0;
    for (int i = 0; i < ix->n_segs; i++) {
        const splade_index_info *b = &ix->files[i]->info;
        ix->segs[i].base = (uint32_t)live;
        live += ix->segs[i].n_live;
        ix->info.n_postings += b->n_postings;
        ix->info.n_blocks += b->n_blocks;
        ix->info.n_truncated += b->n_truncated;
        ix->info.flags |= b->flags & SPLADE_IX_REORDERED;
        ix->info.build_time = b->build_time > ix->info.build_time ? b->build_time : ix->info.build_time;
        ix->info.file_bytes += b->file_bytes;
        ix->max_seg_docs = b->n_docs > ix->max_seg_docs ? b->n_docs : ix->max_seg_docs;
    }
    if (live > UINT32_MAX - 1)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "%s: more than 2^32 - 2 live documents", ix->path);
    ix->info.n_docs = (uint32_t)live;
    if (ix->info.flags & SPLADE_IX_SORTED_VOCAB)
        return union_vocab(ix);
    ix->vocab_off = ix->files[0]->vocab_off;
    ix->vocab = ix->files[0]->vocab;
    return SPLADE_OK;
}

static int assemble(const char *dir, int threads, int lean, splade_manifest *m, splade_index *ix)
{
    ix->is_snapshot = 1;
    ix->man = *m;
    memset(m, 0, sizeof *m);
    if (snprintf(ix->path, sizeof ix->path, "%s", dir) >= (int)sizeof ix->path)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "index path too long: %s", dir);
    if (ix->man.n_segs == 0)
        return splade_fail(SPLADE_ERR_FORMAT, "%s/%s names no segment", dir, SPLADE_MANIFEST_FILE);
    ix->files = calloc((size_t)ix->man.n_segs, sizeof *ix->files);
    ix->segs = calloc((size_t)ix->man.n_segs, sizeof *ix->segs);
    if (!ix->files || !ix->segs)
        return splade_fail(SPLADE_ERR_NOMEM, "%s: %d segments", dir, ix->man.n_segs);
    ix->n_segs = ix->man.n_segs;
    for (int i = 0; i < ix->n_segs; i++) {
        int rc = open_segment(ix, dir, i, threads, lean);
        if (rc < 0)
            return rc;
    }
    int rc = check_compatible(ix);
    return rc < 0 ? rc : summarize(ix);
}

/* Whether DIR/MANIFEST now names another generation than gen (a writer replaced it meanwhile). */
static int generation_moved(const char *dir, uint64_t gen)
{
    splade_manifest m;
    int rc = splade_manifest_read(dir, &m);
    int moved = rc < 0 || m.generation != gen;
    splade_manifest_free(&m);
    return moved;
}

static int snapshot_open(const char *dir, int threads, int lean, splade_index **out)
{
    *out = NULL;
    for (int attempt = 0;; attempt++) {
        splade_manifest m;
        int rc = splade_manifest_read(dir, &m);
        if (rc == SPLADE_ERR_NOT_FOUND) {
            splade_manifest_free(&m);
            return 1; /* no MANIFEST: a single-file folder */
        }
        if (rc < 0) {
            splade_manifest_free(&m);
            return rc;
        }
        splade_index *ix = splade_index_alloc();
        if (!ix) {
            splade_manifest_free(&m);
            return splade_fail(SPLADE_ERR_NOMEM, "index");
        }
        uint64_t gen = m.generation;
        rc = assemble(dir, threads, lean, &m, ix);
        splade_manifest_free(&m);
        if (rc == 0) {
            *out = ix;
            return SPLADE_OK;
        }
        splade_index_close(ix);
        if (rc != SPLADE_ERR_NOT_FOUND || attempt >= 100 || !generation_moved(dir, gen))
            return rc;
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL); /* a writer is between two generations */
    }
}

int splade_snapshot_open(const char *dir, int threads, splade_index **out)
{
    return snapshot_open(dir, threads, 0, out);
}

int splade_snapshot_open_lean(const char *dir, int threads, splade_index **out)
{
    return snapshot_open(dir, threads, 1, out);
}

void splade_snapshot_free(splade_index *ix)
{
    for (int i = 0; i < ix->n_segs; i++) {
        splade_index_close(ix->files ? ix->files[i] : NULL);
        free((void *)ix->segs[i].deleted);
        free((void *)ix->segs[i].rank);
        free((void *)ix->segs[i].live);
        free((void *)ix->segs[i].remap);
    }
    free(ix->files);
    free(ix->segs);
    free(ix->uvocab);
    free(ix->uvocab_off);
    splade_manifest_free(&ix->man);
}

void splade_index_single_segment(splade_index *ix)
{
    ix->one_seg = (splade_segment){.ix = ix, .n_docs = ix->info.n_docs, .n_live = ix->info.n_docs,
                                   .docseq = ix->docseq};
    ix->segs = &ix->one_seg;
    ix->n_segs = 1;
    ix->max_seg_docs = ix->info.n_docs;
}

int splade_index_n_segments(const splade_index *ix)
{
    return ix->n_segs;
}

const splade_segment *splade_index_segment(const splade_index *ix, int i)
{
    return &ix->segs[i];
}

uint32_t splade_index_max_segment_docs(const splade_index *ix)
{
    return ix->max_seg_docs;
}

_Atomic long long *splade_index_learned(const splade_index *ix)
{
    return ((splade_index *)ix)->learned; /* mutable by design (segment.h) */
}

/* The segment holding snapshot document g (< n_docs): the last one whose base is <= g. */
const splade_segment *splade_snapshot_locate(const splade_index *ix, uint32_t g, uint32_t *local)
{
    int lo = 0, hi = ix->n_segs - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (ix->segs[mid].base <= g)
            lo = mid;
        else
            hi = mid - 1;
    }
    const splade_segment *s = &ix->segs[lo];
    uint32_t r = g - s->base;
    *local = s->live ? s->live[r] : r;
    return s;
}
