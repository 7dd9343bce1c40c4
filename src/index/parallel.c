/* See parallel.h. */
#include "index/parallel.h"

#include <pthread.h>

size_t splade_index_piece_bytes = (size_t)2 << 20;

void splade_run_jobs(int n, void *(*fn)(void *), void *args, size_t stride)
{
    enum { MAX_JOBS = 64 };
    pthread_t tid[MAX_JOBS];
    int started[MAX_JOBS] = {0};
    n = n > MAX_JOBS ? MAX_JOBS : n;
    for (int i = 1; i < n; i++)
        started[i] = pthread_create(&tid[i], NULL, fn, (char *)args + (size_t)i * stride) == 0;
    if (n > 0)
        fn(args);
    for (int i = 1; i < n; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            fn((char *)args + (size_t)i * stride);
    }
}
