import sys
lat=[tuple(map(float,l.split())) for l in open(sys.argv[1])]
wt=[l.split()[1:] for l in open(sys.argv[2]) if l.startswith('WT')]
n=len(lat); wt=[list(map(int,x)) for x in wt[-n:]]
assert len(wt)==n
idx=sorted(range(n),key=lambda i:lat[i][1])
def grp(name,sel):
    s=[wt[i] for i in sel]; c=[lat[i][1] for i in sel]
    tot=sum(x[1] for x in s); 
    f=lambda j: sum(x[j] for x in s)/tot
    print(f"{name:10s} n={len(sel):4d} cpu={sum(c)/len(c):7.0f}us terms={sum(x[0] for x in s)/len(s):5.1f} ess={f(2):.2f} ne={f(3):.2f} collect={f(4):.2f} setup+rest={1-f(2)-f(3)-f(4):.2f} essBlk={sum(x[5] for x in s)/len(s):6.0f} neBlk={sum(x[6] for x in s)/len(s):6.0f} fwdDocs={sum(x[7] for x in s)/len(s):7.0f} candRanges={sum(x[8] for x in s)/len(s):6.0f}")
grp('all',idx)
grp('mid 45-55%',idx[int(n*.45):int(n*.55)])
grp('top 5%',idx[int(n*.95):])
grp('top 1%',idx[int(n*.99):])
