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

/* config.json's names for the fields the forward reads: each architecture spells them its own
 * way (DistilBertConfig: dim, n_layers, ...), and errors name the field as the file spells it. */
typedef struct {
    splade_arch arch;
    const char *model_type, *class_name;
    const char *hidden, *layers, *heads, *inter, *act;
    int has_token_types;
} arch_fields;

static const arch_fields ARCHS[] = {
    {SPLADE_ARCH_BERT, "bert", "BertForMaskedLM", "hidden_size", "num_hidden_layers", "num_attention_heads",
     "intermediate_size", "hidden_act", 1},
    {SPLADE_ARCH_DISTILBERT, "distilbert", "DistilBertForMaskedLM", "dim", "n_layers", "n_heads", "hidden_dim",
     "activation", 0},
};
#define N_ARCHS (sizeof ARCHS / sizeof *ARCHS)
#define SUPPORTED "bert (BertForMaskedLM), distilbert (DistilBertForMaskedLM)"

/* "model_type" decides; without it "architectures"[0]; with neither, BERT (older folders). A
 * declared class must be the masked LM of that type: a BertModel has no MLM head to load. */
static int pick_arch(json_t *root, const char *path, const arch_fields **out)
{
    json_t *mt = json_object_get(root, "model_type"), *ar = json_object_get(root, "architectures");
    const char *type = json_is_string(mt) ? json_string_value(mt) : NULL;
    const char *cls = json_is_array(ar) && json_is_string(json_array_get(ar, 0))
                      ? json_string_value(json_array_get(ar, 0)) : NULL;
    if (mt && !type)
        return splade_fail(SPLADE_ERR_MODEL, "%s: field 'model_type' is not a string", path);
    *out = type || cls ? NULL : &ARCHS[0];
    for (size_t i = 0; i < N_ARCHS && !*out; i++)
        if (type ? !strcmp(type, ARCHS[i].model_type) : !strcmp(cls, ARCHS[i].class_name))
            *out = &ARCHS[i];
    if (!*out)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "%s: field '%s' is \"%s\": unsupported architecture; "
                           "supported: " SUPPORTED, path, type ? "model_type" : "architectures", type ? type : cls);
    if (cls && strcmp(cls, (*out)->class_name))
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "%s: field 'architectures' is \"%s\": a %s checkpoint must be "
                           "%s (the masked-LM head is what SPLADE uses); supported: " SUPPORTED, path, cls,
                           (*out)->model_type, (*out)->class_name);
    return SPLADE_OK;
}

static int check_act(json_t *root, const char *path, const arch_fields *a)
{
    json_t *v = json_object_get(root, a->act);
    if (!v)
        return splade_fail(SPLADE_ERR_MODEL, "%s: missing field '%s'", path, a->act);
    const char *act = json_string_value(v);
    /* Only BERT's exact erf GELU: the tanh approximations ("gelu_new", ...) differ by ~1e-3,
     * which would silently break agreement with the reference. */
    if (!act || strcmp(act, "gelu") != 0)
        return splade_fail(SPLADE_ERR_UNSUPPORTED,
                           "%s: field '%s' is \"%s\": only \"gelu\" (exact erf) is supported",
                           path, a->act, act ? act : "(not a string)");
    json_t *pe = json_object_get(root, "position_embedding_type");
    if (pe && json_is_string(pe) && strcmp(json_string_value(pe), "absolute") != 0)
        return splade_fail(SPLADE_ERR_UNSUPPORTED,
                           "%s: field 'position_embedding_type' is \"%s\": only \"absolute\" is supported",
                           path, json_string_value(pe));
    json_t *sin = json_object_get(root, "sinusoidal_pos_embds");
    if (sin && !json_is_false(sin))
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "%s: field 'sinusoidal_pos_embds' must be false (learned "
                           "position embeddings)", path);
    return SPLADE_OK;
}

static int parse_sizes(json_t *root, const char *path, const arch_fields *a, splade_config *c)
{
    int rc;
    if ((rc = get_int(root, path, "vocab_size", -1, 1, 1L << 24, &c->vocab_size)) ||
        (rc = get_int(root, path, a->hidden, -1, 1, 1L << 16, &c->hidden_size)) ||
        (rc = get_int(root, path, a->layers, -1, 1, 1024, &c->num_layers)) ||
        (rc = get_int(root, path, a->heads, -1, 1, 1024, &c->num_heads)) ||
        (rc = get_int(root, path, a->inter, -1, 1, 1L << 18, &c->intermediate_size)) ||
        (rc = get_int(root, path, "max_position_embeddings", -1, 2, 1L << 20, &c->max_position)) ||
        (rc = get_int(root, path, "pad_token_id", 0, 0, c->vocab_size - 1, &c->pad_token_id)))
        return rc;
    if (a->has_token_types && (rc = get_int(root, path, "type_vocab_size", 2, 1, 1024, &c->type_vocab_size)))
        return rc;
    if (c->hidden_size % c->num_heads)
        return splade_fail(SPLADE_ERR_MODEL, "%s: '%s' %d is not a multiple of '%s' %d", path, a->hidden,
                           c->hidden_size, a->heads, c->num_heads);
    return SPLADE_OK;
}

static int parse_config(json_t *root, const char *path, splade_config *c)
{
    const arch_fields *a = NULL;
    int rc = pick_arch(root, path, &a);
    if (!rc)
        rc = parse_sizes(root, path, a, c);
    if (rc)
        return rc;
    c->architecture = a->arch;
    json_t *eps = json_object_get(root, "layer_norm_eps");
    if (eps && !json_is_number(eps))
        return splade_fail(SPLADE_ERR_MODEL, "%s: field 'layer_norm_eps' is not a number", path);
    c->layer_norm_eps = eps ? (float)json_number_value(eps) : 1e-12f; /* DistilBERT: fixed 1e-12 */
    if (!(c->layer_norm_eps > 0.0f && c->layer_norm_eps < 1.0f))
        return splade_fail(SPLADE_ERR_MODEL, "%s: field 'layer_norm_eps' out of range", path);
    json_t *tie = json_object_get(root, "tie_word_embeddings");
    if (tie && !json_is_boolean(tie))
        return splade_fail(SPLADE_ERR_MODEL, "%s: field 'tie_word_embeddings' is not a boolean", path);
    c->tie_word_embeddings = tie ? json_is_true(tie) : true;
    c->do_lower_case = true;
    return check_act(root, path, a);
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
