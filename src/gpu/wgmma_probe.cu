/* Whether this library carries sm_90a code for the current device (src/gpu/wgmma.cuh): every .cu of
 * libsplade-cuda.so is built for the same targets, so one probe answers for all its wgmma kernels. */
#include <cuda_runtime.h>

#include "common/fail.h"
#include "gpu/cuda_check.h"
#include "gpu/wgmma.cuh"
#include "splade.h"

namespace {

__global__ void wgmma_probe_kernel(int *flag)
{
#ifdef SPLADE_WGMMA_ARCH
    *flag = 1;
#else
    *flag = 0;
#endif
}

}  // namespace

namespace splade_wg {

int present(int *yes)
{
    *yes = 0;
    int dev = 0, major = 0;
    CUDA_TRY(cudaGetDevice(&dev));
    CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (major != 9)
        return SPLADE_OK;
    int *flag = nullptr;
    CUDA_TRY(cudaMalloc(&flag, sizeof(int)));
    wgmma_probe_kernel<<<1, 1>>>(flag);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cudaMemcpy(yes, flag, sizeof *yes, cudaMemcpyDeviceToHost);
    cudaFree(flag);
    CUDA_TRY(e);
    return SPLADE_OK;
}

}  // namespace splade_wg
