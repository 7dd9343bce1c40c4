/* The SPLADE encoder (BERT forward + LM head, [B, V] output) on every backend and precision, one case
 * table (ggml's test-backend-ops pattern):
 *
 *   cpu       splade_forward_cpu (fp32) against a float64 forward written here: rel-L2 <= 1e-5 and
 *             the same top-50 terms up to ties within 1e-5, every sequence
 *   gpu-bf16  splade_gpu_encoder (bf16) against the float64 forward: rel-L2 <= 1e-2 on the LM head's
 *             input and on [B, V], top-50 overlap mean >= 0.95 and min >= 0.8
 *   gpu-fp32  splade_gpu_encoder in SPLADE_PRECISION_FP32 against splade_forward_cpu: rel-L2 <= 1e-5 and
 *             the same top-50 terms up to ties within 1e-5, every sequence
 *
 * Cases: random models built in memory (tests/gpu_random_model.h; head sizes 32, 64, 128; tied and
 * untied decoders; lengths 1, 2, tile edges 63/64/65 and 127/128/129, the maximum position, B = 1,
 * sequences longer than the GPU attention's ring of K/V stages, once the naive head with the FFN in
 * slices of 128 tokens); one encoder through growing and shrinking batches; invalid input; and on the
 * GPU backends splade-tiny on SciFact documents against the CPU (bf16: rel-L2 <= 2e-2 and >= 99% of
 * documents with the same top-50 up to near-ties within 0.02; fp32: rel-L2 <= 1e-5 and >= 99% strictly
 * the same top-50). The CPU's own splade-tiny check is against transformers (tests/test_encoder_cpu.c).
 * One cmocka test per (case, backend), named "<case>/<backend>"; a case's references are computed once
 * for its backends. GPU backends skip visibly without a GPU. Tolerances and measured figures:
 * docs/GPU_ENCODER.md.
 *
 * SPLADE_GPU_TEST_SMALL=1: random models only (sanitizers). SPLADE_TEST_FILTER: a cmocka name pattern
 * (e.g. "test_long_sequences/gpu-bf16"). SPLADE_TINY_TEST_DOCS: SciFact documents (default 1024). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/settings.h"
#include "encoder/forward_cpu.h"
#include "encoder/gpu_encoder.h"
#include "encoder/model_internal.h"
#include "splade.h"
#include "splade/corpus.h"
#include "splade/model.h"
#include "splade/tokenizer.h"

#include "gpu_random_model.h"
#include "gpu_test_util.h"
#include "topk_agree.h"

#ifdef SPLADE_HAVE_CUDA
#include "encoder/gpu_encoder_internal.h"
#endif

/* ---- backends ---------------------------------------------------------------------------------- */

enum { BK_CPU, BK_GPU_BF16, BK_GPU_FP32, BK_N };
typedef struct {
    const char *name;
    int gpu;
    double dense_tol;  /* rel-L2 of [B, V] */
    double hidden_tol; /* rel-L2 of the LM head's input against float64 (0: not checked) */
} backend;
static const backend backends[BK_N] = {
    {"cpu", 0, 1e-5, 0},
    {"gpu-bf16", 1, 1e-2, 1e-2},
    {"gpu-fp32", 1, 1e-5, 0},
};

/* 1 when the backend can run here; else prints why (the test then calls skip(), visibly). */
static int gpu_or_skip(const backend *bk)
{
    static int probed = -1;
    static char why[256];
    if (!bk->gpu)
        return 1;
    if (probed < 0)
        probed = splade_gpu_probe(why, sizeof why);
    if (!probed)
        printf("  %s: skipped: no GPU (%s)\n", bk->name, why);
    return probed;
}

/* ---- the random-model case table --------------------------------------------------------------- */

typedef struct {
    int V, H, L, heads, I, P, tied, B;
    int lens[8];
    uint64_t seed;
} rm_case;

typedef struct {
    const char *name;
    int n;
    rm_case c[3];
    int naive_ffn_slices; /* GPU: also run c[0] with the naive head kind and SPLADE_GPU_FFN_CHUNK=128 */
} rm_test;

static const rm_test rm_tests[] = {
    {"test_head32_varlen", 1, {{1500, 96, 2, 3, 384, 128, 1, 8, {2, 64, 37, 65, 1, 96, 128, 5}, 11}}, 0},
    {"test_head64_varlen", 1, {{3000, 128, 3, 2, 512, 130, 1, 7, {130, 2, 17, 63, 64, 129, 3}, 22}}, 1},
    {"test_head128_untied", 1, {{1000, 256, 2, 2, 1024, 80, 0, 4, {80, 2, 33, 79}, 33}}, 0},
    /* head size 32 (4 heads); one sequence of 1, of 2 and of the maximum position */
    {"test_batch_of_one", 3,
     {{2000, 128, 2, 4, 512, 200, 1, 1, {1}, 44}, {2000, 128, 2, 4, 512, 200, 1, 1, {2}, 46},
      {2000, 128, 2, 4, 512, 200, 1, 1, {200}, 45}},
     0},
    /* head size 64 then 128, maximum positions 512 and 320 */
    {"test_long_sequences", 2,
     {{2000, 128, 2, 2, 512, 512, 1, 6, {512, 3, 300, 257, 129, 450}, 55},
      {1000, 256, 1, 2, 512, 320, 0, 4, {320, 193, 64, 1}, 66}},
     0},
};
#define RM_NTESTS ((int)(sizeof rm_tests / sizeof *rm_tests))

/* ---- float64 reference forward ----------------------------------------------------------------- */

static void ref_linear(const double *x, size_t rows, size_t in, const float *W, const float *b, size_t out, double *y)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t o = 0; o < out; o++) {
            const float *w = W + o * in;
            const double *xr = x + r * in;
            double s = b ? b[o] : 0.0;
            for (size_t i = 0; i < in; i++)
                s += xr[i] * w[i];
            y[r * out + o] = s;
        }
}

static void ref_ln(double *x, size_t rows, size_t H, const float *g, const float *b, double eps)
{
    for (size_t r = 0; r < rows; r++) {
        double *v = x + r * H, mean = 0, var = 0;
        for (size_t i = 0; i < H; i++)
            mean += v[i];
        mean /= (double)H;
        for (size_t i = 0; i < H; i++)
            var += (v[i] - mean) * (v[i] - mean);
        var /= (double)H;
        const double rstd = 1.0 / sqrt(var + eps);
        for (size_t i = 0; i < H; i++)
            v[i] = (v[i] - mean) * rstd * g[i] + b[i];
    }
}

static double ref_gelu(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

/* Self-attention of one layer over the packed sequences: cx = softmax(q·kᵀ/√d)·v per head. */
static void ref_attention(const splade_config *c, const int32_t *off, int B, const double *q, const double *k,
                          const double *v, double *cx, double *sc)
{
    const size_t H = c->hidden_size, nh = c->num_heads, d = H / nh;
    for (int b = 0; b < B; b++) {
        const size_t s0 = (size_t)(off[b] - off[0]), len = (size_t)(off[b + 1] - off[b]);
        for (size_t h = 0; h < nh; h++)
            for (size_t i = 0; i < len; i++) {
                double mx = -INFINITY, sum = 0;
                for (size_t j = 0; j < len; j++) {
                    double s = 0;
                    for (size_t e = 0; e < d; e++)
                        s += q[(s0 + i) * H + h * d + e] * k[(s0 + j) * H + h * d + e];
                    sc[j] = s / sqrt((double)d);
                    mx = sc[j] > mx ? sc[j] : mx;
                }
                for (size_t j = 0; j < len; j++)
                    sum += (sc[j] = exp(sc[j] - mx));
                for (size_t e = 0; e < d; e++) {
                    double o = 0;
                    for (size_t j = 0; j < len; j++)
                        o += sc[j] * v[(s0 + j) * H + h * d + e];
                    cx[(s0 + i) * H + h * d + e] = o / sum;
                }
            }
    }
}

/* dense[b][w] = log1p(relu(max over the sequence's rows of hid·W[w] + bias[w])). */
static void ref_head(const splade_model *m, const int32_t *off, int B, const double *hid, double *dense)
{
    const size_t H = m->cfg.hidden_size, V = m->cfg.vocab_size;
    const float *W = m->decoder_w ? m->decoder_w : m->word_emb;
    for (int b = 0; b < B; b++)
        for (size_t w = 0; w < V; w++) {
            double mx = -INFINITY;
            for (int32_t p = 0; p < off[b + 1] - off[b]; p++) {
                const double *h = hid + (size_t)(off[b] - off[0] + p) * H;
                double s = m->decoder_b ? m->decoder_b[w] : 0.0;
                for (size_t i = 0; i < H; i++)
                    s += h[i] * W[w * H + i];
                mx = s > mx ? s : mx;
            }
            dense[(size_t)b * V + w] = log1p(mx > 0 ? mx : 0);
        }
}

/* hid [T, H]: the MLM transform's output (the LM head's input); dense [B, V]. */
static void ref_forward(const splade_model *m, const int32_t *ids, const int32_t *off, int B, double *hid,
                        double *dense)
{
    const splade_config c = m->cfg;
    const size_t H = c.hidden_size, I = c.intermediate_size;
    const size_t T = (size_t)(off[B] - off[0]);
    double *x = malloc(T * H * sizeof *x), *q = malloc(T * H * sizeof *q), *k = malloc(T * H * sizeof *k),
           *v = malloc(T * H * sizeof *v), *cx = malloc(T * H * sizeof *cx), *t2 = malloc(T * H * sizeof *t2),
           *u = malloc(T * I * sizeof *u), *sc = malloc((size_t)c.max_position * sizeof *sc);
    assert_true(x && q && k && v && cx && t2 && u && sc);
    for (int b = 0; b < B; b++)
        for (int32_t p = 0; p < off[b + 1] - off[b]; p++) {
            const size_t t = (size_t)(off[b] - off[0] + p);
            const int32_t id = ids[off[b] + p];
            for (size_t i = 0; i < H; i++)
                x[t * H + i] = (double)m->word_emb[(size_t)id * H + i] + m->pos_emb[(size_t)p * H + i] + m->type_emb[i];
        }
    ref_ln(x, T, H, m->emb_ln_g, m->emb_ln_b, c.layer_norm_eps);
    for (int l = 0; l < c.num_layers; l++) {
        const splade_layer *y = &m->layers[l];
        ref_linear(x, T, H, y->q_w, y->q_b, H, q);
        ref_linear(x, T, H, y->k_w, y->k_b, H, k);
        ref_linear(x, T, H, y->v_w, y->v_b, H, v);
        ref_attention(&c, off, B, q, k, v, cx, sc);
        ref_linear(cx, T, H, y->attn_out_w, y->attn_out_b, H, t2);
        for (size_t i = 0; i < T * H; i++)
            x[i] += t2[i];
        ref_ln(x, T, H, y->ln1_g, y->ln1_b, c.layer_norm_eps);
        ref_linear(x, T, H, y->ffn_in_w, y->ffn_in_b, I, u);
        for (size_t i = 0; i < T * I; i++)
            u[i] = ref_gelu(u[i]);
        ref_linear(u, T, I, y->ffn_out_w, y->ffn_out_b, H, t2);
        for (size_t i = 0; i < T * H; i++)
            x[i] += t2[i];
        ref_ln(x, T, H, y->ln2_g, y->ln2_b, c.layer_norm_eps);
    }
    ref_linear(x, T, H, m->mlm_dense_w, m->mlm_dense_b, H, hid);
    for (size_t i = 0; i < T * H; i++)
        hid[i] = ref_gelu(hid[i]);
    ref_ln(hid, T, H, m->mlm_ln_g, m->mlm_ln_b, c.layer_norm_eps);
    ref_head(m, off, B, hid, dense);
    free(x), free(q), free(k), free(v), free(cx), free(t2), free(u), free(sc);
}

/* ---- comparisons ------------------------------------------------------------------------------- */

/* rel-L2 of a against ref (float64 or float) over n values; counts non-finite entries of a. */
static double rel_l2(const float *a, const double *ref_d, const float *ref_f, size_t n, int *nonfinite)
{
    double num = 0, den = 0;
    *nonfinite = 0;
    for (size_t i = 0; i < n; i++) {
        const double r = ref_d ? ref_d[i] : (double)ref_f[i];
        if (!isfinite(a[i]))
            (*nonfinite)++;
        num += (a[i] - r) * (a[i] - r);
        den += r * r;
    }
    return sqrt(num / (den > 0 ? den : 1));
}

static const double *g_sort_key;
UNUSED_OK static int cmp_idx(const void *a, const void *b)
{
    const double x = g_sort_key[*(const int *)a], y = g_sort_key[*(const int *)b];
    return (x < y) - (x > y);
}

/* Fraction of the reference's top-k terms (with weight > 0) found in the output's top-k. */
UNUSED_OK static double topk_overlap(const float *out, const double *ref, int V, int k)
{
    int *ri = malloc(V * sizeof *ri), *gi = malloc(V * sizeof *gi);
    double *gd = malloc(V * sizeof *gd);
    assert_true(ri && gi && gd);
    for (int i = 0; i < V; i++)
        ri[i] = gi[i] = i, gd[i] = out[i];
    g_sort_key = ref;
    qsort(ri, V, sizeof *ri, cmp_idx);
    g_sort_key = gd;
    qsort(gi, V, sizeof *gi, cmp_idx);
    int n = 0, hit = 0;
    for (int i = 0; i < k && i < V; i++) {
        if (ref[ri[i]] <= 0)
            break;
        n++;
        for (int j = 0; j < k && j < V; j++)
            if (gi[j] == ri[i]) {
                hit++;
                break;
            }
    }
    free(ri), free(gi), free(gd);
    return n ? (double)hit / n : 1.0;
}

/* ---- one batch: references and the check of each backend -------------------------------------- */

typedef struct {
    const splade_model *m;
    const int32_t *ids, *off;
    int B;
    size_t T;
    double *ref_h, *ref_d; /* float64 forward (NULL until needed) */
    float *cpu;            /* splade_forward_cpu's output (NULL until needed) */
} batch;

static void need_ref64(batch *bt)
{
    if (bt->ref_d)
        return;
    bt->ref_h = malloc(bt->T * bt->m->cfg.hidden_size * sizeof *bt->ref_h);
    bt->ref_d = malloc((size_t)bt->B * bt->m->cfg.vocab_size * sizeof *bt->ref_d);
    assert_true(bt->ref_h && bt->ref_d);
    ref_forward(bt->m, bt->ids, bt->off, bt->B, bt->ref_h, bt->ref_d);
}

static void need_cpu(batch *bt)
{
    if (bt->cpu)
        return;
    bt->cpu = malloc((size_t)bt->B * bt->m->cfg.vocab_size * sizeof *bt->cpu);
    assert_non_null(bt->cpu);
    const int rc = splade_forward_cpu(bt->m, bt->ids, bt->off, bt->B, bt->cpu, 0);
    if (rc != SPLADE_OK)
        fail_msg("cpu forward: %s: %s", splade_strerror(rc), splade_error_detail());
}

static void batch_free(batch *bt)
{
    free(bt->ref_h), free(bt->ref_d), free(bt->cpu);
    bt->ref_h = bt->ref_d = NULL;
    bt->cpu = NULL;
}

/* Same top-50 terms, up to ties within tol, in every sequence of out against ref. */
static int topk_sets_all(const float *out, const float *ref, int B, int V, float tol, int *strict)
{
    int tolerant = 0;
    *strict = 0;
    for (int b = 0; b < B; b++) {
        int s1, s2, nr;
        ta_compare(out + (size_t)b * V, ref + (size_t)b * V, V, 50, tol, &s1, &s2, &nr);
        *strict += s1, tolerant += s2;
    }
    return tolerant;
}

static void print_shape(const batch *bt, const backend *bk)
{
    const splade_config *c = &bt->m->cfg;
    printf("  %-8s H=%d heads=%d L=%d V=%d %s B=%d T=%zu:", bk->name, c->hidden_size, c->num_heads, c->num_layers,
           c->vocab_size, c->tie_word_embeddings ? "tied" : "untied", bt->B, bt->T);
}

static void check_cpu(batch *bt, const backend *bk)
{
    const int V = bt->m->cfg.vocab_size;
    need_ref64(bt);
    need_cpu(bt);
    float *ref = malloc((size_t)bt->B * V * sizeof *ref);
    assert_non_null(ref);
    for (size_t i = 0; i < (size_t)bt->B * V; i++)
        ref[i] = (float)bt->ref_d[i];
    int bad, strict;
    const double e = rel_l2(bt->cpu, bt->ref_d, NULL, (size_t)bt->B * V, &bad);
    const int tol = topk_sets_all(bt->cpu, ref, bt->B, V, 1e-5f, &strict);
    print_shape(bt, bk);
    printf(" vs float64 rel-L2 %.2e, same top-50 %d/%d strict, %d/%d up to ties within 1e-5\n", e, strict, bt->B, tol,
           bt->B);
    free(ref);
    assert_int_equal(bad, 0);
    assert_true(e <= bk->dense_tol);
    assert_int_equal(tol, bt->B);
}

#ifdef SPLADE_HAVE_CUDA
static void check_gpu_bf16(batch *bt, const backend *bk, splade_gpu_encoder *g)
{
    const int V = bt->m->cfg.vocab_size, H = bt->m->cfg.hidden_size;
    need_ref64(bt);
    float *h = malloc(bt->T * H * sizeof *h), *d = malloc((size_t)bt->B * V * sizeof *d);
    assert_true(h && d);
    for (size_t i = 0; i < bt->T * H; i++)
        h[i] = NAN;
    int rc = splade_gpu_encoder_forward_hidden(g, bt->ids, bt->off, bt->B, h);
    if (rc != SPLADE_OK)
        fail_msg("forward_hidden: %s: %s", splade_strerror(rc), splade_error_detail());
    int bad;
    const double eh = rel_l2(h, bt->ref_h, NULL, bt->T * H, &bad);
    print_shape(bt, bk);
    printf(" hidden rel-L2 %.2e", eh);
    assert_int_equal(bad, 0);
    assert_true(eh <= bk->hidden_tol);
    for (size_t i = 0; i < (size_t)bt->B * V; i++)
        d[i] = NAN;
    rc = splade_gpu_encoder_forward(g, bt->ids, bt->off, bt->B, d);
    if (rc != SPLADE_OK)
        fail_msg("forward: %s: %s", splade_strerror(rc), splade_error_detail());
    const double ed = rel_l2(d, bt->ref_d, NULL, (size_t)bt->B * V, &bad);
    double ov = 0, ov_min = 1;
    for (int b = 0; b < bt->B; b++) {
        const double o = topk_overlap(d + (size_t)b * V, bt->ref_d + (size_t)b * V, V, 50);
        ov += o / bt->B;
        ov_min = o < ov_min ? o : ov_min;
    }
    printf(", dense rel-L2 %.2e, top-50 overlap mean %.3f min %.3f\n", ed, ov, ov_min);
    assert_int_equal(bad, 0);
    assert_true(ed <= bk->dense_tol);
    assert_true(ov >= 0.95);
    assert_true(ov_min >= 0.8);
    free(h), free(d);
}

static void check_gpu_fp32(batch *bt, const backend *bk, splade_gpu_encoder *g)
{
    const int V = bt->m->cfg.vocab_size;
    need_cpu(bt);
    float *d = malloc((size_t)bt->B * V * sizeof *d);
    assert_non_null(d);
    assert_int_equal(splade_gpu_encoder_precision(g), SPLADE_PRECISION_FP32);
    for (size_t i = 0; i < (size_t)bt->B * V; i++)
        d[i] = NAN;
    const int rc = splade_gpu_encoder_forward(g, bt->ids, bt->off, bt->B, d);
    if (rc != SPLADE_OK)
        fail_msg("forward fp32: %s: %s", splade_strerror(rc), splade_error_detail());
    int bad, strict;
    const double e = rel_l2(d, NULL, bt->cpu, (size_t)bt->B * V, &bad);
    const int tol = topk_sets_all(d, bt->cpu, bt->B, V, 1e-5f, &strict);
    print_shape(bt, bk);
    printf(" vs CPU rel-L2 %.2e, same top-50 %d/%d strict, %d/%d up to ties within 1e-5, device bytes %zu\n", e, strict,
           bt->B, tol, bt->B, splade_gpu_encoder_device_bytes(g));
    assert_int_equal(bad, 0);
    assert_true(e <= bk->dense_tol);
    assert_int_equal(tol, bt->B);
    free(d);
}
#endif

/* A backend with its encoder (GPU: created once, kept across batches). */
typedef struct {
    int id;
    void *g;
} runner;

static void runner_open(runner *r, int id, const splade_model *m, splade_lmhead_kind head)
{
    r->id = id;
    r->g = NULL;
    if (id == BK_CPU)
        return;
    splade_gpu_encoder *g = NULL;
    const splade_precision p = id == BK_GPU_FP32 ? SPLADE_PRECISION_FP32 : SPLADE_PRECISION_BF16;
    const int rc = splade_gpu_encoder_create_ex(m, head, p, &g);
    if (rc != SPLADE_OK)
        fail_msg("%s create: %s: %s", backends[id].name, splade_strerror(rc), splade_error_detail());
    r->g = g;
}

static void runner_check(runner *r, batch *bt)
{
    if (r->id == BK_CPU)
        check_cpu(bt, &backends[BK_CPU]);
#ifdef SPLADE_HAVE_CUDA
    else if (r->id == BK_GPU_BF16)
        check_gpu_bf16(bt, &backends[r->id], r->g);
    else
        check_gpu_fp32(bt, &backends[r->id], r->g);
#endif
}

static void runner_close(runner *r)
{
    splade_gpu_encoder_free(r->g);
    r->g = NULL;
}

/* ---- the random-model tests -------------------------------------------------------------------- */

/* A case's model and batch, kept for the next backend of the same case (references computed once). */
typedef struct {
    const rm_case *c;
    splade_model m;
    int32_t *ids, *off;
    batch bt;
} rm_state;
static rm_state g_rm[3];
static const rm_test *g_rm_test;

static void rm_release(void)
{
    for (int i = 0; i < 3; i++)
        if (g_rm[i].c) {
            batch_free(&g_rm[i].bt);
            rm_free(&g_rm[i].m);
            free(g_rm[i].ids), free(g_rm[i].off);
            memset(&g_rm[i], 0, sizeof g_rm[i]);
        }
    g_rm_test = NULL;
}

static rm_state *rm_get(const rm_test *t, int i)
{
    if (g_rm_test != t) {
        rm_release();
        g_rm_test = t;
    }
    rm_state *s = &g_rm[i];
    if (!s->c) {
        const rm_case *c = &t->c[i];
        s->c = c;
        s->m.cfg = rm_config(c->V, c->H, c->L, c->heads, c->I, c->P, c->tied);
        assert_int_equal(rm_build(&s->m, c->seed), 0);
        rm_make_batch(c->lens, c->B, c->V, c->seed + 1, &s->ids, &s->off);
        s->bt = (batch){&s->m, s->ids, s->off, c->B, (size_t)s->off[c->B], NULL, NULL, NULL};
    }
    return s;
}

typedef struct {
    int t, b; /* rm_tests index, backend */
} rm_pair;

static void test_rm_case(void **state)
{
    const rm_pair *p = *state;
    const rm_test *t = &rm_tests[p->t];
    if (!gpu_or_skip(&backends[p->b]))
        skip();
    for (int i = 0; i < t->n; i++) {
        rm_state *s = rm_get(t, i);
        runner r;
        runner_open(&r, p->b, &s->m, SPLADE_LMHEAD_FUSED);
        runner_check(&r, &s->bt);
        runner_close(&r);
    }
    if (t->naive_ffn_slices && backends[p->b].gpu) {
        printf("  naive head kind, FFN in slices of 128 tokens:\n");
        setenv("SPLADE_GPU_FFN_CHUNK", "128", 1);
        splade_settings_reload(); /* read at create */
        rm_state *s = rm_get(t, 0);
        runner r;
        runner_open(&r, p->b, &s->m, SPLADE_LMHEAD_NAIVE);
        unsetenv("SPLADE_GPU_FFN_CHUNK");
        splade_settings_reload();
        runner_check(&r, &s->bt);
        runner_close(&r);
    }
}

/* One encoder, growing then shrinking batches: workspaces grow and results stay right. */
static void test_reuse_and_growth(void **state)
{
    const int id = *(const int *)*state;
    if (!gpu_or_skip(&backends[id]))
        skip();
    splade_model m;
    memset(&m, 0, sizeof m);
    m.cfg = rm_config(800, 64, 2, 2, 256, 64, 1);
    assert_int_equal(rm_build(&m, 55), 0);
    runner r;
    runner_open(&r, id, &m, SPLADE_LMHEAD_FUSED);
    const int sizes[][3] = {{3, 2, 5}, {64, 64, 64}, {7, 1, 30}};
    for (int round = 0; round < 3; round++) {
        int lens[12];
        const int B = round == 1 ? 12 : 3;
        for (int b = 0; b < B; b++)
            lens[b] = sizes[round][b % 3];
        int32_t *ids, *off;
        rm_make_batch(lens, B, 800, 100 + round, &ids, &off);
        batch bt = {&m, ids, off, B, (size_t)off[B], NULL, NULL, NULL};
        printf("  round %d:", round);
        runner_check(&r, &bt);
        batch_free(&bt);
        free(ids), free(off);
    }
    runner_close(&r);
    rm_free(&m);
}

/* Bad input is refused the same way by every backend; a head size the GPU lacks is refused at create. */
static void test_invalid_input(void **state)
{
    const int id = *(const int *)*state;
    if (!gpu_or_skip(&backends[id]))
        skip();
    splade_model m;
    memset(&m, 0, sizeof m);
    m.cfg = rm_config(500, 64, 1, 2, 256, 32, 1);
    assert_int_equal(rm_build(&m, 66), 0);
    runner r;
    runner_open(&r, id, &m, SPLADE_LMHEAD_FUSED);
    float *out = malloc(3 * 500 * sizeof *out);
    int32_t ids[40] = {0};
    const int32_t bad_id_off[] = {0, 3}, empty_off[] = {0, 2, 2}, long_off[] = {0, 33};
#define FWD(off, B)                                                                                      \
    (id == BK_CPU ? splade_forward_cpu(&m, ids, off, B, out, 1) : splade_gpu_encoder_forward(r.g, ids, off, B, out))
    ids[1] = 500; /* outside the vocabulary */
    assert_int_equal(FWD(bad_id_off, 1), SPLADE_ERR_INVALID_ARG);
    ids[1] = 1;
    assert_int_equal(FWD(empty_off, 2), SPLADE_ERR_INVALID_ARG);
    assert_int_equal(FWD(long_off, 1), SPLADE_ERR_INVALID_ARG); /* past max_position */
    /* B = 0: nothing to do on the GPU; the CPU forward wants B >= 1 */
    assert_int_equal(FWD(bad_id_off, 0), id == BK_CPU ? SPLADE_ERR_INVALID_ARG : SPLADE_OK);
#undef FWD
    runner_close(&r);
    rm_free(&m);
    /* head size 48: the GPU attention has 32, 64 and 128; the CPU runs any */
    m.cfg = rm_config(500, 96, 1, 2, 256, 32, 1);
    assert_int_equal(rm_build(&m, 67), 0);
    if (id == BK_CPU) {
        const int32_t off[] = {0, 5};
        assert_int_equal(splade_forward_cpu(&m, ids, off, 1, out, 1), SPLADE_OK);
    } else {
        splade_gpu_encoder *g = NULL;
        const splade_precision p = id == BK_GPU_FP32 ? SPLADE_PRECISION_FP32 : SPLADE_PRECISION_BF16;
        assert_int_equal(splade_gpu_encoder_create_ex(&m, SPLADE_LMHEAD_FUSED, p, &g), SPLADE_ERR_UNSUPPORTED);
        assert_null(g);
    }
    rm_free(&m);
    free(out);
}

/* ---- GPU fp32: the weights really are fp32 on the device ---------------------------------------- */

/* Parameter floats of a model (what the fp32 encoder must hold, 4 bytes each) and its tensors. */
UNUSED_OK static size_t param_floats(const splade_config *c, int *tensors)
{
    const size_t H = c->hidden_size, I = c->intermediate_size, V = c->vocab_size, P = c->max_position,
                 L = c->num_layers;
    size_t n = V * H + P * H + 3 * H; /* word, pos, type 0, emb LN */
    n += L * (3 * H * H + 3 * H + H * H + H + I * H + I + H * I + H + 4 * H);
    n += H * H + 3 * H + V; /* MLM dense + LN, decoder bias */
    if (!c->tie_word_embeddings)
        n += V * H;
    *tensors = 5 + 12 * c->num_layers + 5 + !c->tie_word_embeddings;
    return n;
}

static void test_fp32_weights(void **state)
{
    (void)state;
    if (!gpu_or_skip(&backends[BK_GPU_FP32]))
        skip();
#ifdef SPLADE_HAVE_CUDA
    splade_model m;
    memset(&m, 0, sizeof m);
    m.cfg = rm_config(800, 64, 2, 2, 256, 64, 0);
    assert_int_equal(rm_build(&m, 55), 0);
    splade_gpu_encoder *g = NULL, *g16 = NULL;
    assert_int_equal(splade_gpu_encoder_create_ex(&m, SPLADE_LMHEAD_FUSED, (splade_precision)7, &g),
                     SPLADE_ERR_INVALID_ARG);
    assert_null(g);
    assert_int_equal(splade_gpu_encoder_create_ex(&m, SPLADE_LMHEAD_FUSED, SPLADE_PRECISION_FP32, &g), SPLADE_OK);
    assert_int_equal(splade_gpu_encoder_create(&m, SPLADE_LMHEAD_FUSED, &g16), SPLADE_OK);
    assert_int_equal(splade_gpu_encoder_precision(g16), SPLADE_PRECISION_BF16);
    int tensors;
    const size_t need = 4 * param_floats(&m.cfg, &tensors), w32 = splade_gpu_encoder_weight_bytes(g),
                 w16 = splade_gpu_encoder_weight_bytes(g16);
    printf("  weights on the device: fp32 %zu bytes (parameters: %zu), bf16 %zu\n", w32, need, w16);
    assert_true(w32 >= need && w32 <= need + 256 * (size_t)tensors);
    assert_true(w16 < w32);
    assert_true(splade_gpu_encoder_device_bytes(g) >= w32);
    splade_gpu_encoder_free(g16);
    splade_gpu_encoder_free(g);
    rm_free(&m);
#endif
}

/* ---- splade-tiny on SciFact documents: each GPU backend against the CPU forward ----------------- */

typedef struct {
    splade_model *m;
    int n, V;
    int32_t *ids, *off;
    float *cpu; /* [n, V] splade_forward_cpu, computed once for both GPU backends */
} tiny_docs;
static tiny_docs g_tiny;

static void tiny_release(void)
{
    free(g_tiny.ids), free(g_tiny.off), free(g_tiny.cpu);
    splade_model_free(g_tiny.m);
    memset(&g_tiny, 0, sizeof g_tiny);
}

enum { TINY_CHUNK = 64 };

/* splade-tiny, its CPU vectors of the first N SciFact documents; skips (visibly) without them. */
UNUSED_OK static tiny_docs *tiny_or_skip(void)
{
    if (g_tiny.m)
        return &g_tiny;
    if (getenv("SPLADE_GPU_TEST_SMALL")) { /* compute-sanitizer runs: random models only */
        printf("  (skipping: SPLADE_GPU_TEST_SMALL is set)\n");
        skip();
    }
    char mdir[1024], corpus[1024];
    const char *mc[] = {"cache/splade-tiny/config.json", NULL};
    const char *cc[] = {"../shared/data/scifact/corpus.jsonl", ".gpu/scifact/corpus.jsonl", ".gpu/genc/corpus.jsonl", NULL};
    if (!first_file("SPLADE_TINY_DIR", "/config.json", mc, mdir, sizeof mdir)) {
        printf("  (skipping: no splade-tiny ($SPLADE_TINY_DIR or cache/splade-tiny); `make models` fetches it)\n");
        skip();
    }
    char *slash = strrchr(mdir, '/');
    if (!getenv("SPLADE_TINY_DIR") && slash)
        *slash = 0;
    if (!first_file("SPLADE_SCIFACT", "", cc, corpus, sizeof corpus)) {
        printf("  (skipping: no SciFact corpus ($SPLADE_SCIFACT or ../shared/data/scifact/corpus.jsonl))\n");
        skip();
    }
    tiny_docs *t = &g_tiny;
    const int rc = splade_model_load(mdir, &t->m);
    if (rc != SPLADE_OK)
        fail_msg("load %s: %s", mdir, splade_error_detail());
    const char *nd = getenv("SPLADE_TINY_TEST_DOCS");
    const int N = nd && atoi(nd) > 0 ? atoi(nd) : 1024;
    const int maxlen = t->m->cfg.max_position < 256 ? t->m->cfg.max_position : 256;
    t->V = t->m->cfg.vocab_size;
    t->ids = malloc((size_t)N * maxlen * sizeof *t->ids);
    t->off = malloc((N + 1) * sizeof *t->off);
    assert_true(t->ids && t->off);
    splade_corpus_reader *r;
    assert_int_equal(splade_corpus_open(corpus, &r), SPLADE_OK);
    splade_doc d;
    t->off[0] = 0;
    while (t->n < N && splade_corpus_next(r, &d) == 1) {
        int32_t k = 0;
        assert_int_equal(splade_tokenize(t->m->tokenizer, d.text, d.text_len, maxlen, t->ids + t->off[t->n], &k),
                         SPLADE_OK);
        t->off[t->n + 1] = t->off[t->n] + k;
        t->n++;
    }
    splade_corpus_close(r);
    t->cpu = malloc((size_t)t->n * t->V * sizeof *t->cpu);
    assert_non_null(t->cpu);
    int32_t boff[TINY_CHUNK + 1];
    for (int b0 = 0; b0 < t->n; b0 += TINY_CHUNK) {
        const int B = t->n - b0 < TINY_CHUNK ? t->n - b0 : TINY_CHUNK;
        for (int b = 0; b <= B; b++)
            boff[b] = t->off[b0 + b] - t->off[b0];
        assert_int_equal(splade_forward_cpu(t->m, t->ids + t->off[b0], boff, B, t->cpu + (size_t)b0 * t->V, 0),
                         SPLADE_OK);
    }
    return t;
}

#ifdef SPLADE_HAVE_CUDA
/* All documents through one encoder in batches of TINY_CHUNK; asserts the backend's tolerances. */
static void tiny_on(const tiny_docs *t, splade_precision prec, splade_lmhead_kind head, const char *what, double tol,
                    float tie, double min_strict, double min_tolerant)
{
    splade_gpu_encoder *g = NULL;
    int rc = splade_gpu_encoder_create_ex(t->m, head, prec, &g);
    if (rc != SPLADE_OK)
        fail_msg("create %s: %s", what, splade_error_detail());
    float *gpu = malloc((size_t)TINY_CHUNK * t->V * sizeof *gpu);
    assert_non_null(gpu);
    int32_t boff[TINY_CHUNK + 1];
    double num = 0, den = 0, worst = 0;
    int strict = 0, tolerant = 0, near = 0, bad = 0;
    for (int b0 = 0; b0 < t->n; b0 += TINY_CHUNK) {
        const int B = t->n - b0 < TINY_CHUNK ? t->n - b0 : TINY_CHUNK;
        for (int b = 0; b <= B; b++)
            boff[b] = t->off[b0 + b] - t->off[b0];
        for (size_t i = 0; i < (size_t)B * t->V; i++)
            gpu[i] = NAN;
        rc = splade_gpu_encoder_forward(g, t->ids + t->off[b0], boff, B, gpu);
        if (rc != SPLADE_OK)
            fail_msg("forward %s: %s: %s", what, splade_strerror(rc), splade_error_detail());
        for (int b = 0; b < B; b++) {
            const float *x = gpu + (size_t)b * t->V, *y = t->cpu + (size_t)(b0 + b) * t->V;
            double dn = 0, dd = 0;
            for (int v = 0; v < t->V; v++) {
                bad += !isfinite(x[v]);
                dn += ((double)x[v] - y[v]) * ((double)x[v] - y[v]);
                dd += (double)y[v] * y[v];
            }
            num += dn, den += dd;
            const double e = sqrt(dn / (dd > 0 ? dd : 1));
            worst = e > worst ? e : worst;
            int s1, s2, nr;
            ta_compare(x, y, t->V, 50, tie, &s1, &s2, &nr);
            strict += s1, tolerant += s2, near += nr;
        }
    }
    splade_gpu_encoder_free(g);
    free(gpu);
    const double rel = sqrt(num / den);
    printf("  splade-tiny, %d SciFact docs (%d tokens), %s vs CPU: rel-L2 %.2e (worst document %.2e), same top-50: "
           "%d/%d strict, %d/%d allowing near-ties (%g); %d docs have a gap < %g at rank 50/51\n",
           t->n, t->off[t->n], what, rel, worst, strict, t->n, tolerant, t->n, tie, near, tie);
    assert_int_equal(bad, 0);
    assert_true(rel <= tol);
    assert_true(strict >= min_strict * t->n);
    assert_true(tolerant >= min_tolerant * t->n);
}
#endif

static void test_splade_tiny_scifact(void **state)
{
    const int id = *(const int *)*state;
    if (!gpu_or_skip(&backends[id]))
        skip();
#ifdef SPLADE_HAVE_CUDA
    const tiny_docs *t = tiny_or_skip();
    if (id == BK_GPU_BF16) { /* bf16 end to end: near-ties at rank 50 reorder (docs/GPU_ENCODER.md) */
        tiny_on(t, SPLADE_PRECISION_BF16, SPLADE_LMHEAD_FUSED, "bf16, fused head", 2e-2, 0.02f, 0, 0.99);
        tiny_on(t, SPLADE_PRECISION_BF16, SPLADE_LMHEAD_NAIVE, "bf16, naive head", 2e-2, 0.02f, 0, 0.99);
    } else {
        tiny_on(t, SPLADE_PRECISION_FP32, SPLADE_LMHEAD_FUSED, "fp32", 1e-5, 0.02f, 0.99, 0);
    }
#endif
}

/* ---- the table of tests ------------------------------------------------------------------------ */

static const int k_ids[BK_N] = {BK_CPU, BK_GPU_BF16, BK_GPU_FP32};

static int teardown_all(void **state)
{
    (void)state;
    rm_release();
    tiny_release();
    return 0;
}

int main(void)
{
    enum { MAXT = RM_NTESTS * BK_N + 3 * BK_N + 1 };
    struct CMUnitTest tests[MAXT];
    static rm_pair pairs[RM_NTESTS * BK_N];
    static char names[MAXT][64];
    int n = 0;
    for (int t = 0; t < RM_NTESTS; t++)
        for (int b = 0; b < BK_N; b++, n++) {
            pairs[n] = (rm_pair){t, b};
            snprintf(names[n], sizeof names[n], "%s/%s", rm_tests[t].name, backends[b].name);
            tests[n] = (struct CMUnitTest){names[n], test_rm_case, NULL, NULL, &pairs[n]};
        }
    for (int b = 0; b < BK_N; b++, n++) {
        snprintf(names[n], sizeof names[n], "test_reuse_and_growth/%s", backends[b].name);
        tests[n] = (struct CMUnitTest){names[n], test_reuse_and_growth, NULL, NULL, (void *)&k_ids[b]};
    }
    for (int b = 0; b < BK_N; b++, n++) {
        snprintf(names[n], sizeof names[n], "test_invalid_input/%s", backends[b].name);
        tests[n] = (struct CMUnitTest){names[n], test_invalid_input, NULL, NULL, (void *)&k_ids[b]};
    }
    tests[n++] = (struct CMUnitTest){"test_fp32_weights/gpu-fp32", test_fp32_weights, NULL, NULL, NULL};
    for (int b = BK_GPU_BF16; b < BK_N; b++) { /* the CPU is this case's reference */
        snprintf(names[n], sizeof names[n], "test_splade_tiny_scifact/%s", backends[b].name);
        tests[n] = (struct CMUnitTest){names[n], test_splade_tiny_scifact, NULL, NULL, (void *)&k_ids[b]};
        n++;
    }
    if (getenv("SPLADE_TEST_FILTER")) /* e.g. "test_long_sequences/gpu-bf16" (bench/gpu.sh's racecheck) */
        cmocka_set_test_filter(getenv("SPLADE_TEST_FILTER"));
    return _cmocka_run_group_tests("encoder_backends", tests, n, NULL, teardown_all);
}
