/* Text -> sparse vectors: tokenize, sort by length, batch, run a backend's forward (backend.h:
 * the CPU, or the GPU), sparsify (a backend with forward_sparse compacts its output on the device
 * and only nonzeros come back, unless opts.gpu_dense_output). The backend is chosen once at create;
 * AUTO falls back to the CPU on any GPU error. opts.precision picks the GPU's format (bf16 or
 * fp32); the CPU computes in fp32 either way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "common/log.h"
#include "encoder/backend.h"
#include "splade.h"
#include "splade/encoder.h"

struct splade_encoder {
    const splade_model *m;
    splade_encoder_opts o;  /* resolved: max_length and batch_size > 0 */
    const splade_encoder_backend *be;
    void *bs;               /* be's state */
};

/* The one-line device notice (info: which device encodes, and why not the GPU), unless quiet. */
static void notice(const splade_encoder *e, const char *fmt, const char *a, const char *b)
{
    if (e->o.quiet)
        return;
    char msg[1536];
    snprintf(msg, sizeof msg, fmt, a, b);
    splade_log(SPLADE_LOG_INFO, "%s", msg);
}

/* Creates backend `be` and uploads the model: e->be and e->bs on success. The device's name (or
 * why it is unusable) goes to name[n]; `uploading` tells which of the two steps failed. */
static int open_backend(splade_encoder *e, const splade_encoder_backend *be, char *name, size_t n, int *uploading)
{
    void *st = NULL;
    *uploading = 0;
    int rc = be->create(&e->o, &st, name, n);
    if (rc)
        return rc;
    *uploading = 1;
    rc = be->upload(st, e->m);
    if (rc) {
        be->free(st);
        return rc;
    }
    e->be = be;
    e->bs = st;
    return SPLADE_OK;
}

/* Tries the GPU; 1 when it will be used. For AUTO every failure is a CPU fallback (rc stays 0). */
static int pick_gpu(splade_encoder *e, int *rc)
{
    char name[256], detail[1024];
    int uploading;
    int g = open_backend(e, &splade_backend_cuda, name, sizeof name, &uploading);
    *rc = SPLADE_OK;
    if (g == SPLADE_OK) {
        notice(e, "encoding on the GPU (%s)%s", name, e->o.precision == SPLADE_PRECISION_FP32 ? ", fp32" : "");
        return 1;
    }
    snprintf(detail, sizeof detail, "%s", splade_error_detail());
    if (!uploading && e->o.device == SPLADE_DEVICE_CUDA)
        *rc = splade_fail(g, "--device cuda: %s", detail);
    else if (!uploading)
        notice(e, "encoding on the CPU (no GPU: %s)%s", name, "");
    else if (e->o.device == SPLADE_DEVICE_CUDA)
        *rc = splade_fail(g, "--device cuda: GPU encoder failed on %s: %s", name, detail);
    else
        notice(e, "GPU encoder unavailable (%s); falling back to the CPU%s", detail, "");
    return 0;
}

static int open_cpu(splade_encoder *e)
{
    char name[8];
    int uploading;
    return open_backend(e, &splade_backend_cpu, name, sizeof name, &uploading);
}

int splade_encoder_create(const splade_model *model, const splade_encoder_opts *opts, splade_encoder **out)
{
    if (!model || !out)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_encoder_create: NULL argument");
    *out = NULL;
    splade_encoder *e = calloc(1, sizeof *e);
    if (!e)
        return splade_fail(SPLADE_ERR_NOMEM, "encoder");
    e->m = model;
    if (opts)
        e->o = *opts;
    if (e->o.max_length <= 0)
        e->o.max_length = 256;
    const int32_t max_position = splade_model_config(model)->max_position;
    if (e->o.max_length > max_position)
        e->o.max_length = max_position;
    if (e->o.max_length < 2 || e->o.device < SPLADE_DEVICE_AUTO || e->o.device > SPLADE_DEVICE_CUDA) {
        free(e);
        return splade_fail(SPLADE_ERR_INVALID_ARG, "encoder: max_length must be >= 2 and device valid");
    }
    if (e->o.precision != SPLADE_PRECISION_BF16 && e->o.precision != SPLADE_PRECISION_FP32) {
        const int p = (int)e->o.precision;
        free(e);
        return splade_fail(SPLADE_ERR_INVALID_ARG, "encoder: precision %d (bf16 or fp32)", p);
    }
    int rc = SPLADE_OK;
    if (!(e->o.device != SPLADE_DEVICE_CPU && pick_gpu(e, &rc)) && rc == SPLADE_OK)
        rc = open_cpu(e);
    if (rc) {
        free(e);
        return rc;
    }
    if (e->o.batch_size <= 0)
        e->o.batch_size = e->be->default_batch;
    *out = e;
    return SPLADE_OK;
}

/* Where one packed batch's output lands before it becomes vectors: a host [rows, V] buffer for
 * the dense paths (the CPU, or the GPU with gpu_dense_output), allocated on first use; or the
 * GPU's compacted pairs (valid until the next GPU forward). */
typedef struct {
    float *dense;
    int32_t rows;
    int sparse;            /* the last device forward left its output in sp, not in dense */
    splade_gpu_sparse sp;
} batch_out;

/* A backend that can compacts its output on the device unless asked for the dense copy. */
static int sparse_out(const splade_encoder *e)
{
    return e->be->forward_sparse && !e->o.gpu_dense_output;
}

static int ensure_dense(const splade_encoder *e, batch_out *bo, int32_t B)
{
    if (B <= bo->rows)
        return SPLADE_OK;
    const int32_t V = splade_model_config(e->m)->vocab_size;
    float *d = realloc(bo->dense, (size_t)B * V * sizeof *d);
    if (!d)
        return splade_fail(SPLADE_ERR_NOMEM, "encoder batch output of %d x %d floats", (int)B, (int)V);
    bo->dense = d;
    bo->rows = B;
    return SPLADE_OK;
}

/* Device forward for one packed batch. A batch over the token cap fails like a GPU that ran
 * out of memory, so the split-and-retry path below is exercised by tests on any machine. */
static int device_forward(splade_encoder *e, const int32_t *ids, const int32_t *offsets, int32_t B, batch_out *bo)
{
    int32_t tokens = offsets[B] - offsets[0];
    if (e->o.max_batch_tokens > 0 && tokens > e->o.max_batch_tokens && B > 0)
        return splade_fail(SPLADE_ERR_GPU_OOM, "batch of %d tokens over the cap of %d", (int)tokens,
                           (int)e->o.max_batch_tokens);
    bo->sparse = sparse_out(e);
    if (bo->sparse)
        return e->be->forward_sparse(e->bs, ids, offsets, B, e->o.threshold, &bo->sp);
    return e->be->forward(e->bs, ids, offsets, B, bo->dense);
}

/* The B vectors of the batch device_forward just ran, into vecs[0 .. B) (all or none). Both
 * paths keep the same pairs (weight > threshold and > 0) and select top_k the same way. */
static int collect(const splade_encoder *e, const batch_out *bo, int32_t B, splade_sparse *vecs)
{
    const int32_t V = splade_model_config(e->m)->vocab_size;
    int rc = SPLADE_OK;
    int32_t b;
    for (b = 0; !rc && b < B; b++) {
        if (bo->sparse) {
            const int32_t o = bo->sp.offsets[b], n = bo->sp.offsets[b + 1] - o;
            rc = splade_sparse_from_pairs(n ? bo->sp.terms + o : NULL, n ? bo->sp.weights + o : NULL, n, e->o.top_k,
                                          &vecs[b]);
        } else {
            rc = splade_sparse_from_dense(bo->dense + (size_t)b * V, V, e->o.threshold, e->o.top_k, &vecs[b]);
        }
    }
    if (rc)
        while (b-- > 0)
            splade_sparse_free(&vecs[b]);
    return rc;
}

/* AUTO gives up on the GPU for good after a non-memory failure; the batch reruns on the CPU. */
static int leave_gpu(splade_encoder *e)
{
    char detail[1024];
    snprintf(detail, sizeof detail, "%s", splade_error_detail());
    notice(e, "GPU forward failed (%s); continuing on the CPU%s", detail, "");
    const splade_encoder_backend *gpu = e->be;
    void *gpu_state = e->bs;
    int rc = open_cpu(e); /* e->be and e->bs change only on success */
    if (rc == SPLADE_OK)
        gpu->free(gpu_state);
    return rc;
}

static int forward(splade_encoder *e, const int32_t *ids, const int32_t *offsets, int32_t B, batch_out *bo,
                   splade_sparse *vecs);

/* Sequences [from, B) of a packed batch, re-based so that their offsets start at 0. */
static int forward_tail(splade_encoder *e, const int32_t *ids, const int32_t *offsets, int32_t from,
                        int32_t B, batch_out *bo, splade_sparse *vecs)
{
    int32_t n = B - from, *rebased = malloc((size_t)(n + 1) * sizeof *rebased);
    if (!rebased)
        return splade_fail(SPLADE_ERR_NOMEM, "encoder batch split");
    for (int32_t b = 0; b <= n; b++)
        rebased[b] = offsets[from + b] - offsets[from];
    int rc = forward(e, ids + offsets[from], rebased, n, bo, vecs + from);
    free(rebased);
    return rc;
}

/* A batch over the backend's memory cap (backend.h: fit), in consecutive parts that fit it.
 * Sequences are independent; the parts' packed shapes differ, so a weight may move by ~1e-7. */
static int forward_parts(splade_encoder *e, const int32_t *ids, const int32_t *offsets, int32_t B,
                         batch_out *bo, splade_sparse *vecs)
{
    int32_t *rebased = malloc((size_t)(B + 1) * sizeof *rebased);
    if (!rebased)
        return splade_fail(SPLADE_ERR_NOMEM, "encoder batch split");
    int rc = SPLADE_OK;
    for (int32_t s = 0, n; !rc && s < B; s += n) {
        n = e->be->fit(e->bs, offsets + s, B - s);
        for (int32_t b = 0; b <= n; b++)
            rebased[b] = offsets[s + b] - offsets[s];
        rc = forward(e, ids + offsets[s], rebased, n, bo, vecs + s);
    }
    free(rebased);
    return rc;
}

/* One packed batch -> vecs[0 .. B). Out of memory: halve the batch and retry each half, down to
 * one sequence; only a single sequence that still does not fit is an error (or, under AUTO on
 * the GPU, a move to the CPU). Sequences are independent, so the output is identical. On an
 * error some of vecs may be filled (the caller frees them). */
static int forward(splade_encoder *e, const int32_t *ids, const int32_t *offsets, int32_t B, batch_out *bo,
                   splade_sparse *vecs)
{
    if (e->be->fit && e->be->fit(e->bs, offsets, B) < B)
        return forward_parts(e, ids, offsets, B, bo, vecs);
    int rc = sparse_out(e) ? SPLADE_OK : ensure_dense(e, bo, B);
    if (rc)
        return rc;
    rc = device_forward(e, ids, offsets, B, bo);
    if (rc == SPLADE_OK)
        return collect(e, bo, B, vecs);
    if (rc == SPLADE_ERR_GPU_OOM && B > 1) {
        int32_t half = B / 2;
        rc = forward(e, ids, offsets, half, bo, vecs);
        return rc ? rc : forward_tail(e, ids, offsets, half, B, bo, vecs);
    }
    if (e->be == &splade_backend_cpu || e->o.device == SPLADE_DEVICE_CUDA) {
        if (rc == SPLADE_ERR_GPU_OOM) {
            char detail[1024];
            snprintf(detail, sizeof detail, "%s", splade_error_detail());
            rc = splade_fail(rc, "out of memory even for a single sequence of %d tokens: %s",
                             (int)(offsets[1] - offsets[0]), detail);
        }
        return rc;
    }
    rc = leave_gpu(e);
    return rc ? rc : forward(e, ids, offsets, B, bo, vecs);
}

typedef struct {
    int32_t len;
    int idx;
} by_len;

static int cmp_len(const void *pa, const void *pb)
{
    const by_len *a = pa, *b = pb;
    if (a->len != b->len)
        return a->len > b->len ? -1 : 1; /* longest first: the biggest batch allocates first */
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* Non-finite weights are refused at load, but finite ones can still overflow. relu and the max
 * pooling of both heads (CPU and GPU) turn NaN into 0, so what comes back is Inf: checked on
 * the vectors themselves, the one output common to the dense and the compacted GPU paths. */
static int check_finite(const splade_encoder *e, const splade_sparse *v, int text, int n)
{
    if (splade_first_nonfinite(v->weights, (size_t)v->n) == (size_t)v->n)
        return SPLADE_OK;
    return splade_fail(SPLADE_ERR_MODEL, "model %s produced non-finite values (NaN/Inf) for document %d (0-based, "
                       "of the %d encoded together)", splade_model_dir(e->m), text, n);
}

/* The caller's flag, read once per forward batch: a stop within one batch, never inside a kernel. */
static int cancelled(const splade_encoder *e, int done, int n)
{
    if (!e->o.cancel || !*e->o.cancel)
        return SPLADE_OK;
    return splade_fail(SPLADE_ERR_CANCELLED, "encoding cancelled by the caller after %d of %d texts", done, n);
}

/* Runs sequences in length order, batch by batch, and sparsifies each row into out[idx]. */
static int run_sorted(splade_encoder *e, const int32_t *ids, const int32_t *offsets, int n, splade_sparse *out)
{
    const int32_t bs = e->o.batch_size;
    by_len *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    int32_t *pids = malloc((size_t)(offsets[n] ? offsets[n] : 1) * sizeof *pids);
    int32_t *poff = malloc((size_t)(bs + 1) * sizeof *poff);
    splade_sparse *vecs = calloc((size_t)bs, sizeof *vecs);
    batch_out bo;
    memset(&bo, 0, sizeof bo);
    int rc = order && pids && poff && vecs ? SPLADE_OK : splade_fail(SPLADE_ERR_NOMEM, "encoder batch");
    for (int i = 0; !rc && i < n; i++)
        order[i] = (by_len){offsets[i + 1] - offsets[i], i};
    if (!rc)
        qsort(order, (size_t)n, sizeof *order, cmp_len);
    for (int s = 0; !rc && s < n; s += bs) {
        int32_t B = n - s < bs ? n - s : bs;
        poff[0] = 0;
        for (int32_t b = 0; b < B; b++) {
            int i = order[s + b].idx;
            memcpy(pids + poff[b], ids + offsets[i], (size_t)order[s + b].len * sizeof *pids);
            poff[b + 1] = poff[b] + order[s + b].len;
        }
        rc = cancelled(e, s, n);
        if (!rc)
            rc = forward(e, pids, poff, B, &bo, vecs);
        for (int32_t b = 0; !rc && b < B; b++)
            rc = check_finite(e, &vecs[b], order[s + b].idx, n);
        for (int32_t b = 0; b < B; b++) {
            if (rc)
                splade_sparse_free(&vecs[b]);  /* a failed batch may have filled some */
            else
                out[order[s + b].idx] = vecs[b];
            memset(&vecs[b], 0, sizeof vecs[b]);
        }
    }
    free(order);
    free(pids);
    free(poff);
    free(vecs);
    free(bo.dense);
    return rc;
}

int splade_encoder_encode_ids(splade_encoder *e, const int32_t *ids, const int32_t *offsets, int n,
                              splade_sparse *out)
{
    if (!e || !ids || !offsets || !out || n < 0)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_encoder_encode_ids: bad arguments");
    memset(out, 0, (size_t)n * sizeof *out);
    int rc = run_sorted(e, ids, offsets, n, out);
    if (rc)
        for (int i = 0; i < n; i++)
            splade_sparse_free(&out[i]);
    return rc;
}

/* Tokenizes text i into ids (room for max_length + 1): asking for one token more than allowed
 * tells truncation apart from an exact fit; the cut keeps [CLS] ... [SEP] as HF's truncation. */
static int tokenize_one(const splade_encoder *e, const char *text, size_t len, int32_t *ids, int32_t *n,
                        int *truncated)
{
    const int32_t max = e->o.max_length;
    int rc = splade_tokenize(splade_model_tokenizer(e->m), text, len, max + 1, ids, n);
    if (rc)
        return rc;
    *truncated = *n > max;
    if (*truncated) {
        ids[max - 1] = ids[*n - 1];
        *n = max;
    }
    return SPLADE_OK;
}

int splade_encoder_encode(splade_encoder *e, const char *const *texts, const size_t *lens, int n,
                          splade_sparse *out, int *n_truncated)
{
    if (!e || (!texts && n) || !out || n < 0)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_encoder_encode: bad arguments");
    if (n_truncated)
        *n_truncated = 0;
    const size_t cap = (size_t)e->o.max_length + 1;
    int32_t *ids = malloc(cap * (size_t)(n ? n : 1) * sizeof *ids);
    int32_t *offsets = malloc((size_t)(n + 1) * sizeof *offsets);
    if (!ids || !offsets) {
        free(ids);
        free(offsets);
        return splade_fail(SPLADE_ERR_NOMEM, "encoder: ids of %d texts", n);
    }
    int rc = SPLADE_OK, cut = 0, i;
    offsets[0] = 0;
    for (i = 0; i < n && !rc; i++) {
        int32_t k = 0;
        int tr = 0;
        const char *t = texts[i] ? texts[i] : "";
        rc = tokenize_one(e, t, lens ? lens[i] : strlen(t), ids + offsets[i], &k, &tr);
        offsets[i + 1] = offsets[i] + k;
        cut += tr;
    }
    if (rc) {
        char detail[1024];
        snprintf(detail, sizeof detail, "%s", splade_error_detail());
        rc = splade_fail(rc, "tokenizing text %d: %s", i - 1, detail);
    } else {
        rc = splade_encoder_encode_ids(e, ids, offsets, n, out);
    }
    if (!rc && n_truncated)
        *n_truncated = cut;
    free(ids);
    free(offsets);
    return rc;
}

int splade_encoder_encode_chunked(splade_encoder *e, const char *const *texts, const size_t *lens, int n, int chunk,
                                  splade_sparse *out, int *n_truncated)
{
    if (!e || (!texts && n) || !out || n < 0)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_encoder_encode_chunked: bad arguments");
    if (chunk <= 0 || chunk > n)
        chunk = n;
    int rc = SPLADE_OK, cut = 0, s;
    for (s = 0; !rc && s < n; s += chunk) {
        int m = n - s < chunk ? n - s : chunk, c = 0;
        rc = splade_encoder_encode(e, texts + s, lens ? lens + s : NULL, m, out + s, &c);
        cut += c;
    }
    if (rc) /* the failed group freed its own vectors; the groups before it are ours to free */
        for (int i = 0; i < s - chunk && i < n; i++)
            splade_sparse_free(&out[i]);
    if (n_truncated)
        *n_truncated = rc ? 0 : cut;
    return rc;
}

int splade_parse_device(const char *s, splade_device *d)
{
    if (!s || !strcmp(s, "auto"))
        *d = SPLADE_DEVICE_AUTO;
    else if (!strcmp(s, "cpu"))
        *d = SPLADE_DEVICE_CPU;
    else if (!strcmp(s, "cuda") || !strcmp(s, "gpu"))
        *d = SPLADE_DEVICE_CUDA;
    else
        return splade_fail(SPLADE_ERR_INVALID_ARG, "--device must be auto, cpu or cuda, not \"%s\"", s);
    return SPLADE_OK;
}

int splade_parse_precision(const char *s, splade_precision *p)
{
    if (!s || !strcmp(s, "bf16"))
        *p = SPLADE_PRECISION_BF16;
    else if (!strcmp(s, "fp32"))
        *p = SPLADE_PRECISION_FP32;
    else
        return splade_fail(SPLADE_ERR_INVALID_ARG, "--precision must be bf16 or fp32, not \"%s\"", s);
    return SPLADE_OK;
}

int32_t splade_encoder_max_length(const splade_encoder *e) { return e ? e->o.max_length : 0; }

splade_device splade_encoder_device(const splade_encoder *e) { return e ? e->be->device : SPLADE_DEVICE_CPU; }

void splade_encoder_free(splade_encoder *e)
{
    if (!e)
        return;
    if (e->be)
        e->be->free(e->bs);
    free(e);
}

void splade_encoder_opts_init(splade_encoder_opts *o)
{
    *o = (splade_encoder_opts){.device = SPLADE_DEVICE_AUTO, .lmhead = SPLADE_LMHEAD_FUSED,
                               .precision = SPLADE_PRECISION_BF16};
}
