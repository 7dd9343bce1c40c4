/* BMP bounds from a dense range-maxima table (docs/FORMAT.md, "Range maxima"): dense_ranges.c. */
#ifndef SPLADE_QUERY_DENSE_RANGES_H
#define SPLADE_QUERY_DENSE_RANGES_H

#include <stdint.h>

#include "index/format.h"

/* ub[r] += qw * max[r] and present bit r set where max[r] != 0, for r < n. present has n / 64 + 1
 * words, zeroed by the caller. qw <= 255. */
void splade_dense_ranges_add(const uint8_t *max, uint32_t n, uint32_t qw, uint32_t *ub, uint64_t *present);

/* One term's range table (dense or sparse, docs/FORMAT.md "Range maxima") into the same: ub[r] +=
 * qw * max[r] and present bit r set, for its ranges r < n_ranges (entries past it, in a damaged
 * table, are ignored). ids: scratch for a sparse table's decoded range ids (tr->n + 16 entries);
 * they stay there for the caller. BMP and wtaat both build their bounds with it. */
void splade_ranges_add(const splade_term_ranges *tr, uint32_t n_ranges, uint32_t qw, uint32_t *ids, uint32_t *ub,
                       uint64_t *present);

#endif
