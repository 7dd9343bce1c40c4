import orjson, numpy as np, scipy.sparse as sp, sys, pickle, os
D='/work/wt-approx/tmp/r100/'
cache=D+'mat.pkl'
if os.path.exists(cache):
    X,Q,vocab=pickle.load(open(cache,'rb'))
else:
    vocab={}
    def load(p):
        rows=[];cols=[];vals=[]
        for i,l in enumerate(open(p,'rb')):
            v=orjson.loads(l)['vector']
            for t,w in v.items():
                j=vocab.setdefault(t,len(vocab)); rows.append(i); cols.append(j); vals.append(w)
        return rows,cols,vals,i+1
    r,c,v,n=load(D+'docs.vec.jsonl'); 
    rq,cq,vq,nq=load(D+'queries.vec.jsonl')
    V=len(vocab)
    X=sp.csr_matrix((np.array(v,np.float32),(r,c)),shape=(n,V))
    Q=sp.csr_matrix((np.array(vq,np.float32),(rq,cq)),shape=(nq,V))
    pickle.dump((X,Q,vocab),open(cache,'wb'))
print(X.shape,Q.shape,X.nnz)
XT=X.T.tocsr()  # term -> docs
df=np.diff(XT.indptr)
S=(Q@XT).toarray() if False else None
rng=np.random.default_rng(0)
qs=rng.choice(Q.shape[0],300,replace=False)
H=[3,5,7,10,15,20]; C=[20,50,100,200,500,1000]
rec={(h,c):[] for h in H for c in C}; post={h:[] for h in H}; ncand={h:[] for h in H}
for qi in qs:
    q=Q[qi]; idx=q.indices; w=q.data
    s=np.asarray(X@q.T.toarray()).ravel()
    top=np.argsort(-s,kind='stable')[:10]; kth=s[top[-1]]
    exact=set(np.nonzero(s>=kth)[0])
    order=np.argsort(-w)
    for h in H:
        hv=idx[order[:h]]; hw=w[order[:h]]
        P=np.asarray(XT[hv].T@hw).ravel()
        post[h].append(df[hv].sum()); ncand[h].append((P>0).sum())
        for c in C:
            cand=np.argpartition(-P,c)[:c]
            cs=s[cand]; t=cand[np.argsort(-cs)[:10]]
            rec[(h,c)].append(len(exact & set(t))/10)
print('h postings(mean) nonzero-cands', [(h,int(np.mean(post[h])),int(np.mean(ncand[h]))) for h in H])
for h in H:
    print(h, ' '.join('C%d:%.3f'%(c,np.mean(rec[(h,c)])) for c in C))
