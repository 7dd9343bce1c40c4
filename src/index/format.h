/* On-disk constants and fixed structs of docs/FORMAT.md, shared by writer.c and reader.c. */
#ifndef SPLADE_INDEX_FORMAT_H
#define SPLADE_INDEX_FORMAT_H

#include <stdint.h>

#define SPX_MAGIC "SPLDXIDX"
#define SPX_ALIGN 64
#define SPX_MAX_SECTIONS 32

enum { SEC_META = 1, SEC_VOCAB, SEC_TERMS, SEC_BLOCKS, SEC_POSTINGS, SEC_DOCIDS, SEC_DOCSTORE, SEC_RANGE_TERMS,
       SEC_RANGES, SEC_COUNT_ };

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

#endif
