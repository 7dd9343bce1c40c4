/* Feeding a builder (include/splade/index.h) from input files: precomputed vectors
 * (src/index/ingest_vectors.c), the build lock and the empty-build rule. A text corpus through the
 * encoder is the pipeline's (include/splade/pipeline.h): this stage knows no encoder. */
#ifndef SPLADE_BUILD_H
#define SPLADE_BUILD_H

#include <stdint.h>

#include "splade.h"
#include "splade/index.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int skip_invalid;        /* count and skip malformed lines instead of failing; each one skipped is
                                logged (SPLADE_LOG_WARNING "skipped: PATH:LINE: reason") */
    int allow_empty;         /* an input without any record is not an error (build --allow-empty) */
    uint32_t skipped;        /* out: malformed lines skipped */
    /* Stage "documents": done = documents added (for a corpus: encoded, after each chunk), total =
     * the input's lines (splade_count_lines; 0 for gzip or a pipe) until the last call, which has
     * done == total == the documents read. NULL: no calls. */
    splade_progress_fn progress;
    void *progress_user;
    /* NULL (default): never cancelled. Else read between chunks of documents (splade_ingest_corpus;
     * the encoder reads its own flag, splade_encoder_opts.cancel, between batches): once *cancel != 0
     * the ingest returns SPLADE_ERR_CANCELLED, with the documents of the chunks before it in the
     * builder; free it (nothing was written). */
    const volatile int *cancel;
} splade_ingest_opts;

/* Fills *o with the defaults (no skipping, empty inputs refused, no progress callback). */
SPLADE_API void splade_ingest_opts_init(splade_ingest_opts *o);

/* Input of either kind (plain or gzip) that yields no document fails: SPLADE_ERR_FORMAT "every line
 * of PATH was invalid (N skipped)" when --skip-invalid dropped every line (even with allow_empty),
 * "PATH holds no documents" for an input without any record unless allow_empty. */

/* Adds every record of a vectors JSONL file (include/splade/vectors.h) to a builder created with a
 * growing vocabulary. Duplicate ids always fail (SPLADE_ERR_DUPLICATE naming both lines). */
SPLADE_API int splade_ingest_vectors(splade_index_builder *b, const char *path, splade_ingest_opts *opts);

/* Takes the exclusive build lock of index folder dir (creating it) for this builder, until
 * splade_builder_free: a build holds it from its start, so a second build into the same folder fails
 * at once ("another build is writing this index (pid P on host H, started T ...)") instead of after
 * encoding its corpus. splade_builder_write takes the lock itself for its own duration when the
 * builder does not hold it. Readers never take it. The lock is flock(2) on DIR/.lock, which names
 * the holder and is removed when released. */
SPLADE_API int splade_builder_lock(splade_index_builder *b, const char *dir);

/* allow != 0: splade_builder_write may replace an index that has postings with one that has none
 * (0 documents, or only empty vectors). By default that is refused (SPLADE_ERR_INVALID_ARG naming the
 * index and both counts): a build that read nothing useful must not wipe out a good index. */
SPLADE_API void splade_builder_allow_empty(splade_index_builder *b, int allow);

/* Bounded memory (docs/FORMAT.md, "Bounded-memory builds"): once the builder's estimated memory
 * (splade_builder_memory_estimate: its documents, their vectors and what inverting them takes)
 * reaches `bytes`, the documents so far are written into DIR as a segment (reordered on its own) and
 * the builder starts afresh; splade_builder_write (build) or splade_index_add (append != 0) installs
 * every segment in one new generation, and a builder freed before that removes them. The segments
 * share one doc_scale: the one set with splade_builder_set_doc_scale, else (append) the index's, else
 * the first segment's largest weight / 255 (later weights above it are clipped at impact 255 and
 * counted per segment). Takes the folder's lock (splade_builder_lock). bytes == 0: unbounded (the
 * default). Call before the first document. */
SPLADE_API int splade_builder_set_memory(splade_index_builder *b, const char *dir, uint64_t bytes, int append);
SPLADE_API uint64_t splade_builder_memory_estimate(const splade_index_builder *b);
/* The CLI's default budget: a quarter of the physical memory. */
SPLADE_API uint64_t splade_default_memory(void);

/* The size-tiered merge policy after a bounded build that wrote several segments (the one
 * splade_index_add runs, include/splade/segments.h): once they are installed, the smallest are merged
 * (streaming, as a second generation) until at most max_segments remain. max_segments 0: the default
 * (SPLADE_MERGE_POLICY_SEGMENTS, 10); < 0: never. splade_builder_merged: the segments it merged in
 * the last write (0: none). */
SPLADE_API void splade_builder_set_merge_policy(splade_index_builder *b, int max_segments);
SPLADE_API int splade_builder_merged(const splade_index_builder *b);

/* Lines of a regular uncompressed file (for the progress bar's ETA); 0 if unknown. */
SPLADE_API uint64_t splade_count_lines(const char *path);

/* The no-document check described at splade_ingest_opts, after ingesting `path` into b. */
SPLADE_API int splade_ingest_check_found(const splade_index_builder *b, const char *path, const splade_ingest_opts *opts);

#ifdef __cplusplus
}
#endif
#endif
