/* DIR/MANIFEST as JSON (manifest.h, docs/FORMAT.md "Segments and the manifest"): small, read whole,
 * replaced whole by a rename, so a reader sees one generation or the next, never a mix. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fail.h"
#include "index/builder_internal.h"
#include "index/manifest.h"
#include "splade.h"

void splade_manifest_free(splade_manifest *m)
{
    free(m->segs);
    m->segs = NULL;
    m->n_segs = 0;
}

int splade_manifest_copy(const splade_manifest *from, int extra, splade_manifest *to)
{
    *to = *from;
    to->segs = calloc((size_t)from->n_segs + (size_t)extra + 1, sizeof *to->segs);
    if (!to->segs)
        return splade_fail(SPLADE_ERR_NOMEM, "manifest of %d segments", from->n_segs + extra);
    if (from->n_segs)
        memcpy(to->segs, from->segs, (size_t)from->n_segs * sizeof *to->segs);
    return SPLADE_OK;
}

/* A file name the manifest may hold: a plain name in the folder (no '/', no leading '.'). */
static int plain_name(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n < SPLADE_NAME_MAX && s[0] != '.' && !strchr(s, '/');
}

static int bad(const char *path, const char *what)
{
    return splade_fail(SPLADE_ERR_FORMAT, "%s: malformed manifest: %s", path, what);
}

/* An integer field >= 0 (json_int_t), or fails naming it. */
static int get_u64(json_t *o, const char *key, uint64_t max, uint64_t *out, const char *path)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
        return splade_fail(SPLADE_ERR_FORMAT, "%s: malformed manifest: field \"%s\" is missing or out of range", path,
                           key);
    *out = (uint64_t)json_integer_value(v);
    return SPLADE_OK;
}

static int get_name(json_t *o, const char *key, int nullable, char *out, const char *path)
{
    json_t *v = json_object_get(o, key);
    out[0] = '\0';
    if (nullable && json_is_null(v))
        return SPLADE_OK;
    if (!json_is_string(v) || !plain_name(json_string_value(v)))
        return splade_fail(SPLADE_ERR_FORMAT, "%s: malformed manifest: field \"%s\" is not a file name in the folder",
                           path, key);
    strcpy(out, json_string_value(v));
    return SPLADE_OK;
}

static int parse_seg(json_t *o, splade_manifest_seg *g, const char *path)
{
    uint64_t n_docs, n_del, seq, clipped = 0;
    if (!json_is_object(o))
        return bad(path, "a segment is not an object");
    int rc = get_name(o, "file", 0, g->file, path);
    if (rc == 0)
        rc = get_name(o, "deletions", 1, g->deletions, path);
    if (rc == 0)
        rc = get_u64(o, "n_docs", UINT32_MAX - 1, &n_docs, path);
    if (rc == 0)
        rc = get_u64(o, "n_deleted", n_docs, &n_del, path);
    if (rc == 0)
        rc = get_u64(o, "seq_base", UINT64_MAX >> 2, &seq, path);
    if (rc == 0 && json_object_get(o, "clipped"))
        rc = get_u64(o, "clipped", UINT64_MAX >> 2, &clipped, path);
    if (rc < 0)
        return rc;
    if (!g->deletions[0] != !n_del)
        return bad(path, "a segment's n_deleted and deletions disagree");
    g->n_docs = (uint32_t)n_docs;
    g->n_deleted = (uint32_t)n_del;
    g->seq_base = seq;
    g->clipped = clipped;
    return SPLADE_OK;
}

static int parse_model(json_t *o, splade_manifest *m, const char *path)
{
    json_t *model = json_object_get(o, "model");
    if (json_is_null(model)) {
        m->has_model = 0;
        return SPLADE_OK;
    }
    json_t *name = json_object_get(model, "name"), *dir = json_object_get(model, "dir"),
           *fp = json_object_get(model, "fingerprint");
    if (!json_is_string(name) || !json_is_string(dir) || !json_is_string(fp) ||
        json_string_length(name) >= sizeof m->model_name || json_string_length(dir) >= sizeof m->model_dir ||
        sscanf(json_string_value(fp), "%llx", (unsigned long long *)&m->fingerprint) != 1)
        return bad(path, "field \"model\" (name, dir, fingerprint)");
    m->has_model = 1;
    strcpy(m->model_name, json_string_value(name));
    strcpy(m->model_dir, json_string_value(dir));
    return SPLADE_OK;
}

static int parse(json_t *o, splade_manifest *m, const char *path)
{
    uint64_t version;
    json_t *segs = json_object_get(o, "segments"), *scale = json_object_get(o, "doc_scale");
    if (!json_is_object(o))
        return bad(path, "not a JSON object");
    int rc = get_u64(o, "version", UINT32_MAX, &version, path);
    if (rc == 0 && version != SPLADE_MANIFEST_VERSION)
        return splade_fail(SPLADE_ERR_VERSION, "%s: manifest version %llu is not supported (this build reads %d)", path,
                           (unsigned long long)version, SPLADE_MANIFEST_VERSION);
    if (rc == 0)
        rc = get_u64(o, "generation", UINT64_MAX >> 2, &m->generation, path);
    if (rc == 0)
        rc = get_u64(o, "next_seq", UINT64_MAX >> 2, &m->next_seq, path);
    if (rc == 0)
        rc = parse_model(o, m, path);
    if (rc < 0)
        return rc;
    if (!json_is_number(scale) || !(json_number_value(scale) >= 0) || json_number_value(scale) > 3.4e38)
        return bad(path, "field \"doc_scale\" is not a finite number >= 0");
    m->doc_scale = (float)json_number_value(scale);
    if (!json_is_array(segs) || json_array_size(segs) > 1u << 20)
        return bad(path, "field \"segments\" is not an array");
    m->segs = calloc(json_array_size(segs) + 1, sizeof *m->segs);
    if (!m->segs)
        return splade_fail(SPLADE_ERR_NOMEM, "%s", path);
    for (size_t i = 0; i < json_array_size(segs); i++, m->n_segs++)
        if ((rc = parse_seg(json_array_get(segs, i), &m->segs[i], path)) < 0)
            return rc;
    return SPLADE_OK;
}

int splade_manifest_read(const char *dir, splade_manifest *m)
{
    memset(m, 0, sizeof *m);
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, SPLADE_MANIFEST_FILE) >= (int)sizeof path)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "index path too long: %s", dir);
    FILE *f = fopen(path, "rb");
    if (!f)
        return splade_fail(errno == ENOENT || errno == ENOTDIR ? SPLADE_ERR_NOT_FOUND : SPLADE_ERR_IO,
                           "%s: cannot open: %s", path,
                           strerror(errno));
    json_error_t err;
    json_t *o = json_loadf(f, JSON_REJECT_DUPLICATES, &err);
    fclose(f);
    if (!o)
        return splade_fail(SPLADE_ERR_FORMAT, "%s: malformed manifest: line %d: %s", path, err.line, err.text);
    int rc = parse(o, m, path);
    json_decref(o);
    return rc;
}

static json_t *seg_json(const splade_manifest_seg *g)
{
    json_t *o = json_object();
    json_object_set_new(o, "file", json_string(g->file));
    json_object_set_new(o, "n_docs", json_integer(g->n_docs));
    json_object_set_new(o, "seq_base", json_integer((json_int_t)g->seq_base));
    json_object_set_new(o, "deletions", g->deletions[0] ? json_string(g->deletions) : json_null());
    json_object_set_new(o, "n_deleted", json_integer(g->n_deleted));
    json_object_set_new(o, "clipped", json_integer((json_int_t)g->clipped));
    return o;
}

static char *to_text(const splade_manifest *m)
{
    json_t *o = json_object(), *segs = json_array(), *model = json_null();
    if (m->has_model) {
        char fp[32];
        snprintf(fp, sizeof fp, "%016llx", (unsigned long long)m->fingerprint);
        model = json_pack("{s:s, s:s, s:s}", "name", m->model_name, "dir", m->model_dir, "fingerprint", fp);
    }
    json_object_set_new(o, "format", json_string("splade-index manifest"));
    json_object_set_new(o, "version", json_integer(SPLADE_MANIFEST_VERSION));
    json_object_set_new(o, "generation", json_integer((json_int_t)m->generation));
    json_object_set_new(o, "doc_scale", json_real((double)m->doc_scale)); /* %.17g: the float exactly */
    json_object_set_new(o, "next_seq", json_integer((json_int_t)m->next_seq));
    json_object_set_new(o, "model", model);
    for (int i = 0; i < m->n_segs; i++)
        json_array_append_new(segs, seg_json(&m->segs[i]));
    json_object_set_new(o, "segments", segs);
    char *text = json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(o);
    return text;
}

int splade_write_small_file(const char *dir, const char *prefix, const char *name, const void *data, size_t len)
{
    char tmp[4096], final[4096];
    if (snprintf(final, sizeof final, "%s/%s", dir, name) >= (int)sizeof final)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "index path too long: %s", dir);
    int fd;
    int rc = splade_create_temp(dir, prefix, tmp, sizeof tmp, &fd);
    if (rc < 0)
        return rc;
    const char *p = data;
    for (size_t left = len; rc == 0 && left > 0;) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            rc = splade_fail(SPLADE_ERR_IO, "%s: write failed: %s", tmp, strerror(errno));
        else
            p += w, left -= (size_t)w;
    }
    if (rc == 0 && fsync(fd) != 0)
        rc = splade_fail(SPLADE_ERR_IO, "%s: fsync failed: %s", tmp, strerror(errno));
    if (close(fd) != 0 && rc == 0)
        rc = splade_fail(SPLADE_ERR_IO, "%s: close failed: %s", tmp, strerror(errno));
    if (rc == 0 && rename(tmp, final) != 0)
        rc = splade_fail(SPLADE_ERR_IO, "%s: cannot rename to %s: %s", tmp, final, strerror(errno));
    if (rc < 0)
        unlink(tmp);
    return rc;
}

int splade_manifest_write(const char *dir, const splade_manifest *m)
{
    char *text = to_text(m);
    if (!text)
        return splade_fail(SPLADE_ERR_NOMEM, "%s/%s", dir, SPLADE_MANIFEST_FILE);
    size_t len = strlen(text);
    text[len] = '\n'; /* json_dumps' NUL becomes the final newline */
    int rc = splade_write_small_file(dir, "." SPLADE_MANIFEST_FILE ".tmp-", SPLADE_MANIFEST_FILE, text, len + 1);
    free(text);
    return rc < 0 ? rc : splade_sync_dir(dir);
}
