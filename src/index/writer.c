/* Serializes a builder and its postings into one index file (docs/FORMAT.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "index/builder_internal.h"
#include "index/format.h"
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

/* Unix seconds, or $SOURCE_DATE_EPOCH when set (reproducible builds: the same input then gives the
 * same file, byte for byte). */
static uint64_t build_time(void)
{
    const char *e = getenv("SOURCE_DATE_EPOCH");
    char *end;
    if (e && *e) {
        unsigned long long v = strtoull(e, &end, 10);
        if (*end == '\0')
            return (uint64_t)v;
    }
    return (uint64_t)time(NULL);
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
                 (b->dynamic_vocab ? SPLADE_IX_SORTED_VOCAB : 0) | (inv->doc_order ? SPLADE_IX_REORDERED : 0),
        .max_length = b->max_length, .n_truncated = b->n_truncated, .range_shift = SPLADE_RANGE_SHIFT, .build_time = build_time(),
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

static int write_all(int fd, const void *p, size_t n, const char *path)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return splade_fail(SPLADE_ERR_IO, "%s: write failed: %s", path, strerror(errno));
        c += w;
        n -= (size_t)w;
    }
    return SPLADE_OK;
}

static uint64_t align_up(uint64_t x)
{
    return (x + SPX_ALIGN - 1) & ~(uint64_t)(SPX_ALIGN - 1);
}

/* Writes the sections at aligned offsets after the header, filling in the section table. */
static int write_sections(int fd, const section *secs, int n, spx_section *tab, uint64_t *pos,
                          const char *path)
{
    static const uint8_t zeros[SPX_ALIGN];
    for (int i = 0; i < n; i++) {
        uint64_t start = align_up(*pos);
        int rc = write_all(fd, zeros, start - *pos, path);
        uint32_t crc = 0;
        for (int k = 0; k < MAX_PIECES && rc == 0; k++) {
            if (!secs[i].len[k])
                continue;
            crc = splade_crc32c(crc, secs[i].part[k], secs[i].len[k]);
            rc = write_all(fd, secs[i].part[k], secs[i].len[k], path);
        }
        if (rc < 0)
            return rc;
        tab[i] = (spx_section){.id = secs[i].id, .offset = start, .length = section_len(&secs[i]), .crc = crc};
        *pos = start + tab[i].length;
    }
    return SPLADE_OK;
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
    if (pwrite(fd, buf, h.header_size, 0) != (ssize_t)h.header_size)
        return splade_fail(SPLADE_ERR_IO, "%s: header write failed: %s", path, strerror(errno));
    return SPLADE_OK;
}

static int write_file_fd(int fd, section *secs, int n, const char *path, uint64_t *file_bytes)
{
    spx_section tab[SEC_COUNT_];
    uint64_t pos = spx_header_bytes((uint32_t)n);
    uint8_t zeros[spx_header_bytes(SEC_COUNT_)];
    memset(zeros, 0, sizeof zeros);
    int rc = write_all(fd, zeros, (size_t)pos, path); /* header placeholder, filled in last */
    if (rc == 0)
        rc = write_sections(fd, secs, n, tab, &pos, path);
    if (rc == 0)
        rc = write_header(fd, tab, n, pos, path);
    if (rc == 0 && fsync(fd) != 0)
        rc = splade_fail(SPLADE_ERR_IO, "%s: fsync failed: %s", path, strerror(errno));
    *file_bytes = pos;
    return rc;
}

int splade_write_file(const splade_index_builder *b, const splade_inverted *inv, const char *path,
                      uint64_t *file_bytes)
{
    section secs[SEC_COUNT_ - 1] = {0};
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
    int fd = -1;
    if (rc == 0 && (fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0)
        rc = splade_fail(SPLADE_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    if (rc == 0)
        rc = write_file_fd(fd, secs, SEC_COUNT_ - 1, path, file_bytes);
    if (fd >= 0 && close(fd) != 0 && rc == 0)
        rc = splade_fail(SPLADE_ERR_IO, "%s: close failed: %s", path, strerror(errno));
    for (int i = 0; i < SEC_COUNT_ - 1; i++)
        free(secs[i].owned);
    return rc;
}
