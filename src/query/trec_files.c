/* Loading qrels (BEIR TSV or TREC) and TREC runs for evaluation (include/splade/eval.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "query/trec_files.h"
#include "splade.h"
#include "splade/eval.h"

static int read_all(const char *path, char **out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return splade_fail(SPLADE_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *p = realloc(buf, (cap *= 2) + 1);
            if (!p)
                free(buf);
            buf = p;
        }
    }
    fclose(f);
    if (!buf)
        return splade_fail(SPLADE_ERR_NOMEM, "%s: file too large", path);
    buf[n] = '\0';
    *out = buf;
    return SPLADE_OK;
}

/* Splits line in place on blanks; returns the field count (at most max). */
static int split(char *line, char **f, int max)
{
    int n = 0;
    for (char *save = NULL, *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
        if (n == max)
            return max + 1;
        f[n++] = t;
    }
    return n;
}

static int parse_number(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return end != s && *end == '\0' && errno == 0;
}

typedef int (*line_fn)(const char *path, long line, char **f, int nf, trec_entry *e);

static int qrels_line(const char *path, long line, char **f, int nf, trec_entry *e)
{
    if (nf != 3 && nf != 4)
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: expected 3 columns (BEIR: query-id corpus-id score) or 4 "
                           "(TREC: qid iter docno rel), got %d", path, line, nf);
    *e = (trec_entry){.qid = f[0], .doc = f[nf - 2], .line = line};
    if (!parse_number(f[nf - 1], &e->score)) {
        if (line == 1 && nf == 3)
            return 0; /* BEIR header: query-id corpus-id score */
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: relevance \"%s\" is not a number", path, line, f[nf - 1]);
    }
    return 1;
}

static int run_line(const char *path, long line, char **f, int nf, trec_entry *e)
{
    if (nf != 6)
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: expected 6 columns (qid Q0 docno rank score tag), got %d",
                           path, line, nf);
    *e = (trec_entry){.qid = f[0], .doc = f[2], .line = line};
    if (!parse_number(f[4], &e->score))
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: score \"%s\" is not a number", path, line, f[4]);
    return 1;
}

static int parse_lines(splade_trec_file *t, const char *path, line_fn fn)
{
    size_t cap = 1024;
    t->e = malloc(cap * sizeof *t->e);
    long line = 0;
    for (char *l = t->buf, *next; t->e && l && *l; l = next) {
        line++;
        next = strchr(l, '\n');
        if (next)
            *next++ = '\0';
        char *f[7];
        int nf = split(l, f, 6);
        if (nf == 0)
            continue;
        if (t->n == cap && !(t->e = realloc(t->e, (cap *= 2) * sizeof *t->e)))
            break;
        int rc = fn(path, line, f, nf, &t->e[t->n]);
        if (rc < 0)
            return rc;
        t->n += (size_t)rc;
    }
    return t->e ? SPLADE_OK : splade_fail(SPLADE_ERR_NOMEM, "%s: too many lines", path);
}

static int by_qid_doc(const void *a, const void *b)
{
    const trec_entry *x = a, *y = b;
    int c = strcmp(x->qid, y->qid);
    if (!c)
        c = strcmp(x->doc, y->doc);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* trec_eval's order within a query: score descending, then docno descending. */
static int by_qid_rank(const void *a, const void *b)
{
    const trec_entry *x = a, *y = b;
    int c = strcmp(x->qid, y->qid);
    if (c)
        return c;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return strcmp(y->doc, x->doc);
}

static int load(const char *path, line_fn fn, splade_trec_file **out)
{
    *out = NULL;
    splade_trec_file *t = calloc(1, sizeof *t);
    if (!t)
        return splade_fail(SPLADE_ERR_NOMEM, "%s", path);
    int rc = read_all(path, &t->buf);
    if (rc == 0)
        rc = parse_lines(t, path, fn);
    if (rc < 0) {
        splade_trec_file_free(t);
        return rc;
    }
    *out = t;
    return SPLADE_OK;
}

int splade_qrels_load(const char *path, splade_trec_file **out)
{
    int rc = load(path, qrels_line, out);
    if (rc < 0)
        return rc;
    splade_trec_file *t = *out;
    qsort(t->e, t->n, sizeof *t->e, by_qid_doc);
    size_t u = 0; /* a pair judged twice keeps its last judgment, as a dict-based reader would */
    for (size_t i = 0; i < t->n; i++) {
        if (u && !strcmp(t->e[u - 1].qid, t->e[i].qid) && !strcmp(t->e[u - 1].doc, t->e[i].doc))
            u--;
        t->e[u++] = t->e[i];
    }
    t->n = u;
    return SPLADE_OK;
}

int splade_run_load(const char *path, splade_trec_file **out)
{
    int rc = load(path, run_line, out);
    if (rc < 0)
        return rc;
    splade_trec_file *t = *out;
    qsort(t->e, t->n, sizeof *t->e, by_qid_doc);
    for (size_t i = 1; i < t->n; i++)
        if (!strcmp(t->e[i - 1].qid, t->e[i].qid) && !strcmp(t->e[i - 1].doc, t->e[i].doc)) {
            rc = splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: document \"%s\" repeated for query \"%s\" (first on line %ld)",
                             path, t->e[i].line, t->e[i].doc, t->e[i].qid, t->e[i - 1].line);
            splade_trec_file_free(t);
            *out = NULL;
            return rc;
        }
    qsort(t->e, t->n, sizeof *t->e, by_qid_rank);
    return SPLADE_OK;
}

void splade_trec_file_free(splade_trec_file *f)
{
    if (!f)
        return;
    free(f->buf);
    free(f->e);
    free(f);
}
