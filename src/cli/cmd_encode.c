/* splade-index encode: texts (arguments or a JSONL corpus) -> SPLADE vectors as JSONL
 * {"id": ..., "vector": {"token": weight, ...}}, the format Seismic and Anserini read. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_env.h"
#include "cli/cli_json.h"
#include "cli/cli_output.h"
#include "cli/cli_util.h"
#include "cli/export_format.h"
#include "cli/commands.h"
#include "cli/corpus_prefetch.h"
#include "cli/encoder_opts.h"
#include "cli/vector_writer.h"
#include "common/fail.h"
#include "splade.h"
#include "splade/corpus.h"
#include "splade/encoder.h"
#include "splade/model.h"

static const char usage_text[] =
    "usage: splade-index encode [encoder options]\n"
    "                           [--queries --format opensearch|opensearch-sparse|elasticsearch|qdrant|milvus\n"
    "                            [--target NAME] [--field NAME] [--size K]]\n"
    "                           (TEXT... | --input FILE.jsonl)\n"
    "\n"
    "Prints one JSON line per text: {\"id\": ..., \"vector\": {\"token\": weight, ...}}. TEXT arguments\n"
    "get ids \"0\", \"1\", ...; --input reads BEIR ({\"_id\",\"title\",\"text\"}) or Anserini\n"
    "({\"id\",\"contents\"}) JSONL (\"-\": standard input). Texts longer than --max-length tokens are\n"
    "truncated; the count goes to stderr.\n"
    "--queries --format ENGINE: each text's search request body for that engine instead, one per line in\n"
    "input order (index/collection --target, vector --field, both default splade; --size hits, default\n"
    "10), matching the documents of `splade-index export --format ENGINE`.\n" CLI_ENCODER_HELP;

/* Texts handed to the encoder at once: bounds memory on big corpora, and fixes which texts are batched
 * together, hence the vectors' last bits (include/splade/encoder.h, splade_encoder_encode_chunked). */
enum { CHUNK = SPLADE_ENCODE_CHUNK };

typedef struct {
    cli_encoder_opts enc; /* --model, --device, --precision and the encoder's numbers */
    const char *input;
    char **texts;
    int n_texts;
    int queries;
    const char *format;
    export_target query; /* --queries --format: the engine's query body */
} encode_opts;

static int parse(int argc, char **argv, encode_opts *o)
{
    static const struct option longs[] = {
        CLI_ENCODER_LONGOPTS, {"input", required_argument, 0, 'i'},
        {"queries", no_argument, 0, 'Q'}, {"format", required_argument, 0, 'f'},
        {"target", required_argument, 0, 'n'}, {"field", required_argument, 0, 'F'},
        {"size", required_argument, 0, 'K'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    o->query = (export_target){.target = "splade", .field = "splade", .k = 10};
    optind = 1;
    for (int c, bad = 0; (c = getopt_long(argc, argv, "m:i:qh", longs, NULL)) != -1;) {
        const int shared = cli_encoder_opt("encode", c, optarg, &o->enc); /* 0 taken, 2 bad, -1 not shared */
        if (shared > 0)
            return shared;
        if (shared == 0)
            continue;
        switch (c) {
        case 'i': o->input = optarg; break;
        case 'Q': o->queries = 1; break;
        case 'f': o->format = optarg; break;
        case 'n': o->query.target = optarg; break;
        case 'F': o->query.field = optarg; break;
        case 'K': bad = splade_cli_int("encode", "--size", optarg, 1, 10000, &o->query.k); break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return 2;
        }
        if (bad)
            return bad;
    }
    o->texts = argv + optind;
    o->n_texts = argc - optind;
    if (cli_encoder_opts_finish("encode", &o->enc))
        return 2;
    if (!o->queries != !o->format) {
        fprintf(stderr, "splade-index encode: --queries and --format go together\n%s", usage_text);
        return 2;
    }
    if (o->format && (export_parse_engine(o->format, &o->query.engine) || o->query.engine == EXPORT_COLUMNS)) {
        fprintf(stderr, "splade-index encode: unknown --format \"%s\" (choose "
                        "opensearch|opensearch-sparse|elasticsearch|qdrant|milvus)\n", o->format);
        return 2;
    }
    if (!*o->query.target || !*o->query.field || strpbrk(o->query.target, "\"\\\n\t") ||
        strpbrk(o->query.field, "\"\\\n\t")) {
        fprintf(stderr, "splade-index encode: --target and --field must be non-empty names without quotes, "
                        "backslashes or tabs\n");
        return 2;
    }
    if (!o->n_texts == !o->input) {
        fprintf(stderr, "splade-index encode: give TEXT arguments or --input FILE, not both\n%s", usage_text);
        return 2;
    }
    return -1; /* go on */
}

static const export_target *query_body; /* --queries --format: set by run() */
static const splade_model *query_model; /* its model: an inference-free one has a query table */

/* The engine's search body for one query: tokens and ids side by side (export_format.h). */
static int print_query(FILE *f, const char *id, const splade_sparse *v, const splade_tokenizer *t)
{
    const char **tok = malloc(((size_t)v->n + 1) * sizeof *tok);
    char (*unk)[32] = malloc(((size_t)v->n + 1) * sizeof *unk);
    if (!tok || !unk) {
        free(tok), free(unk);
        return splade_fail(SPLADE_ERR_NOMEM, "query %s: %d terms", id, (int)v->n);
    }
    for (int32_t i = 0; i < v->n; i++) {
        tok[i] = splade_tokenizer_token(t, v->terms[i]);
        if (!tok[i]) {
            snprintf(unk[i], sizeof unk[i], "[unused_id_%d]", (int)v->terms[i]);
            tok[i] = unk[i];
        }
    }
    export_vec q = {id, v->n, tok, v->terms, v->weights};
    export_write_query(f, query_body, &q);
    free(tok);
    free(unk);
    return SPLADE_OK;
}

/* Encodes texts[0..n) (CHUNK at a time, as many as TEXT arguments there are or one chunk of --input)
 * and hands the vectors with their ids to the writer, which prints them in order while the next
 * chunk encodes. ids[0..n) become the writer's (freed here when the encoding fails). */
static int encode_chunk(splade_encoder *e, vector_writer *w, char **ids, char **texts, int n, long *truncated)
{
    splade_sparse *vec = calloc((size_t)(n ? n : 1), sizeof *vec);
    if (!vec) {
        for (int i = 0; i < n; i++)
            free(ids[i]);
        return splade_fail(SPLADE_ERR_NOMEM, "encode: %d vectors", n);
    }
    int cut = 0, rc = SPLADE_OK;
    if (query_body && splade_model_has_query_table(query_model)) /* inference-free: what `query` sends */
        for (int i = 0; i < n && rc == 0; i++)
            rc = splade_model_query_vector(query_model, texts[i], strlen(texts[i]),
                                           splade_model_config(query_model)->max_position, &vec[i]);
    else
        rc = splade_encoder_encode_chunked(e, (const char *const *)texts, NULL, n, CHUNK, vec, &cut);
    if (query_body) { /* query bodies: few, printed here in order (the writer formats vectors JSONL) */
        for (int i = 0; i < n; i++) {
            if (!rc)
                rc = print_query(stdout, ids[i], &vec[i], splade_model_tokenizer(query_model));
            free(ids[i]);
            splade_sparse_free(&vec[i]);
        }
        free(vec);
        return rc ? rc : splade_cli_check_stdout();
    }
    for (int s = 0; s < n; s += CHUNK) { /* in CHUNK pieces: TEXT arguments can be any number */
        const int k = n - s < CHUNK ? n - s : CHUNK;
        if (!rc) {
            rc = vector_writer_put(w, ids + s, vec + s, k);
        } else {
            for (int i = s; i < s + k; i++) {
                free(ids[i]);
                splade_sparse_free(&vec[i]);
            }
        }
    }
    free(vec);
    *truncated += cut;
    return rc;
}

static void free_texts(char **texts, int n)
{
    for (int i = 0; i < n; i++)
        free(texts[i]);
}

/* --input: chunks read a chunk ahead on the prefetch thread, encoded here, written by the writer. A
 * chunk is CHUNK texts on the CPU (the output streams every few seconds), SPLADE_ENCODE_GROUPS CHUNKs
 * on GPUs so that a list's GPUs share the batches of one call (the vectors are the same: CHUNK stays
 * the grouping). */
static int encode_file(splade_encoder *e, vector_writer *w, const char *path, long *total, long *truncated)
{
    const int read = CHUNK * (splade_encoder_device(e) == SPLADE_DEVICE_CPU ? 1 : SPLADE_ENCODE_GROUPS);
    corpus_prefetch *p = NULL;
    char **ids = calloc((size_t)read, sizeof *ids), **texts = calloc((size_t)read, sizeof *texts);
    int rc = ids && texts ? corpus_prefetch_open(path, read, &p) : splade_fail(SPLADE_ERR_NOMEM, "encode: chunk");
    for (int n = 0, more = 1; !rc && more;) {
        rc = corpus_prefetch_next(p, ids, texts, &n, &more); /* an error: detail reads PATH:LINE: reason */
        if (!rc && n) {
            rc = encode_chunk(e, w, ids, texts, n, truncated);
            *total += n;
            free_texts(texts, n);
        }
    }
    corpus_prefetch_close(p);
    free(ids);
    free(texts);
    return rc;
}

static int fail(int rc)
{
    fprintf(stderr, "splade-index encode: %s: %s\n", splade_strerror(rc), splade_error_detail());
    return 1;
}

static int run(const encode_opts *o, splade_model *m, splade_gpu_warmup *wu)
{
    splade_encoder *e;
    splade_encoder_opts eo = o->enc.eo;
    eo.max_batch_tokens = splade_cli_max_batch_tokens();
    query_body = o->format ? &o->query : NULL;
    query_model = m;
    int rc = splade_encoder_create(m, &eo, &e);
    splade_encoder_warm_finish(wu); /* after create: the warm-up's last step overlapped the weights' upload */
    if (rc)
        return fail(rc);
    long total = 0, truncated = 0;
    vector_writer *w = NULL;
    rc = vector_writer_open(stdout, splade_model_tokenizer(m), o->enc.eo.threads, &w);
    if (rc == 0 && o->input) {
        rc = encode_file(e, w, o->input, &total, &truncated);
    } else if (rc == 0) {
        char **ids = calloc((size_t)o->n_texts, sizeof *ids);
        for (int i = 0; ids && i < o->n_texts; i++)
            if (asprintf(&ids[i], "%d", i) < 0)
                ids[i] = NULL;
        rc = ids ? encode_chunk(e, w, ids, o->texts, o->n_texts, &truncated)
                 : splade_fail(SPLADE_ERR_NOMEM, "ids");
        free(ids);
        total = o->n_texts;
    }
    int wrc = vector_writer_close(w); /* everything handed over is written, even after a later error */
    rc = rc ? rc : wrc;
    if (!rc && !o->enc.eo.quiet && truncated)
        fprintf(stderr, "splade-index encode: %ld of %ld texts truncated at %d tokens\n", truncated, total,
                (int)splade_encoder_max_length(e));
    splade_encoder_free(e);
    return rc ? fail(rc) : 0;
}

int cmd_encode(int argc, char **argv)
{
    encode_opts o;
    int st = parse(argc, argv, &o);
    if (st >= 0)
        return st;
    char dir[4096];
    splade_model *m;
    /* one text on the command line is one forward: say so, and a GPU encoder then needs no cuBLASLt
     * (its own GEMMs for single sequences: src/encoder/gpu_gemm_small.cu), which starts faster */
    if (!o.input && o.n_texts == 1 && o.enc.eo.batch_size == 0)
        o.enc.eo.batch_size = 1;
    /* the GPU code loads and the CUDA context starts while the model loads */
    splade_gpu_warmup *wu = splade_encoder_warm_start(&o.enc.eo);
    int rc = splade_model_resolve(o.enc.model, splade_cli_model_paths(), dir, sizeof dir);
    if (!rc)
        rc = splade_model_load(dir, &m);
    if (rc) {
        splade_encoder_warm_finish(wu);
        return fail(rc);
    }
    st = run(&o, m, wu);
    splade_model_free(m);
    return st;
}
