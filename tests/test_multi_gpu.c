/* Encoding on several GPUs at once (issue #17): --device cuda:all / cuda:I,J. The parser and the
 * option checks run everywhere; the GPU cases skip visibly without a GPU. On one GPU, "cuda:0,0"
 * runs two encoder instances (two worker threads) on device 0: their vectors must be bit for bit
 * those of one encoder (the same batches, the same GEMM algorithms), also when out-of-memory
 * splitting, fp32, cancellation and a bad device id come in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/settings.h"
#include "encoder/model_internal.h"
#include "splade.h"
#include "splade/encoder.h"
#include "splade/model.h"
#include "splade/tokenizer.h"

#include "gpu_random_model.h"

/* ---- parsing (no GPU needed) -------------------------------------------------------------------- */

static void test_parse_lists(void **state)
{
    (void)state;
    splade_encoder_opts o;
    splade_encoder_opts_init(&o);
    assert_int_equal(splade_parse_devices("cuda:all", &o), SPLADE_OK);
    assert_int_equal(o.device, SPLADE_DEVICE_CUDA);
    assert_int_equal(o.n_devices, SPLADE_DEVICES_ALL);
    assert_int_equal(splade_parse_devices("cuda:0,2,0", &o), SPLADE_OK);
    assert_int_equal(o.n_devices, 3);
    assert_int_equal(o.devices[0], 0);
    assert_int_equal(o.devices[1], 2);
    assert_int_equal(o.devices[2], 0); /* a repeated id: two encoders on that GPU */
    assert_int_equal(splade_parse_devices("cuda:999", &o), SPLADE_OK);
    assert_int_equal(o.n_devices, 1);
    assert_int_equal(o.devices[0], 999);
    assert_int_equal(splade_parse_devices("cuda:0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15", &o), SPLADE_OK);
    assert_int_equal(o.n_devices, SPLADE_MAX_DEVICES);
    assert_int_equal(o.devices[15], 15);
    /* the plain devices clear the list */
    assert_int_equal(splade_parse_devices("cuda", &o), SPLADE_OK);
    assert_int_equal(o.device, SPLADE_DEVICE_CUDA);
    assert_int_equal(o.n_devices, 0);
    assert_int_equal(splade_parse_devices("cpu", &o), SPLADE_OK);
    assert_int_equal(o.device, SPLADE_DEVICE_CPU);
    assert_int_equal(splade_parse_devices(NULL, &o), SPLADE_OK);
    assert_int_equal(o.device, SPLADE_DEVICE_AUTO);
    assert_int_equal(o.n_devices, 0);
}

static void test_parse_bad(void **state)
{
    (void)state;
    const char *bad[] = {"cuda:", "cuda:x", "cuda:-1", "cuda:0,", "cuda:,0", "cuda:0,,1", "cuda:1x", "cuda:1234",
                         "cuda: 0", "cuda:all,0", "cuda:ALL", "cuda0", "gpu:0", "tpu", "",
                         "cuda:0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        splade_encoder_opts o;
        splade_encoder_opts_init(&o);
        o.n_devices = 5; /* untouched on failure */
        o.device = SPLADE_DEVICE_CPU;
        if (splade_parse_devices(bad[i], &o) != SPLADE_ERR_INVALID_ARG)
            fail_msg("\"%s\" was accepted", bad[i]);
        assert_int_equal(o.n_devices, 5);
        assert_int_equal(o.device, SPLADE_DEVICE_CPU);
        assert_non_null(strstr(splade_error_detail(), "--device"));
    }
    assert_int_equal(splade_parse_devices("cuda", NULL), SPLADE_ERR_INVALID_ARG);
}

/* ---- options checked at create (no GPU needed) ------------------------------------------------- */

static splade_model g_m;

static int setup_model(void **state)
{
    (void)state;
    memset(&g_m, 0, sizeof g_m);
    g_m.cfg = rm_config(900, 64, 2, 2, 256, 96, 1);
    /* one tuning policy for every encoder of this test: the single-GPU reference as well */
    setenv("SPLADE_GPU_GEMM_TUNE", "0", 1);
    splade_settings_reload();
    return rm_build(&g_m, 17);
}

static int teardown_model(void **state)
{
    (void)state;
    rm_free(&g_m);
    return 0;
}

static void test_bad_opts(void **state)
{
    (void)state;
    splade_encoder_opts o;
    splade_encoder *e = NULL;
    splade_encoder_opts_init(&o);
    o.device = SPLADE_DEVICE_CUDA;
    o.n_devices = SPLADE_MAX_DEVICES + 1;
    assert_int_equal(splade_encoder_create(&g_m, &o, &e), SPLADE_ERR_INVALID_ARG);
    assert_null(e);
    o.n_devices = -2;
    assert_int_equal(splade_encoder_create(&g_m, &o, &e), SPLADE_ERR_INVALID_ARG);
    o.n_devices = 2;
    o.devices[0] = 0, o.devices[1] = -3;
    assert_int_equal(splade_encoder_create(&g_m, &o, &e), SPLADE_ERR_INVALID_ARG);
    assert_non_null(strstr(splade_error_detail(), "devices[1]"));
    assert_null(e);
}

/* A list is a CUDA option: device CPU ignores it (one CPU encoder). */
static void test_cpu_ignores_list(void **state)
{
    (void)state;
    splade_encoder_opts o;
    splade_encoder *e = NULL;
    splade_encoder_opts_init(&o);
    o.device = SPLADE_DEVICE_CPU;
    o.n_devices = 2;
    o.quiet = 1;
    assert_int_equal(splade_encoder_create(&g_m, &o, &e), SPLADE_OK);
    assert_int_equal(splade_encoder_device(e), SPLADE_DEVICE_CPU);
    splade_encoder_free(e);
}


/* ---- tokenizing on several threads (no GPU needed; splade-tiny, on the CPU) ----------------------- */

/* splade_encoder_encode tokenizes calls of >= 128 texts on two threads or more and packs the parts:
 * the vectors must be those of the same ids tokenized here one by one, in order, with the same cut
 * at max_length, and n_truncated must count the cut texts of every part. */
static void test_parallel_tokenize(void **state)
{
    (void)state;
    const char *dir = getenv("SPLADE_TINY_DIR") ? getenv("SPLADE_TINY_DIR") : "cache/splade-tiny";
    splade_model *m = NULL;
    if (splade_model_load(dir, &m) != SPLADE_OK) {
        printf("  skipped: no splade-tiny at %s (`make models`)\n", dir);
        skip();
    }
    enum { N = 300, MAXLEN = 12 };
    static char buf[N][160];
    const char *texts[N];
    int want_cut = 0;
    for (int i = 0; i < N; i++) {
        const int words = 1 + (i * 7) % 17; /* 1 .. 17 words: some over MAXLEN - 2 */
        int o = 0;
        for (int w = 0; w < words; w++)
            o += snprintf(buf[i] + o, sizeof buf[i] - o, "%s%s", w ? " " : "", (i + w) % 3 ? "protein" : "cell");
        texts[i] = buf[i];
        want_cut += words + 2 > MAXLEN;
    }
    splade_encoder_opts o;
    splade_encoder_opts_init(&o);
    o.device = SPLADE_DEVICE_CPU;
    o.quiet = 1;
    o.max_length = MAXLEN;
    o.threads = 1;
    splade_encoder *e = NULL;
    assert_int_equal(splade_encoder_create(m, &o, &e), SPLADE_OK);
    static splade_sparse a[N], b[N];
    int cut = -1;
    assert_int_equal(splade_encoder_encode(e, texts, NULL, N, a, &cut), SPLADE_OK);
    assert_int_equal(cut, want_cut);
    assert_true(cut > 0 && cut < N);
    int32_t *ids = malloc((size_t)N * (MAXLEN + 1) * sizeof *ids), off[N + 1];
    off[0] = 0;
    for (int i = 0; i < N; i++) {
        int32_t k = 0;
        assert_int_equal(splade_tokenize(splade_model_tokenizer(m), texts[i], strlen(texts[i]), MAXLEN + 1,
                                         ids + off[i], &k), SPLADE_OK);
        if (k > MAXLEN) { /* the encoder's cut: [CLS] ... [SEP] */
            ids[off[i] + MAXLEN - 1] = ids[off[i] + k - 1];
            k = MAXLEN;
        }
        off[i + 1] = off[i] + k;
    }
    assert_int_equal(splade_encoder_encode_ids(e, ids, off, N, b), SPLADE_OK);
    for (int i = 0; i < N; i++) {
        assert_int_equal(a[i].n, b[i].n);
        assert_memory_equal(a[i].terms, b[i].terms, (size_t)a[i].n * sizeof *a[i].terms);
        assert_memory_equal(a[i].weights, b[i].weights, (size_t)a[i].n * sizeof *a[i].weights);
        splade_sparse_free(&a[i]);
        splade_sparse_free(&b[i]);
    }
    free(ids);
    splade_encoder_free(e);
    splade_model_free(m);
}

/* ---- GPU cases ---------------------------------------------------------------------------------- */

static int gpu_or_skip(void)
{
    static int probed = -1;
    static char why[256];
    if (probed < 0)
        probed = splade_gpu_probe(why, sizeof why);
    if (!probed)
        printf("  skipped: no GPU (%s)\n", why);
    return probed;
}

/* Without a GPU a list is an error that says which entry failed (no CPU fallback: it was asked for). */
static void test_list_without_gpu(void **state)
{
    (void)state;
    if (splade_gpu_probe(NULL, 0)) {
        printf("  skipped: a GPU is present\n");
        skip();
    }
    splade_encoder_opts o;
    splade_encoder *e = NULL;
    splade_encoder_opts_init(&o);
    o.quiet = 1;
    assert_int_equal(splade_parse_devices("cuda:0,0", &o), SPLADE_OK);
    assert_int_equal(splade_encoder_create(&g_m, &o, &e), SPLADE_ERR_NO_GPU);
    assert_null(e);
    assert_non_null(strstr(splade_error_detail(), "GPU 0"));
    assert_int_equal(splade_parse_devices("cuda:all", &o), SPLADE_OK);
    assert_int_equal(splade_encoder_create(&g_m, &o, &e), SPLADE_ERR_NO_GPU);
    assert_null(e);
}

enum { N_TEXTS = 333 };

typedef struct {
    int32_t *ids, *off;
} texts;

/* N_TEXTS random sequences of 2 .. max_position tokens (many batches, many distinct lengths). */
static texts make_texts(uint64_t seed)
{
    int lens[N_TEXTS];
    uint64_t s = seed;
    for (int i = 0; i < N_TEXTS; i++)
        lens[i] = 2 + (int)(rm_next(&s) % (uint64_t)(g_m.cfg.max_position - 1));
    texts t;
    rm_make_batch(lens, N_TEXTS, g_m.cfg.vocab_size, seed, &t.ids, &t.off);
    return t;
}

/* Encodes t with options o (device list from `devices`); out[N_TEXTS] filled. */
static int encode_with(const char *devices, splade_encoder_opts o, const texts *t, splade_sparse *out)
{
    splade_encoder *e = NULL;
    assert_int_equal(splade_parse_devices(devices, &o), SPLADE_OK);
    int rc = splade_encoder_create(&g_m, &o, &e);
    if (rc)
        return rc;
    assert_int_equal(splade_encoder_device(e), SPLADE_DEVICE_CUDA);
    rc = splade_encoder_encode_ids(e, t->ids, t->off, N_TEXTS, out);
    splade_encoder_free(e);
    return rc;
}

static void assert_same(const splade_sparse *a, const splade_sparse *b)
{
    for (int i = 0; i < N_TEXTS; i++) {
        if (a[i].n != b[i].n)
            fail_msg("text %d: %d vs %d terms", i, (int)a[i].n, (int)b[i].n);
        assert_true(a[i].n > 0);
        assert_memory_equal(a[i].terms, b[i].terms, (size_t)a[i].n * sizeof *a[i].terms);
        assert_memory_equal(a[i].weights, b[i].weights, (size_t)a[i].n * sizeof *a[i].weights);
    }
}

static void free_all(splade_sparse *v)
{
    for (int i = 0; i < N_TEXTS; i++)
        splade_sparse_free(&v[i]);
}

/* cuda:0 against lists on the same GPU, with the options of one case. */
static void compare_lists(splade_encoder_opts o, uint64_t seed)
{
    static splade_sparse one[N_TEXTS], many[N_TEXTS];
    texts t = make_texts(seed);
    assert_int_equal(encode_with("cuda:0", o, &t, one), SPLADE_OK);
    const char *lists[] = {"cuda:0,0", "cuda:0,0,0", "cuda:all"};
    for (int l = 0; l < 3; l++) {
        printf("  %s vs cuda:0\n", lists[l]);
        assert_int_equal(encode_with(lists[l], o, &t, many), SPLADE_OK);
        assert_same(one, many);
        free_all(many);
    }
    free_all(one);
    free(t.ids), free(t.off);
}

static splade_encoder_opts base_opts(void)
{
    splade_encoder_opts o;
    splade_encoder_opts_init(&o);
    o.quiet = 1;
    o.batch_size = 16;
    return o;
}

static void test_same_bits_bf16(void **state)
{
    (void)state;
    if (!gpu_or_skip())
        skip();
    compare_lists(base_opts(), 101);
}

static void test_same_bits_fp32_dense_topk(void **state)
{
    (void)state;
    if (!gpu_or_skip())
        skip();
    splade_encoder_opts o = base_opts();
    o.precision = SPLADE_PRECISION_FP32;
    o.gpu_dense_output = 1;
    o.top_k = 20;
    compare_lists(o, 202);
}

/* Every batch over the token cap splits as on out-of-memory, on each worker as on one encoder. */
static void test_same_bits_when_splitting(void **state)
{
    (void)state;
    if (!gpu_or_skip())
        skip();
    splade_encoder_opts o = base_opts();
    o.max_batch_tokens = 300;
    compare_lists(o, 303);
}

/* A cancelled call fails cleanly on every worker, leaves nothing in out, and the encoder works after. */
static void test_cancel(void **state)
{
    (void)state;
    if (!gpu_or_skip())
        skip();
    static splade_sparse out[N_TEXTS];
    volatile int flag = 1;
    splade_encoder_opts o = base_opts();
    o.cancel = &flag;
    assert_int_equal(splade_parse_devices("cuda:0,0", &o), SPLADE_OK);
    splade_encoder *e = NULL;
    assert_int_equal(splade_encoder_create(&g_m, &o, &e), SPLADE_OK);
    texts t = make_texts(404);
    assert_int_equal(splade_encoder_encode_ids(e, t.ids, t.off, N_TEXTS, out), SPLADE_ERR_CANCELLED);
    for (int i = 0; i < N_TEXTS; i++)
        assert_null(out[i].terms);
    flag = 0;
    assert_int_equal(splade_encoder_encode_ids(e, t.ids, t.off, N_TEXTS, out), SPLADE_OK);
    free_all(out);
    assert_int_equal(splade_encoder_encode_ids(e, t.ids, t.off, 0, out), SPLADE_OK);
    splade_encoder_free(e);
    free(t.ids), free(t.off);
}

/* A device that does not exist: the whole create fails, naming it; nothing is left allocated. */
static void test_missing_device(void **state)
{
    (void)state;
    if (!gpu_or_skip())
        skip();
    splade_encoder_opts o = base_opts();
    splade_encoder *e = NULL;
    assert_int_equal(splade_parse_devices("cuda:0,999", &o), SPLADE_OK);
    assert_int_equal(splade_encoder_create(&g_m, &o, &e), SPLADE_ERR_NO_GPU);
    assert_null(e);
    assert_non_null(strstr(splade_error_detail(), "GPU 999"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_lists),
        cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_bad_opts),
        cmocka_unit_test(test_cpu_ignores_list),
        cmocka_unit_test(test_list_without_gpu),
        cmocka_unit_test(test_parallel_tokenize),
        cmocka_unit_test(test_same_bits_bf16),
        cmocka_unit_test(test_same_bits_fp32_dense_topk),
        cmocka_unit_test(test_same_bits_when_splitting),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_missing_device),
    };
    return cmocka_run_group_tests(tests, setup_model, teardown_model);
}
