/* Copy of ../shared/peer/query/sq_latency.c (2026-11-23) extended for issue #14: the methods wtaat
 * and auto, and the approximate options QUERY_CUT / BOUND_FACTOR / RESCORE / BUDGET from the environment
 * (with RESCORE, a second line gives the documents rescored per query and the forward index's size
 * and build time: it is built during the warm-up pass, outside the timed one).
 *
 * Per-query latency of splade-index's top-k over query vectors, one thread, in process (the same
 * way the Python peers are timed: index loaded and queries parsed first, then one call per query).
 *
 *   sq_latency INDEX_DIR QVECTORS.jsonl RUN.trec LAT.txt [ALGO=bmp] [K=10] [WARMUP_PASSES=1]
 *
 * Writes the TREC run of the timed pass and one line per query (wall µs, thread CPU µs); prints a
 * one-line summary. `sq_latency --order INDEX_DIR OUT.txt` writes the document ids in the index's
 * internal order (after its reordering), one per line, to feed another engine the same order. Build (from the project checkout, after `make`):
 *   cc -O2 -I SRC/include sq_latency.c SRC/build-nc/libsplade.a -lutf8proc -ljansson -lopenblas \
 *      -lcurl -lstreamvbyte -lz -lm -pthread -o sq_latency
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "splade.h"
#include "splade/index.h"
#include "splade/query.h"
#include "splade/query_input.h"

static double now_us(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int dump_order(const char *dir, const char *out)
{
    splade_index *ix;
    FILE *f = fopen(out, "w");
    if (!f || splade_index_open(dir, &ix) < 0)
        return 1;
    for (uint32_t d = 0; d < splade_index_get_info(ix)->n_docs; d++) {
        size_t len;
        const char *id = splade_index_doc_id(ix, d, &len);
        fprintf(f, "%.*s\n", (int)len, id);
    }
    splade_index_close(ix);
    return fclose(f) != 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--order"))
        return dump_order(argv[2], argv[3]);
    if (argc < 5) {
        fprintf(stderr, "usage: sq_latency INDEX_DIR QVECTORS.jsonl RUN.trec LAT.txt [bmp|wmaxscore|bmm|maxscore|taat] [K] [WARMUP]\n");
        return 2;
    }
    const char *algo_s = argc > 5 ? argv[5] : "bmp";
    int k = argc > 6 ? atoi(argv[6]) : 10, warm = argc > 7 ? atoi(argv[7]) : 1;
    static const char *names[] = {"bmm", "maxscore", "taat", "bmp", "wmaxscore", "wtaat", "auto"};
    int algo = -1;
    for (int a = 0; a < 7; a++)
        if (!strcmp(algo_s, names[a]))
            algo = a;
    /* approximate options from the environment (QUERY_CUT, BOUND_FACTOR, RESCORE, BUDGET: splade_search_opts) */
    splade_search_opts opts = {getenv("QUERY_CUT") ? atoi(getenv("QUERY_CUT")) : 0,
                               getenv("BOUND_FACTOR") ? (float)atof(getenv("BOUND_FACTOR")) : 0,
                               getenv("RESCORE") ? atoi(getenv("RESCORE")) : 0,
                               getenv("BUDGET") ? atoi(getenv("BUDGET")) : 0};
    splade_index *ix;
    splade_query_set qs;
    splade_searcher *s;
    if (algo < 0 || splade_index_open(argv[1], &ix) < 0 || splade_query_set_from_vectors(ix, argv[2], &qs) < 0 ||
        splade_searcher_create(ix, &s) < 0 || splade_searcher_set_opts(s, &opts) < 0) {
        fprintf(stderr, "sq_latency: %s\n", algo < 0 ? "unknown algo" : splade_error_detail());
        return 1;
    }
    splade_hit *hits = malloc((size_t)qs.n * k * sizeof *hits);
    int *nh = malloc(qs.n * sizeof *nh);
    double *lat = malloc(qs.n * sizeof *lat), *cpu = malloc(qs.n * sizeof *cpu), *sorted = malloc(qs.n * sizeof *sorted),
           sum = 0;
    for (int p = 0; p <= warm; p++) /* warm-up passes, then the timed one (the last) */
        for (int i = 0; i < qs.n; i++) {
            double t0 = now_us(CLOCK_MONOTONIC), c0 = now_us(CLOCK_THREAD_CPUTIME_ID);
            splade_search(s, &qs.q[i], k, (splade_algo)algo, hits + (size_t)i * k, &nh[i]);
            lat[i] = now_us(CLOCK_MONOTONIC) - t0;
            cpu[i] = now_us(CLOCK_THREAD_CPUTIME_ID) - c0;
        }
    FILE *run = fopen(argv[3], "w"), *lf = fopen(argv[4], "w");
    if (!run || !lf)
        return 1;
    for (int i = 0; i < qs.n; i++) {
        fprintf(lf, "%.3f %.3f\n", lat[i], cpu[i]); /* wall µs, thread CPU µs */
        sum += lat[i];
        for (int j = 0; j < nh[i]; j++) {
            size_t len;
            const splade_hit *h = &hits[(size_t)i * k + j];
            const char *id = splade_index_doc_id(ix, h->doc, &len);
            fprintf(run, "%s Q0 %.*s %d %.9g ours-%s\n", qs.ids[i], (int)len, id, j + 1,
                    splade_hit_score(ix, &qs.q[i], h->score), algo_s);
        }
    }
    fclose(run);
    fclose(lf);
    memcpy(sorted, lat, qs.n * sizeof *lat);
    qsort(sorted, qs.n, sizeof *sorted, cmp_d);
    const splade_search_stats *st = splade_searcher_stats(s);
    double cs = 0;
    for (int i = 0; i < qs.n; i++)
        cs += cpu[i];
    printf("%s: %d queries, mean %.1f us, median %.1f us, p99 %.1f us, mean cpu %.1f us, postings/query %.0f, blocks/query %.0f\n",
           algo_s, qs.n, sum / qs.n, sorted[qs.n / 2], sorted[(size_t)(qs.n * 0.99)], cs / qs.n,
           (double)st->postings_scored / (qs.n * (warm + 1)), (double)st->blocks_decoded / (qs.n * (warm + 1)));
    if (opts.rescore)
        printf("rescored/query %.1f, forward index %.1f MB built in %.3f s (first search)\n",
               (double)st->rescored / (qs.n * (warm + 1)), st->forward_bytes / 1e6, st->forward_build_s);
    if (opts.budget)
        printf("impact-ordered copies %.1f MB built in %.3f s (first search)\n", st->impact_bytes / 1e6,
               st->impact_build_s);
    splade_searcher_free(s);
    splade_query_set_free(&qs);
    splade_index_close(ix);
    return 0;
}
