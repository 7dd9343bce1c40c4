/* The encoder options `encode` and `export` share (src/cli/encoder_opts.c): --model, --device,
 * --threads, --max-length, --batch, --top-k, --threshold, --quiet, --precision, parsed and checked
 * the same way for both. */
#ifndef SPLADE_CLI_ENCODER_OPTS_H
#define SPLADE_CLI_ENCODER_OPTS_H

#include <getopt.h>

#include "splade/encoder.h"

typedef struct {
    const char *model, *device, *precision; /* as given; device and precision go into eo at the end */
    splade_encoder_opts eo;
} cli_encoder_opts;

/* getopt_long entries of the shared options (short codes m d t L b k T q P): put first in a
 * command's table. */
#define CLI_ENCODER_LONGOPTS                                                                              \
    {"model", required_argument, 0, 'm'}, {"device", required_argument, 0, 'd'},                           \
        {"threads", required_argument, 0, 't'}, {"max-length", required_argument, 0, 'L'},                 \
        {"batch", required_argument, 0, 'b'}, {"top-k", required_argument, 0, 'k'},                        \
        {"threshold", required_argument, 0, 'T'}, {"quiet", no_argument, 0, 'q'},                          \
        {"precision", required_argument, 0, 'P'}

/* Takes option c (with arg) when it is one of the shared ones: 0 taken, 2 a bad value (the message
 * names CMD and the option), -1 not a shared option. */
int cli_encoder_opt(const char *cmd, int c, const char *arg, cli_encoder_opts *o);

/* After the options: the device list and the precision (GPU's, and the CPU's when given) into eo;
 * 0, or 2 after printing "splade-index CMD: DETAIL". */
int cli_encoder_opts_finish(const char *cmd, cli_encoder_opts *o);

#endif
