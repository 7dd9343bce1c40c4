/* CPU encoder vs the transformers goldens in tests/data/encoder/ (tools/make_encoder_goldens.py):
 * same terms (ignoring |w| < 1e-4) and max |diff| <= 1e-4, from token ids (forward pass alone)
 * and from text (tokenizer + forward); plus the encoder API's edge cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/settings.h"
#include "encoder/model_internal.h"
#include "splade.h"
#include "splade/encoder.h"
#include "encoder/gpu_encoder.h"
#include "splade/model.h"
#include "golden_vectors.h"
#include "gpu_random_model.h"
#include "encoder/forward_cpu.h"
#include "encoder/forward_cpu_packed.h"
#include "encoder/gemm_cpu.h"

#define TOL 1e-4

/* The golden files (meta line, then one row per text) are read by tests/golden_vectors.h. */
typedef gv_row golden;
typedef gv_file golden_file;

/* Max |diff| over the union of terms; fails on a term present (>= 1e-4) on one side only. */
static double compare(const golden *g, const splade_sparse *v)
{
    int32_t only_one;
    double worst = gv_compare(g, v, TOL, &only_one);
    if (only_one >= 0)
        fail_msg("%s: term %d is >= %g on one side only", g->id, (int)only_one, TOL);
    return worst;
}

typedef struct {
    const char *model_dir, *golden;
} golden_case;

static splade_model *load_case(const golden_case *c, golden_file *gf)
{
    char p[512];
    snprintf(p, sizeof p, "%s/model.safetensors", c->model_dir);
    if (access(p, R_OK) != 0) {
        printf("SKIP: %s absent (make models)\n", c->model_dir);
        return NULL;
    }
    assert_int_equal(gv_load(c->golden, gf), 0);
    int sha = gv_sha_matches(c->model_dir, gf->sha);
    if (sha == 0)
        fail_msg("%s differs from the model the goldens were made with (sha256 %s): rerun make models",
                 c->model_dir, gf->sha);
    splade_model *m;
    if (splade_model_load(c->model_dir, &m))
        fail_msg("load %s: %s", c->model_dir, splade_error_detail());
    return m;
}

static splade_encoder *cpu_encoder(const splade_model *m, int threads, int batch)
{
    splade_encoder_opts o = {.device = SPLADE_DEVICE_CPU, .threads = threads, .batch_size = batch, .quiet = 1};
    splade_encoder *e;
    assert_int_equal(splade_encoder_create(m, &o, &e), SPLADE_OK);
    return e;
}

/* Feeds the golden token ids straight to the encoder: the forward pass without the tokenizer. */
static void run_ids(const golden_case *c)
{
    golden_file gf;
    splade_model *m = load_case(c, &gf);
    if (!m)
        skip();
    int32_t *off = malloc((size_t)(gf.n + 1) * sizeof *off), total = 0;
    for (int i = 0; i < gf.n; i++)
        total += gf.g[i].n_ids;
    int32_t *ids = malloc((size_t)total * sizeof *ids);
    off[0] = 0;
    for (int i = 0; i < gf.n; i++) {
        memcpy(ids + off[i], gf.g[i].ids, (size_t)gf.g[i].n_ids * sizeof *ids);
        off[i + 1] = off[i] + gf.g[i].n_ids;
    }
    splade_sparse *v = calloc((size_t)gf.n, sizeof *v);
    splade_encoder *e = cpu_encoder(m, 2, 8);
    assert_int_equal(splade_encoder_encode_ids(e, ids, off, gf.n, v), SPLADE_OK);
    double worst = 0.0;
    long terms = 0;
    for (int i = 0; i < gf.n; i++) {
        double d = compare(&gf.g[i], &v[i]);
        worst = d > worst ? d : worst;
        terms += v[i].n;
        splade_sparse_free(&v[i]);
    }
    printf("  %s: %d texts from ids, %.1f terms/text, max |diff| vs transformers %.2e\n", c->golden, gf.n,
           (double)terms / gf.n, worst);
    assert_true(worst <= TOL);
    splade_encoder_free(e);
    free(v), free(ids), free(off);
    splade_model_free(m);
    gv_free(&gf);
}

/* The same from the texts: tokenizer ids must equal HF's, vectors the golden ones. */
static void run_text(const golden_case *c)
{
    golden_file gf;
    splade_model *m = load_case(c, &gf);
    if (!m)
        skip();
    /* Every query and edge case, every 4th document: the documents' LM head dominates the
     * run time and run_ids already covers them all. */
    const char **texts = malloc((size_t)gf.n * sizeof *texts);
    int want_cut = 0, n = 0;
    for (int i = 0; i < gf.n; i++)
        if (gf.g[i].id[0] != 'd' || i % 4 == 0) {
            gf.g[n] = gf.g[i];
            texts[n++] = gf.g[i].text;
            want_cut += gf.g[i].truncated;
        } else {
            golden *g = &gf.g[i];
            free(g->id), free(g->text), free(g->ids), free(g->terms), free(g->w);
        }
    gf.n = n;
    splade_sparse *v = calloc((size_t)gf.n, sizeof *v);
    splade_encoder *e = cpu_encoder(m, 0, 0);
    assert_int_equal(splade_encoder_max_length(e), gf.max_length);
    int cut = -1;
    assert_int_equal(splade_encoder_encode(e, texts, NULL, gf.n, v, &cut), SPLADE_OK);
    assert_int_equal(cut, want_cut);
    double worst = 0.0;
    for (int i = 0; i < gf.n; i++) {
        double d = compare(&gf.g[i], &v[i]);
        worst = d > worst ? d : worst;
        splade_sparse_free(&v[i]);
    }
    printf("  %s: %d texts from text (%d truncated), max |diff| %.2e\n", c->golden, gf.n, cut, worst);
    assert_true(worst <= TOL);
    splade_encoder_free(e);
    free(v), free(texts);
    splade_model_free(m);
    gv_free(&gf);
}

static const golden_case TINY = {"cache/splade-tiny", "tests/data/encoder/golden_splade_tiny.jsonl"};
static const golden_case RAND = {"cache/rand-h96", "tests/data/encoder/golden_rand_h96.jsonl"};
static const golden_case RAND16 = {"cache/rand-h96-f16", "tests/data/encoder/golden_rand_h96_f16.jsonl"};

static void test_tiny_ids(void **s) { (void)s, run_ids(&TINY); }
static void test_tiny_text(void **s) { (void)s, run_text(&TINY); }
static void test_rand_ids(void **s) { (void)s, run_ids(&RAND); }
static void test_rand_text(void **s) { (void)s, run_text(&RAND); }
static void test_rand_f16_ids(void **s) { (void)s, run_ids(&RAND16); }

static splade_model *tiny_or_skip(void)
{
    splade_model *m;
    if (access(TINY.model_dir, R_OK) != 0 || splade_model_load(TINY.model_dir, &m) != SPLADE_OK) {
        printf("SKIP: %s absent (make models)\n", TINY.model_dir);
        skip();
    }
    return m;
}

static void encode1(splade_encoder *e, const char *text, size_t len, splade_sparse *v, int *cut)
{
    const char *t[1] = {text};
    assert_int_equal(splade_encoder_encode(e, t, &len, 1, v, cut), SPLADE_OK);
}

static int same_vector(const splade_sparse *a, const splade_sparse *b)
{
    return a->n == b->n && !memcmp(a->terms, b->terms, (size_t)a->n * 4) && !memcmp(a->weights, b->weights, (size_t)a->n * 4);
}

static void test_edge_texts(void **state)
{
    (void)state;
    splade_model *m = tiny_or_skip();
    splade_encoder *e = cpu_encoder(m, 1, 0);
    splade_sparse a, b;
    int cut;
    /* Empty text: the vector of [CLS] [SEP] alone (defined, non-failing), like HF's. */
    encode1(e, "", 0, &a, &cut);
    assert_int_equal(cut, 0);
    encode1(e, "  \t\n", 4, &b, &cut);
    assert_true(same_vector(&a, &b));
    splade_sparse_free(&a), splade_sparse_free(&b);
    /* Ill-formed UTF-8 bytes are dropped by the tokenizer, not fatal. */
    encode1(e, "protein \xff\xfe folding", 18, &a, &cut);
    encode1(e, "protein folding", 15, &b, &cut);
    assert_true(a.n > 0 && same_vector(&a, &b));
    splade_sparse_free(&a), splade_sparse_free(&b);
    /* Longer than max_length: truncated and counted; the cut keeps [CLS] ... [SEP]. */
    char *longtext = malloc(4001);
    for (int i = 0; i < 4000; i++)
        longtext[i] = i % 2 ? ' ' : 'x';
    longtext[4000] = 0;
    encode1(e, longtext, 4000, &a, &cut);
    assert_int_equal(cut, 1);
    assert_true(a.n > 0);
    splade_sparse_free(&a);
    free(longtext);
    splade_encoder_free(e);
    splade_model_free(m);
}

static void test_options(void **state)
{
    (void)state;
    splade_model *m = tiny_or_skip();
    splade_encoder *e;
    splade_encoder_opts o = {.device = SPLADE_DEVICE_CPU, .max_length = 100000, .quiet = 1};
    assert_int_equal(splade_encoder_create(m, &o, &e), SPLADE_OK);
    assert_int_equal(splade_encoder_max_length(e), 512); /* capped at max_position */
    splade_encoder_free(e);
    o.max_length = 1;
    assert_int_equal(splade_encoder_create(m, &o, &e), SPLADE_ERR_INVALID_ARG);
    /* top_k and threshold; 1 and 2 threads agree. */
    const char *t = "Vitamin D deficiency is associated with an increased risk of fractures.";
    splade_sparse all, top, thr, two;
    e = cpu_encoder(m, 1, 0);
    encode1(e, t, strlen(t), &all, NULL);
    splade_encoder_free(e);
    e = cpu_encoder(m, 2, 0);
    encode1(e, t, strlen(t), &two, NULL);
    splade_encoder_free(e);
    assert_int_equal(all.n, two.n);
    for (int i = 0; i < all.n; i++)
        assert_float_equal(all.weights[i], two.weights[i], 1e-6);
    o = (splade_encoder_opts){.device = SPLADE_DEVICE_CPU, .top_k = 5, .quiet = 1};
    assert_int_equal(splade_encoder_create(m, &o, &e), SPLADE_OK);
    encode1(e, t, strlen(t), &top, NULL);
    splade_encoder_free(e);
    assert_int_equal(top.n, 5);
    o = (splade_encoder_opts){.device = SPLADE_DEVICE_CPU, .threshold = 0.5f, .quiet = 1};
    assert_int_equal(splade_encoder_create(m, &o, &e), SPLADE_OK);
    encode1(e, t, strlen(t), &thr, NULL);
    splade_encoder_free(e);
    int above = 0;
    for (int i = 0; i < all.n; i++)
        above += all.weights[i] > 0.5f;
    assert_int_equal(thr.n, above);
    splade_sparse_free(&all), splade_sparse_free(&top), splade_sparse_free(&thr), splade_sparse_free(&two);
    splade_model_free(m);
}

static void test_devices(void **state)
{
    (void)state;
    splade_model *m = tiny_or_skip();
    char name[256];
    splade_encoder *e;
    splade_encoder_opts o = {.device = SPLADE_DEVICE_AUTO, .quiet = 1};
    assert_int_equal(splade_encoder_create(m, &o, &e), SPLADE_OK);
    if (!splade_gpu_probe(name, sizeof name)) {
        assert_int_equal(splade_encoder_device(e), SPLADE_DEVICE_CPU);
        splade_encoder_free(e);
        o.device = SPLADE_DEVICE_CUDA;
        assert_int_equal(splade_encoder_create(m, &o, &e), SPLADE_ERR_NO_GPU);
        assert_non_null(strstr(splade_error_detail(), "--device cuda"));
    } else {
        splade_encoder_free(e);
    }
    splade_model_free(m);
}

/* A memory cap splits batches (the path a real GPU out-of-memory takes) without changing any
 * vector; a single sequence over the cap is a clear error naming its length. On a GPU the split
 * batches (<= 30 tokens) would take the encoder's own small-batch GEMMs, whose rounding differs from
 * cuBLASLt's by bf16 noise (tests/test_gpu_small_gemm.c compares the two): SPLADE_GPU_SMALL_GEMM=0
 * keeps both runs on cuBLASLt, so that only the splitting is under test. */
static void test_batch_memory_cap(void **state)
{
    (void)state;
    splade_model *m = tiny_or_skip();
    setenv("SPLADE_GPU_SMALL_GEMM", "0", 1);
    splade_settings_reload();
    static const char *texts[] = {
        "Vitamin D deficiency is associated with an increased risk of fractures.", "short", "",
        "Microstructural development of human newborn cerebral white matter assessed in vivo by "
        "diffusion tensor magnetic resonance imaging.", "p53 mutations in cancer", "a b c d e f g h",
        "The quick brown fox jumps over the lazy dog near the riverbank at dawn.", "insulin"};
    enum { N = sizeof texts / sizeof *texts };
    splade_sparse base[N], capped[N];
    splade_encoder *e;
    splade_encoder_opts o = {.device = SPLADE_DEVICE_AUTO, .batch_size = 8, .quiet = 1};
    assert_int_equal(splade_encoder_create(m, &o, &e), SPLADE_OK);
    assert_int_equal(splade_encoder_encode(e, texts, NULL, N, base, NULL), SPLADE_OK);
    splade_encoder_free(e);
    o.max_batch_tokens = 30; /* every text fits alone, no batch of all eight does */
    assert_int_equal(splade_encoder_create(m, &o, &e), SPLADE_OK);
    assert_int_equal(splade_encoder_encode(e, texts, NULL, N, capped, NULL), SPLADE_OK);
    for (int i = 0; i < N; i++) {
        assert_int_equal(base[i].n, capped[i].n);
        for (int j = 0; j < base[i].n; j++) {
            assert_int_equal(base[i].terms[j], capped[i].terms[j]);
            assert_float_equal(base[i].weights[j], capped[i].weights[j], 1e-5);
        }
        splade_sparse_free(&base[i]), splade_sparse_free(&capped[i]);
    }
    splade_encoder_free(e);
    o.max_batch_tokens = 5;
    assert_int_equal(splade_encoder_create(m, &o, &e), SPLADE_OK);
    assert_int_equal(splade_encoder_encode(e, texts, NULL, 1, capped, NULL), SPLADE_ERR_GPU_OOM);
    assert_non_null(strstr(splade_error_detail(), "single sequence of 14 tokens"));
    splade_encoder_free(e);
    splade_model_free(m);
    unsetenv("SPLADE_GPU_SMALL_GEMM");
    splade_settings_reload();
}

static int same_vectors(const splade_sparse *a, const splade_sparse *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i].n != b[i].n || memcmp(a[i].terms, b[i].terms, (size_t)a[i].n * sizeof *a[i].terms) ||
            memcmp(a[i].weights, b[i].weights, (size_t)a[i].n * sizeof *a[i].weights))
            return 0;
    return 1;
}

/* Encodes the batch with `threads` threads, batches of `batch`, into out[n]. */
static void encode_ids_with(const splade_model *m, int threads, int batch, const int32_t *ids, const int32_t *off,
                            int n, splade_sparse *out)
{
    splade_encoder *e = cpu_encoder(m, threads, batch);
    assert_int_equal(splade_encoder_encode_ids(e, ids, off, n, out), SPLADE_OK);
    splade_encoder_free(e);
}

/* --threads never changes a vector, bit for bit (issue 9, item 9): a random model whose widths
 * are not multiples of 128 (column units with tails), a batch over 4 row blocks (whole-row
 * units), a lone long sequence (row x column units) and short ones (the few-rows path). */
static void test_threads_identical(void **state)
{
    (void)state;
    splade_model m;
    memset(&m, 0, sizeof m);
    m.cfg = rm_config(3001, 192, 2, 3, 704, 512, 0);
    assert_int_equal(rm_build(&m, 99), 0);
    static const int lens[] = {300, 257, 131, 100, 65, 64, 40, 9, 3, 2};
    enum { N = sizeof lens / sizeof *lens };
    int32_t *ids, *off;
    rm_make_batch(lens, N, m.cfg.vocab_size, 5, &ids, &off);
    for (int batch = 1; batch <= N; batch += N - 1) {
        splade_sparse one[N], more[N];
        encode_ids_with(&m, 1, batch, ids, off, N, one);
        for (int threads = 2; threads <= 3; threads++) {
            encode_ids_with(&m, threads, batch, ids, off, N, more);
            if (!same_vectors(one, more, N))
                fail_msg("batch %d: %d threads give other vectors than 1 thread", batch, threads);
            for (int i = 0; i < N; i++)
                splade_sparse_free(&more[i]);
        }
        for (int i = 0; i < N; i++)
            splade_sparse_free(&one[i]);
    }
    free(ids), free(off);
    rm_free(&m);
}

/* Few-row forwards (1 to 64 tokens, one over 64, two sequences in one) from m's packed copy and
 * from its weights in place: the same bits on 1 and 2 threads. */
static void packed_forwards_match(const splade_model *mm)
{
    splade_cpu_packed *pk;
    assert_int_equal(splade_cpu_packed_create(mm, &pk), SPLADE_OK);
    static const int lens[] = {1, 7, 25, 64, 65, 30, 25};
    enum { N = sizeof lens / sizeof *lens };
    int32_t *ids, *off;
    rm_make_batch(lens, N, mm->cfg.vocab_size, 11, &ids, &off);
    const size_t V = (size_t)mm->cfg.vocab_size;
    float *plain = malloc(2 * V * sizeof *plain), *packed = malloc(2 * V * sizeof *packed);
    /* part-way (the first layer packed, the rest in place), then one layer at a time to the end */
    int32_t o25[2] = {0, 25};
    assert_int_equal(splade_cpu_packed_step(pk, mm, 2), 1);
    assert_int_equal(splade_forward_cpu_lowp(mm, NULL, NULL, NULL, NULL, ids + off[2], o25, 1, plain, 1), 0);
    assert_int_equal(splade_forward_cpu_lowp(mm, NULL, NULL, NULL, pk, ids + off[2], o25, 1, packed, 1), 0);
    if (memcmp(plain, packed, V * sizeof *plain))
        fail_msg("one layer packed: other bits");
    int steps = 1;
    while (splade_cpu_packed_step(pk, mm, 2))
        steps++;
    assert_int_equal(steps, mm->cfg.num_layers); /* then the MLM transform, the last step */
    assert_true(splade_cpu_packed_done(pk));
    for (int b = 0; b < N; b++) {
        const int B = b == N - 2 ? 2 : 1; /* the last two together: 55 tokens in one forward */
        int32_t o[3] = {0, lens[b], B == 2 ? lens[b] + lens[b + 1] : 0};
        for (int threads = 1; threads <= 2; threads++) {
            const int32_t *seq = ids + off[b];
            assert_int_equal(splade_forward_cpu_lowp(mm, NULL, NULL, NULL, NULL, seq, o, B, plain, threads), 0);
            assert_int_equal(splade_forward_cpu_lowp(mm, NULL, NULL, NULL, pk, seq, o, B, packed, threads), 0);
            if (memcmp(plain, packed, (size_t)B * V * sizeof *plain))
                fail_msg("%d tokens, %d threads: the packed weights give other bits", o[B], threads);
        }
        if (B == 2)
            break;
    }
    splade_cpu_packed_free(pk);
    free(plain), free(packed), free(ids), free(off);
}

/* The fp32 forward from the packed weights (forward_cpu_packed.h) gives the same bits as from the
 * weights in place: few-row forwards of 1 to 64 tokens (every tile height, an FFN width with a
 * panel tail), one over 64 (the packed copy unused), 1 and 2 threads. Then the encoder's own copy,
 * made after PACK_AFTER_TOKENS tokens of queries one at a time: the same vectors as fresh
 * encoders that never make it. */
static void test_packed_same_bits(void **state)
{
    (void)state;
    if (!splade_gemm_packed_usable()) {
        skip(); /* neither AVX-512 nor AVX2: the packed path is never taken */
        return;
    }
    /* a model whose copy is under 2 MB (ordinary pages) first, then one above (huge pages) */
    splade_model small;
    memset(&small, 0, sizeof small);
    small.cfg = rm_config(501, 64, 1, 2, 100, 128, 0);
    assert_int_equal(rm_build(&small, 5), 0);
    assert_true(splade_cpu_packed_bytes(&small) < ((size_t)2 << 20));
    packed_forwards_match(&small);
    rm_free(&small);
    splade_model m;
    memset(&m, 0, sizeof m);
    m.cfg = rm_config(3001, 192, 2, 3, 712, 512, 0);
    assert_int_equal(rm_build(&m, 7), 0);
    assert_true(splade_cpu_packed_bytes(&m) >= ((size_t)2 << 20));
    packed_forwards_match(&m);
    int32_t *ids, *off;
    /* the encoder's lazy copy: 14 queries of 25 tokens, one at a time (350 > 256 tokens) */
    enum { Q = 14 };
    int qlens[Q];
    for (int i = 0; i < Q; i++)
        qlens[i] = 25;
    rm_make_batch(qlens, Q, m.cfg.vocab_size, 12, &ids, &off);
    splade_sparse one[Q], fresh[Q];
    encode_ids_with(&m, 1, 1, ids, off, Q, one);
    for (int i = 0; i < Q; i++) {
        int32_t o[2] = {0, 25};
        encode_ids_with(&m, 1, 1, ids + off[i], o, 1, &fresh[i]);
    }
    if (!same_vectors(one, fresh, Q))
        fail_msg("queries after the encoder packed its weights differ from a fresh encoder's");
    for (int i = 0; i < Q; i++)
        splade_sparse_free(&one[i]), splade_sparse_free(&fresh[i]);
    free(ids), free(off);
    rm_free(&m);
}

/* The CPU's memory cap (issue 9, item 11) runs a batch in parts that fit it: a cap of one byte
 * runs every sequence alone (the vectors of batches of one, bit for bit) and gives the same
 * vectors as no cap (same terms; the packed shapes differ, so weights may move by rounding). */
static void test_cpu_batch_bytes(void **state)
{
    (void)state;
    splade_model m;
    memset(&m, 0, sizeof m);
    m.cfg = rm_config(3001, 192, 2, 3, 704, 512, 0);
    assert_int_equal(rm_build(&m, 98), 0);
    static const int lens[] = {300, 257, 131, 100, 65, 64, 40, 9, 3, 2};
    enum { N = sizeof lens / sizeof *lens };
    int32_t *ids, *off;
    rm_make_batch(lens, N, m.cfg.vocab_size, 6, &ids, &off);
    splade_sparse whole[N], parts[N];
    splade_encoder_opts o = {.device = SPLADE_DEVICE_CPU, .threads = 2, .batch_size = N, .quiet = 1,
                             .cpu_batch_bytes = SIZE_MAX};
    splade_encoder *e;
    assert_int_equal(splade_encoder_create(&m, &o, &e), SPLADE_OK);
    assert_int_equal(splade_encoder_encode_ids(e, ids, off, N, whole), SPLADE_OK);
    splade_encoder_free(e);
    o.cpu_batch_bytes = 1;
    assert_int_equal(splade_encoder_create(&m, &o, &e), SPLADE_OK);
    assert_int_equal(splade_encoder_encode_ids(e, ids, off, N, parts), SPLADE_OK);
    splade_encoder_free(e);
    splade_sparse alone[N]; /* batches of one: what a one-byte cap must run, bit for bit */
    encode_ids_with(&m, 2, 1, ids, off, N, alone);
    if (!same_vectors(parts, alone, N))
        fail_msg("a one-byte cap did not run every sequence alone");
    for (int i = 0; i < N; i++) {
        splade_sparse_free(&alone[i]);
        assert_int_equal(whole[i].n, parts[i].n);
        for (int j = 0; j < whole[i].n; j++) {
            assert_int_equal(whole[i].terms[j], parts[i].terms[j]);
            assert_float_equal(whole[i].weights[j], parts[i].weights[j], 1e-5);
        }
        splade_sparse_free(&whole[i]), splade_sparse_free(&parts[i]);
    }
    free(ids), free(off);
    rm_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_ids),  cmocka_unit_test(test_tiny_text),    cmocka_unit_test(test_rand_ids),
        cmocka_unit_test(test_rand_text), cmocka_unit_test(test_rand_f16_ids), cmocka_unit_test(test_edge_texts),
        cmocka_unit_test(test_options),   cmocka_unit_test(test_devices),
        cmocka_unit_test(test_batch_memory_cap), cmocka_unit_test(test_threads_identical),
        cmocka_unit_test(test_packed_same_bits),
        cmocka_unit_test(test_cpu_batch_bytes),
    };
    /* `make test`'s ThreadSanitizer run leaves out the slowest golden tests (a glob on the names):
     * they run the same threaded code as the others, ~10x slower under TSan */
    if (getenv("SPLADE_TEST_SKIP"))
        cmocka_set_skip_filter(getenv("SPLADE_TEST_SKIP"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
