/* The inversion's two phases (invert.c runs them): scatter.c groups quantized postings by term
 * (radix passes), encode_terms.c cuts each term's list into compressed blocks and range maxima. */
#ifndef SPLADE_INDEX_INVERT_INTERNAL_H
#define SPLADE_INDEX_INVERT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "index/builder_internal.h"

/* Postings of every term, grouped by term (CSR): docs ascending because documents are
 * scattered in internal-id order. start has n_terms + 1 entries. */
typedef struct {
    uint64_t *start;
    uint32_t *docs;
    uint8_t *imps;
} csr;

/* A large buffer on transparent huge pages where the kernel allows them (madvise mode): the
 * inversion touches over a GB of fresh memory per million documents, and faulting it in 4 KB pages
 * cost more CPU than the radix passes themselves (perf: clear_page + fault handling). free()able. */
void *splade_big_alloc(size_t n);

/* Quantizes every document's weights and groups the postings by term (remapped through remap when
 * non-NULL) into c, documents in internal-id order (order[i] = the builder document of internal id i,
 * NULL: corpus order), on P threads. The quantization maximum is fixed_max when > 0 (a segment of an
 * existing index: *clipped counts the weights above it, saturated at 255), else
 * splade_scale_max(largest weight / 255); *max_out receives the largest weight. */
int splade_scatter(const splade_index_builder *b, const int32_t *remap, const uint32_t *order, int P, csr *c,
                   float fixed_max, float *max_out, uint64_t *clipped);

/* Encodes c's T term lists (n_docs documents) into inv's blocks, postings and range maxima on P
 * threads. */
int splade_encode_terms(const csr *c, int32_t T, uint32_t n_docs, int P, splade_inverted *inv);

#endif
