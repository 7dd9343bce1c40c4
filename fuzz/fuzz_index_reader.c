/* Fuzz target: the index reader (splade_index_open) and every top-k method on a damaged index.
 * A small valid index is built once; byte 0 of an input picks how the file is made:
 *   mode 0: the rest of the input is the whole file;
 *   mode 1: the same, then every CRC, the file size and the header CRC are recomputed, so the
 *           damage reaches the table checks and the query code instead of stopping at a checksum;
 *   mode 2: the rest is a patch over the valid file (records: u24 offset, u8 len, len bytes;
 *           len 0: u24 new file size instead), CRCs recomputed as in mode 1;
 *   mode 3: the same patch, CRCs left alone (the checksums must catch it).
 * The file is opened through a memfd path, then a few queries run with every method, the ids,
 * titles, snippets and terms of what comes back are read. Undamaged files must give the same hits
 * with every method. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_index_fixture.h"
#include "fuzz_memfile.h"
#include "index/format.h"

static uint8_t *valid;
static size_t valid_size;

static void init_once(void)
{
    if (valid)
        return;
    const char *dir = fx_scratch_dir("reader");
    if (fx_build(dir, 300) != 0) {
        fprintf(stderr, "fuzz_index_reader: fixture build failed: %s\n", splade_error_detail());
        abort();
    }
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, SPLADE_INDEX_FILE);
    if (fx_slurp(path, &valid, &valid_size) != 0)
        abort();
    fx_remove_index(dir);
    const char *dump = getenv("SPLADE_FUZZ_DUMP"); /* writes the fixture, to make seeds */
    FILE *f = dump ? fopen(dump, "wb") : NULL;
    if (f) {
        fwrite(valid, 1, valid_size, f);
        fclose(f);
    }
}

/* Recomputes what a checksum would catch: section CRCs (where a section lies in the file), the
 * file size and the header CRC. */
static void fix_checksums(uint8_t *f, size_t size)
{
    if (size < sizeof(spx_header))
        return;
    spx_header h;
    memcpy(&h, f, sizeof h);
    uint64_t fs = size;
    memcpy(f + offsetof(spx_header, file_size), &fs, 8);
    if (h.n_sections > SPX_MAX_SECTIONS || spx_header_bytes(h.n_sections) > size)
        return;
    for (uint32_t i = 0; i < h.n_sections; i++) {
        uint8_t *e = f + sizeof h + 32u * i;
        spx_section s;
        memcpy(&s, e, sizeof s);
        if (s.offset <= size && s.length <= size - s.offset) {
            uint32_t crc = splade_crc32c(0, f + s.offset, s.length);
            memcpy(e + offsetof(spx_section, crc), &crc, 4);
        }
    }
    size_t body = spx_header_bytes(h.n_sections) - 8;
    uint32_t crc = splade_crc32c(0, f, body);
    memcpy(f + body, &crc, 4);
}

/* Applies patch records to a copy of the valid file; returns the new file (malloc'd). */
static uint8_t *patch(const uint8_t *p, size_t n, size_t *size)
{
    size_t cap = valid_size * 2 + 64, len = valid_size;
    uint8_t *f = calloc(1, cap);
    if (!f)
        return NULL;
    memcpy(f, valid, valid_size);
    while (n >= 4) {
        uint32_t off = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16, l = p[3];
        p += 4, n -= 4;
        if (l == 0) { /* resize (new bytes are zero) */
            size_t nl = off % cap;
            if (nl > len)
                memset(f + len, 0, nl - len);
            len = nl;
            continue;
        }
        if (l > n)
            l = (uint32_t)n;
        if (len) {
            off %= len;
            size_t m = l < len - off ? l : len - off;
            memcpy(f + off, p, m);
        }
        p += l, n -= l;
    }
    *size = len;
    return f;
}

static void query_all(splade_index *ix, const uint8_t *data, size_t size, int exact)
{
    const splade_index_info *in = splade_index_get_info(ix);
    for (int32_t t = -1; t <= (int32_t)(in->n_terms < 64 ? in->n_terms : 64); t++) {
        size_t len = 0;
        const char *tok = splade_index_term(ix, t, &len);
        if (tok && splade_index_term_lookup(ix, tok, len) < 0 && (in->flags & SPLADE_IX_SORTED_VOCAB) == 0)
            __builtin_trap(); /* hash lookup must find every stored term */
    }
    (void)splade_index_term_lookup(ix, "t3", 2);
    (void)splade_index_term_lookup(ix, "", 0);
    splade_searcher *s;
    if (splade_searcher_create(ix, &s) != SPLADE_OK)
        return;
    /* queries: the first 48 terms; a few rare terms; terms and weights taken from the input */
    int32_t terms[48];
    float w[48];
    for (int i = 0; i < 48; i++) {
        terms[i] = i;
        w[i] = 0.1f + (float)(i % 7);
    }
    int32_t fterms[16];
    float fw[16];
    int nf = 0;
    for (size_t i = 0; i + 2 <= size && nf < 16; i += 2) {
        fterms[nf] = data[size - 1 - i] % 64;
        fw[nf++] = (float)data[size - 2 - i] / 16.0f;
    }
    struct {
        const int32_t *t;
        const float *w;
        int n;
    } qs[3] = {{terms, w, 48}, {terms + 20, w + 20, 3}, {fterms, fw, nf}};
    for (int qi = 0; qi < 3; qi++) {
        splade_qvec q;
        if (splade_qvec_build(qs[qi].t, qs[qi].w, qs[qi].n, in->n_terms, &q) != SPLADE_OK)
            continue;
        fx_search_all(ix, s, &q, 1, exact);
        fx_search_all(ix, s, &q, 10, exact);
        if (qi == 0)
            fx_search_all(ix, s, &q, 400, exact);
        splade_qvec_free(&q);
    }
    splade_searcher_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init_once();
    if (size < 1)
        return 0;
    int mode = data[0] & 3;
    uint8_t *file;
    size_t fsize;
    if (mode <= 1) {
        fsize = size - 1;
        file = malloc(fsize ? fsize : 1);
        if (!file)
            return 0;
        memcpy(file, data + 1, fsize);
    } else if (!(file = patch(data + 1, size - 1, &fsize))) {
        return 0;
    }
    if (mode == 1 || mode == 2)
        fix_checksums(file, fsize);
    int exact = fsize == valid_size && memcmp(file, valid, fsize) == 0;
    char path[64];
    int fd = memfile_open(file, fsize, path, sizeof path);
    if (fd >= 0) {
        splade_index *ix;
        int rc = splade_index_open(path, &ix);
        if (exact && rc != SPLADE_OK)
            __builtin_trap(); /* the valid file must open */
        if (rc == SPLADE_OK) {
            query_all(ix, data, size, exact);
            splade_index_close(ix);
        }
        close(fd);
    }
    free(file);
    return 0;
}
