/* vocab.txt loading and the vocabulary hash tables (see tokenizer_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "encoder/model_files.h"
#include "encoder/tokenizer_internal.h"
#include "splade.h"

uint32_t splade_vocab_hash(const char *key, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * 16777619u;
    return h;
}

/* The key an id is stored under in its table: continuation pieces lose their "##". */
static const char *table_key(const splade_tokenizer *t, int32_t id, size_t *len)
{
    const char *s = t->strings + t->offset[id];
    *len = t->length[id];
    if (*len >= 2 && s[0] == '#' && s[1] == '#') {
        *len -= 2;
        return s + 2;
    }
    return s;
}

int32_t splade_vocab_find(const splade_tokenizer *t, const splade_vocab_table *tab,
                          const char *key, size_t len)
{
    uint32_t h = splade_vocab_hash(key, len);
    for (uint32_t i = h & tab->mask;; i = (i + 1) & tab->mask) {
        const splade_vocab_slot *s = &tab->slots[i];
        if (s->id < 0)
            return -1;
        if (s->hash != h)
            continue;
        size_t klen;
        const char *k = table_key(t, s->id, &klen);
        if (klen == len && memcmp(k, key, len) == 0)
            return s->id;
    }
}

/* Later duplicates replace earlier ones, as HF's vocab map does. */
static void table_insert(splade_tokenizer *t, splade_vocab_table *tab, int32_t id)
{
    size_t len;
    const char *key = table_key(t, id, &len);
    uint32_t h = splade_vocab_hash(key, len);
    uint32_t i = h & tab->mask;
    for (; tab->slots[i].id >= 0; i = (i + 1) & tab->mask) {
        size_t klen;
        const char *k = table_key(t, tab->slots[i].id, &klen);
        if (tab->slots[i].hash == h && klen == len && memcmp(k, key, len) == 0)
            break;
    }
    tab->slots[i].hash = h;
    tab->slots[i].id = id;
    if (len > tab->max_key)
        tab->max_key = len;
}

static int table_alloc(splade_vocab_table *tab, int32_t n)
{
    uint32_t cap = 16;
    while (cap < 2u * (uint32_t)n)
        cap <<= 1;
    tab->slots = malloc(cap * sizeof *tab->slots);
    if (!tab->slots)
        return splade_fail(SPLADE_ERR_NOMEM, "vocab hash table (%u slots)", cap);
    for (uint32_t i = 0; i < cap; i++)
        tab->slots[i].id = -1;
    tab->mask = cap - 1;
    tab->max_key = 0;
    return SPLADE_OK;
}

/* Splits `data` in place into lines (one token each; "\n" or "\r\n" ends a line; a last line
 * without newline counts). Fills offset/length, returns the count or a status. */
static int split_lines(splade_tokenizer *t, char *data, size_t size, const char *path)
{
    int32_t n = 0;
    for (size_t i = 0; i < size; i++)
        n += data[i] == '\n';
    n += size > 0 && data[size - 1] != '\n';
    if (n == 0)
        return splade_fail(SPLADE_ERR_FORMAT, "vocabulary '%s' is empty", path);
    t->offset = malloc((size_t)n * sizeof *t->offset);
    t->length = malloc((size_t)n * sizeof *t->length);
    if (!t->offset || !t->length)
        return splade_fail(SPLADE_ERR_NOMEM, "vocabulary '%s': %d tokens", path, n);
    size_t start = 0;
    for (int32_t id = 0; id < n; id++) {
        size_t end = start;
        while (end < size && data[end] != '\n')
            end++;
        size_t stop = end > start && data[end - 1] == '\r' ? end - 1 : end;
        data[stop] = '\0';
        t->offset[id] = (uint32_t)start;
        t->length[id] = (uint32_t)(stop - start);
        start = end + 1;
    }
    t->n_tokens = n;
    return SPLADE_OK;
}

static int build_tables(splade_tokenizer *t)
{
    int rc = table_alloc(&t->initial, t->n_tokens);
    if (rc == SPLADE_OK)
        rc = table_alloc(&t->cont, t->n_tokens);
    if (rc != SPLADE_OK)
        return rc;
    for (int32_t id = 0; id < t->n_tokens; id++) {
        const char *s = t->strings + t->offset[id];
        int cont = t->length[id] >= 2 && s[0] == '#' && s[1] == '#';
        table_insert(t, cont ? &t->cont : &t->initial, id);
    }
    return SPLADE_OK;
}

/* Specials HF matches in the raw text before normalizing (bert-base-uncased's added tokens). */
static int find_specials(splade_tokenizer *t, const char *path)
{
    static const char *names[SPLADE_MAX_SPECIALS] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    for (int i = 0; i < SPLADE_MAX_SPECIALS; i++) {
        int32_t id = splade_tokenizer_id(t, names[i]);
        if (id >= 0)
            t->specials[t->n_specials++] = (splade_special){names[i], strlen(names[i]), id};
    }
    t->pad_id = splade_tokenizer_id(t, "[PAD]");
    t->unk_id = splade_tokenizer_id(t, "[UNK]");
    t->cls_id = splade_tokenizer_id(t, "[CLS]");
    t->sep_id = splade_tokenizer_id(t, "[SEP]");
    const char *missing = t->unk_id < 0 ? "[UNK]" : t->cls_id < 0 ? "[CLS]" : t->sep_id < 0 ? "[SEP]" : NULL;
    if (missing)
        return splade_fail(SPLADE_ERR_FORMAT, "vocabulary '%s' (%d tokens) has no %s token", path,
                           t->n_tokens, missing);
    return SPLADE_OK;
}

int splade_tokenizer_load(const char *vocab_path, int lowercase, splade_tokenizer **out)
{
    if (!vocab_path || !out)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_tokenizer_load: NULL argument");
    *out = NULL;
    char *text;
    size_t size = 0;
    int rc = splade_read_regular(vocab_path, SPLADE_MAX_VOCAB_BYTES, &text, &size);
    return rc ? rc : splade_tokenizer_from_text(text, size, vocab_path, lowercase, out);
}

int splade_tokenizer_from_text(char *text, size_t size, const char *name, int lowercase, splade_tokenizer **out)
{
    const char *vocab_path = name;
    *out = NULL;
    splade_tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        free(text);
        return splade_fail(SPLADE_ERR_NOMEM, "tokenizer");
    }
    t->lowercase = lowercase != 0;
    t->strings = text;
    int rc = split_lines(t, t->strings, size, vocab_path);
    if (rc == SPLADE_OK)
        rc = build_tables(t);
    if (rc == SPLADE_OK)
        rc = find_specials(t, vocab_path);
    if (rc != SPLADE_OK) {
        splade_tokenizer_free(t);
        return rc;
    }
    *out = t;
    return SPLADE_OK;
}

void splade_tokenizer_free(splade_tokenizer *t)
{
    if (!t)
        return;
    free(t->initial.slots);
    free(t->cont.slots);
    free(t->offset);
    free(t->length);
    free(t->strings);
    free(t);
}

int32_t splade_tokenizer_vocab_size(const splade_tokenizer *t) { return t->n_tokens; }
int32_t splade_tokenizer_cls_id(const splade_tokenizer *t) { return t->cls_id; }
int32_t splade_tokenizer_sep_id(const splade_tokenizer *t) { return t->sep_id; }
int32_t splade_tokenizer_pad_id(const splade_tokenizer *t) { return t->pad_id; }

const char *splade_tokenizer_token(const splade_tokenizer *t, int32_t id)
{
    return id >= 0 && id < t->n_tokens ? t->strings + t->offset[id] : NULL;
}

int32_t splade_tokenizer_id(const splade_tokenizer *t, const char *token)
{
    size_t len = strlen(token);
    if (len >= 2 && token[0] == '#' && token[1] == '#')
        return splade_vocab_find(t, &t->cont, token + 2, len - 2);
    return splade_vocab_find(t, &t->initial, token, len);
}
