/* What the GPU encoder's bf16 attention kernels (gpu_attention.cu, mma.sync; gpu_attention_wgmma.cu,
 * wgmma) share: small PTX helpers, the online-softmax step and the output rows. Both hold a warp's
 * scores in the accumulator layout that mma.sync m16n8 and wgmma share: thread (g = lane / 4,
 * t = lane % 4) has s[nt][e] = the score of query row g (e < 2) or g + 8 (e >= 2) against key
 * 8·nt + 2·t + (e & 1) of the tile. */
#ifndef SPLADE_ENCODER_GPU_ATTENTION_COMMON_CUH
#define SPLADE_ENCODER_GPU_ATTENTION_COMMON_CUH

#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

namespace splade_gpu {
namespace attn {

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ float ex2_ftz(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

/* One key tile (keys kt .. kt + 8·NT) of the online softmax: keys at or past len masked (a partial
 * last tile), the running maxima m0, m1 (raw score units) and sums l0, l1 of the thread's two rows
 * updated, s replaced by p = 2^(s·c − m·c) with c = scale_log2 (one FFMA and one ex2.approx each),
 * and a0, a1 set to the factors by which the rows' output so far must be scaled. Key kt is always
 * valid, so the maxima stay finite; 2^((m_old − m_new)·c) is 0 on the first tile. */
template <int NT>
__device__ __forceinline__ void softmax_step(float (&s)[NT][4], int kt, int len, int t, float scale_log2, float &m0,
                                             float &m1, float &l0, float &l1, float &a0, float &a1)
{
    if (kt + NT * 8 > len) {
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
    a0 = ex2_ftz((m0 - mx0) * scale_log2), a1 = ex2_ftz((m1 - mx1) * scale_log2);
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
}

/* The bf16 A fragment (m16n8k16's, which wgmma's register A shares) of P for keys 16·j .. 16·j + 15:
 * score n8 blocks 2j and 2j + 1. */
template <int NT>
__device__ __forceinline__ void p_fragment(const float (&s)[NT][4], int j, uint32_t (&a)[4])
{
    a[0] = pack_bf16(s[2 * j][0], s[2 * j][1]);
    a[1] = pack_bf16(s[2 * j][2], s[2 * j][3]);
    a[2] = pack_bf16(s[2 * j + 1][0], s[2 * j + 1][1]);
    a[3] = pack_bf16(s[2 * j + 1][2], s[2 * j + 1][3]);
}

/* o's rows (the same layout, DT n8 blocks of the head dimension) scaled by a0 and a1. */
template <int DT>
__device__ __forceinline__ void scale_rows(float (&o)[DT][4], float a0, float a1)
{
#pragma unroll
    for (int i = 0; i < DT; i++) {
        o[i][0] *= a0, o[i][1] *= a0;
        o[i][2] *= a1, o[i][3] *= a1;
    }
}

/* The end of a query tile: the rows' sums completed across the 4 threads that share each row, and
 * o / l written as bf16 to ctx rows start + r0 and start + r0 + 8 (those < len), columns col + 8·dt,
 * +1 (col = the head's first column + 2·t). */
template <int DT>
__device__ __forceinline__ void write_rows(const float (&o)[DT][4], float l0, float l1, __nv_bfloat16 *ctx,
                                           int start, int r0, int len, int hidden, int col)
{
#pragma unroll
    for (int off = 1; off <= 2; off <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, off);
        l1 += __shfl_xor_sync(0xffffffffu, l1, off);
    }
    const float inv0 = 1.f / l0, inv1 = 1.f / l1;
    const int r1 = r0 + 8;
    __nv_bfloat16 *out0 = ctx + (size_t)(start + r0) * hidden + col;
    __nv_bfloat16 *out1 = ctx + (size_t)(start + r1) * hidden + col;
#pragma unroll
    for (int dt = 0; dt < DT; dt++) {
        if (r0 < len)
            *reinterpret_cast<__nv_bfloat162 *>(out0 + dt * 8) = __floats2bfloat162_rn(o[dt][0] * inv0, o[dt][1] * inv0);
        if (r1 < len)
            *reinterpret_cast<__nv_bfloat162 *>(out1 + dt * 8) = __floats2bfloat162_rn(o[dt][2] * inv1, o[dt][3] * inv1);
    }
}

}  // namespace attn
}  // namespace splade_gpu

#endif
