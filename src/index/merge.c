/* Merging segments (include/splade/segments.h, splade_index_merge): which segments, the new
 * generation's manifest, the lock. The picked segments' live documents are streamed into one new
 * segment by merge_stream.c (docs/FORMAT.md, "Merging"), keeping the index's doc_scale and every
 * document's sequence number, so that every search answers as before. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "index/format.h"
#include "index/reader_internal.h"
#include "index/segments_internal.h"
#include "splade.h"
#include "splade/segments.h"

static int by_seq_base(const void *a, const void *b)
{
    uint64_t x = ((const splade_manifest_seg *)a)->seq_base, y = ((const splade_manifest_seg *)b)->seq_base;
    return (x > y) - (x < y);
}

int splade_segments_merge_into(const splade_index *ix, const char *dir, const int *pick, int threads,
                               const volatile int *cancel, splade_manifest *out, uint64_t *bytes_out)
{
    splade_manifest_seg e = {0};
    snprintf(e.file, sizeof e.file, "seg-%llu.spx", (unsigned long long)out->generation);
    splade_merge_result r = {0};
    int rc = splade_merge_stream(ix, dir, e.file, pick, threads, cancel, out->doc_scale, out->next_seq, &r);
    if (rc < 0)
        return rc;
    *bytes_out = r.bytes;
    e.n_docs = r.n_docs;
    e.seq_base = r.seq_base;
    e.clipped = 0; /* impacts are copied as they were: none saturates again */
    int k = 0;
    for (int s = 0; s < ix->n_segs; s++)
        if (!pick[s])
            out->segs[k++] = out->segs[s];
    out->segs[k++] = e;
    out->n_segs = k;
    qsort(out->segs, (size_t)k, sizeof *out->segs, by_seq_base);
    return SPLADE_OK;
}

/* Which segments to merge: all (max_segments <= 0; unless one without deletions is all there is),
 * else the smallest (by live documents; the later on ties) until max_segments remain. */
static int choose(const splade_index *ix, int max_segments, int *pick)
{
    int n = ix->n_segs;
    if (max_segments <= 0) {
        if (n == 1 && ix->segs[0].n_live == ix->segs[0].n_docs)
            return 0;
        for (int s = 0; s < n; s++)
            pick[s] = 1;
        return n;
    }
    if (n <= max_segments)
        return 0;
    int want = n - max_segments + 1;
    for (int k = 0; k < want; k++) {
        int best = -1;
        for (int s = 0; s < n; s++)
            if (!pick[s] && (best < 0 || ix->segs[s].n_live <= ix->segs[best].n_live))
                best = s;
        pick[best] = 1;
    }
    return want;
}

int splade_merge_locked(const char *dir, int max_segments, int threads, const volatile int *cancel,
                        splade_merge_stats *st)
{
    memset(st, 0, sizeof *st);
    splade_index *ix = NULL;
    int rc = splade_snapshot_open_lean(dir, threads > 0 ? threads : 1, &ix);
    if (rc == 1) /* no MANIFEST: a single file (nothing to merge) or no index */
        rc = splade_index_open_threads(dir, threads > 0 ? threads : 1, &ix);
    if (rc == SPLADE_ERR_NOT_FOUND)
        return splade_fail(rc, "%s: no index here (create one with `splade-index build`)", dir);
    if (rc < 0)
        return rc;
    splade_manifest m = {0};
    int *pick = calloc((size_t)ix->n_segs, sizeof *pick);
    if (!pick)
        rc = splade_fail(SPLADE_ERR_NOMEM, "merge");
    if (rc == 0 && ix->is_snapshot)
        splade_segments_gc(dir, &ix->man);
    int n = rc == 0 ? choose(ix, max_segments, pick) : 0;
    if (rc == 0 && n > 0)
        rc = ix->is_snapshot ? splade_manifest_copy(&ix->man, 1, &m)
                             : splade_fail(SPLADE_ERR_INVALID_ARG, "%s: a single-file index has nothing to merge", dir);
    if (rc == 0 && n > 0) {
        m.generation++;
        for (int s = 0; s < ix->n_segs; s++)
            if (pick[s]) {
                splade_segment_info si;
                splade_index_segment_info(ix, s, &si);
                st->bytes_in += si.bytes;
                st->n_dropped += si.n_deleted;
                st->n_docs += ix->segs[s].n_live;
            }
        rc = splade_segments_merge_into(ix, dir, pick, threads, cancel, &m, &st->bytes_out);
        if (rc == 0)
            rc = splade_segments_install(dir, &m);
        if (rc == 0) {
            st->n_merged = n;
            st->generation = m.generation;
            snprintf(st->segment, sizeof st->segment, "seg-%llu.spx", (unsigned long long)m.generation);
        }
    }
    free(pick);
    splade_manifest_free(&m);
    splade_index_close(ix);
    return rc;
}

void splade_merge_opts_init(splade_merge_opts *o)
{
    memset(o, 0, sizeof *o);
}

int splade_index_merge_opts(const char *dir, const splade_merge_opts *opts, splade_merge_stats *st)
{
    splade_merge_stats local;
    st = st ? st : &local;
    memset(st, 0, sizeof *st);
    splade_merge_opts o;
    splade_merge_opts_init(&o);
    if (opts)
        o = *opts;
    if (!dir)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_index_merge: NULL argument");
    splade_dir_lock lock;
    int rc = splade_dir_lock_take(dir, &lock);
    if (rc < 0)
        return rc;
    rc = splade_merge_locked(dir, o.max_segments, o.threads, o.cancel, st);
    splade_dir_lock_release(&lock);
    return rc;
}

int splade_index_merge(const char *dir, int max_segments, int threads, splade_merge_stats *st)
{
    splade_merge_opts o;
    splade_merge_opts_init(&o);
    o.max_segments = max_segments;
    o.threads = threads;
    return splade_index_merge_opts(dir, &o, st);
}
