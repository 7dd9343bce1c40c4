/* vocab.txt from tokenizer.json: transformers 5 saves fast BERT tokenizers as tokenizer.json alone
 * (no vocab.txt), and sentence-transformers folders saved that way hold nothing else. Only the
 * WordPiece vocabulary is read; the normalization settings come from tokenizer_config.json as for
 * any folder. The text built is what vocab.txt would hold, so the fingerprint is the same. */
#include "common/fail.h"
#include "encoder/model_files.h"
#include "encoder/tokenizer_internal.h"
#include "splade.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static int fill(json_t *vocab, const char *path, const char **tok, size_t *bytes)
{
    size_t n = json_object_size(vocab);
    const char *key;
    json_t *v;
    json_object_foreach(vocab, key, v) {
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        if (id < 0 || (size_t)id >= n || tok[id])
            return splade_fail(SPLADE_ERR_FORMAT, "%s: field 'model.vocab': token \"%s\" has id %lld (ids must be "
                               "0..%zu, each once)", path, key, (long long)id, n - 1);
        if (strchr(key, '\n'))
            return splade_fail(SPLADE_ERR_FORMAT, "%s: field 'model.vocab': a token holds a newline", path);
        tok[id] = key;
        *bytes += strlen(key) + 1;
    }
    return SPLADE_OK;
}

static int build(json_t *root, const char *path, char **text, size_t *size)
{
    json_t *model = json_object_get(root, "model"), *vocab = json_object_get(model, "vocab");
    const char *type = json_string_value(json_object_get(model, "type"));
    if (!type || strcmp(type, "WordPiece") || !json_is_object(vocab) || !json_object_size(vocab))
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "%s: field 'model.type' is \"%s\": only a WordPiece tokenizer "
                           "(BERT's) is supported", path, type ? type : "(absent)");
    size_t n = json_object_size(vocab), bytes = 0;
    const char **tok = calloc(n, sizeof *tok);
    if (!tok)
        return splade_fail(SPLADE_ERR_NOMEM, "%s: %zu tokens", path, n);
    int rc = fill(vocab, path, tok, &bytes);
    char *out = rc ? NULL : malloc(bytes + 1);
    if (!rc && !out)
        rc = splade_fail(SPLADE_ERR_NOMEM, "%s: %zu bytes", path, bytes);
    size_t at = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        size_t len = strlen(tok[i]);
        memcpy(out + at, tok[i], len);
        out[at + len] = '\n';
        at += len + 1;
    }
    free(tok);
    if (rc)
        return rc;
    out[at] = '\0';
    *text = out;
    *size = at;
    return SPLADE_OK;
}

int splade_vocab_from_tokenizer_json(const char *path, char **text, size_t *size)
{
    char *raw;
    size_t n;
    int rc = splade_read_regular(path, SPLADE_MAX_VOCAB_BYTES, &raw, &n);
    if (rc)
        return rc;
    json_error_t err;
    json_t *root = json_loadb(raw, n, 0, &err);
    free(raw);
    if (!root)
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%d: %s", path, err.line, err.text);
    rc = build(root, path, text, size);
    json_decref(root);
    return rc;
}
