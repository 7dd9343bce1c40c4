/* splade-index fetch-model ORG/NAME: download a Hugging Face BERT masked-LM checkpoint into the
 * model cache (or --dest), then load it once so a broken download is reported now, not later. */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli_env.h"
#include "cli/cli_output.h"
#include "cli/commands.h"
#include "splade.h"
#include "splade/model.h"

static const char usage_text[] =
    "usage: splade-index fetch-model ORG/NAME [--dest DIR] [--quiet]\n"
    "\n"
    "Downloads config.json, vocab.txt, tokenizer_config.json (if present) and model.safetensors\n"
    "from $SPLADE_HF_ENDPOINT (default https://huggingface.co)/ORG/NAME/resolve/main/ into DIR\n"
    "(default: $SPLADE_CACHE, else ~/.cache/splade-index, then /ORG/NAME; `--model ORG/NAME` finds it\n"
    "there). An interrupted download resumes from FILE.part. $HF_TOKEN is sent when set.\n";

/* One line per file downloaded: its name and size. */
static void print_file(void *user, const char *name, uint64_t done, uint64_t total)
{
    (void)user;
    (void)total; /* the one call per file has done == total */
    fprintf(stderr, "  %-22s %10lld bytes\n", name, (long long)done);
}

int cmd_fetch_model(int argc, char **argv)
{
    static const struct option longs[] = {{"dest", required_argument, 0, 'd'},
                                          {"quiet", no_argument, 0, 'q'},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    const char *dest = NULL;
    int quiet = 0;
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "d:qh", longs, NULL)) != -1;) {
        switch (c) {
        case 'd': dest = optarg; break;
        case 'q': quiet = 1; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fputs(usage_text, stderr);
        return 2;
    }
    char dir[4096], cache[4096] = "";
    splade_model *m = NULL;
    splade_fetch_opts fo = {.dest = dest, .progress = quiet ? NULL : print_file};
    splade_cli_fetch_env(&fo);
    splade_cli_log_quiet(quiet);
    splade_cli_log_bare_info(1); /* "fetching ORG/NAME from URL into DIR" heads the report */
    int rc = dest ? SPLADE_OK : splade_cli_cache_dir(cache, sizeof cache);
    fo.cache_dir = cache;
    if (!rc)
        rc = splade_model_fetch(argv[optind], &fo, dir, sizeof dir);
    if (!rc)
        rc = splade_model_load(dir, &m);
    if (rc) {
        fprintf(stderr, "splade-index fetch-model: %s: %s\n", splade_strerror(rc), splade_error_detail());
        return 1;
    }
    if (!quiet) {
        const splade_config *c = splade_model_config(m);
        printf("%s: %d layers, hidden %d, vocabulary %d, fingerprint %016llx\n", dir, c->num_layers, c->hidden_size,
               c->vocab_size, (unsigned long long)splade_model_fingerprint(m));
    }
    splade_model_free(m);
    return 0;
}
