/* Why do the bf16 forward's GEMMs run slower inside the forward than a matmul loop alone (issue
 * #13)? The bf16 layer GEMMs of a bert-base shaped model (L layers x Q, K, V, attention-out,
 * FFN-in, FFN-out, distinct random weights; gemm_dnnl.h's units of 128 rows x 128 columns) on one
 * thread, with their operands in different places:
 *
 *   sweep       (alone, --only sweep) 128 x 128 x 768 units with the weight panel cycling over S
 *               distinct panels and A fixed, or A cycling over S row blocks and the panel fixed:
 *               S x 192 KiB in L2, in L3, in memory
 *   hot-unit    one 128-row unit repeated (weights and activations in L2: a standalone loop)
 *   hot-linear  layer 0's GEMM of M rows repeated (that matrix's weights stay in L2/L3)
 *   rows        the L layers, units into the thread's tile (oneDNN alone), row blocks outer and
 *               panels inner (the forward's order until 2026-11-26)
 *   group G     groups of G row blocks per weight panel (G = 2, 4)
 *   panels      panels outer (each weight panel read once per GEMM, the row blocks stream)
 *   ...+epi     the same with the forward's epilogues (gemm_dnnl.h: Q, K, V fp32 rows, the residual
 *               adds of attention-out and FFN-out, FFN-in's GELU in bf16)
 *   library+epi the library's own calls (splade_dnnl_share / _res: its unit order and epilogues)
 *
 *   bench_gemm_rate [--rows M] [--reps R] [--layers L] [--disturb-mb D] [--a-offset B] [--only MODE]
 *
 * --disturb-mb D streams D MiB between GEMMs (as the forward's attention, LayerNorm and other
 * layers do). --a-offset B starts the activations' rows B bytes (even, < 64) past a cache line, as
 * malloc's 16-byte alignment did to the forward's until 2026-11-26 (the fp32 rows stay on lines).
 * Prints GFLOP/s of thread CPU time per shape (2 M N K, the rows computed with
 * SPLADE_DNNL_PAD_ROWS counted as M), median of R. Without oneDNN bf16 it says so and exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "encoder/gemm_dnnl.h"
#include "splade.h"

enum { SHAPES = 6, MAX_REPS = 21 };
static const int32_t SHAPE_N[SHAPES] = {768, 768, 768, 768, 3072, 768};
static const int32_t SHAPE_K[SHAPES] = {768, 768, 768, 768, 768, 3072};

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void fill(float *x, size_t n, float scale, uint32_t *st)
{
    for (size_t i = 0; i < n; i++) {
        *st = *st * 1664525u + 1013904223u;
        x[i] = scale * ((float)(*st >> 8) / 16777216.0f - 0.5f);
    }
}

static size_t a_offset; /* --a-offset: A's rows start this many bytes past a 64-byte line */

/* bf16 rows [Mpad, K], random in the first M rows, zeros after (SPLADE_DNNL_PAD_ROWS). */
static uint16_t *bf16_input(int32_t M, int32_t Mpad, int32_t K, uint32_t *st)
{
    float *f = malloc((size_t)M * K * sizeof *f);
    char *raw = aligned_alloc(64, (size_t)Mpad * K * sizeof(uint16_t) + 64);
    if (!f || !raw)
        exit(3);
    uint16_t *a = (uint16_t *)(raw + a_offset); /* never freed */
    fill(f, (size_t)M * K, 2.0f, st);
    splade_to_bf16(f, a, (size_t)M * K);
    memset(a + (size_t)M * K, 0, (size_t)(Mpad - M) * K * sizeof *a);
    free(f);
    return a;
}

typedef struct {
    int32_t M, L;
    splade_dnnl_linear **lin;  /* [L][SHAPES] */
    uint16_t *xb, *ffnb;       /* the inputs: [Mpad, 768] and [Mpad, 3072] */
    float *x, *tmp, *C;        /* fp32 [M, 768] residual rows and a [M, 3072] output */
    uint16_t *Cb;              /* bf16 [Mpad, 3072] */
    float *tile;               /* [128 x 128] */
    double ms[SHAPES], flop[SHAPES];
} ctx;

static float *disturb;
static size_t disturb_n;
static const uint16_t *input(const ctx *c, int s) { return s == 5 ? c->ffnb : c->xb; }

/* The rows a unit of `rows` computes (the forward pads them: SPLADE_DNNL_PAD_ROWS). */
static int32_t computed(int32_t rows) { return splade_dnnl_padded_rows(rows); }

static double gemm_flop(const ctx *c, int s)
{
    double rows = 0;
    for (int32_t r0 = 0; r0 < c->M; r0 += SPLADE_DNNL_ROWS)
        rows += computed(c->M - r0 < SPLADE_DNNL_ROWS ? c->M - r0 : SPLADE_DNNL_ROWS);
    return 2.0 * rows * SHAPE_N[s] * SHAPE_K[s];
}

static int unit(ctx *c, const splade_dnnl_linear *l, int s, int32_t r0, int32_t p)
{
    const int32_t rows = c->M - r0 < SPLADE_DNNL_ROWS ? c->M - r0 : SPLADE_DNNL_ROWS;
    const int32_t P = SHAPE_N[s] - p * SPLADE_DNNL_PANEL < SPLADE_DNNL_PANEL ? SHAPE_N[s] - p * SPLADE_DNNL_PANEL
                                                                             : SPLADE_DNNL_PANEL;
    return splade_dnnl_unit_to(l, input(c, s) + (size_t)r0 * SHAPE_K[s], computed(rows), p, c->tile, P, 0);
}

/* The forward's unit with its epilogue (gemm_dnnl.h): Q, K, V plain fp32 rows, attention-out and
 * FFN-out onto a residual, FFN-in GELU in bf16 alone. */
static int unit_epi(ctx *c, const splade_dnnl_linear *l, int s, int32_t r0, int32_t p)
{
    const int32_t rows = c->M - r0 < SPLADE_DNNL_ROWS ? c->M - r0 : SPLADE_DNNL_ROWS;
    const int pad = SPLADE_DNNL_PAD_ROWS, N = SHAPE_N[s];
    if (s < 3)
        return splade_dnnl_unit_res(l, c->xb, r0, rows, p, c->C, c->C, N, NULL, pad);
    if (s == 3)
        return splade_dnnl_unit_res(l, c->xb, r0, rows, p, c->x, c->tmp, N, NULL, SPLADE_DNNL_ACCUM | pad);
    if (s == 4)
        return splade_dnnl_unit_res(l, c->xb, r0, rows, p, NULL, NULL, N, c->Cb, SPLADE_DNNL_GELU | pad);
    return splade_dnnl_unit_res(l, c->ffnb, r0, rows, p, c->tmp, c->x, N, NULL, SPLADE_DNNL_ACCUM | pad);
}

/* One GEMM: units in groups of `group` row blocks, panels outer within a group (group 1: rows
 * outer; group >= the row blocks: panels outer; 0: the library's share calls); epi: the forward's
 * epilogues. */
static int gemm(ctx *c, int layer, int s, int group, int epi)
{
    const splade_dnnl_linear *l = c->lin[layer * SHAPES + s];
    if (group == 0) { /* the library's own order (splade_dnnl_member_grid) and epilogues */
        const int pad = SPLADE_DNNL_PAD_ROWS;
        if (s < 3)
            return splade_dnnl_share(l, c->xb, c->M, c->C, NULL, pad, 0, 1);
        if (s == 3)
            return splade_dnnl_share_res(l, c->xb, c->M, c->x, c->tmp, NULL, SPLADE_DNNL_ACCUM | pad, 0, 1);
        if (s == 4)
            return splade_dnnl_share(l, c->xb, c->M, NULL, c->Cb, SPLADE_DNNL_GELU | pad, 0, 1);
        return splade_dnnl_share_res(l, c->ffnb, c->M, c->tmp, c->x, NULL, SPLADE_DNNL_ACCUM | pad, 0, 1);
    }
    const int32_t np = splade_dnnl_panels(l), nrb = (c->M + SPLADE_DNNL_ROWS - 1) / SPLADE_DNNL_ROWS;
    int rc = 0;
    for (int32_t g0 = 0; !rc && g0 < nrb; g0 += group)
        for (int32_t p = 0; !rc && p < np; p++)
            for (int32_t rb = g0; !rc && rb < g0 + group && rb < nrb; rb++)
                rc = epi ? unit_epi(c, l, s, rb * SPLADE_DNNL_ROWS, p) : unit(c, l, s, rb * SPLADE_DNNL_ROWS, p);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static void report(const char *mode, const ctx *c, double per[SHAPES][MAX_REPS], int reps, double total[MAX_REPS])
{
    printf("| %s |", mode);
    double flop = 0;
    for (int s = 0; s < SHAPES; s++) {
        printf(" %.0f |", c->flop[s] / median(per[s], reps) / 1e6);
        flop += c->flop[s];
    }
    printf(" %.0f | %.2f |\n", flop * c->L / median(total, reps) / 1e6, median(total, reps));
}

/* The L-layer sequence in the order of `group` (gemm), reps times; the streaming between GEMMs is
 * not timed. */
static int run_seq(ctx *c, const char *mode, int group, int epi, int reps)
{
    double per[SHAPES][MAX_REPS] = {{0}}, total[MAX_REPS];
    for (int r = -1; r < reps; r++) {
        double sum[SHAPES] = {0};
        for (int32_t layer = 0; layer < c->L; layer++)
            for (int s = 0; s < SHAPES; s++) {
                if (disturb_n)
                    for (size_t i = 0; i < disturb_n; i += 16)
                        disturb[i] += 1.0f;
                double t = cpu_ms();
                if (gemm(c, layer, s, group, epi))
                    return 1;
                sum[s] += cpu_ms() - t;
            }
        if (r < 0)
            continue; /* warm-up: primitives made */
        total[r] = 0;
        for (int s = 0; s < SHAPES; s++)
            per[s][r] = sum[s] / c->L, total[r] += sum[s];
    }
    report(mode, c, per, reps, total);
    return 0;
}

/* Layer 0's GEMMs each repeated L times (hot-linear), or their first unit repeated as many times as
 * the GEMM has units, L times (hot-unit). */
static int run_hot(ctx *c, const char *mode, int one_unit, int reps)
{
    double per[SHAPES][MAX_REPS] = {{0}}, total[MAX_REPS];
    for (int r = -1; r < reps; r++) {
        double sum[SHAPES] = {0};
        for (int s = 0; s < SHAPES; s++) {
            const splade_dnnl_linear *l = c->lin[s];
            const int units = splade_dnnl_panels(l) * ((c->M + SPLADE_DNNL_ROWS - 1) / SPLADE_DNNL_ROWS);
            double t = cpu_ms();
            for (int32_t i = 0; i < c->L; i++)
                for (int u = 0; one_unit && u < units; u++)
                    if (unit(c, l, s, 0, 0))
                        return 1;
            for (int32_t i = 0; !one_unit && i < c->L; i++)
                if (gemm(c, 0, s, 1, 0))
                    return 1;
            sum[s] = (cpu_ms() - t) / c->L;
        }
        if (r < 0)
            continue;
        total[r] = 0;
        for (int s = 0; s < SHAPES; s++)
            per[s][r] = sum[s], total[r] += sum[s] * c->L;
    }
    if (one_unit) /* every unit counted as a full 128-row one */
        for (int s = 0; s < SHAPES; s++)
            for (int r = 0; r < reps; r++)
                per[s][r] *= c->flop[s] / (2.0 * SPLADE_DNNL_ROWS * ((c->M + 127) / 128) * SHAPE_N[s] * SHAPE_K[s]);
    report(mode, c, per, reps, total);
    return 0;
}

/* Where the operands come from: units of 128 rows x 128 columns x K = 768 with the weight panel
 * cycling over S distinct panels (S x 192 KiB: L2, L3, memory) and A fixed, or A cycling over S
 * row blocks and the panel fixed. */
static int sweep(int reps)
{
    enum { POOL = 1008 }; /* panels: 42 linears of 24, 189 MiB of bf16 weights */
    const int32_t N = 3072, K = 768, per = N / SPLADE_DNNL_PANEL, nlin = POOL / per;
    splade_dnnl_linear **lin = calloc((size_t)nlin, sizeof *lin);
    float *W = malloc((size_t)N * K * sizeof *W), *b = calloc(N, sizeof *b), *tile = aligned_alloc(64, 65536);
    uint32_t st = 99u;
    uint16_t *A = bf16_input(POOL * 128, POOL * 128, K, &st);
    for (int32_t i = 0; i < nlin; i++) {
        fill(W, (size_t)N * K, 0.05f, &st);
        if (splade_dnnl_linear_create(W, b, N, K, &lin[i]))
            return 1;
    }
    free(W);
    printf("sweep: A at +%d bytes\n", (int)a_offset);
    printf("| operands cycling over | KiB | W cycles, A fixed: GF/s | A cycles, W fixed: GF/s |\n|---|---|---|---|\n");
    static const int sizes[] = {1, 2, 4, 8, 16, 64, 256, POOL};
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
        const int S = sizes[z];
        double gf[2];
        for (int a_cycles = 0; a_cycles < 2; a_cycles++) {
            double best = 1e30;
            const int units = S > 256 ? S : 256;
            for (int r = 0; r < reps; r++) {
                double t0 = cpu_ms();
                for (int u = 0; u < units; u++) {
                    const int i = u % S, w = a_cycles ? 0 : i, a = a_cycles ? i : 0;
                    if (splade_dnnl_unit_to(lin[w / per], A + (size_t)a * 128 * K, 128, w % per, tile, 128, 0))
                        return 1;
                }
                double t = cpu_ms() - t0;
                best = t < best ? t : best;
            }
            gf[a_cycles] = 2.0 * 128 * 128 * K * units / best / 1e6;
        }
        printf("| %d | %d | %.0f | %.0f |\n", S, S * 192, gf[0], gf[1]);
    }
    return 0;
}

/* Zeroed bytes on 64-byte lines (as the forward's rows: forward_cpu.c's rows_alloc). */
static void *zeroed_lines(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (p)
        memset(p, 0, bytes);
    return p;
}

static int make(ctx *c)
{
    const int32_t Mpad = (c->M + SPLADE_DNNL_ROWS - 1) / SPLADE_DNNL_ROWS * SPLADE_DNNL_ROWS;
    uint32_t st = 2026u;
    c->lin = calloc((size_t)c->L * SHAPES, sizeof *c->lin);
    float *W = malloc((size_t)3072 * 768 * sizeof *W), *b = malloc(3072 * sizeof *b);
    if (!c->lin || !W || !b)
        return 1;
    for (int32_t i = 0; i < c->L * SHAPES; i++) {
        const int s = i % SHAPES;
        fill(W, (size_t)SHAPE_N[s] * SHAPE_K[s], 0.05f, &st), fill(b, (size_t)SHAPE_N[s], 0.1f, &st);
        if (splade_dnnl_linear_create(W, b, SHAPE_N[s], SHAPE_K[s], &c->lin[i]))
            return 1;
    }
    free(W), free(b);
    c->xb = bf16_input(c->M, Mpad, 768, &st);
    c->ffnb = bf16_input(c->M, Mpad, 3072, &st);
    c->x = zeroed_lines((size_t)c->M * 768 * sizeof *c->x);
    c->tmp = zeroed_lines((size_t)c->M * 768 * sizeof *c->tmp);
    c->C = zeroed_lines((size_t)c->M * 3072 * sizeof *c->C);
    c->Cb = zeroed_lines((size_t)Mpad * 3072 * sizeof *c->Cb);
    c->tile = aligned_alloc(64, 128 * 128 * sizeof *c->tile);
    for (int s = 0; s < SHAPES; s++)
        c->flop[s] = gemm_flop(c, s);
    return !c->x || !c->tmp || !c->C || !c->Cb || !c->tile;
}

int main(int argc, char **argv)
{
    ctx c = {.M = 2040, .L = 12};
    int reps = 5;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rows") && i + 1 < argc)
            c.M = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--layers") && i + 1 < argc)
            c.L = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--disturb-mb") && i + 1 < argc) {
            disturb_n = (size_t)atoi(argv[++i]) << 18;
            disturb = calloc(disturb_n, sizeof *disturb);
        } else if (!strcmp(argv[i], "--a-offset") && i + 1 < argc)
            a_offset = (size_t)atoi(argv[++i]) & 62;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--rows M] [--reps R] [--layers L] [--disturb-mb D] [--a-offset B] "
                            "[--only MODE]\n", argv[0]);
            return 2;
        }
    }
    if (c.M < 1 || c.L < 1 || reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "need rows >= 1, layers >= 1, 1 <= reps <= %d\n", MAX_REPS);
        return 2;
    }
    if (splade_dnnl_bf16_check()) {
        printf("bench_gemm_rate: skipped: %s\n", splade_error_detail());
        return 0;
    }
    if (only && !strcmp(only, "sweep"))
        return sweep(reps);
    if (make(&c)) {
        fprintf(stderr, "bench_gemm_rate: set-up failed: %s\n", splade_error_detail());
        return 1;
    }
    double load[3] = {0};
    if (getloadavg(load, 3) < 1)
        load[0] = -1;
    printf("bench_gemm_rate: 1 thread, %d rows, %d layers, median of %d, %d MiB streamed between GEMMs, A at +%d "
           "bytes, load %.2f\n", (int)c.M, (int)c.L, reps, (int)(disturb_n >> 18), (int)a_offset, load[0]);
    printf("| mode | Q | K | V | attn-out | ffn-in | ffn-out | all GF/s | ms (all layers) |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    int rc = 0;
    if (!only || !strcmp(only, "hot-unit"))
        rc |= run_hot(&c, "hot-unit", 1, reps);
    if (!only || !strcmp(only, "hot-linear"))
        rc |= run_hot(&c, "hot-linear", 0, reps);
    static const int groups[] = {1, 2, 4, 1000, 0};
    for (int epi = 0; epi < 2; epi++)
        for (size_t i = 0; i < sizeof groups / sizeof *groups; i++) {
            char name[64];
            const int g = groups[i];
            if (g == 0 && !epi)
                continue; /* the library's share calls always run their epilogues */
            snprintf(name, sizeof name, "%s%s", g == 1 ? "rows" : g == 1000 ? "panels" : g ? "group" : "library",
                     epi ? "+epi" : "");
            if (g > 1 && g < 1000)
                snprintf(name + strlen(name), sizeof name - strlen(name), " %d", g);
            if (!only || !strncmp(only, name, strlen(only)))
                rc |= run_seq(&c, name, g, epi, reps);
        }
    if (getloadavg(load, 3) >= 1)
        printf("load after: %.2f\n", load[0]);
    if (rc)
        fprintf(stderr, "bench_gemm_rate: %s\n", splade_error_detail());
    return rc;
}
