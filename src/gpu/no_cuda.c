/* Built only without nvcc: every GPU entry point reports that CUDA is not compiled in,
 * so callers fall back to the CPU through the same code path as on a GPU-less machine. */
#include <stdio.h>
#include <string.h>

#include "common/fail.h"
#include "gpu/loader.h"
#include "splade.h"
#include "encoder/gpu_encoder.h"
#include "lmhead_fused/lmhead.h"
#include "gpu/search.h"

int splade_gpu_probe(char *name, size_t name_len)
{
    if (name && name_len)
        snprintf(name, name_len, "built without CUDA");
    return 0;
}

int splade_gpu_warm_context(int device)
{
    (void)device;
    return SPLADE_ERR_NO_GPU;
}

int splade_gpu_warm_blas(int device)
{
    (void)device;
    return SPLADE_ERR_NO_GPU;
}

int splade_gpu_encoder_create(const splade_model *m, splade_lmhead_kind head, splade_gpu_encoder **out)
{
    (void)m, (void)head;
    if (out)
        *out = NULL;
    return splade_fail(SPLADE_ERR_NO_GPU, "this build has no CUDA support");
}

int splade_gpu_encoder_create_ex(const splade_model *m, splade_lmhead_kind head, splade_precision precision,
                                 splade_gpu_encoder **out)
{
    (void)m, (void)head, (void)precision;
    if (out)
        *out = NULL;
    return splade_fail(SPLADE_ERR_NO_GPU, "this build has no CUDA support");
}

int splade_gpu_encoder_create_on(const splade_model *m, splade_lmhead_kind head, splade_precision precision,
                                 int device, int tune, splade_gpu_encoder **out)
{
    (void)device, (void)tune;
    return splade_gpu_encoder_create_ex(m, head, precision, out);
}

int splade_gpu_device_count(void) { return 0; }

splade_precision splade_gpu_encoder_precision(const splade_gpu_encoder *g)
{
    (void)g;
    return SPLADE_PRECISION_BF16;
}

int splade_gpu_encoder_forward(splade_gpu_encoder *g, const int32_t *ids, const int32_t *offsets,
                               int32_t B, float *out_dense)
{
    (void)g, (void)ids, (void)offsets, (void)B, (void)out_dense;
    return splade_fail(SPLADE_ERR_NO_GPU, "this build has no CUDA support");
}

int splade_gpu_encoder_forward_sparse(splade_gpu_encoder *g, const int32_t *ids, const int32_t *offsets,
                                      int32_t B, float threshold, splade_gpu_sparse *out)
{
    (void)g, (void)ids, (void)offsets, (void)B, (void)threshold;
    if (out)
        memset(out, 0, sizeof *out);
    return splade_fail(SPLADE_ERR_NO_GPU, "this build has no CUDA support");
}

void splade_gpu_encoder_free(splade_gpu_encoder *g) { (void)g; }

size_t splade_lmhead_workspace_bytes(splade_lmhead_kind kind, const splade_lmhead_args *a)
{
    (void)kind, (void)a;
    return 0;
}

int splade_lmhead_gpu(splade_lmhead_kind kind, const splade_lmhead_args *a, void *workspace,
                      size_t workspace_bytes, void *cublas_handle, void *stream)
{
    (void)kind, (void)a, (void)workspace, (void)workspace_bytes, (void)cublas_handle, (void)stream;
    return splade_fail(SPLADE_ERR_NO_GPU, "this build has no CUDA support");
}

int splade_lmhead_gpu_fp32(const splade_lmhead_args *a, void *stream)
{
    (void)a, (void)stream;
    return splade_fail(SPLADE_ERR_NO_GPU, "this build has no CUDA support");
}

void *splade_gpu_symbol(const char *name)
{
    splade_fail(SPLADE_ERR_NO_GPU, "this build has no CUDA support (%s)", name);
    return NULL;
}

/* The same exported functions with or without CUDA, so that a program links against either build. */
int splade_lmhead_fused_plan(splade_fused_path path, const splade_lmhead_args *a, splade_lmhead_plan *plan)
{
    (void)path, (void)a;
    if (plan)
        memset(plan, 0, sizeof *plan);
    return splade_fail(SPLADE_ERR_NO_GPU, "this build has no CUDA support");
}

int splade_lmhead_gpu_fused(splade_fused_path path, const splade_lmhead_args *a, void *stream)
{
    (void)path, (void)a, (void)stream;
    return splade_fail(SPLADE_ERR_NO_GPU, "this build has no CUDA support");
}

int splade_gpu_search_open(const splade_gpu_postings *p, int device, splade_gpu_search **out)
{
    (void)p, (void)device;
    if (out)
        *out = NULL;
    return splade_fail(SPLADE_ERR_NO_GPU, "this build has no CUDA support");
}

int splade_gpu_search_run(splade_gpu_search *g, int nq, const uint64_t *task_off, const splade_gpu_task *tasks, int k,
                          uint64_t *keys, int *counts)
{
    (void)g, (void)nq, (void)task_off, (void)tasks, (void)k, (void)keys, (void)counts;
    return splade_fail(SPLADE_ERR_NO_GPU, "this build has no CUDA support");
}

size_t splade_gpu_search_bytes(const splade_gpu_search *g)
{
    (void)g;
    return 0;
}

void splade_gpu_search_close(splade_gpu_search *g) { (void)g; }
