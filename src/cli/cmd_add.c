/* splade-index add / update: encode a corpus (or read --vectors) and append it to an existing index
 * as a new segment (include/splade/segments.h); `update` replaces documents whose id is already live. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli_env.h"
#include "cli/cli_output.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/fail.h"
#include "splade.h"
#include "splade/build.h"
#include "splade/index.h"
#include "splade/pipeline.h"
#include "splade/segments.h"

static const char usage_fmt[] =
    "usage: splade-index %s CORPUS.jsonl [-i DIR] [--model DIR|NAME] [--device auto|cpu|cuda|cuda:all|cuda:I,J] [--precision bf16|fp32]\n"
    "                        [--batch N] [--max-length N] [--threads N] [--quiet] [--skip-invalid] [--allow-empty]\n"
    "                        [--no-merge] [--max-segments N] [--memory SIZE]\n"
    "       splade-index %s --vectors VECTORS.jsonl [-i DIR] [...]\n"
    "\n"
    "Encodes the documents (with the index's model unless --model says otherwise; the same options as\n"
    "`build`) and appends them to the index in DIR (default: $SPLADE_INDEX, else ./" SPLADE_INDEX_DEFAULT_DIR ")\n"
    "as a new segment, quantized with the index's doc_scale. The index must exist (`build` creates one).\n"
    "`add` refuses an id that is already in the index; `update` replaces that document (delete + add).\n"
    "Afterwards, when the index has more than N segments (--max-segments, default %d), the smallest are\n"
    "merged so that N remain (--no-merge: never). Readers keep answering throughout; one writer at a time.\n"
    "--memory SIZE (512M, 4G; default: a quarter of the physical memory): past it, the documents so far\n"
    "become a segment and the add goes on; all of them are installed together at the end.\n";

typedef struct {
    const char *corpus, *index, *model, *vectors, *device, *precision;
    int batch, max_length, threads, quiet, skip_invalid, allow_empty, no_merge, max_segments;
    uint64_t memory;
} add_opts;

static void usage(FILE *f, const char *cmd)
{
    fprintf(f, usage_fmt, cmd, cmd, SPLADE_MERGE_POLICY_SEGMENTS);
}

static int parse(int argc, char **argv, const char *cmd, add_opts *o)
{
    static const struct option longs[] = {
        {"index", required_argument, 0, 'i'}, {"model", required_argument, 0, 'm'},
        {"device", required_argument, 0, 'd'}, {"batch", required_argument, 0, 'b'},
        {"max-length", required_argument, 0, 'L'}, {"threads", required_argument, 0, 't'},
        {"quiet", no_argument, 0, 'q'}, {"skip-invalid", no_argument, 0, 's'},
        {"vectors", required_argument, 0, 'V'}, {"precision", required_argument, 0, 'P'},
        {"allow-empty", no_argument, 0, 'E'}, {"no-merge", no_argument, 0, 'N'},
        {"max-segments", required_argument, 0, 'S'}, {"memory", required_argument, 0, 'M'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    optind = 1;
    for (int c, bad = 0; (c = getopt_long(argc, argv, "i:qh", longs, NULL)) != -1;) {
        switch (c) {
        case 'i': o->index = optarg; break;
        case 'm': o->model = optarg; break;
        case 'd': o->device = optarg; break;
        case 'b': bad = splade_cli_int(cmd, "--batch", optarg, 1, SPLADE_CLI_MAX_BATCH, &o->batch); break;
        case 'L': bad = splade_cli_int(cmd, "--max-length", optarg, 2, SPLADE_CLI_MAX_LENGTH, &o->max_length); break;
        case 't': bad = splade_cli_int(cmd, "--threads", optarg, 1, SPLADE_CLI_MAX_THREADS, &o->threads); break;
        case 'S': bad = splade_cli_int(cmd, "--max-segments", optarg, 1, 1 << 20, &o->max_segments); break;
        case 'q': o->quiet = 1; break;
        case 's': o->skip_invalid = 1; break;
        case 'V': o->vectors = optarg; break;
        case 'P': o->precision = optarg; break;
        case 'E': o->allow_empty = 1; break;
        case 'N': o->no_merge = 1; break;
        case 'M': bad = splade_cli_size(cmd, "--memory", optarg, &o->memory); break;
        case 'h': usage(stdout, cmd); return 0;
        default: usage(stderr, cmd); return 2;
        }
        if (bad)
            return bad;
    }
    if (optind < argc)
        o->corpus = argv[optind++];
    if (optind < argc || (!o->corpus == !o->vectors)) {
        fprintf(stderr, "splade-index %s: give either CORPUS.jsonl or --vectors FILE\n", cmd);
        usage(stderr, cmd);
        return 2;
    }
    splade_precision p;
    if (splade_parse_precision(o->precision, &p)) {
        fprintf(stderr, "splade-index %s: %s\n", cmd, splade_error_detail());
        return 2;
    }
    return -1;
}

/* Before the first document: a bounded add writes segments while it ingests. */
static int prepare(const add_opts *o, const char *dir, splade_index_builder *b)
{
    splade_builder_set_threads(b, o->threads);
    splade_cli_build_time(b);
    return splade_builder_set_memory(b, dir, o->memory ? o->memory : splade_default_memory(), 1);
}

/* A builder over the index's model (or --model's: the library refuses another fingerprint), locked,
 * with the corpus encoded into it. */
static int ingest_corpus(const add_opts *o, const char *dir, const splade_index_info *in, splade_ingest_opts *io,
                         splade_index_builder **b)
{
    char mdir[4096];
    splade_model *m = NULL;
    splade_encoder *enc = NULL;
    const char *name = o->model ? o->model : *in->model_dir ? in->model_dir : in->model_name;
    splade_encoder_opts eo = {.threads = o->threads, .max_length = o->max_length ? o->max_length : in->max_length,
                              .batch_size = o->batch, .quiet = o->quiet, .max_batch_tokens = splade_cli_max_batch_tokens()};
    int rc = splade_parse_devices(o->device, &eo);
    if (rc == 0)
        rc = splade_parse_precision(o->precision, &eo.precision);
    if (rc == 0)
        rc = splade_model_resolve(name, splade_cli_model_paths(), mdir, sizeof mdir);
    if (rc == 0)
        rc = splade_model_load(mdir, &m);
    if (rc == 0)
        rc = splade_encoder_create(m, &eo, &enc);
    if (rc == 0)
        rc = splade_builder_create_for_model(m, o->model ? o->model : in->model_name, splade_encoder_max_length(enc), b);
    if (rc == 0)
        rc = splade_builder_lock(*b, dir);
    if (rc == 0)
        rc = prepare(o, dir, *b);
    int chunk = (o->batch > 0 ? o->batch : 32) * 8;
    if (rc == 0)
        rc = splade_ingest_corpus(*b, o->corpus, enc, chunk, io);
    splade_encoder_free(enc);
    splade_model_free(m);
    return rc;
}

static void summary(const char *cmd, const splade_add_stats *st, uint32_t skipped, double secs, const char *dir)
{
    printf("%s: %u documents as segment %s/%s (%llu postings, %llu clipped at impact 255), %u replaced, %u invalid "
           "lines skipped, %.2f s; generation %llu", cmd, st->n_added, dir, st->segment,
           (unsigned long long)st->n_postings, (unsigned long long)st->clipped, st->n_replaced, skipped, secs,
           (unsigned long long)st->generation);
    if (st->n_merged)
        printf(" (%d segments merged)", st->n_merged);
    printf("\n");
}

static int run(int argc, char **argv, const char *cmd, int update)
{
    add_opts o;
    int prc = parse(argc, argv, cmd, &o);
    if (prc >= 0)
        return prc;
    const char *dir = splade_cli_index_dir(o.index);
    double t0 = splade_cli_now();
    splade_index *ix = NULL;
    int rc = splade_index_open(dir, &ix); /* it must exist and open before anything is encoded */
    splade_index_info in = rc == 0 ? *splade_index_get_info(ix) : (splade_index_info){0};
    char model_name[1024] = "", model_dir[4096] = "";
    if (rc == 0) {
        snprintf(model_name, sizeof model_name, "%s", in.model_name);
        snprintf(model_dir, sizeof model_dir, "%s", in.model_dir);
        in.model_name = model_name;
        in.model_dir = model_dir;
    }
    splade_index_close(ix);
    splade_cli_bar bar;
    splade_ingest_opts io = {.skip_invalid = o.skip_invalid, .allow_empty = o.allow_empty};
    if (rc == 0 && splade_cli_bar_start(&bar, o.quiet)) {
        io.progress = splade_cli_bar_progress;
        io.progress_user = &bar;
    }
    splade_index_builder *b = NULL;
    if (rc == 0 && o.vectors) {
        rc = splade_builder_create(NULL, 0, NULL, &b);
        if (rc == 0)
            rc = splade_builder_lock(b, dir);
        if (rc == 0)
            rc = prepare(&o, dir, b);
        if (rc == 0)
            rc = splade_ingest_vectors(b, o.vectors, &io);
    } else if (rc == 0 && !(in.flags & SPLADE_IX_HAS_MODEL)) {
        rc = splade_fail(SPLADE_ERR_MISMATCH, "%s was built from --vectors: add --vectors FILE to it", dir);
    } else if (rc == 0) {
        rc = ingest_corpus(&o, dir, &in, &io, &b);
    }
    splade_add_stats st;
    if (rc == 0) {
        splade_add_opts ao;
        splade_add_opts_init(&ao);
        ao.update = update;
        ao.no_merge = o.no_merge;
        ao.max_segments = o.max_segments;
        ao.threads = o.threads;
        rc = splade_index_add(b, dir, &ao, &st);
    }
    splade_builder_free(b);
    if (rc < 0) {
        fprintf(stderr, "splade-index %s: %s: %s\n", cmd, splade_strerror(rc), splade_error_detail());
        return 1;
    }
    if (!o.quiet)
        summary(cmd, &st, io.skipped, splade_cli_now() - t0, dir);
    return 0;
}

int cmd_add(int argc, char **argv)
{
    return run(argc, argv, "add", 0);
}

int cmd_update(int argc, char **argv)
{
    return run(argc, argv, "update", 1);
}
