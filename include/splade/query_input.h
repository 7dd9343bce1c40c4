/* Turning query inputs into quantized query vectors for an index (src/query/query_input.c,
 * query_encode.c): precomputed vectors JSONL, or text encoded with the index's own model. */
#ifndef SPLADE_QUERY_INPUT_H
#define SPLADE_QUERY_INPUT_H

#include "splade.h"

#include "splade/index.h"
#include "splade/model.h"
#include "splade/query.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *model;   /* override of the model folder/name the index records; NULL: the index's */
    const char *device;  /* "auto", "cpu" (default for queries), "cuda" */
    const char *precision; /* GPU number format: "bf16" (default) or "fp32"; NULL: bf16 */
    int threads;         /* encoder CPU threads; <= 0: default */
    const splade_model_paths *model_paths; /* where the model is looked for (splade_model_resolve);
                                              NULL: no cache, no default */
    int32_t max_batch_tokens; /* the encoder's cap (splade_encoder_opts); <= 0: none */
} splade_query_encode_opts;

typedef struct {
    int n;
    char **ids;          /* query ids ("1", "2", ... for bare texts) */
    splade_qvec *q;
} splade_query_set;

/* Query vectors JSONL ({"id", "vector": {token: weight}}); tokens unknown to the index are dropped.
 * Here and in splade_query_set_from_file a repeated id is SPLADE_ERR_DUPLICATE naming both lines. On
 * any failure *out is left empty (n = 0, no arrays). */
SPLADE_API int splade_query_set_from_vectors(splade_index *ix, const char *path, splade_query_set *out);
/* Encodes texts with the index's model (SPLADE_ERR_MISMATCH if the model's fingerprint differs from
 * the one stored in the index; SPLADE_ERR_UNSUPPORTED for an index built from --vectors). */
SPLADE_API int splade_query_set_from_texts(splade_index *ix, const char *const *texts, int n,
                                           const splade_query_encode_opts *opts, splade_query_set *out);
/* Queries JSONL (BEIR {"_id","text"}): ids from the file, texts encoded as above. */
SPLADE_API int splade_query_set_from_file(splade_index *ix, const char *path, const splade_query_encode_opts *opts,
                                          splade_query_set *out);
SPLADE_API void splade_query_set_free(splade_query_set *qs);

#ifdef __cplusplus
}
#endif
#endif
