/* WordPiece tokenizer throughput on SciFact (documents then queries), one thread, no truncation.
 *
 * usage: bench_tokenizer [--vocab FILE] [--corpus DIR] [--repeat N] [--json]
 * Defaults: ../shared/data/bert-base-uncased/vocab.txt, ../shared/data/scifact, 5 passes; the
 * best pass is reported (the machine may be shared). Texts are read into memory first, so only
 * tokenization is timed. Skips (exit 0, message) when the shared data is absent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/fail.h"
#include "splade.h"
#include "splade/corpus.h"
#include "splade/tokenizer.h"

typedef struct {
    char *data;      /* all texts back to back */
    size_t *start;   /* text i = data[start[i] .. start[i+1]) */
    size_t n, cap, bytes;
} texts;

static int add_text(texts *t, const char *s, size_t len)
{
    if (t->n + 2 > t->cap) {
        t->cap = t->cap ? 2 * t->cap : 8192;
        size_t *ns = realloc(t->start, t->cap * sizeof *ns);
        if (!ns)
            return -1;
        t->start = ns;
    }
    char *nd = realloc(t->data, t->bytes + len + 1);
    if (!nd)
        return -1;
    t->data = nd;
    memcpy(t->data + t->bytes, s, len);
    t->start[t->n++] = t->bytes;
    t->bytes += len;
    t->start[t->n] = t->bytes;
    return 0;
}

static int read_jsonl(const char *path, texts *t)
{
    splade_corpus_reader *r;
    splade_doc d;
    int rc = splade_corpus_open(path, &r);
    if (rc != SPLADE_OK)
        return rc;
    while ((rc = splade_corpus_next(r, &d)) == 1)
        if (add_text(t, d.text, d.text_len))
            rc = splade_fail(SPLADE_ERR_NOMEM, "%s", path);
    splade_corpus_close(r);
    return rc;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One pass over every text; returns seconds, adds the ids produced to *tokens. */
static double pass(const splade_tokenizer *tok, const texts *t, int32_t *ids, int32_t max_len,
                   long long *tokens)
{
    double t0 = now();
    long long total = 0;
    for (size_t i = 0; i < t->n; i++) {
        int32_t n;
        splade_tokenize(tok, t->data + t->start[i], t->start[i + 1] - t->start[i], max_len, ids, &n);
        total += n;
    }
    double dt = now() - t0;
    *tokens = total;
    return dt;
}

int main(int argc, char **argv)
{
    const char *vocab = "../shared/data/bert-base-uncased/vocab.txt", *dir = "../shared/data/scifact";
    int repeat = 5, json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--vocab") && i + 1 < argc) vocab = argv[++i];
        else if (!strcmp(argv[i], "--corpus") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json")) json = 1;
        else { fprintf(stderr, "usage: %s [--vocab FILE] [--corpus DIR] [--repeat N] [--json]\n", argv[0]); return 2; }
    }
    char docs[4096], queries[4096];
    snprintf(docs, sizeof docs, "%s/corpus.jsonl", dir);
    snprintf(queries, sizeof queries, "%s/queries.jsonl", dir);
    if (access(vocab, R_OK) || access(docs, R_OK) || access(queries, R_OK)) {
        printf("bench_tokenizer: skipped (%s or %s not found)\n", vocab, docs);
        return 0;
    }
    splade_tokenizer *tok;
    texts t = {0};
    int rc = splade_tokenizer_load(vocab, 1, &tok);
    if (rc == SPLADE_OK)
        rc = read_jsonl(docs, &t);
    if (rc == SPLADE_OK)
        rc = read_jsonl(queries, &t);
    if (rc != SPLADE_OK) {
        fprintf(stderr, "bench_tokenizer: %s\n", splade_error_detail());
        return 1;
    }
    /* No truncation: room for every id (pieces never outnumber the text's bytes + 2 by much). */
    int32_t max_len = 1 << 20;
    int32_t *ids = malloc((size_t)max_len * sizeof *ids);
    long long tokens = 0;
    double best = 1e30;
    for (int r = 0; r < repeat; r++) {
        double dt = pass(tok, &t, ids, max_len, &tokens);
        best = dt < best ? dt : best;
    }
    double mb = t.bytes / 1e6;
    if (json)
        printf("{\"impl\": \"splade-index\", \"texts\": %zu, \"bytes\": %zu, \"tokens\": %lld, "
               "\"seconds\": %.6f, \"tokens_per_s\": %.0f, \"mb_per_s\": %.3f}\n",
               t.n, t.bytes, tokens, best, tokens / best, mb / best);
    else
        printf("bench_tokenizer: %zu texts, %.2f MB, %lld ids; best of %d: %.4f s, %.3g tokens/s, "
               "%.1f MB/s (1 thread)\n", t.n, mb, tokens, repeat, best, tokens / best, mb / best);
    free(ids);
    free(t.data);
    free(t.start);
    splade_tokenizer_free(tok);
    return 0;
}
