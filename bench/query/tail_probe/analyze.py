"""Summarizes two probe profiles (wtaat, taat) of the same queries: p99/median, the spread of the
queries' own sizes, work and time per phase for the middle 10% and the slowest 5% / 1% of queries.
  python3 analyze.py WTAAT.txt TAAT.txt"""
import sys, numpy as np
def load(p):
    L=open(p).read().split('\n'); h=L[0].split(); rows=[list(map(float,l.split())) for l in L[1:] if l.strip()]
    a=np.array(rows); return {k:a[:,i] for i,k in enumerate(h)}
w=load(sys.argv[1]); t=load(sys.argv[2])
c=w['cpu_us']; tc=t['cpu_us']
ghz=np.median(w['t_total']/c)  # cycles per us
print('cycles/us %.0f'%ghz)
o=np.argsort(c); n=len(c)
med=np.median(c); p99=np.sort(c)[int(n*.99)]
print('wtaat median %.0f p99 %.0f ratio %.2f mean %.0f | taat median %.0f p99 %.0f ratio %.2f'%(med,p99,p99/med,c.mean(),np.median(tc),np.sort(tc)[int(n*.99)],np.sort(tc)[int(n*.99)]/np.median(tc)))
for k in ['terms','postings_all','post_scored','blocks']:
    v=w[k]; print('%-13s median %.0f p99 %.0f ratio %.2f corr(cpu) %.2f'%(k,np.median(v),np.sort(v)[int(n*.99)],np.sort(v)[int(n*.99)]/np.median(v),np.corrcoef(v,c)[0,1]))
groups={'all':np.arange(n),'mid 45-55%':o[int(n*.45):int(n*.55)],'top 5%':o[int(n*.95):],'top 1%':o[int(n*.99):]}
keys=['cpu_us','terms','n_dense','postings_all','post_scored','post_ess','post_ne','blocks','ranges_live','ranges_scan','ne_sum','win_scored','win_skipped']
print('group '+' '.join('%10s'%k[:10] for k in keys))
for g,ix in groups.items():
    print('%-10s'%g+' '.join('%10.0f'%np.mean(w[k][ix]) for k in keys))
tk=['t_setup','t_ess','t_nebound','t_ne','t_collect']
print('time split (us, mean):',' '.join(tk), ' other(=cpu-total)')
for g,ix in groups.items():
    tot=np.mean(w['t_total'][ix])/ghz
    print('%-10s'%g+' '.join('%9.0f'%(np.mean(w[k][ix])/ghz) for k in tk), ' total %.0f cpu %.0f  taat %.0f'%(tot,np.mean(c[ix]),np.mean(tc[ix])))
# cost per posting scored
cpp=c/w['post_scored']*1000
for g,ix in groups.items(): print('%-10s ns/post_scored %.2f  ns/posting_all %.2f  scored/all %.3f  ne/terms %.2f live/ranges %.2f scan/ranges %.2f'%(g,np.mean(cpp[ix]),np.mean(c[ix]/w['postings_all'][ix]*1000),np.mean(w['post_scored'][ix]/w['postings_all'][ix]),np.mean(w['ne_sum'][ix]/np.maximum(w['win_scored'][ix],1)/w['terms'][ix]),np.mean(w['ranges_live'][ix]/w['n_ranges'][ix]),np.mean(w['ranges_scan'][ix]/w['n_ranges'][ix])))
print('taat/wtaat on top1%% (by wtaat): %.2f ; top5%% %.2f; all %.3f'%(tc[groups['top 1%']].sum()/c[groups['top 1%']].sum(),tc[groups['top 5%']].sum()/c[groups['top 5%']].sum(),tc.sum()/c.sum()))
