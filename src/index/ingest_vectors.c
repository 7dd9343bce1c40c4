/* build --vectors: precomputed vectors JSONL -> builder, no model (include/splade/build.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fail.h"
#include "common/log.h"
#include "index/progress.h"
#include "splade.h"
#include "splade/build.h"
#include "splade/vectors.h"

uint64_t splade_count_lines(const char *path)
{
    struct stat st;
    if (!strcmp(path, "-") || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char buf[1 << 16];
    uint64_t n = 0;
    size_t got = fread(buf, 1, 2, f);
    if (got == 2 && !memcmp(buf, "\x1f\x8b", 2)) { /* gzip: the newlines are inside the compressed data */
        fclose(f);
        return 0;
    }
    do
        for (char *p = buf; (p = memchr(p, '\n', got - (size_t)(p - buf))); p++)
            n++;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0);
    fclose(f);
    return n;
}

int splade_ingest_check_found(const splade_index_builder *b, const char *path, const splade_ingest_opts *opts)
{
    if (splade_builder_n_docs(b) > 0)
        return SPLADE_OK;
    if (opts->skipped)
        return splade_fail(SPLADE_ERR_FORMAT, "every line of %s was invalid (%" PRIu32 " skipped)", path,
                           opts->skipped);
    if (!opts->allow_empty)
        return splade_fail(SPLADE_ERR_FORMAT, "%s holds no documents", path);
    return SPLADE_OK;
}

static int add_record(splade_index_builder *b, const char *path, const splade_vector_record *rec, int32_t **buf,
                      size_t *cap)
{
    if ((size_t)rec->n > *cap) {
        int32_t *p = realloc(*buf, (size_t)rec->n * sizeof *p);
        if (!p)
            return splade_fail(SPLADE_ERR_NOMEM, "%s:%ld: vector of %d terms", path, rec->line, rec->n);
        *buf = p;
        *cap = (size_t)rec->n;
    }
    int32_t *terms = *buf;
    uint32_t doc;
    int rc = splade_builder_add_doc(b, path, rec->id, "", rec->text, rec->line, &doc);
    for (int i = 0; rc == 0 && i < rec->n; i++)
        rc = splade_builder_term(b, rec->tokens[i], strlen(rec->tokens[i]), &terms[i]);
    if (rc == 0)
        rc = splade_builder_set_vector(b, doc, terms, rec->weights, rec->n);
    return rc;
}

int splade_ingest_vectors(splade_index_builder *b, const char *path, splade_ingest_opts *opts)
{
    splade_vectors_reader *r;
    int rc = splade_vectors_open(path, &r);
    if (rc < 0)
        return rc;
    splade_progress pb;
    splade_progress_start(&pb, opts->progress, opts->progress_user, "documents",
                          opts->progress ? splade_count_lines(path) : 0); /* a pass over the file */
    splade_vector_record rec;
    int32_t *terms = NULL;
    size_t cap = 0;
    for (;;) {
        rc = splade_vectors_next(r, &rec);
        if (rc == SPLADE_ERR_FORMAT && opts->skip_invalid) {
            splade_log(SPLADE_LOG_WARNING, "skipped: %s", splade_error_detail());
            opts->skipped++;
            continue;
        }
        if (rc <= 0)
            break;
        if ((rc = add_record(b, path, &rec, &terms, &cap)) < 0)
            break;
        splade_progress_update(&pb, splade_builder_n_docs(b));
    }
    splade_progress_finish(&pb, splade_builder_n_docs(b));
    splade_vectors_close(r);
    free(terms);
    return rc < 0 ? rc : splade_ingest_check_found(b, path, opts);
}

void splade_ingest_opts_init(splade_ingest_opts *o)
{
    *o = (splade_ingest_opts){0};
}
