/* Kernel lab: the GPU encoder's packed variable-length attention, version by version (llm.c's
 * dev/cuda pattern): a float64 CPU reference, the numbered variants, a checker
 * (|out - ref| <= tol + |ref|·eps for every element, after the output was poisoned with NaN), a
 * launcher `switch`, and a main that validates every variant then times it (cudaEvent, warm-ups,
 * median). Build: `make lab` (build/lab/attention); history: tools/kernel_lab/README.md.
 *
 *   qkv bf16 [T, 3·H] (columns Q | K | V, head h at h·d in each third), T tokens of B sequences
 *   packed back to back; ctx[t, h·d + e] = softmax over the keys of t's own sequence of
 *   (q_t · k_j / sqrt(d)) applied to v_j. bf16 mma.sync m16n8k16 (sm_80+), fp32 accumulation.
 *
 *   1  4 warps, 64 query rows per block, K/V tiles of 64 rows double buffered (cp.async),
 *      grid (tiles, heads)                                   history (until commit ee4412a)
 *   2  8 warps, 128 query rows per block, a ring of 3-4 K/V stages all issued up front,
 *      ex2.approx softmax, 1-D head-fastest grid             library: src/encoder/gpu_attention.cu
 *                                                            (head sizes 32, 128; not Hopper)
 *   3  v2 as a persistent grid, the copies running ahead across work items    lab only (slower)
 *   4  v2 in FlashAttention-2's warp shape: 4 warps of 32 query rows          lab only (equal)
 *   5  wgmma (sm_90a): a warpgroup of 64 query rows, S = Q·Kᵀ and O += P·V on the tensor cores
 *      from swizzled shared memory, P in registers, 64-key tiles             lab only
 *   6  v5 with the next tile's scores in flight during the softmax           lab only (slower)
 *   7  v5 with 128-key tiles                     library: src/encoder/gpu_attention_wgmma.cu
 *      (Hopper, head size 64); tried on top of it: one barrier for all resident tiles (spills,
 *      slower); tried on v5 and removed: FlashAttention-3's order (S(j) and P(j-1)·V(j-1) in flight
 *      together, O rescaled with nothing in flight: no serialisation in the SASS, but 181 TFLOP/s,
 *      v5's speed; bench/results/gpu-attention-wgmma-2026-11-26.md)
 *
 *   attention [variant ...] [--B n --S n --heads n --d n] [--reps n] [--no-check] [--no-time]
 * No variant: all. No shape: bert-base (12 heads of 64) at B128 S256 and B32 S512, one layer.
 * v5-v7 run only at head size 64 on a Hopper GPU (a "not run" line otherwise).
 * Exit status 1 when a variant fails its check. */
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

/* Variant 2 is the library's kernel and launcher, compiled into this program as they are. */
#include "encoder/gpu_attention.cu"
/* Variant 7 is the library's Hopper kernel (head size 64), compiled in the same way, with the probe
 * that says whether it can run here. */
#include "encoder/gpu_attention_wgmma.cu"
#include "gpu/wgmma_probe.cu"

/* The library records failures through splade_fail (src/common/fail.c); here they are printed. */
extern "C" int splade_fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "splade_fail(%d): ", status);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return status;
}

#define CK(call)                                                                                         \
    do {                                                                                                 \
        cudaError_t e_ = (call);                                                                         \
        if (e_ != cudaSuccess) {                                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));      \
            exit(2);                                                                                     \
        }                                                                                                \
    } while (0)

using splade_gpu::AttnTile;
using splade_gpu::bf16;
using splade_gpu::kAttnTile;

/* ---- v1 (device code; the helpers are the library's, from gpu_attention.cu) -------------------- */
namespace v1 {

using splade_gpu::cp_async_commit;
using splade_gpu::cp_async_wait;
using splade_gpu::ldsm_x4;
using splade_gpu::ldsm_x4_t;
using splade_gpu::mma16816;
using splade_gpu::pack_bf16;
using splade_gpu::smem_u32;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;

template <int D> constexpr size_t smem_bytes()
{
    return (size_t)5 * kAttnTile * (D + 8) * sizeof(bf16); // Q + 2 x (K, V)
}

/* Starts asynchronous copies of rows [r0, r0+64) of a head slice (row stride ld, D columns)
 * into smem (row stride D+8); rows at or past len are zero-filled (src-size 0). 16-byte copies. */
template <int D> __device__ __forceinline__ void load_tile_async(bf16 *dst, const bf16 *src, size_t ld, int r0, int len)
{
    constexpr int CPR = D / 8;
    constexpr int LDS = D + 8;
#pragma unroll
    for (int c = threadIdx.x; c < kAttnTile * CPR; c += kThreads) {
        const int r = c / CPR, cc = c % CPR;
        const bool ok = r0 + r < len;
        const bf16 *p = ok ? src + (size_t)(r0 + r) * ld + cc * 8 : src;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst + r * LDS + cc * 8)),
                     "l"(p), "r"(ok ? 16 : 0));
    }
}

/* One block of 4 warps per (query tile of 64 rows of one sequence, head); each warp owns 16 query
 * rows. K/V tiles of 64 rows stream through shared memory, double buffered (the next tile loads
 * while this one is used); scores stay in registers (online softmax with exp2f). */
template <int D>
__global__ void __launch_bounds__(kThreads, D >= 128 ? 2 : D >= 64 ? 3 : 4)
    attn_kernel(const bf16 *__restrict__ qkv, bf16 *__restrict__ ctx, const AttnTile *__restrict__ tiles, int hidden,
                float scale_log2)
{
    constexpr int LDS = D + 8;        // padded smem row: ldmatrix rows land in distinct banks
    constexpr int KS = D / 16;        // k-steps over the head dimension
    constexpr int DT = D / 8;         // n-tiles of the output
    constexpr int NT = kAttnTile / 8; // n-tiles of keys in a score tile
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16 *sQ = reinterpret_cast<bf16 *>(smem_raw);
    bf16 *sK0 = sQ + kAttnTile * LDS; // K/V double buffer: [K0 | V0 | K1 | V1]

    const AttnTile tile = tiles[blockIdx.x];
    const int head = blockIdx.y;
    const size_t ld = 3 * (size_t)hidden;
    const bf16 *qbase = qkv + (size_t)tile.start * ld + head * D;
    const bf16 *kbase = qbase + hidden;
    const bf16 *vbase = qbase + 2 * hidden;
    const int len = tile.len;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;

    // group 0: Q and the first K/V tile
    load_tile_async<D>(sQ, qbase, ld, tile.q0, len);
    load_tile_async<D>(sK0, kbase, ld, 0, len);
    load_tile_async<D>(sK0 + kAttnTile * LDS, vbase, ld, 0, len);
    cp_async_commit();

    uint32_t qf[KS][4];
    float o[DT][4];
#pragma unroll
    for (int i = 0; i < DT; i++)
        o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;

    for (int kt = 0, it = 0; kt < len; kt += kAttnTile, it++) {
        const bf16 *sK = sK0 + (it & 1) * 2 * kAttnTile * LDS;
        const bf16 *sV = sK + kAttnTile * LDS;
        if (kt + kAttnTile < len) { // prefetch the next tile into the other buffer
            bf16 *nK = sK0 + ((it + 1) & 1) * 2 * kAttnTile * LDS;
            load_tile_async<D>(nK, kbase, ld, kt + kAttnTile, len);
            load_tile_async<D>(nK + kAttnTile * LDS, vbase, ld, kt + kAttnTile, len);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        if (it == 0) {
#pragma unroll
            for (int ks = 0; ks < KS; ks++)
                ldsm_x4(qf[ks], sQ + (warp * 16 + (lane & 15)) * LDS + ks * 16 + (lane >> 4) * 8);
        }

        float s[NT][4];
#pragma unroll
        for (int i = 0; i < NT; i++)
            s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
#pragma unroll
        for (int ks = 0; ks < KS; ks++) {
#pragma unroll
            for (int nt = 0; nt < NT; nt += 2) {
                uint32_t b[4];
                ldsm_x4(b, sK + (nt * 8 + ((lane >> 4) << 3) + (lane & 7)) * LDS + ks * 16 + ((lane >> 3) & 1) * 8);
                mma16816(s[nt], qf[ks], b[0], b[1]);
                mma16816(s[nt + 1], qf[ks], b[2], b[3]);
            }
        }

        // scale into the log2 domain, mask keys past the end, online softmax
        const bool partial = kt + kAttnTile > len;
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float v = s[nt][e] * scale_log2;
                if (partial && kt + nt * 8 + 2 * t + (e & 1) >= len)
                    v = -INFINITY;
                s[nt][e] = v;
            }
            mx0 = fmaxf(mx0, fmaxf(s[nt][0], s[nt][1]));
            mx1 = fmaxf(mx1, fmaxf(s[nt][2], s[nt][3]));
        }
#pragma unroll
        for (int off = 1; off <= 2; off <<= 1) {
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
        }
        const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1); // finite: key kt is always valid
        const float a0 = exp2f(m0 - mn0), a1 = exp2f(m1 - mn1);   // 0 on the first tile
        m0 = mn0, m1 = mn1;
        float rs0 = 0.f, rs1 = 0.f;
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            s[nt][0] = exp2f(s[nt][0] - mn0);
            s[nt][1] = exp2f(s[nt][1] - mn0);
            s[nt][2] = exp2f(s[nt][2] - mn1);
            s[nt][3] = exp2f(s[nt][3] - mn1);
            rs0 += s[nt][0] + s[nt][1];
            rs1 += s[nt][2] + s[nt][3];
        }
        l0 = l0 * a0 + rs0; // per-lane partial sums; the 4 lanes of a row are reduced at the end
        l1 = l1 * a1 + rs1;
#pragma unroll
        for (int i = 0; i < DT; i++) {
            o[i][0] *= a0, o[i][1] *= a0;
            o[i][2] *= a1, o[i][3] *= a1;
        }

        // O += P·V, P from the score accumulators (C layout of two n-tiles = A layout of one k-step)
#pragma unroll
        for (int j = 0; j < kAttnTile / 16; j++) {
            uint32_t a[4];
            a[0] = pack_bf16(s[2 * j][0], s[2 * j][1]);
            a[1] = pack_bf16(s[2 * j][2], s[2 * j][3]);
            a[2] = pack_bf16(s[2 * j + 1][0], s[2 * j + 1][1]);
            a[3] = pack_bf16(s[2 * j + 1][2], s[2 * j + 1][3]);
#pragma unroll
            for (int dt = 0; dt < DT; dt += 2) {
                uint32_t b[4];
                ldsm_x4_t(b, sV + (j * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * LDS + dt * 8 + (lane >> 4) * 8);
                mma16816(o[dt], a, b[0], b[1]);
                mma16816(o[dt + 1], a, b[2], b[3]);
            }
        }
        __syncthreads(); // the next iteration's prefetch refills the buffer just read
    }

#pragma unroll
    for (int off = 1; off <= 2; off <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, off);
        l1 += __shfl_xor_sync(0xffffffffu, l1, off);
    }
    const float inv0 = 1.f / l0, inv1 = 1.f / l1;
    const int r0 = tile.q0 + warp * 16 + g, r1 = r0 + 8;
    bf16 *out0 = ctx + (size_t)(tile.start + r0) * hidden + head * D + 2 * t;
    bf16 *out1 = ctx + (size_t)(tile.start + r1) * hidden + head * D + 2 * t;
#pragma unroll
    for (int dt = 0; dt < DT; dt++) {
        if (r0 < len)
            *reinterpret_cast<__nv_bfloat162 *>(out0 + dt * 8) = __floats2bfloat162_rn(o[dt][0] * inv0, o[dt][1] * inv0);
        if (r1 < len)
            *reinterpret_cast<__nv_bfloat162 *>(out1 + dt * 8) = __floats2bfloat162_rn(o[dt][2] * inv1, o[dt][3] * inv1);
    }
}

template <int D> void init() { CK(cudaFuncSetAttribute(attn_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_bytes<D>())); }

template <int D> void launch(const bf16 *qkv, bf16 *ctx, const AttnTile *tiles, int n_tiles, int heads)
{
    const float scale_log2 = (float)(1.4426950408889634 / sqrt((double)D));
    attn_kernel<D><<<dim3((unsigned)n_tiles, (unsigned)heads), kThreads, smem_bytes<D>()>>>(qkv, ctx, tiles, heads * D,
                                                                                           scale_log2);
}

} // namespace v1

/* ---- v3 (lab): persistent blocks, the loads run ahead across work items ----------------------
 * v2's block waits once for global memory at its start and then computes only 4 key tiles (S=256):
 * with 2 blocks an SM, that first wait is not hidden. Here a grid of 2 blocks per SM loops over the
 * (query tile, head) items, head-fastest; each item is a stream of ring slots [Q, KV0, KV1, ...]
 * (a Q slot of 128 rows is the size of one K|V tile of 64 keys), and the copies run NST slots ahead
 * of the math, across item boundaries, so the next item's Q and first keys arrive while this one's
 * last tiles are computed. */
namespace v3 {

using splade_gpu::cp_async_commit;
using splade_gpu::cp_async_wait;
using splade_gpu::ex2_ftz;
using splade_gpu::ldsm_x4;
using splade_gpu::ldsm_x4_t;
using splade_gpu::mma16816;
using splade_gpu::pack_bf16;
using splade_gpu::smem_u32;

constexpr int kW = 8;
constexpr int kT = kW * 32;

template <int D> struct Cfg {
    static constexpr int NST = D >= 128 ? 4 : 5;
    static constexpr int LDS = D + 8;
    static constexpr int MINB = D >= 128 ? 1 : 2;
    static constexpr int SLOT = 2 * kAttnTile * LDS; /* [K | V] of 64 keys, or Q of 128 rows */
    static constexpr size_t smem = (size_t)NST * SLOT * sizeof(bf16);
};

template <int D, int ROWS>
__device__ __forceinline__ void rows_async(bf16 *dst, const bf16 *src, size_t ld, int r0, int len)
{
    constexpr int CPR = D / 8;
    constexpr int LDS = D + 8;
#pragma unroll
    for (int c = threadIdx.x; c < ROWS * CPR; c += kT) {
        const int r = c / CPR, cc = c % CPR;
        const bool ok = r0 + r < len;
        const bf16 *p = ok ? src + (size_t)(r0 + r) * ld + cc * 8 : src;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst + r * LDS + cc * 8)),
                     "l"(p), "r"(ok ? 16 : 0));
    }
}

/* Position in a block's stream of slots: item (tile * heads + head), slot 0 = Q, 1.. = key tiles. */
struct Cursor {
    int item, slot, nslots;
    AttnTile tile;
};

__device__ __forceinline__ void cursor_enter(Cursor &c, const AttnTile *tiles, int heads, int n_items)
{
    c.slot = 0;
    if (c.item < n_items) {
        c.tile = tiles[c.item / heads];
        c.nslots = 1 + (c.tile.len + kAttnTile - 1) / kAttnTile;
    }
}

__device__ __forceinline__ void cursor_next(Cursor &c, const AttnTile *tiles, int heads, int n_items)
{
    if (++c.slot == c.nslots) {
        c.item += gridDim.x;
        cursor_enter(c, tiles, heads, n_items);
    }
}

/* Issues the copies of slot c into dst and commits a group (empty once the stream has ended). */
template <int D>
__device__ __forceinline__ void issue(bf16 *dst, const Cursor &c, const bf16 *qkv, int heads, int n_items)
{
    if (c.item < n_items) {
        const int head = c.item % heads, hidden = heads * D;
        const size_t ld = 3 * (size_t)hidden;
        const bf16 *q = qkv + (size_t)c.tile.start * ld + head * D;
        if (c.slot == 0)
            rows_async<D, kW * 16>(dst, q, ld, c.tile.q0, c.tile.len);
        else {
            const int k0 = (c.slot - 1) * kAttnTile;
            rows_async<D, kAttnTile>(dst, q + hidden, ld, k0, c.tile.len);
            rows_async<D, kAttnTile>(dst + kAttnTile * (D + 8), q + 2 * hidden, ld, k0, c.tile.len);
        }
    }
    cp_async_commit();
}

template <int D>
__global__ void __launch_bounds__(kT, Cfg<D>::MINB)
    attn3_kernel(const bf16 *__restrict__ qkv, bf16 *__restrict__ ctx, const AttnTile *__restrict__ tiles,
                 int n_items, int heads, float scale_log2)
{
    constexpr int NST = Cfg<D>::NST, LDS = Cfg<D>::LDS, SLOT = Cfg<D>::SLOT;
    constexpr int KS = D / 16, DT = D / 8, NT = kAttnTile / 8;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16 *ring = reinterpret_cast<bf16 *>(smem_raw);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;

    Cursor L, C;
    L.item = blockIdx.x;
    cursor_enter(L, tiles, heads, n_items);
    C = L;
#pragma unroll 1
    for (int p = 0; p < NST; p++) {
        issue<D>(ring + p * SLOT, L, qkv, heads, n_items);
        cursor_next(L, tiles, heads, n_items);
    }

    uint32_t qf[KS][4];
    float o[DT][4];
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
    bool active = false;
    int p = 0;
#pragma unroll 1
    while (C.item < n_items) {
        cp_async_wait<NST - 1>(); /* this slot's group is complete */
        __syncthreads();
        const bf16 *slot = ring + p * SLOT;
        const int len = C.tile.len;
        if (C.slot == 0) {
            active = C.tile.q0 + warp * 16 < len; /* warp-uniform */
#pragma unroll
            for (int i = 0; i < DT; i++)
                o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
            m0 = m1 = -INFINITY, l0 = l1 = 0.f;
            if (active) {
#pragma unroll
                for (int ks = 0; ks < KS; ks++)
                    ldsm_x4(qf[ks], slot + (warp * 16 + (lane & 15)) * LDS + ks * 16 + (lane >> 4) * 8);
            }
        } else if (active) {
            const int kt = (C.slot - 1) * kAttnTile;
            const bf16 *sK = slot, *sV = slot + kAttnTile * LDS;
            float s[NT][4];
#pragma unroll
            for (int i = 0; i < NT; i++)
                s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
#pragma unroll
            for (int ks = 0; ks < KS; ks++) {
#pragma unroll
                for (int nt = 0; nt < NT; nt += 2) {
                    uint32_t b[4];
                    ldsm_x4(b, sK + (nt * 8 + ((lane >> 4) << 3) + (lane & 7)) * LDS + ks * 16 + ((lane >> 3) & 1) * 8);
                    mma16816(s[nt], qf[ks], b[0], b[1]);
                    mma16816(s[nt + 1], qf[ks], b[2], b[3]);
                }
            }
            if (kt + kAttnTile > len) {
#pragma unroll
                for (int nt = 0; nt < NT; nt++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        if (kt + nt * 8 + 2 * t + (e & 1) >= len)
                            s[nt][e] = -INFINITY;
            }
            float mx0 = m0, mx1 = m1;
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                mx0 = fmaxf(mx0, fmaxf(s[nt][0], s[nt][1]));
                mx1 = fmaxf(mx1, fmaxf(s[nt][2], s[nt][3]));
            }
#pragma unroll
            for (int off = 1; off <= 2; off <<= 1) {
                mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
                mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
            }
            const float a0 = ex2_ftz((m0 - mx0) * scale_log2), a1 = ex2_ftz((m1 - mx1) * scale_log2);
            m0 = mx0, m1 = mx1;
            const float ms0 = mx0 * scale_log2, ms1 = mx1 * scale_log2;
            float rs0 = 0.f, rs1 = 0.f;
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                s[nt][0] = ex2_ftz(fmaf(s[nt][0], scale_log2, -ms0));
                s[nt][1] = ex2_ftz(fmaf(s[nt][1], scale_log2, -ms0));
                s[nt][2] = ex2_ftz(fmaf(s[nt][2], scale_log2, -ms1));
                s[nt][3] = ex2_ftz(fmaf(s[nt][3], scale_log2, -ms1));
                rs0 += s[nt][0] + s[nt][1];
                rs1 += s[nt][2] + s[nt][3];
            }
            l0 = l0 * a0 + rs0;
            l1 = l1 * a1 + rs1;
#pragma unroll
            for (int i = 0; i < DT; i++) {
                o[i][0] *= a0, o[i][1] *= a0;
                o[i][2] *= a1, o[i][3] *= a1;
            }
#pragma unroll
            for (int j = 0; j < kAttnTile / 16; j++) {
                uint32_t a[4];
                a[0] = pack_bf16(s[2 * j][0], s[2 * j][1]);
                a[1] = pack_bf16(s[2 * j][2], s[2 * j][3]);
                a[2] = pack_bf16(s[2 * j + 1][0], s[2 * j + 1][1]);
                a[3] = pack_bf16(s[2 * j + 1][2], s[2 * j + 1][3]);
#pragma unroll
                for (int dt = 0; dt < DT; dt += 2) {
                    uint32_t b[4];
                    ldsm_x4_t(b, sV + (j * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * LDS + dt * 8 + (lane >> 4) * 8);
                    mma16816(o[dt], a, b[0], b[1]);
                    mma16816(o[dt + 1], a, b[2], b[3]);
                }
            }
            if (C.slot == C.nslots - 1) { /* the item's last key tile: normalise and write */
#pragma unroll
                for (int off = 1; off <= 2; off <<= 1) {
                    l0 += __shfl_xor_sync(0xffffffffu, l0, off);
                    l1 += __shfl_xor_sync(0xffffffffu, l1, off);
                }
                const float inv0 = 1.f / l0, inv1 = 1.f / l1;
                const int head = C.item % heads, hidden = heads * D;
                const int r0 = C.tile.q0 + warp * 16 + g, r1 = r0 + 8;
                bf16 *out0 = ctx + (size_t)(C.tile.start + r0) * hidden + head * D + 2 * t;
                bf16 *out1 = ctx + (size_t)(C.tile.start + r1) * hidden + head * D + 2 * t;
#pragma unroll
                for (int dt = 0; dt < DT; dt++) {
                    if (r0 < len)
                        *reinterpret_cast<__nv_bfloat162 *>(out0 + dt * 8) =
                            __floats2bfloat162_rn(o[dt][0] * inv0, o[dt][1] * inv0);
                    if (r1 < len)
                        *reinterpret_cast<__nv_bfloat162 *>(out1 + dt * 8) =
                            __floats2bfloat162_rn(o[dt][2] * inv1, o[dt][3] * inv1);
                }
            }
        }
        __syncthreads(); /* every warp is done with this slot */
        issue<D>(ring + p * SLOT, L, qkv, heads, n_items);
        cursor_next(L, tiles, heads, n_items);
        p = p + 1 == NST ? 0 : p + 1;
        cursor_next(C, tiles, heads, n_items);
    }
    cp_async_wait<0>(); /* only empty groups remain; none may be in flight at exit */
}

static int g_sms = 0;

template <int D> void init()
{
    CK(cudaFuncSetAttribute(attn3_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)Cfg<D>::smem));
    if (!g_sms) {
        cudaDeviceProp prop;
        CK(cudaGetDeviceProperties(&prop, 0));
        g_sms = prop.multiProcessorCount;
    }
}

template <int D> void launch(const bf16 *qkv, bf16 *ctx, const AttnTile *tiles, int n_tiles, int heads)
{
    const float scale_log2 = (float)(1.4426950408889634 / sqrt((double)D));
    const int n_items = n_tiles * heads;
    int blocks = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, attn3_kernel<D>, kT, Cfg<D>::smem));
    const int grid = std::min(n_items, std::max(1, blocks) * g_sms);
    attn3_kernel<D><<<grid, kT, Cfg<D>::smem>>>(qkv, ctx, tiles, n_items, heads, scale_log2);
}

} // namespace v3


/* ---- v4 (lab): FlashAttention-2's warp shape: 4 warps of 32 query rows (two m16 tiles) ----------
 * ncu on v2 (H100, B=64 S=256): 3.7 warps a scheduler, one eligible warp in 0.89 cycles, an issue
 * every 2.2 cycles: latency-bound (v3, which hid the block's first global-memory wait, was slower).
 * Here each warp owns two 16-row query tiles: every K and V fragment read from shared memory feeds
 * two mma (half v2's ldmatrix per mma) and each step has two independent chains (QK, max, exp,
 * P·V), so one warp has twice the independent work; 8 warps an SM instead of 16. */
namespace v4 {

using splade_gpu::cp_async_commit;
using splade_gpu::cp_async_wait;
using splade_gpu::ex2_ftz;
using splade_gpu::ldsm_x4;
using splade_gpu::ldsm_x4_t;
using splade_gpu::mma16816;
using splade_gpu::pack_bf16;
using splade_gpu::smem_u32;

constexpr int kW = 4;
constexpr int kT = kW * 32;
constexpr int MT = 2; /* m16 tiles per warp */
constexpr int QROWS = kW * 16 * MT;

template <int D> struct Cfg {
    static constexpr int NST = D >= 128 ? 3 : 4;
    static constexpr int LDS = D + 8;
    static constexpr int MINB = D >= 128 ? 1 : 2;
    static constexpr size_t smem = (size_t)(QROWS + NST * 2 * kAttnTile) * LDS * sizeof(bf16);
};

template <int D, int ROWS>
__device__ __forceinline__ void rows_async(bf16 *dst, const bf16 *src, size_t ld, int r0, int len)
{
    constexpr int CPR = D / 8;
    constexpr int LDS = D + 8;
#pragma unroll
    for (int c = threadIdx.x; c < ROWS * CPR; c += kT) {
        const int r = c / CPR, cc = c % CPR;
        const bool ok = r0 + r < len;
        const bf16 *p = ok ? src + (size_t)(r0 + r) * ld + cc * 8 : src;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst + r * LDS + cc * 8)),
                     "l"(p), "r"(ok ? 16 : 0));
    }
}

template <int D>
__global__ void __launch_bounds__(kT, Cfg<D>::MINB)
    attn4_kernel(const bf16 *__restrict__ qkv, bf16 *__restrict__ ctx, const AttnTile *__restrict__ tiles, int heads,
                 float scale_log2)
{
    constexpr int NST = Cfg<D>::NST, LDS = Cfg<D>::LDS;
    constexpr int KS = D / 16, DT = D / 8, NT = kAttnTile / 8;
    constexpr int STAGE = 2 * kAttnTile * LDS;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16 *sQ = reinterpret_cast<bf16 *>(smem_raw);
    bf16 *sKV = sQ + QROWS * LDS;

    const int head = (int)(blockIdx.x % (unsigned)heads);
    const AttnTile tile = tiles[blockIdx.x / (unsigned)heads];
    const int hidden = heads * D;
    const size_t ld = 3 * (size_t)hidden;
    const bf16 *qbase = qkv + (size_t)tile.start * ld + head * D;
    const bf16 *kbase = qbase + hidden;
    const bf16 *vbase = qbase + 2 * hidden;
    const int len = tile.len;
    const int nkv = (len + kAttnTile - 1) / kAttnTile;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const int wrow = tile.q0 + warp * 16 * MT;  /* the warp's first query row */
    const bool active = wrow < len;              /* warp-uniform */

    rows_async<D, QROWS>(sQ, qbase, ld, tile.q0, len);
#pragma unroll
    for (int i = 0; i < NST; i++) {
        if (i < nkv) {
            rows_async<D, kAttnTile>(sKV + i * STAGE, kbase, ld, i * kAttnTile, len);
            rows_async<D, kAttnTile>(sKV + i * STAGE + kAttnTile * LDS, vbase, ld, i * kAttnTile, len);
        }
        cp_async_commit();
    }

    uint32_t qf[MT][KS][4];
    float o[MT][DT][4];
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int i = 0; i < DT; i++)
            o[m][i][0] = o[m][i][1] = o[m][i][2] = o[m][i][3] = 0.f;
    float mx[MT][2], l[MT][2];
#pragma unroll
    for (int m = 0; m < MT; m++)
        mx[m][0] = mx[m][1] = -INFINITY, l[m][0] = l[m][1] = 0.f;

    for (int it = 0; it < nkv; it++) {
        const int kt = it * kAttnTile;
        cp_async_wait<NST - 1>();
        __syncthreads();
        const bf16 *sK = sKV + (it % NST) * STAGE;
        const bf16 *sV = sK + kAttnTile * LDS;
        if (active) {
            if (it == 0) {
#pragma unroll
                for (int m = 0; m < MT; m++)
#pragma unroll
                    for (int ks = 0; ks < KS; ks++)
                        ldsm_x4(qf[m][ks], sQ + (warp * 16 * MT + m * 16 + (lane & 15)) * LDS + ks * 16 + (lane >> 4) * 8);
            }
            float s[MT][NT][4];
#pragma unroll
            for (int m = 0; m < MT; m++)
#pragma unroll
                for (int i = 0; i < NT; i++)
                    s[m][i][0] = s[m][i][1] = s[m][i][2] = s[m][i][3] = 0.f;
#pragma unroll
            for (int ks = 0; ks < KS; ks++) {
#pragma unroll
                for (int nt = 0; nt < NT; nt += 2) {
                    uint32_t b[4];
                    ldsm_x4(b, sK + (nt * 8 + ((lane >> 4) << 3) + (lane & 7)) * LDS + ks * 16 + ((lane >> 3) & 1) * 8);
#pragma unroll
                    for (int m = 0; m < MT; m++) {
                        mma16816(s[m][nt], qf[m][ks], b[0], b[1]);
                        mma16816(s[m][nt + 1], qf[m][ks], b[2], b[3]);
                    }
                }
            }
            if (kt + kAttnTile > len) {
#pragma unroll
                for (int m = 0; m < MT; m++)
#pragma unroll
                    for (int nt = 0; nt < NT; nt++)
#pragma unroll
                        for (int e = 0; e < 4; e++)
                            if (kt + nt * 8 + 2 * t + (e & 1) >= len)
                                s[m][nt][e] = -INFINITY;
            }
            float a[MT][2];
#pragma unroll
            for (int m = 0; m < MT; m++) {
                float m0 = mx[m][0], m1 = mx[m][1];
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
                    m0 = fmaxf(m0, fmaxf(s[m][nt][0], s[m][nt][1]));
                    m1 = fmaxf(m1, fmaxf(s[m][nt][2], s[m][nt][3]));
                }
#pragma unroll
                for (int off = 1; off <= 2; off <<= 1) {
                    m0 = fmaxf(m0, __shfl_xor_sync(0xffffffffu, m0, off));
                    m1 = fmaxf(m1, __shfl_xor_sync(0xffffffffu, m1, off));
                }
                /* rows past the end (a partial second m tile) see only -inf: keep them finite */
                a[m][0] = ex2_ftz((mx[m][0] - m0) * scale_log2), a[m][1] = ex2_ftz((mx[m][1] - m1) * scale_log2);
                mx[m][0] = m0, mx[m][1] = m1;
                const float ms0 = m0 * scale_log2, ms1 = m1 * scale_log2;
                float rs0 = 0.f, rs1 = 0.f;
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
                    s[m][nt][0] = ex2_ftz(fmaf(s[m][nt][0], scale_log2, -ms0));
                    s[m][nt][1] = ex2_ftz(fmaf(s[m][nt][1], scale_log2, -ms0));
                    s[m][nt][2] = ex2_ftz(fmaf(s[m][nt][2], scale_log2, -ms1));
                    s[m][nt][3] = ex2_ftz(fmaf(s[m][nt][3], scale_log2, -ms1));
                    rs0 += s[m][nt][0] + s[m][nt][1];
                    rs1 += s[m][nt][2] + s[m][nt][3];
                }
                l[m][0] = l[m][0] * a[m][0] + rs0;
                l[m][1] = l[m][1] * a[m][1] + rs1;
#pragma unroll
                for (int i = 0; i < DT; i++) {
                    o[m][i][0] *= a[m][0], o[m][i][1] *= a[m][0];
                    o[m][i][2] *= a[m][1], o[m][i][3] *= a[m][1];
                }
            }
#pragma unroll
            for (int j = 0; j < kAttnTile / 16; j++) {
                uint32_t pa[MT][4];
#pragma unroll
                for (int m = 0; m < MT; m++) {
                    pa[m][0] = pack_bf16(s[m][2 * j][0], s[m][2 * j][1]);
                    pa[m][1] = pack_bf16(s[m][2 * j][2], s[m][2 * j][3]);
                    pa[m][2] = pack_bf16(s[m][2 * j + 1][0], s[m][2 * j + 1][1]);
                    pa[m][3] = pack_bf16(s[m][2 * j + 1][2], s[m][2 * j + 1][3]);
                }
#pragma unroll
                for (int dt = 0; dt < DT; dt += 2) {
                    uint32_t b[4];
                    ldsm_x4_t(b, sV + (j * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * LDS + dt * 8 + (lane >> 4) * 8);
#pragma unroll
                    for (int m = 0; m < MT; m++) {
                        mma16816(o[m][dt], pa[m], b[0], b[1]);
                        mma16816(o[m][dt + 1], pa[m], b[2], b[3]);
                    }
                }
            }
        }
        if (kt + NST * kAttnTile < len) {
            __syncthreads();
            bf16 *st = sKV + (it % NST) * STAGE;
            rows_async<D, kAttnTile>(st, kbase, ld, kt + NST * kAttnTile, len);
            rows_async<D, kAttnTile>(st + kAttnTile * LDS, vbase, ld, kt + NST * kAttnTile, len);
        }
        cp_async_commit();
    }
    cp_async_wait<0>();

    if (!active)
        return;
#pragma unroll
    for (int m = 0; m < MT; m++) {
        float l0 = l[m][0], l1 = l[m][1];
#pragma unroll
        for (int off = 1; off <= 2; off <<= 1) {
            l0 += __shfl_xor_sync(0xffffffffu, l0, off);
            l1 += __shfl_xor_sync(0xffffffffu, l1, off);
        }
        const float inv0 = 1.f / l0, inv1 = 1.f / l1;
        const int r0 = wrow + m * 16 + g, r1 = r0 + 8;
        bf16 *out0 = ctx + (size_t)(tile.start + r0) * hidden + head * D + 2 * t;
        bf16 *out1 = ctx + (size_t)(tile.start + r1) * hidden + head * D + 2 * t;
#pragma unroll
        for (int dt = 0; dt < DT; dt++) {
            if (r0 < len)
                *reinterpret_cast<__nv_bfloat162 *>(out0 + dt * 8) =
                    __floats2bfloat162_rn(o[m][dt][0] * inv0, o[m][dt][1] * inv0);
            if (r1 < len)
                *reinterpret_cast<__nv_bfloat162 *>(out1 + dt * 8) =
                    __floats2bfloat162_rn(o[m][dt][2] * inv1, o[m][dt][3] * inv1);
        }
    }
}

template <int D> void init()
{
    CK(cudaFuncSetAttribute(attn4_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)Cfg<D>::smem));
}

template <int D> void launch(const bf16 *qkv, bf16 *ctx, const AttnTile *tiles, int n_tiles, int heads)
{
    const float scale_log2 = (float)(1.4426950408889634 / sqrt((double)D));
    attn4_kernel<D><<<(unsigned)n_tiles * (unsigned)heads, kT, Cfg<D>::smem>>>(qkv, ctx, tiles, heads, scale_log2);
}

} // namespace v4

/* ---- v5 (lab): Hopper wgmma (sm_90a) --------------------------------------------------------------
 * v2 and v4 (mma.sync) both sit at ~160 TFLOP/s at B=64 S=256 on an H100 and ncu shows issue-bound
 * warps: every score costs ldmatrix + mma.sync + softmax instructions from the same warps. Here a
 * warpgroup (4 warps) owns 64 query rows and the tensor cores read Q, K and V straight from shared
 * memory (128B-swizzled rows of 64 bf16, written by cp.async): S = Q·Kᵀ is 4 wgmma m64n64k16 (both
 * operands K-major), P stays in registers as the A operand of O += P·V (V is the MN-major B operand,
 * transposed by the instruction). The accumulator layout of wgmma is mma.sync's, so the softmax is
 * v2's. Two warpgroups a block (128 query rows, v2's tiles), two blocks an SM. Head size 64 only. */
namespace v5 {

using splade_gpu::cp_async_commit;
using splade_gpu::cp_async_wait;
using splade_gpu::ex2_ftz;
using splade_gpu::pack_bf16;
using splade_gpu::smem_u32;

constexpr int D = 64;
constexpr int kWG = 2;
constexpr int kT = kWG * 128;
constexpr int QROWS = kWG * 64;
constexpr int NST = 4;
constexpr int ROWB = 128;                      /* bytes of a 64-element bf16 row */
constexpr int TILEB = kAttnTile * ROWB;        /* 8 KB: K or V of one key tile */
constexpr size_t smem = 1024 + (size_t)QROWS * ROWB + (size_t)NST * 2 * TILEB;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define V5_ENABLED 1
/* K-major (or, with the transpose flag, MN-major) operand of 128-byte rows, 128B swizzle, 8-row
 * atoms 1024 bytes apart (SBO); LBO unused (one atom wide). */
__device__ __forceinline__ uint64_t desc(uint32_t saddr)
{
    uint64_t d = (uint64_t)((saddr & 0x3FFFF) >> 4);
    d |= (uint64_t)1 << 16;
    d |= (uint64_t)(1024 >> 4) << 32;
    d |= (uint64_t)1 << 62;
    return d;
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
__device__ __forceinline__ void fence_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void fence_regs(float (&d)[32])
{
#pragma unroll
    for (int i = 0; i < 32; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

#define V5_D32                                                                                               \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                 \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define V5_OUT32(d)                                                                                          \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),          \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),           \
        "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),           \
        "+f"(d[30]), "+f"(d[31])

/* d (+)= A(desc) · B(desc), both K-major. */
__device__ __forceinline__ void mma_ss(float (&d)[32], uint64_t da, uint64_t db, int accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " V5_D32 ", %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : V5_OUT32(d)
                 : "l"(da), "l"(db), "r"(accumulate));
}
/* d += A(registers, mma.sync's A fragment per warp) · B(desc, MN-major: transposed). */
__device__ __forceinline__ void mma_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " V5_D32
                 ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
                 : V5_OUT32(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
#endif

/* rows [r0, r0+ROWS) of a head slice into swizzled smem, zero-filled at or past len */
template <int ROWS>
__device__ __forceinline__ void rows_async(uint32_t dst, const bf16 *src, size_t ld, int r0, int len)
{
#pragma unroll
    for (int c = threadIdx.x; c < ROWS * 8; c += kT) {
        const int r = c >> 3, cc = c & 7;
        const bool ok = r0 + r < len;
        const bf16 *p = ok ? src + (size_t)(r0 + r) * ld + cc * 8 : src;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst + r * ROWB + ((cc ^ (r & 7)) << 4)),
                     "l"(p), "r"(ok ? 16 : 0));
    }
}

__global__ void __launch_bounds__(kT, 2)
    attn5_kernel(const bf16 *__restrict__ qkv, bf16 *__restrict__ ctx, const AttnTile *__restrict__ tiles, int heads,
                 float scale_log2)
{
#ifdef V5_ENABLED
    constexpr int NT = kAttnTile / 8, DT = D / 8;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t sQ = base, sKV = base + QROWS * ROWB; /* stage i: K at sKV + 2i·TILEB, V after it */

    const int head = (int)(blockIdx.x % (unsigned)heads);
    const AttnTile tile = tiles[blockIdx.x / (unsigned)heads];
    const int hidden = heads * D;
    const size_t ld = 3 * (size_t)hidden;
    const bf16 *qbase = qkv + (size_t)tile.start * ld + head * D;
    const bf16 *kbase = qbase + hidden;
    const bf16 *vbase = qbase + 2 * hidden;
    const int len = tile.len;
    const int nkv = (len + kAttnTile - 1) / kAttnTile;
    const int wg = threadIdx.x >> 7, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const bool active = tile.q0 + wg * 64 < len; /* warpgroup-uniform */

    rows_async<QROWS>(sQ, qbase, ld, tile.q0, len);
#pragma unroll
    for (int i = 0; i < NST; i++) {
        if (i < nkv) {
            rows_async<kAttnTile>(sKV + 2 * i * TILEB, kbase, ld, i * kAttnTile, len);
            rows_async<kAttnTile>(sKV + (2 * i + 1) * TILEB, vbase, ld, i * kAttnTile, len);
        }
        cp_async_commit();
    }

    float o[32], s[32];
#pragma unroll
    for (int i = 0; i < 32; i++)
        o[i] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
    const uint64_t dq = desc(sQ + wg * 64 * ROWB);

    for (int it = 0; it < nkv; it++) {
        const int kt = it * kAttnTile;
        cp_async_wait<NST - 1>();
        fence_async(); /* this thread's copies, seen by the async proxy (wgmma) */
        __syncthreads();
        const uint32_t sK = sKV + 2 * (it % NST) * TILEB, sV = sK + TILEB;
        if (active) {
            const uint64_t dk = desc(sK);
            fence_regs(s);
            wg_fence();
#pragma unroll
            for (int k = 0; k < 4; k++)
                mma_ss(s, dq + 2 * k, dk + 2 * k, k);
            wg_commit();
            wg_wait0();
            fence_regs(s);
            if (kt + kAttnTile > len) {
#pragma unroll
                for (int nt = 0; nt < NT; nt++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        if (kt + nt * 8 + 2 * t + (e & 1) >= len)
                            s[4 * nt + e] = -INFINITY;
            }
            float mx0 = m0, mx1 = m1;
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                mx0 = fmaxf(mx0, fmaxf(s[4 * nt], s[4 * nt + 1]));
                mx1 = fmaxf(mx1, fmaxf(s[4 * nt + 2], s[4 * nt + 3]));
            }
#pragma unroll
            for (int off = 1; off <= 2; off <<= 1) {
                mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
                mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
            }
            const float a0 = ex2_ftz((m0 - mx0) * scale_log2), a1 = ex2_ftz((m1 - mx1) * scale_log2);
            m0 = mx0, m1 = mx1;
            const float ms0 = mx0 * scale_log2, ms1 = mx1 * scale_log2;
            float rs0 = 0.f, rs1 = 0.f;
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                s[4 * nt] = ex2_ftz(fmaf(s[4 * nt], scale_log2, -ms0));
                s[4 * nt + 1] = ex2_ftz(fmaf(s[4 * nt + 1], scale_log2, -ms0));
                s[4 * nt + 2] = ex2_ftz(fmaf(s[4 * nt + 2], scale_log2, -ms1));
                s[4 * nt + 3] = ex2_ftz(fmaf(s[4 * nt + 3], scale_log2, -ms1));
                rs0 += s[4 * nt] + s[4 * nt + 1];
                rs1 += s[4 * nt + 2] + s[4 * nt + 3];
            }
            l0 = l0 * a0 + rs0;
            l1 = l1 * a1 + rs1;
#pragma unroll
            for (int i = 0; i < DT; i++) {
                o[4 * i] *= a0, o[4 * i + 1] *= a0;
                o[4 * i + 2] *= a1, o[4 * i + 3] *= a1;
            }
            uint32_t pa[4][4];
#pragma unroll
            for (int j = 0; j < 4; j++) {
                pa[j][0] = pack_bf16(s[8 * j], s[8 * j + 1]);
                pa[j][1] = pack_bf16(s[8 * j + 2], s[8 * j + 3]);
                pa[j][2] = pack_bf16(s[8 * j + 4], s[8 * j + 5]);
                pa[j][3] = pack_bf16(s[8 * j + 6], s[8 * j + 7]);
            }
            fence_regs(o);
            wg_fence();
#pragma unroll
            for (int j = 0; j < 4; j++)
                mma_rs(o, pa[j], desc(sV + j * 2048));
            wg_commit();
            wg_wait0();
            fence_regs(o);
        }
        if (kt + NST * kAttnTile < len) {
            __syncthreads();
            const uint32_t st = sKV + 2 * (it % NST) * TILEB;
            rows_async<kAttnTile>(st, kbase, ld, kt + NST * kAttnTile, len);
            rows_async<kAttnTile>(st + TILEB, vbase, ld, kt + NST * kAttnTile, len);
        }
        cp_async_commit();
    }
    cp_async_wait<0>();

    if (!active)
        return;
#pragma unroll
    for (int off = 1; off <= 2; off <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, off);
        l1 += __shfl_xor_sync(0xffffffffu, l1, off);
    }
    const float inv0 = 1.f / l0, inv1 = 1.f / l1;
    const int r0 = tile.q0 + wg * 64 + warp * 16 + g, r1 = r0 + 8;
    bf16 *out0 = ctx + (size_t)(tile.start + r0) * hidden + head * D + 2 * t;
    bf16 *out1 = ctx + (size_t)(tile.start + r1) * hidden + head * D + 2 * t;
#pragma unroll
    for (int dt = 0; dt < DT; dt++) {
        if (r0 < len)
            *reinterpret_cast<__nv_bfloat162 *>(out0 + dt * 8) = __floats2bfloat162_rn(o[4 * dt] * inv0, o[4 * dt + 1] * inv0);
        if (r1 < len)
            *reinterpret_cast<__nv_bfloat162 *>(out1 + dt * 8) =
                __floats2bfloat162_rn(o[4 * dt + 2] * inv1, o[4 * dt + 3] * inv1);
    }
#endif
}

static bool g_ok = false;

static void init()
{
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    g_ok = prop.major == 9;
    if (g_ok)
        CK(cudaFuncSetAttribute(attn5_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
}

/* false: not run (not Hopper, or a head size other than 64) */
static bool launch(const bf16 *qkv, bf16 *ctx, const AttnTile *tiles, int n_tiles, int heads, int d)
{
    if (!g_ok || d != 64)
        return false;
    const float scale_log2 = (float)(1.4426950408889634 / sqrt((double)D));
    attn5_kernel<<<(unsigned)n_tiles * (unsigned)heads, kT, smem>>>(qkv, ctx, tiles, heads, scale_log2);
    return true;
}

} // namespace v5

/* ---- v6 (lab): v5 with the next tile's scores in flight during this tile's softmax ---------------
 * (FlashAttention-3's intra-warpgroup overlap): S(j+1) = Q·K(j+1)ᵀ is issued before the softmax of
 * S(j), and P(j)·V(j) runs while the next iteration waits for its tile; a second score register set
 * (v5 used 115 registers). Stage j-1 is refilled once every warpgroup has finished P(j-1)·V(j-1). */
namespace v6 {

using splade_gpu::cp_async_commit;
using splade_gpu::cp_async_wait;
using splade_gpu::ex2_ftz;
using splade_gpu::pack_bf16;
using splade_gpu::smem_u32;

using v5::D;
using v5::kWG;
using v5::kT;
using v5::QROWS;
using v5::NST;
using v5::ROWB;
using v5::TILEB;
using v5::rows_async;
constexpr size_t smem = 1024 + (size_t)QROWS * ROWB + (size_t)NST * 2 * TILEB;

#ifdef V5_ENABLED
#define V6_ENABLED 1
using v5::desc;
using v5::fence_async;
using v5::fence_regs;
using v5::mma_rs;
using v5::mma_ss;
using v5::wg_commit;
using v5::wg_fence;
using v5::wg_wait0;
#endif

#ifdef V6_ENABLED
__device__ __forceinline__ void issue_scores(float (&s)[32], uint64_t dq, uint32_t sK)
{
    const uint64_t dk = desc(sK);
    fence_regs(s);
    wg_fence();
#pragma unroll
    for (int k = 0; k < 4; k++)
        mma_ss(s, dq + 2 * k, dk + 2 * k, k);
    wg_commit();
}

/* Key tile j: its scores are in flight in `cur`; the next tile's go to `nxt`. */
__device__ __forceinline__ void step(int j, float (&cur)[32], float (&nxt)[32], float (&o)[32], float &m0, float &m1,
                                     float &l0, float &l1, uint64_t dq, uint32_t sKV, int nkv, int len, bool active,
                                     const bf16 *kbase, const bf16 *vbase, size_t ld, float scale_log2)
{
    constexpr int NT = kAttnTile / 8, DT = D / 8;
    const int t = threadIdx.x & 3;
    const int kt = j * kAttnTile;
    const bool more = j + 1 < nkv;
    /* tile j+1 resident (group j+1 below NST, else group j+2; one group a step). Past the last tile
     * the scores of a stale stage are computed and dropped: a wgmma under a branch would be
     * serialized by the compiler (ptxas C7518), and so would one skipped by inactive warpgroups,
     * which therefore run on their zero-filled query rows too (nothing of theirs is written). */
    if (more) {
        if (j + 1 < NST)
            cp_async_wait<NST - 2>();
        else
            cp_async_wait<NST - 3>();
        fence_async();
        __syncthreads();
    }
    issue_scores(nxt, dq, sKV + 2 * ((j + 1) % NST) * TILEB);
    {
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        fence_regs(cur);
        fence_regs(o);
        /* cur is only read here (its wgmma is done): the probabilities go straight into P's
         * fragments, so no accumulator register is redefined while the next scores are in flight */
        const bool partial = kt + kAttnTile > len;
        /* key e of n-tile nt is past the end? (only in a partial tile) */
#define V6_OUT(nt, e) (partial && kt + (nt) * 8 + 2 * t + ((e) & 1) >= len)
        float mx0 = m0, mx1 = m1;
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            mx0 = fmaxf(mx0, fmaxf(V6_OUT(nt, 0) ? -INFINITY : cur[4 * nt], V6_OUT(nt, 1) ? -INFINITY : cur[4 * nt + 1]));
            mx1 = fmaxf(mx1, fmaxf(V6_OUT(nt, 2) ? -INFINITY : cur[4 * nt + 2], V6_OUT(nt, 3) ? -INFINITY : cur[4 * nt + 3]));
        }
#pragma unroll
        for (int off = 1; off <= 2; off <<= 1) {
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
        }
        /* a row whose keys are all past the end keeps m = -inf: its factor must be 1, not NaN */
        const float a0 = mx0 == -INFINITY ? 1.f : ex2_ftz((m0 - mx0) * scale_log2);
        const float a1 = mx1 == -INFINITY ? 1.f : ex2_ftz((m1 - mx1) * scale_log2);
        m0 = mx0, m1 = mx1;
        const float ms0 = mx0 * scale_log2, ms1 = mx1 * scale_log2;
        float rs0 = 0.f, rs1 = 0.f;
        uint32_t pa[4][4];
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            const float e0 = V6_OUT(nt, 0) ? 0.f : ex2_ftz(fmaf(cur[4 * nt], scale_log2, -ms0));
            const float e1 = V6_OUT(nt, 1) ? 0.f : ex2_ftz(fmaf(cur[4 * nt + 1], scale_log2, -ms0));
            const float e2 = V6_OUT(nt, 2) ? 0.f : ex2_ftz(fmaf(cur[4 * nt + 2], scale_log2, -ms1));
            const float e3 = V6_OUT(nt, 3) ? 0.f : ex2_ftz(fmaf(cur[4 * nt + 3], scale_log2, -ms1));
            rs0 += e0 + e1;
            rs1 += e2 + e3;
            pa[nt >> 1][(nt & 1) * 2] = pack_bf16(e0, e1);
            pa[nt >> 1][(nt & 1) * 2 + 1] = pack_bf16(e2, e3);
        }
#undef V6_OUT
        l0 = l0 * a0 + rs0;
        l1 = l1 * a1 + rs1;
#pragma unroll
        for (int i = 0; i < DT; i++) {
            o[4 * i] *= a0, o[4 * i + 1] *= a0;
            o[4 * i + 2] *= a1, o[4 * i + 3] *= a1;
        }
        const uint32_t sV = sKV + (2 * (j % NST) + 1) * TILEB;
        fence_regs(o);
        wg_fence();
#pragma unroll
        for (int q = 0; q < 4; q++)
            mma_rs(o, pa[q], desc(sV + q * 2048));
        wg_commit();
    }
    /* stage j-1 is free once every warpgroup has finished P(j-1)·V(j-1) (waited for above) */
    if (j >= 1 && j - 1 + NST < nkv) {
        __syncthreads();
        const uint32_t st = sKV + 2 * ((j - 1) % NST) * TILEB;
        rows_async<kAttnTile>(st, kbase, ld, (j - 1 + NST) * kAttnTile, len);
        rows_async<kAttnTile>(st + TILEB, vbase, ld, (j - 1 + NST) * kAttnTile, len);
    }
    cp_async_commit();
}
#endif

__global__ void __launch_bounds__(kT, 2)
    attn6_kernel(const bf16 *__restrict__ qkv, bf16 *__restrict__ ctx, const AttnTile *__restrict__ tiles, int heads,
                 float scale_log2)
{
#ifdef V6_ENABLED
    constexpr int DT = D / 8;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t sQ = base, sKV = base + QROWS * ROWB; /* stage i: K at sKV + 2i·TILEB, V after it */

    const int head = (int)(blockIdx.x % (unsigned)heads);
    const AttnTile tile = tiles[blockIdx.x / (unsigned)heads];
    const int hidden = heads * D;
    const size_t ld = 3 * (size_t)hidden;
    const bf16 *qbase = qkv + (size_t)tile.start * ld + head * D;
    const bf16 *kbase = qbase + hidden;
    const bf16 *vbase = qbase + 2 * hidden;
    const int len = tile.len;
    const int nkv = (len + kAttnTile - 1) / kAttnTile;
    const int wg = threadIdx.x >> 7, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const bool active = tile.q0 + wg * 64 < len; /* warpgroup-uniform */

    rows_async<QROWS>(sQ, qbase, ld, tile.q0, len);
#pragma unroll
    for (int i = 0; i < NST; i++) {
        if (i < nkv) {
            rows_async<kAttnTile>(sKV + 2 * i * TILEB, kbase, ld, i * kAttnTile, len);
            rows_async<kAttnTile>(sKV + (2 * i + 1) * TILEB, vbase, ld, i * kAttnTile, len);
        }
        cp_async_commit();
    }

    float o[32], sa[32], sb[32];
#pragma unroll
    for (int i = 0; i < 32; i++)
        o[i] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
    const uint64_t dq = desc(sQ + wg * 64 * ROWB);

    cp_async_wait<NST - 1>(); /* Q and tile 0 */
    fence_async();
    __syncthreads();
    issue_scores(sa, dq, sKV);
    /* an even number of steps (the score buffers alternate): a step past the last tile has every key
     * masked, so it changes neither the running max, the sum nor O */
    for (int j = 0; j < nkv; j += 2) {
        step(j, sa, sb, o, m0, m1, l0, l1, dq, sKV, nkv, len, active, kbase, vbase, ld, scale_log2);
        step(j + 1, sb, sa, o, m0, m1, l0, l1, dq, sKV, nkv, len, active, kbase, vbase, ld, scale_log2);
    }
    wg_wait0();
    fence_regs(o);
    cp_async_wait<0>();

    if (!active)
        return;
#pragma unroll
    for (int off = 1; off <= 2; off <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, off);
        l1 += __shfl_xor_sync(0xffffffffu, l1, off);
    }
    const float inv0 = 1.f / l0, inv1 = 1.f / l1;
    const int r0 = tile.q0 + wg * 64 + warp * 16 + g, r1 = r0 + 8;
    bf16 *out0 = ctx + (size_t)(tile.start + r0) * hidden + head * D + 2 * t;
    bf16 *out1 = ctx + (size_t)(tile.start + r1) * hidden + head * D + 2 * t;
#pragma unroll
    for (int dt = 0; dt < DT; dt++) {
        if (r0 < len)
            *reinterpret_cast<__nv_bfloat162 *>(out0 + dt * 8) = __floats2bfloat162_rn(o[4 * dt] * inv0, o[4 * dt + 1] * inv0);
        if (r1 < len)
            *reinterpret_cast<__nv_bfloat162 *>(out1 + dt * 8) =
                __floats2bfloat162_rn(o[4 * dt + 2] * inv1, o[4 * dt + 3] * inv1);
    }
#endif
}

static bool g_ok = false;

static void init()
{
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    g_ok = prop.major == 9;
    if (g_ok)
        CK(cudaFuncSetAttribute(attn6_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
}

/* false: not run (not Hopper, or a head size other than 64) */
static bool launch(const bf16 *qkv, bf16 *ctx, const AttnTile *tiles, int n_tiles, int heads, int d)
{
    if (!g_ok || d != 64)
        return false;
    const float scale_log2 = (float)(1.4426950408889634 / sqrt((double)D));
    attn6_kernel<<<(unsigned)n_tiles * (unsigned)heads, kT, smem>>>(qkv, ctx, tiles, heads, scale_log2);
    return true;
}

} // namespace v6

/* ---- host -------------------------------------------------------------------------------------- */

static uint16_t f2bf(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
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
static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static double urand() /* [-1, 1) */
{
    g_rng ^= g_rng >> 12, g_rng ^= g_rng << 25, g_rng ^= g_rng >> 27;
    return ((g_rng * 2685821657736338717ull) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* Query rows per tile of each variant: the q0 step of the tile list it reads. */
static int q_rows(int v) { return v == 1 ? kAttnTile : v == 3 ? v3::kW * 16 : v == 4 ? v4::QROWS : v == 5 ? v5::QROWS : v == 6 ? v6::QROWS :  splade_gpu::attention_q_rows(); }

static std::vector<AttnTile> tile_list(const std::vector<int> &lens, int q)
{
    std::vector<AttnTile> t;
    int start = 0;
    for (int len : lens) {
        for (int q0 = 0; q0 < len; q0 += q)
            t.push_back(AttnTile{start, len, q0, 0});
        start += len;
    }
    return t;
}

static bool g_v7 = false; /* the library's wgmma kernel can run here */

/* The launcher: variant number -> kernel; false when the variant does not run this case (v5: head
 * size 64 on Hopper only). */
static bool run_variant(int v, const bf16 *qkv, bf16 *ctx, const AttnTile *tiles, int n_tiles, int heads, int d)
{
    if (v == 1) {
        if (d == 32)
            v1::launch<32>(qkv, ctx, tiles, n_tiles, heads);
        else if (d == 64)
            v1::launch<64>(qkv, ctx, tiles, n_tiles, heads);
        else
            v1::launch<128>(qkv, ctx, tiles, n_tiles, heads);
    } else if (v == 7) {
        if (!g_v7 || d != 64)
            return false;
        if (splade_gpu::attention_wgmma(qkv, ctx, tiles, n_tiles, heads, 0) != 0) {
            fprintf(stderr, "attention v7 failed\n");
            exit(2);
        }
    } else if (v == 6) {
        if (!v6::launch(qkv, ctx, tiles, n_tiles, heads, d))
            return false;
    } else if (v == 5) {
        if (!v5::launch(qkv, ctx, tiles, n_tiles, heads, d))
            return false;
    } else if (v == 4) {
        if (d == 32)
            v4::launch<32>(qkv, ctx, tiles, n_tiles, heads);
        else if (d == 64)
            v4::launch<64>(qkv, ctx, tiles, n_tiles, heads);
        else
            v4::launch<128>(qkv, ctx, tiles, n_tiles, heads);
    } else if (v == 3) {
        if (d == 32)
            v3::launch<32>(qkv, ctx, tiles, n_tiles, heads);
        else if (d == 64)
            v3::launch<64>(qkv, ctx, tiles, n_tiles, heads);
        else
            v3::launch<128>(qkv, ctx, tiles, n_tiles, heads);
    } else if (splade_gpu::attention(qkv, ctx, tiles, n_tiles, heads, d, 0) != 0) {
        fprintf(stderr, "attention v2 failed\n");
        exit(2);
    }
    CK(cudaGetLastError());
    return true;
}

struct Problem {
    int heads, d, T;
    std::vector<int> lens;
    bf16 *qkv = nullptr, *ctx = nullptr;
};

/* ctx in float64 from the bf16 qkv. */
static void cpu_reference(const std::vector<uint16_t> &qkv, const Problem &p, std::vector<double> &ref)
{
    const int H = p.heads * p.d;
    ref.assign((size_t)p.T * H, 0.0);
    std::vector<double> sc;
    int s0 = 0;
    for (int len : p.lens) {
        sc.resize(len);
        for (int h = 0; h < p.heads; h++)
            for (int i = 0; i < len; i++) {
                const uint16_t *q = &qkv[(size_t)(s0 + i) * 3 * H + h * p.d];
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < len; j++) {
                    const uint16_t *k = &qkv[(size_t)(s0 + j) * 3 * H + H + h * p.d];
                    double s = 0;
                    for (int e = 0; e < p.d; e++)
                        s += bf2d(q[e]) * bf2d(k[e]);
                    sc[j] = s / sqrt((double)p.d);
                    mx = std::max(mx, sc[j]);
                }
                for (int j = 0; j < len; j++)
                    sum += (sc[j] = exp(sc[j] - mx));
                for (int e = 0; e < p.d; e++) {
                    double o = 0;
                    for (int j = 0; j < len; j++)
                        o += sc[j] * bf2d(qkv[(size_t)(s0 + j) * 3 * H + 2 * H + h * p.d + e]);
                    ref[(size_t)(s0 + i) * H + h * p.d + e] = o / sum;
                }
            }
        s0 += len;
    }
}

/* Every element: |out - ref| <= tol + |ref|·eps (NaN fails: the output was poisoned first). */
static bool check(const char *name, const std::vector<uint16_t> &out, const std::vector<double> &ref, double tol,
                  double eps)
{
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < ref.size(); i++) {
        const double g = bf2d(out[i]), e = fabs(g - ref[i]);
        if (!(e <= tol + fabs(ref[i]) * eps)) {
            if (bad < 5)
                printf("      %s: ctx[%zu] = %.6g, reference %.6g\n", name, i, g, ref[i]);
            bad++;
        }
        if (e > worst || e != e)
            worst = e;
    }
    printf("    %-6s max |err| %.2e  %s (%zu of %zu outside %.0e + |ref|*%.0e)\n", name, worst, bad ? "FAIL" : "ok", bad,
           ref.size(), tol, eps);
    return bad == 0;
}

struct Case {
    int heads, d;
    std::vector<int> lens;
    const char *what;
};

static const Case kCases[] = {
    {4, 32, {2, 64, 37, 65, 1, 96, 128, 5}, "head size 32: lengths 1, 2 and tile edges"},
    {2, 64, {130, 2, 17, 63, 64, 129, 3}, "head size 64"},
    {2, 128, {80, 2, 33, 79, 191}, "head size 128 (3 K/V stages in v2)"},
    {2, 64, {512, 3, 300, 257}, "sequences longer than v2's ring of K/V stages (refills)"},
};

static bool validate(const std::vector<int> &variants)
{
    bool ok = true;
    for (const Case &c : kCases) {
        Problem p;
        p.heads = c.heads, p.d = c.d, p.lens = c.lens, p.T = 0;
        for (int len : c.lens)
            p.T += len;
        const int H = p.heads * p.d;
        std::vector<uint16_t> qkv((size_t)p.T * 3 * H), out((size_t)p.T * H);
        for (auto &x : qkv)
            x = f2bf((float)(1.7 * urand())); /* std ~1: scores of std ~1 after 1/sqrt(d) */
        std::vector<double> ref;
        cpu_reference(qkv, p, ref);
        CK(cudaMalloc(&p.qkv, qkv.size() * 2));
        CK(cudaMalloc(&p.ctx, out.size() * 2));
        CK(cudaMemcpy(p.qkv, qkv.data(), qkv.size() * 2, cudaMemcpyHostToDevice));
        printf("  heads %d x %d, %zu sequences, T=%d: %s\n", p.heads, p.d, p.lens.size(), p.T, c.what);
        for (int v : variants) {
            const std::vector<AttnTile> tl = tile_list(p.lens, q_rows(v));
            AttnTile *dt = nullptr;
            CK(cudaMalloc(&dt, tl.size() * sizeof(AttnTile)));
            CK(cudaMemcpy(dt, tl.data(), tl.size() * sizeof(AttnTile), cudaMemcpyHostToDevice));
            CK(cudaMemset(p.ctx, 0xff, out.size() * 2)); /* NaN: every element must be written */
            if (!run_variant(v, p.qkv, p.ctx, dt, (int)tl.size(), p.heads, p.d)) {
                printf("    v%d     not run (this head size or GPU)\n", v);
                CK(cudaFree(dt));
                continue;
            }
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(out.data(), p.ctx, out.size() * 2, cudaMemcpyDeviceToHost));
            char name[8];
            snprintf(name, sizeof name, "v%d", v);
            /* P rounded to bf16 for P·V and the bf16 output: a few 2^-9 of the value */
            ok &= check(name, out, ref, 1e-2, 2e-2);
            CK(cudaFree(dt));
        }
        CK(cudaFree(p.qkv));
        CK(cudaFree(p.ctx));
    }
    return ok;
}

__global__ void fill_kernel(bf16 *x, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        x[i] = __float2bfloat16(((h & 0xffffff) * (1.f / 16777216.f) - 0.5f) * 3.4f);
    }
}

static void time_shape(const std::vector<int> &variants, int B, int S, int heads, int d, int reps)
{
    const int H = heads * d, T = B * S;
    bf16 *qkv, *ctx;
    CK(cudaMalloc(&qkv, (size_t)T * 3 * H * 2));
    CK(cudaMalloc(&ctx, (size_t)T * H * 2));
    fill_kernel<<<1024, 256>>>(qkv, (size_t)T * 3 * H, 7);
    const std::vector<int> lens(B, S);
    /* QK^T and P·V: 4·B·S²·H FLOPs */
    const double gflop = 4.0 * B * (double)S * S * H / 1e9;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int v : variants) {
        const std::vector<AttnTile> tl = tile_list(lens, q_rows(v));
        AttnTile *dt = nullptr;
        CK(cudaMalloc(&dt, tl.size() * sizeof(AttnTile)));
        CK(cudaMemcpy(dt, tl.data(), tl.size() * sizeof(AttnTile), cudaMemcpyHostToDevice));
        std::vector<float> ms;
        for (int r = 0; r < reps + 3; r++) {
            CK(cudaEventRecord(e0));
            const bool ran = run_variant(v, qkv, ctx, dt, (int)tl.size(), heads, d);
            CK(cudaEventRecord(e1));
            if (!ran)
                break;
            CK(cudaEventSynchronize(e1));
            float t;
            CK(cudaEventElapsedTime(&t, e0, e1));
            if (r >= 3)
                ms.push_back(t);
        }
        if (ms.empty()) {
            CK(cudaFree(dt));
            continue;
        }
        std::sort(ms.begin(), ms.end());
        const float med = ms[ms.size() / 2];
        printf("| %d | %d | %d x %d | v%d | %.4f | %.4f | %.0f |\n", B, S, heads, d, v, med, 12 * med, gflop / med);
        CK(cudaFree(dt));
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaFree(qkv));
    CK(cudaFree(ctx));
}

int main(int argc, char **argv)
{
    std::vector<int> variants;
    int B = 0, S = 0, heads = 12, d = 64, reps = 20, do_check = 1, do_time = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const bool val = i + 1 < argc;
        if (!strcmp(a, "--B") && val)
            B = atoi(argv[++i]);
        else if (!strcmp(a, "--S") && val)
            S = atoi(argv[++i]);
        else if (!strcmp(a, "--heads") && val)
            heads = atoi(argv[++i]);
        else if (!strcmp(a, "--d") && val)
            d = atoi(argv[++i]);
        else if (!strcmp(a, "--reps") && val)
            reps = std::max(1, atoi(argv[++i]));
        else if (!strcmp(a, "--no-check"))
            do_check = 0;
        else if (!strcmp(a, "--no-time"))
            do_time = 0;
        else if (a[0] >= '1' && a[0] <= '7' && !a[1])
            variants.push_back(a[0] - '0');
        else {
            fprintf(stderr, "usage: %s [1|2|3|4|5|6|7 ...] [--B n --S n --heads n --d 32|64|128] [--reps n] [--no-check] "
                            "[--no-time]\n", argv[0]);
            return 2;
        }
    }
    if (d != 32 && d != 64 && d != 128) {
        fprintf(stderr, "attention: head size %d (32, 64 or 128)\n", d);
        return 2;
    }
    if (variants.empty())
        variants = {1, 2, 3, 4, 5, 6, 7};
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("attention: no CUDA device\n");
        return 2;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("attention lab: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    for (int hd : {32, 64, 128})
        if (splade_gpu::attention_init(hd) != 0)
            return 2;
    v1::init<32>();
    v1::init<64>();
    v1::init<128>();
    v3::init<32>();
    v3::init<64>();
    v3::init<128>();
    v4::init<32>();
    v4::init<64>();
    v4::init<128>();
    v5::init();
    v6::init();
    if (splade_gpu::attention_wgmma_init(64, &g_v7) != 0)
        return 2;
    bool ok = true;
    if (do_check) {
        printf("check: every output element against a float64 CPU reference (output poisoned with NaN first)\n");
        ok = validate(variants);
    }
    if (do_time) {
        printf("\ntiming: one layer, median of %d launches after 3 warm-ups (cudaEvent); x12 = bert-base's 12 "
               "layers; TFLOP/s = 4·B·S²·H / time\n\n| B | S | heads x d | variant | ms | ms x12 | TFLOP/s |\n"
               "|---|---|---|---|---|---|---|\n", reps);
        if (B > 0 && S > 0)
            time_shape(variants, B, S, heads, d, reps);
        else {
            time_shape(variants, 128, 256, 12, 64, reps);
            time_shape(variants, 32, 512, 12, 64, reps);
        }
    }
    printf("\nattention lab: %s\n", ok ? "all checked variants passed" : "CHECK FAILED");
    return ok ? 0 : 1;
}
