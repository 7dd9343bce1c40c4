/* Interprets the verified sections of an open index: metadata, consistency of every offsets
 * table (so accessors never leave the mapping), and the accessors of include/splade/index.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "index/format.h"
#include "index/parallel.h"
#include "index/reader_internal.h"
#include "index/svb.h"
#include "splade.h"

static int bad(const splade_index *ix, const char *what)
{
    return splade_fail(SPLADE_ERR_FORMAT, "%s: inconsistent index: %s", ix->path, what);
}

/* Checks one Stream VByte delta list (docs/FORMAT.md) of count values whose control bytes start at
 * `in`, `avail` bytes before the end of the section: it must fit, and the values, summed from
 * `prev`, must be strictly ascending (the first may equal prev only if `first_zero_ok`) and below
 * `limit`. *last receives the last value. Runs over every posting at each open, so it decodes with
 * the SIMD decoder (index/svb.c; a byte-by-byte loop took ~2 s per 1M documents). */
static int svb_check(const uint8_t *in, uint64_t avail, uint32_t count, uint32_t prev, int first_zero_ok,
                     uint64_t limit, uint32_t *last, uint32_t *scratch)
{
    return splade_svb_delta_check(in, avail, count, prev, first_zero_ok, limit, last, scratch);
}

static char *read_string(const uint8_t **p, const uint8_t *end)
{
    uint32_t len;
    if (end - *p < 4)
        return NULL;
    memcpy(&len, *p, 4);
    if ((uint64_t)(end - *p - 4) < len)
        return NULL;
    char *s = malloc((size_t)len + 1);
    if (s) {
        memcpy(s, *p + 4, len);
        s[len] = '\0';
    }
    *p += 4 + len;
    return s;
}

static int parse_meta(splade_index *ix)
{
    spx_meta m;
    if (ix->sec_len[SEC_META] < sizeof m)
        return bad(ix, "META too short");
    memcpy(&m, ix->sec[SEC_META], sizeof m);
    if (m.block_size != SPLADE_BLOCK_SIZE || m.impact_bits != 8 || m.query_bits != 8 ||
        m.range_shift != SPLADE_RANGE_SHIFT)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "%s: block size %u / %u-bit impacts not supported", ix->path,
                           m.block_size, m.impact_bits);
    /* Every printed score is multiplied by doc_scale: NaN, infinite or negative would print "nan",
     * "inf" or negative scores (the writer stores max weight / 255, or 0 without postings). */
    if (!isfinite(m.doc_scale) || m.doc_scale < 0)
        return splade_fail(SPLADE_ERR_FORMAT, "%s: inconsistent index: META doc_scale is %g, not a finite number >= 0",
                           ix->path, (double)m.doc_scale);
    const uint8_t *p = ix->sec[SEC_META] + sizeof m, *end = ix->sec[SEC_META] + ix->sec_len[SEC_META];
    ix->model_name = read_string(&p, end);
    ix->model_dir = ix->model_name ? read_string(&p, end) : NULL;
    if (!ix->model_dir)
        return bad(ix, "META strings");
    ix->info = (splade_index_info){
        .n_docs = m.n_docs, .n_terms = m.n_terms, .n_postings = m.n_postings, .n_blocks = m.n_blocks,
        .doc_scale = m.doc_scale, .fingerprint = m.fingerprint, .flags = m.flags, .max_length = m.max_length,
        .n_truncated = m.n_truncated, .build_time = m.build_time, .model_name = ix->model_name,
        .model_dir = ix->model_dir, .file_bytes = ix->size};
    return SPLADE_OK;
}

/* An offsets table of n + 1 entries followed by a blob: ascending and within the section. */
static int check_offsets64(const splade_index *ix, int sec, uint64_t n, const uint64_t **off, const char **blob)
{
    uint64_t len = ix->sec_len[sec];
    if (len / 8 < n + 1)
        return bad(ix, "offsets table too short");
    *off = (const uint64_t *)ix->sec[sec];
    *blob = (const char *)ix->sec[sec] + (n + 1) * 8;
    uint64_t blob_len = len - (n + 1) * 8;
    if ((*off)[0] != 0)
        return bad(ix, "offsets table start");
    for (uint64_t i = 0; i < n; i++)
        if ((*off)[i + 1] < (*off)[i])
            return bad(ix, "offsets not ascending");
    return (*off)[n] <= blob_len ? SPLADE_OK : bad(ix, "offsets past the section");
}

static int check_vocab(splade_index *ix)
{
    uint64_t T = ix->info.n_terms, len = ix->sec_len[SEC_VOCAB];
    if (len / 4 < T + 1)
        return bad(ix, "VOCAB too short");
    ix->vocab_off = (const uint32_t *)ix->sec[SEC_VOCAB];
    ix->vocab = (const char *)ix->sec[SEC_VOCAB] + (T + 1) * 4;
    for (uint64_t i = 0; i < T; i++)
        if (ix->vocab_off[i + 1] < ix->vocab_off[i])
            return bad(ix, "VOCAB offsets");
    return ix->vocab_off[T] <= len - (T + 1) * 4 ? SPLADE_OK : bad(ix, "VOCAB past the section");
}

static int check_postings(splade_index *ix)
{
    const splade_index_info *in = &ix->info;
    if (ix->sec_len[SEC_TERMS] != (uint64_t)in->n_terms * sizeof(splade_term_entry) ||
        ix->sec_len[SEC_BLOCKS] != in->n_blocks * sizeof(splade_block_entry) || ix->sec_len[SEC_POSTINGS] < 16)
        return bad(ix, "TERMS/BLOCKS sizes");
    ix->terms = (const splade_term_entry *)ix->sec[SEC_TERMS];
    ix->blocks = (const splade_block_entry *)ix->sec[SEC_BLOCKS];
    uint64_t total = 0, data_end = ix->sec_len[SEC_POSTINGS] - 16;
    for (uint32_t t = 0; t < in->n_terms; t++) {
        uint64_t nb = (ix->terms[t].n_postings + SPLADE_BLOCK_SIZE - 1) / SPLADE_BLOCK_SIZE;
        if (ix->terms[t].first_block > in->n_blocks || nb > in->n_blocks - ix->terms[t].first_block)
            return bad(ix, "term blocks");
        total += ix->terms[t].n_postings;
    }
    for (uint64_t b = 0; b < in->n_blocks; b++)
        if (ix->blocks[b].offset > data_end || ix->blocks[b].last_doc >= in->n_docs)
            return bad(ix, "block table");
    if (total != in->n_postings)
        return bad(ix, "posting count");
    return SPLADE_OK;
}

/* A dense table (docs/FORMAT.md, "Range maxima"): one byte per range, inside the section, with
 * exactly n_ranges non-zero entries (BMP trusts both). */
static int dense_valid(const splade_index *ix, const splade_range_term *r, uint64_t n_ranges, uint64_t end)
{
    if (n_ranges > end - r->offset)
        return 0;
    const uint8_t *m = ix->sec[SEC_RANGES] + r->offset;
    uint64_t nonzero = 0;
    for (uint64_t i = 0; i < n_ranges; i++)
        nonzero += m[i] != 0;
    return nonzero == r->n_ranges;
}

/* A lean open (splade_index_open_fd_lean) releases what a job has checked, every 8 MB: from *done
 * (NULL: the job's first byte, at) up to at, the start of what it reads next. Jobs cover disjoint
 * runs of terms, i.e. disjoint runs of the sections; a page released early is read again from the
 * page cache. */
static void lean_release(const splade_index *ix, const uint8_t **done, const uint8_t *at)
{
    if (!ix->lean)
        return;
    if (!*done || at < *done)
        *done = at;
    if (at - *done >= (8 << 20)) {
        splade_index_release(ix, *done, at);
        *done = at;
    }
}

/* Term t's range table, structurally: inside the section, n_ranges plausible, a sparse list's ids
 * ascending below the number of ranges (decoded into ids), a dense table's non-zero count equal to
 * n_ranges. NULL if valid, else what is wrong. */
static const char *range_term_invalid(const splade_index *ix, uint32_t t, uint32_t *ids)
{
    uint64_t n_ranges = ((uint64_t)ix->info.n_docs + (1u << SPLADE_RANGE_SHIFT) - 1) >> SPLADE_RANGE_SHIFT;
    uint64_t end = ix->sec_len[SEC_RANGES] - 16;
    const splade_range_term *r = &ix->range_terms[t];
    uint32_t last;
    if (r->n_ranges > n_ranges || r->n_ranges > ix->terms[t].n_postings || r->offset > end ||
        (r->flags & ~(uint32_t)SPLADE_RANGES_DENSE))
        return "range table";
    if (r->flags & SPLADE_RANGES_DENSE)
        return dense_valid(ix, r, n_ranges, end) ? NULL : "dense range table";
    if (r->n_ranges > end - r->offset ||
        !svb_check(ix->sec[SEC_RANGES] + r->offset + r->n_ranges, end - r->offset - r->n_ranges, r->n_ranges, 0, 1,
                   n_ranges, &last, ids))
        return "range table";
    return NULL;
}

/* Terms [t0, t1)'s range tables; ids holds n_ranges ids. Returns NULL if all are valid, else what
 * is wrong with the first invalid one. */
static const char *ranges_invalid(const splade_index *ix, uint32_t t0, uint32_t t1, uint32_t *ids)
{
    const uint8_t *done = NULL;
    for (uint32_t t = t0; t < t1; t++) {
        const char *why = range_term_invalid(ix, t, ids);
        if (why)
            return why;
        lean_release(ix, &done, ix->sec[SEC_RANGES] + ix->range_terms[t].offset);
    }
    return NULL;
}

/* Term t's range maxima against its postings, range by range as the blocks are walked: BMP takes
 * them as upper bounds, so one below the postings' largest impact would skip documents it must
 * score (and one above is not what the writer stores). */
typedef struct {
    const uint8_t *maxima;
    const uint32_t *ids; /* sparse: the term's range ids; NULL: dense */
    uint32_t n, k;       /* ranges in the table, ranges seen */
    uint32_t cur;
    uint8_t max;
    int open, ok;
} range_walk;

static void range_walk_close(range_walk *w)
{
    if (!w->open)
        return;
    uint8_t stored = !w->ids ? w->maxima[w->cur] : w->k < w->n && w->ids[w->k] == w->cur ? w->maxima[w->k] : 0;
    w->ok &= stored == w->max;
    w->k++;
    w->open = 0;
}

static void range_walk_post(range_walk *w, uint32_t doc, uint8_t impact)
{
    uint32_t r = doc >> SPLADE_RANGE_SHIFT;
    if (w->open && r == w->cur) {
        w->max = impact > w->max ? impact : w->max;
        return;
    }
    range_walk_close(w);
    w->open = 1;
    w->cur = r;
    w->max = impact;
}

/* Every block as its term reads it: encoded bytes inside the section, doc ids strictly ascending
 * within the term and below n_docs, the last one equal to the block's last_doc, impacts >= 1, and
 * the block's, the term's and (when its range table is sound; else ranges_invalid reports it)
 * every range's maximum equal to the largest impact under it. The query code relies on all of this
 * (accumulator indexes, skip loops ending inside a block, pruning bounds). Terms [t0, t1); ids holds
 * a range list (NULL: ranges not checked). Returns NULL if all are valid, else what is wrong. */
static const char *blocks_invalid(const splade_index *ix, uint32_t t0, uint32_t t1, uint32_t *ids)
{
    const splade_index_info *in = &ix->info;
    uint64_t data_end = ix->sec_len[SEC_POSTINGS] - 16;
    uint32_t scratch[SPLADE_BLOCK_SIZE];
    const uint8_t *done = NULL, *rdone = NULL;
    for (uint32_t t = t0; t < t1; t++) {
        uint32_t n = ix->terms[t].n_postings, prev = 0;
        uint8_t term_max = 0;
        const splade_block_entry *blk = ix->blocks + ix->terms[t].first_block;
        if (n)
            lean_release(ix, &done, ix->sec[SEC_POSTINGS] + blk[0].offset);
        const splade_range_term *rt = ids && !range_term_invalid(ix, t, ids) ? &ix->range_terms[t] : NULL;
        if (rt)
            lean_release(ix, &rdone, ix->sec[SEC_RANGES] + rt->offset);
        range_walk w = {0};
        if (rt)
            w = (range_walk){ix->sec[SEC_RANGES] + rt->offset, rt->flags & SPLADE_RANGES_DENSE ? NULL : ids,
                             rt->n_ranges, 0, 0, 0, 0, 1};
        for (uint32_t j = 0; (uint64_t)j * SPLADE_BLOCK_SIZE < n; j++) {
            uint32_t count = n - j * SPLADE_BLOCK_SIZE < SPLADE_BLOCK_SIZE ? n - j * SPLADE_BLOCK_SIZE : SPLADE_BLOCK_SIZE;
            uint64_t off = blk[j].offset; /* <= data_end: checked above */
            if (count > data_end - off ||
                !svb_check(ix->sec[SEC_POSTINGS] + off + count, data_end - off - count, count, prev, j == 0,
                           in->n_docs, &prev, scratch) ||
                prev != blk[j].last_doc)
                return "posting block";
            const uint8_t *impacts = ix->sec[SEC_POSTINGS] + off;
            uint8_t block_max = 0, least = 255;
            for (uint32_t i = 0; i < count; i++) {
                block_max = impacts[i] > block_max ? impacts[i] : block_max;
                least = impacts[i] < least ? impacts[i] : least;
                if (rt)
                    range_walk_post(&w, scratch[i], impacts[i]);
            }
            if (least == 0 || block_max != blk[j].max_impact)
                return "posting block impacts";
            term_max = block_max > term_max ? block_max : term_max;
        }
        if (term_max != ix->terms[t].max_impact)
            return "term max_impact";
        range_walk_close(&w);
        if (rt && (!w.ok || w.k != w.n))
            return "range maxima";
    }
    return NULL;
}

/* The per-term checks (posting blocks with their maxima, then range tables) of terms [t0, t1), on
 * one thread: the first invalid term of each kind. */
typedef struct {
    const splade_index *ix;
    uint32_t t0, t1;
    int check_ranges;
    const char *blocks_bad;
    const char *ranges_bad;
    int nomem;
} term_job;

static void *check_terms(void *arg)
{
    term_job *j = arg;
    const splade_index *ix = j->ix;
    uint64_t n_ranges = ((uint64_t)ix->info.n_docs + (1u << SPLADE_RANGE_SHIFT) - 1) >> SPLADE_RANGE_SHIFT;
    uint32_t *ids = j->check_ranges ? malloc((n_ranges + 1) * sizeof *ids) : NULL; /* a list holds <= n_ranges ids */
    j->nomem = j->check_ranges && !ids;
    j->blocks_bad = blocks_invalid(ix, j->t0, j->t1, ids);
    if (ids)
        j->ranges_bad = ranges_invalid(ix, j->t0, j->t1, ids);
    free(ids);
    return NULL;
}

/* The block checks of every term, then the range tables (the same checks and the same first error
 * as one loop over the terms for each): on ix->threads threads, each over a run of terms holding
 * about the same number of postings. */
static int check_terms_all(splade_index *ix)
{
    enum { MAX_THREADS = 64 };
    uint32_t T = ix->info.n_terms;
    int ranges_sized = ix->sec_len[SEC_RANGE_TERMS] == (uint64_t)T * sizeof(splade_range_term) &&
                       ix->sec_len[SEC_RANGES] >= 16;
    ix->range_terms = (const splade_range_term *)ix->sec[SEC_RANGE_TERMS];
    int P = ix->threads < 1 ? 1 : ix->threads > MAX_THREADS ? MAX_THREADS : ix->threads;
    if (ix->info.n_postings < (1u << 16))
        P = 1;
    term_job jobs[MAX_THREADS];
    uint64_t seen = 0, total = ix->info.n_postings + T; /* a term costs at least its range table */
    uint32_t t = 0;
    for (int j = 0; j < P; j++) {
        uint32_t t0 = t;
        uint64_t until = j == P - 1 ? UINT64_MAX : total * (uint64_t)(j + 1) / (uint64_t)P;
        while (t < T && seen < until)
            seen += ix->terms[t++].n_postings + 1;
        if (j == P - 1)
            t = T;
        jobs[j] = (term_job){ix, t0, t, ranges_sized, NULL, NULL, 0};
    }
    splade_run_jobs(P, check_terms, jobs, sizeof *jobs);
    for (int j = 0; j < P; j++)
        if (jobs[j].nomem)
            return splade_fail(SPLADE_ERR_NOMEM, "%s: range check", ix->path);
    for (int j = 0; j < P; j++)
        if (jobs[j].blocks_bad)
            return bad(ix, jobs[j].blocks_bad);
    if (!ranges_sized)
        return bad(ix, "RANGE sections sizes");
    for (int j = 0; j < P; j++)
        if (jobs[j].ranges_bad)
            return bad(ix, jobs[j].ranges_bad);
    return SPLADE_OK;
}

/* DOCSEQ (optional): one u32 per document. Any values are safe to read (they only order ties);
 * absent, a document's offset is its internal id. */
static int check_docseq(splade_index *ix)
{
    ix->docseq = NULL;
    if (!ix->sec[SEC_DOCSEQ])
        return SPLADE_OK;
    if (ix->sec_len[SEC_DOCSEQ] != (uint64_t)ix->info.n_docs * 4)
        return bad(ix, "DOCSEQ size");
    ix->docseq = (const uint32_t *)ix->sec[SEC_DOCSEQ];
    return SPLADE_OK;
}

int splade_index_parse_tables(splade_index *ix)
{
    int rc = parse_meta(ix);
    if (rc == 0)
        rc = check_vocab(ix);
    if (rc == 0)
        rc = check_postings(ix);
    if (rc == 0)
        rc = check_terms_all(ix);
    if (rc == 0)
        rc = check_offsets64(ix, SEC_DOCIDS, ix->info.n_docs, &ix->id_off, &ix->ids);
    if (rc == 0)
        rc = check_offsets64(ix, SEC_DOCSTORE, ix->info.n_docs, &ix->store_off, &ix->store);
    if (rc == 0)
        rc = check_docseq(ix);
    return rc;
}

const splade_index_info *splade_index_get_info(const splade_index *ix)
{
    return &ix->info;
}

const char *splade_index_doc_id(const splade_index *ix, uint32_t doc, size_t *len)
{
    if (doc >= ix->info.n_docs) {
        *len = 0;
        return "";
    }
    if (ix->is_snapshot) { /* live documents numbered segment after segment (snapshot.c) */
        uint32_t local;
        const splade_segment *g = splade_snapshot_locate(ix, doc, &local);
        return splade_index_doc_id(g->ix, local, len);
    }
    *len = ix->id_off[doc + 1] - ix->id_off[doc];
    return ix->ids + ix->id_off[doc];
}

void splade_index_doc_text(const splade_index *ix, uint32_t doc, const char **title, const char **snippet)
{
    *title = *snippet = "";
    if (doc >= ix->info.n_docs)
        return;
    if (ix->is_snapshot) {
        uint32_t local;
        const splade_segment *g = splade_snapshot_locate(ix, doc, &local);
        splade_index_doc_text(g->ix, local, title, snippet);
        return;
    }
    const char *s = ix->store + ix->store_off[doc];
    size_t len = ix->store_off[doc + 1] - ix->store_off[doc];
    const char *nul = memchr(s, '\0', len);
    if (!nul || !memchr(nul + 1, '\0', len - (size_t)(nul + 1 - s)))
        return; /* malformed entry: show nothing rather than read past it */
    *title = s;
    *snippet = nul + 1;
}

const char *splade_index_term(const splade_index *ix, int32_t term, size_t *len)
{
    if (term < 0 || (uint32_t)term >= ix->info.n_terms)
        return NULL;
    *len = ix->vocab_off[term + 1] - ix->vocab_off[term];
    return ix->vocab + ix->vocab_off[term];
}

void splade_index_postings(const splade_index *ix, int32_t term, splade_term_postings *out)
{
    memset(out, 0, sizeof *out);
    out->postings = ix->sec[SEC_POSTINGS];
    if (term < 0 || (uint32_t)term >= ix->info.n_terms)
        return;
    const splade_term_entry *te = &ix->terms[term];
    out->n_postings = te->n_postings;
    out->n_blocks = (te->n_postings + SPLADE_BLOCK_SIZE - 1) / SPLADE_BLOCK_SIZE;
    out->max_impact = te->max_impact;
    out->blocks = ix->blocks + te->first_block;
}

void splade_index_ranges(const splade_index *ix, int32_t term, splade_term_ranges *out)
{
    memset(out, 0, sizeof *out);
    if (term < 0 || (uint32_t)term >= ix->info.n_terms)
        return;
    out->n = ix->range_terms[term].n_ranges;
    out->dense = (ix->range_terms[term].flags & SPLADE_RANGES_DENSE) != 0;
    out->data = ix->sec[SEC_RANGES] + ix->range_terms[term].offset;
}
