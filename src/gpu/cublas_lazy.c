/* cuBLASLt and cuBLAS, loaded when first called (issue #13: fixed start-up).
 *
 * libsplade-cuda.so is linked without them: loading libcublasLt (542 MB) took 0.06-0.08 s of every
 * GPU start on an H200, and the exit pays for it again (bench/results/startup-floor-2026-11-26.md),
 * while an encoder that only sees small batches never calls it (encoder/gpu_gemm_small.cu).
 * Each function the .so calls is defined here under the library's own name (the .so is linked
 * -Bsymbolic, so its calls bind to these) and forwards to the real one, found by dlopen of the
 * soname of the toolkit built against (libcublasLt.so.13, libcublas.so.13) on the first call, with
 * the .so's RUNPATH (CUDA_HOME/lib64) and the usual search. A library that cannot be loaded makes
 * every call answer CUBLAS_STATUS_NOT_INITIALIZED; splade_cublas_lazy_error() says why.
 * Compiled into libsplade-cuda.so only (Makefile: CUDA_SO_OBJ); the test and benchmark programs
 * that link the CUDA objects directly link the real libraries instead. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include <cublasLt.h>
#include <cublas_v2.h>

#include "gpu/cublas_lazy.h"

#define STR_(x) #x
#define STR(x) STR_(x)

enum { LT, BLAS, N_LIBS };
static const char *const soname[N_LIBS] = {"libcublasLt.so." STR(CUBLAS_VER_MAJOR),
                                           "libcublas.so." STR(CUBLAS_VER_MAJOR)};
static void *handle[N_LIBS];
static pthread_once_t once[N_LIBS] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT};
static char load_error[512];

/* RTLD_LOCAL: nothing else in the process binds to them by accident; RTLD_NOW as the loader of
 * libsplade-cuda.so itself does (a broken install fails here, not mid-run). */
static void open_lib(int which)
{
    handle[which] = dlopen(soname[which], RTLD_NOW | RTLD_LOCAL);
    if (!handle[which])
        snprintf(load_error, sizeof load_error, "cannot load %s: %s", soname[which], dlerror());
}
static void open_lt(void) { open_lib(LT); }
static void open_blas(void) { open_lib(BLAS); }

static void *lookup(int which, const char *name)
{
    pthread_once(&once[which], which == LT ? open_lt : open_blas);
    if (!handle[which])
        return NULL;
    void *p = dlsym(handle[which], name);
    if (!p)
        snprintf(load_error, sizeof load_error, "%s lacks %s", soname[which], name);
    return p;
}

const char *splade_cublas_lazy_error(void) { return load_error; }

int splade_cublas_lazy_loaded(int lt)
{
    return __atomic_load_n(&handle[lt ? LT : BLAS], __ATOMIC_ACQUIRE) != NULL;
}

/* One forwarder: the pointer is looked up once (a race only stores the same value twice). */
#define FORWARD(lib, name, params, args)                                                  \
    cublasStatus_t CUBLASWINAPI name params                                               \
    {                                                                                     \
        static __typeof__(&name) fn;                                                      \
        __typeof__(&name) f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);                     \
        if (!f) {                                                                         \
            f = (__typeof__(&name))lookup(lib, #name);                                    \
            if (!f)                                                                       \
                return CUBLAS_STATUS_NOT_INITIALIZED;                                     \
            __atomic_store_n(&fn, f, __ATOMIC_RELEASE);                                   \
        }                                                                                 \
        return f args;                                                                    \
    }

FORWARD(LT, cublasLtCreate, (cublasLtHandle_t *h), (h))
FORWARD(LT, cublasLtDestroy, (cublasLtHandle_t h), (h))
FORWARD(LT, cublasLtMatmul,
        (cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha, const void *A, cublasLtMatrixLayout_t la,
         const void *B, cublasLtMatrixLayout_t lb, const void *beta, const void *C, cublasLtMatrixLayout_t lc, void *D,
         cublasLtMatrixLayout_t ld, const cublasLtMatmulAlgo_t *algo, void *ws, size_t ws_bytes, cudaStream_t s),
        (h, d, alpha, A, la, B, lb, beta, C, lc, D, ld, algo, ws, ws_bytes, s))
FORWARD(LT, cublasLtMatmulAlgoCheck,
        (cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
         cublasLtMatrixLayout_t lc, cublasLtMatrixLayout_t ld, const cublasLtMatmulAlgo_t *algo,
         cublasLtMatmulHeuristicResult_t *result),
        (h, d, la, lb, lc, ld, algo, result))
FORWARD(LT, cublasLtMatmulAlgoGetHeuristic,
        (cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
         cublasLtMatrixLayout_t lc, cublasLtMatrixLayout_t ld, cublasLtMatmulPreference_t pref, int requested,
         cublasLtMatmulHeuristicResult_t results[], int *returned),
        (h, d, la, lb, lc, ld, pref, requested, results, returned))
FORWARD(LT, cublasLtMatmulDescCreate, (cublasLtMatmulDesc_t *d, cublasComputeType_t compute, cudaDataType_t scale),
        (d, compute, scale))
FORWARD(LT, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t d), (d))
FORWARD(LT, cublasLtMatmulDescSetAttribute,
        (cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const void *buf, size_t size),
        (d, attr, buf, size))
FORWARD(LT, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t *p), (p))
FORWARD(LT, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t p), (p))
FORWARD(LT, cublasLtMatmulPreferenceSetAttribute,
        (cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attr, const void *buf, size_t size),
        (p, attr, buf, size))
FORWARD(LT, cublasLtMatrixLayoutCreate,
        (cublasLtMatrixLayout_t *l, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld),
        (l, type, rows, cols, ld))
FORWARD(LT, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t l), (l))
FORWARD(BLAS, cublasCreate_v2, (cublasHandle_t *h), (h))
FORWARD(BLAS, cublasDestroy_v2, (cublasHandle_t h), (h))
FORWARD(BLAS, cublasSetStream_v2, (cublasHandle_t h, cudaStream_t s), (h, s))
FORWARD(BLAS, cublasGemmEx,
        (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *alpha,
         const void *A, cudaDataType at, int lda, const void *B, cudaDataType bt, int ldb, const void *beta, void *C,
         cudaDataType ct, int ldc, cublasComputeType_t compute, cublasGemmAlgo_t algo),
        (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, compute, algo))
