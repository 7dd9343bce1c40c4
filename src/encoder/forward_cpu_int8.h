/* The opt-in int8 CPU forward's weights (`--precision int8` on the CPU): every Linear of the model
 * quantized per output channel and laid out for oneDNN once, when the encoder is created
 * (gemm_dnnl_int8.h). Private to src/encoder/. */
#ifndef SPLADE_FORWARD_CPU_INT8_H
#define SPLADE_FORWARD_CPU_INT8_H

#include <stdint.h>

#include "encoder/gemm_dnnl_int8.h"
#include "splade/model.h"

typedef struct {
    splade_q8_linear *q, *k, *v, *o, *ffn_in, *ffn_out;
} splade_q8_layer;

typedef struct splade_cpu_int8 {
    int32_t n_layers;
    splade_q8_layer *layers;
    splade_q8_linear *mlm_dense, *decoder;
} splade_cpu_int8;

/* SPLADE_ERR_UNSUPPORTED (naming the missing feature) when the CPU has no VNNI. */
int splade_cpu_int8_create(const splade_model *m, splade_cpu_int8 **out);
void splade_cpu_int8_free(splade_cpu_int8 *w);

/* The SPLADE head from the MLM transform's output quantized per row (X [T, H], sequences at
 * offsets): out[b][v] = log1p(relu(max over b's rows of X·Wᵀ + bias)), on a team of nthreads. */
int splade_lmhead_cpu_int8(const splade_q8_linear *dec, const splade_q8_rows *X, const int32_t *offsets, int32_t B,
                           float *out, int nthreads);

#endif
