/* build CORPUS.jsonl: stream the corpus, encode chunks of documents (the encoder sorts each chunk
 * by length into batches), attach the vectors to the builder (include/splade/pipeline.h). Documents
 * keep their corpus order as internal ids whatever order they are encoded in.
 *
 * A pipeline (issue #13 item 4): this thread reads and tokenizes chunk k+1 while an encoding thread
 * runs chunk k on the device, and hands chunk k-1's documents and vectors to the builder meanwhile.
 * Two chunks can wait for the encoder, so it starts the next one as soon as it finishes one. The
 * chunks, their order and every builder call (add_doc then set_vector, chunk by chunk) are those of
 * a serial run, so the index is the same byte for byte, segment boundaries of a bounded build too. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/corpus_batch.h"
#include "common/cpu_team.h"
#include "common/fail.h"
#include "common/log.h"
#include "common/phase.h"
#include "common/settings.h"
#include "encoder/encoder_tokenize.h"
#include "index/progress.h"
#include "splade.h"
#include "splade/build.h"
#include "splade/corpus.h"
#include "splade/pipeline.h"

/* One chunk's documents: the parsed lines that hold them, pointers to what add_doc and the
 * tokenizer need, their ids once tokenized and their vectors once encoded. */
typedef struct {
    splade_corpus_batch lines; /* owns every string below */
    const char **texts, **ids, **titles, **bodies;
    size_t *lens;
    long *line_nos;
    uint32_t *docs;     /* the builder's ids (chunk_store) */
    int n, cap;
    int32_t *tok, *off; /* packed token ids (splade_encoder_tokenize_texts) */
    int truncated;
    splade_sparse *vec;
    int rc;             /* the encoding's status; its detail below */
    char detail[1024];
    int done;           /* the encoding thread finished it */
} chunk;

static int chunk_init(chunk *c, int cap)
{
    memset(c, 0, sizeof *c);
    c->cap = cap;
    c->texts = calloc((size_t)cap, sizeof *c->texts);
    c->ids = calloc((size_t)cap, sizeof *c->ids);
    c->titles = calloc((size_t)cap, sizeof *c->titles);
    c->bodies = calloc((size_t)cap, sizeof *c->bodies);
    c->lens = calloc((size_t)cap, sizeof *c->lens);
    c->line_nos = calloc((size_t)cap, sizeof *c->line_nos);
    c->vec = calloc((size_t)cap, sizeof *c->vec);
    c->docs = calloc((size_t)cap, sizeof *c->docs);
    return c->texts && c->ids && c->titles && c->bodies && c->lens && c->line_nos && c->vec && c->docs
               ? SPLADE_OK
               : splade_fail(SPLADE_ERR_NOMEM, "chunk of %d texts", cap);
}

/* Back to empty: the documents and the vectors freed. */
static void chunk_clear(chunk *c)
{
    for (int i = 0; i < c->n; i++)
        splade_sparse_free(&c->vec[i]);
    splade_corpus_batch_clear(&c->lines);
    free(c->tok);
    free(c->off);
    c->tok = c->off = NULL;
    c->n = c->truncated = c->rc = c->done = 0;
}

static void chunk_free(chunk *c)
{
    if (c->texts)
        chunk_clear(c);
    splade_corpus_batch_free(&c->lines);
    free(c->texts);
    free(c->ids);
    free(c->titles);
    free(c->bodies);
    free(c->lens);
    free(c->line_nos);
    free(c->vec);
    free(c->docs);
}

static void chunk_add(chunk *c, const splade_doc *d)
{
    const int i = c->n++;
    c->texts[i] = d->text;
    c->ids[i] = d->id;
    c->titles[i] = d->title;
    c->bodies[i] = d->body;
    c->lens[i] = d->text_len;
    c->line_nos[i] = d->line;
}

/* The encoding thread: takes submitted chunks in order, encodes each (unless the caller's flag is
 * up by then: the chunk is dropped, as a serial run would never have encoded it). */
typedef struct {
    splade_encoder *enc;
    int group; /* texts sorted and batched apart (splade_encoder_encode_ids_grouped) */
    const volatile int *cancel;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    chunk *queue[2];
    int head, count, quit;
} encoder_thread;

static void encode_one(encoder_thread *t, chunk *c)
{
    if (t->cancel && *t->cancel) {
        c->rc = SPLADE_ERR_CANCELLED;
        snprintf(c->detail, sizeof c->detail, "cancelled");
        return;
    }
    c->rc = c->n ? splade_encoder_encode_ids_grouped(t->enc, c->tok, c->off, c->n, t->group, c->vec) : SPLADE_OK;
    if (c->rc)
        snprintf(c->detail, sizeof c->detail, "%s", splade_error_detail());
}

static void *encode_loop(void *arg)
{
    encoder_thread *t = arg;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (!t->count && !t->quit)
            pthread_cond_wait(&t->cv, &t->mu);
        if (!t->count)
            break;
        chunk *c = t->queue[t->head];
        pthread_mutex_unlock(&t->mu);
        encode_one(t, c);
        pthread_mutex_lock(&t->mu);
        t->head = (t->head + 1) % 2;
        t->count--;
        c->done = 1;
        pthread_cond_broadcast(&t->cv);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

static void submit(encoder_thread *t, chunk *c)
{
    pthread_mutex_lock(&t->mu);
    c->done = 0;
    t->queue[(t->head + t->count) % 2] = c;
    t->count++;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static void wait_done(encoder_thread *t, const chunk *c)
{
    pthread_mutex_lock(&t->mu);
    while (!c->done)
        pthread_cond_wait(&t->cv, &t->mu);
    pthread_mutex_unlock(&t->mu);
}

/* The caller's flag, read before each chunk is encoded. */
static int cancelled(const splade_ingest_opts *opts, uint32_t done, const char *path)
{
    if (!opts->cancel || !*opts->cancel)
        return SPLADE_OK;
    return splade_fail(SPLADE_ERR_CANCELLED, "%s: ingest cancelled by the caller after %u documents", path, done);
}

/* Appends the batch's lines from `first` on to c in file order: their documents, or, for a bad
 * line, a warning and a count when skipping bad lines is asked for, else its error. */
static int take_lines(chunk *c, int first, splade_ingest_opts *opts)
{
    for (int i = first; i < c->lines.n; i++) {
        const splade_corpus_line *l = c->lines.lines[i];
        if (l->rc == 1) {
            chunk_add(c, &l->rec.doc);
            continue;
        }
        const char *detail = l->detail ? l->detail : "out of memory";
        if (l->rc != SPLADE_ERR_FORMAT || !opts->skip_invalid)
            return splade_fail(l->rc, "%s", detail);
        splade_log(SPLADE_LOG_WARNING, "skipped: %s", detail);
        opts->skipped++;
    }
    return SPLADE_OK;
}

/* Fills c with up to c->cap documents (their lines parsed on parse_threads threads) and tokenizes
 * them; 1 when the corpus may have more. */
static int read_chunk(splade_corpus_reader *r, chunk *c, splade_encoder *enc, splade_ingest_opts *opts,
                      int parse_threads)
{
    int rc = SPLADE_OK, got = 1;
    const double t0 = splade_phase_now();
    while (rc == 0 && c->n < c->cap && got > 0) {
        const int first = c->lines.n;
        got = splade_corpus_batch_read(r, &c->lines, c->cap - c->n, parse_threads);
        rc = got < 0 ? got : take_lines(c, first, opts);
    }
    splade_phase_since(SPLADE_PH_READ, t0);
    if (rc < 0)
        return rc;
    int trc = c->n ? splade_encoder_tokenize_texts(enc, c->texts, c->lens, c->n, &c->tok, &c->off, &c->truncated)
                   : SPLADE_OK;
    return trc < 0 ? trc : c->n == c->cap;
}

/* Chunk c, encoded, into the builder: its documents, then their vectors, as a serial run calls them. */
static int chunk_store(chunk *c, splade_index_builder *b, const char *path)
{
    if (c->rc)
        return splade_fail(c->rc, "%s", c->detail);
    const double t0 = splade_phase_now();
    int rc = SPLADE_OK;
    for (int i = 0; rc == 0 && i < c->n; i++)
        rc = splade_builder_add_doc(b, path, c->ids[i], c->titles[i], c->bodies[i], c->line_nos[i], &c->docs[i]);
    for (int i = 0; rc == 0 && i < c->n; i++)
        rc = splade_builder_set_vector(b, c->docs[i], c->vec[i].terms, c->vec[i].weights, c->vec[i].n);
    if (rc == 0)
        splade_builder_add_truncated(b, (uint32_t)c->truncated);
    splade_phase_since(SPLADE_PH_SET_VECTOR, t0);
    return rc;
}

typedef struct {
    splade_index_builder *b;
    const char *path;
    splade_encoder *enc;
    splade_ingest_opts *opts;
    splade_corpus_reader *r;
    encoder_thread t;
    chunk slot[2];
    chunk *pending[2]; /* submitted, not yet stored, oldest first */
    int n_pending;
    uint32_t stored;
    int parse_threads;
    splade_progress pb;
} ingest;

/* Stores the oldest submitted chunk once encoded; reports progress. */
static int store_oldest(ingest *g)
{
    chunk *c = g->pending[0];
    wait_done(&g->t, c);
    g->pending[0] = g->pending[1];
    g->n_pending--;
    /* dropped by the encoding thread: the flag came up before it started (a serial run stops there) */
    int rc = c->rc == SPLADE_ERR_CANCELLED ? cancelled(g->opts, g->stored, g->path) : SPLADE_OK;
    if (rc == 0)
        rc = chunk_store(c, g->b, g->path);
    if (rc == 0) {
        g->stored += (uint32_t)c->n;
        splade_progress_update(&g->pb, g->stored);
    }
    chunk_clear(c);
    return rc;
}

/* Chunk k is read (and tokenized) into slot k % 2 while chunk k-1 encodes; once k is submitted,
 * k-1 is stored while k encodes. The caller's flag is read before a chunk is submitted and again
 * after each store (the progress callback may raise it): a serial run reads it before encoding
 * each chunk, and so the chunk after it is never stored. */
static int run(ingest *g)
{
    int rc = SPLADE_OK;
    for (int k = 0, more = 1; rc == 0 && more; k++) {
        chunk *c = &g->slot[k % 2]; /* free: chunk k-2 was stored */
        more = read_chunk(g->r, c, g->enc, g->opts, g->parse_threads);
        if (more < 0)
            return more;
        if (!c->n)
            break;
        if ((rc = cancelled(g->opts, g->stored, g->path)) != 0)
            return rc;
        submit(&g->t, c);
        g->pending[g->n_pending++] = c;
        if (g->n_pending == 2 && (rc = store_oldest(g)) == 0)
            rc = cancelled(g->opts, g->stored, g->path);
    }
    while (rc == 0 && g->n_pending)
        rc = store_oldest(g);
    return rc;
}

/* One thread per CPU but the one this thread reads on, at most 8: parsing ~20 us per document on a
 * thread keeps 8 threads ahead of ~100,000 documents/s, past eight GPUs of bert-base (issue #17). */
static int parse_threads(void)
{
    const int n = splade_settings_get()->parse_threads, cpus = splade_cpus_available();
    return n > 0 ? n : cpus > 9 ? 8 : cpus > 1 ? cpus - 1 : 1;
}

int splade_ingest_corpus(splade_index_builder *b, const char *path, splade_encoder *enc, int chunk_docs,
                         splade_ingest_opts *opts)
{
    ingest g = {.b = b, .path = path, .enc = enc, .opts = opts, .parse_threads = parse_threads()};
    int rc = splade_corpus_open(path, &g.r);
    if (rc < 0)
        return rc;
    /* on the CPU a group per chunk: a chunk is also the unit of progress and cancellation, and a CPU
     * takes seconds over 256 texts; GPUs take milliseconds, and per-call barriers cost a list ~10%
     * (SPLADE_ENCODE_GROUPS). A chunk's parsed records and token ids take ~10 MB per 1,000
     * SciFact-sized documents, two chunks at a time. */
    const int group = chunk_docs > 0 ? chunk_docs : 256;
    const int cap = group * (splade_encoder_device(enc) == SPLADE_DEVICE_CPU ? 1 : SPLADE_ENCODE_GROUPS);
    rc = chunk_init(&g.slot[0], cap);
    if (rc == 0)
        rc = chunk_init(&g.slot[1], cap);
    g.t = (encoder_thread){.enc = enc, .cancel = opts->cancel, .group = group};
    pthread_mutex_init(&g.t.mu, NULL);
    pthread_cond_init(&g.t.cv, NULL);
    pthread_t th;
    int started = 0;
    if (rc == 0 && pthread_create(&th, NULL, encode_loop, &g.t) != 0)
        rc = splade_fail(SPLADE_ERR_NOMEM, "encoding thread");
    started = rc == 0;
    splade_progress_start(&g.pb, opts->progress, opts->progress_user, "documents",
                          opts->progress ? splade_count_lines(path) : 0); /* a pass over the file */
    if (rc == 0)
        rc = run(&g);
    for (int i = 0; i < g.n_pending; i++) { /* stopped with chunks submitted: wait for them, drop them */
        wait_done(&g.t, g.pending[i]);
        chunk_clear(g.pending[i]);
    }
    if (started) {
        pthread_mutex_lock(&g.t.mu);
        g.t.quit = 1;
        pthread_cond_broadcast(&g.t.cv);
        pthread_mutex_unlock(&g.t.mu);
        pthread_join(th, NULL);
    }
    if (rc != SPLADE_ERR_CANCELLED) /* done == total would tell the caller the stage completed */
        splade_progress_finish(&g.pb, splade_builder_n_docs(b));
    chunk_free(&g.slot[0]);
    chunk_free(&g.slot[1]);
    pthread_cond_destroy(&g.t.cv);
    pthread_mutex_destroy(&g.t.mu);
    splade_corpus_close(g.r);
    return rc < 0 ? rc : splade_ingest_check_found(b, path, opts);
}
