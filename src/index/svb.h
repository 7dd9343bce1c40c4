/* Stream VByte delta decoding (the libstreamvbyte format of docs/FORMAT.md), our own: Debian's
 * libstreamvbyte runs its scalar decoder on our CPUs (measured: 5x slower than a table-driven
 * SSSE3 shuffle), and every query decodes posting blocks and range lists with it. */
#ifndef SPLADE_INDEX_SVB_H
#define SPLADE_INDEX_SVB_H

#include <stdint.h>

/* Decodes count delta-coded values from in (control bytes, then data) into out, continuing the
 * running sum from prev. May read up to 16 bytes past the encoded data (the sections carry that
 * padding) but writes exactly count values. Returns the bytes consumed. */
uint64_t splade_svb_delta_decode(const uint8_t *in, uint32_t count, uint32_t prev, uint32_t *out);

#endif
