/* bf16 weights of the CPU forward (forward_cpu_bf16.h) and the bf16 SPLADE head: logits of a
 * vocabulary panel for a block of rows at a time (oneDNN, AMX), folded into each sequence's
 * running maximum while they are in L1/L2; log1p(relu(.)) is monotonic, so it is applied once
 * to the maximum instead of to every logit. */
#include "encoder/forward_cpu_bf16.h"
#include "common/cpu_team.h"
#include "common/fail.h"
#include "encoder/lmhead_panels_cpu.h"
#include "encoder/model_internal.h"
#include "splade.h"

#include <math.h>
#include <stdlib.h>

static int lin(const float *W, const float *b, int32_t N, int32_t K, splade_dnnl_linear **out)
{
    return splade_dnnl_linear_create(W, b, N, K, out);
}

int splade_cpu_bf16_create(const splade_model *m, splade_cpu_bf16 **out)
{
    *out = NULL;
    int rc = splade_dnnl_bf16_check();
    if (rc)
        return rc;
    const splade_config *c = &m->cfg;
    const int32_t H = c->hidden_size, F = c->intermediate_size;
    splade_cpu_bf16 *w = calloc(1, sizeof *w);
    if (!w || !(w->layers = calloc((size_t)c->num_layers, sizeof *w->layers))) {
        free(w);
        return splade_fail(SPLADE_ERR_NOMEM, "bf16 weights");
    }
    w->n_layers = c->num_layers;
    for (int32_t l = 0; !rc && l < c->num_layers; l++) {
        const splade_layer *p = &m->layers[l];
        splade_bf16_layer *q = &w->layers[l];
        rc = lin(p->q_w, p->q_b, H, H, &q->q);
        rc = rc ? rc : lin(p->k_w, p->k_b, H, H, &q->k);
        rc = rc ? rc : lin(p->v_w, p->v_b, H, H, &q->v);
        rc = rc ? rc : lin(p->attn_out_w, p->attn_out_b, H, H, &q->o);
        rc = rc ? rc : lin(p->ffn_in_w, p->ffn_in_b, F, H, &q->ffn_in);
        rc = rc ? rc : lin(p->ffn_out_w, p->ffn_out_b, H, F, &q->ffn_out);
    }
    rc = rc ? rc : lin(m->mlm_dense_w, m->mlm_dense_b, H, H, &w->mlm_dense);
    rc = rc ? rc : lin(m->decoder_w, m->decoder_b, c->vocab_size, H, &w->decoder);
    if (rc)
        splade_cpu_bf16_free(w);
    else
        *out = w;
    return rc;
}

void splade_cpu_bf16_free(splade_cpu_bf16 *w)
{
    if (!w)
        return;
    for (int32_t l = 0; w->layers && l < w->n_layers; l++) {
        splade_bf16_layer *q = &w->layers[l];
        splade_dnnl_linear *all[] = {q->q, q->k, q->v, q->o, q->ffn_in, q->ffn_out};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            splade_dnnl_linear_free(all[i]);
    }
    splade_dnnl_linear_free(w->mlm_dense);
    splade_dnnl_linear_free(w->decoder);
    free(w->layers);
    free(w);
}

/* The head's unit: rows [r0, r0 + rows) of the bf16 X against panel p. */
static int bf16_unit(const void *lin, const void *X, int32_t r0, int32_t rows, int32_t p, float *dst, int32_t ldd)
{
    const splade_dnnl_linear *dec = lin;
    const uint16_t *x = (const uint16_t *)X + (size_t)r0 * splade_dnnl_linear_k(dec);
    return splade_dnnl_unit_to(dec, x, rows, p, dst, ldd, 0);
}

/* The same on padded rows (X as SPLADE_DNNL_PAD_ROWS wants it; the head's tile has
 * SPLADE_DNNL_ROWS rows): splade_dnnl_padded_rows of them computed. */
static int bf16_unit_padded(const void *lin, const void *X, int32_t r0, int32_t rows, int32_t p, float *dst,
                            int32_t ldd)
{
    return bf16_unit(lin, X, r0, splade_dnnl_padded_rows(rows), p, dst, ldd);
}

int splade_lmhead_cpu_bf16(const splade_dnnl_linear *dec, const uint16_t *X, const int32_t *offsets, int32_t B,
                           float *out, int nthreads)
{
    return splade_lmhead_panels(bf16_unit_padded, dec, X, splade_dnnl_linear_n(dec), splade_dnnl_panels(dec), offsets, B, out,
                                nthreads);
}

int splade_lmhead_cpu_bf16_max(const splade_dnnl_linear *dec, const uint16_t *X, const int32_t *offsets, int32_t B,
                               float *out, int nthreads)
{
    return splade_lmhead_panels_max(bf16_unit, dec, X, splade_dnnl_linear_n(dec), splade_dnnl_panels(dec), offsets, B,
                                    out, nthreads);
}
