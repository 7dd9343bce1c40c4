/* fp32 C = A·Wᵀ + bias for few rows (a query's <= SPLADE_GEMM_SMALL_M tokens) from a copy of W
 * packed into 64-column panels. Private to src/encoder/ and tests.
 *
 * Why a copy: gemm_cpu.c's in-place kernel puts A's rows in vector lanes, 32 at a time, so a
 * 25-token query pays for 32 rows; and its 8 strided W row streams run at ~9 GB/s. Here each
 * k row of a panel is 64 contiguous floats (4 vectors) and a tile of <= 6 A rows is broadcast
 * against them (the BLAS micro-kernel): no padded rows, one contiguous stream per panel, the
 * next k block prefetched while the tiles run. bench/bench_gemm_query.c (variant 12 with k blocks
 * of 64 against 0) measured the 72 GEMMs of a bert-base query at -11..-18% (25 rows) and
 * -30..-43% (8 rows) on one core, -38% with a neighbour core streaming too
 * (bench/results/cpu-query-packed-2026-11-26.md).
 *
 * Each output is the same chain of FMAs over k from 0, then + bias (+ C): the same bits as
 * splade_gemm_nt's AVX-512 and AVX2 paths, whatever the tiles, the thread's column range or the
 * form (AVX-512, or AVX2 on CPUs without it). */
#ifndef SPLADE_GEMM_PACKED_CPU_H
#define SPLADE_GEMM_PACKED_CPU_H

#include <stddef.h>
#include <stdint.h>

enum { SPLADE_GEMM_PANEL = 64 };

/* panels [ceil(N/64)][K][64]: panel p's k row holds W[64p + c][k] for c < 64 (0 past N), 64-byte
 * aligned. Owned by whoever allocated them: splade_gemm_packed_alloc (then splade_gemm_packed_free),
 * or a region holding many matrices (forward_cpu_packed.c). */
typedef struct splade_gemm_packed_s {
    float *panels;
    int32_t N, K;
} splade_gemm_packed;

/* One matrix's own panels for W [N, K]. */
int splade_gemm_packed_alloc(int32_t N, int32_t K, splade_gemm_packed *out);
void splade_gemm_packed_free(splade_gemm_packed *p);
/* Columns [n0, n1) of the packing, a thread's share (n0, n1 multiples of 64 or N): p must already
 * hold N, K and its panels. */
void splade_gemm_pack_cols(const float *W, splade_gemm_packed *p, int32_t n0, int32_t n1);

/* Floats of the scratch splade_gemm_packed_nt needs (its C tile), 64-byte aligned. */
size_t splade_gemm_packed_scratch_floats(int32_t M);

/* 2 with AVX-512 (the kernel above), 1 with AVX2 + FMA only (the same tile a 16-column quarter at a
 * time: the same bits), 0 without either or with $SPLADE_GEMM_CPU=blas (gemm_cpu.h's paths). */
int splade_gemm_packed_usable(void);

/* C[m][n] = A[m]·W[n] + bias[n] (+ C[m][n] with SPLADE_GEMM_ACCUM) for m < M, n0 <= n < n1, with
 * n0 % 64 == 0, n1 <= N, 1 <= M <= SPLADE_GEMM_SMALL_M. A [M, K] row-major; C row stride ldc.
 * Needs splade_gemm_packed_usable(). */
void splade_gemm_packed_nt(const float *A, int32_t M, int32_t K, const splade_gemm_packed *P, const float *bias,
                           int32_t n0, int32_t n1, float *C, int32_t ldc, int flags, float *scratch);
/* The AVX2 form whatever else the CPU has (tests and the lab run it on AVX-512 machines too). */
void splade_gemm_packed_nt_avx2(const float *A, int32_t M, int32_t K, const splade_gemm_packed *P, const float *bias,
                                int32_t n0, int32_t n1, float *C, int32_t ldc, int flags, float *scratch);

#endif
