/* The fp32 CPU SPLADE head at bf16 speed, with fp32 results (`--precision fp32`, the default).
 *
 * A SPLADE vector keeps ~1% of the vocabulary: every other term's logits are negative at every
 * position, and relu zeroes them. The screen computes every logit in bf16 on the CPU's bf16 units
 * (AMX / AVX512-BF16: ~5x the fp32 FMA rate), bounds the bf16 error of each (sequence, term)
 * maximum rigorously, and recomputes in fp32 only the terms whose bound leaves them a chance of a
 * positive maximum, with the plain fp32 head's own kernel (splade_lmhead_cpu_columns); the rest are
 * exactly 0 in any precision. So the output is splade_lmhead_cpu's, bit for bit, not a bf16
 * approximation: whether an encoder uses the screen changes no vector. Private to src/encoder/.
 *
 * The bound, per logit y = x·w + b computed as y' from bf16(x), bf16(w) with fp32 accumulation
 * (any summation order, bias added in fp32): each product is off by at most (2u + u²)|x_i w_i|
 * (u = 2^-8, bf16's unit roundoff), the sum by γ_K Σ|products| (γ_K = K·2^-24 / (1 - K·2^-24)),
 * the bias add by 2^-24 (|acc| + |b|). With Σ|x_i||w_i| <= min(‖x‖₂‖w‖₂, ‖x‖∞‖w‖₁) (Cauchy-Schwarz,
 * Hölder) per sequence's largest ‖x‖, the true maximum over a sequence is below the bf16 maximum
 * plus that bound, so a term whose sum is <= 0 is 0 exactly. */
#ifndef SPLADE_LMHEAD_SCREEN_CPU_H
#define SPLADE_LMHEAD_SCREEN_CPU_H

#include <stdint.h>

typedef struct splade_head_screen splade_head_screen;

/* W [V, K] row-major fp32 (the decoder, borrowed: it must outlive the screen) and bias [V]
 * (borrowed too). SPLADE_ERR_UNSUPPORTED when the CPU (or the build) has no native bf16 matmul, or
 * the plain head would not run its AVX-512 kernel: callers then keep the plain fp32 head. */
int splade_head_screen_create(const float *W, const float *bias, int32_t V, int32_t K, splade_head_screen **out);
void splade_head_screen_free(splade_head_screen *s);

/* Tests only: multiply the error bound by `factor` (1 by default; 0 drops it, which must lose
 * terms on adversarial inputs: the test that the bound matters). */
void splade_head_screen_set_bound_factor(splade_head_screen *s, double factor);

/* out[b][v] = log1p(relu(max over sequence b's rows of X·Wᵀ + bias)), X fp32 [T, K] with
 * sequence b at rows [offsets[b], offsets[b+1]); on a team of nthreads: splade_lmhead_cpu's output
 * bit for bit, whatever nthreads. *candidates (optional) receives how many (sequence, term) pairs
 * were computed in fp32. */
int splade_lmhead_cpu_screened(const splade_head_screen *s, const float *X, const int32_t *offsets, int32_t B,
                               float *out, int nthreads, int64_t *candidates);

#endif
