/* GPU encoder benchmark: the end-to-end SPLADE forward (bert-base shapes, random weights built in
 * memory) at fixed batch shapes, and on pre-tokenized real documents (variable lengths, packed).
 *
 *   bench_encoder_gpu [--docs FILE] [--iters N] [--quick]
 *
 * FILE: int32 n, int32 len[n], then the ids of every document back to back (bench/gpu_encoder.sh
 * writes it from SciFact). Times are medians of N runs after warm-up, host clock around calls that
 * end with a device synchronisation: "gpu ms" leaves the [B,V] result on the device (as the PyTorch
 * peer does), "e2e ms" also copies it to host memory. Exits 0 with a notice when no GPU is usable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "splade.h"
#include "splade/gpu.h"
#include "splade/model.h"

#include "../tests/gpu_random_model.h"

#ifdef SPLADE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "encoder/gpu_encoder_internal.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static size_t used_bytes(void)
{
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)
        return 0;
    return tot - fr;
}

static int g_head_ok = 1;  /* cleared when the LM head reports UNSUPPORTED */

/* One timed forward: with the head (if available) and the result left on the device. */
static int run_dev(splade_gpu_encoder *g, const int32_t *ids, const int32_t *off, int B)
{
    int rc = splade_gpu_encoder_forward_device(g, ids, off, B, g_head_ok);
    if (rc == SPLADE_ERR_UNSUPPORTED && g_head_ok) {
        fprintf(stderr, "note: LM head unavailable (%s): timing the encoder up to the head's input\n",
                splade_error_detail());
        g_head_ok = 0;
        rc = splade_gpu_encoder_forward_device(g, ids, off, B, 0);
    }
    return rc;
}

static void die(int rc, const char *what)
{
    fprintf(stderr, "bench_encoder_gpu: %s: %s: %s\n", what, splade_strerror(rc), splade_error_detail());
    exit(1);
}

static void fixed_shape(splade_gpu_encoder *g, int B, int S, int V, int iters, float *out, const char *label)
{
    int32_t *off = malloc((B + 1) * sizeof *off), *ids = malloc((size_t)B * S * sizeof *ids);
    uint64_t s = 12345 + B * 7 + S;
    off[0] = 0;
    for (int b = 0; b < B; b++)
        off[b + 1] = off[b] + S;
    for (size_t i = 0; i < (size_t)B * S; i++)
        ids[i] = 1000 + (int32_t)(rm_next(&s) % (uint64_t)(V - 1000));
    double *t = malloc(iters * sizeof *t), *e = malloc(iters * sizeof *e);
    int rc;
    for (int w = 0; w < 3; w++)
        if ((rc = run_dev(g, ids, off, B)) != SPLADE_OK)
            die(rc, "forward");
    for (int i = 0; i < iters; i++) {
        double t0 = now_ms();
        if ((rc = run_dev(g, ids, off, B)) != SPLADE_OK)
            die(rc, "forward");
        t[i] = now_ms() - t0;
    }
    double e2e = -1;
    if (g_head_ok && out) {
        for (int i = 0; i < iters; i++) {
            double t0 = now_ms();
            if ((rc = splade_gpu_encoder_forward(g, ids, off, B, out)) != SPLADE_OK)
                die(rc, "forward");
            e[i] = now_ms() - t0;
        }
        e2e = median(e, iters);
    }
    double ms = median(t, iters);
    double prof[SPLADE_GPU_PROF_N];
    splade_gpu_encoder_set_profile(g, 1);
    if ((rc = run_dev(g, ids, off, B)) != SPLADE_OK)
        die(rc, "forward");
    splade_gpu_encoder_profile(g, prof);
    splade_gpu_encoder_set_profile(g, 0);
    printf("| %-10s | %4d | %4d | %8.2f | %9.0f | %8.2f | %8.0f | %6.2f | %6.2f | %6.2f | %6.2f | %6.2f |\n", label, B,
           S, ms, B / ms * 1e3, e2e, e2e > 0 ? B / e2e * 1e3 : 0.0, prof[SPLADE_GPU_PROF_EMBED],
           prof[SPLADE_GPU_PROF_GEMM], prof[SPLADE_GPU_PROF_ATTENTION], prof[SPLADE_GPU_PROF_NORM],
           prof[SPLADE_GPU_PROF_HEAD]);
    fflush(stdout);
    free(off), free(ids), free(t), free(e);
}

/* Real documents: batches of `bdocs` in file order, packed; docs/s over the whole set. */
static void docs_run(splade_gpu_encoder *g, const int32_t *lens, const int32_t *ids, int n, int bdocs, float *out,
                     int reps)
{
    int32_t *off = malloc((size_t)(n + 1) * sizeof *off);
    off[0] = 0;
    for (int i = 0; i < n; i++)
        off[i + 1] = off[i] + lens[i];
    double best_dev = 1e30, best_e2e = 1e30;
    int rc;
    for (int r = 0; r < reps + 1; r++) {  /* first pass: warm-up (workspace growth, plans) */
        double t0 = now_ms();
        for (int i = 0; i < n; i += bdocs) {
            int B = n - i < bdocs ? n - i : bdocs;
            if ((rc = run_dev(g, ids, off + i, B)) != SPLADE_OK)
                die(rc, "forward");
        }
        double dt = now_ms() - t0;
        if (r > 0 && dt < best_dev)
            best_dev = dt;
        if (g_head_ok && out) {
            t0 = now_ms();
            for (int i = 0; i < n; i += bdocs) {
                int B = n - i < bdocs ? n - i : bdocs;
                if ((rc = splade_gpu_encoder_forward(g, ids, off + i, B, out)) != SPLADE_OK)
                    die(rc, "forward");
            }
            dt = now_ms() - t0;
            if (r > 0 && dt < best_e2e)
                best_e2e = dt;
        }
    }
    printf("| docs, B=%-3d | %5d | %7d | %8.1f | %8.0f | %8.1f | %8.0f |\n", bdocs, n, off[n], best_dev,
           n / best_dev * 1e3, g_head_ok ? best_e2e : -1.0, g_head_ok ? n / best_e2e * 1e3 : 0.0);
    fflush(stdout);
    free(off);
}

int main(int argc, char **argv)
{
    const char *docs = NULL;
    int iters = 20, quick = 0, prof_B = 0, prof_S = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--docs") && i + 1 < argc)
            docs = argv[++i];
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--profile") && i + 2 < argc) {
            prof_B = atoi(argv[++i]);
            prof_S = atoi(argv[++i]);
        }
        else {
            fprintf(stderr, "usage: %s [--docs FILE] [--iters N] [--quick] [--profile B S]\n", argv[0]);
            return 2;
        }
    }
    char name[256];
    if (!splade_gpu_probe(name, sizeof name)) {
        printf("bench_encoder_gpu: skipped (no usable GPU: %s)\n", name);
        return 0;
    }
    printf("device: %s\n", name);
    const int V = 30522, H = 768, L = quick ? 2 : 12;
    splade_model m;
    memset(&m, 0, sizeof m);
    m.cfg = rm_config(V, H, L, 12, 3072, 512, 1);
    if (rm_build(&m, 2024) != 0) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    float *out = malloc((size_t)256 * V * sizeof *out);
    if (prof_B > 0) {  /* two forwards at one shape (for ncu), then the encoder's own stage timing */
        splade_gpu_encoder *g = NULL;
        int rc = splade_gpu_encoder_create(&m, SPLADE_LMHEAD_FUSED, &g);
        if (rc != SPLADE_OK)
            die(rc, "create");
        int32_t *off = malloc((prof_B + 1) * sizeof *off), *ids = malloc((size_t)prof_B * prof_S * sizeof *ids);
        uint64_t s = 99;
        off[0] = 0;
        for (int b = 0; b < prof_B; b++)
            off[b + 1] = off[b] + prof_S;
        for (size_t i = 0; i < (size_t)prof_B * prof_S; i++)
            ids[i] = 1000 + (int32_t)(rm_next(&s) % (uint64_t)(V - 1000));
        for (int r = 0; r < 2; r++)
            if ((rc = run_dev(g, ids, off, prof_B)) != SPLADE_OK)
                die(rc, "forward");
        splade_gpu_encoder_set_profile(g, 1);
        if ((rc = run_dev(g, ids, off, prof_B)) != SPLADE_OK)
            die(rc, "forward");
        double pr[SPLADE_GPU_PROF_N];
        splade_gpu_encoder_profile(g, pr);
        printf("profile B=%d S=%d L=%d: embed %.3f gemm %.3f attention %.3f norm+gelu %.3f head %.3f copy %.3f ms\n",
               prof_B, prof_S, L, pr[0], pr[1], pr[2], pr[3], pr[4], pr[5]);
        splade_gpu_encoder_free(g);
        free(off), free(ids), free(out);
        rm_free(&m);
        return 0;
    }
    /* variants: {GELU, FFN slice tokens ("" = none), GEMM tuning, naive head, attention kernel};
     * the first is the default. BENCH_VARIANTS=all adds the FFN-slice / no-tuning / naive-head rows. */
    const struct {
        const char *gelu, *chunk, *tune;
        int naive;
        const char *attn;
    } var[] = {{"tanh", "", "1", 0, "2"}, {"erf", "", "1", 0, "2"},     {"tanh", "", "1", 0, "1"},
               {"erf", "", "1", 0, "1"},  {"tanh", "4096", "1", 0, "2"}, {"tanh", "", "0", 0, "2"},
               {"tanh", "", "1", 1, "2"}};
    const int n_var = getenv("BENCH_VARIANTS") && !strcmp(getenv("BENCH_VARIANTS"), "all")
                          ? (int)(sizeof var / sizeof var[0])
                          : 4;
    for (int vi = 0; vi < n_var; vi++) {
        setenv("SPLADE_GPU_GELU", var[vi].gelu, 1);
        setenv("SPLADE_GPU_ATTN", var[vi].attn, 1);
        if (*var[vi].chunk)
            setenv("SPLADE_GPU_FFN_CHUNK", var[vi].chunk, 1);
        else
            unsetenv("SPLADE_GPU_FFN_CHUNK");
        setenv("SPLADE_GPU_GEMM_TUNE", var[vi].tune, 1);
        const int gm = vi != 0, hk = var[vi].naive;  /* gm: not the default variant */
        {
            const size_t base = used_bytes();
            splade_gpu_encoder *g = NULL;
            int rc = splade_gpu_encoder_create(&m, hk ? SPLADE_LMHEAD_NAIVE : SPLADE_LMHEAD_FUSED, &g);
            if (rc != SPLADE_OK)
                die(rc, "create");
            const size_t wbytes = splade_gpu_encoder_weight_bytes(g);
            printf("\n### bert-base shapes (L=%d), GELU %s, attention v%s, FFN slices %s, GEMM tuning %s, LM head %s\n\n",
                   L, var[vi].gelu, var[vi].attn, *var[vi].chunk ? var[vi].chunk : "off",
                   *var[vi].tune == '1' ? "on" : "off", hk ? "naive" : "fused");
            printf("| shape      |    B |    S |   gpu ms |  docs/s   |   e2e ms | e2e docs/s | embed | gemm  | attn  | "
                   "norm  | head  |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
            fixed_shape(g, 32, 256, V, iters, out, "fixed");
            fixed_shape(g, 128, 256, V, iters, out, "fixed");
            fixed_shape(g, 256, 128, V, iters, out, "fixed");
            if (!quick && !gm)
                fixed_shape(g, 32, 512, V, iters, out, "fixed");
            printf("\ndevice memory after the fixed shapes: encoder holds %.1f MiB (weights %.1f MiB, workspaces "
                   "%.1f MiB); cudaMemGetInfo grew by %.1f MiB since create()\n",
                   splade_gpu_encoder_device_bytes(g) / 1048576.0, wbytes / 1048576.0,
                   (splade_gpu_encoder_device_bytes(g) - wbytes) / 1048576.0, (used_bytes() - base) / 1048576.0);
            if (!g_head_ok && hk == 1) {
                splade_gpu_encoder_free(g);
                continue;
            }
            if (docs && vi <= 2) {
                FILE *f = fopen(docs, "rb");
                int32_t n = 0;
                if (!f || fread(&n, 4, 1, f) != 1 || n <= 0) {
                    fprintf(stderr, "cannot read %s\n", docs);
                    return 1;
                }
                int32_t *lens = malloc((size_t)n * 4);
                size_t tot = 0;
                if (fread(lens, 4, (size_t)n, f) != (size_t)n)
                    return 1;
                for (int i = 0; i < n; i++)
                    tot += (size_t)lens[i];
                int32_t *ids = malloc(tot * 4);
                if (fread(ids, 4, tot, f) != tot)
                    return 1;
                fclose(f);
                printf("\n| real docs  | docs | tokens | gpu ms | docs/s | e2e ms | e2e docs/s |\n|---|---|---|---|---|---|---|\n");
                docs_run(g, lens, ids, n, 128, out, 2);
                docs_run(g, lens, ids, n, 256, out, 2);
                free(lens), free(ids);
            }
            const size_t used = used_bytes() - base;
            if (docs && vi <= 2)
                printf("\ndevice memory after the documents: encoder holds %.1f MiB (weights %.1f MiB, workspaces %.1f MiB); "
                   "cudaMemGetInfo grew by %.1f MiB since create()\n",
                   splade_gpu_encoder_device_bytes(g) / 1048576.0, wbytes / 1048576.0,
                   (splade_gpu_encoder_device_bytes(g) - wbytes) / 1048576.0, used / 1048576.0);
            splade_gpu_encoder_free(g);
        }
    }
    free(out);
    rm_free(&m);
    return 0;
}
#else
int main(void)
{
    printf("bench_encoder_gpu: skipped (built without CUDA)\n");
    return 0;
}
#endif
