/* A SPLADE sparse vector: term ids (vocabulary rows) ascending, positive weights. */
#ifndef SPLADE_SPARSE_H
#define SPLADE_SPARSE_H

#include "splade.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t n;         /* number of nonzero terms */
    int32_t *terms;    /* [n], strictly ascending; owned, free with splade_sparse_free */
    float *weights;    /* [n], > 0 */
} splade_sparse;

/* Frees the arrays of v (not v itself) and zeroes it. NULL-safe. */
SPLADE_API void splade_sparse_free(splade_sparse *v);

/* Builds v from a dense [V] row, keeping entries > threshold (0 keeps all
 * positive ones), then the top_k largest if top_k > 0 (ties: lower term id).
 * On success v owns fresh arrays; returns a splade_status. */
SPLADE_API int splade_sparse_from_dense(const float *dense, int32_t V, float threshold, int32_t top_k,
                                        splade_sparse *v);

/* Builds v from n (term, weight) pairs already filtered (e.g. by the GPU's output compaction,
 * splade_gpu_encoder_forward_sparse), terms strictly ascending: keeps them all, or the top_k
 * largest if top_k > 0 with splade_sparse_from_dense's selection and tie-break (lower term id).
 * Given the pairs splade_sparse_from_dense would keep, the result is identical bit for bit.
 * terms/weights may be NULL when n == 0. On success v owns fresh arrays. */
SPLADE_API int splade_sparse_from_pairs(const int32_t *terms, const float *weights, int32_t n, int32_t top_k,
                                        splade_sparse *v);

/* Dot product of two sparse vectors (both ascending). */
SPLADE_API double splade_sparse_dot(const splade_sparse *a, const splade_sparse *b);

#ifdef __cplusplus
}
#endif
#endif
