/* splade-index query: one text query (printed), or a batch (--queries / --vector-queries) written
 * as a TREC run. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli_env.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/fail.h"
#include "splade.h"
#include "splade/encoder.h"
#include "splade/index.h"
#include "splade/query.h"
#include "splade/pipeline.h"
#include "splade/query_input.h"

static const char usage_text[] =
    "usage: splade-index query \"TEXT\" [-i DIR] [-k 10] [--json] [--device auto|cpu|cuda] [--model DIR|NAME]\n"
    "                          [--precision bf16|fp32|int8]\n"
    "       splade-index query --queries QUERIES.jsonl --output RUN.trec [-i DIR] [-k 1000] [--threads N]\n"
    "       splade-index query --vector-queries QVECTORS.jsonl --output RUN.trec [-i DIR] [-k 1000]\n"
    "\n"
    "Searches the index in DIR (default: $SPLADE_INDEX, else ./" SPLADE_INDEX_DEFAULT_DIR "). Text is encoded\n"
    "with the model the index was built with (an index of another model is refused). Batch output is\n"
    "TREC: qid Q0 docid rank score tag. --algo auto|wtaat|bmp|wmaxscore|bmm|maxscore|taat picks the top-k\n"
    "method (all exact and equal; default auto, which picks per query: bench/results/query-2026-11-25.md).\n"
    "Approximate (auto and wtaat): --query-cut N searches only the query's N heaviest terms;\n"
    "--bound-factor F (0 < F < 1) skips doc-id ranges whose bound x F cannot beat the k-th score\n"
    "(auto may answer more exactly: BMP and small segments skip nothing).\n"
    "--rescore N (auto, with --query-cut): the N (at least k) best documents over the cut terms are\n"
    "scored again exactly over all terms from a forward index built in memory on the first search\n"
    "(3 bytes per posting, ~0.3 s per 100 k documents: worth it for batches; the index file is\n"
    "unchanged): recall@10 0.957 with --query-cut 12 --rescore 100 on the realistic 100 k\n"
    "(bench/results/query-approx-2026-11-26.md).\n"
    "--budget N (with --rescore): the candidates come from at most N postings of the cut terms' long\n"
    "lists, those of largest query impact x impact first (lists under 1,024 postings read whole), from\n"
    "impact-ordered copies built in memory on the first search (5 bytes per copied posting); the cut\n"
    "then always leaves out terms in over 20% of the documents (bench/results/query-approx-scale-2026-11-26.md).\n"
    "--recall-target R (0 < R <= 1, with --queries / --vector-queries, instead of the options above):\n"
    "the cheapest of a ladder of those settings whose recall@k on up to 200 of the batch's queries,\n"
    "measured against the exact answers, reaches R (exact when none does); said on stderr.\n"
    "--precision: the GPU's number format when --device puts the encoder there, bf16 (default) or\n"
    "fp32 (the CPU's vectors); int8: the CPU in int8 (opt-in, VNNI / AMX-INT8).\n"
    "--device cuda (or auto) with --queries / --vector-queries also searches the batch on the GPU: exact,\n"
    "the same run as the CPU's; without a usable GPU a one-line notice, then the CPU.\n";

typedef struct {
    const char *text, *index, *queries, *vqueries, *output, *tag;
    splade_query_encode_opts enc;
    int k, json, threads;
    splade_algo algo;
    splade_search_opts approx;
    float recall_target; /* > 0: approx chosen by splade_search_calibrate on a sample of the batch */
} query_opts;

/* 0, or the usage exit status after saying which names exist. */
static int parse_algo(const char *s, splade_algo *a)
{
    static const char *names[] = {"bmm", "maxscore", "taat", "bmp", "wmaxscore", "wtaat", "auto"}; /* splade_algo order */
    for (int i = 0; i < 7; i++)
        if (!strcmp(s, names[i])) {
            *a = (splade_algo)i;
            return 0;
        }
    fprintf(stderr, "splade-index query: unknown --algo \"%s\" (choose auto|wtaat|bmp|wmaxscore|bmm|maxscore|taat)\n", s);
    return 2;
}

static int parse(int argc, char **argv, query_opts *o)
{
    static const struct option longs[] = {
        {"index", required_argument, 0, 'i'}, {"json", no_argument, 0, 'j'}, {"device", required_argument, 0, 'd'},
        {"model", required_argument, 0, 'm'}, {"queries", required_argument, 0, 'Q'},
        {"vector-queries", required_argument, 0, 'V'}, {"output", required_argument, 0, 'o'},
        {"threads", required_argument, 0, 't'}, {"algo", required_argument, 0, 'a'}, {"tag", required_argument, 0, 'T'},
        {"precision", required_argument, 0, 'P'}, {"query-cut", required_argument, 0, 'C'},
        {"bound-factor", required_argument, 0, 'F'}, {"rescore", required_argument, 0, 'R'},
        {"budget", required_argument, 0, 'B'}, {"recall-target", required_argument, 0, 'G'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    o->k = -1;
    o->algo = SPLADE_ALGO_AUTO;
    o->tag = "splade-index";
    optind = 1;
    for (int c, bad = 0; (c = getopt_long(argc, argv, "i:k:o:h", longs, NULL)) != -1;) {
        switch (c) {
        case 'i': o->index = optarg; break;
        case 'k': bad = splade_cli_int("query", "-k", optarg, 1, INT_MAX, &o->k); break;
        case 'j': o->json = 1; break;
        case 'd': o->enc.device = optarg; break;
        case 'm': o->enc.model = optarg; break;
        case 'Q': o->queries = optarg; break;
        case 'V': o->vqueries = optarg; break;
        case 'o': o->output = optarg; break;
        case 't': bad = splade_cli_int("query", "--threads", optarg, 1, SPLADE_CLI_MAX_THREADS, &o->threads); break;
        case 'T': o->tag = optarg; break;
        case 'P': o->enc.precision = optarg; break;
        case 'a': bad = parse_algo(optarg, &o->algo); break;
        case 'C': bad = splade_cli_int("query", "--query-cut", optarg, 1, INT_MAX, &o->approx.query_cut); break;
        case 'F': bad = splade_cli_float("query", "--bound-factor", optarg, 0.01f, 1, &o->approx.bound_factor); break;
        case 'R': bad = splade_cli_int("query", "--rescore", optarg, 1, SPLADE_RESCORE_MAX, &o->approx.rescore); break;
        case 'B': bad = splade_cli_int("query", "--budget", optarg, 1, INT_MAX, &o->approx.budget); break;
        case 'G': bad = splade_cli_float("query", "--recall-target", optarg, 0.001, 1, &o->recall_target); break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return 2;
        }
        if (bad)
            return bad;
    }
    if (optind < argc)
        o->text = argv[optind++];
    int inputs = !!o->text + !!o->queries + !!o->vqueries;
    if (optind < argc || inputs != 1 || (o->text && o->output)) {
        fprintf(stderr, "splade-index query: give one of \"TEXT\", --queries or --vector-queries\n%s", usage_text);
        return 2;
    }
    splade_device d;
    if (o->enc.device && splade_parse_device(o->enc.device, &d)) {
        fprintf(stderr, "splade-index query: %s\n", splade_error_detail());
        return 2;
    }
    splade_precision p;
    if (splade_parse_precision(o->enc.precision, &p)) {
        fprintf(stderr, "splade-index query: %s\n", splade_error_detail());
        return 2;
    }
    if (o->approx.rescore && !o->approx.query_cut) {
        fprintf(stderr, "splade-index query: --rescore needs --query-cut (the terms that pick the candidates)\n");
        return 2;
    }
    if (o->approx.budget && !o->approx.rescore) {
        fprintf(stderr, "splade-index query: --budget needs --rescore (the budget picks the candidates it rescores)\n");
        return 2;
    }
    if (o->approx.budget && o->approx.bound_factor > 0 && o->approx.bound_factor < 1) {
        fprintf(stderr, "splade-index query: --budget and --bound-factor both prune the candidate pass: give one\n");
        return 2;
    }
    if (o->recall_target > 0 && (o->approx.query_cut || o->approx.bound_factor || o->approx.rescore)) {
        fprintf(stderr, "splade-index query: --recall-target picks --query-cut / --rescore / --budget itself: give "
                        "one or the other\n");
        return 2;
    }
    if (o->recall_target > 0 && o->text) {
        fprintf(stderr, "splade-index query: --recall-target measures recall on a batch: use it with --queries or "
                        "--vector-queries\n");
        return 2;
    }
    if (o->k < 0)
        o->k = o->text ? 10 : 1000;
    return -1;
}

static void print_hits(const splade_index *ix, const splade_qvec *q, const splade_hit *h, int n)
{
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *id = splade_index_doc_id(ix, h[i].doc, &len), *title, *snippet;
        splade_index_doc_text(ix, h[i].doc, &title, &snippet);
        const char *show = *title ? title : snippet;
        printf("%2d  %8.4f  %.*s  %.*s%s\n", i + 1, splade_hit_score(ix, q, h[i].score), (int)len, id, 100, show,
               strlen(show) > 100 ? "..." : "");
    }
    if (n == 0) /* an empty result must not look like a silent failure */
        fprintf(stderr, "splade-index query: no document matched (the index holds %u documents)\n",
                (unsigned)splade_index_get_info(ix)->n_docs);
}

static void print_json(const splade_index *ix, const char *text, const splade_qvec *q, const splade_hit *h, int n)
{
    json_t *hits = json_array();
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *id = splade_index_doc_id(ix, h[i].doc, &len), *title, *snippet;
        splade_index_doc_text(ix, h[i].doc, &title, &snippet);
        json_array_append_new(hits, json_pack("{s:i, s:s#, s:f, s:s, s:s}", "rank", i + 1, "id", id, (int)len,
                                              "score", splade_hit_score(ix, q, h[i].score), "title", title,
                                              "snippet", snippet));
    }
    json_t *root = json_pack("{s:s, s:o}", "query", text, "hits", hits);
    char *s = json_dumps(root, JSON_INDENT(1));
    if (s)
        puts(s);
    free(s);
    json_decref(root);
}

static int write_run(const splade_index *ix, const splade_query_set *qs, const splade_hit *hits, const int *n_hits,
                     int k, const char *path, const char *tag)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
    if (!f)
        return splade_fail(SPLADE_ERR_IO, "%s: cannot create", path);
    for (int q = 0; q < qs->n; q++)
        for (int i = 0; i < n_hits[q]; i++) {
            const splade_hit *h = &hits[(size_t)q * (size_t)k + (size_t)i];
            size_t len;
            const char *id = splade_index_doc_id(ix, h->doc, &len);
            fprintf(f, "%s Q0 %.*s %d %.9g %s\n", qs->ids[q], (int)len, id, i + 1,
                    splade_hit_score(ix, &qs->q[q], h->score), tag);
        }
    if (f == stdout) /* checked with every other write to it, in main() */
        return splade_cli_check_stdout();
    errno = 0;
    int bad = ferror(f) | (fflush(f) != 0);
    int err = errno;
    struct stat st;
    int regular = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode);
    bad |= fclose(f) != 0;
    if (!bad)
        return SPLADE_OK;
    if (regular) /* a truncated run would be scored as if complete (never unlink a device like /dev/full) */
        unlink(path);
    return splade_fail(SPLADE_ERR_IO, "%s: write failed: %s", path, strerror(err ? err : errno));
}

static int run_single(splade_index *ix, const query_opts *o)
{
    splade_query_set qs;
    int rc = splade_query_set_from_texts(ix, &o->text, 1, &o->enc, &qs);
    if (rc < 0)
        return rc;
    splade_hit *h = malloc(((size_t)o->k + 1) * sizeof *h);
    splade_searcher *s = NULL;
    int n = 0;
    rc = h ? splade_searcher_create(ix, &s) : splade_fail(SPLADE_ERR_NOMEM, "hits");
    if (rc == 0)
        rc = splade_searcher_set_opts(s, &o->approx);
    if (rc == 0)
        rc = splade_search(s, &qs.q[0], o->k, o->algo, h, &n);
    if (rc == 0)
        o->json ? print_json(ix, o->text, &qs.q[0], h, n) : print_hits(ix, &qs.q[0], h, n);
    splade_searcher_free(s);
    free(h);
    splade_query_set_free(&qs);
    return rc;
}

/* 1 when the GPU searched the batch into hits; 0 when the CPU must (not asked for, approximate
 * options, or no usable GPU: then a one-line notice); < 0 on an error of ours (memory, arguments). */
static int search_on_gpu(splade_index *ix, const query_opts *o, const splade_query_set *qs, splade_hit *hits,
                         int *n_hits)
{
    splade_device d = SPLADE_DEVICE_CPU;
    if (!o->enc.device || splade_parse_device(o->enc.device, &d) || d == SPLADE_DEVICE_CPU)
        return 0;
    if (o->approx.query_cut || o->approx.bound_factor || o->approx.rescore || o->approx.budget) {
        fprintf(stderr, "splade-index query: --query-cut / --bound-factor / --rescore are CPU-only (the GPU search is exact); "
                        "searching on the CPU\n");
        return 0;
    }
    splade_gpu_searcher *g;
    int rc = splade_gpu_searcher_create(ix, -1, &g);
    if (rc == 0) {
        rc = splade_gpu_search_batch(g, qs->q, qs->n, o->k, hits, n_hits);
        splade_gpu_searcher_free(g);
    }
    if (rc == 0)
        return 1;
    if (rc != SPLADE_ERR_NO_GPU && rc != SPLADE_ERR_GPU_OOM && rc != SPLADE_ERR_CUDA)
        return rc;
    fprintf(stderr, "splade-index query: GPU search unavailable (%s); searching on the CPU\n", splade_error_detail());
    return 0;
}

static int search_batch(splade_index *ix, const query_opts *o, const splade_query_set *qs, splade_hit *hits,
                        int *n_hits)
{
    int rc = search_on_gpu(ix, o, qs, hits, n_hits);
    if (rc != 0)
        return rc < 0 ? rc : SPLADE_OK;
    return splade_search_batch_opts(ix, qs->q, qs->n, o->k, o->algo, &o->approx, o->threads, hits, n_hits);
}

enum { CALIBRATION_QUERIES = 200 };

/* o->approx from splade_search_calibrate on up to CALIBRATION_QUERIES of the batch, evenly spaced;
 * the choice on stderr (the CLI's to say, the library's to measure). */
static int calibrate(splade_index *ix, query_opts *o, const splade_query_set *qs)
{
    const int n = qs->n < CALIBRATION_QUERIES ? qs->n : CALIBRATION_QUERIES;
    splade_qvec *sample = malloc(((size_t)n + 1) * sizeof *sample);
    if (!sample)
        return splade_fail(SPLADE_ERR_NOMEM, "calibration sample of %d queries", n);
    for (int i = 0; i < n; i++)
        sample[i] = qs->q[(size_t)i * (size_t)qs->n / (size_t)n]; /* read only: shallow copies */
    double recall;
    int rc = splade_search_calibrate(ix, sample, n, o->k, o->recall_target, o->threads, &o->approx, &recall);
    free(sample);
    if (rc == 0 && o->approx.query_cut)
        fprintf(stderr,
                "splade-index query: --recall-target %g: --query-cut %d --rescore %d --budget %d "
                "(recall@%d %.4f on %d of the queries)\n",
                o->recall_target, o->approx.query_cut, o->approx.rescore, o->approx.budget, o->k, recall, n);
    else if (rc == 0)
        fprintf(stderr, "splade-index query: --recall-target %g: no approximate setting reaches it on %d of the "
                        "queries; searching exactly\n", o->recall_target, n);
    return rc;
}

static int run_batch(splade_index *ix, const query_opts *opts)
{
    query_opts o = *opts;
    splade_query_set qs;
    int rc = o.vqueries ? splade_query_set_from_vectors(ix, o.vqueries, &qs)
                        : splade_query_set_from_file(ix, o.queries, &o.enc, &qs);
    if (rc < 0)
        return rc;
    if (o.recall_target > 0 && qs.n > 0)
        rc = calibrate(ix, &o, &qs);
    splade_hit *hits = malloc(((size_t)qs.n * (size_t)o.k + 1) * sizeof *hits);
    int *n_hits = malloc(((size_t)qs.n + 1) * sizeof *n_hits);
    if (rc == 0)
        rc = hits && n_hits ? search_batch(ix, &o, &qs, hits, n_hits)
                            : splade_fail(SPLADE_ERR_NOMEM, "results of %d queries", qs.n);
    if (rc == 0)
        rc = write_run(ix, &qs, hits, n_hits, o.k, o.output ? o.output : "-", o.tag);
    free(hits);
    free(n_hits);
    splade_query_set_free(&qs);
    return rc;
}

int cmd_query(int argc, char **argv)
{
    query_opts o;
    int prc = parse(argc, argv, &o);
    if (prc >= 0)
        return prc;
    splade_index *ix;
    o.enc.model_paths = splade_cli_model_paths();
    o.enc.max_batch_tokens = splade_cli_max_batch_tokens();
    int rc = splade_index_open(splade_cli_index_dir(o.index), &ix);
    uint64_t n_docs = rc == 0 ? splade_index_get_info(ix)->n_docs : 0;
    if (rc == 0 && (uint64_t)o.k > n_docs) /* no more hits can come back, and a batch allocates k per query */
        o.k = n_docs ? (int)n_docs : 1;
    if (rc == 0) {
        rc = o.text ? run_single(ix, &o) : run_batch(ix, &o);
        splade_index_close(ix);
    }
    if (rc < 0) {
        fprintf(stderr, "splade-index query: %s: %s\n", splade_strerror(rc), splade_error_detail());
        return 1;
    }
    return 0;
}
