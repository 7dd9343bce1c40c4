/* The inverted index: building (src/index/builder.c, invert.c, writer.c) and reading
 * (src/index/reader.c). The file layout is specified in docs/FORMAT.md.
 *
 * Building: create a builder (model vocabulary or vocabulary from token strings), add documents in
 * corpus order (internal id = order of addition), attach each document's sparse vector (in any
 * order, e.g. after length-sorted encoding), then splade_builder_write() inverts, writes, verifies
 * and atomically installs DIR/index.spx.
 *
 * Reading: splade_index_open() maps the file read-only and checks every checksum; all pointers it
 * hands out point into that mapping and stay valid until splade_index_close(). */
#ifndef SPLADE_INDEX_H
#define SPLADE_INDEX_H

#include "splade.h"

#include <stddef.h>
#include <stdint.h>


#ifdef __cplusplus
extern "C" {
#endif

#define SPLADE_INDEX_FILE "index.spx"
#define SPLADE_INDEX_DEFAULT_DIR "splade.idx" /* the CLI's when neither -o/-i nor $SPLADE_INDEX is given */
enum { SPLADE_IX_LOWERCASE = 1, SPLADE_IX_HAS_MODEL = 2, SPLADE_IX_SORTED_VOCAB = 4, SPLADE_IX_REORDERED = 8,
       SPLADE_IX_QUERY_TABLE = 16 /* inference-free model: queries are weighted by its query table */ };

/* ---- building ---- */

typedef struct {
    const char *name;     /* as the user gave it (--model); may be NULL */
    const char *dir;      /* model directory (stored absolute); may be NULL */
    uint64_t fingerprint;
    int lowercase;
    int32_t max_length;
    int query_table;      /* 1: an inference-free model (splade_model_has_query_table): flag SPLADE_IX_QUERY_TABLE */
} splade_index_model;

typedef struct {
    uint32_t n_docs;
    uint64_t n_postings;
    uint32_t n_terms_used;   /* terms with at least one posting */
    uint32_t n_truncated;
    uint64_t file_bytes;
    double invert_s, write_s; /* inversion+encoding, writing+fsync+verify+rename */
    double reorder_s;         /* part of invert_s: choosing the document order (0 if kept) */
    double scatter_s;         /* part of invert_s: quantizing and grouping postings by term (radix passes) */
    double encode_s;          /* part of invert_s: block and range encoding */
    double verify_s;          /* part of write_s: fsync of the written file and, at the same time, re-opening and
                               * checking it (install.c) */
} splade_build_stats;

/* Thread safety: a builder is used by one thread at a time (splade_builder_write runs its own
 * threads inside). Builders are independent; two builders writing the same folder are serialised
 * by its lock (splade_builder_lock, include/splade/build.h). */
typedef struct splade_index_builder splade_index_builder;

/* A builder over a fixed vocabulary (tokens[i] is term i, e.g. the model's vocab.txt), or, with
 * tokens == NULL and n_terms == 0, one whose vocabulary grows with splade_builder_term().
 * model may be NULL (no model: --vectors). *out owned by the caller: splade_builder_free. */
SPLADE_API int splade_builder_create(const char *const *tokens, int32_t n_terms, const splade_index_model *model,
                                     splade_index_builder **out);

/* Appends a document (internal id = number of documents added before). `where` names the input
 * for messages ("corpus.jsonl"). A repeated id fails with SPLADE_ERR_DUPLICATE naming both lines. */
SPLADE_API int splade_builder_add_doc(splade_index_builder *b, const char *where, const char *id, const char *title,
                                      const char *body, long line, uint32_t *doc);

/* Term id of a token in a growing vocabulary (interned on first use). */
SPLADE_API int splade_builder_term(splade_index_builder *b, const char *token, size_t len, int32_t *term);

/* Sets document `doc`'s vector: n (term, weight) pairs, distinct terms in any order, weights > 0
 * and finite (others rejected with SPLADE_ERR_INVALID_ARG). Copies the arrays. */
SPLADE_API int splade_builder_set_vector(splade_index_builder *b, uint32_t doc, const int32_t *terms,
                                         const float *weights, int32_t n);

/* Internal ids in corpus order (keep != 0) instead of the default build-time reordering that
 * groups similar documents (docs/FORMAT.md, "Document order"). Ranking is the same either way
 * and so are ties (they go to the document added first, whatever its internal id). */
SPLADE_API void splade_builder_keep_order(splade_index_builder *b, int keep);

/* Threads splade_builder_write may use for the inversion: reordering, radix passes and encoding
 * (default, or threads <= 0: all online cores; collections under 65,536 postings use one). The index
 * file does not depend on it (byte for byte, given the same build time: see splade_builder_set_build_time). */
SPLADE_API void splade_builder_set_threads(splade_index_builder *b, int threads);

/* The build time (Unix seconds) the index records instead of the time of writing. A fixed time
 * makes the same input give the same file, byte for byte (reproducible builds: the CLI passes
 * $SOURCE_DATE_EPOCH, docs/FORMAT.md). */
SPLADE_API void splade_builder_set_build_time(splade_index_builder *b, uint64_t unix_seconds);

/* A flag splade_builder_write reads between its stages (before the inversion, after it, after the
 * file is written, before the rename; NULL, the default: never). Once *cancel != 0 the write removes
 * its temporary file and returns SPLADE_ERR_CANCELLED, the previous index untouched. A stage in flight
 * (the inversion, the write, the fsync + verification) is not interrupted: the stop comes at its end. */
SPLADE_API void splade_builder_set_cancel(splade_index_builder *b, const volatile int *cancel);

/* Quantizes with this doc_scale (the weight of one impact unit) instead of the collection's largest
 * weight / 255: every segment of an index uses the index's doc_scale, so that scores do not depend
 * on how documents are split into segments (docs/FORMAT.md, "Segments and the manifest"). A weight
 * above 255 × doc_scale saturates at impact 255 and is counted (splade_builder_clipped). 0: automatic
 * (the default). SPLADE_ERR_INVALID_ARG unless finite and >= 0. */
SPLADE_API int splade_builder_set_doc_scale(splade_index_builder *b, float doc_scale);
/* Postings the last splade_builder_write (or segment write) saturated at 255 under a set doc_scale. */
SPLADE_API uint64_t splade_builder_clipped(const splade_index_builder *b);

SPLADE_API void splade_builder_add_truncated(splade_index_builder *b, uint32_t n);
SPLADE_API uint32_t splade_builder_n_docs(const splade_index_builder *b);

/* With DIR's build lock held (splade_builder_lock in include/splade/build.h, else taken for this
 * call): inverts, writes DIR/.index.spx.tmp-<pid>-<random>, fsyncs, re-opens and verifies it through
 * its descriptor, renames it onto DIR/index.spx (creating DIR if needed). The previous index stays in
 * place until that rename. Temporary files of killed builds are removed. stats may be NULL. */
SPLADE_API int splade_builder_write(splade_index_builder *b, const char *dir, splade_build_stats *stats);

SPLADE_API void splade_builder_free(splade_index_builder *b);

/* ---- reading ---- */

typedef struct {
    uint32_t n_docs, n_terms;
    uint64_t n_postings, n_blocks;
    float doc_scale;          /* weight of one impact unit */
    uint64_t fingerprint;
    uint32_t flags;           /* SPLADE_IX_* */
    int32_t max_length;
    uint32_t n_truncated;
    uint64_t build_time;
    const char *model_name;   /* "" when none */
    const char *model_dir;    /* "" when none */
    uint64_t file_bytes;
} splade_index_info;

/* Thread safety: read-only once opened; every function below and in query.h may be called on one
 * index from any number of threads at once (the token hash table of splade_index_term_lookup is
 * built once, under a lock, by whichever thread needs it first). Close it after the last user. A
 * rebuild of the folder installs a new file: an open index keeps answering from the old one. */
typedef struct splade_index splade_index;

/* Opens DIR/index.spx (or `dir` itself if it is a regular file). Checks magic, version, size and
 * every CRC: SPLADE_ERR_NOT_FOUND, _VERSION, _FORMAT (truncated / inconsistent) or _CHECKSUM. */
SPLADE_API int splade_index_open(const char *dir, splade_index **out);
SPLADE_API void splade_index_close(splade_index *ix);

SPLADE_API const splade_index_info *splade_index_get_info(const splade_index *ix);
/* Corpus id of an internal doc id (not NUL-terminated: *len bytes). */
SPLADE_API const char *splade_index_doc_id(const splade_index *ix, uint32_t doc, size_t *len);
/* Title and snippet (NUL-terminated, "" when empty). */
SPLADE_API void splade_index_doc_text(const splade_index *ix, uint32_t doc, const char **title, const char **snippet);
/* Token of a term id (not NUL-terminated: *len bytes), NULL if out of range. */
SPLADE_API const char *splade_index_term(const splade_index *ix, int32_t term, size_t *len);
/* Term id of a token, or -1. Binary search when the vocabulary is sorted, else a hash table built
 * on first use (thread safe; splade_index_prepare_lookup builds it ahead, reporting SPLADE_ERR_NOMEM). */
SPLADE_API int32_t splade_index_term_lookup(splade_index *ix, const char *token, size_t len);
SPLADE_API int splade_index_prepare_lookup(splade_index *ix);

/* Called once per live document by splade_index_doc_vectors: `doc` is its id in the opened index
 * (splade_index_doc_id), terms ascending (the index's term ids, splade_index_term), weights > 0;
 * the arrays are valid during the call only. A non-zero return stops the walk and is returned. */
typedef int (*splade_doc_vector_fn)(void *user, uint32_t doc, const int32_t *terms, const float *weights,
                                    int32_t n);
/* Each live document's stored vector, de-quantized: impact i becomes the weight i × doc_scale, so
 * each weight is within doc_scale / 2 of the encoder's (one under doc_scale / 2 comes back as
 * doc_scale, impacts being at least 1; a clipped one, docs/FORMAT.md, as 255 × doc_scale). Documents come segment by segment (manifest order), each segment's in
 * sequence order (a single file: corpus order). Decodes one segment at a time: memory is about
 * 5 bytes per posting of the largest segment. */
SPLADE_API int splade_index_doc_vectors(const splade_index *ix, splade_doc_vector_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif
