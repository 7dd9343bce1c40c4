/* Block codec of docs/FORMAT.md: u8 impacts[count], then streamvbyte delta-coded doc ids. */
#ifndef SPLADE_INDEX_POSTINGS_H
#define SPLADE_INDEX_POSTINGS_H

#include <stddef.h>
#include <stdint.h>

/* Largest encoded size of a block of `count` postings. */
size_t splade_block_max_bytes(uint32_t count);
/* Encodes count postings (docs ascending, > prev unless first of a term) into out; returns bytes. */
size_t splade_block_encode(const uint32_t *docs, const uint8_t *impacts, uint32_t count, uint32_t prev,
                           uint8_t *out);
/* Decodes the doc ids of a block at `in` (impacts are in[0 .. count)). */
void splade_block_decode_docs(const uint8_t *in, uint32_t count, uint32_t prev, uint32_t *docs);

#endif
