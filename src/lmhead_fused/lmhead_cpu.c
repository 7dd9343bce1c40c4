/* CPU reference SPLADE head. For each vocabulary tile of VT rows of W, one sgemm per group of
 * contiguous sequence rows gives logits[rows, VT]; their column max is folded into out[b, tile].
 * Bias, relu and log1p come once at the end: max commutes with the monotone activation, so the
 * [seq, V] logits never exist beyond one tile. */
#include "splade.h"
#include "splade/lmhead.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>

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

static void fold_max(const float *C, int32_t vt, const piece *p, float *dst)
{
    for (int32_t i = 0; i < p->n; i++) {
        const float *row = C + (size_t)(p->row + i) * vt;
        for (int32_t j = 0; j < vt; j++)
            dst[j] = row[j] > dst[j] ? row[j] : dst[j];
    }
}

static void tile(const float *H, const int32_t *seq_start, const int32_t *seq_len, int32_t B, int32_t D,
                 const float *W, int32_t v0, int32_t vt, int32_t V, float *out, float *C, piece *pc)
{
    for (int32_t b = 0; b < B; b++)
        for (int32_t j = 0; j < vt; j++)
            out[(size_t)b * V + v0 + j] = -INFINITY;
    int32_t b = 0, r = 0, first = 0, rows;
    for (;;) {
        int np = next_group(seq_start, seq_len, B, &b, &r, pc, &first, &rows);
        if (!np)
            break;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, vt, D, 1.0f, H + (size_t)first * D, D,
                    W + (size_t)v0 * D, D, 0.0f, C, vt);
        for (int i = 0; i < np; i++)
            fold_max(C, vt, &pc[i], out + (size_t)pc[i].b * V + v0);
    }
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
    float *C = malloc((size_t)ROW_CAP * VT * sizeof *C);
    piece *pc = malloc(ROW_CAP * sizeof *pc);
    if (!C || !pc) {
        free(C);
        free(pc);
        return splade_fail(SPLADE_ERR_NOMEM, "splade_lmhead_cpu: %d x %d tile", ROW_CAP, VT);
    }
    if (threads > 0)
        openblas_set_num_threads(threads);
    for (int32_t v0 = 0; v0 < V; v0 += VT)
        tile(H, seq_start, seq_len, B, D, W, v0, V - v0 < VT ? V - v0 : VT, V, out, C, pc);
    for (int32_t b = 0; b < B; b++)
        for (int32_t v = 0; v < V; v++) {
            float x = out[(size_t)b * V + v] + bias[v]; /* -inf for an empty sequence -> 0 */
            out[(size_t)b * V + v] = x > 0.0f ? log1pf(x) : 0.0f;
        }
    free(C);
    free(pc);
    return SPLADE_OK;
}
