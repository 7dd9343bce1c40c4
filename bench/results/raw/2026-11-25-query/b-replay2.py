import statistics as st, sys
d=sys.argv[1]
M=["wtaat","taat","bmp"]
def stats(v):
    v=sorted(v); return v[len(v)//2], v[int(len(v)*0.99)], sum(v)/len(v)
rules={
 "main(rho8,128k)": lambda f,docs: "taat" if docs<=8192 else ("bmp" if f[6]>=1.19 and f[5]>=0.06 and f[7]<1.3 and False else ("taat" if docs<=131072 and f[3]>=8 else "wtaat")),
}
for thr in [4,6,8,10,12,100]:
    rules[f"rho{thr}"]=(lambda thr: lambda f,docs: "taat" if docs<=8192 else ("taat" if f[3]>=thr else "wtaat"))(thr)
for div in [6144, 8192, 10240]:
    rules[f"rho>=docs/{div}"]=(lambda div: lambda f,docs: "taat" if docs<=8192 else ("taat" if docs<=131072 and f[3]>=docs/div else "wtaat"))(div)
for div in [7168, 9216]:
    rules[f"rho>=docs/{div}"]=(lambda div: lambda f,docs: "taat" if docs<=8192 else ("taat" if docs<=131072 and f[3]>=docs/div else "wtaat"))(div)
rules["all-taat"]=lambda f,docs:"taat"
rules["all-wtaat"]=lambda f,docs:"wtaat"
for c in sys.argv[2:]:
    f=[list(map(float,l.split())) for l in open(f"{d}/f-{c}.txt")]
    t={}
    for m in M:
        rounds=[[float(l.split()[1]) for l in open(f"{d}/run1-{c}/{m}.{r}.lat")] for r in (1,2,3)]
        t[m]=[st.median(x) for x in zip(*rounds)]
    a=[[float(l.split()[1]) for l in open(f"{d}/run1-{c}/auto.{r}.lat")] for r in (1,2,3)]
    auto=[st.median(x) for x in zip(*a)]
    best=[min(stats(t[m])[j] for m in M) for j in range(3)]
    print(c, "best", ["%.0f"%b for b in best], "measured auto", " / ".join(f"{100*(stats(auto)[j]/best[j]-1):+.1f}%" for j in range(3)))
    for name,r in rules.items():
        s=stats([t[r(fi,fi[2])][i] for i,fi in enumerate(f)])
        print(f"  {name:18s} " + " / ".join(f"{100*(s[j]/best[j]-1):+.1f}%" for j in range(3)))
