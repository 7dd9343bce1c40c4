/* Block codec of docs/FORMAT.md: u8 impacts[count], then streamvbyte delta-coded doc ids. */
#ifndef SPLADE_INDEX_POSTINGS_H
#define SPLADE_INDEX_POSTINGS_H

#include <stddef.h>
#include <stdint.h>

#include "index/format.h"

/* Largest encoded size of a block of `count` postings. */
size_t splade_block_max_bytes(uint32_t count);
/* Encodes count postings (docs ascending, > prev unless first of a term) into out; returns bytes. */
size_t splade_block_encode(const uint32_t *docs, const uint8_t *impacts, uint32_t count, uint32_t prev,
                           uint8_t *out);
/* Decodes the doc ids of a block at `in` (impacts are in[0 .. count)). */
void splade_block_decode_docs(const uint8_t *in, uint32_t count, uint32_t prev, uint32_t *docs);

/* Block b of one term's list (blocks, n_blocks, n_postings and postings as in splade_term_postings):
 * its doc ids decoded into docs, the address of its impacts into *imps; returns its postings count. */
static inline uint32_t splade_list_block(const splade_block_entry *blocks, uint32_t n_blocks, uint32_t n_postings,
                                         const uint8_t *postings, uint32_t b, uint32_t *docs, const uint8_t **imps)
{
    const uint32_t prev = b ? blocks[b - 1].last_doc : 0;
    const uint32_t count = b + 1 < n_blocks ? SPLADE_BLOCK_SIZE : n_postings - b * SPLADE_BLOCK_SIZE;
    *imps = postings + blocks[b].offset;
    splade_block_decode_docs(*imps, count, prev, docs);
    return count;
}

#endif
