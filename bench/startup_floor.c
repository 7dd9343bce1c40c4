/* The CUDA start-up floor on this machine (issue #13: fixed start-up <= 0.5 s for bert-base):
 * what a process pays before and after any work of ours, step by step, so that our `encode` of
 * one text can be read against it. Each mode adds one step; the shell times the whole process
 * (bench/startup_floor.sh), this program times its own steps and prints them on stderr.
 *
 *   startup_floor MODE    MODE: a comma list of steps, run in this order when present:
 *     lt      dlopen libcublasLt.so.13 (what libsplade-cuda.so's load pulls in)
 *     blas    dlopen libcublas.so.13 (the classic cuBLAS, also a dependency of ours)
 *     init    cuInit(0)
 *     ctx     the primary context, current, and one small allocation
 *     lth     cublasLtCreate (needs lt, ctx)
 *     heur    cuBLASLt's heuristic query for a bf16 768x768x768 GEMM, then for 16384x3072x768, then
 *             one matmul of the first shape run and synchronised (needs lth)
 *             ($STARTUP_ALGO set: the first shape's algorithm is written there)
 *     cached  instead of heur: the algorithm read from $STARTUP_ALGO, its matmul run first, then the
 *             heuristic query of the second shape (does skipping the query skip cuBLASLt's set-up?)
 *     ours    dlopen $STARTUP_HOST (our libsplade.so.0, which gives the GPU code its host symbols)
 *             and $STARTUP_OURS (our libsplade-cuda.so, RTLD_NOW as our loader does), then its
 *             splade_gpu_device_count() (the CUDA runtime's start) and splade_gpu_probe() (the
 *             device's name and properties), before the steps above
 *     alloc   1 GiB of device memory more, touched by cuMemsetD8 (a big workspace)
 *     free    cuMemFree of that GiB before exit
 *     release cuDevicePrimaryCtxRelease before exit (the teardown timed inside the process)
 *     fast    _exit(0) instead of returning from main (no atexit handlers)
 *
 * Build: gcc -O2 -I$CUDA/include bench/startup_floor.c -o startup_floor -L$CUDA/lib64/stubs -lcuda -ldl
 * (the stub only links; the driver's libcuda.so.1 is what runs). */
#include <cublasLt.h>
#include <cuda.h>
#include <stdlib.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int has(const char *mode, const char *step)
{
    size_t n = strlen(step);
    for (const char *p = mode; (p = strstr(p, step)) != NULL; p += n)
        if ((p == mode || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

static double t_last;
static void lap(const char *what)
{
    double t = now();
    fprintf(stderr, " %s %.4f", what, t - t_last);
    t_last = t;
}

static int fail(const char *what, int code)
{
    fprintf(stderr, "\nstartup_floor: %s failed (%d)\n", what, code);
    return 1;
}

/* One bf16 768^3 matmul with the given algorithm, run and synchronised. */
static int matmul(cublasStatus_t (*mm)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *,
                                       cublasLtMatrixLayout_t, const void *, cublasLtMatrixLayout_t, const void *,
                                       const void *, cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,
                                       const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t),
                  void *handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
                  cublasLtMatrixLayout_t lc, const cublasLtMatmulAlgo_t *algo, size_t ws)
{
    CUdeviceptr a, b, c, w;
    const float one = 1.0f, zero = 0.0f;
    if (cuMemAlloc(&a, 768 * 768 * 2) || cuMemAlloc(&b, 768 * 768 * 2) || cuMemAlloc(&c, 768 * 768 * 2) ||
        cuMemAlloc(&w, ws))
        return fail("matmul buffers", 0);
    if (mm(handle, desc, &one, (void *)a, la, (void *)b, lb, &zero, (void *)c, lc, (void *)c, lc, algo, (void *)w, ws,
           0) ||
        cuCtxSynchronize())
        return fail("cublasLtMatmul", 0);
    lap("matmul1");
    return 0;
}

#define LT(name) __typeof__(&name) p_##name = (__typeof__(&name))dlsym(lt, #name)

/* Two heuristic queries (first and second shape) and one matmul: is the first query's cost the
 * query's, or cuBLASLt's one-time set-up that any first call would pay? */
static int heuristic(void *lt, void *handle, int cached)
{
    LT(cublasLtMatmulDescCreate);
    LT(cublasLtMatrixLayoutCreate);
    LT(cublasLtMatmulPreferenceCreate);
    LT(cublasLtMatmulPreferenceSetAttribute);
    LT(cublasLtMatmulAlgoGetHeuristic);
    LT(cublasLtMatmul);
    if (!p_cublasLtMatmulDescCreate || !p_cublasLtMatrixLayoutCreate || !p_cublasLtMatmulPreferenceCreate ||
        !p_cublasLtMatmulPreferenceSetAttribute || !p_cublasLtMatmulAlgoGetHeuristic || !p_cublasLtMatmul)
        return fail("cuBLASLt symbols", 0);
    const size_t ws = (size_t)32 << 20;
    const uint64_t shapes[2][3] = {{768, 768, 768}, {3072, 16384, 768}}; /* m, n, k */
    cublasLtMatmulDesc_t desc;
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t res[2];
    cublasLtMatrixLayout_t la[2], lb[2], lc[2];
    int got = 0;
    if (p_cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) || p_cublasLtMatmulPreferenceCreate(&pref) ||
        p_cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws))
        return fail("cuBLASLt descriptors", 0);
    const char *algo_file = getenv("STARTUP_ALGO");
    FILE *f;
    for (int s = 0; s < 2; s++) {
        const uint64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        if (p_cublasLtMatrixLayoutCreate(&la[s], CUDA_R_16BF, m, k, m) ||
            p_cublasLtMatrixLayoutCreate(&lb[s], CUDA_R_16BF, k, n, k) ||
            p_cublasLtMatrixLayoutCreate(&lc[s], CUDA_R_16BF, m, n, m))
            return fail("cublasLtMatrixLayoutCreate", 0);
    }
    if (cached) {
        if (!algo_file || !(f = fopen(algo_file, "rb")) || fread(&res[0].algo, sizeof res[0].algo, 1, f) != 1)
            return fail("reading STARTUP_ALGO", 0);
        fclose(f);
    }
    for (int s = cached; s < 2; s++) {
        if (s == 1 && cached && matmul(p_cublasLtMatmul, handle, desc, la[0], lb[0], lc[0], &res[0].algo, ws))
            return 1;
        if (p_cublasLtMatmulAlgoGetHeuristic(handle, desc, la[s], lb[s], lc[s], lc[s], pref, 1, &res[s], &got) || got < 1)
            return fail("cublasLtMatmulAlgoGetHeuristic", 0);
        lap(s ? "heuristic2" : "heuristic1");
    }
    if (!cached && algo_file && (f = fopen(algo_file, "wb"))) {
        fwrite(&res[0].algo, sizeof res[0].algo, 1, f);
        fclose(f);
    }
    return cached ? 0 : matmul(p_cublasLtMatmul, handle, desc, la[0], lb[0], lc[0], &res[0].algo, ws);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "init,ctx";
    void *lt = NULL;
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr small = 0, big = 0;
    CUresult r;
    t_last = now();
    fprintf(stderr, "steps:");
    if (has(mode, "ours")) {
        const char *host = getenv("STARTUP_HOST"), *path = getenv("STARTUP_OURS");
        if (!host || !dlopen(host, RTLD_NOW | RTLD_GLOBAL))
            return fail(host ? dlerror() : "STARTUP_HOST unset", 0);
        lap("dlopen_host");
        void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
        if (!h)
            return fail(path ? dlerror() : "STARTUP_OURS unset", 0);
        lap("dlopen_ours");
        int (*count)(void) = (int (*)(void))dlsym(h, "splade_gpu_device_count");
        if (!count || count() < 1)
            return fail("splade_gpu_device_count", 0);
        lap("ours_device_count");
        int (*probe)(char *, size_t) = (int (*)(char *, size_t))dlsym(h, "splade_gpu_probe");
        char name[256];
        if (!probe || !probe(name, sizeof name))
            return fail("splade_gpu_probe", 0);
        lap("ours_probe");
    }
    if (has(mode, "lt") && !(lt = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_GLOBAL)))
        return fail(dlerror(), 0);
    if (has(mode, "lt"))
        lap("dlopen_lt");
    if (has(mode, "blas") && !dlopen("libcublas.so.13", RTLD_NOW | RTLD_GLOBAL))
        return fail(dlerror(), 0);
    if (has(mode, "blas"))
        lap("dlopen_blas");
    if ((r = cuInit(0)) != CUDA_SUCCESS)
        return fail("cuInit", r);
    lap("cuInit");
    if (has(mode, "ctx")) {
        if ((r = cuDeviceGet(&dev, 0)) || (r = cuDevicePrimaryCtxRetain(&ctx, dev)) || (r = cuCtxSetCurrent(ctx)) ||
            (r = cuMemAlloc(&small, 1 << 20)))
            return fail("context", r);
        lap("context");
    }
    if (has(mode, "lth") && lt) {
        int (*create)(void **) = (int (*)(void **))dlsym(lt, "cublasLtCreate");
        void *h = NULL;
        if (!create || create(&h) != 0)
            return fail("cublasLtCreate", 0);
        lap("cublasLtCreate");
        if ((has(mode, "heur") || has(mode, "cached")) && heuristic(lt, h, has(mode, "cached")))
            return 1;
    }
    if (has(mode, "alloc")) {
        if ((r = cuMemAlloc(&big, (size_t)1 << 30)) || (r = cuMemsetD8(big, 0, (size_t)1 << 30)) ||
            (r = cuCtxSynchronize()))
            return fail("alloc", r);
        lap("alloc_1GiB");
    }
    if (has(mode, "free") && big) {
        cuMemFree(big);
        lap("free_1GiB");
    }
    if (has(mode, "release") && has(mode, "ctx")) {
        cuDevicePrimaryCtxRelease(dev);
        lap("ctx_release");
    }
    fprintf(stderr, "\n");
    if (has(mode, "fast"))
        _exit(0);
    return 0;
}
