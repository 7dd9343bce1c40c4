/* C = A·Wᵀ + bias for nn.Linear weights. AVX-512 path: A is taken 32 rows at a time, transposed
 * into At [K][32] (two vectors per k), and each group of 8 W rows is read in place, one
 * broadcast per element: 16 accumulators hold an 8 x 32 tile of C. W is never packed, so a
 * 32-row query pays nothing per call beyond the arithmetic; the rows stream from L3/DRAM with
 * software prefetch (8 row streams at stride K defeat the hardware prefetcher).
 * The generic path (and large M, where packing is amortised) is single-threaded OpenBLAS. */
#include "encoder/gemm_cpu.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

enum { MB = 32 }; /* rows of A per block */

/* Above this many rows OpenBLAS wins (see bench/results/encoder-cpu-*.md). */
static const int32_t AVX512_MAX_M = 64;

size_t splade_gemm_scratch_floats(int32_t K) { return (size_t)K * MB + 8 * MB; }

static void blas_nt(const float *A, int32_t M, int32_t K, const float *W, const float *bias, int32_t n0,
                    int32_t n1, float *C, int32_t ldc, int flags)
{
    const int32_t nn = n1 - n0;
    for (int32_t m = 0; m < M; m++) {
        float *r = C + (size_t)m * ldc + n0;
        if (flags & SPLADE_GEMM_ACCUM)
            for (int32_t j = 0; j < nn; j++)
                r[j] += bias[n0 + j];
        else
            memcpy(r, bias + n0, (size_t)nn * sizeof *r);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, nn, K, 1.0f, A, K, W + (size_t)n0 * K, K, 1.0f,
                C + n0, ldc);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma")))

static int usable = -1; /* -1: decide on first use */

int splade_gemm_avx512_usable(void)
{
    if (usable < 0) {
        const char *e = getenv("SPLADE_GEMM_CPU");
        usable = !(e && !strcmp(e, "blas")) && __builtin_cpu_supports("avx512f") &&
                 __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                 __builtin_cpu_supports("fma");
    }
    return usable;
}

/* At[k][i] = A[i][k] for i < rows, 0 above: padding lanes then compute harmless zeros. */
static void transpose_block(const float *A, int32_t rows, int32_t K, float *At)
{
    if (rows < MB)
        memset(At, 0, (size_t)K * MB * sizeof *At);
    for (int32_t i = 0; i < rows; i++) {
        const float *a = A + (size_t)i * K;
        for (int32_t k = 0; k < K; k++)
            At[(size_t)k * MB + i] = a[k];
    }
}

/* Writes tile[j][i] (W row n+j, A row i) into C with bias and optional residual. */
static void store_tile(const float *tile, int32_t nj, int32_t rows, const float *bias, float *C, int32_t ldc,
                       int flags)
{
    for (int32_t i = 0; i < rows; i++) {
        float *c = C + (size_t)i * ldc;
        if (flags & SPLADE_GEMM_ACCUM)
            for (int32_t j = 0; j < nj; j++)
                c[j] += tile[j * MB + i] + bias[j];
        else
            for (int32_t j = 0; j < nj; j++)
                c[j] = tile[j * MB + i] + bias[j];
    }
}

#define ACC8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

/* 8 W rows from w (stride K) against the block: tile[j][0..32). */
AVX512 static void rows8(const float *At, int32_t K, const float *w, float *tile)
{
#define DECL(j) __m512 a##j = _mm512_setzero_ps(), b##j = _mm512_setzero_ps();
    ACC8(DECL)
#undef DECL
    for (int32_t k = 0; k < K; k++) {
        __m512 h0 = _mm512_load_ps(At + (size_t)k * MB), h1 = _mm512_load_ps(At + (size_t)k * MB + 16);
        /* The next-but-one group's rows, a line (16 floats) at a time. */
        if ((k & 15) == 0)
            for (int j = 0; j < 8; j++)
                _mm_prefetch((const char *)(w + (size_t)(16 + j) * K + k), _MM_HINT_T0);
#define STEP(j)                                                                                    \
    {                                                                                              \
        __m512 x = _mm512_set1_ps(w[(size_t)(j) * K + k]);                                         \
        a##j = _mm512_fmadd_ps(x, h0, a##j);                                                       \
        b##j = _mm512_fmadd_ps(x, h1, b##j);                                                       \
    }
        ACC8(STEP)
#undef STEP
    }
#define STORE(j)                                                                                   \
    _mm512_store_ps(tile + (j) * MB, a##j);                                                        \
    _mm512_store_ps(tile + (j) * MB + 16, b##j);
    ACC8(STORE)
#undef STORE
}

AVX512 static void row1(const float *At, int32_t K, const float *w, float *tile)
{
    __m512 a = _mm512_setzero_ps(), b = _mm512_setzero_ps();
    for (int32_t k = 0; k < K; k++) {
        __m512 x = _mm512_set1_ps(w[k]);
        a = _mm512_fmadd_ps(x, _mm512_load_ps(At + (size_t)k * MB), a);
        b = _mm512_fmadd_ps(x, _mm512_load_ps(At + (size_t)k * MB + 16), b);
    }
    _mm512_store_ps(tile, a);
    _mm512_store_ps(tile + 16, b);
}

/* One block of rows (<= 32) against W rows [n0, n1). */
AVX512 static void block_nt(const float *At, int32_t rows, int32_t K, const float *W, const float *bias,
                            int32_t n0, int32_t n1, float *C, int32_t ldc, int flags, float *tile)
{
    int32_t n = n0;
    for (; n + 8 <= n1; n += 8) {
        rows8(At, K, W + (size_t)n * K, tile);
        store_tile(tile, 8, rows, bias + n, C + n, ldc, flags);
    }
    for (; n < n1; n++) {
        row1(At, K, W + (size_t)n * K, tile);
        store_tile(tile, 1, rows, bias + n, C + n, ldc, flags);
    }
}

static void avx512_nt(const float *A, int32_t M, int32_t K, const float *W, const float *bias, int32_t n0,
                      int32_t n1, float *C, int32_t ldc, int flags, float *scratch)
{
    float *At = scratch, *tile = scratch + (size_t)K * MB;
    for (int32_t m0 = 0; m0 < M; m0 += MB) {
        int32_t rows = M - m0 < MB ? M - m0 : MB;
        transpose_block(A + (size_t)m0 * K, rows, K, At);
        block_nt(At, rows, K, W, bias, n0, n1, C + (size_t)m0 * ldc, ldc, flags, tile);
    }
}

#else /* not x86-64 GCC/Clang: OpenBLAS only */

int splade_gemm_avx512_usable(void) { return 0; }

static void avx512_nt(const float *A, int32_t M, int32_t K, const float *W, const float *bias, int32_t n0,
                      int32_t n1, float *C, int32_t ldc, int flags, float *scratch)
{
    (void)scratch;
    blas_nt(A, M, K, W, bias, n0, n1, C, ldc, flags);
}

#endif

splade_gemm_path splade_gemm_auto_path(int32_t M)
{
    return M <= AVX512_MAX_M && splade_gemm_avx512_usable() ? SPLADE_GEMM_AVX512 : SPLADE_GEMM_BLAS;
}

void splade_gemm_nt(splade_gemm_path path, const float *A, int32_t M, int32_t K, const float *W,
                    const float *bias, int32_t n0, int32_t n1, float *C, int32_t ldc, int flags, float *scratch)
{
    if (M <= 0 || n1 <= n0)
        return;
    if (path == SPLADE_GEMM_AUTO)
        path = splade_gemm_auto_path(M);
    if (path == SPLADE_GEMM_AVX512 && splade_gemm_avx512_usable())
        avx512_nt(A, M, K, W, bias, n0, n1, C, ldc, flags, scratch);
    else
        blas_nt(A, M, K, W, bias, n0, n1, C, ldc, flags);
}
