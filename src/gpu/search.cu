/* GPU batch search, device half (the plan is in src/gpu/search.h): exhaustive term-at-a-time
 * over the whole collection, many queries at once.
 *
 * Per chunk of queries: a dense uint32 accumulator per query (zeroed), one block per task adding
 * query impact x impact with atomicAdd (integer adds commute, so the sums are exact and do not
 * depend on the order the blocks run in), then one block per query selecting its top k by radix
 * select on the 32-bit score (four 8-bit passes, zeros skipped) and one ordered pass that keeps every
 * document above the k-th score and, among those equal to it, the lowest ranks (the CPU's tie rule),
 * then a segmented sort of the keys score << 32 | ~rank, best first. The chunk is sized so that the
 * accumulators stay within a budget of device memory (SPLADE_GPU_SEARCH_CHUNK overrides it).
 * SPLADE_GPU_SEARCH_KERNEL=window adds in shared memory per window of documents instead (window_kernel):
 * measured slower on 1 M documents (bench/results/gpu-search-2026-11-25.md), kept as an option. */
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include "common/settings.h"
#include "gpu/cuda_check.h"
#include "gpu/search.h"

#define SCATTER_THREADS 256
#define SELECT_THREADS 1024
#define ACC_BUDGET ((size_t)4 << 30) /* accumulators and keys of one chunk, at most (and <= 60% of free) */

struct splade_gpu_search {
    int device;
    uint32_t n_docs;
    uint64_t n_postings;
    uint32_t *docs;
    uint8_t *imps;
    cudaStream_t stream;
    uint32_t *acc; /* [chunk queries x n_docs] */
    size_t acc_cap;
    splade_gpu_task *tasks;
    size_t tasks_cap;
    uint64_t *keys, *sorted; /* [chunk queries x k] */
    size_t keys_cap;
    int *begin, *end; /* each query's segment of keys */
    size_t seg_cap;
    void *temp; /* CUB's scratch */
    size_t temp_cap;
    int sorted_lists; /* every term's postings by ascending rank (sort_lists): the windowed kernel may run */
    uint64_t *task_off; /* the batch's task offsets per query (windowed kernel) */
    size_t task_off_cap;
};

/* One block per task: its postings' products into its query's accumulator. Doc ids are unique
 * within a list, but several tasks (terms) of one query run at once: hence the atomics. */
__global__ void __launch_bounds__(SCATTER_THREADS)
    scatter_kernel(const splade_gpu_task *tasks, const uint32_t *docs, const uint8_t *imps, uint32_t *acc,
                   uint32_t n_docs, uint32_t q0)
{
    const splade_gpu_task t = tasks[blockIdx.x];
    uint32_t *a = acc + (size_t)((t.qi >> 8) - q0) * n_docs;
    const uint32_t w = t.qi & 255;
    for (uint32_t i = threadIdx.x; i < t.len; i += SCATTER_THREADS) {
        const uint64_t j = t.start + i;
        atomicAdd(&a[docs[j]], w * imps[j]);
    }
}

/* The windowed alternative (SPLADE_GPU_SEARCH_KERNEL=window): one block per (query, window of wdocs
 * documents; SPLADE_GPU_SEARCH_WINDOW, default 16,384 = 64 KiB: two blocks per SM) adds into shared memory, each warp taking one task at a time and only its
 * postings inside the window (lists sorted by rank: two binary searches), then stores the window
 * into the accumulator: shared-memory atomics instead of L2 ones, and no zeroing pass. */
#define WINDOW_DOCS 16384
#define WINDOW_MAX_DOCS 53248 /* 208 KiB of shared memory */
#define WINDOW_THREADS 1024

__device__ __forceinline__ uint32_t lower_bound(const uint32_t *d, uint32_t n, uint32_t x)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        const uint32_t mid = (lo + hi) >> 1;
        if (d[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

__global__ void __launch_bounds__(WINDOW_THREADS)
    window_kernel(const splade_gpu_task *tasks, const uint64_t *task_off, const uint32_t *docs, const uint8_t *imps,
                  uint32_t *acc, uint32_t n_docs, uint32_t q0, uint32_t wdocs)
{
    extern __shared__ uint32_t win[];
    const uint32_t w0 = blockIdx.x * wdocs;
    const uint32_t wn = n_docs - w0 < wdocs ? n_docs - w0 : wdocs;
    for (uint32_t i = threadIdx.x; i < wn; i += WINDOW_THREADS)
        win[i] = 0;
    __syncthreads();
    const uint32_t q = q0 + blockIdx.y, lane = threadIdx.x & 31;
    for (uint64_t t = task_off[q] + (threadIdx.x >> 5); t < task_off[q + 1]; t += WINDOW_THREADS / 32) {
        const splade_gpu_task k = tasks[t];
        const uint32_t *d = docs + k.start;
        if (d[k.len - 1] < w0 || d[0] >= w0 + wn)
            continue; /* (uniform in the warp) */
        const uint32_t lo = lower_bound(d, k.len, w0), hi = lower_bound(d, k.len, w0 + wn);
        const uint32_t w = k.qi & 255;
        for (uint32_t i = lo + lane; i < hi; i += 32)
            atomicAdd(&win[d[i] - w0], w * imps[k.start + i]);
    }
    __syncthreads();
    uint32_t *a = acc + (size_t)blockIdx.y * n_docs + w0;
    for (uint32_t i = threadIdx.x; i < wn; i += WINDOW_THREADS)
        a[i] = win[i];
}

/* Histogram of digit (s >> shift) & 255 of the nonzero scores whose higher digits equal prefix:
 * lanes of a warp that share a digit add once (most scores share the top digits). */
__device__ void digit_histogram(const uint32_t *a, uint32_t n, uint32_t mask, uint32_t prefix, int shift,
                                uint32_t *hist)
{
    const int lane = threadIdx.x & 31;
    for (uint32_t base = 0; base < n; base += SELECT_THREADS) { /* uniform trip count: warp votes below */
        const uint32_t i = base + threadIdx.x;
        const uint32_t s = i < n ? a[i] : 0;
        const int part = s != 0 && (s & mask) == prefix;
        const unsigned act = __ballot_sync(0xffffffffu, part);
        if (part) {
            const uint32_t bin = (s >> shift) & 255;
            const unsigned peers = __match_any_sync(act, bin);
            if (lane == __ffs(peers) - 1)
                atomicAdd(&hist[bin], (uint32_t)__popc(peers));
        }
    }
}

__device__ __forceinline__ uint64_t hit_key(uint32_t score, uint32_t rank)
{
    return (uint64_t)score << 32 | (uint32_t)~rank;
}

/* One block per query: its top k (k <= n) keys, unordered, into keys[q*k ..]; its segment [begin,
 * end) for the sort. Only scores > 0 count (as on the CPU). */
__global__ void __launch_bounds__(SELECT_THREADS)
    select_kernel(const uint32_t *acc, uint32_t n, int k, uint64_t *keys, int *begin, int *end)
{
    typedef cub::BlockScan<int, SELECT_THREADS> scan_t;
    __shared__ typename scan_t::TempStorage scan_tmp;
    __shared__ uint32_t hist[256];
    __shared__ uint32_t s_prefix, s_remaining, s_eq_base;
    __shared__ int s_all, s_out;
    const uint32_t *a = acc + (size_t)blockIdx.x * n;
    uint64_t *out = keys + (size_t)blockIdx.x * k;
    const int tid = threadIdx.x;
    if (tid == 0) {
        s_prefix = 0;
        s_remaining = (uint32_t)k;
        s_all = 0;
        s_out = 0;
        s_eq_base = 0;
    }
    /* T = the k-th largest score: the digit of each pass is the one where the count of larger
     * scores reaches the k still wanted. s_all: fewer than k nonzero scores, all are kept. */
    uint32_t mask = 0;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int i = tid; i < 256; i += SELECT_THREADS)
            hist[i] = 0;
        __syncthreads();
        const uint32_t prefix = s_prefix;
        const int all = s_all;
        if (!all)
            digit_histogram(a, n, mask, prefix, shift, hist);
        __syncthreads();
        if (tid == 0 && !all) {
            uint32_t cum = 0, rem = s_remaining;
            int d = 255;
            for (; d >= 0 && cum + hist[d] < rem; d--)
                cum += hist[d];
            if (d < 0) {
                s_all = 1;
            } else {
                s_remaining = rem - cum;
                s_prefix = prefix | (uint32_t)d << shift;
            }
        }
        mask |= 255u << shift;
        __syncthreads();
    }
    const uint32_t T = s_all ? 1 : s_prefix;          /* >= 1: zeros were never counted */
    const uint32_t need = s_all ? UINT32_MAX : s_remaining; /* documents scoring exactly T to keep */
    /* In rank order: every score > T, and the first `need` equal to T (the lowest ranks win ties). */
    for (uint32_t base = 0; base < n; base += SELECT_THREADS) {
        const uint32_t i = base + tid;
        const uint32_t s = i < n ? a[i] : 0;
        if (s > T)
            out[atomicAdd(&s_out, 1)] = hit_key(s, i);
        const int eq = s == T;
        if (__syncthreads_or(eq) && s_eq_base < need) { /* uniform: read between two barriers */
            int pos, total;
            scan_t(scan_tmp).ExclusiveSum(eq, pos, total);
            const uint32_t e = s_eq_base;
            if (eq && e + (uint32_t)pos < need)
                out[atomicAdd(&s_out, 1)] = hit_key(s, i);
            __syncthreads();
            if (tid == 0)
                s_eq_base = e + (uint32_t)total;
            __syncthreads();
        }
    }
    __syncthreads();
    if (tid == 0) {
        begin[blockIdx.x] = (int)blockIdx.x * k;
        end[blockIdx.x] = (int)blockIdx.x * k + s_out;
    }
}

/* Each term's postings by ascending rank: a task then writes neighbouring accumulators (locality
 * only; the sums do not depend on it). Lists over 2^31 postings in all are left as they are. */
static int sort_lists(splade_gpu_search *g, const splade_gpu_postings *p)
{
    g->sorted_lists = p->n_postings < 2;
    if (p->n_postings < 2 || p->n_postings > INT_MAX)
        return SPLADE_OK;
    int *off_h = (int *)malloc(((size_t)p->n_terms + 1) * sizeof *off_h);
    if (!off_h)
        return splade_fail(SPLADE_ERR_NOMEM, "term offsets");
    for (uint32_t t = 0; t <= p->n_terms; t++)
        off_h[t] = (int)p->term_off[t];
    int *off = NULL;
    uint32_t *docs2 = NULL;
    uint8_t *imps2 = NULL;
    void *temp = NULL;
    size_t temp_bytes = 0;
    int rc = SPLADE_OK;
    cudaError_t e = cudaMalloc(&off, ((size_t)p->n_terms + 1) * sizeof *off);
    if (e == cudaSuccess)
        e = cudaMemcpy(off, off_h, ((size_t)p->n_terms + 1) * sizeof *off, cudaMemcpyHostToDevice);
    if (e == cudaSuccess)
        e = cudaMalloc(&docs2, p->n_postings * sizeof *docs2);
    if (e == cudaSuccess)
        e = cudaMalloc(&imps2, p->n_postings);
    cub::DoubleBuffer<uint32_t> kb(g->docs, docs2);
    cub::DoubleBuffer<uint8_t> vb(g->imps, imps2);
    if (e == cudaSuccess)
        e = cub::DeviceSegmentedSort::SortPairs(NULL, temp_bytes, kb, vb, (int)p->n_postings, (int)p->n_terms, off,
                                                off + 1, g->stream);
    if (e == cudaSuccess)
        e = cudaMalloc(&temp, temp_bytes);
    if (e == cudaSuccess)
        e = cub::DeviceSegmentedSort::SortPairs(temp, temp_bytes, kb, vb, (int)p->n_postings, (int)p->n_terms, off,
                                                off + 1, g->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(g->stream);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        rc = splade_fail(e == cudaErrorMemoryAllocation ? SPLADE_ERR_GPU_OOM : SPLADE_ERR_CUDA,
                         "%s:%d: sorting %llu postings: %s", __FILE__, __LINE__, (unsigned long long)p->n_postings,
                         cudaGetErrorString(e));
    } else {
        g->sorted_lists = 1;
        g->docs = kb.Current(); /* the other buffers are freed below */
        g->imps = vb.Current();
        docs2 = kb.Alternate();
        imps2 = vb.Alternate();
    }
    cudaFree(temp);
    cudaFree(docs2);
    cudaFree(imps2);
    cudaFree(off);
    free(off_h);
    return rc;
}

static int upload(splade_gpu_search *g, const splade_gpu_postings *p)
{
    CUDA_TRY(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    const size_t n = p->n_postings ? p->n_postings : 1;
    CUDA_TRY(cudaMalloc(&g->docs, n * sizeof *g->docs));
    CUDA_TRY(cudaMalloc(&g->imps, n));
    if (p->n_postings) {
        CUDA_TRY(cudaMemcpy(g->docs, p->docs, p->n_postings * sizeof *g->docs, cudaMemcpyHostToDevice));
        CUDA_TRY(cudaMemcpy(g->imps, p->impacts, p->n_postings, cudaMemcpyHostToDevice));
    }
    return sort_lists(g, p);
}

extern "C" int splade_gpu_search_open(const splade_gpu_postings *p, int device, splade_gpu_search **out)
{
    if (!p || !out)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_gpu_search_open: NULL argument");
    *out = NULL;
    const cudaError_t e = device >= 0 ? cudaSetDevice(device) : cudaGetDevice(&device);
    if (e != cudaSuccess) { /* no usable device: the caller's CPU fallback */
        (void)cudaGetLastError();
        return splade_fail(SPLADE_ERR_NO_GPU, "%s:%d: CUDA device %d: %s", __FILE__, __LINE__, device,
                           cudaGetErrorString(e));
    }
    splade_gpu_search *g = (splade_gpu_search *)calloc(1, sizeof *g);
    if (!g)
        return splade_fail(SPLADE_ERR_NOMEM, "GPU searcher");
    g->device = device;
    g->n_docs = p->n_docs;
    g->n_postings = p->n_postings;
    int rc = upload(g, p);
    if (rc < 0) {
        splade_gpu_search_close(g);
        return rc;
    }
    *out = g;
    return SPLADE_OK;
}

extern "C" size_t splade_gpu_search_bytes(const splade_gpu_search *g)
{
    return g ? (size_t)g->n_postings * 5 : 0;
}

extern "C" void splade_gpu_search_close(splade_gpu_search *g)
{
    if (!g)
        return;
    cudaSetDevice(g->device);
    cudaFree(g->docs);
    cudaFree(g->imps);
    cudaFree(g->acc);
    cudaFree(g->tasks);
    cudaFree(g->keys);
    cudaFree(g->sorted);
    cudaFree(g->begin);
    cudaFree(g->end);
    cudaFree(g->temp);
    cudaFree(g->task_off);
    if (g->stream)
        cudaStreamDestroy(g->stream);
    (void)cudaGetLastError();
    free(g);
}

/* Grows a device buffer to hold n elements of `size` bytes (contents dropped). */
static int grow(void **buf, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap)
        return SPLADE_OK;
    cudaFree(*buf);
    *buf = NULL;
    *cap = 0;
    CUDA_TRY(cudaMalloc(buf, n * size));
    *cap = n;
    return SPLADE_OK;
}

/* Queries per chunk: their accumulators and keys within the budget (SPLADE_GPU_SEARCH_CHUNK: that many). */
static int chunk_queries(const splade_gpu_search *g, int nq, int k, int *out)
{
    const size_t per_query = (size_t)g->n_docs * 4 + (size_t)k * 16 + 8;
    size_t free_b = 0, total_b = 0;
    CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    size_t budget = (size_t)((double)free_b * 0.6);
    budget = budget > ACC_BUDGET ? ACC_BUDGET : budget;
    size_t qc = budget / per_query;
    if (splade_settings_get()->gpu_search_chunk > 0) /* $SPLADE_GPU_SEARCH_CHUNK (src/common/settings.c) */
        qc = (size_t)splade_settings_get()->gpu_search_chunk;
    if (qc == 0)
        return splade_fail(SPLADE_ERR_GPU_OOM, "GPU search: one query's accumulator (%zu bytes) does not fit in %zu "
                           "free bytes", per_query, free_b);
    *out = qc > (size_t)nq ? nq : (int)qc;
    return SPLADE_OK;
}

static int reserve(splade_gpu_search *g, int nq, int qc, int k, size_t n_tasks)
{
    int rc = grow((void **)&g->acc, &g->acc_cap, (size_t)qc * g->n_docs, sizeof *g->acc);
    if (rc == 0)
        rc = grow((void **)&g->task_off, &g->task_off_cap, (size_t)nq + 1, sizeof *g->task_off);
    if (rc == 0)
        rc = grow((void **)&g->tasks, &g->tasks_cap, n_tasks ? n_tasks : 1, sizeof *g->tasks);
    size_t keys_cap = g->keys_cap;
    if (rc == 0)
        rc = grow((void **)&g->keys, &g->keys_cap, (size_t)qc * k, sizeof *g->keys);
    if (rc == 0)
        rc = grow((void **)&g->sorted, &keys_cap, (size_t)qc * k, sizeof *g->sorted);
    size_t seg_cap = g->seg_cap;
    if (rc == 0)
        rc = grow((void **)&g->begin, &g->seg_cap, (size_t)qc, sizeof *g->begin);
    if (rc == 0)
        rc = grow((void **)&g->end, &seg_cap, (size_t)qc, sizeof *g->end);
    return rc;
}

/* The keys of m queries' segments, best first, from g->keys into g->sorted. */
static int sort_keys(splade_gpu_search *g, int m, int k)
{
    size_t bytes = 0;
    CUDA_TRY(cub::DeviceSegmentedSort::SortKeysDescending(NULL, bytes, g->keys, g->sorted, m * k, m, g->begin,
                                                          g->end, g->stream));
    int rc = grow(&g->temp, &g->temp_cap, bytes ? bytes : 1, 1);
    if (rc < 0)
        return rc;
    bytes = g->temp_cap;
    CUDA_TRY(cub::DeviceSegmentedSort::SortKeysDescending(g->temp, bytes, g->keys, g->sorted, m * k, m, g->begin,
                                                          g->end, g->stream));
    return SPLADE_OK;
}

/* Which kernel adds the postings: SPLADE_GPU_SEARCH_KERNEL=atomic|window (default: atomic; bench/results
 * gpu-search-2026-11-25.md compares them). window needs every list sorted by rank. */
static int use_window(const splade_gpu_search *g)
{
    return g->sorted_lists && splade_settings_get()->gpu_search_window;
}

/* The m queries' accumulators from their tasks. */
static int accumulate(splade_gpu_search *g, int q0, int m, const uint64_t *task_off)
{
    const uint64_t t0 = task_off[q0], t1 = task_off[q0 + m];
    if (use_window(g)) {
        const int wset = splade_settings_get()->gpu_search_window_docs; /* $SPLADE_GPU_SEARCH_WINDOW */
        uint32_t wdocs = wset > 0 ? (uint32_t)wset : WINDOW_DOCS;
        wdocs = wdocs > WINDOW_MAX_DOCS ? WINDOW_MAX_DOCS : wdocs;
        const size_t smem = wdocs * sizeof(uint32_t);
        CUDA_TRY(cudaFuncSetAttribute(window_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        const dim3 grid((g->n_docs + wdocs - 1) / wdocs, (unsigned)m);
        window_kernel<<<grid, WINDOW_THREADS, smem, g->stream>>>(g->tasks, g->task_off, g->docs, g->imps, g->acc,
                                                                 g->n_docs, (uint32_t)q0, wdocs);
        CUDA_TRY_LAUNCH();
        return SPLADE_OK;
    }
    CUDA_TRY(cudaMemsetAsync(g->acc, 0, (size_t)m * g->n_docs * sizeof *g->acc, g->stream));
    if (t1 > t0) {
        scatter_kernel<<<(unsigned)(t1 - t0), SCATTER_THREADS, 0, g->stream>>>(g->tasks + t0, g->docs, g->imps, g->acc,
                                                                             g->n_docs, (uint32_t)q0);
        CUDA_TRY_LAUNCH();
    }
    return SPLADE_OK;
}

/* Queries [q0, q0 + m) into keys / counts (host, row stride k_out). */
static int run_chunk(splade_gpu_search *g, int q0, int m, const uint64_t *task_off, int k, int k_out,
                     uint64_t *keys, int *counts)
{
    int rc = accumulate(g, q0, m, task_off);
    if (rc < 0)
        return rc;
    select_kernel<<<m, SELECT_THREADS, 0, g->stream>>>(g->acc, g->n_docs, k, g->keys, g->begin, g->end);
    CUDA_TRY_LAUNCH();
    rc = sort_keys(g, m, k);
    if (rc < 0)
        return rc;
    CUDA_TRY(cudaMemcpy2DAsync(keys + (size_t)q0 * k_out, (size_t)k_out * sizeof *keys, g->sorted,
                               (size_t)k * sizeof *keys, (size_t)k * sizeof *keys, (size_t)m, cudaMemcpyDeviceToHost,
                               g->stream));
    CUDA_TRY(cudaMemcpyAsync(counts + q0, g->end, (size_t)m * sizeof *counts, cudaMemcpyDeviceToHost, g->stream));
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    for (int i = 0; i < m; i++)
        counts[q0 + i] -= i * k; /* end offsets -> counts */
    return SPLADE_OK;
}

extern "C" int splade_gpu_search_run(splade_gpu_search *g, int nq, const uint64_t *task_off,
                                     const splade_gpu_task *tasks, int k, uint64_t *keys, int *counts)
{
    if (!g || nq < 0 || nq > SPLADE_GPU_MAX_BATCH || k < 0 || (nq && (!task_off || !keys || !counts)))
        return splade_fail(SPLADE_ERR_INVALID_ARG, "splade_gpu_search_run: bad arguments (nq=%d, k=%d)", nq, k);
    for (int q = 0; q < nq; q++)
        counts[q] = 0;
    if (nq == 0 || k == 0 || g->n_docs == 0)
        return SPLADE_OK;
    CUDA_TRY(cudaSetDevice(g->device));
    const int ke = (uint32_t)k > g->n_docs ? (int)g->n_docs : k; /* no more can match */
    const size_t n_tasks = task_off[nq]; /* task_off[0] == 0 */
    int qc = 0;
    int rc = chunk_queries(g, nq, ke, &qc);
    if (rc == 0 && (size_t)qc * ke > INT_MAX)
        qc = (int)(INT_MAX / ke); /* the sort counts keys in an int */
    if (use_window(g) && qc > 65535)
        qc = 65535; /* the windowed kernel's grid.y */
    if (rc == 0)
        rc = reserve(g, nq, qc, ke, n_tasks);
    if (rc < 0)
        return rc;
    if (n_tasks)
        CUDA_TRY(cudaMemcpyAsync(g->tasks, tasks, n_tasks * sizeof *tasks, cudaMemcpyHostToDevice,
                                 g->stream));
    CUDA_TRY(cudaMemcpyAsync(g->task_off, task_off, ((size_t)nq + 1) * sizeof *task_off, cudaMemcpyHostToDevice,
                             g->stream));
    for (int q0 = 0; q0 < nq && rc == 0; q0 += qc) {
        const int m = nq - q0 < qc ? nq - q0 : qc;
        rc = run_chunk(g, q0, m, task_off, ke, k, keys, counts);
    }
    return rc;
}
