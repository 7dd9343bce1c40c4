/* JSONL corpus reader (see include/splade/corpus.h). */
#include "splade/corpus.h"
#include "splade.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct splade_corpus_reader {
    FILE *f;
    int owns_file;
    char *path;
    char *line;
    size_t line_cap;
    long line_no;
    json_t *current;   /* keeps the strings of the last record alive */
    char *joined;
    size_t joined_cap;
    char id_buf[32];
};

int splade_corpus_open(const char *path, splade_corpus_reader **out)
{
    if (!path || !out)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_corpus_open: NULL argument");
    *out = NULL;
    splade_corpus_reader *r = calloc(1, sizeof *r);
    if (!r)
        return splade_fail(SPLADE_ERR_NOMEM, "corpus reader");
    if (strcmp(path, "-") == 0) {
        r->f = stdin;
    } else {
        r->f = fopen(path, "rb");
        r->owns_file = 1;
    }
    r->path = strdup(path);
    if (!r->f || !r->path) {
        int err = errno;
        splade_corpus_close(r);
        return splade_fail(SPLADE_ERR_IO, "%s: cannot open: %s", path, strerror(err));
    }
    *out = r;
    return SPLADE_OK;
}

int splade_corpus_open_memory(const void *data, size_t len, const char *name,
                              splade_corpus_reader **out)
{
    static const char empty[1];
    if ((!data && len) || !name || !out)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_corpus_open_memory: NULL argument");
    *out = NULL;
    splade_corpus_reader *r = calloc(1, sizeof *r);
    if (!r)
        return splade_fail(SPLADE_ERR_NOMEM, "corpus reader");
    /* glibc's fmemopen rejects size 0; one NUL byte reads as an empty file in "r" mode */
    r->f = len ? fmemopen((void *)data, len, "r") : fmemopen((void *)empty, 1, "r");
    r->owns_file = 1;
    r->path = strdup(name);
    if (!r->f || !r->path) {
        splade_corpus_close(r);
        return splade_fail(SPLADE_ERR_NOMEM, "%s: cannot open memory stream", name);
    }
    *out = r;
    return SPLADE_OK;
}

static int is_blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
            return 0;
    return 1;
}

/* The id as text: JSON strings as they are, integers in decimal. */
static const char *record_id(splade_corpus_reader *r, json_t *obj, const char **field)
{
    json_t *id = json_object_get(obj, *field = "_id");
    if (!id)
        id = json_object_get(obj, *field = "id");
    if (json_is_string(id))
        return json_string_value(id);
    if (json_is_integer(id)) {
        snprintf(r->id_buf, sizeof r->id_buf, "%" JSON_INTEGER_FORMAT, json_integer_value(id));
        return r->id_buf;
    }
    return NULL;
}

static int join_title(splade_corpus_reader *r, const char *title, const char *body, splade_doc *doc)
{
    size_t tl = strlen(title), bl = strlen(body);
    if (tl == 0) {
        doc->text = body;
        doc->text_len = bl;
        return SPLADE_OK;
    }
    size_t need = tl + 1 + bl + 1;
    if (need > r->joined_cap) {
        char *p = realloc(r->joined, need);
        if (!p)
            return splade_fail(SPLADE_ERR_NOMEM, "%s:%ld: text of %zu bytes", r->path, r->line_no, need);
        r->joined = p;
        r->joined_cap = need;
    }
    memcpy(r->joined, title, tl);
    r->joined[tl] = ' ';
    memcpy(r->joined + tl + 1, body, bl + 1);
    doc->text = r->joined;
    doc->text_len = tl + 1 + bl;
    return SPLADE_OK;
}

static int parse_record(splade_corpus_reader *r, splade_doc *doc)
{
    json_error_t jerr;
    json_t *obj = json_loads(r->line, JSON_REJECT_DUPLICATES, &jerr);
    if (!obj)
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: invalid JSON: %s", r->path, r->line_no, jerr.text);
    json_decref(r->current);
    r->current = obj;
    if (!json_is_object(obj))
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: expected a JSON object", r->path, r->line_no);
    const char *id_field;
    doc->id = record_id(r, obj, &id_field);
    if (!doc->id)
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: missing or non-string/integer field \"_id\" or \"id\"",
                           r->path, r->line_no);
    json_t *body = json_object_get(obj, "text");
    if (!body)
        body = json_object_get(obj, "contents");
    if (!json_is_string(body))
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: missing or non-string field \"text\" or \"contents\"",
                           r->path, r->line_no);
    json_t *title = json_object_get(obj, "title");
    if (title && !json_is_string(title) && !json_is_null(title))
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: field \"title\" is not a string", r->path, r->line_no);
    doc->title = json_is_string(title) ? json_string_value(title) : "";
    doc->body = json_string_value(body);
    doc->line = r->line_no;
    return join_title(r, doc->title, doc->body, doc);
}

int splade_corpus_next(splade_corpus_reader *r, splade_doc *doc)
{
    if (!r || !doc)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_corpus_next: NULL argument");
    for (;;) {
        errno = 0;
        ssize_t n = getline(&r->line, &r->line_cap, r->f);
        if (n < 0) {
            if (ferror(r->f))
                return splade_fail(SPLADE_ERR_IO, "%s:%ld: read error: %s", r->path, r->line_no + 1,
                                   strerror(errno));
            return 0;
        }
        r->line_no++;
        if ((size_t)n != strlen(r->line))
            return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: NUL byte in line", r->path, r->line_no);
        if (is_blank(r->line))
            continue;
        int rc = parse_record(r, doc);
        return rc < 0 ? rc : 1;
    }
}

void splade_corpus_close(splade_corpus_reader *r)
{
    if (!r)
        return;
    if (r->owns_file && r->f)
        fclose(r->f);
    json_decref(r->current);
    free(r->line);
    free(r->joined);
    free(r->path);
    free(r);
}
