/* fp32 GEMM for nn.Linear weights: C = A·Wᵀ + bias, over a column range so that threads can
 * split N. Private to src/encoder/ and tests.
 *
 * The AVX-512 kernel reads W in place (no packing: for a 32-row query, OpenBLAS spent ~37% of
 * the time packing W, a cost a few rows cannot amortise); many rows go to oneDNN's brgemm with W
 * read in place (splade_gemm_nt_share; OpenBLAS repacked W per 128-row unit), the generic path
 * (no AVX-512, no oneDNN, or $SPLADE_GEMM_CPU=blas) is OpenBLAS. */
#ifndef SPLADE_GEMM_CPU_H
#define SPLADE_GEMM_CPU_H

#include <stddef.h>
#include <stdint.h>

enum {
    SPLADE_GEMM_ACCUM = 1, /* add into C (a residual already there) instead of overwriting */
    SPLADE_GEMM_GELU = 2,  /* splade_gemm_nt_share: exact GELU on each finished unit */
};

/* AUTO takes the AVX-512 kernel up to SMALL_M rows; above, OpenBLAS's packing pays for itself
 * (both run ~100 GFLOP/s/core at 1024 rows). Callers splitting N across threads should split on
 * multiples of UNIT: the results are then the same bits whatever the thread count. */
enum { SPLADE_GEMM_SMALL_M = 64, SPLADE_GEMM_UNIT = 64 };

/* Above SMALL_M rows, units of ROW_UNIT rows (see splade_gemm_nt_share). */
enum { SPLADE_GEMM_ROW_UNIT = 128 };

/* AVX2: the few-row kernel at 8 lanes for CPUs without AVX-512 (gemm_avx2_cpu.c; the same bits). */
typedef enum { SPLADE_GEMM_AUTO = 0, SPLADE_GEMM_AVX512 = 1, SPLADE_GEMM_BLAS = 2, SPLADE_GEMM_AVX2 = 3 } splade_gemm_path;

/* C[m][n] = A[m]·W[n] + bias[n] (+ C[m][n] with SPLADE_GEMM_ACCUM) for m < M, n0 <= n < n1.
 * A [M,K] row-major (row stride K); W [N,K] row-major (nn.Linear [out,in]); C row stride ldc.
 * scratch: splade_gemm_scratch_floats(K) floats, 64-byte aligned, private to the caller's thread.
 * AUTO picks AVX-512 when the CPU has it and M is small (see gemm_cpu.c), else OpenBLAS
 * (single-threaded call: the caller owns the threading). */
void splade_gemm_nt(splade_gemm_path path, const float *A, int32_t M, int32_t K, const float *W,
                    const float *bias, int32_t n0, int32_t n1, float *C, int32_t ldc, int flags, float *scratch);

size_t splade_gemm_scratch_floats(int32_t K);

/* Member tid of a team of nthreads computes its share of C = A·Wᵀ + bias, all N columns
 * (row stride N), flags ACCUM and/or GELU. The work is a grid of units at absolute offsets
 * that depends on M and N only (few rows: 64-column units; many rows: ROW_UNIT-row blocks, of
 * 64 columns while they are few); each unit is one fixed sequence of kernel calls, so every
 * element of C has the same bits whatever the thread count (OpenBLAS's summation order
 * depends on the call's shape). Members take contiguous runs of units. */
void splade_gemm_nt_share(const float *A, int32_t M, int32_t K, const float *W, const float *bias, int32_t N,
                          float *C, int flags, float *scratch, int tid, int nthreads);

/* The same with a packed copy of W (gemm_packed_cpu.h; NULL: none): few rows read the copy with
 * AVX-512, and above 16 rows with AVX2 only (the same bits either way); the rest as
 * splade_gemm_nt_share. */
struct splade_gemm_packed_s;
void splade_gemm_nt_share_packed(const float *A, int32_t M, int32_t K, const float *W,
                                 const struct splade_gemm_packed_s *P, const float *bias, int32_t N, float *C,
                                 int flags, float *scratch, int tid, int nthreads);

/* gemm_avx2_cpu.c: the AVX2 path's kernel (callers: splade_gemm_nt), and whether the CPU has AVX2 + FMA. */
void splade_gemm_avx2_nt(const float *A, int32_t M, int32_t K, const float *W, const float *bias, int32_t n0,
                         int32_t n1, float *C, int32_t ldc, int flags, float *scratch);
int splade_gemm_avx2_usable(void);

/* 1 when this CPU runs the AVX-512 kernel (and $SPLADE_GEMM_CPU is not "blas"). */
int splade_gemm_avx512_usable(void);

/* The path AUTO takes for M rows. */
splade_gemm_path splade_gemm_auto_path(int32_t M);

#endif
