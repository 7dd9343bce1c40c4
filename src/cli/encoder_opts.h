/* The encoder options every command that encodes shares (src/cli/encoder_opts.c): --model, --device,
 * --threads, --max-length, --batch, --top-k, --threshold, --quiet, --precision, parsed, checked and
 * described the same way for encode, export, build, add and update. */
#ifndef SPLADE_CLI_ENCODER_OPTS_H
#define SPLADE_CLI_ENCODER_OPTS_H

#include <getopt.h>

#include "splade/encoder.h"
#include "splade/model.h"

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

/* Their description, the same in every command's --help (after its own text). */
#define CLI_ENCODER_HELP                                                                                  \
    "\n"                                                                                                  \
    "Encoder options (the same for build, add, update, encode and export):\n"                             \
    "  --model DIR|ORG/NAME   the model; else $SPLADE_MODEL, else ~/.cache/splade-index/" SPLADE_DEFAULT_MODEL ",\n" \
    "                         else ./cache/" SPLADE_DEFAULT_MODEL " (`make models`)\n"                     \
    "  --device D             auto (default: a usable GPU, else the CPU with a notice saying why), cpu,\n"   \
    "                         cuda, cuda:all or cuda:I,J (several GPUs at once)\n"                         \
    "  --precision bf16|fp32|int8\n"                                                                  \
    "                         the GPU's number format: bf16 (default, fast) or fp32 (the CPU's\n"       \
    "                         vectors); the CPU computes in fp32 unless --precision bf16 (opt-in:\n"    \
    "                         AMX / AVX512-BF16) or int8 (opt-in, CPU only: VNNI / AMX-INT8) is given,\n"  \
    "                         both through oneDNN\n"                                                      \
    "  --threads N            CPU threads (default: all cores); the output does not depend on it\n"        \
    "  --max-length N         tokens per text, [CLS] and [SEP] included; longer texts are truncated\n"     \
    "                         (default 256, at most the model's; add/update: the index's)\n"              \
    "  --batch N              texts per forward pass (default: the device's)\n"                           \
    "  --top-k K              keep each vector's K largest weights (default: all)\n"                      \
    "  --threshold T          drop weights <= T (default 0: keep every positive weight)\n"                \
    "  --quiet                no notices, progress or summary\n"

/* Takes option c (with arg) when it is one of the shared ones: 0 taken, 2 a bad value (the message
 * names CMD and the option), -1 not a shared option. */
int cli_encoder_opt(const char *cmd, int c, const char *arg, cli_encoder_opts *o);

/* After the options: the device list and the precision (GPU's, and the CPU's when given) into eo;
 * 0, or 2 after printing "splade-index CMD: DETAIL". */
int cli_encoder_opts_finish(const char *cmd, cli_encoder_opts *o);

#endif
