/* Fuzz target: the JSONL corpus reader must return records or errors, never crash or leak. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "splade.h"
#include "splade/corpus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    splade_corpus_reader *r;
    if (splade_corpus_open_memory(data, size, "fuzz.jsonl", &r) != SPLADE_OK)
        return 0;
    splade_doc d;
    for (int i = 0; i < 10000; i++) {
        int rc = splade_corpus_next(r, &d);
        if (rc == 0 || rc == SPLADE_ERR_IO)
            break;
        if (rc == 1 && strlen(d.text) != d.text_len)
            __builtin_trap(); /* the length handed to the tokenizer must match the string */
    }
    splade_corpus_close(r);
    return 0;
}
