/* The SPLADE LM head in fp32 (src/lmhead_fused/lmhead.h: splade_lmhead_gpu_fp32), for the GPU
 * encoder's SPLADE_PRECISION_FP32: out[b,v] = log1p(relu(max_{s < len[b]} H[b,s]·W[v] + bias[v])),
 * the same operations in the same order as splade_lmhead_cpu (max of the raw dot products, bias
 * after the max, then relu and log1p), every product an fp32 FMA (no tensor cores, no TF32).
 *
 * Fused SIMT kernel: a block owns 128 vocabulary rows of one sequence and walks the sequence's
 * positions 64 at a time. Each 128 x 64 tile of dot products is a register-blocked GEMM (256
 * threads, 8 x 4 outputs each, K in steps of 16 through shared memory, stored k-major so the
 * inner loop reads float4s); its max over positions is folded into 8 running maxima per thread
 * at once, so no [S, V] logit ever reaches memory. At the end the 16 threads sharing vocabulary
 * rows combine their maxima through shared memory and 128 threads write the outputs.
 * Grid: (vocabulary tiles, sequences); sequences beyond 65535 loop. No workspace. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "common/fail.h"
#include "gpu/cuda_check.h"
#include "splade.h"
#include "lmhead_fused/lmhead.h"

namespace {

constexpr int kBV = 128;  // vocabulary rows per block
constexpr int kBP = 64;   // positions per step
constexpr int kBK = 16;   // hidden columns per shared-memory stage
constexpr int kThreads = 256;
constexpr int kPadV = kBV + 4;  // k-major rows, padded (keeps float4 alignment)
constexpr int kPadP = kBP + 4;

__global__ void __launch_bounds__(kThreads)
    lmhead_fp32_kernel(const float *__restrict__ H, const int32_t *__restrict__ seq_start,
                       const int32_t *__restrict__ seq_len, int B, int D, int V, const float *__restrict__ W,
                       const float *__restrict__ bias, float *__restrict__ out, int act2)
{
    __shared__ __align__(16) float sW[kBK][kPadV];
    __shared__ __align__(16) float sH[kBK][kPadP];
    __shared__ float sRed[kThreads / 16][kBV];

    const int tid = threadIdx.x;
    const int tx = tid & 15;   // vocabulary group: rows 4tx..4tx+3 and 64+4tx..64+4tx+3
    const int ty = tid >> 4;   // position group: positions 4ty..4ty+3 of the step
    const int v0 = blockIdx.x * kBV;

    for (int b = blockIdx.y; b < B; b += gridDim.y) {
        const int len = seq_len[b];
        const size_t start = (size_t)seq_start[b];
        float rmax[8];
#pragma unroll
        for (int i = 0; i < 8; i++)
            rmax[i] = -INFINITY;

        for (int p0 = 0; p0 < len; p0 += kBP) {
            float acc[8][4];
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] = 0.f;
            for (int k0 = 0; k0 < D; k0 += kBK) {
                __syncthreads();  // the previous stage has been read by every thread
                /* W tile: 128 rows x 16 columns = 512 float4s, two per thread */
#pragma unroll
                for (int it = 0; it < 2; it++) {
                    const int idx = tid + it * kThreads;
                    const int r = idx >> 2, kq = idx & 3;
                    const int v = v0 + r, k = k0 + 4 * kq;
                    float4 w = make_float4(0.f, 0.f, 0.f, 0.f);
                    if (v < V && k < D)  // D % 4 == 0: a float4 is wholly inside or outside
                        w = *reinterpret_cast<const float4 *>(W + (size_t)v * D + k);
                    sW[4 * kq + 0][r] = w.x;
                    sW[4 * kq + 1][r] = w.y;
                    sW[4 * kq + 2][r] = w.z;
                    sW[4 * kq + 3][r] = w.w;
                }
                /* H tile: 64 positions x 16 columns = 256 float4s, one per thread */
                {
                    const int r = tid >> 2, kq = tid & 3;
                    const int p = p0 + r, k = k0 + 4 * kq;
                    float4 h = make_float4(0.f, 0.f, 0.f, 0.f);
                    if (p < len && k < D)
                        h = *reinterpret_cast<const float4 *>(H + (start + (size_t)p) * D + k);
                    sH[4 * kq + 0][r] = h.x;
                    sH[4 * kq + 1][r] = h.y;
                    sH[4 * kq + 2][r] = h.z;
                    sH[4 * kq + 3][r] = h.w;
                }
                __syncthreads();
#pragma unroll
                for (int k = 0; k < kBK; k++) {
                    const float4 a0 = *reinterpret_cast<const float4 *>(&sW[k][4 * tx]);
                    const float4 a1 = *reinterpret_cast<const float4 *>(&sW[k][64 + 4 * tx]);
                    const float4 h4 = *reinterpret_cast<const float4 *>(&sH[k][4 * ty]);
                    const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
                    const float h[4] = {h4.x, h4.y, h4.z, h4.w};
#pragma unroll
                    for (int i = 0; i < 8; i++)
#pragma unroll
                        for (int j = 0; j < 4; j++)
                            acc[i][j] = fmaf(a[i], h[j], acc[i][j]);
                }
            }
            /* fold this step's positions into the running maxima (positions past len excluded) */
#pragma unroll
            for (int j = 0; j < 4; j++)
                if (p0 + 4 * ty + j < len)
#pragma unroll
                    for (int i = 0; i < 8; i++)
                        rmax[i] = fmaxf(rmax[i], acc[i][j]);
        }
        /* combine the 16 position groups of each vocabulary row */
#pragma unroll
        for (int c = 0; c < 4; c++) {
            sRed[ty][4 * tx + c] = rmax[c];
            sRed[ty][64 + 4 * tx + c] = rmax[4 + c];
        }
        __syncthreads();
        if (tid < kBV) {
            float mx = sRed[0][tid];
#pragma unroll
            for (int g = 1; g < kThreads / 16; g++)
                mx = fmaxf(mx, sRed[g][tid]);
            const int v = v0 + tid;
            if (v < V) {
                const float x = mx + bias[v];  // -inf for an empty sequence -> 0
                const float y = x > 0.0f ? log1pf(x) : 0.0f;
                out[(size_t)b * V + v] = act2 ? log1pf(y) : y;
            }
        }
        __syncthreads();  // sRed is rewritten by the next sequence
    }
}

}  // namespace

extern "C" int splade_lmhead_gpu_fp32(const splade_lmhead_args *a, void *stream)
{
    if (!a)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "lmhead fp32: NULL arguments");
    if (a->B < 0 || a->D <= 0 || a->V <= 0)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "lmhead fp32: B=%d D=%d V=%d", (int)a->B, (int)a->D, (int)a->V);
    if (a->B == 0)
        return SPLADE_OK;
    if (!a->H || !a->W || !a->bias || !a->out || !a->seq_start || !a->seq_len)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "lmhead fp32: NULL device pointer");
    if (a->D % 4 || ((uintptr_t)a->H | (uintptr_t)a->W) % 16)
        return splade_fail(SPLADE_ERR_UNSUPPORTED,
                           "lmhead fp32: D=%d must be a multiple of 4 and H, W 16-byte aligned", (int)a->D);
    const unsigned gx = (unsigned)((a->V + kBV - 1) / kBV);
    const unsigned gy = (unsigned)(a->B < 65535 ? a->B : 65535);
    lmhead_fp32_kernel<<<dim3(gx, gy), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const float *>(a->H), a->seq_start, a->seq_len, a->B, a->D, a->V,
        static_cast<const float *>(a->W), a->bias, a->out, a->activation == 1);
    CUDA_TRY_LAUNCH();
    return SPLADE_OK;
}
