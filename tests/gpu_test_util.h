/* Helpers shared by the GPU tests (test_encoder_backends.c, test_lmhead_backends.c, test_gpu_sparse.c):
 * header-only, test use only. Include after cmocka.h and encoder/gpu_encoder.h. */
#ifndef SPLADE_GPU_TEST_UTIL_H
#define SPLADE_GPU_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#define UNUSED_OK __attribute__((unused))

#ifdef SPLADE_HAVE_CUDA
#include <cuda_runtime.h>
/* A CUDA runtime call in a test: a failure fails the test with file:line and the CUDA message. */
#define CK(call)                                                                                  \
    do {                                                                                          \
        cudaError_t e_ = (call);                                                                  \
        if (e_ != cudaSuccess)                                                                    \
            fail_msg("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_));         \
    } while (0)
#endif

/* 1 when a CUDA device is usable; else prints why (the test then calls skip(), visibly). */
UNUSED_OK static int gpu_available(void)
{
    char name[256];
    if (!splade_gpu_probe(name, sizeof name)) {
        printf("  (skipping: no usable GPU: %s)\n", name);
        return 0;
    }
    return 1;
}

/* A test input file: $env (plus suffix must exist under it) when the variable is set — then a
 * missing file means skip, never a silent fallback — else the first readable candidate.
 * Returns buf, or NULL when there is none. */
UNUSED_OK static const char *first_file(const char *env, const char *suffix, const char *const *cands, char *buf,
                                        size_t n)
{
    const char *e = getenv(env);
    if (e && *e) {
        snprintf(buf, n, "%s%s", e, suffix);
        FILE *f = fopen(buf, "rb");
        if (!f)
            return NULL;
        fclose(f);
        snprintf(buf, n, "%s", e);
        return buf;
    }
    for (int i = 0; cands[i]; i++) {
        FILE *f = fopen(cands[i], "rb");
        if (f) {
            fclose(f);
            snprintf(buf, n, "%s", cands[i]);
            return buf;
        }
    }
    return NULL;
}

#endif
