/* Deletion files (docs/FORMAT.md, "Segments and the manifest"): the deleted internal ids of one
 * segment as a bitset, with a CRC32C, written once under a new name and never modified (a later
 * delete writes a new file that the next manifest names). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fail.h"
#include "index/format.h"
#include "index/manifest.h"
#include "splade.h"

#define DEL_HEADER 24 /* magic, version, n_docs, n_deleted, reserved */

static size_t words_of(uint32_t n_docs)
{
    return ((size_t)n_docs + 63) / 64;
}

static uint32_t count_bits(const uint64_t *bits, size_t words)
{
    uint64_t n = 0;
    for (size_t i = 0; i < words; i++)
        n += (uint64_t)__builtin_popcountll(bits[i]);
    return (uint32_t)n;
}

static int read_all(const char *path, uint8_t **data, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return splade_fail(errno == ENOENT ? SPLADE_ERR_NOT_FOUND : SPLADE_ERR_IO, "%s: cannot open: %s", path,
                           strerror(errno));
    struct stat st;
    int rc = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < (1ll << 32)
                 ? SPLADE_OK
                 : splade_fail(SPLADE_ERR_FORMAT, "%s is not a deletion file", path);
    *len = rc == 0 ? (size_t)st.st_size : 0;
    *data = rc == 0 ? malloc(*len + 1) : NULL;
    if (rc == 0 && !*data)
        rc = splade_fail(SPLADE_ERR_NOMEM, "%s", path);
    size_t got = 0;
    while (rc == 0 && got < *len) {
        ssize_t r = read(fd, *data + got, *len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            rc = splade_fail(SPLADE_ERR_IO, "%s: read failed: %s", path, r ? strerror(errno) : "end of file");
        else
            got += (size_t)r;
    }
    close(fd);
    if (rc < 0) {
        free(*data);
        *data = NULL;
    }
    return rc;
}

int splade_deletions_read(const char *dir, const char *name, uint32_t n_docs, uint32_t n_deleted, uint64_t **bits)
{
    *bits = NULL;
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "index path too long: %s", dir);
    uint8_t *d = NULL;
    size_t len = 0, words = words_of(n_docs);
    int rc = read_all(path, &d, &len);
    if (rc < 0)
        return rc;
    uint32_t hdr[4], crc;
    if (len != DEL_HEADER + words * 8 + 4 || memcmp(d, SPLADE_DEL_MAGIC, 8) != 0) {
        free(d);
        return splade_fail(SPLADE_ERR_FORMAT, "%s: not a deletion file of a %u-document segment (%zu bytes)", path,
                           n_docs, len);
    }
    memcpy(hdr, d + 8, sizeof hdr);
    memcpy(&crc, d + len - 4, 4);
    if (splade_crc32c(0, d, len - 4) != crc) {
        free(d);
        return splade_fail(SPLADE_ERR_CHECKSUM, "%s: checksum mismatch (corrupted deletion file)", path);
    }
    *bits = malloc(words * 8 + 8);
    if (!*bits) {
        free(d);
        return splade_fail(SPLADE_ERR_NOMEM, "%s", path);
    }
    memcpy(*bits, d + DEL_HEADER, words * 8);
    free(d);
    int tail_clear = n_docs % 64 == 0 || !((*bits)[words - 1] >> (n_docs % 64));
    if (hdr[0] != 1 || hdr[1] != n_docs || hdr[2] != n_deleted || !tail_clear || count_bits(*bits, words) != n_deleted) {
        free(*bits);
        *bits = NULL;
        return splade_fail(SPLADE_ERR_FORMAT, "%s: inconsistent deletion file (version %u, %u documents, %u deleted; "
                           "the manifest says %u and %u)", path, hdr[0], hdr[1], hdr[2], n_docs, n_deleted);
    }
    return SPLADE_OK;
}

int splade_deletions_write(const char *dir, const char *name, uint32_t n_docs, const uint64_t *bits,
                           uint32_t *n_deleted)
{
    size_t words = words_of(n_docs), len = DEL_HEADER + words * 8 + 4;
    uint8_t *d = calloc(1, len);
    if (!d)
        return splade_fail(SPLADE_ERR_NOMEM, "%s/%s", dir, name);
    *n_deleted = count_bits(bits, words);
    uint32_t hdr[4] = {1, n_docs, *n_deleted, 0};
    memcpy(d, SPLADE_DEL_MAGIC, 8);
    memcpy(d + 8, hdr, sizeof hdr);
    if (words)
        memcpy(d + DEL_HEADER, bits, words * 8);
    uint32_t crc = splade_crc32c(0, d, len - 4);
    memcpy(d + len - 4, &crc, 4);
    int rc = splade_write_small_file(dir, ".del.tmp-", name, d, len);
    free(d);
    if (rc < 0)
        return rc;
    uint64_t *check; /* read back as a reader will */
    rc = splade_deletions_read(dir, name, n_docs, *n_deleted, &check);
    free(check);
    return rc;
}
