/* fetch-model: Hugging Face "resolve" URLs over libcurl, one file at a time, resumable. */
#include "common/fail.h"
#include "common/log.h"
#include "splade.h"
#include "splade/model.h"

#include <curl/curl.h>
#include <jansson.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    const char *name;
    int required;
} model_file;

/* A plain Hugging Face folder; idf.json: an inference-free model's query table (OpenSearch). */
static const model_file FILES[] = {{"config.json", 1},       {"vocab.txt", 1}, {"tokenizer_config.json", 0},
                                   {"model.safetensors", 1}, {"idf.json", 0},  {NULL, 0}};
/* A sentence-transformers module's files, by module type. */
static const model_file MLM_FILES[] = {{"config.json", 1},           {"vocab.txt", 1},
                                       {"tokenizer_config.json", 0}, {"model.safetensors", 1},
                                       {"sentence_bert_config.json", 0}, {NULL, 0}};
static const model_file POOL_FILES[] = {{"config.json", 1}, {NULL, 0}};
static const model_file STATIC_FILES[] = {{"config.json", 1}, {"model.safetensors", 1}, {"vocab.txt", 0},
                                          {"tokenizer_config.json", 0}, {NULL, 0}};

typedef struct {
    CURL *curl;
    FILE *f;
    int started;  /* first body byte seen: the response code is known */
    int writing;  /* body goes to the file (2xx) */
    int io_error;
} transfer;

/* Body callback: a 206 appends to the .part, a 200 (Range ignored) starts it over, anything
 * else (an error page) is discarded so the .part never holds HTML. */
static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    transfer *t = ud;
    if (!t->started) {
        long code = 0;
        curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
        t->started = 1;
        t->writing = code == 200 || code == 206;
        if (code == 200 && (fflush(t->f) || ftruncate(fileno(t->f), 0) || fseek(t->f, 0, SEEK_SET)))
            t->io_error = 1;
    }
    if (t->writing && fwrite(p, size, n, t->f) != n) {
        t->io_error = 1;
        return 0;
    }
    return size * n;
}

static int valid_repo(const char *r)
{
    const char *slash = strchr(r, '/');
    if (!slash || slash == r || !slash[1] || strchr(slash + 1, '/') || strstr(r, ".."))
        return 0;
    for (const char *p = r; *p; p++)
        if (!(*p == '/' || *p == '-' || *p == '_' || *p == '.' || (*p >= '0' && *p <= '9') ||
              (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
            return 0;
    return 1;
}

static int mkdirs(const char *dir)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) && errno != EEXIST)
                return splade_fail(SPLADE_ERR_IO, "mkdir %s: %s", buf, strerror(errno));
            *p = '/';
        }
    if (mkdir(buf, 0755) && errno != EEXIST)
        return splade_fail(SPLADE_ERR_IO, "mkdir %s: %s", buf, strerror(errno));
    return SPLADE_OK;
}

static CURL *make_handle(const char *url, transfer *t, struct curl_slist *hdr, long from)
{
    CURL *c = curl_easy_init();
    if (!c)
        return NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L); /* the hub redirects large files to a CDN */
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L); /* stalled for a minute: give up, resume later */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "splade-index/" SPLADE_VERSION);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (hdr)
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    if (from > 0)
        curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)from);
    t->curl = c;
    return c;
}

/* One GET of url into part (appending from its current size). *code gets the HTTP status. */
static int get(const char *url, const char *part, struct curl_slist *hdr, long *code)
{
    struct stat st;
    long from = stat(part, &st) == 0 ? (long)st.st_size : 0;
    transfer t = {0};
    if (!(t.f = fopen(part, "ab")))
        return splade_fail(SPLADE_ERR_IO, "%s: %s", part, strerror(errno));
    CURL *c = make_handle(url, &t, hdr, from);
    CURLcode cr = c ? curl_easy_perform(c) : CURLE_FAILED_INIT;
    *code = 0;
    if (c)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
    int bad_close = fclose(t.f) != 0;
    if (c)
        curl_easy_cleanup(c);
    if (t.io_error || bad_close)
        return splade_fail(SPLADE_ERR_IO, "%s: write failed", part);
    if (cr == CURLE_OK || (*code >= 400 && cr == CURLE_WRITE_ERROR))
        return SPLADE_OK;
    if (stat(part, &st) == 0 && st.st_size == 0)
        unlink(part); /* nothing to resume */
    return splade_fail(SPLADE_ERR_NETWORK, "%s: %s%s (run again to resume)", url,
                       curl_easy_strerror(cr),
                       cr == CURLE_COULDNT_RESOLVE_HOST || cr == CURLE_COULDNT_CONNECT ? "; offline?" : "");
}

static int fetch_file(const char *base, const char *dir, const char *sub, const model_file *mf,
                      struct curl_slist *hdr, const splade_fetch_opts *o)
{
    char url[4200], path[4400], part[4500];
    const char *slash = *sub ? "/" : "";
    snprintf(url, sizeof url, "%s/%s%s%s", base, sub, slash, mf->name);
    snprintf(path, sizeof path, "%s/%s%s%s", dir, sub, slash, mf->name);
    snprintf(part, sizeof part, "%s.part", path);
    if (access(path, F_OK) == 0)
        return SPLADE_OK; /* renamed only once complete */
    long code = 0;
    int rc = get(url, part, hdr, &code);
    if (!rc && code == 416) { /* range past the end: the .part is not a prefix of this file */
        unlink(part);
        rc = get(url, part, hdr, &code);
    }
    if (rc)
        return rc;
    if (code == 404 && !mf->required) {
        unlink(part);
        return SPLADE_OK;
    }
    if (code != 200 && code != 206) {
        unlink(part);
        return splade_fail(code == 404 ? SPLADE_ERR_NOT_FOUND : SPLADE_ERR_NETWORK, "%s: HTTP %ld%s", url, code,
                           code == 401 || code == 403 ? " (gated or private model? set $HF_TOKEN)" : "");
    }
    if (rename(part, path))
        return splade_fail(SPLADE_ERR_IO, "rename %s: %s", part, strerror(errno));
    struct stat st;
    if (o->progress && stat(path, &st) == 0)
        o->progress(o->progress_user, mf->name, (uint64_t)st.st_size, (uint64_t)st.st_size);
    return SPLADE_OK;
}

typedef struct {
    const char *base, *dir;
    struct curl_slist *hdr;
    const splade_fetch_opts *o;
} fetcher;

static int ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && !strcmp(s + a - b, tail);
}

/* vocab.txt, else tokenizer.json (transformers 5 saves fast tokenizers without vocab.txt; the loader
 * reads the WordPiece vocabulary from it). Both absent: vocab.txt's 404 is the error. */
static int fetch_vocab(const fetcher *f, const char *sub, const model_file *mf, const char *d)
{
    static const model_file TJ = {"tokenizer.json", 0};
    int rc = fetch_file(f->base, f->dir, sub, mf, f->hdr, f->o);
    char tj[4500];
    snprintf(tj, sizeof tj, "%s/tokenizer.json", d);
    if (rc != SPLADE_ERR_NOT_FOUND || access(tj, F_OK) == 0)
        return rc;
    char why[1024];
    snprintf(why, sizeof why, "%s", splade_error_detail());
    if (fetch_file(f->base, f->dir, sub, &TJ, f->hdr, f->o) == SPLADE_OK && access(tj, F_OK) == 0)
        return SPLADE_OK;
    return splade_fail(SPLADE_ERR_NOT_FOUND, "%s (and no tokenizer.json)", why);
}

static int fetch_set(const fetcher *f, const char *sub, const model_file *files)
{
    char d[4400];
    snprintf(d, sizeof d, "%s%s%s", f->dir, *sub ? "/" : "", sub);
    int rc = *sub ? mkdirs(d) : SPLADE_OK;
    for (const model_file *mf = files; !rc && mf->name; mf++)
        rc = !strcmp(mf->name, "vocab.txt") && mf->required ? fetch_vocab(f, sub, mf, d)
                                                            : fetch_file(f->base, f->dir, sub, mf, f->hdr, f->o);
    return rc;
}

/* A module's files by its type; a type the loader does not know is an error naming it (the
 * loader would refuse the folder anyway). */
static int fetch_module(const fetcher *f, const char *sub, const char *type, const char *where)
{
    if (strstr(sub, "..") || *sub == '/')
        return splade_fail(SPLADE_ERR_FORMAT, "%s: module path '%s' leaves the folder", where, sub);
    if (ends_with(type, "MLMTransformer") || ends_with(type, ".Transformer"))
        return fetch_set(f, sub, MLM_FILES);
    if (ends_with(type, "SpladePooling"))
        return fetch_set(f, sub, POOL_FILES);
    if (ends_with(type, "SparseStaticEmbedding"))
        return fetch_set(f, sub, STATIC_FILES);
    return splade_fail(SPLADE_ERR_UNSUPPORTED, "%s: module type \"%s\" is not supported", where, type);
}

static int load_local(const fetcher *f, const char *name, json_t **root)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    json_error_t err;
    *root = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
    return *root ? SPLADE_OK : splade_fail(SPLADE_ERR_FORMAT, "%s:%d: %s", path, err.line, err.text);
}

/* router_config.json: every module of every route, under its name. */
static int fetch_router(const fetcher *f)
{
    static const model_file RC[] = {{"router_config.json", 1}, {NULL, 0}};
    json_t *root;
    int rc = fetch_set(f, "", RC);
    if (!rc)
        rc = load_local(f, "router_config.json", &root);
    if (rc)
        return rc;
    json_t *types = json_object_get(root, "types"), *type;
    const char *name;
    json_object_foreach(types, name, type) {
        if (!json_is_string(type))
            rc = splade_fail(SPLADE_ERR_FORMAT, "router_config.json: type of '%s' is not a string", name);
        if (rc || (rc = fetch_module(f, name, json_string_value(type), "router_config.json")))
            break;
    }
    json_decref(root);
    return rc;
}

/* modules.json present: the sentence-transformers layout decides which files to fetch. */
static int fetch_st(const fetcher *f)
{
    static const model_file ST[] = {{"config_sentence_transformers.json", 0}, {NULL, 0}};
    json_t *root;
    int rc = fetch_set(f, "", ST);
    if (!rc)
        rc = load_local(f, "modules.json", &root);
    if (rc)
        return rc;
    for (size_t i = 0; !rc && i < json_array_size(root); i++) {
        json_t *m = json_array_get(root, i);
        const char *type = json_string_value(json_object_get(m, "type"));
        const char *sub = json_string_value(json_object_get(m, "path"));
        if (!type || !sub)
            rc = splade_fail(SPLADE_ERR_FORMAT, "modules.json: module %zu lacks a string 'type' or 'path'", i);
        else if (ends_with(type, ".Router"))
            rc = fetch_router(f);
        else
            rc = fetch_module(f, sub, type, "modules.json");
    }
    json_decref(root);
    /* inference-free models may ship idf.json beside a sentence-transformers layout too */
    static const model_file IDF[] = {{"idf.json", 0}, {NULL, 0}};
    return rc ? rc : fetch_set(f, "", IDF);
}

static int fetch_all(const char *repo, const char *dir, const splade_fetch_opts *o)
{
    const char *ep = o->endpoint;
    char base[4096], auth[4200];
    if (!ep || !*ep)
        ep = "https://huggingface.co";
    size_t el = strlen(ep);
    while (el > 1 && ep[el - 1] == '/')
        el--;
    snprintf(base, sizeof base, "%.*s/%s/resolve/main", (int)el, ep, repo);
    struct curl_slist *hdr = NULL;
    const char *tok = o->token;
    if (tok && *tok) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", tok);
        hdr = curl_slist_append(NULL, auth);
    }
    splade_log(SPLADE_LOG_INFO, "fetching %s from %s into %s", repo, base, dir);
    const fetcher f = {base, dir, hdr, o};
    static const model_file MODULES[] = {{"modules.json", 0}, {NULL, 0}};
    char mpath[4200];
    snprintf(mpath, sizeof mpath, "%s/modules.json", dir);
    int rc = fetch_set(&f, "", MODULES);
    if (!rc)
        rc = access(mpath, F_OK) == 0 ? fetch_st(&f) : fetch_set(&f, "", FILES);
    curl_slist_free_all(hdr);
    return rc;
}

int splade_model_fetch(const char *repo, const splade_fetch_opts *opts, char *dir, size_t n)
{
    if (!repo || !valid_repo(repo))
        return splade_fail(SPLADE_ERR_INVALID_ARG, "'%s' is not a Hugging Face model name ORG/NAME",
                           repo ? repo : "(null)");
    const splade_fetch_opts none = {0};
    const splade_fetch_opts *o = opts ? opts : &none;
    if (o->dest)
        snprintf(dir, n, "%s", o->dest);
    else if (o->cache_dir && *o->cache_dir)
        snprintf(dir, n, "%s/%s", o->cache_dir, repo);
    else
        return splade_fail(SPLADE_ERR_INVALID_ARG, "fetching %s: neither a destination nor a cache folder given",
                           repo);
    int rc = mkdirs(dir);
    if (rc)
        return rc;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return splade_fail(SPLADE_ERR_NETWORK, "curl_global_init failed");
    rc = fetch_all(repo, dir, o);
    curl_global_cleanup();
    return rc;
}

void splade_fetch_opts_init(splade_fetch_opts *o)
{
    *o = (splade_fetch_opts){0};
}
