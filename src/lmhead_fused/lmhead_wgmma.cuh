/* Fused LM head, Hopper path (sm_90a): wgmma.mma_async bf16 -> fp32, both operands from
 * 128B-swizzled shared memory, fed by a STAGES-deep cp.async pipeline run by all threads.
 *
 * Roles: A = a tile of W (vocabulary rows are wgmma's M), B = a tile of H (hidden rows are
 * wgmma's N), so the max over hidden rows is a max along each thread's accumulator columns
 * plus two shuffles in a quad — no shared-memory pass. Two warpgroups; each owns WGM x 64
 * vocabulary rows and all BN hidden rows: tiles 128 x 256 (WGM=1, BN=256) or 256 x 128
 * (WGM=2, BN=128, for sequences of <= 128 tokens). 128 fp32 accumulators a thread either way.
 *
 * Pipeline per K chunk c: wait for chunk c's copies, fence.proxy.async (cp.async writes are
 * generic-proxy, wgmma reads async-proxy), __syncthreads, 4 k16 steps of wgmma, commit, then
 * issue the copies of chunk c+STAGES-2 into the slot chunk c-2 used (every warpgroup finished
 * it: its wgmma.wait_group 1 ran before the barrier), then wait_group 1 (one group in flight).
 * Accumulators fold into the running max after wait_group 0 at the end of each row tile. */
#ifndef SPLADE_LMHEAD_WGMMA_CUH
#define SPLADE_LMHEAD_WGMMA_CUH

#include "lmhead_fused/lmhead_common.cuh"

namespace splade_lm {

/* NWG consumer warpgroups (all threads also run the copies), each WGM x 64 vocabulary rows. */
template <int NWG, int WGM, int BN> struct WgCfg {
    static constexpr int THREADS = NWG * 128;
    static constexpr int BM = NWG * WGM * 64;
    static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE = A_BYTES + B_BYTES;
    static constexpr int STAGES = (227 * 1024 - 1024) / STAGE; /* 4 for 48 KB stages */
    static constexpr int SMEM = STAGES * STAGE + 1024;
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define SPLADE_WGMMA_ENABLED 1

/* Shared-memory matrix descriptor: K-major, 128B swizzle, 8-row atoms 1024 bytes apart. */
__device__ __forceinline__ uint64_t wg_desc(uint32_t saddr)
{
    uint64_t d = (uint64_t)((saddr & 0x3FFFF) >> 4);
    d |= (uint64_t)1 << 16;            /* leading byte offset (unused for swizzled K-major) */
    d |= (uint64_t)(1024 >> 4) << 32;  /* stride byte offset: next 8-row atom */
    d |= (uint64_t)1 << 62;            /* SWIZZLE_128B */
    return d;
}
__device__ __forceinline__ void wg_arrive() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wg_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void fence_proxy_async()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void fence_regs(float (&d)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t da, uint64_t db, int scale_d)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t da, uint64_t db, int scale_d)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(scale_d));
}

template <int BN>
__device__ __forceinline__ void wgmma_tile(float (&d)[BN / 2], uint64_t da, uint64_t db, int scale_d)
{
    if constexpr (BN == 256)
        wgmma_m64n256k16(d, da, db, scale_d);
    else
        wgmma_m64n128k16(d, da, db, scale_d);
}

/* One K chunk (64 columns) of a warpgroup's tile, shared by v5 and v7 (and the kernel lab's v3, v4, v6): the warpgroup's WGM slices
 * of 64 W rows (A, at sA) times all BN H rows (B, at sB), 4 k16 steps, accumulating into d unless
 * kc == 0 (the first chunk of a row tile overwrites). Issued and committed as one group; the caller
 * waits (wgmma.wait_group) when it needs the smem slot or the accumulators. The register fences keep
 * the compiler from touching d while the asynchronous wgmma owns it. `under` runs right after the
 * commit, while the tensor cores work (v5 issues its next copies there). */
struct NoWork {
    __device__ __forceinline__ void operator()() const {}
};
template <int WGM, int BN, class Under = NoWork>
__device__ __forceinline__ void wg_mma_chunk(float (&d)[WGM][BN / 2], uint32_t sA, uint32_t sB, int wg, int kc,
                                             Under under = Under())
{
    const uint64_t db = wg_desc(sB);
#pragma unroll
    for (int m = 0; m < WGM; m++)
        fence_regs(d[m]);
    wg_arrive();
#pragma unroll
    for (int k = 0; k < 4; k++) {
#pragma unroll
        for (int m = 0; m < WGM; m++) {
            const uint64_t da = wg_desc(sA + (wg * WGM + m) * 64 * 128);
            wgmma_tile<BN>(d[m], da + 2 * k, db + 2 * k, (kc | k) != 0);
        }
    }
    wg_commit();
    under();
#pragma unroll
    for (int m = 0; m < WGM; m++)
        fence_regs(d[m]);
}
#endif

template <int NWG, int WGM, int BN, bool PACK2 = false>
__global__ void __launch_bounds__(NWG * 128, 1) lmhead_wgmma_kernel(const Problem p)
{
#ifdef SPLADE_WGMMA_ENABLED
    using C = WgCfg<NWG, WGM, BN>;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t smem = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wq = (tid >> 5) & 3;

    Loader<C::BM, BN, C::THREADS, PACK2> ld;
    ld.init(p);
#pragma unroll
    for (int s = 0; s < C::STAGES - 2; s++)
        ld.issue(p, smem + s * C::STAGE, smem + s * C::STAGE + C::A_BYTES);

    float d[WGM][BN / 2];
    int c = 0;
    for (int u = blockIdx.x; u < p.nunits; u += gridDim.x) {
        const Unit x = decode_unit<BN, PACK2>(p, u);
        float rm[WGM][2][2]; /* [m64 slice][sequence half (PACK2)][accumulator row] */
#pragma unroll
        for (int m = 0; m < WGM; m++)
            rm[m][0][0] = rm[m][0][1] = rm[m][1][0] = rm[m][1][1] = -INFINITY;
        for (int rt = x.t0; rt < x.t1; rt++) {
            for (int kc = 0; kc < p.KC; kc++, c++) {
                cp_async_wait<C::STAGES - 3>();
                fence_proxy_async();
                __syncthreads();
                const uint32_t sA = smem + (c % C::STAGES) * C::STAGE;
                /* copies of chunk c+STAGES-2 go out while the tensor cores run chunk c (issuing
                 * them before the wgmma left the tensor pipe idle for the address arithmetic) */
                const int ps = (c + C::STAGES - 2) % C::STAGES;
                wg_mma_chunk<WGM, BN>(d, sA, sA + C::A_BYTES, wg, kc,
                                      [&] { ld.issue(p, smem + ps * C::STAGE, smem + ps * C::STAGE + C::A_BYTES); });
                wg_wait<1>();
            }
            wg_wait<0>();
#pragma unroll
            for (int m = 0; m < WGM; m++) {
                fence_regs(d[m]);
#pragma unroll
                for (int i = 0; i < BN / 8; i++) {
                    const int h2 = (PACK2 && i >= BN / 16) ? 1 : 0; /* columns 8i..8i+7 */
                    rm[m][h2][0] = fmaxf(rm[m][h2][0], fmaxf(d[m][4 * i], d[m][4 * i + 1]));
                    rm[m][h2][1] = fmaxf(rm[m][h2][1], fmaxf(d[m][4 * i + 2], d[m][4 * i + 3]));
                }
            }
        }
#pragma unroll
        for (int h2 = 0; h2 < (PACK2 ? 2 : 1); h2++) {
            const int b = h2 ? x.b1 : x.b;
            const int len = h2 ? x.len1 : x.len;
#pragma unroll
            for (int m = 0; m < WGM; m++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    float v = rm[m][h2][h];
                    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
                    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
                    if (PACK2 && len <= 0)
                        v = -INFINITY; /* an empty sequence's half held zeros */
                    const int col = x.vt * C::BM + (wg * WGM + m) * 64 + wq * 16 + h * 8 + (lane >> 2);
                    if ((lane & 3) == 0 && col < p.V && b < p.B)
                        store_out(p, b, col, v);
                }
        }
    }
    cp_async_wait<0>();
#endif
}

} // namespace splade_lm

#endif
