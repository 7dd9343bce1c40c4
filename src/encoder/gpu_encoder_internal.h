/* Test and benchmark seams of the GPU encoder (src/encoder/gpu_encoder.cu). Not public API. */
#ifndef SPLADE_GPU_ENCODER_INTERNAL_H
#define SPLADE_GPU_ENCODER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "encoder/gpu_encoder.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs the forward pass up to the LM head's input (the MLM transform's output: dense, GELU,
 * LayerNorm) and copies it to out_hidden, fp32 [T, hidden] with T = offsets[B] - offsets[0]
 * rows packed as the input. Lets tests check the encoder without the LM head. */
int splade_gpu_encoder_forward_hidden(splade_gpu_encoder *g, const int32_t *ids, const int32_t *offsets,
                                      int32_t B, float *out_hidden);

/* Runs the whole forward pass (with_head: through the LM head, else up to its input) and
 * waits for it, leaving the result on the device: for benchmarks that time the GPU work
 * without the [B, V] copy to the host. */
int splade_gpu_encoder_forward_device(splade_gpu_encoder *g, const int32_t *ids, const int32_t *offsets,
                                      int32_t B, int with_head);

/* Test seam of the output compaction (gpu_sparse.cu): uploads a host [B, V] fp32 array (row
 * stride V), compacts it on the GPU exactly as splade_gpu_encoder_forward_sparse does, and
 * returns malloc'd copies (free() each): *offsets [B + 1], *terms and *weights [(*offsets)[B]]
 * (at least one element each). B = 0: offsets = {0}. NULL pointers, B < 0, V < 1 or
 * B * V > 2^31 - 1: SPLADE_ERR_INVALID_ARG. */
int splade_gpu_sparse_compact_host(const float *dense, int32_t B, int32_t V, float threshold,
                                   int32_t **offsets, int32_t **terms, float **weights);

/* Stage timing (CUDA events around each launch; adds small gaps, so benchmarks time without it). */
enum {
    SPLADE_GPU_PROF_EMBED = 0,
    SPLADE_GPU_PROF_GEMM,       /* the four per-layer GEMMs and the MLM dense */
    SPLADE_GPU_PROF_ATTENTION,
    SPLADE_GPU_PROF_NORM,       /* add+LayerNorm, GELU */
    SPLADE_GPU_PROF_HEAD,       /* splade_lmhead_gpu */
    SPLADE_GPU_PROF_COPY,       /* host<->device copies (and the output compaction's kernels) */
    SPLADE_GPU_PROF_N
};
void splade_gpu_encoder_set_profile(splade_gpu_encoder *g, int on);
/* Milliseconds per stage of the last forward run with profiling on. */
void splade_gpu_encoder_profile(const splade_gpu_encoder *g, double ms[SPLADE_GPU_PROF_N]);

/* Device bytes the encoder holds now (weights + workspaces), and the weights alone. */
size_t splade_gpu_encoder_device_bytes(const splade_gpu_encoder *g);
size_t splade_gpu_encoder_weight_bytes(const splade_gpu_encoder *g);

#ifdef __cplusplus
}
#endif
#endif
