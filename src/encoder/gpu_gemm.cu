/* cuBLASLt GEMMs of the GPU encoder (gpu_encoder_state.cuh).
 *
 * GEMMs: bf16 in/out, fp32 accumulation (CUBLAS_COMPUTE_32F). The first time a GEMM shape
 * (N, K, epilogue) runs on >= 2048 tokens, cuBLASLt's top 8 candidates are timed on the real
 * operands and the fastest is kept for every later batch size it accepts
 * (SPLADE_GPU_GEMM_TUNE=0: cuBLASLt's first choice, no timing). Activations bf16, all
 * normalisation and softmax math fp32. Workspaces are sized from the largest batch seen and
 * grow on demand; an allocation failure returns SPLADE_ERR_GPU_OOM and leaves the encoder
 * usable (the caller retries with a smaller batch).
 *
 *
 * Plans (descriptors + layouts + algorithm) are cached per (T, N, K, epilogue), kPlanCache of them
 * round-robin; tuned algorithms per (N, K, epilogue), reused for every T that accepts them. */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <time.h>

#include "common/fail.h"
#include "common/phase.h"
#include "common/settings.h"
#include "encoder/gpu_encoder_state.cuh"
#include "gpu/cublas_lazy.h"
#include "gpu/cuda_check.h"
#include "gpu/init_mark.h"
#include "splade.h"

namespace splade_gpu_enc {

using splade_gpu::bf16;

namespace {

/* ---- GEMM: Y[T,N] = X[T,K] · W[N,K]ᵀ (+ bias[N]) (+ GELU), all row-major bf16 (or fp32) ------
 * In cuBLASLt's column-major terms: C[N,T] = op(A)·B with A = W seen as [K,N] (TRANSA = T),
 * B = X seen as [K,T]; the bias runs along C's rows = output features. */

/* Times `algo` on the real operands: median-free, best of 2 after one warm-up run; < 0 if it fails. */
float time_algo(splade_gpu_encoder *g, GemmPlan &p, const cublasLtMatmulAlgo_t &algo, const void *X, const void *W,
                void *Y)
{
    const float one = 1.f, zero = 0.f;
    float best = -1.f;
    for (int r = 0; r < 3; r++) {
        if (cudaEventRecord(g->tune_ev[0], g->stream) != cudaSuccess)
            return -1.f;
        if (cublasLtMatmul(g->lt, p.desc, &one, W, p.la, X, p.lb, &zero, Y, p.lc, Y, p.lc, &algo, g->lt_ws,
                           kLtWorkspace, g->stream) != CUBLAS_STATUS_SUCCESS)
            return -1.f;
        float ms = 0;
        if (cudaEventRecord(g->tune_ev[1], g->stream) != cudaSuccess ||
            cudaEventSynchronize(g->tune_ev[1]) != cudaSuccess ||
            cudaEventElapsedTime(&ms, g->tune_ev[0], g->tune_ev[1]) != cudaSuccess)
            return -1.f;
        if (r > 0 && (best < 0 || ms < best))
            best = ms;
    }
    return best;
}

int new_plan(splade_gpu_encoder *g, int T, int N, int K, cublasLtEpilogue_t epi, const void *X, const void *W,
             const void *bias, void *Y, GemmPlan **out);

double now_s()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int plan_for(splade_gpu_encoder *g, int T, int N, int K, cublasLtEpilogue_t epi, const void *X, const void *W,
             const void *bias, void *Y, GemmPlan **out)
{
    for (GemmPlan &p : g->plans)
        if (p.used && p.T == T && p.N == N && p.K == K && p.epi == epi) {
            *out = &p;
            return SPLADE_OK;
        }
    const double t0 = now_s();
    const int rc = new_plan(g, T, N, K, epi, X, W, bias, Y, out);
    splade_phase_add(SPLADE_PH_GPU_PLAN, now_s() - t0);  // exported by the program (host_exports.list)
    return rc;
}

/* plan_for's cache miss: descriptors, then cuBLASLt's choice (tuned on >= 2048 tokens). */
int new_plan(splade_gpu_encoder *g, int T, int N, int K, cublasLtEpilogue_t epi, const void *X, const void *W,
             const void *bias, void *Y, GemmPlan **out)
{
    GemmPlan &p = g->plans[g->plan_next];
    g->plan_next = (g->plan_next + 1) % kPlanCache;
    if (p.used) {
        cublasLtMatmulDescDestroy(p.desc);
        cublasLtMatrixLayoutDestroy(p.la);
        cublasLtMatrixLayoutDestroy(p.lb);
        cublasLtMatrixLayoutDestroy(p.lc);
        p.used = false;
    }
    /* bf16: CUBLAS_COMPUTE_32F (fp32 accumulation); fp32: g->compute (pedantic fp32, see create) */
    CUBLAS_TRY(cublasLtMatmulDescCreate(&p.desc, g->fp32 ? g->compute : CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    const cudaDataType_t dt = g->fp32 ? CUDA_R_32F : CUDA_R_16BF;  // the bias has the output's type
    CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p.la, dt, K, N, K));
    CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p.lb, dt, K, T, K));
    CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p.lc, dt, N, T, N));
    cublasLtMatmulPreference_t pref;
    CUBLAS_TRY(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = kLtWorkspace;
    cublasStatus_t st =
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    if (bias)
        CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    p.used = true;  // descriptors exist: destroyed on reuse or free
    p.T = T, p.N = N, p.K = K, p.epi = epi;
    /* Tuned algorithm of this (N, K, epilogue), found at an earlier batch size: reuse it when
     * cuBLASLt accepts it for this size (no heuristic query, no re-timing per batch size). */
    TunedAlgo *tu = nullptr;
    if (g->tune) {
        for (TunedAlgo &t : g->tuned)
            if (t.used && t.N == N && t.K == K && t.epi == epi)
                tu = &t;
        if (tu) {
            cublasLtMatmulHeuristicResult_t chk;
            if (cublasLtMatmulAlgoCheck(g->lt, p.desc, p.la, p.lb, p.lc, p.lc, &tu->algo, &chk) ==
                    CUBLAS_STATUS_SUCCESS &&
                chk.workspaceSize <= kLtWorkspace) {
                cublasLtMatmulPreferenceDestroy(pref);
                p.algo = tu->algo;
                *out = &p;
                return SPLADE_OK;
            }
        }
    }
    constexpr int kCand = 8;
    cublasLtMatmulHeuristicResult_t res[kCand];
    int n = 0;
    const bool tune_now = g->tune && !tu && T >= 2048 && g->n_tuned < kTuned;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(g->lt, p.desc, p.la, p.lb, p.lc, p.lc, pref, tune_now ? kCand : 1, res,
                                            &n);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || n == 0) {
        p.used = false;
        cublasLtMatmulDescDestroy(p.desc);
        cublasLtMatrixLayoutDestroy(p.la);
        cublasLtMatrixLayoutDestroy(p.lb);
        cublasLtMatrixLayoutDestroy(p.lc);
        if (g->fp32 && g->compute == CUBLAS_COMPUTE_32F_PEDANTIC && st != CUBLAS_STATUS_ALLOC_FAILED) {
            /* no pedantic algorithm for this shape: plain CUBLAS_COMPUTE_32F from now on (no TF32 either) */
            g->compute = CUBLAS_COMPUTE_32F;
            return new_plan(g, T, N, K, epi, X, W, bias, Y, out);
        }
        return splade_fail(st == CUBLAS_STATUS_ALLOC_FAILED ? SPLADE_ERR_GPU_OOM : SPLADE_ERR_CUDA,
                           "%s:%d: cublasLtMatmulAlgoGetHeuristic: status %d, %d algorithms for %dx%dx%d",
                           __FILE__, __LINE__, (int)st, n, T, N, K);
    }
    int pick = 0;
    if (tune_now && n > 1) {  // time the candidates on the real operands, keep the fastest
        float best = -1.f;
        for (int i = 0; i < n; i++) {
            float ms = time_algo(g, p, res[i].algo, X, W, Y);
            if (ms >= 0 && (best < 0 || ms < best))
                best = ms, pick = i;
        }
        (void)cudaGetLastError();
        if (best < 0)
            return splade_fail(SPLADE_ERR_CUDA, "%s:%d: no cuBLASLt algorithm ran for %dx%dx%d", __FILE__, __LINE__,
                               T, N, K);
    }
    if (tune_now) {
        TunedAlgo &t = g->tuned[g->n_tuned++];
        t.used = true, t.N = N, t.K = K, t.epi = epi, t.algo = res[pick].algo;
    }
    p.algo = res[pick].algo;
    *out = &p;
    return SPLADE_OK;
}

}  // namespace

int ensure_lt(splade_gpu_encoder *g)
{
    if (!g->lt && cublasLtCreate(&g->lt) != CUBLAS_STATUS_SUCCESS) {
        g->lt = nullptr;
        return splade_fail(SPLADE_ERR_CUDA, "%s:%d: cublasLtCreate failed%s%s", __FILE__, __LINE__,
                           *splade_cublas_lazy_error() ? ": " : "", splade_cublas_lazy_error());
    }
    if (!g->lt_ws)
        CUDA_TRY(cudaMalloc(&g->lt_ws, kLtWorkspace));
    return SPLADE_OK;
}

int ensure_cublas(splade_gpu_encoder *g)
{
    if (g->cublas)
        return SPLADE_OK;
    if (cublasCreate(&g->cublas) != CUBLAS_STATUS_SUCCESS) {
        g->cublas = nullptr;
        return splade_fail(SPLADE_ERR_CUDA, "%s:%d: cublasCreate failed%s%s", __FILE__, __LINE__,
                           *splade_cublas_lazy_error() ? ": " : "", splade_cublas_lazy_error());
    }
    CUBLAS_TRY(cublasSetStream(g->cublas, g->stream));
    return SPLADE_OK;
}

int gemm(splade_gpu_encoder *g, const void *X, const void *W, const void *bias, void *Y, int T, int N, int K,
         cublasLtEpilogue_t epi)
{
    if (g->small_now && (epi == CUBLASLT_EPILOGUE_BIAS || epi == CUBLASLT_EPILOGUE_GELU_BIAS))
        return gemm_small(g, X, W, bias, Y, T, N, K, epi == CUBLASLT_EPILOGUE_GELU_BIAS);
    TRY(ensure_lt(g));
    GemmPlan *p;
    TRY(plan_for(g, T, N, K, epi, X, W, bias, Y, &p));
    if (bias)
        CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    const float one = 1.f, zero = 0.f;
    TRY(prof_begin(g, SPLADE_GPU_PROF_GEMM));
    CUBLAS_TRY(cublasLtMatmul(g->lt, p->desc, &one, W, p->la, X, p->lb, &zero, Y, p->lc, Y, p->lc, &p->algo,
                              g->lt_ws, kLtWorkspace, g->stream));
    /* initcheck does not see cuBLASLt's stores on Hopper: say what it wrote (src/gpu/init_mark.cu) */
    splade_gpu_mark_initialized(Y, (size_t)T * N * (g->fp32 ? sizeof(float) : sizeof(bf16)), g->stream);
    TRY(prof_end(g));
    return SPLADE_OK;
}

/* fp32 GEMMs: CUBLAS_COMPUTE_32F_PEDANTIC (exact fp32 arithmetic, no TF32, no emulation) when
 * cuBLASLt offers an algorithm for it with a bias epilogue, else CUBLAS_COMPUTE_32F (with fp32
 * operands cuBLASLt uses TF32 only when asked for CUBLAS_COMPUTE_32F_FAST_TF32).
 * $SPLADE_GPU_FP32_COMPUTE=default skips the pedantic type. */
int pick_fp32_compute(splade_gpu_encoder *g)
{
    g->compute = CUBLAS_COMPUTE_32F;
    if (splade_settings_get()->gpu_fp32_compute_default)
        return SPLADE_OK;
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    const int N = 256, K = 256, T = 256;
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    const void *bias = g->lt_ws;  // any 256-byte aligned device pointer: nothing runs
    const size_t ws = kLtWorkspace;
    cublasLtMatmulHeuristicResult_t res;
    int n = 0;
    bool ok = cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi) ==
                  CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias) ==
                  CUBLAS_STATUS_SUCCESS &&
              cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, K, N, K) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, K, T, K) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, N, T, N) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws) ==
                  CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulAlgoGetHeuristic(g->lt, desc, la, lb, lc, lc, pref, 1, &res, &n) == CUBLAS_STATUS_SUCCESS &&
              n > 0;
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (lc)
        cublasLtMatrixLayoutDestroy(lc);
    if (lb)
        cublasLtMatrixLayoutDestroy(lb);
    if (la)
        cublasLtMatrixLayoutDestroy(la);
    if (desc)
        cublasLtMatmulDescDestroy(desc);
    (void)cudaGetLastError();
    if (ok)
        g->compute = CUBLAS_COMPUTE_32F_PEDANTIC;
    return SPLADE_OK;
}

void gemm_plans_free(splade_gpu_encoder *g)
{
    for (GemmPlan &p : g->plans)
        if (p.used) {
            cublasLtMatmulDescDestroy(p.desc);
            cublasLtMatrixLayoutDestroy(p.la);
            cublasLtMatrixLayoutDestroy(p.lb);
            cublasLtMatrixLayoutDestroy(p.lc);
            p.used = false;
        }
}

}  // namespace splade_gpu_enc

/* cuBLASLt's first heuristic query sets up its tables (the bulk of the first forward's host time,
 * issue #13): one query of the encoder's kind (bf16, fp32 accumulation, A transposed, bias epilogue)
 * at a bert-base shape, on a handle of its own; nothing runs on the GPU. */
extern "C" int splade_gpu_warm_blas(int device)
{
    if (cudaSetDevice(device < 0 ? 0 : device) != cudaSuccess) {
        (void)cudaGetLastError();
        return SPLADE_ERR_NO_GPU;
    }
    cublasLtHandle_t lt = nullptr;
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    const int N = 768, K = 768, T = 256;
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    const size_t ws = splade_gpu_enc::kLtWorkspace;
    cublasLtMatmulHeuristicResult_t res;
    int n = 0;
    const bool ok = cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS &&
                    cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
                    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) == CUBLAS_STATUS_SUCCESS &&
                    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) == CUBLAS_STATUS_SUCCESS &&
                    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi) ==
                        CUBLAS_STATUS_SUCCESS &&
                    cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, K, N, K) == CUBLAS_STATUS_SUCCESS &&
                    cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, K, T, K) == CUBLAS_STATUS_SUCCESS &&
                    cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, N, T, N) == CUBLAS_STATUS_SUCCESS &&
                    cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
                    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                         sizeof ws) == CUBLAS_STATUS_SUCCESS &&
                    cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &res, &n) ==
                        CUBLAS_STATUS_SUCCESS;
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    for (cublasLtMatrixLayout_t l : {lc, lb, la})
        if (l)
            cublasLtMatrixLayoutDestroy(l);
    if (desc)
        cublasLtMatmulDescDestroy(desc);
    if (lt)
        cublasLtDestroy(lt);
    (void)cudaGetLastError();
    return ok && n > 0 ? SPLADE_OK : SPLADE_ERR_CUDA;
}
