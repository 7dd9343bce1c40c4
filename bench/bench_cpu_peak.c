/* The processor's measured arithmetic peak per instruction family, so encoder rows read as a
 * fraction of the limit (bench/cpu_peer.py prints it beside them).
 *
 *   bench_cpu_peak [THREADS]      (pin with taskset; default 1 thread)
 *
 * Each kernel is a loop of independent accumulators (more chains than the instruction's latency
 * x throughput), run by THREADS threads at once for ~0.3 s; prints one JSON line of GFLOP/s
 * (int8: GOP/s, one multiply-add = 2 ops) summed over the threads. A family the CPU (or the
 * kernel: AMX needs arch_prctl permission) lacks is reported as null. Rates are per thread CPU
 * second (summed over threads): on a shared machine wall time would include waiting for a core.
 * "read_gbs": memory read bandwidth, GB/s summed over the threads, each streaming its own 256 MiB
 * (far past any cache) with 512-bit loads: the limit of a forward that streams its weights once per
 * call (a query's fp32 layers read 340 MB of bert-base weights). */
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

enum { ITERS = 1 << 20 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: the machine may be shared */
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define CHAINS 16
#define REP16(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

/* Each returns the operations done; the accumulators are summed into *sink so nothing is dead. */
__attribute__((target("avx2,fma"))) static double fma_ymm(float *sink)
{
#define D(i) __m256 a##i = _mm256_set1_ps((float)i);
    REP16(D)
#undef D
    const __m256 x = _mm256_set1_ps(0.999f), y = _mm256_set1_ps(1e-7f);
    for (long i = 0; i < ITERS; i++) {
#define F(i) a##i = _mm256_fmadd_ps(a##i, x, y);
        REP16(F)
#undef F
    }
#define S(i) +_mm256_cvtss_f32(a##i)
    *sink += 0 REP16(S);
#undef S
    return (double)ITERS * CHAINS * 8 * 2;
}

__attribute__((target("avx512f"))) static double fma_zmm(float *sink)
{
#define D(i) __m512 a##i = _mm512_set1_ps((float)i);
    REP16(D)
#undef D
    const __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(1e-7f);
    for (long i = 0; i < ITERS; i++) {
#define F(i) a##i = _mm512_fmadd_ps(a##i, x, y);
        REP16(F)
#undef F
    }
#define S(i) +_mm512_reduce_add_ps(a##i)
    *sink += 0 REP16(S);
#undef S
    return (double)ITERS * CHAINS * 16 * 2;
}

/* vdpbf16ps: 16 lanes x 2 bf16 products each = 64 FLOP per instruction. */
__attribute__((target("avx512f,avx512bf16"))) static double bf16_zmm(float *sink)
{
#define D(i) __m512 a##i = _mm512_set1_ps((float)i);
    REP16(D)
#undef D
    const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3380);
    for (long i = 0; i < ITERS; i++) {
#define F(i) a##i = _mm512_dpbf16_ps(a##i, x, y);
        REP16(F)
#undef F
    }
#define S(i) +_mm512_reduce_add_ps(a##i)
    *sink += 0 REP16(S);
#undef S
    return (double)ITERS * CHAINS * 16 * 2 * 2;
}

/* vpdpbusd: 16 lanes x 4 u8*s8 products = 128 ops per instruction. */
__attribute__((target("avx512f,avx512vnni"))) static double vnni_zmm(float *sink)
{
#define D(i) __m512i a##i = _mm512_set1_epi32(i);
    REP16(D)
#undef D
    const __m512i x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2);
    for (long i = 0; i < ITERS; i++) {
#define F(i) a##i = _mm512_dpbusd_epi32(a##i, x, y);
        REP16(F)
#undef F
    }
#define S(i) +_mm512_reduce_add_epi32(a##i)
    *sink += (float)(0 REP16(S));
#undef S
    return (double)ITERS * CHAINS * 16 * 4 * 2;
}

/* AMX: 4 accumulator tiles (C 16x16 fp32/int32) against 2 A and 2 B tiles kept in registers:
 * tdpbf16ps = 16*16*32*2 FLOP, tdpbusd = 16*16*64*2 ops per instruction. */
typedef struct {
    uint8_t palette, start_row, pad[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_cfg;

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static int amx_permitted(void) { return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0; }

__attribute__((target("amx-tile,amx-bf16,amx-int8"))) static double amx(int int8, float *sink)
{
    tile_cfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; t++)
        c.colsb[t] = 64, c.rows[t] = 16;
    _tile_loadconfig(&c);
    static char buf[16 * 64] __attribute__((aligned(64)));
    memset(buf, 1, sizeof buf);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, buf, 64);
    _tile_loadd(5, buf, 64);
    _tile_loadd(6, buf, 64);
    _tile_loadd(7, buf, 64);
    const long n = ITERS / 16;
    for (long i = 0; i < n; i++) {
        if (int8) {
            _tile_dpbusd(0, 4, 6);
            _tile_dpbusd(1, 4, 7);
            _tile_dpbusd(2, 5, 6);
            _tile_dpbusd(3, 5, 7);
        } else {
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
        }
    }
    _tile_stored(0, buf, 64);
    _tile_release();
    *sink += buf[0];
    return (double)n * 4 * 16 * 16 * (int8 ? 64 : 32) * 2;
}

/* Sums a 256 MiB buffer (allocated and touched once per thread) in 512-bit loads; returns bytes. */
__attribute__((target("avx512f"))) static double read_stream(float **buf, float *sink)
{
    const size_t n = (size_t)64 << 20; /* floats: 256 MiB */
    if (!*buf) {
        *buf = aligned_alloc(64, n * sizeof **buf);
        if (!*buf)
            return 0.0;
        memset(*buf, 1, n * sizeof **buf);
    }
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < n; i += 64) {
        a0 = _mm512_add_ps(a0, _mm512_load_ps(*buf + i));
        a1 = _mm512_add_ps(a1, _mm512_load_ps(*buf + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_load_ps(*buf + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_load_ps(*buf + i + 48));
    }
    *sink += _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    return (double)n * sizeof **buf;
}

typedef struct {
    int kind;
    double ops, secs;
    float sink;
} job;

static void *worker(void *p)
{
    job *j = p;
    if (j->kind >= 5 && !amx_permitted())
        return NULL;
    float *buf = NULL;
    if (j->kind == 7) /* the first pass allocates and touches the buffer: not timed */
        read_stream(&buf, &j->sink);
    double t0 = now_s(), ops = 0.0;
    do {
        switch (j->kind) {
        case 0: ops += fma_ymm(&j->sink); break;
        case 1: ops += fma_zmm(&j->sink); break;
        case 2: ops += bf16_zmm(&j->sink); break;
        case 3: ops += vnni_zmm(&j->sink); break;
        case 5: ops += amx(0, &j->sink); break;
        case 6: ops += amx(1, &j->sink); break;
        case 7: ops += buf ? read_stream(&buf, &j->sink) : 0.0; break;
        }
    } while (now_s() - t0 < 0.3);
    j->ops = ops, j->secs = now_s() - t0;
    free(buf);
    return NULL;
}

static void run(const char *name, int kind, int ok, int threads, int first)
{
    printf("%s\"%s\": ", first ? "" : ", ", name);
    if (!ok) {
        printf("null");
        return;
    }
    pthread_t t[64];
    job j[64];
    for (int i = 0; i < threads; i++) {
        memset(&j[i], 0, sizeof j[i]);
        j[i].kind = kind;
        pthread_create(&t[i], NULL, worker, &j[i]);
    }
    double g = 0.0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        if (j[i].secs > 0)
            g += j[i].ops / j[i].secs / 1e9;
    }
    if (g > 0)
        printf("%.1f", g);
    else
        printf("null");
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    threads = threads < 1 ? 1 : threads > 64 ? 64 : threads;
    __builtin_cpu_init();
    printf("{\"threads\": %d, ", threads);
    run("fp32_avx2_fma", 0, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"), threads, 1);
    run("fp32_avx512_fma", 1, __builtin_cpu_supports("avx512f"), threads, 0);
    run("bf16_avx512_dpbf16", 2, __builtin_cpu_supports("avx512bf16"), threads, 0);
    run("int8_avx512_vnni", 3, __builtin_cpu_supports("avx512vnni"), threads, 0);
    run("bf16_amx", 5, __builtin_cpu_supports("amx-bf16"), threads, 0);
    run("int8_amx", 6, __builtin_cpu_supports("amx-int8"), threads, 0);
    run("read_gbs", 7, __builtin_cpu_supports("avx512f"), threads, 0);
    printf("}\n");
    return 0;
}
#else
int main(void)
{
    printf("{}\n");
    return 0;
}
#endif
