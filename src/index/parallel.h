/* The index build's one threading helper: a fixed set of jobs on threads, joined. */
#ifndef SPLADE_INDEX_PARALLEL_H
#define SPLADE_INDEX_PARALLEL_H

#include <stddef.h>

/* Runs fn on args[0..n) (stride bytes apart): jobs 1..n-1 on new threads, job 0 on the calling
 * thread. A job whose thread cannot start runs on the calling thread afterwards: jobs must write
 * disjoint data, so the result never depends on which thread ran what. n <= 64. */
void splade_run_jobs(int n, void *(*fn)(void *), void *args, size_t stride);

/* Bytes per piece when the writer copies sections and the reader checks CRCs on threads (2 MB; the
 * file does not depend on it). Tests make it small so that sections span many pieces. */
extern size_t splade_index_piece_bytes;

#endif
