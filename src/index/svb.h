/* Stream VByte delta coding (the libstreamvbyte format of docs/FORMAT.md), our own: Debian's
 * libstreamvbyte runs its scalar decoder on our CPUs (measured: 5x slower than a table-driven
 * SSSE3 shuffle), and every query decodes posting blocks and range lists with it. */
#ifndef SPLADE_INDEX_SVB_H
#define SPLADE_INDEX_SVB_H

#include <stdint.h>

/* Decodes count delta-coded values from in (control bytes, then data) into out, continuing the
 * running sum from prev. May read up to 16 bytes past the encoded data (the sections carry that
 * padding) but writes exactly count values. Returns the bytes consumed. */
uint64_t splade_svb_delta_decode(const uint8_t *in, uint32_t count, uint32_t prev, uint32_t *out);

/* Validates a delta list before anything reads it as trusted (the reader's open-time check):
 * control bytes and data fit in the avail bytes at in (the 16 bytes after them must be readable:
 * the sections' padding), the values summed from prev are strictly ascending (the first may equal
 * prev only if first_zero_ok) and all < limit. 1 with *last = the last value (prev if count is 0),
 * else 0. Decodes into scratch (count entries). Same verdicts as a byte-by-byte scalar check, at
 * decoding speed: the reader runs it over every posting of the index at each open. */
int splade_svb_delta_check(const uint8_t *in, uint64_t avail, uint32_t count, uint32_t prev, int first_zero_ok,
                           uint64_t limit, uint32_t *last, uint32_t *scratch);

/* Encodes count values as deltas from prev (strictly the libstreamvbyte format, byte for byte).
 * Writes up to 3 bytes past the returned length (scratch the caller's buffer must have). */
uint64_t splade_svb_delta_encode(const uint32_t *in, uint32_t count, uint32_t prev, uint8_t *out);

#endif
