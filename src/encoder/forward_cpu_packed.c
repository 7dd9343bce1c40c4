/* The fp32 forward's packed weights (forward_cpu_packed.h). */
#include "encoder/forward_cpu_packed.h"
#include "common/big_alloc.h"
#include "common/cpu_team.h"
#include "common/fail.h"
#include "encoder/model_internal.h"
#include "splade.h"

#include <stdlib.h>

/* Matrix i of the copy (layer-major, then the MLM transform) and its source. */
static splade_gemm_packed *matrix(splade_cpu_packed *p, const splade_model *m, int32_t i, const float **W)
{
    if (i == p->n_layers * SPLADE_PACKED_PER_LAYER) {
        *W = m->mlm_dense_w;
        return &p->mlm_dense;
    }
    const splade_layer *l = &m->layers[i / SPLADE_PACKED_PER_LAYER];
    const float *src[SPLADE_PACKED_PER_LAYER] = {l->q_w, l->k_w, l->v_w, l->attn_out_w, l->ffn_in_w, l->ffn_out_w};
    *W = src[i % SPLADE_PACKED_PER_LAYER];
    return &p->layers[i];
}

static void shape(const splade_model *m, int32_t i, int32_t *N, int32_t *K)
{
    const int32_t H = m->cfg.hidden_size, F = m->cfg.intermediate_size, j = i % SPLADE_PACKED_PER_LAYER;
    const int last = i == m->cfg.num_layers * SPLADE_PACKED_PER_LAYER;
    *N = !last && j == SPLADE_PACKED_FFN_IN ? F : H;
    *K = !last && j == SPLADE_PACKED_FFN_OUT ? F : H;
}

size_t splade_cpu_packed_bytes(const splade_model *m)
{
    size_t bytes = 0;
    for (int32_t i = 0; i <= m->cfg.num_layers * SPLADE_PACKED_PER_LAYER; i++) {
        int32_t N, K;
        shape(m, i, &N, &K);
        bytes += ((size_t)N + SPLADE_GEMM_PANEL - 1) / SPLADE_GEMM_PANEL * SPLADE_GEMM_PANEL * K * sizeof(float);
    }
    return bytes;
}

typedef struct {
    splade_cpu_packed *p;
    const splade_model *m;
    int32_t first, last; /* the matrices [first, last] of this step */
} pack_job;

/* Each member packs its share of the step's matrices' panels. */
static int pack_team(void *ctx, int tid, splade_team *t)
{
    pack_job *j = ctx;
    for (int32_t i = j->first; i <= j->last; i++) {
        const float *W;
        splade_gemm_packed *g = matrix(j->p, j->m, i, &W);
        int lo, hi;
        splade_team_split(tid, splade_team_size(t), (g->N + SPLADE_GEMM_PANEL - 1) / SPLADE_GEMM_PANEL, 1, &lo, &hi);
        const int32_t n1 = hi * SPLADE_GEMM_PANEL < g->N ? hi * SPLADE_GEMM_PANEL : g->N;
        if (lo * SPLADE_GEMM_PANEL < n1)
            splade_gemm_pack_cols(W, g, lo * SPLADE_GEMM_PANEL, n1);
    }
    return SPLADE_OK;
}

int splade_cpu_packed_create(const splade_model *m, splade_cpu_packed **out)
{
    *out = NULL;
    splade_cpu_packed *p = calloc(1, sizeof *p);
    const int32_t n = m->cfg.num_layers * SPLADE_PACKED_PER_LAYER;
    if (!p || !(p->layers = calloc((size_t)n, sizeof *p->layers))) {
        free(p);
        return splade_fail(SPLADE_ERR_NOMEM, "packed fp32 weights");
    }
    p->n_layers = m->cfg.num_layers;
    /* one region on huge pages: 4 KB pages made the copy fault 85,000 times (~2/3 of its time) */
    p->region = splade_big_alloc(splade_cpu_packed_bytes(m));
    int rc = p->region ? SPLADE_OK : splade_fail(SPLADE_ERR_NOMEM, "packed fp32 weights: %zu bytes",
                                                 splade_cpu_packed_bytes(m));
    float *at = p->region;
    for (int32_t i = 0; !rc && i <= n; i++) {
        const float *W;
        splade_gemm_packed *g = matrix(p, m, i, &W);
        shape(m, i, &g->N, &g->K);
        g->panels = at; /* 256-byte multiples after a 2 MB-aligned start: on cache lines */
        at += ((size_t)g->N + SPLADE_GEMM_PANEL - 1) / SPLADE_GEMM_PANEL * SPLADE_GEMM_PANEL * g->K;
    }
    if (rc)
        splade_cpu_packed_free(p);
    else
        *out = p;
    return rc;
}

int splade_cpu_packed_step(splade_cpu_packed *p, const splade_model *m, int nthreads)
{
    if (splade_cpu_packed_done(p))
        return 0;
    const int32_t l = p->ready_layers, first = l * SPLADE_PACKED_PER_LAYER;
    pack_job j = {p, m, first, l < p->n_layers ? first + SPLADE_PACKED_PER_LAYER - 1 : first}; /* the MLM's last */
    splade_team_run(nthreads < 1 ? 1 : nthreads, pack_team, &j); /* pack_team cannot fail */
    if (l < p->n_layers)
        p->ready_layers++;
    else
        p->mlm_ready = 1;
    return !splade_cpu_packed_done(p);
}

int splade_cpu_packed_done(const splade_cpu_packed *p) { return p->ready_layers == p->n_layers && p->mlm_ready; }

void splade_cpu_packed_free(splade_cpu_packed *p)
{
    if (!p)
        return;
    free(p->region);
    free(p->layers);
    free(p);
}
