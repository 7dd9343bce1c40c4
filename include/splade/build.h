/* Feeding a builder (include/splade/index.h) from input files: precomputed vectors
 * (src/index/ingest_vectors.c) or a text corpus through the encoder (src/index/ingest_corpus.c). */
#ifndef SPLADE_BUILD_H
#define SPLADE_BUILD_H

#include "splade.h"

#include <stdint.h>

#include "splade/encoder.h"
#include "splade/index.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int skip_invalid;        /* count and skip malformed lines instead of failing */
    int quiet;               /* no progress bar */
    uint32_t skipped;        /* out: malformed lines skipped */
} splade_ingest_opts;

/* Adds every record of a vectors JSONL file (include/splade/vectors.h) to a builder created with a
 * growing vocabulary. Duplicate ids always fail (SPLADE_ERR_DUPLICATE naming both lines). */
SPLADE_API int splade_ingest_vectors(splade_index_builder *b, const char *path, splade_ingest_opts *opts);

/* Adds every document of a corpus JSONL file (include/splade/corpus.h), encoding chunk_docs texts
 * per encoder call (the encoder sorts them by length into batches). The builder must use the
 * encoder's model vocabulary. Malformed lines fail with "PATH:LINE: reason" unless skip_invalid. */
SPLADE_API int splade_ingest_corpus(splade_index_builder *b, const char *path, splade_encoder *enc, int chunk_docs,
                                    splade_ingest_opts *opts);

/* A builder over m's vocabulary recording m (name as the user gave it, absolute folder,
 * fingerprint, lowercase) and the encoder's effective max_length in the index. */
SPLADE_API int splade_builder_create_for_model(const splade_model *m, const char *name, int32_t max_length,
                                               splade_index_builder **out);

/* Lines of a regular file (for the progress bar's ETA); 0 if unknown. */
SPLADE_API uint64_t splade_count_lines(const char *path);

#ifdef __cplusplus
}
#endif
#endif
