/* The tokenizer's data: vocabulary strings and two open-addressing hash tables (word-initial
 * pieces and "##" continuation pieces, the latter keyed without the prefix so WordPiece never
 * builds a "##..." string). Internal to src/encoder/ (vocab.c builds it, tokenizer.c reads it). */
#ifndef SPLADE_TOKENIZER_INTERNAL_H
#define SPLADE_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "splade/tokenizer.h"

typedef struct {
    uint32_t hash;
    int32_t id; /* -1: empty slot */
} splade_vocab_slot;

typedef struct {
    splade_vocab_slot *slots;
    uint32_t mask;   /* capacity - 1 (capacity a power of two, load <= 1/2) */
    size_t max_key;  /* longest key in bytes: WordPiece never tries a longer piece */
} splade_vocab_table;

/* A special token matched in the raw text, as HF's added-token pass does. */
typedef struct {
    const char *text;
    size_t len;
    int32_t id;
} splade_special;

#define SPLADE_MAX_SPECIALS 5

struct splade_tokenizer {
    char *strings;      /* every token, NUL-terminated, in id order */
    uint32_t *offset;   /* id -> offset of its string in `strings` */
    uint32_t *length;   /* id -> byte length */
    int32_t n_tokens;
    splade_vocab_table initial, cont;
    int lowercase;
    int32_t unk_id, cls_id, sep_id, pad_id;
    splade_special specials[SPLADE_MAX_SPECIALS];
    int n_specials;
};

/* Hash of a key (FNV-1a, 32 bits). */
uint32_t splade_vocab_hash(const char *key, size_t len);

/* Id of `key` in a table (cont: key given without its "##"), or -1. */
int32_t splade_vocab_find(const splade_tokenizer *t, const splade_vocab_table *tab,
                          const char *key, size_t len);

/* A tokenizer over `text` (vocab.txt's content: one token a line; owned from now on, freed on error
 * too); `name` for messages. */
int splade_tokenizer_from_text(char *text, size_t size, const char *name, int lowercase, splade_tokenizer **out);

/* tokenizer_json.c: vocab.txt's text from a tokenizer.json whose model is WordPiece (ids 0..n-1,
 * each once), for folders that ship only tokenizer.json. *text: free(). Errors name the field. */
int splade_vocab_from_tokenizer_json(const char *path, char **text, size_t *size);
/* The lowercase setting of tokenizer.json's BertNormalizer, for folders without
 * tokenizer_config.json (transformers and tokenizers then follow tokenizer.json); settings the
 * tokenizer does not implement are refused (SPLADE_ERR_UNSUPPORTED), naming the field. */
int splade_tokenizer_json_lowercase(const char *path, bool *lower);

#endif
