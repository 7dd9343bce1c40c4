/* Turning query inputs into quantized query vectors for an index (src/query/query_input.c):
 * precomputed vectors JSONL. Text encoded with the index's own model is the pipeline's
 * (include/splade/pipeline.h, splade_query_set_from_texts / _from_file). */
#ifndef SPLADE_QUERY_INPUT_H
#define SPLADE_QUERY_INPUT_H

#include "splade.h"

#include "splade/index.h"
#include "splade/query.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int n;
    char **ids;          /* query ids ("1", "2", ... for bare texts) */
    splade_qvec *q;
} splade_query_set;
/* Thread safety: a plain value once built; many threads may read one set. */

/* Query vectors JSONL ({"id", "vector": {token: weight}}); tokens unknown to the index are dropped.
 * Here and in splade_query_set_from_file (pipeline.h) a repeated id is SPLADE_ERR_DUPLICATE naming both lines. On
 * any failure *out is left empty (n = 0, no arrays). */
SPLADE_API int splade_query_set_from_vectors(splade_index *ix, const char *path, splade_query_set *out);
SPLADE_API void splade_query_set_free(splade_query_set *qs);

#ifdef __cplusplus
}
#endif
#endif
