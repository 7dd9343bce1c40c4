/* Seismic / Anserini vector JSONL reader (include/splade/vectors.h). */
#include "common/fail.h"
#include "splade/vectors.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "splade.h"
#include "common/jsonl.h"

struct splade_vectors_reader {
    splade_jsonl *j;
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
    int rc = splade_jsonl_open(path, &r->j);
    if (rc) {
        free(r);
        return rc;
    }
    *out = r;
    return SPLADE_OK;
}

void splade_vectors_close(splade_vectors_reader *r)
{
    if (!r)
        return;
    splade_jsonl_close(r->j);
    free(r->tokens);
    free(r->weights);
    free(r);
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
            return splade_fail(SPLADE_ERR_NOMEM, "%s:%ld: vector of %zu entries", splade_jsonl_path(r->j),
                               splade_jsonl_line(r->j), n);
        r->cap = n;
    }
    const char *key;
    json_t *val;
    int m = 0;
    json_object_foreach(vec, key, val) {
        double w = json_number_value(val);
        if (!json_is_number(val) || !isfinite(w) || w < 0 || (float)w > 3.4e38f)
            return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: weight of token \"%s\" is not a non-negative number",
                               splade_jsonl_path(r->j), splade_jsonl_line(r->j), key);
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

static int parse_record(splade_vectors_reader *r, json_t *obj, splade_vector_record *rec)
{
    const char *path = splade_jsonl_path(r->j);
    const long line = splade_jsonl_line(r->j);
    int rc = splade_jsonl_id(r->j, obj, "id", "_id", r->id_buf, &rec->id);
    if (rc < 0)
        return rc;
    json_t *vec = json_object_get(obj, "vector");
    if (!json_is_object(vec))
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: missing or non-object field \"vector\"", path, line);
    rec->text = record_text(obj);
    rec->line = line;
    return read_vector(r, vec, rec);
}

int splade_vectors_next(splade_vectors_reader *r, splade_vector_record *rec)
{
    json_t *obj;
    int rc = splade_jsonl_next(r->j, &obj);
    if (rc <= 0)
        return rc;
    rc = parse_record(r, obj, rec);
    return rc < 0 ? rc : 1;
}
