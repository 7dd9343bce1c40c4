/* The streaming k-way merge (docs/FORMAT.md, "Merging"): the picked segments of an open snapshot
 * written as one segment file, term by term, without decoding documents or holding a segment.
 * The merged internal ids are the inputs' live documents concatenated in manifest order (each
 * input keeps its own order, deleted ids dropped), so a term's merged list is the inputs' lists one
 * after another, ids shifted: each is decoded block by block, its ids remapped, and cut into new
 * blocks; impacts are copied (every segment quantizes with the index's doc_scale). Memory: the
 * terms' and blocks' tables and one term's postings (the inputs' mapped pages are released from the
 * process as they are streamed, the output's as it is verified); the file is written sequentially through a
 * buffer (RANGES through a second, unlinked temporary file, appended after POSTINGS), every
 * section's CRC32C taken on the way, the header last. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/fail.h"
#include "index/builder_internal.h"
#include "index/format.h"
#include "index/invert_internal.h"
#include "index/postings.h"
#include "index/reader_internal.h"
#include "index/segments_internal.h"
#include "splade.h"

#define OUT_BUFFER (8u << 20)
#define RELEASE_EVERY (32ull << 20) /* input bytes streamed between two releases of the mapped pages */

/* ---- a section-by-section sequential writer ---- */

typedef struct {
    int fd;
    const char *path;
    uint8_t *buf;
    size_t len;
    uint64_t at;    /* file offset of buf[0] */
    uint64_t start; /* the open section's first byte */
    uint32_t crc;
    int n_secs;
    spx_section tab[SEC_COUNT_];
} ostream;

static int os_flush(ostream *o)
{
    const uint8_t *p = o->buf;
    size_t n = o->len;
    uint64_t at = o->at;
    while (n) {
        ssize_t w = pwrite(o->fd, p, n, (off_t)at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return splade_fail(SPLADE_ERR_IO, "%s: write failed: %s", o->path, w < 0 ? strerror(errno) : "no space");
        p += w;
        at += (uint64_t)w;
        n -= (size_t)w;
    }
    o->at = at;
    o->len = 0;
    return SPLADE_OK;
}

static uint64_t os_pos(const ostream *o)
{
    return o->at + o->len;
}

static int os_raw(ostream *o, const void *p, size_t n)
{
    const uint8_t *c = p;
    while (n) {
        size_t k = OUT_BUFFER - o->len < n ? OUT_BUFFER - o->len : n;
        memcpy(o->buf + o->len, c, k);
        o->len += k;
        c += k;
        n -= k;
        if (o->len == OUT_BUFFER) {
            int rc = os_flush(o);
            if (rc < 0)
                return rc;
        }
    }
    return SPLADE_OK;
}

/* Bytes of the open section (checksummed). */
static int os_put(ostream *o, const void *p, size_t n)
{
    o->crc = splade_crc32c(o->crc, p, n);
    return os_raw(o, p, n);
}

/* Opens a section at the next multiple of 64 (zero padding, outside every CRC). */
static int os_begin(ostream *o)
{
    static const uint8_t zero[SPX_ALIGN];
    int rc = os_raw(o, zero, (size_t)(-os_pos(o) & (SPX_ALIGN - 1)));
    o->start = os_pos(o);
    o->crc = 0;
    return rc;
}

static void os_end(ostream *o, uint32_t id)
{
    o->tab[o->n_secs++] = (spx_section){.id = id, .offset = o->start, .length = os_pos(o) - o->start, .crc = o->crc};
}

/* ---- the merge's state ---- */

typedef struct {
    const splade_index *ix;
    const int *pick;
    uint32_t *obase;  /* per segment: merged id of its first live document */
    uint32_t n_docs;
    uint64_t seq_base;
    int dynamic;      /* --vectors vocabulary: terms without postings are left out */
    const volatile int *cancel;
    /* one term's merged postings */
    uint32_t *docs;
    uint8_t *imps;
    uint64_t cap;
    uint64_t streamed; /* input bytes read since the mapped pages were last released */
    /* tables */
    splade_term_entry *terms;
    splade_range_term *rterms;
    int32_t *kept;     /* merged term -> snapshot term */
    uint32_t n_kept;
    splade_block_entry *blocks;
    uint64_t n_blocks, blocks_cap, n_postings;
    uint8_t *enc, *renc;
    uint32_t *rids;
    uint8_t *rmax;
    uint64_t enc_cap; /* postings the scratch buffers hold */
} merger;

static int grow(merger *m, uint64_t n)
{
    if (n <= m->cap)
        return SPLADE_OK;
    uint64_t c = m->cap ? m->cap : 4096;
    while (c < n)
        c *= 2;
    uint32_t *d = realloc(m->docs, c * sizeof *d);
    m->docs = d ? d : m->docs;
    uint8_t *i = d ? realloc(m->imps, c) : NULL;
    m->imps = i ? i : m->imps;
    if (!d || !i)
        return splade_fail(SPLADE_ERR_NOMEM, "merge: a term of %llu postings", (unsigned long long)n);
    m->cap = c;
    return SPLADE_OK;
}

/* Drops the mapped input pages from the process (they stay in the page cache): what the merge
 * holds is then its own memory, not the segments it has read. */
static void release_inputs(merger *m)
{
    for (int s = 0; s < m->ix->n_segs; s++)
        if (m->pick[s])
            madvise(m->ix->segs[s].ix->map, m->ix->segs[s].ix->size, MADV_DONTNEED);
    m->streamed = 0;
}

/* Segment g's postings of its term st appended to the merged list, ids shifted by base and, with
 * deletions, compacted (rank of the id among the live ones). */
static int append_list(merger *m, const splade_segment *g, int32_t st, uint32_t base, uint64_t *n)
{
    splade_term_postings tp;
    splade_index_postings(g->ix, st, &tp);
    int rc = grow(m, *n + tp.n_postings + SPLADE_BLOCK_SIZE);
    uint32_t tmp[SPLADE_BLOCK_SIZE];
    for (uint32_t b = 0; rc == 0 && b < tp.n_blocks; b++) {
        const uint8_t *in;
        uint32_t *out = g->deleted ? tmp : m->docs + *n; /* deleted documents are dropped below */
        const uint32_t count = splade_list_block(tp.blocks, tp.n_blocks, tp.n_postings, tp.postings, b, out, &in);
        if (!g->deleted) {
            for (uint32_t i = 0; i < count; i++)
                out[i] += base;
            memcpy(m->imps + *n, in, count);
            *n += count;
            continue;
        }
        for (uint32_t i = 0; i < count; i++) {
            uint32_t d = tmp[i];
            if (splade_segment_deleted(g, d))
                continue;
            uint64_t below = ~g->deleted[d >> 6] & ((1ull << (d & 63)) - 1);
            m->docs[*n] = base + g->rank[d >> 6] + (uint32_t)__builtin_popcountll(below);
            m->imps[(*n)++] = in[i];
        }
    }
    m->streamed += tp.n_blocks ? tp.blocks[tp.n_blocks - 1].offset - tp.blocks[0].offset + 5 * SPLADE_BLOCK_SIZE : 0;
    return rc;
}

static int scratch(merger *m, uint64_t n, uint32_t total)
{
    if (n <= m->enc_cap && m->enc)
        return SPLADE_OK;
    uint64_t c = n > 4096 ? n : 4096;
    free(m->enc);
    free(m->renc);
    free(m->rids);
    free(m->rmax);
    uint64_t nb = (c + SPLADE_BLOCK_SIZE - 1) / SPLADE_BLOCK_SIZE;
    m->enc = malloc(nb * splade_block_max_bytes(SPLADE_BLOCK_SIZE) + 64);
    m->renc = malloc((total > 6 * c ? total : 6 * c) + 64);
    m->rids = malloc(c * sizeof *m->rids);
    m->rmax = malloc(c);
    m->enc_cap = c;
    if (m->enc && m->renc && m->rids && m->rmax)
        return SPLADE_OK;
    m->enc_cap = 0;
    return splade_fail(SPLADE_ERR_NOMEM, "merge: encoding buffers of %llu postings", (unsigned long long)n);
}

/* One snapshot term: its merged list encoded into POSTINGS (o) and RANGES (r). */
static int merge_term(merger *m, int32_t t, uint32_t total, ostream *o, ostream *r, uint64_t post0, uint64_t rng0)
{
    const splade_index *ix = m->ix;
    uint64_t n = 0;
    int rc = SPLADE_OK;
    for (int s = 0; rc == 0 && s < ix->n_segs; s++) {
        int32_t st = m->pick[s] ? splade_segment_term(&ix->segs[s], t) : -1;
        if (st >= 0)
            rc = append_list(m, &ix->segs[s], st, m->obase[s], &n);
    }
    if (rc < 0 || (m->dynamic && n == 0))
        return rc;
    uint64_t nb = (n + SPLADE_BLOCK_SIZE - 1) / SPLADE_BLOCK_SIZE;
    if (m->n_blocks + nb > m->blocks_cap) {
        uint64_t c = m->blocks_cap ? m->blocks_cap : 1024;
        while (c < m->n_blocks + nb)
            c *= 2;
        splade_block_entry *b = realloc(m->blocks, c * sizeof *b);
        if (!b)
            return splade_fail(SPLADE_ERR_NOMEM, "merge: block table of %llu entries", (unsigned long long)c);
        m->blocks = b;
        m->blocks_cap = c;
    }
    if ((rc = scratch(m, n, total)) < 0)
        return rc;
    uint32_t k = m->n_kept++;
    m->kept[k] = t;
    splade_term_entry *te = &m->terms[k];
    memset(te, 0, sizeof *te);
    te->first_block = m->n_blocks;
    size_t pos = 0, rpos = 0;
    splade_encode_list(m->docs, m->imps, n, m->blocks + m->n_blocks, te, m->enc, &pos);
    uint64_t at = os_pos(o) - post0;
    for (uint64_t b = 0; b < nb; b++)
        m->blocks[m->n_blocks + b].offset += at;
    m->n_blocks += nb;
    m->n_postings += n;
    splade_encode_list_ranges(m->docs, m->imps, n, total, m->rids, m->rmax, &m->rterms[k], m->renc, &rpos);
    m->rterms[k].offset = os_pos(r) - rng0;
    rc = os_put(o, m->enc, pos);
    if (rc == 0)
        rc = os_put(r, m->renc, rpos);
    if (m->streamed > RELEASE_EVERY)
        release_inputs(m);
    return rc;
}

/* ---- the document tables ---- */

/* Live internal ids of segment g, in order: calls fn for runs [a, b). */
typedef int (*run_fn)(ostream *o, const splade_segment *g, uint32_t a, uint32_t b, void *arg);

static int each_live_run(const merger *m, ostream *o, run_fn fn, void *arg)
{
    for (int s = 0; s < m->ix->n_segs; s++) {
        const splade_segment *g = &m->ix->segs[s];
        if (!m->pick[s])
            continue;
        int rc = SPLADE_OK;
        if (!g->deleted)
            rc = fn(o, g, 0, g->n_docs, arg);
        for (uint32_t i = 0; g->deleted && rc == 0 && i < g->n_live;) {
            uint32_t j = i + 1;
            while (j < g->n_live && g->live[j] == g->live[j - 1] + 1)
                j++;
            rc = fn(o, g, g->live[i], g->live[j - 1] + 1, arg);
            i = j;
        }
        if (rc < 0)
            return rc;
    }
    return SPLADE_OK;
}

typedef struct {
    int store;        /* DOCSTORE, else DOCIDS */
    uint64_t acc;     /* offsets pass: bytes so far */
    uint64_t seq0;    /* DOCSEQ: the merged segment's seq_base */
} table_arg;

static const uint64_t *table_off(const splade_segment *g, int store)
{
    return store ? g->ix->store_off : g->ix->id_off;
}

static int offsets_run(ostream *o, const splade_segment *g, uint32_t a, uint32_t b, void *arg)
{
    table_arg *t = arg;
    const uint64_t *off = table_off(g, t->store);
    uint64_t buf[512];
    int rc = SPLADE_OK;
    for (uint32_t d = a; rc == 0 && d < b;) {
        uint32_t k = 0;
        for (; k < 512 && d < b; k++, d++)
            buf[k] = t->acc += off[d + 1] - off[d];
        rc = os_put(o, buf, k * sizeof *buf);
    }
    return rc;
}

static int blob_run(ostream *o, const splade_segment *g, uint32_t a, uint32_t b, void *arg)
{
    table_arg *t = arg;
    const uint64_t *off = table_off(g, t->store);
    const char *blob = t->store ? g->ix->store : g->ix->ids;
    return os_put(o, blob + off[a], off[b] - off[a]);
}

static int seq_run(ostream *o, const splade_segment *g, uint32_t a, uint32_t b, void *arg)
{
    const table_arg *t = arg;
    uint32_t buf[1024];
    int rc = SPLADE_OK;
    for (uint32_t d = a; rc == 0 && d < b;) {
        uint32_t k = 0;
        for (; k < 1024 && d < b; k++, d++)
            buf[k] = (uint32_t)(splade_segment_seq(g, d) - t->seq0);
        rc = os_put(o, buf, k * sizeof *buf);
    }
    return rc;
}

static int table_section(const merger *m, ostream *o, uint32_t id, int store)
{
    table_arg t = {.store = store};
    uint64_t zero = 0;
    int rc = os_begin(o);
    if (rc == 0)
        rc = os_put(o, &zero, 8);
    if (rc == 0)
        rc = each_live_run(m, o, offsets_run, &t);
    if (rc == 0)
        rc = each_live_run(m, o, blob_run, &t);
    os_end(o, id);
    return rc;
}

static int docseq_section(const merger *m, ostream *o)
{
    table_arg t = {.seq0 = m->seq_base};
    int rc = os_begin(o);
    if (rc == 0)
        rc = each_live_run(m, o, seq_run, &t);
    os_end(o, SEC_DOCSEQ);
    return rc;
}

/* ---- metadata and vocabulary ---- */

static int meta_section(const merger *m, ostream *o, float doc_scale)
{
    const splade_index_info *a = NULL;
    uint32_t truncated = 0, reordered = 0;
    for (int s = 0; s < m->ix->n_segs; s++)
        if (m->pick[s]) {
            const splade_index_info *b = &m->ix->segs[s].ix->info;
            a = a ? a : b;
            truncated += b->n_truncated;
            reordered |= b->flags & SPLADE_IX_REORDERED;
        }
    spx_meta h = {.n_docs = m->n_docs, .n_terms = m->n_kept, .n_postings = m->n_postings, .n_blocks = m->n_blocks,
                  .block_size = SPLADE_BLOCK_SIZE, .impact_bits = 8, .doc_scale = m->n_postings ? doc_scale : 0,
                  .query_bits = 8, .fingerprint = a->fingerprint,
                  .flags = (a->flags & ~(uint32_t)SPLADE_IX_REORDERED) | reordered, /* the model's flags carry over */
                  .max_length = a->max_length, .n_truncated = truncated, .range_shift = SPLADE_RANGE_SHIFT,
                  .build_time = (uint64_t)time(NULL)};
    uint32_t nl = (uint32_t)strlen(a->model_name), dl = (uint32_t)strlen(a->model_dir);
    int rc = os_begin(o);
    if (rc == 0)
        rc = os_put(o, &h, sizeof h);
    if (rc == 0)
        rc = os_put(o, &nl, 4);
    if (rc == 0)
        rc = os_put(o, a->model_name, nl);
    if (rc == 0)
        rc = os_put(o, &dl, 4);
    if (rc == 0)
        rc = os_put(o, a->model_dir, dl);
    os_end(o, SEC_META);
    return rc;
}

/* VOCAB: the kept terms' strings (the snapshot's vocabulary: the model's, or the sorted union). */
static int vocab_section(const merger *m, ostream *o)
{
    const splade_index *ix = m->ix;
    int rc = os_begin(o);
    uint32_t pos = 0, buf[1024];
    for (uint32_t i = 0; rc == 0 && i <= m->n_kept;) {
        uint32_t k = 0;
        for (; k < 1024 && i <= m->n_kept; k++, i++) {
            buf[k] = pos;
            if (i < m->n_kept)
                pos += ix->vocab_off[m->kept[i] + 1] - ix->vocab_off[m->kept[i]];
        }
        rc = os_put(o, buf, k * sizeof *buf);
    }
    for (uint32_t i = 0; rc == 0 && i < m->n_kept; i++) {
        int32_t t = m->kept[i];
        rc = os_put(o, ix->vocab + ix->vocab_off[t], ix->vocab_off[t + 1] - ix->vocab_off[t]);
    }
    os_end(o, SEC_VOCAB);
    return rc;
}

/* ---- the file ---- */

/* Appends the RANGES written into r's file (unlinked) to o as one section. */
static int append_ranges(ostream *o, ostream *r, uint8_t *buf)
{
    int rc = os_flush(r);
    if (rc == 0)
        rc = os_begin(o);
    for (uint64_t at = 0; rc == 0 && at < r->at;) {
        size_t want = r->at - at < OUT_BUFFER ? (size_t)(r->at - at) : OUT_BUFFER;
        ssize_t got = pread(r->fd, buf, want, (off_t)at);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return splade_fail(SPLADE_ERR_IO, "%s: read failed: %s", r->path, got < 0 ? strerror(errno) : "short");
        rc = os_put(o, buf, (size_t)got);
        at += (uint64_t)got;
    }
    os_end(o, SEC_RANGES);
    return rc;
}

static int postings_and_ranges(merger *m, ostream *o, ostream *r, uint8_t *buf)
{
    static const uint8_t pad[16];
    uint32_t total = (uint32_t)(((uint64_t)m->n_docs + (1u << SPLADE_RANGE_SHIFT) - 1) >> SPLADE_RANGE_SHIFT);
    int rc = os_begin(o);
    uint64_t post0 = os_pos(o);
    for (uint32_t t = 0; rc == 0 && t < m->ix->info.n_terms; t++) {
        if (m->cancel && *m->cancel)
            return splade_fail(SPLADE_ERR_CANCELLED, "merge cancelled by the caller; the previous generation is untouched");
        rc = merge_term(m, (int32_t)t, total, o, r, post0, 0);
    }
    if (rc == 0)
        rc = os_put(o, pad, sizeof pad);
    if (rc == 0)
        rc = os_put(r, pad, sizeof pad);
    os_end(o, SEC_POSTINGS);
    if (rc == 0)
        rc = append_ranges(o, r, buf);
    release_inputs(m);
    return rc;
}

static int tables(merger *m, ostream *o)
{
    int rc = os_begin(o);
    if (rc == 0)
        rc = os_put(o, m->terms, (size_t)m->n_kept * sizeof *m->terms);
    os_end(o, SEC_TERMS);
    if (rc == 0 && (rc = os_begin(o)) == 0)
        rc = os_put(o, m->blocks, m->n_blocks * sizeof *m->blocks);
    os_end(o, SEC_BLOCKS);
    if (rc == 0 && (rc = os_begin(o)) == 0)
        rc = os_put(o, m->rterms, (size_t)m->n_kept * sizeof *m->rterms);
    os_end(o, SEC_RANGE_TERMS);
    return rc;
}

static int write_header(ostream *o)
{
    uint8_t buf[sizeof(spx_header) + 32 * SEC_COUNT_ + 8] = {0};
    uint32_t n = (uint32_t)o->n_secs;
    spx_header h = {.version = SPLADE_INDEX_VERSION, .header_size = spx_header_bytes(n), .file_size = os_pos(o),
                    .n_sections = n};
    memcpy(h.magic, SPX_MAGIC, 8);
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, o->tab, n * sizeof *o->tab);
    uint32_t crc = splade_crc32c(0, buf, sizeof h + n * sizeof *o->tab);
    memcpy(buf + sizeof h + n * sizeof *o->tab, &crc, 4);
    o->at = 0;
    o->len = 0;
    memcpy(o->buf, buf, h.header_size);
    o->len = h.header_size;
    return os_flush(o);
}

/* Every section into fd (tmp), the ranges through rfd (rtmp, unlinked). */
static int write_merged_file(merger *m, int fd, const char *tmp, int rfd, const char *rtmp, float doc_scale,
                             uint64_t *bytes)
{
    ostream o = {.fd = fd, .path = tmp, .buf = malloc(OUT_BUFFER)};
    ostream r = {.fd = rfd, .path = rtmp, .buf = malloc(OUT_BUFFER)};
    uint8_t *buf = malloc(OUT_BUFFER);
    int rc = o.buf && r.buf && buf ? SPLADE_OK : splade_fail(SPLADE_ERR_NOMEM, "merge: write buffers");
    if (rc == 0) { /* the header's room: every section is written */
        o.len = spx_header_bytes(SEC_COUNT_ - 1);
        memset(o.buf, 0, o.len);
        rc = postings_and_ranges(m, &o, &r, buf);
    }
    if (rc == 0)
        rc = tables(m, &o);
    if (rc == 0)
        rc = table_section(m, &o, SEC_DOCIDS, 0);
    if (rc == 0)
        rc = table_section(m, &o, SEC_DOCSTORE, 1);
    if (rc == 0)
        rc = docseq_section(m, &o);
    if (rc == 0)
        rc = meta_section(m, &o, doc_scale);
    if (rc == 0)
        rc = vocab_section(m, &o);
    *bytes = os_pos(&o);
    if (rc == 0)
        rc = os_flush(&o);
    if (rc == 0)
        rc = write_header(&o);
    free(o.buf);
    free(r.buf);
    free(buf);
    return rc;
}

/* Merged ids and the sequence base: live documents of the picked segments, in manifest order. */
static int plan(merger *m, uint64_t next_seq)
{
    const splade_index *ix = m->ix;
    uint64_t n = 0, lo = UINT64_MAX, hi = 0;
    for (int s = 0; s < ix->n_segs; s++) {
        const splade_segment *g = &ix->segs[s];
        m->obase[s] = (uint32_t)n;
        if (!m->pick[s])
            continue;
        n += g->n_live;
        for (uint32_t i = 0; i < g->n_live; i++) {
            uint64_t q = splade_segment_seq(g, g->live ? g->live[i] : i);
            lo = q < lo ? q : lo;
            hi = q > hi ? q : hi;
        }
    }
    if (n > UINT32_MAX - 2)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "a merged segment of more than 2^32 - 2 documents");
    if (n && hi - lo > UINT32_MAX)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "a merged segment spanning more than 2^32 sequence numbers");
    m->n_docs = (uint32_t)n;
    m->seq_base = n ? lo : next_seq;
    return SPLADE_OK;
}

static void merger_free(merger *m)
{
    free(m->obase);
    free(m->docs);
    free(m->imps);
    free(m->terms);
    free(m->rterms);
    free(m->kept);
    free(m->blocks);
    free(m->enc);
    free(m->renc);
    free(m->rids);
    free(m->rmax);
}

int splade_merge_stream(const splade_index *ix, const char *dir, const char *name, const int *pick, int threads,
                        const volatile int *cancel, float doc_scale, uint64_t next_seq, splade_merge_result *res)
{
    uint32_t T = ix->info.n_terms;
    merger m = {.ix = ix, .pick = pick, .cancel = cancel, .dynamic = (ix->info.flags & SPLADE_IX_SORTED_VOCAB) != 0,
                .obase = calloc((size_t)ix->n_segs + 1, sizeof *m.obase),
                .terms = calloc((size_t)T + 1, sizeof *m.terms), .rterms = calloc((size_t)T + 1, sizeof *m.rterms),
                .kept = malloc(((size_t)T + 1) * sizeof *m.kept)};
    int rc = m.obase && m.terms && m.rterms && m.kept ? plan(&m, next_seq)
                                                       : splade_fail(SPLADE_ERR_NOMEM, "merge: %u terms", T);
    char tmp[4096], rtmp[4096];
    int fd = -1, rfd = -1;
    if (rc == 0)
        rc = splade_create_temp(dir, SPLADE_TMP_PREFIX, tmp, sizeof tmp, &fd);
    if (rc == 0 && (rc = splade_create_temp(dir, SPLADE_TMP_PREFIX, rtmp, sizeof rtmp, &rfd)) == 0)
        unlink(rtmp); /* scratch only: gone with its descriptor, even after a SIGKILL */
    if (rc == 0)
        rc = write_merged_file(&m, fd, tmp, rfd, rtmp, doc_scale, &res->bytes);
    if (rfd >= 0)
        close(rfd);
    res->n_docs = m.n_docs;
    res->seq_base = m.seq_base;
    res->n_postings = m.n_postings;
    merger_free(&m);
    if (fd < 0)
        return rc;
    if (rc < 0) {
        unlink(tmp);
        close(fd);
        return rc;
    }
    return splade_install_temp(fd, tmp, dir, name, splade_build_threads(threads, res->n_postings), 1, cancel,
                               &res->verify_s);
}
