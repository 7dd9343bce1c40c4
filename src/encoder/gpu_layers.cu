/* Row kernels of the GPU encoder: embedding gather + LayerNorm, residual add + LayerNorm,
 * exact-erf GELU. One warp per token row, 16-byte loads and stores, fp32 math. Templated on the
 * activation storage type S: bf16 (the default precision) or float (SPLADE_PRECISION_FP32). */
#include <cuda_bf16.h>

#include <type_traits>

#include "common/fail.h"
#include "encoder/gpu_kernels.cuh"
#include "gpu/cuda_check.h"

namespace splade_gpu {

namespace {

constexpr int kRowsPerBlock = 8;  // 256 threads

__device__ __forceinline__ float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

__device__ __forceinline__ void load8(const bf16 *p, float *v)
{
    uint4 u = *reinterpret_cast<const uint4 *>(p);
    const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 f = __bfloat1622float2(h[i]);
        v[2 * i] = f.x;
        v[2 * i + 1] = f.y;
    }
}

__device__ __forceinline__ void load8f(const float *p, float *v)
{
    float4 a = *reinterpret_cast<const float4 *>(p);
    float4 b = *reinterpret_cast<const float4 *>(p + 4);
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}

__device__ __forceinline__ void load8(const float *p, float *v) { load8f(p, v); }

__device__ __forceinline__ void store8(float *p, const float *v)
{
    *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
    *reinterpret_cast<float4 *>(p + 4) = make_float4(v[4], v[5], v[6], v[7]);
}

__device__ __forceinline__ void store8(bf16 *p, const float *v)
{
    uint4 u;
    __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++)
        h[i] = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
    *reinterpret_cast<uint4 *>(p) = u;
}

__device__ __forceinline__ float warp_sum(float x)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

__device__ __forceinline__ double warp_sum_d(double x)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

/* fp32 storage (SPLADE_PRECISION_FP32): the CPU's LayerNorm arithmetic (rowops_cpu.c): mean and
 * centred variance summed in double, inv = (float)(1 / sqrt(var / H + eps)), each value
 * (float)((x - mean) * inv) then times g plus b in float, rounded separately (no FMA). */
template <int NPL>
__device__ __forceinline__ void ln_store_cpu_exact(float (&v)[NPL][8], int lane, int nv, int H, const float *g,
                                                   const float *b, float eps, float *out)
{
    double s = 0.0;
#pragma unroll
    for (int j = 0; j < NPL; j++)
        if (lane + 32 * j < nv)
#pragma unroll
            for (int e = 0; e < 8; e++)
                s += v[j][e];
    const double mean = warp_sum_d(s) / H;
    double q = 0.0;
#pragma unroll
    for (int j = 0; j < NPL; j++)
        if (lane + 32 * j < nv)
#pragma unroll
            for (int e = 0; e < 8; e++) {
                const double d = v[j][e] - mean;
                q = fma(d, d, q);
            }
    const float inv = (float)(1.0 / sqrt(warp_sum_d(q) / H + (double)eps));
#pragma unroll
    for (int j = 0; j < NPL; j++) {
        int c = lane + 32 * j;
        if (c < nv) {
            float gg[8], bb[8], o[8];
            load8f(g + 8 * c, gg);
            load8f(b + 8 * c, bb);
#pragma unroll
            for (int e = 0; e < 8; e++)
                o[e] = __fadd_rn(__fmul_rn((float)((v[j][e] - mean) * (double)inv), gg[e]), bb[e]);
            store8(out + 8 * c, o);
        }
    }
}

/* LayerNorm of the row held in v (NPL chunks of 8 per lane; chunk j is column block lane+32j,
 * valid when < nv), written to out. Two-pass (mean, then centred variance) in fp32 (bf16
 * storage); in double as the CPU for fp32 storage. */
template <int NPL, typename S>
__device__ __forceinline__ void ln_store(float (&v)[NPL][8], int lane, int nv, int H, const float *g,
                                         const float *b, float eps, S *out)
{
    if constexpr (std::is_same<S, float>::value) {
        ln_store_cpu_exact<NPL>(v, lane, nv, H, g, b, eps, out);
        return;
    }
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < NPL; j++)
        if (lane + 32 * j < nv)
#pragma unroll
            for (int e = 0; e < 8; e++)
                s += v[j][e];
    const float mean = warp_sum(s) / (float)H;
    float q = 0.f;
#pragma unroll
    for (int j = 0; j < NPL; j++)
        if (lane + 32 * j < nv)
#pragma unroll
            for (int e = 0; e < 8; e++) {
                float d = v[j][e] - mean;
                q += d * d;
            }
    const float rstd = rsqrtf(warp_sum(q) / (float)H + eps);
#pragma unroll
    for (int j = 0; j < NPL; j++) {
        int c = lane + 32 * j;
        if (c < nv) {
            float gg[8], bb[8], o[8];
            load8f(g + 8 * c, gg);
            load8f(b + 8 * c, bb);
#pragma unroll
            for (int e = 0; e < 8; e++)
                o[e] = (v[j][e] - mean) * rstd * gg[e] + bb[e];
            store8(out + 8 * c, o);
        }
    }
}

template <int NPL, typename S>
__global__ void __launch_bounds__(kRowsPerBlock * 32)
    embed_ln_kernel(const int32_t *__restrict__ ids, const int32_t *__restrict__ pos_ids, int T, int H,
                    const S *__restrict__ word, const float *__restrict__ pos,
                    const float *__restrict__ type0, const float *__restrict__ g,
                    const float *__restrict__ b, float eps, S *__restrict__ out)
{
    const int row = blockIdx.x * kRowsPerBlock + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (row >= T)
        return;
    const int nv = H >> 3;
    const S *w = word + (size_t)ids[row] * H;
    const float *p = pos + (size_t)pos_ids[row] * H;
    float v[NPL][8];
#pragma unroll
    for (int j = 0; j < NPL; j++) {
        int c = lane + 32 * j;
        if (c < nv) {
            float a[8], pp[8], tt[8];
            load8(w + 8 * c, a);
            load8f(p + 8 * c, pp);
            load8f(type0 + 8 * c, tt);
#pragma unroll
            for (int e = 0; e < 8; e++)
                v[j][e] = a[e] + pp[e] + tt[e];
        }
    }
    ln_store<NPL>(v, lane, nv, H, g, b, eps, out + (size_t)row * H);
}

template <int NPL, typename S>
__global__ void __launch_bounds__(kRowsPerBlock * 32)
    add_ln_kernel(const S *x, const S *res, int gelu, int T, int H, const float *__restrict__ g,
                  const float *__restrict__ b, float eps, S *out)
{
    const int row = blockIdx.x * kRowsPerBlock + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (row >= T)
        return;
    const int nv = H >> 3;
    const S *xr = x + (size_t)row * H;
    float v[NPL][8];
#pragma unroll
    for (int j = 0; j < NPL; j++) {
        int c = lane + 32 * j;
        if (c < nv) {
            load8(xr + 8 * c, v[j]);
            if (gelu)
#pragma unroll
                for (int e = 0; e < 8; e++)
                    v[j][e] = gelu_erf(v[j][e]);
            if (res) {
                float r[8];
                load8(res + (size_t)row * H + 8 * c, r);
#pragma unroll
                for (int e = 0; e < 8; e++)
                    v[j][e] += r[e];
            }
        }
    }
    ln_store<NPL>(v, lane, nv, H, g, b, eps, out + (size_t)row * H);
}

template <typename S>
__global__ void gelu_kernel(S *__restrict__ x, size_t n8)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n8; i += (size_t)gridDim.x * blockDim.x) {
        float v[8];
        load8(x + 8 * i, v);
#pragma unroll
        for (int e = 0; e < 8; e++)
            v[e] = gelu_erf(v[e]);
        store8(x + 8 * i, v);
    }
}

inline int npl_for(int H) { return (H / 8 + 31) / 32; }

}  // namespace

#define SPLADE_ROW_DISPATCH(KERNEL, S, ...)                                                \
    do {                                                                                    \
        const int blocks_ = (T + kRowsPerBlock - 1) / kRowsPerBlock;                        \
        switch (npl_for(H)) {                                                               \
        case 1: KERNEL<1, S><<<blocks_, kRowsPerBlock * 32, 0, s>>>(__VA_ARGS__); break;    \
        case 2: KERNEL<2, S><<<blocks_, kRowsPerBlock * 32, 0, s>>>(__VA_ARGS__); break;    \
        case 3: KERNEL<3, S><<<blocks_, kRowsPerBlock * 32, 0, s>>>(__VA_ARGS__); break;    \
        case 4: KERNEL<4, S><<<blocks_, kRowsPerBlock * 32, 0, s>>>(__VA_ARGS__); break;    \
        case 5: case 6: case 7: case 8:                                                     \
            KERNEL<8, S><<<blocks_, kRowsPerBlock * 32, 0, s>>>(__VA_ARGS__); break;        \
        default:                                                                            \
            return splade_fail(SPLADE_ERR_UNSUPPORTED, "gpu encoder: hidden size %d", H);   \
        }                                                                                   \
        CUDA_TRY_LAUNCH();                                                                  \
    } while (0)

namespace {

template <typename S>
int embed_ln_t(const int32_t *ids, const int32_t *pos_ids, int T, int H, const S *word, const float *pos,
               const float *type0, const float *g, const float *b, float eps, S *out, cudaStream_t s)
{
    if (T <= 0)
        return SPLADE_OK;
    if (H % 8 || H > kMaxHidden)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "gpu encoder: hidden size %d", H);
    SPLADE_ROW_DISPATCH(embed_ln_kernel, S, ids, pos_ids, T, H, word, pos, type0, g, b, eps, out);
    return SPLADE_OK;
}

template <typename S>
int add_ln_t(const S *x, const S *res, int gelu, int T, int H, const float *g, const float *b, float eps, S *out,
             cudaStream_t s)
{
    if (T <= 0)
        return SPLADE_OK;
    if (H % 8 || H > kMaxHidden)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "gpu encoder: hidden size %d", H);
    SPLADE_ROW_DISPATCH(add_ln_kernel, S, x, res, gelu, T, H, g, b, eps, out);
    return SPLADE_OK;
}

template <typename S>
int gelu_t(S *x, size_t n, cudaStream_t s)
{
    if (n == 0)
        return SPLADE_OK;
    if (n % 8)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "gpu encoder: GELU over %zu values (needs a multiple of 8)", n);
    size_t n8 = n / 8;
    size_t blocks = (n8 + 255) / 256;
    if (blocks > 65535)
        blocks = 65535;
    gelu_kernel<S><<<(unsigned)blocks, 256, 0, s>>>(x, n8);
    CUDA_TRY_LAUNCH();
    return SPLADE_OK;
}

}  // namespace

int embed_ln(const int32_t *ids, const int32_t *pos_ids, int T, int H, const bf16 *word, const float *pos,
             const float *type0, const float *g, const float *b, float eps, bf16 *out, cudaStream_t s)
{
    return embed_ln_t(ids, pos_ids, T, H, word, pos, type0, g, b, eps, out, s);
}

int embed_ln(const int32_t *ids, const int32_t *pos_ids, int T, int H, const float *word, const float *pos,
             const float *type0, const float *g, const float *b, float eps, float *out, cudaStream_t s)
{
    return embed_ln_t(ids, pos_ids, T, H, word, pos, type0, g, b, eps, out, s);
}

int add_ln(const bf16 *x, const bf16 *res, int gelu, int T, int H, const float *g, const float *b, float eps,
           bf16 *out, cudaStream_t s)
{
    return add_ln_t(x, res, gelu, T, H, g, b, eps, out, s);
}

int add_ln(const float *x, const float *res, int gelu, int T, int H, const float *g, const float *b, float eps,
           float *out, cudaStream_t s)
{
    return add_ln_t(x, res, gelu, T, H, g, b, eps, out, s);
}

int gelu_erf_inplace(bf16 *x, size_t n, cudaStream_t s) { return gelu_t(x, n, s); }

int gelu_erf_inplace(float *x, size_t n, cudaStream_t s) { return gelu_t(x, n, s); }

}  // namespace splade_gpu
