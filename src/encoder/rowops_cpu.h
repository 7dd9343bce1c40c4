/* Row-wise fp32 operations of the CPU forward: LayerNorm and exact (erf) GELU, vectorized with
 * AVX-512 where the CPU has it. Private to src/encoder/. */
#ifndef SPLADE_ROWOPS_CPU_H
#define SPLADE_ROWOPS_CPU_H

#include <stdint.h>

/* Rows [r0, r1) of x [*, H]: x = (x - mean) / sqrt(var + eps) * g + b, statistics in double. */
void splade_layer_norm(float *x, int32_t r0, int32_t r1, int32_t H, const float *g, const float *b, float eps);

/* x[i] = x * Phi(x) with erf (BERT's "gelu", not the tanh approximation), i < n. */
void splade_gelu(float *x, int32_t n);

/* d[j] += t[j], j < n: a GEMM tile's row onto the residual. Inline, and called with a constant n for
 * full 128-column panels: GCC -O2 vectorizes a loop of constant count only. */
static inline void splade_add_row_n(float *restrict d, const float *restrict t, int32_t n)
{
    for (int32_t j = 0; j < n; j++)
        d[j] += t[j];
}

static inline void splade_add_row(float *restrict d, const float *restrict t, int32_t n)
{
    if (n == 128)
        splade_add_row_n(d, t, 128);
    else
        splade_add_row_n(d, t, n);
}

/* d[j] = r[j] + t[j], j < n: splade_add_row with the residual read from elsewhere (the same sums). */
static inline void splade_sum_row_n(float *restrict d, const float *restrict r, const float *restrict t, int32_t n)
{
    for (int32_t j = 0; j < n; j++)
        d[j] = r[j] + t[j];
}

static inline void splade_sum_row(float *restrict d, const float *restrict r, const float *restrict t, int32_t n)
{
    if (n == 128)
        splade_sum_row_n(d, r, t, 128);
    else
        splade_sum_row_n(d, r, t, n);
}

#endif
