/* What `build`, `add` and `update` share (src/cli/build_opts.c): their options (input, builder, and
 * the encoder options of encoder_opts.h) parsed by one getopt loop, to which each command adds its
 * own, and the setup that turns them into a filled builder (model, encoder, lock, budget, ingest). */
#ifndef SPLADE_CLI_BUILD_OPTS_H
#define SPLADE_CLI_BUILD_OPTS_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/encoder_opts.h"
#include "splade/build.h"
#include "splade/index.h"

typedef struct {
    const char *corpus, *vectors;
    cli_encoder_opts enc; /* --model, --device, --precision and the encoder's numbers (--threads also
                             sets the builder's) */
    int skip_invalid, allow_empty;
    uint64_t memory;
} splade_cli_build_opts;

/* A command's own options, added to the shared ones. */
typedef struct {
    const char *cmd;               /* "build", "add", "update": named in messages */
    const char *shorts;            /* its short options, getopt syntax ("o:") */
    const struct option *longs;    /* its long options, {0}-terminated */
    /* One of its options (c = the option's val): 0, or 2 after printing the error. */
    int (*option)(void *user, const char *cmd, int c, const char *arg);
    void (*usage)(FILE *f, const char *cmd);
    void *user;
} splade_cli_build_cmd;

/* Parses argv into o (zeroed first) and the command's own options. Returns -1 to go on, 0 after
 * --help (usage on stdout), 2 on a usage error (message and usage on stderr): exactly one of
 * CORPUS.jsonl and --vectors FILE, a known --device and --precision, numbers in range. */
int splade_cli_build_parse(int argc, char **argv, const splade_cli_build_cmd *c, splade_cli_build_opts *o);

/* How a command sets up its builder. */
typedef struct {
    const char *model;      /* what to load (splade_model_resolve's argument; NULL: the default model) */
    const char *label;      /* the model name recorded in the index */
    int32_t max_length;     /* the encoder's when --max-length is not given (0: the encoder's default) */
    int append;             /* add/update: segments of an existing index (its doc_scale and sequence) */
    float doc_scale;        /* build --doc-scale (0: the collection's) */
} splade_cli_ingest_setup;

/* A builder filled from o's input, holding dir's lock: --vectors into a growing vocabulary, else the
 * corpus encoded with the model (loaded, its encoder created with o's settings). Before the first
 * document: threads, build time ($SOURCE_DATE_EPOCH), --memory (default: a quarter of RAM) and, for
 * a build, --allow-empty and --doc-scale. *b is set as soon as it exists (the caller frees it). */
int splade_cli_ingest(const splade_cli_build_opts *o, const char *dir, const splade_cli_ingest_setup *s,
                      splade_ingest_opts *io, splade_index_builder **b);

#endif
