/* GPU compaction of the SPLADE output (private to src/encoder/gpu_*.cu; implemented in
 * gpu_sparse.cu): a [B, V] fp32 array on the device -> per row, the (term, weight) pairs with
 * weight > threshold && weight > 0 (splade_sparse_from_dense's test), in increasing term order,
 * all rows back to back, copied to pinned host buffers.
 *
 *   1. sparse_count: a block per row counts its kept entries
 *   2. sparse_scan:  one block, exclusive scan of the B counts -> offsets[B + 1]
 *   3. offsets to the host (B + 1 int32), wait, grow the pair buffers to offsets[B]
 *   4. sparse_write: a block per row writes its pairs at offsets[b], in term order
 *   5. terms[nnz] and weights[nnz] to the host, wait */
#ifndef SPLADE_GPU_SPARSE_CUH
#define SPLADE_GPU_SPARSE_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "encoder/gpu_encoder.h"

namespace splade_gpu {

/* Buffers of the compaction, grown on demand, kept between calls (one per GPU encoder). */
struct SparseWs {
    int32_t *counts_d = nullptr;  /* device: counts [cap_B], then offsets [cap_B + 1] */
    int32_t *offs_h = nullptr;    /* pinned host: offsets [cap_B + 1] */
    size_t cap_B = 0;
    int32_t *terms_d = nullptr;   /* device pairs [cap_d] */
    float *weights_d = nullptr;
    size_t cap_d = 0;
    int32_t *terms_h = nullptr;   /* pinned host pairs [cap_h] */
    float *weights_h = nullptr;
    size_t cap_h = 0;
    int32_t empty_off = 0;        /* offsets of a B = 0 result */
};

/* Compacts dense_d [B, V] (device, row stride V) on stream s and fills *out with pointers into
 * ws's pinned host buffers (valid until the next call with ws). B >= 1, V >= 1,
 * (int64)B * V <= INT32_MAX. Returns with the stream idle. Allocation failures:
 * SPLADE_ERR_GPU_OOM, ws left consistent. */
int sparse_compact(SparseWs &ws, const float *dense_d, int32_t B, int32_t V, float threshold, cudaStream_t s,
                   splade_gpu_sparse *out);

/* The B = 0 result (offsets = {0}). */
void sparse_empty(SparseWs &ws, splade_gpu_sparse *out);

/* Device bytes ws holds. */
size_t sparse_device_bytes(const SparseWs &ws);

/* Frees everything (the caller has synchronised the stream). */
void sparse_free(SparseWs &ws);

}  // namespace splade_gpu

#endif
