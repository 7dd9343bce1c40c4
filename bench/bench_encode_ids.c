/* Times splade_encoder_encode_ids on token ids read from a file: the splade-index side of
 * bench/cpu_peer.py (which writes the ids of real SciFact texts with our tokenizer and runs
 * ONNX Runtime on the same ids, pinned to the same cores).
 *
 *   bench_encode_ids MODEL_DIR IDS_FILE THREADS BATCH [VECTORS_OUT] [PRECISION]
 *
 * IDS_FILE: int32 little-endian: n, then n lengths, then the ids of each sequence in turn.
 * Sequences go BATCH at a time (1: one query at a time). Prints one JSON line:
 * {"times_ms": [per call, wall], "cpu_ms": total process CPU, "seqs": n}. VECTORS_OUT (optional,
 * "-" for none): each sequence's sparse vector, int32 count then count int32 terms then count
 * float32 weights, for the numerics check against ONNX Runtime. PRECISION: fp32 (default), bf16,
 * int8. Warm-up (not timed): the first batch, repeated until WARM_TOKENS (1,024) tokens went
 * through, so that what a serving process makes once (the fp32 head's screen after 512 tokens,
 * the packed few-row weights after 256, one layer per call: backend_cpu.c) is made before the
 * timed calls, as ONNX Runtime prepacks at session creation. "warmup_ms" reports what that cost, "warmup_calls" how many. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "splade.h"
#include "splade/encoder.h"
#include "splade/model.h"

enum { WARM_TOKENS = 1024 };

static double clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int32_t *read_ids(const char *path, int32_t *n, int32_t **off)
{
    FILE *f = fopen(path, "rb");
    if (!f || fread(n, 4, 1, f) != 1 || *n < 1) {
        fprintf(stderr, "bench_encode_ids: cannot read %s\n", path);
        exit(2);
    }
    int32_t *len = malloc((size_t)*n * 4);
    *off = malloc(((size_t)*n + 1) * 4);
    if (fread(len, 4, (size_t)*n, f) != (size_t)*n)
        exit(2);
    (*off)[0] = 0;
    for (int32_t i = 0; i < *n; i++)
        (*off)[i + 1] = (*off)[i] + len[i];
    int32_t *ids = malloc((size_t)(*off)[*n] * 4);
    if (fread(ids, 4, (size_t)(*off)[*n], f) != (size_t)(*off)[*n])
        exit(2);
    fclose(f);
    free(len);
    return ids;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: bench_encode_ids MODEL_DIR IDS_FILE THREADS BATCH [VECTORS_OUT] [PRECISION]\n");
        return 2;
    }
    int32_t n, *off, *ids = read_ids(argv[2], &n, &off);
    int threads = atoi(argv[3]), batch = atoi(argv[4]);
    splade_model *m;
    splade_encoder *e;
    splade_encoder_opts o;
    splade_encoder_opts_init(&o);
    o.device = SPLADE_DEVICE_CPU, o.threads = threads, o.batch_size = batch, o.quiet = 1, o.max_length = 512;
    if (argc > 6 && splade_parse_cpu_precision(argv[6], &o.cpu_precision)) {
        fprintf(stderr, "%s\n", splade_error_detail());
        return 2;
    }
    if (splade_model_load(argv[1], &m) || splade_encoder_create(m, &o, &e)) {
        fprintf(stderr, "bench_encode_ids: %s\n", splade_error_detail());
        return 1;
    }
    splade_sparse *v = calloc((size_t)n, sizeof *v);
    FILE *out = argc > 5 && strcmp(argv[5], "-") ? fopen(argv[5], "wb") : NULL;
    const double w0 = clock_ms(CLOCK_MONOTONIC);
    int warm_calls = 0;
    for (int64_t warm_tokens = 0; warm_tokens < WARM_TOKENS; warm_calls++) {
        const int32_t k = n < batch ? n : batch; /* the first batch: its offsets are off's first k + 1 */
        if (splade_encoder_encode_ids(e, ids, off, k, v)) {
            fprintf(stderr, "bench_encode_ids: %s\n", splade_error_detail());
            return 1;
        }
        warm_tokens += off[k];
        for (int32_t i = 0; i < k; i++)
            splade_sparse_free(&v[i]);
    }
    const double warm_ms = clock_ms(CLOCK_MONOTONIC) - w0, c0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
    printf("{\"times_ms\": [");
    for (int32_t b = 0; b * batch < n; b++) {
        int32_t s = b * batch, k = n - s < batch ? n - s : batch;
        int32_t *o2 = malloc(((size_t)k + 1) * 4);
        for (int32_t i = 0; i <= k; i++)
            o2[i] = off[s + i] - off[s];
        double t0 = clock_ms(CLOCK_MONOTONIC);
        if (splade_encoder_encode_ids(e, ids + off[s], o2, k, v + s)) {
            fprintf(stderr, "bench_encode_ids: %s\n", splade_error_detail());
            return 1;
        }
        double t1 = clock_ms(CLOCK_MONOTONIC);
        free(o2);
        printf("%s%.3f", b ? ", " : "", t1 - t0);
        for (int32_t i = 0; i < k; i++) {
            if (out) {
                fwrite(&v[s + i].n, 4, 1, out);
                fwrite(v[s + i].terms, 4, (size_t)v[s + i].n, out);
                fwrite(v[s + i].weights, 4, (size_t)v[s + i].n, out);
            }
            splade_sparse_free(&v[s + i]);
        }
    }
    printf("], \"cpu_ms\": %.1f, \"seqs\": %d, \"warmup_ms\": %.1f, \"warmup_calls\": %d}\n",
           clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0, (int)n, warm_ms, warm_calls);
    if (out)
        fclose(out);
    splade_encoder_free(e);
    splade_model_free(m);
    free(v), free(ids), free(off);
    return 0;
}
