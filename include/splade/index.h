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

#include "splade/corpus.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SPLADE_INDEX_FILE "index.spx"
#define SPLADE_INDEX_DEFAULT_DIR "splade.idx" /* the CLI's when neither -o/-i nor $SPLADE_INDEX is given */
#define SPLADE_INDEX_VERSION 2
#define SPLADE_BLOCK_SIZE 128
#define SPLADE_SNIPPET_BYTES 200
#define SPLADE_RANGE_SHIFT 6 /* doc-id ranges of 64 documents carry per-term maxima (BMP pruning) */

enum { SPLADE_IX_LOWERCASE = 1, SPLADE_IX_HAS_MODEL = 2, SPLADE_IX_SORTED_VOCAB = 4, SPLADE_IX_REORDERED = 8 };

/* CRC32C (Castagnoli) of n bytes continuing from crc (start with 0). */
SPLADE_API uint32_t splade_crc32c(uint32_t crc, const void *data, size_t n);
/* The CRC32C of A followed by B from crc_a = CRC32C(A), crc_b = CRC32C(B) and B's length (zlib's
 * crc32_combine for the Castagnoli polynomial): lets pieces of a section be summed on several threads. */
SPLADE_API uint32_t splade_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* 8-bit linear quantization over [0, max]: max(1, round(w * 255 / max)); 0 for w <= 0.
 * The one function both the index and the query side use, so brute force can reproduce scores. */
SPLADE_API uint8_t splade_quantize(float w, float max);

/* ---- building ---- */

typedef struct {
    const char *name;     /* as the user gave it (--model); may be NULL */
    const char *dir;      /* model directory (stored absolute); may be NULL */
    uint64_t fingerprint;
    int lowercase;
    int32_t max_length;
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
 * except among equal scores, which go to the lower internal id. */
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

#pragma pack(push, 1)
typedef struct {
    uint64_t first_block;
    uint32_t n_postings;
    uint8_t max_impact;
    uint8_t pad[3];
} splade_term_entry;

typedef struct {
    uint64_t offset;   /* into the POSTINGS section */
    uint32_t last_doc;
    uint8_t max_impact;
    uint8_t pad[3];
} splade_block_entry;

typedef struct {
    uint64_t offset;   /* into the RANGES section */
    uint32_t n_ranges; /* doc-id ranges (of 2^SPLADE_RANGE_SHIFT docs) holding a posting of the term */
    uint32_t flags;    /* SPLADE_RANGES_DENSE */
} splade_range_term;
#pragma pack(pop)

enum { SPLADE_RANGES_DENSE = 1 }; /* maxima of every range (0: absent), no range ids */

/* The writer's choice (docs/FORMAT.md, "Range maxima"): a term present in at least a quarter of the
 * ranges of a collection of at least 64 ranges gets a dense table: no larger than the sparse
 * list within 2x, and summed 16 ranges per instruction instead of one scattered add per range. */
static inline int splade_ranges_dense(uint32_t n_ranges, uint32_t total_ranges)
{
    return total_ranges >= 64 && (uint64_t)n_ranges * 4 >= total_ranges;
}

/* One term's range maxima. Sparse: maxima[i] is the largest impact in range ids[i]; the ids are
 * streamvbyte delta-coded (splade_block_decode_docs-style) right after the maxima. Dense: data is
 * u8 maxima[total ranges] indexed by range id, 0 where the term is absent. */
typedef struct {
    uint32_t n;
    int dense;
    const uint8_t *data; /* sparse: u8 maxima[n], then the coded range ids; dense: u8 maxima[total] */
} splade_term_ranges;

/* One term's postings, pointing into the mapping. */
typedef struct {
    uint32_t n_postings;
    uint32_t n_blocks;
    uint8_t max_impact;
    const splade_block_entry *blocks;
    const uint8_t *postings;  /* start of the POSTINGS section (block offsets are relative to it) */
} splade_term_postings;

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
/* Term id of a token, or -1. Binary search when the vocabulary is sorted, else a table built on
 * first use (call once before sharing ix between threads: splade_index_prepare_lookup). */
SPLADE_API int32_t splade_index_term_lookup(splade_index *ix, const char *token, size_t len);
SPLADE_API int splade_index_prepare_lookup(splade_index *ix);
SPLADE_API void splade_index_postings(const splade_index *ix, int32_t term, splade_term_postings *out);
SPLADE_API void splade_index_ranges(const splade_index *ix, int32_t term, splade_term_ranges *out);

#ifdef __cplusplus
}
#endif
#endif
