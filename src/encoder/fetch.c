/* fetch-model: Hugging Face "resolve" URLs over libcurl, one file at a time, resumable. */
#include "common/fail.h"
#include "common/log.h"
#include "splade.h"
#include "splade/model.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    const char *name;
    int required;
} model_file;

static const model_file FILES[] = {
    {"config.json", 1}, {"vocab.txt", 1}, {"tokenizer_config.json", 0}, {"model.safetensors", 1}};

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

static int fetch_file(const char *base, const char *dir, const model_file *mf, struct curl_slist *hdr,
                      const splade_fetch_opts *o)
{
    char url[4200], path[4400], part[4500];
    snprintf(url, sizeof url, "%s/%s", base, mf->name);
    snprintf(path, sizeof path, "%s/%s", dir, mf->name);
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
    int rc = SPLADE_OK;
    for (size_t i = 0; !rc && i < sizeof FILES / sizeof *FILES; i++)
        rc = fetch_file(base, dir, &FILES[i], hdr, o);
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
