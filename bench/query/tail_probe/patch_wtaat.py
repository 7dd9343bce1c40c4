"""Writes an instrumented copy of src/query/wtaat.c for bench/query/tail_probe/probe.c (issue #14,
the latency tail): rdtsc time per phase (setup = terms' range bounds; ess = the essential terms;
nebound = the non-essential bounds and first candidates; ne = the non-essential terms; collect) and
work counters per window, in a global `wprof`; ORACLE: the probe may set `oracle_theta` (a k-th score
known in advance) to measure what a better early threshold would save. Anchored on the source text:
when wtaat.c changes, an assertion names the anchor to update.
  python3 patch_wtaat.py src/query/wtaat.c OUT.c"""
import sys
s=open(sys.argv[1]).read()
def rep(a,b,cnt=1):
    global s
    assert s.count(a)==cnt,(a,s.count(a)); s=s.replace(a,b)
rep('#define PRIME 4','''#ifndef PRIME
#define PRIME 4
#endif
#include <x86intrin.h>
struct wprof { uint64_t t_setup, t_wb, t_ess, t_nebound, t_ne, t_collect, win_scored, win_skipped, ranges_live, ranges_touched, ranges_scan, ne_sum, blk_ess, blk_ne, post_ess, post_ne, n_ranges, n_terms, n_dense, win_total, t_total; } wprof;
uint32_t oracle_theta;
#define T0 uint64_t _t = __rdtsc()
#define TACC(f) do { uint64_t _n = __rdtsc(); wprof.f += _n - _t; _t = _n; } while (0)''')
rep('''    if (!bound_live(t, w->wub[win], factor))
        return;
    uint64_t live = live_ranges(w, win, n_ranges, t, factor), touched = 0, scan;''','''    if (!bound_live(t, w->wub[win], factor)) { wprof.win_skipped++;
        return; }
    T0; wprof.win_scored++;
    uint64_t live = live_ranges(w, win, n_ranges, t, factor), touched = 0, scan;
    wprof.ranges_live += __builtin_popcountll(live);
    uint64_t b0 = s->stats.blocks_decoded, p0 = s->stats.postings_scored;''')
rep('''    scan = live & touched;
    if (ne > 0 && scan) {
        ne_bounds(w, ne, win, n_ranges);
        scan = candidates(w->acc, scan, w->ne_ub, t, factor);''','''    scan = live & touched;
    wprof.ne_sum += ne; wprof.blk_ess += s->stats.blocks_decoded - b0; wprof.post_ess += s->stats.postings_scored - p0;
    b0 = s->stats.blocks_decoded; p0 = s->stats.postings_scored;
    TACC(t_ess);
    if (ne > 0 && scan) {
        ne_bounds(w, ne, win, n_ranges);
        scan = candidates(w->acc, scan, w->ne_ub, t, factor);
        TACC(t_nebound);''')
rep('''    collect(s, base, s->seg->n_docs, scan, touched, t);
}''','''    TACC(t_ne);
    wprof.blk_ne += s->stats.blocks_decoded - b0; wprof.post_ne += s->stats.postings_scored - p0;
    wprof.ranges_touched += __builtin_popcountll(touched); wprof.ranges_scan += __builtin_popcountll(scan);
    collect(s, base, s->seg->n_docs, scan, touched, t);
    TACC(t_collect);
}''')
rep('''    struct splade_wtaat *w = scratch(s, n);
    if (!w)
        return -1;''','''    uint64_t _t0 = __rdtsc();
    struct splade_wtaat *w = scratch(s, n);
    if (!w)
        return -1;''')
rep('''    uint32_t n_win = window_bounds(w, n_ranges);''','''    uint32_t n_win = window_bounds(w, n_ranges);
    wprof.t_setup += __rdtsc() - _t0; wprof.n_ranges += n_ranges; wprof.n_terms += n; wprof.n_dense += w->n_dense; wprof.win_total += n_win;''')
rep('''            score_window(s, n, v, n_ranges, t, factor, scatter);
    }
    return 0;''','''            score_window(s, n, v, n_ranges, t, factor, scatter);
    }
    wprof.t_total += __rdtsc() - _t0;
    return 0;''')
rep('''static inline int bound_live(const topk *t, uint32_t bound, float factor)
{''','''static inline int bound_live(const topk *t, uint32_t bound, float factor)
{
    if (oracle_theta) { uint32_t th = t->n < t->k ? 0 : t->h[0].score; if (oracle_theta > th) th = oracle_theta; return bound >= th && bound > 0; }''')
open(sys.argv[2],'w').write(s)
