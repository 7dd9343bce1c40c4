/* Is there a usable CUDA device? A binary built with CUDA must still run where there is none. */
#include <cstdio>

#include <cuda_runtime.h>

#include "encoder/gpu_encoder.h"

extern "C" int splade_gpu_probe(char *name, size_t name_len)
{
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess || n == 0) {
        (void)cudaGetLastError();
        if (name && name_len)
            snprintf(name, name_len, "%s", err != cudaSuccess ? cudaGetErrorString(err) : "no CUDA device");
        return 0;
    }
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
        (void)cudaGetLastError();
        if (name && name_len)
            snprintf(name, name_len, "cannot query device 0");
        return 0;
    }
    if (name && name_len)
        snprintf(name, name_len, "%s (sm_%d%d, %d SMs)", prop.name, prop.major, prop.minor,
                 prop.multiProcessorCount);
    return 1;
}

extern "C" int splade_gpu_warm_context(int device)
{
    if (cudaSetDevice(device < 0 ? 0 : device) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) {
        (void)cudaGetLastError();
        return SPLADE_ERR_NO_GPU;
    }
    return SPLADE_OK;
}

extern "C" int splade_gpu_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}
