/* JSON Lines reader shared by the corpus and vector readers (src/common/jsonl.h).
 *
 * Three layers, each pulling from the one below: raw bytes (a file descriptor read in chunks, or
 * the caller's memory), decoded bytes (the raw bytes as they are, or inflated when the input
 * starts with the gzip magic), and lines (assembled up to the length limit, checked for NUL bytes
 * chunk by chunk, so a 3 GB line of zeros fails after its first chunk, not after reading it). */
#include "common/fail.h"
#include "common/jsonl.h"
#include "splade.h"
#include "splade/corpus.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* Read size; a fuzzing build lowers it (-DSPLADE_JSONL_CHUNK=61) so that lines cross chunk
 * boundaries in small inputs too. */
#ifndef SPLADE_JSONL_CHUNK
#define SPLADE_JSONL_CHUNK (1 << 16)
#endif
enum { CHUNK = SPLADE_JSONL_CHUNK, MAGIC_MAX = 6 };

struct splade_jsonl {
    char *path;
    int fd;                    /* -1 when reading memory */
    int owns_fd;
    const unsigned char *raw;  /* the file's read buffer (inbuf), or the caller's memory */
    unsigned char *inbuf;
    size_t raw_len, raw_pos;
    int raw_eof;
    int gz;                    /* inflating */
    int gz_member_end;         /* a gzip member ended: another may follow (concatenated .gz files) */
    int gz_error;              /* zlib error found after the bytes of the last chunk */
    z_stream z;
    unsigned char *outbuf;
    const unsigned char *dec;  /* decoded bytes not yet split into lines: dec[dec_pos..dec_len) */
    size_t dec_len, dec_pos;
    char *line;
    size_t line_len, line_cap, max_line;
    int skip_rest;             /* the last line failed before its newline: drop the rest of it */
    int failed;                /* status of a stream error: every later call fails */
    long line_no;
    json_t *current;
};

/* ---- raw bytes ---- */

static int read_error(splade_jsonl *j, int err)
{
    return splade_fail(SPLADE_ERR_IO, "%s:%ld: read error: %s", j->path, j->line_no + 1, strerror(err));
}

/* Appends what one read() gives to the raw buffer; raw_eof at end of file. */
static int raw_read_more(splade_jsonl *j)
{
    ssize_t n;
    do
        n = read(j->fd, j->inbuf + j->raw_len, CHUNK - j->raw_len);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return read_error(j, errno);
    j->raw_len += (size_t)n;
    j->raw_eof = n == 0;
    return SPLADE_OK;
}

/* Makes unread raw bytes available unless at end of input. */
static int raw_refill(splade_jsonl *j)
{
    if (j->raw_pos < j->raw_len || j->raw_eof)
        return SPLADE_OK;
    j->raw_pos = j->raw_len = 0;
    return raw_read_more(j);
}

/* ---- decoded bytes ---- */

static const struct {
    const char *magic;
    size_t len;
    const char *name;
} compressed_kinds[] = {
    {"\x1f\x8b", 2, "gzip"},           {"BZh", 3, "bzip2"},           {"\xfd" "7zXZ\0", 6, "xz"},
    {"\x28\xb5\x2f\xfd", 4, "zstd"}, {"\x04\x22\x4d\x18", 4, "lz4"}, {"PK\x03\x04", 4, "zip"},
};

/* Looks at the first bytes: gzip starts inflating, another compression format is refused (a
 * JSONL file starts with '{', whitespace or a byte-order mark, never with these). */
static int detect_format(splade_jsonl *j)
{
    while (j->fd >= 0 && j->raw_len < MAGIC_MAX && !j->raw_eof) {
        int rc = raw_read_more(j);
        if (rc < 0)
            return rc;
    }
    for (size_t k = 0; k < sizeof compressed_kinds / sizeof *compressed_kinds; k++) {
        if (j->raw_len < compressed_kinds[k].len || memcmp(j->raw, compressed_kinds[k].magic, compressed_kinds[k].len))
            continue;
        if (k > 0)
            return splade_fail(SPLADE_ERR_UNSUPPORTED, "%s: compressed input (%s) is not supported: decompress it "
                               "first (gzip is read directly)", j->path, compressed_kinds[k].name);
        j->outbuf = malloc(CHUNK);
        if (!j->outbuf || inflateInit2(&j->z, 16 + MAX_WBITS) != Z_OK)
            return splade_fail(SPLADE_ERR_NOMEM, "%s: gzip decoder", j->path);
        j->gz = 1;
    }
    return SPLADE_OK;
}

static int plain_next(splade_jsonl *j)
{
    int rc = raw_refill(j);
    if (rc < 0 || j->raw_pos == j->raw_len)
        return rc;
    j->dec = j->raw + j->raw_pos;
    j->dec_len = j->raw_len - j->raw_pos;
    j->raw_pos = j->raw_len;
    return 1;
}

static int gzip_error(splade_jsonl *j, int zr)
{
    if (zr == Z_MEM_ERROR)
        return splade_fail(SPLADE_ERR_NOMEM, "%s:%ld: gzip decoder", j->path, j->line_no + 1);
    return splade_fail(SPLADE_ERR_IO, "%s:%ld: corrupt gzip data (zlib: %s)", j->path, j->line_no + 1,
                       j->z.msg ? j->z.msg : zError(zr));
}

static int gzip_next(splade_jsonl *j)
{
    if (j->gz_error)
        return gzip_error(j, j->gz_error);
    for (;;) {
        if (j->z.avail_in == 0) {
            int rc = raw_refill(j);
            if (rc < 0)
                return rc;
            j->z.next_in = (unsigned char *)j->raw + j->raw_pos;
            j->z.avail_in = (uInt)(j->raw_len - j->raw_pos);
            j->raw_pos = j->raw_len;
        }
        if (j->gz_member_end) {
            if (j->z.avail_in == 0)
                return 0;
            inflateReset(&j->z);
            j->gz_member_end = 0;
        }
        j->z.next_out = j->outbuf;
        j->z.avail_out = CHUNK;
        int zr = inflate(&j->z, Z_NO_FLUSH);
        int failed = zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR;
        j->gz_member_end = zr == Z_STREAM_END;
        if (j->z.avail_out < CHUNK) { /* the bytes before an error first, as a chunked read would */
            j->gz_error = failed ? zr : 0;
            j->dec = j->outbuf;
            j->dec_len = CHUNK - j->z.avail_out;
            return 1;
        }
        if (failed)
            return gzip_error(j, zr);
        if (!j->gz_member_end && j->z.avail_in == 0 && j->raw_eof)
            return splade_fail(SPLADE_ERR_IO, "%s:%ld: truncated gzip data", j->path, j->line_no + 1);
    }
}

/* 1 with new bytes in dec, 0 at end of input, or a negative status. */
static int decoded_next(splade_jsonl *j)
{
    j->dec_pos = j->dec_len = 0;
    return j->gz ? gzip_next(j) : plain_next(j);
}

/* ---- lines ---- */

static int stream_failed(splade_jsonl *j, int rc)
{
    j->failed = rc;
    return rc;
}

static int append(splade_jsonl *j, const unsigned char *s, size_t n)
{
    size_t need = j->line_len + n + 1;
    if (need > j->line_cap) {
        size_t cap = j->line_cap ? j->line_cap : 256;
        while (cap < need)
            cap *= 2;
        if (cap > j->max_line + 1 && need <= j->max_line + 1)
            cap = j->max_line + 1; /* a line at the limit takes the limit, not twice it */
        char *p = realloc(j->line, cap);
        if (!p)
            return stream_failed(j, splade_fail(SPLADE_ERR_NOMEM, "%s:%ld: line of %zu bytes", j->path,
                                                j->line_no + 1, need));
        j->line = p;
        j->line_cap = cap;
    }
    memcpy(j->line + j->line_len, s, n);
    j->line_len += n;
    j->line[j->line_len] = '\0';
    return SPLADE_OK;
}

static int too_long(splade_jsonl *j)
{
    if (j->max_line % ((size_t)1 << 20) == 0)
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: line longer than the limit of %zu MiB", j->path, j->line_no,
                           j->max_line >> 20);
    return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: line longer than the limit of %zu bytes", j->path, j->line_no,
                       j->max_line);
}

/* A line that failed before its newline: count it, remember to drop its rest, report. */
static int bad_line(splade_jsonl *j, int seen_newline, int nul)
{
    j->line_no++;
    j->skip_rest = !seen_newline;
    return nul ? splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: NUL byte in line", j->path, j->line_no) : too_long(j);
}

/* 1 with the next line (no newline, NUL-terminated) in j->line, 0 at end of input, or < 0. */
static int read_line(splade_jsonl *j)
{
    int started = 0;
    j->line_len = 0;
    if (append(j, (const unsigned char *)"", 0) < 0)
        return SPLADE_ERR_NOMEM;
    for (;;) {
        if (j->dec_pos == j->dec_len) {
            int rc = decoded_next(j);
            if (rc < 0)
                return stream_failed(j, rc);
            if (rc == 0 && !started)
                return 0;
            if (rc == 0)
                break; /* a last line without a newline */
        }
        const unsigned char *s = j->dec + j->dec_pos;
        size_t avail = j->dec_len - j->dec_pos;
        const unsigned char *nl = memchr(s, '\n', avail);
        size_t take = nl ? (size_t)(nl - s) : avail;
        j->dec_pos += take + (nl != NULL);
        started = 1;
        if (memchr(s, '\0', take) || take > j->max_line - j->line_len)
            return bad_line(j, nl != NULL, memchr(s, '\0', take) != NULL);
        if (append(j, s, take) < 0)
            return SPLADE_ERR_NOMEM;
        if (nl)
            break;
    }
    j->line_no++;
    return 1;
}

/* Drops the rest of a line that failed before its newline. */
static int skip_rest_of_line(splade_jsonl *j)
{
    while (j->skip_rest) {
        if (j->dec_pos == j->dec_len) {
            int rc = decoded_next(j);
            if (rc <= 0) {
                j->skip_rest = 0;
                return rc < 0 ? stream_failed(j, rc) : SPLADE_OK;
            }
        }
        const unsigned char *s = j->dec + j->dec_pos, *nl = memchr(s, '\n', j->dec_len - j->dec_pos);
        j->dec_pos = nl ? j->dec_pos + (size_t)(nl - s) + 1 : j->dec_len;
        j->skip_rest = nl == NULL;
    }
    return SPLADE_OK;
}

/* ---- opening ---- */

static int start(splade_jsonl *j, const char *name, splade_jsonl **out)
{
    j->max_line = SPLADE_JSONL_MAX_LINE;
    j->path = strdup(name);
    int rc = j->path ? detect_format(j) : splade_fail(SPLADE_ERR_NOMEM, "JSONL reader");
    if (rc < 0) {
        splade_jsonl_close(j);
        return rc;
    }
    *out = j;
    return SPLADE_OK;
}

int splade_jsonl_open(const char *path, splade_jsonl **out)
{
    if (!path || !out)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_jsonl_open: NULL argument");
    *out = NULL;
    splade_jsonl *j = calloc(1, sizeof *j);
    if (!j || !(j->inbuf = malloc(CHUNK))) {
        free(j);
        return splade_fail(SPLADE_ERR_NOMEM, "JSONL reader");
    }
    j->raw = j->inbuf;
    j->owns_fd = strcmp(path, "-") != 0;
    j->fd = j->owns_fd ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
    if (j->fd < 0) {
        int err = errno;
        splade_jsonl_close(j);
        return splade_fail(SPLADE_ERR_IO, "%s: cannot open: %s", path, strerror(err));
    }
    return start(j, path, out);
}

int splade_jsonl_open_memory(const void *data, size_t len, const char *name, splade_jsonl **out)
{
    if ((!data && len) || !name || !out)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_jsonl_open_memory: NULL argument");
    *out = NULL;
    splade_jsonl *j = calloc(1, sizeof *j);
    if (!j)
        return splade_fail(SPLADE_ERR_NOMEM, "JSONL reader");
    j->fd = -1;
    j->raw = data;
    j->raw_len = len;
    j->raw_eof = 1;
    return start(j, name, out);
}

void splade_jsonl_set_max_line(splade_jsonl *j, size_t max_line)
{
    j->max_line = max_line ? max_line : SPLADE_JSONL_MAX_LINE;
}

/* ---- records ---- */

static int holds_nul(json_t *v)
{
    if (json_is_string(v))
        return json_string_length(v) != strlen(json_string_value(v));
    size_t i;
    const char *key;
    json_t *x;
    if (json_is_array(v))
        json_array_foreach(v, i, x) if (holds_nul(x)) return 1;
    if (json_is_object(v))
        json_object_foreach(v, key, x) if (holds_nul(x)) return 1;
    return 0;
}

/* jansson refuses \u0000 naming its own flag: say which field holds it instead. */
static int nul_escape_error(const char *path, long line, const char *text, size_t n)
{
    json_t *all = json_loadb(text, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
    const char *key, *field = NULL;
    json_t *v;
    if (json_is_object(all))
        json_object_foreach(all, key, v) if (!field && holds_nul(v)) field = key;
    int rc = field ? splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: field \"%s\" holds \\u0000 (a NUL character), which is "
                                 "not supported", path, line, field)
                   : splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: \\u0000 (a NUL character) is not supported", path, line);
    json_decref(all);
    return rc;
}

int splade_jsonl_parse(const char *path, long line, const char *text, size_t n, json_t **obj)
{
    json_error_t err;
    json_t *o = json_loadb(text, n, JSON_REJECT_DUPLICATES, &err);
    *obj = NULL;
    if (!o && json_error_code(&err) == json_error_null_character)
        return nul_escape_error(path, line, text, n);
    if (!o)
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: invalid JSON: %s", path, line, err.text);
    if (!json_is_object(o)) {
        json_decref(o);
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: expected a JSON object", path, line);
    }
    *obj = o;
    return 1;
}

static int is_blank(const char *s, size_t n) { return strspn(s, " \t\r") == n; }

int splade_jsonl_next_line(splade_jsonl *j, const char **text, size_t *n)
{
    if (!j || !text || !n)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_jsonl_next_line: NULL argument");
    if (j->failed)
        return splade_fail(j->failed, "%s:%ld: reading stopped at an earlier error", j->path, j->line_no + 1);
    for (;;) {
        int rc = skip_rest_of_line(j);
        if (rc == 0)
            rc = read_line(j);
        if (rc <= 0)
            return rc;
        *text = j->line;
        *n = j->line_len;
        if (j->line_no == 1 && *n >= 3 && !memcmp(*text, "\xef\xbb\xbf", 3)) { /* a byte-order mark */
            *text += 3;
            *n -= 3;
        }
        if (!is_blank(*text, *n))
            return 1;
    }
}

int splade_jsonl_next(splade_jsonl *j, json_t **obj)
{
    if (!j || !obj)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_jsonl_next: NULL argument");
    const char *text;
    size_t n;
    int rc = splade_jsonl_next_line(j, &text, &n);
    if (rc <= 0)
        return rc;
    json_decref(j->current);
    rc = splade_jsonl_parse(j->path, j->line_no, text, n, &j->current);
    *obj = j->current;
    return rc;
}

const char *splade_jsonl_path(const splade_jsonl *j) { return j->path; }

long splade_jsonl_line(const splade_jsonl *j) { return j->line_no; }

void splade_jsonl_close(splade_jsonl *j)
{
    if (!j)
        return;
    if (j->owns_fd && j->fd >= 0)
        close(j->fd);
    if (j->gz)
        inflateEnd(&j->z);
    json_decref(j->current);
    free(j->outbuf);
    free(j->inbuf);
    free(j->line);
    free(j->path);
    free(j);
}

int splade_jsonl_id(const splade_jsonl *j, json_t *obj, const char *first, const char *second, char buf[32],
                    const char **id)
{
    return splade_jsonl_id_at(j->path, j->line_no, obj, first, second, buf, id);
}

int splade_jsonl_id_at(const char *path, long line, json_t *obj, const char *first, const char *second, char buf[32],
                       const char **id)
{
    const char *field = first;
    json_t *v = json_object_get(obj, first);
    if (!v)
        v = json_object_get(obj, field = second);
    *id = NULL;
    if (json_is_string(v)) {
        const char *why = splade_id_problem(json_string_value(v), json_string_length(v));
        if (why)
            return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: field \"%s\" %s (ids must be 1 to %d bytes of UTF-8 "
                               "without whitespace or control characters)", path, line, field, why,
                               SPLADE_ID_MAX);
        *id = json_string_value(v);
    } else if (json_is_integer(v)) {
        snprintf(buf, 32, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        *id = buf;
    } else {
        return splade_fail(SPLADE_ERR_FORMAT, "%s:%ld: missing or non-string/integer field \"%s\" or \"%s\"", path,
                           line, first, second);
    }
    return SPLADE_OK;
}
