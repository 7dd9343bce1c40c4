/* int8 GEMMs for nn.Linear weights through oneDNN (AMX-INT8, AVX512-VNNI or AVX-VNNI, picked by
 * oneDNN at run time): the opt-in `--precision int8` CPU path (forward_cpu.c). Private to
 * src/encoder/.
 *
 * Quantization: weights per output channel, symmetric s8 (scale_n = max|W[n,:]| / 127), done once
 * when the encoder is created; activations dynamically per row (token), asymmetric u8 (scale_r =
 * (max - min) / 255 over the row, the range widened to hold 0, zero point zp_r), done once per
 * activation as it is produced. oneDNN computes acc = sum_k u8[r,k] * s8[k,n] in s32 (u8 x s8 is
 * the instruction's native form on VNNI: no compensation pass); our epilogue dequantizes with the
 * bias: y = scale_r * scale_n * (acc - zp_r * sum_k s8[k,n]) + b_n. oneDNN 2.6's matmul takes scales
 * per tensor or per column and zero points per tensor only, so the per-row scale and zero point
 * cannot be its post-ops; the epilogue is the pass that copies the tile into the activation (and
 * adds the residual / GELU) anyway. Units of work are gemm_dnnl.h's (128 rows x 128 columns at
 * fixed offsets), so vectors do not depend on the thread count. */
#ifndef SPLADE_GEMM_DNNL_INT8_H
#define SPLADE_GEMM_DNNL_INT8_H

#include <stdint.h>

typedef struct splade_q8_linear splade_q8_linear;

/* Quantized rows of an activation [M, K] (row stride K) and each row's scale and zero point. */
typedef struct {
    uint8_t *q;
    float *scale;
    int32_t *zp;
} splade_q8_rows;

/* SPLADE_OK when oneDNN has VNNI (AVX512-VNNI, AVX-VNNI or AMX-INT8) here, else
 * SPLADE_ERR_UNSUPPORTED naming the missing feature ($ONEDNN_MAX_CPU_ISA caps what oneDNN may use:
 * tests mask VNNI with it). */
int splade_dnnl_int8_check(void);

/* W [N, K] row-major fp32 (nn.Linear [out, in]) and bias [N] -> s8 weights per output channel,
 * laid out for oneDNN in panels of SPLADE_DNNL_PANEL columns. */
int splade_q8_linear_create(const float *W, const float *bias, int32_t N, int32_t K, splade_q8_linear **out);
void splade_q8_linear_free(splade_q8_linear *l);
int32_t splade_q8_linear_n(const splade_q8_linear *l);
int32_t splade_q8_linear_k(const splade_q8_linear *l);
int32_t splade_q8_panels(const splade_q8_linear *l);

/* Rows [r0, r1) of x [*, K] (row stride K) into a's rows r0.. (u8, scale, zero point). */
void splade_q8_quantize(const float *x, int32_t r0, int32_t r1, int32_t K, const splade_q8_rows *a);

/* The same with one scale and zero point for the whole activation (rows [0, T) of x give the
 * range; rows [r0, r1) are written): the per-tensor alternative, measured against per row. */
void splade_q8_quantize_tensor(const float *x, int32_t T, int32_t r0, int32_t r1, int32_t K, const splade_q8_rows *a);

/* One unit: rows [r0, r0 + rows) of A against panel p, dequantized with the bias into dst (the
 * unit's first element, row stride ldd), with gemm_dnnl.h's SPLADE_DNNL_ACCUM / SPLADE_DNNL_GELU. */
int splade_q8_unit(const splade_q8_linear *l, const splade_q8_rows *A, int32_t r0, int32_t rows, int32_t p,
                   float *dst, int32_t ldd, int flags);

/* Member tid of nthreads computes its units of C [M, N] (row stride N), as splade_dnnl_share. */
int splade_q8_share(const splade_q8_linear *l, const splade_q8_rows *A, int32_t M, float *C, int flags, int tid,
                    int nthreads);

#endif
