/* Random SPLADE-like documents over a small vocabulary for the search tests that compare an index
 * with brute force (tests/test_segment_search.c, tests/test_gpu_search.c): skewed tokens (low ids
 * frequent: long lists), a topic's strong tokens, weights coarse (ties) or continuous. Header-only;
 * the xorshift state `rng` is the including test's to seed. */
#ifndef SPLADE_TEST_RANDOM_VDOCS_H
#define SPLADE_TEST_RANDOM_VDOCS_H

#include <stdint.h>

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

#endif
