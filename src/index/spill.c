/* Bounded-memory builds (include/splade/build.h, splade_builder_set_memory; docs/FORMAT.md,
 * "Bounded-memory builds"): once the builder's estimated memory reaches the budget, the documents
 * so far are inverted and written as a segment of the folder (each reordered on its own) and the
 * builder starts afresh, keeping only their ids (the duplicate check) and the vocabulary. The
 * segments are installed together, in one new generation, at the end (build) or with the add, so a
 * crash at any point leaves the previous generation; segments never installed are removed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "common/fail.h"
#include "index/segments_internal.h"
#include "splade.h"
#include "splade/build.h"

/* Bytes per posting the inversion needs on top of the forward vectors (the sorted postings, their
 * impacts, the encoded blocks and ranges, the reordering's tables): measured, see
 * bench/results/segments-m2-2026-11-24.md. */
#define INVERT_BYTES_PER_POSTING 12

static uint64_t strtab_bytes(const strtab *t)
{
    return t->cap + (uint64_t)t->off_cap * 8 + (uint64_t)t->n_slots * 4;
}

/* What the builder holds and what inverting it will take. Counted by use, not capacity: under a
 * budget the forward arrays grow in steps of a quarter (builder.c), and the budget is a target, not a
 * hard limit (the allocator's slack comes on top). */
uint64_t splade_builder_memory_estimate(const splade_index_builder *b)
{
    if (!b)
        return 0;
    uint64_t docs = b->ids.n, seen = b->seen.n;
    return b->fn * (sizeof(int32_t) + sizeof(float) + INVERT_BYTES_PER_POSTING) +
           docs * (sizeof(long) + sizeof(uint64_t) + 2 * sizeof(uint32_t) + 2 * sizeof(uint64_t) + 8) + b->ids.len +
           b->store.len + strtab_bytes(&b->vocab) + b->seen.len + seen * (sizeof(long) + sizeof(uint64_t) + 8);
}

uint64_t splade_default_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    uint64_t ram = pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : (uint64_t)4 << 30;
    return ram / 4;
}

int splade_builder_set_memory(splade_index_builder *b, const char *dir, uint64_t bytes, int append)
{
    if (!b || (bytes && !dir))
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_builder_set_memory: NULL argument");
    if (b->ids.n || b->n_spills)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_builder_set_memory: the builder already has documents");
    free(b->spill_dir);
    b->spill_dir = NULL;
    b->memory = bytes;
    b->spill_append = append != 0;
    if (!bytes)
        return SPLADE_OK;
    if (!(b->spill_dir = strdup(dir)))
        return splade_fail(SPLADE_ERR_NOMEM, "builder");
    return splade_builder_lock(b, dir); /* spills write into the folder: held from now to the end */
}

void splade_builder_set_merge_policy(splade_index_builder *b, int max_segments)
{
    if (b)
        b->merge_limit = max_segments;
}

int splade_builder_merged(const splade_index_builder *b)
{
    return b ? b->n_merged : 0;
}

int splade_builder_has_id(const splade_index_builder *b, const char *id, size_t len, long *line)
{
    int64_t at = strtab_find(&b->ids, id, len);
    if (at >= 0) {
        *line = b->lines[at];
        return 1;
    }
    at = b->seen.n ? strtab_find(&b->seen, id, len) : -1;
    if (at >= 0)
        *line = b->seen_lines[at];
    return at >= 0;
}

/* The generation the spills will be installed as (the current one + 1) and, for an add, the
 * index's doc_scale. A build reads only the MANIFEST (opening the old index would read all of it);
 * an add opens the index (it does again at the end, with every check). Strays of killed writers
 * are removed first. */
static int first_spill(splade_index_builder *b)
{
    splade_manifest m;
    int rc = b->spill_append ? splade_segments_current(b->spill_dir, &m) : splade_manifest_read(b->spill_dir, &m);
    if (rc == 0) {
        splade_segments_gc(b->spill_dir, &m);
    } else if (rc == SPLADE_ERR_NOT_FOUND && !b->spill_append) { /* no MANIFEST: empty or a single file */
        splade_remove_stale(b->spill_dir);
        splade_manifest_free(&m);
        memset(&m, 0, sizeof m);
        rc = SPLADE_OK;
    }
    b->spill_gen = m.generation + 1;
    if (rc == 0 && b->spill_append && b->fixed_scale == 0)
        b->fixed_scale = m.doc_scale; /* 0 when the index has no postings yet: this spill decides */
    splade_manifest_free(&m);
    return rc;
}

/* The spilled documents' ids join `seen`; the builder's documents start afresh. */
static int forget_documents(splade_index_builder *b)
{
    if (b->seen.n + b->ids.n > b->seen_cap) {
        uint32_t cap = b->seen.n + b->ids.n + b->ids.n / 2 + 1024;
        long *l = realloc(b->seen_lines, (size_t)cap * sizeof *l);
        if (!l)
            return splade_fail(SPLADE_ERR_NOMEM, "ids of %u spilled documents", cap);
        b->seen_lines = l;
        b->seen_cap = cap;
    }
    for (uint32_t d = 0; d < b->ids.n; d++) {
        size_t len;
        const char *id = strtab_get(&b->ids, d, &len);
        b->seen_lines[b->seen.n] = b->lines[d];
        int rc = strtab_append(&b->seen, id, len, 0, NULL);
        if (rc < 0)
            return rc;
    }
    strtab_free(&b->ids);
    strtab_free(&b->store);
    b->fn = 0;
    b->n_vectors = 0;
    b->n_truncated = 0;
    int rc = strtab_init(&b->ids, 1);
    return rc == 0 ? strtab_init(&b->store, 0) : rc;
}

/* Writes the builder's documents as DIR/seg-<gen>-<k>.spx. */
static int spill_now(splade_index_builder *b)
{
    int rc = b->spill_gen ? SPLADE_OK : first_spill(b);
    if (rc == 0 && b->n_spills == b->spill_cap) {
        int cap = b->spill_cap ? b->spill_cap * 2 : 16;
        splade_manifest_seg *s = realloc(b->spills, (size_t)cap * sizeof *s);
        if (!s)
            return splade_fail(SPLADE_ERR_NOMEM, "segment list");
        b->spills = s;
        b->spill_cap = cap;
    }
    if (rc < 0)
        return rc;
    splade_manifest_seg *e = &b->spills[b->n_spills];
    memset(e, 0, sizeof *e);
    snprintf(e->file, sizeof e->file, "seg-%llu-%d.spx", (unsigned long long)b->spill_gen, b->n_spills);
    splade_build_stats st;
    if ((rc = splade_builder_write_named(b, b->spill_dir, e->file, &st)) < 0)
        return rc;
    b->n_spills++;
    e->n_docs = b->ids.n;
    e->seq_base = b->spilled_docs;
    e->clipped = b->n_clipped;
    if (b->fixed_scale == 0 && st.n_postings > 0)
        b->fixed_scale = b->written_scale; /* the first postings decide: later ones are clipped to it */
    b->spilled_docs += b->ids.n;
    b->spilled_postings += st.n_postings;
    b->spilled_truncated += b->n_truncated;
    splade_build_stats *t = &b->spill_st;
    t->invert_s += st.invert_s;
    t->reorder_s += st.reorder_s;
    t->scatter_s += st.scatter_s;
    t->encode_s += st.encode_s;
    t->write_s += st.write_s;
    t->verify_s += st.verify_s;
    t->file_bytes += st.file_bytes;
    return forget_documents(b);
}

/* What a spill cannot free: the ids of the documents already spilled and the vocabulary. */
static uint64_t kept_bytes(const splade_index_builder *b)
{
    return b->seen.len + (uint64_t)b->seen.n * (sizeof(long) + sizeof(uint64_t) + 8) + strtab_bytes(&b->vocab);
}

/* Spills when the documents reach the budget less what stays; at least an eighth of the budget per
 * segment, so that a budget too small for the kept part gives larger segments, not one per document. */
int splade_builder_maybe_spill(splade_index_builder *b)
{
    if (!b->memory || b->n_vectors < b->ids.n)
        return SPLADE_OK;
    uint64_t all = splade_builder_memory_estimate(b), kept = kept_bytes(b), room = b->memory / 8;
    if (kept + room < b->memory)
        room = b->memory - kept;
    return all - kept < room ? SPLADE_OK : spill_now(b);
}

int splade_spill_install_build(splade_index_builder *b, const char *dir, splade_build_stats *st)
{
    int rc = b->ids.n ? spill_now(b) : SPLADE_OK;
    splade_manifest m = {.generation = b->spill_gen, .doc_scale = b->fixed_scale, .next_seq = b->spilled_docs,
                         .has_model = b->has_model, .fingerprint = b->fingerprint, .n_segs = b->n_spills,
                         .segs = b->spills};
    snprintf(m.model_name, sizeof m.model_name, "%s", b->model_name ? b->model_name : "");
    snprintf(m.model_dir, sizeof m.model_dir, "%s", b->model_dir ? b->model_dir : "");
    if (rc == 0)
        rc = splade_segments_install(dir, &m);
    b->spills_installed = rc == 0;
    if (rc == 0 && b->merge_limit >= 0) { /* the size-tiered policy of add: the smallest merged, streamed */
        splade_merge_stats ms;
        rc = splade_merge_locked(dir, b->merge_limit ? b->merge_limit : SPLADE_MERGE_POLICY_SEGMENTS, b->threads,
                                b->cancel, &ms);
        b->n_merged = ms.n_merged;
    }
    *st = b->spill_st; /* times per phase and bytes summed over the segments */
    st->n_docs = (uint32_t)b->spilled_docs;
    st->n_postings = b->spilled_postings;
    st->n_truncated = b->spilled_truncated;
    st->n_terms_used = (uint32_t)b->n_terms;
    return rc;
}

int splade_spill_append(splade_index_builder *b, splade_manifest *m)
{
    if (m->generation != b->spill_gen)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "%s: generation %llu was installed while the add wrote its segments",
                           b->spill_dir, (unsigned long long)(m->generation - 1));
    if (m->doc_scale > 0 && b->fixed_scale != m->doc_scale)
        return splade_fail(SPLADE_ERR_MISMATCH, "%s: segments written with doc_scale %.9g, the index has %.9g",
                           b->spill_dir, (double)b->fixed_scale, (double)m->doc_scale);
    splade_manifest_seg *s = realloc(m->segs, ((size_t)m->n_segs + b->n_spills + 2) * sizeof *s);
    if (!s)
        return splade_fail(SPLADE_ERR_NOMEM, "manifest");
    m->segs = s;
    for (int i = 0; i < b->n_spills; i++) {
        s[m->n_segs] = b->spills[i];
        s[m->n_segs++].seq_base += m->next_seq;
    }
    m->next_seq += b->spilled_docs;
    if (m->doc_scale == 0)
        m->doc_scale = b->fixed_scale;
    return SPLADE_OK;
}

void splade_spill_discard(splade_index_builder *b)
{
    for (int i = 0; !b->spills_installed && i < b->n_spills; i++) {
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", b->spill_dir, b->spills[i].file) < (int)sizeof path)
            unlink(path);
    }
    b->n_spills = 0;
}
