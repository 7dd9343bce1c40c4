/* splade-index add / update: encode a corpus (or read --vectors) and append it to an existing index
 * as a new segment (include/splade/segments.h); `update` replaces documents whose id is already live. */
#include <stdio.h>
#include <string.h>

#include "cli/build_opts.h"
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
    "usage: splade-index %s CORPUS.jsonl [-i DIR] [--model DIR|NAME] [--device auto|cpu|cuda|cuda:all|cuda:I,J] [--precision bf16|fp32|int8]\n"
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
    const char *index;
    int no_merge, max_segments;
} add_own; /* add's own options; the rest are build's (build_opts.h) */

static void usage(FILE *f, const char *cmd)
{
    fprintf(f, usage_fmt, cmd, cmd, SPLADE_MERGE_POLICY_SEGMENTS);
}

static int own_option(void *user, const char *cmd, int c, const char *arg)
{
    add_own *w = user;
    switch (c) {
    case 'i': w->index = arg; return 0;
    case 'N': w->no_merge = 1; return 0;
    case 'S': return splade_cli_int(cmd, "--max-segments", arg, 1, 1 << 20, &w->max_segments);
    default: usage(stderr, cmd); return 2;
    }
}

static int parse(int argc, char **argv, const char *cmd, splade_cli_build_opts *o, add_own *w)
{
    static const struct option longs[] = {
        {"index", required_argument, 0, 'i'}, {"no-merge", no_argument, 0, 'N'},
        {"max-segments", required_argument, 0, 'S'}, {0, 0, 0, 0}};
    memset(w, 0, sizeof *w);
    splade_cli_build_cmd c = {cmd, "i:", longs, own_option, usage, w};
    return splade_cli_build_parse(argc, argv, &c, o);
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
    splade_cli_build_opts o;
    add_own w;
    int prc = parse(argc, argv, cmd, &o, &w);
    if (prc >= 0)
        return prc;
    const char *dir = splade_cli_index_dir(w.index);
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
    /* the index's model unless --model says otherwise (the library refuses another fingerprint) */
    splade_cli_ingest_setup s = {.max_length = in.max_length, .append = 1};
    if (rc == 0) {
        s.model = o.model ? o.model : *in.model_dir ? in.model_dir : in.model_name;
        s.label = o.model ? o.model : in.model_name;
    }
    if (rc == 0 && !o.vectors && !(in.flags & SPLADE_IX_HAS_MODEL))
        rc = splade_fail(SPLADE_ERR_MISMATCH, "%s was built from --vectors: add --vectors FILE to it", dir);
    else if (rc == 0)
        rc = splade_cli_ingest(&o, dir, &s, &io, &b);
    splade_add_stats st;
    if (rc == 0) {
        splade_add_opts ao;
        splade_add_opts_init(&ao);
        ao.update = update;
        ao.no_merge = w.no_merge;
        ao.max_segments = w.max_segments;
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
