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
 *   12 v11 with the two warpgroups out of step (one's epilogue under the other's wgmma)
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

cublasStatus_t run_algo(Plan &p, const Gemm &g, const cublasLtMatmulAlgo_t *algo)
{
    const float one = 1.f, zero = 0.f;
    return cublasLtMatmul(lt, p.desc, &one, g.W, p.la, g.X, p.lb, &zero, g.Y, p.lc, g.Y, p.lc, algo, ws, kWs, 0);
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
            if (run_algo(p, g, &res[i].algo) != CUBLAS_STATUS_SUCCESS)
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

void run(const Gemm &g)
{
    Plan &p = plan(g);
    /* a plan is kept per shape: this call's bias, as the library sets it per call */
    LT(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.b, sizeof g.b));
    LT(run_algo(p, g, &p.algo));
}
} // namespace v1

/* ---- shared by 2-12 (host and parameters): the problem as the kernels see it, the activation,
 * the tensor maps, the persistent grid -------------------------------------------------------------- */
namespace lab {
struct Params {
    int T, N, KC, tiles_n, ntiles;
    const bf16 *b;
    bf16 *Y;
    int gelu;
    int skip_epilogue; /* timing only ($LAYER_GEMM_SKIP_EPILOGUE): see the comment of 7-12 */
};

/* exact (erf) GELU, or none */
__device__ __forceinline__ float act(float v, int gelu)
{
    return gelu ? 0.5f * v * (1.f + erff(v * 0.70710678118654752f)) : v;
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

/* The driver's tensor-map encoder (through the runtime: no -lcuda) and the SM count; false if absent. */
bool init()
{
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !fn)
        return false;
    encode_tiled = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
    CK(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, 0));
    return true;
}

bool supports(const Gemm &g, int BN) { return g.N % BN == 0 && g.K % 64 == 0; }

/* A launch's tensor maps, parameters and persistent grid (at least min_tiles_per_block tiles a
 * block), made once per problem and tiling: the timed launches then pay for the launch alone, as
 * cuBLASLt's do with their cached plans (and as the library caches its LM head's maps). */
struct Launch {
    Gemm g;
    int BM, BN, y_box_rows, min_tiles;
    CUtensorMap mx, mw, my;
    Params p;
    int grid;
};
std::vector<Launch *> launches;

const Launch &prepare(const Gemm &g, int BM, int BN, int y_box_rows, int min_tiles_per_block)
{
    for (const Launch *l : launches)
        if (l->g.T == g.T && l->g.N == g.N && l->g.K == g.K && l->g.gelu == g.gelu && l->g.X == g.X &&
            l->g.W == g.W && l->g.b == g.b && l->g.Y == g.Y && l->BM == BM && l->BN == BN &&
            l->y_box_rows == y_box_rows && l->min_tiles == min_tiles_per_block)
            return *l;
    static const char *skip = getenv("LAYER_GEMM_SKIP_EPILOGUE");
    Launch *l = new Launch{g, BM, BN, y_box_rows, min_tiles_per_block, {}, {}, {}, {}, 0};
    encode(&l->mx, g.X, g.T, g.K, BM);
    encode(&l->mw, g.W, g.N, g.K, BN);
    if (y_box_rows)
        encode(&l->my, g.Y, g.T, g.N, y_box_rows);
    l->p = Params{g.T, g.N, g.K / 64, g.N / BN, 0, g.b, g.Y, g.gelu, skip ? atoi(skip) : 0};
    l->p.ntiles = ((g.T + BM - 1) / BM) * l->p.tiles_n;
    l->grid = std::max(1, std::min(n_sm, (l->p.ntiles + min_tiles_per_block - 1) / min_tiles_per_block));
    launches.push_back(l);
    return *l;
}
} // namespace lab

/* ---- shared by 2-12 (device): a ring of stages, its producer and consumer steps, the staging ------ */
namespace ring {
using namespace splade_lm;

#ifdef SPLADE_WGMMA_ENABLED /* the wgmma / mbarrier helpers exist only in the sm_90a device pass */
/* mbarriers full[s] (the producer's one arrival plus the copies' bytes) and empty[s] (one lane of
 * each consuming warp) for S stages, 8 bytes apart from `full` and `empty`, and any `extra`
 * barriers of `extra_count` arrivals 8 bytes apart from there; then the fence that shows them to
 * the copy engine. One thread, before the block's first barrier. */
__device__ __forceinline__ void init(uint32_t full, uint32_t empty, int S, int consumer_warps, uint32_t extra = 0,
                                     int n_extra = 0, int extra_count = 0)
{
    for (int s = 0; s < S; s++) {
        mbar_init(full + 8 * s, 1);
        mbar_init(empty + 8 * s, consumer_warps);
    }
    for (int e = 0; e < n_extra; e++)
        mbar_init(extra + 8 * e, extra_count);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/* The block's tiles t = blockIdx.x, + gridDim.x, ... in order, K chunk by K chunk into the next
 * stage (BM rows of X and BN rows of W, 64 columns each): one thread. */
template <int S, int STAGE, int A_BYTES, int BM, int BN>
__device__ __forceinline__ void produce(uint32_t smem, uint32_t full, uint32_t empty, const CUtensorMap *tmX,
                                        const CUtensorMap *tmW, const lab::Params &p)
{
    int i = 0;
    for (int t = blockIdx.x; t < p.ntiles; t += gridDim.x) {
        const int tm = t / p.tiles_n, tn = t % p.tiles_n;
        for (int kc = 0; kc < p.KC; kc++, i++) {
            const int s = i % S;
            if (i >= S)
                mbar_wait(empty + 8 * s, ((i / S) - 1) & 1);
            const uint32_t sA = smem + s * STAGE;
            mbar_arrive_expect_tx(full + 8 * s, STAGE);
            tma_load_2d(sA, tmX, kc * BK, tm * BM, full + 8 * s);
            tma_load_2d(sA + A_BYTES, tmW, kc * BK, tn * BN, full + 8 * s);
        }
    }
}

/* One K chunk's wait, wgmma and the release of the chunk before it (c: the consumer's chunk count). */
template <int S, int STAGE, int A_BYTES, int WGM, int BN>
__device__ __forceinline__ void consume(float (&d)[WGM][BN / 2], uint32_t smem, uint32_t full, uint32_t empty,
                                        int c, int kc, int wg_slice, int lane)
{
    const int s = c % S;
    mbar_wait(full + 8 * s, (c / S) & 1);
    const uint32_t sA = smem + s * STAGE;
    wg_mma_chunk<WGM, BN>(d, sA, sA + A_BYTES, wg_slice, kc);
    wg_wait<1>();
    if (kc > 0 && lane == 0)
        mbar_arrive(empty + 8 * ((c + S - 1) % S));
}

/* The tile's last chunk: all wgmma done, its stage released. */
template <int S>
__device__ __forceinline__ void finish(uint32_t empty, int c_last, int lane)
{
    wg_wait<0>();
    if (lane == 0)
        mbar_arrive(empty + 8 * (c_last % S));
}

#endif

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi)
{
    return (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(lo)) |
           (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16;
}

__device__ __forceinline__ void sts32(uint32_t a, uint32_t v)
{
    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a), "r"(v) : "memory");
}

/* A 128B-swizzled box of shared memory to global through the copy engine (rows past the map's
 * extent are clipped), as one bulk group. */
__device__ __forceinline__ void tma_store(const CUtensorMap *map, int col, int row, uint32_t src)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
                 ::"l"(reinterpret_cast<uint64_t>(map)), "r"(col), "r"(row), "r"(src)
                 : "memory");
}
__device__ __forceinline__ void store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void store_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
__device__ __forceinline__ void store_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
__device__ __forceinline__ void proxy_fence() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void bar(int id, int threads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/* GELU in tanh form on the MUFU tanh: what cuBLASLt's GELU epilogue (the library's default)
 * computes; tanh.approx.f32's relative error (~2^-11) is under the bf16 output's 2^-8. */
__device__ __forceinline__ float gelu_tanh(float v)
{
    float t;
    const float u = v * (0.7978845608028654f + 0.0356774081363001f * v * v);
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(u));
    return 0.5f * v * (1.f + t);
}

} // namespace ring

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

__global__ void __launch_bounds__(THREADS, 1)
    kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW, const lab::Params p)
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
    if (tid == 0) /* ring r's full and empty barriers are consecutive from full(r, 0) and empty(r, 0) */
        for (int r = 0; r < 2; r++)
            ring::init(full(r, 0), empty(r, 0), S, 4); /* the ring's warpgroup, one lane a warp */
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
                        lab::act(d[m][4 * i + 2 * h] + bf.x, p.gelu), lab::act(d[m][4 * i + 2 * h + 1] + bf.y, p.gelu));
                }
            }
        }
    }
#endif
}

void init() { CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM)); }

bool supports(const Gemm &g) { return g.N % BN == 0 && g.K % 64 == 0; }

void run(const Gemm &g)
{
    /* two tiles per block at least, so that the ping-pong has a partner */
    const lab::Launch &l = lab::prepare(g, BM, BN, 0, 2);
    kernel<<<l.grid, THREADS, SMEM>>>(l.mx, l.mw, l.p);
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
    kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW, const lab::Params p)
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
        ring::init(full, empty, S, C::CONSUMER_WARPS);
    }
    __syncthreads();
    if (wg == C::NWG) {
        if (tid == C::NWG * 128)
            ring::produce<S, C::STAGE, C::A_BYTES, C::BM, BN>(smem, full, empty, &tmX, &tmW, p);
        return;
    }
    float d[WGM][BN / 2];
    int c = 0;
    for (int t = blockIdx.x; t < p.ntiles; t += gridDim.x) {
        const int tm = t / p.tiles_n, tn = t % p.tiles_n;
        for (int kc = 0; kc < p.KC; kc++, c++)
            ring::consume<S, C::STAGE, C::A_BYTES, WGM, BN>(d, smem, full, empty, c, kc, wg, lane);
        ring::finish<S>(empty, c - 1, lane);
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
                        lab::act(d[m][4 * i + 2 * h] + bf.x, p.gelu), lab::act(d[m][4 * i + 2 * h + 1] + bf.y, p.gelu));
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

template <int WGM, int BN> void run(const Gemm &g)
{
    using C = TmaCfg<WGM, BN>;
    const lab::Launch &l = lab::prepare(g, C::BM, BN, 0, 1);
    kernel<WGM, BN><<<l.grid, C::THREADS, C::SMEM>>>(l.mx, l.mw, l.p);
    CK(cudaGetLastError());
}
} // namespace v3

/* ---- 5, 6: ping-pong with ordered mainloops over one shared ring ------------------------------
 * v2 gave each warpgroup its own ring of 3 stages, and its producer, filling one ring after the
 * other, ran the warpgroups' mainloops one at a time with only 3 chunks of look-ahead (61% at
 * K = 3,072). Here the warpgroups share one ring and take turns: warpgroup w starts its j-th tile's
 * mainloop only after the other one has issued the last wgmma of the tile before (mbarriers
 * turn[w], 4 arrivals: one lane a warp), so the chunks are consumed in ring order (no parity
 * aliasing) and one warpgroup's epilogue runs during the other's mainloop. Each warpgroup owns a
 * 128 x 128 tile.
 *   5: stores straight from the accumulators (64 scattered 4-byte stores a thread); 7 stages.
 *   6: v5's mainloop is fast where K is long (78-82% at K = 3,072) but its epilogue outlasts the
 *      other warpgroup's 12-chunk mainloop at K = 768: here each warpgroup writes its bf16 tile into
 *      its own 32 KB of shared memory, in the 128B-swizzled layout of two 64-column boxes
 *      (conflict-free: the 8 rows of a warp's store land in 8 different 16-byte chunks), and one
 *      thread hands it to the copy engine (rows past T are clipped by the engine); 5 stages. */
namespace turns {
template <bool TMA_EPI> struct Cfg {
    static constexpr int BM = 128, BN = 128;
    static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE = A_BYTES + B_BYTES;
    static constexpr int EPI_BYTES = TMA_EPI ? BM * BN * 2 : 0; /* per warpgroup */
    static constexpr int STAGES = (227 * 1024 - 2 * EPI_BYTES - 1024 - 256) / STAGE; /* 7 or 5 of 32 KB */
    static constexpr int EPI_OFF = STAGES * STAGE;
    static constexpr int BAR_OFF = EPI_OFF + 2 * EPI_BYTES;
    static constexpr int SMEM = BAR_OFF + 16 * STAGES + 16 + 1024;
    static constexpr int THREADS = 3 * 128;
};

template <bool TMA_EPI>
__global__ void __launch_bounds__(Cfg<TMA_EPI>::THREADS, 1)
    kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW,
           const __grid_constant__ CUtensorMap tmY, const lab::Params p)
{
#ifdef SPLADE_WGMMA_ENABLED
    using namespace splade_lm;
    using C = Cfg<TMA_EPI>;
    constexpr int S = C::STAGES, BM = C::BM, BN = C::BN;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t smem = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t full = smem + C::BAR_OFF, empty = full + 8 * S, turn = empty + 8 * S;
    const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wq = (tid >> 5) & 3;
    if (tid == 0) {
        ring::init(full, empty, S, 4, turn, 2, 4); /* one warpgroup consumes a stage; turn[0], turn[1] */
    }
    __syncthreads();
    if (wg == 2) {
        if (tid == 256)
            ring::produce<S, C::STAGE, C::A_BYTES, BM, BN>(smem, full, empty, &tmX, &tmW, p);
        return;
    }
    const uint32_t epi = smem + C::EPI_OFF + wg * C::EPI_BYTES;
    const bool leader = (tid & 127) == 0;
    float d[2][64];
    for (int j = 0;; j++) {
        const int lt = 2 * j + wg, t = blockIdx.x + lt * gridDim.x;
        if (t >= p.ntiles)
            break;
        if (lt > 0) /* my turn: the other warpgroup has issued its tile lt - 1 */
            mbar_wait(turn + 8 * wg, (wg ? j : j - 1) & 1);
        const int tm = t / p.tiles_n, tn = t % p.tiles_n, c0 = lt * p.KC;
        for (int kc = 0; kc < p.KC; kc++) {
            const int c = c0 + kc, s = c % S;
            mbar_wait(full + 8 * s, (c / S) & 1);
            const uint32_t sA = smem + s * C::STAGE;
            wg_mma_chunk<2, BN>(d, sA, sA + C::A_BYTES, 0, kc);
            if (kc == p.KC - 1 && lane == 0) /* the last wgmma is issued: the other warpgroup's turn */
                mbar_arrive(turn + 8 * (1 - wg));
            wg_wait<1>();
            if (kc > 0 && lane == 0)
                mbar_arrive(empty + 8 * ((c + S - 1) % S));
        }
        ring::finish<S>(empty, c0 + p.KC - 1, lane);
        const int f0 = tn * BN + 2 * (lane & 3);
        if constexpr (TMA_EPI) {
            if (leader) /* the previous tile's store has read this warpgroup's buffer */
                ring::store_wait_read();
            ring::bar(1 + wg, 128);
        }
        /* this thread's rows r all have r % 8 = lane / 4: one XOR key for the swizzle */
        const uint32_t base = epi + (wq * 16 + (lane >> 2)) * 128 + 4 * (lane & 3), key = (lane >> 2) << 4;
#pragma unroll
        for (int m = 0; m < 2; m++) {
            fence_regs(d[m]);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int row = tm * BM + m * 64 + wq * 16 + (lane >> 2) + 8 * h;
                if (!TMA_EPI && row >= p.T)
                    continue;
                bf16 *y = p.Y + (size_t)row * p.N + f0;
#pragma unroll
                for (int i = 0; i < 16; i++) {
                    const float2 bf = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(p.b + f0 + 8 * i));
                    const float lo = lab::act(d[m][4 * i + 2 * h] + bf.x, p.gelu),
                                hi = lab::act(d[m][4 * i + 2 * h + 1] + bf.y, p.gelu);
                    if constexpr (TMA_EPI)
                        ring::sts32(base + (i >> 3) * (BM * 128) + (m * 64 + 8 * h) * 128 + (((i & 7) << 4) ^ key),
                                    ring::pack_bf16(lo, hi));
                    else
                        *reinterpret_cast<__nv_bfloat162 *>(y + 8 * i) = __floats2bfloat162_rn(lo, hi);
                }
            }
        }
        if constexpr (TMA_EPI) {
            ring::proxy_fence();
            ring::bar(1 + wg, 128);
            if (leader) {
                for (int b = 0; b < 2; b++)
                    ring::tma_store(&tmY, tn * BN + 64 * b, tm * BM, epi + b * (BM * 128));
                ring::store_commit();
            }
        }
    }
    if (TMA_EPI && leader)
        ring::store_wait_all();
#endif
}

template <bool TMA_EPI> void init()
{
    CK(cudaFuncSetAttribute(kernel<TMA_EPI>, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg<TMA_EPI>::SMEM));
}

template <bool TMA_EPI> void run(const Gemm &g)
{
    using C = Cfg<TMA_EPI>;
    /* two tiles per block at least, so that the turns have a partner */
    const lab::Launch &l = lab::prepare(g, C::BM, C::BN, TMA_EPI ? C::BM : 0, 2);
    kernel<TMA_EPI><<<l.grid, C::THREADS, C::SMEM>>>(l.mx, l.mw, l.my, l.p);
    CK(cudaGetLastError());
}
} // namespace turns

/* ---- 7-11: cooperative 256 x 128 tiles (the head's mainloop) with a shared-memory + TMA-store
 * epilogue, step by step (each variant adds one change to the one before):
 *   7: v5/v6 showed one warpgroup's mainloop alone reaches ~78% at best; the head's two warpgroups
 *      on one tile reach 93%. Both warpgroups write the finished tile (bias, GELU, bf16) into 64 KB
 *      of shared memory as two 128B-swizzled 64-column boxes, one thread hands them to the copy
 *      engine, and the next tile's mainloop starts while the stores drain; 3 stages of 48 KB. The
 *      bias comes by 64 serialised global loads a thread (volatile, each used at once, so that the
 *      compiler does not hoist them into spilling registers).
 *   8: without its epilogue v7 ran at 87-92% of 790: the epilogue cost ~7 µs a tile. The consumers
 *      copy the tile's 128 bias values into shared memory as fp32 before the mainloop.
 *   9: ncu on v8: the epilogue's F2FP drew 17% of the stall samples, nearly all "no instruction":
 *      ~85 KB of unrolled epilogue with a run-time GELU branch around every element defeats the
 *      instruction prefetch. GELU becomes a template argument (straight-line epilogues).
 *   10: GELU in tanh form on tanh.approx.f32 (ring::gelu_tanh; cuBLASLt's form, the library's
 *      default): erff is ~30 instructions a value, this 6.
 *   11: ncu on v10: 26% of the samples wait on `full`: 3 stages do not cover the copies after an
 *      epilogue. Each warpgroup stages one 128-row x 64-column box (16 KB) at a time and waits for
 *      the copy engine to have read it before writing the second: 32 KB of epilogue, 4 stages.
 *   12: v11 with the warpgroups out of step: warpgroup 1 starts LAG = 2 chunks behind (an mbarrier
 *      `go` that warpgroup 0 arrives on), each warpgroup keeps its own bias copy, and no barrier joins
 *      the two, so one's epilogue runs while the other still issues wgmma (the ring lets them drift
 *      apart by up to its stages).
 * LAYER_GEMM_SKIP_EPILOGUE (timing only, v7-v10): 1 no epilogue, 2 no stores, 3 only the barriers
 * and the proxy fence, 4 only the math and the shared-memory stores. */
namespace coop {
template <int V> struct Cfg {
    static constexpr bool BIAS_SMEM = V >= 8, BOXED = V >= 11, STAGGER = V >= 12;
    static constexpr int WGM = 2, BN = 128, BM = 256;
    static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE = A_BYTES + B_BYTES;
    static constexpr int BOX_BYTES = 128 * 128; /* 128 rows x 64 bf16 columns (v11) */
    static constexpr int EPI_BYTES = BOXED ? 2 * BOX_BYTES : BM * BN * 2;
    static constexpr int BIAS_BYTES = BIAS_SMEM ? (STAGGER ? 2 : 1) * BN * 4 : 0; /* v12: a copy per warpgroup */
    static constexpr int STAGES = (227 * 1024 - EPI_BYTES - BIAS_BYTES - 1024 - 256) / STAGE; /* 3, or 4 (v11) */
    static constexpr int EPI_OFF = STAGES * STAGE;
    static constexpr int BIAS_OFF = EPI_OFF + EPI_BYTES;
    static constexpr int BAR_OFF = BIAS_OFF + BIAS_BYTES;
    static constexpr int SMEM = BAR_OFF + 16 * STAGES + 8 + 1024;
    static constexpr int THREADS = 3 * 128;
    static constexpr int LAG = 2; /* v12: chunks warpgroup 1 starts behind warpgroup 0 (< STAGES) */
};

/* The activation of variant V: GELU < 0 reads p.gelu at run time (v7, v8). */
template <int V, int GELU> __device__ __forceinline__ float act(float v, int gelu_rt)
{
    if constexpr (V >= 10)
        return GELU ? ring::gelu_tanh(v) : v;
    else
        return lab::act(v, GELU < 0 ? gelu_rt : GELU);
}

template <int V, int GELU>
__global__ void __launch_bounds__(Cfg<V>::THREADS, 1)
    kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW,
           const __grid_constant__ CUtensorMap tmY, const lab::Params p)
{
#ifdef SPLADE_WGMMA_ENABLED
    using namespace splade_lm;
    using C = Cfg<V>;
    constexpr int S = C::STAGES, WGM = C::WGM, BN = C::BN, BM = C::BM;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t smem = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t full = smem + C::BAR_OFF, empty = full + 8 * S;
    const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wq = (tid >> 5) & 3;
    const uint32_t go = empty + 8 * S; /* v12: warpgroup 0's 4 warps have consumed LAG chunks */
    if (tid == 0) {
        ring::init(full, empty, S, 8, go, 1, 4);
    }
    __syncthreads();
    if (wg == 2) {
        if (tid == 256)
            ring::produce<S, C::STAGE, C::A_BYTES, BM, BN>(smem, full, empty, &tmX, &tmW, p);
        return;
    }
    float *bias_s = reinterpret_cast<float *>(smem_raw + (smem - smem_u32(smem_raw)) + C::BIAS_OFF) +
                    (C::STAGGER ? wg * BN : 0);
    bool went = !C::STAGGER || wg == 1;
    if (C::STAGGER && wg == 1) /* start LAG chunks behind: from then on the warpgroups' epilogues fall
                                * on the other's mainloop instead of both at once */
        mbar_wait(go, 0);
    /* v11: this warpgroup's box; before: the tile's two boxes, rows of both warpgroups */
    const uint32_t epi = smem + C::EPI_OFF + (C::BOXED ? wg * C::BOX_BYTES : 0);
    const bool leader = C::BOXED ? (tid & 127) == 0 : tid == 0;
    /* this thread's rows r all have r % 8 = lane / 4: one XOR key for the swizzle */
    const uint32_t base = epi + ((C::BOXED ? 0 : wg * WGM * 64) + wq * 16 + (lane >> 2)) * 128 + 4 * (lane & 3),
                   key = (lane >> 2) << 4;
    const int sk = p.skip_epilogue;
    float d[WGM][BN / 2];
    int c = 0;
    for (int t = blockIdx.x; t < p.ntiles; t += gridDim.x) {
        const int tm = t / p.tiles_n, tn = t % p.tiles_n;
        if (C::BIAS_SMEM && (C::STAGGER ? (tid & 127) : tid) < BN) /* read after the barrier below the
                                       * mainloop; the last tile's readers passed the barrier after their reads */
            bias_s[tid & 127] = __bfloat162float(p.b[tn * BN + (tid & 127)]);
        for (int kc = 0; kc < p.KC; kc++, c++) {
            ring::consume<S, C::STAGE, C::A_BYTES, WGM, BN>(d, smem, full, empty, c, kc, wg, lane);
            if (!went && c == C::LAG) {
                if (lane == 0)
                    mbar_arrive(go);
                went = true;
            }
        }
        ring::finish<S>(empty, c - 1, lane);
#pragma unroll
        for (int m = 0; m < WGM; m++)
            fence_regs(d[m]);
        if (sk == 1)
            continue;
        const int f0 = tn * BN + 2 * (lane & 3);
        /* the pair of columns 8i + 2(lane % 4) of accumulator row (m, h), biased and activated */
        auto value = [&](int m, int h, int i) {
            float b0, b1;
            if constexpr (C::BIAS_SMEM) {
                const float2 bf = *reinterpret_cast<const float2 *>(bias_s + 8 * i + 2 * (lane & 3));
                b0 = bf.x, b1 = bf.y;
            } else {
                uint32_t braw;
                asm volatile("ld.global.nc.b32 %0, [%1];\n" : "=r"(braw) : "l"(p.b + f0 + 8 * i));
                b0 = __uint_as_float(braw << 16), b1 = __uint_as_float(braw & 0xFFFF0000u);
            }
            return ring::pack_bf16(act<V, GELU>(d[m][4 * i + 2 * h] + b0, p.gelu),
                                   act<V, GELU>(d[m][4 * i + 2 * h + 1] + b1, p.gelu));
        };
        if constexpr (C::BOXED) {
            if (!C::STAGGER)
                ring::bar(3, 256); /* bias_s, written by warpgroup 0 */
#pragma unroll
            for (int half = 0; half < 2; half++) {
                if (leader) /* the box's previous store has been read */
                    ring::store_wait_read();
                ring::bar(1 + wg, 128);
#pragma unroll
                for (int m = 0; m < WGM; m++)
#pragma unroll
                    for (int h = 0; h < 2; h++)
#pragma unroll
                        for (int i = 8 * half; i < 8 * half + 8; i++)
                            ring::sts32(base + (m * 64 + 8 * h) * 128 + (((i & 7) << 4) ^ key), value(m, h, i));
                ring::proxy_fence();
                ring::bar(1 + wg, 128);
                if (leader) {
                    ring::tma_store(&tmY, tn * BN + 64 * half, tm * BM + wg * 128, epi);
                    ring::store_commit();
                }
            }
            if (!C::STAGGER)
                ring::bar(3, 256); /* both warpgroups have read bias_s */
        } else {
            if (tid == 0 && sk != 4) /* the previous tile's stores have read the buffer */
                ring::store_wait_read();
            if (sk != 4)
                ring::bar(1, 256);
            if (sk != 3) {
#pragma unroll
                for (int m = 0; m < WGM; m++)
#pragma unroll
                    for (int h = 0; h < 2; h++)
#pragma unroll
                        for (int i = 0; i < BN / 8; i++)
                            ring::sts32(base + (i >> 3) * (BM * 128) + (m * 64 + 8 * h) * 128 + (((i & 7) << 4) ^ key),
                                        value(m, h, i));
            }
            if (sk == 4)
                continue;
            ring::proxy_fence();
            ring::bar(1, 256);
            if (tid == 0 && sk != 2 && sk != 3) {
                for (int b = 0; b < BN / 64; b++)
                    ring::tma_store(&tmY, tn * BN + 64 * b, tm * BM, epi + b * (BM * 128));
                ring::store_commit();
            }
        }
    }
    if (!went && lane == 0) /* fewer than LAG + 1 chunks in all: let warpgroup 1 go */
        mbar_arrive(go);
    if (leader)
        ring::store_wait_all();
#endif
}

template <int V> void init()
{
    if constexpr (V <= 8) {
        CK(cudaFuncSetAttribute(kernel<V, -1>, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg<V>::SMEM));
    } else {
        CK(cudaFuncSetAttribute(kernel<V, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg<V>::SMEM));
        CK(cudaFuncSetAttribute(kernel<V, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg<V>::SMEM));
    }
}

template <int V> void run(const Gemm &g)
{
    using C = Cfg<V>;
    const lab::Launch &l = lab::prepare(g, C::BM, C::BN, C::BOXED ? 128 : C::BM, 1);
    if constexpr (V <= 8) /* the activation read at run time */
        kernel<V, -1><<<l.grid, C::THREADS, C::SMEM>>>(l.mx, l.mw, l.my, l.p);
    else if (g.gelu)
        kernel<V, 1><<<l.grid, C::THREADS, C::SMEM>>>(l.mx, l.mw, l.my, l.p);
    else
        kernel<V, 0><<<l.grid, C::THREADS, C::SMEM>>>(l.mx, l.mw, l.my, l.p);
    CK(cudaGetLastError());
}
} // namespace coop

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

/* The host problem on the device, Y unwritten. */
static Gemm upload(const Host &h, int T, int N, int K, bool gelu)
{
    bf16 *X, *W, *b, *Y;
    CK(cudaMalloc(&X, h.X.size() * 2));
    CK(cudaMalloc(&W, h.W.size() * 2));
    CK(cudaMalloc(&b, h.b.size() * 2));
    CK(cudaMalloc(&Y, (size_t)T * N * 2));
    CK(cudaMemcpy(X, h.X.data(), h.X.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(W, h.W.data(), h.W.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b, h.b.data(), h.b.size() * 2, cudaMemcpyHostToDevice));
    return Gemm{T, N, K, gelu, X, W, b, Y};
}

static void release(const Gemm &g)
{
    cudaFree(const_cast<bf16 *>(g.X)), cudaFree(const_cast<bf16 *>(g.W)), cudaFree(const_cast<bf16 *>(g.b));
    cudaFree(g.Y);
}

static bool run_variant(int v, const Gemm &g)
{
    if (v == 1) {
        v1::run(g);
        return true;
    }
    if (v == 4 ? !lab::supports(g, 256) : !lab::supports(g, 128))
        return false;
    switch (v) {
    case 2: v2::run(g); break;
    case 3: v3::run<2, 128>(g); break;
    case 4: v3::run<1, 256>(g); break;
    case 5: turns::run<false>(g); break;
    case 6: turns::run<true>(g); break;
    case 7: coop::run<7>(g); break;
    case 8: coop::run<8>(g); break;
    case 9: coop::run<9>(g); break;
    case 10: coop::run<10>(g); break;
    case 11: coop::run<11>(g); break;
    default: coop::run<12>(g); break;
    }
    return true;
}

static bool check(int v, int T, int N, int K, bool gelu)
{
    Host h = make_host(T, N, K);
    const Gemm g = upload(h, T, N, K, gelu);
    CK(cudaMemset(g.Y, 0xFF, (size_t)T * N * 2)); /* NaN: an element never written fails */
    bool ok = true;
    if (!run_variant(v, g)) {
        printf("  v%d T=%d N=%d K=%d %s: not run (shape)\n", v, T, N, K, gelu ? "gelu" : "none");
    } else {
        CK(cudaDeviceSynchronize());
        std::vector<bf16> y((size_t)T * N);
        CK(cudaMemcpy(y.data(), g.Y, y.size() * 2, cudaMemcpyDeviceToHost));
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
    release(g);
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
        else if (atoi(a) >= 1 && atoi(a) <= 12 && strspn(a, "0123456789") == strlen(a))
            variants.push_back(atoi(a));
        else {
            fprintf(stderr, "usage: %s [1-12 ...] [--T n ...] [--reps n] [--no-check] [--no-time]\n", argv[0]);
            return 2;
        }
    }
    if (variants.empty())
        variants = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
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
    const bool hopper = prop.major == 9 && lab::init();
    if (hopper) {
        v2::init();
        v3::init<2, 128>();
        v3::init<1, 256>();
        turns::init<false>();
        turns::init<true>();
        coop::init<7>();
        coop::init<8>();
        coop::init<9>();
        coop::init<10>();
        coop::init<11>();
        coop::init<12>();
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
                const Gemm g = upload(make_host(T, s.N, s.K), T, s.N, s.K, s.gelu);
                for (int v : run_vs) {
                    const double ms = time_variant(v, g, reps);
                    if (ms < 0)
                        continue;
                    const double tf = 2.0 * T * s.N * s.K / (ms * 1e-3) / 1e12;
                    printf("| %d | %s | %d | %.1f | %.0f | %.1f |\n", T, s.name, v, ms * 1e3, tf, 100.0 * tf / 790.0);
                }
                release(g);
            }
    }
    printf("%s\n", ok ? "all checks passed" : "CHECK FAILED");
    return ok ? 0 : 1;
}
