/* GPU encoder benchmark: the end-to-end SPLADE forward (bert-base shapes, random weights built in
 * memory) at fixed batch shapes, and on pre-tokenized real documents (variable lengths, packed).
 *
 *   bench_encoder_gpu [--docs FILE] [--iters N] [--quick]
 *
 * FILE: int32 n, int32 len[n], then the ids of every document back to back (bench/gpu_encoder.sh
 * writes it from SciFact). Times are medians of N runs after warm-up, host clock around calls that
 * end with a device synchronisation: "gpu ms" leaves the [B,V] result on the device (as the PyTorch
 * peer does), "e2e ms" also copies it to host memory (dense [B, V] fp32, splade_gpu_encoder_forward),
 * "sp e2e" compacts it on the GPU and copies only the nonzero (term, weight) pairs
 * (splade_gpu_encoder_forward_sparse, threshold 0). "vec" columns go on to the host's sparse
 * vectors, as the encoder does: dense copy + splade_sparse_from_dense per row, against compacted
 * pairs + splade_sparse_from_pairs (same vectors). Random weights keep nearly every term of a
 * document positive (terms/doc ~ V), unlike a trained SPLADE model (~250): "@256" columns repeat
 * the compacted path at the threshold that keeps 256 terms of the batch's first document, and,
 * when splade-tiny is found ($SPLADE_TINY_DIR, cache/splade-tiny), the SciFact documents are also
 * run through it (real sparsity). Exits 0 with a notice when no GPU is usable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/settings.h"
#include "encoder/model_internal.h"
#include "splade.h"
#include "encoder/gpu_encoder.h"
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

static int g_V = 0;  /* vocabulary of the model being timed */

enum { M_DENSE, M_SPARSE, M_VEC_DENSE, M_VEC_SPARSE };

/* One end-to-end forward in mode M_*: the dense copy or the compacted pairs, optionally on to
 * host sparse vectors (freed at once). *terms += the terms kept. */
static int run_mode(splade_gpu_encoder *g, const int32_t *ids, const int32_t *off, int B, int mode, float thr,
                    float *out, long long *terms)
{
    splade_gpu_sparse sp;
    splade_sparse v;
    int rc;
    if (mode == M_DENSE || mode == M_VEC_DENSE) {
        if ((rc = splade_gpu_encoder_forward(g, ids, off, B, out)) != SPLADE_OK)
            return rc;
        for (int b = 0; mode == M_VEC_DENSE && b < B; b++) {
            if ((rc = splade_sparse_from_dense(out + (size_t)b * g_V, g_V, thr, 0, &v)) != SPLADE_OK)
                return rc;
            *terms += v.n;
            splade_sparse_free(&v);
        }
        return SPLADE_OK;
    }
    if ((rc = splade_gpu_encoder_forward_sparse(g, ids, off, B, thr, &sp)) != SPLADE_OK)
        return rc;
    if (mode == M_SPARSE)
        *terms += sp.nnz;
    for (int b = 0; mode == M_VEC_SPARSE && b < B; b++) {
        const int32_t o = sp.offsets[b], n = sp.offsets[b + 1] - o;
        if ((rc = splade_sparse_from_pairs(n ? sp.terms + o : NULL, n ? sp.weights + o : NULL, n, 0, &v)) != SPLADE_OK)
            return rc;
        *terms += v.n;
        splade_sparse_free(&v);
    }
    return SPLADE_OK;
}

static int cmp_f_desc(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

/* The threshold that keeps `keep` terms of the first document of the batch (its keep+1-th
 * largest weight; 0 when fewer are positive). */
static float thr_for(splade_gpu_encoder *g, const int32_t *ids, const int32_t *off, float *out, int keep)
{
    const int32_t one[2] = {0, off[1] - off[0]};
    if (splade_gpu_encoder_forward(g, ids + off[0], one, 1, out) != SPLADE_OK)
        return 0.0f;
    qsort(out, (size_t)g_V, sizeof *out, cmp_f_desc);
    const float t = keep < g_V ? out[keep] : 0.0f;
    return t > 0.0f ? t : 0.0f;
}

static void die(int rc, const char *what)
{
    fprintf(stderr, "bench_encoder_gpu: %s: %s: %s\n", what, splade_strerror(rc), splade_error_detail());
    exit(1);
}

static void fixed_shape(splade_gpu_encoder *g, int B, int S, int V, int iters, float *out, const char *label,
                        int extra)
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
    /* extra: the compacted output (threshold 0 and ~256 terms/doc), then on to host vectors */
    double sp[5] = {-1, -1, -1, -1, -1};
    long long kept[5] = {0};
    float thr256 = 0;
    if (g_head_ok && out && extra) {
        thr256 = thr_for(g, ids, off, out, 256);
        const int modes[5] = {M_SPARSE, M_VEC_DENSE, M_VEC_SPARSE, M_SPARSE, M_VEC_SPARSE};
        for (int k = 0; k < 5; k++) {
            const float th = k < 3 ? 0.0f : thr256;
            for (int i = 0; i < iters; i++) {
                kept[k] = 0;
                double t0 = now_ms();
                if ((rc = run_mode(g, ids, off, B, modes[k], th, out, &kept[k])) != SPLADE_OK)
                    die(rc, "forward (compacted)");
                e[i] = now_ms() - t0;
            }
            sp[k] = median(e, iters);
        }
    }
    double ms = median(t, iters);
    double prof[SPLADE_GPU_PROF_N];
    splade_gpu_encoder_set_profile(g, 1);
    if ((rc = run_dev(g, ids, off, B)) != SPLADE_OK)
        die(rc, "forward");
    splade_gpu_encoder_profile(g, prof);
    splade_gpu_encoder_set_profile(g, 0);
    printf("| %-10s | %4d | %4d | %8.2f | %9.0f | %8.2f | %8.0f | %6.2f | %6.2f | %6.2f | %6.2f | %6.2f |", label, B,
           S, ms, B / ms * 1e3, e2e, e2e > 0 ? B / e2e * 1e3 : 0.0, prof[SPLADE_GPU_PROF_EMBED],
           prof[SPLADE_GPU_PROF_GEMM], prof[SPLADE_GPU_PROF_ATTENTION], prof[SPLADE_GPU_PROF_NORM],
           prof[SPLADE_GPU_PROF_HEAD]);
    if (sp[0] > 0)
        printf(" %8.2f | %8.0f | %6.0f | %8.0f | %8.0f | %8.0f | %8.0f | %8.0f |\n", sp[0], B / sp[0] * 1e3,
               (double)kept[0] / B, B / sp[1] * 1e3, B / sp[2] * 1e3, (double)kept[3] / B, B / sp[3] * 1e3,
               B / sp[4] * 1e3);
    else
        printf(" - | - | - | - | - | - | - | - |\n");
    fflush(stdout);
    free(off), free(ids), free(t), free(e);
}

/* Real documents: batches of `bdocs` in file order, packed; docs/s over the whole set (best of
 * `reps` passes after a warm-up pass). extra: also the compacted output (threshold 0, and
 * thr_keep when > 0) and the "vec" paths. */
static double docs_pass(splade_gpu_encoder *g, const int32_t *ids, const int32_t *off, int n, int bdocs, int mode,
                        float thr, float *out, long long *terms)
{
    int rc;
    *terms = 0;
    double t0 = now_ms();
    for (int i = 0; i < n; i += bdocs) {
        int B = n - i < bdocs ? n - i : bdocs;
        rc = mode < 0 ? run_dev(g, ids, off + i, B) : run_mode(g, ids, off + i, B, mode, thr, out, terms);
        if (rc != SPLADE_OK)
            die(rc, "forward");
    }
    return now_ms() - t0;
}

static void docs_run(splade_gpu_encoder *g, const int32_t *lens, const int32_t *ids, int n, int bdocs, float *out,
                     int reps, int extra)
{
    int32_t *off = malloc((size_t)(n + 1) * sizeof *off);
    off[0] = 0;
    for (int i = 0; i < n; i++)
        off[i + 1] = off[i] + lens[i];
    /* modes: device only, dense e2e, compacted e2e, vec dense, vec compacted, compacted @256, vec compacted @256 */
    const int modes[7] = {-1, M_DENSE, M_SPARSE, M_VEC_DENSE, M_VEC_SPARSE, M_SPARSE, M_VEC_SPARSE};
    const int n_modes = !g_head_ok ? 1 : extra ? 7 : 2;
    double best[7];
    long long kept[7] = {0};
    const float thr256 = n_modes > 5 ? thr_for(g, ids, off, out, 256) : 0.0f;
    for (int k = 0; k < 7; k++)
        best[k] = k < n_modes ? 1e30 : -1;
    for (int r = 0; r < reps + 1; r++)  /* first pass: warm-up (workspace growth, plans) */
        for (int k = 0; k < n_modes; k++) {
            if (k >= 2 && r > 1)  /* the added modes: one timed pass (keeps gpu_encoder.sh within its time) */
                continue;
            const double dt = docs_pass(g, ids, off, n, bdocs, modes[k], k >= 5 ? thr256 : 0.0f, out, &kept[k]);
            if (r > 0 && dt < best[k])
                best[k] = dt;
        }
#define DPS(k) (best[k] > 0 ? n / best[k] * 1e3 : 0.0)
    printf("| docs, B=%-3d | %5d | %7d | %8.1f | %8.0f | %8.1f | %8.0f |", bdocs, n, off[n], best[0], DPS(0), best[1],
           DPS(1));
    if (n_modes == 7)
        printf(" %8.1f | %8.0f | %6.0f | %8.0f | %8.0f | %6.0f | %8.0f | %8.0f |\n", best[2], DPS(2),
               (double)kept[2] / n, DPS(3), DPS(4), (double)kept[5] / n, DPS(5), DPS(6));
    else
        printf(" - | - | - | - | - | - | - | - |\n");
#undef DPS
    fflush(stdout);
    free(off);
}

/* splade-tiny (a trained SPLADE model: real sparsity) on the same documents, default encoder. */
static void tiny_docs(const int32_t *lens, const int32_t *ids, int n, float *out)
{
    const char *dir = getenv("SPLADE_TINY_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/config.json", dir && *dir ? dir : "cache/splade-tiny");
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("\n(no splade-tiny at %s: the real-sparsity rows are skipped)\n", path);
        return;
    }
    fclose(f);
    splade_model *m = NULL;
    int rc = splade_model_load(dir && *dir ? dir : "cache/splade-tiny", &m);
    if (rc != SPLADE_OK) {
        printf("\n(splade-tiny did not load: %s)\n", splade_error_detail());
        return;
    }
    splade_gpu_encoder *g = NULL;
    if ((rc = splade_gpu_encoder_create(m, SPLADE_LMHEAD_FUSED, &g)) != SPLADE_OK)
        die(rc, "create (splade-tiny)");
    const int saved_V = g_V, saved_ok = g_head_ok;
    g_V = m->cfg.vocab_size;
    g_head_ok = 1;
    /* clipped to splade-tiny's positions; documents with ids outside its vocabulary are dropped */
    int32_t *lc = malloc((size_t)(n ? n : 1) * sizeof *lc);
    int32_t *ic = malloc((size_t)(n ? n : 1) * (size_t)m->cfg.max_position * sizeof *ic);
    size_t src = 0, dst = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        const int32_t L = lens[i] < m->cfg.max_position ? lens[i] : m->cfg.max_position;
        int ok = L > 0;
        for (int32_t t = 0; t < L; t++)
            ok &= ids[src + t] >= 0 && ids[src + t] < g_V;
        if (ok) {
            memcpy(ic + dst, ids + src, (size_t)L * sizeof *ic);
            dst += (size_t)L;
            lc[k++] = L;
        }
        src += (size_t)lens[i];
    }
    printf("\n### splade-tiny (H=%d, L=%d, V=%d), the same documents (%d kept), fused head, default settings\n\n",
           m->cfg.hidden_size, m->cfg.num_layers, g_V, k);
    printf("| real docs  | docs | tokens | gpu ms | docs/s | e2e ms | e2e docs/s | sp e2e ms | sp e2e docs/s | terms/doc | "
           "vec dense docs/s | vec sp docs/s | terms@256 | sp@256 docs/s | vec sp@256 docs/s |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    docs_run(g, lc, ic, k, 128, out, 2, 1);
    docs_run(g, lc, ic, k, 256, out, 2, 1);
    free(lc), free(ic);
    splade_gpu_encoder_free(g);
    splade_model_free(m);
    g_V = saved_V;
    g_head_ok = saved_ok;
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
    g_V = V;
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
    /* variants: {GELU, FFN slice tokens ("" = none), GEMM tuning, naive head}; the first is the
     * default. BENCH_VARIANTS=all adds the FFN-slice / no-tuning / naive-head rows. (Attention v1
     * against v2: tools/kernel_lab/attention.cu.) */
    const struct {
        const char *gelu, *chunk, *tune;
        int naive;
    } var[] = {{"tanh", "", "1", 0}, {"erf", "", "1", 0}, {"tanh", "4096", "1", 0}, {"tanh", "", "0", 0},
               {"tanh", "", "1", 1}};
    const int n_var = getenv("BENCH_VARIANTS") && !strcmp(getenv("BENCH_VARIANTS"), "all")
                          ? (int)(sizeof var / sizeof var[0])
                          : 2;
    for (int vi = 0; vi < n_var; vi++) {
        setenv("SPLADE_GPU_GELU", var[vi].gelu, 1);
        if (*var[vi].chunk)
            setenv("SPLADE_GPU_FFN_CHUNK", var[vi].chunk, 1);
        else
            unsetenv("SPLADE_GPU_FFN_CHUNK");
        setenv("SPLADE_GPU_GEMM_TUNE", var[vi].tune, 1);
        splade_settings_reload(); /* the knobs are read once per process otherwise */
        const int gm = vi != 0, hk = var[vi].naive;  /* gm: not the default variant */
        {
            const size_t base = used_bytes();
            splade_gpu_encoder *g = NULL;
            int rc = splade_gpu_encoder_create(&m, hk ? SPLADE_LMHEAD_NAIVE : SPLADE_LMHEAD_FUSED, &g);
            if (rc != SPLADE_OK)
                die(rc, "create");
            const size_t wbytes = splade_gpu_encoder_weight_bytes(g);
            printf("\n### bert-base shapes (L=%d), GELU %s, FFN slices %s, GEMM tuning %s, LM head %s\n\n",
                   L, var[vi].gelu, *var[vi].chunk ? var[vi].chunk : "off",
                   *var[vi].tune == '1' ? "on" : "off", hk ? "naive" : "fused");
            printf("| shape      |    B |    S |   gpu ms |  docs/s   |   e2e ms | e2e docs/s | embed | gemm  | attn  | "
                   "norm  | head  | sp e2e ms | sp e2e docs/s | terms/doc | vec dense docs/s | vec sp docs/s | "
                   "terms@256 | sp@256 docs/s | vec sp@256 docs/s |\n"
                   "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
            fixed_shape(g, 32, 256, V, iters, out, "fixed", !gm);
            fixed_shape(g, 128, 256, V, iters, out, "fixed", !gm);
            fixed_shape(g, 256, 128, V, iters, out, "fixed", !gm);
            if (!quick && !gm)
                fixed_shape(g, 32, 512, V, iters, out, "fixed", !gm);
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
                printf("\n| real docs  | docs | tokens | gpu ms | docs/s | e2e ms | e2e docs/s | sp e2e ms | sp e2e docs/s | "
                       "terms/doc | vec dense docs/s | vec sp docs/s | terms@256 | sp@256 docs/s | vec sp@256 docs/s |\n"
                       "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
                docs_run(g, lens, ids, n, 128, out, 2, !gm);
                docs_run(g, lens, ids, n, 256, out, 2, !gm);
                if (!gm)
                    tiny_docs(lens, ids, n, out);
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
