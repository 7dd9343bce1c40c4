/* The naive SPLADE LM head — the control. It runs the op sequence PyTorch eager runs for
 *     logits = h @ W.T + bias; act = log1p(relu(logits)) * mask; out = act.max(dim=1)
 * on a padded [B, max_len, D] batch, each op one kernel over the full [B*max_len, V] tensor
 * in bf16 (as eager does with bf16 weights):
 *   0. gather H into the padded batch (pad rows zero, so garbage in them never reaches a GEMM)
 *   1. cublasGemmEx bf16 x bf16 -> bf16 logits (fp32 accumulate)
 *   2. + bias   3. relu   4. log1p   5. * mask   (ping-pong between two logits buffers, the
 *      peak eager reaches: one op's input and output alive at once)
 *   6. max over the sequence -> out fp32 [B, V]
 * Workspace: padded H + 2 logits buffers = B*L*D*2 + 2*B*L*V*2 bytes (L = max_len). */
#include <cstdlib>
#include <cstdint>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "common/fail.h"
#include "common/settings.h"
#include "gpu/cuda_check.h"
#include "gpu/init_mark.h"
#include "lmhead_fused/lmhead_internal.cuh"
#include "splade.h"

namespace {

size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

struct Layout {
    size_t hp, l1, l2, total;
    long long R;
};

Layout layout(const splade_lmhead_args *a)
{
    Layout l;
    l.R = (long long)a->B * (a->max_len > 0 ? a->max_len : 1);
    l.hp = 0;
    l.l1 = align256((size_t)l.R * a->D * 2);
    l.l2 = l.l1 + align256((size_t)l.R * a->V * 2);
    l.total = l.l2 + align256((size_t)l.R * a->V * 2);
    return l;
}

__global__ void gather_kernel(const uint4 *H, const int32_t *seq_start, const int32_t *seq_len, int L, int D8,
                              uint4 *Hp, long long R)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < R * D8;
         i += (long long)gridDim.x * blockDim.x) {
        const long long row = i / D8;
        const int col = (int)(i - row * D8);
        const int b = (int)(row / L), s = (int)(row - (long long)b * L);
        uint4 v = make_uint4(0, 0, 0, 0);
        if (s < seq_len[b])
            v = H[((long long)seq_start[b] + s) * D8 + col];
        Hp[i] = v;
    }
}

/* Elementwise ops over [R, V] bf16, one block row per logits row (grid-stride both ways). */
enum Op { OP_BIAS, OP_RELU, OP_LOG1P, OP_MASK };

template <Op op>
__global__ void elementwise_kernel(const __nv_bfloat16 *in, __nv_bfloat16 *out, const float *bias,
                                   const int32_t *seq_len, int L, int V, long long R)
{
    for (long long row = blockIdx.y; row < R; row += gridDim.y) {
        float m = 1.f;
        if (op == OP_MASK)
            m = (row % L) < seq_len[row / L] ? 1.f : 0.f;
        const __nv_bfloat16 *src = in + row * V;
        __nv_bfloat16 *dst = out + row * V;
        for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < V; v += gridDim.x * blockDim.x) {
            float x = __bfloat162float(src[v]);
            if (op == OP_BIAS)
                x = x + bias[v];
            else if (op == OP_RELU)
                x = x > 0.f ? x : 0.f;
            else if (op == OP_LOG1P)
                x = log1pf(x);
            else
                x = x * m;
            dst[v] = __float2bfloat16(x);
        }
    }
}

/* Same, two elements a thread (V even: rows stay 4-byte aligned). */
template <Op op>
__global__ void elementwise2_kernel(const __nv_bfloat162 *in, __nv_bfloat162 *out, const float2 *bias,
                                    const int32_t *seq_len, int L, int V2, long long R)
{
    for (long long row = blockIdx.y; row < R; row += gridDim.y) {
        float m = 1.f;
        if (op == OP_MASK)
            m = (row % L) < seq_len[row / L] ? 1.f : 0.f;
        const __nv_bfloat162 *src = in + row * V2;
        __nv_bfloat162 *dst = out + row * V2;
        for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < V2; v += gridDim.x * blockDim.x) {
            float2 x = __bfloat1622float2(src[v]);
            if (op == OP_BIAS) {
                const float2 bb = bias[v];
                x.x += bb.x;
                x.y += bb.y;
            } else if (op == OP_RELU) {
                x.x = x.x > 0.f ? x.x : 0.f;
                x.y = x.y > 0.f ? x.y : 0.f;
            } else if (op == OP_LOG1P) {
                x.x = log1pf(x.x);
                x.y = log1pf(x.y);
            } else {
                x.x *= m;
                x.y *= m;
            }
            dst[v] = __float22bfloat162_rn(x);
        }
    }
}

__global__ void max_over_seq_kernel(const __nv_bfloat16 *act, int L, int V, float *out)
{
    const int b = blockIdx.y;
    const __nv_bfloat16 *base = act + (long long)b * L * V;
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < V; v += gridDim.x * blockDim.x) {
        float m = -INFINITY;
        for (int s = 0; s < L; s++)
            m = fmaxf(m, __bfloat162float(base[(long long)s * V + v]));
        out[(long long)b * V + v] = m;
    }
}

template <Op op>
int launch_op(const __nv_bfloat16 *in, __nv_bfloat16 *out, const splade_lmhead_args *a, long long R,
              cudaStream_t stream)
{
    const int L = a->max_len > 0 ? a->max_len : 1;
    const int threads = 256;
    const int per_row = (a->V % 2 == 0) ? a->V / 2 : a->V;
    dim3 grid((per_row + threads - 1) / threads, (unsigned)(R < 65535 ? R : 65535));
    if (a->V % 2 == 0)
        elementwise2_kernel<op><<<grid, threads, 0, stream>>>(
            reinterpret_cast<const __nv_bfloat162 *>(in), reinterpret_cast<__nv_bfloat162 *>(out),
            reinterpret_cast<const float2 *>(a->bias), a->seq_len, L, a->V / 2, R);
    else
        elementwise_kernel<op><<<grid, threads, 0, stream>>>(in, out, a->bias, a->seq_len, L, a->V, R);
    CUDA_TRY_LAUNCH();
    return SPLADE_OK;
}

} // namespace

size_t splade_lmhead_naive_workspace(const splade_lmhead_args *a) { return layout(a).total; }

int splade_lmhead_naive_run(const splade_lmhead_args *a, void *workspace, size_t workspace_bytes,
                            void *cublas_handle, void *stream_)
{
    const Layout l = layout(a);
    if (!cublas_handle)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "lmhead naive: needs a cuBLAS handle");
    if (!workspace || workspace_bytes < l.total)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "lmhead naive: workspace of %zu bytes, needs %zu",
                           workspace ? workspace_bytes : (size_t)0, l.total);
    if (l.R > INT32_MAX)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "lmhead naive: %lld rows exceed cuBLAS's int", l.R);
    cudaStream_t stream = static_cast<cudaStream_t>(stream_);
    cublasHandle_t h = static_cast<cublasHandle_t>(cublas_handle);
    const int L = a->max_len > 0 ? a->max_len : 1;
    uint8_t *ws = static_cast<uint8_t *>(workspace);
    __nv_bfloat16 *Hp = reinterpret_cast<__nv_bfloat16 *>(ws + l.hp);
    __nv_bfloat16 *X = reinterpret_cast<__nv_bfloat16 *>(ws + l.l1);
    __nv_bfloat16 *Y = reinterpret_cast<__nv_bfloat16 *>(ws + l.l2);

    const int D8 = a->D / 8;
    gather_kernel<<<1024, 256, 0, stream>>>(static_cast<const uint4 *>(a->H), a->seq_start, a->seq_len, L, D8,
                                            reinterpret_cast<uint4 *>(Hp), l.R);
    CUDA_TRY_LAUNCH();

    /* column-major view: C[V x R] = W^T (W stored [V][D] = col-major D x V) * Hp (col-major D x R) */
    const float alpha = 1.f, beta = 0.f;
    if (splade_settings_get()->gpu_poison) /* 3.4e38 logits unless cuBLAS writes all */
        CUDA_TRY(cudaMemsetAsync(X, 0x7F, (size_t)l.R * a->V * sizeof(__nv_bfloat16), stream));
    CUBLAS_TRY(cublasSetStream(h, stream));
    CUBLAS_TRY(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, a->V, (int)l.R, a->D, &alpha, a->W, CUDA_R_16BF, a->D, Hp,
                            CUDA_R_16BF, a->D, &beta, X, CUDA_R_16BF, a->V, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
    splade_gpu_mark_initialized(X, (size_t)l.R * a->V * sizeof(__nv_bfloat16), stream); /* initcheck: see init_mark.cu */
    int st;
    if ((st = launch_op<OP_BIAS>(X, Y, a, l.R, stream)) || (st = launch_op<OP_RELU>(Y, X, a, l.R, stream)) ||
        (st = launch_op<OP_LOG1P>(X, Y, a, l.R, stream)) ||
        (a->activation == 1 && (st = launch_op<OP_LOG1P>(Y, Y, a, l.R, stream))) || /* in place: elementwise */
        (st = launch_op<OP_MASK>(Y, X, a, l.R, stream)))
        return st;
    dim3 grid((a->V + 255) / 256, a->B);
    max_over_seq_kernel<<<grid, 256, 0, stream>>>(X, L, a->V, a->out);
    CUDA_TRY_LAUNCH();
    return SPLADE_OK;
}
