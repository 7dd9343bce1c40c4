/* Environment variables -> library options (cli_env.h). */
#include "cli/cli_env.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/fail.h"
#include "splade.h"

static const char *env(const char *name)
{
    const char *e = getenv(name);
    return e && *e ? e : NULL;
}

const char *splade_cli_index_dir(const char *arg)
{
    if (arg && *arg)
        return arg;
    const char *e = env("SPLADE_INDEX");
    return e ? e : SPLADE_INDEX_DEFAULT_DIR;
}

int splade_cli_cache_dir(char *path, size_t n)
{
    const char *cache = env("SPLADE_CACHE"), *home = env("HOME");
    int len;
    if (cache)
        len = snprintf(path, n, "%s", cache);
    else if (home)
        len = snprintf(path, n, "%s/.cache/splade-index", home);
    else
        return splade_fail(SPLADE_ERR_NOT_FOUND, "neither $SPLADE_CACHE nor $HOME is set");
    return len < 0 || (size_t)len >= n ? splade_fail(SPLADE_ERR_INVALID_ARG, "cache path too long") : SPLADE_OK;
}

const splade_model_paths *splade_cli_model_paths(void)
{
    static char cache[4096];
    static splade_model_paths paths;
    paths = (splade_model_paths){.default_model = env("SPLADE_MODEL"), .default_origin = "$SPLADE_MODEL"};
    if (splade_cli_cache_dir(cache, sizeof cache) == SPLADE_OK)
        paths.cache_dir = cache;
    splade_clear_error(); /* no cache is not an error here: the model may be a folder */
    return &paths;
}

void splade_cli_fetch_env(splade_fetch_opts *o)
{
    o->endpoint = env("SPLADE_HF_ENDPOINT");
    o->token = env("HF_TOKEN");
}

int32_t splade_cli_max_batch_tokens(void)
{
    const char *e = getenv("SPLADE_MAX_BATCH_TOKENS");
    return e ? atoi(e) : 0;
}

void splade_cli_build_time(splade_index_builder *b)
{
    const char *e = env("SOURCE_DATE_EPOCH");
    char *end;
    if (e) {
        unsigned long long v = strtoull(e, &end, 10);
        if (*end == '\0')
            splade_builder_set_build_time(b, (uint64_t)v);
    }
}
