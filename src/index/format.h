/* On-disk constants and fixed structs of docs/FORMAT.md, shared by writer.c and reader.c, and the
 * posting accessors through which src/query/ reads an opened index: the format is the seam between
 * the index and search stages (internal: not installed; the public side is include/splade/index.h). */
#ifndef SPLADE_INDEX_FORMAT_H
#define SPLADE_INDEX_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "splade/index.h"

#define SPX_MAGIC "SPLDXIDX"
#define SPX_ALIGN 64
#define SPX_MAX_SECTIONS 32

/* SEC_DOCSEQ is optional (docs/FORMAT.md, "Document sequence"): every other section is required. */
enum { SEC_META = 1, SEC_VOCAB, SEC_TERMS, SEC_BLOCKS, SEC_POSTINGS, SEC_DOCIDS, SEC_DOCSTORE, SEC_RANGE_TERMS,
       SEC_RANGES, SEC_DOCSEQ, SEC_COUNT_ };

#pragma pack(push, 1)
typedef struct {
    char magic[8];
    uint32_t version;
    uint32_t header_size;
    uint64_t file_size;
    uint32_t n_sections;
    uint32_t reserved;
} spx_header;

typedef struct {
    uint32_t id;
    uint32_t reserved;
    uint64_t offset;
    uint64_t length;
    uint32_t crc;
    uint32_t reserved2;
} spx_section;

typedef struct {
    uint32_t n_docs;
    uint32_t n_terms;
    uint64_t n_postings;
    uint64_t n_blocks;
    uint32_t block_size;
    uint32_t impact_bits;
    float doc_scale;
    uint32_t query_bits;
    uint64_t fingerprint;
    uint32_t flags;
    int32_t max_length;
    uint32_t n_truncated;
    uint32_t range_shift;
    uint64_t build_time;
} spx_meta;
#pragma pack(pop)

_Static_assert(sizeof(spx_header) == 32, "header layout");
_Static_assert(sizeof(spx_section) == 32, "section layout");
_Static_assert(sizeof(spx_meta) == 72, "meta layout");

static inline uint32_t spx_header_bytes(uint32_t n_sections)
{
    return (uint32_t)sizeof(spx_header) + 32u * n_sections + 8u; /* + header CRC + reserved */
}

#define SPLADE_INDEX_VERSION 2
#define SPLADE_BLOCK_SIZE 128
#define SPLADE_SNIPPET_BYTES 200 /* stored per document for the CLI's result lines */
#define SPLADE_RANGE_SHIFT 6 /* doc-id ranges of 64 documents carry per-term maxima (BMP pruning) */

/* CRC32C (Castagnoli) of n bytes continuing from crc (start with 0). */
uint32_t splade_crc32c(uint32_t crc, const void *data, size_t n);
/* The CRC32C of A followed by B from crc_a = CRC32C(A), crc_b = CRC32C(B) and B's length (zlib's
 * crc32_combine for the Castagnoli polynomial): lets pieces of a section be summed on several threads. */
uint32_t splade_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* 8-bit linear quantization over [0, max]: max(1, round(w * 255 / max)); 0 for w <= 0.
 * The one function both the index and the query side use, so brute force can reproduce scores. */
uint8_t splade_quantize(float w, float max);

/* The quantization maximum of a collection whose impact unit is doc_scale (docs/FORMAT.md,
 * "Quantization and scores"): every segment of an index quantizes with the same one, so a document's
 * impacts do not depend on which segment holds it. */
static inline float splade_scale_max(float doc_scale)
{
    return (float)((double)doc_scale * 255.0);
}

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

void splade_index_postings(const splade_index *ix, int32_t term, splade_term_postings *out);
void splade_index_ranges(const splade_index *ix, int32_t term, splade_term_ranges *out);

#endif
