/* Multi-threaded batch search: threads take queries from a shared counter, each with its own
 * searcher; every query's result depends only on that query, so the output is identical for any
 * thread count. */
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/fail.h"
#include "splade.h"
#include "splade/query.h"

typedef struct {
    const splade_index *ix;
    const splade_qvec *qs;
    int nq, k;
    splade_algo algo;
    const splade_search_opts *opts;
    splade_hit *hits;
    int *n_hits;
    atomic_int next;
    atomic_int status;
    char msg[512]; /* detail of the first failure (details are per thread) */
} batch;

static void *worker(void *arg)
{
    batch *b = arg;
    splade_searcher *s;
    int rc = splade_searcher_create(b->ix, &s);
    if (rc == 0)
        rc = splade_searcher_set_opts(s, b->opts);
    for (int i; rc == 0 && (i = atomic_fetch_add(&b->next, 1)) < b->nq;)
        rc = splade_search(s, &b->qs[i], b->k, b->algo, b->hits + (size_t)i * (size_t)b->k, &b->n_hits[i]);
    int none = 0;
    if (rc < 0 && atomic_compare_exchange_strong(&b->status, &none, rc))
        snprintf(b->msg, sizeof b->msg, "%s", splade_error_detail());
    splade_searcher_free(s);
    return NULL;
}

int splade_search_batch(const splade_index *ix, const splade_qvec *qs, int nq, int k, splade_algo algo,
                        int threads, splade_hit *hits, int *n_hits)
{
    return splade_search_batch_opts(ix, qs, nq, k, algo, NULL, threads, hits, n_hits);
}

int splade_search_batch_opts(const splade_index *ix, const splade_qvec *qs, int nq, int k, splade_algo algo,
                             const splade_search_opts *o, int threads, splade_hit *hits, int *n_hits)
{
    if (threads <= 0)
        threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (threads > nq)
        threads = nq > 0 ? nq : 1;
    batch b = {.ix = ix, .qs = qs, .nq = nq, .k = k, .algo = algo, .opts = o, .hits = hits, .n_hits = n_hits};
    atomic_init(&b.next, 0);
    atomic_init(&b.status, 0);
    pthread_t *tid = malloc((size_t)threads * sizeof *tid);
    if (!tid)
        return splade_fail(SPLADE_ERR_NOMEM, "threads");
    int started = 0;
    for (; started < threads; started++)
        if (pthread_create(&tid[started], NULL, worker, &b) != 0)
            break;
    if (started == 0)
        worker(&b); /* no thread could start: do the work here */
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    free(tid);
    int rc = atomic_load(&b.status);
    return rc < 0 ? splade_fail(rc, "%s", b.msg) : SPLADE_OK;
}
