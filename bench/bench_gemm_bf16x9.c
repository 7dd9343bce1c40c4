/* Does emulating the fp32 documents' layer GEMMs with bf16 products on AMX pay (issue #13)? The
 * cuBLAS "BF16x9" scheme: each fp32 value split into three bf16 parts (hi = bf16(x), mid =
 * bf16(x - hi), lo = bf16(x - hi - mid), round to nearest even), C = sum of the parts' products
 * with fp32 accumulation. Weights are split once; activations per call, laid out [parts of A]
 * along K against the matching [parts of W], so one oneDNN bf16 matmul with K' = P*K sums P
 * products: P = 9 (all), 6 (without mid*lo, lo*mid, lo*lo), 3 (hi*hi, hi*mid, mid*hi: not
 * fp32-accurate) and 1 (hi*hi: plain bf16, for scale). Against the encoder's fp32 documents' path
 * (splade_gemm_nt_share: oneDNN fp32 brgemm), on the same team units (gemm_dnnl.h).
 *
 *   bench_gemm_bf16x9 [--threads N] [--rows M] [--reps R]
 *
 * Shapes: bert-base's layer GEMMs (N x K = 768 x 768: Q, K, V, attention output; 3072 x 768: FFN
 * in; 768 x 3072: FFN out) for M rows (default 2048: 8 documents of 256 tokens). Per variant: the
 * activations' split and the GEMM, process CPU ms per call (median of R), "fp32-eq GFLOP/s" =
 * 2MNK over split + GEMM per CPU second (per core), its ratio to the fp32 path, and the error
 * against an fp64 reference on 64 sampled rows: max |C - ref| / max |ref|. Exits 1 when P = 6 or 9 is less accurate than 2x the
 * fp32 path's error, or when P = 1 is not clearly worse (the check must be able to fail). Without
 * oneDNN bf16 (no AMX / AVX512-BF16, or NO_DNNL) the emulation rows are skipped, saying so.
 * Then, with AMX, the ceiling of a hand-written kernel: a 2x2-blocked tile loop (4 accumulators, 2 A
 * and 2 B tiles per step, the blocking oneDNN's brgemm uses) over real-valued bf16 operands held in
 * cache, K' = 6 x 768, with the weight slab in L2 and larger than L2. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cpu_team.h"
#include "encoder/gemm_cpu.h"
#include "encoder/gemm_dnnl.h"
#include "splade.h"

enum { MAX_P = 9, SAMPLE_ROWS = 64, MAX_REPS = 15 };

/* Which part of A and of W each of the P slots along K holds (0 hi, 1 mid, 2 lo). */
typedef struct {
    int P;
    int a[MAX_P], w[MAX_P];
} products;

static const products VARIANTS[] = {
    {1, {0}, {0}},
    {3, {0, 0, 1}, {0, 1, 0}},
    {6, {0, 0, 0, 1, 1, 2}, {0, 1, 2, 0, 1, 0}},
    {9, {0, 0, 0, 1, 1, 1, 2, 2, 2}, {0, 1, 2, 0, 1, 2, 0, 1, 2}},
};

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* x's three parts, scalar (splade_to_bf16 rounds to nearest even). */
static void parts1(float x, uint16_t h[3])
{
    for (int p = 0; p < 3; p++) {
        splade_to_bf16(&x, &h[p], 1);
        x -= from_bf16(h[p]); /* exact: the rounding error of x is representable */
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SPLIT_VEC 1
/* 16 values' parts at once (AVX512-BF16's vcvtneps2bf16 rounds to nearest even). */
__attribute__((target("avx512f,avx512bw,avx512bf16"))) static void split_row_vec(const float *x, int32_t K, int P,
                                                                                const int *sel, uint16_t *out)
{
    int32_t k = 0;
    for (; k + 16 <= K; k += 16) {
        __m512 r = _mm512_loadu_ps(x + k);
        __m256i h[3];
        for (int p = 0; p < 3; p++) {
            h[p] = (__m256i)_mm512_cvtneps_pbh(r);
            r = _mm512_sub_ps(r, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h[p]), 16)));
        }
        for (int s = 0; s < P; s++)
            _mm256_storeu_si256((__m256i *)(out + (size_t)s * K + k), h[sel[s]]);
    }
    for (; k < K; k++) {
        uint16_t h[3];
        parts1(x[k], h);
        for (int s = 0; s < P; s++)
            out[(size_t)s * K + k] = h[sel[s]];
    }
}
#endif

static int split_vec; /* AVX512-BF16 here: set by main before any team runs */

/* Row x [K] -> out [P*K]: slot s holds part sel[s] (sel: v->a for activations, v->w for weights). */
static void split_row(const float *x, int32_t K, const products *v, const int *sel, uint16_t *out)
{
#ifdef SPLIT_VEC
    if (split_vec) {
        split_row_vec(x, K, v->P, sel, out);
        return;
    }
#endif
    for (int32_t k = 0; k < K; k++) {
        uint16_t h[3];
        parts1(x[k], h);
        for (int s = 0; s < v->P; s++)
            out[(size_t)s * K + k] = h[sel[s]];
    }
}

typedef struct {
    int32_t M, N, K;
    const float *A, *W, *bias;
    float *C, *scratch;
    size_t per_thread;
    const products *v;
    uint16_t *As;                 /* the split activations [M, P*K] */
    const splade_dnnl_linear *lw; /* the split weights */
    int rc;
} job;

static int fp32_team(void *ctx, int tid, splade_team *t)
{
    job *j = ctx;
    splade_gemm_nt_share(j->A, j->M, j->K, j->W, j->bias, j->N, j->C, 0, j->scratch + (size_t)tid * j->per_thread,
                         tid, splade_team_size(t));
    return 0;
}

static int split_team(void *ctx, int tid, splade_team *t)
{
    job *j = ctx;
    int r0, r1;
    const size_t kp = (size_t)j->v->P * j->K;
    splade_team_split(tid, splade_team_size(t), j->M, 1, &r0, &r1);
    for (int r = r0; r < r1; r++)
        split_row(j->A + (size_t)r * j->K, j->K, j->v, j->v->a, j->As + r * kp);
    return 0;
}

static int emu_team(void *ctx, int tid, splade_team *t)
{
    job *j = ctx;
    return splade_dnnl_share(j->lw, j->As, j->M, j->C, NULL, 0, tid, splade_team_size(t));
}

/* The split weights as an oneDNN bf16 linear: W' [N, P*K] holds bf16 values exactly, so the
 * linear's own conversion to bf16 keeps them. */
static int split_weights(const job *j, splade_dnnl_linear **out)
{
    const size_t kp = (size_t)j->v->P * j->K;
    uint16_t *row = malloc(kp * sizeof *row);
    float *Ws = malloc((size_t)j->N * kp * sizeof *Ws);
    int rc = row && Ws ? SPLADE_OK : SPLADE_ERR_NOMEM;
    for (int32_t n = 0; !rc && n < j->N; n++) {
        split_row(j->W + (size_t)n * j->K, j->K, j->v, j->v->w, row);
        for (size_t i = 0; i < kp; i++)
            Ws[(size_t)n * kp + i] = from_bf16(row[i]);
    }
    if (!rc)
        rc = splade_dnnl_linear_create(Ws, j->bias, j->N, (int32_t)kp, out);
    free(row), free(Ws);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median process CPU ms per call of fn over reps, after three warm-up calls (one was not enough on 2
 * threads: the first shape's fp32 median came out 2x slow while the pool's second member warmed up). */
static double time_team(int threads, splade_team_fn fn, job *j, int reps)
{
    double t[MAX_REPS];
    for (int w = 0; w < 3; w++)
        splade_team_run(threads, fn, j);
    for (int r = 0; r < reps; r++) {
        double t0 = cpu_ms();
        int rc = splade_team_run(threads, fn, j);
        t[r] = cpu_ms() - t0;
        j->rc = j->rc ? j->rc : rc;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    return t[reps / 2];
}

/* max |C - ref| / max |ref| over SAMPLE_ROWS rows spread over M (ref in fp64). */
static double rel_error(const job *j, const double *ref)
{
    double e = 0.0, mx = 0.0;
    for (int s = 0; s < SAMPLE_ROWS; s++) {
        const int32_t m = (int32_t)((int64_t)s * j->M / SAMPLE_ROWS);
        for (int32_t n = 0; n < j->N; n++) {
            const double r = ref[(size_t)s * j->N + n];
            e = fmax(e, fabs(j->C[(size_t)m * j->N + n] - r));
            mx = fmax(mx, fabs(r));
        }
    }
    return e / mx;
}

static double *reference(const job *j)
{
    double *ref = malloc((size_t)SAMPLE_ROWS * j->N * sizeof *ref);
    for (int s = 0; ref && s < SAMPLE_ROWS; s++) {
        const float *a = j->A + (size_t)((int64_t)s * j->M / SAMPLE_ROWS) * j->K;
        for (int32_t n = 0; n < j->N; n++) {
            double acc = j->bias[n];
            for (int32_t k = 0; k < j->K; k++)
                acc += (double)a[k] * j->W[(size_t)n * j->K + k];
            ref[(size_t)s * j->N + n] = acc;
        }
    }
    return ref;
}

/* Uniform in [-h, h), a fixed sequence (xorshift) so runs compare. */
static void fill(float *x, size_t n, float h, uint32_t *st)
{
    for (size_t i = 0; i < n; i++) {
        *st ^= *st << 13, *st ^= *st >> 17, *st ^= *st << 5;
        x[i] = ((float)(*st >> 8) / 16777216.0f * 2.0f - 1.0f) * h;
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <sys/syscall.h>
#include <unistd.h>

typedef struct {
    uint8_t palette, start_row, pad[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_cfg;

/* C [32 x 32 per column block] = A [32, Kp] (row-major bf16) x each of nblk B blocks ([Kp/2][32][2],
 * the VNNI pairs AMX reads), reps times: GFLOP/s of CPU time. */
__attribute__((target("amx-tile,amx-bf16"))) static double amx_loop(int32_t Kp, int nblk, const uint16_t *A,
                                                                   const uint16_t *B, long reps)
{
    tile_cfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; t++)
        c.colsb[t] = 64, c.rows[t] = 16;
    _tile_loadconfig(&c);
    static float out[4][256] __attribute__((aligned(64)));
    const double t0 = cpu_ms();
    for (long r = 0; r < reps; r++)
        for (int bj = 0; bj < nblk; bj++) {
            const uint16_t *b = B + (size_t)bj * Kp * 32;
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            for (int32_t k = 0; k < Kp; k += 32) {
                _tile_loadd(4, A + k, Kp * 2);
                _tile_loadd(5, A + (size_t)16 * Kp + k, Kp * 2);
                _tile_loadd(6, b + (size_t)k * 32, 128);
                _tile_loadd(7, b + (size_t)k * 32 + 32, 128);
                _tile_dpbf16ps(0, 4, 6);
                _tile_dpbf16ps(1, 4, 7);
                _tile_dpbf16ps(2, 5, 6);
                _tile_dpbf16ps(3, 5, 7);
            }
            _tile_stored(0, out[0], 64);
            _tile_stored(1, out[1], 64);
            _tile_stored(2, out[2], 64);
            _tile_stored(3, out[3], 64);
        }
    const double ms = cpu_ms() - t0;
    _tile_release();
    return 2.0 * 32 * 32 * nblk * (double)Kp * reps / ms / 1e6 + 0.0 * out[0][0];
}

static void ceiling(double fp32_rate)
{
    if (!__builtin_cpu_supports("amx-bf16") || syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */,
                                                      18 /* XTILEDATA */)) {
        printf("ceiling: no AMX-BF16 here (or the kernel refused its tile state)\n");
        return;
    }
    const int32_t Kp = 6 * 768;
    static const int blocks[] = {4, 24}; /* B slab 1.1 MiB (in a 2 MiB L2) and 6.8 MiB */
    uint32_t st = 777u;
    for (size_t i = 0; i < sizeof blocks / sizeof *blocks; i++) {
        const size_t na = (size_t)32 * Kp, nb = (size_t)blocks[i] * Kp * 32;
        float *f = malloc((na > nb ? na : nb) * sizeof *f);
        uint16_t *A = aligned_alloc(64, na * sizeof *A), *B = aligned_alloc(64, nb * sizeof *B);
        if (!f || !A || !B) {
            free(f), free(A), free(B);
            return;
        }
        fill(f, na, 2.0f, &st), splade_to_bf16(f, A, na);
        fill(f, nb, 0.05f, &st), splade_to_bf16(f, B, nb);
        const long reps = (long)(3e9 / (2.0 * 32 * 32 * blocks[i] * Kp)) + 1;
        amx_loop(Kp, blocks[i], A, B, 1);
        const double g = amx_loop(Kp, blocks[i], A, B, reps);
        printf("ceiling: AMX 2x2-blocked loop, K' = %d, B slab %zu KiB: %.0f bf16 GFLOP/s = %.0f fp32-eq at 6 "
               "products (%.2fx the fp32 path's best %.0f), %.0f at 9\n",
               (int)Kp, nb * 2 / 1024, g, g / 6, g / 6 / fp32_rate, fp32_rate, g / 9);
        free(f), free(A), free(B);
    }
}
#else
static void ceiling(double fp32_rate) { (void)fp32_rate, printf("ceiling: not x86-64\n"); }
#endif

/* One shape: the fp32 path, then each variant. Returns 0, or 1 when an accuracy check failed. */
static int shape(int32_t M, int32_t N, int32_t K, int threads, int reps, int emulate, double *fp32_best)
{
    job j = {.M = M, .N = N, .K = K};
    uint32_t st = 12345u + (uint32_t)N * 7u + (uint32_t)K;
    float *A = malloc((size_t)M * K * sizeof *A), *W = malloc((size_t)N * K * sizeof *W);
    float *bias = malloc((size_t)N * sizeof *bias);
    j.C = malloc((size_t)M * N * sizeof *j.C);
    j.per_thread = (splade_gemm_scratch_floats(K) + 15) / 16 * 16;
    j.scratch = aligned_alloc(64, j.per_thread * (size_t)threads * sizeof(float));
    if (!A || !W || !bias || !j.C || !j.scratch) {
        fprintf(stderr, "out of memory for %d x %d x %d\n", (int)M, (int)N, (int)K);
        return 1;
    }
    /* LayerNorm'd activations (~unit scale), BERT-like weights (std ~0.03), small biases */
    fill(A, (size_t)M * K, 2.0f, &st), fill(W, (size_t)N * K, 0.05f, &st), fill(bias, (size_t)N, 0.1f, &st);
    j.A = A, j.W = W, j.bias = bias;
    double *ref = reference(&j);
    const double flop = 2.0 * M * N * K;
    const double t32 = time_team(threads, fp32_team, &j, reps), e32 = rel_error(&j, ref);
    if (flop / t32 / 1e6 > *fp32_best)
        *fp32_best = flop / t32 / 1e6;
    printf("| %d | %d x %d | fp32 (%s) | | %.2f | %.2f | %.0f | 1.00 | %.2e |\n", (int)M, (int)N, (int)K,
           splade_dnnl_f32_usable() ? "oneDNN fp32 brgemm" : "OpenBLAS", t32, t32, flop / t32 / 1e6, e32);
    int bad = 0;
    for (size_t i = 0; emulate && i < sizeof VARIANTS / sizeof *VARIANTS; i++) {
        j.v = &VARIANTS[i];
        splade_dnnl_linear *lw = NULL;
        j.As = malloc((size_t)M * j.v->P * K * sizeof *j.As);
        if (!j.As || split_weights(&j, &lw)) {
            printf("| %d | %d x %d | bf16x%d | could not be set up: %s |\n", (int)M, (int)N, (int)K, j.v->P,
                   splade_error_detail());
            free(j.As);
            bad = 1;
            continue;
        }
        j.lw = lw, j.rc = 0;
        const double ts = time_team(threads, split_team, &j, reps), tg = time_team(threads, emu_team, &j, reps);
        const double e = rel_error(&j, ref);
        printf("| %d | %d x %d | bf16x%d (K' = %dK) | %.2f | %.2f | %.2f | %.0f | %.2f | %.2e |%s\n", (int)M, (int)N,
               (int)K, j.v->P, j.v->P, ts, tg, ts + tg, flop / (ts + tg) / 1e6, t32 / (ts + tg), e,
               j.rc ? " (oneDNN failed)" : "");
        if (j.rc || (j.v->P >= 6 && e > 2.0 * e32) || (j.v->P == 1 && e < 8.0 * e32)) {
            printf("ACCURACY CHECK FAILED: bf16x%d error %.2e against fp32's %.2e\n", j.v->P, e, e32);
            bad = 1;
        }
        splade_dnnl_linear_free(lw);
        free(j.As);
    }
    free(A), free(W), free(bias), free(j.C), free(j.scratch), free(ref);
    return bad;
}

int main(int argc, char **argv)
{
    int threads = 1, reps = 7;
    int32_t M = 2048;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc)
            M = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--threads N] [--rows M] [--reps R]\n", argv[0]);
            return 2;
        }
    }
    if (threads < 1 || threads > 256 || M <= SPLADE_GEMM_SMALL_M || reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "need 1 <= threads <= 256, rows > %d, 1 <= reps <= %d\n", SPLADE_GEMM_SMALL_M, MAX_REPS);
        return 2;
    }
    openblas_set_num_threads(1); /* the team owns the threading, as in the encoder */
#ifdef SPLIT_VEC
    split_vec = __builtin_cpu_supports("avx512bf16");
#endif
    const int emulate = splade_dnnl_bf16_check() == SPLADE_OK;
    double load[1] = {0};
    if (getloadavg(load, 1) < 1)
        load[0] = -1;
    printf("bench_gemm_bf16x9: %d thread(s), %d rows, median of %d, load %.2f%s\n", threads, (int)M, reps, load[0],
           splade_dnnl_f32_usable() ? "" : " (fp32 path: OpenBLAS, no oneDNN)");
    if (!emulate)
        printf("emulation skipped: %s\n", splade_error_detail());
    printf("| rows | N x K | path | split CPU ms | GEMM CPU ms | total CPU ms | fp32-eq GFLOP/s | vs fp32 | "
           "max err / max |ref| |\n|---|---|---|---|---|---|---|---|---|\n");
    static const int32_t shapes[][2] = {{768, 768}, {3072, 768}, {768, 3072}};
    int bad = 0;
    double fp32_best = 0.0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        bad |= shape(M, shapes[s][0], shapes[s][1], threads, reps, emulate, &fp32_best);
    ceiling(fp32_best); /* per CPU second: per core */
    if (getloadavg(load, 1) == 1)
        printf("load after: %.2f\n", load[0]);
    return bad;
}
