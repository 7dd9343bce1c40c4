/* The fp32 CPU forward's packed weights for few rows (gemm_packed_cpu.h): every Linear of the
 * layers and the MLM transform copied into 64-column panels, for queries encoded one at a time.
 * The copy costs the layers' fp32 bytes again (340 MB for bert-base) and 0.1-0.7 s in all, so
 * backend_cpu.c makes it only once small forwards have paid for it, and one layer per forward (a
 * server's queries then see ~1/13 of that each, not one query the whole of it). A layer is used
 * once packed; its results are the same bits either way. Private to src/encoder/. */
#ifndef SPLADE_FORWARD_CPU_PACKED_H
#define SPLADE_FORWARD_CPU_PACKED_H

#include <stdint.h>

#include "encoder/gemm_packed_cpu.h"
#include "splade/model.h"

enum { SPLADE_PACKED_Q, SPLADE_PACKED_K, SPLADE_PACKED_V, SPLADE_PACKED_O, SPLADE_PACKED_FFN_IN,
       SPLADE_PACKED_FFN_OUT, SPLADE_PACKED_PER_LAYER };

typedef struct splade_cpu_packed {
    int32_t n_layers;
    splade_gemm_packed *layers; /* [n_layers][SPLADE_PACKED_PER_LAYER]: panels inside `region` */
    splade_gemm_packed mlm_dense;
    float *region;              /* owns every matrix's panels (common/big_alloc.h) */
    int32_t ready_layers;       /* layers [0, ready_layers) are packed */
    int mlm_ready;              /* the MLM transform is packed */
} splade_cpu_packed;

/* The copy's memory, nothing packed yet. SPLADE_ERR_NOMEM when it does not fit. */
int splade_cpu_packed_create(const splade_model *m, splade_cpu_packed **out);
/* Packs the next layer (then the MLM transform) on a team of nthreads; 1 while more is left. */
int splade_cpu_packed_step(splade_cpu_packed *p, const splade_model *m, int nthreads);
int splade_cpu_packed_done(const splade_cpu_packed *p);
void splade_cpu_packed_free(splade_cpu_packed *p);

/* Bytes the copy takes for m. */
size_t splade_cpu_packed_bytes(const splade_model *m);

#endif
