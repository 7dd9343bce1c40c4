/* Encoding on several GPUs at once (issue #17): --device cuda:all / cuda:I,J. The parser and the
 * option checks run everywhere; the GPU cases skip visibly without a GPU. On one GPU, "cuda:0,0"
 * runs two encoder instances (two worker threads) on device 0: their vectors must be bit for bit
 * those of one encoder (the same batches, the same GEMM algorithms), also when out-of-memory
 * splitting, fp32, cancellation and a bad device id come in. Texts encoded in groups (a build's
 * calls) form the batches one call per group forms, on the CPU and on every list. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/settings.h"
#include "encoder/encoder_tokenize.h"
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

/* The vectors a[0 .. n) and b[0 .. n), bit for bit. */
static void assert_same_n(const splade_sparse *a, const splade_sparse *b, int n)
{
    for (int i = 0; i < n; i++) {
        if (a[i].n != b[i].n)
            fail_msg("text %d: %d vs %d terms", i, (int)a[i].n, (int)b[i].n);
        assert_true(a[i].n > 0);
        assert_memory_equal(a[i].terms, b[i].terms, (size_t)a[i].n * sizeof *a[i].terms);
        assert_memory_equal(a[i].weights, b[i].weights, (size_t)a[i].n * sizeof *a[i].weights);
    }
}

static void free_all_n(splade_sparse *v, int n)
{
    for (int i = 0; i < n; i++)
        splade_sparse_free(&v[i]);
}

/* ---- a failing encoder (SPLADE_TEST_ENCODER_FAIL; on the CPU: no GPU needed) --------------------------- */

/* The setting, re-read (NULL: unset). setup_model's SPLADE_GPU_GEMM_TUNE stays. */
static void set_fault(const char *v)
{
    if (v)
        setenv("SPLADE_TEST_ENCODER_FAIL", v, 1);
    else
        unsetenv("SPLADE_TEST_ENCODER_FAIL");
    splade_settings_reload();
}

static int all_empty(const splade_sparse *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i].terms || v[i].weights || v[i].n)
            return 0;
    return 1;
}

/* The CPU encoder's 3rd batch fails (batches 1-2 have written their vectors by then): the call fails
 * with the injected code and a detail naming it, out[] holds nothing (the vectors already made are
 * freed: ASan's leak check in `make test`), and the encoder works after: its next call with the setting
 * still on (the 3rd batch is behind it) and without it give one encoder's vectors, bit for bit. A CODE
 * of -9 (out of memory) fails the batch too: it is injected before the forward, so nothing halves it. */
static splade_sparse g_ref[300], g_out[300];

static void test_fault_cpu_ids(void **state)
{
    (void)state;
    enum { N = 300 };
    int lens[N];
    uint64_t s = 55;
    for (int i = 0; i < N; i++)
        lens[i] = 2 + (int)(rm_next(&s) % (uint64_t)(g_m.cfg.max_position - 1));
    int32_t *ids, *off;
    rm_make_batch(lens, N, g_m.cfg.vocab_size, 55, &ids, &off);
    splade_encoder_opts o;
    splade_encoder_opts_init(&o);
    o.device = SPLADE_DEVICE_CPU;
    o.quiet = 1;
    o.batch_size = 16;
    splade_encoder *e = NULL;
    set_fault(NULL);
    assert_int_equal(splade_encoder_create(&g_m, &o, &e), SPLADE_OK);
    assert_int_equal(splade_encoder_encode_ids(e, ids, off, N, g_ref), SPLADE_OK);
    splade_encoder_free(e);

    set_fault("0:3");
    assert_int_equal(splade_encoder_create(&g_m, &o, &e), SPLADE_OK);
    assert_int_equal(splade_encoder_encode_ids(e, ids, off, N, g_out), SPLADE_ERR_CUDA);
    assert_non_null(strstr(splade_error_detail(), "encoder 0 of 1 (the CPU): failure injected in its batch 3"));
    assert_non_null(strstr(splade_error_detail(), "SPLADE_TEST_ENCODER_FAIL"));
    assert_true(all_empty(g_out, N));
    assert_int_equal(splade_encoder_encode_ids(e, ids, off, N, g_out), SPLADE_OK); /* batches 22.. */
    for (int i = 0; i < N; i++)
        assert_true(g_out[i].n > 0);
    assert_same_n(g_ref, g_out, N);
    free_all_n(g_out, N);
    set_fault(NULL);
    assert_int_equal(splade_encoder_encode_ids(e, ids, off, N, g_out), SPLADE_OK);
    assert_same_n(g_ref, g_out, N);
    free_all_n(g_out, N);
    splade_encoder_free(e);

    set_fault("0:1:-9");
    assert_int_equal(splade_encoder_create(&g_m, &o, &e), SPLADE_OK);
    assert_int_equal(splade_encoder_encode_ids(e, ids, off, N, g_out), SPLADE_ERR_GPU_OOM);
    assert_non_null(strstr(splade_error_detail(), "failure injected in its batch 1"));
    assert_true(all_empty(g_out, N));
    splade_encoder_free(e);
    set_fault(NULL);
    free_all_n(g_ref, N);
    free(ids), free(off);
}

/* Malformed or out-of-range settings are off; the parts are read as documented. */
static void test_fault_setting(void **state)
{
    (void)state;
    const char *off[] = {"", "0", "0:", "0:0", "-1:2", "0:2:", "0:2:8", "0:2:0", "0:2:-8x", "x:2", "0:2:-8:1", "0;2"};
    for (size_t i = 0; i < sizeof off / sizeof *off; i++) {
        set_fault(off[i]);
        if (splade_settings_get()->encoder_fail_slot != -1)
            fail_msg("SPLADE_TEST_ENCODER_FAIL=\"%s\" was taken", off[i]);
    }
    set_fault("3:7");
    assert_int_equal(splade_settings_get()->encoder_fail_slot, 3);
    assert_int_equal(splade_settings_get()->encoder_fail_batch, 7);
    assert_int_equal(splade_settings_get()->encoder_fail_code, 0); /* the encoder's default: SPLADE_ERR_CUDA */
    set_fault("0:1:-9");
    assert_int_equal(splade_settings_get()->encoder_fail_code, SPLADE_ERR_GPU_OOM);
    set_fault(NULL);
    assert_int_equal(splade_settings_get()->encoder_fail_slot, -1);
}

/* The text path (splade_encoder_encode, splade-tiny): the same clean failure, then a working call. */
static void test_fault_cpu_texts(void **state)
{
    (void)state;
    const char *dir = getenv("SPLADE_TINY_DIR") ? getenv("SPLADE_TINY_DIR") : "cache/splade-tiny";
    splade_model *m = NULL;
    if (splade_model_load(dir, &m) != SPLADE_OK) {
        printf("  skipped: no splade-tiny at %s (`make models`)\n", dir);
        skip();
    }
    enum { N = 40 };
    static char buf[N][64];
    const char *texts[N];
    for (int i = 0; i < N; i++) {
        snprintf(buf[i], sizeof buf[i], "protein %d folds in the cell %s", i, i % 3 ? "membrane" : "nucleus");
        texts[i] = buf[i];
    }
    splade_encoder_opts o;
    splade_encoder_opts_init(&o);
    o.device = SPLADE_DEVICE_CPU;
    o.quiet = 1;
    o.batch_size = 8;
    splade_encoder *e = NULL;
    static splade_sparse out[N];
    set_fault("0:2");
    assert_int_equal(splade_encoder_create(m, &o, &e), SPLADE_OK);
    int cut = -1;
    assert_int_equal(splade_encoder_encode(e, texts, NULL, N, out, &cut), SPLADE_ERR_CUDA);
    assert_non_null(strstr(splade_error_detail(), "failure injected in its batch 2 (SPLADE_TEST_ENCODER_FAIL)"));
    assert_true(all_empty(out, N));
    set_fault(NULL);
    assert_int_equal(splade_encoder_encode(e, texts, NULL, N, out, &cut), SPLADE_OK);
    assert_int_equal(cut, 0);
    for (int i = 0; i < N; i++) {
        assert_true(out[i].n > 0);
        splade_sparse_free(&out[i]);
    }
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
    assert_same_n(a, b, N_TEXTS);
}

static void free_all(splade_sparse *v)
{
    free_all_n(v, N_TEXTS);
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

/* ---- groups (splade_encoder_encode_ids_grouped: a build hands eight groups to a list at once) ---- */

/* One grouped call against one call per group: the same vectors, and the same batches (as many as
 * the groups cut apart form: a batch crossing a group would change the count). One encoder of
 * `single` for the per-group calls, one of `devices` for the grouped call. */
static void compare_grouped(const char *single, const char *devices, int group, uint64_t seed)
{
    static splade_sparse ref[N_TEXTS], got[N_TEXTS];
    splade_encoder_opts o = base_opts();
    splade_encoder *one = NULL, *many = NULL;
    assert_int_equal(splade_parse_devices(single, &o), SPLADE_OK);
    assert_int_equal(splade_encoder_create(&g_m, &o, &one), SPLADE_OK);
    assert_int_equal(splade_parse_devices(devices, &o), SPLADE_OK);
    assert_int_equal(splade_encoder_create(&g_m, &o, &many), SPLADE_OK);
    texts t = make_texts(seed);
    int expect = 0;
    for (int from = 0; from < N_TEXTS; from += group) {
        const int n = N_TEXTS - from < group ? N_TEXTS - from : group;
        assert_int_equal(splade_encoder_encode_ids(one, t.ids, t.off + from, n, ref + from), SPLADE_OK);
        expect += (n + o.batch_size - 1) / o.batch_size;
    }
    assert_int_equal(splade_encoder_batches_run(one), expect);
    printf("  %s, groups of %d: %d batches\n", devices, group, expect);
    assert_int_equal(splade_encoder_encode_ids_grouped(many, t.ids, t.off, N_TEXTS, group, got), SPLADE_OK);
    assert_same(ref, got);
    assert_int_equal(splade_encoder_batches_run(many), expect);
    free_all(ref);
    free_all(got);
    free(t.ids), free(t.off);
    splade_encoder_free(one);
    splade_encoder_free(many);
}

static void test_groups_cpu(void **state)
{
    (void)state;
    static const int groups[] = {1, 7, 16, 40, 256, N_TEXTS, 1000};
    for (int g = 0; g < 7; g++)
        compare_grouped("cpu", "cpu", groups[g], 300 + (uint64_t)g);
}

/* On the GPU a batch's shape picks the GEMM kernels, so regrouped texts would change bits too. */
static void test_groups_gpu(void **state)
{
    (void)state;
    if (!gpu_or_skip())
        skip();
    static const int groups[] = {7, 40, 256};
    for (int g = 0; g < 3; g++) {
        compare_grouped("cuda:0", "cuda:0", groups[g], 400 + (uint64_t)g);
        compare_grouped("cuda:0", "cuda:0,0,0", groups[g], 500 + (uint64_t)g);
        compare_grouped("cuda:0", "cuda:all", groups[g], 600 + (uint64_t)g);
    }
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

/* The warnings logged during a call (the callback must be thread safe: a worker thread logs them). */
typedef struct {
    pthread_mutex_t mu;
    int n;
    char last[1024];
} warnings;

static void keep_warning(void *user, int level, const char *msg)
{
    warnings *w = user;
    if (level != SPLADE_LOG_WARNING)
        return;
    pthread_mutex_lock(&w->mu);
    w->n++;
    snprintf(w->last, sizeof w->last, "%s", msg);
    pthread_mutex_unlock(&w->mu);
}

/* An encoder of g_m on the --device list `devices` with options o (asserted to be created). */
static splade_encoder *create_on(const char *devices, splade_encoder_opts o)
{
    splade_encoder *e = NULL;
    assert_int_equal(splade_parse_devices(devices, &o), SPLADE_OK);
    assert_int_equal(splade_encoder_create(&g_m, &o, &e), SPLADE_OK);
    return e;
}

/* e's encoding of t into out with SPLADE_TEST_ENCODER_FAIL=fault, the warnings it logs into w. */
static int encode_faulty(splade_encoder *e, const texts *t, splade_sparse *out, const char *fault, warnings *w)
{
    set_fault(fault);
    splade_set_log(keep_warning, w);
    const int rc = splade_encoder_encode_ids(e, t->ids, t->off, N_TEXTS, out);
    splade_set_log(NULL, NULL);
    set_fault(NULL);
    return rc;
}

/* Two encoders on GPU 0; the second fails its 2nd batch as a faulty GPU would (SPLADE_TEST_ENCODER_FAIL):
 * give_back hands that batch to the first, which finishes the call alone. The vectors are one encoder's,
 * bit for bit, and one warning names the failure. The same with the first encoder failing. (Each
 * encoder takes batches as it frees up; 84 batches of 4: the failing one reaches its 2nd.) */
static void test_fault_moves_batch(void **state)
{
    (void)state;
    if (!gpu_or_skip())
        skip();
    static splade_sparse one[N_TEXTS], many[N_TEXTS];
    texts t = make_texts(505);
    splade_encoder_opts o = base_opts();
    o.batch_size = 4;
    set_fault(NULL);
    assert_int_equal(encode_with("cuda:0", o, &t, one), SPLADE_OK);
    const char *faults[] = {"1:2", "0:2"};
    const char *want[] = {"GPU 0 failed (encoder 1 of 2 (GPU 0): failure injected in its batch 2 "
                          "(SPLADE_TEST_ENCODER_FAIL)); its batch moves to another GPU, 1 left",
                          "GPU 0 failed (encoder 0 of 2 (GPU 0): failure injected in its batch 2"};
    for (int f = 0; f < 2; f++) {
        printf("  SPLADE_TEST_ENCODER_FAIL=%s on cuda:0,0\n", faults[f]);
        warnings w = {.mu = PTHREAD_MUTEX_INITIALIZER};
        splade_encoder *e = create_on("cuda:0,0", o);
        assert_int_equal(encode_faulty(e, &t, many, faults[f], &w), SPLADE_OK);
        splade_encoder_free(e);
        assert_int_equal(w.n, 1);
        if (!strstr(w.last, want[f]))
            fail_msg("warning \"%s\"", w.last);
        assert_same(one, many);
        free_all(many);
    }
    free_all(one);
    free(t.ids), free(t.off);
}

/* A single GPU encoder (a one-entry list, or the current device) that fails has no other to hand its
 * batch to: the call fails with the fault's code and detail, leaves nothing in out, and logs no warning;
 * the encoder works after. */
static void test_fault_single_gpu(void **state)
{
    (void)state;
    if (!gpu_or_skip())
        skip();
    static splade_sparse one[N_TEXTS], out[N_TEXTS];
    texts t = make_texts(606);
    const splade_encoder_opts o = base_opts();
    set_fault(NULL);
    assert_int_equal(encode_with("cuda:0", o, &t, one), SPLADE_OK);
    const char *devices[] = {"cuda:0", "cuda"};
    const char *where[] = {"encoder 0 of 1 (GPU 0): failure injected in its batch 2",
                           "encoder 0 of 1 (the current GPU): failure injected in its batch 2"};
    for (int d = 0; d < 2; d++) {
        splade_encoder *e = create_on(devices[d], o);
        warnings w = {.mu = PTHREAD_MUTEX_INITIALIZER};
        assert_int_equal(encode_faulty(e, &t, out, "0:2", &w), SPLADE_ERR_CUDA);
        if (!strstr(splade_error_detail(), where[d]))
            fail_msg("detail \"%s\"", splade_error_detail());
        assert_true(all_empty(out, N_TEXTS));
        assert_int_equal(w.n, 0);
        assert_int_equal(splade_encoder_encode_ids(e, t.ids, t.off, N_TEXTS, out), SPLADE_OK);
        assert_same(one, out);
        free_all(out);
        splade_encoder_free(e);
    }
    free_all(one);
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
        cmocka_unit_test(test_fault_setting),
        cmocka_unit_test(test_fault_cpu_ids),
        cmocka_unit_test(test_fault_cpu_texts),
        cmocka_unit_test(test_same_bits_bf16),
        cmocka_unit_test(test_same_bits_fp32_dense_topk),
        cmocka_unit_test(test_same_bits_when_splitting),
        cmocka_unit_test(test_groups_cpu),
        cmocka_unit_test(test_groups_gpu),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_missing_device),
        cmocka_unit_test(test_fault_moves_batch),
        cmocka_unit_test(test_fault_single_gpu),
    };
    return cmocka_run_group_tests(tests, setup_model, teardown_model);
}
