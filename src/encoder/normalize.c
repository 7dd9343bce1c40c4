/* Character classes and the uncased fold of the BERT tokenizer (see normalize.h). Only the
 * non-ASCII path lands here per character; tokenizer.c handles ASCII with its own tables. */
#include "encoder/normalize.h"

#include <utf8proc.h>

#include "encoder/tokenizer_compat.h"

static int flag_cmp(const void *key, const void *elem)
{
    int32_t cp = *(const int32_t *)key, e = ((const splade_cp_flag *)elem)->cp;
    return (cp > e) - (cp < e);
}

/* Binary search: 1/0 from the override table, or -1 when HF agrees with utf8proc. */
static int compat_flag(const splade_cp_flag *table, size_t len, int32_t cp)
{
    size_t lo = 0, hi = len;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = flag_cmp(&cp, &table[mid]);
        if (c == 0)
            return table[mid].value;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return -1;
}

static const splade_cp_map *compat_map(const splade_cp_map *table, size_t len, int32_t cp)
{
    size_t lo = 0, hi = len;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (table[mid].cp == cp)
            return &table[mid];
        if (table[mid].cp < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Second byte ranges of well-formed UTF-8 (Unicode Table 3-7); later bytes are 80..BF. */
static int second_byte_ok(unsigned char lead, unsigned char b)
{
    switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F; /* no surrogates */
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F; /* <= U+10FFFF */
    default: return b >= 0x80 && b <= 0xBF;
    }
}

int32_t splade_utf8_next(const unsigned char *s, size_t n, size_t *adv)
{
    unsigned char b0 = s[0];
    *adv = 1;
    if (b0 < 0x80)
        return b0;
    size_t need = b0 >= 0xC2 && b0 <= 0xDF ? 2 : b0 >= 0xE0 && b0 <= 0xEF ? 3
                : b0 >= 0xF0 && b0 <= 0xF4 ? 4 : 0;
    if (need == 0)
        return -1; /* 80..C1, F5..FF never start a character */
    int32_t cp = b0 & (need == 2 ? 0x1F : need == 3 ? 0x0F : 0x07);
    for (size_t i = 1; i < need; i++) {
        /* A byte that cannot continue the sequence ends the maximal subpart before it. */
        if (i >= n || (i == 1 ? !second_byte_ok(b0, s[1]) : (s[i] & 0xC0) != 0x80)) {
            *adv = i;
            return -1;
        }
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    *adv = need;
    return cp;
}

/* Rust's char::is_whitespace (the White_Space property), which BertNormalizer and
 * BertPreTokenizer use; \t \n \r are listed there too. */
static int is_rust_whitespace(int32_t cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680
           || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F
           || cp == 0x205F || cp == 0x3000;
}

/* HF's is_control: categories Cc, Cf, Co (and Cs) in its tables, except \t \n \r.
 * Unassigned code points (Cn) are kept, unlike a naive "category C*" test. */
static int is_control(int32_t cp)
{
    if (cp == '\t' || cp == '\n' || cp == '\r')
        return 0;
    int o = compat_flag(splade_compat_control, splade_compat_control_len, cp);
    if (o >= 0)
        return o;
    utf8proc_category_t c = utf8proc_category(cp);
    return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CO
           || c == UTF8PROC_CATEGORY_CS;
}

int splade_cp_clean(int32_t cp)
{
    /* HF filters first (NUL, U+FFFD, controls), then maps whitespace to ' ': so U+000B,
     * U+000C and U+0085, both control and whitespace, are dropped. */
    if (cp == 0 || cp == 0xFFFD || is_control(cp))
        return SPLADE_CP_DROP;
    return is_rust_whitespace(cp) ? SPLADE_CP_SPACE : SPLADE_CP_KEEP;
}

int splade_cp_is_cjk(int32_t cp)
{
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF)
           || (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F)
           || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF)
           || (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

int splade_cp_is_punct(int32_t cp)
{
    if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96)
        || (cp >= 123 && cp <= 126))
        return 1;
    if (cp < 0x80)
        return 0;
    int o = compat_flag(splade_compat_punct, splade_compat_punct_len, cp);
    if (o >= 0)
        return o;
    utf8proc_category_t c = utf8proc_category(cp);
    return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

static int is_mn(int32_t cp)
{
    int o = compat_flag(splade_compat_mn, splade_compat_mn_len, cp);
    return o >= 0 ? o : utf8proc_category(cp) == UTF8PROC_CATEGORY_MN;
}

/* Rust's char::to_lowercase (full mapping: U+0130 gives two code points). */
static int lower(int32_t cp, int32_t *out)
{
    const splade_cp_map *m = compat_map(splade_compat_lower, splade_compat_lower_len, cp);
    if (!m) {
        out[0] = utf8proc_tolower(cp);
        return 1;
    }
    for (int i = 0; i < m->n; i++)
        out[i] = m->to[i];
    return m->n;
}

static int decompose(int32_t cp, int32_t *out)
{
    const splade_cp_map *m = compat_map(splade_compat_nfd, splade_compat_nfd_len, cp);
    if (m) {
        for (int i = 0; i < m->n; i++)
            out[i] = m->to[i];
        return m->n;
    }
    int boundclass = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char(cp, out, 4, UTF8PROC_DECOMPOSE, &boundclass);
    if (n < 1 || n > 4) { /* cannot happen for a valid code point: keep it unchanged */
        out[0] = cp;
        return 1;
    }
    return (int)n;
}

int splade_cp_fold(int32_t cp, int32_t *out, uint8_t *ccc)
{
    int32_t d[4];
    int nd = decompose(cp, d), n = 0;
    for (int i = 0; i < nd; i++) {
        uint8_t c = (uint8_t)utf8proc_get_property(d[i])->combining_class;
        if (is_mn(d[i])) {
            if (c == 0) { /* keeps its place as a reordering barrier */
                out[n] = -1;
                ccc[n++] = 0;
            }
            continue;
        }
        int32_t lo[2];
        int nl = lower(d[i], lo);
        for (int j = 0; j < nl; j++) {
            out[n] = lo[j];
            ccc[n++] = c;
        }
    }
    return n;
}
