/* Packed variable-length self-attention, flash style, on bf16 tensor cores (mma.sync m16n8k16,
 * sm_80+): the GPU encoder's attention (gpu_kernels.cuh: attention()).
 *
 * One block of 8 warps per (128 query rows of one sequence, head); each warp owns 16 query rows,
 * its Q fragments in registers. Key/value tiles of 64 rows go through a ring of NST shared-memory
 * stages, all issued up front with cp.async (one commit group per tile), so for S <= 64·NST the
 * block waits for global memory once; longer sequences refill a stage once every warp is done
 * with it. Scores stay in registers (QK^T -> online softmax with running max and sum -> P·V), so
 * no [heads, S, S] tensor exists anywhere. Keys past the sequence's end are masked (on the last,
 * partial tile only); warps whose rows all lie past it skip the math; with packed sequences there
 * is no padding to skip. fp32 accumulation; P is rounded to bf16 for the P·V product (as in
 * FlashAttention-2). The previous kernel (v1: 4 warps, 64 query rows, K/V double buffered) and its
 * timings: tools/kernel_lab/attention.cu. */
#include <cuda_bf16.h>
#include <math.h>

#include "common/fail.h"
#include "encoder/gpu_attention_common.cuh"
#include "encoder/gpu_kernels.cuh"
#include "gpu/cuda_check.h"

namespace splade_gpu {

namespace {

using attn::smem_u32;

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

__device__ __forceinline__ void ldsm_x4_t(uint32_t (&r)[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

/* c += a(16x16, row) * b(16x8, col), bf16 in, fp32 accumulate. */
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

using attn::cp_async_commit;
using attn::cp_async_wait;
using attn::pack_bf16;

/* ---- the kernel (v2) ---------------------------------------------------------------------------
 * Q rides in the first commit group; K/V come from L2/DRAM once per 128 queries (v1: 64).
 * Softmax: the running max stays in raw score units and p = 2^(s·c − m·c) is one FFMA + one
 * ex2.approx.ftz. Blocks are numbered head-fastest (block = tile·heads + head) so concurrently
 * running blocks read whole rows of the packed QKV buffer. */
constexpr int kW2 = 8;
constexpr int kT2 = kW2 * 32;

using attn::ex2_ftz;

template <int D>
struct V2 {
    static constexpr int NST = D >= 128 ? 3 : 4;
    static constexpr int LDS = D + 8;
    static constexpr int MINB = D >= 128 ? 1 : 2;
    static constexpr size_t smem = (size_t)(kW2 * 16 + NST * 2 * kAttnTile) * LDS * sizeof(bf16);
};

/* rows [r0, r0+ROWS) of a head slice into smem (row stride D+8), zero-filled at or past len */
template <int D, int ROWS>
__device__ __forceinline__ void load_rows_async(bf16 *dst, const bf16 *src, size_t ld, int r0, int len)
{
    constexpr int CPR = D / 8;
    constexpr int LDS = D + 8;
#pragma unroll
    for (int c = threadIdx.x; c < ROWS * CPR; c += kT2) {
        const int r = c / CPR, cc = c % CPR;
        const bool ok = r0 + r < len;
        const bf16 *p = ok ? src + (size_t)(r0 + r) * ld + cc * 8 : src;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst + r * LDS + cc * 8)),
                     "l"(p), "r"(ok ? 16 : 0));
    }
}

template <int D>
__global__ void __launch_bounds__(kT2, V2<D>::MINB)
    attn2_kernel(const bf16 *__restrict__ qkv, bf16 *__restrict__ ctx, const AttnTile *__restrict__ tiles,
                 int heads, float scale_log2)
{
    constexpr int NST = V2<D>::NST;
    constexpr int LDS = V2<D>::LDS;
    constexpr int KS = D / 16;
    constexpr int DT = D / 8;
    constexpr int NT = kAttnTile / 8;
    constexpr int STAGE = 2 * kAttnTile * LDS;  // [K | V] of one stage
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16 *sQ = reinterpret_cast<bf16 *>(smem_raw);
    bf16 *sKV = sQ + kW2 * 16 * LDS;

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
    const bool active = tile.q0 + warp * 16 < len;  // warp-uniform

    // prologue: group i = tile i (group 0 also carries Q); always NST groups, some maybe empty
    load_rows_async<D, kW2 * 16>(sQ, qbase, ld, tile.q0, len);
#pragma unroll
    for (int i = 0; i < NST; i++) {
        if (i < nkv) {
            load_rows_async<D, kAttnTile>(sKV + i * STAGE, kbase, ld, i * kAttnTile, len);
            load_rows_async<D, kAttnTile>(sKV + i * STAGE + kAttnTile * LDS, vbase, ld, i * kAttnTile, len);
        }
        cp_async_commit();
    }

    uint32_t qf[KS][4];
    float o[DT][4];
#pragma unroll
    for (int i = 0; i < DT; i++)
        o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;

    for (int it = 0; it < nkv; it++) {
        const int kt = it * kAttnTile;
        cp_async_wait<NST - 1>();  // groups 0..it are complete
        __syncthreads();
        const bf16 *sK = sKV + (it % NST) * STAGE;
        const bf16 *sV = sK + kAttnTile * LDS;
        if (active) {
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
            float a0, a1;
            attn::softmax_step(s, kt, len, t, scale_log2, m0, m1, l0, l1, a0, a1);
            attn::scale_rows(o, a0, a1);
#pragma unroll
            for (int j = 0; j < kAttnTile / 16; j++) {
                uint32_t a[4];
                attn::p_fragment(s, j, a);
#pragma unroll
                for (int dt = 0; dt < DT; dt += 2) {
                    uint32_t b[4];
                    ldsm_x4_t(b, sV + (j * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * LDS + dt * 8 + (lane >> 4) * 8);
                    mma16816(o[dt], a, b[0], b[1]);
                    mma16816(o[dt + 1], a, b[2], b[3]);
                }
            }
        }
        // refill this stage with tile it+NST (block-uniform condition); always commit a group
        if (kt + NST * kAttnTile < len) {
            __syncthreads();  // every warp is done with this stage
            bf16 *st = sKV + (it % NST) * STAGE;
            load_rows_async<D, kAttnTile>(st, kbase, ld, kt + NST * kAttnTile, len);
            load_rows_async<D, kAttnTile>(st + kAttnTile * LDS, vbase, ld, kt + NST * kAttnTile, len);
        }
        cp_async_commit();
    }
    cp_async_wait<0>();  // no copy may be in flight when the block exits (only empty groups remain)

    if (active)
        attn::write_rows(o, l0, l1, ctx, tile.start, tile.q0 + warp * 16 + g, len, hidden, head * D + 2 * t);
}

template <int D>
int init_one()
{
    CUDA_TRY(cudaFuncSetAttribute(attn2_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)V2<D>::smem));
    return SPLADE_OK;
}

template <int D>
int launch(const bf16 *qkv, bf16 *ctx, const AttnTile *tiles, int n_tiles, int heads, cudaStream_t s)
{
    const float scale_log2 = (float)(1.4426950408889634 / sqrt((double)D));
    attn2_kernel<D><<<(unsigned)n_tiles * (unsigned)heads, kT2, V2<D>::smem, s>>>(qkv, ctx, tiles, heads, scale_log2);
    CUDA_TRY_LAUNCH();
    return SPLADE_OK;
}

}  // namespace

int attention_q_rows() { return kW2 * 16; }

bool attention_supports(int head_dim) { return head_dim == 32 || head_dim == 64 || head_dim == 128; }

int attention_init(int head_dim)
{
    switch (head_dim) {
    case 32: return init_one<32>();
    case 64: return init_one<64>();
    case 128: return init_one<128>();
    default: return splade_fail(SPLADE_ERR_UNSUPPORTED, "gpu encoder: attention head size %d", head_dim);
    }
}

int attention(const bf16 *qkv, bf16 *ctx, const AttnTile *tiles, int n_tiles, int heads, int head_dim,
              cudaStream_t s)
{
    if (n_tiles <= 0)
        return SPLADE_OK;
    if (heads > 65535 || (long long)n_tiles * heads > 0x7fffffffLL)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "gpu encoder: %d attention tiles x %d heads", n_tiles, heads);
    switch (head_dim) {
    case 32: return launch<32>(qkv, ctx, tiles, n_tiles, heads, s);
    case 64: return launch<64>(qkv, ctx, tiles, n_tiles, heads, s);
    case 128: return launch<128>(qkv, ctx, tiles, n_tiles, heads, s);
    default: return splade_fail(SPLADE_ERR_UNSUPPORTED, "gpu encoder: attention head size %d", head_dim);
    }
}

}  // namespace splade_gpu
