/* Merging segments (include/splade/segments.h, splade_index_merge): the live documents of the
 * picked segments, in sequence order, rebuilt into one new segment with the index's doc_scale and
 * their sequence numbers (DOCSEQ), so that every search answers as before. This first version
 * decodes the postings back into per-document vectors in memory (an impact i becomes the weight
 * i × doc_scale, which quantizes back to i exactly) and inverts them again; a streaming k-way merge
 * of the posting lists is the next step (docs/FORMAT.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "index/format.h"
#include "index/postings.h"
#include "index/reader_internal.h"
#include "index/segments_internal.h"
#include "splade.h"
#include "splade/segments.h"

typedef struct {
    uint64_t seq;
    uint32_t seg, doc;
} live_doc;

static int by_seq(const void *a, const void *b)
{
    uint64_t x = ((const live_doc *)a)->seq, y = ((const live_doc *)b)->seq;
    return (x > y) - (x < y);
}

/* One picked segment's documents as vectors: CSR over its internal ids, terms as builder ids. */
typedef struct {
    uint64_t *start;
    int32_t *terms;
    float *weights;
} forward;

/* Inverts the segment's postings back into forward (two passes: count, fill). bterm maps the
 * file's term ids to the builder's. */
static int decode_segment(const splade_segment *g, const int32_t *bterm, float scale, forward *f)
{
    const splade_index *ix = g->ix;
    uint32_t T = ix->info.n_terms, docs[SPLADE_BLOCK_SIZE];
    f->start = calloc((size_t)g->n_docs + 2, sizeof *f->start);
    f->terms = malloc((ix->info.n_postings + 1) * sizeof *f->terms);
    f->weights = malloc((ix->info.n_postings + 1) * sizeof *f->weights);
    if (!f->start || !f->terms || !f->weights)
        return splade_fail(SPLADE_ERR_NOMEM, "%s: %llu postings", ix->path, (unsigned long long)ix->info.n_postings);
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t t = 0; t < T; t++) {
            splade_term_postings tp;
            splade_index_postings(ix, (int32_t)t, &tp);
            for (uint32_t b = 0; b < tp.n_blocks; b++) {
                uint32_t prev = b ? tp.blocks[b - 1].last_doc : 0;
                uint32_t count = b + 1 < tp.n_blocks ? SPLADE_BLOCK_SIZE : tp.n_postings - b * SPLADE_BLOCK_SIZE;
                const uint8_t *in = tp.postings + tp.blocks[b].offset;
                splade_block_decode_docs(in, count, prev, docs);
                for (uint32_t i = 0; i < count; i++) {
                    if (pass == 0) {
                        f->start[docs[i] + 2]++;
                        continue;
                    }
                    uint64_t p = f->start[docs[i] + 1]++;
                    f->terms[p] = bterm ? bterm[t] : (int32_t)t;
                    f->weights[p] = (float)in[i] * scale;
                }
            }
        }
        if (pass == 0) /* start[d + 2] counts -> start[d + 1] = the fill cursor of d */
            for (uint32_t d = 0; d < g->n_docs; d++)
                f->start[d + 2] += f->start[d + 1];
    }
    return SPLADE_OK;
}

static void forward_free(forward *f)
{
    free(f->start);
    free(f->terms);
    free(f->weights);
}

/* A builder like the segments' own: the model's vocabulary, or a growing one. */
static int make_builder(const splade_index *ix, splade_index_builder **b, char ***tokens)
{
    const splade_index_info *in = splade_index_get_info(ix);
    *tokens = NULL;
    if (!(in->flags & SPLADE_IX_HAS_MODEL))
        return splade_builder_create(NULL, 0, NULL, b);
    char **tok = calloc((size_t)in->n_terms + 1, sizeof *tok);
    if (!tok)
        return splade_fail(SPLADE_ERR_NOMEM, "vocabulary");
    *tokens = tok;
    for (uint32_t t = 0; t < in->n_terms; t++) {
        size_t len;
        const char *s = splade_index_term(ix, (int32_t)t, &len);
        if (!(tok[t] = strndup(s, len)))
            return splade_fail(SPLADE_ERR_NOMEM, "vocabulary");
    }
    splade_index_model m = {in->model_name, in->model_dir, in->fingerprint, (in->flags & SPLADE_IX_LOWERCASE) != 0,
                            in->max_length, (in->flags & SPLADE_IX_QUERY_TABLE) != 0};
    return splade_builder_create((const char *const *)tok, (int32_t)in->n_terms, &m, b);
}

/* Builder term ids of segment g's terms (--vectors: interned by token). NULL: the same ids. */
static int builder_terms(splade_index_builder *b, const splade_segment *g, int32_t **out)
{
    *out = NULL;
    if (!b->dynamic_vocab)
        return SPLADE_OK;
    uint32_t T = g->ix->info.n_terms;
    int32_t *m = malloc(((size_t)T + 1) * sizeof *m);
    if (!m)
        return splade_fail(SPLADE_ERR_NOMEM, "vocabulary");
    for (uint32_t t = 0; t < T; t++) {
        size_t len;
        const char *s = splade_index_term(g->ix, (int32_t)t, &len);
        int rc = splade_builder_term(b, s, len, &m[t]);
        if (rc < 0) {
            free(m);
            return rc;
        }
    }
    *out = m;
    return SPLADE_OK;
}

/* The picked segments' live documents, sorted by sequence number. */
static int gather(const splade_index *ix, const int *pick, live_doc **out, uint32_t *n)
{
    uint64_t total = 0;
    for (int s = 0; s < ix->n_segs; s++)
        total += pick[s] ? ix->segs[s].n_live : 0;
    if (total > UINT32_MAX - 2)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "a merged segment of more than 2^32 - 2 documents");
    live_doc *l = malloc((total + 1) * sizeof *l);
    if (!l)
        return splade_fail(SPLADE_ERR_NOMEM, "%llu documents", (unsigned long long)total);
    uint32_t k = 0;
    for (int s = 0; s < ix->n_segs; s++)
        for (uint32_t d = 0; pick[s] && d < ix->segs[s].n_docs; d++)
            if (!splade_segment_deleted(&ix->segs[s], d))
                l[k++] = (live_doc){splade_segment_seq(&ix->segs[s], d), (uint32_t)s, d};
    qsort(l, k, sizeof *l, by_seq);
    if (k && l[k - 1].seq - l[0].seq > UINT32_MAX)
        return free(l), splade_fail(SPLADE_ERR_UNSUPPORTED, "a merged segment spanning more than 2^32 sequence numbers");
    *out = l;
    *n = k;
    return SPLADE_OK;
}

/* Adds the documents in sequence order, each with its vector and its sequence offset. */
static int feed(splade_index_builder *b, const splade_index *ix, const live_doc *l, uint32_t n, const forward *fw)
{
    char id[1100];
    for (uint32_t i = 0; i < n; i++) {
        const splade_segment *g = &ix->segs[l[i].seg];
        size_t len;
        const char *s = splade_index_doc_id(g->ix, l[i].doc, &len), *title, *snippet;
        snprintf(id, sizeof id, "%.*s", (int)len, s);
        splade_index_doc_text(g->ix, l[i].doc, &title, &snippet);
        uint32_t doc;
        const forward *f = &fw[l[i].seg];
        uint64_t a = f->start[l[i].doc], e = f->start[l[i].doc + 1];
        int rc = splade_builder_add_doc(b, "merge", id, title, snippet, 0, &doc);
        if (rc == 0)
            rc = splade_builder_set_seq_offset(b, doc, (uint32_t)(l[i].seq - l[0].seq));
        if (rc == 0)
            rc = splade_builder_set_vector(b, doc, f->terms + a, f->weights + a, (int32_t)(e - a));
        if (rc < 0)
            return rc;
    }
    return SPLADE_OK;
}

static int by_seq_base(const void *a, const void *b)
{
    uint64_t x = ((const splade_manifest_seg *)a)->seq_base, y = ((const splade_manifest_seg *)b)->seq_base;
    return (x > y) - (x < y);
}

/* out: ix's manifest without the picked segments, plus the new one (generation out->generation). */
static int write_merged(splade_index_builder *b, const char *dir, const int *pick, const splade_index *ix,
                        uint32_t n, uint64_t seq_base, splade_manifest *out)
{
    splade_build_stats st;
    splade_manifest_seg e = {0};
    snprintf(e.file, sizeof e.file, "seg-%llu.spx", (unsigned long long)out->generation);
    if (out->doc_scale > 0)
        splade_builder_set_doc_scale(b, out->doc_scale);
    int rc = splade_builder_write_named(b, dir, e.file, &st);
    if (rc < 0)
        return rc;
    e.n_docs = n;
    e.seq_base = seq_base;
    e.clipped = 0; /* impacts come back as they were: none saturates again */
    int k = 0;
    for (int s = 0; s < ix->n_segs; s++)
        if (!pick[s])
            out->segs[k++] = out->segs[s];
    out->segs[k++] = e;
    out->n_segs = k;
    qsort(out->segs, (size_t)k, sizeof *out->segs, by_seq_base);
    return SPLADE_OK;
}

int splade_segments_merge_into(const splade_index *ix, const char *dir, const int *pick, int threads,
                               splade_manifest *out)
{
    live_doc *l = NULL;
    uint32_t n = 0;
    char **tokens = NULL;
    splade_index_builder *b = NULL;
    forward *fw = calloc((size_t)ix->n_segs, sizeof *fw);
    int rc = fw ? gather(ix, pick, &l, &n) : splade_fail(SPLADE_ERR_NOMEM, "merge");
    if (rc == 0)
        rc = make_builder(ix, &b, &tokens);
    for (int s = 0; rc == 0 && s < ix->n_segs; s++) {
        int32_t *bterm = NULL;
        if (pick[s] && (rc = builder_terms(b, &ix->segs[s], &bterm)) == 0)
            rc = decode_segment(&ix->segs[s], bterm, out->doc_scale, &fw[s]);
        free(bterm);
    }
    if (rc == 0) {
        splade_builder_set_threads(b, threads);
        rc = feed(b, ix, l, n, fw);
    }
    for (int s = 0; fw && s < ix->n_segs; s++)
        forward_free(&fw[s]);
    free(fw);
    if (rc == 0)
        rc = write_merged(b, dir, pick, ix, n, n ? l[0].seq : out->next_seq, out);
    splade_builder_free(b);
    for (uint32_t t = 0; tokens && tokens[t]; t++)
        free(tokens[t]);
    free(tokens);
    free(l);
    return rc;
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

int splade_merge_locked(const char *dir, int max_segments, int threads, splade_merge_stats *st)
{
    memset(st, 0, sizeof *st);
    splade_index *ix = NULL;
    int rc = splade_index_open_threads(dir, threads > 0 ? threads : 1, &ix);
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
        rc = splade_segments_merge_into(ix, dir, pick, threads, &m);
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

int splade_index_merge(const char *dir, int max_segments, int threads, splade_merge_stats *st)
{
    splade_merge_stats local;
    st = st ? st : &local;
    memset(st, 0, sizeof *st);
    if (!dir)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_index_merge: NULL argument");
    splade_dir_lock lock;
    int rc = splade_dir_lock_take(dir, &lock);
    if (rc < 0)
        return rc;
    rc = splade_merge_locked(dir, max_segments, threads, st);
    splade_dir_lock_release(&lock);
    return rc;
}
