/* The pipeline: the glue between stages, each of which reads only the previous stage's documented
 * format (PISA's layering). Corpus JSONL -> encoder -> index builder (src/pipeline/ingest_corpus.c,
 * build_model.c); query text -> the index's own model -> query vectors (src/pipeline/query_encode.c);
 * where a model folder is found (src/pipeline/resolve.c, declared in include/splade/model.h with
 * the model). src/index/ and src/query/ know no encoder; only this layer and the clients (CLI,
 * Python) join them. */
#ifndef SPLADE_PIPELINE_H
#define SPLADE_PIPELINE_H

#include <stdint.h>

#include "splade.h"
#include "splade/build.h"
#include "splade/encoder.h"
#include "splade/index.h"
#include "splade/model.h"
#include "splade/query_input.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Adds every document of a corpus JSONL file (include/splade/corpus.h), in groups of chunk_docs texts
 * that the encoder sorts by length into batches, as one splade_encoder_encode call each would (so
 * the vectors are those of splade_encoder_encode_chunked with chunk = chunk_docs). On the GPU sixteen
 * groups go to the encoder at once, so that the GPUs of a list share their batches; an index built
 * on one GPU is the same as on several. The builder must use the encoder's model vocabulary.
 * Malformed lines fail with "PATH:LINE: reason" unless skip_invalid. */
SPLADE_API int splade_ingest_corpus(splade_index_builder *b, const char *path, splade_encoder *enc, int chunk_docs,
                                    splade_ingest_opts *opts);

/* A builder over m's vocabulary recording m (name as the user gave it, absolute folder,
 * fingerprint, lowercase) and the encoder's effective max_length in the index. */
SPLADE_API int splade_builder_create_for_model(const splade_model *m, const char *name, int32_t max_length,
                                               splade_index_builder **out);

typedef struct {
    const char *model;   /* override of the model folder/name the index records; NULL: the index's */
    const char *device;  /* "auto", "cpu" (default for queries), "cuda" */
    const char *precision; /* GPU number format: "bf16" (default) or "fp32"; NULL: bf16 */
    int threads;         /* encoder CPU threads; <= 0: default */
    const splade_model_paths *model_paths; /* where the model is looked for (splade_model_resolve);
                                              NULL: no cache, no default */
    int32_t max_batch_tokens; /* the encoder's cap (splade_encoder_opts); <= 0: none */
} splade_query_encode_opts;

/* Fills *o with the defaults (the index's model, the CPU, bf16 where a GPU is asked for, no caps). */
SPLADE_API void splade_query_encode_opts_init(splade_query_encode_opts *o);

/* The model text queries of ix are encoded with, loaded into *out (splade_model_free): o->model when
 * given (resolved through o->model_paths), else the folder the index records when it still exists, else
 * the name it records resolved the same way. Fails with SPLADE_ERR_UNSUPPORTED for an index built from
 * precomputed vectors (no model), SPLADE_ERR_NOT_FOUND naming both records when the model is gone, and
 * SPLADE_ERR_MISMATCH when the model's fingerprint differs from the one stored in the index. o may be
 * NULL (the index's model, no cache). The query functions below call it; so does the Python package. */
SPLADE_API int splade_index_load_model(const splade_index *ix, const splade_query_encode_opts *o, splade_model **out);

/* Encodes texts with the index's model (SPLADE_ERR_MISMATCH if the model's fingerprint differs from
 * the one stored in the index; SPLADE_ERR_UNSUPPORTED for an index built from --vectors). */
SPLADE_API int splade_query_set_from_texts(splade_index *ix, const char *const *texts, int n,
                                           const splade_query_encode_opts *opts, splade_query_set *out);
/* Queries JSONL (BEIR {"_id","text"}): ids from the file, texts encoded as above. */
SPLADE_API int splade_query_set_from_file(splade_index *ix, const char *path, const splade_query_encode_opts *opts,
                                          splade_query_set *out);

#ifdef __cplusplus
}
#endif
#endif
