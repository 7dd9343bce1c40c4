/* Packed variable-length self-attention in fp32 (SPLADE_PRECISION_FP32): plain FMAs, no tensor
 * cores, so that the GPU reproduces the fp32 CPU forward (attention_cpu.c) to rounding.
 *
 * One block of 8 warps per (tile of 64 query rows of one sequence, head); each warp owns 8
 * query rows. The block's Q rows sit in shared memory; keys and values stream through shared
 * memory 32 rows at a time. For each key tile a lane scores one key against the warp's 8 rows
 * (float4 reads: Q broadcast, K rows padded by 4 floats so a quarter-warp hits distinct banks),
 * then an online softmax (running max and sum per row, expf) rescales the accumulators and each
 * lane adds p·V for its D/32 output columns. Nothing of size [S, S] exists anywhere; keys past
 * the sequence's end are masked (-inf), rows past it are computed on zeros and not stored.
 * Shared memory: (64·D + 32·(D+4) + 32·D) floats = 17 / 33 / 65 KiB at D = 32 / 64 / 128. */
#include <math.h>

#include "common/fail.h"
#include "encoder/gpu_kernels.cuh"
#include "gpu/cuda_check.h"

namespace splade_gpu {

namespace {

constexpr int kQRows = 64;                  // query rows per block (the tile list's q0 step)
constexpr int kWarpsF = 8;
constexpr int kRowsPerWarp = kQRows / kWarpsF;  // 8
constexpr int kThreadsF = kWarpsF * 32;
constexpr int kKeys = 32;                   // keys per shared-memory tile (one per lane)

template <int D>
struct F32Smem {
    static constexpr int LDK = D + 4;
    static constexpr size_t floats = (size_t)kQRows * D + (size_t)kKeys * LDK + (size_t)kKeys * D;
    static constexpr size_t bytes = floats * sizeof(float);
};

__device__ __forceinline__ float warp_max_f(float x)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

__device__ __forceinline__ float warp_sum_f(float x)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

/* rows [r0, r0 + NR) of one head slice (global row stride ld floats, D columns) into smem with
 * row stride LDS; rows at or past len become zeros. */
template <int D, int NR, int LDS>
__device__ __forceinline__ void load_rows_f32(float *dst, const float *src, size_t ld, int r0, int len)
{
    constexpr int C4 = D / 4;
    for (int idx = threadIdx.x; idx < NR * C4; idx += kThreadsF) {
        const int r = idx / C4, c = idx % C4;
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (r0 + r < len)
            v = *reinterpret_cast<const float4 *>(src + (size_t)(r0 + r) * ld + 4 * c);
        *reinterpret_cast<float4 *>(dst + r * LDS + 4 * c) = v;
    }
}

template <int D>
__global__ void __launch_bounds__(kThreadsF)
    attn_f32_kernel(const float *__restrict__ qkv, float *__restrict__ ctx, const AttnTile *__restrict__ tiles,
                    int heads, float scale)
{
    constexpr int LDK = F32Smem<D>::LDK;
    constexpr int DC = D / 32;  // output columns per lane
    extern __shared__ float4 smem_f4[];
    float *sQ = reinterpret_cast<float *>(smem_f4);
    float *sK = sQ + kQRows * D;
    float *sV = sK + kKeys * LDK;

    const int head = (int)(blockIdx.x % (unsigned)heads);
    const AttnTile tile = tiles[blockIdx.x / (unsigned)heads];
    const int hidden = heads * D;
    const size_t ld = (size_t)3 * hidden;
    const int len = tile.len;
    const float *qbase = qkv + (size_t)tile.start * ld + (size_t)head * D;
    const float *kbase = qbase + hidden;
    const float *vbase = qbase + 2 * hidden;

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int row0 = tile.q0 + warp * kRowsPerWarp;  // this warp's first query row (sequence-relative)
    const bool active = row0 < len;                   // warp-uniform

    load_rows_f32<D, kQRows, D>(sQ, qbase, ld, tile.q0, len);

    float o[kRowsPerWarp][DC], m[kRowsPerWarp], l[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; r++) {
        m[r] = -INFINITY;
        l[r] = 0.f;
#pragma unroll
        for (int i = 0; i < DC; i++)
            o[r][i] = 0.f;
    }

    for (int kt = 0; kt < len; kt += kKeys) {
        __syncthreads();  // every warp is done with the previous K/V tile (and sQ is complete)
        load_rows_f32<D, kKeys, LDK>(sK, kbase, ld, kt, len);
        load_rows_f32<D, kKeys, D>(sV, vbase, ld, kt, len);
        __syncthreads();
        if (!active)
            continue;
        /* scores: lane j against key kt + j, for the warp's 8 rows */
        float s[kRowsPerWarp];
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; r++)
            s[r] = 0.f;
        const float *krow = sK + lane * LDK;
        const float *qrow = sQ + (size_t)(warp * kRowsPerWarp) * D;
#pragma unroll 4
        for (int e = 0; e < D; e += 4) {
            const float4 k4 = *reinterpret_cast<const float4 *>(krow + e);
#pragma unroll
            for (int r = 0; r < kRowsPerWarp; r++) {
                const float4 q4 = *reinterpret_cast<const float4 *>(qrow + r * D + e);
                s[r] = fmaf(q4.x, k4.x, s[r]);
                s[r] = fmaf(q4.y, k4.y, s[r]);
                s[r] = fmaf(q4.z, k4.z, s[r]);
                s[r] = fmaf(q4.w, k4.w, s[r]);
            }
        }
        const bool key_ok = kt + lane < len;
        /* online softmax; key kt (lane 0) is always valid, so every new max is finite */
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; r++) {
            const float sc = key_ok ? s[r] * scale : -INFINITY;
            const float m_new = fmaxf(m[r], warp_max_f(sc));
            const float alpha = expf(m[r] - m_new);  // m = -inf at the first tile: 0
            const float p = key_ok ? expf(sc - m_new) : 0.f;
            l[r] = l[r] * alpha + warp_sum_f(p);
            m[r] = m_new;
#pragma unroll
            for (int i = 0; i < DC; i++)
                o[r][i] *= alpha;
            s[r] = p;
        }
        const int nk = len - kt < kKeys ? len - kt : kKeys;  // warp-uniform
        for (int j = 0; j < nk; j++) {
            float v[DC];
#pragma unroll
            for (int i = 0; i < DC; i++)
                v[i] = sV[j * D + lane + 32 * i];
#pragma unroll
            for (int r = 0; r < kRowsPerWarp; r++) {
                const float pj = __shfl_sync(0xffffffffu, s[r], j);
#pragma unroll
                for (int i = 0; i < DC; i++)
                    o[r][i] = fmaf(pj, v[i], o[r][i]);
            }
        }
    }
    if (!active)
        return;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; r++) {
        const int row = row0 + r;
        if (row < len) {
            const float inv = 1.f / l[r];
            float *out = ctx + (size_t)(tile.start + row) * hidden + (size_t)head * D;
#pragma unroll
            for (int i = 0; i < DC; i++)
                out[lane + 32 * i] = o[r][i] * inv;
        }
    }
}

template <int D>
int init_f32()
{
    CUDA_TRY(cudaFuncSetAttribute(attn_f32_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  (int)F32Smem<D>::bytes));
    return SPLADE_OK;
}

template <int D>
int launch_f32(const float *qkv, float *ctx, const AttnTile *tiles, int n_tiles, int heads, cudaStream_t s)
{
    const float scale = 1.0f / sqrtf((float)D);  // as attention_cpu's caller (forward_cpu.c)
    attn_f32_kernel<D><<<(unsigned)n_tiles * (unsigned)heads, kThreadsF, F32Smem<D>::bytes, s>>>(qkv, ctx, tiles,
                                                                                                 heads, scale);
    CUDA_TRY_LAUNCH();
    return SPLADE_OK;
}

}  // namespace

int attention_f32_q_rows() { return kQRows; }

int attention_f32_init(int head_dim)
{
    switch (head_dim) {
    case 32: return init_f32<32>();
    case 64: return init_f32<64>();
    case 128: return init_f32<128>();
    default: return splade_fail(SPLADE_ERR_UNSUPPORTED, "gpu encoder: fp32 attention head size %d", head_dim);
    }
}

int attention_f32(const float *qkv, float *ctx, const AttnTile *tiles, int n_tiles, int heads, int head_dim,
                  cudaStream_t s)
{
    if (n_tiles <= 0)
        return SPLADE_OK;
    if (heads <= 0 || (long long)n_tiles * heads > 0x7fffffffLL)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "gpu encoder: %d attention tiles x %d heads", n_tiles, heads);
    switch (head_dim) {
    case 32: return launch_f32<32>(qkv, ctx, tiles, n_tiles, heads, s);
    case 64: return launch_f32<64>(qkv, ctx, tiles, n_tiles, heads, s);
    case 128: return launch_f32<128>(qkv, ctx, tiles, n_tiles, heads, s);
    default: return splade_fail(SPLADE_ERR_UNSUPPORTED, "gpu encoder: fp32 attention head size %d", head_dim);
    }
}

}  // namespace splade_gpu
