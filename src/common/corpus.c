/* JSONL corpus reader (see include/splade/corpus.h), on top of the shared JSONL reader. */
#include "common/fail.h"
#include "splade/corpus.h"
#include "splade.h"
#include "common/corpus_record.h"
#include "common/jsonl.h"

#include <stdlib.h>
#include <string.h>

struct splade_corpus_reader {
    splade_jsonl *j;
    splade_corpus_record cur; /* the record splade_corpus_next handed out last */
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

static int join_title(splade_corpus_record *rec, const char *path, long line)
{
    splade_doc *doc = &rec->doc;
    size_t tl = strlen(doc->title), bl = strlen(doc->body);
    if (tl == 0) {
        doc->text = doc->body;
        doc->text_len = bl;
        return SPLADE_OK;
    }
    size_t need = tl + 1 + bl + 1;
    if (need > rec->joined_cap) {
        char *p = realloc(rec->joined, need);
        if (!p)
            return splade_fail(SPLADE_ERR_NOMEM, "%s:%ld: text of %zu bytes", path, line, need);
        rec->joined = p;
        rec->joined_cap = need;
    }
    memcpy(rec->joined, doc->title, tl);
    rec->joined[tl] = ' ';
    memcpy(rec->joined + tl + 1, doc->body, bl + 1);
    doc->text = rec->joined;
    doc->text_len = tl + 1 + bl;
    return SPLADE_OK;
}

static int fill_doc(splade_corpus_record *rec, const char *path, long line)
{
    json_t *obj = rec->obj;
    splade_doc *doc = &rec->doc;
    int rc = splade_jsonl_id_at(path, line, obj, "_id", "id", rec->id_buf, &doc->id);
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
    return join_title(rec, path, line);
}

int splade_corpus_record_parse(const char *path, long line, const char *text, size_t n, splade_corpus_record *rec)
{
    json_decref(rec->obj);
    rec->obj = NULL;
    memset(&rec->doc, 0, sizeof rec->doc);
    int rc = splade_jsonl_parse(path, line, text, n, &rec->obj);
    if (rc == 1)
        rc = fill_doc(rec, path, line);
    return rc < 0 ? rc : 1;
}

void splade_corpus_record_clear(splade_corpus_record *rec)
{
    json_decref(rec->obj);
    free(rec->joined);
    memset(rec, 0, sizeof *rec);
}

int splade_corpus_next_line(splade_corpus_reader *r, const char **text, size_t *n, long *line)
{
    int rc = splade_jsonl_next_line(r->j, text, n);
    *line = splade_jsonl_line(r->j);
    return rc;
}

const char *splade_corpus_path(const splade_corpus_reader *r) { return splade_jsonl_path(r->j); }

int splade_corpus_next(splade_corpus_reader *r, splade_doc *doc)
{
    if (!r || !doc)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_corpus_next: NULL argument");
    const char *text;
    size_t n;
    long line;
    int rc = splade_corpus_next_line(r, &text, &n, &line);
    if (rc <= 0)
        return rc;
    rc = splade_corpus_record_parse(splade_jsonl_path(r->j), line, text, n, &r->cur);
    if (rc == 1)
        *doc = r->cur.doc;
    return rc;
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
    splade_corpus_record_clear(&r->cur);
    free(r);
}
