/* The corpus reader of encode --input on its own thread (corpus_prefetch.h): parsing the JSONL ran
 * serially with the encoder, ~35 us a document on the GPU host (bench/results/gpu-pipeline-2026-11-25.md). */
#include "cli/corpus_prefetch.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "splade.h"
#include "splade/corpus.h"

enum { MAX_CHUNK = 4096 };

typedef struct {
    char *ids[MAX_CHUNK], *texts[MAX_CHUNK];
    int n, rc, last, ready;
    char detail[1024];
} slot;

struct corpus_prefetch {
    splade_corpus_reader *r;
    const char *path;
    int chunk, quit, head; /* head: the slot the caller takes next */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    slot s[2];
};

static void slot_drop(slot *s)
{
    for (int i = 0; i < s->n; i++) {
        free(s->ids[i]);
        free(s->texts[i]);
    }
    s->n = 0;
}

/* Fills s with the next chunk, as the serial loop did: records until `chunk`, the end or an error. */
static void fill(corpus_prefetch *p, slot *s)
{
    splade_doc d;
    for (;;) {
        int got = splade_corpus_next(p->r, &d);
        if (got == 0) {
            s->last = 1;
            return;
        }
        if (got < 0 || __atomic_load_n(&p->quit, __ATOMIC_RELAXED)) {
            s->rc = got < 0 ? got : SPLADE_ERR_CANCELLED;
            snprintf(s->detail, sizeof s->detail, "%s", got < 0 ? splade_error_detail() : "stopped");
            s->last = 1;
            return;
        }
        s->ids[s->n] = strdup(d.id);
        s->texts[s->n] = strdup(d.text);
        s->n++;
        if (!s->ids[s->n - 1] || !s->texts[s->n - 1]) {
            s->rc = splade_fail(SPLADE_ERR_NOMEM, "%s:%ld: copying the record", p->path, d.line);
            snprintf(s->detail, sizeof s->detail, "%s", splade_error_detail());
            s->last = 1;
            return;
        }
        if (s->n == p->chunk)
            return;
    }
}

static void *reader(void *arg)
{
    corpus_prefetch *p = arg;
    for (int k = 0, last = 0; !last; k ^= 1) {
        slot *s = &p->s[k];
        pthread_mutex_lock(&p->mu);
        while (s->ready && !p->quit)
            pthread_cond_wait(&p->cv, &p->mu);
        const int quit = p->quit;
        pthread_mutex_unlock(&p->mu);
        if (quit)
            break;
        fill(p, s);
        last = s->last;
        if (s->rc)
            slot_drop(s); /* a chunk cut short by an error is never encoded */
        pthread_mutex_lock(&p->mu);
        s->ready = 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

int corpus_prefetch_open(const char *path, int chunk, corpus_prefetch **out)
{
    *out = NULL;
    corpus_prefetch *p = calloc(1, sizeof *p);
    if (!p)
        return splade_fail(SPLADE_ERR_NOMEM, "encode: reader");
    int rc = splade_corpus_open(path, &p->r);
    if (rc) {
        free(p);
        return rc;
    }
    p->path = path;
    p->chunk = chunk < 1 ? 1 : chunk > MAX_CHUNK ? MAX_CHUNK : chunk;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (pthread_create(&p->th, NULL, reader, p)) {
        splade_corpus_close(p->r);
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return splade_fail(SPLADE_ERR_NOMEM, "encode: reader thread");
    }
    *out = p;
    return SPLADE_OK;
}

int corpus_prefetch_next(corpus_prefetch *p, char **ids, char **texts, int *n, int *more)
{
    slot *s = &p->s[p->head];
    pthread_mutex_lock(&p->mu);
    while (!s->ready)
        pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
    int rc = s->rc ? splade_fail(s->rc, "%s", s->detail) : SPLADE_OK;
    *n = s->n;
    *more = !s->last;
    memcpy(ids, s->ids, (size_t)s->n * sizeof *ids);
    memcpy(texts, s->texts, (size_t)s->n * sizeof *texts);
    pthread_mutex_lock(&p->mu);
    s->n = s->rc = s->last = s->ready = 0;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    p->head ^= 1;
    return rc;
}

void corpus_prefetch_close(corpus_prefetch *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->th, NULL);
    slot_drop(&p->s[0]);
    slot_drop(&p->s[1]);
    splade_corpus_close(p->r);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
