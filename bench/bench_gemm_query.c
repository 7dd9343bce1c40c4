/* Why does an fp32 query (<= 32 tokens) run its layer GEMMs at ~45% of the core's FMA peak and
 * stream its weights at ~1/2 (VM) to ~1/3 (GPU hosts) of the core's read bandwidth (issue #13)?
 * A lab, llm.c style: the 72 layer GEMMs of a bert-base shaped model (12 layers x Q, K, V,
 * attention-out, FFN-in, FFN-out; distinct random weights, 340 MB, so they come from memory as a
 * query's do) for M rows, one thread, through numbered variants of the small-row kernel:
 *
 *   0 lib        the library's kernel (gemm_cpu.c rows8: W [N][K] read in place, 8 rows at a time,
 *                32 row lanes always, prefetch of the next-but-one group's rows every 16 k)
 *   1 pf-group   variant 0's loop in this file (the reference for 2-7: same loop, this file's store)
 *   2 pf-none    no software prefetch
 *   3 pf-ahead   prefetch the current rows 256 floats ahead (the hardware's own stream direction)
 *   4 pf-l2      variant 1's prefetch to L2 (T1) instead of L1
 *   5 lanes16    variant 1 with 16 row lanes when M <= 16
 *   6 packed     W copied once into panels [N/8][K][8] (one contiguous stream per 8 rows)
 *   7 packed16   6 with 16 row lanes when M <= 16
 *   8 kvec       vectors along k: W rows and A rows read as 16-float vectors, tiles of <= 6 rows x 4
 *                W rows, one reduction per output (no padded row lanes, no broadcasts)
 *   9 packed-hw  7 without software prefetch (the hardware streamer alone)
 *  10 packed-l2  7 with the prefetch 4 KB ahead into L2 (T1)
 *  11 bcast-a    W copied into panels [N/64][K][64]; tiles of <= 6 A rows broadcast against a
 *                panel's 4 vectors a k (the BLAS micro-kernel: no padded lanes, same bits as 0)
 *  12 bcast-a-kc 11 with k in blocks of 128 (the panel's slice stays in L1 across the tiles), the
 *                next block prefetched into L2 (T1) while the tiles run
 *  13 bcast-a-kc64  blocks of 64, the next one prefetched into L1 (T0)
 *  14 bcast-12x2 12 with panels of 32 columns and tiles of <= 12 rows x 2 vectors
 *  15 lib-packed the library's packed kernel (gemm_packed_cpu.c: 12's shape with k blocks of 64,
 *                the winner of this lab), its bits checked against variant 0's as well
 *  16 lib-avx2   the library's in-place kernel for CPUs without AVX-512 (gemm_avx2_cpu.c, 8 lanes)
 *  17 lib-packed-avx2  the packed kernel's AVX2 form (a 16-column quarter of the panel per tile)
 *  18 openblas   what such CPUs ran before (splade_gemm_nt's OpenBLAS path: 64-column calls)
 *
 *   bench_gemm_query [--reps R] [--rows M,M,...] [--only V] [--file-weights PATH [--w-offset B]]
 *
 * --file-weights: the weights are written to PATH (B bytes, default 0, after its start: a
 * safetensors header puts F32 data 8 + header bytes in, often off a cache line) and read from a
 * read-only MAP_PRIVATE mapping of it, as the encoder reads an F32 checkpoint's (page-cache
 * pages, not the process's own anonymous memory). The packed copies stay anonymous.
 *
 * Each variant is checked first against a double-precision product (|c - ref| <= 1e-6 + 1e-5 *
 * sum |a w|) on one matrix of each shape. Prints per variant and M: CPU ms for the 72 GEMMs
 * (median of R), useful GFLOP/s (2 M N K) and weight GB/s. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "encoder/gemm_cpu.h"
#include "encoder/gemm_packed_cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma")))

enum { MB = 32, LAYERS = 12, MATS = 6, NMAT = LAYERS * MATS, MAX_REPS = 31, VARIANTS = 19 };
static const int32_t MAT_N[MATS] = {768, 768, 768, 768, 3072, 768};
static const int32_t MAT_K[MATS] = {768, 768, 768, 768, 768, 3072};
static const char *const NAMES[VARIANTS] = {"lib", "pf-group", "pf-none", "pf-ahead",
                                            "pf-l2", "lanes16", "packed", "packed16", "kvec", "packed-hw", "packed-l2", "bcast-a", "bcast-a-kc", "bcast-a-kc64", "bcast-12x2", "lib-packed", "lib-avx2", "lib-packed-avx2", "openblas"};

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *xaligned(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "bench_gemm_query: out of memory\n");
        exit(1);
    }
    return p;
}

static void fill(float *x, size_t n, unsigned *seed, float scale)
{
    for (size_t i = 0; i < n; i++)
        x[i] = scale * ((float)rand_r(seed) / RAND_MAX - 0.5f);
}

/* The tile of 8 W rows x 32 A rows, then C[i][n + j] for the real rows. */
static void store_tile(const float *tile, int32_t rows, float *C, int32_t ldc)
{
    for (int32_t i = 0; i < rows; i++)
        for (int j = 0; j < 8; j++)
            C[(size_t)i * ldc + j] = tile[j * MB + i];
}

#define ACC8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

/* One kernel per (W layout, prefetch, lanes): W element (j, k) is WAT(j, k) (defined before each
 * group of kernels); PREFETCH(k) runs
 * at the top of each k step. 16 lanes leave the b accumulators out. */
#define KERNEL(NAME, PREFETCH, LANES)                                                         \
    AVX512 static void NAME(const float *At, int32_t K, const float *w, int32_t ldw, int32_t rows,   \
                            float *C, int32_t ldc, float *tile)                                     \
    {                                                                                              \
        (void)ldw;                                                                                 \
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0; \
        __m512 b0 = a0, b1 = a0, b2 = a0, b3 = a0, b4 = a0, b5 = a0, b6 = a0, b7 = a0;            \
        for (int32_t k = 0; k < K; k++) {                                                          \
            __m512 h0 = _mm512_load_ps(At + (size_t)k * MB);                                       \
            __m512 h1 = LANES == 32 ? _mm512_load_ps(At + (size_t)k * MB + 16) : h0;               \
            (void)h1;                                                                              \
            PREFETCH(k);                                                                           \
            ACC8(STEP_##LANES)                                                                     \
        }                                                                                          \
        __m512 ra[8] = {a0, a1, a2, a3, a4, a5, a6, a7}, rb[8] = {b0, b1, b2, b3, b4, b5, b6, b7}; \
        for (int j = 0; j < 8; j++) {                                                              \
            _mm512_store_ps(tile + j * MB, ra[j]);                                                 \
            _mm512_store_ps(tile + j * MB + 16, rb[j]);                                            \
        }                                                                                          \
        store_tile(tile, rows, C, ldc);                                                            \
    }

#define STEP_32(j)                                                                                 \
    {                                                                                              \
        __m512 x = _mm512_set1_ps(WAT(j, k));                                                      \
        a##j = _mm512_fmadd_ps(x, h0, a##j);                                                       \
        b##j = _mm512_fmadd_ps(x, h1, b##j);                                                       \
    }
#define STEP_16(j)                                                                                 \
    {                                                                                              \
        __m512 x = _mm512_set1_ps(WAT(j, k));                                                      \
        a##j = _mm512_fmadd_ps(x, h0, a##j);                                                       \
    }

/* W [N][K] in place: row j of the group at w + j * ldw. */
#define W_INPLACE(j, k) w[(size_t)(j) * ldw + (k)]
/* Packed panel [K][8]: the group's 8 rows interleaved, one contiguous stream. */
#define W_PACKED(j, k) w[(size_t)(k) * 8 + (j)]

#define PF_GROUP(k)                                                                                \
    if (((k) & 15) == 0)                                                                           \
        for (int j = 0; j < 8; j++)                                                                \
            _mm_prefetch((const char *)(w + (size_t)(16 + j) * ldw + (k)), _MM_HINT_T0);
#define PF_GROUP_L2(k)                                                                             \
    if (((k) & 15) == 0)                                                                           \
        for (int j = 0; j < 8; j++)                                                                \
            _mm_prefetch((const char *)(w + (size_t)(16 + j) * ldw + (k)), _MM_HINT_T1);
#define PF_NONE(k)
#define PF_AHEAD(k)                                                                                \
    if (((k) & 15) == 0)                                                                           \
        for (int j = 0; j < 8; j++)                                                                \
            _mm_prefetch((const char *)(w + (size_t)j * ldw + (k) + 256), _MM_HINT_T0);
/* A packed group reads 32 bytes a k: one line every 2 k, prefetched 2 KB ahead. */
#define PF_PACKED(k)                                                                               \
    if (((k) & 1) == 0)                                                                            \
        _mm_prefetch((const char *)(w + (size_t)(k) * 8 + 512), _MM_HINT_T0);

#define WAT W_INPLACE
KERNEL(k_group32, PF_GROUP, 32)
KERNEL(k_none32, PF_NONE, 32)
KERNEL(k_ahead32, PF_AHEAD, 32)
KERNEL(k_l2_32, PF_GROUP_L2, 32)
KERNEL(k_group16, PF_GROUP, 16)
#undef WAT
/* ... and 4 KB ahead to L2 (T1), or not at all (the hardware streamer alone). */
#define PF_PACKED_FAR(k)                                                                           \
    if (((k) & 1) == 0)                                                                            \
        _mm_prefetch((const char *)(w + (size_t)(k) * 8 + 1024), _MM_HINT_T1);

#define WAT W_PACKED
KERNEL(k_packed32, PF_PACKED, 32)
KERNEL(k_packed16, PF_PACKED, 16)
KERNEL(k_packed_none32, PF_NONE, 32)
KERNEL(k_packed_none16, PF_NONE, 16)
KERNEL(k_packed_far32, PF_PACKED_FAR, 32)
KERNEL(k_packed_far16, PF_PACKED_FAR, 16)
#undef WAT


/* Variant 8 (kvec): vectors run along k. W rows are read in place as 16-float vectors (4
 * sequential streams a group, no broadcasts), A rows likewise; an r x 4 tile keeps 4r
 * accumulators of 16 partial sums each (k mod 16), reduced once after the k loop. No row lanes
 * are padded: M rows go in tiles of <= 6, sized evenly. Needs K % 16 == 0 (lab only). */
static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx512dq,fma"))) __m128
sum4(__m512 a, __m512 b, __m512 c, __m512 d)
{
    __m256 a8 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
    __m256 b8 = _mm256_add_ps(_mm512_castps512_ps256(b), _mm512_extractf32x8_ps(b, 1));
    __m256 c8 = _mm256_add_ps(_mm512_castps512_ps256(c), _mm512_extractf32x8_ps(c, 1));
    __m256 d8 = _mm256_add_ps(_mm512_castps512_ps256(d), _mm512_extractf32x8_ps(d, 1));
    __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(a8, b8), _mm256_hadd_ps(c8, d8));
    return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx512dq,fma"))) void
kvec_tile(const float *A, int32_t lda, const int r, const float *W, int32_t ldw, int32_t K, float *C, int32_t ldc)
{
    __m512 acc[6][4];
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            acc[i][j] = _mm512_setzero_ps();
    for (int32_t k = 0; k < K; k += 16) {
        __m512 w[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            w[j] = _mm512_loadu_ps(W + (size_t)j * ldw + k);
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            if (i >= r)
                break;
            __m512 a = _mm512_loadu_ps(A + (size_t)i * lda + k);
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++)
                acc[i][j] = _mm512_fmadd_ps(a, w[j], acc[i][j]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
        if (i < r)
            _mm_storeu_ps(C + (size_t)i * ldc, sum4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]));
}

#define KVEC_R(R)                                                                                  \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma"))) static void kvec_r##R(        \
        const float *A, int32_t lda, const float *W, int32_t ldw, int32_t K, float *C, int32_t ldc)  \
    {                                                                                              \
        kvec_tile(A, lda, R, W, ldw, K, C, ldc);                                                   \
    }
KVEC_R(1) KVEC_R(2) KVEC_R(3) KVEC_R(4) KVEC_R(5) KVEC_R(6)
typedef void (*kvec_fn)(const float *, int32_t, const float *, int32_t, int32_t, float *, int32_t);
static const kvec_fn KVEC[7] = {NULL, kvec_r1, kvec_r2, kvec_r3, kvec_r4, kvec_r5, kvec_r6};

/* C[0..M)[n0..n1) = A W^T: for each group of 4 W rows, the row tiles in turn (the group stays
 * in L1/L2 while the tiles re-read it). */
static void kvec_gemm(const float *A, int32_t M, int32_t K, const float *W, int32_t n0, int32_t n1, float *C,
                      int32_t ldc)
{
    const int32_t tiles = (M + 5) / 6;
    for (int32_t n = n0; n < n1; n += 4)
        for (int32_t t = 0, m0 = 0; t < tiles; t++) {
            int32_t r = (M - m0) / (tiles - t) + ((M - m0) % (tiles - t) != 0);
            KVEC[r](A + (size_t)m0 * K, K, W + (size_t)n * K, K, K, C + (size_t)m0 * ldc + n, ldc);
            m0 += r;
        }
}

/* Variants 11 and 12 (bcast-a): the BLAS micro-kernel shape. W copied once into panels
 * [N/64][K][64] (a k row of a panel is 64 contiguous floats: 4 vectors); a tile of r <= 6 A rows
 * broadcasts A[i][k] against them: 4r accumulators, each output summed over k in order (the same
 * sequence of FMAs per output as rows8, hence the same bits). No padded lanes: M rows go in tiles
 * of <= 6, sized evenly. 12 blocks k by KC so that the panel's slice stays in L1 while the tiles
 * re-read it, carrying the accumulators through a C tile. */
enum { PANEL = 64 };
static int KC = 128, lab_ahead = 1; /* $LAB_KC, $LAB_AHEAD (blocks ahead) while tuning */

static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,fma"))) void
bcast_tile(const float *A, int32_t lda, const int r, const float *P, int32_t k0, int32_t k1, float *ct, int load,
           const char *pf, int lpi, int hint)
{
    __m512 acc[6][4];
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            acc[i][j] = i < r && load ? _mm512_load_ps(ct + i * PANEL + j * 16) : _mm512_setzero_ps();
    for (int32_t k = k0; k < k1; k++) {
        __m512 w[4];
        if (pf)
            for (int l = 0; l < lpi; l++) {
                const char *q = pf + ((size_t)(k - k0) * lpi + l) * 64;
                if (hint)
                    _mm_prefetch(q, _MM_HINT_T1);
                else
                    _mm_prefetch(q, _MM_HINT_T0);
            }
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            w[j] = _mm512_load_ps(P + (size_t)k * PANEL + j * 16);
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            if (i >= r)
                break;
            __m512 a = _mm512_set1_ps(A[(size_t)i * lda + k]);
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++)
                acc[i][j] = _mm512_fmadd_ps(a, w[j], acc[i][j]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
        if (i < r)
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++)
                _mm512_store_ps(ct + i * PANEL + j * 16, acc[i][j]);
}

#define BCAST_R(R)                                                                                 \
    __attribute__((target("avx512f,avx512bw,avx512vl,fma"))) static void bcast_r##R(                \
        const float *A, int32_t lda, const float *P, int32_t k0, int32_t k1, float *ct, int load,   \
        const char *pf, int lpi, int hint)                                                         \
    {                                                                                              \
        bcast_tile(A, lda, R, P, k0, k1, ct, load, pf, lpi, hint);                                 \
    }
BCAST_R(1) BCAST_R(2) BCAST_R(3) BCAST_R(4) BCAST_R(5) BCAST_R(6)
typedef void (*bcast_fn)(const float *, int32_t, const float *, int32_t, int32_t, float *, int, const char *, int,
                         int);
static const bcast_fn BCAST[7] = {NULL, bcast_r1, bcast_r2, bcast_r3, bcast_r4, bcast_r5, bcast_r6};

/* C[0..M)[0..N) = A W^T from the panels Wp (N % 64 == 0); ct: 32 x 64 floats, 64-byte aligned. */
/* pf_hint: -1 no prefetch; 0 (T0) / 1 (T1): while the tiles run a k block, the next block's
 * lines (the next panel's first after the last) are prefetched, spread over the tiles. */
static void bcast_gemm(const float *A, int32_t M, int32_t K, const float *Wp, int32_t N, float *C, int32_t ldc,
                       float *ct, int32_t kc, int pf_hint)
{
    const int32_t tiles = (M + 5) / 6;
    const float *end = Wp + (size_t)N * K;
    for (int32_t p = 0; p < N / PANEL; p++) {
        const float *P = Wp + (size_t)p * K * PANEL;
        for (int32_t k0 = 0; k0 < K; k0 += kc) {
            const int32_t k1 = K - k0 < kc ? K : k0 + kc;
            const float *next = P + (size_t)(k1 + (size_t)(lab_ahead - 1) * kc) * PANEL; /* contiguous */
            const int lpi = (4 + tiles - 1) / tiles; /* 4 lines a k in all */
            for (int32_t t = 0, m0 = 0; t < tiles; t++) {
                int32_t r = (M - m0) / (tiles - t) + ((M - m0) % (tiles - t) != 0);
                const char *pf = (const char *)next + (size_t)t * (k1 - k0) * lpi * 64;
                if (pf_hint < 0 || pf + (size_t)(k1 - k0) * lpi * 64 > (const char *)end || t * lpi >= 4)
                    pf = NULL;
                BCAST[r](A + (size_t)m0 * K, K, P, k0, k1, ct + (size_t)m0 * PANEL, k0 > 0, pf, lpi, pf_hint);
                m0 += r;
            }
        }
        for (int32_t i = 0; i < M; i++)
            memcpy(C + (size_t)i * ldc + (size_t)p * PANEL, ct + (size_t)i * PANEL, PANEL * sizeof(float));
    }
}

/* Variant 14 (bcast-12x2): the same with panels of 32 columns [N/32][K][32] and tiles of <= 12
 * rows x 2 vectors (fewer tiles re-read each panel: 3 for 25 rows instead of 5). */
enum { PANEL2 = 32 };

static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,fma"))) void
b12_tile(const float *A, int32_t lda, const int r, const float *P, int32_t k0, int32_t k1, float *ct, int load,
         const char *pf, int lpi)
{
    __m512 acc[12][2];
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++)
#pragma GCC unroll 2
        for (int j = 0; j < 2; j++)
            acc[i][j] = i < r && load ? _mm512_load_ps(ct + i * PANEL2 + j * 16) : _mm512_setzero_ps();
    for (int32_t k = k0; k < k1; k++) {
        if (pf)
            for (int l = 0; l < lpi; l++)
                _mm_prefetch(pf + ((size_t)(k - k0) * lpi + l) * 64, _MM_HINT_T1);
        __m512 w0 = _mm512_load_ps(P + (size_t)k * PANEL2), w1 = _mm512_load_ps(P + (size_t)k * PANEL2 + 16);
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) {
            if (i >= r)
                break;
            __m512 a = _mm512_set1_ps(A[(size_t)i * lda + k]);
            acc[i][0] = _mm512_fmadd_ps(a, w0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(a, w1, acc[i][1]);
        }
    }
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++)
        if (i < r) {
            _mm512_store_ps(ct + i * PANEL2, acc[i][0]);
            _mm512_store_ps(ct + i * PANEL2 + 16, acc[i][1]);
        }
}

#define B12_R(R)                                                                                   \
    __attribute__((target("avx512f,avx512bw,avx512vl,fma"))) static void b12_r##R(                  \
        const float *A, int32_t lda, const float *P, int32_t k0, int32_t k1, float *ct, int load,   \
        const char *pf, int lpi)                                                                   \
    {                                                                                              \
        b12_tile(A, lda, R, P, k0, k1, ct, load, pf, lpi);                                         \
    }
B12_R(1) B12_R(2) B12_R(3) B12_R(4) B12_R(5) B12_R(6) B12_R(7) B12_R(8) B12_R(9) B12_R(10) B12_R(11) B12_R(12)
typedef void (*b12_fn)(const float *, int32_t, const float *, int32_t, int32_t, float *, int, const char *, int);
static const b12_fn B12[13] = {NULL, b12_r1, b12_r2, b12_r3, b12_r4, b12_r5, b12_r6,
                               b12_r7, b12_r8, b12_r9, b12_r10, b12_r11, b12_r12};

static void b12_gemm(const float *A, int32_t M, int32_t K, const float *Wp, int32_t N, float *C, int32_t ldc,
                     float *ct, int32_t kc)
{
    const int32_t tiles = (M + 11) / 12;
    const float *end = Wp + (size_t)N * K;
    for (int32_t p = 0; p < N / PANEL2; p++) {
        const float *P = Wp + (size_t)p * K * PANEL2;
        for (int32_t k0 = 0; k0 < K; k0 += kc) {
            const int32_t k1 = K - k0 < kc ? K : k0 + kc;
            const float *next = P + (size_t)k1 * PANEL2;
            const int lpi = (2 + tiles - 1) / tiles; /* 2 lines a k in all */
            for (int32_t t = 0, m0 = 0; t < tiles; t++) {
                int32_t r = (M - m0) / (tiles - t) + ((M - m0) % (tiles - t) != 0);
                const char *pf = (const char *)next + (size_t)t * (k1 - k0) * lpi * 64;
                if (pf + (size_t)(k1 - k0) * lpi * 64 > (const char *)end || t * lpi >= 2)
                    pf = NULL;
                B12[r](A + (size_t)m0 * K, K, P, k0, k1, ct + (size_t)m0 * PANEL2, k0 > 0, pf, lpi);
                m0 += r;
            }
        }
        for (int32_t i = 0; i < M; i++)
            memcpy(C + (size_t)i * ldc + (size_t)p * PANEL2, ct + (size_t)i * PANEL2, PANEL2 * sizeof(float));
    }
}

typedef void (*kernel_fn)(const float *, int32_t, const float *, int32_t, int32_t, float *, int32_t, float *);

static kernel_fn pick_kernel(int v, int32_t M)
{
    const int few = M <= 16;
    switch (v) {
    case 1: return k_group32;
    case 2: return k_none32;
    case 3: return k_ahead32;
    case 4: return k_l2_32;
    case 5: return few ? k_group16 : k_group32;
    case 6: return k_packed32;
    case 7: return few ? k_packed16 : k_packed32;
    case 9: return few ? k_packed_none16 : k_packed_none32;
    default: return few ? k_packed_far16 : k_packed_far32;
    }
}

static void transpose_a(const float *A, int32_t M, int32_t K, float *At)
{
    memset(At, 0, (size_t)K * MB * sizeof *At);
    for (int32_t i = 0; i < M; i++)
        for (int32_t k = 0; k < K; k++)
            At[(size_t)k * MB + i] = A[(size_t)i * K + k];
}

typedef struct {
    splade_gemm_packed lib[NMAT];
    float *W[NMAT], *Wp[NMAT], *Wp64[NMAT], *Wp32[NMAT], *A[2], *At, *C, *tile, *zero_bias, *scratch, *ct;
} lab;

static int32_t mat_n(int m) { return MAT_N[m % MATS]; }
static int32_t mat_k(int m) { return MAT_K[m % MATS]; }

/* Variants 15-18: the library's own kernels on matrix m. */
static void lib_variant(lab *L, int v, int m, const float *A, int32_t M)
{
    const int32_t N = mat_n(m), K = mat_k(m);
    if (v == 15)
        splade_gemm_packed_nt(A, M, K, &L->lib[m], L->zero_bias, 0, N, L->C, N, 0, L->scratch);
    else if (v == 16)
        splade_gemm_nt(SPLADE_GEMM_AVX2, A, M, K, L->W[m], L->zero_bias, 0, N, L->C, N, 0, L->scratch);
    else if (v == 17)
        splade_gemm_packed_nt_avx2(A, M, K, &L->lib[m], L->zero_bias, 0, N, L->C, N, 0, L->scratch);
    else
        splade_gemm_nt(SPLADE_GEMM_BLAS, A, M, K, L->W[m], L->zero_bias, 0, N, L->C, N, 0, L->scratch);
}

/* Variant v's product for matrix m and M (<= 32) rows into L->C. */
static void variant_matrix(lab *L, int v, int m, int32_t M)
{
    const int32_t N = mat_n(m), K = mat_k(m);
    const float *A = L->A[K == 3072];
    if (v == 0)
        splade_gemm_nt(SPLADE_GEMM_AVX512, A, M, K, L->W[m], L->zero_bias, 0, N, L->C, N, 0, L->scratch);
    else if (v == 8)
        kvec_gemm(A, M, K, L->W[m], 0, N, L->C, N);
    else if (v >= 15)
        lib_variant(L, v, m, A, M);
    else if (v == 14)
        b12_gemm(A, M, K, L->Wp32[m], N, L->C, N, L->ct, KC);
    else if (v >= 11)
        bcast_gemm(A, M, K, L->Wp64[m], N, L->C, N, L->ct, v == 11 ? K : v == 13 ? 64 : KC,
                   v == 11 ? -1 : v == 12 ? 1 : 0);
    else {
        transpose_a(A, M, K, L->At);
        kernel_fn f = pick_kernel(v, M);
        for (int32_t n = 0; n < N; n += 8)
            f(L->At, K, (v >= 6 ? L->Wp[m] : L->W[m]) + (size_t)n * K, K, M, L->C + n, N, L->tile);
    }
}

/* Variant v over the 72 matrices. */
static void run_variant(lab *L, int v, int32_t M)
{
    for (int m = 0; m < NMAT; m++)
        variant_matrix(L, v, m, M);
}

/* Variant v's product for matrix m against double precision. Returns the number of bad elements. */
static long check_variant(lab *L, int v, int m, int32_t M)
{
    const int32_t N = mat_n(m), K = mat_k(m);
    const float *A = L->A[K == 3072];
    variant_matrix(L, v, m, M);
    long bad = 0;
    for (int32_t i = 0; i < M; i++)
        for (int32_t n = 0; n < N; n++) {
            double ref = 0, mag = 0;
            for (int32_t k = 0; k < K; k++) {
                double p = (double)A[(size_t)i * K + k] * L->W[m][(size_t)n * K + k];
                ref += p;
                mag += fabs(p);
            }
            if (fabs(L->C[(size_t)i * N + n] - ref) > 1e-6 + 1e-5 * mag)
                bad++;
        }
    return bad;
}

/* Moves the weights into a file mapping (see --file-weights). */
static void weights_to_file(lab *L, const char *path, size_t offset)
{
    size_t total = offset;
    for (int m = 0; m < NMAT; m++)
        total += (size_t)mat_n(m) * mat_k(m) * sizeof(float);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    for (size_t i = 0; i < offset; i++)
        fputc(0, f);
    for (int m = 0; m < NMAT; m++)
        fwrite(L->W[m], sizeof(float), (size_t)mat_n(m) * mat_k(m), f);
    fclose(f);
    int fd = open(path, O_RDONLY);
    const char *map = fd < 0 ? MAP_FAILED : mmap(NULL, total, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        perror(path);
        exit(1);
    }
    close(fd);
    size_t at = offset;
    for (int m = 0; m < NMAT; m++) {
        free(L->W[m]);
        L->W[m] = (float *)(map + at);
        at += (size_t)mat_n(m) * mat_k(m) * sizeof(float);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static lab make_lab(void)
{
    lab L;
    unsigned seed = 12345;
    for (int m = 0; m < NMAT; m++) {
        const int32_t N = mat_n(m), K = mat_k(m);
        L.W[m] = xaligned((size_t)N * K * sizeof(float));
        fill(L.W[m], (size_t)N * K, &seed, 0.1f);
        L.Wp[m] = xaligned((size_t)N * K * sizeof(float));
        for (int32_t g = 0; g < N; g += 8) /* panel g: [K][8] */
            for (int32_t k = 0; k < K; k++)
                for (int j = 0; j < 8; j++)
                    L.Wp[m][(size_t)g * K + (size_t)k * 8 + j] = L.W[m][(size_t)(g + j) * K + k];
        L.Wp32[m] = xaligned((size_t)N * K * sizeof(float));
        for (int32_t p = 0; p < N; p += PANEL2)
            for (int32_t k = 0; k < K; k++)
                for (int c = 0; c < PANEL2; c++)
                    L.Wp32[m][(size_t)p * K + (size_t)k * PANEL2 + c] = L.W[m][(size_t)(p + c) * K + k];
        if (splade_gemm_packed_alloc(N, K, &L.lib[m])) {
            fprintf(stderr, "bench_gemm_query: out of memory\n");
            exit(1);
        }
        splade_gemm_pack_cols(L.W[m], &L.lib[m], 0, N);
        L.Wp64[m] = xaligned((size_t)N * K * sizeof(float));
        for (int32_t p = 0; p < N; p += PANEL)
            for (int32_t k = 0; k < K; k++)
                for (int c = 0; c < PANEL; c++)
                    L.Wp64[m][(size_t)p * K + (size_t)k * PANEL + c] = L.W[m][(size_t)(p + c) * K + k];
    }
    for (int a = 0; a < 2; a++) {
        const int32_t K = a ? 3072 : 768;
        L.A[a] = xaligned((size_t)MB * K * sizeof(float));
        fill(L.A[a], (size_t)MB * K, &seed, 2.0f);
    }
    L.At = xaligned((size_t)3072 * MB * sizeof(float));
    L.C = xaligned((size_t)MB * 3072 * sizeof(float));
    L.tile = xaligned((size_t)8 * MB * sizeof(float));
    L.zero_bias = calloc(3072, sizeof(float));
    L.ct = xaligned((size_t)MB * PANEL * sizeof(float));
    L.scratch = xaligned(splade_gemm_scratch_floats(3072) * sizeof(float));
    return L;
}

int main(int argc, char **argv)
{
    int reps = 7, only = -1, n_rows = 0;
    const char *wfile = NULL;
    size_t w_offset = 0;
    int32_t rows[16];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--file-weights") && i + 1 < argc)
            wfile = argv[++i];
        else if (!strcmp(argv[i], "--w-offset") && i + 1 < argc)
            w_offset = (size_t)atol(argv[++i]) / 4 * 4;
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc)
            for (char *s = strtok(argv[++i], ","); s && n_rows < 16; s = strtok(NULL, ","))
                rows[n_rows++] = atoi(s);
        else {
            fprintf(stderr, "usage: bench_gemm_query [--reps R] [--rows M,M,...] [--only V] [--file-weights PATH "
                            "[--w-offset B]]\n");
            return 2;
        }
    }
    if (!n_rows) {
        int32_t def[4] = {8, 16, 25, 32};
        memcpy(rows, def, sizeof def);
        n_rows = 4;
    }
    if (reps < 1 || reps > MAX_REPS)
        reps = 7;
    if (!splade_gemm_avx512_usable()) {
        printf("bench_gemm_query: no AVX-512 on this CPU: nothing to measure\n");
        return 0;
    }
    if (getenv("LAB_KC"))
        KC = atoi(getenv("LAB_KC"));
    if (getenv("LAB_AHEAD"))
        lab_ahead = atoi(getenv("LAB_AHEAD"));
    lab L = make_lab();
    if (wfile)
        weights_to_file(&L, wfile, w_offset);
    double flop_per_row = 0, bytes = 0;
    for (int m = 0; m < NMAT; m++) {
        flop_per_row += 2.0 * mat_n(m) * mat_k(m);
        bytes += 4.0 * mat_n(m) * mat_k(m);
    }
    int failed = 0;
    for (int v = 0; v < VARIANTS; v++) {
        if (only >= 0 && v != only)
            continue;
        for (int r = 0; r < n_rows; r++) {
            int32_t M = rows[r];
            if (M < 1 || M > MB)
                continue;
            long bad = check_variant(&L, v, 0, M) + check_variant(&L, v, 4, M) + check_variant(&L, v, 5, M);
            double t[MAX_REPS];
            run_variant(&L, v, M); /* warm-up */
            for (int i = 0; i < reps; i++) {
                double t0 = cpu_ms();
                run_variant(&L, v, M);
                t[i] = cpu_ms() - t0;
            }
            qsort(t, (size_t)reps, sizeof *t, cmp_double);
            double med = t[reps / 2];
            printf("{\"variant\": %d, \"name\": \"%s\", \"weights\": \"%s+%zu\", \"rows\": %d, \"ms\": %.2f, \"min_ms\": %.2f, "
                   "\"gflops\": %.1f, \"weight_gbs\": %.2f, \"check_bad\": %ld}\n",
                   v, NAMES[v], wfile ? "file" : "anon", w_offset, M, med, t[0], flop_per_row * M / med / 1e6, bytes / med / 1e6, bad);
            fflush(stdout);
            failed |= bad != 0;
        }
    }
    return failed;
}

#else
int main(void)
{
    printf("bench_gemm_query: x86-64 only: nothing to measure\n");
    return 0;
}
#endif
