/* Weights reordered per panel for oneDNN matmuls (dnnl_weights.h). */
#ifdef SPLADE_HAVE_DNNL
#include "encoder/dnnl_weights.h"
#include "common/fail.h"
#include "encoder/dnnl_cache.h"
#include "splade.h"

#include <stdlib.h>

int32_t splade_dnnl_weights_width(const splade_dnnl_weights *w, int32_t p)
{
    const int32_t c0 = p * SPLADE_DNNL_PANEL;
    return w->N - c0 < SPLADE_DNNL_PANEL ? w->N - c0 : SPLADE_DNNL_PANEL;
}

const dnnl_memory_desc_t *splade_dnnl_weights_md(const splade_dnnl_weights *w, int32_t p)
{
    return p == w->n_panels - 1 ? &w->md_last : &w->md;
}

void *splade_dnnl_weights_data(const splade_dnnl_weights *w, int32_t p)
{
    void *h = NULL;
    dnnl_memory_get_data_handle(w->mem[p], &h);
    return h;
}

static int pick_layout(int32_t K, int32_t P, splade_dnnl_layout_pd layout, const char *kind, dnnl_memory_desc_t *md)
{
    dnnl_primitive_desc_t pd = layout(K, P);
    if (!pd)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "oneDNN: no %s matmul for K=%d N=%d", kind, (int)K, (int)P);
    *md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_primitive_desc_destroy(pd);
    return SPLADE_OK;
}

/* Panel p of W (K x P with strides (1, K), from column p * SPLADE_DNNL_PANEL) into its layout. */
static int reorder_panel(splade_dnnl_weights *w, const void *W, dnnl_data_type_t dt, size_t elem, int32_t p,
                         const char *kind)
{
    const int32_t P = splade_dnnl_weights_width(w, p);
    dnnl_engine_t eng = splade_dnnl_engine();
    dnnl_memory_desc_t src;
    dnnl_memory_t from = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t r = NULL;
    splade_dnnl_thread *t = splade_dnnl_thread_state();
    const dnnl_memory_desc_t *md = splade_dnnl_weights_md(w, p);
    const char *first = (const char *)W + (size_t)p * SPLADE_DNNL_PANEL * (size_t)w->K * elem;
    int ok = t && splade_dnnl_md(&src, w->K, P, dt, 1, w->K) == 0 &&
             dnnl_memory_create(&from, &src, eng, (void *)first) == dnnl_success &&
             dnnl_memory_create(&w->mem[p], md, eng, DNNL_MEMORY_ALLOCATE) == dnnl_success &&
             dnnl_reorder_primitive_desc_create(&rpd, &src, eng, md, eng, NULL) == dnnl_success &&
             dnnl_primitive_create(&r, rpd) == dnnl_success;
    if (ok) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, w->mem[p]}};
        ok = dnnl_primitive_execute(r, t->stream, 2, args) == dnnl_success && dnnl_stream_wait(t->stream) == dnnl_success;
    }
    if (r)
        dnnl_primitive_destroy(r);
    if (rpd)
        dnnl_primitive_desc_destroy(rpd);
    if (from)
        dnnl_memory_destroy(from);
    return ok ? SPLADE_OK
              : splade_fail(SPLADE_ERR_NOMEM, "oneDNN: reordering a %d x %d %s weight panel", (int)P, (int)w->K, kind);
}

int splade_dnnl_weights_create(splade_dnnl_weights *w, const void *W, dnnl_data_type_t dt, size_t elem, int32_t N,
                               int32_t K, splade_dnnl_layout_pd layout, const char *kind)
{
    *w = (splade_dnnl_weights){.N = N, .K = K, .n_panels = (N + SPLADE_DNNL_PANEL - 1) / SPLADE_DNNL_PANEL};
    w->mem = calloc((size_t)w->n_panels, sizeof *w->mem);
    if (!w->mem)
        return splade_fail(SPLADE_ERR_NOMEM, "oneDNN %s weights %d x %d", kind, (int)N, (int)K);
    const int32_t last = splade_dnnl_weights_width(w, w->n_panels - 1);
    int rc = pick_layout(K, N < SPLADE_DNNL_PANEL ? N : SPLADE_DNNL_PANEL, layout, kind, &w->md);
    if (!rc)
        rc = last == SPLADE_DNNL_PANEL ? (w->md_last = w->md, SPLADE_OK) : pick_layout(K, last, layout, kind, &w->md_last);
    for (int32_t p = 0; !rc && p < w->n_panels; p++)
        rc = reorder_panel(w, W, dt, elem, p, kind);
    if (rc)
        splade_dnnl_weights_free(w);
    return rc;
}

void splade_dnnl_weights_free(splade_dnnl_weights *w)
{
    for (int32_t p = 0; w->mem && p < w->n_panels; p++)
        if (w->mem[p])
            dnnl_memory_destroy(w->mem[p]);
    free(w->mem);
    w->mem = NULL;
}
#endif
