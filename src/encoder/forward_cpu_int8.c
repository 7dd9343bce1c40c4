/* int8 weights of the CPU forward (forward_cpu_int8.h) and the int8 SPLADE head: dequantized logits
 * of a vocabulary panel for a block of rows at a time, folded into each sequence's running maximum
 * while they are in L1/L2 (log1p∘relu is monotonic: applied once to the maximum), as the bf16 head
 * (forward_cpu_bf16.c). */
#include "encoder/forward_cpu_int8.h"
#include "common/cpu_team.h"
#include "common/fail.h"
#include "common/settings.h"
#include "encoder/gemm_dnnl.h"
#include "encoder/model_internal.h"
#include "splade.h"

#include <math.h>
#include <stdlib.h>

/* The head's format: the setting, else bf16 where oneDNN runs it natively, else fp32. */
static int head_format(int *head)
{
    *head = splade_settings_get()->cpu_int8_head;
    if (*head == SPLADE_Q8_HEAD_BF16)
        return splade_dnnl_bf16_check();
    if (!*head)
        *head = splade_dnnl_bf16_check() == SPLADE_OK ? SPLADE_Q8_HEAD_BF16 : SPLADE_Q8_HEAD_FP32;
    return SPLADE_OK;
}

static int create_head(const splade_model *m, splade_cpu_int8 *w)
{
    const int32_t H = m->cfg.hidden_size, V = m->cfg.vocab_size;
    int rc = SPLADE_OK;
    if (w->head == SPLADE_Q8_HEAD_INT8) {
        rc = splade_q8_linear_create(m->mlm_dense_w, m->mlm_dense_b, H, H, &w->mlm_dense);
        rc = rc ? rc : splade_q8_linear_create(m->decoder_w, m->decoder_b, V, H, &w->decoder);
    } else if (w->head == SPLADE_Q8_HEAD_BF16) {
        rc = splade_dnnl_linear_create(m->mlm_dense_w, m->mlm_dense_b, H, H, &w->mlm_dense_bf);
        rc = rc ? rc : splade_dnnl_linear_create(m->decoder_w, m->decoder_b, V, H, &w->decoder_bf);
    }
    return rc;
}

int splade_cpu_int8_create(const splade_model *m, splade_cpu_int8 **out)
{
    *out = NULL;
    int rc = splade_dnnl_int8_check();
    if (rc)
        return rc;
    const splade_config *c = &m->cfg;
    const int32_t H = c->hidden_size, F = c->intermediate_size;
    splade_cpu_int8 *w = calloc(1, sizeof *w);
    if (!w || !(w->layers = calloc((size_t)c->num_layers, sizeof *w->layers))) {
        free(w);
        return splade_fail(SPLADE_ERR_NOMEM, "int8 weights");
    }
    w->n_layers = c->num_layers;
    rc = head_format(&w->head);
    for (int32_t l = 0; !rc && l < c->num_layers; l++) {
        const splade_layer *p = &m->layers[l];
        splade_q8_layer *q = &w->layers[l];
        rc = splade_q8_linear_create(p->q_w, p->q_b, H, H, &q->q);
        rc = rc ? rc : splade_q8_linear_create(p->k_w, p->k_b, H, H, &q->k);
        rc = rc ? rc : splade_q8_linear_create(p->v_w, p->v_b, H, H, &q->v);
        rc = rc ? rc : splade_q8_linear_create(p->attn_out_w, p->attn_out_b, H, H, &q->o);
        rc = rc ? rc : splade_q8_linear_create(p->ffn_in_w, p->ffn_in_b, F, H, &q->ffn_in);
        rc = rc ? rc : splade_q8_linear_create(p->ffn_out_w, p->ffn_out_b, H, F, &q->ffn_out);
    }
    rc = rc ? rc : create_head(m, w);
    if (rc)
        splade_cpu_int8_free(w);
    else
        *out = w;
    return rc;
}

void splade_cpu_int8_free(splade_cpu_int8 *w)
{
    if (!w)
        return;
    for (int32_t l = 0; w->layers && l < w->n_layers; l++) {
        splade_q8_layer *q = &w->layers[l];
        splade_q8_linear *all[] = {q->q, q->k, q->v, q->o, q->ffn_in, q->ffn_out};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            splade_q8_linear_free(all[i]);
    }
    splade_q8_linear_free(w->mlm_dense);
    splade_q8_linear_free(w->decoder);
    splade_dnnl_linear_free(w->mlm_dense_bf);
    splade_dnnl_linear_free(w->decoder_bf);
    free(w->layers);
    free(w);
}

typedef struct {
    const splade_q8_linear *dec;
    const splade_q8_rows *X;
    const int32_t *offsets;
    int32_t B;
    float *out;
    float *scratch; /* per thread: logits [ROWS][PANEL] then the maxima [B][PANEL] */
    size_t per_thread;
} head;

/* The maxima of panel p's logits per sequence, then log1p(relu(.)) into out. */
static int head_panel(const head *h, int32_t p, float *logits, float *mx)
{
    const int32_t V = splade_q8_linear_n(h->dec), c0 = p * SPLADE_DNNL_PANEL;
    const int32_t P = V - c0 < SPLADE_DNNL_PANEL ? V - c0 : SPLADE_DNNL_PANEL, T = h->offsets[h->B];
    for (int32_t i = 0; i < h->B * SPLADE_DNNL_PANEL; i++)
        mx[i] = -INFINITY;
    int32_t b = 0;
    for (int32_t r0 = 0; r0 < T; r0 += SPLADE_DNNL_ROWS) {
        const int32_t rows = T - r0 < SPLADE_DNNL_ROWS ? T - r0 : SPLADE_DNNL_ROWS;
        int rc = splade_q8_unit(h->dec, h->X, r0, rows, p, logits, P, 0);
        if (rc)
            return rc;
        for (int32_t i = 0; i < rows; i++) {
            while (r0 + i >= h->offsets[b + 1])
                b++;
            const float *l = logits + (size_t)i * P;
            float *m = mx + (size_t)b * SPLADE_DNNL_PANEL;
            for (int32_t j = 0; j < P; j++)
                m[j] = l[j] > m[j] ? l[j] : m[j];
        }
    }
    for (b = 0; b < h->B; b++)
        for (int32_t j = 0; j < P; j++) {
            float v = mx[(size_t)b * SPLADE_DNNL_PANEL + j];
            h->out[(size_t)b * V + c0 + j] = v > 0.0f ? log1pf(v) : 0.0f;
        }
    return SPLADE_OK;
}

static int head_team(void *ctx, int tid, splade_team *t)
{
    const head *h = ctx;
    float *logits = h->scratch + (size_t)tid * h->per_thread;
    float *mx = logits + (size_t)SPLADE_DNNL_ROWS * SPLADE_DNNL_PANEL;
    int p0, p1, rc = SPLADE_OK;
    splade_team_split(tid, splade_team_size(t), splade_q8_panels(h->dec), 1, &p0, &p1);
    for (int p = p0; p < p1 && !rc; p++)
        rc = head_panel(h, p, logits, mx);
    return rc;
}

int splade_lmhead_cpu_int8(const splade_q8_linear *dec, const splade_q8_rows *X, const int32_t *offsets, int32_t B,
                           float *out, int nthreads)
{
    head h = {dec, X, offsets, B, out, NULL, 0};
    h.per_thread = (size_t)SPLADE_DNNL_PANEL * (SPLADE_DNNL_ROWS + (size_t)B);
    h.scratch = malloc(h.per_thread * (size_t)(nthreads < 1 ? 1 : nthreads) * sizeof(float));
    if (!h.scratch)
        return splade_fail(SPLADE_ERR_NOMEM, "int8 LM head scratch");
    int rc = splade_team_run(nthreads < 1 ? 1 : nthreads, head_team, &h);
    free(h.scratch);
    return rc;
}
