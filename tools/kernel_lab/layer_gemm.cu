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
    Params p{g.T, g.N, g.K / 64, g.N / BN, 0, g.b, g.Y, g.gelu};
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
    v2::Params p{g.T, g.N, g.K / 64, g.N / BN, 0, g.b, g.Y, g.gelu};
    p.ntiles = ((g.T + C::BM - 1) / C::BM) * p.tiles_n;
    const int grid = std::max(1, std::min(v2::n_sm, p.ntiles));
    kernel<WGM, BN><<<grid, C::THREADS, C::SMEM>>>(mx, mw, p);
    CK(cudaGetLastError());
}
} // namespace v3

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
        else if (a[0] >= '1' && a[0] <= '4' && !a[1])
            variants.push_back(a[0] - '0');
        else {
            fprintf(stderr, "usage: %s [1|2|3|4 ...] [--T n ...] [--reps n] [--no-check] [--no-time]\n", argv[0]);
            return 2;
        }
    }
    if (variants.empty())
        variants = {1, 2, 3, 4};
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
