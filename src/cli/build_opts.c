/* See build_opts.h. */
#include "cli/build_opts.h"

#include <string.h>

#include "cli/cli_env.h"
#include "cli/cli_util.h"
#include "splade.h"
#include "splade/model.h"
#include "splade/pipeline.h"

/* The encoder's options (encoder_opts.h: short codes m d t L b k T q P), then the builder's. */
static const struct option shared_longs[] = {
    CLI_ENCODER_LONGOPTS, {"skip-invalid", no_argument, 0, 's'}, {"vectors", required_argument, 0, 'V'},
    {"allow-empty", no_argument, 0, 'E'}, {"memory", required_argument, 0, 'M'}, {"help", no_argument, 0, 'h'}};

enum { N_SHARED = sizeof shared_longs / sizeof *shared_longs, MAX_LONGS = 32 };

/* One shared option; 1 when c is not one of them. */
static int shared_option(const char *cmd, int c, const char *arg, splade_cli_build_opts *o)
{
    const int enc = cli_encoder_opt(cmd, c, arg, &o->enc); /* 0 taken, 2 bad, -1 not an encoder option */
    if (enc >= 0)
        return enc;
    switch (c) {
    case 's': o->skip_invalid = 1; return 0;
    case 'V': o->vectors = arg; return 0;
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
    return cli_encoder_opts_finish(c->cmd, &o->enc) ? 2 : -1; /* -1: go on */
}

/* Settings the builder needs before the first document: a bounded run writes segments while it
 * ingests. */
static int prepare(const splade_cli_build_opts *o, const char *dir, const splade_cli_ingest_setup *s,
                   splade_index_builder *b)
{
    splade_builder_set_threads(b, o->enc.eo.threads);
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
    splade_encoder_opts eo = o->enc.eo; /* device and precision set by the parser */
    if (!eo.max_length)
        eo.max_length = s->max_length;
    eo.max_batch_tokens = splade_cli_max_batch_tokens();
    /* the GPU code loads and the CUDA context starts while the model loads */
    splade_gpu_warmup *wu = splade_encoder_warm_start(&eo);
    int rc = splade_model_resolve(s->model, splade_cli_model_paths(), mdir, sizeof mdir);
    if (rc == 0)
        rc = splade_model_load(mdir, &m);
    if (rc == 0)
        rc = splade_encoder_create(m, &eo, &enc);
    splade_encoder_warm_finish(wu); /* after create: the warm-up's last step overlapped the weights' upload */
    if (rc == 0)
        rc = splade_builder_create_for_model(m, s->label, splade_encoder_max_length(enc), b);
    if (rc == 0)
        rc = splade_builder_lock(*b, dir); /* before the long part: a second writer fails at once */
    if (rc == 0)
        rc = prepare(o, dir, s, *b);
    int chunk = (eo.batch_size > 0 ? eo.batch_size : 32) * 8; /* several batches per call: better length sorting */
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
