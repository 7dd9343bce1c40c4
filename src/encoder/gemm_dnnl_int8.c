/* int8 nn.Linear GEMMs through oneDNN's matmul (gemm_dnnl_int8.h). Weights are quantized and
 * reordered once per panel into the blocked layout oneDNN's int8 kernel picks; each thread keeps
 * its own primitives (one per unit shape), s32 tile and stream (dnnl_cache.h), so team members
 * share no mutable oneDNN state. */
#include "encoder/gemm_dnnl_int8.h"
#include "common/cpu_team.h"
#include "common/fail.h"
#include "encoder/gemm_dnnl.h"
#include "encoder/rowops_cpu.h"
#include "splade.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Row quantization (gemm_dnnl_int8.h): the range is widened to hold 0, so zero stays exact and the
 * zero point is in [0, 255]; an all-zero row gets scale 1. Rounding is to nearest even in both
 * versions below (nearbyintf under the default mode, and cvtps2dq), so they give the same bytes. */
static int has_avx512(void);
static void min_max_avx512(const float *x, size_t K, float *mn, float *mx);

static void row_range(const float *x, size_t K, float *scale, int32_t *zp, float *inv)
{
    float mn = 0.0f, mx = 0.0f;
    if (has_avx512())
        min_max_avx512(x, K, &mn, &mx);
    else
        for (size_t k = 0; k < K; k++) {
            mn = x[k] < mn ? x[k] : mn;
            mx = x[k] > mx ? x[k] : mx;
        }
    float s = (mx - mn) / 255.0f;
    s = s > 0.0f ? s : 1.0f;
    *scale = s, *inv = 1.0f / s;
    int32_t z = (int32_t)nearbyintf(-mn * *inv);
    *zp = z < 0 ? 0 : z > 255 ? 255 : z;
}

static void quantize_scalar(const float *x, int32_t K, float inv, int32_t zp, uint8_t *q)
{
    for (int32_t k = 0; k < K; k++) {
        int32_t v = (int32_t)nearbyintf(x[k] * inv) + zp;
        q[k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

__attribute__((target("avx512f"))) static void quantize_avx512(const float *x, int32_t K, float inv, int32_t zp,
                                                                 uint8_t *q)
{
    const __m512 vi = _mm512_set1_ps(inv);
    const __m512i vz = _mm512_set1_epi32(zp), lo = _mm512_setzero_si512(), hi = _mm512_set1_epi32(255);
    int32_t k = 0;
    for (; k + 16 <= K; k += 16) {
        __m512i v = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + k), vi)), vz);
        v = _mm512_min_epi32(_mm512_max_epi32(v, lo), hi);
        _mm_storeu_si128((__m128i *)(q + k), _mm512_cvtepi32_epi8(v));
    }
    quantize_scalar(x + k, K - k, inv, zp, q + k);
}

/* min and max of x[0..K) and 0 (exact in any order) */
__attribute__((target("avx512f"))) static void min_max_avx512(const float *x, size_t K, float *mn, float *mx)
{
    __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
    for (size_t k = 0; k < K; k += 16) {
        const __mmask16 m = K - k >= 16 ? 0xFFFF : (__mmask16)((1u << (K - k)) - 1);
        const __m512 v = _mm512_maskz_loadu_ps(m, x + k); /* masked lanes read 0, inside the range */
        lo = _mm512_min_ps(lo, v), hi = _mm512_max_ps(hi, v);
    }
    *mn = _mm512_reduce_min_ps(lo), *mx = _mm512_reduce_max_ps(hi);
}

#ifdef SPLADE_HAVE_DNNL /* (the epilogue of the oneDNN units) */
/* d[j] (+)= (a[j] - zp * cs[j]) * (sr * ws[j]) + b[j], j < P; next (or NULL): a later row of the
 * destination, whose lines are requested for writing meanwhile (the rows are P floats at a stride of
 * N: short runs the hardware prefetcher does not start on, and the stores waited on them). */
__attribute__((target("avx512f,prfchw"))) static void dequant_row_avx512(const int32_t *a, const int32_t *cs,
                                                                         const float *ws, const float *b, float sr,
                                                                         int32_t zp, float *d, int32_t P, int accum,
                                                                         const float *next)
{
    const __m512i vz = _mm512_set1_epi32(zp);
    const __m512 vs = _mm512_set1_ps(sr);
    for (int32_t j = 0; j < P; j += 16) {
        if (next)
            __builtin_prefetch(next + j, 1, 3);
        const __mmask16 m = P - j >= 16 ? 0xFFFF : (__mmask16)((1u << (P - j)) - 1);
        const __m512i v = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(m, a + j),
                                           _mm512_mullo_epi32(vz, _mm512_maskz_loadu_epi32(m, cs + j)));
        __m512 y = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(v), _mm512_mul_ps(vs, _mm512_maskz_loadu_ps(m, ws + j))),
                                 _mm512_maskz_loadu_ps(m, b + j));
        if (accum)
            y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(m, d + j));
        _mm512_mask_storeu_ps(d + j, m, y);
    }
}
#endif

static int has_avx512(void)
{
    static int has = -1;
    if (has < 0)
        has = __builtin_cpu_supports("avx512f");
    return has;
}
#else
static int has_avx512(void) { return 0; }
static void min_max_avx512(const float *x, size_t K, float *mn, float *mx) { (void)x, (void)K, (void)mn, (void)mx; }
#ifdef SPLADE_HAVE_DNNL
static void dequant_row_avx512(const int32_t *a, const int32_t *cs, const float *ws, const float *b, float sr,
                               int32_t zp, float *d, int32_t P, int accum, const float *next)
{
    (void)a, (void)cs, (void)ws, (void)b, (void)sr, (void)zp, (void)d, (void)P, (void)accum, (void)next;
}
#endif
static void quantize_avx512(const float *x, int32_t K, float inv, int32_t zp, uint8_t *q)
{
    quantize_scalar(x, K, inv, zp, q);
}
#endif

void splade_q8_quantize(const float *x, int32_t r0, int32_t r1, int32_t K, const splade_q8_rows *a)
{
    const int v = has_avx512();
    for (int32_t r = r0; r < r1; r++) {
        const float *row = x + (size_t)r * K;
        float inv;
        row_range(row, (size_t)K, &a->scale[r], &a->zp[r], &inv);
        (v ? quantize_avx512 : quantize_scalar)(row, K, inv, a->zp[r], a->q + (size_t)r * K);
    }
}

void splade_q8_quantize_tensor(const float *x, int32_t T, int32_t r0, int32_t r1, int32_t K, const splade_q8_rows *a)
{
    float s, inv;
    int32_t zp;
    row_range(x, (size_t)T * K, &s, &zp, &inv);
    for (int32_t r = r0; r < r1; r++) {
        a->scale[r] = s, a->zp[r] = zp;
        quantize_scalar(x + (size_t)r * K, K, inv, zp, a->q + (size_t)r * K);
    }
}

#ifdef SPLADE_HAVE_DNNL
#include "encoder/dnnl_cache.h"
#include "encoder/dnnl_weights.h"

struct splade_q8_linear {
    splade_dnnl_weights w;              /* the s8 weights in the int8 kernel's blocked layout, per panel */
    float *bias, *w_scale;              /* [N] */
    int32_t *colsum;                    /* [N]: sum over k of the s8 weights (the zero point's term) */
};

int splade_dnnl_int8_check(void)
{
    const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    /* ISA values are bit sets that grow with the features: AMX contains AVX512-VNNI. */
    const int vnni = (isa & dnnl_cpu_isa_avx512_core_vnni) == dnnl_cpu_isa_avx512_core_vnni ||
                     (isa & dnnl_cpu_isa_avx2_vnni) == dnnl_cpu_isa_avx2_vnni;
    if (!vnni)
        return splade_fail(SPLADE_ERR_UNSUPPORTED,
                           "--precision int8 on the CPU needs VNNI (AVX512-VNNI, AVX-VNNI or AMX-INT8), which "
                           "this CPU (or $ONEDNN_MAX_CPU_ISA) does not offer (oneDNN ISA 0x%x); use --precision fp32",
                           (unsigned)isa);
    return splade_dnnl_engine() ? SPLADE_OK : SPLADE_ERR_UNSUPPORTED;
}

/* u8 [rows, K] x s8 [K, P] (layout w_md, or "any" when NULL) -> s32 [rows, P], dense. */
static dnnl_primitive_desc_t make_pd(int32_t rows, int32_t K, int32_t P, const dnnl_memory_desc_t *w_md)
{
    dnnl_memory_desc_t a, w, c;
    dnnl_dims_t wd = {K, P};
    if (splade_dnnl_md(&a, rows, K, dnnl_u8, K, 1) || splade_dnnl_md(&c, rows, P, dnnl_s32, P, 1))
        return NULL;
    if (w_md)
        w = *w_md;
    else if (dnnl_memory_desc_init_by_tag(&w, 2, wd, dnnl_s8, dnnl_format_tag_any) != dnnl_success)
        return NULL;
    dnnl_matmul_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_matmul_desc_init(&d, &a, &w, NULL, &c) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &d, NULL, splade_dnnl_engine(), NULL) != dnnl_success)
        return NULL;
    return pd;
}

/* The layout the int8 kernel picks for a full row block (dnnl_weights.h). */
static dnnl_primitive_desc_t layout_pd(int32_t K, int32_t P) { return make_pd(SPLADE_DNNL_ROWS, K, P, NULL); }

/* Per output channel: symmetric s8 with scale max|W[n,:]| / 127 (an all-zero row: scale 1). */
static void quantize_weights(const float *W, int32_t N, int32_t K, int8_t *q, float *scale, int32_t *colsum)
{
    for (int32_t n = 0; n < N; n++) {
        const float *w = W + (size_t)n * K;
        float m = 0.0f;
        for (int32_t k = 0; k < K; k++)
            m = fabsf(w[k]) > m ? fabsf(w[k]) : m;
        const float s = m > 0.0f ? m / 127.0f : 1.0f, inv = 1.0f / s;
        int32_t sum = 0;
        for (int32_t k = 0; k < K; k++) {
            int32_t v = (int32_t)nearbyintf(w[k] * inv);
            v = v < -127 ? -127 : v > 127 ? 127 : v;
            q[(size_t)n * K + k] = (int8_t)v;
            sum += v;
        }
        scale[n] = s, colsum[n] = sum;
    }
}

int splade_q8_linear_create(const float *W, const float *bias, int32_t N, int32_t K, splade_q8_linear **out)
{
    *out = NULL;
    int rc = splade_dnnl_int8_check();
    if (rc)
        return rc;
    splade_q8_linear *l = calloc(1, sizeof *l);
    int8_t *Wq = malloc((size_t)N * K);
    if (l) {
        l->bias = malloc((size_t)N * sizeof *l->bias);
        l->w_scale = malloc((size_t)N * sizeof *l->w_scale);
        l->colsum = malloc((size_t)N * sizeof *l->colsum);
    }
    if (!l || !Wq || !l->bias || !l->w_scale || !l->colsum)
        rc = splade_fail(SPLADE_ERR_NOMEM, "int8 linear %d x %d", (int)N, (int)K);
    if (!rc) {
        memcpy(l->bias, bias, (size_t)N * sizeof *l->bias);
        quantize_weights(W, N, K, Wq, l->w_scale, l->colsum);
        rc = splade_dnnl_weights_create(&l->w, Wq, dnnl_s8, sizeof *Wq, N, K, layout_pd, "int8");
    }
    free(Wq);
    if (rc)
        splade_q8_linear_free(l);
    else
        *out = l;
    return rc;
}

void splade_q8_linear_free(splade_q8_linear *l)
{
    if (!l)
        return;
    splade_dnnl_weights_free(&l->w);
    free(l->bias), free(l->w_scale), free(l->colsum);
    free(l);
}

int32_t splade_q8_linear_n(const splade_q8_linear *l) { return l->w.N; }
int32_t splade_q8_linear_k(const splade_q8_linear *l) { return l->w.K; }
int32_t splade_q8_panels(const splade_q8_linear *l) { return l->w.n_panels; }

static dnnl_primitive_desc_t key_pd(const splade_dnnl_key *k) { return make_pd(k->rows, k->K, k->P, k->w_md); }

enum { AHEAD = 2 }; /* rows: how far ahead dequant_row_avx512 requests its destination lines */

/* acc (s32 [rows][P]) -> dst: scale_r * scale_n * (acc - zp_r * colsum_n) + b_n, then the flags. */
static void dequant(const splade_q8_linear *l, const splade_q8_rows *A, int32_t r0, int32_t rows, int32_t c0,
                    int32_t P, const int32_t *acc, float *dst, int32_t ldd, int flags)
{
    const float *ws = l->w_scale + c0, *b = l->bias + c0;
    const int32_t *cs = l->colsum + c0;
    for (int32_t i = 0; i < rows; i++) {
        const float sr = A->scale[r0 + i];
        const int32_t zp = A->zp[r0 + i];
        const int32_t *a = acc + (size_t)i * P;
        float *d = dst + (size_t)i * ldd;
        if (has_avx512())
            dequant_row_avx512(a, cs, ws, b, sr, zp, d, P, flags & SPLADE_DNNL_ACCUM,
                               i + AHEAD < rows ? d + (size_t)AHEAD * ldd : NULL);
        else if (flags & SPLADE_DNNL_ACCUM)
            for (int32_t j = 0; j < P; j++)
                d[j] += (float)(a[j] - zp * cs[j]) * (sr * ws[j]) + b[j];
        else
            for (int32_t j = 0; j < P; j++)
                d[j] = (float)(a[j] - zp * cs[j]) * (sr * ws[j]) + b[j];
        if (flags & SPLADE_DNNL_GELU)
            splade_gelu(d, P);
    }
}

int splade_q8_unit(const splade_q8_linear *l, const splade_q8_rows *A, int32_t r0, int32_t rows, int32_t p,
                   float *dst, int32_t ldd, int flags)
{
    splade_dnnl_thread *t = splade_dnnl_thread_state();
    const int32_t P = splade_dnnl_weights_width(&l->w, p), K = l->w.K;
    const splade_dnnl_key key = {SPLADE_DNNL_KIND_S8, rows, K, P, P /* the dense tile */, 0,
                                 splade_dnnl_weights_md(&l->w, p)};
    splade_dnnl_prim *e = t ? splade_dnnl_prim_get(t, &key, key_pd) : NULL;
    if (!e)
        return splade_fail(SPLADE_ERR_NOMEM, "oneDNN: int8 matmul %d x %d x %d", (int)rows, (int)K, (int)P);
    if (splade_dnnl_prim_run(t, e, A->q + (size_t)r0 * K, splade_dnnl_weights_data(&l->w, p), NULL, t->tile_s32))
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "oneDNN: int8 matmul failed");
    dequant(l, A, r0, rows, p * SPLADE_DNNL_PANEL, P, t->tile_s32, dst, ldd, flags);
    return SPLADE_OK;
}

#else /* built without oneDNN: `--precision int8` on the CPU says so */

struct splade_q8_linear {
    int32_t N;
};

int splade_dnnl_int8_check(void)
{
    return splade_fail(SPLADE_ERR_UNSUPPORTED, "--precision int8 on the CPU needs oneDNN, and this build has "
                                               "none (install libdnnl-dev and rebuild); use --precision fp32");
}
int splade_q8_linear_create(const float *W, const float *bias, int32_t N, int32_t K, splade_q8_linear **out)
{
    (void)W, (void)bias, (void)N, (void)K;
    *out = NULL;
    return splade_dnnl_int8_check();
}
void splade_q8_linear_free(splade_q8_linear *l) { (void)l; }
int32_t splade_q8_linear_n(const splade_q8_linear *l) { return (void)l, 0; }
int32_t splade_q8_linear_k(const splade_q8_linear *l) { return (void)l, 0; }
int32_t splade_q8_panels(const splade_q8_linear *l) { return (void)l, 0; }
int splade_q8_unit(const splade_q8_linear *l, const splade_q8_rows *A, int32_t r0, int32_t rows, int32_t p,
                   float *dst, int32_t ldd, int flags)
{
    (void)l, (void)A, (void)r0, (void)rows, (void)p, (void)dst, (void)ldd, (void)flags;
    return splade_dnnl_int8_check();
}
#endif

int splade_q8_share(const splade_q8_linear *l, const splade_q8_rows *A, int32_t M, float *C, int flags, int tid,
                    int nthreads)
{
    const int32_t N = splade_q8_linear_n(l);
    const splade_dnnl_grid g = splade_dnnl_member_grid(M, splade_q8_panels(l), (size_t)splade_q8_linear_k(l), tid, nthreads);
    for (int u = g.u0; u < g.u1; u++) {
        int32_t r0, rows, p;
        splade_dnnl_grid_unit(&g, u, &r0, &rows, &p);
        int rc = splade_q8_unit(l, A, r0, rows, p, C + (size_t)r0 * N + (size_t)p * SPLADE_DNNL_PANEL, N, flags);
        if (rc)
            return rc;
    }
    return SPLADE_OK;
}
