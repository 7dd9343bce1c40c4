/* An encoder backend: what src/encoder/encoder.c needs of a device, as a small function table
 * (ggml's backend pattern), so that batching, splitting on out-of-memory, the CPU fallback and
 * sparsification are written once for every device, and a backend per GPU can be added without
 * touching them. Internal. Backends: backend_cpu.c (exact fp32 forward), backend_cuda.c (the GPU
 * encoder of gpu_encoder.h, through the lazy loader). */
#ifndef SPLADE_ENCODER_BACKEND_H
#define SPLADE_ENCODER_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "encoder/gpu_encoder.h"
#include "splade/encoder.h"
#include "splade/model.h"

typedef struct {
    const char *name;       /* "cpu", "cuda" */
    splade_device device;   /* what splade_encoder_device reports */
    int32_t default_batch;  /* documents per forward when the options give none */
    /* Sets the device up for these options (no weights yet): 0 with the device's name in name[n],
     * else a status with the reason there (SPLADE_ERR_NO_GPU: no usable device). device: which GPU
     * (< 0: the current one); tune 0: no timing-based choices that could differ between two
     * instances (several GPUs of one run). The CPU ignores both. */
    int (*create)(const splade_encoder_opts *o, int device, int tune, void **state, char *name, size_t n);
    /* Makes m's weights usable by forward (borrowed: m outlives the state). */
    int (*upload)(void *state, const splade_model *m);
    /* How many sequences from the first of a packed batch one forward may take (>= 1): a memory
     * cap known in advance. NULL: all (the device reports SPLADE_ERR_GPU_OOM instead). */
    int32_t (*fit)(void *state, const int32_t *offsets, int32_t B);
    /* out_dense [B, V] host fp32: max over positions of log1p(relu(logits)). */
    int (*forward)(void *state, const int32_t *ids, const int32_t *offsets, int32_t B, float *out_dense);
    /* The same output compacted on the device (weights > threshold and > 0, terms ascending),
     * pairs valid until the next forward. NULL: the backend has only the dense output. */
    int (*forward_sparse)(void *state, const int32_t *ids, const int32_t *offsets, int32_t B, float threshold,
                          splade_gpu_sparse *out);
    void (*free)(void *state);
} splade_encoder_backend;

extern const splade_encoder_backend splade_backend_cpu;
extern const splade_encoder_backend splade_backend_cuda;

#endif
