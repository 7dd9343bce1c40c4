/* JSONL corpus reader (see include/splade/corpus.h), on top of the shared JSONL reader. */
#include "common/fail.h"
#include "splade/corpus.h"
#include "splade.h"
#include "common/jsonl.h"

#include <stdlib.h>
#include <string.h>

struct splade_corpus_reader {
    splade_jsonl *j;
    char *joined;
    size_t joined_cap;
    char id_buf[32];
};

static int wrap(int rc, splade_jsonl *j, splade_corpus_reader **out)
{
    if (rc)
        return rc;
    splade_corpus_reader *r = calloc(1, sizeof *r);
    if (!r) {
        splade_jsonl_close(j);
        return splade_fail(SPLADE_ERR_NOMEM, "corpus reader");
    }
    r->j = j;
    *out = r;
    return SPLADE_OK;
}

int splade_corpus_open(const char *path, splade_corpus_reader **out)
{
    splade_jsonl *j = NULL;
    if (out)
        *out = NULL;
    int rc = splade_jsonl_open(path, &j); /* before wrap(): argument order is unspecified */
    return wrap(rc, j, out);
}

int splade_corpus_open_memory(const void *data, size_t len, const char *name, splade_corpus_reader **out)
{
    splade_jsonl *j = NULL;
    if (out)
        *out = NULL;
    int rc = splade_jsonl_open_memory(data, len, name, &j);
    return wrap(rc, j, out);
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
            return splade_fail(SPLADE_ERR_NOMEM, "%s:%ld: text of %zu bytes", splade_jsonl_path(r->j),
                               splade_jsonl_line(r->j), need);
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

static int parse_record(splade_corpus_reader *r, json_t *obj, splade_doc *doc)
{
    const char *path = splade_jsonl_path(r->j);
    const long line = splade_jsonl_line(r->j);
    int rc = splade_jsonl_id(r->j, obj, "_id", "id", r->id_buf, &doc->id);
    if (rc < 0)
        return rc;
    json_t *body = json_object_get(obj, "text");
    if (!body)
        body = json_object_get(obj, "contents");
    if (!json_is_string(body))
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: missing or non-string field \"text\" or \"contents\"",
                           path, line);
    json_t *title = json_object_get(obj, "title");
    if (title && !json_is_string(title) && !json_is_null(title))
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: field \"title\" is not a string", path, line);
    doc->title = json_is_string(title) ? json_string_value(title) : "";
    doc->body = json_string_value(body);
    doc->line = line;
    return join_title(r, doc->title, doc->body, doc);
}

int splade_corpus_next(splade_corpus_reader *r, splade_doc *doc)
{
    if (!r || !doc)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_corpus_next: NULL argument");
    json_t *obj;
    int rc = splade_jsonl_next(r->j, &obj);
    if (rc <= 0)
        return rc;
    rc = parse_record(r, obj, doc);
    return rc < 0 ? rc : 1;
}

void splade_corpus_set_max_line(splade_corpus_reader *r, size_t max_line)
{
    splade_jsonl_set_max_line(r->j, max_line);
}

void splade_corpus_close(splade_corpus_reader *r)
{
    if (!r)
        return;
    splade_jsonl_close(r->j);
    free(r->joined);
    free(r);
}
