/* Tells compute-sanitizer's initcheck that a buffer a cuBLAS/cuBLASLt GEMM just wrote is initialized.
 *
 * Why: on Hopper, initcheck does not see the stores of cuBLAS's own kernels, so every read of a GEMM
 * output by one of our kernels was reported as an uninitialized read (docs/HARDENING.md, "GPU"). The
 * NVTX memory extension (CUDA 12.8+, header-only) lets the program state what the library wrote;
 * with `compute-sanitizer --tool initcheck --nvtx yes` the reports then cover our own kernels only.
 * That cuBLAS really writes every element is checked separately, without trusting any tool: the
 * poisoned-buffer runs (SPLADE_GPU_POISON=1) fill the outputs with 3.4e38 first and the tests still
 * match their float64 references. Without a tool attached, NVTX calls are no-ops. */
#include <cstddef>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>
#include <nvtx3/nvToolsExtMemCudaRt.h>

#include "gpu/init_mark.h"

extern "C" void splade_gpu_mark_initialized(const void *ptr, size_t bytes, void *stream)
{
    static nvtxDomainHandle_t domain = nvtxDomainCreateA("splade-index");
    if (!ptr || !bytes)
        return;
    nvtxMemVirtualRangeDesc_t range = {bytes, ptr};
    nvtxMemMarkInitializedBatch_t batch = {};
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof batch;
    batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    batch.regionDescCount = 1;
    batch.regionDescElementSize = sizeof range;
    batch.regionDescElements = &range;
    nvtxMemCudaMarkInitialized(domain, static_cast<cudaStream_t>(stream), 0, &batch);
}
