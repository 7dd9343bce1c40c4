/* A team of threads running one function together (SPMD), with a barrier between steps: the CPU
 * forward runs every layer on one team, and the LM head on the next, so threads start once per
 * process rather than once per GEMM or per query. Private to src/ (CPU encoder and LM head; the
 * encoder's parallel tokenization and a GPU list's parallel opening and warm-up). */
#ifndef SPLADE_CPU_TEAM_H
#define SPLADE_CPU_TEAM_H

typedef struct splade_team splade_team;

/* fn(ctx, tid, team) runs on up to n threads (the caller's thread is tid 0); returns the first
 * non-zero status. Members come from a persistent pool (parked when idle); if the pool is busy
 * (another team is running) the members are started for this call. Fewer threads than asked
 * make a smaller team, so fn must split work by splade_team_size(). fn must not return early on
 * some members only: the others would wait at the next barrier forever. */
typedef int (*splade_team_fn)(void *ctx, int tid, splade_team *t);
int splade_team_run(int n, splade_team_fn fn, void *ctx);

int splade_team_size(const splade_team *t);

/* Every member waits until all have arrived. Spins briefly, then yields: the machine may be
 * shared, and a spinning waiter must not keep a descheduled partner from running. */
void splade_team_barrier(splade_team *t);

/* The CPUs this process may run on (its affinity mask: taskset counts), at least 1. */
int splade_cpus_available(void);

/* [*lo, *hi) of n items for member tid of nthreads, boundaries on multiples of `align`. */
void splade_team_split(int tid, int nthreads, int n, int align, int *lo, int *hi);

#endif
