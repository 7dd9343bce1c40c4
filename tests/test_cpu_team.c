/* src/common/cpu_team.c: every member runs once per team, barriers separate steps, the pool
 * grows and shrinks across calls (a worker started late must not run an earlier job), a busy
 * pool falls back to fresh threads, and a forked child gets a working pool of its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cpu_team.h"

typedef struct {
    atomic_int ran, phase_errors;
    atomic_int step[3];
} counts;

/* Three steps: no member may see a later step's count before the barrier releases it. */
static int three_steps(void *ctx, int tid, splade_team *t)
{
    counts *c = ctx;
    const int n = splade_team_size(t);
    atomic_fetch_add(&c->ran, 1 << (tid % 16));
    for (int s = 0; s < 3; s++) {
        atomic_fetch_add(&c->step[s], 1);
        splade_team_barrier(t);
        if (atomic_load(&c->step[s]) != n)
            atomic_fetch_add(&c->phase_errors, 1);
        splade_team_barrier(t);
    }
    return 0;
}

static void run_n(int n)
{
    counts c = {0};
    assert_int_equal(splade_team_run(n, three_steps, &c), 0);
    assert_int_equal(atomic_load(&c.phase_errors), 0);
    int want = 0;
    for (int t = 0; t < n; t++)
        want += 1 << (t % 16);
    assert_int_equal(atomic_load(&c.ran), want);
}

static void test_sizes(void **state)
{
    (void)state;
    for (int it = 0; it < 300; it++)
        run_n(1 + (it * 7) % 5); /* 1..5 members, growing and shrinking */
}

static int fails_on_one(void *ctx, int tid, splade_team *t)
{
    (void)ctx, (void)t;
    return tid == 1 ? 7 : 0;
}

static void test_status(void **state)
{
    (void)state;
    assert_int_equal(splade_team_run(2, fails_on_one, NULL), 7);
}

static void *outer(void *arg)
{
    (void)arg;
    for (int i = 0; i < 50; i++)
        run_n(3);
    return NULL;
}

static void test_two_callers(void **state)
{
    (void)state;
    pthread_t a, b; /* one of them takes the pool, the other fresh threads */
    pthread_create(&a, NULL, outer, NULL);
    pthread_create(&b, NULL, outer, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
}

static void test_fork(void **state)
{
    (void)state;
#ifdef __SANITIZE_THREAD__
    printf("  ThreadSanitizer cannot start threads in a child forked after threads (its die_after_fork)\n");
    skip();
#endif
    run_n(3); /* the parent's pool exists */
    pid_t p = fork();
    if (p == 0) {
        counts c = {0};
        int ok = splade_team_run(3, three_steps, &c) == 0 && atomic_load(&c.phase_errors) == 0 &&
                 atomic_load(&c.ran) == 7;
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    assert_int_equal(waitpid(p, &st, 0), p);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_two_callers),
        cmocka_unit_test(test_fork),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
