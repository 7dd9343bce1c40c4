/* Query latency of an inference-free model (issue 15): a query's vector from the query table
 * (tokenizer + table lookup, no forward pass) against full query encoding by the same model's
 * forward pass (CPU encoder, one query per call, as `splade-index query "TEXT"` does).
 *
 * usage: bench_query_table [--model DIR] [--queries FILE] [--rounds N] [--threads T]
 * Defaults: cache/rand-distil-base-docv3 (DistilBERT-base shapes, random weights, Router layout:
 * tools/make_model_goldens.py --bench-model writes it), ../shared/data/scifact/queries.jsonl,
 * 3 rounds, 1 thread. Rounds interleave the two methods (A B A B: the machine is shared); each
 * prints wall and CPU time per query, the best round is the summary. Skips (exit 0) without the
 * model or queries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "splade.h"
#include "splade/corpus.h"
#include "splade/encoder.h"
#include "splade/model.h"

static double clock_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int read_queries(const char *path, char ***texts, int *n)
{
    splade_corpus_reader *r;
    splade_doc d;
    int rc = splade_corpus_open(path, &r), cap = 0;
    if (rc)
        return rc;
    while ((rc = splade_corpus_next(r, &d)) == 1) {
        if (*n == cap)
            *texts = realloc(*texts, (size_t)(cap = cap ? 2 * cap : 512) * sizeof **texts);
        (*texts)[(*n)++] = strndup(d.text, d.text_len);
    }
    splade_corpus_close(r);
    return rc < 0 ? rc : 0;
}

/* One pass over the queries by one method; per-query wall and CPU milliseconds, total terms. */
static int pass(const splade_model *m, splade_encoder *e, char **q, int n, double *wall, double *cpu, long *terms)
{
    double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    *terms = 0;
    for (int i = 0; i < n; i++) {
        splade_sparse v;
        const char *t = q[i];
        int rc = e ? splade_encoder_encode(e, &t, NULL, 1, &v, NULL)
                   : splade_model_query_vector(m, t, strlen(t), splade_model_config(m)->max_position, &v);
        if (rc)
            return rc;
        *terms += v.n;
        splade_sparse_free(&v);
    }
    *wall = 1e3 * (clock_s(CLOCK_MONOTONIC) - w0) / n;
    *cpu = 1e3 * (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / n;
    return 0;
}

int main(int argc, char **argv)
{
    const char *model = "cache/rand-distil-base-docv3", *qpath = "../shared/data/scifact/queries.jsonl";
    int rounds = 3, threads = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--model"))
            model = argv[i + 1];
        else if (!strcmp(argv[i], "--queries"))
            qpath = argv[i + 1];
        else if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads"))
            threads = atoi(argv[i + 1]);
    }
    if (access(model, R_OK) || access(qpath, R_OK)) {
        printf("SKIP: %s or %s absent\n", model, qpath);
        return 0;
    }
    splade_model *m;
    char **q = NULL;
    int n = 0;
    if (splade_model_load(model, &m) || read_queries(qpath, &q, &n) || !n) {
        fprintf(stderr, "bench_query_table: %s\n", splade_error_detail());
        return 1;
    }
    if (!splade_model_has_query_table(m)) {
        fprintf(stderr, "bench_query_table: %s has no query table\n", model);
        return 1;
    }
    splade_encoder_opts o;
    splade_encoder_opts_init(&o);
    o.device = SPLADE_DEVICE_CPU, o.threads = threads, o.quiet = 1, o.max_length = 256;
    splade_encoder *e;
    if (splade_encoder_create(m, &o, &e)) {
        fprintf(stderr, "bench_query_table: %s\n", splade_error_detail());
        return 1;
    }
    double la[3] = {0};
    if (getloadavg(la, 3) < 0)
        la[0] = -1;
    const splade_config *c = splade_model_config(m);
    printf("model %s (%d layers, hidden %d, vocab %d), %d queries, %d encoder thread(s), load average %.2f\n", model,
           c->num_layers, c->hidden_size, c->vocab_size, n, threads, la[0]);
    double best[2][2] = {{1e30, 1e30}, {1e30, 1e30}};
    long terms[2] = {0, 0};
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 2; k++) { /* A B A B */
            double w, cpu;
            if (pass(m, k ? e : NULL, q, n, &w, &cpu, &terms[k])) {
                fprintf(stderr, "bench_query_table: %s\n", splade_error_detail());
                return 1;
            }
            printf("round %d %-14s %9.4f ms/query wall %9.4f ms/query CPU  %.1f terms/query\n", r,
                   k ? "forward pass" : "query table", w, cpu, (double)terms[k] / n);
            best[k][0] = w < best[k][0] ? w : best[k][0];
            best[k][1] = cpu < best[k][1] ? cpu : best[k][1];
        }
    if (getloadavg(la, 3) < 0)
        la[0] = -1;
    printf("best: query table %.4f ms wall (%.4f CPU), forward pass %.3f ms wall (%.3f CPU): %.0fx (wall), %.0fx (CPU); "
           "load average %.2f\n", best[0][0], best[0][1], best[1][0], best[1][1], best[1][0] / best[0][0],
           best[1][1] / best[0][1], la[0]);
    splade_encoder_free(e);
    splade_model_free(m);
    for (int i = 0; i < n; i++)
        free(q[i]);
    free(q);
    return 0;
}
