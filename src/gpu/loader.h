/* The CUDA build keeps every .cu file (and bench-lmhead's measuring half) in libsplade-cuda.so,
 * which src/gpu/cuda_loader.c loads on the first GPU call; src/gpu/no_cuda.c stands in without
 * nvcc. Internal. */
#ifndef SPLADE_GPU_LOADER_H
#define SPLADE_GPU_LOADER_H

#include "splade.h"

#define SPLADE_CUDA_SO "libsplade-cuda.so"

/* The address of `name` in libsplade-cuda.so, loading it first; NULL with SPLADE_ERR_NO_GPU
 * recorded (the reason in splade_error_detail()) when it cannot be loaded or lacks the symbol.
 * Exported from libsplade.so for the CLI's bench-lmhead (its CUDA half lives in libsplade-cuda.so). */
SPLADE_API void *splade_gpu_symbol(const char *name);

#endif
