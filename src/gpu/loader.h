/* The CUDA build keeps every .cu file (and bench-lmhead's measuring half) in libsplade-cuda.so,
 * which src/gpu/cuda_loader.c loads on the first GPU call; src/gpu/no_cuda.c stands in without
 * nvcc. Internal. */
#ifndef SPLADE_GPU_LOADER_H
#define SPLADE_GPU_LOADER_H

#include <stdint.h>

#include "splade.h"

#define SPLADE_CUDA_SO "libsplade-cuda.so"

/* The address of `name` in libsplade-cuda.so, loading it first; NULL with SPLADE_ERR_NO_GPU
 * recorded (the reason in splade_error_detail()) when it cannot be loaded or lacks the symbol.
 * Exported from libsplade.so for the CLI's bench-lmhead (its CUDA half lives in libsplade-cuda.so). */
SPLADE_API void *splade_gpu_symbol(const char *name);

/* Start-up overlap (issue #13): cuInit and the primary context of each of n devices (ordinals; < 0:
 * device 0; n = SPLADE_DEVICES_ALL: every visible one) made on a thread of its own, through the
 * driver alone, while the caller loads libsplade-cuda.so and the CUDA libraries. NULL where there is
 * no driver (nothing started). _finish waits for it and drops its references to the contexts: call it
 * once the runtime has attached to them (splade_gpu_warm_context), so that they stay. NULL-safe. */
typedef struct splade_gpu_driver_warm splade_gpu_driver_warm;
splade_gpu_driver_warm *splade_gpu_driver_warm_start(const int32_t *devices, int n);
void splade_gpu_driver_warm_finish(splade_gpu_driver_warm *w);

#endif
