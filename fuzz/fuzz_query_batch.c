/* Fuzz target: the batch query path (`query --queries` / `--vector-queries`). Byte 0 picks the
 * input kind, k and the thread count, byte 1 the top-k method; the rest is the queries file.
 * - vectors: splade_query_set_from_vectors -> splade_search_batch over a small valid index; every
 *   query's batch hits must equal a single splade_search of it (batch = per query, any thread count).
 * - text: splade_query_set_from_file against that index, which has no model: reading the file
 *   (duplicate ids, bad lines) then the model error path must fail cleanly, never succeed, and leave
 *   an empty set (this path once freed an unallocated array and crashed). */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_index_fixture.h"
#include "fuzz_memfile.h"
#include "splade/pipeline.h"
#include "splade/query_input.h"

enum { MAX_QUERIES = 64 }; /* searched per input: keeps executions fast */

static splade_index *ix;
static splade_searcher *srch;

static void init_once(void)
{
    if (ix)
        return;
    const char *dir = fx_scratch_dir("qbatch");
    if (fx_build(dir, 300) != 0 || splade_index_open(dir, &ix) != 0 || splade_searcher_create(ix, &srch) != 0) {
        fprintf(stderr, "fuzz_query_batch: fixture failed: %s\n", splade_error_detail());
        abort();
    }
    fx_remove_index(dir); /* the mapping stays valid */
}

/* Batch search of qs equals one splade_search per query. */
static void check_batch(const splade_query_set *qs, int k, splade_algo algo, int threads)
{
    int nq = qs->n < MAX_QUERIES ? qs->n : MAX_QUERIES;
    splade_hit *hits = calloc((size_t)nq * (size_t)k + 1, sizeof *hits), *one = calloc((size_t)k + 1, sizeof *one);
    int *n_hits = calloc((size_t)nq + 1, sizeof *n_hits);
    if (hits && one && n_hits && splade_search_batch(ix, qs->q, nq, k, algo, threads, hits, n_hits) == SPLADE_OK) {
        for (int i = 0; i < nq; i++) {
            int n = -1;
            if (splade_search(srch, &qs->q[i], k, algo, one, &n) != SPLADE_OK || n != n_hits[i] || n < 0 || n > k ||
                memcmp(one, hits + (size_t)i * (size_t)k, (size_t)n * sizeof *one) != 0)
                __builtin_trap();
        }
    }
    free(hits);
    free(one);
    free(n_hits);
}

static void check_text(const char *path, int bad_model)
{
    splade_query_set qs;
    splade_query_encode_opts o = {.model = bad_model ? "/nonexistent/model" : NULL, .device = "cpu"};
    if (splade_query_set_from_file(ix, path, &o, &qs) == SPLADE_OK || qs.n || qs.ids || qs.q)
        __builtin_trap();
    (void)splade_error_detail();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int ks[4] = {1, 10, 300, 1000}; /* 300: every document; 1000: more than the index holds */
    init_once();
    if (size < 2)
        return 0;
    int text = data[0] & 1, k = ks[(data[0] >> 1) & 3], threads = 1 + ((data[0] >> 3) & 3);
    splade_algo algo = (splade_algo)(data[1] % FX_ALGOS);
    char path[64];
    int fd = memfile_open(data + 2, size - 2, path, sizeof path);
    if (fd < 0)
        return 0;
    splade_query_set qs;
    if (text)
        check_text(path, (data[0] >> 5) & 1);
    else if (splade_query_set_from_vectors(ix, path, &qs) == SPLADE_OK) {
        check_batch(&qs, k, algo, threads);
        splade_query_set_free(&qs);
    }
    close(fd);
    return 0;
}
