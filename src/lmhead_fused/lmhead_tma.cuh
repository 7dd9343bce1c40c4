/* Fused LM head, Hopper path v7 (sm_90a): tiles brought in by the bulk tensor copy engine (TMA),
 * one producer thread, two consumer warpgroups running only wgmma and the max fold.
 *
 * Why: v5 (lmhead_wgmma.cuh) spends every thread on cp.async address arithmetic and a block-wide
 * barrier + proxy fence per K chunk; v6 (warp-specialised, now only in tools/kernel_lab/lmhead_fused.cu)
 * moved the copies to a producer warpgroup and was slower, because 128 threads could not issue 48 KB
 * of 16-byte copies per chunk fast enough. Here one thread issues two bulk tensor copies per chunk (a W box and an H box) that land
 * already 128B-swizzled and complete on the slot's "full" mbarrier (transaction bytes), so the
 * consumers do no copy work and meet no block barrier.
 *
 * Tensor maps (built on the host per call, passed as __grid_constant__): W as [V, D] and H as
 * [H_rows, D], boxes of 64 columns (128 bytes, the swizzle span) x BM or BN rows. Rows past V or
 * past H_rows, and columns past D, are zero-filled by the copy engine. Unlike v5, hidden rows are
 * not clamped: a tile of sequence b may hold rows of the next sequence (packed layout) or padding,
 * so the fold of a sequence's last row tile masks the columns (hidden rows) at or past seq_len[b]
 * with a select, never arithmetic (NaN or 1e30 in those rows cannot leak).
 *
 * Pipeline (STAGES slots of A_BYTES + B_BYTES, one full and one empty mbarrier each):
 *   producer, chunk i into slot s = i % STAGES: wait empty[s] (parity of release i/STAGES - 1) once
 *     i >= STAGES, arrive.expect_tx(full[s], STAGE bytes), issue the two copies on full[s].
 *   consumer, chunk c: wait full[c % STAGES] (parity (c / STAGES) & 1), 4 k16 wgmma per warpgroup,
 *     commit, wgmma.wait_group 1 (chunk c-1's smem reads are done), lane 0 of each warp arrives on
 *     empty[(c-1) % STAGES] (8 arrivals a phase); at the end of a row tile wait_group 0, release
 *     chunk c, fold.
 * 384 threads x 168 registers: each consumer thread holds 128 fp32 accumulators, no setmaxnreg. */
#ifndef SPLADE_LMHEAD_TMA_CUH
#define SPLADE_LMHEAD_TMA_CUH

#include <cuda.h> /* CUtensorMap (the type only; the encoder is fetched through the runtime) */

#include "lmhead_fused/lmhead_common.cuh"
#include "lmhead_fused/lmhead_wgmma.cuh"

namespace splade_lm {

/* Two consumer warpgroups, each WGM x 64 vocabulary rows; tiles 128x256 (WGM=1) or 256x128 (WGM=2). */
template <int WGM, int BN> struct TmaCfg {
    static constexpr int NWG = 2;
    static constexpr int THREADS = (NWG + 1) * 128;
    static constexpr int BM = NWG * WGM * 64;
    static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE = A_BYTES + B_BYTES;
    static constexpr int STAGES = (227 * 1024 - 1024 - 256) / STAGE; /* 4 for 48 KB stages */
    static constexpr int BAR_OFF = STAGES * STAGE;
    static constexpr int SMEM = BAR_OFF + 16 * STAGES + 1024;
    static constexpr int CONSUMER_WARPS = NWG * 4;
    static_assert(STAGES >= 3, "lmhead tma: too few stages");
    static_assert(BM <= 256 && BN <= 256, "lmhead tma: a copy box has at most 256 rows");
};

#ifdef SPLADE_WGMMA_ENABLED
/* mbarriers in shared memory (addresses from smem_u32): init with the arrivals a phase needs,
 * arrive, and wait for the phase of the given parity to complete. */
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
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
/* 2-D bulk tensor copy global -> shared, completing on mbarrier `bar`; c0 = column, c1 = row. */
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap *map, int c0, int c1, uint32_t bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}
#endif

template <int WGM, int BN>
__global__ void __launch_bounds__(TmaCfg<WGM, BN>::THREADS, 1)
    lmhead_tma_kernel(const __grid_constant__ CUtensorMap tmW, const __grid_constant__ CUtensorMap tmH, const Problem p)
{
#ifdef SPLADE_WGMMA_ENABLED
    using C = TmaCfg<WGM, BN>;
    constexpr int S = C::STAGES;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t smem = (smem_u32(smem_raw) + 1023u) & ~1023u; /* 128B swizzle: 1024-byte atoms */
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

    if (wg == C::NWG) { /* producer warpgroup: one thread issues every copy */
        if (tid != C::NWG * 128)
            return;
        int i = 0;
        for (int u = blockIdx.x; u < p.nunits; u += gridDim.x) {
            const Unit x = decode_unit<BN, false>(p, u);
            for (int rt = x.t0; rt < x.t1; rt++)
                for (int kc = 0; kc < p.KC; kc++, i++) {
                    const int s = i % S;
                    if (i >= S)
                        mbar_wait(empty + 8 * s, ((i / S) - 1) & 1);
                    const uint32_t sA = smem + s * C::STAGE;
                    mbar_arrive_expect_tx(full + 8 * s, C::STAGE);
                    tma_load_2d(sA, &tmW, kc * BK, x.vt * C::BM, full + 8 * s);
                    tma_load_2d(sA + C::A_BYTES, &tmH, kc * BK, x.row0 + rt * BN, full + 8 * s);
                }
        }
        return;
    }

    float d[WGM][BN / 2];
    int c = 0;
    UnitIx nix{0, 0, 0};
    int nlen = 0;
    if (blockIdx.x < p.nunits) {
        nix = unit_index<false>(p, blockIdx.x);
        nlen = __ldg(p.seq_len + nix.item);
    }
    for (int u = blockIdx.x; u < p.nunits; u += gridDim.x) {
        const UnitIx ix = nix;
        const int len = nlen;
        /* this unit's bias (used after the K loop) and the next unit's length: loads in flight
         * while the tensor cores run */
        float bv[WGM][2];
#pragma unroll
        for (int m = 0; m < WGM; m++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int col = ix.vt * C::BM + (wg * WGM + m) * 64 + wq * 16 + h * 8 + (lane >> 2);
                bv[m][h] = col < p.V ? __ldg(p.bias + col) : 0.f;
            }
        if (u + (int)gridDim.x < p.nunits) {
            nix = unit_index<false>(p, u + gridDim.x);
            nlen = __ldg(p.seq_len + nix.item);
        }
        const int nt = len > 0 ? (len + BN - 1) / BN : 0;
        const int t0 = ix.sp * p.tps, t1 = max(t0, min(nt, t0 + p.tps));
        float rm[WGM][2]; /* [m64 slice][accumulator row] */
#pragma unroll
        for (int m = 0; m < WGM; m++)
            rm[m][0] = rm[m][1] = -INFINITY;
        for (int rt = t0; rt < t1; rt++) {
            for (int kc = 0; kc < p.KC; kc++, c++) {
                const int s = c % S;
                mbar_wait(full + 8 * s, (c / S) & 1);
                const uint32_t sA = smem + s * C::STAGE;
                wg_mma_chunk<WGM, BN>(d, sA, sA + C::A_BYTES, wg, kc);
                wg_wait<1>();
                if (kc > 0 && lane == 0) /* chunk c-1 (same row tile) has been read: its slot is free */
                    mbar_arrive(empty + 8 * ((c + S - 1) % S));
            }
            wg_wait<0>();
            if (lane == 0)
                mbar_arrive(empty + 8 * ((c + S - 1) % S)); /* the row tile's last chunk */
            const int valid = len - rt * BN; /* hidden rows of this tile inside the sequence (>= 1) */
#pragma unroll
            for (int m = 0; m < WGM; m++) {
                fence_regs(d[m]);
                if (valid >= BN) {
#pragma unroll
                    for (int i = 0; i < BN / 8; i++) {
                        rm[m][0] = fmaxf(rm[m][0], fmaxf(d[m][4 * i], d[m][4 * i + 1]));
                        rm[m][1] = fmaxf(rm[m][1], fmaxf(d[m][4 * i + 2], d[m][4 * i + 3]));
                    }
                } else {
                    /* accumulator 4i+j holds hidden row (column) 8i + 2*(lane%4) + (j%2) */
                    const int c0 = 2 * (lane & 3);
#pragma unroll
                    for (int i = 0; i < BN / 8; i++) {
                        const bool ok0 = 8 * i + c0 < valid, ok1 = 8 * i + c0 + 1 < valid;
                        rm[m][0] = fmaxf(rm[m][0], fmaxf(ok0 ? d[m][4 * i] : -INFINITY, ok1 ? d[m][4 * i + 1] : -INFINITY));
                        rm[m][1] = fmaxf(rm[m][1], fmaxf(ok0 ? d[m][4 * i + 2] : -INFINITY, ok1 ? d[m][4 * i + 3] : -INFINITY));
                    }
                }
            }
        }
#pragma unroll
        for (int m = 0; m < WGM; m++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float v = rm[m][h];
                v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
                v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
                const int col = ix.vt * C::BM + (wg * WGM + m) * 64 + wq * 16 + h * 8 + (lane >> 2);
                if ((lane & 3) == 0 && col < p.V)
                    store_value(p, ix.item, col, splade_act(v + bv[m][h], p.act2));
            }
    }
#endif
}

} // namespace splade_lm

#endif
