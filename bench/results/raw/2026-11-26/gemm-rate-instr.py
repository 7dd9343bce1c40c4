# instr.py TREE: per-call-site thread-CPU timers around splade_dnnl_unit_to (diagnostic only)
import sys
t=sys.argv[1]
p=t+'/src/encoder/gemm_dnnl.c'; s=open(p).read()
a='''int splade_dnnl_unit_to(const splade_dnnl_linear *l, const uint16_t *A, int32_t rows, int32_t p, float *dst,
                        int32_t ldd, int flags)
{
    splade_dnnl_thread *t'''
assert a in s
s=s.replace(a,'''#include <stdio.h>
#include <time.h>
static unsigned long long dbg_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}
int splade_dbg_site = 7;
static unsigned long long dbg_ns[8], dbg_flop[8];
void splade_dbg_reset(void) { memset(dbg_ns, 0, sizeof dbg_ns), memset(dbg_flop, 0, sizeof dbg_flop); }
__attribute__((destructor)) static void dbg_print(void)
{
    if (!getenv("SPLADE_DBG_GEMM"))
        return;
    static const char *nm[8] = {"Q", "K", "V", "O", "ffn-in", "ffn-out", "mlm", "head/other"};
    double tot = 0;
    for (int i = 0; i < 8; i++)
        tot += dbg_ns[i] / 1e6;
    fprintf(stderr, "dbg gemm total %.1f ms\\n", tot);
    for (int i = 0; i < 8; i++)
        if (dbg_ns[i])
            fprintf(stderr, "dbg gemm %s: %.1f ms, %.0f GF/s\\n", nm[i], dbg_ns[i] / 1e6, (double)dbg_flop[i] / dbg_ns[i]);
}
static int unit_to_(const splade_dnnl_linear *l, const uint16_t *A, int32_t rows, int32_t p, float *dst, int32_t ldd,
                    int flags);
int splade_dnnl_unit_to(const splade_dnnl_linear *l, const uint16_t *A, int32_t rows, int32_t p, float *dst,
                        int32_t ldd, int flags)
{
    unsigned long long t0 = dbg_now();
    int rc = unit_to_(l, A, rows, p, dst, ldd, flags);
    int k = splade_dbg_site;
    __atomic_fetch_add(&dbg_ns[k], dbg_now() - t0, __ATOMIC_RELAXED);
    __atomic_fetch_add(&dbg_flop[k], 2ull * rows * l->w.K * splade_dnnl_weights_width(&l->w, p), __ATOMIC_RELAXED);
    return rc;
}
static int unit_to_(const splade_dnnl_linear *l, const uint16_t *A, int32_t rows, int32_t p, float *dst, int32_t ldd,
                    int flags)
{
    splade_dnnl_thread *t''',1)
open(p,'w').write(s)
p=t+'/src/encoder/forward_cpu.c'; s=open(p).read()
for a,b in [('''            rc = rc ? rc : splade_dnnl_share_heads(qkv[i], w->xb, f->T, &o, PAD, tid, n);''','''            splade_dbg_site = i;
            rc = rc ? rc : splade_dnnl_share_heads(qkv[i], w->xb, f->T, &o, PAD, tid, n);'''),
('''    rc = rc ? rc : splade_dnnl_share_res(q->o,''','''    splade_dbg_site = 3;
    rc = rc ? rc : splade_dnnl_share_res(q->o,'''),
('''    rc = rc ? rc : splade_dnnl_share(q->ffn_in,''','''    splade_dbg_site = 4;
    rc = rc ? rc : splade_dnnl_share(q->ffn_in,'''),
('''    rc = rc ? rc : splade_dnnl_share_res(q->ffn_out,''','''    splade_dbg_site = 5;
    rc = rc ? rc : splade_dnnl_share_res(q->ffn_out,'''),
('''    int r = splade_dnnl_share(f->bf->mlm_dense, f->w->xb, f->T, f->w->q, NULL, SPLADE_DNNL_GELU | PAD, tid,
                              splade_team_size(t));''','''    splade_dbg_site = 6;
    int r = splade_dnnl_share(f->bf->mlm_dense, f->w->xb, f->T, f->w->q, NULL, SPLADE_DNNL_GELU | PAD, tid,
                              splade_team_size(t));
    splade_dbg_site = 7;'''),
('static int layer_bf16(','extern int splade_dbg_site;\nstatic int layer_bf16(')]:
    assert a in s, a[:50]
    s=s.replace(a,b,1)
open(p,'w').write(s)
p=t+'/bench/bench_encode_ids.c'; s=open(p).read()
a='''        if (b == 0)
            c0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);'''
assert a in s
s=s.replace(a,'''        if (b == 0)
            c0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID), splade_dbg_reset();''')
s=s.replace('static double clock_ms','void splade_dbg_reset(void);\nstatic double clock_ms',1)
open(p,'w').write(s)
print('ok')
