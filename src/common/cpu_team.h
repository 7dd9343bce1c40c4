/* A team of threads running one function together (SPMD), with a barrier between steps: the CPU
 * forward runs every layer on the team, so threads start once per forward pass rather than
 * once per GEMM. Private to src/encoder/. */
#ifndef SPLADE_CPU_TEAM_H
#define SPLADE_CPU_TEAM_H

typedef struct splade_team splade_team;

/* fn(ctx, tid, team) runs on n threads (the caller's thread is tid 0) and returns a status;
 * returns the first non-zero status. A thread that cannot start makes the team smaller: its
 * work is never lost, because fn must split work by splade_team_size(). */
typedef int (*splade_team_fn)(void *ctx, int tid, splade_team *t);
int splade_team_run(int n, splade_team_fn fn, void *ctx);

int splade_team_size(const splade_team *t);

/* Every thread waits until all have arrived. Spins briefly, then yields: the machine may be
 * shared, and a spinning waiter must not keep a descheduled partner from running. */
void splade_team_barrier(splade_team *t);

/* [*lo, *hi) of n items for thread tid, boundaries rounded to multiples of `align`. */
void splade_team_split(int tid, int nthreads, int n, int align, int *lo, int *hi);

#endif
