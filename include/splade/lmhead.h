/* The SPLADE LM head: out[b,v] = log1p(relu(max over s < len[b] of (H[b,s]·W[v] + bias[v]))).
 * max-before-activation equals SPLADE's max of log1p(relu(.)) because both are monotone.
 * CPU reference: src/lmhead_fused/lmhead_cpu.c. GPU: .cu files in src/lmhead_fused/. */
#ifndef SPLADE_LMHEAD_H
#define SPLADE_LMHEAD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { SPLADE_LMHEAD_FUSED = 0, SPLADE_LMHEAD_NAIVE = 1 } splade_lmhead_kind;

/* CPU, fp32. H rows of sequence b are H[seq_start[b] .. seq_start[b]+seq_len[b]) of
 * a [rows, D] matrix (padded batches: seq_start[b] = b*S). W [V,D], bias [V].
 * out [B,V]. Works in vocabulary tiles: never a [seq, V] buffer. threads <= 0: OpenBLAS default. */
int splade_lmhead_cpu(const float *H, const int32_t *seq_start, const int32_t *seq_len, int32_t B,
                      int32_t D, const float *W, const float *bias, int32_t V, float *out, int threads);

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
} splade_lmhead_args;

size_t splade_lmhead_workspace_bytes(splade_lmhead_kind kind, const splade_lmhead_args *a);
/* cublas_handle: a cublasHandle_t (used by the naive head; may be NULL for fused). */
int splade_lmhead_gpu(splade_lmhead_kind kind, const splade_lmhead_args *a, void *workspace,
                      size_t workspace_bytes, void *cublas_handle, void *stream);

#ifdef __cplusplus
}
#endif
#endif
