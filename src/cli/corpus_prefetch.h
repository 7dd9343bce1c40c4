/* encode --input: the corpus read on a thread of its own, a chunk ahead of the encoder (issue #13
 * item 4), in the chunks a serial loop would form: up to `chunk` records each, cut at an error. */
#ifndef SPLADE_CLI_CORPUS_PREFETCH_H
#define SPLADE_CLI_CORPUS_PREFETCH_H

typedef struct corpus_prefetch corpus_prefetch;

/* Opens path ("-": standard input) and starts reading; chunk <= 4096 records a chunk. */
int corpus_prefetch_open(const char *path, int chunk, corpus_prefetch **out);

/* The next chunk: *n records whose ids and texts become the caller's (malloc'd strings), *more 0 after
 * the last. A read error comes after the chunk it cut short, which is dropped: 0 records and the error
 * (its detail "PATH:LINE: reason"). */
int corpus_prefetch_next(corpus_prefetch *p, char **ids, char **texts, int *n, int *more);

/* Stops the reader (at its next record) and frees everything; NULL-safe. */
void corpus_prefetch_close(corpus_prefetch *p);

#endif
