/* Fused LM head, portable tensor-core path (sm_80+): mma.sync m16n8k16 bf16 -> fp32.
 * Block tile 128 vocabulary rows x 128 hidden rows, K chunks of 64, STAGES-deep cp.async
 * pipeline, 8 warps as 2 (vocab) x 4 (hidden rows), warp tile 64 x 32; 2 blocks per SM.
 * The running max lives in registers (8 floats a thread); at the end of a unit the 4 warps
 * that share vocabulary rows combine through 2 KB of shared memory. */
#ifndef SPLADE_LMHEAD_MMA_CUH
#define SPLADE_LMHEAD_MMA_CUH

#include "lmhead_fused/lmhead_common.cuh"

namespace splade_lm {

constexpr int MMA_BM = 128, MMA_BN = 128, MMA_THREADS = 256, MMA_STAGES = 3;
constexpr int MMA_STAGE_BYTES = (MMA_BM + MMA_BN) * 128;
constexpr int MMA_SMEM = MMA_STAGES * MMA_STAGE_BYTES + 1024; /* + alignment slack */

__device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__global__ void __launch_bounds__(MMA_THREADS, 2) lmhead_mma_kernel(const Problem p)
{
    extern __shared__ uint8_t smem_raw[];
    __shared__ float red[4][MMA_BM];
    const uint32_t smem = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp & 1, wn = warp >> 1;

    Loader<MMA_BM, MMA_BN, MMA_THREADS> ld;
    ld.init(p);
#pragma unroll
    for (int s = 0; s < MMA_STAGES - 1; s++)
        ld.issue(p, smem + s * MMA_STAGE_BYTES, smem + s * MMA_STAGE_BYTES + MMA_BM * 128);

    /* per-lane ldmatrix row/chunk offsets (chunk gets + 2*k16) */
    const int a_row = wm * 64 + (lane & 7) + ((lane >> 3) & 1) * 8, a_ch = lane >> 4;
    const int b_row = wn * 32 + (lane & 7) + ((lane >> 4) & 1) * 8, b_ch = (lane >> 3) & 1;

    int c = 0; /* K chunks consumed by this block */
    for (int u = blockIdx.x; u < p.nunits; u += gridDim.x) {
        const Unit x = decode_unit<MMA_BN, false>(p, u);
        float rm[4][2];
#pragma unroll
        for (int i = 0; i < 4; i++)
            rm[i][0] = rm[i][1] = -INFINITY;
        for (int rt = x.t0; rt < x.t1; rt++) {
            float acc[4][4][4];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        acc[i][j][e] = 0.f;
            for (int kc = 0; kc < p.KC; kc++, c++) {
                cp_async_wait<MMA_STAGES - 2>();
                __syncthreads();
                const int ps = (c + MMA_STAGES - 1) % MMA_STAGES;
                ld.issue(p, smem + ps * MMA_STAGE_BYTES, smem + ps * MMA_STAGE_BYTES + MMA_BM * 128);
                const uint32_t sA = smem + (c % MMA_STAGES) * MMA_STAGE_BYTES, sB = sA + MMA_BM * 128;
#pragma unroll
                for (int k16 = 0; k16 < 4; k16++) {
                    uint32_t a[4][4], b[4][2];
#pragma unroll
                    for (int mt = 0; mt < 4; mt++)
                        ldsm_x4(sA + swz(a_row + mt * 16, 2 * k16 + a_ch), a[mt][0], a[mt][1], a[mt][2], a[mt][3]);
#pragma unroll
                    for (int np = 0; np < 2; np++)
                        ldsm_x4(sB + swz(b_row + np * 16, 2 * k16 + b_ch), b[2 * np][0], b[2 * np][1],
                                b[2 * np + 1][0], b[2 * np + 1][1]);
#pragma unroll
                    for (int mt = 0; mt < 4; mt++)
#pragma unroll
                        for (int nt = 0; nt < 4; nt++)
                            mma_bf16(acc[mt][nt], a[mt], b[nt][0], b[nt][1]);
                }
            }
#pragma unroll
            for (int mt = 0; mt < 4; mt++)
#pragma unroll
                for (int nt = 0; nt < 4; nt++) {
                    rm[mt][0] = fmaxf(rm[mt][0], fmaxf(acc[mt][nt][0], acc[mt][nt][1]));
                    rm[mt][1] = fmaxf(rm[mt][1], fmaxf(acc[mt][nt][2], acc[mt][nt][3]));
                }
        }
        /* combine: 4 lanes of a quad, then the 4 warps sharing these vocabulary rows */
#pragma unroll
        for (int mt = 0; mt < 4; mt++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float m = rm[mt][h];
                m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
                m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
                if ((lane & 3) == 0)
                    red[wn][wm * 64 + mt * 16 + h * 8 + (lane >> 2)] = m;
            }
        __syncthreads();
        if (tid < MMA_BM) {
            const int v = x.vt * MMA_BM + tid;
            const float m = fmaxf(fmaxf(red[0][tid], red[1][tid]), fmaxf(red[2][tid], red[3][tid]));
            if (v < p.V)
                store_out(p, x.b, v, m);
        }
        __syncthreads();
    }
    cp_async_wait<0>();
}

} // namespace splade_lm

#endif
