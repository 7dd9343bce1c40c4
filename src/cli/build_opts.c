/* See build_opts.h. */
#include "cli/build_opts.h"

#include <string.h>

#include "cli/cli_env.h"
#include "cli/cli_util.h"
#include "splade.h"
#include "splade/model.h"
#include "splade/pipeline.h"

static const struct option shared_longs[] = {
    {"model", required_argument, 0, 'm'}, {"device", required_argument, 0, 'd'},
    {"batch", required_argument, 0, 'b'}, {"max-length", required_argument, 0, 'L'},
    {"threads", required_argument, 0, 't'}, {"quiet", no_argument, 0, 'q'},
    {"skip-invalid", no_argument, 0, 's'}, {"vectors", required_argument, 0, 'V'},
    {"precision", required_argument, 0, 'P'}, {"allow-empty", no_argument, 0, 'E'},
    {"memory", required_argument, 0, 'M'}, {"help", no_argument, 0, 'h'}};

enum { N_SHARED = sizeof shared_longs / sizeof *shared_longs, MAX_LONGS = 32 };

/* One shared option; 1 when c is not one of them. */
static int shared_option(const char *cmd, int c, const char *arg, splade_cli_build_opts *o)
{
    switch (c) {
    case 'm': o->model = arg; return 0;
    case 'd': o->device = arg; return 0;
    case 'b': return splade_cli_int(cmd, "--batch", arg, 1, SPLADE_CLI_MAX_BATCH, &o->batch);
    case 'L': return splade_cli_int(cmd, "--max-length", arg, 2, SPLADE_CLI_MAX_LENGTH, &o->max_length);
    case 't': return splade_cli_int(cmd, "--threads", arg, 1, SPLADE_CLI_MAX_THREADS, &o->threads);
    case 'q': o->quiet = 1; return 0;
    case 's': o->skip_invalid = 1; return 0;
    case 'V': o->vectors = arg; return 0;
    case 'P': o->precision = arg; return 0;
    case 'E': o->allow_empty = 1; return 0;
    case 'M': return splade_cli_size(cmd, "--memory", arg, &o->memory);
    default: return 1;
    }
}

/* The shared long options followed by the command's. */
static int all_longs(const splade_cli_build_cmd *c, struct option *out)
{
    int n = 0;
    for (int i = 0; i < N_SHARED; i++)
        out[n++] = shared_longs[i];
    for (const struct option *p = c->longs; p && p->name && n < MAX_LONGS - 1; p++)
        out[n++] = *p;
    out[n] = (struct option){0, 0, 0, 0};
    return n;
}

int splade_cli_build_parse(int argc, char **argv, const splade_cli_build_cmd *c, splade_cli_build_opts *o)
{
    struct option longs[MAX_LONGS];
    char shorts[32];
    all_longs(c, longs);
    snprintf(shorts, sizeof shorts, "%sqh", c->shorts ? c->shorts : "");
    memset(o, 0, sizeof *o);
    optind = 1;
    for (int ch, bad = 0; (ch = getopt_long(argc, argv, shorts, longs, NULL)) != -1;) {
        if (ch == 'h') {
            c->usage(stdout, c->cmd);
            return 0;
        }
        if (ch == '?' || ch == ':') {
            c->usage(stderr, c->cmd);
            return 2;
        }
        bad = shared_option(c->cmd, ch, optarg, o);
        if (bad == 1)
            bad = c->option(c->user, c->cmd, ch, optarg);
        if (bad)
            return bad;
    }
    if (optind < argc)
        o->corpus = argv[optind++];
    if (optind < argc || (!o->corpus == !o->vectors)) {
        fprintf(stderr, "splade-index %s: give either CORPUS.jsonl or --vectors FILE\n", c->cmd);
        c->usage(stderr, c->cmd);
        return 2;
    }
    splade_precision p;
    if (splade_parse_precision(o->precision, &p)) {
        fprintf(stderr, "splade-index %s: %s\n", c->cmd, splade_error_detail());
        return 2;
    }
    return -1; /* go on */
}

/* Settings the builder needs before the first document: a bounded run writes segments while it
 * ingests. */
static int prepare(const splade_cli_build_opts *o, const char *dir, const splade_cli_ingest_setup *s,
                   splade_index_builder *b)
{
    splade_builder_set_threads(b, o->threads);
    splade_cli_build_time(b);
    int rc = SPLADE_OK;
    if (!s->append) {
        splade_builder_allow_empty(b, o->allow_empty);
        rc = splade_builder_set_doc_scale(b, s->doc_scale);
    }
    return rc == 0 ? splade_builder_set_memory(b, dir, o->memory ? o->memory : splade_default_memory(), s->append) : rc;
}

/* Loads the model, creates the encoder and a builder over the model's vocabulary, ingests. */
static int ingest_corpus(const splade_cli_build_opts *o, const char *dir, const splade_cli_ingest_setup *s,
                         splade_ingest_opts *io, splade_index_builder **b)
{
    char mdir[4096];
    splade_model *m = NULL;
    splade_encoder *enc = NULL;
    splade_encoder_opts eo = {.threads = o->threads, .max_length = o->max_length ? o->max_length : s->max_length,
                              .batch_size = o->batch, .quiet = o->quiet, .max_batch_tokens = splade_cli_max_batch_tokens()};
    int rc = splade_parse_devices(o->device, &eo);
    if (rc == 0)
        rc = splade_parse_precision(o->precision, &eo.precision);
    if (rc == 0 && o->precision) /* the CPU computes in bf16 only when asked (issue #13) */
        rc = splade_parse_cpu_precision(o->precision, &eo.cpu_precision);
    /* the GPU code loads and the CUDA context starts while the model loads */
    splade_gpu_warmup *wu = rc == 0 ? splade_encoder_warm_start(&eo) : NULL;
    if (rc == 0)
        rc = splade_model_resolve(s->model, splade_cli_model_paths(), mdir, sizeof mdir);
    if (rc == 0)
        rc = splade_model_load(mdir, &m);
    splade_encoder_warm_finish(wu);
    if (rc == 0)
        rc = splade_encoder_create(m, &eo, &enc);
    if (rc == 0)
        rc = splade_builder_create_for_model(m, s->label, splade_encoder_max_length(enc), b);
    if (rc == 0)
        rc = splade_builder_lock(*b, dir); /* before the long part: a second writer fails at once */
    if (rc == 0)
        rc = prepare(o, dir, s, *b);
    int chunk = (o->batch > 0 ? o->batch : 32) * 8; /* several batches per call: better length sorting */
    if (rc == 0)
        rc = splade_ingest_corpus(*b, o->corpus, enc, chunk, io);
    splade_encoder_free(enc);
    splade_model_free(m);
    return rc;
}

int splade_cli_ingest(const splade_cli_build_opts *o, const char *dir, const splade_cli_ingest_setup *s,
                      splade_ingest_opts *io, splade_index_builder **b)
{
    *b = NULL;
    if (!o->vectors)
        return ingest_corpus(o, dir, s, io, b);
    int rc = splade_builder_create(NULL, 0, NULL, b);
    if (rc == 0)
        rc = splade_builder_lock(*b, dir);
    if (rc == 0)
        rc = prepare(o, dir, s, *b);
    if (rc == 0)
        rc = splade_ingest_vectors(*b, o->vectors, io);
    return rc;
}
