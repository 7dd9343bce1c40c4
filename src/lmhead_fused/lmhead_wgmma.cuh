/* Fused LM head, Hopper path (sm_90a): wgmma.mma_async bf16 -> fp32, both operands from
 * 128B-swizzled shared memory, fed by a STAGES-deep cp.async pipeline run by all threads.
 *
 * Roles: A = a tile of W (vocabulary rows are wgmma's M), B = a tile of H (hidden rows are
 * wgmma's N), so the max over hidden rows is a max along each thread's accumulator columns
 * plus two shuffles in a quad — no shared-memory pass. Two warpgroups; each owns WGM x 64
 * vocabulary rows and all BN hidden rows: tiles 128 x 256 (WGM=1, BN=256) or 256 x 128
 * (WGM=2, BN=128, for sequences of <= 128 tokens). 128 fp32 accumulators a thread either way.
 *
 * Pipeline per K chunk c: wait for chunk c's copies, fence.proxy.async (cp.async writes are
 * generic-proxy, wgmma reads async-proxy), __syncthreads, 4 k16 steps of wgmma, commit, then
 * issue the copies of chunk c+STAGES-2 into the slot chunk c-2 used (every warpgroup finished
 * it: its wgmma.wait_group 1 ran before the barrier), then wait_group 1 (one group in flight).
 * Accumulators fold into the running max after wait_group 0 at the end of each row tile. */
#ifndef SPLADE_LMHEAD_WGMMA_CUH
#define SPLADE_LMHEAD_WGMMA_CUH

#include "lmhead_fused/lmhead_common.cuh"

namespace splade_lm {

/* NWG consumer warpgroups (all threads also run the copies), each WGM x 64 vocabulary rows. */
template <int NWG, int WGM, int BN> struct WgCfg {
    static constexpr int THREADS = NWG * 128;
    static constexpr int BM = NWG * WGM * 64;
    static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE = A_BYTES + B_BYTES;
    static constexpr int STAGES = (227 * 1024 - 1024) / STAGE; /* 4 for 48 KB stages */
    static constexpr int SMEM = STAGES * STAGE + 1024;
};

#ifdef SPLADE_WGMMA_ARCH
#define SPLADE_WGMMA_ENABLED 1

/* The shared wgmma building blocks (src/gpu/wgmma.cuh) under this file's names. */
__device__ __forceinline__ uint64_t wg_desc(uint32_t saddr) { return splade_wg::desc128(saddr); }
__device__ __forceinline__ void wg_arrive() { splade_wg::fence(); }
__device__ __forceinline__ void wg_commit() { splade_wg::commit(); }
template <int N> __device__ __forceinline__ void wg_wait() { splade_wg::wait<N>(); }
using splade_wg::fence_proxy_async;
using splade_wg::fence_regs;

template <int BN>
__device__ __forceinline__ void wgmma_tile(float (&d)[BN / 2], uint64_t da, uint64_t db, int scale_d)
{
    if constexpr (BN == 256)
        splade_wg::mma_m64n256k16_ss(d, da, db, scale_d);
    else
        splade_wg::mma_m64n128k16_ss(d, da, db, scale_d);
}

/* One K chunk (64 columns) of a warpgroup's tile, shared by v5 and v7 (and the kernel lab's v3, v4, v6): the warpgroup's WGM slices
 * of 64 W rows (A, at sA) times all BN H rows (B, at sB), 4 k16 steps, accumulating into d unless
 * kc == 0 (the first chunk of a row tile overwrites). Issued and committed as one group; the caller
 * waits (wgmma.wait_group) when it needs the smem slot or the accumulators. The register fences keep
 * the compiler from touching d while the asynchronous wgmma owns it. `under` runs right after the
 * commit, while the tensor cores work (v5 issues its next copies there). */
struct NoWork {
    __device__ __forceinline__ void operator()() const {}
};
template <int WGM, int BN, class Under = NoWork>
__device__ __forceinline__ void wg_mma_chunk(float (&d)[WGM][BN / 2], uint32_t sA, uint32_t sB, int wg, int kc,
                                             Under under = Under())
{
    const uint64_t db = wg_desc(sB);
#pragma unroll
    for (int m = 0; m < WGM; m++)
        fence_regs(d[m]);
    wg_arrive();
#pragma unroll
    for (int k = 0; k < 4; k++) {
#pragma unroll
        for (int m = 0; m < WGM; m++) {
            const uint64_t da = wg_desc(sA + (wg * WGM + m) * 64 * 128);
            wgmma_tile<BN>(d[m], da + 2 * k, db + 2 * k, (kc | k) != 0);
        }
    }
    wg_commit();
    under();
#pragma unroll
    for (int m = 0; m < WGM; m++)
        fence_regs(d[m]);
}
#endif

template <int NWG, int WGM, int BN, bool PACK2 = false>
__global__ void __launch_bounds__(NWG * 128, 1) lmhead_wgmma_kernel(const Problem p)
{
#ifdef SPLADE_WGMMA_ENABLED
    using C = WgCfg<NWG, WGM, BN>;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t smem = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wq = (tid >> 5) & 3;

    Loader<C::BM, BN, C::THREADS, PACK2> ld;
    ld.init(p);
#pragma unroll
    for (int s = 0; s < C::STAGES - 2; s++)
        ld.issue(p, smem + s * C::STAGE, smem + s * C::STAGE + C::A_BYTES);

    float d[WGM][BN / 2];
    int c = 0;
    for (int u = blockIdx.x; u < p.nunits; u += gridDim.x) {
        const Unit x = decode_unit<BN, PACK2>(p, u);
        float rm[WGM][2][2]; /* [m64 slice][sequence half (PACK2)][accumulator row] */
#pragma unroll
        for (int m = 0; m < WGM; m++)
            rm[m][0][0] = rm[m][0][1] = rm[m][1][0] = rm[m][1][1] = -INFINITY;
        for (int rt = x.t0; rt < x.t1; rt++) {
            for (int kc = 0; kc < p.KC; kc++, c++) {
                cp_async_wait<C::STAGES - 3>();
                fence_proxy_async();
                __syncthreads();
                const uint32_t sA = smem + (c % C::STAGES) * C::STAGE;
                /* copies of chunk c+STAGES-2 go out while the tensor cores run chunk c (issuing
                 * them before the wgmma left the tensor pipe idle for the address arithmetic) */
                const int ps = (c + C::STAGES - 2) % C::STAGES;
                wg_mma_chunk<WGM, BN>(d, sA, sA + C::A_BYTES, wg, kc,
                                      [&] { ld.issue(p, smem + ps * C::STAGE, smem + ps * C::STAGE + C::A_BYTES); });
                wg_wait<1>();
            }
            wg_wait<0>();
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
        }
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
                    const int col = x.vt * C::BM + (wg * WGM + m) * 64 + wq * 16 + h * 8 + (lane >> 2);
                    if ((lane & 3) == 0 && col < p.V && b < p.B)
                        store_out(p, b, col, v);
                }
        }
    }
    cp_async_wait<0>();
#endif
}

} // namespace splade_lm

#endif
