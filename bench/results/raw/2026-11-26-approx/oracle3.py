import numpy as np, pickle, scipy.sparse as sp
D='/work/wt-approx/tmp/r100/'
X,Q,vocab=pickle.load(open(D+'mat.pkl','rb'))
XT=X.T.tocsr(); df=np.diff(XT.indptr)
def heads(N):
    rows=[];cols=[];vals=[]
    ip=XT.indptr
    for t in range(XT.shape[0]):
        a=XT.data[ip[t]:ip[t+1]]; d=XT.indices[ip[t]:ip[t+1]]
        if len(a)>N:
            sel=np.argpartition(-a,N)[:N]; a=a[sel]; d=d[sel]
        rows.append(np.full(len(a),t)); cols.append(d); vals.append(a)
    return sp.csr_matrix((np.concatenate(vals),(np.concatenate(rows),np.concatenate(cols))),shape=XT.shape)
rng=np.random.default_rng(0); qs=rng.choice(Q.shape[0],300,replace=False)
exacts={}; S={}
for qi in qs:
    q=Q[qi]; s=np.asarray(X@q.T.toarray()).ravel(); S[qi]=s
    top=np.argsort(-s,kind='stable')[:10]; exacts[qi]=set(np.nonzero(s>=s[top[-1]])[0])
for N in [500,1000,2000,4000]:
    HT=heads(N); hdf=np.diff(HT.indptr)
    print('N',N,'head postings total %.2fM'%(HT.nnz/1e6))
    for h in [5,8,10,15,20,30]:
        res={c:[] for c in [30,50,100,200,400]}; post=[]
        for qi in qs:
            q=Q[qi]; idx=q.indices; w=q.data; s=S[qi]
            order=np.argsort(-w); hv=idx[order[:h]]; hw=w[order[:h]]
            P=np.asarray(HT[hv].T@hw).ravel(); post.append(hdf[hv].sum())
            for c in res:
                cand=np.argpartition(-P,c)[:c]; t=cand[np.argsort(-s[cand])[:10]]
                res[c].append(len(exacts[qi]&set(t))/10)
        print('  h%d post %d: %s'%(h,np.mean(post),' '.join('C%d %.3f'%(c,np.mean(v)) for c,v in res.items())))
