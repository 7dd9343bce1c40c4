/* bf16 attention for the reduced-precision CPU forwards (attention_bf16.h). Per (sequence, head):
 * q, k, v rounded to bf16 into dense [Lp, dh] blocks (Lp = L rounded up to PAD rows, zeros below),
 * S = Q·Kᵀ by a oneDNN bf16 matmul into fp32, softmax in fp32 written as bf16 probabilities (the
 * padding keys' columns 0), then ctx = P·V by a second matmul. Why: in the int8 forward the fp32
 * OpenBLAS attention was 17% of a 256-token document's time (sgemm and its packing), while AMX runs
 * the same bf16 products several times faster (bench/results/cpu-attention-2026-11-25.md). Lengths
 * are padded so that a thread keeps a few primitives (one per Lp) instead of one per length, and the
 * shapes suit the AMX tiles. The primitives live in the shared per-thread cache (dnnl_cache.h). */
#include "encoder/attention_bf16.h"
#include "common/fail.h"
#include "encoder/gemm_dnnl.h"
#include "splade.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

enum { PAD = 32, SHORT_L = 64 }; /* SHORT_L: attention_cpu.c's short kernel takes L <= 64 */

static int32_t padded(int32_t L) { return (L + PAD - 1) / PAD * PAD; }

int32_t splade_attention_bf16_padded(int32_t L) { return padded(L); }

/* Blocks of the scratch, in floats, each a multiple of 16 (64-byte aligned). */
static size_t up16(size_t n) { return (n + 15) / 16 * 16; }

size_t splade_attention_bf16_scratch_floats(int32_t L, int32_t dh)
{
    const size_t Lp = (size_t)padded(L);
    return up16(Lp * Lp) + up16(Lp * Lp / 2) + 3 * up16(Lp * (size_t)dh / 2) + up16(Lp * (size_t)dh);
}

#ifdef SPLADE_HAVE_DNNL
#include "encoder/dnnl_cache.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int bf16_ok, has_cvt; /* has_cvt: AVX512-BF16's vcvtneps2bf16 (softmax_bf16's last pass) */

static void decide(void)
{
    bf16_ok = splade_dnnl_bf16_check() == SPLADE_OK;
#if defined(__x86_64__) && defined(__GNUC__)
    has_cvt = __builtin_cpu_supports("avx512bf16");
#endif
}

int splade_attention_bf16_usable(int32_t L)
{
    pthread_once(&once, decide);
    return bf16_ok && L > SHORT_L;
}

/* Sentinel weight layouts telling the two products apart in the cache: K read as Kᵀ [dh, Lp]
 * (strides 1, dh), and V read as it is [Lp, dh]. */
static const dnnl_memory_desc_t kt_layout, v_layout;

/* rows x K (bf16, dense) times K x P (bf16, the key's layout) into rows x P (fp32, dense). */
static dnnl_primitive_desc_t make_pd(const splade_dnnl_key *k)
{
    dnnl_memory_desc_t a, w, c;
    const int kt = k->w_md == &kt_layout;
    if (splade_dnnl_md(&a, k->rows, k->K, dnnl_bf16, k->K, 1) || splade_dnnl_md(&c, k->rows, k->P, dnnl_f32, k->ldc, 1) ||
        (kt ? splade_dnnl_md(&w, k->K, k->P, dnnl_bf16, 1, k->K) : splade_dnnl_md(&w, k->K, k->P, dnnl_bf16, k->P, 1)))
        return NULL;
    dnnl_matmul_desc_t d;
    if (dnnl_matmul_desc_init(&d, &a, &w, NULL, &c) != dnnl_success)
        return NULL;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_primitive_desc_create(&pd, &d, NULL, splade_dnnl_engine(), NULL) != dnnl_success)
        pd = NULL;
    return pd;
}

static int matmul(splade_dnnl_thread *t, const dnnl_memory_desc_t *layout, int32_t rows, int32_t K, int32_t P,
                  const uint16_t *a, const uint16_t *w, float *c)
{
    const splade_dnnl_key key = {SPLADE_DNNL_KIND_ATTN, rows, K, P, P, 0, layout};
    splade_dnnl_prim *e = splade_dnnl_prim_get(t, &key, make_pd);
    if (!e)
        return splade_fail(SPLADE_ERR_NOMEM, "oneDNN: bf16 attention matmul %d x %d x %d", (int)rows, (int)K, (int)P);
    if (splade_dnnl_prim_run(t, e, a, w, NULL, c))
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "oneDNN: bf16 attention matmul failed");
    return SPLADE_OK;
}

/* dst [Lp, dh] dense bf16 = rows of src (stride ld), zeros from row L. */
static void rows_to_bf16(const float *src, int32_t ld, int32_t L, int32_t Lp, int32_t dh, uint16_t *dst)
{
    for (int32_t i = 0; i < L; i++)
        splade_to_bf16(src + (size_t)i * ld, dst + (size_t)i * dh, (size_t)dh);
    memset(dst + (size_t)L * dh, 0, (size_t)(Lp - L) * dh * sizeof *dst);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma")))

/* glibc's libmvec expf, 16 lanes, as attention_cpu.c (the bf16 check implies AVX-512). */
AVX512 __m512 _ZGVeN16v_expf(__m512 x);

/* r[0..L) = exp((r - max) * scale) in place; returns their sum. */
AVX512 static float exp_row(float *r, int32_t L, float scale)
{
    __m512 mx = _mm512_set1_ps(-INFINITY), sum = _mm512_setzero_ps();
    for (int32_t j = 0; j < L; j += 16) {
        __mmask16 m = (__mmask16)(L - j >= 16 ? 0xFFFF : (1u << (L - j)) - 1);
        mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), m, r + j));
    }
    const __m512 vmax = _mm512_set1_ps(_mm512_reduce_max_ps(mx)), vs = _mm512_set1_ps(scale);
    for (int32_t j = 0; j < L; j += 16) {
        __mmask16 m = (__mmask16)(L - j >= 16 ? 0xFFFF : (1u << (L - j)) - 1);
        __m512 x = _mm512_mul_ps(_mm512_sub_ps(_mm512_mask_loadu_ps(vmax, m, r + j), vmax), vs);
        __m512 e = _mm512_maskz_mov_ps(m, _ZGVeN16v_expf(x));
        sum = _mm512_add_ps(sum, e);
        _mm512_mask_storeu_ps(r + j, m, e);
    }
    return _mm512_reduce_add_ps(sum);
}

/* p[0..L) = bf16(r * s), round to nearest even as splade_to_bf16: one pass for the normalization
 * and the rounding (two passes cost ~1% of an int8 document's time). */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) static void scale_bf16_avx512(const float *r,
                                                                                            int32_t L, float s,
                                                                                            uint16_t *p)
{
    const __m512 vs = _mm512_set1_ps(s);
    for (int32_t j = 0; j < L; j += 16) {
        __mmask16 m = (__mmask16)(L - j >= 16 ? 0xFFFF : (1u << (L - j)) - 1);
        __m256i b = (__m256i)_mm512_cvtneps_pbh(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, r + j), vs));
        _mm256_mask_storeu_epi16(p + j, m, b);
    }
}

static void scale_bf16(float *r, int32_t L, float s, uint16_t *p)
{
    if (has_cvt) {
        scale_bf16_avx512(r, L, s, p);
        return;
    }
    for (int32_t j = 0; j < L; j++)
        r[j] *= s;
    splade_to_bf16(r, p, (size_t)L);
}
#else
static float exp_row(float *r, int32_t L, float scale)
{
    float mx = r[0], sum = 0.0f;
    for (int32_t j = 1; j < L; j++)
        mx = r[j] > mx ? r[j] : mx;
    for (int32_t j = 0; j < L; j++)
        sum += r[j] = expf((r[j] - mx) * scale);
    return sum;
}

static void scale_bf16(float *r, int32_t L, float s, uint16_t *p)
{
    for (int32_t j = 0; j < L; j++)
        r[j] *= s;
    splade_to_bf16(r, p, (size_t)L);
}
#endif

/* P [Lp, Lp] bf16 = the softmax of S's first L rows over their first L columns; zeros elsewhere
 * (padding keys get no weight, padding queries are never read). */
static void softmax_bf16(float *S, int32_t L, int32_t Lp, float scale, uint16_t *P)
{
    for (int32_t i = 0; i < L; i++) {
        float *r = S + (size_t)i * Lp;
        uint16_t *p = P + (size_t)i * Lp;
        scale_bf16(r, L, 1.0f / exp_row(r, L, scale), p);
        memset(p + L, 0, (size_t)(Lp - L) * sizeof *p);
    }
    memset(P + (size_t)L * Lp, 0, (size_t)(Lp - L) * Lp * sizeof *P);
}

/* ctx (and ctxb) rows of the head from its bf16 blocks (Qb, Kb, Vb [Lp][dh], zeros from row L). */
static int head_blocks(splade_dnnl_thread *t, const uint16_t *Qb, const uint16_t *Kb, const uint16_t *Vb, float *ctx,
                       uint16_t *ctxb, int32_t L, int32_t dh, int32_t ld, float scale, float *scratch)
{
    const int32_t Lp = padded(L);
    float *S = scratch;
    uint16_t *P = (uint16_t *)(S + up16((size_t)Lp * Lp));
    float *O = (float *)P + up16((size_t)Lp * Lp / 2) + 3 * up16((size_t)Lp * dh / 2);
    int rc = matmul(t, &kt_layout, Lp, dh, Lp, Qb, Kb, S);
    if (rc)
        return rc;
    softmax_bf16(S, L, Lp, scale, P);
    rc = matmul(t, &v_layout, Lp, Lp, dh, P, Vb, O);
    for (int32_t i = 0; !rc && i < L; i++) {
        if (ctx)
            memcpy(ctx + (size_t)i * ld, O + (size_t)i * dh, (size_t)dh * sizeof *ctx);
        if (ctxb)
            splade_to_bf16(O + (size_t)i * dh, ctxb + (size_t)i * ld, (size_t)dh);
    }
    return rc;
}

int splade_attention_head_bf16(const float *q, const float *k, const float *v, float *ctx, uint16_t *ctxb, int32_t L,
                               int32_t dh, int32_t ld, float scale, float *scratch)
{
    splade_dnnl_thread *t = splade_dnnl_thread_state();
    if (!t)
        return splade_fail(SPLADE_ERR_NOMEM, "oneDNN thread state");
    const int32_t Lp = padded(L);
    uint16_t *Qb = (uint16_t *)(scratch + up16((size_t)Lp * Lp) + up16((size_t)Lp * Lp / 2));
    uint16_t *Kb = (uint16_t *)((float *)Qb + up16((size_t)Lp * dh / 2));
    uint16_t *Vb = (uint16_t *)((float *)Kb + up16((size_t)Lp * dh / 2));
    rows_to_bf16(q, ld, L, Lp, dh, Qb);
    rows_to_bf16(k, ld, L, Lp, dh, Kb);
    rows_to_bf16(v, ld, L, Lp, dh, Vb);
    return head_blocks(t, Qb, Kb, Vb, ctx, ctxb, L, dh, ld, scale, scratch);
}

int splade_attention_head_bf16_blocks(const uint16_t *Qb, const uint16_t *Kb, const uint16_t *Vb, float *ctx,
                                      uint16_t *ctxb, int32_t L, int32_t dh, int32_t ld, float scale, float *scratch)
{
    splade_dnnl_thread *t = splade_dnnl_thread_state();
    if (!t)
        return splade_fail(SPLADE_ERR_NOMEM, "oneDNN thread state");
    return head_blocks(t, Qb, Kb, Vb, ctx, ctxb, L, dh, ld, scale, scratch);
}

#else /* without oneDNN the reduced-precision forwards do not run: never usable */

int splade_attention_bf16_usable(int32_t L) { return (void)L, 0; }

int splade_attention_head_bf16(const float *q, const float *k, const float *v, float *ctx, uint16_t *ctxb, int32_t L,
                               int32_t dh, int32_t ld, float scale, float *scratch)
{
    (void)q, (void)k, (void)v, (void)ctx, (void)ctxb, (void)L, (void)dh, (void)ld, (void)scale, (void)scratch;
    return splade_dnnl_bf16_check();
}

int splade_attention_head_bf16_blocks(const uint16_t *Qb, const uint16_t *Kb, const uint16_t *Vb, float *ctx,
                                      uint16_t *ctxb, int32_t L, int32_t dh, int32_t ld, float scale, float *scratch)
{
    (void)Qb, (void)Kb, (void)Vb, (void)ctx, (void)ctxb, (void)L, (void)dh, (void)ld, (void)scale, (void)scratch;
    return splade_dnnl_bf16_check();
}
#endif
