/* Kernel lab: the GPU encoder's packed variable-length attention, version by version (llm.c's
 * dev/cuda pattern): a float64 CPU reference, the numbered variants, a checker
 * (|out - ref| <= tol + |ref|·eps for every element, after the output was poisoned with NaN), a
 * launcher `switch`, and a main that validates every variant then times it (cudaEvent, warm-ups,
 * median). Build: `make lab` (build/lab/attention); history: tools/kernel_lab/README.md.
 *
 *   qkv bf16 [T, 3·H] (columns Q | K | V, head h at h·d in each third), T tokens of B sequences
 *   packed back to back; ctx[t, h·d + e] = softmax over the keys of t's own sequence of
 *   (q_t · k_j / sqrt(d)) applied to v_j. bf16 mma.sync m16n8k16 (sm_80+), fp32 accumulation.
 *
 *   1  4 warps, 64 query rows per block, K/V tiles of 64 rows double buffered (cp.async),
 *      grid (tiles, heads)                                   history (until commit ee4412a)
 *   2  8 warps, 128 query rows per block, a ring of 3-4 K/V stages all issued up front,
 *      ex2.approx softmax, 1-D head-fastest grid             library: src/encoder/gpu_attention.cu
 *
 *   attention [variant ...] [--B n --S n --heads n --d n] [--reps n] [--no-check] [--no-time]
 * No variant: both. No shape: bert-base (12 heads of 64) at B128 S256 and B32 S512, one layer.
 * Exit status 1 when a variant fails its check. */
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

/* Variant 2 is the library's kernel and launcher, compiled into this program as they are. */
#include "encoder/gpu_attention.cu"

/* The library records failures through splade_fail (src/common/fail.c); here they are printed. */
extern "C" int splade_fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "splade_fail(%d): ", status);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return status;
}

#define CK(call)                                                                                         \
    do {                                                                                                 \
        cudaError_t e_ = (call);                                                                         \
        if (e_ != cudaSuccess) {                                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));      \
            exit(2);                                                                                     \
        }                                                                                                \
    } while (0)

using splade_gpu::AttnTile;
using splade_gpu::bf16;
using splade_gpu::kAttnTile;

/* ---- v1 (device code; the helpers are the library's, from gpu_attention.cu) -------------------- */
namespace v1 {

using splade_gpu::cp_async_commit;
using splade_gpu::cp_async_wait;
using splade_gpu::ldsm_x4;
using splade_gpu::ldsm_x4_t;
using splade_gpu::mma16816;
using splade_gpu::pack_bf16;
using splade_gpu::smem_u32;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;

template <int D> constexpr size_t smem_bytes()
{
    return (size_t)5 * kAttnTile * (D + 8) * sizeof(bf16); // Q + 2 x (K, V)
}

/* Starts asynchronous copies of rows [r0, r0+64) of a head slice (row stride ld, D columns)
 * into smem (row stride D+8); rows at or past len are zero-filled (src-size 0). 16-byte copies. */
template <int D> __device__ __forceinline__ void load_tile_async(bf16 *dst, const bf16 *src, size_t ld, int r0, int len)
{
    constexpr int CPR = D / 8;
    constexpr int LDS = D + 8;
#pragma unroll
    for (int c = threadIdx.x; c < kAttnTile * CPR; c += kThreads) {
        const int r = c / CPR, cc = c % CPR;
        const bool ok = r0 + r < len;
        const bf16 *p = ok ? src + (size_t)(r0 + r) * ld + cc * 8 : src;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst + r * LDS + cc * 8)),
                     "l"(p), "r"(ok ? 16 : 0));
    }
}

/* One block of 4 warps per (query tile of 64 rows of one sequence, head); each warp owns 16 query
 * rows. K/V tiles of 64 rows stream through shared memory, double buffered (the next tile loads
 * while this one is used); scores stay in registers (online softmax with exp2f). */
template <int D>
__global__ void __launch_bounds__(kThreads, D >= 128 ? 2 : D >= 64 ? 3 : 4)
    attn_kernel(const bf16 *__restrict__ qkv, bf16 *__restrict__ ctx, const AttnTile *__restrict__ tiles, int hidden,
                float scale_log2)
{
    constexpr int LDS = D + 8;        // padded smem row: ldmatrix rows land in distinct banks
    constexpr int KS = D / 16;        // k-steps over the head dimension
    constexpr int DT = D / 8;         // n-tiles of the output
    constexpr int NT = kAttnTile / 8; // n-tiles of keys in a score tile
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16 *sQ = reinterpret_cast<bf16 *>(smem_raw);
    bf16 *sK0 = sQ + kAttnTile * LDS; // K/V double buffer: [K0 | V0 | K1 | V1]

    const AttnTile tile = tiles[blockIdx.x];
    const int head = blockIdx.y;
    const size_t ld = 3 * (size_t)hidden;
    const bf16 *qbase = qkv + (size_t)tile.start * ld + head * D;
    const bf16 *kbase = qbase + hidden;
    const bf16 *vbase = qbase + 2 * hidden;
    const int len = tile.len;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;

    // group 0: Q and the first K/V tile
    load_tile_async<D>(sQ, qbase, ld, tile.q0, len);
    load_tile_async<D>(sK0, kbase, ld, 0, len);
    load_tile_async<D>(sK0 + kAttnTile * LDS, vbase, ld, 0, len);
    cp_async_commit();

    uint32_t qf[KS][4];
    float o[DT][4];
#pragma unroll
    for (int i = 0; i < DT; i++)
        o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;

    for (int kt = 0, it = 0; kt < len; kt += kAttnTile, it++) {
        const bf16 *sK = sK0 + (it & 1) * 2 * kAttnTile * LDS;
        const bf16 *sV = sK + kAttnTile * LDS;
        if (kt + kAttnTile < len) { // prefetch the next tile into the other buffer
            bf16 *nK = sK0 + ((it + 1) & 1) * 2 * kAttnTile * LDS;
            load_tile_async<D>(nK, kbase, ld, kt + kAttnTile, len);
            load_tile_async<D>(nK + kAttnTile * LDS, vbase, ld, kt + kAttnTile, len);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        if (it == 0) {
#pragma unroll
            for (int ks = 0; ks < KS; ks++)
                ldsm_x4(qf[ks], sQ + (warp * 16 + (lane & 15)) * LDS + ks * 16 + (lane >> 4) * 8);
        }

        float s[NT][4];
#pragma unroll
        for (int i = 0; i < NT; i++)
            s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
#pragma unroll
        for (int ks = 0; ks < KS; ks++) {
#pragma unroll
            for (int nt = 0; nt < NT; nt += 2) {
                uint32_t b[4];
                ldsm_x4(b, sK + (nt * 8 + ((lane >> 4) << 3) + (lane & 7)) * LDS + ks * 16 + ((lane >> 3) & 1) * 8);
                mma16816(s[nt], qf[ks], b[0], b[1]);
                mma16816(s[nt + 1], qf[ks], b[2], b[3]);
            }
        }

        // scale into the log2 domain, mask keys past the end, online softmax
        const bool partial = kt + kAttnTile > len;
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float v = s[nt][e] * scale_log2;
                if (partial && kt + nt * 8 + 2 * t + (e & 1) >= len)
                    v = -INFINITY;
                s[nt][e] = v;
            }
            mx0 = fmaxf(mx0, fmaxf(s[nt][0], s[nt][1]));
            mx1 = fmaxf(mx1, fmaxf(s[nt][2], s[nt][3]));
        }
#pragma unroll
        for (int off = 1; off <= 2; off <<= 1) {
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
        }
        const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1); // finite: key kt is always valid
        const float a0 = exp2f(m0 - mn0), a1 = exp2f(m1 - mn1);   // 0 on the first tile
        m0 = mn0, m1 = mn1;
        float rs0 = 0.f, rs1 = 0.f;
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            s[nt][0] = exp2f(s[nt][0] - mn0);
            s[nt][1] = exp2f(s[nt][1] - mn0);
            s[nt][2] = exp2f(s[nt][2] - mn1);
            s[nt][3] = exp2f(s[nt][3] - mn1);
            rs0 += s[nt][0] + s[nt][1];
            rs1 += s[nt][2] + s[nt][3];
        }
        l0 = l0 * a0 + rs0; // per-lane partial sums; the 4 lanes of a row are reduced at the end
        l1 = l1 * a1 + rs1;
#pragma unroll
        for (int i = 0; i < DT; i++) {
            o[i][0] *= a0, o[i][1] *= a0;
            o[i][2] *= a1, o[i][3] *= a1;
        }

        // O += P·V, P from the score accumulators (C layout of two n-tiles = A layout of one k-step)
#pragma unroll
        for (int j = 0; j < kAttnTile / 16; j++) {
            uint32_t a[4];
            a[0] = pack_bf16(s[2 * j][0], s[2 * j][1]);
            a[1] = pack_bf16(s[2 * j][2], s[2 * j][3]);
            a[2] = pack_bf16(s[2 * j + 1][0], s[2 * j + 1][1]);
            a[3] = pack_bf16(s[2 * j + 1][2], s[2 * j + 1][3]);
#pragma unroll
            for (int dt = 0; dt < DT; dt += 2) {
                uint32_t b[4];
                ldsm_x4_t(b, sV + (j * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * LDS + dt * 8 + (lane >> 4) * 8);
                mma16816(o[dt], a, b[0], b[1]);
                mma16816(o[dt + 1], a, b[2], b[3]);
            }
        }
        __syncthreads(); // the next iteration's prefetch refills the buffer just read
    }

#pragma unroll
    for (int off = 1; off <= 2; off <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, off);
        l1 += __shfl_xor_sync(0xffffffffu, l1, off);
    }
    const float inv0 = 1.f / l0, inv1 = 1.f / l1;
    const int r0 = tile.q0 + warp * 16 + g, r1 = r0 + 8;
    bf16 *out0 = ctx + (size_t)(tile.start + r0) * hidden + head * D + 2 * t;
    bf16 *out1 = ctx + (size_t)(tile.start + r1) * hidden + head * D + 2 * t;
#pragma unroll
    for (int dt = 0; dt < DT; dt++) {
        if (r0 < len)
            *reinterpret_cast<__nv_bfloat162 *>(out0 + dt * 8) = __floats2bfloat162_rn(o[dt][0] * inv0, o[dt][1] * inv0);
        if (r1 < len)
            *reinterpret_cast<__nv_bfloat162 *>(out1 + dt * 8) = __floats2bfloat162_rn(o[dt][2] * inv1, o[dt][3] * inv1);
    }
}

template <int D> void init() { CK(cudaFuncSetAttribute(attn_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_bytes<D>())); }

template <int D> void launch(const bf16 *qkv, bf16 *ctx, const AttnTile *tiles, int n_tiles, int heads)
{
    const float scale_log2 = (float)(1.4426950408889634 / sqrt((double)D));
    attn_kernel<D><<<dim3((unsigned)n_tiles, (unsigned)heads), kThreads, smem_bytes<D>()>>>(qkv, ctx, tiles, heads * D,
                                                                                           scale_log2);
}

} // namespace v1

/* ---- host -------------------------------------------------------------------------------------- */

static uint16_t f2bf(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}
static double bf2d(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}
static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static double urand() /* [-1, 1) */
{
    g_rng ^= g_rng >> 12, g_rng ^= g_rng << 25, g_rng ^= g_rng >> 27;
    return ((g_rng * 2685821657736338717ull) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* Query rows per tile of each variant: the q0 step of the tile list it reads. */
static int q_rows(int v) { return v == 1 ? kAttnTile : splade_gpu::attention_q_rows(); }

static std::vector<AttnTile> tile_list(const std::vector<int> &lens, int q)
{
    std::vector<AttnTile> t;
    int start = 0;
    for (int len : lens) {
        for (int q0 = 0; q0 < len; q0 += q)
            t.push_back(AttnTile{start, len, q0, 0});
        start += len;
    }
    return t;
}

/* The launcher: variant number -> kernel. */
static void run_variant(int v, const bf16 *qkv, bf16 *ctx, const AttnTile *tiles, int n_tiles, int heads, int d)
{
    if (v == 1) {
        if (d == 32)
            v1::launch<32>(qkv, ctx, tiles, n_tiles, heads);
        else if (d == 64)
            v1::launch<64>(qkv, ctx, tiles, n_tiles, heads);
        else
            v1::launch<128>(qkv, ctx, tiles, n_tiles, heads);
    } else if (splade_gpu::attention(qkv, ctx, tiles, n_tiles, heads, d, 0) != 0) {
        fprintf(stderr, "attention v2 failed\n");
        exit(2);
    }
    CK(cudaGetLastError());
}

struct Problem {
    int heads, d, T;
    std::vector<int> lens;
    bf16 *qkv = nullptr, *ctx = nullptr;
};

/* ctx in float64 from the bf16 qkv. */
static void cpu_reference(const std::vector<uint16_t> &qkv, const Problem &p, std::vector<double> &ref)
{
    const int H = p.heads * p.d;
    ref.assign((size_t)p.T * H, 0.0);
    std::vector<double> sc;
    int s0 = 0;
    for (int len : p.lens) {
        sc.resize(len);
        for (int h = 0; h < p.heads; h++)
            for (int i = 0; i < len; i++) {
                const uint16_t *q = &qkv[(size_t)(s0 + i) * 3 * H + h * p.d];
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < len; j++) {
                    const uint16_t *k = &qkv[(size_t)(s0 + j) * 3 * H + H + h * p.d];
                    double s = 0;
                    for (int e = 0; e < p.d; e++)
                        s += bf2d(q[e]) * bf2d(k[e]);
                    sc[j] = s / sqrt((double)p.d);
                    mx = std::max(mx, sc[j]);
                }
                for (int j = 0; j < len; j++)
                    sum += (sc[j] = exp(sc[j] - mx));
                for (int e = 0; e < p.d; e++) {
                    double o = 0;
                    for (int j = 0; j < len; j++)
                        o += sc[j] * bf2d(qkv[(size_t)(s0 + j) * 3 * H + 2 * H + h * p.d + e]);
                    ref[(size_t)(s0 + i) * H + h * p.d + e] = o / sum;
                }
            }
        s0 += len;
    }
}

/* Every element: |out - ref| <= tol + |ref|·eps (NaN fails: the output was poisoned first). */
static bool check(const char *name, const std::vector<uint16_t> &out, const std::vector<double> &ref, double tol,
                  double eps)
{
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < ref.size(); i++) {
        const double g = bf2d(out[i]), e = fabs(g - ref[i]);
        if (!(e <= tol + fabs(ref[i]) * eps)) {
            if (bad < 5)
                printf("      %s: ctx[%zu] = %.6g, reference %.6g\n", name, i, g, ref[i]);
            bad++;
        }
        if (e > worst || e != e)
            worst = e;
    }
    printf("    %-6s max |err| %.2e  %s (%zu of %zu outside %.0e + |ref|*%.0e)\n", name, worst, bad ? "FAIL" : "ok", bad,
           ref.size(), tol, eps);
    return bad == 0;
}

struct Case {
    int heads, d;
    std::vector<int> lens;
    const char *what;
};

static const Case kCases[] = {
    {4, 32, {2, 64, 37, 65, 1, 96, 128, 5}, "head size 32: lengths 1, 2 and tile edges"},
    {2, 64, {130, 2, 17, 63, 64, 129, 3}, "head size 64"},
    {2, 128, {80, 2, 33, 79, 191}, "head size 128 (3 K/V stages in v2)"},
    {2, 64, {512, 3, 300, 257}, "sequences longer than v2's ring of K/V stages (refills)"},
};

static bool validate(const std::vector<int> &variants)
{
    bool ok = true;
    for (const Case &c : kCases) {
        Problem p;
        p.heads = c.heads, p.d = c.d, p.lens = c.lens, p.T = 0;
        for (int len : c.lens)
            p.T += len;
        const int H = p.heads * p.d;
        std::vector<uint16_t> qkv((size_t)p.T * 3 * H), out((size_t)p.T * H);
        for (auto &x : qkv)
            x = f2bf((float)(1.7 * urand())); /* std ~1: scores of std ~1 after 1/sqrt(d) */
        std::vector<double> ref;
        cpu_reference(qkv, p, ref);
        CK(cudaMalloc(&p.qkv, qkv.size() * 2));
        CK(cudaMalloc(&p.ctx, out.size() * 2));
        CK(cudaMemcpy(p.qkv, qkv.data(), qkv.size() * 2, cudaMemcpyHostToDevice));
        printf("  heads %d x %d, %zu sequences, T=%d: %s\n", p.heads, p.d, p.lens.size(), p.T, c.what);
        for (int v : variants) {
            const std::vector<AttnTile> tl = tile_list(p.lens, q_rows(v));
            AttnTile *dt = nullptr;
            CK(cudaMalloc(&dt, tl.size() * sizeof(AttnTile)));
            CK(cudaMemcpy(dt, tl.data(), tl.size() * sizeof(AttnTile), cudaMemcpyHostToDevice));
            CK(cudaMemset(p.ctx, 0xff, out.size() * 2)); /* NaN: every element must be written */
            run_variant(v, p.qkv, p.ctx, dt, (int)tl.size(), p.heads, p.d);
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(out.data(), p.ctx, out.size() * 2, cudaMemcpyDeviceToHost));
            char name[8];
            snprintf(name, sizeof name, "v%d", v);
            /* P rounded to bf16 for P·V and the bf16 output: a few 2^-9 of the value */
            ok &= check(name, out, ref, 1e-2, 2e-2);
            CK(cudaFree(dt));
        }
        CK(cudaFree(p.qkv));
        CK(cudaFree(p.ctx));
    }
    return ok;
}

__global__ void fill_kernel(bf16 *x, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        x[i] = __float2bfloat16(((h & 0xffffff) * (1.f / 16777216.f) - 0.5f) * 3.4f);
    }
}

static void time_shape(const std::vector<int> &variants, int B, int S, int heads, int d, int reps)
{
    const int H = heads * d, T = B * S;
    bf16 *qkv, *ctx;
    CK(cudaMalloc(&qkv, (size_t)T * 3 * H * 2));
    CK(cudaMalloc(&ctx, (size_t)T * H * 2));
    fill_kernel<<<1024, 256>>>(qkv, (size_t)T * 3 * H, 7);
    const std::vector<int> lens(B, S);
    /* QK^T and P·V: 4·B·S²·H FLOPs */
    const double gflop = 4.0 * B * (double)S * S * H / 1e9;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int v : variants) {
        const std::vector<AttnTile> tl = tile_list(lens, q_rows(v));
        AttnTile *dt = nullptr;
        CK(cudaMalloc(&dt, tl.size() * sizeof(AttnTile)));
        CK(cudaMemcpy(dt, tl.data(), tl.size() * sizeof(AttnTile), cudaMemcpyHostToDevice));
        std::vector<float> ms;
        for (int r = 0; r < reps + 3; r++) {
            CK(cudaEventRecord(e0));
            run_variant(v, qkv, ctx, dt, (int)tl.size(), heads, d);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float t;
            CK(cudaEventElapsedTime(&t, e0, e1));
            if (r >= 3)
                ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        const float med = ms[ms.size() / 2];
        printf("| %d | %d | %d x %d | v%d | %.4f | %.4f | %.0f |\n", B, S, heads, d, v, med, 12 * med, gflop / med);
        CK(cudaFree(dt));
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaFree(qkv));
    CK(cudaFree(ctx));
}

int main(int argc, char **argv)
{
    std::vector<int> variants;
    int B = 0, S = 0, heads = 12, d = 64, reps = 20, do_check = 1, do_time = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const bool val = i + 1 < argc;
        if (!strcmp(a, "--B") && val)
            B = atoi(argv[++i]);
        else if (!strcmp(a, "--S") && val)
            S = atoi(argv[++i]);
        else if (!strcmp(a, "--heads") && val)
            heads = atoi(argv[++i]);
        else if (!strcmp(a, "--d") && val)
            d = atoi(argv[++i]);
        else if (!strcmp(a, "--reps") && val)
            reps = std::max(1, atoi(argv[++i]));
        else if (!strcmp(a, "--no-check"))
            do_check = 0;
        else if (!strcmp(a, "--no-time"))
            do_time = 0;
        else if ((a[0] == '1' || a[0] == '2') && !a[1])
            variants.push_back(a[0] - '0');
        else {
            fprintf(stderr, "usage: %s [1|2 ...] [--B n --S n --heads n --d 32|64|128] [--reps n] [--no-check] "
                            "[--no-time]\n", argv[0]);
            return 2;
        }
    }
    if (d != 32 && d != 64 && d != 128) {
        fprintf(stderr, "attention: head size %d (32, 64 or 128)\n", d);
        return 2;
    }
    if (variants.empty())
        variants = {1, 2};
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("attention: no CUDA device\n");
        return 2;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("attention lab: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    for (int hd : {32, 64, 128})
        if (splade_gpu::attention_init(hd) != 0)
            return 2;
    v1::init<32>();
    v1::init<64>();
    v1::init<128>();
    bool ok = true;
    if (do_check) {
        printf("check: every output element against a float64 CPU reference (output poisoned with NaN first)\n");
        ok = validate(variants);
    }
    if (do_time) {
        printf("\ntiming: one layer, median of %d launches after 3 warm-ups (cudaEvent); x12 = bert-base's 12 "
               "layers; TFLOP/s = 4·B·S²·H / time\n\n| B | S | heads x d | variant | ms | ms x12 | TFLOP/s |\n"
               "|---|---|---|---|---|---|---|\n", reps);
        if (B > 0 && S > 0)
            time_shape(variants, B, S, heads, d, reps);
        else {
            time_shape(variants, 128, 256, 12, 64, reps);
            time_shape(variants, 32, 512, 12, 64, reps);
        }
    }
    printf("\nattention lab: %s\n", ok ? "all checked variants passed" : "CHECK FAILED");
    return ok ? 0 : 1;
}
