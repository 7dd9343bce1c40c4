/* Build-time document order (reorder.c). */
#ifndef SPLADE_INDEX_REORDER_H
#define SPLADE_INDEX_REORDER_H

#include <stdint.h>

#include "splade/index.h"

/* Collections smaller than this keep corpus order: they fit in a few ranges, nothing to gain. */
#define SPLADE_REORDER_MIN_DOCS 1024

/* *order_out[i] = the builder document that gets internal id i (caller frees). The result does not
 * depend on threads (how many threads assign documents to clusters). */
int splade_reorder_docs(const splade_index_builder *b, int threads, uint32_t **order_out);

#endif
