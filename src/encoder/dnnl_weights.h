/* nn.Linear weights ([N, K] row-major: a K x N matrix with strides (1, K)) reordered once into the
 * blocked layout a matmul kind picks, per panel of SPLADE_DNNL_PANEL output columns (a narrower last
 * panel has its own layout): what gemm_dnnl.c (bf16) and gemm_dnnl_int8.c (s8) keep per linear.
 * Only with SPLADE_HAVE_DNNL. Private to src/encoder/. */
#ifndef SPLADE_DNNL_WEIGHTS_H
#define SPLADE_DNNL_WEIGHTS_H

#include <oneapi/dnnl/dnnl.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int32_t N, K, n_panels;
    dnnl_memory_desc_t md, md_last; /* the layout of a full panel and of the last */
    dnnl_memory_t *mem;             /* per panel (oneDNN-owned) */
} splade_dnnl_weights;

/* A matmul descriptor for SPLADE_DNNL_ROWS rows times K x P weights in layout "any": the layout the
 * kernel picks is what the panels are reordered into. NULL when oneDNN has no such matmul. */
typedef dnnl_primitive_desc_t (*splade_dnnl_layout_pd)(int32_t K, int32_t P);

/* W's N x K elements of type dt (elem bytes each) into w, reordered on the calling thread's stream
 * (dnnl_cache.h); `kind` ("bf16", "int8") names the matmul in errors. On failure w holds nothing. */
int splade_dnnl_weights_create(splade_dnnl_weights *w, const void *W, dnnl_data_type_t dt, size_t elem, int32_t N,
                               int32_t K, splade_dnnl_layout_pd layout, const char *kind);
void splade_dnnl_weights_free(splade_dnnl_weights *w);

/* Panel p's width (SPLADE_DNNL_PANEL but for the last), layout and data. */
int32_t splade_dnnl_weights_width(const splade_dnnl_weights *w, int32_t p);
const dnnl_memory_desc_t *splade_dnnl_weights_md(const splade_dnnl_weights *w, int32_t p);
void *splade_dnnl_weights_data(const splade_dnnl_weights *w, int32_t p);

#endif
