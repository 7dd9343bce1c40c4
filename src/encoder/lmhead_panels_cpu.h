/* The reduced-precision CPU SPLADE heads (bf16: forward_cpu_bf16.c, int8: forward_cpu_int8.c) share
 * this loop: logits of a vocabulary panel for a block of rows at a time, folded into each sequence's
 * running maximum while they are in L1/L2; log1p(relu(.)) is monotonic, so it is applied once to the
 * maximum instead of to every logit. Panels are split over a team of threads. Private to src/encoder/. */
#ifndef SPLADE_LMHEAD_PANELS_CPU_H
#define SPLADE_LMHEAD_PANELS_CPU_H

#include <stdint.h>

/* dst (row stride ldd) = logits (bias included) of rows [r0, r0 + rows) of X against vocabulary panel p
 * (SPLADE_DNNL_PANEL columns, the last narrower) of the head `lin`. */
typedef int (*splade_head_unit_fn)(const void *lin, const void *X, int32_t r0, int32_t rows, int32_t p, float *dst,
                                   int32_t ldd);

/* out[b][v] = log1p(relu(max over sequence b's rows of the logits)), V terms in n_panels panels;
 * sequence b is rows [offsets[b], offsets[b+1]). */
int splade_lmhead_panels(splade_head_unit_fn unit, const void *lin, const void *X, int32_t V, int32_t n_panels,
                         const int32_t *offsets, int32_t B, float *out, int nthreads);

/* The same with out[b][v] = the maximum itself (bias included, before the activation): the fp32
 * head's screen (lmhead_screen_cpu.h). */
int splade_lmhead_panels_max(splade_head_unit_fn unit, const void *lin, const void *X, int32_t V, int32_t n_panels,
                             const int32_t *offsets, int32_t B, float *out, int nthreads);

#endif
