/* bf16 GEMMs for nn.Linear weights through oneDNN (AMX / AVX512-BF16): C = A·Wᵀ + bias with
 * bf16 inputs and fp32 accumulation and output. The opt-in `--precision bf16` CPU path
 * (forward_cpu.c). Private to src/encoder/.
 *
 * Why oneDNN: its brgemm kernels drive AMX tiles (measured here 840 GFLOP/s for a 128-row
 * bf16 product on one core against ~80 for fp32 OpenBLAS: bench/results/encoder-cpu-2026-11-25.md),
 * with weight re-layout, tile configuration and CPU dispatch done for us. */
#ifndef SPLADE_GEMM_DNNL_H
#define SPLADE_GEMM_DNNL_H

#include <stddef.h>
#include <stdint.h>

/* Output columns per unit of work: a team splits each GEMM into (row block, panel) units at
 * fixed offsets, so every element gets the same bits whatever the thread count. */
enum { SPLADE_DNNL_PANEL = 128, SPLADE_DNNL_ROWS = 128 };

typedef struct splade_dnnl_linear splade_dnnl_linear;

/* SPLADE_OK when oneDNN runs bf16 matmuls natively here (AMX or AVX512-BF16), else
 * SPLADE_ERR_UNSUPPORTED with a detail naming what the CPU lacks ($ONEDNN_MAX_CPU_ISA caps the
 * features oneDNN may use: tests mask them with it). */
int splade_dnnl_bf16_check(void);

/* W [N, K] row-major fp32 (nn.Linear [out, in]) and bias [N] -> weights converted to bf16 and laid
 * out for oneDNN, in panels of SPLADE_DNNL_PANEL columns. */
int splade_dnnl_linear_create(const float *W, const float *bias, int32_t N, int32_t K, splade_dnnl_linear **out);
void splade_dnnl_linear_free(splade_dnnl_linear *l);
int32_t splade_dnnl_linear_n(const splade_dnnl_linear *l);
int32_t splade_dnnl_linear_k(const splade_dnnl_linear *l);

enum {
    SPLADE_DNNL_ACCUM = 1, /* C += A·Wᵀ + b (a residual already in C) */
    SPLADE_DNNL_GELU = 2,  /* C = gelu(A·Wᵀ + b), exact erf GELU */
    /* A has readable, finite rows up to the next multiple of SPLADE_DNNL_ROWS (zeros past M): each
     * unit computes splade_dnnl_padded_rows(rows) rows and stores its own. */
    SPLADE_DNNL_PAD_ROWS = 4,
};

/* The units of an M-row GEMM over np column panels that member tid of nthreads runs: [u0, u1). Rows go
 * in blocks of SPLADE_DNNL_ROWS (one block when M <= 64); the grid does not depend on the thread
 * count, hence the same bits on any (the bf16 and int8 shares use it). row_bytes: the bytes of one
 * row of A (K x its element size), which set the order of the units (any order gives the same bits:
 * units never share an output). The forward's units wait on L3 and memory, not on AMX: a 128 x 128 x
 * 768 unit runs at ~1,600 GFLOP/s with both operands in L2, ~1,200 with one from L3 and ~800 with one
 * from memory (bench/bench_gemm_rate.c, bench/results/cpu-bf16-gemm-rate-2026-11-26.md), and rows
 * outer (every row block streaming the whole weight matrix) kept the forward near the last. So each
 * weight panel serves several row blocks while it is in L2: SPLADE_DNNL_GROUP row blocks per panel
 * when their A rows fit SPLADE_DNNL_GROUP_BYTES (K = 768), else all of them (panels outer: the panel
 * stays and the row blocks stream, K = 3072). */
enum { SPLADE_DNNL_GROUP = 4, SPLADE_DNNL_GROUP_BYTES = 1 << 20 };
typedef struct {
    int32_t M, rb, np, group; /* group: row blocks per panel pass */
    int u0, u1;
} splade_dnnl_grid;
splade_dnnl_grid splade_dnnl_member_grid(int32_t M, int32_t np, size_t row_bytes, int tid, int nthreads);
/* Unit u's rows [*r0, *r0 + *rows) and panel *p. */
void splade_dnnl_grid_unit(const splade_dnnl_grid *g, int u, int32_t *r0, int32_t *rows, int32_t *p);

/* The rows a unit of `rows` computes with SPLADE_DNNL_PAD_ROWS: above 16, the next multiple of 8.
 * oneDNN 2.6's AMX brgemm runs some row counts 2-10x slower than a multiple of 8 just above them
 * (53, 57-62, 115, 117, 121-126 of K = 768 and 3072: ONEDNN_VERBOSE times in
 * bench/results/cpu-bf16-docs-2026-11-26.md), and every SciFact batch ends in such a block. Every
 * count above 2 runs the AMX kernel, whose rows do not depend on the others: the same bits
 * (1 and 2 rows go to AVX512-BF16 instead, so small blocks stay as they are). */
int32_t splade_dnnl_padded_rows(int32_t rows);

/* One unit: rows [r0, r0 + rows) of A (bf16 [M, K], row stride K) against panel p, into C (fp32,
 * row stride ldc, the panel's columns at C + panel offset) with flags; Cb (optional, bf16, row
 * stride ldc) gets the same values rounded to bf16, the next GEMM's input. C NULL (not with
 * SPLADE_DNNL_ACCUM): Cb alone, for an output only the next GEMM reads (the FFN's GELU: its fp32
 * rows are ~T x 3072 x 4 bytes of stores per layer that nothing reads). Returns a status
 * (primitive creation can fail for lack of memory). */
int splade_dnnl_unit(const splade_dnnl_linear *l, const uint16_t *A, int32_t r0, int32_t rows, int32_t p, float *C,
                     int32_t ldc, uint16_t *Cb, int flags);

/* The same with SPLADE_DNNL_ACCUM's residual read from R (same row stride; R == C: in place) instead of
 * C: C = R + A·Wᵀ + b, the residual's copy into C saved (copying it was ~1.4% of a document). */
int splade_dnnl_unit_res(const splade_dnnl_linear *l, const uint16_t *A, int32_t r0, int32_t rows, int32_t p,
                         const float *R, float *C, int32_t ldc, uint16_t *Cb, int flags);

/* The same for A's first `rows` rows (A points at them) into dst (the unit's first element, row
 * stride ldd), no bf16 copy. */
int splade_dnnl_unit_to(const splade_dnnl_linear *l, const uint16_t *A, int32_t rows, int32_t p, float *dst,
                        int32_t ldd, int flags);

/* Panels of l (the last may be narrower than SPLADE_DNNL_PANEL). */
int32_t splade_dnnl_panels(const splade_dnnl_linear *l);

/* Member tid of nthreads computes its units of C [M, N] (row stride N): rows in blocks of
 * SPLADE_DNNL_ROWS (one block when M <= 64), columns in panels. */
int splade_dnnl_share(const splade_dnnl_linear *l, const uint16_t *A, int32_t M, float *C, uint16_t *Cb, int flags,
                      int tid, int nthreads);
/* The same with the residual read from R (splade_dnnl_unit_res). */
int splade_dnnl_share_res(const splade_dnnl_linear *l, const uint16_t *A, int32_t M, const float *R, float *C,
                          uint16_t *Cb, int flags, int tid, int nthreads);

/* An output in attention's layout (attention_bf16.h's blocks): sequence b (tokens [offsets[b],
 * offsets[b+1])) owns base[poff[b] * N, poff[b+1] * N) (N the linear's outputs), head h (columns
 * [h * dh, (h + 1) * dh)) the dense bf16 block [Lp][dh] at poff[b] * N + h * Lp * dh, Lp = poff[b+1] -
 * poff[b] >= the length; rows past the length are never written. */
typedef struct {
    uint16_t *base;
    const int32_t *offsets, *poff;
    int32_t B, dh;
} splade_dnnl_heads;

/* splade_dnnl_share (no ACCUM / GELU) with the output rounded to bf16 straight into o's blocks: the
 * Q, K, V GEMMs of the bf16 forward, whose fp32 rows only attention read (to round them to bf16
 * into such blocks): ~5% of a 256-token document's time in copies. dh must divide SPLADE_DNNL_PANEL. */
int splade_dnnl_share_heads(const splade_dnnl_linear *l, const uint16_t *A, int32_t M, const splade_dnnl_heads *o,
                            int flags, int tid, int nthreads);

/* The fp32 path for many rows (gemm_cpu.c): 1 when oneDNN is built in and $SPLADE_GEMM_CPU is not
 * "blas". splade_dnnl_f32_tile: *tile (this thread's, dense [rows][P], valid until its next call)
 * = A [rows, K] (row stride K) · W[0..P)ᵀ + bias[0..P), W the panel's first nn.Linear row (row
 * stride K), read in place; rows <= SPLADE_DNNL_ROWS, P <= SPLADE_DNNL_PANEL. */
int splade_dnnl_f32_usable(void);
int splade_dnnl_f32_tile(const float *A, int32_t rows, int32_t K, const float *W, const float *bias, int32_t P,
                         float **tile);

/* dst[i] = bf16(src[i]), round to nearest even. */
void splade_to_bf16(const float *src, uint16_t *dst, size_t n);

#endif
