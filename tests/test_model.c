/* Model loading: splade-tiny, fixture checkpoints in every dtype and naming variant, each kind
 * of broken input (error code + the detail naming file/tensor/field), model resolution. The CPU
 * LM head's cases are in tests/test_lmhead_backends.c (one table for every backend). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "encoder/model_internal.h"
#include "splade.h"
#include "splade/encoder.h"
#include "splade/model.h"
#include "encoder/forward_cpu.h"
#include "encoder/safetensors.h"
#include "model_fixture.h"

#define TINY "cache/splade-tiny"

static int has_file(const char *dir, const char *f)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, f);
    return access(p, R_OK) == 0;
}

static void test_load_splade_tiny(void **state)
{
    (void)state;
    if (!has_file(TINY, "model.safetensors")) {
        printf("SKIP: %s absent (make models)\n", TINY);
        skip();
    }
    splade_model *m, *m2;
    assert_int_equal(splade_model_load(TINY, &m), SPLADE_OK);
    assert_int_equal(m->cfg.hidden_size, 128);
    assert_int_equal(m->cfg.num_layers, 2);
    assert_int_equal(m->cfg.num_heads, 2);
    assert_int_equal(m->cfg.intermediate_size, 512);
    assert_int_equal(m->cfg.vocab_size, 30522);
    assert_int_equal(m->cfg.max_position, 512);
    assert_true(m->cfg.tie_word_embeddings && m->cfg.do_lower_case);
    assert_ptr_equal(m->decoder_w, m->word_emb); /* tied: no decoder tensor in the file */
    assert_non_null(m->tokenizer);
    assert_string_equal(m->dir, TINY);
    assert_int_equal(splade_model_load(TINY, &m2), SPLADE_OK);
    assert_true(m->fingerprint != 0 && m->fingerprint == m2->fingerprint);
    /* The value indexes built before config.json entered the fingerprint carry: 64-wide heads and
     * eps 1e-12 add nothing, so those indexes still open (docs/FORMAT.md, "Model fingerprint"). */
    assert_true(m->fingerprint == 0xe5901d279a6ea352ull);
    splade_model_free(m);
    splade_model_free(m2);
}

/* Runs the forward on a fixed id sequence; dense[FX_V]. */
static void fx_forward(const splade_model *m, float *dense)
{
    int32_t ids[] = {2, 7, 8, 33, 12, 3}, off[] = {0, 6};
    assert_int_equal(splade_forward_cpu(m, ids, off, 1, dense, 1), SPLADE_OK);
}

static splade_model *load_fx(const fx_opts *o, char **dir)
{
    splade_model *m = NULL;
    *dir = fx_make(o);
    assert_non_null(*dir);
    int rc = splade_model_load(*dir, &m);
    if (rc)
        fail_msg("load %s: %s", *dir, splade_error_detail());
    return m;
}

static void test_dtypes_and_names_agree(void **state)
{
    (void)state;
    float ref[FX_V], out[FX_V];
    char *dir;
    splade_model *m = load_fx(&(fx_opts){.lowercase = 1}, &dir);
    assert_float_equal(m->word_emb[0], fx_value("bert.embeddings.word_embeddings.weight", 0), 0);
    fx_forward(m, ref);
    int positive = 0;
    for (int v = 0; v < FX_V; v++)
        positive += ref[v] > 0;
    assert_true(positive > 0);
    splade_model_free(m);
    fx_remove(dir);
    /* F16 / BF16 hold the same (exactly representable) values: bit-identical output. Names
     * without "bert.", old LayerNorm names and an untied copy of the embeddings change nothing. */
    const fx_opts variants[] = {{.dtype = "F16", .lowercase = 1}, {.dtype = "BF16", .lowercase = 1},
                                {.no_prefix = 1, .lowercase = 1}, {.old_ln_names = 1, .lowercase = 1}};
    for (size_t i = 0; i < sizeof variants / sizeof *variants; i++) {
        m = load_fx(&variants[i], &dir);
        fx_forward(m, out);
        assert_memory_equal(ref, out, sizeof ref);
        splade_model_free(m);
        fx_remove(dir);
    }
    m = load_fx(&(fx_opts){.untied = 1, .lowercase = 1}, &dir);
    assert_ptr_not_equal(m->decoder_w, m->word_emb);
    assert_float_equal(m->decoder_w[5], fx_value("cls.predictions.decoder.weight", 5), 0);
    splade_model_free(m);
    fx_remove(dir);
}

static void test_fingerprint_and_lowercase(void **state)
{
    (void)state;
    char *d1, *d2, *d3;
    splade_model *a = load_fx(&(fx_opts){.lowercase = 1}, &d1);
    splade_model *b = load_fx(&(fx_opts){.lowercase = 0}, &d2);
    splade_model *c = load_fx(&(fx_opts){.lowercase = -1}, &d3); /* no tokenizer_config.json */
    assert_true(a->cfg.do_lower_case && !b->cfg.do_lower_case && c->cfg.do_lower_case);
    assert_true(a->fingerprint != b->fingerprint);
    assert_true(a->fingerprint == c->fingerprint);
    splade_model_free(a);
    splade_model_free(b);
    splade_model_free(c);
    fx_remove(d1);
    fx_remove(d2);
    fx_remove(d3);
}

/* Loads a broken fixture: expects `code` and every `needles` substring in the detail. */
static void expect_fail(const fx_opts *o, int code, const char *n1, const char *n2)
{
    char *dir = fx_make(o);
    splade_model *m = (splade_model *)1;
    int rc = splade_model_load(dir, &m);
    const char *d = splade_error_detail();
    printf("  -> %s: %s\n", splade_strerror(rc), d);
    assert_int_equal(rc, code);
    assert_null(m);
    assert_non_null(strstr(d, n1));
    if (n2)
        assert_non_null(strstr(d, n2));
    fx_remove(dir);
}

static void test_bad_inputs(void **state)
{
    (void)state;
    const char *emb = "bert.embeddings.word_embeddings.weight";
    expect_fail(&(fx_opts){.skip = "layer.1.output.dense.bias"}, SPLADE_ERR_MODEL, "missing tensor",
                "bert.encoder.layer.1.output.dense.bias");
    expect_fail(&(fx_opts){.skip = "cls.predictions.bias"}, SPLADE_ERR_MODEL, "model.safetensors",
                "cls.predictions.bias");
    expect_fail(&(fx_opts){.bad_shape = "layer.0.attention.self.key.weight"}, SPLADE_ERR_MODEL,
                "bert.encoder.layer.0.attention.self.key.weight", "[9, 8]");
    expect_fail(&(fx_opts){.bad_shape = emb}, SPLADE_ERR_MODEL, emb, "model.safetensors");
    expect_fail(&(fx_opts){.bad_dtype = "intermediate.dense.weight"}, SPLADE_ERR_MODEL, "dtype I32",
                "bert.encoder.layer.0.intermediate.dense.weight");
    expect_fail(&(fx_opts){.truncate = 2000}, SPLADE_ERR_FORMAT, "model.safetensors", "truncated");
    expect_fail(&(fx_opts){.truncate = 5}, SPLADE_ERR_FORMAT, "model.safetensors", "truncated");
    expect_fail(&(fx_opts){.header_len = 1u << 20}, SPLADE_ERR_FORMAT, "model.safetensors",
                "past the end");
    expect_fail(&(fx_opts){.hidden_act = "gelu_new"}, SPLADE_ERR_UNSUPPORTED, "config.json", "hidden_act");
    expect_fail(&(fx_opts){.hidden_act = "relu"}, SPLADE_ERR_UNSUPPORTED, "hidden_act", "\"relu\"");
    expect_fail(&(fx_opts){.config_text = "{\"hidden_size\": 8,"}, SPLADE_ERR_FORMAT, "config.json", NULL);
    expect_fail(&(fx_opts){.config_text = "{\"hidden_act\": \"gelu\", \"hidden_size\": 8}"}, SPLADE_ERR_MODEL,
                "config.json", "vocab_size");
    expect_fail(&(fx_opts){.config_text = "{\"vocab_size\": \"40\"}"}, SPLADE_ERR_MODEL, "config.json",
                "'vocab_size' is not an integer");
}

static void test_missing_files(void **state)
{
    (void)state;
    splade_model *m;
    assert_int_equal(splade_model_load("/nonexistent/model", &m), SPLADE_ERR_NOT_FOUND);
    assert_non_null(strstr(splade_error_detail(), "/nonexistent/model/config.json"));
    char *dir = fx_make(&(fx_opts){0});
    char p[512];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    unlink(p);
    assert_int_equal(splade_model_load(dir, &m), SPLADE_ERR_NOT_FOUND);
    assert_non_null(strstr(splade_error_detail(), "model.safetensors"));
    fx_safetensors(dir, &(fx_opts){0});
    snprintf(p, sizeof p, "%s/vocab.txt", dir);
    unlink(p);
    assert_int_equal(splade_model_load(dir, &m), SPLADE_ERR_NOT_FOUND);
    assert_non_null(strstr(splade_error_detail(), "vocab.txt"));
    fx_remove(dir);
    snprintf(p, sizeof p, "x");
    assert_int_equal(splade_config_load("/nonexistent/config.json", &(splade_config){0}), SPLADE_ERR_NOT_FOUND);
}

static void test_resolve(void **state)
{
    (void)state;
    char path[4096], *dir = fx_make(&(fx_opts){0});
    splade_model_paths paths = {.cache_dir = "/nonexistent-cache"};
    assert_int_equal(splade_model_resolve(dir, &paths, path, sizeof path), SPLADE_OK);
    assert_string_equal(path, dir);
    paths.default_model = dir;
    assert_int_equal(splade_model_resolve(NULL, &paths, path, sizeof path), SPLADE_OK);
    assert_string_equal(path, dir);
    assert_int_equal(splade_model_resolve("no/such-model", &paths, path, sizeof path), SPLADE_ERR_NOT_FOUND);
    assert_non_null(strstr(splade_error_detail(), "fetch-model"));
    assert_non_null(strstr(splade_error_detail(), "/nonexistent-cache/no/such-model"));
    /* a default that is not there is named with its origin */
    paths = (splade_model_paths){.default_model = "/no/such/dir", .default_origin = "$SPLADE_MODEL"};
    assert_int_equal(splade_model_resolve(NULL, &paths, path, sizeof path), SPLADE_ERR_NOT_FOUND);
    assert_non_null(strstr(splade_error_detail(), "model \"/no/such/dir\" (from $SPLADE_MODEL) not found"));
    /* The cache layout of fetch-model: CACHE/ORG/NAME. */
    char *cache = strdup("/tmp/splade_cache_XXXXXX"), link[4200];
    assert_non_null(mkdtemp(cache));
    snprintf(link, sizeof link, "%s/org", cache);
    mkdir(link, 0755);
    snprintf(link, sizeof link, "%s/org/tiny", cache);
    assert_int_equal(symlink(dir, link), 0);
    paths = (splade_model_paths){.cache_dir = cache};
    assert_int_equal(splade_model_resolve("org/tiny", &paths, path, sizeof path), SPLADE_OK);
    assert_string_equal(path, link);
    /* the library reads no environment: without paths, the cache is not searched */
    setenv("SPLADE_CACHE", cache, 1);
    assert_int_equal(splade_model_resolve("org/tiny", NULL, path, sizeof path), SPLADE_ERR_NOT_FOUND);
    unsetenv("SPLADE_CACHE");
    unlink(link);
    snprintf(link, sizeof link, "%s/org", cache);
    rmdir(link);
    rmdir(cache);
    free(cache);
    if (access("./cache/" SPLADE_DEFAULT_MODEL "/config.json", R_OK) == 0) {
        assert_int_equal(splade_model_resolve(NULL, NULL, path, sizeof path), SPLADE_OK);
        assert_string_equal(path, "./cache/" SPLADE_DEFAULT_MODEL);
    } else {
        assert_int_equal(splade_model_resolve(NULL, NULL, path, sizeof path), SPLADE_ERR_NOT_FOUND);
        assert_non_null(strstr(splade_error_detail(), "make models"));
    }
    fx_remove(dir);
}

static void test_forward_rejects_bad_ids(void **state)
{
    (void)state;
    char *dir;
    splade_model *m = load_fx(&(fx_opts){0}, &dir);
    float dense[FX_V];
    int32_t ids[FX_P + 1] = {2, FX_V, 3}, off[] = {0, 3};
    assert_int_equal(splade_forward_cpu(m, ids, off, 1, dense, 1), SPLADE_ERR_INVALID_ARG);
    assert_non_null(strstr(splade_error_detail(), "outside the vocabulary"));
    memset(ids, 0, sizeof ids);
    off[1] = FX_P + 1; /* longer than max_position */
    assert_int_equal(splade_forward_cpu(m, ids, off, 1, dense, 1), SPLADE_ERR_INVALID_ARG);
    splade_model_free(m);
    fx_remove(dir);
}


static uint64_t fx_fingerprint(const fx_opts *o)
{
    char *dir;
    splade_model *m = load_fx(o, &dir);
    uint64_t f = m->fingerprint;
    splade_model_free(m);
    fx_remove(dir);
    return f;
}

/* config.json values the forward uses but the weights do not fix change the fingerprint. */
static void test_fingerprint_covers_config(void **state)
{
    (void)state;
    uint64_t base = fx_fingerprint(&(fx_opts){.lowercase = 1});
    assert_true(base == fx_fingerprint(&(fx_opts){.lowercase = 1}));
    assert_true(base != fx_fingerprint(&(fx_opts){.lowercase = 1, .config_heads = 4}));
    assert_true(base != fx_fingerprint(&(fx_opts){.lowercase = 1, .config_heads = 1}));
    assert_true(base != fx_fingerprint(&(fx_opts){.lowercase = 1, .config_eps = 1e-5}));
    /* FX_H = 8 is not 64-wide heads: the record is there and an eps of 1e-12 is in it too. */
    assert_true(fx_fingerprint(&(fx_opts){.lowercase = 1, .config_heads = 4}) !=
                fx_fingerprint(&(fx_opts){.lowercase = 1, .config_heads = 4, .config_eps = 1e-6}));
}

/* Every tensor of the checkpoint must be used, but for HF's documented extras. */
static void test_unused_tensors(void **state)
{
    (void)state;
    expect_fail(&(fx_opts){.config_layers = 1}, SPLADE_ERR_MODEL,
                "16 tensors the model does not use, the first 'bert.encoder.layer.1.attention.self.query.weight'",
                "model.safetensors");
    expect_fail(&(fx_opts){.extra = "bert.encoder.layer.0.extra.bias"}, SPLADE_ERR_MODEL,
                "1 tensor the model does not use, the first 'bert.encoder.layer.0.extra.bias'", NULL);
    /* a decoder bias copy that differs from cls.predictions.bias (fx_value draws by name) */
    expect_fail(&(fx_opts){.extra = "cls.predictions.decoder.bias"}, SPLADE_ERR_MODEL,
                "'cls.predictions.decoder.bias'", NULL);
    const char *allowed[] = {"bert.embeddings.position_ids", "bert.pooler.dense.bias", "cls.seq_relationship.bias"};
    for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++) {
        char *dir;
        splade_model *m = load_fx(&(fx_opts){.extra = allowed[i]}, &dir);
        splade_model_free(m);
        fx_remove(dir);
    }
}

/* NaN in any weight is refused at load (it would make every vector silently empty). */
static void test_nonfinite_weights(void **state)
{
    (void)state;
    expect_fail(&(fx_opts){.nan_tensor = "layer.1.output.dense.bias"}, SPLADE_ERR_MODEL,
                "'bert.encoder.layer.1.output.dense.bias' holds a non-finite value (NaN) at element 1",
                "model.safetensors");
    expect_fail(&(fx_opts){.nan_tensor = "word_embeddings", .dtype = "F16"}, SPLADE_ERR_MODEL,
                "word_embeddings.weight' holds a non-finite value (NaN)", NULL);
}

/* Finite weights can still overflow: an Inf that comes out of the model fails the encode,
 * naming the model folder and the document (the bias is patched after the load check). */
static void test_nonfinite_output(void **state)
{
    (void)state;
    char *dir;
    splade_model *m = load_fx(&(fx_opts){.lowercase = 1}, &dir);
    float bias[FX_V], *saved = m->decoder_b;
    memcpy(bias, saved, sizeof bias);
    splade_encoder *e;
    splade_encoder_opts o = {.device = SPLADE_DEVICE_CPU, .quiet = 1};
    assert_int_equal(splade_encoder_create(m, &o, &e), SPLADE_OK);
    const char *texts[] = {"a b", "c d e f g"};
    splade_sparse v[2];
    int rc = splade_encoder_encode(e, texts, NULL, 2, v, NULL);
    if (rc)
        fail_msg("%s", splade_error_detail());
    splade_sparse_free(&v[0]);
    splade_sparse_free(&v[1]);
    bias[7] = INFINITY; /* past the load check: stands in for an overflow inside the forward */
    m->decoder_b = bias;
    rc = splade_encoder_encode(e, texts, NULL, 2, v, NULL);
    printf("  -> %s\n", splade_error_detail());
    assert_int_equal(rc, SPLADE_ERR_MODEL);
    assert_non_null(strstr(splade_error_detail(), dir));
    /* the longer text runs first: it is the one named */
    assert_non_null(strstr(splade_error_detail(), "produced non-finite values (NaN/Inf) for document 1"));
    m->decoder_b = saved;
    splade_encoder_free(e);
    splade_model_free(m);
    fx_remove(dir);
}

/* Writes a safetensors file of `header` (padded to 8 bytes) and `data_len` data bytes. */
static void write_st(const char *path, const char *header, size_t data_len)
{
    size_t len = strlen(header), padded = (len + 7) / 8 * 8;
    uint64_t hl = padded;
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(&hl, 8, 1, f);
    fwrite(header, 1, len, f);
    for (size_t i = len; i < padded; i++)
        fputc(' ', f);
    for (size_t i = 0; i < data_len; i++)
        fputc(0, f);
    fclose(f);
}

static void expect_st(const char *header, size_t data_len, const char *needle)
{
    char path[] = "/tmp/splade_st_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_st(path, header, data_len);
    st_file f;
    int rc = st_open(path, &f);
    if (!needle) {
        assert_int_equal(rc, SPLADE_OK);
        st_close(&f);
    } else {
        printf("  -> %s\n", splade_error_detail());
        assert_int_equal(rc, SPLADE_ERR_FORMAT);
        assert_non_null(strstr(splade_error_detail(), needle));
        assert_non_null(strstr(splade_error_detail(), path));
    }
    unlink(path);
}

/* The reference implementation's rules: offsets tile the data block exactly; no duplicate keys. */
static void test_safetensors_layout(void **state)
{
    (void)state;
#define T(name, b, e, n) "\"" name "\":{\"dtype\":\"F32\",\"shape\":[" #n "],\"data_offsets\":[" #b "," #e "]}"
    expect_st("{" T("a", 0, 8, 2) "," T("b", 8, 16, 2) "}", 16, NULL);
    expect_st("{" T("b", 8, 16, 2) "," T("a", 0, 8, 2) "," T("z", 16, 16, 0) "}", 16, NULL); /* any order; empty */
    expect_st("{" T("a", 0, 8, 2) "," T("b", 4, 12, 2) "}", 12, "tensor 'b': data_offsets begin at 4, expected 8");
    expect_st("{" T("a", 0, 8, 2) "," T("b", 0, 8, 2) "}", 8, "begin at 0, expected 8");    /* aliased */
    expect_st("{" T("a", 0, 8, 2) "," T("b", 12, 16, 1) "}", 16, "begin at 12, expected 8"); /* gap */
    expect_st("{" T("a", 4, 8, 1) "}", 8, "begin at 4, expected 0");
    expect_st("{" T("a", 0, 8, 2) "}", 12, "the tensors cover 8 of the 12 bytes");            /* trailing */
    expect_st("{" T("a", 0, 8, 2) "," T("a", 0, 8, 2) "}", 8, "duplicate");
#undef T
}

/* Loads dir after `file` was replaced by what `make` creates; expects code and needle. */
static void expect_file_fail(const char *dir, const char *file, int (*make)(const char *), int code,
                             const char *needle)
{
    char path[512], keep[520];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    snprintf(keep, sizeof keep, "%s.keep", path);
    assert_int_equal(rename(path, keep), 0);
    assert_int_equal(make(path), 0);
    splade_model *m = NULL;
    alarm(20); /* a FIFO or an endless file used to hang the loader: fail visibly instead */
    int rc = splade_model_load(dir, &m);
    alarm(0);
    printf("  -> %s: %s\n", splade_strerror(rc), splade_error_detail());
    assert_int_equal(rc, code);
    assert_null(m);
    assert_non_null(strstr(splade_error_detail(), path));
    assert_non_null(strstr(splade_error_detail(), needle));
    remove(path);
    assert_int_equal(rename(keep, path), 0);
}

static int make_fifo(const char *p) { return mkfifo(p, 0600); }
static int make_urandom(const char *p) { return symlink("/dev/urandom", p); }
static int make_dir(const char *p) { return mkdir(p, 0700); }
static int make_65mib(const char *p)
{
    FILE *f = fopen(p, "wb");
    return f ? fclose(f) | truncate(p, 65L << 20) : -1; /* sparse: no disk used */
}
static int make_2mib(const char *p)
{
    FILE *f = fopen(p, "wb");
    return f ? fclose(f) | truncate(p, 2L << 20) : -1;
}
static int make_dup_config(const char *p)
{
    FILE *f = fopen(p, "wb");
    if (!f)
        return -1;
    fprintf(f, "{\"hidden_act\": \"gelu\", \"hidden_size\": %d, \"num_hidden_layers\": %d, \"num_attention_heads\": %d,"
               " \"intermediate_size\": %d, \"max_position_embeddings\": %d, \"vocab_size\": %d,"
               " \"num_attention_heads\": 4}\n", FX_H, FX_L, FX_HEADS, FX_I, FX_P, FX_V);
    return fclose(f);
}
static int make_strip_accents(const char *p)
{
    FILE *f = fopen(p, "wb");
    return f ? (fputs("{\"do_lower_case\": true, \"strip_accents\": false}", f) < 0) | fclose(f) : -1;
}

/* Model files must be regular files within their size limits; duplicate JSON keys and tokenizer
 * settings the tokenizer does not implement are refused. The intact folder loads afterwards. */
static void test_model_file_checks(void **state)
{
    (void)state;
    char *dir = fx_make(&(fx_opts){.lowercase = 1});
    expect_file_fail(dir, "model.safetensors", make_fifo, SPLADE_ERR_FORMAT, "not a regular file");
    expect_file_fail(dir, "vocab.txt", make_fifo, SPLADE_ERR_FORMAT, "not a regular file");
    expect_file_fail(dir, "vocab.txt", make_urandom, SPLADE_ERR_FORMAT, "not a regular file");
    expect_file_fail(dir, "config.json", make_fifo, SPLADE_ERR_FORMAT, "not a regular file");
    expect_file_fail(dir, "tokenizer_config.json", make_urandom, SPLADE_ERR_FORMAT, "not a regular file");
    expect_file_fail(dir, "model.safetensors", make_dir, SPLADE_ERR_FORMAT, "not a regular file");
    expect_file_fail(dir, "vocab.txt", make_65mib, SPLADE_ERR_FORMAT, "over the limit of 67108864");
    expect_file_fail(dir, "config.json", make_2mib, SPLADE_ERR_FORMAT, "over the limit of 1048576");
    expect_file_fail(dir, "tokenizer_config.json", make_2mib, SPLADE_ERR_FORMAT, "over the limit");
    expect_file_fail(dir, "config.json", make_dup_config, SPLADE_ERR_FORMAT, "duplicate object key");
    expect_file_fail(dir, "tokenizer_config.json", make_strip_accents, SPLADE_ERR_UNSUPPORTED,
                     "field 'strip_accents' is false");
    splade_model *m;
    assert_int_equal(splade_model_load(dir, &m), SPLADE_OK);
    splade_model_free(m);
    fx_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_splade_tiny),      cmocka_unit_test(test_dtypes_and_names_agree),
        cmocka_unit_test(test_fingerprint_and_lowercase), cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_missing_files),         cmocka_unit_test(test_resolve),
        cmocka_unit_test(test_forward_rejects_bad_ids),
        cmocka_unit_test(test_fingerprint_covers_config), cmocka_unit_test(test_unused_tensors),
        cmocka_unit_test(test_nonfinite_weights),     cmocka_unit_test(test_nonfinite_output),
        cmocka_unit_test(test_safetensors_layout),    cmocka_unit_test(test_model_file_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
