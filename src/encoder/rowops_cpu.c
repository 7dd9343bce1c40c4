/* LayerNorm and GELU. Statistics stay in double as in the scalar reference (the goldens agree to
 * ~6e-6; fp32 sums would move that for no measurable gain). The scalar LayerNorm was 6% of a
 * bert-base query, scalar erff ~10%: both now run 8/16 lanes wide. */
#include "encoder/rowops_cpu.h"
#include "encoder/gemm_cpu.h"

#include <math.h>

static void layer_norm_row(float *r, int32_t H, const float *g, const float *b, float eps)
{
    double mean = 0.0, var = 0.0;
    for (int32_t j = 0; j < H; j++)
        mean += r[j];
    mean /= H;
    for (int32_t j = 0; j < H; j++)
        var += (r[j] - mean) * (r[j] - mean);
    float inv = (float)(1.0 / sqrt(var / H + eps));
    for (int32_t j = 0; j < H; j++)
        r[j] = (float)((r[j] - mean) * inv) * g[j] + b[j];
}

static void gelu_scalar(float *x, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * (float)M_SQRT1_2));
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma")))

/* Same arithmetic as layer_norm_row, 8 doubles at a time (H % 8 == 0). */
AVX512 static void layer_norm_row8(float *r, int32_t H, const float *g, const float *b, float eps)
{
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    for (int32_t j = 0; j < H; j += 8)
        s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm256_loadu_ps(r + j)));
    const double mean = _mm512_reduce_add_pd(s0) / H;
    const __m512d vm = _mm512_set1_pd(mean);
    for (int32_t j = 0; j < H; j += 8) {
        __m512d d = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(r + j)), vm);
        s1 = _mm512_fmadd_pd(d, d, s1);
    }
    const float inv = (float)(1.0 / sqrt(_mm512_reduce_add_pd(s1) / H + eps));
    const __m512d vi = _mm512_set1_pd((double)inv);
    for (int32_t j = 0; j < H; j += 8) {
        __m256 n = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(r + j)), vm), vi));
        _mm256_storeu_ps(r + j, _mm256_add_ps(_mm256_mul_ps(n, _mm256_loadu_ps(g + j)), _mm256_loadu_ps(b + j)));
    }
}

static int wide(void) { return splade_gemm_avx512_usable(); }

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
/* glibc's libmvec erff, 16 lanes (libm.so pulls libmvec in as needed). */
AVX512 __m512 _ZGVeN16v_erff(__m512 x);

AVX512 static void gelu16(float *x, int32_t n)
{
    int32_t i = 0;
    const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f), r2 = _mm512_set1_ps((float)M_SQRT1_2);
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m512 e = _ZGVeN16v_erff(_mm512_mul_ps(v, r2));
        _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_mul_ps(half, v), _mm512_add_ps(one, e)));
    }
    gelu_scalar(x + i, n - i);
}
#else
static void gelu16(float *x, int32_t n) { gelu_scalar(x, n); }
#endif

#else

static int wide(void) { return 0; }
static void layer_norm_row8(float *r, int32_t H, const float *g, const float *b, float eps)
{
    layer_norm_row(r, H, g, b, eps);
}
static void gelu16(float *x, int32_t n) { gelu_scalar(x, n); }

#endif

void splade_layer_norm(float *x, int32_t r0, int32_t r1, int32_t H, const float *g, const float *b, float eps)
{
    const int v = wide() && H % 8 == 0;
    for (int32_t t = r0; t < r1; t++) {
        if (v)
            layer_norm_row8(x + (size_t)t * H, H, g, b, eps);
        else
            layer_norm_row(x + (size_t)t * H, H, g, b, eps);
    }
}

void splade_gelu(float *x, int32_t n)
{
    if (wide())
        gelu16(x, n);
    else
        gelu_scalar(x, n);
}
