/* The opt-in int8 CPU forward's weights (`--precision int8` on the CPU): every Linear of the model
 * quantized per output channel and laid out for oneDNN once, when the encoder is created
 * (gemm_dnnl_int8.h). Private to src/encoder/. */
#ifndef SPLADE_FORWARD_CPU_INT8_H
#define SPLADE_FORWARD_CPU_INT8_H

#include <stdint.h>

#include "encoder/gemm_dnnl.h"
#include "encoder/gemm_dnnl_int8.h"
#include "splade/model.h"

typedef struct {
    splade_q8_linear *q, *k, *v, *o, *ffn_in, *ffn_out;
} splade_q8_layer;

/* GEMMs of the layers a quality bisection may keep in fp32 (settings.h, SPLADE_CPU_INT8_FP32). */
enum {
    SPLADE_Q8_QKV = 1,
    SPLADE_Q8_ATTN_OUT = 2,
    SPLADE_Q8_FFN_IN = 4,
    SPLADE_Q8_FFN_OUT = 8,
};

/* The format of the MLM transform and the LM head in the int8 forward. They decide the vocabulary
 * logits directly, and int8 there costs the most quality (bench/results/encoder-cpu-int8-2026-11-25.md:
 * on splade-tiny the MLM transform alone moves the vectors by as much as all 12 layer GEMMs
 * together), so they run in bf16 (AMX / AVX512-BF16) or, on a CPU without bf16, fp32. INT8 is the
 * measurement's alternative (settings.h, SPLADE_CPU_INT8_HEAD). */
enum { SPLADE_Q8_HEAD_INT8 = 1, SPLADE_Q8_HEAD_BF16 = 2, SPLADE_Q8_HEAD_FP32 = 3 };

typedef struct splade_cpu_int8 {
    int32_t n_layers;
    splade_q8_layer *layers;
    int head;                                      /* SPLADE_Q8_HEAD_* */
    splade_q8_linear *mlm_dense, *decoder;         /* head INT8 */
    splade_dnnl_linear *mlm_dense_bf, *decoder_bf; /* head BF16 (FP32: the model's own weights) */
} splade_cpu_int8;

/* SPLADE_ERR_UNSUPPORTED (naming the missing feature) when the CPU has no VNNI. */
int splade_cpu_int8_create(const splade_model *m, splade_cpu_int8 **out);
void splade_cpu_int8_free(splade_cpu_int8 *w);

/* The SPLADE head from the MLM transform's output quantized per row (X [T, H], sequences at
 * offsets): out[b][v] = log1p(relu(max over b's rows of X·Wᵀ + bias)), on a team of nthreads. */
int splade_lmhead_cpu_int8(const splade_q8_linear *dec, const splade_q8_rows *X, const int32_t *offsets, int32_t B,
                           float *out, int nthreads);

#endif
