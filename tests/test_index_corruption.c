/* The corruption campaign (issue 9): one-byte changes of an index file at seeded random offsets,
 * opened like `query` opens them and queried with every top-k method.
 *  - as stored (CRCs left alone): every trial is refused at open with an error naming the file,
 *    or answers exactly like the original (a change in the zero padding between sections);
 *  - with every section CRC and the header CRC recomputed after the change, so the structural
 *    checks behind the checksums are what is tested: refused, identical, or — where the byte is
 *    free data that no check can know (a doc id's or a term's characters, an impact, doc_scale) —
 *    different answers that are still well formed: the five methods agree on every query
 *    (pruning bounds consistent with the postings), ranks ascending, scores finite and >= 0.
 * Never a crash (also run under ASan+UBSan by `make test`). Figures: docs/HARDENING.md.
 * Also: a CRC-valid META doc_scale that is NaN, infinite or negative is refused naming the field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/format.h"
#include "index/reader_internal.h"
#include "index_image.h"
#include "splade.h"
#include "splade/index.h"
#include "splade/query.h"

enum { N_DOCS = 400, N_TOKENS = 60, N_QUERIES = 12, K = 20, N_ALGOS = SPLADE_ALGO_AUTO + 1 };

static int trials(void)
{
    const char *e = getenv("SPLADE_CORRUPTION_TRIALS"); /* more for a longer campaign */
    return e && atoi(e) > 0 ? atoi(e) : 400;
}

/* A deterministic generator (the campaign must be repeatable). */
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

typedef struct {
    char dir[64], good[128], bad[128];
    uint8_t *file;
    size_t size;
} fixture;

/* N_DOCS documents over N_TOKENS tokens (Zipf-like, so some terms span several blocks and ranges),
 * ids and titles of several lengths, some documents empty. */
static void build_index(fixture *fx)
{
    rng = 0x9E3779B97F4A7C15ull; /* the same index every time */
    snprintf(fx->dir, sizeof fx->dir, "/tmp/splade_test_corruptXXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    splade_index_builder *b;
    assert_int_equal(splade_builder_create(NULL, 0, NULL, &b), 0);
    for (int d = 0; d < N_DOCS; d++) {
        char id[32], tok[16];
        snprintf(id, sizeof id, "doc-%d%s", d, d % 9 ? "" : "-long-identifier");
        uint32_t doc;
        assert_int_equal(splade_builder_add_doc(b, "t", id, d % 5 ? "" : "A title", "some text", d + 1, &doc), 0);
        int32_t terms[12];
        float w[12];
        int n = 0;
        for (int i = 0; i < 12 && d % 13 != 7; i++) {
            uint32_t r = next_rand();
            int t = (int)((double)(r % 1000) / 1000.0 * (r % 1000) / 1000.0 * N_TOKENS);
            snprintf(tok, sizeof tok, "tok%d", t);
            int32_t id32;
            assert_int_equal(splade_builder_term(b, tok, strlen(tok), &id32), 0);
            int dup = 0;
            for (int j = 0; j < n; j++)
                dup |= terms[j] == id32;
            if (!dup) {
                terms[n] = id32;
                w[n++] = 0.05f + (float)(next_rand() % 3000) / 1000.0f;
            }
        }
        assert_int_equal(splade_builder_set_vector(b, doc, terms, w, n), 0);
    }
    assert_int_equal(splade_builder_write(b, fx->dir, NULL), 0);
    splade_builder_free(b);
    snprintf(fx->good, sizeof fx->good, "%s/%s", fx->dir, SPLADE_INDEX_FILE);
    snprintf(fx->bad, sizeof fx->bad, "%s/damaged.spx", fx->dir);
    FILE *f = fopen(fx->good, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    fx->size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    fx->file = malloc(fx->size);
    assert_int_equal(fread(fx->file, 1, fx->size, f), fx->size);
    fclose(f);
}

static void free_fixture(fixture *fx)
{
    unlink(fx->bad);
    unlink(fx->good);
    rmdir(fx->dir);
    free(fx->file);
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, size, f), size);
    assert_int_equal(fclose(f), 0);
}

/* The section holding byte `off` ("padding"/"header" otherwise), from the undamaged file. */
static const char *where(const fixture *fx, size_t off)
{
    static const char *names[] = {"?", "META", "VOCAB", "TERMS", "BLOCKS", "POSTINGS",
                                  "DOCIDS", "DOCSTORE", "RANGE_TERMS", "RANGES"};
    spx_header h;
    memcpy(&h, fx->file, sizeof h);
    if (off < h.header_size)
        return "header";
    for (uint32_t i = 0; i < h.n_sections; i++) {
        spx_section s;
        memcpy(&s, fx->file + sizeof h + 32u * i, sizeof s);
        if (off >= s.offset && off < s.offset + s.length)
            return s.id < SEC_COUNT_ ? names[s.id] : "?";
    }
    return "padding";
}

/* Query q: a few tokens of the collection with weights, looked up like `query --vector-queries`. */
static void make_query(splade_index *ix, int q, splade_qvec *out)
{
    int32_t terms[6];
    float w[6];
    int n = 0;
    for (int i = 0; i < 6; i++) {
        char tok[16];
        snprintf(tok, sizeof tok, "tok%d", (q * 7 + i * i * 3) % N_TOKENS);
        int32_t t = splade_index_term_lookup(ix, tok, strlen(tok));
        if (t >= 0) {
            terms[n] = t;
            w[n++] = 0.2f + 0.3f * (float)((q + i) % 4);
        }
    }
    assert_int_equal(splade_qvec_build(terms, w, n, splade_index_get_info(ix)->n_terms, out), 0);
}

/* Every query's TREC lines (as `query` prints them) with method `algo`, appended to out. Returns 0
 * if the run is well formed (ranks ascending from 1, scores finite, >= 0 and non-increasing). */
static int trec_lines(splade_index *ix, splade_algo algo, char **out, size_t *len)
{
    FILE *f = open_memstream(out, len);
    assert_non_null(f);
    splade_searcher *s;
    assert_int_equal(splade_searcher_create(ix, &s), 0);
    int ok = 1;
    for (int q = 0; q < N_QUERIES; q++) {
        splade_qvec qv;
        make_query(ix, q, &qv);
        splade_hit hits[K];
        int n = 0;
        assert_int_equal(splade_search(s, &qv, K, algo, hits, &n), 0);
        double prev = INFINITY;
        for (int i = 0; i < n; i++) {
            size_t idlen;
            const char *id = splade_index_doc_id(ix, hits[i].doc, &idlen);
            double score = splade_hit_score(ix, &qv, hits[i].score);
            ok &= isfinite(score) && score >= 0 && score <= prev && hits[i].doc < splade_index_get_info(ix)->n_docs;
            prev = score;
            fprintf(f, "q%d Q0 %.*s %d %.9g splade\n", q, (int)idlen, id, i + 1, score);
        }
        splade_qvec_free(&qv);
    }
    splade_searcher_free(s);
    fclose(f);
    return ok;
}

/* The verdict of the lean open (merge.c's verification of a new segment: the same checks, releasing
 * pages as they go), through a descriptor, on 2 threads. */
static int lean_verdict(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    splade_index *ix;
    int rc = splade_index_open_fd_lean(fd, path, 2, &ix);
    if (rc == 0)
        splade_index_close(ix);
    close(fd);
    return rc;
}

typedef struct {
    int refused, identical, different;
    char diff_where[256];
} tally;

/* Opens the damaged file and classifies it; fails the test on a run that is neither refused nor
 * identical (strict) / consistent (recomputed CRCs). */
static void trial(const fixture *fx, const char *ref, int strict, size_t off, tally *t)
{
    splade_index *ix;
    int rc = splade_index_open(fx->bad, &ix);
    int lean = lean_verdict(fx->bad);
    if (lean != (rc < 0 ? rc : 0))
        fail_msg("offset %zu (%s): the lean open says %d, the open %d", off, where(fx, off), lean, rc);
    if (rc < 0) {
        if (!strstr(splade_error_detail(), fx->bad) || rc == SPLADE_ERR_NOMEM)
            fail_msg("offset %zu (%s): refused with %d but the error \"%s\" does not name the file", off,
                     where(fx, off), rc, splade_error_detail());
        t->refused++;
        return;
    }
    char *runs[N_ALGOS];
    size_t lens[N_ALGOS];
    int well_formed = 1;
    for (int a = 0; a < N_ALGOS; a++)
        well_formed &= trec_lines(ix, (splade_algo)a, &runs[a], &lens[a]);
    splade_index_close(ix);
    int same = 1, agree = well_formed;
    for (int a = 0; a < N_ALGOS; a++) {
        same &= strcmp(runs[a], ref) == 0;
        agree &= strcmp(runs[a], runs[0]) == 0;
    }
    if (same) {
        t->identical++;
    } else if (strict || !agree) {
        fail_msg("offset %zu (%s, %s CRCs): opened, and %s:\n%.400s", off, where(fx, off),
                 strict ? "stored" : "recomputed", agree ? "answers differently" : "the methods disagree or the run is malformed",
                 runs[0]);
    } else {
        t->different++;
        const char *w = where(fx, off);
        if (!strstr(t->diff_where, w) && strlen(t->diff_where) + strlen(w) + 2 < sizeof t->diff_where)
            strcat(strcat(t->diff_where, t->diff_where[0] ? " " : ""), w);
    }
    for (int a = 0; a < N_ALGOS; a++)
        free(runs[a]);
}

static void campaign(int recompute)
{
    fixture fx;
    build_index(&fx);
    splade_index *ix;
    assert_int_equal(splade_index_open(fx.good, &ix), 0);
    char *ref;
    size_t ref_len;
    assert_true(trec_lines(ix, SPLADE_ALGO_TAAT, &ref, &ref_len));
    assert_true(ref_len > 1000); /* the queries find documents: a damaged file has something to get wrong */
    splade_index_close(ix);
    rng = recompute ? 0xC0FFEE1234567ull : 0x5EED5EED5EEDull;
    uint8_t *g = malloc(fx.size);
    tally t = {0};
    int n = trials();
    for (int i = 0; i < n; i++) {
        size_t off = next_rand() % fx.size;
        memcpy(g, fx.file, fx.size);
        g[off] ^= (uint8_t)(1 + next_rand() % 255); /* a different byte */
        if (recompute)
            spx_image_fix_crcs(g, fx.size);
        write_file(fx.bad, g, fx.size);
        trial(&fx, ref, !recompute, off, &t);
    }
    printf("corruption campaign, %s CRCs: %d one-byte changes of a %zu-byte index: %d refused at open, %d "
           "identical answers, %d different but consistent answers (bytes in: %s), 0 crashes\n",
           recompute ? "recomputed" : "stored", n, fx.size, t.refused, t.identical, t.different,
           t.different ? t.diff_where : "-");
    assert_int_equal(t.refused + t.identical + t.different, n);
    free(g);
    free(ref);
    free_fixture(&fx);
}

static void test_campaign_stored_crcs(void **state)
{
    (void)state;
    campaign(0);
}

static void test_campaign_recomputed_crcs(void **state)
{
    (void)state;
    campaign(1);
}

/* A META doc_scale that passes the CRC but is not a finite number >= 0 would print "nan"/"inf" or
 * negative scores: refused at open, naming the field. */
static void test_bad_doc_scale_refused(void **state)
{
    (void)state;
    fixture fx;
    build_index(&fx);
    spx_header h;
    memcpy(&h, fx.file, sizeof h);
    uint64_t meta = 0;
    for (uint32_t i = 0; i < h.n_sections; i++) {
        spx_section s;
        memcpy(&s, fx.file + sizeof h + 32u * i, sizeof s);
        meta = s.id == SEC_META ? s.offset : meta;
    }
    assert_true(meta > 0);
    const float bad[] = {NAN, INFINITY, -INFINITY, -0.5f};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint8_t *g = malloc(fx.size);
        memcpy(g, fx.file, fx.size);
        memcpy(g + meta + offsetof(spx_meta, doc_scale), &bad[i], 4);
        spx_image_fix_crcs(g, fx.size);
        write_file(fx.bad, g, fx.size);
        free(g);
        splade_index *ix = (splade_index *)1;
        assert_int_equal(splade_index_open(fx.bad, &ix), SPLADE_ERR_FORMAT);
        assert_null(ix);
        if (!strstr(splade_error_detail(), "doc_scale") || !strstr(splade_error_detail(), fx.bad))
            fail_msg("doc_scale %g: error \"%s\" does not name the field and the file", (double)bad[i],
                     splade_error_detail());
    }
    splade_index *ix;
    assert_int_equal(splade_index_open(fx.good, &ix), 0); /* the check does not refuse a good file */
    assert_true(splade_index_get_info(ix)->doc_scale > 0);
    splade_index_close(ix);
    free_fixture(&fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_doc_scale_refused),
        cmocka_unit_test(test_campaign_stored_crcs),
        cmocka_unit_test(test_campaign_recomputed_crcs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
