/* The seam between the GPU batch search's host half (src/pipeline/gpu_search.c, in libsplade) and its
 * device half (src/gpu/search.cu, in libsplade-cuda.so, reached through src/gpu/cuda_loader.c;
 * src/gpu/no_cuda.c without nvcc). Internal.
 *
 * The host flattens the index once: every live posting of every segment, grouped by snapshot term,
 * its document renumbered by sequence order ("rank": rank 0 is the live document added first), so
 * that the tie rule (equal scores: lower sequence number first, docs/FORMAT.md) is "lower rank
 * first" and deleted documents are simply absent. A batch is a list of tasks, each a piece of one
 * query term's list and that term's query impact; the device adds impact x query impact into a
 * dense accumulator per query (integer adds: exact and order-free), then selects each query's top
 * k by (score desc, rank asc) and returns them as keys score << 32 | ~rank, best first. */
#ifndef SPLADE_GPU_SEARCH_H
#define SPLADE_GPU_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/gpu_entry.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint32_t n_docs;        /* live documents (ranks 0 .. n_docs) */
    uint32_t n_terms;       /* snapshot terms */
    uint64_t n_postings;
    const uint64_t *term_off; /* term t's postings: [term_off[t], term_off[t + 1]) */
    const uint32_t *docs;   /* rank of each posting (any order within a term: the device sorts them) */
    const uint8_t *impacts; /* its impact */
} splade_gpu_postings;

/* One piece of a query term's postings: [start, start + len) of the flattened arrays, for query
 * qi >> 8 (of the batch) with query impact qi & 255. */
typedef struct {
    uint64_t start;
    uint32_t len;
    uint32_t qi;
} splade_gpu_task;

#define SPLADE_GPU_TASK_POSTINGS 4096 /* postings per task at most (the host cuts longer lists) */
#define SPLADE_GPU_MAX_BATCH (1 << 24) /* queries per splade_gpu_search_run (qi's 24 bits) */

typedef struct splade_gpu_search splade_gpu_search;

/* Uploads p to `device` (-1: the current one). *out: splade_gpu_search_close. */
SPLADE_GPU_ENTRY int splade_gpu_search_open(const splade_gpu_postings *p, int device, splade_gpu_search **out);
/* The nq queries (nq <= SPLADE_GPU_MAX_BATCH) whose tasks are tasks[task_off[q] .. task_off[q+1]):
 * keys[q*k ..] gets query q's best min(k, matches) keys, best first, counts[q] their number. */
SPLADE_GPU_ENTRY int splade_gpu_search_run(splade_gpu_search *g, int nq, const uint64_t *task_off, const splade_gpu_task *tasks,
                          int k, uint64_t *keys, int *counts);
/* Bytes of device memory the uploaded postings take. */
SPLADE_GPU_ENTRY size_t splade_gpu_search_bytes(const splade_gpu_search *g);
SPLADE_GPU_ENTRY void splade_gpu_search_close(splade_gpu_search *g);

#ifdef __cplusplus
}
#endif
#endif
