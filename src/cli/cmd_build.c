/* splade-index build: corpus JSONL (encoded with a model) or precomputed vectors -> index. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_env.h"
#include "cli/cli_output.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "splade.h"
#include "splade/build.h"
#include "splade/pipeline.h"
#include "splade/index.h"

static const char usage_text[] =
    "usage: splade-index build CORPUS.jsonl [-o DIR] [--model DIR|NAME] [--device auto|cpu|cuda|cuda:all|cuda:I,J]\n"
    "                          [--precision bf16|fp32] [--batch N] [--max-length N] [--threads N] [--quiet] [--skip-invalid]\n"
    "                          [--allow-empty] [--doc-scale X] [--memory SIZE]\n"
    "       splade-index build --vectors VECTORS.jsonl [-o DIR] [--threads N] [--quiet] [--skip-invalid] [--allow-empty]\n"
    "                          [--doc-scale X] [--memory SIZE]\n"
    "\n"
    "Encodes every document of CORPUS.jsonl ({\"_id\",\"title\",\"text\"} or {\"id\",\"contents\"}) and\n"
    "writes the index to DIR (default: $SPLADE_INDEX, else ./" SPLADE_INDEX_DEFAULT_DIR "). --vectors indexes\n"
    "precomputed vectors ({\"id\",\"vector\":{token:weight}}) with no model. The previous index in DIR\n"
    "is replaced atomically once the new one is complete and verified. --threads N: threads for encoding\n"
    "and inversion (default: all cores); the index does not depend on it. --precision: the GPU's number\n"
    "format, bf16 (default, fast) or fp32 (the CPU's vectors); the CPU always computes in fp32.\n"
    "One build at a time per DIR (a second one fails naming the first). A build without postings does\n"
    "not replace an index that has some unless --allow-empty. --doc-scale X: quantize with this weight of\n"
    "one impact unit instead of the largest weight / 255 (to compare with a segmented index: see `info`).\n"
    "--memory SIZE (512M, 4G; default: a quarter of the physical memory): when the documents and their\n"
    "inversion would need more, they are written as a segment and the build goes on; all segments are\n"
    "installed together at the end, then, when there are more than 10, the smallest are merged so that 10\n"
    "remain (docs/FORMAT.md, \"Bounded-memory builds\").\n";

typedef struct {
    const char *corpus, *out, *model, *vectors, *device, *precision;
    int batch, max_length, threads, quiet, skip_invalid, allow_empty;
    float doc_scale;
    uint64_t memory;
} build_opts;

static int parse(int argc, char **argv, build_opts *o)
{
    static const struct option longs[] = {
        {"output", required_argument, 0, 'o'}, {"model", required_argument, 0, 'm'},
        {"device", required_argument, 0, 'd'}, {"batch", required_argument, 0, 'b'},
        {"max-length", required_argument, 0, 'L'}, {"threads", required_argument, 0, 't'},
        {"quiet", no_argument, 0, 'q'}, {"skip-invalid", no_argument, 0, 's'},
        {"vectors", required_argument, 0, 'V'}, {"precision", required_argument, 0, 'P'},
        {"allow-empty", no_argument, 0, 'E'}, {"doc-scale", required_argument, 0, 'D'},
        {"memory", required_argument, 0, 'M'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    optind = 1;
    for (int c, bad = 0; (c = getopt_long(argc, argv, "o:qh", longs, NULL)) != -1;) {
        switch (c) {
        case 'o': o->out = optarg; break;
        case 'm': o->model = optarg; break;
        case 'd': o->device = optarg; break;
        case 'b': bad = splade_cli_int("build", "--batch", optarg, 1, SPLADE_CLI_MAX_BATCH, &o->batch); break;
        case 'L': bad = splade_cli_int("build", "--max-length", optarg, 2, SPLADE_CLI_MAX_LENGTH, &o->max_length); break;
        case 't': bad = splade_cli_int("build", "--threads", optarg, 1, SPLADE_CLI_MAX_THREADS, &o->threads); break;
        case 'q': o->quiet = 1; break;
        case 's': o->skip_invalid = 1; break;
        case 'V': o->vectors = optarg; break;
        case 'P': o->precision = optarg; break;
        case 'E': o->allow_empty = 1; break;
        case 'D': bad = splade_cli_float("build", "--doc-scale", optarg, 0, 3.4e38, &o->doc_scale); break;
        case 'M': bad = splade_cli_size("build", "--memory", optarg, &o->memory); break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return 2;
        }
        if (bad)
            return bad;
    }
    if (optind < argc)
        o->corpus = argv[optind++];
    if (optind < argc || (!o->corpus == !o->vectors)) {
        fprintf(stderr, "splade-index build: give either CORPUS.jsonl or --vectors FILE\n%s", usage_text);
        return 2;
    }
    splade_precision p;
    if (splade_parse_precision(o->precision, &p)) {
        fprintf(stderr, "splade-index build: %s\n", splade_error_detail());
        return 2;
    }
    return -1; /* go on */
}

static void print_summary(const build_opts *o, const splade_build_stats *st, uint32_t skipped, double secs,
                          const char *dir, int merged)
{
    if (o->quiet)
        return;
    printf("indexed %u documents, %llu postings (%.1f per document, %u terms), %u truncated, "
           "%u invalid lines skipped, %.2f s (inversion %.2f s, write %.2f s)\n",
           st->n_docs, (unsigned long long)st->n_postings, st->n_docs ? (double)st->n_postings / st->n_docs : 0.0,
           st->n_terms_used, st->n_truncated, skipped, secs, st->invert_s, st->write_s);
    char path[4096];
    snprintf(path, sizeof path, "%s/MANIFEST", dir);
    if (access(path, F_OK) == 0) { /* segments: a bounded build (--memory), or a build into a segmented folder */
        printf("index: %s (segments, %.1f MB written", dir, st->file_bytes / 1e6);
        if (merged) /* the size-tiered policy after a bounded build (docs/FORMAT.md) */
            printf("; %d of them merged into one", merged);
        printf("; see `splade-index info`)\n");
        return;
    }
    printf("index: %s/%s (%.1f MB, %.2f bytes per posting)\n", dir, SPLADE_INDEX_FILE, st->file_bytes / 1e6,
           st->n_postings ? (double)st->file_bytes / (double)st->n_postings : 0.0);
}

/* Settings the inversion needs before the first document: a bounded build inverts during ingest. */
static int prepare(const build_opts *o, const char *dir, splade_index_builder *b)
{
    splade_builder_set_threads(b, o->threads);
    splade_builder_allow_empty(b, o->allow_empty);
    splade_cli_build_time(b);
    int rc = splade_builder_set_doc_scale(b, o->doc_scale);
    return rc == 0 ? splade_builder_set_memory(b, dir, o->memory ? o->memory : splade_default_memory(), 0) : rc;
}

/* Loads the model, creates the encoder and a builder over the model's vocabulary, ingests. */
static int build_from_corpus(const build_opts *o, const char *out_dir, splade_ingest_opts *io,
                             splade_index_builder **b)
{
    char dir[4096];
    splade_model *m = NULL;
    splade_encoder *enc = NULL;
    splade_encoder_opts eo = {.threads = o->threads, .max_length = o->max_length, .batch_size = o->batch,
                              .quiet = o->quiet, .max_batch_tokens = splade_cli_max_batch_tokens()};
    int rc = splade_parse_devices(o->device, &eo);
    if (rc == 0)
        rc = splade_parse_precision(o->precision, &eo.precision);
    if (rc == 0)
        rc = splade_model_resolve(o->model, splade_cli_model_paths(), dir, sizeof dir);
    if (rc == 0)
        rc = splade_model_load(dir, &m);
    if (rc == 0)
        rc = splade_encoder_create(m, &eo, &enc);
    if (rc == 0)
        rc = splade_builder_create_for_model(m, o->model ? o->model : SPLADE_DEFAULT_MODEL,
                                             splade_encoder_max_length(enc), b);
    if (rc == 0)
        rc = splade_builder_lock(*b, out_dir); /* before the long part: a second build fails at once */
    if (rc == 0)
        rc = prepare(o, out_dir, *b);
    int chunk = (o->batch > 0 ? o->batch : 32) * 8; /* several batches per call: better length sorting */
    if (rc == 0)
        rc = splade_ingest_corpus(*b, o->corpus, enc, chunk, io);
    splade_encoder_free(enc);
    splade_model_free(m);
    return rc;
}

static int fail(int rc)
{
    fprintf(stderr, "splade-index build: %s: %s\n", splade_strerror(rc), splade_error_detail());
    return 1;
}

int cmd_build(int argc, char **argv)
{
    build_opts o;
    int prc = parse(argc, argv, &o);
    if (prc >= 0)
        return prc;
    const char *dir = splade_cli_index_dir(o.out);
    double t0 = splade_cli_now();
    splade_cli_bar bar;
    splade_ingest_opts io = {.skip_invalid = o.skip_invalid, .allow_empty = o.allow_empty};
    if (splade_cli_bar_start(&bar, o.quiet)) {
        io.progress = splade_cli_bar_progress;
        io.progress_user = &bar;
    }
    splade_index_builder *b = NULL;
    int rc;
    if (o.vectors) {
        rc = splade_builder_create(NULL, 0, NULL, &b);
        if (rc == 0)
            rc = splade_builder_lock(b, dir);
        if (rc == 0)
            rc = prepare(&o, dir, b);
        if (rc == 0)
            rc = splade_ingest_vectors(b, o.vectors, &io);
    } else {
        rc = build_from_corpus(&o, dir, &io, &b);
    }
    splade_build_stats st;
    if (rc == 0)
        rc = splade_builder_write(b, dir, &st);
    int merged = splade_builder_merged(b);
    splade_builder_free(b);
    if (rc < 0)
        return fail(rc);
    print_summary(&o, &st, io.skipped, splade_cli_now() - t0, dir, merged);
    return 0;
}
