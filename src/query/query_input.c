/* Query sets from precomputed vectors (include/splade/query_input.h). */
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "splade.h"
#include "query/query_ids.h"
#include "splade/query_input.h"
#include "splade/vectors.h"

int query_ids_init(query_ids *s)
{
    memset(s, 0, sizeof *s);
    return strtab_init(&s->ids, 1);
}

void query_ids_free(query_ids *s)
{
    strtab_free(&s->ids);
    free(s->lines);
    memset(s, 0, sizeof *s);
}

int query_ids_add(query_ids *s, const char *path, const char *id, long line)
{
    size_t len = strlen(id);
    int64_t prev = strtab_find(&s->ids, id, len);
    if (prev >= 0)
        return splade_fail(SPLADE_ERR_DUPLICATE, "%s:%ld: duplicate query id \"%s\" (first on %s:%ld)", path, line,
                           id, path, s->lines[prev]);
    if (s->ids.n == s->cap) {
        uint32_t c = s->cap ? s->cap * 2 : 256;
        long *l = realloc(s->lines, (size_t)c * sizeof *l);
        if (!l)
            return splade_fail(SPLADE_ERR_NOMEM, "%u query ids", c);
        s->lines = l;
        s->cap = c;
    }
    uint32_t i;
    int rc = strtab_append(&s->ids, id, len, 0, &i);
    if (rc == 0)
        s->lines[i] = line;
    return rc;
}

void splade_query_set_free(splade_query_set *qs)
{
    for (int i = 0; i < qs->n; i++) {
        free(qs->ids[i]);
        splade_qvec_free(&qs->q[i]);
    }
    free(qs->ids);
    free(qs->q);
    memset(qs, 0, sizeof *qs);
}

/* Room for one more query. */
static int grow(splade_query_set *qs, int *cap)
{
    if (qs->n < *cap)
        return SPLADE_OK;
    int c = *cap ? *cap * 2 : 64;
    char **ids = realloc(qs->ids, (size_t)c * sizeof *ids);
    if (ids)
        qs->ids = ids;
    splade_qvec *q = realloc(qs->q, (size_t)c * sizeof *q);
    if (q)
        qs->q = q;
    if (!ids || !q)
        return splade_fail(SPLADE_ERR_NOMEM, "%d queries", c);
    *cap = c;
    return SPLADE_OK;
}

static int add_vector(splade_index *ix, splade_query_set *qs, const splade_vector_record *rec)
{
    int32_t *terms = malloc(((size_t)rec->n + 1) * sizeof *terms);
    if (!terms)
        return splade_fail(SPLADE_ERR_NOMEM, "query of %d terms", rec->n);
    for (int i = 0; i < rec->n; i++)
        terms[i] = splade_index_term_lookup(ix, rec->tokens[i], strlen(rec->tokens[i])); /* -1: dropped */
    int rc = splade_qvec_build(terms, rec->weights, rec->n, splade_index_get_info(ix)->n_terms, &qs->q[qs->n]);
    free(terms);
    if (rc < 0)
        return rc;
    if (!(qs->ids[qs->n] = strdup(rec->id))) {
        splade_qvec_free(&qs->q[qs->n]);
        return splade_fail(SPLADE_ERR_NOMEM, "query id");
    }
    qs->n++;
    return SPLADE_OK;
}

int splade_query_set_from_vectors(splade_index *ix, const char *path, splade_query_set *out)
{
    memset(out, 0, sizeof *out);
    splade_vectors_reader *r = NULL;
    query_ids seen;
    int rc = query_ids_init(&seen);
    if (rc == 0)
        rc = splade_vectors_open(path, &r);
    if (rc == 0)
        rc = splade_index_prepare_lookup(ix);
    int cap = 0;
    splade_vector_record rec;
    while (rc == 0 && (rc = splade_vectors_next(r, &rec)) == 1) {
        rc = query_ids_add(&seen, path, rec.id, rec.line);
        if (rc == 0)
            rc = grow(out, &cap);
        if (rc == 0)
            rc = add_vector(ix, out, &rec);
    }
    splade_vectors_close(r);
    query_ids_free(&seen);
    if (rc < 0)
        splade_query_set_free(out);
    return rc < 0 ? rc : SPLADE_OK;
}
