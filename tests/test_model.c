/* Model loading: splade-tiny, fixture checkpoints in every dtype and naming variant, each kind
 * of broken input (error code + the detail naming file/tensor/field), model resolution, and
 * the CPU LM head against a naive double-precision reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "splade.h"
#include "splade/lmhead.h"
#include "splade/model.h"
#include "encoder/forward_cpu.h"
#include "lmhead_fused/lmhead_cpu_internal.h"
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
    setenv("SPLADE_CACHE", "/nonexistent-cache", 1);
    assert_int_equal(splade_model_resolve(dir, path, sizeof path), SPLADE_OK);
    assert_string_equal(path, dir);
    setenv("SPLADE_MODEL", dir, 1);
    assert_int_equal(splade_model_resolve(NULL, path, sizeof path), SPLADE_OK);
    assert_string_equal(path, dir);
    assert_int_equal(splade_model_resolve("no/such-model", path, sizeof path), SPLADE_ERR_NOT_FOUND);
    assert_non_null(strstr(splade_error_detail(), "fetch-model"));
    assert_non_null(strstr(splade_error_detail(), "/nonexistent-cache/no/such-model"));
    unsetenv("SPLADE_MODEL");
    /* The cache layout of fetch-model: $SPLADE_CACHE/ORG/NAME. */
    char *cache = strdup("/tmp/splade_cache_XXXXXX"), link[4200];
    assert_non_null(mkdtemp(cache));
    snprintf(link, sizeof link, "%s/org", cache);
    mkdir(link, 0755);
    snprintf(link, sizeof link, "%s/org/tiny", cache);
    assert_int_equal(symlink(dir, link), 0);
    setenv("SPLADE_CACHE", cache, 1);
    assert_int_equal(splade_model_resolve("org/tiny", path, sizeof path), SPLADE_OK);
    assert_string_equal(path, link);
    unlink(link);
    snprintf(link, sizeof link, "%s/org", cache);
    rmdir(link);
    rmdir(cache);
    free(cache);
    if (access("./cache/" SPLADE_DEFAULT_MODEL "/config.json", R_OK) == 0) {
        assert_int_equal(splade_model_resolve(NULL, path, sizeof path), SPLADE_OK);
        assert_string_equal(path, "./cache/" SPLADE_DEFAULT_MODEL);
    } else {
        assert_int_equal(splade_model_resolve(NULL, path, sizeof path), SPLADE_ERR_NOT_FOUND);
        assert_non_null(strstr(splade_error_detail(), "make models"));
    }
    unsetenv("SPLADE_CACHE");
    fx_remove(dir);
}

/* ---- LM head vs a naive double-precision reference ----------------------------------- */

static float frand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*s >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

static void naive_head(const float *H, const int32_t *st, const int32_t *len, int B, int D, const float *W,
                       const float *bias, int V, double *out)
{
    for (int b = 0; b < B; b++)
        for (int v = 0; v < V; v++) {
            double best = 0.0; /* log1p(relu(.)) >= 0: an empty sequence gives 0 */
            for (int s = 0; s < len[b]; s++) {
                double x = bias[v];
                for (int d = 0; d < D; d++)
                    x += (double)H[(size_t)(st[b] + s) * D + d] * W[(size_t)v * D + d];
                double y = log1p(x > 0 ? x : 0);
                best = y > best ? y : best;
            }
            out[(size_t)b * V + v] = best;
        }
}

static void check_head(int B, const int32_t *st, const int32_t *len, int rows, int D, int V, int threads)
{
    uint64_t s = (uint64_t)(B * 131 + D * 7 + V);
    float *H = malloc((size_t)rows * D * sizeof *H), *W = malloc((size_t)V * D * sizeof *W);
    float *bias = malloc((size_t)V * sizeof *bias), *out = malloc((size_t)B * V * sizeof *out);
    double *ref = malloc((size_t)B * V * sizeof *ref), worst = 0.0;
    for (size_t i = 0; i < (size_t)rows * D; i++)
        H[i] = frand(&s);
    for (size_t i = 0; i < (size_t)V * D; i++)
        W[i] = frand(&s) * 0.5f;
    for (int i = 0; i < V; i++)
        bias[i] = frand(&s) - 0.5f;
    assert_int_equal(splade_lmhead_cpu(H, st, len, B, D, W, bias, V, out, threads), SPLADE_OK);
    naive_head(H, st, len, B, D, W, bias, V, ref);
    for (size_t i = 0; i < (size_t)B * V; i++) {
        double e = fabs(out[i] - ref[i]) / (1.0 + fabs(ref[i]));
        worst = e > worst ? e : worst;
    }
    printf("  lmhead B=%d D=%d V=%d rows=%d threads=%d: max rel err %.2e\n", B, D, V, rows, threads, worst);
    assert_true(worst < 2e-5);
    free(H), free(W), free(bias), free(out), free(ref);
}

static void lmhead_cases(void)
{
    /* B=1, a query-sized sequence; V not a multiple of the 2048-row tile. */
    check_head(1, (int32_t[]){0}, (int32_t[]){32}, 32, 48, 4099, 1);
    /* Packed variable lengths, one sequence of a single row. */
    check_head(3, (int32_t[]){0, 17, 18}, (int32_t[]){17, 1, 40}, 58, 33, 2048, 2);
    /* Padded layout (seq_start = b*S): rows past seq_len are padding and must not count; row 2
     * is all padding but [CLS]/[SEP]; row 3 is empty (all zero output). */
    check_head(4, (int32_t[]){0, 64, 128, 192}, (int32_t[]){64, 30, 2, 0}, 256, 16, 3001, 2);
    /* A sequence longer than the 1024-row gemm group. */
    check_head(2, (int32_t[]){0, 1500}, (int32_t[]){1500, 700}, 2200, 8, 257, 0);
    check_head(1, (int32_t[]){0}, (int32_t[]){1}, 1, 1, 1, 1);
    /* More tiles than threads, 3 threads; lengths around the AVX-512 kernel's 16/32-row blocks. */
    check_head(5, (int32_t[]){0, 16, 33, 65, 66}, (int32_t[]){16, 17, 32, 1, 31}, 97, 24, 7000, 3);
}

/* Both CPU paths: the AVX-512 fused kernel (where the CPU has it) and OpenBLAS + tile max. */
static void test_lmhead_cpu(void **state)
{
    (void)state;
    printf("  AVX-512 kernel %s\n", splade_lmhead_cpu_avx512_usable() ? "in use" : "not available here");
    lmhead_cases();
    splade_lmhead_cpu_force_blas(1);
    assert_false(splade_lmhead_cpu_avx512_usable());
    lmhead_cases();
    splade_lmhead_cpu_force_blas(0);
    float x = 0;
    assert_int_equal(splade_lmhead_cpu(&x, (int32_t[]){0}, (int32_t[]){-1}, 1, 1, &x, &x, 1, &x, 1),
                     SPLADE_ERR_INVALID_ARG);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_splade_tiny),      cmocka_unit_test(test_dtypes_and_names_agree),
        cmocka_unit_test(test_fingerprint_and_lowercase), cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_missing_files),         cmocka_unit_test(test_resolve),
        cmocka_unit_test(test_lmhead_cpu),            cmocka_unit_test(test_forward_rejects_bad_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
