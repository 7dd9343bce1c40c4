/* CPU reference SPLADE head. For each vocabulary tile of VT rows of W, one sgemm per group of
 * contiguous sequence rows gives logits[VT, rows]; each piece's row max is folded into out[b, tile].
 * Bias, relu and log1p come once at the end: max commutes with the monotone activation, so the
 * [seq, V] logits never exist beyond one tile. With several threads, tiles are dealt round-robin
 * to threads that each run single-threaded sgemm: the tiles are independent, and a query's
 * 32-row gemm is too small for OpenBLAS's own threading to pay off. The AVX-512 kernel instead
 * gives each thread one contiguous, equal share of the vocabulary. */
#include "common/fail.h"
#include "splade.h"
#include "lmhead_fused/lmhead.h"
#include "lmhead_fused/lmhead_cpu_internal.h"
#include "common/cpu_team.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { VT = 2048, ROW_CAP = 1024 };

typedef struct {
    int32_t b, row, n; /* sequence, first row inside the gemm group, row count */
} piece;

/* Collects up to ROW_CAP contiguous rows starting at sequence *b, row *r. Returns the piece count;
 * *first receives the group's first row in H. */
static int next_group(const int32_t *seq_start, const int32_t *seq_len, int32_t B, int32_t *b,
                      int32_t *r, piece *pc, int32_t *first, int32_t *rows)
{
    int np = 0;
    *rows = 0;
    while (*b < B && *rows < ROW_CAP) {
        if (seq_len[*b] == 0) {
            (*b)++;
            continue;
        }
        int32_t at = seq_start[*b] + *r;
        if (*rows == 0)
            *first = at;
        else if (at != *first + *rows)
            break; /* not contiguous with the group: next gemm */
        int32_t take = seq_len[*b] - *r;
        if (take > ROW_CAP - *rows)
            take = ROW_CAP - *rows;
        pc[np++] = (piece){*b, *rows, take};
        *rows += take;
        *r += take;
        if (*r == seq_len[*b]) {
            (*b)++;
            *r = 0;
        }
    }
    return np;
}

/* C is the transposed tile [vt, rows]: the rows of one piece are contiguous for each v. */
static void fold_max(const float *C, int32_t vt, int32_t rows, const piece *p, float *dst)
{
    for (int32_t v = 0; v < vt; v++) {
        const float *r = C + (size_t)v * rows + p->row;
        float m = dst[v];
        for (int32_t i = 0; i < p->n; i++)
            m = r[i] > m ? r[i] : m;
        dst[v] = m;
    }
}

/* AVX-512 path: blocks of up to 32 rows of one sequence, transposed into Ht [D][32]. */
static void tile_fused(const float *H, const int32_t *seq_start, const int32_t *seq_len, int32_t B, int32_t D,
                       const float *W, int32_t v0, int32_t vt, int32_t V, float *out, float *Ht)
{
    for (int32_t b = 0; b < B; b++)
        for (int32_t s0 = 0; s0 < seq_len[b]; s0 += 32) {
            int32_t n = seq_len[b] - s0 < 32 ? seq_len[b] - s0 : 32;
            const float *h = H + (size_t)(seq_start[b] + s0) * D;
            for (int32_t d = 0; d < D; d++)
                for (int32_t i = 0; i < 32; i++)
                    Ht[(size_t)d * 32 + i] = i < n ? h[(size_t)i * D + d] : 0.0f;
            splade_lmhead_avx512_block(Ht, n, D, W + (size_t)v0 * D, vt, out + (size_t)b * V + v0);
        }
}

static void tile(const float *H, const int32_t *seq_start, const int32_t *seq_len, int32_t B, int32_t D,
                 const float *W, int32_t v0, int32_t vt, int32_t V, float *out, float *C, piece *pc)
{
    for (int32_t b = 0; b < B; b++)
        for (int32_t j = 0; j < vt; j++)
            out[(size_t)b * V + v0 + j] = -INFINITY;
    if (splade_lmhead_cpu_avx512_usable()) {
        tile_fused(H, seq_start, seq_len, B, D, W, v0, vt, V, out, C); /* C: room for Ht */
        return;
    }
    int32_t b = 0, r = 0, first = 0, rows;
    for (;;) {
        int np = next_group(seq_start, seq_len, B, &b, &r, pc, &first, &rows);
        if (!np)
            break;
        /* W_tile · H^T rather than H · W_tile^T: OpenBLAS runs the tall-skinny form ~15% faster
         * when rows are few (a query), and the max then reads contiguous memory. */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, vt, rows, D, 1.0f, W + (size_t)v0 * D, D,
                    H + (size_t)first * D, D, 0.0f, C, rows);
        for (int i = 0; i < np; i++)
            fold_max(C, vt, rows, &pc[i], out + (size_t)pc[i].b * V + v0);
    }
}

enum { MAX_THREADS = 64 };

/* A sequence's maximum logit (-inf when it is empty) plus the bias, through log1p(relu(.)). */
static inline float activate(float max, float bias)
{
    float x = max + bias;
    return x > 0.0f ? log1pf(x) : 0.0f;
}

typedef struct {
    const float *H, *W;
    const int32_t *seq_start, *seq_len;
    int32_t B, D, V;
    float *out;
    int tid, nthreads;
    int rc;
} head_job;

static void *head_worker(void *arg)
{
    head_job *j = arg;
    /* C holds a gemm tile (BLAS path) or the transposed block Ht [D][32] (AVX-512 path: 8 MiB
     * for the BLAS tile would be an mmap/munmap per query for nothing). */
    size_t c_floats = splade_lmhead_cpu_avx512_usable() ? (size_t)j->D * 32 : (size_t)ROW_CAP * VT;
    c_floats = c_floats > (size_t)j->D * 32 ? c_floats : (size_t)j->D * 32;
    float *C = aligned_alloc(64, c_floats * sizeof *C);
    piece *pc = malloc(ROW_CAP * sizeof *pc);
    if (!C || !pc) {
        j->rc = SPLADE_ERR_NOMEM;
    } else if (splade_lmhead_cpu_avx512_usable()) {
        /* One contiguous share of the vocabulary per thread (rounded to the kernel's 8 rows), in
         * tiles: equal shares, where round-robin VT tiles gave one thread 8 of 15 (splade-tiny). */
        int32_t lo = (int32_t)((int64_t)j->V * j->tid / j->nthreads) / 8 * 8;
        int32_t hi = j->tid + 1 == j->nthreads ? j->V : (int32_t)((int64_t)j->V * (j->tid + 1) / j->nthreads) / 8 * 8;
        for (int32_t v0 = lo; v0 < hi; v0 += VT)
            tile(j->H, j->seq_start, j->seq_len, j->B, j->D, j->W, v0, hi - v0 < VT ? hi - v0 : VT, j->V, j->out,
                 C, pc);
    } else {
        for (int32_t v0 = j->tid * VT; v0 < j->V; v0 += j->nthreads * VT)
            tile(j->H, j->seq_start, j->seq_len, j->B, j->D, j->W, v0, j->V - v0 < VT ? j->V - v0 : VT, j->V,
                 j->out, C, pc);
    }
    free(C);
    free(pc);
    return NULL;
}

static int head_member(void *ctx, int tid, splade_team *t)
{
    head_job j = *(const head_job *)ctx;
    j.tid = tid;
    j.nthreads = splade_team_size(t);
    head_worker(&j);
    return j.rc;
}

/* Runs the tiles on a team of nthreads (this thread included; pooled threads, see cpu_team.c).
 * OpenBLAS runs single-threaded inside it even for a team of one: its own threading splits a
 * tile's gemm by the thread count, which changed the logits' last bits between --threads 1
 * and 2. */
static int run_tiles(head_job *base, int nthreads)
{
    int saved = openblas_get_num_threads();
    openblas_set_num_threads(1);
    int rc = splade_team_run(nthreads, head_member, base);
    openblas_set_num_threads(saved);
    return rc ? splade_fail(rc, "splade_lmhead_cpu: %d x %d tile", ROW_CAP, VT) : SPLADE_OK;
}

int splade_lmhead_cpu(const float *H, const int32_t *seq_start, const int32_t *seq_len, int32_t B,
                      int32_t D, const float *W, const float *bias, int32_t V, float *out, int threads)
{
    if (!H || !seq_start || !seq_len || !W || !bias || !out || B < 0 || D <= 0 || V <= 0)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_lmhead_cpu: bad arguments");
    for (int32_t b = 0; b < B; b++)
        if (seq_len[b] < 0 || seq_start[b] < 0)
            return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_lmhead_cpu: sequence %d has a negative "
                               "start or length", (int)b);
    int nthreads = threads > 0 ? threads : openblas_get_num_threads();
    int ntiles = (int)((V + VT - 1) / VT);
    nthreads = nthreads < 1 ? 1 : nthreads > MAX_THREADS ? MAX_THREADS : nthreads;
    nthreads = nthreads > ntiles ? ntiles : nthreads;
    head_job job = {H, W, seq_start, seq_len, B, D, V, out, 0, 1, SPLADE_OK};
    int rc = run_tiles(&job, nthreads);
    if (rc)
        return rc;
    for (int32_t b = 0; b < B; b++)
        for (int32_t v = 0; v < V; v++)
            out[(size_t)b * V + v] = activate(out[(size_t)b * V + v], bias[v]);
    return SPLADE_OK;
}

size_t splade_lmhead_cpu_columns_scratch(int32_t D, int32_t n)
{
    return ((size_t)D * 32 + 15) / 16 * 16 + (size_t)n * D; /* Ht [D][32], then the gathered rows */
}

int splade_lmhead_cpu_columns(const float *H, int32_t len, int32_t D, const float *W, const float *bias,
                              const int32_t *cols, int32_t n, float *out, float *scratch)
{
    if (!splade_lmhead_cpu_avx512_usable())
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "splade_lmhead_cpu_columns: no AVX-512 kernel here");
    float *Ht = scratch, *Wc = scratch + ((size_t)D * 32 + 15) / 16 * 16;
    for (int32_t i = 0; i < n; i++) {
        memcpy(Wc + (size_t)i * D, W + (size_t)cols[i] * D, (size_t)D * sizeof *Wc);
        out[i] = -INFINITY;
    }
    const int32_t start = 0;
    tile_fused(H, &start, &len, 1, D, Wc, 0, n, n, out, Ht);
    for (int32_t i = 0; i < n; i++)
        out[i] = activate(out[i], bias[cols[i]]);
    return SPLADE_OK;
}
