/* Writers of a segmented index folder (include/splade/segments.h): add, delete, and the steps they
 * share with merge.c and `build` — the current generation, installing the next, removing files no
 * generation names. Order of every writer: lock; open the current generation (checked like a query
 * opens it); remove strays of killed writers; write and verify new files under new names; install
 * the new MANIFEST (rename); remove what it no longer names. A kill at any point leaves the previous
 * generation or the new one. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fail.h"
#include "index/reader_internal.h"
#include "index/segments_internal.h"
#include "index/strtab.h"
#include "splade.h"
#include "splade/segments.h"

static int named(const splade_manifest *m, const char *name)
{
    for (int i = 0; i < m->n_segs; i++)
        if (!strcmp(m->segs[i].file, name) || !strcmp(m->segs[i].deletions, name))
            return 1;
    return 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

void splade_segments_gc(const char *dir, const splade_manifest *m)
{
    splade_segments_gc_keep(dir, m, NULL);
}

void splade_segments_gc_keep(const char *dir, const splade_manifest *m, const splade_index_builder *keep)
{
    splade_remove_stale(dir);
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        const char *n = e->d_name;
        int ours = (!strncmp(n, "seg-", 4) && ends_with(n, ".spx")) || (!strncmp(n, "del-", 4) && ends_with(n, ".del")) ||
                   !strcmp(n, SPLADE_INDEX_FILE);
        for (int i = 0; ours && keep && i < keep->n_spills; i++) /* an add's segments, not yet installed */
            ours = strcmp(keep->spills[i].file, n) != 0;
        char path[4096];
        if (ours && !named(m, n) && snprintf(path, sizeof path, "%s/%s", dir, n) < (int)sizeof path)
            unlink(path);
    }
    closedir(d);
}

/* The generation of an open index as a manifest: its own, or, for a single file, one naming
 * index.spx (generation 0) — what the first add or delete converts the folder to. */
static int current(const splade_index *ix, splade_manifest *m)
{
    if (ix->is_snapshot)
        return splade_manifest_copy(&ix->man, 1, m);
    memset(m, 0, sizeof *m);
    m->segs = calloc(2, sizeof *m->segs);
    if (!m->segs)
        return splade_fail(SPLADE_ERR_NOMEM, "manifest");
    m->n_segs = 1;
    strcpy(m->segs[0].file, SPLADE_INDEX_FILE);
    m->segs[0].n_docs = ix->info.n_docs;
    m->doc_scale = ix->info.doc_scale;
    m->next_seq = ix->info.n_docs;
    m->has_model = (ix->info.flags & SPLADE_IX_HAS_MODEL) != 0;
    m->fingerprint = ix->info.fingerprint;
    snprintf(m->model_name, sizeof m->model_name, "%s", ix->info.model_name);
    snprintf(m->model_dir, sizeof m->model_dir, "%s", ix->info.model_dir);
    return SPLADE_OK;
}

int splade_segments_current(const char *dir, splade_manifest *m)
{
    splade_index *ix = NULL;
    memset(m, 0, sizeof *m);
    int rc = splade_index_open_threads(dir, 1, &ix);
    if (rc == 0)
        rc = current(ix, m);
    splade_index_close(ix);
    return rc;
}

int splade_segments_install(const char *dir, const splade_manifest *m)
{
    int rc = splade_manifest_write(dir, m);
    if (rc == 0)
        splade_segments_gc(dir, m);
    return rc;
}

/* The index of a writer, opened under its lock (so it is the current generation), with the strays
 * of killed writers removed. A missing index is SPLADE_ERR_NOT_FOUND with a hint. */
static int open_for_writing(const char *dir, int threads, const splade_index_builder *keep, splade_index **ix,
                            splade_manifest *m)
{
    *ix = NULL;
    memset(m, 0, sizeof *m);
    int rc = splade_index_open_threads(dir, threads > 0 ? threads : 1, ix);
    if (rc == SPLADE_ERR_NOT_FOUND)
        return splade_fail(rc, "%s: no index here (create one with `splade-index build`)", dir);
    if (rc < 0)
        return rc;
    if ((*ix)->is_snapshot)
        splade_segments_gc_keep(dir, &(*ix)->man, keep);
    else
        splade_remove_stale(dir);
    return current(*ix, m);
}

/* ---- add ---- */

static int check_kind(const splade_index *ix, const splade_index_builder *b, const char *dir)
{
    int ix_model = (ix->info.flags & SPLADE_IX_HAS_MODEL) != 0;
    if (ix_model != b->has_model)
        return splade_fail(SPLADE_ERR_MISMATCH, "%s was built %s; the documents to add were %s", dir,
                           ix_model ? "with a model" : "from --vectors", b->has_model ? "encoded with a model" : "given as --vectors");
    int ix_sorted = (ix->info.flags & SPLADE_IX_SORTED_VOCAB) != 0;
    if (!ix_model && ix_sorted != b->dynamic_vocab) /* both without a model: given tokens vs --vectors' own */
        return splade_fail(SPLADE_ERR_MISMATCH, "%s was built %s; the documents to add have %s", dir,
                           ix_sorted ? "from --vectors (a growing vocabulary)" : "over a fixed vocabulary without a model",
                           b->dynamic_vocab ? "a growing vocabulary (--vectors)" : "a fixed vocabulary without a model");
    if (ix_model && (b->fingerprint != ix->info.fingerprint || (uint32_t)b->n_terms != ix->info.n_terms))
        return splade_fail(SPLADE_ERR_MISMATCH, "%s was built with model %s (fingerprint %016llx); the documents to add "
                           "were encoded with %s (fingerprint %016llx)", dir, ix->info.model_name,
                           (unsigned long long)ix->info.fingerprint, b->model_name ? b->model_name : "?",
                           (unsigned long long)b->fingerprint);
    return SPLADE_OK;
}

/* Live documents of ix whose id the builder also has: an error naming the one earliest in the input
 * (add), or marked in del[segment] for deletion (update). */
static int find_replaced(const splade_index *ix, const splade_index_builder *b, int update, uint64_t **del,
                         uint32_t *n_replaced)
{
    *n_replaced = 0;
    long first = -1, line;
    int first_seg = 0;
    char first_id[1024] = "";
    for (int s = 0; s < ix->n_segs; s++) {
        const splade_segment *g = &ix->segs[s];
        for (uint32_t d = 0; d < g->n_docs; d++) {
            if (splade_segment_deleted(g, d))
                continue;
            size_t len;
            const char *id = splade_index_doc_id(g->ix, d, &len);
            if (!splade_builder_has_id(b, id, len, &line)) /* spilled documents too (spill.c) */
                continue;
            if (!update) {
                if (first < 0 || line < first) {
                    first = line, first_seg = s;
                    snprintf(first_id, sizeof first_id, "%.*s", (int)len, id);
                }
                continue;
            }
            if (!del[s] && !(del[s] = calloc((size_t)g->n_docs / 64 + 1, 8)))
                return splade_fail(SPLADE_ERR_NOMEM, "deletions");
            del[s][d >> 6] |= 1ull << (d & 63);
            (*n_replaced)++;
        }
    }
    if (first < 0)
        return SPLADE_OK;
    return splade_fail(SPLADE_ERR_DUPLICATE, "%s:%ld: id \"%s\" is already in the index (segment %s/%s): use "
                       "`update` to replace it", b->where ? b->where : "input", first, first_id,
                       ix->path, ix->man.n_segs ? ix->man.segs[first_seg].file : SPLADE_INDEX_FILE);
}

/* Segment i of m gets the deletions in add[] (on top of its own): a new deletion file
 * del-<generation>-<stem>.del. */
static int write_deletions(const splade_index *ix, const char *dir, splade_manifest *m, int i, const uint64_t *add)
{
    const splade_segment *g = &ix->segs[i];
    size_t words = ((size_t)g->n_docs + 63) / 64;
    uint64_t *bits = calloc(words + 1, 8);
    if (!bits)
        return splade_fail(SPLADE_ERR_NOMEM, "deletions");
    for (size_t w = 0; w < words; w++)
        bits[w] = (g->deleted ? g->deleted[w] : 0) | add[w];
    splade_manifest_seg *e = &m->segs[i];
    char stem[SPLADE_NAME_MAX];
    snprintf(stem, sizeof stem, "%.*s", (int)(strlen(e->file) - 4), e->file);
    snprintf(e->deletions, sizeof e->deletions, "del-%llu-%.40s.del", (unsigned long long)m->generation, stem);
    int rc = splade_deletions_write(dir, e->deletions, g->n_docs, bits, &e->n_deleted);
    free(bits);
    return rc;
}

/* Drops segments with no live document left (keeping at least one). */
static void drop_empty(splade_manifest *m)
{
    int k = 0;
    for (int i = 0; i < m->n_segs; i++)
        if (m->segs[i].n_deleted < m->segs[i].n_docs || (k == 0 && i == m->n_segs - 1))
            m->segs[k++] = m->segs[i];
    m->n_segs = k;
}

static int apply_deletions(const splade_index *ix, const char *dir, splade_manifest *m, uint64_t **del)
{
    for (int s = 0; s < ix->n_segs; s++)
        if (del[s]) {
            int rc = write_deletions(ix, dir, m, s, del[s]);
            if (rc < 0)
                return rc;
        }
    drop_empty(m);
    return SPLADE_OK;
}

static void free_dels(uint64_t **del, int n)
{
    for (int i = 0; del && i < n; i++)
        free(del[i]);
    free(del);
}

/* Writes the builder's documents as segment seg-<generation>.spx, appended to m. */
static int write_segment(splade_index_builder *b, const char *dir, splade_manifest *m, splade_add_stats *st)
{
    if (m->doc_scale > 0)
        splade_builder_set_doc_scale(b, m->doc_scale);
    splade_manifest_seg *e = &m->segs[m->n_segs];
    memset(e, 0, sizeof *e);
    snprintf(e->file, sizeof e->file, "seg-%llu.spx", (unsigned long long)m->generation);
    int rc = splade_builder_write_named(b, dir, e->file, &st->build);
    if (rc < 0)
        return rc;
    e->n_docs = b->ids.n;
    e->seq_base = m->next_seq;
    e->clipped = b->n_clipped;
    m->next_seq += b->ids.n;
    if (m->doc_scale == 0 && st->build.n_postings > 0)
        m->doc_scale = b->written_scale; /* the first postings of the index set its scale */
    m->n_segs++;
    snprintf(st->segment, sizeof st->segment, "%s", e->file);
    st->n_added = b->ids.n;
    st->n_postings = st->build.n_postings;
    st->clipped = b->n_clipped;
    return SPLADE_OK;
}

static int add_locked(splade_index_builder *b, const char *dir, const splade_add_opts *o, splade_add_stats *st)
{
    splade_index *ix;
    splade_manifest m;
    int rc = open_for_writing(dir, o->threads, b, &ix, &m);
    uint64_t **del = ix ? calloc((size_t)ix->n_segs + 1, sizeof *del) : NULL;
    if (rc == 0 && !del)
        rc = splade_fail(SPLADE_ERR_NOMEM, "deletions");
    if (rc == 0)
        rc = check_kind(ix, b, dir);
    if (rc == 0)
        rc = find_replaced(ix, b, o->update, del, &st->n_replaced);
    if (rc == 0 && b->ids.n == 0 && b->n_spills == 0 && st->n_replaced == 0) { /* nothing to do (add --allow-empty of nothing) */
        st->generation = m.generation;
        goto done;
    }
    m.generation++;
    if (rc == 0 && b->n_spills) /* the segments written while the budget was reached (spill.c) */
        rc = splade_spill_append(b, &m);
    if (rc == 0 && b->ids.n > 0)
        rc = write_segment(b, dir, &m, st);
    st->n_added = (uint32_t)(b->spilled_docs + b->ids.n);
    if (!st->segment[0] && b->n_spills) /* every document went into spilled segments: name the last */
        snprintf(st->segment, sizeof st->segment, "%s", b->spills[b->n_spills - 1].file);
    st->n_postings = st->build.n_postings + b->spilled_postings;
    if (rc == 0)
        rc = apply_deletions(ix, dir, &m, del);
    if (rc == 0)
        rc = splade_segments_install(dir, &m);
    b->spills_installed |= rc == 0;
    st->generation = m.generation;
done:
    free_dels(del, ix ? ix->n_segs : 0);
    splade_index_close(ix);
    splade_manifest_free(&m);
    return rc;
}


void splade_add_opts_init(splade_add_opts *o)
{
    *o = (splade_add_opts){.update = 0, .no_merge = 0, .max_segments = 0, .threads = 0};
}

int splade_index_add(splade_index_builder *b, const char *dir, const splade_add_opts *opts, splade_add_stats *st)
{
    splade_add_opts o;
    if (opts)
        o = *opts;
    else
        splade_add_opts_init(&o);
    splade_add_stats local;
    st = st ? st : &local;
    memset(st, 0, sizeof *st);
    if (!b || !dir)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_index_add: NULL argument");
    splade_dir_lock lock = {0};
    int rc = SPLADE_OK;
    if (!splade_dir_lock_holds(&b->lock, dir) && (rc = splade_dir_lock_take(dir, &lock)) < 0)
        return rc;
    b->threads = o.threads;
    rc = add_locked(b, dir, &o, st);
    int limit = o.max_segments > 0 ? o.max_segments : SPLADE_MERGE_POLICY_SEGMENTS;
    if (rc == 0 && !o.no_merge) { /* the size-tiered policy: merge the smallest when there are too many */
        splade_merge_stats ms;
        rc = splade_merge_locked(dir, limit, o.threads, b->cancel, &ms);
        st->n_merged = ms.n_merged;
        st->generation = ms.n_merged ? ms.generation : st->generation;
    }
    if (rc == 0)
        b->lock.made_dir = 0; /* the folder holds an index: never removed on release */
    splade_dir_lock_release(&lock);
    return rc;
}

/* ---- delete ---- */

static void note_unknown(splade_delete_stats *st, const char *id, size_t len)
{
    size_t have = strlen(st->unknown);
    if (st->n_unknown++ < 5 && have + len + 4 < sizeof st->unknown)
        snprintf(st->unknown + have, sizeof st->unknown - have, "%s\"%.*s\"", have ? ", " : "", (int)len, id);
}

/* Marks the live documents whose ids are in want (hashed); found[i] set for each id found. */
static int mark_ids(const splade_index *ix, const strtab *want, uint8_t *found, uint64_t **del, uint32_t *n)
{
    for (int s = 0; s < ix->n_segs; s++) {
        const splade_segment *g = &ix->segs[s];
        for (uint32_t d = 0; d < g->n_docs; d++) {
            size_t len;
            const char *id = splade_segment_deleted(g, d) ? NULL : splade_index_doc_id(g->ix, d, &len);
            int64_t at = id ? strtab_find(want, id, len) : -1;
            if (at < 0)
                continue;
            if (!del[s] && !(del[s] = calloc((size_t)g->n_docs / 64 + 1, 8)))
                return splade_fail(SPLADE_ERR_NOMEM, "deletions");
            del[s][d >> 6] |= 1ull << (d & 63);
            found[at] = 1;
            (*n)++;
        }
    }
    return SPLADE_OK;
}

static int delete_locked(const char *dir, const char *const *ids, size_t n, int strict, splade_delete_stats *st)
{
    splade_index *ix;
    splade_manifest m;
    strtab want;
    int rc = strtab_init(&want, 1);
    if (rc == 0)
        rc = open_for_writing(dir, 0, NULL, &ix, &m);
    else
        ix = NULL, memset(&m, 0, sizeof m);
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (strtab_find(&want, ids[i], strlen(ids[i])) < 0)
            rc = strtab_append(&want, ids[i], strlen(ids[i]), 0, NULL);
    uint64_t **del = ix ? calloc((size_t)ix->n_segs + 1, sizeof *del) : NULL;
    uint8_t *found = calloc((size_t)want.n + 1, 1);
    if (rc == 0 && (!del || !found))
        rc = splade_fail(SPLADE_ERR_NOMEM, "deletions");
    if (rc == 0)
        rc = mark_ids(ix, &want, found, del, &st->n_deleted);
    for (uint32_t i = 0; rc == 0 && i < want.n; i++)
        if (!found[i]) {
            size_t len;
            const char *id = strtab_get(&want, i, &len);
            note_unknown(st, id, len);
        }
    st->generation = m.generation;
    if (rc == 0 && strict && st->n_unknown)
        rc = splade_fail(SPLADE_ERR_NOT_FOUND, "%s: %u of the ids to delete are not in the index (%s%s); nothing deleted",
                         dir, st->n_unknown, st->unknown, st->n_unknown > 5 ? ", ..." : "");
    if (rc == 0 && st->n_deleted) {
        m.generation++;
        rc = apply_deletions(ix, dir, &m, del);
        if (rc == 0)
            rc = splade_segments_install(dir, &m);
        st->generation = m.generation;
    }
    free(found);
    free_dels(del, ix ? ix->n_segs : 0);
    splade_index_close(ix);
    splade_manifest_free(&m);
    strtab_free(&want);
    return rc;
}

int splade_index_delete(const char *dir, const char *const *ids, size_t n, int strict, splade_delete_stats *st)
{
    splade_delete_stats local;
    st = st ? st : &local;
    memset(st, 0, sizeof *st);
    if (!dir || (n && !ids))
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_index_delete: NULL argument");
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return splade_fail(SPLADE_ERR_NOT_FOUND, "%s: no index here (create one with `splade-index build`)", dir);
    splade_dir_lock lock;
    int rc = splade_dir_lock_take(dir, &lock);
    if (rc < 0)
        return rc;
    rc = delete_locked(dir, ids, n, strict, st);
    splade_dir_lock_release(&lock);
    return rc;
}

/* ---- build into a segmented folder ---- */

int splade_segments_replace_all(splade_index_builder *b, const char *dir, splade_build_stats *st)
{
    splade_manifest old, m = {0};
    int rc = splade_manifest_read(dir, &old);
    if (rc < 0) {
        splade_manifest_free(&old);
        return rc;
    }
    splade_segments_gc(dir, &old);
    m.generation = old.generation + 1;
    m.segs = calloc(1, sizeof *m.segs);
    if (!m.segs)
        rc = splade_fail(SPLADE_ERR_NOMEM, "manifest");
    splade_add_stats as = {0};
    if (rc == 0)
        rc = write_segment(b, dir, &m, &as); /* m.doc_scale is 0: the build's own */
    *st = as.build;
    m.has_model = b->has_model;
    m.fingerprint = b->fingerprint;
    snprintf(m.model_name, sizeof m.model_name, "%s", b->model_name ? b->model_name : "");
    snprintf(m.model_dir, sizeof m.model_dir, "%s", b->model_dir ? b->model_dir : "");
    if (rc == 0)
        rc = splade_segments_install(dir, &m);
    splade_manifest_free(&old);
    splade_manifest_free(&m);
    return rc;
}

/* ---- inspecting ---- */

int splade_index_segment_count(const splade_index *ix)
{
    return ix->n_segs;
}

int splade_index_segment_info(const splade_index *ix, int i, splade_segment_info *out)
{
    if (!ix || !out || i < 0 || i >= ix->n_segs)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_index_segment_info: no segment %d", i);
    const splade_segment *g = &ix->segs[i];
    const splade_index_info *in = splade_index_get_info(g->ix);
    const splade_manifest_seg *e = ix->is_snapshot ? &ix->man.segs[i] : NULL;
    *out = (splade_segment_info){.file = e ? e->file : SPLADE_INDEX_FILE, .n_docs = g->n_docs,
                                 .n_deleted = g->n_docs - g->n_live, .n_postings = in->n_postings,
                                 .bytes = in->file_bytes, .clipped = e ? e->clipped : 0, .seq_base = g->seq_base,
                                 .deletions = e ? e->deletions : ""};
    if (e && e->deletions[0])
        out->bytes += 28 + ((uint64_t)g->n_docs + 63) / 64 * 8;
    return SPLADE_OK;
}

uint64_t splade_index_generation(const splade_index *ix)
{
    return ix->is_snapshot ? ix->man.generation : 0;
}
