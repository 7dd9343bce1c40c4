/* BMP bounds from a dense range-maxima table (docs/FORMAT.md, "Range maxima"): dense_ranges.c. */
#ifndef SPLADE_QUERY_DENSE_RANGES_H
#define SPLADE_QUERY_DENSE_RANGES_H

#include <stdint.h>

/* ub[r] += qw * max[r] and present bit r set where max[r] != 0, for r < n. present has n / 64 + 1
 * words, zeroed by the caller. qw <= 255. */
void splade_dense_ranges_add(const uint8_t *max, uint32_t n, uint32_t qw, uint32_t *ub, uint64_t *present);

#endif
