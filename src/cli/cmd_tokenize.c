/* splade-index tokenize: WordPiece ids of texts (arguments, or stdin one per line) as JSON arrays. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/fail.h"
#include "splade.h"
#include "splade/tokenizer.h"

#define DEFAULT_MAX_LENGTH 512

static const char usage_text[] =
    "usage: splade-index tokenize (--model DIR | --vocab FILE) [--cased] [--max-length N] [TEXT ...]\n"
    "\n"
    "Prints the WordPiece ids of each TEXT (or, without TEXT, of each line of standard input)\n"
    "as one JSON array per line: [CLS] pieces... [SEP], identical to Hugging Face's\n"
    "BertTokenizerFast.\n"
    "\n"
    "  --model DIR       use DIR/vocab.txt; DIR/tokenizer_config.json's do_lower_case, when\n"
    "                    present, picks the cased or uncased pipeline (default uncased)\n"
    "  --vocab FILE      use this vocab.txt (uncased unless --cased)\n"
    "  --cased           no lowercasing and no accent stripping (cased BERT models)\n"
    "  --max-length N    truncate to at most N ids, [CLS] and [SEP] included (N >= 2;\n"
    "                    default 512)\n"
    "  -h, --help        this text\n"
    "\n"
    "Invalid UTF-8 is not an error: each ill-formed sequence reads as U+FFFD, which BERT's\n"
    "text cleaning drops. Use -- before a TEXT that starts with '-'.\n";

typedef struct {
    const char *model_dir, *vocab;
    int cased;
    int32_t max_length;
} options;

/* do_lower_case from DIR/tokenizer_config.json: 1/0, or -1 when absent or not a boolean. */
static int config_lowercase(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    json_t *cfg = json_load_file(path, 0, NULL);
    json_t *v = cfg ? json_object_get(cfg, "do_lower_case") : NULL;
    int lower = json_is_boolean(v) ? json_is_true(v) : -1;
    json_decref(cfg);
    return lower;
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, options *o)
{
    static const struct option longs[] = {
        {"model", required_argument, 0, 'm'}, {"vocab", required_argument, 0, 'v'},
        {"cased", no_argument, 0, 'c'},       {"max-length", required_argument, 0, 'n'},
        {"help", no_argument, 0, 'h'},        {0, 0, 0, 0}};
    *o = (options){NULL, NULL, 0, DEFAULT_MAX_LENGTH};
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "h", longs, NULL)) != -1;) {
        switch (c) {
        case 'm': o->model_dir = optarg; break;
        case 'v': o->vocab = optarg; break;
        case 'c': o->cased = 1; break;
        case 'n':
            if (splade_cli_int("tokenize", "--max-length", optarg, 2, INT32_MAX / 4, &o->max_length))
                return 2;
            break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return 2;
        }
    }
    if (!o->model_dir == !o->vocab) {
        fprintf(stderr, "splade-index tokenize: give exactly one of --model DIR or --vocab FILE\n%s",
                usage_text);
        return 2;
    }
    return -1;
}

static int load(const options *o, splade_tokenizer **t)
{
    char path[4096];
    int lower = !o->cased;
    const char *vocab = o->vocab;
    if (o->model_dir) {
        snprintf(path, sizeof path, "%s/vocab.txt", o->model_dir);
        vocab = path;
        if (!o->cased && config_lowercase(o->model_dir) == 0)
            lower = 0;
    }
    return splade_tokenizer_load(vocab, lower, t);
}

static void print_ids(const int32_t *ids, int32_t n)
{
    putchar('[');
    for (int32_t i = 0; i < n; i++)
        printf(i ? ", %d" : "%d", ids[i]);
    fputs("]\n", stdout);
}

static int tokenize_one(const splade_tokenizer *t, const char *text, size_t len, int32_t max_len,
                        int32_t *ids)
{
    int32_t n;
    int rc = splade_tokenize(t, text, len, max_len, ids, &n);
    if (rc == SPLADE_OK)
        print_ids(ids, n);
    return rc == SPLADE_OK ? splade_cli_check_stdout() : rc; /* stop reading at a failed write */
}

static int tokenize_stdin(const splade_tokenizer *t, int32_t max_len, int32_t *ids)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = SPLADE_OK;
    while (rc == SPLADE_OK && (len = getline(&line, &cap, stdin)) >= 0) {
        if (len > 0 && line[len - 1] == '\n')
            len--;
        rc = tokenize_one(t, line, (size_t)len, max_len, ids);
    }
    if (rc == SPLADE_OK && ferror(stdin))
        rc = splade_fail(SPLADE_ERR_IO, "reading standard input: %s", strerror(errno));
    free(line);
    return rc;
}

int cmd_tokenize(int argc, char **argv)
{
    options o;
    int status = parse_args(argc, argv, &o);
    if (status >= 0)
        return status;
    splade_tokenizer *t = NULL;
    int32_t *ids = malloc((size_t)o.max_length * sizeof *ids);
    int rc = ids ? load(&o, &t) : splade_fail(SPLADE_ERR_NOMEM, "%d ids", o.max_length);
    for (int i = optind; rc == SPLADE_OK && i < argc; i++)
        rc = tokenize_one(t, argv[i], strlen(argv[i]), o.max_length, ids);
    if (rc == SPLADE_OK && optind == argc)
        rc = tokenize_stdin(t, o.max_length, ids);
    if (rc != SPLADE_OK)
        fprintf(stderr, "splade-index tokenize: %s: %s\n", splade_strerror(rc), splade_error_detail());
    splade_tokenizer_free(t);
    free(ids);
    return rc == SPLADE_OK ? 0 : 1;
}
