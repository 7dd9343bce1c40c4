/* Attention of one (sequence, head) with bf16 products and fp32 accumulation (oneDNN, AMX where
 * present), for the reduced-precision CPU forwards only (`--precision bf16|int8`); the fp32 forward
 * keeps attention_cpu.c. Private to src/encoder/. */
#ifndef SPLADE_ATTENTION_BF16_H
#define SPLADE_ATTENTION_BF16_H

#include <stddef.h>
#include <stdint.h>

/* 1 when splade_attention_head_bf16 runs sequences of L tokens: oneDNN runs bf16 natively here and
 * L is a document's length (queries keep attention_cpu.c's short fp32 kernel, faster at their size). */
int splade_attention_bf16_usable(int32_t L);

/* As splade_attention_head (attention_cpu.h): ctx[i] = softmax_j(q[i]·k[j] * scale) · v[j], with q,
 * k, v and the probabilities rounded to bf16 (scores, softmax and sums fp32); ctxb (optional, same
 * stride) gets ctx rounded to bf16; ctx may be NULL when ctxb is not (the bf16 forward reads ctxb alone:
 * the fp32 copy was ~2.5% of a 256-token document's time). scratch: splade_attention_bf16_scratch_floats(L, dh) floats, 64-byte
 * aligned, the calling thread's. Returns a status (oneDNN primitive creation can fail). */
int splade_attention_head_bf16(const float *q, const float *k, const float *v, float *ctx, uint16_t *ctxb, int32_t L,
                               int32_t dh, int32_t ld, float scale, float *scratch);

size_t splade_attention_bf16_scratch_floats(int32_t L, int32_t dh);

/* The same from q, k, v already in bf16 dense blocks [Lp][dh], Lp = splade_attention_bf16_padded(L),
 * rows from L zero (what splade_attention_head_bf16 makes of its fp32 rows: the same bits). */
int splade_attention_head_bf16_blocks(const uint16_t *Qb, const uint16_t *Kb, const uint16_t *Vb, float *ctx,
                                      uint16_t *ctxb, int32_t L, int32_t dh, int32_t ld, float scale, float *scratch);

/* The block rows of a sequence of L tokens (L rounded up to the products' granularity). */
int32_t splade_attention_bf16_padded(int32_t L);

#endif
