/* Posting block codec (see postings.h and docs/FORMAT.md). */
#include "index/postings.h"

#include <streamvbyte.h>
#include <string.h>

#include "index/svb.h"

size_t splade_block_max_bytes(uint32_t count)
{
    return count + streamvbyte_max_compressedbytes(count);
}

size_t splade_block_encode(const uint32_t *docs, const uint8_t *impacts, uint32_t count, uint32_t prev,
                           uint8_t *out)
{
    memcpy(out, impacts, count);
    return count + splade_svb_delta_encode(docs, count, prev, out + count);
}

void splade_block_decode_docs(const uint8_t *in, uint32_t count, uint32_t prev, uint32_t *docs)
{
    splade_svb_delta_decode(in + count, count, prev, docs);
}
