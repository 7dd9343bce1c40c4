/* GPU batch search, host half (include/splade/query.h; the plan is in src/gpu/search.h): the
 * index flattened once for the device (live postings grouped by snapshot term, documents renumbered
 * by sequence order), then each batch cut into tasks and its keys turned back into hits. The CPU
 * search (splade_search_batch) is the reference: tests/test_gpu_search.c compares the two. */
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "index/format.h"
#include "index/postings.h"
#include "index/segment.h"
#include "gpu/search.h"
#include "splade.h"
#include "splade/encoder.h"
#include "splade/query.h"

struct splade_gpu_searcher {
    splade_gpu_search *dev;
    uint32_t n_terms;
    uint64_t *term_off; /* n_terms + 1: each snapshot term's postings on the device */
    uint32_t n_docs;    /* live documents */
    uint32_t *rank_doc; /* snapshot doc id of each rank (sequence order) */
};

typedef struct {
    uint64_t seq;
    uint32_t seg, doc;
} live_doc;

static int by_seq(const void *a, const void *b)
{
    const live_doc *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->seg != y->seg ? (x->seg < y->seg ? -1 : 1) : (x->doc > y->doc) - (x->doc < y->doc);
}

/* rank_of[first[i] + d] = rank of internal id d of segment i (UINT32_MAX: deleted); s->rank_doc. */
static int rank_documents(splade_gpu_searcher *s, const splade_index *ix, const uint64_t *first, uint32_t *rank_of)
{
    const int S = splade_index_n_segments(ix);
    uint64_t live = 0;
    for (int i = 0; i < S; i++)
        live += splade_index_segment(ix, i)->n_live;
    live_doc *ld = malloc((live ? live : 1) * sizeof *ld);
    s->rank_doc = malloc((live ? live : 1) * sizeof *s->rank_doc);
    if (!ld || !s->rank_doc) {
        free(ld);
        return splade_fail(SPLADE_ERR_NOMEM, "ranks of %llu documents", (unsigned long long)live);
    }
    uint64_t n = 0;
    for (int i = 0; i < S; i++) {
        const splade_segment *g = splade_index_segment(ix, i);
        for (uint32_t d = 0; d < g->n_docs; d++) {
            rank_of[first[i] + d] = UINT32_MAX;
            if (!splade_segment_deleted(g, d) && n < live)
                ld[n++] = (live_doc){splade_segment_seq(g, d), (uint32_t)i, d};
        }
    }
    qsort(ld, n, sizeof *ld, by_seq);
    for (uint64_t r = 0; r < n; r++) {
        const splade_segment *g = splade_index_segment(ix, (int)ld[r].seg);
        rank_of[first[ld[r].seg] + ld[r].doc] = (uint32_t)r;
        s->rank_doc[r] = splade_segment_global(g, ld[r].doc);
    }
    s->n_docs = (uint32_t)n;
    free(ld);
    return SPLADE_OK;
}

/* Appends the live postings of term `term` (the segment's id) of segment g at docs/imps + *at. */
static void append_list(const splade_segment *g, int32_t term, const uint32_t *rank_of, uint32_t *docs,
                        uint8_t *imps, uint64_t *at)
{
    splade_term_postings tp;
    splade_index_postings(g->ix, term, &tp); /* none for -1 */
    uint32_t block[SPLADE_BLOCK_SIZE];
    for (uint32_t b = 0; b < tp.n_blocks; b++) {
        const uint8_t *in;
        const uint32_t count = splade_list_block(tp.blocks, tp.n_blocks, tp.n_postings, tp.postings, b, block, &in);
        for (uint32_t i = 0; i < count; i++) {
            uint32_t r = block[i] < g->n_docs ? rank_of[block[i]] : UINT32_MAX; /* damaged lists: skipped */
            if (r != UINT32_MAX && in[i]) {
                docs[*at] = r;
                imps[*at] = in[i];
                (*at)++;
            }
        }
    }
}

/* Every live posting grouped by snapshot term into p (arrays owned by the caller); s->term_off. */
static int flatten(splade_gpu_searcher *s, const splade_index *ix, const uint32_t *rank_of, const uint64_t *first,
                   splade_gpu_postings *p, uint32_t **docs, uint8_t **imps)
{
    const int S = splade_index_n_segments(ix);
    uint64_t bound = 0;
    for (int i = 0; i < S; i++)
        bound += splade_index_get_info(splade_index_segment(ix, i)->ix)->n_postings;
    s->term_off = malloc(((size_t)s->n_terms + 1) * sizeof *s->term_off);
    *docs = malloc((bound ? bound : 1) * sizeof **docs);
    *imps = malloc(bound ? bound : 1);
    if (!s->term_off || !*docs || !*imps)
        return splade_fail(SPLADE_ERR_NOMEM, "%llu postings for the GPU", (unsigned long long)bound);
    uint64_t at = 0;
    for (uint32_t t = 0; t < s->n_terms; t++) {
        s->term_off[t] = at;
        for (int i = 0; i < S; i++) {
            const splade_segment *g = splade_index_segment(ix, i);
            append_list(g, splade_segment_term(g, (int32_t)t), rank_of + first[i], *docs, *imps, &at);
        }
    }
    s->term_off[s->n_terms] = at;
    *p = (splade_gpu_postings){s->n_docs, s->n_terms, at, s->term_off, *docs, *imps};
    return SPLADE_OK;
}

static int prepare(splade_gpu_searcher *s, const splade_index *ix, int device)
{
    const int S = splade_index_n_segments(ix);
    uint64_t *first = malloc(((size_t)S + 1) * sizeof *first);
    if (!first)
        return splade_fail(SPLADE_ERR_NOMEM, "segments");
    first[0] = 0;
    for (int i = 0; i < S; i++)
        first[i + 1] = first[i] + splade_index_segment(ix, i)->n_docs;
    uint32_t *rank_of = malloc((first[S] ? first[S] : 1) * sizeof *rank_of), *docs = NULL;
    uint8_t *imps = NULL;
    splade_gpu_postings p;
    int rc = rank_of ? rank_documents(s, ix, first, rank_of) : splade_fail(SPLADE_ERR_NOMEM, "document ranks");
    if (rc == 0)
        rc = flatten(s, ix, rank_of, first, &p, &docs, &imps);
    free(rank_of);
    free(first);
    if (rc == 0)
        rc = splade_gpu_search_open(&p, device, &s->dev);
    free(docs);
    free(imps);
    return rc;
}

int splade_gpu_searcher_create(const splade_index *ix, int device, splade_gpu_searcher **out)
{
    if (out)
        *out = NULL;
    if (!ix || !out)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_gpu_searcher_create: NULL argument");
    char name[256]; /* no GPU: say so before flattening the index for nothing */
    if (!splade_gpu_probe(name, sizeof name))
        return splade_fail(SPLADE_ERR_NO_GPU, "no usable GPU: %s", name);
    splade_gpu_searcher *s = calloc(1, sizeof *s);
    if (!s)
        return splade_fail(SPLADE_ERR_NOMEM, "GPU searcher");
    s->n_terms = splade_index_get_info(ix)->n_terms;
    int rc = prepare(s, ix, device);
    if (rc < 0) {
        splade_gpu_searcher_free(s);
        return rc;
    }
    *out = s;
    return SPLADE_OK;
}

void splade_gpu_searcher_free(splade_gpu_searcher *s)
{
    if (!s)
        return;
    splade_gpu_search_close(s->dev);
    free(s->term_off);
    free(s->rank_doc);
    free(s);
}

/* Tasks of the nq queries at qs: each query term's list cut into pieces of SPLADE_GPU_TASK_POSTINGS.
 * Terms outside the index and zero impacts add nothing. *tasks: free(). */
static int make_tasks(const splade_gpu_searcher *s, const splade_qvec *qs, int nq, uint64_t *off,
                      splade_gpu_task **tasks)
{
    const uint64_t P = SPLADE_GPU_TASK_POSTINGS;
    off[0] = 0;
    for (int q = 0; q < nq; q++) {
        off[q + 1] = off[q];
        for (int32_t i = 0; i < qs[q].n; i++) {
            int32_t t = qs[q].terms[i];
            if (t >= 0 && (uint32_t)t < s->n_terms && qs[q].impacts[i])
                off[q + 1] += (s->term_off[t + 1] - s->term_off[t] + P - 1) / P;
        }
    }
    *tasks = malloc((off[nq] ? off[nq] : 1) * sizeof **tasks);
    if (!*tasks)
        return splade_fail(SPLADE_ERR_NOMEM, "%llu GPU tasks", (unsigned long long)off[nq]);
    splade_gpu_task *t = *tasks;
    for (int q = 0; q < nq; q++)
        for (int32_t i = 0; i < qs[q].n; i++) {
            int32_t term = qs[q].terms[i];
            if (term < 0 || (uint32_t)term >= s->n_terms || !qs[q].impacts[i])
                continue;
            for (uint64_t a = s->term_off[term]; a < s->term_off[term + 1]; a += P) {
                uint64_t len = s->term_off[term + 1] - a;
                *t++ = (splade_gpu_task){a, (uint32_t)(len < P ? len : P), (uint32_t)q << 8 | qs[q].impacts[i]};
            }
        }
    return SPLADE_OK;
}

/* Queries [0, nq) of one piece: tasks, the device, keys back into hits. */
static int search_piece(splade_gpu_searcher *s, const splade_qvec *qs, int nq, int k, uint64_t *keys,
                        uint64_t *off, splade_hit *hits, int *n_hits)
{
    splade_gpu_task *tasks = NULL;
    int rc = make_tasks(s, qs, nq, off, &tasks);
    if (rc == 0)
        rc = splade_gpu_search_run(s->dev, nq, off, tasks, k, keys, n_hits);
    free(tasks);
    for (int q = 0; rc == 0 && q < nq; q++)
        for (int i = 0; i < n_hits[q]; i++) {
            uint64_t key = keys[(size_t)q * (size_t)k + (size_t)i];
            hits[(size_t)q * (size_t)k + (size_t)i] = (splade_hit){s->rank_doc[~(uint32_t)key], (uint32_t)(key >> 32)};
        }
    return rc;
}

int splade_gpu_search_batch(splade_gpu_searcher *s, const splade_qvec *qs, int nq, int k, splade_hit *hits,
                            int *n_hits)
{
    if (!s || nq < 0 || k < 0 || (nq > 0 && (!qs || !n_hits || (k > 0 && !hits))))
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_gpu_search_batch: bad arguments (nq=%d, k=%d)", nq, k);
    for (int q = 0; q < nq; q++)
        n_hits[q] = 0;
    if (nq == 0 || k == 0)
        return SPLADE_OK;
    /* pieces of at most 2^24 keys, so that the keys' buffer stays small beside the hits */
    int piece = (int)((1u << 24) / (unsigned)k);
    piece = piece < 1 ? 1 : piece > 65536 ? 65536 : piece;
    piece = piece > nq ? nq : piece;
    uint64_t *keys = malloc((size_t)piece * (size_t)k * sizeof *keys);
    uint64_t *off = malloc(((size_t)piece + 1) * sizeof *off);
    int rc = keys && off ? SPLADE_OK : splade_fail(SPLADE_ERR_NOMEM, "keys of %d queries", piece);
    for (int q0 = 0; rc == 0 && q0 < nq; q0 += piece) {
        int m = nq - q0 < piece ? nq - q0 : piece;
        rc = search_piece(s, qs + q0, m, k, keys, off, hits + (size_t)q0 * (size_t)k, n_hits + q0);
    }
    free(keys);
    free(off);
    return rc;
}
