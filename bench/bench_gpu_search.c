/* GPU batch search against the CPU's batch search on the same host, same run (issue #14, item 4):
 * queries/s of splade_gpu_search_batch for each batch size, and of splade_search_batch (auto, exact)
 * on --threads cores (default: all online) as the peer, interleaved A B A B over --repeat rounds
 * (the best round of each is reported, with the median beside it); then every GPU hit is compared
 * with the CPU's (ids and scores, in order).
 *
 *   build/bench/bench_gpu_search --dir INDEX (--vector-queries Q.jsonl | --queries Q.jsonl [--model DIR])
 *                                [--k 10] [--batches 100,1000] [--total N] [--threads T] [--repeat R]
 *                                [--kernels atomic,window: each of src/gpu/search.cu's ways to add
 *                                 (SPLADE_GPU_SEARCH_KERNEL), a row each; default: the library's default]
 *
 * --total: queries per timed round (default: the largest batch, at least the query file's count); the
 * file's queries are cycled to fill it. --queries: text queries encoded with the index's model on the
 * CPU first (not timed). Needs a CUDA build and a GPU; without one it says so and exits 2.
 *
 * --replicate-from SRC --copies N: first builds --dir from N copies of index SRC's live documents
 * (e.g. SciFact's splade-tiny vectors x 193 = 1 M documents with real SPLADE statistics): copy 0 as
 * it is, every other copy with each term dropped with probability 0.2 and each weight scaled by a
 * random factor in [0.7, 1.3], so that copies are near-duplicates rather than exact ties. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/settings.h"
#include "splade.h"
#include "splade/encoder.h"
#include "splade/index.h"
#include "splade/model.h"
#include "splade/pipeline.h"
#include "splade/query.h"
#include "splade/query_input.h"
#include "splade/segments.h"

#define MAX_BATCHES 8
#define MAX_KERNELS 4

typedef struct {
    const char *dir, *vqueries, *queries, *model, *replicate;
    int k, total, threads, repeat, n_batches, copies;
    int batches[MAX_BATCHES];
    int n_kernels;
    char kernels[MAX_KERNELS][16];
} params;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double load_avg(void)
{
    double l[1] = {0};
    return getloadavg(l, 1) == 1 ? l[0] : -1;
}

static int parse(int argc, char **argv, params *p)
{
    *p = (params){.k = 10, .repeat = 3, .n_batches = 2, .batches = {100, 1000}};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--dir"))
            p->dir = v;
        else if (!strcmp(a, "--vector-queries"))
            p->vqueries = v;
        else if (!strcmp(a, "--queries"))
            p->queries = v;
        else if (!strcmp(a, "--replicate-from"))
            p->replicate = v;
        else if (!strcmp(a, "--kernels")) {
            p->n_kernels = 0;
            for (const char *c = v; *c && p->n_kernels < MAX_KERNELS;) {
                size_t n = strcspn(c, ",");
                snprintf(p->kernels[p->n_kernels++], sizeof p->kernels[0], "%.*s", (int)n, c);
                c += n + (c[n] == ',');
            }
        } else if (!strcmp(a, "--copies"))
            p->copies = atoi(v);
        else if (!strcmp(a, "--model"))
            p->model = v;
        else if (!strcmp(a, "--k"))
            p->k = atoi(v);
        else if (!strcmp(a, "--total"))
            p->total = atoi(v);
        else if (!strcmp(a, "--threads"))
            p->threads = atoi(v);
        else if (!strcmp(a, "--repeat"))
            p->repeat = atoi(v);
        else if (!strcmp(a, "--batches")) {
            p->n_batches = 0;
            for (char *s = (char *)v; *s && p->n_batches < MAX_BATCHES;) {
                char *end;
                long b = strtol(s, &end, 10);
                if (end == s || b <= 0)
                    return -1;
                p->batches[p->n_batches++] = (int)b;
                s = *end == ',' ? end + 1 : end;
            }
        } else
            return -1;
    }
    return p->dir && (!!p->vqueries + !!p->queries) == 1 && p->k > 0 && p->repeat > 0 && p->n_batches > 0 &&
                   (!p->replicate || p->copies > 0)
               ? 0
               : -1;
}

typedef struct {
    splade_index_builder *b;
    int32_t *map; /* source term -> builder term */
    uint32_t copy, line;
    uint64_t rng;
    int32_t *terms;
    float *weights;
} replica;

static double rnd01(uint64_t *r)
{
    *r ^= *r << 13;
    *r ^= *r >> 7;
    *r ^= *r << 17;
    return (double)(*r >> 11) * (1.0 / 9007199254740992.0);
}

static int replicate_doc(void *user, uint32_t doc, const int32_t *terms, const float *weights, int32_t n)
{
    replica *c = user;
    char id[48];
    snprintf(id, sizeof id, "c%u-%u", c->copy, doc);
    uint32_t d;
    int rc = splade_builder_add_doc(c->b, "replica", id, "", "", (long)++c->line, &d);
    int32_t m = 0;
    for (int32_t i = 0; i < n && rc == 0; i++) {
        if (c->copy && rnd01(&c->rng) < 0.2)
            continue;
        c->terms[m] = c->map[terms[i]];
        c->weights[m++] = weights[i] * (c->copy ? (float)(0.7 + 0.6 * rnd01(&c->rng)) : 1.0f);
    }
    return rc ? rc : splade_builder_set_vector(c->b, d, c->terms, c->weights, m);
}

/* --dir from --copies copies of --replicate-from's live documents (see the header). */
static int replicate(const params *p)
{
    splade_index *src;
    int rc = splade_index_open(p->replicate, &src);
    if (rc < 0)
        return rc;
    const uint32_t nt = splade_index_get_info(src)->n_terms;
    replica c = {.rng = 0x9E3779B97F4A7C15ull};
    c.map = malloc(((size_t)nt + 1) * sizeof *c.map);
    c.terms = malloc(((size_t)nt + 1) * sizeof *c.terms);
    c.weights = malloc(((size_t)nt + 1) * sizeof *c.weights);
    rc = c.map && c.terms && c.weights ? splade_builder_create(NULL, 0, NULL, &c.b) : SPLADE_ERR_NOMEM;
    for (uint32_t t = 0; rc == 0 && t < nt; t++) {
        size_t len;
        const char *tok = splade_index_term(src, (int32_t)t, &len);
        rc = splade_builder_term(c.b, tok, len, &c.map[t]);
    }
    double t0 = now_s();
    for (c.copy = 0; rc == 0 && c.copy < (uint32_t)p->copies; c.copy++)
        rc = splade_index_doc_vectors(src, replicate_doc, &c);
    if (rc == 0) {
        printf("replicated %s x %d: %u documents in %.1f s; building %s\n", p->replicate, p->copies,
               splade_builder_n_docs(c.b), now_s() - t0, p->dir);
        t0 = now_s();
        splade_builder_set_threads(c.b, 0);
        rc = splade_builder_write(c.b, p->dir, NULL);
        printf("built in %.1f s\n", now_s() - t0);
    }
    splade_builder_free(c.b);
    free(c.map);
    free(c.terms);
    free(c.weights);
    splade_index_close(src);
    return rc;
}

static int load_queries(splade_index *ix, const params *p, splade_query_set *qs)
{
    if (p->vqueries)
        return splade_query_set_from_vectors(ix, p->vqueries, qs);
    splade_query_encode_opts o;
    splade_query_encode_opts_init(&o);
    o.model = p->model;
    return splade_query_set_from_file(ix, p->queries, &o, qs);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Seconds of the whole set in batches of b on the GPU. */
static double time_gpu(splade_gpu_searcher *g, const splade_qvec *q, int total, int b, int k, splade_hit *hits,
                       int *nh)
{
    double t0 = now_s();
    for (int i = 0; i < total; i += b) {
        int m = total - i < b ? total - i : b;
        if (splade_gpu_search_batch(g, q + i, m, k, hits + (size_t)i * k, nh + i) != 0) {
            fprintf(stderr, "bench_gpu_search: GPU: %s\n", splade_error_detail());
            exit(1);
        }
    }
    return now_s() - t0;
}

static double time_cpu(const splade_index *ix, const splade_qvec *q, int total, int k, int threads,
                       splade_hit *hits, int *nh)
{
    double t0 = now_s();
    if (splade_search_batch(ix, q, total, k, SPLADE_ALGO_AUTO, threads, hits, nh) != 0) {
        fprintf(stderr, "bench_gpu_search: CPU: %s\n", splade_error_detail());
        exit(1);
    }
    return now_s() - t0;
}

/* Queries whose GPU hits differ from the CPU's (ids, scores, order, count). */
static int mismatches(const splade_hit *a, const int *na, const splade_hit *b, const int *nb, int total, int k)
{
    int bad = 0;
    for (int i = 0; i < total; i++)
        bad += na[i] != nb[i] || memcmp(a + (size_t)i * k, b + (size_t)i * k, (size_t)na[i] * sizeof *a) != 0;
    return bad;
}

static void row(const char *what, int batch, int total, double *t, int r)
{
    qsort(t, (size_t)r, sizeof *t, cmp_double);
    printf("| %s | %d | %d | %.4f | %.4f | %.0f | %.0f |\n", what, batch, total, t[0], t[r / 2], total / t[0],
           total / t[r / 2]);
}

int main(int argc, char **argv)
{
    params p;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (parse(argc, argv, &p) < 0) {
        fprintf(stderr, "usage: bench_gpu_search --dir INDEX (--vector-queries Q.jsonl | --queries Q.jsonl [--model DIR])\n"
                        "       [--k 10] [--batches 100,1000] [--total N] [--threads T] [--repeat R]\n"
                        "       [--replicate-from SRC_INDEX --copies N] [--kernels atomic,window]\n");
        return 2;
    }
    char gpu[256];
    if (!splade_gpu_probe(gpu, sizeof gpu)) {
        fprintf(stderr, "bench_gpu_search: no usable GPU: %s\n", gpu);
        return 2;
    }
    if (p.replicate && replicate(&p) != 0) {
        fprintf(stderr, "bench_gpu_search: --replicate-from %s: %s\n", p.replicate, splade_error_detail());
        return 1;
    }
    splade_index *ix;
    splade_query_set qs;
    if (splade_index_open(p.dir, &ix) != 0 || load_queries(ix, &p, &qs) != 0) {
        fprintf(stderr, "bench_gpu_search: %s\n", splade_error_detail());
        return 1;
    }
    int total = p.total;
    for (int i = 0; i < p.n_batches; i++)
        total = total < p.batches[i] ? p.batches[i] : total;
    total = total < qs.n ? qs.n : total;
    splade_qvec *q = malloc((size_t)total * sizeof *q); /* the file's queries cycled (shallow copies) */
    uint64_t terms = 0;
    for (int i = 0; i < total; i++) {
        q[i] = qs.q[i % qs.n];
        terms += (uint64_t)q[i].n;
    }
    int threads = p.threads > 0 ? p.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    const splade_index_info *info = splade_index_get_info(ix);
    printf("GPU: %s; index %s: %u documents (%d segments), %llu postings; %d queries (%d distinct), %.1f terms "
           "on average; k = %d; CPU peer: splade_search_batch (auto, exact) on %d threads\n",
           gpu, p.dir, info->n_docs, splade_index_segment_count(ix), (unsigned long long)info->n_postings, total,
           qs.n, (double)terms / total, p.k, threads);
    double t0 = now_s();
    splade_gpu_searcher *g;
    if (splade_gpu_searcher_create(ix, -1, &g) != 0) {
        fprintf(stderr, "bench_gpu_search: %s\n", splade_error_detail());
        return 1;
    }
    printf("GPU searcher created (postings flattened and uploaded) in %.2f s\n", now_s() - t0);
    size_t n = (size_t)total * (size_t)p.k;
    splade_hit *gh = malloc(n * sizeof *gh), *ch = malloc(n * sizeof *ch);
    int *gn = malloc((size_t)total * sizeof *gn), *cn = malloc((size_t)total * sizeof *cn);
    time_gpu(g, q, p.batches[0] < total ? p.batches[0] : total, p.batches[0], p.k, gh, gn); /* warm-up */
    const int nk = p.n_kernels ? p.n_kernels : 1;
    double tg[MAX_KERNELS][MAX_BATCHES][16], tc[16];
    int r = p.repeat > 16 ? 16 : p.repeat;
    int bad = 0;
    for (int i = 0; i < r; i++) { /* A B A B: the CPU, then each GPU kernel and batch size (checked against it) */
        tc[i] = time_cpu(ix, q, total, p.k, threads, ch, cn);
        for (int ki = 0; ki < nk; ki++) {
            if (p.n_kernels) {
                setenv("SPLADE_GPU_SEARCH_KERNEL", p.kernels[ki], 1);
                splade_settings_reload(); /* read once otherwise (src/common/settings.c) */
            }
            for (int b = 0; b < p.n_batches; b++) {
                tg[ki][b][i] = time_gpu(g, q, total, p.batches[b], p.k, gh, gn);
                bad += mismatches(gh, gn, ch, cn, total, p.k);
            }
        }
    }
    /* the per-query floor: the same number of empty queries (zeroing, selection and sort, no postings) */
    splade_qvec *empty = calloc((size_t)total, sizeof *empty);
    double te[16];
    for (int i = 0; i < r; i++)
        te[i] = time_gpu(g, empty, total, p.batches[p.n_batches - 1], p.k, gh, gn);
    free(empty);
    printf("load average after the runs: %.2f\n", load_avg());
    printf("| search | batch | queries | best s | median s | best queries/s | median queries/s |\n"
           "| --- | --- | --- | --- | --- | --- | --- |\n");
    for (int ki = 0; ki < nk; ki++)
        for (int b = 0; b < p.n_batches; b++) {
            char what[48];
            snprintf(what, sizeof what, "GPU%s%s", p.n_kernels ? ", " : "", p.n_kernels ? p.kernels[ki] : "");
            row(what, p.batches[b], total, tg[ki][b], r);
        }
    row("CPU", total, total, tc, r);
    row("GPU, empty queries (the floor: zeroing + selection; last kernel)", p.batches[p.n_batches - 1], total, te, r);
    printf("GPU top-%d identical to the CPU's for all %d queries, every batch size and round: %s (%d differing "
           "query results)\n", p.k, total, bad ? "NO" : "yes", bad);
    splade_gpu_searcher_free(g);
    free(gh);
    free(ch);
    free(gn);
    free(cn);
    free(q);
    splade_query_set_free(&qs);
    splade_index_close(ix);
    return bad ? 1 : 0;
}
