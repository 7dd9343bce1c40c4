/* Attention for one (sequence, head). Short sequences (queries) take an AVX-512 kernel: at
 * L = 32, dh = 64 each product is ~130 kFLOP, and two OpenBLAS calls per head cost more in call
 * and packing overhead than the arithmetic. Longer sequences (documents) and CPUs without
 * AVX-512 use OpenBLAS, where the L x L products are big enough to run at full speed. */
#include "encoder/attention_cpu.h"
#include "encoder/gemm_cpu.h"

#include <cblas.h>
#include <math.h>

/* AVX-512 kernel up to SHORT_L tokens (a row's scores fit 4 vectors) and heads of SHORT_DH. */
enum { SHORT_L = 64, SHORT_DH = 128 };

size_t splade_attention_scratch_floats(int32_t L, int32_t dh)
{
    return (size_t)L * L + (size_t)dh * SHORT_L + 64; /* BLAS scores, or Kt [dh][64] */
}

static void softmax_rows(float *s, int32_t L)
{
    for (int32_t i = 0; i < L; i++) {
        float *r = s + (size_t)i * L, mx = r[0], sum = 0.0f;
        for (int32_t j = 1; j < L; j++)
            mx = r[j] > mx ? r[j] : mx;
        for (int32_t j = 0; j < L; j++)
            sum += r[j] = expf(r[j] - mx);
        float inv = 1.0f / sum;
        for (int32_t j = 0; j < L; j++)
            r[j] *= inv;
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma")))

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 22))
/* glibc's libmvec expf, 16 lanes (libm.so pulls libmvec in as needed). */
AVX512 __m512 _ZGVeN16v_expf(__m512 x);
AVX512 static inline __m512 exp16(__m512 x) { return _ZGVeN16v_expf(x); }
#else
AVX512 static inline __m512 exp16(__m512 x)
{
    float t[16];
    _mm512_storeu_ps(t, x);
    for (int i = 0; i < 16; i++)
        t[i] = expf(t[i]);
    return _mm512_loadu_ps(t);
}
#endif

/* p[0..4) (16 lanes each, lanes >= L masked to 0) = softmax of the row in s[0..4). */
AVX512 static void softmax_vec(__m512 *s, int nv, int32_t L)
{
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int c = 0; c < nv; c++) {
        int32_t left = L - 16 * c;
        __mmask16 m = (__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1);
        s[c] = _mm512_mask_blend_ps(m, _mm512_set1_ps(-INFINITY), s[c]);
        mx = _mm512_max_ps(mx, s[c]);
    }
    __m512 vmax = _mm512_set1_ps(_mm512_reduce_max_ps(mx)), sum = _mm512_setzero_ps();
    for (int c = 0; c < nv; c++) {
        s[c] = exp16(_mm512_sub_ps(s[c], vmax)); /* exp(-inf) = 0 for the padding lanes */
        sum = _mm512_add_ps(sum, s[c]);
    }
    __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
    for (int c = 0; c < nv; c++)
        s[c] = _mm512_mul_ps(s[c], inv);
}

/* Up to 4 query rows at once: their scores against Kt [dh][Lp] (4 x nv independent FMA chains;
 * one row alone left the FMA latency exposed), softmax, then each row's weighted sum of the v
 * rows with one chain per 16 columns of the head. */
AVX512 static void short_rows(const float *q, int32_t nr, const float *Kt, const float *v, float *ctx, int32_t L,
                              int32_t Lp, int32_t dh, int32_t ld, float scale)
{
    const int nv = Lp / 16, nd = dh / 16;
    __m512 s[4][4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++)
            s[r][c] = _mm512_setzero_ps();
    for (int32_t d = 0; d < dh; d++)
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) {
            __m512 x = _mm512_set1_ps(r < nr ? q[(size_t)r * ld + d] : 0.0f);
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++)
                if (c < nv)
                    s[r][c] = _mm512_fmadd_ps(x, _mm512_load_ps(Kt + (size_t)d * Lp + 16 * c), s[r][c]);
        }
    for (int r = 0; r < nr; r++) {
        for (int c = 0; c < nv; c++)
            s[r][c] = _mm512_mul_ps(s[r][c], _mm512_set1_ps(scale));
        softmax_vec(s[r], nv, L);
        float p[SHORT_L] __attribute__((aligned(64)));
        for (int c = 0; c < nv; c++)
            _mm512_store_ps(p + 16 * c, s[r][c]);
        __m512 acc[SHORT_DH / 16];
#pragma GCC unroll 8
        for (int c = 0; c < SHORT_DH / 16; c++)
            acc[c] = _mm512_setzero_ps();
        for (int32_t j = 0; j < L; j++) {
            __m512 pj = _mm512_set1_ps(p[j]);
#pragma GCC unroll 8
            for (int c = 0; c < SHORT_DH / 16; c++)
                if (c < nd)
                    acc[c] = _mm512_fmadd_ps(pj, _mm512_loadu_ps(v + (size_t)j * ld + 16 * c), acc[c]);
        }
        for (int c = 0; c < nd; c++)
            _mm512_storeu_ps(ctx + (size_t)r * ld + 16 * c, acc[c]);
    }
}

/* Softmax of one row of L scores, 16 lanes at a time: scalar expf was 2% of a document's
 * encode (L^2 per head). */
AVX512 static void softmax_row16(float *r, int32_t L)
{
    __m512 mx = _mm512_set1_ps(-INFINITY), sum = _mm512_setzero_ps();
    for (int32_t j = 0; j < L; j += 16) {
        __mmask16 m = (__mmask16)(L - j >= 16 ? 0xFFFF : (1u << (L - j)) - 1);
        mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), m, r + j));
    }
    const __m512 vmax = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
    for (int32_t j = 0; j < L; j += 16) {
        __mmask16 m = (__mmask16)(L - j >= 16 ? 0xFFFF : (1u << (L - j)) - 1);
        __m512 e = exp16(_mm512_sub_ps(_mm512_mask_loadu_ps(vmax, m, r + j), vmax));
        e = _mm512_maskz_mov_ps(m, e);
        sum = _mm512_add_ps(sum, e);
        _mm512_mask_storeu_ps(r + j, m, e);
    }
    const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
    for (int32_t j = 0; j < L; j += 16) {
        __mmask16 m = (__mmask16)(L - j >= 16 ? 0xFFFF : (1u << (L - j)) - 1);
        _mm512_mask_storeu_ps(r + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, r + j), inv));
    }
}

static void softmax(float *s, int32_t L)
{
    if (splade_gemm_avx512_usable())
        for (int32_t i = 0; i < L; i++)
            softmax_row16(s + (size_t)i * L, L);
    else
        softmax_rows(s, L);
}

AVX512 static void short_head(const float *q, const float *k, const float *v, float *ctx, int32_t L, int32_t dh,
                              int32_t ld, float scale, float *Kt)
{
    const int32_t Lp = (L + 15) / 16 * 16;
    for (int32_t d = 0; d < dh; d++)
        for (int32_t j = 0; j < Lp; j++)
            Kt[(size_t)d * Lp + j] = j < L ? k[(size_t)j * ld + d] : 0.0f;
    for (int32_t i = 0; i < L; i += 4)
        short_rows(q + (size_t)i * ld, L - i < 4 ? L - i : 4, Kt, v, ctx + (size_t)i * ld, L, Lp, dh, ld, scale);
}

static int short_ok(int32_t L, int32_t dh) { return L <= SHORT_L && dh % 16 == 0 && dh <= SHORT_DH && splade_gemm_avx512_usable(); }

#else

static void softmax(float *s, int32_t L) { softmax_rows(s, L); }
static int short_ok(int32_t L, int32_t dh) { return (void)L, (void)dh, 0; }
static void short_head(const float *q, const float *k, const float *v, float *ctx, int32_t L, int32_t dh,
                       int32_t ld, float scale, float *Kt)
{
    (void)q, (void)k, (void)v, (void)ctx, (void)L, (void)dh, (void)ld, (void)scale, (void)Kt;
}

#endif

static void blas_head(const float *q, const float *k, const float *v, float *ctx, int32_t L, int32_t dh, int32_t ld,
                      float scale, float *scores)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, L, dh, scale, q, ld, k, ld, 0.0f, scores, L);
    softmax(scores, L);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, dh, L, 1.0f, scores, L, v, ld, 0.0f, ctx, ld);
}

void splade_attention_head(const float *q, const float *k, const float *v, float *ctx, int32_t L, int32_t dh,
                           int32_t ld, float scale, float *scratch)
{
    if (short_ok(L, dh))
        short_head(q, k, v, ctx, L, dh, ld, scale, scratch);
    else
        blas_head(q, k, v, ctx, L, dh, ld, scale, scratch);
}
