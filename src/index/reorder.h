/* Build-time document order (reorder.c). */
#ifndef SPLADE_INDEX_REORDER_H
#define SPLADE_INDEX_REORDER_H

#include "index/builder_internal.h"

/* Collections smaller than this keep corpus order: they fit in a few ranges, nothing to gain. */
#define SPLADE_REORDER_MIN_DOCS 1024

/* *order_out[i] = the builder document that gets internal id i (caller frees). */
int splade_reorder_docs(const splade_index_builder *b, uint32_t **order_out);

#endif
