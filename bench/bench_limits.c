/* Limits benchmark (not part of CI; docs/HARDENING.md, "Limits"):
 *  1. postings beyond 4 GiB: a small index rewritten into a sparse file whose POSTINGS section
 *     starts with a hole of 4 GiB + 64 bytes, so every block offset (u64) is above 2^32; the reader
 *     checksums the whole section (hole included), checks every block, and every method must
 *     answer as on the original file. Needs ~4.3 GB of page cache (reclaimable), no disk.
 *  2. builder memory per posting: peak RSS of building N synthetic postings (default 50M), the
 *     figure from which the largest collection that fits in memory is extrapolated; the index is
 *     then reopened and queried (all methods equal). `--postings 2200000000` is the > 2^31 run
 *     (~40 GB of memory: run it on a big machine, e.g. the GPU host's CPU).
 * Usage: bench_limits [--postings N] [--skip-sparse] [--dir DIR] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "index/format.h"
#include "splade.h"
#include "splade/index.h"
#include "splade/query.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long peak_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024;
}

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if (!(x)) {                                                                                \
            fprintf(stderr, "bench_limits: %s failed (line %d): %s\n", #x, __LINE__, splade_error_detail()); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static uint64_t rng = 88172645463325252ull;
static uint32_t next_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* n_docs documents of `per_doc` distinct terms over a vocabulary of n_terms (skewed). */
static void build(const char *dir, uint32_t n_docs, int per_doc, int32_t n_terms, splade_build_stats *st)
{
    splade_index_builder *b;
    CHECK(splade_builder_create(NULL, 0, NULL, &b) == 0);
    for (int32_t t = 0; t < n_terms; t++) {
        char tok[16];
        int32_t id;
        snprintf(tok, sizeof tok, "t%07d", t);
        CHECK(splade_builder_term(b, tok, strlen(tok), &id) == 0 && id == t);
    }
    int32_t *terms = malloc((size_t)per_doc * sizeof *terms);
    float *w = malloc((size_t)per_doc * sizeof *w);
    uint8_t *seen = calloc((size_t)n_terms, 1);
    for (uint32_t d = 0; d < n_docs; d++) {
        char id[16];
        snprintf(id, sizeof id, "%u", d);
        uint32_t doc;
        CHECK(splade_builder_add_doc(b, "synthetic", id, "", "", d + 1, &doc) == 0);
        int n = 0;
        while (n < per_doc) {
            uint32_t r = next_u32() % (uint32_t)n_terms;
            uint32_t t = (uint32_t)(((uint64_t)r * r) / (uint32_t)n_terms); /* skewed to low ids */
            if (seen[t])
                continue;
            seen[t] = 1;
            terms[n] = (int32_t)t;
            w[n++] = 0.01f + (float)(next_u32() % 1000) / 300.0f;
        }
        for (int i = 0; i < n; i++)
            seen[terms[i]] = 0;
        CHECK(splade_builder_set_vector(b, doc, terms, w, n) == 0);
    }
    free(terms);
    free(w);
    free(seen);
    CHECK(splade_builder_write(b, dir, st) == 0);
    splade_builder_free(b);
}

static uint32_t crc_zeros(uint32_t crc, uint64_t n)
{
    static uint8_t zeros[1 << 20];
    while (n) {
        size_t m = n < sizeof zeros ? (size_t)n : sizeof zeros;
        crc = splade_crc32c(crc, zeros, m);
        n -= m;
    }
    return crc;
}

/* Rewrites src into dst with a hole of `hole` bytes at the start of POSTINGS (block offsets
 * shifted by it, later sections moved after it, every CRC recomputed). */
static void add_postings_hole(const char *src, const char *dst, uint64_t hole)
{
    int in = open(src, O_RDONLY);
    struct stat stt;
    CHECK(in >= 0 && fstat(in, &stt) == 0);
    size_t size = (size_t)stt.st_size;
    uint8_t *f = malloc(size);
    CHECK(pread(in, f, size, 0) == (ssize_t)size);
    close(in);
    spx_header h;
    memcpy(&h, f, sizeof h);
    uint32_t hb = spx_header_bytes(h.n_sections);
    spx_section *tab = (spx_section *)(f + sizeof h);
    uint64_t post_off = 0;
    for (uint32_t i = 0; i < h.n_sections; i++)
        if (tab[i].id == SEC_POSTINGS)
            post_off = tab[i].offset;
    CHECK(post_off);
    int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(out >= 0);
    for (uint32_t i = 0; i < h.n_sections; i++) {
        spx_section *s = &tab[i];
        uint8_t *data = f + s->offset;
        if (s->id == SEC_BLOCKS) {
            splade_block_entry *be = (splade_block_entry *)data;
            for (uint64_t b = 0; b < s->length / sizeof *be; b++)
                be[b].offset += hole;
        }
        uint64_t at = s->offset + (s->offset > post_off ? hole : 0);
        uint64_t write_at = at + (s->id == SEC_POSTINGS ? hole : 0);
        CHECK(pwrite(out, data, s->length, (off_t)write_at) == (ssize_t)s->length);
        if (s->id == SEC_POSTINGS) {
            s->crc = splade_crc32c(crc_zeros(0, hole), data, s->length);
            s->length += hole;
        } else {
            s->crc = splade_crc32c(0, data, s->length);
        }
        s->offset = at;
    }
    uint64_t fs = size + hole;
    memcpy(f + offsetof(spx_header, file_size), &fs, 8);
    uint32_t crc = splade_crc32c(0, f, hb - 8);
    memcpy(f + hb - 8, &crc, 4);
    CHECK(pwrite(out, f, hb, 0) == (ssize_t)hb);
    CHECK(ftruncate(out, (off_t)fs) == 0);
    close(out);
    free(f);
}

static int search(splade_index *ix, int algo, splade_hit *h, int k)
{
    int32_t terms[64];
    float w[64];
    for (int i = 0; i < 64; i++) {
        terms[i] = i * 3;
        w[i] = 1.0f + (float)(i % 5);
    }
    splade_qvec q;
    CHECK(splade_qvec_build(terms, w, 64, splade_index_get_info(ix)->n_terms, &q) == 0);
    splade_searcher *s;
    CHECK(splade_searcher_create(ix, &s) == 0);
    int n = 0;
    CHECK(splade_search(s, &q, k, (splade_algo)algo, h, &n) == 0);
    splade_searcher_free(s);
    splade_qvec_free(&q);
    return n;
}

static void bench_sparse(const char *base)
{
    char dir[1024], src[1100], dst[1100];
    snprintf(dir, sizeof dir, "%s/small", base);
    splade_build_stats st;
    build(dir, 20000, 30, 5000, &st);
    snprintf(src, sizeof src, "%s/%s", dir, SPLADE_INDEX_FILE);
    snprintf(dst, sizeof dst, "%s/postings-beyond-4g.spx", base);
    uint64_t hole = (1ull << 32) + 64;
    double t0 = now_s();
    add_postings_hole(src, dst, hole);
    double t1 = now_s();
    splade_index *a, *b;
    CHECK(splade_index_open(src, &a) == 0);
    CHECK(splade_index_open(dst, &b) == 0);
    double t2 = now_s();
    enum { K = 1000 };
    static splade_hit ha[K], hb[K];
    int same = 1, total = 0;
    for (int algo = 0; algo <= SPLADE_ALGO_WMAXSCORE; algo++) {
        int na = search(a, algo, ha, K), nb = search(b, algo, hb, K);
        same &= na == nb && memcmp(ha, hb, (size_t)na * sizeof *ha) == 0;
        total += nb;
    }
    double t3 = now_s();
    printf("postings beyond 4 GiB: %llu postings, file %.2f GB (sparse), block offsets from %llu; write %.2f s, "
           "open (CRC of 4 GiB + block checks) %.2f s, 5 methods x top-%d: %s (%d hits) in %.2f s\n",
           (unsigned long long)st.n_postings, (double)splade_index_get_info(b)->file_bytes / 1e9,
           (unsigned long long)hole, t1 - t0, t2 - t1, K, same ? "identical to the small file" : "DIFFERENT", total,
           t3 - t2);
    splade_index_close(a);
    splade_index_close(b);
    unlink(dst);
    unlink(src);
    rmdir(dir);
    if (!same)
        exit(1);
}

/* The built index reopened: counts as built (64-bit where they exceed 2^31), and the exhaustive
 * method and every pruned one agree on a top-1000 whose corpus ids are all in range. */
static void verify_big(const char *path, const splade_build_stats *st, uint32_t n_docs)
{
    double t0 = now_s();
    splade_index *ix;
    CHECK(splade_index_open(path, &ix) == 0);
    const splade_index_info *info = splade_index_get_info(ix);
    double t1 = now_s();
    CHECK(info->n_postings == st->n_postings && info->n_docs == n_docs);
    enum { K = 1000 };
    static splade_hit ref[K], h[K];
    int nref = search(ix, SPLADE_ALGO_TAAT, ref, K), same = 1;
    for (int algo = 0; algo <= SPLADE_ALGO_WMAXSCORE; algo++) {
        int n = search(ix, algo, h, K);
        same &= n == nref && memcmp(h, ref, (size_t)n * sizeof *h) == 0;
    }
    for (int i = 0; i < nref; i++) {
        size_t len;
        const char *id = splade_index_doc_id(ix, ref[i].doc, &len); /* not NUL-terminated */
        char buf[32];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < 31 ? len : 31), id);
        CHECK(ref[i].doc < n_docs && strtoul(buf, NULL, 10) < n_docs);
    }
    printf("reopened: %llu postings (%s 2^31), %u docs, open %.1f s; 5 methods x top-%d: %s (%d hits) in %.1f s\n",
           (unsigned long long)info->n_postings, info->n_postings > (1ull << 31) ? ">" : "<=", info->n_docs,
           t1 - t0, K, same ? "identical" : "DIFFERENT", nref, now_s() - t1);
    splade_index_close(ix);
    if (!same)
        exit(1);
}

static void bench_memory(const char *base, uint64_t postings)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/mem", base);
    int per_doc = 100;
    uint32_t n_docs = (uint32_t)(postings / (uint64_t)per_doc);
    long before = peak_rss_mb();
    double t0 = now_s();
    splade_build_stats st;
    build(dir, n_docs, per_doc, 30522, &st);
    double t1 = now_s();
    long peak = peak_rss_mb();
    printf("builder: %u docs x %d terms = %llu postings, peak RSS %ld MB (%.1f bytes/posting), %.1f s, file %.2f GB"
           " -> 2^31 postings need ~%.0f GB\n",
           n_docs, per_doc, (unsigned long long)st.n_postings, peak, (double)(peak - before) * 1048576.0 / st.n_postings,
           t1 - t0, (double)st.file_bytes / 1e9, (double)(peak - before) * 1048576.0 / st.n_postings * 2147483648.0 / 1e9);
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", dir, SPLADE_INDEX_FILE);
    verify_big(path, &st, n_docs);
    unlink(path);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    uint64_t postings = 50000000;
    int sparse = 1;
    const char *base = "/tmp";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--postings") && i + 1 < argc)
            postings = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--skip-sparse"))
            sparse = 0;
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            base = argv[++i];
    }
    char dir[800];
    snprintf(dir, sizeof dir, "%.700s/splade_bench_limits_%d", base, (int)getpid());
    CHECK(mkdir(dir, 0755) == 0);
    if (postings) /* first: peak RSS is per process and the sparse step maps 4 GiB */
        bench_memory(dir, postings);
    if (sparse)
        bench_sparse(dir);
    rmdir(dir);
    return 0;
}
