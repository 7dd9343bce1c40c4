/* vocab.txt from tokenizer.json: transformers 5 saves fast BERT tokenizers as tokenizer.json alone
 * (no vocab.txt), and sentence-transformers folders saved that way hold nothing else. The WordPiece
 * vocabulary is read; the normalization settings come from tokenizer_config.json when the folder
 * has one (transformers' BertTokenizer rebuilds the normalizer from it), else from tokenizer.json's
 * normalizer. The text built is what vocab.txt would hold, so the fingerprint is the same. */
#include "common/fail.h"
#include "encoder/model_files.h"
#include "encoder/tokenizer_internal.h"
#include "splade.h"

#include <jansson.h>
#include <stdbool.h>
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

static int json_file(const char *path, json_t **root)
{
    char *raw;
    size_t n;
    int rc = splade_read_regular(path, SPLADE_MAX_VOCAB_BYTES, &raw, &n);
    if (rc)
        return rc;
    json_error_t err;
    *root = json_loadb(raw, n, 0, &err);
    free(raw);
    return *root ? SPLADE_OK : splade_fail(SPLADE_ERR_FORMAT, "%s:%d: %s", path, err.line, err.text);
}

int splade_vocab_from_tokenizer_json(const char *path, char **text, size_t *size)
{
    json_t *root;
    int rc = json_file(path, &root);
    if (rc)
        return rc;
    rc = build(root, path, text, size);
    json_decref(root);
    return rc;
}

/* BertNormalizer {clean_text, handle_chinese_chars, strip_accents (null: follows lowercase),
 * lowercase}: the tokenizer implements clean text, CJK splitting and accents stripped exactly when
 * lowercasing. */
static int normalizer_lowercase(json_t *norm, const char *path, bool *lower)
{
    const char *type = json_string_value(json_object_get(norm, "type"));
    if (!type || strcmp(type, "BertNormalizer"))
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "%s: field 'normalizer.type' is \"%s\": only BERT's "
                           "(BertNormalizer) is supported", path, type ? type : "(absent)");
    json_t *lc = json_object_get(norm, "lowercase"), *sa = json_object_get(norm, "strip_accents");
    json_t *cjk = json_object_get(norm, "handle_chinese_chars"), *clean = json_object_get(norm, "clean_text");
    if (!json_is_boolean(lc))
        return splade_fail(SPLADE_ERR_FORMAT, "%s: field 'normalizer.lowercase' is not a boolean", path);
    *lower = json_is_true(lc);
    const char *field = json_is_false(cjk) ? "handle_chinese_chars" : json_is_false(clean) ? "clean_text"
                      : json_is_boolean(sa) && json_is_true(sa) != *lower ? "strip_accents" : NULL;
    if (field)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "%s: field 'normalizer.%s' is %s: only BERT's normalizer with "
                           "clean text, CJK splitting and accents stripped exactly when lowercasing is supported",
                           path, field, strcmp(field, "strip_accents") ? "false" : json_is_true(sa) ? "true" : "false");
    return SPLADE_OK;
}

int splade_tokenizer_json_lowercase(const char *path, bool *lower)
{
    json_t *root;
    int rc = json_file(path, &root);
    if (rc)
        return rc;
    json_t *norm = json_object_get(root, "normalizer");
    rc = norm && !json_is_null(norm) ? normalizer_lowercase(norm, path, lower)
       : splade_fail(SPLADE_ERR_UNSUPPORTED, "%s: field 'normalizer' is absent: only BERT's (BertNormalizer) is "
                     "supported", path);
    json_decref(root);
    return rc;
}
