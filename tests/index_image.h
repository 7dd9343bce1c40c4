/* Test helper: an index file held in memory, changed on purpose (tests/test_index_corruption.c,
 * tests/test_limits.c). */
#ifndef SPLADE_TESTS_INDEX_IMAGE_H
#define SPLADE_TESTS_INDEX_IMAGE_H

#include <stdint.h>
#include <string.h>

#include "index/format.h"
#include "splade/index.h"

/* Recomputes every section CRC (of the sections that lie inside the file) and the header CRC, so
 * that a change reaches the structural checks behind the checksums. A header too broken to say
 * where its table ends is left alone. */
static inline void spx_image_fix_crcs(uint8_t *f, size_t size)
{
    spx_header h;
    memcpy(&h, f, sizeof h);
    if (h.n_sections > SPX_MAX_SECTIONS || spx_header_bytes(h.n_sections) > size)
        return;
    for (uint32_t i = 0; i < h.n_sections; i++) {
        spx_section s;
        memcpy(&s, f + sizeof h + 32u * i, sizeof s);
        if (s.offset <= size && s.length <= size - s.offset)
            s.crc = splade_crc32c(0, f + s.offset, s.length);
        memcpy(f + sizeof h + 32u * i, &s, sizeof s);
    }
    uint32_t hb = spx_header_bytes(h.n_sections), crc = splade_crc32c(0, f, hb - 8);
    memcpy(f + hb - 8, &crc, 4);
}

#endif
