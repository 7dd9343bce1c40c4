/* Shared device code of the fused SPLADE LM head kernels (mma.sync and wgmma paths).
 *
 * Work decomposition (both paths): the output [B, V] is cut into work units
 * (vt, b, sp): a tile of BM vocabulary rows, one sequence b, and one slice sp of that
 * sequence's row tiles (BN hidden rows each). A block walks its units (persistent grid,
 * unit u = blockIdx.x + j*gridDim.x, b fastest so concurrent blocks share W tiles in L2),
 * and for each unit loops over row tiles x K chunks of 64, keeping the running max over
 * rows in registers. bias, relu and log1p are applied once, after the max.
 *
 * Padding: hidden-row indices past seq_len[b] are clamped to the last valid row of the
 * sequence, so a tile never reads a padding row (NaN/garbage there is never touched) and
 * the duplicated row cannot change a max. W rows past V are clamped to V-1 and not stored.
 *
 * Shared memory tiles are [rows][64] bf16 = 128 bytes a row, 16-byte chunks XOR-swizzled
 * by (row & 7) — the layout wgmma calls SWIZZLE_128B (8-row atoms of 1024 bytes), which
 * also makes ldmatrix conflict-free for the mma.sync path. */
#ifndef SPLADE_LMHEAD_COMMON_CUH
#define SPLADE_LMHEAD_COMMON_CUH

#include <cstdint>

#include <cuda_bf16.h>

#include "gpu/wgmma.cuh"

namespace splade_lm {

constexpr int BK = 64; /* K chunk: 64 bf16 = 128 bytes a row */

struct Problem {
    const __nv_bfloat16 *H;
    const int32_t *seq_start;
    const int32_t *seq_len;
    const __nv_bfloat16 *W;
    const float *bias;
    float *out;
    int B, D, V, KC; /* KC = ceil(D / 64) */
    int nsplit;      /* slices per sequence */
    int tps;         /* row tiles per slice */
    int nunits;      /* nvt * nsplit * B */
    int group;       /* sequences per raster group (their H tiles stay in L2 while W streams) */
    int nvt;         /* vocabulary tiles */
    int atomic_out;  /* 1: out pre-zeroed, combine slices with atomicMax on the float bits */
    int act2;        /* 1: log1p(log1p(relu(.))) (splade_lmhead_args.activation) */
};

__device__ __forceinline__ uint32_t smem_u32(const void *p)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/* 16-byte async copy global -> shared; src_bytes 0 zero-fills (K tail when D % 64 != 0). */
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* Byte offset of 16-byte chunk c of row r in a 128-byte-row, 128B-swizzled tile. */
using splade_wg::swz;

/* Monotone, so applied once after the max; the second log1p for "log1p_relu" models. */
__device__ __forceinline__ float splade_act(float m, int act2)
{
    const float y = m > 0.f ? log1pf(m) : 0.f;
    return act2 ? log1pf(y) : y;
}

/* Writes the output value y (>= +0) of sequence b, term v: plain store, or atomicMax on the bit
 * pattern (values >= +0, so integer order is float order; out was zeroed first). */
__device__ __forceinline__ void store_value(const Problem &p, int b, int v, float y)
{
    float *dst = p.out + (size_t)b * p.V + v;
    if (p.atomic_out) {
        if (y > 0.f)
            atomicMax(reinterpret_cast<int *>(dst), __float_as_int(y));
    } else {
        *dst = y;
    }
}

/* Writes one output element from its running max m: bias, relu, log1p, store. */
__device__ __forceinline__ void store_out(const Problem &p, int b, int v, float m)
{
    store_value(p, b, v, splade_act(m + p.bias[v], p.act2));
}

struct Unit {
    int vt, b, t0, t1, row0, len;
    int b1, row1, len1; /* PACK2: the second sequence (hidden rows 128..255 of the tile) */
};

/* Unit order: sequences in groups of p.group; inside a group b is fastest, then the slice,
 * then the vocabulary tile. A wave of the persistent grid then covers a few vocabulary tiles x
 * the group's sequences, so H of a group is read from DRAM about once and W once per group. */
/* PACK2 (sequences of <= 128 tokens, BN = 256): a unit holds two sequences, b = 2*item
 * in hidden rows 0..127 and b1 = b + 1 in rows 128..255, one row tile, no slices; "items"
 * below are then pairs, and p.group counts pairs. */
/* A unit's vocabulary tile, item (sequence, or pair of sequences with PACK2) and slice from its
 * index alone: no memory is read, so a kernel can compute the next unit's index early and fetch
 * what it needs from memory long before it uses it (lmhead_tma.cuh). */
struct UnitIx {
    int vt, item, sp;
};
template <bool PACK2> __device__ __forceinline__ UnitIx unit_index(const Problem &p, int u)
{
    const int nitems = PACK2 ? (p.B + 1) / 2 : p.B;
    const int per_item = p.nvt * p.nsplit;
    const int g = u / (p.group * per_item);
    const int i0 = g * p.group;
    const int gs = min(p.group, nitems - i0);
    const int rem = u - i0 * per_item;
    const int rest = rem / gs;
    return UnitIx{rest / p.nsplit, i0 + rem % gs, rest % p.nsplit};
}

template <int BN, bool PACK2> __device__ __forceinline__ Unit decode_unit(const Problem &p, int u)
{
    Unit x;
    const UnitIx ix = unit_index<PACK2>(p, u);
    const int item = ix.item, sp = ix.sp;
    x.vt = ix.vt;
    if (PACK2) {
        x.b = 2 * item;
        x.b1 = x.b + 1;
        x.len = p.seq_len[x.b];
        x.row0 = p.seq_start[x.b];
        x.len1 = x.b1 < p.B ? p.seq_len[x.b1] : 0;
        x.row1 = x.b1 < p.B ? p.seq_start[x.b1] : 0;
        x.t0 = 0;
        x.t1 = (x.len > 0 || x.len1 > 0) ? 1 : 0;
        return x;
    }
    x.b = item;
    x.b1 = -1;
    x.row1 = x.len1 = 0;
    x.len = p.seq_len[x.b];
    x.row0 = p.seq_start[x.b];
    const int nt = x.len > 0 ? (x.len + BN - 1) / BN : 0;
    x.t0 = sp * p.tps;
    x.t1 = min(nt, x.t0 + p.tps);
    if (x.t1 < x.t0)
        x.t1 = x.t0;
    return x;
}

/* The producer cursor: issues the cp.async copies of K chunk after K chunk of this block's
 * work, skipping units with no rows, and commits one group per call (empty when done) so
 * that cp.async.wait_group counts stay uniform. All NT threads call it together. */
template <int BM, int BN, int NT, bool PACK2 = false> struct Loader {
    int u, rt, kc, done;
    Unit x;

    __device__ __forceinline__ void seek(const Problem &p)
    {
        while (u < p.nunits) {
            x = decode_unit<BN, PACK2>(p, u);
            if (x.t1 > x.t0) {
                rt = x.t0;
                kc = 0;
                return;
            }
            u += gridDim.x;
        }
        done = 1;
    }
    __device__ __forceinline__ void init(const Problem &p)
    {
        u = blockIdx.x;
        done = 0;
        seek(p);
    }
    __device__ __forceinline__ void issue(const Problem &p, uint32_t sA, uint32_t sB)
    {
        issue_t(p, sA, sB, threadIdx.x);
    }
    /* t: this thread's index among the NT loading threads (threadIdx.x, or the thread's index in a
     * producer warpgroup: the warp-specialised v6 of tools/kernel_lab/lmhead_fused.cu) */
    __device__ __forceinline__ void issue_t(const Problem &p, uint32_t sA, uint32_t sB, int t)
    {
        if (!done) {
            const int c = t & 7, r0 = t >> 3;
            const int k = kc * BK + c * 8;
            const int bytes = k < p.D ? 16 : 0;
            const int ks = bytes ? k : 0;
#pragma unroll
            for (int i = 0; i < (BM * 8 + NT - 1) / NT; i++) {
                const int r = r0 + i * (NT / 8);
                if ((BM * 8) % NT == 0 || r < BM) {
                    const int v = min(x.vt * BM + r, p.V - 1);
                    cp_async16(sA + swz(r, c), p.W + (size_t)v * p.D + ks, bytes);
                }
            }
#pragma unroll
            for (int i = 0; i < (BN * 8 + NT - 1) / NT; i++) {
                const int r = r0 + i * (NT / 8);
                if ((BN * 8) % NT == 0 || r < BN) {
                    if (PACK2) {
                        /* half of the tile per sequence; an empty sequence reads nothing (zeros) */
                        const bool hi = r >= BN / 2;
                        const int len = hi ? x.len1 : x.len;
                        const int s = min(r & (BN / 2 - 1), len - 1);
                        const int nb = len > 0 ? bytes : 0;
                        const __nv_bfloat16 *src = nb ? p.H + (size_t)((hi ? x.row1 : x.row0) + s) * p.D + ks : p.H;
                        cp_async16(sB + swz(r, c), src, nb);
                    } else {
                        const int s = min(rt * BN + r, x.len - 1);
                        cp_async16(sB + swz(r, c), p.H + (size_t)(x.row0 + s) * p.D + ks, bytes);
                    }
                }
            }
            if (++kc == p.KC) {
                kc = 0;
                if (++rt == x.t1) {
                    u += gridDim.x;
                    seek(p);
                }
            }
        }
        cp_async_commit();
    }
};

} // namespace splade_lm

#endif
