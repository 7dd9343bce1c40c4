/* Append-only string table with an optional hash lookup: the builder's corpus ids, document
 * store and growing vocabulary. Entries are byte strings addressed by index. */
#ifndef SPLADE_INDEX_STRTAB_H
#define SPLADE_INDEX_STRTAB_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *data;
    size_t len, cap;
    uint64_t *off;      /* [n + 1]: entry i is data[off[i] .. off[i+1]) */
    uint32_t n, off_cap;
    uint32_t *slots;    /* hash slots holding entry index + 1 (0 = empty); NULL when unhashed */
    uint32_t n_slots;
} strtab;

/* hashed: keep a lookup table (ids, vocabulary); else append only (document store). */
int strtab_init(strtab *t, int hashed);
void strtab_free(strtab *t);
/* Appends s (len bytes). If add_nul, a NUL is stored after it (counted in the entry). */
int strtab_append(strtab *t, const char *s, size_t len, int add_nul, uint32_t *index);
/* Appends two NUL-terminated parts as one entry: "a NUL b NUL". */
int strtab_append2(strtab *t, const char *a, size_t alen, const char *b, size_t blen);
/* Index of an entry equal to s, or -1 (hashed tables only). */
int64_t strtab_find(const strtab *t, const char *s, size_t len);
static inline const char *strtab_get(const strtab *t, uint32_t i, size_t *len)
{
    *len = t->off[i + 1] - t->off[i];
    return t->data + t->off[i];
}

#endif
