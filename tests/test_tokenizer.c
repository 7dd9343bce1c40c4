/* WordPiece tokenizer against goldens from Hugging Face tokenizers (tools/make_tokenizer_goldens.py):
 * every SciFact document and query, adversarial and random strings (uncased and cased), invalid
 * UTF-8, every code point; plus truncation, error paths and a tiny hand-made vocabulary. Tests
 * that need ../shared (the bert-base-uncased vocabulary, SciFact) skip with a message without it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utf8proc.h>

#include "encoder/normalize.h"
#include "encoder/tokenizer_compat.h"
#include "splade.h"
#include "splade/corpus.h"
#include "splade/tokenizer.h"

#define SHARED "../shared"
#define VOCAB SHARED "/data/bert-base-uncased/vocab.txt"
#define GOLDEN "tests/data/tokenizer/"
#define BIG_MAX (1 << 20)

typedef struct {
    splade_tokenizer *uncased, *cased;
    int32_t *ids; /* BIG_MAX scratch ids */
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->ids = malloc(BIG_MAX * sizeof *f->ids);
    if (access(VOCAB, R_OK) == 0) {
        if (splade_tokenizer_load(VOCAB, 1, &f->uncased) != SPLADE_OK
            || splade_tokenizer_load(VOCAB, 0, &f->cased) != SPLADE_OK) {
            fprintf(stderr, "loading %s: %s\n", VOCAB, splade_error_detail());
            return -1;
        }
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    splade_tokenizer_free(f->uncased);
    splade_tokenizer_free(f->cased);
    free(f->ids);
    free(f);
    return 0;
}

/* Skips (visibly) a test that needs the shared vocabulary when it is absent. */
#define NEED_VOCAB(f)                                                                          \
    do {                                                                                       \
        if (!(f)->uncased) {                                                                   \
            print_message("skipping: %s not found (../shared beside the clone)\n", VOCAB);     \
            skip();                                                                            \
        }                                                                                      \
    } while (0)

static uint64_t fnv1a64(const int32_t *ids, int32_t n, uint64_t h)
{
    for (int32_t i = 0; i < n; i++) {
        uint32_t v = (uint32_t)ids[i];
        for (int b = 0; b < 4; b++)
            h = (h ^ ((v >> (8 * b)) & 0xFF)) * 0x100000001B3ull;
    }
    return h;
}
#define FNV_OFFSET 0xCBF29CE484222325ull

static void print_ids(const char *label, const int32_t *ids, int32_t n)
{
    print_error("%s (%d):", label, n);
    for (int32_t i = 0; i < n; i++)
        print_error(" %d", ids[i]);
    print_error("\n");
}

static int32_t tokenize(const splade_tokenizer *t, const char *text, size_t len, int32_t max_len,
                        int32_t *ids)
{
    int32_t n = -1;
    int rc = splade_tokenize(t, text, len, max_len, ids, &n);
    if (rc != SPLADE_OK)
        print_error("splade_tokenize: %s\n", splade_error_detail());
    assert_int_equal(rc, SPLADE_OK);
    return n;
}

/* ---- golden files ---- */

static json_t *load_golden(const char *name)
{
    json_error_t err;
    char path[256];
    snprintf(path, sizeof path, GOLDEN "%s", name);
    json_t *j = json_load_file(path, JSON_ALLOW_NUL, &err);
    if (!j)
        print_error("%s:%d: %s\n", path, err.line, err.text);
    assert_non_null(j);
    assert_true(json_is_array(j) && json_array_size(j) > 0);
    return j;
}

static int32_t json_ids(const json_t *arr, int32_t *out)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) out[i] = (int32_t)json_integer_value(v);
    return (int32_t)json_array_size(arr);
}

/* Compares ids with the expected ones; prints the text index and both sequences on mismatch. */
static int same_ids(const char *what, size_t index, const int32_t *got, int32_t n,
                    const int32_t *want, int32_t wn)
{
    if (n == wn && memcmp(got, want, (size_t)n * sizeof *got) == 0)
        return 1;
    print_error("%s: first mismatch at text %zu\n", what, index);
    print_ids("  expected", want, wn);
    print_ids("  got     ", got, n);
    return 0;
}

/* The text of a record: "text" (NULs kept) or "hex" bytes. Caller frees. */
static char *record_text(const json_t *rec, size_t *len)
{
    const json_t *t = json_object_get(rec, "text");
    if (t) {
        *len = json_string_length(t);
        char *s = malloc(*len + 1);
        memcpy(s, json_string_value(t), *len + 1);
        return s;
    }
    const char *hex = json_string_value(json_object_get(rec, "hex"));
    *len = strlen(hex) / 2;
    char *s = malloc(*len + 1);
    for (size_t i = 0; i < *len; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        s[i] = (char)v;
    }
    return s;
}

/* Every record of a JSON golden, through one tokenizer, against one ids field. */
static void check_json_golden(fixture *f, const char *file, const char *field,
                              const splade_tokenizer *t)
{
    json_t *root = load_golden(file);
    int32_t *want = malloc(BIG_MAX * sizeof *want);
    size_t i, bad = 0;
    json_t *rec;
    json_array_foreach(root, i, rec) {
        size_t len;
        char *text = record_text(rec, &len);
        int32_t n = tokenize(t, text, len, BIG_MAX, f->ids);
        int32_t wn = json_ids(json_object_get(rec, field), want);
        if (!same_ids(file, i, f->ids, n, want, wn)) {
            print_error("  name: %s, field: %s\n", json_string_value(json_object_get(rec, "name")), field);
            bad++;
        }
        free(text);
        if (bad)
            break;
    }
    free(want);
    json_decref(root);
    assert_int_equal(bad, 0);
}

static void test_adversarial(void **state)
{
    fixture *f = *state;
    NEED_VOCAB(f);
    check_json_golden(f, "adversarial.json", "ids", f->uncased);
    check_json_golden(f, "adversarial.json", "ids_cased", f->cased);
}

static void test_random_unicode(void **state)
{
    fixture *f = *state;
    NEED_VOCAB(f);
    check_json_golden(f, "random.json", "ids", f->uncased);
    check_json_golden(f, "random.json", "ids_cased", f->cased);
}

static void test_invalid_utf8_golden(void **state)
{
    fixture *f = *state;
    NEED_VOCAB(f);
    check_json_golden(f, "invalid_utf8.json", "ids", f->uncased);
    check_json_golden(f, "invalid_utf8.json", "ids_cased", f->cased);
}

static void test_scifact_first100_full(void **state)
{
    fixture *f = *state;
    NEED_VOCAB(f);
    if (access(SHARED "/data/scifact/corpus.jsonl", R_OK) != 0) {
        print_message("skipping: %s/data/scifact/corpus.jsonl not found\n", SHARED);
        skip();
    }
    json_t *root = load_golden("scifact_docs_first100.json");
    splade_corpus_reader *r;
    splade_doc d;
    int32_t *want = malloc(BIG_MAX * sizeof *want);
    assert_int_equal(splade_corpus_open(SHARED "/data/scifact/corpus.jsonl", &r), SPLADE_OK);
    size_t i;
    json_t *rec;
    json_array_foreach(root, i, rec) {
        assert_int_equal(splade_corpus_next(r, &d), 1);
        assert_string_equal(d.id, json_string_value(json_object_get(rec, "id")));
        int32_t n = tokenize(f->uncased, d.text, d.text_len, BIG_MAX, f->ids);
        int32_t wn = json_ids(json_object_get(rec, "ids"), want);
        assert_true(same_ids("scifact_docs_first100.json", i, f->ids, n, want, wn));
    }
    splade_corpus_close(r);
    free(want);
    json_decref(root);
}

/* One SciFact file against its compact golden (id, count, FNV-1a 64 of the ids). */
static void check_scifact(fixture *f, const char *jsonl, const char *tsv)
{
    char path[256];
    snprintf(path, sizeof path, SHARED "/data/scifact/%s", jsonl);
    if (access(path, R_OK) != 0) {
        print_message("skipping: %s not found\n", path);
        skip();
    }
    FILE *g = fopen(tsv, "r");
    assert_non_null(g);
    splade_corpus_reader *r;
    splade_doc d;
    assert_int_equal(splade_corpus_open(path, &r), SPLADE_OK);
    char id[128];
    int wn;
    uint64_t wh;
    size_t i = 0;
    while (fscanf(g, "%127s\t%d\t%" SCNx64, id, &wn, &wh) == 3) {
        assert_int_equal(splade_corpus_next(r, &d), 1);
        assert_string_equal(d.id, id);
        int32_t n = tokenize(f->uncased, d.text, d.text_len, BIG_MAX, f->ids);
        if (n != wn || fnv1a64(f->ids, n, FNV_OFFSET) != wh) {
            print_error("%s: first mismatch at text %zu (id %s): expected %d ids, hash %016" PRIx64
                        " (full ids: python3 tools/make_tokenizer_goldens.py)\n", tsv, i, id, wn, wh);
            print_ids("  got", f->ids, n);
            fail();
        }
        i++;
    }
    assert_int_equal(splade_corpus_next(r, &d), 0); /* the golden covers the whole file */
    assert_true(i > 1000);
    splade_corpus_close(r);
    fclose(g);
}

static void test_scifact_docs(void **state)
{
    fixture *f = *state;
    NEED_VOCAB(f);
    check_scifact(f, "corpus.jsonl", GOLDEN "scifact_docs.tsv");
}

static void test_scifact_queries(void **state)
{
    fixture *f = *state;
    NEED_VOCAB(f);
    check_scifact(f, "queries.jsonl", GOLDEN "scifact_queries.tsv");
}

static size_t put_utf8(char *p, int32_t cp)
{
    return (size_t)utf8proc_encode_char(cp, (utf8proc_uint8_t *)p);
}

/* Hash of "<c> a<c>b" for every code point of a 1024-block, as the golden generator does. */
static uint64_t block_hash(fixture *f, const splade_tokenizer *t, int32_t start)
{
    uint64_t h = FNV_OFFSET;
    for (int32_t cp = start; cp < start + 1024 && cp < 0x110000; cp++) {
        if (cp < 0x80 || (cp >= 0xD800 && cp <= 0xDFFF))
            continue;
        char buf[16];
        size_t n = put_utf8(buf, cp);
        buf[n++] = ' ';
        buf[n++] = 'a';
        n += put_utf8(buf + n, cp);
        buf[n++] = 'b';
        int32_t k = tokenize(t, buf, n, 64, f->ids);
        h = fnv1a64(f->ids, k, h);
    }
    return h;
}

static void test_every_code_point(void **state)
{
    fixture *f = *state;
    NEED_VOCAB(f);
    FILE *g = fopen(GOLDEN "codepoints.tsv", "r");
    assert_non_null(g);
    unsigned start;
    uint64_t hu, hc;
    int blocks = 0, bad = 0;
    while (fscanf(g, "%x\t%" SCNx64 "\t%" SCNx64, &start, &hu, &hc) == 3) {
        if (block_hash(f, f->uncased, (int32_t)start) != hu
            || block_hash(f, f->cased, (int32_t)start) != hc) {
            print_error("code points U+%04X..U+%04X differ from HF (uncased %s, cased %s)\n", start,
                        start + 1023, block_hash(f, f->uncased, (int32_t)start) != hu ? "bad" : "ok",
                        block_hash(f, f->cased, (int32_t)start) != hc ? "bad" : "ok");
            bad++;
        }
        blocks++;
    }
    fclose(g);
    assert_int_equal(blocks, 0x110000 / 1024 - 2); /* the two surrogate blocks have no text */
    assert_int_equal(bad, 0);
}

static void test_compat_tables_match_utf8proc(void **state)
{
    (void)state;
    /* The tables correct utf8proc's Unicode data: measured against one version only. */
    if (strcmp(utf8proc_unicode_version(), splade_compat_unicode_version) != 0)
        print_error("utf8proc has Unicode %s, tables were made for %s: run "
                    "tools/make_tokenizer_compat_table.py\n",
                    utf8proc_unicode_version(), splade_compat_unicode_version);
    assert_string_equal(utf8proc_unicode_version(), splade_compat_unicode_version);
}

/* ---- truncation ---- */

/* Each adversarial text and the first SciFact docs, cut at several max_len: the golden's
 * first max_len - 1 ids, then [SEP]; nothing written past max_len. */
static void check_truncated(fixture *f, const char *text, size_t len, const int32_t *full,
                            int32_t fn, size_t index)
{
    static const int32_t max_lens[] = {2, 3, 4, 5, 7, 16, 64, 128, 512};
    int32_t want[600];
    for (size_t k = 0; k < sizeof max_lens / sizeof *max_lens; k++) {
        int32_t m = max_lens[k], wn = fn <= m ? fn : m;
        memcpy(want, full, (size_t)wn * sizeof *want);
        want[wn - 1] = full[fn - 1];
        f->ids[m] = -777; /* sentinel just past the allowed room */
        int32_t n = tokenize(f->uncased, text, len, m, f->ids);
        if (!same_ids("truncation", index, f->ids, n, want, wn))
            print_error("  max_len %d\n", m);
        assert_true(n == wn && memcmp(f->ids, want, (size_t)n * sizeof *want) == 0);
        assert_int_equal(f->ids[m], -777);
    }
}

static void test_truncation(void **state)
{
    fixture *f = *state;
    NEED_VOCAB(f);
    json_t *root = load_golden("adversarial.json");
    int32_t *full = malloc(BIG_MAX * sizeof *full);
    size_t i, longest = 0;
    json_t *rec;
    json_array_foreach(root, i, rec) {
        size_t len;
        char *text = record_text(rec, &len);
        int32_t fn = json_ids(json_object_get(rec, "ids"), full);
        check_truncated(f, text, len, full, fn, i);
        longest = (size_t)fn > longest ? (size_t)fn : longest;
        free(text);
    }
    assert_true(longest > 512); /* some text really is cut at every max_len */
    free(full);
    json_decref(root);
}

static void test_bad_max_len(void **state)
{
    fixture *f = *state;
    NEED_VOCAB(f);
    int32_t n = 99;
    static const int32_t bad[] = {1, 0, -1, INT32_MIN};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(splade_tokenize(f->uncased, "a", 1, bad[i], f->ids, &n), SPLADE_ERR_INVALID_ARG);
        assert_non_null(strstr(splade_error_detail(), "max_len"));
    }
    assert_int_equal(splade_tokenize(f->uncased, NULL, 1, 8, f->ids, &n), SPLADE_ERR_INVALID_ARG);
    assert_int_equal(splade_tokenize(f->uncased, NULL, 0, 8, f->ids, &n), SPLADE_OK);
    assert_int_equal(n, 2);
}

/* ---- empty input, invalid UTF-8 ---- */

typedef struct {
    const char *text;
    size_t len;
} blank_case;

static void test_empty_and_blank_give_cls_sep(void **state)
{
    fixture *f = *state;
    NEED_VOCAB(f);
    static const blank_case cases[] = {
        {"", 0}, {" ", 1}, {"\t\n\r ", 4}, {"\0\0", 2}, {"\xef\xbf\xbd", 3}, {"\xff\xfe", 2},
        {"\xe3\x80\x80\xc2\xa0", 5}, {"\xe2\x80\x8b\x01\x7f", 5}, {"\xcc\x81", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        for (int cased = 0; cased < 2; cased++) {
            int32_t n = tokenize(cased ? f->cased : f->uncased, cases[i].text, cases[i].len, 8, f->ids);
            if (cased && i == 8) { /* the cased path keeps a lone combining mark */
                assert_int_equal(n, 3);
                continue;
            }
            if (n != 2)
                print_error("case %zu (cased %d): %d ids\n", i, cased, n);
            assert_int_equal(n, 2);
            assert_int_equal(f->ids[0], 101);
            assert_int_equal(f->ids[1], 102);
        }
    }
}

typedef struct {
    const char *bytes;
    size_t len;
    int32_t cp;  /* -1: ill-formed */
    size_t adv;  /* bytes consumed: the maximal subpart when ill-formed */
} utf8_case;

static void test_utf8_decoder(void **state)
{
    (void)state;
    static const utf8_case cases[] = {
        {"a", 1, 'a', 1}, {"\xc3\xa9", 2, 0xE9, 2}, {"\xe2\x82\xac", 3, 0x20AC, 3},
        {"\xf0\x9f\x98\x80", 4, 0x1F600, 4}, {"\xf4\x8f\xbf\xbf", 4, 0x10FFFF, 4},
        {"\x80", 1, -1, 1}, {"\xbf\x80", 2, -1, 1}, {"\xc0\xaf", 2, -1, 1}, {"\xc1\xbf", 2, -1, 1},
        {"\xc3", 1, -1, 1}, {"\xc3(", 2, -1, 1}, {"\xe2\x82", 2, -1, 2}, {"\xe2\x82(", 3, -1, 2},
        {"\xe0\x80\xaf", 3, -1, 1}, {"\xe0\x9f\xbf", 3, -1, 1}, {"\xed\xa0\x80", 3, -1, 1},
        {"\xed\x9f\xbf", 3, 0xD7FF, 3}, {"\xf0\x8f\xbf\xbf", 4, -1, 1}, {"\xf0\x9f\x98", 3, -1, 3},
        {"\xf4\x90\x80\x80", 4, -1, 1}, {"\xf5\x80", 2, -1, 1}, {"\xff", 1, -1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t adv = 0;
        int32_t cp = splade_utf8_next((const unsigned char *)cases[i].bytes, cases[i].len, &adv);
        if (cp != cases[i].cp || adv != cases[i].adv)
            print_error("case %zu: cp %d adv %zu\n", i, cp, adv);
        assert_int_equal(cp, cases[i].cp);
        assert_int_equal(adv, cases[i].adv);
    }
}

/* Invalid bytes vanish (U+FFFD, then dropped) without eating the valid text next to them. */
static void test_invalid_utf8_is_dropped(void **state)
{
    fixture *f = *state;
    NEED_VOCAB(f);
    int32_t want[64], got[64];
    int32_t wn = tokenize(f->uncased, "hello world", 11, 64, want);
    static const char *const variants[] = {"hel\xfflo world", "hello\xc3 world", "hello wor\xe2\x82ld",
                                           "\xf0\x9f\x98hello world\xed\xa0\x80"};
    for (size_t i = 0; i < sizeof variants / sizeof *variants; i++) {
        int32_t n = tokenize(f->uncased, variants[i], strlen(variants[i]), 64, got);
        assert_true(same_ids("invalid utf-8", i, got, n, want, wn));
    }
}

/* ---- vocabulary loading and errors ---- */

static char *temp_vocab(const char *content)
{
    char *path = strdup("/tmp/splade_test_vocabXXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
    close(fd);
    return path;
}

typedef struct {
    const char *content;
    int status;
    const char *in_detail;
} vocab_error_case;

static void test_vocab_errors(void **state)
{
    (void)state;
    splade_tokenizer *t = (splade_tokenizer *)1;
    assert_int_equal(splade_tokenizer_load("/nonexistent/dir/vocab.txt", 1, &t), SPLADE_ERR_NOT_FOUND);
    assert_null(t);
    assert_non_null(strstr(splade_error_detail(), "/nonexistent/dir/vocab.txt"));
    static const vocab_error_case cases[] = {
        {"", SPLADE_ERR_FORMAT, "empty"},
        {"[CLS]\n[SEP]\nhello\n", SPLADE_ERR_FORMAT, "no [UNK]"},
        {"[UNK]\n[SEP]\n", SPLADE_ERR_FORMAT, "no [CLS]"},
        {"[UNK]\n[CLS]\n", SPLADE_ERR_FORMAT, "no [SEP]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *path = temp_vocab(cases[i].content);
        assert_int_equal(splade_tokenizer_load(path, 1, &t), cases[i].status);
        assert_non_null(strstr(splade_error_detail(), path));
        assert_non_null(strstr(splade_error_detail(), cases[i].in_detail));
        unlink(path);
        free(path);
    }
    assert_int_equal(splade_tokenizer_load(NULL, 1, &t), SPLADE_ERR_INVALID_ARG);
    char dir[] = "/tmp";
    assert_int_not_equal(splade_tokenizer_load(dir, 1, &t), SPLADE_OK); /* a directory */
}

typedef struct {
    const char *text;
    int32_t ids[8];
    int32_t n;
} tiny_case;

/* WordPiece semantics on a vocabulary small enough to reason about by hand (no ../shared). */
static void test_tiny_vocab(void **state)
{
    (void)state;
    /* ids: 0 [PAD] 1 [UNK] 2 [CLS] 3 [SEP] 4 [MASK] 5 un 6 ##aff 7 ##able 8 a 9 ##b 10 ##bc
     * 11 x (CRLF line) 12 ! 13 ##c 14 é 15 a (duplicate: wins over id 8) */
    char *path = temp_vocab("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nun\n##aff\n##able\na\n##b\n##bc\n"
                            "x\r\n!\n##c\n\xc3\xa9\na");
    splade_tokenizer *t, *tc;
    assert_int_equal(splade_tokenizer_load(path, 1, &t), SPLADE_OK);
    assert_int_equal(splade_tokenizer_load(path, 0, &tc), SPLADE_OK);
    assert_int_equal(splade_tokenizer_vocab_size(t), 16);
    assert_int_equal(splade_tokenizer_cls_id(t), 2);
    assert_int_equal(splade_tokenizer_sep_id(t), 3);
    assert_int_equal(splade_tokenizer_pad_id(t), 0);
    assert_int_equal(splade_tokenizer_id(t, "x"), 11);
    assert_int_equal(splade_tokenizer_id(t, "##bc"), 10);
    assert_int_equal(splade_tokenizer_id(t, "bc"), -1);
    assert_int_equal(splade_tokenizer_id(t, "a"), 15);
    assert_string_equal(splade_tokenizer_token(t, 10), "##bc");
    assert_string_equal(splade_tokenizer_token(t, 11), "x");
    assert_null(splade_tokenizer_token(t, 16));
    assert_null(splade_tokenizer_token(t, -1));
    static const tiny_case cases[] = {
        {"unaffable", {2, 5, 6, 7, 3}, 5},   {"UnAffAble!", {2, 5, 6, 7, 12, 3}, 6},
        {"abc", {2, 15, 10, 3}, 4},          {"abbc", {2, 15, 9, 10, 3}, 5},
        {"abx", {2, 1, 3}, 3},               {"un [MASK]x", {2, 5, 4, 11, 3}, 5},
        {"\xc3\x89", {2, 1, 3}, 3},          {"E\xcc\x81 x", {2, 1, 11, 3}, 4},
        {"ac", {2, 15, 13, 3}, 4},           {"b", {2, 1, 3}, 3},
    };
    int32_t ids[16];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int32_t n = tokenize(t, cases[i].text, strlen(cases[i].text), 16, ids);
        assert_true(same_ids("tiny vocab", i, ids, n, cases[i].ids, cases[i].n));
    }
    /* cased: "É" stays É (no vocab entry -> [UNK]); "é" matches */
    int32_t n = tokenize(tc, "\xc3\xa9 \xc3\x89", 5, 16, ids);
    assert_true(same_ids("tiny vocab cased", 0, ids, n, (const int32_t[]){2, 14, 1, 3}, 4));
    splade_tokenizer_free(t);
    splade_tokenizer_free(tc);
    unlink(path);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compat_tables_match_utf8proc),
        cmocka_unit_test(test_utf8_decoder),
        cmocka_unit_test(test_vocab_errors),
        cmocka_unit_test(test_tiny_vocab),
        cmocka_unit_test(test_empty_and_blank_give_cls_sep),
        cmocka_unit_test(test_invalid_utf8_is_dropped),
        cmocka_unit_test(test_bad_max_len),
        cmocka_unit_test(test_adversarial),
        cmocka_unit_test(test_random_unicode),
        cmocka_unit_test(test_invalid_utf8_golden),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_scifact_first100_full),
        cmocka_unit_test(test_scifact_docs),
        cmocka_unit_test(test_scifact_queries),
        cmocka_unit_test(test_every_code_point),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
