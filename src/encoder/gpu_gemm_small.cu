/* The GPU encoder's GEMMs for small batches, without cuBLASLt (issue #13: fixed start-up).
 *
 * Loading cuBLASLt (0.06-0.08 s) and its one-time set-up on the first call (0.08-0.10 s), plus
 * the part of the exit they add, were measured at 0.17-0.22 s of a 1-text `encode`'s 0.63-0.67 s
 * on an H200 (bench/results/startup-floor-2026-11-26.md). A batch of a few tokens needs none of
 * cuBLASLt's speed: its GEMMs stream each weight once, which this plain tensor-core kernel does in
 * microseconds. So a batch of at most SPLADE_GPU_SMALL_GEMM tokens (default 64), or a single
 * sequence of at most SPLADE_GPU_SMALL_SINGLE tokens, runs here, and an encoder that only ever sees such
 * batches never loads cuBLASLt (gpu_gemm.cu creates its handle on the first large batch; the
 * library is dlopen'ed then: src/gpu/cublas_lazy.c).
 *
 * Same contract as gemm(): Y[T,N] = X[T,K] · W[N,K]ᵀ + bias[N] (+ GELU, tanh form, as cuBLASLt's
 * GELU_BIAS epilogue), bf16 operands and output, fp32 accumulation in a fixed order (the same bits
 * on every run). Not for fp32 storage (cuBLASLt's pedantic fp32 stays the reference there). */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include "encoder/gpu_encoder_state.cuh"
#include "gpu/cuda_check.h"

namespace splade_gpu_enc {

namespace {

using namespace nvcuda;

/* Block tile 64 tokens x 64 outputs, K in steps of 32; 8 warps as 4 x 2, each 16 x 32 outputs. */
constexpr int kTM = 64, kTN = 64, kTK = 32, kPad = 8, kThreads = 256;

__device__ __forceinline__ float gelu_tanh(float x)
{
    return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

static_assert(kTM == kTN, "load_tile fills kTM rows of either operand");

/* rows x kTK of M (row-major, leading dimension K) from (r0, k0) into s in 16-byte pieces, zeros past
 * rows and K (gemm_small_fits: K % 8 == 0 and M 16-byte aligned, so a piece is whole or absent). */
__device__ __forceinline__ void load_tile(bf16 (*s)[kTK + kPad], const bf16 *__restrict__ M, int r0, int rows, int k0,
                                          int K)
{
    for (int i = threadIdx.x; i < kTM * (kTK / 8); i += kThreads) {
        const int r = i / (kTK / 8), c = i % (kTK / 8) * 8, row = r0 + r, k = k0 + c;
        *reinterpret_cast<uint4 *>(&s[r][c]) =
            row < rows && k < K ? *reinterpret_cast<const uint4 *>(M + (size_t)row * K + k) : make_uint4(0, 0, 0, 0);
    }
}

__global__ void __launch_bounds__(kThreads) small_gemm(const bf16 *__restrict__ X, const bf16 *__restrict__ W,
                                                       const bf16 *__restrict__ bias, bf16 *__restrict__ Y, int T,
                                                       int N, int K, int gelu)
{
    __shared__ __align__(32) bf16 xs[kTM][kTK + kPad];
    __shared__ __align__(32) bf16 ws[kTN][kTK + kPad];
    __shared__ __align__(32) float cs[kTM][kTN + 4];
    const int t0 = blockIdx.y * kTM, n0 = blockIdx.x * kTN;
    const int warp = threadIdx.x / 32, wr = warp / 2, wc = warp % 2;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2];
    wmma::fill_fragment(acc[0], 0.f);
    wmma::fill_fragment(acc[1], 0.f);
    for (int k0 = 0; k0 < K; k0 += kTK) {
        load_tile(xs, X + (size_t)t0 * K, 0, T - t0, k0, K);
        load_tile(ws, W + (size_t)n0 * K, 0, N - n0, k0, K);
        __syncthreads();
        for (int kk = 0; kk < kTK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> a;
            wmma::load_matrix_sync(a, &xs[wr * 16][kk], kTK + kPad);
            for (int j = 0; j < 2; j++) {
                /* B[k][n] = W[n][k]: column-major B is W's rows as they lie */
                wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> b;
                wmma::load_matrix_sync(b, &ws[wc * 32 + j * 16][kk], kTK + kPad);
                wmma::mma_sync(acc[j], a, b, acc[j]);
            }
        }
        __syncthreads();
    }
    for (int j = 0; j < 2; j++)
        wmma::store_matrix_sync(&cs[wr * 16][wc * 32 + j * 16], acc[j], kTN + 4, wmma::mem_row_major);
    __syncthreads();
    for (int i = threadIdx.x; i < kTM * kTN; i += kThreads) {
        const int r = i / kTN, c = i % kTN, t = t0 + r, n = n0 + c;
        if (t >= T || n >= N)
            continue;
        float v = cs[r][c] + (bias ? __bfloat162float(bias[n]) : 0.f);
        Y[(size_t)t * N + n] = __float2bfloat16_rn(gelu ? gelu_tanh(v) : v);
    }
}

}  // namespace

bool gemm_small_fits(const splade_gpu_encoder *g, int T, int B)
{
    if (g->fp32 || g->small_T <= 0 || g->H % 8 || g->I % 8)  // 16-byte rows for load_tile
        return false;
    return T <= g->small_T || (B == 1 && T <= SPLADE_GPU_SMALL_SINGLE);
}

int gemm_small(splade_gpu_encoder *g, const void *X, const void *W, const void *bias, void *Y, int T, int N, int K,
               bool gelu)
{
    if (T <= 0 || N <= 0)
        return SPLADE_OK;
    if (reinterpret_cast<uintptr_t>(X) % 16 || reinterpret_cast<uintptr_t>(W) % 16 || K % 8)
        return splade_fail(SPLADE_ERR_CUDA, "%s:%d: small GEMM operands not 16-byte rows (K %d)", __FILE__,
                           __LINE__, K);
    const dim3 grid((N + kTN - 1) / kTN, (T + kTM - 1) / kTM);
    TRY(prof_begin(g, SPLADE_GPU_PROF_GEMM));
    small_gemm<<<grid, kThreads, 0, g->stream>>>(static_cast<const bf16 *>(X), static_cast<const bf16 *>(W),
                                                 static_cast<const bf16 *>(bias), static_cast<bf16 *>(Y), T, N, K,
                                                 gelu ? 1 : 0);
    CUDA_TRY_LAUNCH();
    TRY(prof_end(g));
    return SPLADE_OK;
}

}  // namespace splade_gpu_enc
