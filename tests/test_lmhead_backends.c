/* The SPLADE LM head, out[b,v] = log1p(relu(max over s < len[b] of H[b,s]·W[v] + bias[v])), on every
 * backend and precision against one float64 reference per case (ggml's test-backend-ops pattern):
 *
 *   cpu       splade_lmhead_cpu, fp32: the AVX-512 kernel where the CPU has it
 *   cpu-blas  splade_lmhead_cpu with the OpenBLAS path forced
 *   cpu-screen the fp32 encoder's head where the CPU has bf16 (src/encoder/lmhead_screen_cpu.h):
 *             bf16 maxima, a rigorous error bound, the plain head's kernel for the terms the bound
 *             keeps; the fp32 tolerances, and bit for bit the `cpu` backend's output. Plus cases
 *             built so that many maxima sit inside the bf16 error band around 0
 *             (test_screen_near_zero): none may be lost, and with the bound switched off some must
 *             be (the bound is what keeps them); non-finite hidden states (the same bits too).
 *   gpu-bf16  the fused head (AUTO = v7 TMA on Hopper; MMA_SYNC; WGMMA with each tile forced through
 *             SPLADE_LMHEAD_WGMMA_TILE, v5 with the TMA kernel off and through H_rows = 0) and the
 *             naive head (cuBLAS + eager-style ops), bf16 inputs
 *   gpu-fp32  splade_lmhead_gpu_fp32
 *
 * Inputs are drawn exactly representable in bf16, so every backend sees the same numbers and the
 * reference (cblas_dgemm in float64 per sequence) serves all. One cmocka test per (case, backend),
 * named "<case>/<backend>"; the case's inputs and reference are built once and shared by its backends.
 * Per backend, after the output was poisoned with NaN: every element written and >= 0; rel-L2 over the
 * compared columns <= 1e-5 (cpu, cpu-blas, gpu-fp32), 1e-3 (fused bf16: exact bf16 products, fp32
 * sums), 1e-2 (naive: bf16 logits, like PyTorch eager); the same nonzero set except entries below
 * 1e-5 / 1e-3 (naive: or within the bf16 rounding of a logit near -bias); an empty sequence gives exact zeros; and on the CPU every element within
 * 2e-5·(1 + |ref|). Padding and garbage rows hold NaN or ±1e30 and must never count. A backend that
 * cannot take a case (bf16 needs D % 8 == 0, fp32 D % 4 == 0) must refuse it with SPLADE_ERR_UNSUPPORTED.
 * GPU backends skip visibly without a GPU.
 *
 * SPLADE_LMHEAD_TEST_SMALL=1: the small cases only (sanitizers, ThreadSanitizer). SPLADE_TEST_FILTER:
 * a cmocka name pattern (e.g. "*gpu-bf16"). SPLADE_TEST_SEED: the seed of the cases that draw theirs
 * from the clock (printed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/settings.h"
#include "splade.h"
#include "encoder/gpu_encoder.h"
#include "lmhead_fused/lmhead.h"
#include "lmhead_fused/lmhead_cpu_internal.h"
#include "encoder/gemm_dnnl.h"
#include "encoder/lmhead_screen_cpu.h"

#include "gpu_test_util.h"

#ifdef SPLADE_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif

/* ---- the case table ---------------------------------------------------------------------------- */

enum { PADDED = 0, PACKED = 1, PACKED_TO_END = 2 };          /* layout of H's rows */
enum { PAD_NAN = 0, PAD_HUGE = 1 };                         /* what padding / garbage rows hold */
enum { LENS_ALL = 0, LENS_RANDOM = 1, LENS_LIST = 2 };      /* all S; random in [2, S]; lens[] */
enum { DIST_NORMAL = 0, DIST_UNIFORM = 1, DIST_UNIT = 2 };  /* input distributions (see make_inputs) */

typedef struct {
    const char *name;
    int B, S, D, V;
    int layout, gap; /* PACKED: gap garbage rows before each sequence (and after the last unless TO_END) */
    int pad, lens_mode;
    int lens[8];     /* LENS_LIST: B <= 8 lengths, or (B > 8) every sequence lens[0] */
    int dist;
    int col_stride;  /* compare every col_stride-th column and the last 300; 1: all */
    int small;       /* in the SMALL set */
    int group;       /* > 0: the fused head's raster group (SPLADE_LMHEAD_GROUP) */
    int threads;     /* the CPU head's threads (0: OpenBLAS's default) */
    uint64_t seed;   /* 0: from the clock */
} lcase;

/* From the former test_lmhead_gpu.c (bf16 GPU heads; 14), test_lmhead_gpu_fp32.c (fp32 GPU head; 9)
 * and test_model.c's test_lmhead_cpu (the CPU head; 6). */
static const lcase cases[] = {
    {"B1 S5 D128 V1000", 1, 5, 128, 1000, PADDED, 0, PAD_NAN, LENS_ALL, {0}, DIST_NORMAL, 1, 1, 0, 0, 0},
    {"B3 S37 D768 V1000 lens 37,2,20", 3, 37, 768, 1000, PADDED, 0, PAD_NAN, LENS_LIST, {37, 2, 20}, DIST_NORMAL, 1, 1, 0, 0, 0},
    {"B4 S70 D128 V30522 NaN pad", 4, 70, 128, 30522, PADDED, 0, PAD_NAN, LENS_RANDOM, {0}, DIST_NORMAL, 1, 1, 0, 0, 0},
    {"B3 S64 D768 V30522 lens 2,2,33 huge pad", 3, 64, 768, 30522, PADDED, 0, PAD_HUGE, LENS_LIST, {2, 2, 33}, DIST_NORMAL, 1, 0, 0, 0, 0},
    {"B2 S9 D768 V250002 lens 9,4", 2, 9, 768, 250002, PADDED, 0, PAD_NAN, LENS_LIST, {9, 4}, DIST_NORMAL, 1, 0, 0, 0, 0},
    {"B1 S3 D128 V250002", 1, 3, 128, 250002, PADDED, 0, PAD_HUGE, LENS_ALL, {0}, DIST_NORMAL, 1, 1, 0, 0, 0},
    {"packed B5 D768 V1000 lens 17,0,2,40,9", 5, 40, 768, 1000, PACKED, 3, PAD_NAN, LENS_LIST, {17, 0, 2, 40, 9}, DIST_NORMAL, 1, 1, 0, 0, 0},
    {"split B1 S300 D128 V1000", 1, 300, 128, 1000, PADDED, 0, PAD_NAN, LENS_ALL, {0}, DIST_NORMAL, 1, 1, 0, 0, 0},
    {"B2 S500 D768 V1000 lens 500,300", 2, 500, 768, 1000, PADDED, 0, PAD_HUGE, LENS_LIST, {500, 300}, DIST_NORMAL, 1, 0, 0, 0, 0},
    {"B16 S200 D768 V30522 group 5 (sampled cols)", 16, 200, 768, 30522, PADDED, 0, PAD_NAN, LENS_RANDOM, {0}, DIST_NORMAL, 61, 0, 5, 0, 0},
    {"B40 S128 D768 V30522 group 7 (sampled cols)", 40, 128, 768, 30522, PADDED, 0, PAD_HUGE, LENS_RANDOM, {0}, DIST_NORMAL, 97, 0, 7, 0, 0},
    {"B7 S33 D128 V1000 group 2", 7, 33, 128, 1000, PADDED, 0, PAD_NAN, LENS_RANDOM, {0}, DIST_NORMAL, 1, 1, 2, 0, 0},
    {"packed to the end B3 D200 V1000 lens 260,5,300", 3, 300, 200, 1000, PACKED_TO_END, 3, PAD_HUGE, LENS_LIST, {260, 5, 300}, DIST_NORMAL, 1, 1, 0, 0, 0},
    {"B2 S20 D40 V1000 (D < 64)", 2, 20, 40, 1000, PADDED, 0, PAD_NAN, LENS_ALL, {0}, DIST_NORMAL, 1, 1, 0, 0, 0},
    {"fp32 B1 S5 D128 V1000", 1, 5, 128, 1000, PACKED, 0, PAD_HUGE, LENS_LIST, {5}, DIST_UNIFORM, 1, 1, 0, 0, 11},
    {"fp32 B3 D768 V1000 lens 37,2,20", 3, 37, 768, 1000, PACKED, 0, PAD_HUGE, LENS_LIST, {37, 2, 20}, DIST_UNIFORM, 1, 1, 0, 0, 12},
    {"fp32 B4 D128 V30522 lens 70,1,63,65", 4, 70, 128, 30522, PACKED, 0, PAD_HUGE, LENS_LIST, {70, 1, 63, 65}, DIST_UNIFORM, 1, 1, 0, 0, 13},
    {"fp32 B2 D128 V30522 lens 130,17 (3 position steps)", 2, 130, 128, 30522, PACKED, 0, PAD_HUGE, LENS_LIST, {130, 17}, DIST_UNIFORM, 1, 0, 0, 0, 14},
    {"fp32 B1 D768 V30522 S300", 1, 300, 768, 30522, PACKED, 0, PAD_HUGE, LENS_LIST, {300}, DIST_UNIFORM, 1, 0, 0, 0, 15},
    {"fp32 packed B5 D64 V1000 lens 17,0,2,40,9 garbage 3", 5, 40, 64, 1000, PACKED, 3, PAD_HUGE, LENS_LIST, {17, 0, 2, 40, 9}, DIST_UNIFORM, 1, 1, 0, 0, 16},
    {"fp32 B2 D36 V777 lens 5,3", 2, 5, 36, 777, PACKED, 1, PAD_HUGE, LENS_LIST, {5, 3}, DIST_UNIFORM, 1, 1, 0, 0, 17},
    {"fp32 B8 D256 V30522 lens 256,255,129,128,127,64,33,16", 8, 256, 256, 30522, PACKED, 0, PAD_HUGE, LENS_LIST, {256, 255, 129, 128, 127, 64, 33, 16}, DIST_UNIFORM, 1, 0, 0, 0, 18},
    {"fp32 B66000 D4 V100 S1 (grid y loop)", 66000, 1, 4, 100, PACKED, 0, PAD_HUGE, LENS_LIST, {1}, DIST_UNIFORM, 1, 1, 0, 0, 19},
    {"cpu B1 S32 D48 V4099 (V not a multiple of the 2048-row tile)", 1, 32, 48, 4099, PADDED, 0, PAD_NAN, LENS_ALL, {0}, DIST_UNIT, 1, 1, 0, 1, 21},
    {"cpu packed B3 D33 V2048 lens 17,1,40", 3, 40, 33, 2048, PACKED, 0, PAD_NAN, LENS_LIST, {17, 1, 40}, DIST_UNIT, 1, 1, 0, 2, 22},
    {"cpu padded B4 S64 D16 V3001 lens 64,30,2,0", 4, 64, 16, 3001, PADDED, 0, PAD_NAN, LENS_LIST, {64, 30, 2, 0}, DIST_UNIT, 1, 1, 0, 2, 23},
    {"cpu B2 D8 V257 lens 1500,700 (past the 1024-row gemm group)", 2, 1500, 8, 257, PACKED, 0, PAD_NAN, LENS_LIST, {1500, 700}, DIST_UNIT, 1, 1, 0, 0, 24},
    {"cpu B1 S1 D1 V1", 1, 1, 1, 1, PADDED, 0, PAD_NAN, LENS_ALL, {0}, DIST_UNIT, 1, 1, 0, 1, 25},
    {"cpu packed B5 D24 V7000 lens 16,17,32,1,31 (AVX-512 row blocks)", 5, 32, 24, 7000, PACKED, 0, PAD_NAN, LENS_LIST, {16, 17, 32, 1, 31}, DIST_UNIT, 1, 1, 0, 3, 26},
};
#define NCASES ((int)(sizeof cases / sizeof *cases))

/* ---- the backends ------------------------------------------------------------------------------ */

enum { BK_CPU, BK_CPU_BLAS, BK_CPU_SCREEN, BK_GPU_BF16, BK_GPU_FP32, BK_N };
typedef struct {
    const char *name;
    int gpu;
    double rel_l2;   /* rel-L2 over the compared columns */
    double nz_slack; /* an entry may differ in being nonzero only below this */
    double elem_eps; /* > 0: every element within elem_eps·(1 + |ref|) */
} backend;
static const backend backends[BK_N] = {
    {"cpu", 0, 1e-5, 1e-5, 2e-5},
    {"cpu-blas", 0, 1e-5, 1e-5, 2e-5},
    {"cpu-screen", 0, 1e-5, 1e-5, 2e-5},
    {"gpu-bf16", 1, 1e-3, 1e-3, 0}, /* the naive head: 1e-2 (run_gpu_bf16) */
    {"gpu-fp32", 1, 1e-5, 1e-5, 0},
};

/* ---- inputs and the float64 reference (built once per case, shared by its backends) ------------ */

typedef struct {
    int idx; /* the case these are for; -1: none */
    uint64_t seed;
    int rows, max_len, ncols;
    int32_t *start, *len, *cols;
    float *H, *W, *bias; /* fp32, every value exactly representable in bf16 */
    uint16_t *H16, *W16; /* the same values in bf16 (GPU bf16 only; made on first use) */
    double *ref;         /* [B][ncols] */
} inputs;
static inputs g_in = {.idx = -1};

static uint64_t g_rng;
static double urand(void) /* [0, 1) */
{
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return ((g_rng * 2685821657736338717ULL) >> 11) * (1.0 / 9007199254740992.0);
}
/* ~N(0, 1): the sum of four uniforms (Irwin-Hall), from the 16-bit quarters of one draw; cheap
 * enough for the 192 M weights of the V = 250002 cases. */
static double nrand(void)
{
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    const uint64_t x = g_rng * 2685821657736338717ULL;
    const double sum = (double)(x & 0xffff) + (double)((x >> 16) & 0xffff) + (double)((x >> 32) & 0xffff) +
                       (double)(x >> 48);
    return (sum * (1.0 / 65536.0) - 2.0) * 1.7320508075688772;
}
static uint16_t f2bf(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return 0x7fc0;
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}
static float bf2f(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}
static float bfr(double x) { return bf2f(f2bf((float)x)); } /* x rounded to bf16 */

static void free_inputs(inputs *in)
{
    free(in->start), free(in->len), free(in->cols), free(in->H), free(in->W), free(in->bias);
    free(in->H16), free(in->W16), free(in->ref);
    memset(in, 0, sizeof *in);
    in->idx = -1;
}

/* Lengths, starts and rows from the case's layout. */
static void make_layout(const lcase *c, inputs *in)
{
    in->start = malloc(sizeof(int32_t) * c->B);
    in->len = malloc(sizeof(int32_t) * c->B);
    assert_true(in->start && in->len);
    int rows = 0;
    in->max_len = 0;
    for (int b = 0; b < c->B; b++) {
        int l = c->lens_mode == LENS_ALL      ? c->S
                : c->lens_mode == LENS_RANDOM ? 2 + (int)(urand() * (c->S - 1))
                                              : c->lens[c->B <= 8 ? b : 0];
        in->len[b] = l = l > c->S ? c->S : l;
        in->max_len = l > in->max_len ? l : in->max_len;
        if (c->layout == PADDED) {
            in->start[b] = b * c->S;
            rows = (b + 1) * c->S;
        } else {
            rows += c->gap;
            in->start[b] = rows;
            rows += l;
        }
    }
    if (c->layout == PACKED)
        rows += c->gap;
    in->rows = rows;
}

/* Values, rounded to bf16. NORMAL (the bf16 cases): H ~ N(0,1), W ~ N(0, 0.09/D), bias ~ N(0, 0.05²);
 * UNIFORM (the fp32 cases): H ~ U(-1,1), W ~ U(-3.5,3.5)/sqrt(D), bias ~ U(-0.8, 0.2); UNIT (the CPU
 * cases): H ~ U(-1,1), W ~ U(-0.5,0.5), bias ~ U(-1.5, 0.5). Garbage rows: NaN or ±1e30. */
static void make_values(const lcase *c, inputs *in)
{
    const size_t nh = (size_t)(in->rows ? in->rows : 1) * c->D, nw = (size_t)c->V * c->D;
    in->H = malloc(sizeof(float) * nh);
    in->W = malloc(sizeof(float) * nw);
    in->bias = malloc(sizeof(float) * c->V);
    assert_true(in->H && in->W && in->bias);
    for (size_t i = 0; i < nh; i++)
        in->H[i] = c->pad == PAD_NAN ? NAN : bfr(i & 1 ? 1e30 : -1e30);
    for (int b = 0; b < c->B; b++)
        for (size_t i = 0; i < (size_t)in->len[b] * c->D; i++)
            in->H[(size_t)in->start[b] * c->D + i] = bfr(c->dist == DIST_NORMAL ? nrand() : 2 * urand() - 1);
    const double ws = c->dist == DIST_NORMAL ? 0.3 / sqrt((double)c->D) : c->dist == DIST_UNIFORM ? 3.5 / sqrt((double)c->D) : 0.5;
    for (size_t i = 0; i < nw; i++)
        in->W[i] = bfr(c->dist == DIST_NORMAL ? nrand() * ws : (2 * urand() - 1) * ws);
    for (int v = 0; v < c->V; v++)
        in->bias[v] = c->dist == DIST_NORMAL ? (float)(nrand() * 0.05) : c->dist == DIST_UNIFORM ? (float)(urand() - 0.8)
                                                                                                    : (float)(2 * urand() - 1.5);
}

/* ref[b][ci] = log1p(relu(max_s H[b,s]·W[cols[ci]] + bias)) in float64: one dgemm per sequence and
 * block of columns, then the max over its rows; blocks dealt to threads. OpenBLAS single-threaded
 * inside them, as the library runs it (its own threads are invisible to ThreadSanitizer, which
 * `make test` runs this test under). */
enum { REF_CB = 2048, REF_MAX_THREADS = 16 };
typedef struct {
    const lcase *c;
    inputs *in;
    int t, nt;
} ref_job;

static void *ref_worker(void *arg)
{
    const ref_job *j = arg;
    const lcase *c = j->c;
    inputs *in = j->in;
    const int D = c->D, nc = in->ncols;
    double *Wd = malloc(sizeof(double) * (size_t)REF_CB * D), *Hd = malloc(sizeof(double) * (size_t)(in->max_len + 1) * D),
           *L = malloc(sizeof(double) * (size_t)(in->max_len + 1) * REF_CB);
    if (!Wd || !Hd || !L) {
        free(Wd), free(Hd), free(L);
        return (void *)1;
    }
    for (int c0 = j->t * REF_CB; c0 < nc; c0 += j->nt * REF_CB) {
        const int n = nc - c0 < REF_CB ? nc - c0 : REF_CB;
        for (int k = 0; k < n; k++)
            for (int d = 0; d < D; d++)
                Wd[(size_t)k * D + d] = in->W[(size_t)in->cols[c0 + k] * D + d];
        for (int b = 0; b < c->B; b++) {
            const int len = in->len[b];
            for (size_t i = 0; i < (size_t)len * D; i++)
                Hd[i] = in->H[(size_t)in->start[b] * D + i];
            if (len > 0)
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, len, n, D, 1.0, Hd, D, Wd, D, 0.0, L, n);
            for (int k = 0; k < n; k++) {
                double m = -INFINITY;
                for (int s = 0; s < len; s++)
                    m = L[(size_t)s * n + k] > m ? L[(size_t)s * n + k] : m;
                m += in->bias[in->cols[c0 + k]];
                in->ref[(size_t)b * nc + c0 + k] = m > 0 ? log1p(m) : 0.0;
            }
        }
    }
    free(Wd), free(Hd), free(L);
    return NULL;
}

static void reference(const lcase *c, inputs *in)
{
    in->ref = malloc(sizeof(double) * (size_t)c->B * (in->ncols ? in->ncols : 1));
    assert_non_null(in->ref);
    long nt = sysconf(_SC_NPROCESSORS_ONLN);
    const int blocks = (in->ncols + REF_CB - 1) / REF_CB;
    nt = nt < 1 ? 1 : nt > REF_MAX_THREADS ? REF_MAX_THREADS : nt;
    nt = nt > blocks ? (blocks > 0 ? blocks : 1) : nt;
    const int saved_threads = openblas_get_num_threads();
    openblas_set_num_threads(1);
    pthread_t th[REF_MAX_THREADS];
    ref_job jobs[REF_MAX_THREADS];
    for (int t = 0; t < nt; t++) {
        jobs[t] = (ref_job){c, in, t, (int)nt};
        assert_int_equal(pthread_create(&th[t], NULL, ref_worker, &jobs[t]), 0);
    }
    int failed = 0;
    for (int t = 0; t < nt; t++) {
        void *r = NULL;
        pthread_join(th[t], &r);
        failed |= r != NULL;
    }
    openblas_set_num_threads(saved_threads);
    if (failed)
        fail_msg("reference: out of memory");
}

static int small_only(void)
{
    const char *e = getenv("SPLADE_LMHEAD_TEST_SMALL");
    return e && atoi(e);
}

/* The inputs of case i (built when the previous test was another case). */
static inputs *inputs_for(int i)
{
    if (g_in.idx == i)
        return &g_in;
    free_inputs(&g_in);
    const lcase *c = &cases[i];
    const char *es = getenv("SPLADE_TEST_SEED");
    g_in.seed = es && *es ? strtoull(es, NULL, 10)
                : c->seed ? c->seed
                          : (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid() * 7919u ^ (uint64_t)i * 104729u;
    g_rng = g_in.seed | 1;
    make_layout(c, &g_in);
    make_values(c, &g_in);
    g_in.cols = malloc(sizeof(int32_t) * c->V);
    assert_non_null(g_in.cols);
    for (int v = 0; v < c->V; v++)
        if (v % c->col_stride == 0 || v >= c->V - 300)
            g_in.cols[g_in.ncols++] = v;
    reference(c, &g_in);
    g_in.idx = i;
    print_message("    [lmhead] %s: seed %llu, %d rows, %d columns compared\n", c->name,
                  (unsigned long long)g_in.seed, g_in.rows, g_in.ncols);
    return &g_in;
}

/* ---- the checker (the same for every backend) -------------------------------------------------- */

/* out [B, V] against the reference; tol: rel-L2 bound (the backend's, or the naive head's). bias_ulp > 0
 * (the naive head): the head rounds each logit to bf16 before adding the bias, so where logit + bias
 * is near 0 the logit is near -bias and carries an error up to 2^-8·|bias| (bias_ulp: that, plus a
 * margin for the later roundings): such an entry may differ in being nonzero up to
 * max(nz_slack, bias_ulp·|bias|) — nz_slack itself on the cases whose bias is ~N(0, 0.05²) (|bias| <
 * 0.24 but at 4.8 sigma), the only ones the naive head saw before the table. */
static void check_output(const lcase *c, const inputs *in, const backend *bk, const char *what, const float *out,
                         double tol, double bias_ulp)
{
    size_t unwritten = 0, negative = 0, nz = 0, nz_mismatch = 0, elem_bad = 0;
    for (size_t i = 0; i < (size_t)c->B * c->V; i++)
        if (!isfinite(out[i]))
            unwritten++;
        else if (out[i] < 0)
            negative++;
    double num = 0, den = 0, maxerr = 0;
    for (int b = 0; b < c->B; b++)
        for (int ci = 0; ci < in->ncols; ci++) {
            const double r = in->ref[(size_t)b * in->ncols + ci], g = out[(size_t)b * c->V + in->cols[ci]];
            const double e = fabs(g - r);
            num += e * e, den += r * r;
            maxerr = e > maxerr ? e : maxerr;
            nz += r > 0;
            const double slack = fmax(bk->nz_slack, bias_ulp * fabs(in->bias[in->cols[ci]]));
            if ((r > 0) != (g > 0) && fmax(r, g) >= slack)
                nz_mismatch++;
            if (bk->elem_eps > 0 && !(e <= bk->elem_eps * (1 + fabs(r))))
                elem_bad++;
        }
    const double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    print_message("    [lmhead]   %-8s %-18s rel-L2 %.2e max|err| %.2e nonzero %zu mismatch %zu unwritten %zu\n",
                  bk->name, what, rel, maxerr, nz, nz_mismatch, unwritten);
    if (unwritten || negative)
        fail_msg("%s %s: %zu outputs not written (NaN poison left), %zu negative", bk->name, what, unwritten, negative);
    if (!(rel <= tol))
        fail_msg("%s %s: rel-L2 %.3e > %.0e", bk->name, what, rel, tol);
    if (nz_mismatch)
        fail_msg("%s %s: %zu entries differ in being nonzero (beyond %.0e%s)", bk->name, what, nz_mismatch, bk->nz_slack,
                 bias_ulp > 0 ? " or the bf16 rounding of a logit near -bias" : "");
    if (elem_bad)
        fail_msg("%s %s: %zu entries beyond %.0e·(1 + |ref|)", bk->name, what, elem_bad, bk->elem_eps);
    if ((size_t)c->B * in->ncols >= 1000 && nz == 0)
        fail_msg("%s: no positive reference output: the case tests nothing", c->name);
    for (int b = 0; b < c->B; b++) /* an empty sequence gives zeros */
        if (in->len[b] == 0)
            for (int v = 0; v < c->V; v++)
                if (out[(size_t)b * c->V + v] != 0.0f)
                    fail_msg("%s %s: sequence %d is empty but out[%d][%d] = %g", bk->name, what, b, b, v,
                             out[(size_t)b * c->V + v]);
}

/* ---- CPU --------------------------------------------------------------------------------------- */

static void run_cpu(const lcase *c, const inputs *in, const backend *bk, int blas)
{
    float *out = malloc(sizeof(float) * (size_t)c->B * c->V);
    assert_non_null(out);
    for (size_t i = 0; i < (size_t)c->B * c->V; i++)
        out[i] = NAN;
    splade_lmhead_cpu_force_blas(blas);
    if (blas)
        assert_false(splade_lmhead_cpu_avx512_usable());
    const int rc = splade_lmhead_cpu(in->H, in->start, in->len, c->B, c->D, in->W, in->bias, c->V, out, c->threads);
    splade_lmhead_cpu_force_blas(0);
    if (rc != SPLADE_OK)
        fail_msg("%s: %s (%s)", bk->name, splade_strerror(rc), splade_error_detail());
    char what[32];
    snprintf(what, sizeof what, "%s, %d threads", blas ? "OpenBLAS" : splade_lmhead_cpu_avx512_usable() ? "AVX-512" : "OpenBLAS",
             c->threads);
    check_output(c, in, bk, what, out, bk->rel_l2, 0);
    free(out);
}

/* The screen takes packed rows (sequence b at offsets[b]): the case's rows without padding or garbage. */
static float *pack_rows(const lcase *c, const inputs *in, int32_t *offsets)
{
    offsets[0] = 0;
    for (int b = 0; b < c->B; b++)
        offsets[b + 1] = offsets[b] + in->len[b];
    float *X = malloc(sizeof(float) * ((size_t)offsets[c->B] + 1) * c->D);
    assert_non_null(X);
    for (int b = 0; b < c->B; b++)
        memcpy(X + (size_t)offsets[b] * c->D, in->H + (size_t)in->start[b] * c->D, sizeof(float) * in->len[b] * c->D);
    return X;
}

static int screen_or_skip(const float *W, const float *bias, int V, int D, splade_head_screen **s)
{
    const int rc = splade_head_screen_create(W, bias, V, D, s);
    if (rc == SPLADE_ERR_UNSUPPORTED) {
        print_message("SKIP: no native bf16 here: %s\n", splade_error_detail());
        return 0;
    }
    if (rc)
        fail_msg("screen: %s (%s)", splade_strerror(rc), splade_error_detail());
    return 1;
}

static void run_cpu_screen(const lcase *c, const inputs *in, const backend *bk)
{
    splade_head_screen *s;
    if (!screen_or_skip(in->W, in->bias, c->V, c->D, &s))
        skip();
    int32_t *offsets = malloc(sizeof(int32_t) * (c->B + 1));
    assert_non_null(offsets);
    float *X = pack_rows(c, in, offsets), *out = malloc(sizeof(float) * (size_t)c->B * c->V);
    assert_non_null(out);
    for (size_t i = 0; i < (size_t)c->B * c->V; i++)
        out[i] = NAN;
    int64_t cand = -1;
    const int rc = splade_lmhead_cpu_screened(s, X, offsets, c->B, out, c->threads, &cand);
    if (rc != SPLADE_OK)
        fail_msg("%s: %s (%s)", bk->name, splade_strerror(rc), splade_error_detail());
    char what[48];
    snprintf(what, sizeof what, "%.1f%% fp32, %d thr", 100.0 * (double)cand / ((double)c->B * c->V), c->threads);
    check_output(c, in, bk, what, out, bk->rel_l2, 0);
    float *plain = malloc(sizeof(float) * (size_t)c->B * c->V);
    assert_non_null(plain);
    assert_int_equal(splade_lmhead_cpu(X, offsets, in->len, c->B, c->D, in->W, in->bias, c->V, plain, c->threads), 0);
    if (memcmp(plain, out, sizeof(float) * (size_t)c->B * c->V))
        fail_msg("cpu-screen: not the plain head's bits");
    free(X), free(out), free(offsets), free(plain);
    splade_head_screen_free(s);
}

/* B sequences of L rows, D = 768, V = 4096: H ~ N(0, 1), W ~ N(0, 1/D) (logits ~ N(0, 1), the
 * bf16 error ~1e-2 at most); the bias puts sequence 0's exact (float64) maxima at uniform offsets
 * in [-spread, spread] around 0, so that ~half the terms are positive by less than the bf16 error.
 * Returns the float64 reference's positive outputs that the screened head lost (out == 0 where
 * the reference is > 1e-4), after checking every other element within 2e-5·(1 + |ref|). */
static int near_zero_lost(int B, int L, double spread, double factor, int threads, uint64_t seed)
{
    enum { D = 768, V = 4096 };
    g_rng = seed | 1;
    float *H = malloc(sizeof(float) * (size_t)B * L * D), *W = malloc(sizeof(float) * (size_t)V * D);
    float *bias = malloc(sizeof(float) * V), *out = malloc(sizeof(float) * (size_t)B * V);
    double *Hd = malloc(sizeof(double) * (size_t)B * L * D), *Wd = malloc(sizeof(double) * (size_t)V * D);
    double *Ld = malloc(sizeof(double) * (size_t)L * V), *mx = malloc(sizeof(double) * (size_t)B * V);
    int32_t *offsets = malloc(sizeof(int32_t) * (B + 1));
    assert_true(H && W && bias && out && Hd && Wd && Ld && mx && offsets);
    for (size_t i = 0; i < (size_t)B * L * D; i++)
        Hd[i] = H[i] = (float)nrand();
    for (size_t i = 0; i < (size_t)V * D; i++)
        Wd[i] = W[i] = (float)(nrand() / sqrt((double)D));
    for (int b = 0; b < B; b++) {
        offsets[b] = b * L;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, V, D, 1.0, Hd + (size_t)b * L * D, D, Wd, D, 0.0, Ld, V);
        for (int v = 0; v < V; v++) {
            double m = -INFINITY;
            for (int t = 0; t < L; t++)
                m = Ld[(size_t)t * V + v] > m ? Ld[(size_t)t * V + v] : m;
            mx[(size_t)b * V + v] = m;
        }
    }
    offsets[B] = B * L;
    for (int v = 0; v < V; v++)
        bias[v] = (float)(-mx[v] + (2 * urand() - 1) * spread);
    splade_head_screen *s;
    if (!screen_or_skip(W, bias, V, D, &s))
        return -1;
    splade_head_screen_set_bound_factor(s, factor);
    int64_t cand = 0;
    assert_int_equal(splade_lmhead_cpu_screened(s, H, offsets, B, out, threads, &cand), SPLADE_OK);
    if (factor > 0) { /* the plain head's bits */
        int32_t lens[8];
        for (int b = 0; b < B; b++)
            lens[b] = L;
        float *plain = malloc(sizeof(float) * (size_t)B * V);
        assert_non_null(plain);
        assert_int_equal(splade_lmhead_cpu(H, offsets, lens, B, D, W, bias, V, plain, threads), SPLADE_OK);
        assert_memory_equal(plain, out, sizeof(float) * (size_t)B * V);
        free(plain);
    }
    int lost = 0, near = 0, bad = 0;
    double worst = 0;
    for (int b = 0; b < B; b++)
        for (int v = 0; v < V; v++) {
            const double y = mx[(size_t)b * V + v] + bias[v], r = y > 0 ? log1p(y) : 0.0;
            const double g = out[(size_t)b * V + v], e = fabs(g - r);
            near += b == 0 && r > 0 && r < 0.02;
            if (r > 1e-4 && g == 0.0)
                lost++;
            else if (!(e <= 2e-5 * (1 + fabs(r))))
                bad++;
            worst = e > worst ? e : worst;
        }
    print_message("    [lmhead] screen near 0: B %d L %d spread %g bound x%g: %lld of %d kept for fp32, %d positive "
                  "under 0.02, lost %d, max|err| %.2e\n", B, L, spread, factor, (long long)cand, B * V, near, lost, worst);
    if (factor > 0 && bad)
        fail_msg("%d outputs beyond 2e-5·(1 + |ref|)", bad);
    splade_head_screen_free(s);
    free(H), free(W), free(bias), free(out), free(Hd), free(Wd), free(Ld), free(mx), free(offsets);
    return lost;
}

static void test_screen_near_zero(void **state)
{
    (void)state;
    const uint64_t seed = 0x5eed5c2ee1ULL;
    const int one = near_zero_lost(1, 24, 0.01, 1.0, 1, seed); /* a query */
    if (one < 0)
        skip();
    assert_int_equal(one, 0);
    assert_int_equal(near_zero_lost(3, 150, 0.01, 1.0, 2, seed + 1), 0); /* documents, two threads */
    /* Without the bound, terms inside the bf16 error band are dropped: the check above can fail. */
    assert_true(near_zero_lost(1, 24, 0.01, 0.0, 1, seed) > 0);
}

/* Non-finite hidden states: the screen sends every term of that sequence to fp32, so the output is
 * still the plain head's, bit for bit (whatever that head makes of a NaN or an inf); the other
 * sequence keeps its values. */
static void test_screen_nonfinite(void **state)
{
    (void)state;
    enum { D = 64, V = 300, L = 5 };
    g_rng = 0xbadf00dULL;
    static float H[2 * L * D], W[V * D], bias[V], out[2 * V], ref[V];
    for (int i = 0; i < 2 * L * D; i++)
        H[i] = (float)nrand();
    for (int i = 0; i < V * D; i++)
        W[i] = (float)(nrand() / 8);
    for (int v = 0; v < V; v++)
        bias[v] = (float)(urand() - 0.5);
    splade_head_screen *s;
    if (!screen_or_skip(W, bias, V, D, &s))
        skip();
    const int32_t offsets[3] = {0, L, 2 * L};
    assert_int_equal(splade_lmhead_cpu_screened(s, H, offsets, 2, out, 1, NULL), SPLADE_OK);
    memcpy(ref, out, sizeof ref);
    const int32_t lens[2] = {L, L};
    const float bad[] = {NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 3; k++) {
        H[L * D + 3] = bad[k]; /* sequence 1 */
        float plain[2 * V];
        int64_t cand = 0;
        assert_int_equal(splade_lmhead_cpu_screened(s, H, offsets, 2, out, 2, &cand), SPLADE_OK);
        assert_int_equal(splade_lmhead_cpu(H, offsets, lens, 2, D, W, bias, V, plain, 1), SPLADE_OK);
        assert_memory_equal(out, ref, sizeof ref);        /* sequence 0 unchanged */
        assert_memory_equal(out, plain, sizeof plain);    /* both: the plain head's bits */
        assert_true(cand >= V);                           /* sequence 1: every term to fp32 */
    }
    splade_head_screen_free(s);
}

static void test_bad_args_screen(void **state)
{
    (void)state;
    splade_head_screen *s = (splade_head_screen *)1;
    float w[4] = {1, 2, 3, 4}, b[2] = {0, 0};
    int rc = splade_head_screen_create(w, b, 2, 2, &s);
    if (rc == SPLADE_ERR_UNSUPPORTED) {
        assert_null(s); /* the caller keeps its plain head */
        skip();
    }
    assert_int_equal(rc, SPLADE_OK);
    splade_head_screen_free(s);
    splade_head_screen_free(NULL);
}

/* ---- GPU --------------------------------------------------------------------------------------- */

static int g_gpu = -1;
static char g_gpu_name[256];

static int gpu_or_skip(const backend *bk)
{
    if (g_gpu < 0)
        g_gpu = splade_gpu_probe(g_gpu_name, sizeof g_gpu_name);
    if (!g_gpu)
        print_message("    [lmhead] %s: skipped: no GPU (%s)\n", bk->name, g_gpu_name);
    return g_gpu;
}

#ifdef SPLADE_HAVE_CUDA
static cublasHandle_t g_cublas;

typedef struct {
    void *H, *W, *ws;
    float *bias, *out;
    int32_t *start, *len;
    size_t ws_bytes;
} dev_bufs;

static void upload(const lcase *c, const inputs *in, const void *H, const void *W, size_t es, dev_bufs *d)
{
    memset(d, 0, sizeof *d);
    const size_t nh = (size_t)(in->rows ? in->rows : 1) * c->D;
    CK(cudaMalloc(&d->H, es * nh));
    CK(cudaMalloc(&d->W, es * (size_t)c->V * c->D));
    CK(cudaMalloc((void **)&d->bias, sizeof(float) * c->V));
    CK(cudaMalloc((void **)&d->out, sizeof(float) * (size_t)c->B * c->V));
    CK(cudaMalloc((void **)&d->start, sizeof(int32_t) * c->B));
    CK(cudaMalloc((void **)&d->len, sizeof(int32_t) * c->B));
    CK(cudaMemcpy(d->H, H, es * nh, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d->W, W, es * (size_t)c->V * c->D, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d->bias, in->bias, sizeof(float) * c->V, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d->start, in->start, sizeof(int32_t) * c->B, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d->len, in->len, sizeof(int32_t) * c->B, cudaMemcpyHostToDevice));
}

static void release(dev_bufs *d)
{
    CK(cudaFree(d->H));
    CK(cudaFree(d->W));
    CK(cudaFree(d->bias));
    CK(cudaFree(d->out));
    CK(cudaFree(d->start));
    CK(cudaFree(d->len));
    CK(cudaFree(d->ws));
}

static void fetch(const lcase *c, const dev_bufs *d, float *out)
{
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(out, d->out, sizeof(float) * (size_t)c->B * c->V, cudaMemcpyDeviceToHost));
}

/* The bf16 runs: the fused head through each path and tile, then the naive head. */
enum { NRUN = 10, NAIVE = NRUN - 1 };
static const char *run_names[NRUN] = {"auto (default)", "fused(mma.sync)", "tma 128x256", "tma 256x128",
                                      "v5 auto H_rows=0", "v5 128x256", "wgmma 192x256", "v5 256x128",
                                      "wgmma 192x256p2", "naive"};
static const char *run_tiles[NRUN] = {NULL, NULL, "128x256", "256x128", NULL, "128x256", "192x256", "256x128",
                                      "192x256p2", NULL};
static const char *run_tma[NRUN] = {"1", "1", "1", "1", "1", "0", "0", "0", "0", "1"};

/* The planner's knobs for run k of case c (k < 0: all back to their defaults). */
static void set_knobs(const lcase *c, int k)
{
    char g[16];
    snprintf(g, sizeof g, "%d", c->group);
    if (k >= 0 && c->group > 0)
        setenv("SPLADE_LMHEAD_GROUP", g, 1);
    else
        unsetenv("SPLADE_LMHEAD_GROUP");
    if (k >= 0 && run_tiles[k])
        setenv("SPLADE_LMHEAD_WGMMA_TILE", run_tiles[k], 1);
    else
        unsetenv("SPLADE_LMHEAD_WGMMA_TILE");
    if (k >= 0)
        setenv("SPLADE_LMHEAD_TMA", run_tma[k], 1);
    else
        unsetenv("SPLADE_LMHEAD_TMA");
    splade_settings_reload(); /* the knobs are read once per process otherwise */
}

/* activation = 1 (sentence-transformers' "log1p_relu"): the same run must give log1p of each output,
 * the second log1p applied in the head after the max (path -1: the naive head). */
static void check_second_log1p(const lcase *c, dev_bufs *d, splade_lmhead_args *a, splade_fused_path path,
                               const float *out)
{
    const size_t n = (size_t)c->B * c->V;
    float *out2 = malloc(sizeof(float) * n);
    assert_non_null(out2);
    a->activation = 1;
    CK(cudaMemset(d->out, 0xff, sizeof(float) * n));
    const int st = (int)path >= 0 ? splade_lmhead_gpu_fused(path, a, NULL)
                                  : splade_lmhead_gpu(SPLADE_LMHEAD_NAIVE, a, d->ws, d->ws_bytes, g_cublas, NULL);
    a->activation = 0;
    assert_int_equal(st, SPLADE_OK);
    fetch(c, d, out2);
    for (size_t i = 0; i < n; i++) {
        const float want = log1pf(out[i]);
        /* the naive head rounds each elementwise step to bf16 */
        const float tol = (int)path >= 0 ? 1e-6f * (1.0f + want) : 1e-2f * (1.0f + want);
        if (!(fabsf(out2[i] - want) <= tol))
            fail_msg("activation 1: element %zu is %g, log1p of the activation-0 output %g", i, out2[i], want);
    }
    free(out2);
}

/* One bf16 run k; returns 0 when the path is not available on this device/build. */
static int bf16_run(const lcase *c, const inputs *in, dev_bufs *d, int k, float *out)
{
    splade_lmhead_args a = {d->H, d->start, d->len, c->B, in->max_len, c->D, c->V, d->W, d->bias, d->out,
                            k == 4 ? 0 : in->rows, 0};
    const splade_fused_path path = k == 0 || k == 4 ? SPLADE_FUSED_AUTO : k == 1 ? SPLADE_FUSED_MMA_SYNC : SPLADE_FUSED_WGMMA;
    splade_lmhead_plan pl = {0};
    set_knobs(c, k);
    if (k < NAIVE) {
        const int st = splade_lmhead_fused_plan(path, &a, &pl);
        if (k >= 2 && st == SPLADE_ERR_UNSUPPORTED) {
            print_message("    [lmhead]   gpu-bf16 %-18s not available on this device/build\n", run_names[k]);
            return 0;
        }
        assert_int_equal(st, SPLADE_OK);
        print_message("    [lmhead]   gpu-bf16 %-18s kernel %s, tile %dx%d, split %d, raster group %d, %d units, "
                      "grid %d\n", run_names[k], pl.path != SPLADE_FUSED_WGMMA ? "mma.sync" : pl.tile >= 4 ? "tma" : "wgmma",
                      pl.bm, pl.bn, pl.nsplit, pl.group, pl.units, pl.grid);
        /* the default on a Hopper build is the TMA kernel when H's extent is known, never without it */
        if (k == 0 && pl.path == SPLADE_FUSED_WGMMA && c->D >= 64 && pl.tile < 4)
            fail_msg("auto: wgmma path chose tile %d, not the TMA kernel", pl.tile);
        if (k == 4 && pl.tile >= 4)
            fail_msg("H_rows = 0 must not pick the TMA kernel (tile %d)", pl.tile);
    }
    CK(cudaMemset(d->out, 0xff, sizeof(float) * (size_t)c->B * c->V)); /* poison: NaN */
    const int st = k < NAIVE ? splade_lmhead_gpu_fused(path, &a, NULL)
                             : splade_lmhead_gpu(SPLADE_LMHEAD_NAIVE, &a, d->ws, d->ws_bytes, g_cublas, NULL);
    if (st)
        fail_msg("gpu-bf16 %s: %s (%s)", run_names[k], splade_strerror(st), splade_error_detail());
    fetch(c, d, out);
    check_second_log1p(c, d, &a, k < NAIVE ? path : (splade_fused_path)-1, out);
    return 1;
}

static void make_bf16(const lcase *c, inputs *in)
{
    if (in->H16)
        return;
    const size_t nh = (size_t)(in->rows ? in->rows : 1) * c->D, nw = (size_t)c->V * c->D;
    in->H16 = malloc(sizeof(uint16_t) * nh);
    in->W16 = malloc(sizeof(uint16_t) * nw);
    assert_true(in->H16 && in->W16);
    for (size_t i = 0; i < nh; i++)
        in->H16[i] = f2bf(in->H[i]); /* exact: the values were rounded to bf16 */
    for (size_t i = 0; i < nw; i++)
        in->W16[i] = f2bf(in->W[i]);
}

static void run_gpu_bf16(const lcase *c, inputs *in, const backend *bk)
{
    if (c->D % 8) { /* 16-byte rows: both bf16 heads refuse the shape (before touching any pointer) */
        static uint16_t dummy[8] __attribute__((aligned(16)));
        static int32_t di[1];
        static float df[1];
        splade_lmhead_args a = {dummy, di, di, c->B, in->max_len, c->D, c->V, dummy, df, df, 1, 0};
        assert_int_equal(splade_lmhead_gpu(SPLADE_LMHEAD_FUSED, &a, NULL, 0, NULL, NULL), SPLADE_ERR_UNSUPPORTED);
        assert_int_equal(splade_lmhead_gpu(SPLADE_LMHEAD_NAIVE, &a, NULL, 0, NULL, NULL), SPLADE_ERR_UNSUPPORTED);
        print_message("    [lmhead]   gpu-bf16 D=%d: refused (D %% 8 != 0), as it must be\n", c->D);
        return;
    }
    if (!g_cublas)
        assert_int_equal(cublasCreate(&g_cublas), CUBLAS_STATUS_SUCCESS);
    make_bf16(c, in);
    dev_bufs d;
    upload(c, in, in->H16, in->W16, 2, &d);
    splade_lmhead_args a = {d.H, d.start, d.len, c->B, in->max_len, c->D, c->V, d.W, d.bias, d.out, in->rows, 0};
    d.ws_bytes = splade_lmhead_workspace_bytes(SPLADE_LMHEAD_NAIVE, &a);
    CK(cudaMalloc(&d.ws, d.ws_bytes));
    float *out = malloc(sizeof(float) * (size_t)c->B * c->V);
    assert_non_null(out);
    for (int k = 0; k < NRUN; k++)
        if (bf16_run(c, in, &d, k, out))
            check_output(c, in, bk, run_names[k], out, k == NAIVE ? 1e-2 : bk->rel_l2, k == NAIVE ? 1.0 / 240 : 0);
    set_knobs(c, -1);
    release(&d);
    free(out);
}

static void run_gpu_fp32(const lcase *c, const inputs *in, const backend *bk)
{
    dev_bufs d;
    upload(c, in, in->H, in->W, 4, &d);
    splade_lmhead_args a = {d.H, d.start, d.len, c->B, in->max_len, c->D, c->V, d.W, d.bias, d.out, in->rows, 0};
    CK(cudaMemset(d.out, 0xff, sizeof(float) * (size_t)c->B * c->V)); /* poison: NaN */
    const int rc = splade_lmhead_gpu_fp32(&a, NULL);
    if (c->D % 4) { /* float4 rows: the fp32 head refuses the shape */
        assert_int_equal(rc, SPLADE_ERR_UNSUPPORTED);
        print_message("    [lmhead]   gpu-fp32 D=%d: refused (D %% 4 != 0), as it must be\n", c->D);
    } else {
        if (rc != SPLADE_OK)
            fail_msg("gpu-fp32: %s (%s)", splade_strerror(rc), splade_error_detail());
        float *out = malloc(sizeof(float) * (size_t)c->B * c->V);
        assert_non_null(out);
        fetch(c, &d, out);
        check_output(c, in, bk, "fused SIMT", out, bk->rel_l2, 0);
        free(out);
    }
    release(&d);
}
#endif

/* ---- the tests --------------------------------------------------------------------------------- */

typedef struct {
    int c, b; /* case, backend */
} pair;
static pair g_pairs[NCASES * BK_N];
static char g_names[NCASES * BK_N][112];

static void test_case_on_backend(void **state)
{
    const pair *p = *state;
    const lcase *c = &cases[p->c];
    const backend *bk = &backends[p->b];
    if (small_only() && !c->small) {
        print_message("    [lmhead] %s: not in the small set (SPLADE_LMHEAD_TEST_SMALL)\n", c->name);
        skip();
    }
    if (bk->gpu && !gpu_or_skip(bk))
        skip();
    inputs *in = inputs_for(p->c);
    if (p->b == BK_CPU || p->b == BK_CPU_BLAS)
        run_cpu(c, in, bk, p->b == BK_CPU_BLAS);
    else if (p->b == BK_CPU_SCREEN)
        run_cpu_screen(c, in, bk);
#ifdef SPLADE_HAVE_CUDA
    else if (p->b == BK_GPU_BF16)
        run_gpu_bf16(c, in, bk);
    else
        run_gpu_fp32(c, in, bk);
#endif
}

/* Argument checks of each backend's entry point. */
static void test_bad_args_cpu(void **state)
{
    (void)state;
    float x = 0;
    assert_int_equal(splade_lmhead_cpu(&x, (int32_t[]){0}, (int32_t[]){-1}, 1, 1, &x, &x, 1, &x, 1),
                     SPLADE_ERR_INVALID_ARG);
}

static void test_bad_args_gpu_bf16(void **state)
{
    (void)state;
    if (!gpu_or_skip(&backends[BK_GPU_BF16]))
        skip();
    splade_lmhead_args a;
    memset(&a, 0, sizeof a);
    assert_int_equal(splade_lmhead_gpu(SPLADE_LMHEAD_FUSED, NULL, NULL, 0, NULL, NULL), SPLADE_ERR_INVALID_ARG);
    assert_int_equal(splade_lmhead_gpu(SPLADE_LMHEAD_FUSED, &a, NULL, 0, NULL, NULL), SPLADE_ERR_INVALID_ARG);
    static uint16_t dummy[64] __attribute__((aligned(16)));
    static int32_t di[2];
    static float df[4];
    a = (splade_lmhead_args){dummy, di, di, 1, 1, 100, 4, dummy, df, df, 1, 0};
    assert_int_equal(splade_lmhead_gpu(SPLADE_LMHEAD_FUSED, &a, NULL, 0, NULL, NULL), SPLADE_ERR_UNSUPPORTED);
    a.D = 64;
    assert_int_equal(splade_lmhead_gpu(SPLADE_LMHEAD_NAIVE, &a, NULL, 0, NULL, NULL), SPLADE_ERR_INVALID_ARG);
}

static void test_bad_args_gpu_fp32(void **state)
{
    (void)state;
    if (!gpu_or_skip(&backends[BK_GPU_FP32]))
        skip();
#ifdef SPLADE_HAVE_CUDA
    float *d = NULL;
    int32_t *di = NULL;
    CK(cudaMalloc((void **)&d, 4096));
    CK(cudaMalloc((void **)&di, 64));
    splade_lmhead_args a = {.H = d, .seq_start = di, .seq_len = di, .B = 1, .max_len = 1, .D = 8, .V = 4, .W = d,
                            .bias = d, .out = d};
    assert_int_equal(splade_lmhead_gpu_fp32(NULL, NULL), SPLADE_ERR_INVALID_ARG);
    a.D = 6; /* not a multiple of 4 */
    assert_int_equal(splade_lmhead_gpu_fp32(&a, NULL), SPLADE_ERR_UNSUPPORTED);
    a.D = 8;
    a.H = (const char *)d + 4; /* not 16-byte aligned */
    assert_int_equal(splade_lmhead_gpu_fp32(&a, NULL), SPLADE_ERR_UNSUPPORTED);
    a.H = d;
    a.bias = NULL;
    assert_int_equal(splade_lmhead_gpu_fp32(&a, NULL), SPLADE_ERR_INVALID_ARG);
    a.bias = d;
    a.V = 0;
    assert_int_equal(splade_lmhead_gpu_fp32(&a, NULL), SPLADE_ERR_INVALID_ARG);
    a.V = 4;
    a.B = 0; /* nothing to do */
    assert_int_equal(splade_lmhead_gpu_fp32(&a, NULL), SPLADE_OK);
    CK(cudaDeviceSynchronize());
    cudaFree(d);
    cudaFree(di);
#endif
}

static int teardown_all(void **state)
{
    (void)state;
    free_inputs(&g_in);
#ifdef SPLADE_HAVE_CUDA
    if (g_cublas)
        cublasDestroy(g_cublas);
#endif
    return 0;
}

int main(void)
{
    struct CMUnitTest tests[NCASES * BK_N + 6];
    int n = 0;
    for (int i = 0; i < NCASES; i++)
        for (int b = 0; b < BK_N; b++, n++) {
            g_pairs[n] = (pair){i, b};
            snprintf(g_names[n], sizeof g_names[n], "%s/%s", cases[i].name, backends[b].name);
            tests[n] = (struct CMUnitTest){g_names[n], test_case_on_backend, NULL, NULL, &g_pairs[n]};
        }
    tests[n++] = (struct CMUnitTest){"bad args/cpu", test_bad_args_cpu, NULL, NULL, NULL};
    tests[n++] = (struct CMUnitTest){"bad args/cpu-screen", test_bad_args_screen, NULL, NULL, NULL};
    tests[n++] = (struct CMUnitTest){"near zero/cpu-screen", test_screen_near_zero, NULL, NULL, NULL};
    tests[n++] = (struct CMUnitTest){"non-finite/cpu-screen", test_screen_nonfinite, NULL, NULL, NULL};
    tests[n++] = (struct CMUnitTest){"bad args/gpu-bf16", test_bad_args_gpu_bf16, NULL, NULL, NULL};
    tests[n++] = (struct CMUnitTest){"bad args/gpu-fp32", test_bad_args_gpu_fp32, NULL, NULL, NULL};
    if (getenv("SPLADE_TEST_FILTER")) /* e.g. "*gpu-bf16" (bench/gpu.sh's sanitizer runs) */
        cmocka_set_test_filter(getenv("SPLADE_TEST_FILTER"));
    return _cmocka_run_group_tests("lmhead_backends", tests, n, NULL, teardown_all);
}
