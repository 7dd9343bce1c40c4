/* Exhaustive term-at-a-time scoring: every posting of every query term is added into a
 * per-document accumulator, then one pass keeps the top k. The baseline the pruned methods are
 * measured against (bench/bench_index.c) and a second exact method for the tests. */

#include "index/format.h"
#include "index/postings.h"
#include "query/search_internal.h"

static void add_list(splade_searcher *s, const cursor *c, uint32_t n_docs)
{
    uint32_t docs[SPLADE_BLOCK_SIZE];
    for (uint32_t b = 0; b < c->n_blocks; b++) {
        const uint8_t *in;
        const uint32_t count = splade_list_block(c->blocks, c->n_blocks, c->n_postings, c->postings, b, docs, &in);
        for (uint32_t i = 0; i < count; i++)
            if (docs[i] < n_docs) /* a damaged list must not write outside the accumulators */
                s->acc[docs[i]] += c->qw * in[i];
        s->stats.postings_scored += count;
        s->stats.blocks_decoded++;
    }
}

void splade_taat(splade_searcher *s, int n, topk *t)
{
    splade_taat_cursors(s, s->cursors, n, t);
}

void splade_taat_cursors(splade_searcher *s, const cursor *c, int n, topk *t)
{
    uint32_t n_docs = s->seg->n_docs;
    for (int i = 0; i < n; i++)
        add_list(s, &c[i], n_docs);
    uint32_t theta = topk_threshold(t); /* below it nothing enters; a tie is decided by seg_offer */
    for (uint32_t d = 0; d < n_docs; d++) {
        uint32_t a = s->acc[d];
        if (!a)
            continue;
        s->acc[d] = 0;
        if (a >= theta) {
            seg_offer(s, t, d, a);
            theta = topk_threshold(t);
        }
    }
}
