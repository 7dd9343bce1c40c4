/* Random SPLADE-like documents over a small vocabulary for the search tests that compare an index
 * with brute force (tests/test_segment_search.c, tests/test_gpu_search.c): skewed tokens (low ids
 * frequent: long lists), a topic's strong tokens, weights coarse (ties) or continuous. Header-only
 * (needs cmocka included first); the xorshift state `rng` is the including test's to seed. */
#ifndef SPLADE_TEST_RANDOM_VDOCS_H
#define SPLADE_TEST_RANDOM_VDOCS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "splade/build.h"
#include "xorshift.h"

#define VOCAB 400
#define MAX_TERMS 30

typedef struct {
    int n;
    int32_t tok[MAX_TERMS]; /* token "w<tok>" */
    float w[MAX_TERMS];
    int deleted;
} vdoc;


/* Skewed tokens (low ids frequent); weights coarse (ties) or continuous, some above the index's
 * quantization maximum (clipped to 255 like the brute force does). `topic` adds strong tokens of a
 * small group, so that ranges differ and BMP's bounds prune. */
static void random_doc(vdoc *v, int coarse, int topic)
{
    int want = 1 + (int)(rnd() % MAX_TERMS);
    v->n = 0;
    v->deleted = 0;
    for (int i = 0; i < want; i++) {
        uint32_t a = rnd() % VOCAB, b = rnd() % VOCAB;
        int32_t t = i < want / 3 ? (int32_t)(topic * 10 + (int)(rnd() % 10)) % VOCAB : (int32_t)(a < b ? a : b);
        int seen = 0;
        for (int j = 0; j < v->n; j++)
            seen |= v->tok[j] == t;
        if (seen)
            continue;
        v->tok[v->n] = t;
        v->w[v->n++] = coarse ? (float)(1 + rnd() % 4) * 0.5f : 2.5f * (float)(1 + rnd() % 10000) / 10000.0f;
    }
}

/* Document i's id in vdocs_builder's indexes. */
static void vdoc_id(int i, char *out, size_t len)
{
    snprintf(out, len, "d%d", i);
}

/* A builder with documents [from, to) of docs (ids vdoc_id, tokens "w<tok>"), in their order when keep. */
static splade_index_builder *vdocs_builder(const vdoc *docs, int from, int to, int keep)
{
    splade_index_builder *b;
    assert_int_equal(splade_builder_create(NULL, 0, NULL, &b), 0);
    splade_builder_keep_order(b, keep);
    for (int i = from; i < to; i++) {
        uint32_t doc;
        int32_t terms[MAX_TERMS];
        char id[24];
        vdoc_id(i, id, sizeof id);
        assert_int_equal(splade_builder_add_doc(b, "test", id, "", id, i - from + 1, &doc), 0);
        for (int j = 0; j < docs[i].n; j++) {
            char tok[16];
            snprintf(tok, sizeof tok, "w%d", docs[i].tok[j]);
            assert_int_equal(splade_builder_term(b, tok, strlen(tok), &terms[j]), 0);
        }
        assert_int_equal(splade_builder_set_vector(b, doc, terms, docs[i].w, docs[i].n), 0);
    }
    return b;
}

#endif
