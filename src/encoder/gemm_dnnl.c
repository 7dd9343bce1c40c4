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

struct splade_dnnl_linear {
    int32_t N, K, n_panels;
    dnnl_memory_desc_t w_md;  /* the blocked layout of one full panel (a narrower last panel has its own) */
    dnnl_memory_desc_t w_md_last;
    dnnl_memory_t *w_mem;     /* per panel: the reordered bf16 weights (oneDNN-owned) */
    float *bias;              /* [N] */
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

static int md2(dnnl_memory_desc_t *md, int64_t r, int64_t c, dnnl_data_type_t dt, int64_t ld)
{
    dnnl_dims_t dims = {r, c}, strides = {ld, 1};
    return dnnl_memory_desc_init_by_strides(md, 2, dims, dt, strides) == dnnl_success ? 0 : -1;
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
    dnnl_dims_t wd = {K, P}, ws = {1, K};
    const int f32 = w_md == &plain_f32;
    if (md2(&a, rows, K, f32 ? dnnl_f32 : dnnl_bf16, K) || md2(&b, 1, P, dnnl_f32, P) || md2(&c, rows, P, dnnl_f32, ldc))
        return NULL;
    if (f32) {
        if (dnnl_memory_desc_init_by_strides(&w, 2, wd, dnnl_f32, ws) != dnnl_success)
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

static int32_t panel_width(const splade_dnnl_linear *l, int32_t p)
{
    int32_t c0 = p * SPLADE_DNNL_PANEL;
    return l->N - c0 < SPLADE_DNNL_PANEL ? l->N - c0 : SPLADE_DNNL_PANEL;
}

/* Reorders panel p of W (fp32 [N, K] row-major, i.e. K x P with strides (1, K)) into bf16 md. */
static int reorder_panel(splade_dnnl_linear *l, const float *W, int32_t p, const dnnl_memory_desc_t *md)
{
    const int32_t P = panel_width(l, p);
    dnnl_engine_t engine = splade_dnnl_engine();
    dnnl_memory_desc_t src;
    dnnl_dims_t dims = {l->K, P}, strides = {1, l->K};
    dnnl_memory_t from = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t r = NULL;
    dnnl_stream_t s = NULL;
    int ok = dnnl_memory_desc_init_by_strides(&src, 2, dims, dnnl_f32, strides) == dnnl_success &&
             dnnl_memory_create(&from, &src, engine, (void *)(W + (size_t)p * SPLADE_DNNL_PANEL * l->K)) == dnnl_success &&
             dnnl_memory_create(&l->w_mem[p], md, engine, DNNL_MEMORY_ALLOCATE) == dnnl_success &&
             dnnl_reorder_primitive_desc_create(&rpd, &src, engine, md, engine, NULL) == dnnl_success &&
             dnnl_primitive_create(&r, rpd) == dnnl_success &&
             dnnl_stream_create(&s, engine, dnnl_stream_default_flags) == dnnl_success;
    if (ok) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, l->w_mem[p]}};
        ok = dnnl_primitive_execute(r, s, 2, args) == dnnl_success && dnnl_stream_wait(s) == dnnl_success;
    }
    if (s)
        dnnl_stream_destroy(s);
    if (r)
        dnnl_primitive_destroy(r);
    if (rpd)
        dnnl_primitive_desc_destroy(rpd);
    if (from)
        dnnl_memory_destroy(from);
    return ok ? SPLADE_OK : splade_fail(SPLADE_ERR_NOMEM, "oneDNN: reordering a %d x %d weight panel", (int)P, (int)l->K);
}

/* The weights' layout for panels of width P: what the kernel picks for a full row block. */
static int pick_layout(int32_t K, int32_t P, dnnl_memory_desc_t *md)
{
    dnnl_primitive_desc_t pd = make_pd(SPLADE_DNNL_ROWS, K, P, P, NULL);
    if (!pd)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "oneDNN: no bf16 matmul for K=%d N=%d", (int)K, (int)P);
    *md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_primitive_desc_destroy(pd);
    return SPLADE_OK;
}

int splade_dnnl_linear_create(const float *W, const float *bias, int32_t N, int32_t K, splade_dnnl_linear **out)
{
    *out = NULL;
    if (!splade_dnnl_engine())
        return SPLADE_ERR_UNSUPPORTED;
    splade_dnnl_linear *l = calloc(1, sizeof *l);
    if (!l)
        return splade_fail(SPLADE_ERR_NOMEM, "oneDNN linear");
    l->N = N, l->K = K, l->n_panels = (N + SPLADE_DNNL_PANEL - 1) / SPLADE_DNNL_PANEL;
    l->w_mem = calloc((size_t)l->n_panels, sizeof *l->w_mem);
    l->bias = malloc((size_t)N * sizeof *l->bias);
    if (!l->w_mem || !l->bias) {
        splade_dnnl_linear_free(l);
        return splade_fail(SPLADE_ERR_NOMEM, "oneDNN linear");
    }
    memcpy(l->bias, bias, (size_t)N * sizeof *l->bias);
    const int32_t last = panel_width(l, l->n_panels - 1);
    int rc = pick_layout(K, N < SPLADE_DNNL_PANEL ? N : SPLADE_DNNL_PANEL, &l->w_md);
    if (!rc)
        rc = last == SPLADE_DNNL_PANEL ? (l->w_md_last = l->w_md, SPLADE_OK) : pick_layout(K, last, &l->w_md_last);
    for (int32_t p = 0; !rc && p < l->n_panels; p++)
        rc = reorder_panel(l, W, p, p == l->n_panels - 1 ? &l->w_md_last : &l->w_md);
    if (rc)
        splade_dnnl_linear_free(l);
    else
        *out = l;
    return rc;
}

void splade_dnnl_linear_free(splade_dnnl_linear *l)
{
    if (!l)
        return;
    for (int32_t p = 0; l->w_mem && p < l->n_panels; p++)
        if (l->w_mem[p])
            dnnl_memory_destroy(l->w_mem[p]);
    free(l->w_mem);
    free(l->bias);
    free(l);
}

int32_t splade_dnnl_linear_n(const splade_dnnl_linear *l) { return l->N; }
int32_t splade_dnnl_linear_k(const splade_dnnl_linear *l) { return l->K; }

static dnnl_primitive_desc_t key_pd(const splade_dnnl_key *k) { return make_pd(k->rows, k->K, k->P, k->ldc, k->w_md); }

int splade_dnnl_unit_to(const splade_dnnl_linear *l, const uint16_t *A, int32_t rows, int32_t p, float *dst,
                        int32_t ldd, int flags)
{
    splade_dnnl_thread *t = splade_dnnl_thread_state();
    const int32_t P = panel_width(l, p), c0 = p * SPLADE_DNNL_PANEL;
    const splade_dnnl_key key = {SPLADE_DNNL_KIND_BF16, rows, l->K, P, ldd, flags,
                                 p == l->n_panels - 1 ? &l->w_md_last : &l->w_md};
    splade_dnnl_prim *e = t ? splade_dnnl_prim_get(t, &key, key_pd) : NULL;
    if (!e)
        return splade_fail(SPLADE_ERR_NOMEM, "oneDNN: bf16 matmul %d x %d x %d", (int)rows, (int)l->K, (int)P);
    void *wh;
    dnnl_memory_get_data_handle(l->w_mem[p], &wh);
    if (splade_dnnl_prim_run(t, e, A, wh, l->bias + c0, dst))
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "oneDNN: bf16 matmul failed");
    return SPLADE_OK;
}

/* One unit into the thread's dense tile, then the epilogue into C: oneDNN 2.6's AMX matmul wants a
 * dense destination (a panel of a wider C, i.e. a row stride above the panel's width, sends it to
 * its reference implementation, ~100x slower), so the residual, GELU and bf16 copy are ours. */
int splade_dnnl_unit(const splade_dnnl_linear *l, const uint16_t *A, int32_t r0, int32_t rows, int32_t p, float *C,
                     int32_t ldc, uint16_t *Cb, int flags)
{
    splade_dnnl_thread *c = splade_dnnl_thread_state();
    if (!c)
        return splade_fail(SPLADE_ERR_NOMEM, "oneDNN thread state");
    const int32_t P = panel_width(l, p), c0 = p * SPLADE_DNNL_PANEL;
    int rc = splade_dnnl_unit_to(l, A + (size_t)r0 * l->K, rows, p, c->tile, P, 0);
    for (int32_t i = 0; !rc && i < rows; i++) {
        float *dst = C + (size_t)(r0 + i) * ldc + c0;
        const float *t = c->tile + (size_t)i * P;
        if (flags & SPLADE_DNNL_ACCUM)
            for (int32_t j = 0; j < P; j++)
                dst[j] += t[j];
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
    const int32_t rb = M <= 64 ? M : SPLADE_DNNL_ROWS, n_rb = (M + rb - 1) / rb;
    int u0, u1;
    splade_team_split(tid, nthreads, n_rb * l->n_panels, 1, &u0, &u1);
    for (int u = u0; u < u1; u++) {
        const int32_t r0 = u / l->n_panels * rb, rows = M - r0 < rb ? M - r0 : rb;
        int rc = splade_dnnl_unit(l, A, r0, rows, u % l->n_panels, C, l->N, Cb, flags);
        if (rc)
            return rc;
    }
    return SPLADE_OK;
}

int32_t splade_dnnl_panels(const splade_dnnl_linear *l) { return l->n_panels; }

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
#endif

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
