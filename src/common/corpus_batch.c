/* Corpus lines read in order on the caller's thread, parsed on a team (src/common/corpus_batch.h).
 * Reading stays serial because lines, gzip members and the reader's error state are a stream;
 * parsing (jansson: ~85% of a line's cost) is independent per line. */
#include "common/corpus_batch.h"
#include "common/cpu_team.h"
#include "common/fail.h"
#include "splade.h"

#include <stdlib.h>
#include <string.h>

/* Below this many lines per thread, waking a team costs more than it saves. */
enum { MIN_LINES_PER_THREAD = 16 };

static int grow_lines(splade_corpus_batch *b, int need)
{
    if (need <= b->cap)
        return SPLADE_OK;
    int cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    splade_corpus_line **p = realloc(b->lines, (size_t)cap * sizeof *p);
    if (!p)
        return splade_fail(SPLADE_ERR_NOMEM, "corpus batch of %d lines", cap);
    b->lines = p;
    for (; b->cap < cap; b->cap++)
        if (!(p[b->cap] = calloc(1, sizeof **p)))
            return splade_fail(SPLADE_ERR_NOMEM, "corpus batch of %d lines", cap);
    return SPLADE_OK;
}

static int keep_raw(splade_corpus_batch *b, const char *text, size_t n, splade_corpus_line *l)
{
    if (b->raw_len + n > b->raw_cap) {
        size_t cap = b->raw_cap ? b->raw_cap : 1 << 16;
        while (cap < b->raw_len + n)
            cap *= 2;
        char *p = realloc(b->raw, cap);
        if (!p)
            return splade_fail(SPLADE_ERR_NOMEM, "corpus batch: %zu bytes of lines", cap);
        b->raw = p;
        b->raw_cap = cap;
    }
    memcpy(b->raw + b->raw_len, text, n);
    l->raw_at = b->raw_len;
    l->raw_n = n;
    b->raw_len += n;
    return SPLADE_OK;
}

/* The line's outcome is rc, with the calling thread's error detail when rc < 0. */
static void set_outcome(splade_corpus_line *l, int rc)
{
    l->rc = rc;
    free(l->detail);
    l->detail = rc < 0 ? strdup(splade_error_detail()) : NULL;
}

typedef struct {
    splade_corpus_batch *b;
    const char *path;
    int first;
} parse_job;

static void parse_one(const parse_job *j, splade_corpus_line *l)
{
    if (l->rc == 1)
        set_outcome(l, splade_corpus_record_parse(j->path, l->line, j->b->raw + l->raw_at, l->raw_n, &l->rec));
}

static int parse_share(void *ctx, int tid, splade_team *t)
{
    const parse_job *j = ctx;
    for (int i = j->first + tid; i < j->b->n; i += splade_team_size(t))
        parse_one(j, j->b->lines[i]);
    return 0;
}

int splade_corpus_batch_read(splade_corpus_reader *r, splade_corpus_batch *b, int want, int threads)
{
    const int first = b->n;
    int rc = grow_lines(b, first + want);
    if (rc < 0)
        return rc;
    b->raw_len = 0;
    while (b->n - first < want) {
        const char *text;
        size_t n;
        splade_corpus_line *l = b->lines[b->n];
        rc = splade_corpus_next_line(r, &text, &n, &l->line);
        if (rc == 0)
            break;
        if (rc == 1 && (rc = keep_raw(b, text, n, l)) == 0)
            rc = 1; /* parsed below */
        set_outcome(l, rc);
        b->n++;
        if (rc < 0 && rc != SPLADE_ERR_FORMAT)
            break; /* a stream error: the reader gives nothing more */
    }
    const int got = b->n - first;
    parse_job job = {b, splade_corpus_path(r), first};
    int team = got / MIN_LINES_PER_THREAD < threads ? got / MIN_LINES_PER_THREAD : threads;
    if (team > 1)
        splade_team_run(team, parse_share, &job);
    else
        for (int i = first; i < b->n; i++)
            parse_one(&job, b->lines[i]);
    return got;
}

void splade_corpus_batch_clear(splade_corpus_batch *b)
{
    for (int i = 0; i < b->n; i++) {
        splade_corpus_record_clear(&b->lines[i]->rec);
        free(b->lines[i]->detail);
        b->lines[i]->detail = NULL;
    }
    b->n = 0;
}

void splade_corpus_batch_free(splade_corpus_batch *b)
{
    splade_corpus_batch_clear(b);
    for (int i = 0; i < b->cap; i++)
        free(b->lines[i]);
    free(b->lines);
    free(b->raw);
    memset(b, 0, sizeof *b);
}
