/* BERT WordPiece tokenizer, identical in output to Hugging Face's BertTokenizerFast.
 * Owner: src/encoder/tokenizer.c (+ vocab.c, normalize.c, tokenizer_compat_table.c).
 *
 * Pipeline (HF's, checked against goldens from the `tokenizers` package on every code point):
 *   1. special tokens [PAD] [UNK] [CLS] [SEP] [MASK] (those in the vocabulary) spelled exactly
 *      in the raw text become their id, as HF's added-token pass does ("[mask]" does not);
 *   2. BertNormalizer: NUL, U+FFFD and control characters (Cc/Cf/Co, not \t \n \r) dropped,
 *      whitespace to ' ', a space each side of CJK ideographs; uncased only: NFD, drop Mn,
 *      then lowercase (HF's order); cased: neither (strip_accents follows lowercase);
 *   3. BertPreTokenizer: split on whitespace, punctuation (ASCII or Unicode P*) stands alone;
 *   4. WordPiece: longest match first, "##" continuations; a word of more than 100 characters
 *      (after normalization) or with an unmatched rest is one [UNK].
 * Unicode data: utf8proc, corrected where HF's (older/newer) tables differ by the generated
 * tables of tools/make_tokenizer_compat_table.py.
 *
 * Invalid UTF-8 is not an error: each maximal ill-formed subsequence reads as one U+FFFD (what
 * Python's bytes.decode("utf-8", errors="replace") does), which cleaning then drops, so the
 * text around it is tokenized as if the bytes were absent. Overlong forms, surrogates
 * (ED A0..BF) and code points above U+10FFFF are ill-formed. Embedded NUL bytes are allowed
 * (dropped like U+0000).
 *
 * A loaded tokenizer is immutable: splade_tokenize may run on many threads at once and does
 * not allocate. */
#ifndef SPLADE_TOKENIZER_H
#define SPLADE_TOKENIZER_H

#include "splade.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Thread safety: read-only once loaded; any number of threads may tokenize with one tokenizer at once. */
typedef struct splade_tokenizer splade_tokenizer;

/* Loads vocab.txt (one token per line, "\n" or "\r\n"; line index = id; a repeated token
 * keeps its last id, as HF does). lowercase selects the uncased pipeline (NFD -> drop Mn ->
 * lowercase). Errors: SPLADE_ERR_NOT_FOUND / SPLADE_ERR_IO (cannot open or read),
 * SPLADE_ERR_FORMAT (empty file, or no [UNK], [CLS] or [SEP] token); the detail names the file.
 * *out (NULL on failure) is owned by the caller: free with splade_tokenizer_free. */
SPLADE_API int splade_tokenizer_load(const char *vocab_path, int lowercase, splade_tokenizer **out);

/* Tokenizes `len` bytes of UTF-8 text (NUL not special; text may be NULL when len is 0) into
 * ids: [CLS] pieces... [SEP], truncated so that the total is at most max_len (>= 2): the first
 * max_len - 2 pieces, then [SEP] (HF's truncation). Writes at most max_len ids to `ids` and
 * their count to *n_ids. SPLADE_ERR_INVALID_ARG for max_len < 2 or a NULL pointer. */
SPLADE_API int splade_tokenize(const splade_tokenizer *t, const char *text, size_t len, int32_t max_len,
                               int32_t *ids, int32_t *n_ids);

SPLADE_API int32_t splade_tokenizer_vocab_size(const splade_tokenizer *t);
/* Token string of id (static to the tokenizer; NULL if out of range). */
SPLADE_API const char *splade_tokenizer_token(const splade_tokenizer *t, int32_t id);
/* Id of an exact token string, or -1. */
SPLADE_API int32_t splade_tokenizer_id(const splade_tokenizer *t, const char *token);
SPLADE_API int32_t splade_tokenizer_cls_id(const splade_tokenizer *t);
SPLADE_API int32_t splade_tokenizer_sep_id(const splade_tokenizer *t);
SPLADE_API int32_t splade_tokenizer_pad_id(const splade_tokenizer *t);

SPLADE_API void splade_tokenizer_free(splade_tokenizer *t);

#ifdef __cplusplus
}
#endif
#endif
