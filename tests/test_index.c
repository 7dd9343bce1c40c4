/* Index writer/reader: checksums, round trip of every section, growing vocabulary, duplicate ids,
 * and damaged files (bad version, truncation, flipped bytes) reported without crashing while the
 * previous index keeps answering. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/format.h"
#include "index/parallel.h"
#include "index/postings.h"
#include "index/reader_internal.h"
#include "index/quantize.h"
#include "index/svb.h"
#include <streamvbyte.h>
#include <streamvbytedelta.h>
#include "splade.h"
#include "splade/index.h"
#include "splade/query.h"
#include "tmp_dir.h"

static void index_path(const char *dir, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, SPLADE_INDEX_FILE);
}

/* Three documents over a growing vocabulary; weights chosen so impacts are easy to state. */
static void build_small(const char *dir, const char *third_token)
{
    splade_index_builder *b;
    assert_int_equal(splade_builder_create(NULL, 0, NULL, &b), 0);
    const char *ids[] = {"a", "b", "c"};
    const char *toks[3][2] = {{"zeta", "alpha"}, {"alpha", "mid"}, {third_token, "zeta"}};
    const float w[3][2] = {{3.0f, 1.5f}, {0.01f, 3.0f}, {2.0f, 1.0f}};
    for (int d = 0; d < 3; d++) {
        uint32_t doc;
        assert_int_equal(splade_builder_add_doc(b, "t", ids[d], d ? "" : "Title A", "body text", d + 1, &doc), 0);
        int32_t terms[2];
        for (int i = 0; i < 2; i++)
            assert_int_equal(splade_builder_term(b, toks[d][i], strlen(toks[d][i]), &terms[i]), 0);
        assert_int_equal(splade_builder_set_vector(b, doc, terms, w[d], 2), 0);
    }
    splade_build_stats st;
    assert_int_equal(splade_builder_write(b, dir, &st), 0);
    assert_int_equal(st.n_docs, 3);
    assert_int_equal(st.n_postings, 6);
    splade_builder_free(b);
}

static void test_crc32c_known_value(void **state)
{
    (void)state;
    assert_int_equal(splade_crc32c(0, "123456789", 9), 0xE3069283u);
    uint32_t part = splade_crc32c(0, "1234", 4);
    assert_int_equal(splade_crc32c(part, "56789", 5), 0xE3069283u);
    assert_int_equal(splade_crc32c(0, "", 0), 0);
}

/* CRC(A B) from CRC(A), CRC(B) and |B|, at every split of a buffer (the writer and the open-time
 * check sum sections in pieces on threads). */
static void test_crc32c_combine(void **state)
{
    (void)state;
    uint8_t buf[777];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 131 + (i >> 3));
    uint32_t whole = splade_crc32c(0, buf, sizeof buf);
    for (size_t cut = 0; cut <= sizeof buf; cut++)
        assert_int_equal(splade_crc32c_combine(splade_crc32c(0, buf, cut), splade_crc32c(0, buf + cut, sizeof buf - cut),
                                               sizeof buf - cut),
                         whole);
    assert_int_equal(splade_crc32c_combine(0, splade_crc32c(0, "123456789", 9), 9), 0xE3069283u);
}

static void test_quantize(void **state)
{
    (void)state;
    assert_int_equal(splade_quantize(3.0f, 3.0f), 255);
    assert_int_equal(splade_quantize(1e-9f, 3.0f), 1); /* never rounds a posting away */
    assert_int_equal(splade_quantize(0.0f, 3.0f), 0);
    assert_int_equal(splade_quantize(1.5f, 3.0f), 128);
    assert_int_equal(splade_quantize(-1.0f, 3.0f), 0);
}

/* The vectorized quantizer of the inversion equals splade_quantize bit for bit, including weights
 * that land exactly on a rounding boundary and the clamps. */
static void test_quantize_many_matches_scalar(void **state)
{
    (void)state;
    enum { N = 4099 };
    static float w[N];
    static uint8_t got[N];
    const float maxes[] = {3.0f, 2.7f, 1.0f, 0.37f, 12345.5f};
    uint64_t x = 99;
    for (int m = 0; m < 5; m++) {
        float max = maxes[m];
        for (int i = 0; i < N; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            w[i] = i % 3 == 0 ? max * (float)((i / 3) % 256) / 255.0f + (i % 2 ? 0.5f : -0.5f) * max / 255.0f
                              : max * (float)(x >> 40) / (float)(1 << 24);
            if (i % 97 == 0)
                w[i] = i % 2 ? 1e-12f : max; /* clamp to 1, exact 255 */
            if (!(w[i] > 0))
                w[i] = 1e-9f;
        }
        splade_quantize_many(w, N, max, got);
        for (int i = 0; i < N; i++)
            if (got[i] != splade_quantize(w[i], max))
                fail_msg("max %g w %.9g: %u vs %u", max, w[i], got[i], splade_quantize(w[i], max));
    }
}

static void test_block_codec_round_trip(void **state)
{
    (void)state;
    uint32_t docs[SPLADE_BLOCK_SIZE], out[SPLADE_BLOCK_SIZE];
    uint8_t imps[SPLADE_BLOCK_SIZE], buf[1024];
    uint32_t d = 1000;
    for (int i = 0; i < SPLADE_BLOCK_SIZE; i++) {
        d += 1 + (uint32_t)(i * 7919) % 100000;
        docs[i] = d;
        imps[i] = (uint8_t)(1 + i);
    }
    size_t n = splade_block_encode(docs, imps, SPLADE_BLOCK_SIZE, 999, buf);
    assert_true(n <= splade_block_max_bytes(SPLADE_BLOCK_SIZE));
    splade_block_decode_docs(buf, SPLADE_BLOCK_SIZE, 999, out);
    assert_memory_equal(docs, out, sizeof docs);
    assert_memory_equal(imps, buf, SPLADE_BLOCK_SIZE);
}

/* Our Stream VByte coder against libstreamvbyte's: every length, byte widths 1..4 mixed,
 * wrap-around deltas, and the exact number of bytes consumed. */
static void test_svb_decoder_matches_library(void **state)
{
    (void)state;
    enum { N = 300 };
    uint32_t in[N] = {0}, out[N + 4];
    uint8_t buf[N * 5 + 64];
    uint64_t x = 12345;
    for (uint32_t count = 0; count <= N; count += count < 20 ? 1 : 37) {
        uint32_t prev = (uint32_t)(x >> 40), v = prev;
        for (uint32_t i = 0; i < count; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t shift = (uint32_t)(x >> 62) * 8; /* gaps of 1..4 bytes */
            v += (uint32_t)(x >> 33) >> (24 - (shift < 24 ? shift : 24));
            in[i] = v;
        }
        memset(buf, 0, sizeof buf);
        size_t n = streamvbyte_delta_encode(in, count, buf, prev);
        uint8_t mine[N * 5 + 64] = {0};
        assert_int_equal(splade_svb_delta_encode(in, count, prev, mine), n);
        assert_memory_equal(mine, buf, n); /* byte for byte the library's format */
        memset(out, 0xAB, sizeof out);
        assert_int_equal(splade_svb_delta_decode(buf, count, prev, out), n);
        assert_memory_equal(in, out, count * sizeof *in);
        assert_int_equal(out[count], 0xABABABABu); /* nothing written past count */
    }
}

/* Byte-by-byte reference of splade_svb_delta_check (the reader's original loop). */
static int check_ref(const uint8_t *in, uint64_t avail, uint32_t count, uint32_t prev, int first_zero_ok,
                     uint64_t limit, uint32_t *last)
{
    uint64_t ctrl = (count + 3u) / 4, cur = prev;
    if (ctrl > avail)
        return 0;
    avail -= ctrl;
    const uint8_t *data = in + ctrl;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t len = ((in[i >> 2] >> ((i & 3) * 2)) & 3) + 1, v = 0;
        if (len > avail)
            return 0;
        memcpy(&v, data, len);
        data += len;
        avail -= len;
        if ((v == 0 && (i || !first_zero_ok)) || (cur += v) >= limit)
            return 0;
    }
    *last = (uint32_t)cur;
    return 1;
}

/* The open-time list check agrees with the byte-by-byte reference on valid lists and on random
 * damage (flipped bytes, short buffers, tight limits). */
static void test_svb_check_matches_reference(void **state)
{
    (void)state;
    uint8_t buf[700 + 16];
    uint32_t vals[128], scratch[128];
    uint64_t x = 7;
    for (int iter = 0; iter < 20000; iter++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t count = (uint32_t)(x >> 33) % 129, prev = (uint32_t)(x >> 20) % 50, v = prev;
        for (uint32_t i = 0; i < count; i++)
            vals[i] = v += 1 + (uint32_t)((x >> (i % 32)) & (i % 3 ? 0xFF : 0xFFFFF));
        memset(buf, 0, sizeof buf);
        uint64_t n = splade_svb_delta_encode(vals, count, prev, buf);
        if (iter % 2) /* damage */
            buf[(x >> 7) % (n + 1)] ^= (uint8_t)(1u << ((x >> 3) % 8));
        uint64_t avail = iter % 5 == 0 && n ? n - (x >> 11) % (n + 1) : n;
        uint64_t limit = iter % 3 == 0 ? v : iter % 3 == 1 ? (uint64_t)v + 1 : UINT32_MAX;
        int fz = (int)(x >> 9) & 1;
        uint32_t l1 = 0, l2 = 0;
        int r1 = check_ref(buf, avail, count, prev, fz, limit, &l1);
        int r2 = splade_svb_delta_check(buf, avail, count, prev, fz, limit, &l2, scratch);
        assert_int_equal(r1, r2);
        if (r1)
            assert_int_equal(l1, l2);
    }
}

static void test_round_trip(void **state)
{
    (void)state;
    char *dir = td_make("splade_test_index");
    build_small(dir, "beta");
    splade_index *ix;
    assert_int_equal(splade_index_open(dir, &ix), 0);
    const splade_index_info *in = splade_index_get_info(ix);
    assert_int_equal(in->n_docs, 3);
    assert_int_equal(in->n_terms, 4);
    assert_true(in->flags & SPLADE_IX_SORTED_VOCAB);
    size_t len;
    const char *t = splade_index_term(ix, 0, &len);
    assert_int_equal(len, 5);
    assert_memory_equal(t, "alpha", 5); /* sorted: alpha beta mid zeta */
    assert_int_equal(splade_index_term_lookup(ix, "mid", 3), 2);
    assert_int_equal(splade_index_term_lookup(ix, "zeta", 4), 3);
    assert_int_equal(splade_index_term_lookup(ix, "nope", 4), -1);
    const char *id = splade_index_doc_id(ix, 2, &len);
    assert_int_equal(len, 1);
    assert_memory_equal(id, "c", 1);
    const char *title, *snip;
    splade_index_doc_text(ix, 0, &title, &snip);
    assert_string_equal(title, "Title A");
    assert_string_equal(snip, "body text");
    splade_term_postings tp;
    splade_index_postings(ix, 0, &tp); /* alpha: docs 0 (1.5) and 1 (0.01) */
    assert_int_equal(tp.n_postings, 2);
    assert_int_equal(tp.n_blocks, 1);
    assert_int_equal(tp.blocks[0].last_doc, 1);
    const uint8_t *blk = tp.postings + tp.blocks[0].offset;
    assert_int_equal(blk[0], 128);
    assert_int_equal(blk[1], 1);
    assert_int_equal(tp.max_impact, 128);
    assert_float_equal(in->doc_scale, 3.0f / 255, 1e-7);
    splade_index_close(ix);
    td_free(dir);
}

static void test_fixed_vocab_lookup(void **state)
{
    (void)state;
    const char *tokens[] = {"[PAD]", "the", "cat", "##s", "the"};
    splade_index_model m = {.name = "toy", .dir = "/models/toy", .fingerprint = 0xABCDEF12345ull,
                            .lowercase = 1, .max_length = 256};
    splade_index_builder *b;
    assert_int_equal(splade_builder_create(tokens, 5, &m, &b), 0);
    uint32_t doc;
    assert_int_equal(splade_builder_add_doc(b, "t", "d0", NULL, "", 1, &doc), 0);
    assert_int_equal(splade_builder_set_vector(b, doc, NULL, NULL, 0), 0); /* empty text */
    int32_t bad_term = 9;
    float w = 1;
    assert_int_equal(splade_builder_set_vector(b, doc, &bad_term, &w, 1), SPLADE_ERR_INVALID_ARG);
    char *dir = td_make("splade_test_index");
    assert_int_equal(splade_builder_write(b, dir, NULL), 0);
    splade_builder_free(b);
    splade_index *ix;
    assert_int_equal(splade_index_open(dir, &ix), 0);
    const splade_index_info *in = splade_index_get_info(ix);
    assert_int_equal(in->fingerprint, 0xABCDEF12345ull);
    assert_string_equal(in->model_name, "toy");
    assert_string_equal(in->model_dir, "/models/toy");
    assert_int_equal(in->max_length, 256);
    assert_true(in->flags & SPLADE_IX_LOWERCASE);
    assert_int_equal(in->n_postings, 0);
    assert_int_equal(splade_index_term_lookup(ix, "cat", 3), 2);
    assert_int_equal(splade_index_term_lookup(ix, "the", 3), 1); /* first id of a repeated token */
    assert_int_equal(splade_index_term_lookup(ix, "dog", 3), -1);
    splade_index_close(ix);
    td_free(dir);
}

/* Threads that share a freshly opened index look tokens up at once: the hash table is built once
 * (under TSan in make test: no race), and every thread gets the right ids. */
enum { LOOKUP_THREADS = 4, LOOKUP_TERMS = 3000 };

static void *lookup_all(void *arg)
{
    splade_index *ix = arg;
    char tok[32];
    for (int t = LOOKUP_TERMS - 1; t >= 0; t--) {
        int n = snprintf(tok, sizeof tok, "w%d", (t * 7919) % LOOKUP_TERMS);
        if (splade_index_term_lookup(ix, tok, (size_t)n) != (t * 7919) % LOOKUP_TERMS)
            return ix; /* non-NULL: a wrong id */
    }
    return splade_index_term_lookup(ix, "absent", 6) == -1 ? NULL : ix;
}

static void test_concurrent_first_lookup(void **state)
{
    (void)state;
    static char words[LOOKUP_TERMS][16];
    const char *tokens[LOOKUP_TERMS];
    for (int t = 0; t < LOOKUP_TERMS; t++) {
        snprintf(words[t], sizeof words[t], "w%d", t);
        tokens[t] = words[t];
    }
    splade_index_model m = {.name = "toy", .fingerprint = 1, .lowercase = 1, .max_length = 8};
    splade_index_builder *b;
    assert_int_equal(splade_builder_create(tokens, LOOKUP_TERMS, &m, &b), 0);
    uint32_t doc;
    int32_t term = 5;
    float w = 1;
    assert_int_equal(splade_builder_add_doc(b, "t", "d0", NULL, "", 1, &doc), 0);
    assert_int_equal(splade_builder_set_vector(b, doc, &term, &w, 1), 0);
    char *dir = td_make("splade_test_index");
    assert_int_equal(splade_builder_write(b, dir, NULL), 0);
    splade_builder_free(b);
    for (int round = 0; round < 8; round++) {
        splade_index *ix;
        assert_int_equal(splade_index_open(dir, &ix), 0);
        assert_false(splade_index_get_info(ix)->flags & SPLADE_IX_SORTED_VOCAB); /* the hashed path */
        pthread_t th[LOOKUP_THREADS];
        for (int i = 0; i < LOOKUP_THREADS; i++)
            assert_int_equal(pthread_create(&th[i], NULL, lookup_all, ix), 0);
        for (int i = 0; i < LOOKUP_THREADS; i++) {
            void *bad;
            pthread_join(th[i], &bad);
            assert_null(bad);
        }
        splade_index_close(ix);
    }
    td_free(dir);
}

static void test_duplicate_id_names_both_lines(void **state)
{
    (void)state;
    splade_index_builder *b;
    assert_int_equal(splade_builder_create(NULL, 0, NULL, &b), 0);
    assert_int_equal(splade_builder_add_doc(b, "c.jsonl", "x", "", "", 4, NULL), 0);
    assert_int_equal(splade_builder_add_doc(b, "c.jsonl", "y", "", "", 5, NULL), 0);
    assert_int_equal(splade_builder_add_doc(b, "c.jsonl", "x", "", "", 9, NULL), SPLADE_ERR_DUPLICATE);
    assert_string_equal(splade_error_detail(), "c.jsonl:9: duplicate id \"x\" (first seen on line 4)");
    splade_builder_free(b);
}

/* The answer of a one-term query, to tell two indexes apart. */
static uint32_t top_doc(splade_index *ix, const char *token)
{
    int32_t t = splade_index_term_lookup(ix, token, strlen(token));
    float w = 1;
    splade_qvec q;
    assert_int_equal(splade_qvec_build(&t, &w, 1, splade_index_get_info(ix)->n_terms, &q), 0);
    splade_searcher *s;
    assert_int_equal(splade_searcher_create(ix, &s), 0);
    splade_hit h[3];
    int n;
    assert_int_equal(splade_search(s, &q, 3, SPLADE_ALGO_BMM, h, &n), 0);
    splade_searcher_free(s);
    splade_qvec_free(&q);
    return n ? h[0].doc : UINT32_MAX;
}

static void copy_file(const char *from, const char *to, long truncate_to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[4096];
    size_t n;
    long total = 0;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
        if (truncate_to >= 0 && total + (long)n > truncate_to)
            n = (size_t)(truncate_to - total);
        fwrite(buf, 1, n, out);
        total += (long)n;
    }
    fclose(in);
    fclose(out);
}

static void patch_byte(const char *path, long off, int xor_mask)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    unsigned char c;
    assert_int_equal(pread(fd, &c, 1, off), 1);
    c ^= (unsigned char)xor_mask;
    assert_int_equal(pwrite(fd, &c, 1, off), 1);
    close(fd);
}

static void expect_open_error(const char *path, int code, const char *needle)
{
    splade_index *ix = (splade_index *)1;
    assert_int_equal(splade_index_open(path, &ix), code);
    assert_null(ix);
    if (!strstr(splade_error_detail(), needle))
        fail_msg("error \"%s\" lacks \"%s\"", splade_error_detail(), needle);
}

static void test_damaged_files_are_rejected(void **state)
{
    (void)state;
    char *dir = td_make("splade_test_index");
    build_small(dir, "beta");
    char good[512], bad[600];
    index_path(dir, good, sizeof good);
    snprintf(bad, sizeof bad, "%s/damaged.spx", dir);
    struct stat st;
    assert_int_equal(stat(good, &st), 0);

    copy_file(good, bad, -1);
    patch_byte(bad, 8, 0x06); /* version 2 -> 4 (and version 1, the previous layout, is refused too) */
    expect_open_error(bad, SPLADE_ERR_VERSION, "version 4 is not supported");
    patch_byte(bad, 8, 0x05);
    expect_open_error(bad, SPLADE_ERR_VERSION, "version 1 is not supported");

    copy_file(good, bad, st.st_size - 40);
    expect_open_error(bad, SPLADE_ERR_FORMAT, "truncated");

    copy_file(good, bad, 20);
    expect_open_error(bad, SPLADE_ERR_FORMAT, "truncated");

    for (long off = 300; off < st.st_size; off += 97) { /* flipped bytes anywhere in the sections */
        copy_file(good, bad, -1);
        patch_byte(bad, off, 0x10);
        splade_index *ix;
        int rc = splade_index_open(bad, &ix);
        if (rc == 0) { /* only padding between sections may change unnoticed */
            splade_index_close(ix);
            continue;
        }
        assert_true(rc == SPLADE_ERR_CHECKSUM);
    }
    copy_file(good, bad, -1);
    patch_byte(bad, 40, 0x01); /* inside the section table */
    expect_open_error(bad, SPLADE_ERR_CHECKSUM, "header checksum");

    unlink(bad);
    splade_index *ix;
    assert_int_equal(splade_index_open(dir, &ix), 0); /* the real index still answers */
    assert_int_equal(top_doc(ix, "mid"), 1);
    splade_index_close(ix);
    td_free(dir);
}

static void test_rebuild_replaces_atomically(void **state)
{
    (void)state;
    char *dir = td_make("splade_test_index");
    build_small(dir, "beta");
    splade_index *old;
    assert_int_equal(splade_index_open(dir, &old), 0);
    build_small(dir, "gamma"); /* replaces the file while `old` is mapped */
    splade_index *cur;
    assert_int_equal(splade_index_open(dir, &cur), 0);
    assert_int_equal(splade_index_term_lookup(cur, "gamma", 5), 1);
    assert_int_equal(splade_index_term_lookup(cur, "beta", 4), -1);
    assert_int_equal(top_doc(old, "beta"), 2); /* the old mapping keeps answering */
    assert_int_equal(top_doc(cur, "gamma"), 2);
    splade_index_close(old);
    splade_index_close(cur);
    char stale[600];
    snprintf(stale, sizeof stale, "%s/.index.spx.tmp-999999999", dir); /* a killed build's leftover */
    FILE *f = fopen(stale, "w");
    assert_non_null(f);
    fclose(f);
    build_small(dir, "beta");
    assert_int_equal(access(stale, F_OK), -1);
    td_free(dir);
}

static void test_missing_index(void **state)
{
    (void)state;
    expect_open_error("/nonexistent/dir", SPLADE_ERR_NOT_FOUND, "no index here");
}

/* Recomputes every section CRC and the header CRC of an index file held in memory. */
static void fix_crcs(uint8_t *f)
{
    spx_header h;
    memcpy(&h, f, sizeof h);
    for (uint32_t i = 0; i < h.n_sections; i++) {
        spx_section sec;
        memcpy(&sec, f + sizeof h + 32u * i, sizeof sec);
        sec.crc = splade_crc32c(0, f + sec.offset, sec.length);
        memcpy(f + sizeof h + 32u * i, &sec, sizeof sec);
    }
    uint32_t crc = splade_crc32c(0, f, h.header_size - 8);
    memcpy(f + h.header_size - 8, &crc, 4);
}

/* Format v2's dense range tables: a term in every document of a 5,000-document collection gets
 * one (and BMP still matches TAAT); a CRC-valid table whose non-zero count disagrees with n_ranges
 * is refused at open. */
static void test_dense_range_table(void **state)
{
    (void)state;
    char *dir = td_make("splade_test_index");
    splade_index_builder *b;
    assert_int_equal(splade_builder_create(NULL, 0, NULL, &b), 0);
    enum { N = 5000 };
    for (uint32_t d = 0; d < N; d++) {
        char id[16];
        snprintf(id, sizeof id, "d%u", d);
        uint32_t doc;
        int32_t t[2];
        float w[2] = {0.5f + (float)(d % 7), 1.0f};
        assert_int_equal(splade_builder_add_doc(b, "t", id, "", "", d + 1, &doc), 0);
        assert_int_equal(splade_builder_term(b, "every", 5, &t[0]), 0);
        assert_int_equal(splade_builder_term(b, d % 100 ? "common" : "rare", d % 100 ? 6 : 4, &t[1]), 0);
        assert_int_equal(splade_builder_set_vector(b, doc, t, w, 2), 0);
    }
    assert_int_equal(splade_builder_write(b, dir, NULL), 0);
    splade_builder_free(b);
    splade_index *ix;
    assert_int_equal(splade_index_open(dir, &ix), 0);
    int32_t every = splade_index_term_lookup(ix, "every", 5), rare = splade_index_term_lookup(ix, "rare", 4);
    splade_term_ranges tr;
    splade_index_ranges(ix, every, &tr);
    assert_true(tr.dense);
    assert_int_equal(tr.n, (N + 63) / 64);
    splade_index_ranges(ix, rare, &tr);
    assert_true(tr.n >= 1 && tr.n <= 50); /* 50 documents */
    assert_int_equal(tr.dense, splade_ranges_dense(tr.n, (N + 63) / 64));
    splade_index_close(ix);

    char path[512], bad[600];
    index_path(dir, path, sizeof path);
    snprintf(bad, sizeof bad, "%s/bad.spx", dir);
    FILE *in = fopen(path, "rb");
    assert_non_null(in);
    fseek(in, 0, SEEK_END);
    size_t size = (size_t)ftell(in);
    fseek(in, 0, SEEK_SET);
    uint8_t *f = malloc(size);
    assert_int_equal(fread(f, 1, size, in), size);
    fclose(in);
    spx_header h;
    memcpy(&h, f, sizeof h);
    uint64_t rt = 0;
    for (uint32_t i = 0; i < h.n_sections; i++) {
        spx_section sec;
        memcpy(&sec, f + sizeof h + 32u * i, sizeof sec);
        rt = sec.id == SEC_RANGE_TERMS ? sec.offset : rt;
    }
    splade_range_term e;
    memcpy(&e, f + rt + (size_t)every * sizeof e, sizeof e);
    assert_int_equal(e.flags, SPLADE_RANGES_DENSE);
    e.n_ranges--; /* one more non-zero byte than announced */
    memcpy(f + rt + (size_t)every * sizeof e, &e, sizeof e);
    fix_crcs(f);
    FILE *o = fopen(bad, "wb");
    assert_int_equal(fwrite(f, 1, size, o), size);
    fclose(o);
    expect_open_error(bad, SPLADE_ERR_FORMAT, "dense range table");
    e.n_ranges++;
    e.flags = 2; /* an unknown flag */
    memcpy(f + rt + (size_t)every * sizeof e, &e, sizeof e);
    fix_crcs(f);
    o = fopen(bad, "wb");
    assert_int_equal(fwrite(f, 1, size, o), size);
    fclose(o);
    expect_open_error(bad, SPLADE_ERR_FORMAT, "range table");
    free(f);
    unlink(bad);
    td_free(dir);
}

/* Reads a whole file. */
static uint8_t *slurp(const char *path, size_t *size)
{
    FILE *in = fopen(path, "rb");
    assert_non_null(in);
    fseek(in, 0, SEEK_END);
    *size = (size_t)ftell(in);
    fseek(in, 0, SEEK_SET);
    uint8_t *f = malloc(*size + 1);
    assert_int_equal(fread(f, 1, *size, in), *size);
    fclose(in);
    return f;
}

static void spit(const char *path, const uint8_t *f, size_t size)
{
    FILE *o = fopen(path, "wb");
    assert_non_null(o);
    assert_int_equal(fwrite(f, 1, size, o), size);
    fclose(o);
}

/* The open-time check on 1 and on 5 threads: the same answer, the same error. */
static void expect_same_open(const char *path, int code, const char *needle)
{
    splade_index *ix = NULL;
    assert_int_equal(splade_index_open(path, &ix), code);
    char serial[1024];
    snprintf(serial, sizeof serial, "%s", code ? splade_error_detail() : "");
    splade_index_close(ix);
    ix = NULL;
    assert_int_equal(splade_index_open_threads(path, 5, &ix), code);
    if (code)
        assert_string_equal(splade_error_detail(), serial);
    splade_index_close(ix);
    if (needle && !strstr(serial, needle))
        fail_msg("error \"%s\" lacks \"%s\"", serial, needle);
}

/* The build on several threads writes sections in pieces (copied and checksummed on threads, CRCs
 * combined) and verifies on threads: with 4 KB pieces, so that every large section spans many,
 * the file is byte-identical for 1, 2 and 7 threads, and a damaged copy is refused by the threaded
 * check exactly as by the serial one (posting block, range table, checksum). */
static void test_threaded_write_and_verify(void **state)
{
    (void)state;
    size_t saved = splade_index_piece_bytes;
    splade_index_piece_bytes = 4096;
    enum { N = 3000, L = 40 };
    char *dirs[3];
    const int threads[3] = {1, 2, 7};
    uint8_t *files[3];
    size_t sizes[3];
    for (int r = 0; r < 3; r++) {
        dirs[r] = td_make("splade_test_index");
        splade_index_builder *b;
        assert_int_equal(splade_builder_create(NULL, 0, NULL, &b), 0);
        uint64_t x = 12345;
        for (uint32_t d = 0; d < N; d++) {
            char id[16], tok[16];
            snprintf(id, sizeof id, "d%u", d);
            uint32_t doc;
            int32_t t[L];
            float w[L];
            assert_int_equal(splade_builder_add_doc(b, "t", id, "", "", d + 1, &doc), 0);
            for (int i = 0; i < L; i++) { /* distinct terms: a topic block of 20, then spread ones */
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                uint32_t term = i < 20 ? (d % 37) * 20 + (uint32_t)i : 1000 + (uint32_t)i * 500 + (uint32_t)(x >> 40) % 500;
                snprintf(tok, sizeof tok, "w%u", term);
                assert_int_equal(splade_builder_term(b, tok, strlen(tok), &t[i]), 0);
                w[i] = 0.05f + (float)((x >> 20) % 1000) / 300.0f;
            }
            assert_int_equal(splade_builder_set_vector(b, doc, t, w, L), 0);
        }
        splade_builder_set_threads(b, threads[r]);
        splade_builder_set_build_time(b, 1700000000); /* byte-identical files need the same time */
        splade_build_stats st;
        assert_int_equal(splade_builder_write(b, dirs[r], &st), 0);
        assert_int_equal(st.n_postings, (uint64_t)N * L);
        splade_builder_free(b);
        char path[512];
        index_path(dirs[r], path, sizeof path);
        files[r] = slurp(path, &sizes[r]);
        assert_true(sizes[r] > 64 * 4096); /* sections of many pieces */
        expect_same_open(path, 0, NULL);
    }
    for (int r = 1; r < 3; r++) {
        assert_int_equal(sizes[r], sizes[0]);
        assert_memory_equal(files[r], files[0], sizes[0]);
    }
    uint8_t *f = files[0];
    spx_header h;
    memcpy(&h, f, sizeof h);
    spx_section sec[SEC_COUNT_] = {0};
    for (uint32_t i = 0; i < h.n_sections; i++) {
        spx_section s;
        memcpy(&s, f + sizeof h + 32u * i, sizeof s);
        sec[s.id] = s;
    }
    char bad[600];
    snprintf(bad, sizeof bad, "%s/bad.spx", dirs[0]);
    uint8_t *g = malloc(sizes[0]);
    /* a doc id gap byte near the end of POSTINGS (the last terms: the last thread's share) */
    memcpy(g, f, sizes[0]);
    g[sec[SEC_POSTINGS].offset + sec[SEC_POSTINGS].length - 40] ^= 0x5a;
    spit(bad, g, sizes[0]);
    expect_same_open(bad, SPLADE_ERR_CHECKSUM, "POSTINGS");
    fix_crcs(g);
    spit(bad, g, sizes[0]);
    expect_same_open(bad, SPLADE_ERR_FORMAT, "posting block");
    /* a sparse range table's n_ranges of the last term, and both kinds of damage at once */
    memcpy(g, f, sizes[0]);
    splade_range_term e;
    uint64_t at = sec[SEC_RANGE_TERMS].offset + sec[SEC_RANGE_TERMS].length - sizeof e;
    memcpy(&e, g + at, sizeof e);
    e.n_ranges += 1000000;
    memcpy(g + at, &e, sizeof e);
    fix_crcs(g);
    spit(bad, g, sizes[0]);
    expect_same_open(bad, SPLADE_ERR_FORMAT, "range table");
    g[sec[SEC_POSTINGS].offset + sec[SEC_POSTINGS].length - 40] ^= 0x5a;
    fix_crcs(g);
    spit(bad, g, sizes[0]);
    expect_same_open(bad, SPLADE_ERR_FORMAT, "posting block"); /* blocks are checked before ranges */
    unlink(bad);
    free(g);
    for (int r = 0; r < 3; r++) {
        free(files[r]);
        td_free(dirs[r]);
    }
    splade_index_piece_bytes = saved;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c_known_value),
        cmocka_unit_test(test_crc32c_combine),
        cmocka_unit_test(test_quantize),
        cmocka_unit_test(test_quantize_many_matches_scalar),
        cmocka_unit_test(test_block_codec_round_trip),
        cmocka_unit_test(test_svb_decoder_matches_library),
        cmocka_unit_test(test_svb_check_matches_reference),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_fixed_vocab_lookup),
        cmocka_unit_test(test_duplicate_id_names_both_lines),
        cmocka_unit_test(test_damaged_files_are_rejected),
        cmocka_unit_test(test_rebuild_replaces_atomically),
        cmocka_unit_test(test_missing_index),
        cmocka_unit_test(test_dense_range_table),
        cmocka_unit_test(test_threaded_write_and_verify),
        cmocka_unit_test(test_concurrent_first_lookup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
