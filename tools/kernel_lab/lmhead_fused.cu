/* Kernel lab: the fused SPLADE LM head, version by version (llm.c's dev/cuda pattern).
 *
 *   out[b, v] = log1p(relu(max over s < len[b] of (H[b,s] · W[v] + bias[v])))    H, W bf16; out fp32
 *
 * One self-contained program: a float64 CPU reference, the numbered variants, a checker
 * (|out - ref| <= tol + |ref|·eps for every element, after the output was poisoned with NaN), a
 * launcher `switch` by variant number, and a main that validates every variant on a few shapes and
 * then times it (cudaEvent per launch, warm-ups, median). Variants that ARE the library's kernels
 * are included from src/lmhead_fused/ (what is measured is what the library runs); the historical
 * ones live only here. Build: `make lab` (build/lab/lmhead_fused); history and timings:
 * tools/kernel_lab/README.md.
 *
 *   2  mma.sync m16n8k16, 128x128, 3-stage cp.async, 2 blocks/SM   library: lmhead_mma.cuh (sm_80+)
 *   3  wgmma, 2 warpgroups, 128x256 (256x128 when S <= 128), copies issued before the wgmma,
 *      b-fastest unit order (no raster groups)                     history (commit 35dc196)
 *   4  wgmma, 3 warpgroups, 192x256, raster groups, PACK2 when S <= 128, copies before the wgmma
 *                                                                   history (commit 9b4dc33)
 *   5  as 4, copies of chunk c+2 issued after chunk c's wgmma       library: lmhead_wgmma.cuh
 *   6  warp-specialised: 1 cp.async producer warpgroup + full/empty mbarriers, 2 consumer warpgroups
 *      (128x256; 256x128 when S <= 128)                             history (commits a59830f, d65465f)
 *   7  TMA: one producer thread, 2 consumer warpgroups, 256x128     library: lmhead_tma.cuh (default)
 * Variants 3-7 need a compute-capability 9.0 GPU and the sm_90a code of this build; 7 also D >= 64.
 * The naive control (cuBLAS + eager-style kernels) is timed by `splade-index bench-lmhead`.
 *
 *   lmhead_fused [variant ...] [--B n --S n --V n --D n] [--reps n] [--no-check] [--no-time]
 * No variant: all. No shape: the timing grid (B32 S256, B128 S256, B256 S128; D 768, V 30522).
 * Exit status 1 when a variant fails its check. */
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <cuda.h>
#include <cudaTypedefs.h> /* PFN_cuTensorMapEncodeTiled */
#include <cuda_runtime.h>

#include "lmhead_fused/lmhead_common.cuh"
#include "lmhead_fused/lmhead_mma.cuh"
#include "lmhead_fused/lmhead_tma.cuh"
#include "lmhead_fused/lmhead_wgmma.cuh"

using namespace splade_lm;

#define CK(call)                                                                                         \
    do {                                                                                                 \
        cudaError_t e_ = (call);                                                                         \
        if (e_ != cudaSuccess) {                                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));      \
            exit(2);                                                                                     \
        }                                                                                                \
    } while (0)

/* ---- the historical variants (device code) ------------------------------------------------------ */

/* v3, v4, v5 and v6 fold a row tile's accumulators into the running max and store a unit the same
 * way (library v5: lmhead_wgmma.cuh); v3, v4 and v6 share these two. */
template <int WGM, int BN, bool PACK2>
__device__ __forceinline__ void fold_tile(float (&rm)[WGM][2][2], float (&d)[WGM][BN / 2])
{
#ifdef SPLADE_WGMMA_ENABLED
#pragma unroll
    for (int m = 0; m < WGM; m++) {
        fence_regs(d[m]);
#pragma unroll
        for (int i = 0; i < BN / 8; i++) {
            const int h2 = (PACK2 && i >= BN / 16) ? 1 : 0; /* columns 8i..8i+7 */
            rm[m][h2][0] = fmaxf(rm[m][h2][0], fmaxf(d[m][4 * i], d[m][4 * i + 1]));
            rm[m][h2][1] = fmaxf(rm[m][h2][1], fmaxf(d[m][4 * i + 2], d[m][4 * i + 3]));
        }
    }
#endif
}

template <int BM, int WGM, bool PACK2>
__device__ __forceinline__ void store_unit(const Problem &p, const Unit &x, float (&rm)[WGM][2][2])
{
    const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wq = (tid >> 5) & 3;
#pragma unroll
    for (int h2 = 0; h2 < (PACK2 ? 2 : 1); h2++) {
        const int b = h2 ? x.b1 : x.b;
        const int len = h2 ? x.len1 : x.len;
#pragma unroll
        for (int m = 0; m < WGM; m++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float v = rm[m][h2][h];
                v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
                v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
                if (PACK2 && len <= 0)
                    v = -INFINITY; /* an empty sequence's half held zeros */
                const int col = x.vt * BM + (wg * WGM + m) * 64 + wq * 16 + h * 8 + (lane >> 2);
                if ((lane & 3) == 0 && col < p.V && b < p.B)
                    store_out(p, b, col, v);
            }
    }
}

/* v3 (NWG = 2) and v4 (NWG = 3): library v5's pipeline, but the copies of chunk c+STAGES-2 are
 * issued after the barrier and before chunk c's wgmma (v5 moved them under the wgmma: +2.5 %). */
template <int NWG, int WGM, int BN, bool PACK2>
__global__ void __launch_bounds__(NWG * 128, 1) lab_loads_first_kernel(const Problem p)
{
#ifdef SPLADE_WGMMA_ENABLED
    using C = WgCfg<NWG, WGM, BN>;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t smem = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const int wg = threadIdx.x >> 7;

    Loader<C::BM, BN, C::THREADS, PACK2> ld;
    ld.init(p);
#pragma unroll
    for (int s = 0; s < C::STAGES - 2; s++)
        ld.issue(p, smem + s * C::STAGE, smem + s * C::STAGE + C::A_BYTES);

    float d[WGM][BN / 2];
    int c = 0;
    for (int u = blockIdx.x; u < p.nunits; u += gridDim.x) {
        const Unit x = decode_unit<BN, PACK2>(p, u);
        float rm[WGM][2][2];
#pragma unroll
        for (int m = 0; m < WGM; m++)
            rm[m][0][0] = rm[m][0][1] = rm[m][1][0] = rm[m][1][1] = -INFINITY;
        for (int rt = x.t0; rt < x.t1; rt++) {
            for (int kc = 0; kc < p.KC; kc++, c++) {
                cp_async_wait<C::STAGES - 3>();
                fence_proxy_async();
                __syncthreads();
                const int ps = (c + C::STAGES - 2) % C::STAGES;
                ld.issue(p, smem + ps * C::STAGE, smem + ps * C::STAGE + C::A_BYTES);
                const uint32_t sA = smem + (c % C::STAGES) * C::STAGE;
                wg_mma_chunk<WGM, BN>(d, sA, sA + C::A_BYTES, wg, kc);
                wg_wait<1>();
            }
            wg_wait<0>();
            fold_tile<WGM, BN, PACK2>(rm, d);
        }
        store_unit<C::BM, WGM, PACK2>(p, x, rm);
    }
    cp_async_wait<0>();
#endif
}

/* v6: 2 consumer warpgroups + 1 producer warpgroup (384 threads, 168 registers each). 3 consumers
 * + a producer (512 threads) does not compile: ptxas caps it at 128 registers, setmaxnreg does not
 * raise a region's allocation, and a consumer holds 128 accumulators. */
template <int NWG, int WGM, int BN> struct WsCfg {
    static constexpr int THREADS = (NWG + 1) * 128;
    static constexpr int BM = NWG * WGM * 64;
    static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE = A_BYTES + B_BYTES;
    static constexpr int STAGES = (227 * 1024 - 1024 - 256) / STAGE; /* 4 for 48 KB stages */
    static constexpr int BAR_OFF = STAGES * STAGE;                    /* full[STAGES], empty[STAGES] */
    static constexpr int SMEM = BAR_OFF + 16 * STAGES + 1024;
    static_assert(STAGES >= 3, "v6: too few stages");
    static_assert(NWG == 2, "v6: two consumer warpgroups only");
};

/* Pipeline: STAGES slots, each with a "full" and an "empty" mbarrier.
 *   producer, chunk i into slot i % STAGES: wait empty (the consumers' release of chunk i - STAGES),
 *     issue its copies, commit; then cp.async.wait_group LAG (chunk i - LAG has landed for this
 *     thread), fence.proxy.async, arrive on full[(i - LAG) % STAGES] (128 arrivals a phase).
 *   consumer, chunk c: wait full[c % STAGES], 4 k16 wgmma, commit, wgmma.wait_group 1 (chunk c-1's
 *     reads are done), arrive on empty[(c-1) % STAGES]; at the end of a row tile wait_group 0 and
 *     release chunk c too (NWG*128 arrivals a phase).
 * lag: cp.async groups the producer keeps in flight (1 or 2; was SPLADE_LMHEAD_WS_LAG, default 2). */
template <int NWG, int WGM, int BN>
__global__ void __launch_bounds__((NWG + 1) * 128, 1) lab_ws_kernel(const Problem p, int lag)
{
#ifdef SPLADE_WGMMA_ENABLED
    using C = WsCfg<NWG, WGM, BN>;
    constexpr int S = C::STAGES;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t smem = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t full = smem + C::BAR_OFF, empty = full + 8 * S;
    const int tid = threadIdx.x, wg = tid >> 7;

    if (tid == 0) {
        for (int s = 0; s < S; s++) {
            mbar_init(full + 8 * s, 128);
            mbar_init(empty + 8 * s, NWG * 128);
        }
    }
    __syncthreads();

    if (wg == NWG) { /* producer warpgroup */
        Loader<C::BM, BN, 128, false> ld;
        ld.init(p);
        int i = 0;
        while (!ld.done) {
            const int s = i % S;
            if (i >= S)
                mbar_wait(empty + 8 * s, ((i / S) - 1) & 1);
            ld.issue_t(p, smem + s * C::STAGE, smem + s * C::STAGE + C::A_BYTES, tid - NWG * 128);
            if (i >= lag) {
                if (lag == 1)
                    cp_async_wait<1>();
                else
                    cp_async_wait<2>();
                fence_proxy_async();
                mbar_arrive(full + 8 * ((i - lag) % S));
            }
            i++;
        }
        cp_async_wait<0>();
        fence_proxy_async();
        for (int j = i - lag < 0 ? 0 : i - lag; j < i; j++)
            mbar_arrive(full + 8 * (j % S));
        return;
    }

    float d[WGM][BN / 2];
    int c = 0;
    for (int u = blockIdx.x; u < p.nunits; u += gridDim.x) {
        const Unit x = decode_unit<BN, false>(p, u);
        float rm[WGM][2][2];
#pragma unroll
        for (int m = 0; m < WGM; m++)
            rm[m][0][0] = rm[m][0][1] = rm[m][1][0] = rm[m][1][1] = -INFINITY;
        for (int rt = x.t0; rt < x.t1; rt++) {
            for (int kc = 0; kc < p.KC; kc++, c++) {
                const int s = c % S;
                mbar_wait(full + 8 * s, (c / S) & 1);
                const uint32_t sA = smem + s * C::STAGE;
                wg_mma_chunk<WGM, BN>(d, sA, sA + C::A_BYTES, wg, kc);
                wg_wait<1>();
                if (kc > 0) /* chunk c-1 (same row tile) has been read: give its slot back */
                    mbar_arrive(empty + 8 * ((c + S - 1) % S));
            }
            wg_wait<0>();
            mbar_arrive(empty + 8 * ((c + S - 1) % S)); /* the row tile's last chunk */
            fold_tile<WGM, BN, false>(rm, d);
        }
        store_unit<C::BM, WGM, false>(p, x, rm);
    }
#endif
}

/* Writes 1 when this binary carries sm_90a code for the running device. */
__global__ void wgmma_probe_kernel(int *flag)
{
#ifdef SPLADE_WGMMA_ENABLED
    *flag = 1;
#else
    *flag = 0;
#endif
}

/* Deterministic bf16 fill on the device (timing inputs): N(0,1)-ish via a hash, times scale. */
__global__ void fill_kernel(__nv_bfloat16 *x, size_t n, uint32_t seed, float scale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        const float u = (h & 0xffffff) * (1.f / 16777216.f) - 0.5f; /* uniform, std 0.289 */
        x[i] = __float2bfloat16(u * 3.464f * scale);
    }
}

/* ---- host: the problem, the CPU reference and the checker ------------------------------------- */

struct Dev {
    int sms = 0, major = 0, l2 = 0, wgmma = 0, tma = 0, mma_blocks = 1;
};

struct Case {
    int B, S, D, V;
    std::vector<int> lens; /* empty: all S */
    int packed;            /* 1: sequences back to back with 3 garbage rows between them */
    const char *what;
};

/* A problem on the device: H [rows, D], W [V, D] bf16, bias fp32 [V], lengths, out [B, V]. */
struct Prob {
    int B = 0, D = 0, V = 0, max_len = 0, rows = 0;
    long long tokens = 0;
    __nv_bfloat16 *H = nullptr, *W = nullptr;
    float *bias = nullptr, *out = nullptr;
    int32_t *start = nullptr, *len = nullptr;
};

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
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static double nrand()
{
    auto u = [] {
        g_rng ^= g_rng >> 12, g_rng ^= g_rng << 25, g_rng ^= g_rng >> 27;
        return ((g_rng * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
    };
    const double a = std::max(u(), 1e-300), b = u();
    return sqrt(-2 * log(a)) * cos(6.283185307179586 * b);
}

/* out_ref[b][v] in float64 from the bf16 inputs, threaded over the vocabulary. */
static void cpu_reference(const std::vector<uint16_t> &H, const std::vector<uint16_t> &W,
                          const std::vector<float> &bias, const std::vector<int> &start, const std::vector<int> &len,
                          int D, int V, std::vector<double> &ref)
{
    const int B = (int)start.size();
    ref.assign((size_t)B * V, 0.0);
    const int nt = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
    std::vector<std::thread> th;
    for (int t = 0; t < nt; t++)
        th.emplace_back([&, t] {
            std::vector<double> w(D);
            for (int v = (int)((long)V * t / nt); v < (int)((long)V * (t + 1) / nt); v++) {
                for (int d = 0; d < D; d++)
                    w[d] = bf2d(W[(size_t)v * D + d]);
                for (int b = 0; b < B; b++) {
                    double m = -INFINITY;
                    for (int s = 0; s < len[b]; s++) {
                        const uint16_t *h = &H[(size_t)(start[b] + s) * D];
                        double acc = 0;
                        for (int d = 0; d < D; d++)
                            acc += bf2d(h[d]) * w[d];
                        m = std::max(m, acc);
                    }
                    m += bias[v];
                    ref[(size_t)b * V + v] = m > 0 ? log1p(m) : 0.0;
                }
            }
        });
    for (auto &x : th)
        x.join();
}

/* Every element: |out - ref| <= tol + |ref|·eps (NaN fails: the output was poisoned first). */
static bool check(const char *name, const std::vector<float> &out, const std::vector<double> &ref, int V, double tol,
                  double eps)
{
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < ref.size(); i++) {
        const double e = fabs((double)out[i] - ref[i]);
        if (!(e <= tol + fabs(ref[i]) * eps)) {
            if (bad < 5)
                printf("      %s: out[%zu][%zu] = %.6g, reference %.6g\n", name, i / V, i % V, out[i], ref[i]);
            bad++;
        }
        if (e > worst || e != e)
            worst = e;
    }
    printf("    %-34s max |err| %.2e  %s (%zu of %zu outside %.0e + |ref|*%.0e)\n", name, worst, bad ? "FAIL" : "ok",
           bad, ref.size(), tol, eps);
    return bad == 0;
}

/* ---- host: planning and the launcher ----------------------------------------------------------- */

static int cdiv(int a, int b) { return (a + b - 1) / b; }

/* The library's planner (lmhead_gpu.cu make_plan) for one tile: slices per sequence so that the
 * persistent grid's last wave is as full as possible; raster groups of sequences whose H fills a
 * quarter of L2, or b-fastest order (one group of all sequences) when raster is false. */
static Problem plan(const Prob &q, const Dev &dv, int bm, int bn, int slots, bool pack2, bool raster, int *grid)
{
    const int nvt = cdiv(q.V, bm);
    const int ntmax = (q.max_len > 0 && !pack2) ? cdiv(q.max_len, bn) : 1;
    const long long base = (long long)nvt * (pack2 ? (q.B + 1) / 2 : q.B);
    int best_split = 1, best_tps = ntmax;
    double best_eff = 0;
    for (int ns = 1; ns <= ntmax; ns++) {
        const int tps = cdiv(ntmax, ns);
        if (cdiv(ntmax, tps) != ns)
            continue;
        const double waves = (double)((base * ns + slots - 1) / slots);
        const double eff = (double)base * ntmax / (waves * slots * tps);
        if (eff > best_eff * (ns == 1 ? 1.0 : 1.02))
            best_eff = eff, best_split = ns, best_tps = tps;
    }
    const int nitems = pack2 ? (q.B + 1) / 2 : q.B;
    int group = nitems;
    if (raster)
        group = (int)((dv.l2 > 0 ? dv.l2 / 4.0 : 12e6) / ((double)ntmax * bn * q.D * 2));
    group = std::max(1, std::min(group, nitems));
    Problem p{};
    p.H = q.H, p.seq_start = q.start, p.seq_len = q.len, p.W = q.W, p.bias = q.bias, p.out = q.out;
    p.B = q.B, p.D = q.D, p.V = q.V, p.KC = cdiv(q.D, BK);
    p.nsplit = best_split, p.tps = best_tps, p.nunits = (int)(base * best_split);
    p.atomic_out = best_split > 1, p.group = group, p.nvt = nvt;
    *grid = std::max(1, std::min(p.nunits, slots));
    return p;
}

static PFN_cuTensorMapEncodeTiled_v12000 g_encode = nullptr;

static void find_encoder(Dev &dv)
{
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult r;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &r) == cudaSuccess &&
        r == cudaDriverEntryPointSuccess && fn) {
        g_encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
        dv.tma = 1;
    }
    cudaGetLastError();
}

/* [rows, cols] bf16, boxes of 64 columns x box_rows, 128B swizzle, zero fill out of range (as the library). */
static CUtensorMap tensor_map(const void *base, int64_t rows, int64_t cols, int box_rows)
{
    CUtensorMap m;
    cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    cuuint64_t strides[1] = {(cuuint64_t)cols * 2};
    cuuint32_t box[2] = {64, (cuuint32_t)box_rows}, estr[2] = {1, 1};
    CUresult r = g_encode(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(base), dims, strides, box, estr,
                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "cuTensorMapEncodeTiled failed (CUresult %d)\n", (int)r);
        exit(2);
    }
    return m;
}

template <class K> static void set_smem(K kernel, int bytes)
{
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

static void pre_zero(const Problem &p, cudaStream_t s)
{
    if (p.atomic_out) /* slices combine with atomicMax on a zeroed output */
        CK(cudaMemsetAsync(p.out, 0, sizeof(float) * (size_t)p.B * p.V, s));
}

template <int NWG, int WGM, int BN, bool PACK2>
static void launch_loads_first(const Prob &q, const Dev &dv, bool raster, cudaStream_t s)
{
    using C = WgCfg<NWG, WGM, BN>;
    int grid;
    const Problem p = plan(q, dv, C::BM, BN, dv.sms, PACK2, raster, &grid);
    pre_zero(p, s);
    lab_loads_first_kernel<NWG, WGM, BN, PACK2><<<grid, C::THREADS, C::SMEM, s>>>(p);
}

template <int NWG, int WGM, int BN, bool PACK2> static void launch_v5(const Prob &q, const Dev &dv, cudaStream_t s)
{
    using C = WgCfg<NWG, WGM, BN>;
    int grid;
    const Problem p = plan(q, dv, C::BM, BN, dv.sms, PACK2, true, &grid);
    pre_zero(p, s);
    lmhead_wgmma_kernel<NWG, WGM, BN, PACK2><<<grid, C::THREADS, C::SMEM, s>>>(p);
}

template <int WGM, int BN> static void launch_v6(const Prob &q, const Dev &dv, cudaStream_t s)
{
    using C = WsCfg<2, WGM, BN>;
    int grid;
    const Problem p = plan(q, dv, C::BM, BN, dv.sms, false, true, &grid);
    pre_zero(p, s);
    lab_ws_kernel<2, WGM, BN><<<grid, C::THREADS, C::SMEM, s>>>(p, 2);
}

static void launch_v7(const Prob &q, const Dev &dv, cudaStream_t s)
{
    using C = TmaCfg<2, 128>;
    int grid;
    const Problem p = plan(q, dv, C::BM, 128, dv.sms, false, true, &grid);
    /* encoded once per problem, as the library caches its maps (the key is every input of the maps:
     * a freed and re-allocated buffer can come back at the same address with another shape) */
    static const void *kh = nullptr, *kw = nullptr;
    static int krows = 0, kd = 0, kv = 0;
    static CUtensorMap mw, mh;
    if (kh != q.H || kw != q.W || krows != q.rows || kd != q.D || kv != q.V) {
        mw = tensor_map(q.W, q.V, q.D, C::BM);
        mh = tensor_map(q.H, q.rows, q.D, 128);
        kh = q.H, kw = q.W, krows = q.rows, kd = q.D, kv = q.V;
    }
    pre_zero(p, s);
    lmhead_tma_kernel<2, 128><<<grid, C::THREADS, C::SMEM, s>>>(mw, mh, p);
}

static void launch_v2(const Prob &q, const Dev &dv, cudaStream_t s)
{
    int grid;
    const Problem p = plan(q, dv, MMA_BM, MMA_BN, dv.sms * dv.mma_blocks, false, true, &grid);
    pre_zero(p, s);
    lmhead_mma_kernel<<<grid, MMA_THREADS, MMA_SMEM, s>>>(p);
}

/* Once per process: the dynamic shared memory of every kernel, and the mma.sync blocks per SM. */
static void setup_kernels(Dev &dv)
{
    set_smem(lmhead_mma_kernel, MMA_SMEM);
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&dv.mma_blocks, lmhead_mma_kernel, MMA_THREADS, MMA_SMEM));
    dv.mma_blocks = std::max(dv.mma_blocks, 1);
    if (!dv.wgmma)
        return;
    set_smem(lab_loads_first_kernel<2, 2, 128, false>, WgCfg<2, 2, 128>::SMEM);
    set_smem(lab_loads_first_kernel<2, 1, 256, false>, WgCfg<2, 1, 256>::SMEM);
    set_smem(lab_loads_first_kernel<3, 1, 256, false>, WgCfg<3, 1, 256>::SMEM);
    set_smem(lab_loads_first_kernel<3, 1, 256, true>, WgCfg<3, 1, 256>::SMEM);
    set_smem(lmhead_wgmma_kernel<3, 1, 256, false>, WgCfg<3, 1, 256>::SMEM);
    set_smem(lmhead_wgmma_kernel<3, 1, 256, true>, WgCfg<3, 1, 256>::SMEM);
    set_smem(lab_ws_kernel<2, 2, 128>, WsCfg<2, 2, 128>::SMEM);
    set_smem(lab_ws_kernel<2, 1, 256>, WsCfg<2, 1, 256>::SMEM);
    set_smem(lmhead_tma_kernel<2, 128>, TmaCfg<2, 128>::SMEM);
}

/* Why a variant cannot run here (NULL: it can). */
static const char *unavailable(int v, const Prob &q, const Dev &dv)
{
    if (v < 2 || v > 7)
        return "no such variant (2-7)";
    if (v >= 3 && !dv.wgmma)
        return "needs a compute-capability 9.0 GPU and sm_90a code";
    if (v == 7 && !dv.tma)
        return "cuTensorMapEncodeTiled not found";
    if (v == 7 && q.D < 64)
        return "TMA boxes are 64 columns: D >= 64";
    return nullptr;
}

static const char *tile_name(int v, const Prob &q)
{
    const bool short_seqs = q.max_len <= 128;
    switch (v) {
    case 2: return "128x128";
    case 3:
    case 6: return short_seqs ? "256x128" : "128x256";
    case 4:
    case 5: return short_seqs ? "192x256p2" : "192x256";
    default: return "256x128";
    }
}

/* The launcher: variant number -> kernel (with the planner's grid and the pre-zeroing it needs). */
static void run_variant(int v, const Prob &q, const Dev &dv, cudaStream_t s)
{
    const bool short_seqs = q.max_len <= 128;
    switch (v) {
    case 2: launch_v2(q, dv, s); break;
    case 3:
        if (short_seqs)
            launch_loads_first<2, 2, 128, false>(q, dv, false, s);
        else
            launch_loads_first<2, 1, 256, false>(q, dv, false, s);
        break;
    case 4:
        if (short_seqs)
            launch_loads_first<3, 1, 256, true>(q, dv, true, s);
        else
            launch_loads_first<3, 1, 256, false>(q, dv, true, s);
        break;
    case 5:
        if (short_seqs)
            launch_v5<3, 1, 256, true>(q, dv, s);
        else
            launch_v5<3, 1, 256, false>(q, dv, s);
        break;
    case 6:
        if (short_seqs)
            launch_v6<2, 128>(q, dv, s);
        else
            launch_v6<1, 256>(q, dv, s);
        break;
    case 7: launch_v7(q, dv, s); break;
    }
    CK(cudaGetLastError());
}

static void free_prob(Prob &q)
{
    CK(cudaFree(q.H));
    CK(cudaFree(q.W));
    CK(cudaFree(q.bias));
    CK(cudaFree(q.out));
    CK(cudaFree(q.start));
    CK(cudaFree(q.len));
    q = Prob{};
}

template <class T> static T *dev_alloc(size_t n)
{
    T *p = nullptr;
    CK(cudaMalloc(&p, sizeof(T) * (n ? n : 1)));
    return p;
}

/* ---- validation: every variant against the float64 reference on a few shapes ------------------ */

static const Case kCases[] = {
    {3, 37, 768, 1000, {37, 2, 20}, 0, "padded, NaN padding rows, a length-2 sequence"},
    {5, 128, 256, 3001, {128, 1, 77, 0, 128}, 0, "S <= 128 (PACK2 / 256x128), an empty sequence, odd B"},
    {2, 300, 128, 30522, {300, 129}, 1, "packed with garbage rows, several row tiles"},
    {1, 600, 192, 2000, {}, 0, "B = 1, one long sequence (split into slices), D = 192 (K tail)"},
    {2, 20, 40, 1000, {}, 0, "D = 40 < 64"},
};

static bool validate(const std::vector<int> &variants, const Dev &dv)
{
    bool ok = true;
    for (const Case &c : kCases) {
        const int B = c.B, D = c.D, V = c.V;
        std::vector<int> start(B), len(B);
        int rows = 0, max_len = 0;
        for (int b = 0; b < B; b++) {
            len[b] = c.lens.empty() ? c.S : c.lens[b];
            max_len = std::max(max_len, len[b]);
            if (c.packed) {
                rows += 3;
                start[b] = rows;
                rows += len[b];
            } else {
                start[b] = b * c.S;
                rows = (b + 1) * c.S;
            }
        }
        if (c.packed)
            rows += 3;
        std::vector<uint16_t> H((size_t)rows * D, 0x7fc0), W((size_t)V * D); /* NaN everywhere but sequences */
        for (int b = 0; b < B; b++)
            for (size_t i = 0; i < (size_t)len[b] * D; i++)
                H[(size_t)start[b] * D + i] = f2bf((float)nrand());
        for (auto &w : W)
            w = f2bf((float)(nrand() * 0.3 / sqrt((double)D)));
        std::vector<float> bias(V);
        for (auto &x : bias)
            x = (float)(nrand() * 0.05);
        std::vector<double> ref;
        cpu_reference(H, W, bias, start, len, D, V, ref);

        Prob q;
        q.B = B, q.D = D, q.V = V, q.max_len = max_len, q.rows = rows;
        q.H = dev_alloc<__nv_bfloat16>(H.size()), q.W = dev_alloc<__nv_bfloat16>(W.size());
        q.bias = dev_alloc<float>(V), q.out = dev_alloc<float>((size_t)B * V);
        q.start = dev_alloc<int32_t>(B), q.len = dev_alloc<int32_t>(B);
        CK(cudaMemcpy(q.H, H.data(), H.size() * 2, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(q.W, W.data(), W.size() * 2, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(q.bias, bias.data(), V * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(q.start, start.data(), B * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(q.len, len.data(), B * 4, cudaMemcpyHostToDevice));
        printf("  B=%d S=%d D=%d V=%d: %s\n", B, max_len, D, V, c.what);
        std::vector<float> out((size_t)B * V);
        for (int v : variants) {
            char name[64];
            snprintf(name, sizeof name, "v%d (%s)", v, tile_name(v, q));
            if (const char *why = unavailable(v, q, dv)) {
                printf("    %-34s n/a: %s\n", name, why);
                continue;
            }
            CK(cudaMemset(q.out, 0xff, sizeof(float) * (size_t)B * V)); /* NaN: every element must be written */
            run_variant(v, q, dv, 0);
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(out.data(), q.out, out.size() * 4, cudaMemcpyDeviceToHost));
            /* bf16 products are exact in fp32; what is left is fp32 summation over D terms */
            ok &= check(name, out, ref, V, 1e-4, 1e-3);
        }
        free_prob(q);
    }
    return ok;
}

/* ---- timing: median of `reps` launches after 3 warm-ups, each bracketed by cudaEvents ---------- */

static void time_shape(const std::vector<int> &variants, const Dev &dv, int B, int S, int D, int V, int reps)
{
    Prob q;
    q.B = B, q.D = D, q.V = V, q.max_len = S, q.rows = B * S, q.tokens = (long long)B * S;
    q.H = dev_alloc<__nv_bfloat16>((size_t)q.rows * D), q.W = dev_alloc<__nv_bfloat16>((size_t)V * D);
    q.bias = dev_alloc<float>(V), q.out = dev_alloc<float>((size_t)B * V);
    q.start = dev_alloc<int32_t>(B), q.len = dev_alloc<int32_t>(B);
    fill_kernel<<<1024, 256>>>(q.H, (size_t)q.rows * D, 1, 1.f);
    fill_kernel<<<1024, 256>>>(q.W, (size_t)V * D, 2, (float)(0.3 / sqrt((double)D)));
    CK(cudaMemset(q.bias, 0, V * 4));
    std::vector<int> start(B), len(B, S);
    for (int b = 0; b < B; b++)
        start[b] = b * S;
    CK(cudaMemcpy(q.start, start.data(), B * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(q.len, len.data(), B * 4, cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());
    const double gflop = 2.0 * q.tokens * D * V / 1e9;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int v : variants) {
        if (const char *why = unavailable(v, q, dv)) {
            printf("| %d | %d | %d | %d | v%d | %s | n/a: %s | |\n", B, S, D, V, v, tile_name(v, q), why);
            continue;
        }
        std::vector<float> ms;
        for (int r = 0; r < reps + 3; r++) {
            CK(cudaEventRecord(e0));
            run_variant(v, q, dv, 0);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float t;
            CK(cudaEventElapsedTime(&t, e0, e1));
            if (r >= 3)
                ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        const float med = ms[ms.size() / 2];
        printf("| %d | %d | %d | %d | v%d | %s | %.3f | %.0f |\n", B, S, D, V, v, tile_name(v, q), med,
               gflop / med);
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    free_prob(q);
}

int main(int argc, char **argv)
{
    std::vector<int> variants;
    int B = 0, S = 0, D = 768, V = 30522, reps = 20, do_check = 1, do_time = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const bool val = i + 1 < argc;
        if (!strcmp(a, "--B") && val)
            B = atoi(argv[++i]);
        else if (!strcmp(a, "--S") && val)
            S = atoi(argv[++i]);
        else if (!strcmp(a, "--D") && val)
            D = atoi(argv[++i]);
        else if (!strcmp(a, "--V") && val)
            V = atoi(argv[++i]);
        else if (!strcmp(a, "--reps") && val)
            reps = std::max(1, atoi(argv[++i]));
        else if (!strcmp(a, "--no-check"))
            do_check = 0;
        else if (!strcmp(a, "--no-time"))
            do_time = 0;
        else if (a[0] >= '0' && a[0] <= '9')
            variants.push_back(atoi(a));
        else {
            fprintf(stderr, "usage: %s [variant 2-7 ...] [--B n --S n --D n --V n] [--reps n] [--no-check] "
                            "[--no-time]\n", argv[0]);
            return 2;
        }
    }
    if (variants.empty())
        variants = {2, 3, 4, 5, 6, 7};
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("lmhead_fused: no CUDA device\n");
        return 2;
    }
    Dev dv;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    dv.sms = prop.multiProcessorCount, dv.major = prop.major, dv.l2 = prop.l2CacheSize;
    if (dv.major == 9) {
        int *flag = dev_alloc<int>(1), h = 0;
        wgmma_probe_kernel<<<1, 1>>>(flag);
        CK(cudaMemcpy(&h, flag, sizeof h, cudaMemcpyDeviceToHost));
        CK(cudaFree(flag));
        dv.wgmma = h;
        find_encoder(dv);
    }
    setup_kernels(dv);
    printf("lmhead_fused lab: %s, %d SMs, L2 %d MiB, wgmma %s, TMA %s\n", prop.name, dv.sms, dv.l2 >> 20,
           dv.wgmma ? "yes" : "no", dv.tma ? "yes" : "no");
    bool ok = true;
    if (do_check) {
        printf("check: every output element against a float64 CPU reference (output poisoned with NaN first)\n");
        ok = validate(variants, dv);
    }
    if (do_time) {
        printf("\ntiming: median of %d launches after 3 warm-ups (cudaEvent), all sequences of length S, "
               "TFLOP/s = 2·B·S·D·V / time\n\n| B | S | D | V | variant | tile | ms | TFLOP/s |\n"
               "|---|---|---|---|---|---|---|---|\n", reps);
        if (B > 0 && S > 0)
            time_shape(variants, dv, B, S, D, V, reps);
        else {
            time_shape(variants, dv, 32, 256, D, V, reps);
            time_shape(variants, dv, 128, 256, D, V, reps);
            time_shape(variants, dv, 256, 128, D, V, reps);
        }
    }
    printf("\nlmhead_fused lab: %s\n", ok ? "all checked variants passed" : "CHECK FAILED");
    return ok ? 0 : 1;
}
