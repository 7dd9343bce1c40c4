/* splade_builder_write: invert, write to a temporary file beside the index, verify it by
 * re-opening it like a query would, and rename it into place — so a crash at any point
 * (SIGKILL included) leaves the previous index untouched (docs/FORMAT.md). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/fail.h"
#include "index/builder_internal.h"
#include "index/manifest.h"
#include "index/reader_internal.h"
#include "index/segments_internal.h"
#include "splade.h"
#include "splade/build.h"

#define TMP_PREFIX SPLADE_TMP_PREFIX
#define LOCK_FILE ".lock"
/* temporaries of every writer (segments.c, manifest.c, deletions.c write the other two) */
static const char *const tmp_prefixes[] = {TMP_PREFIX, "." SPLADE_MANIFEST_FILE ".tmp-", ".del.tmp-"};

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

/* ---- the folder's build lock ---- */

/* The holder recorded in the lock file, for a second writer's message. The holder writes it just
 * after taking the lock, so a writer that lost the race by microseconds may find the file still
 * empty: it waits up to ~200 ms for the line before saying it was not recorded. */
static void read_holder(int fd, char *buf, size_t cap)
{
    for (int tries = 0; tries < 40; tries++) {
        ssize_t n = pread(fd, buf, cap - 1, 0);
        buf[n > 0 ? n : 0] = '\0';
        if (strchr(buf, '\n')) {
            buf[strcspn(buf, "\n")] = '\0';
            return;
        }
        nanosleep(&(struct timespec){.tv_nsec = 5000000}, NULL);
    }
    snprintf(buf, cap, "holder not recorded");
}

static void write_holder(int fd)
{
    char host[256] = "?", when[64] = "?", line[512];
    gethostname(host, sizeof host - 1);
    time_t t = time(NULL);
    struct tm tm;
    if (gmtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    int n = snprintf(line, sizeof line, "pid %ld on host %s, started %s\n", (long)getpid(), host, when);
    /* write, then cut what a killed holder's longer line left: the file is never seen empty */
    int recorded = pwrite(fd, line, (size_t)n, 0) == n && ftruncate(fd, n) == 0;
    (void)recorded; /* if not, only a second writer's message lacks the holder */
}

/* The lock file is removed on release (so a folder holds nothing but index.spx between builds),
 * hence the check after flock that the name still leads to the file we locked: else a writer that
 * opened the file before its holder removed it, and one that created a new file since, would both
 * hold "the" lock. */
static int same_file(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static int lock_dir(const char *dir, splade_dir_lock *l)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return splade_fail(SPLADE_ERR_IO, "%s: %s", dir, strerror(errno));
    if (snprintf(l->path, sizeof l->path, "%s/%s", dir, LOCK_FILE) >= (int)sizeof l->path)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "index path too long: %s", dir);
    for (;;) {
        int fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
            return splade_fail(SPLADE_ERR_IO, "%s: cannot create the build lock: %s", l->path, strerror(errno));
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int err = errno;
            char holder[512];
            read_holder(fd, holder, sizeof holder);
            close(fd);
            if (err == EWOULDBLOCK)
                return splade_fail(SPLADE_ERR_IO, "%s: another writer (build, add, update, delete or merge) is "
                                   "writing this index (%s; lock file %s): try again when it has finished", dir,
                                   holder, l->path);
            return splade_fail(SPLADE_ERR_IO, "%s: flock: %s", l->path, strerror(err));
        }
        if (same_file(fd, l->path)) {
            write_holder(fd);
            l->held = 1;
            l->made_dir = 0;
            l->fd = fd;
            l->dev = st.st_dev;
            l->ino = st.st_ino;
            return SPLADE_OK;
        }
        close(fd); /* removed by its previous holder in between: lock the new one */
    }
}

void splade_dir_lock_release(splade_dir_lock *l)
{
    if (!l->held)
        return;
    unlink(l->path); /* while still locked: see same_file */
    close(l->fd);
    l->held = 0;
    if (l->made_dir) { /* a failed first build leaves no empty folder behind (rmdir: only if empty) */
        l->path[strlen(l->path) - strlen("/" LOCK_FILE)] = '\0';
        rmdir(l->path);
    }
}

/* Whether l locks the folder dir (the same folder under any spelling of its path). */
static int locks_dir(const splade_dir_lock *l, const char *dir)
{
    struct stat st;
    return l->held && stat(dir, &st) == 0 && st.st_dev == l->dev && st.st_ino == l->ino;
}

int splade_dir_lock_take(const char *dir, splade_dir_lock *l)
{
    memset(l, 0, sizeof *l);
    return lock_dir(dir, l);
}

int splade_dir_lock_holds(const splade_dir_lock *l, const char *dir)
{
    return locks_dir(l, dir);
}

int splade_builder_lock(splade_index_builder *b, const char *dir)
{
    if (!b || !dir)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_builder_lock: NULL argument");
    if (locks_dir(&b->lock, dir))
        return SPLADE_OK;
    splade_dir_lock_release(&b->lock);
    struct stat st;
    int made = stat(dir, &st) != 0 && errno == ENOENT;
    int rc = make_dirs(dir);
    if (rc == 0)
        rc = lock_dir(dir, &b->lock);
    if (rc < 0 && made)
        rmdir(dir);
    b->lock.made_dir = rc == 0 && made;
    return rc;
}

void splade_builder_allow_empty(splade_index_builder *b, int allow)
{
    b->allow_empty = allow != 0;
}

/* Removes temporary files left by killed builds. Called with the folder's lock held, so no live
 * writer has one: every writer holds the lock from before it creates its temporary file until
 * after it renamed or removed it. */
void splade_remove_stale(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        int stale = 0;
        for (size_t i = 0; i < sizeof tmp_prefixes / sizeof *tmp_prefixes; i++)
            stale |= strncmp(e->d_name, tmp_prefixes[i], strlen(tmp_prefixes[i])) == 0;
        if (!stale)
            continue;
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
            unlink(path);
    }
    closedir(d);
}

/* A build that ended up with no postings (an empty corpus, every line skipped, every vector
 * empty) must not silently replace an index that has some: refused unless allowed. */
static int refuse_empty(const splade_index_builder *b, const char *dir)
{
    if (b->allow_empty || (b->ids.n > 0 && b->fn > 0))
        return SPLADE_OK;
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, SPLADE_MANIFEST_FILE); /* a segmented folder: name it */
    if (lstat(path, &sb) == 0 || snprintf(path, sizeof path, "%s/%s", dir, SPLADE_INDEX_FILE) >= (int)sizeof path)
        snprintf(path, sizeof path, "%s", dir);
    splade_index *old;
    if (splade_index_open(dir, &old) < 0)
        return SPLADE_OK; /* nothing to lose: no index, or one that does not open */
    splade_index_info in = *splade_index_get_info(old);
    splade_index_close(old);
    if (in.n_postings == 0)
        return SPLADE_OK;
    return splade_fail(SPLADE_ERR_INVALID_ARG,
                       "%s holds %u documents (%llu postings) and the new build has %u documents (%llu postings): "
                       "not replacing it with an empty index (build --allow-empty to do so)",
                       path, in.n_docs, (unsigned long long)in.n_postings, b->ids.n, (unsigned long long)b->fn);
}

/* ---- the temporary file ---- */

/* Creates DIR/.index.spx.tmp-<pid>-<random> exclusively: unique even between processes of the same
 * pid in other PID namespaces (containers sharing the folder). The pid part is for people and tests. */
int splade_create_temp(const char *dir, const char *prefix, char *tmp, size_t cap, int *fd)
{
    for (int attempt = 0; attempt < 100; attempt++) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            r = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec ^ (uint64_t)attempt << 40;
        }
        if (snprintf(tmp, cap, "%s/%s%ld-%012llx", dir, prefix, (long)getpid(),
                     (unsigned long long)(r & 0xFFFFFFFFFFFFull)) >= (int)cap)
            return splade_fail(SPLADE_ERR_INVALID_ARG, "index path too long: %s", dir);
        *fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (*fd >= 0)
            return SPLADE_OK;
        if (errno != EEXIST)
            return splade_fail(SPLADE_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    }
    return splade_fail(SPLADE_ERR_IO, "%s: cannot create a temporary file with a unique name", dir);
}

int splade_sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return splade_fail(SPLADE_ERR_IO, "%s: cannot open directory: %s", dir, strerror(errno));
    int rc = fsync(fd) == 0 ? SPLADE_OK : splade_fail(SPLADE_ERR_IO, "%s: fsync: %s", dir, strerror(errno));
    close(fd);
    return rc;
}

/* The new file, re-opened like a query opens it but through our own descriptor: every check of
 * splade_index_open (header, size, each section's CRC32C, every offset table, every posting block
 * and range table), on `threads` threads. */
static int verify(int fd, const char *path, int threads, int lean)
{
    splade_index *ix;
    int rc = lean ? splade_index_open_fd_lean(fd, path, threads, &ix) : splade_index_open_fd(fd, path, threads, &ix);
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

/* fsync and verify at the same time (the disk works while the CPUs check the pages just written;
 * the check reads the page cache, which is what the fsync writes out). */
static int sync_and_verify(int fd, const char *tmp, int threads, int lean)
{
    sync_job sj = {fd, 0};
    pthread_t tid;
    int async = pthread_create(&tid, NULL, fsync_file, &sj) == 0;
    int rc = verify(fd, tmp, threads, lean);
    if (async)
        pthread_join(tid, NULL);
    else
        fsync_file(&sj);
    if (sj.err && rc == 0)
        rc = splade_fail(SPLADE_ERR_IO, "%s: fsync failed: %s", tmp, strerror(sj.err));
    return rc;
}

/* The caller's flag (splade_builder_set_cancel), read between stages: before a stage starts, and before
 * the rename, the last moment at which the previous index can still be kept. */
static int cancelled(const splade_index_builder *b, const char *dir, const char *stage)
{
    if (!b->cancel || !*b->cancel)
        return SPLADE_OK;
    return splade_fail(SPLADE_ERR_CANCELLED, "%s: build cancelled by the caller %s; the previous index is "
                       "untouched", dir, stage);
}

/* fsync and verify the complete temporary file fd (at tmp), then rename it onto DIR/name and fsync
 * DIR: only a file both durable and verified takes the name, and only the file we wrote (the name
 * is checked to still lead to our descriptor's file). On failure tmp is removed. fd is closed. */
int splade_install_temp(int fd, const char *tmp, const char *dir, const char *name, int threads, int lean,
                        const volatile int *cancel, double *verify_s)
{
    char final[4096];
    int rc = SPLADE_OK;
    if (snprintf(final, sizeof final, "%s/%s", dir, name) >= (int)sizeof final)
        rc = splade_fail(SPLADE_ERR_INVALID_ARG, "index path too long: %s", dir);
    double t0 = now_s();
    if (rc == 0)
        rc = sync_and_verify(fd, tmp, threads, lean);
    *verify_s = now_s() - t0;
    if (rc == 0 && cancel && *cancel)
        rc = splade_fail(SPLADE_ERR_CANCELLED, "%s: build cancelled by the caller after verifying the file; "
                         "the previous index is untouched", dir);
    if (rc == 0 && !same_file(fd, tmp))
        rc = splade_fail(SPLADE_ERR_IO, "%s: the temporary file was replaced or removed during the build", tmp);
    if (rc == 0 && rename(tmp, final) != 0)
        rc = splade_fail(SPLADE_ERR_IO, "%s: cannot rename to %s: %s", tmp, final, strerror(errno));
    if (rc < 0 && same_file(fd, tmp))
        unlink(tmp);
    if (close(fd) != 0 && rc == 0)
        rc = splade_fail(SPLADE_ERR_IO, "%s: close failed: %s", final, strerror(errno));
    return rc < 0 ? rc : splade_sync_dir(dir);
}

/* Write, fsync and verify, then rename (splade_install_temp). */
static int write_and_install(const splade_index_builder *b, const splade_inverted *inv, const char *dir,
                             const char *name, splade_build_stats *st)
{
    char tmp[4096];
    int fd = -1;
    int rc = splade_create_temp(dir, TMP_PREFIX, tmp, sizeof tmp, &fd);
    if (rc < 0)
        return rc;
    int threads = splade_build_threads(b->threads, inv->n_postings);
    rc = splade_write_file(b, inv, fd, tmp, threads, &st->file_bytes);
    if (rc == 0)
        rc = cancelled(b, dir, "after writing the file");
    if (rc < 0) {
        if (same_file(fd, tmp))
            unlink(tmp);
        close(fd);
        return rc;
    }
    return splade_install_temp(fd, tmp, dir, name, threads, 0, b->cancel, &st->verify_s);
}

/* Inverts and installs as DIR/name, with the folder locked. */
static int invert_and_write(splade_index_builder *b, const char *dir, const char *name, splade_build_stats *st)
{
    int rc = cancelled(b, dir, "before the inversion");
    if (rc < 0)
        return rc;
    double t0 = now_s();
    splade_inverted inv;
    if ((rc = splade_invert(b, &inv)) < 0)
        return rc;
    double t1 = now_s();
    b->n_clipped = inv.n_clipped;
    b->written_scale = inv.doc_scale;
    rc = cancelled(b, dir, "after the inversion");
    if (rc == 0)
        rc = write_and_install(b, &inv, dir, name, st);
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

int splade_builder_write_named(splade_index_builder *b, const char *dir, const char *name, splade_build_stats *st)
{
    memset(st, 0, sizeof *st);
    return invert_and_write(b, dir, name, st);
}

/* A folder with a MANIFEST gets a new generation holding this build alone (segments.c); one
 * without gets DIR/index.spx, as before segments existed. */
static int invert_and_install(splade_index_builder *b, const char *dir, splade_build_stats *st)
{
    if (b->n_spills) /* a bounded build that reached its budget: a generation of its segments (spill.c) */
        return b->spilled_postings || b->fn ? splade_spill_install_build(b, dir, st)
                                            : splade_fail(SPLADE_ERR_INVALID_ARG, "%s: spilled segments without postings", dir);
    int rc = refuse_empty(b, dir);
    if (rc < 0)
        return rc;
    splade_remove_stale(dir);
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, SPLADE_MANIFEST_FILE);
    if (lstat(path, &sb) == 0)
        return splade_segments_replace_all(b, dir, st);
    return invert_and_write(b, dir, SPLADE_INDEX_FILE, st);
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
    if (locks_dir(&b->lock, dir)) {
        rc = invert_and_install(b, dir, st);
        b->lock.made_dir &= rc < 0;
        return rc;
    }
    splade_dir_lock lock = {0};
    if ((rc = lock_dir(dir, &lock)) < 0)
        return rc;
    rc = invert_and_install(b, dir, st);
    splade_dir_lock_release(&lock);
    return rc;
}
