/* A living index (docs/FORMAT.md, "Segments and the manifest"): an index folder holds immutable
 * segment files and DIR/MANIFEST naming the live ones and their deleted documents. Documents are
 * added as a new segment, deleted by id, updated (delete + add), and segments merged; readers
 * (splade_index_open) see one generation at a time and never take a lock. Every function here is a
 * writer: it holds the folder's lock (the one `build` takes, DIR/.lock) for its whole duration, so
 * a second writer fails at once with an error naming the holder. */
#ifndef SPLADE_SEGMENTS_H
#define SPLADE_SEGMENTS_H

#include <stddef.h>
#include <stdint.h>

#include "splade.h"
#include "splade/index.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SPLADE_MERGE_POLICY_SEGMENTS 10 /* the size-tiered policy keeps at most this many segments */

typedef struct {
    int update;       /* an id already live in the index replaces that document (delete + add); else an error */
    int no_merge;     /* no size-tiered merge after the add */
    int max_segments; /* the policy's limit (0: SPLADE_MERGE_POLICY_SEGMENTS) */
    int threads;      /* for checks and merging (<= 0: all cores) */
} splade_add_opts;

/* Fills *o with the defaults (an existing id is an error, the size-tiered merge runs with its default
 * limit, all cores): init first, then set the fields you know, so later fields keep their defaults. */
SPLADE_API void splade_add_opts_init(splade_add_opts *o);

typedef struct {
    uint32_t n_added;          /* documents in the new segment */
    uint32_t n_replaced;       /* live documents it replaced (update) */
    uint64_t n_postings;
    uint64_t clipped;          /* postings saturated at impact 255 under the index's doc_scale */
    uint64_t generation;       /* the generation installed */
    int n_merged;              /* segments the policy merged afterwards (0: none) */
    char segment[64];          /* the new segment's file name */
    splade_build_stats build;
} splade_add_stats;

/* Appends the builder's documents (created, filled and preferably locked with splade_builder_lock
 * like a build) to the index in dir as a new segment, quantized with the index's doc_scale.
 * Fails, writing nothing, when dir holds no index (SPLADE_ERR_NOT_FOUND: build one first), when it
 * does not open (corrupted), when the builder's vocabulary is of another kind or model
 * (SPLADE_ERR_MISMATCH), or when a document's id is live in the index and !opts->update
 * (SPLADE_ERR_DUPLICATE naming the id, its input line and the segment holding it). opts may be NULL. */
SPLADE_API int splade_index_add(splade_index_builder *b, const char *dir, const splade_add_opts *opts,
                                splade_add_stats *st);

typedef struct {
    uint32_t n_deleted;        /* live documents deleted */
    uint32_t n_unknown;        /* ids not live in the index (unknown or already deleted) */
    char unknown[256];         /* the first few of them, quoted, comma-separated */
    uint64_t generation;       /* the generation installed (unchanged when nothing was deleted) */
} splade_delete_stats;

/* Deletes the live documents with these ids. Unknown ids are counted and listed in st; with strict
 * they fail the call (SPLADE_ERR_NOT_FOUND) and nothing is changed. */
SPLADE_API int splade_index_delete(const char *dir, const char *const *ids, size_t n, int strict,
                                   splade_delete_stats *st);

typedef struct {
    int n_merged;              /* segments merged into one (0: nothing to do) */
    uint32_t n_docs;           /* live documents in the merged segment */
    uint32_t n_dropped;        /* deleted documents dropped */
    uint64_t bytes_in, bytes_out;
    uint64_t generation;
    char segment[64];
} splade_merge_stats;

/* Merges the live segments into one, dropping deleted documents (max_segments <= 0), or only the
 * smallest ones, so that at most max_segments remain. Keeps each document's sequence number (the
 * tie order) and the index's doc_scale: searches answer exactly as before. The merge streams posting
 * lists term by term (docs/FORMAT.md, "Merging"): its memory is bounded by the merged segment's term
 * and block tables and one term's postings, not by the collection. */
SPLADE_API int splade_index_merge(const char *dir, int max_segments, int threads, splade_merge_stats *st);

typedef struct {
    int max_segments;           /* as splade_index_merge's (<= 0: merge everything into one) */
    int threads;                /* for the checks (<= 0: all cores) */
    /* NULL (default): never cancelled. Else read between terms and before the new segment is
     * renamed into place: once *cancel != 0 the merge stops with SPLADE_ERR_CANCELLED, its temporary
     * file removed, the index's generation unchanged. */
    const volatile int *cancel;
} splade_merge_opts;

/* Fills *o with the defaults (everything into one, all cores, no cancel flag). */
SPLADE_API void splade_merge_opts_init(splade_merge_opts *o);
/* splade_index_merge with options (opts may be NULL: the defaults). */
SPLADE_API int splade_index_merge_opts(const char *dir, const splade_merge_opts *opts, splade_merge_stats *st);

/* ---- inspecting an open index ---- */

typedef struct {
    const char *file;          /* "index.spx" for a single-file index */
    uint32_t n_docs;           /* documents in the file, deleted ones included */
    uint32_t n_deleted;
    uint64_t n_postings;       /* postings in the file (those of deleted documents included) */
    uint64_t bytes;            /* the file's size (plus its deletion file's) */
    uint64_t clipped;
    uint64_t seq_base;
    const char *deletions;     /* deletion file, "" when none */
} splade_segment_info;

/* Segments of an open index (1 for a single file) and the manifest generation it opened (0 for a
 * single file). get_info's n_docs counts live documents; their ids are numbered segment after
 * segment (docs/FORMAT.md). */
SPLADE_API int splade_index_segment_count(const splade_index *ix);
SPLADE_API int splade_index_segment_info(const splade_index *ix, int i, splade_segment_info *out);
SPLADE_API uint64_t splade_index_generation(const splade_index *ix);

#ifdef __cplusplus
}
#endif
#endif
