/* GPU compaction of the SPLADE [B, V] output: only the nonzeros cross to the host
 * (gpu_sparse.cuh gives the steps; src/encoder/gpu_encoder.h splade_gpu_encoder_forward_sparse the
 * contract). The kept set is decided by the same float comparison as splade_sparse_from_dense
 * (w > threshold && w > 0), and weights are copied, never recomputed: the pairs are bit-identical
 * to what the dense copy + splade_sparse_from_dense give.
 *
 * Ordered compaction in sparse_write: a block of 8 warps walks its row in tiles of 1,024 terms,
 * 4 sub-tiles of 256 (term t0 + k*256 + warp*32 + lane). Each warp ballots its keep flags per
 * sub-tile; the 32 popcounts, indexed [k][warp], are in term order, so one warp's exclusive scan
 * of them gives every (sub-tile, warp) its start and the tile's total; a lane writes at
 * base + start[k][warp] + popc(ballot & lanes below it). Loads are coalesced (a warp reads 32
 * consecutive floats per sub-tile, four sub-tiles in flight), stores land in term order. */
#include <cuda_runtime.h>

#include <climits>
#include <cstdlib>
#include <cstring>

#include "common/fail.h"
#include "encoder/gpu_encoder_internal.h"
#include "encoder/gpu_sparse.cuh"
#include "gpu/cuda_check.h"
#include "splade.h"

namespace splade_gpu {

namespace {

constexpr int kSpThreads = 256;                 // 8 warps a block
constexpr int kSpWarps = kSpThreads / 32;
constexpr int kSpSub = 32 / kSpWarps;           // sub-tiles a tile: kSpSub * kSpWarps = 32 counts, one warp scans them
constexpr int kSpTile = kSpThreads * kSpSub;    // 1,024 terms
constexpr int kScanThreads = 1024;              // sparse_scan: 32 warps, one block
static_assert(kSpSub * kSpWarps == 32, "one warp scans the per-(sub-tile, warp) counts");

__device__ __forceinline__ bool keep(float w, float threshold)
{
    return w > threshold && w > 0.0f;  // splade_sparse_from_dense's test, verbatim
}

__device__ __forceinline__ int warp_incl_scan(int x)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o)
            x += y;
    }
    return x;
}

/* counts[b] = number of kept entries of row b. Grid: B blocks of kSpThreads. */
__global__ void __launch_bounds__(kSpThreads) sparse_count(const float *__restrict__ dense, int V, float threshold,
                                                           int32_t *__restrict__ counts)
{
    __shared__ int part[kSpWarps];
    const float *row = dense + (size_t)blockIdx.x * (size_t)V;
    int c = 0;
#pragma unroll 4
    for (int i = threadIdx.x; i < V; i += kSpThreads)
        c += keep(row[i], threshold) ? 1 : 0;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        c += __shfl_down_sync(0xffffffffu, c, o);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = c;
    __syncthreads();
    if (threadIdx.x == 0) {
        int t = 0;
#pragma unroll
        for (int w = 0; w < kSpWarps; w++)
            t += part[w];
        counts[blockIdx.x] = t;
    }
}

/* offs[b] = sum of counts[0 .. b), b = 0 .. B (offs[B]: the total). One block of kScanThreads,
 * chunks of kScanThreads counts with a running carry. The host guarantees total <= INT32_MAX. */
__global__ void __launch_bounds__(kScanThreads) sparse_scan(const int32_t *__restrict__ counts, int B,
                                                            int32_t *__restrict__ offs)
{
    __shared__ int warp_off[32];
    __shared__ int chunk_total;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int carry = 0;
    for (int base = 0; base < B; base += kScanThreads) {
        const int i = base + threadIdx.x;
        const int x = i < B ? counts[i] : 0;
        const int incl = warp_incl_scan(x);
        if (lane == 31)
            warp_off[warp] = incl;  // the warp's sum
        __syncthreads();
        if (warp == 0) {
            const int s = warp_off[lane];
            const int si = warp_incl_scan(s);
            warp_off[lane] = si - s;  // exclusive: what the warps before this one hold
            if (lane == 31)
                chunk_total = si;
        }
        __syncthreads();
        if (i < B)
            offs[i] = carry + warp_off[warp] + incl - x;
        carry += chunk_total;
        __syncthreads();  // warp_off and chunk_total are rewritten by the next chunk
    }
    if (threadIdx.x == 0)
        offs[B] = carry;
}

/* Row b's kept (term, weight) pairs, in term order, at terms/weights[offs[b] ..). Grid: B blocks
 * of kSpThreads. */
__global__ void __launch_bounds__(kSpThreads) sparse_write(const float *__restrict__ dense, int V, float threshold,
                                                           const int32_t *__restrict__ offs,
                                                           int32_t *__restrict__ terms, float *__restrict__ weights)
{
    __shared__ int start[32];  // [k * kSpWarps + warp]: counts, then their exclusive scan
    __shared__ int tile_total;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned below = (1u << lane) - 1u;  // the lanes before this one
    const int b = blockIdx.x;
    int base = offs[b];
    if (offs[b + 1] == base)  // nothing kept in this row (uniform over the block)
        return;
    const float *row = dense + (size_t)b * (size_t)V;
    for (int t0 = 0; t0 < V; t0 += kSpTile) {
        float w[kSpSub];
        unsigned m[kSpSub];
#pragma unroll
        for (int k = 0; k < kSpSub; k++) {
            const int i = t0 + k * kSpThreads + (int)threadIdx.x;
            w[k] = i < V ? row[i] : 0.0f;
        }
#pragma unroll
        for (int k = 0; k < kSpSub; k++) {
            const int i = t0 + k * kSpThreads + (int)threadIdx.x;
            m[k] = __ballot_sync(0xffffffffu, i < V && keep(w[k], threshold));
            if (lane == 0)
                start[k * kSpWarps + warp] = __popc(m[k]);
        }
        __syncthreads();
        if (warp == 0) {
            const int c = start[lane];
            const int incl = warp_incl_scan(c);
            start[lane] = incl - c;
            if (lane == 31)
                tile_total = incl;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kSpSub; k++)
            if ((m[k] >> lane) & 1u) {
                const int o = base + start[k * kSpWarps + warp] + __popc(m[k] & below);
                terms[o] = t0 + k * kSpThreads + (int)threadIdx.x;
                weights[o] = w[k];
            }
        base += tile_total;
        __syncthreads();  // start and tile_total are rewritten by the next tile
    }
}

size_t grow(size_t need) { return (need + need / 4 + 4095) / 4096 * 4096; }

int ensure_rows(SparseWs &ws, size_t B)
{
    if (B <= ws.cap_B)
        return SPLADE_OK;
    cudaFree(ws.counts_d);
    if (ws.offs_h)
        cudaFreeHost(ws.offs_h);
    ws.counts_d = nullptr;
    ws.offs_h = nullptr;
    ws.cap_B = 0;
    const size_t cap = (B + B / 4 + 255) / 256 * 256;
    CUDA_TRY(cudaMalloc(&ws.counts_d, (2 * cap + 1) * sizeof(int32_t)));
    cudaError_t e = cudaMallocHost(&ws.offs_h, (cap + 1) * sizeof(int32_t));
    if (e != cudaSuccess) {
        cudaFree(ws.counts_d);
        ws.counts_d = nullptr;
        ws.offs_h = nullptr;
        CUDA_TRY(e);
    }
    ws.cap_B = cap;
    return SPLADE_OK;
}

int ensure_pairs(SparseWs &ws, size_t n)
{
    if (n > ws.cap_d) {
        cudaFree(ws.terms_d);
        cudaFree(ws.weights_d);
        ws.terms_d = nullptr;
        ws.weights_d = nullptr;
        ws.cap_d = 0;
        const size_t cap = grow(n);
        CUDA_TRY(cudaMalloc(&ws.terms_d, cap * sizeof(int32_t)));
        CUDA_TRY(cudaMalloc(&ws.weights_d, cap * sizeof(float)));  // on failure terms_d is freed next time
        ws.cap_d = cap;
    }
    if (n > ws.cap_h) {
        if (ws.terms_h)
            cudaFreeHost(ws.terms_h);
        if (ws.weights_h)
            cudaFreeHost(ws.weights_h);
        ws.terms_h = nullptr;
        ws.weights_h = nullptr;
        ws.cap_h = 0;
        const size_t cap = grow(n);
        CUDA_TRY(cudaMallocHost(&ws.terms_h, cap * sizeof(int32_t)));
        CUDA_TRY(cudaMallocHost(&ws.weights_h, cap * sizeof(float)));
        ws.cap_h = cap;
    }
    return SPLADE_OK;
}

}  // namespace

void sparse_empty(SparseWs &ws, splade_gpu_sparse *out)
{
    ws.empty_off = 0;
    out->B = 0;
    out->nnz = 0;
    out->offsets = &ws.empty_off;
    out->terms = nullptr;
    out->weights = nullptr;
}

int sparse_compact(SparseWs &ws, const float *dense_d, int32_t B, int32_t V, float threshold, cudaStream_t s,
                   splade_gpu_sparse *out)
{
    if (!dense_d || !out || B < 1 || V < 1 || (int64_t)B * V > INT32_MAX)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "gpu sparse compaction: B=%d V=%d (B >= 1, V >= 1, B*V <= 2^31-1)",
                           (int)B, (int)V);
    int rc = ensure_rows(ws, (size_t)B);
    if (rc != SPLADE_OK)
        return rc;
    int32_t *counts = ws.counts_d, *offs = ws.counts_d + ws.cap_B;
    sparse_count<<<B, kSpThreads, 0, s>>>(dense_d, V, threshold, counts);
    CUDA_TRY_LAUNCH();
    sparse_scan<<<1, kScanThreads, 0, s>>>(counts, B, offs);
    CUDA_TRY_LAUNCH();
    CUDA_TRY(cudaMemcpyAsync(ws.offs_h, offs, ((size_t)B + 1) * sizeof(int32_t), cudaMemcpyDeviceToHost, s));
    CUDA_TRY(cudaStreamSynchronize(s));
    const int32_t nnz = ws.offs_h[B];
    if (nnz > 0) {
        if ((rc = ensure_pairs(ws, (size_t)nnz)) != SPLADE_OK)
            return rc;
        sparse_write<<<B, kSpThreads, 0, s>>>(dense_d, V, threshold, offs, ws.terms_d, ws.weights_d);
        CUDA_TRY_LAUNCH();
        CUDA_TRY(cudaMemcpyAsync(ws.terms_h, ws.terms_d, (size_t)nnz * sizeof(int32_t), cudaMemcpyDeviceToHost, s));
        CUDA_TRY(cudaMemcpyAsync(ws.weights_h, ws.weights_d, (size_t)nnz * sizeof(float), cudaMemcpyDeviceToHost, s));
        CUDA_TRY(cudaStreamSynchronize(s));
    }
    out->B = B;
    out->nnz = nnz;
    out->offsets = ws.offs_h;
    out->terms = nnz > 0 ? ws.terms_h : nullptr;
    out->weights = nnz > 0 ? ws.weights_h : nullptr;
    return SPLADE_OK;
}

size_t sparse_device_bytes(const SparseWs &ws)
{
    return (ws.counts_d ? (2 * ws.cap_B + 1) * sizeof(int32_t) : 0) +
           ws.cap_d * (sizeof(int32_t) + sizeof(float));
}

void sparse_free(SparseWs &ws)
{
    cudaFree(ws.counts_d);
    cudaFree(ws.terms_d);
    cudaFree(ws.weights_d);
    if (ws.offs_h)
        cudaFreeHost(ws.offs_h);
    if (ws.terms_h)
        cudaFreeHost(ws.terms_h);
    if (ws.weights_h)
        cudaFreeHost(ws.weights_h);
    (void)cudaGetLastError();
    ws = SparseWs();
}

}  // namespace splade_gpu

/* ---- test seam (gpu_encoder_internal.h) ---------------------------------------------------- */

extern "C" int splade_gpu_sparse_compact_host(const float *dense, int32_t B, int32_t V, float threshold,
                                              int32_t **offsets, int32_t **terms, float **weights)
{
    if (!dense || !offsets || !terms || !weights || B < 0 || V < 1)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_gpu_sparse_compact_host: NULL argument, B=%d or V=%d",
                           (int)B, (int)V);
    *offsets = nullptr;
    *terms = nullptr;
    *weights = nullptr;
    if ((int64_t)B * V > INT32_MAX)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_gpu_sparse_compact_host: B*V = %lld over 2^31-1",
                           (long long)B * V);
    splade_gpu::SparseWs ws;
    cudaStream_t s = nullptr;
    float *d = nullptr;
    splade_gpu_sparse sp;
    int rc = [&]() -> int {
        if (B == 0) {
            splade_gpu::sparse_empty(ws, &sp);
            return SPLADE_OK;
        }
        CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        CUDA_TRY(cudaMalloc(&d, (size_t)B * V * sizeof(float)));
        CUDA_TRY(cudaMemcpyAsync(d, dense, (size_t)B * V * sizeof(float), cudaMemcpyHostToDevice, s));
        return splade_gpu::sparse_compact(ws, d, B, V, threshold, s, &sp);
    }();
    if (rc == SPLADE_OK) {
        const size_t n = (size_t)sp.nnz;
        *offsets = static_cast<int32_t *>(malloc(((size_t)B + 1) * sizeof(int32_t)));
        *terms = static_cast<int32_t *>(malloc((n ? n : 1) * sizeof(int32_t)));
        *weights = static_cast<float *>(malloc((n ? n : 1) * sizeof(float)));
        if (!*offsets || !*terms || !*weights) {
            free(*offsets), free(*terms), free(*weights);
            *offsets = *terms = nullptr;
            *weights = nullptr;
            rc = splade_fail(SPLADE_ERR_NOMEM, "splade_gpu_sparse_compact_host: %zu pairs", n);
        } else {
            memcpy(*offsets, sp.offsets, ((size_t)B + 1) * sizeof(int32_t));
            if (n) {
                memcpy(*terms, sp.terms, n * sizeof(int32_t));
                memcpy(*weights, sp.weights, n * sizeof(float));
            }
        }
    }
    if (s)
        cudaStreamSynchronize(s);
    cudaFree(d);
    splade_gpu::sparse_free(ws);
    if (s)
        cudaStreamDestroy(s);
    (void)cudaGetLastError();
    return rc;
}
