/* GPU LM heads (fused: wgmma and mma.sync paths; naive: cuBLAS + eager-style ops) against a
 * double-precision CPU reference written here, on fresh random inputs per case.
 * Checks: output poisoned (NaN) before each run and every element written; rel-L2 <= 1e-3
 * (fused) / 1e-2 (naive, bf16 logits like PyTorch eager); same nonzero set except entries
 * below 1e-3; padding rows hold NaN or huge values that must never count.
 * Skips visibly without a GPU. SPLADE_LMHEAD_TEST_SMALL=1 keeps to small shapes (sanitizers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/settings.h"
#include "splade.h"
#include "encoder/gpu_encoder.h"
#include "lmhead_fused/lmhead.h"

#include "gpu_test_util.h"

#ifdef SPLADE_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>

typedef struct {
    const char *name;
    int B, S, D, V;
    int packed;    /* sequences back to back with garbage rows between them (2: and none after the last,
                    * so a tile of the last sequence reaches past the end of H) */
    int pad_kind;  /* 0: NaN padding rows, 1: huge (+-1e30) */
    int lens_mode; /* 0: all S, 1: random in [2, S], 2: explicit list */
    int lens[8];
    int col_stride; /* compare every col_stride-th vocabulary column (+ the last 300); 1: all */
    int small;      /* part of the SMALL (sanitizer) set */
    int group;      /* > 0: force the raster group size (SPLADE_LMHEAD_GROUP) */
} tcase;

static const tcase cases[] = {
    {"B1 S5 D128 V1000", 1, 5, 128, 1000, 0, 0, 0, {0}, 1, 1, 0},
    {"B3 S37 D768 V1000 lens 37,2,20", 3, 37, 768, 1000, 0, 0, 2, {37, 2, 20}, 1, 1, 0},
    {"B4 S70 D128 V30522 NaN pad", 4, 70, 128, 30522, 0, 0, 1, {0}, 1, 1, 0},
    {"B3 S64 D768 V30522 lens 2,2,33 huge pad", 3, 64, 768, 30522, 0, 1, 2, {2, 2, 33}, 1, 0, 0},
    {"B2 S9 D768 V250002 lens 9,4", 2, 9, 768, 250002, 0, 0, 2, {9, 4}, 1, 0, 0},
    {"B1 S3 D128 V250002", 1, 3, 128, 250002, 0, 1, 0, {0}, 1, 1, 0},
    {"packed B5 D768 V1000 lens 17,0,2,40,9", 5, 40, 768, 1000, 1, 0, 2, {17, 0, 2, 40, 9}, 1, 1, 0},
    {"split B1 S300 D128 V1000", 1, 300, 128, 1000, 0, 0, 0, {0}, 1, 1, 0},
    {"B2 S500 D768 V1000 lens 500,300", 2, 500, 768, 1000, 0, 1, 2, {500, 300}, 1, 0, 0},
    {"B16 S200 D768 V30522 group 5 (sampled cols)", 16, 200, 768, 30522, 0, 0, 1, {0}, 61, 0, 5},
    {"B40 S128 D768 V30522 group 7 (sampled cols)", 40, 128, 768, 30522, 0, 1, 1, {0}, 97, 0, 7},
    {"B7 S33 D128 V1000 group 2", 7, 33, 128, 1000, 0, 0, 1, {0}, 1, 1, 2},
    {"packed to the end B3 D200 V1000 lens 260,5,300", 3, 300, 200, 1000, 2, 1, 2, {260, 5, 300}, 1, 1, 0},
    {"B2 S20 D40 V1000 (D < 64)", 2, 20, 40, 1000, 0, 0, 0, {0}, 1, 1, 0},
};
#define NCASES (int)(sizeof cases / sizeof *cases)

static int g_gpu = -1;
static char g_gpu_name[256];
static cublasHandle_t g_cublas;

/* ---- random numbers (xorshift64*, Box-Muller) and bf16 ---- */
static uint64_t g_rng;
static double urand(void)
{
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return ((g_rng * 2685821657736338717ULL) >> 11) * (1.0 / 9007199254740992.0);
}
static double nrand(void)
{
    double u = urand(), v = urand();
    if (u < 1e-300)
        u = 1e-300;
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}
static uint16_t f2bf(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return 0x7fc0;
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}
static double bf2d(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* ---- double-precision reference over a set of columns, threaded over columns ---- */
typedef struct {
    const uint16_t *H, *W;
    const float *bias;
    const int32_t *start, *len;
    int B, D;
    const int32_t *cols;
    int ncols, c0, c1;
    double *ref; /* [B][ncols] */
} ref_job;

static void *ref_worker(void *p)
{
    ref_job *j = p;
    double *h = malloc(sizeof(double) * j->D), *w = malloc(sizeof(double) * j->D);
    for (int ci = j->c0; ci < j->c1; ci++) {
        const int v = j->cols[ci];
        for (int d = 0; d < j->D; d++)
            w[d] = bf2d(j->W[(size_t)v * j->D + d]);
        for (int b = 0; b < j->B; b++) {
            double m = -INFINITY;
            for (int s = 0; s < j->len[b]; s++) {
                const uint16_t *hr = j->H + (size_t)(j->start[b] + s) * j->D;
                double acc = 0;
                for (int d = 0; d < j->D; d++)
                    acc += bf2d(hr[d]) * w[d];
                if (acc > m)
                    m = acc;
            }
            m += j->bias[v];
            j->ref[(size_t)b * j->ncols + ci] = m > 0 ? log1p(m) : 0.0;
        }
    }
    free(h);
    free(w);
    return NULL;
}

static void reference(const uint16_t *H, const uint16_t *W, const float *bias, const int32_t *start,
                      const int32_t *len, int B, int D, const int32_t *cols, int ncols, double *ref)
{
    long nt = sysconf(_SC_NPROCESSORS_ONLN);
    if (nt < 1)
        nt = 1;
    if (nt > 32)
        nt = 32;
    pthread_t th[32];
    ref_job jobs[32];
    for (int t = 0; t < nt; t++) {
        jobs[t] = (ref_job){H, W, bias, start, len, B, D, cols, ncols, (int)((long)ncols * t / nt),
                            (int)((long)ncols * (t + 1) / nt), ref};
        assert_int_equal(pthread_create(&th[t], NULL, ref_worker, &jobs[t]), 0);
    }
    for (int t = 0; t < nt; t++)
        pthread_join(th[t], NULL);
}

/* ---- one case ---- */
static int gpu_or_skip(void)
{
    if (g_gpu < 0)
        g_gpu = splade_gpu_probe(g_gpu_name, sizeof g_gpu_name);
    if (!g_gpu) {
        print_message("    [lmhead_gpu] skipped: no usable GPU (%s)\n", g_gpu_name);
        return 0;
    }
    if (!g_cublas)
        assert_int_equal(cublasCreate(&g_cublas), CUBLAS_STATUS_SUCCESS);
    return 1;
}

static void run_case(const tcase *tc)
{
    const int small_only = getenv("SPLADE_LMHEAD_TEST_SMALL") && atoi(getenv("SPLADE_LMHEAD_TEST_SMALL"));
    if (small_only && !tc->small) {
        print_message("    [lmhead_gpu] %s: not in the small set (SPLADE_LMHEAD_TEST_SMALL)\n", tc->name);
        skip();
    }
    const uint64_t seed = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid() * 7919u ^ (uint64_t)(tc - cases) * 104729u;
    g_rng = seed | 1;
    const int B = tc->B, S = tc->S, D = tc->D, V = tc->V;
    int rows = 0, max_len = 0;
    int32_t *starts = malloc(sizeof(int32_t) * B), *lens = malloc(sizeof(int32_t) * B);
    for (int b = 0; b < B; b++) {
        lens[b] = tc->lens_mode == 0 ? S : tc->lens_mode == 1 ? 2 + (int)(urand() * (S - 1)) : tc->lens[b];
        if (lens[b] > S)
            lens[b] = S;
        if (lens[b] > max_len)
            max_len = lens[b];
        if (tc->packed) {
            rows += 3; /* garbage rows between sequences */
            starts[b] = rows;
            rows += lens[b];
        } else {
            starts[b] = b * S;
            rows = (b + 1) * S;
        }
    }
    if (tc->packed == 1)
        rows += 3;
    /* inputs: valid rows N(0,1); padding rows NaN or huge; W scaled so logits ~ N(0, 0.3^2) */
    uint16_t *H = malloc(sizeof(uint16_t) * (size_t)rows * D);
    const uint16_t pad_val = tc->pad_kind == 0 ? 0x7fc0 : f2bf(1e30f);
    for (size_t i = 0; i < (size_t)rows * D; i++)
        H[i] = tc->pad_kind == 0 ? pad_val : (i & 1 ? pad_val : (uint16_t)(pad_val | 0x8000));
    for (int b = 0; b < B; b++)
        for (int s = 0; s < lens[b]; s++)
            for (int d = 0; d < D; d++)
                H[(size_t)(starts[b] + s) * D + d] = f2bf((float)nrand());
    uint16_t *W = malloc(sizeof(uint16_t) * (size_t)V * D);
    const double wscale = 0.3 / sqrt((double)D);
    for (size_t i = 0; i < (size_t)V * D; i++)
        W[i] = f2bf((float)(nrand() * wscale));
    float *bias = malloc(sizeof(float) * V);
    for (int v = 0; v < V; v++)
        bias[v] = (float)(nrand() * 0.05);

    /* columns compared */
    int32_t *cols = malloc(sizeof(int32_t) * V);
    int ncols = 0;
    for (int v = 0; v < V; v++)
        if (v % tc->col_stride == 0 || v >= V - 300)
            cols[ncols++] = v;
    double *ref = malloc(sizeof(double) * (size_t)B * ncols);
    reference(H, W, bias, starts, lens, B, D, cols, ncols, ref);

    /* device */
    void *dH, *dW, *dws = NULL;
    float *dbias, *dout;
    int32_t *dstart, *dlen;
    CK(cudaMalloc(&dH, sizeof(uint16_t) * (size_t)rows * D));
    CK(cudaMalloc(&dW, sizeof(uint16_t) * (size_t)V * D));
    CK(cudaMalloc((void **)&dbias, sizeof(float) * V));
    CK(cudaMalloc((void **)&dout, sizeof(float) * (size_t)B * V));
    CK(cudaMalloc((void **)&dstart, sizeof(int32_t) * B));
    CK(cudaMalloc((void **)&dlen, sizeof(int32_t) * B));
    CK(cudaMemcpy(dH, H, sizeof(uint16_t) * (size_t)rows * D, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dW, W, sizeof(uint16_t) * (size_t)V * D, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dbias, bias, sizeof(float) * V, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dstart, starts, sizeof(int32_t) * B, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dlen, lens, sizeof(int32_t) * B, cudaMemcpyHostToDevice));
    splade_lmhead_args a = {dH, dstart, dlen, B, max_len, D, V, dW, dbias, dout, rows};
    const size_t ws_bytes = splade_lmhead_workspace_bytes(SPLADE_LMHEAD_NAIVE, &a);
    CK(cudaMalloc(&dws, ws_bytes));
    float *out = malloc(sizeof(float) * (size_t)B * V);

    print_message("    [lmhead_gpu] %s: seed %llu, %d rows, %d cols compared\n", tc->name,
                  (unsigned long long)seed, rows, ncols);
    char gbuf[16];
    snprintf(gbuf, sizeof gbuf, "%d", tc->group);
    if (tc->group > 0)
        setenv("SPLADE_LMHEAD_GROUP", gbuf, 1);
    else
        unsetenv("SPLADE_LMHEAD_GROUP");
    /* runs: fused auto (the TMA kernel v7 where available), mma.sync, each wgmma tile forced through
     * the planner's env knob: TMA (SPLADE_LMHEAD_TMA=1: 128x256, 256x128), v5 (TMA off: every tile;
     * "v5 auto" withholds H's extent, H_rows = 0, which must fall back to v5), the warp-specialised
     * v6 (SPLADE_LMHEAD_WS=1, once with the producer's lag 1), naive */
    enum { NRUN = 12, NAIVE = NRUN - 1 };
    const char *names[NRUN] = {"auto (default)", "fused(mma.sync)", "tma 128x256", "tma 256x128", "v5 auto H_rows=0",
                               "v5 128x256", "wgmma 192x256", "v5 256x128", "wgmma 192x256p2", "ws 128x256",
                               "ws 256x128 lag1", "naive"};
    const char *tiles[NRUN] = {NULL, NULL, "128x256", "256x128", NULL, "128x256", "192x256", "256x128", "192x256p2",
                               "128x256", "256x128", NULL};
    const char *tmav[NRUN] = {"1", "1", "1", "1", "1", "0", "0", "0", "0", "0", "0", "1"};
    const char *wsv[NRUN] = {"0", "0", "0", "0", "0", "0", "0", "0", "0", "1", "1", "0"};
    for (int k = 0; k < NRUN; k++) {
        splade_lmhead_plan pl = {0};
        const splade_fused_path path = k == 0 || k == 4 ? SPLADE_FUSED_AUTO
                                       : k == 1         ? SPLADE_FUSED_MMA_SYNC
                                                        : SPLADE_FUSED_WGMMA;
        if (tiles[k])
            setenv("SPLADE_LMHEAD_WGMMA_TILE", tiles[k], 1);
        else
            unsetenv("SPLADE_LMHEAD_WGMMA_TILE");
        setenv("SPLADE_LMHEAD_WS", wsv[k], 1);
        setenv("SPLADE_LMHEAD_TMA", tmav[k], 1);
        setenv("SPLADE_LMHEAD_WS_LAG", k == 10 ? "1" : "2", 1);
        splade_settings_reload(); /* the knobs are read once per process otherwise */
        a.H_rows = k == 4 ? 0 : rows;
        if (k < NAIVE) {
            int st = splade_lmhead_fused_plan(path, &a, &pl);
            if (k >= 2 && st == SPLADE_ERR_UNSUPPORTED) {
                print_message("    [lmhead_gpu]   %-16s not available on this device/build\n", names[k]);
                continue;
            }
            assert_int_equal(st, SPLADE_OK);
        }
        CK(cudaMemset(dout, 0xff, sizeof(float) * (size_t)B * V)); /* poison: NaN */
        int st = k < NAIVE ? splade_lmhead_gpu_fused(path, &a, NULL)
                       : splade_lmhead_gpu(SPLADE_LMHEAD_NAIVE, &a, dws, ws_bytes, g_cublas, NULL);
        if (st)
            fail_msg("%s: %s (%s)", names[k], splade_strerror(st), splade_error_detail());
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(out, dout, sizeof(float) * (size_t)B * V, cudaMemcpyDeviceToHost));
        size_t unwritten = 0, negative = 0;
        for (size_t i = 0; i < (size_t)B * V; i++) {
            if (!isfinite(out[i]))
                unwritten++;
            else if (out[i] < 0)
                negative++;
        }
        double num = 0, den = 0, maxerr = 0;
        size_t nz_mismatch = 0, nz = 0;
        for (int b = 0; b < B; b++)
            for (int ci = 0; ci < ncols; ci++) {
                const double r = ref[(size_t)b * ncols + ci], g = out[(size_t)b * V + cols[ci]];
                if (!isfinite(g))
                    continue;
                num += (g - r) * (g - r);
                den += r * r;
                if (fabs(g - r) > maxerr)
                    maxerr = fabs(g - r);
                nz += r > 0;
                if ((r >= 1e-3 && !(g > 0)) || (g >= 1e-3 && !(r > 0)))
                    nz_mismatch++;
            }
        const double rel = den > 0 ? sqrt(num / den) : sqrt(num);
        const double tol = k < NAIVE ? 1e-3 : 1e-2;
        print_message("    [lmhead_gpu]   %-16s tile %dx%d split %d: rel-L2 %.2e max|err| %.2e nonzero %zu "
                      "mismatch %zu unwritten %zu\n",
                      names[k], pl.bm, pl.bn, pl.nsplit, rel, maxerr, nz, nz_mismatch, unwritten);
        if (k < NAIVE)
            print_message("    [lmhead_gpu]   %-16s (kernel %s, raster group %d, %d units, grid %d)\n", "",
                          pl.path != SPLADE_FUSED_WGMMA ? "mma.sync" : pl.tile >= 4 ? "tma" : "wgmma", pl.group,
                          pl.units, pl.grid);
        /* the default on a Hopper build must be the TMA kernel when H's extent is known, and never without it */
        if (k == 0 && pl.path == SPLADE_FUSED_WGMMA && D >= 64 && pl.tile < 4)
            fail_msg("auto: wgmma path chose tile %d, not the TMA kernel", pl.tile);
        if (k == 4 && pl.tile >= 4)
            fail_msg("H_rows = 0 must not pick the TMA kernel (tile %d)", pl.tile);
        if (unwritten || negative)
            fail_msg("%s: %zu outputs not written (NaN poison left), %zu negative", names[k], unwritten, negative);
        if (!(rel <= tol))
            fail_msg("%s: rel-L2 %.3e > %.0e", names[k], rel, tol);
        if (nz_mismatch)
            fail_msg("%s: %zu entries differ in the nonzero set", names[k], nz_mismatch);
    }
    unsetenv("SPLADE_LMHEAD_WGMMA_TILE");
    unsetenv("SPLADE_LMHEAD_GROUP");
    unsetenv("SPLADE_LMHEAD_WS");
    unsetenv("SPLADE_LMHEAD_TMA");
    unsetenv("SPLADE_LMHEAD_WS_LAG");
    splade_settings_reload();
    CK(cudaFree(dH));
    CK(cudaFree(dW));
    CK(cudaFree(dbias));
    CK(cudaFree(dout));
    CK(cudaFree(dstart));
    CK(cudaFree(dlen));
    CK(cudaFree(dws));
    free(H);
    free(W);
    free(bias);
    free(cols);
    free(ref);
    free(out);
    free(starts);
    free(lens);
}

static void test_case(void **state)
{
    const tcase *tc = *state;
    if (!gpu_or_skip())
        skip();
    run_case(tc);
}

static void test_bad_args(void **state)
{
    (void)state;
    if (!gpu_or_skip())
        skip();
    splade_lmhead_args a;
    memset(&a, 0, sizeof a);
    assert_int_equal(splade_lmhead_gpu(SPLADE_LMHEAD_FUSED, NULL, NULL, 0, NULL, NULL), SPLADE_ERR_INVALID_ARG);
    assert_int_equal(splade_lmhead_gpu(SPLADE_LMHEAD_FUSED, &a, NULL, 0, NULL, NULL), SPLADE_ERR_INVALID_ARG);
    static uint16_t dummy[64] __attribute__((aligned(16)));
    static int32_t di[2];
    static float df[4];
    a = (splade_lmhead_args){dummy, di, di, 1, 1, 100, 4, dummy, df, df, 1};
    assert_int_equal(splade_lmhead_gpu(SPLADE_LMHEAD_FUSED, &a, NULL, 0, NULL, NULL), SPLADE_ERR_UNSUPPORTED);
    a.D = 64;
    assert_int_equal(splade_lmhead_gpu(SPLADE_LMHEAD_NAIVE, &a, NULL, 0, NULL, NULL), SPLADE_ERR_INVALID_ARG);
}

int main(void)
{
    struct CMUnitTest tests[NCASES + 1];
    static char names[NCASES][96];
    for (int i = 0; i < NCASES; i++) {
        snprintf(names[i], sizeof names[i], "lmhead_gpu %s", cases[i].name);
        tests[i] = (struct CMUnitTest){names[i], test_case, NULL, NULL, (void *)&cases[i]};
    }
    tests[NCASES] = (struct CMUnitTest){"lmhead_gpu bad args", test_bad_args, NULL, NULL, NULL};
    int rc = _cmocka_run_group_tests("lmhead_gpu", tests, NCASES + 1, NULL, NULL);
    if (g_cublas)
        cublasDestroy(g_cublas);
    return rc;
}

#else /* built without CUDA */

static void test_no_cuda(void **state)
{
    (void)state;
    print_message("    [lmhead_gpu] skipped: this build has no CUDA support\n");
    skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_no_cuda)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
