import numpy as np, pickle
D='/work/wt-approx/tmp/r100/'
X,Q,vocab=pickle.load(open(D+'mat.pkl','rb'))
XT=X.T.tocsr(); df=np.diff(XT.indptr); N=X.shape[0]
mx=np.array([XT.data[XT.indptr[t]:XT.indptr[t+1]].max() if df[t] else 0 for t in range(XT.shape[0])])
rng=np.random.default_rng(0); qs=rng.choice(Q.shape[0],300,replace=False)
crit={'qw':lambda i,w:w,'qw*log':lambda i,w:w*np.log(N/(df[i]+1)+1),'qw*sqrtlog':lambda i,w:w*np.sqrt(np.log(N/(df[i]+1)+1)),
 'qw, drop df>50%':lambda i,w:w*(df[i]<0.5*N),'qw, drop df>30%':lambda i,w:w*(df[i]<0.3*N)}
S={}
for qi in qs:
    q=Q[qi]; s=np.asarray(X@q.T.toarray()).ravel(); top=np.argsort(-s,kind='stable')[:10]; S[qi]=(s,set(np.nonzero(s>=s[top[-1]])[0]))
for name,f in crit.items():
    out=[]
    for h in [8,10,12,15]:
        rec=[];post=[]
        for qi in qs:
            q=Q[qi]; idx=q.indices; w=q.data; s,ex=S[qi]
            o=np.argsort(-f(idx,w)); hv=idx[o[:h]]; hw=w[o[:h]]
            P=np.asarray(XT[hv].T@hw).ravel(); post.append(df[hv].sum())
            cand=np.argpartition(-P,100)[:100]; t=cand[np.argsort(-s[cand])[:10]]; rec.append(len(ex&set(t))/10)
        out.append('h%d %dk %.3f'%(h,np.mean(post)/1000,np.mean(rec)))
    print(name,' | '.join(out))
