/* Scaled dot-product attention of one (sequence, head) on the CPU, fp32. Private to src/encoder/. */
#ifndef SPLADE_ATTENTION_CPU_H
#define SPLADE_ATTENTION_CPU_H

#include <stddef.h>
#include <stdint.h>

/* ctx[i] = softmax_j(q[i]·k[j] * scale) · v[j] for i, j < L: rows of q, k, v, ctx at stride ld,
 * dh floats each (one head's columns). scratch: splade_attention_scratch_floats(L, dh) floats,
 * 64-byte aligned, private to the calling thread. */
void splade_attention_head(const float *q, const float *k, const float *v, float *ctx, int32_t L, int32_t dh,
                           int32_t ld, float scale, float *scratch);

size_t splade_attention_scratch_floats(int32_t L, int32_t dh);

#endif
