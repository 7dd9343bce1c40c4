/* The SPLADE LM head on the GPU: dispatch, planning, and the fused kernels' launch.
 * Kernels: lmhead_mma.cuh (mma.sync, sm_80+), lmhead_tma.cuh (v7: TMA + wgmma, sm_90a, the
 * default on Hopper when H's extent is known) and lmhead_wgmma.cuh (v5: cp.async + wgmma, the
 * Hopper fallback when it is not, or D < 64). Earlier versions: tools/kernel_lab/lmhead_fused.cu.
 * Design notes and measurements: docs/LMHEAD.md. */
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>

#include <pthread.h>

#include <cuda.h>
#include <cudaTypedefs.h> /* PFN_cuTensorMapEncodeTiled */
#include <cuda_runtime.h>

#include "common/fail.h"
#include "common/settings.h"
#include "gpu/cuda_check.h"
#include "lmhead_fused/lmhead_common.cuh"
#include "lmhead_fused/lmhead_internal.cuh"
#include "lmhead_fused/lmhead_mma.cuh"
#include "lmhead_fused/lmhead_tma.cuh"
#include "lmhead_fused/lmhead_wgmma.cuh"
#include "splade.h"
#include "lmhead_fused/lmhead.h"

using namespace splade_lm;

namespace {

struct DevInfo {
    int sms, major, wgmma, mma_blocks, l2;
    int tma; /* the TMA kernel can run: wgmma code present and cuTensorMapEncodeTiled found */
};

/* The wgmma tiles (vocabulary rows x hidden rows) and their kernels. */
enum WgTile { WG_128x256 = 0, WG_192x256 = 1, WG_256x128 = 2, WG_192x256_PACK2 = 3, TMA_128x256 = 4, TMA_256x128 = 5 };
constexpr int kTileBM[] = {128, 192, 256, 192, 128, 256}, kTileBN[] = {256, 256, 128, 256, 256, 128};

/* The driver's tensor-map encoder, fetched through the runtime so that no -lcuda is needed. */
PFN_cuTensorMapEncodeTiled_v12000 g_encode_tiled = nullptr;
pthread_once_t g_encode_once = PTHREAD_ONCE_INIT;

void look_up_encoder()
{
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !fn) {
        cudaGetLastError();
        return;
    }
    g_encode_tiled = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
}

int find_encoder()
{
    pthread_once(&g_encode_once, look_up_encoder);
    return g_encode_tiled != nullptr;
}

/* A [rows, cols] bf16 row-major matrix as a 2-D tensor map with boxes of 64 columns x box_rows,
 * 128B-swizzled (the layout the wgmma descriptors read); out-of-range elements read as zero. */
int encode_map(CUtensorMap *m, const void *base, int64_t rows, int64_t cols, int box_rows)
{
    cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    cuuint64_t strides[1] = {(cuuint64_t)cols * 2};
    cuuint32_t box[2] = {64, (cuuint32_t)box_rows};
    cuuint32_t estr[2] = {1, 1};
    CUresult r = g_encode_tiled(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(base), dims, strides, box,
                                estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return splade_fail(SPLADE_ERR_CUDA, "lmhead: cuTensorMapEncodeTiled failed (CUresult %d) for a %lld x %lld "
                           "matrix, box 64 x %d", (int)r, (long long)rows, (long long)cols, box_rows);
    return SPLADE_OK;
}

template <int WGM, int BN> int tma_set_smem()
{
    CUDA_TRY(cudaFuncSetAttribute(lmhead_tma_kernel<WGM, BN>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  TmaCfg<WGM, BN>::SMEM));
    return SPLADE_OK;
}

/* The last tensor map built per (matrix role, tile), per host thread: W, and H in a loop over
 * batches of one size, repeat their (base, rows, cols, box), and an encode costs microseconds. */
struct MapCache {
    const void *base = nullptr;
    int64_t rows = 0, cols = 0;
    int box = 0;
    CUtensorMap map;
};

int cached_map(MapCache &c, const void *base, int64_t rows, int64_t cols, int box_rows, const CUtensorMap **out)
{
    if (c.base != base || c.rows != rows || c.cols != cols || c.box != box_rows) {
        c.base = nullptr;
        int st = encode_map(&c.map, base, rows, cols, box_rows);
        if (st)
            return st;
        c.base = base;
        c.rows = rows;
        c.cols = cols;
        c.box = box_rows;
    }
    *out = &c.map;
    return SPLADE_OK;
}

template <int WGM, int BN> int tma_launch(int grid, const Problem &pr, int32_t H_rows, cudaStream_t stream)
{
    using C = TmaCfg<WGM, BN>;
    static thread_local MapCache cw, ch;
    const CUtensorMap *mw, *mh;
    int st;
    if ((st = cached_map(cw, pr.W, pr.V, pr.D, C::BM, &mw)) || (st = cached_map(ch, pr.H, H_rows, pr.D, BN, &mh)))
        return st;
    lmhead_tma_kernel<WGM, BN><<<grid, C::THREADS, C::SMEM, stream>>>(*mw, *mh, pr);
    return SPLADE_OK;
}

/* SPLADE_LMHEAD_TMA=0 turns the TMA kernel (v7) off: v5 as before. */
int tma_choice()
{
    return splade_settings_get()->lmhead_tma;
}
template <int NWG, int WGM, int BN, bool PACK2 = false> int wg_set_smem()
{
    CUDA_TRY(cudaFuncSetAttribute(lmhead_wgmma_kernel<NWG, WGM, BN, PACK2>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  WgCfg<NWG, WGM, BN>::SMEM));
    return SPLADE_OK;
}
template <int NWG, int WGM, int BN, bool PACK2 = false> void wg_launch(int grid, const Problem &pr, cudaStream_t stream)
{
    using C = WgCfg<NWG, WGM, BN>;
    lmhead_wgmma_kernel<NWG, WGM, BN, PACK2><<<grid, C::THREADS, C::SMEM, stream>>>(pr);
}

/* What the planner needs of a device, filled once per device (pthread_once: encoders on several
 * threads may plan at the same time). A failure is kept too: the device cannot run the head. */
struct DevSlot {
    pthread_once_t once = PTHREAD_ONCE_INIT;
    int rc = 0;
    char err[512] = {};
    DevInfo info{};
};
DevSlot g_dev[64];
thread_local int t_filling; /* the device fill_slot fills: pthread_once runs it on this thread */

int fill_dev_info(int dev, DevInfo *out)
{
    DevInfo t{};
    CUDA_TRY(cudaDeviceGetAttribute(&t.sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_TRY(cudaDeviceGetAttribute(&t.major, cudaDevAttrComputeCapabilityMajor, dev));
    if (t.major < 8)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "lmhead: device %d has compute capability %d.x; "
                           "the fused head needs 8.0+ (bf16 tensor cores)", dev, t.major);
    if (int rc = splade_wg::present(&t.wgmma))
        return rc;
    CUDA_TRY(cudaFuncSetAttribute(lmhead_mma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, MMA_SMEM));
    CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&t.mma_blocks, lmhead_mma_kernel, MMA_THREADS,
                                                           MMA_SMEM));
    if (t.mma_blocks < 1)
        t.mma_blocks = 1;
    CUDA_TRY(cudaDeviceGetAttribute(&t.l2, cudaDevAttrL2CacheSize, dev));
    if (t.wgmma) {
        t.tma = find_encoder();
        int st;
        if (t.tma && ((st = tma_set_smem<1, 256>()) || (st = tma_set_smem<2, 128>())))
            return st;
        if ((st = wg_set_smem<2, 1, 256>()) || (st = wg_set_smem<3, 1, 256>()) || (st = wg_set_smem<2, 2, 128>()) ||
            (st = wg_set_smem<3, 1, 256, true>()))
            return st;
    }
    *out = t;
    return SPLADE_OK;
}

void fill_slot()
{
    DevSlot *s = &g_dev[t_filling];
    s->rc = fill_dev_info(t_filling, &s->info);
    if (s->rc)
        snprintf(s->err, sizeof s->err, "%s", splade_error_detail());
}

int dev_info(DevInfo **out)
{
    int dev = 0;
    CUDA_TRY(cudaGetDevice(&dev));
    if (dev < 0 || dev >= 64)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "lmhead: device index %d out of range", dev);
    t_filling = dev;
    pthread_once(&g_dev[dev].once, fill_slot);
    if (g_dev[dev].rc)
        return splade_fail(g_dev[dev].rc, "%s", g_dev[dev].err);
    *out = &g_dev[dev].info;
    return SPLADE_OK;
}

int cdiv(int a, int b) { return (a + b - 1) / b; }

/* The wgmma tile for these arguments: v7 (TMA, 256x128) when H's extent is known, else 192x256 (two
 * sequences of <= 128 tokens to a 256-row tile: PACK2). SPLADE_LMHEAD_WGMMA_TILE overrides
 * (benchmarks). -1 with the error recorded when the override cannot apply. */
int pick_wgmma_tile(const DevInfo *di, const splade_lmhead_args *a)
{
    const int L = a->max_len > 0 ? a->max_len : 1;
    /* v7 (TMA) needs H's extent for its tensor map and at least one 64-column box of D */
    const int tma = di->tma && tma_choice() && a->H_rows > 0 && a->D >= 64;
    /* v7: 256x128 measured faster than 128x256 at every benchmark shape (S = 128 .. 512,
     * V = 30522 and 250002; bench/results/lmhead-2026-11-22.md), so it is the only default;
     * without TMA, 192x256 (3 consumer warpgroups) moves the fewest L2 bytes per FLOP */
    int tile = tma ? TMA_256x128 : L <= 128 ? WG_192x256_PACK2 : WG_192x256;
    const char *env = splade_settings_get()->lmhead_wgmma_tile; /* $SPLADE_LMHEAD_WGMMA_TILE */
    if (env && !strcmp(env, "128x256"))
        tile = tma ? TMA_128x256 : WG_128x256;
    else if (env && !strcmp(env, "192x256"))
        tile = WG_192x256;
    else if (env && !strcmp(env, "256x128"))
        tile = tma ? TMA_256x128 : WG_256x128;
    else if (env && !strcmp(env, "192x256p2")) {
        if (L > 128)
            return splade_fail(SPLADE_ERR_UNSUPPORTED, "lmhead: tile 192x256p2 needs max_len <= 128"), -1;
        tile = WG_192x256_PACK2;
    }
    return tile;
}

/* Slices per sequence: the split that fills the last wave of the persistent grid best (`base`
 * units per slice, ntmax row tiles per sequence, `slots` resident blocks). Splitting costs a memset
 * and atomics, so a split must buy at least 2%. *tps: row tiles per slice. */
int best_split(long long base, int ntmax, int slots, int *tps_out)
{
    int best = 1, best_tps = ntmax;
    double best_eff = 0;
    for (int ns = 1; ns <= ntmax; ns++) {
        const int tps = cdiv(ntmax, ns), nsr = cdiv(ntmax, tps);
        if (nsr != ns)
            continue;
        const long long units = base * ns;
        const double waves = (double)((units + slots - 1) / slots);
        const double eff = (double)base * ntmax / (waves * slots * tps);
        if (eff > best_eff * (ns == 1 ? 1.0 : 1.02)) {
            best_eff = eff;
            best = ns;
            best_tps = tps;
        }
    }
    *tps_out = best_tps;
    return best;
}

/* Raster group: sequences (PACK2: pairs) whose H tiles fill about a quarter of L2, so that a
 * vocabulary sweep finds them there; $SPLADE_LMHEAD_GROUP overrides (tests, benchmarks). */
int raster_group(const DevInfo *di, const splade_lmhead_args *a, int ntmax, int bn, int pack2)
{
    const double seq_bytes = (double)ntmax * bn * a->D * 2;
    int group = (int)((di->l2 > 0 ? di->l2 / 4.0 : 12e6) / seq_bytes);
    if (splade_settings_get()->lmhead_group > 0)
        group = splade_settings_get()->lmhead_group;
    const int nitems = pack2 ? (a->B + 1) / 2 : a->B;
    return group < 1 ? 1 : group > nitems ? nitems : group;
}

void fill_problem(const splade_lmhead_args *a, const splade_lmhead_plan *pl, int tps, int nvt, Problem *pr)
{
    pr->H = static_cast<const __nv_bfloat16 *>(a->H);
    pr->seq_start = a->seq_start;
    pr->seq_len = a->seq_len;
    pr->W = static_cast<const __nv_bfloat16 *>(a->W);
    pr->bias = a->bias;
    pr->out = a->out;
    pr->B = a->B;
    pr->D = a->D;
    pr->V = a->V;
    pr->KC = cdiv(a->D, BK);
    pr->nsplit = pl->nsplit;
    pr->tps = tps;
    pr->nunits = pl->units;
    pr->atomic_out = pl->nsplit > 1;
    pr->act2 = a->activation == 1;
    pr->group = pl->group;
    pr->nvt = nvt;
}

/* Chooses the kernel, tile, sequence split and raster group (pl), and the kernel's arguments (pr,
 * may be NULL). */
int make_plan(splade_fused_path want, const splade_lmhead_args *a, splade_lmhead_plan *pl, Problem *pr)
{
    DevInfo *di;
    int st = dev_info(&di);
    if (st)
        return st;
    splade_fused_path path = want;
    if (path == SPLADE_FUSED_AUTO)
        path = di->wgmma ? SPLADE_FUSED_WGMMA : SPLADE_FUSED_MMA_SYNC;
    if (path == SPLADE_FUSED_WGMMA && !di->wgmma)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "lmhead: wgmma path needs a compute-capability 9.0 device "
                           "and a build with sm_90a code");
    int bm = MMA_BM, bn = MMA_BN, slots = di->sms * di->mma_blocks, tile = -1;
    if (path == SPLADE_FUSED_WGMMA) {
        if ((tile = pick_wgmma_tile(di, a)) < 0)
            return SPLADE_ERR_UNSUPPORTED;
        bm = kTileBM[tile];
        bn = kTileBN[tile];
        slots = di->sms;
    }
    const int pack2 = tile == WG_192x256_PACK2;
    const int nvt = cdiv(a->V, bm);
    const int ntmax = (a->max_len > 0 && !pack2) ? cdiv(a->max_len, bn) : 1;
    const long long base = (long long)nvt * (pack2 ? (a->B + 1) / 2 : a->B); /* units per slice */
    int tps;
    const int split = best_split(base, ntmax, slots, &tps);
    const long long units = base * split;
    if (units > INT32_MAX)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "lmhead: %lld work units overflow", units);
    pl->path = path;
    pl->bm = bm;
    pl->bn = bn;
    pl->nsplit = split;
    pl->units = (int32_t)units;
    pl->grid = units < 1 ? 1 : (int32_t)(units < slots ? units : slots);
    pl->launches = split > 1 ? 2 : 1;
    pl->tile = tile;
    pl->group = raster_group(di, a, ntmax, bn, pack2);
    if (pr)
        fill_problem(a, pl, tps, nvt, pr);
    return SPLADE_OK;
}

int fused_run(splade_fused_path want, const splade_lmhead_args *a, cudaStream_t stream)
{
    splade_lmhead_plan pl;
    Problem pr;
    int st = make_plan(want, a, &pl, &pr);
    if (st)
        return st;
    if (pr.atomic_out)
        CUDA_TRY(cudaMemsetAsync(a->out, 0, sizeof(float) * (size_t)a->B * a->V, stream));
    if (pl.path == SPLADE_FUSED_WGMMA) {
        if (pl.tile == TMA_128x256 || pl.tile == TMA_256x128) {
            st = pl.tile == TMA_128x256 ? tma_launch<1, 256>(pl.grid, pr, a->H_rows, stream)
                                        : tma_launch<2, 128>(pl.grid, pr, a->H_rows, stream);
            if (st)
                return st;
        } else if (pl.tile == WG_128x256)
            wg_launch<2, 1, 256>(pl.grid, pr, stream);
        else if (pl.tile == WG_192x256)
            wg_launch<3, 1, 256>(pl.grid, pr, stream);
        else if (pl.tile == WG_192x256_PACK2)
            wg_launch<3, 1, 256, true>(pl.grid, pr, stream);
        else
            wg_launch<2, 2, 128>(pl.grid, pr, stream);
    } else {
        lmhead_mma_kernel<<<pl.grid, MMA_THREADS, MMA_SMEM, stream>>>(pr);
    }
    CUDA_TRY_LAUNCH();
    return SPLADE_OK;
}

} // namespace

int splade_lmhead_check_args(const splade_lmhead_args *a)
{
    if (!a)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "lmhead: args is NULL");
    if (!a->H || !a->seq_start || !a->seq_len || !a->W || !a->bias || !a->out)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "lmhead: a device pointer (H, seq_start, seq_len, W, bias, out) "
                           "is NULL");
    if (a->B < 1 || a->V < 1 || a->D < 1 || a->max_len < 0)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "lmhead: B=%d V=%d D=%d max_len=%d (need B,V,D >= 1, "
                           "max_len >= 0)", a->B, a->V, a->D, a->max_len);
    if (a->D % 8 != 0)
        return splade_fail(SPLADE_ERR_UNSUPPORTED, "lmhead: D=%d must be a multiple of 8 (16-byte rows)", a->D);
    if (((uintptr_t)a->H | (uintptr_t)a->W) % 16 != 0)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "lmhead: H and W must be 16-byte aligned");
    return SPLADE_OK;
}

extern "C" size_t splade_lmhead_workspace_bytes(splade_lmhead_kind kind, const splade_lmhead_args *a)
{
    if (!a || kind != SPLADE_LMHEAD_NAIVE)
        return 0;
    return splade_lmhead_naive_workspace(a);
}

extern "C" int splade_lmhead_fused_plan(splade_fused_path path, const splade_lmhead_args *a,
                                        splade_lmhead_plan *plan)
{
    int st = splade_lmhead_check_args(a);
    if (st)
        return st;
    if (!plan)
        return splade_fail(SPLADE_ERR_INVALID_ARG, "lmhead: plan is NULL");
    return make_plan(path, a, plan, nullptr);
}

extern "C" int splade_lmhead_gpu_fused(splade_fused_path path, const splade_lmhead_args *a, void *stream)
{
    int st = splade_lmhead_check_args(a);
    if (st)
        return st;
    return fused_run(path, a, static_cast<cudaStream_t>(stream));
}

extern "C" int splade_lmhead_gpu(splade_lmhead_kind kind, const splade_lmhead_args *a, void *workspace,
                                 size_t workspace_bytes, void *cublas_handle, void *stream)
{
    int st = splade_lmhead_check_args(a);
    if (st)
        return st;
    if (kind == SPLADE_LMHEAD_FUSED)
        return fused_run(SPLADE_FUSED_AUTO, a, static_cast<cudaStream_t>(stream));
    if (kind == SPLADE_LMHEAD_NAIVE)
        return splade_lmhead_naive_run(a, workspace, workspace_bytes, cublas_handle, stream);
    return splade_fail(SPLADE_ERR_INVALID_ARG, "lmhead: unknown kind %d", (int)kind);
}
