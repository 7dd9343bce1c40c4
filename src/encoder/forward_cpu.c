/* BERT (post-LayerNorm) forward in fp32 over packed sequences, GEMMs through OpenBLAS.
 * Mirrors transformers' BertForMaskedLM in eval mode so outputs agree to ~1e-5. */
#include "encoder/forward_cpu.h"
#include "splade.h"
#include "splade/lmhead.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    float *x, *q, *k, *v, *ctx, *tmp, *ffn, *scores;
} workspace;

/* y[T,N] = x[T,K] W[N,K]^T + b (+ y when accumulate: the residual already sits in y). */
static void linear(const float *x, int32_t T, int32_t K, const float *W, const float *b, int32_t N,
                   float *y, int accumulate)
{
    for (int32_t t = 0; t < T; t++) {
        float *row = y + (size_t)t * N;
        if (accumulate)
            for (int32_t j = 0; j < N; j++)
                row[j] += b[j];
        else
            memcpy(row, b, (size_t)N * sizeof *b);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, N, K, 1.0f, x, K, W, K, 1.0f, y, N);
}

static void layer_norm(float *x, int32_t T, int32_t H, const float *g, const float *b, float eps)
{
    for (int32_t t = 0; t < T; t++) {
        float *r = x + (size_t)t * H;
        double mean = 0.0, var = 0.0;
        for (int32_t j = 0; j < H; j++)
            mean += r[j];
        mean /= H;
        for (int32_t j = 0; j < H; j++)
            var += (r[j] - mean) * (r[j] - mean);
        float inv = (float)(1.0 / sqrt(var / H + eps));
        for (int32_t j = 0; j < H; j++)
            r[j] = (float)((r[j] - mean) * inv) * g[j] + b[j];
    }
}

/* Exact GELU, as BERT's "gelu": x * Phi(x) with erf, not the tanh approximation. */
static void gelu(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * (float)M_SQRT1_2));
}

static void softmax_rows(float *s, int32_t L)
{
    for (int32_t i = 0; i < L; i++) {
        float *r = s + (size_t)i * L, mx = r[0], sum = 0.0f;
        for (int32_t j = 1; j < L; j++)
            mx = r[j] > mx ? r[j] : mx;
        for (int32_t j = 0; j < L; j++)
            sum += r[j] = expf(r[j] - mx);
        float inv = 1.0f / sum;
        for (int32_t j = 0; j < L; j++)
            r[j] *= inv;
    }
}

/* Scaled dot-product attention of every (sequence, head): a sequence only sees its own rows. */
static void attention(const splade_config *c, const int32_t *offsets, int32_t B, workspace *w)
{
    const int32_t H = c->hidden_size, dh = H / c->num_heads;
    const float scale = 1.0f / sqrtf((float)dh);
    for (int32_t b = 0; b < B; b++) {
        const int32_t s0 = offsets[b], L = offsets[b + 1] - offsets[b];
        for (int32_t h = 0; h < c->num_heads; h++) {
            size_t at = (size_t)s0 * H + (size_t)h * dh;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, L, dh, scale, w->q + at, H, w->k + at,
                        H, 0.0f, w->scores, L);
            softmax_rows(w->scores, L);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, dh, L, 1.0f, w->scores, L, w->v + at,
                        H, 0.0f, w->ctx + at, H);
        }
    }
}

static void layer(const splade_config *c, const splade_layer *p, const int32_t *offsets, int32_t B,
                  int32_t T, workspace *w)
{
    const int32_t H = c->hidden_size, F = c->intermediate_size;
    linear(w->x, T, H, p->q_w, p->q_b, H, w->q, 0);
    linear(w->x, T, H, p->k_w, p->k_b, H, w->k, 0);
    linear(w->x, T, H, p->v_w, p->v_b, H, w->v, 0);
    attention(c, offsets, B, w);
    memcpy(w->tmp, w->x, (size_t)T * H * sizeof *w->x); /* residual */
    linear(w->ctx, T, H, p->attn_out_w, p->attn_out_b, H, w->tmp, 1);
    layer_norm(w->tmp, T, H, p->ln1_g, p->ln1_b, c->layer_norm_eps);
    linear(w->tmp, T, H, p->ffn_in_w, p->ffn_in_b, F, w->ffn, 0);
    gelu(w->ffn, (size_t)T * F);
    memcpy(w->x, w->tmp, (size_t)T * H * sizeof *w->x); /* residual */
    linear(w->ffn, T, F, p->ffn_out_w, p->ffn_out_b, H, w->x, 1);
    layer_norm(w->x, T, H, p->ln2_g, p->ln2_b, c->layer_norm_eps);
}

static void embed(const splade_model *m, const int32_t *ids, const int32_t *offsets, int32_t B, float *x)
{
    const int32_t H = m->cfg.hidden_size;
    for (int32_t b = 0; b < B; b++)
        for (int32_t t = offsets[b]; t < offsets[b + 1]; t++) {
            const float *we = m->word_emb + (size_t)ids[t] * H;
            const float *pe = m->pos_emb + (size_t)(t - offsets[b]) * H;
            float *r = x + (size_t)t * H;
            for (int32_t j = 0; j < H; j++)
                r[j] = we[j] + pe[j] + m->type_emb[j]; /* token type 0 */
        }
    layer_norm(x, offsets[B], H, m->emb_ln_g, m->emb_ln_b, m->cfg.layer_norm_eps);
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

static int alloc_ws(workspace *w, size_t T, size_t H, size_t F, size_t L)
{
    memset(w, 0, sizeof *w);
    float **bufs[] = {&w->x, &w->q, &w->k, &w->v, &w->ctx, &w->tmp};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (!(*bufs[i] = malloc(T * H * sizeof(float))))
            return SPLADE_ERR_NOMEM;
    w->ffn = malloc(T * F * sizeof(float));
    w->scores = malloc(L * L * sizeof(float));
    return w->ffn && w->scores ? SPLADE_OK : SPLADE_ERR_NOMEM;
}

static void free_ws(workspace *w)
{
    float *bufs[] = {w->x, w->q, w->k, w->v, w->ctx, w->tmp, w->ffn, w->scores};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        free(bufs[i]);
}

static int run(const splade_model *m, const int32_t *ids, const int32_t *offsets, int32_t B, float *out,
               int threads, workspace *w)
{
    const splade_config *c = &m->cfg;
    const int32_t T = offsets[B], H = c->hidden_size;
    embed(m, ids, offsets, B, w->x);
    for (int32_t l = 0; l < c->num_layers; l++)
        layer(c, &m->layers[l], offsets, B, T, w);
    /* MLM transform: dense + GELU + LayerNorm, into w->q (free now). */
    linear(w->x, T, H, m->mlm_dense_w, m->mlm_dense_b, H, w->q, 0);
    gelu(w->q, (size_t)T * H);
    layer_norm(w->q, T, H, m->mlm_ln_g, m->mlm_ln_b, c->layer_norm_eps);
    int32_t *len = malloc((size_t)B * sizeof *len);
    if (!len)
        return splade_fail(SPLADE_ERR_NOMEM, "forward: %d lengths", (int)B);
    for (int32_t b = 0; b < B; b++)
        len[b] = offsets[b + 1] - offsets[b];
    int rc = splade_lmhead_cpu(w->q, offsets, len, B, H, m->decoder_w, m->decoder_b, c->vocab_size, out,
                               threads);
    free(len);
    return rc;
}

int splade_forward_cpu(const splade_model *m, const int32_t *ids, const int32_t *offsets, int32_t B,
                       float *out_dense, int threads)
{
    if (!m || !ids || !offsets || !out_dense || B < 1)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_forward_cpu: bad arguments");
    int32_t max_len;
    int rc = check_input(m, ids, offsets, B, &max_len);
    if (rc)
        return rc;
    if (threads > 0)
        openblas_set_num_threads(threads);
    workspace w;
    const splade_config *c = &m->cfg;
    rc = alloc_ws(&w, (size_t)offsets[B], (size_t)c->hidden_size, (size_t)c->intermediate_size,
                  (size_t)max_len);
    if (rc)
        rc = splade_fail(SPLADE_ERR_NOMEM, "forward: workspace for %d tokens", (int)offsets[B]);
    else
        rc = run(m, ids, offsets, B, out_dense, threads, &w);
    free_ws(&w);
    return rc;
}
