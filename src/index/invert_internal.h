/* The inversion's two phases (invert.c runs them): scatter.c groups quantized postings by term
 * (radix passes), encode_terms.c cuts each term's list into compressed blocks and range maxima. */
#ifndef SPLADE_INDEX_INVERT_INTERNAL_H
#define SPLADE_INDEX_INVERT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/big_alloc.h"
#include "index/builder_internal.h"

/* Postings of every term, grouped by term (CSR): docs ascending because documents are
 * scattered in internal-id order. start has n_terms + 1 entries. */
typedef struct {
    uint64_t *start;
    uint32_t *docs;
    uint8_t *imps;
} csr;


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

/* One term's n postings (docs ascending, their impacts) cut into blocks: the BLOCKS entries
 * blocks[0 .. ceil(n / 128)), encoded bytes appended at out + *pos (a block's offset is *pos when it
 * starts); te's n_postings and max_impact are set (te zeroed by the caller, first_block its own).
 * out needs ceil(n / 128) x splade_block_max_bytes(128) bytes. */
void splade_encode_list(const uint32_t *docs, const uint8_t *imps, uint64_t n, splade_block_entry *blocks,
                        splade_term_entry *te, uint8_t *out, size_t *pos);
/* The same list's range maxima (docs/FORMAT.md, "Range maxima") in a collection of `total` ranges,
 * appended at out + *pos (dense or sparse, *rt describes it); ids and max are scratch of n entries.
 * out needs max(total, 6 n + 16) bytes. */
void splade_encode_list_ranges(const uint32_t *docs, const uint8_t *imps, uint64_t n, uint32_t total, uint32_t *ids,
                               uint8_t *max, splade_range_term *rt, uint8_t *out, size_t *pos);

#endif
