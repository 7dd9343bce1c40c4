/* String table + open-addressing hash (see strtab.h). */
#include "common/fail.h"
#include "index/strtab.h"

#include <stdlib.h>
#include <string.h>

#include "splade.h"

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a, then a finalizer to spread low bits */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

int strtab_init(strtab *t, int hashed)
{
    memset(t, 0, sizeof *t);
    t->off_cap = 1024;
    t->off = malloc(t->off_cap * sizeof *t->off);
    if (!t->off)
        return splade_fail(SPLADE_ERR_NOMEM, "string table");
    t->off[0] = 0;
    if (hashed) {
        t->n_slots = 1024;
        t->slots = calloc(t->n_slots, sizeof *t->slots);
        if (!t->slots)
            return splade_fail(SPLADE_ERR_NOMEM, "string table");
    }
    return SPLADE_OK;
}

void strtab_free(strtab *t)
{
    free(t->data);
    free(t->off);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static uint32_t *find_slot(const strtab *t, const char *s, size_t len)
{
    uint32_t mask = t->n_slots - 1;
    for (uint32_t i = (uint32_t)hash_bytes(s, len) & mask;; i = (i + 1) & mask) {
        uint32_t e = t->slots[i];
        if (!e)
            return &t->slots[i];
        size_t elen;
        const char *es = strtab_get(t, e - 1, &elen);
        if (elen == len && !memcmp(es, s, len))
            return &t->slots[i];
    }
}

int64_t strtab_find(const strtab *t, const char *s, size_t len)
{
    uint32_t e = *find_slot(t, s, len);
    return e ? (int64_t)e - 1 : -1;
}

static int rehash(strtab *t)
{
    uint32_t n = t->n_slots * 2;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return splade_fail(SPLADE_ERR_NOMEM, "string table hash");
    free(t->slots);
    t->slots = slots;
    t->n_slots = n;
    for (uint32_t i = 0; i < t->n; i++) {
        size_t len;
        const char *s = strtab_get(t, i, &len);
        *find_slot(t, s, len) = i + 1;
    }
    return SPLADE_OK;
}

static int reserve(strtab *t, size_t extra)
{
    if (t->n + 2 > t->off_cap) {
        uint64_t *p = realloc(t->off, (size_t)t->off_cap * 2 * sizeof *p);
        if (!p)
            return splade_fail(SPLADE_ERR_NOMEM, "string table");
        t->off = p;
        t->off_cap *= 2;
    }
    if (t->len + extra > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + extra)
            cap *= 2;
        char *p = realloc(t->data, cap);
        if (!p)
            return splade_fail(SPLADE_ERR_NOMEM, "string table of %zu bytes", cap);
        t->data = p;
        t->cap = cap;
    }
    return SPLADE_OK;
}

static int commit_entry(strtab *t, uint32_t *index)
{
    t->off[++t->n] = t->len;
    if (index)
        *index = t->n - 1;
    if (t->slots) {
        size_t len;
        const char *s = strtab_get(t, t->n - 1, &len);
        *find_slot(t, s, len) = t->n;
        if (t->n * 2 > t->n_slots)
            return rehash(t);
    }
    return SPLADE_OK;
}

int strtab_append(strtab *t, const char *s, size_t len, int add_nul, uint32_t *index)
{
    int rc = reserve(t, len + 1);
    if (rc < 0)
        return rc;
    memcpy(t->data + t->len, s, len);
    t->len += len;
    if (add_nul)
        t->data[t->len++] = '\0';
    return commit_entry(t, index);
}

int strtab_append2(strtab *t, const char *a, size_t alen, const char *b, size_t blen)
{
    int rc = reserve(t, alen + blen + 2);
    if (rc < 0)
        return rc;
    memcpy(t->data + t->len, a, alen);
    t->data[t->len + alen] = '\0';
    memcpy(t->data + t->len + alen + 1, b, blen);
    t->data[t->len + alen + 1 + blen] = '\0';
    t->len += alen + blen + 2;
    return commit_entry(t, NULL);
}
