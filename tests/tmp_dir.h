/* Scratch folders for tests: made under /tmp with mkdtemp and removed with everything they hold
 * (nftw, depth first, symbolic links removed, never followed). One copy instead of each test's own
 * flat or recursive remover. Header-only, test use only; needs cmocka included first. */
#ifndef SPLADE_TEST_TMP_DIR_H
#define SPLADE_TEST_TMP_DIR_H

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TD_UNUSED __attribute__((unused))

/* A new empty folder /tmp/<prefix>XXXXXX (malloc'd); the test fails if it cannot be made. */
static TD_UNUSED char *td_make(const char *prefix)
{
    char *dir = malloc(strlen(prefix) + 12);
    assert_non_null(dir);
    sprintf(dir, "/tmp/%sXXXXXX", prefix);
    if (!mkdtemp(dir))
        fail_msg("mkdtemp %s: %s", dir, strerror(errno));
    return dir;
}

static TD_UNUSED int td_remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* Removes dir and everything under it: 0, or -1 with errno (a folder that does not exist is -1). */
static TD_UNUSED int td_remove(const char *dir)
{
    return nftw(dir, td_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* td_remove, failing the test when something is left, then free(dir): for td_make's folders. */
static TD_UNUSED void td_free(char *dir)
{
    if (td_remove(dir))
        fail_msg("removing %s: %s", dir, strerror(errno));
    free(dir);
}

/* One folder for a whole test program, for tests that build paths under it (test_models.c):
 * `return td_run_group(tests);` in main runs the cmocka group with td_group_dir made first and
 * removed after. A folder that cannot be made fails the group; one that cannot be removed makes the
 * exit status non-zero too (cmocka's group teardown would only print it). */
static TD_UNUSED char td_group_dir[64];

static TD_UNUSED int td_group_setup(void **state)
{
    (void)state;
    snprintf(td_group_dir, sizeof td_group_dir, "/tmp/splade-%s-XXXXXX", program_invocation_short_name);
    return mkdtemp(td_group_dir) ? 0 : -1;
}

static TD_UNUSED int td_group_end(int rc)
{
    if (td_remove(td_group_dir) == 0)
        return rc;
    fprintf(stderr, "removing %s: %s\n", td_group_dir, strerror(errno));
    return rc ? rc : 1;
}

#define td_run_group(tests) td_group_end(cmocka_run_group_tests(tests, td_group_setup, NULL))

#endif
