/* The LM head's benchmark harness (the measuring half of `splade-index bench-lmhead`), built into
 * libsplade-cuda.so (cmd_bench_lmhead.c loads it on
 * demand, so the binary itself links no CUDA library): the SPLADE LM head on the GPU — fused
 * (wgmma and mma.sync kernels) vs naive (cuBLAS GEMM + eager-style ops), with cuBLAS's GEMM alone
 * (at V and at V padded to a multiple of 128) as the floor. Per shape: median time (CUDA events,
 * warm-up, >= 20 iterations), TFLOP/s on the useful 2*B*S*D*V, peak device memory of the head
 * (cudaMemGetInfo around its allocations and a first run: workspace + output), bytes moved
 * (analytical), kernel launches, ratios. Human table through the caller's
 * print callback (lmhead_bench.h), JSON with --json FILE. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <jansson.h>

#include "lmhead_fused/lmhead.h"
#include "lmhead_fused/lmhead_bench.h"
#include "splade.h"

/* Where the harness's lines go: the caller's callback (the CLI prints them); like all code outside
 * src/cli/ it prints nothing itself. Set on entry; one measurement runs at a time. */
static const bench_lmhead_opts *g_opts;

static void emit(int is_error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(int is_error, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (g_opts && g_opts->print)
        g_opts->print(g_opts->print_user, is_error, line);
}

#define CK(call)                                                                                  \
    do {                                                                                          \
        cudaError_t e_ = (call);                                                                  \
        if (e_ != cudaSuccess) {                                                                  \
            emit(1, "bench-lmhead: %s:%d: %s: %s", __FILE__, __LINE__, #call,                      \
                    cudaGetErrorString(e_));                                                      \
            return -1;                                                                            \
        }                                                                                         \
    } while (0)

/* fused_v5: the fused head with H's extent withheld (H_rows = 0), so the planner falls back from the TMA
 * kernel (v7) to the cp.async one (v5): both in the same run. */
enum { IMPL_FUSED, IMPL_FUSED_V5, IMPL_FUSED_MMA, IMPL_NAIVE, IMPL_GEMM, IMPL_GEMM_PAD, NIMPL };
static const char *impl_names[NIMPL] = {"fused", "fused_v5", "fused_mma_sync", "naive", "cublas_gemm",
                                        "cublas_gemm_vpad128"};

typedef struct {
    int ok;
    double ms, tflops, peak_mib, gbytes;
    int launches;
    char note[64];
} result;

typedef struct {
    void *H, *W;
    float *bias;
    int32_t *start, *len;
    cublasHandle_t cublas;
    cudaStream_t stream;
    int iters;
} ctx;

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static inline uint32_t xr(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 2685821657736338717ULL) >> 32);
}
static uint16_t f2bf(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}
/* uniform in [-a, a): mean 0, variance a^2/3 */
static int fill_bf16(void *dev, size_t n, float a)
{
    const size_t chunk = (size_t)1 << 24;
    uint16_t *h = malloc(sizeof(uint16_t) * chunk);
    if (!h)
        return -1;
    for (size_t off = 0; off < n; off += chunk) {
        size_t m = n - off < chunk ? n - off : chunk;
        for (size_t i = 0; i < m; i++)
            h[i] = f2bf(((float)xr() * (1.0f / 2147483648.0f) - 1.0f) * a);
        cudaError_t e = cudaMemcpy((uint16_t *)dev + off, h, m * sizeof(uint16_t), cudaMemcpyHostToDevice);
        if (e != cudaSuccess) {
            free(h);
            emit(1, "bench-lmhead: cudaMemcpy: %s", cudaGetErrorString(e));
            return -1;
        }
    }
    free(h);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    int impl;
    const ctx *c;
    splade_lmhead_args a;
    void *ws;
    size_t ws_bytes;
    void *logits;
    int Vg; /* GEMM's V (padded or not) */
} runner;

static int run_once(runner *r)
{
    const ctx *c = r->c;
    int st = 0;
    switch (r->impl) {
    case IMPL_FUSED:
    case IMPL_FUSED_V5:
        st = splade_lmhead_gpu_fused(SPLADE_FUSED_AUTO, &r->a, c->stream);
        break;
    case IMPL_FUSED_MMA:
        st = splade_lmhead_gpu_fused(SPLADE_FUSED_MMA_SYNC, &r->a, c->stream);
        break;
    case IMPL_NAIVE:
        st = splade_lmhead_gpu(SPLADE_LMHEAD_NAIVE, &r->a, r->ws, r->ws_bytes, c->cublas, c->stream);
        break;
    default: {
        const float alpha = 1.f, beta = 0.f;
        const int R = r->a.B * r->a.max_len;
        cublasStatus_t cs = cublasGemmEx(c->cublas, CUBLAS_OP_T, CUBLAS_OP_N, r->Vg, R, r->a.D, &alpha, c->W,
                                         CUDA_R_16BF, r->a.D, c->H, CUDA_R_16BF, r->a.D, &beta, r->logits,
                                         CUDA_R_16BF, r->Vg, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (cs != CUBLAS_STATUS_SUCCESS) {
            emit(1, "bench-lmhead: cublasGemmEx: status %d", (int)cs);
            return -1;
        }
    }
    }
    if (st) {
        emit(1, "bench-lmhead: %s: %s (%s)", impl_names[r->impl], splade_strerror(st),
                splade_error_detail());
        return -1;
    }
    return 0;
}

static int bench_impl(const ctx *c, const shape *sh, int impl, result *res)
{
    memset(res, 0, sizeof *res);
    runner r;
    memset(&r, 0, sizeof r);
    r.impl = impl;
    r.c = c;
    const size_t R = (size_t)sh->B * sh->S;
    r.a = (splade_lmhead_args){c->H, c->start, c->len, sh->B, sh->S, sh->D, sh->V, c->W, c->bias, NULL,
                             impl == IMPL_FUSED_V5 ? 0 : (int32_t)R, 0};
    r.Vg = impl == IMPL_GEMM_PAD ? (sh->V + 127) / 128 * 128 : sh->V;
    const double flops = 2.0 * R * sh->D * sh->V;

    if (impl == IMPL_FUSED || impl == IMPL_FUSED_V5 || impl == IMPL_FUSED_MMA) {
        splade_lmhead_plan pl;
        splade_lmhead_args probe = r.a;
        probe.out = (float *)c->bias; /* any non-NULL pointer: planning reads no memory */
        int st = splade_lmhead_fused_plan(impl == IMPL_FUSED_MMA ? SPLADE_FUSED_MMA_SYNC : SPLADE_FUSED_AUTO, &probe, &pl);
        if (st) {
            snprintf(res->note, sizeof res->note, "%s", splade_strerror(st));
            return 0;
        }
        res->launches = pl.launches;
        snprintf(res->note, sizeof res->note, "%s %dx%d split %d grid %d",
                 pl.path != SPLADE_FUSED_WGMMA ? "mma.sync" : pl.tile >= 4 ? "wgmma+tma" : "wgmma", pl.bm, pl.bn,
                 pl.nsplit, pl.grid);
        res->gbytes = (R * sh->D * 2.0 + (double)sh->V * sh->D * 2 + sh->V * 4.0 +
                       (double)sh->B * sh->V * 4 * (pl.nsplit > 1 ? 2 : 1)) / 1e9;
    } else if (impl == IMPL_NAIVE) {
        res->launches = 7;
        const double lg = (double)R * sh->V * 2;
        res->gbytes = (2.0 * R * sh->D * 2 + R * sh->D * 2.0 + (double)sh->V * sh->D * 2 + lg + 4 * 2 * lg +
                       sh->V * 4.0 + lg + (double)sh->B * sh->V * 4) / 1e9;
        snprintf(res->note, sizeof res->note, "cuBLAS bf16 logits + 5 kernels");
    } else {
        res->launches = 1;
        res->gbytes = (R * sh->D * 2.0 + (double)r.Vg * sh->D * 2 + (double)R * r.Vg * 2) / 1e9;
        snprintf(res->note, sizeof res->note, "bf16 logits [%zu x %d]", R, r.Vg);
    }

    size_t free0, free1, free2, total;
    CK(cudaDeviceSynchronize());
    CK(cudaMemGetInfo(&free0, &total));
    float *out = NULL;
    if (impl <= IMPL_NAIVE) {
        if (cudaMalloc((void **)&out, sizeof(float) * sh->B * (size_t)sh->V) != cudaSuccess) {
            (void)cudaGetLastError();
            snprintf(res->note, sizeof res->note, "OOM");
            return 0;
        }
        r.a.out = out;
    }
    if (impl == IMPL_NAIVE) {
        r.ws_bytes = splade_lmhead_workspace_bytes(SPLADE_LMHEAD_NAIVE, &r.a);
        if (cudaMalloc(&r.ws, r.ws_bytes) != cudaSuccess) {
            (void)cudaGetLastError();
            cudaFree(out);
            snprintf(res->note, sizeof res->note, "OOM (workspace %.1f GiB)", r.ws_bytes / 1073741824.0);
            return 0;
        }
    }
    if (impl >= IMPL_GEMM) {
        if (cudaMalloc(&r.logits, R * r.Vg * 2) != cudaSuccess) {
            (void)cudaGetLastError();
            snprintf(res->note, sizeof res->note, "OOM");
            return 0;
        }
    }
    CK(cudaMemGetInfo(&free1, &total));
    int rc = run_once(&r);
    if (!rc) {
        cudaError_t e = cudaStreamSynchronize(c->stream);
        if (e != cudaSuccess) {
            emit(1, "bench-lmhead: %s: %s", impl_names[impl], cudaGetErrorString(e));
            rc = -1;
        }
    }
    CK(cudaMemGetInfo(&free2, &total));
    res->peak_mib = (double)(free0 - (free1 < free2 ? free1 : free2)) / 1048576.0;

    double *ts = malloc(sizeof(double) * c->iters);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    /* warm-up: at least 3 runs and 25 ms, so that the previous implementation's traffic (16 GB of
     * elementwise passes for the naive head) no longer sets the clocks or the L2 state */
    CK(cudaEventRecord(e0, c->stream));
    for (int i = 0; !rc; i++) {
        rc = run_once(&r);
        CK(cudaEventRecord(e1, c->stream));
        CK(cudaEventSynchronize(e1));
        float wms = 0;
        CK(cudaEventElapsedTime(&wms, e0, e1));
        if (i >= 2 && (wms >= 25.f || i >= 2000))
            break;
    }
    for (int i = 0; i < c->iters && !rc; i++) {
        CK(cudaEventRecord(e0, c->stream));
        rc = run_once(&r);
        CK(cudaEventRecord(e1, c->stream));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        ts[i] = ms;
    }
    CK(cudaGetLastError());
    if (!rc) {
        qsort(ts, c->iters, sizeof *ts, cmp_double);
        res->ms = c->iters % 2 ? ts[c->iters / 2] : 0.5 * (ts[c->iters / 2 - 1] + ts[c->iters / 2]);
        res->tflops = flops / (res->ms * 1e-3) / 1e12;
        res->ok = 1;
    }
    free(ts);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(out);
    cudaFree(r.ws);
    cudaFree(r.logits);
    CK(cudaDeviceSynchronize());
    return rc;
}

int splade_lmhead_bench_gpu(const bench_lmhead_opts *o)
{
    g_opts = o;
    const shape one = o->one;
    const int custom = o->custom, iters = o->iters;
    const char *json_path = o->json_path, *dev = o->device;
    shape grid[12];
    int ns = 0;
    if (custom)
        grid[ns++] = one;
    else {
        const int bs[4][2] = {{32, 256}, {128, 256}, {256, 128}, {8, 512}};
        /* BERT/DistilBERT uncased; multilingual BERT uncased (OpenSearch multilingual-v1); XLM-R */
        const int vs[3] = {30522, 105879, 250002};
        for (int vi = 0; vi < 3; vi++)
            for (int k = 0; k < 4; k++)
                grid[ns++] = (shape){bs[k][0], bs[k][1], 768, vs[vi]};
    }
    size_t maxR = 0, maxV = 0;
    int maxB = 0, D = grid[0].D;
    for (int i = 0; i < ns; i++) {
        size_t R = (size_t)grid[i].B * grid[i].S, Vp = (size_t)(grid[i].V + 127) / 128 * 128;
        maxR = R > maxR ? R : maxR;
        maxV = Vp > maxV ? Vp : maxV;
        maxB = grid[i].B > maxB ? grid[i].B : maxB;
    }
    ctx c;
    memset(&c, 0, sizeof c);
    c.iters = iters;
    CK(cudaMalloc(&c.H, maxR * D * 2));
    CK(cudaMalloc(&c.W, maxV * D * 2));
    CK(cudaMalloc((void **)&c.bias, maxV * sizeof(float)));
    CK(cudaMalloc((void **)&c.start, maxB * sizeof(int32_t)));
    CK(cudaMalloc((void **)&c.len, maxB * sizeof(int32_t)));
    if (fill_bf16(c.H, maxR * D, 1.7f) || fill_bf16(c.W, maxV * D, 1.7f * 0.3f / sqrtf((float)D)))
        return 1;
    float *hb = malloc(maxV * sizeof(float));
    for (size_t v = 0; v < maxV; v++)
        hb[v] = ((float)xr() * (1.0f / 2147483648.0f) - 1.0f) * 0.1f;
    CK(cudaMemcpy(c.bias, hb, maxV * sizeof(float), cudaMemcpyHostToDevice));
    free(hb);
    if (cublasCreate(&c.cublas) != CUBLAS_STATUS_SUCCESS) {
        emit(1, "bench-lmhead: cublasCreate failed");
        return 1;
    }
    CK(cudaStreamCreate(&c.stream));
    cublasSetStream(c.cublas, c.stream);

    json_t *jroot = json_object(), *jrows = json_array();
    json_object_set_new(jroot, "device", json_string(dev));
    json_object_set_new(jroot, "iters", json_integer(iters));
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    json_object_set_new(jroot, "date", json_string(date));

    emit(0, "bench-lmhead on %s, median of %d iterations, all sequences full length", dev, iters);
    emit(0, "%-4s %-4s %-4s %-7s %-20s %9s %8s %10s %9s %4s %8s  %s", "B", "S", "D", "V", "impl", "ms", "TFLOP/s",
           "peak MiB", "GB moved", "lau", "x fused", "note");
    int failed = 0;
    for (int i = 0; i < ns; i++) {
        const shape *sh = &grid[i];
        int32_t *hs = malloc(sizeof(int32_t) * sh->B), *hl = malloc(sizeof(int32_t) * sh->B);
        for (int b = 0; b < sh->B; b++)
            hs[b] = b * sh->S, hl[b] = sh->S;
        CK(cudaMemcpy(c.start, hs, sizeof(int32_t) * sh->B, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(c.len, hl, sizeof(int32_t) * sh->B, cudaMemcpyHostToDevice));
        free(hs);
        free(hl);
        result res[NIMPL];
        for (int k = 0; k < NIMPL; k++)
            if (bench_impl(&c, sh, k, &res[k])) {
                failed = 1;
                res[k].ok = 0;
            }
        for (int k = 0; k < NIMPL; k++) {
            const result *r = &res[k];
            const double ratio = r->ok && res[0].ok ? r->ms / res[0].ms : NAN;
            if (r->ok)
                emit(0, "%-4d %-4d %-4d %-7d %-20s %9.3f %8.1f %10.1f %9.3f %4d %8.2f  %s", sh->B, sh->S, sh->D,
                       sh->V, impl_names[k], r->ms, r->tflops, r->peak_mib, r->gbytes, r->launches, ratio, r->note);
            else
                emit(0, "%-4d %-4d %-4d %-7d %-20s %9s %8s %10s %9s %4s %8s  %s", sh->B, sh->S, sh->D, sh->V,
                       impl_names[k], "-", "-", "-", "-", "-", "-", r->note);
            json_t *jr = json_object();
            json_object_set_new(jr, "B", json_integer(sh->B));
            json_object_set_new(jr, "S", json_integer(sh->S));
            json_object_set_new(jr, "D", json_integer(sh->D));
            json_object_set_new(jr, "V", json_integer(sh->V));
            json_object_set_new(jr, "impl", json_string(impl_names[k]));
            json_object_set_new(jr, "ok", json_boolean(r->ok));
            if (r->ok) {
                json_object_set_new(jr, "ms", json_real(r->ms));
                json_object_set_new(jr, "tflops", json_real(r->tflops));
                json_object_set_new(jr, "peak_mib", json_real(r->peak_mib));
                json_object_set_new(jr, "gbytes_moved", json_real(r->gbytes));
                json_object_set_new(jr, "launches", json_integer(r->launches));
                if (res[0].ok)
                    json_object_set_new(jr, "ratio_vs_fused", json_real(ratio));
            }
            json_object_set_new(jr, "note", json_string(r->note));
            json_array_append_new(jrows, jr);
        }
    }
    json_object_set_new(jroot, "rows", jrows);
    if (json_path && json_dump_file(jroot, json_path, JSON_INDENT(1)) != 0) {
        emit(1, "bench-lmhead: cannot write %s", json_path);
        failed = 1;
    }
    json_decref(jroot);
    cublasDestroy(c.cublas);
    cudaStreamDestroy(c.stream);
    cudaFree(c.H);
    cudaFree(c.W);
    cudaFree(c.bias);
    cudaFree(c.start);
    cudaFree(c.len);
    return failed ? 1 : 0;
}
