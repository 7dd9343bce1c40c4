/* Checked CUDA / cuBLAS calls: every failure becomes a splade status with file:line. */
#ifndef SPLADE_CUDA_CHECK_H
#define SPLADE_CUDA_CHECK_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "common/fail.h"
#include "splade.h"

/* Evaluates `call`; on error records "file:line: call: message" and returns from the
 * enclosing function with SPLADE_ERR_GPU_OOM (allocation) or SPLADE_ERR_CUDA. */
#define CUDA_TRY(call)                                                                          \
    do {                                                                                        \
        cudaError_t err_ = (call);                                                              \
        if (err_ != cudaSuccess) {                                                              \
            (void)cudaGetLastError();                                                           \
            return splade_fail(err_ == cudaErrorMemoryAllocation ? SPLADE_ERR_GPU_OOM           \
                                                                 : SPLADE_ERR_CUDA,             \
                               "%s:%d: %s: %s", __FILE__, __LINE__, #call,                      \
                               cudaGetErrorString(err_));                                       \
        }                                                                                       \
    } while (0)

/* After a kernel launch: catches bad launch configurations at once. */
#define CUDA_TRY_LAUNCH() CUDA_TRY(cudaGetLastError())

#define CUBLAS_TRY(call)                                                                        \
    do {                                                                                        \
        cublasStatus_t st_ = (call);                                                            \
        if (st_ != CUBLAS_STATUS_SUCCESS)                                                       \
            return splade_fail(st_ == CUBLAS_STATUS_ALLOC_FAILED ? SPLADE_ERR_GPU_OOM           \
                                                                 : SPLADE_ERR_CUDA,             \
                               "%s:%d: %s: cuBLAS status %d", __FILE__, __LINE__, #call,        \
                               (int)st_);                                                       \
    } while (0)

#endif
