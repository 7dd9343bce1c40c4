/* Phase timers of the encode/build pipeline (issue #13 item 4): where a `build` or an `encode`
 * spends its wall time, start-up included. Off unless SPLADE_TIMINGS=1 (src/common/settings.c):
 * then each phase's seconds accumulate here (thread safe) and splade_phase_report() hands one line
 * to the log callback; the library never prints. Internal; splade_phase_add is exported for
 * libsplade-cuda.so (src/gpu/host_exports.list), whose start-up and per-batch phases it times. */
#ifndef SPLADE_COMMON_PHASE_H
#define SPLADE_COMMON_PHASE_H

#include "splade.h" /* SPLADE_API */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    SPLADE_PH_MODEL_LOAD,   /* safetensors mapped, tensors checked/converted, vocabulary */
    SPLADE_PH_GPU_OPEN,     /* libsplade-cuda.so + CUDA libraries loaded, driver probed */
    SPLADE_PH_GPU_CONTEXT,  /* CUDA context (first runtime call on the device) */
    SPLADE_PH_GPU_HANDLES,  /* stream, cuBLAS/cuBLASLt handles, attention set-up, workspace */
    SPLADE_PH_GPU_WEIGHTS,  /* weights converted and uploaded */
    SPLADE_PH_READ,         /* corpus read and parsed, documents added to the builder */
    SPLADE_PH_TOKENIZE,     /* texts -> ids (wall time of the tokenizing call) */
    SPLADE_PH_GPU_H2D,      /* batch checked, packed metadata built and copied in */
    SPLADE_PH_GPU_LAUNCH,   /* kernels and GEMMs enqueued (host side of the forward) */
    SPLADE_PH_GPU_WAIT,     /* waiting for the GPU: kernels, compaction, pairs copied out */
    SPLADE_PH_COLLECT,      /* pairs -> vectors (top-k, checks) on the host */
    SPLADE_PH_SET_VECTOR,   /* vectors handed to the builder */
    SPLADE_PH_OUTPUT,       /* encode's writer: vectors formatted and written */
    SPLADE_PH_GPU_BLAS_WARM,/* warm-up: cuBLASLt's first heuristic query, beside the weights' upload */
    SPLADE_PH_GPU_PLAN,     /* GEMM plans made: cuBLASLt heuristics and tuning (part of gpu_launch) */
    SPLADE_PH_ENCODER_FREE, /* the encoder freed (GPU: buffers, handles, stream) */
    SPLADE_PH_N
} splade_phase;

/* Seconds on a monotonic clock. */
double splade_phase_now(void);

/* Whether SPLADE_TIMINGS=1 asked for the timers. */
int splade_phase_on(void);

/* Adds `seconds` to phase ph (no-op when off). */
SPLADE_API void splade_phase_add(int ph, double seconds);

/* Adds the time since t0 (splade_phase_now) to ph; returns now. */
double splade_phase_since(int ph, double t0);

/* One INFO log line with every non-zero phase ("timings (what): ..."), then clears them; what NULL:
 * cleared only. */
void splade_phase_report(const char *what);

#ifdef __cplusplus
}
#endif
#endif
