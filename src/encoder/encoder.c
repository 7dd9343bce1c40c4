/* Text -> sparse vectors: tokenize, sort by length, batch, run a backend's forward (backend.h:
 * the CPU, or the GPU), sparsify (a backend with forward_sparse compacts its output on the device
 * and only nonzeros come back, unless opts.gpu_dense_output). The backend is chosen once at create;
 * AUTO falls back to the CPU on any GPU error. opts.precision picks the GPU's format (bf16 or
 * fp32); the CPU computes in fp32 either way. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "common/phase.h"
#include "common/log.h"
#include "common/cpu_team.h"
#include "common/settings.h"
#include "encoder/backend.h"
#include "encoder/encoder_tokenize.h"
#include "encoder/gpu_encoder.h"
#include "splade.h"
#include "splade/encoder.h"

/* One device encoder: a backend and its state. One per GPU of a --device cuda:LIST run (issue #17),
 * else one. */
typedef struct {
    const splade_encoder_backend *be;
    void *bs;   /* be's state */
    int device; /* the CUDA id it was made for (-1: the current device) */
} slot;

struct splade_encoder {
    const splade_model *m;
    splade_encoder_opts o;  /* resolved: max_length and batch_size > 0 */
    slot *sl;               /* n_slots of them; sl[0] is the only one on the CPU */
    int n_slots;
    int batches[SPLADE_MAX_DEVICES]; /* batches each slot has started (SPLADE_TEST_ENCODER_FAIL counts them) */
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

/* Creates backend `be` on `device` and uploads the model into *s. The device's name (or why it is
 * unusable) goes to name[n]; `uploading` tells which of the two steps failed. */
static int open_backend(splade_encoder *e, slot *s, const splade_encoder_backend *be, int device, int tune,
                        char *name, size_t n, int *uploading)
{
    void *st = NULL;
    *uploading = 0;
    int rc = be->create(&e->o, device, tune, &st, name, n);
    if (rc)
        return rc;
    *uploading = 1;
    rc = be->upload(st, e->m);
    if (rc) {
        be->free(st);
        return rc;
    }
    *s = (slot){be, st, device};
    return SPLADE_OK;
}

/* The GPU list of a cuda:LIST run into ids (SPLADE_DEVICES_ALL: every visible GPU); its length. */
static int device_list(const splade_encoder *e, int32_t *ids)
{
    int n = e->o.n_devices;
    if (n == SPLADE_DEVICES_ALL) {
        n = splade_gpu_device_count();
        n = n > SPLADE_MAX_DEVICES ? SPLADE_MAX_DEVICES : n;
        for (int i = 0; i < n; i++)
            ids[i] = i;
        return n;
    }
    memcpy(ids, e->o.devices, (size_t)n * sizeof *ids);
    return n;
}

static void free_slots(splade_encoder *e)
{
    for (int i = 0; i < e->n_slots; i++)
        e->sl[i].be->free(e->sl[i].bs);
    e->n_slots = 0;
}

/* One entry of a GPU list, opened on its own thread (open_gpus). */
typedef struct {
    splade_encoder *e;
    slot s;
    int device, tune, rc, uploading;
    char name[256], detail[1024];
} gpu_opening;

/* Team member tid opens the entries tid, tid + team size, ... of ctx = {gpu_opening array, count}. */
typedef struct {
    gpu_opening *g;
    int n;
} gpu_openings;

static int open_entries(void *ctx, int tid, splade_team *t)
{
    const gpu_openings *o = ctx;
    for (int i = tid; i < o->n; i += splade_team_size(t)) {
        gpu_opening *g = &o->g[i];
        g->rc = open_backend(g->e, &g->s, &splade_backend_cuda, g->device, g->tune, g->name, sizeof g->name,
                             &g->uploading);
        if (g->rc)
            snprintf(g->detail, sizeof g->detail, "%s", splade_error_detail());
    }
    return 0;
}

/* --device cuda:LIST: one GPU encoder per entry, all or nothing (no CPU fallback: the list was asked
 * for). Several encoders run without timing-based GEMM tuning so that all pick the same algorithms.
 * The entries open at once, one thread each (each GPU's create and upload are its own): the list
 * starts in about one GPU's time, not N (issue #17: start-up is what a build on N GPUs cannot
 * divide by N). */
static int open_gpus(splade_encoder *e)
{
    int32_t ids[SPLADE_MAX_DEVICES];
    const int n = device_list(e, ids);
    if (n <= 0)
        return splade_fail(SPLADE_ERR_NO_GPU, "--device cuda:all: no visible CUDA device");
    gpu_opening *g = calloc((size_t)n, sizeof *g);
    if (!g)
        return splade_fail(SPLADE_ERR_NOMEM, "--device cuda:LIST: %d entries", n);
    for (int i = 0; i < n; i++)
        g[i] = (gpu_opening){.e = e, .device = ids[i], .tune = n == 1};
    splade_team_run(n, open_entries, &(gpu_openings){g, n});
    int bad = -1;
    for (int i = 0; i < n; i++) {
        if (g[i].rc == SPLADE_OK)
            e->sl[e->n_slots++] = g[i].s;
        else if (bad < 0)
            bad = i;
    }
    if (bad >= 0) { /* the first failing entry in list order */
        free_slots(e);
        int rc = splade_fail(g[bad].rc, "--device cuda:LIST: GPU %d (entry %d of %d): %s", (int)ids[bad], bad + 1, n,
                             g[bad].detail);
        free(g);
        return rc;
    }
    char count[32];
    snprintf(count, sizeof count, "%d", n);
    notice(e, "encoding on %s GPU encoder(s) (%s)", count, g[n - 1].name);
    free(g);
    return SPLADE_OK;
}

/* Tries the GPU; 1 when it will be used. For AUTO every failure is a CPU fallback (rc stays 0). */
static int pick_gpu(splade_encoder *e, int *rc)
{
    char name[256], detail[1024];
    int uploading;
    if (e->o.device == SPLADE_DEVICE_CUDA && e->o.n_devices != 0) {
        *rc = open_gpus(e);
        return *rc == SPLADE_OK;
    }
    int g = open_backend(e, &e->sl[0], &splade_backend_cuda, -1, 1, name, sizeof name, &uploading);
    *rc = SPLADE_OK;
    if (g == SPLADE_OK) {
        e->n_slots = 1;
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

static int open_cpu(splade_encoder *e, slot *s)
{
    char name[8];
    int uploading;
    return open_backend(e, s, &splade_backend_cpu, -1, 1, name, sizeof name, &uploading);
}

static int check_opts(const splade_encoder *e)
{
    if (e->o.max_length < 2 || e->o.device < SPLADE_DEVICE_AUTO || e->o.device > SPLADE_DEVICE_CUDA)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "encoder: max_length must be >= 2 and device valid");
    if (e->o.precision != SPLADE_PRECISION_BF16 && e->o.precision != SPLADE_PRECISION_FP32)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "encoder: precision %d (bf16 or fp32)", (int)e->o.precision);
    if (e->o.cpu_precision != SPLADE_CPU_FP32 && e->o.cpu_precision != SPLADE_CPU_BF16 &&
        e->o.cpu_precision != SPLADE_CPU_INT8)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "encoder: cpu_precision %d (fp32, bf16 or int8)",
                           (int)e->o.cpu_precision);
    if (e->o.cpu_precision == SPLADE_CPU_INT8 && e->o.device == SPLADE_DEVICE_CUDA)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "--precision int8 runs on the CPU only (the GPU encoder has "
                                                   "bf16 and fp32): use --device cpu or auto, or another precision");
    const int32_t nd = e->o.n_devices;
    if (nd != SPLADE_DEVICES_ALL && (nd < 0 || nd > SPLADE_MAX_DEVICES))
        return splade_fail(SPLADE_ERR_INVALID_ARG, "encoder: n_devices %d (0..%d or SPLADE_DEVICES_ALL)", (int)nd,
                           SPLADE_MAX_DEVICES);
    for (int32_t i = 0; i < nd; i++)
        if (e->o.devices[i] < 0)
            return splade_fail(SPLADE_ERR_INVALID_ARG, "encoder: devices[%d] = %d", (int)i, (int)e->o.devices[i]);
    return SPLADE_OK;
}

int splade_encoder_create(const splade_model *model, const splade_encoder_opts *opts, splade_encoder **out)
{
    if (!model || !out)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_encoder_create: NULL argument");
    *out = NULL;
    splade_encoder *e = calloc(1, sizeof *e);
    slot *sl = calloc(SPLADE_MAX_DEVICES, sizeof *sl);
    if (!e || !sl) {
        free(e);
        free(sl);
        return splade_fail(SPLADE_ERR_NOMEM, "encoder");
    }
    e->m = model;
    e->sl = sl;
    if (opts)
        e->o = *opts;
    if (e->o.max_length <= 0)
        e->o.max_length = 256;
    const int32_t max_position = splade_model_config(model)->max_position;
    if (e->o.max_length > max_position)
        e->o.max_length = max_position;
    int rc = check_opts(e);
    /* int8 is CPU-only: AUTO goes straight to the CPU */
    const int gpu_ok = e->o.device != SPLADE_DEVICE_CPU && e->o.cpu_precision != SPLADE_CPU_INT8;
    if (!rc && !(gpu_ok && pick_gpu(e, &rc)) && rc == SPLADE_OK) {
        rc = open_cpu(e, &e->sl[0]);
        e->n_slots = rc ? 0 : 1;
    }
    if (rc) {
        free(e->sl);
        free(e);
        return rc;
    }
    if (e->o.batch_size <= 0)
        e->o.batch_size = e->sl[0].be->default_batch;
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
static int sparse_out(const splade_encoder *e, const slot *s)
{
    return s->be->forward_sparse && !e->o.gpu_dense_output;
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
static int device_forward(splade_encoder *e, slot *s, const int32_t *ids, const int32_t *offsets, int32_t B,
                          batch_out *bo)
{
    int32_t tokens = offsets[B] - offsets[0];
    if (e->o.max_batch_tokens > 0 && tokens > e->o.max_batch_tokens && B > 0)
        return splade_fail(SPLADE_ERR_GPU_OOM, "batch of %d tokens over the cap of %d", (int)tokens,
                           (int)e->o.max_batch_tokens);
    bo->sparse = sparse_out(e, s);
    if (bo->sparse)
        return s->be->forward_sparse(s->bs, ids, offsets, B, e->o.threshold, &bo->sp);
    return s->be->forward(s->bs, ids, offsets, B, bo->dense);
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
static int leave_gpu(splade_encoder *e, slot *s)
{
    char detail[1024];
    snprintf(detail, sizeof detail, "%s", splade_error_detail());
    notice(e, "GPU forward failed (%s); continuing on the CPU%s", detail, "");
    slot cpu;
    int rc = open_cpu(e, &cpu); /* *s changes only on success */
    if (rc == SPLADE_OK) {
        s->be->free(s->bs);
        *s = cpu;
    }
    return rc;
}

static int forward(splade_encoder *e, slot *s, const int32_t *ids, const int32_t *offsets, int32_t B,
                   batch_out *bo, splade_sparse *vecs);

/* Sequences [from, B) of a packed batch, re-based so that their offsets start at 0. */
static int forward_tail(splade_encoder *e, slot *s, const int32_t *ids, const int32_t *offsets, int32_t from,
                        int32_t B, batch_out *bo, splade_sparse *vecs)
{
    int32_t n = B - from, *rebased = malloc((size_t)(n + 1) * sizeof *rebased);
    if (!rebased)
        return splade_fail(SPLADE_ERR_NOMEM, "encoder batch split");
    for (int32_t b = 0; b <= n; b++)
        rebased[b] = offsets[from + b] - offsets[from];
    int rc = forward(e, s, ids + offsets[from], rebased, n, bo, vecs + from);
    free(rebased);
    return rc;
}

/* A batch over the backend's memory cap (backend.h: fit), in consecutive parts that fit it.
 * Sequences are independent; the parts' packed shapes differ, so a weight may move by ~1e-7. */
static int forward_parts(splade_encoder *e, slot *s, const int32_t *ids, const int32_t *offsets, int32_t B,
                         batch_out *bo, splade_sparse *vecs)
{
    int32_t *rebased = malloc((size_t)(B + 1) * sizeof *rebased);
    if (!rebased)
        return splade_fail(SPLADE_ERR_NOMEM, "encoder batch split");
    int rc = SPLADE_OK;
    for (int32_t st = 0, n; !rc && st < B; st += n) {
        n = s->be->fit(s->bs, offsets + st, B - st);
        for (int32_t b = 0; b <= n; b++)
            rebased[b] = offsets[st + b] - offsets[st];
        rc = forward(e, s, ids + offsets[st], rebased, n, bo, vecs + st);
    }
    free(rebased);
    return rc;
}

/* One packed batch -> vecs[0 .. B). Out of memory: halve the batch and retry each half, down to
 * one sequence; only a single sequence that still does not fit is an error (or, under AUTO on
 * the GPU, a move to the CPU). Sequences are independent, so the output is identical. On an
 * error some of vecs may be filled (the caller frees them). */
static int forward(splade_encoder *e, slot *s, const int32_t *ids, const int32_t *offsets, int32_t B,
                   batch_out *bo, splade_sparse *vecs)
{
    if (s->be->fit && s->be->fit(s->bs, offsets, B) < B)
        return forward_parts(e, s, ids, offsets, B, bo, vecs);
    int rc = sparse_out(e, s) ? SPLADE_OK : ensure_dense(e, bo, B);
    if (rc)
        return rc;
    rc = device_forward(e, s, ids, offsets, B, bo);
    if (rc == SPLADE_OK) {
        const double t0 = splade_phase_now();
        rc = collect(e, bo, B, vecs);
        splade_phase_since(SPLADE_PH_COLLECT, t0);
        return rc;
    }
    if (rc == SPLADE_ERR_GPU_OOM && B > 1) {
        int32_t half = B / 2;
        rc = forward(e, s, ids, offsets, half, bo, vecs);
        return rc ? rc : forward_tail(e, s, ids, offsets, half, B, bo, vecs);
    }
    if (s->be == &splade_backend_cpu || e->o.device == SPLADE_DEVICE_CUDA) {
        if (rc == SPLADE_ERR_GPU_OOM) {
            char detail[1024];
            snprintf(detail, sizeof detail, "%s", splade_error_detail());
            rc = splade_fail(rc, "out of memory even for a single sequence of %d tokens: %s",
                             (int)(offsets[1] - offsets[0]), detail);
        }
        return rc;
    }
    rc = leave_gpu(e, s);
    return rc ? rc : forward(e, s, ids, offsets, B, bo, vecs);
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

/* The length-sorted batches of one call, shared by the encoders of its slots (issue #17): batch k is
 * order[k*bs .. k*bs + bs), the same batches one encoder forms, so every text meets the same batch
 * shape on whichever GPU takes it. Each worker pulls the next batch (the longest ones first, so a
 * free GPU takes the next by token count) and writes its vectors into out[idx]: input order. */
typedef struct {
    splade_encoder *e;
    const int32_t *ids, *offsets;
    const by_len *order;
    int n;
    int group;                      /* texts sorted and batched apart (splade_encoder_encode_ids_grouped) */
    splade_sparse *out;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int next;                       /* first text of the next new batch */
    int retry[SPLADE_MAX_DEVICES];  /* batches given back by a GPU that failed */
    int n_retry;
    int alive, busy;                /* workers not dropped; workers with a batch in hand */
    int rc;                         /* the first fatal error, its detail below */
    char detail[1024];
} batch_queue;

/* One past the last text of the batch that starts at s: batch_size texts, or fewer at the end of
 * the call or of s's group, so every group forms the batches a call of its own would. */
static int batch_end(const batch_queue *q, int s)
{
    int end = q->group > 0 ? (s / q->group + 1) * q->group : q->n;
    end = end < q->n ? end : q->n;
    return s + q->e->o.batch_size < end ? s + q->e->o.batch_size : end;
}

/* The next batch's first text, or -1 when none is left (or the run stopped). Waits while another
 * worker still holds a batch that it might give back. */
static int take_batch(batch_queue *q)
{
    int s = -1;
    pthread_mutex_lock(&q->mu);
    while (!q->rc && !q->n_retry && q->next >= q->n && q->busy > 0)
        pthread_cond_wait(&q->cv, &q->mu);
    if (!q->rc && q->n_retry)
        s = q->retry[--q->n_retry];
    else if (!q->rc && q->next < q->n) {
        s = q->next;
        q->next = batch_end(q, s);
    }
    q->busy += s >= 0;
    pthread_mutex_unlock(&q->mu);
    return s;
}

/* Stops the run with rc unless it stopped already (the caller holds no batch). */
static void stop_run(batch_queue *q, int rc)
{
    pthread_mutex_lock(&q->mu);
    if (!q->rc) {
        q->rc = rc;
        snprintf(q->detail, sizeof q->detail, "%s", splade_error_detail());
    }
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* A batch that failed on slot `sl`: a GPU failure moves it to another encoder and drops this one
 * (while another is left); anything else stops the run with its error. 1: this worker is dropped. */
static int give_back(batch_queue *q, const slot *sl, int s, int rc)
{
    char detail[1024];
    snprintf(detail, sizeof detail, "%s", splade_error_detail());
    pthread_mutex_lock(&q->mu);
    const int gpu_fault = rc == SPLADE_ERR_CUDA || rc == SPLADE_ERR_GPU_OOM;
    const int drop = gpu_fault && q->alive > 1 && !q->rc;
    if (drop) {
        q->retry[q->n_retry++] = s;
        q->alive--;
        splade_log(SPLADE_LOG_WARNING, "GPU %d failed (%s); its batch moves to another GPU, %d left", sl->device,
                   detail, q->alive);
    } else if (!q->rc) {
        q->rc = rc;
        snprintf(q->detail, sizeof q->detail, "%s", detail);
    }
    q->busy--;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return drop;
}

static void batch_done(batch_queue *q)
{
    pthread_mutex_lock(&q->mu);
    q->busy--;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* Worker scratch: the packed ids of one batch, its offsets, its vectors and the device's output. */
typedef struct {
    batch_queue *q;
    slot *sl;
    int32_t *pids, *poff;
    size_t pids_cap;
    splade_sparse *vecs;
    batch_out bo;
} worker;

/* SPLADE_TEST_ENCODER_FAIL (settings.h): the chosen slot's N-th batch fails as a GPU fault would,
 * before its forward (so no halving), for tests of give_back and of the callers' clean-up on any
 * machine, the CPU included. Only this slot's worker touches its count during a call. */
static int injected_fault(splade_encoder *e, const slot *sl)
{
    const splade_settings *st = splade_settings_get();
    const int i = (int)(sl - e->sl);
    const int k = ++e->batches[i];
    if (i != st->encoder_fail_slot || k != st->encoder_fail_batch)
        return SPLADE_OK;
    char where[32];
    if (sl->be->device == SPLADE_DEVICE_CPU)
        snprintf(where, sizeof where, "the CPU");
    else
        snprintf(where, sizeof where, sl->device >= 0 ? "GPU %d" : "the current GPU", sl->device);
    const int code = st->encoder_fail_code ? st->encoder_fail_code : SPLADE_ERR_CUDA;
    return splade_fail(code, "encoder %d of %d (%s): failure injected in its batch %d (SPLADE_TEST_ENCODER_FAIL)", i,
                       e->n_slots, where, k);
}

/* Batch starting at order[s]: packed, forwarded on w's slot, vectors to out[idx] (all or none). */
static int run_batch(worker *w, int s)
{
    batch_queue *q = w->q;
    splade_encoder *e = q->e;
    const int32_t B = batch_end(q, s) - s;
    size_t tokens = 0;
    for (int32_t b = 0; b < B; b++)
        tokens += (size_t)q->order[s + b].len;
    if (tokens > w->pids_cap) {
        int32_t *p = realloc(w->pids, tokens * sizeof *p);
        if (!p)
            return splade_fail(SPLADE_ERR_NOMEM, "encoder batch of %zu tokens", tokens);
        w->pids = p;
        w->pids_cap = tokens;
    }
    w->poff[0] = 0;
    for (int32_t b = 0; b < B; b++) {
        const int i = q->order[s + b].idx;
        memcpy(w->pids + w->poff[b], q->ids + q->offsets[i], (size_t)q->order[s + b].len * sizeof *w->pids);
        w->poff[b + 1] = w->poff[b] + q->order[s + b].len;
    }
    int rc = cancelled(e, s, q->n);
    if (!rc)
        rc = injected_fault(e, w->sl);
    if (!rc)
        rc = forward(e, w->sl, w->pids, w->poff, B, &w->bo, w->vecs);
    for (int32_t b = 0; !rc && b < B; b++)
        rc = check_finite(e, &w->vecs[b], q->order[s + b].idx, q->n);
    for (int32_t b = 0; b < B; b++) {
        if (rc)
            splade_sparse_free(&w->vecs[b]); /* a failed batch may have filled some */
        else
            q->out[q->order[s + b].idx] = w->vecs[b];
        memset(&w->vecs[b], 0, sizeof w->vecs[b]);
    }
    return rc;
}

static void *work(void *arg)
{
    worker *w = arg;
    batch_queue *q = w->q;
    w->poff = malloc((size_t)(q->e->o.batch_size + 1) * sizeof *w->poff);
    w->vecs = calloc((size_t)q->e->o.batch_size, sizeof *w->vecs);
    int s = -1;
    if (w->poff && w->vecs)
        s = take_batch(q);
    else
        stop_run(q, splade_fail(SPLADE_ERR_NOMEM, "encoder batch"));
    while (s >= 0) {
        int rc = run_batch(w, s);
        if (rc && give_back(q, w->sl, s, rc))
            break;
        if (!rc)
            batch_done(q);
        s = rc ? -1 : take_batch(q);
    }
    free(w->pids);
    free(w->poff);
    free(w->vecs);
    free(w->bo.dense);
    return NULL;
}

/* Runs the sorted batches on every slot: the calling thread works for slot 0, one thread more for
 * each other slot. The first fatal error is the call's (its detail re-raised on this thread). */
static int run_workers(batch_queue *q)
{
    splade_encoder *e = q->e;
    worker w[SPLADE_MAX_DEVICES];
    pthread_t th[SPLADE_MAX_DEVICES];
    int started = 0;
    memset(w, 0, sizeof w);
    q->alive = e->n_slots;
    for (int i = 0; i < e->n_slots; i++)
        w[i] = (worker){.q = q, .sl = &e->sl[i]};
    for (int i = 1; i < e->n_slots; i++) {
        if (pthread_create(&th[i], NULL, work, &w[i]))
            break;
        started = i;
    }
    work(&w[0]);
    for (int i = 1; i <= started; i++)
        pthread_join(th[i], NULL);
    return q->rc ? splade_fail(q->rc, "%s", q->detail) : SPLADE_OK;
}

/* Runs sequences in length order (within each group of `group`; 0: all), batch by batch, and
 * sparsifies each row into out[idx]. */
static int run_sorted(splade_encoder *e, const int32_t *ids, const int32_t *offsets, int n, int group,
                      splade_sparse *out)
{
    by_len *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order)
        return splade_fail(SPLADE_ERR_NOMEM, "encoder batch");
    for (int i = 0; i < n; i++)
        order[i] = (by_len){offsets[i + 1] - offsets[i], i};
    const int g = group > 0 && group < n ? group : n;
    for (int from = 0; from < n; from += g) /* ties go by index: a group sorts as its own call would */
        qsort(order + from, (size_t)(n - from < g ? n - from : g), sizeof *order, cmp_len);
    batch_queue q = {.e = e, .ids = ids, .offsets = offsets, .order = order, .n = n, .group = g, .out = out};
    pthread_mutex_init(&q.mu, NULL);
    pthread_cond_init(&q.cv, NULL);
    int rc = run_workers(&q);
    pthread_mutex_destroy(&q.mu);
    pthread_cond_destroy(&q.cv);
    free(order);
    return rc;
}

int splade_encoder_encode_ids(splade_encoder *e, const int32_t *ids, const int32_t *offsets, int n,
                              splade_sparse *out)
{
    return splade_encoder_encode_ids_grouped(e, ids, offsets, n, 0, out);
}

int splade_encoder_encode_ids_grouped(splade_encoder *e, const int32_t *ids, const int32_t *offsets, int n, int group,
                                      splade_sparse *out)
{
    if (!e || !ids || !offsets || !out || n < 0)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_encoder_encode_ids: bad arguments");
    memset(out, 0, (size_t)n * sizeof *out);
    int rc = run_sorted(e, ids, offsets, n, group, out);
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

/* Texts [from, to) of one tokenizing thread: text i into ids + i * (max_length + 1), its length
 * into len[i]. On a failure: the text's index in bad, its detail in detail. */
typedef struct {
    const splade_encoder *e;
    const char *const *texts;
    const size_t *lens;
    int from, to, cut, bad, rc;
    int32_t *ids, *len;
    char detail[1024];
} tok_part;

static void tokenize_part(tok_part *p)
{
    const size_t cap = (size_t)p->e->o.max_length + 1;
    for (int i = p->from; i < p->to && !p->rc; i++) {
        int tr = 0;
        const char *t = p->texts[i] ? p->texts[i] : "";
        p->rc = tokenize_one(p->e, t, p->lens ? p->lens[i] : strlen(t), p->ids + (size_t)i * cap, &p->len[i], &tr);
        p->cut += tr;
        if (p->rc) {
            p->bad = i;
            snprintf(p->detail, sizeof p->detail, "%s", splade_error_detail());
        }
    }
}

/* Team member tid tokenizes the parts tid, tid + team size, ... of ctx = {tok_part array, count}. */
typedef struct {
    tok_part *parts;
    int n;
} tok_parts;

static int tokenize_parts(void *ctx, int tid, splade_team *t)
{
    const tok_parts *o = ctx;
    for (int p = tid; p < o->n; p += splade_team_size(t))
        tokenize_part(&o->parts[p]);
    return 0;
}

/* Tokenizes the n texts into ids (room for max_length + 1 each) and packs them: sequence i is
 * ids[offsets[i] .. offsets[i+1]). The texts are cut into one part per GPU encoder (two for a single
 * device), each tokenized on its own thread (the tokenizer is immutable), so that the CPU keeps up
 * with N GPUs (issue #17); calls of fewer than 64 texts per part stay on this thread. The packed
 * result is the same whatever the split. On a failure, the first
 * failing text's index goes to *bad. */
static int tokenize_all(const splade_encoder *e, const char *const *texts, const size_t *lens, int n, int32_t *ids,
                        int32_t *offsets, int *cut, int *bad)
{
    const size_t cap = (size_t)e->o.max_length + 1;
    const int want = e->n_slots > 1 ? e->n_slots : 2; /* two threads even for one device: it is free */
    const int np = n >= 64 * want ? want : 1;
    tok_part parts[SPLADE_MAX_DEVICES];
    int32_t *len = offsets + 1; /* lengths first, prefix sums after */
    for (int p = 0; p < np; p++)
        parts[p] = (tok_part){.e = e, .texts = texts, .lens = lens, .from = (int)((long)n * p / np),
                              .to = (int)((long)n * (p + 1) / np), .bad = -1, .ids = ids, .len = len};
    splade_team_run(np, tokenize_parts, &(tok_parts){parts, np});
    for (int p = 0; p < np; p++)
        if (parts[p].rc) {
            *bad = parts[p].bad;
            return splade_fail(parts[p].rc, "%s", parts[p].detail);
        }
    offsets[0] = 0;
    for (int i = 0; i < n; i++) { /* pack: offsets[i] <= i * cap, so each move goes left */
        const int32_t k = len[i];
        memmove(ids + offsets[i], ids + (size_t)i * cap, (size_t)k * sizeof *ids);
        offsets[i + 1] = offsets[i] + k;
    }
    for (int p = 0; p < np; p++)
        *cut += parts[p].cut;
    return SPLADE_OK;
}

int splade_encoder_tokenize_texts(const splade_encoder *e, const char *const *texts, const size_t *lens, int n,
                                  int32_t **ids_out, int32_t **offsets_out, int *n_truncated)
{
    *ids_out = *offsets_out = NULL;
    *n_truncated = 0;
    const size_t cap = (size_t)e->o.max_length + 1;
    int32_t *ids = malloc(cap * (size_t)(n ? n : 1) * sizeof *ids);
    int32_t *offsets = malloc((size_t)(n + 1) * sizeof *offsets);
    if (!ids || !offsets) {
        free(ids);
        free(offsets);
        return splade_fail(SPLADE_ERR_NOMEM, "encoder: ids of %d texts", n);
    }
    int cut = 0, bad = -1;
    const double t0 = splade_phase_now();
    int rc = tokenize_all(e, texts, lens, n, ids, offsets, &cut, &bad);
    splade_phase_since(SPLADE_PH_TOKENIZE, t0);
    if (rc) {
        char detail[1024];
        snprintf(detail, sizeof detail, "%s", splade_error_detail());
        free(ids);
        free(offsets);
        return splade_fail(rc, "tokenizing text %d: %s", bad, detail);
    }
    *ids_out = ids;
    *offsets_out = offsets;
    *n_truncated = cut;
    return SPLADE_OK;
}

int splade_encoder_encode(splade_encoder *e, const char *const *texts, const size_t *lens, int n,
                          splade_sparse *out, int *n_truncated)
{
    if (!e || (!texts && n) || !out || n < 0)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_encoder_encode: bad arguments");
    if (n_truncated)
        *n_truncated = 0;
    int32_t *ids, *offsets;
    int cut = 0;
    int rc = splade_encoder_tokenize_texts(e, texts, lens, n, &ids, &offsets, &cut);
    if (rc)
        return rc;
    rc = splade_encoder_encode_ids(e, ids, offsets, n, out);
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
    const long per_call = (long)chunk * SPLADE_ENCODE_GROUPS; /* token ids are held for one call */
    int rc = SPLADE_OK, cut = 0, done = 0;
    while (!rc && done < n) {
        const int m = n - done < per_call ? n - done : (int)per_call;
        int32_t *ids, *offsets;
        int c = 0;
        rc = splade_encoder_tokenize_texts(e, texts + done, lens ? lens + done : NULL, m, &ids, &offsets, &c);
        if (rc)
            break;
        rc = splade_encoder_encode_ids_grouped(e, ids, offsets, m, chunk, out + done); /* frees its own on failure */
        free(ids);
        free(offsets);
        if (!rc) {
            done += m;
            cut += c;
        }
    }
    if (rc) /* the failed call left nothing; the calls before it are ours to free */
        for (int i = 0; i < done; i++)
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

/* "I,J,..." (after "cuda:") into ids; the count, or -1 when malformed. */
static int parse_id_list(const char *s, int32_t *ids)
{
    int n = 0;
    for (;;) {
        int v = 0, digits = 0;
        for (; *s >= '0' && *s <= '9' && digits < 4; s++, digits++)
            v = v * 10 + (*s - '0');
        if (!digits || digits > 3 || n == SPLADE_MAX_DEVICES)
            return -1;
        ids[n++] = v;
        if (!*s)
            return n;
        if (*s++ != ',')
            return -1;
    }
}

int splade_parse_devices(const char *s, splade_encoder_opts *o)
{
    if (!o)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_parse_devices: NULL options");
    splade_device d;
    int32_t ids[SPLADE_MAX_DEVICES];
    int n = 0;
    if (s && !strncmp(s, "cuda:", 5)) {
        n = !strcmp(s + 5, "all") ? SPLADE_DEVICES_ALL : parse_id_list(s + 5, ids);
        if (n == -1 && strcmp(s + 5, "all"))
            return splade_fail(SPLADE_ERR_INVALID_ARG, "--device \"%s\": expected cuda:all or cuda:I,J,... "
                               "(up to %d GPU ids, 0..999, comma-separated)", s, SPLADE_MAX_DEVICES);
        d = SPLADE_DEVICE_CUDA;
    } else {
        int rc = splade_parse_device(s, &d);
        if (rc)
            return splade_fail(rc, "--device must be auto, cpu, cuda, cuda:all or cuda:I,J,..., not \"%s\"", s);
    }
    o->device = d;
    o->n_devices = n;
    if (n > 0)
        memcpy(o->devices, ids, (size_t)n * sizeof *ids);
    return SPLADE_OK;
}

int splade_parse_precision(const char *s, splade_precision *p)
{
    if (!s || !strcmp(s, "bf16"))
        *p = SPLADE_PRECISION_BF16;
    else if (!strcmp(s, "fp32"))
        *p = SPLADE_PRECISION_FP32;
    else if (!strcmp(s, "int8")) /* CPU-only (splade_parse_cpu_precision): the GPU field keeps its default */
        *p = SPLADE_PRECISION_BF16;
    else
        return splade_fail(SPLADE_ERR_INVALID_ARG, "--precision must be bf16, fp32 or int8, not \"%s\"", s);
    return SPLADE_OK;
}

int splade_parse_cpu_precision(const char *s, splade_cpu_precision *p)
{
    if (!s || !strcmp(s, "fp32"))
        *p = SPLADE_CPU_FP32;
    else if (!strcmp(s, "bf16"))
        *p = SPLADE_CPU_BF16;
    else if (!strcmp(s, "int8"))
        *p = SPLADE_CPU_INT8;
    else
        return splade_fail(SPLADE_ERR_INVALID_ARG, "--precision must be bf16, fp32 or int8, not \"%s\"", s);
    return SPLADE_OK;
}

int32_t splade_encoder_max_length(const splade_encoder *e) { return e ? e->o.max_length : 0; }

int splade_encoder_batches_run(const splade_encoder *e)
{
    int n = 0;
    for (int i = 0; i < SPLADE_MAX_DEVICES; i++)
        n += e->batches[i];
    return n;
}

splade_device splade_encoder_device(const splade_encoder *e) { return e ? e->sl[0].be->device : SPLADE_DEVICE_CPU; }

void splade_encoder_free(splade_encoder *e)
{
    if (!e)
        return;
    const double t0 = splade_phase_now();
    free_slots(e);
    splade_phase_since(SPLADE_PH_ENCODER_FREE, t0);
    splade_phase_report(e->o.quiet ? NULL : "encoder"); /* quiet: cleared, not logged */
    free(e->sl);
    free(e);
}

struct splade_gpu_warmup {
    pthread_t th;
    int32_t devices[SPLADE_MAX_DEVICES];
    int n; /* devices to warm; SPLADE_DEVICES_ALL: every visible one */
    int blas; /* cuBLASLt's set-up too: not for an encoder that may never load it (warm_blas_pays) */
};

/* One device's share of the warm-up: its context, then cuBLASLt's heuristics on it (~0.1 s per GPU,
 * else paid by its first forward). */
typedef struct {
    int device, blas;
} warm_device;

/* Team member tid warms the devices tid, tid + team size, ... of ctx = {warm_device array, count}. */
typedef struct {
    const warm_device *d;
    int n;
} warm_devices;

static int warm_devices_run(void *ctx, int tid, splade_team *t)
{
    const warm_devices *o = ctx;
    for (int i = tid; i < o->n; i += splade_team_size(t)) {
        splade_gpu_warm_context(o->d[i].device);
        if (o->d[i].blas)
            splade_gpu_warm_blas(o->d[i].device);
    }
    return 0;
}

/* The warm-up thread: loads the GPU code (the probe's first call), then warms every device at once,
 * one thread each (a list's start-up is one GPU's, not N: issue #17), which overlaps the caller's
 * model load and upload of the weights when it finishes the warm-up after splade_encoder_create
 * (SPLADE_GPU_WARM=0: no cuBLASLt step). Errors are left for splade_encoder_create to find and report. */
static void *warm_up(void *arg)
{
    splade_gpu_warmup *w = arg;
    const int blas = w->blas;
    char name[256];
    const double t0 = splade_phase_now();
    const int usable = splade_gpu_probe(name, sizeof name);
    double t1 = splade_phase_since(SPLADE_PH_GPU_OPEN, t0);
    if (!usable)
        return NULL;
    int n = w->n == SPLADE_DEVICES_ALL ? splade_gpu_device_count() : w->n;
    n = n < SPLADE_MAX_DEVICES ? n : SPLADE_MAX_DEVICES;
    warm_device d[SPLADE_MAX_DEVICES];
    for (int i = 0; i < n; i++)
        d[i] = (warm_device){w->n == SPLADE_DEVICES_ALL ? i : w->devices[i], blas};
    if (n > 0)
        splade_team_run(n, warm_devices_run, &(warm_devices){d, n});
    splade_phase_since(blas ? SPLADE_PH_GPU_BLAS_WARM : SPLADE_PH_GPU_CONTEXT, t1);
    return NULL;
}

/* One text per forward (batch_size 1) up to SPLADE_GPU_SMALL_SINGLE tokens runs the GPU's own GEMMs
 * (gpu_gemm_small.cu), so cuBLASLt is never loaded: warming it would add its load, its set-up and
 * its share of the teardown (~0.2 s) to a start-up it does not serve. SPLADE_GPU_WARM=0: never. */
static int warm_blas_pays(const splade_encoder_opts *opts)
{
    const splade_settings *s = splade_settings_get();
    if (!s->gpu_warm)
        return 0;
    /* max_length 0: the model's (BERT's: 512) */
    const int single = opts->batch_size == 1 && opts->max_length <= SPLADE_GPU_SMALL_SINGLE;
    return !(single && s->gpu_small_gemm > 0);
}

splade_gpu_warmup *splade_encoder_warm_start(const splade_encoder_opts *opts)
{
    if (!opts || opts->device == SPLADE_DEVICE_CPU)
        return NULL;
    splade_gpu_warmup *w = calloc(1, sizeof *w);
    if (!w)
        return NULL; /* only an optimisation: create does the work itself */
    w->n = opts->n_devices;
    w->blas = warm_blas_pays(opts);
    if (w->n == 0) { /* the current device */
        w->n = 1;
        w->devices[0] = -1;
    } else if (w->n > 0) {
        w->n = w->n > SPLADE_MAX_DEVICES ? SPLADE_MAX_DEVICES : w->n;
        memcpy(w->devices, opts->devices, (size_t)w->n * sizeof *w->devices);
    }
    if (pthread_create(&w->th, NULL, warm_up, w)) {
        free(w);
        return NULL;
    }
    return w;
}

void splade_encoder_warm_finish(splade_gpu_warmup *w)
{
    if (!w)
        return;
    pthread_join(w->th, NULL);
    free(w);
}

void splade_encoder_opts_init(splade_encoder_opts *o)
{
    *o = (splade_encoder_opts){.device = SPLADE_DEVICE_AUTO, .lmhead = SPLADE_LMHEAD_FUSED,
                               .precision = SPLADE_PRECISION_BF16};
}
