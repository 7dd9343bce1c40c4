/* The screened fp32 SPLADE head (lmhead_screen_cpu.h): bf16 maxima with a rigorous error bound,
 * then the plain fp32 head's own arithmetic for the terms the bound cannot rule out. */
#include "encoder/lmhead_screen_cpu.h"
#include "common/cpu_team.h"
#include "common/fail.h"
#include "encoder/forward_cpu_bf16.h"
#include "encoder/gemm_dnnl.h"
#include "lmhead_fused/lmhead.h"
#include "lmhead_fused/lmhead_cpu_internal.h"
#include "splade.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Terms recomputed per unit of work: the plain head's kernel over a sequence's rows and CHUNK
 * gathered decoder rows (splade_lmhead_cpu_columns: its bits exactly). */
enum { CHUNK = 64 };

struct splade_head_screen {
    splade_dnnl_linear *dec; /* bf16 W, fp32 bias */
    const float *W, *bias;   /* fp32, borrowed */
    float *w2, *w1;          /* per term ‖w‖₂ and ‖w‖₁, rounded up */
    int32_t V, K;
    double rel;    /* the bound per unit of Σ|x_i||w_i| (header) */
    double factor; /* tests: the bound's multiplier */
};

/* The relative bound of the header, with a 0.1% margin for the bound's own float arithmetic. */
static double relative_bound(int32_t K)
{
    const double u = ldexp(1.0, -8), u32 = ldexp(1.0, -24);
    const double gamma = (K + 1) * u32 / (1.0 - (K + 1) * u32), prod = (1.0 + u) * (1.0 + u);
    return (2.0 * u + u * u + gamma * prod + u32 * (1.0 + gamma) * prod) * 1.001;
}

static int row_norms(splade_head_screen *s)
{
    s->w2 = malloc((size_t)s->V * sizeof *s->w2);
    s->w1 = malloc((size_t)s->V * sizeof *s->w1);
    if (!s->w2 || !s->w1)
        return splade_fail(SPLADE_ERR_NOMEM, "LM head screen: %d norms", (int)s->V);
    for (int32_t v = 0; v < s->V; v++) {
        const float *w = s->W + (size_t)v * s->K;
        double a2 = 0.0, a1 = 0.0;
        for (int32_t i = 0; i < s->K; i++)
            a2 += (double)w[i] * w[i], a1 += fabs(w[i]);
        s->w2[v] = (float)(sqrt(a2) * (1.0 + 1e-6)); /* rounded up past the float conversion */
        s->w1[v] = (float)(a1 * (1.0 + 1e-6));
    }
    return SPLADE_OK;
}

int splade_head_screen_create(const float *W, const float *bias, int32_t V, int32_t K, splade_head_screen **out)
{
    *out = NULL;
    int rc = splade_dnnl_bf16_check();
    if (rc)
        return rc;
    if (!splade_lmhead_cpu_avx512_usable()) /* the fp32 pass is the plain head's AVX-512 kernel */
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "LM head screen: the plain head does not run its AVX-512 kernel here");
    splade_head_screen *s = calloc(1, sizeof *s);
    if (!s)
        return splade_fail(SPLADE_ERR_NOMEM, "LM head screen");
    *s = (splade_head_screen){.W = W, .bias = bias, .V = V, .K = K, .rel = relative_bound(K), .factor = 1.0};
    rc = splade_dnnl_linear_create(W, bias, V, K, &s->dec);
    rc = rc ? rc : row_norms(s);
    if (rc)
        splade_head_screen_free(s);
    else
        *out = s;
    return rc;
}

void splade_head_screen_free(splade_head_screen *s)
{
    if (!s)
        return;
    splade_dnnl_linear_free(s->dec);
    free(s->w2), free(s->w1);
    free(s);
}

void splade_head_screen_set_bound_factor(splade_head_screen *s, double factor) { s->factor = factor; }

/* Per sequence, the largest ‖x‖₂ and ‖x‖∞ of its rows; +inf when a row is not finite (every term
 * then goes to fp32, which carries the NaN or inf as the plain head would). */
static void sequence_norms(const float *X, const int32_t *offsets, int32_t B, int32_t K, float *n2, float *ninf)
{
    for (int32_t b = 0; b < B; b++) {
        double m2 = 0.0, mi = 0.0;
        for (int32_t t = offsets[b]; t < offsets[b + 1]; t++) {
            const float *x = X + (size_t)t * K;
            double a2 = 0.0, ai = 0.0;
            for (int32_t i = 0; i < K; i++)
                a2 += (double)x[i] * x[i], ai = fabs(x[i]) > ai ? fabs(x[i]) : ai;
            m2 = a2 > m2 ? a2 : m2, mi = ai > mi ? ai : mi;
        }
        const int ok = isfinite(m2) && isfinite(mi);
        n2[b] = ok ? (float)(sqrt(m2) * (1.0 + 1e-6)) : INFINITY;
        ninf[b] = ok ? (float)(mi * (1.0 + 1e-6)) : INFINITY;
    }
}

/* Keeps in cand (per sequence, from start[b]) the terms whose bf16 maximum plus bound may be
 * positive; the others' outputs become 0. `out` holds the bf16 maxima on entry. */
static int64_t screen(const splade_head_screen *s, const float *n2, const float *ninf, int32_t B, float *out,
                      int32_t *cand, int64_t *start)
{
    const float rel = (float)(s->rel * s->factor), u32 = (float)ldexp(1.0, -24) * (float)s->factor;
    int64_t nc = 0;
    for (int32_t b = 0; b < B; b++) {
        start[b] = nc;
        float *o = out + (size_t)b * s->V;
        for (int32_t v = 0; v < s->V; v++) {
            const float a = n2[b] * s->w2[v], h = ninf[b] * s->w1[v];
            const float bound = rel * (a < h ? a : h) + u32 * fabsf(s->bias[v]) + 1e-30f * (float)s->factor;
            if (!(o[v] + bound <= 0.0f)) /* NaN maxima stay candidates */
                cand[nc++] = v;
            else
                o[v] = 0.0f;
        }
    }
    start[B] = nc;
    return nc;
}

typedef struct {
    const splade_head_screen *s;
    const float *X;
    const int32_t *offsets;
    const int32_t *cand;
    const int64_t *start; /* [B + 1] into cand */
    const int64_t *unit0; /* [B + 1]: the first unit of each sequence */
    int32_t B;
    float *out, *scratch;
    size_t per_thread;
} refine_job;

/* Unit u: CHUNK candidates of one sequence, through the plain head's own arithmetic (the same bits). */
static int refine_unit(const refine_job *j, int64_t u, float *scratch, float *vals)
{
    const splade_head_screen *s = j->s;
    int32_t b = 0;
    while (u >= j->unit0[b + 1])
        b++;
    const int64_t c0 = j->start[b] + (u - j->unit0[b]) * CHUNK;
    const int32_t n = (int32_t)(j->start[b + 1] - c0 < CHUNK ? j->start[b + 1] - c0 : CHUNK);
    const int32_t r0 = j->offsets[b], L = j->offsets[b + 1] - r0;
    int rc = splade_lmhead_cpu_columns(j->X + (size_t)r0 * s->K, L, s->K, s->W, s->bias, j->cand + c0, n, vals,
                                       scratch);
    float *o = j->out + (size_t)b * s->V;
    for (int32_t i = 0; !rc && i < n; i++)
        o[j->cand[c0 + i]] = vals[i];
    return rc;
}

static int refine_team(void *ctx, int tid, splade_team *t)
{
    const refine_job *j = ctx;
    float *scratch = j->scratch + (size_t)tid * j->per_thread, *vals = scratch + j->per_thread - CHUNK;
    int u0, u1, rc = SPLADE_OK;
    splade_team_split(tid, splade_team_size(t), (int)j->unit0[j->B], 1, &u0, &u1);
    for (int u = u0; !rc && u < u1; u++)
        rc = refine_unit(j, u, scratch, vals);
    return rc;
}

static int refine(refine_job *j, int nthreads)
{
    j->per_thread = (splade_lmhead_cpu_columns_scratch(j->s->K, CHUNK) + CHUNK + 15) / 16 * 16;
    j->scratch = aligned_alloc(64, j->per_thread * (size_t)nthreads * sizeof(float));
    if (!j->scratch)
        return splade_fail(SPLADE_ERR_NOMEM, "LM head screen: %d threads' scratch", nthreads);
    int rc = splade_team_run(nthreads, refine_team, j);
    free(j->scratch);
    return rc;
}

int splade_lmhead_cpu_screened(const splade_head_screen *s, const float *X, const int32_t *offsets, int32_t B,
                               float *out, int nthreads, int64_t *candidates)
{
    nthreads = nthreads < 1 ? 1 : nthreads;
    const size_t T = (size_t)offsets[B];
    /* the screen GEMM's A on 64-byte lines (forward_cpu.c's rows_alloc says why) */
    uint16_t *Xb = aligned_alloc(64, (T * (size_t)s->K * sizeof *Xb + 63) / 64 * 64);
    float *norms = malloc(2 * (size_t)B * sizeof *norms);
    int64_t *start = malloc(2 * ((size_t)B + 1) * sizeof *start);
    int32_t *cand = malloc((size_t)B * (size_t)s->V * sizeof *cand);
    int rc = SPLADE_OK;
    if (!Xb || !norms || !start || !cand)
        rc = splade_fail(SPLADE_ERR_NOMEM, "LM head screen: %d sequences", (int)B);
    if (!rc) {
        splade_to_bf16(X, Xb, T * (size_t)s->K);
        sequence_norms(X, offsets, B, s->K, norms, norms + B);
        rc = splade_lmhead_cpu_bf16_max(s->dec, Xb, offsets, B, out, nthreads);
    }
    if (!rc) {
        const int64_t nc = screen(s, norms, norms + B, B, out, cand, start);
        int64_t *unit0 = start + B + 1;
        unit0[0] = 0;
        for (int32_t b = 0; b < B; b++)
            unit0[b + 1] = unit0[b] + (start[b + 1] - start[b] + CHUNK - 1) / CHUNK;
        refine_job j = {s, X, offsets, cand, start, unit0, B, out, NULL, 0};
        rc = refine(&j, nthreads);
        if (candidates)
            *candidates = nc;
    }
    free(Xb), free(norms), free(start), free(cand);
    return rc;
}
