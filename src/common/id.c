/* The id rule shared by every reader of document and query ids (declared in include/splade/corpus.h). Ids
 * become columns of TREC run lines: whitespace or a control character would add columns or
 * split a line, an empty id would remove one, and `eval` would then reject our own run. */
#include <stddef.h>
#include <utf8proc.h>

#include "splade/corpus.h"

_Static_assert(SPLADE_ID_MAX == 1024, "the phrase below names the limit");

const char *splade_id_problem(const char *id, size_t len)
{
    if (len == 0)
        return "is empty";
    if (len > SPLADE_ID_MAX)
        return "is longer than 1024 bytes";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)id[i];
        if (c <= 0x20 || c == 0x7f)
            return "contains whitespace or a control character";
    }
    for (size_t i = 0; i < len;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate((const utf8proc_uint8_t *)id + i, (utf8proc_ssize_t)(len - i), &cp);
        if (n <= 0)
            return "is not valid UTF-8";
        i += (size_t)n;
    }
    return NULL;
}
