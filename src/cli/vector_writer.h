/* encode's JSONL output ({"id": ..., "vector": {"token": weight, ...}}), formatted on worker threads
 * and written in input order by a writer thread, so that the next chunk encodes meanwhile (issue #13
 * item 4: the output keeps up with the GPU). The bytes are those of one thread formatting in order. */
#ifndef SPLADE_CLI_VECTOR_WRITER_H
#define SPLADE_CLI_VECTOR_WRITER_H

#include <stdio.h>

#include "splade/sparse.h"
#include "splade/tokenizer.h"

typedef struct vector_writer vector_writer;

/* A writer to f using up to `threads` formatting threads (<= 0: the online cores, at most 16). */
int vector_writer_open(FILE *f, const splade_tokenizer *t, int threads, vector_writer **out);

/* Hands n vectors with their ids over (the writer owns and frees ids[i] and vec[i]; ids and vec
 * themselves are copied). Waits while the previous chunk is still being written. Fails with the
 * writer's first error (a full disk: SPLADE_ERR_IO), after which nothing more is written. */
int vector_writer_put(vector_writer *w, char **ids, splade_sparse *vec, int n);

/* Waits for everything handed over, stops the thread; the first error, if any. NULL-safe. */
int vector_writer_close(vector_writer *w);

#endif
