/* The CUDA backend (backend.h): the GPU encoder of gpu_encoder.h (libsplade-cuda.so, loaded on the
 * first call; without nvcc src/gpu/no_cuda.c answers SPLADE_ERR_NO_GPU). */
#include <stdio.h>
#include <stdlib.h>

#include "common/fail.h"
#include "common/phase.h"
#include "encoder/backend.h"
#include "encoder/gpu_encoder.h"
#include "splade.h"

typedef struct {
    int device, tune;
    splade_lmhead_kind head;
    splade_precision precision;
    splade_gpu_encoder *gpu; /* NULL until upload */
} cuda_state;

static int cuda_create(const splade_encoder_opts *o, int device, int tune, void **state, char *name, size_t n)
{
    const double t0 = splade_phase_now();
    const int usable = splade_gpu_probe(name, n); /* loads libsplade-cuda.so on the first call */
    splade_phase_since(SPLADE_PH_GPU_OPEN, t0);
    if (!usable) /* name now says why not */
        return splade_fail(SPLADE_ERR_NO_GPU, "no usable GPU (%s)", name);
    cuda_state *s = calloc(1, sizeof *s);
    if (!s)
        return splade_fail(SPLADE_ERR_NOMEM, "GPU encoder");
    s->device = device;
    s->tune = tune;
    s->head = o->lmhead;
    s->precision = o->precision;
    *state = s;
    return SPLADE_OK;
}

static int cuda_upload(void *state, const splade_model *m)
{
    cuda_state *s = state;
    return splade_gpu_encoder_create_on(m, s->head, s->precision, s->device, s->tune, &s->gpu);
}

static int cuda_forward(void *state, const int32_t *ids, const int32_t *offsets, int32_t B, float *out_dense)
{
    return splade_gpu_encoder_forward(((cuda_state *)state)->gpu, ids, offsets, B, out_dense);
}

static int cuda_forward_sparse(void *state, const int32_t *ids, const int32_t *offsets, int32_t B, float threshold,
                               splade_gpu_sparse *out)
{
    return splade_gpu_encoder_forward_sparse(((cuda_state *)state)->gpu, ids, offsets, B, threshold, out);
}

static void cuda_free(void *state)
{
    cuda_state *s = state;
    if (!s)
        return;
    splade_gpu_encoder_free(s->gpu);
    free(s);
}

const splade_encoder_backend splade_backend_cuda = {
    .name = "cuda",
    .device = SPLADE_DEVICE_CUDA,
    .default_batch = 64,
    .create = cuda_create,
    .upload = cuda_upload,
    .fit = NULL, /* out of memory is found by trying: SPLADE_ERR_GPU_OOM, then the batch is halved */
    .forward = cuda_forward,
    .forward_sparse = cuda_forward_sparse,
    .free = cuda_free,
};
