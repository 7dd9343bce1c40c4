/* The panel loop of the reduced-precision CPU heads (lmhead_panels_cpu.h). */
#include "encoder/lmhead_panels_cpu.h"
#include "common/cpu_team.h"
#include "common/fail.h"
#include "encoder/gemm_dnnl.h"
#include "splade.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    splade_head_unit_fn unit;
    const void *lin, *X;
    int32_t V, n_panels;
    const int32_t *offsets;
    int32_t B;
    float *out;
    int raw; /* out gets the maxima themselves (splade_lmhead_panels_max) */
    float *scratch; /* per thread: logits [ROWS][PANEL] then the maxima [B][PANEL] */
    size_t per_thread;
} head;

static inline void fold_max_n(float *restrict m, const float *restrict l, int32_t n)
{
    for (int32_t j = 0; j < n; j++)
        m[j] = l[j] > m[j] ? l[j] : m[j];
}

/* m[j] = max(m[j], l[j]) for j < n, a full panel at the constant count: GCC -O2 vectorizes a loop of
 * constant count only (this fold was ~3% of an int8 document, scalar). As splade_add_row. */
static inline void fold_max(float *restrict m, const float *restrict l, int32_t n)
{
    if (n == SPLADE_DNNL_PANEL)
        fold_max_n(m, l, SPLADE_DNNL_PANEL);
    else
        fold_max_n(m, l, n);
}

/* The maxima of panel p's logits per sequence, then log1p(relu(.)) into out. */
static int head_panel(const head *h, int32_t p, float *logits, float *mx)
{
    const int32_t c0 = p * SPLADE_DNNL_PANEL, V = h->V;
    const int32_t P = V - c0 < SPLADE_DNNL_PANEL ? V - c0 : SPLADE_DNNL_PANEL, T = h->offsets[h->B];
    for (int32_t i = 0; i < h->B * SPLADE_DNNL_PANEL; i++)
        mx[i] = -INFINITY;
    int32_t b = 0;
    for (int32_t r0 = 0; r0 < T; r0 += SPLADE_DNNL_ROWS) {
        const int32_t rows = T - r0 < SPLADE_DNNL_ROWS ? T - r0 : SPLADE_DNNL_ROWS;
        int rc = h->unit(h->lin, h->X, r0, rows, p, logits, P);
        if (rc)
            return rc;
        for (int32_t i = 0; i < rows; i++) {
            while (r0 + i >= h->offsets[b + 1])
                b++;
            const float *l = logits + (size_t)i * P;
            float *m = mx + (size_t)b * SPLADE_DNNL_PANEL;
            fold_max(m, l, P);
        }
    }
    for (b = 0; b < h->B; b++)
        for (int32_t j = 0; j < P; j++) {
            float v = mx[(size_t)b * SPLADE_DNNL_PANEL + j];
            h->out[(size_t)b * V + c0 + j] = h->raw ? v : v > 0.0f ? log1pf(v) : 0.0f;
        }
    return SPLADE_OK;
}

static int head_team(void *ctx, int tid, splade_team *t)
{
    const head *h = ctx;
    float *logits = h->scratch + (size_t)tid * h->per_thread;
    float *mx = logits + (size_t)SPLADE_DNNL_ROWS * SPLADE_DNNL_PANEL;
    int p0, p1, rc = SPLADE_OK;
    splade_team_split(tid, splade_team_size(t), h->n_panels, 1, &p0, &p1);
    for (int p = p0; p < p1 && !rc; p++)
        rc = head_panel(h, p, logits, mx);
    return rc;
}

static int panels(splade_head_unit_fn unit, const void *lin, const void *X, int32_t V, int32_t n_panels,
                  const int32_t *offsets, int32_t B, float *out, int raw, int nthreads)
{
    nthreads = nthreads < 1 ? 1 : nthreads;
    head h = {unit, lin, X, V, n_panels, offsets, B, out, raw, NULL, 0};
    h.per_thread = (size_t)SPLADE_DNNL_PANEL * (SPLADE_DNNL_ROWS + (size_t)B);
    /* 64-byte lines (oneDNN stores whole lines of the logits tile: forward_cpu.c's rows_alloc) */
    h.scratch = aligned_alloc(64, h.per_thread * (size_t)nthreads * sizeof(float));
    if (!h.scratch)
        return splade_fail(SPLADE_ERR_NOMEM, "LM head scratch");
    int rc = splade_team_run(nthreads, head_team, &h);
    free(h.scratch);
    return rc;
}

int splade_lmhead_panels(splade_head_unit_fn unit, const void *lin, const void *X, int32_t V, int32_t n_panels,
                         const int32_t *offsets, int32_t B, float *out, int nthreads)
{
    return panels(unit, lin, X, V, n_panels, offsets, B, out, 0, nthreads);
}

int splade_lmhead_panels_max(splade_head_unit_fn unit, const void *lin, const void *X, int32_t V, int32_t n_panels,
                             const int32_t *offsets, int32_t B, float *out, int nthreads)
{
    return panels(unit, lin, X, V, n_panels, offsets, B, out, 1, nthreads);
}
