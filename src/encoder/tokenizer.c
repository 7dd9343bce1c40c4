/* BERT WordPiece tokenization, identical to Hugging Face's BertTokenizerFast: special tokens
 * matched in the raw text, BertNormalizer (clean_text, CJK spacing, uncased: NFD -> drop Mn ->
 * lowercase), BertPreTokenizer (whitespace + punctuation) and greedy longest-match WordPiece.
 *
 * One streaming pass, no allocation: characters are normalized as they are read and appended
 * to a fixed word buffer; a word is handed to WordPiece as soon as it ends, and the pass stops
 * once max_len - 1 ids exist. ASCII bytes take a table-driven path; only other characters reach
 * utf8proc (normalize.c). */
#include <pthread.h>
#include <string.h>

#include "common/fail.h"
#include "encoder/normalize.h"
#include "encoder/tokenizer_internal.h"
#include "splade.h"

#define WORD_MAX_CHARS 100 /* HF WordPiece max_input_chars_per_word: longer words -> [UNK] */
#define WORD_BYTES (4 * (WORD_MAX_CHARS + 1))
#define RUN_MAX 128 /* longer combining runs are inside >100-char words, hence [UNK] anyway */

typedef struct {
    const splade_tokenizer *t;
    int32_t *ids;
    int32_t n, limit;     /* ids written; room for pieces (max_len - 1: [SEP] comes last) */
    char word[WORD_BYTES];
    size_t wlen;          /* bytes in word (stops growing past WORD_MAX_CHARS + 1 chars) */
    int wchars;           /* characters in the current word */
    int32_t run_cp[RUN_MAX]; /* pending non-starters, for NFD's canonical reordering */
    uint8_t run_ccc[RUN_MAX];
    int run_n;
} tok_state;

enum { A_LETTER, A_SPACE, A_DROP, A_PUNCT };

/* clean_text + BertPreTokenizer classes of the ASCII bytes (HF drops U+000B, U+000C and the
 * other C0 controls; \t \n \r become spaces). */
static unsigned char ascii_class(unsigned char c)
{
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
        return A_SPACE;
    if (c < 0x20 || c == 0x7F)
        return A_DROP;
    return splade_cp_is_punct(c) ? A_PUNCT : A_LETTER;
}

static unsigned char ascii_classes[128];
static pthread_once_t ascii_once = PTHREAD_ONCE_INIT;

static void init_ascii(void)
{
    for (int c = 0; c < 128; c++)
        ascii_classes[c] = ascii_class((unsigned char)c);
}

static void push_id(tok_state *s, int32_t id)
{
    if (s->n < s->limit)
        s->ids[s->n++] = id;
}

static void append_cp(tok_state *s, int32_t cp)
{
    if (++s->wchars > WORD_MAX_CHARS + 1)
        return; /* already [UNK]: only the count matters */
    char *w = s->word + s->wlen;
    if (cp < 0x80) {
        w[0] = (char)cp;
        s->wlen += 1;
    } else if (cp < 0x800) {
        w[0] = (char)(0xC0 | (cp >> 6));
        w[1] = (char)(0x80 | (cp & 0x3F));
        s->wlen += 2;
    } else if (cp < 0x10000) {
        w[0] = (char)(0xE0 | (cp >> 12));
        w[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        w[2] = (char)(0x80 | (cp & 0x3F));
        s->wlen += 3;
    } else {
        w[0] = (char)(0xF0 | (cp >> 18));
        w[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        w[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        w[3] = (char)(0x80 | (cp & 0x3F));
        s->wlen += 4;
    }
}

static int is_cont_byte(char c) { return ((unsigned char)c & 0xC0) == 0x80; }

/* Longest vocabulary piece of word[start..] (greedy, whole characters), or -1. */
static int32_t longest_piece(const tok_state *s, const splade_vocab_table *tab, size_t start,
                             size_t *end_out)
{
    size_t end = s->wlen - start > tab->max_key ? start + tab->max_key : s->wlen;
    while (end > start && end < s->wlen && is_cont_byte(s->word[end]))
        end--;
    for (; end > start; end--) {
        if (end < s->wlen && is_cont_byte(s->word[end]))
            continue; /* not a character boundary */
        int32_t id = splade_vocab_find(s->t, tab, s->word + start, end - start);
        if (id >= 0) {
            *end_out = end;
            return id;
        }
    }
    return -1;
}

/* WordPiece: the whole word, or greedy pieces ("##" after the first); any gap -> [UNK]. */
static void wordpiece(tok_state *s)
{
    const splade_tokenizer *t = s->t;
    int32_t pieces[WORD_MAX_CHARS];
    int np = 0;
    size_t start = 0;
    const splade_vocab_table *tab = &t->initial;
    while (start < s->wlen) {
        size_t end = 0;
        int32_t id = longest_piece(s, tab, start, &end);
        if (id < 0) {
            push_id(s, t->unk_id);
            return;
        }
        pieces[np++] = id;
        start = end;
        tab = &t->cont;
    }
    for (int i = 0; i < np; i++)
        push_id(s, pieces[i]);
}

static void end_word(tok_state *s)
{
    if (s->wchars == 0)
        return;
    if (s->wchars > WORD_MAX_CHARS)
        push_id(s, s->t->unk_id);
    else
        wordpiece(s);
    s->wlen = 0;
    s->wchars = 0;
}

/* A fully normalized character enters the pre-tokenizer: punctuation stands alone. */
static void emit_char(tok_state *s, int32_t cp)
{
    if (splade_cp_is_punct(cp)) {
        end_word(s);
        append_cp(s, cp);
        end_word(s);
    } else {
        append_cp(s, cp);
    }
}

/* NFD's canonical reordering: a stable sort of the pending run by combining class. */
static void flush_run(tok_state *s)
{
    for (int i = 1; i < s->run_n; i++) {
        int32_t cp = s->run_cp[i];
        uint8_t c = s->run_ccc[i];
        int j = i;
        for (; j > 0 && s->run_ccc[j - 1] > c; j--) {
            s->run_cp[j] = s->run_cp[j - 1];
            s->run_ccc[j] = s->run_ccc[j - 1];
        }
        s->run_cp[j] = cp;
        s->run_ccc[j] = c;
    }
    for (int i = 0; i < s->run_n; i++)
        emit_char(s, s->run_cp[i]);
    s->run_n = 0;
}

static void push_folded(tok_state *s, int32_t cp, uint8_t ccc)
{
    if (ccc == 0) {
        flush_run(s);
        if (cp >= 0) /* -1: a dropped Mn starter, which only ends the run */
            emit_char(s, cp);
        return;
    }
    if (s->run_n == RUN_MAX)
        flush_run(s);
    s->run_cp[s->run_n] = cp;
    s->run_ccc[s->run_n++] = ccc;
}

static void boundary(tok_state *s)
{
    flush_run(s);
    end_word(s);
}

/* One non-ASCII code point through clean_text, CJK spacing and (uncased) the fold. */
static void feed_cp(tok_state *s, int32_t cp)
{
    int cls = splade_cp_clean(cp);
    if (cls == SPLADE_CP_DROP)
        return; /* removed before NFD: does not end a combining run */
    if (cls == SPLADE_CP_SPACE) {
        boundary(s);
        return;
    }
    int cjk = splade_cp_is_cjk(cp);
    if (cjk)
        boundary(s);
    if (!s->t->lowercase) {
        emit_char(s, cp);
    } else {
        int32_t out[SPLADE_FOLD_MAX];
        uint8_t ccc[SPLADE_FOLD_MAX];
        int n = splade_cp_fold(cp, out, ccc);
        for (int i = 0; i < n; i++)
            push_folded(s, out[i], ccc[i]);
    }
    if (cjk)
        boundary(s);
}

/* A special token spelled exactly in the raw text at p (HF matches them before normalizing). */
static size_t match_special(tok_state *s, const unsigned char *p, size_t avail)
{
    const splade_tokenizer *t = s->t;
    for (int i = 0; i < t->n_specials; i++) {
        const splade_special *sp = &t->specials[i];
        if (sp->len <= avail && memcmp(p, sp->text, sp->len) == 0) {
            boundary(s);
            push_id(s, sp->id);
            return sp->len;
        }
    }
    return 0;
}

/* A run of ASCII bytes from p[i]; returns the index after it. */
static size_t ascii_span(tok_state *s, const unsigned char *p, size_t i, size_t len)
{
    const int lower = s->t->lowercase;
    if (s->run_n)
        flush_run(s); /* ASCII characters are starters */
    while (i < len && p[i] < 0x80 && s->n < s->limit) {
        unsigned char c = p[i];
        switch (ascii_classes[c]) {
        case A_LETTER:
            if (++s->wchars <= WORD_MAX_CHARS + 1)
                s->word[s->wlen++] = (char)(lower && c >= 'A' && c <= 'Z' ? c + 32 : c);
            i++;
            break;
        case A_SPACE:
            end_word(s);
            i++;
            break;
        case A_DROP:
            i++;
            break;
        default: { /* punctuation */
            size_t m = c == '[' ? match_special(s, p + i, len - i) : 0;
            if (m) {
                i += m;
                break;
            }
            end_word(s);
            append_cp(s, c);
            end_word(s);
            i++;
        }
        }
    }
    return i;
}

static void run_text(tok_state *s, const unsigned char *p, size_t len)
{
    size_t i = 0;
    while (i < len && s->n < s->limit) {
        if (p[i] < 0x80) {
            i = ascii_span(s, p, i, len);
            continue;
        }
        size_t adv;
        int32_t cp = splade_utf8_next(p + i, len - i, &adv);
        i += adv;
        if (cp >= 0)
            feed_cp(s, cp); /* ill-formed bytes: U+FFFD, which clean_text drops */
    }
    boundary(s);
}

int splade_tokenize(const splade_tokenizer *t, const char *text, size_t len, int32_t max_len,
                    int32_t *ids, int32_t *n_ids)
{
    if (!t || (!text && len) || !ids || !n_ids)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_tokenize: NULL argument");
    if (max_len < 2)
        return splade_fail(SPLADE_ERR_INVALID_ARG,
                           "splade_tokenize: max_len %d < 2 (room for [CLS] and [SEP])", max_len);
    pthread_once(&ascii_once, init_ascii);
    tok_state s;
    s.t = t;
    s.ids = ids;
    s.ids[0] = t->cls_id;
    s.n = 1;
    s.limit = max_len - 1;
    s.wlen = 0;
    s.wchars = 0;
    s.run_n = 0;
    run_text(&s, (const unsigned char *)text, len);
    ids[s.n++] = t->sep_id;
    *n_ids = s.n;
    return SPLADE_OK;
}
