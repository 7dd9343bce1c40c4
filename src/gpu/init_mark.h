/* splade_gpu_mark_initialized: see init_mark.cu. Called from .cu files only, after each cuBLAS /
 * cuBLASLt GEMM, on the stream the GEMM ran on. */
#ifndef SPLADE_GPU_INIT_MARK_H
#define SPLADE_GPU_INIT_MARK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void splade_gpu_mark_initialized(const void *ptr, size_t bytes, void *stream);

#ifdef __cplusplus
}
#endif
#endif
