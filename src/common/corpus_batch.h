/* A batch of corpus lines read in order and parsed on several threads (issue #17: one thread
 * parsing JSON capped a build at ~26,000 documents/s, under four GPUs' rate). Each line keeps its
 * own outcome, so a caller walks them in file order and sees exactly what splade_corpus_next would
 * have returned line after line: the same documents, the same errors with the same details, in the
 * same order. Internal to src/ (the build pipeline). */
#ifndef SPLADE_COMMON_CORPUS_BATCH_H
#define SPLADE_COMMON_CORPUS_BATCH_H

#include "common/corpus_record.h"

typedef struct {
    int rc;        /* 1: rec.doc is the line's document; < 0: the line's error, whose detail is below */
    char *detail;  /* "PATH:LINE: reason", owned; NULL when rc is 1 (or a copy failed) */
    long line;
    size_t raw_at, raw_n; /* the line's bytes in the batch's raw buffer, until parsed */
    splade_corpus_record rec;
} splade_corpus_line;

/* Zero-initialise; *lines[0 .. n) are in file order. Each line stays where it is until the batch is
 * freed (documents point into their line's record), however many reads append to the batch. */
typedef struct {
    splade_corpus_line **lines;
    int n, cap;
    char *raw; /* the unparsed lines' bytes, reused by every read */
    size_t raw_len, raw_cap;
} splade_corpus_batch;

/* Reads up to `want` more lines of r (blank ones skipped, as by splade_corpus_next), appends them
 * to b and parses them on up to `threads` threads (the caller's among them). Returns how many lines
 * were appended (0: end of input), or a negative status when the batch itself could not grow; a
 * line's own error (bad JSON, a missing field, a NUL byte, a read error ...) is that line's rc, and
 * a stream error is the last line of the batch. */
int splade_corpus_batch_read(splade_corpus_reader *r, splade_corpus_batch *b, int want, int threads);

/* Drops the lines (their documents' strings with them); b keeps its buffers for the next read. */
void splade_corpus_batch_clear(splade_corpus_batch *b);

void splade_corpus_batch_free(splade_corpus_batch *b);

#endif
