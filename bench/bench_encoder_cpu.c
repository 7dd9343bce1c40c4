/* CPU encoder benchmark: latency of one 32-token query and throughput on 256-token documents,
 * for splade-tiny and a random-weight bert-base-shaped model, with 1 and 2 OpenBLAS threads.
 *
 *   bench_encoder_cpu [--quick] [--threads N] [--query] [MODEL_DIR...]
 *
 * --threads N: only N threads (default: 1 then 2); --query: skip the documents.
 * Each row ends with the load average (1 min) read after it: the machine is shared, and a
 * load above the thread count means the wall times include waiting for a core.
 *
 * Default models: cache/splade-tiny (make models) and cache/rand-bert-base
 * (python3 tools/make_random_model.py --out cache/rand-bert-base --layers 12 --hidden 768
 *  --heads 12 --intermediate 3072 --numpy); an absent one is skipped with a notice.
 * Times go through splade_encoder_encode_ids (forward + LM head + sparsify; tokenizing is
 * bench_tokenizer's business): median of N runs after one warm-up. Weights only change values,
 * never the work, so random weights time like trained ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "encoder/model_internal.h"
#include "splade.h"
#include "splade/encoder.h"
#include "splade/model.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* CPU time of this process (all threads, the pool's idle spinning included): on a shared
 * machine, wall time includes waiting for a core; CPU time does not, so with 1 thread it
 * approximates the uncontended latency. */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* n sequences of len tokens: [CLS] random ids [SEP], deterministic. */
static void make_ids(int32_t *ids, int32_t *off, int n, int len, int32_t V)
{
    uint32_t s = 12345;
    off[0] = 0;
    for (int i = 0; i < n; i++) {
        for (int t = 0; t < len; t++) {
            s = s * 1664525u + 1013904223u;
            ids[off[i] + t] = t == 0 ? 101 : t == len - 1 ? 102 : 1000 + (int32_t)((s >> 8) % (uint32_t)(V - 1000));
        }
        off[i + 1] = off[i] + len;
    }
}

/* Median wall ms of `iters` encodes of n sequences of len tokens; *cpu gets the median CPU ms,
 * *best the fastest wall time (on a shared machine, the run that waited least for a core). */
static double time_encode(const splade_model *m, int threads, int n, int len, int iters, double *cpu, double *best)
{
    splade_encoder_opts o = {.device = SPLADE_DEVICE_CPU, .threads = threads, .batch_size = n, .quiet = 1};
    splade_encoder *e;
    if (splade_encoder_create(m, &o, &e))
        return -1;
    int32_t *ids = malloc((size_t)n * len * sizeof *ids), *off = malloc((size_t)(n + 1) * sizeof *off);
    splade_sparse *v = calloc((size_t)n, sizeof *v);
    double *t = malloc((size_t)iters * sizeof *t), *c = malloc((size_t)iters * sizeof *c);
    make_ids(ids, off, n, len, m->cfg.vocab_size);
    for (int it = -1; it < iters; it++) {
        double t0 = now_ms(), c0 = cpu_ms();
        if (splade_encoder_encode_ids(e, ids, off, n, v)) {
            fprintf(stderr, "encode: %s\n", splade_error_detail());
            exit(1);
        }
        double t1 = now_ms();
        /* Pooled worker threads (src/common/cpu_team.c) spin a little, then park: only then is
         * their CPU time folded into the process clock, so read it after they have parked. */
        usleep(2000);
        if (it >= 0) {
            t[it] = t1 - t0;
            c[it] = cpu_ms() - c0;
        }
        for (int i = 0; i < n; i++)
            splade_sparse_free(&v[i]);
    }
    qsort(t, (size_t)iters, sizeof *t, cmp_double);
    qsort(c, (size_t)iters, sizeof *c, cmp_double);
    double med = t[iters / 2];
    *cpu = c[iters / 2];
    *best = t[0];
    free(ids), free(off), free(v), free(t), free(c);
    splade_encoder_free(e);
    return med;
}

static double loadavg1(void)
{
    double l = -1.0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1.0;
        fclose(f);
    }
    return l;
}

static void bench_model(const char *dir, int quick, int only_threads, int query_only)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    if (access(p, R_OK) != 0) {
        printf("| %s | skipped: absent (see the comment atop bench/bench_encoder_cpu.c) |\n", dir);
        return;
    }
    splade_model *m;
    if (splade_model_load(dir, &m)) {
        printf("| %s | load failed: %s |\n", dir, splade_error_detail());
        return;
    }
    int big = m->cfg.hidden_size >= 512;
    int qiters = quick ? 5 : big ? 21 : 101, docs = big ? 4 : 32, diters = quick ? 1 : big ? 3 : 5;
    for (int threads = 1; threads <= 2; threads++) {
        if (only_threads > 0 && threads != only_threads)
            continue;
        double qc, qb, dc = 0.0, db = 0.0;
        double q = time_encode(m, threads, 1, 32, qiters, &qc, &qb);
        double d = query_only ? 0.0 : time_encode(m, threads, docs, 256, diters, &dc, &db);
        printf("| %s (L%d H%d) | %d | %.2f | %.2f | %.2f | %.1f | %.1f | %.1f | %.1f | %.2f |\n", dir,
               m->cfg.num_layers, m->cfg.hidden_size, threads, q, qb, qc, d > 0 ? docs * 1000.0 / d : 0.0, d / docs,
               db / docs, dc / docs, loadavg1());
        fflush(stdout);
    }
    splade_model_free(m);
}

int main(int argc, char **argv)
{
    int quick = 0, n = 0, only_threads = 0, query_only = 0;
    const char *dirs[16];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--query"))
            query_only = 1;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            only_threads = atoi(argv[++i]);
        else if (n < 16)
            dirs[n++] = argv[i];
    }
    if (!n) {
        dirs[n++] = "cache/splade-tiny";
        dirs[n++] = "cache/rand-bert-base";
    }
    printf("| model | threads | query 32 tok wall ms | best wall ms | query CPU ms | docs/s (256 tok) | wall ms/doc "
           "| best wall ms/doc | CPU ms/doc | load |\n"
           "|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++)
        bench_model(dirs[i], quick, only_threads, query_only);
    return 0;
}
