/* Serializes a builder and its postings into one index file (docs/FORMAT.md). The layout (every
 * section's offset and length) is known before a byte is written, so the sections are copied into
 * the file in chunks on several threads, each chunk's CRC32C taken while it is in cache and the
 * chunks' CRCs combined per section (splade_crc32c_combine): one pass over the data, on all threads. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/fail.h"
#include "index/builder_internal.h"
#include "index/format.h"
#include "index/parallel.h"
#include "splade.h"

/* A section is pieces written back to back (e.g. an offsets array and a blob, or the parts that the
 * inversion's threads encoded). */
#define MAX_PIECES SPLADE_MAX_THREADS

typedef struct {
    uint32_t id;
    const void *part[MAX_PIECES];
    size_t len[MAX_PIECES];
    uint8_t *owned; /* freed after writing */
} section;

static size_t section_len(const section *s)
{
    size_t n = 0;
    for (int k = 0; k < MAX_PIECES; k++)
        n += s->len[k];
    return n;
}

/* Unix seconds, or the builder's fixed time when set (reproducible builds: the same input then gives
 * the same file, byte for byte; splade_builder_set_build_time). */
static uint64_t build_time(const splade_index_builder *b)
{
    return b->fixed_time ? b->build_time : (uint64_t)time(NULL);
}

static int meta_section(const splade_index_builder *b, const splade_inverted *inv, section *s)
{
    const char *name = b->model_name ? b->model_name : "", *dir = b->model_dir ? b->model_dir : "";
    uint32_t nl = (uint32_t)strlen(name), dl = (uint32_t)strlen(dir);
    size_t len = sizeof(spx_meta) + 8 + nl + dl;
    uint8_t *p = calloc(1, len);
    if (!p)
        return splade_fail(SPLADE_ERR_NOMEM, "index metadata");
    spx_meta m = {
        .n_docs = b->ids.n, .n_terms = (uint32_t)b->n_terms, .n_postings = inv->n_postings,
        .n_blocks = inv->n_blocks, .block_size = SPLADE_BLOCK_SIZE, .impact_bits = 8,
        .doc_scale = inv->doc_scale, .query_bits = 8, .fingerprint = b->fingerprint,
        .flags = (b->lowercase ? SPLADE_IX_LOWERCASE : 0) | (b->has_model ? SPLADE_IX_HAS_MODEL : 0) |
                 (b->dynamic_vocab ? SPLADE_IX_SORTED_VOCAB : 0) | (inv->doc_order ? SPLADE_IX_REORDERED : 0) |
                 (b->query_table ? SPLADE_IX_QUERY_TABLE : 0),
        .max_length = b->max_length, .n_truncated = b->n_truncated, .range_shift = SPLADE_RANGE_SHIFT, .build_time = build_time(b),
    };
    memcpy(p, &m, sizeof m);
    uint8_t *q = p + sizeof m;
    memcpy(q, &nl, 4);
    memcpy(q + 4, name, nl);
    memcpy(q + 4 + nl, &dl, 4);
    memcpy(q + 8 + nl, dir, dl);
    *s = (section){.id = SEC_META, .part = {p}, .len = {len}, .owned = p};
    return SPLADE_OK;
}

/* VOCAB: u32 offsets + bytes, in the sorted order when the vocabulary was built from tokens. */
static int vocab_section(const splade_index_builder *b, const splade_inverted *inv, section *s)
{
    uint32_t T = (uint32_t)b->n_terms;
    size_t off_bytes = ((size_t)T + 1) * 4;
    uint8_t *p = malloc(off_bytes + b->vocab.len + 1);
    if (!p)
        return splade_fail(SPLADE_ERR_NOMEM, "vocabulary");
    uint32_t *off = (uint32_t *)p;
    char *blob = (char *)p + off_bytes;
    size_t pos = 0;
    for (uint32_t i = 0; i < T; i++) {
        size_t len;
        const char *tok = strtab_get(&b->vocab, inv->vocab_order ? (uint32_t)inv->vocab_order[i] : i, &len);
        off[i] = (uint32_t)pos;
        memcpy(blob + pos, tok, len);
        pos += len;
    }
    off[T] = (uint32_t)pos;
    *s = (section){.id = SEC_VOCAB, .part = {p}, .len = {off_bytes + pos}, .owned = p};
    return SPLADE_OK;
}

/* An offsets table + blob in internal-id order: the strtab itself, or a permuted copy of it when
 * the documents were reordered (order[i] = the strtab entry of internal id i). */
static int table_section(uint32_t id, const strtab *t, const uint32_t *order, section *s)
{
    if (!order) {
        *s = (section){.id = id, .part = {t->off, t->data}, .len = {((size_t)t->n + 1) * 8, t->len}};
        return SPLADE_OK;
    }
    size_t off_bytes = ((size_t)t->n + 1) * 8;
    uint8_t *p = malloc(off_bytes + t->len + 1);
    if (!p)
        return splade_fail(SPLADE_ERR_NOMEM, "document table of %zu bytes", off_bytes + t->len);
    uint64_t *off = (uint64_t *)p, pos = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        uint64_t a = t->off[order[i]], len = t->off[order[i] + 1] - a;
        off[i] = pos;
        memcpy(p + off_bytes + pos, t->data + a, len);
        pos += len;
    }
    off[t->n] = pos;
    *s = (section){.id = id, .part = {p}, .len = {off_bytes + pos}, .owned = p};
    return SPLADE_OK;
}

static int write_all(int fd, const void *p, size_t n, uint64_t at, const char *path)
{
    const char *c = p;
    while (n) {
        ssize_t w = pwrite(fd, c, n, (off_t)at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return splade_fail(SPLADE_ERR_IO, "%s: write failed: %s", path, strerror(errno));
        c += w;
        at += (uint64_t)w;
        n -= (size_t)w;
    }
    return SPLADE_OK;
}

static uint64_t align_up(uint64_t x)
{
    return (x + SPX_ALIGN - 1) & ~(uint64_t)(SPX_ALIGN - 1);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels answer EINVAL, and the copy faults the pages in */
#endif

/* A piece of a section (at most splade_index_piece_bytes), copied and checksummed by one thread. */
typedef struct {
    const uint8_t *src;
    uint64_t at; /* file offset */
    size_t n;
    uint32_t crc;
    int sec;
} chunk;

typedef struct {
    chunk *chunks;
    size_t n;
    atomic_size_t *next;
    uint8_t *map; /* the file, mapped; NULL: pwrite */
    int fd;
    const char *path;
    int failed;   /* pwrite failed (the detail is recorded again by the calling thread) */
    int err;
} copy_job;

static void *copy_chunks(void *arg)
{
    copy_job *j = arg;
    for (size_t i; !j->failed && (i = atomic_fetch_add(j->next, 1)) < j->n;) {
        chunk *c = &j->chunks[i];
        c->crc = splade_crc32c(0, c->src, c->n);
        if (j->map) {
            uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)(j->map + c->at) & ~(page - 1);
            madvise((void *)a, (uintptr_t)(j->map + c->at + c->n) - a, MADV_POPULATE_WRITE); /* faults in bulk; a hint */
            memcpy(j->map + c->at, c->src, c->n);
        } else if (write_all(j->fd, c->src, c->n, c->at, j->path) < 0) {
            j->failed = 1;
            j->err = errno;
        }
    }
    return NULL;
}

/* Lays the sections out after the header (64-byte aligned, zero padding), copies them in on
 * `threads` threads and fills in the section table. The file is first given its full size with
 * fallocate, so a full disk is an error here, not a SIGBUS while writing through the mapping;
 * where fallocate is not supported the chunks are written with pwrite instead (same bytes). */
static int write_sections(int fd, const section *secs, int n, spx_section *tab, uint64_t *file_size, int threads,
                          const char *path)
{
    uint64_t pos = spx_header_bytes((uint32_t)n);
    size_t n_chunks = 0, CHUNK = splade_index_piece_bytes ? splade_index_piece_bytes : 1;
    for (int i = 0; i < n; i++) {
        uint64_t start = align_up(pos);
        tab[i] = (spx_section){.id = secs[i].id, .offset = start, .length = section_len(&secs[i])};
        pos = start + tab[i].length;
        for (int k = 0; k < MAX_PIECES; k++)
            n_chunks += (secs[i].len[k] + CHUNK - 1) / CHUNK;
    }
    *file_size = pos;
    chunk *ch = malloc((n_chunks + 1) * sizeof *ch);
    if (!ch)
        return splade_fail(SPLADE_ERR_NOMEM, "%s: write plan", path);
    size_t c = 0;
    for (int i = 0; i < n; i++) {
        uint64_t at = tab[i].offset;
        for (int k = 0; k < MAX_PIECES; k++)
            for (size_t o = 0; o < secs[i].len[k]; o += CHUNK) {
                size_t len = secs[i].len[k] - o < CHUNK ? secs[i].len[k] - o : CHUNK;
                ch[c++] = (chunk){(const uint8_t *)secs[i].part[k] + o, at, len, 0, i};
                at += len;
            }
    }
    uint8_t *map = NULL;
    int rc = SPLADE_OK;
    if (fallocate(fd, 0, 0, (off_t)pos) == 0) {
        map = mmap(NULL, pos, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        map = map == MAP_FAILED ? NULL : map; /* then pwrite */
    } else if (errno != EOPNOTSUPP && errno != ENOSYS) {
        rc = splade_fail(SPLADE_ERR_IO, "%s: cannot reserve %llu bytes: %s", path, (unsigned long long)pos,
                         strerror(errno));
    } else if (ftruncate(fd, (off_t)pos) != 0) {
        rc = splade_fail(SPLADE_ERR_IO, "%s: cannot extend to %llu bytes: %s", path, (unsigned long long)pos,
                         strerror(errno));
    }
    if (rc == 0) {
        enum { MAX_THREADS = 64 };
        int P = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
        P = (size_t)P > c ? (int)(c ? c : 1) : P;
        atomic_size_t next = 0;
        copy_job jobs[MAX_THREADS];
        for (int j = 0; j < P; j++)
            jobs[j] = (copy_job){ch, c, &next, map, fd, path, 0, 0};
        splade_run_jobs(P, copy_chunks, jobs, sizeof *jobs);
        for (int j = 0; j < P && rc == 0; j++)
            if (jobs[j].failed)
                rc = splade_fail(SPLADE_ERR_IO, "%s: write failed: %s", path, strerror(jobs[j].err));
    }
    if (map && munmap(map, pos) != 0 && rc == 0)
        rc = splade_fail(SPLADE_ERR_IO, "%s: munmap: %s", path, strerror(errno));
    for (size_t k = 0; k < c; k++) /* chunks are in file order; an empty section's CRC is 0 */
        tab[ch[k].sec].crc = splade_crc32c_combine(tab[ch[k].sec].crc, ch[k].crc, ch[k].n);
    free(ch);
    return rc;
}

static int write_header(int fd, const spx_section *tab, int n, uint64_t file_size, const char *path)
{
    uint8_t buf[sizeof(spx_header) + 32 * SEC_COUNT_ + 8] = {0};
    spx_header h = {.version = SPLADE_INDEX_VERSION, .header_size = spx_header_bytes((uint32_t)n),
                    .file_size = file_size, .n_sections = (uint32_t)n};
    memcpy(h.magic, SPX_MAGIC, 8);
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, tab, (size_t)n * sizeof *tab);
    uint32_t crc = splade_crc32c(0, buf, sizeof h + (size_t)n * sizeof *tab);
    memcpy(buf + sizeof h + (size_t)n * sizeof *tab, &crc, 4);
    return write_all(fd, buf, h.header_size, 0, path);
}

/* The file is complete when this returns OK, but not yet fsynced: the caller does that (install.c,
 * overlapped with the verification). */
static int write_file_fd(int fd, section *secs, int n, int threads, const char *path, uint64_t *file_bytes)
{
    spx_section tab[SEC_COUNT_];
    int rc = write_sections(fd, secs, n, tab, file_bytes, threads, path);
    if (rc == 0)
        rc = write_header(fd, tab, n, *file_bytes, path);
    return rc;
}

int splade_write_file(const splade_index_builder *b, const splade_inverted *inv, int fd, const char *path,
                      int threads, uint64_t *file_bytes)
{
    section secs[SEC_COUNT_ - 1] = {0};
    int n_secs = SEC_COUNT_ - 2; /* DOCSEQ only when written */
    int rc = meta_section(b, inv, &secs[0]);
    if (rc == 0)
        rc = vocab_section(b, inv, &secs[1]);
    secs[2] = (section){.id = SEC_TERMS, .part = {inv->terms}, .len = {(size_t)b->n_terms * sizeof *inv->terms}};
    secs[3] = (section){.id = SEC_BLOCKS, .part = {inv->blocks}, .len = {inv->n_blocks * sizeof *inv->blocks}};
    secs[4] = (section){.id = SEC_POSTINGS};
    secs[8] = (section){.id = SEC_RANGES};
    for (int j = 0; j < inv->n_parts; j++) {
        secs[4].part[j] = inv->post_part[j];
        secs[4].len[j] = inv->post_part_len[j];
        secs[8].part[j] = inv->rng_part[j];
        secs[8].len[j] = inv->rng_part_len[j];
    }
    if (rc == 0)
        rc = table_section(SEC_DOCIDS, &b->ids, inv->doc_order, &secs[5]);
    if (rc == 0)
        rc = table_section(SEC_DOCSTORE, &b->store, inv->doc_order, &secs[6]);
    secs[7] = (section){.id = SEC_RANGE_TERMS, .part = {inv->range_terms},
                        .len = {(size_t)b->n_terms * sizeof *inv->range_terms}};
    if (inv->docseq)
        secs[n_secs++] = (section){.id = SEC_DOCSEQ, .part = {inv->docseq}, .len = {(size_t)b->ids.n * 4}};
    if (rc == 0)
        rc = write_file_fd(fd, secs, n_secs, threads, path, file_bytes);
    for (int i = 0; i < SEC_COUNT_ - 1; i++)
        free(secs[i].owned);
    return rc;
}
