/* AVX-512 fused SPLADE head block: reads W rows in place (no packing: for a 32-row query the
 * packing of a 30522-row W costs as much as the arithmetic in OpenBLAS), accumulates 8 vocabulary
 * rows x 32 sequence rows in 16 registers, and reduces each row's max straight from registers.
 * Compiled for AVX-512 with a target attribute; the caller checks the CPU first. */
#include "common/settings.h"
#include "lmhead_fused/lmhead_cpu_internal.h"

#include <stdlib.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <pthread.h>
#include <stdatomic.h>

/* $SPLADE_LMHEAD_CPU (src/common/settings.c), taken once per process (pthread_once: every member of a team asks). */
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static int env_blas;
static atomic_int forced_blas; /* splade_lmhead_cpu_force_blas (tests) */

static void read_env(void)
{
    env_blas = splade_settings_get()->lmhead_cpu_blas;
}

void splade_lmhead_cpu_force_blas(int on) { atomic_store(&forced_blas, on != 0); }

int splade_lmhead_cpu_avx512_usable(void)
{
    pthread_once(&env_once, read_env);
    return !env_blas && !atomic_load_explicit(&forced_blas, memory_order_relaxed) && __builtin_cpu_supports("avx512f");
}

#define ACC8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

__attribute__((target("avx512f"))) static inline float lane_max(__mmask16 m0, __m512 a, __mmask16 m1, __m512 b)
{
    float x = _mm512_mask_reduce_max_ps(m0, a);
    if (m1) {
        float y = _mm512_mask_reduce_max_ps(m1, b);
        x = y > x ? y : x;
    }
    return x;
}

/* 8 vocabulary rows starting at w (stride D) against the block. */
__attribute__((target("avx512f"))) static void rows8(const float *Ht, int32_t D, const float *w, __mmask16 m0,
                                                     __mmask16 m1, float *dst)
{
#define DECL(i) __m512 a##i = _mm512_setzero_ps(), b##i = _mm512_setzero_ps();
    ACC8(DECL)
#undef DECL
    for (int32_t d = 0; d < D; d++) {
        __m512 h0 = _mm512_load_ps(Ht + (size_t)d * 32), h1 = _mm512_load_ps(Ht + (size_t)d * 32 + 16);
        /* W streams from L3/DRAM in 8 row streams the hardware prefetcher does not follow:
         * fetching rows 16 ahead, a line per 16 floats, cut a splade-tiny query's time by 35%. */
        if ((d & 15) == 0)
            for (int i = 0; i < 8; i++)
                _mm_prefetch((const char *)(w + (size_t)(16 + i) * D + d), _MM_HINT_T0);
#define STEP(i)                                                                                    \
    {                                                                                              \
        __m512 x = _mm512_set1_ps(w[(size_t)(i) * D + d]);                                         \
        a##i = _mm512_fmadd_ps(x, h0, a##i);                                                       \
        b##i = _mm512_fmadd_ps(x, h1, b##i);                                                       \
    }
        ACC8(STEP)
#undef STEP
    }
#define FOLD(i)                                                                                    \
    {                                                                                              \
        float m = lane_max(m0, a##i, m1, b##i);                                                    \
        dst[i] = m > dst[i] ? m : dst[i];                                                          \
    }
    ACC8(FOLD)
#undef FOLD
}

__attribute__((target("avx512f"))) static void row1(const float *Ht, int32_t D, const float *w, __mmask16 m0,
                                                    __mmask16 m1, float *dst)
{
    __m512 a = _mm512_setzero_ps(), b = _mm512_setzero_ps();
    for (int32_t d = 0; d < D; d++) {
        __m512 x = _mm512_set1_ps(w[d]);
        a = _mm512_fmadd_ps(x, _mm512_load_ps(Ht + (size_t)d * 32), a);
        b = _mm512_fmadd_ps(x, _mm512_load_ps(Ht + (size_t)d * 32 + 16), b);
    }
    float m = lane_max(m0, a, m1, b);
    *dst = m > *dst ? m : *dst;
}

__attribute__((target("avx512f"))) void splade_lmhead_avx512_block(const float *Ht, int32_t n, int32_t D,
                                                                   const float *W, int32_t vt, float *dst)
{
    if (n <= 0)
        return;
    __mmask16 m0 = (__mmask16)(n >= 16 ? 0xFFFF : (1u << n) - 1);
    __mmask16 m1 = (__mmask16)(n <= 16 ? 0 : n >= 32 ? 0xFFFF : (1u << (n - 16)) - 1);
    int32_t v = 0;
    for (; v + 8 <= vt; v += 8)
        rows8(Ht, D, W + (size_t)v * D, m0, m1, dst + v);
    for (; v < vt; v++)
        row1(Ht, D, W + (size_t)v * D, m0, m1, dst + v);
}

#else /* not x86-64 GCC/Clang: OpenBLAS path only */

void splade_lmhead_cpu_force_blas(int on) { (void)on; }
int splade_lmhead_cpu_avx512_usable(void) { return 0; }
void splade_lmhead_avx512_block(const float *Ht, int32_t n, int32_t D, const float *W, int32_t vt, float *dst)
{
    (void)Ht, (void)n, (void)D, (void)W, (void)vt, (void)dst;
}

#endif
