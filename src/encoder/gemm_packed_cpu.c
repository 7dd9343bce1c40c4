/* The packed few-row fp32 GEMM (gemm_packed_cpu.h). */
#include "encoder/gemm_packed_cpu.h"
#include "common/fail.h"
#include "encoder/gemm_cpu.h"
#include "splade.h"

#include <stdlib.h>
#include <string.h>

enum {
    PANEL = SPLADE_GEMM_PANEL,
    TILE_ROWS = 6, /* 6 rows x 4 vectors: 24 accumulators, 10 loads per 24 FMAs */
    /* k rows per block: a block of the panel (16 KB) stays in L1 while the tiles re-read it.
     * 64 measured best on a GPU host's core (128: the same on the VM, +6..+30% on the host). */
    KC = 64,
    LINE_FLOATS = 16,
};

int splade_gemm_packed_alloc(int32_t N, int32_t K, splade_gemm_packed *out)
{
    const size_t panels = ((size_t)N + PANEL - 1) / PANEL;
    out->N = N, out->K = K;
    out->panels = aligned_alloc(64, panels * (size_t)K * PANEL * sizeof(float));
    return out->panels ? SPLADE_OK : splade_fail(SPLADE_ERR_NOMEM, "packed GEMM weights [%d x %d]", (int)N, (int)K);
}

void splade_gemm_pack_cols(const float *W, splade_gemm_packed *p, int32_t n0, int32_t n1)
{
    const int32_t K = p->K;
    for (int32_t q = n0 / PANEL; q * PANEL < n1; q++) {
        float *dst = p->panels + (size_t)q * K * PANEL;
        const int32_t c_end = p->N - q * PANEL < PANEL ? p->N - q * PANEL : PANEL;
        for (int32_t k = 0; k < K; k++) {
            float *row = dst + (size_t)k * PANEL;
            for (int32_t c = 0; c < c_end; c++)
                row[c] = W[(size_t)(q * PANEL + c) * K + k];
            for (int32_t c = c_end; c < PANEL; c++)
                row[c] = 0.0f;
        }
    }
}

void splade_gemm_packed_free(splade_gemm_packed *p)
{
    if (p) {
        free(p->panels);
        p->panels = NULL;
    }
}

size_t splade_gemm_packed_scratch_floats(int32_t M) { return (size_t)M * PANEL; }

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 target("avx512f,avx512bw,avx512vl,fma")

/* Rows [0, r) of a tile against k rows [k0, k1) of panel P, the accumulators carried in ct (its
 * rows PANEL floats apart) from the previous block (load) or from 0. While it runs, the lines
 * from pf on (lpi a k) are prefetched into L2: the tiles share the next block between them. */
static inline __attribute__((always_inline, AVX512)) void tile(const float *A, int32_t lda, const int r,
                                                               const float *P, int32_t k0, int32_t k1, float *ct,
                                                               int load, const char *pf, int lpi)
{
    __m512 acc[TILE_ROWS][4];
#pragma GCC unroll 6
    for (int i = 0; i < TILE_ROWS; i++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            acc[i][j] = i < r && load ? _mm512_load_ps(ct + i * PANEL + j * 16) : _mm512_setzero_ps();
    for (int32_t k = k0; k < k1; k++) {
        if (pf)
            for (int l = 0; l < lpi; l++)
                _mm_prefetch(pf + ((size_t)(k - k0) * lpi + l) * 64, _MM_HINT_T1);
        __m512 w[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            w[j] = _mm512_load_ps(P + (size_t)k * PANEL + j * 16);
#pragma GCC unroll 6
        for (int i = 0; i < TILE_ROWS; i++) {
            if (i >= r)
                break;
            const __m512 a = _mm512_set1_ps(A[(size_t)i * lda + k]);
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++)
                acc[i][j] = _mm512_fmadd_ps(a, w[j], acc[i][j]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < TILE_ROWS; i++)
        if (i < r)
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++)
                _mm512_store_ps(ct + i * PANEL + j * 16, acc[i][j]);
}

typedef void (*tile_fn)(const float *, int32_t, const float *, int32_t, int32_t, float *, int, const char *, int);

/* One function per tile height (BODY inlined with a constant r), so that the accumulators stay in
 * registers; TABLE[r] is the one for r rows. */
#define TILE_R(BODY, ISA, R)                                                                       \
    __attribute__((ISA)) static void BODY##_##R(const float *A, int32_t lda, const float *P, int32_t k0, int32_t k1, \
                                                float *ct, int load, const char *pf, int lpi)                        \
    {                                                                                              \
        BODY(A, lda, R, P, k0, k1, ct, load, pf, lpi);                                             \
    }
#define TILE_TABLE(TABLE, BODY, ISA)                                                               \
    TILE_R(BODY, ISA, 1) TILE_R(BODY, ISA, 2) TILE_R(BODY, ISA, 3) TILE_R(BODY, ISA, 4) TILE_R(BODY, ISA, 5)    \
    TILE_R(BODY, ISA, 6)                                                                           \
    static const tile_fn TABLE[TILE_ROWS + 1] = {NULL, BODY##_1, BODY##_2, BODY##_3, BODY##_4, BODY##_5, BODY##_6};
TILE_TABLE(TILES, tile, AVX512)

/* C's columns [c0, c0 + n) of rows [0, M) = the accumulators + bias (+ C), 16 at a time. */
__attribute__((AVX512)) static void epilogue(const float *ct, int32_t M, const float *bias, int32_t n, float *C,
                                              int32_t ldc, int flags)
{
    for (int32_t i = 0; i < M; i++) {
        float *c = C + (size_t)i * ldc;
        for (int32_t j = 0; j < n; j += 16) {
            const __mmask16 m = n - j >= 16 ? 0xFFFF : (__mmask16)((1u << (n - j)) - 1);
            __m512 v = _mm512_add_ps(_mm512_load_ps(ct + (size_t)i * PANEL + j), _mm512_maskz_loadu_ps(m, bias + j));
            if (flags & SPLADE_GEMM_ACCUM)
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, c + j));
            _mm512_mask_storeu_ps(c + j, m, v);
        }
    }
}

/* The AVX2 + FMA form (CPUs without AVX-512: 16 vector registers): the same tile, a 16-column quarter
 * of the panel at a time (6 rows x 2 vectors: 12 accumulators), the same FMA chain per output. */
#define AVX2 target("avx2,fma")

static inline __attribute__((always_inline, AVX2)) void tile8(const float *A, int32_t lda, const int r,
                                                              const float *P, int32_t k0, int32_t k1, float *ct,
                                                              int load, const char *pf, int lpi)
{
    for (int q = 0; q < 4; q++) {
        __m256 acc[TILE_ROWS][2];
#pragma GCC unroll 6
        for (int i = 0; i < TILE_ROWS; i++)
#pragma GCC unroll 2
            for (int j = 0; j < 2; j++)
                acc[i][j] = i < r && load ? _mm256_load_ps(ct + i * PANEL + q * 16 + j * 8) : _mm256_setzero_ps();
        for (int32_t k = k0; k < k1; k++) {
            if (pf && q == 0)
                for (int l = 0; l < lpi; l++)
                    _mm_prefetch(pf + ((size_t)(k - k0) * lpi + l) * 64, _MM_HINT_T1);
            const __m256 w0 = _mm256_load_ps(P + (size_t)k * PANEL + q * 16);
            const __m256 w1 = _mm256_load_ps(P + (size_t)k * PANEL + q * 16 + 8);
#pragma GCC unroll 6
            for (int i = 0; i < TILE_ROWS; i++) {
                if (i >= r)
                    break;
                const __m256 a = _mm256_broadcast_ss(A + (size_t)i * lda + k);
                acc[i][0] = _mm256_fmadd_ps(a, w0, acc[i][0]);
                acc[i][1] = _mm256_fmadd_ps(a, w1, acc[i][1]);
            }
        }
#pragma GCC unroll 6
        for (int i = 0; i < TILE_ROWS; i++)
            if (i < r) {
                _mm256_store_ps(ct + i * PANEL + q * 16, acc[i][0]);
                _mm256_store_ps(ct + i * PANEL + q * 16 + 8, acc[i][1]);
            }
    }
}

TILE_TABLE(TILES8, tile8, AVX2)

/* The AVX-512 epilogue's arithmetic (acc + bias, + C), 8 at a time. */
__attribute__((AVX2)) static void epilogue8(const float *ct, int32_t M, const float *bias, int32_t n, float *C,
                                             int32_t ldc, int flags)
{
    for (int32_t i = 0; i < M; i++) {
        float *c = C + (size_t)i * ldc;
        const float *t = ct + (size_t)i * PANEL;
        int32_t j = 0;
        for (; j + 8 <= n; j += 8) {
            __m256 v = _mm256_add_ps(_mm256_load_ps(t + j), _mm256_loadu_ps(bias + j));
            if (flags & SPLADE_GEMM_ACCUM)
                v = _mm256_add_ps(v, _mm256_loadu_ps(c + j));
            _mm256_storeu_ps(c + j, v);
        }
        for (; j < n; j++)
            c[j] = (flags & SPLADE_GEMM_ACCUM) ? t[j] + bias[j] + c[j] : t[j] + bias[j];
    }
}

typedef void (*epilogue_fn)(const float *, int32_t, const float *, int32_t, float *, int32_t, int);

/* One panel: k blocks outer, the row tiles (sized evenly, <= 6 rows) inner. */
static void panel(const tile_fn *tiles_of, const float *A, int32_t M, int32_t K, const float *P, const char *end,
                  float *ct)
{
    const int32_t tiles = (M + TILE_ROWS - 1) / TILE_ROWS;
    const int lpi = (4 + tiles - 1) / tiles; /* the next block's 4 lines a k, shared by the tiles */
    for (int32_t k0 = 0; k0 < K; k0 += KC) {
        const int32_t k1 = K - k0 < KC ? K : k0 + KC;
        /* the next block: this panel's, or the next panel's first (the panels are contiguous) */
        const char *next = (const char *)(P + (size_t)k1 * PANEL);
        for (int32_t t = 0, m0 = 0; t < tiles; t++) {
            const int32_t r = (M - m0 + (tiles - t) - 1) / (tiles - t);
            const char *pf = next + (size_t)t * (k1 - k0) * lpi * 64;
            if (t * lpi >= 4 || pf + (size_t)(k1 - k0) * lpi * 64 > end)
                pf = NULL;
            tiles_of[r](A + (size_t)m0 * K, K, P, k0, k1, ct + (size_t)m0 * PANEL, k0 > 0, pf, lpi);
            m0 += r;
        }
    }
}

static void packed_nt(const tile_fn *tiles_of, epilogue_fn epi, const float *A, int32_t M, int32_t K,
                      const splade_gemm_packed *P, const float *bias, int32_t n0, int32_t n1, float *C, int32_t ldc,
                      int flags, float *scratch)
{
    const char *end = (const char *)(P->panels + ((size_t)P->N + PANEL - 1) / PANEL * K * PANEL);
    for (int32_t n = n0; n < n1; n += PANEL) {
        panel(tiles_of, A, M, K, P->panels + (size_t)(n / PANEL) * K * PANEL, end, scratch);
        epi(scratch, M, bias + n, n1 - n < PANEL ? n1 - n : PANEL, C + n, ldc, flags);
    }
}

int splade_gemm_packed_usable(void)
{
    return splade_gemm_avx512_usable() ? 2 : splade_gemm_auto_path(1) == SPLADE_GEMM_AVX2 ? 1 : 0;
}

void splade_gemm_packed_nt(const float *A, int32_t M, int32_t K, const splade_gemm_packed *P, const float *bias,
                           int32_t n0, int32_t n1, float *C, int32_t ldc, int flags, float *scratch)
{
    if (splade_gemm_avx512_usable())
        packed_nt(TILES, epilogue, A, M, K, P, bias, n0, n1, C, ldc, flags, scratch);
    else
        splade_gemm_packed_nt_avx2(A, M, K, P, bias, n0, n1, C, ldc, flags, scratch);
}

void splade_gemm_packed_nt_avx2(const float *A, int32_t M, int32_t K, const splade_gemm_packed *P, const float *bias,
                                int32_t n0, int32_t n1, float *C, int32_t ldc, int flags, float *scratch)
{
    packed_nt(TILES8, epilogue8, A, M, K, P, bias, n0, n1, C, ldc, flags, scratch);
}

#else /* not x86-64 GCC/Clang: callers check splade_gemm_packed_usable() first */

int splade_gemm_packed_usable(void) { return 0; }

void splade_gemm_packed_nt(const float *A, int32_t M, int32_t K, const splade_gemm_packed *P, const float *bias,
                           int32_t n0, int32_t n1, float *C, int32_t ldc, int flags, float *scratch)
{
    (void)A, (void)M, (void)K, (void)P, (void)bias, (void)n0, (void)n1, (void)C, (void)ldc, (void)flags,
        (void)scratch;
}

void splade_gemm_packed_nt_avx2(const float *A, int32_t M, int32_t K, const splade_gemm_packed *P, const float *bias,
                                int32_t n0, int32_t n1, float *C, int32_t ldc, int flags, float *scratch)
{
    splade_gemm_packed_nt(A, M, K, P, bias, n0, n1, C, ldc, flags, scratch);
}

#endif
