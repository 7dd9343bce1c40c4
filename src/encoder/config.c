/* config.json of a BERT-family masked LM -> splade_config, with every field the
 * forward pass depends on checked, so a wrong model fails at load and not as garbage output. */
#include "common/fail.h"
#include "splade.h"
#include "splade/model.h"
#include "encoder/model_files.h"

#include <jansson.h>
#include <string.h>

/* Reads an integer field; `def` < 0 marks it required. Values must lie in [lo, hi]. */
static int get_int(json_t *root, const char *path, const char *key, long def, long lo, long hi,
                   int32_t *out)
{
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) {
        if (def < 0)
            return splade_fail(SPLADE_ERR_MODEL, "%s: missing field '%s'", path, key);
        *out = (int32_t)def;
        return SPLADE_OK;
    }
    if (!json_is_integer(v))
        return splade_fail(SPLADE_ERR_MODEL, "%s: field '%s' is not an integer", path, key);
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return splade_fail(SPLADE_ERR_MODEL, "%s: field '%s' = %lld out of range [%ld, %ld]", path,
                           key, (long long)x, lo, hi);
    *out = (int32_t)x;
    return SPLADE_OK;
}

static int check_act(json_t *root, const char *path)
{
    json_t *v = json_object_get(root, "hidden_act");
    if (!v)
        return splade_fail(SPLADE_ERR_MODEL, "%s: missing field 'hidden_act'", path);
    const char *act = json_string_value(v);
    /* Only BERT's exact erf GELU: the tanh approximations ("gelu_new", ...) differ by ~1e-3,
     * which would silently break agreement with the reference. */
    if (!act || strcmp(act, "gelu") != 0)
        return splade_fail(SPLADE_ERR_UNSUPPORTED,
                           "%s: field 'hidden_act' is \"%s\": only \"gelu\" (exact erf) is supported",
                           path, act ? act : "(not a string)");
    json_t *pe = json_object_get(root, "position_embedding_type");
    if (pe && json_is_string(pe) && strcmp(json_string_value(pe), "absolute") != 0)
        return splade_fail(SPLADE_ERR_UNSUPPORTED,
                           "%s: field 'position_embedding_type' is \"%s\": only \"absolute\" is supported",
                           path, json_string_value(pe));
    return SPLADE_OK;
}

static int parse_config(json_t *root, const char *path, splade_config *c)
{
    int rc;
    if ((rc = get_int(root, path, "vocab_size", -1, 1, 1L << 24, &c->vocab_size)) ||
        (rc = get_int(root, path, "hidden_size", -1, 1, 1L << 16, &c->hidden_size)) ||
        (rc = get_int(root, path, "num_hidden_layers", -1, 1, 1024, &c->num_layers)) ||
        (rc = get_int(root, path, "num_attention_heads", -1, 1, 1024, &c->num_heads)) ||
        (rc = get_int(root, path, "intermediate_size", -1, 1, 1L << 18, &c->intermediate_size)) ||
        (rc = get_int(root, path, "max_position_embeddings", -1, 2, 1L << 20, &c->max_position)) ||
        (rc = get_int(root, path, "type_vocab_size", 2, 1, 1024, &c->type_vocab_size)) ||
        (rc = get_int(root, path, "pad_token_id", 0, 0, c->vocab_size - 1, &c->pad_token_id)))
        return rc;
    if (c->hidden_size % c->num_heads)
        return splade_fail(SPLADE_ERR_MODEL,
                           "%s: 'hidden_size' %d is not a multiple of 'num_attention_heads' %d", path,
                           c->hidden_size, c->num_heads);
    json_t *eps = json_object_get(root, "layer_norm_eps");
    if (eps && !json_is_number(eps))
        return splade_fail(SPLADE_ERR_MODEL, "%s: field 'layer_norm_eps' is not a number", path);
    c->layer_norm_eps = eps ? (float)json_number_value(eps) : 1e-12f;
    if (!(c->layer_norm_eps > 0.0f && c->layer_norm_eps < 1.0f))
        return splade_fail(SPLADE_ERR_MODEL, "%s: field 'layer_norm_eps' out of range", path);
    json_t *tie = json_object_get(root, "tie_word_embeddings");
    if (tie && !json_is_boolean(tie))
        return splade_fail(SPLADE_ERR_MODEL, "%s: field 'tie_word_embeddings' is not a boolean", path);
    c->tie_word_embeddings = tie ? json_is_true(tie) : true;
    c->do_lower_case = true;
    return check_act(root, path);
}

int splade_config_load(const char *path, splade_config *cfg)
{
    if (!path || !cfg)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_config_load: NULL argument");
    memset(cfg, 0, sizeof *cfg);
    json_t *root;
    int rc = splade_json_load_object(path, &root);
    if (rc)
        return rc;
    rc = parse_config(root, path, cfg);
    json_decref(root);
    return rc;
}
