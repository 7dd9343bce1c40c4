/* splade-index export: SPLADE vectors as the request bodies of the engines users already run
 * (OpenSearch, Elasticsearch, Qdrant, Milvus) or as columns for Parquet, from a corpus (encoded here),
 * a vectors JSONL file or an index's stored vectors. Engine shapes: src/cli/export_format.c. */
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli/cli_env.h"
#include "cli/cli_util.h"
#include "cli/encoder_opts.h"
#include "cli/commands.h"
#include "cli/export_format.h"
#include "common/fail.h"
#include "splade.h"
#include "splade/corpus.h"
#include "splade/encoder.h"
#include "splade/index.h"
#include "splade/model.h"
#include "splade/tokenizer.h"
#include "splade/vectors.h"

static const char usage_text[] =
    "usage: splade-index export --format ENGINE (--input CORPUS.jsonl | --vectors VECTORS.jsonl | --index DIR)\n"
    "                           [--target NAME] [--field NAME] [--bulk-size N] [--output FILE.parquet]\n"
    "                           [encoder options]\n"
    "       splade-index export --format ENGINE --print-mapping [--target NAME] [--field NAME]\n"
    "\n"
    "ENGINE: opensearch (rank_features, token keys), opensearch-sparse (3.3+ sparse_vector, token-id keys),\n"
    "elasticsearch (sparse_vector, token keys; it keeps 9 significant bits of each weight, a relative\n"
    "error up to 0.4%), qdrant (points with indices/values, a body of --bulk-size points per line for\n"
    "PUT /collections/NAME/points), milvus (RESTful v2 insert bodies), columns (JSONL id, term_ids,\n"
    "weights), parquet (columns written by python3 -m splade_index.parquet to --output; needs pyarrow).\n"
    "OpenSearch / Elasticsearch output is _bulk NDJSON. A '.' in a token is written \"__\" where keys are\n"
    "tokens (those engines refuse dots in feature names). Token ids are the model's vocabulary rows:\n"
    "--vectors and an index built from --vectors need the model (--model).\n"
    "--index exports the stored vectors de-quantized: weight = impact x doc_scale, within doc_scale / 2\n"
    "of the encoder's (docs/FORMAT.md). --target (default splade) names the index or collection,\n"
    "--field (default splade) the vector field. --print-mapping prints the index/collection template.\n" CLI_ENCODER_HELP;

typedef struct {
    cli_encoder_opts enc; /* --model, --device, --precision and the encoder's numbers */
    const char *input, *vectors, *index, *format, *output;
    export_target t;
    int print_mapping, parquet;
} export_opts;

static int usage_error(const char *msg)
{
    fprintf(stderr, "splade-index export: %s\n%s", msg, usage_text);
    return 2;
}

static int check_sources(export_opts *o)
{
    if (o->parquet) {
        if (!o->output && !o->print_mapping)
            return usage_error("--format parquet writes a file: give --output FILE.parquet");
        o->t.engine = EXPORT_COLUMNS;
    } else if (o->output) {
        return usage_error("--output is for --format parquet (other formats go to standard output)");
    }
    int sources = !!o->input + !!o->vectors + !!o->index;
    if (o->print_mapping)
        return sources ? usage_error("--print-mapping takes no input") : -1;
    if (sources != 1)
        return usage_error("give one of --input, --vectors or --index");
    return -1;
}

static int parse(int argc, char **argv, export_opts *o)
{
    static const struct option longs[] = {
        CLI_ENCODER_LONGOPTS, {"input", required_argument, 0, 'i'},
        {"vectors", required_argument, 0, 'v'}, {"index", required_argument, 0, 'x'},
        {"format", required_argument, 0, 'f'}, {"target", required_argument, 0, 'n'},
        {"field", required_argument, 0, 'F'}, {"bulk-size", required_argument, 0, 'B'},
        {"output", required_argument, 0, 'o'}, {"print-mapping", no_argument, 0, 'M'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    o->t = (export_target){.target = "splade", .field = "splade", .batch = 256, .k = 10};
    optind = 1;
    for (int c, bad = 0; (c = getopt_long(argc, argv, "m:i:o:qh", longs, NULL)) != -1;) {
        const int shared = cli_encoder_opt("export", c, optarg, &o->enc); /* 0 taken, 2 bad, -1 not shared */
        if (shared > 0)
            return shared;
        if (shared == 0)
            continue;
        switch (c) {
        case 'B': bad = splade_cli_int("export", "--bulk-size", optarg, 1, 1000000, &o->t.batch); break;
        case 'i': o->input = optarg; break;
        case 'v': o->vectors = optarg; break;
        case 'x': o->index = optarg; break;
        case 'f': o->format = optarg; break;
        case 'n': o->t.target = optarg; break;
        case 'F': o->t.field = optarg; break;
        case 'o': o->output = optarg; break;
        case 'M': o->print_mapping = 1; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return 2;
        }
        if (bad)
            return bad;
    }
    if (optind < argc)
        return usage_error("unexpected argument (texts go in --input FILE)");
    if (!o->format)
        return usage_error("--format is required");
    o->parquet = !strcmp(o->format, "parquet");
    if (!o->parquet && export_parse_engine(o->format, &o->t.engine)) {
        fprintf(stderr, "splade-index export: unknown --format \"%s\" (choose %s|parquet)\n", o->format,
                export_engine_names);
        return 2;
    }
    if (!*o->t.target || !*o->t.field || strpbrk(o->t.target, "\"\\\n\t") || strpbrk(o->t.field, "\"\\\n\t"))
        return usage_error("--target and --field must be non-empty names without quotes, backslashes or tabs");
    if (cli_encoder_opts_finish("export", &o->enc))
        return 2;
    return check_sources(o);
}

/* ---- the output: standard output, or the Parquet writer's pipe ---- */

static FILE *out;

static int open_output(const export_opts *o, FILE **pipe)
{
    *pipe = NULL;
    out = stdout;
    if (!o->parquet)
        return SPLADE_OK;
    const char *py = getenv("SPLADE_PYTHON");
    char *cmd = NULL, *q = NULL;
    /* the path goes single-quoted to sh: a quote inside it is written '\'' */
    size_t n = strlen(o->output);
    if (!(q = malloc(4 * n + 3)))
        return splade_fail(SPLADE_ERR_NOMEM, "--output");
    char *w = q;
    *w++ = '\'';
    for (const char *p = o->output; *p; p++) {
        if (*p == '\'') {
            memcpy(w, "'\\''", 4);
            w += 4;
        } else {
            *w++ = *p;
        }
    }
    *w++ = '\'';
    *w = 0;
    int len = asprintf(&cmd, "%s -m splade_index.parquet %s", py && *py ? py : "python3", q);
    free(q);
    if (len < 0)
        return splade_fail(SPLADE_ERR_NOMEM, "--output");
    /* a writer that dies (no python3, no pyarrow) must be an error message, not a silent SIGPIPE
     * death at the next write: writes then fail with EPIPE and pclose reports the exit status */
    signal(SIGPIPE, SIG_IGN);
    *pipe = popen(cmd, "w");
    free(cmd);
    if (!*pipe)
        return splade_fail(SPLADE_ERR_IO, "starting python3 -m splade_index.parquet");
    out = *pipe;
    return SPLADE_OK;
}

static int close_output(FILE *pipe, int rc, const char *path)
{
    if (!pipe)
        return rc;
    int st = pclose(pipe);
    if (!rc && (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0))
        rc = splade_fail(SPLADE_ERR_IO, "%s: the Parquet writer (python3 -m splade_index.parquet, needs the "
                                        "splade_index package and pyarrow) failed", path);
    return rc;
}

/* ---- one vector in, one document out ---- */

typedef struct {
    const export_target *t;
    const splade_tokenizer *vocab; /* token -> id for inputs without ids; NULL when none is needed */
    const char *where;             /* input name for messages */
    int32_t *ids;
    const char **tokens;
    float *weights;
    int32_t cap;
    long n_docs;
} sink;

static int sink_reserve(sink *s, int32_t n)
{
    if (n <= s->cap)
        return SPLADE_OK;
    int32_t cap = n > 2 * s->cap ? n : 2 * s->cap;
    int32_t *ids = realloc(s->ids, (size_t)cap * sizeof *ids);
    if (ids)
        s->ids = ids;
    const char **tok = realloc(s->tokens, (size_t)cap * sizeof *tok);
    if (tok)
        s->tokens = tok;
    float *w = realloc(s->weights, (size_t)cap * sizeof *w);
    if (w)
        s->weights = w;
    if (!ids || !tok || !w)
        return splade_fail(SPLADE_ERR_NOMEM, "a vector of %d terms", (int)n);
    s->cap = cap;
    return SPLADE_OK;
}

static void sink_free(sink *s)
{
    free(s->ids);
    free(s->tokens);
    free(s->weights);
}

typedef struct {
    int32_t id;
    float w;
    const char *tok;
} term;

static int by_id(const void *a, const void *b)
{
    int32_t x = ((const term *)a)->id, y = ((const term *)b)->id;
    return (x > y) - (x < y);
}

/* s->ids/tokens/weights[0..n) filled: sorted by id where ids are keys (ascending indices), written. */
static int sink_emit(sink *s, const char *id, int32_t n)
{
    if (export_needs_ids(s->t->engine) && n > 1) {
        term *v = malloc((size_t)n * sizeof *v);
        if (!v)
            return splade_fail(SPLADE_ERR_NOMEM, "a vector of %d terms", (int)n);
        for (int32_t i = 0; i < n; i++)
            v[i] = (term){s->ids[i], s->weights[i], s->tokens[i]};
        qsort(v, (size_t)n, sizeof *v, by_id);
        for (int32_t i = 0; i < n; i++) {
            s->ids[i] = v[i].id;
            s->weights[i] = v[i].w;
            s->tokens[i] = v[i].tok;
        }
        free(v);
    }
    export_vec v = {id, n, s->tokens, s->ids, s->weights};
    export_write_doc(out, s->t, &v);
    s->n_docs++;
    return SPLADE_OK;
}

/* Token ids of s->tokens[0..n) from the vocabulary; a token it lacks is an error naming the input. */
static int sink_lookup_ids(sink *s, int32_t n, long line)
{
    for (int32_t i = 0; s->vocab && i < n; i++)
        if ((s->ids[i] = splade_tokenizer_id(s->vocab, s->tokens[i])) < 0)
            return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: token \"%s\" is not in the model's vocabulary (token-id "
                               "formats need the model the vectors came from: --model)", s->where, line, s->tokens[i]);
    return SPLADE_OK;
}

/* ---- sources ---- */

static int from_vectors(sink *s, const char *path)
{
    splade_vectors_reader *r = NULL;
    int rc = splade_vectors_open(path, &r);
    splade_vector_record rec;
    while (!rc) {
        int got = splade_vectors_next(r, &rec);
        if (got <= 0) {
            rc = got;
            break;
        }
        rc = sink_reserve(s, rec.n);
        for (int32_t i = 0; !rc && i < rec.n; i++) {
            s->tokens[i] = rec.tokens[i];
            s->weights[i] = rec.weights[i];
            s->ids[i] = -1;
        }
        if (!rc)
            rc = sink_lookup_ids(s, rec.n, rec.line);
        if (!rc)
            rc = sink_emit(s, rec.id, rec.n);
        if (!rc && s->n_docs % 4096 == 0)
            rc = splade_cli_check_stdout();
    }
    if (r)
        splade_vectors_close(r);
    return rc;
}

typedef struct {
    sink *s;
    splade_index *ix;
    int ids_are_rows; /* the index was built with a model: its term ids are vocabulary rows */
    char *buf;        /* the tokens of one vector, NUL-terminated, back to back */
    size_t buf_cap;
} index_walk;

static int index_doc(void *user, uint32_t doc, const int32_t *terms, const float *weights, int32_t n)
{
    index_walk *w = user;
    sink *s = w->s;
    size_t need = 1;
    for (int32_t i = 0; i < n; i++) {
        size_t len;
        splade_index_term(w->ix, terms[i], &len);
        need += len + 1;
    }
    if (need > w->buf_cap) {
        char *b = realloc(w->buf, need);
        if (!b)
            return splade_fail(SPLADE_ERR_NOMEM, "a vector's tokens");
        w->buf = b;
        w->buf_cap = need;
    }
    int rc = sink_reserve(s, n);
    char *p = w->buf;
    for (int32_t i = 0; !rc && i < n; i++) {
        size_t len;
        const char *tok = splade_index_term(w->ix, terms[i], &len);
        memcpy(p, tok, len);
        p[len] = 0;
        s->tokens[i] = p;
        p += len + 1;
        s->weights[i] = weights[i];
        s->ids[i] = w->ids_are_rows ? terms[i] : -1;
    }
    size_t idlen;
    const char *idp = splade_index_doc_id(w->ix, doc, &idlen);
    char id[SPLADE_ID_MAX + 1];
    snprintf(id, sizeof id, "%.*s", (int)idlen, idp);
    if (!rc && !w->ids_are_rows)
        rc = sink_lookup_ids(s, n, (long)doc + 1);
    if (!rc)
        rc = sink_emit(s, id, n);
    if (!rc && s->n_docs % 4096 == 0)
        rc = splade_cli_check_stdout();
    return rc;
}

static int from_index(sink *s, splade_index *ix)
{
    index_walk w = {s, ix, (splade_index_get_info(ix)->flags & SPLADE_IX_HAS_MODEL) != 0, NULL, 0};
    if (w.ids_are_rows)
        s->vocab = NULL;
    int rc = splade_index_doc_vectors(ix, index_doc, &w);
    free(w.buf);
    return rc;
}

enum { CHUNK = SPLADE_ENCODE_CHUNK };

static int encode_chunk(sink *s, splade_encoder *e, const splade_tokenizer *tk, char **ids, char **texts, int n)
{
    splade_sparse *vec = calloc((size_t)n, sizeof *vec);
    if (!vec)
        return splade_fail(SPLADE_ERR_NOMEM, "%d vectors", n);
    int cut = 0;
    int rc = splade_encoder_encode_chunked(e, (const char *const *)texts, NULL, n, CHUNK, vec, &cut);
    char unk[64];
    for (int i = 0; i < n; i++) {
        if (!rc)
            rc = sink_reserve(s, vec[i].n);
        for (int32_t j = 0; !rc && j < vec[i].n; j++) {
            s->ids[j] = vec[i].terms[j];
            s->weights[j] = vec[i].weights[j];
            s->tokens[j] = splade_tokenizer_token(tk, vec[i].terms[j]);
            if (!s->tokens[j]) { /* rows past vocab.txt: named as `encode` names them */
                snprintf(unk, sizeof unk, "[unused_id_%d]", (int)vec[i].terms[j]);
                s->tokens[j] = unk;
            }
        }
        if (!rc)
            rc = sink_emit(s, ids[i], vec[i].n);
        splade_sparse_free(&vec[i]);
    }
    free(vec);
    return rc ? rc : splade_cli_check_stdout();
}

static int from_corpus(sink *s, splade_encoder *e, const splade_tokenizer *tk, const char *path)
{
    splade_corpus_reader *r;
    int rc = splade_corpus_open(path, &r);
    if (rc)
        return rc;
    char *ids[CHUNK], *texts[CHUNK];
    int n = 0;
    splade_doc d;
    for (int got = 1; !rc && got == 1;) {
        got = splade_corpus_next(r, &d);
        if (got < 0) {
            rc = got;
        } else if (got == 1) {
            ids[n] = strdup(d.id);
            texts[n] = strdup(d.text);
            n++;
            if (!ids[n - 1] || !texts[n - 1])
                rc = splade_fail(SPLADE_ERR_NOMEM, "%s:%ld: copying the record", path, d.line);
        }
        if (!rc && n && (n == CHUNK || got == 0)) {
            rc = encode_chunk(s, e, tk, ids, texts, n);
            for (int i = 0; i < n; i++)
                free(ids[i]), free(texts[i]);
            n = 0;
        }
    }
    for (int i = 0; i < n; i++)
        free(ids[i]), free(texts[i]);
    splade_corpus_close(r);
    return rc;
}

/* ---- the command ---- */

static int fail(int rc)
{
    fprintf(stderr, "splade-index export: %s: %s\n", splade_strerror(rc), splade_error_detail());
    return 1;
}

static int load_model(const export_opts *o, splade_model **m)
{
    char dir[4096];
    int rc = splade_model_resolve(o->enc.model, splade_cli_model_paths(), dir, sizeof dir);
    return rc ? rc : splade_model_load(dir, m);
}

/* The vocabulary that turns tokens into ids (--vectors, or an index without a model, into an id format). */
static int load_vocab(const export_opts *o, splade_tokenizer **t)
{
    char dir[4096], path[4200];
    int rc = splade_model_resolve(o->enc.model, splade_cli_model_paths(), dir, sizeof dir);
    if (rc)
        return rc;
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    return splade_tokenizer_load(path, 1, t);
}

static int run_source(const export_opts *o, sink *s)
{
    if (o->input) {
        splade_model *m;
        splade_encoder *e = NULL;
        int rc = load_model(o, &m);
        if (rc)
            return rc;
        splade_encoder_opts eo = o->enc.eo;
        eo.max_batch_tokens = splade_cli_max_batch_tokens();
        rc = splade_encoder_create(m, &eo, &e);
        if (!rc)
            rc = from_corpus(s, e, splade_model_tokenizer(m), o->input);
        splade_encoder_free(e);
        splade_model_free(m);
        return rc;
    }
    splade_index *ix = NULL;
    splade_tokenizer *vocab = NULL;
    int rc = o->index ? splade_index_open(splade_cli_index_dir(o->index), &ix) : SPLADE_OK;
    int need_vocab = export_needs_ids(s->t->engine) &&
                     (!ix || !(splade_index_get_info(ix)->flags & SPLADE_IX_HAS_MODEL));
    if (!rc && need_vocab)
        rc = load_vocab(o, &vocab);
    s->vocab = vocab;
    if (!rc)
        rc = ix ? from_index(s, ix) : from_vectors(s, o->vectors);
    if (ix)
        splade_index_close(ix);
    splade_tokenizer_free(vocab);
    return rc;
}

int cmd_export(int argc, char **argv)
{
    export_opts o;
    int st = parse(argc, argv, &o);
    if (st >= 0)
        return st;
    if (o.print_mapping) {
        export_print_mapping(stdout, &o.t);
        return 0;
    }
    FILE *pipe;
    int rc = open_output(&o, &pipe);
    if (rc)
        return fail(rc);
    sink s = {.t = &o.t, .where = o.input ? o.input : o.vectors ? o.vectors : o.index};
    rc = run_source(&o, &s);
    if (!rc)
        export_finish(out, &o.t);
    sink_free(&s);
    rc = close_output(pipe, rc, o.output);
    if (!rc && !o.enc.eo.quiet)
        fprintf(stderr, "splade-index export: %ld documents as %s\n", s.n_docs, o.format);
    return rc ? fail(rc) : 0;
}
