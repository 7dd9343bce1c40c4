/* SPMD thread team with a sense-reversing barrier (C11 atomics). */
#include "encoder/cpu_team.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

enum { MAX_TEAM = 64, SPINS = 4000 };

struct splade_team {
    int n;
    atomic_int arrived;
    atomic_int sense;
    atomic_int go;
};

typedef struct {
    splade_team *team;
    splade_team_fn fn;
    void *ctx;
    int tid, rc;
} member;

int splade_team_size(const splade_team *t) { return t->n; }

void splade_team_barrier(splade_team *t)
{
    if (t->n == 1)
        return;
    int s = atomic_load_explicit(&t->sense, memory_order_relaxed);
    if (atomic_fetch_add_explicit(&t->arrived, 1, memory_order_acq_rel) == t->n - 1) {
        atomic_store_explicit(&t->arrived, 0, memory_order_relaxed);
        atomic_store_explicit(&t->sense, !s, memory_order_release);
        return;
    }
    for (int i = 0; atomic_load_explicit(&t->sense, memory_order_acquire) == s; i++)
        if (i >= SPINS)
            sched_yield();
#if defined(__x86_64__)
        else
            __builtin_ia32_pause();
#endif
}

void splade_team_split(int tid, int nthreads, int n, int align, int *lo, int *hi)
{
    int units = (n + align - 1) / align;
    int a = (int)((long)units * tid / nthreads), b = (int)((long)units * (tid + 1) / nthreads);
    *lo = a * align < n ? a * align : n;
    *hi = b * align < n ? b * align : n;
}

static void *member_main(void *arg)
{
    member *m = arg;
    /* Wait for the go: team.n is final only once every pthread_create has been tried. */
    while (!atomic_load_explicit(&m->team->go, memory_order_acquire))
        sched_yield();
    m->rc = m->fn(m->ctx, m->tid, m->team);
    return NULL;
}

int splade_team_run(int n, splade_team_fn fn, void *ctx)
{
    n = n < 1 ? 1 : n > MAX_TEAM ? MAX_TEAM : n;
    splade_team team = {.n = 1};
    atomic_init(&team.arrived, 0);
    atomic_init(&team.sense, 0);
    atomic_init(&team.go, 0);
    member ms[MAX_TEAM];
    pthread_t tids[MAX_TEAM];
    for (int t = 0; t < n; t++)
        ms[t] = (member){&team, fn, ctx, t, 0};
    /* A thread that cannot start just makes the team smaller: work is split by team size. */
    while (team.n < n && pthread_create(&tids[team.n], NULL, member_main, &ms[team.n]) == 0)
        team.n++;
    atomic_store_explicit(&team.go, 1, memory_order_release);
    int rc = fn(ctx, 0, &team);
    for (int t = 1; t < team.n; t++) {
        pthread_join(tids[t], NULL);
        rc = rc ? rc : ms[t].rc;
    }
    return rc;
}
