/* The model's upload to the GPU (gpu_encoder_state.cuh): every weight in one device buffer, GEMM
 * operands in the storage type (bf16, or fp32 for SPLADE_PRECISION_FP32), LayerNorm parameters,
 * position/type embeddings and the decoder bias in fp32; the tied decoder shares the word embedding. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "common/fail.h"
#include "encoder/gpu_encoder_state.cuh"
#include "encoder/model_internal.h"
#include "gpu/cuda_check.h"
#include "splade.h"

namespace splade_gpu_enc {

using splade_gpu::bf16;

namespace {

struct Carve {
    size_t off = 0;
    template <typename T>
    size_t take(size_t n)
    {
        return take_bytes(n * sizeof(T));
    }
    size_t take_bytes(size_t bytes)
    {
        size_t o = off;
        off = align_up(off + bytes);
        return o;
    }
};

__global__ void to_bf16_kernel(const float *__restrict__ src, bf16 *__restrict__ dst, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __float2bfloat16_rn(src[i]);
}

/* fp32 host -> bf16 device: the fp32 values go up into a device staging buffer and a kernel rounds
 * them (round to nearest even, as the host's __float2bfloat16_rn did): converting bert-base's 110 M
 * weights on one CPU thread was most of the upload's 0.25-0.33 s (bench/results/gpu-pipeline-2026-11-25.md).
 * src == NULL writes zeros. stage holds at least the group's elements. */
int upload_bf16(bf16 *dst, const float *const *srcs, const size_t *lens, int nsrc, float *stage, cudaStream_t st)
{
    size_t n = 0;
    for (int i = 0; i < nsrc; i++) {
        if (srcs[i])
            CUDA_TRY(cudaMemcpyAsync(stage + n, srcs[i], lens[i] * sizeof(float), cudaMemcpyHostToDevice, st));
        else
            CUDA_TRY(cudaMemsetAsync(stage + n, 0, lens[i] * sizeof(float), st));
        n += lens[i];
    }
    if (n) {
        const unsigned blocks = (unsigned)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);
        to_bf16_kernel<<<blocks, 256, 0, st>>>(stage, dst, n);
        CUDA_TRY(cudaGetLastError());
    }
    /* the next group reuses stage: the copies above are stream-ordered after this kernel */
    return SPLADE_OK;
}

int upload_f32(float *dst, const float *src, size_t n)
{
    if (src) {
        CUDA_TRY(cudaMemcpy(dst, src, n * sizeof(float), cudaMemcpyHostToDevice));
    } else {
        CUDA_TRY(cudaMemset(dst, 0, n * sizeof(float)));
    }
    return SPLADE_OK;
}

/* A GEMM weight or bias in the encoder's storage type: bf16 (converted) or fp32 (as is); the
 * sources are concatenated, a NULL source writes zeros. */
int upload_w(const splade_gpu_encoder *g, void *dst, const float *const *srcs, const size_t *lens, int nsrc,
             float *stage)
{
    if (!g->fp32)
        return upload_bf16(static_cast<bf16 *>(dst), srcs, lens, nsrc, stage, g->stream);
    float *d = static_cast<float *>(dst);
    for (int i = 0; i < nsrc; i++) {
        TRY(upload_f32(d, srcs[i], lens[i]));
        d += lens[i];
    }
    return SPLADE_OK;
}

int upload_one_w(const splade_gpu_encoder *g, void *dst, const float *src, size_t n, float *stage)
{
    return upload_w(g, dst, &src, &n, 1, stage);
}

}  // namespace

int check_config(const splade_model *m)
{
    const splade_config &c = m->cfg;
    if (c.hidden_size <= 0 || c.num_heads <= 0 || c.num_layers < 0 || c.vocab_size <= 0 ||
        c.intermediate_size <= 0 || c.max_position <= 0 || c.type_vocab_size < 0)
        return splade_fail(SPLADE_ERR_MODEL, "gpu encoder: invalid model dimensions");
    if (c.pooling != SPLADE_POOL_MAX)  // the fused head keeps a running max; sum needs every position's value
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "gpu encoder: the model's SpladePooling is \"sum\" (the GPU head "
                           "pools by max; the CPU encodes it)");
    if (c.hidden_size % 8 || c.hidden_size > splade_gpu::kMaxHidden)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "gpu encoder: hidden size %d (needs a multiple of 8, <= %d)",
                           c.hidden_size, splade_gpu::kMaxHidden);
    if (c.hidden_size % c.num_heads || !splade_gpu::attention_supports(c.hidden_size / c.num_heads))
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "gpu encoder: head size %d/%d (supported: 32, 64, 128)",
                           c.hidden_size, c.num_heads);
    if (c.intermediate_size % 8)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "gpu encoder: intermediate size %d (needs a multiple of 8)",
                           c.intermediate_size);
    if (!m->word_emb || !m->pos_emb || (c.type_vocab_size > 0 && !m->type_emb) || !m->emb_ln_g || !m->emb_ln_b || !m->mlm_dense_w ||
        !m->mlm_ln_g || !m->mlm_ln_b || (c.num_layers > 0 && !m->layers))
        return splade_fail(SPLADE_ERR_MODEL, "gpu encoder: model tensors missing");
    for (int l = 0; l < c.num_layers; l++) {
        const splade_layer &y = m->layers[l];
        if (!y.q_w || !y.k_w || !y.v_w || !y.attn_out_w || !y.ffn_in_w || !y.ffn_out_w || !y.ln1_g || !y.ln1_b ||
            !y.ln2_g || !y.ln2_b)
            return splade_fail(SPLADE_ERR_MODEL, "gpu encoder: layer %d tensors missing", l);
    }
    return SPLADE_OK;
}

int upload_model(splade_gpu_encoder *g, const splade_model *m)
{
    const size_t H = g->H, I = g->I, V = g->V, P = g->P, L = g->L, es = g->es;
    const bool tied = m->decoder_w == nullptr || m->decoder_w == m->word_emb;
    Carve c;
    struct LOff {
        size_t qkv_w, qkv_b, ao_w, ao_b, fi_w, fi_b, fo_w, fo_b, ln1_g, ln1_b, ln2_g, ln2_b;
    };
    std::vector<LOff> lo(L);
    /* GEMM operands (and the word embedding, which the tied decoder shares) in the storage
     * type, es bytes each; LayerNorm, position/type embeddings and the decoder bias fp32 */
    const size_t o_word = c.take_bytes(V * H * es), o_pos = c.take<float>(P * H), o_type = c.take<float>(H),
                 o_eg = c.take<float>(H), o_eb = c.take<float>(H);
    for (size_t l = 0; l < L; l++) {
        lo[l].qkv_w = c.take_bytes(3 * H * H * es);
        lo[l].qkv_b = c.take_bytes(3 * H * es);
        lo[l].ao_w = c.take_bytes(H * H * es);
        lo[l].ao_b = c.take_bytes(H * es);
        lo[l].fi_w = c.take_bytes(I * H * es);
        lo[l].fi_b = c.take_bytes(I * es);
        lo[l].fo_w = c.take_bytes(H * I * es);
        lo[l].fo_b = c.take_bytes(H * es);
        lo[l].ln1_g = c.take<float>(H);
        lo[l].ln1_b = c.take<float>(H);
        lo[l].ln2_g = c.take<float>(H);
        lo[l].ln2_b = c.take<float>(H);
    }
    const size_t o_mw = c.take_bytes(H * H * es), o_mb = c.take_bytes(H * es), o_mg = c.take<float>(H),
                 o_mbeta = c.take<float>(H), o_db = c.take<float>(V);
    const size_t o_dw = tied ? o_word : c.take_bytes(V * H * es);
    g->wbytes = c.off;
    CUDA_TRY(cudaMalloc(&g->wbuf, g->wbytes));
    char *base = static_cast<char *>(g->wbuf);
    auto W = [&](size_t o) { return static_cast<void *>(base + o); };
    auto F32 = [&](size_t o) { return reinterpret_cast<float *>(base + o); };

    /* bf16: a device fp32 staging buffer for the largest group converted at once (the embedding or
     * an FFN matrix), freed once the upload is done */
    float *stage = nullptr;
    if (!g->fp32)
        CUDA_TRY(cudaMalloc(&stage, std::max({V * H, 3 * H * H, I * H}) * sizeof(float)));
    const int rc = [&]() -> int {
        g->word = W(o_word);
        TRY(upload_one_w(g, g->word, m->word_emb, V * H, stage));
        g->pos = F32(o_pos);
        TRY(upload_f32(g->pos, m->pos_emb, P * H));
        g->type0 = F32(o_type);
        TRY(upload_f32(g->type0, m->type_emb, H));  // token type 0 = row 0; NULL (DistilBERT): zeros
        g->emb_g = F32(o_eg);
        TRY(upload_f32(g->emb_g, m->emb_ln_g, H));
        g->emb_b = F32(o_eb);
        TRY(upload_f32(g->emb_b, m->emb_ln_b, H));
        g->layers.resize(L);
        for (size_t l = 0; l < L; l++) {
            const splade_layer &y = m->layers[l];
            LayerW &w = g->layers[l];
            w.qkv_w = W(lo[l].qkv_w);
            const float *ws[3] = {y.q_w, y.k_w, y.v_w};
            const size_t wl[3] = {H * H, H * H, H * H};
            TRY(upload_w(g, w.qkv_w, ws, wl, 3, stage));
            w.qkv_b = W(lo[l].qkv_b);
            const float *bs[3] = {y.q_b, y.k_b, y.v_b};
            const size_t bl[3] = {H, H, H};
            TRY(upload_w(g, w.qkv_b, bs, bl, 3, stage));
            w.ao_w = W(lo[l].ao_w);
            TRY(upload_one_w(g, w.ao_w, y.attn_out_w, H * H, stage));
            w.ao_b = W(lo[l].ao_b);
            TRY(upload_one_w(g, w.ao_b, y.attn_out_b, H, stage));
            w.fi_w = W(lo[l].fi_w);
            TRY(upload_one_w(g, w.fi_w, y.ffn_in_w, I * H, stage));
            w.fi_b = W(lo[l].fi_b);
            TRY(upload_one_w(g, w.fi_b, y.ffn_in_b, I, stage));
            w.fo_w = W(lo[l].fo_w);
            TRY(upload_one_w(g, w.fo_w, y.ffn_out_w, H * I, stage));
            w.fo_b = W(lo[l].fo_b);
            TRY(upload_one_w(g, w.fo_b, y.ffn_out_b, H, stage));
            w.ln1_g = F32(lo[l].ln1_g);
            TRY(upload_f32(w.ln1_g, y.ln1_g, H));
            w.ln1_b = F32(lo[l].ln1_b);
            TRY(upload_f32(w.ln1_b, y.ln1_b, H));
            w.ln2_g = F32(lo[l].ln2_g);
            TRY(upload_f32(w.ln2_g, y.ln2_g, H));
            w.ln2_b = F32(lo[l].ln2_b);
            TRY(upload_f32(w.ln2_b, y.ln2_b, H));
        }
        g->mlm_w = W(o_mw);
        TRY(upload_one_w(g, g->mlm_w, m->mlm_dense_w, H * H, stage));
        g->mlm_b = W(o_mb);
        TRY(upload_one_w(g, g->mlm_b, m->mlm_dense_b, H, stage));
        g->mlm_g = F32(o_mg);
        TRY(upload_f32(g->mlm_g, m->mlm_ln_g, H));
        g->mlm_beta = F32(o_mbeta);
        TRY(upload_f32(g->mlm_beta, m->mlm_ln_b, H));
        g->dec_b = F32(o_db);
        TRY(upload_f32(g->dec_b, m->decoder_b, V));
        g->dec_w = W(o_dw);
        if (!tied)
            TRY(upload_one_w(g, g->dec_w, m->decoder_w, V * H, stage));
        return SPLADE_OK;
    }();
    /* the kernels read stage until the stream is done with them */
    cudaError_t sync = cudaStreamSynchronize(g->stream);
    cudaFree(stage);
    TRY(rc);
    CUDA_TRY(sync);
    return SPLADE_OK;
}

}  // namespace splade_gpu_enc
