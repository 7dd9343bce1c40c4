/* Bulk document-weight quantization for the inversion (quantize.c). */
#ifndef SPLADE_INDEX_QUANTIZE_H
#define SPLADE_INDEX_QUANTIZE_H

#include <stddef.h>
#include <stdint.h>

/* out[i] = splade_quantize(w[i], max), bit for bit, for n weights. */
void splade_quantize_many(const float *w, size_t n, float max, uint8_t *out);

#endif
