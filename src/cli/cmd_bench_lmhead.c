/* splade-index bench-lmhead: the SPLADE LM head on the GPU — fused vs naive vs cuBLAS's GEMM
 * alone; time, TFLOP/s, peak memory, bytes moved (bench_lmhead_cuda.c says how). This half, in the
 * binary, parses the options and probes the GPU; the measuring half lives in libsplade-cuda.so
 * with the rest of the CUDA code and is looked up only then (docs/GPU_ENCODER.md, "Loading"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench_lmhead.h"
#include "cli/commands.h"
#include "gpu/loader.h"
#include "splade.h"
#include "splade/gpu.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: splade-index bench-lmhead [--B N --S N --D N --V N] [--iters N] [--json FILE]\n"
               "  no shape given: (B,S) in {(32,256),(128,256),(256,128),(8,512)} x V in {30522,250002}, D=768\n"
               "  every sequence has S tokens (no padding), so all heads do the same useful work\n");
}

static long argl(const char *s, const char *name)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v <= 0) {
        fprintf(stderr, "bench-lmhead: %s needs a positive integer, got '%s'\n", name, s);
        return -1;
    }
    return v;
}

int cmd_bench_lmhead(int argc, char **argv)
{
    shape one = {32, 256, 768, 30522};
    int custom = 0, iters = 20;
    const char *json_path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            usage(stderr);
            return 2;
        }
        long v = 0;
        if (strcmp(o, "--json"))
            if ((v = argl(argv[i + 1], o)) < 0)
                return 2;
        if (!strcmp(o, "--B"))
            one.B = (int)v, custom = 1;
        else if (!strcmp(o, "--S"))
            one.S = (int)v, custom = 1;
        else if (!strcmp(o, "--D"))
            one.D = (int)v, custom = 1;
        else if (!strcmp(o, "--V"))
            one.V = (int)v, custom = 1;
        else if (!strcmp(o, "--iters"))
            iters = v < 20 ? 20 : (int)v;
        else if (!strcmp(o, "--json"))
            json_path = argv[i + 1];
        else {
            usage(stderr);
            return 2;
        }
        i++;
    }
    char dev[256];
    if (!splade_gpu_probe(dev, sizeof dev)) {
        fprintf(stderr, "splade-index bench-lmhead: no usable GPU (%s); nothing measured\n", dev);
        return 1;
    }
    bench_lmhead_opts opts = {one, custom, iters, json_path, dev};
    int (*measure)(const bench_lmhead_opts *) = (int (*)(const bench_lmhead_opts *))splade_gpu_symbol(
        SPLADE_BENCH_LMHEAD_GPU);
    if (!measure) {
        fprintf(stderr, "splade-index bench-lmhead: %s: %s\n", splade_strerror(SPLADE_ERR_NO_GPU), splade_error_detail());
        return 1;
    }
    return measure(&opts);
}
