/* Opens an index file read-only through mmap and validates it completely before use: magic,
 * version, header CRC, size, every section's CRC, then the internal consistency of the tables,
 * so a damaged file is reported instead of read out of bounds (docs/FORMAT.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fail.h"
#include "index/format.h"
#include "index/forward.h"
#include "index/impact_order.h"
#include "index/parallel.h"
#include "index/reader_internal.h"
#include "splade.h"

static int resolve_path(const char *dir, char *path, size_t cap)
{
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISREG(st.st_mode))
        return snprintf(path, cap, "%s", dir) < (int)cap ? SPLADE_OK
                                                          : splade_fail(SPLADE_ERR_INVALID_ARG, "path too long");
    if (snprintf(path, cap, "%s/%s", dir, SPLADE_INDEX_FILE) >= (int)cap)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "path too long: %s", dir);
    if (stat(path, &st) != 0)
        return splade_fail(SPLADE_ERR_NOT_FOUND, "%s: no index here (build one with `splade-index build`)", dir);
    return SPLADE_OK;
}

/* Maps an open file. Only a regular file: a folder named index.spx would otherwise fail as
 * "mmap: No such device", a FIFO would hang. */
static int map_fd(splade_index *ix, int fd, const char *path)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return splade_fail(SPLADE_ERR_IO, "%s: stat: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return splade_fail(SPLADE_ERR_FORMAT, "%s is not a regular file", path);
    if ((size_t)st.st_size < spx_header_bytes(0))
        return splade_fail(SPLADE_ERR_FORMAT, "%s: truncated index (%lld bytes)", path, (long long)st.st_size);
    ix->size = (size_t)st.st_size;
    ix->map = mmap(NULL, ix->size, PROT_READ, MAP_SHARED, fd, 0);
    if (ix->map == MAP_FAILED) {
        ix->map = NULL;
        return splade_fail(SPLADE_ERR_IO, "%s: mmap: %s", path, strerror(errno));
    }
    return SPLADE_OK;
}

static int map_file(splade_index *ix, const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* O_NONBLOCK: a FIFO is refused, not waited on */
    if (fd < 0)
        return splade_fail(errno == ENOENT ? SPLADE_ERR_NOT_FOUND : SPLADE_ERR_IO, "%s: cannot open: %s", path,
                           strerror(errno));
    int rc = map_fd(ix, fd, path);
    close(fd);
    return rc;
}

static int check_header(splade_index *ix, const char *path, const spx_header **hout)
{
    const spx_header *h = (const spx_header *)ix->map;
    if (memcmp(h->magic, SPX_MAGIC, 8) != 0)
        return splade_fail(SPLADE_ERR_FORMAT, "%s: not a splade-index file (bad magic)", path);
    if (h->version != SPLADE_INDEX_VERSION)
        return splade_fail(SPLADE_ERR_VERSION, "%s: index format version %u is not supported (this build reads %d)",
                           path, h->version, SPLADE_INDEX_VERSION);
    if (h->n_sections > SPX_MAX_SECTIONS || h->header_size != spx_header_bytes(h->n_sections) ||
        h->header_size > ix->size)
        return splade_fail(SPLADE_ERR_FORMAT, "%s: corrupted header", path);
    uint32_t stored;
    size_t body = h->header_size - 8;
    memcpy(&stored, ix->map + body, 4);
    if (splade_crc32c(0, ix->map, body) != stored)
        return splade_fail(SPLADE_ERR_CHECKSUM, "%s: header checksum mismatch (corrupted index)", path);
    if (h->file_size != ix->size)
        return splade_fail(SPLADE_ERR_FORMAT, "%s: truncated or extended index: %zu bytes, header says %llu", path,
                           ix->size, (unsigned long long)h->file_size);
    *hout = h;
    return SPLADE_OK;
}

static const char *section_name(uint32_t id)
{
    static const char *names[] = {"?",      "META",     "VOCAB",       "TERMS", "BLOCKS",
                                   "POSTINGS", "DOCIDS", "DOCSTORE", "RANGE_TERMS", "RANGES", "DOCSEQ"};
    return id < SEC_COUNT_ ? names[id] : "unknown";
}

/* The CRC of every section; pieces of about 1/threads of the file summed on threads. */
typedef struct {
    const uint8_t *p;
    size_t n;
    uint32_t crc;
} crc_piece;

typedef struct {
    const splade_index *ix;
    crc_piece *pieces;
    size_t from, to;
} crc_job;

static void *crc_pieces(void *arg)
{
    crc_job *j = arg;
    for (size_t i = j->from; i < j->to; i++) {
        j->pieces[i].crc = splade_crc32c(0, j->pieces[i].p, j->pieces[i].n);
        splade_index_release(j->ix, j->pieces[i].p, j->pieces[i].p + j->pieces[i].n);
    }
    return NULL;
}

void splade_index_release(const splade_index *ix, const void *from, const void *to)
{
    if (!ix->lean)
        return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)from + page - 1) & ~(page - 1), b = (uintptr_t)to & ~(page - 1);
    if (b > a)
        madvise((void *)a, b - a, MADV_DONTNEED);
}

static uint64_t in_file(const splade_index *ix, const spx_section *s) /* length, 0 if outside (reported later) */
{
    return s->offset > ix->size || s->length > ix->size - s->offset ? 0 : s->length;
}

static int section_crcs(const splade_index *ix, const spx_section *tab, uint32_t n, uint32_t *crc)
{
    enum { MAX_THREADS = 64 };
    int P = ix->threads < 1 ? 1 : ix->threads > MAX_THREADS ? MAX_THREADS : ix->threads;
    uint64_t total = 0, len[SPX_MAX_SECTIONS];
    for (uint32_t i = 0; i < n; i++)
        total += len[i] = in_file(ix, &tab[i]);
    size_t piece = (size_t)(total / (uint64_t)P / 4) + 1; /* ~4 pieces per thread: sections differ in size */
    size_t least = splade_index_piece_bytes ? splade_index_piece_bytes : 1;
    piece = piece < least ? least : piece;
    if (ix->lean && piece > (32u << 20))
        piece = 32u << 20; /* what a lean check holds per thread */
    size_t n_pieces = 0;
    for (uint32_t i = 0; i < n; i++)
        n_pieces += len[i] / piece + 1;
    crc_piece *pc = malloc(n_pieces * sizeof *pc);
    if (!pc)
        return splade_fail(SPLADE_ERR_NOMEM, "%s: checksums", ix->path);
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint64_t o = 0; o == 0 || o < len[i]; o += piece) {
            uint64_t m = len[i] - o < piece ? len[i] - o : piece;
            pc[k++] = (crc_piece){len[i] ? ix->map + tab[i].offset + o : ix->map, (size_t)m, 0};
        }
    crc_job jobs[MAX_THREADS];
    for (int j = 0; j < P; j++)
        jobs[j] = (crc_job){ix, pc, k * (size_t)j / (size_t)P, k * (size_t)(j + 1) / (size_t)P};
    splade_run_jobs(P, crc_pieces, jobs, sizeof *jobs);
    k = 0;
    for (uint32_t i = 0; i < n; i++) {
        crc[i] = pc[k++].crc;
        for (uint64_t o = piece; o < len[i]; o += piece, k++)
            crc[i] = splade_crc32c_combine(crc[i], pc[k].crc, pc[k].n);
    }
    free(pc);
    return SPLADE_OK;
}

static int check_sections(splade_index *ix, const spx_header *h, const char *path)
{
    const spx_section *tab = (const spx_section *)(ix->map + sizeof *h);
    uint32_t crc[SPX_MAX_SECTIONS];
    int rc = section_crcs(ix, tab, h->n_sections, crc); /* first, on threads; checked in the loop's order */
    if (rc < 0)
        return rc;
    for (uint32_t i = 0; i < h->n_sections; i++) {
        const spx_section *s = &tab[i];
        if (s->offset > ix->size || s->length > ix->size - s->offset)
            return splade_fail(SPLADE_ERR_FORMAT, "%s: section %s lies outside the file", path, section_name(s->id));
        if (s->offset % SPX_ALIGN) /* the tables are read in place as u32/u64 arrays */
            return splade_fail(SPLADE_ERR_FORMAT, "%s: section %s is not 64-byte aligned", path, section_name(s->id));
        if (crc[i] != s->crc)
            return splade_fail(SPLADE_ERR_CHECKSUM, "%s: checksum mismatch in section %s (corrupted index)", path,
                               section_name(s->id));
        if (s->id > 0 && s->id < SEC_COUNT_) {
            if (ix->sec[s->id])
                return splade_fail(SPLADE_ERR_FORMAT, "%s: section %s twice", path, section_name(s->id));
            ix->sec[s->id] = ix->map + s->offset;
            ix->sec_len[s->id] = s->length;
        }
    }
    for (uint32_t id = 1; id < SEC_COUNT_; id++)
        if (!ix->sec[id] && id != SEC_DOCSEQ)
            return splade_fail(SPLADE_ERR_FORMAT, "%s: section %s missing", path, section_name(id));
    return SPLADE_OK;
}

static int open_file(const char *dir, int threads, splade_index **out);

int splade_index_open(const char *dir, splade_index **out)
{
    return splade_index_open_threads(dir, 1, out);
}

/* Every check after the file is mapped. */
static int check_mapped(splade_index *ix)
{
    const spx_header *h = NULL;
    int rc = check_header(ix, ix->path, &h);
    if (rc == 0)
        rc = check_sections(ix, h, ix->path);
    if (rc == 0)
        rc = splade_index_parse_tables(ix);
    if (rc == 0)
        splade_index_single_segment(ix);
    return rc;
}

static int finish_open(splade_index *ix, int rc, splade_index **out)
{
    if (rc < 0) {
        splade_index_close(ix);
        return rc;
    }
    *out = ix;
    return SPLADE_OK;
}

/* A zeroed index with its lock ready (splade_index_close destroys it). */
splade_index *splade_index_alloc(void)
{
    splade_index *ix = calloc(1, sizeof *ix);
    if (ix && pthread_mutex_init(&ix->lookup_lock, NULL) != 0) {
        free(ix);
        return NULL;
    }
    if (ix && pthread_mutex_init(&ix->fwd_lock, NULL) != 0) {
        pthread_mutex_destroy(&ix->lookup_lock);
        free(ix);
        return NULL;
    }
    return ix;
}

int splade_index_open_threads(const char *dir, int threads, splade_index **out)
{
    if (!dir || !out)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_index_open: NULL argument");
    *out = NULL;
    struct stat st;
    for (int attempt = 0; !(stat(dir, &st) == 0 && S_ISREG(st.st_mode)); attempt++) {
        int rc = splade_snapshot_open(dir, threads, out); /* a folder with a MANIFEST */
        if (rc <= 0)
            return rc;
        rc = open_file(dir, threads, out); /* none: DIR/index.spx */
        char man[4096];
        snprintf(man, sizeof man, "%s/%s", dir, SPLADE_MANIFEST_FILE);
        if (rc != SPLADE_ERR_NOT_FOUND || attempt >= 10 || stat(man, &st) != 0)
            return rc;
        /* index.spx was merged away after a MANIFEST appeared: read that */
    }
    return open_file(dir, threads, out);
}

static int open_file(const char *dir, int threads, splade_index **out)
{
    splade_index *ix = splade_index_alloc();
    if (!ix)
        return splade_fail(SPLADE_ERR_NOMEM, "index");
    ix->threads = threads;
    int rc = resolve_path(dir, ix->path, sizeof ix->path);
    if (rc == 0)
        rc = map_file(ix, ix->path);
    if (rc == 0)
        rc = check_mapped(ix);
    return finish_open(ix, rc, out);
}

static int open_fd(int fd, const char *path, int threads, int lean, splade_index **out)
{
    if (fd < 0 || !path || !out)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_index_open_fd: bad arguments");
    *out = NULL;
    splade_index *ix = splade_index_alloc();
    if (!ix)
        return splade_fail(SPLADE_ERR_NOMEM, "index");
    ix->threads = threads;
    ix->lean = lean;
    int rc = snprintf(ix->path, sizeof ix->path, "%s", path) < (int)sizeof ix->path
                 ? SPLADE_OK
                 : splade_fail(SPLADE_ERR_INVALID_ARG, "path too long: %s", path);
    if (rc == 0)
        rc = map_fd(ix, fd, ix->path);
    if (rc == 0)
        rc = check_mapped(ix);
    return finish_open(ix, rc, out);
}

int splade_index_open_fd(int fd, const char *path, int threads, splade_index **out)
{
    return open_fd(fd, path, threads, 0, out);
}

int splade_index_open_fd_lean(int fd, const char *path, int threads, splade_index **out)
{
    return open_fd(fd, path, threads, 1, out);
}

void splade_index_close(splade_index *ix)
{
    if (!ix)
        return;
    if (ix->is_snapshot)
        splade_snapshot_free(ix);
    if (ix->map)
        munmap(ix->map, ix->size);
    free(ix->model_name);
    free(ix->model_dir);
    free(ix->lookup);
    splade_forward_free(ix->fwd);
    splade_impact_order_free(ix->imo);
    pthread_mutex_destroy(&ix->lookup_lock);
    pthread_mutex_destroy(&ix->fwd_lock);
    free(ix);
}
