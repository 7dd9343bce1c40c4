/* splade-index bench-lmhead: the SPLADE LM head on the GPU — fused vs naive vs cuBLAS's GEMM
 * alone; time, TFLOP/s, peak memory, bytes moved. This subcommand only parses the options and
 * probes the GPU; the harness lives beside the head (src/lmhead_fused/lmhead_bench.c, in
 * libsplade-cuda.so) and is looked up only then (docs/GPU_ENCODER.md, "Loading"). */
#include <stdio.h>
#include <string.h>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "gpu/loader.h"
#include "lmhead_fused/lmhead_bench.h"
#include "splade.h"
#include "splade/encoder.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: splade-index bench-lmhead [--B N --S N --D N --V N] [--iters N] [--json FILE]\n"
               "  N: B 1..4096, S 1..8192, D 1..65536, V 1..4194304, iters 1..1000000 (at least 20 are run)\n"
               "  no shape given: (B,S) in {(32,256),(128,256),(256,128),(8,512)} x V in {30522,105879,250002}, D=768\n"
               "  every sequence has S tokens (no padding), so all heads do the same useful work\n");
}

/* The largest value each numeric option accepts (all start at 1). */
static long option_max(const char *o)
{
    static const struct { const char *name; long max; } limits[] = {
        {"--B", 4096}, {"--S", 8192}, {"--D", 65536}, {"--V", 1 << 22}, {"--iters", 1000000}};
    for (size_t i = 0; i < sizeof limits / sizeof *limits; i++)
        if (!strcmp(o, limits[i].name))
            return limits[i].max;
    return 0; /* not a numeric option */
}

/* Parsed before the GPU is probed, so a bad number is a usage error in every build. Returns -1 to
 * go on, else the exit status. */
static int parse_args(int argc, char **argv, bench_lmhead_opts *a)
{
    *a = (bench_lmhead_opts){.one = {32, 256, 768, 30522}, .iters = 20};
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
        int v = 0;
        long max = option_max(o);
        if (max && splade_cli_int("bench-lmhead", o, argv[i + 1], 1, max, &v))
            return 2;
        if (!strcmp(o, "--B"))
            a->one.B = v, a->custom = 1;
        else if (!strcmp(o, "--S"))
            a->one.S = v, a->custom = 1;
        else if (!strcmp(o, "--D"))
            a->one.D = v, a->custom = 1;
        else if (!strcmp(o, "--V"))
            a->one.V = v, a->custom = 1;
        else if (!strcmp(o, "--iters"))
            a->iters = v < 20 ? 20 : v; /* fewer samples make the median meaningless (usage says so) */
        else if (!strcmp(o, "--json"))
            a->json_path = argv[i + 1];
        else {
            usage(stderr);
            return 2;
        }
        i++;
    }
    return -1;
}

/* The harness's lines: the table on stdout (flushed per line, so a long grid shows as it goes), failures
 * on stderr. */
static void print_line(void *user, int is_error, const char *line)
{
    (void)user;
    FILE *f = is_error ? stderr : stdout;
    fprintf(f, "%s\n", line);
    fflush(f);
}

int cmd_bench_lmhead(int argc, char **argv)
{
    bench_lmhead_opts opts;
    int st = parse_args(argc, argv, &opts);
    if (st >= 0)
        return st;
    char dev[256];
    if (!splade_gpu_probe(dev, sizeof dev)) {
        fprintf(stderr, "splade-index bench-lmhead: no usable GPU (%s); nothing measured\n", dev);
        return 1;
    }
    opts.device = dev;
    opts.print = print_line;
    opts.print_user = NULL;
    int (*measure)(const bench_lmhead_opts *) = (int (*)(const bench_lmhead_opts *))splade_gpu_symbol(
        SPLADE_BENCH_LMHEAD_GPU);
    if (!measure) {
        fprintf(stderr, "splade-index bench-lmhead: %s: %s\n", splade_strerror(SPLADE_ERR_NO_GPU), splade_error_detail());
        return 1;
    }
    return measure(&opts);
}
