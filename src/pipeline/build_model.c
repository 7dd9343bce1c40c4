/* Ties an index to its model: a builder over the model's vocabulary that records the model's
 * name, absolute folder, fingerprint and tokenizer settings (include/splade/pipeline.h). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "splade.h"
#include "splade/build.h"
#include "splade/pipeline.h"

int splade_builder_create_for_model(const splade_model *m, const char *name, int32_t max_length,
                                    splade_index_builder **out)
{
    int32_t V = m->cfg.vocab_size;
    const char **tokens = malloc(((size_t)V + 1) * sizeof *tokens);
    if (!tokens)
        return splade_fail(SPLADE_ERR_NOMEM, "vocabulary of %d tokens", V);
    for (int32_t i = 0; i < V; i++) {
        const char *t = splade_tokenizer_token(m->tokenizer, i);
        tokens[i] = t ? t : ""; /* rows of the LM head past the tokenizer's vocabulary */
    }
    char abs_dir[PATH_MAX];
    splade_index_model info = {.name = name, .dir = realpath(m->dir, abs_dir) ? abs_dir : m->dir,
                               .fingerprint = m->fingerprint, .lowercase = m->cfg.do_lower_case,
                               .max_length = max_length};
    int rc = splade_builder_create(tokens, V, &info, out);
    free(tokens);
    return rc;
}
