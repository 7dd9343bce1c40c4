/* sentence-transformers SparseEncoder folders and plain Hugging Face folders: which files hold
 * the transformer, the pooling/activation and the query table (model_layout.h). */
#include "common/fail.h"
#include "encoder/model_layout.h"
#include "encoder/model_files.h"
#include "splade.h"
#include "splade/model.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define ST_TYPE_MAX 256

static int join(char *out, const char *dir, const char *name)
{
    int n = snprintf(out, 4096, "%s%s%s", dir, *name ? "/" : "", name);
    return n < 4096 ? SPLADE_OK : splade_fail(SPLADE_ERR_INVALID_ARG, "%s/%s: path too long", dir, name);
}

static int ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && !strcmp(s + a - b, tail);
}

static int read_pooling(splade_model_layout *L, const char *dir)
{
    json_t *root;
    int rc = join(L->pooling_path, dir, "config.json");
    if (!rc)
        rc = splade_json_load_object(L->pooling_path, &root);
    if (rc)
        return rc;
    const char *p = json_string_value(json_object_get(root, "pooling_strategy"));
    const char *a = json_string_value(json_object_get(root, "activation_function"));
    json_t *dim = json_object_get(root, "embedding_dimension");
    if (!dim)
        dim = json_object_get(root, "word_embedding_dimension");
    L->pooling = p && !strcmp(p, "sum") ? SPLADE_POOL_SUM : SPLADE_POOL_MAX;
    L->activation = a && !strcmp(a, "log1p_relu") ? SPLADE_ACT_LOG1P_LOG1P_RELU : SPLADE_ACT_LOG1P_RELU;
    L->pool_dim = json_is_integer(dim) ? (int64_t)json_integer_value(dim) : -1;
    if (json_object_get(root, "pooling_strategy") && !(p && (!strcmp(p, "max") || !strcmp(p, "sum"))))
        rc = splade_fail(SPLADE_ERR_UNSUPPORTED, "%s: field 'pooling_strategy' is not \"max\" or \"sum\"",
                         L->pooling_path);
    else if (json_object_get(root, "activation_function") && !(a && (!strcmp(a, "relu") || !strcmp(a, "log1p_relu"))))
        rc = splade_fail(SPLADE_ERR_UNSUPPORTED, "%s: field 'activation_function' is not \"relu\" or \"log1p_relu\"",
                         L->pooling_path);
    else if (dim && !json_is_null(dim) && !json_is_integer(dim))
        rc = splade_fail(SPLADE_ERR_MODEL, "%s: field 'embedding_dimension' is not an integer", L->pooling_path);
    json_decref(root);
    return rc;
}

/* One module of the document (or query) route: its type decides what it contributes. */
static int add_module(splade_model_layout *L, const char *dir, const char *path, const char *type,
                      const char *where, int query_route, int *have_mlm)
{
    char sub[4096];
    int rc = join(sub, dir, path);
    if (rc)
        return rc;
    if (ends_with(type, "SpladePooling"))
        return query_route ? SPLADE_OK : read_pooling(L, sub);
    if (ends_with(type, "MLMTransformer") || ends_with(type, ".Transformer")) {
        if (!query_route) {
            snprintf(L->model_dir, sizeof L->model_dir, "%s", sub);
            *have_mlm = 1;
        }
        return SPLADE_OK;
    }
    if (ends_with(type, "SparseStaticEmbedding") && query_route) {
        L->qtable = SPLADE_QTABLE_STATIC;
        snprintf(L->qtable_dir, sizeof L->qtable_dir, "%s", sub);
        return join(L->qtable_path, sub, "model.safetensors");
    }
    return splade_fail(SPLADE_ERR_UNSUPPORTED, "%s: module type \"%s\" is not supported here (supported: an MLM "
                       "Transformer, SpladePooling, and a SparseStaticEmbedding on a Router's query route)", where, type);
}

/* router_config.json: "structure" {"query": [names], "document": [names]}, "types" {name: type};
 * a module's folder is its name. */
static int read_router(splade_model_layout *L, const char *dir, int *have_mlm)
{
    char path[4096];
    json_t *root;
    int rc = join(path, dir, "router_config.json");
    if (!rc)
        rc = splade_json_load_object(path, &root);
    if (rc)
        return rc;
    json_t *st = json_object_get(root, "structure"), *types = json_object_get(root, "types");
    json_t *doc = json_object_get(st, "document");
    if (!json_is_array(doc) || !json_is_object(types))
        rc = splade_fail(SPLADE_ERR_MODEL, "%s: no \"structure\".\"document\" route or \"types\"", path);
    const char *routes[2] = {"document", "query"};
    for (int r = 0; r < 2 && !rc; r++) {
        json_t *names = json_object_get(st, routes[r]);
        for (size_t i = 0; i < json_array_size(names) && !rc; i++) {
            const char *name = json_string_value(json_array_get(names, i));
            const char *type = json_string_value(json_object_get(types, name ? name : ""));
            if (!name || !type)
                rc = splade_fail(SPLADE_ERR_MODEL, "%s: route '%s' module %zu has no name or type", path, routes[r], i);
            else
                rc = add_module(L, dir, name, type, path, r == 1, have_mlm);
        }
    }
    json_decref(root);
    return rc;
}

static int read_modules(splade_model_layout *L, const char *dir, const char *path)
{
    json_t *root;
    int rc = splade_json_load(path, SPLADE_MAX_JSON_BYTES, &root), have_mlm = 0; /* an array */
    if (rc)
        return rc;
    if (!json_is_array(root))
        rc = splade_fail(SPLADE_ERR_FORMAT, "%s: not a JSON array of modules", path);
    for (size_t i = 0; i < json_array_size(root) && !rc; i++) {
        json_t *m = json_array_get(root, i);
        const char *type = json_string_value(json_object_get(m, "type"));
        const char *sub = json_string_value(json_object_get(m, "path"));
        if (!type || !sub || strstr(sub, ".."))
            rc = splade_fail(SPLADE_ERR_FORMAT, "%s: module %zu lacks a string 'type' or a 'path' inside the folder",
                             path, i);
        else if (ends_with(type, ".Router"))
            rc = read_router(L, dir, &have_mlm);
        else
            rc = add_module(L, dir, sub, type, path, 0, &have_mlm);
    }
    json_decref(root);
    if (!rc && !have_mlm)
        rc = splade_fail(SPLADE_ERR_MODEL, "%s: no MLM transformer module on the document route", path);
    return rc;
}

int splade_model_layout_read(const char *dir, splade_model_layout *L)
{
    memset(L, 0, sizeof *L);
    L->pooling = SPLADE_POOL_MAX;
    L->activation = SPLADE_ACT_LOG1P_RELU;
    L->pool_dim = -1;
    char path[4096];
    int rc = join(L->model_dir, dir, "");
    if (!rc)
        rc = join(path, dir, "modules.json");
    if (!rc && access(path, F_OK) == 0)
        rc = read_modules(L, dir, path);
    if (!rc && L->qtable == SPLADE_QTABLE_NONE && (rc = join(path, dir, "idf.json")) == 0 && access(path, F_OK) == 0) {
        L->qtable = SPLADE_QTABLE_IDF_JSON;
        snprintf(L->qtable_path, sizeof L->qtable_path, "%s", path);
    }
    return rc;
}
