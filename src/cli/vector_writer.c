/* encode's JSONL writer (vector_writer.h). A chunk's vectors are split into contiguous parts, each
 * formatted into its own buffer on its own thread; the buffers are then written in order. Formatting,
 * not the encoder, was encode's limit: one thread formatted ~3,700 documents/s of ~200 weights each
 * on the GPU host (bench/results/gpu-pipeline-2026-11-25.md), while the GPU encodes ~9,000. */
#include "cli/vector_writer.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_json.h"
#include "cli/cli_util.h"
#include "common/fail.h"
#include "common/phase.h"
#include "cli/cli_output.h"
#include "splade.h"

enum { MAX_PARTS = 16, CHUNK_CAP = 4096 };

typedef struct {
    char *p;
    size_t n, cap;
    int nomem;
} strbuf;

static void sb_reserve(strbuf *b, size_t extra)
{
    if (b->n + extra <= b->cap || b->nomem)
        return;
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->n + extra)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->nomem = 1;
        return;
    }
    b->p = p;
    b->cap = cap;
}

static void sb_put(strbuf *b, const char *s, size_t n)
{
    sb_reserve(b, n);
    if (b->nomem)
        return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void sb_puts(strbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void put_json_string(strbuf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    sb_reserve(b, strlen(s) * 6 + 2);
    if (b->nomem)
        return;
    char *o = b->p + b->n;
    *o++ = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            *o++ = '\\';
            *o++ = (char)*p;
        } else if (*p < 0x20) {
            memcpy(o, "\\u00", 4);
            o[4] = hex[*p >> 4];
            o[5] = hex[*p & 15];
            o += 6;
        } else {
            *o++ = (char)*p;
        }
    }
    *o++ = '"';
    b->n = (size_t)(o - b->p);
}

static void put_weight(strbuf *b, float w)
{
    char buf[32];
    splade_cli_format_weight(w, buf); /* the shortest text that reads back to w (cli_json.c) */
    sb_puts(b, buf);
}

static void put_vector(strbuf *b, const char *id, const splade_sparse *v, const splade_tokenizer *t)
{
    sb_puts(b, "{\"id\": ");
    put_json_string(b, id);
    sb_puts(b, ", \"vector\": {");
    for (int32_t i = 0; i < v->n; i++) {
        const char *tok = splade_tokenizer_token(t, v->terms[i]);
        char unk[32];
        if (!tok) { /* rows past vocab.txt (padded embeddings): keep them addressable */
            snprintf(unk, sizeof unk, "[unused_id_%d]", (int)v->terms[i]);
            tok = unk;
        }
        if (i)
            sb_put(b, ", ", 2);
        put_json_string(b, tok);
        sb_put(b, ": ", 2);
        put_weight(b, v->weights[i]);
    }
    sb_puts(b, "}}\n");
}

struct vector_writer {
    FILE *f;
    const splade_tokenizer *t;
    int threads;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *ids[CHUNK_CAP];
    splade_sparse vec[CHUNK_CAP];
    int n, full, quit, rc;
    char detail[1024];
    strbuf part[MAX_PARTS];
};

typedef struct {
    vector_writer *w;
    int lo, hi, k;
} part_job;

static void *format_part(void *arg)
{
    part_job *j = arg;
    strbuf *b = &j->w->part[j->k];
    b->n = 0;
    for (int i = j->lo; i < j->hi; i++)
        put_vector(b, j->w->ids[i], &j->w->vec[i], j->w->t);
    return NULL;
}

/* The chunk in w->ids/vec: formatted (parts on threads), written in order; its status. */
static int write_chunk(vector_writer *w)
{
    const double t0 = splade_cli_now();
    int parts = w->n / 16 < w->threads ? w->n / 16 : w->threads; /* >= 16 vectors a part */
    parts = parts < 1 ? 1 : parts;
    part_job job[MAX_PARTS];
    pthread_t th[MAX_PARTS];
    int started = 0;
    for (int k = 0; k < parts; k++)
        job[k] = (part_job){w, (int)((long)w->n * k / parts), (int)((long)w->n * (k + 1) / parts), k};
    for (int k = 1; k < parts && !pthread_create(&th[k], NULL, format_part, &job[k]); k++)
        started = k;
    for (int k = started + 1; k < parts; k++) /* threads that did not start: formatted here */
        format_part(&job[k]);
    format_part(&job[0]);
    for (int k = 1; k <= started; k++)
        pthread_join(th[k], NULL);
    int rc = SPLADE_OK;
    for (int k = 0; k < parts && !rc; k++) {
        if (w->part[k].nomem)
            rc = splade_fail(SPLADE_ERR_NOMEM, "encode: formatting the output");
        else if (fwrite(w->part[k].p, 1, w->part[k].n, w->f) != w->part[k].n || ferror(w->f))
            rc = splade_cli_check_stdout(); /* stop at a full disk instead of encoding for nobody */
    }
    splade_phase_add(SPLADE_PH_OUTPUT, splade_cli_now() - t0);
    return rc;
}

static void drop_chunk(vector_writer *w)
{
    for (int i = 0; i < w->n; i++) {
        free(w->ids[i]);
        splade_sparse_free(&w->vec[i]);
    }
    w->n = 0;
}

static void *writer_loop(void *arg)
{
    vector_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->full && !w->quit)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->full)
            break;
        const int failed = w->rc != 0;
        pthread_mutex_unlock(&w->mu);
        int rc = failed ? SPLADE_OK : write_chunk(w);
        char detail[1024] = "";
        if (rc)
            snprintf(detail, sizeof detail, "%s", splade_error_detail());
        drop_chunk(w);
        pthread_mutex_lock(&w->mu);
        if (rc && !w->rc) {
            w->rc = rc;
            snprintf(w->detail, sizeof w->detail, "%s", detail);
        }
        w->full = 0;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int vector_writer_open(FILE *f, const splade_tokenizer *t, int threads, vector_writer **out)
{
    *out = NULL;
    if (threads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        threads = c > 0 ? (int)c : 1;
    }
    vector_writer *w = calloc(1, sizeof *w);
    if (!w)
        return splade_fail(SPLADE_ERR_NOMEM, "encode: output writer");
    w->f = f;
    w->t = t;
    w->threads = threads > MAX_PARTS ? MAX_PARTS : threads;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->th, NULL, writer_loop, w)) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return splade_fail(SPLADE_ERR_NOMEM, "encode: output thread");
    }
    *out = w;
    return SPLADE_OK;
}

/* Waits until the writer holds no chunk; its status (with the detail raised on this thread). */
static int wait_idle(vector_writer *w)
{
    pthread_mutex_lock(&w->mu);
    while (w->full)
        pthread_cond_wait(&w->cv, &w->mu);
    int rc = w->rc;
    char detail[1024];
    snprintf(detail, sizeof detail, "%s", w->detail);
    pthread_mutex_unlock(&w->mu);
    return rc ? splade_fail(rc, "%s", detail) : SPLADE_OK;
}

int vector_writer_put(vector_writer *w, char **ids, splade_sparse *vec, int n)
{
    int rc = n > CHUNK_CAP ? splade_fail(SPLADE_ERR_INVALID_ARG, "encode: %d vectors at once", n) : wait_idle(w);
    if (rc) {
        for (int i = 0; i < n; i++) {
            free(ids[i]);
            splade_sparse_free(&vec[i]);
        }
        return rc;
    }
    pthread_mutex_lock(&w->mu);
    memcpy(w->ids, ids, (size_t)n * sizeof *ids);
    memcpy(w->vec, vec, (size_t)n * sizeof *vec);
    w->n = n;
    w->full = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return SPLADE_OK;
}

int vector_writer_close(vector_writer *w)
{
    if (!w)
        return SPLADE_OK;
    int rc = wait_idle(w);
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    for (int k = 0; k < MAX_PARTS; k++)
        free(w->part[k].p);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    return rc;
}
