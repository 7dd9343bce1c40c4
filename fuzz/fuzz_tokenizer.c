/* Fuzz target: the tokenizer on arbitrary bytes (any UTF-8 validity), both casing modes.
 * Vocabulary: $SPLADE_FUZZ_VOCAB, else ../shared's bert-base-uncased, else a tiny built-in one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "splade.h"
#include "splade/tokenizer.h"

static splade_tokenizer *tok[2];

static const char *vocab_path(void)
{
    const char *env = getenv("SPLADE_FUZZ_VOCAB");
    if (env)
        return env;
    static const char *shared = "../shared/data/bert-base-uncased/vocab.txt";
    FILE *f = fopen(shared, "r");
    if (f) {
        fclose(f);
        return shared;
    }
    static char tmp[] = "/tmp/splade_fuzz_vocabXXXXXX";
    int fd = mkstemp(tmp);
    FILE *w = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!w)
        return NULL;
    fputs("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\nb\n##a\n##b\nab\n.\n,\n\xc3\xa9\n##\xc3\xa9\n", w);
    fclose(w);
    return tmp;
}

static void load_once(void)
{
    if (tok[0])
        return;
    const char *p = vocab_path();
    if (!p || splade_tokenizer_load(p, 1, &tok[0]) != SPLADE_OK ||
        splade_tokenizer_load(p, 0, &tok[1]) != SPLADE_OK) {
        fprintf(stderr, "fuzz_tokenizer: cannot load a vocabulary: %s\n", splade_error_detail());
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load_once();
    static int32_t ids[4096];
    int32_t max_len = size ? 2 + data[0] % 300 : 2;
    for (int m = 0; m < 2; m++) {
        int32_t n = -1;
        if (splade_tokenize(tok[m], (const char *)data, size, max_len, ids, &n) != SPLADE_OK)
            __builtin_trap(); /* any bytes are valid input: invalid UTF-8 is replaced */
        if (n < 2 || n > max_len || ids[0] != splade_tokenizer_cls_id(tok[m]) ||
            ids[n - 1] != splade_tokenizer_sep_id(tok[m]))
            __builtin_trap();
        for (int32_t i = 0; i < n; i++)
            if (ids[i] < 0 || ids[i] >= splade_tokenizer_vocab_size(tok[m]))
                __builtin_trap();
    }
    return 0;
}
