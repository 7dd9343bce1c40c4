/* SPLADE_GPU_ENTRY marks the entry points that libsplade-cuda.so exports for src/gpu/cuda_loader.c
 * to look up (dlsym), declared in the internal headers src/encoder/gpu_encoder.h and
 * src/lmhead_fused/lmhead.h. Exported from libsplade-cuda.so only (its objects are compiled with
 * -DSPLADE_IN_CUDA_SO); in libsplade.so the loader's forwarders of the same names stay hidden, so
 * that the shared library's exports are exactly the public API of include/ (test_library.sh). */
#ifndef SPLADE_GPU_ENTRY_H
#define SPLADE_GPU_ENTRY_H

#if defined(SPLADE_IN_CUDA_SO) && defined(__GNUC__)
#define SPLADE_GPU_ENTRY __attribute__((visibility("default")))
#else
#define SPLADE_GPU_ENTRY
#endif

#endif
