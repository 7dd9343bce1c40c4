/* Per-query profile of one method (bench/query/tail_probe/run.sh): one line per query with its thread
 * CPU µs, query terms with postings, the postings of their lists, postings scored and blocks decoded
 * (splade_searcher_stats), then, for wtaat, the counters of the instrumented copy
 * (patch_wtaat.py), and the k-th score. ORACLE=1: each query first runs once to learn its k-th
 * score, which the timed run then prunes with from the start (exact: it is the final one).
 *   probe INDEX QVECTORS.jsonl ALGO(2 = taat, 5 = wtaat) > PROFILE.txt */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "splade.h"
#include "splade/index.h"
#include "splade/query.h"
#include "splade/query_input.h"
#include "index/segment.h"
#include "index/format.h"
struct wprof { uint64_t t_setup, t_wb, t_ess, t_nebound, t_ne, t_collect, win_scored, win_skipped, ranges_live, ranges_touched, ranges_scan, ne_sum, blk_ess, blk_ne, post_ess, post_ne, n_ranges, n_terms, n_dense, win_total, t_total; };
extern struct wprof wprof; extern uint32_t oracle_theta;
static double cpu_us(void){struct timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID,&ts); return ts.tv_sec*1e6+ts.tv_nsec*1e-3;}
int main(int argc,char**argv){
  splade_index*ix; splade_query_set qs; splade_searcher*s;
  if (splade_index_open(argv[1],&ix)<0||splade_query_set_from_vectors(ix,argv[2],&qs)<0||splade_searcher_create(ix,&s)<0) return 1;
  int algo = atoi(argv[3]);
  splade_hit hits[10]; int nh;
  for (int i=0;i<qs.n;i++) splade_search(s,&qs.q[i],10,algo,hits,&nh);
  printf("q cpu_us terms postings_all post_scored blocks ");
  printf("t_setup t_ess t_nebound t_ne t_collect t_total win_scored win_skipped win_total ranges_live ranges_touched ranges_scan ne_sum n_dense blk_ess blk_ne post_ess post_ne n_ranges theta_final\n");
  for (int i=0;i<qs.n;i++){
    const splade_qvec*q=&qs.q[i];
    double post=0; int nt=0;
    for (int g=0; g<splade_index_n_segments(ix); g++){ const splade_segment*sg=splade_index_segment(ix,g);
      for(int j=0;j<q->n;j++){ splade_term_postings tp; splade_index_postings(sg->ix,splade_segment_term(sg,q->terms[j]),&tp); if(tp.n_postings&&q->impacts[j]){post+=tp.n_postings;nt++;}}}
    splade_search_stats st0=*splade_searcher_stats(s);
    if (getenv("ORACLE")) { oracle_theta=0; splade_search(s,q,10,algo,hits,&nh); oracle_theta = nh==10 ? hits[9].score : 0; st0=*splade_searcher_stats(s); }
    memset(&wprof,0,sizeof wprof);
    double c0=cpu_us();
    splade_search(s,q,10,algo,hits,&nh);
    double c=cpu_us()-c0;
    const splade_search_stats*st=splade_searcher_stats(s);
    struct wprof w=wprof;
    printf("%d %.1f %d %.0f %llu %llu ",i,c,nt,post,(unsigned long long)(st->postings_scored-st0.postings_scored),(unsigned long long)(st->blocks_decoded-st0.blocks_decoded));
    printf("%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
      (unsigned long long)w.t_setup,(unsigned long long)w.t_ess,(unsigned long long)w.t_nebound,(unsigned long long)w.t_ne,(unsigned long long)w.t_collect,(unsigned long long)w.t_total,
      (unsigned long long)w.win_scored,(unsigned long long)w.win_skipped,(unsigned long long)w.win_total,(unsigned long long)w.ranges_live,(unsigned long long)w.ranges_touched,(unsigned long long)w.ranges_scan,(unsigned long long)w.ne_sum,(unsigned long long)w.n_dense,
      (unsigned long long)w.blk_ess,(unsigned long long)w.blk_ne,(unsigned long long)w.post_ess,(unsigned long long)w.post_ne,(unsigned long long)w.n_ranges);
    printf(" %u\n", nh==10?hits[9].score:0);
  }
  return 0;
}
