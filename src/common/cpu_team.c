/* SPMD thread team: a persistent pool of parked workers, a sense-reversing barrier (C11 atomics).
 * Starting two threads per query (layers, then head) cost ~50 us of a 2 ms splade-tiny query;
 * a parked worker wakes in a few microseconds, and one still spinning from the previous team
 * (the layers, just before the head) at once. */
#include "common/cpu_team.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

/* A pause is ~26 ns on Zen 4: a barrier spins ~100 us before yielding; an idle worker ~50 us
 * (long enough to catch the head right after the layers) before it parks. */
enum { MAX_TEAM = 64, BARRIER_SPINS = 4000, IDLE_SPINS = 2000 };

struct splade_team {
    int n;
    atomic_int arrived;
    atomic_int sense;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
}

int splade_team_size(const splade_team *t) { return t->n; }

int splade_cpus_available(void)
{
    cpu_set_t set;
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    return n > 1 ? n : 1;
}

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
        if (i >= BARRIER_SPINS)
            sched_yield();
        else
            cpu_relax();
}

void splade_team_split(int tid, int nthreads, int n, int align, int *lo, int *hi)
{
    int units = (n + align - 1) / align;
    int a = (int)((long)units * tid / nthreads), b = (int)((long)units * (tid + 1) / nthreads);
    *lo = a * align < n ? a * align : n;
    *hi = b * align < n ? b * align : n;
}

static void team_init(splade_team *t, int n)
{
    t->n = n;
    atomic_init(&t->arrived, 0);
    atomic_init(&t->sense, 0);
}

/* ---- The pool: workers 1..nworkers wait for a new generation, run tid < team->n, report. ---- */

static struct {
    pthread_mutex_t busy; /* held by the team using the pool */
    pthread_mutex_t mu;   /* guards the sleep/wake of parked workers */
    pthread_cond_t cv;
    int nworkers;
    atomic_uint gen;
    atomic_int pending; /* workers that have not finished the current generation */
    splade_team_fn fn;
    void *ctx;
    splade_team *team;
    int rc[MAX_TEAM];
    unsigned born[MAX_TEAM]; /* the generation current when worker tid was started */
} pool = {.busy = PTHREAD_MUTEX_INITIALIZER, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static unsigned wait_generation(unsigned seen)
{
    unsigned g;
    for (int i = 0; (g = atomic_load_explicit(&pool.gen, memory_order_acquire)) == seen; i++) {
        if (i < IDLE_SPINS) {
            cpu_relax();
            continue;
        }
        pthread_mutex_lock(&pool.mu);
        while (atomic_load_explicit(&pool.gen, memory_order_acquire) == seen)
            pthread_cond_wait(&pool.cv, &pool.mu);
        pthread_mutex_unlock(&pool.mu);
    }
    return g;
}

static void *worker_main(void *arg)
{
    const int tid = (int)(long)arg;
    unsigned seen = pool.born[tid]; /* jobs before this worker existed are not its own */
    for (;;) {
        seen = wait_generation(seen);
        if (tid < pool.team->n)
            pool.rc[tid] = pool.fn(pool.ctx, tid, pool.team);
        atomic_fetch_sub_explicit(&pool.pending, 1, memory_order_acq_rel);
    }
    return NULL;
}

/* A forked child has none of the parent's workers: start over (else it would wait forever). */
static void after_fork_child(void)
{
    pthread_mutex_init(&pool.busy, NULL);
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.cv, NULL);
    pool.nworkers = 0;
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void set_atfork(void) { pthread_atfork(NULL, NULL, after_fork_child); }

/* Grows the pool to n - 1 workers where it can (detached: they live as long as the process). */
static void grow(int n)
{
    pthread_once(&atfork_once, set_atfork);
    while (pool.nworkers < n - 1) {
        pthread_t t;
        pool.born[pool.nworkers + 1] = atomic_load_explicit(&pool.gen, memory_order_relaxed);
        if (pthread_create(&t, NULL, worker_main, (void *)(long)(pool.nworkers + 1)) != 0)
            break;
        pthread_detach(t);
        pool.nworkers++;
    }
}

static int run_pooled(int n, splade_team_fn fn, void *ctx)
{
    grow(n);
    splade_team team;
    team_init(&team, n < pool.nworkers + 1 ? n : pool.nworkers + 1);
    pool.fn = fn, pool.ctx = ctx, pool.team = &team;
    atomic_store_explicit(&pool.pending, pool.nworkers, memory_order_relaxed);
    pthread_mutex_lock(&pool.mu); /* no worker can miss the wake-up between its check and its wait */
    atomic_fetch_add_explicit(&pool.gen, 1, memory_order_release);
    pthread_cond_broadcast(&pool.cv);
    pthread_mutex_unlock(&pool.mu);
    int rc = fn(ctx, 0, &team);
    for (int i = 0; atomic_load_explicit(&pool.pending, memory_order_acquire) > 0; i++)
        if (i >= BARRIER_SPINS)
            sched_yield();
        else
            cpu_relax();
    for (int t = 1; t < team.n; t++)
        rc = rc ? rc : pool.rc[t];
    return rc;
}

/* ---- Fallback when the pool is in use (e.g. two encoders on two threads): fresh threads. ---- */

typedef struct {
    splade_team *team;
    splade_team_fn fn;
    void *ctx;
    atomic_int *go;
    int tid, rc;
} member;

static void *member_main(void *arg)
{
    member *m = arg;
    /* team.n is final only once every pthread_create has been tried. */
    while (!atomic_load_explicit(m->go, memory_order_acquire))
        sched_yield();
    m->rc = m->fn(m->ctx, m->tid, m->team);
    return NULL;
}

static int run_fresh(int n, splade_team_fn fn, void *ctx)
{
    splade_team team;
    team_init(&team, 1);
    atomic_int go;
    atomic_init(&go, 0);
    member ms[MAX_TEAM];
    pthread_t tids[MAX_TEAM];
    for (int t = 0; t < n; t++)
        ms[t] = (member){&team, fn, ctx, &go, t, 0};
    while (team.n < n && pthread_create(&tids[team.n], NULL, member_main, &ms[team.n]) == 0)
        team.n++;
    atomic_store_explicit(&go, 1, memory_order_release);
    int rc = fn(ctx, 0, &team);
    for (int t = 1; t < team.n; t++) {
        pthread_join(tids[t], NULL);
        rc = rc ? rc : ms[t].rc;
    }
    return rc;
}

int splade_team_run(int n, splade_team_fn fn, void *ctx)
{
    n = n < 1 ? 1 : n > MAX_TEAM ? MAX_TEAM : n;
    if (n == 1) {
        splade_team solo;
        team_init(&solo, 1);
        return fn(ctx, 0, &solo);
    }
    if (pthread_mutex_trylock(&pool.busy) != 0)
        return run_fresh(n, fn, ctx);
    int rc = run_pooled(n, fn, ctx);
    pthread_mutex_unlock(&pool.busy);
    return rc;
}
