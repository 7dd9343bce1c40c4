/* The GPU encoder: the seam between src/encoder/encoder.c and the GPU forward (internal, not
 * installed). Implemented in .cu files under src/encoder/ (libsplade-cuda.so, reached through
 * src/gpu/cuda_loader.c) when built with nvcc; src/gpu/no_cuda.c supplies versions that return
 * SPLADE_ERR_NO_GPU otherwise. splade_gpu_probe and the enums are public (include/splade/encoder.h). */
#ifndef SPLADE_ENCODER_GPU_ENCODER_H
#define SPLADE_ENCODER_GPU_ENCODER_H

#include "splade.h"

#include <stddef.h>
#include <stdint.h>

#include "gpu/gpu_entry.h"
#include "lmhead_fused/lmhead.h"
#include "splade/encoder.h"
#include "splade/model.h"
#include "splade/sparse.h"

/* A single sequence of at most this many tokens runs the GPU encoder's own GEMMs, never cuBLASLt
 * (gpu_gemm_small.cu); the warm-up (encoder.c) leaves cuBLASLt alone for such encoders. */
#define SPLADE_GPU_SMALL_SINGLE 512

#ifdef __cplusplus
extern "C" {
#endif

typedef struct splade_gpu_encoder splade_gpu_encoder;

/* Uploads the model once (bf16 weights): splade_gpu_encoder_create_ex(m, head, BF16, out). */
SPLADE_GPU_ENTRY int splade_gpu_encoder_create(const splade_model *m, splade_lmhead_kind head, splade_gpu_encoder **out);

/* Uploads the model once in the given precision. In FP32 the LM head is always the fp32 fused
 * SIMT kernel (splade_lmhead_gpu_fp32); `head` is validated but selects nothing. */
SPLADE_GPU_ENTRY int splade_gpu_encoder_create_ex(const splade_model *m, splade_lmhead_kind head, splade_precision precision,
                                            splade_gpu_encoder **out);

/* As _create_ex, on CUDA device `device` (< 0: the calling thread's current device), which the
 * encoder selects again at every call, so any thread may call it. tune = 0 turns off the timing of
 * cuBLASLt's candidates (SPLADE_GPU_GEMM_TUNE=0): several encoders of one run then pick the same
 * algorithms, so a batch gives the same bits on any of them. SPLADE_ERR_NO_GPU for a device that
 * does not exist. */
SPLADE_GPU_ENTRY int splade_gpu_encoder_create_on(const splade_model *m, splade_lmhead_kind head,
                                                  splade_precision precision, int device, int tune,
                                                  splade_gpu_encoder **out);

/* Creates (or retains) the primary CUDA context of `device` (< 0: device 0) from the calling thread:
 * the start-up work a later create_on then finds done. 0, or SPLADE_ERR_NO_GPU. */
SPLADE_GPU_ENTRY int splade_gpu_warm_context(int device);

/* The one-time costs of cuBLASLt's first GEMM plan (its heuristics' set-up), paid on the calling
 * thread for `device` (< 0: device 0) with a throw-away handle, so that the encoder's first forward
 * finds them done: the warm-up thread runs it while the caller uploads the weights. 0, or an error. */
SPLADE_GPU_ENTRY int splade_gpu_warm_blas(int device);

/* How many CUDA devices are visible (0 when none, or no driver). */
SPLADE_GPU_ENTRY int splade_gpu_device_count(void);

/* The precision the encoder was created with (BF16 for NULL). */
SPLADE_GPU_ENTRY splade_precision splade_gpu_encoder_precision(const splade_gpu_encoder *g);

/* Encodes B token sequences packed back to back: sequence b is
 * ids[offsets[b] .. offsets[b+1]). out_dense [B, V] fp32 host memory. */
SPLADE_GPU_ENTRY int splade_gpu_encoder_forward(splade_gpu_encoder *g, const int32_t *ids, const int32_t *offsets,
                                          int32_t B, float *out_dense);

/* The compacted SPLADE output of one batch: sequence b's nonzero terms are
 * terms[offsets[b] .. offsets[b+1]) (strictly ascending term ids) with their weights, all B
 * sequences back to back; offsets[0] = 0, offsets[B] = nnz. */
typedef struct {
    int32_t B;
    int64_t nnz;
    const int32_t *offsets;  /* [B + 1] */
    const int32_t *terms;    /* [nnz] */
    const float *weights;    /* [nnz] */
} splade_gpu_sparse;

/* Like splade_gpu_encoder_forward, but the [B, V] output is compacted on the GPU and only its
 * nonzeros cross to the host: per sequence the (term, weight) pairs with
 * weight > threshold && weight > 0 — exactly splade_sparse_from_dense's test, so any threshold
 * <= 0 keeps every positive weight and a NaN threshold keeps nothing — in increasing term order.
 * The weights are the same floats, bit for bit, that splade_gpu_encoder_forward would copy out.
 * No top-k here: splade_sparse_from_pairs applies it on the host (docs/GPU_ENCODER.md).
 * Ownership: the arrays *out points to are pinned host buffers owned by the encoder, valid until
 * the next forward call on g or splade_gpu_encoder_free (copy what you keep). B = 0 gives an
 * empty result (offsets = {0}). Errors as splade_gpu_encoder_forward (SPLADE_ERR_GPU_OOM leaves
 * the encoder usable); NULL g or out, or B < 0: SPLADE_ERR_INVALID_ARG. */
SPLADE_GPU_ENTRY int splade_gpu_encoder_forward_sparse(splade_gpu_encoder *g, const int32_t *ids, const int32_t *offsets,
                                                 int32_t B, float threshold, splade_gpu_sparse *out);

SPLADE_GPU_ENTRY void splade_gpu_encoder_free(splade_gpu_encoder *g);

#ifdef __cplusplus
}
#endif
#endif
