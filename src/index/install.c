/* splade_builder_write: invert, write to a temporary file beside the index, verify it by
 * re-opening it like a query would, and rename it into place — so a crash at any point
 * (SIGKILL included) leaves the previous index untouched (docs/FORMAT.md). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "index/builder_internal.h"
#include "index/reader_internal.h"
#include "splade.h"

#define TMP_PREFIX "." SPLADE_INDEX_FILE ".tmp-"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* mkdir -p */
static int make_dirs(const char *dir)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "index path too long: %s", dir);
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return splade_fail(SPLADE_ERR_IO, "%s: cannot create directory: %s", path, strerror(errno));
        *p = c;
        if (!c)
            break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return splade_fail(SPLADE_ERR_IO, "%s: not a directory", dir);
    return SPLADE_OK;
}

/* Removes temporary files left by builds that were killed (their pid no longer exists). */
static void remove_stale(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) != 0)
            continue;
        long pid = strtol(e->d_name + strlen(TMP_PREFIX), NULL, 10);
        if (pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    }
    closedir(d);
}

static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return splade_fail(SPLADE_ERR_IO, "%s: cannot open directory: %s", dir, strerror(errno));
    int rc = fsync(fd) == 0 ? SPLADE_OK : splade_fail(SPLADE_ERR_IO, "%s: fsync: %s", dir, strerror(errno));
    close(fd);
    return rc;
}

/* The new file, re-opened like a query opens it: every check of splade_index_open (header, size,
 * each section's CRC32C, every offset table, every posting block and range table), on `threads`
 * threads. */
static int verify(const char *path, int threads)
{
    splade_index *ix;
    int rc = splade_index_open_threads(path, threads, &ix);
    if (rc < 0)
        return rc;
    splade_index_close(ix);
    return SPLADE_OK;
}

typedef struct {
    int fd, err;
} sync_job;

static void *fsync_file(void *arg)
{
    sync_job *j = arg;
    j->err = fsync(j->fd) == 0 ? 0 : errno;
    return NULL;
}

/* Write, then fsync and verify at the same time (the disk works while the CPUs check the pages
 * just written; the check reads the page cache, which is what the fsync writes out), then rename:
 * only a file both durable and verified takes the index's name. */
static int write_and_install(const splade_index_builder *b, const splade_inverted *inv, const char *dir,
                             splade_build_stats *st)
{
    char tmp[4096], final[4096];
    if (snprintf(tmp, sizeof tmp, "%s/%s%ld", dir, TMP_PREFIX, (long)getpid()) >= (int)sizeof tmp ||
        snprintf(final, sizeof final, "%s/%s", dir, SPLADE_INDEX_FILE) >= (int)sizeof final)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "index path too long: %s", dir);
    unlink(tmp); /* a leftover of an earlier process that had our pid */
    int threads = splade_build_threads(b->threads, inv->n_postings), fd = -1;
    int rc = splade_write_file(b, inv, tmp, threads, &st->file_bytes, &fd);
    double t0 = now_s();
    if (rc == 0) {
        sync_job sj = {fd, 0};
        pthread_t tid;
        int async = pthread_create(&tid, NULL, fsync_file, &sj) == 0;
        rc = verify(tmp, threads);
        if (async)
            pthread_join(tid, NULL);
        else
            fsync_file(&sj);
        if (sj.err && rc == 0)
            rc = splade_fail(SPLADE_ERR_IO, "%s: fsync failed: %s", tmp, strerror(sj.err));
    }
    if (fd >= 0 && close(fd) != 0 && rc == 0)
        rc = splade_fail(SPLADE_ERR_IO, "%s: close failed: %s", tmp, strerror(errno));
    st->verify_s = now_s() - t0;
    if (rc == 0 && rename(tmp, final) != 0)
        rc = splade_fail(SPLADE_ERR_IO, "%s: cannot rename to %s: %s", tmp, final, strerror(errno));
    if (rc < 0) {
        unlink(tmp);
        return rc;
    }
    return sync_dir(dir);
}

int splade_builder_write(splade_index_builder *b, const char *dir, splade_build_stats *stats)
{
    splade_build_stats local;
    splade_build_stats *st = stats ? stats : &local;
    memset(st, 0, sizeof *st);
    if (!b || !dir)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_builder_write: NULL argument");
    int rc = make_dirs(dir);
    if (rc < 0)
        return rc;
    remove_stale(dir);
    double t0 = now_s();
    splade_inverted inv;
    if ((rc = splade_invert(b, &inv)) < 0)
        return rc;
    double t1 = now_s();
    rc = write_and_install(b, &inv, dir, st);
    st->invert_s = t1 - t0;
    st->reorder_s = inv.reorder_s;
    st->scatter_s = inv.scatter_s;
    st->encode_s = inv.encode_s;
    st->write_s = now_s() - t1;
    st->n_docs = b->ids.n;
    st->n_postings = inv.n_postings;
    st->n_terms_used = inv.n_terms_used;
    st->n_truncated = b->n_truncated;
    splade_inverted_free(&inv);
    return rc;
}
