/* Kernel lab: the GPU encoder's layer GEMMs, version by version (llm.c's dev/cuda pattern): a float64
 * CPU reference, the numbered variants, a checker (|out - ref| <= tol + |ref|·eps for every element,
 * after the output was poisoned with NaN), a launcher `switch`, and a main that validates every
 * variant then times it (cudaEvent, warm-ups, median). Build: `make lab` (build/lab/layer_gemm).
 *
 *   Y[T, N] = act(X[T, K] · W[N, K]ᵀ + b[N]), bf16 in and out (b bf16, as the library passes it to
 *   cuBLASLt), fp32 accumulation; act = none or GELU (erf). The shapes of a bert-base layer at the
 *   build's batch (T ≈ 13-16 k tokens): QKV 2304×768, attention-out 768×768, FFN-in 3072×768 + GELU,
 *   FFN-out 768×3072.
 *
 *   1  cuBLASLt as the library calls it (src/encoder/gpu_gemm.cu: TRANSA = T, the top 8 heuristic
 *      candidates timed on the operands, the fastest kept)
 *   2  TMA + wgmma (sm_90a), persistent, "ping-pong": one producer thread issues the X and W boxes
 *      of every K chunk into a ring of stages; two consumer warpgroups each own a whole 128×128
 *      output tile (tokens × features) and take the block's tiles in turn, so one warpgroup's
 *      epilogue (bias, GELU, bf16, stores straight from the accumulators) runs while the other's
 *      wgmma keep the tensor cores busy. Why: ncu over a build (bench/results/gpu-build-bound-2026-11-26.md)
 *      puts cuBLASLt's FFN-in (GELU epilogue) at ~71% of 790 TFLOP/s and the attention-out GEMM at
 *      ~61%, where the fused LM head, the same operand shapes without stores, runs at ~93%.
 *
 *   3  the fused LM head's v7 (lmhead_tma.cuh) with a store epilogue: both consumer warpgroups on one
 *      256-token x 128-feature tile, one ring of 48 KB stages, persistent
 *   4  v3 with 128 x 256 tiles
 *   5  v2 with the warpgroups' mainloops taking turns over one shared ring of 7 stages
 *   6  v5 with the epilogue through shared memory (128B-swizzled) and TMA stores, 5 stages
 *   7  v3 (cooperative 256 x 128) with v6's epilogue: the next tile's mainloop runs while its stores drain
 *   8  v7 with the tile's bias staged in shared memory (fp32) instead of 64 serialised loads a thread
 *   9  v8 compiled per activation (GELU a template argument: no branch per element in the epilogue)
 *   10 v9 with GELU in tanh form on tanh.approx.f32 (the form the library's cuBLASLt epilogue uses)
 *   11 v10 with 4 stages: each warpgroup stores its rows as two 16 KB boxes in turn (32 KB of epilogue)
 *
 *   layer_gemm [variant ...] [--T n] [--reps n] [--no-check] [--no-time]
 * Exit status 1 when a variant fails its check. */
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cublasLt.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "lmhead_fused/lmhead_tma.cuh" /* mbarrier and bulk tensor copy helpers, wg_mma_chunk */

#define CK(call)                                                                                         \
    do {                                                                                                 \
        cudaError_t e_ = (call);                                                                         \
        if (e_ != cudaSuccess) {                                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));      \
            exit(2);                                                                                     \
        }                                                                                                \
    } while (0)
#define LT(call)                                                                                         \
    do {                                                                                                 \
        cublasStatus_t s_ = (call);                                                                      \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                               \
            fprintf(stderr, "%s:%d: %s: status %d\n", __FILE__, __LINE__, #call, (int)s_);              \
            exit(2);                                                                                     \
        }                                                                                                \
    } while (0)

using bf16 = __nv_bfloat16;

struct Gemm {
    int T, N, K;
    bool gelu;
    const bf16 *X, *W, *b; /* device */
    bf16 *Y;
};

/* ---- 1: cuBLASLt, as src/encoder/gpu_gemm.cu calls it ------------------------------------------- */
namespace v1 {
cublasLtHandle_t lt;
void *ws;
constexpr size_t kWs = 32u << 20;

struct Plan {
    int T = 0, N = 0, K = 0;
    bool gelu = false;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
};
std::vector<Plan> plans;

float run_algo(Plan &p, const Gemm &g, const cublasLtMatmulAlgo_t *algo, cudaStream_t st)
{
    const float one = 1.f, zero = 0.f;
    return cublasLtMatmul(lt, p.desc, &one, g.W, p.la, g.X, p.lb, &zero, g.Y, p.lc, g.Y, p.lc, algo, ws, kWs, st) ==
                   CUBLAS_STATUS_SUCCESS
               ? 0.f
               : -1.f;
}

Plan &plan(const Gemm &g)
{
    for (Plan &p : plans)
        if (p.T == g.T && p.N == g.N && p.K == g.K && p.gelu == g.gelu)
            return p;
    plans.emplace_back();
    Plan &p = plans.back();
    p.T = g.T, p.N = g.N, p.K = g.K, p.gelu = g.gelu;
    LT(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtEpilogue_t epi = g.gelu ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    LT(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    LT(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    LT(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.b, sizeof g.b));
    LT(cublasLtMatrixLayoutCreate(&p.la, CUDA_R_16BF, g.K, g.N, g.K));
    LT(cublasLtMatrixLayoutCreate(&p.lb, CUDA_R_16BF, g.K, g.T, g.K));
    LT(cublasLtMatrixLayoutCreate(&p.lc, CUDA_R_16BF, g.N, g.T, g.N));
    cublasLtMatmulPreference_t pref;
    LT(cublasLtMatmulPreferenceCreate(&pref));
    size_t w = kWs;
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &w, sizeof w));
    cublasLtMatmulHeuristicResult_t res[8];
    int n = 0;
    LT(cublasLtMatmulAlgoGetHeuristic(lt, p.desc, p.la, p.lb, p.lc, p.lc, pref, 8, res, &n));
    cublasLtMatmulPreferenceDestroy(pref);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float best = -1;
    int pick = 0;
    for (int i = 0; i < n; i++) { /* the library's tuning: best of 2 timed runs after one warm-up */
        float b_ = -1;
        for (int r = 0; r < 3; r++) {
            CK(cudaEventRecord(e0));
            if (run_algo(p, g, &res[i].algo, 0) < 0)
                break;
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (r > 0 && (b_ < 0 || ms < b_))
                b_ = ms;
        }
        if (b_ >= 0 && (best < 0 || b_ < best))
            best = b_, pick = i;
    }
    cudaGetLastError();
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    p.algo = res[pick].algo;
    return p;
}

void init()
{
    LT(cublasLtCreate(&lt));
    CK(cudaMalloc(&ws, kWs));
}

void run(const Gemm &g) { LT(run_algo(plan(g), g, &plan(g).algo, 0) < 0 ? CUBLAS_STATUS_EXECUTION_FAILED : CUBLAS_STATUS_SUCCESS); }
} // namespace v1

/* ---- 2: TMA + wgmma, persistent, ping-pong consumers ------------------------------------------ */
namespace v2 {
constexpr int BM = 128, BN = 128;                  /* a consumer's tile: 128 tokens x 128 features */
constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE = A_BYTES + B_BYTES;
/* A ring of stages per consumer warpgroup: with one shared ring, the second warpgroup's first chunk
 * lies more than a ring ahead of the first's, and an mbarrier's parity cannot tell its phase from
 * the one two phases later (the wait would pass before the copy landed). */
constexpr int STAGES = (227 * 1024 - 1024 - 256) / (2 * STAGE); /* 3 of 32 KB per ring */
constexpr int BAR_OFF = 2 * STAGES * STAGE;
constexpr int SMEM = BAR_OFF + 2 * 16 * STAGES + 1024;
constexpr int THREADS = 3 * 128;

struct Params {
    int T, N, KC, tiles_n, ntiles;
    const bf16 *b;
    bf16 *Y;
    int gelu;
    int skip_epilogue; /* v7, v8, timing only ($LAYER_GEMM_SKIP_EPILOGUE): 1 no epilogue; v8: 2 no stores, 3 only the barriers and fence, 4 only the math and shared stores */
};

__device__ __forceinline__ float act(float v, int gelu)
{
    return gelu ? 0.5f * v * (1.f + erff(v * 0.70710678118654752f)) : v;
}

__global__ void __launch_bounds__(THREADS, 1)
    kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW, const Params p)
{
#ifdef SPLADE_WGMMA_ENABLED
    using namespace splade_lm;
    constexpr int S = STAGES;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t smem = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wq = (tid >> 5) & 3;
    /* ring r: stages at smem + (r * S + s) * STAGE, full[r][s] and empty[r][s] mbarriers */
    auto full = [&](int r, int s) { return smem + BAR_OFF + 8 * (r * S + s); };
    auto empty = [&](int r, int s) { return smem + BAR_OFF + 8 * (2 * S + r * S + s); };
    auto stage = [&](int r, int s) { return smem + (r * S + s) * STAGE; };
    if (tid == 0) {
        for (int r = 0; r < 2; r++)
            for (int s = 0; s < S; s++) {
                mbar_init(full(r, s), 1);
                mbar_init(empty(r, s), 4); /* the ring's warpgroup, one lane a warp */
            }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (wg == 2) { /* producer: the block's tiles in order, tile lt into ring lt % 2 */
        if (tid != 256)
            return;
        int n0 = 0, n1 = 0; /* chunks issued per ring */
        for (int lt = 0;; lt++) {
            const int t = blockIdx.x + lt * gridDim.x;
            if (t >= p.ntiles)
                break;
            const int tm = t / p.tiles_n, tn = t % p.tiles_n, r = lt & 1;
            for (int kc = 0; kc < p.KC; kc++) {
                const int i = r ? n1++ : n0++, s = i % S;
                if (i >= S)
                    mbar_wait(empty(r, s), ((i / S) - 1) & 1);
                mbar_arrive_expect_tx(full(r, s), STAGE);
                tma_load_2d(stage(r, s), &tmX, kc * BK, tm * BM, full(r, s));
                tma_load_2d(stage(r, s) + A_BYTES, &tmW, kc * BK, tn * BN, full(r, s));
            }
        }
        return;
    }
    float d[2][64];
    /* this warpgroup's tiles: the block's local tiles lt = wg, wg + 2, ..., all from ring wg */
    for (int lt = wg;; lt += 2) {
        const int t = blockIdx.x + lt * gridDim.x;
        if (t >= p.ntiles)
            break;
        const int tm = t / p.tiles_n, tn = t % p.tiles_n, c0 = (lt >> 1) * p.KC;
        for (int kc = 0; kc < p.KC; kc++) {
            const int c = c0 + kc, s = c % S;
            mbar_wait(full(wg, s), (c / S) & 1);
            wg_mma_chunk<2, BN>(d, stage(wg, s), stage(wg, s) + A_BYTES, 0, kc);
            wg_wait<1>();
            if (kc > 0 && lane == 0)
                mbar_arrive(empty(wg, (c + S - 1) % S));
        }
        wg_wait<0>();
        if (lane == 0)
            mbar_arrive(empty(wg, (c0 + p.KC - 1) % S));
        /* accumulator 4i + 2h + j: token row 16·wq + lane/4 + 8h of the m-th 64, feature 8i + 2·(lane%4) + j */
        const int f0 = tn * BN + 2 * (lane & 3);
        __nv_bfloat162 bb[16];
#pragma unroll
        for (int i = 0; i < 16; i++)
            bb[i] = *reinterpret_cast<const __nv_bfloat162 *>(p.b + f0 + 8 * i);
#pragma unroll
        for (int m = 0; m < 2; m++) {
            fence_regs(d[m]);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int row = tm * BM + m * 64 + wq * 16 + (lane >> 2) + 8 * h;
                if (row >= p.T)
                    continue;
                bf16 *y = p.Y + (size_t)row * p.N + f0;
#pragma unroll
                for (int i = 0; i < 16; i++) {
                    const float2 bf = __bfloat1622float2(bb[i]);
                    *reinterpret_cast<__nv_bfloat162 *>(y + 8 * i) = __floats2bfloat162_rn(
                        act(d[m][4 * i + 2 * h] + bf.x, p.gelu), act(d[m][4 * i + 2 * h + 1] + bf.y, p.gelu));
                }
            }
        }
    }
#endif
}

PFN_cuTensorMapEncodeTiled_v12000 encode_tiled;
int n_sm;

void encode(CUtensorMap *m, const void *base, int64_t rows, int64_t cols, int box_rows)
{
    cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    cuuint64_t strides[1] = {(cuuint64_t)cols * 2};
    cuuint32_t box[2] = {64, (cuuint32_t)box_rows};
    cuuint32_t estr[2] = {1, 1};
    if (encode_tiled(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(base), dims, strides, box, estr,
                     CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
        fprintf(stderr, "layer_gemm: cuTensorMapEncodeTiled failed\n");
        exit(2);
    }
}

bool init()
{
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !fn)
        return false;
    encode_tiled = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    CK(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, 0));
    return true;
}

bool supports(const Gemm &g) { return g.N % BN == 0 && g.K % 64 == 0; }

void run(const Gemm &g)
{
    CUtensorMap mx, mw;
    encode(&mx, g.X, g.T, g.K, BM);
    encode(&mw, g.W, g.N, g.K, BN);
    Params p{g.T, g.N, g.K / 64, g.N / BN, 0, g.b, g.Y, g.gelu, 0};
    p.ntiles = ((g.T + BM - 1) / BM) * p.tiles_n;
    /* two tiles per block at least, so that the ping-pong has a partner */
    const int grid = std::max(1, std::min(n_sm, (p.ntiles + 1) / 2));
    kernel<<<grid, THREADS, SMEM>>>(mx, mw, p);
    CK(cudaGetLastError());
}
} // namespace v2


/* ---- 3, 4: TMA + wgmma, persistent, cooperative (the fused LM head's v7 with a store epilogue) --
 * Both consumer warpgroups work on one tile: 3 = 256 tokens x 128 features (each warpgroup 128 x
 * 128), 4 = 128 x 256 (each 64 x 256); one ring of 48 KB stages (lmhead_tma.cuh's TmaCfg). The
 * epilogue does not overlap the tensor cores except through the stores' own asynchrony. */
namespace v3 {
using splade_lm::TmaCfg;

template <int WGM, int BN>
__global__ void __launch_bounds__(TmaCfg<WGM, BN>::THREADS, 1)
    kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW, const v2::Params p)
{
#ifdef SPLADE_WGMMA_ENABLED
    using namespace splade_lm;
    using C = TmaCfg<WGM, BN>;
    constexpr int S = C::STAGES;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t smem = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t full = smem + C::BAR_OFF, empty = full + 8 * S;
    const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wq = (tid >> 5) & 3;
    if (tid == 0) {
        for (int s = 0; s < S; s++) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, C::CONSUMER_WARPS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (wg == C::NWG) {
        if (tid != C::NWG * 128)
            return;
        int i = 0;
        for (int t = blockIdx.x; t < p.ntiles; t += gridDim.x) {
            const int tm = t / p.tiles_n, tn = t % p.tiles_n;
            for (int kc = 0; kc < p.KC; kc++, i++) {
                const int s = i % S;
                if (i >= S)
                    mbar_wait(empty + 8 * s, ((i / S) - 1) & 1);
                const uint32_t sA = smem + s * C::STAGE;
                mbar_arrive_expect_tx(full + 8 * s, C::STAGE);
                tma_load_2d(sA, &tmX, kc * BK, tm * C::BM, full + 8 * s);
                tma_load_2d(sA + C::A_BYTES, &tmW, kc * BK, tn * BN, full + 8 * s);
            }
        }
        return;
    }
    float d[WGM][BN / 2];
    int c = 0;
    for (int t = blockIdx.x; t < p.ntiles; t += gridDim.x) {
        const int tm = t / p.tiles_n, tn = t % p.tiles_n;
        for (int kc = 0; kc < p.KC; kc++, c++) {
            const int s = c % S;
            mbar_wait(full + 8 * s, (c / S) & 1);
            const uint32_t sA = smem + s * C::STAGE;
            wg_mma_chunk<WGM, BN>(d, sA, sA + C::A_BYTES, wg, kc);
            wg_wait<1>();
            if (kc > 0 && lane == 0)
                mbar_arrive(empty + 8 * ((c + S - 1) % S));
        }
        wg_wait<0>();
        if (lane == 0)
            mbar_arrive(empty + 8 * ((c + S - 1) % S));
        const int f0 = tn * BN + 2 * (lane & 3);
#pragma unroll
        for (int m = 0; m < WGM; m++) {
            fence_regs(d[m]);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int row = tm * C::BM + (wg * WGM + m) * 64 + wq * 16 + (lane >> 2) + 8 * h;
                if (row >= p.T)
                    continue;
                bf16 *y = p.Y + (size_t)row * p.N + f0;
#pragma unroll
                for (int i = 0; i < BN / 8; i++) {
                    const float2 bf = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(p.b + f0 + 8 * i));
                    *reinterpret_cast<__nv_bfloat162 *>(y + 8 * i) = __floats2bfloat162_rn(
                        v2::act(d[m][4 * i + 2 * h] + bf.x, p.gelu), v2::act(d[m][4 * i + 2 * h + 1] + bf.y, p.gelu));
                }
            }
        }
    }
#endif
}

template <int WGM, int BN> void init()
{
    CK(cudaFuncSetAttribute(kernel<WGM, BN>, cudaFuncAttributeMaxDynamicSharedMemorySize, TmaCfg<WGM, BN>::SMEM));
}

template <int WGM, int BN> bool supports(const Gemm &g) { return g.N % BN == 0 && g.K % 64 == 0; }

template <int WGM, int BN> void run(const Gemm &g)
{
    using C = TmaCfg<WGM, BN>;
    CUtensorMap mx, mw;
    v2::encode(&mx, g.X, g.T, g.K, C::BM);
    v2::encode(&mw, g.W, g.N, g.K, BN);
    v2::Params p{g.T, g.N, g.K / 64, g.N / BN, 0, g.b, g.Y, g.gelu, 0};
    p.ntiles = ((g.T + C::BM - 1) / C::BM) * p.tiles_n;
    const int grid = std::max(1, std::min(v2::n_sm, p.ntiles));
    kernel<WGM, BN><<<grid, C::THREADS, C::SMEM>>>(mx, mw, p);
    CK(cudaGetLastError());
}
} // namespace v3

/* ---- 5: ping-pong with ordered mainloops over one shared ring ----------------------------------
 * v2 gave each warpgroup its own ring of 3 stages, and its producer, filling one ring after the
 * other, ran the warpgroups' mainloops one at a time with only 3 chunks of look-ahead (61% at
 * K = 3,072). Here the warpgroups share one ring of 7 stages and take turns: warpgroup w starts its
 * j-th tile's mainloop only after the other one has issued the last wgmma of the tile before
 * (mbarriers turn[w], 4 arrivals: one lane a warp), so the chunks are consumed in ring order (no
 * parity aliasing) and one warpgroup's epilogue runs during the other's mainloop. */
namespace v5 {
constexpr int BM = 128, BN = 128;
constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE = A_BYTES + B_BYTES;
constexpr int STAGES = (227 * 1024 - 1024 - 256) / STAGE; /* 7 of 32 KB */
constexpr int BAR_OFF = STAGES * STAGE;
constexpr int SMEM = BAR_OFF + 16 * STAGES + 16 + 1024;
constexpr int THREADS = 3 * 128;

__global__ void __launch_bounds__(THREADS, 1)
    kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW, const v2::Params p)
{
#ifdef SPLADE_WGMMA_ENABLED
    using namespace splade_lm;
    constexpr int S = STAGES;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t smem = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t full = smem + BAR_OFF, empty = full + 8 * S, turn = empty + 8 * S;
    const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wq = (tid >> 5) & 3;
    if (tid == 0) {
        for (int s = 0; s < S; s++) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, 4);
        }
        mbar_init(turn, 4);
        mbar_init(turn + 8, 4);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (wg == 2) {
        if (tid != 256)
            return;
        int i = 0;
        for (int t = blockIdx.x; t < p.ntiles; t += gridDim.x) {
            const int tm = t / p.tiles_n, tn = t % p.tiles_n;
            for (int kc = 0; kc < p.KC; kc++, i++) {
                const int s = i % S;
                if (i >= S)
                    mbar_wait(empty + 8 * s, ((i / S) - 1) & 1);
                const uint32_t sA = smem + s * STAGE;
                mbar_arrive_expect_tx(full + 8 * s, STAGE);
                tma_load_2d(sA, &tmX, kc * BK, tm * BM, full + 8 * s);
                tma_load_2d(sA + A_BYTES, &tmW, kc * BK, tn * BN, full + 8 * s);
            }
        }
        return;
    }
    float d[2][64];
    for (int j = 0;; j++) {
        const int lt = 2 * j + wg, t = blockIdx.x + lt * gridDim.x;
        if (t >= p.ntiles)
            break;
        /* my turn: the other warpgroup has issued its tile lt - 1 (none before the first tile) */
        if (lt > 0)
            mbar_wait(turn + 8 * wg, (wg ? j : j - 1) & 1);
        const int tm = t / p.tiles_n, tn = t % p.tiles_n, c0 = lt * p.KC;
        for (int kc = 0; kc < p.KC; kc++) {
            const int c = c0 + kc, s = c % S;
            mbar_wait(full + 8 * s, (c / S) & 1);
            const uint32_t sA = smem + s * STAGE;
            wg_mma_chunk<2, BN>(d, sA, sA + A_BYTES, 0, kc);
            if (kc == p.KC - 1 && lane == 0) /* the last wgmma is issued: the other warpgroup's turn */
                mbar_arrive(turn + 8 * (1 - wg));
            wg_wait<1>();
            if (kc > 0 && lane == 0)
                mbar_arrive(empty + 8 * ((c + S - 1) % S));
        }
        wg_wait<0>();
        if (lane == 0)
            mbar_arrive(empty + 8 * ((c0 + p.KC - 1) % S));
        const int f0 = tn * BN + 2 * (lane & 3);
#pragma unroll
        for (int m = 0; m < 2; m++) {
            fence_regs(d[m]);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int row = tm * BM + m * 64 + wq * 16 + (lane >> 2) + 8 * h;
                if (row >= p.T)
                    continue;
                bf16 *y = p.Y + (size_t)row * p.N + f0;
#pragma unroll
                for (int i = 0; i < 16; i++) {
                    const float2 bf = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(p.b + f0 + 8 * i));
                    *reinterpret_cast<__nv_bfloat162 *>(y + 8 * i) = __floats2bfloat162_rn(
                        v2::act(d[m][4 * i + 2 * h] + bf.x, p.gelu), v2::act(d[m][4 * i + 2 * h + 1] + bf.y, p.gelu));
                }
            }
        }
    }
#endif
}

void init() { CK(cudaFuncSetAttribute(v5::kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM)); }

void run(const Gemm &g)
{
    CUtensorMap mx, mw;
    v2::encode(&mx, g.X, g.T, g.K, BM);
    v2::encode(&mw, g.W, g.N, g.K, BN);
    v2::Params p{g.T, g.N, g.K / 64, g.N / BN, 0, g.b, g.Y, g.gelu, 0};
    p.ntiles = ((g.T + BM - 1) / BM) * p.tiles_n;
    const int grid = std::max(1, std::min(v2::n_sm, (p.ntiles + 1) / 2));
    v5::kernel<<<grid, THREADS, SMEM>>>(mx, mw, p); /* qualified: v2::Params brings v2::kernel in by ADL */
    CK(cudaGetLastError());
}
} // namespace v5

/* ---- 6: v5 with the epilogue through shared memory and TMA stores ------------------------------
 * v5's mainloop is fast where K is long (78-82% at K = 3,072) but its epilogue, 64 scattered 4-byte
 * stores a thread, outlasts the other warpgroup's 12-chunk mainloop at K = 768. Here each warpgroup
 * writes its 128 x 128 bf16 tile into its own 32 KB of shared memory, in the 128B-swizzled layout of
 * two 64-column boxes (conflict-free: the 8 rows of a warp's store land in 8 different 16-byte
 * chunks), and one thread hands it to the copy engine (cp.async.bulk.tensor store; rows past T are
 * clipped by the engine). The ring keeps 5 stages. */
namespace v6 {
constexpr int BM = 128, BN = 128;
constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE = A_BYTES + B_BYTES;
constexpr int EPI_BYTES = BM * BN * 2; /* per warpgroup: two swizzled 128-row x 64-column boxes */
constexpr int STAGES = (227 * 1024 - 2 * EPI_BYTES - 1024 - 256) / STAGE; /* 5 of 32 KB */
constexpr int EPI_OFF = STAGES * STAGE;
constexpr int BAR_OFF = EPI_OFF + 2 * EPI_BYTES;
constexpr int SMEM = BAR_OFF + 16 * STAGES + 16 + 1024;
constexpr int THREADS = 3 * 128;

using v2::act;
__device__ __forceinline__ void wg_bar(int wg) { asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory"); }

__global__ void __launch_bounds__(THREADS, 1)
    kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW,
           const __grid_constant__ CUtensorMap tmY, const v2::Params p)
{
#ifdef SPLADE_WGMMA_ENABLED
    using namespace splade_lm;
    constexpr int S = STAGES;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t smem = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t full = smem + BAR_OFF, empty = full + 8 * S, turn = empty + 8 * S;
    const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wq = (tid >> 5) & 3;
    if (tid == 0) {
        for (int s = 0; s < S; s++) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, 4);
        }
        mbar_init(turn, 4);
        mbar_init(turn + 8, 4);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (wg == 2) {
        if (tid != 256)
            return;
        int i = 0;
        for (int t = blockIdx.x; t < p.ntiles; t += gridDim.x) {
            const int tm = t / p.tiles_n, tn = t % p.tiles_n;
            for (int kc = 0; kc < p.KC; kc++, i++) {
                const int s = i % S;
                if (i >= S)
                    mbar_wait(empty + 8 * s, ((i / S) - 1) & 1);
                const uint32_t sA = smem + s * STAGE;
                mbar_arrive_expect_tx(full + 8 * s, STAGE);
                tma_load_2d(sA, &tmX, kc * BK, tm * BM, full + 8 * s);
                tma_load_2d(sA + A_BYTES, &tmW, kc * BK, tn * BN, full + 8 * s);
            }
        }
        return;
    }
    const uint32_t epi = smem + EPI_OFF + wg * EPI_BYTES;
    const bool leader = (tid & 127) == 0;
    float d[2][64];
    for (int j = 0;; j++) {
        const int lt = 2 * j + wg, t = blockIdx.x + lt * gridDim.x;
        if (t >= p.ntiles)
            break;
        if (lt > 0)
            mbar_wait(turn + 8 * wg, (wg ? j : j - 1) & 1);
        const int tm = t / p.tiles_n, tn = t % p.tiles_n, c0 = lt * p.KC;
        for (int kc = 0; kc < p.KC; kc++) {
            const int c = c0 + kc, s = c % S;
            mbar_wait(full + 8 * s, (c / S) & 1);
            const uint32_t sA = smem + s * STAGE;
            wg_mma_chunk<2, BN>(d, sA, sA + A_BYTES, 0, kc);
            if (kc == p.KC - 1 && lane == 0)
                mbar_arrive(turn + 8 * (1 - wg));
            wg_wait<1>();
            if (kc > 0 && lane == 0)
                mbar_arrive(empty + 8 * ((c + S - 1) % S));
        }
        wg_wait<0>();
        if (lane == 0)
            mbar_arrive(empty + 8 * ((c0 + p.KC - 1) % S));
        /* the previous tile's store has read this warpgroup's buffer */
        if (leader)
            asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
        wg_bar(wg);
        const int f0 = tn * BN + 2 * (lane & 3);
        /* this thread's rows are r0 + 64m + 8h, all with r % 8 = lane / 4: one XOR key for every store */
        const uint32_t base = epi + (wq * 16 + (lane >> 2)) * 128 + 4 * (lane & 3), key = (lane >> 2) << 4;
#pragma unroll
        for (int m = 0; m < 2; m++) {
            fence_regs(d[m]);
#pragma unroll
            for (int h = 0; h < 2; h++) {
#pragma unroll
                for (int i = 0; i < 16; i++) {
                    /* the bias pair read here, not hoisted: 16 more live pairs would spill */
                    uint32_t braw;
                    asm volatile("ld.global.nc.b32 %0, [%1];\n" : "=r"(braw) : "l"(p.b + f0 + 8 * i));
                    /* bf16 <-> fp32 by bit shifts: taking a register's address would put it on the stack */
                    const float lo = act(d[m][4 * i + 2 * h] + __uint_as_float(braw << 16), p.gelu),
                                hi = act(d[m][4 * i + 2 * h + 1] + __uint_as_float(braw & 0xFFFF0000u), p.gelu);
                    const uint32_t packed = (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(lo)) |
                                            (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16;
                    /* box i / 8 (64 columns), row r, 16-byte chunk (i % 8) ^ (r % 8), 4 bytes a lane of the quad */
                    const uint32_t a = base + (i >> 3) * (BM * 128) + (m * 64 + 8 * h) * 128 + (((i & 7) << 4) ^ key);
                    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a), "r"(packed) : "memory");
                }
            }
        }
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        wg_bar(wg);
        if (leader) {
            for (int b = 0; b < 2; b++)
                asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
                             ::"l"(reinterpret_cast<uint64_t>(&tmY)), "r"(tn * BN + 64 * b), "r"(tm * BM),
                             "r"(epi + b * (BM * 128))
                             : "memory");
            asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
        }
    }
    if (leader)
        asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#endif
}

void init() { CK(cudaFuncSetAttribute(v6::kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM)); }

void run(const Gemm &g)
{
    CUtensorMap mx, mw, my;
    v2::encode(&mx, g.X, g.T, g.K, BM);
    v2::encode(&mw, g.W, g.N, g.K, BN);
    v2::encode(&my, g.Y, g.T, g.N, BM); /* 64-column x 128-row boxes, 128B-swizzled */
    v2::Params p{g.T, g.N, g.K / 64, g.N / BN, 0, g.b, g.Y, g.gelu, 0};
    p.ntiles = ((g.T + BM - 1) / BM) * p.tiles_n;
    const int grid = std::max(1, std::min(v2::n_sm, (p.ntiles + 1) / 2));
    v6::kernel<<<grid, THREADS, SMEM>>>(mx, mw, my, p);
    CK(cudaGetLastError());
}
} // namespace v6

/* ---- 7: v3 (cooperative 256 x 128, the head's mainloop) with v6's shared-memory + TMA-store epilogue
 * v5/v6 showed one warpgroup's mainloop alone reaches ~78% at best; the head's two warpgroups on one
 * tile reach 93%. Here both warpgroups write the finished tile (bias, GELU, bf16) into 64 KB of
 * shared memory as two 128B-swizzled 64-column boxes, one thread hands them to the copy engine, and
 * the next tile's mainloop starts while the stores drain. 3 stages of 48 KB. */
namespace v7 {
constexpr int WGM = 2, BN = 128, BM = 256;
constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE = A_BYTES + B_BYTES;
constexpr int EPI_BYTES = BM * BN * 2;
constexpr int STAGES = (227 * 1024 - EPI_BYTES - 1024 - 256) / STAGE; /* 3 of 48 KB */
constexpr int EPI_OFF = STAGES * STAGE;
constexpr int BAR_OFF = EPI_OFF + EPI_BYTES;
constexpr int SMEM = BAR_OFF + 16 * STAGES + 1024;
constexpr int THREADS = 3 * 128;
using v2::act;

__global__ void __launch_bounds__(THREADS, 1)
    kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW,
           const __grid_constant__ CUtensorMap tmY, const v2::Params p)
{
#ifdef SPLADE_WGMMA_ENABLED
    using namespace splade_lm;
    constexpr int S = STAGES;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t smem = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t full = smem + BAR_OFF, empty = full + 8 * S, epi = smem + EPI_OFF;
    const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wq = (tid >> 5) & 3;
    if (tid == 0) {
        for (int s = 0; s < S; s++) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (wg == 2) {
        if (tid != 256)
            return;
        int i = 0;
        for (int t = blockIdx.x; t < p.ntiles; t += gridDim.x) {
            const int tm = t / p.tiles_n, tn = t % p.tiles_n;
            for (int kc = 0; kc < p.KC; kc++, i++) {
                const int s = i % S;
                if (i >= S)
                    mbar_wait(empty + 8 * s, ((i / S) - 1) & 1);
                const uint32_t sA = smem + s * STAGE;
                mbar_arrive_expect_tx(full + 8 * s, STAGE);
                tma_load_2d(sA, &tmX, kc * BK, tm * BM, full + 8 * s);
                tma_load_2d(sA + A_BYTES, &tmW, kc * BK, tn * BN, full + 8 * s);
            }
        }
        return;
    }
    float d[WGM][BN / 2];
    int c = 0;
    /* this thread's rows r all have r % 8 = lane / 4: one XOR key for the swizzle */
    const uint32_t base = epi + (wg * WGM * 64 + wq * 16 + (lane >> 2)) * 128 + 4 * (lane & 3), key = (lane >> 2) << 4;
    for (int t = blockIdx.x; t < p.ntiles; t += gridDim.x) {
        const int tm = t / p.tiles_n, tn = t % p.tiles_n;
        for (int kc = 0; kc < p.KC; kc++, c++) {
            const int s = c % S;
            mbar_wait(full + 8 * s, (c / S) & 1);
            const uint32_t sA = smem + s * STAGE;
            wg_mma_chunk<WGM, BN>(d, sA, sA + A_BYTES, wg, kc);
            wg_wait<1>();
            if (kc > 0 && lane == 0)
                mbar_arrive(empty + 8 * ((c + S - 1) % S));
        }
        wg_wait<0>();
        if (lane == 0)
            mbar_arrive(empty + 8 * ((c + S - 1) % S));
        if (p.skip_epilogue) {
#pragma unroll
            for (int m = 0; m < WGM; m++)
                fence_regs(d[m]);
            continue;
        }
        if (tid == 0) /* the previous tile's stores have read the buffer */
            asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
        asm volatile("bar.sync 1, 256;\n" ::: "memory");
        const int f0 = tn * BN + 2 * (lane & 3);
#pragma unroll
        for (int m = 0; m < WGM; m++) {
            fence_regs(d[m]);
#pragma unroll
            for (int h = 0; h < 2; h++) {
#pragma unroll
                for (int i = 0; i < BN / 8; i++) {
                    uint32_t braw;
                    asm volatile("ld.global.nc.b32 %0, [%1];\n" : "=r"(braw) : "l"(p.b + f0 + 8 * i));
                    const float lo = act(d[m][4 * i + 2 * h] + __uint_as_float(braw << 16), p.gelu),
                                hi = act(d[m][4 * i + 2 * h + 1] + __uint_as_float(braw & 0xFFFF0000u), p.gelu);
                    const uint32_t packed = (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(lo)) |
                                            (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16;
                    const uint32_t a = base + (i >> 3) * (BM * 128) + (m * 64 + 8 * h) * 128 + (((i & 7) << 4) ^ key);
                    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a), "r"(packed) : "memory");
                }
            }
        }
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        asm volatile("bar.sync 1, 256;\n" ::: "memory");
        if (tid == 0) {
            for (int b = 0; b < BN / 64; b++)
                asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
                             ::"l"(reinterpret_cast<uint64_t>(&tmY)), "r"(tn * BN + 64 * b), "r"(tm * BM),
                             "r"(epi + b * (BM * 128))
                             : "memory");
            asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
        }
    }
    if (tid == 0)
        asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#endif
}

void init() { CK(cudaFuncSetAttribute(v7::kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM)); }

void run(const Gemm &g)
{
    CUtensorMap mx, mw, my;
    v2::encode(&mx, g.X, g.T, g.K, BM);
    v2::encode(&mw, g.W, g.N, g.K, BN);
    v2::encode(&my, g.Y, g.T, g.N, BM);
    v2::Params p{g.T, g.N, g.K / 64, g.N / BN, 0, g.b, g.Y, g.gelu, getenv("LAYER_GEMM_SKIP_EPILOGUE") != nullptr};
    p.ntiles = ((g.T + BM - 1) / BM) * p.tiles_n;
    const int grid = std::max(1, std::min(v2::n_sm, p.ntiles));
    v7::kernel<<<grid, THREADS, SMEM>>>(mx, mw, my, p);
    CK(cudaGetLastError());
}
} // namespace v7
/* ---- 8: v7 with the tile's bias staged in shared memory ---------------------------------------
 * v7 without its epilogue ran at 87-92% of 790 (75% attention-out): the mainloop beats cuBLASLt,
 * the epilogue cost ~7 µs a tile. Its bias came by 64 serialised global loads a thread (volatile,
 * each used at once, to stop the compiler hoisting them into spilling registers). Here the
 * consumers copy the tile's 128 bias values into shared memory as fp32 before the mainloop, and the
 * epilogue reads them from there.
 * (v7's comment follows.)
 * v5/v6 showed one warpgroup's mainloop alone reaches ~78% at best; the head's two warpgroups on one
 * tile reach 93%. Here both warpgroups write the finished tile (bias, GELU, bf16) into 64 KB of
 * shared memory as two 128B-swizzled 64-column boxes, one thread hands them to the copy engine, and
 * the next tile's mainloop starts while the stores drain. 3 stages of 48 KB. */
namespace v8 {
constexpr int WGM = 2, BN = 128, BM = 256;
constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE = A_BYTES + B_BYTES;
constexpr int EPI_BYTES = BM * BN * 2;
constexpr int STAGES = (227 * 1024 - EPI_BYTES - 1024 - 256) / STAGE; /* 3 of 48 KB */
constexpr int EPI_OFF = STAGES * STAGE;
constexpr int BIAS_OFF = EPI_OFF + EPI_BYTES;
constexpr int BAR_OFF = BIAS_OFF + BN * 4;
constexpr int SMEM = BAR_OFF + 16 * STAGES + 1024;
constexpr int THREADS = 3 * 128;
using v2::act;

__global__ void __launch_bounds__(THREADS, 1)
    kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW,
           const __grid_constant__ CUtensorMap tmY, const v2::Params p)
{
#ifdef SPLADE_WGMMA_ENABLED
    using namespace splade_lm;
    constexpr int S = STAGES;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t smem = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t full = smem + BAR_OFF, empty = full + 8 * S, epi = smem + EPI_OFF;
    const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wq = (tid >> 5) & 3;
    if (tid == 0) {
        for (int s = 0; s < S; s++) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (wg == 2) {
        if (tid != 256)
            return;
        int i = 0;
        for (int t = blockIdx.x; t < p.ntiles; t += gridDim.x) {
            const int tm = t / p.tiles_n, tn = t % p.tiles_n;
            for (int kc = 0; kc < p.KC; kc++, i++) {
                const int s = i % S;
                if (i >= S)
                    mbar_wait(empty + 8 * s, ((i / S) - 1) & 1);
                const uint32_t sA = smem + s * STAGE;
                mbar_arrive_expect_tx(full + 8 * s, STAGE);
                tma_load_2d(sA, &tmX, kc * BK, tm * BM, full + 8 * s);
                tma_load_2d(sA + A_BYTES, &tmW, kc * BK, tn * BN, full + 8 * s);
            }
        }
        return;
    }
    float d[WGM][BN / 2];
    int c = 0;
    /* this thread's rows r all have r % 8 = lane / 4: one XOR key for the swizzle */
    const uint32_t base = epi + (wg * WGM * 64 + wq * 16 + (lane >> 2)) * 128 + 4 * (lane & 3), key = (lane >> 2) << 4;
    float *bias_s = reinterpret_cast<float *>(smem_raw + (smem - smem_u32(smem_raw)) + BIAS_OFF);
    for (int t = blockIdx.x; t < p.ntiles; t += gridDim.x) {
        const int tm = t / p.tiles_n, tn = t % p.tiles_n;
        /* the tile's bias into shared memory (read after the barrier below the mainloop; the previous
         * tile's epilogue finished reading it before that tile's last barrier) */
        if (tid < BN)
            bias_s[tid] = __bfloat162float(p.b[tn * BN + tid]);
        for (int kc = 0; kc < p.KC; kc++, c++) {
            const int s = c % S;
            mbar_wait(full + 8 * s, (c / S) & 1);
            const uint32_t sA = smem + s * STAGE;
            wg_mma_chunk<WGM, BN>(d, sA, sA + A_BYTES, wg, kc);
            wg_wait<1>();
            if (kc > 0 && lane == 0)
                mbar_arrive(empty + 8 * ((c + S - 1) % S));
        }
        wg_wait<0>();
        if (lane == 0)
            mbar_arrive(empty + 8 * ((c + S - 1) % S));
        if (p.skip_epilogue == 1) {
#pragma unroll
            for (int m = 0; m < WGM; m++)
                fence_regs(d[m]);
            continue;
        }
        const int sk = p.skip_epilogue;
        if (tid == 0 && sk != 4) /* the previous tile's stores have read the buffer */
            asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
        if (sk != 4)
            asm volatile("bar.sync 1, 256;\n" ::: "memory");
        if (sk == 3) {
#pragma unroll
            for (int m = 0; m < WGM; m++)
                fence_regs(d[m]);
        } else {
#pragma unroll
        for (int m = 0; m < WGM; m++) {
            fence_regs(d[m]);
#pragma unroll
            for (int h = 0; h < 2; h++) {
#pragma unroll
                for (int i = 0; i < BN / 8; i++) {
                    const float2 bf = *reinterpret_cast<const float2 *>(bias_s + 8 * i + 2 * (lane & 3));
                    const float lo = act(d[m][4 * i + 2 * h] + bf.x, p.gelu), hi = act(d[m][4 * i + 2 * h + 1] + bf.y, p.gelu);
                    const uint32_t packed = (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(lo)) |
                                            (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16;
                    const uint32_t a = base + (i >> 3) * (BM * 128) + (m * 64 + 8 * h) * 128 + (((i & 7) << 4) ^ key);
                    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a), "r"(packed) : "memory");
                }
            }
        }
        }
        if (sk == 4)
            continue;
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        asm volatile("bar.sync 1, 256;\n" ::: "memory");
        if (tid == 0 && sk != 2 && sk != 3) { /* 2: everything but the stores (timing only) */
            for (int b = 0; b < BN / 64; b++)
                asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
                             ::"l"(reinterpret_cast<uint64_t>(&tmY)), "r"(tn * BN + 64 * b), "r"(tm * BM),
                             "r"(epi + b * (BM * 128))
                             : "memory");
            asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
        }
    }
    if (tid == 0)
        asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#endif
}

void init() { CK(cudaFuncSetAttribute(v8::kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM)); }

void run(const Gemm &g)
{
    CUtensorMap mx, mw, my;
    v2::encode(&mx, g.X, g.T, g.K, BM);
    v2::encode(&mw, g.W, g.N, g.K, BN);
    v2::encode(&my, g.Y, g.T, g.N, BM);
    v2::Params p{g.T, g.N, g.K / 64, g.N / BN, 0, g.b, g.Y, g.gelu, getenv("LAYER_GEMM_SKIP_EPILOGUE") ? atoi(getenv("LAYER_GEMM_SKIP_EPILOGUE")) : 0};
    p.ntiles = ((g.T + BM - 1) / BM) * p.tiles_n;
    const int grid = std::max(1, std::min(v2::n_sm, p.ntiles));
    v8::kernel<<<grid, THREADS, SMEM>>>(mx, mw, my, p);
    CK(cudaGetLastError());
}
} // namespace v8
/* ---- 9: v8 compiled per activation -------------------------------------------------------------
 * ncu on v8 (QKV): the epilogue's F2FP instructions alone drew 17% of the stall samples, nearly all
 * "no instruction": the unrolled epilogue with a run-time GELU branch around every element is ~85 KB
 * of SASS, and each branch defeats the instruction prefetch. Here GELU is a template argument: the
 * plain kernel's epilogue is ~400 straight-line instructions, the GELU one straight-line too.
 * (v8's comment follows.)
 * ---- 8: v7 with the tile's bias staged in shared memory ---------------------------------------
 * v7 without its epilogue ran at 87-92% of 790 (75% attention-out): the mainloop beats cuBLASLt,
 * the epilogue cost ~7 µs a tile. Its bias came by 64 serialised global loads a thread (volatile,
 * each used at once, to stop the compiler hoisting them into spilling registers). Here the
 * consumers copy the tile's 128 bias values into shared memory as fp32 before the mainloop, and the
 * epilogue reads them from there.
 * (v7's comment follows.)
 * v5/v6 showed one warpgroup's mainloop alone reaches ~78% at best; the head's two warpgroups on one
 * tile reach 93%. Here both warpgroups write the finished tile (bias, GELU, bf16) into 64 KB of
 * shared memory as two 128B-swizzled 64-column boxes, one thread hands them to the copy engine, and
 * the next tile's mainloop starts while the stores drain. 3 stages of 48 KB. */
namespace v9 {
constexpr int WGM = 2, BN = 128, BM = 256;
constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE = A_BYTES + B_BYTES;
constexpr int EPI_BYTES = BM * BN * 2;
constexpr int STAGES = (227 * 1024 - EPI_BYTES - 1024 - 256) / STAGE; /* 3 of 48 KB */
constexpr int EPI_OFF = STAGES * STAGE;
constexpr int BIAS_OFF = EPI_OFF + EPI_BYTES;
constexpr int BAR_OFF = BIAS_OFF + BN * 4;
constexpr int SMEM = BAR_OFF + 16 * STAGES + 1024;
constexpr int THREADS = 3 * 128;
using v2::act;

template <int GELU>
__global__ void __launch_bounds__(THREADS, 1)
    kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW,
           const __grid_constant__ CUtensorMap tmY, const v2::Params p)
{
#ifdef SPLADE_WGMMA_ENABLED
    using namespace splade_lm;
    constexpr int S = STAGES;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t smem = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t full = smem + BAR_OFF, empty = full + 8 * S, epi = smem + EPI_OFF;
    const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wq = (tid >> 5) & 3;
    if (tid == 0) {
        for (int s = 0; s < S; s++) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (wg == 2) {
        if (tid != 256)
            return;
        int i = 0;
        for (int t = blockIdx.x; t < p.ntiles; t += gridDim.x) {
            const int tm = t / p.tiles_n, tn = t % p.tiles_n;
            for (int kc = 0; kc < p.KC; kc++, i++) {
                const int s = i % S;
                if (i >= S)
                    mbar_wait(empty + 8 * s, ((i / S) - 1) & 1);
                const uint32_t sA = smem + s * STAGE;
                mbar_arrive_expect_tx(full + 8 * s, STAGE);
                tma_load_2d(sA, &tmX, kc * BK, tm * BM, full + 8 * s);
                tma_load_2d(sA + A_BYTES, &tmW, kc * BK, tn * BN, full + 8 * s);
            }
        }
        return;
    }
    float d[WGM][BN / 2];
    int c = 0;
    /* this thread's rows r all have r % 8 = lane / 4: one XOR key for the swizzle */
    const uint32_t base = epi + (wg * WGM * 64 + wq * 16 + (lane >> 2)) * 128 + 4 * (lane & 3), key = (lane >> 2) << 4;
    float *bias_s = reinterpret_cast<float *>(smem_raw + (smem - smem_u32(smem_raw)) + BIAS_OFF);
    for (int t = blockIdx.x; t < p.ntiles; t += gridDim.x) {
        const int tm = t / p.tiles_n, tn = t % p.tiles_n;
        /* the tile's bias into shared memory (read after the barrier below the mainloop; the previous
         * tile's epilogue finished reading it before that tile's last barrier) */
        if (tid < BN)
            bias_s[tid] = __bfloat162float(p.b[tn * BN + tid]);
        for (int kc = 0; kc < p.KC; kc++, c++) {
            const int s = c % S;
            mbar_wait(full + 8 * s, (c / S) & 1);
            const uint32_t sA = smem + s * STAGE;
            wg_mma_chunk<WGM, BN>(d, sA, sA + A_BYTES, wg, kc);
            wg_wait<1>();
            if (kc > 0 && lane == 0)
                mbar_arrive(empty + 8 * ((c + S - 1) % S));
        }
        wg_wait<0>();
        if (lane == 0)
            mbar_arrive(empty + 8 * ((c + S - 1) % S));
        if (p.skip_epilogue == 1) {
#pragma unroll
            for (int m = 0; m < WGM; m++)
                fence_regs(d[m]);
            continue;
        }
        const int sk = p.skip_epilogue;
        if (tid == 0 && sk != 4) /* the previous tile's stores have read the buffer */
            asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
        if (sk != 4)
            asm volatile("bar.sync 1, 256;\n" ::: "memory");
        if (sk == 3) {
#pragma unroll
            for (int m = 0; m < WGM; m++)
                fence_regs(d[m]);
        } else {
#pragma unroll
        for (int m = 0; m < WGM; m++) {
            fence_regs(d[m]);
#pragma unroll
            for (int h = 0; h < 2; h++) {
#pragma unroll
                for (int i = 0; i < BN / 8; i++) {
                    const float2 bf = *reinterpret_cast<const float2 *>(bias_s + 8 * i + 2 * (lane & 3));
                    const float lo = act(d[m][4 * i + 2 * h] + bf.x, GELU), hi = act(d[m][4 * i + 2 * h + 1] + bf.y, GELU);
                    const uint32_t packed = (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(lo)) |
                                            (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16;
                    const uint32_t a = base + (i >> 3) * (BM * 128) + (m * 64 + 8 * h) * 128 + (((i & 7) << 4) ^ key);
                    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a), "r"(packed) : "memory");
                }
            }
        }
        }
        if (sk == 4)
            continue;
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        asm volatile("bar.sync 1, 256;\n" ::: "memory");
        if (tid == 0 && sk != 2 && sk != 3) { /* 2: everything but the stores (timing only) */
            for (int b = 0; b < BN / 64; b++)
                asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
                             ::"l"(reinterpret_cast<uint64_t>(&tmY)), "r"(tn * BN + 64 * b), "r"(tm * BM),
                             "r"(epi + b * (BM * 128))
                             : "memory");
            asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
        }
    }
    if (tid == 0)
        asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#endif
}

void init()
{
    CK(cudaFuncSetAttribute(v9::kernel<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    CK(cudaFuncSetAttribute(v9::kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
}

void run(const Gemm &g)
{
    CUtensorMap mx, mw, my;
    v2::encode(&mx, g.X, g.T, g.K, BM);
    v2::encode(&mw, g.W, g.N, g.K, BN);
    v2::encode(&my, g.Y, g.T, g.N, BM);
    v2::Params p{g.T, g.N, g.K / 64, g.N / BN, 0, g.b, g.Y, g.gelu, getenv("LAYER_GEMM_SKIP_EPILOGUE") ? atoi(getenv("LAYER_GEMM_SKIP_EPILOGUE")) : 0};
    p.ntiles = ((g.T + BM - 1) / BM) * p.tiles_n;
    const int grid = std::max(1, std::min(v2::n_sm, p.ntiles));
    if (g.gelu)
        v9::kernel<1><<<grid, THREADS, SMEM>>>(mx, mw, my, p);
    else
        v9::kernel<0><<<grid, THREADS, SMEM>>>(mx, mw, my, p);
    CK(cudaGetLastError());
}
} // namespace v9
/* ---- 10: v9 with GELU in tanh form on the MUFU tanh (what the library's cuBLASLt epilogue computes:
 * docs/GPU_ENCODER.md "GELU"): erff is ~30 instructions a value, 128 values a thread per tile, where
 * 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) is 6 with tanh.approx.f32 (relative error ~2^-11, well
 * under the bf16 output's 2^-8). The checker's reference stays float64 erf-GELU.
 * ---- 9: v8 compiled per activation -------------------------------------------------------------
 * ncu on v8 (QKV): the epilogue's F2FP instructions alone drew 17% of the stall samples, nearly all
 * "no instruction": the unrolled epilogue with a run-time GELU branch around every element is ~85 KB
 * of SASS, and each branch defeats the instruction prefetch. Here GELU is a template argument: the
 * plain kernel's epilogue is ~400 straight-line instructions, the GELU one straight-line too.
 * (v8's comment follows.)
 * ---- 8: v7 with the tile's bias staged in shared memory ---------------------------------------
 * v7 without its epilogue ran at 87-92% of 790 (75% attention-out): the mainloop beats cuBLASLt,
 * the epilogue cost ~7 µs a tile. Its bias came by 64 serialised global loads a thread (volatile,
 * each used at once, to stop the compiler hoisting them into spilling registers). Here the
 * consumers copy the tile's 128 bias values into shared memory as fp32 before the mainloop, and the
 * epilogue reads them from there.
 * (v7's comment follows.)
 * v5/v6 showed one warpgroup's mainloop alone reaches ~78% at best; the head's two warpgroups on one
 * tile reach 93%. Here both warpgroups write the finished tile (bias, GELU, bf16) into 64 KB of
 * shared memory as two 128B-swizzled 64-column boxes, one thread hands them to the copy engine, and
 * the next tile's mainloop starts while the stores drain. 3 stages of 48 KB. */
namespace v10 {
constexpr int WGM = 2, BN = 128, BM = 256;
constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE = A_BYTES + B_BYTES;
constexpr int EPI_BYTES = BM * BN * 2;
constexpr int STAGES = (227 * 1024 - EPI_BYTES - 1024 - 256) / STAGE; /* 3 of 48 KB */
constexpr int EPI_OFF = STAGES * STAGE;
constexpr int BIAS_OFF = EPI_OFF + EPI_BYTES;
constexpr int BAR_OFF = BIAS_OFF + BN * 4;
constexpr int SMEM = BAR_OFF + 16 * STAGES + 1024;
constexpr int THREADS = 3 * 128;
__device__ __forceinline__ float act(float v, int gelu)
{
    if (!gelu)
        return v;
    float t;
    const float u = v * (0.7978845608028654f + 0.0356774081363001f * v * v);
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(u));
    return 0.5f * v * (1.f + t);
}

template <int GELU>
__global__ void __launch_bounds__(THREADS, 1)
    kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW,
           const __grid_constant__ CUtensorMap tmY, const v2::Params p)
{
#ifdef SPLADE_WGMMA_ENABLED
    using namespace splade_lm;
    constexpr int S = STAGES;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t smem = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t full = smem + BAR_OFF, empty = full + 8 * S, epi = smem + EPI_OFF;
    const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wq = (tid >> 5) & 3;
    if (tid == 0) {
        for (int s = 0; s < S; s++) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (wg == 2) {
        if (tid != 256)
            return;
        int i = 0;
        for (int t = blockIdx.x; t < p.ntiles; t += gridDim.x) {
            const int tm = t / p.tiles_n, tn = t % p.tiles_n;
            for (int kc = 0; kc < p.KC; kc++, i++) {
                const int s = i % S;
                if (i >= S)
                    mbar_wait(empty + 8 * s, ((i / S) - 1) & 1);
                const uint32_t sA = smem + s * STAGE;
                mbar_arrive_expect_tx(full + 8 * s, STAGE);
                tma_load_2d(sA, &tmX, kc * BK, tm * BM, full + 8 * s);
                tma_load_2d(sA + A_BYTES, &tmW, kc * BK, tn * BN, full + 8 * s);
            }
        }
        return;
    }
    float d[WGM][BN / 2];
    int c = 0;
    /* this thread's rows r all have r % 8 = lane / 4: one XOR key for the swizzle */
    const uint32_t base = epi + (wg * WGM * 64 + wq * 16 + (lane >> 2)) * 128 + 4 * (lane & 3), key = (lane >> 2) << 4;
    float *bias_s = reinterpret_cast<float *>(smem_raw + (smem - smem_u32(smem_raw)) + BIAS_OFF);
    for (int t = blockIdx.x; t < p.ntiles; t += gridDim.x) {
        const int tm = t / p.tiles_n, tn = t % p.tiles_n;
        /* the tile's bias into shared memory (read after the barrier below the mainloop; the previous
         * tile's epilogue finished reading it before that tile's last barrier) */
        if (tid < BN)
            bias_s[tid] = __bfloat162float(p.b[tn * BN + tid]);
        for (int kc = 0; kc < p.KC; kc++, c++) {
            const int s = c % S;
            mbar_wait(full + 8 * s, (c / S) & 1);
            const uint32_t sA = smem + s * STAGE;
            wg_mma_chunk<WGM, BN>(d, sA, sA + A_BYTES, wg, kc);
            wg_wait<1>();
            if (kc > 0 && lane == 0)
                mbar_arrive(empty + 8 * ((c + S - 1) % S));
        }
        wg_wait<0>();
        if (lane == 0)
            mbar_arrive(empty + 8 * ((c + S - 1) % S));
        if (p.skip_epilogue == 1) {
#pragma unroll
            for (int m = 0; m < WGM; m++)
                fence_regs(d[m]);
            continue;
        }
        const int sk = p.skip_epilogue;
        if (tid == 0 && sk != 4) /* the previous tile's stores have read the buffer */
            asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
        if (sk != 4)
            asm volatile("bar.sync 1, 256;\n" ::: "memory");
        if (sk == 3) {
#pragma unroll
            for (int m = 0; m < WGM; m++)
                fence_regs(d[m]);
        } else {
#pragma unroll
        for (int m = 0; m < WGM; m++) {
            fence_regs(d[m]);
#pragma unroll
            for (int h = 0; h < 2; h++) {
#pragma unroll
                for (int i = 0; i < BN / 8; i++) {
                    const float2 bf = *reinterpret_cast<const float2 *>(bias_s + 8 * i + 2 * (lane & 3));
                    const float lo = act(d[m][4 * i + 2 * h] + bf.x, GELU), hi = act(d[m][4 * i + 2 * h + 1] + bf.y, GELU);
                    const uint32_t packed = (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(lo)) |
                                            (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16;
                    const uint32_t a = base + (i >> 3) * (BM * 128) + (m * 64 + 8 * h) * 128 + (((i & 7) << 4) ^ key);
                    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a), "r"(packed) : "memory");
                }
            }
        }
        }
        if (sk == 4)
            continue;
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        asm volatile("bar.sync 1, 256;\n" ::: "memory");
        if (tid == 0 && sk != 2 && sk != 3) { /* 2: everything but the stores (timing only) */
            for (int b = 0; b < BN / 64; b++)
                asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
                             ::"l"(reinterpret_cast<uint64_t>(&tmY)), "r"(tn * BN + 64 * b), "r"(tm * BM),
                             "r"(epi + b * (BM * 128))
                             : "memory");
            asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
        }
    }
    if (tid == 0)
        asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#endif
}

void init()
{
    CK(cudaFuncSetAttribute(v10::kernel<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    CK(cudaFuncSetAttribute(v10::kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
}

void run(const Gemm &g)
{
    CUtensorMap mx, mw, my;
    v2::encode(&mx, g.X, g.T, g.K, BM);
    v2::encode(&mw, g.W, g.N, g.K, BN);
    v2::encode(&my, g.Y, g.T, g.N, BM);
    v2::Params p{g.T, g.N, g.K / 64, g.N / BN, 0, g.b, g.Y, g.gelu, getenv("LAYER_GEMM_SKIP_EPILOGUE") ? atoi(getenv("LAYER_GEMM_SKIP_EPILOGUE")) : 0};
    p.ntiles = ((g.T + BM - 1) / BM) * p.tiles_n;
    const int grid = std::max(1, std::min(v2::n_sm, p.ntiles));
    if (g.gelu)
        v10::kernel<1><<<grid, THREADS, SMEM>>>(mx, mw, my, p);
    else
        v10::kernel<0><<<grid, THREADS, SMEM>>>(mx, mw, my, p);
    CK(cudaGetLastError());
}
} // namespace v10

/* ---- 11: v10 with 4 stages: each warpgroup stores its 128 rows in two 64-column halves -------------
 * ncu on v10 (QKV): the epilogue no longer shows; 26% of the stall samples are the consumers waiting
 * on the `full` mbarrier: 3 stages of 48 KB do not cover the copies' latency after an epilogue. Here
 * each warpgroup stages one 128-row x 64-column box (16 KB) at a time, waits for the copy engine to
 * have read it before writing the second, so the epilogue takes 32 KB and the ring 4 stages. */
namespace v11 {
constexpr int WGM = 2, BN = 128, BM = 256;
constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE = A_BYTES + B_BYTES;
constexpr int BOX_BYTES = 128 * 128;                 /* 128 rows x 64 bf16 columns */
constexpr int EPI_BYTES = 2 * BOX_BYTES;             /* one box per warpgroup */
constexpr int STAGES = (227 * 1024 - EPI_BYTES - BN * 4 - 1024 - 256) / STAGE; /* 4 of 48 KB */
constexpr int EPI_OFF = STAGES * STAGE;
constexpr int BIAS_OFF = EPI_OFF + EPI_BYTES;
constexpr int BAR_OFF = BIAS_OFF + BN * 4;
constexpr int SMEM = BAR_OFF + 16 * STAGES + 1024;
constexpr int THREADS = 3 * 128;
using v10::act;

__device__ __forceinline__ void wg_bar(int wg) { asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory"); }

template <int GELU>
__global__ void __launch_bounds__(THREADS, 1)
    kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW,
           const __grid_constant__ CUtensorMap tmY, const v2::Params p)
{
#ifdef SPLADE_WGMMA_ENABLED
    using namespace splade_lm;
    constexpr int S = STAGES;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t smem = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t full = smem + BAR_OFF, empty = full + 8 * S;
    const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wq = (tid >> 5) & 3;
    if (tid == 0) {
        for (int s = 0; s < S; s++) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (wg == 2) {
        if (tid != 256)
            return;
        int i = 0;
        for (int t = blockIdx.x; t < p.ntiles; t += gridDim.x) {
            const int tm = t / p.tiles_n, tn = t % p.tiles_n;
            for (int kc = 0; kc < p.KC; kc++, i++) {
                const int s = i % S;
                if (i >= S)
                    mbar_wait(empty + 8 * s, ((i / S) - 1) & 1);
                const uint32_t sA = smem + s * STAGE;
                mbar_arrive_expect_tx(full + 8 * s, STAGE);
                tma_load_2d(sA, &tmX, kc * BK, tm * BM, full + 8 * s);
                tma_load_2d(sA + A_BYTES, &tmW, kc * BK, tn * BN, full + 8 * s);
            }
        }
        return;
    }
    float *bias_s = reinterpret_cast<float *>(smem_raw + (smem - smem_u32(smem_raw)) + BIAS_OFF);
    const uint32_t box = smem + EPI_OFF + wg * BOX_BYTES;
    const bool leader = (tid & 127) == 0;
    /* this thread's rows r (within its warpgroup's 128) all have r % 8 = lane / 4: one XOR key */
    const uint32_t base = box + (wq * 16 + (lane >> 2)) * 128 + 4 * (lane & 3), key = (lane >> 2) << 4;
    float d[WGM][BN / 2];
    int c = 0;
    for (int t = blockIdx.x; t < p.ntiles; t += gridDim.x) {
        const int tm = t / p.tiles_n, tn = t % p.tiles_n;
        if (tid < BN) /* read by the epilogue after the barriers below; the last one was read before them */
            bias_s[tid] = __bfloat162float(p.b[tn * BN + tid]);
        for (int kc = 0; kc < p.KC; kc++, c++) {
            const int s = c % S;
            mbar_wait(full + 8 * s, (c / S) & 1);
            const uint32_t sA = smem + s * STAGE;
            wg_mma_chunk<WGM, BN>(d, sA, sA + A_BYTES, wg, kc);
            wg_wait<1>();
            if (kc > 0 && lane == 0)
                mbar_arrive(empty + 8 * ((c + S - 1) % S));
        }
        wg_wait<0>();
        if (lane == 0)
            mbar_arrive(empty + 8 * ((c + S - 1) % S));
        asm volatile("bar.sync 3, 256;\n" ::: "memory"); /* bias_s written by warpgroup 0 */
#pragma unroll
        for (int m = 0; m < WGM; m++)
            fence_regs(d[m]);
#pragma unroll
        for (int half = 0; half < 2; half++) {
            if (leader) /* the box's previous store has been read */
                asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
            wg_bar(wg);
#pragma unroll
            for (int m = 0; m < WGM; m++)
#pragma unroll
                for (int h = 0; h < 2; h++)
#pragma unroll
                    for (int i = 8 * half; i < 8 * half + 8; i++) {
                        const float2 bf = *reinterpret_cast<const float2 *>(bias_s + 8 * i + 2 * (lane & 3));
                        const float lo = act(d[m][4 * i + 2 * h] + bf.x, GELU), hi = act(d[m][4 * i + 2 * h + 1] + bf.y, GELU);
                        const uint32_t packed = (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(lo)) |
                                                (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16;
                        const uint32_t a = base + (m * 64 + 8 * h) * 128 + (((i & 7) << 4) ^ key);
                        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a), "r"(packed) : "memory");
                    }
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
            wg_bar(wg);
            if (leader) {
                asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
                             ::"l"(reinterpret_cast<uint64_t>(&tmY)), "r"(tn * BN + 64 * half), "r"(tm * BM + wg * 128),
                             "r"(box)
                             : "memory");
                asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
            }
        }
        asm volatile("bar.sync 3, 256;\n" ::: "memory"); /* both warpgroups have read bias_s */
    }
    if (leader)
        asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#endif
}

void init()
{
    CK(cudaFuncSetAttribute(v11::kernel<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    CK(cudaFuncSetAttribute(v11::kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
}

void run(const Gemm &g)
{
    CUtensorMap mx, mw, my;
    v2::encode(&mx, g.X, g.T, g.K, BM);
    v2::encode(&mw, g.W, g.N, g.K, BN);
    v2::encode(&my, g.Y, g.T, g.N, 128); /* a warpgroup's 128 rows x 64 columns */
    v2::Params p{g.T, g.N, g.K / 64, g.N / BN, 0, g.b, g.Y, g.gelu, 0};
    p.ntiles = ((g.T + BM - 1) / BM) * p.tiles_n;
    const int grid = std::max(1, std::min(v2::n_sm, p.ntiles));
    if (g.gelu)
        v11::kernel<1><<<grid, THREADS, SMEM>>>(mx, mw, my, p);
    else
        v11::kernel<0><<<grid, THREADS, SMEM>>>(mx, mw, my, p);
    CK(cudaGetLastError());
}
} // namespace v11

/* ---- reference, checker, timing --------------------------------------------------------------- */
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static float urand()
{
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (float)((g_rng >> 11) * (1.0 / 9007199254740992.0)) * 2.f - 1.f;
}

struct Host {
    std::vector<bf16> X, W, b;
};

static Host make_host(int T, int N, int K)
{
    Host h;
    h.X.resize((size_t)T * K), h.W.resize((size_t)N * K), h.b.resize(N);
    for (auto &v : h.X)
        v = __float2bfloat16(urand() * 2.f); /* LayerNorm output scale */
    for (auto &v : h.W)
        v = __float2bfloat16(urand() * 0.06f); /* bert-base init scale */
    for (auto &v : h.b)
        v = __float2bfloat16(urand() * 0.5f);
    return h;
}

static bool run_variant(int v, const Gemm &g)
{
    if (v == 1)
        v1::run(g);
    else if (v == 2) {
        if (!v2::supports(g))
            return false;
        v2::run(g);
    } else if (v == 3) {
        if (!v3::supports<2, 128>(g))
            return false;
        v3::run<2, 128>(g);
    } else if (v == 4) {
        if (!v3::supports<1, 256>(g))
            return false;
        v3::run<1, 256>(g);
    } else if (v == 5) {
        if (!v2::supports(g))
            return false;
        v5::run(g);
    } else if (v == 6) {
        if (!v2::supports(g))
            return false;
        v6::run(g);
    } else if (v == 7) {
        if (!v2::supports(g))
            return false;
        v7::run(g);
    } else if (v == 8) {
        if (!v2::supports(g))
            return false;
        v8::run(g);
    } else if (v == 9) {
        if (!v2::supports(g))
            return false;
        v9::run(g);
    } else if (v == 10) {
        if (!v2::supports(g))
            return false;
        v10::run(g);
    } else if (v == 11) {
        if (!v2::supports(g))
            return false;
        v11::run(g);
    }
    return true;
}

static bool check(int v, int T, int N, int K, bool gelu)
{
    Host h = make_host(T, N, K);
    bf16 *X, *W, *b, *Y;
    CK(cudaMalloc(&X, h.X.size() * 2));
    CK(cudaMalloc(&W, h.W.size() * 2));
    CK(cudaMalloc(&b, h.b.size() * 2));
    CK(cudaMalloc(&Y, (size_t)T * N * 2));
    CK(cudaMemcpy(X, h.X.data(), h.X.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(W, h.W.data(), h.W.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b, h.b.data(), h.b.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemset(Y, 0xFF, (size_t)T * N * 2)); /* NaN: an element never written fails */
    Gemm g{T, N, K, gelu, X, W, b, Y};
    bool ok = true;
    if (!run_variant(v, g)) {
        printf("  v%d T=%d N=%d K=%d %s: not run (shape)\n", v, T, N, K, gelu ? "gelu" : "none");
    } else {
        CK(cudaDeviceSynchronize());
        std::vector<bf16> y((size_t)T * N);
        CK(cudaMemcpy(y.data(), Y, y.size() * 2, cudaMemcpyDeviceToHost));
        double worst = 0;
        long bad = 0;
        for (int t = 0; t < T; t++)
            for (int n = 0; n < N; n++) {
                double acc = (double)__bfloat162float(h.b[n]);
                for (int k = 0; k < K; k++)
                    acc += (double)__bfloat162float(h.X[(size_t)t * K + k]) * (double)__bfloat162float(h.W[(size_t)n * K + k]);
                if (gelu)
                    acc = 0.5 * acc * (1.0 + erf(acc / sqrt(2.0)));
                const double out = (double)__bfloat162float(y[(size_t)t * N + n]);
                const double err = fabs(out - acc), lim = 2e-3 + 8e-3 * fabs(acc);
                if (!(err <= lim))
                    bad++;
                worst = std::max(worst, std::isnan(err) ? 1e30 : err / lim);
            }
        ok = bad == 0;
        printf("  v%d T=%d N=%d K=%d %s: %s (worst error / limit %.3f%s)\n", v, T, N, K, gelu ? "gelu" : "none",
               ok ? "ok" : "FAIL", worst, bad ? ", elements over the limit" : "");
    }
    cudaFree(X), cudaFree(W), cudaFree(b), cudaFree(Y);
    return ok;
}

static double time_variant(int v, const Gemm &g, int reps)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    if (!run_variant(v, g))
        return -1;
    for (int i = 0; i < 3; i++)
        run_variant(v, g);
    std::vector<float> ms(reps);
    for (int r = 0; r < reps; r++) {
        CK(cudaEventRecord(e0));
        run_variant(v, g);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms[r], e0, e1));
    }
    std::sort(ms.begin(), ms.end());
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return ms[reps / 2];
}

int main(int argc, char **argv)
{
    std::vector<int> variants, Ts;
    int reps = 20, do_check = 1, do_time = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--T") && i + 1 < argc)
            Ts.push_back(atoi(argv[++i]));
        else if (!strcmp(a, "--reps") && i + 1 < argc)
            reps = std::max(1, atoi(argv[++i]));
        else if (!strcmp(a, "--no-check"))
            do_check = 0;
        else if (!strcmp(a, "--no-time"))
            do_time = 0;
        else if (atoi(a) >= 1 && atoi(a) <= 11 && strspn(a, "0123456789") == strlen(a))
            variants.push_back(atoi(a));
        else {
            fprintf(stderr, "usage: %s [1-11 ...] [--T n ...] [--reps n] [--no-check] [--no-time]\n", argv[0]);
            return 2;
        }
    }
    if (variants.empty())
        variants = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    if (Ts.empty())
        Ts = {16384, 13208};
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("layer_gemm: no CUDA device\n");
        return 2;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("layer_gemm lab: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    v1::init();
    const bool hopper = prop.major == 9 && v2::init();
    if (hopper) {
        v3::init<2, 128>();
        v3::init<1, 256>();
        v5::init();
        v6::init();
        v7::init();
        v8::init();
        v9::init();
        v10::init();
        v11::init();
    }
    std::vector<int> run_vs;
    for (int v : variants)
        if (v == 1 || hopper)
            run_vs.push_back(v);
        else
            printf("  v%d: not run (needs a Hopper GPU and sm_90a code)\n", v);
    bool ok = true;
    if (do_check) {
        printf("check (float64 reference over the bf16 inputs; tol 2e-3 + 8e-3·|ref|)\n");
        const int shapes[][4] = {{300, 384, 256, 1}, {1000, 768, 768, 0}, {129, 256, 3072, 1}, {1, 128, 64, 0}, {777, 2304, 768, 0}};
        for (int v : run_vs)
            for (auto &s : shapes)
                ok &= check(v, s[0], s[1], s[2], s[3] != 0);
    }
    if (do_time) {
        struct Shape {
            const char *name;
            int N, K;
            bool gelu;
        } shapes[] = {{"QKV", 2304, 768, false}, {"attn-out", 768, 768, false}, {"FFN-in+GELU", 3072, 768, true},
                      {"FFN-out", 768, 3072, false}};
        printf("\n| T | GEMM | v | µs | TFLOP/s | %% of 790 |\n|---:|---|---:|---:|---:|---:|\n");
        for (int T : Ts)
            for (auto &s : shapes) {
                Host h = make_host(T, s.N, s.K);
                bf16 *X, *W, *b, *Y;
                CK(cudaMalloc(&X, h.X.size() * 2));
                CK(cudaMalloc(&W, h.W.size() * 2));
                CK(cudaMalloc(&b, h.b.size() * 2));
                CK(cudaMalloc(&Y, (size_t)T * s.N * 2));
                CK(cudaMemcpy(X, h.X.data(), h.X.size() * 2, cudaMemcpyHostToDevice));
                CK(cudaMemcpy(W, h.W.data(), h.W.size() * 2, cudaMemcpyHostToDevice));
                CK(cudaMemcpy(b, h.b.data(), h.b.size() * 2, cudaMemcpyHostToDevice));
                Gemm g{T, s.N, s.K, s.gelu, X, W, b, Y};
                for (int v : run_vs) {
                    const double ms = time_variant(v, g, reps);
                    if (ms < 0)
                        continue;
                    const double tf = 2.0 * T * s.N * s.K / (ms * 1e-3) / 1e12;
                    printf("| %d | %s | %d | %.1f | %.0f | %.1f |\n", T, s.name, v, ms * 1e3, tf, 100.0 * tf / 790.0);
                }
                cudaFree(X), cudaFree(W), cudaFree(b), cudaFree(Y);
            }
    }
    printf("%s\n", ok ? "all checks passed" : "CHECK FAILED");
    return ok ? 0 : 1;
}
