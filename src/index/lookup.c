/* Token -> term id for an open index: binary search over a sorted vocabulary (--vectors
 * indexes), or a hash table built once over a model's vocabulary (which is in id order). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "index/reader_internal.h"
#include "splade.h"

static int cmp_bytes(const char *a, size_t la, const char *b, size_t lb)
{
    int c = memcmp(a, b, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

static uint32_t hash_token(const char *s, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

static uint32_t *slot_of(const splade_index *ix, const char *tok, size_t len)
{
    uint32_t mask = ix->n_lookup - 1;
    for (uint32_t i = hash_token(tok, len) & mask;; i = (i + 1) & mask) {
        if (!ix->lookup[i])
            return &ix->lookup[i];
        size_t l;
        const char *s = splade_index_term(ix, (int32_t)ix->lookup[i] - 1, &l);
        if (!cmp_bytes(s, l, tok, len))
            return &ix->lookup[i];
    }
}

/* Fills ix->lookup; called with lookup_lock held, before lookup_ready is set. */
static int build_lookup(splade_index *ix)
{
    uint32_t n = 64;
    while (n < ix->info.n_terms * 2u)
        n *= 2;
    ix->lookup = calloc(n, sizeof *ix->lookup);
    if (!ix->lookup)
        return splade_fail(SPLADE_ERR_NOMEM, "vocabulary lookup");
    ix->n_lookup = n;
    for (uint32_t t = 0; t < ix->info.n_terms; t++) {
        size_t l;
        const char *s = splade_index_term(ix, (int32_t)t, &l);
        uint32_t *slot = slot_of(ix, s, l);
        if (!*slot)
            *slot = t + 1; /* a repeated token keeps its first id, like the tokenizer */
    }
    return SPLADE_OK;
}

/* Double-checked: after the first build every caller sees lookup_ready (acquire) and takes no lock,
 * so threads that share an index may look tokens up from the start. */
int splade_index_prepare_lookup(splade_index *ix)
{
    if ((ix->info.flags & SPLADE_IX_SORTED_VOCAB) || atomic_load_explicit(&ix->lookup_ready, memory_order_acquire))
        return SPLADE_OK;
    pthread_mutex_lock(&ix->lookup_lock);
    int rc = SPLADE_OK;
    if (!atomic_load_explicit(&ix->lookup_ready, memory_order_relaxed)) {
        rc = build_lookup(ix);
        if (rc == SPLADE_OK)
            atomic_store_explicit(&ix->lookup_ready, 1, memory_order_release);
    }
    pthread_mutex_unlock(&ix->lookup_lock);
    return rc;
}

int32_t splade_index_term_lookup(splade_index *ix, const char *token, size_t len)
{
    if (ix->info.flags & SPLADE_IX_SORTED_VOCAB) {
        int64_t lo = 0, hi = (int64_t)ix->info.n_terms - 1;
        while (lo <= hi) {
            int64_t mid = (lo + hi) / 2;
            size_t l;
            const char *s = splade_index_term(ix, (int32_t)mid, &l);
            int c = cmp_bytes(s, l, token, len);
            if (!c)
                return (int32_t)mid;
            if (c < 0)
                lo = mid + 1;
            else
                hi = mid - 1;
        }
        return -1;
    }
    if (splade_index_prepare_lookup(ix) < 0)
        return -1;
    uint32_t e = *slot_of(ix, token, len);
    return e ? (int32_t)e - 1 : -1;
}
