/* The LM head's benchmark harness (lmhead_bench.c, beside the kernels it measures, in
 * libsplade-cuda.so: the CUDA and cuBLAS calls) and its one client, the CLI's bench-lmhead
 * subcommand (src/cli/cmd_bench_lmhead.c: options, --help, the GPU probe), joined by
 * splade_gpu_symbol(SPLADE_BENCH_LMHEAD_GPU) so that the binary links no CUDA library. */
#ifndef SPLADE_LMHEAD_FUSED_LMHEAD_BENCH_H
#define SPLADE_LMHEAD_FUSED_LMHEAD_BENCH_H

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
    /* Receives every line of the table (is_error 0) and every failure (1), without a newline: the
     * harness prints nothing itself (the CLI's callback writes the terminal). */
    void (*print)(void *user, int is_error, const char *line);
    void *print_user;
} bench_lmhead_opts;

#define SPLADE_BENCH_LMHEAD_GPU "splade_lmhead_bench_gpu"
/* Measures and prints; the process exit status (0 ok, 1 a failure). Exported from
 * libsplade-cuda.so (built -fvisibility=hidden) for splade_gpu_symbol to find. */
SPLADE_API int splade_lmhead_bench_gpu(const bench_lmhead_opts *o);

#endif
