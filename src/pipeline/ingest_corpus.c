/* build CORPUS.jsonl: stream the corpus, encode chunks of documents (the encoder sorts each chunk
 * by length into batches), attach the vectors to the builder (include/splade/pipeline.h). Documents
 * keep their corpus order as internal ids whatever order they are encoded in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "common/phase.h"
#include "common/log.h"
#include "index/progress.h"
#include "splade.h"
#include "splade/build.h"
#include "splade/pipeline.h"
#include "splade/corpus.h"

typedef struct {
    char **texts;
    size_t *lens;
    uint32_t *docs;
    int n, cap;
} chunk;

static int chunk_add(chunk *c, const splade_doc *d, uint32_t doc)
{
    char *t = malloc(d->text_len + 1);
    if (!t)
        return splade_fail(SPLADE_ERR_NOMEM, "text of %zu bytes", d->text_len);
    memcpy(t, d->text, d->text_len);
    t[d->text_len] = '\0';
    c->texts[c->n] = t;
    c->lens[c->n] = d->text_len;
    c->docs[c->n++] = doc;
    return SPLADE_OK;
}

static int chunk_flush(chunk *c, splade_index_builder *b, splade_encoder *enc)
{
    splade_sparse *v = calloc((size_t)c->n + 1, sizeof *v);
    int truncated = 0, rc = v ? SPLADE_OK : splade_fail(SPLADE_ERR_NOMEM, "vectors");
    if (rc == 0 && c->n)
        rc = splade_encoder_encode(enc, (const char *const *)c->texts, c->lens, c->n, v, &truncated);
    const double t0 = splade_phase_now();
    for (int i = 0; i < c->n; i++) {
        if (rc == 0)
            rc = splade_builder_set_vector(b, c->docs[i], v[i].terms, v[i].weights, v[i].n);
        splade_sparse_free(&v[i]);
        free(c->texts[i]);
    }
    free(v);
    splade_phase_since(SPLADE_PH_SET_VECTOR, t0);
    splade_builder_add_truncated(b, (uint32_t)truncated);
    c->n = 0;
    return rc;
}

static int chunk_init(chunk *c, int cap)
{
    c->cap = cap;
    c->n = 0;
    c->texts = malloc((size_t)cap * sizeof *c->texts);
    c->lens = malloc((size_t)cap * sizeof *c->lens);
    c->docs = malloc((size_t)cap * sizeof *c->docs);
    return c->texts && c->lens && c->docs ? SPLADE_OK : splade_fail(SPLADE_ERR_NOMEM, "chunk of %d texts", cap);
}

static void chunk_free(chunk *c)
{
    for (int i = 0; i < c->n; i++)
        free(c->texts[i]);
    free(c->texts);
    free(c->lens);
    free(c->docs);
}

/* The caller's flag, read before each chunk is encoded. */
static int cancelled(const splade_ingest_opts *opts, uint32_t done, const char *path)
{
    if (!opts->cancel || !*opts->cancel)
        return SPLADE_OK;
    return splade_fail(SPLADE_ERR_CANCELLED, "%s: ingest cancelled by the caller after %u documents", path, done);
}

/* Next valid document, skipping (and counting) malformed lines when asked to. */
static int next_doc(splade_corpus_reader *r, splade_doc *d, splade_ingest_opts *opts)
{
    for (;;) {
        int rc = splade_corpus_next(r, d);
        if (rc != SPLADE_ERR_FORMAT || !opts->skip_invalid)
            return rc;
        splade_log(SPLADE_LOG_WARNING, "skipped: %s", splade_error_detail());
        opts->skipped++;
    }
}

int splade_ingest_corpus(splade_index_builder *b, const char *path, splade_encoder *enc, int chunk_docs,
                         splade_ingest_opts *opts)
{
    splade_corpus_reader *r;
    int rc = splade_corpus_open(path, &r);
    if (rc < 0)
        return rc;
    chunk c;
    rc = chunk_init(&c, chunk_docs > 0 ? chunk_docs : 256);
    splade_progress pb;
    splade_progress_start(&pb, opts->progress, opts->progress_user, "documents",
                          opts->progress ? splade_count_lines(path) : 0); /* a pass over the file */
    splade_doc d;
    uint32_t encoded = 0;
    double t0 = splade_phase_now();
    while (rc == 0 && (rc = next_doc(r, &d, opts)) == 1) {
        uint32_t doc;
        rc = splade_builder_add_doc(b, path, d.id, d.title, d.body, d.line, &doc);
        if (rc == 0)
            rc = chunk_add(&c, &d, doc);
        t0 = splade_phase_since(SPLADE_PH_READ, t0);
        if (rc == 0 && c.n == c.cap && (rc = cancelled(opts, encoded, path)) == 0) {
            encoded += (uint32_t)c.n;
            rc = chunk_flush(&c, b, enc);
            splade_progress_update(&pb, encoded);
            t0 = splade_phase_now();
        }
    }
    if (rc == 0 && c.n)
        rc = cancelled(opts, encoded, path);
    if (rc == 0)
        rc = chunk_flush(&c, b, enc);
    if (rc != SPLADE_ERR_CANCELLED) /* done == total would tell the caller the stage completed */
        splade_progress_finish(&pb, splade_builder_n_docs(b));
    chunk_free(&c);
    splade_corpus_close(r);
    return rc < 0 ? rc : splade_ingest_check_found(b, path, opts);
}
