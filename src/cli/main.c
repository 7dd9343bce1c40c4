/* splade-index: one binary, one subcommand per pipeline stage. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli_output.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "splade.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"build", cmd_build, "encode a corpus (JSONL) and write an inverted index"},
    {"add", cmd_add, "encode documents and append them to an index as a new segment"},
    {"update", cmd_update, "like add, replacing documents whose id is already in the index"},
    {"delete", cmd_delete, "delete documents from an index by id"},
    {"merge", cmd_merge, "merge an index's segments, dropping deleted documents"},
    {"info", cmd_info, "print an index's segments, documents, postings, size and model"},
    {"query", cmd_query, "encode a query and print the top documents"},
    {"encode", cmd_encode, "print SPLADE vectors of texts as JSONL"},
    {"export", cmd_export, "write vectors as OpenSearch/Elasticsearch/Qdrant/Milvus bodies or Parquet"},
    {"tokenize", cmd_tokenize, "print WordPiece ids of each input line as JSON arrays"},
    {"eval", cmd_eval, "score a TREC run against qrels (nDCG, MRR, recall)"},
    {"fetch-model", cmd_fetch_model, "download a model from the Hugging Face hub"},
    {"bench-lmhead", cmd_bench_lmhead, "fused vs naive LM head on the GPU: time and memory"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: splade-index <command> [options]   (splade-index <command> --help)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-13s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
    /* A file over RLIMIT_FSIZE (`ulimit -f`) must be an error (EFBIG) that the writer reports and
     * cleans up after, not a silent kill leaving a temporary file (SIGXFSZ's default). */
    signal(SIGXFSZ, SIG_IGN);
    splade_cli_log_install(); /* the library's notices and warnings on stderr, as "splade-index: ..." */
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return splade_cli_finish_stdout("", argc < 2 ? 2 : 0);
    }
    if (!strcmp(argv[1], "--version")) {
        printf("splade-index %s\n", splade_version());
        return splade_cli_finish_stdout("", 0);
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name)) /* every command's output is checked once, here */
            return splade_cli_finish_stdout(commands[i].name, commands[i].run(argc - 1, argv + 1));
    fprintf(stderr, "splade-index: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
