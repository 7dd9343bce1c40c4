/* The BERT forward pass on the GPU, feeding the SPLADE LM head (src/encoder/gpu_encoder.h).
 *
 * Weights are uploaded once in bf16 (LayerNorm parameters, position/type embeddings and the
 * decoder bias stay fp32). Tokens of all sequences are packed back to back ([T, hidden], no
 * padding); per layer:
 *   QKV   = X·Wqkvᵀ + b           cuBLASLt, bias epilogue (Q, K, V weights fused: one GEMM)
 *   C     = attention(QKV)         flash-style tensor-core kernel, per sequence (gpu_attention_wgmma.cu
 *                                  on Hopper at head size 64, gpu_attention.cu otherwise)
 *   X     = LN(X + C·Woᵀ + b)      cuBLASLt bias epilogue, then one add+LayerNorm kernel
 *   U     = gelu(X·Wiᵀ + b)        cuBLASLt bias+GELU epilogue (tanh form; see below)
 *   X     = LN(X + U·Wo2ᵀ + b)
 * then the MLM transform H = LN(gelu(X·Wdᵀ + b)) (GELU fused into the LayerNorm kernel) and
 * splade_lmhead_gpu() on the packed H.
 *
 * GELU: BERT uses the exact erf form; cuBLASLt's GELU epilogues implement the tanh approximation
 * (|difference| <= 4.7e-4, below bf16's resolution of the stored activation). By default the FFN
 * GEMM uses the fused CUBLASLT_EPILOGUE_GELU_BIAS; SPLADE_GPU_GELU=erf at create() selects the
 * bias epilogue plus a separate in-place exact-erf pass (~1.5 ms more at B=128, S=256 on an H200).
 * docs/GPU_ENCODER.md gives the cost and the accuracy of each. The CPU path stays exact erf.
 *
 * Attention: 128 query rows per block and a ring of K/V stages; on Hopper (head size 64) through
 * wgmma, elsewhere (and with SPLADE_GPU_ATTN=mma) through mma.sync. Every version, the losers
 * included, is in the kernel lab (tools/kernel_lab/attention.cu).
 *
 * SPLADE_GPU_FFN_CHUNK=N runs the FFN in slices of N tokens: the [slice, intermediate]
 * activation then no longer scales with the batch (less memory), at 1-3% of speed on an H200.
 *
 * GEMMs (gpu_gemm.cu): cuBLASLt, fp32 accumulation, algorithms tuned once per shape. Activations
 * bf16, all normalisation and softmax math fp32. Workspaces are sized from the largest batch seen and
 * grow on demand; an allocation failure returns SPLADE_ERR_GPU_OOM and leaves the encoder usable (the
 * caller retries with a smaller batch). Weights: gpu_weights.cu.
 *
 * SPLADE_PRECISION_FP32 (splade_gpu_encoder_create_ex): every weight and activation fp32, GEMMs
 * with fp32 operands and CUBLAS_COMPUTE_32F_PEDANTIC (falls back to CUBLAS_COMPUTE_32F, which
 * cuBLASLt never runs in TF32, when the pedantic type has no algorithm), the row kernels'
 * float instantiations, exact-erf GELU always, the SIMT fp32 attention (gpu_attention_f32.cu)
 * and the fp32 LM head (splade_lmhead_gpu_fp32): the vectors of the fp32 CPU forward. */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <time.h>

#include <climits>
#include <cstring>
#include <new>
#include <type_traits>
#include <vector>

#include "common/fail.h"
#include "common/phase.h"
#include "common/settings.h"
#include "encoder/gpu_encoder.h"
#include "encoder/gpu_encoder_internal.h"
#include "encoder/gpu_encoder_state.cuh"
#include "encoder/gpu_kernels.cuh"
#include "encoder/gpu_sparse.cuh"
#include "encoder/model_internal.h"
#include "gpu/cuda_check.h"
#include "lmhead_fused/lmhead.h"
#include "splade.h"

using splade_gpu::AttnTile;
using splade_gpu::bf16;
using namespace splade_gpu_enc;

namespace splade_gpu_enc {

/* ---- profiling ---------------------------------------------------------------------------- */

int prof_begin(splade_gpu_encoder *g, int cat)
{
    if (!g->prof_on || g->ev_n + 2 > kProfEvents)
        return SPLADE_OK;
    g->ev_cat[g->ev_n / 2] = cat;
    CUDA_TRY(cudaEventRecord(g->ev[g->ev_n], g->stream));
    return SPLADE_OK;
}

int prof_end(splade_gpu_encoder *g)
{
    if (!g->prof_on || g->ev_n + 2 > kProfEvents)
        return SPLADE_OK;
    CUDA_TRY(cudaEventRecord(g->ev[g->ev_n + 1], g->stream));
    g->ev_n += 2;
    return SPLADE_OK;
}

int prof_collect(splade_gpu_encoder *g)
{
    if (!g->prof_on)
        return SPLADE_OK;
    for (int i = 0; i < SPLADE_GPU_PROF_N; i++)
        g->prof_ms[i] = 0;
    for (int i = 0; i < g->ev_n; i += 2) {
        float ms = 0;
        CUDA_TRY(cudaEventElapsedTime(&ms, g->ev[i], g->ev[i + 1]));
        g->prof_ms[g->ev_cat[i / 2]] += ms;
    }
    g->ev_n = 0;
    return SPLADE_OK;
}

}  // namespace splade_gpu_enc

namespace {

/* Host wall clock for the phase timers (src/common/phase.h); splade_phase_add is a no-op unless
 * SPLADE_TIMINGS=1. */
double wall_now()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double phase(int ph, double t0)
{
    const double now = wall_now();
    splade_phase_add(ph, now - t0);
    return now;
}

/* ---- workspaces --------------------------------------------------------------------------- */

int ensure_acts(splade_gpu_encoder *g, size_t T)
{
    if (T <= g->cap_T)
        return SPLADE_OK;
    size_t cap = (T + 1023) / 1024 * 1024;
    const size_t H = g->H;
    /* big holds QKV [T, 3H], then the FFN intermediate [min(T, chunk), I] */
    auto sizes = [&](size_t c) {
        const size_t ffn_rows = g->ffn_chunk > 0 && (size_t)g->ffn_chunk < c ? (size_t)g->ffn_chunk : c;
        const size_t wide = c * 3 * H > ffn_rows * g->I ? c * 3 * H : ffn_rows * g->I;
        return 3 * align_up(c * H * g->es) + align_up(wide * g->es);
    };
    size_t bytes = sizes(cap);
    if (g->abuf) {
        CUDA_TRY(cudaStreamSynchronize(g->stream));
        cudaFree(g->abuf);
        g->abuf = nullptr;
        g->cap_T = g->abytes = 0;
    }
    cudaError_t e = cudaMalloc(&g->abuf, bytes);
    if (e != cudaSuccess && cap > T) {  // retry without the rounding headroom
        (void)cudaGetLastError();
        cap = T;
        bytes = sizes(cap);
        e = cudaMalloc(&g->abuf, bytes);
    }
    if (e != cudaSuccess) {
        g->abuf = nullptr;
        CUDA_TRY(e);
    }
    char *b = static_cast<char *>(g->abuf);
    g->X = b;
    b += align_up(cap * H * g->es);
    g->ctx = b;
    b += align_up(cap * H * g->es);
    g->tmp = b;
    b += align_up(cap * H * g->es);
    g->big = b;
    g->cap_T = cap;
    g->abytes = bytes;
    return SPLADE_OK;
}

int ensure_meta(splade_gpu_encoder *g, size_t bytes)
{
    if (bytes <= g->meta_bytes)
        return SPLADE_OK;
    bytes = align_up(bytes * 5 / 4);
    if (g->meta_d) {
        CUDA_TRY(cudaStreamSynchronize(g->stream));
        cudaFree(g->meta_d);
        cudaFreeHost(g->meta_h);
        g->meta_d = g->meta_h = nullptr;
        g->meta_bytes = 0;
    }
    CUDA_TRY(cudaMalloc(&g->meta_d, bytes));
    cudaError_t e = cudaMallocHost(&g->meta_h, bytes);
    if (e != cudaSuccess) {
        cudaFree(g->meta_d);
        g->meta_d = g->meta_h = nullptr;
        CUDA_TRY(e);
    }
    g->meta_bytes = bytes;
    return SPLADE_OK;
}

int ensure_out(splade_gpu_encoder *g, size_t n)
{
    if (n <= g->out_cap)
        return SPLADE_OK;
    if (g->out_d) {
        CUDA_TRY(cudaStreamSynchronize(g->stream));
        cudaFree(g->out_d);
        g->out_d = nullptr;
        g->out_cap = 0;
    }
    CUDA_TRY(cudaMalloc(&g->out_d, n * sizeof(float)));
    g->out_cap = n;
    return SPLADE_OK;
}

int ensure_head_ws(splade_gpu_encoder *g, size_t bytes)
{
    if (bytes <= g->head_ws_bytes)
        return SPLADE_OK;
    if (g->head_ws) {
        CUDA_TRY(cudaStreamSynchronize(g->stream));
        cudaFree(g->head_ws);
        g->head_ws = nullptr;
        g->head_ws_bytes = 0;
    }
    CUDA_TRY(cudaMalloc(&g->head_ws, bytes));
    g->head_ws_bytes = bytes;
    return SPLADE_OK;
}

/* ---- forward ------------------------------------------------------------------------------ */

struct Batch {
    int32_t B = 0, max_len = 0;
    size_t T = 0;
    int n_tiles = 0;
    const int32_t *ids_d = nullptr, *pos_d = nullptr, *start_d = nullptr, *len_d = nullptr;
    const AttnTile *tiles_d = nullptr;
};

int validate(const splade_gpu_encoder *g, const int32_t *ids, const int32_t *offsets, int32_t B)
{
    if (!g || !ids || !offsets || B < 0)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "gpu encoder forward: NULL argument or B=%d", (int)B);
    for (int32_t b = 0; b < B; b++) {
        const int64_t len = (int64_t)offsets[b + 1] - offsets[b];
        if (offsets[b] < 0 || len < 1 || len > g->P)
            return splade_fail(SPLADE_ERR_INVALID_ARG,
                               "gpu encoder forward: sequence %d has %lld tokens (1..%d allowed)", (int)b,
                               (long long)len, g->P);
    }
    const int32_t base = offsets[0];
    const size_t T = (size_t)(offsets[B] - base);
    for (size_t t = 0; t < T; t++)
        if (ids[base + t] < 0 || ids[base + t] >= g->V)
            return splade_fail(SPLADE_ERR_INVALID_ARG, "gpu encoder forward: token id %d at %zu outside [0, %d)",
                               (int)ids[base + t], t, g->V);
    return SPLADE_OK;
}

/* Uploads ids, positions, sequence starts/lengths and attention tiles in one copy. */
int upload_batch(splade_gpu_encoder *g, const int32_t *ids, const int32_t *offsets, int32_t B, Batch *bt)
{
    const int32_t base = offsets[0];
    bt->B = B;
    bt->T = (size_t)(offsets[B] - base);
    int n_tiles = 0;
    int32_t max_len = 0;
    for (int32_t b = 0; b < B; b++) {
        const int32_t len = offsets[b + 1] - offsets[b];
        n_tiles += (len + g->attn_q - 1) / g->attn_q;
        if (len > max_len)
            max_len = len;
    }
    bt->n_tiles = n_tiles;
    bt->max_len = max_len;
    const size_t o_ids = 0, o_pos = align_up(bt->T * 4), o_start = o_pos + align_up(bt->T * 4),
                 o_len = o_start + align_up((size_t)B * 4), o_tiles = o_len + align_up((size_t)B * 4),
                 total = o_tiles + (size_t)n_tiles * sizeof(AttnTile);
    TRY(ensure_meta(g, total));
    char *h = static_cast<char *>(g->meta_h);
    int32_t *hid = reinterpret_cast<int32_t *>(h + o_ids), *hpos = reinterpret_cast<int32_t *>(h + o_pos),
            *hstart = reinterpret_cast<int32_t *>(h + o_start), *hlen = reinterpret_cast<int32_t *>(h + o_len);
    AttnTile *htiles = reinterpret_cast<AttnTile *>(h + o_tiles);
    memcpy(hid, ids + base, bt->T * sizeof(int32_t));
    int k = 0;
    for (int32_t b = 0; b < B; b++) {
        const int32_t s = offsets[b] - base, len = offsets[b + 1] - offsets[b];
        hstart[b] = s;
        hlen[b] = len;
        for (int32_t i = 0; i < len; i++)
            hpos[s + i] = i;
        for (int32_t q = 0; q < len; q += g->attn_q)
            htiles[k++] = AttnTile{s, len, q, 0};
    }
    TRY(prof_begin(g, SPLADE_GPU_PROF_COPY));
    CUDA_TRY(cudaMemcpyAsync(g->meta_d, g->meta_h, total, cudaMemcpyHostToDevice, g->stream));
    TRY(prof_end(g));
    char *d = static_cast<char *>(g->meta_d);
    bt->ids_d = reinterpret_cast<const int32_t *>(d + o_ids);
    bt->pos_d = reinterpret_cast<const int32_t *>(d + o_pos);
    bt->start_d = reinterpret_cast<const int32_t *>(d + o_start);
    bt->len_d = reinterpret_cast<const int32_t *>(d + o_len);
    bt->tiles_d = reinterpret_cast<const AttnTile *>(d + o_tiles);
    return SPLADE_OK;
}

/* Everything up to the LM head; the MLM transform's output lands in g->ctx. S: the storage
 * type (bf16, or float in SPLADE_PRECISION_FP32). */
template <typename S>
int encode_hidden_t(splade_gpu_encoder *g, const Batch &bt)
{
    constexpr bool kF32 = std::is_same<S, float>::value;
    const int T = (int)bt.T, H = g->H, I = g->I;
    const float eps = g->cfg.layer_norm_eps;
    cudaStream_t s = g->stream;
    S *X = static_cast<S *>(g->X), *ctx = static_cast<S *>(g->ctx), *tmp = static_cast<S *>(g->tmp),
      *big = static_cast<S *>(g->big);
    g->small_now = gemm_small_fits(g, T, bt.B);
    TRY(prof_begin(g, SPLADE_GPU_PROF_EMBED));
    TRY(splade_gpu::embed_ln(bt.ids_d, bt.pos_d, T, H, static_cast<const S *>(g->word), g->pos, g->type0, g->emb_g,
                             g->emb_b, eps, X, s));
    TRY(prof_end(g));
    for (int l = 0; l < g->L; l++) {
        const LayerW &w = g->layers[l];
        TRY(gemm(g, X, w.qkv_w, w.qkv_b, big, T, 3 * H, H, CUBLASLT_EPILOGUE_BIAS));
        TRY(prof_begin(g, SPLADE_GPU_PROF_ATTENTION));
        if constexpr (kF32)
            TRY(splade_gpu::attention_f32(big, ctx, bt.tiles_d, bt.n_tiles, g->heads, g->hd, s));
        else if (g->attn_wgmma)
            TRY(splade_gpu::attention_wgmma(big, ctx, bt.tiles_d, bt.n_tiles, g->heads, s));
        else
            TRY(splade_gpu::attention(big, ctx, bt.tiles_d, bt.n_tiles, g->heads, g->hd, s));
        TRY(prof_end(g));
        TRY(gemm(g, ctx, w.ao_w, w.ao_b, tmp, T, H, H, CUBLASLT_EPILOGUE_BIAS));
        TRY(prof_begin(g, SPLADE_GPU_PROF_NORM));
        TRY(splade_gpu::add_ln(tmp, X, 0, T, H, w.ln1_g, w.ln1_b, eps, X, s));
        TRY(prof_end(g));
        /* FFN, optionally in token slices (SPLADE_GPU_FFN_CHUNK) to cap the intermediate's size */
        const int chunk = g->ffn_chunk > 0 && g->ffn_chunk < T ? g->ffn_chunk : T;
        for (int r0 = 0; r0 < T; r0 += chunk) {
            const int rows = T - r0 < chunk ? T - r0 : chunk;
            const S *xin = X + (size_t)r0 * H;
            if (g->gelu_tanh) {  // never in fp32 (create)
                TRY(gemm(g, xin, w.fi_w, w.fi_b, big, rows, I, H, CUBLASLT_EPILOGUE_GELU_BIAS));
            } else {
                TRY(gemm(g, xin, w.fi_w, w.fi_b, big, rows, I, H, CUBLASLT_EPILOGUE_BIAS));
                TRY(prof_begin(g, SPLADE_GPU_PROF_NORM));
                TRY(splade_gpu::gelu_erf_inplace(big, (size_t)rows * I, s));
                TRY(prof_end(g));
            }
            TRY(gemm(g, big, w.fo_w, w.fo_b, tmp + (size_t)r0 * H, rows, H, I, CUBLASLT_EPILOGUE_BIAS));
        }
        TRY(prof_begin(g, SPLADE_GPU_PROF_NORM));
        TRY(splade_gpu::add_ln(tmp, X, 0, T, H, w.ln2_g, w.ln2_b, eps, X, s));
        TRY(prof_end(g));
    }
    TRY(gemm(g, X, g->mlm_w, g->mlm_b, tmp, T, H, H, CUBLASLT_EPILOGUE_BIAS));
    TRY(prof_begin(g, SPLADE_GPU_PROF_NORM));
    TRY(splade_gpu::add_ln(tmp, static_cast<const S *>(nullptr), 1, T, H, g->mlm_g, g->mlm_beta, eps, ctx, s));
    TRY(prof_end(g));
    return SPLADE_OK;
}

int encode_hidden(splade_gpu_encoder *g, const Batch &bt)
{
    return g->fp32 ? encode_hidden_t<float>(g, bt) : encode_hidden_t<bf16>(g, bt);
}

/* out_dense: copy [B,V] to the host; out_sparse: compact [B,V] on the device (weights > threshold
 * and > 0) and copy the pairs to the host; out_hidden: copy the head's input to the host;
 * run_head: run the LM head (implied by out_dense or out_sparse). */
int forward_impl(splade_gpu_encoder *g, const int32_t *ids, const int32_t *offsets, int32_t B, float *out_dense,
                 float *out_hidden, bool run_head, splade_gpu_sparse *out_sparse = nullptr, float threshold = 0.0f)
{
    TRY(validate(g, ids, offsets, B));
    CUDA_TRY(cudaSetDevice(g->device));  // the calling thread may last have used another GPU
    if (out_sparse)
        splade_gpu::sparse_empty(g->sparse, out_sparse);
    if (B == 0)
        return SPLADE_OK;
    if (out_sparse && (int64_t)B * g->V > INT32_MAX)
        return splade_fail(SPLADE_ERR_INVALID_ARG,
                           "gpu encoder forward_sparse: B=%d x V=%d outputs over 2^31-1 (split the batch)", (int)B,
                           g->V);
    g->ev_n = 0;
    Batch bt;
    double t0 = wall_now();
    TRY(upload_batch(g, ids, offsets, B, &bt));
    TRY(ensure_acts(g, bt.T));
    t0 = phase(SPLADE_PH_GPU_H2D, t0);
    /* 0x7F7F = 3.4e38 in every bf16: a kernel reading what no stage wrote then fails the tests
     * (NaN would not do: relu and fmaxf eat it) */
    if (g->poison)
        CUDA_TRY(cudaMemsetAsync(g->abuf, 0x7F, g->abytes, g->stream));
    TRY(encode_hidden(g, bt));
    if (out_hidden && g->fp32) {
        CUDA_TRY(cudaMemcpyAsync(out_hidden, g->ctx, bt.T * g->H * sizeof(float), cudaMemcpyDeviceToHost, g->stream));
    } else if (out_hidden) {
        std::vector<bf16> h(bt.T * g->H);
        CUDA_TRY(cudaMemcpyAsync(h.data(), g->ctx, h.size() * sizeof(bf16), cudaMemcpyDeviceToHost, g->stream));
        CUDA_TRY(cudaStreamSynchronize(g->stream));
        for (size_t i = 0; i < h.size(); i++)
            out_hidden[i] = __bfloat162float(h[i]);
    }
    if (out_dense || out_sparse || run_head) {
        splade_lmhead_args a;
        a.H = g->ctx;
        a.seq_start = bt.start_d;
        a.seq_len = bt.len_d;
        a.B = B;
        a.max_len = bt.max_len;
        a.D = g->H;
        a.V = g->V;
        a.W = g->dec_w;
        a.bias = g->dec_b;
        TRY(ensure_out(g, (size_t)B * g->V));
        a.out = g->out_d;
        a.H_rows = (int32_t)bt.T; /* the packed tokens: the TMA head's tensor map extent */
        a.activation = g->activation;
        if (!g->fp32)
            TRY(ensure_head_ws(g, splade_lmhead_workspace_bytes(g->head, &a)));
        TRY(prof_begin(g, SPLADE_GPU_PROF_HEAD));
        if (g->fp32) {  // fp32 H and W: the fp32 fused head, no workspace
            TRY(splade_lmhead_gpu_fp32(&a, g->stream));
        } else {
            if (g->head == SPLADE_LMHEAD_NAIVE)  // the naive head's logits GEMM is cuBLAS's
                TRY(ensure_cublas(g));
            TRY(splade_lmhead_gpu(g->head, &a, g->head_ws, g->head_ws_bytes, g->cublas, g->stream));
        }
        TRY(prof_end(g));
        t0 = phase(SPLADE_PH_GPU_LAUNCH, t0);
        if (out_dense) {
            TRY(prof_begin(g, SPLADE_GPU_PROF_COPY));
            CUDA_TRY(cudaMemcpyAsync(out_dense, g->out_d, (size_t)B * g->V * sizeof(float), cudaMemcpyDeviceToHost,
                                     g->stream));
            TRY(prof_end(g));
        }
        if (out_sparse) {  // the compaction waits for the stream itself (offsets, then pairs)
            TRY(prof_begin(g, SPLADE_GPU_PROF_COPY));
            TRY(splade_gpu::sparse_compact(g->sparse, g->out_d, B, g->V, threshold, g->stream, out_sparse));
            TRY(prof_end(g));
        }
    }
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    phase(SPLADE_PH_GPU_WAIT, t0);
    TRY(prof_collect(g));
    return SPLADE_OK;
}

}  // namespace

/* ---- public entry points ------------------------------------------------------------------ */

extern "C" int splade_gpu_encoder_create(const splade_model *m, splade_lmhead_kind head, splade_gpu_encoder **out)
{
    return splade_gpu_encoder_create_ex(m, head, SPLADE_PRECISION_BF16, out);
}

extern "C" splade_precision splade_gpu_encoder_precision(const splade_gpu_encoder *g)
{
    return g && g->fp32 ? SPLADE_PRECISION_FP32 : SPLADE_PRECISION_BF16;
}

extern "C" int splade_gpu_encoder_create_ex(const splade_model *m, splade_lmhead_kind head, splade_precision precision,
                                            splade_gpu_encoder **out)
{
    return splade_gpu_encoder_create_on(m, head, precision, -1, 1, out);
}

extern "C" int splade_gpu_encoder_create_on(const splade_model *m, splade_lmhead_kind head, splade_precision precision,
                                            int device, int tune, splade_gpu_encoder **out)
{
    if (!out)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "gpu encoder create: NULL out");
    *out = nullptr;
    if (!m)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "gpu encoder create: NULL model");
    if (head != SPLADE_LMHEAD_FUSED && head != SPLADE_LMHEAD_NAIVE)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "gpu encoder create: LM head kind %d", (int)head);
    if (precision != SPLADE_PRECISION_BF16 && precision != SPLADE_PRECISION_FP32)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "gpu encoder create: precision %d (bf16 or fp32)", (int)precision);
    TRY(check_config(m));
    double t0 = wall_now();
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        (void)cudaGetLastError();
        return splade_fail(SPLADE_ERR_NO_GPU, "gpu encoder create: no usable CUDA device");
    }
    if (device >= ndev)
        return splade_fail(SPLADE_ERR_NO_GPU, "gpu encoder create: no CUDA device %d (%d visible)", device, ndev);
    if (device >= 0 ? cudaSetDevice(device) != cudaSuccess : cudaGetDevice(&device) != cudaSuccess) {
        (void)cudaGetLastError();
        return splade_fail(SPLADE_ERR_NO_GPU, "gpu encoder create: cannot select CUDA device %d", device);
    }
    splade_gpu_encoder *g = new (std::nothrow) splade_gpu_encoder();
    if (!g)
        return splade_fail(SPLADE_ERR_NOMEM, "gpu encoder create: out of host memory");
    g->cfg = m->cfg;
    g->device = device;
    g->head = head;
    g->fp32 = precision == SPLADE_PRECISION_FP32;
    g->activation = m->cfg.activation;
    g->es = g->fp32 ? sizeof(float) : sizeof(bf16);
    g->H = m->cfg.hidden_size;
    g->I = m->cfg.intermediate_size;
    g->V = m->cfg.vocab_size;
    g->L = m->cfg.num_layers;
    g->heads = m->cfg.num_heads;
    g->hd = g->H / g->heads;
    g->P = m->cfg.max_position;
    const splade_settings *knob = splade_settings_get();  // $SPLADE_GPU_* (src/common/settings.c)
    g->poison = knob->gpu_poison;
    g->gelu_tanh = !knob->gpu_gelu_erf;  // default: cuBLASLt's fused tanh GELU epilogue
    g->attn_q = splade_gpu::attention_q_rows();
    if (g->fp32) {  // exact erf GELU and the fp32 attention's tiles, whatever the environment says
        g->gelu_tanh = false;
        g->attn_q = splade_gpu::attention_f32_q_rows();
    }
    if (knob->gpu_gemm_tune >= 0)
        g->tune = knob->gpu_gemm_tune != 0;
    if (!tune)  // several encoders of one run: timing could pick different algorithms, hence bits
        g->tune = false;
    g->small_T = knob->gpu_small_gemm;
    g->ffn_chunk = knob->gpu_ffn_chunk;  // default 0, one slice: measured 1-3% faster than L2-sized slices
                                         // (docs/GPU_ENCODER.md)
    int rc = [&]() -> int {
        CUDA_TRY(cudaFree(nullptr));  // the context now, so that the phases below time their own work
        t0 = phase(SPLADE_PH_GPU_CONTEXT, t0);
        CUDA_TRY(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
        /* cuBLASLt (and cuBLAS for the naive head) only when a batch needs it: gpu_gemm_small.cu */
        if (g->fp32)
            TRY(splade_gpu::attention_f32_init(g->hd));
        else
            TRY(splade_gpu::attention_init(g->hd));
        if (!g->fp32 && !knob->gpu_attn_mma)
            TRY(splade_gpu::attention_wgmma_init(g->hd, &g->attn_wgmma));
        if (g->fp32) {
            TRY(ensure_lt(g));
            TRY(pick_fp32_compute(g));
        }
        t0 = phase(SPLADE_PH_GPU_HANDLES, t0);
        TRY(upload_model(g, m));
        CUDA_TRY(cudaEventCreate(&g->tune_ev[0]));
        CUDA_TRY(cudaEventCreate(&g->tune_ev[1]));
        phase(SPLADE_PH_GPU_WEIGHTS, t0);
        return SPLADE_OK;
    }();
    if (rc != SPLADE_OK) {
        splade_gpu_encoder_free(g);
        return rc;
    }
    *out = g;
    return SPLADE_OK;
}

extern "C" int splade_gpu_encoder_forward(splade_gpu_encoder *g, const int32_t *ids, const int32_t *offsets,
                                          int32_t B, float *out_dense)
{
    if (!out_dense)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "gpu encoder forward: NULL out_dense");
    return forward_impl(g, ids, offsets, B, out_dense, nullptr, true);
}

extern "C" int splade_gpu_encoder_forward_sparse(splade_gpu_encoder *g, const int32_t *ids, const int32_t *offsets,
                                                 int32_t B, float threshold, splade_gpu_sparse *out)
{
    if (!g || !out)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "gpu encoder forward_sparse: NULL %s", g ? "out" : "encoder");
    memset(out, 0, sizeof *out);
    return forward_impl(g, ids, offsets, B, nullptr, nullptr, true, out, threshold);
}

extern "C" int splade_gpu_encoder_forward_hidden(splade_gpu_encoder *g, const int32_t *ids, const int32_t *offsets,
                                                 int32_t B, float *out_hidden)
{
    if (!out_hidden)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "gpu encoder forward: NULL out_hidden");
    return forward_impl(g, ids, offsets, B, nullptr, out_hidden, false);
}

extern "C" int splade_gpu_encoder_forward_device(splade_gpu_encoder *g, const int32_t *ids, const int32_t *offsets,
                                                 int32_t B, int with_head)
{
    return forward_impl(g, ids, offsets, B, nullptr, nullptr, with_head != 0);
}

extern "C" void splade_gpu_encoder_free(splade_gpu_encoder *g)
{
    if (!g)
        return;
    if (cudaSetDevice(g->device) != cudaSuccess)
        (void)cudaGetLastError();
    if (g->stream)
        cudaStreamSynchronize(g->stream);
    gemm_plans_free(g);
    for (cudaEvent_t e : g->tune_ev)
        if (e)
            cudaEventDestroy(e);
    if (g->ev_created)
        for (int i = 0; i < kProfEvents; i++)
            if (g->ev[i])
                cudaEventDestroy(g->ev[i]);
    cudaFree(g->wbuf);
    cudaFree(g->abuf);
    cudaFree(g->meta_d);
    if (g->meta_h)
        cudaFreeHost(g->meta_h);
    cudaFree(g->out_d);
    splade_gpu::sparse_free(g->sparse);
    cudaFree(g->lt_ws);
    cudaFree(g->head_ws);
    if (g->cublas)
        cublasDestroy(g->cublas);
    if (g->lt)
        cublasLtDestroy(g->lt);
    if (g->stream)
        cudaStreamDestroy(g->stream);
    (void)cudaGetLastError();
    delete g;
}

extern "C" void splade_gpu_encoder_set_profile(splade_gpu_encoder *g, int on)
{
    if (!g)
        return;
    if (on && !g->ev_created) {  // the event pool is made on first use
        g->ev_created = true;
        for (int i = 0; i < kProfEvents; i++)
            if (cudaEventCreate(&g->ev[i]) != cudaSuccess) {
                (void)cudaGetLastError();
                g->ev[i] = nullptr;
                g->prof_ok = false;
            }
    }
    g->prof_on = on != 0 && g->prof_ok;
}

extern "C" void splade_gpu_encoder_profile(const splade_gpu_encoder *g, double ms[SPLADE_GPU_PROF_N])
{
    for (int i = 0; i < SPLADE_GPU_PROF_N; i++)
        ms[i] = g ? g->prof_ms[i] : 0.0;
}

extern "C" size_t splade_gpu_encoder_weight_bytes(const splade_gpu_encoder *g) { return g ? g->wbytes : 0; }

extern "C" size_t splade_gpu_encoder_device_bytes(const splade_gpu_encoder *g)
{
    if (!g)
        return 0;
    return g->wbytes + g->abytes + g->meta_bytes + g->out_cap * sizeof(float) + kLtWorkspace + g->head_ws_bytes +
           splade_gpu::sparse_device_bytes(g->sparse);
}
