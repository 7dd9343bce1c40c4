/* BERT (post-LayerNorm) forward in fp32 over packed sequences. Mirrors transformers'
 * BertForMaskedLM in eval mode so outputs agree to ~1e-5. The layers run on a thread team
 * (cpu_team.c) that shares each GEMM's fixed grid of units, the attention (sequence, head)
 * pairs and the LayerNorm rows; GEMMs go through gemm_cpu.c (AVX-512 kernel for few rows,
 * oneDNN for many, OpenBLAS without it). The opt-in bf16 forward (layer_bf16) runs the same steps
 * with bf16 GEMM inputs (gemm_dnnl.h). Every output element is computed the same way whatever the thread
 * count, so `--threads` never changes a vector (tests/cli/test_threads_deterministic.sh). */
#include "common/fail.h"
#include "encoder/forward_cpu.h"
#include "encoder/model_internal.h"
#include "splade.h"
#include "lmhead_fused/lmhead.h"
#include "encoder/attention_cpu.h"
#include "encoder/attention_bf16.h"
#include "common/cpu_team.h"
#include "common/settings.h"
#include "encoder/gemm_cpu.h"
#include "encoder/rowops_cpu.h"
#include "encoder/forward_cpu_bf16.h"
#include "encoder/forward_cpu_int8.h"
#include "encoder/forward_cpu_packed.h"
#include "encoder/lmhead_screen_cpu.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    float *x, *q, *k, *v, *ctx, *tmp, *ffn;
    float *scratch; /* per thread: GEMM and attention scratch, `per_thread` floats each */
    size_t per_thread;
    uint16_t *xb, *ctxb, *tmpb, *ffnb; /* bf16 path: the GEMM inputs rounded to bf16 */
    /* bf16 path when every sequence takes the bf16 attention: Q, K, V in bf16 straight from their
     * GEMMs, in attention's blocks (gemm_dnnl.h's splade_dnnl_heads; poff: padded offsets); else NULL */
    uint16_t *qkvh[3];
    int32_t *poff;
    splade_q8_rows xq, ctxq, tmpq, ffnq; /* int8 path: the GEMM inputs quantized per row */
} workspace;

/* What every member of the team reads; it writes only its own share of the shared buffers. */
typedef struct {
    const splade_model *m;
    const int32_t *ids, *offsets;
    int32_t B, T;
    workspace *w;
    const splade_cpu_bf16 *bf; /* NULL: fp32 (or int8) */
    const splade_cpu_int8 *q8; /* NULL: fp32 (or bf16) */
    int q8_fp32;               /* int8: SPLADE_Q8_* GEMMs kept in fp32 (settings.h, a bisection aid) */
    int q8_per_tensor;         /* int8: one activation scale per tensor (settings.h), not per row */
    const splade_cpu_packed *pk; /* fp32: packed copies for few rows (forward_cpu_packed.h), or NULL */
} fwd;

enum { COL_ALIGN = SPLADE_GEMM_UNIT }; /* column splits of plain copies */
_Static_assert((int)SPLADE_DNNL_ACCUM == (int)SPLADE_GEMM_ACCUM && (int)SPLADE_DNNL_GELU == (int)SPLADE_GEMM_GELU,
               "q8_linear passes one set of flags to both GEMMs");

/* This thread's share of y = x W^T + b (+ y with SPLADE_GEMM_ACCUM; GELU with SPLADE_GEMM_GELU):
 * a fixed grid of units, hence the same bits on any thread count (gemm_cpu.h); from W's packed copy
 * P when there is one (the same bits again: gemm_packed_cpu.h). */
static void linear_packed(const fwd *f, int tid, splade_team *t, const float *x, int32_t K, const float *W,
                          const splade_gemm_packed *P, const float *b, int32_t N, float *y, int flags)
{
    splade_gemm_nt_share_packed(x, f->T, K, W, P, b, N, y, flags,
                                f->w->scratch + (size_t)tid * f->w->per_thread, tid, splade_team_size(t));
}

/* The same without a packed copy (the int8 forward's GEMMs kept in fp32). */
static void linear_part(const fwd *f, int tid, splade_team *t, const float *x, int32_t K, const float *W,
                        const float *b, int32_t N, float *y, int flags)
{
    linear_packed(f, tid, t, x, K, W, NULL, b, N, y, flags);
}

/* This thread's columns of dst = src (the residual the next GEMM accumulates onto). */
static void copy_cols(const fwd *f, int tid, splade_team *t, const float *src, float *dst, int32_t N)
{
    int n0, n1;
    splade_team_split(tid, splade_team_size(t), N, COL_ALIGN, &n0, &n1);
    for (int32_t r = 0; r < f->T; r++)
        memcpy(dst + (size_t)r * N + n0, src + (size_t)r * N + n0, (size_t)(n1 - n0) * sizeof *dst);
}

static void layer_norm_part(const fwd *f, int tid, splade_team *t, float *x, const float *g, const float *b)
{
    int r0, r1;
    splade_team_split(tid, splade_team_size(t), f->T, 1, &r0, &r1);
    splade_layer_norm(x, r0, r1, f->m->cfg.hidden_size, g, b, f->m->cfg.layer_norm_eps);
}

/* This thread's (sequence, head) pairs: a sequence only sees its own rows. The reduced-precision
 * forwards run documents' attention in bf16 (attention_bf16.h); fp32 keeps its bits. Returns the
 * first failure (bf16 attention only). */
static int attention_part(const fwd *f, int tid, splade_team *t)
{
    const splade_config *c = &f->m->cfg;
    const int32_t H = c->hidden_size, nh = c->num_heads, dh = H / nh;
    const float scale = 1.0f / sqrtf((float)dh);
    const workspace *w = f->w;
    int p0, p1, rc = SPLADE_OK;
    splade_team_split(tid, splade_team_size(t), f->B * nh, 1, &p0, &p1);
    for (int p = p0; !rc && p < p1; p++) {
        const int32_t b = p / nh, h = p % nh, s0 = f->offsets[b], L = f->offsets[b + 1] - s0;
        size_t at = (size_t)s0 * H + (size_t)h * dh;
        float *scratch = w->scratch + (size_t)tid * w->per_thread;
        if (w->poff) {
            const size_t blk = (size_t)w->poff[b] * H + (size_t)h * (w->poff[b + 1] - w->poff[b]) * dh;
            rc = splade_attention_head_bf16_blocks(w->qkvh[0] + blk, w->qkvh[1] + blk, w->qkvh[2] + blk, NULL,
                                                   w->ctxb + at, L, dh, H, scale, scratch);
            continue;
        }
        if ((f->bf || f->q8) && splade_attention_bf16_usable(L)) {
            /* with ctxb (bf16 forward) only the bf16 copy is read, by the attention-out GEMM */
            rc = splade_attention_head_bf16(w->q + at, w->k + at, w->v + at, w->ctxb ? NULL : w->ctx + at,
                                            w->ctxb ? w->ctxb + at : NULL, L, dh, H, scale, scratch);
            continue;
        }
        splade_attention_head(w->q + at, w->k + at, w->v + at, w->ctx + at, L, dh, H, scale, scratch);
        for (int32_t i = 0; w->ctxb && i < L; i++)
            splade_to_bf16(w->ctx + at + (size_t)i * H, w->ctxb + at + (size_t)i * H, (size_t)dh);
    }
    return rc;
}

static void embed_part(const fwd *f, int tid, splade_team *t);

/* LayerNorm of this thread's rows, each then copied in bf16 (the next GEMM's input) while in L1. */
static void layer_norm_bf16(const fwd *f, int tid, splade_team *t, float *x, uint16_t *xb, const float *g,
                            const float *b)
{
    const int32_t H = f->m->cfg.hidden_size;
    int r0, r1;
    splade_team_split(tid, splade_team_size(t), f->T, 1, &r0, &r1);
    for (int32_t r = r0; r < r1; r++) {
        splade_layer_norm(x, r, r + 1, H, g, b, f->m->cfg.layer_norm_eps);
        splade_to_bf16(x + (size_t)r * H, xb + (size_t)r * H, (size_t)H);
    }
}

enum { PAD = SPLADE_DNNL_PAD_ROWS }; /* the bf16 forward's GEMM inputs are padded (bf16_rows) */

/* The layer of `layer` with bf16 GEMM inputs (oneDNN, fp32 accumulation and outputs); documents'
 * attention in bf16 (attention_part); softmax, residuals and LayerNorm stay fp32. Returns the first failure of this member (it still reaches
 * every barrier). */
static int layer_bf16(const fwd *f, const splade_layer *p, const splade_bf16_layer *q, int tid, splade_team *t)
{
    const int32_t H = f->m->cfg.hidden_size;
    const int n = splade_team_size(t);
    workspace *w = f->w;
    int rc = SPLADE_OK;
    if (w->poff) {
        const splade_dnnl_linear *qkv[3] = {q->q, q->k, q->v};
        for (int i = 0; i < 3; i++) {
            const splade_dnnl_heads o = {w->qkvh[i], f->offsets, w->poff, f->B, H / f->m->cfg.num_heads};
            rc = rc ? rc : splade_dnnl_share_heads(qkv[i], w->xb, f->T, &o, PAD, tid, n);
        }
    } else {
        rc = splade_dnnl_share(q->q, w->xb, f->T, w->q, NULL, PAD, tid, n);
        rc = rc ? rc : splade_dnnl_share(q->k, w->xb, f->T, w->k, NULL, PAD, tid, n);
        rc = rc ? rc : splade_dnnl_share(q->v, w->xb, f->T, w->v, NULL, PAD, tid, n);
    }
    splade_team_barrier(t);
    int ra = attention_part(f, tid, t);
    rc = rc ? rc : ra;
    splade_team_barrier(t);
    /* the residuals are read where they are (splade_dnnl_share_res), not copied first */
    rc = rc ? rc : splade_dnnl_share_res(q->o, w->ctxb, f->T, w->x, w->tmp, NULL, SPLADE_DNNL_ACCUM | PAD, tid, n);
    splade_team_barrier(t);
    layer_norm_bf16(f, tid, t, w->tmp, w->tmpb, p->ln1_g, p->ln1_b);
    splade_team_barrier(t);
    /* GELU(FFN-in) in bf16 alone: only ffn_out reads it */
    rc = rc ? rc : splade_dnnl_share(q->ffn_in, w->tmpb, f->T, NULL, w->ffnb, SPLADE_DNNL_GELU | PAD, tid, n);
    splade_team_barrier(t);
    rc = rc ? rc : splade_dnnl_share_res(q->ffn_out, w->ffnb, f->T, w->tmp, w->x, NULL, SPLADE_DNNL_ACCUM | PAD, tid,
                                         n);
    splade_team_barrier(t);
    layer_norm_bf16(f, tid, t, w->x, w->xb, p->ln2_g, p->ln2_b);
    splade_team_barrier(t);
    return rc;
}

/* forward_team's bf16 twin: the MLM transform's output ends in w->xb (bf16) for the head. */
static int forward_team_bf16(void *ctx, int tid, splade_team *t)
{
    const fwd *f = ctx;
    const splade_model *m = f->m;
    const int32_t H = m->cfg.hidden_size;
    embed_part(f, tid, t);
    int r0, r1;
    splade_team_split(tid, splade_team_size(t), f->T, 1, &r0, &r1);
    splade_to_bf16(f->w->x + (size_t)r0 * H, f->w->xb + (size_t)r0 * H, (size_t)(r1 - r0) * H);
    splade_team_barrier(t);
    int rc = SPLADE_OK;
    for (int32_t l = 0; l < m->cfg.num_layers; l++) {
        int r = layer_bf16(f, &m->layers[l], &f->bf->layers[l], tid, t);
        rc = rc ? rc : r;
    }
    int r = splade_dnnl_share(f->bf->mlm_dense, f->w->xb, f->T, f->w->q, NULL, SPLADE_DNNL_GELU | PAD, tid,
                              splade_team_size(t));
    rc = rc ? rc : r;
    splade_team_barrier(t);
    layer_norm_bf16(f, tid, t, f->w->q, f->w->xb, m->mlm_ln_g, m->mlm_ln_b);
    return rc;
}

/* This thread's rows of x [T, K] quantized into a (the next int8 GEMM's input); with g, the
 * rows' LayerNorm first. */
static void quantize_part(const fwd *f, int tid, splade_team *t, float *x, int32_t K, const splade_q8_rows *a,
                          const float *g, const float *b)
{
    int r0, r1;
    splade_team_split(tid, splade_team_size(t), f->T, 1, &r0, &r1);
    if (g)
        splade_layer_norm(x, r0, r1, K, g, b, f->m->cfg.layer_norm_eps);
    if (!f->q8_per_tensor) {
        splade_q8_quantize(x, r0, r1, K, a);
        return;
    }
    if (g) /* the whole tensor's range needs every row normalized */
        splade_team_barrier(t);
    splade_q8_quantize_tensor(x, f->T, r0, r1, K, a);
}

/* y = x·Wᵀ + b (flags: SPLADE_DNNL_ACCUM / GELU, equal to SPLADE_GEMM_*) with the int8 weights l on
 * xa, or in fp32 on x when the bisection aid keeps this GEMM (`which`) in fp32. */
static int q8_linear(const fwd *f, int tid, splade_team *t, int which, const splade_q8_linear *l,
                     const splade_q8_rows *xa, const float *x, int32_t K, const float *W, const float *b, int32_t N,
                     float *y, int flags)
{
    if (!(f->q8_fp32 & which))
        return splade_q8_share(l, xa, f->T, y, flags, tid, splade_team_size(t));
    linear_part(f, tid, t, x, K, W, b, N, y, flags);
    return SPLADE_OK;
}

/* The layer with int8 GEMMs (per-row u8 activations, per-channel s8 weights, s32 accumulation:
 * gemm_dnnl_int8.h); documents' attention in bf16 (attention_part); softmax, residuals and
 * LayerNorm stay fp32. An activation is
 * quantized per row once it is whole (after the barrier that completes it). Returns the first
 * failure of this member (it still reaches every barrier). */
static int layer_int8(const fwd *f, const splade_layer *p, const splade_q8_layer *q, int tid, splade_team *t)
{
    const int32_t H = f->m->cfg.hidden_size, F = f->m->cfg.intermediate_size;
    workspace *w = f->w;
    int rc = q8_linear(f, tid, t, SPLADE_Q8_QKV, q->q, &w->xq, w->x, H, p->q_w, p->q_b, H, w->q, 0);
    rc = rc ? rc : q8_linear(f, tid, t, SPLADE_Q8_QKV, q->k, &w->xq, w->x, H, p->k_w, p->k_b, H, w->k, 0);
    rc = rc ? rc : q8_linear(f, tid, t, SPLADE_Q8_QKV, q->v, &w->xq, w->x, H, p->v_w, p->v_b, H, w->v, 0);
    splade_team_barrier(t);
    int ra = attention_part(f, tid, t);
    rc = rc ? rc : ra;
    copy_cols(f, tid, t, w->x, w->tmp, H);
    splade_team_barrier(t);
    quantize_part(f, tid, t, w->ctx, H, &w->ctxq, NULL, NULL);
    splade_team_barrier(t);
    rc = rc ? rc : q8_linear(f, tid, t, SPLADE_Q8_ATTN_OUT, q->o, &w->ctxq, w->ctx, H, p->attn_out_w, p->attn_out_b,
                             H, w->tmp, SPLADE_DNNL_ACCUM);
    splade_team_barrier(t);
    quantize_part(f, tid, t, w->tmp, H, &w->tmpq, p->ln1_g, p->ln1_b);
    splade_team_barrier(t);
    rc = rc ? rc : q8_linear(f, tid, t, SPLADE_Q8_FFN_IN, q->ffn_in, &w->tmpq, w->tmp, H, p->ffn_in_w, p->ffn_in_b,
                             F, w->ffn, SPLADE_DNNL_GELU);
    copy_cols(f, tid, t, w->tmp, w->x, H);
    splade_team_barrier(t);
    quantize_part(f, tid, t, w->ffn, F, &w->ffnq, NULL, NULL);
    splade_team_barrier(t);
    rc = rc ? rc : q8_linear(f, tid, t, SPLADE_Q8_FFN_OUT, q->ffn_out, &w->ffnq, w->ffn, F, p->ffn_out_w,
                             p->ffn_out_b, H, w->x, SPLADE_DNNL_ACCUM);
    splade_team_barrier(t);
    quantize_part(f, tid, t, w->x, H, &w->xq, p->ln2_g, p->ln2_b);
    splade_team_barrier(t);
    return rc;
}

/* The int8 forward's MLM transform (dense + GELU + LayerNorm, into w->q) in the head's format
 * (forward_cpu_int8.h); its output also in w->xq (int8 head) or w->xb (bf16 head). */
static int mlm_int8(const fwd *f, int tid, splade_team *t)
{
    const splade_model *m = f->m;
    const int32_t H = m->cfg.hidden_size;
    const int n = splade_team_size(t);
    workspace *w = f->w;
    int rc = SPLADE_OK, r0, r1;
    switch (f->q8->head) {
    case SPLADE_Q8_HEAD_INT8:
        rc = splade_q8_share(f->q8->mlm_dense, &w->xq, f->T, w->q, SPLADE_DNNL_GELU, tid, n);
        splade_team_barrier(t);
        quantize_part(f, tid, t, w->q, H, &w->xq, m->mlm_ln_g, m->mlm_ln_b);
        break;
    case SPLADE_Q8_HEAD_BF16:
        splade_team_split(tid, n, f->T, 1, &r0, &r1);
        splade_to_bf16(w->x + (size_t)r0 * H, w->xb + (size_t)r0 * H, (size_t)(r1 - r0) * H);
        splade_team_barrier(t);
        rc = splade_dnnl_share(f->q8->mlm_dense_bf, w->xb, f->T, w->q, NULL, SPLADE_DNNL_GELU, tid, n);
        splade_team_barrier(t);
        layer_norm_bf16(f, tid, t, w->q, w->xb, m->mlm_ln_g, m->mlm_ln_b);
        break;
    default:
        linear_part(f, tid, t, w->x, H, m->mlm_dense_w, m->mlm_dense_b, H, w->q, SPLADE_GEMM_GELU);
        splade_team_barrier(t);
        layer_norm_part(f, tid, t, w->q, m->mlm_ln_g, m->mlm_ln_b);
    }
    return rc;
}

/* forward_team's int8 twin. */
static int forward_team_int8(void *ctx, int tid, splade_team *t)
{
    const fwd *f = ctx;
    const splade_model *m = f->m;
    const int32_t H = m->cfg.hidden_size;
    embed_part(f, tid, t);
    quantize_part(f, tid, t, f->w->x, H, &f->w->xq, NULL, NULL);
    splade_team_barrier(t);
    int rc = SPLADE_OK;
    for (int32_t l = 0; l < m->cfg.num_layers; l++) {
        int r = layer_int8(f, &m->layers[l], &f->q8->layers[l], tid, t);
        rc = rc ? rc : r;
    }
    int r = mlm_int8(f, tid, t);
    return rc ? rc : r;
}

static void layer(const fwd *f, int32_t l, int tid, splade_team *t)
{
    const splade_layer *p = &f->m->layers[l];
    const splade_gemm_packed *pk =
        f->pk && l < f->pk->ready_layers ? f->pk->layers + (size_t)l * SPLADE_PACKED_PER_LAYER : NULL;
#define PK(i) (pk ? pk + (i) : NULL)
    const int32_t H = f->m->cfg.hidden_size, F = f->m->cfg.intermediate_size;
    workspace *w = f->w;
    linear_packed(f, tid, t, w->x, H, p->q_w, PK(SPLADE_PACKED_Q), p->q_b, H, w->q, 0);
    linear_packed(f, tid, t, w->x, H, p->k_w, PK(SPLADE_PACKED_K), p->k_b, H, w->k, 0);
    linear_packed(f, tid, t, w->x, H, p->v_w, PK(SPLADE_PACKED_V), p->v_b, H, w->v, 0);
    splade_team_barrier(t);
    attention_part(f, tid, t); /* fp32: cannot fail */
    copy_cols(f, tid, t, w->x, w->tmp, H); /* residual */
    splade_team_barrier(t);
    linear_packed(f, tid, t, w->ctx, H, p->attn_out_w, PK(SPLADE_PACKED_O), p->attn_out_b, H, w->tmp,
                  SPLADE_GEMM_ACCUM);
    splade_team_barrier(t);
    layer_norm_part(f, tid, t, w->tmp, p->ln1_g, p->ln1_b);
    splade_team_barrier(t);
    linear_packed(f, tid, t, w->tmp, H, p->ffn_in_w, PK(SPLADE_PACKED_FFN_IN), p->ffn_in_b, F, w->ffn,
                  SPLADE_GEMM_GELU);
    copy_cols(f, tid, t, w->tmp, w->x, H); /* residual */
    splade_team_barrier(t);
    linear_packed(f, tid, t, w->ffn, F, p->ffn_out_w, PK(SPLADE_PACKED_FFN_OUT), p->ffn_out_b, H, w->x,
                  SPLADE_GEMM_ACCUM);
    splade_team_barrier(t);
    layer_norm_part(f, tid, t, w->x, p->ln2_g, p->ln2_b);
    splade_team_barrier(t);
#undef PK
}

/* This thread's rows of word + position + type embeddings, then their LayerNorm. */
static void embed_part(const fwd *f, int tid, splade_team *t)
{
    const splade_model *m = f->m;
    const int32_t H = m->cfg.hidden_size;
    int r0, r1;
    splade_team_split(tid, splade_team_size(t), f->T, 1, &r0, &r1);
    for (int32_t b = 0; b < f->B; b++)
        for (int32_t i = f->offsets[b]; i < f->offsets[b + 1]; i++) {
            if (i < r0 || i >= r1)
                continue;
            const float *we = m->word_emb + (size_t)f->ids[i] * H;
            const float *pe = m->pos_emb + (size_t)(i - f->offsets[b]) * H;
            float *r = f->w->x + (size_t)i * H;
            for (int32_t j = 0; j < H; j++) /* token type 0; DistilBERT has no token types */
                r[j] = we[j] + pe[j] + (m->type_emb ? m->type_emb[j] : 0.0f);
        }
    splade_layer_norm(f->w->x, r0, r1, H, m->emb_ln_g, m->emb_ln_b, m->cfg.layer_norm_eps);
}

/* Embeddings, every layer and the MLM transform (dense + GELU + LayerNorm, into w->q). */
static int forward_team(void *ctx, int tid, splade_team *t)
{
    const fwd *f = ctx;
    const splade_model *m = f->m;
    const int32_t H = m->cfg.hidden_size;
    embed_part(f, tid, t);
    splade_team_barrier(t);
    for (int32_t l = 0; l < m->cfg.num_layers; l++)
        layer(f, l, tid, t);
    linear_packed(f, tid, t, f->w->x, H, m->mlm_dense_w, f->pk && f->pk->mlm_ready ? &f->pk->mlm_dense : NULL,
                  m->mlm_dense_b, H, f->w->q, SPLADE_GEMM_GELU);
    splade_team_barrier(t);
    layer_norm_part(f, tid, t, f->w->q, m->mlm_ln_g, m->mlm_ln_b);
    return SPLADE_OK;
}

static int check_input(const splade_model *m, const int32_t *ids, const int32_t *offsets, int32_t B,
                       int32_t *max_len)
{
    *max_len = 0;
    if (offsets[0] != 0)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "forward: offsets[0] must be 0");
    for (int32_t b = 0; b < B; b++) {
        int32_t L = offsets[b + 1] - offsets[b];
        if (L < 1 || L > m->cfg.max_position)
            return splade_fail(SPLADE_ERR_INVALID_ARG, "forward: sequence %d has length %d (must be 1..%d)",
                               (int)b, (int)L, (int)m->cfg.max_position);
        *max_len = L > *max_len ? L : *max_len;
    }
    for (int32_t t = 0; t < offsets[B]; t++)
        if (ids[t] < 0 || ids[t] >= m->cfg.vocab_size)
            return splade_fail(SPLADE_ERR_INVALID_ARG, "forward: token id %d at position %d outside the "
                               "vocabulary (%d)", (int)ids[t], (int)t, (int)m->cfg.vocab_size);
    return SPLADE_OK;
}

/* A GEMM operand's rows on 64-byte lines. malloc's 16-byte alignment makes every 64-byte load of an AMX
 * tile row (and every AVX-512 load of a row operation) span two cache lines: the bf16 forward ran
 * 12-13% longer per document with its activations so (bench/results/cpu-bf16-gemm-rate-2026-11-26.md). */
static void *rows_alloc(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

static int alloc_q8(splade_q8_rows *a, size_t T, size_t K)
{
    a->q = rows_alloc(T * K);
    a->scale = malloc(T * sizeof *a->scale);
    a->zp = malloc(T * sizeof *a->zp);
    return a->q && a->scale && a->zp ? SPLADE_OK : SPLADE_ERR_NOMEM;
}

static void free_q8(splade_q8_rows *a) { free(a->q), free(a->scale), free(a->zp); }

/* A bf16 GEMM input of T rows of K: rows up to the next multiple of SPLADE_DNNL_ROWS, the padding
 * zeroed once (nothing writes past row T), so the GEMMs compute a short last block whole
 * (SPLADE_DNNL_PAD_ROWS). */
static uint16_t *bf16_rows(size_t T, size_t K)
{
    const size_t Tp = (T + SPLADE_DNNL_ROWS - 1) / SPLADE_DNNL_ROWS * SPLADE_DNNL_ROWS;
    uint16_t *p = rows_alloc(Tp * K * sizeof *p);
    if (p)
        memset(p + T * K, 0, (Tp - T) * K * sizeof *p);
    return p;
}

static int alloc_ws(workspace *w, size_t T, size_t H, size_t F, int32_t L, int32_t dh, int nthreads, int bf16,
                    int int8)
{
    memset(w, 0, sizeof *w);
    if (int8 && (alloc_q8(&w->xq, T, H) || alloc_q8(&w->ctxq, T, H) || alloc_q8(&w->tmpq, T, H) ||
                 alloc_q8(&w->ffnq, T, F)))
        return SPLADE_ERR_NOMEM;
    if (int8 && !(w->xb = bf16_rows(T, H))) /* a bf16 head's input */
        return SPLADE_ERR_NOMEM;
    if (bf16) {
        uint16_t **b16[] = {&w->xb, &w->ctxb, &w->tmpb, &w->ffnb};
        for (size_t i = 0; i < sizeof b16 / sizeof *b16; i++)
            if (!(*b16[i] = bf16_rows(T, i == 3 ? F : H)))
                return SPLADE_ERR_NOMEM;
    }
    float **bufs[] = {&w->x, &w->q, &w->k, &w->v, &w->ctx, &w->tmp};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (!(*bufs[i] = rows_alloc(T * H * sizeof(float))))
            return SPLADE_ERR_NOMEM;
    w->ffn = rows_alloc(T * F * sizeof(float));
    size_t g = splade_gemm_scratch_floats((int32_t)F), a = splade_attention_scratch_floats(L, dh);
    if ((bf16 || int8) && splade_attention_bf16_scratch_floats(L, dh) > a)
        a = splade_attention_bf16_scratch_floats(L, dh);
    w->per_thread = ((g > a ? g : a) + 15) / 16 * 16; /* 64-byte multiples: each slice stays aligned */
    w->scratch = aligned_alloc(64, w->per_thread * (size_t)nthreads * sizeof(float));
    return w->ffn && w->scratch ? SPLADE_OK : SPLADE_ERR_NOMEM;
}

/* The bf16 forward's Q, K, V blocks (workspace.qkvh) when every sequence of the batch takes the bf16
 * attention and a head divides a GEMM panel; zeroed, so the rows past each length stay 0. */
static int alloc_heads(workspace *w, const int32_t *offsets, int32_t B, int32_t H, int32_t dh)
{
    if (SPLADE_DNNL_PANEL % dh)
        return SPLADE_OK;
    for (int32_t b = 0; b < B; b++)
        if (!splade_attention_bf16_usable(offsets[b + 1] - offsets[b]))
            return SPLADE_OK;
    if (!(w->poff = malloc(((size_t)B + 1) * sizeof *w->poff)))
        return SPLADE_ERR_NOMEM;
    w->poff[0] = 0;
    for (int32_t b = 0; b < B; b++)
        w->poff[b + 1] = w->poff[b] + splade_attention_bf16_padded(offsets[b + 1] - offsets[b]);
    for (int i = 0; i < 3; i++) {
        const size_t bytes = (size_t)w->poff[B] * H * sizeof(uint16_t);
        if (!(w->qkvh[i] = rows_alloc(bytes)))
            return SPLADE_ERR_NOMEM;
        memset(w->qkvh[i], 0, bytes);
    }
    return SPLADE_OK;
}

static void free_ws(workspace *w)
{
    free(w->poff), free(w->qkvh[0]), free(w->qkvh[1]), free(w->qkvh[2]);
    float *bufs[] = {w->x, w->q, w->k, w->v, w->ctx, w->tmp, w->ffn, w->scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        free(bufs[i]);
    free(w->xb), free(w->ctxb), free(w->tmpb), free(w->ffnb);
    free_q8(&w->xq), free_q8(&w->ctxq), free_q8(&w->tmpq), free_q8(&w->ffnq);
}

/* SpladePooling "sum": sum over positions of act(logit), which the max-fused head cannot give.
 * Per sequence, in vocabulary tiles (never a [L, V] buffer): logits by one GEMM, then the sum. */
static int sum_head(const splade_model *m, const float *Hs, const int32_t *offsets, int32_t B, float *out)
{
    enum { TILE = 2048 };
    const int32_t H = m->cfg.hidden_size, V = m->cfg.vocab_size;
    int32_t maxL = 0;
    for (int32_t b = 0; b < B; b++)
        maxL = offsets[b + 1] - offsets[b] > maxL ? offsets[b + 1] - offsets[b] : maxL;
    float *tile = malloc((size_t)maxL * TILE * sizeof *tile);
    if (!tile)
        return splade_fail(SPLADE_ERR_NOMEM, "sum pooling: %d x %d logits", (int)maxL, TILE);
    for (int32_t b = 0; b < B; b++) {
        const int32_t L = offsets[b + 1] - offsets[b];
        for (int32_t v0 = 0; v0 < V; v0 += TILE) {
            const int32_t nv = V - v0 < TILE ? V - v0 : TILE;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, nv, H, 1.0f, Hs + (size_t)offsets[b] * H, H,
                        m->decoder_w + (size_t)v0 * H, H, 0.0f, tile, nv);
            for (int32_t v = 0; v < nv; v++) {
                float acc = 0.0f;
                for (int32_t s = 0; s < L; s++) {
                    float x = tile[(size_t)s * nv + v] + m->decoder_b[v0 + v];
                    x = x > 0.0f ? log1pf(x) : 0.0f;
                    acc += m->cfg.activation == SPLADE_ACT_LOG1P_LOG1P_RELU ? log1pf(x) : x;
                }
                out[(size_t)b * V + v0 + v] = acc;
            }
        }
    }
    free(tile);
    return SPLADE_OK;
}

/* The second log1p of SpladePooling's "log1p_relu": monotone, so after the max as the first. */
static void second_log1p(float *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = log1pf(out[i]);
}

/* The max-pooled SPLADE head over the MLM output: the reduced-precision forwards' bf16 or int8 head,
 * else the fp32 head (through its bf16 screen when given: the same bits). */
static int max_head(const splade_model *m, const splade_cpu_bf16 *bf, const splade_cpu_int8 *q8,
                    const splade_head_screen *screen, const int32_t *offsets, int32_t B, float *out, int nthreads,
                    const workspace *w)
{
    const splade_config *c = &m->cfg;
    const splade_dnnl_linear *dec_bf = q8 ? q8->decoder_bf : bf ? bf->decoder : NULL;
    if (dec_bf)
        return splade_lmhead_cpu_bf16(dec_bf, w->xb, offsets, B, out, nthreads);
    if (q8 && q8->head == SPLADE_Q8_HEAD_INT8)
        return splade_lmhead_cpu_int8(q8->decoder, &w->xq, offsets, B, out, nthreads);
    if (screen)
        return splade_lmhead_cpu_screened(screen, w->q, offsets, B, out, nthreads, NULL);
    int32_t *len = malloc((size_t)B * sizeof *len);
    if (!len)
        return splade_fail(SPLADE_ERR_NOMEM, "forward: %d lengths", (int)B);
    for (int32_t b = 0; b < B; b++)
        len[b] = offsets[b + 1] - offsets[b];
    int rc = splade_lmhead_cpu(w->q, offsets, len, B, c->hidden_size, m->decoder_w, m->decoder_b, c->vocab_size,
                               out, nthreads);
    free(len);
    return rc;
}

static int run(const splade_model *m, const splade_cpu_bf16 *bf, const splade_cpu_int8 *q8,
               const splade_head_screen *screen, const splade_cpu_packed *pk, const int32_t *ids,
               const int32_t *offsets, int32_t B, float *out, int nthreads, workspace *w)
{
    const splade_config *c = &m->cfg;
    const int32_t T = offsets[B];
    fwd f = {m, ids, offsets, B, T, w, bf, q8, 0, 0, pk};
    if (q8)
        f.q8_fp32 = splade_settings_get()->cpu_int8_fp32, f.q8_per_tensor = splade_settings_get()->cpu_int8_per_tensor;
    /* The team owns the threading: OpenBLAS (large-M GEMMs, long attention) runs one thread
     * per call inside it. */
    int saved = openblas_get_num_threads();
    openblas_set_num_threads(1);
    int rc = splade_team_run(nthreads, q8 ? forward_team_int8 : bf ? forward_team_bf16 : forward_team, &f);
    openblas_set_num_threads(saved);
    if (rc)
        return rc;
    if (c->pooling == SPLADE_POOL_SUM) /* the fp32 MLM output is in w->q on both paths */
        return sum_head(m, w->q, offsets, B, out);
    rc = max_head(m, bf, q8, screen, offsets, B, out, nthreads, w);
    if (!rc && c->activation == SPLADE_ACT_LOG1P_LOG1P_RELU)
        second_log1p(out, (size_t)B * (size_t)c->vocab_size);
    return rc;
}

int splade_forward_cpu(const splade_model *m, const int32_t *ids, const int32_t *offsets, int32_t B,
                       float *out_dense, int threads)
{
    return splade_forward_cpu_lowp(m, NULL, NULL, NULL, NULL, ids, offsets, B, out_dense, threads);
}

int splade_forward_cpu_bf16(const splade_model *m, const splade_cpu_bf16 *bf, const int32_t *ids,
                            const int32_t *offsets, int32_t B, float *out_dense, int threads)
{
    return splade_forward_cpu_lowp(m, bf, NULL, NULL, NULL, ids, offsets, B, out_dense, threads);
}

int splade_forward_cpu_lowp(const splade_model *m, const splade_cpu_bf16 *bf, const splade_cpu_int8 *q8,
                            const splade_head_screen *screen, const splade_cpu_packed *pk, const int32_t *ids,
                            const int32_t *offsets, int32_t B, float *out_dense, int threads)
{
    if (!m || !ids || !offsets || !out_dense || B < 1)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_forward_cpu: bad arguments");
    int32_t max_len;
    int rc = check_input(m, ids, offsets, B, &max_len);
    if (rc)
        return rc;
    int nthreads = threads > 0 ? threads : openblas_get_num_threads();
    nthreads = nthreads < 1 ? 1 : nthreads;
    workspace w;
    const splade_config *c = &m->cfg;
    rc = alloc_ws(&w, (size_t)offsets[B], (size_t)c->hidden_size, (size_t)c->intermediate_size, max_len,
                  c->hidden_size / c->num_heads, nthreads, bf != NULL && !q8, q8 != NULL);
    if (!rc && bf && !q8)
        rc = alloc_heads(&w, offsets, B, c->hidden_size, c->hidden_size / c->num_heads);
    if (rc)
        rc = splade_fail(SPLADE_ERR_NOMEM, "forward: workspace for %d tokens", (int)offsets[B]);
    else
        rc = run(m, q8 ? NULL : bf, q8, q8 || bf ? NULL : screen, q8 || bf ? NULL : pk, ids, offsets, B, out_dense,
                 nthreads, &w);
    free_ws(&w);
    return rc;
}
