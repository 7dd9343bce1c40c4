/* The opt-in bf16 CPU forward's weights (`--precision bf16` on the CPU): every Linear of the
 * model converted to bf16 and laid out for oneDNN once, when the encoder is created. Private to
 * src/encoder/. */
#ifndef SPLADE_FORWARD_CPU_BF16_H
#define SPLADE_FORWARD_CPU_BF16_H

#include <stdint.h>

#include "encoder/gemm_dnnl.h"
#include "splade/model.h"

typedef struct {
    splade_dnnl_linear *q, *k, *v, *o, *ffn_in, *ffn_out;
} splade_bf16_layer;

typedef struct splade_cpu_bf16 {
    int32_t n_layers;
    splade_bf16_layer *layers;
    splade_dnnl_linear *mlm_dense, *decoder;
} splade_cpu_bf16;

/* SPLADE_ERR_UNSUPPORTED (a clear detail) when the CPU cannot run bf16 natively. */
int splade_cpu_bf16_create(const splade_model *m, splade_cpu_bf16 **out);
void splade_cpu_bf16_free(splade_cpu_bf16 *w);

/* The SPLADE head from the MLM transform's output in bf16 (X [T, H], sequences at offsets, readable
 * and finite up to the next multiple of SPLADE_DNNL_ROWS rows: gemm_dnnl.h's SPLADE_DNNL_PAD_ROWS):
 * out[b][v] = log1p(relu(max over b's rows of X·Wᵀ + bias)), on a team of nthreads. */
int splade_lmhead_cpu_bf16(const splade_dnnl_linear *dec, const uint16_t *X, const int32_t *offsets, int32_t B,
                           float *out, int nthreads);

/* The same but out[b][v] = the maximum logit itself (bias included, no activation): the fp32
 * head's screen (lmhead_screen_cpu.h). */
int splade_lmhead_cpu_bf16_max(const splade_dnnl_linear *dec, const uint16_t *X, const int32_t *offsets, int32_t B,
                               float *out, int nthreads);

#endif
