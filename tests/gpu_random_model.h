/* A random-weight BERT masked-LM built directly in memory (no files): used by
 * tests/test_encoder_backends.c, tests/test_encoder_cpu.c and bench/bench_encoder_gpu.c. Header-only, test/bench
 * use only.
 *
 * Scales keep every stage in a useful range: embeddings ~N(0,1) (LayerNorm follows), linear
 * weights uniform with std 1/sqrt(fan_in) (activations keep unit scale), LayerNorm gains 1±0.1,
 * decoder std 2/sqrt(H) so that logits spread over a few units and top-k terms are well defined. */
#ifndef SPLADE_GPU_RANDOM_MODEL_H
#define SPLADE_GPU_RANDOM_MODEL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encoder/model_internal.h"
#include "splade/model.h"
#include "splade/sparse.h"

static inline uint64_t rm_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* B random token sequences of the given lengths, packed: *off [B+1] offsets, *ids their ids in
 * [0, V). Both malloc'ed; the caller frees them. */
static inline void rm_make_batch(const int *lens, int B, int V, uint64_t seed, int32_t **ids, int32_t **off)
{
    *off = (int32_t *)malloc((B + 1) * sizeof **off);
    (*off)[0] = 0;
    for (int b = 0; b < B; b++)
        (*off)[b + 1] = (*off)[b] + lens[b];
    *ids = (int32_t *)malloc(((size_t)(*off)[B] + 1) * sizeof **ids);
    uint64_t s = seed * 2654435761u + 7;
    for (int32_t t = 0; t < (*off)[B]; t++)
        (*ids)[t] = (int32_t)(rm_next(&s) % (uint64_t)V);
}

/* uniform in [-1, 1) */
static inline float rm_unit(uint64_t *s) { return (float)((rm_next(s) >> 40) * (2.0 / 16777216.0) - 1.0); }

static inline float *rm_take(float **pool, size_t n, uint64_t *s, float mean, float std)
{
    float *p = *pool;
    const float a = std * 1.7320508f;  /* uniform [-a, a) has this std */
    for (size_t i = 0; i < n; i++)
        p[i] = mean + a * rm_unit(s);
    *pool += n;
    return p;
}

/* Fills *m (its cfg must be set: vocab, hidden, layers, heads, intermediate, max_position,
 * type_vocab, eps, tie_word_embeddings). Returns 0, or -1 when out of host memory.
 * Free with rm_free(). */
static inline int rm_build(splade_model *m, uint64_t seed)
{
    const splade_config c = m->cfg;
    const size_t H = (size_t)c.hidden_size, I = (size_t)c.intermediate_size, V = (size_t)c.vocab_size,
                 P = (size_t)c.max_position, T = (size_t)c.type_vocab_size, L = (size_t)c.num_layers;
    size_t n = V * H + P * H + T * H + 2 * H;
    n += L * (4 * H * H + 4 * H + 2 * H * I + I + H + 4 * H);
    n += H * H + H + 2 * H + V;
    if (!c.tie_word_embeddings)
        n += V * H;
    float *pool = (float *)malloc(n * sizeof(float));
    splade_layer *layers = (splade_layer *)calloc(L ? L : 1, sizeof(splade_layer));
    if (!pool || !layers) {
        free(pool);
        free(layers);
        return -1;
    }
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    float *p = pool;
    const float wh = 1.0f / sqrtf((float)H), wi = 1.0f / sqrtf((float)I);
    m->word_emb = rm_take(&p, V * H, &s, 0.f, 1.f);
    m->pos_emb = rm_take(&p, P * H, &s, 0.f, 0.5f);
    m->type_emb = rm_take(&p, T * H, &s, 0.f, 0.5f);
    m->emb_ln_g = rm_take(&p, H, &s, 1.f, 0.1f);
    m->emb_ln_b = rm_take(&p, H, &s, 0.f, 0.1f);
    for (size_t l = 0; l < L; l++) {
        splade_layer *y = &layers[l];
        y->q_w = rm_take(&p, H * H, &s, 0.f, wh);
        y->q_b = rm_take(&p, H, &s, 0.f, 0.1f);
        y->k_w = rm_take(&p, H * H, &s, 0.f, wh);
        y->k_b = rm_take(&p, H, &s, 0.f, 0.1f);
        y->v_w = rm_take(&p, H * H, &s, 0.f, wh);
        y->v_b = rm_take(&p, H, &s, 0.f, 0.1f);
        y->attn_out_w = rm_take(&p, H * H, &s, 0.f, wh);
        y->attn_out_b = rm_take(&p, H, &s, 0.f, 0.1f);
        y->ln1_g = rm_take(&p, H, &s, 1.f, 0.1f);
        y->ln1_b = rm_take(&p, H, &s, 0.f, 0.1f);
        y->ffn_in_w = rm_take(&p, I * H, &s, 0.f, wh);
        y->ffn_in_b = rm_take(&p, I, &s, 0.f, 0.1f);
        y->ffn_out_w = rm_take(&p, H * I, &s, 0.f, wi);
        y->ffn_out_b = rm_take(&p, H, &s, 0.f, 0.1f);
        y->ln2_g = rm_take(&p, H, &s, 1.f, 0.1f);
        y->ln2_b = rm_take(&p, H, &s, 0.f, 0.1f);
    }
    m->layers = layers;
    m->mlm_dense_w = rm_take(&p, H * H, &s, 0.f, wh);
    m->mlm_dense_b = rm_take(&p, H, &s, 0.f, 0.1f);
    m->mlm_ln_g = rm_take(&p, H, &s, 1.f, 0.1f);
    m->mlm_ln_b = rm_take(&p, H, &s, 0.f, 0.1f);
    m->decoder_b = rm_take(&p, V, &s, 0.f, 0.5f);
    m->decoder_w = c.tie_word_embeddings ? m->word_emb : rm_take(&p, V * H, &s, 0.f, 2.0f * wh);
    if (c.tie_word_embeddings) /* tied: the embedding is also the decoder; logits std ~0.5 sqrt(H) */
        for (size_t i = 0; i < V * H; i++)
            m->word_emb[i] *= 0.5f;
    m->storage_ = pool;
    return 0;
}

/* A random model's output is dense (about half the vocabulary positive per document), unlike a
 * trained SPLADE model's (~200 terms): benchmarks that must see real sparsity shift every decoder
 * bias by one constant c, chosen from vectors the caller encoded with this model (top_k >= target):
 * a term's weight is log1p(relu(x)) of its max logit x, so x = expm1(w), and c = -(median over the
 * documents of their target-th largest x) leaves about `target` terms per document. Returns c. */
static inline int rm_cmp_desc(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

static inline float rm_shift_to_sparsity(splade_model *m, const splade_sparse *v, int n, int target)
{
    float *kth = (float *)malloc((size_t)(n > 0 ? n : 1) * sizeof *kth);
    int used = 0;
    for (int d = 0; d < n; d++) {
        if (v[d].n < target)
            continue; /* already sparser than the target: says nothing about the cut */
        float *w = (float *)malloc((size_t)v[d].n * sizeof *w);
        memcpy(w, v[d].weights, (size_t)v[d].n * sizeof *w);
        qsort(w, (size_t)v[d].n, sizeof *w, rm_cmp_desc);
        kth[used++] = expm1f(w[target - 1]);
        free(w);
    }
    float c = 0.f;
    if (used) {
        qsort(kth, (size_t)used, sizeof *kth, rm_cmp_desc);
        c = -kth[used / 2];
        for (int t = 0; t < m->cfg.vocab_size; t++)
            m->decoder_b[t] += c;
    }
    free(kth);
    return c;
}

static inline void rm_free(splade_model *m)
{
    free(m->storage_);
    free(m->layers);
    m->storage_ = NULL;
    m->layers = NULL;
}

static inline splade_config rm_config(int vocab, int hidden, int layers, int heads, int inter, int max_pos, int tied)
{
    splade_config c;
    memset(&c, 0, sizeof c);
    c.vocab_size = vocab;
    c.hidden_size = hidden;
    c.num_layers = layers;
    c.num_heads = heads;
    c.intermediate_size = inter;
    c.max_position = max_pos;
    c.type_vocab_size = 2;
    c.pad_token_id = 0;
    c.layer_norm_eps = 1e-12f;
    c.tie_word_embeddings = tied != 0;
    c.do_lower_case = 1;
    return c;
}

#endif
