/* splade-index build: corpus JSONL (encoded with a model) or precomputed vectors -> index. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/build_opts.h"
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
    "                          [--precision bf16|fp32|int8] [--batch N] [--max-length N] [--threads N] [--quiet] [--skip-invalid]\n"
    "                          [--allow-empty] [--doc-scale X] [--memory SIZE]\n"
    "       splade-index build --vectors VECTORS.jsonl [-o DIR] [--threads N] [--quiet] [--skip-invalid] [--allow-empty]\n"
    "                          [--doc-scale X] [--memory SIZE]\n"
    "\n"
    "Encodes every document of CORPUS.jsonl ({\"_id\",\"title\",\"text\"} or {\"id\",\"contents\"}) and\n"
    "writes the index to DIR (default: $SPLADE_INDEX, else ./" SPLADE_INDEX_DEFAULT_DIR "). --vectors indexes\n"
    "precomputed vectors ({\"id\",\"vector\":{token:weight}}) with no model. The previous index in DIR\n"
    "is replaced atomically once the new one is complete and verified. --threads N: threads for encoding\n"
    "and inversion (default: all cores); the index does not depend on it. --precision: the GPU's number\n"
    "format, bf16 (default, fast) or fp32 (the CPU's vectors); the CPU computes in fp32 unless\n"
    "--precision bf16 is given (opt-in: AMX / AVX512-BF16 through oneDNN) or int8 (opt-in, CPU only:\n"
    "VNNI / AMX-INT8 through oneDNN).\n"
    "One build at a time per DIR (a second one fails naming the first). A build without postings does\n"
    "not replace an index that has some unless --allow-empty. --doc-scale X: quantize with this weight of\n"
    "one impact unit instead of the largest weight / 255 (to compare with a segmented index: see `info`).\n"
    "--memory SIZE (512M, 4G; default: a quarter of the physical memory): when the documents and their\n"
    "inversion would need more, they are written as a segment and the build goes on; all segments are\n"
    "installed together at the end, then, when there are more than 10, the smallest are merged so that 10\n"
    "remain (docs/FORMAT.md, \"Bounded-memory builds\").\n";

typedef struct {
    const char *out;
    float doc_scale;
} build_own; /* build's own options; the rest are shared with add (build_opts.h) */

static void usage(FILE *f, const char *cmd)
{
    (void)cmd;
    fputs(usage_text, f);
}

static int own_option(void *user, const char *cmd, int c, const char *arg)
{
    build_own *w = user;
    switch (c) {
    case 'o': w->out = arg; return 0;
    case 'D': return splade_cli_float(cmd, "--doc-scale", arg, 0, 3.4e38, &w->doc_scale);
    default: usage(stderr, cmd); return 2;
    }
}

static int parse(int argc, char **argv, splade_cli_build_opts *o, build_own *w)
{
    static const struct option longs[] = {
        {"output", required_argument, 0, 'o'}, {"doc-scale", required_argument, 0, 'D'}, {0, 0, 0, 0}};
    memset(w, 0, sizeof *w);
    splade_cli_build_cmd c = {"build", "o:", longs, own_option, usage, w};
    return splade_cli_build_parse(argc, argv, &c, o);
}

static void print_summary(const splade_cli_build_opts *o, const splade_build_stats *st, uint32_t skipped, double secs,
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

static int fail(int rc)
{
    fprintf(stderr, "splade-index build: %s: %s\n", splade_strerror(rc), splade_error_detail());
    return 1;
}

int cmd_build(int argc, char **argv)
{
    splade_cli_build_opts o;
    build_own w;
    int prc = parse(argc, argv, &o, &w);
    if (prc >= 0)
        return prc;
    const char *dir = splade_cli_index_dir(w.out);
    double t0 = splade_cli_now();
    splade_cli_bar bar;
    splade_ingest_opts io = {.skip_invalid = o.skip_invalid, .allow_empty = o.allow_empty};
    if (splade_cli_bar_start(&bar, o.quiet)) {
        io.progress = splade_cli_bar_progress;
        io.progress_user = &bar;
    }
    splade_index_builder *b = NULL;
    splade_cli_ingest_setup s = {.model = o.model, .label = o.model ? o.model : SPLADE_DEFAULT_MODEL,
                                 .doc_scale = w.doc_scale};
    int rc = splade_cli_ingest(&o, dir, &s, &io, &b);
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
