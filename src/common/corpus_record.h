/* One corpus line parsed into a document apart from any reader, and the reader's raw lines: the
 * reader (corpus.c) parses its lines through it, and a build parses a chunk's lines on several
 * threads with it (corpus_batch.h). Internal to src/. */
#ifndef SPLADE_COMMON_CORPUS_RECORD_H
#define SPLADE_COMMON_CORPUS_RECORD_H

#include "splade/corpus.h"

#include <jansson.h>
#include <stddef.h>

/* doc's strings point into obj and joined, which the record owns; zero-initialise before first use. */
typedef struct {
    splade_doc doc;
    json_t *obj;
    char *joined; /* title + " " + body, when there is a title */
    size_t joined_cap;
    char id_buf[32];
} splade_corpus_record;

/* Parses `text` (n bytes), line `line` of `path` (both for error details), into rec, replacing what
 * it held (its join buffer is reused): 1, or SPLADE_ERR_FORMAT "PATH:LINE: reason" as
 * splade_corpus_next reports it, or SPLADE_ERR_NOMEM. Thread-safe for distinct records. */
int splade_corpus_record_parse(const char *path, long line, const char *text, size_t n, splade_corpus_record *rec);

/* Frees what rec owns; rec is then empty (zero) again. */
void splade_corpus_record_clear(splade_corpus_record *rec);

/* The reader's next non-blank line, unparsed (splade_jsonl_next_line): 1 with its bytes (valid until
 * the next call) and *line its number, 0 at the end, or a negative status (a per-line
 * SPLADE_ERR_FORMAT leaves the reader after that line). */
int splade_corpus_next_line(splade_corpus_reader *r, const char **text, size_t *n, long *line);

const char *splade_corpus_path(const splade_corpus_reader *r);

#endif
