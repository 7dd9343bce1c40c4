/* cuBLAS and cuBLASLt loaded on their first call (cublas_lazy.c): internal to libsplade-cuda.so
 * and the programs that link the CUDA objects directly. */
#ifndef SPLADE_GPU_CUBLAS_LAZY_H
#define SPLADE_GPU_CUBLAS_LAZY_H

#ifdef __cplusplus
extern "C" {
#endif

/* Why the last library or symbol could not be loaded ("" when nothing failed). */
const char *splade_cublas_lazy_error(void);

/* 1 once cuBLASLt (lt != 0) or cuBLAS (lt == 0) is loaded: the tests check that small batches
 * never load cuBLASLt. */
int splade_cublas_lazy_loaded(int lt);

#ifdef __cplusplus
}
#endif

#endif
