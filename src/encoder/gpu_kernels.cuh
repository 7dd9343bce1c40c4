/* Kernels of the GPU encoder (private to src/encoder/gpu_*.cu).
 * Activations are bf16 (or, in SPLADE_PRECISION_FP32, float: the overloads taking float*)
 * [tokens, width] row-major with tokens of all sequences packed back to back; every kernel
 * computes in fp32. Each launcher returns a splade_status (launch errors through CUDA_TRY_LAUNCH). */
#ifndef SPLADE_GPU_KERNELS_CUH
#define SPLADE_GPU_KERNELS_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace splade_gpu {

typedef __nv_bfloat16 bf16;

/* Widest hidden size the row kernels (embedding + LayerNorm) handle: one warp per row,
 * 8 bf16 per 16-byte access, up to 8 accesses per lane. */
constexpr int kMaxHidden = 2048;
/* Query / key rows per attention tile. */
constexpr int kAttnTile = 64;

/* out[t] = LayerNorm(word[ids[t]] + pos[pos_ids[t]] + type0) with gain g, bias b.
 * word bf16 [V,H]; pos fp32 [P,H]; type0 fp32 [H] (token type 0). H % 8 == 0, H <= kMaxHidden. */
int embed_ln(const int32_t *ids, const int32_t *pos_ids, int T, int H, const bf16 *word,
             const float *pos, const float *type0, const float *g, const float *b, float eps,
             bf16 *out, cudaStream_t s);
int embed_ln(const int32_t *ids, const int32_t *pos_ids, int T, int H, const float *word,
             const float *pos, const float *type0, const float *g, const float *b, float eps,
             float *out, cudaStream_t s);

/* out[t] = LayerNorm(f(x[t]) + res[t]) where f is the identity or exact-erf GELU (gelu != 0),
 * res may be NULL. out may alias x or res (each row is read whole before it is written). */
int add_ln(const bf16 *x, const bf16 *res, int gelu, int T, int H, const float *g, const float *b,
           float eps, bf16 *out, cudaStream_t s);
int add_ln(const float *x, const float *res, int gelu, int T, int H, const float *g, const float *b,
           float eps, float *out, cudaStream_t s);

/* In place: x = gelu_erf(x) over n elements (n % 8 == 0). */
int gelu_erf_inplace(bf16 *x, size_t n, cudaStream_t s);
int gelu_erf_inplace(float *x, size_t n, cudaStream_t s);

/* Attention tile descriptor: sequence tokens [start, start+len), query rows [q0, q0 + q rows). */
struct AttnTile {
    int32_t start, len, q0, pad_;
};

/* Which head sizes attention() supports. */
bool attention_supports(int head_dim);
/* One-time per-process setup (raises the dynamic shared-memory limit where needed). */
int attention_init(int head_dim);

/* Query rows per tile (the q0 step of the tile list): 128 (8 warps, a ring of K/V stages; the
 * earlier 64-row kernel, v1, lives in tools/kernel_lab/attention.cu). */
int attention_q_rows();

/* qkv bf16 [T, 3*H]: columns [Q | K | V], head h at h*head_dim within each third.
 * ctx bf16 [T, H]. tiles: device array of n_tiles descriptors. Softmax over the keys of
 * the query's own sequence only (no padding); flash-style: no score matrix in memory. */
int attention(const bf16 *qkv, bf16 *ctx, const AttnTile *tiles, int n_tiles, int heads,
              int head_dim, cudaStream_t s);

/* Hopper (sm_90a) attention for head size 64 (gpu_attention_wgmma.cu): the same layout, tile list
 * (attention_q_rows() query rows a tile) and results as attention() up to rounding. *usable is set
 * when this device and binary can run it (compute capability 9.x, sm_90a code built); then it also
 * raises the kernel's shared-memory limit for the current device. */
int attention_wgmma_init(int head_dim, bool *usable);
int attention_wgmma(const bf16 *qkv, bf16 *ctx, const AttnTile *tiles, int n_tiles, int heads, cudaStream_t s);

/* fp32 attention (gpu_attention_f32.cu, SPLADE_PRECISION_FP32): the same layout and tile list
 * with fp32 qkv [T, 3*H] and ctx [T, H]; SIMT FMAs, online softmax with expf, no score matrix
 * in memory. Query rows per tile (the q0 step of its tile list): */
int attention_f32_q_rows();
/* Head sizes 32, 64, 128; raises the dynamic shared-memory limit (once per process is enough). */
int attention_f32_init(int head_dim);
int attention_f32(const float *qkv, float *ctx, const AttnTile *tiles, int n_tiles, int heads,
                  int head_dim, cudaStream_t s);

}  // namespace splade_gpu

#endif
