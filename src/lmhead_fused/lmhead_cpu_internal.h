/* Private to src/lmhead_fused/lmhead_cpu*.c and tests: the AVX-512 fused CPU head kernel. */
#ifndef SPLADE_LMHEAD_CPU_INTERNAL_H
#define SPLADE_LMHEAD_CPU_INTERNAL_H

#include <stdint.h>

/* 1 when this CPU runs the AVX-512 kernel (and $SPLADE_LMHEAD_CPU is not "blas"). */
int splade_lmhead_cpu_avx512_usable(void);

/* Tests: 1 forces the OpenBLAS path, 0 restores the automatic choice ($SPLADE_LMHEAD_CPU, the CPU). */
void splade_lmhead_cpu_force_blas(int on);

/* dst[v] = max(dst[v], max over the n (<= 32) rows s of Ht·W[v]) for v < vt. Ht is the
 * transposed block [D][32] (lanes >= n ignored); W [vt, D] row-major. No logits buffer at all. */
void splade_lmhead_avx512_block(const float *Ht, int32_t n, int32_t D, const float *W, int32_t vt, float *dst);

#endif
