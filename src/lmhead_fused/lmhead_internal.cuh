/* Internal interface between the LM head's .cu files (not installed). */
#ifndef SPLADE_LMHEAD_INTERNAL_CUH
#define SPLADE_LMHEAD_INTERNAL_CUH

#include <cstddef>

#include "lmhead_fused/lmhead.h"

/* The naive head (lmhead_naive.cu): cuBLAS GEMM to bf16 logits + eager-style elementwise ops. */
size_t splade_lmhead_naive_workspace(const splade_lmhead_args *a);
int splade_lmhead_naive_run(const splade_lmhead_args *a, void *workspace, size_t workspace_bytes,
                            void *cublas_handle, void *stream);
/* Shared argument checks (lmhead_gpu.cu); returns SPLADE_OK or a recorded failure. */
int splade_lmhead_check_args(const splade_lmhead_args *a);

#endif
