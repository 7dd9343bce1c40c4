/* GPU backend entry points, callable from C. Implemented in .cu files under src/ when built with nvcc;
 * src/gpu/no_cuda.c supplies versions that return SPLADE_ERR_NO_GPU otherwise. */
#ifndef SPLADE_GPU_H
#define SPLADE_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "splade/lmhead.h"
#include "splade/model.h"
#include "splade/sparse.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if a CUDA device is usable (name written to `name`), else 0 with the reason in `name`. */
int splade_gpu_probe(char *name, size_t name_len);

typedef struct splade_gpu_encoder splade_gpu_encoder;

/* Uploads the model once (bf16 weights). */
int splade_gpu_encoder_create(const splade_model *m, splade_lmhead_kind head, splade_gpu_encoder **out);

/* Encodes B token sequences packed back to back: sequence b is
 * ids[offsets[b] .. offsets[b+1]). out_dense [B, V] fp32 host memory. */
int splade_gpu_encoder_forward(splade_gpu_encoder *g, const int32_t *ids, const int32_t *offsets,
                               int32_t B, float *out_dense);

void splade_gpu_encoder_free(splade_gpu_encoder *g);

#ifdef __cplusplus
}
#endif
#endif
