/* Tuning knobs of the kernels: the only environment variables library code reads, all of them
 * here (src/common/settings.c), once per process, and listed in docs/CONTRIBUTING.md ("Settings").
 * They select kernel variants and debugging aids for tests, benchmarks and bisecting; nothing a
 * user needs (user-facing settings are options: splade_model_paths, splade_fetch_opts,
 * splade_encoder_opts.max_batch_tokens, splade_builder_set_build_time). The .cu code in
 * libsplade-cuda.so calls splade_settings_get too: its reference binds to the program's
 * definition (src/gpu/host_exports.list), so both halves see one copy. */
#ifndef SPLADE_COMMON_SETTINGS_H
#define SPLADE_COMMON_SETTINGS_H

#include "splade.h" /* SPLADE_API */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int gemm_cpu_blas;            /* SPLADE_GEMM_CPU=blas: OpenBLAS for the CPU encoder's GEMMs */
    int gemm_cpu_inplace;         /* SPLADE_GEMM_CPU=inplace: no packed copy for few rows (forward_cpu_packed.h) */
    int gemm_cpu_avx2;            /* SPLADE_GEMM_CPU=avx2: the CPU encoder as on a CPU without AVX-512 */
    int lmhead_cpu_blas;          /* SPLADE_LMHEAD_CPU=blas: OpenBLAS for the CPU LM head */
    int lmhead_cpu_full;          /* SPLADE_LMHEAD_CPU=full (or blas): every fp32 logit, no bf16 screen
                                     (src/encoder/lmhead_screen_cpu.h) */
    int gpu_poison;               /* SPLADE_GPU_POISON=1: fill GPU buffers with 3.4e38 first */
    int gpu_gelu_erf;             /* SPLADE_GPU_GELU=erf: exact GELU kernel instead of cuBLASLt's tanh epilogue */
    int gpu_attn_mma;             /* SPLADE_GPU_ATTN=mma: the mma.sync attention on Hopper too (not wgmma) */
    int gpu_gemm_tune;            /* SPLADE_GPU_GEMM_TUNE: -1 unset (on), 0 off, 1 on */
    int gpu_small_gemm;           /* SPLADE_GPU_SMALL_GEMM=N: batches of <= N tokens (default 64; 0: none) and
                                   * single sequences of <= 512 run the encoder's own GEMMs, not cuBLASLt */
    int gpu_ffn_chunk;            /* SPLADE_GPU_FFN_CHUNK: FFN slice in tokens, rounded up to 128; 0: one slice */
    int gpu_fp32_compute_default; /* SPLADE_GPU_FP32_COMPUTE=default: no CUBLAS_COMPUTE_32F_PEDANTIC */
    int lmhead_tma;               /* SPLADE_LMHEAD_TMA=0: no TMA kernel (v7); default 1 */
    char lmhead_wgmma_tile[16];   /* SPLADE_LMHEAD_WGMMA_TILE: "128x256", "192x256", ...; "": the planner's */
    int lmhead_group;             /* SPLADE_LMHEAD_GROUP: raster group override; 0: the planner's */
    int timings;                  /* SPLADE_TIMINGS=1: phase timers logged (src/common/phase.h) */
    int gpu_warm;                 /* SPLADE_GPU_WARM=0: no cuBLASLt set-up in the warm-up (encoder.c) */
    int cpu_int8_fp32;            /* SPLADE_CPU_INT8_FP32=qkv,attn_out,ffn_in,ffn_out: those GEMMs of the
                                     CPU's int8 forward's layers in fp32 (bisecting its quality); a bit
                                     set of SPLADE_Q8_* (src/encoder/forward_cpu_int8.h) */
    int cpu_int8_head;            /* SPLADE_CPU_INT8_HEAD=int8|bf16|fp32: the int8 forward's MLM transform
                                     and LM head in that format; 0 (unset): bf16 where the CPU has it,
                                     else fp32 (SPLADE_Q8_HEAD_*) */
    int cpu_int8_per_tensor;      /* SPLADE_CPU_INT8_ACT=tensor: one scale per activation, not per row */
    int gpu_search_chunk;         /* SPLADE_GPU_SEARCH_CHUNK=N: queries per GPU search chunk; 0: from free memory */
    int gpu_search_window;        /* SPLADE_GPU_SEARCH_KERNEL=window: the windowed adding kernel (src/gpu/search.cu) */
    int gpu_search_window_docs;   /* SPLADE_GPU_SEARCH_WINDOW=N: its documents per window; 0: the default */
    int encoder_fail_slot;        /* SPLADE_TEST_ENCODER_FAIL=SLOT:N[:CODE]: the encoder of slot SLOT (0-based
                                     in the device list; the CPU encoder is slot 0) fails its N-th batch
                                     (1-based, counted over the encoder's life) with CODE (a negative
                                     SPLADE_ERR_*; default SPLADE_ERR_CUDA), as a GPU fault would, so that
                                     tests reach the encoder's give-back and the callers' clean-up on any
                                     machine (src/encoder/encoder.c); -1: off (unset or malformed) */
    int parse_threads;            /* SPLADE_PARSE_THREADS=N: threads parsing a build's corpus lines
                                     (src/common/corpus_batch.h); 0 (unset): one per CPU but one, at
                                     most 8 */
    int encoder_fail_batch;       /* its N */
    int encoder_fail_code;        /* its CODE; 0 when not given (the encoder's default, SPLADE_ERR_CUDA) */
} splade_settings;

/* The settings, read from the environment on the first call (pthread_once); never NULL. */
SPLADE_API const splade_settings *splade_settings_get(void);

/* Reads the environment again: for tests and benchmarks that setenv() a knob between runs in one
 * process. Not thread safe: call it while no other thread runs library code. Values already
 * acted on once per process (the CPU GEMM and LM head choices) keep their first reading. */
void splade_settings_reload(void);

#ifdef __cplusplus
}
#endif
#endif
