/* Ties an index to its model: a builder over the model's vocabulary that records the model's
 * name, absolute folder, fingerprint and tokenizer settings (include/splade/pipeline.h). */
#include <limits.h>
#include <stdlib.h>

#include "common/fail.h"
#include "splade.h"
#include "splade/pipeline.h"

int splade_builder_create_for_model(const splade_model *m, const char *name, int32_t max_length,
                                    splade_index_builder **out)
{
    const splade_config *cfg = splade_model_config(m);
    const splade_tokenizer *tok = splade_model_tokenizer(m);
    const char *dir = splade_model_dir(m);
    int32_t V = cfg->vocab_size;
    const char **tokens = malloc(((size_t)V + 1) * sizeof *tokens);
    if (!tokens)
        return splade_fail(SPLADE_ERR_NOMEM, "vocabulary of %d tokens", V);
    for (int32_t i = 0; i < V; i++) {
        const char *t = splade_tokenizer_token(tok, i);
        tokens[i] = t ? t : ""; /* rows of the LM head past the tokenizer's vocabulary */
    }
    char abs_dir[PATH_MAX];
    splade_index_model info = {.name = name, .dir = realpath(dir, abs_dir) ? abs_dir : dir,
                               .fingerprint = splade_model_fingerprint(m), .lowercase = cfg->do_lower_case,
                               .max_length = max_length, .query_table = splade_model_has_query_table(m)};
    int rc = splade_builder_create(tokens, V, &info, out);
    free(tokens);
    return rc;
}
