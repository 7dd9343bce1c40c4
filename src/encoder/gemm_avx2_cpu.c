/* Few-row fp32 GEMM in place for CPUs with AVX2 + FMA but not AVX-512 (gemm_cpu.h's SPLADE_GEMM_AVX2):
 * gemm_cpu.c's rows8 at 8 lanes. A's rows are transposed into lanes (At [K][32], lanes past M zero),
 * each group of 8 W rows is read in place, one broadcast per weight, and every output is the same
 * chain of FMAs over k from 0, then + bias (+ C), as the AVX-512 kernel's and the packed kernels'
 * (gemm_packed_cpu.h): a CPU without AVX-512 gives the same vectors before and after its packed
 * copy exists, and the same as one with AVX-512. Without it those CPUs took OpenBLAS, whose
 * summation order depends on the call. */
#include "encoder/gemm_cpu.h"

#include <string.h>

enum { MB = 32, LANES = 8 };

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma")))

/* 8 W rows (w, row stride ldw) against lanes [lane0, lane0 + 8) of At: tile[j * 8 + i]. The first
 * lane chunk prefetches the next-but-one group's rows, a line at a time, as rows8 does. */
AVX2 static void rows8x8(const float *At, int32_t K, const float *w, int32_t ldw, int lane0, int prefetch,
                         float *tile)
{
    __m256 a[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++)
        a[j] = _mm256_setzero_ps();
    for (int32_t k = 0; k < K; k++) {
        const __m256 h = _mm256_load_ps(At + (size_t)k * MB + lane0);
        if (prefetch && (k & 15) == 0)
            for (int j = 0; j < 8; j++)
                _mm_prefetch((const char *)(w + (size_t)(16 + j) * ldw + k), _MM_HINT_T0);
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++)
            a[j] = _mm256_fmadd_ps(_mm256_broadcast_ss(w + (size_t)j * ldw + k), h, a[j]);
    }
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++)
        _mm256_store_ps(tile + j * LANES, a[j]);
}

/* One W row against lanes [lane0, lane0 + 8): tile[0 .. 8). */
AVX2 static void row1x8(const float *At, int32_t K, const float *w, int lane0, float *tile)
{
    __m256 a = _mm256_setzero_ps();
    for (int32_t k = 0; k < K; k++)
        a = _mm256_fmadd_ps(_mm256_broadcast_ss(w + k), _mm256_load_ps(At + (size_t)k * MB + lane0), a);
    _mm256_store_ps(tile, a);
}

/* C rows lane0 .. lane0 + rows, columns n .. n + nj = tile + bias (+ C): the AVX-512 store's order. */
static void store(const float *tile, int32_t nj, int32_t rows, const float *bias, float *C, int32_t ldc, int flags)
{
    for (int32_t i = 0; i < rows; i++) {
        float *c = C + (size_t)i * ldc;
        for (int32_t j = 0; j < nj; j++) {
            const float v = tile[j * LANES + i] + bias[j];
            c[j] = (flags & SPLADE_GEMM_ACCUM) ? v + c[j] : v;
        }
    }
}

void splade_gemm_avx2_nt(const float *A, int32_t M, int32_t K, const float *W, const float *bias, int32_t n0,
                         int32_t n1, float *C, int32_t ldc, int flags, float *scratch)
{
    float *At = scratch, *tile = scratch + (size_t)K * MB; /* 64-byte aligned scratch (gemm_cpu.h) */
    for (int32_t m0 = 0; m0 < M; m0 += MB) {
        const int32_t rows = M - m0 < MB ? M - m0 : MB;
        memset(At, 0, (size_t)K * MB * sizeof *At);
        for (int32_t i = 0; i < rows; i++)
            for (int32_t k = 0; k < K; k++)
                At[(size_t)k * MB + i] = A[(size_t)(m0 + i) * K + k];
        float *c = C + (size_t)m0 * ldc;
        for (int32_t n = n0; n < n1; n += 8) {
            const int32_t nj = n1 - n < 8 ? n1 - n : 8;
            for (int lane0 = 0; lane0 < rows; lane0 += LANES) {
                const int32_t lr = rows - lane0 < LANES ? rows - lane0 : LANES;
                if (nj == 8)
                    rows8x8(At, K, W + (size_t)n * K, K, lane0, lane0 == 0, tile);
                else
                    for (int32_t j = 0; j < nj; j++)
                        row1x8(At, K, W + (size_t)(n + j) * K, lane0, tile + j * LANES);
                store(tile, nj, lr, bias + n, c + (size_t)lane0 * ldc + n, ldc, flags);
            }
        }
    }
}

int splade_gemm_avx2_usable(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

#else

void splade_gemm_avx2_nt(const float *A, int32_t M, int32_t K, const float *W, const float *bias, int32_t n0,
                         int32_t n1, float *C, int32_t ldc, int flags, float *scratch)
{
    (void)A, (void)M, (void)K, (void)W, (void)bias, (void)n0, (void)n1, (void)C, (void)ldc, (void)flags,
        (void)scratch;
}

int splade_gemm_avx2_usable(void) { return 0; }

#endif
