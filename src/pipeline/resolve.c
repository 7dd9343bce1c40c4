/* Where a model is found: one rule shared by encode, build and query. The places come from the
 * caller (splade_model_paths); the CLI fills them from the environment (src/cli/cli_env.c). */
#include "common/fail.h"
#include "splade.h"
#include "splade/model.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int has_file(const char *dir, const char *name)
{
    char p[4096];
    struct stat st;
    if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p)
        return 0;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* A Hugging Face folder (config.json) or a sentence-transformers one (modules.json). */
static int has_config(const char *dir) { return has_file(dir, "config.json") || has_file(dir, "modules.json"); }

/* A folder as given, else the same name under the cache (ORG/NAME from fetch-model). */
static int try_name(const char *name, const char *cache, char *path, size_t n, char *tried, size_t tn)
{
    char cand[4096];
    if (has_config(name))
        return snprintf(path, n, "%s", name) < (int)n;
    size_t used = strlen(tried);
    snprintf(tried + used, tn - used, "%s%s", used ? ", " : "", name);
    if (name[0] == '/' || !cache)
        return 0;
    if (snprintf(cand, sizeof cand, "%s/%s", cache, name) >= (int)sizeof cand)
        return 0;
    used = strlen(tried);
    snprintf(tried + used, tn - used, ", %s", cand);
    return has_config(cand) && snprintf(path, n, "%s", cand) < (int)n;
}

int splade_model_resolve(const char *arg, const splade_model_paths *paths, char *path, size_t n)
{
    char tried[8192] = "";
    if (!path || !n)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_model_resolve: no output buffer");
    const splade_model_paths none = {0};
    if (!paths)
        paths = &none;
    const char *cache = paths->cache_dir && *paths->cache_dir ? paths->cache_dir : NULL;
    const char *dflt = paths->default_model;
    /* the message names the name and where it came from: the caller's (--model, an index's record), or the
     * default's origin ($SPLADE_MODEL in the CLI) */
    const char *name = arg && *arg ? arg : dflt && *dflt ? dflt : NULL;
    if (name) {
        if (try_name(name, cache, path, n, tried, sizeof tried))
            return SPLADE_OK;
        return splade_fail(SPLADE_ERR_NOT_FOUND,
                           "model \"%s\"%s%s%s not found (tried %s): give a folder with config.json (or modules.json), or fetch "
                           "one with `splade-index fetch-model ORG/NAME`", name, name == arg ? "" : " (from ",
                           name == arg ? "" : paths->default_origin ? paths->default_origin : "the default",
                           name == arg ? "" : ")", tried);
    }
    char cand[4096 + 64];
    const char *cands[2] = {NULL, "./cache/" SPLADE_DEFAULT_MODEL};
    if (cache && snprintf(cand, sizeof cand, "%s/" SPLADE_DEFAULT_MODEL, cache) < (int)sizeof cand)
        cands[0] = cand;
    for (int i = 0; i < 2; i++) {
        if (!cands[i])
            continue;
        if (has_config(cands[i]))
            return snprintf(path, n, "%s", cands[i]) < (int)n ? SPLADE_OK
                   : splade_fail(SPLADE_ERR_INVALID_ARG, "model path too long");
        size_t used = strlen(tried);
        snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "", cands[i]);
    }
    return splade_fail(SPLADE_ERR_NOT_FOUND,
                       "no model found (tried %s): pass --model DIR, set $SPLADE_MODEL, or fetch "
                       "splade-tiny with `make models` (python3 tools/fetch_splade_tiny.py)", tried);
}
