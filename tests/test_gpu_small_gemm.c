/* The GPU encoder's own GEMMs for small batches (src/encoder/gpu_gemm_small.cu) and cuBLAS loaded on
 * first use (src/gpu/cublas_lazy.c), issue #13's start-up:
 *
 *   - a warm-up for one text per forward, an encoder's creation and its forwards of single sequences
 *     (up to 512 tokens) and of batches of <= 64 tokens never load libcublasLt: the process's own
 *     record (splade_cublas_lazy_loaded) and /proc/self/maps, which the library cannot fake;
 *   - those forwards agree with the same batches run through cuBLASLt (SPLADE_GPU_SMALL_GEMM=0, a
 *     second encoder on the same model): NVIDIA's GEMMs as the independent reference, rel-L2 of
 *     [B, V] <= 1e-2 and the same top-20 terms up to near-ties within 0.05 for >= 90% of sequences;
 *     the model's FFN width (200) is not a multiple of the kernel's K step (32), so the zero-filled
 *     tail of K runs too, and 3H = 192 outputs span a partial tile;
 *   - the cuBLASLt encoder then has loaded libcublasLt (so the check above can fail).
 * The case table of test_encoder_backends.c covers the kernel against float64 on every random model
 * (bench/gpu.sh runs it again with SPLADE_GPU_SMALL_GEMM=1000000: every batch through the kernel).
 * One process, tests in order: nothing may load cuBLASLt before the first test. Skips visibly
 * without a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/settings.h"
#include "encoder/gpu_encoder.h"
#include "encoder/model_internal.h"
#include "splade.h"
#include "splade/encoder.h"
#include "splade/model.h"

#include "gpu_random_model.h"
#include "gpu_test_util.h"
#include "topk_agree.h"

#ifdef SPLADE_HAVE_CUDA
#include "gpu/cublas_lazy.h"

enum { V = 1000, N_BATCHES = 4 };

/* Single sequences (one of them long), and batches of at most 64 tokens. */
static const int lens0[] = {300}, lens1[] = {5, 20, 39}, lens2[] = {1, 7}, lens3[] = {64};
static const int *const batch_lens[N_BATCHES] = {lens0, lens1, lens2, lens3};
static const int batch_b[N_BATCHES] = {1, 3, 2, 1};

static splade_model g_model;
static float *g_small[N_BATCHES]; /* [B, V] through gpu_gemm_small.cu */

static int maps_have(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f))
        found = strstr(line, name) != NULL;
    if (f)
        fclose(f);
    return found;
}

static void use_small_gemm(const char *value)
{
    setenv("SPLADE_GPU_SMALL_GEMM", value, 1);
    splade_settings_reload();
}

/* Every batch through an encoder created now; out[i] malloc'ed [B, V]. */
static void run_batches(float **out)
{
    splade_gpu_encoder *g = NULL;
    int rc = splade_gpu_encoder_create(&g_model, SPLADE_LMHEAD_FUSED, &g);
    if (rc)
        fail_msg("create: %s: %s", splade_strerror(rc), splade_error_detail());
    for (int i = 0; i < N_BATCHES; i++) {
        int32_t *ids, *off;
        rm_make_batch(batch_lens[i], batch_b[i], V, 40 + i, &ids, &off);
        out[i] = malloc((size_t)batch_b[i] * V * sizeof *out[i]);
        assert_non_null(out[i]);
        rc = splade_gpu_encoder_forward(g, ids, off, batch_b[i], out[i]);
        if (rc)
            fail_msg("forward of batch %d: %s: %s", i, splade_strerror(rc), splade_error_detail());
        free(ids), free(off);
    }
    splade_gpu_encoder_free(g);
}

static void test_small_batches_never_load_cublaslt(void **state)
{
    (void)state;
    if (!gpu_available())
        skip();
    assert_false(splade_cublas_lazy_loaded(1));
    assert_false(maps_have("libcublasLt"));
    /* the CLI's warm-up for one text: context, no cuBLASLt set-up */
    splade_encoder_opts o;
    splade_encoder_opts_init(&o);
    o.device = SPLADE_DEVICE_CUDA;
    o.batch_size = 1;
    splade_encoder_warm_finish(splade_encoder_warm_start(&o));
    assert_false(splade_cublas_lazy_loaded(1));
    g_model.cfg = rm_config(V, 64, 2, 2, 200, 512, 0);
    assert_int_equal(rm_build(&g_model, 4242), 0);
    use_small_gemm("64");
    run_batches(g_small);
    printf("  after %d small forwards: libcublasLt loaded %d, mapped %d\n", N_BATCHES, splade_cublas_lazy_loaded(1),
           maps_have("libcublasLt"));
    assert_false(splade_cublas_lazy_loaded(1));
    assert_false(maps_have("libcublasLt"));
}

static void test_small_gemm_agrees_with_cublaslt(void **state)
{
    (void)state;
    if (!gpu_available() || !g_small[0])
        skip();
    float *lt[N_BATCHES];
    use_small_gemm("0");
    run_batches(lt);
    use_small_gemm("64");
    assert_true(splade_cublas_lazy_loaded(1));
    assert_true(maps_have("libcublasLt"));
    int seqs = 0, agree = 0;
    for (int i = 0; i < N_BATCHES; i++) {
        double num = 0, den = 0;
        for (size_t j = 0; j < (size_t)batch_b[i] * V; j++) {
            assert_true(isfinite(g_small[i][j]));
            num += ((double)g_small[i][j] - lt[i][j]) * ((double)g_small[i][j] - lt[i][j]);
            den += (double)lt[i][j] * lt[i][j];
        }
        const double rel = den > 0 ? sqrt(num / den) : sqrt(num);
        for (int b = 0; b < batch_b[i]; b++) {
            int strict, tolerant, near;
            ta_compare(g_small[i] + (size_t)b * V, lt[i] + (size_t)b * V, V, 20, 0.05f, &strict, &tolerant, &near);
            seqs++, agree += tolerant;
        }
        printf("  batch %d (B %d): rel-L2 own kernel vs cuBLASLt %.2e\n", i, batch_b[i], rel);
        assert_true(rel <= 1e-2);
        free(lt[i]), free(g_small[i]);
        g_small[i] = NULL;
    }
    printf("  top-20 agreement (near-ties 0.05): %d of %d sequences\n", agree, seqs);
    assert_true(agree * 10 >= seqs * 9);
    rm_free(&g_model);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_batches_never_load_cublaslt),
        cmocka_unit_test(test_small_gemm_agrees_with_cublaslt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
static void test_no_cuda(void **state)
{
    (void)state;
    printf("  (skipping: built without CUDA)\n");
    skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_no_cuda)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
