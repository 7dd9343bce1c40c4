/* BERT WordPiece tokenizer, identical in output to Hugging Face's BertTokenizerFast.
 * Owner: src/encoder/tokenizer.c (+ vocab.c). */
#ifndef SPLADE_TOKENIZER_H
#define SPLADE_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct splade_tokenizer splade_tokenizer;

/* Loads vocab.txt (one token per line; line index = id). lowercase selects the
 * uncased pipeline (lowercase -> NFD -> drop Mn). *out owned by the caller:
 * free with splade_tokenizer_free. */
int splade_tokenizer_load(const char *vocab_path, int lowercase, splade_tokenizer **out);

/* Tokenizes `len` bytes of UTF-8 text into ids: [CLS] pieces... [SEP], truncated so
 * that the total is at most max_len (>= 2). Writes up to max_len ids to `ids`
 * and their count to *n_ids. */
int splade_tokenize(const splade_tokenizer *t, const char *text, size_t len, int32_t max_len,
                    int32_t *ids, int32_t *n_ids);

int32_t splade_tokenizer_vocab_size(const splade_tokenizer *t);
/* Token string of id (static to the tokenizer; NULL if out of range). */
const char *splade_tokenizer_token(const splade_tokenizer *t, int32_t id);
/* Id of an exact token string, or -1. */
int32_t splade_tokenizer_id(const splade_tokenizer *t, const char *token);
int32_t splade_tokenizer_cls_id(const splade_tokenizer *t);
int32_t splade_tokenizer_sep_id(const splade_tokenizer *t);
int32_t splade_tokenizer_pad_id(const splade_tokenizer *t);

void splade_tokenizer_free(splade_tokenizer *t);

#ifdef __cplusplus
}
#endif
#endif
