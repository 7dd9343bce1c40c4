/* int8 weights of the CPU forward (forward_cpu_int8.h) and the int8 SPLADE head (the measurement's
 * alternative to the bf16 one: SPLADE_CPU_INT8_HEAD=int8) on lmhead_panels_cpu.c's panel loop. */
#include "encoder/forward_cpu_int8.h"
#include "common/cpu_team.h"
#include "common/fail.h"
#include "common/settings.h"
#include "encoder/gemm_dnnl.h"
#include "encoder/lmhead_panels_cpu.h"
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

/* The head's unit: rows [r0, r0 + rows) of the quantized X against panel p, dequantized. */
static int int8_unit(const void *lin, const void *X, int32_t r0, int32_t rows, int32_t p, float *dst, int32_t ldd)
{
    return splade_q8_unit(lin, X, r0, rows, p, dst, ldd, 0);
}

int splade_lmhead_cpu_int8(const splade_q8_linear *dec, const splade_q8_rows *X, const int32_t *offsets, int32_t B,
                           float *out, int nthreads)
{
    return splade_lmhead_panels(int8_unit, dec, X, splade_q8_linear_n(dec), splade_q8_panels(dec), offsets, B, out,
                                nthreads);
}
