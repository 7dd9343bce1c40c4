/* Collects documents and their vectors before inversion (see include/splade/index.h). */
#include "common/fail.h"
#include "index/builder_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "index/format.h"
#include "splade.h"

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static int set_model(splade_index_builder *b, const splade_index_model *m)
{
    if (!m)
        return SPLADE_OK;
    b->has_model = 1;
    b->model_name = dup_or_null(m->name);
    b->model_dir = dup_or_null(m->dir);
    if ((m->name && !b->model_name) || (m->dir && !b->model_dir))
        return splade_fail(SPLADE_ERR_NOMEM, "builder");
    b->fingerprint = m->fingerprint;
    b->lowercase = m->lowercase;
    b->query_table = m->query_table;
    b->max_length = m->max_length;
    return SPLADE_OK;
}

static int add_tokens(splade_index_builder *b, const char *const *tokens, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        const char *t = tokens[i] ? tokens[i] : "";
        int rc = strtab_append(&b->vocab, t, strlen(t), 0, NULL);
        if (rc < 0)
            return rc;
    }
    b->n_terms = n;
    return SPLADE_OK;
}

int splade_builder_create(const char *const *tokens, int32_t n_terms, const splade_index_model *model,
                          splade_index_builder **out)
{
    if (!out || n_terms < 0 || (n_terms > 0 && !tokens))
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_builder_create: bad arguments");
    *out = NULL;
    splade_index_builder *b = calloc(1, sizeof *b);
    if (!b)
        return splade_fail(SPLADE_ERR_NOMEM, "builder");
    b->dynamic_vocab = tokens == NULL;
    int rc = strtab_init(&b->vocab, b->dynamic_vocab);
    if (rc == 0)
        rc = strtab_init(&b->ids, 1);
    if (rc == 0)
        rc = strtab_init(&b->store, 0);
    if (rc == 0)
        rc = strtab_init(&b->seen, 1);
    if (rc == 0)
        rc = add_tokens(b, tokens, n_terms);
    if (rc == 0)
        rc = set_model(b, model);
    if (rc < 0) {
        splade_builder_free(b);
        return rc;
    }
    *out = b;
    return SPLADE_OK;
}

void splade_builder_free(splade_index_builder *b)
{
    if (!b)
        return;
    splade_spill_discard(b);
    splade_dir_lock_release(&b->lock);
    strtab_free(&b->seen);
    free(b->seen_lines);
    free(b->spills);
    free(b->spill_dir);
    strtab_free(&b->vocab);
    strtab_free(&b->ids);
    strtab_free(&b->store);
    free(b->lines);
    free(b->fwd_off);
    free(b->fwd_len);
    free(b->fterms);
    free(b->fweights);
    free(b->model_name);
    free(b->model_dir);
    free(b->where);
    free(b);
}

static int grow_docs(splade_index_builder *b)
{
    uint32_t cap = b->doc_cap ? b->doc_cap * 2 : 1024;
    long *lines = realloc(b->lines, cap * sizeof *lines);
    if (lines)
        b->lines = lines;
    uint64_t *off = realloc(b->fwd_off, cap * sizeof *off);
    if (off)
        b->fwd_off = off;
    uint32_t *len = realloc(b->fwd_len, cap * sizeof *len);
    if (len)
        b->fwd_len = len;
    if (!lines || !off || !len)
        return splade_fail(SPLADE_ERR_NOMEM, "document table of %u entries", cap);
    b->doc_cap = cap;
    return SPLADE_OK;
}

/* The first SPLADE_SNIPPET_BYTES bytes of s, cut before a UTF-8 continuation byte. */
static size_t snippet_len(const char *s)
{
    size_t n = strlen(s);
    if (n <= SPLADE_SNIPPET_BYTES)
        return n;
    n = SPLADE_SNIPPET_BYTES;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

int splade_builder_add_doc(splade_index_builder *b, const char *where, const char *id, const char *title,
                           const char *body, long line, uint32_t *doc)
{
    if (!b || !id)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_builder_add_doc: NULL argument");
    size_t id_len = strlen(id);
    long first;
    if (splade_builder_has_id(b, id, id_len, &first))
        return splade_fail(SPLADE_ERR_DUPLICATE, "%s:%ld: duplicate id \"%s\" (first seen on line %ld)",
                           where ? where : "input", line, id, first);
    if (b->ids.n == UINT32_MAX - 1)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "more than 2^32 - 2 documents");
    if (b->ids.n == b->doc_cap && grow_docs(b) < 0)
        return SPLADE_ERR_NOMEM;
    title = title ? title : "";
    body = body ? body : "";
    uint32_t d;
    int rc = strtab_append(&b->ids, id, id_len, 0, &d);
    if (rc == 0)
        rc = strtab_append2(&b->store, title, strlen(title), body, snippet_len(body));
    if (rc < 0)
        return rc;
    b->lines[d] = line;
    if (!b->where && where && !(b->where = strdup(where)))
        return splade_fail(SPLADE_ERR_NOMEM, "builder");
    b->fwd_off[d] = NO_VECTOR;
    b->fwd_len[d] = 0;
    if (doc)
        *doc = d;
    return SPLADE_OK;
}

int splade_builder_term(splade_index_builder *b, const char *token, size_t len, int32_t *term)
{
    if (!b->dynamic_vocab)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_builder_term: the vocabulary is fixed");
    int64_t t = strtab_find(&b->vocab, token, len);
    if (t < 0) {
        if (b->n_terms == INT32_MAX)
            return splade_fail(SPLADE_ERR_UNSUPPORTED, "more than 2^31 - 1 distinct tokens");
        uint32_t idx;
        int rc = strtab_append(&b->vocab, token, len, 0, &idx);
        if (rc < 0)
            return rc;
        t = idx;
        b->n_terms = (int32_t)idx + 1;
    }
    *term = (int32_t)t;
    return SPLADE_OK;
}

static int reserve_forward(splade_index_builder *b, uint64_t extra)
{
    if (b->fn + extra <= b->fcap)
        return SPLADE_OK;
    uint64_t cap = b->fcap ? b->fcap : 1 << 16;
    while (cap < b->fn + extra) /* under a memory budget, small steps: a doubling would overshoot it */
        cap = b->memory ? cap + cap / 4 + extra : cap * 2;
    int32_t *t = realloc(b->fterms, cap * sizeof *t);
    if (t)
        b->fterms = t;
    float *w = realloc(b->fweights, cap * sizeof *w);
    if (w)
        b->fweights = w;
    if (!t || !w)
        return splade_fail(SPLADE_ERR_NOMEM, "forward vectors of %llu entries", (unsigned long long)cap);
    b->fcap = cap;
    return SPLADE_OK;
}

int splade_builder_set_vector(splade_index_builder *b, uint32_t doc, const int32_t *terms,
                              const float *weights, int32_t n)
{
    if (!b || doc >= b->ids.n || n < 0 || (n > 0 && (!terms || !weights)))
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_builder_set_vector: bad arguments");
    if (b->fwd_off[doc] != NO_VECTOR)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "document %u already has a vector", doc);
    for (int32_t i = 0; i < n; i++) {
        if (terms[i] < 0 || terms[i] >= b->n_terms)
            return splade_fail(SPLADE_ERR_INVALID_ARG, "term id %d outside the vocabulary (%d terms)",
                               terms[i], b->n_terms);
        if (!(weights[i] > 0) || !isfinite(weights[i]))
            return splade_fail(SPLADE_ERR_INVALID_ARG, "weight %g of term %d is not positive and finite",
                               weights[i], terms[i]);
    }
    int rc = reserve_forward(b, (uint64_t)n);
    if (rc < 0)
        return rc;
    if (n > 0) { /* an empty vector may come with NULL arrays, which memcpy must not see */
        memcpy(b->fterms + b->fn, terms, (size_t)n * sizeof *terms);
        memcpy(b->fweights + b->fn, weights, (size_t)n * sizeof *weights);
    }
    b->fwd_off[doc] = b->fn;
    b->fwd_len[doc] = (uint32_t)n;
    b->fn += (uint64_t)n;
    b->n_vectors++;
    return b->memory ? splade_builder_maybe_spill(b) : SPLADE_OK;
}

void splade_builder_keep_order(splade_index_builder *b, int keep)
{
    b->keep_order = keep != 0;
}

void splade_builder_set_threads(splade_index_builder *b, int threads)
{
    b->threads = threads;
}

void splade_builder_set_build_time(splade_index_builder *b, uint64_t unix_seconds)
{
    b->fixed_time = 1;
    b->build_time = unix_seconds;
}

void splade_builder_set_cancel(splade_index_builder *b, const volatile int *cancel)
{
    b->cancel = cancel;
}

int splade_builder_set_doc_scale(splade_index_builder *b, float doc_scale)
{
    if (!b || !(doc_scale >= 0) || !isfinite(doc_scale))
        return splade_fail(SPLADE_ERR_INVALID_ARG, "doc_scale %g is not a finite number >= 0", (double)doc_scale);
    b->fixed_scale = doc_scale;
    return SPLADE_OK;
}

uint64_t splade_builder_clipped(const splade_index_builder *b)
{
    return b ? b->n_clipped : 0;
}

void splade_builder_add_truncated(splade_index_builder *b, uint32_t n)
{
    b->n_truncated += n;
}

uint32_t splade_builder_n_docs(const splade_index_builder *b)
{
    return (uint32_t)(b->spilled_docs + b->ids.n); /* spilled ones too (spill.c) */
}
