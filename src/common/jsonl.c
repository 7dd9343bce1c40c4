/* JSON Lines reader shared by the corpus and vector readers (include/splade/jsonl.h). */
#include "splade/jsonl.h"
#include "splade.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct splade_jsonl {
    FILE *f;
    int owns_file;
    char *path;
    char *line;
    size_t line_cap;
    long line_no;
    json_t *current;
};

static int finish_open(splade_jsonl *j, const char *name, splade_jsonl **out)
{
    j->path = strdup(name);
    if (!j->f || !j->path) {
        int err = errno;
        splade_jsonl_close(j);
        return splade_fail(SPLADE_ERR_IO, "%s: cannot open: %s", name, strerror(err));
    }
    *out = j;
    return SPLADE_OK;
}

int splade_jsonl_open(const char *path, splade_jsonl **out)
{
    if (!path || !out)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_jsonl_open: NULL argument");
    *out = NULL;
    splade_jsonl *j = calloc(1, sizeof *j);
    if (!j)
        return splade_fail(SPLADE_ERR_NOMEM, "JSONL reader");
    j->owns_file = strcmp(path, "-") != 0;
    j->f = j->owns_file ? fopen(path, "rb") : stdin;
    return finish_open(j, path, out);
}

int splade_jsonl_open_memory(const void *data, size_t len, const char *name, splade_jsonl **out)
{
    static const char empty[1];
    if ((!data && len) || !name || !out)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_jsonl_open_memory: NULL argument");
    *out = NULL;
    splade_jsonl *j = calloc(1, sizeof *j);
    if (!j)
        return splade_fail(SPLADE_ERR_NOMEM, "JSONL reader");
    /* glibc's fmemopen rejects size 0; one NUL byte reads as an empty file in "r" mode */
    j->f = len ? fmemopen((void *)data, len, "r") : fmemopen((void *)empty, 1, "r");
    j->owns_file = 1;
    return finish_open(j, name, out);
}

static int is_blank(const char *s, size_t n) { return strspn(s, " \t\r\n") == n; }

static int parse_line(splade_jsonl *j, json_t **obj)
{
    json_error_t err;
    json_decref(j->current);
    j->current = json_loads(j->line, JSON_REJECT_DUPLICATES, &err);
    if (!j->current)
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: invalid JSON: %s", j->path, j->line_no, err.text);
    if (!json_is_object(j->current))
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: expected a JSON object", j->path, j->line_no);
    *obj = j->current;
    return 1;
}

int splade_jsonl_next(splade_jsonl *j, json_t **obj)
{
    if (!j || !obj)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_jsonl_next: NULL argument");
    for (;;) {
        errno = 0;
        ssize_t n = getline(&j->line, &j->line_cap, j->f);
        if (n < 0) {
            if (ferror(j->f))
                return splade_fail(SPLADE_ERR_IO, "%s:%ld: read error: %s", j->path, j->line_no + 1,
                                   strerror(errno));
            return 0;
        }
        j->line_no++;
        if ((size_t)n != strlen(j->line))
            return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: NUL byte in line", j->path, j->line_no);
        if (!is_blank(j->line, (size_t)n))
            return parse_line(j, obj);
    }
}

const char *splade_jsonl_path(const splade_jsonl *j) { return j->path; }

long splade_jsonl_line(const splade_jsonl *j) { return j->line_no; }

void splade_jsonl_close(splade_jsonl *j)
{
    if (!j)
        return;
    if (j->owns_file && j->f)
        fclose(j->f);
    json_decref(j->current);
    free(j->line);
    free(j->path);
    free(j);
}

const char *splade_json_id(json_t *obj, const char *first, const char *second, char buf[32])
{
    json_t *id = json_object_get(obj, first);
    if (!id)
        id = json_object_get(obj, second);
    if (json_is_string(id))
        return json_string_value(id);
    if (json_is_integer(id)) {
        snprintf(buf, 32, "%" JSON_INTEGER_FORMAT, json_integer_value(id));
        return buf;
    }
    return NULL;
}
