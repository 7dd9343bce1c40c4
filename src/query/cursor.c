/* Cursor decoding and skipping (see cursor.h). */
#include "index/format.h"
#include "query/cursor.h"

#include "index/postings.h"

static void decode(cursor *c, uint32_t b)
{
    c->count = splade_list_block(c->blocks, c->n_blocks, c->n_postings, c->postings, b, c->docs, &c->imps);
    c->decoded = b;
    c->pos = 0;
    if (c->decodes)
        (*c->decodes)++;
}

void cursor_init_seek(cursor *c, const splade_term_postings *tp, uint32_t qw, uint64_t *decodes)
{
    c->blocks = tp->blocks;
    c->postings = tp->postings;
    c->n_blocks = tp->n_blocks;
    c->n_postings = tp->n_postings;
    c->block = 0;
    c->decoded = UINT32_MAX;
    c->pos = c->count = 0;
    c->qw = qw;
    c->ub = qw * tp->max_impact;
    c->decodes = decodes;
    c->doc = c->n_blocks ? 0 : CURSOR_END;
}

void cursor_init(cursor *c, const splade_term_postings *tp, uint32_t qw, uint64_t *decodes)
{
    cursor_init_seek(c, tp, qw, decodes);
    if (!c->n_blocks)
        return;
    decode(c, 0);
    c->doc = c->docs[0];
}

void cursor_next_geq(cursor *c, uint32_t target)
{
    if (c->doc != CURSOR_END && c->doc >= target && c->decoded == c->block)
        return;
    while (c->block < c->n_blocks && c->blocks[c->block].last_doc < target)
        c->block++;
    if (c->block >= c->n_blocks || target == CURSOR_END) {
        c->doc = CURSOR_END;
        return;
    }
    if (c->decoded != c->block)
        decode(c, c->block);
    uint32_t p = c->pos;
    while (c->docs[p] < target)
        p++; /* stops inside the block: its last doc is >= target */
    c->pos = p;
    c->doc = c->docs[p];
}

uint32_t cursor_find_block(const cursor *c, uint32_t from, uint32_t target)
{
    uint32_t lo = 0, hi = c->n_blocks;
    if (from <= c->n_blocks && (from == 0 || c->blocks[from - 1].last_doc < target)) {
        if (from == c->n_blocks)
            return from; /* every block ends below target */
        uint32_t step = 1; /* forward: gallop */
        lo = from;
        while (lo + step < c->n_blocks && c->blocks[lo + step].last_doc < target)
            lo += step, step *= 2;
        if (c->blocks[lo].last_doc >= target)
            return lo;
        hi = lo + step < c->n_blocks ? lo + step + 1 : c->n_blocks;
    }
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (c->blocks[mid].last_doc < target)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void cursor_locate(cursor *c, uint32_t target)
{
    uint32_t d = c->decoded;
    if (d != UINT32_MAX && c->blocks[d].last_doc >= target && (d == 0 || c->blocks[d - 1].last_doc < target)) {
        c->block = d; /* target inside the decoded block: no metadata search */
        return;
    }
    /* forward: gallop from the block after the decoded one; else (none decoded, or behind) bisect */
    c->block = cursor_find_block(c, d != UINT32_MAX && c->blocks[d].last_doc < target ? d + 1 : UINT32_MAX, target);
}

void cursor_prefetch(const cursor *c)
{
    if (c->block >= c->n_blocks || c->block == c->decoded)
        return;
    const uint8_t *in = c->postings + c->blocks[c->block].offset; /* impacts, then the coded ids */
    for (int line = 0; line < 5; line++)
        __builtin_prefetch(in + 64 * line);
}

void cursor_seek_located(cursor *c, uint32_t target)
{
    if (c->block >= c->n_blocks) {
        c->doc = CURSOR_END;
        return;
    }
    if (c->decoded != c->block)
        decode(c, c->block);
    uint32_t a = 0, b = c->count - 1; /* docs[b] = last_doc >= target */
    while (a < b) {
        uint32_t mid = (a + b) / 2;
        if (c->docs[mid] < target)
            a = mid + 1;
        else
            b = mid;
    }
    c->pos = a;
    c->doc = c->docs[a];
}

void cursor_seek(cursor *c, uint32_t target)
{
    cursor_locate(c, target);
    cursor_seek_located(c, target);
}
