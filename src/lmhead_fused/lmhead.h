/* The SPLADE LM head: out[b,v] = log1p(relu(max over s < len[b] of (H[b,s]·W[v] + bias[v]))),
 * with a second log1p when args.activation says so (the OpenSearch v3 models).
 * max-before-activation equals SPLADE's max of log1p(relu(.)) because both are monotone.
 * CPU reference: src/lmhead_fused/lmhead_cpu.c. GPU: .cu files in src/lmhead_fused/.
 * Internal (not installed): the encoder's seam to its head, and what tests and bench-lmhead drive
 * directly. The GPU functions are entry points of libsplade-cuda.so (src/gpu/gpu_entry.h). */
#ifndef SPLADE_LMHEAD_FUSED_LMHEAD_H
#define SPLADE_LMHEAD_FUSED_LMHEAD_H

#include "gpu/gpu_entry.h"
#include "splade.h"
#include "splade/encoder.h" /* splade_lmhead_kind */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CPU, fp32. H rows of sequence b are H[seq_start[b] .. seq_start[b]+seq_len[b]) of
 * a [rows, D] matrix (padded batches: seq_start[b] = b*S). W [V,D], bias [V].
 * out [B,V]. Works in vocabulary tiles: never a [seq, V] buffer. threads <= 0: OpenBLAS default. */
int splade_lmhead_cpu(const float *H, const int32_t *seq_start, const int32_t *seq_len, int32_t B,
                                 int32_t D, const float *W, const float *bias, int32_t V, float *out, int threads);

/* Some columns of splade_lmhead_cpu's output for one sequence, bit for bit: out[i] = its value at
 * vocabulary column cols[i] for the sequence of H rows [0, len), i < n. scratch: at least
 * splade_lmhead_cpu_columns_scratch(D, n) floats, 64-byte aligned. The same per-element arithmetic
 * as splade_lmhead_cpu (one FMA chain over D per logit, exact max), so a caller that knows which
 * columns can be nonzero (the encoder's bf16 screen) computes only those and changes no bit.
 * SPLADE_ERR_UNSUPPORTED where splade_lmhead_cpu would not run its AVX-512 kernel. */
int splade_lmhead_cpu_columns(const float *H, int32_t len, int32_t D, const float *W, const float *bias,
                              const int32_t *cols, int32_t n, float *out, float *scratch);
size_t splade_lmhead_cpu_columns_scratch(int32_t D, int32_t n);

/* GPU heads (device pointers; `stream` is a cudaStream_t). H bf16 [rows, D]; W bf16 [V, D]
 * (row stride D; the kernel handles V not a multiple of its tile); bias fp32 [V];
 * seq_start/seq_len int32 [B] on the device; max_len >= every seq_len; out fp32 [B,V].
 * `workspace` of splade_lmhead_workspace_bytes() bytes (may be 0 -> NULL is fine). */
typedef struct {
    const void *H;
    const int32_t *seq_start;
    const int32_t *seq_len;
    int32_t B, max_len, D, V;
    const void *W;
    const float *bias;
    float *out;
    /* Rows of the H allocation (>= every seq_start + seq_len). 0 = unknown: then the TMA kernel
     * (whose tensor map must know H's extent) is not used and the fused head falls back to v5. */
    int32_t H_rows;
    /* splade_activation (include/splade/model.h): 0 log1p(relu) (SPLADE's); 1 a second log1p on
     * top (sentence-transformers' "log1p_relu"), applied in the same place, after the max. */
    int32_t activation;
} splade_lmhead_args;

SPLADE_GPU_ENTRY size_t splade_lmhead_workspace_bytes(splade_lmhead_kind kind, const splade_lmhead_args *a);
/* cublas_handle: a cublasHandle_t (used by the naive head; may be NULL for fused). */
SPLADE_GPU_ENTRY int splade_lmhead_gpu(splade_lmhead_kind kind, const splade_lmhead_args *a, void *workspace,
                                 size_t workspace_bytes, void *cublas_handle, void *stream);

/* ---- Additions (fused-kernel selection and introspection; benchmarks and tests). ---- */

/* Which fused kernel runs. AUTO: wgmma (sm_90a code, Hopper) when the device and the build
 * have it — the TMA-fed kernel (v7) when H_rows is set and D >= 64, else the cp.async one (v5) —
 * and mma.sync (sm_80+) otherwise. Forcing WGMMA where it is unavailable fails with
 * SPLADE_ERR_UNSUPPORTED. */
typedef enum { SPLADE_FUSED_AUTO = 0, SPLADE_FUSED_MMA_SYNC = 1, SPLADE_FUSED_WGMMA = 2 } splade_fused_path;

/* What a fused call launches (filled by splade_lmhead_fused_plan). */
typedef struct {
    splade_fused_path path; /* the kernel actually chosen (never AUTO) */
    int32_t bm, bn;         /* vocabulary rows x hidden rows per block tile */
    int32_t nsplit;         /* slices per sequence (> 1: output zeroed, then atomicMax) */
    int32_t units, grid;    /* work units, persistent blocks */
    int32_t launches;       /* kernel launches + memsets per call */
    int32_t tile;           /* internal tile id (-1: mma.sync; 4, 5: the TMA kernel's 128x256, 256x128) */
    int32_t group;          /* sequences per raster group */
} splade_lmhead_plan;

SPLADE_GPU_ENTRY int splade_lmhead_fused_plan(splade_fused_path path, const splade_lmhead_args *a, splade_lmhead_plan *plan);

/* The fused head with an explicit kernel choice; needs no workspace. */
SPLADE_GPU_ENTRY int splade_lmhead_gpu_fused(splade_fused_path path, const splade_lmhead_args *a, void *stream);

/* The fp32 head (src/lmhead_fused/lmhead_fp32.cu): same arguments, but H is fp32 [rows, D] and
 * W fp32 [V, D] (both 16-byte aligned, D % 4 == 0); bias fp32 [V] (required). A fused SIMT kernel
 * with fp32 FMAs (no tensor cores, no TF32): the max over positions stays in registers, bias
 * after the max, then relu and log1p, as splade_lmhead_cpu; no [S, V] buffer, no workspace.
 * Sequences with seq_len <= 0 give zeros. */
SPLADE_GPU_ENTRY int splade_lmhead_gpu_fp32(const splade_lmhead_args *a, void *stream);

#ifdef __cplusplus
}
#endif
#endif
