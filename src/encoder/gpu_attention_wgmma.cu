/* Packed variable-length self-attention on Hopper's warpgroup MMA (wgmma, sm_90a), head size 64:
 * the GPU encoder's attention on H100/H200 (gpu_kernels.cuh: attention_wgmma()). Same inputs,
 * tile list (128 query rows of one sequence a block) and outputs as the mma.sync kernel in
 * gpu_attention.cu, which stays the path for other head sizes, other GPUs and SPLADE_GPU_ATTN=mma.
 *
 * Why: the mma.sync kernel runs at ~160 TFLOP/s useful at the build's batches on an H100 and ncu
 * shows its warps issue-bound (every score costs ldmatrix + mma.sync + softmax instructions from the
 * same warps; FlashAttention-2's warp shape and a persistent grid measured no better). Here a
 * warpgroup (4 warps) owns 64 query rows and the tensor cores read Q, K and V straight from shared
 * memory: S = Q·Kᵀ for 128 keys is 4 wgmma m64n128k16 (both operands K-major), the probabilities stay
 * in registers as the A operand of O += P·V (8 wgmma m64n64k16, V the MN-major B operand, transposed
 * by the instruction). 212 against 162 TFLOP/s at B=64 S=256 on an H100 (-24% time), 238 against
 * 176 at B=128 (tools/kernel_lab/attention.cu v7, bench/results/gpu-attention-wgmma-2026-11-26.md).
 *
 * The rest is the mma.sync kernel's: K/V tiles (here of 128 keys) through a ring of shared-memory
 * stages filled by cp.async (all issued up front, refilled for sequences past 256 keys), rows past
 * the sequence's end zero-filled and their keys masked in the last tile, the online softmax with the
 * running max in raw score units and ex2.approx, P rounded to bf16 for the P·V product, fp32
 * accumulation. wgmma's accumulator layout is mma.sync's (each warp 16 rows, each n8 block four
 * registers), so the softmax and the output writes are the same code in effect. Tried and not kept
 * (same lab): 64-key tiles (v5, 186 TFLOP/s), the next tile's scores in flight during the softmax
 * (v6: ptxas serialises the wgmma, C7515), one barrier for all resident tiles (v8: spills). */
#include <cuda_bf16.h>
#include <math.h>

#include "common/fail.h"
#include "encoder/gpu_attention_common.cuh"
#include "encoder/gpu_kernels.cuh"
#include "gpu/cuda_check.h"
#include "gpu/wgmma.cuh"

namespace splade_gpu {

namespace {

constexpr int kD = 64;                    /* head size */
constexpr int kKeys = 128;                /* keys a tile */
constexpr int kWarpgroups = 2;            /* 64 query rows each */
constexpr int kThreads = kWarpgroups * 128;
constexpr int kQRows = kWarpgroups * 64;  /* = attention_q_rows(): the same tile list */
constexpr int kStages = 2;                /* 256 keys resident: BERT-length documents need no refill */
constexpr int kRowBytes = kD * 2;
constexpr int kTileBytes = kKeys * kRowBytes;
constexpr size_t kSmem = 1024 + (size_t)kQRows * kRowBytes + (size_t)kStages * 2 * kTileBytes;
static_assert(kRowBytes == 128, "the swizzled layout of src/gpu/wgmma.cuh holds rows of 128 bytes");

#ifdef SPLADE_WGMMA_ARCH /* device helpers of the sm_90a kernel (the sm_80 pass compiles it empty) */
using attn::cp_async_commit;
using attn::cp_async_wait;

/* Rows [r0, r0+ROWS) of a head slice into a swizzled tile at dst, zero-filled at or past len. */
template <int ROWS>
__device__ __forceinline__ void rows_async(uint32_t dst, const bf16 *src, size_t ld, int r0, int len)
{
#pragma unroll
    for (int c = threadIdx.x; c < ROWS * 8; c += kThreads) {
        const int r = c >> 3, cc = c & 7;
        const bool ok = r0 + r < len;
        const bf16 *p = ok ? src + (size_t)(r0 + r) * ld + cc * 8 : src;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst + splade_wg::swz(r, cc)), "l"(p),
                     "r"(ok ? 16 : 0));
    }
}
#endif

__global__ void __launch_bounds__(kThreads, 2)
    attn_wgmma_kernel(const bf16 *__restrict__ qkv, bf16 *__restrict__ ctx, const AttnTile *__restrict__ tiles,
                      int heads, float scale_log2)
{
#ifdef SPLADE_WGMMA_ARCH
    namespace wg = splade_wg;
    constexpr int NT = kKeys / 8, DT = kD / 8;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const uint32_t base = (attn::smem_u32(smem_raw) + 1023) & ~1023u; /* swizzle atoms are 1024-aligned */
    const uint32_t sQ = base, sKV = base + kQRows * kRowBytes;   /* stage i: K, then V */

    const int head = (int)(blockIdx.x % (unsigned)heads);
    const AttnTile tile = tiles[blockIdx.x / (unsigned)heads];
    const int hidden = heads * kD;
    const size_t ld = 3 * (size_t)hidden;
    const bf16 *qbase = qkv + (size_t)tile.start * ld + head * kD;
    const bf16 *kbase = qbase + hidden;
    const bf16 *vbase = qbase + 2 * hidden;
    const int len = tile.len;
    const int nkv = (len + kKeys - 1) / kKeys;
    const int wgi = threadIdx.x >> 7, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const bool active = tile.q0 + wgi * 64 < len; /* warpgroup-uniform */

    // group i = key tile i (group 0 also carries Q); always kStages groups, some maybe empty
    rows_async<kQRows>(sQ, qbase, ld, tile.q0, len);
#pragma unroll
    for (int i = 0; i < kStages; i++) {
        if (i < nkv) {
            rows_async<kKeys>(sKV + 2 * i * kTileBytes, kbase, ld, i * kKeys, len);
            rows_async<kKeys>(sKV + (2 * i + 1) * kTileBytes, vbase, ld, i * kKeys, len);
        }
        cp_async_commit();
    }

    float o[32], s[64];
#pragma unroll
    for (int i = 0; i < 32; i++)
        o[i] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
    const uint64_t dq = wg::desc128(sQ + wgi * 64 * kRowBytes);

    for (int it = 0; it < nkv; it++) {
        const int kt = it * kKeys;
        cp_async_wait<kStages - 1>(); // groups 0..it are complete
        wg::fence_proxy_async();
        __syncthreads();
        const uint32_t sK = sKV + 2 * (it % kStages) * kTileBytes, sV = sK + kTileBytes;
        if (active) {
            const uint64_t dk = wg::desc128(sK);
            wg::fence_regs(s);
            wg::fence();
#pragma unroll
            for (int k = 0; k < 4; k++)
                wg::mma_m64n128k16_ss(s, dq + 2 * k, dk + 2 * k, k);
            wg::commit();
            wg::wait<0>();
            wg::fence_regs(s);
            float a0, a1; // s and o seen as [n8 block][4]: the layout of gpu_attention_common.cuh
            attn::softmax_step(*reinterpret_cast<float(*)[NT][4]>(s), kt, len, t, scale_log2, m0, m1, l0, l1, a0, a1);
            attn::scale_rows(*reinterpret_cast<float(*)[DT][4]>(o), a0, a1);
            uint32_t pa[kKeys / 16][4]; // P's A fragments for the 8 k16 steps
#pragma unroll
            for (int j = 0; j < kKeys / 16; j++)
                attn::p_fragment(*reinterpret_cast<float(*)[NT][4]>(s), j, pa[j]);
            wg::fence_regs(o);
            wg::fence();
#pragma unroll
            for (int j = 0; j < kKeys / 16; j++) // V rows 16j.. = two 8-row atoms, 2048 bytes a step
                wg::mma_m64n64k16_rs_tb(o, pa[j], wg::desc128(sV + j * 2048));
            wg::commit();
            wg::wait<0>();
            wg::fence_regs(o);
        }
        // refill this stage with tile it+kStages (block-uniform condition); always commit a group
        if (kt + kStages * kKeys < len) {
            __syncthreads(); // every warpgroup is done with this stage
            const uint32_t st = sKV + 2 * (it % kStages) * kTileBytes;
            rows_async<kKeys>(st, kbase, ld, kt + kStages * kKeys, len);
            rows_async<kKeys>(st + kTileBytes, vbase, ld, kt + kStages * kKeys, len);
        }
        cp_async_commit();
    }
    cp_async_wait<0>(); // no copy may be in flight when the block exits (only empty groups remain)

    if (active)
        attn::write_rows(*reinterpret_cast<const float(*)[DT][4]>(o), l0, l1, ctx, tile.start,
                         tile.q0 + wgi * 64 + warp * 16 + g, len, hidden, head * kD + 2 * t);
#endif
}

}  // namespace

int attention_wgmma_init(int head_dim, bool *usable)
{
    *usable = false;
    int yes = 0;
    if (head_dim != kD)
        return SPLADE_OK;
    if (int rc = splade_wg::present(&yes))
        return rc;
    if (!yes)
        return SPLADE_OK;
    CUDA_TRY(cudaFuncSetAttribute(attn_wgmma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kSmem));
    *usable = true;
    return SPLADE_OK;
}

int attention_wgmma(const bf16 *qkv, bf16 *ctx, const AttnTile *tiles, int n_tiles, int heads, cudaStream_t s)
{
    if (n_tiles <= 0)
        return SPLADE_OK;
    if ((long long)n_tiles * heads > 0x7fffffffLL)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "gpu encoder: %d attention tiles x %d heads", n_tiles, heads);
    const float scale_log2 = (float)(1.4426950408889634 / sqrt((double)kD));
    attn_wgmma_kernel<<<(unsigned)n_tiles * (unsigned)heads, kThreads, kSmem, s>>>(qkv, ctx, tiles, heads, scale_log2);
    CUDA_TRY_LAUNCH();
    return SPLADE_OK;
}

}  // namespace splade_gpu
