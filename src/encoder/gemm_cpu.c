/* C = A·Wᵀ + bias for nn.Linear weights. AVX-512 path: A is taken 32 rows at a time, transposed
 * into At [K][32] (two vectors per k), and each group of 8 W rows is read in place, one
 * broadcast per element: 16 accumulators hold an 8 x 32 tile of C. W is never packed, so a
 * 32-row query pays nothing per call beyond the arithmetic; the rows stream from L3/DRAM with
 * software prefetch (8 row streams at stride K defeat the hardware prefetcher).
 * The generic path (and large M, where packing is amortised) is single-threaded OpenBLAS. */
#include "encoder/gemm_cpu.h"
#include "common/cpu_team.h"
#include "common/settings.h"
#include "encoder/gemm_dnnl.h"
#include "encoder/gemm_packed_cpu.h"
#include "encoder/rowops_cpu.h"

#include <cblas.h>
#include <pthread.h>
#include <string.h>

enum { MB = 32 }; /* rows of A per block */
/* No K chunking: keeping a 256- or 512-wide slice of At in L1 measured 3-15% slower than
 * streaming the whole At [K][32] from L2 (2 loads per 16 FMAs are within L2's bandwidth). */

size_t splade_gemm_scratch_floats(int32_t K)
{
    const size_t own = (size_t)K * MB + 8 * MB, packed = splade_gemm_packed_scratch_floats(SPLADE_GEMM_SMALL_M);
    return own > packed ? own : packed;
}

static void blas_cols(const float *A, int32_t M, int32_t K, const float *W, const float *bias, int32_t n0,
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

/* OpenBLAS picks its kernel (a "small matrix" one below ~1e6 M*N*K, with another summation
 * order) from the call's shape, so a thread's column share would change the rounding with the
 * thread count. For few rows, calls go in fixed 64-column units at absolute offsets: the same
 * calls whatever the split, hence the same bits on 1 or 2 threads. */
static void blas_nt(const float *A, int32_t M, int32_t K, const float *W, const float *bias, int32_t n0,
                    int32_t n1, float *C, int32_t ldc, int flags)
{
    if (M > SPLADE_GEMM_SMALL_M) {
        blas_cols(A, M, K, W, bias, n0, n1, C, ldc, flags);
        return;
    }
    for (int32_t u = n0; u < n1; u = (u / SPLADE_GEMM_UNIT + 1) * SPLADE_GEMM_UNIT) {
        int32_t end = (u / SPLADE_GEMM_UNIT + 1) * SPLADE_GEMM_UNIT;
        blas_cols(A, M, K, W, bias, u, end < n1 ? end : n1, C, ldc, flags);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma")))

/* Decided once per process (pthread_once: the team's threads all ask at their first GEMM). */
static pthread_once_t usable_once = PTHREAD_ONCE_INIT;
static int usable;

static void decide_usable(void)
{
    const splade_settings *st = splade_settings_get();
    usable = !st->gemm_cpu_blas && !st->gemm_cpu_avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
}

int splade_gemm_avx512_usable(void)
{
    pthread_once(&usable_once, decide_usable);
    return usable;
}

/* (Loops over register arrays carry "unroll" pragmas: at -O2 GCC would otherwise keep the
 * arrays on the stack.) */

/* At[k + c][i0 + i] = A[i][k + c] for a 16 x 16 block (rows >= nrows read as 0): unpack pairs,
 * then two rounds of 128-bit lane shuffles. Scalar, the transposes of A were 3-5% of a query. */
AVX512 static void transpose16(const float *A, int32_t K, int32_t nrows, int32_t k, float *at)
{
    __m512 r[16], t[16], u[16], v[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
        r[i] = i < nrows ? _mm512_loadu_ps(A + (size_t)i * K + k) : _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int j = 0; j < 8; j++) {
        t[2 * j] = _mm512_unpacklo_ps(r[2 * j], r[2 * j + 1]);
        t[2 * j + 1] = _mm512_unpackhi_ps(r[2 * j], r[2 * j + 1]);
    }
#pragma GCC unroll 16
    for (int j = 0; j < 4; j++) { /* u[4j+q] lane L: rows 4j..4j+3 of column 4L+q */
        __m512d a = _mm512_castps_pd(t[4 * j]), b = _mm512_castps_pd(t[4 * j + 1]);
        __m512d c = _mm512_castps_pd(t[4 * j + 2]), d = _mm512_castps_pd(t[4 * j + 3]);
        u[4 * j] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        u[4 * j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        u[4 * j + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        u[4 * j + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
#pragma GCC unroll 16
    for (int q = 0; q < 4; q++) {
        v[q] = _mm512_shuffle_f32x4(u[q], u[4 + q], 0x88);
        v[q + 4] = _mm512_shuffle_f32x4(u[q], u[4 + q], 0xDD);
        v[q + 8] = _mm512_shuffle_f32x4(u[8 + q], u[12 + q], 0x88);
        v[q + 12] = _mm512_shuffle_f32x4(u[8 + q], u[12 + q], 0xDD);
    }
#pragma GCC unroll 16
    for (int q = 0; q < 4; q++) {
        _mm512_store_ps(at + (size_t)q * MB, _mm512_shuffle_f32x4(v[q], v[q + 8], 0x88));
        _mm512_store_ps(at + (size_t)(q + 8) * MB, _mm512_shuffle_f32x4(v[q], v[q + 8], 0xDD));
        _mm512_store_ps(at + (size_t)(q + 4) * MB, _mm512_shuffle_f32x4(v[q + 4], v[q + 12], 0x88));
        _mm512_store_ps(at + (size_t)(q + 12) * MB, _mm512_shuffle_f32x4(v[q + 4], v[q + 12], 0xDD));
    }
}

/* At[k][i] = A[i][k] for i < rows, 0 above: padding lanes then compute harmless zeros. */
static void transpose_block(const float *A, int32_t rows, int32_t K, float *At)
{
    const int32_t k16 = K / 16 * 16;
    if (rows < MB && k16 < K)
        memset(At + (size_t)k16 * MB, 0, (size_t)(K - k16) * MB * sizeof *At);
    for (int32_t i0 = 0; i0 < MB; i0 += 16) {
        int32_t nr = rows - i0 < 0 ? 0 : rows - i0 > 16 ? 16 : rows - i0;
        for (int32_t k = 0; k < k16; k += 16)
            transpose16(A + (size_t)i0 * K, K, nr, k, At + (size_t)k * MB + i0);
    }
    for (int32_t i = 0; i < rows; i++)
        for (int32_t k = k16; k < K; k++)
            At[(size_t)k * MB + i] = A[(size_t)i * K + k];
}

/* Writes tile[j][i] (W row n+j, A row i) into C with bias and optional residual (tails). */
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

/* Stores 8 columns (W rows n..n+7) of 16 C rows: r[j] holds C[i0..i0+16)[n+j]. An in-register
 * 8x16 -> 16x8 transpose (unpack, shuffle, then 128-bit lane interleave) so the epilogue is 16
 * vector row writes, not 128 scalar ones (5% of a bert-base query when scalar). */
AVX512 static inline void store8x16(__m512 r[8], int32_t rows, const float *bias, float *C, int32_t ldc, int flags)
{
    __m512 t[8], u[8];
#pragma GCC unroll 16
    for (int p = 0; p < 4; p++) {
        t[2 * p] = _mm512_unpacklo_ps(r[2 * p], r[2 * p + 1]);
        t[2 * p + 1] = _mm512_unpackhi_ps(r[2 * p], r[2 * p + 1]);
    }
#pragma GCC unroll 16
    for (int h = 0; h < 2; h++) { /* rows 0-3 of the tile (h = 0), rows 4-7 (h = 1) */
        __m512 *tt = t + 4 * h, *uu = u + 4 * h;
        uu[0] = _mm512_shuffle_ps(tt[0], tt[2], 0x44);
        uu[1] = _mm512_shuffle_ps(tt[0], tt[2], 0xEE);
        uu[2] = _mm512_shuffle_ps(tt[1], tt[3], 0x44);
        uu[3] = _mm512_shuffle_ps(tt[1], tt[3], 0xEE);
    }
    /* u[q] lane L: column 4L+q, tile rows 0-3; u[q+4]: same column, rows 4-7. */
    const __m512i lo = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    const __m512i hi = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
    const __m256 b8 = _mm256_loadu_ps(bias);
#pragma GCC unroll 16
    for (int q = 0; q < 4; q++) {
        __m512 w[2] = {_mm512_permutex2var_ps(u[q], lo, u[q + 4]), _mm512_permutex2var_ps(u[q], hi, u[q + 4])};
#pragma GCC unroll 16
        for (int g = 0; g < 4; g++) { /* C row 4g+q sits in half g&1 of w[g>>1] */
            int32_t i = 4 * g + q;
            if (i >= rows)
                continue;
            __m512d wd = _mm512_castps_pd(w[g >> 1]);
            __m256 v = _mm256_castpd_ps((g & 1) ? _mm512_extractf64x4_pd(wd, 1) : _mm512_castpd512_pd256(wd));
            float *c = C + (size_t)i * ldc;
            v = _mm256_add_ps(v, b8);
            if (flags & SPLADE_GEMM_ACCUM)
                v = _mm256_add_ps(v, _mm256_loadu_ps(c));
            _mm256_storeu_ps(c, v);
        }
    }
}

/* 8 W rows from w (row stride ldw, K columns) against the block, written to C[0..rows)[0..8)
 * with the epilogue. */
AVX512 static void rows8(const float *At, int32_t K, const float *w, int32_t ldw, int32_t rows, const float *bias,
                         float *C, int32_t ldc, int flags)
{
#define DECL(j) __m512 a##j = _mm512_setzero_ps(), b##j = _mm512_setzero_ps();
    ACC8(DECL)
#undef DECL
    for (int32_t k = 0; k < K; k++) {
        __m512 h0 = _mm512_load_ps(At + (size_t)k * MB), h1 = _mm512_load_ps(At + (size_t)k * MB + 16);
        /* The next-but-one group's rows, a line (16 floats) at a time. */
        if ((k & 15) == 0)
            for (int j = 0; j < 8; j++)
                _mm_prefetch((const char *)(w + (size_t)(16 + j) * ldw + k), _MM_HINT_T0);
#define STEP(j)                                                                                    \
    {                                                                                              \
        __m512 x = _mm512_set1_ps(w[(size_t)(j) * ldw + k]);                                       \
        a##j = _mm512_fmadd_ps(x, h0, a##j);                                                       \
        b##j = _mm512_fmadd_ps(x, h1, b##j);                                                       \
    }
        ACC8(STEP)
#undef STEP
    }
    __m512 ra[8] = {a0, a1, a2, a3, a4, a5, a6, a7}, rb[8] = {b0, b1, b2, b3, b4, b5, b6, b7};
    store8x16(ra, rows, bias, C, ldc, flags);
    if (rows > 16)
        store8x16(rb, rows - 16, bias, C + (size_t)16 * ldc, ldc, flags);
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

/* One block of rows (<= 32) against W rows [n0, n1), columns [0, K) of W (row stride ldw). */
AVX512 static void block_nt(const float *At, int32_t rows, int32_t K, const float *W, int32_t ldw,
                            const float *bias, int32_t n0, int32_t n1, float *C, int32_t ldc, int flags, float *tile)
{
    int32_t n = n0;
    for (; n + 8 <= n1; n += 8)
        rows8(At, K, W + (size_t)n * ldw, ldw, rows, bias + n, C + n, ldc, flags);
    for (; n < n1; n++) {
        row1(At, K, W + (size_t)n * ldw, tile);
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
        block_nt(At, rows, K, W, K, bias, n0, n1, C + (size_t)m0 * ldc, ldc, flags, tile);
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
    if (M > SPLADE_GEMM_SMALL_M || splade_settings_get()->gemm_cpu_blas)
        return SPLADE_GEMM_BLAS;
    return splade_gemm_avx512_usable() ? SPLADE_GEMM_AVX512 : splade_gemm_avx2_usable() ? SPLADE_GEMM_AVX2
                                                                                        : SPLADE_GEMM_BLAS;
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
    else if (path == SPLADE_GEMM_AVX2 && splade_gemm_avx2_usable())
        splade_gemm_avx2_nt(A, M, K, W, bias, n0, n1, C, ldc, flags, scratch);
    else
        blas_nt(A, M, K, W, bias, n0, n1, C, ldc, flags);
}

/* Units per row block: while the row blocks are few, 64-column units too, so that a team has
 * enough units to share; beyond, whole rows (64-column calls repack A per call: up to 2x
 * slower on a [4096 x 128] x [128 x 512] product). A function of M and N only. */
enum { FEW_ROW_BLOCKS = 4 };

typedef struct {
    int32_t rows, cols, n_row, n_col;
} unit_grid;

static unit_grid grid_for(int32_t M, int32_t N)
{
    unit_grid g;
    g.rows = M <= SPLADE_GEMM_SMALL_M ? M : SPLADE_GEMM_ROW_UNIT;
    g.n_row = (M + g.rows - 1) / g.rows;
    g.cols = M > SPLADE_GEMM_SMALL_M && g.n_row > FEW_ROW_BLOCKS ? N : SPLADE_GEMM_UNIT;
    g.n_col = (N + g.cols - 1) / g.cols;
    return g;
}

/* Many rows through oneDNN (gemm_dnnl.h): units of 128 rows x 128 columns, each computed into a
 * dense tile with W read in place, then the epilogue (residual, GELU) here. OpenBLAS spent 40% of
 * its time packing (each 128-row unit repacked W and A): bench/results/encoder-cpu-2026-11-25.md.
 * A unit oneDNN cannot run (out of memory) falls back to OpenBLAS. */
static void dnnl_share(const float *A, int32_t M, int32_t K, const float *W, const float *bias, int32_t N, float *C,
                       int flags, int tid, int nthreads)
{
    const int32_t R = SPLADE_DNNL_ROWS, P = SPLADE_DNNL_PANEL, n_p = (N + P - 1) / P;
    int u, u1;
    splade_team_split(tid, nthreads, (M + R - 1) / R * n_p, 1, &u, &u1);
    for (; u < u1; u++) {
        const int32_t r0 = u / n_p * R, c0 = u % n_p * P;
        const int32_t rows = M - r0 < R ? M - r0 : R, cols = N - c0 < P ? N - c0 : P;
        float *tile, *c = C + (size_t)r0 * N + c0;
        if (splade_dnnl_f32_tile(A + (size_t)r0 * K, rows, K, W + (size_t)c0 * K, bias + c0, cols, &tile)) {
            blas_cols(A + (size_t)r0 * K, rows, K, W, bias, c0, c0 + cols, C + (size_t)r0 * N, N, flags);
            tile = NULL;
        }
        for (int32_t i = 0; i < rows; i++) {
            float *d = c + (size_t)i * N;
            if (tile && (flags & SPLADE_GEMM_ACCUM))
                splade_add_row(d, tile + (size_t)i * cols, cols);
            else if (tile)
                memcpy(d, tile + (size_t)i * cols, (size_t)cols * sizeof *d);
            if (flags & SPLADE_GEMM_GELU)
                splade_gelu(d, cols);
        }
    }
}

enum { AVX2_PACKED_MIN_M = 16 }; /* see splade_gemm_nt_share_packed */

/* Few rows from the packed copy: the same 64-column units as the in-place kernel, each thread's
 * run of them in one call (the same bits as splade_gemm_nt: gemm_packed_cpu.h). */
static void packed_share(const float *A, int32_t M, int32_t K, const splade_gemm_packed *P, const float *bias,
                         int32_t N, float *C, int flags, float *scratch, int tid, int nthreads)
{
    int u, u1;
    splade_team_split(tid, nthreads, (N + SPLADE_GEMM_UNIT - 1) / SPLADE_GEMM_UNIT, 1, &u, &u1);
    const int32_t c0 = u * SPLADE_GEMM_UNIT, c1 = u1 * SPLADE_GEMM_UNIT < N ? u1 * SPLADE_GEMM_UNIT : N;
    if (c0 >= c1)
        return;
    splade_gemm_packed_nt(A, M, K, P, bias, c0, c1, C, N, flags & SPLADE_GEMM_ACCUM, scratch);
    if (flags & SPLADE_GEMM_GELU)
        for (int32_t i = 0; i < M; i++)
            splade_gelu(C + (size_t)i * N + c0, c1 - c0);
}

void splade_gemm_nt_share(const float *A, int32_t M, int32_t K, const float *W, const float *bias, int32_t N,
                          float *C, int flags, float *scratch, int tid, int nthreads)
{
    splade_gemm_nt_share_packed(A, M, K, W, NULL, bias, N, C, flags, scratch, tid, nthreads);
}

void splade_gemm_nt_share_packed(const float *A, int32_t M, int32_t K, const float *W, const splade_gemm_packed *P,
                                 const float *bias, int32_t N, float *C, int flags, float *scratch, int tid,
                                 int nthreads)
{
    if (M <= 0 || N <= 0)
        return;
    /* Either form gives the same bits, so the faster one is taken: with AVX2 only, the packed tiles
     * lose to the in-place kernel up to 16 rows (37 against 29 ms for 8 rows on the VM's cores,
     * bench/results/cpu-query-avx2-2026-11-26.md) and win above (56 against 78 for 25). */
    const int packed = P ? splade_gemm_packed_usable() : 0;
    if (M <= SPLADE_GEMM_SMALL_M && (packed == 2 || (packed == 1 && M > AVX2_PACKED_MIN_M))) {
        packed_share(A, M, K, P, bias, N, C, flags, scratch, tid, nthreads);
        return;
    }
    if (M > SPLADE_GEMM_SMALL_M && splade_dnnl_f32_usable()) {
        dnnl_share(A, M, K, W, bias, N, C, flags, tid, nthreads);
        return;
    }
    const unit_grid g = grid_for(M, N);
    const splade_gemm_path path = splade_gemm_auto_path(M);
    int u, u1;
    splade_team_split(tid, nthreads, g.n_row * g.n_col, 1, &u, &u1);
    while (u < u1) {
        const int32_t r0 = u / g.n_col * g.rows, rows = M - r0 < g.rows ? M - r0 : g.rows;
        int end = u + 1;
        /* Few rows: both kernels give each column the same bits whatever the call's column range
         * (blas_nt cuts it at absolute 64-column units), so a run of units is one call (one
         * transpose of A on the AVX-512 path). */
        if (rows <= SPLADE_GEMM_SMALL_M)
            while (end < u1 && end / g.n_col == u / g.n_col)
                end++;
        const int32_t c0 = u % g.n_col * g.cols, c_end = ((end - 1) % g.n_col + 1) * g.cols;
        const int32_t c1 = c_end < N ? c_end : N;
        float *c = C + (size_t)r0 * N;
        splade_gemm_nt(path, A + (size_t)r0 * K, rows, K, W, bias, c0, c1, c, N, flags & SPLADE_GEMM_ACCUM, scratch);
        if (flags & SPLADE_GEMM_GELU)
            for (int32_t i = 0; i < rows; i++)
                splade_gelu(c + (size_t)i * N + c0, c1 - c0);
        u = end;
    }
}
