/* The encoder options every command that encodes shares (encoder_opts.h). */
#include "cli/encoder_opts.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/cli_util.h"
#include "splade.h"

int cli_encoder_opt(const char *cmd, int c, const char *arg, cli_encoder_opts *o)
{
    splade_encoder_opts *e = &o->eo;
    switch (c) {
    case 'm': o->model = arg; return 0;
    case 'd': o->device = arg; return 0;
    case 'P': o->precision = arg; return 0;
    case 'q': e->quiet = 1; return 0;
    case 't': return splade_cli_int(cmd, "--threads", arg, 1, SPLADE_CLI_MAX_THREADS, &e->threads);
    case 'L': return splade_cli_int(cmd, "--max-length", arg, 2, SPLADE_CLI_MAX_LENGTH, &e->max_length);
    case 'b': return splade_cli_int(cmd, "--batch", arg, 1, SPLADE_CLI_MAX_BATCH, &e->batch_size);
    case 'k': return splade_cli_int(cmd, "--top-k", arg, 1, INT32_MAX, &e->top_k);
    case 'T': return splade_cli_float(cmd, "--threshold", arg, 0, INFINITY, &e->threshold);
    default: return -1;
    }
}

int cli_encoder_opts_finish(const char *cmd, cli_encoder_opts *o)
{
    /* --precision sets the CPU's format too: bf16 on the CPU is opt-in (include/splade/encoder.h) */
    if (splade_parse_devices(o->device, &o->eo) || splade_parse_precision(o->precision, &o->eo.precision) ||
        (o->precision && splade_parse_cpu_precision(o->precision, &o->eo.cpu_precision))) {
        fprintf(stderr, "splade-index %s: %s\n", cmd, splade_error_detail());
        return 2;
    }
    return 0;
}
