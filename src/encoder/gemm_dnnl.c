/* bf16 nn.Linear GEMMs through oneDNN's matmul (gemm_dnnl.h). The weights are converted and
 * reordered once (per panel of columns, into the blocked layout the AMX kernel wants); each
 * calling thread keeps its own primitives (one per unit shape), its own stream and memory
 * objects (dnnl_cache.h), so team members never share mutable oneDNN state. */
#include "encoder/gemm_dnnl.h"
#include "common/cpu_team.h"
#include "common/fail.h"
#include "common/settings.h"
#include "encoder/rowops_cpu.h"
#include "splade.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#ifdef SPLADE_HAVE_DNNL
#include "encoder/dnnl_cache.h"
#include "encoder/dnnl_weights.h"

struct splade_dnnl_linear {
    splade_dnnl_weights w; /* the bf16 weights in the AMX kernel's blocked layout, per panel */
    float *bias;           /* [N] */
};

int splade_dnnl_bf16_check(void)
{
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    /* ISA values are bit sets that grow with the features: avx512_core_bf16 is contained in
     * avx512_core_amx. */
    if ((isa & dnnl_cpu_isa_avx512_core_bf16) != dnnl_cpu_isa_avx512_core_bf16)
        return splade_fail(SPLADE_ERR_UNSUPPORTED,
                           "--precision bf16 on the CPU needs AVX512-BF16 or AMX, which this CPU (or "
                           "$ONEDNN_MAX_CPU_ISA) does not offer (oneDNN ISA 0x%x); use --precision fp32",
                           (unsigned)isa);
    return splade_dnnl_engine() ? SPLADE_OK : SPLADE_ERR_UNSUPPORTED;
}

/* The matmul primitive descriptor for rows x K times K x P plus bias (weights in w_md, or "any"
 * when NULL); no post-ops (splade_dnnl_unit applies them). */
/* Sentinel weight layout: fp32 activations, and fp32 weights read in place from nn.Linear's
 * [N, K] rows (a K x P matrix with strides (1, K)): brgemm runs them at ~200 GFLOP/s of CPU time
 * per core without a reordered copy (OpenBLAS ~150, a quarter of it packing: see gemm_cpu.c). */
static const dnnl_memory_desc_t plain_f32;

static dnnl_primitive_desc_t make_pd(int32_t rows, int32_t K, int32_t P, int32_t ldc, const dnnl_memory_desc_t *w_md)
{
    dnnl_memory_desc_t a, w, b, c;
    dnnl_dims_t wd = {K, P};
    const int f32 = w_md == &plain_f32;
    if (splade_dnnl_md(&a, rows, K, f32 ? dnnl_f32 : dnnl_bf16, K, 1) || splade_dnnl_md(&b, 1, P, dnnl_f32, P, 1) ||
        splade_dnnl_md(&c, rows, P, dnnl_f32, ldc, 1))
        return NULL;
    if (f32) {
        if (splade_dnnl_md(&w, K, P, dnnl_f32, 1, K))
            return NULL;
    } else if (w_md)
        w = *w_md;
    else if (dnnl_memory_desc_init_by_tag(&w, 2, wd, dnnl_bf16, dnnl_format_tag_any) != dnnl_success)
        return NULL;
    dnnl_matmul_desc_t d;
    if (dnnl_matmul_desc_init(&d, &a, &w, &b, &c) != dnnl_success)
        return NULL;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_primitive_desc_create(&pd, &d, NULL, splade_dnnl_engine(), NULL) != dnnl_success)
        pd = NULL;
    return pd;
}

/* The layout the bf16 kernel picks for a full row block (dnnl_weights.h). */
static dnnl_primitive_desc_t layout_pd(int32_t K, int32_t P) { return make_pd(SPLADE_DNNL_ROWS, K, P, P, NULL); }

int splade_dnnl_linear_create(const float *W, const float *bias, int32_t N, int32_t K, splade_dnnl_linear **out)
{
    *out = NULL;
    if (!splade_dnnl_engine())
        return SPLADE_ERR_UNSUPPORTED;
    splade_dnnl_linear *l = calloc(1, sizeof *l);
    if (!l || !(l->bias = malloc((size_t)N * sizeof *l->bias))) {
        free(l);
        return splade_fail(SPLADE_ERR_NOMEM, "oneDNN linear");
    }
    memcpy(l->bias, bias, (size_t)N * sizeof *l->bias);
    int rc = splade_dnnl_weights_create(&l->w, W, dnnl_f32, sizeof *W, N, K, layout_pd, "bf16");
    if (rc) {
        free(l->bias);
        free(l);
    } else {
        *out = l;
    }
    return rc;
}

void splade_dnnl_linear_free(splade_dnnl_linear *l)
{
    if (!l)
        return;
    splade_dnnl_weights_free(&l->w);
    free(l->bias);
    free(l);
}

int32_t splade_dnnl_linear_n(const splade_dnnl_linear *l) { return l->w.N; }
int32_t splade_dnnl_linear_k(const splade_dnnl_linear *l) { return l->w.K; }

static dnnl_primitive_desc_t key_pd(const splade_dnnl_key *k) { return make_pd(k->rows, k->K, k->P, k->ldc, k->w_md); }

int splade_dnnl_unit_to(const splade_dnnl_linear *l, const uint16_t *A, int32_t rows, int32_t p, float *dst,
                        int32_t ldd, int flags)
{
    splade_dnnl_thread *t = splade_dnnl_thread_state();
    const int32_t P = splade_dnnl_weights_width(&l->w, p), c0 = p * SPLADE_DNNL_PANEL;
    const splade_dnnl_key key = {SPLADE_DNNL_KIND_BF16, rows, l->w.K, P, ldd, flags, splade_dnnl_weights_md(&l->w, p)};
    splade_dnnl_prim *e = t ? splade_dnnl_prim_get(t, &key, key_pd) : NULL;
    if (!e)
        return splade_fail(SPLADE_ERR_NOMEM, "oneDNN: bf16 matmul %d x %d x %d", (int)rows, (int)l->w.K, (int)P);
    if (splade_dnnl_prim_run(t, e, A, splade_dnnl_weights_data(&l->w, p), l->bias + c0, dst))
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "oneDNN: bf16 matmul failed");
    return SPLADE_OK;
}

/* One unit into the thread's dense tile, then the epilogue into C: oneDNN 2.6's AMX matmul wants a
 * dense destination (a panel of a wider C, i.e. a row stride above the panel's width, sends it to
 * its reference implementation, ~100x slower), so the residual, GELU and bf16 copy are ours. */
int splade_dnnl_unit(const splade_dnnl_linear *l, const uint16_t *A, int32_t r0, int32_t rows, int32_t p, float *C,
                     int32_t ldc, uint16_t *Cb, int flags)
{
    return splade_dnnl_unit_res(l, A, r0, rows, p, C, C, ldc, Cb, flags);
}

int splade_dnnl_unit_res(const splade_dnnl_linear *l, const uint16_t *A, int32_t r0, int32_t rows, int32_t p,
                         const float *R, float *C, int32_t ldc, uint16_t *Cb, int flags)
{
    splade_dnnl_thread *c = splade_dnnl_thread_state();
    if (!c)
        return splade_fail(SPLADE_ERR_NOMEM, "oneDNN thread state");
    const int32_t P = splade_dnnl_weights_width(&l->w, p), c0 = p * SPLADE_DNNL_PANEL;
    const int32_t computed = flags & SPLADE_DNNL_PAD_ROWS ? splade_dnnl_padded_rows(rows) : rows;
    int rc = splade_dnnl_unit_to(l, A + (size_t)r0 * l->w.K, computed, p, c->tile, P, 0);
    for (int32_t i = 0; !rc && !C && i < rows; i++) { /* the bf16 copy alone: the tile is the row */
        float *t = c->tile + (size_t)i * P;
        if (flags & SPLADE_DNNL_GELU)
            splade_gelu(t, P);
        splade_to_bf16(t, Cb + (size_t)(r0 + i) * ldc + c0, (size_t)P);
    }
    for (int32_t i = 0; !rc && C && i < rows; i++) {
        float *dst = C + (size_t)(r0 + i) * ldc + c0;
        const float *t = c->tile + (size_t)i * P;
        if (flags & SPLADE_DNNL_ACCUM && R != C)
            splade_sum_row(dst, R + (size_t)(r0 + i) * ldc + c0, t, P);
        else if (flags & SPLADE_DNNL_ACCUM)
            splade_add_row(dst, t, P);
        else
            memcpy(dst, t, (size_t)P * sizeof *dst);
        if (flags & SPLADE_DNNL_GELU)
            splade_gelu(dst, P);
        if (Cb)
            splade_to_bf16(dst, Cb + (size_t)(r0 + i) * ldc + c0, (size_t)P);
    }
    return rc;
}

int splade_dnnl_share(const splade_dnnl_linear *l, const uint16_t *A, int32_t M, float *C, uint16_t *Cb, int flags,
                      int tid, int nthreads)
{
    return splade_dnnl_share_res(l, A, M, C, C, Cb, flags, tid, nthreads);
}

int splade_dnnl_share_res(const splade_dnnl_linear *l, const uint16_t *A, int32_t M, const float *R, float *C,
                          uint16_t *Cb, int flags, int tid, int nthreads)
{
    const splade_dnnl_grid g = splade_dnnl_member_grid(M, l->w.n_panels, (size_t)l->w.K * 2, tid, nthreads);
    for (int u = g.u0; u < g.u1; u++) {
        int32_t r0, rows, p;
        splade_dnnl_grid_unit(&g, u, &r0, &rows, &p);
        int rc = splade_dnnl_unit_res(l, A, r0, rows, p, R, C, l->w.N, Cb, flags);
        if (rc)
            return rc;
    }
    return SPLADE_OK;
}

int32_t splade_dnnl_panels(const splade_dnnl_linear *l) { return l->w.n_panels; }

/* The sequence of token r, from b on (rows ascend within a unit). */
static int32_t seq_of(const int32_t *offsets, int32_t b, int32_t r)
{
    while (r >= offsets[b + 1])
        b++;
    return b;
}

/* One unit's rows, rounded to bf16, into their heads' blocks (splade_dnnl_heads). */
static int unit_heads(const splade_dnnl_linear *l, const uint16_t *A, int32_t r0, int32_t rows, int32_t p,
                      const splade_dnnl_heads *o, int flags)
{
    splade_dnnl_thread *c = splade_dnnl_thread_state();
    if (!c)
        return splade_fail(SPLADE_ERR_NOMEM, "oneDNN thread state");
    const int32_t P = splade_dnnl_weights_width(&l->w, p), c0 = p * SPLADE_DNNL_PANEL, dh = o->dh, H = l->w.N;
    const int32_t computed = flags & SPLADE_DNNL_PAD_ROWS ? splade_dnnl_padded_rows(rows) : rows;
    int rc = splade_dnnl_unit_to(l, A + (size_t)r0 * l->w.K, computed, p, c->tile, P, 0);
    int32_t lo = 0, hi = o->B; /* b: the last sequence starting at or before r0 */
    while (hi - lo > 1) {
        int32_t mid = (lo + hi) / 2;
        *(o->offsets[mid] <= r0 ? &lo : &hi) = mid;
    }
    for (int32_t i = 0, b = lo; !rc && i < rows; i++) {
        b = seq_of(o->offsets, b, r0 + i);
        const int32_t s = r0 + i - o->offsets[b], Lp = o->poff[b + 1] - o->poff[b];
        uint16_t *seq = o->base + (size_t)o->poff[b] * H;
        for (int32_t j = 0; j < P; j += dh)
            splade_to_bf16(c->tile + (size_t)i * P + j, seq + ((size_t)(c0 + j) / dh * Lp + s) * dh, (size_t)dh);
    }
    return rc;
}

int splade_dnnl_share_heads(const splade_dnnl_linear *l, const uint16_t *A, int32_t M, const splade_dnnl_heads *o,
                            int flags, int tid, int nthreads)
{
    if (SPLADE_DNNL_PANEL % o->dh || l->w.N % o->dh)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "oneDNN: head width %d does not divide the panels", (int)o->dh);
    const splade_dnnl_grid g = splade_dnnl_member_grid(M, l->w.n_panels, (size_t)l->w.K * 2, tid, nthreads);
    for (int u = g.u0; u < g.u1; u++) {
        int32_t r0, rows, p;
        splade_dnnl_grid_unit(&g, u, &r0, &rows, &p);
        int rc = unit_heads(l, A, r0, rows, p, o, flags);
        if (rc)
            return rc;
    }
    return SPLADE_OK;
}


static pthread_once_t f32_once = PTHREAD_ONCE_INIT;
static int f32_ok;

static void decide_f32(void)
{
    f32_ok = splade_dnnl_engine() && !splade_settings_get()->gemm_cpu_blas;
}

int splade_dnnl_f32_usable(void)
{
    pthread_once(&f32_once, decide_f32);
    return f32_ok;
}

int splade_dnnl_f32_tile(const float *A, int32_t rows, int32_t K, const float *W, const float *bias, int32_t P,
                         float **tile)
{
    splade_dnnl_thread *t = splade_dnnl_thread_state();
    const splade_dnnl_key key = {SPLADE_DNNL_KIND_F32, rows, K, P, P, 0, &plain_f32};
    splade_dnnl_prim *e = t ? splade_dnnl_prim_get(t, &key, key_pd) : NULL;
    if (!e)
        return splade_fail(SPLADE_ERR_NOMEM, "oneDNN: fp32 matmul %d x %d x %d", (int)rows, (int)K, (int)P);
    if (splade_dnnl_prim_run(t, e, A, W, bias, t->tile))
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "oneDNN: fp32 matmul failed");
    *tile = t->tile;
    return SPLADE_OK;
}

#else /* built without oneDNN (NO_DNNL=1 or no libdnnl-dev): the bf16 CPU path says so */

int splade_dnnl_bf16_check(void)
{
    return splade_fail(SPLADE_ERR_UNSUPPORTED, "--precision bf16 on the CPU needs oneDNN, and this build has "
                                               "none (install libdnnl-dev and rebuild); use --precision fp32");
}
int splade_dnnl_linear_create(const float *W, const float *bias, int32_t N, int32_t K, splade_dnnl_linear **out)
{
    (void)W, (void)bias, (void)N, (void)K;
    *out = NULL;
    return splade_dnnl_bf16_check();
}
void splade_dnnl_linear_free(splade_dnnl_linear *l) { (void)l; }
int32_t splade_dnnl_linear_n(const splade_dnnl_linear *l) { return (void)l, 0; }
int32_t splade_dnnl_linear_k(const splade_dnnl_linear *l) { return (void)l, 0; }
int32_t splade_dnnl_panels(const splade_dnnl_linear *l) { return (void)l, 0; }
int splade_dnnl_unit_to(const splade_dnnl_linear *l, const uint16_t *A, int32_t rows, int32_t p, float *dst,
                        int32_t ldd, int flags)
{
    (void)l, (void)A, (void)rows, (void)p, (void)dst, (void)ldd, (void)flags;
    return splade_dnnl_bf16_check();
}
int splade_dnnl_f32_usable(void) { return 0; }
int splade_dnnl_f32_tile(const float *A, int32_t rows, int32_t K, const float *W, const float *bias, int32_t P,
                         float **tile)
{
    (void)A, (void)rows, (void)K, (void)W, (void)bias, (void)P, (void)tile;
    return splade_dnnl_bf16_check();
}
int splade_dnnl_share(const splade_dnnl_linear *l, const uint16_t *A, int32_t M, float *C, uint16_t *Cb, int flags,
                      int tid, int nthreads)
{
    (void)l, (void)A, (void)M, (void)C, (void)Cb, (void)flags, (void)tid, (void)nthreads;
    return splade_dnnl_bf16_check();
}
int splade_dnnl_share_res(const splade_dnnl_linear *l, const uint16_t *A, int32_t M, const float *R, float *C,
                          uint16_t *Cb, int flags, int tid, int nthreads)
{
    (void)R;
    return splade_dnnl_share(l, A, M, C, Cb, flags, tid, nthreads);
}
int splade_dnnl_share_heads(const splade_dnnl_linear *l, const uint16_t *A, int32_t M, const splade_dnnl_heads *o,
                            int flags, int tid, int nthreads)
{
    (void)o;
    return splade_dnnl_share(l, A, M, NULL, NULL, flags, tid, nthreads);
}
#endif

int32_t splade_dnnl_padded_rows(int32_t rows) { return rows > 16 ? (rows + 7) / 8 * 8 : rows; }

splade_dnnl_grid splade_dnnl_member_grid(int32_t M, int32_t np, size_t row_bytes, int tid, int nthreads)
{
    splade_dnnl_grid g = {.M = M, .rb = M <= 64 ? M : SPLADE_DNNL_ROWS, .np = np};
    const int32_t n_rb = g.rb ? (M + g.rb - 1) / g.rb : 0;
    const size_t group_bytes = (size_t)SPLADE_DNNL_GROUP * (size_t)g.rb * row_bytes;
    g.group = group_bytes <= SPLADE_DNNL_GROUP_BYTES ? SPLADE_DNNL_GROUP : n_rb;
    g.group = g.group < 1 ? 1 : g.group;
    splade_team_split(tid, nthreads, n_rb * np, 1, &g.u0, &g.u1);
    return g;
}

/* Units go by groups of g->group row blocks (the last group may be shorter), panels outer within a
 * group, row blocks inner. */
void splade_dnnl_grid_unit(const splade_dnnl_grid *g, int u, int32_t *r0, int32_t *rows, int32_t *p)
{
    const int32_t n_rb = (g->M + g->rb - 1) / g->rb, per = g->group * g->np;
    const int32_t first = u / per * g->group, in = u % per;
    const int32_t span = n_rb - first < g->group ? n_rb - first : g->group;
    *r0 = (first + in % span) * g->rb;
    *rows = g->M - *r0 < g->rb ? g->M - *r0 : g->rb;
    *p = in / span;
}

static void to_bf16_scalar(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &src[i], 4);
        dst[i] = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

__attribute__((target("avx512f,avx512bf16"))) static void to_bf16_avx512(const float *src, uint16_t *dst, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(dst + i), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(src + i)));
    to_bf16_scalar(src + i, dst + i, n - i);
}

void splade_to_bf16(const float *src, uint16_t *dst, size_t n)
{
    static int has = -1;
    if (has < 0)
        has = __builtin_cpu_supports("avx512bf16");
    if (has)
        to_bf16_avx512(src, dst, n);
    else
        to_bf16_scalar(src, dst, n);
}
#else
void splade_to_bf16(const float *src, uint16_t *dst, size_t n) { to_bf16_scalar(src, dst, n); }
#endif
