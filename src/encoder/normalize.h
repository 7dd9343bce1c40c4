/* Character-level pieces of the BERT tokenizer, matching Hugging Face tokenizers'
 * BertNormalizer and BertPreTokenizer code point by code point (utf8proc for the Unicode data,
 * corrected by the generated tokenizer_compat tables where HF's data differs). Internal to
 * src/encoder/; pure functions, thread-safe. */
#ifndef SPLADE_NORMALIZE_H
#define SPLADE_NORMALIZE_H

#include <stddef.h>
#include <stdint.h>

/* Decodes the UTF-8 sequence at s (n >= 1 bytes available). Returns the code point and sets
 * *adv to its length; for an ill-formed sequence returns -1 and sets *adv to the length of its
 * maximal subpart (>= 1), the bytes Python's bytes.decode(errors="replace") turns into one
 * U+FFFD. Overlong forms, surrogates and values above U+10FFFF are ill-formed. */
int32_t splade_utf8_next(const unsigned char *s, size_t n, size_t *adv);

/* clean_text's verdict on one code point. */
enum { SPLADE_CP_KEEP = 0, SPLADE_CP_DROP = 1, SPLADE_CP_SPACE = 2 };
int splade_cp_clean(int32_t cp);

/* handle_chinese_chars: the CJK ranges that get a space on each side. */
int splade_cp_is_cjk(int32_t cp);

/* BertPreTokenizer punctuation: ASCII punctuation or a P* category (HF's tables). */
int splade_cp_is_punct(int32_t cp);

/* Most code points splade_cp_fold writes. */
#define SPLADE_FOLD_MAX 8

/* The uncased path for one code point: canonical decomposition (NFD), category-Mn characters
 * dropped, each remaining character lowercased -- HF's order (strip_accents, then lowercase).
 * Writes code points with the canonical combining class of the character they came from, so the
 * caller can apply NFD's canonical reordering across characters. A dropped Mn of class 0 is
 * written as cp -1 / class 0: it still ends a combining run. Returns the count written. */
int splade_cp_fold(int32_t cp, int32_t *out, uint8_t *ccc);

#endif
