/* Regular-file checks shared by the model loaders (config.json, tokenizer_config.json,
 * vocab.txt, model.safetensors): see model_files.h. */
#include "common/fail.h"
#include "encoder/model_files.h"
#include "splade.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int splade_open_regular(const char *path, size_t max_bytes, int *fd, size_t *size)
{
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever. */
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f < 0)
        return splade_fail(errno == ENOENT ? SPLADE_ERR_NOT_FOUND : SPLADE_ERR_IO, "%s: cannot open: %s", path,
                           strerror(errno));
    struct stat st;
    int rc = SPLADE_OK;
    if (fstat(f, &st) != 0)
        rc = splade_fail(SPLADE_ERR_IO, "%s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = splade_fail(SPLADE_ERR_FORMAT, "%s: not a regular file", path);
    else if ((unsigned long long)st.st_size > max_bytes)
        rc = splade_fail(SPLADE_ERR_FORMAT, "%s: %lld bytes, over the limit of %zu for this file", path,
                         (long long)st.st_size, max_bytes);
    else if (fcntl(f, F_SETFL, O_RDONLY) != 0) /* back to blocking reads */
        rc = splade_fail(SPLADE_ERR_IO, "%s: %s", path, strerror(errno));
    if (rc) {
        close(f);
        return rc;
    }
    *fd = f;
    *size = (size_t)st.st_size;
    return SPLADE_OK;
}

int splade_read_regular(const char *path, size_t max_bytes, char **data, size_t *size)
{
    int fd;
    size_t n;
    int rc = splade_open_regular(path, max_bytes, &fd, &n);
    if (rc)
        return rc;
    char *buf = malloc(n + 1);
    size_t got = 0;
    while (buf && got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break; /* the file shrank under us, or an I/O error: both are reported below */
        got += (size_t)r;
    }
    close(fd);
    if (!buf)
        return splade_fail(SPLADE_ERR_NOMEM, "%s: %zu bytes", path, n);
    if (got != n) {
        free(buf);
        return splade_fail(SPLADE_ERR_IO, "%s: read %zu of %zu bytes", path, got, n);
    }
    buf[n] = '\0';
    *data = buf;
    *size = n;
    return SPLADE_OK;
}

int splade_json_load(const char *path, size_t max_bytes, json_t **out)
{
    char *text;
    size_t n;
    int rc = splade_read_regular(path, max_bytes, &text, &n);
    if (rc)
        return rc;
    json_error_t err;
    *out = json_loadb(text, n, JSON_REJECT_DUPLICATES, &err);
    free(text);
    return *out ? SPLADE_OK : splade_fail(SPLADE_ERR_FORMAT, "%s:%d: malformed JSON: %s", path, err.line, err.text);
}

int splade_json_load_object(const char *path, json_t **out)
{
    json_t *root;
    int rc = splade_json_load(path, SPLADE_MAX_JSON_BYTES, &root);
    if (rc)
        return rc;
    if (!json_is_object(root)) {
        json_decref(root);
        return splade_fail(SPLADE_ERR_FORMAT, "%s: not a JSON object", path);
    }
    *out = root;
    return SPLADE_OK;
}

