/* Feeding a builder (include/splade/index.h) from input files: precomputed vectors
 * (src/index/ingest_vectors.c) or a text corpus through the encoder (src/index/ingest_corpus.c). */
#ifndef SPLADE_BUILD_H
#define SPLADE_BUILD_H

#include <stdint.h>

#include "splade/encoder.h"
#include "splade/index.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int skip_invalid;        /* count and skip malformed lines instead of failing */
    int quiet;               /* no progress bar */
    int allow_empty;         /* an input without any record is not an error (build --allow-empty) */
    uint32_t skipped;        /* out: malformed lines skipped */
} splade_ingest_opts;

/* Input of either kind (plain or gzip) that yields no document fails: SPLADE_ERR_FORMAT "every line
 * of PATH was invalid (N skipped)" when --skip-invalid dropped every line (even with allow_empty),
 * "PATH holds no documents" for an input without any record unless allow_empty. */

/* Adds every record of a vectors JSONL file (include/splade/vectors.h) to a builder created with a
 * growing vocabulary. Duplicate ids always fail (SPLADE_ERR_DUPLICATE naming both lines). */
int splade_ingest_vectors(splade_index_builder *b, const char *path, splade_ingest_opts *opts);

/* Adds every document of a corpus JSONL file (include/splade/corpus.h), encoding chunk_docs texts
 * per encoder call (the encoder sorts them by length into batches). The builder must use the
 * encoder's model vocabulary. Malformed lines fail with "PATH:LINE: reason" unless skip_invalid. */
int splade_ingest_corpus(splade_index_builder *b, const char *path, splade_encoder *enc, int chunk_docs,
                         splade_ingest_opts *opts);

/* A builder over m's vocabulary recording m (name as the user gave it, absolute folder,
 * fingerprint, lowercase) and the encoder's effective max_length in the index. */
int splade_builder_create_for_model(const splade_model *m, const char *name, int32_t max_length,
                                    splade_index_builder **out);

/* Lines of a regular uncompressed file (for the progress bar's ETA); 0 if unknown. */
uint64_t splade_count_lines(const char *path);

/* The check above, after ingesting `path` into b. */
int splade_ingest_check_found(const splade_index_builder *b, const char *path, const splade_ingest_opts *opts);

#ifdef __cplusplus
}
#endif
#endif
