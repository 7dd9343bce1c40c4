/* Index benchmark, one thread, retrieval only (no encoder): a synthetic collection with SPLADE-like
 * statistics, inverted and written through the real builder (timed, wall and CPU), then exact top-k
 * with every method over the same index. Every method's top-k is checked equal for every query.
 * Also prints the statistics that decide how much exact pruning can skip (df spread, frequent
 * query terms, how far the best scores stand out), to compare with a real index: with
 * --vector-queries Q.jsonl --dir INDEX it runs on an existing index instead (e.g. SciFact).
 *
 *   build/bench/bench_index [--docs 1000000] [--queries 1000] [--k 10] [--dir /tmp/bench.idx]
 *                           [--topics 1000] [--keep-order 0|1] [--oracle-order 0|1] [--threads N, default all cores]
 *                           [--repeat R: build the same collection R times, each timed, then the best]
 *                           [--memory-mb M: a bounded build (splade_builder_set_memory): segments past M MiB]
 *                           [--doc-scale X: quantize with X (to compare a bounded build with an in-memory one)]
 *                           [--methods 0,3,...: only these (splade_algo numbers; default all five)]
 *                           [--write-queries Q.jsonl: also write the queries, for --vector-queries runs on
 *                            this index or a peer built from the same collection (A B A B timings)]
 *                           [--merge 1: after the build, merge its segments into one (splade_index_merge), timed]
 *                           [--write-docs FILE|-: write the collection as vectors JSONL ({"id","vector":{"tN":w}},
 *                            the documents generate() builds) and stop: the CLI's `build --vectors` of the
 *                            same collection (issue #12's 10 M build through the CLI, from a pipe)]
 *
 * Collection (defaults): 30,522 terms; per document ~120 distinct terms (uniform 60..180), per
 * query ~25 (12..37). Background terms follow a Zipf law (exponent --zipf 1.0) over term ranks,
 * weight base(rank) × Exp(1) clipped to (0, 3], base rising from 0.25 (most frequent term) to 1
 * (rarest): SPLADE gives frequent terms small weights. Like real text, documents and queries are
 * also about something: with --topics T (default 1000) each document and query draws a topic, and
 * a third of a document's terms and half of a query's come from that topic's 60 terms (uniform
 * over ranks 100..30,521, weight 0.8 × Exp(1) + 0.4, clipped to 3). --topics 0 gives independent
 * random vectors, where no document stands out and no exact method can prune much: reported too,
 * as the worst case. --oracle-order 1 generates documents grouped by topic (a diagnostic: the order
 * a perfect clustering would find; use with --keep-order 1). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "index/format.h"
#include "index/segment.h"
#include "splade.h"
#include "splade/build.h"
#include "splade/index.h"
#include "splade/segments.h"
#include "splade/query.h"
#include "splade/vectors.h"

#define V 30522

typedef struct {
    uint32_t docs, queries, k, doc_terms, query_terms, topics, keep_order, oracle, threads, repeat, methods, merge;
    const char *vector_queries, *write_queries, *write_docs;
    double zipf, memory_mb, doc_scale;
    const char *dir;
} params;

static uint64_t rng = 88172645463325252ull;
static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return ((rng >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of this thread / this process: the VM is shared, so wall time alone overstates. */
static double cpu_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double load_avg(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

static double *zipf_cdf(double s)
{
    double *cdf = malloc(V * sizeof *cdf), sum = 0;
    for (int r = 0; r < V; r++)
        cdf[r] = sum += 1.0 / pow(r + 1, s);
    for (int r = 0; r < V; r++)
        cdf[r] /= sum;
    return cdf;
}

static int32_t draw(const double *cdf)
{
    double u = uniform();
    int lo = 0, hi = V - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo; /* term id = frequency rank */
}

static float weight(int32_t rank, double scale)
{
    double base = 0.25 + 0.75 * log(rank + 1.0) / log((double)V);
    double w = scale * base * -log(uniform());
    return (float)(w < 0.01 ? 0.01 : w > 3 ? 3 : w);
}

#define TOPIC_TERMS 60
static int32_t *topic_terms; /* [topics × TOPIC_TERMS] */

static void make_topics(uint32_t topics)
{
    topic_terms = malloc(((size_t)topics * TOPIC_TERMS + 1) * sizeof *topic_terms);
    for (size_t i = 0; i < (size_t)topics * TOPIC_TERMS; i++)
        topic_terms[i] = 100 + (int32_t)(uniform() * (V - 100));
}

/* n_topic terms of a random topic, then background terms (Zipf) up to n in total, all distinct;
 * stamp/epoch mark terms already taken. */
static int sample_vector(const double *cdf, int n, int n_topic, uint32_t topics, int64_t forced, double scale,
                         int32_t *terms, float *w, uint32_t *stamp, uint32_t epoch)
{
    int m = 0;
    size_t pick = forced >= 0 ? (size_t)forced : (size_t)(uniform() * topics);
    const int32_t *topic = topics ? topic_terms + pick * TOPIC_TERMS : NULL;
    for (int tries = 0; topic && m < n_topic && tries < 4 * n_topic; tries++) {
        int32_t t = topic[(int)(uniform() * TOPIC_TERMS)];
        if (stamp[t] == epoch)
            continue;
        stamp[t] = epoch;
        terms[m] = t;
        double x = 0.8 * -log(uniform()) + 0.4;
        w[m++] = (float)(x > 3 ? 3 : x);
    }
    for (int tries = 0; m < n && tries < 20 * n; tries++) {
        int32_t t = draw(cdf);
        if (stamp[t] == epoch)
            continue;
        stamp[t] = epoch;
        terms[m] = t;
        w[m++] = weight(t, scale);
    }
    return m;
}

/* Document d's terms and weights: the same draws for the builder (generate) and the JSONL (write_docs). */
static int sample_doc(const params *p, const double *cdf, uint32_t d, int32_t *terms, float *w, uint32_t *stamp)
{
    int n = (int)(p->doc_terms / 2 + uniform() * p->doc_terms); /* mean doc_terms */
    int64_t forced = p->oracle && p->topics ? (int64_t)((uint64_t)d * p->topics / p->docs) : -1;
    return sample_vector(cdf, n, p->topics ? n / 3 : 0, p->topics, forced, 1.0, terms, w, stamp, d + 1);
}

static splade_index_builder *generate(const params *p, const double *cdf, uint32_t *stamp)
{
    char **tok = malloc(V * sizeof *tok);
    for (int t = 0; t < V; t++) {
        tok[t] = malloc(12);
        snprintf(tok[t], 12, "t%d", t);
    }
    splade_index_builder *b;
    if (splade_builder_create((const char *const *)tok, V, NULL, &b) < 0)
        return NULL;
    /* a bounded build spills while the documents are added: its settings come first */
    splade_builder_keep_order(b, (int)p->keep_order);
    splade_builder_set_threads(b, (int)p->threads);
    if (p->doc_scale > 0 && splade_builder_set_doc_scale(b, (float)p->doc_scale) < 0)
        return NULL;
    if (p->memory_mb > 0 && splade_builder_set_memory(b, p->dir, (uint64_t)(p->memory_mb * 1048576.0), 0) < 0)
        return NULL;
    for (int t = 0; t < V; t++)
        free(tok[t]);
    free(tok);
    int32_t terms[1024];
    float w[1024];
    for (uint32_t d = 0; d < p->docs; d++) {
        char id[16];
        snprintf(id, sizeof id, "d%u", d);
        uint32_t doc;
        int n = sample_doc(p, cdf, d, terms, w, stamp);
        if (splade_builder_add_doc(b, "bench", id, "", "", d + 1, &doc) < 0 ||
            splade_builder_set_vector(b, doc, terms, w, n) < 0)
            return NULL;
    }
    return b;
}

/* The documents of generate(), same draws in the same order, as `build --vectors` input. */
static int write_docs(const params *p)
{
    FILE *f = strcmp(p->write_docs, "-") ? fopen(p->write_docs, "w") : stdout;
    if (!f)
        return -1;
    double *cdf = zipf_cdf(p->zipf);
    make_topics(p->topics);
    uint32_t *stamp = calloc(V, sizeof *stamp);
    int32_t terms[1024];
    float w[1024];
    for (uint32_t d = 0; d < p->docs; d++) {
        int n = sample_doc(p, cdf, d, terms, w, stamp);
        fprintf(f, "{\"id\":\"d%u\",\"vector\":{", d);
        for (int i = 0; i < n; i++)
            fprintf(f, "%s\"t%d\":%.6g", i ? "," : "", terms[i], w[i]);
        fputs("}}\n", f);
    }
    free(stamp);
    free(cdf);
    return f == stdout ? fflush(f) : fclose(f);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    double median_ms, mean_ms, p95_ms, p99_ms, cpu_median_ms, cpu_p99_ms;
    uint64_t scored;
} timing;

static timing run_queries(splade_searcher *s, const splade_qvec *qs, uint32_t nq, uint32_t k, splade_algo a,
                          splade_hit *out, int *n_out)
{
    double *t = malloc(nq * sizeof *t), *c = malloc(nq * sizeof *c), sum = 0;
    uint64_t before = splade_searcher_stats(s)->postings_scored;
    for (uint32_t i = 0; i < nq; i++) {
        double t0 = now_s(), c0 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
        splade_search(s, &qs[i], (int)k, a, out + (size_t)i * k, &n_out[i]);
        c[i] = (cpu_s(CLOCK_THREAD_CPUTIME_ID) - c0) * 1e3;
        t[i] = (now_s() - t0) * 1e3;
        sum += t[i];
    }
    qsort(t, nq, sizeof *t, cmp_double);
    qsort(c, nq, sizeof *c, cmp_double);
    timing r = {t[nq / 2], sum / nq, t[(size_t)(nq * 0.95)], t[(size_t)(nq * 0.99)], c[nq / 2], c[(size_t)(nq * 0.99)],
                (splade_searcher_stats(s)->postings_scored - before) / nq};
    free(t);
    free(c);
    return r;
}

static int parse(int argc, char **argv, params *p)
{
    *p = (params){.docs = 1000000, .queries = 1000, .k = 10, .doc_terms = 120, .query_terms = 25, .topics = 1000, .zipf = 1.0, .repeat = 1, .methods = 31,
                  .dir = "/tmp/splade_bench.idx"};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--docs"))
            p->docs = (uint32_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--queries"))
            p->queries = (uint32_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--k"))
            p->k = (uint32_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--topics"))
            p->topics = (uint32_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--zipf"))
            p->zipf = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--vector-queries"))
            p->vector_queries = argv[i + 1];
        else if (!strcmp(argv[i], "--methods")) {
            p->methods = 0;
            for (const char *c = argv[i + 1]; *c; c++)
                if (*c >= '0' && *c <= '4')
                    p->methods |= 1u << (*c - '0');
        } else if (!strcmp(argv[i], "--write-docs"))
            p->write_docs = argv[i + 1];
        else if (!strcmp(argv[i], "--write-queries"))
            p->write_queries = argv[i + 1];
        else if (!strcmp(argv[i], "--threads"))
            p->threads = (uint32_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--oracle-order"))
            p->oracle = (uint32_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeat"))
            p->repeat = (uint32_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--keep-order"))
            p->keep_order = (uint32_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--memory-mb"))
            p->memory_mb = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--doc-scale"))
            p->doc_scale = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--dir"))
            p->dir = argv[i + 1];
        else if (!strcmp(argv[i], "--merge"))
            p->merge = (uint32_t)atol(argv[i + 1]);
        else
            return -1;
    }
    return p->docs && p->queries && p->k && p->methods ? 0 : -1;
}

static double max_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;
}

/* --merge 1: every segment of the built index merged into one (the streaming merge), timed; the
 * queries then run on the merged index. */
static int merge_segments(const params *p)
{
    printf("load average before the merge: %.2f\n", load_avg());
    double t0 = now_s(), c0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
    splade_merge_stats ms;
    if (splade_index_merge(p->dir, 0, (int)p->threads, &ms) < 0)
        return -1;
    double wt = now_s() - t0, wc = cpu_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    printf("| merge | %d segments -> 1 | %.2f s (CPU %.2f s) | %.1f MB/s of input (%.1f MB) | %.1f MB out | "
           "%u docs, %u deleted dropped | peak RSS so far %.0f MB |\n",
           ms.n_merged, wt, wc, ms.bytes_in / 1e6 / wt, ms.bytes_in / 1e6, ms.bytes_out / 1e6, ms.n_docs,
           ms.n_dropped, max_rss_mb());
    return 0;
}

/* Generates the synthetic collection, builds it (timed) and its queries. Returns 0 on success. */
static int synthetic(const params *p, splade_index **ix, splade_qvec **qs_out)
{
    double *cdf = zipf_cdf(p->zipf);
    make_topics(p->topics);
    uint32_t *stamp = calloc(V, sizeof *stamp);
    double t0 = now_s();
    splade_index_builder *b = generate(p, cdf, stamp);
    if (!b)
        return -1;
    printf("generated %u docs in %.1f s (ingest: vectors into the builder%s); peak RSS so far %.0f MB\n", p->docs,
           now_s() - t0, p->memory_mb > 0 ? ", and the segments written on the way" : "", max_rss_mb());
    splade_build_stats st;
    if (p->threads)
        printf("build threads: %u\n", p->threads);
    else
        printf("build threads: all cores (%ld, the default)\n", sysconf(_SC_NPROCESSORS_ONLN));
    double best = 0;
    for (uint32_t r = 0; r < (p->repeat ? p->repeat : 1); r++) { /* the same collection built again: run-to-run spread */
        printf("load average before build %u: %.2f\n", r + 1, load_avg());
        t0 = now_s();
        double c0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
        if (splade_builder_write(b, p->dir, &st) < 0)
            return -1;
        double wt = now_s() - t0, wc = cpu_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        best = r == 0 || wt < best ? wt : best;
        printf("| inversion + write + fsync + verify | %.2f s | %.0f docs/s | (inversion %.2f s incl. reordering %.2f s, "
               "write %.2f s; CPU %.2f s) |\n",
               wt, p->docs / wt, st.invert_s, st.reorder_s, st.write_s, wc);
        printf("| phases | reorder %.2f s | invert (radix) %.2f s | encode %.2f s | write %.2f s | fsync + verify %.2f s |\n",
               st.reorder_s, st.scatter_s, st.encode_s, st.write_s - st.verify_s, st.verify_s);
    }
    printf("build peak RSS %.0f MB (budget: %s)\n", max_rss_mb(), p->memory_mb > 0 ? "--memory-mb" : "none");
    if (p->repeat > 1)
        printf("best of %u builds: %.2f s, %.0f docs/s\n", p->repeat, best, p->docs / best);
    splade_builder_free(b);
    printf("| postings | %llu | %.1f per doc | %.2f bytes per posting (whole file %.1f MB) |\n",
           (unsigned long long)st.n_postings, (double)st.n_postings / p->docs, (double)st.file_bytes / st.n_postings,
           st.file_bytes / 1e6);
    if ((p->merge && merge_segments(p) < 0) || splade_index_open(p->dir, ix) < 0)
        return -1;
    splade_qvec *qs = calloc(p->queries, sizeof *qs);
    int32_t terms[256];
    float w[256];
    FILE *out = p->write_queries ? fopen(p->write_queries, "w") : NULL;
    if (p->write_queries && !out)
        return -1;
    for (uint32_t i = 0; i < p->queries; i++) {
        int want = (int)(p->query_terms / 2 + uniform() * p->query_terms);
        int n = sample_vector(cdf, want, p->topics ? want / 2 : 0, p->topics, -1, 1.5, terms, w, stamp, p->docs + 1 + i);
        splade_qvec_build(terms, w, n, V, &qs[i]);
        if (!out)
            continue;
        fprintf(out, "{\"id\": \"q%u\", \"vector\": {", i);
        for (int j = 0; j < n; j++) /* %.9g: the same float read back, so the same qvec */
            fprintf(out, "%s\"t%d\": %.9g", j ? ", " : "", terms[j], w[j]);
        fprintf(out, "}}\n");
    }
    if (out && fclose(out))
        return -1;
    free(cdf);
    free(stamp);
    *qs_out = qs;
    return 0;
}

/* An existing index (e.g. SciFact built with `build --vectors`) and query vectors (JSONL of
 * include/splade/vectors.h; tokens looked up in the index, unknown ones dropped). */
static int existing(params *p, splade_index **ix, splade_qvec **qs_out)
{
    splade_vectors_reader *r;
    if (splade_index_open(p->dir, ix) < 0 || splade_vectors_open(p->vector_queries, &r) < 0)
        return -1;
    uint32_t cap = 1024, n = 0;
    splade_qvec *qs = malloc(cap * sizeof *qs);
    splade_vector_record rec;
    while (splade_vectors_next(r, &rec) == 1 && n < p->queries) {
        int32_t *terms = malloc(((size_t)rec.n + 1) * sizeof *terms);
        for (int i = 0; i < rec.n; i++)
            terms[i] = splade_index_term_lookup(*ix, rec.tokens[i], strlen(rec.tokens[i]));
        if (n == cap)
            qs = realloc(qs, (cap *= 2) * sizeof *qs);
        splade_qvec_build(terms, rec.weights, rec.n, splade_index_get_info(*ix)->n_terms, &qs[n++]);
        free(terms);
    }
    splade_vectors_close(r);
    p->queries = n;
    p->docs = splade_index_get_info(*ix)->n_docs;
    printf("index %s: %u docs, %llu postings, %.2f bytes per posting; %u queries from %s\n", p->dir, p->docs,
           (unsigned long long)splade_index_get_info(*ix)->n_postings,
           (double)splade_index_get_info(*ix)->file_bytes / splade_index_get_info(*ix)->n_postings, n, p->vector_queries);
    *qs_out = qs;
    return n ? 0 : -1;
}

static int cmp_u32_desc(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x < y) - (x > y);
}

/* The statistics that decide how much an exact method can prune, for comparing the synthetic
 * collection with a real one: how postings spread over terms, how many of a query's terms are
 * frequent, and how far the best documents stand out (top-1 vs top-10 vs top-100 scores). */
static void collection_stats(const splade_index *ix, const splade_qvec *qs, uint32_t nq)
{
    const splade_index *file = splade_index_segment(ix, 0)->ix; /* a merged folder: its one segment's postings */
    const splade_index_info *in = splade_index_get_info(file);
    uint32_t *df = malloc(((size_t)in->n_terms + 1) * sizeof *df), used = 0;
    for (uint32_t t = 0; t < in->n_terms; t++) {
        splade_term_postings tp;
        splade_index_postings(file, (int32_t)t, &tp);
        if (tp.n_postings)
            df[used++] = tp.n_postings;
    }
    qsort(df, used, sizeof *df, cmp_u32_desc);
    uint64_t top1 = 0, top10 = 0;
    for (uint32_t i = 0; i < used; i++) {
        top1 += i < used / 100 ? df[i] : 0;
        top10 += i < used / 10 ? df[i] : 0;
    }
    printf("| postings per doc | terms used | postings in top 1%% / 10%% of terms | largest df / n_docs | median df / n_docs |\n"
           "| %.1f | %u | %.1f%% / %.1f%% | %.3f | %.5f |\n",
           (double)in->n_postings / in->n_docs, used, 100.0 * top1 / in->n_postings, 100.0 * top10 / in->n_postings,
           (double)df[0] / in->n_docs, (double)df[used / 2] / in->n_docs);
    double qt = 0, head = 0, rare = 0, r10 = 0, r100 = 0;
    uint32_t scored = 0;
    splade_searcher *s;
    splade_searcher_create(ix, &s);
    splade_hit h[100];
    for (uint32_t i = 0; i < nq; i++) {
        qt += qs[i].n;
        for (int32_t j = 0; j < qs[i].n; j++) {
            splade_term_postings tp;
            splade_index_postings(file, qs[i].terms[j], &tp);
            head += tp.n_postings >= in->n_docs / 10;
            rare += tp.n_postings < in->n_docs / 1000 + 1;
        }
        int n = 0;
        splade_search(s, &qs[i], 100, SPLADE_ALGO_BMP, h, &n);
        if (n == 100) {
            r10 += (double)h[9].score / h[0].score;
            r100 += (double)h[99].score / h[0].score;
            scored++;
        }
    }
    printf("| terms per query | query terms with df >= 10%% / < 0.1%% of docs | score top-10 / top-1 | top-100 / top-1 |\n"
           "| %.1f | %.1f%% / %.1f%% | %.3f | %.3f |\n",
           qt / nq, 100 * head / qt, 100 * rare / qt, r10 / (scored ? scored : 1), r100 / (scored ? scored : 1));
    splade_searcher_free(s);
    free(df);
}

/* Times every method over the queries and checks they return the same top-k. */
static int time_methods(const splade_index *ix, const params *p, const splade_qvec *qs)
{
    splade_searcher *s;
    splade_searcher_create(ix, &s);
    static const char *names[] = {"block-max MaxScore", "MaxScore", "exhaustive TAAT", "BMP (doc-range block-max)",
                                  "windowed MaxScore"};
    enum { NA = 5 };
    splade_hit *hits[NA];
    int *nh[NA];
    timing tm[NA];
    int ref = p->methods >> 2 & 1 ? 2 : __builtin_ctz(p->methods); /* TAAT, else the first method run */
#define RUN(a) (p->methods >> (a) & 1)
    for (int a = 0; a < NA; a++) {
        hits[a] = malloc((size_t)p->queries * p->k * sizeof *hits[a]);
        nh[a] = malloc(p->queries * sizeof *nh[a]);
        if (RUN(a))
            tm[a] = run_queries(s, qs, p->queries, p->k, (splade_algo)a, hits[a], nh[a]);
    }
    int same = 1;
    for (int a = 0; a < NA; a++)
        for (uint32_t i = 0; i < p->queries && RUN(a); i++)
            if (nh[a][i] != nh[ref][i] || memcmp(hits[a] + (size_t)i * p->k, hits[ref] + (size_t)i * p->k,
                                                 (size_t)nh[ref][i] * sizeof *hits[a])) {
                fprintf(stderr, "%s differs from %s on query %u\n", names[a], names[ref], i);
                same = 0;
            }
    printf("k = %u; load average after the queries: %.2f\n"
           "| method | median ms | p95 ms | p99 ms | mean ms | CPU median ms | postings scored per query | speed-up "
           "vs %s (median wall / CPU) | CPU p99 ms |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
           p->k, load_avg(), ref == 2 ? "TAAT" : names[ref]);
    for (int a = 0; a < NA; a++)
        if (RUN(a))
            printf("| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %llu | %.1fx / %.1fx | %.3f |\n", names[a], tm[a].median_ms,
                   tm[a].p95_ms, tm[a].p99_ms, tm[a].mean_ms, tm[a].cpu_median_ms, (unsigned long long)tm[a].scored,
                   tm[ref].median_ms / tm[a].median_ms, tm[ref].cpu_median_ms / tm[a].cpu_median_ms, tm[a].cpu_p99_ms);
    uint64_t h = 1469598103934665603ull; /* FNV-1a of the reference's hits: compares two runs (bounded vs in-memory) */
    for (uint32_t i = 0; i < p->queries; i++)
        for (int j = 0; j < nh[ref][i]; j++) {
            const splade_hit *x = &hits[ref][(size_t)i * p->k + (size_t)j];
            size_t len;
            const char *id = splade_index_doc_id(ix, x->doc, &len); /* internal ids differ between the two */
            for (size_t c = 0; c < len; c++)
                h = (h ^ (unsigned char)id[c]) * 1099511628211ull;
            h = (h ^ x->score) * 1099511628211ull;
        }
    printf("top-%u identical across methods for all queries: %s; hits digest %016llx; peak RSS %.0f MB\n", p->k,
           same ? "yes" : "NO", (unsigned long long)h, max_rss_mb());
    for (int a = 0; a < NA; a++) {
        free(hits[a]);
        free(nh[a]);
    }
    splade_searcher_free(s);
    return same;
}

int main(int argc, char **argv)
{
    params p;
    setvbuf(stdout, NULL, _IOLBF, 0); /* partial results survive a time limit */
    if (parse(argc, argv, &p) < 0) {
        fprintf(stderr, "usage: bench_index [--docs N] [--queries N] [--k N] [--topics T] [--zipf S] [--keep-order 0|1] "
                        "[--oracle-order 0|1] [--threads N] [--repeat R] [--dir DIR]\n"
                        "       bench_index --vector-queries Q.jsonl --dir EXISTING_INDEX [--queries N] [--k N]\n");
        return 2;
    }
    if (p.write_docs)
        return write_docs(&p) < 0 ? 1 : 0;
    splade_index *ix = NULL;
    splade_qvec *qs = NULL;
    if ((p.vector_queries ? existing(&p, &ix, &qs) : synthetic(&p, &ix, &qs)) < 0) {
        fprintf(stderr, "bench_index: %s\n", splade_error_detail());
        return 1;
    }
    uint64_t qterms = 0;
    for (uint32_t i = 0; i < p.queries; i++)
        qterms += (uint64_t)qs[i].n;
    printf("queries: %u, %.1f terms on average\n", p.queries, (double)qterms / p.queries);
    if (splade_index_segment_count(ix) == 1) /* reads one file's postings: not for a segmented index */
        collection_stats(ix, qs, p.queries);
    else
        printf("segments: %d (collection statistics skipped)\n", splade_index_segment_count(ix));
    int same = time_methods(ix, &p, qs);
    for (uint32_t i = 0; i < p.queries; i++)
        splade_qvec_free(&qs[i]);
    free(qs);
    splade_index_close(ix);
    return same ? 0 : 1;
}
