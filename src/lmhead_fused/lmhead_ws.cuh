/* Fused LM head, Hopper path, warp-specialised (v6): NWG consumer warpgroups run only wgmma and
 * the max fold; one extra producer warpgroup runs the cp.async copies. Same tiles, layout, work
 * units, clamping and output as lmhead_wgmma.cuh (v5), which stays selectable
 * (SPLADE_LMHEAD_WS=0).
 *
 * Pipeline: STAGES slots, each with a "full" and an "empty" mbarrier.
 *   producer, chunk i into slot i % STAGES: wait empty (the consumers' release of chunk
 *     i - STAGES), issue its copies, commit; then cp.async.wait_group LAG (chunk i - LAG has
 *     landed for this thread), fence.proxy.async (its generic-proxy writes ordered before the
 *     async-proxy reads of wgmma), mbarrier.arrive (release) on full[(i - LAG) % STAGES].
 *     128 arrivals complete a phase: every thread's share of the chunk has landed and is fenced.
 *   consumer, chunk c: mbarrier wait (acquire) on full[c % STAGES], 4 k16 wgmma, commit,
 *     wgmma.wait_group 1 (chunk c-1's reads are done), arrive on empty[(c-1) % STAGES];
 *     at the end of a row tile wait_group 0 and release chunk c too. NWG*128 arrivals a phase.
 * This is v5's order (writer: wait_group, fence, barrier; reader: barrier, wgmma) with the
 * block-wide __syncthreads replaced by per-slot mbarriers, so warpgroups never wait for each
 * other and consumer threads do no copy address arithmetic. Two consumer warpgroups (tiles
 * 128x256 and 256x128) + the producer = 384 threads, 168 registers each (no setmaxnreg needed). */
#ifndef SPLADE_LMHEAD_WS_CUH
#define SPLADE_LMHEAD_WS_CUH

#include "lmhead_fused/lmhead_common.cuh"
#include "lmhead_fused/lmhead_wgmma.cuh"

namespace splade_lm {

template <int NWG, int WGM, int BN> struct WsCfg {
    static constexpr int THREADS = (NWG + 1) * 128;
    static constexpr int BM = NWG * WGM * 64;
    static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE = A_BYTES + B_BYTES;
    static constexpr int STAGES = (227 * 1024 - 1024 - 256) / STAGE; /* 4 for 56 KB stages */
    static constexpr int BAR_OFF = STAGES * STAGE;                    /* full[STAGES], empty[STAGES] */
    static constexpr int SMEM = BAR_OFF + 16 * STAGES + 1024;
    static_assert(STAGES >= 3, "lmhead ws: too few stages");
    /* 384 threads: 65536 / 384 = 170 -> 168 registers a thread, enough for a consumer's 128
     * accumulators. 3 consumer warpgroups (512 threads, 128 registers) cannot hold them: ptxas
     * refuses ("needs a register target of 154") and does not let setmaxnreg raise a region. */
    static_assert(NWG == 2, "lmhead ws: two consumer warpgroups only");
};

#ifdef SPLADE_WGMMA_ENABLED
__device__ __forceinline__ void mbar_init(uint32_t a, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(a), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t a)
{
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(a) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t a, uint32_t parity)
{
    asm volatile("{\n.reg .pred P1;\n"
                 "LAB_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
                 "@P1 bra DONE;\n"
                 "bra LAB_WAIT;\n"
                 "DONE:\n}\n" ::"r"(a),
                 "r"(parity)
                 : "memory");
}
#endif

template <int NWG, int WGM, int BN, bool PACK2 = false>
__global__ void __launch_bounds__((NWG + 1) * 128, 1) lmhead_ws_kernel(const Problem p)
{
#ifdef SPLADE_WGMMA_ENABLED
    using C = WsCfg<NWG, WGM, BN>;
    constexpr int S = C::STAGES;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t smem = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t full = smem + C::BAR_OFF, empty = full + 8 * S;
    const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wq = (tid >> 5) & 3;

    if (tid == 0) {
        for (int s = 0; s < S; s++) {
            mbar_init(full + 8 * s, 128);
            mbar_init(empty + 8 * s, NWG * 128);
        }
    }
    __syncthreads();

    if (wg == NWG) { /* producer warpgroup */
        const int t = tid - NWG * 128;
        const int lag = p.ws_lag;
        Loader<C::BM, BN, 128, PACK2> ld;
        ld.init(p);
        int i = 0;
        while (!ld.done) {
            const int s = i % S;
            if (i >= S)
                mbar_wait(empty + 8 * s, ((i / S) - 1) & 1);
            ld.issue_t(p, smem + s * C::STAGE, smem + s * C::STAGE + C::A_BYTES, t);
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
        const Unit x = decode_unit<BN, PACK2>(p, u);
        float rm[WGM][2][2]; /* [m64 slice][sequence half (PACK2)][accumulator row] */
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
#endif
}

} // namespace splade_lm

#endif
