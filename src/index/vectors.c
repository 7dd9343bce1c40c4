/* Seismic / Anserini vector JSONL reader (include/splade/vectors.h). */
#include "splade/vectors.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "splade.h"

struct splade_vectors_reader {
    FILE *f;
    int owns;
    char *path;
    char *line;
    size_t line_cap;
    long line_no;
    json_t *cur;
    const char **tokens;
    float *weights;
    size_t cap;
    char id_buf[32];
};

int splade_vectors_open(const char *path, splade_vectors_reader **out)
{
    *out = NULL;
    splade_vectors_reader *r = calloc(1, sizeof *r);
    if (!r)
        return splade_fail(SPLADE_ERR_NOMEM, "vectors reader");
    r->owns = strcmp(path, "-") != 0;
    r->f = r->owns ? fopen(path, "rb") : stdin;
    r->path = strdup(path);
    if (!r->f || !r->path) {
        int err = errno;
        splade_vectors_close(r);
        return splade_fail(SPLADE_ERR_IO, "%s: cannot open: %s", path, strerror(err));
    }
    *out = r;
    return SPLADE_OK;
}

void splade_vectors_close(splade_vectors_reader *r)
{
    if (!r)
        return;
    if (r->owns && r->f)
        fclose(r->f);
    json_decref(r->cur);
    free(r->path);
    free(r->line);
    free(r->tokens);
    free(r->weights);
    free(r);
}

static const char *record_id(splade_vectors_reader *r, json_t *obj)
{
    json_t *id = json_object_get(obj, "id");
    if (!id)
        id = json_object_get(obj, "_id");
    if (json_is_string(id))
        return json_string_value(id);
    if (json_is_integer(id)) {
        snprintf(r->id_buf, sizeof r->id_buf, "%" JSON_INTEGER_FORMAT, json_integer_value(id));
        return r->id_buf;
    }
    return NULL;
}

static const char *record_text(json_t *obj)
{
    static const char *fields[] = {"contents", "content", "text"};
    for (int i = 0; i < 3; i++) {
        json_t *t = json_object_get(obj, fields[i]);
        if (json_is_string(t))
            return json_string_value(t);
    }
    return "";
}

static int read_vector(splade_vectors_reader *r, json_t *vec, splade_vector_record *rec)
{
    size_t n = json_object_size(vec);
    if (n > r->cap) {
        const char **t = realloc(r->tokens, n * sizeof *t);
        if (t)
            r->tokens = t;
        float *w = realloc(r->weights, n * sizeof *w);
        if (w)
            r->weights = w;
        if (!t || !w)
            return splade_fail(SPLADE_ERR_NOMEM, "%s:%ld: vector of %zu entries", r->path, r->line_no, n);
        r->cap = n;
    }
    const char *key;
    json_t *val;
    int m = 0;
    json_object_foreach(vec, key, val) {
        double w = json_number_value(val);
        if (!json_is_number(val) || !isfinite(w) || w < 0 || (float)w > 3.4e38f)
            return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: weight of token \"%s\" is not a non-negative number",
                               r->path, r->line_no, key);
        if ((float)w > 0) {
            r->tokens[m] = key;
            r->weights[m++] = (float)w;
        }
    }
    rec->n = m;
    rec->tokens = r->tokens;
    rec->weights = r->weights;
    return SPLADE_OK;
}

static int parse_line(splade_vectors_reader *r, splade_vector_record *rec)
{
    json_error_t err;
    json_decref(r->cur);
    r->cur = json_loads(r->line, JSON_REJECT_DUPLICATES, &err);
    if (!r->cur)
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: invalid JSON: %s", r->path, r->line_no, err.text);
    if (!json_is_object(r->cur))
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: expected a JSON object", r->path, r->line_no);
    rec->id = record_id(r, r->cur);
    if (!rec->id)
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: missing or non-string/integer field \"id\"", r->path,
                           r->line_no);
    json_t *vec = json_object_get(r->cur, "vector");
    if (!json_is_object(vec))
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: missing or non-object field \"vector\"", r->path,
                           r->line_no);
    rec->text = record_text(r->cur);
    rec->line = r->line_no;
    return read_vector(r, vec, rec);
}

int splade_vectors_next(splade_vectors_reader *r, splade_vector_record *rec)
{
    for (;;) {
        errno = 0;
        ssize_t n = getline(&r->line, &r->line_cap, r->f);
        if (n < 0)
            return ferror(r->f) ? splade_fail(SPLADE_ERR_IO, "%s: read error: %s", r->path, strerror(errno)) : 0;
        r->line_no++;
        if ((size_t)n != strlen(r->line))
            return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: NUL byte in line", r->path, r->line_no);
        if (strspn(r->line, " \t\r\n") == (size_t)n)
            continue;
        int rc = parse_line(r, rec);
        return rc < 0 ? rc : 1;
    }
}
