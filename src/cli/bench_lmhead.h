/* bench-lmhead's two halves: cmd_bench_lmhead.c (in the binary: options, --help, the GPU probe)
 * and bench_lmhead_cuda.c (in libsplade-cuda.so, loaded only when a GPU is there: the CUDA and
 * cuBLAS calls), joined by splade_gpu_symbol(SPLADE_BENCH_LMHEAD_GPU). */
#ifndef SPLADE_CLI_BENCH_LMHEAD_H
#define SPLADE_CLI_BENCH_LMHEAD_H

#include "splade.h"

typedef struct {
    int B, S, D, V;
} shape;

typedef struct {
    shape one;          /* the shape given with --B --S --D --V (when custom) */
    int custom;         /* 0: the default grid */
    int iters;          /* >= 20 */
    const char *json_path; /* NULL: no JSON */
    const char *device; /* the probe's device name */
} bench_lmhead_opts;

#define SPLADE_BENCH_LMHEAD_GPU "splade_cli_bench_lmhead_gpu"
/* Measures and prints; the process exit status (0 ok, 1 a failure). Exported from
 * libsplade-cuda.so (built -fvisibility=hidden) for splade_gpu_symbol to find. */
SPLADE_API int splade_cli_bench_lmhead_gpu(const bench_lmhead_opts *o);

#endif
