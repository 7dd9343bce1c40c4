/* Reader for precomputed sparse vectors in Seismic / Anserini JSONL (src/index/vectors.c):
 *   {"id": "d1", "vector": {"token": weight, ...}, "contents": "optional text"}
 * "_id" is accepted for "id" (string or integer); "content", "contents" or "text" is optional text
 * (kept as the snippet, never encoded). Used by `build --vectors` and `query --vector-queries`. */
#ifndef SPLADE_VECTORS_H
#define SPLADE_VECTORS_H

#include "splade.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Thread safety: a reader is used by one thread at a time; readers are independent of each other. */
typedef struct splade_vectors_reader splade_vectors_reader;

typedef struct {
    const char *id;
    const char *text;       /* "" when absent */
    int n;                  /* tokens with a weight > 0 (zero weights are dropped) */
    const char **tokens;    /* [n], NUL-terminated */
    const float *weights;   /* [n] */
    long line;
} splade_vector_record;

/* "-" is standard input. *out owned by the caller: splade_vectors_close. */
SPLADE_API int splade_vectors_open(const char *path, splade_vectors_reader **out);
/* 1 with *rec filled (valid until the next call), 0 at end, or a negative status; on
 * SPLADE_ERR_FORMAT the detail reads "PATH:LINE: reason" and the reader has moved past the line. */
SPLADE_API int splade_vectors_next(splade_vectors_reader *r, splade_vector_record *rec);
SPLADE_API void splade_vectors_close(splade_vectors_reader *r);

#ifdef __cplusplus
}
#endif
#endif
