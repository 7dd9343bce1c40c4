/* Exact fp32 BERT forward + SPLADE head on the CPU. Private to src/encoder/. */
#ifndef SPLADE_FORWARD_CPU_H
#define SPLADE_FORWARD_CPU_H

#include <stdint.h>

#include "splade/model.h"

/* Sequence b is ids[offsets[b] .. offsets[b+1]) (packed, no padding; every token is attended,
 * so the padding mask is implicit). Lengths must be in [1, max_position]; ids in [0, vocab).
 * out_dense [B, V] receives max over positions of log1p(relu(logits)).
 * threads > 0: that many threads (a team; OpenBLAS runs single-threaded inside it); <= 0: OpenBLAS's
 * default count. */
int splade_forward_cpu(const splade_model *m, const int32_t *ids, const int32_t *offsets, int32_t B,
                       float *out_dense, int threads);

/* The same with bf (forward_cpu_bf16.h) non-NULL: every GEMM (layers, MLM transform, LM head)
 * takes bf16 inputs with fp32 accumulation through oneDNN (`--precision bf16` on the CPU), and so do a
 * document's attention products (attention_bf16.h); softmax, LayerNorm, residuals and the SPLADE
 * activation stay fp32. bf NULL: the fp32 forward. */
struct splade_cpu_bf16;
int splade_forward_cpu_bf16(const splade_model *m, const struct splade_cpu_bf16 *bf, const int32_t *ids,
                            const int32_t *offsets, int32_t B, float *out_dense, int threads);

/* Either reduced precision: q8 (forward_cpu_int8.h) non-NULL runs the int8 forward (`--precision
 * int8` on the CPU: every GEMM of the layers, the MLM transform and the LM head in int8 with s32
 * accumulation, activations quantized per row; a document's attention products bf16 as in the bf16
 * forward; softmax, LayerNorm, residuals and the SPLADE activation fp32), else bf as
 * splade_forward_cpu_bf16. With neither, the fp32 forward; its max-pooled head goes through
 * `screen` when given (lmhead_screen_cpu.h: the fp32 head's results at bf16 speed), and its GEMMs
 * over few rows read `pk` when given (forward_cpu_packed.h: the same bits, faster). */
struct splade_cpu_int8;
struct splade_head_screen;
struct splade_cpu_packed;
int splade_forward_cpu_lowp(const splade_model *m, const struct splade_cpu_bf16 *bf, const struct splade_cpu_int8 *q8,
                            const struct splade_head_screen *screen, const struct splade_cpu_packed *pk,
                            const int32_t *ids, const int32_t *offsets, int32_t B, float *out_dense, int threads);

#endif
