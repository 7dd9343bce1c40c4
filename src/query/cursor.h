/* A posting-list cursor over the block format of docs/FORMAT.md: decodes one block at a time,
 * skips blocks by their last doc id, and exposes block-max bounds without decoding. */
#ifndef SPLADE_QUERY_CURSOR_H
#define SPLADE_QUERY_CURSOR_H

#include <stdint.h>

#include "index/format.h"

#define CURSOR_END UINT32_MAX

typedef struct {
    const splade_block_entry *blocks;
    const uint8_t *postings;
    uint32_t n_blocks, n_postings;
    uint32_t block;    /* block of the current position (or a shallow move's target) */
    uint32_t decoded;  /* block held in docs[], UINT32_MAX if none */
    uint32_t pos, count;
    uint32_t doc;      /* current doc id, CURSOR_END when exhausted */
    const uint8_t *imps;
    uint32_t qw;       /* query impact */
    uint32_t ub;       /* qw × the list's max impact */
    uint64_t *decodes; /* counter to bump per decoded block (stats) */
    uint32_t docs[SPLADE_BLOCK_SIZE];
} cursor;

void cursor_init(cursor *c, const splade_term_postings *tp, uint32_t qw, uint64_t *decodes);
/* The same without decoding the first block, for a cursor moved only by cursor_seek (BMP, which
 * opens every segment's cursors and may never read some of them). */
void cursor_init_seek(cursor *c, const splade_term_postings *tp, uint32_t qw, uint64_t *decodes);
/* Moves to the first posting with doc >= target (CURSOR_END if none). */
void cursor_next_geq(cursor *c, uint32_t target);
/* The same, but target may lie before the current position (random access by binary search). */
void cursor_seek(cursor *c, uint32_t target);
/* cursor_seek in two steps, so that a caller moving many cursors can overlap their memory misses:
 * cursor_locate finds the block (c->block) from block metadata only, cursor_prefetch asks for that
 * block's data if it is not the decoded one, cursor_seek_located then moves as cursor_seek would. */
void cursor_locate(cursor *c, uint32_t target);
/* First block of c whose last doc is >= target (n_blocks if none): galloping forward from block
 * `from` when every block before it ends below target (from = the decoded or current block, so
 * usually a step or two), else by binary search over all blocks (from behind target, or
 * UINT32_MAX). Block metadata only. */
uint32_t cursor_find_block(const cursor *c, uint32_t from, uint32_t target);
void cursor_prefetch(const cursor *c);
void cursor_seek_located(cursor *c, uint32_t target);

static inline uint32_t cursor_score(const cursor *c)
{
    return c->qw * c->imps[c->pos];
}

/* Moves to the next posting. Only valid while the current block is decoded (not after a
 * shallow move), which holds for the lists a DAAT loop steps through. */
static inline void cursor_next(cursor *c)
{
    if (++c->pos < c->count) {
        c->doc = c->docs[c->pos];
        return;
    }
    cursor_next_geq(c, c->doc + 1);
}

/* Bound on qw × impact of any posting with doc id `target`, moving only block metadata. */
static inline uint32_t cursor_block_bound(cursor *c, uint32_t target)
{
    while (c->block < c->n_blocks && c->blocks[c->block].last_doc < target)
        c->block++;
    return c->block < c->n_blocks ? c->qw * c->blocks[c->block].max_impact : 0;
}

#endif
